/* linear.c (dist) — linear attention over MPI: non-causal by one all-reduce of the
 * per-rank states, causal by an exclusive scan or LASP-2's all-gather of them
 * (lib/linattn_mpi.h; the kernels in linear_tmpl.h, once per precision). */
#include "dist/dist_internal.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "dist/linear_tmpl.h"
#include "core/real_f64.h"
#include "dist/linear_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

la_status la_dist_linear_attention_f32(MPI_Comm comm, const la_problem *p, la_dist_scan scan,
                                       const float *q, const float *k, const float *v, float *out,
                                       la_dist_stats *stats)
{
    return dist_linear_f32(comm, p, scan, q, k, v, out, stats);
}

la_status la_dist_linear_attention_f64(MPI_Comm comm, const la_problem *p, la_dist_scan scan,
                                       const double *q, const double *k, const double *v,
                                       double *out, la_dist_stats *stats)
{
    return dist_linear_f64(comm, p, scan, q, k, v, out, stats);
}

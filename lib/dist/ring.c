/* ring.c (dist) — ring softmax attention over MPI: K/V slices pass around the ring,
 * each merged into the output by its log-sum-exp (lib/linattn_mpi.h; the kernel in
 * ring_tmpl.h, once per precision). */
#include "dist/dist_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "dist/ring_tmpl.h"
#include "core/real_f64.h"
#include "dist/ring_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

la_status la_dist_softmax_attention_f32(MPI_Comm comm, const la_problem *p, const float *q,
                                        const float *k, const float *v, float *out,
                                        la_dist_stats *stats)
{
    return dist_softmax_f32(comm, p, q, k, v, out, stats);
}

la_status la_dist_softmax_attention_f64(MPI_Comm comm, const la_problem *p, const double *q,
                                        const double *k, const double *v, double *out,
                                        la_dist_stats *stats)
{
    return dist_softmax_f64(comm, p, q, k, v, out, stats);
}

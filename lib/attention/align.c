/* align.c — causal bottom-right (p->causal_align) for the kernels written for the
 * top-left diagonal: linear and FAVOR+ causal (chunked, recurrent) and linear's backward
 * passes. Query i of a bottom-right problem sees keys j <= i + o, o = M − N: exactly
 * what row i + o of a square M × M top-left problem on the same keys sees. So the
 * problem runs as that square one, with q (and out, d_out) copied into (B,H,M,·) rows
 * i + o and zero rows elsewhere, and the outputs copied back; a query with i + o < 0
 * gets the empty row (zeros), as every kernel gives a query that sees no key.
 * Cost: M query rows instead of N (for N < M at most the O(M) work the keys cost anyway;
 * for N > M fewer), and the padded rows, B·H·M·(d_k + d_v) elements forward, twice that
 * backward, held against p->workspace_limit (the kernel gets what remains). */
#include "attention/attention_internal.h"

#include <stdlib.h>
#include <string.h>

/* clang-format off */
#include "core/real_f32.h"
#include "attention/align_tmpl.h"
#include "core/real_f64.h"
#include "attention/align_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

la_status la_square_forward_f32(const la_problem *p, la_forward_f32_fn fn, const float *q,
                                const float *k, const float *v, float *out)
{
    return square_forward_f32(p, fn, q, k, v, out);
}

la_status la_square_forward_f64(const la_problem *p, la_forward_f64_fn fn, const double *q,
                                const double *k, const double *v, double *out)
{
    return square_forward_f64(p, fn, q, k, v, out);
}

la_status la_square_backward_f32(const la_problem *p, la_backward_f32_fn fn, const float *q,
                                 const float *k, const float *v, const float *out,
                                 const float *d_out, float *d_q, float *d_k, float *d_v)
{
    return square_backward_f32(p, fn, q, k, v, out, d_out, d_q, d_k, d_v);
}

la_status la_square_backward_f64(const la_problem *p, la_backward_f64_fn fn, const double *q,
                                 const double *k, const double *v, const double *out,
                                 const double *d_out, double *d_q, double *d_k, double *d_v)
{
    return square_backward_f64(p, fn, q, k, v, out, d_out, d_q, d_k, d_v);
}

la_status la_square_cost(const la_problem *p, la_dtype dtype, la_cost_fn cost, bool backward,
                         la_cost *out)
{
    la_problem sq = *p;
    sq.n_queries = p->n_keys;
    sq.causal_align = LA_CAUSAL_TOP_LEFT;
    la_status st = cost(&sq, dtype, out);
    if (st != LA_OK) return st;
    const double rows = (double)p->batch * (double)p->heads * (double)p->n_keys;
    const double cols = (double)(p->d_k + p->d_v) * (backward ? 2 : 1);
    out->workspace_bytes += rows * cols * (double)la_dtype_size(dtype);
    return LA_OK;
}

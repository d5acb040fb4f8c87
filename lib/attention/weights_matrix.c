/* weights_matrix.c — the attention matrix itself: the normalized weights A (B, H, N, M)
 * with out = A · V, for inspection (`linattn attend --save-weights`). Not to be confused
 * with lib/io/weights.c, the Transformer weights loader.
 *   softmax (fused and materializing): A_ij = exp(s_ij − max_j s_ij) / Σ_j exp(…),
 *     s = q·k · scale, over the visible keys;
 *   local: as softmax, over the visible keys within the window |i − j| <= window;
 *   hard: one-hot rows, 1 at argmax_j s_ij over the visible keys (ties to the lowest j);
 *   linear (non-causal, chunked, recurrent): A_ij = φ(q_i)·φ(k_j) / (φ(q_i)·z_i + eps),
 *     z_i = Σ φ(k_j) over the keys query i sees, i.e. the row's numerators' sum + eps.
 * Hidden entries (causal mask, key lengths) are exactly 0; a query that sees no key (or,
 * in linear attention, whose denominator is 0) gets a row of zeros, as in the kernels.
 *
 * Work is split into tasks of (batch entry, head, block of ROWS queries), each computed
 * whole by one thread: the scores of the block are one product (la_gemm_*) written
 * straight into the output rows, then normalized row by row in place. The split does not
 * depend on the thread count, so the output is bitwise the same on any. The template is
 * weights_matrix_tmpl.h, included once per precision (core/real_f32.h explains how). */
#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 64 }; /* queries per task */

/* Which normalization the weights follow: one public pair per kind (below), which the
 * registry rows point at (la_kernel_info.weights_f32, _f64). */
typedef enum { WEIGHTS_SOFTMAX, WEIGHTS_HARD, WEIGHTS_LINEAR, WEIGHTS_LOCAL } weights_kind;

/* The keys [*first, *end) query i of batch entry b sees: [0, la_visible_keys), and for
 * local attention only those within its window, max(0, i − r) <= j <= i + r (i the
 * query's position: i + M − N when causal bottom-right, la_causal_offset). */
static void row_keys(weights_kind kind, const la_problem *p, size_t b, size_t i, size_t *first,
                     size_t *end)
{
    const la_local_params local = la_local_params_of(p);
    *first = 0;
    *end = la_visible_keys(p, b, i);
    if (kind != WEIGHTS_LOCAL) return;
    const size_t r = local.window;
    if (*end == 0) return; /* bottom-right: a query before the first key sees none */
    i = (size_t)((ptrdiff_t)i + la_causal_offset(p)); /* >= 0 when it sees a key */
    *first = i > r ? i - r : 0;
    if (r < p->n_keys && i + r + 1 < *end) *end = i + r + 1; /* i, r < M: no overflow */
    if (*first > *end) *first = *end;                        /* empty, and never past the keys */
}

/* The range rule (linattn.h), from a = max|q|, b = max|k| in long double: every score
 * |q·k·scale| <= d_k·a·b·max(|scale|, 1), and in linear attention every numerator
 * φ(q)·φ(k) <= d_k·(a + 1)·(b + 1) and a row's sum M times that, under REAL_MAX / 8.
 * Non-finite inputs pass (their weights are not finite either). */
static bool weights_fit(weights_kind kind, const la_problem *p, double a, double b, double max)
{
    if (!isfinite(a) || !isfinite(b)) return true;
    const long double dk = (long double)p->d_k, limit = (long double)max / 8;
    if (kind == WEIGHTS_LINEAR)
        return dk * (long double)p->n_keys * ((long double)a + 1) * ((long double)b + 1) <= limit;
    const long double scale = fmaxl(fabsl((long double)p->scale), 1);
    return scale <= limit && dk * (long double)a * (long double)b * scale <= limit;
}

/* clang-format off */
#include "core/real_f32.h"
#include "attention/weights_matrix_tmpl.h"
#include "core/real_f64.h"
#include "attention/weights_matrix_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

la_status la_softmax_weights_f32(const la_problem *p, const float *q, const float *k, float *out)
{
    return attention_weights_f32(WEIGHTS_SOFTMAX, p, q, k, out);
}

la_status la_softmax_weights_f64(const la_problem *p, const double *q, const double *k, double *out)
{
    return attention_weights_f64(WEIGHTS_SOFTMAX, p, q, k, out);
}

la_status la_hard_weights_f32(const la_problem *p, const float *q, const float *k, float *out)
{
    return attention_weights_f32(WEIGHTS_HARD, p, q, k, out);
}

la_status la_hard_weights_f64(const la_problem *p, const double *q, const double *k, double *out)
{
    return attention_weights_f64(WEIGHTS_HARD, p, q, k, out);
}

la_status la_linear_weights_f32(const la_problem *p, const float *q, const float *k, float *out)
{
    return attention_weights_f32(WEIGHTS_LINEAR, p, q, k, out);
}

la_status la_linear_weights_f64(const la_problem *p, const double *q, const double *k, double *out)
{
    return attention_weights_f64(WEIGHTS_LINEAR, p, q, k, out);
}

la_status la_local_weights_f32(const la_problem *p, const float *q, const float *k, float *out)
{
    return attention_weights_f32(WEIGHTS_LOCAL, p, q, k, out);
}

la_status la_local_weights_f64(const la_problem *p, const double *q, const double *k, double *out)
{
    return attention_weights_f64(WEIGHTS_LOCAL, p, q, k, out);
}

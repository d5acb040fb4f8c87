/* softmax_backward.c — the backward passes of fused softmax (FlashAttention-2's), of
 * materializing softmax (the textbook one on the held N×M probabilities) and of hard
 * attention, float32 and float64, with their cost functions (la_cost_fn) and range rule.
 *
 * Bitwise the same for any thread count: every element of a gradient is a sum over
 * blocks taken in a fixed order (d_k, d_v over query blocks, d_q over key blocks, each
 * block's product a fixed call), and the split into tasks changes only who computes a
 * sum, never its order. The kernels are in softmax_backward_tmpl.h, included below once
 * per precision (core/real_f32.h explains how). */
#include "attention/attention_internal.h"
#include "attention/softmax_alloc.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Fused backward: blocks of BQ queries × BK keys (equal, so that both schedules cut the
 * key blocks alike: softmax_backward_tmpl.h, query_block_pass). Materializing backward:
 * query blocks of BQ_MAT rows, key blocks of BK_MAT columns. Hard: the forward's query
 * blocks (its argmax must pick the same keys, with the same calls). */
enum {
    BQ = 64,
    BK = 64,
    BQ_MAT = LA_SOFTMAX_Q_BLOCK,
    BK_MAT = LA_SOFTMAX_K_BLOCK,
    Q_BLOCK_HARD = LA_SOFTMAX_Q_BLOCK,
    K_BLOCK_HARD = LA_SOFTMAX_K_BLOCK,
};
_Static_assert(BQ == BK, "the two schedules of the fused backward cut key blocks alike");

/* Element offset of head (b, h) in a (B, H, rows, cols) array. */
static size_t head_offset(const la_problem *p, size_t b, size_t h, size_t rows, size_t cols)
{
    return ((b * p->heads + h) * rows) * cols;
}

/* Keys of the block j0 .. j0+cols-1 that query i of batch entry b sees (a prefix). */
static size_t keys_in_block(const la_problem *p, size_t b, size_t i, size_t j0, size_t cols)
{
    const size_t visible = la_visible_keys(p, b, i);
    return visible <= j0 ? 0 : (visible - j0 < cols ? visible - j0 : cols);
}

static size_t round_up_64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

static bool scale_fits(double scale, size_t elem_size)
{
    return elem_size == sizeof(double) || fabs(scale) <= FLT_MAX;
}

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
}

static inline float log_of_f32(float x)
{
    return logf(x);
}
static inline double log_of_f64(double x)
{
    return log(x);
}

/* Threads each kernel runs on: min(la_threads(), its largest number of tasks). The cost
 * functions below model the workspace with the same counts. */
static int softmax_backward_threads(const la_problem *p, int threads)
{
    const size_t q_blocks = (p->n_queries + BQ - 1) / BQ, k_blocks = (p->n_keys + BK - 1) / BK;
    const size_t heads = p->batch * p->heads;
    const size_t most = q_blocks > k_blocks ? q_blocks : k_blocks;
    /* heads · most fits: heads · N · d_k does (la_problem_check) */
    return (int)min_size((size_t)threads, heads * most);
}
static int materialized_backward_threads(const la_problem *p, int threads)
{
    const size_t q_blocks = (p->n_queries + BQ_MAT - 1) / BQ_MAT;
    const size_t k_blocks = (p->n_keys + BK_MAT - 1) / BK_MAT;
    return (int)min_size((size_t)threads, q_blocks > k_blocks ? q_blocks : k_blocks);
}
static int hard_backward_threads(const la_problem *p, int threads)
{
    const size_t tasks = p->batch * p->heads * ((p->n_queries + Q_BLOCK_HARD - 1) / Q_BLOCK_HARD);
    return (int)min_size((size_t)threads, tasks);
}

/* The backward's range rule, beyond the forward's (linattn.h, la_attention_backward_*):
 * with e = max|d_out|, c = max|v|, o = max|out|, a = max|q|, b = max|k| (0 for hard), the
 * gradients' partial sums stay below T/8 when
 *   softmax: N·d_v·e·(c + o)·max(a, b, 1)·max(|scale|, 1) <= T/8 (|dP − D| <= d_v·e·(c + o),
 *            d_k sums N of them times a·scale, d_q a convex combination times b·scale)
 *   both:    N·e <= T/8 (d_v sums at most N rows of d_out).
 * Non-finite values pass, as in the forward's rule. */
static bool backward_fits(la_range_kind kind, const la_problem *p, double a, double b, double c,
                          double o, double e, double real_max)
{
    if (isinf(a) || isinf(b) || isinf(c) || isinf(o) || isinf(e)) return true;
    const long double limit = (long double)real_max / 8, N = (long double)p->n_queries;
    if (N * e > limit) return false;
    if (kind == LA_RANGE_HARD) return true;
    const long double scale = fmaxl(fabsl((long double)p->scale), 1);
    const long double ab = fmaxl(fmaxl(a, b), 1);
    return N * (long double)p->d_v * e * ((long double)c + o) * ab * scale <= limit;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/softmax_backward_tmpl.h"
#include "core/real_f64.h"
#include "attention/softmax_backward_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public backwards */

la_status la_softmax_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, const float *out, const float *lse,
                                            const float *d_out, float *d_q, float *d_k, float *d_v)
{
    const grad_args_f32 a = {q, k, v, out, d_out, d_q, d_k, d_v};
    return softmax_backward_f32(p, &a, lse);
}

la_status la_softmax_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, const double *out, const double *lse,
                                            const double *d_out, double *d_q, double *d_k,
                                            double *d_v)
{
    const grad_args_f64 a = {q, k, v, out, d_out, d_q, d_k, d_v};
    return softmax_backward_f64(p, &a, lse);
}

/* The registry row's backward (la_backward_f32_fn): lse computed first. */
la_status la_softmax_row_backward_f32(const la_problem *p, const float *q, const float *k,
                                      const float *v, const float *out, const float *d_out,
                                      float *d_q, float *d_k, float *d_v)
{
    return la_softmax_attention_backward_f32(p, q, k, v, out, NULL, d_out, d_q, d_k, d_v);
}
la_status la_softmax_row_backward_f64(const la_problem *p, const double *q, const double *k,
                                      const double *v, const double *out, const double *d_out,
                                      double *d_q, double *d_k, double *d_v)
{
    return la_softmax_attention_backward_f64(p, q, k, v, out, NULL, d_out, d_q, d_k, d_v);
}

la_status la_softmax_attention_materialized_backward_f32(const la_problem *p, const float *q,
                                                         const float *k, const float *v,
                                                         const float *out, const float *d_out,
                                                         float *d_q, float *d_k, float *d_v)
{
    const grad_args_f32 a = {q, k, v, out, d_out, d_q, d_k, d_v};
    return softmax_materialized_backward_f32(p, &a);
}

la_status la_softmax_attention_materialized_backward_f64(const la_problem *p, const double *q,
                                                         const double *k, const double *v,
                                                         const double *out, const double *d_out,
                                                         double *d_q, double *d_k, double *d_v)
{
    const grad_args_f64 a = {q, k, v, out, d_out, d_q, d_k, d_v};
    return softmax_materialized_backward_f64(p, &a);
}

la_status la_hard_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                         const float *v, const float *out, const float *d_out,
                                         float *d_q, float *d_k, float *d_v)
{
    const grad_args_f32 a = {q, k, v, out, d_out, d_q, d_k, d_v};
    return hard_backward_f32(p, &a);
}

la_status la_hard_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                         const double *v, const double *out, const double *d_out,
                                         double *d_q, double *d_k, double *d_v)
{
    const grad_args_f64 a = {q, k, v, out, d_out, d_q, d_k, d_v};
    return hard_backward_f64(p, &a);
}

/* ---------------------------------------------------------------- their cost (la_cost_fn) */

/* Softmax backward (fused or materializing), one head of an entry with m visible keys:
 *   flops_qk      6·pairs·d_k: S = QKᵀ recomputed, d_K = dSᵀQ, d_Q = dS·K;
 *   flops_av      4·pairs·d_v: dP = dO·Vᵀ, d_V = Pᵀ·dO;
 *   flops_softmax fused: 4·pairs (P = exp(S − lse): subtract, exp; dS = P ∘ (dP − D):
 *                 subtract, multiply) + 2·d_v per query that sees a key (D = dO·O);
 *                 materializing: 9·pairs (the forward's softmax, 5; Σ_j P∘dP, 2; dS, 2). */
static void softmax_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    const double seeing = m > 0 ? (double)p->n_queries : 0; /* queries that see a key */
    f->flops_qk = 6 * pairs * (double)p->d_k;
    f->flops_av = 4 * pairs * (double)p->d_v;
    f->flops_softmax = 4 * pairs + 2 * seeing * (double)p->d_v;
}
static void materialized_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    f->flops_qk = 6 * pairs * (double)p->d_k;
    f->flops_av = 4 * pairs * (double)p->d_v;
    f->flops_softmax = 9 * pairs;
}
/* Hard backward: the argmax again (QKᵀ 2·pairs·d_k, one compare per pair) and the scatter
 * into d_V, d_v adds per query that sees a key (in flops_av). */
static void hard_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    const double seeing = m > 0 ? (double)p->n_queries : 0;
    f->flops_qk = 2 * pairs * (double)p->d_k;
    f->flops_softmax = pairs;
    f->flops_av = seeing * (double)p->d_v;
}

static double up64(double bytes)
{
    return ceil(bytes / 64) * 64;
}

/* The registry row's backward (lse = NULL): per thread a scratch of d_k·BK + d_v·BK +
 * 2·BQ·BK + BQ elements, for min(threads, B·H·max(query blocks, key blocks)) threads,
 * and the B·H·N log-sum-exps it computes first. */
la_status la_softmax_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, softmax_backward_head_flops, out);
    const double e = (double)la_dtype_size(dtype);
    const double bq = (double)min_size(p->n_queries, BQ), bk = (double)min_size(p->n_keys, BK);
    const double per_thread = up64(((double)(p->d_k + p->d_v) * bk + 2 * bq * bk + bq) * e);
    const double lse = up64((double)p->batch * (double)p->heads * (double)p->n_queries * e);
    out->workspace_bytes = (double)softmax_backward_threads(p, la_threads()) * per_thread + lse;
    return LA_OK;
}

/* One N×M matrix, and a BQ_MAT × M block of dP per thread. */
la_status la_softmax_materialized_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, materialized_backward_head_flops, out);
    const double e = (double)la_dtype_size(dtype), m = (double)p->n_keys;
    const double bq = (double)min_size(p->n_queries, BQ_MAT);
    out->workspace_bytes =
        up64((double)p->n_queries * m * e) +
        (double)materialized_backward_threads(p, la_threads()) * up64(bq * m * e);
    return LA_OK;
}

/* The B·H·N chosen keys (size_t), and per thread the forward's score block and best scores. */
la_status la_hard_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, hard_backward_head_flops, out);
    const double e = (double)la_dtype_size(dtype);
    const double bq = (double)min_size(p->n_queries, Q_BLOCK_HARD);
    const double bk = (double)min_size(p->n_keys, K_BLOCK_HARD);
    const double best =
        up64((double)p->batch * (double)p->heads * (double)p->n_queries * sizeof(size_t));
    out->workspace_bytes =
        best + (double)hard_backward_threads(p, la_threads()) * up64((bq * bk + bq) * e);
    return LA_OK;
}

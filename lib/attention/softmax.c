/* softmax.c — softmax attention (fused streaming, and materializing) and hard attention,
 * float32 and float64.
 *
 * Work is split into tasks of (batch entry b, head h, block of Q_BLOCK queries); each
 * task is computed whole by one thread, in an order and with block sizes that do not
 * depend on the thread count, so the output is bitwise the same for any thread count.
 * Every matrix product goes through la_gemm_* (BLIS, one thread per call), except in the
 * fused kernel on AVX-512 CPUs, which runs its own register tiles for each task:
 * softmax_avx512.c in float32 (about twice as fast: see that file), softmax_avx512_f64.c
 * in float64. The kernels themselves are
 * in softmax_tmpl.h, included below once per precision (core/real_f32.h explains how). */
#include "attention/attention_internal.h"
#include "attention/softmax_alloc.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Queries per task and keys per block of the fused and hard kernels (internal.h). */
enum { Q_BLOCK = LA_SOFTMAX_Q_BLOCK, K_BLOCK = LA_SOFTMAX_K_BLOCK };

/* Element offset of head (b, h) in a (B, H, rows, cols) array. */
static size_t head_offset(const la_problem *p, size_t b, size_t h, size_t rows, size_t cols)
{
    return ((b * p->heads + h) * rows) * cols;
}

/* Task t of (B, H, query blocks), heads in order, and within a head the query blocks
 * from the last to the first: under causal masks the last blocks are the longest, and
 * handing them out first balances the dynamic schedule. */
typedef struct {
    size_t b, h, q_block;
} task;

static task task_of(const la_problem *p, size_t t, size_t q_blocks)
{
    task tk;
    size_t bh = t / q_blocks;
    tk.b = bh / p->heads;
    tk.h = bh % p->heads;
    tk.q_block = q_blocks - 1 - t % q_blocks;
    return tk;
}

static bool check_pointers(const void *q, const void *k, const void *v, const void *out)
{
    return q && k && v && out;
}

static size_t round_up_64(size_t bytes)
{
    return (bytes + 63) / 64 * 64;
}

/* The scale must be representable in the element type (finiteness itself is
 * la_problem_check's). */
static bool scale_fits(double scale, size_t elem_size)
{
    return elem_size == sizeof(double) || fabs(scale) <= FLT_MAX;
}

/* The magnitude whose float32 bits (sign cleared) are `bits`, +inf when it is not finite
 * (as la_max_abs_f32 reports it): the fused kernel's max|k| and max|v| in decoding. */
static double magnitude_of_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return isfinite(f) ? (double)f : INFINITY;
}

/* log, per precision: the fused kernel's log-sum-exp (FN(log_of) in softmax_tmpl.h). */
static inline float log_of_f32(float x)
{
    return logf(x);
}
static inline double log_of_f64(double x)
{
    return log(x);
}

/* The AVX-512 fused kernels, per precision (FN(fused_simd_*) in softmax_tmpl.h):
 * softmax_avx512.c (float32) and softmax_avx512_f64.c (float64), each with its own task
 * size and scratch. */
static inline size_t fused_simd_q_block_f32(void)
{
    return LA_FUSED_SIMD_Q_BLOCK;
}
static inline size_t fused_simd_q_block_f64(void)
{
    return LA_FUSED_SIMD_F64_Q_BLOCK;
}
static inline size_t fused_simd_scratch_bytes_f32(const la_problem *p)
{
    return la_fused_simd_scratch_bytes(p);
}
static inline size_t fused_simd_scratch_bytes_f64(const la_problem *p)
{
    return la_fused_simd_scratch_bytes_f64(p);
}
static inline void fused_simd_block_f32(const la_problem *p, size_t b, const float *qh,
                                        const float *kh, const float *vh, float *oh, size_t i0,
                                        size_t rows, void *scratch, float *lse, uint32_t *kv_bits)
{
    la_fused_simd_block(p, b, qh, kh, vh, oh, i0, rows, scratch, lse, kv_bits);
}
static inline void fused_simd_block_f64(const la_problem *p, size_t b, const double *qh,
                                        const double *kh, const double *vh, double *oh, size_t i0,
                                        size_t rows, void *scratch, double *lse, uint32_t *kv_bits)
{
    (void)kv_bits; /* float64 decoding is not staged: NULL */
    la_fused_simd_block_f64(p, b, qh, kh, vh, oh, i0, rows, scratch, lse);
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/softmax_tmpl.h"
#include "core/real_f64.h"
#include "attention/softmax_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public kernels */

la_status la_softmax_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out)
{
    return softmax_attention_f32(p, q, k, v, out);
}

la_status la_softmax_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    return softmax_attention_f64(p, q, k, v, out);
}

la_status la_softmax_attention_lse_f32(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out, float *lse)
{
    return softmax_attention_lse_f32(p, q, k, v, out, lse);
}

la_status la_softmax_attention_lse_f64(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out, double *lse)
{
    return softmax_attention_lse_f64(p, q, k, v, out, lse);
}

la_status la_softmax_attention_materialized_f32(const la_problem *p, const float *q, const float *k,
                                                const float *v, float *out)
{
    return softmax_attention_materialized_f32(p, q, k, v, out);
}

la_status la_softmax_attention_materialized_f64(const la_problem *p, const double *q,
                                                const double *k, const double *v, double *out)
{
    return softmax_attention_materialized_f64(p, q, k, v, out);
}

la_status la_hard_attention_f32(const la_problem *p, const float *q, const float *k, const float *v,
                                float *out)
{
    return hard_attention_f32(p, q, k, v, out);
}

la_status la_hard_attention_f64(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out)
{
    return hard_attention_f64(p, q, k, v, out);
}

/* ---------------------------------------------------------------- their cost (la_cost_fn) */

/* Softmax (fused or materializing), one head of an entry with m visible keys: QKᵀ 2·pairs·d_k;
 * softmax 5 per pair (row max, subtract, exp, row sum, divide); P·V 2·pairs·d_v. */
static void softmax_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    f->flops_qk = 2 * pairs * (double)p->d_k;
    f->flops_softmax = 5 * pairs;
    f->flops_av = 2 * pairs * (double)p->d_v;
}

/* Hard attention, one head of an entry with m visible keys: QKᵀ and one compare per pair (the
 * argmax). */
static void hard_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    f->flops_qk = 2 * pairs * (double)p->d_k;
    f->flops_softmax = pairs;
}

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

/* Scratch of the BLIS-based fused and hard kernels (run_blocked): per (b, h, query
 * block) task thread a bq×bk score block, then bq row maxima (or best scores) and bq
 * sums (or best key indices, size_t), rounded up to a 64-byte line; min(threads, tasks)
 * threads. */
static double blocked_workspace(const la_problem *p, size_t elem)
{
    const double heads = (double)p->batch * (double)p->heads, threads = (double)la_threads();
    const double n = (double)p->n_queries, m = (double)p->n_keys, e = (double)elem;
    const double bq = dmin(n, Q_BLOCK), bk = dmin(m, K_BLOCK);
    const double tasks = heads * ceil(n / Q_BLOCK);
    const double per_thread = ceil((bq * bk * e + bq * e + bq * (double)sizeof(size_t)) / 64) * 64;
    return dmin(threads, tasks) * per_thread;
}

la_status la_softmax_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, softmax_head_flops, out);
    if (la_fused_simd_usable(p)) {
        /* the AVX-512 kernels: per thread qᵀ, a score block and oᵀ, a task's queries wide
         * (softmax_avx512.c: 32 floats, softmax_avx512_f64.c: 16 doubles); float32
         * decoding (N <= 4) also stages its output */
        const bool f32 = dtype == LA_FLOAT32;
        const double heads = (double)p->batch * (double)p->heads;
        const double q_block = f32 ? LA_FUSED_SIMD_Q_BLOCK : LA_FUSED_SIMD_F64_Q_BLOCK;
        const double tasks = heads * ceil((double)p->n_queries / q_block);
        const double scratch =
            (double)(f32 ? la_fused_simd_scratch_bytes(p) : la_fused_simd_scratch_bytes_f64(p));
        const double per_thread = ceil(scratch / 64) * 64;
        out->workspace_bytes =
            dmin((double)la_threads(), tasks) * per_thread +
            (f32 ? (double)round_up_64(la_fused_simd_staging_bytes(p, false)) : 0);
    } else {
        out->workspace_bytes = blocked_workspace(p, la_dtype_size(dtype));
    }
    return LA_OK;
}

la_status la_softmax_materialized_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, softmax_head_flops, out);
    /* one N×M score matrix, reused head after head */
    out->workspace_bytes = (double)p->n_queries * (double)p->n_keys * (double)la_dtype_size(dtype);
    return LA_OK;
}

la_status la_hard_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, hard_head_flops, out);
    out->workspace_bytes = blocked_workspace(p, la_dtype_size(dtype));
    return LA_OK;
}

/* softmax.c — softmax attention, fused (the online-softmax engine) and materializing, and
 * hard attention (argmax), in one precision: the Makefile compiles this file twice
 * (real_typed.h), la_*_f32 and la_*_f64. Their backward passes: softmax_backward.c.
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major;
 *   lse: (B, H, N), log Σ_j exp(s_ij) per query (−inf: no key seen).
 *
 * The fused and hard kernels run on the engine (engine.h): tasks of (b, h, block of
 * queries), bitwise the same on any thread count. The fused kernel takes the AVX-512 tiles
 * (engine_avx512.c) where la_fused_simd_usable(p), else the portable ones (BLIS products);
 * hard attention is the portable score tile followed by a running argmax. Contracts in
 * lib/linattn.h. */
#include "attention/engine.h"
#include "attention/real_typed.h"
#include "attention/softmax_alloc.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Queries per task and keys per block of the portable tiles (internal.h). */
enum { Q_BLOCK = LA_SOFTMAX_Q_BLOCK, K_BLOCK = LA_SOFTMAX_K_BLOCK };

#if REAL_IS_F32
#define PORTABLE la_engine_portable_f32
#define SIMD_WIDE la_engine_avx512_wide_f32
#define SIMD_NARROW la_engine_avx512_narrow_f32
#define SIMD_Q_BLOCK LA_FUSED_SIMD_Q_BLOCK
#define SIMD_K_BLOCK LA_FUSED_SIMD_K_BLOCK
#define SIMD_NARROW_ROWS LA_FUSED_SIMD_NARROW_ROWS
#define SIMD_SCRATCH la_fused_simd_scratch_bytes
#else
#define PORTABLE la_engine_portable_f64
#define SIMD_WIDE la_engine_avx512_wide_f64
#define SIMD_NARROW la_engine_avx512_narrow_f64
#define SIMD_Q_BLOCK LA_FUSED_SIMD_F64_Q_BLOCK
#define SIMD_K_BLOCK LA_FUSED_SIMD_F64_K_BLOCK
#define SIMD_NARROW_ROWS LA_FUSED_SIMD_F64_NARROW_ROWS
#define SIMD_SCRATCH la_fused_simd_scratch_bytes_f64
#endif

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)

#include "attention/mask_tmpl.h"

/* The engine on the portable tiles, tasks of Q_BLOCK queries and key blocks of K_BLOCK. */
static la_engine portable_engine(const la_problem *p, la_engine_tiles tiles)
{
    la_engine e = {.wide = tiles,
                   .q_block = Q_BLOCK,
                   .k_block = K_BLOCK,
                   .elem = sizeof(REAL),
                   .slot = sizeof(size_t),
                   .keys = la_engine_prefix_keys};
    e.bq = p->n_queries < Q_BLOCK ? p->n_queries : Q_BLOCK;
    e.bk = p->n_keys < K_BLOCK ? p->n_keys : K_BLOCK;
    e.scratch_bytes = la_engine_portable_bytes(e.bq, e.bk, e.slot, sizeof(REAL), 0);
    return e;
}

/* ---------------------------------------------------------------- fused softmax */

/* The fused kernel's engine: the AVX-512 tiles where usable (with their own task size and
 * scratch; float32 decoding stages its output to take the range on its loads), else the
 * portable ones. */
static la_engine fused_engine(const la_problem *p, bool lse)
{
    if (!la_fused_simd_usable(p)) return portable_engine(p, PORTABLE);
    la_engine e = {.wide = SIMD_WIDE,
                   .narrow = SIMD_NARROW,
                   .narrow_rows = SIMD_NARROW_ROWS,
                   .q_block = SIMD_Q_BLOCK,
                   .k_block = SIMD_K_BLOCK,
                   .elem = sizeof(REAL),
                   .keys = la_engine_prefix_keys};
    e.scratch_bytes = la_round_up_64(SIMD_SCRATCH(p));
    e.staging_bytes = REAL_IS_F32 ? la_fused_simd_staging_bytes(p, lse) : 0;
    return e;
}

/* Fused softmax attention; lse NULL or (B, H, N). */
static la_status fused(const la_problem *p, const REAL *q, const REAL *k, const REAL *v, REAL *out,
                       REAL *lse)
{
    la_status st = la_engine_check(p, q, k, v, out, sizeof(REAL));
    if (st != LA_OK) return st;
    const la_engine e = fused_engine(p, lse != NULL);
    /* float32 decoding checks the range on the tiles' loads (la_engine_run) */
    if (!e.staging_bytes && !FN(la_range_ok)(LA_RANGE_SOFTMAX, p, q, k, v)) return LA_ERANGE;
    return la_engine_run(&e, p, q, k, v, out, lse, 0);
}

#if REAL_IS_F32
la_status la_softmax_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out)
{
    return fused(p, q, k, v, out, NULL);
}

la_status la_softmax_attention_lse_f32(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out, float *lse)
{
    if (!lse) return LA_EINVAL;
    return fused(p, q, k, v, out, lse);
}
#else
la_status la_softmax_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    return fused(p, q, k, v, out, NULL);
}

la_status la_softmax_attention_lse_f64(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out, double *lse)
{
    if (!lse) return LA_EINVAL;
    return fused(p, q, k, v, out, lse);
}
#endif

/* ---------------------------------------------------------------- hard attention */

/* The rows' best scores −inf and best keys SIZE_MAX (no key seen). */
static void hard_begin(la_engine_task *t)
{
    la_engine_carve(t);
    const la_engine_rows *w = la_engine_rows_of(t);
    REAL *best_score = w->stat_a;
    size_t *best_key = w->stat_b;
    for (size_t r = 0; r < t->rows; r++) {
        best_score[r] = -INFINITY;
        best_key[r] = SIZE_MAX;
    }
}

/* Running argmax over the visible keys, ties to the lowest j: the block's max (vectorized),
 * then its first occurrence; an earlier block keeps a tie (strict >). */
static void hard_argmax_tile(la_engine_task *t, size_t j0, size_t cols)
{
    const la_problem *p = t->p;
    const la_engine_rows *w = la_engine_rows_of(t);
    REAL *s = w->s, *best_score = w->stat_a;
    size_t *best_key = w->stat_b;
    const bool masked = la_has_masks(p);
    for (size_t r = 0; r < t->rows; r++) {
        REAL *srow = s + r * cols;
        const size_t hi = t->hi[r];
        const size_t n = hi <= j0 ? 0 : (hi - j0 < cols ? hi - j0 : cols);
        if (n == 0) continue;
        REAL block_max = srow[0];
        if (masked) { /* general masks: hidden scores −inf (never equal to a kept maximum) */
            block_max = FN(mask_scores)(p, t->hd, t->i0 + r, j0, srow, n);
            if (block_max == -INFINITY) continue; /* every key here hidden */
        } else {
#pragma omp simd reduction(max : block_max)
            for (size_t c = 1; c < n; c++)
                block_max = srow[c] > block_max ? srow[c] : block_max;
        }
        if (best_key[r] == SIZE_MAX || block_max > best_score[r]) {
            size_t c = 0; /* (c + 1 < n: stays in the row even if a score is NaN) */
            while (c + 1 < n && !(srow[c] == block_max))
                c++;
            best_score[r] = block_max;
            best_key[r] = j0 + c;
        }
    }
}

/* out_i = v_{argmax}; zeros when no key is visible. */
static void hard_finish(la_engine_task *t)
{
    const size_t dv = t->p->d_v, *best_key = la_engine_rows_of(t)->stat_b;
    const REAL *vh = t->v;
    for (size_t r = 0; r < t->rows; r++) {
        REAL *orow = (REAL *)t->out + (t->i0 + r) * dv;
        if (best_key[r] == SIZE_MAX)
            memset(orow, 0, dv * sizeof *orow);
        else
            memcpy(orow, vh + best_key[r] * dv, dv * sizeof *orow);
    }
}

static la_status hard(const la_problem *p, const REAL *q, const REAL *k, const REAL *v, REAL *out)
{
    la_status st = la_engine_check(p, q, k, v, out, sizeof(REAL));
    if (st != LA_OK) return st;
    if (!FN(la_range_ok)(LA_RANGE_HARD, p, q, k, v)) return LA_ERANGE;
    const la_engine_tiles tiles = {hard_begin, PORTABLE.scores, hard_argmax_tile, NULL,
                                   hard_finish};
    const la_engine e = portable_engine(p, tiles);
    return la_engine_run(&e, p, q, k, v, out, NULL, 0);
}

/* The forward's argmax for the backward (attention_internal.h): the same tiles on one task
 * whose scratch is the caller's. */
static void hard_argmax(const la_problem *p, size_t hd, const REAL *qh, const REAL *kh, size_t i0,
                        size_t rows, REAL *s, REAL *best_score, size_t *best_key)
{
    const la_engine_tiles tiles = {hard_begin, PORTABLE.scores, hard_argmax_tile, NULL, NULL};
    const la_engine e = portable_engine(p, tiles);
    la_engine_task t;
    memset(t.state, 0, sizeof t.state);
    t.p = p;
    t.e = &e;
    t.hd = hd;
    t.b = hd / p->heads;
    t.m = la_keys_in_length(p, t.b);
    t.i0 = i0;
    t.rows = rows;
    t.q = qh;
    t.k = kh;
    t.v = NULL;
    t.out = NULL;
    t.lse = NULL;
    t.scratch = NULL;
    t.kv_bits = NULL;
    la_engine_rows *w = la_engine_rows_of(&t);
    w->s = s;
    w->stat_a = best_score;
    w->stat_b = best_key;
    la_engine_run_task(&t);
}

#if REAL_IS_F32
la_status la_hard_attention_f32(const la_problem *p, const float *q, const float *k, const float *v,
                                float *out)
{
    return hard(p, q, k, v, out);
}

void la_hard_argmax_f32(const la_problem *p, size_t hd, const float *qh, const float *kh, size_t i0,
                        size_t rows, float *s, float *best_score, size_t *best_key)
{
    hard_argmax(p, hd, qh, kh, i0, rows, s, best_score, best_key);
}
#else
la_status la_hard_attention_f64(const la_problem *p, const double *q, const double *k,
                                const double *v, double *out)
{
    return hard(p, q, k, v, out);
}

void la_hard_argmax_f64(const la_problem *p, size_t hd, const double *qh, const double *kh,
                        size_t i0, size_t rows, double *s, double *best_score, size_t *best_key)
{
    hard_argmax(p, hd, qh, kh, i0, rows, s, best_score, best_key);
}
#endif

/* ---------------------------------------------------------------- materializing softmax */

/* Materializing softmax attention, one head at a time:
 *   scores (N × M, one matrix for the whole call) = q kᵀ · scale,
 *   P = row softmax of scores over visible keys (hidden ones 0),
 *   out (N × d_v) = P v.
 * The rows of the one score matrix are split into blocks of Q_BLOCK rows and the
 * blocks spread over the threads, so the call holds exactly N·M elements. */
static la_status materialized(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                              REAL *out)
{
    la_status st = la_engine_check(p, q, k, v, out, sizeof(REAL));
    if (st != LA_OK) return st;
    if (!FN(la_range_ok)(LA_RANGE_SOFTMAX, p, q, k, v)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t score_bytes;
    if (!la_mul_ok(N, M, &score_bytes) || !la_mul_ok(score_bytes, sizeof(REAL), &score_bytes) ||
        score_bytes > p->workspace_limit)
        return LA_EBUDGET;
    const size_t q_blocks = (N + Q_BLOCK - 1) / Q_BLOCK;
    int threads = la_threads();
    if ((size_t)threads > q_blocks) threads = (int)q_blocks;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *scores = la_scores_alloc(score_bytes);
    if (!scores) return LA_ENOMEM;

#pragma omp parallel num_threads(threads)
    for (size_t bh = 0; bh < p->batch * p->heads; bh++) {
        const size_t b = bh / p->heads;
        const REAL *qh = q + bh * N * dk, *kh = k + bh * M * dk, *vh = v + bh * M * dv;
        REAL *oh = out + bh * N * dv;
#pragma omp for schedule(dynamic)
        for (size_t t = 0; t < q_blocks; t++) {
            const size_t i0 = (q_blocks - 1 - t) * Q_BLOCK; /* longest rows first */
            const size_t rows = N - i0 < Q_BLOCK ? N - i0 : Q_BLOCK;
            const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
            REAL *s = scores + i0 * M; /* rows × key_end, leading dimension M */
            if (key_end == 0) {        /* no key visible to any row of the block */
                memset(oh + i0 * dv, 0, rows * dv * sizeof *oh);
                continue;
            }
            /* scores = q_blk · kᵀ · scale */
            GEMM(rows, key_end, dk, (REAL)p->scale, qh + i0 * dk, (ptrdiff_t)dk, 1, kh, 1,
                 (ptrdiff_t)dk, 0, s, (ptrdiff_t)M, 1);
            /* P = softmax of each row over its visible keys: exp(s - max) / Σ exp(s - max) */
            for (size_t r = 0; r < rows; r++) {
                REAL *srow = s + r * M;
                size_t n = la_visible_keys(p, b, i0 + r);
                if (n > 0 && la_has_masks(p)) { /* general masks: hidden keys weigh 0 */
                    const REAL max = FN(mask_scores)(p, bh, i0 + r, 0, srow, n);
                    if (max == -INFINITY)
                        n = 0; /* every key hidden: the empty row */
                    else {
                        const REAL sum = FN(masked_exp_sum)(srow, n, max);
                        for (size_t c = 0; c < n; c++)
                            srow[c] /= sum;
                    }
                } else if (n > 0) {
                    REAL max = srow[0];
#pragma omp simd reduction(max : max)
                    for (size_t c = 1; c < n; c++)
                        max = srow[c] > max ? srow[c] : max;
                    const REAL sum = EXP_SHIFT_SUM(srow, n, max);
                    for (size_t c = 0; c < n; c++)
                        srow[c] /= sum;
                }
                if (n < key_end) memset(srow + n, 0, (key_end - n) * sizeof *srow);
            }
            /* out_blk = P_blk · v */
            GEMM(rows, dv, key_end, 1, s, (ptrdiff_t)M, 1, vh, (ptrdiff_t)dv, 1, 0, oh + i0 * dv,
                 (ptrdiff_t)dv, 1);
        }
    }
    free(scores);
    return LA_OK;
}

#if REAL_IS_F32
la_status la_softmax_attention_materialized_f32(const la_problem *p, const float *q, const float *k,
                                                const float *v, float *out)
{
    return materialized(p, q, k, v, out);
}
#else
la_status la_softmax_attention_materialized_f64(const la_problem *p, const double *q,
                                                const double *k, const double *v, double *out)
{
    return materialized(p, q, k, v, out);
}
#endif

#if REAL_IS_F32
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
            (f32 ? (double)la_round_up_64(la_fused_simd_staging_bytes(p, false)) : 0);
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
#endif

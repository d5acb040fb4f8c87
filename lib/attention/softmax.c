/* softmax.c — softmax attention, fused (the online-softmax engine) and materializing, and
 * hard attention (argmax), their backward passes and their costs, in one precision: the
 * Makefile compiles this file twice (core/real_typed.h), la_*_f32 and la_*_f64.
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major
 *   (the fused forward: laid out as p's strides say); lse: (B, H, N), log Σ_j exp(s_ij) per
 *   query (−inf: no key seen).
 *
 * The fused and hard kernels run on the engine (engine.h): tasks of (b, h, block of
 * queries), bitwise the same on any thread count. The fused kernel takes the AVX-512 tiles
 * (engine_avx512.c) where la_fused_simd_usable(p), else the portable ones (BLIS products);
 * hard attention is the portable score tile followed by a running argmax. Contracts in
 * lib/linattn.h. */
#include "attention/engine.h"
#include "attention/linear_internal.h" /* la_dot: the fixed-order dot product */
#include "core/alloc_large.h"
#include "core/real_typed.h"
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
#define SIMD_NARROW la_engine_avx512_narrow_f32
#define SIMD_NARROW_ROWS LA_FUSED_SIMD_NARROW_ROWS
#else
#define PORTABLE la_engine_portable_f64
#define SIMD_NARROW la_engine_avx512_narrow_f64
#define SIMD_NARROW_ROWS LA_FUSED_SIMD_F64_NARROW_ROWS
#endif

#define EXP_SHIFT_SUM FN(la_exp_shift_sum)
#if REAL_IS_F32
#define LOG logf
#else
#define LOG log
#endif

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
    la_engine e = la_engine_fused_wide(p, sizeof(REAL), la_engine_prefix_keys);
    e.narrow = SIMD_NARROW;
    e.narrow_rows = SIMD_NARROW_ROWS;
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
    t.ldq = t.ldk = p->d_k; /* the backward's contiguous rows */
    t.ldv = t.ldo = p->d_v;
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
    REAL *scores = la_alloc_large(score_bytes);
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
            GEMM_SMALL_ABT(rows, key_end, dk, (REAL)p->scale, qh + i0 * dk, (ptrdiff_t)dk, kh,
                           (ptrdiff_t)dk, s, (ptrdiff_t)M);
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
            GEMM_SMALL(rows, dv, key_end, 1, s, (ptrdiff_t)M, 1, vh, (ptrdiff_t)dv, 1, 0,
                       oh + i0 * dv, (ptrdiff_t)dv, 1);
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

/* ================================================================ the backward passes */

/* FlashAttention-2's backward of fused softmax (recomputing P from lse), the textbook one of
 * materializing softmax on the held N×M probabilities, and hard attention's (the forward's
 * argmax, then d_v only). Bitwise the same for any thread count: every element of a
 * gradient is a sum over blocks taken in a fixed order (d_k, d_v over query blocks, d_q over
 * key blocks, each block's product a fixed call), and the split into tasks changes only who
 * computes a sum, never its order.
 *   d_out: (B, H, N, d_v); d_q, d_k, d_v shaped as q, k, v. */

/* Fused backward: blocks of BQ queries × BK keys (equal, so that both schedules cut the
 * key blocks alike: query_block_pass below). Materializing backward:
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

static size_t min_size(size_t a, size_t b)
{
    return a < b ? a : b;
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

/* The arguments of a backward call: q (B,H,N,d_k), k (B,H,M,d_k), v (B,H,M,d_v), out and
 * d_out (B,H,N,d_v), and the gradients d_q, d_k, d_v shaped as q, k, v. */

typedef struct {
    const REAL *q, *k, *v, *out, *d_out;
    REAL *d_q, *d_k, *d_v;
    la_key_range_fn keys; /* the fused backward's keys per query: NULL the prefix */
} grad_args;

/* xt (cols × rows, row-major) = x (rows × cols, leading dimension ld)ᵀ: a key block of k or v
 * laid out so that the block products read it with unit column stride (GEMM_SMALL). */
static void transpose(const REAL *x, size_t ld, size_t rows, size_t cols, REAL *xt)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            xt[c * rows + r] = x[r * ld + c];
}

/* One head's arrays, as the block functions below read them: q (N, d_k), k (M, d_k),
 * v (M, d_v), out and d_out (N, d_v), lse and dots (N); d_q (N, d_k), d_k (M, d_k), d_v
 * (M, d_v). */
typedef struct {
    const la_problem *p;
    size_t b;             /* batch entry (for the masks) */
    size_t bh;            /* head b·H + h (for the general masks) */
    size_t m;             /* keys the key lengths leave entry b (la_keys_in_length) */
    la_key_range_fn keys; /* the keys a query sees: NULL the prefix (causal, key lengths) */
    const REAL *qh, *kh, *vh, *oh, *gh;
    const REAL *lse;
    const REAL *dots; /* D_i = d_out_i · out_i (row_dots) */
    REAL *dqh, *dkh, *dvh;
} head;

/* The keys query i of a head sees, [*lo, *hi): the prefix of the causal mask and the key
 * lengths, or the head's keys function (local attention's window). Both never decrease
 * with i. */
static void row_keys(const head *hd, size_t i, size_t *lo, size_t *hi)
{
    if (hd->keys) {
        hd->keys(hd->p, hd->m, i, lo, hi);
        return;
    }
    *lo = 0;
    *hi = la_visible_keys_of(hd->p, hd->m, i);
}

/* The keys of the block j0 .. j0+cols-1 that query i sees: block columns [*c0, *c1). */
static void keys_in_block(const head *hd, size_t i, size_t j0, size_t cols, size_t *c0, size_t *c1)
{
    size_t lo, hi;
    row_keys(hd, i, &lo, &hi);
    *c1 = hi <= j0 ? 0 : (hi - j0 < cols ? hi - j0 : cols);
    *c0 = lo <= j0 ? 0 : (lo - j0 < *c1 ? lo - j0 : *c1);
}

/* Whether no query of the block i0 .. i0+rows-1 sees a key of the block j0 .. j0+cols-1
 * (its first query's keys start past the block, or its last query's end before it). */
static bool block_unseen(const head *hd, size_t i0, size_t rows, size_t j0, size_t cols)
{
    size_t lo, hi;
    row_keys(hd, i0, &lo, &hi);
    if (lo >= j0 + cols) return true;
    row_keys(hd, i0 + rows - 1, &lo, &hi);
    return hi <= j0;
}

/* The end of the keys any query of the head sees: its last query's hi. */
static size_t head_key_end(const head *hd)
{
    size_t lo, hi;
    row_keys(hd, hd->p->n_queries - 1, &lo, &hi);
    return hi;
}

/* A thread's scratch: kt (d_k × BK) and vt (d_v × BK), a key block transposed; s and ds
 * (BQ × BK): the block's P and dS; row (BQ): the lse pass's running maxima (with the
 * running sums in ds). */
typedef struct {
    REAL *kt, *vt, *s, *ds, *row;
} grad_scratch;

static grad_scratch scratch_of(const la_problem *p, unsigned char *mine)
{
    const size_t bq = p->n_queries < BQ ? p->n_queries : BQ;
    const size_t bk = p->n_keys < BK ? p->n_keys : BK;
    grad_scratch w;
    w.kt = (REAL *)(void *)mine;
    w.vt = w.kt + p->d_k * bk;
    w.s = w.vt + p->d_v * bk;
    w.ds = w.s + bq * bk;
    w.row = w.ds + bq * bk;
    return w;
}

/* Bytes of one thread's scratch (scratch), rounded up to a cache line. */
static size_t scratch_bytes(const la_problem *p)
{
    const size_t bq = p->n_queries < BQ ? p->n_queries : BQ;
    const size_t bk = p->n_keys < BK ? p->n_keys : BK;
    return la_round_up_64(((p->d_k + p->d_v) * bk + 2 * bq * bk + bq) * sizeof(REAL));
}

/* The key block j0 .. j0+cols-1 of one head, transposed into w->kt (d_k × cols) and
 * w->vt (d_v × cols). */
static void load_keys(const head *hd, size_t j0, size_t cols, grad_scratch *w)
{
    const size_t dk = hd->p->d_k, dv = hd->p->d_v;
    transpose(hd->kh + j0 * dk, dk, cols, dk, w->kt);
    transpose(hd->vh + j0 * dv, dv, cols, dv, w->vt);
}

/* D_i = Σ_c d_out_ic · out_ic for the rows i0 .. i0+rows-1 of a head, into dots (rows),
 * la_dot's 8 partial sums: once per query before the key blocks (FlashAttention-2's
 * preprocessing), not once per (query block, key block) pair, which read out again for
 * every key block and cost 5–6% of the backward at N = 4,096, d = 64. */
static void row_dots(const head *hd, size_t i0, size_t rows, REAL *dots)
{
    const size_t dv = hd->p->d_v;
    for (size_t r = 0; r < rows; r++)
        dots[r] = FN(la_dot)(hd->gh + (i0 + r) * dv, hd->oh + (i0 + r) * dv, dv);
}

/* The backward of one (query block i0 .. i0+rows-1, key block j0 .. j0+cols-1) of a head,
 * with w->kt, w->vt holding the key block (load_keys) and hd->dots the rows' D (row_dots):
 *   s  = q_blk · k_blkᵀ,  P = exp(s · scale − lse) on visible pairs, 0 on hidden ones;
 *   ds = d_out_blk · v_blkᵀ (= dP),  dS = P ∘ (dP − D) · scale (0 on hidden pairs);
 *   kv: d_v_blk += Pᵀ · d_out_blk,  d_k_blk += dSᵀ · q_blk;
 *   q:  d_q_blk += dS · k_blk.
 * Every call with the same blocks computes the same P and dS bits, so d_q's pass may
 * recompute them (the two-pass schedule) without changing a bit of the result. */
static void block_backward(const head *hd, size_t i0, size_t rows, size_t j0, size_t cols,
                           grad_scratch *w, bool kv, bool q)
{
    const la_problem *p = hd->p;
    const size_t dk = p->d_k, dv = p->d_v;
    const REAL scale = (REAL)p->scale;
    /* s = q_blk · k_blkᵀ, ds = dP = d_out_blk · v_blkᵀ  (rows × cols each) */
    GEMM_SMALL(rows, cols, dk, 1, hd->qh + i0 * dk, (ptrdiff_t)dk, 1, w->kt, (ptrdiff_t)cols, 1, 0,
               w->s, (ptrdiff_t)cols, 1);
    GEMM_SMALL(rows, cols, dv, 1, hd->gh + i0 * dv, (ptrdiff_t)dv, 1, w->vt, (ptrdiff_t)cols, 1, 0,
               w->ds, (ptrdiff_t)cols, 1);
    /* P = exp(s·scale − lse), dS = P ∘ (dP − D) · scale; hidden pairs 0 */
    for (size_t r = 0; r < rows; r++) {
        size_t c0, c1;
        keys_in_block(hd, i0 + r, j0, cols, &c0, &c1);
        for (size_t c = 0; c < c0; c++) /* before the row's first key: hidden */
            w->s[r * cols + c] = w->ds[r * cols + c] = 0;
        REAL *srow = w->s + r * cols + c0, *dsrow = w->ds + r * cols + c0;
        size_t n = c1 - c0;
        if (n > 0 && la_has_masks(p)) { /* general masks: P = 0 where hidden */
            for (size_t c = 0; c < n; c++)
                srow[c] *= scale;
            if (hd->lse[i0 + r] == -INFINITY) /* the row sees no key */
                n = 0;
            else {
                (void)FN(mask_scores)(p, hd->bh, i0 + r, j0 + c0, srow, n);
                (void)FN(masked_exp_sum)(srow, n, hd->lse[i0 + r]);
                const REAL d = hd->dots[i0 + r];
                for (size_t c = 0; c < n; c++)
                    dsrow[c] = srow[c] * (dsrow[c] - d) * scale;
            }
        } else if (n > 0) {
            FN(la_softmax_grad_row)(srow, dsrow, n, scale, hd->lse[i0 + r], hd->dots[i0 + r]);
        }
        for (size_t c = n; c < cols - c0; c++)
            srow[c] = dsrow[c] = 0;
    }
    if (kv) {
        /* d_v_blk += Pᵀ · d_out_blk  (cols × d_v),  d_k_blk += dSᵀ · q_blk  (cols × d_k) */
        GEMM_SMALL(cols, dv, rows, 1, w->s, 1, (ptrdiff_t)cols, hd->gh + i0 * dv, (ptrdiff_t)dv, 1,
                   1, hd->dvh + j0 * dv, (ptrdiff_t)dv, 1);
        GEMM_SMALL(cols, dk, rows, 1, w->ds, 1, (ptrdiff_t)cols, hd->qh + i0 * dk, (ptrdiff_t)dk, 1,
                   1, hd->dkh + j0 * dk, (ptrdiff_t)dk, 1);
    }
    if (q) /* d_q_blk += dS · k_blk  (rows × d_k) */
        GEMM_SMALL(rows, dk, cols, 1, w->ds, (ptrdiff_t)cols, 1, hd->kh + j0 * dk, (ptrdiff_t)dk, 1,
                   1, hd->dqh + i0 * dk, (ptrdiff_t)dk, 1);
}

/* d_k, d_v of the key block j0 (cols keys) of a head: its query blocks in order. */
static void key_block_pass(const head *hd, size_t j0, size_t cols, grad_scratch *w, bool also_q)
{
    const la_problem *p = hd->p;
    const size_t N = p->n_queries;
    load_keys(hd, j0, cols, w);
    /* the first query block whose last row's keys end past j0 (hi never decreases, so the
     * blocks before it see nothing of this one): by bisection, so that a window's key
     * block costs O(log N) beyond the blocks that see it */
    size_t first = 0, end = (N + BQ - 1) / BQ;
    while (first < end) {
        const size_t mid = first + (end - first) / 2, last = N - mid * BQ < BQ ? N : (mid + 1) * BQ;
        size_t lo, hi;
        row_keys(hd, last - 1, &lo, &hi);
        if (hi <= j0)
            first = mid + 1;
        else
            end = mid;
    }
    for (size_t i0 = first * BQ; i0 < N; i0 += BQ) {
        const size_t rows = N - i0 < BQ ? N - i0 : BQ;
        size_t lo, hi;
        row_keys(hd, i0, &lo, &hi);
        if (lo >= j0 + cols)
            break; /* this block's keys start past the key block, and so
                      do every later block's (lo never decreases) */
        if (block_unseen(hd, i0, rows, j0, cols)) continue; /* no row sees the block */
        block_backward(hd, i0, rows, j0, cols, w, true, also_q);
    }
}

/* d_q of the query block i0 (rows queries) of a head: its key blocks in order. */
static void query_block_pass(const head *hd, size_t i0, size_t rows, grad_scratch *w)
{
    size_t lo, key_end;
    row_keys(hd, i0 + rows - 1, &lo, &key_end);
    /* key blocks cut as the one-pass schedule cuts them (at the head's last visible key),
     * so both schedules make the same calls, and skipped as it skips them */
    const size_t head_end = head_key_end(hd);
    size_t first, hi;
    row_keys(hd, i0, &first, &hi); /* blocks ending at or before the first row's lo: unseen */
    for (size_t j0 = first / BK * BK; j0 < key_end; j0 += BK) {
        const size_t cols = head_end - j0 < BK ? head_end - j0 : BK;
        if (block_unseen(hd, i0, rows, j0, cols)) continue;
        load_keys(hd, j0, cols, w);
        block_backward(hd, i0, rows, j0, cols, w, false, true);
    }
}

/* s = q_blk · k_blkᵀ · scale as block_backward forms it: k_blk transposed into kt (the
 * task's extra), one GEMM_SMALL, then the scale. */
static void lse_scores(la_engine_task *t, size_t j0, size_t cols)
{
    const size_t dk = t->p->d_k, rows = t->rows;
    const la_engine_rows *w = la_engine_rows_of(t);
    const REAL *qh = t->q, *kh = t->k;
    REAL *s = w->s, *kt = w->extra;
    transpose(kh + j0 * dk, dk, cols, dk, kt);
    GEMM_SMALL(rows, cols, dk, 1, qh + t->i0 * dk, (ptrdiff_t)dk, 1, kt, (ptrdiff_t)cols, 1, 0, s,
               (ptrdiff_t)cols, 1);
    const REAL scale = (REAL)t->p->scale;
    for (size_t x = 0; x < rows * cols; x++)
        s[x] *= scale;
}

/* The engine's keys function on a head's keys function (e->ctx: the head). */
static void head_range_keys(const la_engine_task *t, size_t i, size_t *lo, size_t *hi)
{
    row_keys((const head *)t->e->ctx, i, lo, hi);
}

/* lse of the query rows i0 .. i0+rows-1 of one head (the backward's own, when the caller
 * passes none): the engine's walk over the key blocks with the portable softmax tile and no
 * output, on the scores block_backward forms, so that P = exp(s − lse) there sums to 1 to
 * the last bit the forward would give. lse: (rows). */
static void lse_block(const head *hd, size_t i0, size_t rows, grad_scratch *w, REAL *lse)
{
    const la_problem *p = hd->p;
    la_engine e = {.wide = PORTABLE,
                   .q_block = BQ,
                   .k_block = BK,
                   .elem = sizeof(REAL),
                   .keys = hd->keys ? head_range_keys : la_engine_prefix_keys,
                   .ctx = hd};
    e.wide.scores = lse_scores;
    e.wide.values = NULL;
    la_engine_task t;
    memset(t.state, 0, sizeof t.state);
    t.p = p;
    t.e = &e;
    t.b = hd->b;
    t.hd = hd->bh;
    t.m = hd->m;
    t.i0 = i0;
    t.rows = rows;
    t.q = hd->qh;
    t.k = hd->kh;
    t.v = NULL;
    t.out = NULL;           /* the statistics only */
    t.ldq = t.ldk = p->d_k; /* the backward's contiguous rows */
    t.ldv = t.ldo = p->d_v;
    t.lse = lse;
    t.scratch = NULL;
    t.kv_bits = NULL;
    la_engine_rows *r = la_engine_rows_of(&t);
    r->s = w->s;
    r->stat_a = w->row; /* running maxima */
    r->stat_b = w->ds;  /* running sums */
    r->extra = w->kt;
    la_engine_run_task(&t);
}

/* The head (b, h) of a call. */
static head head_of(const la_problem *p, const grad_args *a, const REAL *lse, size_t b, size_t h)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    head hd;
    hd.p = p;
    hd.b = b;
    hd.bh = b * p->heads + h;
    hd.m = la_keys_in_length(p, b);
    hd.keys = a->keys;
    hd.qh = a->q + head_offset(p, b, h, N, dk);
    hd.kh = a->k + head_offset(p, b, h, M, dk);
    hd.vh = a->v + head_offset(p, b, h, M, dv);
    hd.oh = a->out ? a->out + head_offset(p, b, h, N, dv) : NULL;
    hd.gh = a->d_out + head_offset(p, b, h, N, dv);
    hd.lse = lse ? lse + head_offset(p, b, h, N, 1) : NULL;
    hd.dots = NULL;
    hd.dqh = a->d_q + head_offset(p, b, h, N, dk);
    hd.dkh = a->d_k + head_offset(p, b, h, M, dk);
    hd.dvh = a->d_v + head_offset(p, b, h, M, dv);
    return hd;
}

/* The range rule of a backward (linattn.h: la_attention_backward_*): the forward's on q, k,
 * v, and the backward's bound on d_out (and out, for softmax). */
static bool backward_range_ok(la_range_kind kind, const la_problem *p, const grad_args *a)
{
    if (!FN(la_range_ok)(kind, p, a->q, a->k, a->v)) return false;
    const size_t heads = p->batch * p->heads;
    const double e = FN(la_max_abs)(a->d_out, heads * p->n_queries * p->d_v);
    double a_, b_, c_, o_ = 0;
    if (kind == LA_RANGE_SOFTMAX) {
        a_ = FN(la_max_abs)(a->q, heads * p->n_queries * p->d_k);
        b_ = FN(la_max_abs_seen)(p, a->k, p->d_k); /* the keys some query sees */
        c_ = FN(la_max_abs_seen)(p, a->v, p->d_v);
        if (a->out) o_ = FN(la_max_abs)(a->out, heads * p->n_queries * p->d_v);
    } else {
        a_ = b_ = c_ = 0;
    }
    return backward_fits(kind, p, a_, b_, c_, o_, e, REAL_MAX);
}

/* Head bh of the fused backward, reading lse and dots ((B, H, N) each). */
static head fused_head(const la_problem *p, const grad_args *a, const REAL *lse, const REAL *dots,
                       size_t bh)
{
    head hd = head_of(p, a, lse, bh / p->heads, bh % p->heads);
    hd.dots = dots + bh * p->n_queries;
    return hd;
}

/* The fused backward (contract in linattn.h): lse given, or NULL (computed first), and D
 * (row_dots) of every query before the key blocks. */
static la_status softmax_backward(const la_problem *p, const grad_args *a, const REAL *lse_in)
{
    la_status st = la_engine_check(p, a->q, a->k, a->v, a->d_out, sizeof(REAL));
    if (st != LA_OK) return st;
    if (!a->out || !a->d_q || !a->d_k || !a->d_v) return LA_EINVAL;
    if (!backward_range_ok(LA_RANGE_SOFTMAX, p, a)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, heads = p->batch * p->heads;
    const size_t q_blocks = (N + BQ - 1) / BQ, k_blocks = (M + BK - 1) / BK;
    const int threads = la_threads();
    size_t lse_bytes = 0, dots_bytes, work_bytes, q_tasks, k_tasks;
    const size_t per_thread = scratch_bytes(p);
    const int used = softmax_backward_threads(p, threads);
    if (!la_mul_ok(heads, q_blocks, &q_tasks) || !la_mul_ok(heads, k_blocks, &k_tasks))
        return LA_EOVERFLOW;
    if (!la_mul_ok(heads * N, sizeof(REAL), &dots_bytes)) return LA_EOVERFLOW;
    dots_bytes = la_round_up_64(dots_bytes);
    lse_bytes = lse_in ? 0 : dots_bytes; /* (B, H, N) each */
    if (!la_mul_ok(per_thread, (size_t)used, &work_bytes) || work_bytes > SIZE_MAX - lse_bytes ||
        work_bytes + lse_bytes > SIZE_MAX - dots_bytes ||
        work_bytes + lse_bytes + dots_bytes > p->workspace_limit)
        return LA_EBUDGET;
    if (la_gemm_reserve(used) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, work_bytes + lse_bytes + dots_bytes);
    if (!scratch) return LA_ENOMEM;
    REAL *lse_own = (REAL *)(void *)(scratch + work_bytes);
    REAL *dots = (REAL *)(void *)(scratch + work_bytes + lse_bytes);
    const REAL *lse = lse_in ? lse_in : lse_own;

    memset(a->d_q, 0, heads * N * p->d_k * sizeof(REAL));
    memset(a->d_k, 0, heads * M * p->d_k * sizeof(REAL));
    memset(a->d_v, 0, heads * M * p->d_v * sizeof(REAL));
    const bool one_pass = heads >= (size_t)threads;

#pragma omp parallel num_threads(used)
    {
        grad_scratch w = scratch_of(p, scratch + (size_t)omp_get_thread_num() * per_thread);
        /* D (and lse when not given) of every query: (head, query block) tasks */
#pragma omp for schedule(dynamic)
        for (size_t t = 0; t < q_tasks; t++) {
            const size_t bh = t / q_blocks, i0 = (t % q_blocks) * BQ;
            const size_t rows = N - i0 < BQ ? N - i0 : BQ;
            const head hd = head_of(p, a, NULL, bh / p->heads, bh % p->heads);
            row_dots(&hd, i0, rows, dots + bh * N + i0);
            if (!lse_in) lse_block(&hd, i0, rows, &w, lse_own + bh * N + i0);
        }
        if (one_pass) { /* a head per task: its key blocks in order, d_q as it goes */
#pragma omp for schedule(dynamic)
            for (size_t bh = 0; bh < heads; bh++) {
                const head hd = fused_head(p, a, lse, dots, bh);
                const size_t key_end = head_key_end(&hd);
                for (size_t j0 = 0; j0 < key_end; j0 += BK)
                    key_block_pass(&hd, j0, key_end - j0 < BK ? key_end - j0 : BK, &w, true);
            }
        } else { /* d_k, d_v per (head, key block), then d_q per (head, query block) */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < k_tasks; t++) {
                const size_t bh = t / k_blocks, j0 = (t % k_blocks) * BK;
                const head hd = fused_head(p, a, lse, dots, bh);
                const size_t key_end = head_key_end(&hd);
                if (j0 < key_end)
                    key_block_pass(&hd, j0, key_end - j0 < BK ? key_end - j0 : BK, &w, false);
            }
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_tasks; t++) {
                const size_t bh = t / q_blocks;
                const size_t i0 = (q_blocks - 1 - t % q_blocks) * BQ; /* longest rows first */
                const head hd = fused_head(p, a, lse, dots, bh);
                query_block_pass(&hd, i0, N - i0 < BQ ? N - i0 : BQ, &w);
            }
        }
    }
    free(scratch);
    return LA_OK;
}

/* The materializing backward (contract in linattn.h), one head at a time:
 *   P (N × M, one matrix for the call) = row softmax of q kᵀ · scale, as the forward;
 *   d_v = Pᵀ d_out (per key block);
 *   per query block: dP = d_out_blk vᵀ (rows × M, per thread), dS = P ∘ (dP − Σ P∘dP)
 *   over P's rows, d_q_blk = dS_blk k · scale;
 *   d_k = dSᵀ q · scale (per key block).
 * Only the columns below kmax (the keys any query of the head sees) are formed. */
static la_status softmax_materialized_backward(const la_problem *p, const grad_args *a)
{
    la_status st = la_engine_check(p, a->q, a->k, a->v, a->d_out, sizeof(REAL));
    if (st != LA_OK) return st;
    if (!a->d_q || !a->d_k || !a->d_v) return LA_EINVAL;
    if (!backward_range_ok(LA_RANGE_SOFTMAX, p, a)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads;
    const int used = materialized_backward_threads(p, la_threads());
    const size_t bq = N < BQ_MAT ? N : BQ_MAT;
    size_t score_bytes, row_bytes, work_bytes;
    if (!la_mul_ok(N, M, &score_bytes) || !la_mul_ok(score_bytes, sizeof(REAL), &score_bytes) ||
        !la_mul_ok(bq * M, sizeof(REAL), &row_bytes) ||
        !la_mul_ok(la_round_up_64(row_bytes), (size_t)used, &work_bytes) ||
        la_round_up_64(score_bytes) > SIZE_MAX - work_bytes ||
        la_round_up_64(score_bytes) + work_bytes > p->workspace_limit)
        return LA_EBUDGET;
    score_bytes = la_round_up_64(score_bytes);
    row_bytes = la_round_up_64(row_bytes);
    if (la_gemm_reserve(used) != LA_OK) return LA_ENOMEM;
    unsigned char *mem = la_alloc_large(score_bytes + work_bytes);
    if (!mem) return LA_ENOMEM;
    REAL *P = (REAL *)(void *)mem;
    const REAL scale = (REAL)p->scale;
    const size_t q_blocks = (N + BQ_MAT - 1) / BQ_MAT, k_blocks = (M + BK_MAT - 1) / BK_MAT;

#pragma omp parallel num_threads(used)
    {
        REAL *dP = (REAL *)(void *)(mem + score_bytes + (size_t)omp_get_thread_num() * row_bytes);
        for (size_t bh = 0; bh < heads; bh++) {
            const head hd = head_of(p, a, NULL, bh / p->heads, bh % p->heads);
            const size_t b = hd.b, kmax = la_visible_keys(p, b, N - 1);
            /* P: scores, then each row's softmax over its visible keys, zeros to kmax */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_blocks; t++) {
                const size_t i0 = (q_blocks - 1 - t) * BQ_MAT;
                const size_t rows = N - i0 < BQ_MAT ? N - i0 : BQ_MAT;
                const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
                REAL *s = P + i0 * M;
                if (key_end > 0)
                    GEMM(rows, key_end, dk, scale, hd.qh + i0 * dk, (ptrdiff_t)dk, 1, hd.kh, 1,
                         (ptrdiff_t)dk, 0, s, (ptrdiff_t)M, 1);
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
                        for (size_t c = 1; c < n; c++)
                            max = srow[c] > max ? srow[c] : max;
                        const REAL sum = EXP_SHIFT_SUM(srow, n, max);
                        for (size_t c = 0; c < n; c++)
                            srow[c] /= sum;
                    }
                    if (n < kmax) memset(srow + n, 0, (kmax - n) * sizeof *srow);
                }
            }
            /* d_v_blk = P[:, blk]ᵀ · d_out over the rows that see the block; keys past kmax 0 */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < k_blocks; t++) {
                const size_t j0 = t * BK_MAT, cols = M - j0 < BK_MAT ? M - j0 : BK_MAT;
                REAL *dvb = hd.dvh + j0 * dv, *dkb = hd.dkh + j0 * dk;
                if (j0 >= kmax) {
                    memset(dvb, 0, cols * dv * sizeof *dvb);
                    memset(dkb, 0, cols * dk * sizeof *dkb);
                    continue;
                }
                /* keys kmax.. of the block: no query sees them */
                const size_t seen = kmax - j0 < cols ? kmax - j0 : cols;
                memset(dvb + seen * dv, 0, (cols - seen) * dv * sizeof *dvb);
                memset(dkb + seen * dk, 0, (cols - seen) * dk * sizeof *dkb);
                /* the first query that sees key j0 (< N: j0 < kmax, so some query does) */
                const size_t first = la_first_query_seeing(p, j0);
                GEMM(seen, dv, N - first, 1, P + first * M + j0, 1, (ptrdiff_t)M,
                     hd.gh + first * dv, (ptrdiff_t)dv, 1, 0, dvb, (ptrdiff_t)dv, 1);
            }
            /* dP, dS over P, d_q, per query block */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < q_blocks; t++) {
                const size_t i0 = (q_blocks - 1 - t) * BQ_MAT;
                const size_t rows = N - i0 < BQ_MAT ? N - i0 : BQ_MAT;
                const size_t key_end = la_visible_keys(p, b, i0 + rows - 1);
                REAL *s = P + i0 * M;
                if (key_end == 0) {
                    memset(hd.dqh + i0 * dk, 0, rows * dk * sizeof(REAL));
                    continue;
                }
                /* dP = d_out_blk · vᵀ  (rows × key_end, leading dimension key_end) */
                GEMM(rows, key_end, dv, 1, hd.gh + i0 * dv, (ptrdiff_t)dv, 1, hd.vh, 1,
                     (ptrdiff_t)dv, 0, dP, (ptrdiff_t)key_end, 1);
                /* dS = P ∘ (dP − Σ_j P dP), over P */
                for (size_t r = 0; r < rows; r++) {
                    REAL *srow = s + r * M;
                    const REAL *drow = dP + r * key_end;
                    const size_t n = la_visible_keys(p, b, i0 + r);
                    REAL center = 0;
                    for (size_t c = 0; c < n; c++)
                        center += srow[c] * drow[c];
                    for (size_t c = 0; c < n; c++)
                        srow[c] = srow[c] * (drow[c] - center);
                }
                /* d_q_blk = dS_blk · k · scale */
                GEMM(rows, dk, key_end, scale, s, (ptrdiff_t)M, 1, hd.kh, (ptrdiff_t)dk, 1, 0,
                     hd.dqh + i0 * dk, (ptrdiff_t)dk, 1);
            }
            /* d_k_blk = dS[:, blk]ᵀ · q · scale over the rows that see the block */
#pragma omp for schedule(dynamic)
            for (size_t t = 0; t < k_blocks; t++) {
                const size_t j0 = t * BK_MAT, cols = M - j0 < BK_MAT ? M - j0 : BK_MAT;
                if (j0 >= kmax) continue; /* zeroed above, as the keys past kmax */
                const size_t seen = kmax - j0 < cols ? kmax - j0 : cols;
                const size_t first = la_first_query_seeing(p, j0);
                GEMM(seen, dk, N - first, scale, P + first * M + j0, 1, (ptrdiff_t)M,
                     hd.qh + first * dk, (ptrdiff_t)dk, 1, 0, hd.dkh + j0 * dk, (ptrdiff_t)dk, 1);
            }
        }
    }
    free(mem);
    return LA_OK;
}

/* The hard backward (contract in linattn.h): the forward's argmax per (head, query block)
 * into `best` (B·H·N keys), then per head d_v_j += d_out_i over its queries in order. */
static la_status hard_backward(const la_problem *p, const grad_args *a)
{
    la_status st = la_engine_check(p, a->q, a->k, a->v, a->d_out, sizeof(REAL));
    if (st != LA_OK) return st;
    if (!a->d_q || !a->d_k || !a->d_v) return LA_EINVAL;
    if (!backward_range_ok(LA_RANGE_HARD, p, a)) return LA_ERANGE;

    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads, q_blocks = (N + Q_BLOCK_HARD - 1) / Q_BLOCK_HARD;
    const int used = hard_backward_threads(p, la_threads());
    const size_t bq = N < Q_BLOCK_HARD ? N : Q_BLOCK_HARD, bk = M < K_BLOCK_HARD ? M : K_BLOCK_HARD;
    const size_t per_thread = la_round_up_64((bq * bk + bq) * sizeof(REAL));
    size_t best_bytes, work_bytes, q_tasks;
    if (!la_mul_ok(heads, q_blocks, &q_tasks) || !la_mul_ok(heads * N, sizeof(size_t), &best_bytes))
        return LA_EOVERFLOW;
    best_bytes = la_round_up_64(best_bytes);
    if (!la_mul_ok(per_thread, (size_t)used, &work_bytes) || work_bytes > SIZE_MAX - best_bytes ||
        work_bytes + best_bytes > p->workspace_limit)
        return LA_EBUDGET;
    if (la_gemm_reserve(used) != LA_OK) return LA_ENOMEM;
    unsigned char *mem = aligned_alloc(64, best_bytes + work_bytes);
    if (!mem) return LA_ENOMEM;
    size_t *best = (size_t *)(void *)mem;

    memset(a->d_q, 0, heads * N * dk * sizeof(REAL));
    memset(a->d_k, 0, heads * M * dk * sizeof(REAL));
    memset(a->d_v, 0, heads * M * dv * sizeof(REAL));
#pragma omp parallel num_threads(used)
    {
        unsigned char *mine = mem + best_bytes + (size_t)omp_get_thread_num() * per_thread;
        REAL *s = (REAL *)(void *)mine, *best_score = s + bq * bk;
#pragma omp for schedule(dynamic)
        for (size_t t = 0; t < q_tasks; t++) {
            const size_t bh = t / q_blocks, i0 = (t % q_blocks) * Q_BLOCK_HARD;
            const head hd = head_of(p, a, NULL, bh / p->heads, bh % p->heads);
            hard_argmax(p, hd.bh, hd.qh, hd.kh, i0, N - i0 < bq ? N - i0 : bq, s, best_score,
                        best + bh * N + i0);
        }
        /* d_v_j += d_out_i for each query i, in order, whose argmax is j */
#pragma omp for schedule(dynamic)
        for (size_t bh = 0; bh < heads; bh++) {
            const head hd = head_of(p, a, NULL, bh / p->heads, bh % p->heads);
            for (size_t i = 0; i < N; i++) {
                const size_t j = best[bh * N + i];
                if (j == SIZE_MAX) continue;
                for (size_t c = 0; c < dv; c++)
                    hd.dvh[j * dv + c] += hd.gh[i * dv + c];
            }
        }
    }
    free(mem);
    return LA_OK;
}

/* ---------------------------------------------------------------- the public backwards */

#if REAL_IS_F32
la_status la_softmax_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, const float *out, const float *lse,
                                            const float *d_out, float *d_q, float *d_k, float *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, NULL};
    return softmax_backward(p, &a, lse);
}

/* The fused backward over the keys a keys function gives each query (attention_internal.h). */
la_status la_softmax_range_backward_f32(const la_problem *p, la_key_range_fn keys, const float *q,
                                        const float *k, const float *v, const float *out,
                                        const float *d_out, float *d_q, float *d_k, float *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, keys};
    return softmax_backward(p, &a, NULL);
}

/* The registry row's backward (la_backward_f32_fn): lse computed first. */
la_status la_softmax_row_backward_f32(const la_problem *p, const float *q, const float *k,
                                      const float *v, const float *out, const float *d_out,
                                      float *d_q, float *d_k, float *d_v)
{
    return la_softmax_attention_backward_f32(p, q, k, v, out, NULL, d_out, d_q, d_k, d_v);
}

la_status la_softmax_attention_materialized_backward_f32(const la_problem *p, const float *q,
                                                         const float *k, const float *v,
                                                         const float *out, const float *d_out,
                                                         float *d_q, float *d_k, float *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, NULL};
    return softmax_materialized_backward(p, &a);
}

la_status la_hard_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                         const float *v, const float *out, const float *d_out,
                                         float *d_q, float *d_k, float *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, NULL};
    return hard_backward(p, &a);
}
#else
la_status la_softmax_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, const double *out, const double *lse,
                                            const double *d_out, double *d_q, double *d_k,
                                            double *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, NULL};
    return softmax_backward(p, &a, lse);
}

la_status la_softmax_range_backward_f64(const la_problem *p, la_key_range_fn keys, const double *q,
                                        const double *k, const double *v, const double *out,
                                        const double *d_out, double *d_q, double *d_k, double *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, keys};
    return softmax_backward(p, &a, NULL);
}

la_status la_softmax_row_backward_f64(const la_problem *p, const double *q, const double *k,
                                      const double *v, const double *out, const double *d_out,
                                      double *d_q, double *d_k, double *d_v)
{
    return la_softmax_attention_backward_f64(p, q, k, v, out, NULL, d_out, d_q, d_k, d_v);
}

la_status la_softmax_attention_materialized_backward_f64(const la_problem *p, const double *q,
                                                         const double *k, const double *v,
                                                         const double *out, const double *d_out,
                                                         double *d_q, double *d_k, double *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, NULL};
    return softmax_materialized_backward(p, &a);
}

la_status la_hard_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                         const double *v, const double *out, const double *d_out,
                                         double *d_q, double *d_k, double *d_v)
{
    const grad_args a = {q, k, v, out, d_out, d_q, d_k, d_v, NULL};
    return hard_backward(p, &a);
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
         * (engine_avx512.c: 32 floats, 16 doubles); float32
         * decoding (N <= 4) also stages its output */
        out->workspace_bytes =
            la_engine_fused_wide_workspace(p, dtype) +
            (dtype == LA_FLOAT32 ? (double)la_round_up_64(la_fused_simd_staging_bytes(p, false))
                                 : 0);
    } else {
        out->workspace_bytes = blocked_workspace(p, la_dtype_size(dtype));
    }
    return LA_OK;
}

la_status la_softmax_materialized_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, softmax_head_flops, out);
    /* bytes_min beyond q, k, v, out: the N×M scores written and read back */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 * (double)p->n_queries *
                     (double)p->n_keys * (double)la_dtype_size(dtype);
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

/* ---------------------------------------------------------------- the backward costs */

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

/* The registry row's backward (lse = NULL): per thread a grad_scratch of d_k·BK + d_v·BK +
 * 2·BQ·BK + BQ elements, for min(threads, B·H·max(query blocks, key blocks)) threads,
 * and the B·H·N log-sum-exps and B·H·N row dots D it computes first. */
la_status la_softmax_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, softmax_backward_head_flops, out);
    const double e = (double)la_dtype_size(dtype);
    const double bq = (double)min_size(p->n_queries, BQ), bk = (double)min_size(p->n_keys, BK);
    const double per_thread = up64(((double)(p->d_k + p->d_v) * bk + 2 * bq * bk + bq) * e);
    const double lse = up64((double)p->batch * (double)p->heads * (double)p->n_queries * e);
    out->workspace_bytes = (double)softmax_backward_threads(p, la_threads()) * per_thread + 2 * lse;
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
#endif

/* ---------------------------------------------------------------- strides */

#if REAL_IS_F32
/* The fused forward reads any valid layout of q, k, v and out in place, in both element
 * types: the engine offsets each head by its batch and head strides and every tile reads
 * rows at their row stride (la_engine_task's ldq ... ldo), the range scan too. Its backward
 * takes contiguous arrays (la_attention_backward copies). */
static int fused_reads_strides(const la_problem *p, la_dtype dtype)
{
    (void)dtype;
    return la_problem_check(p) == LA_OK;
}
#endif

/* ---------------------------------------------------------------- registry rows */

#if REAL_IS_F32
static const la_kernel_fns softmax_fns = {
    .reads_strides = fused_reads_strides,
    .forward_f32 = la_softmax_attention_f32,
    .forward_f64 = la_softmax_attention_f64,
    .reference = la_ref_softmax_attention,
    .cost = la_softmax_cost,
    .backward_f32 = la_softmax_row_backward_f32,
    .backward_f64 = la_softmax_row_backward_f64,
    .reference_backward = la_ref_softmax_attention_backward,
    .backward_cost = la_softmax_backward_cost,
    .weights_f32 = la_softmax_weights_f32,
    .weights_f64 = la_softmax_weights_f64,
    .lse_f32 = la_softmax_attention_lse_f32,
    .lse_f64 = la_softmax_attention_lse_f64,
    .backward_lse_f32 = la_softmax_attention_backward_f32,
    .backward_lse_f64 = la_softmax_attention_backward_f64,
};

const la_kernel_info la_row_softmax = {
    .kernel = LA_KERNEL_SOFTMAX,
    .name = "softmax",
    .summary = "softmax(Q Kᵀ·scale) V, fused: online softmax over key blocks, never the "
               "N×M scores",
    .series = {"softmax", "softmax_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE,
    .masks = LA_MASK_GENERAL | LA_MASK_KEY,
    .caps = LA_CAP_LSE | LA_CAP_ROTARY | LA_CAP_BACKWARD | LA_CAP_WEIGHTS,
    .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
    .time_exponent = 2,
    .family = "softmax",
    .fns = &softmax_fns,
};

static const la_kernel_fns softmax_materialized_fns = {
    .forward_f32 = la_softmax_attention_materialized_f32,
    .forward_f64 = la_softmax_attention_materialized_f64,
    .reference = la_ref_softmax_attention,
    .cost = la_softmax_materialized_cost,
    .backward_f32 = la_softmax_attention_materialized_backward_f32,
    .backward_f64 = la_softmax_attention_materialized_backward_f64,
    .reference_backward = la_ref_softmax_attention_backward,
    .backward_cost = la_softmax_materialized_backward_cost,
    .weights_f32 = la_softmax_weights_f32,
    .weights_f64 = la_softmax_weights_f64,
};

const la_kernel_info la_row_softmax_materialized = {
    .kernel = LA_KERNEL_SOFTMAX_MATERIALIZED,
    .name = "softmax_materialized",
    .summary = "softmax(Q Kᵀ·scale) V, materializing: the N×M scores, their softmax, then ·V",
    .series = {"softmax_materialized", "softmax_materialized_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE,
    .masks = LA_MASK_GENERAL | LA_MASK_KEY,
    .caps = LA_CAP_ROTARY | LA_CAP_BACKWARD | LA_CAP_WEIGHTS,
    .sweep = LA_SWEEP_PLAIN,
    .time_exponent = 2,
    .family = "softmax",
    .fns = &softmax_materialized_fns,
};

static const la_kernel_fns hard_fns = {
    .forward_f32 = la_hard_attention_f32,
    .forward_f64 = la_hard_attention_f64,
    .reference = la_ref_hard_attention,
    .cost = la_hard_cost,
    .backward_f32 = la_hard_attention_backward_f32,
    .backward_f64 = la_hard_attention_backward_f64,
    .reference_backward = la_ref_hard_attention_backward,
    .backward_cost = la_hard_backward_cost,
    .weights_f32 = la_hard_weights_f32,
    .weights_f64 = la_hard_weights_f64,
};

const la_kernel_info la_row_hard = {
    .kernel = LA_KERNEL_HARD,
    .name = "hard",
    .summary = "hard: the V row of the best-scoring visible key (ties: the lowest)",
    .series = {"hard", "hard_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE,
    .masks = LA_MASK_GENERAL | LA_MASK_KEY,
    .caps = LA_CAP_ROTARY | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD | LA_CAP_WEIGHTS,
    .sweep = LA_SWEEP_PLAIN,
    .time_exponent = 2,
    .family = "softmax",
    .fns = &hard_fns,
};
#endif

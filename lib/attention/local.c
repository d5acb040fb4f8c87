/* local.c — restricted (local) softmax attention, in one precision (the Makefile compiles
 * this file twice: real_typed.h): query i attends with softmax to the keys j within
 * window = r positions, |i − j| <= r (causal: i − r <= j <= i), besides the usual masks
 * (key lengths, general masks).
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major.
 *
 * It runs on the online-softmax engine (engine.h): a task of T queries sees at most
 * T + 2r consecutive keys (causal T + r), walked in score blocks, each query masked to
 * its own window (the keys function below). So the time is O(N·(T + 2r)·d) and the
 * scratch one score block per thread, independent of N.
 *   - Where the fused kernel's AVX-512 tiles run (la_fused_simd_usable: no general
 *     masks), on those: tasks of 32 queries (float64 16) held in the vector lanes, sᵀ =
 *     k_blk·qᵀ on register tiles with no transposed copy of the keys, each lane masked to
 *     [lo, hi) of its query, key blocks of 128. Against the portable tiles below,
 *     N = 16,384, one head, r = 64, alternating: float32 causal 3.09-3.53 -> 3.02-3.14 ms,
 *     non-causal 4.77-4.82 -> 4.49-4.51 ms; float64 non-causal 12.9-13.1 -> 10.3-10.4 ms.
 *   - Else the portable tiles: tasks of Q_BLOCK queries, score blocks of at most K_BLOCK
 *     keys (the scratch then grows with r until Q_BLOCK + 2r passes K_BLOCK); both
 *     products of a block run in float32 on gemm_small's register tiles where the CPU
 *     has AVX-512 (la_gemm_small_abt_f32 for the scores, transposing the keys by panels
 *     of 32; float64: BLIS). These count what they compute (LA_COUNT, for the cost
 *     model's test).
 * Contract in lib/linattn.h. */
#include "attention/engine.h"
#include "core/real_typed.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Keys per score block: the softmax family's (internal.h). Queries per task: 32, half the
 * family's 64. A task forms the scores of every key its queries can see, Q_BLOCK + 2r
 * (causal Q_BLOCK + r), and each query sees 2r + 1 (r + 1) of them: at r = 64, 81% of
 * the formed scores are seen (causal 68%), against 67% (51%) with 64 queries. Alternating
 * runs at N = 16,384, one head: 18% faster causal, about 5% non-causal. */
enum { Q_BLOCK = 32, K_BLOCK = LA_SOFTMAX_K_BLOCK };

/* The keys query i sees, [*lo, *hi), in an entry whose key lengths leave m keys:
 * lo = max(0, i − r), hi = min(m, causal ? i + 1 : i + r + 1); empty (*lo = *hi <= m)
 * when the window starts past the last key. Both never decrease with i. i and j are compared as
 * indices, also for N != M; causal bottom-right, query i sits at position i + M − N
 * (la_causal_offset), and none before position 0 sees a key. */
static void window_of(const la_problem *p, size_t m, size_t i, size_t *lo, size_t *hi)
{
    const la_local_params local = la_local_params_of(p);
    const size_t r = local.window;
    const ptrdiff_t pos = (ptrdiff_t)i + la_causal_offset(p);
    if (pos < 0) { /* bottom-right, N > M: before the first key */
        *lo = *hi = 0;
        return;
    }
    i = (size_t)pos;
    *lo = i > r ? i - r : 0;
    /* i < N and m <= M are far below SIZE_MAX / 2 (la_problem_check): i + r + 1 is
     * formed only when r < m */
    const size_t end = p->causal ? i + 1 : (r >= m ? m : i + r + 1);
    *hi = end < m ? end : m;
    if (*lo > *hi) *lo = *hi; /* empty, and never past the keys */
}

/* Keys per score block of a task whose first query block has bq queries: what a block
 * of bq queries can see at most (bq + 2r, causal bq + r), at most M and K_BLOCK. */
static size_t key_block_of(const la_problem *p, size_t bq)
{
    const la_local_params local = la_local_params_of(p);
    const size_t M = p->n_keys, r = local.window < M ? local.window : M;
    size_t keys = bq + (p->causal ? r : 2 * r); /* r <= M < SIZE_MAX / 8: no overflow */
    if (keys > M) keys = M;
    return keys < K_BLOCK ? keys : K_BLOCK;
}

/* Scratch of one thread, in bytes: the portable tiles' (engine.h) with bk = key_block_of().
 * The kernel and the cost model (la_local_cost) both read it here. */
static size_t per_thread_bytes(const la_problem *p, size_t elem)
{
    const size_t bq = p->n_queries < Q_BLOCK ? p->n_queries : Q_BLOCK, bk = key_block_of(p, bq);
    return la_engine_portable_bytes(bq, bk, elem, elem, 0);
}

/* The window of query i: the keys function of the engine. */
static void window_keys(const la_engine_task *t, size_t i, size_t *lo, size_t *hi)
{
    window_of(t->p, t->m, i, lo, hi);
}

/* s = q_blk · k_blkᵀ · scale   (rows × cols): GEMM_SMALL_ABT, which in float32 on AVX-512
 * transposes k_blk by panels of 32 keys for gemm_small's register tiles; the scale
 * multiplies each finished element. */
static void local_scores(la_engine_task *t, size_t j0, size_t cols)
{
    const size_t dk = t->p->d_k, rows = t->rows;
    const REAL *qh = t->q, *kh = t->k;
    GEMM_SMALL_ABT(rows, cols, dk, (REAL)t->p->scale, qh + t->i0 * dk, (ptrdiff_t)dk, kh + j0 * dk,
                   (ptrdiff_t)dk, la_engine_rows_of(t)->s, (ptrdiff_t)cols);
    LA_COUNT(LA_COUNT_QK, 2 * (double)rows * (double)cols * (double)dk);
}

/* acc += p_blk · v_blk   (rows × d_v) */
static void local_values(la_engine_task *t, size_t j0, size_t cols)
{
    const size_t dv = t->p->d_v, rows = t->rows;
    const REAL *vh = t->v;
    GEMM_SMALL(rows, dv, cols, 1, (const REAL *)la_engine_rows_of(t)->s, (ptrdiff_t)cols, 1,
               vh + j0 * dv, (ptrdiff_t)dv, 1, 1, (REAL *)t->out + t->i0 * dv, (ptrdiff_t)dv, 1);
    LA_COUNT(LA_COUNT_AV, 2 * (double)rows * (double)cols * (double)dv);
}

#if REAL_IS_F32
#define PORTABLE la_engine_portable_f32
#else
#define PORTABLE la_engine_portable_f64
#endif

static la_status local_attention(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                 REAL *out)
{
    la_status st = la_engine_check(p, q, k, v, out, sizeof(REAL));
    if (st != LA_OK) return st;
    if (!FN(la_range_ok)(LA_RANGE_SOFTMAX, p, q, k, v)) return LA_ERANGE;
    if (la_fused_simd_usable(p)) {
        const la_engine e = la_engine_fused_wide(p, sizeof(REAL), window_keys);
        return la_engine_run(&e, p, q, k, v, out, NULL, 0);
    }
    la_engine e = {.wide = PORTABLE,
                   .q_block = Q_BLOCK,
                   .elem = sizeof(REAL),
                   .count_hidden = true,
                   .keys = window_keys};
    e.wide.scores = local_scores;
    e.wide.values = local_values;
    e.bq = p->n_queries < Q_BLOCK ? p->n_queries : Q_BLOCK;
    e.bk = e.k_block = key_block_of(p, e.bq);
    e.scratch_bytes = per_thread_bytes(p, sizeof(REAL));
    return la_engine_run(&e, p, q, k, v, out, NULL, 0);
}

#if REAL_IS_F32
la_status la_local_attention_f32(const la_problem *p, const float *q, const float *k,
                                 const float *v, float *out)
{
    return local_attention(p, q, k, v, out);
}
#else
la_status la_local_attention_f64(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out)
{
    return local_attention(p, q, k, v, out);
}
#endif

/* ---------------------------------------------------------------- backward */

/* FlashAttention-2's backward, as the fused softmax kernel's (softmax.c), over each query's
 * window (window_of): lse of every query first, on the same windows, then blocks of 64
 * queries × 64 keys recomputing P = exp(s − lse) and dS = P ∘ (dP − D), D_i = d_out_i·out_i,
 * the blocks no query of a block sees skipped. The range rule and the scratch are the
 * fused backward's (kernels.h). */
#if REAL_IS_F32
la_status la_local_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, const float *out, const float *d_out,
                                          float *d_q, float *d_k, float *d_v)
{
    return la_softmax_range_backward_f32(p, window_of, q, k, v, out, d_out, d_q, d_k, d_v);
}
#else
la_status la_local_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v)
{
    return la_softmax_range_backward_f64(p, window_of, q, k, v, out, d_out, d_q, d_k, d_v);
}
#endif

#if REAL_IS_F32
/* ---------------------------------------------------------------- its cost (la_cost_fn) */

/* Exact integers for the closed form below: its terms reach (N + r)², beyond 2⁶⁴. */
__extension__ typedef __int128 wide;

/* Σ_{x=0}^{y-1} min(x, m) for y >= 0, and 0 for y <= 0. */
static wide clamped_prefix(wide y, wide m)
{
    if (y <= 0) return 0;
    if (y <= m + 1) return y * (y - 1) / 2;
    return m * (m + 1) / 2 + (y - m - 1) * m;
}

/* Σ_{i=0}^{n-1} clamp(i + t, 0, m): clamp(x, 0, m) is 0 below 0, so this is a
 * difference of two prefixes. */
static wide clamped_sum(wide t, wide n, wide m)
{
    return clamped_prefix(t + n, m) - clamped_prefix(t, m);
}

/* Visible (query, key) pairs of one head of an entry with m keys in length: Σ_i (hi_i −
 * lo_i) over the windows of window_of, in O(1). With e = 1 (causal) or r + 1, query i
 * sees clamp(i + e, 0, m) − clamp(i − r, 0, m) keys (0 once i − r >= m), so the pairs are
 * Σ_i clamp(i + e, 0, m) − Σ_i clamp(i − r, 0, m). r is capped at max(N, M), past which
 * it changes nothing. Exact in 128-bit integers, rounded once to a double. */
static double local_pairs(const la_problem *p, size_t m)
{
    const la_local_params local = la_local_params_of(p);
    const size_t N = p->n_queries, M = p->n_keys, cap = N > M ? N : M;
    const wide r = (wide)(local.window < cap ? local.window : cap);
    const wide o = (wide)la_causal_offset(p); /* causal bottom-right: positions i + o */
    const wide e = p->causal ? 1 : r + 1;
    return (double)(clamped_sum(e + o, (wide)N, (wide)m) - clamped_sum(o - r, (wide)N, (wide)m));
}

/* One head of an entry with m keys in length, as softmax counts a visible pair: QKᵀ
 * 2·d_k, softmax 5 (row max, subtract, exp, row sum, divide), P·V 2·d_v. The entries of a
 * score block outside a row's window are computed and then masked: work of the blocking,
 * not counted (like the causal chunk's hidden triangle in linear attention). */
static void local_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = local_pairs(p, m);
    f->flops_qk = 2 * pairs * (double)p->d_k;
    f->flops_softmax = 5 * pairs;
    f->flops_av = 2 * pairs * (double)p->d_v;
}

/* Queries of one head that see a key (a window that is not empty), in an entry with m keys
 * in length: query i at position i + o (o = M − N causal bottom-right, else 0) sees one
 * when 0 <= i + o and i + o − r < m, so the count is that of i in
 * [max(0, −o), min(N, m + r − o)). */
static double local_seeing(const la_problem *p, size_t m)
{
    const la_local_params local = la_local_params_of(p);
    if (m == 0) return 0;
    const size_t N = p->n_queries, M = p->n_keys, cap = N > M ? N : M;
    const wide r = (wide)(local.window < cap ? local.window : cap), o = (wide)la_causal_offset(p);
    const wide first = o < 0 ? -o : 0, end = (wide)m + r - o < (wide)N ? (wide)m + r - o : (wide)N;
    return end > first ? (double)(end - first) : 0;
}

/* The backward, one head of an entry with m keys in length, as softmax's backward counts
 * (softmax.c) over the window's pairs: flops_qk 6·pairs·d_k (S recomputed, dSᵀQ, dS·K),
 * flops_av 4·pairs·d_v (dP, PᵀdO), flops_softmax 4·pairs (P, dS) + 2·d_v per query that
 * sees a key (D = dO·O). */
static void local_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = local_pairs(p, m);
    f->flops_qk = 6 * pairs * (double)p->d_k;
    f->flops_av = 4 * pairs * (double)p->d_v;
    f->flops_softmax = 4 * pairs + 2 * local_seeing(p, m) * (double)p->d_v;
}

/* The fused softmax backward's scratch (la_softmax_backward_cost: its blocks per thread
 * and the B·H·N log-sum-exps), the window's FLOPs. */
la_status la_local_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost fused = {0};
    la_status st = la_softmax_backward_cost(p, dtype, &fused);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, local_backward_head_flops, out);
    out->workspace_bytes = fused.workspace_bytes;
    return LA_OK;
}

la_status la_local_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    la_cost_sum_heads(p, local_head_flops, out);
    if (la_fused_simd_usable(p)) { /* the AVX-512 tiles' scratch, as the kernel runs them */
        out->workspace_bytes = la_engine_fused_wide_workspace(p, dtype);
        return LA_OK;
    }
    /* per thread one score block and its row statistics, for min(threads, tasks) threads */
    const double heads = (double)p->batch * (double)p->heads;
    const double tasks = heads * ceil((double)p->n_queries / Q_BLOCK);
    const double threads = (double)la_threads();
    out->workspace_bytes =
        (threads < tasks ? threads : tasks) * (double)per_thread_bytes(p, la_dtype_size(dtype));
    return LA_OK;
}
#endif

/* ---------------------------------------------------------------- registry rows */

#if REAL_IS_F32
static const la_kernel_fns local_fns = {
    .forward_f32 = la_local_attention_f32,
    .forward_f64 = la_local_attention_f64,
    .reference = la_ref_local_attention,
    .cost = la_local_cost,
    .backward_f32 = la_local_attention_backward_f32,
    .backward_f64 = la_local_attention_backward_f64,
    .reference_backward = la_ref_local_attention_backward,
    .backward_cost = la_local_backward_cost,
    .weights_f32 = la_local_weights_f32,
    .weights_f64 = la_local_weights_f64,
};

const la_kernel_info la_row_local = {
    .kernel = LA_KERNEL_LOCAL,
    .name = "local",
    .summary = "restricted (local) softmax: each query attends to the keys within "
               "--window r positions, |i − j| <= r (causal i − r <= j <= i)",
    .series = {"local", "local_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE | LA_PARAM_WINDOW,
    .block = LA_PARAMS_LOCAL,
    .masks = LA_MASK_GENERAL | LA_MASK_KEY,
    .caps = LA_CAP_ROTARY | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD | LA_CAP_WEIGHTS,
    .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
    .time_exponent = 1,
    .family = "sparse",
    .fns = &local_fns,
};
#endif

/* relative.c — softmax attention with relative position representations (Shaw, Uszkoreit
 * and Vaswani, "Self-Attention with Relative Position Representations", 2018), in one
 * precision (the Makefile compiles this file twice: real_typed.h): learned embeddings a^K,
 * a^V of the clipped distance δ = clip(j − i, −K, K), K = max_distance, in the scores and
 * in the values,
 *   e_ij = q_i·(k_j + a^K_δ)·scale,   y_i = Σ_j softmax_j(e_i)_j (v_j + a^V_δ).
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major;
 *   la_relative_params: a^K = rel_k: (2K+1, d_k), a^V = rel_v: (2K+1, d_v), float64, or
 *   drawn from its seed.
 *
 * It runs on the online-softmax engine (engine.h) with the portable tiles and two of its own:
 * the score tile adds q_i·a^K_δ, formed once per distance a row meets in a key block (a block
 * far from the diagonal meets one), and the value tile sums the weights of the keys that
 * share a distance before adding a^V_δ; so the position terms cost O((min(2K + 1, M) + M /
 * K_BLOCK)·d) per query beside softmax's O(M·d). Contract in lib/linattn.h. */
#include "attention/engine.h"
#include "core/real_typed.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Queries per task and keys per block: the fused softmax kernel's portable ones. */
enum { Q_BLOCK = LA_SOFTMAX_Q_BLOCK, K_BLOCK = LA_SOFTMAX_K_BLOCK };

#if REAL_IS_F32
#define LA_MAX_ABS la_max_abs_f32
#define LA_MAX_ABS_SEEN la_max_abs_seen_f32
#define PORTABLE la_engine_portable_f32
#else
#define LA_MAX_ABS la_max_abs_f64
#define LA_MAX_ABS_SEEN la_max_abs_seen_f64
#define PORTABLE la_engine_portable_f64
#endif

/* ---------------------------------------------------------------- the seeded draw */

/* splitmix64 */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The (2K+1)·d_k entries of a^K then the (2K+1)·d_v of a^V, as la_relative_embeddings
 * documents them, into the float64 pair (k64, v64) or the float32 pair (the other NULL). */
static void draw_embeddings(size_t rows, size_t d_k, size_t d_v, uint64_t seed, double *k64,
                            double *v64, float *k32, float *v32)
{
    const size_t nk = rows * d_k, total = nk + rows * d_v; /* the caller checked they fit */
    const double two_pi = 6.283185307179586476925286766559;
    uint64_t state = seed;
    double spare = 0;
    for (size_t i = 0; i < total; i++) {
        double z;
        if (i % 2 == 0) {
            const double u1 = (double)(next_u64(&state) >> 11) * 0x1.0p-53;
            const double u2 = (double)(next_u64(&state) >> 11) * 0x1.0p-53;
            const double r = sqrt(-2.0 * log(1.0 - u1));
            z = r * cos(two_pi * u2);
            spare = r * sin(two_pi * u2);
        } else {
            z = spare;
        }
        if (k64)
            (i < nk ? k64 : v64)[i < nk ? i : i - nk] = z;
        else
            (i < nk ? k32 : v32)[i < nk ? i : i - nk] = (float)z;
    }
}

/* rows = 2K + 1, and the element counts of the two tables; false when they overflow
 * (as doubles). */
static bool table_sizes(size_t K, size_t d_k, size_t d_v, size_t *rows, size_t *nk, size_t *nv)
{
    size_t bytes;
    if (K > SIZE_MAX / 4) return false;
    *rows = 2 * K + 1;
    return la_mul_ok(*rows, d_k, nk) && la_mul_ok(*rows, d_v, nv) && *nk <= SIZE_MAX - *nv &&
           la_mul_ok(*nk + *nv, sizeof(double), &bytes);
}

/* ---------------------------------------------------------------- shared by both precisions */

/* The table index of key j for query i: clip(j − i, −K, K) + K. */
static size_t distance_index(size_t i, size_t j, size_t K)
{
    if (j + K <= i) return 0;
    if (j >= i + K) return 2 * K;
    return j + K - i;
}

/* What one call holds: the tables as the kernel reads them (none for float64 given tables),
 * in elements, then per thread the engine's portable scratch (engine.h) with two rows of
 * bk values beside it (q_i·a^K and the summed weight of each distance a row meets in a key
 * block), in bytes, for min(threads, tasks) threads. Returns false when a size overflows. */
typedef struct {
    size_t tables, per_thread, bq, bk;
    int threads;
} relative_layout;

static bool relative_layout_for(const la_problem *p, size_t elem, relative_layout *lay)
{
    const la_relative_params relative = la_relative_params_of(p);
    size_t rows, nk, nv, bytes;
    if (!table_sizes(relative.max_distance, p->d_k, p->d_v, &rows, &nk, &nv)) return false;
    lay->tables = elem == sizeof(double) && relative.rel_k ? 0 : nk + nv;
    lay->bq = p->n_queries < Q_BLOCK ? p->n_queries : Q_BLOCK;
    lay->bk = p->n_keys < K_BLOCK ? p->n_keys : K_BLOCK;
    lay->per_thread = la_engine_portable_bytes(lay->bq, lay->bk, elem, elem, 2 * lay->bk * elem);
    const double tasks =
        (double)p->batch * (double)p->heads * (double)((p->n_queries + Q_BLOCK - 1) / Q_BLOCK);
    const int threads = la_threads();
    lay->threads = (double)threads < tasks ? threads : (int)tasks;
    return lay->per_thread != SIZE_MAX && la_mul_ok(lay->tables, elem, &bytes) &&
           la_mul_ok(lay->per_thread, (size_t)lay->threads, &bytes) &&
           bytes <= SIZE_MAX - lay->tables * elem;
}

static size_t relative_bytes(const relative_layout *lay, size_t elem)
{
    return lay->tables * elem + lay->per_thread * (size_t)lay->threads;
}

/* The checks both precisions share: a checked problem, the pointers, tables that fit, a
 * float32 scale float32 holds, given tables finite (their max |entry| into *ak_max,
 * *av_max; drawn: a bound on a drawn |z|). */
static la_status relative_check(const la_problem *p, const void *q, const void *k, const void *v,
                                const void *out, size_t elem, double *ak_max, double *av_max)
{
    const la_relative_params relative = la_relative_params_of(p);
    la_status st = la_engine_check(p, q, k, v, out, elem);
    if (st != LA_OK) return st;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    size_t rows, nk, nv;
    if (!table_sizes(relative.max_distance, p->d_k, p->d_v, &rows, &nk, &nv)) return LA_EOVERFLOW;
    *ak_max = *av_max = 9; /* a drawn |z| is below 8.6 */
    if (relative.rel_k && (!la_finite_max_abs(relative.rel_k, nk, ak_max) ||
                           !la_finite_max_abs(relative.rel_v, nv, av_max)))
        return LA_EINVAL;
    return LA_OK;
}

/* softmax's range rule (range.c) with the keys' magnitude b + max|a^K| and the values'
 * c + max|a^V| (over the keys seen, la_keys_seen): every score, score difference and
 * accumulator within T/8. */
static bool relative_range_ok(const la_problem *p, double a, double b, double c, double real_max)
{
    if (isinf(a) || isinf(b) || isinf(c)) return true;
    const long double limit = (long double)real_max / 8;
    const long double scale = fmaxl(fabsl((long double)p->scale), 1);
    if (scale > limit || (long double)p->d_k * a * b * scale > limit) return false;
    return (long double)la_keys_seen_max(p) * c <= limit;
}

/* What the relative tiles read (la_engine's ctx): a^K (2K+1, d_k), a^V (2K+1, d_v), K. */
typedef struct {
    const REAL *tk, *tv;
    size_t max_distance;
} relative_ctx;

/* Σ_c x[c]·y[c] over n elements (vectorized: the order of the sum is fixed by the compiled
 * code, the same on every run and thread count). */
static REAL dot(const REAL *x, const REAL *y, size_t n)
{
    REAL sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t c = 0; c < n; c++)
        sum += x[c] * y[c];
    return sum;
}

/* Keys [0, n) of the block [j0, j0 + cols) that row r sees. */
static size_t seen_in_block(const la_engine_task *t, size_t r, size_t j0, size_t cols)
{
    const size_t hi = t->hi[r];
    return hi > j0 ? (hi - j0 < cols ? hi - j0 : cols) : 0;
}

/* Where the keys [j0, j0 + n) of query i fall: [0, *left) at distance −K (index 0),
 * [*left, *right) inside the window (index j0 + j + K − i, one each, in order) and
 * [*right, n) at +K (index 2K), in block offsets. */
static void segments(size_t i, size_t j0, size_t n, size_t K, size_t *left, size_t *right)
{
    const size_t lo = i >= K ? i - K + 1 : 0; /* the first key past distance −K */
    const size_t hi = i + K;                  /* the first key at distance +K */
    *left = lo <= j0 ? 0 : lo - j0 < n ? lo - j0 : n;
    *right = hi <= j0 ? 0 : hi - j0 < n ? hi - j0 : n;
    if (*right < *left) *right = *left; /* K = 0: key i is at index 0 */
}

/* e_ij = q_i·k_j · scale (the portable score tile) + q_i·a^K_δ · scale, δ = the table row of
 * (i, j); q_i·a^K is formed once per distance the row meets in the block. */
static void relative_scores(la_engine_task *t, size_t j0, size_t cols)
{
    PORTABLE.scores(t, j0, cols);
    const la_problem *p = t->p;
    const relative_ctx *x = t->e->ctx;
    const size_t dk = p->d_k, K = x->max_distance;
    const REAL scale = (REAL)p->scale, *qh = t->q;
    const la_engine_rows *w = la_engine_rows_of(t);
    REAL *s = w->s, *qa = w->extra;
    for (size_t r = 0; r < t->rows; r++) {
        const size_t i = t->i0 + r, n = seen_in_block(t, r, j0, cols);
        if (n == 0) continue;
        const size_t d_lo = distance_index(i, j0, K), d_hi = distance_index(i, j0 + n - 1, K);
        for (size_t d = d_lo; d <= d_hi; d++)
            qa[d - d_lo] = dot(qh + i * dk, x->tk + d * dk, dk) * scale;
        REAL *srow = s + r * cols;
        size_t left, right;
        segments(i, j0, n, K, &left, &right);
        const size_t base = j0 + K - d_lo; /* key j in the window: qa[j + base − i] */
        if (left > 0) {                    /* d_lo = 0 then */
            const REAL at = qa[0];
            for (size_t j = 0; j < left; j++)
                srow[j] += at;
        }
        for (size_t j = left; j < right; j++)
            srow[j] += qa[j + base - i];
        if (right < n) {
            const REAL at = qa[2 * K - d_lo];
            for (size_t j = right; j < n; j++)
                srow[j] += at;
        }
    }
}

/* acc += p_blk · v_blk (the portable value tile), + Σ_δ (Σ_{j at δ} p_ij) a^V_δ: the weights
 * of the keys that share a distance summed before a^V_δ is added. */
static void relative_values(la_engine_task *t, size_t j0, size_t cols)
{
    PORTABLE.values(t, j0, cols);
    const la_problem *p = t->p;
    const relative_ctx *x = t->e->ctx;
    const size_t dv = p->d_v, K = x->max_distance;
    const la_engine_rows *w = la_engine_rows_of(t);
    const REAL *s = w->s;
    REAL *wsum = (REAL *)w->extra + t->e->bk;
    for (size_t r = 0; r < t->rows; r++) {
        const size_t i = t->i0 + r, n = seen_in_block(t, r, j0, cols);
        if (n == 0) continue;
        const size_t d_lo = distance_index(i, j0, K), d_hi = distance_index(i, j0 + n - 1, K);
        for (size_t d = d_lo; d <= d_hi; d++)
            wsum[d - d_lo] = 0;
        const REAL *prow = s + r * cols;
        size_t left, right;
        segments(i, j0, n, K, &left, &right);
        REAL sum_lo = 0, sum_hi = 0;
#pragma omp simd reduction(+ : sum_lo)
        for (size_t j = 0; j < left; j++)
            sum_lo += prow[j];
        const size_t base = j0 + K - d_lo; /* key j in the window: wsum[j + base − i] */
        for (size_t j = left; j < right; j++)
            wsum[j + base - i] += prow[j];
#pragma omp simd reduction(+ : sum_hi)
        for (size_t j = right; j < n; j++)
            sum_hi += prow[j];
        if (left > 0) wsum[0] += sum_lo; /* d_lo = 0 then */
        if (right < n) wsum[2 * K - d_lo] += sum_hi;
        REAL *arow = (REAL *)t->out + i * dv;
        for (size_t d = d_lo; d <= d_hi; d++) {
            const REAL a = wsum[d - d_lo], *tr = x->tv + d * dv;
            for (size_t c = 0; c < dv; c++)
                arow[c] += a * tr[c];
        }
    }
}

/* Relative-position softmax attention (contract in linattn.h). */
static la_status relative_attention(const la_problem *p, const REAL *q, const REAL *k,
                                    const REAL *v, REAL *out)
{
    const la_relative_params relative = la_relative_params_of(p);
    double ak_max, av_max;
    la_status st = relative_check(p, q, k, v, out, sizeof(REAL), &ak_max, &av_max);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v, K = relative.max_distance;
    const size_t heads = p->batch * p->heads; /* fits: la_problem_check */
    /* the range rule: softmax's, with a^K beside the keys and a^V beside the values */
    const double a = LA_MAX_ABS(q, heads * N * dk);
    const double b = LA_MAX_ABS_SEEN(p, k, dk) + ak_max;
    const double c = LA_MAX_ABS_SEEN(p, v, dv) + av_max;
    if (!relative_range_ok(p, a, b, c, (double)REAL_MAX)) return LA_ERANGE;

    relative_layout lay;
    if (!relative_layout_for(p, sizeof(REAL), &lay)) return LA_EOVERFLOW;
    if (relative_bytes(&lay, sizeof(REAL)) > p->workspace_limit) return LA_EBUDGET;
    /* the tables as this precision reads them: the caller's (float64), converted
     * (float32), or drawn from the seed */
    const size_t rows = 2 * K + 1, nk = rows * dk, nv = rows * dv;
    REAL *tables = NULL;
    relative_ctx ctx;
    ctx.max_distance = K;
    if (lay.tables == 0) {
        ctx.tk = (const REAL *)relative.rel_k,
        ctx.tv = (const REAL *)relative.rel_v; /* float64, given */
    } else {
        tables = malloc(lay.tables * sizeof(REAL));
        if (!tables) return LA_ENOMEM;
        REAL *k_own = tables, *v_own = tables + nk;
        if (!relative.rel_k)
            draw_embeddings(rows, dk, dv, relative.seed, REAL_IS_F32 ? NULL : (double *)k_own,
                            REAL_IS_F32 ? NULL : (double *)v_own,
                            REAL_IS_F32 ? (float *)k_own : NULL,
                            REAL_IS_F32 ? (float *)v_own : NULL);
        else {
            for (size_t x = 0; x < nk; x++)
                k_own[x] = (REAL)relative.rel_k[x];
            for (size_t x = 0; x < nv; x++)
                v_own[x] = (REAL)relative.rel_v[x];
        }
        ctx.tk = k_own, ctx.tv = v_own;
    }
    /* y = softmax(e) (V + a^V) on the engine, with the relative score and value tiles */
    la_engine e = {.wide = PORTABLE,
                   .q_block = Q_BLOCK,
                   .k_block = K_BLOCK,
                   .bq = lay.bq,
                   .bk = lay.bk,
                   .elem = sizeof(REAL),
                   .scratch_bytes = lay.per_thread,
                   .keys = la_engine_prefix_keys,
                   .ctx = &ctx};
    e.wide.scores = relative_scores;
    e.wide.values = relative_values;
    st = la_engine_run(&e, p, q, k, v, out, NULL, lay.tables * sizeof(REAL));
    free(tables);
    return st;
}

/* ---------------------------------------------------------------- the public kernels */

#if REAL_IS_F32
la_status la_relative_attention_f32(const la_problem *p, const float *q, const float *k,
                                    const float *v, float *out)
{
    return relative_attention(p, q, k, v, out);
}
#else
la_status la_relative_attention_f64(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out)
{
    return relative_attention(p, q, k, v, out);
}
#endif

#if REAL_IS_F32
la_status la_relative_embeddings(size_t max_distance, size_t d_k, size_t d_v, uint64_t seed,
                                 double *a_k, double *a_v)
{
    if (!a_k || !a_v || a_k == a_v || max_distance == 0 || d_k == 0 || d_v == 0) return LA_EINVAL;
    size_t rows, nk, nv;
    if (!table_sizes(max_distance, d_k, d_v, &rows, &nk, &nv)) return LA_EOVERFLOW;
    draw_embeddings(rows, d_k, d_v, seed, a_k, a_v, NULL, NULL);
    return LA_OK;
}

/* ---------------------------------------------------------------- its cost (la_cost_fn) */

/* Exact integers for the closed forms below: their terms reach N·M, beyond 2⁶³. */
__extension__ typedef __int128 wide;

/* Σ_{x=a}^{b} clip(x, lo, hi) for a <= b, lo <= hi: the part below lo, the part above hi,
 * and the arithmetic series between. */
static wide clipped_sum(wide a, wide b, wide lo, wide hi)
{
    wide total = 0;
    if (a < lo) total += ((b < lo - 1 ? b : lo - 1) - a + 1) * lo;
    if (b > hi) total += (b - (a > hi + 1 ? a : hi + 1) + 1) * hi;
    const wide x0 = a > lo ? a : lo, x1 = b < hi ? b : hi;
    if (x0 <= x1) total += (x0 + x1) * (x1 - x0 + 1) / 2;
    return total;
}

/* One head of an entry with m keys in length. Query i sees seen_i keys (m, causal
 * min(i + 1, m); bottom-right la_visible_keys_of, summed row by row) and meets the table rows
 * clip(0 − i) .. clip(seen_i − 1 − i), that is clip(m − 1 − i, −K, U) + min(i, K) + 1 distinct
 * distances (U = K, causal 0). Counted: scores q·k 2·d_k per pair, q·a^K 2·d_k per distance and the
 * add, 1 per pair; softmax 5 per pair; values 2·d_v per pair, the weight summed into its distance 1
 * per pair, and a^V 2·d_v per distance. Closed forms in 128-bit integers, rounded once. */
static void relative_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const la_relative_params relative = la_relative_params_of(p);
    if (m == 0) return; /* every row is zeros */
    const wide N = (wide)p->n_queries, M = (wide)m, K = (wide)relative.max_distance;
    wide pairs, distances;
    if (la_causal_square(p)) { /* bottom-right, N != M: row by row (a row may see none) */
        pairs = distances = 0;
        for (size_t i = 0; i < p->n_queries; i++) {
            const wide seen = (wide)la_visible_keys_of(p, m, i), wi = (wide)i;
            if (seen == 0) continue;
            const wide hi = seen - 1 - wi < -K ? -K : seen - 1 - wi > K ? K : seen - 1 - wi;
            pairs += seen;
            distances += hi + (wi < K ? wi : K) + 1;
        }
    } else {
        pairs = !p->causal ? N * M : (N <= M ? N * (N + 1) / 2 : M * (M + 1) / 2 + (N - M) * M);
        const wide min_i_k = N <= K + 1 ? N * (N - 1) / 2 : K * (K + 1) / 2 + (N - K - 1) * K;
        distances = clipped_sum(M - N, M - 1, -K, p->causal ? 0 : K) + min_i_k + N;
    }
    const double dk = (double)p->d_k, dv = (double)p->d_v;
    const double n_pairs = (double)pairs, n_dist = (double)distances;
    f->flops_qk = n_pairs * (2 * dk + 1) + n_dist * 2 * dk;
    f->flops_softmax = 5 * n_pairs;
    f->flops_av = n_pairs * (2 * dv + 1) + n_dist * 2 * dv;
}

la_status la_relative_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_relative_params relative = la_relative_params_of(p);
    const size_t elem = la_dtype_size(dtype);
    size_t rows, nk, nv;
    if (!table_sizes(relative.max_distance, p->d_k, p->d_v, &rows, &nk, &nv)) return LA_EOVERFLOW;
    la_cost_sum_heads(p, relative_head_flops, out);
    /* bytes_min beyond q, k, v, out: a^K and a^V read once per call, float64 */
    out->bytes_min = (2 * (double)relative.max_distance + 1) * (double)(p->d_k + p->d_v) *
                     (double)sizeof(double);
    /* what the kernel holds (relative_layout_for), in doubles when it passes size_t (the
     * kernel then refuses, LA_EOVERFLOW) */
    relative_layout lay;
    if (relative_layout_for(p, elem, &lay)) {
        out->workspace_bytes = (double)relative_bytes(&lay, elem);
    } else {
        const double tables = elem == sizeof(double) && relative.rel_k ? 0 : (double)(nk + nv);
        const double bq = (double)lay.bq, bk = (double)lay.bk, e = (double)elem;
        const double per_thread = ceil((bq * e * 2 + bq * bk * e + 2 * bk * e) / 64) * 64;
        out->workspace_bytes = tables * e + per_thread * (double)lay.threads;
    }
    return LA_OK;
}
#endif

/* ---------------------------------------------------------------- registry rows */

#if REAL_IS_F32
static const la_kernel_fns relative_fns = {
    .forward_f32 = la_relative_attention_f32,
    .forward_f64 = la_relative_attention_f64,
    .reference = la_ref_relative_attention,
    .cost = la_relative_cost,
};

const la_kernel_info la_row_relative = {
    .kernel = LA_KERNEL_RELATIVE,
    .name = "relative",
    .summary = "softmax with relative positions (Shaw et al. 2018): embeddings of the "
               "distance clip(j − i, −K, K) added to the keys in the scores and to the "
               "values",
    .series = {"relative", "relative_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE | LA_PARAM_RELATIVE,
    .block = LA_PARAMS_RELATIVE,
    .masks = 0,
    .caps = LA_CAP_POSITIONS | LA_CAP_ROTARY,
    .sweep = 0,
    .time_exponent = 2,
    .family = "position",
    /* no backward */
    .fns = &relative_fns,
};
#endif

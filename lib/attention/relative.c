/* relative.c — softmax attention with relative position representations (Shaw, Uszkoreit
 * and Vaswani, "Self-Attention with Relative Position Representations", 2018), float32
 * and float64: learned embeddings a^K, a^V of the clipped distance
 * δ = clip(j − i, −K, K), K = p->max_distance, in the scores and in the values,
 *   e_ij = q_i·(k_j + a^K_δ)·scale,   y_i = Σ_j softmax_j(e_i)_j (v_j + a^V_δ).
 *
 * Work is split into tasks of (batch entry, head, block of Q_ROWS queries), each computed
 * whole by one thread (the same bits on any thread count). A query's row is materialized
 * (its M scores); q_i·a^K_δ is formed once per distinct δ the row meets (at most
 * min(2K + 1, M)), and the weights of the keys that share a δ are summed before a^V_δ is
 * added, so the position terms cost O(min(2K + 1, M)·d) per query beside softmax's
 * O(M·d). Scratch: the tables in the element type (float32, or float64 when drawn), and
 * per thread one row of scores and two rows of per-distance values. The kernel is
 * relative_tmpl.h, included below once per precision (core/real_f32.h explains how). */
#include "attention/attention_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { Q_ROWS = 64 }; /* queries per task */

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

la_status la_relative_embeddings(size_t max_distance, size_t d_k, size_t d_v, uint64_t seed,
                                 double *a_k, double *a_v)
{
    if (!a_k || !a_v || a_k == a_v || max_distance == 0 || d_k == 0 || d_v == 0) return LA_EINVAL;
    size_t rows, nk, nv;
    if (!table_sizes(max_distance, d_k, d_v, &rows, &nk, &nv)) return LA_EOVERFLOW;
    draw_embeddings(rows, d_k, d_v, seed, a_k, a_v, NULL, NULL);
    return LA_OK;
}

/* ---------------------------------------------------------------- shared by both precisions */

/* Distances a row meets: at most min(2K + 1, M). */
static size_t distinct_distances(const la_problem *p)
{
    const size_t K = p->max_distance, M = p->n_keys;
    return K >= M ? M : (2 * K + 1 < M ? 2 * K + 1 : M);
}

/* The table index of key j for query i: clip(j − i, −K, K) + K. */
static size_t distance_index(size_t i, size_t j, size_t K)
{
    if (j + K <= i) return 0;
    if (j >= i + K) return 2 * K;
    return j + K - i;
}

/* What one call holds: the tables as the kernel reads them (none for float64 given
 * tables), then per thread M scores and two rows of distinct_distances() values; in
 * elements. Returns false when a size overflows. */
typedef struct {
    size_t tables, per_thread;
    int threads;
} relative_layout;

static bool relative_layout_for(const la_problem *p, size_t elem, relative_layout *lay)
{
    size_t rows, nk, nv, bytes;
    if (!table_sizes(p->max_distance, p->d_k, p->d_v, &rows, &nk, &nv)) return false;
    lay->tables = elem == sizeof(double) && p->rel_k ? 0 : nk + nv;
    lay->per_thread = p->n_keys + 2 * distinct_distances(p); /* M <= SIZE_MAX / 8 */
    const double tasks =
        (double)p->batch * (double)p->heads * (double)((p->n_queries + Q_ROWS - 1) / Q_ROWS);
    const int threads = la_threads();
    lay->threads = (double)threads < tasks ? threads : (int)tasks;
    return la_mul_ok(lay->per_thread, (size_t)lay->threads, &bytes) &&
           bytes <= SIZE_MAX - lay->tables && la_mul_ok(bytes + lay->tables, elem, &bytes);
}

static size_t relative_bytes(const relative_layout *lay, size_t elem)
{
    return (lay->tables + lay->per_thread * (size_t)lay->threads) * elem;
}

/* Whether every entry of x (n doubles) is finite, and max |x| into *max_abs. */
static bool finite_max_abs(const double *x, size_t n, double *max_abs)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) return false;
        m = fabs(x[i]) > m ? fabs(x[i]) : m;
    }
    *max_abs = m;
    return true;
}

/* The checks both precisions share: a checked problem, the pointers, tables that fit, a
 * float32 scale float32 holds, given tables finite (their max |entry| into *ak_max,
 * *av_max; drawn: a bound on a drawn |z|). */
static la_status relative_check(const la_problem *p, const void *q, const void *k, const void *v,
                                const void *out, size_t elem, double *ak_max, double *av_max)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    size_t rows, nk, nv;
    if (!table_sizes(p->max_distance, p->d_k, p->d_v, &rows, &nk, &nv)) return LA_EOVERFLOW;
    if (elem == sizeof(float) && fabs(p->scale) > FLT_MAX) return LA_EINVAL;
    *ak_max = *av_max = 9; /* a drawn |z| is below 8.6 */
    if (p->rel_k &&
        (!finite_max_abs(p->rel_k, nk, ak_max) || !finite_max_abs(p->rel_v, nv, av_max)))
        return LA_EINVAL;
    return LA_OK;
}

/* softmax's range rule (range.c) with the keys' magnitude b + max|a^K| and the values'
 * c + max|a^V|: every score, score difference and accumulator within T/8. */
static bool relative_range_ok(const la_problem *p, double a, double b, double c, double real_max)
{
    if (isinf(a) || isinf(b) || isinf(c)) return true;
    const long double limit = (long double)real_max / 8;
    const long double scale = fmaxl(fabsl((long double)p->scale), 1);
    if (scale > limit || (long double)p->d_k * a * b * scale > limit) return false;
    return (long double)p->n_keys * c <= limit;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/relative_tmpl.h"
#include "core/real_f64.h"
#include "attention/relative_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public kernels */

la_status la_relative_attention_f32(const la_problem *p, const float *q, const float *k,
                                    const float *v, float *out)
{
    return relative_attention_f32(p, q, k, v, out);
}

la_status la_relative_attention_f64(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out)
{
    return relative_attention_f64(p, q, k, v, out);
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
    if (m == 0) return; /* every row is zeros */
    const wide N = (wide)p->n_queries, M = (wide)m, K = (wide)p->max_distance;
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
    const size_t elem = la_dtype_size(dtype);
    size_t rows, nk, nv;
    if (!table_sizes(p->max_distance, p->d_k, p->d_v, &rows, &nk, &nv)) return LA_EOVERFLOW;
    la_cost_sum_heads(p, relative_head_flops, out);
    /* what the kernel holds (relative_layout_for), in doubles: near la_problem_check's
     * limit on M it passes size_t, and the kernel then refuses (LA_EOVERFLOW) */
    relative_layout lay;
    if (relative_layout_for(p, elem, &lay)) {
        out->workspace_bytes = (double)relative_bytes(&lay, elem);
    } else {
        const double tables = elem == sizeof(double) && p->rel_k ? 0 : (double)(nk + nv);
        const double per_thread = (double)p->n_keys + 2 * (double)distinct_distances(p);
        out->workspace_bytes = (tables + per_thread * (double)lay.threads) * (double)elem;
    }
    return LA_OK;
}

/* favor.c — FAVOR+ (Performer, Choromanski et al. 2021): softmax attention approximated
 * by linear attention on positive random features. Compiled once per precision
 * (core/real_typed.h): the features and the kernels in REAL, their public functions
 * (la_favor_attention_*, la_favor_attention_recurrent_*, la_favor_step_*), and (once)
 * drawing W (la_favor_features) and the cost. Non-causal, the linear attention itself is
 * the linear engine's (linear_engine.c, la_linear_scan_*); causal, the
 * chunks below, whose keys' stabilizer is a running max (linattn.h says why).
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major;
 *   W: (m, d_k) row-major (float64 drawn, REAL used), and s·Wᵀ (d_k, m) for the projections;
 *   φ(Q): (B, H, N, m), φ(K): (B, H, M, m), row-major, in the call's scratch.
 *
 *   φ(x) = exp(W x − ‖x‖²/2) / √m   on x = q·d_k^(−1/4) (and k·d_k^(−1/4)),
 * so that E[φ(q)·φ(k)] = exp(q·k / √d_k): softmax attention's weights at scale 1/√d_k.
 * W (m, d_k): blocks of d_k orthonormal rows (Gram–Schmidt of a Gaussian block), each row
 * then scaled to the norm of an independent Gaussian d_k-vector (chi(d_k)); the last block
 * has m mod d_k rows. */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"
#include "core/alloc_large.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if REAL_IS_F32
/* ---------------------------------------------------------------- drawing W */

/* splitmix64: the features' generator. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One N(0, 1) draw: Box–Muller on two uniforms in (0, 1), the cosine half only,
 *   u = ((x >> 11) + 0.5) · 2^-53,  z = √(−2 ln u1) · cos(2π u2). */
static double next_normal(uint64_t *s)
{
    const double u1 = ((double)(next_u64(s) >> 11) + 0.5) * 0x1.0p-53;
    const double u2 = ((double)(next_u64(s) >> 11) + 0.5) * 0x1.0p-53;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* Makes the r rows of x (r, d) orthonormal, in order: modified Gram–Schmidt, each row
 * orthogonalized twice against the rows before it ("twice is enough": orthogonal to
 * rounding whatever the conditioning), then normalized. A row that vanishes (probability
 * 0 for Gaussian rows) is left as zeros. */
static void orthonormalize(double *x, size_t r, size_t d)
{
    for (size_t i = 0; i < r; i++) {
        double *xi = x + i * d;
        for (int pass = 0; pass < 2; pass++) {
            for (size_t j = 0; j < i; j++) {
                const double *xj = x + j * d;
                double dot = 0;
                for (size_t a = 0; a < d; a++)
                    dot += xi[a] * xj[a];
                for (size_t a = 0; a < d; a++)
                    xi[a] -= dot * xj[a];
            }
        }
        double norm = 0;
        for (size_t a = 0; a < d; a++)
            norm += xi[a] * xi[a];
        norm = sqrt(norm);
        for (size_t a = 0; a < d; a++)
            xi[a] = norm > 0 ? xi[a] / norm : 0;
    }
}

la_status la_favor_features(size_t m, size_t d_k, uint64_t seed, double *w)
{
    size_t n, bytes;
    if (!w || m == 0 || d_k == 0) return LA_EINVAL;
    if (!la_mul_ok(m, d_k, &n) || !la_mul_ok(n, sizeof(double), &bytes)) return LA_EOVERFLOW;
    uint64_t s = seed;
    for (size_t b0 = 0; b0 < m; b0 += d_k) {
        const size_t r = m - b0 < d_k ? m - b0 : d_k;
        double *block = w + b0 * d_k;
        /* a Gaussian block (r, d_k), row by row, made orthonormal */
        for (size_t x = 0; x < r * d_k; x++)
            block[x] = next_normal(&s);
        orthonormalize(block, r, d_k);
        /* each row scaled to the norm of a fresh Gaussian d_k-vector: chi(d_k) */
        for (size_t i = 0; i < r; i++) {
            double sq = 0;
            for (size_t a = 0; a < d_k; a++) {
                const double g = next_normal(&s);
                sq += g * g;
            }
            const double norm = sqrt(sq);
            for (size_t a = 0; a < d_k; a++)
                block[i * d_k + a] *= norm;
        }
    }
    return LA_OK;
}

la_status la_favor_w(const la_problem *p, double *w)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t n = favor.features * p->d_k; /* fits: the scratch of W was sized */
    if (!favor.proj_w) return la_favor_features(favor.features, p->d_k, favor.seed, w);
    double max_abs;
    if (!la_finite_max_abs(favor.proj_w, n, &max_abs)) return LA_EINVAL;
    memcpy(w, favor.proj_w, n * sizeof *w);
    return LA_OK;
}
#endif /* REAL_IS_F32 */

/* ---------------------------------------------------------------- scratch */

/* The scratch of one call: W in float64 (m·d_k), for float32 a float copy, and s·Wᵀ
 * (d_k, m) in the element type (w_bytes; favor_draw_w),
 * then in the element type φ(Q) (B·H·N·m), φ(K) (B·H·M·m) and each key's P (causal: then
 * μ, the running max of g) and g (B·H·2M), and recurrent per thread S, z and one key's
 * ψ', m·(d_v + 2) (scratch_elems, with own_bytes all of the above); non-causal and causal
 * chunked also what the linear engine's scan on the features holds
 * (la_linear_workspace_bytes of `inner`, p with d_k = m). */
typedef struct {
    la_problem inner;    /* p with d_k = m, φ the identity */
    size_t threads;      /* the threads of the per-head loops: min(threads, tasks) */
    size_t parts, width; /* recurrent: la_linear_recurrent_parts of the d_v columns */
    size_t w_bytes, phi_q_elems, phi_k_elems, pg_elems, causal_per_thread, scratch_elems;
    size_t own_bytes, total_bytes;
} favor_layout;

static la_status favor_layout_for(const la_problem *p, size_t elem, bool recurrent,
                                  favor_layout *lay)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t m = favor.features;
    size_t heads, n, a, b, inner_bytes = 0;
    lay->inner = *p;
    lay->inner.d_k = m;
    /* B·H·N·m, B·H·M·m fit (la_problem_check of p with d_k = m and p's public φ) */
    la_status st = la_problem_check(&lay->inner);
    if (st != LA_OK) return st;
    if (!la_mul_ok(p->batch, p->heads, &heads)) return LA_EOVERFLOW;
    size_t tasks = heads;
    lay->parts = 1, lay->width = p->d_v;
    if (recurrent)
        lay->parts = la_linear_recurrent_parts(heads, (size_t)la_threads(), p->d_v, &lay->width);
    if (!la_mul_ok(heads, lay->parts, &tasks)) return LA_EOVERFLOW;
    lay->threads = (size_t)la_threads() < tasks ? (size_t)la_threads() : tasks;
    if (!recurrent) {
        st = la_linear_workspace_bytes(&lay->inner, false, elem, &inner_bytes);
        if (st != LA_OK) return st;
    }
    lay->inner.feature_map = LA_FEATURE_IDENTITY;
    if (!la_mul_ok(m, p->d_k, &n) || !la_mul_ok(n, sizeof(double) + (elem == 4 ? 4 : 0) + elem, &a))
        return LA_EOVERFLOW;
    lay->w_bytes = a;
    lay->phi_q_elems = heads * p->n_queries * m; /* fit: checked above */
    lay->phi_k_elems = heads * p->n_keys * m;
    lay->pg_elems = heads * p->n_keys * 2;
    lay->causal_per_thread = 0;
    if (recurrent) { /* token by token: S, z and ψ' of one key */
        size_t state;
        if (!la_mul_ok(m, p->d_v + 1, &state) || state > SIZE_MAX - m ||
            !la_mul_ok(state + m, lay->threads, &n))
            return LA_EOVERFLOW;
        lay->causal_per_thread = state + m;
    }
    const size_t causal_elems = recurrent ? n : 0;
    if (lay->phi_q_elems > SIZE_MAX - lay->phi_k_elems ||
        lay->phi_q_elems + lay->phi_k_elems > SIZE_MAX - lay->pg_elems ||
        lay->phi_q_elems + lay->phi_k_elems + lay->pg_elems > SIZE_MAX - causal_elems)
        return LA_EOVERFLOW;
    lay->scratch_elems = lay->phi_q_elems + lay->phi_k_elems + lay->pg_elems + causal_elems;
    if (!la_mul_ok(lay->scratch_elems, elem, &b) || b > SIZE_MAX - a) return LA_EOVERFLOW;
    lay->own_bytes = a + b;
    if (lay->own_bytes > SIZE_MAX - inner_bytes) return LA_EOVERFLOW;
    lay->total_bytes = lay->own_bytes + inner_bytes;
    return LA_OK;
}

/* The backward's scratch (favor_backward): W as the forward's (favor_draw_w) *w_bytes, then
 * *elems elements: φ̃(Q), ψ̃(K) and their gradients 2·B·H·(N + M)·m, P and g 2·B·H·M, dg
 * B·H·M, d_v B·H·M·d_v. Checks p (la_problem_check, also of p with d_k = m). */
static la_status favor_backward_bytes(const la_problem *p, size_t elem, size_t *w_bytes,
                                      size_t *elems)
{
    const la_favor_params favor = la_favor_params_of(p);
    favor_layout lay;
    la_status st = favor_layout_for(p, elem, true, &lay); /* checks; W's bytes */
    if (st != LA_OK) return st;
    *w_bytes = lay.w_bytes;
    size_t rows, feat, keys, bytes;
    if (!la_mul_ok(p->batch * p->heads, p->n_queries + p->n_keys, &rows) ||
        !la_mul_ok(rows, 2 * favor.features, &feat) ||
        !la_mul_ok(p->batch * p->heads, p->n_keys * (3 + p->d_v), &keys) ||
        feat > SIZE_MAX - keys || !la_mul_ok(feat + keys, elem, &bytes) ||
        bytes > SIZE_MAX - *w_bytes)
        return LA_EOVERFLOW;
    *elems = feat + keys;
    return LA_OK;
}

/* Keys head (b, ·) turns into features: the visible ones, and causal only those some
 * query sees (j < N). */
static size_t keys_used(const la_problem *p, size_t b)
{
    const size_t m = la_keys_in_length(p, b);
    return p->causal && p->n_queries < m ? p->n_queries : m;
}

/* ---------------------------------------------------------------- the features and the kernel, in
 * REAL */

/* The exponential of the feature loops (N·m + M·m of them, the features' main cost):
 * float32 the branch-free polynomial of cpu/vexp.h, which the compiler vectorizes
 * (relative error 8.2e-8, 0 below −87.3; every argument here is at most 0), float64 libm's
 * exp (the accuracy path). */
#define FEXP(x) (REAL_IS_F32 ? (REAL)la_vexp_f32((float)(x)) : (REAL)exp((double)(x)))

/* W (m, d_k) into w64's block (favor_layout's w_bytes): the block's or the float64 draw, for
 * float32 its float copy after it, then s·Wᵀ (d_k, m), s = d_k^(−1/4), in REAL, the
 * projections' B operand (row-major: the register tiles read it as vectors); *wt points
 * at it. Returns W in REAL (the backward's chain rule reads it). */
static const REAL *favor_draw_w(const la_problem *p, double *w64, const REAL **wt)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t m = favor.features, dk = p->d_k;
    const double s = pow((double)dk, -0.25);
    (void)la_favor_w(p, w64); /* a given W checked first (favor_w_ok) */
    REAL *w = (REAL *)w64, *t = (REAL *)(w64 + m * dk);
    if (REAL_IS_F32) {
        for (size_t x = 0; x < m * dk; x++)
            t[x] = (REAL)w64[x];
        w = t;
        t += m * dk;
    }
    for (size_t l = 0; l < m; l++)
        for (size_t c = 0; c < dk; c++)
            t[c * m + l] = (REAL)(s * w64[l * dk + c]);
    *wt = t;
    return w;
}

/* Whether the block's W, when it gives one, is finite (else the call refuses, LA_EINVAL). */
static bool favor_w_ok(const la_problem *p)
{
    const la_favor_params favor = la_favor_params_of(p);
    double max_abs;
    return !favor.proj_w || la_finite_max_abs(favor.proj_w, favor.features * p->d_k, &max_abs);
}

/* The largest of a row's n >= 1 projections into *max; false when one is not finite.
 * Vectorized (`omp simd`: a max in any order is exact): Σ x·0 is 0 for finite rows and
 * NaN where an entry is ±inf or NaN, which the compiler may not fold (x·0 is not 0 there). */
static bool row_max_finite(const REAL *row, size_t n, REAL *max)
{
    REAL mx = -REAL_MAX, zero = 0;
#pragma omp simd reduction(max : mx) reduction(+ : zero)
    for (size_t l = 0; l < n; l++) {
        mx = row[l] > mx ? row[l] : mx;
        zero += row[l] * 0;
    }
    *max = mx;
    return zero == 0;
}

enum { FEATURE_ROWS = 128 }; /* rows per task of favor_features */

/* Query rows [i0, i1) of head hd: proj = Q (s·Wᵀ) (one product), then per row
 * exp((proj − P) − ln(m)/2). False when a projection is not finite. */
static bool query_rows(const la_problem *p, const REAL *wt, size_t hd, const REAL *q, REAL *phi_q,
                       size_t i0, size_t i1)
{
    const size_t N = p->n_queries, dk = p->d_k, m = la_favor_params_of(p).features;
    const REAL half_log_m = (REAL)(0.5 * log((double)m));
    REAL *fq = phi_q + (hd * N + i0) * m;
    bool finite = true;
    LA_COUNT(LA_COUNT_PHI, 2 * (double)(i1 - i0) * (double)m * (double)dk);
    GEMM_SMALL(i1 - i0, m, dk, 1, q + (hd * N + i0) * dk, (ptrdiff_t)dk, 1, wt, (ptrdiff_t)m, 1, 0,
               fq, (ptrdiff_t)m, 1);
    LA_COUNT(LA_COUNT_PHI, (double)(i1 - i0) * 4 * (double)m);
    for (size_t i = 0; i < i1 - i0; i++) {
        REAL *row = fq + i * m, mx;
        finite &= row_max_finite(row, m, &mx);
        for (size_t l = 0; l < m; l++)
            row[l] = FEXP((row[l] - mx) - half_log_m);
    }
    return finite;
}

/* Key rows [j0, j1) of head hd: the rows at and past u = keys_used zeroed; below u,
 * proj = K (s·Wᵀ), P_j its max and g_j = P_j − s²·(k·k)/2 into pg, and with `psi` the
 * causal ψ_jl = exp((proj_jl − P_j) − ln(m)/2) (else proj stays for key_features_at).
 * False when a projection or g is not finite. */
static bool key_rows(const la_problem *p, const REAL *wt, size_t hd, const REAL *k, REAL *phi_k,
                     REAL *pg, size_t j0, size_t j1, bool psi)
{
    const size_t M = p->n_keys, dk = p->d_k, m = la_favor_params_of(p).features;
    const size_t u = keys_used(p, hd / p->heads), hi = j1 < u ? j1 : u;
    const REAL half_sq = (REAL)(0.5 / sqrt((double)dk)); /* s²/2, s = d_k^(−1/4) */
    const REAL half_log_m = (REAL)(0.5 * log((double)m));
    const REAL *kh = k + hd * M * dk;
    REAL *fk = phi_k + hd * M * m, *P = pg + hd * 2 * M, *g = P + M;
    bool finite = true;
    /* rows no query reads, zeroed (linear attention's range check reads every row) */
    if (j1 > hi)
        memset(fk + (j0 > hi ? j0 : hi) * m, 0, (j1 - (j0 > hi ? j0 : hi)) * m * sizeof *fk);
    if (j0 >= hi) return true;
    LA_COUNT(LA_COUNT_PHI, 2 * (double)(hi - j0) * (double)m * (double)dk);
    GEMM_SMALL(hi - j0, m, dk, 1, kh + j0 * dk, (ptrdiff_t)dk, 1, wt, (ptrdiff_t)m, 1, 0,
               fk + j0 * m, (ptrdiff_t)m, 1);
    LA_COUNT(LA_COUNT_PHI, (double)(hi - j0) * (2 * (double)dk + 2 + (double)m));
    for (size_t j = j0; j < hi; j++) {
        REAL mx;
        finite &= row_max_finite(fk + j * m, m, &mx);
        const REAL h = FN(la_dot)(kh + j * dk, kh + j * dk, dk) * half_sq;
        P[j] = mx;
        g[j] = mx - h;
        finite &= g[j] >= -REAL_MAX; /* false for -inf (‖x‖² beyond the type) and NaN */
    }
    if (psi) {
        LA_COUNT(LA_COUNT_PHI, (double)(hi - j0) * 3 * (double)m);
        for (size_t j = j0; j < hi; j++) {
            REAL *row = fk + j * m;
            for (size_t l = 0; l < m; l++)
                row[l] = FEXP((row[l] - P[j]) - half_log_m);
        }
    }
    return finite;
}

/* μ = max g over head hd's u used keys (u >= 1), counted. */
static REAL keys_mu(const la_problem *p, size_t hd, const REAL *pg)
{
    const size_t M = p->n_keys, u = keys_used(p, hd / p->heads);
    const REAL *g = pg + hd * 2 * M + M;
    LA_COUNT(LA_COUNT_PHI, 3 * (double)u);
    REAL mu = -REAL_MAX;
    for (size_t j = 0; j < u; j++)
        mu = g[j] > mu ? g[j] : mu;
    return mu;
}

/* Non-causal key features of rows [j0, j1) (below u) of head hd from their projections:
 * φ_jl = exp((proj_jl − P_j) − o_j), o_j = ln(m)/2 − (g_j − μ). */
static void key_features_at(const la_problem *p, size_t hd, REAL *phi_k, const REAL *pg, size_t j0,
                            size_t j1, REAL mu)
{
    const size_t M = p->n_keys, m = la_favor_params_of(p).features;
    const size_t u = keys_used(p, hd / p->heads), hi = j1 < u ? j1 : u;
    const REAL half_log_m = (REAL)(0.5 * log((double)m));
    const REAL *P = pg + hd * 2 * M, *g = P + M;
    if (j0 >= hi) return;
    LA_COUNT(LA_COUNT_PHI, (double)(hi - j0) * 3 * (double)m);
    for (size_t j = j0; j < hi; j++) {
        const REAL o = half_log_m - (g[j] - mu);
        REAL *row = phi_k + (hd * M + j) * m;
        for (size_t l = 0; l < m; l++)
            row[l] = FEXP((row[l] - P[j]) - o);
    }
}

/* The features of one head; false when a projection, ‖x‖² or a feature is not finite
 * (the inputs are beyond the element type, or not finite). With s = d_k^(−1/4),
 * proj = (s·x) Wᵀ (one product per side) and P the row's max of proj:
 *   queries, into phi_q (N, m): φ_il = exp((proj_il − P_i) − ln(m)/2). The query's own
 *     ‖x‖²/2 and max are common to its m features, so they cancel in y_i (they only
 *     rescale eps);
 *   keys (the u = keys_used rows of phi_k (M, m)): each key's largest exponent
 *     g_j = P_j − ‖x_j‖²/2, into pg: P (M) then g (M). Non-causal, μ = max g over the
 *     used keys and φ_jl = exp((proj_jl − P_j) − o_j), o_j = ln(m)/2 − (g_j − μ), at
 *     most 1/√m; causal, ψ_jl = exp((proj_jl − P_j) − ln(m)/2), which the engine's
 *     stabilized scan weights by exp(g_j − μ_i) per query.
 * P is subtracted first: ‖x‖²/2, P + ln(m)/2 or anything else much larger than the spread
 * of a row's projections never meets them in one operation, which would round them away;
 * ‖x‖²/2 enters each key's one offset g_j − μ only. Rows of phi_k at and past u: zeros
 * (u = 0: no feature formed). shared_max: the keys by the non-causal form (μ the max over
 * the used keys) whatever p->causal (the backward's, favor_backward). Every row is formed
 * by the row functions above, so favor_features gives the same bits. */
static bool favor_head_features(const la_problem *p, const REAL *wt, size_t hd, const REAL *q,
                                const REAL *k, REAL *phi_q, REAL *phi_k, REAL *pg, bool shared_max)
{
    const bool psi = p->causal && !shared_max;
    bool finite = key_rows(p, wt, hd, k, phi_k, pg, 0, p->n_keys, psi);
    if (keys_used(p, hd / p->heads) == 0) return finite; /* no query sees a key */
    finite = query_rows(p, wt, hd, q, phi_q, 0, p->n_queries) && finite;
    if (!psi) key_features_at(p, hd, phi_k, pg, 0, p->n_keys, keys_mu(p, hd, pg));
    return finite;
}

/* favor_head_features for every head, in tasks of FEATURE_ROWS rows of one head and side
 * on `threads` threads (one head is enough to fill them), non-causal keys finished once
 * every key's g is known: the same bits as favor_head_features head by head. */
static bool favor_features(const la_problem *p, const REAL *wt, const REAL *q, const REAL *k,
                           REAL *phi_q, REAL *phi_k, REAL *pg, int threads)
{
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys;
    const size_t qb = (N + FEATURE_ROWS - 1) / FEATURE_ROWS,
                 kb = (M + FEATURE_ROWS - 1) / FEATURE_ROWS;
    const bool psi = p->causal;
    bool finite = true;
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(threads) reduction(&& : finite)
    for (size_t hd = 0; hd < heads; hd++)
        for (size_t t = 0; t < qb + kb; t++) {
            if (t >= qb) {
                const size_t j0 = (t - qb) * FEATURE_ROWS,
                             j1 = j0 + FEATURE_ROWS < M ? j0 + FEATURE_ROWS : M;
                finite = key_rows(p, wt, hd, k, phi_k, pg, j0, j1, psi) && finite;
            } else if (keys_used(p, hd / p->heads) > 0) {
                const size_t i0 = t * FEATURE_ROWS,
                             i1 = i0 + FEATURE_ROWS < N ? i0 + FEATURE_ROWS : N;
                finite = query_rows(p, wt, hd, q, phi_q, i0, i1) && finite;
            }
        }
    if (psi || !finite) return finite;
    for (size_t hd = 0; hd < heads; hd++) {
        if (keys_used(p, hd / p->heads) == 0) continue;
        const REAL mu = keys_mu(p, hd, pg);
#pragma omp parallel for schedule(static) num_threads(threads)
        for (size_t b = 0; b < kb; b++)
            key_features_at(p, hd, phi_k, pg, b * FEATURE_ROWS,
                            (b + 1) * FEATURE_ROWS < M ? (b + 1) * FEATURE_ROWS : M, mu);
    }
    return finite;
}

/* One token of a stabilized state, S (m, d_v) and z (m) held at the scale of μ, the
 * running max of g over the keys they hold (S = Σ ψ(k_j) exp(g_j − μ) v_jᵀ): μ' = max(μ, g)
 * (g at the first token), the state rescaled to μ' by exp(μ − μ') (at most 1; none at
 * the first token), ψ' = ψ·exp(g − μ') into kt (may be psi), then the engine's step:
 * S += ψ' vᵀ, z += ψ', y = φ(q)ᵀS / (φ(q)·z + eps), the rescaling on the step's pass
 * (la_linear_step_head_rescaled). Returns μ'. S is (m, d_v); z need not follow S. */
static REAL stabilized_step(REAL *S, REAL *z, REAL mu, REAL g, bool first, const REAL *psi,
                            REAL *kt, const REAL *v, const REAL *phi_q, REAL eps, REAL *y, size_t m,
                            size_t dv)
{
    LA_COUNT(LA_COUNT_PHI, 1); /* the running max */
    const REAL mu_new = first || g > mu ? g : mu;
    LA_COUNT(LA_COUNT_KV, (double)m + 2);
    const REAL f = EXP(g - mu_new);
    for (size_t l = 0; l < m; l++)
        kt[l] = psi[l] * f;
    if (first) {
        FN(la_linear_step_head)(S, z, kt, v, phi_q, eps, y, m, dv);
    } else { /* the state to the scale of μ' on the step's own pass over S */
        LA_COUNT(LA_COUNT_KV, (double)m * ((double)dv + 1) + 2);
        FN(la_linear_step_head_rescaled)(S, z, EXP(mu - mu_new), kt, v, phi_q, eps, y, m, dv);
    }
    return mu_new;
}

/* Causal FAVOR+ of one head, token by token: the chunked form's weights
 * a_ij = φ(q_i)·ψ(k_j)·exp(g_j − μ_i), j <= i, with the state S (m, d_v), z (m) held at
 * the scale of μ, the running max of g over the keys it holds (S = Σ ψ(k_j) exp(g_j − μ)
 * v_jᵀ). Token t: when its key is used (t < u), μ' = max(μ, g_t), the state rescaled by
 * exp(μ − μ') (at most 1; exactly 1 when g_t does not raise the max), ψ'_t = ψ(k_t)
 * exp(g_t − μ'), then la_linear_step_head (S += ψ'_t v_tᵀ, z += ψ'_t, y_t = φ(q_t)ᵀS /
 * (φ(q_t)·z + eps)); past u only the read (la_linear_read_query). So eps meets the
 * denominator at the chunked form's scale, μ_t = μ'. Columns [c0, c0 + w) of d_v only (a
 * part: la_linear_recurrent_parts), S then (m, w). Scratch `mine`: S, z, ψ' (m). */
static void favor_recurrent_head(const la_problem *p, size_t hd, size_t c0, size_t w,
                                 const REAL *phi_q, const REAL *phi_k, const REAL *pg,
                                 const REAL *v, REAL *out, REAL *mine)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t N = p->n_queries, M = p->n_keys, dv = p->d_v, m = favor.features;
    const size_t u = keys_used(p, hd / p->heads);
    const REAL eps = (REAL)p->eps;
    const REAL *fq = phi_q + hd * N * m, *psi = phi_k + hd * M * m, *vh = v + hd * M * dv + c0;
    const REAL *g = pg + hd * 2 * M + M;
    REAL *yh = out + hd * N * dv + c0, *S = mine, *z = S + m * w, *kt = z + m;
    if (u == 0) { /* no key visible: zero rows */
        for (size_t t = 0; t < N; t++)
            memset(yh + t * dv, 0, w * sizeof *yh);
        return;
    }
    for (size_t a = 0; a < m * (w + 1); a++) /* S, then z */
        S[a] = 0;
    REAL mu = g[0];
    for (size_t t = 0; t < N; t++) {
        if (t >= u) { /* no key left to add: y_t = φ(q_t)ᵀS / (φ(q_t)·z + eps) */
            FN(la_linear_read_query)(S, z, fq + t * m, fq + t * m, eps, yh + t * dv, m, w);
            continue;
        }
        mu = stabilized_step(S, z, mu, g[t], t == 0, psi + t * m, kt, vh + t * dv, fq + t * m, eps,
                             yh + t * dv, m, w);
    }
}

/* FAVOR+ attention: W drawn from seed (the same for every head and both precisions),
 * the features of every head (favor_features: tasks of FEATURE_ROWS rows of one head), then
 * non-causal linear attention on them with d_k = m, or causal in chunks (the engine's stabilized
 * scan, la_linear_scan_stabilized), or,
 * `recurrent` (p->causal required), token by token (favor_recurrent_head).
 * Scratch: favor_layout. */
static la_status favor_attention(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                 REAL *out, bool recurrent)
{
    const la_favor_params favor = la_favor_params_of(p);
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || (recurrent && !p->causal)) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    if (!favor_w_ok(p)) return LA_EINVAL;
    favor_layout lay;
    st = favor_layout_for(p, sizeof(REAL), recurrent, &lay);
    if (st != LA_OK) return st;
    if (lay.total_bytes > p->workspace_limit) return LA_EBUDGET;
    const size_t m = favor.features, heads = p->batch * p->heads;
    if (p->causal) {
        /* every value the recurrence forms is at most m·M'·max|v| over the M' keys some
         * query sees (φ <= 1/√m, weights at most 1): refuse where that passes T/8 (and
         * such a v not finite) */
        const double c = FN(la_max_abs_seen)(p, v, p->d_v);
        if (!((double)m * (double)la_keys_seen_max(p) * (c > 1 ? c : 1) <= (double)REAL_MAX / 8))
            return LA_ERANGE;
    }
    if (la_gemm_reserve(la_threads()) != LA_OK) return LA_ENOMEM;
    double *w64 = malloc(lay.w_bytes);
    REAL *phi = la_alloc_large(lay.scratch_elems * sizeof(REAL));
    if (!w64 || !phi) {
        free(w64);
        free(phi);
        return LA_ENOMEM;
    }
    const REAL *wt;
    favor_draw_w(p, w64, &wt);
    REAL *phi_q = phi, *phi_k = phi + lay.phi_q_elems, *pg = phi_k + lay.phi_k_elems;
    REAL *per_thread = pg + lay.pg_elems;
    const int threads = (int)lay.threads;
    const bool finite = favor_features(p, wt, q, k, phi_q, phi_k, pg, la_threads());
    if (!finite) {
        st = LA_ERANGE;
    } else if (recurrent) {
        const size_t parts = lay.parts, width = lay.width;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t task = 0; task < heads * parts; task++) {
            const size_t c0 = task % parts * width;
            favor_recurrent_head(p, task / parts, c0, p->d_v - c0 < width ? p->d_v - c0 : width,
                                 phi_q, phi_k, pg, v, out,
                                 per_thread + (size_t)omp_get_thread_num() * lay.causal_per_thread);
        }
    } else {
        la_problem inner = lay.inner;
        inner.workspace_limit = p->workspace_limit - lay.own_bytes;
        if (p->causal) {
            /* P's slot of every head becomes μ, the running max of g over its keys */
            for (size_t hd = 0; hd < heads; hd++) {
                const size_t u = keys_used(p, hd / p->heads);
                REAL *mu = pg + hd * 2 * p->n_keys, *g = mu + p->n_keys;
                LA_COUNT(LA_COUNT_PHI, u);
                for (size_t j = 0; j < u; j++)
                    mu[j] = j == 0 || g[j] > mu[j - 1] ? g[j] : mu[j - 1];
            }
            st = FN(la_linear_scan_stabilized)(&inner, phi_q, phi_k, v, pg, out);
        } else {
            st = FN(la_linear_scan)(&inner, phi_q, phi_k, v, out);
        }
    }
    free(w64);
    free(phi);
    return st;
}

/* One token of a FAVOR+ state (la_favor_state_create), every head h: the features as
 * favor_head_features forms them, one row each (proj = s·x Wᵀ, P its max; φ(q) =
 * exp((proj − P) − ln(m)/2), ψ(k) likewise, g = P − ‖s·k‖²/2), then favor_recurrent_head's
 * step: μ' = g at the first token, else max(μ, g) with the state rescaled by exp(μ − μ');
 * ψ' = ψ·exp(g − μ'), S += ψ' vᵀ, z += ψ', y = φ(q)ᵀS / (φ(q)·z + eps). Every head's
 * features are formed and checked before the state changes. The range rule: ψ' <= 1/√m
 * and every rescaling factor <= 1, so |S| grows by at most c = max|v_t| and z by at most
 * 1 per token, and φ(q)ᵀS by at most m·|S|: a token is refused (LA_ERANGE) when
 * s + c, z + 1 or m·max(s + c, z + 1) passes T/8, or a projection or g is not finite.
 *   q_t, k_t: (heads, d_k), v_t, y_t: (heads, d_v); W: (m, d_k); state layout in
 *   linear_internal.h. */
#if REAL_IS_F32
la_status la_favor_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                            const float *v_t, float *y_t)
#else
la_status la_favor_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                            const double *v_t, double *y_t)
#endif
{
    if (!st || !q_t || !k_t || !v_t || !y_t || st->dtype != REAL_DTYPE || !st->w) return LA_EINVAL;
    const size_t H = st->heads, dk = st->d_k, dv = st->d_v, m = st->width;
    const REAL s = (REAL)pow((double)dk, -0.25), half_sq = (REAL)(0.5 / sqrt((double)dk));
    const REAL half_log_m = (REAL)(0.5 * log((double)m)), eps = (REAL)st->eps;
    const REAL *w = st->w;
    REAL *S = st->S, *z = S + H * m * dv, *mu = z + H * m;
    REAL *fq = st->phi, *fk = fq + H * m, *g = fk + H * m;

    /* the range rule, then every head's features, before anything changes */
    const double c = FN(la_max_abs)(v_t, H * dv), limit = (double)REAL_MAX / 8;
    const double s_new = st->s_bound + c, z_new = st->z_bound + 1;
    if (!(s_new <= limit && z_new <= limit && (double)m * fmax(s_new, z_new) <= limit))
        return LA_ERANGE;
    bool finite = true;
    for (size_t h = 0; h < H; h++) {
        const REAL *qh = q_t + h * dk, *kh = k_t + h * dk;
        REAL *rq = fq + h * m, *rk = fk + h * m, pq = -REAL_MAX, pk = -REAL_MAX;
        for (size_t l = 0; l < m; l++) {
            rq[l] = s * FN(la_dot)(qh, w + l * dk, dk);
            rk[l] = s * FN(la_dot)(kh, w + l * dk, dk);
            finite &= (rq[l] < 0 ? -rq[l] : rq[l]) <= REAL_MAX; /* false for inf, NaN */
            finite &= (rk[l] < 0 ? -rk[l] : rk[l]) <= REAL_MAX;
            pq = rq[l] > pq ? rq[l] : pq;
            pk = rk[l] > pk ? rk[l] : pk;
        }
        g[h] = pk - FN(la_dot)(kh, kh, dk) * half_sq;
        finite &= g[h] >= -REAL_MAX; /* false for -inf (‖x‖² beyond the type) and NaN */
        for (size_t l = 0; l < m; l++) {
            rq[l] = FEXP((rq[l] - pq) - half_log_m);
            rk[l] = FEXP((rk[l] - pk) - half_log_m);
        }
    }
    if (!finite) return LA_ERANGE;

    for (size_t h = 0; h < H; h++) {
        REAL *kt = fk + h * m; /* ψ(k_t), made ψ' in place */
        mu[h] = stabilized_step(S + h * m * dv, z + h * m, mu[h], g[h], st->position == 0, kt, kt,
                                v_t + h * dv, fq + h * m, eps, y_t + h * dv, m, dv);
    }
    st->s_bound = s_new;
    st->z_bound = z_new;
    st->position++;
    return LA_OK;
}

/* ---------------------------------------------------------------- backward */

/* The index of the largest of row[0..m) (the first on ties); m compares, counted. */
static size_t row_argmax(const REAL *row, size_t m)
{
    LA_COUNT(LA_COUNT_PHI, m);
    size_t best = 0;
    for (size_t l = 1; l < m; l++)
        best = row[l] > row[best] ? l : best;
    return best;
}

/* The chain rule of one head, from the features' gradients the linear backward left in
 * dq_f (N, m) and dk_f (M, m) (each overwritten with du = ∂L/∂p, p = s·x Wᵀ), into d_q,
 * d_k. With φ̃_il = φ̂_il·exp(G − μ_i) and ψ̃_jl = exp(p_jl − ‖x_j‖²/2 − ln(m)/2 − G)
 * (G = max g, a gauge that cancels), μ_i = g_{j*(i)}:
 *   query:  du_il = dφ̃_il φ̃_il, t_i = Σ_l du_il, du_{i,l*} −= t_i (P_i = max_l p_il),
 *           dg_{j*(i)} −= t_i (through μ_i);
 *   key:    du_jl = dψ̃_jl ψ̃_jl, T_j = Σ_l du_jl, du_{j,l*} += dg_j (g_j = P_j − ‖x_j‖²/2);
 *   d_q = s·dU W,  d_k = s·dU W − s²·(T_j + dg_j)·k_j.
 * Counted (flops_phi): the argmax m per row; per query du and t 2m, the max's and dg's adds
 * 2; per key du and T 2m, the max's add 1, s²·(T + dg) 2, the last term 2·d_k; the
 * products 2·m·d_k per row. dg: (M) scratch. */
static double row_abs_sum(const REAL *x, size_t n)
{
    double sum = 0;
    for (size_t e = 0; e < n; e++)
        sum += fabs((double)x[e]);
    return sum;
}

/* Pass 1 of a head's chain rule (in dq_f, dk_f and dg; nothing of the outputs written):
 * returns a bound on every entry of its d_q and d_k, with c = max|W| and b the head's
 * max|k|: s·c·Σ_l |du_l| per row, plus |coef_j|·b for a key (+inf for a value not finite). */
static double favor_head_du(const la_problem *p, size_t hd, const REAL *phi_q, const REAL *phi_k,
                            REAL *dq_f, REAL *dk_f, const REAL *pg, REAL *dg, double c, double b)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, m = favor.features;
    const size_t u = keys_used(p, hd / p->heads);
    const REAL s = (REAL)pow((double)dk, -0.25), s2 = s * s;
    const REAL *g = pg + hd * 2 * M + M;
    const REAL *fq = phi_q + hd * N * m, *fk = phi_k + hd * M * m;
    REAL *uq = dq_f + hd * N * m, *uk = dk_f + hd * M * m;
    if (u == 0) return 0;
    for (size_t j = 0; j < u; j++)
        dg[j] = 0;
    size_t best = 0; /* j*(i): the first key of the largest g among those query i sees */
    if (!p->causal)
        for (size_t j = 1; j < u; j++)
            best = g[j] > g[best] ? j : best;
    LA_COUNT(LA_COUNT_PHI, (double)N * (2 * (double)m + 2));
    for (size_t i = 0; i < N; i++) {
        if (p->causal && i < u && g[i] > g[best]) best = i;
        const REAL *row = fq + i * m;
        REAL *du = uq + i * m, t = 0;
        const size_t top = row_argmax(row, m);
        for (size_t l = 0; l < m; l++) {
            du[l] *= row[l];
            t += du[l];
        }
        du[top] -= t;
        dg[best] -= t;
    }
    LA_COUNT(LA_COUNT_PHI, (double)u * (2 * (double)m + 3 + 2 * (double)dk));
    for (size_t j = 0; j < u; j++) {
        const REAL *row = fk + j * m;
        REAL *du = uk + j * m, t = 0;
        const size_t top = row_argmax(row, m);
        for (size_t l = 0; l < m; l++) {
            du[l] *= row[l];
            t += du[l];
        }
        du[top] += dg[j];
        dg[j] = s2 * (t + dg[j]); /* the coefficient of k_j, below */
    }
    double bound = 0, x;
    for (size_t i = 0; i < N; i++) {
        x = (double)s * c * row_abs_sum(uq + i * m, m);
        bound = x > bound || x != x ? x : bound; /* a NaN stays */
    }
    for (size_t j = 0; j < u; j++) {
        x = (double)s * c * row_abs_sum(uk + j * m, m) + fabs((double)dg[j]) * b;
        bound = x > bound || x != x ? x : bound;
    }
    return bound;
}

/* Pass 2: d_q = s·dU W, d_k = s·dU W − coef_j k_j (zero rows where no key is seen). */
static void favor_head_grads(const la_problem *p, const REAL *w, size_t hd, const REAL *k,
                             const REAL *dq_f, const REAL *dk_f, const REAL *dg, REAL *d_q,
                             REAL *d_k)
{
    const la_favor_params favor = la_favor_params_of(p);
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, m = favor.features;
    const size_t u = keys_used(p, hd / p->heads);
    const REAL s = (REAL)pow((double)dk, -0.25);
    const REAL *kh = k + hd * M * dk, *uq = dq_f + hd * N * m, *uk = dk_f + hd * M * m;
    REAL *dqh = d_q + hd * N * dk, *dkh = d_k + hd * M * dk;
    memset(dkh + u * dk, 0, (M - u) * dk * sizeof *dkh); /* keys no query sees */
    if (u == 0) {
        memset(dqh, 0, N * dk * sizeof *dqh);
        return;
    }
    /* d_q = s·dU W: (N, m)·(m, d_k); d_k likewise over the u keys, then − coef_j k_j */
    LA_COUNT(LA_COUNT_PHI, 2 * ((double)N + (double)u) * (double)m * (double)dk);
    GEMM(N, dk, m, s, uq, (ptrdiff_t)m, 1, w, (ptrdiff_t)dk, 1, 0, dqh, (ptrdiff_t)dk, 1);
    GEMM(u, dk, m, s, uk, (ptrdiff_t)m, 1, w, (ptrdiff_t)dk, 1, 0, dkh, (ptrdiff_t)dk, 1);
    for (size_t j = 0; j < u; j++)
        for (size_t a = 0; a < dk; a++)
            dkh[j * dk + a] -= dg[j] * kh[j * dk + a];
}

/* FAVOR+'s backward (non-causal, or causal in chunks: the same function to rounding as
 * the recurrent form). The forward's weights a_ij = φ̂(q_i)·ψ(k_j)·exp(g_j − μ_i) are
 * linear attention's on φ̃_i = φ̂(q_i)·exp(G − μ_i) and ψ̃_j = ψ(k_j)·exp(g_j − G), G the
 * max of g over the head's used keys (non-causal: μ_i = G, φ̃ = φ̂, and ψ̃ the forward's
 * own φ(k)); causal μ_i is the running max. So: the features (favor_head_features, keys
 * by G), φ̃ scaled by exp(G − μ_i), linear attention's backward on them
 * (la_linear_backward_features: dφ̃, dψ̃, d_v), then favor_head_grads. Range: LA_ERANGE
 * where the forward refuses a feature, where exp(G − μ_i) passes T^(1/4) (keys whose
 * largest exponents g spread by more than ln(T)/4, 22 in float32: an early query's keys
 * would underflow against G), and by the linear backward's rule on the features.
 * Before any output is written, the chain rule's values are bounded (favor_head_du): d_v
 * waits in scratch for that. Scratch: W, φ̃(Q), ψ̃(K) and their gradients,
 * 2·B·H·(N + M)·m, P and g, 2·B·H·M, dg B·H·M, d_v B·H·M·d_v; then the linear backward's
 * with d_k = m. */
static la_status favor_backward(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                const REAL *out, const REAL *d_out, REAL *d_q, REAL *d_k, REAL *d_v)
{
    const la_favor_params favor = la_favor_params_of(p);
    size_t w_bytes, elems;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    st = favor_backward_bytes(p, sizeof(REAL), &w_bytes, &elems);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || !d_out || !d_q || !d_k || !d_v) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused, as the forward */
    if (!favor_w_ok(p)) return LA_EINVAL;
    const size_t bytes = w_bytes + elems * sizeof(REAL);
    if (bytes > p->workspace_limit) return LA_EBUDGET;
    const size_t N = p->n_queries, M = p->n_keys, m = favor.features, heads = p->batch * p->heads;
    if (la_gemm_reserve(la_threads()) != LA_OK) return LA_ENOMEM;
    double *w64 = malloc(w_bytes);
    REAL *work = la_alloc_large(elems * sizeof(REAL));
    if (!w64 || !work) {
        free(w64);
        free(work);
        return LA_ENOMEM;
    }
    const REAL *wt;
    const REAL *w = favor_draw_w(p, w64, &wt);
    REAL *phi_q = work, *phi_k = phi_q + heads * N * m, *dq_f = phi_k + heads * M * m;
    REAL *dk_f = dq_f + heads * N * m, *pg = dk_f + heads * M * m, *dg = pg + heads * 2 * M;
    REAL *dv_own = dg + heads * M;
    const int threads = (int)(heads < (size_t)la_threads() ? heads : (size_t)la_threads());
    const double scale_max = pow((double)REAL_MAX, 0.25);
    bool finite = true;
#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(&& : finite)
    for (size_t hd = 0; hd < heads; hd++) {
        bool ok = favor_head_features(p, wt, hd, q, k, phi_q, phi_k, pg, true);
        const size_t u = keys_used(p, hd / p->heads);
        if (u == 0) /* no key seen: no features formed; zeros for the range rule's scan */
            memset(phi_q + hd * N * m, 0, N * m * sizeof *phi_q);
        if (ok && p->causal && u > 0) { /* φ̃_i = φ̂_i·exp(G − μ_i), μ_i the running max */
            const REAL *g = pg + hd * 2 * M + M;
            REAL big = g[0], mu = g[0];
            for (size_t j = 1; j < u; j++)
                big = g[j] > big ? g[j] : big;
            LA_COUNT(LA_COUNT_PHI, (double)u + (double)N * (2 + (double)m));
            for (size_t i = 0; i < N; i++) {
                mu = i < u && g[i] > mu ? g[i] : mu;
                const REAL f = EXP(big - mu);
                ok &= (double)f <= scale_max;
                REAL *row = phi_q + (hd * N + i) * m;
                for (size_t l = 0; l < m; l++)
                    row[l] *= f;
            }
        }
        finite = ok && finite;
    }
    st = LA_ERANGE;
    if (finite) {
        la_problem inner = *p; /* linear attention on the features */
        inner.d_k = m;
        inner.feature_map = LA_FEATURE_IDENTITY;
        inner.workspace_limit = p->workspace_limit - bytes;
        st = FN(la_linear_backward_features)(&inner, phi_q, phi_k, v, out, d_out, dq_f, dk_f,
                                             dv_own);
    }
    if (st == LA_OK) { /* the chain rule, bounded first */
        const double c = FN(la_max_abs)(w, m * p->d_k);
        const double b = FN(la_max_abs)(k, heads * M * p->d_k), limit = (double)REAL_MAX / 8;
        double bound = 0;
#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(max : bound)
        for (size_t hd = 0; hd < heads; hd++) {
            const double x = favor_head_du(p, hd, phi_q, phi_k, dq_f, dk_f, pg, dg + hd * M, c, b);
            bound = x <= limit ? fmax(bound, x) : INFINITY; /* NaN too */
        }
        if (!(bound <= limit)) st = LA_ERANGE;
    }
    if (st == LA_OK) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < heads; hd++)
            favor_head_grads(p, w, hd, k, dq_f, dk_f, dg + hd * M, d_q, d_k);
        memcpy(d_v, dv_own, heads * M * p->d_v * sizeof *d_v);
    }
    free(w64);
    free(work);
    return st;
}

#if REAL_IS_F32
la_status la_favor_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, const float *out, const float *d_out,
                                          float *d_q, float *d_k, float *d_v)
#else
la_status la_favor_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v)
#endif
{
    if (la_causal_square(p))
        return FN(la_square_backward)(p, FN(la_favor_attention_backward), q, k, v, out, d_out, d_q,
                                      d_k, d_v);
    return favor_backward(p, q, k, v, out, d_out, d_q, d_k, d_v);
}

#undef FEXP

/* ---------------------------------------------------------------- the public kernels */

#if REAL_IS_F32
la_status la_favor_attention_f32(const la_problem *p, const float *q, const float *k,
                                 const float *v, float *out)
#else
la_status la_favor_attention_f64(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out)
#endif
{
    if (la_causal_square(p)) return FN(la_square_forward)(p, FN(la_favor_attention), q, k, v, out);
    return favor_attention(p, q, k, v, out, false);
}

#if REAL_IS_F32
la_status la_favor_attention_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, float *out)
#else
la_status la_favor_attention_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out)
#endif
{
    if (la_causal_square(p))
        return FN(la_square_forward)(p, FN(la_favor_attention_recurrent), q, k, v, out);
    return favor_attention(p, q, k, v, out, true);
}

#if REAL_IS_F32
/* ---------------------------------------------------------------- cost (la_cost_fn) */

/* One head of an entry with mv visible keys, u = keys_used of them (none visible: no
 * work); what the kernels above issue.
 * The features (flops_phi):
 *   projections: X Wᵀ, 2·m·d_k per row, for the N queries and the u keys;
 *   queries: the row max P m, exp((proj − P) − ln(m)/2) 3 per feature: 4·m per query;
 *   keys: the row max P m, ‖x‖²/2 = (k·k)/(2√d_k) 2·d_k + 1, g = P − that 1, the max
 *     of g 1, then non-causal o = ln(m)/2 − (g − μ) 2 and exp((proj − P) − o) 3 per
 *     feature (2·d_k + 4·m + 5 per key), causal ψ = exp((proj − P) − ln(m)/2) 3 per
 *     feature (2·d_k + 4·m + 3 per key).
 * Non-causal: then linear attention on the features with d_k = m, φ the identity
 * (la_linear_head_flops). Causal, the chunks (C = min(chunk, N), pairs_intra the
 * visible pairs inside the chunks, la_linear_pairs_intra):
 *   flops_qk   a_ij = φ(q_i)·ψ(k_j) 2m, times exp(g_j − μ_i) 3: (2m + 3) per pair;
 *   flops_av   a_ij v_j 2·d_v and the row sum 1: (2·d_v + 1) per pair;
 *   flops_qs   per query past the first chunk: φ(q)ᵀS 2·m·d_v, φ(q)·z 2m, r = exp(μ − μ_i)
 *              2, r·den 1, r·y d_v;
 *   flops_kv   per key a later chunk sees (min(u, s_last), s_last the last chunk's start):
 *              ψ' = ψ·exp(g − μ') m + 2, ΔS 2·m·d_v, Δz m; and per such chunk after the
 *              first the state rescaled, m·(d_v + 1) + 2;
 *   flops_normalize  den + eps and d_v divides per query. */
static void favor_head_flops(const la_problem *p, size_t mv, la_cost *f)
{
    const la_favor_params favor = la_favor_params_of(p);
    if (mv == 0) return;
    const size_t N = p->n_queries, C = p->chunk < N ? p->chunk : N;
    const double n = (double)N, dk = (double)p->d_k, dv = (double)p->d_v;
    const double m = (double)favor.features;
    const size_t used = p->causal && N < mv ? N : mv;
    const double u = (double)used;
    if (!p->causal) {
        la_problem inner = *p;
        inner.d_k = favor.features;
        la_linear_head_flops(&inner, mv, false, f);
        f->flops_phi = (n + u) * 2 * m * dk + n * 4 * m + u * (2 * dk + 4 * m + 5);
        return;
    }
    const double pairs = la_linear_pairs_intra(p, mv);
    const size_t s_last = (N - 1) / C * C, carried = used < s_last ? used : s_last;
    const double rescaled = carried > 0 ? (double)((carried + C - 1) / C - 1) : 0;
    f->flops_phi = (n + u) * 2 * m * dk + n * 4 * m + u * (2 * dk + 4 * m + 3);
    f->flops_qk = pairs * (2 * m + 3);
    f->flops_av = pairs * (2 * dv + 1);
    f->flops_qs = (double)(N - C) * (2 * m * dv + 2 * m + dv + 3);
    f->flops_kv = (double)carried * (2 * m * dv + 2 * m + 2) + rescaled * (m * (dv + 1) + 2);
    f->flops_normalize = n * (dv + 1);
}

la_status la_favor_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_favor_params favor = la_favor_params_of(p);
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_favor_cost, false, out);
    favor_layout lay;
    la_status st = favor_layout_for(p, la_dtype_size(dtype), false, &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, favor_head_flops, out);
    /* bytes_min beyond q, k, v, out: S and z on the m features; W read once, float64 */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 *
                         ((double)favor.features * (double)p->d_v + (double)favor.features) *
                         (double)la_dtype_size(dtype) +
                     (double)favor.features * (double)p->d_k * (double)sizeof(double);
    out->workspace_bytes = (double)lay.total_bytes;
    return LA_OK;
}

/* The backward (favor_backward), one head of an entry with mv visible keys, u = keys_used
 * of them (none visible: no work), all in flops_phi but linear attention's backward:
 *   the features as the non-causal forward forms them (above; causal too: the keys by
 *     their max G), causal then G u, exp(G − μ_i) 2 and φ̃ = φ̂·that m per query;
 *   linear attention's backward on them, d_k = m, φ the identity
 *     (la_linear_backward_head_flops);
 *   the chain rule (favor_head_grads): the argmax m per row, per query 2m + 2, per key
 *     2m + 3 + 2·d_k, the products d_q = s·dU W and d_k's 2·m·d_k per row. */
static void favor_backward_head_flops(const la_problem *p, size_t mv, la_cost *f)
{
    const la_favor_params favor = la_favor_params_of(p);
    if (mv == 0) return;
    const size_t N = p->n_queries, used = p->causal && N < mv ? N : mv;
    const double n = (double)N, dk = (double)p->d_k, m = (double)favor.features, u = (double)used;
    la_problem inner = *p;
    inner.d_k = favor.features;
    inner.feature_map = LA_FEATURE_IDENTITY;
    la_linear_backward_head_flops(&inner, mv, f);
    f->flops_phi = (n + u) * 2 * m * dk + n * 4 * m + u * (2 * dk + 4 * m + 5);
    if (p->causal) f->flops_phi += u + n * (2 + m);
    f->flops_phi += (n + u) * m + n * (2 * m + 2) + u * (2 * m + 3 + 2 * dk) + 2 * (n + u) * m * dk;
}

/* workspace_bytes: favor_backward_bytes, then linear attention's backward on m features. */
la_status la_favor_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_favor_params favor = la_favor_params_of(p);
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_favor_backward_cost, true, out);
    const size_t elem = la_dtype_size(dtype);
    size_t w_bytes, elems, lin_bytes;
    la_status st = favor_backward_bytes(p, elem, &w_bytes, &elems);
    if (st != LA_OK) return st;
    la_problem inner = *p;
    inner.d_k = favor.features;
    st = la_linear_backward_workspace_bytes(&inner, elem, &lin_bytes);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, favor_backward_head_flops, out);
    out->workspace_bytes = (double)w_bytes + (double)elems * (double)elem + (double)lin_bytes;
    return LA_OK;
}

/* The recurrent form, one head of an entry with mv visible keys, u = keys_used of them:
 * the causal features as above (flops_phi, the running max of g included), then
 * linear_recurrent's cost on m features (la_linear_head_flops, recurrent) with, per key,
 * ψ' = ψ·exp(g − μ') m + 2 and, per key after the first, the state rescaled by
 * exp(μ − μ') m·(d_v + 1) + 2 (issued whether or not the max rose: a factor of 1 then). */
static void favor_recurrent_head_flops(const la_problem *p, size_t mv, la_cost *f)
{
    const la_favor_params favor = la_favor_params_of(p);
    if (mv == 0) return;
    const size_t N = p->n_queries, used = N < mv ? N : mv;
    const double n = (double)N, dk = (double)p->d_k, dv = (double)p->d_v;
    const double m = (double)favor.features, u = (double)used;
    la_problem inner = *p;
    inner.d_k = favor.features;
    la_linear_head_flops(&inner, mv, true, f);
    f->flops_phi = (n + u) * 2 * m * dk + n * 4 * m + u * (2 * dk + 4 * m + 3);
    f->flops_kv += u * (m + 2) + (u - 1) * (m * (dv + 1) + 2);
}

la_status la_favor_recurrent_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_favor_params favor = la_favor_params_of(p);
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_favor_recurrent_cost, false, out);
    favor_layout lay;
    la_status st = favor_layout_for(p, la_dtype_size(dtype), true, &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, favor_recurrent_head_flops, out);
    out->bytes_min = (double)p->batch * (double)p->heads * 2 *
                         ((double)favor.features * (double)p->d_v + (double)favor.features) *
                         (double)la_dtype_size(dtype) +
                     (double)favor.features * (double)p->d_k * (double)sizeof(double);
    out->workspace_bytes = (double)lay.total_bytes;
    return LA_OK;
}
#endif /* REAL_IS_F32 */

/* ---------------------------------------------------------------- registry row */

#if REAL_IS_F32
static const la_kernel_fns favor_fns = {
    .forward_f32 = la_favor_attention_f32,
    .forward_f64 = la_favor_attention_f64,
    .reference = la_ref_favor_attention,
    .cost = la_favor_cost,
    .backward_f32 = la_favor_attention_backward_f32,
    .backward_f64 = la_favor_attention_backward_f64,
    .reference_backward = la_ref_favor_attention_backward,
    .backward_cost = la_favor_backward_cost,
};

const la_kernel_info la_row_favor = {
    .kernel = LA_KERNEL_FAVOR,
    .name = "favor",
    .summary = "FAVOR+ (Performer, Choromanski et al. 2021): linear attention on m "
               "positive random features, approximating softmax at scale 1/√d_k; "
               "causal: in chunks",
    .series = {"favor", "favor_causal_chunked"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_EPS | LA_PARAM_FEATURES | LA_PARAM_CHUNK,
    .block = LA_PARAMS_FAVOR,
    .masks = 0,
    .caps = LA_CAP_STEP | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD,
    .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
    .time_exponent = 1,
    .family = "random-feature",
    .fns = &favor_fns,
};

static const la_kernel_fns favor_recurrent_fns = {
    .forward_f32 = la_favor_attention_recurrent_f32,
    .forward_f64 = la_favor_attention_recurrent_f64,
    .reference = la_ref_favor_attention,
    .cost = la_favor_recurrent_cost,
    .backward_f32 = la_favor_attention_backward_f32,
    .backward_f64 = la_favor_attention_backward_f64,
    .reference_backward = la_ref_favor_attention_backward,
    .backward_cost = la_favor_backward_cost,
};

const la_kernel_info la_row_favor_recurrent = {
    .kernel = LA_KERNEL_FAVOR_RECURRENT,
    .name = "favor_recurrent",
    .summary = "FAVOR+, causal, token by token: S and z per token, rescaled as the "
               "keys' running max rises",
    .series = {NULL, "favor_causal_recurrent"},
    .causal = LA_CAUSAL_REQUIRED,
    .params = LA_PARAM_EPS | LA_PARAM_FEATURES,
    .block = LA_PARAMS_FAVOR,
    .masks = 0,
    .caps = LA_CAP_STEP | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD,
    .sweep = LA_SWEEP_CAUSAL,
    .time_exponent = 1,
    .family = "random-feature",
    /* the chunked form's backward: the same function, to rounding */
    .fns = &favor_recurrent_fns,
};
#endif

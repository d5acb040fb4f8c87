/* favor.c — FAVOR+ (Performer, Choromanski et al. 2021): softmax attention approximated
 * by linear attention on positive random features. Here: drawing the features
 * (la_favor_features), the feature map in float and double (written once in
 * favor_tmpl.h, instantiated twice below), the public kernels, and their cost. Non-causal,
 * the linear attention itself is linear.c's, run on the features
 * (la_linear_attention_on_features); causal, favor_tmpl.h's chunks, whose keys' stabilizer
 * is a running max (linattn.h says why).
 *
 *   φ(x) = exp(W x − ‖x‖²/2) / √m   on x = q·d_k^(−1/4) (and k·d_k^(−1/4)),
 * so that E[φ(q)·φ(k)] = exp(q·k / √d_k): softmax attention's weights at scale 1/√d_k.
 * W (m, d_k): blocks of d_k orthonormal rows (Gram–Schmidt of a Gaussian block), each row
 * then scaled to the norm of an independent Gaussian d_k-vector (chi(d_k)); the last block
 * has m mod d_k rows. */
#include "attention/attention_internal.h"
#include "attention/linear_internal.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------- scratch */

/* The scratch of one call: W in float64 (m·d_k, and for float32 a float copy; w_bytes),
 * then in the element type φ(Q) (B·H·N·m), φ(K) (B·H·M·m) and each key's P and g
 * (B·H·2M), and causal per thread a chunk's S, z, A, μ_i, den_i and ψ',
 * m·(d_v + 1) + C·(C + 2 + m) with C = min(chunk, N) (recurrent: S, z and one key's ψ',
 * m·(d_v + 2))
 * (scratch_elems, with own_bytes all of the above); non-causal also what linear attention
 * on the features holds (la_linear_workspace_bytes of `inner`, p with d_k = m). */
typedef struct {
    la_problem inner; /* p with d_k = m, φ the identity */
    size_t threads;   /* the threads of the per-head loops: min(threads, B·H) */
    size_t w_bytes, phi_q_elems, phi_k_elems, pg_elems, causal_per_thread, scratch_elems;
    size_t own_bytes, total_bytes;
} favor_layout;

static la_status favor_layout_for(const la_problem *p, size_t elem, bool recurrent,
                                  favor_layout *lay)
{
    const size_t m = p->features;
    size_t heads, n, a, b, inner_bytes = 0;
    lay->inner = *p;
    lay->inner.d_k = m;
    /* B·H·N·m, B·H·M·m fit (la_problem_check of p with d_k = m and p's public φ) */
    la_status st = la_problem_check(&lay->inner);
    if (st != LA_OK) return st;
    if (!la_mul_ok(p->batch, p->heads, &heads)) return LA_EOVERFLOW;
    lay->threads = (size_t)la_threads() < heads ? (size_t)la_threads() : heads;
    if (!p->causal) {
        st = la_linear_workspace_bytes(LA_KERNEL_LINEAR, &lay->inner, elem, &inner_bytes);
        if (st != LA_OK) return st;
    }
    lay->inner.feature_map = LA_FEATURE_IDENTITY;
    if (!la_mul_ok(m, p->d_k, &n) || !la_mul_ok(n, sizeof(double) + (elem == 4 ? 4 : 0), &a))
        return LA_EOVERFLOW;
    lay->w_bytes = a;
    lay->phi_q_elems = heads * p->n_queries * m; /* fit: checked above */
    lay->phi_k_elems = heads * p->n_keys * m;
    lay->pg_elems = heads * p->n_keys * 2;
    lay->causal_per_thread = 0;
    if (p->causal) {
        const size_t C = p->chunk < p->n_queries ? p->chunk : p->n_queries;
        size_t state, chunk_part;
        if (!la_mul_ok(m, p->d_v + 1, &state) || C + 2 > SIZE_MAX - m ||
            !la_mul_ok(C, C + 2 + m, &chunk_part))
            return LA_EOVERFLOW;
        if (recurrent) chunk_part = m; /* token by token: only ψ' of one key */
        if (state > SIZE_MAX - chunk_part || !la_mul_ok(state + chunk_part, lay->threads, &n))
            return LA_EOVERFLOW;
        lay->causal_per_thread = state + chunk_part;
    }
    const size_t causal_elems = p->causal ? n : 0;
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

/* Keys head (b, ·) turns into features: the visible ones, and causal only those some
 * query sees (j < N). */
static size_t keys_used(const la_problem *p, size_t b)
{
    const size_t m = la_keys_in_length(p, b);
    return p->causal && p->n_queries < m ? p->n_queries : m;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/favor_tmpl.h"
#include "core/real_f64.h"
#include "attention/favor_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public kernels */

la_status la_favor_attention_f32(const la_problem *p, const float *q, const float *k,
                                 const float *v, float *out)
{
    if (la_causal_square(p)) return la_square_forward_f32(p, la_favor_attention_f32, q, k, v, out);
    return favor_attention_f32(p, q, k, v, out, false);
}

la_status la_favor_attention_f64(const la_problem *p, const double *q, const double *k,
                                 const double *v, double *out)
{
    if (la_causal_square(p)) return la_square_forward_f64(p, la_favor_attention_f64, q, k, v, out);
    return favor_attention_f64(p, q, k, v, out, false);
}

la_status la_favor_attention_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, float *out)
{
    if (la_causal_square(p))
        return la_square_forward_f32(p, la_favor_attention_recurrent_f32, q, k, v, out);
    return favor_attention_f32(p, q, k, v, out, true);
}

la_status la_favor_attention_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, double *out)
{
    if (la_causal_square(p))
        return la_square_forward_f64(p, la_favor_attention_recurrent_f64, q, k, v, out);
    return favor_attention_f64(p, q, k, v, out, true);
}

/* The step API's FAVOR+ states (state.c makes them and dispatches here). */
la_status la_favor_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                            const float *v_t, float *y_t)
{
    return favor_step_f32(st, q_t, k_t, v_t, y_t);
}

la_status la_favor_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                            const double *v_t, double *y_t)
{
    return favor_step_f64(st, q_t, k_t, v_t, y_t);
}

/* ---------------------------------------------------------------- cost (la_cost_fn) */

/* One head of an entry with mv visible keys, u = keys_used of them (none visible: no
 * work); what favor_tmpl.h issues.
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
    if (mv == 0) return;
    const size_t N = p->n_queries, C = p->chunk < N ? p->chunk : N;
    const double n = (double)N, dk = (double)p->d_k, dv = (double)p->d_v;
    const double m = (double)p->features;
    const size_t used = p->causal && N < mv ? N : mv;
    const double u = (double)used;
    if (!p->causal) {
        la_problem inner = *p;
        inner.d_k = p->features;
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
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_favor_cost, false, out);
    favor_layout lay;
    la_status st = favor_layout_for(p, la_dtype_size(dtype), false, &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, favor_head_flops, out);
    out->workspace_bytes = (double)lay.total_bytes;
    return LA_OK;
}

/* The recurrent form, one head of an entry with mv visible keys, u = keys_used of them:
 * the causal features as above (flops_phi, the running max of g included), then
 * linear_recurrent's cost on m features (la_linear_head_flops, recurrent) with, per key,
 * ψ' = ψ·exp(g − μ') m + 2 and, per key after the first, the state rescaled by
 * exp(μ − μ') m·(d_v + 1) + 2 (issued whether or not the max rose: a factor of 1 then). */
static void favor_recurrent_head_flops(const la_problem *p, size_t mv, la_cost *f)
{
    if (mv == 0) return;
    const size_t N = p->n_queries, used = N < mv ? N : mv;
    const double n = (double)N, dk = (double)p->d_k, dv = (double)p->d_v;
    const double m = (double)p->features, u = (double)used;
    la_problem inner = *p;
    inner.d_k = p->features;
    la_linear_head_flops(&inner, mv, true, f);
    f->flops_phi = (n + u) * 2 * m * dk + n * 4 * m + u * (2 * dk + 4 * m + 3);
    f->flops_kv += u * (m + 2) + (u - 1) * (m * (dv + 1) + 2);
}

la_status la_favor_recurrent_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_favor_recurrent_cost, false, out);
    favor_layout lay;
    la_status st = favor_layout_for(p, la_dtype_size(dtype), true, &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, favor_recurrent_head_flops, out);
    out->workspace_bytes = (double)lay.total_bytes;
    return LA_OK;
}

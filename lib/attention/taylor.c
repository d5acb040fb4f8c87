/* taylor.c — Taylor linear attention (the feature map of Based, Arora et al. 2024): linear
 * attention on the features of the second-order Taylor series of exp,
 *   φ_q(x) = [1, σ·r·x, t·(x ⊗ x)],  φ_k(x) = [1, r·x, t·(x ⊗ x)],
 *   r = √|scale|, t = |scale|/√2, σ = the sign of scale,
 * so that φ_q(q)·φ_k(k) = 1 + s + s²/2 with s = q·k·scale: exp(s) to second order, and
 * ((s + 1)² + 1)/2 > 0 for every s, so a query that sees a key never has a zero
 * denominator. The linear engine (linear_engine.c, la_linear_scan_rows_*) runs
 * non-causal or causal-in-chunks linear attention on the features, which it asks for
 * block by block (taylor_rows: the block's rows formed into its φ scratch, never all of
 * them at once), with the key mask and key lengths as linear attention honours them.
 * Compiled once per precision (core/real_typed.h).
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major;
 *   F = 1 + d_k + d_k² features per row (d_k = 64: F = 4161; Based projects q and k to
 *   d_k = 16 first: F = 273).
 *
 * Range: a feature is at most max(1, r·a, t·a²) for a = max|x| over the rows read; past
 * T/2, or with an input not finite, the call is refused (LA_ERANGE, nothing written), and
 * causal, linear attention's range rule holds for those largest features (with d_k = F).
 * Precision: float32 also refuses when |scale|·max‖q_i‖·max‖k_j‖ > 128, past which its
 * sums keep fewer than three digits (taylor_precise).
 *
 * Backward (la_taylor_attention_backward_*, non-causal and causal, the key mask and key
 * lengths as the forward): the features, linear attention's backward on them
 * (la_linear_backward_features), then per row dx_a = ρ·G_lin,a + t·Σ_c (G_quad,ac +
 * G_quad,ca)·x_c from the features' gradient G (ρ = σ·r for a query, r for a key). Its
 * range rule: the features' and linear attention's backward rule on them, then
 * (|ρ| + 2·t·a)·Σ_e |G_e| per row at most T/8, checked before any output is written.
 * Scratch: φ(Q), φ(K) and their gradients, 2·B·H·(N + M)·F elements, d_v, then the linear
 * backward's. Oracle: la_ref_taylor_attention_backward (reference.c), pair by pair from
 * κ = 1 + s + s²/2. */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"
#include "core/alloc_large.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* The kernel's entry points and its reference (reference.c), named by its registry row. */
la_status la_taylor_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out);
la_status la_taylor_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out);
la_status la_ref_taylor_attention(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out);
la_status la_taylor_cost(const la_problem *p, la_dtype dtype, la_cost *out);
la_status la_taylor_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, const float *out, const float *d_out,
                                           float *d_q, float *d_k, float *d_v);
la_status la_taylor_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v);
la_status la_ref_taylor_attention_backward(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v);
la_status la_taylor_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out);

/* F = 1 + d_k + d_k², false when it or the features' element counts overflow. */
static bool taylor_width(size_t dk, size_t *width)
{
    size_t sq;
    if (!la_mul_ok(dk, dk, &sq) || sq > SIZE_MAX - 1 - dk) return false;
    *width = 1 + dk + sq;
    return true;
}

/* The keys of entry b whose features the scans read: the visible ones (key lengths),
 * and causal, only those a query can see (j < N). */
static size_t taylor_keys_used(const la_problem *p, size_t b)
{
    const size_t m = la_keys_in_length(p, b);
    return p->causal && p->n_queries < m ? p->n_queries : m;
}

/* The features of `rows` rows of x (rows, d_k) into phi (rows, F), r the linear part's
 * factor (with its sign). Counted: r·x and t·x, d_k each, and t·x_a·x_b, d_k², per row. */
static void taylor_rows_formed(const REAL *x, size_t rows, size_t dk, size_t width, REAL r, REAL t,
                               REAL *restrict phi)
{
    LA_COUNT(LA_COUNT_PHI, (double)rows * (double)(2 * dk + dk * dk));
    for (size_t i = 0; i < rows; i++) {
        const REAL *xi = x + i * dk;
        REAL *f = phi + i * width;
        f[0] = 1;
        for (size_t a = 0; a < dk; a++)
            f[1 + a] = r * xi[a];
        REAL *quad = f + 1 + dk;
        for (size_t a = 0; a < dk; a++) {
            const REAL ta = t * xi[a];
            for (size_t c = 0; c < dk; c++)
                quad[a * dk + c] = ta * xi[c];
        }
    }
}

enum { FEATURE_ROWS = 64 }; /* rows per task of the features */

/* The precision rule, float32 only: a denominator Σ_j φ(q)·φ(k_j) = Σ_j (1 + s_j + s_j²/2)
 * is at least half the number of keys, but its feature products sum terms as large as
 * 1 + L + L²/2, L = |scale|·Σ_a |q_a k_a| <= |scale|·‖q‖·‖k‖ (Cauchy–Schwarz): they cancel,
 * and the rounding, relative, grows as 2⁻²⁴·L². Past L = 128 that is 2⁻¹⁰ (three digits),
 * and at L = 4096 none is left; so float32 refuses (LA_ERANGE: use float64, whose 2⁻⁵³
 * keeps ten digits at L = 10⁴) when |scale|·max‖q_i‖·max‖k_j‖ over the rows it reads
 * passes TAYLOR_F32_LOGIT. */
#define TAYLOR_F32_LOGIT 128.0
static bool taylor_precise(double scale, double q_norm2, double k_norm2)
{
    return !REAL_IS_F32 || fabs(scale) * sqrt(q_norm2) * sqrt(k_norm2) <= TAYLOR_F32_LOGIT;
}

/* The backward's features of every head, in tasks of FEATURE_ROWS rows of one head and
 * side so that one head fills the threads: φ(Q) (B·H·N, F) and φ(K) (B·H·M, F), zero rows
 * for the queries of an entry that sees no key and the keys no query reads (linear
 * attention's backward reads every row). The caller has checked taylor_inputs_ok. */
static void taylor_all_features(const la_problem *p, const REAL *q, const REAL *k, size_t width,
                                REAL *phi_q, REAL *phi_k)
{
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys, dk = p->d_k;
    const double s = p->scale;
    const REAL r = (REAL)sqrt(fabs(s)), t = (REAL)(fabs(s) / sqrt(2.0));
    const size_t qb = (N + FEATURE_ROWS - 1) / FEATURE_ROWS,
                 kb = (M + FEATURE_ROWS - 1) / FEATURE_ROWS;
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(la_threads())
    for (size_t hd = 0; hd < heads; hd++)
        for (size_t task = 0; task < qb + kb; task++) {
            const size_t used = taylor_keys_used(p, hd / p->heads);
            const bool queries = task < qb;
            const size_t rows = queries ? N : M, i0 = (queries ? task : task - qb) * FEATURE_ROWS;
            const size_t i1 = i0 + FEATURE_ROWS < rows ? i0 + FEATURE_ROWS : rows;
            const REAL *x = (queries ? q + hd * N * dk : k + hd * M * dk) + i0 * dk;
            REAL *f = (queries ? phi_q + hd * N * width : phi_k + hd * M * width) + i0 * width;
            const size_t formed =
                queries ? (used ? i1 - i0 : 0) : (used > i0 ? (used < i1 ? used : i1) - i0 : 0);
            taylor_rows_formed(x, formed, dk, width, queries && s < 0 ? -r : r, t, f);
            memset(f + formed * width, 0, (i1 - i0 - formed) * width * sizeof(REAL));
        }
}

/* What the forward's row hook reads (la_linear_rows_*): the factors and the sizes. */
typedef struct {
    REAL r, rq, t; /* rq = σ·r, the queries' linear factor */
    size_t dk, width;
} taylor_form;

static void taylor_rows(const FN(la_linear_rows) * h, bool query, const REAL *x, size_t n,
                        REAL *out)
{
    const taylor_form *f = h->ctx;
    taylor_rows_formed(x, n, f->dk, f->width, query ? f->rq : f->r, f->t, out);
}

/* The largest |x| and ‖x‖² over the rows the forward reads (the queries of an entry that
 * sees a key, its keys taylor_keys_used), in double: +inf or NaN from a value that is not
 * finite. */
static void taylor_scan(const la_problem *p, const REAL *x, bool queries, double *max_abs,
                        double *max_norm2)
{
    const size_t heads = p->batch * p->heads, dk = p->d_k;
    const size_t n = queries ? p->n_queries : p->n_keys;
    double a = 0, n2 = 0;
    bool finite = true;
#pragma omp parallel for schedule(static) num_threads(la_threads()) reduction(max : a, n2)         \
    reduction(&& : finite)
    for (size_t hd = 0; hd < heads; hd++) {
        const size_t used = taylor_keys_used(p, hd / p->heads);
        const size_t rows = queries ? (used ? n : 0) : used;
        const REAL *xh = x + hd * n * dk;
        for (size_t i = 0; i < rows; i++) {
            double s = 0, m = 0;
#pragma omp simd reduction(+ : s) reduction(max : m)
            for (size_t c = 0; c < dk; c++) {
                const double e = (double)xh[i * dk + c];
                s += e * e;
                m = fabs(e) > m ? fabs(e) : m;
            }
            finite = finite && s <= DBL_MAX; /* false for inf and NaN */
            a = m > a ? m : a;
            n2 = s > n2 ? s : n2;
        }
    }
    *max_abs = finite ? a : INFINITY;
    *max_norm2 = finite ? n2 : INFINITY;
}

/* The rules the forward and the backward check before they form a feature, from one scan
 * of the rows read (taylor_scan): every feature finite (the largest, *fq for the queries
 * and *fk for the keys, is max(1, r·a, t·a²), a = max|x|; refused past T/2, where the
 * rounding of t·x_a·x_b could reach T, and for an input not finite) and float32's
 * precision (taylor_precise). False: the call refuses (LA_ERANGE). */
static bool taylor_inputs_ok(const la_problem *p, const REAL *q, const REAL *k, double *fq,
                             double *fk)
{
    const double s = p->scale, r = (double)(REAL)sqrt(fabs(s));
    const double t = (double)(REAL)(fabs(s) / sqrt(2.0));
    double aq, ak, q_norm2, k_norm2;
    taylor_scan(p, q, true, &aq, &q_norm2);
    taylor_scan(p, k, false, &ak, &k_norm2);
    *fq = fmax(1, fmax(r * aq, t * aq * aq));
    *fk = fmax(1, fmax(r * ak, t * ak * ak));
    return *fq <= (double)REAL_MAX / 2 && *fk <= (double)REAL_MAX / 2 &&
           taylor_precise(s, q_norm2, k_norm2);
}

/* The forward: linear attention (la_linear_scan_rows) on the features, formed block by block
 * inside the scan (never all of them at once), after taylor_inputs_ok and, causal, the
 * linear range rule on the features (la_range_fits with d_k = F and the largest
 * features). */
static la_status taylor_attention(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                  REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    if (p->mask) return LA_EINVAL; /* a general mask: not with a shared state (linattn.h) */
    if (!(fabs(p->scale) <= REAL_MAX)) return LA_EINVAL; /* a scale the type cannot hold */
    const size_t dk = p->d_k;
    size_t width;
    if (!taylor_width(dk, &width)) return LA_EOVERFLOW;
    double fq, fk;
    if (!taylor_inputs_ok(p, q, k, &fq, &fk)) return LA_ERANGE;
    la_problem inner = *p; /* linear attention on the features */
    inner.d_k = width;
    inner.feature_map = LA_FEATURE_IDENTITY;
    if (p->causal &&
        !FN(la_range_fits)(LA_RANGE_LINEAR, &inner, fq, fk, FN(la_max_abs_seen)(p, v, p->d_v)))
        return LA_ERANGE;
    const double s = p->scale;
    const REAL r = (REAL)sqrt(fabs(s)), t = (REAL)(fabs(s) / sqrt(2.0));
    const taylor_form form = {r, s < 0 ? -r : r, t, dk, width};
    const FN(la_linear_rows) rows = {dk, taylor_rows, &form};
    return FN(la_linear_scan_rows)(&inner, &rows, q, k, v, out);
}

#if REAL_IS_F32
la_status la_taylor_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
#else
la_status la_taylor_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
#endif
{
    if (la_causal_square(p)) return FN(la_square_forward)(p, FN(la_taylor_attention), q, k, v, out);
    return taylor_attention(p, q, k, v, out);
}

/* ---------------------------------------------------------------- backward */

/* The backward's scratch in elements: φ(Q), φ(K) and their gradients, 2·B·H·(N + M)·F,
 * and d_v, B·H·M·d_v; false when it overflows. */
static bool taylor_backward_elems(const la_problem *p, size_t width, size_t *elems)
{
    size_t heads, rows, feat, dv;
    return la_mul_ok(p->batch, p->heads, &heads) &&
           la_mul_ok(heads, p->n_queries + p->n_keys, &rows) && la_mul_ok(rows, width, &feat) &&
           feat <= SIZE_MAX / 2 && la_mul_ok(heads * p->n_keys, p->d_v, &dv) &&
           dv <= SIZE_MAX - 2 * feat && (*elems = 2 * feat + dv, true);
}

/* The gradient of one row x (d_k) from its features' gradient G (F): with f = [1, ρ·x,
 * t·x⊗x] (ρ = σ·r for a query, r for a key),
 *   dx_a = ρ·G_lin,a + t·Σ_c (G_quad,ac + G_quad,ca)·x_c.
 * Counted: 3·d_k² (the pair's add, then a multiply-add) + 3·d_k per row. */
static void taylor_row_grad(const REAL *restrict x, const REAL *restrict G, size_t dk, REAL rho,
                            REAL t, REAL *restrict dx)
{
    LA_COUNT(LA_COUNT_PHI, 3 * (double)dk * (double)dk + 3 * (double)dk);
    const REAL *lin = G + 1, *quad = G + 1 + dk;
    for (size_t a = 0; a < dk; a++) {
        REAL acc = 0;
        for (size_t c = 0; c < dk; c++)
            acc += (quad[a * dk + c] + quad[c * dk + a]) * x[c];
        dx[a] = rho * lin[a] + t * acc;
    }
}

/* A bound on the gradient taylor_row_grad forms from the rows of G (rows, F): each entry
 * is at most (|ρ| + 2·t·a)·Σ_e |G_e| of its row, a = max|x|; +inf or NaN when a value is
 * not finite. */
static double taylor_grad_bound(const REAL *G, size_t rows, size_t width, double rho, double t,
                                double a)
{
    double bound = 0;
    for (size_t i = 0; i < rows; i++) {
        double sum = 0;
        for (size_t e = 0; e < width; e++)
            sum += fabs((double)G[i * width + e]);
        bound = sum > bound || sum != sum ? sum : bound; /* a NaN stays */
    }
    return (fabs(rho) + 2 * t * a) * bound;
}

/* Taylor attention's backward: the features as the forward forms them, linear attention's
 * backward on them (la_linear_backward_features: dφ(Q), dφ(K), d_v), then each row's
 * gradient through its features (taylor_row_grad), bounded before any output is written
 * (taylor_grad_bound against T/8; d_v waits in scratch). Scratch: φ(Q), φ(K) and their
 * gradients, 2·B·H·(N + M)·F elements, d_v B·H·M·d_v, then the linear backward's on F
 * features. */
static la_status taylor_backward(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                 const REAL *out, const REAL *d_out, REAL *d_q, REAL *d_k,
                                 REAL *d_v)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || !d_out || !d_q || !d_k || !d_v) return LA_EINVAL;
    if (p->mask) return LA_EINVAL; /* a general mask: refused, as the forward */
    if (!(fabs(p->scale) <= REAL_MAX)) return LA_EINVAL;
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys, dk = p->d_k;
    size_t width, elems, bytes;
    if (!taylor_width(dk, &width) || !taylor_backward_elems(p, width, &elems) ||
        !la_mul_ok(elems, sizeof(REAL), &bytes))
        return LA_EOVERFLOW;
    if (bytes > p->workspace_limit) return LA_EBUDGET;
    double fq, fk;
    if (!taylor_inputs_ok(p, q, k, &fq, &fk)) return LA_ERANGE; /* as the forward refuses */
    REAL *phi = la_alloc_large(bytes ? bytes : 1);
    if (!phi) return LA_ENOMEM;
    REAL *phi_q = phi, *phi_k = phi_q + heads * N * width;
    REAL *dphi_q = phi_k + heads * M * width, *dphi_k = dphi_q + heads * N * width;
    REAL *dv_own = dphi_k + heads * M * width;

    const double s = p->scale;
    const REAL r = (REAL)sqrt(fabs(s)), t = (REAL)(fabs(s) / sqrt(2.0)), rq = s < 0 ? -r : r;
    const int threads = la_threads();
    taylor_all_features(p, q, k, width, phi_q, phi_k);
    la_problem inner = *p; /* linear attention on the features */
    inner.d_k = width;
    inner.feature_map = LA_FEATURE_IDENTITY;
    inner.workspace_limit = p->workspace_limit - bytes;
    st = FN(la_linear_backward_features)(&inner, phi_q, phi_k, v, out, d_out, dphi_q, dphi_k,
                                         dv_own);
    if (st == LA_OK) { /* the chain rule's values bounded before any output is written */
        const double aq = FN(la_max_abs)(q, heads * N * dk), ak = FN(la_max_abs_seen)(p, k, dk);
        double bound = 0;
#pragma omp parallel for schedule(dynamic) num_threads(threads) reduction(max : bound)
        for (size_t hd = 0; hd < heads; hd++) {
            const size_t used = taylor_keys_used(p, hd / p->heads);
            const double x =
                fmax(taylor_grad_bound(dphi_q + hd * N * width, used ? N : 0, width, rq, t, aq),
                     taylor_grad_bound(dphi_k + hd * M * width, used, width, r, t, ak));
            bound = x <= (double)REAL_MAX / 8 ? fmax(bound, x) : INFINITY; /* NaN too */
        }
        if (!(bound <= (double)REAL_MAX / 8)) st = LA_ERANGE;
    }
    if (st == LA_OK) {
        memcpy(d_v, dv_own, heads * M * p->d_v * sizeof(REAL));
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < heads; hd++) {
            const size_t used = taylor_keys_used(p, hd / p->heads);
            REAL *dq = d_q + hd * N * dk, *dkh = d_k + hd * M * dk;
            if (!used) memset(dq, 0, N * dk * sizeof(REAL)); /* the empty rows */
            for (size_t i = 0; used && i < N; i++)
                taylor_row_grad(q + (hd * N + i) * dk, dphi_q + (hd * N + i) * width, dk, rq, t,
                                dq + i * dk);
            for (size_t j = 0; j < used; j++)
                taylor_row_grad(k + (hd * M + j) * dk, dphi_k + (hd * M + j) * width, dk, r, t,
                                dkh + j * dk);
            memset(dkh + used * dk, 0, (M - used) * dk * sizeof(REAL)); /* keys no query sees */
        }
        FN(la_linear_hide_key_grads)(p, d_k); /* keys the key mask hides: 0 */
    }
    free(phi);
    return st;
}

#if REAL_IS_F32
la_status la_taylor_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, const float *out, const float *d_out,
                                           float *d_q, float *d_k, float *d_v)
#else
la_status la_taylor_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v)
#endif
{
    if (la_causal_square(p))
        return FN(la_square_backward)(p, FN(la_taylor_attention_backward), q, k, v, out, d_out, d_q,
                                      d_k, d_v);
    return taylor_backward(p, q, k, v, out, d_out, d_q, d_k, d_v);
}

#if REAL_IS_F32
/* ---------------------------------------------------------------- cost (la_cost_fn) */

/* One head of an entry with m visible keys: the features of the N queries and of the u
 * keys the scan reads (taylor_keys_used), 2·d_k + d_k² each; then linear attention on
 * them with d_k = F and φ the identity (la_linear_head_flops). */
static void taylor_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return; /* no key seen: zeros, and the features are not formed */
    la_problem inner = *p;
    taylor_width(p->d_k, &inner.d_k); /* la_taylor_cost checked that it fits */
    la_linear_head_flops(&inner, m, false, f);
    const double dk = (double)p->d_k;
    const double used = (double)(p->causal && p->n_queries < m ? p->n_queries : m);
    f->flops_phi = ((double)p->n_queries + used) * (2 * dk + dk * dk);
}

/* workspace_bytes: what the scan holds for F features (the features themselves a block at a
 * time, in its φ blocks); bytes_min beyond the inputs and outputs: S and z on F features
 * per head, 2·(F·d_v + F), as linear attention's on d_k. */
la_status la_taylor_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_taylor_cost, false, out);
    size_t width, scan_bytes;
    if (!taylor_width(p->d_k, &width)) return LA_EOVERFLOW;
    la_cost_sum_heads(p, taylor_head_flops, out);
    la_problem inner = *p;
    inner.d_k = width;
    inner.feature_map = LA_FEATURE_ELU1; /* the scan's layout does not depend on φ */
    const size_t elem = la_dtype_size(dtype);
    la_status st = la_linear_scan_bytes(&inner, false, elem, &scan_bytes);
    if (st != LA_OK) return st;
    const double heads = (double)p->batch * (double)p->heads, f = (double)width;
    out->workspace_bytes = (double)scan_bytes;
    out->bytes_min = heads * 2 * (f * (double)p->d_v + f) * (double)elem;
    return LA_OK;
}

/* The backward, one head of an entry with m visible keys: the features of the N queries
 * and the u keys, 2·d_k + d_k² each (as the forward); linear attention's backward on them
 * (la_linear_backward_head_flops with d_k = F, φ the identity); each of those rows'
 * gradient through its features, 3·d_k² + 3·d_k (taylor_row_grad); all of φ in
 * flops_phi. */
static void taylor_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return;
    la_problem inner = *p;
    taylor_width(p->d_k, &inner.d_k); /* la_taylor_backward_cost checked that it fits */
    inner.feature_map = LA_FEATURE_IDENTITY;
    la_linear_backward_head_flops(&inner, m, f);
    const double dk = (double)p->d_k;
    const double used = (double)(p->causal && p->n_queries < m ? p->n_queries : m);
    f->flops_phi = ((double)p->n_queries + used) * ((2 * dk + dk * dk) + (3 * dk * dk + 3 * dk));
}

/* workspace_bytes: taylor_backward_elems (φ(Q), φ(K), their gradients, d_v), then the
 * linear backward's scratch on F features. */
la_status la_taylor_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_taylor_backward_cost, true, out);
    size_t width, scan_bytes;
    if (!taylor_width(p->d_k, &width)) return LA_EOVERFLOW;
    la_cost_sum_heads(p, taylor_backward_head_flops, out);
    la_problem inner = *p;
    inner.d_k = width;
    const size_t elem = la_dtype_size(dtype);
    la_status st = la_linear_backward_workspace_bytes(&inner, elem, &scan_bytes);
    if (st != LA_OK) return st;
    size_t elems;
    if (!taylor_backward_elems(p, width, &elems)) return LA_EOVERFLOW;
    out->workspace_bytes = (double)elems * (double)elem + (double)scan_bytes;
    return LA_OK;
}

/* ---------------------------------------------------------------- registry row */

static const la_kernel_fns taylor_fns = {
    .forward_f32 = la_taylor_attention_f32,
    .forward_f64 = la_taylor_attention_f64,
    .reference = la_ref_taylor_attention,
    .cost = la_taylor_cost,
    .backward_f32 = la_taylor_attention_backward_f32,
    .backward_f64 = la_taylor_attention_backward_f64,
    .reference_backward = la_ref_taylor_attention_backward,
    .backward_cost = la_taylor_backward_cost,
};

const la_kernel_info la_row_taylor = {
    .kernel = LA_KERNEL_TAYLOR,
    .name = "taylor",
    .summary = "Taylor linear attention (Based, Arora et al. 2024): linear on the features "
               "[1, x, x⊗x/√2] of exp's second-order series, 1 + s + s²/2; causal: in chunks",
    .series = {"taylor", "taylor_causal_chunked"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE | LA_PARAM_EPS | LA_PARAM_CHUNK,
    .masks = LA_MASK_KEY,
    .caps = LA_CAP_ROTARY | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD,
    .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
    .time_exponent = 1,
    .family = "linear",
    .fns = &taylor_fns,
};
#endif

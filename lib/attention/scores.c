/* scores.c — softmax attention over the score functions other than the dot product, in
 * float and double: general s = q·W·k · scale, additive s = vᵀtanh(W_q q + W_k k), cosine
 * s = cos(q, k) · scale (dot and scaled dot are the softmax kernel at scale 1 and 1/√d_k).
 * general and cosine transform their inputs (K' = K Wᵀ; Q̂, K̂ normalized) and hand them to
 * the fused softmax kernel; additive forms A = Q W_qᵀ and C = K W_kᵀ, then scores its
 * visible pairs block by block with the fused kernel's online softmax. The kernels are
 * written once in scores_tmpl.h and instantiated here twice (core/real_f32.h explains how);
 * the seeded draw of the weights, the public functions and the costs are written out below.
 * Contracts in lib/linattn.h ("SCORE FUNCTIONS"). */
#include "attention/attention_internal.h"
#include "cpu/vexp.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Queries per task and keys per score block of the additive kernel: the fused softmax
 * kernel's (internal.h). */
enum { Q_BLOCK = LA_SOFTMAX_Q_BLOCK, K_BLOCK = LA_SOFTMAX_K_BLOCK };

/* cosine: x̂ = x / max(‖x‖, NORM_EPS), PyTorch's F.normalize eps */
#define NORM_EPS 1e-12

/* ---------------------------------------------------------------- the seeded draw */

/* splitmix64 */
static uint64_t next_u64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* How many weights a kernel draws and their standard deviations: W's n_w entries, then
 * v's n_v (la_score_weights documents them). The sizes are checked by the callers. */
typedef struct {
    size_t n_w, n_v;
    double sd_w, sd_v;
} weight_shape;

static weight_shape shape_of(la_kernel kernel, size_t dk, size_t da)
{
    if (kernel == LA_KERNEL_GENERAL) return (weight_shape){dk * dk, 0, 1 / sqrt((double)dk), 0};
    return (weight_shape){da * 2 * dk, da, 1 / sqrt(2.0 * (double)dk), 1 / sqrt((double)da)};
}

/* The n_w + n_v draws of shape s from seed, W's then v's, into the float64 pair (w64, v64)
 * or the float32 pair (w32, v32) (the other pair NULL; v NULL when n_v is 0): a float32
 * entry is the float64 entry rounded, so both precisions see the same draw. */
static void draw_weights(weight_shape s, uint64_t seed, double *w64, double *v64, float *w32,
                         float *v32)
{
    const double two_pi = 6.283185307179586476925286766559;
    uint64_t state = seed;
    double spare = 0;
    for (size_t i = 0; i < s.n_w + s.n_v; i++) {
        double z;
        if (i % 2 == 0) {
            /* Box–Muller: u1 in [0, 1), so 1 - u1 in (0, 1] and the log is finite */
            const double u1 = (double)(next_u64(&state) >> 11) * 0x1.0p-53;
            const double u2 = (double)(next_u64(&state) >> 11) * 0x1.0p-53;
            const double r = sqrt(-2.0 * log(1.0 - u1));
            z = r * cos(two_pi * u2);
            spare = r * sin(two_pi * u2);
        } else {
            z = spare;
        }
        const bool is_w = i < s.n_w;
        const size_t at = is_w ? i : i - s.n_w;
        const double value = z * (is_w ? s.sd_w : s.sd_v);
        if (w64)
            (is_w ? w64 : v64)[at] = value;
        else
            (is_w ? w32 : v32)[at] = (float)value;
    }
}

/* The element counts of W and v for kernel, overflow-checked (their float64 bytes fit). */
static la_status weight_counts(la_kernel kernel, size_t dk, size_t da, weight_shape *s)
{
    size_t n, bytes;
    if (kernel == LA_KERNEL_GENERAL) {
        if (!la_mul_ok(dk, dk, &n) || !la_mul_ok(n, sizeof(double), &bytes)) return LA_EOVERFLOW;
    } else {
        if (!la_mul_ok(da, dk, &n) || !la_mul_ok(n, 2 * sizeof(double), &bytes) ||
            !la_mul_ok(da, sizeof(double), &bytes))
            return LA_EOVERFLOW;
    }
    *s = shape_of(kernel, dk, da);
    return LA_OK;
}

la_status la_score_weights(la_kernel kernel, size_t d_k, size_t d_a, uint64_t seed, double *w,
                           double *v)
{
    if (kernel != LA_KERNEL_GENERAL && kernel != LA_KERNEL_ADDITIVE) return LA_EINVAL;
    if (!w || d_k == 0) return LA_EINVAL;
    if (kernel == LA_KERNEL_ADDITIVE && (!v || v == w || d_a == 0)) return LA_EINVAL;
    weight_shape s;
    la_status st = weight_counts(kernel, d_k, d_a, &s);
    if (st != LA_OK) return st;
    draw_weights(s, seed, w, kernel == LA_KERNEL_ADDITIVE ? v : NULL, NULL, NULL);
    return LA_OK;
}

/* ---------------------------------------------------------------- shared by both precisions */

/* Whether every entry of x (n doubles) is finite; max |x| and Σ |x| into *max_abs, *sum_abs. */
static bool finite_abs(const double *x, size_t n, double *max_abs, double *sum_abs)
{
    double m = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) return false;
        const double a = fabs(x[i]);
        m = a > m ? a : m;
        s += a;
    }
    *max_abs = m;
    *sum_abs = s;
    return true;
}

/* The largest |entry| a drawn weight of standard deviation sd can have: a Box–Muller |z| is
 * below 8.6 (u1 >= 2⁻⁵³), so 9·sd. */
static double drawn_bound(double sd)
{
    return 9 * sd;
}

/* 64-byte multiples, SIZE_MAX when that does not fit. */
static size_t round_up_64(size_t bytes)
{
    return bytes > SIZE_MAX - 63 ? SIZE_MAX : (bytes + 63) / 64 * 64;
}

/* What a general or cosine call holds, in elements of its precision, before the fused
 * softmax kernel's own scratch:
 *   general: W as the call reads it (float32: converted or drawn; float64: drawn; none when
 *     given), d_k², then K' (B, H, M, d_k);
 *   cosine: Q̂ (B, H, N, d_k) then K̂ (B, H, M, d_k). */
typedef struct {
    size_t first, second, total;
} transform_layout;

static la_status general_layout_for(const la_problem *p, size_t elem, transform_layout *lay)
{
    weight_shape s;
    la_status st = weight_counts(LA_KERNEL_GENERAL, p->d_k, p->score_dim, &s);
    if (st != LA_OK) return st;
    lay->first = elem == sizeof(float) || !p->score_w ? s.n_w : 0;
    lay->second = p->batch * p->heads * p->n_keys * p->d_k; /* fits: la_problem_check */
    if (lay->first > SIZE_MAX - lay->second) return LA_EOVERFLOW;
    lay->total = lay->first + lay->second;
    size_t bytes;
    return la_mul_ok(lay->total, elem, &bytes) ? LA_OK : LA_EOVERFLOW;
}

static la_status cosine_layout_for(const la_problem *p, size_t elem, transform_layout *lay)
{
    const size_t heads = p->batch * p->heads; /* these fit: la_problem_check */
    lay->first = heads * p->n_queries * p->d_k;
    lay->second = heads * p->n_keys * p->d_k;
    if (lay->first > SIZE_MAX - lay->second) return LA_EOVERFLOW;
    lay->total = lay->first + lay->second;
    size_t bytes;
    return la_mul_ok(lay->total, elem, &bytes) ? LA_OK : LA_EOVERFLOW;
}

/* What an additive call holds, in bytes: W and v as the call reads them (float32: converted
 * or drawn; float64: drawn; none when given), A (B, H, N, d_a) and C (B, H, M, d_a), all
 * rounded up to a 64-byte line; then per thread a bq × bk score block and bq row maxima and
 * sums (bq = min(N, 64), bk = min(M, 256)), rounded up to a line, for min(threads, tasks)
 * threads. The kernel and la_additive_cost both read it here. */
typedef struct {
    size_t w, v, a, c;           /* elements */
    size_t shared, per_thread;   /* bytes */
    size_t bq, bk, tasks, total; /* total: bytes, for `threads` threads */
    int threads;
} additive_layout;

static la_status additive_layout_for(const la_problem *p, size_t elem, additive_layout *lay)
{
    weight_shape s;
    la_status st = weight_counts(LA_KERNEL_ADDITIVE, p->d_k, p->score_dim, &s);
    if (st != LA_OK) return st;
    const bool own = elem == sizeof(float) || !p->score_w;
    lay->w = own ? s.n_w : 0;
    lay->v = own ? s.n_v : 0;
    const size_t heads = p->batch * p->heads, da = p->score_dim;
    size_t rows_a, rows_c, elems, bytes;
    if (!la_mul_ok(heads, p->n_queries, &rows_a) || !la_mul_ok(rows_a, da, &lay->a) ||
        !la_mul_ok(heads, p->n_keys, &rows_c) || !la_mul_ok(rows_c, da, &lay->c))
        return LA_EOVERFLOW;
    elems = lay->w;
    if (lay->v > SIZE_MAX - elems) return LA_EOVERFLOW;
    elems += lay->v;
    if (lay->a > SIZE_MAX - elems) return LA_EOVERFLOW;
    elems += lay->a;
    if (lay->c > SIZE_MAX - elems) return LA_EOVERFLOW;
    elems += lay->c;
    if (!la_mul_ok(elems, elem, &bytes) || bytes > SIZE_MAX - 63) return LA_EOVERFLOW;
    lay->shared = round_up_64(bytes);
    lay->bq = p->n_queries < Q_BLOCK ? p->n_queries : Q_BLOCK;
    lay->bk = p->n_keys < K_BLOCK ? p->n_keys : K_BLOCK;
    lay->per_thread = round_up_64((lay->bq * lay->bk + 2 * lay->bq) * elem);
    const size_t q_blocks = (p->n_queries + Q_BLOCK - 1) / Q_BLOCK;
    if (!la_mul_ok(heads, q_blocks, &lay->tasks)) return LA_EOVERFLOW;
    int threads = la_threads();
    if ((size_t)threads > lay->tasks) threads = (int)lay->tasks;
    lay->threads = threads;
    if (!la_mul_ok(lay->per_thread, (size_t)threads, &bytes) || bytes > SIZE_MAX - lay->shared)
        return LA_EOVERFLOW;
    lay->total = lay->shared + bytes;
    return LA_OK;
}

/* The checks every score kernel makes first: a checked problem and no NULL pointer. */
static la_status score_check(const la_problem *p, const void *q, const void *k, const void *v,
                             const void *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    return LA_OK;
}

/* The fused softmax kernel's problem on the transformed inputs: p itself, with the budget
 * left after `held` bytes. */
static la_problem inner_problem(const la_problem *p, size_t held)
{
    la_problem in = *p;
    in.workspace_limit = p->workspace_limit - held;
    return in;
}

static inline float tanh_of_f32(float x)
{
    return tanhf(x);
}
static inline double tanh_of_f64(double x)
{
    return tanh(x);
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/scores_tmpl.h"
#include "core/real_f64.h"
#include "attention/scores_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public kernels */

la_status la_general_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out)
{
    return general_attention_f32(p, q, k, v, out);
}

la_status la_general_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    return general_attention_f64(p, q, k, v, out);
}

la_status la_additive_attention_f32(const la_problem *p, const float *q, const float *k,
                                    const float *v, float *out)
{
    return additive_attention_f32(p, q, k, v, out);
}

la_status la_additive_attention_f64(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out)
{
    return additive_attention_f64(p, q, k, v, out);
}

la_status la_cosine_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
{
    return cosine_attention_f32(p, q, k, v, out);
}

la_status la_cosine_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    return cosine_attention_f64(p, q, k, v, out);
}

/* ---------------------------------------------------------------- their costs (la_cost_fn) */

/* Softmax's count of one head's visible pairs: QKᵀ 2·d_k, softmax 5, P·V 2·d_v per pair. */
static void softmax_fields(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    f->flops_qk = 2 * pairs * (double)p->d_k;
    f->flops_softmax = 5 * pairs;
    f->flops_av = 2 * pairs * (double)p->d_v;
}

/* general, one head with m keys in length: K' = K Wᵀ over them, 2·m·d_k², then softmax. */
static void general_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    softmax_fields(p, m, f);
    f->flops_kv = 2 * (double)m * (double)p->d_k * (double)p->d_k;
}

/* cosine, one head with m keys in length: N + m rows normalized, 3·d_k + 1 each (none when
 * m = 0: no query sees a key), then softmax. */
static void cosine_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    softmax_fields(p, m, f);
    if (m > 0) f->flops_phi = ((double)p->n_queries + (double)m) * (3 * (double)p->d_k + 1);
}

/* additive, one head with m keys in length (none: no work): A = Q W_qᵀ 2·N·d_a·d_k, C = K
 * W_kᵀ 2·m·d_a·d_k, scores 4·d_a per visible pair, softmax 5 and P·V 2·d_v per pair. */
static void additive_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return;
    const double pairs = la_visible_pairs_of(p, m), da = (double)p->score_dim;
    const double dk = (double)p->d_k;
    f->flops_qs = 2 * (double)p->n_queries * da * dk;
    f->flops_kv = 2 * (double)m * da * dk;
    f->flops_qk = 4 * pairs * da;
    f->flops_softmax = 5 * pairs;
    f->flops_av = 2 * pairs * (double)p->d_v;
}

/* What a transforming kernel holds, then the fused softmax kernel's scratch. */
static la_status transform_cost(const la_problem *p, la_dtype dtype, const transform_layout *lay,
                                la_cost *out)
{
    const la_problem in = inner_problem(p, 0);
    la_cost inner = {0};
    la_status st = la_softmax_cost(&in, dtype, &inner);
    if (st != LA_OK) return st;
    out->workspace_bytes =
        (double)lay->total * (double)la_dtype_size(dtype) + inner.workspace_bytes;
    return LA_OK;
}

la_status la_general_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    transform_layout lay;
    la_status st = general_layout_for(p, la_dtype_size(dtype), &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, general_head_flops, out);
    return transform_cost(p, dtype, &lay, out);
}

la_status la_cosine_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    transform_layout lay;
    la_status st = cosine_layout_for(p, la_dtype_size(dtype), &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, cosine_head_flops, out);
    return transform_cost(p, dtype, &lay, out);
}

la_status la_additive_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    additive_layout lay;
    la_status st = additive_layout_for(p, la_dtype_size(dtype), &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, additive_head_flops, out);
    out->workspace_bytes = (double)lay.total;
    return LA_OK;
}

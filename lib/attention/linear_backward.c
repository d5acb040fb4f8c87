/* linear_backward.c — the backward passes of linear attention (non-causal, chunked causal,
 * recurrent) in float and double, and their cost: the code is written once in
 * linear_backward_tmpl.h and instantiated here twice (core/real_f32.h explains how); the
 * public functions and the cost functions are written out at the end. */
#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

/* Block sizes of the non-causal backward, fixed whatever the thread count (so the rounding
 * is too): queries or keys per product, and per task of the phases that add partial
 * states in piece order. */
#define LA_BWD_BLOCK 128
#define LA_BWD_PIECE 512 /* whole blocks */

/* a + b and a·b + c without overflow: false when they do not fit. */
static bool add_ok(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b) return false;
    *out = a + b;
    return true;
}

static bool mul_add_ok(size_t a, size_t b, size_t c, size_t *out)
{
    size_t ab;
    return la_mul_ok(a, b, &ab) && add_ok(ab, c, out);
}

/* Rows of the non-causal backward's φ block: no block holds more queries or keys. */
static size_t backward_rows(const la_problem *p)
{
    const size_t n = p->n_queries > p->n_keys ? p->n_queries : p->n_keys;
    return n < LA_BWD_BLOCK ? n : LA_BWD_BLOCK;
}

/* Scratch of one backward call, in elements: `shared` once, then `per_thread` for each of
 * `threads` threads (at most one thread per task). */
typedef struct {
    size_t threads, shared, per_thread, total;
} backward_layout;

/* The one description of what each backward allocates (the kernels carve their buffers
 * out of it, the cost reports it), with state = d_v·d_k + d_k (one head's [Sᵀ z]):
 *   non-causal: per head [Sᵀ z], [dSᵀ dz] and dS, heads·(2·state + d_k·d_v); per thread a
 *     φ block, G and c of rows = min(128, max(N, M)) queries, and one partial state,
 *     rows·(d_k + d_v + 1) + state. Independent of N and M beyond 128.
 *   chunked (C = min(chunk, N)): per head the carried state and den, heads·(state + N);
 *     per thread φ(Q_c), φ(K_c), φKᵀ, A, Bᵀ, G, Gᵀ, c, C·(3·d_k + 2·C + 2·d_v + 1), the
 *     snapshot, the chunk's Δ and dS, 2·state + d_k·d_v. Linear in N: N per head.
 *   recurrent: den of every head, heads·N; per thread S (or dS), z (or dz), φ(q_t),
 *     φ(k_t), g_t: d_k·d_v + 3·d_k + d_v.
 * Tasks: non-causal heads·max(query blocks, key blocks), chunked heads·chunks, recurrent
 * heads. */
static la_status backward_layout_for(const la_problem *p, la_kernel kernel, size_t threads_max,
                                     backward_layout *lay)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t heads, state, dkdv, a, b, tasks;
    if (!la_mul_ok(p->batch, p->heads, &heads) || !la_mul_ok(dk, dv, &dkdv) ||
        !add_ok(dkdv, dk, &state))
        return LA_EOVERFLOW;
    if (kernel == LA_KERNEL_LINEAR && !p->causal) {
        const size_t rows = backward_rows(p);
        const size_t q_blocks = (N + LA_BWD_BLOCK - 1) / LA_BWD_BLOCK;
        const size_t k_blocks = (M + LA_BWD_BLOCK - 1) / LA_BWD_BLOCK;
        if (!add_ok(dk, dv, &a) || !add_ok(a, 1, &a) ||
            !mul_add_ok(rows, a, state, &lay->per_thread) || !mul_add_ok(2, state, dkdv, &b) ||
            !la_mul_ok(heads, b, &lay->shared) ||
            !la_mul_ok(heads, q_blocks > k_blocks ? q_blocks : k_blocks, &tasks))
            return LA_EOVERFLOW;
    } else if (kernel == LA_KERNEL_LINEAR) {
        const size_t C = p->chunk < N ? p->chunk : N;
        size_t width;
        /* C·(3·d_k + 2·C + 2·d_v + 1) + 2·state + d_k·d_v */
        if (!mul_add_ok(3, dk, 1, &width) || !mul_add_ok(2, C, width, &width) ||
            !mul_add_ok(2, dv, width, &width) || !la_mul_ok(C, width, &a) ||
            !mul_add_ok(2, state, dkdv, &b) || !add_ok(a, b, &lay->per_thread) ||
            !add_ok(state, N, &b) || !la_mul_ok(heads, b, &lay->shared) ||
            !la_mul_ok(heads, (N + C - 1) / C, &tasks))
            return LA_EOVERFLOW;
    } else {
        if (!mul_add_ok(3, dk, dv, &a) || !add_ok(dkdv, a, &lay->per_thread) ||
            !la_mul_ok(heads, N, &lay->shared))
            return LA_EOVERFLOW;
        tasks = heads;
    }
    if (threads_max < 1) threads_max = 1;
    lay->threads = threads_max < tasks ? threads_max : tasks;
    if (!mul_add_ok(lay->threads, lay->per_thread, lay->shared, &lay->total)) return LA_EOVERFLOW;
    return LA_OK;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/linear_backward_tmpl.h"
#include "core/real_f64.h"
#include "attention/linear_backward_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public kernels */

la_status la_linear_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, const float *out, const float *d_out,
                                           float *d_q, float *d_k, float *d_v)
{
    if (la_causal_square(p))
        return la_square_backward_f32(p, la_linear_attention_backward_f32, q, k, v, out, d_out, d_q,
                                      d_k, d_v);
    if (p && p->mask) return LA_EINVAL; /* a general mask: refused (linattn.h) */
    const la_status st = linear_backward_f32(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st == LA_OK) la_linear_hide_key_grads_f32(p, d_k); /* hidden keys: d_k = 0 */
    return st;
}

la_status la_linear_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v)
{
    if (la_causal_square(p))
        return la_square_backward_f64(p, la_linear_attention_backward_f64, q, k, v, out, d_out, d_q,
                                      d_k, d_v);
    if (p && p->mask) return LA_EINVAL; /* a general mask: refused (linattn.h) */
    const la_status st = linear_backward_f64(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st == LA_OK) la_linear_hide_key_grads_f64(p, d_k); /* hidden keys: d_k = 0 */
    return st;
}

la_status la_linear_attention_recurrent_backward_f32(const la_problem *p, const float *q,
                                                     const float *k, const float *v,
                                                     const float *out, const float *d_out,
                                                     float *d_q, float *d_k, float *d_v)
{
    if (la_causal_square(p))
        return la_square_backward_f32(p, la_linear_attention_recurrent_backward_f32, q, k, v, out,
                                      d_out, d_q, d_k, d_v);
    if (p && p->mask) return LA_EINVAL; /* a general mask: refused (linattn.h) */
    const la_status st = linear_recurrent_backward_f32(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st == LA_OK) la_linear_hide_key_grads_f32(p, d_k); /* hidden keys: d_k = 0 */
    return st;
}

la_status la_linear_attention_recurrent_backward_f64(const la_problem *p, const double *q,
                                                     const double *k, const double *v,
                                                     const double *out, const double *d_out,
                                                     double *d_q, double *d_k, double *d_v)
{
    if (la_causal_square(p))
        return la_square_backward_f64(p, la_linear_attention_recurrent_backward_f64, q, k, v, out,
                                      d_out, d_q, d_k, d_v);
    if (p && p->mask) return LA_EINVAL; /* a general mask: refused (linattn.h) */
    const la_status st = linear_recurrent_backward_f64(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st == LA_OK) la_linear_hide_key_grads_f64(p, d_k); /* hidden keys: d_k = 0 */
    return st;
}

/* ---------------------------------------------------------------- their cost (la_cost_fn) */

/* What the backward kernels issue, per head of an entry with m visible keys, in the
 * backward's meaning of the la_cost fields (lib/linattn.h): φ each time a kernel computes
 * it, and 1 per element of d_q and of the seen rows of d_k for the product with φ′;
 * per query g = dO/den and c = −(dO·y)/den, 3·d_v + 1 (normalize). */

/* Non-causal: phase 1 φ(K) m·d_k, [Sᵀ z] 2·m·d_k·d_v + m·d_k (kv); phase 2 per query φ(q)
 * and φ′ 2·d_k, den 2·d_k + 1 and g, c (normalize), dφ(q) = S g + c z 2·d_k·d_v + 2·d_k
 * and [dSᵀ dz] += 2·d_k·d_v + 2·d_k (qs); phase 3 per key φ(k) and φ′ 2·d_k,
 * dφ(k) = dS v + dz 2·d_k·d_v + d_k, d_v = dSᵀ φ(k) 2·d_k·d_v (kv). */
static void noncausal_backward_head_flops(const la_problem *p, size_t keys, la_cost *f)
{
    if (keys == 0) return; /* no query sees a key: zeros, no work */
    const double n = (double)p->n_queries, m = (double)keys;
    const double dk = (double)p->d_k, dv = (double)p->d_v;
    f->flops_phi = m * dk + 2 * n * dk + 2 * m * dk;
    f->flops_kv = m * (2 * dk * dv + dk) + m * (4 * dk * dv + dk);
    f->flops_qs = n * (4 * dk * dv + 4 * dk);
    f->flops_normalize = n * (2 * dk + 1 + 3 * dv + 1);
}

/* Causal, chunked (chunks of C; u = min(N, m) keys seen; pairs_intra the visible pairs
 * inside the chunks, la_linear_pairs_intra; carried_keys = min(m, s_last) the keys a
 * later chunk sees; later_queries = N − C the queries past the first chunk):
 *   sweep 2: φ(Q), φ(K) and φ′ on d_q, (2N + u)·d_k; normalize: the running z_i u·d_k,
 *     den N·(2·d_k + 1), g, c N·(3·d_v + 1); intra-chunk per visible pair: A, B·φ(K_c) and
 *     Bᵀ·φ(Q_c) 6·d_k (qk), Bᵀ = V_c Gᵀ 2·d_v + the c add 1 and Aᵀ G 2·d_v (av);
 *     [ΔSᵀ Δz] carried_keys·(2·d_k·d_v + d_k) (kv); per later query G S_cᵀ + c z_cᵀ
 *     2·d_k·d_v + 2·d_k (qs);
 *   sweep 3: φ(K) and φ′ on d_k 2u·d_k, φ(Q) later_queries·d_k; g, c again
 *     later_queries·(3·d_v + 1); per later query [ΔdSᵀ Δdz] 2·d_k·d_v + 2·d_k (qs); per
 *     carried key V dSᵀ + dz and φ(K) dS, 4·d_k·d_v + d_k (kv).
 * Sweep 1, run for the range rule only when eps does not settle it, is not counted (a
 * check, like range.c's scans). The masked blocks are computed whole and their hidden
 * entries not counted; adding a Δ into the carried state joins partial sums and is not
 * counted (la_cost). */
static void chunked_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return;
    const size_t N = p->n_queries, C = p->chunk < N ? p->chunk : N;
    const double dk = (double)p->d_k, dv = (double)p->d_v, n = (double)N;
    const double u = (double)(N < m ? N : m);
    const size_t s_last = (N - 1) / C * C;
    const double pairs = la_linear_pairs_intra(p, m);
    const double carried_keys = (double)(m < s_last ? m : s_last);
    const double later_queries = (double)(N - C);
    f->flops_phi = (2 * n + u) * dk + 2 * u * dk + later_queries * dk;
    f->flops_normalize =
        u * dk + n * (2 * dk + 1) + n * (3 * dv + 1) + later_queries * (3 * dv + 1);
    f->flops_qk = 6 * pairs * dk;
    f->flops_av = pairs * (4 * dv + 1);
    f->flops_kv = carried_keys * (2 * dk * dv + dk) + carried_keys * (4 * dk * dv + dk);
    f->flops_qs = 2 * later_queries * (2 * dk * dv + 2 * dk);
}

/* Causal, recurrent (u = min(N, m) keys seen):
 *   pass 2: φ N·d_k + u·d_k, φ′ N·d_k; S, z updates u·(2·d_k·d_v + d_k) (kv); den
 *     N·(2·d_k + 1) and g, c N·(3·d_v + 1) (normalize); S g + c z N·(2·d_k·d_v + 2·d_k)
 *     (qs);
 *   pass 3: φ N·d_k + u·d_k, φ′ u·d_k; g, c again; dS, dz updates N·(2·d_k·d_v + 2·d_k)
 *     (qs); dS v + dz and dSᵀ φ(k) u·(4·d_k·d_v + d_k) (kv).
 * Pass 1, the range rule's when eps does not settle it, is not counted. */
static void recurrent_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return;
    const size_t N = p->n_queries;
    const double dk = (double)p->d_k, dv = (double)p->d_v, n = (double)N;
    const double u = (double)(N < m ? N : m);
    f->flops_phi = (2 * n + u) * dk + (n + 2 * u) * dk;
    f->flops_normalize = n * (2 * dk + 1) + 2 * n * (3 * dv + 1);
    f->flops_kv = u * (2 * dk * dv + dk) + u * (4 * dk * dv + dk);
    f->flops_qs = 2 * n * (2 * dk * dv + 2 * dk);
}

/* Workspace: the layout the backward allocates (backward_layout_for), at the current
 * thread count. */
static la_status backward_layout_bytes(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                       la_cost *out)
{
    backward_layout lay;
    size_t bytes;
    la_status st = backward_layout_for(p, kernel, (size_t)la_threads(), &lay);
    if (st != LA_OK) return st;
    if (!la_mul_ok(lay.total, la_dtype_size(dtype), &bytes)) return LA_EOVERFLOW;
    out->workspace_bytes = (double)bytes;
    return LA_OK;
}

la_status la_linear_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_linear_backward_cost, true, out);
    la_cost_sum_heads(p, p->causal ? chunked_backward_head_flops : noncausal_backward_head_flops,
                      out);
    return backward_layout_bytes(LA_KERNEL_LINEAR, p, dtype, out);
}

la_status la_linear_recurrent_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p))
        return la_square_cost(p, dtype, la_linear_recurrent_backward_cost, true, out);
    la_cost_sum_heads(p, recurrent_backward_head_flops, out);
    return backward_layout_bytes(LA_KERNEL_LINEAR_RECURRENT, p, dtype, out);
}

/* linear.c — linear attention kernels (non-causal, chunked causal, recurrent) in float
 * and double: the code is written once in linear_tmpl.h and instantiated here twice
 * (core/real_f32.h explains how); the public functions are written out at the end. */
#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Block sizes, fixed whatever the thread count (so the rounding is too). */
#define LA_LINEAR_KEY_BLOCK 128   /* non-causal: keys per φ(K)ᵀV product */
#define LA_LINEAR_QUERY_BLOCK 128 /* non-causal: queries per φ(Q)·S product and task */
#define LA_LINEAR_KEY_PIECE 512   /* non-causal: keys per phase-1 task (whole key blocks) */

/* a + b without overflow: false when it does not fit. */
static bool add_ok(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b) return false;
    *out = a + b;
    return true;
}

/* Scratch of one call, in elements: `shared` once, then `per_thread` for each of
 * `threads` threads (at most one thread per independent piece of work). */
typedef struct {
    size_t threads, shared, per_thread, total;
} linear_layout;

/* The one description of what each kernel allocates (the kernels carve their buffers
 * out of it, la_linear_workspace_bytes reports it):
 *   non-causal: S and z of every head, heads·d_k·(d_v + 1); per thread a φ block of
 *     max(key block, query block) rows, a partial z and a partial [S z] of one key
 *     piece, rows·d_k + d_k + d_k·(d_v + 1) (the partial is held even when every head
 *     fits in one piece, so the scratch does not depend on M);
 *   chunked (C = min(chunk, N)): the carried S and z of every head, heads·d_k·(d_v + 1);
 *     per thread φ(Q_c), A, φ(K_c) and φ(K_c)ᵀ, C(3·d_k + C), the snapshot S_c, z_c
 *     and the chunk's ΔS_c, Δz_c, 2·d_k·(d_v + 1);
 *   recurrent: per thread S, z, φ(q_t), φ(k_t): d_k·(d_v + 3).
 * Tasks: non-causal max(heads·key pieces, heads·query blocks), chunked heads·chunks,
 * recurrent heads. */
static la_status linear_layout_for(const la_problem *p, la_kernel kernel, size_t threads_max,
                                   linear_layout *lay)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t heads, tasks, state, a, b, c;
    if (!la_mul_ok(p->batch, p->heads, &heads)) return LA_EOVERFLOW;
    lay->shared = 0;
    tasks = heads;
    /* one head's [S z]: d_k·(d_v + 1) */
    if (!add_ok(dv, 1, &a) || !la_mul_ok(dk, a, &state)) return LA_EOVERFLOW;
    if (kernel == LA_KERNEL_LINEAR && !p->causal) {
        const size_t kb = M < LA_LINEAR_KEY_BLOCK ? M : LA_LINEAR_KEY_BLOCK;
        const size_t qb = N < LA_LINEAR_QUERY_BLOCK ? N : LA_LINEAR_QUERY_BLOCK;
        const size_t rows = kb > qb ? kb : qb;
        const size_t pieces = (M + LA_LINEAR_KEY_PIECE - 1) / LA_LINEAR_KEY_PIECE;
        size_t key_tasks;
        if (!la_mul_ok(heads, (N + qb - 1) / qb, &tasks) || !la_mul_ok(heads, pieces, &key_tasks) ||
            !la_mul_ok(heads, state, &lay->shared) || !add_ok(rows, 1, &b) ||
            !la_mul_ok(b, dk, &b) || !add_ok(b, state, &lay->per_thread))
            return LA_EOVERFLOW;
        if (key_tasks > tasks) tasks = key_tasks;
    } else if (kernel == LA_KERNEL_LINEAR) {
        /* per thread: φ(Q_c), A, φ(K_c) and φKᵀ, C(3·d_k + C); S_c z_c and ΔS_c Δz_c,
         * 2·d_k(d_v + 1) */
        const size_t C = p->chunk < N ? p->chunk : N;
        size_t rows, total;
        if (!la_mul_ok(dk, 3, &rows) || !add_ok(rows, C, &rows) || !la_mul_ok(C, rows, &total) ||
            !la_mul_ok(2, state, &c) || !add_ok(total, c, &lay->per_thread) ||
            !la_mul_ok(heads, state, &lay->shared) || !la_mul_ok(heads, (N + C - 1) / C, &tasks))
            return LA_EOVERFLOW;
    } else {
        if (!add_ok(dv, 3, &a) || !la_mul_ok(dk, a, &lay->per_thread)) return LA_EOVERFLOW;
    }
    if (threads_max < 1) threads_max = 1;
    lay->threads = threads_max < tasks ? threads_max : tasks;
    if (!la_mul_ok(lay->threads, lay->per_thread, &a) || !add_ok(a, lay->shared, &lay->total))
        return LA_EOVERFLOW;
    return LA_OK;
}

la_status la_linear_workspace_bytes(la_kernel kernel, const la_problem *p, size_t element_size,
                                    size_t *bytes)
{
    if (!bytes || (kernel != LA_KERNEL_LINEAR && kernel != LA_KERNEL_LINEAR_RECURRENT))
        return LA_EINVAL;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (kernel == LA_KERNEL_LINEAR_RECURRENT && !p->causal) return LA_EINVAL;
    linear_layout lay;
    st = linear_layout_for(p, kernel, (size_t)la_threads(), &lay);
    if (st != LA_OK) return st;
    if (!la_mul_ok(lay.total, element_size, bytes)) return LA_EOVERFLOW;
    return LA_OK;
}

/* Asks for `bytes` bytes from x into the cache, one request per 64-byte line: the
 * linear kernels stream their inputs once, and a block's loads otherwise wait for
 * memory between bursts of arithmetic. */
static void prefetch_rows(const void *x, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch((const char *)x + off, 0, 3);
}

/* The causal chunked kernel forms A = φ(Q_c)·φ(K_c)ᵀ and A·V_c by blocks of TRI_ROWS
 * query rows (gemm_small's tile height), each block only over the keys its rows can
 * see: rows [i0, i0 + rows) see keys j <= i < i0 + rows, of the nk the chunk has. */
enum { TRI_ROWS = 8 };
static size_t tri_keys(size_t nk, size_t i0, size_t rows)
{
    return nk < i0 + rows ? nk : i0 + rows;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "attention/linear_tmpl.h"
#include "core/real_f64.h"
#include "attention/linear_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public kernels */

la_status la_linear_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
{
    if (la_causal_square(p)) return la_square_forward_f32(p, la_linear_attention_f32, q, k, v, out);
    return linear_attention_f32(p, q, k, v, out);
}

la_status la_linear_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    if (la_causal_square(p)) return la_square_forward_f64(p, la_linear_attention_f64, q, k, v, out);
    return linear_attention_f64(p, q, k, v, out);
}

la_status la_linear_attention_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, float *out)
{
    if (la_causal_square(p))
        return la_square_forward_f32(p, la_linear_attention_recurrent_f32, q, k, v, out);
    return linear_attention_recurrent_f32(p, q, k, v, out);
}

la_status la_linear_attention_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, double *out)
{
    if (la_causal_square(p))
        return la_square_forward_f64(p, la_linear_attention_recurrent_f64, q, k, v, out);
    return linear_attention_recurrent_f64(p, q, k, v, out);
}

la_status la_linear_attention_on_features_f32(const la_problem *p, const float *phi_q,
                                              const float *phi_k, const float *v, float *out)
{
    return linear_attention_on_features_f32(p, phi_q, phi_k, v, out);
}

la_status la_linear_attention_on_features_f64(const la_problem *p, const double *phi_q,
                                              const double *phi_k, const double *v, double *out)
{
    return linear_attention_on_features_f64(p, phi_q, phi_k, v, out);
}

/* ---------------------------------------------------------------- their cost (la_cost_fn) */

/* Non-causal, one head of an entry with m visible keys:
 *   φ on N·d_k + m·d_k elements; S = φ(K)ᵀV 2·m·d_k·d_v and z = Σ φ(k_j) m·d_k;
 *   φ(Q)·S 2·N·d_k·d_v and φ(Q)·z 2·N·d_k; normalize: den + eps (N) and N·d_v divides. */
static void noncausal_head_flops(const la_problem *p, size_t keys, la_cost *f)
{
    const double m = (double)keys;
    if (m == 0) return; /* no query sees a key: zeros, no work */
    const double n = (double)p->n_queries, dk = (double)p->d_k, dv = (double)p->d_v;
    f->flops_phi = (n + m) * dk;
    f->flops_kv = 2 * m * dk * dv + m * dk;
    f->flops_qs = 2 * n * dk * dv + 2 * n * dk;
    f->flops_normalize = n * dv + n;
}

/* Causal, chunked form, one head of an entry with m visible keys: what chunk_prepare, chunk_advance
 * and chunk_finish (linear_tmpl.h) issue. Tokens are split into chunks of C; query i in chunk [s,
 * e) sees the carried state of keys [0, s) and the keys [s, i] of its own chunk (all capped at the
 * m visible keys). Every product has d_v output columns; the denominators are vector work beside
 * them (z kept beside S, A's row sums): φ on N·d_k + u·d_k, u = min(N, m) the keys any query sees;
 *   intra-chunk (flops_qk, flops_av): A = φQ_c·φK_cᵀ 2·d_k, A·V_c 2·d_v and A's row sum
 *     1 per visible pair (pairs_intra); the kernel computes the whole nq×nk block and
 *     zeroes the hidden entries above the diagonal, which are not counted;
 *   carried state (flops_kv): ΔS_c = φK_cᵀ·V_c 2·d_k·d_v and Δz_c = Σ_rows φK_c d_k per
 *     key a later chunk sees; adding ΔS_c, Δz_c into the carried state joins partial sums
 *     and is not counted (lib/linattn.h, la_cost);
 *   per query of a chunk after the first (flops_qs): φQ_c·S_c 2·d_k·d_v, φ(q_i)·z_c 2·d_k;
 *   normalize (flops_normalize): + eps and d_v divides per query. */
/* k(k + 1)/2 as a double, exact whenever the result is below 2^53 (the halving is done
 * on the even factor, before the one rounding multiply). */
static double triangle(size_t k)
{
    return k % 2 == 0 ? (double)(k / 2) * ((double)k + 1) : (double)k * (double)(k / 2 + 1);
}

/* Σ_i max(0, min(i + 1, m) - s_i) over the queries i, s_i = C·floor(i/C) the start of
 * query i's chunk: the visible pairs inside the chunks. A query i < u (u = min(N, m)) sees
 * i - s_i + 1 keys of its chunk: over 0..u-1 that is q whole chunks of C(C+1)/2 and
 * r(r+1)/2 (u = qC + r). A query i >= u exists only when m < N (u = m); it sees m - s_i,
 * which is r > 0 in the chunk holding key m - 1 and nothing in later chunks. */
double la_linear_pairs_intra(const la_problem *p, size_t m)
{
    const size_t N = p->n_queries, C = p->chunk < N ? p->chunk : N;
    const size_t used = N < m ? N : m;
    const size_t q = used / C, r = used % C;
    double pairs_intra = (double)q * triangle(C) + triangle(r);
    if (used < N && r > 0) {
        const size_t s = used - r, e = N - s > C ? s + C : N;
        pairs_intra += (double)r * (double)(e - used);
    }
    return pairs_intra;
}

static void chunked_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return;
    const size_t N = p->n_queries, C = p->chunk < N ? p->chunk : N;
    const double dk = (double)p->d_k, dv = (double)p->d_v;
    const size_t used = N < m ? N : m; /* keys j <= N - 1 that are visible */
    f->flops_phi = (double)(N + used) * dk;
    /* Closed forms of the per-chunk sums (query i is in the chunk starting at
     * s_i = C·floor(i/C)):
     *   pairs_intra = la_linear_pairs_intra;
     *   carried_queries = the queries past the first chunk, N - C;
     *   carried_keys = the visible keys of every chunk but the last, min(m, s_last). */
    const double pairs_intra = la_linear_pairs_intra(p, m);
    const size_t s_last = (N - 1) / C * C;
    const double carried_queries = (double)(N - C);
    const double carried_keys = (double)(m < s_last ? m : s_last);
    f->flops_qk = 2 * pairs_intra * dk;
    f->flops_av = pairs_intra * (2 * dv + 1);
    f->flops_kv = carried_keys * (2 * dk * dv + dk);
    f->flops_qs = carried_queries * (2 * dk * dv + 2 * dk);
    f->flops_normalize = (double)N * (dv + 1);
}

/* Causal, recurrent form, one head of an entry with m visible keys. Token t first adds its key
 * (when visible): S += φ(k_t) v_tᵀ 2·d_k·d_v, z += φ(k_t) d_k; then queries: φ(q_t)·S 2·d_k·d_v,
 * φ(q_t)·z 2·d_k; then normalizes: den + eps 1, d_v divides. φ on N·d_k + u·d_k with u = min(N, m)
 * the keys added. */
static void recurrent_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    if (m == 0) return;
    const double n = (double)p->n_queries, dk = (double)p->d_k, dv = (double)p->d_v;
    const double used = (double)(p->n_queries < m ? p->n_queries : m);
    f->flops_phi = (n + used) * dk;
    f->flops_kv = used * (2 * dk * dv + dk);
    f->flops_qs = n * (2 * dk * dv + 2 * dk);
    f->flops_normalize = n * (dv + 1);
}

/* Workspace: the layout the kernel allocates (linear_layout_for). */
static la_status layout_bytes(la_kernel kernel, const la_problem *p, la_dtype dtype, la_cost *out)
{
    size_t bytes = 0;
    la_status st = la_linear_workspace_bytes(kernel, p, la_dtype_size(dtype), &bytes);
    if (st != LA_OK) return st;
    out->workspace_bytes = (double)bytes;
    return LA_OK;
}

void la_linear_head_flops(const la_problem *p, size_t m, bool recurrent, la_cost *f)
{
    if (recurrent)
        recurrent_head_flops(p, m, f);
    else if (p->causal)
        chunked_head_flops(p, m, f);
    else
        noncausal_head_flops(p, m, f);
}

la_status la_linear_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_linear_cost, false, out);
    la_cost_sum_heads(p, p->causal ? chunked_head_flops : noncausal_head_flops, out);
    return layout_bytes(LA_KERNEL_LINEAR, p, dtype, out);
}

la_status la_linear_recurrent_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_linear_recurrent_cost, false, out);
    la_cost_sum_heads(p, recurrent_head_flops, out);
    return layout_bytes(LA_KERNEL_LINEAR_RECURRENT, p, dtype, out);
}

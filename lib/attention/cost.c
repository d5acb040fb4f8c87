/* cost.c — the FLOP and memory model of one kernel call (la_attention_cost).
 *
 * One model for the whole toolkit: the benchmarks and experiments divide these counts
 * by measured time. It counts the arithmetic of the algorithm each kernel runs, over
 * the (query, key) pairs the masks leave visible only, so a causal call costs about
 * half a full one. Conventions (also in lib/linattn.h):
 *   - a multiply-add is 2 FLOPs; an add, multiply, divide, compare, max or exp is 1;
 *   - a query that sees no key at all costs nothing (the kernels write zeros);
 *   - φ costs 1 FLOP per element (elu+1 is one add or one exp, relu one max);
 *   - bookkeeping that is not in the formula is not counted: the scale multiply (folded
 *     into q·k), the fused kernel's online rescaling, index arithmetic.
 * Every count is a total over the batch × heads problems of the call. */
#include "core/internal.h"
#include "attention/linear_internal.h"

#include <math.h>

/* Scratch geometry of the softmax kernels: the block sizes softmax.c allocates with
 * (LA_SOFTMAX_Q_BLOCK, LA_SOFTMAX_K_BLOCK in internal.h; the linear kernels report their
 * own layout through la_linear_workspace_bytes). test_cost checks workspace_bytes
 * against the kernels' workspace_limit refusals. */

/* Per-head counts, before multiplying by the number of heads. */
typedef struct {
    double qk, softmax, av, phi, kv, qs, normalize;
} head_flops;

/* Softmax (fused or materialising) and hard attention, one head of entry b:
 *   QKᵀ 2·pairs·d_k; softmax 5 per pair (row max, subtract, exp, row sum, divide);
 *   P·V 2·pairs·d_v. Hard: QKᵀ and one compare per pair (the argmax), no P·V. */
static head_flops softmax_flops(la_kernel kernel, const la_problem *p, size_t b)
{
    head_flops f = {0};
    double pairs = la_visible_pairs(p, b);
    f.qk = 2 * pairs * (double)p->d_k;
    if (kernel == LA_KERNEL_HARD) {
        f.softmax = pairs;
        return f;
    }
    f.softmax = 5 * pairs;
    f.av = 2 * pairs * (double)p->d_v;
    return f;
}

/* Linear attention, non-causal, one head of entry b, with m visible keys:
 *   φ on N·d_k + m·d_k elements; S = φ(K)ᵀV 2·m·d_k·d_v and z = Σ φ(k_j) m·d_k;
 *   φ(Q)·S 2·N·d_k·d_v and φ(Q)·z 2·N·d_k; normalise: den + eps (N) and N·d_v divides. */
static head_flops linear_flops(const la_problem *p, size_t b)
{
    head_flops f = {0};
    double m = (double)la_keys_in_length(p, b);
    if (m == 0) return f; /* no query sees a key: zeros, no work */
    double n = (double)p->n_queries, dk = (double)p->d_k, dv = (double)p->d_v;
    f.phi = (n + m) * dk;
    f.kv = 2 * m * dk * dv + m * dk;
    f.qs = 2 * n * dk * dv + 2 * n * dk;
    f.normalize = n * dv + n;
    return f;
}

/* Linear attention, causal, chunked form, one head of entry b. Tokens are split into
 * chunks of C; query i in chunk [s, e) sees the carried state of keys [0, s) and the
 * keys [s, i] of its own chunk (all capped at the m visible keys). The denominators ride
 * along as one extra column (z beside S, ones beside V_c), so each product has d_v + 1
 * output columns:
 *   φ on N·d_k + u·d_k, u = min(N, m) the keys any query sees;
 *   intra-chunk: φQ_c φK_cᵀ 2·pairs_intra·d_k (flops_qk), A·[V_c 1]
 *     2·pairs_intra·(d_v + 1) (flops_av);
 *   carried state: [S z] += φK_cᵀ[V_c 1], 2·d_k·(d_v + 1) per key a later chunk sees
 *     (flops_kv); φQ_c·[S z], 2·d_k·(d_v + 1) per query of a chunk after the first
 *     (flops_qs), accumulated with the intra-chunk part in the same product;
 *   normalise: den + eps and d_v divides per query (flops_normalize). */
static head_flops chunked_flops(const la_problem *p, size_t b)
{
    head_flops f = {0};
    size_t m = la_keys_in_length(p, b);
    if (m == 0) return f;
    const size_t N = p->n_queries, C = p->chunk;
    double dk = (double)p->d_k, dv = (double)p->d_v;
    size_t used = N < m ? N : m; /* keys j <= N - 1 that are visible */
    f.phi = (double)(N + used) * dk;
    double pairs_intra = 0, carried_keys = 0, carried_queries = 0;
    for (size_t s = 0; s < N; s += C) {
        size_t e = s + C < N ? s + C : N;
        /* queries s..e-1: intra keys [s, min(i + 1, m)) */
        for (size_t i = s; i < e; i++) {
            size_t vis = i + 1 < m ? i + 1 : m;
            if (vis > s) pairs_intra += (double)(vis - s);
        }
        if (s > 0) carried_queries += (double)(e - s); /* state of keys [0, min(s, m)) */
        /* keys of this chunk carried into later chunks */
        if (e < N && s < m) carried_keys += (double)((e < m ? e : m) - s);
    }
    f.qk = 2 * pairs_intra * dk;
    f.av = 2 * pairs_intra * (dv + 1);
    f.kv = carried_keys * 2 * dk * (dv + 1);
    f.qs = carried_queries * 2 * dk * (dv + 1);
    f.normalize = (double)N * (dv + 1);
    return f;
}

/* Linear attention, causal, recurrent form, one head of entry b. Token t first adds
 * its key (when visible): S += φ(k_t) v_tᵀ 2·d_k·d_v, z += φ(k_t) d_k; then queries:
 * φ(q_t)·S 2·d_k·d_v, φ(q_t)·z 2·d_k; then normalises: den + eps 1, d_v divides.
 * φ on N·d_k + u·d_k with u = min(N, m) the keys added. */
static head_flops recurrent_flops(const la_problem *p, size_t b)
{
    head_flops f = {0};
    size_t m = la_keys_in_length(p, b);
    if (m == 0) return f;
    double n = (double)p->n_queries, dk = (double)p->d_k, dv = (double)p->d_v;
    double used = (double)(p->n_queries < m ? p->n_queries : m);
    f.phi = (n + used) * dk;
    f.kv = used * (2 * dk * dv + dk);
    f.qs = n * (2 * dk * dv + 2 * dk);
    f.normalize = n * (dv + 1);
    return f;
}

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

/* Peak scratch bytes of one call, for the current thread count: what the kernels
 * allocate (and hold against p->workspace_limit). A kernel runs min(threads, tasks)
 * threads, each with its own slice. */
static double workspace(la_kernel kernel, const la_problem *p, size_t elem)
{
    double heads = (double)p->batch * (double)p->heads, threads = (double)la_threads();
    double n = (double)p->n_queries, m = (double)p->n_keys, e = (double)elem;
    switch (kernel) {
    case LA_KERNEL_SOFTMAX_MATERIALIZED:
        /* one N×M score matrix, reused head after head */
        return n * m * e;
    case LA_KERNEL_SOFTMAX:
        if (elem == sizeof(float) && la_fused_simd_usable(p)) {
            /* the AVX-512 kernel: per thread qᵀ, a score block and oᵀ, 32 queries wide,
             * tasks of 32 queries (softmax_avx512.c) */
            double tasks = heads * ceil(n / LA_FUSED_SIMD_Q_BLOCK);
            double per_thread = ceil((double)la_fused_simd_scratch_bytes(p) / 64) * 64;
            return dmin(threads, tasks) * per_thread;
        }
        /* the BLIS-based kernel: its layout is shared with hard attention */
        __attribute__((fallthrough));
    case LA_KERNEL_HARD: {
        /* per (b, h, query block) task thread: a bq×bk score block, then bq row maxima
         * (or best scores) and bq sums (or best key indices, size_t), rounded up to a
         * 64-byte line */
        double bq = dmin(n, LA_SOFTMAX_Q_BLOCK), bk = dmin(m, LA_SOFTMAX_K_BLOCK);
        double tasks = heads * ceil(n / LA_SOFTMAX_Q_BLOCK);
        double per_thread = ceil((bq * bk * e + bq * e + bq * (double)sizeof(size_t)) / 64) * 64;
        return dmin(threads, tasks) * per_thread;
    }
    case LA_KERNEL_LINEAR:
    case LA_KERNEL_LINEAR_RECURRENT: {
        /* the linear kernels' own layout: S and z per head or per thread, φ blocks,
         * a chunk's stacked operands */
        size_t bytes = 0;
        if (la_linear_workspace_bytes(kernel, p, elem, &bytes) != LA_OK) return -1;
        return (double)bytes;
    }
    case LA_KERNEL_COUNT: break;
    }
    return 0;
}

la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (!out || (dtype != LA_FLOAT32 && dtype != LA_FLOAT64)) return LA_EINVAL;
    if ((unsigned)kernel >= LA_KERNEL_COUNT) return LA_EINVAL;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (kernel == LA_KERNEL_LINEAR_RECURRENT && !p->causal) return LA_EINVAL;

    la_cost c = {0};
    double heads = (double)p->heads;
    for (size_t b = 0; b < p->batch; b++) {
        head_flops f;
        switch (kernel) {
        case LA_KERNEL_LINEAR: f = p->causal ? chunked_flops(p, b) : linear_flops(p, b); break;
        case LA_KERNEL_LINEAR_RECURRENT: f = recurrent_flops(p, b); break;
        default: f = softmax_flops(kernel, p, b); break;
        }
        c.flops_qk += heads * f.qk;
        c.flops_softmax += heads * f.softmax;
        c.flops_av += heads * f.av;
        c.flops_phi += heads * f.phi;
        c.flops_kv += heads * f.kv;
        c.flops_qs += heads * f.qs;
        c.flops_normalize += heads * f.normalize;
    }
    c.flops_total = c.flops_qk + c.flops_softmax + c.flops_av + c.flops_phi + c.flops_kv +
                    c.flops_qs + c.flops_normalize;

    size_t elem = dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
    double n = (double)p->n_queries, m = (double)p->n_keys;
    double dk = (double)p->d_k, dv = (double)p->d_v;
    c.io_bytes = (double)p->batch * heads * (n * dk + m * dk + m * dv + n * dv) * (double)elem;
    c.workspace_bytes = workspace(kernel, p, elem);
    if (c.workspace_bytes < 0) return LA_EOVERFLOW;
    *out = c;
    return LA_OK;
}

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
#include "internal.h"

/* Scratch geometry of the kernels, in one place. workspace_bytes is computed from
 * these; they mirror the block sizes the kernels allocate per thread. */
enum {
    FUSED_BLOCK_Q = 64, /* fused softmax: queries per block */
    FUSED_BLOCK_K = 64, /* fused softmax: keys per block */
};

/* Per-head counts, before multiplying by the number of heads. */
typedef struct {
    double qk, softmax, av, phi, kv, qs, normalize;
} head_flops;

/* Keys of batch entry b that the key-length mask leaves visible: min(M, L_b). */
static size_t visible_key_count(const la_problem *p, size_t b)
{
    size_t m = p->n_keys;
    if (p->key_lengths && (size_t)p->key_lengths[b] < m) m = (size_t)p->key_lengths[b];
    return m;
}

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
    double m = (double)visible_key_count(p, b);
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
 * keys [s, i] of its own chunk (all capped at the m visible keys):
 *   φ on N·d_k + u·d_k, u = min(N, m) the keys any query sees;
 *   intra-chunk: φQ_c φK_cᵀ 2·pairs_intra·d_k (flops_qk) and A·V 2·pairs_intra·d_v plus
 *     A's row sums pairs_intra for the denominator (flops_av);
 *   carried state: S += φK_cᵀV_c 2·d_k·d_v and z += φK_c d_k per key (flops_kv), for
 *     the keys a later chunk sees; φQ_c·S 2·d_k·d_v and φQ_c·z 2·d_k per query whose
 *     chunk has a non-empty carried state, plus one add joining the two denominators
 *     and d_v adds joining the two numerators (flops_qs);
 *   normalise (den + eps) and d_v divides per query (flops_normalize). */
static head_flops chunked_flops(const la_problem *p, size_t b)
{
    head_flops f = {0};
    size_t m = visible_key_count(p, b);
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
        if (s > 0 && m > 0) carried_queries += (double)(e - s); /* state of keys [0, min(s, m)) */
        /* keys of this chunk carried into later chunks */
        if (e < N && s < m) carried_keys += (double)((e < m ? e : m) - s);
    }
    f.qk = 2 * pairs_intra * dk;
    f.av = 2 * pairs_intra * dv + pairs_intra;
    f.kv = carried_keys * (2 * dk * dv + dk);
    f.qs = carried_queries * (2 * dk * dv + 2 * dk + dv + 1);
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
    size_t m = visible_key_count(p, b);
    if (m == 0) return f;
    double n = (double)p->n_queries, dk = (double)p->d_k, dv = (double)p->d_v;
    double used = (double)(p->n_queries < m ? p->n_queries : m);
    f.phi = (n + used) * dk;
    f.kv = used * (2 * dk * dv + dk);
    f.qs = n * (2 * dk * dv + 2 * dk);
    f.normalize = n * (dv + 1);
    return f;
}

/* Peak scratch bytes of one call, for the current thread count. */
static double workspace(la_kernel kernel, const la_problem *p, size_t elem)
{
    double heads = (double)p->batch * (double)p->heads;
    double threads = (double)la_get_num_threads();
    double n = (double)p->n_queries, m = (double)p->n_keys;
    double dk = (double)p->d_k, dv = (double)p->d_v, e = (double)elem;
    switch (kernel) {
    case LA_KERNEL_SOFTMAX_MATERIALIZED: {
        /* one N×M score matrix per head being processed */
        double concurrent = threads < heads ? threads : heads;
        return concurrent * n * m * e;
    }
    case LA_KERNEL_SOFTMAX: {
        /* per thread: a bq×bk score block, the bq×d_v accumulator, row max and sum */
        double bq = n < FUSED_BLOCK_Q ? n : FUSED_BLOCK_Q;
        double bk = m < FUSED_BLOCK_K ? m : FUSED_BLOCK_K;
        double pieces = heads * ((double)((p->n_queries + FUSED_BLOCK_Q - 1) / FUSED_BLOCK_Q));
        double concurrent = threads < pieces ? threads : pieces;
        return concurrent * (bq * bk + bq * dv + 2 * bq) * e;
    }
    case LA_KERNEL_HARD: return 0; /* a running argmax per query, in registers */
    case LA_KERNEL_LINEAR:
    case LA_KERNEL_LINEAR_RECURRENT: {
        /* per head being processed: S (d_k×d_v) and z (d_k), plus a chunk's φQ_c and
         * φK_c (C×d_k each), its C×C masked scores and C denominators (chunked causal),
         * or one row of φ(q), φ(k) (recurrent and non-causal use C = 1 here). */
        double concurrent = threads < heads ? threads : heads;
        double c = 1;
        if (kernel == LA_KERNEL_LINEAR && p->causal)
            c = (double)(p->chunk < p->n_queries ? p->chunk : p->n_queries);
        double scratch = 2 * c * dk + (c > 1 ? c * c + c : 0);
        return concurrent * (dk * dv + dk + scratch) * e;
    }
    case LA_KERNEL_COUNT: break;
    }
    return 0;
}

la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                            la_cost *out)
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
    *out = c;
    return LA_OK;
}

/* linear_internal.h — the linear family's internal interface: the feature maps in float
 * and double (featuremap.c), the linear engine (linear_engine.c: its scans, one recurrent
 * step of one head, compiled once so the recurrent scan, the step API and FAVOR+ give the
 * same bits, a fixed-order dot product, the scans' exact scratch size), the step API's
 * state (state.c) and FAVOR+'s step (favor.c). */
#ifndef LA_LINEAR_INTERNAL_H
#define LA_LINEAR_INTERNAL_H

#include "core/internal.h"

/* out[i] = φ(x[i]) for i < n (out may equal x). elu+1 is x + 1 for x >= 0 and exp(x)
 * for x < 0 (never elu(x) + 1, which rounds to 1 - 1 = 0 below x ≈ -17 in float32);
 * relu is max(x, 0). float32 uses expf, float64 exp. */
void la_feature_map_f32(la_feature_map fm, const float *x, float *out, size_t n);
/* The internal φ: the identity, for a kernel that hands the linear kernels features it
 * computed itself (FAVOR+, favor.c, through la_linear_scan_*). Outside
 * the public enum, so la_problem_check refuses it in any caller's problem; the feature
 * maps copy x for it, and the kernels count no φ FLOPs for it. */
#define LA_FEATURE_IDENTITY ((la_feature_map)LA_FEATURE_COUNT)
void la_feature_map_f64(la_feature_map fm, const double *x, double *out, size_t n);
/* The same for a kernel that streams its rows from memory: on its AVX-512 elu+1 loop it also
 * asks the cache for x's elements LA_PHI_AHEAD_BYTES past the one it reads, while within
 * x[0 .. readable) (readable >= n: the rows read next), and for also[0 .. n) at the pace of
 * x (NULL: nothing; the block read right after, as V after φ(K)). The results are the
 * same bits as la_feature_map's. */
enum { LA_PHI_AHEAD_BYTES = 8192 };
void la_feature_map_stream_f32(la_feature_map fm, const float *x, float *out, size_t n,
                               size_t readable, const float *also);
void la_feature_map_stream_f64(la_feature_map fm, const double *x, double *out, size_t n,
                               size_t readable, const double *also);

/* One recurrent step of one head: S += φk vᵀ, z += φk, y = φqᵀS / (φqᵀz + eps), with
 * S (d_k, d_v) row-major, z, φk = φ(k_t), φq = φ(q_t) (d_k,), v and y (d_v,); no
 * argument may overlap another.
 * la_linear_read_query: only y = q_numᵀS / (q_denᵀz + eps), for a token with no key to add;
 * la_linear_add_key: only S += k_num vᵀ, z += k_den, for a key added without a read
 * (q_num = q_den = φ(q) and k_num = k_den = φ(k) but in rotary linear attention, whose
 * numerator takes the rotated features). */
void la_linear_step_head_f32(float *restrict S, float *restrict z, const float *restrict phi_k,
                             const float *restrict v, const float *restrict phi_q, float eps,
                             float *restrict y, size_t d_k, size_t d_v);
void la_linear_step_head_f64(double *restrict S, double *restrict z, const double *restrict phi_k,
                             const double *restrict v, const double *restrict phi_q, double eps,
                             double *restrict y, size_t d_k, size_t d_v);
/* The step with the state first scaled by r (FAVOR+'s stabilizer): S = r·S + φk vᵀ,
 * z = r·z + φk, then the read; the same bits as scaling S and z, then la_linear_step_head. */
void la_linear_step_head_rescaled_f32(float *restrict S, float *restrict z, float r,
                                      const float *restrict phi_k, const float *restrict v,
                                      const float *restrict phi_q, float eps, float *restrict y,
                                      size_t d_k, size_t d_v);
void la_linear_step_head_rescaled_f64(double *restrict S, double *restrict z, double r,
                                      const double *restrict phi_k, const double *restrict v,
                                      const double *restrict phi_q, double eps, double *restrict y,
                                      size_t d_k, size_t d_v);
void la_linear_read_query_f32(const float *restrict S, const float *restrict z,
                              const float *restrict q_num, const float *restrict q_den, float eps,
                              float *restrict y, size_t d_k, size_t d_v);
void la_linear_read_query_f64(const double *restrict S, const double *restrict z,
                              const double *restrict q_num, const double *restrict q_den,
                              double eps, double *restrict y, size_t d_k, size_t d_v);
void la_linear_add_key_f32(float *restrict S, float *restrict z, const float *restrict k_num,
                           const float *restrict k_den, const float *restrict v, size_t d_k,
                           size_t d_v);
void la_linear_add_key_f64(double *restrict S, double *restrict z, const double *restrict k_num,
                           const double *restrict k_den, const double *restrict v, size_t d_k,
                           size_t d_v);

/* The step API's state (state.c makes, steps, saves and restores it; FAVOR+'s step is
 * favor.c's, la_favor_step_*). Linear: width = d_k, w = NULL. FAVOR+ (la_favor_state_create):
 * width = m, fm = LA_FEATURE_IDENTITY, w = W (m, d_k) in dtype drawn from seed, and μ per
 * head after z, the running max of the keys' largest exponents (valid once position > 0). */
struct la_linear_state {
    la_dtype dtype;
    size_t heads, d_k, d_v;
    la_feature_map fm;
    double eps;
    size_t position; /* tokens stepped since create or reset */
    size_t width;    /* S's rows and z's length per head: d_k, or FAVOR+'s m */
    size_t elements; /* S (heads, width, d_v), z (heads, width), FAVOR+ also μ (heads) */
    void *S;         /* those elements in dtype, back to back */
    void *phi;       /* scratch: linear φ(q_t), φ(k_t) (2·d_k); FAVOR+ heads·(2m + 1) */
    /* Upper bounds on |S| and z over every entry of every head, kept so that a step can
     * refuse (LA_ERANGE) before it overflows; INFINITY once an input was not finite. */
    double s_bound, z_bound;
    uint64_t seed; /* FAVOR+: W's seed */
    void *w;       /* FAVOR+: W (m, d_k) row-major in dtype; NULL for linear */
};

/* One token of a FAVOR+ state (favor.c): la_linear_step_*'s contract, FAVOR+'s arithmetic
 * (linattn.h, la_favor_state_create). */
la_status la_favor_step_f32(la_linear_state *st, const float *q_t, const float *k_t,
                            const float *v_t, float *y_t);
la_status la_favor_step_f64(la_linear_state *st, const double *q_t, const double *k_t,
                            const double *v_t, double *y_t);

/* Bytes of scratch the engine's scans allocate for p with elements of element_size bytes
 * at the current thread count: la_linear_scan_* (non-causal, or chunked causal per
 * p->causal) or, recurrent, la_linear_scan_recurrent_* (p->causal required); exactly what
 * the scan holds and checks against p->workspace_limit. The kernels on the engine (linear,
 * linear_recurrent, FAVOR+, Taylor) report it in their cost. Returns LA_OK, LA_EINVAL,
 * LA_EOVERFLOW. */
la_status la_linear_workspace_bytes(const la_problem *p, bool recurrent, size_t element_size,
                                    size_t *bytes);
/* The same without checking p: for a scan on features whose problem (d_k = F) describes
 * no array the caller holds (Taylor's, la_linear_scan_rows_*), so that B·H·N·F need not
 * fit in size_t. */
la_status la_linear_scan_bytes(const la_problem *p, bool recurrent, size_t element_size,
                               size_t *bytes);

/* The engine's scans (linear_engine.c), on p->feature_map: non-causal, or causal in chunks
 * of p->chunk carrying S and z (la_linear_scan_*), or causal token by token
 * (la_linear_scan_recurrent_*; p->causal required). q (B,H,N,d_k), k (B,H,M,d_k),
 * v (B,H,M,d_v), out (B,H,N,d_v). The caller has checked p (but for its feature map, which
 * may be LA_FEATURE_IDENTITY: then q and k are the features φ(Q), φ(K) and p->d_k their
 * count, as FAVOR+ hands them), the pointers and the absence of a general mask; the scans
 * check the range (causal: la_range_ok; non-causal: S and z, LA_ERANGE with out untouched)
 * and the budget (la_linear_workspace_bytes against p->workspace_limit: LA_EBUDGET).
 * Rows of k past the keys a head uses (la_keys_in_length; causal: also j >= N) are never
 * read into a result. Returns LA_OK, LA_ERANGE, LA_EBUDGET, LA_ENOMEM, LA_EOVERFLOW. */
la_status la_linear_scan_f32(const la_problem *p, const float *q, const float *k, const float *v,
                             float *out);
la_status la_linear_scan_f64(const la_problem *p, const double *q, const double *k, const double *v,
                             double *out);
la_status la_linear_scan_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out);
la_status la_linear_scan_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out);

/* Features formed by rows instead of p->feature_map's elementwise φ (Taylor attention's
 * [1, x, x⊗x]): form(h, query, x, n, out) writes the features of the n rows of x (n, d_in)
 * into out (n, F), F = p->d_k of the problem the scan runs (the features' width), so that
 * no call holds more than a block of them. la_linear_scan_rows_* is la_linear_scan_*
 * with q (B,H,N,d_in) and k (B,H,M,d_in) read through form, but no range check: the
 * caller checks that the features are finite and, causal, the range rule on them. */
typedef struct la_linear_rows_f32 {
    size_t d_in;
    void (*form)(const struct la_linear_rows_f32 *h, bool query, const float *x, size_t n,
                 float *out);
    const void *ctx;
} la_linear_rows_f32;
typedef struct la_linear_rows_f64 {
    size_t d_in;
    void (*form)(const struct la_linear_rows_f64 *h, bool query, const double *x, size_t n,
                 double *out);
    const void *ctx;
} la_linear_rows_f64;
la_status la_linear_scan_rows_f32(const la_problem *p, const la_linear_rows_f32 *rows,
                                  const float *q, const float *k, const float *v, float *out);
la_status la_linear_scan_rows_f64(const la_problem *p, const la_linear_rows_f64 *rows,
                                  const double *q, const double *k, const double *v, double *out);

/* The scratch of a linear kernel's call, `elements` elements into *work (the caller frees
 * it), aligned to LA_SCRATCH_LINE bytes: LA_EOVERFLOW when the bytes do not fit size_t,
 * LA_EBUDGET past p->workspace_limit, else gemm_small's buffers reserved for la_threads()
 * threads (la_gemm_reserve) and the block allocated, LA_ENOMEM when either fails. */
enum { LA_SCRATCH_LINE = 128 }; /* two cache lines: the pair the L2 prefetchers fetch */
/* n elements of element_size bytes rounded up to whole LA_SCRATCH_LINEs, into *out: the
 * layouts round each thread's part and the shared part, so that no two threads write to
 * one line pair (with them packed, splitting one head of recurrent linear attention over
 * two threads ran 1.1–1.5 times slower on the Zen 5 of docs/performance.md). False on
 * overflow. */
static inline bool la_scratch_lines(size_t n, size_t element_size, size_t *out)
{
    const size_t per = LA_SCRATCH_LINE / element_size;
    if (n > SIZE_MAX - (per - 1)) return false;
    *out = (n + per - 1) / per * per;
    return true;
}
la_status la_linear_scratch_f32(const la_problem *p, size_t elements, float **work);
la_status la_linear_scratch_f64(const la_problem *p, size_t elements, double **work);

/* Causal in chunks with a stabilizer (FAVOR+, favor.c): phi_q = φ(Q) (B,H,N,d_k) and
 * psi_k = ψ(K) (B,H,M,d_k) features already formed (p->feature_map LA_FEATURE_IDENTITY,
 * p->d_k their count), and per head mu_g: μ (M), μ_j = max(g_0 .. g_j) over the keys the
 * head uses, then g (M), each key's log-scale. Query i weighs key j <= i by
 *   a_ij = φ(q_i)·ψ(k_j) · exp(g_j − μ_i),
 * so every factor is at most 1 and no output depends on a later key: the carried S, z of
 * keys 0..c−1 are kept at the scale μ_{c−1}, read by query i times exp(μ_{c−1} − μ_i) and
 * rescaled by exp(μ_{c−1} − μ_{c'−1}) as a chunk adds keys c..c'−1, each ψ(k_j) then
 * weighed by exp(g_j − μ_{c'−1}). la_linear_scan_*'s contract otherwise, but no range
 * check (the caller's), and FLOPs counted by visible pair as FAVOR+'s cost says. */
la_status la_linear_scan_stabilized_f32(const la_problem *p, const float *phi_q, const float *psi_k,
                                        const float *v, const float *mu_g, float *out);
la_status la_linear_scan_stabilized_f64(const la_problem *p, const double *phi_q,
                                        const double *psi_k, const double *v, const double *mu_g,
                                        double *out);

/* The backward of linear attention (non-causal, or causal in chunks, per p->causal) on
 * features the caller formed (Taylor, FAVOR+): phi_q = φ(Q) (B,H,N,d_k), phi_k = φ(K)
 * (B,H,M,d_k), p->feature_map LA_FEATURE_IDENTITY and p->d_k the feature count, p and the
 * pointers checked by the caller, no general mask. Writes d_phi_q = ∂L/∂φ(Q), d_phi_k =
 * ∂L/∂φ(K) (zero rows for keys the head does not see; a key the key mask hides gets
 * dS v + dz, which the caller zeroes) and d_v, la_linear_attention_backward_*'s
 * arithmetic, range rule (on the features) and budget (la_linear_backward_workspace_bytes
 * against p->workspace_limit). Returns LA_OK, LA_ERANGE, LA_EBUDGET, LA_ENOMEM,
 * LA_EOVERFLOW; nothing written on error. */
la_status la_linear_backward_features_f32(const la_problem *p, const float *phi_q,
                                          const float *phi_k, const float *v, const float *out,
                                          const float *d_out, float *d_phi_q, float *d_phi_k,
                                          float *d_v);
la_status la_linear_backward_features_f64(const la_problem *p, const double *phi_q,
                                          const double *phi_k, const double *v, const double *out,
                                          const double *d_out, double *d_phi_q, double *d_phi_k,
                                          double *d_v);
/* Its FLOP fields for one head of an entry with m visible keys (the backward's meaning,
 * kernels.h; flops_phi 0 for LA_FEATURE_IDENTITY) and its scratch in bytes. */
void la_linear_backward_head_flops(const la_problem *p, size_t m, la_cost *f);
la_status la_linear_backward_workspace_bytes(const la_problem *p, size_t element_size,
                                             size_t *bytes);

/* The FLOP fields of linear attention (la_linear_cost, la_linear_recurrent_cost) for one
 * head of an entry with m visible keys: the recurrent form, or non-causal or chunked per
 * p->causal (linear.c; FAVOR+'s cost adds its features to it). */
void la_linear_head_flops(const la_problem *p, size_t m, bool recurrent, la_cost *f);

/* The visible (query, key) pairs inside the chunks of one head of the causal chunked
 * form, for an entry with m visible keys (linear.c; the forward's and the backward's cost
 * models count their intra-chunk products over them). */
double la_linear_pairs_intra(const la_problem *p, size_t m);

/* p->key_mask in the linear kernels: rows of phi_k (n, d_k), the features of keys
 * j0 .. j0+n-1 of head hd = b·H + h, set to 0 where key_mask hides the key, so that it
 * adds nothing to S, z or a chunk's A (nothing without a key mask). */
void la_linear_hide_keys_f32(const la_problem *p, size_t hd, size_t j0, float *phi_k, size_t n);
void la_linear_hide_keys_f64(const la_problem *p, size_t hd, size_t j0, double *phi_k, size_t n);
/* d_k's rows (B·H, M, d_k) of the keys p->key_mask hides set to 0: such a key adds nothing,
 * so its gradient is 0 (the chain rule through φ(k_j) would leave dφ(k_j) ∘ φ′ there). */
void la_linear_hide_key_grads_f32(const la_problem *p, float *d_k);
void la_linear_hide_key_grads_f64(const la_problem *p, double *d_k);
/* x·y summed in a fixed order (8 interleaved partial sums, then a fixed tree), so the
 * result never depends on the alignment of x and y nor on how the compiler vectorizes. */
float la_dot_f32(const float *x, const float *y, size_t n);
double la_dot_f64(const double *x, const double *y, size_t n);

/* Whether the recurrent scans split a head's columns among threads (below). On a Zen 4,
 * whose 512-bit FMAs take two 256-bit pipes, one head at N = 16,384 ran 2.6–3.5 times
 * faster split. On a Zen 5 (AMD family 1Ah: two 512-bit FMA pipes) half the columns take
 * more than half the time (one thread, N = 16,384, d_k = 64: 2.0 ms for d_v = 32 against
 * 2.8 ms for 64), and one head of d_v = 64 took 2.9–3.2 ms split on two threads against
 * 2.7–2.8 ms whole on one (4.9–5.6 against 2.8–3.0 ms in a busier hour;
 * docs/performance.md), so there it is not split. Elsewhere it is.
 * la_linear_recurrent_split_force(1 or 0) forces it, -1 goes back to the choice (tests).
 * Thread-safe. */
bool la_linear_recurrent_split(void);
void la_linear_recurrent_split_force(int on);

/* The recurrent scans (linear attention's, FAVOR+'s) with fewer heads than threads split
 * each head's d_v columns into parts of a multiple of 16 columns, one task each, where
 * la_linear_recurrent_split says so: a column of S and of y depends on no other column, so
 * each part runs the whole sequence on its own (its own S columns and its own copy of z
 * and of each token's features, whose work is then repeated per part), with the bits of
 * one task per head. Returns the number of parts and sets their width (the last may be
 * narrower). */
static inline size_t la_linear_recurrent_parts(size_t heads, size_t threads_max, size_t dv,
                                               size_t *width)
{
    size_t parts = 1;
    if (heads < threads_max && la_linear_recurrent_split())
        parts = (threads_max + heads - 1) / heads;
    if (parts > dv / 16) parts = dv / 16 ? dv / 16 : 1;
    const size_t w = (dv + parts - 1) / parts;
    *width = (w + 15) / 16 * 16 < dv ? (w + 15) / 16 * 16 : dv;
    return (dv + *width - 1) / *width;
}

/* The causal chunked kernels (forward and backward) form the products a chunk's mask cuts,
 * A = φ(Q_c)·φ(K_c)ᵀ and the others A and B enter, by blocks of LA_LINEAR_TRI_ROWS rows
 * (gemm_small's tile height), each over the part of the chunk its rows can see: query
 * rows [i0, i0 + rows) see keys j <= i < i0 + rows of the nk the chunk has
 * (la_linear_tri_keys); key rows [r0, r0 + rows) are seen by queries i >= r0. The mask
 * then zeroes what a block holds above the diagonal; nothing outside the blocks is formed. */
#define LA_LINEAR_TRI_ROWS 8
static inline size_t la_linear_tri_keys(size_t nk, size_t i0, size_t rows)
{
    return nk < i0 + rows ? nk : i0 + rows;
}

/* In a file compiled per precision (core/real_typed.h): φ, a dot product and a small product,
 * each counting what it issues into a counter under LA_COUNT_FLOPS (core/internal.h;
 * nothing otherwise): φ 1 per element (none for the identity), a dot product of n 2·n, an
 * m×n×k product 2·m·n·k (gemm_small, lib/cpu/). */
#define LA_PHI(fm, x, out, n)                                                                      \
    (LA_COUNT(LA_COUNT_PHI, (fm) == LA_FEATURE_IDENTITY ? 0 : (n)),                                \
     FN(la_feature_map)(fm, x, out, n))
#define LA_PHI_STREAM(fm, x, out, n, readable, also)                                               \
    (LA_COUNT(LA_COUNT_PHI, (fm) == LA_FEATURE_IDENTITY ? 0 : (n)),                                \
     FN(la_feature_map_stream)(fm, x, out, n, readable, also))
#define LA_DOT(counter, x, y, n) (LA_COUNT(counter, 2 * (double)(n)), FN(la_dot)(x, y, n))
#define LA_PRODUCT(counter, m, n, k, ...)                                                          \
    (LA_COUNT(counter, 2 * (double)(m) * (double)(n) * (double)(k)),                               \
     GEMM_SMALL(m, n, k, __VA_ARGS__))

#endif

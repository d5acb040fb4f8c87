/* linear.c — linear attention (Katharopoulos et al. 2020): y_i = φ(q_i)ᵀS / (φ(q_i)ᵀz + eps),
 * S = Σ_j φ(k_j) v_jᵀ, z = Σ_j φ(k_j) over the keys query i sees. Its forward (non-causal,
 * causal in chunks, causal token by token: the checks here, the scans in linear_engine.c),
 * its backward (below, all three forms), and their cost. Compiled once per precision
 * (core/real_typed.h); the public la_linear_attention_*_f32 / _f64 are written out per
 * precision, the cost functions once.
 *
 * Shapes, per head (the problem holds B·H heads back to back):
 *   q, d_q: (N, d_k), k, d_k: (M, d_k), v, d_v: (M, d_v), out, d_out: (N, d_v), row-major;
 *   S: (d_k, d_v) row-major, z: (d_k,).
 * Visible keys of head (b, ·): m = min(M, L_b) (L_b = key_lengths[b], or M). */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- forward */

/* Linear attention, non-causal or causal in chunks (per p->causal): the checks, then the
 * engine's scan. */
static la_status linear_attention(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                  REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out) return LA_EINVAL;
    if (p->mask) return LA_EINVAL; /* a general mask: not with a shared state (linattn.h) */
    return FN(la_linear_scan)(p, q, k, v, out);
}

/* Causal linear attention, token by token: the checks, then the engine's recurrent scan
 * (the step API's arithmetic, la_linear_step_head_*). */
static la_status linear_attention_recurrent(const la_problem *p, const REAL *q, const REAL *k,
                                            const REAL *v, REAL *out)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || !p->causal || p->mask) return LA_EINVAL;
    return FN(la_linear_scan_recurrent)(p, q, k, v, out);
}

#if REAL_IS_F32
la_status la_linear_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
#else
la_status la_linear_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
#endif
{
    if (la_causal_square(p)) return FN(la_square_forward)(p, FN(la_linear_attention), q, k, v, out);
    return linear_attention(p, q, k, v, out);
}

#if REAL_IS_F32
la_status la_linear_attention_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                            const float *v, float *out)
#else
la_status la_linear_attention_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                            const double *v, double *out)
#endif
{
    if (la_causal_square(p))
        return FN(la_square_forward)(p, FN(la_linear_attention_recurrent), q, k, v, out);
    return linear_attention_recurrent(p, q, k, v, out);
}

/* ---------------------------------------------------------------- backward */

/* The backward passes: linear_backward (non-causal, or causal chunked) and
 * linear_recurrent_backward. Causal: u = min(m, N) keys are ever seen.
 *
 * The math (forward: S = φ(K)ᵀV, z = Σ_j φ(k_j), den_i = φ(q_i)·z + eps, y_i = φ(q_i)ᵀS /
 * den_i; causal: S, z over the keys j <= i). Per query, with dO_i = d_out row i:
 *   g_i = dO_i / den_i (d_v),  c_i = −(dO_i·y_i) / den_i  (both 0 when den_i = 0: the
 *   empty row's gradient is zero);
 *   dφ(q_i) = S g_i + c_i z            (S, z: the query's state);
 *   dS = Σ_i φ(q_i) g_iᵀ, dz = Σ_i c_i φ(q_i)   (causal: for key j, over queries i >= j);
 *   dφ(k_j) = dS v_j + dz,  d_v_j = dSᵀ φ(k_j);
 *   d_q = dφ(q) ∘ φ′(q), d_k = dφ(k) ∘ φ′(k)  (elu+1: 1 for x >= 0, exp(x) = φ(x) below;
 *   relu: 1 for x > 0, else 0).
 * y_i is read from out (the forward's output), never recomputed.
 *
 * FLOPs are counted into the la_cost counters as issued (core/internal.h) under the
 * backward's meaning of each field (lib/linattn.h, beside la_linear_attention_backward_*);
 * the passes that form every den for the range rule when eps does not settle it
 * (noncausal_inv_den, the causal sweep 1 and pass 1) are checks, like range.c's
 * scans, and not counted. */

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
 *   chunked (C = min(chunk, N)): per head the carried state, den and c,
 *     heads·(state + 2·N);
 *     per thread φ(Q_c), φ(K_c), φKᵀ, A, Bᵀ, G, Gᵀ, c, C·(3·d_k + 2·C + 2·d_v + 1), the
 *     snapshot, the chunk's Δ and dS, 2·state + d_k·d_v. Linear in N: 2·N per head.
 *   recurrent: den of every head, heads·N; per thread S (or dS), z (or dz), φ(q_t),
 *     φ(k_t), g_t: d_k·d_v + 3·d_k + d_v.
 * Tasks: non-causal heads·max(query blocks, key blocks), chunked heads·chunks, recurrent
 * heads. */
static la_status backward_layout_for(const la_problem *p, la_kernel kernel, size_t element_size,
                                     size_t threads_max, backward_layout *lay)
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
            !mul_add_ok(2, N, state, &b) || !la_mul_ok(heads, b, &lay->shared) ||
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
    if (!la_scratch_lines(lay->per_thread, element_size, &lay->per_thread) ||
        !la_scratch_lines(lay->shared, element_size, &lay->shared) ||
        !mul_add_ok(lay->threads, lay->per_thread, lay->shared, &lay->total))
        return LA_EOVERFLOW;
    return LA_OK;
}

/* g (n) *= φ′(x), read off phi = φ(x) (n): elu+1 φ′ = 1 for x >= 0 and exp(x) = φ(x) below,
 * i.e. min(φ(x), 1) (φ(x) >= 1 exactly when x >= 0, -0 included); relu φ′ = 1 where
 * φ(x) > 0 (x > 0), else 0. Branch-free, so it vectorizes. One FLOP per element; none for
 * the identity (la_linear_backward_features: the caller applies its own map's chain rule). */
static void times_phi_prime(la_feature_map fm, const REAL *restrict phi, REAL *restrict g, size_t n)
{
    if (fm == LA_FEATURE_IDENTITY) return; /* features formed by the caller: φ′ = 1 */
    LA_COUNT(LA_COUNT_PHI, n);
    if (fm == LA_FEATURE_RELU) {
        for (size_t a = 0; a < n; a++)
            g[a] = phi[a] > 0 ? g[a] : 0;
    } else {
        for (size_t a = 0; a < n; a++) {
            const REAL p = phi[a], slope = p < 1 ? p : 1; /* a select, not a branch */
            g[a] = g[a] * slope;
        }
    }
}

/* xt (n, m) = xᵀ, x (m, n), both row-major: the blocked transpose (TRANSPOSE, lib/cpu/). */
static void transpose(const REAL *restrict x, size_t m, size_t n, REAL *restrict xt)
{
    TRANSPOSE(m, n, x, n, xt, m);
}

/* y (rows, n) += s_i x (n) for every row i; s NULL: s_i = 1. */
static void rows_add(REAL *restrict y, size_t rows, size_t n, const REAL *restrict s,
                     const REAL *restrict x)
{
    for (size_t i = 0; i < rows; i++) {
        const REAL si = s ? s[i] : 1;
#pragma omp simd
        for (size_t a = 0; a < n; a++)
            y[i * n + a] += si * x[a];
    }
}

/* acc (n) += Σ_i w_i x_i over the rows of x (rows, n); w NULL: w_i = 1. */
static void rows_sum(REAL *restrict acc, const REAL *restrict x, size_t rows, size_t n,
                     const REAL *restrict w)
{
    for (size_t i = 0; i < rows; i++) {
        const REAL wi = w ? w[i] : 1;
#pragma omp simd
        for (size_t a = 0; a < n; a++)
            acc[a] += wi * x[i * n + a];
    }
}

/* One query's g = dO / den (d_v); den = 0 (the empty row) gives g = 0. d_v FLOPs. */
static void row_g(const REAL *restrict d_out, REAL den, REAL *restrict g, size_t dv)
{
    LA_COUNT(LA_COUNT_NORMALIZE, dv);
    for (size_t c = 0; c < dv; c++)
        g[c] = den == 0 ? 0 : d_out[c] / den;
}

/* One query's g (row_g) and c = −(dO·y) / den (returned); den = 0 gives g = 0, c = 0.
 * 3·d_v + 1 FLOPs. */
static REAL row_grad(const REAL *restrict d_out, const REAL *restrict y, REAL den, REAL *restrict g,
                     size_t dv)
{
    row_g(d_out, den, g, dv);
    LA_COUNT(LA_COUNT_NORMALIZE, 2 * (double)dv + 1);
    return den == 0 ? 0 : -FN(la_dot)(d_out, y, dv) / den;
}

/* The scratch of one call (backward_layout_for), allocated: one block of REAL. */
static la_status backward_alloc(const la_problem *p, la_kernel kernel, backward_layout *lay,
                                REAL **work)
{
    la_status st = backward_layout_for(p, kernel, sizeof(REAL), (size_t)la_threads(), lay);
    if (st != LA_OK) return st;
    return FN(la_linear_scratch)(p, lay->total, work);
}

/* The argument checks every backward makes before anything else. */
static la_status backward_check(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                const REAL *out, const REAL *d_out, const REAL *d_q,
                                const REAL *d_k, const REAL *d_v)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!q || !k || !v || !out || !d_out || !d_q || !d_k || !d_v) return LA_EINVAL;
    return LA_OK;
}

/* Whether a bound inv_den on 1/den (over the queries whose den is not 0; 1/eps bounds
 * them all when eps > 0) passes the range rule's limit (range.c). */
static bool inv_den_allowed(double inv_den, double limit)
{
    return (inv_den > 1 ? inv_den : 1) <= limit;
}

/* The largest 1/den over the stored denominators den (n), those > 0 only. */
static double largest_inv_den(const REAL *den, size_t n)
{
    double smallest = INFINITY;
    for (size_t i = 0; i < n; i++)
        if (den[i] > 0 && (double)den[i] < smallest) smallest = (double)den[i];
    return smallest == INFINITY ? 0 : 1 / smallest;
}

/* ================================================================ non-causal */

/* What every task of a non-causal backward shares. Per head in `states`:
 *   Sᵀ (d_v, d_k), z (d_k)                 phase 1
 *   dSᵀ (d_v, d_k), dz (d_k), dS (d_k, d_v)  phase 2 (dS: phase 2's transpose, for phase 3) */
typedef struct {
    const la_problem *p;
    const REAL *q, *k, *v, *out, *d_out;
    REAL *d_q, *d_k, *d_v;
    size_t N, M, dk, dv, heads, state, head_size;
    size_t key_pieces, query_pieces, key_blocks;
    REAL *states, *scratch;
    size_t per_thread, rows; /* rows: of the φ block, min(LA_BWD_BLOCK, max(N, M)) */
    REAL eps;
} nc_job;

/* A thread's scratch `mine`: a φ block (rows, d_k), G (rows, d_v), c (rows), then one
 * partial state [·ᵀ z] (d_v·d_k + d_k), returned here. */
static REAL *nc_partial(const nc_job *j, REAL *mine)
{
    return mine + j->rows * (j->dk + j->dv + 1);
}

/* Phase 1, one task: key piece `piece` of head hd, in blocks of LA_BWD_BLOCK keys,
 *   partial = [Σ_blk V_blkᵀ φ(K_blk), Σ_rows φ(K_blk)]  ((d_v, d_k) and (d_k)),
 * in the thread's scratch `mine` (φ block, then the partial). */
static void nc_key_piece(const nc_job *j, size_t hd, size_t piece, REAL *mine)
{
    const size_t M = j->M, dk = j->dk, dv = j->dv;
    const size_t m = la_keys_in_length(j->p, hd / j->p->heads);
    const size_t j_begin = piece * LA_BWD_PIECE;
    const size_t j_end = m < j_begin + LA_BWD_PIECE ? m : j_begin + LA_BWD_PIECE;
    REAL *phi_k = mine, *St = nc_partial(j, mine), *z = St + dv * dk;
    for (size_t a = 0; a < j->state; a++)
        St[a] = 0;
    for (size_t j0 = j_begin; j0 < j_end; j0 += LA_BWD_BLOCK) {
        const size_t n = j_end - j0 < LA_BWD_BLOCK ? j_end - j0 : LA_BWD_BLOCK;
        const REAL *kb = j->k + (hd * M + j0) * dk, *vb = j->v + (hd * M + j0) * dv;
        /* φ(K_blk) (n, d_k) */
        LA_PHI_STREAM(j->p->feature_map, kb, phi_k, n * dk, (m - j0) * dk, dv == dk ? vb : NULL);
        FN(la_linear_hide_keys)(j->p, hd, j0, phi_k, n);
        /* Sᵀ += V_blkᵀ φ(K_blk): (d_v, n)·(n, d_k), V_blkᵀ through strides */
        LA_PRODUCT(LA_COUNT_KV, dv, dk, n, 1, vb, 1, (ptrdiff_t)dv, phi_k, (ptrdiff_t)dk, 1, 1, St,
                   (ptrdiff_t)dk, 1);
        /* z += Σ_rows φ(K_blk) */
        LA_COUNT(LA_COUNT_KV, n * dk);
        rows_sum(z, phi_k, n, dk, NULL);
    }
}

/* In piece order: the head's state = the first piece's partial, then += each later one. */
static void nc_piece_add(REAL *head_state, const REAL *partial, size_t n, bool first)
{
    if (first) {
        for (size_t a = 0; a < n; a++)
            head_state[a] = partial[a];
        return;
    }
    LA_COUNT(LA_COUNT_COMBINE, n);
    for (size_t a = 0; a < n; a++)
        head_state[a] += partial[a];
}

/* Phase 2, one task: query piece `piece` of head hd, in blocks of LA_BWD_BLOCK queries:
 *   den_i = φ(q_i)·z + eps, g_i, c_i;  d_q_blk = (G Sᵀ + c zᵀ) ∘ φ′(Q_blk);
 *   partial [dSᵀ dz] += [Gᵀ φ(Q_blk), Σ_i c_i φ(q_i)].
 * Scratch `mine`: φ block, G (block, d_v), c (block), the partial [dSᵀ dz]. */
static void nc_query_piece(const nc_job *j, size_t hd, size_t piece, REAL *mine)
{
    const size_t N = j->N, dk = j->dk, dv = j->dv;
    const size_t i_begin = piece * LA_BWD_PIECE;
    const size_t i_end = N < i_begin + LA_BWD_PIECE ? N : i_begin + LA_BWD_PIECE;
    REAL *phi_q = mine, *G = phi_q + j->rows * dk, *cc = G + j->rows * dv;
    REAL *dSt = nc_partial(j, mine), *dz = dSt + dv * dk;
    const REAL *St = j->states + hd * j->head_size, *z = St + dv * dk;
    for (size_t a = 0; a < j->state; a++)
        dSt[a] = 0;
    if (la_keys_in_length(j->p, hd / j->p->heads) == 0) { /* sees no key: zero rows */
        for (size_t a = i_begin * dk; a < i_end * dk; a++)
            j->d_q[hd * N * dk + a] = 0;
        return;
    }
    for (size_t i0 = i_begin; i0 < i_end; i0 += LA_BWD_BLOCK) {
        const size_t n = i_end - i0 < LA_BWD_BLOCK ? i_end - i0 : LA_BWD_BLOCK;
        const REAL *qb = j->q + (hd * N + i0) * dk;
        REAL *dq = j->d_q + (hd * N + i0) * dk;
        /* φ(Q_blk) (n, d_k); den_i, g_i, c_i */
        LA_PHI_STREAM(j->p->feature_map, qb, phi_q, n * dk, (N - i0) * dk,
                      dv == dk ? j->d_out + (hd * N + i0) * dv : NULL);
        for (size_t i = 0; i < n; i++) {
            LA_COUNT(LA_COUNT_NORMALIZE, 1);
            const REAL den = LA_DOT(LA_COUNT_NORMALIZE, phi_q + i * dk, z, dk) + j->eps;
            const size_t row = (hd * N + i0 + i) * dv;
            cc[i] = row_grad(j->d_out + row, j->out + row, den, G + i * dv, dv);
        }
        /* dφ(Q_blk) = G (S)ᵀ: (n, d_v)·(d_v, d_k) with Sᵀ row-major, straight into d_q */
        LA_PRODUCT(LA_COUNT_QS, n, dk, dv, 1, G, (ptrdiff_t)dv, 1, St, (ptrdiff_t)dk, 1, 0, dq,
                   (ptrdiff_t)dk, 1);
        /* += c_i z, then ∘ φ′(Q_blk) */
        LA_COUNT(LA_COUNT_QS, 2 * (double)n * (double)dk);
        rows_add(dq, n, dk, cc, z);
        times_phi_prime(j->p->feature_map, phi_q, dq, n * dk);
        /* dSᵀ += Gᵀ φ(Q_blk): (d_v, n)·(n, d_k), Gᵀ through strides; dz += Σ_i c_i φ(q_i) */
        LA_PRODUCT(LA_COUNT_QS, dv, dk, n, 1, G, 1, (ptrdiff_t)dv, phi_q, (ptrdiff_t)dk, 1, 1, dSt,
                   (ptrdiff_t)dk, 1);
        LA_COUNT(LA_COUNT_QS, 2 * (double)n * (double)dk);
        rows_sum(dz, phi_q, n, dk, cc);
    }
}

/* Phase 3, one task: key block `blk` (LA_BWD_BLOCK keys) of head hd:
 *   d_k_blk = (V_blk dSᵀ + 1 dzᵀ) ∘ φ′(K_blk), d_v_blk = φ(K_blk) dS; zero rows for keys
 *   the head does not see. Scratch `mine`: the φ block. */
static void nc_key_block(const nc_job *j, size_t hd, size_t blk, REAL *mine)
{
    const size_t M = j->M, dk = j->dk, dv = j->dv;
    const size_t m = la_keys_in_length(j->p, hd / j->p->heads);
    const size_t j0 = blk * LA_BWD_BLOCK, j1 = M < j0 + LA_BWD_BLOCK ? M : j0 + LA_BWD_BLOCK;
    const size_t n = m <= j0 ? 0 : (m < j1 ? m : j1) - j0; /* visible keys of the block */
    const REAL *dSt = j->states + hd * j->head_size + j->state, *dz = dSt + dv * dk;
    const REAL *dS = dz + dk;
    const REAL *kb = j->k + (hd * M + j0) * dk, *vb = j->v + (hd * M + j0) * dv;
    REAL *dk_blk = j->d_k + (hd * M + j0) * dk, *dv_blk = j->d_v + (hd * M + j0) * dv;
    for (size_t a = n * dk; a < (j1 - j0) * dk; a++) /* hidden keys: zero rows */
        dk_blk[a] = 0;
    for (size_t a = n * dv; a < (j1 - j0) * dv; a++)
        dv_blk[a] = 0;
    if (n == 0) return;
    REAL *phi_k = mine;
    LA_PHI_STREAM(j->p->feature_map, kb, phi_k, n * dk, (m - j0) * dk, dv == dk ? vb : NULL);
    FN(la_linear_hide_keys)(j->p, hd, j0, phi_k, n);
    /* dφ(K_blk) = V_blk dSᵀ + 1 dzᵀ: (n, d_v)·(d_v, d_k), straight into d_k */
    LA_PRODUCT(LA_COUNT_KV, n, dk, dv, 1, vb, (ptrdiff_t)dv, 1, dSt, (ptrdiff_t)dk, 1, 0, dk_blk,
               (ptrdiff_t)dk, 1);
    LA_COUNT(LA_COUNT_KV, (double)n * (double)dk);
    rows_add(dk_blk, n, dk, NULL, dz);
    times_phi_prime(j->p->feature_map, phi_k, dk_blk, n * dk);
    /* d_v_blk = φ(K_blk) dS: (n, d_k)·(d_k, d_v) */
    LA_PRODUCT(LA_COUNT_KV, n, dv, dk, 1, phi_k, (ptrdiff_t)dk, 1, dS, (ptrdiff_t)dv, 1, 0, dv_blk,
               (ptrdiff_t)dv, 1);
}

/* The largest 1/den over every query of every head (0 when none is positive), from the
 * states of phase 1: den_i = φ(q_i)·z + eps computed as phase 2 computes it, so the same
 * bits. Run only when eps alone does not settle the range rule; not counted. */
static double noncausal_inv_den(const nc_job *j, size_t threads)
{
    const size_t N = j->N, dk = j->dk, blocks = (N + LA_BWD_BLOCK - 1) / LA_BWD_BLOCK;
    double smallest = INFINITY;
#pragma omp parallel for schedule(dynamic) reduction(min : smallest) num_threads((int)threads)
    for (size_t task = 0; task < j->heads * blocks; task++) {
        const size_t hd = task / blocks, i0 = task % blocks * LA_BWD_BLOCK;
        if (la_keys_in_length(j->p, hd / j->p->heads) == 0) continue;
        const size_t n = N - i0 < LA_BWD_BLOCK ? N - i0 : LA_BWD_BLOCK;
        REAL *phi_q = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
        const REAL *z = j->states + hd * j->head_size + j->dv * dk;
        FN(la_feature_map)(j->p->feature_map, j->q + (hd * N + i0) * dk, phi_q, n * dk);
        for (size_t i = 0; i < n; i++) {
            const REAL den = FN(la_dot)(phi_q + i * dk, z, dk) + j->eps;
            if (den > 0 && (double)den < smallest) smallest = (double)den;
        }
    }
    return smallest == INFINITY ? 0 : 1 / smallest;
}

/* Non-causal backward. Tasks, each phase over fixed pieces whatever the thread count
 * (when the heads divide among the threads, each thread takes whole heads, every phase of
 * a head in turn, with no synchronization but the range check: the same sums in the same
 * order):
 *   phase 1 (head, key piece of LA_BWD_PIECE keys): [Sᵀ z] of the head, pieces added in
 *     piece order (an ordered section);
 *   the range rule (range.c): with den >= eps when eps > 0, else from every den;
 *   phase 2 (head, query piece): d_q, and [dSᵀ dz] added in piece order; then dS = (dSᵀ)ᵀ
 *     per head;
 *   phase 3 (head, key block of LA_BWD_BLOCK keys): d_k, d_v.
 * Scratch: per head [Sᵀ z], [dSᵀ dz] and dS; per thread a φ block, G and c of a block,
 * and one partial state. */
static la_status linear_noncausal_backward(const la_problem *p, const REAL *q, const REAL *k,
                                           const REAL *v, const REAL *out, const REAL *d_out,
                                           REAL *d_q, REAL *d_k, REAL *d_v)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    backward_layout lay;
    REAL *work = NULL;
    la_status st = backward_alloc(p, LA_KERNEL_LINEAR, &lay, &work);
    if (st != LA_OK) return st;
    const size_t state = dv * dk + dk;
    const nc_job job = {
        .p = p,
        .q = q,
        .k = k,
        .v = v,
        .out = out,
        .d_out = d_out,
        .d_q = d_q,
        .d_k = d_k,
        .d_v = d_v,
        .N = N,
        .M = M,
        .dk = dk,
        .dv = dv,
        .heads = p->batch * p->heads,
        .state = state,
        .head_size = 2 * state + dk * dv,
        .key_pieces = (M + LA_BWD_PIECE - 1) / LA_BWD_PIECE,
        .query_pieces = (N + LA_BWD_PIECE - 1) / LA_BWD_PIECE,
        .key_blocks = (M + LA_BWD_BLOCK - 1) / LA_BWD_BLOCK,
        .states = work,
        .scratch = work + lay.shared,
        .per_thread = lay.per_thread,
        .rows = backward_rows(p),
        .eps = (REAL)p->eps,
    };
    const nc_job *j = &job;
    const int threads = (int)lay.threads;

    const bool whole_heads = j->heads % (size_t)threads == 0;

    /* phase 1: [Sᵀ z] per head */
    if (whole_heads) {
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < j->heads; hd++) {
            REAL *mine = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
            for (size_t piece = 0; piece < j->key_pieces; piece++) {
                nc_key_piece(j, hd, piece, mine);
                nc_piece_add(j->states + hd * j->head_size, nc_partial(j, mine), state, piece == 0);
            }
        }
    } else {
#pragma omp parallel for ordered schedule(dynamic) num_threads(threads)
        for (size_t task = 0; task < j->heads * j->key_pieces; task++) {
            REAL *mine = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
            const size_t hd = task / j->key_pieces, piece = task % j->key_pieces;
            nc_key_piece(j, hd, piece, mine);
#pragma omp ordered
            nc_piece_add(j->states + hd * j->head_size, nc_partial(j, mine), state, piece == 0);
        }
    }
    /* the range rule: den >= eps settles it when eps > 0 is large enough, else every den */
    const double limit = FN(la_range_linear_backward_limit)(p, q, k, v, out, d_out);
    const double eps_inv = (double)job.eps > 0 ? 1 / (double)job.eps : INFINITY;
    if (!inv_den_allowed(eps_inv, limit)) {
        const double inv_den = noncausal_inv_den(j, lay.threads);
        if (!inv_den_allowed(inv_den, limit)) {
            free(work);
            return LA_ERANGE;
        }
    }
    if (whole_heads) { /* phases 2 and 3 of each head on one thread, no synchronization */
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < j->heads; hd++) {
            REAL *mine = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
            REAL *dSt = j->states + hd * j->head_size + state;
            for (size_t piece = 0; piece < j->query_pieces; piece++) {
                nc_query_piece(j, hd, piece, mine);
                nc_piece_add(dSt, nc_partial(j, mine), state, piece == 0);
            }
            transpose(dSt, dv, dk, j->states + hd * j->head_size + 2 * state);
            for (size_t blk = 0; blk < j->key_blocks; blk++)
                nc_key_block(j, hd, blk, mine);
        }
        free(work);
        return LA_OK;
    }
    /* phase 2: d_q, and [dSᵀ dz] per head */
#pragma omp parallel for ordered schedule(dynamic) num_threads(threads)
    for (size_t task = 0; task < j->heads * j->query_pieces; task++) {
        REAL *mine = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
        const size_t hd = task / j->query_pieces, piece = task % j->query_pieces;
        nc_query_piece(j, hd, piece, mine);
#pragma omp ordered
        nc_piece_add(j->states + hd * j->head_size + state, nc_partial(j, mine), state, piece == 0);
    }
    /* dS = (dSᵀ)ᵀ per head, for phase 3's row-major product */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t hd = 0; hd < j->heads; hd++) {
        const REAL *dSt = j->states + hd * j->head_size + state;
        REAL *dS = j->states + hd * j->head_size + 2 * state;
        transpose(dSt, dv, dk, dS);
    }
    /* phase 3: d_k, d_v */
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (size_t task = 0; task < j->heads * j->key_blocks; task++) {
        REAL *mine = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
        nc_key_block(j, task / j->key_blocks, task % j->key_blocks, mine);
    }
    free(work);
    return LA_OK;
}

/* ================================================================ causal, chunked */

enum { TRI = LA_LINEAR_TRI_ROWS }; /* the blocks the mask cuts (linear_internal.h) */

/* What every chunk task of a causal backward shares. Per head: the carried state
 * (`carried`, state = d_v·d_k + d_k: Sᵀ and z in sweep 2, dSᵀ and dz in sweep 3, z alone in
 * sweep 1), the denominators den (N) and the c_i (N) sweep 2 forms for sweep 3. */
typedef struct {
    const la_problem *p;
    const REAL *q, *k, *v, *out, *d_out;
    REAL *d_q, *d_k, *d_v;
    size_t N, M, dk, dv, C, n_chunks, heads, tasks, state;
    REAL *carried, *den, *c, *scratch; /* den and c: N per head */
    size_t per_thread, threads;
    REAL eps;
} ch_job;

/* One task (head, chunk): its sizes and the thread's scratch, carved as
 *   φ(Q_c) C·d_k, φ(K_c) C·d_k, φKᵀ d_k·C, A C·C, Bᵀ C·C, G C·d_v, Gᵀ d_v·C, c C,
 *   the snapshot of the carried state and the chunk's Δ (state each), dS d_k·d_v. */
typedef struct {
    size_t hd, c0, nq, nk, u;
    bool first, last, carries;
    REAL *phi_q, *phi_k, *phi_kt, *A, *Bt, *G, *Gt, *cc, *snap, *delta, *dS;
} ch_task;

static void ch_locate(const ch_job *j, size_t hd, size_t chunk, REAL *mine, ch_task *t)
{
    const size_t C = j->C, dk = j->dk, dv = j->dv;
    t->hd = hd;
    t->c0 = chunk * C;
    t->u = la_keys_in_length(j->p, hd / j->p->heads);
    if (t->u > j->N) t->u = j->N;
    t->nq = j->N - t->c0 < C ? j->N - t->c0 : C;
    t->nk = t->c0 >= t->u ? 0 : (t->u - t->c0 < C ? t->u - t->c0 : C); /* nk <= nq */
    t->first = t->c0 == 0;
    t->last = t->c0 + C >= j->N;
    t->carries = t->nk > 0 && !t->last; /* a later chunk sees its keys */
    t->phi_q = mine;
    t->phi_k = t->phi_q + C * dk;
    t->phi_kt = t->phi_k + C * dk;
    t->A = t->phi_kt + dk * C;
    t->Bt = t->A + C * C;
    t->G = t->Bt + C * C;
    t->Gt = t->G + C * dv;
    t->cc = t->Gt + dv * C;
    t->snap = t->cc + C;
    t->delta = t->snap + j->state;
    t->dS = t->delta + j->state;
}

typedef void (*ch_step)(const ch_job *, ch_task *);

/* One head's chunks in turn on one thread (ch_sweep's first schedule). */
static void ch_head_sweep(const ch_job *j, size_t hd, bool reverse, ch_step prepare,
                          ch_step advance, ch_step finish, REAL *mine)
{
    const size_t n_chunks = j->n_chunks;
    for (size_t s = 0; s < n_chunks; s++) {
        ch_task t;
        ch_locate(j, hd, reverse ? n_chunks - 1 - s : s, mine, &t);
        prepare(j, &t);
        advance(j, &t);
        finish(j, &t);
    }
}

/* One sweep over every (head, chunk): prepare in any order, advance in chunk order within
 * the head (forward, or reverse when `reverse`), finish in any order. Two schedules,
 * bitwise the same (each head's carried sums in the same order): heads a multiple of the
 * threads: whole heads per thread, no synchronization; otherwise tasks in parallel with
 * advance in an ordered section (as the forward's chunked scan, linear_engine.c). */
static void ch_sweep(const ch_job *j, bool reverse, ch_step prepare, ch_step advance,
                     ch_step finish)
{
    const size_t n_chunks = j->n_chunks;
    if (j->heads % j->threads == 0) {
#pragma omp parallel for schedule(dynamic) num_threads((int)j->threads)
        for (size_t hd = 0; hd < j->heads; hd++)
            ch_head_sweep(j, hd, reverse, prepare, advance, finish,
                          j->scratch + (size_t)omp_get_thread_num() * j->per_thread);
    } else {
#pragma omp parallel for ordered schedule(dynamic) num_threads((int)j->threads)
        for (size_t task = 0; task < j->tasks; task++) {
            REAL *mine = j->scratch + (size_t)omp_get_thread_num() * j->per_thread;
            const size_t s = task % n_chunks;
            ch_task t;
            ch_locate(j, task / n_chunks, reverse ? n_chunks - 1 - s : s, mine, &t);
            prepare(j, &t);
#pragma omp ordered
            advance(j, &t);
            finish(j, &t);
        }
    }
}

/* The carried state (n elements) of one head, at a chunk: snap = the state before the
 * chunk (zero at the sweep's first chunk), then carry = snap + delta when `adds`. */
static void carry_advance(REAL *restrict carry, REAL *restrict snap, const REAL *restrict delta,
                          size_t n, bool first, bool adds)
{
    if (first) {
        for (size_t a = 0; a < n; a++) {
            snap[a] = 0;
            carry[a] = adds ? delta[a] : 0;
        }
    } else if (adds) {
        LA_COUNT(LA_COUNT_COMBINE, n);
        for (size_t a = 0; a < n; a++) {
            snap[a] = carry[a];
            carry[a] += delta[a];
        }
    } else {
        for (size_t a = 0; a < n; a++)
            snap[a] = carry[a];
    }
}

/* den_i = φ(q_i)·z_i + eps for the chunk's queries, into j->den: z_i = z_c + φ(k_j) of the
 * chunk's keys j <= i, added one key at a time into z (d_k, holding z_c on entry). Sweeps 1
 * and 2 both run it on the same values, so their den agree bit for bit; only sweep 2's is
 * counted. */
static void chunk_dens(const ch_job *j, const ch_task *t, REAL *restrict z, bool counted)
{
    const size_t dk = j->dk;
    REAL *den = j->den + t->hd * j->N + t->c0;
    for (size_t i = 0; i < t->nq; i++) {
        if (i < t->nk) {
            if (counted) LA_COUNT(LA_COUNT_NORMALIZE, dk);
            for (size_t a = 0; a < dk; a++)
                z[a] += t->phi_k[i * dk + a];
        }
        if (counted) LA_COUNT(LA_COUNT_NORMALIZE, 2 * (double)dk + 1);
        den[i] = FN(la_dot)(t->phi_q + i * dk, z, dk) + j->eps;
    }
}

/* ---- sweep 1, the range check's (forward order; only when eps alone does not settle the
 * range rule; not counted, like range.c's scans): every den, carrying z alone */

static void den_prepare(const ch_job *j, ch_task *t)
{
    const size_t dk = j->dk, hd = t->hd, c0 = t->c0;
    if (t->u == 0) return;
    FN(la_feature_map)(j->p->feature_map, j->q + (hd * j->N + c0) * dk, t->phi_q, t->nq * dk);
    if (t->nk > 0)
        FN(la_feature_map)(j->p->feature_map, j->k + (hd * j->M + c0) * dk, t->phi_k, t->nk * dk);
    if (t->carries) { /* Δz_c = Σ_rows φ(K_c) */
        REAL *dz = t->delta + j->dv * dk;
        for (size_t a = 0; a < dk; a++)
            dz[a] = 0;
        rows_sum(dz, t->phi_k, t->nk, dk, NULL);
    }
}

static void den_advance(const ch_job *j, ch_task *t)
{
    const size_t off = j->dv * j->dk;
    if (t->u == 0) return;
    carry_advance(j->carried + t->hd * j->state + off, t->snap + off, t->delta + off, j->dk,
                  t->first, t->carries);
}

static void den_finish(const ch_job *j, ch_task *t)
{
    if (t->u == 0) { /* sees no key: no gradient (den 0 is the empty row) */
        for (size_t i = 0; i < t->nq; i++)
            j->den[t->hd * j->N + t->c0 + i] = 0;
        return;
    }
    chunk_dens(j, t, t->snap + j->dv * j->dk, false);
}

/* g_i and c_i of the chunk's queries from the stored den: G (nq, d_v) and its transpose
 * Gᵀ (d_v, C), c into t->cc and (for sweep 3) j->c. */
static void chunk_grads(const ch_job *j, ch_task *t)
{
    const size_t dv = j->dv, C = j->C, at = t->hd * j->N + t->c0;
    for (size_t i = 0; i < t->nq; i++) {
        const size_t row = (at + i) * dv;
        t->cc[i] = j->c[at + i] =
            row_grad(j->d_out + row, j->out + row, j->den[at + i], t->G + i * dv, dv);
    }
    TRANSPOSE(t->nq, dv, t->G, dv, t->Gt, C); /* the blocked transpose (lib/cpu/) */
}

/* Sweep 3's G (nq, d_v) and c of the chunk's queries, from sweep 2's den and c: g_i =
 * d_out_i / den_i (row_g, as row_grad forms it), without c's dot product again. */
static void chunk_grads_again(const ch_job *j, ch_task *t)
{
    const size_t dv = j->dv, at = t->hd * j->N + t->c0;
    for (size_t i = 0; i < t->nq; i++) {
        row_g(j->d_out + (at + i) * dv, j->den[at + i], t->G + i * dv, dv);
        t->cc[i] = j->c[at + i];
    }
}

/* ---- sweep 2 (forward order): d_q whole; d_k, d_v their intra-chunk parts */

/* φ(Q_c), φ(K_c), φKᵀ, and the chunk's [ΔSᵀ Δz] = [V_cᵀ φ(K_c), Σ_rows φ(K_c)] when a later
 * chunk sees its keys. */
static void grad_q_prepare(const ch_job *j, ch_task *t)
{
    const size_t dk = j->dk, dv = j->dv, C = j->C, hd = t->hd, c0 = t->c0;
    const size_t nq = t->nq, nk = t->nk;
    const ptrdiff_t ldk = (ptrdiff_t)dk, ldv = (ptrdiff_t)dv;
    if (t->u == 0) return;
    /* φ asks for the rows after the chunk on its loop (la_feature_map_stream) */
    LA_PHI_STREAM(j->p->feature_map, j->q + (hd * j->N + c0) * dk, t->phi_q, nq * dk,
                  (j->N - c0) * dk, (const REAL *)NULL);
    if (nk == 0) return;
    LA_PHI_STREAM(j->p->feature_map, j->k + (hd * j->M + c0) * dk, t->phi_k, nk * dk,
                  (t->u - c0) * dk, dv == dk ? j->v + (hd * j->M + c0) * dv : NULL);
    FN(la_linear_hide_keys)(j->p, hd, c0, t->phi_k, nk);
    TRANSPOSE(nk, dk, t->phi_k, dk, t->phi_kt, C); /* φKᵀ (d_k, C), as the forward's */
    if (t->carries) {
        /* ΔSᵀ = V_cᵀ φ(K_c) (d_v, nk)·(nk, d_k), V_cᵀ through strides; Δz = Σ_rows φ(K_c) */
        const REAL *vc = j->v + (hd * j->M + c0) * dv;
        LA_PRODUCT(LA_COUNT_KV, dv, dk, nk, 1, vc, 1, ldv, t->phi_k, ldk, 1, 0, t->delta, ldk, 1);
        REAL *dz = t->delta + dv * dk;
        LA_COUNT(LA_COUNT_KV, (double)nk * (double)dk);
        for (size_t a = 0; a < dk; a++)
            dz[a] = 0;
        rows_sum(dz, t->phi_k, nk, dk, NULL);
    }
}

/* From the snapshot z_c: den (stored for sweep 3), G, c; the masked A = φ(Q_c) φKᵀ and Bᵀ,
 * B_ij = g_i·v_j + c_i (key j <= query i). */
static void grad_q_blocks(const ch_job *j, ch_task *t)
{
    const size_t dk = j->dk, dv = j->dv, C = j->C, nq = t->nq, nk = t->nk;
    const ptrdiff_t ldk = (ptrdiff_t)dk, ldc = (ptrdiff_t)C, ldv = (ptrdiff_t)dv;
    REAL *z = t->dS; /* the running z_i, in sweep 3's dS scratch */
    for (size_t a = 0; a < dk; a++)
        z[a] = t->snap[dv * dk + a];
    chunk_dens(j, t, z, true);
    chunk_grads(j, t);
    if (nk == 0) return;
    const REAL *vc = j->v + (t->hd * j->M + t->c0) * dv;
    /* by blocks of TRI rows (linear_internal.h), each over the part of the chunk it sees:
     * A = φ(Q_c) φKᵀ (nq, d_k)·(d_k, nk), query rows [i0, i0 + rows) over keys j < i0 + rows;
     * Bᵀ = V_c Gᵀ (nk, d_v)·(d_v, nq), key rows [r0, r0 + keys) over queries i >= r0 */
    for (size_t i0 = 0; i0 < nq; i0 += TRI) {
        const size_t rows = nq - i0 < TRI ? nq - i0 : TRI;
        LA_PRODUCT(LA_COUNT_QK, rows, la_linear_tri_keys(nk, i0, rows), dk, 1, t->phi_q + i0 * dk,
                   ldk, 1, t->phi_kt, ldc, 1, 0, t->A + i0 * C, ldc, 1);
    }
    for (size_t r0 = 0; r0 < nk; r0 += TRI) {
        const size_t keys = nk - r0 < TRI ? nk - r0 : TRI;
        LA_PRODUCT(LA_COUNT_AV, keys, nq - r0, dv, 1, vc + r0 * dv, ldv, 1, t->Gt + r0, ldc, 1, 0,
                   t->Bt + r0 * C + r0, ldc, 1);
    }
    /* the causal mask inside the diagonal blocks (the only hidden entries formed): key
     * j > query i hidden, in A (row i) and Bᵀ (row j) */
    for (size_t i = 0; i + 1 < nk; i++) {
        const size_t end = (i / TRI + 1) * TRI < nk ? (i / TRI + 1) * TRI : nk;
        LA_COUNT(LA_COUNT_HIDDEN, end - i - 1);
        for (size_t r = i + 1; r < end; r++) {
            t->A[i * C + r] = 0;
            t->Bt[r * C + i] = 0;
        }
    }
    for (size_t r = 0; r < nk; r++) {
        LA_COUNT(LA_COUNT_AV, nq - r);
        for (size_t i = r; i < nq; i++)
            t->Bt[r * C + i] += t->cc[i];
    }
}

static void grad_q_advance(const ch_job *j, ch_task *t)
{
    if (t->u == 0) return;
    carry_advance(j->carried + t->hd * j->state, t->snap, t->delta, j->state, t->first, t->carries);
}

/* d_q_c = (G (S_c)ᵀ + c z_cᵀ + B φ(K_c)) ∘ φ′(Q_c); the keys' intra-chunk parts
 * dφ(K_c) = Bᵀ φ(Q_c) and d_v_c = Aᵀ G into d_k and d_v (sweep 3 adds the rest). The
 * first chunk writes zero rows for the keys the head never sees. */
static void grad_q_finish(const ch_job *j, ch_task *t)
{
    const size_t dk = j->dk, dv = j->dv, C = j->C, M = j->M, hd = t->hd, c0 = t->c0;
    const size_t nq = t->nq, nk = t->nk, u = t->u;
    const ptrdiff_t ldk = (ptrdiff_t)dk, ldc = (ptrdiff_t)C, ldv = (ptrdiff_t)dv;
    REAL *dq = j->d_q + (hd * j->N + c0) * dk;
    if (t->first) {
        for (size_t a = u * dk; a < M * dk; a++)
            j->d_k[hd * M * dk + a] = 0;
        for (size_t a = u * dv; a < M * dv; a++)
            j->d_v[hd * M * dv + a] = 0;
    }
    if (u == 0) {
        for (size_t a = 0; a < nq * dk; a++)
            dq[a] = 0;
        return;
    }
    grad_q_blocks(j, t);
    if (!t->first) {
        /* G (S_c)ᵀ (nq, d_v)·(d_v, d_k) with the snapshot's Sᵀ row-major; + c_i z_c */
        const REAL *z = t->snap + dv * dk;
        LA_PRODUCT(LA_COUNT_QS, nq, dk, dv, 1, t->G, ldv, 1, t->snap, ldk, 1, 0, dq, ldk, 1);
        LA_COUNT(LA_COUNT_QS, 2 * (double)nq * (double)dk);
        rows_add(dq, nq, dk, t->cc, z);
    }
    if (nk > 0) {
        /* + B φ(K_c) (nq, nk)·(nk, d_k), B = (Bᵀ)ᵀ through strides: query rows [i0, i0 +
         * rows) over the keys j < i0 + rows they see (B's formed part) */
        for (size_t i0 = 0; i0 < nq; i0 += TRI) {
            const size_t rows = nq - i0 < TRI ? nq - i0 : TRI;
            LA_PRODUCT(LA_COUNT_QK, rows, dk, la_linear_tri_keys(nk, i0, rows), 1, t->Bt + i0, 1,
                       ldc, t->phi_k, ldk, 1, t->first ? 0 : 1, dq + i0 * dk, ldk, 1);
        }
        /* dφ(K_c) intra = Bᵀ φ(Q_c) (nk, nq)·(nq, d_k); d_v_c intra = Aᵀ G (nk, nq)·(nq, d_v):
         * key rows [r0, r0 + keys) over the queries i >= r0 that see them */
        REAL *dkc = j->d_k + (hd * M + c0) * dk, *dvc = j->d_v + (hd * M + c0) * dv;
        for (size_t r0 = 0; r0 < nk; r0 += TRI) {
            const size_t keys = nk - r0 < TRI ? nk - r0 : TRI;
            LA_PRODUCT(LA_COUNT_QK, keys, dk, nq - r0, 1, t->Bt + r0 * C + r0, ldc, 1,
                       t->phi_q + r0 * dk, ldk, 1, 0, dkc + r0 * dk, ldk, 1);
            LA_PRODUCT(LA_COUNT_AV, keys, dv, nq - r0, 1, t->A + r0 * C + r0, 1, ldc,
                       t->G + r0 * dv, ldv, 1, 0, dvc + r0 * dv, ldv, 1);
        }
    } else if (t->first) {
        for (size_t a = 0; a < nq * dk; a++)
            dq[a] = 0;
    }
    times_phi_prime(j->p->feature_map, t->phi_q, dq, nq * dk);
}

/* ---- sweep 3 (reverse order): d_k, d_v from the suffix sums of the gradient state */

/* φ(K_c); and, when an earlier chunk's keys see this chunk's queries, φ(Q_c), G, c and the
 * chunk's [ΔdSᵀ Δdz] = [Gᵀ φ(Q_c), Σ_i c_i φ(q_i)]. */
static void grad_k_prepare(const ch_job *j, ch_task *t)
{
    const size_t dk = j->dk, dv = j->dv, hd = t->hd, c0 = t->c0, nq = t->nq;
    if (t->u == 0) return;
    /* the sweep runs last chunk to first: φ asks for the previous chunk's rows (C whole
     * rows, read by the next task) at its own pace, as `also` (la_feature_map_stream) */
    const bool before = c0 >= j->C;
    if (t->nk > 0) {
        LA_PHI_STREAM(j->p->feature_map, j->k + (hd * j->M + c0) * dk, t->phi_k, t->nk * dk, 0,
                      before ? j->k + (hd * j->M + c0 - j->C) * dk : NULL);
        FN(la_linear_hide_keys)(j->p, hd, c0, t->phi_k, t->nk);
    }
    if (t->first) return;
    LA_PHI_STREAM(j->p->feature_map, j->q + (hd * j->N + c0) * dk, t->phi_q, nq * dk, 0,
                  before ? j->q + (hd * j->N + c0 - j->C) * dk : NULL);
    chunk_grads_again(j, t);
    /* ΔdSᵀ = Gᵀ φ(Q_c) (d_v, nq)·(nq, d_k), Gᵀ through strides; Δdz = Σ_i c_i φ(q_i) */
    LA_PRODUCT(LA_COUNT_QS, dv, dk, nq, 1, t->G, 1, (ptrdiff_t)dv, t->phi_q, (ptrdiff_t)dk, 1, 0,
               t->delta, (ptrdiff_t)dk, 1);
    REAL *dz = t->delta + dv * dk;
    LA_COUNT(LA_COUNT_QS, 2 * (double)nq * (double)dk);
    for (size_t a = 0; a < dk; a++)
        dz[a] = 0;
    rows_sum(dz, t->phi_q, nq, dk, t->cc);
}

static void grad_k_advance(const ch_job *j, ch_task *t)
{
    if (t->u == 0) return;
    /* sweep 3 starts at the last chunk; every chunk but the first adds its queries */
    carry_advance(j->carried + t->hd * j->state, t->snap, t->delta, j->state, t->last, !t->first);
}

/* dφ(K_c) += V_c (dS_{>c})ᵀ + 1 dz_{>c}ᵀ, d_v_c += φ(K_c) dS_{>c} (the queries of later
 * chunks), then d_k_c ∘= φ′(K_c). */
static void grad_k_finish(const ch_job *j, ch_task *t)
{
    const size_t dk = j->dk, dv = j->dv, hd = t->hd, c0 = t->c0, nk = t->nk;
    if (t->u == 0 || nk == 0) return;
    const REAL *vc = j->v + (hd * j->M + c0) * dv;
    REAL *dkc = j->d_k + (hd * j->M + c0) * dk, *dvc = j->d_v + (hd * j->M + c0) * dv;
    if (!t->last) {
        const REAL *dz = t->snap + dv * dk;
        transpose(t->snap, dv, dk, t->dS); /* dS (d_k, d_v), for the row-major product */
        LA_PRODUCT(LA_COUNT_KV, nk, dk, dv, 1, vc, (ptrdiff_t)dv, 1, t->snap, (ptrdiff_t)dk, 1, 1,
                   dkc, (ptrdiff_t)dk, 1);
        LA_COUNT(LA_COUNT_KV, (double)nk * (double)dk);
        rows_add(dkc, nk, dk, NULL, dz);
        LA_PRODUCT(LA_COUNT_KV, nk, dv, dk, 1, t->phi_k, (ptrdiff_t)dk, 1, t->dS, (ptrdiff_t)dv, 1,
                   1, dvc, (ptrdiff_t)dv, 1);
    }
    times_phi_prime(j->p->feature_map, t->phi_k, dkc, nk * dk);
}

/* Causal backward, chunked, C = min(p->chunk, N) tokens per chunk; sweeps of tasks
 * (head, chunk), each carrying one state per head (never a state per chunk or token):
 *   the range rule (range.c), before anything is written: den >= eps settles it when eps
 *      is large enough; else sweep 1 (forward order, carrying z) forms every den_i =
 *      φ(q_i)·z_i + eps first and the rule takes the largest 1/den;
 *   2. forward order, carrying [Sᵀ z]: den_i (as sweep 1 forms it, stored: N per head),
 *      g_i, c_i; with A = φ(Q_c)φ(K_c)ᵀ and B = G V_cᵀ + c 1ᵀ, both masked (key j <= query
 *      i), d_q_c = (G S_cᵀ + c z_cᵀ + B φ(K_c)) ∘ φ′, and the intra-chunk parts of the
 *      chunk's keys, Bᵀ φ(Q_c) and Aᵀ G;
 *   3. reverse order, carrying the suffix sums [dSᵀ dz] of the later chunks' queries:
 *      d_k_c = (… + V_c dS_{>c}ᵀ + dz_{>c}) ∘ φ′, d_v_c += φ(K_c) dS_{>c}.
 * Scratch: per head the carried state and den (N); per thread one chunk's operands. */
static la_status linear_chunked_backward(const la_problem *p, const REAL *q, const REAL *k,
                                         const REAL *v, const REAL *out, const REAL *d_out,
                                         REAL *d_q, REAL *d_k, REAL *d_v)
{
    const size_t N = p->n_queries, heads = p->batch * p->heads;
    const size_t C = p->chunk < N ? p->chunk : N, n_chunks = (N + C - 1) / C;
    backward_layout lay;
    REAL *work = NULL;
    la_status st = backward_alloc(p, LA_KERNEL_LINEAR, &lay, &work);
    if (st != LA_OK) return st;
    const size_t state = p->d_v * p->d_k + p->d_k;
    const ch_job job = {
        .p = p,
        .q = q,
        .k = k,
        .v = v,
        .out = out,
        .d_out = d_out,
        .d_q = d_q,
        .d_k = d_k,
        .d_v = d_v,
        .N = N,
        .M = p->n_keys,
        .dk = p->d_k,
        .dv = p->d_v,
        .C = C,
        .n_chunks = n_chunks,
        .heads = heads,
        .tasks = heads * n_chunks,
        .state = state,
        .carried = work,
        .den = work + heads * state,
        .c = work + heads * (state + N),
        .scratch = work + lay.shared,
        .per_thread = lay.per_thread,
        .threads = lay.threads,
        .eps = (REAL)p->eps,
    };
    /* the range rule: den >= eps settles it when eps > 0 is large enough, else sweep 1 */
    const double limit = FN(la_range_linear_backward_limit)(p, q, k, v, out, d_out);
    const double eps_inv = (double)job.eps > 0 ? 1 / (double)job.eps : INFINITY;
    if (!inv_den_allowed(eps_inv, limit)) {
        ch_sweep(&job, false, den_prepare, den_advance, den_finish);
        const double inv_den = largest_inv_den(job.den, heads * N);
        if (!inv_den_allowed(inv_den, limit)) {
            free(work);
            return LA_ERANGE;
        }
    }
    if (job.heads % job.threads == 0) {
        /* whole heads per thread: a head's sweep 3 reads only its own sweep 2's den, c
         * and d_q-pass results, so one task per head runs both, and the threads meet once
         * rather than after each sweep */
#pragma omp parallel for schedule(dynamic) num_threads((int)job.threads)
        for (size_t hd = 0; hd < heads; hd++) {
            REAL *mine = job.scratch + (size_t)omp_get_thread_num() * job.per_thread;
            ch_head_sweep(&job, hd, false, grad_q_prepare, grad_q_advance, grad_q_finish, mine);
            ch_head_sweep(&job, hd, true, grad_k_prepare, grad_k_advance, grad_k_finish, mine);
        }
    } else {
        ch_sweep(&job, false, grad_q_prepare, grad_q_advance, grad_q_finish);
        ch_sweep(&job, true, grad_k_prepare, grad_k_advance, grad_k_finish);
    }
    free(work);
    return LA_OK;
}

static la_status linear_backward(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                 const REAL *out, const REAL *d_out, REAL *d_q, REAL *d_k,
                                 REAL *d_v)
{
    la_status st = backward_check(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    return p->causal ? linear_chunked_backward(p, q, k, v, out, d_out, d_q, d_k, d_v)
                     : linear_noncausal_backward(p, q, k, v, out, d_out, d_q, d_k, d_v);
}

/* ================================================================ causal, recurrent */

/* Causal backward, token by token, per head (b, h) with u = min(m, N) keys seen:
 *   the range rule, before anything is written: den >= eps settles it when eps is large
 *     enough; else pass 1, t = 0 .. N−1: z += φ(k_t) (t < u), den_t = φ(q_t)·z + eps, and
 *     the rule takes the largest 1/den;
 *   pass 2, t = 0 .. N−1: S += φ(k_t) v_tᵀ, z += φ(k_t) (t < u); den_t (as pass 1 forms
 *     it, stored: N per head), d_q_t = (S g_t + c_t z) ∘ φ′(q_t);
 *   pass 3, t = N−1 .. 0: dS += φ(q_t) g_tᵀ, dz += c_t φ(q_t) (the suffix sums, never a
 *     state subtracted); for t < u: d_k_t = (dS v_t + dz) ∘ φ′(k_t), d_v_t = dSᵀ φ(k_t).
 * Keys t >= u get zero rows; a head that sees no key zeros everywhere.
 * Scratch: den of every head; per thread S or dS, z or dz, φ(q_t), φ(k_t), g_t. */
static la_status linear_recurrent_backward(const la_problem *p, const REAL *q, const REAL *k,
                                           const REAL *v, const REAL *out, const REAL *d_out,
                                           REAL *d_q, REAL *d_k, REAL *d_v)
{
    la_status st = backward_check(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st != LA_OK) return st;
    if (!p->causal) return LA_EINVAL;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads;
    const la_feature_map fm = p->feature_map;
    backward_layout lay;
    REAL *work = NULL;
    st = backward_alloc(p, LA_KERNEL_LINEAR_RECURRENT, &lay, &work);
    if (st != LA_OK) return st;
    const int threads = (int)lay.threads;
    const REAL eps = (REAL)p->eps;
    REAL *den_all = work, *scratch = work + lay.shared;

    /* the range rule: den >= eps settles it when eps > 0 is large enough, else pass 1 */
    const double limit = FN(la_range_linear_backward_limit)(p, q, k, v, out, d_out);
    const double eps_inv = (double)eps > 0 ? 1 / (double)eps : INFINITY;
    if (!inv_den_allowed(eps_inv, limit)) {
        /* pass 1: every den (not counted: the check's) */
#pragma omp parallel for schedule(dynamic) num_threads(threads)
        for (size_t hd = 0; hd < heads; hd++) {
            REAL *z = scratch + (size_t)omp_get_thread_num() * lay.per_thread + dk * dv;
            REAL *phi_q = z + dk, *phi_k = phi_q + dk;
            const size_t u0 = la_keys_in_length(p, hd / p->heads), u = u0 < N ? u0 : N;
            REAL *den = den_all + hd * N;
            for (size_t a = 0; a < dk; a++)
                z[a] = 0;
            for (size_t t = 0; t < N; t++) {
                if (u == 0) {
                    den[t] = 0; /* sees no key: the empty row */
                    continue;
                }
                FN(la_feature_map)(fm, q + (hd * N + t) * dk, phi_q, dk);
                if (t < u) {
                    FN(la_feature_map)(fm, k + (hd * M + t) * dk, phi_k, dk);
                    for (size_t a = 0; a < dk; a++)
                        z[a] += phi_k[a];
                }
                den[t] = FN(la_dot)(phi_q, z, dk) + eps;
            }
        }
        const double inv_den = largest_inv_den(den_all, heads * N);
        if (!inv_den_allowed(inv_den, limit)) {
            free(work);
            return LA_ERANGE;
        }
    }
    /* passes 2 and 3, head by head */
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (size_t hd = 0; hd < heads; hd++) {
        REAL *S = scratch + (size_t)omp_get_thread_num() * lay.per_thread;
        REAL *z = S + dk * dv, *phi_q = z + dk, *phi_k = phi_q + dk, *g = phi_k + dk;
        const size_t u0 = la_keys_in_length(p, hd / p->heads), u = u0 < N ? u0 : N;
        const REAL *qh = q + hd * N * dk, *kh = k + hd * M * dk, *vh = v + hd * M * dv;
        REAL *den = den_all + hd * N;
        REAL *dqh = d_q + hd * N * dk, *dkh = d_k + hd * M * dk, *dvh = d_v + hd * M * dv;
        for (size_t a = u * dk; a < M * dk; a++) /* keys never seen: zero rows */
            dkh[a] = 0;
        for (size_t a = u * dv; a < M * dv; a++)
            dvh[a] = 0;
        if (u == 0) {
            for (size_t a = 0; a < N * dk; a++)
                dqh[a] = 0;
            continue;
        }
        /* pass 2: S and z forward; d_q_t = (S g_t + c_t z) ∘ φ′(q_t) */
        for (size_t a = 0; a < dk * dv + dk; a++)
            S[a] = 0;
        for (size_t t = 0; t < N; t++) {
            LA_PHI(fm, qh + t * dk, phi_q, dk);
            if (t < u) {
                const REAL *vt = vh + t * dv;
                LA_PHI(fm, kh + t * dk, phi_k, dk);
                FN(la_linear_hide_keys)(p, hd, t, phi_k, 1);
                LA_COUNT(LA_COUNT_KV, 2 * (double)dk * (double)dv + (double)dk);
                for (size_t a = 0; a < dk; a++) {
                    for (size_t c = 0; c < dv; c++)
                        S[a * dv + c] += phi_k[a] * vt[c];
                    z[a] += phi_k[a];
                }
            }
            /* den_t (as pass 1 forms it, stored for pass 3), g_t, c_t */
            LA_COUNT(LA_COUNT_NORMALIZE, 2 * (double)dk + 1);
            den[t] = FN(la_dot)(phi_q, z, dk) + eps;
            const REAL ct =
                row_grad(d_out + (hd * N + t) * dv, out + (hd * N + t) * dv, den[t], g, dv);
            REAL *dq = dqh + t * dk;
            LA_COUNT(LA_COUNT_QS, 2 * (double)dk * (double)dv + 2 * (double)dk);
            for (size_t a = 0; a < dk; a++)
                dq[a] = FN(la_dot)(S + a * dv, g, dv) + ct * z[a];
            times_phi_prime(fm, phi_q, dq, dk);
        }
        /* pass 3: the suffix sums dS, dz backward; d_k_t, d_v_t */
        REAL *dS = S, *dz = z;
        for (size_t a = 0; a < dk * dv + dk; a++)
            dS[a] = 0;
        for (size_t t = N; t-- > 0;) {
            LA_PHI(fm, qh + t * dk, phi_q, dk);
            const REAL ct =
                row_grad(d_out + (hd * N + t) * dv, out + (hd * N + t) * dv, den[t], g, dv);
            LA_COUNT(LA_COUNT_QS, 2 * (double)dk * (double)dv + 2 * (double)dk);
            for (size_t a = 0; a < dk; a++) {
                for (size_t c = 0; c < dv; c++)
                    dS[a * dv + c] += phi_q[a] * g[c];
                dz[a] += ct * phi_q[a];
            }
            if (t >= u) continue;
            const REAL *vt = vh + t * dv;
            REAL *dkt = dkh + t * dk, *dvt = dvh + t * dv;
            LA_PHI(fm, kh + t * dk, phi_k, dk);
            FN(la_linear_hide_keys)(p, hd, t, phi_k, 1);
            LA_COUNT(LA_COUNT_KV, 4 * (double)dk * (double)dv + (double)dk);
            for (size_t a = 0; a < dk; a++)
                dkt[a] = FN(la_dot)(dS + a * dv, vt, dv) + dz[a];
            for (size_t c = 0; c < dv; c++)
                dvt[c] = 0;
            for (size_t a = 0; a < dk; a++)
                for (size_t c = 0; c < dv; c++)
                    dvt[c] += dS[a * dv + c] * phi_k[a];
            times_phi_prime(fm, phi_k, dkt, dk);
        }
    }
    free(work);
    return LA_OK;
}

#if REAL_IS_F32
la_status la_linear_attention_backward_f32(const la_problem *p, const float *q, const float *k,
                                           const float *v, const float *out, const float *d_out,
                                           float *d_q, float *d_k, float *d_v)
#else
la_status la_linear_attention_backward_f64(const la_problem *p, const double *q, const double *k,
                                           const double *v, const double *out, const double *d_out,
                                           double *d_q, double *d_k, double *d_v)
#endif
{
    if (la_causal_square(p))
        return FN(la_square_backward)(p, FN(la_linear_attention_backward), q, k, v, out, d_out, d_q,
                                      d_k, d_v);
    if (p && p->mask) return LA_EINVAL; /* a general mask: refused (linattn.h) */
    const la_status st = linear_backward(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st == LA_OK) FN(la_linear_hide_key_grads)(p, d_k); /* hidden keys: d_k = 0 */
    return st;
}

/* The backward on features the caller formed (linear_internal.h): p checked by the caller,
 * p->feature_map LA_FEATURE_IDENTITY, no general mask. */
#if REAL_IS_F32
la_status la_linear_backward_features_f32(const la_problem *p, const float *phi_q,
                                          const float *phi_k, const float *v, const float *out,
                                          const float *d_out, float *d_phi_q, float *d_phi_k,
                                          float *d_v)
#else
la_status la_linear_backward_features_f64(const la_problem *p, const double *phi_q,
                                          const double *phi_k, const double *v, const double *out,
                                          const double *d_out, double *d_phi_q, double *d_phi_k,
                                          double *d_v)
#endif
{
    return p->causal
               ? linear_chunked_backward(p, phi_q, phi_k, v, out, d_out, d_phi_q, d_phi_k, d_v)
               : linear_noncausal_backward(p, phi_q, phi_k, v, out, d_out, d_phi_q, d_phi_k, d_v);
}

#if REAL_IS_F32
la_status la_linear_attention_recurrent_backward_f32(const la_problem *p, const float *q,
                                                     const float *k, const float *v,
                                                     const float *out, const float *d_out,
                                                     float *d_q, float *d_k, float *d_v)
#else
la_status la_linear_attention_recurrent_backward_f64(const la_problem *p, const double *q,
                                                     const double *k, const double *v,
                                                     const double *out, const double *d_out,
                                                     double *d_q, double *d_k, double *d_v)
#endif
{
    if (la_causal_square(p))
        return FN(la_square_backward)(p, FN(la_linear_attention_recurrent_backward), q, k, v, out,
                                      d_out, d_q, d_k, d_v);
    if (p && p->mask) return LA_EINVAL; /* a general mask: refused (linattn.h) */
    const la_status st = linear_recurrent_backward(p, q, k, v, out, d_out, d_q, d_k, d_v);
    if (st == LA_OK) FN(la_linear_hide_key_grads)(p, d_k); /* hidden keys: d_k = 0 */
    return st;
}

#if REAL_IS_F32
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
 * and chunk_finish (linear_engine.c) issue. Tokens are split into chunks of C; query i in chunk [s,
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

/* Workspace: the layout the scans allocate (la_linear_workspace_bytes). */
static la_status layout_bytes(const la_problem *p, bool recurrent, la_dtype dtype, la_cost *out)
{
    size_t bytes = 0;
    la_status st = la_linear_workspace_bytes(p, recurrent, la_dtype_size(dtype), &bytes);
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
    /* bytes_min beyond q, k, v, out: S and z per head, out and back */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 *
                     ((double)p->d_k * (double)p->d_v + (double)p->d_k) *
                     (double)la_dtype_size(dtype);
    return layout_bytes(p, false, dtype, out);
}

la_status la_linear_recurrent_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    if (la_causal_square(p)) return la_square_cost(p, dtype, la_linear_recurrent_cost, false, out);
    la_cost_sum_heads(p, recurrent_head_flops, out);
    out->bytes_min = (double)p->batch * (double)p->heads * 2 *
                     ((double)p->d_k * (double)p->d_v + (double)p->d_k) *
                     (double)la_dtype_size(dtype);
    return layout_bytes(p, true, dtype, out);
}

/* ---------------------------------------------------------------- the backward's cost */

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
 *   sweep 3: φ(K) and φ′ on d_k 2u·d_k, φ(Q) later_queries·d_k; g again (c kept from
 *     sweep 2) later_queries·d_v; per later query [ΔdSᵀ Δdz] 2·d_k·d_v + 2·d_k (qs); per
 *     carried key V dSᵀ + dz and φ(K) dS, 4·d_k·d_v + d_k (kv).
 * Sweep 1, run for the range rule only when eps does not settle it, is not counted (a
 * check, like range.c's scans). The masked products are formed by blocks of 8 rows
 * (linear_internal.h) and the hidden entries inside the diagonal blocks not counted;
 * adding a Δ into the carried state joins partial sums and is not counted (la_cost). */
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
    f->flops_normalize = u * dk + n * (2 * dk + 1) + n * (3 * dv + 1) + later_queries * dv;
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
    la_status st = backward_layout_for(p, kernel, la_dtype_size(dtype), (size_t)la_threads(), &lay);
    if (st != LA_OK) return st;
    if (!la_mul_ok(lay.total, la_dtype_size(dtype), &bytes)) return LA_EOVERFLOW;
    out->workspace_bytes = (double)bytes;
    return LA_OK;
}

void la_linear_backward_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    (p->causal ? chunked_backward_head_flops : noncausal_backward_head_flops)(p, m, f);
    if (p->feature_map == LA_FEATURE_IDENTITY) f->flops_phi = 0; /* the caller's features */
}

la_status la_linear_backward_workspace_bytes(const la_problem *p, size_t element_size,
                                             size_t *bytes)
{
    backward_layout lay;
    la_status st =
        backward_layout_for(p, LA_KERNEL_LINEAR, element_size, (size_t)la_threads(), &lay);
    if (st != LA_OK) return st;
    return la_mul_ok(lay.total, element_size, bytes) ? LA_OK : LA_EOVERFLOW;
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
#endif /* REAL_IS_F32 */

/* ---------------------------------------------------------------- registry row */

#if REAL_IS_F32
static const la_kernel_fns linear_fns = {
    .forward_f32 = la_linear_attention_f32,
    .forward_f64 = la_linear_attention_f64,
    .reference = la_ref_linear_attention,
    .cost = la_linear_cost,
    .backward_f32 = la_linear_attention_backward_f32,
    .backward_f64 = la_linear_attention_backward_f64,
    .reference_backward = la_ref_linear_attention_backward,
    .backward_cost = la_linear_backward_cost,
    .weights_f32 = la_linear_weights_f32,
    .weights_f64 = la_linear_weights_f64,
};

const la_kernel_info la_row_linear = {
    .kernel = LA_KERNEL_LINEAR,
    .name = "linear",
    .summary = "linear, φ(q)ᵀS / (φ(q)ᵀz + eps) (Katharopoulos et al. 2020): S = φ(K)ᵀV "
               "once per head; causal: in chunks, carrying S and z",
    .series = {"linear", "linear_causal_chunked"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_FEATURE_MAP | LA_PARAM_EPS | LA_PARAM_CHUNK,
    .masks = LA_MASK_KEY,
    .caps = LA_CAP_STEP | LA_CAP_ROTARY_FEATURES | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD |
            LA_CAP_WEIGHTS,
    .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
    .time_exponent = 1,
    .family = "linear",
    .fns = &linear_fns,
};

static const la_kernel_fns linear_recurrent_fns = {
    .forward_f32 = la_linear_attention_recurrent_f32,
    .forward_f64 = la_linear_attention_recurrent_f64,
    .reference = la_ref_linear_attention,
    .cost = la_linear_recurrent_cost,
    .backward_f32 = la_linear_attention_recurrent_backward_f32,
    .backward_f64 = la_linear_attention_recurrent_backward_f64,
    .reference_backward = la_ref_linear_attention_backward,
    .backward_cost = la_linear_recurrent_backward_cost,
    .weights_f32 = la_linear_weights_f32,
    .weights_f64 = la_linear_weights_f64,
};

const la_kernel_info la_row_linear_recurrent = {
    .kernel = LA_KERNEL_LINEAR_RECURRENT,
    .name = "linear_recurrent",
    .summary = "linear, causal, token by token: S and z updated per token, as the step API does",
    .series = {NULL, "linear_causal_recurrent"},
    .causal = LA_CAUSAL_REQUIRED,
    .params = LA_PARAM_FEATURE_MAP | LA_PARAM_EPS,
    .masks = LA_MASK_KEY,
    .caps = LA_CAP_STEP | LA_CAP_ROTARY_FEATURES | LA_CAP_APPROXIMATES | LA_CAP_BACKWARD |
            LA_CAP_WEIGHTS,
    .sweep = LA_SWEEP_CAUSAL,
    .time_exponent = 1,
    .family = "linear",
    .fns = &linear_recurrent_fns,
};
#endif

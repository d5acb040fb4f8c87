/* scores.c — softmax attention over the score functions other than the dot product, in one
 * precision (the Makefile compiles this file twice: real_typed.h): general s = q·W·k · scale,
 * additive s = vᵀtanh(W_q q + W_k k), cosine s = cos(q, k) · scale (dot and scaled dot are
 * the softmax kernel at scale 1 and 1/√d_k).
 *
 *   q: (B, H, N, d_k), k: (B, H, M, d_k), v: (B, H, M, d_v), out: (B, H, N, d_v), row-major;
 *   general W = score_w: (d_k, d_k); additive W: (d_a, 2·d_k), v: (d_a); float64, or
 *   drawn from seed (la_score_weights).
 *
 * general and cosine transform their inputs (K' = K Wᵀ; Q̂, K̂ normalized) and hand them to
 * the fused softmax kernel; additive forms A = Q W_qᵀ and Cᵀ = W_k Kᵀ, then runs the
 * online-softmax engine (engine.h) with its own score tile (the tanh sums of each row's
 * visible pairs; from e^{2A} and e^{2C} where they stay normal numbers:
 * additive_exponentials). The seeded draw of the weights and the costs are here too.
 * Contracts in lib/linattn.h ("SCORE FUNCTIONS"). */
#include "attention/engine.h"
#include "core/real_typed.h"
#include "cpu/vtanh.h"

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

#if REAL_IS_F32
#define LA_MAX_ABS la_max_abs_f32
#define LA_MAX_ABS_SEEN la_max_abs_seen_f32
#define SOFTMAX la_softmax_attention_f32
#define PORTABLE la_engine_portable_f32
#define TANH_SCORES_FN la_tanh_scores_f32_fn
#define TANH_SCORES_FOR la_tanh_scores_f32_for
#define TANH_EXP_SCORES_FN la_tanh_exp_scores_f32_fn
#define TANH_EXP_SCORES_FOR la_tanh_exp_scores_f32_for
#define TANH_EXP_MAX LA_TANH_EXP_MAX_F32
#define VEXP la_vexp_f32
#else
#define LA_MAX_ABS la_max_abs_f64
#define LA_MAX_ABS_SEEN la_max_abs_seen_f64
#define SOFTMAX la_softmax_attention_f64
#define PORTABLE la_engine_portable_f64
#define TANH_SCORES_FN la_tanh_scores_f64_fn
#define TANH_SCORES_FOR la_tanh_scores_f64_for
#define TANH_EXP_SCORES_FN la_tanh_exp_scores_f64_fn
#define TANH_EXP_SCORES_FOR la_tanh_exp_scores_f64_for
#define TANH_EXP_MAX LA_TANH_EXP_MAX_F64
#define VEXP la_vexp_f64
#endif

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
    const la_score_params score = la_score_params_of(p);
    weight_shape s;
    la_status st = weight_counts(LA_KERNEL_GENERAL, p->d_k, score.score_dim, &s);
    if (st != LA_OK) return st;
    lay->first = elem == sizeof(float) || !score.score_w ? s.n_w : 0;
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
 * or drawn; float64: drawn; none when given), A (B, H, N, d_a) and Cᵀ (B, H, d_a, M), all
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
    const la_score_params score = la_score_params_of(p);
    weight_shape s;
    la_status st = weight_counts(LA_KERNEL_ADDITIVE, p->d_k, score.score_dim, &s);
    if (st != LA_OK) return st;
    const bool own = elem == sizeof(float) || !score.score_w;
    lay->w = own ? s.n_w : 0;
    lay->v = own ? s.n_v : 0;
    const size_t heads = p->batch * p->heads, da = score.score_dim;
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
    lay->per_thread = la_engine_portable_bytes(lay->bq, lay->bk, elem, elem, 0);
    if (lay->per_thread == SIZE_MAX) return LA_EOVERFLOW;
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

/* The weights as this precision reads them: the caller's (float64, given; own_count 0),
 * else `own` (s.n_w + s.n_v elements) filled with them converted (float32) or drawn from
 * seed. s: W's and v's entries (v: none for general). */
static void weights_of(const la_problem *p, weight_shape s, size_t own_count, REAL *own,
                       const REAL **w, const REAL **v)
{
    const la_score_params score = la_score_params_of(p);
    if (own_count == 0) { /* float64, given: read in place */
        *w = (const REAL *)score.score_w;
        *v = (const REAL *)score.score_v;
        return;
    }
    REAL *w_own = own, *v_own = own + s.n_w;
    if (!score.score_w)
        draw_weights(s, score.seed, REAL_IS_F32 ? NULL : (double *)w_own,
                     REAL_IS_F32 ? NULL : (double *)v_own, REAL_IS_F32 ? (float *)w_own : NULL,
                     REAL_IS_F32 ? (float *)v_own : NULL);
    else {
        for (size_t x = 0; x < s.n_w; x++)
            w_own[x] = (REAL)score.score_w[x];
        for (size_t x = 0; x < s.n_v; x++)
            v_own[x] = (REAL)score.score_v[x];
    }
    *w = w_own;
    *v = v_own;
}

/* ---------------------------------------------------------------- general: q·W·k · scale */

/* General scores (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   W = score_w: (d_k, d_k) row-major float64, or drawn from seed.
 * q·W·k = q·k' with k' = W k, so K' = K Wᵀ per head (the keys some query sees,
 * la_keys_seen; the rows past them are never read), one BLIS product per head on the
 * OpenMP threads, then the fused softmax kernel once over (Q, K', V) with p's masks and
 * scale. */
static la_status general_attention(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                   REAL *out)
{
    const la_score_params score = la_score_params_of(p);
    la_status st = score_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t M = p->n_keys, dk = p->d_k, heads = p->batch * p->heads;
    transform_layout lay;
    if ((st = general_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const weight_shape s = shape_of(LA_KERNEL_GENERAL, dk, score.score_dim);

    /* the range rule: given W finite; |k'| <= d_k·max|W|·max|k| within T/8 */
    double w_max, w_sum;
    if (score.score_w && !finite_abs(score.score_w, s.n_w, &w_max, &w_sum)) return LA_EINVAL;
    if (!score.score_w) w_max = drawn_bound(s.sd_w);
    const double k_max = LA_MAX_ABS_SEEN(p, k, dk);
    const double limit = (double)REAL_MAX / 8;
    if (w_max > limit || (isfinite(k_max) && (double)dk * w_max * k_max > limit)) return LA_ERANGE;

    const size_t held = lay.total * sizeof(REAL);
    if (held > p->workspace_limit) return LA_EBUDGET;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    REAL *scratch = aligned_alloc(64, (held + 63) / 64 * 64);
    if (!scratch) return LA_ENOMEM;
    const REAL *w, *unused;
    weights_of(p, s, lay.first, scratch, &w, &unused);
    REAL *kp = scratch + lay.first;

    /* per head: K'_h[:u] = K_h[:u] Wᵀ (u × d_k), u the keys seen */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t u = la_keys_seen(p, bh / p->heads);
        GEMM(u, dk, dk, 1, k + bh * M * dk, (ptrdiff_t)dk, 1, w, 1, (ptrdiff_t)dk, 0,
             kp + bh * M * dk, (ptrdiff_t)dk, 1);
    }

    /* y = softmax(Q K'ᵀ · scale) V: the fused kernel, with the budget left */
    const la_problem in = inner_problem(p, held);
    st = SOFTMAX(&in, q, kp, v, out);
    free(scratch);
    return st;
}

/* ---------------------------------------------------------------- cosine: q̂·k̂ · scale */

/* y = x / max(‖x‖, NORM_EPS) for one row of n: the norm in float64, as big·‖x / big‖ with
 * big = max |x_c|, so that squaring cannot overflow or underflow; a zero row stays zero. */
static void normalize_row(const REAL *x, REAL *y, size_t n)
{
    double big = 0;
    for (size_t c = 0; c < n; c++) {
        const double a = fabs((double)x[c]);
        if (!(a <= big)) big = a; /* a NaN sticks */
    }
    if (big == 0) {
        memset(y, 0, n * sizeof *y);
        return;
    }
    double sum = 0;
    for (size_t c = 0; c < n; c++) {
        const double t = (double)x[c] / big;
        sum += t * t;
    }
    double norm = big * sqrt(sum);
    if (norm < NORM_EPS) norm = NORM_EPS;
    for (size_t c = 0; c < n; c++)
        y[c] = (REAL)((double)x[c] / norm);
}

/* Cosine scores (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major.
 * Q̂ and K̂ normalized row by row (the keys some query sees, la_keys_seen; the rows past
 * them are never read, and a head whose queries see no key gets rows of zeros), then the
 * fused softmax kernel once over (Q̂, K̂, V). */
static la_status cosine_attention(const la_problem *p, const REAL *q, const REAL *k, const REAL *v,
                                  REAL *out)
{
    la_status st = score_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, heads = p->batch * p->heads;
    transform_layout lay;
    if ((st = cosine_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const size_t held = lay.total * sizeof(REAL);
    if (held > p->workspace_limit) return LA_EBUDGET;
    int threads = la_threads();
    if ((size_t)threads > heads) threads = (int)heads;
    REAL *scratch = aligned_alloc(64, (held + 63) / 64 * 64);
    if (!scratch) return LA_ENOMEM;
    REAL *qn = scratch, *kn = scratch + lay.first;

#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t u = la_keys_seen(p, bh / p->heads);
        REAL *qh = qn + bh * N * dk, *kh = kn + bh * M * dk;
        if (u == 0) { /* no query sees a key: rows of zeros, not read */
            memset(qh, 0, N * dk * sizeof *qh);
        } else {
            for (size_t i = 0; i < N; i++)
                normalize_row(q + (bh * N + i) * dk, qh + i * dk, dk);
        }
        for (size_t j = 0; j < u; j++)
            normalize_row(k + (bh * M + j) * dk, kh + j * dk, dk);
    }

    /* y = softmax(Q̂ K̂ᵀ · scale) V: the fused kernel, with the budget left */
    const la_problem in = inner_problem(p, held);
    st = SOFTMAX(&in, qn, kn, v, out);
    free(scratch);
    return st;
}

/* ---------------------------------------------------------------- additive: vᵀtanh(A + C) */

/* What the additive tiles read (la_engine's ctx): A = Q W_qᵀ (B, H, N, d_a), Cᵀ = W_k Kᵀ
 * (B, H, d_a, M; the columns of the keys seen set), v (d_a), and a query's scores on the
 * SIMD path of this call (cpu/vtanh.h). */
typedef struct {
    const REAL *a, *ct, *w_v;
    TANH_SCORES_FN tanh_scores;
    size_t score_dim;              /* d_a */
    TANH_EXP_SCORES_FN exp_scores; /* set: A and Cᵀ hold e^{2A}, e^{2Cᵀ} */
    REAL w_sum;                    /* Σ_a v_a, for exp_scores */
} additive_ctx;

/* The exponential form of the scores (vtanh.h, la_tanh_exp_scores_*_for): when every entry
 * of A and of Cᵀ's seen columns that the scores read is within TANH_EXP_MAX (20 in
 * float32, 170 in float64; NaN not), A and those columns of Cᵀ become e^{2A} and e^{2Cᵀ}
 * in place and the result is true; else nothing changes and the scores take tanh
 * directly. */
static bool additive_exponentials(const la_problem *p, REAL *a, REAL *ct, size_t da, int threads)
{
    const size_t heads = p->batch * p->heads, N = p->n_queries, M = p->n_keys;
    bool within = true;
#pragma omp parallel for schedule(static) num_threads(threads) reduction(&& : within)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t u = la_keys_seen(p, bh / p->heads);
        bool ok = true;
        for (size_t x = 0; u && x < N * da; x++)
            ok &= fabs(a[bh * N * da + x]) <= TANH_EXP_MAX; /* false for NaN */
        for (size_t r = 0; r < da; r++)
            for (size_t j = 0; j < u; j++)
                ok &= fabs(ct[(bh * da + r) * M + j]) <= TANH_EXP_MAX;
        within = within && ok;
    }
    if (!within) return false;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t u = la_keys_seen(p, bh / p->heads);
        REAL *ah = a + bh * N * da;
#pragma omp simd
        for (size_t x = 0; x < (u ? N * da : 0); x++)
            ah[x] = VEXP(2 * ah[x]);
        for (size_t r = 0; r < da; r++) {
            REAL *row = ct + (bh * da + r) * M;
#pragma omp simd
            for (size_t j = 0; j < u; j++)
                row[j] = VEXP(2 * row[j]);
        }
    }
    return true;
}

/* s_ij = Σ_a v_a tanh(a_ia + c_ja) over each row's visible keys of the block [j0, j0 + cols),
 * the keys in the vector lanes (Cᵀ's rows), summed over a; the rest of the row is the
 * softmax tile's to zero. */
static void additive_scores(la_engine_task *t, size_t j0, size_t cols)
{
    const la_problem *p = t->p;
    const additive_ctx *x = t->e->ctx;
    const size_t da = x->score_dim, N = p->n_queries, M = p->n_keys;
    const REAL *a = x->a + t->hd * N * da, *ct = x->ct + t->hd * da * M, *w_v = x->w_v;
    REAL *s = la_engine_rows_of(t)->s;
    for (size_t r = 0; r < t->rows; r++) {
        REAL *srow = s + r * cols;
        const size_t hi = t->hi[r];
        const size_t n = hi > j0 ? (hi - j0 < cols ? hi - j0 : cols) : 0;
        if (n == 0) continue;
        if (x->exp_scores)
            x->exp_scores(a + (t->i0 + r) * da, ct + j0, M, w_v, x->w_sum, da, srow, n);
        else
            x->tanh_scores(a + (t->i0 + r) * da, ct + j0, M, w_v, da, srow, n);
    }
}

/* acc += p_blk · v_blk   (rows × d_v), the register tiles of GEMM_SMALL */
static void additive_values(la_engine_task *t, size_t j0, size_t cols)
{
    const size_t dv = t->p->d_v;
    const REAL *vh = t->v;
    GEMM_SMALL(t->rows, dv, cols, 1, (const REAL *)la_engine_rows_of(t)->s, (ptrdiff_t)cols, 1,
               vh + j0 * dv, (ptrdiff_t)dv, 1, 1, (REAL *)t->out + t->i0 * dv, (ptrdiff_t)dv, 1);
}

/* Additive scores (contract in linattn.h):
 *   q: (B,H,N,d_k), k: (B,H,M,d_k), v: (B,H,M,d_v), out: (B,H,N,d_v), row-major;
 *   W = score_w: (d_a, 2·d_k), v = score_v: (d_a), float64, or drawn from seed.
 * First A_h = Q_h W_qᵀ and C_h = K_h W_kᵀ for every head (BLIS, W_q and W_k read in place
 * through W's strides), then tasks (b, h, block of 64 queries), one thread each, each
 * thread with its own slice of the scratch (additive_layout_for). */
static la_status additive_attention(const la_problem *p, const REAL *q, const REAL *k,
                                    const REAL *v, REAL *out)
{
    const la_score_params score = la_score_params_of(p);
    la_status st = score_check(p, q, k, v, out);
    if (st != LA_OK) return st;
    if ((score.score_w == NULL) != (score.score_v == NULL)) return LA_EINVAL;
    if (la_has_masks(p)) return LA_EINVAL; /* general masks: refused (linattn.h) */
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v, da = score.score_dim;
    const size_t heads = p->batch * p->heads;
    additive_layout lay;
    if ((st = additive_layout_for(p, sizeof(REAL), &lay)) != LA_OK) return st;
    const weight_shape s = shape_of(LA_KERNEL_ADDITIVE, dk, da);

    /* the range rule: given weights finite; |A|, |C| <= d_k·max|W|·max(|q|, |k|), every
     * |score| <= Σ|v_a|, and the P·V sums <= u·max|v| (u keys seen, la_keys_seen_max; k and
     * v over those), each within T/8 */
    double w_max, w_sum, v_max, v_sum;
    if (score.score_w && (!finite_abs(score.score_w, s.n_w, &w_max, &w_sum) ||
                          !finite_abs(score.score_v, s.n_v, &v_max, &v_sum)))
        return LA_EINVAL;
    if (!score.score_w) w_max = drawn_bound(s.sd_w), v_sum = (double)da * drawn_bound(s.sd_v);
    const double q_max = LA_MAX_ABS(q, heads * N * dk), k_max = LA_MAX_ABS_SEEN(p, k, dk);
    const double values_max = LA_MAX_ABS_SEEN(p, v, dv);
    const double limit = (double)REAL_MAX / 8;
    if (w_max > limit || v_sum > limit || (isfinite(q_max) && (double)dk * w_max * q_max > limit) ||
        (isfinite(k_max) && (double)dk * w_max * k_max > limit) ||
        (isfinite(values_max) && (double)la_keys_seen_max(p) * values_max > limit))
        return LA_ERANGE;

    if (lay.total > p->workspace_limit) return LA_EBUDGET;
    const int threads = lay.threads;
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    unsigned char *scratch = aligned_alloc(64, lay.shared);
    if (!scratch) return LA_ENOMEM;
    const REAL *w, *w_v;
    weights_of(p, s, lay.w, (REAL *)scratch, &w, &w_v);
    REAL *a = (REAL *)scratch + lay.w + lay.v, *c = a + lay.a;

    /* per head: A_h = Q_h W_qᵀ (N × d_a), C_hᵀ[:, :u] = W_k K_h[:u]ᵀ (d_a × u, row stride
     * M), u the keys seen (la_keys_seen); W_q = W[:, :d_k] and W_k = W[:, d_k:], read
     * through the strides; nothing when u = 0 */
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t bh = 0; bh < heads; bh++) {
        const size_t u = la_keys_seen(p, bh / p->heads);
        if (u == 0) continue;
        GEMM(N, da, dk, 1, q + bh * N * dk, (ptrdiff_t)dk, 1, w, 1, (ptrdiff_t)(2 * dk), 0,
             a + bh * N * da, (ptrdiff_t)da, 1);
        GEMM(da, u, dk, 1, w + dk, (ptrdiff_t)(2 * dk), 1, k + bh * M * dk, 1, (ptrdiff_t)dk, 0,
             c + bh * da * M, (ptrdiff_t)M, 1);
    }

    /* y = softmax(scores) V on the engine, with the additive score and value tiles */
    additive_ctx ctx = {
        .a = a, .ct = c, .w_v = w_v, .tanh_scores = TANH_SCORES_FOR(), .score_dim = da};
    if (additive_exponentials(p, a, c, da, threads)) {
        ctx.exp_scores = TANH_EXP_SCORES_FOR();
        for (size_t x = 0; x < da; x++)
            ctx.w_sum += w_v[x];
    }
    la_engine e = {.wide = PORTABLE,
                   .q_block = Q_BLOCK,
                   .k_block = K_BLOCK,
                   .bq = lay.bq,
                   .bk = lay.bk,
                   .elem = sizeof(REAL),
                   .scratch_bytes = lay.per_thread,
                   .keys = la_engine_prefix_keys,
                   .ctx = &ctx};
    e.wide.scores = additive_scores;
    e.wide.values = additive_values;
    st = la_engine_run(&e, p, q, k, v, out, NULL, lay.shared);
    free(scratch);
    return st;
}

/* ---------------------------------------------------------------- the public kernels */

#if REAL_IS_F32
la_status la_general_attention_f32(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out)
{
    return general_attention(p, q, k, v, out);
}

la_status la_additive_attention_f32(const la_problem *p, const float *q, const float *k,
                                    const float *v, float *out)
{
    return additive_attention(p, q, k, v, out);
}

la_status la_cosine_attention_f32(const la_problem *p, const float *q, const float *k,
                                  const float *v, float *out)
{
    return cosine_attention(p, q, k, v, out);
}
#else
la_status la_general_attention_f64(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out)
{
    return general_attention(p, q, k, v, out);
}

la_status la_additive_attention_f64(const la_problem *p, const double *q, const double *k,
                                    const double *v, double *out)
{
    return additive_attention(p, q, k, v, out);
}

la_status la_cosine_attention_f64(const la_problem *p, const double *q, const double *k,
                                  const double *v, double *out)
{
    return cosine_attention(p, q, k, v, out);
}
#endif

#if REAL_IS_F32
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

/* ---------------------------------------------------------------- their costs (la_cost_fn) */

/* Softmax's count of one head's visible pairs: QKᵀ 2·d_k, softmax 5, P·V 2·d_v per pair. */
static void softmax_fields(const la_problem *p, size_t m, la_cost *f)
{
    const double pairs = la_visible_pairs_of(p, m);
    f->flops_qk = 2 * pairs * (double)p->d_k;
    f->flops_softmax = 5 * pairs;
    f->flops_av = 2 * pairs * (double)p->d_v;
}

/* The keys some query of a head with m keys in length sees (la_keys_seen): the last
 * query's. */
static double keys_seen_of(const la_problem *p, size_t m)
{
    return (double)la_visible_keys_of(p, m, p->n_queries - 1);
}

/* general, one head with m keys in length: K' = K Wᵀ over the u keys seen, 2·u·d_k², then
 * softmax. */
static void general_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    softmax_fields(p, m, f);
    f->flops_kv = 2 * keys_seen_of(p, m) * (double)p->d_k * (double)p->d_k;
}

/* cosine, one head with m keys in length: N + u rows normalized (u keys seen), 3·d_k + 1
 * each (none when u = 0: no query sees a key), then softmax. */
static void cosine_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    softmax_fields(p, m, f);
    const double u = keys_seen_of(p, m);
    if (u > 0) f->flops_phi = ((double)p->n_queries + u) * (3 * (double)p->d_k + 1);
}

/* additive, one head with m keys in length and u keys seen (none: no work): A = Q W_qᵀ
 * 2·N·d_a·d_k, C = K W_kᵀ 2·u·d_a·d_k, scores 4·d_a per visible pair, softmax 5 and P·V
 * 2·d_v per pair. */
static void additive_head_flops(const la_problem *p, size_t m, la_cost *f)
{
    const la_score_params score = la_score_params_of(p);
    const double u = keys_seen_of(p, m);
    if (u == 0) return;
    const double pairs = la_visible_pairs_of(p, m), da = (double)score.score_dim;
    const double dk = (double)p->d_k;
    f->flops_qs = 2 * (double)p->n_queries * da * dk;
    f->flops_kv = 2 * u * da * dk;
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
    /* bytes_min beyond q, k, v, out: K W (M, d_k) out and back; W read once, float64 */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 * (double)p->n_keys * (double)p->d_k *
                         (double)la_dtype_size(dtype) +
                     (double)p->d_k * (double)p->d_k * (double)sizeof(double);
    return transform_cost(p, dtype, &lay, out);
}

la_status la_cosine_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    transform_layout lay;
    la_status st = cosine_layout_for(p, la_dtype_size(dtype), &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, cosine_head_flops, out);
    /* bytes_min beyond q, k, v, out: the normalized q and k out and back */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 * (double)(p->n_queries + p->n_keys) *
                     (double)p->d_k * (double)la_dtype_size(dtype);
    return transform_cost(p, dtype, &lay, out);
}

la_status la_additive_cost(const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_score_params score = la_score_params_of(p);
    additive_layout lay;
    la_status st = additive_layout_for(p, la_dtype_size(dtype), &lay);
    if (st != LA_OK) return st;
    la_cost_sum_heads(p, additive_head_flops, out);
    /* bytes_min beyond q, k, v, out: Q W_qᵀ (N, d_a), K W_kᵀ (M, d_a) out and back; W, v
     * read once, float64 */
    out->bytes_min = (double)p->batch * (double)p->heads * 2 * (double)(p->n_queries + p->n_keys) *
                         (double)score.score_dim * (double)la_dtype_size(dtype) +
                     (double)score.score_dim * (2 * (double)p->d_k + 1) * (double)sizeof(double);
    out->workspace_bytes = (double)lay.total;
    return LA_OK;
}
#endif

/* ---------------------------------------------------------------- registry rows */

#if REAL_IS_F32
static const la_kernel_fns general_fns = {
    .forward_f32 = la_general_attention_f32,
    .forward_f64 = la_general_attention_f64,
    .reference = la_ref_general_attention,
    .cost = la_general_cost,
};

const la_kernel_info la_row_general = {
    .kernel = LA_KERNEL_GENERAL,
    .name = "general",
    .summary = "softmax over general scores q·W·k · scale (Luong et al. 2015), W (d_k, "
               "d_k): K' = K Wᵀ, then the fused softmax kernel",
    .series = {"general", "general_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE | LA_PARAM_SCORE_WEIGHTS,
    .block = LA_PARAMS_SCORE,
    .masks = LA_MASK_GENERAL | LA_MASK_KEY,
    .caps = LA_CAP_ROTARY,
    .sweep = 0,
    .time_exponent = 2,
    .family = "score",
    /* no backward */
    .fns = &general_fns,
};

static const la_kernel_fns additive_fns = {
    .forward_f32 = la_additive_attention_f32,
    .forward_f64 = la_additive_attention_f64,
    .reference = la_ref_additive_attention,
    .cost = la_additive_cost,
};

const la_kernel_info la_row_additive = {
    .kernel = LA_KERNEL_ADDITIVE,
    .name = "additive",
    .summary = "softmax over additive scores vᵀtanh(W_q q + W_k k) (Bahdanau et al. "
               "2015), W (d_a, 2·d_k), v (d_a): O(N·M·d_a) tanh",
    .series = {"additive", "additive_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCORE_WEIGHTS | LA_PARAM_SCORE_DIM,
    .block = LA_PARAMS_SCORE,
    .masks = 0,
    .caps = LA_CAP_ROTARY,
    .sweep = 0,
    .time_exponent = 2,
    .family = "score",
    .fns = &additive_fns,
};

static const la_kernel_fns cosine_fns = {
    .forward_f32 = la_cosine_attention_f32,
    .forward_f64 = la_cosine_attention_f64,
    .reference = la_ref_cosine_attention,
    .cost = la_cosine_cost,
};

const la_kernel_info la_row_cosine = {
    .kernel = LA_KERNEL_COSINE,
    .name = "cosine",
    .summary = "softmax over cosine similarities cos(q, k) · scale (scale: the inverse "
               "temperature): Q, K normalized, then the fused softmax kernel",
    .series = {"cosine", "cosine_causal"},
    .causal = LA_CAUSAL_ALLOWED,
    .params = LA_PARAM_SCALE,
    .masks = LA_MASK_GENERAL | LA_MASK_KEY,
    .caps = LA_CAP_ROTARY,
    .sweep = 0,
    .time_exponent = 2,
    .family = "score",
    .fns = &cosine_fns,
};
#endif

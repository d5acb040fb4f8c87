/* linear_engine.c — the linear attention engine: what linear attention, FAVOR+, the step
 * API and rotary linear attention share, written once and compiled once per precision
 * (core/real_typed.h). Two hooks say what differs: the feature map (the scans apply
 * p->feature_map, featuremap.c; LA_FEATURE_IDENTITY for features the caller formed, as
 * FAVOR+ does) and FAVOR+'s per-key stabilizer (the chunked scan's stab hooks).
 *   la_linear_scan_*             non-causal (S = φ(K)ᵀV once per head, then φ(Q)·S), or
 *                                causal in chunks carrying S and z (per p->causal);
 *   la_linear_scan_rows_*        the same on features formed by rows (Taylor's), a block
 *                                at a time;
 *   la_linear_scan_stabilized_*  the chunked scan with FAVOR+'s stabilizer;
 *   la_linear_scan_recurrent_*   causal, token by token;
 *   la_linear_step_head_*        one token of one head: S += φk vᵀ, z += φk, then the read
 *                                (the recurrent scan, the step API, FAVOR+'s recurrent
 *                                form and step; _rescaled: S and z scaled first, FAVOR+'s
 *                                stabilizer);
 *   la_linear_read_query_*,      the read y = φqᵀS / (φqᵀz + eps) and the add S += φk vᵀ,
 *   la_linear_add_key_*          z += φk apart (rotary linear attention; a read past the
 *                                last key);
 *   la_linear_workspace_bytes,   the scratch the scans hold, and the one allocation of a
 *   la_linear_scratch_*          linear kernel's scratch (budget, gemm_small's reserve).
 * Keys that p->key_mask hides are zeroed in φ(K). Products of the small blocks go through
 * gemm_small (lib/cpu/, AVX-512 tiles where they pay). Every function's contract is in
 * linear_internal.h.
 *
 * Shapes, per head (the problem holds B·H heads back to back):
 *   q: (N, d_k), k: (M, d_k), v: (M, d_v), out: (N, d_v), row-major;
 *   S: (d_k, d_v) row-major, z: (d_k,).
 * Visible keys of head (b, ·): m = min(M, L_b) (L_b = key_lengths[b], or M). */
#include "core/real_typed.h"

#include "attention/attention_internal.h"
#include "attention/linear_internal.h"
#include "cpu/simd_avx512.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Block sizes, fixed whatever the thread count (so the rounding is too). */
#define LA_LINEAR_BLOCK_MAX                                                                        \
    128                         /* non-causal: keys per φ(K)ᵀV product, queries per φ(Q)·S    \
                                   product and task, at most (block_rows) */
#define LA_LINEAR_KEY_PIECE 512 /* non-causal: keys per phase-1 task (whole key blocks) */

/* The rows of a non-causal key or query block: 128 in float32, 64 in float64, so that at
 * d = 64 a φ block is 32 KiB in either and L1 (48 KiB on a Zen 5) holds it beside the
 * rows of the tile it meets. In float64, 64 rows ran non-causal linear attention at
 * N = 4,096, H = 8 about 4% faster than 128 on two threads, 1-2% on one, 6-11% beside
 * another busy process (a Zen 5; docs/performance.md). */
static size_t block_rows(size_t element_size)
{
    return element_size == sizeof(double) ? 64 : LA_LINEAR_BLOCK_MAX;
}

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
    size_t parts, width; /* recurrent: la_linear_recurrent_parts of the d_v columns */
} linear_layout;

/* The one description of what each scan allocates (the scans carve their buffers out of
 * it, la_linear_workspace_bytes reports it): recurrent, or non-causal or chunked per
 * p->causal,
 *   non-causal: S and z of every head, heads·d_k·(d_v + 1); per thread a φ block of
 *     max(key block, query block) rows, a partial z and a partial [S z] of one key
 *     piece, rows·d_k + d_k + d_k·(d_v + 1) (the partial is held even when every head
 *     fits in one piece, so the scratch does not depend on M);
 *   chunked (C = min(chunk, N)): the carried S and z of every head, heads·d_k·(d_v + 1);
 *     per thread φ(Q_c), A, φ(K_c) and φ(K_c)ᵀ, C(3·d_k + C), the snapshot S_c, z_c
 *     and the chunk's ΔS_c, Δz_c, 2·d_k·(d_v + 1);
 *   recurrent: per thread S, z, φ(q_t), φ(k_t): d_k·(d_v + 3).
 * Tasks: non-causal max(heads·key pieces, heads·query blocks), chunked heads·chunks,
 * recurrent heads·la_linear_recurrent_parts. */
static la_status linear_layout_for(const la_problem *p, bool recurrent, size_t element_size,
                                   size_t threads_max, linear_layout *lay)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    size_t heads, tasks, state, a, b, c;
    if (!la_mul_ok(p->batch, p->heads, &heads)) return LA_EOVERFLOW;
    lay->shared = 0;
    lay->parts = 1, lay->width = dv;
    tasks = heads;
    /* one head's [S z]: d_k·(d_v + 1) */
    if (!add_ok(dv, 1, &a) || !la_mul_ok(dk, a, &state)) return LA_EOVERFLOW;
    if (!recurrent && !p->causal) {
        const size_t block = block_rows(element_size);
        const size_t kb = M < block ? M : block, qb = N < block ? N : block;
        const size_t rows = kb > qb ? kb : qb;
        const size_t pieces = (M + LA_LINEAR_KEY_PIECE - 1) / LA_LINEAR_KEY_PIECE;
        size_t key_tasks;
        if (!la_mul_ok(heads, (N + qb - 1) / qb, &tasks) || !la_mul_ok(heads, pieces, &key_tasks) ||
            !la_mul_ok(heads, state, &lay->shared) || !add_ok(rows, 1, &b) ||
            !la_mul_ok(b, dk, &b) || !add_ok(b, state, &lay->per_thread))
            return LA_EOVERFLOW;
        if (key_tasks > tasks) tasks = key_tasks;
    } else if (!recurrent) {
        /* per thread: φ(Q_c), A, φ(K_c) and φKᵀ, C(3·d_k + C); S_c z_c and ΔS_c Δz_c,
         * 2·d_k(d_v + 1) */
        const size_t C = p->chunk < N ? p->chunk : N;
        size_t rows, total;
        if (!la_mul_ok(dk, 3, &rows) || !add_ok(rows, C, &rows) || !la_mul_ok(C, rows, &total) ||
            !la_mul_ok(2, state, &c) || !add_ok(total, c, &lay->per_thread) ||
            !la_mul_ok(heads, state, &lay->shared) || !la_mul_ok(heads, (N + C - 1) / C, &tasks))
            return LA_EOVERFLOW;
    } else {
        lay->parts = la_linear_recurrent_parts(heads, threads_max, dv, &lay->width);
        if (!add_ok(dv, 3, &a) || !la_mul_ok(dk, a, &lay->per_thread) ||
            !la_mul_ok(heads, lay->parts, &tasks))
            return LA_EOVERFLOW;
    }
    if (threads_max < 1) threads_max = 1;
    lay->threads = threads_max < tasks ? threads_max : tasks;
    if (!la_scratch_lines(lay->per_thread, element_size, &lay->per_thread) ||
        !la_scratch_lines(lay->shared, element_size, &lay->shared) ||
        !la_mul_ok(lay->threads, lay->per_thread, &a) || !add_ok(a, lay->shared, &lay->total))
        return LA_EOVERFLOW;
    return LA_OK;
}

#if REAL_IS_F32
static _Atomic int recurrent_split_forced = -1; /* la_linear_recurrent_split_force */

bool la_linear_recurrent_split(void)
{
    const int forced = recurrent_split_forced;
    return forced >= 0 ? forced != 0 : la_cpu_amd_family() != 0x1a;
}

void la_linear_recurrent_split_force(int on)
{
    recurrent_split_forced = on < 0 ? -1 : on != 0;
}

la_status la_linear_workspace_bytes(const la_problem *p, bool recurrent, size_t element_size,
                                    size_t *bytes)
{
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    return la_linear_scan_bytes(p, recurrent, element_size, bytes);
}

la_status la_linear_scan_bytes(const la_problem *p, bool recurrent, size_t element_size,
                               size_t *bytes)
{
    la_status st;
    if (!bytes) return LA_EINVAL;
    if (recurrent && !p->causal) return LA_EINVAL;
    linear_layout lay;
    st = linear_layout_for(p, recurrent, element_size, (size_t)la_threads(), &lay);
    if (st != LA_OK) return st;
    if (!la_mul_ok(lay.total, element_size, bytes)) return LA_EOVERFLOW;
    return LA_OK;
}
#endif

/* Where a scan's features come from: p->feature_map applied elementwise (rows NULL; q
 * and k rows of p->d_k), or a row hook (la_linear_rows_*; rows of rows->d_in). */
typedef FN(la_linear_rows) feature_rows;

/* The length of q's and k's rows. */
static size_t row_length(const la_problem *p, const feature_rows *rows)
{
    return rows ? rows->d_in : p->d_k;
}

/* The features of n rows of x into out (n, p->d_k). Elementwise features stream
 * (la_feature_map_stream): φ's loop also asks for the rows after them, up to x's
 * `readable` rows, and for `also` (NULL, or n·d_k elements read next); a row hook ignores
 * both. */
static void form_features(const la_problem *p, const feature_rows *rows, bool query, const REAL *x,
                          size_t n, size_t readable, const REAL *also, REAL *out)
{
    if (rows)
        rows->form(rows, query, x, n, out);
    else
        LA_PHI_STREAM(p->feature_map, x, out, n * p->d_k, readable * p->d_k, also);
}

/* Asks for `bytes` bytes from x into the cache, one request per 64-byte line: the
 * linear kernels stream their inputs once, and a block's loads otherwise wait for
 * memory between bursts of arithmetic. */
static void prefetch_rows(const void *x, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch((const char *)x + off, 0, 3);
}

#if REAL_IS_F32
void la_linear_hide_keys_f32(const la_problem *p, size_t hd, size_t j0, float *phi_k, size_t n)
#else
void la_linear_hide_keys_f64(const la_problem *p, size_t hd, size_t j0, double *phi_k, size_t n)
#endif
{
    if (!p->key_mask) return;
    const uint8_t *hidden = p->key_mask + (hd / p->heads) * p->n_keys + j0;
    for (size_t j = 0; j < n; j++)
        if (hidden[j]) memset(phi_k + j * p->d_k, 0, p->d_k * sizeof *phi_k);
}

#if REAL_IS_F32
void la_linear_hide_key_grads_f32(const la_problem *p, float *d_k)
#else
void la_linear_hide_key_grads_f64(const la_problem *p, double *d_k)
#endif
{
    if (!p->key_mask) return;
    const size_t M = p->n_keys, dk = p->d_k;
    for (size_t hd = 0; hd < p->batch * p->heads; hd++)
        for (size_t j = 0; j < M; j++)
            if (p->key_mask[(hd / p->heads) * M + j])
                memset(d_k + (hd * M + j) * dk, 0, dk * sizeof *d_k);
}

/* x·y in a fixed order: 8 interleaved partial sums, a fixed tree, then the tail. */
#if REAL_IS_F32
float la_dot_f32(const float *x, const float *y, size_t n)
#else
double la_dot_f64(const double *x, const double *y, size_t n)
#endif
{
    REAL acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (size_t l = 0; l < 8; l++)
            acc[l] += x[i + l] * y[i + l];
    REAL sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++)
        sum += x[i] * y[i];
    return sum;
}

#if LA_HAVE_AVX512_CODE
/* The vector type of this precision's AVX-512 code: 16 float or 8 double lanes. */
#if REAL_IS_F32
#define STEP_LANES 16
typedef __m512 step_vec;
typedef __mmask16 step_mask;
#define STEP_LOAD(m, x) _mm512_maskz_loadu_ps(m, x)
#define STEP_STORE(x, m, a) _mm512_mask_storeu_ps(x, m, a)
#define STEP_FMA _mm512_fmadd_ps
#define STEP_MUL _mm512_mul_ps
#define STEP_SET1 _mm512_set1_ps
#define STEP_ZERO _mm512_setzero_ps
#else
#define STEP_LANES 8
typedef __m512d step_vec;
typedef __mmask8 step_mask;
#define STEP_LOAD(m, x) _mm512_maskz_loadu_pd(m, x)
#define STEP_STORE(x, m, a) _mm512_mask_storeu_pd(x, m, a)
#define STEP_FMA _mm512_fmadd_pd
#define STEP_MUL _mm512_mul_pd
#define STEP_SET1 _mm512_set1_pd
#define STEP_ZERO _mm512_setzero_pd
#endif

/* The AVX-512 body of a step on w <= 4·STEP_LANES columns of S (d_k rows, row stride ld),
 * nv = ⌈w / STEP_LANES⌉ vectors per row: when rescale, S[a, :] *= r; when add,
 * S[a, :] += φk[a]·v; always y = Σ_a φq[a]·S[a, :] (the updated rows), y's nv vectors
 * held in registers across the d_k rows. Each y[c] is one FMA chain over a in order, each
 * S[a, c] a product by r then one FMA: the generic loop's order, with φk[a]·v[c] and its
 * sum rounded once. Called with constant nv, add and rescale, so the vectors are
 * registers and the branches fold. */
LA_AVX512 static inline __attribute__((always_inline)) void
step_cols_avx512(REAL *restrict S, size_t ld, REAL r, const REAL *restrict phi_k,
                 const REAL *restrict v, const REAL *restrict phi_q, REAL *restrict y, size_t d_k,
                 size_t w, int nv, bool add, bool rescale)
{
    const step_vec rv = STEP_SET1(r);
    step_mask mask[4];
    step_vec vv[4], acc[4];
    for (int g = 0; g < nv; g++) {
        const size_t left = w - (size_t)g * STEP_LANES;
        mask[g] = left >= STEP_LANES ? (step_mask)~0u : (step_mask)((1u << left) - 1);
        vv[g] = add ? STEP_LOAD(mask[g], v + g * STEP_LANES) : STEP_ZERO();
        acc[g] = STEP_ZERO();
    }
    for (size_t a = 0; a < d_k; a++) {
        REAL *row = S + a * ld;
        const step_vec fq = STEP_SET1(phi_q[a]);
        const step_vec fk = STEP_SET1(add ? phi_k[a] : 0);
        for (int g = 0; g < nv; g++) {
            step_vec s = STEP_LOAD(mask[g], row + g * STEP_LANES);
            if (rescale) s = STEP_MUL(s, rv);
            if (add || rescale) {
                if (add) s = STEP_FMA(fk, vv[g], s);
                STEP_STORE(row + g * STEP_LANES, mask[g], s);
            }
            acc[g] = STEP_FMA(fq, s, acc[g]);
        }
    }
    for (int g = 0; g < nv; g++)
        STEP_STORE(y + g * STEP_LANES, mask[g], acc[g]);
}

/* y (d_v) = Σ_a φq[a]·S[a, :], after S *= r when rescale and S += φk vᵀ when add:
 * step_cols_avx512 over groups of 4·STEP_LANES columns. */
#define STEP_COLS(nv)                                                                              \
    (rescale ? step_cols_avx512(Sc, d_v, r, phi_k, vc, phi_q, yc, d_k, w, nv, true, true)          \
     : add   ? step_cols_avx512(Sc, d_v, r, phi_k, vc, phi_q, yc, d_k, w, nv, true, false)         \
             : step_cols_avx512(Sc, d_v, r, phi_k, vc, phi_q, yc, d_k, w, nv, false, false))
LA_AVX512 static void step_rows_avx512(REAL *restrict S, REAL r, const REAL *restrict phi_k,
                                       const REAL *restrict v, const REAL *restrict phi_q,
                                       REAL *restrict y, size_t d_k, size_t d_v, bool add,
                                       bool rescale)
{
    for (size_t c0 = 0; c0 < d_v; c0 += 4 * STEP_LANES) {
        const size_t w = d_v - c0 < 4 * STEP_LANES ? d_v - c0 : 4 * STEP_LANES;
        REAL *Sc = S + c0, *yc = y + c0;
        const REAL *vc = add ? v + c0 : NULL;
        switch ((w + STEP_LANES - 1) / STEP_LANES) {
        case 1: STEP_COLS(1); break;
        case 2: STEP_COLS(2); break;
        case 3: STEP_COLS(3); break;
        default: STEP_COLS(4); break;
        }
    }
}
#undef STEP_COLS
#endif

/* One recurrent step of one head, in one pass over S:
 *   S (d_k, d_v) = r·S + φk vᵀ,  z (d_k) = r·z + φk,  y (d_v) = φqᵀ S / (φqᵀ z + eps)
 * with the updated S and z (r = 1, no product, unless rescale). Row a of S is updated and
 * at once added into y, so S is read once per token (the same values and order as
 * rescaling, then updating, then reading). */
static void step_head(REAL *restrict S, REAL *restrict z, REAL r, bool rescale,
                      const REAL *restrict phi_k, const REAL *restrict v,
                      const REAL *restrict phi_q, REAL eps, REAL *restrict y, size_t d_k,
                      size_t d_v)
{
    LA_COUNT(LA_COUNT_KV, 2 * (double)d_k * (double)d_v + (double)d_k); /* S and z updates */
    LA_COUNT(LA_COUNT_QS, 2 * (double)d_k * (double)d_v);               /* y += φq[a] S[a, :] */
#if LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) {
        step_rows_avx512(S, r, phi_k, v, phi_q, y, d_k, d_v, true, rescale);
    } else
#endif
    {
        for (size_t c = 0; c < d_v; c++)
            y[c] = 0;
        for (size_t a = 0; a < d_k; a++) {
            const REAL fk = phi_k[a], fq = phi_q[a];
            REAL *row = S + a * d_v;
            for (size_t c = 0; c < d_v; c++) {
                const REAL updated = (rescale ? row[c] * r : row[c]) + fk * v[c];
                row[c] = updated;
                y[c] += fq * updated;
            }
        }
    }
    for (size_t a = 0; a < d_k; a++) /* z apart: no entry of S or y reads it */
        z[a] = (rescale ? z[a] * r : z[a]) + phi_k[a];
    /* normalize by the denominator φqᵀz + eps */
    const REAL den = LA_DOT(LA_COUNT_QS, phi_q, z, d_k) + eps;
    LA_COUNT(LA_COUNT_NORMALIZE, 1 + d_v);
    if (den == 0) { /* the empty row (linattn.h) */
        for (size_t c = 0; c < d_v; c++)
            y[c] = 0;
    } else {
        for (size_t c = 0; c < d_v; c++)
            y[c] /= den;
    }
}

#if REAL_IS_F32
void la_linear_step_head_f32(float *restrict S, float *restrict z, const float *restrict phi_k,
                             const float *restrict v, const float *restrict phi_q, float eps,
                             float *restrict y, size_t d_k, size_t d_v)
#else
void la_linear_step_head_f64(double *restrict S, double *restrict z, const double *restrict phi_k,
                             const double *restrict v, const double *restrict phi_q, double eps,
                             double *restrict y, size_t d_k, size_t d_v)
#endif
{
    step_head(S, z, 1, false, phi_k, v, phi_q, eps, y, d_k, d_v);
}

#if REAL_IS_F32
void la_linear_step_head_rescaled_f32(float *restrict S, float *restrict z, float r,
                                      const float *restrict phi_k, const float *restrict v,
                                      const float *restrict phi_q, float eps, float *restrict y,
                                      size_t d_k, size_t d_v)
#else
void la_linear_step_head_rescaled_f64(double *restrict S, double *restrict z, double r,
                                      const double *restrict phi_k, const double *restrict v,
                                      const double *restrict phi_q, double eps, double *restrict y,
                                      size_t d_k, size_t d_v)
#endif
{
    step_head(S, z, r, true, phi_k, v, phi_q, eps, y, d_k, d_v);
}

/* S (d_k, d_v) += k_num v_tᵀ, z (d_k) += k_den: a key added without a read (k_den = k_num
 * but in rotary linear attention, whose numerator takes the rotated φ(k)). */
#if REAL_IS_F32
void la_linear_add_key_f32(float *restrict S, float *restrict z, const float *restrict k_num,
                           const float *restrict k_den, const float *restrict v, size_t d_k,
                           size_t d_v)
#else
void la_linear_add_key_f64(double *restrict S, double *restrict z, const double *restrict k_num,
                           const double *restrict k_den, const double *restrict v, size_t d_k,
                           size_t d_v)
#endif
{
    LA_COUNT(LA_COUNT_KV, 2 * (double)d_k * (double)d_v + (double)d_k);
    for (size_t a = 0; a < d_k; a++) {
        const REAL fk = k_num[a];
        REAL *row = S + a * d_v;
        z[a] += k_den[a];
        for (size_t c = 0; c < d_v; c++)
            row[c] += fk * v[c];
    }
}

/* y (d_v) = q_numᵀ S / (q_denᵀ z + eps), S (d_k, d_v), z, q_num and q_den (d_k): q_den = q_num
 * = φ(q) but in rotary linear attention (the rotated φ(q) in the numerator). */
#if REAL_IS_F32
void la_linear_read_query_f32(const float *restrict S, const float *restrict z,
                              const float *restrict q_num, const float *restrict q_den, float eps,
                              float *restrict y, size_t d_k, size_t d_v)
#else
void la_linear_read_query_f64(const double *restrict S, const double *restrict z,
                              const double *restrict q_num, const double *restrict q_den,
                              double eps, double *restrict y, size_t d_k, size_t d_v)
#endif
{
    /* numerator: y = Σ_a q_num[a] · S[a, :] */
    LA_COUNT(LA_COUNT_QS, 2 * (double)d_k * (double)d_v);
#if LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) {
        step_rows_avx512((REAL *)S, 1, NULL, NULL, q_num, y, d_k, d_v, false, false); /* read */
    } else
#endif
    {
        for (size_t c = 0; c < d_v; c++)
            y[c] = 0;
        for (size_t a = 0; a < d_k; a++) {
            REAL f = q_num[a];
            const REAL *row = S + a * d_v;
            for (size_t c = 0; c < d_v; c++)
                y[c] += f * row[c];
        }
    }
    /* normalize by the denominator q_denᵀz + eps */
    REAL den = LA_DOT(LA_COUNT_QS, q_den, z, d_k) + eps;
    LA_COUNT(LA_COUNT_NORMALIZE, 1 + d_v);
    for (size_t c = 0; c < d_v; c++)
        y[c] = den == 0 ? 0 : y[c] / den; /* den = 0: the empty row (linattn.h) */
}

/* The scratch layout of one call (linear_layout_for), allocated: one block of REAL. */
static la_status workspace_alloc(const la_problem *p, bool recurrent, linear_layout *lay,
                                 REAL **work)
{
    la_status st = linear_layout_for(p, recurrent, sizeof(REAL), (size_t)la_threads(), lay);
    if (st != LA_OK) return st;
    return FN(la_linear_scratch)(p, lay->total, work);
}

/* The linear kernels' scratch (linear_internal.h). */
#if REAL_IS_F32
la_status la_linear_scratch_f32(const la_problem *p, size_t elements, float **work)
#else
la_status la_linear_scratch_f64(const la_problem *p, size_t elements, double **work)
#endif
{
    size_t lined;
    if (!la_scratch_lines(elements ? elements : 1, sizeof(REAL), &lined) ||
        lined > SIZE_MAX / sizeof(REAL))
        return LA_EOVERFLOW;
    if (elements * sizeof(REAL) > p->workspace_limit) return LA_EBUDGET;
    if (la_gemm_reserve(la_threads()) != LA_OK) return LA_ENOMEM;
    *work = aligned_alloc(LA_SCRATCH_LINE, lined * sizeof(REAL));
    return *work ? LA_OK : LA_ENOMEM;
}

/* sums[a] = Σ_j x[j·d + a] over the n rows, each column summed in row order (one chain
 * per column, as a plain loop would), 64 columns at a time in registers: through
 * memory, every row's partial sums were stored and loaded again. */
static void column_sums(const REAL *restrict x, size_t n, size_t d, REAL *restrict sums)
{
    enum { W = 64 };
    for (size_t a0 = 0; a0 < d; a0 += W) {
        const size_t w = d - a0 < W ? d - a0 : W;
        REAL acc[W] = {0};
        if (w == W)
            for (size_t j = 0; j < n; j++) {
                const REAL *row = x + j * d + a0;
#pragma omp simd
                for (size_t a = 0; a < W; a++)
                    acc[a] += row[a];
            }
        else
            for (size_t j = 0; j < n; j++)
                for (size_t a = 0; a < w; a++)
                    acc[a] += x[j * d + a0 + a];
        for (size_t a = 0; a < w; a++)
            sums[a0 + a] = acc[a];
    }
}

/* Non-causal phase 1, one task: key piece task % pieces of head task / pieces,
 *   [S_p z_p] = Σ_blocks [φ(K_blk)ᵀ V_blk, Σ_rows φ(K_blk)]  (d_k, d_v + 1),
 * summed straight into the head's [S z] for the first piece, into the thread's partial
 * for a later one (kv_piece_add adds it, in piece order). `mine`: the thread's scratch,
 * a φ block of `rows` rows, a block's z, the partial. */
static void kv_piece(const la_problem *p, const feature_rows *fr, const REAL *k, const REAL *v,
                     REAL *states, size_t task, size_t pieces, size_t rows, size_t kb, REAL *mine)
{
    const size_t M = p->n_keys, dk = p->d_k, dv = p->d_v, state_size = dk * (dv + 1);
    const size_t din = row_length(p, fr);
    const size_t hd = task / pieces, j_begin = (task % pieces) * LA_LINEAR_KEY_PIECE;
    REAL *phi_k = mine, *z_part = phi_k + rows * dk, *partial = z_part + dk;
    const REAL *kh = k + hd * M * din, *vh = v + hd * M * dv;
    const size_t m = la_keys_in_length(p, hd / p->heads);
    const size_t j_end = m < j_begin + LA_LINEAR_KEY_PIECE ? m : j_begin + LA_LINEAR_KEY_PIECE;
    REAL *S = j_begin == 0 ? states + hd * state_size : partial, *z = S + dk * dv;
    if (j_begin == 0 || j_begin < m) {
        for (size_t a = 0; a < state_size; a++) /* [S_p z_p] = 0 */
            S[a] = 0;
    }
    for (size_t j0 = j_begin; j0 < j_end; j0 += kb) {
        const size_t n = j_end - j0 < kb ? j_end - j0 : kb;
        /* φ(K_blk): (n, d_k) */
        /* on φ's own loop, the keys after the block (to the last visible one) and V_blk
         * are asked for ahead, a line per line of K_blk read (la_feature_map_stream;
         * 512 prefetches at once for the next block stalled on the fill buffers) */
        form_features(p, fr, false, kh + j0 * din, n, m - j0, dv == dk ? vh + j0 * dv : NULL,
                      phi_k);
        FN(la_linear_hide_keys)(p, hd, j0, phi_k, n);
        /* S_p += φ(K_blk)ᵀ V_blk: (d_k, n)·(n, d_v), φ(K_blk)ᵀ through strides */
        LA_PRODUCT(LA_COUNT_KV, dk, dv, n, 1, phi_k, 1, (ptrdiff_t)dk, vh + j0 * dv, (ptrdiff_t)dv,
                   1, 1, S, (ptrdiff_t)dv, 1);
        /* z_p += Σ_rows φ(K_blk), summed per block first */
        LA_COUNT(LA_COUNT_KV, n * dk);
        column_sums(phi_k, n, dk, z_part);
        LA_COUNT(LA_COUNT_COMBINE, dk);
        for (size_t a = 0; a < dk; a++)
            z[a] += z_part[a];
    }
}

/* [S z] of the head += the partial of a later piece with keys (in piece order). */
static void kv_piece_add(const la_problem *p, REAL *states, size_t task, size_t pieces,
                         const REAL *mine, size_t rows)
{
    const size_t dk = p->d_k, state_size = dk * (p->d_v + 1);
    const size_t hd = task / pieces, j_begin = (task % pieces) * LA_LINEAR_KEY_PIECE;
    const REAL *partial = mine + rows * dk + dk;
    REAL *S_head = states + hd * state_size;
    if (j_begin > 0 && j_begin < la_keys_in_length(p, hd / p->heads)) {
        LA_COUNT(LA_COUNT_COMBINE, state_size);
        for (size_t a = 0; a < state_size; a++)
            S_head[a] += partial[a];
    }
}

/* The largest value the non-causal kernel lets an entry of S, z, φ(Q)S or φ(Q)z reach
 * (lib/linattn.h, "Extreme values"). */
#define LIMIT ((REAL_IS_F32 ? (double)FLT_MAX : DBL_MAX) / 8)

/* Whether every head's [S z] (states: heads × state_size) is finite with d_k·max|entry|
 * within LIMIT: then φ(q)·S and φ(q)·z stay within LIMIT for any φ(q) <= 1. */
static bool states_in_range(const REAL *states, size_t n, size_t dk)
{
    double max = 0;
    bool finite = true;
    for (size_t a = 0; a < n; a++) {
        const double s = fabs((double)states[a]);
        finite &= s <= DBL_MAX; /* false for inf and NaN */
        max = s > max ? s : max;
    }
    return finite && max * (double)dk <= LIMIT;
}

/* The largest |entry| of a head's [S z] (n entries; `omp simd`: max in any order is
 * exact). */
static REAL state_max(const REAL *S, size_t n)
{
    REAL s_max = 0;
#pragma omp simd reduction(max : s_max)
    for (size_t a = 0; a < n; a++)
        s_max = (S[a] < 0 ? -S[a] : S[a]) > s_max ? (S[a] < 0 ? -S[a] : S[a]) : s_max;
    return s_max;
}

/* Non-causal phase 2, one task: query block task % q_blocks (of qb rows) of head
 * task / q_blocks, out_blk = φ(Q_blk) S / (φ(Q_blk) z + eps), zero rows when the head
 * sees no key. s_max: state_max of the head's [S z]. `phi_q`: the thread's φ block. */
static void apply_block(const la_problem *p, const feature_rows *fr, const REAL *q,
                        const REAL *states, REAL *out, size_t task, size_t q_blocks, size_t qb,
                        REAL s_max, REAL *phi_q)
{
    const size_t N = p->n_queries, dk = p->d_k, dv = p->d_v, din = row_length(p, fr);
    const size_t hd = task / q_blocks, i0 = (task % q_blocks) * qb;
    const size_t n = N - i0 < qb ? N - i0 : qb;
    const REAL *S = states + hd * dk * (dv + 1), *z = S + dk * dv;
    REAL *y = out + (hd * N + i0) * dv;
    if (la_keys_in_length(p, hd / p->heads) == 0) {
        for (size_t a = 0; a < n * dv; a++)
            y[a] = 0; /* sees no key: zero rows */
        return;
    }
    /* φ(Q_blk): (n, d_k), asking for the rows after the block on its loop (as in kv_piece) */
    form_features(p, fr, true, q + (hd * N + i0) * din, n, N - i0, NULL, phi_q);
    /* A huge q_i would overflow φ(q_i)·S although S and z are in range (linear_noncausal
     * checked them): such a row gets φ(q_i) and eps scaled by one power of two, 2^-e
     * with max φ(q_i) <= 1, which changes no bit of num / den but keeps both finite.
     * Ordinary rows are left alone (one max per row, then one compare). */
    REAL eps_row[LA_LINEAR_BLOCK_MAX];
    for (size_t i = 0; i < n; i++) {
        REAL *f = phi_q + i * dk, mu = 0; /* φ >= 0 */
#pragma omp simd reduction(max : mu)
        for (size_t a = 0; a < dk; a++)
            mu = f[a] > mu ? f[a] : mu;
        eps_row[i] = (REAL)p->eps;
        if ((double)mu * (double)dk * (double)s_max > LIMIT) {
            const REAL r = (REAL)ldexp(1.0, -(ilogb((double)mu) + 1));
            for (size_t a = 0; a < dk; a++)
                f[a] *= r;
            eps_row[i] *= r;
        }
    }
    /* num = φ(Q_blk) S: (n, d_k)·(d_k, d_v), straight into out */
    LA_PRODUCT(LA_COUNT_QS, n, dv, dk, 1, phi_q, (ptrdiff_t)dk, 1, S, (ptrdiff_t)dv, 1, 0, y,
               (ptrdiff_t)dv, 1);
    /* y = num / (φ(q_i)·z + eps) */
    for (size_t i = 0; i < n; i++) {
        const REAL den = LA_DOT(LA_COUNT_QS, phi_q + i * dk, z, dk) + eps_row[i];
        LA_COUNT(LA_COUNT_NORMALIZE, 1 + dv);
        for (size_t c = 0; c < dv; c++) /* den = 0: the empty row (linattn.h) */
            y[i * dv + c] = den == 0 ? 0 : y[i * dv + c] / den;
    }
}

/* Non-causal linear attention.
 * Phase 1, per (head (b, h), piece of LA_LINEAR_KEY_PIECE keys), keys in blocks of
 * block_rows:
 *   [S_p z_p] = Σ_blocks [φ(K_blk)ᵀ V_blk, Σ_rows φ(K_blk)] (d_k, d_v + 1),
 * then per head, in piece order: [S z] = ((S_0 + S_1) + S_2) + … — the pieces are fixed
 * by M, not by the thread count, so the sums and their rounding are too. The first
 * piece sums straight into the head's [S z], each later one into its thread's partial,
 * added in piece order.
 * Two schedules, bitwise the same: when the heads divide among the threads, each thread
 * takes whole heads, phase 1 then phase 2, with no synchronization at all; otherwise the
 * pieces run in parallel (so a head with few keys does not leave the other threads
 * idle) with an ordered section for the additions, then the query blocks.
 * Phase 2, per (head, query block of block_rows):
 *   out_blk = φ(Q_blk) S / (φ(Q_blk) z + eps), zero rows when the head sees no key.
 * Phase 1 writes only scratch; between the phases every head's [S z] must be finite
 * and within range (states_in_range), else LA_ERANGE with out untouched. That is the
 * non-causal kernel's whole range check: no scan of the inputs (huge queries are
 * handled in apply_block).
 * Scratch: S and z of every head, plus per thread one φ block, a partial z and a
 * partial [S z]. */
static la_status linear_noncausal(const la_problem *p, const feature_rows *fr, const REAL *q,
                                  const REAL *k, const REAL *v, REAL *out)
{
    const size_t N = p->n_queries, M = p->n_keys;
    const size_t heads = p->batch * p->heads;
    const size_t block = block_rows(sizeof(REAL));
    const size_t kb = M < block ? M : block, qb = N < block ? N : block;
    const size_t rows = kb > qb ? kb : qb;
    const size_t q_blocks = (N + qb - 1) / qb, tasks = heads * q_blocks;
    const size_t piece = LA_LINEAR_KEY_PIECE, pieces = (M + piece - 1) / piece;
    const size_t key_tasks = heads * pieces, state_size = p->d_k * (p->d_v + 1);
    linear_layout lay;
    REAL *work = NULL;
    la_status st = workspace_alloc(p, false, &lay, &work);
    if (st != LA_OK) return st;
    const size_t threads = lay.threads, per_thread = lay.per_thread, shared = lay.shared;
    REAL *states = work, *scratch = work + shared;

    if (heads % threads == 0) {
        /* whole heads per thread: its pieces in turn, then (after the range check) its
         * query blocks; the same sums in the same order as below */
#pragma omp parallel for schedule(dynamic) num_threads((int)threads)
        for (size_t hd = 0; hd < heads; hd++) {
            REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
            for (size_t pc = 0; pc < pieces; pc++) {
                kv_piece(p, fr, k, v, states, hd * pieces + pc, pieces, rows, kb, mine);
                kv_piece_add(p, states, hd * pieces + pc, pieces, mine, rows);
            }
        }
        if (!states_in_range(states, heads * p->d_k * (p->d_v + 1), p->d_k)) {
            free(work);
            return LA_ERANGE;
        }
#pragma omp parallel for schedule(dynamic) num_threads((int)threads)
        for (size_t hd = 0; hd < heads; hd++) {
            REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
            const REAL s_max = state_max(states + hd * state_size, state_size);
            for (size_t b = 0; b < q_blocks; b++)
                apply_block(p, fr, q, states, out, hd * q_blocks + b, q_blocks, qb, s_max, mine);
        }
    } else {
        /* phase 1: [S z] of every head, one key piece per task, added in piece order */
#pragma omp parallel for ordered schedule(dynamic) num_threads((int)threads)
        for (size_t task = 0; task < key_tasks; task++) {
            REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
            kv_piece(p, fr, k, v, states, task, pieces, rows, kb, mine);
#pragma omp ordered
            kv_piece_add(p, states, task, pieces, mine, rows);
        }
        if (!states_in_range(states, heads * p->d_k * (p->d_v + 1), p->d_k)) {
            free(work);
            return LA_ERANGE;
        }
        /* phase 2: every query block reads its head's S and z */
#pragma omp parallel for schedule(dynamic) num_threads((int)threads)
        for (size_t task = 0; task < tasks; task++) {
            REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
            const REAL s_max = state_max(states + task / q_blocks * state_size, state_size);
            apply_block(p, fr, q, states, out, task, q_blocks, qb, s_max, mine);
        }
    }
    free(work);
    return LA_OK;
}

/* What every chunk task of one call shares. */
typedef struct {
    const la_problem *p;
    const feature_rows *rows; /* NULL: p->feature_map */
    const REAL *q, *k, *v;
    REAL *out;
    size_t N, M, dk, din, dv, C, n_chunks, tasks, state_size;
    REAL *carried; /* per head: S (d_k, d_v), then z (d_k) */
    REAL eps;
    /* the stabilizer (la_linear_scan_stabilized_*), or NULL: per head μ (M), the running
     * max of g over keys 0..j, then g (M) */
    const REAL *stab;
} chunk_job;

/* One task (head, chunk) between its steps: where its data and scratch are. */
typedef struct {
    size_t hd, c0, nq, nk, u;
    bool carries; /* a later chunk sees its keys */
    REAL *phi_q, *A, *phi_k, *phi_kt, *Sc, *zc, *dS;
} chunk_task;

/* ---- the stabilizer's hooks (FAVOR+: chunk_job.stab; linear_internal.h says the math).
 * A state holding keys 0..c−1 is kept at the scale μ_{c−1}; query i's weights are
 * scaled by exp(g_j − μ_i). Each hook counts what FAVOR+'s cost model says it issues. */

/* μ at position i of a head that uses u > 0 keys: the running max over keys 0..min(i, u−1) */
static REAL mu_at(const chunk_job *j, size_t hd, size_t i, size_t u)
{
    return j->stab[hd * 2 * j->M + (i < u ? i : u - 1)];
}

/* A's rows [i0, i0 + rows) over its n computed columns: A_ij ·= exp(g_j − μ_i) where key
 * j <= query i, 0 above (the mask); counted per visible pair as a_ij (2·d_k + 3) and
 * its share of A·V_c and the row sum (2·d_v + 1), the hidden entries not at all. */
static void stabilize_block(const chunk_job *j, const chunk_task *t, size_t i0, size_t rows,
                            size_t n)
{
    const REAL *g = j->stab + t->hd * 2 * j->M + j->M + t->c0;
    for (size_t i = i0; i < i0 + rows; i++) {
        const size_t seen = i + 1 < n ? i + 1 : n;
        const REAL mu_i = mu_at(j, t->hd, t->c0 + i, t->u);
        LA_COUNT(LA_COUNT_QK, (double)seen * (2 * (double)j->dk + 3));
        LA_COUNT(LA_COUNT_AV, (double)seen * (2 * (double)j->dv + 1));
        REAL *a = t->A + i * j->C;
        for (size_t jj = 0; jj < n; jj++)
            a[jj] = jj < seen ? a[jj] * EXP(g[jj] - mu_i) : 0;
    }
}

/* The chunk's keys for its state, at the scale μ' = μ of its last key: ψ'_j = ψ_j·exp(g_j − μ'),
 * in φKᵀ's columns and, `rows_too`, in φ(K_c)'s rows. */
static void stabilize_keys(const chunk_job *j, const chunk_task *t, bool rows_too)
{
    const size_t dk = j->dk, C = j->C, nk = t->nk;
    const REAL *g = j->stab + t->hd * 2 * j->M + j->M + t->c0;
    const REAL mu_new = mu_at(j, t->hd, t->c0 + nk - 1, t->u);
    LA_COUNT(LA_COUNT_KV, (double)nk * ((double)dk + 2));
    for (size_t jj = 0; jj < nk; jj++) {
        const REAL f = EXP(g[jj] - mu_new);
        for (size_t a = 0; a < dk; a++)
            t->phi_kt[a * C + jj] *= f;
        if (rows_too)
            for (size_t a = 0; a < dk; a++)
                t->phi_k[jj * dk + a] *= f;
    }
}

/* r_i = exp(μ_c − μ_i): query i of chunk t (c0 > 0) reads the carried state, kept at
 * μ_c = μ of key c0 − 1, at its own scale. */
static REAL carried_factor(const chunk_job *j, const chunk_task *t, size_t i)
{
    return EXP(mu_at(j, t->hd, t->c0 - 1, t->u) - mu_at(j, t->hd, t->c0 + i, t->u));
}

/* The factor that takes a carried state from the scale before chunk t (μ of key c0 − 1)
 * to the scale after it (μ of its last key), for a chunk after the first that carries. */
static REAL rescale_factor(const chunk_job *j, const chunk_task *t)
{
    LA_COUNT(LA_COUNT_KV, (double)j->state_size + 2);
    return EXP(mu_at(j, t->hd, t->c0 - 1, t->u) - mu_at(j, t->hd, t->c0 + t->nk - 1, t->u));
}

/* Step 1, in any order: φ(Q_c), φKᵀ, A (masked) and, unless in_place (chunk_advance_in_place
 * forms them), the chunk's ΔS_c, Δz_c, in the thread's scratch `mine`; asks for task
 * `next`'s inputs (the thread's likely next task) to be fetched meanwhile. */
static void chunk_prepare(const chunk_job *j, size_t task, size_t next, REAL *mine, chunk_task *t,
                          bool in_place)
{
    const size_t N = j->N, M = j->M, dk = j->dk, dv = j->dv, C = j->C;
    const ptrdiff_t ldk = (ptrdiff_t)dk, ldc = (ptrdiff_t)C, ldv = (ptrdiff_t)dv;
    t->hd = task / j->n_chunks;
    t->c0 = (task % j->n_chunks) * C;
    t->phi_q = mine;
    t->A = t->phi_q + C * dk;
    REAL *phi_k = t->A + C * C;
    t->phi_k = phi_k;
    t->phi_kt = phi_k + C * dk;
    /* S_c then z_c, ΔS_c then Δz_c: each pair one state_size block, like the carried one */
    t->Sc = t->phi_kt + dk * C;
    t->zc = t->Sc + dk * dv;
    t->dS = t->zc + dk;
    REAL *dz = t->dS + dk * dv;
    const size_t c0 = t->c0;
    const size_t din = j->din;
    const REAL *qh = j->q + t->hd * N * din, *kh = j->k + t->hd * M * din;
    const REAL *vc = j->v + (t->hd * M + c0) * dv;
    t->u = la_keys_in_length(j->p, t->hd / j->p->heads);
    if (t->u > N) t->u = N;
    const size_t u = t->u;
    t->nq = N - c0 < C ? N - c0 : C;
    t->nk = c0 >= u ? 0 : (u - c0 < C ? u - c0 : C); /* nk <= nq */
    t->carries = t->nk > 0 && c0 + C < N;
    const size_t nq = t->nq, nk = t->nk;
    /* The rows read next: on φ's own loop for elementwise features (the rows after the
     * chunk, and V_c while φ(K_c) is formed; at N = 4,096, H = 8, d = 64 on a Zen 5
     * 5.35-5.43 ms with the prefetch of the next task's rows below, 4.79-4.92 ms with
     * this, in turn), else the next task's rows at once */
    if (next < j->tasks && j->rows) {
        const size_t hn = next / j->n_chunks, cn = next % j->n_chunks * C;
        const size_t rows_next = N - cn < C ? N - cn : C;
        prefetch_rows(j->q + (hn * N + cn) * din, rows_next * din * sizeof(REAL));
        if (cn < M) {
            const size_t keys_next = M - cn < rows_next ? M - cn : rows_next;
            prefetch_rows(j->k + (hn * M + cn) * din, keys_next * din * sizeof(REAL));
            prefetch_rows(j->v + (hn * M + cn) * dv, keys_next * dv * sizeof(REAL));
        }
    }
    /* φ(Q_c) (nq, d_k) */
    if (u > 0) form_features(j->p, j->rows, true, qh + c0 * din, nq, N - c0, NULL, t->phi_q);
    if (nk > 0) {
        /* φ(K_c) (nk, d_k), then φKᵀ (d_k, nk) */
        form_features(j->p, j->rows, false, kh + c0 * din, nk, u - c0, dv == dk ? vc : NULL, phi_k);
        FN(la_linear_hide_keys)(j->p, t->hd, c0, phi_k, nk);
        TRANSPOSE(nk, dk, phi_k, dk, t->phi_kt, C);
        /* A = φ(Q_c) · φKᵀ (nq, d_k)·(d_k, nk) by blocks of LA_LINEAR_TRI_ROWS query rows, each
         * only over the keys its rows can see (A_blk: (rows, n_blk), the triangle's blocks above
         * the diagonal never computed), then the causal mask inside the block: key j > query i
         * hidden */
        for (size_t i0 = 0; i0 < nq; i0 += LA_LINEAR_TRI_ROWS) {
            const size_t rows = nq - i0 < LA_LINEAR_TRI_ROWS ? nq - i0 : LA_LINEAR_TRI_ROWS;
            const size_t n = la_linear_tri_keys(nk, i0, rows);
            if (j->stab) { /* counted by visible pair in stabilize_block */
                GEMM_SMALL(rows, n, dk, 1, t->phi_q + i0 * dk, ldk, 1, t->phi_kt, ldc, 1, 0,
                           t->A + i0 * C, ldc, 1);
                stabilize_block(j, t, i0, rows, n);
                continue;
            }
            LA_PRODUCT(LA_COUNT_QK, rows, n, dk, 1, t->phi_q + i0 * dk, ldk, 1, t->phi_kt, ldc, 1,
                       0, t->A + i0 * C, ldc, 1);
            for (size_t i = i0; i < i0 + rows && i + 1 < n; i++) {
                LA_COUNT(LA_COUNT_HIDDEN, n - i - 1);
                for (size_t jj = i + 1; jj < n; jj++)
                    t->A[i * C + jj] = 0;
            }
        }
    }
    if (t->carries && !in_place) {
        /* the chunk's state: ΔS_c = φKᵀ · V_c (d_k, nk)·(nk, d_v), Δz_c = row sums of φKᵀ */
        if (j->stab) stabilize_keys(j, t, false);
        LA_PRODUCT(LA_COUNT_KV, dk, dv, nk, 1, t->phi_kt, ldc, 1, vc, ldv, 1, 0, t->dS, ldv, 1);
        LA_COUNT(LA_COUNT_KV, dk * nk);
        for (size_t a = 0; a < dk; a++) {
            REAL sum = 0;
            for (size_t jj = 0; jj < nk; jj++)
                sum += t->phi_kt[a * C + jj];
            dz[a] = sum;
        }
    }
}

/* Step 2, in chunk order within the head: S_c, z_c from the head's carried state, then
 * the carried state becomes S_{c+1}, z_{c+1}. */
static void chunk_advance(const chunk_job *j, const chunk_task *t)
{
    REAL *carry = j->carried + t->hd * j->state_size;
    const size_t n = j->state_size;
    if (t->u > 0 && t->c0 == 0) { /* S_0 = 0, then + ΔS_0 */
        for (size_t a = 0; a < n; a++)
            carry[a] = t->carries ? t->dS[a] : 0;
    } else if (t->u > 0 && t->carries && j->stab) { /* S_{c+1} = S_c·s + ΔS_c */
        const REAL s = rescale_factor(j, t);
        LA_COUNT(LA_COUNT_COMBINE, n);
        for (size_t a = 0; a < n; a++) {
            t->Sc[a] = carry[a];
            carry[a] = carry[a] * s + t->dS[a];
        }
    } else if (t->u > 0 && t->carries) { /* one pass: read S_c, write S_{c+1} */
        LA_COUNT(LA_COUNT_COMBINE, n);
        for (size_t a = 0; a < n; a++) {
            t->Sc[a] = carry[a];
            carry[a] += t->dS[a];
        }
    } else if (t->u > 0) {
        for (size_t a = 0; a < n; a++)
            t->Sc[a] = carry[a];
    }
}

/* Step 2 for the schedule that runs a head's chunks in turn on one thread, after
 * chunk_finish read the carried state as S_c, z_c: S_{c+1} = S_c + ΔS_c, z_{c+1} = z_c + Δz_c,
 * with ΔS_c = φKᵀ·V_c and Δz_c the row sums of φKᵀ formed in the thread's scratch. The
 * same values as chunk_prepare's ΔS_c, Δz_c added by chunk_advance (a sum that starts
 * from +0 never ends at −0, so starting S_0 at 0 changes no bit), without copying S_c. */
static void chunk_advance_in_place(const chunk_job *j, const chunk_task *t)
{
    const size_t dk = j->dk, dv = j->dv, C = j->C, nk = t->nk;
    REAL *S = j->carried + t->hd * j->state_size, *z = S + dk * dv;
    if (t->u == 0) return;
    if (t->c0 == 0) {
        for (size_t a = 0; a < j->state_size; a++)
            S[a] = 0;
    } else if (t->carries) {
        LA_COUNT(LA_COUNT_COMBINE, j->state_size);
        if (j->stab) { /* S_c, z_c to the chunk's new scale */
            const REAL s = rescale_factor(j, t);
            for (size_t a = 0; a < j->state_size; a++)
                S[a] *= s;
        }
    }
    if (!t->carries) return;
    if (j->stab) stabilize_keys(j, t, true);
    const REAL *vc = j->v + (t->hd * j->M + t->c0) * dv;
    /* S += ΔS_c, ΔS_c = φKᵀ·V_c, with the bits of forming ΔS_c (beta = 0, as chunk_prepare
     * does) and adding it. gemm_small's tiles add each finished FMA chain to C at the end,
     * so there the product goes straight into S (beta = 1: one pass over S fewer, 2–5% of
     * the chunked kernel's time at d = 64); BLIS's haswell configuration does not keep
     * those bits when gemm.c computes a last row apart, so elsewhere ΔS_c is formed in the
     * scratch and added. */
    REAL *dS = t->dS, *dz = dS + dk * dv;
    if (la_avx512_usable()) {
        LA_PRODUCT(LA_COUNT_KV, dk, dv, nk, 1, t->phi_kt, (ptrdiff_t)C, 1, vc, (ptrdiff_t)dv, 1, 1,
                   S, (ptrdiff_t)dv, 1);
    } else {
        LA_PRODUCT(LA_COUNT_KV, dk, dv, nk, 1, t->phi_kt, (ptrdiff_t)C, 1, vc, (ptrdiff_t)dv, 1, 0,
                   dS, (ptrdiff_t)dv, 1);
        for (size_t a = 0; a < dk * dv; a++) /* counted with the rescale above */
            S[a] += dS[a];
    }
    /* z += Σ_rows φ(K_c): per entry a the sum over jj in order from 0, as chunk_prepare's
     * Δz_c, but with the entries in the vector lanes (φ(K_c) row by row, not φKᵀ) */
    LA_COUNT(LA_COUNT_KV, dk * nk);
    for (size_t a = 0; a < dk; a++)
        dz[a] = 0;
    for (size_t jj = 0; jj < nk; jj++)
        for (size_t a = 0; a < dk; a++)
            dz[a] += t->phi_k[jj * dk + a];
    for (size_t a = 0; a < dk; a++)
        z[a] += dz[a];
}

/* Step 3, in any order: the chunk's outputs from S_c, z_c and A. */
static void chunk_finish(const chunk_job *j, const chunk_task *t)
{
    const size_t dk = j->dk, dv = j->dv, C = j->C, nq = t->nq, nk = t->nk, c0 = t->c0;
    const ptrdiff_t ldk = (ptrdiff_t)dk, ldc = (ptrdiff_t)C, ldv = (ptrdiff_t)dv;
    const REAL *vc = j->v + (t->hd * j->M + c0) * dv;
    REAL *y = j->out + (t->hd * j->N + c0) * dv;
    if (t->u == 0 || (nk == 0 && c0 == 0)) { /* no key visible to this chunk: zero rows */
        for (size_t a = 0; a < nq * dv; a++)
            y[a] = 0;
        if (t->u == 0) return;
    }
    /* num = φ(Q_c) S_c + A V_c, straight into y (the first chunk has no S_c) */
    if (c0 > 0) {
        LA_PRODUCT(LA_COUNT_QS, nq, dv, dk, 1, t->phi_q, ldk, 1, t->Sc, ldv, 1, 0, y, ldv, 1);
        for (size_t i = 0; j->stab && i < nq; i++) { /* y_i = r_i φ(q_i)ᵀS_c */
            LA_COUNT(LA_COUNT_QS, (double)dv + 3);   /* r_i, r_i·y_i, and r_i·den_i below */
            const REAL r = carried_factor(j, t, i);
            for (size_t c = 0; c < dv; c++)
                y[i * dv + c] *= r;
        }
    }
    for (size_t i0 = 0; nk > 0 && i0 < nq; i0 += LA_LINEAR_TRI_ROWS) { /* A's blocks, as computed */
        const size_t rows = nq - i0 < LA_LINEAR_TRI_ROWS ? nq - i0 : LA_LINEAR_TRI_ROWS;
        if (j->stab) /* counted by visible pair in stabilize_block */
            GEMM_SMALL(rows, dv, la_linear_tri_keys(nk, i0, rows), 1, t->A + i0 * C, ldc, 1, vc,
                       ldv, 1, c0 > 0 ? 1 : 0, y + i0 * dv, ldv, 1);
        else
            LA_PRODUCT(LA_COUNT_AV, rows, dv, la_linear_tri_keys(nk, i0, rows), 1, t->A + i0 * C,
                       ldc, 1, vc, ldv, 1, c0 > 0 ? 1 : 0, y + i0 * dv, ldv, 1);
    }
    /* y = num / (Σ_j A[i, j] + eps + φ(q_i)·z_c): the denominators are vector work beside
     * the products, A's row sums and (after the first chunk) a dot product with z_c */
    for (size_t i = 0; i < nq; i++) {
        REAL row = 0;
        const size_t i0 = i - i % LA_LINEAR_TRI_ROWS,
                     rows = nq - i0 < LA_LINEAR_TRI_ROWS ? nq - i0 : LA_LINEAR_TRI_ROWS;
        const size_t n = nk == 0 ? 0 : la_linear_tri_keys(nk, i0, rows); /* A's columns in row i */
        if (!j->stab) LA_COUNT(LA_COUNT_AV, n);
        for (size_t jj = 0; jj < n; jj++)
            row += t->A[i * C + jj];
        REAL den = row + j->eps;
        LA_COUNT(LA_COUNT_NORMALIZE, 1 + dv);
        if (c0 > 0) {
            LA_COUNT(LA_COUNT_COMBINE, 1);
            const REAL carried = LA_DOT(LA_COUNT_QS, t->phi_q + i * dk, t->zc, dk);
            den += j->stab ? carried_factor(j, t, i) * carried : carried;
        }
        for (size_t c = 0; c < dv; c++) /* den = 0: the empty row (linattn.h) */
            y[i * dv + c] = den == 0 ? 0 : y[i * dv + c] / den;
    }
}

/* Causal linear attention, chunked form, C = min(p->chunk, N) tokens per chunk. Keys
 * j >= N are never seen (query i sees j <= i), so a head uses u = min(m, N) keys.
 * For each head (b, h) and chunk of queries [c0, c0 + nq) with visible keys
 * [c0, c0 + nk), with (S_c, z_c) the state of the keys before the chunk:
 *   A = φ(Q_c) φ(K_c)ᵀ (nq, nk), A[i, j] = 0 for key j > query i;
 *   num = φ(Q_c) S_c + A V_c  (nq, d_v),  den = φ(Q_c) z_c + rowsum(A),
 *   y = num / (den + eps);
 *   ΔS_c = φ(K_c)ᵀ V_c (d_k, d_v), Δz_c = Σ_rows φ(K_c);  S_{c+1} = S_c + ΔS_c, z likewise.
 * φ(K_c) is kept transposed, φKᵀ (d_k, nk), so that both products it enters read it
 * row-major: A = φ(Q_c) · φKᵀ and ΔS_c = φKᵀ · V_c. Every product has d_v columns
 * (the denominators are matrix-vector work beside them, not a 65th column).
 * Each task (head, chunk) runs chunk_prepare, chunk_advance, chunk_finish; only
 * chunk_advance, the prefix sum S_{c+1} = S_c + ΔS_c, must run in chunk order. Two
 * schedules, bitwise the same (each head's sums in the same order):
 *   heads a multiple of the threads: each thread takes whole heads, chunk after chunk,
 *     with no synchronization;
 *   otherwise: tasks (head, chunk) in parallel, chunk_advance in an ordered section,
 *     so a single head uses every thread.
 * The carried state is one per head (bounded scratch, no per-chunk states kept).
 * Scratch: the carried [S z] of every head; per thread φ(Q_c) C·d_k, A C·C, φ(K_c)
 * C·d_k and φKᵀ d_k·C, S_c and z_c d_k(d_v + 1), ΔS_c and Δz_c d_k(d_v + 1). */
static la_status linear_chunked(const la_problem *p, const feature_rows *fr, const REAL *q,
                                const REAL *k, const REAL *v, const REAL *stab, REAL *out)
{
    const size_t N = p->n_queries, heads = p->batch * p->heads;
    const size_t C = p->chunk < N ? p->chunk : N, n_chunks = (N + C - 1) / C;
    linear_layout lay;
    REAL *work = NULL;
    la_status st = workspace_alloc(p, false, &lay, &work);
    if (st != LA_OK) return st;
    const size_t threads = lay.threads, per_thread = lay.per_thread;
    const chunk_job job = {p,
                           fr,
                           q,
                           k,
                           v,
                           out,
                           N,
                           p->n_keys,
                           p->d_k,
                           row_length(p, fr),
                           p->d_v,
                           C,
                           n_chunks,
                           heads * n_chunks,
                           p->d_k * (p->d_v + 1),
                           work,
                           (REAL)p->eps,
                           stab};
    REAL *scratch = work + lay.shared;

    if (heads % threads == 0) {
#pragma omp parallel for schedule(dynamic) num_threads((int)threads)
        for (size_t hd = 0; hd < heads; hd++) {
            REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
            for (size_t c = 0; c < n_chunks; c++) {
                const size_t task = hd * n_chunks + c;
                chunk_task t;
                chunk_prepare(&job, task, c + 1 < n_chunks ? task + 1 : SIZE_MAX, mine, &t, true);
                t.Sc = job.carried + hd * job.state_size; /* S_c, z_c: the carried state */
                t.zc = t.Sc + job.dk * job.dv;
                chunk_finish(&job, &t);
                chunk_advance_in_place(&job, &t);
            }
        }
    } else {
#pragma omp parallel for ordered schedule(dynamic) num_threads((int)threads)
        for (size_t task = 0; task < job.tasks; task++) {
            REAL *mine = scratch + (size_t)omp_get_thread_num() * per_thread;
            chunk_task t;
            chunk_prepare(&job, task, task + threads, mine, &t, false);
#pragma omp ordered
            chunk_advance(&job, &t);
            chunk_finish(&job, &t);
        }
    }
    free(work);
    return LA_OK;
}

/* Non-causal, or causal in chunks (p->causal), on p->feature_map (linear_internal.h). */
#if REAL_IS_F32
la_status la_linear_scan_f32(const la_problem *p, const float *q, const float *k, const float *v,
                             float *out)
#else
la_status la_linear_scan_f64(const la_problem *p, const double *q, const double *k, const double *v,
                             double *out)
#endif
{
    if (p->causal && !FN(la_range_ok)(LA_RANGE_LINEAR, p, q, k, v)) return LA_ERANGE;
    return p->causal ? linear_chunked(p, NULL, q, k, v, NULL, out)
                     : linear_noncausal(p, NULL, q, k, v, out);
}

/* Non-causal, or causal in chunks, on features formed by rows (linear_internal.h). */
#if REAL_IS_F32
la_status la_linear_scan_rows_f32(const la_problem *p, const la_linear_rows_f32 *rows,
                                  const float *q, const float *k, const float *v, float *out)
#else
la_status la_linear_scan_rows_f64(const la_problem *p, const la_linear_rows_f64 *rows,
                                  const double *q, const double *k, const double *v, double *out)
#endif
{
    return p->causal ? linear_chunked(p, rows, q, k, v, NULL, out)
                     : linear_noncausal(p, rows, q, k, v, out);
}

/* Causal in chunks with FAVOR+'s stabilizer (linear_internal.h). */
#if REAL_IS_F32
la_status la_linear_scan_stabilized_f32(const la_problem *p, const float *phi_q, const float *psi_k,
                                        const float *v, const float *mu_g, float *out)
#else
la_status la_linear_scan_stabilized_f64(const la_problem *p, const double *phi_q,
                                        const double *psi_k, const double *v, const double *mu_g,
                                        double *out)
#endif
{
    if (!p->causal) return LA_EINVAL;
    return linear_chunked(p, NULL, phi_q, psi_k, v, mu_g, out);
}

/* Causal linear attention, recurrent form, per head (b, h), token by token:
 *   if t < u: S += φ(k_t) v_tᵀ, z += φ(k_t);   y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps),
 * with u = min(m, N) the keys any query sees; zero rows when m = 0. A token with a key
 * runs la_linear_step_head_*, the function la_linear_step_* runs, so stepping the step
 * API through a sequence reproduces this bit for bit. Tasks: (head, part of the d_v
 * columns: the layout's la_linear_recurrent_parts); a part of width w holds S's w columns
 * as a (d_k, w) array. Scratch per thread: S, z, φ(q_t), φ(k_t). */
#if REAL_IS_F32
la_status la_linear_scan_recurrent_f32(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out)
#else
la_status la_linear_scan_recurrent_f64(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out)
#endif
{
    if (!FN(la_range_ok)(LA_RANGE_LINEAR, p, q, k, v)) return LA_ERANGE;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t heads = p->batch * p->heads;
    linear_layout lay;
    REAL *work = NULL;
    la_status st = workspace_alloc(p, true, &lay, &work);
    if (st != LA_OK) return st;
    const size_t threads = lay.threads, per_thread = lay.per_thread;
    const size_t parts = lay.parts, width = lay.width;
    const REAL eps = (REAL)p->eps;

#pragma omp parallel for schedule(dynamic) num_threads((int)threads)
    for (size_t task = 0; task < heads * parts; task++) {
        const size_t hd = task / parts, c0 = task % parts * width;
        const size_t w = dv - c0 < width ? dv - c0 : width; /* this part's columns */
        REAL *S = work + (size_t)omp_get_thread_num() * per_thread;
        REAL *z = S + dk * dv, *phi_q = z + dk, *phi_k = phi_q + dk;
        const REAL *qh = q + hd * N * dk, *kh = k + hd * M * dk, *vh = v + hd * M * dv + c0;
        REAL *yh = out + hd * N * dv + c0;
        const size_t m = la_keys_in_length(p, hd / p->heads);
        for (size_t a = 0; a < dk * w; a++)
            S[a] = 0;
        for (size_t a = 0; a < dk; a++)
            z[a] = 0;
        for (size_t t = 0; t < N; t++) {
            if (m == 0) { /* no key visible: zero row */
                for (size_t c = 0; c < w; c++)
                    yh[t * dv + c] = 0;
                continue;
            }
            LA_PHI(p->feature_map, qh + t * dk, phi_q, dk);
            if (t < m) {
                /* S += φ(k_t) v_tᵀ, z += φ(k_t); y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps) */
                LA_PHI(p->feature_map, kh + t * dk, phi_k, dk);
                FN(la_linear_hide_keys)(p, hd, t, phi_k, 1);
                FN(la_linear_step_head)(S, z, phi_k, vh + t * dv, phi_q, eps, yh + t * dv, dk, w);
            } else {
                /* no key left to add: y_t = φ(q_t)ᵀS / (φ(q_t)ᵀz + eps) */
                FN(la_linear_read_query)(S, z, phi_q, phi_q, eps, yh + t * dv, dk, w);
            }
        }
    }
    free(work);
    return LA_OK;
}

#undef LIMIT

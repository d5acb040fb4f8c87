/* engine_avx512.c — the AVX-512 tiles of the online-softmax engine (engine.h): the score
 * tile, the exp/rescale tile and the P·V tile, in float32 and float64, for the fused
 * softmax kernel's dot-product scores.
 *
 * Why not BLIS here: a task multiplies a block of 32 queries by one block of keys at a time,
 * products of k = d_k = 64. Through BLIS each such product costs a call (about 1 µs), a
 * repacking of the key block for every query block, and BLIS's small-matrix path: the
 * portable tiles (engine_portable.c) reach 0.45 of sgemm's rate here. These tiles compute
 * the two block products with their own register-blocked loops instead.
 *
 * The layout that makes it simple (the wide tiles): the task's queries live in the vector
 * lanes (float32: two registers of 16; float64: two of 8). Then
 *   scores:  sᵀ[j][r] = Σ_p qᵀ[p][r] · k[j][p]  — a column of qᵀ times a broadcast key
 *            element: k and v are read in place, row-major, never transposed or packed;
 *            only the task's query rows are transposed once, into qᵀ (d_k × QT).
 *   softmax: every step is per query, so per lane: the running maximum, the rescaling
 *            and the row sums are vertical vector operations, with no horizontal
 *            reductions and no scalar loop over rows.
 *   values:  oᵀ[c][r] += Σ_j v[j][c] · pᵀ[j][r] — a broadcast value element times a
 *            row of pᵀ.
 * Both products are micro-tiles of MT keys (or value columns) × QT queries: 16
 * accumulators, per step 2 vector loads + 8 broadcasts for 16 FMAs at QT = 32. float32
 * has two task sizes (engine_wide_ps_tmpl.h), chosen per CPU (la_fused_simd_q_block): 32,
 * and 64 (4 + 4 loads per 16 FMAs) on a Zen 5, where it runs faster; a Zen 4 measured 64
 * queries (then with key blocks of 64) slower at N = 32768 with one head (0.89-0.99 s
 * against 0.76-0.82 s). float64 keeps the bytes of scratch of 32 float32 queries with
 * QT = 16.
 *
 * float32: exp is exp2 with log2(e) folded into the scale: scores are kept as
 * s₂ = q·k · scale · log2(e), and exp(s - m) = 2^(s₂ - m₂). float64 stays in natural units
 * (s = q·k · scale, exp by la_exp_pd): folding log2 e into the scale adds a rounding of
 * relative size 2⁻⁵³ to s, an absolute error of |s|·1e-16 in the exponent, 1e-12 at logits
 * of 1e4, above the float64 tests' tolerance.
 *
 * Tasks of a few queries (decoding's single query, the tail of N) would leave most lanes
 * empty; they run one query at a time with the keys in the lanes instead (the narrow tiles,
 * below each wide set). */
#include "attention/engine.h"
#include "cpu/simd_avx512.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ the task size */

static pthread_once_t q_block_once = PTHREAD_ONCE_INIT;
static size_t q_block_chosen = LA_FUSED_SIMD_Q_BLOCK;
static char q_block_text[96];
static _Atomic size_t q_block_override; /* la_fused_simd_use_q_block; 0: the choice */

/* LA_FUSED_QUERIES=32|64 forces the size; a Zen 5 runs 64 (in turn against 32 there,
 * fused softmax at N = 4,096, d = 64, H = 8: 0.0985-0.0994 s against 0.101-0.104 s; one
 * head of N = 32,768: 0.87-0.88 s against 1.03-1.10 s); elsewhere 32, the size the Zen 4
 * measured faster. */
static void choose_q_block(void)
{
    const char *env = getenv("LA_FUSED_QUERIES"), *why = "the default";
    const bool forced = env && (strcmp(env, "32") == 0 || strcmp(env, "64") == 0);
    if (forced) {
        q_block_chosen = env[0] == '6' ? LA_FUSED_SIMD_Q_BLOCK_LARGE : LA_FUSED_SIMD_Q_BLOCK;
        why = "LA_FUSED_QUERIES";
    } else if (la_cpu_amd_family() == 0x1au) {
        q_block_chosen = LA_FUSED_SIMD_Q_BLOCK_LARGE, why = "Zen 5: measured faster there";
    }
    snprintf(q_block_text, sizeof q_block_text, "%zu queries (%s%s)", q_block_chosen, why,
             env && !forced ? "; LA_FUSED_QUERIES is not 32 or 64" : "");
}

size_t la_fused_simd_q_block(void)
{
    const size_t forced = q_block_override;
    if (forced) return forced;
    pthread_once(&q_block_once, choose_q_block);
    return q_block_chosen;
}

void la_fused_simd_use_q_block(size_t q_block)
{
    q_block_override =
        q_block == LA_FUSED_SIMD_Q_BLOCK || q_block == LA_FUSED_SIMD_Q_BLOCK_LARGE ? q_block : 0;
}

const char *la_fused_simd_config(void)
{
    pthread_once(&q_block_once, choose_q_block);
    return q_block_text;
}

#if LA_HAVE_AVX512_CODE

/* ================================================================ float32 */

enum { KB = LA_FUSED_SIMD_K_BLOCK }; /* keys per block: sᵀ is KB × QT floats */

#define LN2 0.69314718055994531f /* lse = log2-unit statistics · ln 2 */
#define LOG2E 1.4426950408889634

LA_AVX512 void la_fused_simd_exp2(const float *x, float *y, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, la_exp2_ps(_mm512_loadu_ps(x + i)));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, la_exp2_ps(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

/* |x| as bits (the sign cleared): its unsigned maximum is the largest magnitude, +inf
 * or NaN above every finite one (as la_max_abs_f32 reads it). */
LA_AVX512 static inline __m512i abs_bits(__m512 x)
{
    return _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff));
}

/* max |x[i]| over n floats as bits, into *bits (the sign cleared, so the unsigned order
 * is the order of magnitudes, non-finite values above every finite one). */
LA_AVX512 static void max_abs_bits(const float *x, size_t n, uint32_t *bits)
{
    __m512i m = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        m = _mm512_max_epu32(m, abs_bits(_mm512_loadu_ps(x + i)));
    if (i < n)
        m = _mm512_max_epu32(
            m, abs_bits(_mm512_maskz_loadu_ps((__mmask16)((1u << (n - i)) - 1), x + i)));
    const uint32_t got = _mm512_reduce_max_epu32(m);
    if (got > *bits) *bits = got;
}

/* The same over n rows of d floats at stride ld: one scan when they lie d apart. */
LA_AVX512 static void max_abs_rows(const float *x, size_t n, size_t d, size_t ld, uint32_t *bits)
{
    if (ld == d) {
        max_abs_bits(x, n * d, bits);
        return;
    }
    for (size_t r = 0; r < n; r++)
        max_abs_bits(x + r * ld, d, bits);
}

/* Scratch of one thread, in floats, every part 64-byte aligned (QT = q_block floats, 128
 * or 256 bytes): qᵀ (d_k × QT), then sᵀ/pᵀ (KB × QT), then oᵀ (d_v × QT). The narrow tiles
 * use sᵀ's first KB floats for a row's weights and oᵀ's first d_v for its accumulator, at
 * the offsets of the smaller size, LA_FUSED_SIMD_Q_BLOCK (NARROW_QT). */
size_t la_fused_simd_scratch_bytes(const la_problem *p, size_t q_block)
{
    return (p->d_k + KB + p->d_v) * q_block * sizeof(float);
}

/* The wide tiles, 32 and 64 queries a task (engine_wide_ps_tmpl.h). */
#define QT LA_FUSED_SIMD_Q_BLOCK
#define WIDE(name) name##_q32
#define WIDE_TILES la_engine_avx512_wide_f32
#include "attention/engine_wide_ps_tmpl.h"

#define QT LA_FUSED_SIMD_Q_BLOCK_LARGE
#define WIDE(name) name##_q64
#define WIDE_TILES la_engine_avx512_wide64_f32
#include "attention/engine_wide_ps_tmpl.h"

/* ---------------------------------------------------------------- narrow tasks */

enum { NARROW_QT = LA_FUSED_SIMD_Q_BLOCK }; /* the scratch offsets of a narrow row */

/* A narrow row streams K and V once (decoding: one query against the whole cache) and does
 * little work per byte, so it runs at the rate the rows arrive. The hardware prefetchers
 * kept it far from the read bandwidth; the tiles prefetch the rows NARROW_AHEAD_BYTES
 * ahead themselves (at least 16 keys, in whole groups of 16). On the Zen 5 of
 * docs/performance.md, one query, M = 32,768, H = 8, d = 64, 2 threads: 5.8-6.9 ms
 * without, 1.85-1.88 ms with 8 KiB (32 keys) ahead, 1.9-2.0 ms with 16 KiB, 2.1-2.4 ms with
 * 32 KiB. */
enum { NARROW_AHEAD_BYTES = 8192 };

/* Keys ahead for rows of row_bytes: NARROW_AHEAD_BYTES of them, a multiple of 16, >= 16. */
static inline size_t narrow_ahead(size_t row_bytes)
{
    const size_t keys = (NARROW_AHEAD_BYTES / row_bytes + 15) / 16 * 16;
    return keys > 16 ? keys : 16;
}

/* Prefetch rows [from, to) of row_bytes each at stride ld floats from x. always_inline:
 * gcc 12 dropped the prefetches of a plain static inline helper called from the
 * always_inline bodies below (objdump showed none). */
LA_AVX512 __attribute__((always_inline)) static inline void
prefetch_rows(const float *x, size_t from, size_t to, size_t ld, size_t row_bytes)
{
    for (size_t r = from; r < to; r++) {
        const char *row = (const char *)(x + r * ld);
        for (size_t b = 0; b < row_bytes; b += 64)
            _mm_prefetch(row + b, _MM_HINT_T0);
    }
}

/* A task of a few queries (decode: one query against the whole cache) would use 1 of the
 * 32 lanes above. Each such query runs alone instead, keys in the lanes:
 *   s_j = q·k_j · scale2 for a block of keys (one vector dot product per key),
 *   online softmax over the block (horizontal maximum and sum),
 *   o += Σ_j p_j v_j (a broadcast weight times each value row).
 * Used for tasks of at most LA_FUSED_SIMD_NARROW_ROWS queries; each query costs about
 * what the lane layout costs for 32, so beyond a few queries the lanes win. With
 * t->kv_bits (float32 decoding: la_engine_run's staging) the tiles also take max|k| and
 * max|v| on the loads they make anyway, so the call reads K and V once instead of twice. */

/* Sixteen keys' dot products at once: acc[f(t)] holds key t's 16 partial sums, and
 * fold16 adds each vector's lanes (the tree of _mm512_reduce_add_ps: lanes i and i + 8,
 * then i + 4, i + 2, i + 1), leaving key t's sum in lane t; f (SLOT below) is the lane
 * order the tree leaves, an involution, so slot f(t) holds key t. Three instructions per
 * pair and level: 45 for 16 keys, against 16 full reductions of about 8 each. */
static const int SLOT[16] = {0, 2, 1, 3, 8, 10, 9, 11, 4, 6, 5, 7, 12, 14, 13, 15};

LA_AVX512 __attribute__((always_inline)) static inline __m512 fold16(__m512 a[16])
{
    __m512 b[8], c[4], d[2];
    for (int i = 0; i < 8; i++) /* halves of 256 bits: lanes i and i + 8 */
        b[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a[i], a[i + 8], 0x44),
                             _mm512_shuffle_f32x4(a[i], a[i + 8], 0xEE));
    for (int i = 0; i < 4; i++) /* blocks of 128 bits: lanes i and i + 4 */
        c[i] = _mm512_add_ps(_mm512_shuffle_f32x4(b[i], b[i + 4], 0x88),
                             _mm512_shuffle_f32x4(b[i], b[i + 4], 0xDD));
    for (int i = 0; i < 2; i++) /* pairs within 128 bits: lanes i and i + 2 */
        d[i] = _mm512_add_ps(_mm512_shuffle_ps(c[i], c[i + 2], 0x44),
                             _mm512_shuffle_ps(c[i], c[i + 2], 0xEE));
    /* neighbors: lanes i and i + 1 */
    return _mm512_add_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));
}

/* A narrow row's running statistics (in t->state): the maximum m and sum l (log2 units),
 * the block's maximum, and the largest |k|, |v| bits taken so far. */
typedef struct {
    __m512i kmax, vmax;
    float m, l, block_max;
    float *st, *acc; /* KB weights, d_v accumulators */
} narrow_ps;
_Static_assert(sizeof(narrow_ps) <= LA_ENGINE_STATE_BYTES, "the state fits");

LA_AVX512 static void narrow_begin_ps(la_engine_task *t)
{
    narrow_ps *w = (narrow_ps *)(void *)t->state;
    const size_t dk = t->p->d_k;
    w->st = (float *)(void *)t->scratch + dk * NARROW_QT;
    w->acc = w->st + KB * NARROW_QT;
    memset(w->acc, 0, t->p->d_v * sizeof *w->acc);
    w->m = -INFINITY;
    w->l = 0;
    w->kmax = w->vmax = _mm512_setzero_si512();
}

/* s_j = q·k_j · scale2, 16 keys at a time: sixteen dot products side by side (16
 * independent FMA chains), one fold16 for their sums; and the block maximum. q: the row
 * i0 (stride ldq), k: rows of d_k at stride ldk. */
LA_AVX512 __attribute__((always_inline)) static inline void
narrow_scores_body(la_engine_task *t, size_t j0, size_t cols, bool scan)
{
    narrow_ps *w = (narrow_ps *)(void *)t->state;
    const size_t dk = t->p->d_k, ldk = t->ldk;
    const float *q = (const float *)t->q + t->i0 * t->ldq, *kh = t->k;
    const __m512 scale2 = _mm512_set1_ps((float)(t->p->scale * LOG2E));
    __m512i kmax = w->kmax;
    __m512 bmv = _mm512_set1_ps(-INFINITY);
    const size_t ahead = narrow_ahead(dk * sizeof(float));
    for (size_t j = 0; j < cols; j += 16) {
        const int nk = cols - j < 16 ? (int)(cols - j) : 16;
        const float *kj = kh + (j0 + j) * ldk;
        const size_t pf = j0 + j + ahead; /* the 16 rows `ahead` keys on, while visible */
        prefetch_rows(kh, pf, pf + 16 < t->key_hi ? pf + 16 : t->key_hi, ldk, dk * sizeof(float));
        __m512 a[16];
#pragma GCC unroll 16
        for (int c = 0; c < 16; c++)
            a[c] = _mm512_setzero_ps();
        for (size_t c = 0; c < dk; c += 16) {
            const __mmask16 mk = dk - c >= 16 ? 0xffff : (__mmask16)((1u << (dk - c)) - 1);
            const __m512 qc = _mm512_maskz_loadu_ps(mk, q + c);
#pragma GCC unroll 16
            for (int x = 0; x < 16; x++) {
                if (x >= nk) break;
                const __m512 kv = _mm512_maskz_loadu_ps(mk, kj + (size_t)x * ldk + c);
                if (scan) kmax = _mm512_max_epu32(kmax, abs_bits(kv));
                a[SLOT[x]] = _mm512_fmadd_ps(qc, kv, a[SLOT[x]]);
            }
        }
        const __mmask16 live = nk == 16 ? 0xffff : (__mmask16)((1u << nk) - 1);
        const __m512 sv = _mm512_mul_ps(fold16(a), scale2);
        _mm512_mask_storeu_ps(w->st + j, live, sv);
        bmv = _mm512_mask_max_ps(bmv, live, bmv, sv);
    }
    w->block_max = _mm512_reduce_max_ps(bmv);
    w->kmax = kmax;
}

LA_AVX512 static void narrow_scores_ps(la_engine_task *t, size_t j0, size_t cols)
{
    if (t->kv_bits)
        narrow_scores_body(t, j0, cols, true);
    else
        narrow_scores_body(t, j0, cols, false);
}

/* online softmax: rescale what was accumulated when the maximum grew; p_j = 2^(s_j − m),
 * 16 at a time; the block's sum, then added */
LA_AVX512 static void narrow_softmax_ps(la_engine_task *t, size_t j0, size_t cols)
{
    (void)j0;
    narrow_ps *w = (narrow_ps *)(void *)t->state;
    const size_t dv = t->p->d_v;
    if (w->block_max > w->m) {
        if (w->l > 0) {
            const float a = exp2f(w->m - w->block_max);
            w->l *= a;
            for (size_t c = 0; c < dv; c++)
                w->acc[c] *= a;
        }
        w->m = w->block_max;
    }
    const __m512 mv = _mm512_set1_ps(w->m);
    __m512 bs = _mm512_setzero_ps();
    float *st = w->st;
    size_t j = 0;
    for (; j + 16 <= cols; j += 16) {
        const __m512 e = la_exp2_ps(_mm512_sub_ps(_mm512_loadu_ps(st + j), mv));
        _mm512_storeu_ps(st + j, e);
        bs = _mm512_add_ps(bs, e);
    }
    if (j < cols) {
        const __mmask16 mk = (__mmask16)((1u << (cols - j)) - 1);
        const __m512 e = la_exp2_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, st + j), mv));
        _mm512_mask_storeu_ps(st + j, mk, e);
        bs = _mm512_add_ps(bs, _mm512_maskz_mov_ps(mk, e));
    }
    w->l += _mm512_reduce_add_ps(bs);
}

/* acc += Σ_j p_j v_j, up to 64 columns at a time (the tail masked): the keys in order, one
 * FMA chain per 16 columns; the block's sum formed on its own, then added. v: rows of d_v
 * at stride ldv. */
LA_AVX512 __attribute__((always_inline)) static inline void
narrow_values_body(la_engine_task *t, size_t j0, size_t cols, bool scan)
{
    narrow_ps *w = (narrow_ps *)(void *)t->state;
    const size_t dv = t->p->d_v, ldv = t->ldv;
    const float *vh = t->v, *st = w->st;
    __m512i vmax = w->vmax;
    for (size_t c0 = 0; c0 < dv; c0 += 64) {
        __mmask16 mk[4];
        int nv = 0;
        for (; nv < 4 && c0 + 16 * (size_t)nv < dv; nv++) {
            const size_t left = dv - c0 - 16 * (size_t)nv;
            mk[nv] = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
        }
        __m512 sum[4];
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++)
            sum[g] = _mm512_setzero_ps();
        const size_t ahead = narrow_ahead(dv * sizeof(float));
        for (size_t jj = 0; jj < cols; jj++) {
            const __m512 pj = _mm512_set1_ps(st[jj]);
            const float *vj = vh + (j0 + jj) * ldv + c0;
            if (c0 == 0 && j0 + jj + ahead < t->key_hi) /* the row `ahead` keys on */
                prefetch_rows(vh, j0 + jj + ahead, j0 + jj + ahead + 1, ldv, dv * sizeof(float));
#pragma GCC unroll 4
            for (int g = 0; g < 4; g++) {
                if (g >= nv) break;
                const __m512 vv = _mm512_maskz_loadu_ps(mk[g], vj + 16 * g);
                if (scan) vmax = _mm512_max_epu32(vmax, abs_bits(vv));
                sum[g] = _mm512_fmadd_ps(pj, vv, sum[g]);
            }
        }
#pragma GCC unroll 4
        for (int g = 0; g < 4; g++) {
            if (g >= nv) break;
            float *ac = w->acc + c0 + 16 * g;
            _mm512_mask_storeu_ps(ac, mk[g],
                                  _mm512_add_ps(_mm512_maskz_loadu_ps(mk[g], ac), sum[g]));
        }
    }
    w->vmax = vmax;
}

LA_AVX512 static void narrow_values_ps(la_engine_task *t, size_t j0, size_t cols)
{
    if (t->kv_bits)
        narrow_values_body(t, j0, cols, true);
    else
        narrow_values_body(t, j0, cols, false);
}

/* out = acc / l (out: the row i0, stride ldo), a row that saw no key stays zero; lse =
 * (m + log2 l) · ln 2; and with kv_bits the maxima taken, then those of the keys the task
 * sees past the row's (which it did not read). */
LA_AVX512 static void narrow_finish_ps(la_engine_task *t)
{
    narrow_ps *w = (narrow_ps *)(void *)t->state;
    const size_t dk = t->p->d_k, dv = t->p->d_v, ldk = t->ldk, ldv = t->ldv;
    float *o = (float *)t->out + t->i0 * t->ldo;
    const float inv = w->l > 0 ? 1.0f / w->l : 0.0f;
    for (size_t c = 0; c < dv; c++)
        o[c] = w->acc[c] * inv;
    if (t->lse) *(float *)t->lse = w->l > 0 ? (w->m + log2f(w->l)) * LN2 : -INFINITY;
    if (t->kv_bits) {
        const uint32_t kb = _mm512_reduce_max_epu32(w->kmax), vb = _mm512_reduce_max_epu32(w->vmax);
        if (kb > t->kv_bits[0]) t->kv_bits[0] = kb;
        if (vb > t->kv_bits[1]) t->kv_bits[1] = vb;
        const size_t read = t->key_hi; /* the row read keys [0, key_hi) */
        if (t->kv_hi > read) {
            max_abs_rows((const float *)t->k + read * ldk, t->kv_hi - read, dk, ldk,
                         &t->kv_bits[0]);
            max_abs_rows((const float *)t->v + read * ldv, t->kv_hi - read, dv, ldv,
                         &t->kv_bits[1]);
        }
    }
}

const la_engine_tiles la_engine_avx512_narrow_f32 = {
    narrow_begin_ps, narrow_scores_ps, narrow_softmax_ps, narrow_values_ps, narrow_finish_ps};

bool la_fused_simd_usable(const la_problem *p)
{
    /* general masks (p->mask, p->key_mask): the portable tiles, which test each pair */
    return la_avx512_usable() && p->n_keys <= INT32_MAX && !la_has_masks(p);
}

size_t la_fused_simd_staging_bytes(const la_problem *p, bool lse)
{
    if (!la_fused_simd_usable(p) || p->n_queries > LA_FUSED_SIMD_NARROW_ROWS) return 0;
    const size_t rows = p->batch * p->heads * p->n_queries; /* la_problem_check: no overflow */
    return (rows * p->d_v + (lse ? rows : 0)) * sizeof(float);
}

/* ================================================================ float64 */

/* The float64 tiles: the same design, with QT_D = 16 queries (ND = 2 registers of 8
 * lanes), MT_D = 8: the same 2 vector loads + 8 broadcasts per 16 FMAs, and the same bytes
 * of scratch (qᵀ, sᵀ, oᵀ) per task; the exponent in natural units (the top of the file). */
enum {
    QT_D = LA_FUSED_SIMD_F64_Q_BLOCK,
    ND = QT_D / 8,
    KB_D = LA_FUSED_SIMD_F64_K_BLOCK,
    MT_D = 16 / ND,
};
_Static_assert(QT_D % 8 == 0 && 16 % ND == 0, "QT_D: 8, 16 or 32 queries");

/* All-ones mask for the first n (< 8) lanes. */
static inline __mmask8 first_lanes(size_t n)
{
    return (__mmask8)((1u << n) - 1);
}

LA_AVX512 void la_fused_simd_exp_f64(const double *x, double *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(y + i, la_exp_pd(_mm512_loadu_pd(x + i)));
    if (i < n) {
        const __mmask8 m = first_lanes(n - i);
        _mm512_mask_storeu_pd(y + i, m, la_exp_pd(_mm512_maskz_loadu_pd(m, x + i)));
    }
}

/* scores_ps in float64: st[t][r] = (Σ_p qt[p][r] · k[t][p]) · scale; k: `keys` rows of d_k
 * at stride ldk. */
LA_AVX512 __attribute__((always_inline)) static inline void scores_pd(const double *qt,
                                                                      const double *k, size_t dk,
                                                                      size_t ldk, __m512d scale,
                                                                      double *st, int keys)
{
    __m512d acc[MT_D][ND];
#pragma GCC unroll 16
    for (int t = 0; t < MT_D; t++)
#pragma GCC unroll 4
        for (int g = 0; g < ND; g++)
            acc[t][g] = _mm512_setzero_pd();
    for (size_t p = 0; p < dk; p++) {
        __m512d q[ND];
#pragma GCC unroll 4
        for (int g = 0; g < ND; g++)
            q[g] = _mm512_load_pd(qt + p * QT_D + 8 * g);
#pragma GCC unroll 16
        for (int t = 0; t < MT_D; t++) {
            if (t >= keys) break;
            const __m512d kb = _mm512_set1_pd(k[(size_t)t * ldk + p]);
#pragma GCC unroll 4
            for (int g = 0; g < ND; g++)
                acc[t][g] = _mm512_fmadd_pd(q[g], kb, acc[t][g]);
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < MT_D; t++) {
        if (t >= keys) break;
#pragma GCC unroll 4
        for (int g = 0; g < ND; g++)
            _mm512_store_pd(st + t * QT_D + 8 * g, _mm512_mul_pd(acc[t][g], scale));
    }
}

/* values_ps in float64: ot[t][r] += Σ_j v[j][t] · pt[j][r], the block's sum then added; v:
 * `keys` rows at stride ldv. */
LA_AVX512 __attribute__((always_inline)) static inline void
values_pd(const double *pt, size_t keys, const double *v, size_t ldv, double *ot, int cols_v)
{
    __m512d acc[MT_D][ND];
#pragma GCC unroll 16
    for (int t = 0; t < MT_D; t++)
#pragma GCC unroll 4
        for (int g = 0; g < ND; g++)
            acc[t][g] = _mm512_setzero_pd();
    for (size_t j = 0; j < keys; j++) {
        __m512d pj[ND];
#pragma GCC unroll 4
        for (int g = 0; g < ND; g++)
            pj[g] = _mm512_load_pd(pt + j * QT_D + 8 * g);
        const double *vj = v + j * ldv;
#pragma GCC unroll 16
        for (int t = 0; t < MT_D; t++) {
            if (t >= cols_v) break;
            const __m512d vb = _mm512_set1_pd(vj[t]);
#pragma GCC unroll 4
            for (int g = 0; g < ND; g++)
                acc[t][g] = _mm512_fmadd_pd(pj[g], vb, acc[t][g]);
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < MT_D; t++) {
        if (t >= cols_v) break;
#pragma GCC unroll 4
        for (int g = 0; g < ND; g++) {
            double *o = ot + t * QT_D + 8 * g;
            _mm512_store_pd(o, _mm512_add_pd(_mm512_load_pd(o), acc[t][g]));
        }
    }
}

/* Scratch of one thread, in doubles, every part 64-byte aligned (QT_D doubles = 128
 * bytes): qᵀ (d_k × QT_D), then sᵀ/pᵀ (KB_D × QT_D), then oᵀ (d_v × QT_D). */
size_t la_fused_simd_scratch_bytes_f64(const la_problem *p)
{
    return (p->d_k + KB_D + p->d_v) * QT_D * sizeof(double);
}

/* wide_ps in float64 (natural units). */
typedef struct {
    __m512d m[ND], l[ND];
    __m512i lo[ND], hi[ND];
    size_t lo_max, hi_min;
    double *qt, *st, *ot;
} wide_pd;
_Static_assert(sizeof(wide_pd) <= LA_ENGINE_STATE_BYTES, "the state fits");

/* wide_begin_ps in float64: qᵀ from q's rows (stride ldq), without the scan. */
LA_AVX512 static void wide_begin_pd(la_engine_task *t)
{
    wide_pd *w = (wide_pd *)(void *)t->state;
    const size_t dk = t->p->d_k, dv = t->p->d_v, rows = t->rows, ldq = t->ldq;
    const double *qh = t->q;
    w->qt = (double *)(void *)t->scratch;
    w->st = w->qt + dk * QT_D;
    w->ot = w->st + KB_D * QT_D;
    for (size_t c = 0; c < dk; c++)
        for (size_t r = 0; r < QT_D; r++)
            w->qt[c * QT_D + r] = r < rows ? qh[(t->i0 + r) * ldq + c] : 0.0;
    memset(w->ot, 0, dv * QT_D * sizeof *w->ot);
    int64_t lo[QT_D], hi[QT_D];
    w->lo_max = 0;
    w->hi_min = SIZE_MAX;
    for (size_t r = 0; r < QT_D; r++) {
        const size_t from = r < rows ? r : rows - 1;
        lo[r] = (int64_t)t->lo[from];
        hi[r] = (int64_t)t->hi[from];
        if (t->lo[from] > w->lo_max) w->lo_max = t->lo[from];
        if (t->hi[from] < w->hi_min) w->hi_min = t->hi[from];
    }
    for (int g = 0; g < ND; g++) {
        w->lo[g] = _mm512_loadu_si512(lo + 8 * g);
        w->hi[g] = _mm512_loadu_si512(hi + 8 * g);
        w->m[g] = _mm512_set1_pd(-INFINITY);
        w->l[g] = _mm512_setzero_pd();
    }
}

/* sᵀ = (k_blk · qᵀ) · scale; k_blk: cols rows of d_k at stride ldk */
LA_AVX512 static void wide_scores_pd(la_engine_task *t, size_t j0, size_t cols)
{
    wide_pd *w = (wide_pd *)(void *)t->state;
    const size_t dk = t->p->d_k, ldk = t->ldk;
    const double *kb = (const double *)t->k + j0 * ldk;
    const __m512d scale = _mm512_set1_pd(t->p->scale);
    size_t c = 0;
    for (; c + MT_D <= cols; c += MT_D)
        scores_pd(w->qt, kb + c * ldk, dk, ldk, scale, w->st + c * QT_D, MT_D);
    for (; c < cols; c++)
        scores_pd(w->qt, kb + c * ldk, dk, ldk, scale, w->st + c * QT_D, 1);
}

/* wide_softmax_ps in float64, exp(s − m) in natural units. */
LA_AVX512 static void wide_softmax_pd(la_engine_task *t, size_t j0, size_t cols)
{
    wide_pd *w = (wide_pd *)(void *)t->state;
    /* the running statistics in locals: the stores into sᵀ below may not alias them */
    double *const st = w->st;
    __m512i lo[ND], hi[ND];
    __m512d u[ND];
    for (int g = 0; g < ND; g++)
        lo[g] = w->lo[g], hi[g] = w->hi[g];
    const size_t dv = t->p->d_v;
    const __m512d neg_inf = _mm512_set1_pd(-INFINITY);
    const int masked = j0 < w->lo_max || j0 + cols > w->hi_min;
    __m512d bm[ND];
    for (int g = 0; g < ND; g++)
        bm[g] = neg_inf;
    for (size_t j = 0; j < cols; j++) {
        const __m512i jj = _mm512_set1_epi64((int64_t)(j0 + j));
        for (int g = 0; g < ND; g++) {
            double *sj = st + j * QT_D + 8 * g;
            __m512d sv = _mm512_load_pd(sj);
            if (masked) {
                const __mmask8 seen =
                    _mm512_cmpgt_epi64_mask(hi[g], jj) & _mm512_cmpge_epi64_mask(jj, lo[g]);
                sv = _mm512_mask_mov_pd(neg_inf, seen, sv);
                _mm512_store_pd(sj, sv);
            }
            bm[g] = _mm512_max_pd(bm[g], sv);
        }
    }

    unsigned grew = 0;
    for (int g = 0; g < ND; g++) {
        const __m512d n = _mm512_max_pd(w->m[g], bm[g]);
        grew |= _mm512_cmp_pd_mask(n, w->m[g], _CMP_GT_OQ);
        u[g] =
            _mm512_mask_mov_pd(_mm512_setzero_pd(), _mm512_cmp_pd_mask(n, neg_inf, _CMP_NEQ_OQ), n);
        bm[g] = n;
    }
    if (grew) {
        for (int g = 0; g < ND; g++) {
            const __m512d a = la_exp_pd(_mm512_sub_pd(w->m[g], u[g]));
            w->l[g] = _mm512_mul_pd(w->l[g], a);
            if (j0 > t->key_lo)
                for (size_t c = 0; c < dv; c++) {
                    double *o = w->ot + c * QT_D + 8 * g;
                    _mm512_store_pd(o, _mm512_mul_pd(_mm512_load_pd(o), a));
                }
        }
    }
    for (int g = 0; g < ND; g++)
        w->m[g] = bm[g];

    for (int g = 0; g < ND; g++) {
        __m512d bs = _mm512_setzero_pd();
        for (size_t j = 0; j < cols; j++) {
            double *sj = st + j * QT_D + 8 * g;
            const __m512d e = la_exp_pd(_mm512_sub_pd(_mm512_load_pd(sj), u[g]));
            _mm512_store_pd(sj, e);
            bs = _mm512_add_pd(bs, e);
        }
        w->l[g] = _mm512_add_pd(w->l[g], bs);
    }
}

/* oᵀ += v_blkᵀ · pᵀ; v_blk: cols rows of d_v at stride ldv */
LA_AVX512 static void wide_values_pd(la_engine_task *t, size_t j0, size_t cols)
{
    wide_pd *w = (wide_pd *)(void *)t->state;
    const size_t dv = t->p->d_v, ldv = t->ldv;
    const double *vb = (const double *)t->v + j0 * ldv;
    size_t c = 0;
    for (; c + MT_D <= dv; c += MT_D)
        values_pd(w->st, cols, vb + c, ldv, w->ot + c * QT_D, MT_D);
    for (; c < dv; c++)
        values_pd(w->st, cols, vb + c, ldv, w->ot + c * QT_D, 1);
}

/* out = oᵀ / l (out: rows of d_v at stride ldo; zero where no key was seen); lse = m + log
 * l, −inf where none was. */
LA_AVX512 static void wide_finish_pd(la_engine_task *t)
{
    wide_pd *w = (wide_pd *)(void *)t->state;
    const size_t dv = t->p->d_v, rows = t->rows, ldo = t->ldo;
    double inv[QT_D];
    for (int g = 0; g < ND; g++)
        _mm512_storeu_pd(inv + 8 * g, w->l[g]);
    for (size_t r = 0; r < rows; r++)
        inv[r] = inv[r] > 0 ? 1.0 / inv[r] : 0.0;
    for (size_t r = 0; r < rows; r++) {
        double *orow = (double *)t->out + (t->i0 + r) * ldo;
        for (size_t c = 0; c < dv; c++)
            orow[c] = w->ot[c * QT_D + r] * inv[r];
    }
    if (t->lse) {
        double mx[QT_D], sum[QT_D], *lse = t->lse;
        for (int g = 0; g < ND; g++) {
            _mm512_storeu_pd(mx + 8 * g, w->m[g]);
            _mm512_storeu_pd(sum + 8 * g, w->l[g]);
        }
        for (size_t r = 0; r < rows; r++)
            lse[r] = sum[r] > 0 ? mx[r] + log(sum[r]) : -INFINITY;
    }
}

const la_engine_tiles la_engine_avx512_wide_f64 = {wide_begin_pd, wide_scores_pd, wide_softmax_pd,
                                                   wide_values_pd, wide_finish_pd};

/* The narrow float64 tiles (LA_FUSED_SIMD_F64_NARROW_ROWS queries or fewer, 2 of 16 lanes
 * against 4 of 32 in float32): one query at a time, keys in the lanes, without the scan. */

/* x·y over n doubles, 8 lanes at a time (the tail masked), then summed across lanes. */
LA_AVX512 static inline double dot_pd(const double *x, const double *y, size_t n)
{
    __m512d acc = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        acc = _mm512_fmadd_pd(_mm512_loadu_pd(x + i), _mm512_loadu_pd(y + i), acc);
    if (i < n) {
        const __mmask8 m = first_lanes(n - i);
        acc =
            _mm512_fmadd_pd(_mm512_maskz_loadu_pd(m, x + i), _mm512_maskz_loadu_pd(m, y + i), acc);
    }
    return _mm512_reduce_add_pd(acc);
}

typedef struct {
    double m, l, block_max;
    double *st, *acc;
} narrow_pd;
_Static_assert(sizeof(narrow_pd) <= LA_ENGINE_STATE_BYTES, "the state fits");

LA_AVX512 static void narrow_begin_pd(la_engine_task *t)
{
    narrow_pd *w = (narrow_pd *)(void *)t->state;
    w->st = (double *)(void *)t->scratch + t->p->d_k * QT_D;
    w->acc = w->st + KB_D * QT_D;
    memset(w->acc, 0, t->p->d_v * sizeof *w->acc);
    w->m = -INFINITY;
    w->l = 0;
}

/* s_j = q·k_j · scale, and the block maximum; q: the row i0 (stride ldq), k: rows of d_k at
 * stride ldk */
LA_AVX512 static void narrow_scores_pd(la_engine_task *t, size_t j0, size_t cols)
{
    narrow_pd *w = (narrow_pd *)(void *)t->state;
    const size_t dk = t->p->d_k, ldk = t->ldk;
    const double *q = (const double *)t->q + t->i0 * t->ldq, *kh = t->k;
    const double scale = t->p->scale;
    double bm = -INFINITY;
    for (size_t j = 0; j < cols; j++) {
        w->st[j] = dot_pd(q, kh + (j0 + j) * ldk, dk) * scale;
        bm = w->st[j] > bm ? w->st[j] : bm;
    }
    w->block_max = bm;
}

/* online softmax: rescale when the maximum grew; p_j = exp(s_j − m), 8 at a time; the
 * block's sum, then added */
LA_AVX512 static void narrow_softmax_pd(la_engine_task *t, size_t j0, size_t cols)
{
    (void)j0;
    narrow_pd *w = (narrow_pd *)(void *)t->state;
    const size_t dv = t->p->d_v;
    if (w->block_max > w->m) {
        if (w->l > 0) {
            const double a = exp(w->m - w->block_max);
            w->l *= a;
            for (size_t c = 0; c < dv; c++)
                w->acc[c] *= a;
        }
        w->m = w->block_max;
    }
    double *st = w->st;
    const __m512d mv = _mm512_set1_pd(w->m);
    __m512d bs = _mm512_setzero_pd();
    size_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        const __m512d e = la_exp_pd(_mm512_sub_pd(_mm512_loadu_pd(st + j), mv));
        _mm512_storeu_pd(st + j, e);
        bs = _mm512_add_pd(bs, e);
    }
    if (j < cols) {
        const __mmask8 mk = first_lanes(cols - j);
        const __m512d e = la_exp_pd(_mm512_sub_pd(_mm512_maskz_loadu_pd(mk, st + j), mv));
        _mm512_mask_storeu_pd(st + j, mk, e);
        bs = _mm512_add_pd(bs, _mm512_maskz_mov_pd(mk, e));
    }
    w->l += _mm512_reduce_add_pd(bs);
}

/* acc += Σ_j p_j v_j, columns 8 at a time (the tail masked); the block's sum formed on its
 * own, then added; v: rows of d_v at stride ldv */
LA_AVX512 static void narrow_values_pd(la_engine_task *t, size_t j0, size_t cols)
{
    narrow_pd *w = (narrow_pd *)(void *)t->state;
    const size_t dv = t->p->d_v, ldv = t->ldv;
    const double *vh = t->v;
    for (size_t c = 0; c < dv; c += 8) {
        const __mmask8 mk = dv - c >= 8 ? 0xff : first_lanes(dv - c);
        __m512d sum = _mm512_setzero_pd();
        for (size_t jj = 0; jj < cols; jj++)
            sum = _mm512_fmadd_pd(_mm512_set1_pd(w->st[jj]),
                                  _mm512_maskz_loadu_pd(mk, vh + (j0 + jj) * ldv + c), sum);
        _mm512_mask_storeu_pd(w->acc + c, mk,
                              _mm512_add_pd(_mm512_maskz_loadu_pd(mk, w->acc + c), sum));
    }
}

/* out = acc / l (out: the row i0, stride ldo; zero when no key was seen); lse = m + log l */
LA_AVX512 static void narrow_finish_pd(la_engine_task *t)
{
    narrow_pd *w = (narrow_pd *)(void *)t->state;
    const size_t dv = t->p->d_v;
    double *o = (double *)t->out + t->i0 * t->ldo;
    const double inv = w->l > 0 ? 1.0 / w->l : 0.0;
    for (size_t c = 0; c < dv; c++)
        o[c] = w->acc[c] * inv;
    if (t->lse) *(double *)t->lse = w->l > 0 ? w->m + log(w->l) : -INFINITY;
}

const la_engine_tiles la_engine_avx512_narrow_f64 = {
    narrow_begin_pd, narrow_scores_pd, narrow_softmax_pd, narrow_values_pd, narrow_finish_pd};

#else /* not x86-64 with GCC or clang: la_fused_simd_usable() is false, never called */

const la_engine_tiles la_engine_avx512_wide_f32 = {0};
const la_engine_tiles la_engine_avx512_wide64_f32 = {0};
const la_engine_tiles la_engine_avx512_narrow_f32 = {0};
const la_engine_tiles la_engine_avx512_wide_f64 = {0};
const la_engine_tiles la_engine_avx512_narrow_f64 = {0};

size_t la_fused_simd_scratch_bytes(const la_problem *p, size_t q_block)
{
    (void)p, (void)q_block;
    return 0;
}
size_t la_fused_simd_scratch_bytes_f64(const la_problem *p)
{
    (void)p;
    return 0;
}
void la_fused_simd_exp2(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exp2f(x[i]);
}
void la_fused_simd_exp_f64(const double *x, double *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exp(x[i]);
}
bool la_fused_simd_usable(const la_problem *p)
{
    (void)p;
    return false;
}
size_t la_fused_simd_staging_bytes(const la_problem *p, bool lse)
{
    (void)p, (void)lse;
    return 0;
}
#endif

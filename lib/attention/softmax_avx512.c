/* softmax_avx512.c — fused softmax attention, float32, hand-blocked for AVX-512.
 *
 * Why not BLIS here: the fused kernel multiplies a 32-query block by one block of keys
 * at a time, products of k = d_k = 64. Through BLIS each such product costs a call
 * (about 1 µs), a repacking of the key block for every query block, and BLIS's
 * small-matrix path: the BLIS-based kernel (softmax_tmpl.h, still used for float64 and
 * on CPUs without AVX-512) reaches 0.45 of sgemm's rate here. This file computes the two
 * block products with its own register-blocked loops instead.
 *
 * The layout that makes it simple: the 32 queries of a task live in the vector lanes
 * (two registers of 16). Then
 *   scores:  sᵀ[j][r] = Σ_p qᵀ[p][r] · k[j][p]  — a column of qᵀ times a broadcast key
 *            element: k and v are read in place, row-major, never transposed or packed;
 *            only the task's 32 query rows are transposed once, into qᵀ (d_k × 32).
 *   softmax: every step is per query, so per lane: the running maximum, the rescaling
 *            and the row sums are vertical vector operations, with no horizontal
 *            reductions and no scalar loop over rows.
 *   values:  oᵀ[c][r] += Σ_j v[j][c] · pᵀ[j][r] — a broadcast value element times a
 *            row of pᵀ.
 * Both products are micro-tiles of 8 keys (or 8 value columns) × 32 queries: 16
 * accumulators, per step 2 vector loads + 8 broadcasts for 16 FMAs. The code is written
 * for NV = QT/16 vectors of queries; 64 queries (4 keys per tile, key blocks of 64) were
 * measured no faster at N = 4096 and slower at N = 32768 with one head (0.89-0.99 s
 * against 0.76-0.82 s), so QT = 32.
 *
 * exp is exp2 with log2(e) folded into the scale: scores are kept as
 * s₂ = q·k · scale · log2(e), and exp(s - m) = 2^(s₂ - m₂).
 *
 * Tasks of at most NARROW_ROWS queries (decoding's single query, the tail of N) would
 * leave most lanes empty; they run one query at a time with the keys in the lanes
 * instead (narrow_row, below). */
#include "core/internal.h"
#include "cpu/simd_avx512.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if LA_HAVE_AVX512_CODE

enum {
    QT = LA_FUSED_SIMD_Q_BLOCK, /* queries per task, in the lanes of NV vectors */
    NV = QT / 16,               /* vectors of 16 queries */
    KB = LA_FUSED_SIMD_K_BLOCK, /* keys per block: sᵀ is KB × QT floats */
    MT = 16 / NV,               /* keys (scores) or value columns (PV) per micro-tile */
};
_Static_assert(QT % 16 == 0 && 16 % NV == 0, "QT: 16, 32 or 64 queries");

#define LN2 0.69314718055994531f /* lse = log2-unit statistics · ln 2 */

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

/* Scores of `keys` keys (MT, or 1 for a block's tail) for the task's QT queries:
 *   st[t][r] = Σ_p qt[p][r] · k[t][p] · scale2, t < keys, r < QT;
 *   qt: (d_k, QT), k: `keys` rows of d_k at stride dk, st: (keys, QT).
 * MT·NV = 16 accumulators; per step NV vector loads and MT broadcasts for 16 FMAs. */
LA_AVX512 __attribute__((always_inline)) static inline void
scores(const float *qt, const float *k, size_t dk, __m512 scale2, float *st, int keys)
{
    __m512 acc[MT][NV];
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++)
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            acc[t][g] = _mm512_setzero_ps();
    for (size_t p = 0; p < dk; p++) {
        __m512 q[NV];
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            q[g] = _mm512_load_ps(qt + p * QT + 16 * g);
#pragma GCC unroll 16
        for (int t = 0; t < MT; t++) {
            if (t >= keys) break;
            const __m512 kb = _mm512_set1_ps(k[(size_t)t * dk + p]);
#pragma GCC unroll 4
            for (int g = 0; g < NV; g++)
                acc[t][g] = _mm512_fmadd_ps(q[g], kb, acc[t][g]);
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++) {
        if (t >= keys) break;
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            _mm512_store_ps(st + t * QT + 16 * g, _mm512_mul_ps(acc[t][g], scale2));
    }
}

/* Values of `cols_v` columns (MT, or 1 for the tail of d_v) for the task's QT queries:
 *   ot[t][r] += Σ_j v[j][t] · pt[j][r], t < cols_v, j < keys,
 * the block's sum formed on its own and then added, so rounding grows with the block
 * (at most KB terms) and the number of blocks, not with all M keys in one chain;
 *   v: `keys` rows at stride dv (already offset to the first column), pt: (keys, QT),
 *   ot: (cols_v, QT). */
LA_AVX512 __attribute__((always_inline)) static inline void
values(const float *pt, size_t keys, const float *v, size_t dv, float *ot, int cols_v)
{
    __m512 acc[MT][NV];
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++)
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            acc[t][g] = _mm512_setzero_ps();
    for (size_t j = 0; j < keys; j++) {
        __m512 pj[NV];
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++)
            pj[g] = _mm512_load_ps(pt + j * QT + 16 * g);
        const float *vj = v + j * dv;
#pragma GCC unroll 16
        for (int t = 0; t < MT; t++) {
            if (t >= cols_v) break;
            const __m512 vb = _mm512_set1_ps(vj[t]);
#pragma GCC unroll 4
            for (int g = 0; g < NV; g++)
                acc[t][g] = _mm512_fmadd_ps(pj[g], vb, acc[t][g]);
        }
    }
#pragma GCC unroll 16
    for (int t = 0; t < MT; t++) {
        if (t >= cols_v) break;
#pragma GCC unroll 4
        for (int g = 0; g < NV; g++) {
            float *o = ot + t * QT + 16 * g;
            _mm512_store_ps(o, _mm512_add_ps(_mm512_load_ps(o), acc[t][g]));
        }
    }
}

/* ---------------------------------------------------------------- narrow tasks */

/* A task of a few queries (decode: one query against the whole cache) would use 1 of
 * the 32 lanes above. Each such query runs alone instead, keys in the lanes:
 *   s_j = q·k_j · scale2 for a block of keys (one vector dot product per key),
 *   online softmax over the block (horizontal maximum and sum),
 *   o += Σ_j p_j v_j (a broadcast weight times each value row).
 * Used for tasks of at most NARROW_ROWS queries; each query costs about what the lane
 * layout costs for 32, so beyond a few queries the lanes win. */
enum { NARROW_ROWS = LA_FUSED_SIMD_NARROW_ROWS };

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

/* |x| as bits (the sign cleared): its unsigned maximum is the largest magnitude, +inf
 * or NaN above every finite one (as la_max_abs_f32 reads it). */
LA_AVX512 static inline __m512i abs_bits(__m512 x)
{
    return _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff));
}

/* One query row i of one head: out_i = Σ_j softmax(s)_j v_j over its visible keys.
 *   q: (d_k), kh: (M, d_k), vh: (M, d_v), o: (d_v) row-major; st: KB floats of
 *   scratch, acc: d_v floats of scratch (64-byte aligned); lse: NULL, or where the row's
 *   log Σ_j exp(s_j) goes (-inf when it sees no key); scan: NULL, or two vectors of
 *   bits that take the largest |k| and |v| of the keys read (the range check of
 *   decoding, on the loads the kernel makes anyway).
 * Keys 16 at a time: sixteen dot products side by side (16 independent FMA chains), one
 * fold16 for their sums; then o += Σ_j p_j v_j with one FMA chain per 16 value columns. */
LA_AVX512 __attribute__((always_inline)) static inline void
narrow_row_body(const la_problem *p, size_t visible, const float *q, const float *kh,
                const float *vh, float *o, float *st, float *acc, float *lse, __m512i *scan)
{
    const size_t dk = p->d_k, dv = p->d_v;
    const __m512 scale2 = _mm512_set1_ps((float)(p->scale * 1.4426950408889634));
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    __m512i kmax = _mm512_setzero_si512(), vmax = _mm512_setzero_si512();
    memset(acc, 0, dv * sizeof *acc);
    float m = -INFINITY, l = 0;
    for (size_t j0 = 0; j0 < visible; j0 += KB) {
        const size_t cols = visible - j0 < KB ? visible - j0 : KB;
        /* s_j = q·k_j · scale2, 16 keys at a time, and the block maximum */
        __m512 bmv = neg_inf;
        for (size_t j = 0; j < cols; j += 16) {
            const int nk = cols - j < 16 ? (int)(cols - j) : 16;
            const float *kj = kh + (j0 + j) * dk;
            __m512 a[16];
#pragma GCC unroll 16
            for (int t = 0; t < 16; t++)
                a[t] = _mm512_setzero_ps();
            for (size_t c = 0; c < dk; c += 16) {
                const __mmask16 mk = dk - c >= 16 ? 0xffff : (__mmask16)((1u << (dk - c)) - 1);
                const __m512 qc = _mm512_maskz_loadu_ps(mk, q + c);
#pragma GCC unroll 16
                for (int t = 0; t < 16; t++) {
                    if (t >= nk) break;
                    const __m512 kv = _mm512_maskz_loadu_ps(mk, kj + (size_t)t * dk + c);
                    if (scan) kmax = _mm512_max_epu32(kmax, abs_bits(kv));
                    a[SLOT[t]] = _mm512_fmadd_ps(qc, kv, a[SLOT[t]]);
                }
            }
            const __mmask16 live = nk == 16 ? 0xffff : (__mmask16)((1u << nk) - 1);
            const __m512 sv = _mm512_mul_ps(fold16(a), scale2);
            _mm512_mask_storeu_ps(st + j, live, sv);
            bmv = _mm512_mask_max_ps(bmv, live, bmv, sv);
        }
        const float bm = _mm512_reduce_max_ps(bmv);
        /* online softmax: rescale what was accumulated when the maximum grew */
        if (bm > m) {
            if (l > 0) {
                const float a = exp2f(m - bm);
                l *= a;
                for (size_t c = 0; c < dv; c++)
                    acc[c] *= a;
            }
            m = bm;
        }
        /* p_j = 2^(s_j - m), 16 at a time; the block's sum, then added */
        const __m512 mv = _mm512_set1_ps(m);
        __m512 bs = _mm512_setzero_ps();
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
        l += _mm512_reduce_add_ps(bs);
        /* acc += Σ_j p_j v_j, up to 64 columns at a time (the tail masked): the keys in
         * order, one FMA chain per 16 columns; the block's sum formed on its own, then
         * added */
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
            for (size_t jj = 0; jj < cols; jj++) {
                const __m512 pj = _mm512_set1_ps(st[jj]);
                const float *vj = vh + (j0 + jj) * dv + c0;
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
                float *ac = acc + c0 + 16 * g;
                _mm512_mask_storeu_ps(ac, mk[g],
                                      _mm512_add_ps(_mm512_maskz_loadu_ps(mk[g], ac), sum[g]));
            }
        }
    }
    /* out = acc / l; a row that saw no key stays zero */
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    for (size_t c = 0; c < dv; c++)
        o[c] = acc[c] * inv;
    /* lse = (m + log2 l) · ln 2: m and l are in log2 units */
    if (lse) *lse = l > 0 ? (m + log2f(l)) * LN2 : -INFINITY;
    if (scan) {
        scan[0] = _mm512_max_epu32(scan[0], kmax);
        scan[1] = _mm512_max_epu32(scan[1], vmax);
    }
}

/* The two instances: without the scan, and with it. */
LA_AVX512 static void narrow_row(const la_problem *p, size_t visible, const float *q,
                                 const float *kh, const float *vh, float *o, float *st, float *acc,
                                 float *lse)
{
    narrow_row_body(p, visible, q, kh, vh, o, st, acc, lse, NULL);
}

LA_AVX512 static void narrow_row_scan(const la_problem *p, size_t visible, const float *q,
                                      const float *kh, const float *vh, float *o, float *st,
                                      float *acc, float *lse, __m512i scan[2])
{
    narrow_row_body(p, visible, q, kh, vh, o, st, acc, lse, scan);
}

/* Scratch of one thread, in floats, every part 64-byte aligned (QT floats = 128 bytes):
 * qᵀ (d_k × QT), then sᵀ/pᵀ (KB × QT), then oᵀ (d_v × QT). */
size_t la_fused_simd_scratch_bytes(const la_problem *p)
{
    return (p->d_k + KB + p->d_v) * QT * sizeof(float);
}

/* Fused softmax attention for the query rows i0 .. i0+rows-1 (rows <= QT) of one head
 * of batch entry b:
 *   qh: (N, d_k), kh: (M, d_k), vh: (M, d_v), oh: (N, d_v), row-major;
 *   scratch: la_fused_simd_scratch_bytes(p) bytes, 64-byte aligned;
 *   lse: NULL, or (rows): each row's log Σ_j exp(s_ij) (-inf when it sees no key).
 * Lanes past `rows` compute on zero queries over the same keys as the last row and
 * are never stored. */
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

LA_AVX512 void la_fused_simd_block(const la_problem *p, size_t b, const float *qh, const float *kh,
                                   const float *vh, float *oh, size_t i0, size_t rows,
                                   float *scratch, float *lse, uint32_t *kv_bits)
{
    const size_t dk = p->d_k, dv = p->d_v, M = p->n_keys;
    float *qt = scratch, *st = qt + dk * QT, *ot = st + KB * QT;
    if (rows <= NARROW_ROWS) { /* a few queries: one at a time, keys in the lanes */
        size_t scanned = 0;    /* keys whose k and v the first row's pass took maxima of */
        __m512i scan[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        for (size_t r = 0; r < rows; r++) {
            const size_t visible = la_visible_keys(p, b, i0 + r);
            if (kv_bits && r == 0) {
                narrow_row_scan(p, visible, qh + i0 * dk, kh, vh, oh + i0 * dv, st, ot, lse, scan);
                scanned = visible;
            } else {
                narrow_row(p, visible, qh + (i0 + r) * dk, kh, vh, oh + (i0 + r) * dv, st, ot,
                           lse ? lse + r : NULL);
            }
        }
        if (kv_bits) { /* and the keys that pass did not read */
            const uint32_t kb = _mm512_reduce_max_epu32(scan[0]),
                           vb = _mm512_reduce_max_epu32(scan[1]);
            if (kb > kv_bits[0]) kv_bits[0] = kb;
            if (vb > kv_bits[1]) kv_bits[1] = vb;
            max_abs_bits(kh + scanned * dk, (M - scanned) * dk, &kv_bits[0]);
            max_abs_bits(vh + scanned * dv, (M - scanned) * dv, &kv_bits[1]);
        }
        return;
    }
    if (kv_bits) { /* wider tasks read K and V once per 32 queries: a plain scan */
        max_abs_bits(kh, M * dk, &kv_bits[0]);
        max_abs_bits(vh, M * dv, &kv_bits[1]);
    }

    /* qᵀ[p][r] = q[i0 + r][p]; zero lanes past the last row */
    for (size_t c = 0; c < dk; c++)
        for (size_t r = 0; r < QT; r++)
            qt[c * QT + r] = r < rows ? qh[(i0 + r) * dk + c] : 0.0f;
    memset(ot, 0, dv * QT * sizeof *ot);

    /* keys visible to each lane's query; lanes past the last row copy the last row */
    int32_t vis_lanes[QT];
    size_t vis_min = SIZE_MAX;
    for (size_t r = 0; r < QT; r++) {
        const size_t vis = la_visible_keys(p, b, i0 + (r < rows ? r : rows - 1));
        vis_lanes[r] = (int32_t)vis; /* M <= INT32_MAX: la_fused_simd_usable() */
        if (vis < vis_min) vis_min = vis;
    }
    const size_t key_end = la_visible_keys(p, b, i0 + rows - 1); /* the most keys any row sees */

    const __m512 scale2 = _mm512_set1_ps((float)(p->scale * 1.4426950408889634));
    const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
    __m512i vis[NV];     /* per lane: keys visible */
    __m512 m[NV], l[NV]; /* per lane: running maximum (log2 units), running sum */
    for (int g = 0; g < NV; g++) {
        vis[g] = _mm512_loadu_si512(vis_lanes + 16 * g);
        m[g] = neg_inf;
        l[g] = _mm512_setzero_ps();
    }

    for (size_t j0 = 0; j0 < key_end; j0 += KB) {
        const size_t cols = key_end - j0 < KB ? key_end - j0 : KB;
        const float *kb = kh + j0 * dk;

        /* sᵀ = (k_blk · qᵀ) · scale2 */
        size_t t = 0;
        for (; t + MT <= cols; t += MT)
            scores(qt, kb + t * dk, dk, scale2, st + t * QT, MT);
        for (; t < cols; t++)
            scores(qt, kb + t * dk, dk, scale2, st + t * QT, 1);

        /* hidden keys -> -inf (only in blocks that reach past some lane's frontier);
         * the block maximum per lane */
        const int masked = j0 + cols > vis_min;
        __m512 bm[NV];
        for (int g = 0; g < NV; g++)
            bm[g] = neg_inf;
        for (size_t j = 0; j < cols; j++) {
            const __m512i jj = _mm512_set1_epi32((int32_t)(j0 + j));
            for (int g = 0; g < NV; g++) {
                float *sj = st + j * QT + 16 * g;
                __m512 sv = _mm512_load_ps(sj);
                if (masked) {
                    const __mmask16 seen = _mm512_cmpgt_epi32_mask(vis[g], jj);
                    sv = _mm512_mask_mov_ps(neg_inf, seen, sv);
                    _mm512_store_ps(sj, sv);
                }
                bm[g] = _mm512_max_ps(bm[g], sv);
            }
        }

        /* online softmax: new maxima; where one grew, rescale the sum and the
         * accumulator by 2^(m_old - m_new). A lane that has seen no visible key keeps
         * -inf and shifts by 0 instead, so it never computes -inf - -inf. */
        __m512 u[NV];
        __mmask16 grew = 0;
        for (int g = 0; g < NV; g++) {
            const __m512 n = _mm512_max_ps(m[g], bm[g]);
            grew |= _mm512_cmp_ps_mask(n, m[g], _CMP_GT_OQ);
            u[g] = _mm512_mask_mov_ps(_mm512_setzero_ps(),
                                      _mm512_cmp_ps_mask(n, neg_inf, _CMP_NEQ_OQ), n);
            bm[g] = n; /* the new maximum */
        }
        if (grew) {
            for (int g = 0; g < NV; g++) {
                const __m512 a = la_exp2_ps(_mm512_sub_ps(m[g], u[g]));
                l[g] = _mm512_mul_ps(l[g], a);
                if (j0 > 0)
                    for (size_t c = 0; c < dv; c++) {
                        float *o = ot + c * QT + 16 * g;
                        _mm512_store_ps(o, _mm512_mul_ps(_mm512_load_ps(o), a));
                    }
            }
        }
        for (int g = 0; g < NV; g++)
            m[g] = bm[g];

        /* pᵀ = 2^(sᵀ - m), in place, and the row sums: the block's own sum, then added
         * (as in values(), so the rounding does not grow with M) */
        for (int g = 0; g < NV; g++) {
            __m512 bs = _mm512_setzero_ps();
            for (size_t j = 0; j < cols; j++) {
                float *sj = st + j * QT + 16 * g;
                const __m512 e = la_exp2_ps(_mm512_sub_ps(_mm512_load_ps(sj), u[g]));
                _mm512_store_ps(sj, e);
                bs = _mm512_add_ps(bs, e);
            }
            l[g] = _mm512_add_ps(l[g], bs);
        }

        /* oᵀ += v_blkᵀ · pᵀ */
        const float *vb = vh + j0 * dv;
        size_t c = 0;
        for (; c + MT <= dv; c += MT)
            values(st, cols, vb + c, dv, ot + c * QT, MT);
        for (; c < dv; c++)
            values(st, cols, vb + c, dv, ot + c * QT, 1);
    }

    /* out[i0 + r][c] = oᵀ[c][r] / l[r]; a row that saw no key stays zero */
    float inv[QT];
    for (int g = 0; g < NV; g++)
        _mm512_storeu_ps(inv + 16 * g, l[g]);
    for (size_t r = 0; r < rows; r++)
        inv[r] = inv[r] > 0 ? 1.0f / inv[r] : 0.0f;
    for (size_t r = 0; r < rows; r++) {
        float *orow = oh + (i0 + r) * dv;
        for (size_t c = 0; c < dv; c++)
            orow[c] = ot[c * QT + r] * inv[r];
    }
    /* lse = (m + log2 l) · ln 2 (m and l are in log2 units); -inf where no key was seen */
    if (lse) {
        float mx[QT], sum[QT];
        for (int g = 0; g < NV; g++) {
            _mm512_storeu_ps(mx + 16 * g, m[g]);
            _mm512_storeu_ps(sum + 16 * g, l[g]);
        }
        for (size_t r = 0; r < rows; r++)
            lse[r] = sum[r] > 0 ? (mx[r] + log2f(sum[r])) * LN2 : -INFINITY;
    }
}

bool la_fused_simd_usable(const la_problem *p)
{
    /* general masks (p->mask, p->key_mask): the portable kernel, which tests each pair */
    return la_avx512_usable() && p->n_keys <= INT32_MAX && !la_has_masks(p);
}

size_t la_fused_simd_staging_bytes(const la_problem *p, bool lse)
{
    if (!la_fused_simd_usable(p) || p->n_queries > NARROW_ROWS) return 0;
    const size_t rows = p->batch * p->heads * p->n_queries; /* la_problem_check: no overflow */
    return (rows * p->d_v + (lse ? rows : 0)) * sizeof(float);
}

#else /* not x86-64 with GCC or clang: the BLIS-based kernel only */

size_t la_fused_simd_scratch_bytes(const la_problem *p)
{
    (void)p;
    return 0;
}
void la_fused_simd_block(const la_problem *p, size_t b, const float *qh, const float *kh,
                         const float *vh, float *oh, size_t i0, size_t rows, float *scratch,
                         float *lse, uint32_t *kv_bits)
{
    (void)p, (void)b, (void)qh, (void)kh, (void)vh, (void)oh, (void)i0, (void)rows, (void)scratch;
    (void)lse, (void)kv_bits;
}
void la_fused_simd_exp2(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = exp2f(x[i]);
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

/* transpose.c — dst = srcᵀ for the small blocks of the linear kernels: the chunked causal
 * kernel keeps φ(K_c) transposed (a d_k × C block per chunk) so that the product
 * A = φ(Q_c)·φKᵀ reads it row by row. On AVX-512 whole 16×16 float blocks go through
 * the registers (64 shuffles per 256 elements, against a scalar load and store per
 * element, which were about 3% of the chunked kernel's time); the edges and float64 are
 * plain loops. A copy: the bits are the same on either path. */
#include "core/internal.h"
#include "cpu/simd_avx512.h"

#if LA_HAVE_AVX512_CODE
/* One 16×16 block: d[c·ldd + r] = s[r·lds + c] for r, c < 16. Three rounds of shuffles:
 * pairs of rows interleaved (unpack ps), then pairs of pairs (unpack pd): u[4q + j]
 * holds in its 128-bit lane l the rows 4q .. 4q+3 of column 4l + j; then the 128-bit
 * lanes are gathered in two shuffle_f32x4 rounds, leaving column c in one register. */
LA_AVX512 static void block_16x16(const float *s, size_t lds, float *d, size_t ldd)
{
    __m512 r[16], t[16], u[16], v[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(s + (size_t)i * lds);
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int q = 0; q < 4; q++) { /* rows 4q .. 4q+3 */
        const __m512d a = _mm512_castps_pd(t[4 * q]), b = _mm512_castps_pd(t[4 * q + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * q + 2]), e = _mm512_castps_pd(t[4 * q + 3]);
        u[4 * q] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));     /* column 4l     */
        u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c)); /* column 4l + 1 */
        u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e)); /* column 4l + 2 */
        u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e)); /* column 4l + 3 */
    }
    /* v[j] (j < 4): lanes (u[j].0, u[j].2, u[4+j].0, u[4+j].2): rows 0..7 of columns j, 8+j;
     * v[4+j]: the odd lanes, columns 4+j and 12+j; v[8..15] the same for rows 8..15 */
    for (int h = 0; h < 2; h++)
        for (int j = 0; j < 4; j++) {
            const __m512 lo = u[8 * h + j], hi = u[8 * h + 4 + j];
            v[8 * h + j] = _mm512_shuffle_f32x4(lo, hi, 0x88);
            v[8 * h + 4 + j] = _mm512_shuffle_f32x4(lo, hi, 0xdd);
        }
    /* column j and 8 + j from v[j], v[8 + j]; column 4 + j and 12 + j from v[4+j], v[12+j] */
    for (int j = 0; j < 8; j++) {
        _mm512_storeu_ps(d + (size_t)j * ldd, _mm512_shuffle_f32x4(v[j], v[8 + j], 0x88));
        _mm512_storeu_ps(d + (size_t)(j + 8) * ldd, _mm512_shuffle_f32x4(v[j], v[8 + j], 0xdd));
    }
}
#endif

void la_transpose_f32(size_t rows, size_t cols, const float *src, size_t lds, float *dst,
                      size_t ldd)
{
    size_t r0 = 0, c0 = 0;
#if LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) {
        for (r0 = 0; r0 + 16 <= rows; r0 += 16)
            for (c0 = 0; c0 + 16 <= cols; c0 += 16)
                block_16x16(src + r0 * lds + c0, lds, dst + c0 * ldd + r0, ldd);
        /* what the whole blocks left: the last cols mod 16 columns of those rows */
        for (size_t r = 0; r < r0; r++)
            for (size_t c = cols - cols % 16; c < cols; c++)
                dst[c * ldd + r] = src[r * lds + c];
    }
#endif
    (void)c0;
    for (size_t r = r0; r < rows; r++) /* the last rows mod 16 (every row without AVX-512) */
        for (size_t c = 0; c < cols; c++)
            dst[c * ldd + r] = src[r * lds + c];
}

void la_transpose_f64(size_t rows, size_t cols, const double *src, size_t lds, double *dst,
                      size_t ldd)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            dst[c * ldd + r] = src[r * lds + c];
}

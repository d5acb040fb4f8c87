/* gemm_small.c — float32 and float64 products of the small, oddly shaped blocks inside
 * the linear kernels, on AVX-512 register tiles; everything else goes to BLIS (gemm.c).
 *
 * Why: the linear kernels multiply blocks of 32 to 256 rows with k = d_k = 64 or a key
 * block, thousands of times per call. Through BLIS each product pays a call, a packing
 * of both operands (its reference packing routines for strided operands, about 15% of
 * linear attention's time here) and its edge handling for odd column counts.
 * These products are small enough to need no packing: A is read in place through its
 * strides (one broadcast element at a time), B's rows are read as vectors. */
#include "core/internal.h"
#include "cpu/simd_avx512.h"

#if LA_HAVE_AVX512_CODE

enum { TILE_ROWS = 8 }; /* a tile: 8 rows × 32 columns (16 accumulators) or × 16 (8) */

/* C[0..8)[0..16·vecs) (+)= A[0..8)[0..k) · B[0..k)[0..16·vecs), vecs = 1 or 2 (a
 * constant at every call, so each width is its own loop), the columns masked by m0, m1
 * for a partial last tile (full: plain loads, which are faster than masked ones);
 *   A(i, p) = a[i·rsa + p·csa], B(p, c) = b[p·ldb + c], C(i, c) = c[i·ldc + c];
 *   accumulate: C += A·B, else C = A·B.
 * The 16-column tile is for products at most 16 wide (the causal kernel's A = φ(Q_c)·φKᵀ
 * for 16-token chunks and its triangle): the 32-column tile would issue twice its FMAs,
 * half of them on masked-off lanes. */
LA_AVX512 __attribute__((always_inline)) static inline void
tile_8xv(size_t k, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t ldb,
         float *c, ptrdiff_t ldc, __mmask16 m0, __mmask16 m1, bool accumulate, bool full, int vecs)
{
    __m512 acc[TILE_ROWS][2];
#pragma GCC unroll 8
    for (int i = 0; i < TILE_ROWS; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (size_t p = 0; p < k; p++) {
        const float *bp = b + (ptrdiff_t)p * ldb, *ap = a + (ptrdiff_t)p * csa;
        /* full tiles load plainly: masked loads in this loop cost about 10% here */
        const __m512 b0 = full ? _mm512_loadu_ps(bp) : _mm512_maskz_loadu_ps(m0, bp);
        const __m512 b1 = vecs == 1 ? _mm512_setzero_ps()
                          : full    ? _mm512_loadu_ps(bp + 16)
                                    : _mm512_maskz_loadu_ps(m1, bp + 16);
#pragma GCC unroll 8
        for (int i = 0; i < TILE_ROWS; i++) {
            const __m512 ai = _mm512_set1_ps(ap[i * rsa]);
            acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
            if (vecs == 2) acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < TILE_ROWS; i++) {
        if (accumulate) {
            acc[i][0] = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, c + i * ldc), acc[i][0]);
            if (vecs == 2)
                acc[i][1] = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, c + i * ldc + 16), acc[i][1]);
        }
        _mm512_mask_storeu_ps(c + i * ldc, m0, acc[i][0]);
        if (vecs == 2) _mm512_mask_storeu_ps(c + i * ldc + 16, m1, acc[i][1]);
    }
}

/* The same for one row (the rows past the last whole tile). */
LA_AVX512 static inline void tile_1x32(size_t k, const float *a, ptrdiff_t csa, const float *b,
                                       ptrdiff_t ldb, float *c, __mmask16 m0, __mmask16 m1,
                                       bool accumulate)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (size_t p = 0; p < k; p++) {
        const float *bp = b + (ptrdiff_t)p * ldb;
        const __m512 ai = _mm512_set1_ps(a[(ptrdiff_t)p * csa]);
        a0 = _mm512_fmadd_ps(ai, _mm512_maskz_loadu_ps(m0, bp), a0);
        a1 = _mm512_fmadd_ps(ai, _mm512_maskz_loadu_ps(m1, bp + 16), a1);
    }
    if (accumulate) {
        a0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, c), a0);
        a1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, c + 16), a1);
    }
    _mm512_mask_storeu_ps(c, m0, a0);
    _mm512_mask_storeu_ps(c + 16, m1, a1);
}

/* C (m×n, row-major, ldc) = A (m×k, strides rsa, csa) · B (k×n, row-major, ldb), or
 * C += A·B when accumulate. Each element of A·B is one FMA chain over p = 0 .. k-1 in
 * order, added to C at the end (as BLIS does): the result does not depend on the tiling
 * or the thread count, and a sum accumulated block by block (S += φ(K_blk)ᵀV_blk) rounds
 * like a sum of block sums, not like one chain over every key. */
LA_AVX512 static void gemm_small(size_t m, size_t n, size_t k, const float *a, ptrdiff_t rsa,
                                 ptrdiff_t csa, const float *b, ptrdiff_t ldb, float *c,
                                 ptrdiff_t ldc, bool accumulate)
{
    for (size_t j0 = 0; j0 < n; j0 += 32) {
        const size_t cols = n - j0 < 32 ? n - j0 : 32;
        const __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
        const __mmask16 m1 = cols <= 16   ? 0
                             : cols == 32 ? 0xffff
                                          : (__mmask16)((1u << (cols - 16)) - 1);
        size_t i = 0;
        for (; i + TILE_ROWS <= m; i += TILE_ROWS) {
            const float *ai = a + (ptrdiff_t)i * rsa;
            float *ci = c + (ptrdiff_t)i * ldc + j0;
            if (cols == 32)
                tile_8xv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, true, 2);
            else if (cols == 16)
                tile_8xv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, true, 1);
            else if (cols < 16)
                tile_8xv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, false, 1);
            else
                tile_8xv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, false, 2);
        }
        for (; i < m; i++)
            tile_1x32(k, a + (ptrdiff_t)i * rsa, csa, b + j0, ldb, c + (ptrdiff_t)i * ldc + j0, m0,
                      m1, accumulate);
    }
}

/* ---------------------------------------------------------------- float64 */

/* The same tiles with 8 double lanes: 8 rows × 16 columns, 16 accumulators, per step 2
 * vector loads of B and 8 broadcasts of A for 16 FMAs. */
enum { TILE_COLS_F64 = 16 };

/* C[0..8)[0..16) (+)= A[0..8)[0..k) · B[0..k)[0..16), as tile_8xv with vecs = 2. */
LA_AVX512 __attribute__((always_inline)) static inline void
tile_8x16_f64(size_t k, const double *a, ptrdiff_t rsa, ptrdiff_t csa, const double *b,
              ptrdiff_t ldb, double *c, ptrdiff_t ldc, __mmask8 m0, __mmask8 m1, bool accumulate,
              bool full)
{
    __m512d acc[TILE_ROWS][2];
#pragma GCC unroll 8
    for (int i = 0; i < TILE_ROWS; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_pd();
    for (size_t p = 0; p < k; p++) {
        const double *bp = b + (ptrdiff_t)p * ldb, *ap = a + (ptrdiff_t)p * csa;
        const __m512d b0 = full ? _mm512_loadu_pd(bp) : _mm512_maskz_loadu_pd(m0, bp);
        const __m512d b1 = full ? _mm512_loadu_pd(bp + 8) : _mm512_maskz_loadu_pd(m1, bp + 8);
#pragma GCC unroll 8
        for (int i = 0; i < TILE_ROWS; i++) {
            const __m512d ai = _mm512_set1_pd(ap[i * rsa]);
            acc[i][0] = _mm512_fmadd_pd(ai, b0, acc[i][0]);
            acc[i][1] = _mm512_fmadd_pd(ai, b1, acc[i][1]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < TILE_ROWS; i++) {
        if (accumulate) {
            acc[i][0] = _mm512_add_pd(_mm512_maskz_loadu_pd(m0, c + i * ldc), acc[i][0]);
            acc[i][1] = _mm512_add_pd(_mm512_maskz_loadu_pd(m1, c + i * ldc + 8), acc[i][1]);
        }
        _mm512_mask_storeu_pd(c + i * ldc, m0, acc[i][0]);
        _mm512_mask_storeu_pd(c + i * ldc + 8, m1, acc[i][1]);
    }
}

/* The same for one row (the rows past the last whole tile). */
LA_AVX512 static inline void tile_1x16_f64(size_t k, const double *a, ptrdiff_t csa,
                                           const double *b, ptrdiff_t ldb, double *c, __mmask8 m0,
                                           __mmask8 m1, bool accumulate)
{
    __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
    for (size_t p = 0; p < k; p++) {
        const double *bp = b + (ptrdiff_t)p * ldb;
        const __m512d ai = _mm512_set1_pd(a[(ptrdiff_t)p * csa]);
        a0 = _mm512_fmadd_pd(ai, _mm512_maskz_loadu_pd(m0, bp), a0);
        a1 = _mm512_fmadd_pd(ai, _mm512_maskz_loadu_pd(m1, bp + 8), a1);
    }
    if (accumulate) {
        a0 = _mm512_add_pd(_mm512_maskz_loadu_pd(m0, c), a0);
        a1 = _mm512_add_pd(_mm512_maskz_loadu_pd(m1, c + 8), a1);
    }
    _mm512_mask_storeu_pd(c, m0, a0);
    _mm512_mask_storeu_pd(c + 8, m1, a1);
}

/* gemm_small in float64: the same contract, 16-column tiles. */
LA_AVX512 static void gemm_small_f64(size_t m, size_t n, size_t k, const double *a, ptrdiff_t rsa,
                                     ptrdiff_t csa, const double *b, ptrdiff_t ldb, double *c,
                                     ptrdiff_t ldc, bool accumulate)
{
    for (size_t j0 = 0; j0 < n; j0 += TILE_COLS_F64) {
        const size_t cols = n - j0 < TILE_COLS_F64 ? n - j0 : TILE_COLS_F64;
        const __mmask8 m0 = cols >= 8 ? 0xff : (__mmask8)((1u << cols) - 1);
        const __mmask8 m1 = cols <= 8 ? 0 : cols == 16 ? 0xff : (__mmask8)((1u << (cols - 8)) - 1);
        size_t i = 0;
        for (; i + TILE_ROWS <= m; i += TILE_ROWS) {
            const double *ai = a + (ptrdiff_t)i * rsa;
            double *ci = c + (ptrdiff_t)i * ldc + j0;
            if (cols == TILE_COLS_F64)
                tile_8x16_f64(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, true);
            else
                tile_8x16_f64(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, false);
        }
        for (; i < m; i++)
            tile_1x16_f64(k, a + (ptrdiff_t)i * rsa, csa, b + j0, ldb, c + (ptrdiff_t)i * ldc + j0,
                          m0, m1, accumulate);
    }
}
#endif

void la_gemm_small_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t rsa,
                       ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb, float beta,
                       float *c, ptrdiff_t rsc, ptrdiff_t csc)
{
#if LA_HAVE_AVX512_CODE
    if (alpha == 1 && (beta == 0 || beta == 1) && csb == 1 && csc == 1 && la_avx512_usable()) {
        if (m > 0 && n > 0) gemm_small(m, n, k, a, rsa, csa, b, rsb, c, rsc, beta == 1);
        return;
    }
#endif
    la_gemm_f32(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

void la_gemm_small_f64(size_t m, size_t n, size_t k, double alpha, const double *a, ptrdiff_t rsa,
                       ptrdiff_t csa, const double *b, ptrdiff_t rsb, ptrdiff_t csb, double beta,
                       double *c, ptrdiff_t rsc, ptrdiff_t csc)
{
#if LA_HAVE_AVX512_CODE
    if (alpha == 1 && (beta == 0 || beta == 1) && csb == 1 && csc == 1 && la_avx512_usable()) {
        if (m > 0 && n > 0) gemm_small_f64(m, n, k, a, rsa, csa, b, rsb, c, rsc, beta == 1);
        return;
    }
#endif
    la_gemm_f64(m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
}

/* ---------------------------------------------------------------- C = alpha · A · Bᵀ */

enum { ABT_MAX_K = 256 }; /* the panel's rows: k × 32 floats, 32 KiB, on the stack */

void la_gemm_small_abt_f32(size_t m, size_t n, size_t k, float alpha, const float *a, ptrdiff_t lda,
                           const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc)
{
#if LA_HAVE_AVX512_CODE
    if (k > 0 && k <= ABT_MAX_K && la_avx512_usable()) {
        /* each 32 rows of B transposed once into a (k × 32) panel, which every 8-row tile
         * of A then reads as gemm_small's B; alpha applied to the finished block */
        _Alignas(64) float panel[ABT_MAX_K * 32];
        for (size_t j0 = 0; j0 < n; j0 += 32) {
            const size_t cols = n - j0 < 32 ? n - j0 : 32;
            la_transpose_f32(cols, k, b + (ptrdiff_t)j0 * ldb, (size_t)ldb, panel, 32);
            gemm_small(m, cols, k, a, lda, 1, panel, 32, c + j0, ldc, false);
            for (size_t i = 0; i < m; i++) {
                float *ci = c + (ptrdiff_t)i * ldc + j0;
                for (size_t x = 0; x < cols; x++)
                    ci[x] *= alpha;
            }
        }
        return;
    }
#endif
    la_gemm_f32(m, n, k, alpha, a, lda, 1, b, 1, ldb, 0, c, ldc, 1);
}

void la_gemm_small_abt_f64(size_t m, size_t n, size_t k, double alpha, const double *a,
                           ptrdiff_t lda, const double *b, ptrdiff_t ldb, double *c, ptrdiff_t ldc)
{
    la_gemm_f64(m, n, k, alpha, a, lda, 1, b, 1, ldb, 0, c, ldc, 1);
}

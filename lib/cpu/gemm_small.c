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
#include "core/sanitizer.h"
#include "cpu/simd_avx512.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if LA_HAVE_AVX512_CODE

enum { TILE_ROWS = 8 }; /* the default tile: 8 rows × 32 columns (16 accumulators) */

/* C[0..R)[0..16·V) (+)= A[0..R)[0..k) · B[0..k)[0..16·V), R and V constants at every call
 * (each shape is its own loop): R·V accumulators, per step V vector loads of B and R
 * broadcasts of A. full: whole columns, plain loads and stores; else (V <= 2) the columns
 * masked by m0, m1, for a partial last strip (masked loads in the k loop cost about 10%,
 * so whole strips go without them).
 *   A(i, p) = a[i·rsa + p·csa], B(p, c) = b[p·ldb + c], C(i, c) = c[i·ldc + c];
 *   accumulate: C += A·B, each FMA chain added to C at the end, else C = A·B. */
LA_AVX512 __attribute__((always_inline)) static inline void
tile_rv(size_t k, const float *a, ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t ldb,
        float *c, ptrdiff_t ldc, __mmask16 m0, __mmask16 m1, bool accumulate, bool full, int R,
        int V)
{
    __m512 acc[16][4];
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
            acc[i][v] = _mm512_setzero_ps();
    for (size_t p = 0; p < k; p++) {
        const float *bp = b + (ptrdiff_t)p * ldb, *ap = a + (ptrdiff_t)p * csa;
        __m512 bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < V; v++)
            bv[v] = full ? _mm512_loadu_ps(bp + 16 * v)
                         : _mm512_maskz_loadu_ps(v == 0 ? m0 : m1, bp + 16 * v);
#pragma GCC unroll 16
        for (int i = 0; i < R; i++) {
            const __m512 ai = _mm512_set1_ps(ap[i * rsa]);
#pragma GCC unroll 4
            for (int v = 0; v < V; v++)
                acc[i][v] = _mm512_fmadd_ps(ai, bv[v], acc[i][v]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int v = 0; v < V; v++) {
            float *ci = c + i * ldc + 16 * v;
            const __mmask16 mv = v == 0 ? m0 : m1;
            if (full) {
                _mm512_storeu_ps(ci, accumulate ? _mm512_add_ps(_mm512_loadu_ps(ci), acc[i][v])
                                                : acc[i][v]);
            } else {
                _mm512_mask_storeu_ps(ci, mv,
                                      accumulate
                                          ? _mm512_add_ps(_mm512_maskz_loadu_ps(mv, ci), acc[i][v])
                                          : acc[i][v]);
            }
        }
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
            /* the 16-column tile for products at most 16 wide (the causal kernel's
             * triangle blocks): the 32-column one would issue half its FMAs on masked-off
             * lanes */
            if (cols == 32)
                tile_rv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, true, 8, 2);
            else if (cols == 16)
                tile_rv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, true, 8, 1);
            else if (cols < 16)
                tile_rv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, false, 8, 1);
            else
                tile_rv(k, ai, rsa, csa, b + j0, ldb, ci, ldc, m0, m1, accumulate, false, 8, 2);
        }
        for (; i < m; i++) /* the rows past the last whole tile, one at a time */
            tile_rv(k, a + (ptrdiff_t)i * rsa, rsa, csa, b + j0, ldb, c + (ptrdiff_t)i * ldc + j0,
                    ldc, m0, m1, accumulate, false, 1, 2);
    }
}

/* ---------------------------------------------------------------- tile shapes */

/* The register tile that suits a CPU depends on its FMA units: Zen 4 runs 512-bit FMAs on
 * two 256-bit pipes, one vector FMA a cycle, for which 8 rows × 32 columns (16
 * accumulators, 10 loads per 16 FMAs) is enough; a core with two 512-bit FMA ports and a
 * 4-cycle latency needs at least 8 FMAs in flight and gains from fewer loads per FMA. So
 * the full tiles come in several shapes (rows × 16·vecs columns), every one the same FMA
 * chain per element (bitwise the same result: the contract above), and the one this CPU
 * runs fastest is chosen once per process (la_gemm_small_shape). Each shape's edges (its
 * last rows and a partial last column strip) fall to smaller tiles of the same chains. */

/* C (m × 16·V·strips) (+)= A·B in whole column strips: tiles of R rows, then the rows
 * left in tiles of 8, 4, 2 and 1 (as many as fit). */
LA_AVX512 __attribute__((always_inline)) static inline void
strips_rv(size_t m, size_t strips, size_t k, const float *a, ptrdiff_t rsa, ptrdiff_t csa,
          const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, bool accumulate, int R, int V)
{
    for (size_t s = 0; s < strips; s++) {
        const float *bs = b + s * 16 * (size_t)V;
        float *cs = c + s * 16 * (size_t)V;
        size_t i = 0;
        for (; i + (size_t)R <= m; i += (size_t)R)
            tile_rv(k, a + (ptrdiff_t)i * rsa, rsa, csa, bs, ldb, cs + (ptrdiff_t)i * ldc, ldc,
                    0xffff, 0xffff, accumulate, true, R, V);
        for (; R > 8 && i + 8 <= m; i += 8)
            tile_rv(k, a + (ptrdiff_t)i * rsa, rsa, csa, bs, ldb, cs + (ptrdiff_t)i * ldc, ldc,
                    0xffff, 0xffff, accumulate, true, 8, V);
        for (; R > 4 && i + 4 <= m; i += 4)
            tile_rv(k, a + (ptrdiff_t)i * rsa, rsa, csa, bs, ldb, cs + (ptrdiff_t)i * ldc, ldc,
                    0xffff, 0xffff, accumulate, true, 4, V);
        for (; i + 2 <= m; i += 2)
            tile_rv(k, a + (ptrdiff_t)i * rsa, rsa, csa, bs, ldb, cs + (ptrdiff_t)i * ldc, ldc,
                    0xffff, 0xffff, accumulate, true, 2, V);
        for (; i < m; i++)
            tile_rv(k, a + (ptrdiff_t)i * rsa, rsa, csa, bs, ldb, cs + (ptrdiff_t)i * ldc, ldc,
                    0xffff, 0xffff, accumulate, true, 1, V);
    }
}

typedef void strips_fn(size_t m, size_t strips, size_t k, const float *a, ptrdiff_t rsa,
                       ptrdiff_t csa, const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc,
                       bool accumulate);

#define LA_STRIPS(R, V)                                                                            \
    LA_AVX512 static void strips_##R##x##V(                                                        \
        size_t m, size_t strips, size_t k, const float *a, ptrdiff_t rsa, ptrdiff_t csa,           \
        const float *b, ptrdiff_t ldb, float *c, ptrdiff_t ldc, bool accumulate)                   \
    {                                                                                              \
        strips_rv(m, strips, k, a, rsa, csa, b, ldb, c, ldc, accumulate, R, V);                    \
    }
LA_STRIPS(12, 2)
LA_STRIPS(6, 4)
LA_STRIPS(4, 4)
#undef LA_STRIPS
#endif

/* The float32 tile shapes, the first the default (NULL: gemm_small's own 8 × 32 loop). */
typedef struct {
    const char *name; /* rows × columns */
    int vecs;         /* columns / 16 */
#if LA_HAVE_AVX512_CODE
    strips_fn *strips;
#endif
} tile_shape;

#if LA_HAVE_AVX512_CODE
#define LA_SHAPE(name, vecs, fn)                                                                   \
    {                                                                                              \
        name, vecs, fn                                                                             \
    }
#else
#define LA_SHAPE(name, vecs, fn)                                                                   \
    {                                                                                              \
        name, vecs                                                                                 \
    }
#endif
static const tile_shape shapes[] = {
    LA_SHAPE("8x32", 2, NULL),
    LA_SHAPE("12x32", 2, strips_12x2),
    LA_SHAPE("6x64", 4, strips_6x4),
    LA_SHAPE("4x64", 4, strips_4x4),
};
#undef LA_SHAPE
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

static pthread_once_t shape_once = PTHREAD_ONCE_INIT;
static int shape_chosen;    /* index into shapes, set once by choose_shape */
static char shape_text[96]; /* "avx512, tile 8x32 (…)", set with it */

#if LA_HAVE_AVX512_CODE
/* gemm_small on the tile shape `shape`: its whole column strips, then the columns left
 * on the 8 × 32 tiles. Bitwise the same result for every shape. */
LA_AVX512 static void gemm_small_on(int shape, size_t m, size_t n, size_t k, const float *a,
                                    ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t ldb,
                                    float *c, ptrdiff_t ldc, bool accumulate)
{
    const tile_shape *t = &shapes[shape];
    const size_t width = 16 * (size_t)t->vecs, strips = t->strips ? n / width : 0;
    if (strips > 0) t->strips(m, strips, k, a, rsa, csa, b, ldb, c, ldc, accumulate);
    if (n > strips * width)
        gemm_small(m, n - strips * width, k, a, rsa, csa, b + strips * width, ldb,
                   c + strips * width, ldc, accumulate);
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The calibration: the two products that dominate the linear kernels at d = 64, the
 * read φ(Q_blk)·S (128 × 64 · 64 × 64, A row-major) and the state update S +=
 * φ(K_blk)ᵀV_blk (64 × 128 · 128 × 64, A through transposed strides), on data in L1/L2.
 * Each shape is timed in 7 interleaved rounds of 16 pairs, keeping its fastest round (the
 * least disturbed by other processes); about 10 ms in all. The default stays unless a
 * shape beats it by 3%, so noise does not move the choice between equals. Returns the
 * index, or 0 when the buffers cannot be had. */
LA_AVX512 static int fastest_shape(void)
{
    enum { D = 64, ROWS = 128, ROUNDS = 7, PAIRS = 16 };
    float *buf = malloc((size_t)(3 * ROWS * D) * sizeof *buf);
    if (!buf) return 0;
    float *x = buf, *y = buf + ROWS * D, *out = buf + 2 * ROWS * D;
    /* the sizes as the kernels pass them, not constants the compiler would fold into a
     * copy of gemm_small of its own */
    static volatile size_t sizes[2] = {ROWS, D};
    const size_t rows = sizes[0], d = sizes[1];
    for (size_t i = 0; i < (size_t)(2 * ROWS * D); i++)
        buf[i] = (float)(i % 13) * 0.01f + 0.5f;
    double best[SHAPES];
    for (int s = 0; s < SHAPES; s++)
        best[s] = HUGE_VAL;
    for (int r = 0; r < ROUNDS; r++)
        for (int s = 0; s < SHAPES; s++) {
            const double t0 = seconds();
            for (int i = 0; i < PAIRS; i++) {
                gemm_small_on(s, rows, d, d, x, (ptrdiff_t)d, 1, y, (ptrdiff_t)d, out, (ptrdiff_t)d,
                              false);
                gemm_small_on(s, d, d, rows, x, 1, (ptrdiff_t)d, y, (ptrdiff_t)d, out, (ptrdiff_t)d,
                              true);
            }
            const double t = seconds() - t0;
            best[s] = t < best[s] ? t : best[s];
        }
    free(buf);
    int chosen = 0;
    for (int s = 1; s < SHAPES; s++)
        if (best[s] < 0.97 * best[0] && best[s] < best[chosen]) chosen = s;
    return chosen;
}
#endif

#if LA_HAVE_AVX512_CODE
/* The shape measured on a CPU by identification, or NULL for one to time: on a Zen 4 (one
 * 512-bit FMA a cycle on two 256-bit pipes) the four shapes time alike, so 8 × 32; on a
 * Zen 5 (two 512-bit FMA pipes) 6 × 64, whose 10 loads per 24 FMAs ran linear attention's
 * forward and backward 4-5% faster than 8 × 32 (docs/performance.md). Known CPUs skip the
 * timing, which every process would pay (about 10 ms; under AddressSanitizer 0.2-0.5 s). */
static const char *shape_known(const char **why)
{
    switch (la_cpu_amd_family()) {
    case 0x19u: *why = "Zen 4: the shapes time alike"; return "8x32";
    case 0x1au: *why = "Zen 5: measured fastest there"; return "6x64";
    default: return NULL;
    }
}

/* The index of the shape called name in shapes, or -1 (also for NULL). */
static int shape_named(const char *name)
{
    for (int s = 0; name && s < SHAPES; s++)
        if (strcmp(name, shapes[s].name) == 0) return s;
    return -1;
}
#endif

/* LA_TILE=name forces a shape (tests, comparisons); on a Zen 4 or 5 the shape measured
 * there; elsewhere the fastest by timing (fastest_shape, about 10 ms once per process),
 * except in a sanitizer build, which would time its checks, not the tiles, and paid
 * 0.2-0.5 s a process for it (the tests start the command about 2,000 times): the
 * default shape, untimed. */
static void choose_shape(void)
{
    const char *how = "timed fastest";
    shape_chosen = 0;
#if LA_HAVE_AVX512_CODE
    if (la_avx512_present()) {
        const char *env = getenv("LA_TILE"), *known_why = NULL;
        const int forced = shape_named(env);
        int known;
        if (forced >= 0) {
            shape_chosen = forced;
            how = "LA_TILE";
        } else if ((known = shape_named(shape_known(&known_why))) >= 0) {
            shape_chosen = known;
            how = known_why;
        } else if (LA_UNDER_ASAN) {
            how = "the default: a sanitizer build is not timed";
        } else {
            shape_chosen = fastest_shape();
        }
        snprintf(shape_text, sizeof shape_text, "avx512, tile %s (%s%s)", shapes[shape_chosen].name,
                 how, env && forced < 0 ? "; LA_TILE names no shape" : "");
        return;
    }
#endif
    (void)how;
    snprintf(shape_text, sizeof shape_text, "%s", la_simd_config());
}

int la_gemm_small_time_shapes(void)
{
#if LA_HAVE_AVX512_CODE
    if (la_avx512_present()) return fastest_shape();
#endif
    return 0;
}

static _Atomic int shape_override = -1; /* la_gemm_small_use_shape */

int la_gemm_small_shape(void)
{
    const int forced = shape_override;
    if (forced >= 0) return forced;
    pthread_once(&shape_once, choose_shape);
    return shape_chosen;
}

void la_gemm_small_use_shape(int shape)
{
    shape_override = shape >= 0 && shape < SHAPES ? shape : -1;
}

const char *la_gemm_small_config(void)
{
    pthread_once(&shape_once, choose_shape);
    return la_avx512_usable() ? shape_text : la_simd_config();
}

int la_gemm_small_shapes(const char **names, int max)
{
    for (int s = 0; s < SHAPES && s < max; s++)
        names[s] = shapes[s].name;
    return SHAPES;
}

#if LA_HAVE_AVX512_CODE
/* ---------------------------------------------------------------- float64 */

/* The same tiles with 8 double lanes: 8 rows × 16 columns, 16 accumulators, per step 2
 * vector loads of B and 8 broadcasts of A for 16 FMAs. */
enum { TILE_COLS_F64 = 16 };

/* C[0..8)[0..16) (+)= A[0..8)[0..k) · B[0..k)[0..16), as tile_rv with R = 8, V = 2. */
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
        if (m > 0 && n > 0)
            gemm_small_on(la_gemm_small_shape(), m, n, k, a, rsa, csa, b, rsb, c, rsc, beta == 1);
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
            gemm_small_on(la_gemm_small_shape(), m, cols, k, a, lda, 1, panel, 32, c + j0, ldc,
                          false);
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

/* vtanh.c — Σ_e w[e]·tanh(a[e] + c[e]) and tanh over a row, for the additive scores.
 *
 * glibc's tanhf costs about 10 ns an element here, so additive attention (d_a tanh per
 * pair) ran at under 1 GFLOP/s; the branch-free la_vtanh (vtanh.h) vectorizes. The same
 * loops are compiled twice, for the library's target and with AVX-512, and chosen at run
 * time by la_avx512_usable() (so LA_SIMD=off picks the portable loops, as it does for the
 * engine's tiles). */
#include "cpu/vtanh.h"
#include "cpu/simd_avx512.h"

/* s[j] = Σ_a w[a]·tanh(x[a] + ct[a·ldc + j]), j < n: the keys in the lanes, each score
 * summed over a in order (vtanh.h). Inlined into each build below, which vectorizes it
 * for its own target. */
__attribute__((always_inline)) static inline void scores_f32(const float *x, const float *ct,
                                                             size_t ldc, const float *w, size_t da,
                                                             float *s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        s[j] = 0;
    for (size_t a = 0; a < da; a++) {
        const float xa = x[a], wa = w[a], *cr = ct + a * ldc;
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            s[j] = MULADD_F32(wa, la_vtanh_f32(xa + cr[j]), s[j]);
    }
}

__attribute__((always_inline)) static inline void scores_f64(const double *x, const double *ct,
                                                             size_t ldc, const double *w, size_t da,
                                                             double *s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        s[j] = 0;
    for (size_t a = 0; a < da; a++) {
        const double xa = x[a], wa = w[a], *cr = ct + a * ldc;
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            s[j] = MULADD_F64(wa, la_vtanh_f64(xa + cr[j]), s[j]);
    }
}

static void tanh_scores_f32(const float *x, const float *ct, size_t ldc, const float *w, size_t da,
                            float *s, size_t n)
{
    scores_f32(x, ct, ldc, w, da, s, n);
}

static void tanh_scores_f64(const double *x, const double *ct, size_t ldc, const double *w,
                            size_t da, double *s, size_t n)
{
    scores_f64(x, ct, ldc, w, da, s, n);
}

#ifdef LA_HAVE_AVX512_CODE
/* the same loops with 16 float (8 double) lanes */
#define LA_AVX512_LOOPS __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))

LA_AVX512_LOOPS static void tanh_scores_f32_avx512(const float *x, const float *ct, size_t ldc,
                                                   const float *w, size_t da, float *s, size_t n)
{
    scores_f32(x, ct, ldc, w, da, s, n);
}

LA_AVX512_LOOPS static void tanh_scores_f64_avx512(const double *x, const double *ct, size_t ldc,
                                                   const double *w, size_t da, double *s, size_t n)
{
    scores_f64(x, ct, ldc, w, da, s, n);
}

LA_AVX512_LOOPS static void row_f32_avx512(const float *x, float *y, size_t n)
{
#pragma omp simd
    for (size_t e = 0; e < n; e++)
        y[e] = la_vtanh_f32(x[e]);
}

LA_AVX512_LOOPS static void row_f64_avx512(const double *x, double *y, size_t n)
{
#pragma omp simd
    for (size_t e = 0; e < n; e++)
        y[e] = la_vtanh_f64(x[e]);
}
#endif

la_tanh_scores_f32_fn la_tanh_scores_f32_for(void)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) return tanh_scores_f32_avx512;
#endif
    return tanh_scores_f32;
}

la_tanh_scores_f64_fn la_tanh_scores_f64_for(void)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) return tanh_scores_f64_avx512;
#endif
    return tanh_scores_f64;
}

void la_vtanh_row_f32(const float *x, float *y, size_t n)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) {
        row_f32_avx512(x, y, n);
        return;
    }
#endif
#pragma omp simd
    for (size_t e = 0; e < n; e++)
        y[e] = la_vtanh_f32(x[e]);
}

void la_vtanh_row_f64(const double *x, double *y, size_t n)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) {
        row_f64_avx512(x, y, n);
        return;
    }
#endif
#pragma omp simd
    for (size_t e = 0; e < n; e++)
        y[e] = la_vtanh_f64(x[e]);
}

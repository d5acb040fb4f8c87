/* vtanh.c — Σ_e w[e]·tanh(a[e] + c[e]) and tanh over a row, for the additive scores.
 *
 * glibc's tanhf costs about 10 ns an element here, so additive attention (d_a tanh per
 * pair) ran at under 1 GFLOP/s; the branch-free la_vtanh (vtanh.h) vectorizes. The same
 * loops are compiled twice, for the library's target and with AVX-512, and chosen at run
 * time by la_avx512_usable() (so LA_SIMD=off picks the portable loops, as it does for the
 * engine's tiles). */
#include "cpu/vtanh.h"
#include "cpu/simd_avx512.h"

static float tanh_dot_f32(const float *a, const float *c, const float *w, size_t n)
{
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t e = 0; e < n; e++)
        sum += w[e] * la_vtanh_f32(a[e] + c[e]);
    return sum;
}

static double tanh_dot_f64(const double *a, const double *c, const double *w, size_t n)
{
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t e = 0; e < n; e++)
        sum += w[e] * la_vtanh_f64(a[e] + c[e]);
    return sum;
}

#ifdef LA_HAVE_AVX512_CODE
/* the same loops with 16 float (8 double) lanes */
#define LA_AVX512_LOOPS __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))

LA_AVX512_LOOPS static float tanh_dot_f32_avx512(const float *a, const float *c, const float *w,
                                                 size_t n)
{
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t e = 0; e < n; e++)
        sum += w[e] * la_vtanh_f32(a[e] + c[e]);
    return sum;
}

LA_AVX512_LOOPS static double tanh_dot_f64_avx512(const double *a, const double *c, const double *w,
                                                  size_t n)
{
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t e = 0; e < n; e++)
        sum += w[e] * la_vtanh_f64(a[e] + c[e]);
    return sum;
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

la_tanh_dot_f32_fn la_tanh_dot_f32_for(void)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) return tanh_dot_f32_avx512;
#endif
    return tanh_dot_f32;
}

la_tanh_dot_f64_fn la_tanh_dot_f64_for(void)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) return tanh_dot_f64_avx512;
#endif
    return tanh_dot_f64;
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

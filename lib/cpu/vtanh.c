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

/* s[j] = w_sum − 2·Σ_a w[a] / (ex[a]·ect[a·ldc + j] + 1), j < n (vtanh.h). */
static void tanh_exp_scores_f32(const float *ex, const float *ect, size_t ldc, const float *w,
                                float w_sum, size_t da, float *s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        s[j] = 0;
    for (size_t a = 0; a < da; a++) {
        const float ea = ex[a], wa = w[a], *cr = ect + a * ldc;
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            s[j] = MULADD_F32(wa, 1.0f / MULADD_F32(ea, cr[j], 1.0f), s[j]);
    }
    for (size_t j = 0; j < n; j++)
        s[j] = MULADD_F32(-2.0f, s[j], w_sum);
}

static void tanh_exp_scores_f64(const double *ex, const double *ect, size_t ldc, const double *w,
                                double w_sum, size_t da, double *s, size_t n)
{
    for (size_t j = 0; j < n; j++)
        s[j] = 0;
    for (size_t a = 0; a < da; a++) {
        const double ea = ex[a], wa = w[a], *cr = ect + a * ldc;
#pragma omp simd
        for (size_t j = 0; j < n; j++)
            s[j] = MULADD_F64(wa, 1.0 / MULADD_F64(ea, cr[j], 1.0), s[j]);
    }
    for (size_t j = 0; j < n; j++)
        s[j] = MULADD_F64(-2.0, s[j], w_sum);
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

/* tanh_exp_scores_f32 on 16 lanes, the reciprocal by vrcp14ps and one Newton step
 * (r = r0 + r0·(1 − d·r0)): 2⁻¹⁴ squared, below float32's rounding. 16 keys per vector,
 * up to 4 vectors of keys held in registers across a. */
LA_AVX512_LOOPS static void tanh_exp_scores_f32_avx512(const float *ex, const float *ect,
                                                       size_t ldc, const float *w, float w_sum,
                                                       size_t da, float *s, size_t n)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (size_t j0 = 0; j0 < n; j0 += 64) {
        __m512 acc[4];
        __mmask16 in[4];
        for (int g = 0; g < 4; g++) {
            const size_t lo = j0 + 16 * (size_t)g;
            in[g] = lo >= n        ? 0
                    : n - lo >= 16 ? (__mmask16)0xffff
                                   : (__mmask16)((1u << (n - lo)) - 1);
            acc[g] = _mm512_setzero_ps();
        }
        for (size_t a = 0; a < da; a++) {
            const __m512 ea = _mm512_set1_ps(ex[a]), wa = _mm512_set1_ps(w[a]);
            const float *cr = ect + a * ldc + j0;
            for (int g = 0; g < 4; g++) {
                const __m512 d =
                    _mm512_fmadd_ps(ea, _mm512_maskz_loadu_ps(in[g], cr + 16 * g), one);
                const __m512 r0 = _mm512_rcp14_ps(d);
                const __m512 r = _mm512_fmadd_ps(r0, _mm512_fnmadd_ps(d, r0, one), r0);
                acc[g] = _mm512_fmadd_ps(wa, r, acc[g]);
            }
        }
        for (int g = 0; g < 4; g++)
            _mm512_mask_storeu_ps(
                s + j0 + 16 * g, in[g],
                _mm512_fmadd_ps(_mm512_set1_ps(-2.0f), acc[g], _mm512_set1_ps(w_sum)));
    }
}

/* tanh_exp_scores_f64 on 8 lanes: vrcp14pd and two Newton steps (2⁻¹⁴ to 2⁻²⁸ to 2⁻⁵⁶),
 * up to 4 vectors of keys held in registers across a. */
LA_AVX512_LOOPS static void tanh_exp_scores_f64_avx512(const double *ex, const double *ect,
                                                       size_t ldc, const double *w, double w_sum,
                                                       size_t da, double *s, size_t n)
{
    const __m512d one = _mm512_set1_pd(1.0);
    for (size_t j0 = 0; j0 < n; j0 += 32) {
        __m512d acc[4];
        __mmask8 in[4];
        for (int g = 0; g < 4; g++) {
            const size_t lo = j0 + 8 * (size_t)g;
            in[g] = lo >= n ? 0 : n - lo >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (n - lo)) - 1);
            acc[g] = _mm512_setzero_pd();
        }
        for (size_t a = 0; a < da; a++) {
            const __m512d ea = _mm512_set1_pd(ex[a]), wa = _mm512_set1_pd(w[a]);
            const double *cr = ect + a * ldc + j0;
            for (int g = 0; g < 4; g++) {
                const __m512d d =
                    _mm512_fmadd_pd(ea, _mm512_maskz_loadu_pd(in[g], cr + 8 * g), one);
                __m512d r = _mm512_rcp14_pd(d);
                r = _mm512_fmadd_pd(r, _mm512_fnmadd_pd(d, r, one), r);
                r = _mm512_fmadd_pd(r, _mm512_fnmadd_pd(d, r, one), r);
                acc[g] = _mm512_fmadd_pd(wa, r, acc[g]);
            }
        }
        for (int g = 0; g < 4; g++)
            _mm512_mask_storeu_pd(
                s + j0 + 8 * g, in[g],
                _mm512_fmadd_pd(_mm512_set1_pd(-2.0), acc[g], _mm512_set1_pd(w_sum)));
    }
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

la_tanh_exp_scores_f32_fn la_tanh_exp_scores_f32_for(void)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) return tanh_exp_scores_f32_avx512;
#endif
    return tanh_exp_scores_f32;
}

la_tanh_exp_scores_f64_fn la_tanh_exp_scores_f64_for(void)
{
#ifdef LA_HAVE_AVX512_CODE
    if (la_avx512_usable()) return tanh_exp_scores_f64_avx512;
#endif
    return tanh_exp_scores_f64;
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

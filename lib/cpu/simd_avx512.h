/* simd_avx512.h — the AVX-512 building blocks shared by the hand-blocked kernels
 * (lib/attention/engine_avx512.c, gemm_small.c, featuremap.c). Internal, not installed.
 *
 * The library is compiled for x86-64-v3 (AVX2); the AVX-512 code is compiled per function
 * with the target attribute below and only called after la_avx512_usable() said yes,
 * so one binary runs everywhere and uses 16 float lanes where the CPU has them. */
#ifndef LA_SIMD_AVX512_H
#define LA_SIMD_AVX512_H

#include <stdbool.h>

/* Whether the AVX-512 kernels may run: the CPU has AVX-512 F, DQ, VL and BW, the
 * environment does not say LA_SIMD=off, and the tests have not switched them off
 * (la_avx512_enable). Decided once, cheap to ask. */
bool la_avx512_usable(void);
/* Whether they can: the CPU has them and LA_SIMD is not off (whatever la_avx512_enable
 * says). */
bool la_avx512_present(void);
/* The AMD family of this CPU (0x19: Zen 4, 0x1a: Zen 5), or 0 for any other vendor and off
 * x86: the tile choices by identification (gemm_small.c, la_fused_simd_q_block). */
unsigned la_cpu_amd_family(void);

#if defined(__x86_64__) && defined(__GNUC__)
#define LA_HAVE_AVX512_CODE 1
#include <immintrin.h>

#define LA_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,fma")))

/* 2^x for x <= 0, 16 lanes; 0 for x < -160 and for -inf.
 *   n = round(x), f = x - n (exact, |f| <= 1/2), 2^f by a degree-6 polynomial (a
 *   Chebyshev fit on [-1/2, 1/2]), then 2^f · 2ⁿ by vscalefps, which also rounds to
 *   the denormals and to 0. At most 2 ulp (tests/attention/test_softmax.c: exp2_accuracy). */
LA_AVX512 static inline __m512 la_exp2_ps(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-160.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 y = _mm512_set1_ps(1.5469732170e-04f);
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.3400432654e-03f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(9.6180252731e-03f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(5.5503271520e-02f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(2.4022650719e-01f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(6.9314718246e-01f));
    y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

/* e^x for x <= 0, 16 lanes; 0 below -110 (e^-110 is below half the smallest denormal,
 * as with expf) and for -inf.
 *   n = round(x / ln 2), r = x - n·ln 2 with ln 2 in two parts (n·ln2_hi exact),
 *   |r| <= ln2/2, e^r by a degree-6 polynomial (Chebyshev fit), e^r · 2ⁿ by
 *   vscalefps, rounding once into the denormals. Unlike 2^(x·log2 e), the error does
 *   not grow with |x|: at most 2 ulp over [-104, 0] (tests/attention/test_linear.c). */
LA_AVX512 static inline __m512 la_exp_ps(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-110.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 y = _mm512_set1_ps(1.3948581181e-03f);
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3751287311e-03f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1666217148e-02f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666415334e-01f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(0.5f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

/* e^x for x <= 0, 8 double lanes; 0 below -746 (e^-746 is below half the smallest
 * denormal) and for -inf. The float64 fused softmax kernel's exp (engine_avx512.c).
 *   n = round(x / ln 2), r = x - n·ln 2 with fdlibm's two-part ln 2 (n·ln2_hi exact,
 *   and fnmadd rounds once), |r| <= ln2/2, e^r by its Taylor series to degree 13
 *   (truncation r¹⁴/14! < 5e-18, as la_vexp_f64 in vexp.h), e^r · 2ⁿ by vscalefpd,
 *   rounding once into the denormals. The error does not grow with |x| (no x·log2 e
 *   carried into the result): at most 2 ulp over [-745, 0]
 *   (tests/attention/test_softmax.c: exp_accuracy_f64). */
LA_AVX512 static inline __m512d la_exp_pd(__m512d x)
{
    x = _mm512_max_pd(x, _mm512_set1_pd(-746.0));
    const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(6.93147180369123816490e-01), x);
    r = _mm512_fnmadd_pd(n, _mm512_set1_pd(1.90821492927058770002e-10), r);
    __m512d y = _mm512_set1_pd(1.0 / 6227020800.0); /* 1/13! */
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 479001600.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 39916800.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 3628800.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 362880.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 40320.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 5040.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 720.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 120.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 24.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0 / 6.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(0.5));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0));
    y = _mm512_fmadd_pd(y, r, _mm512_set1_pd(1.0));
    return _mm512_scalef_pd(y, n);
}
#else
#define LA_HAVE_AVX512_CODE 0
#endif

#endif

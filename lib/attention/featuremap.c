/* featuremap.c — φ of linear attention in float and double: elu+1 and relu.
 *
 * elu(x) + 1 = x + 1 (x >= 0), exp(x) (x < 0), computed with exp directly, so φ stays
 * positive where elu(x) = exp(x) - 1 would round to -1 and φ to 0 (below x ≈ -17 in
 * float32).
 *
 * float32: glibc's expf is scalar, and with random signs the branch x >= 0 mispredicts
 * half the time; φ(Q) and φ(K) then cost more than all the GEMMs of non-causal linear
 * attention at d = 64. On AVX-512 CPUs elu1_avx512 below computes it in float32 on 16
 * lanes (within one ulp of expf on the tests' sweep). The portable float path computes
 * exp in double precision with the branch-free polynomial of vexp.h, which the compiler vectorizes,
 * and rounds once to float: relative error of the double result about 1.4e-16, so the float result
 * is the correctly rounded exp(x) except when exp(x) lies within ~1e-16 of a rounding boundary
 * (then it may be one ulp off) — the same as glibc's expf, which is correctly rounded up to 0.502
 * ulp. Subnormal results come out right (the double is normal, the one rounding to float makes the
 * subnormal), and exp(x) is 0 only where expf is (x below ≈ -103.97).
 *
 * float64: on AVX-512 CPUs elu1_avx512_f64 on 8 lanes (la_exp_pd, within 2 ulp of exp);
 * elsewhere libm's exp. */
#include "attention/linear_internal.h"
#include "cpu/simd_avx512.h"
#include "cpu/vexp.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if LA_HAVE_AVX512_CODE
/* elu+1 in float32 on 16 lanes: exp(x) where x < 0 (la_exp_ps, at most 2 ulp, 0 below
 * -110 like expf's underflow), x + 1 elsewhere (NaN stays NaN). About 6 times faster
 * than the double-precision path below, which took half of non-causal linear
 * attention's time at d = 64. */
/* Asks for the line at x + ahead elements (while within readable) and at also + i. */
#define PREFETCH_AHEAD(x, i, ahead, readable, also)                                                \
    do {                                                                                           \
        if ((i) + (ahead) < (readable))                                                            \
            _mm_prefetch((const char *)((x) + (i) + (ahead)), _MM_HINT_T0);                        \
        if (also) _mm_prefetch((const char *)((also) + (i)), _MM_HINT_T0);                         \
    } while (0)

/* With readable and also: la_feature_map_stream's prefetches, one per 64 bytes of x. On
 * the Zen 5 of docs/performance.md, non-causal linear attention at N = 4,096, H = 8,
 * d = 64 went from 2.82-3.05 ms to 2.62-2.74 ms with x's prefetch (8 KiB ahead; 1 KiB gave
 * nothing, 16 and 32 KiB the same as 8) and to 2.58 ms with V's as well, in turn. */
LA_AVX512 static void elu1_avx512(const float *x, float *out, size_t n, size_t readable,
                                  const float *also)
{
    const __m512 one = _mm512_set1_ps(1.0f), zero = _mm512_setzero_ps();
    const size_t ahead = LA_PHI_AHEAD_BYTES / sizeof(float);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        PREFETCH_AHEAD(x, i, ahead, readable, also);
        const __m512 xi = _mm512_loadu_ps(x + i);
        const __mmask16 neg = _mm512_cmp_ps_mask(xi, zero, _CMP_LT_OQ);
        _mm512_storeu_ps(out + i, _mm512_mask_mov_ps(_mm512_add_ps(xi, one), neg, la_exp_ps(xi)));
    }
    if (i < n) { /* the last n mod 16 elements, masked */
        const __mmask16 in = (__mmask16)((1u << (n - i)) - 1);
        const __m512 xi = _mm512_maskz_loadu_ps(in, x + i);
        const __mmask16 neg = _mm512_cmp_ps_mask(xi, zero, _CMP_LT_OQ);
        const __m512 phi = _mm512_mask_mov_ps(_mm512_add_ps(xi, one), neg, la_exp_ps(xi));
        _mm512_mask_storeu_ps(out + i, in, phi);
    }
}

/* elu+1 in float64 on 8 lanes: exp(x) where x < 0 (la_exp_pd, at most 2 ulp, 0 below
 * -746), x + 1 elsewhere (NaN stays NaN). libm's exp one element at a time was 60% of
 * float64 non-causal linear attention's time at d = 64 (perf record). */
LA_AVX512 static void elu1_avx512_f64(const double *x, double *out, size_t n, size_t readable,
                                      const double *also)
{
    const __m512d one = _mm512_set1_pd(1.0), zero = _mm512_setzero_pd();
    const size_t ahead = LA_PHI_AHEAD_BYTES / sizeof(double);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        PREFETCH_AHEAD(x, i, ahead, readable, also);
        const __m512d xi = _mm512_loadu_pd(x + i);
        const __mmask8 neg = _mm512_cmp_pd_mask(xi, zero, _CMP_LT_OQ);
        _mm512_storeu_pd(out + i, _mm512_mask_mov_pd(_mm512_add_pd(xi, one), neg, la_exp_pd(xi)));
    }
    if (i < n) { /* the last n mod 8 elements, masked */
        const __mmask8 in = (__mmask8)((1u << (n - i)) - 1);
        const __m512d xi = _mm512_maskz_loadu_pd(in, x + i);
        const __mmask8 neg = _mm512_cmp_pd_mask(xi, zero, _CMP_LT_OQ);
        const __m512d phi = _mm512_mask_mov_pd(_mm512_add_pd(xi, one), neg, la_exp_pd(xi));
        _mm512_mask_storeu_pd(out + i, in, phi);
    }
}
#endif

void la_feature_map_f32(la_feature_map fm, const float *x, float *out, size_t n)
{
    la_feature_map_stream_f32(fm, x, out, n, 0, NULL);
}

void la_feature_map_stream_f32(la_feature_map fm, const float *x, float *out, size_t n,
                               size_t readable, const float *also)
{
    if (fm == LA_FEATURE_IDENTITY) {
        if (out != x) memcpy(out, x, n * sizeof *out);
        return;
    }
#if LA_HAVE_AVX512_CODE
    if (fm == LA_FEATURE_ELU1 && la_avx512_usable()) {
        elu1_avx512(x, out, n, readable, also);
        return;
    }
#else
    (void)readable, (void)also;
#endif
    if (fm == LA_FEATURE_RELU) {
        for (size_t i = 0; i < n; i++)
            out[i] = x[i] > 0 ? x[i] : 0.0f;
        return;
    }
    /* Both sides computed for every element, then blended by an integer mask: no branch
     * and no float select, so the loop vectorizes (8 lanes with AVX2). Integer steps on
     * the float bits (sign-magnitude, so |x| orders like its bits):
     *   below = exp(-min(|x|, 110)), above = x + 1;
     *   φ = below when x is negative and not NaN (-0 included: exp(-0) = 1 = -0 + 1),
     *   else above (NaN stays NaN). exp(-110) rounds to 0 in float, like expf. */
    const uint32_t mag_110 = 0x42dc0000u; /* bits of 110.0f */
    const uint32_t mag_inf = 0x7f800000u; /* bits of +inf: larger magnitudes are NaN */
    for (size_t i = 0; i < n; i++) {
        float xi = x[i];
        uint32_t x_bits;
        memcpy(&x_bits, &xi, sizeof x_bits);
        uint32_t mag = x_bits & 0x7fffffffu;
        uint32_t neg_bits = (mag < mag_110 ? mag : mag_110) | 0x80000000u;
        float neg;
        memcpy(&neg, &neg_bits, sizeof neg);
        float below = (float)la_vexp_f64((double)neg);
        float above = xi + 1.0f;
        uint32_t below_bits, above_bits;
        memcpy(&below_bits, &below, sizeof below_bits);
        memcpy(&above_bits, &above, sizeof above_bits);
        uint32_t take_below = 0u - ((x_bits >> 31) & (uint32_t)(mag <= mag_inf));
        uint32_t phi_bits = (below_bits & take_below) | (above_bits & ~take_below);
        memcpy(&out[i], &phi_bits, sizeof phi_bits);
    }
}

/* float64: elu1_avx512_f64 on AVX-512 CPUs, else libm's exp one element at a time. */
void la_feature_map_f64(la_feature_map fm, const double *x, double *out, size_t n)
{
    la_feature_map_stream_f64(fm, x, out, n, 0, NULL);
}

void la_feature_map_stream_f64(la_feature_map fm, const double *x, double *out, size_t n,
                               size_t readable, const double *also)
{
    if (fm == LA_FEATURE_IDENTITY) {
        if (out != x) memcpy(out, x, n * sizeof *out);
        return;
    }
#if LA_HAVE_AVX512_CODE
    if (fm == LA_FEATURE_ELU1 && la_avx512_usable()) {
        elu1_avx512_f64(x, out, n, readable, also);
        return;
    }
#else
    (void)readable, (void)also;
#endif
    if (fm == LA_FEATURE_RELU) {
        for (size_t i = 0; i < n; i++)
            out[i] = x[i] > 0 ? x[i] : 0.0;
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] >= 0 ? x[i] + 1.0 : exp(x[i]);
}

/* vtanh.h — tanh vectorized, for the additive scores' Σ_a v_a tanh(A_ia + C_ja). Internal
 * to the library (not installed). */
#ifndef LA_VTANH_H
#define LA_VTANH_H

#include "cpu/vexp.h"

/* la_vtanh_f32 and la_vtanh_f64 are tanh(x) as branch-free inline code the compiler
 * vectorizes inside a loop, after Cephes' tanhf and tanh, on a = |x| with x's sign put
 * back (so tanh(−0) = −0):
 *   a < 0.625: a + a·s·P(s), s = a² (float32: P of degree 4; float64: a rational P/Q of
 *     degrees 2 and 3), no cancellation near 0;
 *   a >= 0.625: 1 − 2 / (exp(2a) + 1), exp by la_vexp (clamped, so a large |x| or an
 *     infinite one gives ±1 exactly);
 *   NaN in, NaN out.
 * Within 1 ulp of libm's tanh on every input tests/attention/test_vtanh.c draws over the
 * whole range (it holds float32 to 2 ulp, float64 to 3). */
static inline float la_vtanh_f32(float x)
{
    union {
        float f;
        uint32_t u;
    } ux = {x}, ua, ur;
    ua.u = ux.u & 0x7fffffffu;
    const float a = ua.f, s = a * a;
    float poly = -5.70498872745e-3f;
    poly = MULADD_F32(poly, s, 2.06390887954e-2f);
    poly = MULADD_F32(poly, s, -5.37397155531e-2f);
    poly = MULADD_F32(poly, s, 1.33314422036e-1f);
    poly = MULADD_F32(poly, s, -3.33332819422e-1f);
    const float small = MULADD_F32(poly * s, a, a);
    const float large = 1.0f - 2.0f / (la_vexp_f32(2.0f * a) + 1.0f);
    ur.f = select_f32(a < 0.625f, small, large);
    ur.u |= ux.u & 0x80000000u;
    return select_f32(x != x, x, ur.f);
}

static inline double la_vtanh_f64(double x)
{
    union {
        double f;
        uint64_t u;
    } ux = {x}, ua, ur;
    ua.u = ux.u & 0x7fffffffffffffffull;
    const double a = ua.f, s = a * a;
    double p = -9.64399179425052238628e-1;
    p = MULADD_F64(p, s, -9.92877231001918586564e1);
    p = MULADD_F64(p, s, -1.61468768441708447952e3);
    double q = s + 1.12811678491632931402e2;
    q = MULADD_F64(q, s, 2.23548839060100448583e3);
    q = MULADD_F64(q, s, 4.84406305325125486048e3);
    const double small = MULADD_F64(s * (p / q), a, a);
    const double large = 1.0 - 2.0 / (la_vexp_f64(2.0 * a) + 1.0);
    ur.f = select_f64(a < 0.625, small, large);
    ur.u |= ux.u & 0x8000000000000000ull;
    return select_f64(x != x, x, ur.f);
}

/* One query's additive scores against n keys, C held transposed (d_a rows of stride ldc,
 * the keys along each row): s[j] = Σ_a w[a]·tanh(x[a] + ct[a·ldc + j]) for j < n, the
 * keys in the vector lanes and each score summed over a in order (no sum across lanes);
 * and y[e] = tanh(x[e]). The AVX-512 build (16 float, 8 double lanes) where
 * la_avx512_usable(), else the portable one (the compiler's vectors for the library's
 * target); the order of every sum is fixed, so a path always gives the same bits.
 * la_tanh_scores_*_for() picks the path once per call of a kernel. Hidden explicitly, as
 * vexp.h's. */
typedef void (*la_tanh_scores_f32_fn)(const float *x, const float *ct, size_t ldc, const float *w,
                                      size_t da, float *s, size_t n);
typedef void (*la_tanh_scores_f64_fn)(const double *x, const double *ct, size_t ldc,
                                      const double *w, size_t da, double *s, size_t n);
/* The same scores from exponentials: ex[a] = e^{2·x[a]} and ect[a·ldc + j] = e^{2·c_ja}
 * (every |x|, |c| <= LA_TANH_EXP_MAX_F32, _F64, so that each product below is a normal
 * number), w_sum = Σ_a w[a]: tanh(x + c) = 1 − 2 / (e^{2x}·e^{2c} + 1), so
 *   s[j] = w_sum − 2·Σ_a w[a] / (ex[a]·ect[a·ldc + j] + 1),
 * each term's sum over a in order: one product-sum, one reciprocal and one product-sum per
 * (key, a) instead of a tanh. Its error is that of the exponentials (a few units of
 * rounding of each term, as the rounding of x + c gives the direct path for |x + c| near
 * 1) plus the reciprocal's (AVX-512: vrcp14 refined by Newton steps, one in float32, two
 * in float64, to below the type's rounding). */
#define LA_TANH_EXP_MAX_F32 20.0f
#define LA_TANH_EXP_MAX_F64 170.0
typedef void (*la_tanh_exp_scores_f32_fn)(const float *ex, const float *ect, size_t ldc,
                                          const float *w, float w_sum, size_t da, float *s,
                                          size_t n);
typedef void (*la_tanh_exp_scores_f64_fn)(const double *ex, const double *ect, size_t ldc,
                                          const double *w, double w_sum, size_t da, double *s,
                                          size_t n);
__attribute__((visibility("hidden"))) la_tanh_exp_scores_f32_fn la_tanh_exp_scores_f32_for(void);
__attribute__((visibility("hidden"))) la_tanh_exp_scores_f64_fn la_tanh_exp_scores_f64_for(void);
__attribute__((visibility("hidden"))) la_tanh_scores_f32_fn la_tanh_scores_f32_for(void);
__attribute__((visibility("hidden"))) la_tanh_scores_f64_fn la_tanh_scores_f64_for(void);
__attribute__((visibility("hidden"))) void la_vtanh_row_f32(const float *x, float *y, size_t n);
__attribute__((visibility("hidden"))) void la_vtanh_row_f64(const double *x, double *y, size_t n);

#endif

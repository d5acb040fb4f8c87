/* vexp.h — the exponential of softmax, vectorized: y = exp(x - shift) over a row, with
 * the row's sum. Internal to the library (not installed). */
#ifndef LA_VEXP_H
#define LA_VEXP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* la_vexp_f32 and la_vexp_f64 below are exp(x) as branch-free inline code that the
 * compiler vectorizes inside a loop; the softmax rows (vexp.c) and the elu+1 feature
 * map (featuremap.c) share them. */

/* a·b + c: one rounding where the target has FMA, two otherwise. */
#ifdef __FMA__
#define MULADD_F32(a, b, c) fmaf((a), (b), (c))
#define MULADD_F64(a, b, c) fma((a), (b), (c))
#else
#define MULADD_F32(a, b, c) ((a) * (b) + (c))
#define MULADD_F64(a, b, c) ((a) * (b) + (c))
#endif

/* cond ? a : b without a branch. A plain ?: becomes control flow in GCC's IR, and with
 * -ftrapping-math (the default) the float arithmetic moved into its arms then blocks
 * if-conversion, so the loop would not vectorize. */
static inline float select_f32(int cond, float a, float b)
{
    union {
        float f;
        uint32_t u;
    } ua = {a}, ub = {b}, r;
    uint32_t mask = (uint32_t)0 - (uint32_t)(cond != 0);
    r.u = (ua.u & mask) | (ub.u & ~mask);
    return r.f;
}

/* exp(x) in float32, after Cephes' expf:
 *   n = round(x / ln 2), r = x - n·ln 2 (ln 2 split in two so r is exact), |r| <= ln2/2,
 *   exp(r) ≈ 1 + r + r²·P(r) with P of degree 5 (Cephes' minimax coefficients),
 *   exp(x) = 2ⁿ · exp(r), 2ⁿ built in the exponent bits.
 * x is clamped to [-87.3, 88.3] so 2ⁿ stays a normal float; below -87.3 the result is 0
 * (also for x = -inf). NaN in gives a meaningless value: the kernels never pass NaN.
 * Maximal relative error against exp(): 8.2e-8 (tests/attention/test_softmax.c holds it < 2e-7). */
static inline float la_vexp_f32(float x)
{
    const float lo = -87.3f, hi = 88.3f;
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    const float round_magic = 12582912.0f; /* 1.5·2²³: (y + magic) - magic rounds y */
    float xc = select_f32(x > hi, hi, x);
    xc = select_f32(xc < lo, lo, xc);
    /* n = round(x / ln 2) */
    float n = (xc * log2e + round_magic) - round_magic;
    /* r = x - n·ln 2 */
    float r = MULADD_F32(-n, ln2_hi, xc);
    r = MULADD_F32(-n, ln2_lo, r);
    /* exp(r) = 1 + r + r²·P(r) */
    float poly = 1.9875691500e-4f;
    poly = MULADD_F32(poly, r, 1.3981999507e-3f);
    poly = MULADD_F32(poly, r, 8.3334519073e-3f);
    poly = MULADD_F32(poly, r, 4.1665795894e-2f);
    poly = MULADD_F32(poly, r, 1.6666665459e-1f);
    poly = MULADD_F32(poly, r, 5.0000001201e-1f);
    float er = MULADD_F32(poly, r * r, r) + 1.0f;
    /* 2ⁿ: n in [-126, 127], so n + 127 is a normal biased exponent (shifted unsigned: a
     * NaN x makes n anything, and its lane is NaN either way) */
    union {
        uint32_t u;
        float f;
    } two_n = {.u = ((uint32_t)(int32_t)n + 127u) << 23};
    float result = er * two_n.f;
    return select_f32(x < lo, 0.0f, result);
}

/* cond ? a : b without a branch, float64 (see select_f32). */
static inline double select_f64(int cond, double a, double b)
{
    union {
        double f;
        uint64_t u;
    } ua = {a}, ub = {b}, r;
    uint64_t mask = (uint64_t)0 - (uint64_t)(cond != 0);
    r.u = (ua.u & mask) | (ub.u & ~mask);
    return r.f;
}

/* exp(x) in float64, the same scheme as la_vexp_f32:
 *   n = round(x / ln 2) by the 1.5·2⁵² trick, which also leaves n in the low bits of t,
 *   r = x - n·ln 2 with fdlibm's two-part ln 2 (ln2_hi·n is exact), |r| <= ln2/2,
 *   exp(r) by its Taylor series to degree 13 (truncation r¹⁴/14! < 5e-18),
 *   2ⁿ = (n + 1023) << 52 built with 64-bit integer lane operations (AVX2 has no
 *   double -> int64 conversion, shifts and adds it has).
 * x is clamped to [-708, 709]; below -708 (exp < 3.3e-308) the result is 0, also for
 * -inf. Maximal relative error 1.4e-16 (against expl, 8·10⁶ points). */
static inline double la_vexp_f64(double x)
{
    const double lo = -708.0, hi = 709.0;
    const double log2e = 1.4426950408889634;
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double round_magic = 6755399441055744.0; /* 1.5·2⁵² */
    double xc = select_f64(x > hi, hi, x);
    xc = select_f64(xc < lo, lo, xc);
    /* n = round(x / ln 2); t holds 2⁵¹ + n in its low mantissa bits */
    union {
        double f;
        uint64_t u;
    } t = {xc * log2e + round_magic};
    double n = t.f - round_magic;
    /* r = x - n·ln 2 */
    double r = MULADD_F64(-n, ln2_hi, xc);
    r = MULADD_F64(-n, ln2_lo, r);
    /* exp(r) = Σ_{k=0}^{13} r^k / k!, Horner */
    double poly = 1.0 / 6227020800.0; /* 1/13! */
    poly = MULADD_F64(poly, r, 1.0 / 479001600.0);
    poly = MULADD_F64(poly, r, 1.0 / 39916800.0);
    poly = MULADD_F64(poly, r, 1.0 / 3628800.0);
    poly = MULADD_F64(poly, r, 1.0 / 362880.0);
    poly = MULADD_F64(poly, r, 1.0 / 40320.0);
    poly = MULADD_F64(poly, r, 1.0 / 5040.0);
    poly = MULADD_F64(poly, r, 1.0 / 720.0);
    poly = MULADD_F64(poly, r, 1.0 / 120.0);
    poly = MULADD_F64(poly, r, 1.0 / 24.0);
    poly = MULADD_F64(poly, r, 1.0 / 6.0);
    poly = MULADD_F64(poly, r, 0.5);
    poly = MULADD_F64(poly, r, 1.0);
    double er = MULADD_F64(poly, r, 1.0);
    /* 2ⁿ: (2⁵¹ + n) << 52 wraps to n << 52; n in [-1021, 1023] */
    union {
        uint64_t u;
        double f;
    } two_n = {.u = (t.u << 52) + ((uint64_t)1023 << 52)};
    double result = er * two_n.f;
    return select_f64(x < lo, 0.0, result);
}

/* x[c] = exp(x[c] - shift) for c < n, in place; returns Σ_c x[c] (summed in an order
 * fixed at compile time, so the same inputs always give the same bits).
 * float32: a polynomial exp (Cephes' expf polynomial after Cody–Waite reduction),
 * vectorized with `omp simd`; maximal relative error 8.2e-8 over [-87, 88] (tested
 * < 2e-7 against exp() in tests/attention/test_softmax.c), exactly 0 below -87.3 and for -inf.
 * float64: the same scheme with a degree-13 Taylor polynomial, vectorized (4 lanes with
 * AVX2); maximal relative error 1.4e-16 against expl over [-708, 709] (tested < 1e-15
 * against exp()), exactly 0 below -708 and for -inf.
 * Hidden explicitly: GCC exports the ifunc that target_clones makes whatever
 * -fvisibility says. */
__attribute__((visibility("hidden"))) float la_exp_shift_sum_f32(float *x, size_t n, float shift);
__attribute__((visibility("hidden"))) double la_exp_shift_sum_f64(double *x, size_t n,
                                                                  double shift);

/* One row of the softmax backward's block, in one pass: s[c] = P = exp(s[c]·scale − shift)
 * (the product rounded, then the shift subtracted, then la_exp_shift_sum's exp: the bits
 * of those three steps apart) and ds[c] = P·(ds[c] − d)·scale (dS from dP), c < n. */
__attribute__((visibility("hidden"))) void
la_softmax_grad_row_f32(float *s, float *ds, size_t n, float scale, float shift, float d);
__attribute__((visibility("hidden"))) void
la_softmax_grad_row_f64(double *s, double *ds, size_t n, double scale, double shift, double d);

#endif

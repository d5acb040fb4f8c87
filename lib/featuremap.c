/* featuremap.c — φ of linear attention in float and double: elu+1 and relu.
 *
 * elu(x) + 1 = x + 1 (x >= 0), exp(x) (x < 0), computed with exp directly, so φ stays
 * positive where elu(x) = exp(x) - 1 would round to -1 and φ to 0 (below x ≈ -17 in
 * float32).
 *
 * float32: glibc's expf is scalar, and with random signs the branch x >= 0 mispredicts
 * half the time; φ(Q) and φ(K) then cost more than all the GEMMs of non-causal linear
 * attention at d = 64. So the float path computes exp in double precision with a
 * branch-free polynomial the compiler vectorises, and rounds once to float: relative
 * error of the double result about 1e-14, so the float result is the correctly rounded
 * exp(x) except when exp(x) lies within ~1e-14 of a rounding boundary (then it may be
 * one ulp off) — the same as glibc's expf, which is correctly rounded up to 0.502 ulp.
 * Subnormal results come out right (the double is normal, the one rounding to float
 * makes the subnormal), and exp(x) is 0 only where expf is (x below ≈ -103.97). */
#include "linear_internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* a·b + c: one rounding and one instruction where the target has FMA, two otherwise
 * (never a libm call). Either way the polynomial below is accurate to ~1e-14. */
#ifdef __FMA__
#define MULADD(a, b, c) fma((a), (b), (c))
#else
#define MULADD(a, b, c) ((a) * (b) + (c))
#endif

/* exp(x) for x in [-110, 0] in double precision:
 *   n = round(x / ln 2), r = x - n·ln 2 (ln 2 in two parts, n·ln2_hi exact), |r| <= 0.35,
 *   exp(r) by its Taylor polynomial of degree 11 (remainder below 7e-15 relative),
 *   exp(x) = 2ⁿ·exp(r) with 2ⁿ built in the exponent bits (n >= -159: a normal double).
 * No clamping in here: a float select under GCC's default -ftrapping-math keeps a
 * branch and stops vectorisation, so the caller clamps in integer arithmetic. */
static inline double exp_small_negative(double x)
{
    const double log2e = 1.4426950408889634074;
    const double ln2_hi = 6.93147180369123816490e-01; /* fdlibm: low 32 bits zero */
    const double ln2_lo = 1.90821492927058770002e-10;
    const double round_shift = 0x1.8p52; /* y + 1.5·2⁵² rounds y to an integer */
    /* n = round(x / ln 2), also held in the low mantissa bits of t */
    double t = MULADD(x, log2e, round_shift);
    double n = t - round_shift;
    /* r = x - n·ln 2 */
    double r = MULADD(-n, ln2_hi, x);
    r = MULADD(-n, ln2_lo, r);
    /* exp(r) = Σ_{i<=11} rⁱ / i!, Horner */
    double poly = 1.0 / 39916800.0;
    poly = MULADD(poly, r, 1.0 / 3628800.0);
    poly = MULADD(poly, r, 1.0 / 362880.0);
    poly = MULADD(poly, r, 1.0 / 40320.0);
    poly = MULADD(poly, r, 1.0 / 5040.0);
    poly = MULADD(poly, r, 1.0 / 720.0);
    poly = MULADD(poly, r, 1.0 / 120.0);
    poly = MULADD(poly, r, 1.0 / 24.0);
    poly = MULADD(poly, r, 1.0 / 6.0);
    poly = MULADD(poly, r, 0.5);
    poly = MULADD(poly, r, 1.0);
    poly = MULADD(poly, r, 1.0);
    /* 2ⁿ: t's bits are those of 1.5·2⁵² plus n, whose own low 12 bits are zero, so
     * bits << 52 is n << 52 (two's complement); add the exponent bias */
    uint64_t bits;
    memcpy(&bits, &t, sizeof bits);
    bits = (bits << 52) + ((uint64_t)1023 << 52);
    double two_n;
    memcpy(&two_n, &bits, sizeof two_n);
    return poly * two_n;
}

void la_feature_map_f32(la_feature_map fm, const float *x, float *out, size_t n)
{
    if (fm == LA_FEATURE_RELU) {
        for (size_t i = 0; i < n; i++)
            out[i] = x[i] > 0 ? x[i] : 0.0f;
        return;
    }
    /* Both sides computed for every element, then blended by an integer mask: no branch
     * and no float select, so the loop vectorises (8 lanes with AVX2). Integer steps on
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
        float below = (float)exp_small_negative((double)neg);
        float above = xi + 1.0f;
        uint32_t below_bits, above_bits;
        memcpy(&below_bits, &below, sizeof below_bits);
        memcpy(&above_bits, &above, sizeof above_bits);
        uint32_t take_below = 0u - ((x_bits >> 31) & (uint32_t)(mag <= mag_inf));
        uint32_t phi_bits = (below_bits & take_below) | (above_bits & ~take_below);
        memcpy(&out[i], &phi_bits, sizeof phi_bits);
    }
}

/* float64 is the accuracy path, not the fast one: libm's exp, one element at a time. */
void la_feature_map_f64(la_feature_map fm, const double *x, double *out, size_t n)
{
    if (fm == LA_FEATURE_RELU) {
        for (size_t i = 0; i < n; i++)
            out[i] = x[i] > 0 ? x[i] : 0.0;
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] >= 0 ? x[i] + 1.0 : exp(x[i]);
}

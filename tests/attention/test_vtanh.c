/* test_vtanh.c — the vectorized tanh of the additive scores (lib/cpu/vtanh.c), both paths
 * (AVX-512 where the CPU has it, and the portable loops, forced with la_avx512_enable):
 *   ulps_over_the_range  float32: a stride through every bit pattern (every 61st; the quick
 *                        profile every 997th) against libm's tanh in double rounded to
 *                        float, at most 2 ulp; float64: random bit patterns and uniform
 *                        draws in [-40, 40] against tanhl rounded to double, at most 3 ulp;
 *   special_values       ±0 keep their sign, ±inf and |x| past 9.1 (float32) or 19.1
 *                        (float64) give ±1 exactly, NaN gives NaN, subnormals themselves,
 *                        the neighbours of the 0.625 switch within the bound;
 *   tanh_scores          s_j = Σ_a w_a·tanh(x_a + Cᵀ_aj) against the float64 sums of libm's
 *                        tanh, n from 1 to 100 keys (tails off the vector width), d_a 1 to
 *                        7, Cᵀ's rows strided, relative to Σ|w|: float32 1e-6, float64
 *                        1e-14;
 *   tanh_exp_scores      the exponential form of those scores, over the whole range it
 *                        takes, to 1e-6 (float32) and 1e-14 (float64) of Σ|w|. */
#include "../testutil.h"
#include "core/internal.h" /* la_avx512_enable */
#include "cpu/simd_avx512.h"
#include "cpu/vtanh.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 4096 };

/* Distance in units in the last place between two finite values of one type: the
 * distance of their bits in the order of the values. */
static double ulps_f32(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    const int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
    const int64_t ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return fabs((double)(oa - ob));
}

static double ulps_f64(double a, double b)
{
    int64_t ia, ib;
    memcpy(&ia, &a, 8), memcpy(&ib, &b, 8);
    const long double oa = ia < 0 ? (long double)INT64_MIN - ia : ia;
    const long double ob = ib < 0 ? (long double)INT64_MIN - ib : ib;
    return (double)fabsl(oa - ob);
}

/* The worst ulp distance over n inputs on the current path; fails on a NaN where libm
 * gives none (or the reverse). */
static double worst_f32(const float *x, size_t n, float *y, float *where)
{
    la_vtanh_row_f32(x, y, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const float want = (float)tanh((double)x[i]);
        if (isnan(want) != isnan(y[i]))
            fail_msg("tanhf(%a): %a, libm %a", (double)x[i], (double)y[i], (double)want);
        if (isnan(want)) continue;
        const double u = ulps_f32(y[i], want);
        if (u > worst) worst = u, *where = x[i];
    }
    return worst;
}

static double worst_f64(const double *x, size_t n, double *y, double *where)
{
    la_vtanh_row_f64(x, y, n);
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        const double want = (double)tanhl((long double)x[i]);
        if (isnan(want) != isnan(y[i])) fail_msg("tanh(%a): %a, libm %a", x[i], y[i], want);
        if (isnan(want)) continue;
        const double u = ulps_f64(y[i], want);
        if (u > worst) worst = u, *where = x[i];
    }
    return worst;
}

static void ulps_over_the_range(void **state)
{
    (void)state;
    const bool avx512 = la_avx512_usable();
    float *x = tu_f32(BATCH), *y = tu_f32(BATCH);
    double *xd = tu_f64(BATCH), *yd = tu_f64(BATCH);
    tu_rng r = tu_rng_for("ulps_over_the_range");
    for (int path = 0; path < 1 + avx512; path++) {
        la_avx512_enable(path == 1); /* 0: portable; 1: AVX-512 (when the CPU has it) */
        const uint64_t stride = tu_quick() ? 997 : 61;
        double worst = 0;
        float at = 0;
        size_t fill = 0, count = 0;
        for (uint64_t bits = 0; bits < ((uint64_t)1 << 32); bits += stride) {
            const uint32_t b = (uint32_t)bits;
            memcpy(&x[fill++], &b, 4);
            if (fill == BATCH) {
                float where = 0;
                const double w = worst_f32(x, fill, y, &where);
                if (w > worst) worst = w, at = where;
                count += fill, fill = 0;
            }
        }
        if (fill) {
            float where = 0;
            const double w = worst_f32(x, fill, y, &where);
            if (w > worst) worst = w, at = where;
        }
        printf("  float32 %s: %zu inputs, worst %.0f ulp at %a\n", path ? "avx512" : "portable",
               count + fill, worst, (double)at);
        if (worst > 2)
            fail_msg("float32 %s: %.0f ulp at %a", path ? "avx512" : "portable", worst, (double)at);
        double worst_d = 0, at_d = 0;
        const size_t rounds = tu_quick() ? 64 : 512;
        for (size_t round = 0; round < rounds; round++) {
            for (size_t i = 0; i < BATCH; i++) {
                if (round % 2 == 0) {
                    const uint64_t b = tu_next(&r);
                    memcpy(&xd[i], &b, 8);
                } else {
                    xd[i] = (tu_uniform(&r) * 2 - 1) * 40 * pow(10, -(double)(round % 14));
                }
            }
            double where = 0;
            const double w = worst_f64(xd, BATCH, yd, &where);
            if (w > worst_d) worst_d = w, at_d = where;
        }
        printf("  float64 %s: %zu inputs, worst %.0f ulp at %a\n", path ? "avx512" : "portable",
               rounds * BATCH, worst_d, at_d);
        if (worst_d > 3)
            fail_msg("float64 %s: %.0f ulp at %a", path ? "avx512" : "portable", worst_d, at_d);
    }
    la_avx512_enable(true);
    free(x), free(y), free(xd), free(yd);
}

static void special_values(void **state)
{
    (void)state;
    const bool avx512 = la_avx512_usable();
    for (int path = 0; path < 1 + avx512; path++) {
        la_avx512_enable(path == 1);
        const float xs[] = {0.0f,       -0.0f,
                            INFINITY,   -INFINITY,
                            1e30f,      -1e30f,
                            9.1f,       -9.1f,
                            3.4e38f,    0x1p-149f,
                            -0x1p-149f, 0x1p-127f,
                            1e-30f,     nextafterf(0.625f, 0),
                            0.625f,     nextafterf(0.625f, 1),
                            NAN};
        const float want[] = {0.0f,   -0.0f, 1.0f, -1.0f,     1.0f,       -1.0f,
                              1.0f,   -1.0f, 1.0f, 0x1p-149f, -0x1p-149f, 0x1p-127f,
                              1e-30f, NAN,   NAN,  NAN,       NAN};
        const size_t n = sizeof xs / sizeof xs[0];
        float y[sizeof xs / sizeof xs[0]];
        la_vtanh_row_f32(xs, y, n);
        for (size_t i = 0; i < n; i++) {
            if (isnan(xs[i])) {
                if (!isnan(y[i])) fail_msg("tanhf(NaN) = %a", (double)y[i]);
            } else if (isnan(want[i])) { /* the switch: within the bound */
                if (ulps_f32(y[i], (float)tanh((double)xs[i])) > 2)
                    fail_msg("tanhf(%a) = %a", (double)xs[i], (double)y[i]);
            } else if (memcmp(&y[i], &want[i], 4) != 0) {
                fail_msg("%s tanhf(%a) = %a, want %a", path ? "avx512" : "portable", (double)xs[i],
                         (double)y[i], (double)want[i]);
            }
        }
        const double xd[] = {0.0,  -0.0,  INFINITY,  -INFINITY,  1e300,  -1e300,
                             19.1, -19.1, 0x1p-1074, -0x1p-1074, 1e-300, NAN};
        const double wd[] = {0.0, -0.0, 1.0,       -1.0,       1.0,    -1.0,
                             1.0, -1.0, 0x1p-1074, -0x1p-1074, 1e-300, NAN};
        const size_t nd = sizeof xd / sizeof xd[0];
        double yd[sizeof xd / sizeof xd[0]];
        la_vtanh_row_f64(xd, yd, nd);
        for (size_t i = 0; i < nd; i++) {
            if (isnan(xd[i])) {
                if (!isnan(yd[i])) fail_msg("tanh(NaN) = %a", yd[i]);
            } else if (memcmp(&yd[i], &wd[i], 8) != 0) {
                fail_msg("%s tanh(%a) = %a, want %a", path ? "avx512" : "portable", xd[i], yd[i],
                         wd[i]);
            }
        }
    }
    la_avx512_enable(true);
}

static void tanh_scores(void **state)
{
    (void)state;
    const bool avx512 = la_avx512_usable();
    tu_rng r = tu_rng_for("tanh_scores");
    enum { NMAX = 100, DA = 7, LDC = 101 };
    double x[DA], ct[DA * LDC], w[DA], s[NMAX];
    float x32[DA], ct32[DA * LDC], w32[DA], s32[NMAX];
    for (int path = 0; path < 1 + avx512; path++) {
        la_avx512_enable(path == 1);
        const la_tanh_scores_f32_fn scores32 = la_tanh_scores_f32_for();
        const la_tanh_scores_f64_fn scores64 = la_tanh_scores_f64_for();
        for (size_t n = 1; n <= NMAX; n++) {
            const size_t da = 1 + n % DA; /* 1 .. 7 rows of Cᵀ */
            tu_fill_normal(&r, x, da, 2), tu_fill_normal(&r, ct, da * LDC, 2);
            tu_fill_normal(&r, w, da, 1);
            tu_to_f32(x, x32, da), tu_to_f32(ct, ct32, da * LDC), tu_to_f32(w, w32, da);
            scores64(x, ct, LDC, w, da, s, n);
            scores32(x32, ct32, LDC, w32, da, s32, n);
            for (size_t j = 0; j < n; j++) {
                double want = 0, want32 = 0, scale = 0;
                for (size_t a = 0; a < da; a++) {
                    want += w[a] * tanh(x[a] + ct[a * LDC + j]);
                    want32 += (double)w32[a] * tanh((double)(x32[a] + ct32[a * LDC + j]));
                    scale += fabs(w[a]);
                }
                if (!(fabs(s[j] - want) <= 1e-14 * scale))
                    fail_msg("%s float64 n=%zu d_a=%zu key %zu: %.17g, want %.17g",
                             path ? "avx512" : "portable", n, da, j, s[j], want);
                if (!(fabs((double)s32[j] - want32) <= 1e-6 * scale))
                    fail_msg("%s float32 n=%zu d_a=%zu key %zu: %.9g, want %.9g",
                             path ? "avx512" : "portable", n, da, j, (double)s32[j], want32);
            }
        }
    }
    la_avx512_enable(true);
}

/* ±edge a third of the time, else uniform in [-edge, edge]. */
static double edge_or_inside(tu_rng *r, double edge)
{
    const double u = tu_uniform(r);
    return u < 1.0 / 6 ? -edge : u < 1.0 / 3 ? edge : edge * (2 * tu_uniform(r) - 1);
}

/* The exponential form (la_tanh_exp_scores_*_for): the same scores from e^{2x} and e^{2c}
 * (vtanh.h), x and c drawn over the whole range it takes (|x|, |c| <= 20 in float32, 170
 * in float64; a third of the entries at the edges, where e^{2x}·e^{2c} runs from e^-80 to
 * e^80 (e^-680 to e^680) and x + c = 0 multiplies e^40 by e^-40), against the sums of
 * libm's tanh (float64; tanhl for float64) of x + c taken exactly, relative to Σ|w|:
 * float32 1e-6, float64 1e-14. */
static void tanh_exp_scores(void **state)
{
    (void)state;
    const bool avx512 = la_avx512_usable();
    tu_rng r = tu_rng_for("tanh_exp_scores");
    enum { NMAX = 100, DA = 7, LDC = 101 };
    double x[DA], ct[DA * LDC], w[DA], ex64[DA], ect64[DA * LDC], s64[NMAX];
    float x32[DA], ct32[DA * LDC], w32[DA], ex[DA], ect[DA * LDC], s32[NMAX];
    for (int path = 0; path < 1 + avx512; path++) {
        la_avx512_enable(path == 1);
        const la_tanh_exp_scores_f32_fn scores = la_tanh_exp_scores_f32_for();
        const la_tanh_exp_scores_f64_fn scores64 = la_tanh_exp_scores_f64_for();
        for (size_t n = 1; n <= NMAX; n++) {
            const size_t da = 1 + n % DA;
            tu_fill_normal(&r, w, da, 1);
            for (size_t e = 0; e < da; e++)
                x[e] = edge_or_inside(&r, LA_TANH_EXP_MAX_F32);
            for (size_t e = 0; e < da * LDC; e++)
                ct[e] = edge_or_inside(&r, LA_TANH_EXP_MAX_F32);
            tu_to_f32(x, x32, da), tu_to_f32(ct, ct32, da * LDC), tu_to_f32(w, w32, da);
            float w_sum = 0;
            for (size_t a = 0; a < da; a++) {
                ex[a] = expf(2 * x32[a]);
                w_sum += w32[a];
            }
            for (size_t e = 0; e < da * LDC; e++)
                ect[e] = expf(2 * ct32[e]);
            scores(ex, ect, LDC, w32, w_sum, da, s32, n);
            for (size_t j = 0; j < n; j++) {
                double want = 0, scale = 0;
                for (size_t a = 0; a < da; a++) {
                    want += (double)w32[a] * tanh((double)x32[a] + (double)ct32[a * LDC + j]);
                    scale += fabs((double)w32[a]);
                }
                if (!(fabs((double)s32[j] - want) <= 1e-6 * scale))
                    fail_msg("%s float32 n=%zu d_a=%zu key %zu: %.9g, want %.9g (seed %llu)",
                             path ? "avx512" : "portable", n, da, j, (double)s32[j], want,
                             (unsigned long long)tu_seed());
            }
            /* float64 over its own range */
            for (size_t e = 0; e < da; e++)
                x[e] = edge_or_inside(&r, LA_TANH_EXP_MAX_F64);
            for (size_t e = 0; e < da * LDC; e++)
                ct[e] = edge_or_inside(&r, LA_TANH_EXP_MAX_F64);
            double w_sum64 = 0;
            for (size_t a = 0; a < da; a++) {
                ex64[a] = exp(2 * x[a]);
                w_sum64 += w[a];
            }
            for (size_t e = 0; e < da * LDC; e++)
                ect64[e] = exp(2 * ct[e]);
            scores64(ex64, ect64, LDC, w, w_sum64, da, s64, n);
            for (size_t j = 0; j < n; j++) {
                long double want = 0;
                double scale = 0;
                for (size_t a = 0; a < da; a++) {
                    want +=
                        (long double)w[a] * tanhl((long double)x[a] + (long double)ct[a * LDC + j]);
                    scale += fabs(w[a]);
                }
                if (!(fabs(s64[j] - (double)want) <= 1e-14 * scale))
                    fail_msg("%s float64 n=%zu d_a=%zu key %zu: %.17g, want %.17g (seed %llu)",
                             path ? "avx512" : "portable", n, da, j, s64[j], (double)want,
                             (unsigned long long)tu_seed());
            }
        }
    }
    la_avx512_enable(true);
}

int main(void)
{
    tu_init("test_vtanh");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ulps_over_the_range),
        cmocka_unit_test(special_values),
        cmocka_unit_test(tanh_scores),
        cmocka_unit_test(tanh_exp_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

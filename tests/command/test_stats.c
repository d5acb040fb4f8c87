/* test_stats.c — the uncertainty the experiments report (experiments/common/stats.c): the
 * quartiles of repeated timings, the log-log fit with its bootstrap interval and R², the
 * crossing of two curves with its bracket, the speed-up range; each against values
 * worked out by hand or plain loops, and none accepting a NaN. Also the interleaved timer
 * (timer.c) that gives the repetitions. */
#include "../testutil.h"

#include "../../experiments/common/stats.h"
#include "../../experiments/common/timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Type-7 quartiles of small samples worked out by hand: [1, 2, 3, 4] has q1 = 1 + 0.75,
 * median 2.5, q3 = 3 + 0.25; a single value is every quantile. The input is sorted in
 * place; a NaN anywhere is refused and leaves the output untouched. */
static void summary_quartiles(void **state)
{
    (void)state;
    double x[] = {4, 1, 3, 2};
    stats_summary s;
    assert_int_equal(stats_summarize(x, 4, &s), 0);
    assert_true(s.min == 1 && s.max == 4 && s.median == 2.5 && s.q1 == 1.75 && s.q3 == 3.25);
    assert_true(x[0] == 1 && x[3] == 4);
    double one[] = {5};
    assert_int_equal(stats_summarize(one, 1, &s), 0);
    assert_true(s.min == 5 && s.q1 == 5 && s.median == 5 && s.q3 == 5 && s.max == 5);
    double nan_in[] = {1, NAN, 3};
    stats_summary untouched = {-1, -1, -1, -1, -1, 99};
    s = untouched;
    assert_int_equal(stats_summarize(nan_in, 3, &s), -1);
    assert_int_equal(stats_summarize(x, 0, &s), -1);
    assert_memory_equal(&s, &untouched, sizeof s);

    /* against a plain-loop reference on random data: rank h = p·(n−1) by counting */
    tu_rng r = tu_rng_for("quartiles");
    double y[37], sorted[37];
    for (int i = 0; i < 37; i++)
        y[i] = tu_normal(&r);
    memcpy(sorted, y, sizeof y);
    for (int i = 0; i < 37; i++) /* insertion sort, the reference's own */
        for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            double t = sorted[j];
            sorted[j] = sorted[j - 1], sorted[j - 1] = t;
        }
    assert_int_equal(stats_summarize(y, 37, &s), 0);
    assert_true(s.q1 == sorted[9] && s.median == sorted[18] && s.q3 == sorted[27]);
}

/* y = a·x^e exactly: the fit returns e and a, R² = 1 and an interval of width ~0 around
 * e (every resample lies on the same line). */
static void fit_exact_power_law(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("fit-exact");
    const double e = 1 + tu_uniform(&r), a = 1e-9 * (0.5 + tu_uniform(&r));
    double x[10], y[10];
    for (int i = 0; i < 10; i++) {
        x[i] = 128.0 * pow(2, i);
        y[i] = a * pow(x[i], e);
    }
    stats_fit f;
    assert_int_equal(stats_fit_loglog(x, y, 10, STATS_BOOTSTRAP_SEED, &f), 0);
    assert_true(fabs(f.exponent - e) < 1e-12);
    assert_true(fabs(f.prefactor - a) < 1e-9 * a);
    assert_true(fabs(f.r_squared - 1) < 1e-12);
    assert_true(f.ci_lo <= f.exponent + 1e-12 && f.exponent <= f.ci_hi + 1e-12);
    assert_true(f.ci_hi - f.ci_lo < 1e-9);
    assert_int_equal(f.points, 10);
    assert_int_equal(f.resamples, STATS_BOOTSTRAP_RESAMPLES);
    assert_true(f.x_min == 128 && f.x_max == 128.0 * 512);
}

/* Ordinary least squares' standard error of the slope, by plain loops. */
static double slope_standard_error(const double *x, const double *y, int n, double slope,
                                   double intercept)
{
    double mx = 0, sxx = 0, ss = 0;
    for (int i = 0; i < n; i++)
        mx += log(x[i]) / n;
    for (int i = 0; i < n; i++) {
        double res = log(y[i]) - (slope * log(x[i]) + intercept);
        sxx += (log(x[i]) - mx) * (log(x[i]) - mx);
        ss += res * res;
    }
    return sqrt(ss / (n - 2) / sxx);
}

static int compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Noisy data (log-normal factors, 20% spread): R² below 1, the interval contains the
 * fitted exponent and is about as wide as the textbook ±1.96 standard errors, and the same
 * seed gives the same interval. The width's ratio to the textbook's is random in the data:
 * over 20,000 draws of 24 points it was 0.98 ± 0.11, with a long lower tail (below 0.6 in
 * 4·10⁻⁴ of them, 0.54 at least). So the check is on the median of five draws, within a
 * factor of two of 1: over 4,000 such medians, 0.98 ± 0.06, all in [0.77, 1.16]. */
static void fit_noisy_data(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("fit-noisy");
    enum { DRAWS = 5 };
    double ratio[DRAWS];
    for (int draw = 0; draw < DRAWS; draw++) {
        double x[24], y[24];
        for (int i = 0; i < 24; i++) {
            x[i] = 100.0 * pow(1.3, i);
            y[i] = 1e-6 * x[i] * x[i] * exp(0.2 * tu_normal(&r));
        }
        stats_fit f, again;
        assert_int_equal(stats_fit_loglog(x, y, 24, STATS_BOOTSTRAP_SEED, &f), 0);
        assert_int_equal(stats_fit_loglog(x, y, 24, STATS_BOOTSTRAP_SEED, &again), 0);
        assert_true(f.ci_lo == again.ci_lo && f.ci_hi == again.ci_hi);
        assert_true(f.r_squared < 1 && f.r_squared > 0.9);
        assert_true(f.ci_lo < f.exponent && f.exponent < f.ci_hi);
        const double se = slope_standard_error(x, y, 24, f.exponent, log(f.prefactor));
        const double width = f.ci_hi - f.ci_lo;
        assert_true(width > 1e-3); /* wider than the exact law's */
        ratio[draw] = width / (2 * 1.96 * se);
    }
    qsort(ratio, DRAWS, sizeof ratio[0], compare_doubles);
    const double median = ratio[DRAWS / 2];
    if (!(median > 0.5 && median < 2))
        fail_msg("bootstrap interval widths against ±1.96 SE: median ratio %g over %d draws "
                 "(from %g to %g)",
                 median, DRAWS, ratio[0], ratio[DRAWS - 1]);
}

/* Fewer than STATS_MIN_FIT_POINTS usable points, or x all equal: refused, out untouched.
 * NaN, infinite, zero and negative points are not usable: they never pass as data. */
static void fit_refusals(void **state)
{
    (void)state;
    const double x[] = {1, 2, 4, 8, 16, 32}, y[] = {1, 2, 4, 8, 16, 32};
    stats_fit f, untouched;
    memset(&untouched, 0x5a, sizeof untouched);
    f = untouched;
    assert_int_equal(stats_fit_loglog(x, y, 3, 1, &f), -1);
    assert_memory_equal(&f, &untouched, sizeof f);
    assert_int_equal(stats_fit_loglog(x, y, 4, 1, &f), 0);
    assert_int_equal(f.points, 4);

    /* 6 points of which 3 have NaN, inf or 0: 3 usable, refused */
    const double y_bad[] = {1, NAN, 4, INFINITY, 16, 0};
    f = untouched;
    assert_int_equal(stats_fit_loglog(x, y_bad, 6, 1, &f), -1);
    assert_memory_equal(&f, &untouched, sizeof f);
    const double x_bad[] = {NAN, 2, 4, 8, -16, 32};
    assert_int_equal(stats_fit_loglog(x_bad, y, 6, 1, &f), 0);
    assert_int_equal(f.points, 4); /* the NaN and negative x skipped */
    assert_false(isnan(f.exponent) || isnan(f.ci_lo) || isnan(f.ci_hi) || isnan(f.r_squared));

    const double same_x[] = {8, 8, 8, 8, 8};
    f = untouched;
    assert_int_equal(stats_fit_loglog(same_x, y, 5, 1, &f), -1);
    assert_memory_equal(&f, &untouched, sizeof f);
}

/* Power laws cross where the margin log(a/b), linear in log N, is zero: a = 1e-9·N² and
 * b = 1e-6·N cross at N = 1000, between the measured 512 and 1024. Shifted out of the
 * measured range the crossing is reported below or above it, never interpolated. */
static void crossings(void **state)
{
    (void)state;
    double n[6], a[6], b[6];
    for (int i = 0; i < 6; i++) {
        n[i] = 128.0 * pow(2, i); /* 128 .. 4096 */
        a[i] = 1e-9 * n[i] * n[i];
        b[i] = 1e-6 * n[i];
    }
    stats_crossing x;
    assert_int_equal(stats_crossover(n, a, b, 6, &x), 0);
    assert_int_equal(x.where, STATS_CROSS_INSIDE);
    assert_true(fabs(x.n - 1000) < 1e-9 * 1000);
    assert_true(x.lo == 512 && x.hi == 1024);

    for (int i = 0; i < 6; i++)
        b[i] = 1e-8 * n[i]; /* crossing at N = 10 */
    assert_int_equal(stats_crossover(n, a, b, 6, &x), 0);
    assert_int_equal(x.where, STATS_CROSS_BELOW);
    assert_true(x.hi == 128 && isnan(x.lo) && isnan(x.n));

    for (int i = 0; i < 6; i++)
        b[i] = 1e-4 * n[i]; /* crossing at N = 100000 */
    assert_int_equal(stats_crossover(n, a, b, 6, &x), 0);
    assert_int_equal(x.where, STATS_CROSS_ABOVE);
    assert_true(x.lo == 4096 && isnan(x.hi) && isnan(x.n));

    /* a single win (noise at N = 256) is not the crossing; the lasting one at 2048 is */
    const double a2[] = {1, 3, 1, 1, 3, 3}, b2[] = {2, 2, 2, 2, 2, 2};
    assert_int_equal(stats_crossover(n, a2, b2, 6, &x), 0);
    assert_int_equal(x.where, STATS_CROSS_INSIDE);
    assert_true(x.lo == 1024 && x.hi == 2048);

    /* NaN or a non-positive time, or N not increasing: refused */
    const double a_nan[] = {1, 3, NAN, 1, 3, 3}, a_zero[] = {1, 3, 0, 1, 3, 3};
    const double n_down[] = {1, 2, 4, 3, 5, 6};
    assert_int_equal(stats_crossover(n, a_nan, b2, 6, &x), -1);
    assert_int_equal(stats_crossover(n, a_zero, b2, 6, &x), -1);
    assert_int_equal(stats_crossover(n_down, a2, b2, 6, &x), -1);
    assert_int_equal(stats_crossover(n, a2, b2, 0, &x), -1);
}

/* The speed-up a/b: the ratio of the medians, the interquartile ranges' extremes as its
 * range; a NaN or a non-positive quartile is refused. */
static void speedups(void **state)
{
    (void)state;
    double a[] = {6, 2, 4, 5, 3}, b[] = {2, 1, 1.5};
    stats_summary sa, sb;
    assert_int_equal(stats_summarize(a, 5, &sa), 0); /* q1 3, median 4, q3 5 */
    assert_int_equal(stats_summarize(b, 3, &sb), 0); /* q1 1.25, median 1.5, q3 1.75 */
    stats_ratio r;
    assert_int_equal(stats_speedup(&sa, &sb, &r), 0);
    assert_true(fabs(r.ratio - 4 / 1.5) < 1e-15 && fabs(r.lo - 3 / 1.75) < 1e-15 &&
                fabs(r.hi - 5 / 1.25) < 1e-15);
    assert_true(r.lo <= r.ratio && r.ratio <= r.hi);
    stats_summary nan_q = sa, zero_median = sb;
    nan_q.q3 = NAN, zero_median.median = 0;
    assert_int_equal(stats_speedup(&nan_q, &sb, &r), -1);
    assert_int_equal(stats_speedup(&sa, &zero_median, &r), -1);
}

/* The interleaved timer: after one warm-up of each body, rounds call each body still
 * short of its rule once, in order (1, 2, 3, 1, 2, 3, ...); a body that fails leaves the
 * rounds with its status and the others go on. */
typedef struct {
    int id, calls, fail_at;
    int *log, *n_log;
} logged;

static int log_call(void *ctx)
{
    logged *l = ctx;
    l->log[(*l->n_log)++] = l->id;
    return ++l->calls == l->fail_at ? 9 : 0;
}

static void interleaved_timer(void **state)
{
    (void)state;
    int log[64], n_log = 0;
    logged bodies[3] = {{1, 0, 0, log, &n_log}, {2, 0, 0, log, &n_log}, {3, 0, 3, log, &n_log}};
    timer_body fns[3] = {log_call, log_call, log_call};
    void *ctxs[3] = {&bodies[0], &bodies[1], &bodies[2]};
    timer_result t[3];
    int status[3];
    assert_int_equal(
        timer_run_interleaved(3, fns, ctxs, &(timer_rule){4, 1000, 0, INFINITY}, t, status), 0);
    /* warm-ups 1 2 3; rounds 1 2 3 twice (3 fails at its third call); then 1 2 twice */
    const int expected[] = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 1, 2};
    assert_int_equal(n_log, sizeof expected / sizeof expected[0]);
    assert_memory_equal(log, expected, sizeof expected);
    assert_true(status[0] == 0 && status[1] == 0 && status[2] == 9);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(t[i].reps, 4);
        assert_true(t[i].min_s <= t[i].q1_s && t[i].q1_s <= t[i].median_s &&
                    t[i].median_s <= t[i].q3_s && t[i].q3_s <= t[i].max_s && t[i].min_s >= 0);
    }
}

int main(void)
{
    tu_init("test_stats");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summary_quartiles), cmocka_unit_test(fit_exact_power_law),
        cmocka_unit_test(fit_noisy_data),    cmocka_unit_test(fit_refusals),
        cmocka_unit_test(crossings),         cmocka_unit_test(speedups),
        cmocka_unit_test(interleaved_timer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

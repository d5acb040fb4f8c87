/* stats.c — spreads, fits with bootstrap intervals, crossings and speed-up ranges.
 * The methods are stated in stats.h. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int positive(double v)
{
    return isfinite(v) && v > 0;
}

/* ---------------------------------------------------------------- spread */

/* The p-quantile (0 <= p <= 1) of sorted[0..n), n >= 1, type 7. */
static double quantile_sorted(const double *sorted, size_t n, double p)
{
    double h = p * (double)(n - 1);
    size_t i = (size_t)floor(h);
    if (i + 1 >= n) return sorted[n - 1];
    return sorted[i] + (h - (double)i) * (sorted[i + 1] - sorted[i]);
}

int stats_summarize(double *x, size_t n, stats_summary *out)
{
    if (n == 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (isnan(x[i])) return -1;
    qsort(x, n, sizeof *x, cmp_double);
    out->n = n;
    out->min = x[0];
    out->max = x[n - 1];
    out->median = quantile_sorted(x, n, 0.5);
    out->q1 = quantile_sorted(x, n, 0.25);
    out->q3 = quantile_sorted(x, n, 0.75);
    return 0;
}

/* ---------------------------------------------------------------- fit */

/* splitmix64: the bootstrap's reproducible draws */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Least squares of ly on lx over the indices idx[0..n) (all of 0..n-1 when idx is NULL):
 * slope and intercept; -1 when the lx are all equal. */
static int least_squares(const double *lx, const double *ly, const size_t *idx, size_t n,
                         double *slope, double *intercept)
{
    double mx = 0, my = 0;
    for (size_t j = 0; j < n; j++) {
        size_t i = idx ? idx[j] : j;
        mx += lx[i], my += ly[i];
    }
    mx /= (double)n, my /= (double)n;
    double sxx = 0, sxy = 0;
    for (size_t j = 0; j < n; j++) {
        size_t i = idx ? idx[j] : j;
        sxx += (lx[i] - mx) * (lx[i] - mx);
        sxy += (lx[i] - mx) * (ly[i] - my);
    }
    if (!(sxx > 0)) return -1;
    *slope = sxy / sxx;
    *intercept = my - *slope * mx;
    return 0;
}

int stats_fit_loglog(const double *x, const double *y, size_t n, uint64_t seed, stats_fit *out)
{
    double *lx = malloc((n ? n : 1) * sizeof *lx), *ly = malloc((n ? n : 1) * sizeof *ly);
    size_t *idx = malloc((n ? n : 1) * sizeof *idx);
    double *slopes = malloc(STATS_BOOTSTRAP_RESAMPLES * sizeof *slopes);
    int rc = -1;
    if (!lx || !ly || !idx || !slopes) goto done;

    /* the usable points, in logs */
    size_t m = 0;
    double x_min = INFINITY, x_max = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        if (!positive(x[i]) || !positive(y[i])) continue;
        lx[m] = log(x[i]), ly[m] = log(y[i]), m++;
        if (x[i] < x_min) x_min = x[i];
        if (x[i] > x_max) x_max = x[i];
    }
    double slope, intercept;
    if (m < STATS_MIN_FIT_POINTS || least_squares(lx, ly, NULL, m, &slope, &intercept) != 0)
        goto done;

    /* R² = 1 − residual / total sum of squares, in log-log space */
    double my = 0, ss_res = 0, ss_tot = 0;
    for (size_t i = 0; i < m; i++)
        my += ly[i];
    my /= (double)m;
    for (size_t i = 0; i < m; i++) {
        double r = ly[i] - (slope * lx[i] + intercept);
        ss_res += r * r;
        ss_tot += (ly[i] - my) * (ly[i] - my);
    }
    double r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;

    /* pairs bootstrap: resample m points with replacement and refit; a resample whose x
     * are all equal has no slope and is drawn again (at most 100 times each) */
    uint64_t s = seed;
    int drawn = 0;
    for (int b = 0; b < STATS_BOOTSTRAP_RESAMPLES; b++) {
        for (int attempt = 0; attempt < 100; attempt++) {
            for (size_t j = 0; j < m; j++)
                idx[j] = (size_t)(next_u64(&s) % m);
            double bs, bi;
            if (least_squares(lx, ly, idx, m, &bs, &bi) == 0) {
                slopes[drawn++] = bs;
                break;
            }
        }
    }
    if (drawn == 0) goto done;
    qsort(slopes, (size_t)drawn, sizeof *slopes, cmp_double);

    out->exponent = slope;
    out->prefactor = exp(intercept);
    out->r_squared = r2;
    out->ci_lo = quantile_sorted(slopes, (size_t)drawn, 0.025);
    out->ci_hi = quantile_sorted(slopes, (size_t)drawn, 0.975);
    out->x_min = x_min, out->x_max = x_max;
    out->points = (int)m;
    out->resamples = drawn;
    rc = 0;
done:
    free(lx), free(ly), free(idx), free(slopes);
    return rc;
}

/* ---------------------------------------------------------------- crossing */

int stats_crossover(const double *n, const double *a, const double *b, size_t count,
                    stats_crossing *out)
{
    if (count == 0) return -1;
    for (size_t i = 0; i < count; i++)
        if (!positive(n[i]) || !positive(a[i]) || !positive(b[i]) || (i && !(n[i] > n[i - 1])))
            return -1;
            /* margin(i) = log(a/b): positive where a is the larger */
#define MARGIN(i) log(a[i] / b[i])
    for (size_t i = 0; i < count; i++) {
        if (!(MARGIN(i) > 0)) continue;
        if (i + 1 < count && !(MARGIN(i + 1) > 0)) continue; /* a single win: noise */
        if (i == 0) {
            *out = (stats_crossing){STATS_CROSS_BELOW, NAN, NAN, n[0]};
            return 0;
        }
        /* log-linear interpolation of the margin to zero between the bracketing points */
        double m0 = MARGIN(i - 1), m1 = MARGIN(i), x0 = log(n[i - 1]), x1 = log(n[i]);
        double x = m1 > m0 ? x0 + (0 - m0) * (x1 - x0) / (m1 - m0) : 0.5 * (x0 + x1);
        *out = (stats_crossing){STATS_CROSS_INSIDE, exp(x), n[i - 1], n[i]};
        return 0;
    }
#undef MARGIN
    *out = (stats_crossing){STATS_CROSS_ABOVE, NAN, n[count - 1], NAN};
    return 0;
}

/* ---------------------------------------------------------------- ratio */

int stats_speedup(const stats_summary *a, const stats_summary *b, stats_ratio *out)
{
    if (!positive(a->median) || !positive(a->q1) || !positive(a->q3) || !positive(b->median) ||
        !positive(b->q1) || !positive(b->q3))
        return -1;
    out->ratio = a->median / b->median;
    out->lo = a->q1 / b->q3;
    out->hi = a->q3 / b->q1;
    return 0;
}

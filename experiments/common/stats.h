/* stats.h — the uncertainty of every number the experiments report: the spread of
 * repeated timings (median, quartiles, min, max), a log-log fit with a bootstrap
 * confidence interval of its exponent and R², where two curves cross with the two
 * measured points that bracket the crossing, and a speed-up as a range.
 *
 * The methods, so a reader can judge the numbers:
 *   quartiles  linear interpolation between order statistics (NumPy's default,
 *              Hyndman-Fan type 7): q1 = x(0.25·(n−1)), q3 = x(0.75·(n−1)).
 *   fit        ordinary least squares of log y = e·log x + c over the points with finite
 *              x, y > 0; R² of that line in log-log space. A fit needs at least
 *              STATS_MIN_FIT_POINTS such points with at least two distinct x: with fewer,
 *              an exponent says nothing (two points always fit exactly).
 *   interval   95% percentile bootstrap of e: STATS_BOOTSTRAP_RESAMPLES resamples of the
 *              points with replacement (pairs bootstrap), each refitted; resamples whose
 *              x are all equal are drawn again; the 2.5th and 97.5th percentiles
 *              (type 7) of the refitted exponents. The generator is splitmix64 from a
 *              fixed seed the caller gives, so a file's interval is reproducible.
 *              With 4 to 6 points the interval is coarse (few distinct resamples):
 *              read it as a lower bound on the uncertainty.
 *   crossing   where curve a (time of one kernel) becomes larger than curve b: the
 *              first measured point where a > b and a > b also at the next point (one
 *              win at small N can be noise), bracketed by it and the measured point
 *              before; the crossing N is where log(a/b) interpolates linearly in log N
 *              to zero between them. When a > b already at the first point the crossing
 *              is below the measured range; when never, above it.
 *   speed-up   a/b as the ratio of the medians, with the range q1(a)/q3(b) ..
 *              q3(a)/q1(b): the interquartile ranges of the repetitions at their least
 *              and most favourable (a lone slow repetition, another process's burst,
 *              does not widen it as a min..max range would).
 * Every function returns an error rather than a number when its input holds a NaN or
 * an infinity in a place it would use. */
#ifndef LA_STATS_H
#define LA_STATS_H

#include <stddef.h>
#include <stdint.h>

enum { STATS_MIN_FIT_POINTS = 4, STATS_BOOTSTRAP_RESAMPLES = 2000 };

/* The fixed seed of the experiments' bootstrap (any seed would do; one is kept so a
 * rerun of the fit on the same points gives the same interval). */
#define STATS_BOOTSTRAP_SEED 20261123u

/* ---------------------------------------------------------------- spread */

typedef struct {
    double median, min, max, q1, q3; /* q1, q3: the 25th and 75th percentiles */
    size_t n;
} stats_summary;

/* The summary of x[0..n), n >= 1, sorting x in place. Returns 0, or -1 (out untouched)
 * when n is 0 or an element is NaN. */
int stats_summarize(double *x, size_t n, stats_summary *out);

/* ---------------------------------------------------------------- fit */

typedef struct {
    double exponent;       /* e in y = prefactor · x^e */
    double prefactor;      /* exp(c) */
    double r_squared;      /* of the log-log line, 1 for an exact power law */
    double ci_lo, ci_hi;   /* 95% bootstrap percentile interval of e */
    double x_min, x_max;   /* the range of the points used */
    int points, resamples; /* points used; bootstrap resamples drawn */
} stats_fit;

/* Fits y = prefactor · x^e over the points of x[0..n), y[0..n) with finite x, y > 0
 * (others are skipped: a skipped or failed measurement recorded as 0 or NaN). Returns
 * 0, or -1 (out untouched) when fewer than STATS_MIN_FIT_POINTS points are usable or
 * their x are all equal. */
int stats_fit_loglog(const double *x, const double *y, size_t n, uint64_t seed, stats_fit *out);

/* ---------------------------------------------------------------- crossing */

typedef enum {
    STATS_CROSS_INSIDE, /* between two measured points: lo < n_cross <= hi */
    STATS_CROSS_BELOW,  /* a > b from the first point: below the measured range */
    STATS_CROSS_ABOVE,  /* a <= b up to the last point: above the measured range */
} stats_where;

typedef struct {
    stats_where where;
    double n;      /* INSIDE: the interpolated crossing; else NAN */
    double lo, hi; /* INSIDE: the bracketing measured N; BELOW: hi = the first N, lo
                    * NAN; ABOVE: lo = the last N, hi NAN */
} stats_crossing;

/* Where a becomes larger than b over the points n[0..count) (increasing), a, b > 0
 * (e.g. a = softmax's time, b = linear's: where linear becomes faster). Returns 0, or
 * -1 when count is 0, n does not increase, or a value is not finite and positive. */
int stats_crossover(const double *n, const double *a, const double *b, size_t count,
                    stats_crossing *out);

/* ---------------------------------------------------------------- ratio */

typedef struct {
    double ratio, lo, hi; /* a.median/b.median, a.q1/b.q3, a.q3/b.q1 */
} stats_ratio;

/* The speed-up of b over a (how many times a's time b's is) from their summaries: the
 * ratio of the medians, with the range of the interquartile ranges at their least and
 * most favourable (it contains the ratio). Returns 0, or -1 when a median or quartile
 * is not finite and positive. */
int stats_speedup(const stats_summary *a, const stats_summary *b, stats_ratio *out);

#endif

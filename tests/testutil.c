/* testutil.c — seeds, random inputs and error measures for the tests. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t run_seed;
static int quick_profile = -1; /* -1: not read yet */

int tu_quick(void)
{
    if (quick_profile < 0) {
        const char *env = getenv("LA_TEST_PROFILE");
        if (!env || !*env || strcmp(env, "full") == 0) {
            quick_profile = 0;
        } else if (strcmp(env, "quick") == 0) {
            quick_profile = 1;
        } else {
            fprintf(stderr, "LA_TEST_PROFILE is '%s': it must be quick or full\n", env);
            exit(2);
        }
    }
    return quick_profile;
}

uint64_t tu_init(const char *program)
{
    const char *env = getenv("LA_TEST_SEED");
    if (env && *env) {
        run_seed = strtoull(env, NULL, 10);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        run_seed = ((uint64_t)ts.tv_sec * 1000003u) ^ (uint64_t)ts.tv_nsec;
        run_seed %= 1000000000000ull;
    }
    printf("%s: seed %llu (replay with LA_TEST_SEED=%llu), profile %s\n", program,
           (unsigned long long)run_seed, (unsigned long long)run_seed,
           tu_quick() ? "quick" : "full");
    fflush(stdout);
    return run_seed;
}

uint64_t tu_seed(void)
{
    return run_seed;
}

uint64_t tu_next(tu_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

tu_rng tu_rng_for(const char *label)
{
    tu_rng r = {run_seed};
    for (const char *c = label; *c; c++)
        r.s = (r.s ^ (uint64_t)(unsigned char)*c) * 0x100000001b3ull;
    tu_next(&r);
    return r;
}

double tu_uniform(tu_rng *r)
{
    return (double)(tu_next(r) >> 11) * 0x1.0p-53;
}

double tu_normal(tu_rng *r)
{
    double u1 = tu_uniform(r), u2 = tu_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

void tu_fill_normal(tu_rng *r, double *x, size_t n, double sigma)
{
    for (size_t i = 0; i < n; i++)
        x[i] = sigma * tu_normal(r);
}

void *tu_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fail_msg("out of memory allocating %zu bytes", bytes);
    return p;
}
double *tu_f64(size_t n)
{
    return tu_alloc(n * sizeof(double));
}
float *tu_f32(size_t n)
{
    return tu_alloc(n * sizeof(float));
}
void tu_to_f32(const double *x, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (float)x[i];
}
void tu_to_f64(const float *x, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i];
}

static double rel_error(const void *y, int is_f32, const double *ref, size_t n, size_t *worst)
{
    double diff2 = 0, ref2 = 0, y2 = 0, worst_abs = -1;
    size_t worst_i = 0;
    for (size_t i = 0; i < n; i++) {
        double yi = is_f32 ? (double)((const float *)y)[i] : ((const double *)y)[i];
        if (!isfinite(yi) || !isfinite(ref[i])) {
            if (worst) *worst = i;
            return INFINITY;
        }
        double d = yi - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        y2 += yi * yi;
        if (fabs(d) > worst_abs) {
            worst_abs = fabs(d);
            worst_i = i;
        }
    }
    if (worst) *worst = worst_i;
    if (ref2 == 0) return sqrt(y2); /* the reference is zero: y must be zero too */
    return sqrt(diff2) / sqrt(ref2);
}

double tu_rel_error_f64(const double *y, const double *ref, size_t n, size_t *worst)
{
    return rel_error(y, 0, ref, n, worst);
}
double tu_rel_error_f32(const float *y, const double *ref, size_t n, size_t *worst)
{
    return rel_error(y, 1, ref, n, worst);
}

void tu_check_close(double err, double tol, double y_worst, double ref_worst, size_t worst,
                    const char *file, int line, const char *fmt, ...)
{
    if (err < tol) return; /* NaN and inf never pass */
    char context[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(context, sizeof context, fmt, ap);
    va_end(ap);
    print_error("%s:%d: %s: relative error %.3e >= %.1e; worst element [%zu]: %.17g vs "
                "reference %.17g; seed %llu\n",
                file, line, context, err, tol, worst, y_worst, ref_worst,
                (unsigned long long)run_seed);
    fail();
}

int tu_all_finite_f32(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}
int tu_all_finite_f64(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

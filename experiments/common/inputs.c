/* inputs.c — seeded random inputs and error measures for the experiments. */
#include "inputs.h"

#include <math.h>
#include <stdint.h>

/* splitmix64 */
static uint64_t next(in_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* [0, 1) */
static double uniform(in_rng *r)
{
    return (double)(next(r) >> 11) * 0x1.0p-53;
}

in_rng in_rng_for(uint64_t seed, const char *label)
{
    /* FNV-1a of the label, mixed with the seed */
    uint64_t h = 1469598103934665603ull;
    for (const char *c = label; c && *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    in_rng r = {seed ^ h};
    next(&r);
    return r;
}

double in_normal(in_rng *r)
{
    /* Box–Muller; 1 - u keeps the log argument in (0, 1] */
    double u = 1.0 - uniform(r), w = uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * w);
}

void in_fill_normal_f32(in_rng *r, float *x, size_t n, double sigma)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(sigma * in_normal(r));
}

size_t in_float_count(size_t a, size_t b, size_t c)
{
    /* a·b·c·sizeof(float) must fit, so that the caller's malloc size does */
    const size_t max = SIZE_MAX / sizeof(float);
    if (a == 0 || b == 0 || c == 0) return 0;
    if (b > max / a || c > max / (a * b)) return 0;
    return a * b * c;
}

double in_rel_error_f64(const double *y, const double *ref, size_t n)
{
    double diff2 = 0, ref2 = 0, y2 = 0;
    for (size_t i = 0; i < n; i++) {
        double d = y[i] - ref[i];
        diff2 += d * d;
        ref2 += ref[i] * ref[i];
        y2 += y[i] * y[i];
    }
    if (!isfinite(diff2) || !isfinite(ref2) || !isfinite(y2)) return INFINITY;
    return ref2 == 0 ? sqrt(y2) : sqrt(diff2 / ref2);
}

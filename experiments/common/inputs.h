/* inputs.h — the experiments' random inputs: a seeded generator (splitmix64) and fills,
 * so every experiment draws its q, k, v the same reproducible way. */
#ifndef LA_INPUTS_H
#define LA_INPUTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t s;
} in_rng;

/* A generator for one purpose, derived from the run's seed and a label (so inputs do not
 * depend on which points ran before). */
in_rng in_rng_for(uint64_t seed, const char *label);
double in_normal(in_rng *r); /* N(0, 1) */

/* x[i] ~ N(0, sigma²) */
void in_fill_normal_f32(in_rng *r, float *x, size_t n, double sigma);

/* The elements of an array of a × b × c floats, or 0 when that count or its bytes
 * overflow size_t: the one overflow-checked size of the commands' inputs. */
size_t in_float_count(size_t a, size_t b, size_t c);

/* ‖y − ref‖ / ‖ref‖ in float64 (‖y‖ when ref is all zero); +inf when any element is NaN
 * or infinite, so a broken kernel never looks accurate. */
double in_rel_error_f64(const double *y, const double *ref, size_t n);

#endif

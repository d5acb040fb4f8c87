/* testutil.h — what every test program shares: the seed, random inputs, and error
 * measures that treat NaN as failure. Include after cmocka's prerequisites:
 *   #include <stdarg.h> <stddef.h> <stdint.h> <setjmp.h> <cmocka.h>  (testutil.h does it). */
#ifndef LA_TESTUTIL_H
#define LA_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "linattn.h"

/* The run's seed: LA_TEST_SEED from the environment when set (to replay a failure),
 * else fresh from the clock. tu_init prints "seed: N (replay with LA_TEST_SEED=N)". */
uint64_t tu_init(const char *program);
uint64_t tu_seed(void);

/* The test profile, from LA_TEST_PROFILE: "full" (the default: every shape, repetition
 * and size) or "quick" (the sanitizer and emulated runs: fewer shapes and repetitions,
 * chosen so that every kernel, causal form, SIMD path and error path is still reached;
 * docs/testing.md lists what each quick choice stands for). Any other value ends the
 * program with status 2 at tu_init. tu_init prints the profile beside the seed. */
int tu_quick(void);

/* A small deterministic generator (splitmix64) per test, derived from the run's seed and
 * a label, so each test's inputs do not depend on which tests ran before it. */
typedef struct {
    uint64_t s;
} tu_rng;
tu_rng tu_rng_for(const char *label);
uint64_t tu_next(tu_rng *r);
double tu_uniform(tu_rng *r); /* [0, 1) */
double tu_normal(tu_rng *r);  /* N(0, 1) */
void tu_fill_normal(tu_rng *r, double *x, size_t n, double sigma);

/* Allocation that fails the test instead of returning NULL. */
void *tu_alloc(size_t bytes);
double *tu_f64(size_t n);
float *tu_f32(size_t n);
void tu_to_f32(const double *x, float *out, size_t n);
void tu_to_f64(const float *x, double *out, size_t n);

/* ‖y − ref‖ / ‖ref‖ (‖y‖ when ref is all zero), in float64; +inf when any element of y
 * or ref is NaN or infinite. worst (may be NULL) receives the index of the largest
 * absolute difference. */
double tu_rel_error_f64(const double *y, const double *ref, size_t n, size_t *worst);
double tu_rel_error_f32(const float *y, const double *ref, size_t n, size_t *worst);

/* Fails the test, printing the context, the error, the worst element and the seed,
 * unless tu_rel_error < tol. */
#define tu_assert_close_f64(y, ref, n, tol, ...)                                                   \
    do {                                                                                           \
        size_t w_;                                                                                 \
        double e_ = tu_rel_error_f64((y), (ref), (n), &w_);                                        \
        tu_check_close(e_, (tol), (double)(y)[w_], (ref)[w_], w_, __FILE__, __LINE__,              \
                       __VA_ARGS__);                                                               \
    } while (0)
#define tu_assert_close_f32(y, ref, n, tol, ...)                                                   \
    do {                                                                                           \
        size_t w_;                                                                                 \
        double e_ = tu_rel_error_f32((y), (ref), (n), &w_);                                        \
        tu_check_close(e_, (tol), (double)(y)[w_], (ref)[w_], w_, __FILE__, __LINE__,              \
                       __VA_ARGS__);                                                               \
    } while (0)
void tu_check_close(double err, double tol, double y_worst, double ref_worst, size_t worst,
                    const char *file, int line, const char *fmt, ...);

/* Every element finite. */
int tu_all_finite_f32(const float *x, size_t n);
int tu_all_finite_f64(const double *x, size_t n);

#endif

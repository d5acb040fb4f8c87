/* vexp.h — the exponential of softmax: y = exp(x - shift) over a row, with the row's
 * sum. Internal to the library (not installed). */
#ifndef LA_VEXP_H
#define LA_VEXP_H

#include <stddef.h>

/* x[c] = exp(x[c] - shift) for c < n, in place; returns Σ_c x[c] (summed in an order
 * fixed at compile time, so the same inputs always give the same bits). libm's expf and
 * exp, one element at a time; exp(-inf) = 0. */
float la_exp_shift_sum_f32(float *x, size_t n, float shift);
double la_exp_shift_sum_f64(double *x, size_t n, double shift);

#endif

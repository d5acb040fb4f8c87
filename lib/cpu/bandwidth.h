/* bandwidth.h — the inner loops of la_memory_bandwidth_gbs (bandwidth.c), visible to the
 * tests (tests/hostile/test_fma_probe.c checks the read loop's sum). Internal, not
 * installed. */
#ifndef LA_BANDWIDTH_H
#define LA_BANDWIDTH_H

#include <stddef.h>

/* Σ a[0..n) in four independent 4-lane partial sums (then a tail), the read probe's loop:
 * a[i] is read once, in order. a need not be aligned. */
double la_read_sum(const double *a, size_t n);

/* a[i] = b[i] + s·c[i] for i in [0, n): STREAM's triad. */
void la_triad(double *a, const double *b, const double *c, double s, size_t n);

#endif

/* vexp.c — exp(x - shift) over a row and its sum, for the softmax kernels. */
#include "vexp.h"

#include <math.h>

float la_exp_shift_sum_f32(float *x, size_t n, float shift)
{
    float sum = 0;
    for (size_t c = 0; c < n; c++) {
        float e = expf(x[c] - shift);
        x[c] = e;
        sum += e;
    }
    return sum;
}

double la_exp_shift_sum_f64(double *x, size_t n, double shift)
{
    double sum = 0;
    for (size_t c = 0; c < n; c++) {
        double e = exp(x[c] - shift);
        x[c] = e;
        sum += e;
    }
    return sum;
}

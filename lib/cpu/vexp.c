/* vexp.c — exp(x - shift) over a row and its sum, for the softmax kernels.
 *
 * glibc's expf and exp are accurate but scalar (about 3.4 and 4 ns an element here); at
 * d = 64 one exp per score costs about as much as the score's 4·d GEMM flops. The paths
 * below are branch-free polynomial exps that the compiler vectorizes (8 float or 4 double
 * lanes with AVX2): about 0.5 ns (float) and 1.2 ns (double) an element. */
#include "cpu/vexp.h"

/* Where the CPU has AVX-512, the same loops with 16 float (8 double) lanes: GCC builds
 * both versions and picks one at load time (function multi-versioning). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LA_VEXP_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define LA_VEXP_CLONES
#endif

LA_VEXP_CLONES
float la_exp_shift_sum_f32(float *x, size_t n, float shift)
{
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t c = 0; c < n; c++) {
        float e = la_vexp_f32(x[c] - shift);
        x[c] = e;
        sum += e;
    }
    return sum;
}

LA_VEXP_CLONES
double la_exp_shift_sum_f64(double *x, size_t n, double shift)
{
    double sum = 0;
#pragma omp simd reduction(+ : sum)
    for (size_t c = 0; c < n; c++) {
        double e = la_vexp_f64(x[c] - shift);
        x[c] = e;
        sum += e;
    }
    return sum;
}

LA_VEXP_CLONES
void la_softmax_grad_row_f32(float *s, float *ds, size_t n, float scale, float shift, float d)
{
#pragma omp simd
    for (size_t c = 0; c < n; c++) {
        const float t = s[c] * scale; /* rounded, then shifted: exactly the forward's steps */
        const float e = la_vexp_f32(t - shift);
        s[c] = e;
        ds[c] = e * (ds[c] - d) * scale;
    }
}

LA_VEXP_CLONES
void la_softmax_grad_row_f64(double *s, double *ds, size_t n, double scale, double shift, double d)
{
#pragma omp simd
    for (size_t c = 0; c < n; c++) {
        const double t = s[c] * scale;
        const double e = la_vexp_f64(t - shift);
        s[c] = e;
        ds[c] = e * (ds[c] - d) * scale;
    }
}

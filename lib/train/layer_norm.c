/* layer_norm.c — LayerNorm forward, keeping each row's mean and 1/σ, and its backward,
 * per element type (train_layers.h). Shapes:
 *   x, y, dx, dy (rows, d); gamma, beta, dgamma, dbeta (d); mean, rstd (rows) doubles
 *   forward   x̂ = (x − μ)·r, r = 1/√(var + eps) (biased variance), y = x̂ ∘ γ + β
 *   backward  g = dy ∘ γ, dx = r·(g − mean(g) − x̂ ∘ mean(g ∘ x̂)),
 *             dγ += Σ_rows dy ∘ x̂, dβ += Σ_rows dy
 * Row statistics in double, each row's sums in the vector lanes (an order fixed by the
 * build); rows in parallel, the sums over rows in row order on one thread (the bits do
 * not depend on the thread count). */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/train_layers.h"

#include <math.h>

static bool args_ok(size_t rows, size_t d, double eps)
{
    size_t n;
    return rows > 0 && d > 0 && la_mul_ok(rows, d, &n) && la_mul_ok(n, sizeof(REAL), &n) &&
           isfinite(eps) && eps > 0;
}

static la_status forward(size_t rows, size_t d, const REAL *x, const REAL *gamma, const REAL *beta,
                         double eps, REAL *y, double *mean, double *rstd)
{
    if (!x || !gamma || !beta || !y || !mean || !rstd || !args_ok(rows, d, eps)) return LA_EINVAL;
    const int threads = la_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * d > 65536)
    for (size_t i = 0; i < rows; i++) {
        const REAL *xi = x + i * d;
        REAL *yi = y + i * d;
        double mu = 0, var = 0;
#pragma omp simd reduction(+ : mu)
        for (size_t c = 0; c < d; c++)
            mu += (double)xi[c];
        mu /= (double)d;
#pragma omp simd reduction(+ : var)
        for (size_t c = 0; c < d; c++) {
            const double dev = (double)xi[c] - mu;
            var += dev * dev;
        }
        var /= (double)d;
        const double r = 1.0 / sqrt(var + eps);
        for (size_t c = 0; c < d; c++)
            yi[c] = (REAL)(((double)xi[c] - mu) * r * (double)gamma[c] + (double)beta[c]);
        mean[i] = mu;
        rstd[i] = r;
    }
    return LA_OK;
}

static la_status backward(size_t rows, size_t d, const REAL *x, const REAL *gamma,
                          const double *mean, const double *rstd, const REAL *dy, REAL *dx,
                          REAL *dgamma, REAL *dbeta)
{
    if (!x || !gamma || !mean || !rstd || !dy || !dgamma || !dbeta || !args_ok(rows, d, 1))
        return LA_EINVAL;
    /* the parameters' sums first: dx may be dy */
    for (size_t i = 0; i < rows; i++) {
        const REAL *xi = x + i * d, *gi = dy + i * d;
        const double mu = mean[i], r = rstd[i];
        for (size_t c = 0; c < d; c++) {
            dgamma[c] += (REAL)((double)gi[c] * (((double)xi[c] - mu) * r));
            dbeta[c] += gi[c];
        }
    }
    if (!dx) return LA_OK;
    const int threads = la_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (rows * d > 65536)
    for (size_t i = 0; i < rows; i++) {
        const REAL *xi = x + i * d, *gi = dy + i * d;
        REAL *dxi = dx + i * d;
        const double mu = mean[i], r = rstd[i];
        double mean_g = 0, mean_gx = 0;
#pragma omp simd reduction(+ : mean_g, mean_gx)
        for (size_t c = 0; c < d; c++) {
            const double g = (double)gi[c] * (double)gamma[c];
            mean_g += g;
            mean_gx += g * (((double)xi[c] - mu) * r);
        }
        mean_g /= (double)d;
        mean_gx /= (double)d;
        for (size_t c = 0; c < d; c++) {
            const double g = (double)gi[c] * (double)gamma[c], xh = ((double)xi[c] - mu) * r;
            dxi[c] = (REAL)(r * (g - mean_g - xh * mean_gx));
        }
    }
    return LA_OK;
}

#if REAL_IS_F32
la_status la_train_layer_norm_forward_f32(size_t rows, size_t d, const float *x, const float *gamma,
                                          const float *beta, double eps, float *y, double *mean,
                                          double *rstd)
{
    return forward(rows, d, x, gamma, beta, eps, y, mean, rstd);
}
la_status la_train_layer_norm_backward_f32(size_t rows, size_t d, const float *x,
                                           const float *gamma, const double *mean,
                                           const double *rstd, const float *dy, float *dx,
                                           float *dgamma, float *dbeta)
{
    return backward(rows, d, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}
#else
la_status la_train_layer_norm_forward_f64(size_t rows, size_t d, const double *x,
                                          const double *gamma, const double *beta, double eps,
                                          double *y, double *mean, double *rstd)
{
    return forward(rows, d, x, gamma, beta, eps, y, mean, rstd);
}
la_status la_train_layer_norm_backward_f64(size_t rows, size_t d, const double *x,
                                           const double *gamma, const double *mean,
                                           const double *rstd, const double *dy, double *dx,
                                           double *dgamma, double *dbeta)
{
    return backward(rows, d, x, gamma, mean, rstd, dy, dx, dgamma, dbeta);
}
#endif

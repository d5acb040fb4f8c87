/* ffn.c — the position-wise FFN and its activation, forward and backward, per element
 * type (train_layers.h). Shapes:
 *   x, y, dx, dy (rows, d); w1 (d_ff, d), b1 (d_ff); w2 (d, d_ff), b2 (d);
 *   pre (rows, d_ff), kept by the forward
 *   forward   pre = x W1ᵀ + b1, a = act(pre), y = a W2ᵀ + b2
 *   backward  a recomputed; da = dy W2 (dense), dpre = da ∘ act′(pre), dx = dpre W1
 * act: ReLU max(x, 0), act′ = [x > 0]; exact GELU x·Φ(x), act′ = Φ(x) + x·φ(x), with
 * Φ(x) = (1 + erf(x/√2))/2 and φ(x) = exp(−x²/2)/√(2π). */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdlib.h>

#define INV_SQRT2 0.70710678118654752440
#define INV_SQRT_2PI 0.39894228040143267794

static la_status act_forward(size_t n, int gelu, const REAL *pre, REAL *out)
{
    if (!pre || !out || n == 0 || (gelu != 0 && gelu != 1)) return LA_EINVAL;
    const int threads = la_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        const REAL t = pre[i];
        out[i] = gelu ? (REAL)0.5 * t * ((REAL)1 + ERF(t * (REAL)INV_SQRT2)) : t > 0 ? t : 0;
    }
    return LA_OK;
}

static la_status act_backward(size_t n, int gelu, const REAL *pre, const REAL *d_out, REAL *d_pre)
{
    if (!pre || !d_out || !d_pre || n == 0 || (gelu != 0 && gelu != 1)) return LA_EINVAL;
    const int threads = la_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (n > 65536)
    for (size_t i = 0; i < n; i++) {
        const REAL t = pre[i];
        REAL slope;
        if (gelu)
            slope = (REAL)0.5 * ((REAL)1 + ERF(t * (REAL)INV_SQRT2)) +
                    t * (REAL)INV_SQRT_2PI * EXP((REAL)-0.5 * t * t);
        else
            slope = t > 0 ? 1 : 0;
        d_pre[i] = d_out[i] * slope;
    }
    return LA_OK;
}

/* rows·width elements of REAL, or 0 when that passes size_t. */
static size_t elements(size_t rows, size_t width)
{
    size_t n;
    return la_mul_ok(rows, width, &n) && la_mul_ok(n, sizeof(REAL), &n) ? n / sizeof(REAL) : 0;
}

static la_status ffn_forward(size_t rows, size_t d, size_t d_ff, int gelu, const REAL *x,
                             const REAL *w1, const REAL *b1, const REAL *w2, const REAL *b2,
                             REAL *pre, REAL *y)
{
    if (!x || !w1 || !b1 || !w2 || !b2 || !pre || !y || rows == 0 || d == 0 || d_ff == 0 ||
        (gelu != 0 && gelu != 1))
        return LA_EINVAL;
    const size_t n = elements(rows, d_ff);
    if (n == 0) return LA_EOVERFLOW;
    REAL *a = malloc(n * sizeof *a);
    if (!a) return LA_ENOMEM;
    la_status st = FN(la_train_dense_forward)(rows, d, d_ff, x, w1, b1, pre);
    if (st == LA_OK) st = act_forward(n, gelu, pre, a);
    if (st == LA_OK) st = FN(la_train_dense_forward)(rows, d_ff, d, a, w2, b2, y);
    free(a);
    return st;
}

static la_status ffn_backward(size_t rows, size_t d, size_t d_ff, int gelu, const REAL *x,
                              const REAL *w1, const REAL *w2, const REAL *pre, const REAL *dy,
                              REAL *dx, REAL *dw1, REAL *db1, REAL *dw2, REAL *db2)
{
    if (!x || !w1 || !w2 || !pre || !dy || !dw1 || !db1 || !dw2 || !db2 || rows == 0 || d == 0 ||
        d_ff == 0 || (gelu != 0 && gelu != 1))
        return LA_EINVAL;
    const size_t n = elements(rows, d_ff);
    if (n == 0 || n > SIZE_MAX / 2 / sizeof(REAL)) return LA_EOVERFLOW;
    REAL *a = malloc(2 * n * sizeof *a);
    if (!a) return LA_ENOMEM;
    REAL *da = a + n;
    la_status st = act_forward(n, gelu, pre, a);
    if (st == LA_OK) st = FN(la_train_dense_backward)(rows, d_ff, d, a, w2, dy, da, dw2, db2);
    if (st == LA_OK) st = act_backward(n, gelu, pre, da, da);
    if (st == LA_OK) st = FN(la_train_dense_backward)(rows, d, d_ff, x, w1, da, dx, dw1, db1);
    free(a);
    return st;
}

#if REAL_IS_F32
la_status la_train_activation_forward_f32(size_t n, int gelu, const float *pre, float *out)
{
    return act_forward(n, gelu, pre, out);
}
la_status la_train_activation_backward_f32(size_t n, int gelu, const float *pre, const float *d_out,
                                           float *d_pre)
{
    return act_backward(n, gelu, pre, d_out, d_pre);
}
la_status la_train_ffn_forward_f32(size_t rows, size_t d, size_t d_ff, int gelu, const float *x,
                                   const float *w1, const float *b1, const float *w2,
                                   const float *b2, float *pre, float *y)
{
    return ffn_forward(rows, d, d_ff, gelu, x, w1, b1, w2, b2, pre, y);
}
la_status la_train_ffn_backward_f32(size_t rows, size_t d, size_t d_ff, int gelu, const float *x,
                                    const float *w1, const float *w2, const float *pre,
                                    const float *dy, float *dx, float *dw1, float *db1, float *dw2,
                                    float *db2)
{
    return ffn_backward(rows, d, d_ff, gelu, x, w1, w2, pre, dy, dx, dw1, db1, dw2, db2);
}
#else
la_status la_train_activation_forward_f64(size_t n, int gelu, const double *pre, double *out)
{
    return act_forward(n, gelu, pre, out);
}
la_status la_train_activation_backward_f64(size_t n, int gelu, const double *pre,
                                           const double *d_out, double *d_pre)
{
    return act_backward(n, gelu, pre, d_out, d_pre);
}
la_status la_train_ffn_forward_f64(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                                   const double *w1, const double *b1, const double *w2,
                                   const double *b2, double *pre, double *y)
{
    return ffn_forward(rows, d, d_ff, gelu, x, w1, b1, w2, b2, pre, y);
}
la_status la_train_ffn_backward_f64(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                                    const double *w1, const double *w2, const double *pre,
                                    const double *dy, double *dx, double *dw1, double *db1,
                                    double *dw2, double *db2)
{
    return ffn_backward(rows, d, d_ff, gelu, x, w1, w2, pre, dy, dx, dw1, db1, dw2, db2);
}
#endif

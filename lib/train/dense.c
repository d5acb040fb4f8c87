/* dense.c — the dense layer (nn.Linear) forward and backward, per element type
 * (train_layers.h). Shapes:
 *   x (rows, in), w (out, in), b (out), y (rows, out)
 *   forward   y  = x · Wᵀ + b
 *   backward  dx = dy · W,  dw += dyᵀ · x,  db += Σ_rows dy
 * Each product is one BLIS call on la_threads() of BLIS's threads, which never splits the
 * sum over k: dw's sum over rows is in one order on any thread count; db sums rows in
 * order, one column per lane. */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/train_layers.h"

#include <stdlib.h>
#include <string.h>

static bool sizes_ok(size_t rows, size_t in, size_t out)
{
    size_t n;
    return rows > 0 && in > 0 && out > 0 && la_mul_ok(rows, in > out ? in : out, &n) &&
           la_mul_ok(n, sizeof(REAL), &n) && la_mul_ok(in, out, &n) &&
           la_mul_ok(n, sizeof(REAL), &n);
}

/* The rows from which the forward multiplies by a transposed copy of W (below). */
enum { TRANSPOSE_ROWS = 64 };

static la_status forward(size_t rows, size_t in, size_t out, const REAL *x, const REAL *w,
                         const REAL *b, REAL *y)
{
    if (!x || !w || !y || rows == 0 || in == 0 || out == 0) return LA_EINVAL;
    if (!sizes_ok(rows, in, out)) return LA_EOVERFLOW;
    const int threads = la_threads();
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    /* Wᵀ (in, out) row-stored, for products of TRANSPOSE_ROWS rows or more: BLIS's
     * small-product kernels for a row-stored B (its "rv" kernels) run them faster than
     * those for W read through transposed strides (its "rd" dot-product kernels): on the
     * copy model of docs/performance.md (Zen 4, zen3 kernels, 1 thread) the projections and
     * FFN, forward and backward, went from 5.7 to 4.8 ms a step. The copy is out·in
     * elements against rows·out·in multiply-adds, so fewer rows (one token of the
     * decoder, decode.c) read W in place. */
    REAL *wt = NULL;
    if (rows >= TRANSPOSE_ROWS) {
        if (!(wt = malloc(in * out * sizeof *wt))) return LA_ENOMEM;
        TRANSPOSE(out, in, w, in, wt, out);
    }
    if (b)
        for (size_t r = 0; r < rows; r++)
            memcpy(y + r * out, b, out * sizeof *y);
    /* y (rows, out) = x (rows, in) · Wᵀ (in, out) [+ y] */
    if (wt)
        GEMM_THREADED(threads, rows, out, in, 1, x, (ptrdiff_t)in, 1, wt, (ptrdiff_t)out, 1,
                      b ? 1 : 0, y, (ptrdiff_t)out, 1);
    else
        GEMM_THREADED(threads, rows, out, in, 1, x, (ptrdiff_t)in, 1, w, 1, (ptrdiff_t)in,
                      b ? 1 : 0, y, (ptrdiff_t)out, 1);
    free(wt);
    return LA_OK;
}

static la_status backward(size_t rows, size_t in, size_t out, const REAL *x, const REAL *w,
                          const REAL *dy, REAL *dx, REAL *dw, REAL *db)
{
    if (!x || !w || !dy || !dw || rows == 0 || in == 0 || out == 0) return LA_EINVAL;
    if (!sizes_ok(rows, in, out)) return LA_EOVERFLOW;
    const int threads = la_threads();
    if (la_gemm_reserve(threads) != LA_OK) return LA_ENOMEM;
    /* dx (rows, in) = dy (rows, out) · W (out, in) */
    if (dx)
        GEMM_THREADED(threads, rows, in, out, 1, dy, (ptrdiff_t)out, 1, w, (ptrdiff_t)in, 1, 0, dx,
                      (ptrdiff_t)in, 1);
    /* dw (out, in) += dyᵀ (out, rows) · x (rows, in) */
    GEMM_THREADED(threads, out, in, rows, 1, dy, 1, (ptrdiff_t)out, x, (ptrdiff_t)in, 1, 1, dw,
                  (ptrdiff_t)in, 1);
    /* db += Σ_rows dy, the rows in order */
    if (db)
        for (size_t r = 0; r < rows; r++) {
            const REAL *g = dy + r * out;
            for (size_t o = 0; o < out; o++)
                db[o] += g[o];
        }
    return LA_OK;
}

#if REAL_IS_F32
la_status la_train_dense_forward_f32(size_t rows, size_t in, size_t out, const float *x,
                                     const float *w, const float *b, float *y)
{
    return forward(rows, in, out, x, w, b, y);
}
la_status la_train_dense_backward_f32(size_t rows, size_t in, size_t out, const float *x,
                                      const float *w, const float *dy, float *dx, float *dw,
                                      float *db)
{
    return backward(rows, in, out, x, w, dy, dx, dw, db);
}
#else
la_status la_train_dense_forward_f64(size_t rows, size_t in, size_t out, const double *x,
                                     const double *w, const double *b, double *y)
{
    return forward(rows, in, out, x, w, b, y);
}
la_status la_train_dense_backward_f64(size_t rows, size_t in, size_t out, const double *x,
                                      const double *w, const double *dy, double *dx, double *dw,
                                      double *db)
{
    return backward(rows, in, out, x, w, dy, dx, dw, db);
}
#endif

/* sequence_reference.c — float64 oracles of the recurrent and convolutional layers:
 * plain loops, straight from the formulas, no tuning (the fast paths are in recurrent.c
 * and conv1d.c; tests/layers/test_rnn_conv.c keeps the two equal). */
#include "layers/sequence_internal.h"

#include <math.h>
#include <stdlib.h>

/* h_t = tanh(W_h h_{t−1} + W_x x_t + b), h_{−1} = 0.
 *   x, h: (B, N, d); w_x, w_h: (d, d) row-major; b: (d). */
la_status la_ref_rnn_forward(size_t batch, size_t n, size_t d, const double *x, const double *w_x,
                             const double *w_h, const double *b, double *h)
{
    if (!x || !w_x || !w_h || !b || !h) return LA_EINVAL;
    la_status st = la_rnn_sizes(batch, n, d, sizeof(double));
    if (st != LA_OK) return st;
    for (size_t s = 0; s < batch; s++)
        for (size_t t = 0; t < n; t++) {
            const double *xt = x + (s * n + t) * d;
            const double *prev = t > 0 ? h + (s * n + t - 1) * d : NULL;
            double *ht = h + (s * n + t) * d;
            for (size_t i = 0; i < d; i++) {
                double acc = b[i];
                for (size_t j = 0; j < d; j++)
                    acc += w_x[i * d + j] * xt[j];
                for (size_t j = 0; prev && j < d; j++)
                    acc += w_h[i * d + j] * prev[j];
                ht[i] = tanh(acc);
            }
        }
    return LA_OK;
}

/* y_i = Σ_{t<k} W_t x_{i+t−k/2} + b, x_j = 0 outside 0 .. N−1.
 *   x, y: (B, N, d); w: (k, d, d), W_t[o][c] = w[(t·d + o)·d + c]; b: (d). */
la_status la_ref_conv1d_forward(size_t batch, size_t n, size_t d, size_t width, const double *x,
                                const double *w, const double *b, double *y)
{
    if (!x || !w || !b || !y) return LA_EINVAL;
    la_status st = la_conv1d_sizes(batch, n, d, width, sizeof(double));
    if (st != LA_OK) return st;
    const long long half = (long long)(width / 2);
    for (size_t s = 0; s < batch; s++)
        for (size_t i = 0; i < n; i++)
            for (size_t o = 0; o < d; o++) {
                double acc = b[o];
                for (size_t t = 0; t < width; t++) {
                    const long long j = (long long)i + (long long)t - half;
                    if (j < 0 || j >= (long long)n) continue; /* zero padding */
                    for (size_t c = 0; c < d; c++)
                        acc += w[(t * d + o) * d + c] * x[(s * n + (size_t)j) * d + c];
                }
                y[(s * n + i) * d + o] = acc;
            }
    return LA_OK;
}

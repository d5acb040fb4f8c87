/* recurrent.c — the recurrent (Elman) layer, h_t = tanh(W_h h_{t−1} + W_x x_t + b), run
 * as the N-step recurrence it is, float32 and float64: the row of Vaswani et al.'s
 * Table 1 with N sequential operations. Written once in recurrent_tmpl.h. */
#include "layers/sequence_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

la_status la_rnn_sizes(size_t batch, size_t n, size_t d, size_t elem)
{
    size_t count, weights;
    if (batch == 0 || n == 0 || d == 0) return LA_EINVAL;
    if (!la_mul_ok(batch, n, &count) || !la_mul_ok(count, d, &count) ||
        !la_mul_ok(count, elem, &count) || !la_mul_ok(d, d, &weights) ||
        !la_mul_ok(weights, elem, &weights) || count > (size_t)PTRDIFF_MAX ||
        weights > (size_t)PTRDIFF_MAX)
        return LA_EOVERFLOW;
    return LA_OK;
}

la_status la_rnn_cost(size_t batch, size_t n, size_t d, double *flops)
{
    if (!flops) return LA_EINVAL;
    la_status st = la_rnn_sizes(batch, n, d, 1);
    if (st != LA_OK) return st;
    const double D = (double)d;
    /* per step and batch entry: W_x x_t and W_h h_{t−1}, 2d² each; + b, d; tanh, d */
    *flops = (double)batch * (double)n * (4 * D * D + 2 * D);
    return LA_OK;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "layers/recurrent_tmpl.h"
#include "core/real_f64.h"
#include "layers/recurrent_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

la_status la_rnn_forward_f32(size_t batch, size_t n, size_t d, const float *x, const float *w_x,
                             const float *w_h, const float *b, float *h)
{
    return rnn_forward_f32(batch, n, d, x, w_x, w_h, b, h);
}

la_status la_rnn_forward_f64(size_t batch, size_t n, size_t d, const double *x, const double *w_x,
                             const double *w_h, const double *b, double *h)
{
    return rnn_forward_f64(batch, n, d, x, w_x, w_h, b, h);
}

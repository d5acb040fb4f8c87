/* conv1d.c — the 1-D convolutional layer over the sequence, kernel width k, d channels
 * in and out, 'same' zero padding, float32 and float64, through BLIS: the row of
 * Vaswani et al.'s Table 1 with O(k·N·d²) work, 1 sequential operation and a path
 * length of log_k(N) for a stack. Written once in conv1d_tmpl.h.
 *
 * Why k shifted products rather than im2col and one: the k products of (rows, d) ×
 * (d, d) over shifted row ranges read x where it lies, so the layer needs no scratch at
 * all, where im2col would copy x k times into a (N, k·d) matrix (k·N·d elements of
 * memory traffic and workspace, as large as the input times k) for one product of the
 * same FLOPs. The products are tall (up to LA_SEQ_ROW_BLOCK rows), which is where BLIS
 * is efficient; only for small d would im2col's longer inner dimension (k·d) pay. */
#include "layers/sequence_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

la_status la_conv1d_sizes(size_t batch, size_t n, size_t d, size_t width, size_t elem)
{
    if (width == 0 || width % 2 == 0) return LA_EINVAL;
    la_status st = la_rnn_sizes(batch, n, d, elem);
    if (st != LA_OK) return st;
    size_t weights;
    if (!la_mul_ok(d * d, width, &weights) || !la_mul_ok(weights, elem, &weights) ||
        weights > (size_t)PTRDIFF_MAX)
        return LA_EOVERFLOW;
    return LA_OK;
}

la_status la_conv1d_cost(size_t batch, size_t n, size_t d, size_t width, double *flops)
{
    if (!flops) return LA_EINVAL;
    la_status st = la_conv1d_sizes(batch, n, d, width, 1);
    if (st != LA_OK) return st;
    const double D = (double)d;
    /* per output row: k taps of a (d, d) matrix–vector product, 2d² each (the padded
     * taps counted as if computed), + b, d */
    *flops = (double)batch * (double)n * (2 * (double)width * D * D + D);
    return LA_OK;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "layers/conv1d_tmpl.h"
#include "core/real_f64.h"
#include "layers/conv1d_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

la_status la_conv1d_forward_f32(size_t batch, size_t n, size_t d, size_t width, const float *x,
                                const float *w, const float *b, float *y)
{
    return conv1d_forward_f32(batch, n, d, width, x, w, b, y);
}

la_status la_conv1d_forward_f64(size_t batch, size_t n, size_t d, size_t width, const double *x,
                                const double *w, const double *b, double *y)
{
    return conv1d_forward_f64(batch, n, d, width, x, w, b, y);
}

/* test_rnn_conv.c — the recurrent and convolutional layers (lib/layers/recurrent.c,
 * conv1d.c) against their float64 oracles (la_ref_rnn_forward, la_ref_conv1d_forward)
 * on random inputs and weights: float32 within 1e-5, float64 within 1e-12 relative;
 * cases small enough to check by hand (an RNN without recurrence is tanh(W_x x_t + b)
 * row by row, a scalar RNN is its scalar recurrence, a width-1 convolution of identity
 * weights is x + b, a width-3 one with the identity in its first tap shifts x down one
 * row); bitwise the same output with 1 and 2 threads; the FLOP closed forms. */
#include "../testutil.h"
#include "../yardsticks.h"
#include "layers/layers_typed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* random layer inputs: x ~ N(0, 1), weights ~ N(0, 1/d) (so W x stays O(1) and tanh
 * does not saturate), biases ~ N(0, 0.5²) */
static void fill_layer(tu_rng *r, size_t d, double *x, size_t nx, double *w, size_t nw, double *b)
{
    tu_fill_normal(r, x, nx, 1.0);
    tu_fill_normal(r, w, nw, 1.0 / sqrt((double)d));
    tu_fill_normal(r, b, d, 0.5);
}

/* ---------------------------------------------------------------- recurrent */

/* An output of at most TERMS_MAX_N elements is held to the size of the terms it sums where
 * that is larger than its norm, as test_layers_backward's check_terms does: one
 * h = tanh(w_x·x + b) with b ≈ −w_x·x keeps a rounding error of the size of w_x·x and b.
 * Replayed two million times in float32 (d = 1, the draws of fill_layer), the plain
 * relative error passed 1e-5 in 6.6·10⁻⁴ of them and 3·10⁻⁵ in 2·10⁻⁴; against the terms,
 * the worst of them was 0.024 of 1e-5 (float64 matched its oracle exactly). The terms'
 * size is the oracle run on |x|, |W| and |b|: tanh of the sum of the terms' sizes, at
 * least tanh′ times it. Larger outputs keep the plain relative error. */
#define TERMS_MAX_N 3

/* ‖terms‖ of the RNN's outputs (the oracle on absolute values) for nx <= TERMS_MAX_N, else 0 */
static double rnn_terms_size(size_t batch, size_t n, size_t d, const double *x, const double *w,
                             const double *b)
{
    const size_t nx = batch * n * d, nw = d * d;
    if (nx > TERMS_MAX_N) return 0;
    double *ax = tu_f64(nx), *aw = tu_f64(2 * nw), *ab = tu_f64(d), *t = tu_f64(nx), size = 0;
    for (size_t i = 0; i < nx; i++)
        ax[i] = fabs(x[i]);
    for (size_t i = 0; i < 2 * nw; i++)
        aw[i] = fabs(w[i]);
    for (size_t i = 0; i < d; i++)
        ab[i] = fabs(b[i]);
    assert_int_equal(la_ref_rnn_forward(batch, n, d, ax, aw, aw + nw, ab, t), LA_OK);
    for (size_t i = 0; i < nx; i++)
        size += t[i] * t[i];
    free(ax), free(aw), free(ab), free(t);
    return sqrt(size);
}

/* fast path against the oracle, float32 and float64, on one shape */
static void rnn_case(size_t batch, size_t n, size_t d)
{
    char label[64];
    snprintf(label, sizeof label, "rnn %zu %zu %zu", batch, n, d);
    tu_rng r = tu_rng_for(label);
    const size_t nx = batch * n * d, nw = d * d;
    double *x = tu_f64(nx), *w = tu_f64(2 * nw), *b = tu_f64(d), *ref = tu_f64(nx),
           *h64 = tu_f64(nx);
    fill_layer(&r, d, x, nx, w, 2 * nw, b);
    const double *w_x = w, *w_h = w + nw;
    const double terms = rnn_terms_size(batch, n, d, x, w, b);
    size_t worst;
    assert_int_equal(la_ref_rnn_forward(batch, n, d, x, w_x, w_h, b, ref), LA_OK);
    assert_int_equal(la_rnn_forward(LA_FLOAT64, batch, n, d, x, w_x, w_h, b, h64), LA_OK);
    tu_rel_error_f64(h64, ref, nx, &worst);
    tu_check_close(tu_floored_error_f64(h64, ref, nx, terms), TOL_F64, h64[worst], ref[worst],
                   worst, __FILE__, __LINE__, "rnn f64 B=%zu N=%zu d=%zu (terms %.3g)", batch, n, d,
                   terms);

    float *x32 = tu_f32(nx), *w32 = tu_f32(2 * nw), *b32 = tu_f32(d), *h32 = tu_f32(nx);
    tu_to_f32(x, x32, nx), tu_to_f32(w, w32, 2 * nw), tu_to_f32(b, b32, d);
    /* the reference on the float32-rounded inputs: the comparison measures the kernel */
    tu_to_f64(x32, x, nx), tu_to_f64(w32, w, 2 * nw), tu_to_f64(b32, b, d);
    assert_int_equal(la_ref_rnn_forward(batch, n, d, x, w_x, w_h, b, ref), LA_OK);
    assert_int_equal(la_rnn_forward(LA_FLOAT32, batch, n, d, x32, w32, w32 + nw, b32, h32), LA_OK);
    tu_rel_error_f32(h32, ref, nx, &worst);
    tu_check_close(tu_floored_error_f32(h32, ref, nx, terms), TOL_F32, (double)h32[worst],
                   ref[worst], worst, __FILE__, __LINE__, "rnn f32 B=%zu N=%zu d=%zu (terms %.3g)",
                   batch, n, d, terms);
    free(x), free(w), free(b), free(ref), free(h64), free(x32), free(w32), free(b32), free(h32);
}

static void rnn_matches_reference(void **state)
{
    (void)state;
    rnn_case(1, 1, 1);
    rnn_case(1, 37, 16);
    rnn_case(3, 300, 24); /* B·N rows over several row blocks of the input projection */
    rnn_case(2, 5, 64);
}

/* With W_h = 0 nothing recurs: h_t = tanh(W_x x_t + b), each row on its own. */
static void rnn_without_recurrence(void **state)
{
    (void)state;
    const size_t batch = 2, n = 9, d = 5, nx = batch * n * d;
    tu_rng r = tu_rng_for("rnn no recurrence");
    double *x = tu_f64(nx), *w_x = tu_f64(d * d), *b = tu_f64(d), *want = tu_f64(nx),
           *h = tu_f64(nx), *zero = tu_f64(d * d);
    fill_layer(&r, d, x, nx, w_x, d * d, b);
    memset(zero, 0, d * d * sizeof *zero);
    for (size_t row = 0; row < batch * n; row++)
        for (size_t i = 0; i < d; i++) {
            double acc = b[i];
            for (size_t j = 0; j < d; j++)
                acc += w_x[i * d + j] * x[row * d + j];
            want[row * d + i] = tanh(acc);
        }
    assert_int_equal(la_rnn_forward(LA_FLOAT64, batch, n, d, x, w_x, zero, b, h), LA_OK);
    tu_assert_close_f64(h, want, nx, TOL_F64, "rnn with W_h = 0");
    assert_int_equal(la_ref_rnn_forward(batch, n, d, x, w_x, zero, b, h), LA_OK);
    tu_assert_close_f64(h, want, nx, TOL_F64, "reference rnn with W_h = 0");
    free(x), free(w_x), free(b), free(want), free(h), free(zero);
}

/* d = 1: h_t = tanh(0.5·h_{t−1} + 2·x_t − 0.25), by hand. */
static void rnn_scalar(void **state)
{
    (void)state;
    const double x[4] = {1, -0.5, 0.25, 2}, w_x = 2, w_h = 0.5, b = -0.25;
    double want[4], h[4], prev = 0;
    for (int t = 0; t < 4; t++)
        want[t] = prev = tanh(w_h * prev + w_x * x[t] + b);
    assert_int_equal(la_rnn_forward(LA_FLOAT64, 1, 4, 1, x, &w_x, &w_h, &b, h), LA_OK);
    tu_assert_close_f64(h, want, 4, TOL_F64, "scalar rnn");
    /* two sequences of two steps: the second starts again from h = 0 */
    assert_int_equal(la_rnn_forward(LA_FLOAT64, 2, 2, 1, x, &w_x, &w_h, &b, h), LA_OK);
    const double second[2] = {tanh(w_x * x[2] + b),
                              tanh(w_h * tanh(w_x * x[2] + b) + w_x * x[3] + b)};
    tu_assert_close_f64(h, want, 2, TOL_F64, "scalar rnn, first sequence");
    tu_assert_close_f64(h + 2, second, 2, TOL_F64, "scalar rnn, second sequence");
}

/* ---------------------------------------------------------------- convolutional */

static void conv_case(size_t batch, size_t n, size_t d, size_t width)
{
    char label[64];
    snprintf(label, sizeof label, "conv %zu %zu %zu %zu", batch, n, d, width);
    tu_rng r = tu_rng_for(label);
    const size_t nx = batch * n * d, nw = width * d * d;
    double *x = tu_f64(nx), *w = tu_f64(nw), *b = tu_f64(d), *ref = tu_f64(nx), *y64 = tu_f64(nx);
    fill_layer(&r, d, x, nx, w, nw, b);
    assert_int_equal(la_ref_conv1d_forward(batch, n, d, width, x, w, b, ref), LA_OK);
    assert_int_equal(la_conv1d_forward(LA_FLOAT64, batch, n, d, width, x, w, b, y64), LA_OK);
    tu_assert_close_f64(y64, ref, nx, TOL_F64, "conv f64 B=%zu N=%zu d=%zu k=%zu", batch, n, d,
                        width);

    float *x32 = tu_f32(nx), *w32 = tu_f32(nw), *b32 = tu_f32(d), *y32 = tu_f32(nx);
    tu_to_f32(x, x32, nx), tu_to_f32(w, w32, nw), tu_to_f32(b, b32, d);
    tu_to_f64(x32, x, nx), tu_to_f64(w32, w, nw), tu_to_f64(b32, b, d);
    assert_int_equal(la_ref_conv1d_forward(batch, n, d, width, x, w, b, ref), LA_OK);
    assert_int_equal(la_conv1d_forward(LA_FLOAT32, batch, n, d, width, x32, w32, b32, y32), LA_OK);
    tu_assert_close_f32(y32, ref, nx, TOL_F32, "conv f32 B=%zu N=%zu d=%zu k=%zu", batch, n, d,
                        width);
    free(x), free(w), free(b), free(ref), free(y64), free(x32), free(w32), free(b32), free(y32);
}

static void conv_matches_reference(void **state)
{
    (void)state;
    for (size_t k = 1; k <= 7; k += 2) {
        conv_case(1, 33, 8, k);
        conv_case(2, 300, 12, k); /* row blocks of 256: taps reaching across a block edge */
    }
    conv_case(1, 2, 4, 7); /* N < k/2: most taps fall in the padding */
    conv_case(3, 1, 3, 5); /* one position: only the middle tap */
    conv_case(1, 513, 1, 3);
}

/* k = 1, W_0 = I: y = x + b. */
static void conv_identity(void **state)
{
    (void)state;
    const size_t batch = 2, n = 6, d = 4, nx = batch * n * d;
    tu_rng r = tu_rng_for("conv identity");
    double *x = tu_f64(nx), *y = tu_f64(nx), *want = tu_f64(nx), w[16] = {0},
           b[4] = {1, -2, 3, 0.5};
    tu_fill_normal(&r, x, nx, 1.0);
    for (size_t i = 0; i < d; i++)
        w[i * d + i] = 1;
    for (size_t e = 0; e < nx; e++)
        want[e] = x[e] + b[e % d];
    assert_int_equal(la_conv1d_forward(LA_FLOAT64, batch, n, d, 1, x, w, b, y), LA_OK);
    tu_assert_close_f64(y, want, nx, TOL_F64, "k = 1 identity convolution");
    free(x), free(y), free(want);
}

/* k = 3 with W_0 = I (the tap reading x_{i−1}), W_1 = W_2 = 0, b = 0: y_i = x_{i−1},
 * y_0 = 0 (padding), per sequence. */
static void conv_shift(void **state)
{
    (void)state;
    const size_t batch = 2, n = 5, d = 2, nx = batch * n * d;
    double x[20], y[20], want[20], w[12] = {0}, b[2] = {0, 0};
    for (size_t e = 0; e < nx; e++)
        x[e] = (double)e + 1;
    w[0] = w[3] = 1; /* W_0 = I (2×2) */
    for (size_t s = 0; s < batch; s++)
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < d; c++)
                want[(s * n + i) * d + c] = i == 0 ? 0 : x[(s * n + i - 1) * d + c];
    assert_int_equal(la_conv1d_forward(LA_FLOAT64, batch, n, d, 3, x, w, b, y), LA_OK);
    tu_assert_close_f64(y, want, nx, TOL_F64, "k = 3, first tap identity: shift by one");
    assert_int_equal(la_ref_conv1d_forward(batch, n, d, 3, x, w, b, y), LA_OK);
    tu_assert_close_f64(y, want, nx, TOL_F64, "reference: shift by one");
}

/* ---------------------------------------------------------------- threads, cost */

/* The split into tasks is fixed: 1 and 2 threads give bitwise the same output. */
static void same_across_threads(void **state)
{
    (void)state;
    const size_t batch = 2, n = 700, d = 16, k = 5, nx = batch * n * d;
    tu_rng r = tu_rng_for("threads");
    double *x = tu_f64(nx), *w = tu_f64(k * d * d), *b = tu_f64(d);
    fill_layer(&r, d, x, nx, w, k * d * d, b);
    float *x32 = tu_f32(nx), *w32 = tu_f32(k * d * d), *b32 = tu_f32(d);
    float *one = tu_f32(nx), *two = tu_f32(nx);
    tu_to_f32(x, x32, nx), tu_to_f32(w, w32, k * d * d), tu_to_f32(b, b32, d);
    assert_int_equal(la_set_num_threads(1), LA_OK);
    assert_int_equal(la_conv1d_forward(LA_FLOAT32, batch, n, d, k, x32, w32, b32, one), LA_OK);
    assert_int_equal(la_set_num_threads(2), LA_OK);
    assert_int_equal(la_conv1d_forward(LA_FLOAT32, batch, n, d, k, x32, w32, b32, two), LA_OK);
    assert_memory_equal(one, two, nx * sizeof *one);
    assert_int_equal(la_rnn_forward(LA_FLOAT32, batch, n, d, x32, w32, w32 + d * d, b32, two),
                     LA_OK);
    assert_int_equal(la_set_num_threads(1), LA_OK);
    assert_int_equal(la_rnn_forward(LA_FLOAT32, batch, n, d, x32, w32, w32 + d * d, b32, one),
                     LA_OK);
    assert_memory_equal(one, two, nx * sizeof *one);
    assert_int_equal(la_set_num_threads(0), LA_OK); /* the default again */
    free(x), free(w), free(b), free(x32), free(w32), free(b32), free(one), free(two);
}

static void cost_closed_forms(void **state)
{
    (void)state;
    double f = 0;
    assert_int_equal(la_rnn_cost(2, 10, 8, &f), LA_OK);
    assert_true(f == 2.0 * 10 * (4 * 64 + 2 * 8)); /* 2·N·(2d²) per entry, + b, tanh */
    assert_int_equal(la_conv1d_cost(1, 10, 8, 3, &f), LA_OK);
    assert_true(f == 10.0 * (2 * 3 * 64 + 8)); /* 2·k·N·d², + b */
    assert_int_equal(la_conv1d_cost(3, 1000, 64, 1, &f), LA_OK);
    assert_true(f == 3.0 * 1000 * (2 * 64 * 64 + 64));
}

int main(void)
{
    tu_init("test_rnn_conv");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rnn_matches_reference),
        cmocka_unit_test(rnn_without_recurrence),
        cmocka_unit_test(rnn_scalar),
        cmocka_unit_test(conv_matches_reference),
        cmocka_unit_test(conv_identity),
        cmocka_unit_test(conv_shift),
        cmocka_unit_test(same_across_threads),
        cmocka_unit_test(cost_closed_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_layer_range.c — the float32 layers refuse a value beyond float32's range with
 * LA_ERANGE instead of returning inf or NaN: a LayerNorm weight of 3e38 (la_layer_norm
 * and an encoder layer's norm1, post-LN and pre-LN), and a residual sum past 3.4e38.
 * The same calls in float64 return LA_OK and finite outputs, and the float32 layer on
 * ordinary weights stays LA_OK (no false alarm). Inputs are fresh random values (seed
 * printed, LA_TEST_SEED replays). */
#include "../testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { D = 8, H = 2, F = 16, N = 5 };

static void layer_norm_gamma_huge(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("layer_norm");
    double x[N * D], g[D], b[D] = {0}, y[N * D];
    float xf[N * D], gf[D], bf[D] = {0}, yf[N * D];
    tu_fill_normal(&r, x, N * D, 1);
    tu_to_f32(x, xf, N * D);
    for (int c = 0; c < D; c++)
        g[c] = 3e38, gf[c] = 3e38f;
    assert_int_equal(la_layer_norm(LA_FLOAT32, N, D, xf, gf, bf, 1e-5, yf), LA_ERANGE);
    assert_int_equal(la_layer_norm(LA_FLOAT64, N, D, x, g, b, 1e-5, y), LA_OK);
    assert_true(tu_all_finite_f64(y, N * D));
    /* a γ that fits: LA_OK, finite */
    for (int c = 0; c < D; c++)
        gf[c] = 1.5f;
    assert_int_equal(la_layer_norm(LA_FLOAT32, N, D, xf, gf, bf, 1e-5, yf), LA_OK);
    assert_true(tu_all_finite_f32(yf, N * D));
}

/* An encoder layer of random weights in both dtypes (the float32 one a copy of the
 * float64 one), edit applied to both; returns the statuses of the two calls. */
static void encoder_pair(const char *label, int pre_ln, void (*edit)(la_layer_weights *, double *),
                         la_status *s32, la_status *s64, int *finite64)
{
    tu_rng r = tu_rng_for(label);
    la_layer_config c;
    la_layer_config_init(&c, D, H, F);
    c.norm = pre_ln ? LA_NORM_PRE : LA_NORM_POST;
    la_layer_weights w64, w32;
    assert_int_equal(la_layer_weights_init(&w64, LA_FLOAT64, D, F, 0, tu_next(&r)), LA_OK);
    assert_int_equal(la_layer_weights_init(&w32, LA_FLOAT32, D, F, 0, 0), LA_OK);
    double x[N * D], y[N * D];
    float xf[N * D], yf[N * D];
    tu_fill_normal(&r, x, N * D, 1);
    if (edit) edit(&w64, x);
    for (int t = 0; t < LA_W_COUNT; t++) {
        size_t shape[2];
        int ndim;
        size_t n = la_layer_tensor_shape((la_layer_tensor)t, D, F, 0, shape, &ndim);
        if (n) tu_to_f32(w64.tensor[t], w32.tensor[t], n);
    }
    tu_to_f32(x, xf, N * D);
    *s32 = la_encoder_layer(&c, &w32, LA_FLOAT32, 1, N, xf, 0, NULL, yf);
    *s64 = la_encoder_layer(&c, &w64, LA_FLOAT64, 1, N, x, 0, NULL, y);
    *finite64 = tu_all_finite_f64(y, N * D);
    la_layer_weights_free(&w64);
    la_layer_weights_free(&w32);
}

static void norm1_huge(la_layer_weights *w, double *x)
{
    (void)x;
    double *g = w->tensor[LA_W_NORM1_WEIGHT];
    for (int c = 0; c < D; c++)
        g[c] = 3e38;
}

/* attention's output is out_proj.bias = 1e38 everywhere; x's column 0 is 3e38 */
static void residual_past_max(la_layer_weights *w, double *x)
{
    memset(w->tensor[LA_W_SELF_IN_WEIGHT], 0, 3 * D * D * sizeof(double));
    memset(w->tensor[LA_W_SELF_OUT_WEIGHT], 0, D * D * sizeof(double));
    double *b = w->tensor[LA_W_SELF_OUT_BIAS];
    for (int c = 0; c < D; c++)
        b[c] = 1e38;
    for (int i = 0; i < N; i++)
        x[i * D] = 3e38;
}

static void encoder_layers(void **state)
{
    (void)state;
    la_status s32, s64;
    int finite64;
    encoder_pair("plain", 0, NULL, &s32, &s64, &finite64);
    assert_int_equal(s32, LA_OK);
    assert_int_equal(s64, LA_OK);
    const struct {
        const char *name;
        int pre_ln;
        void (*edit)(la_layer_weights *, double *);
    } cases[] = {{"norm1 3e38, post-LN", 0, norm1_huge},
                 {"norm1 3e38, pre-LN", 1, norm1_huge},
                 {"residual past 3.4e38", 0, residual_past_max}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        encoder_pair(cases[i].name, cases[i].pre_ln, cases[i].edit, &s32, &s64, &finite64);
        if (s32 != LA_ERANGE)
            fail_msg("%s: float32 gave %s, want LA_ERANGE", cases[i].name, la_strerror(s32));
        if (s64 != LA_OK || !finite64)
            fail_msg("%s: float64 gave %s, %sfinite", cases[i].name, la_strerror(s64),
                     finite64 ? "" : "not ");
    }
}

int main(void)
{
    tu_init("test_layer_range");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layer_norm_gamma_huge),
        cmocka_unit_test(encoder_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_layer_positions.c — positions inside a layer's self-attention:
 * la_mha / _f32 with c->rotary (softmax and linear) and with the relative kernel,
 * against the same sublayer written out here in float64: projections, then per head the
 * float64 oracle of the attention on rotated (or not) q and k, then the output projection.
 * Cross-attention (x_kv != x_q) is never rotated. 1e-12 float64, 1e-5 float32; seed
 * printed. */
#include "../testutil.h"
#include "attention/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, N = 9, D = 8, H = 2, DH = D / H };

/* y (rows, out) = x (rows, in) Wᵀ + b, W (out, in). */
static void linear(const double *x, const double *w, const double *b, size_t rows, size_t in,
                   size_t out, double *y)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t o = 0; o < out; o++) {
            double s = b[o];
            for (size_t i = 0; i < in; i++)
                s += x[r * in + i] * w[o * in + i];
            y[r * out + o] = s;
        }
}

/* The sublayer in float64: Q, K, V into (B, H, N, DH), rotated when rotary (the formula:
 * pair c of row i by i·10000^(−2c/DH)), then the kernel's oracle (rotary linear: its
 * own), then concat · W_Oᵀ + b_O. */
static void reference(const la_layer_config *c, const double *x, const double *in_w,
                      const double *in_b, const double *out_w, const double *out_b, int causal,
                      double *out)
{
    double qkv[B * N * 3 * D], heads[3][B * H * N * DH], o[B * H * N * DH], concat[B * N * D];
    linear(x, in_w, in_b, B * N, D, 3 * D, qkv);
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < N; i++)
            for (size_t part = 0; part < 3; part++)
                for (size_t h = 0; h < H; h++)
                    for (size_t e = 0; e < DH; e++)
                        heads[part][((b * H + h) * N + i) * DH + e] =
                            qkv[(b * N + i) * 3 * D + part * D + h * DH + e];
    la_problem p;
    la_problem_init(&p, B, H, N, N, DH, DH);
    p.causal = causal;
    p.feature_map = c->feature_map;
    p.eps = c->linear_eps;
    p.params = c->params; /* the relative block (K, tables or their seed) */
    if (c->rotary && c->attention == LA_KERNEL_LINEAR) {
        assert_int_equal(la_ref_linear_attention_rotary(&p, 0, 0, heads[0], heads[1], heads[2], o),
                         LA_OK);
    } else {
        if (c->rotary)
            for (int part = 0; part < 2; part++)
                for (size_t r = 0; r < B * H; r++)
                    for (size_t i = 0; i < N; i++)
                        for (size_t pc = 0; pc < DH / 2; pc++) {
                            const double angle =
                                (double)i * exp(-log(10000.0) * (double)(2 * pc) / DH);
                            double *pair = heads[part] + (r * N + i) * DH + 2 * pc;
                            const double a = pair[0], bb = pair[1];
                            pair[0] = a * cos(angle) - bb * sin(angle);
                            pair[1] = a * sin(angle) + bb * cos(angle);
                        }
        assert_int_equal(la_ref_attention(c->attention, &p, heads[0], heads[1], heads[2], o),
                         LA_OK);
    }
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < N; i++)
                for (size_t e = 0; e < DH; e++)
                    concat[(b * N + i) * D + h * DH + e] = o[((b * H + h) * N + i) * DH + e];
    linear(concat, out_w, out_b, B * N, D, D, out);
}

static void check(const char *what, la_kernel kernel, int rotary, int causal, tu_rng *rng)
{
    double x[B * N * D], in_w[3 * D * D], in_b[3 * D], out_w[D * D], out_b[D];
    double y[B * N * D], ref[B * N * D];
    float x32[B * N * D], in_w32[3 * D * D], in_b32[3 * D], out_w32[D * D], out_b32[D];
    float y32[B * N * D];
    double *all[] = {x, in_w, in_b, out_w, out_b};
    float *all32[] = {x32, in_w32, in_b32, out_w32, out_b32};
    const size_t sizes[] = {B * N * D, 3 * D * D, 3 * D, D * D, D};
    for (int t = 0; t < 5; t++) {
        tu_fill_normal(rng, all[t], sizes[t], t == 0 ? 1 : 0.4);
        tu_to_f32(all[t], all32[t], sizes[t]);
        tu_to_f64(all32[t], all[t], sizes[t]);
    }
    la_layer_config c;
    la_layer_config_init(&c, D, H, 16);
    c.attention = kernel;
    c.rotary = rotary;
    la_relative_params relative = LA_RELATIVE_PARAMS_INIT;
    relative.max_distance = 2;
    relative.seed = 99;
    c.params = &relative.head;
    assert_int_equal(la_layer_config_check(&c), LA_OK);
    reference(&c, x, in_w, in_b, out_w, out_b, causal, ref);
    assert_int_equal(
        la_mha(&c, LA_FLOAT64, B, N, N, x, x, causal, NULL, in_w, in_b, out_w, out_b, y), LA_OK);
    tu_assert_close_f64(y, ref, B * N * D, 1e-12, "%s causal %d float64", what, causal);
    assert_int_equal(la_mha(&c, LA_FLOAT32, B, N, N, x32, x32, causal, NULL, in_w32, in_b32,
                            out_w32, out_b32, y32),
                     LA_OK);
    tu_assert_close_f32(y32, ref, B * N * D, 1e-5, "%s causal %d float32", what, causal);
    if (rotary) {
        /* cross-attention (a copy of x as x_kv): no rotation, the plain sublayer */
        double x_kv[B * N * D];
        memcpy(x_kv, x, sizeof x_kv);
        la_layer_config plain = c;
        plain.rotary = 0;
        reference(&plain, x, in_w, in_b, out_w, out_b, causal, ref);
        assert_int_equal(
            la_mha(&c, LA_FLOAT64, B, N, N, x, x_kv, causal, NULL, in_w, in_b, out_w, out_b, y),
            LA_OK);
        tu_assert_close_f64(y, ref, B * N * D, 1e-12, "%s cross-attention, causal %d", what,
                            causal);
    }
}

static void positions_in_self_attention(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("positions_in_self_attention");
    for (int causal = 0; causal <= 1; causal++) {
        check("softmax, rotary", LA_KERNEL_SOFTMAX, 1, causal, &rng);
        check("linear, rotary", LA_KERNEL_LINEAR, 1, causal, &rng);
        check("local, rotary", LA_KERNEL_LOCAL, 1, causal, &rng);
        check("relative (K = 2, drawn)", LA_KERNEL_RELATIVE, 0, causal, &rng);
        check("relative and rotary", LA_KERNEL_RELATIVE, 1, causal, &rng);
    }
}

/* The configuration's rules: rotary 0 or 1, d_h even, not FAVOR+; K >= 1; both tables; a
 * parameter chain la_problem_check would refuse (an unknown kind, a kind twice, a cycle). */
static void config_rules(void **state)
{
    (void)state;
    la_layer_config c;
    la_layer_config_init(&c, 6, 2, 8); /* d_h = 3 */
    c.rotary = 1;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    la_layer_config_init(&c, 8, 2, 8);
    c.rotary = 2;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    c.rotary = 1, c.attention = LA_KERNEL_FAVOR;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    la_layer_config_init(&c, 8, 2, 8);
    la_relative_params relative = LA_RELATIVE_PARAMS_INIT;
    c.params = &relative.head;
    assert_int_equal(la_layer_config_check(&c), LA_OK);
    relative.max_distance = 0;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    relative.max_distance = LA_DEFAULT_MAX_DISTANCE;
    const double table[20] = {0};
    relative.rel_k = table;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    relative.rel_v = table;
    assert_int_equal(la_layer_config_check(&c), LA_OK);
    /* the chain's rules: an unknown kind, a kind twice, a block that is its own next */
    la_local_params local = LA_LOCAL_PARAMS_INIT;
    local.head.next = &relative.head;
    c.params = &local.head;
    assert_int_equal(la_layer_config_check(&c), LA_OK);
    local.head.kind = (la_params_kind)0;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    local.head.kind = LA_PARAMS_END;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    local.head.kind = LA_PARAMS_LOCAL;
    la_relative_params again = LA_RELATIVE_PARAMS_INIT; /* relative twice */
    again.head.next = &local.head;
    c.params = &again.head;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    c.params = &local.head, local.head.next = &local.head;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    local.head.next = NULL, local.window = 0;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
}

int main(void)
{
    tu_init("test_layer_positions");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(positions_in_self_attention),
        cmocka_unit_test(config_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}

/* test_accounting.c — exact parameter counts against the closed forms for many sizes,
 * against the tensors the weights really hold, and against PyTorch's own numbers for
 * D = 512, H = 8, d_ff = 2048; the layer FLOP model against its formulas and against
 * la_attention_cost. */
#include "../testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* PyTorch (sum(p.numel() for p in m.parameters())), D = 512, H = 8, d_ff = 2048:
 *   nn.TransformerEncoderLayer 3,152,384; nn.TransformerDecoderLayer 4,204,032;
 *   nn.Transformer (6 + 6 layers, final norms) 44,140,544. */
static void pytorch_numbers(void **state)
{
    (void)state;
    la_model_size s = {512, 8, 2048, 6, 6, 0, 0, 0, 0, 0};
    la_param_count c;
    assert_int_equal(la_param_counts(&s, &c), LA_OK);
    assert_int_equal(c.encoder_layer, 3152384);
    assert_int_equal(c.decoder_layer, 4204032);
    assert_int_equal(c.total, 44140544);
    assert_int_equal(c.mha, 1050624);
    assert_int_equal(c.ffn, 2099712);
    assert_int_equal(c.layer_norm, 1024);
    assert_int_equal(c.encoder, 6 * 3152384 + 1024);
    assert_int_equal(c.decoder, 6 * 4204032 + 1024);
    /* the D² terms: 6·12·512² + 6·16·512² */
    assert_int_equal(c.approx_12d2, 6ull * 12 * 512 * 512 + 6ull * 16 * 512 * 512);
    assert_true(fabs(c.approx_gap - (44140544.0 - 44040192.0) / 44140544.0) < 1e-15);
}

/* The closed forms for many sizes, and the element count of the tensors that
 * la_layer_weights_init / la_transformer_weights_init really allocate. */
static void closed_forms(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("closed_forms");
    size_t checked = 0;
    for (uint64_t D = 1; D <= 96; D += 1 + D / 8) {
        for (int trial = 0; trial < 3; trial++) {
            uint64_t H = 1 + tu_next(&r) % D;
            while (D % H)
                H--;
            uint64_t F = trial == 0 ? 4 * D : 1 + tu_next(&r) % 300;
            uint64_t L = tu_next(&r) % 5, L2 = tu_next(&r) % 5, V = tu_next(&r) % 1000;
            uint64_t P = tu_next(&r) % 600;
            la_model_size s = {D, H, F, L, L2, V, P, 0, 0, 0};
            la_param_count c;
            assert_int_equal(la_param_counts(&s, &c), LA_OK);
            uint64_t mha = 4 * D * D + 4 * D, ffn = 2 * D * F + F + D, ln = 2 * D;
            assert_int_equal(c.mha, mha);
            assert_int_equal(c.ffn, ffn);
            assert_int_equal(c.layer_norm, ln);
            assert_int_equal(c.encoder_layer, mha + ffn + 2 * ln);
            assert_int_equal(c.decoder_layer, 2 * mha + ffn + 3 * ln);
            if (F == 4 * D) {
                assert_int_equal(c.encoder_layer, 12 * D * D + 13 * D);
                assert_int_equal(c.decoder_layer, 16 * D * D + 19 * D);
            }
            uint64_t enc = L ? L * (mha + ffn + 2 * ln) + ln : 0;
            uint64_t dec = L2 ? L2 * (2 * mha + ffn + 3 * ln) + ln : 0;
            assert_int_equal(c.encoder, enc);
            assert_int_equal(c.decoder, dec);
            assert_int_equal(c.embedding, V * D);
            assert_int_equal(c.positional, P * D);
            assert_int_equal(c.total, enc + dec + V * D + P * D);
            assert_int_equal(c.approx_12d2, 12 * D * D * L + 16 * D * D * L2);
            if (enc + dec)
                assert_true(fabs(c.approx_gap - ((double)(enc + dec) - (double)c.approx_12d2) /
                                                    (double)(enc + dec)) < 1e-12);

            /* the weights hold exactly that many parameters */
            la_layer_weights w;
            assert_int_equal(la_layer_weights_init(&w, LA_FLOAT32, D, F, 0, 1), LA_OK);
            assert_int_equal(w.n_params, c.encoder_layer);
            size_t sum = 0;
            for (int t = 0; t < LA_W_COUNT; t++)
                sum += la_layer_tensor_shape((la_layer_tensor)t, D, F, 0, NULL, NULL);
            assert_int_equal(sum, c.encoder_layer);
            la_layer_weights_free(&w);
            assert_int_equal(la_layer_weights_init(&w, LA_FLOAT32, D, F, 1, 1), LA_OK);
            assert_int_equal(w.n_params, c.decoder_layer);
            la_layer_weights_free(&w);
            if (L + L2 > 0 && D <= 32) {
                la_transformer_weights tw;
                assert_int_equal(la_transformer_weights_init(&tw, LA_FLOAT32, D, F, L, L2, 2),
                                 LA_OK);
                assert_int_equal(tw.n_params, enc + dec);
                la_transformer_weights_free(&tw);
            }
            checked++;
        }
    }
    printf("  %zu sizes checked\n", checked);
}

/* The approximation's gap: biases and norms only when d_ff = 4D, shrinking as 1/D. */
static void approximation_gap(void **state)
{
    (void)state;
    double previous = 1;
    for (size_t D = 64; D <= 8192; D *= 2) {
        la_model_size s = {D, 8, 4 * D, 12, 0, 0, 0, 0, 0, 0};
        la_param_count c;
        assert_int_equal(la_param_counts(&s, &c), LA_OK);
        /* exact = 12·(12D² + 13D) + 2D, approx = 12·12D² */
        double exact = 12.0 * (12.0 * D * D + 13.0 * D) + 2.0 * D;
        assert_true(fabs(c.approx_gap - (exact - 144.0 * D * D) / exact) < 1e-14);
        assert_true(c.approx_gap > 0 && c.approx_gap < previous);
        previous = c.approx_gap;
    }
}

/* Each option against its closed form, for random sizes and every combination of the
 * flags: biases off, RMSNorm, no final norm, embedding norm, pooler, untied head, and the
 * segment and relative-position tables. */
static void model_options(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_options");
    for (int trial = 0; trial < 40; trial++) {
        uint64_t D = 8 * (1 + tu_next(&r) % 64), H = 1 + tu_next(&r) % 8;
        while (D % H)
            H--;
        uint64_t F = 1 + tu_next(&r) % 4096, L = tu_next(&r) % 4, L2 = tu_next(&r) % 4;
        uint64_t V = tu_next(&r) % 50000, P = tu_next(&r) % 1024, T = tu_next(&r) % 3;
        uint64_t R = tu_next(&r) % 64;
        for (unsigned o = 0; o < 64; o++) {
            la_model_size s = {D, H, F, L, L2, V, P, T, R, o};
            la_param_count c;
            assert_int_equal(la_param_counts(&s, &c), LA_OK);
            const int bias = !(o & LA_MODEL_NO_BIAS);
            uint64_t mha = 4 * D * D + (bias ? 4 * D : 0);
            uint64_t ffn = 2 * D * F + (bias ? F + D : 0);
            uint64_t norm = o & LA_MODEL_RMS_NORM ? D : 2 * D;
            uint64_t fin = o & LA_MODEL_NO_FINAL_NORM ? 0 : norm;
            uint64_t stacks = (L > 0) + (L2 > 0);
            uint64_t enc = L ? L * (mha + ffn + 2 * norm) + fin : 0;
            uint64_t dec = L2 ? L2 * (2 * mha + ffn + 3 * norm) + fin : 0;
            uint64_t emb_norm = o & LA_MODEL_EMBEDDING_NORM ? stacks * norm : 0;
            uint64_t pooler = o & LA_MODEL_POOLER ? D * D + (bias ? D : 0) : 0;
            uint64_t head = o & LA_MODEL_UNTIED_HEAD ? V * D : 0;
            assert_int_equal(c.layer_norm, norm);
            assert_int_equal(c.encoder, enc);
            assert_int_equal(c.decoder, dec);
            assert_int_equal(c.token_type, T * D);
            assert_int_equal(c.relative_position, stacks * R * H);
            assert_int_equal(c.embedding_norm, emb_norm);
            assert_int_equal(c.pooler, pooler);
            assert_int_equal(c.head, head);
            assert_int_equal(c.total, enc + dec + V * D + P * D + T * D + stacks * R * H +
                                          emb_norm + pooler + head);
        }
    }
    la_model_size bad = {64, 4, 256, 1, 0, 0, 0, 0, 0, 64}; /* an unknown option bit */
    la_param_count c;
    assert_int_equal(la_param_counts(&bad, &c), LA_EINVAL);
}

static void param_errors(void **state)
{
    (void)state;
    la_param_count c;
    la_model_size s = {512, 7, 2048, 6, 6, 0, 0, 0, 0, 0};
    assert_int_equal(la_param_counts(&s, &c), LA_EINVAL); /* 7 does not divide 512 */
    s.heads = 0;
    assert_int_equal(la_param_counts(&s, &c), LA_EINVAL);
    s.heads = 8;
    s.d_ff = 0;
    assert_int_equal(la_param_counts(&s, &c), LA_EINVAL);
    s.d_ff = 2048;
    assert_int_equal(la_param_counts(NULL, &c), LA_EINVAL);
    assert_int_equal(la_param_counts(&s, NULL), LA_EINVAL);
    la_model_size huge = {(size_t)1 << 33, 1, 1, 1, 0, 0, 0, 0, 0, 0}; /* 4·D² > 2⁶⁴ */
    assert_int_equal(la_param_counts(&huge, &c), LA_EOVERFLOW);
}

/* The layer FLOP model: every component against its formula, attention from
 * la_attention_cost, totals adding up, causal halving the softmax attention. */
static void layer_flops(void **state)
{
    (void)state;
    const double B = 2, N = 300, M = 200, D = 64, H = 4, F = 256;
    for (int decoder = 0; decoder <= 1; decoder++) {
        /* kinds 0, 1: softmax or linear everywhere; 2, 3: the cross-attention the other */
        for (int kind = 0; kind < 4; kind++) {
            la_layer_config c;
            la_layer_config_init(&c, (size_t)D, (size_t)H, (size_t)F);
            c.attention = kind % 2 ? LA_KERNEL_LINEAR : LA_KERNEL_SOFTMAX;
            la_kernel cross_kernel = c.attention;
            if (kind >= 2)
                c.cross_attention = cross_kernel = kind % 2 ? LA_KERNEL_SOFTMAX : LA_KERNEL_LINEAR;
            la_layer_cost lc;
            assert_int_equal(la_layer_cost_model(&c, decoder, 2, 300, 200, 1, LA_FLOAT32, &lc),
                             LA_OK);
            double rows = B * N, proj = 2 * rows * D * D + rows * D;
            double want_proj = 4 * proj;
            if (decoder) want_proj += 2 * proj + 2 * (2 * B * M * D * D + B * M * D);
            assert_true(lc.projections == want_proj);
            assert_true(lc.ffn ==
                        2 * rows * D * F + rows * F + rows * F + 2 * rows * F * D + rows * D);
            double norms = decoder ? 3 : 2;
            assert_true(lc.layer_norm == norms * rows * (8 * D + 5));
            assert_true(lc.residual == norms * rows * D);
            la_problem p;
            la_cost self, cross = {0};
            la_problem_init(&p, 2, 4, 300, 300, 16, 16);
            p.causal = 1;
            assert_int_equal(la_attention_cost(c.attention, &p, LA_FLOAT32, &self), LA_OK);
            if (decoder) {
                la_problem_init(&p, 2, 4, 300, 200, 16, 16);
                assert_int_equal(la_attention_cost(cross_kernel, &p, LA_FLOAT32, &cross), LA_OK);
                assert_true(lc.cross_attention.flops_total == cross.flops_total);
            }
            assert_true(lc.attention == self.flops_total + cross.flops_total);
            assert_true(lc.self_attention.flops_total == self.flops_total);
            assert_true(lc.total ==
                        lc.projections + lc.attention + lc.ffn + lc.layer_norm + lc.residual);
            la_model_size s = {64, 4, 256, 1, 0, 0, 0, 0, 0, 0};
            la_param_count pc;
            assert_int_equal(la_param_counts(&s, &pc), LA_OK);
            assert_true(lc.weight_bytes ==
                        4.0 * (double)(decoder ? pc.decoder_layer : pc.encoder_layer));
            assert_true(lc.activation_bytes > 0 && lc.workspace_bytes > 0);
        }
    }
    /* activation bytes, exactly: with d_ff = 4096 the FFN's hidden rows (min(B·N, 4096) ×
     * d_ff) are the peak, plus the working copy and one sublayer output (B·N·D each) */
    {
        la_layer_config c;
        la_layer_config_init(&c, 16, 4, 4096);
        la_layer_cost lc;
        assert_int_equal(la_layer_cost_model(&c, 0, 1, 100, 0, 0, LA_FLOAT32, &lc), LA_OK);
        assert_true(lc.activation_bytes == 4.0 * (100 * 4096 + 2 * 100 * 16));
        assert_int_equal(la_layer_cost_model(&c, 0, 3, 2000, 0, 0, LA_FLOAT64, &lc), LA_OK);
        assert_true(lc.activation_bytes == 8.0 * (4096 * 4096 + 2 * 6000 * 16));
        /* a decoder over a long memory: Q (B·N·D), K and V and the projection buffer
         * (B·max(N, M)·D each) are the peak */
        la_layer_config_init(&c, 64, 4, 16);
        assert_int_equal(la_layer_cost_model(&c, 1, 1, 10, 1000, 0, LA_FLOAT32, &lc), LA_OK);
        assert_true(lc.activation_bytes == 4.0 * (10 * 64 + 3 * 1000 * 64 + 2 * 10 * 64));
    }
    /* softmax self-attention FLOPs grow as N², linear as N */
    la_layer_config c;
    la_layer_config_init(&c, 64, 4, 256);
    la_layer_cost a, b;
    assert_int_equal(la_layer_cost_model(&c, 0, 1, 1000, 0, 0, LA_FLOAT64, &a), LA_OK);
    assert_int_equal(la_layer_cost_model(&c, 0, 1, 2000, 0, 0, LA_FLOAT64, &b), LA_OK);
    assert_true(fabs(b.attention / a.attention - 4) < 1e-12);
    assert_true(fabs(b.ffn / a.ffn - 2) < 1e-12);
    c.attention = LA_KERNEL_LINEAR;
    assert_int_equal(la_layer_cost_model(&c, 0, 1, 1000, 0, 0, LA_FLOAT64, &a), LA_OK);
    assert_int_equal(la_layer_cost_model(&c, 0, 1, 2000, 0, 0, LA_FLOAT64, &b), LA_OK);
    assert_true(fabs(b.attention / a.attention - 2) < 1e-12);
    /* errors */
    assert_int_equal(la_layer_cost_model(&c, 1, 1, 10, 0, 0, LA_FLOAT64, &a), LA_EINVAL);
    assert_int_equal(la_layer_cost_model(&c, 0, 0, 10, 0, 0, LA_FLOAT64, &a), LA_EINVAL);
    assert_int_equal(la_layer_cost_model(&c, 0, 1, 10, 0, 0, (la_dtype)5, &a), LA_EINVAL);
    c.heads = 3;
    assert_int_equal(la_layer_cost_model(&c, 0, 1, 10, 0, 0, LA_FLOAT64, &a), LA_EINVAL);
}

int main(void)
{
    tu_init("test_accounting");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pytorch_numbers),   cmocka_unit_test(closed_forms),
        cmocka_unit_test(approximation_gap), cmocka_unit_test(param_errors),
        cmocka_unit_test(model_options),     cmocka_unit_test(layer_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

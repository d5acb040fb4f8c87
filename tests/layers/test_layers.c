/* test_layers.c — the Transformer layers against float64 references written below as
 * plain loops (the attention itself through la_ref_attention, the kernels' oracle), on
 * random inputs and random weights (random biases, γ and β too, so no term hides):
 * LayerNorm, FFN (ReLU, GELU), multi-head self- and cross-attention, encoder and decoder
 * layers post-LN and pre-LN, softmax and linear attention, causal and key lengths,
 * H = 1 and H = D, stacks; float32 within 1e-5, float64 within 1e-11. Also the weights:
 * Xavier init, loading from .npy files and every refusal. */
#include "../testutil.h"
#include "layers/layers_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-11

/* ---------------------------------------------------------------- references */

/* y (rows, n_out) = x (rows, n_in) Wᵀ + b; W rows are n_in long (row stride ldw). */
static void ref_linear(size_t rows, size_t n_in, size_t n_out, const double *x, const double *w,
                       size_t ldw, const double *b, double *y)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t o = 0; o < n_out; o++) {
            double acc = b[o];
            for (size_t c = 0; c < n_in; c++)
                acc += x[i * n_in + c] * w[o * ldw + c];
            y[i * n_out + o] = acc;
        }
}

/* LayerNorm of each row: (x − mean) / √(var + eps) · γ + β, biased variance. */
static void ref_layer_norm(size_t rows, size_t d, const double *x, const double *g,
                           const double *be, double eps, double *y)
{
    for (size_t i = 0; i < rows; i++) {
        double mean = 0, var = 0;
        for (size_t c = 0; c < d; c++)
            mean += x[i * d + c];
        mean /= (double)d;
        for (size_t c = 0; c < d; c++)
            var += (x[i * d + c] - mean) * (x[i * d + c] - mean);
        var /= (double)d;
        for (size_t c = 0; c < d; c++)
            y[i * d + c] = (x[i * d + c] - mean) / sqrt(var + eps) * g[c] + be[c];
    }
}

/* FFN: act(x W1ᵀ + b1) W2ᵀ + b2. */
static void ref_ffn(size_t rows, size_t d, size_t f, int gelu, const double *x, const double *w1,
                    const double *b1, const double *w2, const double *b2, double *y)
{
    double *h = tu_f64(rows * f);
    ref_linear(rows, d, f, x, w1, d, b1, h);
    for (size_t e = 0; e < rows * f; e++)
        h[e] = gelu ? 0.5 * h[e] * (1 + erf(h[e] / sqrt(2.0))) : (h[e] > 0 ? h[e] : 0);
    ref_linear(rows, f, d, h, w2, f, b2, y);
    free(h);
}

/* Multi-head attention: project, split heads into (B, H, ·, d_h), la_ref_attention,
 * concatenate, project out. */
static void ref_mha(const la_layer_config *c, size_t B, size_t N, size_t M, const double *xq,
                    const double *xkv, int causal, const int64_t *lengths, const double *in_w,
                    const double *in_b, const double *out_w, const double *out_b, double *y)
{
    const size_t D = c->d_model, H = c->heads, dh = D / H;
    double *Q = tu_f64(B * N * D), *K = tu_f64(B * M * D), *V = tu_f64(B * M * D);
    ref_linear(B * N, D, D, xq, in_w, D, in_b, Q);
    ref_linear(B * M, D, D, xkv, in_w + D * D, D, in_b + D, K);
    ref_linear(B * M, D, D, xkv, in_w + 2 * D * D, D, in_b + 2 * D, V);
    double *qh = tu_f64(B * N * D), *kh = tu_f64(B * M * D), *vh = tu_f64(B * M * D);
    double *oh = tu_f64(B * N * D), *concat = tu_f64(B * N * D);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t a = 0; a < dh; a++) {
                for (size_t i = 0; i < N; i++)
                    qh[((b * H + h) * N + i) * dh + a] = Q[(b * N + i) * D + h * dh + a];
                for (size_t j = 0; j < M; j++) {
                    kh[((b * H + h) * M + j) * dh + a] = K[(b * M + j) * D + h * dh + a];
                    vh[((b * H + h) * M + j) * dh + a] = V[(b * M + j) * D + h * dh + a];
                }
            }
    la_problem p;
    la_problem_init(&p, B, H, N, M, dh, dh);
    p.causal = causal;
    p.key_lengths = lengths;
    p.feature_map = c->feature_map;
    p.eps = c->linear_eps;
    assert_int_equal(la_ref_attention(c->attention, &p, qh, kh, vh, oh), LA_OK);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < N; i++)
                for (size_t a = 0; a < dh; a++)
                    concat[(b * N + i) * D + h * dh + a] = oh[((b * H + h) * N + i) * dh + a];
    ref_linear(B * N, D, D, concat, out_w, D, out_b, y);
    free(Q), free(K), free(V), free(qh), free(kh), free(vh), free(oh), free(concat);
}

#define WT(w, t) ((const double *)(w)->tensor[(t)])

/* One attention sublayer in place on x: post x = LN(x + MHA(x, kv)); pre x = x + MHA(LN(x), kv). */
static void ref_attention_sublayer(const la_layer_config *c, const la_layer_weights *w, int cross,
                                   size_t B, size_t N, size_t M, double *x, const double *kv,
                                   int causal, const int64_t *lengths, la_layer_tensor norm)
{
    const size_t D = c->d_model;
    la_layer_tensor base = cross ? LA_W_CROSS_IN_WEIGHT : LA_W_SELF_IN_WEIGHT;
    double *in = tu_f64(B * N * D), *t = tu_f64(B * N * D);
    /* cross-attention runs c->cross_attention, unless that is LA_KERNEL_COUNT */
    la_layer_config ac = *c;
    if (cross && c->cross_attention != LA_KERNEL_COUNT) ac.attention = c->cross_attention;
    if (c->norm == LA_NORM_PRE)
        ref_layer_norm(B * N, D, x, WT(w, norm), WT(w, norm + 1), c->norm_eps, in);
    else
        memcpy(in, x, B * N * D * sizeof *in);
    ref_mha(&ac, B, N, cross ? M : N, in, cross ? kv : in, causal, lengths, WT(w, base),
            WT(w, base + 1), WT(w, base + 2), WT(w, base + 3), t);
    for (size_t e = 0; e < B * N * D; e++)
        x[e] += t[e];
    if (c->norm == LA_NORM_POST)
        ref_layer_norm(B * N, D, x, WT(w, norm), WT(w, norm + 1), c->norm_eps, x);
    free(in), free(t);
}

static void ref_ffn_sublayer(const la_layer_config *c, const la_layer_weights *w, size_t rows,
                             double *x, la_layer_tensor norm)
{
    const size_t D = c->d_model;
    double *in = tu_f64(rows * D), *t = tu_f64(rows * D);
    if (c->norm == LA_NORM_PRE)
        ref_layer_norm(rows, D, x, WT(w, norm), WT(w, norm + 1), c->norm_eps, in);
    else
        memcpy(in, x, rows * D * sizeof *in);
    ref_ffn(rows, D, c->d_ff, c->activation == LA_ACTIVATION_GELU, in, WT(w, LA_W_LINEAR1_WEIGHT),
            WT(w, LA_W_LINEAR1_BIAS), WT(w, LA_W_LINEAR2_WEIGHT), WT(w, LA_W_LINEAR2_BIAS), t);
    for (size_t e = 0; e < rows * D; e++)
        x[e] += t[e];
    if (c->norm == LA_NORM_POST)
        ref_layer_norm(rows, D, x, WT(w, norm), WT(w, norm + 1), c->norm_eps, x);
    free(in), free(t);
}

/* nn.TransformerEncoderLayer, in place on x (B, N, D). */
static void ref_encoder_layer(const la_layer_config *c, const la_layer_weights *w, size_t B,
                              size_t N, double *x, int causal, const int64_t *lengths)
{
    ref_attention_sublayer(c, w, 0, B, N, N, x, NULL, causal, lengths, LA_W_NORM1_WEIGHT);
    ref_ffn_sublayer(c, w, B * N, x, LA_W_NORM2_WEIGHT);
}

/* nn.TransformerDecoderLayer, in place on x (B, N, D), memory (B, M, D). */
static void ref_decoder_layer(const la_layer_config *c, const la_layer_weights *w, size_t B,
                              size_t N, size_t M, double *x, const double *mem, int causal,
                              const int64_t *mem_lengths)
{
    ref_attention_sublayer(c, w, 0, B, N, N, x, NULL, causal, NULL, LA_W_NORM1_WEIGHT);
    ref_attention_sublayer(c, w, 1, B, N, M, x, mem, 0, mem_lengths, LA_W_NORM2_WEIGHT);
    ref_ffn_sublayer(c, w, B * N, x, LA_W_NORM3_WEIGHT);
}

/* ---------------------------------------------------------------- fixtures */

/* Random weights in both precisions, the float64 ones holding exactly the float32
 * values: matrices N(0, 1/D), biases N(0, 0.1²), γ 1 + N(0, 0.1²), β N(0, 0.1²). */
static void random_layer(tu_rng *r, size_t D, size_t F, int decoder, la_layer_weights *w64,
                         la_layer_weights *w32)
{
    assert_int_equal(la_layer_weights_init(w64, LA_FLOAT64, D, F, decoder, tu_next(r)), LA_OK);
    assert_int_equal(la_layer_weights_init(w32, LA_FLOAT32, D, F, decoder, 0), LA_OK);
    for (int t = 0; t < LA_W_COUNT; t++) {
        size_t shape[2];
        int ndim;
        size_t n = la_layer_tensor_shape((la_layer_tensor)t, D, F, decoder, shape, &ndim);
        if (!n) continue;
        double *x = w64->tensor[t];
        float *y = w32->tensor[t];
        int gamma = t == LA_W_NORM1_WEIGHT || t == LA_W_NORM2_WEIGHT || t == LA_W_NORM3_WEIGHT;
        for (size_t e = 0; e < n; e++) {
            double v = ndim == 2 ? tu_normal(r) / sqrt((double)shape[1]) : 0.1 * tu_normal(r);
            if (gamma) v += 1;
            y[e] = (float)v;
            x[e] = (double)y[e];
        }
    }
}

/* Random input in both precisions (the float64 copy holds the float32 values). */
static void random_input(tu_rng *r, size_t n, double **x64, float **x32)
{
    *x64 = tu_f64(n);
    *x32 = tu_f32(n);
    for (size_t e = 0; e < n; e++) {
        (*x32)[e] = (float)tu_normal(r);
        (*x64)[e] = (double)(*x32)[e];
    }
}

static const char *kind_name(const la_layer_config *c)
{
    return c->attention == LA_KERNEL_LINEAR ? "linear" : la_kernel_name(c->attention);
}

/* ---------------------------------------------------------------- tests */

/* LayerNorm and the FFN (ReLU and GELU) against the plain loops; in place too. */
static void norm_and_ffn(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("norm_and_ffn");
    const size_t rows = 131, D = 24, F = 40;
    la_layer_weights w64, w32;
    random_layer(&r, D, F, 0, &w64, &w32);
    double *x64, *ref = tu_f64(rows * D), *y64 = tu_f64(rows * D);
    float *x32, *y32 = tu_f32(rows * D);
    random_input(&r, rows * D, &x64, &x32);
    for (size_t e = 0; e < rows * D; e++)
        x64[e] = (double)(x32[e] = (float)(3 + 2 * x32[e]));

    ref_layer_norm(rows, D, x64, WT(&w64, LA_W_NORM1_WEIGHT), WT(&w64, LA_W_NORM1_BIAS), 1e-5, ref);
    assert_int_equal(la_layer_norm(LA_FLOAT64, rows, D, x64, w64.tensor[LA_W_NORM1_WEIGHT],
                                   w64.tensor[LA_W_NORM1_BIAS], 1e-5, y64),
                     LA_OK);
    tu_assert_close_f64(y64, ref, rows * D, TOL_F64, "layer_norm f64");
    memcpy(y32, x32, rows * D * sizeof *y32); /* in place */
    assert_int_equal(la_layer_norm(LA_FLOAT32, rows, D, y32, w32.tensor[LA_W_NORM1_WEIGHT],
                                   w32.tensor[LA_W_NORM1_BIAS], 1e-5, y32),
                     LA_OK);
    tu_assert_close_f32(y32, ref, rows * D, TOL_F32, "layer_norm f32");

    for (int act = 0; act <= 1; act++) {
        la_layer_config c;
        la_layer_config_init(&c, D, 4, F);
        c.activation = (la_activation)act;
        ref_ffn(rows, D, F, act, x64, WT(&w64, LA_W_LINEAR1_WEIGHT), WT(&w64, LA_W_LINEAR1_BIAS),
                WT(&w64, LA_W_LINEAR2_WEIGHT), WT(&w64, LA_W_LINEAR2_BIAS), ref);
        assert_int_equal(la_ffn(&c, LA_FLOAT64, rows, x64, w64.tensor[LA_W_LINEAR1_WEIGHT],
                                w64.tensor[LA_W_LINEAR1_BIAS], w64.tensor[LA_W_LINEAR2_WEIGHT],
                                w64.tensor[LA_W_LINEAR2_BIAS], y64),
                         LA_OK);
        tu_assert_close_f64(y64, ref, rows * D, TOL_F64, "ffn f64 act=%d", act);
        memcpy(y32, x32, rows * D * sizeof *y32);
        assert_int_equal(la_ffn(&c, LA_FLOAT32, rows, y32, w32.tensor[LA_W_LINEAR1_WEIGHT],
                                w32.tensor[LA_W_LINEAR1_BIAS], w32.tensor[LA_W_LINEAR2_WEIGHT],
                                w32.tensor[LA_W_LINEAR2_BIAS], y32),
                         LA_OK);
        tu_assert_close_f32(y32, ref, rows * D, TOL_F32, "ffn f32 act=%d", act);
    }
    la_layer_weights_free(&w64);
    la_layer_weights_free(&w32);
    free(x64), free(x32), free(ref), free(y64), free(y32);
}

/* The FFN past one chunk of LA_FFN_CHUNK_ROWS rows (in place: a later chunk must still
 * read its own x rows) against the plain loops, and bitwise the same output on 1, 2 and
 * 3 threads at a size where BLIS packs and splits its loops (each product runs on BLIS's
 * threads, which split rows and columns, never the sum over k). */
static void ffn_chunks_and_threads(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("ffn_chunks_and_threads");
    const int threads = la_get_num_threads();
    for (int big = 0; big <= 1; big++) {
        /* small: rows across two chunks; big: one chunk of products worth threading (the
         * quick profile: 300 rows, still several of BLIS's row blocks, the same D and F) */
        const size_t big_rows = tu_quick() ? 300 : 700;
        const size_t rows = big ? big_rows : LA_FFN_CHUNK_ROWS + 131, D = big ? 192 : 24,
                     F = big ? 768 : 40;
        la_layer_weights w64, w32;
        random_layer(&r, D, F, 0, &w64, &w32);
        double *x64, *ref = tu_f64(rows * D), *y64 = tu_f64(rows * D);
        float *x32, *y32 = tu_f32(rows * D), *first = tu_f32(rows * D);
        random_input(&r, rows * D, &x64, &x32);
        la_layer_config c;
        la_layer_config_init(&c, D, 4, F);
        ref_ffn(rows, D, F, 0, x64, WT(&w64, LA_W_LINEAR1_WEIGHT), WT(&w64, LA_W_LINEAR1_BIAS),
                WT(&w64, LA_W_LINEAR2_WEIGHT), WT(&w64, LA_W_LINEAR2_BIAS), ref);
        memcpy(y64, x64, rows * D * sizeof *y64); /* in place */
        assert_int_equal(la_ffn(&c, LA_FLOAT64, rows, y64, w64.tensor[LA_W_LINEAR1_WEIGHT],
                                w64.tensor[LA_W_LINEAR1_BIAS], w64.tensor[LA_W_LINEAR2_WEIGHT],
                                w64.tensor[LA_W_LINEAR2_BIAS], y64),
                         LA_OK);
        tu_assert_close_f64(y64, ref, rows * D, TOL_F64, "ffn f64 rows=%zu", rows);
        for (int t = 1; t <= 3; t++) {
            assert_int_equal(la_set_num_threads(t), LA_OK);
            memcpy(y32, x32, rows * D * sizeof *y32); /* in place */
            assert_int_equal(la_ffn(&c, LA_FLOAT32, rows, y32, w32.tensor[LA_W_LINEAR1_WEIGHT],
                                    w32.tensor[LA_W_LINEAR1_BIAS], w32.tensor[LA_W_LINEAR2_WEIGHT],
                                    w32.tensor[LA_W_LINEAR2_BIAS], y32),
                             LA_OK);
            tu_assert_close_f32(y32, ref, rows * D, TOL_F32, "ffn f32 rows=%zu threads=%d", rows,
                                t);
            if (t == 1)
                memcpy(first, y32, rows * D * sizeof *first);
            else
                assert_memory_equal(first, y32, rows * D * sizeof *first);
        }
        assert_int_equal(la_set_num_threads(threads), LA_OK);
        la_layer_weights_free(&w64);
        la_layer_weights_free(&w32);
        free(x64), free(x32), free(ref), free(y64), free(y32), free(first);
    }
}

/* One MHA case in both precisions. */
static void check_mha(tu_rng *r, la_kernel kernel, size_t B, size_t N, size_t M, size_t D, size_t H,
                      int cross, int causal, int lengths)
{
    la_layer_config c;
    la_layer_config_init(&c, D, H, 8);
    c.attention = kernel;
    la_layer_weights w64, w32;
    random_layer(r, D, 8, 1, &w64, &w32);
    if (!cross) M = N;
    double *xq64, *xkv64, *ref = tu_f64(B * N * D), *y64 = tu_f64(B * N * D);
    float *xq32, *xkv32, *y32 = tu_f32(B * N * D);
    random_input(r, B * N * D, &xq64, &xq32);
    random_input(r, B * M * D, &xkv64, &xkv32);
    int64_t len[4];
    for (size_t b = 0; b < B; b++)
        len[b] = 1 + (int64_t)(tu_next(r) % M);
    const int64_t *kl = lengths ? len : NULL;
    la_layer_tensor base = cross ? LA_W_CROSS_IN_WEIGHT : LA_W_SELF_IN_WEIGHT;
    const double *kv64 = cross ? xkv64 : xq64;
    const float *kv32 = cross ? xkv32 : xq32;
    ref_mha(&c, B, N, M, xq64, kv64, causal, kl, WT(&w64, base), WT(&w64, base + 1),
            WT(&w64, base + 2), WT(&w64, base + 3), ref);
    assert_int_equal(la_mha(&c, LA_FLOAT64, B, N, M, xq64, kv64, causal, kl, w64.tensor[base],
                            w64.tensor[base + 1], w64.tensor[base + 2], w64.tensor[base + 3], y64),
                     LA_OK);
    tu_assert_close_f64(y64, ref, B * N * D, TOL_F64,
                        "mha f64 %s B=%zu N=%zu M=%zu D=%zu H=%zu "
                        "cross=%d causal=%d lengths=%d",
                        la_kernel_name(kernel), B, N, M, D, H, cross, causal, lengths);
    assert_int_equal(la_mha(&c, LA_FLOAT32, B, N, M, xq32, kv32, causal, kl, w32.tensor[base],
                            w32.tensor[base + 1], w32.tensor[base + 2], w32.tensor[base + 3], y32),
                     LA_OK);
    /* hard attention's argmax is discontinuous: float32 rounding of the projections can
     * flip a near tie, so its float32 layer is only run here (the kernel's own tests
     * hold hard attention to the reference); everything else is compared */
    if (kernel != LA_KERNEL_HARD)
        tu_assert_close_f32(y32, ref, B * N * D, TOL_F32,
                            "mha f32 %s B=%zu N=%zu M=%zu D=%zu H=%zu "
                            "cross=%d causal=%d lengths=%d",
                            la_kernel_name(kernel), B, N, M, D, H, cross, causal, lengths);
    else
        assert_true(tu_all_finite_f32(y32, B * N * D));
    la_layer_weights_free(&w64);
    la_layer_weights_free(&w32);
    free(xq64), free(xkv64), free(ref), free(y64), free(xq32), free(xkv32), free(y32);
}

/* Self- and cross-attention, softmax, materializing, hard and linear, causal and key
 * lengths, H = 1, H = D and between. */
static void multi_head_attention(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("multi_head_attention");
    const la_kernel kernels[] = {LA_KERNEL_SOFTMAX, LA_KERNEL_SOFTMAX_MATERIALIZED, LA_KERNEL_HARD,
                                 LA_KERNEL_LINEAR};
    const size_t heads[] = {1, 3, 12};
    for (size_t ki = 0; ki < 4; ki++)
        for (size_t hi = 0; hi < 3; hi++)
            for (int cross = 0; cross <= 1; cross++)
                for (int causal = 0; causal <= 1; causal++)
                    check_mha(&r, kernels[ki], 2, 9, 6, 12, heads[hi], cross, causal,
                              (int)(tu_next(&r) % 2));
    /* more rows, two batch entries: the projections over all B·rows rows at once */
    check_mha(&r, LA_KERNEL_SOFTMAX, 2, 150, 150, 16, 4, 0, 1, 1);
    check_mha(&r, LA_KERNEL_LINEAR, 1, 130, 70, 16, 2, 1, 0, 0);
}

/* One encoder (or decoder) layer case in both precisions, out != x and out == x. */
static void check_layer(tu_rng *r, int decoder, la_kernel kernel, la_kernel cross_kernel,
                        la_norm_order norm, size_t B, size_t N, size_t M, size_t D, size_t H,
                        size_t F, int causal, int lengths, la_activation act)
{
    la_layer_config c;
    la_layer_config_init(&c, D, H, F);
    c.attention = kernel;
    c.cross_attention = cross_kernel;
    c.norm = norm;
    c.activation = act;
    la_layer_weights w64, w32;
    random_layer(r, D, F, decoder, &w64, &w32);
    double *x64, *m64 = NULL, *ref = tu_f64(B * N * D), *y64 = tu_f64(B * N * D);
    float *x32, *m32 = NULL, *y32 = tu_f32(B * N * D);
    random_input(r, B * N * D, &x64, &x32);
    if (decoder) random_input(r, B * M * D, &m64, &m32);
    int64_t len[4];
    for (size_t b = 0; b < B; b++)
        len[b] = 1 + (int64_t)(tu_next(r) % (decoder ? M : N));
    const int64_t *kl = lengths ? len : NULL;
    memcpy(ref, x64, B * N * D * sizeof *ref);
    if (decoder)
        ref_decoder_layer(&c, &w64, B, N, M, ref, m64, causal, kl);
    else
        ref_encoder_layer(&c, &w64, B, N, ref, causal, kl);
    const char *what = decoder ? "decoder" : "encoder";
    const char *arr = norm == LA_NORM_PRE ? "pre-LN" : "post-LN";

    la_status st =
        decoder ? la_decoder_layer(&c, &w64, LA_FLOAT64, B, N, M, x64, m64, causal, NULL, kl, y64)
                : la_encoder_layer(&c, &w64, LA_FLOAT64, B, N, x64, causal, kl, y64);
    assert_int_equal(st, LA_OK);
    tu_assert_close_f64(y64, ref, B * N * D, TOL_F64, "%s f64 %s %s H=%zu causal=%d lengths=%d",
                        what, arr, kind_name(&c), H, causal, lengths);
    memcpy(y32, x32, B * N * D * sizeof *y32); /* in place */
    st = decoder ? la_decoder_layer(&c, &w32, LA_FLOAT32, B, N, M, y32, m32, causal, NULL, kl, y32)
                 : la_encoder_layer(&c, &w32, LA_FLOAT32, B, N, y32, causal, kl, y32);
    assert_int_equal(st, LA_OK);
    tu_assert_close_f32(y32, ref, B * N * D, TOL_F32, "%s f32 %s %s H=%zu causal=%d lengths=%d",
                        what, arr, kind_name(&c), H, causal, lengths);
    la_layer_weights_free(&w64);
    la_layer_weights_free(&w32);
    free(x64), free(m64), free(ref), free(y64), free(x32), free(m32), free(y32);
}

/* Encoder layers: post-LN and pre-LN, softmax and linear, causal or not, H = 1 and H = D. */
static void encoder_layers(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("encoder_layers");
    const size_t heads[] = {1, 4, 16};
    for (int norm = 0; norm <= 1; norm++)
        for (int lin = 0; lin <= 1; lin++)
            for (size_t hi = 0; hi < 3; hi++)
                for (int causal = 0; causal <= 1; causal++)
                    check_layer(&r, 0, lin ? LA_KERNEL_LINEAR : LA_KERNEL_SOFTMAX, LA_KERNEL_COUNT,
                                (la_norm_order)norm, 2, 11, 11, 16, heads[hi], 24, causal,
                                (int)(tu_next(&r) % 2), (la_activation)(tu_next(&r) % 2));
    check_layer(&r, 0, LA_KERNEL_SOFTMAX, LA_KERNEL_COUNT, LA_NORM_POST, 1, 100, 100, 32, 4, 64, 0,
                0, LA_ACTIVATION_RELU);
}

/* Decoder layers: masked self-attention, cross-attention (M != N, memory lengths), FFN;
 * the cross-attention's kernel the self-attention's (LA_KERNEL_COUNT) or its own. */
static void decoder_layers(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("decoder_layers");
    const size_t heads[] = {1, 2, 8};
    const la_kernel cross[] = {LA_KERNEL_COUNT, LA_KERNEL_SOFTMAX, LA_KERNEL_LINEAR};
    for (int norm = 0; norm <= 1; norm++)
        for (int lin = 0; lin <= 1; lin++)
            for (size_t ci = 0; ci < 3; ci++)
                for (size_t hi = 0; hi < 3; hi++)
                    check_layer(&r, 1, lin ? LA_KERNEL_LINEAR : LA_KERNEL_SOFTMAX, cross[ci],
                                (la_norm_order)norm, 2, 7, 10, 8, heads[hi], 12, 1,
                                (int)(tu_next(&r) % 2), LA_ACTIVATION_RELU);
}

/* Stacks as nn.Transformer: encoder layers + encoder.norm, decoder layers + decoder.norm,
 * and the whole model. */
static void stacks(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("stacks");
    const size_t B = 2, N = 6, M = 9, D = 8, F = 16;
    for (int norm = 0; norm <= 1; norm++) {
        la_layer_config c;
        la_layer_config_init(&c, D, 2, F);
        c.norm = (la_norm_order)norm;
        la_transformer_weights tw;
        assert_int_equal(la_transformer_weights_init(&tw, LA_FLOAT64, D, F, 2, 3, tu_next(&r)),
                         LA_OK);
        /* random final norms so they matter */
        for (size_t e = 0; e < D; e++) {
            ((double *)tw.encoder_norm[0])[e] = 1 + 0.1 * tu_normal(&r);
            ((double *)tw.decoder_norm[1])[e] = 0.1 * tu_normal(&r);
        }
        double *src = tu_f64(B * M * D), *tgt = tu_f64(B * N * D);
        tu_fill_normal(&r, src, B * M * D, 1);
        tu_fill_normal(&r, tgt, B * N * D, 1);
        int64_t len[2] = {4, 9};
        /* reference: layers one by one, then the final norms */
        double *mem = tu_f64(B * M * D), *ref = tu_f64(B * N * D), *y = tu_f64(B * N * D);
        memcpy(mem, src, B * M * D * sizeof *mem);
        for (size_t l = 0; l < 2; l++)
            ref_encoder_layer(&c, &tw.encoder[l], B, M, mem, 0, len);
        ref_layer_norm(B * M, D, mem, tw.encoder_norm[0], tw.encoder_norm[1], 1e-5, mem);
        memcpy(ref, tgt, B * N * D * sizeof *ref);
        for (size_t l = 0; l < 3; l++)
            ref_decoder_layer(&c, &tw.decoder[l], B, N, M, ref, mem, 1, len);
        ref_layer_norm(B * N, D, ref, tw.decoder_norm[0], tw.decoder_norm[1], 1e-5, ref);

        assert_int_equal(la_transformer(&c, &tw, LA_FLOAT64, B, M, N, src, tgt, len, y), LA_OK);
        tu_assert_close_f64(y, ref, B * N * D, TOL_F64, "transformer norm=%d", norm);
        double *enc = tu_f64(B * M * D);
        assert_int_equal(la_encoder(&c, &tw, LA_FLOAT64, B, M, src, 0, len, enc), LA_OK);
        tu_assert_close_f64(enc, mem, B * M * D, TOL_F64, "encoder stack norm=%d", norm);
        assert_int_equal(tw.n_params, 2 * (4 * D * D + 4 * D + 2 * D * F + F + D + 4 * D) + 2 * D +
                                          3 * (8 * D * D + 8 * D + 2 * D * F + F + D + 6 * D) +
                                          2 * D);
        la_transformer_weights_free(&tw);
        la_transformer_weights_free(&tw); /* twice is safe */
        free(src), free(tgt), free(mem), free(ref), free(y), free(enc);
    }
}

/* Sinusoidal positions and embeddings against their formulas. */
static void positions_and_embeddings(void **state)
{
    (void)state;
    const size_t B = 2, N = 5, D = 6;
    double x[2 * 5 * 6] = {0};
    float xf[2 * 5 * 6] = {0};
    assert_int_equal(la_add_positional_encoding(LA_FLOAT64, B, N, D, 3, x), LA_OK);
    assert_int_equal(la_add_positional_encoding(LA_FLOAT32, B, N, D, 3, xf), LA_OK);
    for (size_t b = 0; b < B; b++)
        for (size_t pos = 0; pos < N; pos++)
            for (size_t i = 0; 2 * i < D; i++) {
                double angle = (double)(pos + 3) / pow(10000, 2.0 * (double)i / (double)D);
                assert_true(fabs(x[(b * N + pos) * D + 2 * i] - sin(angle)) < 1e-15);
                assert_true(fabs(x[(b * N + pos) * D + 2 * i + 1] - cos(angle)) < 1e-15);
                assert_true(fabs(xf[(b * N + pos) * D + 2 * i] - sin(angle)) < 1e-7);
            }
    double table[4 * 3] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, out[3 * 3];
    int64_t tokens[3] = {2, 0, 3};
    assert_int_equal(la_embed(LA_FLOAT64, 4, 3, table, 3, tokens, out), LA_OK);
    assert_true(out[0] == 6 && out[3] == 0 && out[8] == 11);
    tokens[1] = 4;
    assert_int_equal(la_embed(LA_FLOAT64, 4, 3, table, 3, tokens, out), LA_EINVAL);
    tokens[1] = -1;
    assert_int_equal(la_embed(LA_FLOAT64, 4, 3, table, 3, tokens, out), LA_EINVAL);
}

/* Xavier-uniform: inside ±√(6/(fan_in + fan_out)), spread over it, deterministic per seed;
 * biases 0, γ 1. */
static void xavier_init(void **state)
{
    (void)state;
    const size_t D = 64, F = 96;
    la_layer_weights a, b, c;
    assert_int_equal(la_layer_weights_init(&a, LA_FLOAT64, D, F, 1, 42), LA_OK);
    assert_int_equal(la_layer_weights_init(&b, LA_FLOAT64, D, F, 1, 42), LA_OK);
    assert_int_equal(la_layer_weights_init(&c, LA_FLOAT64, D, F, 1, 43), LA_OK);
    assert_int_equal(a.n_params, 2 * (4 * D * D + 4 * D) + 2 * D * F + F + D + 6 * D);
    assert_memory_equal(a.storage, b.storage, a.n_params * sizeof(double));
    assert_memory_not_equal(a.storage, c.storage, a.n_params * sizeof(double));
    const double *in = a.tensor[LA_W_SELF_IN_WEIGHT], *l1 = a.tensor[LA_W_LINEAR1_WEIGHT];
    double bound_in = sqrt(6.0 / (4.0 * D)), bound_l1 = sqrt(6.0 / (double)(D + F));
    double max_in = 0, sum_sq = 0;
    for (size_t e = 0; e < 3 * D * D; e++) {
        assert_true(fabs(in[e]) <= bound_in);
        max_in = fmax(max_in, fabs(in[e]));
        sum_sq += in[e] * in[e];
    }
    for (size_t e = 0; e < F * D; e++)
        assert_true(fabs(l1[e]) <= bound_l1);
    assert_true(max_in > 0.99 * bound_in);
    /* U(-a, a) has variance a²/3 */
    double var = sum_sq / (3.0 * D * D);
    assert_true(fabs(var / (bound_in * bound_in / 3) - 1) < 0.05);
    const double *bias = a.tensor[LA_W_LINEAR2_BIAS], *gamma = a.tensor[LA_W_NORM3_WEIGHT];
    for (size_t e = 0; e < D; e++)
        assert_true(bias[e] == 0 && gamma[e] == 1);
    la_layer_weights_free(&a);
    la_layer_weights_free(&b);
    la_layer_weights_free(&c);
    assert_null(a.storage);
}

/* Writes tensor t of w (float64) to dir/prefix key .npy, as float32 or float64. */
static void write_tensor(const char *dir, const char *prefix, const la_layer_weights *w, int t,
                         int as_f32)
{
    size_t shape[2];
    int ndim;
    size_t n =
        la_layer_tensor_shape((la_layer_tensor)t, w->d_model, w->d_ff, w->decoder, shape, &ndim);
    la_array a = {as_f32 ? LA_NPY_F32 : LA_NPY_F64, ndim, {shape[0], shape[1]}, n, NULL};
    float *f = NULL;
    if (as_f32) {
        f = tu_f32(n);
        for (size_t e = 0; e < n; e++)
            f[e] = (float)((const double *)w->tensor[t])[e];
        a.data = f;
    } else {
        a.data = w->tensor[t];
    }
    char path[512];
    snprintf(path, sizeof path, "%s/%s%s.npy", dir, prefix,
             la_layer_tensor_key((la_layer_tensor)t));
    assert_int_equal(la_npy_write(path, &a), LA_OK);
    free(f);
}

/* Loading: a folder of .npy files by state_dict key gives back the same tensors (float32
 * files converted to float64 exactly); a missing, misshapen, non-float or corrupt file
 * is refused naming the file, and leaves nothing allocated. */
static void load_from_npy(void **state)
{
    (void)state;
    char dir[] = "/tmp/la_test_layers_XXXXXX";
    assert_non_null(mkdtemp(dir));
    const size_t D = 12, F = 20;
    la_layer_weights w, got;
    assert_int_equal(la_layer_weights_init(&w, LA_FLOAT64, D, F, 1, 7), LA_OK);
    for (int t = 0; t < LA_W_COUNT; t++)
        write_tensor(dir, "", &w, t, t % 2);
    la_load_error err;
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_OK);
    assert_int_equal(got.d_model, D);
    assert_int_equal(got.d_ff, F);
    for (int t = 0; t < LA_W_COUNT; t++) {
        size_t n = la_layer_tensor_shape((la_layer_tensor)t, D, F, 1, NULL, NULL);
        for (size_t e = 0; e < n; e++) {
            double want = ((double *)w.tensor[t])[e];
            if (t % 2) want = (double)(float)want;
            assert_true(((double *)got.tensor[t])[e] == want);
        }
    }
    la_layer_weights_free(&got);
    /* an encoder layer loads from the same folder, ignoring the decoder's tensors */
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT32, 0, dir, "", &err), LA_OK);
    assert_null(got.tensor[LA_W_CROSS_IN_WEIGHT]);
    la_layer_weights_free(&got);

    char path[512];
    /* missing: norm3.bias */
    snprintf(path, sizeof path, "%s/norm3.bias.npy", dir);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_EIO);
    assert_string_equal(err.path, path);
    assert_true(strlen(err.why) > 0);
    assert_null(got.storage);
    /* misshapen: norm3.bias of D + 1 */
    la_array bad = {LA_NPY_F64, 1, {D + 1}, D + 1, w.storage};
    assert_int_equal(la_npy_write(path, &bad), LA_OK);
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_EFORMAT);
    assert_string_equal(err.path, path);
    assert_non_null(strstr(err.why, "(13,)"));
    /* not float */
    int64_t ints[12] = {0};
    la_array integer = {LA_NPY_I64, 1, {D}, D, ints};
    assert_int_equal(la_npy_write(path, &integer), LA_OK);
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_EDTYPE);
    assert_string_equal(err.path, path);
    /* float16 and bfloat16 load, widened exactly: 1 + e/1024 and −(1 + e/128) */
    for (int kind = 0; kind < 2; kind++) {
        uint16_t bits[12];
        for (size_t e = 0; e < D; e++)
            bits[e] = (uint16_t)((kind ? 0xBF80 : 0x3C00) + e);
        la_array half = {kind ? LA_NPY_BF16 : LA_NPY_F16, 1, {D}, D, bits};
        assert_int_equal(la_npy_write(path, &half), LA_OK);
        assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_OK);
        for (size_t e = 0; e < D; e++)
            assert_true(((double *)got.tensor[LA_W_NORM3_BIAS])[e] ==
                        (kind ? -(1 + (double)e / 128) : 1 + (double)e / 1024));
        la_layer_weights_free(&got);
    }
    /* not a .npy file at all */
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("not numpy", f);
    fclose(f);
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_EFORMAT);
    assert_string_equal(err.path, path);
    /* in_proj_weight whose rows are not 3·D */
    write_tensor(dir, "", &w, LA_W_NORM3_BIAS, 0);
    la_array wrong = {LA_NPY_F64, 2, {3 * D + 1, D}, (3 * D + 1) * D, NULL};
    wrong.data = tu_f64(wrong.count);
    snprintf(path, sizeof path, "%s/self_attn.in_proj_weight.npy", dir);
    assert_int_equal(la_npy_write(path, &wrong), LA_OK);
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_EFORMAT);
    assert_string_equal(err.path, path);
    free(wrong.data);
    write_tensor(dir, "", &w, LA_W_SELF_IN_WEIGHT, 0);
    assert_int_equal(la_layer_weights_load(&got, LA_FLOAT64, 1, dir, "", &err), LA_OK);
    la_layer_weights_free(&got);

    /* a stack: encoder.layers.0., decoder.layers.0., the final norms */
    la_transformer_weights tw, tw2;
    assert_int_equal(la_transformer_weights_init(&tw, LA_FLOAT64, D, F, 1, 1, 3), LA_OK);
    for (int t = 0; t < LA_W_COUNT; t++) {
        if (tw.encoder[0].tensor[t]) write_tensor(dir, "encoder.layers.0.", &tw.encoder[0], t, 0);
        write_tensor(dir, "decoder.layers.0.", &tw.decoder[0], t, 0);
    }
    assert_int_equal(la_transformer_weights_load(&tw2, LA_FLOAT64, 1, 1, dir, &err), LA_EIO);
    assert_non_null(strstr(err.path, "encoder.norm.weight.npy"));
    const char *norm_keys[4] = {"encoder.norm.weight", "encoder.norm.bias", "decoder.norm.weight",
                                "decoder.norm.bias"};
    void *norms[4] = {tw.encoder_norm[0], tw.encoder_norm[1], tw.decoder_norm[0],
                      tw.decoder_norm[1]};
    for (int i = 0; i < 4; i++) {
        la_array a = {LA_NPY_F64, 1, {D}, D, norms[i]};
        snprintf(path, sizeof path, "%s/%s.npy", dir, norm_keys[i]);
        assert_int_equal(la_npy_write(path, &a), LA_OK);
    }
    assert_int_equal(la_transformer_weights_load(&tw2, LA_FLOAT64, 1, 1, dir, &err), LA_OK);
    assert_int_equal(tw2.n_params, tw.n_params);
    assert_memory_equal(tw2.decoder[0].storage, tw.decoder[0].storage,
                        tw.decoder[0].n_params * sizeof(double));
    assert_memory_equal(tw2.encoder_norm[0], tw.encoder_norm[0], D * sizeof(double));
    la_transformer_weights_free(&tw2);
    la_transformer_weights_free(&tw);
    la_layer_weights_free(&w);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The same input gives bitwise the same output with 1, 2 and 3 threads (the work is
 * split the same way whatever the thread count), for both attention kinds. */
static void thread_count_independent(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("thread_count_independent");
    const size_t B = 2, N = 150, D = 32, F = 64;
    int threads = la_get_num_threads();
    la_layer_weights w64, w32;
    random_layer(&r, D, F, 0, &w64, &w32);
    double *x64;
    float *x32, *first = tu_f32(B * N * D), *again = tu_f32(B * N * D);
    random_input(&r, B * N * D, &x64, &x32);
    for (int lin = 0; lin <= 1; lin++) {
        la_layer_config c;
        la_layer_config_init(&c, D, 4, F);
        c.attention = lin ? LA_KERNEL_LINEAR : LA_KERNEL_SOFTMAX;
        c.norm = lin ? LA_NORM_PRE : LA_NORM_POST;
        for (int t = 1; t <= 3; t++) {
            assert_int_equal(la_set_num_threads(t), LA_OK);
            float *y = t == 1 ? first : again;
            assert_int_equal(la_encoder_layer(&c, &w32, LA_FLOAT32, B, N, x32, 1, NULL, y), LA_OK);
            if (t > 1) assert_memory_equal(first, again, B * N * D * sizeof *first);
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    la_layer_weights_free(&w64);
    la_layer_weights_free(&w32);
    free(x64), free(x32), free(first), free(again);
}

/* Bad arguments are refused with a status, nothing written. */
static void errors(void **state)
{
    (void)state;
    la_layer_config c;
    la_layer_config_init(&c, 12, 5, 8); /* 5 does not divide 12 */
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    la_layer_config_init(&c, 12, 4, 8);
    assert_int_equal(la_layer_config_check(&c), LA_OK);
    c.attention = LA_KERNEL_LINEAR_RECURRENT;
    assert_int_equal(la_layer_config_check(&c), LA_EINVAL);
    la_layer_config_init(&c, 12, 4, 8);
    la_layer_weights w, w32;
    assert_int_equal(la_layer_weights_init(&w, LA_FLOAT64, 12, 8, 0, 1), LA_OK);
    assert_int_equal(la_layer_weights_init(&w32, LA_FLOAT32, 12, 8, 0, 1), LA_OK);
    double x[2 * 3 * 12] = {0}, y[2 * 3 * 12];
    for (size_t e = 0; e < 72; e++)
        y[e] = 5;
    /* a float32 weight set to the float64 layer, a decoder call on encoder weights */
    assert_int_equal(la_encoder_layer(&c, &w32, LA_FLOAT64, 2, 3, x, 0, NULL, y), LA_EINVAL);
    assert_int_equal(la_decoder_layer(&c, &w, LA_FLOAT64, 2, 3, 3, x, x, 1, NULL, NULL, y),
                     LA_EINVAL);
    c.d_ff = 9; /* sizes disagree with the weights */
    assert_int_equal(la_encoder_layer(&c, &w, LA_FLOAT64, 2, 3, x, 0, NULL, y), LA_EINVAL);
    c.d_ff = 8;
    assert_int_equal(la_encoder_layer(&c, &w, LA_FLOAT64, 0, 3, x, 0, NULL, y), LA_EINVAL);
    assert_int_equal(la_encoder_layer(&c, &w, LA_FLOAT64, 2, 3, NULL, 0, NULL, y), LA_EINVAL);
    int64_t bad_len[2] = {3, 4}; /* 4 > N */
    assert_int_equal(la_encoder_layer(&c, &w, LA_FLOAT64, 2, 3, x, 0, bad_len, y), LA_EINVAL);
    for (size_t e = 0; e < 72; e++)
        assert_true(y[e] == 5);
    assert_int_equal(la_layer_norm(LA_FLOAT64, 2, 12, x, x, x, 0, y), LA_EINVAL);
    la_layer_weights_free(&w);
    la_layer_weights_free(&w32);
    assert_int_equal(la_layer_weights_init(&w32, LA_FLOAT32, 0, 8, 0, 1), LA_EINVAL);
    assert_null(w32.storage);
}

int main(void)
{
    tu_init("test_layers");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(norm_and_ffn),
        cmocka_unit_test(multi_head_attention),
        cmocka_unit_test(encoder_layers),
        cmocka_unit_test(decoder_layers),
        cmocka_unit_test(stacks),
        cmocka_unit_test(positions_and_embeddings),
        cmocka_unit_test(xavier_init),
        cmocka_unit_test(load_from_npy),
        cmocka_unit_test(thread_count_independent),
        cmocka_unit_test(ffn_chunks_and_threads),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

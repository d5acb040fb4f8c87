/* test_model_gradient.c — the training model of lib/train/train.h as a whole:
 *   - every parameter's gradient against central differences of la_train_evaluate's loss
 *     (float64, a tiny model: V 7, D 8, 2 heads, d_ff 16, 2 layers, N 5, batch 2), for
 *     softmax and linear attention, pre-LN and post-LN, ReLU and GELU, sinusoidal and
 *     learned positions, tied and untied heads, some targets not scored;
 *   - float32 against float64 on the same parameters (loss and every gradient);
 *   - the loss against the library's inference layers (la_encoder_layer, causal), which
 *     share no code with lib/train: the model is train.h's definition;
 *   - the same bits on 1 and 2 threads (a model large enough to run threaded);
 *   - evaluate's loss is forward_backward's, and leaves the gradients alone; loss,
 *     correct and scored against a direct count; no target scored gives zero gradients;
 *   - the tensor list (keys, shapes, order), the saved bytes, and the errors.
 * Parameters are fresh each run (seed printed by tu_init; replay with LA_TEST_SEED). */
#include "../testutil.h"
#include "train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FD_STEP 1e-6
#define TOL_FD 1e-6   /* relative, per tensor: central differences in float64 (seen: 5e-8) */
#define TOL_F32 3e-5  /* relative, per tensor: float32 gradients against float64 (seen: 1e-6) */
#define TOL_LOSS 1e-6 /* relative: float32 loss against float64 (seen: 2e-8) */

/* ---------------------------------------------------------------- helpers */

typedef struct {
    la_kernel kernel;
    int pre_ln, gelu, learned, tied;
    const char *name;
} variant;

/* Every arrangement appears with both kernels; ReLU and the learned/tied options too. */
static const variant variants[] = {
    {LA_KERNEL_SOFTMAX, 1, 1, 0, 0, "softmax pre-LN GELU"},
    {LA_KERNEL_SOFTMAX, 0, 0, 1, 1, "softmax post-LN ReLU learned tied"},
    {LA_KERNEL_LINEAR, 1, 0, 1, 0, "linear pre-LN ReLU learned"},
    {LA_KERNEL_LINEAR, 0, 1, 0, 1, "linear post-LN GELU tied"},
};
#define N_VARIANTS (sizeof variants / sizeof variants[0])

static la_train_config tiny_config(const variant *v, la_dtype dtype)
{
    la_train_config c;
    la_train_config_init(&c, 7, 8, 2, 16, 2, 5);
    c.dtype = dtype;
    c.attention = v->kernel;
    c.pre_ln = v->pre_ln;
    c.gelu = v->gelu;
    c.learned_positions = v->learned;
    c.tie_head = v->tied;
    return c;
}

static la_train_model *create(const la_train_config *c, uint64_t seed)
{
    la_train_model *m = NULL;
    assert_int_equal(la_train_model_create(&m, c, seed), LA_OK);
    assert_non_null(m);
    return m;
}

/* Tokens in [0, V), targets in [0, V) with every third one (from a random start) not scored. */
static void draw_batch(tu_rng *r, size_t rows, size_t vocab, int32_t *tokens, int32_t *targets)
{
    const size_t skip = tu_next(r) % 3;
    for (size_t i = 0; i < rows; i++) {
        tokens[i] = (int32_t)(tu_next(r) % vocab);
        targets[i] = i % 3 == skip ? -1 : (int32_t)(tu_next(r) % vocab);
    }
}

static la_train_tensor *tensors(la_train_model *m, size_t *count)
{
    la_train_tensor *list = NULL;
    assert_int_equal(la_train_model_tensors(m, &list, count), LA_OK);
    return list;
}

static double eval_loss(la_train_model *m, size_t batch, const int32_t *tok, const int32_t *tgt)
{
    double loss = NAN;
    assert_int_equal(la_train_evaluate(m, batch, tok, tgt, &loss, NULL, NULL), LA_OK);
    return loss;
}

/* Copies the parameters of a float64 model into a float32 one of the same configuration,
 * rounded, and back, so both hold exactly the same values. */
static void share_parameters(la_train_model *m64, la_train_model *m32)
{
    size_t n64, n32;
    la_train_tensor *t64 = tensors(m64, &n64), *t32 = tensors(m32, &n32);
    assert_int_equal(n64, n32);
    for (size_t i = 0; i < n64; i++) {
        assert_int_equal(t64[i].numel, t32[i].numel);
        tu_to_f32(t64[i].data, t32[i].data, t64[i].numel);
        tu_to_f64(t32[i].data, t64[i].data, t64[i].numel);
    }
}

/* ---------------------------------------------------------------- gradients */

static void gradient_matches_finite_differences(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_fd");
    /* one thread: thousands of tiny calls, where waking a second thread costs more than the
     * work (the bits are the same, threads_bitwise) */
    assert_int_equal(la_set_num_threads(1), LA_OK);
    for (size_t vi = 0; vi < N_VARIANTS; vi++) {
        const variant *v = &variants[vi];
        const la_train_config c = tiny_config(v, LA_FLOAT64);
        la_train_model *m = create(&c, tu_next(&r));
        const size_t batch = 2, rows = batch * c.seq_len;
        int32_t tok[10], tgt[10];
        draw_batch(&r, rows, c.vocab, tok, tgt);
        double loss = NAN;
        size_t correct = 99, scored = 99;
        assert_int_equal(la_train_forward_backward(m, batch, tok, tgt, &loss, &correct, &scored),
                         LA_OK);
        assert_true(isfinite(loss) && loss > 0);
        size_t count;
        la_train_tensor *t = tensors(m, &count);
        for (size_t i = 0; i < count; i++) {
            double *w = t[i].data, *g = t[i].grad, *fd = tu_f64(t[i].numel);
            for (size_t e = 0; e < t[i].numel; e++) {
                const double keep = w[e];
                w[e] = keep + FD_STEP;
                const double up = eval_loss(m, batch, tok, tgt);
                w[e] = keep - FD_STEP;
                const double down = eval_loss(m, batch, tok, tgt);
                w[e] = keep;
                fd[e] = (up - down) / (2 * FD_STEP);
            }
            tu_assert_close_f64(g, fd, t[i].numel, TOL_FD, "%s: %s", v->name, t[i].key);
            free(fd);
        }
        la_train_model_free(m);
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
}

/* The float32 model on the float64 model's parameters (rounded to float32 in both). */
static void float32_matches_float64(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_f32");
    for (size_t vi = 0; vi < N_VARIANTS; vi++) {
        const variant *v = &variants[vi];
        const la_train_config c64 = tiny_config(v, LA_FLOAT64), c32 = tiny_config(v, LA_FLOAT32);
        const uint64_t seed = tu_next(&r);
        la_train_model *m64 = create(&c64, seed), *m32 = create(&c32, seed);
        share_parameters(m64, m32);
        const size_t batch = 2, rows = batch * c64.seq_len;
        int32_t tok[10], tgt[10];
        draw_batch(&r, rows, c64.vocab, tok, tgt);
        double l64, l32;
        size_t k64, k32, s64, s32;
        assert_int_equal(la_train_forward_backward(m64, batch, tok, tgt, &l64, &k64, &s64), LA_OK);
        assert_int_equal(la_train_forward_backward(m32, batch, tok, tgt, &l32, &k32, &s32), LA_OK);
        tu_assert_close_f64(&l32, &l64, 1, TOL_LOSS, "%s: loss", v->name);
        assert_int_equal(s64, s32);
        size_t count;
        la_train_tensor *t64 = tensors(m64, &count), *t32 = tensors(m32, &count);
        for (size_t i = 0; i < count; i++)
            tu_assert_close_f32((const float *)t32[i].grad, (const double *)t64[i].grad,
                                t64[i].numel, TOL_F32, "%s: %s", v->name, t64[i].key);
        la_train_model_free(m64);
        la_train_model_free(m32);
    }
}

/* ---------------------------------------------------------------- the definition */

/* The tensor of m whose key is `key` (NULL if none). */
static la_train_tensor *find(la_train_model *m, const char *key)
{
    size_t count;
    la_train_tensor *t = tensors(m, &count);
    for (size_t i = 0; i < count; i++)
        if (strcmp(t[i].key, key) == 0) return &t[i];
    return NULL;
}

/* The loss of train.h's definition through the library's inference layers (la_embed,
 * la_add_positional_encoding, la_encoder_layer with a causal mask, la_layer_norm), an
 * implementation of nn.TransformerEncoderLayer that shares no code with lib/train, then
 * the head and the cross-entropy as plain loops. */
static double loss_by_layers(la_train_model *m, size_t batch, const int32_t *tok,
                             const int32_t *tgt)
{
    const la_train_config *c = la_train_model_config(m);
    const size_t N = c->seq_len, D = c->d_model, V = c->vocab, R = batch * N;
    la_layer_config lc;
    la_layer_config_init(&lc, D, c->heads, c->d_ff);
    lc.attention = c->attention;
    lc.norm = c->pre_ln ? LA_NORM_PRE : LA_NORM_POST;
    lc.activation = c->gelu ? LA_ACTIVATION_GELU : LA_ACTIVATION_RELU;
    lc.norm_eps = c->ln_eps;
    lc.feature_map = c->attention_params.feature_map;
    lc.linear_eps = c->attention_params.eps;
    lc.chunk = c->attention_params.chunk;
    int64_t *tok64 = tu_alloc(R * sizeof *tok64);
    for (size_t i = 0; i < R; i++)
        tok64[i] = tok[i];
    double *x = tu_f64(R * D), *logits = tu_f64(V);
    const double *table = find(m, "embedding.weight")->data;
    assert_int_equal(la_embed(LA_FLOAT64, V, D, table, R, tok64, x), LA_OK);
    la_train_tensor *pos = find(m, "pos_embedding.weight");
    if (pos)
        for (size_t i = 0; i < R; i++)
            for (size_t e = 0; e < D; e++)
                x[i * D + e] += ((double *)pos->data)[(i % N) * D + e];
    else
        assert_int_equal(la_add_positional_encoding(LA_FLOAT64, batch, N, D, 0, x), LA_OK);
    for (size_t l = 0; l < c->layers; l++) {
        la_layer_weights w;
        assert_int_equal(la_layer_weights_init(&w, LA_FLOAT64, D, c->d_ff, 0, 0), LA_OK);
        for (int t = 0; t < LA_W_COUNT; t++) {
            if (!w.tensor[t]) continue;
            char key[128];
            snprintf(key, sizeof key, "layers.%zu.%s", l, la_layer_tensor_key((la_layer_tensor)t));
            la_train_tensor *src = find(m, key);
            assert_non_null(src);
            memcpy(w.tensor[t], src->data, src->numel * sizeof(double));
        }
        assert_int_equal(la_encoder_layer(&lc, &w, LA_FLOAT64, batch, N, x, 1, NULL, x), LA_OK);
        la_layer_weights_free(&w);
    }
    assert_int_equal(la_layer_norm(LA_FLOAT64, R, D, x, find(m, "norm.weight")->data,
                                   find(m, "norm.bias")->data, c->ln_eps, x),
                     LA_OK);
    la_train_tensor *hw = find(m, "head.weight");
    const double *head = hw ? hw->data : table, *hb = find(m, "head.bias")->data;
    double total = 0;
    size_t scored = 0;
    for (size_t i = 0; i < R; i++) {
        if (tgt[i] < 0) continue;
        double top = -INFINITY, z = 0;
        for (size_t v = 0; v < V; v++) {
            double s = hb[v];
            for (size_t e = 0; e < D; e++)
                s += x[i * D + e] * head[v * D + e];
            logits[v] = s;
            top = fmax(top, s);
        }
        for (size_t v = 0; v < V; v++)
            z += exp(logits[v] - top);
        total += top + log(z) - logits[tgt[i]];
        scored++;
    }
    free(tok64), free(x), free(logits);
    return scored ? total / (double)scored : 0;
}

/* The model's loss is the definition's (train.h, THE MODEL) in every variant. */
static void forward_matches_the_layers(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_layers");
    for (size_t vi = 0; vi < N_VARIANTS; vi++) {
        const variant *v = &variants[vi];
        la_train_config c = tiny_config(v, LA_FLOAT64);
        c.seq_len = 40; /* causal linear attention in two chunks of 32 */
        la_train_model *m = create(&c, tu_next(&r));
        const size_t batch = 3, rows = batch * c.seq_len;
        int32_t tok[120], tgt[120];
        draw_batch(&r, rows, c.vocab, tok, tgt);
        const double want = loss_by_layers(m, batch, tok, tgt), got = eval_loss(m, batch, tok, tgt);
        tu_assert_close_f64(&got, &want, 1, 1e-12, "%s: loss against la_encoder_layer", v->name);
        la_train_model_free(m);
    }
}

/* ---------------------------------------------------------------- threads */

/* Loss and gradients of one call on `threads` threads, copied out. */
static double run_on(la_train_model *m, int threads, size_t batch, const int32_t *tok,
                     const int32_t *tgt, unsigned char **grads, size_t *bytes)
{
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    double loss;
    assert_int_equal(la_train_forward_backward(m, batch, tok, tgt, &loss, NULL, NULL), LA_OK);
    size_t count, elem = la_train_model_config(m)->dtype == LA_FLOAT32 ? 4 : 8;
    la_train_tensor *t = tensors(m, &count);
    *bytes = la_train_model_param_count(m) * elem;
    *grads = tu_alloc(*bytes);
    for (size_t i = 0, off = 0; i < count; off += t[i].numel * elem, i++)
        memcpy(*grads + off, t[i].grad, t[i].numel * elem);
    return loss;
}

static void threads_bitwise(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_threads");
    for (size_t vi = 0; vi < N_VARIANTS; vi++) {
        const variant *v = &variants[vi];
        /* each kernel in both types; R·D = 73728 and R·d_ff above the element-wise
         * loops' threshold (65536) */
        const int dt = vi == 1 || vi == 2;
        la_train_config c;
        la_train_config_init(&c, 40, 96, 4, 128, 2, 64);
        c.dtype = dt ? LA_FLOAT64 : LA_FLOAT32;
        c.attention = v->kernel;
        c.pre_ln = v->pre_ln;
        c.gelu = v->gelu;
        c.learned_positions = v->learned;
        c.tie_head = v->tied;
        la_train_model *m = create(&c, tu_next(&r));
        const size_t batch = 12, rows = batch * c.seq_len;
        int32_t *tok = tu_alloc(rows * sizeof *tok), *tgt = tu_alloc(rows * sizeof *tgt);
        draw_batch(&r, rows, c.vocab, tok, tgt);
        unsigned char *g1, *g2;
        size_t b1, b2;
        const double l1 = run_on(m, 1, batch, tok, tgt, &g1, &b1);
        const double l2 = run_on(m, 2, batch, tok, tgt, &g2, &b2);
        assert_int_equal(b1, b2);
        if (memcmp(&l1, &l2, sizeof l1) != 0 || memcmp(g1, g2, b1) != 0)
            fail_msg("%s %s: 1 and 2 threads differ (seed %llu)", v->name,
                     dt ? "float64" : "float32", (unsigned long long)tu_seed());
        free(g1);
        free(g2);
        free(tok);
        free(tgt);
        la_train_model_free(m);
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
}

/* ---------------------------------------------------------------- the loss */

static void evaluate_is_the_forward(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_eval");
    const la_train_config c = tiny_config(&variants[0], LA_FLOAT64);
    la_train_model *m = create(&c, tu_next(&r));
    int32_t tok[10], tgt[10];
    draw_batch(&r, 10, c.vocab, tok, tgt);
    double l1, l2;
    size_t k1, k2, s1, s2;
    assert_int_equal(la_train_forward_backward(m, 2, tok, tgt, &l1, &k1, &s1), LA_OK);
    size_t count;
    la_train_tensor *t = tensors(m, &count);
    const size_t last = count - 1;
    double *keep = tu_f64(t[last].numel);
    memcpy(keep, t[last].grad, t[last].numel * sizeof *keep);
    assert_int_equal(la_train_evaluate(m, 2, tok, tgt, &l2, &k2, &s2), LA_OK);
    assert_memory_equal(&l1, &l2, sizeof l1);
    assert_int_equal(k1, k2);
    assert_int_equal(s1, s2);
    assert_memory_equal(keep, t[last].grad, t[last].numel * sizeof *keep);
    /* scored: the targets >= 0; correct <= scored */
    size_t want = 0;
    for (size_t i = 0; i < 10; i++)
        want += tgt[i] >= 0;
    assert_int_equal(s1, want);
    assert_true(k1 <= s1);
    free(keep);
    la_train_model_free(m);
}

/* The loss, argmax count and head-bias gradient by hand on a one-layer model whose
 * head weight is zero: every logit is head.bias, the same in every position. */
static void loss_by_hand(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_hand");
    la_train_config c = tiny_config(&variants[0], LA_FLOAT64);
    c.layers = 1;
    la_train_model *m = create(&c, tu_next(&r));
    size_t count;
    la_train_tensor *t = tensors(m, &count);
    la_train_tensor *hw = NULL, *hb = NULL;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(t[i].key, "head.weight") == 0) hw = &t[i];
        if (strcmp(t[i].key, "head.bias") == 0) hb = &t[i];
    }
    assert_non_null(hw);
    assert_non_null(hb);
    memset(hw->data, 0, hw->numel * sizeof(double));
    double *b = hb->data, z = 0, bmax = -INFINITY;
    size_t arg = 0;
    for (size_t j = 0; j < c.vocab; j++) {
        z += exp(b[j]);
        if (b[j] > bmax) bmax = b[j], arg = j;
    }
    int32_t tok[10], tgt[10];
    draw_batch(&r, 10, c.vocab, tok, tgt);
    double want = 0, dbias[7] = {0};
    size_t scored = 0, right = 0;
    for (size_t i = 0; i < 10; i++)
        if (tgt[i] >= 0) {
            want += log(z) - b[tgt[i]];
            scored++;
            right += (size_t)tgt[i] == arg;
        }
    for (size_t i = 0; i < 10; i++)
        if (tgt[i] >= 0)
            for (size_t j = 0; j < c.vocab; j++)
                dbias[j] += (exp(b[j]) / z - ((size_t)tgt[i] == j)) / (double)scored;
    want /= (double)scored;
    double loss;
    size_t k, s;
    assert_int_equal(la_train_forward_backward(m, 2, tok, tgt, &loss, &k, &s), LA_OK);
    tu_assert_close_f64(&loss, &want, 1, 1e-13, "loss");
    assert_int_equal(s, scored);
    assert_int_equal(k, right);
    tu_assert_close_f64((double *)hb->grad, dbias, c.vocab, 1e-13, "head.bias gradient");
    la_train_model_free(m);
}

static void nothing_scored_gives_zero_gradients(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("model_none");
    const la_train_config c = tiny_config(&variants[1], LA_FLOAT32);
    la_train_model *m = create(&c, tu_next(&r));
    int32_t tok[10], tgt[10];
    draw_batch(&r, 10, c.vocab, tok, tgt);
    /* a first call fills the gradients; the second, with nothing scored, zeroes them */
    assert_int_equal(la_train_forward_backward(m, 2, tok, tgt, NULL, NULL, NULL), LA_OK);
    for (size_t i = 0; i < 10; i++)
        tgt[i] = -1;
    double loss = NAN;
    size_t k = 9, s = 9;
    assert_int_equal(la_train_forward_backward(m, 2, tok, tgt, &loss, &k, &s), LA_OK);
    assert_true(loss == 0 && k == 0 && s == 0);
    size_t count;
    la_train_tensor *t = tensors(m, &count);
    for (size_t i = 0; i < count; i++)
        for (size_t e = 0; e < t[i].numel; e++)
            if (((float *)t[i].grad)[e] != 0) fail_msg("%s[%zu] not zero", t[i].key, e);
    la_train_model_free(m);
}

/* ---------------------------------------------------------------- the list, errors */

static void tensor_list(void **state)
{
    (void)state;
    const la_train_config c = tiny_config(&variants[2], LA_FLOAT32); /* learned, untied */
    la_train_model *m = create(&c, 1);
    size_t count;
    la_train_tensor *t = tensors(m, &count);
    static const char *const want[] = {
        "embedding.weight",
        "pos_embedding.weight",
        "layers.0.self_attn.in_proj_weight",
        "layers.0.self_attn.in_proj_bias",
        "layers.0.self_attn.out_proj.weight",
        "layers.0.self_attn.out_proj.bias",
        "layers.0.linear1.weight",
        "layers.0.linear1.bias",
        "layers.0.linear2.weight",
        "layers.0.linear2.bias",
        "layers.0.norm1.weight",
        "layers.0.norm1.bias",
        "layers.0.norm2.weight",
        "layers.0.norm2.bias",
    };
    assert_int_equal(count, 2 + 2 * 12 + 2 + 2);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_string_equal(t[i].key, want[i]);
    assert_string_equal(t[14].key, "layers.1.self_attn.in_proj_weight");
    assert_string_equal(t[count - 4].key, "norm.weight");
    assert_string_equal(t[count - 2].key, "head.weight");
    assert_string_equal(t[count - 1].key, "head.bias");
    /* shapes: in_proj_weight (3D, D), linear2.weight (D, d_ff), a bias 1-D */
    assert_true(t[2].ndim == 2 && t[2].shape[0] == 24 && t[2].shape[1] == 8 && t[2].numel == 192);
    assert_true(t[8].ndim == 2 && t[8].shape[0] == 8 && t[8].shape[1] == 16);
    assert_true(t[7].ndim == 1 && t[7].shape[0] == 16 && t[7].numel == 16);
    /* init: norms 1 and 0, in_proj_bias 0, embedding not all zero */
    for (size_t e = 0; e < 8; e++) {
        assert_true(((float *)t[10].data)[e] == 1.0f);
        assert_true(((float *)t[11].data)[e] == 0.0f);
    }
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += t[i].numel;
    assert_int_equal(total, la_train_model_param_count(m));
    la_train_model_free(m);
    /* tied: no head.weight; the same seed gives the same parameters */
    la_train_config ct = c;
    ct.tie_head = 1;
    la_train_model *a = create(&ct, 5), *b = create(&ct, 5);
    la_train_tensor *ta = tensors(a, &count), *tb = tensors(b, &count);
    assert_string_equal(ta[count - 2].key, "norm.bias");
    for (size_t i = 0; i < count; i++)
        assert_memory_equal(ta[i].data, tb[i].data, ta[i].numel * sizeof(float));
    la_train_model_free(a);
    la_train_model_free(b);
}

static void saved_bytes(void **state)
{
    (void)state;
    /* pre-LN softmax: per layer 8·R·D + R·d_ff + B·H·N elements and 4·R doubles; final
     * 2·R·D elements and 2·R doubles */
    la_train_config c = tiny_config(&variants[0], LA_FLOAT32);
    const size_t B = 3, R = B * 5;
    size_t want =
        2 * ((8 * R * 8 + R * 16 + B * 2 * 5) * 4 + 4 * R * 8) + 2 * R * 8 * 4 + 2 * R * 8;
    assert_int_equal(la_train_saved_bytes(&c, B), want);
    c.attention = LA_KERNEL_LINEAR; /* no lse */
    c.dtype = LA_FLOAT64;
    want = 2 * ((8 * R * 8 + R * 16) * 8 + 4 * R * 8) + 2 * R * 8 * 8 + 2 * R * 8;
    assert_int_equal(la_train_saved_bytes(&c, B), want);
    assert_int_equal(la_train_saved_bytes(&c, 0), 0);
    assert_int_equal(la_train_saved_bytes(NULL, 1), 0);
}

static void errors(void **state)
{
    (void)state;
    la_train_config c = tiny_config(&variants[0], LA_FLOAT32);
    la_train_model *m = NULL;
    /* configurations */
    la_train_config bad = c;
    bad.heads = 3;
    assert_int_equal(la_train_model_create(&m, &bad, 1), LA_EINVAL);
    assert_null(m);
    bad = c;
    bad.attention = LA_KERNEL_LINFORMER; /* no backward */
    assert_int_equal(la_train_config_check(&bad), LA_EINVAL);
    bad = c;
    bad.ln_eps = 0;
    assert_int_equal(la_train_config_check(&bad), LA_EINVAL);
    bad = c;
    bad.dtype = (la_dtype)7;
    assert_int_equal(la_train_config_check(&bad), LA_EINVAL);
    bad = c;
    bad.layers = 0;
    assert_int_equal(la_train_config_check(&bad), LA_EINVAL);
    assert_int_equal(la_train_config_check(NULL), LA_EINVAL);
    assert_int_equal(la_train_model_create(NULL, &c, 1), LA_EINVAL);
    /* calls: parameters unchanged on error */
    m = create(&c, 2);
    int32_t tok[10] = {0}, tgt[10] = {0};
    assert_int_equal(la_train_forward_backward(NULL, 2, tok, tgt, NULL, NULL, NULL), LA_EINVAL);
    assert_int_equal(la_train_forward_backward(m, 0, tok, tgt, NULL, NULL, NULL), LA_EINVAL);
    assert_int_equal(la_train_forward_backward(m, 2, NULL, tgt, NULL, NULL, NULL), LA_EINVAL);
    tok[3] = 7;
    double loss = 42;
    assert_int_equal(la_train_forward_backward(m, 2, tok, tgt, &loss, NULL, NULL), LA_EINVAL);
    assert_true(loss == 42);
    tok[3] = 0;
    tgt[9] = 7;
    assert_int_equal(la_train_evaluate(m, 2, tok, tgt, &loss, NULL, NULL), LA_EINVAL);
    tgt[9] = -5;
    assert_int_equal(la_train_evaluate(m, 2, tok, tgt, &loss, NULL, NULL), LA_OK);
    assert_int_equal(la_train_model_tensors(NULL, NULL, NULL), LA_EINVAL);
    la_train_model_free(m);
    la_train_model_free(NULL);
}

int main(void)
{
    tu_init("test_model_gradient");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gradient_matches_finite_differences),
        cmocka_unit_test(float32_matches_float64),
        cmocka_unit_test(forward_matches_the_layers),
        cmocka_unit_test(threads_bitwise),
        cmocka_unit_test(evaluate_is_the_forward),
        cmocka_unit_test(loss_by_hand),
        cmocka_unit_test(nothing_scored_gives_zero_gradients),
        cmocka_unit_test(tensor_list),
        cmocka_unit_test(saved_bytes),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

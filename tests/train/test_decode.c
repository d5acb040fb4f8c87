/* test_decode.c — the training model decoded one token at a time (la_train_decoder_*,
 * lib/train/decode.c) against its parallel forward (la_train_logits):
 *   - for every kernel a model accepts (every registry row la_train_config_check takes:
 *     a backward, causal allowed), float32 and float64, two arrangements (pre-LN ReLU
 *     sinusoidal untied; post-LN GELU learned tied), a tiny model (V 7, D 8, 2 heads,
 *     d_ff 16, 2 layers, N 12, local's window 2, FAVOR+'s features 16): the logits of
 *     token t decoded after tokens 0 .. t-1 are row t of the forward's, per position,
 *     relative error <= TOL_F32 / TOL_F64, for both rows of a batch of 2;
 *   - sinusoidal positions go on past seq_len: a model of N 12 decodes 24 tokens, against
 *     the forward of the model of N 24 with the same seed (the same parameters);
 *   - the errors: NULL, capacity 0, learned positions past seq_len, a token out of
 *     range, the capacity reached.
 * Parameters and tokens are fresh each run (seed printed by tu_init; LA_TEST_SEED replays). */
#include "../testutil.h"
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-4  /* relative, per position */
#define TOL_F64 1e-10 /* relative, per position */
#define N_SEQ 12

typedef struct {
    int pre_ln, gelu, learned, tied;
    const char *name;
} arrangement;

static const arrangement arrangements[] = {
    {1, 0, 0, 0, "pre-LN ReLU sinusoidal untied"},
    {0, 1, 1, 1, "post-LN GELU learned tied"},
};

static la_train_config tiny_config(la_kernel k, const arrangement *a, la_dtype dtype, size_t n,
                                   uint64_t seed)
{
    la_train_config c;
    la_train_config_init(&c, 7, 8, 2, 16, 2, n);
    c.dtype = dtype;
    c.attention = k;
    la_blocks_init(&c.attention_blocks, seed); /* every block's seed */
    c.attention_blocks.local.window = 2;       /* local: the window bites within N */
    c.attention_blocks.favor.features = 16;    /* FAVOR+: a few features keep it quick */
    c.pre_ln = a->pre_ln;
    c.gelu = a->gelu;
    c.learned_positions = a->learned;
    c.tie_head = a->tied;
    return c;
}

static size_t elem(la_dtype dtype)
{
    return dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
}

/* The logits (n, V) as doubles. */
static void to_f64(la_dtype dtype, const void *x, double *out, size_t n)
{
    if (dtype == LA_FLOAT32)
        tu_to_f64(x, out, n);
    else
        memcpy(out, x, n * sizeof *out);
}

/* Decodes tokens[0 .. n) on m one at a time and compares each position's logits with row
 * t of ref (n, V) doubles, the forward's. */
static void decode_matches(la_train_model *m, const int32_t *tokens, size_t n, const double *ref,
                           const char *what)
{
    const la_train_config *c = la_train_model_config(m);
    const size_t V = c->vocab;
    const double tol = c->dtype == LA_FLOAT32 ? TOL_F32 : TOL_F64;
    la_train_decoder *d = NULL;
    assert_int_equal(la_train_decoder_create(&d, m, n), LA_OK);
    void *logits = tu_alloc(V * elem(c->dtype));
    for (size_t t = 0; t < n; t++) {
        assert_int_equal(la_train_decoder_position(d), t);
        const la_status st = la_train_decoder_step(d, tokens[t], logits);
        if (st != LA_OK)
            fail_msg("%s: token %zu: %s (seed %llu)", what, t, la_strerror(st),
                     (unsigned long long)tu_seed());
        if (c->dtype == LA_FLOAT32)
            tu_assert_close_f32((const float *)logits, ref + t * V, V, tol, "%s: position %zu",
                                what, t);
        else
            tu_assert_close_f64((const double *)logits, ref + t * V, V, tol, "%s: position %zu",
                                what, t);
    }
    assert_int_equal(la_train_decoder_position(d), n);
    free(logits);
    la_train_decoder_free(d);
}

/* ---------------------------------------------------------------- the tests */

static void decoding_matches_the_forward(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("decode_forward");
    size_t kernels = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        la_train_config probe = tiny_config((la_kernel)k, &arrangements[0], LA_FLOAT64, N_SEQ, 0);
        if (la_train_config_check(&probe) != LA_OK) continue; /* not a model's kernel */
        kernels++;
        for (size_t ai = 0; ai < sizeof arrangements / sizeof arrangements[0]; ai++)
            for (int f64 = 0; f64 < 2; f64++) {
                const arrangement *a = &arrangements[ai];
                const la_dtype dtype = f64 ? LA_FLOAT64 : LA_FLOAT32;
                const uint64_t seed = tu_next(&r);
                const la_train_config c = tiny_config((la_kernel)k, a, dtype, N_SEQ, seed);
                la_train_model *m = NULL;
                assert_int_equal(la_train_model_create(&m, &c, seed), LA_OK);
                const size_t batch = 2, rows = batch * N_SEQ, V = c.vocab;
                int32_t tokens[2 * N_SEQ];
                for (size_t i = 0; i < rows; i++)
                    tokens[i] = (int32_t)(tu_next(&r) % V);
                void *logits = tu_alloc(rows * V * elem(dtype));
                double *ref = tu_f64(rows * V);
                assert_int_equal(la_train_logits(m, batch, tokens, logits), LA_OK);
                to_f64(dtype, logits, ref, rows * V);
                char what[160];
                for (size_t b = 0; b < batch; b++) {
                    snprintf(what, sizeof what, "%s, %s, %s, row %zu", la_kernel_get(k)->name,
                             a->name, f64 ? "float64" : "float32", b);
                    decode_matches(m, tokens + b * N_SEQ, N_SEQ, ref + b * N_SEQ * V, what);
                }
                free(ref);
                free(logits);
                la_train_model_free(m);
            }
    }
    assert_true(kernels >= 2); /* softmax and linear at least */
}

static void sinusoidal_positions_go_past_seq_len(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("decode_long");
    for (int f64 = 0; f64 < 2; f64++) {
        const la_dtype dtype = f64 ? LA_FLOAT64 : LA_FLOAT32;
        const uint64_t seed = tu_next(&r);
        const size_t n = 2 * N_SEQ;
        const la_train_config short_c =
            tiny_config(LA_KERNEL_SOFTMAX, &arrangements[0], dtype, N_SEQ, seed);
        const la_train_config long_c =
            tiny_config(LA_KERNEL_SOFTMAX, &arrangements[0], dtype, n, seed);
        la_train_model *ms = NULL, *ml = NULL;
        assert_int_equal(la_train_model_create(&ms, &short_c, seed), LA_OK);
        assert_int_equal(la_train_model_create(&ml, &long_c, seed), LA_OK);
        la_train_tensor *ts, *tl;
        size_t ns, nl;
        assert_int_equal(la_train_model_tensors(ms, &ts, &ns), LA_OK);
        assert_int_equal(la_train_model_tensors(ml, &tl, &nl), LA_OK);
        assert_int_equal(ns, nl);
        for (size_t i = 0; i < ns; i++) /* the premise: the same parameters */
            assert_memory_equal(ts[i].data, tl[i].data, ts[i].numel * elem(dtype));
        int32_t tokens[2 * N_SEQ];
        for (size_t i = 0; i < n; i++)
            tokens[i] = (int32_t)(tu_next(&r) % short_c.vocab);
        void *logits = tu_alloc(n * short_c.vocab * elem(dtype));
        double *ref = tu_f64(n * short_c.vocab);
        assert_int_equal(la_train_logits(ml, 1, tokens, logits), LA_OK);
        to_f64(dtype, logits, ref, n * short_c.vocab);
        decode_matches(ms, tokens, n, ref, f64 ? "past seq_len, float64" : "past seq_len, float32");
        free(ref);
        free(logits);
        la_train_model_free(ms);
        la_train_model_free(ml);
    }
}

static void errors(void **state)
{
    (void)state;
    la_train_config c = tiny_config(LA_KERNEL_SOFTMAX, &arrangements[1], LA_FLOAT64, 4, 1);
    la_train_model *m = NULL;
    assert_int_equal(la_train_model_create(&m, &c, 1), LA_OK);
    la_train_decoder *d = (la_train_decoder *)m; /* not NULL: create must clear it */
    assert_int_equal(la_train_decoder_create(NULL, m, 4), LA_EINVAL);
    assert_int_equal(la_train_decoder_create(&d, NULL, 4), LA_EINVAL);
    assert_null(d);
    assert_int_equal(la_train_decoder_create(&d, m, 0), LA_EINVAL);
    assert_int_equal(la_train_decoder_create(&d, m, 5), LA_EINVAL); /* learned: N = 4 */
    assert_null(d);
    assert_int_equal(la_train_decoder_create(&d, m, 2), LA_OK);
    double logits[7];
    assert_int_equal(la_train_decoder_step(NULL, 0, logits), LA_EINVAL);
    assert_int_equal(la_train_decoder_step(d, 0, NULL), LA_EINVAL);
    assert_int_equal(la_train_decoder_step(d, 7, logits), LA_EINVAL);
    assert_int_equal(la_train_decoder_step(d, -1, logits), LA_EINVAL);
    assert_int_equal(la_train_decoder_position(d), 0);
    assert_int_equal(la_train_decoder_step(d, 3, logits), LA_OK);
    assert_int_equal(la_train_decoder_step(d, 6, logits), LA_OK);
    assert_int_equal(la_train_decoder_step(d, 1, logits), LA_EINVAL); /* the capacity */
    assert_int_equal(la_train_decoder_position(d), 2);
    assert_int_equal(la_train_decoder_position(NULL), 0);
    la_train_decoder_free(d);
    la_train_decoder_free(NULL);
    int32_t tokens[4] = {0, 1, 2, 7};
    assert_int_equal(la_train_logits(m, 1, tokens, logits), LA_EINVAL); /* 7 out of range */
    assert_int_equal(la_train_logits(NULL, 1, tokens, logits), LA_EINVAL);
    assert_int_equal(la_train_logits(m, 0, tokens, logits), LA_EINVAL);
    la_train_model_free(m);
}

int main(void)
{
    tu_init("test_decode");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decoding_matches_the_forward),
        cmocka_unit_test(sinusoidal_positions_go_past_seq_len),
        cmocka_unit_test(errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

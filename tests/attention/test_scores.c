/* test_scores.c — the score functions: general q·W·k, additive vᵀtanh(W_q q +
 * W_k k), cosine. What the registry harness (test_attention.c) does not cover:
 *   given_weights_match_reference  caller-given W (and v) against the float64 oracles, with
 *                                  d_a from 1 to 100 (the harness draws W at d_a = 8),
 *                                  masks, M != N, several heads;
 *   drawn_weights_are_la_score_weights  NULL weights equal, bit for bit, the weights
 *                                  la_score_weights draws passed explicitly;
 *   identities                     general with W = I is softmax at the same scale; dot
 *                                  (softmax, scale 1) with W = I/√d_k is scaled dot;
 *                                  cosine on unit rows is softmax; cosine ignores each
 *                                  row's length; additive with W_q = 0 gives every query
 *                                  the same row;
 *   cosine_extreme_lengths         query rows 1e300 (float64) or 1e36 (float32) times
 *                                  longer, key rows 1e-6 times, give the unscaled output.
 * Tolerances against the float64 oracles: float64 1e-12, float32 1e-5 (as every kernel). */
#include "../testutil.h"
#include "attention/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t B, H, N, M, dk, dv;
} sizes;

static const sizes cases[] = {
    {1, 1, 1, 1, 1, 1},    {1, 2, 5, 3, 4, 2},    {2, 1, 17, 33, 8, 5},
    {1, 1, 65, 64, 16, 3}, {2, 2, 70, 300, 3, 4}, {1, 1, 129, 257, 32, 16},
};
#define N_CASES (sizeof cases / sizeof cases[0])

static const la_kernel score_kernels[] = {LA_KERNEL_GENERAL, LA_KERNEL_ADDITIVE, LA_KERNEL_COSINE};

/* q, k, v of s drawn N(0, 1) in float64 and float32 (the float64 copy holds the float32
 * values). */
typedef struct {
    size_t nq, nk, nv, no;
    double *q, *k, *v, *out, *ref;
    float *q32, *k32, *v32, *out32;
} arrays;

static void arrays_make(arrays *a, const sizes *s, tu_rng *r)
{
    a->nq = s->B * s->H * s->N * s->dk, a->nk = s->B * s->H * s->M * s->dk;
    a->nv = s->B * s->H * s->M * s->dv, a->no = s->B * s->H * s->N * s->dv;
    a->q = tu_f64(a->nq), a->k = tu_f64(a->nk), a->v = tu_f64(a->nv);
    a->out = tu_f64(a->no), a->ref = tu_f64(a->no);
    a->q32 = tu_f32(a->nq), a->k32 = tu_f32(a->nk), a->v32 = tu_f32(a->nv),
    a->out32 = tu_f32(a->no);
    tu_fill_normal(r, a->q, a->nq, 1);
    tu_fill_normal(r, a->k, a->nk, 1);
    tu_fill_normal(r, a->v, a->nv, 1);
    tu_to_f32(a->q, a->q32, a->nq), tu_to_f64(a->q32, a->q, a->nq);
    tu_to_f32(a->k, a->k32, a->nk), tu_to_f64(a->k32, a->k, a->nk);
    tu_to_f32(a->v, a->v32, a->nv), tu_to_f64(a->v32, a->v, a->nv);
}

static void arrays_free(arrays *a)
{
    free(a->q), free(a->k), free(a->v), free(a->out), free(a->ref);
    free(a->q32), free(a->k32), free(a->v32), free(a->out32);
}

/* Both precisions of kernel on p against its reference. */
static void check_kernel(la_kernel kernel, const la_problem *p, arrays *a, const char *what)
{
    assert_int_equal(la_ref_attention(kernel, p, a->q, a->k, a->v, a->ref), LA_OK);
    assert_int_equal(la_attention(kernel, p, LA_FLOAT64, a->q, a->k, a->v, a->out), LA_OK);
    assert_int_equal(la_attention(kernel, p, LA_FLOAT32, a->q32, a->k32, a->v32, a->out32), LA_OK);
    tu_assert_close_f64(a->out, a->ref, a->no, 1e-12, "%s float64 %s", la_kernel_name(kernel),
                        what);
    tu_assert_close_f32(a->out32, a->ref, a->no, 1e-5, "%s float32 %s", la_kernel_name(kernel),
                        what);
}

static void given_weights_match_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("given_weights_match_reference");
    const size_t dims[] = {1, 7, 64, 100};
    int64_t lengths[2];
    for (size_t c = 0; c < N_CASES; c++) {
        const sizes *s = &cases[c];
        arrays a;
        arrays_make(&a, s, &r);
        for (size_t kk = 0; kk < 3; kk++) {
            const la_kernel kernel = score_kernels[kk];
            for (int causal = 0; causal <= 1; causal++) {
                la_problem p;
                la_problem_init(&p, s->B, s->H, s->N, s->M, s->dk, s->dv);
                la_score_params score = LA_SCORE_PARAMS_INIT;
                p.params = &score.head;
                p.causal = causal;
                score.score_dim = dims[tu_next(&r) % 4];
                p.scale = kernel == LA_KERNEL_COSINE ? 4.0 : 1 / sqrt((double)s->dk);
                if (tu_next(&r) % 2) {
                    for (size_t b = 0; b < s->B; b++)
                        lengths[b] = (int64_t)(tu_next(&r) % (s->M + 1));
                    p.key_lengths = lengths;
                }
                const size_t n_w =
                    kernel == LA_KERNEL_GENERAL ? s->dk * s->dk : 2 * s->dk * score.score_dim;
                double *w = tu_f64(n_w), *wv = tu_f64(score.score_dim);
                tu_fill_normal(&r, w, n_w, 1 / sqrt((double)s->dk));
                tu_fill_normal(&r, wv, score.score_dim, 1);
                if (kernel != LA_KERNEL_COSINE) score.score_w = w;
                if (kernel == LA_KERNEL_ADDITIVE) score.score_v = wv;
                char what[128];
                snprintf(what, sizeof what, "case %zu causal=%d d_a=%zu lengths=%s", c, causal,
                         score.score_dim, p.key_lengths ? "yes" : "no");
                check_kernel(kernel, &p, &a, what);
                free(w), free(wv);
            }
        }
        arrays_free(&a);
    }
}

/* Additive scores take one of two forms (scores.c, additive_exponentials): from e^{2A} and
 * e^{2C} when every |A|, |C| is within 20 (float64: 170), else tanh directly. Both against
 * the reference: q and k as drawn (|A|, |C| of a few units), then q and k scaled by 1000,
 * where A and C reach thousands with both signs (there e^{2A}·e^{2C} would give 0·inf). */
static void additive_both_forms(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("additive_both_forms");
    const sizes s = {2, 1, 40, 70, 8, 5};
    arrays a;
    arrays_make(&a, &s, &r);
    la_problem p;
    la_problem_init(&p, s.B, s.H, s.N, s.M, s.dk, s.dv);
    la_score_params score = LA_SCORE_PARAMS_INIT;
    p.params = &score.head;
    score.score_dim = 16;
    score.seed = tu_next(&r);
    for (int large = 0; large <= 1; large++) {
        if (large) {
            for (size_t x = 0; x < a.nq; x++)
                a.q32[x] *= 1000, a.q[x] = a.q32[x];
            for (size_t x = 0; x < a.nk; x++)
                a.k32[x] *= 1000, a.k[x] = a.k32[x];
        }
        for (int causal = 0; causal <= 1; causal++) {
            p.causal = causal;
            check_kernel(LA_KERNEL_ADDITIVE, &p, &a,
                         large ? "|A|, |C| past 170" : "|A|, |C| small");
        }
    }
    arrays_free(&a);
}

static void drawn_weights_are_la_score_weights(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("drawn_weights_are_la_score_weights");
    const sizes s = {2, 2, 33, 40, 6, 5};
    arrays a;
    arrays_make(&a, &s, &r);
    for (size_t kk = 0; kk < 2; kk++) {
        const la_kernel kernel = score_kernels[kk]; /* general, additive */
        la_problem p;
        la_problem_init(&p, s.B, s.H, s.N, s.M, s.dk, s.dv);
        la_score_params score = LA_SCORE_PARAMS_INIT;
        p.params = &score.head;
        score.score_dim = 9;
        score.seed = tu_next(&r);
        const size_t n_w = kernel == LA_KERNEL_GENERAL ? s.dk * s.dk : 2 * s.dk * score.score_dim;
        double *w = tu_f64(n_w), *wv = tu_f64(score.score_dim), *given = tu_f64(a.no);
        float *given32 = tu_f32(a.no);
        assert_int_equal(la_score_weights(kernel, s.dk, score.score_dim, score.seed, w, wv), LA_OK);
        /* the documented distribution: W's entries have variance 1/fan-in, checked on a
         * draw for d_k = 64 (n = 4096 or 1152 entries): n·var·fan_in is χ²(n), so
         * var·fan_in − 1 has standard deviation √(2/n) and a bound of 6 of them fails a
         * right draw about once in 6·10⁷ runs over both kernels (χ²'s tails by the
         * Wilson–Hilferty cube root; 2·10⁻⁶ at 5, the skewed upper tail of n = 1152
         * weighing most); the bound is 0.25 at n = 1152 and 0.13 at 4096, so a variance
         * off by a third fails nearly always and one off by a factor 2 always (the 36
         * entries of d_k = 6 failed about once in 30 against a bound of 0.5) */
        const size_t big_dk = 64;
        const size_t n_big = kernel == LA_KERNEL_GENERAL ? big_dk * big_dk : 2 * big_dk * 9;
        double *big = tu_f64(n_big), *big_v = tu_f64(9);
        assert_int_equal(la_score_weights(kernel, big_dk, 9, score.seed, big, big_v), LA_OK);
        double var = 0;
        for (size_t x = 0; x < n_big; x++)
            var += big[x] * big[x] / (double)n_big;
        const double fan_in = kernel == LA_KERNEL_GENERAL ? (double)big_dk : 2.0 * (double)big_dk;
        if (!(fabs(var * fan_in - 1) < 6 * sqrt(2.0 / (double)n_big)))
            fail_msg("%s: drawn W has variance %g, documented 1/%g (seed %llu)",
                     la_kernel_name(kernel), var, fan_in, (unsigned long long)tu_seed());
        free(big), free(big_v);
        assert_int_equal(la_attention(kernel, &p, LA_FLOAT64, a.q, a.k, a.v, a.out), LA_OK);
        assert_int_equal(la_attention(kernel, &p, LA_FLOAT32, a.q32, a.k32, a.v32, a.out32), LA_OK);
        la_problem g = p;
        la_score_params g_score = score;
        g.params = &g_score.head;
        g_score.score_w = w;
        if (kernel == LA_KERNEL_ADDITIVE) g_score.score_v = wv;
        g_score.seed = score.seed + 1; /* not read when given */
        assert_int_equal(la_attention(kernel, &g, LA_FLOAT64, a.q, a.k, a.v, given), LA_OK);
        assert_int_equal(la_attention(kernel, &g, LA_FLOAT32, a.q32, a.k32, a.v32, given32), LA_OK);
        if (memcmp(given, a.out, a.no * sizeof *given) != 0 ||
            memcmp(given32, a.out32, a.no * sizeof *given32) != 0)
            fail_msg("%s: drawn weights differ from la_score_weights' (seed %llu)",
                     la_kernel_name(kernel), (unsigned long long)tu_seed());
        /* another seed, another draw */
        g_score = score, g_score.seed = score.seed + 1;
        assert_int_equal(la_attention(kernel, &g, LA_FLOAT64, a.q, a.k, a.v, given), LA_OK);
        assert_true(memcmp(given, a.out, a.no * sizeof *given) != 0);
        free(w), free(wv), free(given), free(given32);
    }
    arrays_free(&a);
}

static void identities(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("identities");
    const sizes s = {1, 2, 40, 50, 8, 3};
    arrays a;
    arrays_make(&a, &s, &r);
    la_problem p;
    la_problem_init(&p, s.B, s.H, s.N, s.M, s.dk, s.dv);
    p.causal = 1;
    double *want = tu_f64(a.no), *w = tu_f64(2 * s.dk * s.dk);

    /* general, W = I: softmax at the same scale */
    memset(w, 0, s.dk * s.dk * sizeof *w);
    for (size_t x = 0; x < s.dk; x++)
        w[x * s.dk + x] = 1;
    la_problem g = p;
    la_score_params g_score = LA_SCORE_PARAMS_INIT;
    g.params = &g_score.head;
    g_score.score_w = w;
    assert_int_equal(la_softmax_attention_f64(&p, a.q, a.k, a.v, want), LA_OK);
    assert_int_equal(la_general_attention_f64(&g, a.q, a.k, a.v, a.out), LA_OK);
    tu_assert_close_f64(a.out, want, a.no, 1e-12, "general W = I vs softmax");
    /* dot (scale 1) with W = I/√d_k is scaled dot */
    for (size_t x = 0; x < s.dk; x++)
        w[x * s.dk + x] = 1 / sqrt((double)s.dk);
    g.scale = 1;
    assert_int_equal(la_general_attention_f64(&g, a.q, a.k, a.v, a.out), LA_OK);
    tu_assert_close_f64(a.out, want, a.no, 1e-12, "general W = I/sqrt(d_k), scale 1 vs scaled");

    /* cosine on unit rows: softmax; and each row's length does not matter */
    double *qu = tu_f64(a.nq), *ku = tu_f64(a.nk);
    for (size_t row = 0; row < a.nq / s.dk; row++) {
        double n = 0;
        for (size_t c = 0; c < s.dk; c++)
            n += a.q[row * s.dk + c] * a.q[row * s.dk + c];
        for (size_t c = 0; c < s.dk; c++)
            qu[row * s.dk + c] = a.q[row * s.dk + c] / sqrt(n);
    }
    for (size_t row = 0; row < a.nk / s.dk; row++) {
        double n = 0;
        for (size_t c = 0; c < s.dk; c++)
            n += a.k[row * s.dk + c] * a.k[row * s.dk + c];
        for (size_t c = 0; c < s.dk; c++)
            ku[row * s.dk + c] = a.k[row * s.dk + c] / sqrt(n);
    }
    la_problem cs = p;
    cs.scale = 5;
    assert_int_equal(la_softmax_attention_f64(&cs, qu, ku, a.v, want), LA_OK);
    assert_int_equal(la_cosine_attention_f64(&cs, a.q, a.k, a.v, a.out), LA_OK);
    tu_assert_close_f64(a.out, want, a.no, 1e-12, "cosine vs softmax on unit rows");
    for (size_t x = 0; x < a.nq; x++)
        qu[x] = a.q[x] * (1 + (double)(x / s.dk % 7)) * 1e3; /* every row its own length */
    assert_int_equal(la_cosine_attention_f64(&cs, qu, a.k, a.v, want), LA_OK);
    tu_assert_close_f64(a.out, want, a.no, 1e-12, "cosine with rescaled query rows");

    /* additive, W_q = 0: the scores do not depend on the query, so non-causal every query
     * of a head gets the same row */
    la_problem ad = p;
    la_score_params ad_score = LA_SCORE_PARAMS_INIT;
    ad.params = &ad_score.head;
    ad.causal = 0;
    ad_score.score_dim = 5;
    double *wa = tu_f64(2 * s.dk * 5), *wv = tu_f64(5);
    tu_fill_normal(&r, wa, 2 * s.dk * 5, 1);
    tu_fill_normal(&r, wv, 5, 1);
    for (size_t e = 0; e < 5; e++)
        memset(wa + e * 2 * s.dk, 0, s.dk * sizeof *wa);
    ad_score.score_w = wa, ad_score.score_v = wv;
    assert_int_equal(la_additive_attention_f64(&ad, a.q, a.k, a.v, a.out), LA_OK);
    for (size_t h = 0; h < s.H; h++)
        for (size_t i = 1; i < s.N; i++)
            for (size_t c = 0; c < s.dv; c++) {
                const double first = a.out[(h * s.N) * s.dv + c];
                const double other = a.out[(h * s.N + i) * s.dv + c];
                if (fabs(other - first) > 1e-13 * (1 + fabs(first)))
                    fail_msg("additive, W_q = 0: head %zu row %zu differs from row 0 (%g vs %g)", h,
                             i, other, first);
            }
    free(want), free(w), free(qu), free(ku), free(wa), free(wv);
    arrays_free(&a);
}

/* cosine at the ends of the range: query rows scaled by 1e36 (float32: their squares
 * overflow float) and 1e300 (float64: past double), key rows by 1e-6, give the output of
 * the unscaled rows, since each norm is taken in float64 after dividing by the row's
 * largest entry. (Rows shorter than 1e-12 are divided by 1e-12, F.normalize's eps, and
 * are not unit rows: linattn.h.) */
static void cosine_extreme_lengths(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("cosine_extreme_lengths");
    const sizes s = {1, 2, 20, 30, 16, 4};
    arrays a;
    arrays_make(&a, &s, &r);
    la_problem p;
    la_problem_init(&p, s.B, s.H, s.N, s.M, s.dk, s.dv);
    p.scale = 6;
    double *want = tu_f64(a.no), *q = tu_f64(a.nq), *k = tu_f64(a.nk);
    float *q32 = tu_f32(a.nq), *k32 = tu_f32(a.nk);
    assert_int_equal(la_cosine_attention_f64(&p, a.q, a.k, a.v, want), LA_OK);
    for (size_t x = 0; x < a.nq; x++)
        q[x] = a.q[x] * 1e300, q32[x] = a.q32[x] * 1e36f;
    for (size_t x = 0; x < a.nk; x++)
        k[x] = a.k[x] * 1e-6, k32[x] = a.k32[x] * 1e-6f;
    assert_int_equal(la_cosine_attention_f64(&p, q, k, a.v, a.out), LA_OK);
    tu_assert_close_f64(a.out, want, a.no, 1e-12, "cosine float64, q·1e300 and k·1e-6");
    assert_int_equal(la_cosine_attention_f32(&p, q32, k32, a.v32, a.out32), LA_OK);
    tu_assert_close_f32(a.out32, want, a.no, 1e-5, "cosine float32, q·1e36 and k·1e-6");
    free(want), free(q), free(k), free(q32), free(k32);
    arrays_free(&a);
}

int main(void)
{
    tu_init("test_scores");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(given_weights_match_reference),
        cmocka_unit_test(additive_both_forms),
        cmocka_unit_test(drawn_weights_are_la_score_weights),
        cmocka_unit_test(identities),
        cmocka_unit_test(cosine_extreme_lengths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

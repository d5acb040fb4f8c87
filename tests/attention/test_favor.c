/* test_favor.c — what is particular to FAVOR+ (la_favor_attention_*, its recurrent form
 * la_favor_attention_recurrent_*, la_favor_features):
 * the random features W (orthogonal within a block, chi-distributed norms, a function of
 * the seed alone), the kernels against la_ref_favor_attention at feature counts the
 * harness does not use, and the property that makes FAVOR+ what it is: its output
 * approaches exact softmax attention as m grows, at the Monte Carlo rate m^(-1/2); the
 * recurrent form agrees with the chunked one where the keys' running max rises often;
 * the step API's FAVOR+ states (la_favor_state_create) give the same outputs; the backward
 * through the keys' stabilizers, where eps makes them matter and float32 must refuse.
 * What every kernel must hold (causal masking, threads, errors, the workspace limit) is
 * tests/attention/test_attention.c's, which runs the favor row at m = 256. */
#include "../testutil.h"
#include "../yardsticks.h"
#include "attention/kernels.h"
#include "attention/linear_internal.h" /* la_linear_recurrent_split_force */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* ---------------------------------------------------------------- the features */

/* Rows of one block (d_k rows, the last m mod d_k) are orthonormal once each is
 * normalised: |cos| < 1e-12 for every pair, for m a multiple of d_k, not one, and below
 * d_k. */
static void features_orthogonal_within_blocks(void **state)
{
    (void)state;
    const size_t cases[][2] = {{16, 16}, {40, 16}, {7, 3}, {256, 64}, {5, 32}, {130, 128}};
    double worst = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t m = cases[c][0], dk = cases[c][1];
        for (uint64_t seed = 0; seed < 3; seed++) {
            double *w = tu_f64(m * dk);
            assert_int_equal(la_favor_features(m, dk, tu_seed() + seed, w), LA_OK);
            for (size_t b0 = 0; b0 < m; b0 += dk) {
                const size_t end = b0 + dk < m ? b0 + dk : m;
                for (size_t i = b0; i < end; i++) {
                    for (size_t j = b0; j < i; j++) {
                        double dot = 0, ni = 0, nj = 0;
                        for (size_t a = 0; a < dk; a++) {
                            dot += w[i * dk + a] * w[j * dk + a];
                            ni += w[i * dk + a] * w[i * dk + a];
                            nj += w[j * dk + a] * w[j * dk + a];
                        }
                        const double cosine = fabs(dot) / sqrt(ni * nj);
                        if (!(cosine < 1e-12))
                            fail_msg("m=%zu d_k=%zu seed %llu: rows %zu and %zu of a block have "
                                     "cos %.3g, not < 1e-12",
                                     m, dk, (unsigned long long)(tu_seed() + seed), i, j, cosine);
                        worst = cosine > worst ? cosine : worst;
                    }
                }
            }
            free(w);
        }
    }
    printf("  largest |cos| within a block: %.1e\n", worst);
}

/* The row norms are chi(d_k): over 8192 rows, the mean of ‖w‖² is d_k (standard error
 * √(2 d_k / n)) and its variance 2·d_k (a chi-square's), both within about six standard
 * errors. Rows of one fixed norm (orthonormal rows left unscaled, or scaled by √d_k) have
 * variance 0 and fail. */
static void features_norms_chi_distributed(void **state)
{
    (void)state;
    const size_t dims[] = {4, 16, 64};
    const size_t rows = 8192;
    for (size_t c = 0; c < 3; c++) {
        const size_t dk = dims[c];
        double *w = tu_f64(rows * dk);
        assert_int_equal(la_favor_features(rows, dk, tu_seed(), w), LA_OK);
        double sum = 0, sum_sq = 0;
        for (size_t i = 0; i < rows; i++) {
            double n2 = 0;
            for (size_t a = 0; a < dk; a++)
                n2 += w[i * dk + a] * w[i * dk + a];
            sum += n2;
            sum_sq += n2 * n2;
        }
        const double mean = sum / (double)rows;
        const double var = sum_sq / (double)rows - mean * mean;
        const double d = (double)dk, se_mean = sqrt(2 * d / (double)rows);
        /* the sample variance of a chi-square(d) has variance about (μ4 − σ⁴)/n =
         * (8d² + 48d)/n = (2d)²·(2 + 12/d)/n */
        const double se_var = 2 * d * sqrt((2 + 12 / d) / (double)rows);
        printf("  d_k=%zu: mean ‖w‖² %.3f (want %zu ± %.3f), variance %.2f (want %.0f ± %.2f)\n",
               dk, mean, dk, 6 * se_mean, var, 2 * d, 6 * se_var);
        if (!(fabs(mean - d) < 6 * se_mean))
            fail_msg("d_k=%zu: mean of ‖w‖² %.4f, not d_k within %.3f (seed %llu)", dk, mean,
                     6 * se_mean, (unsigned long long)tu_seed());
        if (!(fabs(var - 2 * d) < 6 * se_var))
            fail_msg("d_k=%zu: variance of ‖w‖² %.4f, not 2·d_k within %.3f (seed %llu)", dk, var,
                     6 * se_var, (unsigned long long)tu_seed());
        free(w);
    }
}

/* W is a function of (m, d_k, seed): the same seed gives the same bits, another seed
 * other values; the first rows of a larger m are the rows of a smaller one (the draws
 * go block by block). */
static void features_follow_the_seed(void **state)
{
    (void)state;
    const size_t m = 50, dk = 8;
    double *a = tu_f64(m * dk), *b = tu_f64(m * dk), *c = tu_f64(m * dk), *d = tu_f64(16 * dk);
    assert_int_equal(la_favor_features(m, dk, 42, a), LA_OK);
    assert_int_equal(la_favor_features(m, dk, 42, b), LA_OK);
    assert_int_equal(la_favor_features(m, dk, 43, c), LA_OK);
    assert_int_equal(la_favor_features(16, dk, 42, d), LA_OK);
    assert_memory_equal(a, b, m * dk * sizeof *a);
    size_t same = 0;
    for (size_t x = 0; x < m * dk; x++)
        same += a[x] == c[x];
    assert_true(same == 0);
    assert_memory_equal(a, d, 16 * dk * sizeof *a);
    free(a);
    free(b);
    free(c);
    free(d);
}

static void features_errors(void **state)
{
    (void)state;
    double w[4] = {7, 7, 7, 7};
    assert_int_equal(la_favor_features(2, 2, 0, NULL), LA_EINVAL);
    assert_int_equal(la_favor_features(0, 2, 0, w), LA_EINVAL);
    assert_int_equal(la_favor_features(2, 0, 0, w), LA_EINVAL);
    assert_int_equal(la_favor_features(SIZE_MAX / 2, 4, 0, w), LA_EOVERFLOW);
    for (int i = 0; i < 4; i++)
        assert_true(w[i] == 7);
}

/* ---------------------------------------------------------------- the kernels */

typedef struct {
    size_t B, H, N, M, dk, dv, m;
    int causal;
    int64_t lengths[3]; /* {-1}: none */
    size_t chunk;
} fshape;

/* The forward in both precisions and the float64 backward (d_out = v) of p. */
static void favor_every_output(const la_problem *p, const double *q, const double *k,
                               const double *v, const float *qf, const float *kf, const float *vf,
                               double *y, float *yf, double *g[3])
{
    assert_int_equal(la_favor_attention_f64(p, q, k, v, y), LA_OK);
    assert_int_equal(la_favor_attention_f32(p, qf, kf, vf, yf), LA_OK);
    assert_int_equal(la_attention_backward(LA_KERNEL_FAVOR, p, LA_FLOAT64, q, k, v, y, NULL, v,
                                           g[0], g[1], g[2]),
                     LA_OK);
}

/* A W the caller holds (la_favor_params.proj_w): la_kernel_draw's W given back gives every
 * form the bits of the seed's draw (forward, causal chunked and recurrent, backward, the
 * step API); another W (the drawn one, every entry times 0.75) moves the output and the
 * kernels follow it to the oracle, which reads the same W; a W holding a NaN is refused
 * with LA_EINVAL and nothing written. */
static void held_w_is_the_draw(void **state)
{
    (void)state;
    enum { B = 1, H = 2, N = 37, DK = 8, DV = 5, M_FEAT = 24 };
    la_problem p;
    la_favor_params favor = LA_FAVOR_PARAMS_INIT;
    la_problem_init(&p, B, H, N, N, DK, DV);
    favor.features = M_FEAT;
    favor.seed = tu_seed();
    p.params = &favor.head;
    p.chunk = 8;
    const size_t nq = B * H * N * DK, nv = B * H * N * DV;
    tu_rng r = tu_rng_for("held_w");
    double *q = tu_f64(nq), *k = tu_f64(nq), *v = tu_f64(nv), *w = tu_f64(M_FEAT * DK);
    double *a = tu_f64(nv), *b = tu_f64(nv), *ref = tu_f64(nv);
    double *g[6] = {tu_f64(nq), tu_f64(nq), tu_f64(nv), tu_f64(nq), tu_f64(nq), tu_f64(nv)};
    float *qf = tu_f32(nq), *kf = tu_f32(nq), *vf = tu_f32(nv), *af = tu_f32(nv), *bf = tu_f32(nv);
    tu_fill_normal(&r, q, nq, 1), tu_fill_normal(&r, k, nq, 1), tu_fill_normal(&r, v, nv, 1);
    tu_to_f32(q, qf, nq), tu_to_f32(k, kf, nq), tu_to_f32(v, vf, nv);
    assert_int_equal(la_kernel_draw(LA_KERNEL_FAVOR, &p, w, NULL), LA_OK);
    for (int causal = 0; causal <= 1; causal++) {
        p.causal = causal;
        favor.proj_w = NULL;
        favor_every_output(&p, q, k, v, qf, kf, vf, a, af, g);
        favor.proj_w = w;
        favor_every_output(&p, q, k, v, qf, kf, vf, b, bf, g + 3);
        assert_memory_equal(a, b, nv * sizeof *a);
        assert_memory_equal(af, bf, nv * sizeof *af);
        for (int x = 0; x < 3; x++)
            assert_memory_equal(g[x], g[3 + x], (x == 2 ? nv : nq) * sizeof(double));
        if (causal) {
            favor.proj_w = NULL;
            assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, a), LA_OK);
            favor.proj_w = w;
            assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, b), LA_OK);
            assert_memory_equal(a, b, nv * sizeof *a);
        }
    }
    /* the step API: a state made from the chain with W held steps as one from the seed */
    la_linear_state *s_seed, *s_held;
    double y_seed[H * DV], y_held[H * DV];
    p.causal = 1;
    favor.proj_w = NULL;
    assert_int_equal(la_linear_state_create(&s_seed, LA_KERNEL_FAVOR, &p, LA_FLOAT64), LA_OK);
    favor.proj_w = w;
    assert_int_equal(la_linear_state_create(&s_held, LA_KERNEL_FAVOR, &p, LA_FLOAT64), LA_OK);
    for (size_t t = 0; t < 5; t++) { /* head 0's and head 1's token t: rows t and N + t */
        double qt[H * DK], kt[H * DK], vt[H * DV];
        for (size_t h = 0; h < H; h++) {
            memcpy(qt + h * DK, q + (h * N + t) * DK, DK * sizeof *qt);
            memcpy(kt + h * DK, k + (h * N + t) * DK, DK * sizeof *kt);
            memcpy(vt + h * DV, v + (h * N + t) * DV, DV * sizeof *vt);
        }
        assert_int_equal(la_linear_step(s_seed, qt, kt, vt, y_seed), LA_OK);
        assert_int_equal(la_linear_step(s_held, qt, kt, vt, y_held), LA_OK);
        assert_memory_equal(y_seed, y_held, sizeof y_seed);
    }
    la_linear_state_free(s_seed);
    la_linear_state_free(s_held);
    /* another W: the kernels follow it, to the oracle on the same W */
    for (size_t x = 0; x < M_FEAT * DK; x++)
        w[x] *= 0.75;
    for (int causal = 0; causal <= 1; causal++) {
        p.causal = causal;
        favor.proj_w = NULL;
        assert_int_equal(la_favor_attention_f64(&p, q, k, v, a), LA_OK);
        favor.proj_w = w;
        assert_int_equal(la_ref_favor_attention(&p, q, k, v, ref), LA_OK);
        assert_int_equal(la_favor_attention_f64(&p, q, k, v, b), LA_OK);
        tu_assert_close_f64(b, ref, nv, TOL_F64, "another W, causal %d", causal);
        if (!(tu_rel_error_f64(a, ref, nv, NULL) > 1e-3))
            fail_msg("causal %d: W times 0.75 left the output as the seed's", causal);
    }
    /* a W with a NaN: refused, nothing written */
    w[3] = NAN;
    for (size_t i = 0; i < nv; i++)
        b[i] = -7.25;
    assert_int_equal(la_favor_attention_f64(&p, q, k, v, b), LA_EINVAL);
    for (size_t i = 0; i < nv; i++)
        assert_true(b[i] == -7.25);
    assert_int_equal(la_attention_backward(LA_KERNEL_FAVOR, &p, LA_FLOAT64, q, k, v, a, NULL, v,
                                           g[0], g[1], g[2]),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create(&s_held, LA_KERNEL_FAVOR, &p, LA_FLOAT64), LA_EINVAL);
    free(q), free(k), free(v), free(w), free(a), free(b), free(ref);
    for (int x = 0; x < 6; x++)
        free(g[x]);
    free(qf), free(kf), free(vf), free(af), free(bf);
}

/* The kernels against the reference at feature counts other than the harness's 256: one
 * feature, fewer than d_k, not a multiple of d_k, several blocks; causal chunks that do
 * not divide N; key lengths 0, partial and M; N != M. */
static void kernels_match_reference(void **state)
{
    (void)state;
    const fshape shapes[] = {
        {1, 1, 5, 7, 4, 3, 1, 0, {-1}, 32},     {2, 2, 17, 33, 8, 5, 7, 0, {33, 0}, 32},
        {1, 3, 40, 40, 16, 16, 64, 1, {-1}, 7}, {2, 1, 65, 30, 16, 8, 100, 1, {30, 12}, 16},
        {1, 2, 33, 70, 3, 4, 300, 0, {-1}, 32}, {3, 1, 20, 20, 32, 2, 40, 1, {20, 0, 5}, 3},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const fshape *s = &shapes[si];
        la_problem p;
        la_favor_params favor = LA_FAVOR_PARAMS_INIT;
        la_problem_init(&p, s->B, s->H, s->N, s->M, s->dk, s->dv);
        p.params = &favor.head;
        favor.features = s->m;
        p.causal = s->causal;
        p.chunk = s->chunk;
        favor.seed = tu_seed() + si;
        if (s->lengths[0] >= 0) p.key_lengths = s->lengths;
        const size_t nq = s->B * s->H * s->N * s->dk, nk = s->B * s->H * s->M * s->dk;
        const size_t nv = s->B * s->H * s->M * s->dv, no = s->B * s->H * s->N * s->dv;
        char label[64];
        snprintf(label, sizeof label, "favor shape %zu", si);
        tu_rng r = tu_rng_for(label);
        double *q = tu_f64(nq), *k = tu_f64(nk), *v = tu_f64(nv);
        double *ref = tu_f64(no), *y64 = tu_f64(no);
        float *qf = tu_f32(nq), *kf = tu_f32(nk), *vf = tu_f32(nv), *y32 = tu_f32(no);
        tu_fill_normal(&r, q, nq, 1);
        tu_fill_normal(&r, k, nk, 1);
        tu_fill_normal(&r, v, nv, 1);
        tu_to_f32(q, qf, nq), tu_to_f64(qf, q, nq);
        tu_to_f32(k, kf, nk), tu_to_f64(kf, k, nk);
        tu_to_f32(v, vf, nv), tu_to_f64(vf, v, nv);
        assert_int_equal(la_ref_favor_attention(&p, q, k, v, ref), LA_OK);
        assert_int_equal(la_favor_attention_f64(&p, q, k, v, y64), LA_OK);
        assert_int_equal(la_favor_attention_f32(&p, qf, kf, vf, y32), LA_OK);
        tu_assert_close_f64(y64, ref, no, TOL_F64, "float64, shape %zu (m=%zu causal=%d)", si, s->m,
                            s->causal);
        tu_assert_close_f32(y32, ref, no, TOL_F32, "float32, shape %zu (m=%zu causal=%d)", si, s->m,
                            s->causal);
        if (s->causal) { /* the recurrent form, on the same shapes */
            assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, y64), LA_OK);
            assert_int_equal(la_favor_attention_recurrent_f32(&p, qf, kf, vf, y32), LA_OK);
            tu_assert_close_f64(y64, ref, no, TOL_F64, "recurrent float64, shape %zu (m=%zu)", si,
                                s->m);
            tu_assert_close_f32(y32, ref, no, TOL_F32, "recurrent float32, shape %zu (m=%zu)", si,
                                s->m);
        }
        free(q), free(k), free(v), free(ref), free(y64);
        free(qf), free(kf), free(vf), free(y32);
    }
}

/* The seed is the features': the same seed gives the same bits, another seed another
 * output (of the same size: both approximate the same softmax). */
static void output_follows_the_seed(void **state)
{
    (void)state;
    la_problem p;
    la_favor_params favor = LA_FAVOR_PARAMS_INIT;
    la_problem_init(&p, 1, 2, 30, 30, 8, 8);
    p.params = &favor.head;
    favor.features = 32;
    const size_t n = 2 * 30 * 8;
    tu_rng r = tu_rng_for("output_follows_the_seed");
    double *q = tu_f64(n), *k = tu_f64(n), *v = tu_f64(n);
    double *a = tu_f64(n), *b = tu_f64(n), *c = tu_f64(n);
    tu_fill_normal(&r, q, n, 0.5);
    tu_fill_normal(&r, k, n, 0.5);
    tu_fill_normal(&r, v, n, 1);
    favor.seed = 1;
    assert_int_equal(la_favor_attention_f64(&p, q, k, v, a), LA_OK);
    assert_int_equal(la_favor_attention_f64(&p, q, k, v, b), LA_OK);
    favor.seed = 2;
    assert_int_equal(la_favor_attention_f64(&p, q, k, v, c), LA_OK);
    assert_memory_equal(a, b, n * sizeof *a);
    assert_true(tu_rel_error_f64(c, a, n, NULL) > 1e-3);
    free(q), free(k), free(v), free(a), free(b), free(c);
}

/* Inputs beyond float32 (‖k‖² past FLT_MAX): float32 refuses with LA_ERANGE and writes
 * nothing, float64 computes a finite output equal to the reference. */
static void range_refused_in_float32(void **state)
{
    (void)state;
    la_problem p;
    la_favor_params favor = LA_FAVOR_PARAMS_INIT;
    la_problem_init(&p, 1, 1, 4, 4, 4, 2);
    p.params = &favor.head;
    favor.features = 8;
    const size_t n = 16;
    double q[16], k[16], v[8], y64[8], ref[8];
    float qf[16], kf[16], vf[8], y32[8];
    tu_rng r = tu_rng_for("range_refused_in_float32");
    tu_fill_normal(&r, q, n, 1);
    tu_fill_normal(&r, k, n, 1);
    tu_fill_normal(&r, v, 8, 1);
    for (size_t x = 0; x < n; x++)
        k[x] *= 1e20;
    tu_to_f32(q, qf, n), tu_to_f32(k, kf, n), tu_to_f32(v, vf, 8);
    tu_to_f64(kf, k, n);
    for (int causal = 0; causal <= 1; causal++) {
        p.causal = causal;
        for (size_t x = 0; x < 8; x++)
            y32[x] = -3.5f;
        assert_int_equal(la_favor_attention_f32(&p, qf, kf, vf, y32), LA_ERANGE);
        for (size_t x = 0; x < 8; x++)
            assert_true(y32[x] == -3.5f);
        assert_int_equal(la_favor_attention_f64(&p, q, k, v, y64), LA_OK);
        assert_int_equal(la_ref_favor_attention(&p, q, k, v, ref), LA_OK);
        assert_true(tu_all_finite_f64(y64, 8));
        tu_assert_close_f64(y64, ref, 8, TOL_F64, "float64 at keys of 1e20, causal=%d", causal);
    }
    /* the recurrent form likewise (causal) */
    for (size_t x = 0; x < 8; x++)
        y32[x] = -3.5f;
    assert_int_equal(la_favor_attention_recurrent_f32(&p, qf, kf, vf, y32), LA_ERANGE);
    for (size_t x = 0; x < 8; x++)
        assert_true(y32[x] == -3.5f);
    assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, y64), LA_OK);
    assert_true(tu_all_finite_f64(y64, 8));
    tu_assert_close_f64(y64, ref, 8, TOL_F64, "recurrent float64 at keys of 1e20");
}

/* L = Σ out ∘ d_out of the float64 reference (central differences' function). */
static double ref_loss(const la_problem *p, const double *q, const double *k, const double *v,
                       const double *d_out, double *out, size_t no)
{
    assert_int_equal(la_ref_favor_attention(p, q, k, v, out), LA_OK);
    double loss = 0;
    for (size_t x = 0; x < no; x++)
        loss += out[x] * d_out[x];
    return loss;
}

/* The backward where the keys' stabilizer matters: key 0 of norm 12 (the others about 2),
 * so its largest exponent g_0 lies up to about 36 below theirs, and eps = 1e-3, so that
 * eps meets each query's denominator at the scale of its μ_i and the gradient through μ_i
 * and the rows' maxima is not negligible. Causal, the backward writes query i's features
 * scaled by exp(G − μ_i) (G the largest g): float32 refuses past 2^32 (LA_ERANGE, nothing
 * written; 93% of draws: g_0's distance depends on key 0's direction), float64
 * computes (it refuses past 2^256, G − μ_i > 177, which key 0's fixed norm keeps out of
 * reach: a norm of 6 times a N(0, 1) vector's passed it once in 4,541 runs); non-causal,
 * both compute. Each computed gradient against la_ref_favor_attention_backward (float64
 * 1e-11, float32 1e-5 relative), and that oracle against central differences of
 * la_ref_favor_attention (1e-6; h = 1e-5·max(1, |x|)). Those are off by a share of the
 * gradient's jump where a step crosses a stabilizer's kink (tu_favor_kink_gap, over the causal
 * prefixes too): a step moves a projection or g by at most about 1e-3 (key 0's entries, up to 12,
 * by 1.2e-4, g by 8 times that), so inputs whose gap is below 1e-2 are drawn again (28% of draws
 * over 4,862 runs, at most 9 in a run); without that a run failed about once in 2,000 (2 of 4,055,
 * relative errors 0.002 and 0.007). */
static void backward_through_the_stabilizers(void **state)
{
    (void)state;
    const size_t B = 1, H = 2, N = 6, M = 6, dk = 4, dv = 3;
    const size_t nq = B * H * N * dk, nk = B * H * M * dk, nv = B * H * M * dv, no = B * H * N * dv;
    la_problem p;
    la_favor_params favor = LA_FAVOR_PARAMS_INIT;
    la_problem_init(&p, B, H, N, M, dk, dv);
    p.params = &favor.head;
    favor.features = 8;
    p.eps = 1e-3;
    favor.seed = tu_seed();
    tu_rng r = tu_rng_for("backward_through_the_stabilizers");
    double *x[4] = {tu_f64(nq), tu_f64(nk), tu_f64(nv), tu_f64(no)};
    float *y[4] = {tu_f32(nq), tu_f32(nk), tu_f32(nv), tu_f32(no)};
    const size_t n[4] = {nq, nk, nv, no};
    /* the gaps of the causal form: each query's prefix of keys, the last one all of them,
     * so the non-causal form's maxima too */
    la_problem causal_p = p;
    causal_p.causal = 1;
    int draws = 0;
    do {
        for (int t = 0; t < 4; t++)
            tu_fill_normal(&r, x[t], n[t], 1);
        for (size_t hd = 0; hd < B * H; hd++) { /* key 0 of each head: norm 12, g_0 far below */
            double *k0 = x[1] + hd * M * dk, norm = 0;
            for (size_t a = 0; a < dk; a++)
                norm += k0[a] * k0[a];
            for (size_t a = 0; a < dk; a++)
                k0[a] *= 12 / sqrt(norm);
        }
        for (int t = 0; t < 4; t++)
            tu_to_f32(x[t], y[t], n[t]), tu_to_f64(y[t], x[t], n[t]);
    } while (++draws < 100 && tu_favor_kink_gap(&causal_p, x[0], x[1]) < 1e-2);
    if (!(draws < 100))
        fail_msg("100 draws, each with a stabilizer's kink within 1e-2 (seed %llu)",
                 (unsigned long long)tu_seed());
    double *out = tu_f64(no), *ref[3], *g64[3], *fd[3];
    float *out32 = tu_f32(no), *g32[3];
    for (int t = 0; t < 3; t++)
        ref[t] = tu_f64(n[t]), g64[t] = tu_f64(n[t]), fd[t] = tu_f64(n[t]), g32[t] = tu_f32(n[t]);
    int refused = 0;
    for (int causal = 0; causal <= 1; causal++) {
        p.causal = causal;
        assert_int_equal(la_ref_favor_attention(&p, x[0], x[1], x[2], out), LA_OK);
        assert_int_equal(la_ref_attention_backward(LA_KERNEL_FAVOR, &p, x[0], x[1], x[2], out, x[3],
                                                   ref[0], ref[1], ref[2]),
                         LA_OK);
        /* the oracle against central differences */
        double *scratch = tu_f64(no);
        for (int t = 0; t < 3; t++)
            for (size_t e = 0; e < n[t]; e++) {
                const double keep = x[t][e], h = 1e-5 * fmax(1, fabs(keep));
                x[t][e] = keep + h;
                const double up = ref_loss(&p, x[0], x[1], x[2], x[3], scratch, no);
                x[t][e] = keep - h;
                const double down = ref_loss(&p, x[0], x[1], x[2], x[3], scratch, no);
                x[t][e] = keep;
                fd[t][e] = (up - down) / (2 * h);
            }
        free(scratch);
        for (int t = 0; t < 3; t++)
            tu_assert_close_f64(ref[t], fd[t], n[t], 1e-6,
                                "oracle gradient %d vs central differences, causal=%d", t, causal);
        /* float64 */
        assert_int_equal(la_favor_attention_f64(&p, x[0], x[1], x[2], out), LA_OK);
        assert_int_equal(la_favor_attention_backward_f64(&p, x[0], x[1], x[2], out, x[3], g64[0],
                                                         g64[1], g64[2]),
                         LA_OK);
        for (int t = 0; t < 3; t++)
            tu_assert_close_f64(g64[t], ref[t], n[t], 1e-11, "float64 gradient %d, causal=%d", t,
                                causal);
        /* float32: computed non-causal; causal computed or refused with nothing written */
        assert_int_equal(la_favor_attention_f32(&p, y[0], y[1], y[2], out32), LA_OK);
        for (int t = 0; t < 3; t++)
            for (size_t e = 0; e < n[t]; e++)
                g32[t][e] = -3.5f;
        const la_status st = la_favor_attention_backward_f32(&p, y[0], y[1], y[2], out32, y[3],
                                                             g32[0], g32[1], g32[2]);
        if (causal && st != LA_OK) { /* refused: where exp(G − μ_i) passes T^(1/4) */
            assert_int_equal(st, LA_ERANGE);
            for (int t = 0; t < 3; t++)
                for (size_t e = 0; e < n[t]; e++)
                    assert_true(g32[t][e] == -3.5f);
            refused++;
        } else {
            assert_int_equal(st, LA_OK);
            for (int t = 0; t < 3; t++)
                tu_assert_close_f32(g32[t], ref[t], n[t], 1e-5, "float32 gradient %d", t);
        }
    }
    printf("  float32 causal backward %s; inputs drawn %d time%s\n",
           refused ? "refused (LA_ERANGE)" : "computed", draws, draws > 1 ? "s" : "");
    for (int t = 0; t < 4; t++)
        free(x[t]), free(y[t]);
    for (int t = 0; t < 3; t++)
        free(ref[t]), free(g64[t]), free(fd[t]), free(g32[t]);
    free(out), free(out32);
}

/* q, k, v drawn N(0, 1) for `keys` rows of d_k (q and k) and nv values, each key's norm
 * then scaled by 0.1 .. 10 (so the keys' running max μ moves a lot), all rounded to float32
 * (qf, kf, vf) and the float64 copies holding those values. */
static void spread_keys_inputs(tu_rng *r, double *q, double *k, double *v, float *qf, float *kf,
                               float *vf, size_t keys, size_t dk, size_t nv)
{
    const size_t nq = keys * dk;
    tu_fill_normal(r, q, nq, 1);
    tu_fill_normal(r, k, nq, 1);
    tu_fill_normal(r, v, nv, 1);
    for (size_t j = 0; j < keys; j++) { /* each key's norm scaled by 0.1 .. 10 */
        const double f = pow(10, 2 * tu_uniform(r) - 1);
        for (size_t a = 0; a < dk; a++)
            k[j * dk + a] *= f;
    }
    tu_to_f32(q, qf, nq), tu_to_f64(qf, q, nq);
    tu_to_f32(k, kf, nq), tu_to_f64(kf, k, nq);
    tu_to_f32(v, vf, nv), tu_to_f64(vf, v, nv);
}

/* The recurrent form against the chunked one and the reference where the keys' running
 * max μ_i moves a lot: key norms spread over two orders of magnitude (g_j = max(W x_j) −
 * ‖x_j‖²/2 then ranges over hundreds, so the state is rescaled by factors far below 1
 * whenever a key raises the max), eps 0 and 1e-3 (eps meets the denominator at the
 * chunked form's scale in both), chunk sizes 1, 3 and N. */
static void recurrent_agrees_with_chunked(void **state)
{
    (void)state;
    const size_t B = 2, H = 2, N = 37, dk = 8, dv = 5, heads = B * H;
    const size_t nq = heads * N * dk, nv = heads * N * dv;
    tu_rng r = tu_rng_for("recurrent_agrees_with_chunked");
    double *q = tu_f64(nq), *k = tu_f64(nq), *v = tu_f64(nv);
    double *ref = tu_f64(nv), *rec = tu_f64(nv), *chk = tu_f64(nv);
    float *qf = tu_f32(nq), *kf = tu_f32(nq), *vf = tu_f32(nv), *y32 = tu_f32(nv);
    spread_keys_inputs(&r, q, k, v, qf, kf, vf, heads * N, dk, nv);
    la_problem p;
    la_favor_params favor = LA_FAVOR_PARAMS_INIT;
    la_problem_init(&p, B, H, N, N, dk, dv);
    p.params = &favor.head;
    p.causal = 1;
    favor.features = 24;
    favor.seed = tu_seed();
    const double eps[] = {0, 1e-3};
    const size_t chunks[] = {1, 3, N};
    for (size_t e = 0; e < 2; e++) {
        p.eps = eps[e];
        assert_int_equal(la_ref_favor_attention(&p, q, k, v, ref), LA_OK);
        assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, rec), LA_OK);
        assert_int_equal(la_favor_attention_recurrent_f32(&p, qf, kf, vf, y32), LA_OK);
        tu_assert_close_f64(rec, ref, nv, TOL_F64, "recurrent float64 eps=%g", eps[e]);
        tu_assert_close_f32(y32, ref, nv, TOL_F32, "recurrent float32 eps=%g", eps[e]);
        for (size_t c = 0; c < 3; c++) {
            p.chunk = chunks[c];
            assert_int_equal(la_favor_attention_f64(&p, q, k, v, chk), LA_OK);
            tu_assert_close_f64(rec, chk, nv, TOL_F64, "recurrent vs chunk=%zu eps=%g", chunks[c],
                                eps[e]);
        }
    }
    free(q), free(k), free(v), free(ref), free(rec), free(chk);
    free(qf), free(kf), free(vf), free(y32);
}

/* One head on more threads than heads: the recurrent kernel splits d_v = 40 into parts of
 * 32 and 8 columns (forced on: la_linear_recurrent_split says where it is the default),
 * each rescaling its own columns of the state as the keys' running max moves (key norms
 * over two orders of magnitude). One and two threads give the same bits, and the
 * reference's output within tolerance. */
static void recurrent_column_parts(void **state)
{
    (void)state;
    const size_t N = 33, dk = 8, dv = 40;
    const size_t nq = N * dk, nv = N * dv;
    tu_rng r = tu_rng_for("favor_recurrent_column_parts");
    double *q = tu_f64(nq), *k = tu_f64(nq), *v = tu_f64(nv);
    double *ref = tu_f64(nv), *one = tu_f64(nv), *two = tu_f64(nv);
    float *qf = tu_f32(nq), *kf = tu_f32(nq), *vf = tu_f32(nv), *one32 = tu_f32(nv);
    float *two32 = tu_f32(nv);
    spread_keys_inputs(&r, q, k, v, qf, kf, vf, N, dk, nv);
    la_problem p;
    la_favor_params favor = LA_FAVOR_PARAMS_INIT;
    la_problem_init(&p, 1, 1, N, N, dk, dv);
    p.params = &favor.head;
    p.causal = 1;
    favor.features = 24;
    favor.seed = tu_seed();
    assert_int_equal(la_ref_favor_attention(&p, q, k, v, ref), LA_OK);
    assert_int_equal(la_set_num_threads(1), LA_OK);
    assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, one), LA_OK);
    assert_int_equal(la_favor_attention_recurrent_f32(&p, qf, kf, vf, one32), LA_OK);
    assert_int_equal(la_set_num_threads(2), LA_OK);
    la_linear_recurrent_split_force(1);
    assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, two), LA_OK);
    assert_int_equal(la_favor_attention_recurrent_f32(&p, qf, kf, vf, two32), LA_OK);
    la_linear_recurrent_split_force(-1);
    assert_int_equal(la_set_num_threads(0), LA_OK);
    assert_memory_equal(one, two, nv * sizeof *one);
    assert_memory_equal(one32, two32, nv * sizeof *one32);
    tu_assert_close_f64(two, ref, nv, TOL_F64, "recurrent float64, 2 threads");
    tu_assert_close_f32(two32, ref, nv, TOL_F32, "recurrent float32, 2 threads");
    free(q), free(k), free(v), free(ref), free(one), free(two);
    free(qf), free(kf), free(vf), free(one32), free(two32);
}

/* ---------------------------------------------------------------- the step API */

/* Token t of head h of a (heads, T, d) array into x_t (heads, d). */
static void gather_f64(const double *x, size_t heads, size_t T, size_t d, size_t t, double *x_t)
{
    for (size_t h = 0; h < heads; h++)
        memcpy(x_t + h * d, x + (h * T + t) * d, d * sizeof *x);
}
static void gather_f32(const float *x, size_t heads, size_t T, size_t d, size_t t, float *x_t)
{
    for (size_t h = 0; h < heads; h++)
        memcpy(x_t + h * d, x + (h * T + t) * d, d * sizeof *x);
}

/* Steps tokens from..to−1 of (heads, T, ·) arrays through st, the outputs into y
 * (heads, T, d_v). */
static void step_all_f64(la_linear_state *st, const double *q, const double *k, const double *v,
                         double *y, size_t heads, size_t T, size_t dk, size_t dv, size_t from,
                         size_t to)
{
    double *qt = tu_f64(heads * dk), *kt = tu_f64(heads * dk), *vt = tu_f64(heads * dv);
    double *yt = tu_f64(heads * dv);
    for (size_t t = from; t < to; t++) {
        gather_f64(q, heads, T, dk, t, qt);
        gather_f64(k, heads, T, dk, t, kt);
        gather_f64(v, heads, T, dv, t, vt);
        assert_int_equal(la_linear_step(st, qt, kt, vt, yt), LA_OK);
        for (size_t h = 0; h < heads; h++)
            memcpy(y + (h * T + t) * dv, yt + h * dv, dv * sizeof *y);
    }
    free(qt), free(kt), free(vt), free(yt);
}
static void step_all_f32(la_linear_state *st, const float *q, const float *k, const float *v,
                         float *y, size_t heads, size_t T, size_t dk, size_t dv)
{
    float *qt = tu_f32(heads * dk), *kt = tu_f32(heads * dk), *vt = tu_f32(heads * dv);
    float *yt = tu_f32(heads * dv);
    for (size_t t = 0; t < T; t++) {
        gather_f32(q, heads, T, dk, t, qt);
        gather_f32(k, heads, T, dk, t, kt);
        gather_f32(v, heads, T, dv, t, vt);
        assert_int_equal(la_linear_step(st, qt, kt, vt, yt), LA_OK);
        for (size_t h = 0; h < heads; h++)
            memcpy(y + (h * T + t) * dv, yt + h * dv, dv * sizeof *y);
    }
    free(qt), free(kt), free(vt), free(yt);
}

/* Stepping a sequence through a FAVOR+ state gives causal FAVOR+'s outputs: against the
 * reference (1e-12 float64, 1e-5 float32) and the recurrent kernel, where the keys'
 * running max moves a lot (key norms over two orders of magnitude), eps 0 and 1e-3, m
 * below, at and above d_k. */
static void step_api_matches_kernels(void **state)
{
    (void)state;
    const size_t B = 2, H = 3, T = 29, dk = 8, dv = 5, heads = B * H;
    const size_t nq = heads * T * dk, nv = heads * T * dv;
    tu_rng r = tu_rng_for("step_api_matches_kernels");
    double *q = tu_f64(nq), *k = tu_f64(nq), *v = tu_f64(nv);
    double *ref = tu_f64(nv), *rec = tu_f64(nv), *y64 = tu_f64(nv);
    float *qf = tu_f32(nq), *kf = tu_f32(nq), *vf = tu_f32(nv), *y32 = tu_f32(nv);
    spread_keys_inputs(&r, q, k, v, qf, kf, vf, heads * T, dk, nv);
    const size_t ms[] = {3, 8, 20};
    const double eps[] = {0, 1e-3};
    for (size_t mi = 0; mi < 3; mi++) {
        for (size_t e = 0; e < 2; e++) {
            la_problem p;
            la_favor_params favor = LA_FAVOR_PARAMS_INIT;
            la_problem_init(&p, B, H, T, T, dk, dv);
            p.params = &favor.head;
            p.causal = 1;
            favor.features = ms[mi];
            p.eps = eps[e];
            favor.seed = tu_seed() + mi;
            assert_int_equal(la_ref_favor_attention(&p, q, k, v, ref), LA_OK);
            assert_int_equal(la_favor_attention_recurrent_f64(&p, q, k, v, rec), LA_OK);
            la_linear_state *s64, *s32;
            assert_int_equal(la_favor_state_create(&s64, LA_FLOAT64, heads, dk, dv, favor.features,
                                                   favor.seed, NULL, p.eps),
                             LA_OK);
            assert_int_equal(la_favor_state_create(&s32, LA_FLOAT32, heads, dk, dv, favor.features,
                                                   favor.seed, NULL, p.eps),
                             LA_OK);
            step_all_f64(s64, q, k, v, y64, heads, T, dk, dv, 0, T);
            step_all_f32(s32, qf, kf, vf, y32, heads, T, dk, dv);
            assert_int_equal(la_linear_state_position(s64), T);
            tu_assert_close_f64(y64, ref, nv, TOL_F64, "step float64 m=%zu eps=%g", ms[mi], eps[e]);
            tu_assert_close_f64(y64, rec, nv, TOL_F64, "step vs recurrent kernel m=%zu eps=%g",
                                ms[mi], eps[e]);
            tu_assert_close_f32(y32, ref, nv, TOL_F32, "step float32 m=%zu eps=%g", ms[mi], eps[e]);
            la_linear_state_free(s64);
            la_linear_state_free(s32);
        }
    }
    free(q), free(k), free(v), free(ref), free(rec), free(y64);
    free(qf), free(kf), free(vf), free(y32);
}

/* Save after t0 tokens, restore into a fresh state, step the rest: the same bits as one
 * state stepped throughout (μ travels with S and z). Reset gives the first run again.
 * Restore refuses another seed's, another m's and a linear state's image. */
static void step_api_save_restore(void **state)
{
    (void)state;
    const size_t heads = 3, T = 20, t0 = 9, dk = 6, dv = 4, m = 10;
    const size_t nq = heads * T * dk, nv = heads * T * dv;
    tu_rng r = tu_rng_for("step_api_save_restore");
    double *q = tu_f64(nq), *k = tu_f64(nq), *v = tu_f64(nv);
    double *a = tu_f64(nv), *b = tu_f64(nv), *c = tu_f64(nv);
    tu_fill_normal(&r, q, nq, 1);
    tu_fill_normal(&r, k, nq, 2);
    tu_fill_normal(&r, v, nv, 1);
    const uint64_t seed = tu_seed();
    la_linear_state *st, *fresh, *other_seed, *other_m, *linear;
    assert_int_equal(la_favor_state_create(&st, LA_FLOAT64, heads, dk, dv, m, seed, NULL, 1e-6),
                     LA_OK);
    assert_int_equal(la_favor_state_create(&fresh, LA_FLOAT64, heads, dk, dv, m, seed, NULL, 1e-6),
                     LA_OK);
    assert_int_equal(
        la_favor_state_create(&other_seed, LA_FLOAT64, heads, dk, dv, m, seed + 1, NULL, 1e-6),
        LA_OK);
    assert_int_equal(
        la_favor_state_create(&other_m, LA_FLOAT64, heads, dk, dv, m + 1, seed, NULL, 1e-6), LA_OK);
    assert_int_equal(
        la_linear_state_create_phi(&linear, LA_FLOAT64, heads, dk, dv, LA_FEATURE_ELU1, 1e-6),
        LA_OK);
    step_all_f64(st, q, k, v, a, heads, T, dk, dv, 0, T);
    la_linear_state_reset(st);
    assert_int_equal(la_linear_state_position(st), 0);
    memset(b, 0, nv * sizeof *b);
    step_all_f64(st, q, k, v, b, heads, T, dk, dv, 0, t0); /* the first t0 tokens */
    const size_t size = la_linear_state_save_size(st);
    void *img = tu_alloc(size);
    assert_int_equal(la_linear_state_save(st, img, size), LA_OK);
    assert_int_equal(la_linear_state_restore(fresh, img, size), LA_OK);
    assert_int_equal(la_linear_state_position(fresh), t0);
    for (size_t h = 0; h < heads; h++) /* after reset, the same first t0 outputs */
        assert_memory_equal(b + h * T * dv, a + h * T * dv, t0 * dv * sizeof *a);
    step_all_f64(fresh, q, k, v, c, heads, T, dk, dv, t0, T); /* the rest, restored */
    for (size_t h = 0; h < heads; h++)
        assert_memory_equal(c + (h * T + t0) * dv, a + (h * T + t0) * dv,
                            (T - t0) * dv * sizeof *a);
    assert_int_equal(la_linear_state_restore(other_seed, img, size), LA_EINVAL);
    assert_int_equal(la_linear_state_restore(other_m, img, size), LA_EINVAL);
    assert_int_equal(la_linear_state_restore(linear, img, size), LA_EINVAL);
    const size_t lsize = la_linear_state_save_size(linear);
    void *limg = tu_alloc(lsize);
    assert_int_equal(la_linear_state_save(linear, limg, lsize), LA_OK);
    assert_int_equal(la_linear_state_restore(st, limg, lsize), LA_EINVAL);
    la_linear_state_free(st), la_linear_state_free(fresh), la_linear_state_free(other_seed);
    la_linear_state_free(other_m), la_linear_state_free(linear);
    free(img), free(limg);
    free(q), free(k), free(v), free(a), free(b), free(c);
}

/* The step's range rule: float32 refuses a key beyond the type (‖k‖² past FLT_MAX) and a
 * value past T/8 with LA_ERANGE, leaving y_t, the state and its position as they were;
 * float64 takes the same key. A NULL argument and a float64 call on a float32 state are
 * LA_EINVAL. */
static void step_api_range(void **state)
{
    (void)state;
    const size_t dk = 4, dv = 2, m = 8;
    la_linear_state *s32, *s64;
    assert_int_equal(la_favor_state_create(&s32, LA_FLOAT32, 1, dk, dv, m, tu_seed(), NULL, 1e-6),
                     LA_OK);
    assert_int_equal(la_favor_state_create(&s64, LA_FLOAT64, 1, dk, dv, m, tu_seed(), NULL, 1e-6),
                     LA_OK);
    float q[4] = {0.5f, -1, 0.25f, 1}, k[4] = {1, 2, -1, 0.5f}, v[2] = {1, -2}, y[2];
    double qd[4], kd[4], vd[2], yd[2];
    tu_to_f64(q, qd, 4), tu_to_f64(k, kd, 4), tu_to_f64(v, vd, 2);
    assert_int_equal(la_linear_step(s32, q, k, v, y), LA_OK);
    const size_t size = la_linear_state_save_size(s32);
    void *before = tu_alloc(size), *after = tu_alloc(size);
    assert_int_equal(la_linear_state_save(s32, before, size), LA_OK);
    float big_k[4] = {1e20f, -1e20f, 1e20f, 1e20f}, big_v[2] = {1e38f, 1};
    y[0] = y[1] = -3.5f;
    assert_int_equal(la_linear_step(s32, q, big_k, v, y), LA_ERANGE);
    assert_int_equal(la_linear_step(s32, q, k, big_v, y), LA_ERANGE);
    assert_true(y[0] == -3.5f && y[1] == -3.5f);
    assert_int_equal(la_linear_state_save(s32, after, size), LA_OK);
    assert_memory_equal(before, after, size);
    double big_kd[4];
    tu_to_f64(big_k, big_kd, 4);
    assert_int_equal(la_linear_step(s64, qd, big_kd, vd, yd), LA_OK);
    assert_true(tu_all_finite_f64(yd, 2));
    assert_int_equal(la_linear_step(s64, qd, NULL, vd, yd), LA_EINVAL);
    la_linear_state_free(s32), la_linear_state_free(s64);
    free(before), free(after);
}

/* ---------------------------------------------------------------- towards softmax */

/* FAVOR+ is an unbiased Monte Carlo estimate of the softmax kernel, so its output's error
 * against exact softmax attention (scale 1/√d_k) falls as m^(-1/2). On N = M = 64, d = 16
 * and inputs N(0, 0.4²) (logits q·k/√d of about ±0.16), the relative error
 * ‖y_favor − y_softmax‖ / ‖y_softmax‖ averaged over 32 seeds of W at m = 16, 64, 256, 1024
 * must fall with a least-squares log-log slope in (−0.75, −0.3) (over 900 input draws:
 * −0.46 ± 0.012 non-causal, −0.46 ± 0.014 causal, none outside (−0.51, −0.41)). At
 * m = 1024 the error is held to the values' size, ‖y_favor − y_softmax‖ / ‖v‖ averaged
 * over the seeds, below 0.01 non-causal and 0.02 causal: over 676 input draws it was
 * 0.0051 ± 0.0003 (at most 0.0062) and 0.0087 ± 0.0008 (at most 0.0128), and softmax at
 * twice the scale is at least 0.018 and 0.028 away. Not against ‖y_softmax‖: non-causal
 * softmax over 64 keys of N(0, 1) values is about their mean, whose norm is random and
 * small (√(χ²₁₆/64)), and the relative error follows its inverse (0.042 ± 0.008 over
 * 2,155 draws, at most 0.084; a log-normal fit puts 0.1 at about one draw in 10⁶, and
 * χ²'s lower tail is heavier than that). eps = 0, so the comparison is with the
 * exact formula. A φ with the wrong scale, sign or norm term converges to something
 * else, or not at all: the error levels off and the slope fails. Non-causal and causal.
 * (Larger inputs make the estimator heavy-tailed: at N(0, 0.7²) the slope measured here
 * is -0.25 to -0.3 at these m, short of the asymptotic rate; at 0.4 it is -0.45 to
 * -0.5.) */
static void approaches_softmax_at_monte_carlo_rate(void **state)
{
    (void)state;
    enum { N = 64, D = 16, SEEDS = 32, NM = 4 };
    const size_t ms[NM] = {16, 64, 256, 1024};
    const size_t n = N * D;
    tu_rng r = tu_rng_for("approaches_softmax");
    double *q = tu_f64(n), *k = tu_f64(n), *v = tu_f64(n);
    double *exact = tu_f64(n), *y = tu_f64(n);
    tu_fill_normal(&r, q, n, 0.4);
    tu_fill_normal(&r, k, n, 0.4);
    tu_fill_normal(&r, v, n, 1);
    double norm_v = 0;
    for (size_t x = 0; x < n; x++)
        norm_v += v[x] * v[x];
    norm_v = sqrt(norm_v);
    for (int causal = 0; causal <= 1; causal++) {
        la_problem p;
        la_favor_params favor = LA_FAVOR_PARAMS_INIT;
        la_problem_init(&p, 1, 1, N, N, D, D);
        p.params = &favor.head;
        p.causal = causal;
        p.eps = 0;
        assert_int_equal(la_ref_softmax_attention(&p, q, k, v, exact), LA_OK);
        double norm_exact = 0;
        for (size_t x = 0; x < n; x++)
            norm_exact += exact[x] * exact[x];
        norm_exact = sqrt(norm_exact);
        double err[NM], sx = 0, sy = 0, sxx = 0, sxy = 0;
        for (size_t mi = 0; mi < NM; mi++) {
            favor.features = ms[mi];
            err[mi] = 0;
            for (uint64_t s = 0; s < SEEDS; s++) {
                favor.seed = tu_seed() * 1000 + s;
                assert_int_equal(la_favor_attention_f64(&p, q, k, v, y), LA_OK);
                err[mi] += tu_rel_error_f64(y, exact, n, NULL) / SEEDS;
            }
            const double x = log((double)ms[mi]), l = log(err[mi]);
            sx += x, sy += l, sxx += x * x, sxy += x * l;
        }
        const double slope = (NM * sxy - sx * sy) / (NM * sxx - sx * sx);
        /* ‖y_favor − y_softmax‖ / ‖v‖ at m = 1024, averaged over the seeds */
        const double level = err[NM - 1] * norm_exact / norm_v, bound = causal ? 0.02 : 0.01;
        printf("  %s: error against softmax %.4f %.4f %.4f %.4f at m = 16, 64, 256, 1024; "
               "log-log slope %.3f (Monte Carlo: -0.5); at m = 1024 %.4f of ‖v‖\n",
               causal ? "causal" : "non-causal", err[0], err[1], err[2], err[3], slope, level);
        if (!(slope > -0.75 && slope < -0.3))
            fail_msg("%s: the error falls with slope %.3f in log m, not about -1/2 (seed %llu)",
                     causal ? "causal" : "non-causal", slope, (unsigned long long)tu_seed());
        if (!(level < bound))
            fail_msg("%s: error %.4f of ‖v‖ at m = 1024, not below %.2f (seed %llu)",
                     causal ? "causal" : "non-causal", level, bound, (unsigned long long)tu_seed());
    }
    free(q), free(k), free(v), free(exact), free(y);
}

int main(void)
{
    tu_init("test_favor");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(features_orthogonal_within_blocks),
        cmocka_unit_test(features_norms_chi_distributed),
        cmocka_unit_test(features_follow_the_seed),
        cmocka_unit_test(features_errors),
        cmocka_unit_test(kernels_match_reference),
        cmocka_unit_test(held_w_is_the_draw),
        cmocka_unit_test(output_follows_the_seed),
        cmocka_unit_test(range_refused_in_float32),
        cmocka_unit_test(recurrent_agrees_with_chunked),
        cmocka_unit_test(recurrent_column_parts),
        cmocka_unit_test(backward_through_the_stabilizers),
        cmocka_unit_test(step_api_matches_kernels),
        cmocka_unit_test(step_api_save_restore),
        cmocka_unit_test(step_api_range),
        cmocka_unit_test(approaches_softmax_at_monte_carlo_rate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

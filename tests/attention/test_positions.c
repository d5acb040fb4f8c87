/* test_positions.c — positional encodings: rotary position embeddings (RoPE),
 * on their own and inside linear attention (RoFormer's form), and the sinusoidal encoding.
 *   rotary_matches_formula      la_rotary_apply_* against the rotation written out in
 *                               float64 (pair c by t·θ_c), at offsets 0 and 1000;
 *   rotary_softmax_shift        softmax on rotated q, k depends only on j − i: every
 *                               position shifted by t gives the same output;
 *   rotary_linear_reference     la_linear_attention_rotary_* against its float64 oracle
 *                               (which rotates by the distance, not by each position),
 *                               causal and not, key lengths, N != M, both φ;
 *   rotary_linear_shift         the same shift invariance for rotary linear attention;
 *   rotary_linear_zero_angle    one query and one key at the same position: linear
 *                               attention;
 *   rotary_linear_range         q, k in [1e18, 2e18): float32 refuses (LA_ERANGE,
 *                               output untouched), float64 matches its oracle;
 *   relative_reference          la_relative_attention_* against la_ref_relative_attention
 *                               at clip distances 1..100, given and drawn tables;
 *   relative_without_positions  zero tables: softmax; constant tables: softmax on k + a,
 *                               v + b;
 *   relative_shift              scores depend only on j − i: the tokens moved t places
 *                               later (after padding keys that get weight 0) give the
 *                               same outputs;
 *   sinusoidal_matches_formula  la_add_positional_encoding on zeros against
 *                               sin/cos(pos · exp(−ln(10000)·2i/D)).
 * Tolerances: 1e-5 float32, 1e-12 float64 (relative, NaN fails); the seed is printed. */
#include "../testutil.h"
#include "../yardsticks.h" /* tu_floored_error_f32, TU_BWD_FLOOR */
#include "attention/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* q, k, v of a problem in both precisions (the float64 copies hold the float32 values). */
typedef struct {
    size_t nq, nk, nv, no;
    double *q, *k, *v;
    float *q32, *k32, *v32;
} inputs;

static void make_inputs(const la_problem *p, tu_rng *r, inputs *in)
{
    const size_t heads = p->batch * p->heads;
    in->nq = heads * p->n_queries * p->d_k, in->nk = heads * p->n_keys * p->d_k;
    in->nv = heads * p->n_keys * p->d_v, in->no = heads * p->n_queries * p->d_v;
    in->q = tu_f64(in->nq), in->k = tu_f64(in->nk), in->v = tu_f64(in->nv);
    in->q32 = tu_f32(in->nq), in->k32 = tu_f32(in->nk), in->v32 = tu_f32(in->nv);
    double *x[3] = {in->q, in->k, in->v};
    float *x32[3] = {in->q32, in->k32, in->v32};
    const size_t n[3] = {in->nq, in->nk, in->nv};
    for (int t = 0; t < 3; t++) {
        tu_fill_normal(r, x[t], n[t], 1);
        tu_to_f32(x[t], x32[t], n[t]);
        tu_to_f64(x32[t], x[t], n[t]);
    }
}

static void free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v);
    free(in->q32), free(in->k32), free(in->v32);
}

/* ------------------------------------------------------------------ rotary, on its own */

/* x (rows, n, d) rotated by the formula: pair c of token i by (first + i)·10000^(−2c/d). */
static void rotate_by_formula(const double *x, double *out, size_t rows, size_t n, size_t d,
                              size_t first)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < d / 2; c++) {
                const double theta = exp(-log(10000.0) * (double)(2 * c) / (double)d);
                const double angle = (double)(first + i) * theta;
                const double *a = x + (r * n + i) * d + 2 * c;
                double *o = out + (r * n + i) * d + 2 * c;
                o[0] = a[0] * cos(angle) - a[1] * sin(angle);
                o[1] = a[0] * sin(angle) + a[1] * cos(angle);
            }
}

static void rotary_matches_formula(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("rotary_matches_formula");
    const size_t rows = 3, n = 17, d = 10, count = rows * n * d;
    const size_t offsets[] = {0, 1000};
    for (size_t o = 0; o < 2; o++) {
        double *x = tu_f64(count), *y = tu_f64(count), *ref = tu_f64(count);
        float *x32 = tu_f32(count);
        tu_fill_normal(&rng, x, count, 1);
        tu_to_f32(x, x32, count);
        tu_to_f64(x32, x, count);
        rotate_by_formula(x, ref, rows, n, d, offsets[o]);
        memcpy(y, x, count * sizeof *y);
        assert_int_equal(la_rotary_apply(LA_FLOAT64, rows, n, d, offsets[o], y), LA_OK);
        tu_assert_close_f64(y, ref, count, TOL_F64, "rotary float64, offset %zu", offsets[o]);
        assert_int_equal(la_rotary_apply(LA_FLOAT32, rows, n, d, offsets[o], x32), LA_OK);
        tu_assert_close_f32(x32, ref, count, 1e-6, "rotary float32, offset %zu", offsets[o]);
        free(x), free(y), free(ref), free(x32);
    }
}

/* Softmax attention on q, k rotated at offsets (t, t) equals that at (0, 0): the scores
 * (R_{t+i} q)·(R_{t+j} k) = qᵀ R_{j−i} k. Checked for fused softmax in both precisions,
 * causal and not, with a shift that leaves float32's rounding of the angles visible. */
static void rotary_softmax_shift(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("rotary_softmax_shift");
    for (int causal = 0; causal <= 1; causal++) {
        la_problem p;
        la_problem_init(&p, 2, 3, 19, 23, 8, 5);
        p.causal = causal;
        inputs in;
        make_inputs(&p, &rng, &in);
        const size_t bh = p.batch * p.heads, shift = 537;
        double *q0 = tu_f64(in.nq), *k0 = tu_f64(in.nk), *qt = tu_f64(in.nq), *kt = tu_f64(in.nk);
        float *q0_32 = tu_f32(in.nq), *k0_32 = tu_f32(in.nk), *qt_32 = tu_f32(in.nq),
              *kt_32 = tu_f32(in.nk);
        memcpy(q0, in.q, in.nq * 8), memcpy(qt, in.q, in.nq * 8);
        memcpy(k0, in.k, in.nk * 8), memcpy(kt, in.k, in.nk * 8);
        memcpy(q0_32, in.q32, in.nq * 4), memcpy(qt_32, in.q32, in.nq * 4);
        memcpy(k0_32, in.k32, in.nk * 4), memcpy(kt_32, in.k32, in.nk * 4);
        assert_int_equal(la_rotary_apply(LA_FLOAT64, bh, p.n_queries, p.d_k, 0, q0), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT64, bh, p.n_keys, p.d_k, 0, k0), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT64, bh, p.n_queries, p.d_k, shift, qt), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT64, bh, p.n_keys, p.d_k, shift, kt), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT32, bh, p.n_queries, p.d_k, 0, q0_32), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT32, bh, p.n_keys, p.d_k, 0, k0_32), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT32, bh, p.n_queries, p.d_k, shift, qt_32), LA_OK);
        assert_int_equal(la_rotary_apply(LA_FLOAT32, bh, p.n_keys, p.d_k, shift, kt_32), LA_OK);
        double *y0 = tu_f64(in.no), *yt = tu_f64(in.no);
        float *yt_32 = tu_f32(in.no);
        assert_int_equal(la_ref_softmax_attention(&p, q0, k0, in.v, y0), LA_OK);
        assert_int_equal(la_softmax_attention_f64(&p, qt, kt, in.v, yt), LA_OK);
        tu_assert_close_f64(yt, y0, in.no, TOL_F64, "softmax, rotary shifted by %zu, causal %d",
                            shift, causal);
        assert_int_equal(la_softmax_attention_f32(&p, qt_32, kt_32, in.v32, yt_32), LA_OK);
        tu_assert_close_f32(yt_32, y0, in.no, TOL_F32,
                            "softmax float32, rotary shifted by %zu, causal %d", shift, causal);
        /* and the rotation changes the output at all (a no-op would pass the above) */
        double *plain = tu_f64(in.no);
        assert_int_equal(la_ref_softmax_attention(&p, in.q, in.k, in.v, plain), LA_OK);
        assert_true(tu_rel_error_f64(plain, y0, in.no, NULL) > 1e-3);
        free(q0), free(k0), free(qt), free(kt), free(q0_32), free(k0_32), free(qt_32), free(kt_32);
        free(y0), free(yt), free(yt_32), free(plain);
        free_inputs(&in);
    }
}

/* ------------------------------------------------------------------ rotary linear */

typedef struct {
    size_t batch, heads, n, m, d_k, d_v;
    int causal, lengths;
    la_feature_map fm;
    size_t q_first, k_first;
} rl_case;

static const rl_case rl_cases[] = {
    {1, 1, 1, 1, 2, 1, 0, 0, LA_FEATURE_ELU1, 0, 0},
    {2, 3, 17, 17, 8, 5, 0, 0, LA_FEATURE_ELU1, 0, 0},
    {2, 3, 17, 17, 8, 5, 1, 0, LA_FEATURE_ELU1, 0, 0},
    {2, 2, 13, 29, 6, 4, 0, 1, LA_FEATURE_RELU, 0, 0},
    {2, 2, 29, 13, 6, 4, 1, 1, LA_FEATURE_ELU1, 0, 0},
    {3, 1, 1, 40, 16, 8, 0, 1, LA_FEATURE_ELU1, 39, 0}, /* one decoded token after 39 */
    {1, 2, 33, 33, 64, 16, 1, 0, LA_FEATURE_RELU, 100, 100},
};

static void rotary_linear_reference(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("rotary_linear_reference");
    /* each case, and each causal one again bottom-right aligned (j <= i + M − N) */
    for (size_t cc = 0; cc < 2 * (sizeof rl_cases / sizeof rl_cases[0]); cc++) {
        const size_t c = cc / 2;
        const rl_case *rc = &rl_cases[c];
        if (cc % 2 == 1 && !rc->causal) continue;
        la_problem p;
        la_problem_init(&p, rc->batch, rc->heads, rc->n, rc->m, rc->d_k, rc->d_v);
        p.causal = rc->causal;
        if (cc % 2 == 1) p.causal_align = LA_CAUSAL_BOTTOM_RIGHT;
        p.feature_map = rc->fm;
        int64_t lengths[3] = {(int64_t)rc->m, 0, (int64_t)(rc->m / 2)};
        if (rc->lengths) p.key_lengths = lengths;
        inputs in;
        make_inputs(&p, &rng, &in);
        double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
        float *y32 = tu_f32(in.no);
        assert_int_equal(
            la_ref_linear_attention_rotary(&p, rc->q_first, rc->k_first, in.q, in.k, in.v, ref),
            LA_OK);
        assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT64, rc->q_first, rc->k_first, in.q,
                                                    in.k, in.v, y64),
                         LA_OK);
        assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT32, rc->q_first, rc->k_first,
                                                    in.q32, in.k32, in.v32, y32),
                         LA_OK);
        tu_assert_close_f64(y64, ref, in.no, TOL_F64, "rotary linear float64, case %zu align %zu",
                            c, cc % 2);
        tu_assert_close_f32(y32, ref, in.no, TOL_F32, "rotary linear float32, case %zu align %zu",
                            c, cc % 2);
        /* entry 1 has key length 0: its rows are exact zeros */
        if (rc->lengths)
            for (size_t e = 0; e < rc->heads * rc->n * rc->d_v; e++) {
                const size_t at = rc->heads * rc->n * rc->d_v + e;
                assert_true(y64[at] == 0 && y32[at] == 0);
            }
        free(ref), free(y64), free(y32);
        free_inputs(&in);
    }
}

/* Shifting both first positions by t leaves the output as it was (to rounding), and
 * shifting only the queries' does not (the rotation is seen at all). */
static void rotary_linear_shift(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("rotary_linear_shift");
    for (int causal = 0; causal <= 1; causal++) {
        la_problem p;
        la_problem_init(&p, 2, 2, 21, 21, 8, 6);
        p.causal = causal;
        inputs in;
        make_inputs(&p, &rng, &in);
        double *y0 = tu_f64(in.no), *yt = tu_f64(in.no), *yq = tu_f64(in.no);
        float *yt32 = tu_f32(in.no);
        assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT64, 0, 0, in.q, in.k, in.v, y0),
                         LA_OK);
        assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT64, 777, 777, in.q, in.k, in.v, yt),
                         LA_OK);
        assert_int_equal(
            la_linear_attention_rotary(&p, LA_FLOAT32, 777, 777, in.q32, in.k32, in.v32, yt32),
            LA_OK);
        tu_assert_close_f64(yt, y0, in.no, TOL_F64, "rotary linear shifted, causal %d", causal);
        tu_assert_close_f32(yt32, y0, in.no, TOL_F32, "rotary linear float32 shifted, causal %d",
                            causal);
        assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT64, 5, 0, in.q, in.k, in.v, yq),
                         LA_OK);
        assert_true(tu_rel_error_f64(yq, y0, in.no, NULL) > 1e-3);
        free(y0), free(yt), free(yq), free(yt32);
        free_inputs(&in);
    }
}

/* With every query and key at the same position (N = M = 1, any first position equal)
 * the rotation cancels: rotary linear attention is linear attention. */
static void rotary_linear_zero_angle(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("rotary_linear_zero_angle");
    la_problem p;
    la_problem_init(&p, 3, 2, 1, 1, 8, 4);
    inputs in;
    make_inputs(&p, &rng, &in);
    double *y = tu_f64(in.no), *ref = tu_f64(in.no);
    assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT64, 12, 12, in.q, in.k, in.v, y),
                     LA_OK);
    assert_int_equal(la_ref_linear_attention(&p, in.q, in.k, in.v, ref), LA_OK);
    tu_assert_close_f64(y, ref, in.no, TOL_F64, "rotary linear at distance 0");
    free(y), free(ref);
    free_inputs(&in);
}

/* q, k entries of magnitude 1e18 drawn from [1e18, 2e18), as float32 values. */
static void fill_huge_positive(tu_rng *rng, float *x32, double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x32[i] = (float)((1 + tu_uniform(rng)) * 1e18), x[i] = x32[i];
}

/* Inputs near float32's limit: float32 refuses with LA_ERANGE, the output untouched;
 * float64 computes a finite output matching its oracle.
 * Why q and k are positive: the kernel rotates φ(q_i) and φ(k_j) each by its own
 * position, with cos and sin rounded, so its numerator is off by about
 * u·|φ(q_i)|·Σ_j |φ(k_j)||v_j| (u the unit roundoff), while the oracle rotates by the
 * distance, exactly at distance 0. Relative to the output that is
 * u·Σ_j |φ(q_i)||φ(k_j)| / (φ(q_i)ᵀz + eps). Entries of either sign at 1e18 make this
 * unbounded: elu+1 maps each negative entry to exp(−1e18) = 0, and a query whose
 * features share no channel with those of its visible keys has φ(q_i)ᵀz = 0, so the
 * denominator is eps alone, the exact output 0 and the computed one rounding noise / eps
 * (about 1e25). Entries in [1e18, 2e18) give features in [1e18, 2e18], so
 * φ(q_i)·φ(k_j) >= |φ(q_i)||φ(k_j)| / 4 and the error stays a few u of the output's
 * scale. */
static void rotary_linear_range(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("rotary_linear_range");
    la_problem p;
    la_problem_init(&p, 1, 2, 6, 6, 4, 3);
    p.causal = 1;
    inputs in;
    make_inputs(&p, &rng, &in);
    fill_huge_positive(&rng, in.q32, in.q, in.nq);
    fill_huge_positive(&rng, in.k32, in.k, in.nk);
    float *y32 = tu_f32(in.no);
    for (size_t i = 0; i < in.no; i++)
        y32[i] = -7.25f;
    assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT32, 0, 0, in.q32, in.k32, in.v32, y32),
                     LA_ERANGE);
    for (size_t i = 0; i < in.no; i++)
        assert_true(y32[i] == -7.25f);
    double *y = tu_f64(in.no), *ref = tu_f64(in.no);
    assert_int_equal(la_linear_attention_rotary(&p, LA_FLOAT64, 0, 0, in.q, in.k, in.v, y), LA_OK);
    assert_int_equal(la_ref_linear_attention_rotary(&p, 0, 0, in.q, in.k, in.v, ref), LA_OK);
    tu_assert_close_f64(y, ref, in.no, TOL_F64, "rotary linear float64 at 1e18");
    free(y32), free(y), free(ref);
    free_inputs(&in);
}

/* ------------------------------------------------------------------ relative */

typedef struct {
    size_t batch, heads, n, m, d_k, d_v, max_distance;
    int causal, lengths, given;
} rel_case;

static const rel_case rel_cases[] = {
    {1, 1, 1, 1, 1, 1, 1, 0, 0, 0},   {2, 3, 17, 17, 8, 5, 2, 0, 0, 1},
    {2, 3, 17, 17, 8, 5, 3, 1, 0, 0}, {2, 2, 13, 29, 6, 4, 1, 0, 1, 1},
    {2, 2, 29, 13, 6, 4, 5, 1, 1, 0}, {1, 2, 70, 70, 16, 8, 16, 1, 0, 1},
    {3, 1, 9, 9, 4, 4, 100, 0, 1, 1}, /* K past every distance: no clipping */
};

/* Tables a^K (2K+1, d_k), a^V (2K+1, d_v) of N(0, 1) entries rounded to float32. */
static void make_tables(tu_rng *rng, size_t K, size_t d_k, size_t d_v, double **a_k, double **a_v)
{
    const size_t nk = (2 * K + 1) * d_k, nv = (2 * K + 1) * d_v;
    *a_k = tu_f64(nk), *a_v = tu_f64(nv);
    tu_fill_normal(rng, *a_k, nk, 1);
    tu_fill_normal(rng, *a_v, nv, 1);
    for (size_t i = 0; i < nk; i++)
        (*a_k)[i] = (float)(*a_k)[i];
    for (size_t i = 0; i < nv; i++)
        (*a_v)[i] = (float)(*a_v)[i];
}

/* ‖ the reference on |v| and |a^V| ‖: every output's value terms at their size, under the
 * weights of p (a^K as given, or as the kernel draws it from the seed). */
static double value_terms_norm(const la_problem *p, const la_relative_params *relative,
                               const rel_case *rc, const double *a_k, const double *a_v,
                               const inputs *in)
{
    const size_t rows = 2 * rc->max_distance + 1;
    double *tk = tu_f64(rows * rc->d_k), *tv = tu_f64(rows * rc->d_v), *v_abs = tu_f64(in->nv);
    double *y = tu_f64(in->no);
    if (a_k) {
        memcpy(tk, a_k, rows * rc->d_k * sizeof *tk);
        memcpy(tv, a_v, rows * rc->d_v * sizeof *tv);
    } else {
        assert_int_equal(la_kernel_draw(LA_KERNEL_RELATIVE, p, tk, tv), LA_OK);
    }
    for (size_t i = 0; i < rows * rc->d_v; i++)
        tv[i] = fabs(tv[i]);
    for (size_t i = 0; i < in->nv; i++)
        v_abs[i] = fabs(in->v[i]);
    la_problem pa = *p;
    la_relative_params ra = *relative;
    ra.rel_k = tk, ra.rel_v = tv;
    pa.params = &ra.head;
    assert_int_equal(la_ref_relative_attention(&pa, in->q, in->k, v_abs, y), LA_OK);
    double norm2 = 0;
    for (size_t i = 0; i < in->no; i++)
        norm2 += y[i] * y[i];
    free(tk), free(tv), free(v_abs), free(y);
    return sqrt(norm2);
}

/* Both precisions against la_ref_relative_attention at small clip distances (the
 * harness, test_attention.c, runs the row at the default K = 16 only), with given and
 * drawn tables; entry 1's key length 0 gives exact zero rows. */
static void relative_reference(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("relative_reference");
    for (size_t c = 0; c < sizeof rel_cases / sizeof rel_cases[0]; c++) {
        const rel_case *rc = &rel_cases[c];
        la_problem p;
        la_relative_params relative = LA_RELATIVE_PARAMS_INIT;
        la_problem_init(&p, rc->batch, rc->heads, rc->n, rc->m, rc->d_k, rc->d_v);
        p.params = &relative.head;
        p.causal = rc->causal;
        relative.max_distance = rc->max_distance;
        relative.seed = 1234 + c;
        int64_t lengths[3] = {(int64_t)rc->m, 0, (int64_t)(rc->m / 2)};
        if (rc->lengths) p.key_lengths = lengths;
        double *a_k = NULL, *a_v = NULL;
        if (rc->given) {
            make_tables(&rng, rc->max_distance, rc->d_k, rc->d_v, &a_k, &a_v);
            relative.rel_k = a_k, relative.rel_v = a_v;
        }
        inputs in;
        make_inputs(&p, &rng, &in);
        double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
        float *y32 = tu_f32(in.no);
        assert_int_equal(la_ref_relative_attention(&p, in.q, in.k, in.v, ref), LA_OK);
        assert_int_equal(la_relative_attention_f64(&p, in.q, in.k, in.v, y64), LA_OK);
        assert_int_equal(la_relative_attention_f32(&p, in.q32, in.k32, in.v32, y32), LA_OK);
        tu_assert_close_f64(y64, ref, in.no, TOL_F64, "relative float64, case %zu", c);
        /* float32 relative to the larger of its norm and TU_BWD_FLOOR of its terms' size,
         * the reference on |v| and |a^V| (the same weights): an output's value terms v_j +
         * a^V cancel now and then (seed 840406239452: case 0's one output, v + a^V, came to
         * -0.002 and float32 missed it by 1.2e-5 of itself, one ulp of the terms) */
        const double floor = TU_BWD_FLOOR * value_terms_norm(&p, &relative, rc, a_k, a_v, &in);
        const double err32 = tu_floored_error_f32(y32, ref, in.no, floor);
        if (!(err32 < TOL_F32))
            fail_msg("relative float32, case %zu: error %.3e >= %.0e of max(‖ref‖, floor %.3g) "
                     "(seed %llu)",
                     c, err32, TOL_F32, floor, (unsigned long long)tu_seed());
        if (rc->lengths)
            for (size_t e = 0; e < rc->heads * rc->n * rc->d_v; e++) {
                const size_t at = rc->heads * rc->n * rc->d_v + e;
                assert_true(y64[at] == 0 && y32[at] == 0);
            }
        free(ref), free(y64), free(y32), free(a_k), free(a_v);
        free_inputs(&in);
    }
}

/* Zero tables: softmax attention; one table row for every distance (a^K_δ = a, a^V_δ = b):
 * softmax attention on k_j + a, v_j + b, whatever K. */
static void relative_without_positions(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("relative_without_positions");
    const size_t K = 2, dk = 6, dv = 4;
    la_problem p;
    la_relative_params relative = LA_RELATIVE_PARAMS_INIT;
    la_problem_init(&p, 2, 2, 11, 15, dk, dv);
    p.params = &relative.head;
    p.causal = 1;
    relative.max_distance = K;
    inputs in;
    make_inputs(&p, &rng, &in);
    double *a_k = tu_f64((2 * K + 1) * dk), *a_v = tu_f64((2 * K + 1) * dv);
    memset(a_k, 0, (2 * K + 1) * dk * sizeof *a_k);
    memset(a_v, 0, (2 * K + 1) * dv * sizeof *a_v);
    relative.rel_k = a_k, relative.rel_v = a_v;
    double *y = tu_f64(in.no), *ref = tu_f64(in.no);
    assert_int_equal(la_relative_attention_f64(&p, in.q, in.k, in.v, y), LA_OK);
    assert_int_equal(la_ref_softmax_attention(&p, in.q, in.k, in.v, ref), LA_OK);
    tu_assert_close_f64(y, ref, in.no, TOL_F64, "relative with zero tables vs softmax");
    /* a constant row per table */
    for (size_t r = 0; r < 2 * K + 1; r++) {
        for (size_t c = 0; c < dk; c++)
            a_k[r * dk + c] = 0.25 * (double)c - 0.5;
        for (size_t c = 0; c < dv; c++)
            a_v[r * dv + c] = 1.0 + (double)c;
    }
    double *k2 = tu_f64(in.nk), *v2 = tu_f64(in.nv);
    for (size_t x = 0; x < in.nk; x++)
        k2[x] = in.k[x] + (0.25 * (double)(x % dk) - 0.5);
    for (size_t x = 0; x < in.nv; x++)
        v2[x] = in.v[x] + (1.0 + (double)(x % dv));
    assert_int_equal(la_relative_attention_f64(&p, in.q, in.k, in.v, y), LA_OK);
    assert_int_equal(la_ref_softmax_attention(&p, in.q, k2, v2, ref), LA_OK);
    tu_assert_close_f64(y, ref, in.no, TOL_F64, "relative with constant tables vs softmax");
    free(y), free(ref), free(k2), free(v2), free(a_k), free(a_v);
    free_inputs(&in);
}

/* Scores depend only on j − i: the same tokens moved t positions later, after t padding
 * tokens whose keys score about −1e4 against every query (exp of that is exactly 0 in
 * float64 next to the real keys), give the same outputs. Queries have q[0] >= 1 and the
 * padding keys are (−1e4·√d_k, 0, …), so q·k_pad·scale <= −1e4 while every real score
 * and q·a^K stay within a few hundred. Causal and not; t from 1 to past K. */
static void relative_shift(void **state)
{
    (void)state;
    tu_rng rng = tu_rng_for("relative_shift");
    const size_t L = 13, dk = 4, dv = 3, K = 3;
    const size_t shifts[] = {1, 2, 5};
    for (int causal = 0; causal <= 1; causal++)
        for (size_t si = 0; si < 3; si++) {
            const size_t t = shifts[si], Lt = L + t;
            double q[(13 + 5) * 4], k[(13 + 5) * 4], v[(13 + 5) * 3];
            double a_k[7 * 4], a_v[7 * 3];
            tu_fill_normal(&rng, q, L * dk, 1);
            tu_fill_normal(&rng, k, L * dk, 1);
            tu_fill_normal(&rng, v, L * dv, 1);
            tu_fill_normal(&rng, a_k, 7 * dk, 1);
            tu_fill_normal(&rng, a_v, 7 * dv, 1);
            for (size_t i = 0; i < L; i++)
                q[i * dk] = 1 + fabs(q[i * dk]);
            la_problem p;
            la_relative_params relative = LA_RELATIVE_PARAMS_INIT;
            la_problem_init(&p, 1, 1, L, L, dk, dv);
            p.params = &relative.head;
            p.causal = causal, relative.max_distance = K, relative.rel_k = a_k,
            relative.rel_v = a_v;
            double y[13 * 3];
            assert_int_equal(la_relative_attention_f64(&p, q, k, v, y), LA_OK);
            /* the shifted problem: t padding tokens, then the same L */
            double qs[(13 + 5) * 4], ks[(13 + 5) * 4], vs[(13 + 5) * 3], ys[(13 + 5) * 3];
            memset(qs, 0, sizeof qs), memset(ks, 0, sizeof ks), memset(vs, 0, sizeof vs);
            for (size_t i = 0; i < t; i++) {
                qs[i * dk] = 1;
                ks[i * dk] = -1e4 * sqrt((double)dk);
            }
            memcpy(qs + t * dk, q, L * dk * sizeof *q);
            memcpy(ks + t * dk, k, L * dk * sizeof *k);
            memcpy(vs + t * dv, v, L * dv * sizeof *v);
            la_problem ps = p;
            ps.n_queries = ps.n_keys = Lt;
            assert_int_equal(la_relative_attention_f64(&ps, qs, ks, vs, ys), LA_OK);
            tu_assert_close_f64(ys + t * dv, y, L * dv, TOL_F64,
                                "relative shifted by %zu, causal %d", t, causal);
            float q32[(13 + 5) * 4], k32[(13 + 5) * 4], v32[(13 + 5) * 3], y32[(13 + 5) * 3];
            tu_to_f32(qs, q32, Lt * dk), tu_to_f32(ks, k32, Lt * dk), tu_to_f32(vs, v32, Lt * dv);
            la_problem p32 = ps;
            p32.scale = 1; /* float32: the padding scores stay within float's range */
            for (size_t i = 0; i < t; i++)
                k32[i * dk] = -1e3f;
            assert_int_equal(la_relative_attention_f32(&p32, q32, k32, v32, y32), LA_OK);
            double ref32[13 * 3];
            la_problem p1 = p;
            p1.scale = 1;
            assert_int_equal(la_ref_relative_attention(&p1, q, k, v, ref32), LA_OK);
            tu_assert_close_f32(y32 + t * dv, ref32, L * dv, TOL_F32,
                                "relative float32 shifted by %zu, causal %d", t, causal);
        }
}

/* ------------------------------------------------------------------ sinusoidal */

/* On zeros, x[b, pos, 2i] = sin(pos·ω_i), x[b, pos, 2i+1] = cos(pos·ω_i), ω_i =
 * exp(−ln(10000)·2i/D) (Vaswani et al. 2017, §3.5), at first position 0 and 50, odd D. */
static void sinusoidal_matches_formula(void **state)
{
    (void)state;
    const size_t batch = 2, n = 31, firsts[] = {0, 50};
    const size_t dims[] = {16, 7};
    for (size_t f = 0; f < 2; f++)
        for (size_t di = 0; di < 2; di++) {
            const size_t d = dims[di], count = batch * n * d;
            double *x = tu_f64(count), *ref = tu_f64(count);
            memset(x, 0, count * sizeof *x);
            for (size_t b = 0; b < batch; b++)
                for (size_t pos = 0; pos < n; pos++)
                    for (size_t c = 0; c < d; c++) {
                        const double omega = exp(-log(10000.0) * (double)(c / 2 * 2) / (double)d);
                        const double angle = (double)(firsts[f] + pos) * omega;
                        ref[(b * n + pos) * d + c] = c % 2 == 0 ? sin(angle) : cos(angle);
                    }
            assert_int_equal(la_add_positional_encoding(LA_FLOAT64, batch, n, d, firsts[f], x),
                             LA_OK);
            tu_assert_close_f64(x, ref, count, TOL_F64, "sinusoidal, D = %zu, first %zu", d,
                                firsts[f]);
            free(x), free(ref);
        }
}

int main(void)
{
    tu_init("test_positions");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rotary_matches_formula),   cmocka_unit_test(rotary_softmax_shift),
        cmocka_unit_test(rotary_linear_reference),  cmocka_unit_test(rotary_linear_shift),
        cmocka_unit_test(rotary_linear_zero_angle), cmocka_unit_test(rotary_linear_range),
        cmocka_unit_test(relative_reference),       cmocka_unit_test(relative_without_positions),
        cmocka_unit_test(relative_shift),           cmocka_unit_test(sinusoidal_matches_formula),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}

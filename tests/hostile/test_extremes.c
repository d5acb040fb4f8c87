/* test_extremes.c — no silent wrong answer at extreme values.
 *
 * Every registry row (every kernel × the causal forms its rule allows × φ where it reads
 * one), in float32 and float64, on inputs near the limits of float32: q, k, v scaled to
 * 1e18, 1e20, 1e30, q or k alone 1e38 (2.7e38, below FLT_MAX), scale 1e38, logits of
 * ±1e4, relu with eps = 0 and all-negative queries or keys. Each call must either
 *   return LA_OK with a finite output within tolerance of the float64 reference (itself
 *   finite, computed on the same float32-rounded inputs), or
 *   return LA_ERANGE with the output untouched (every bit of a sentinel kept);
 * never LA_OK with NaN, inf or a wrong row. float64 must compute every case (LA_OK), and
 * the cases that float32 can hold (logits of ±1e4, relu's zero denominators) must not be
 * refused. main runs everything twice: the default paths, then with the AVX-512 paths
 * off (the portable float32 kernels).
 *
 * The inputs are multiples of 1/8 in [-3.125, 3.125] times a power of two, so every
 * score q·k is exact in float32 (at d_k = 16 at most 16 · 3.125² in steps of 2⁻⁶ times
 * the square of the power: 14 significant bits): what remains is the kernels' own
 * rounding. Logits of size L carry an absolute rounding of about L · 2⁻²⁴ into exp in
 * any float32 kernel (the scale's own rounding, log2 e), hence the tolerance
 * 1e-5 · max(1, largest logit) for the kernels that take a scale, and for FAVOR+ (its
 * features exponentiate projections as large as the logits at scale 1/√d_k); the others
 * (linear attention) are held to 1e-5 whatever the size of their inputs. */
#include "../testutil.h"
#include "attention/kernels.h"

#include "core/internal.h" /* la_avx512_enable */
#include "cpu/simd_avx512.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 1, H = 2, DK = 16, DV = 8, DA = 32 }; /* DA: additive's d_a */

/* One extreme case: magnitudes of q, k, v (powers of two near the named value), the
 * scale, φ and eps where the row reads them, signs forced negative, and whether float32
 * must compute it. */
typedef struct {
    const char *name;
    double q_mag, k_mag, v_mag, scale; /* scale 0: the default 1/√d_k */
    bool relu_eps0;                    /* relu with eps = 0 (rows reading φ) */
    bool q_negative, k_negative;
    bool f32_must_compute;
} extreme;

static const extreme cases[] = {
    {"inputs 1e18", 1e18, 1e18, 1e18, 0, false, false, false, false},
    {"inputs 1e20", 1e20, 1e20, 1, 0, false, false, false, false},
    {"inputs 1e30", 1e30, 1e30, 1e30, 0, false, false, false, false},
    {"q, k 1e20 (q·k overflows), scale 1e-40", 1e20, 1e20, 1, 1e-40, false, false, false, false},
    {"q 1e30 alone", 1e30, 1, 1, 0, false, false, false, false},
    /* 2.7e38 at most: finite in float32, its products with anything above 1 are not */
    {"q 1e38 alone", 1e38, 1, 1, 0, false, false, false, false},
    {"k 1e38 alone", 1, 1e38, 1, 0, false, false, false, false},
    {"scale 1e38", 1, 1, 1, 1e38, false, false, false, false},
    {"q, k 1e-20, scale 3e38 (scale · log2 e overflows)", 1e-20, 1e-20, 1, 3e38, false, false,
     false, false},
    {"logits 1e4", 8, 8, 1, 10, false, false, false, true},
    {"v 1e30", 1, 1, 1e30, 0, false, false, false, true},
    {"relu eps 0, all-negative q", 1, 1, 1, 0, true, true, false, true},
    {"relu eps 0, all-negative k", 1, 1, 1, 0, true, false, true, true},
    {"relu eps 0, all-negative q and k", 1, 1, 1, 0, true, true, true, true},
    {"relu eps 0, inputs 1e18", 1e18, 1e18, 1, 0, true, false, false, false},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* x = a multiple of 1/8 in [-3.125, 3.125] (negative magnitudes when `negative`) times
 * the power of two nearest mag. */
static void fill(tu_rng *rng, double mag, bool negative, double *x, size_t n)
{
    const double pow2 = exp2(round(log2(mag)));
    for (size_t i = 0; i < n; i++) {
        double t = (double)(int)(tu_uniform(rng) * 51) - 25; /* -25 .. 25 */
        if (negative) t = -fabs(t) - 1;
        x[i] = t / 8 * pow2;
    }
}

static int failures;

static void report(const char *kernel, int causal, const char *fm, const char *what, size_t n,
                   const char *c, const char *msg, double value)
{
    fprintf(stderr, "FAIL %s causal=%d %s N=%zu %s [%s]: %s %g\n", kernel, causal, fm, n, c, what,
            msg, value);
    failures++;
}

/* ‖y − ref‖ / max(‖ref‖, floor), NaN or inf in y: inf (floor 0: tu_rel_error_f32). */
static double error_above_floor(const float *y, const double *ref, size_t n, double floor)
{
    if (floor == 0) return tu_rel_error_f32(y, ref, n, NULL);
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i])) return INFINITY;
        diff2 += ((double)y[i] - ref[i]) * ((double)y[i] - ref[i]);
        ref2 += ref[i] * ref[i];
    }
    return sqrt(diff2) / fmax(sqrt(ref2), floor);
}

/* One row on one case at N queries (= M keys): float64 then float32. */
static void check_case(const la_kernel_info *info, int causal, la_feature_map fm, const extreme *x,
                       size_t n, bool *refused_any)
{
    la_problem p;
    la_problem_init(&p, B, H, n, n, DK, DV);
    p.causal = causal;
    p.feature_map = fm;
    if (x->scale != 0) p.scale = x->scale;
    if (x->relu_eps0) p.eps = 0;
    la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
    la_score_params score = LA_SCORE_PARAMS_INIT;
    lin.proj_rank = n < 8 ? n : 8; /* Linformer: k in 1..M */
    if (info->params & LA_PARAM_PROJ) p.params = &lin.head;
    /* score weights on a grid, as the inputs (general: W (d_k, d_k); additive: W (d_a,
     * 2·d_k) and v (d_a)): drawn ones are float64 that float32 rounds, and at inputs of
     * 1e18 additive's tanh(W_q q + W_k k) turns on the sign of a sum of terms of 1e19,
     * which that rounding flips (seed 4: 1.3e-4). W = u/8 and v = u/64 with u in −4..4:
     * Q W_qᵀ, K W_kᵀ, their sum and q W k are then exact in float32 too */
    double w_grid[2 * DK * DK > DA * 2 * DK ? 2 * DK * DK : DA * 2 * DK], v_grid[DA];
    if (info->params & LA_PARAM_SCORE_WEIGHTS) {
        tu_rng wr = tu_rng_for("score weights");
        for (size_t i = 0; i < sizeof w_grid / sizeof *w_grid; i++)
            w_grid[i] = (double)((int)(tu_uniform(&wr) * 9) - 4) / 8;
        for (size_t i = 0; i < DA; i++)
            v_grid[i] = (double)((int)(tu_uniform(&wr) * 9) - 4) / 64;
        score.score_w = w_grid;
        if (info->params & LA_PARAM_SCORE_DIM) score.score_dim = DA, score.score_v = v_grid;
        p.params = &score.head;
    }
    const char *fm_name =
        (info->params & LA_PARAM_FEATURE_MAP) ? (fm == LA_FEATURE_RELU ? "relu" : "elu1") : "-";
    const size_t nq = B * H * n * DK, nv = B * H * n * DV;
    double *q = tu_f64(nq), *k = tu_f64(nq), *v = tu_f64(nv), *ref = tu_f64(nv), *y64 = tu_f64(nv);
    float *q32 = tu_f32(nq), *k32 = tu_f32(nq), *v32 = tu_f32(nv), *y32 = tu_f32(nv),
          *sentinel = tu_f32(nv);
    tu_rng rng = tu_rng_for(x->name);
    fill(&rng, x->q_mag, x->q_negative, q, nq);
    fill(&rng, x->k_mag, x->k_negative, k, nq);
    fill(&rng, x->v_mag, false, v, nv);
    tu_to_f32(q, q32, nq), tu_to_f32(k, k32, nq), tu_to_f32(v, v32, nv);

    /* the oracle: finite on every case */
    la_status st = info->fns->reference(&p, q, k, v, ref);
    if (st != LA_OK || !tu_all_finite_f64(ref, nv))
        report(info->name, causal, fm_name, "reference", n, x->name, "not finite, or status",
               (double)st);

    /* largest logit of the problem, taken as Σ_c |q_c k_c| · scale (what its rounding
     * scales with, however much its terms cancel): the tolerance of a kernel that
     * exponentiates scaled
     * scores (LA_PARAM_SCALE; FAVOR+, LA_PARAM_FEATURES, at its built-in scale 1/√d_k, whose
     * random features exponentiate projections of the same size) grows with it; any other
     * kernel keeps the fixed tolerance (logit stays 0), or inputs of 1e18 would make it
     * 1e31 and pass any answer. Cosine's logits are those of the normalised rows: tiny
     * inputs at a huge scale are huge logits there */
    double logit = 0;
    const bool features = (info->params & LA_PARAM_FEATURES) != 0;
    const double logit_scale = features ? 1 / sqrt((double)DK) : p.scale;
    const size_t scored_rows =
        (info->params & (LA_PARAM_SCALE | LA_PARAM_FEATURES)) ? B * H * n : 0;
    for (size_t i = 0; i < scored_rows; i++)
        for (size_t j = 0; j < n; j++) {
            const size_t head = i / n;
            double s = 0, qq = 0, kk = 0;
            for (size_t c = 0; c < DK; c++) {
                s += fabs(q[i * DK + c] * k[(head * n + j) * DK + c]);
                qq += q[i * DK + c] * q[i * DK + c];
                kk += k[(head * n + j) * DK + c] * k[(head * n + j) * DK + c];
            }
            if (info->kernel == LA_KERNEL_COSINE) /* its scores: unit rows, times the scale */
                s /= fmax(sqrt(qq), 1e-12) * fmax(sqrt(kk), 1e-12);
            s = fabs(s * logit_scale);
            if (s > logit) logit = s;
        }

    /* A linear-attention row that reads the scale forms features of the scaled q and k
     * whose products carry the logit's powers with their signs (Taylor's 1 + s + s²/2
     * through x⊗x): its numerator and denominator are sums over those features that cancel
     * to s²/2 from terms of logit², so its rounding grows with logit². Taylor's float32
     * therefore refuses past |scale|·max‖q_i‖·max‖k_j‖ = 128 (taylor.c: three digits
     * left there, none at logits of 1e4), and must: past it, computing is the defect. */
    if ((info->params & LA_PARAM_SCALE) && strcmp(info->family, "linear") == 0) logit *= logit;
    bool f32_must_refuse = false;
    if (info->kernel == LA_KERNEL_TAYLOR) {
        double q2 = 0, k2 = 0;
        for (size_t i = 0; i < B * H * n; i++) {
            double a = 0, b = 0;
            for (size_t c = 0; c < DK; c++)
                a += q[i * DK + c] * q[i * DK + c], b += k[i * DK + c] * k[i * DK + c];
            q2 = fmax(q2, a), k2 = fmax(k2, b);
        }
        f32_must_refuse = fabs(p.scale) * sqrt(q2) * sqrt(k2) > 128;
    }

    /* float64: always computed, within 1e-12 · max(1, logit) */
    st = info->fns->forward_f64(&p, q, k, v, y64);
    double err = tu_rel_error_f64(y64, ref, nv, NULL);
    if (st != LA_OK)
        report(info->name, causal, fm_name, "float64", n, x->name, "refused: status", (double)st);
    else if (!(err < 1e-12 * fmax(1, logit)))
        report(info->name, causal, fm_name, "float64", n, x->name, "rel error", err);

    /* float32: right, or refused with the output untouched */
    for (size_t i = 0; i < nv; i++)
        sentinel[i] = y32[i] = (float)(0.5 + (double)i);
    st = info->fns->forward_f32(&p, q32, k32, v32, y32);
    if (st == LA_ERANGE) {
        *refused_any = true;
        if (memcmp(y32, sentinel, nv * sizeof *y32) != 0)
            report(info->name, causal, fm_name, "float32", n, x->name,
                   "LA_ERANGE but the output was written", 0);
        if (x->f32_must_compute && !f32_must_refuse)
            report(info->name, causal, fm_name, "float32", n, x->name,
                   "refused (LA_ERANGE) a case float32 holds", 0);
    } else if (f32_must_refuse) {
        report(info->name, causal, fm_name, "float32", n, x->name,
               "past Taylor's float32 precision rule, not refused: status", (double)st);
    } else if (st != LA_OK) {
        report(info->name, causal, fm_name, "float32", n, x->name, "status", (double)st);
    } else {
        /* within 1e-5 · max(1, logit) of ‖ref‖, or, for the rows dividing by a denominator
         * plus eps, within F = √n · max|v| · FLT_MIN / eps absolute: where Σ w_j is below
         * FLT_MIN, y = Σ w_j v_j / (Σ w_j + eps) is below F and float32's w_j underflow and
         * keep no digit (FAVOR+ on logits of 1e4: outputs of 1e-33 to 1e-37, a head off
         * by 98% at seed 810555861482); any answer that small passes, a wrong one of the
         * size of v does not */
        double v_max = 0;
        for (size_t i = 0; i < nv; i++)
            v_max = fmax(v_max, fabs(v[i]));
        const double floor_ = (info->params & LA_PARAM_EPS) && p.eps > 0
                                  ? sqrt((double)nv) * v_max * FLT_MIN / p.eps
                                  : 0;
        const double tol = 1e-5 * fmax(1, logit);
        err = error_above_floor(y32, ref, nv, floor_ / tol);
        if (!(err < tol))
            report(info->name, causal, fm_name, "float32", n, x->name,
                   "LA_OK with rel error (NaN/inf count as inf)", err);
    }
    free(q), free(k), free(v), free(ref), free(y64);
    free(q32), free(k32), free(v32), free(y32), free(sentinel);
}

/* Every registry row × causal form × φ × case × N in {1, 40} (one query: the narrow
 * AVX-512 path; 40: the lanes). The quick profile runs N = 33 for 40: still two 32-query
 * blocks and whole vectors with a remainder of one lane, at two thirds of the work. */
static void every_row_every_case(void **state)
{
    (void)state;
    failures = 0;
    bool refused_any = false;
    for (int kn = 0; kn < LA_KERNEL_COUNT; kn++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kn);
        for (int causal = 0; causal <= 1; causal++) {
            if (causal == 0 && info->causal == LA_CAUSAL_REQUIRED) continue;
            if (causal == 1 && info->causal == LA_CAUSAL_REFUSED) continue;
            const int n_fm = (info->params & LA_PARAM_FEATURE_MAP) ? 2 : 1;
            for (int f = 0; f < n_fm; f++) {
                const la_feature_map fm = f == 0 ? LA_FEATURE_ELU1 : LA_FEATURE_RELU;
                for (size_t c = 0; c < N_CASES; c++) {
                    if (cases[c].relu_eps0 && !(info->params & LA_PARAM_FEATURE_MAP)) continue;
                    if (cases[c].relu_eps0 && fm != LA_FEATURE_RELU) continue;
                    check_case(info, causal, fm, &cases[c], 1, &refused_any);
                    check_case(info, causal, fm, &cases[c], tu_quick() ? 33 : 40, &refused_any);
                }
            }
        }
    }
    /* the cases beyond float32 must meet a refusal somewhere, or they test nothing */
    if (!refused_any) {
        fprintf(stderr, "FAIL: no case was refused with LA_ERANGE\n");
        failures++;
    }
    assert_int_equal(failures, 0);
}

/* The relu rule at eps = 0 (linattn.h): a query whose φ(q)·z is 0 gets the zero row. */
static void relu_zero_denominator_is_zero_row(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 3, 3, 2, 2);
    p.feature_map = LA_FEATURE_RELU;
    p.eps = 0;
    /* query 0 all negative (φ = 0), query 1 positive, query 2 positive only where every
     * key is negative (φ(q)·z = 0) */
    const float q[] = {-1, -2, 1, 1, 0, 3};
    const float k[] = {1, -1, 2, -3, 1, -1};
    const float v[] = {1, 2, 3, 4, 5, 6};
    float y[6];
    assert_int_equal(la_linear_attention_f32(&p, q, k, v, y), LA_OK);
    assert_true(tu_all_finite_f32(y, 6));
    assert_true(y[0] == 0 && y[1] == 0 && y[4] == 0 && y[5] == 0);
    assert_true(y[2] == 3 && y[3] == 4); /* keys 0, 1, 2 weigh 1, 2, 1: (1+6+5)/4, (2+8+6)/4 */
}

/* The step API on every case that reads φ (elu+1, and relu where the case asks): T
 * tokens through a float64 state and a float32 state. float64 computes every token;
 * float32 either matches it (1e-5 relative per token) or refuses with LA_ERANGE leaving
 * y and the state untouched (its save image unchanged, bit for bit), and once refused
 * goes on refusing. Never LA_OK with a non-finite y. */
static void step_api_every_case(void **state)
{
    (void)state;
    failures = 0; /* its own, not an earlier test's */
    enum { T = 12 };
    tu_rng rng = tu_rng_for("step extremes");
    for (size_t c = 0; c < N_CASES; c++) {
        const extreme *x = &cases[c];
        const la_feature_map fm = x->relu_eps0 ? LA_FEATURE_RELU : LA_FEATURE_ELU1;
        const double eps = x->relu_eps0 ? 0 : LA_DEFAULT_EPS;
        la_linear_state *s32, *s64;
        assert_int_equal(la_linear_state_create_phi(&s32, LA_FLOAT32, H, DK, DV, fm, eps), LA_OK);
        assert_int_equal(la_linear_state_create_phi(&s64, LA_FLOAT64, H, DK, DV, fm, eps), LA_OK);
        const size_t image = la_linear_state_save_size(s32);
        unsigned char *before = tu_alloc(image), *after = tu_alloc(image);
        bool refused = false;
        for (size_t t = 0; t < T; t++) {
            double q[H * DK], k[H * DK], v[H * DV], y64[H * DV];
            float q32[H * DK], k32[H * DK], v32[H * DV], y32[H * DV];
            fill(&rng, x->q_mag, x->q_negative, q, H * DK);
            fill(&rng, x->k_mag, x->k_negative, k, H * DK);
            fill(&rng, x->v_mag, false, v, H * DV);
            tu_to_f32(q, q32, H * DK);
            tu_to_f32(k, k32, H * DK);
            tu_to_f32(v, v32, H * DV);
            assert_int_equal(la_linear_step(s64, q, k, v, y64), LA_OK);
            assert_true(tu_all_finite_f64(y64, H * DV));
            for (size_t i = 0; i < H * DV; i++)
                y32[i] = -7.25f;
            assert_int_equal(la_linear_state_save(s32, before, image), LA_OK);
            const la_status st = la_linear_step(s32, q32, k32, v32, y32);
            if (st == LA_ERANGE) {
                assert_int_equal(la_linear_state_save(s32, after, image), LA_OK);
                assert_memory_equal(before, after, image);
                for (size_t i = 0; i < H * DV; i++)
                    assert_true(y32[i] == -7.25f);
                refused = true;
                continue;
            }
            if (refused || st != LA_OK || !tu_all_finite_f32(y32, H * DV)) {
                report("step", 1, la_feature_map_name(fm), "f32", t, x->name,
                       refused ? "computed after a refusal, status" : "status or non-finite",
                       (double)st);
                break;
            }
            size_t w;
            const double e = tu_rel_error_f32(y32, y64, H * DV, &w);
            if (!(e <= 1e-5))
                report("step", 1, la_feature_map_name(fm), "f32 error", t, x->name, "rel", e);
        }
        if (x->f32_must_compute && refused)
            report("step", 1, la_feature_map_name(fm), "f32", T, x->name, "refused", 0);
        free(before);
        free(after);
        la_linear_state_free(s32);
        la_linear_state_free(s64);
    }
    assert_int_equal(failures, 0);
}

/* Without AVX-512 this run repeats every_row_every_case; the quick profile skips it then
 * (saying so). */
static void avx512_paths_off(void **state)
{
    (void)state;
    if (tu_quick() && !la_avx512_usable()) {
        printf("skipped: no AVX-512, so the portable paths already ran (quick profile)\n");
        skip();
    }
    la_avx512_enable(false);
    every_row_every_case(state);
    la_avx512_enable(true);
}

int main(void)
{
    tu_init("test_extremes");
    la_set_num_threads(1); /* small problems: threads would only wait */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_row_every_case),
        cmocka_unit_test(relu_zero_denominator_is_zero_row),
        cmocka_unit_test(step_api_every_case),
        cmocka_unit_test(avx512_paths_off),
    };
    if (!la_avx512_usable() && !tu_quick())
        fprintf(stderr, "no AVX-512: the second run repeats the first\n");
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_softmax.c — what is particular to the softmax (fused and materializing) and hard
 * attention kernels: rows of weights sum to 1, huge logits stay finite, hard attention's
 * ties go to the lowest key, float32 rounding does not grow with N, la_simd_config, and
 * the vectorised exps (float32, float64, the AVX-512 kernels' exp2 and float64 exp), the
 * float64 fused kernel on the edges of its tiles, the fused kernel's log-sum-exps and its
 * backward given them. What every kernel
 * must hold — the float64 reference, causal masking, thread counts, error paths, the
 * workspace limit — is tests/attention/test_attention.c's, over every registry row. */
#include "../testutil.h"
#include "attention/kernels.h"
#include "core/alloc_large.h" /* la_alloc_large: the kernels' large scratch */
#include "core/internal.h"    /* the AVX-512 switch and the fused kernel's exp2 */
#include "cpu/machine.h"
#include "cpu/simd_avx512.h"
#include "cpu/vexp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12

typedef la_status (*kernel_f32)(const la_problem *, const float *, const float *, const float *,
                                float *);
typedef la_status (*kernel_f64)(const la_problem *, const double *, const double *, const double *,
                                double *);

static const struct {
    const char *name;
    la_kernel kind; /* which reference */
    kernel_f32 f32;
    kernel_f64 f64;
} kernels[] = {
    {"fused", LA_KERNEL_SOFTMAX, la_softmax_attention_f32, la_softmax_attention_f64},
    {"materialized", LA_KERNEL_SOFTMAX_MATERIALIZED, la_softmax_attention_materialized_f32,
     la_softmax_attention_materialized_f64},
    {"hard", LA_KERNEL_HARD, la_hard_attention_f32, la_hard_attention_f64},
};
enum { N_KERNELS = sizeof kernels / sizeof kernels[0] };

/* ------------------------------------------------------------------ inputs */

/* q, k, v of a problem in both precisions; the float64 copies hold exactly the float32
 * values, so the reference sees the same inputs as the float32 kernel. */
typedef struct {
    size_t nq, nk, nv, no; /* elements of q, k, v, out */
    double *q, *k, *v;
    float *q32, *k32, *v32;
} inputs;

/* Normal(0, 1) entries rounded to float32; or, when quantised, multiples of 1/8 in
 * [-3.125, 3.125]: then every q·k is exact in float32 (at most 128 · 3.125² < 2¹¹ in
 * steps of 2⁻⁶), and so is q·k · scale for a power-of-two scale, so an argmax never
 * depends on rounding. */
static void fill(tu_rng *r, double *x, float *x32, size_t n, int quantised)
{
    for (size_t i = 0; i < n; i++) {
        double z = tu_normal(r);
        if (quantised) {
            z = round(z * 8) / 8;
            if (z > 3.125) z = 3.125;
            if (z < -3.125) z = -3.125;
        }
        x32[i] = (float)z;
        x[i] = x32[i];
    }
}

static void inputs_make(inputs *in, const la_problem *p, tu_rng *r, int quantised)
{
    size_t bh = p->batch * p->heads;
    in->nq = bh * p->n_queries * p->d_k;
    in->nk = bh * p->n_keys * p->d_k;
    in->nv = bh * p->n_keys * p->d_v;
    in->no = bh * p->n_queries * p->d_v;
    in->q = tu_f64(in->nq);
    in->k = tu_f64(in->nk);
    in->v = tu_f64(in->nv);
    in->q32 = tu_f32(in->nq);
    in->k32 = tu_f32(in->nk);
    in->v32 = tu_f32(in->nv);
    fill(r, in->q, in->q32, in->nq, quantised);
    fill(r, in->k, in->k32, in->nk, quantised);
    fill(r, in->v, in->v32, in->nv, quantised);
}

static void inputs_free(inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->q32);
    free(in->k32);
    free(in->v32);
}

/* ------------------------------------------------------------------ shapes */

typedef struct {
    size_t batch, heads, n, m, d_k, d_v;
    int causal;
    int64_t lengths[3]; /* used when has_lengths; one per batch entry */
    int has_lengths;
} shape;

static void problem_of(la_problem *p, const shape *s)
{
    la_problem_init(p, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v);
    p->causal = s->causal;
    p->key_lengths = s->has_lengths ? s->lengths : NULL;
}

/* ------------------------------------------------------------------ properties */

/* Keys query i of batch entry b sees, from the mask definitions (independently of the
 * library's la_visible_keys). */
static size_t visible_keys(const la_problem *p, size_t b, size_t i)
{
    size_t m = p->n_keys;
    if (p->key_lengths && (size_t)p->key_lengths[b] < m) m = (size_t)p->key_lengths[b];
    if (p->causal) { /* key j <= i + o, o = M - N bottom-right, else 0 */
        const double last = (double)i + (p->causal_align == LA_CAUSAL_BOTTOM_RIGHT
                                             ? (double)p->n_keys - (double)p->n_queries
                                             : 0);
        if (last + 1 < (double)m) m = last + 1 > 0 ? (size_t)(last + 1) : 0;
    }
    return m;
}

/* With v = ones every output row is Σ_j p_ij = 1, except rows that see no key: 0. */
static void rows_sum_to_one(void **state)
{
    (void)state;
    const shape s = {2, 2, 130, 300, 16, 8, 1, {0, 200}, 1};
    la_problem p;
    problem_of(&p, &s);
    tu_rng r = tu_rng_for("rows_sum_to_one");
    inputs in;
    inputs_make(&in, &p, &r, 0);
    for (size_t i = 0; i < in.nv; i++)
        in.v[i] = in.v32[i] = 1;
    double *expect = tu_f64(in.no), *out = tu_f64(in.no);
    float *out32 = tu_f32(in.no);
    for (size_t b = 0; b < s.batch; b++)
        for (size_t h = 0; h < s.heads; h++)
            for (size_t i = 0; i < s.n; i++)
                for (size_t c = 0; c < s.d_v; c++)
                    expect[((b * s.heads + h) * s.n + i) * s.d_v + c] =
                        visible_keys(&p, b, i) > 0 ? 1.0 : 0.0;
    for (size_t kernel = 0; kernel < 2; kernel++) { /* the two softmax kernels */
        assert_int_equal(kernels[kernel].f64(&p, in.q, in.k, in.v, out), LA_OK);
        tu_assert_close_f64(out, expect, in.no, TOL_F64, "%s float64", kernels[kernel].name);
        assert_int_equal(kernels[kernel].f32(&p, in.q32, in.k32, in.v32, out32), LA_OK);
        tu_assert_close_f32(out32, expect, in.no, TOL_F32, "%s float32", kernels[kernel].name);
        for (size_t i = 0; i < in.no; i++) /* the empty rows exactly zero */
            if (expect[i] == 0) assert_true(out[i] == 0 && out32[i] == 0);
    }
    free(expect);
    free(out);
    free(out32);
    inputs_free(&in);
}

/* Logits up to ±1e4 (q, k multiples of 1/8 up to 3.125, d_k = 16, scale = 64, so
 * 3.125² · 16 · 64 = 1e4 exactly): every kernel stays finite and matches the reference.
 * The scores are exact in float32, so float32 is held to its usual tolerance. */
static void huge_logits(void **state)
{
    (void)state;
    const shape shapes_huge[] = {
        {2, 1, 70, 300, 16, 8, 0, {300, 0}, 1},
        {1, 2, 300, 70, 16, 8, 1, {0}, 0},
    };
    for (size_t si = 0; si < 2; si++) {
        la_problem p;
        problem_of(&p, &shapes_huge[si]);
        p.scale = 64;
        tu_rng r = tu_rng_for(si ? "huge_logits causal" : "huge_logits");
        inputs in;
        inputs_make(&in, &p, &r, 1);
        /* the extremes: q_0 = k_0 = 3.125 (logit +1e4), k_1 = -3.125 (logit -1e4) */
        for (size_t c = 0; c < p.d_k; c++) {
            in.q[c] = in.q32[c] = 3.125;
            in.k[c] = in.k32[c] = 3.125;
            in.k[p.d_k + c] = in.k32[p.d_k + c] = -3.125;
        }
        double *ref = tu_f64(in.no), *out = tu_f64(in.no);
        float *out32 = tu_f32(in.no);
        for (size_t kernel = 0; kernel < N_KERNELS; kernel++) {
            assert_int_equal(la_ref_attention(kernels[kernel].kind, &p, in.q, in.k, in.v, ref),
                             LA_OK);
            assert_int_equal(kernels[kernel].f64(&p, in.q, in.k, in.v, out), LA_OK);
            assert_true(tu_all_finite_f64(out, in.no));
            tu_assert_close_f64(out, ref, in.no, TOL_F64, "%s float64", kernels[kernel].name);
            assert_int_equal(kernels[kernel].f32(&p, in.q32, in.k32, in.v32, out32), LA_OK);
            assert_true(tu_all_finite_f32(out32, in.no));
            tu_assert_close_f32(out32, ref, in.no, TOL_F32, "%s float32", kernels[kernel].name);
        }
        free(ref);
        free(out);
        free(out32);
        inputs_free(&in);
    }
}

/* Hard attention's ties: identical keys at j = 5, 7 and 300 with the largest score, so
 * the output is v_5; with key_lengths = 6 still v_5; with the first copy hidden by a
 * causal mask (query 6 sees 0..6), v_5 too; a query that sees only 0..4 gets another. */
static void hard_ties_lowest_key(void **state)
{
    (void)state;
    const size_t n = 10, m = 400, d = 4;
    la_problem p;
    la_problem_init(&p, 1, 1, n, m, d, 1);
    p.scale = 1;
    double q[10 * 4], k[400 * 4], v[400], out[10];
    float q32[10 * 4], k32[400 * 4], v32[400], out32[10];
    for (size_t i = 0; i < n * d; i++)
        q[i] = q32[i] = 1;
    for (size_t j = 0; j < m; j++) {
        double level = (j == 5 || j == 7 || j == 300) ? 2 : -(double)(j % 5) / 8;
        for (size_t c = 0; c < d; c++)
            k[j * d + c] = k32[j * d + c] = (float)level;
        v[j] = v32[j] = (float)j;
    }
    /* no mask: every query answers v_5 */
    assert_int_equal(la_hard_attention_f64(&p, q, k, v, out), LA_OK);
    assert_int_equal(la_hard_attention_f32(&p, q32, k32, v32, out32), LA_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(out[i] == 5 && out32[i] == 5);
    /* causal: queries 0..4 see keys 0..i (scores 0, -.5, -1, ...: argmax key 0, the
     * tie-free maximum), queries from 5 on answer 5 */
    p.causal = 1;
    assert_int_equal(la_hard_attention_f64(&p, q, k, v, out), LA_OK);
    assert_int_equal(la_hard_attention_f32(&p, q32, k32, v32, out32), LA_OK);
    for (size_t i = 0; i < n; i++) {
        double expect = i < 5 ? 0 : 5;
        assert_true(out[i] == expect && out32[i] == expect);
    }
    /* key length 6 with no causal mask: still 5 */
    int64_t len[1] = {6};
    p.causal = 0;
    p.key_lengths = len;
    assert_int_equal(la_hard_attention_f64(&p, q, k, v, out), LA_OK);
    assert_int_equal(la_hard_attention_f32(&p, q32, k32, v32, out32), LA_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(out[i] == 5 && out32[i] == 5);
}

/* la_config().simd names the path the float32 kernels run on, the small products' tile
 * shape and the fused softmax's task size ("avx512, tile 8x32 (…), fused softmax 32
 * queries (…)": how each was chosen; LA_TILE and LA_FUSED_QUERIES force them), and follows
 * the switch. */
static void simd_config_names(void **state)
{
    (void)state;
    if (!la_avx512_usable()) {
        assert_true(strncmp(la_config().simd, "portable", 8) == 0);
        return;
    }
    const char *names[8], *on = la_config().simd;
    const int shapes = la_gemm_small_shapes(names, 8), chosen = la_gemm_small_shape();
    assert_true(chosen >= 0 && chosen < shapes);
    char want[64];
    snprintf(want, sizeof want, "avx512, tile %s (", names[chosen]);
    if (strncmp(on, want, strlen(want)) != 0) fail_msg("la_config().simd = \"%s\"", on);
    snprintf(want, sizeof want, "), fused softmax %zu queries (", la_fused_simd_q_block());
    if (!strstr(on, want) || !strstr(on, la_fused_simd_config()))
        fail_msg("la_config().simd = \"%s\" names no %s", on, want);
    la_avx512_enable(false);
    assert_string_equal(la_config().simd, "portable (switched off by the caller)");
    la_avx512_enable(true);
    assert_string_equal(la_config().simd, on);
}

/* Rounding must not grow with the number of keys: the float32 fused kernel at N = M =
 * 2048, d = 64 stays below 7e-7 relative error (measured 3.9e-7 on the AVX-512 path and
 * 4.3e-7 on the BLIS-based one; a running sum over all M keys in one chain, which an
 * earlier AVX-512 kernel had, gave 1.0e-6 here and 1.5e-6 at 4096, while the 1e-5 of
 * the other tests would pass it). Only the fused kernel: the materializing one sums a
 * whole row of M exps, vectorised (16 partial sums) at -O3 but in one chain in the -O1
 * sanitizer build, where it measures 7.9e-7. The quick profile runs N = M = 600 (the
 * same blocks: several 256-key, 128-key and 64-query ones; the N = 2048 measurement is
 * the full profile's: the quick one is for the sanitizer and emulated runs). */
static void error_flat_in_n(void **state)
{
    (void)state;
    const size_t n = tu_quick() ? 600 : 2048;
    const shape s = {1, 1, n, n, 64, 64, 0, {0}, 0};
    la_problem p;
    problem_of(&p, &s);
    tu_rng r = tu_rng_for("error_flat_in_n");
    inputs in;
    inputs_make(&in, &p, &r, 0);
    double *ref = tu_f64(in.no);
    float *out = tu_f32(in.no);
    assert_int_equal(la_ref_attention(LA_KERNEL_SOFTMAX, &p, in.q, in.k, in.v, ref), LA_OK);
    assert_int_equal(la_softmax_attention_f32(&p, in.q32, in.k32, in.v32, out), LA_OK);
    tu_assert_close_f32(out, ref, in.no, 7e-7, "fused float32 at N = %zu", n);
    free(ref);
    free(out);
    inputs_free(&in);
}

/* The float32 exp against libm's double exp over its whole range, at 2·10⁶ points and
 * at the edges: relative error below 2e-7 (measured: 8.2e-8), 0 below -87.3 and for
 * -inf; and the returned sum is the sum of the values. */
static void vexp_accuracy(void **state)
{
    (void)state;
    enum { N = 4096 };
    static float x[N];
    double worst = 0, worst_at = 0;
    const double lo = -87.0, hi = 88.0;
    for (size_t round_ = 0; round_ < 500; round_++) {
        for (size_t i = 0; i < N; i++)
            x[i] = (float)(lo + (hi - lo) * (double)(round_ * N + i) / (500.0 * N));
        float in[N];
        memcpy(in, x, sizeof in);
        la_exp_shift_sum_f32(x, N, 0);
        for (size_t i = 0; i < N; i++) {
            double e = exp((double)in[i]);
            double rel = fabs(x[i] - e) / e;
            if (!(rel <= worst)) {
                worst = rel;
                worst_at = in[i];
            }
        }
    }
    if (!(worst < 2e-7)) fail_msg("exp: relative error %.3g at x = %.9g", worst, worst_at);
    /* the sum returned is the sum of the values, within float32 summation error of 256
     * terms (256 · 2⁻²⁴ < 2e-5; dropping any one term, each >= e⁻⁵ of a sum near 51,
     * would be off by more than 1.3e-4) */
    const size_t n_sum = 256;
    for (size_t i = 0; i < n_sum; i++)
        x[i] = (float)(-5.0 * (double)i / n_sum);
    float got_sum = la_exp_shift_sum_f32(x, n_sum, 0);
    double sum = 0;
    for (size_t i = 0; i < n_sum; i++)
        sum += x[i];
    assert_true(fabs(got_sum - sum) <= 2e-5 * sum);
    /* the shift: exp(x - 3) */
    float shifted[2] = {3, 4};
    la_exp_shift_sum_f32(shifted, 2, 3);
    assert_true(fabs(shifted[0] - 1) < 2e-7 && fabs(shifted[1] - exp(1.0)) < 2e-7 * exp(1.0));
    /* underflow (below -87.3, where 2ⁿ would leave the normal range) and -inf give
     * exactly 0 */
    float edge[4] = {-INFINITY, -1e4f, -88.0f, -87.5f};
    assert_true(la_exp_shift_sum_f32(edge, 4, 0) == 0);
    for (size_t i = 0; i < 4; i++)
        assert_true(edge[i] == 0);
}

/* The AVX-512 fused kernel's exp2 (engine_avx512.c), used on x <= 0: at most 2 ulp from
 * exp2 (ulp of the exact value, 2⁻¹⁴⁹ among the denormals) densely over [-1, 0] and at
 * random over [-150, 0]; exactly 1 at 0 (a row's largest score gets weight 1), exactly
 * 0 below -160 and for -inf (hidden keys). AVX-512 code: skipped, saying why, where the
 * AVX-512 paths cannot or may not run (no AVX-512: SIGILL; LA_SIMD=off; switched off). */
static void exp2_accuracy(void **state)
{
    (void)state;
    if (!la_avx512_usable()) {
        print_message("exp2_accuracy: skipped, the AVX-512 exp2 does not run here (float32 "
                      "paths: %s)\n",
                      la_config().simd);
        skip();
    }
    enum { N = 4096 };
    static float x[N], y[N];
    tu_rng r = tu_rng_for("exp2_accuracy");
    double worst = 0, worst_at = 0;
    for (size_t round_ = 0; round_ < 400; round_++) {
        for (size_t i = 0; i < N; i++)
            x[i] = round_ < 100 ? -(float)(round_ * N + i) / (100.0f * N)
                                : (float)(-150 * tu_uniform(&r));
        la_fused_simd_exp2(x, y, N);
        for (size_t i = 0; i < N; i++) {
            double e = exp2((double)x[i]);
            int ex;
            frexp(e, &ex);
            double ulp = ldexp(1.0, ex - 24 < -149 ? -149 : ex - 24);
            double err = fabs(y[i] - e) / ulp;
            if (!(err <= worst)) {
                worst = err;
                worst_at = x[i];
            }
        }
    }
    if (!(worst <= 2.0)) fail_msg("exp2: %.3g ulp at x = %.9g", worst, worst_at);
    float edge[5] = {0.0f, -INFINITY, -1e4f, -160.5f, -170.0f}, out[5];
    la_fused_simd_exp2(edge, out, 5);
    assert_true(out[0] == 1.0f);
    for (size_t i = 1; i < 5; i++)
        assert_true(out[i] == 0.0f);
}

static void lse_by_hand(const la_problem *p, const double *q, const double *k, double *lse);

/* The AVX-512 float64 fused kernel's exp (engine_avx512.c), used on x <= 0: at most
 * 2 ulp from libm's exp (ulp of the exact value, 2⁻¹⁰⁷⁴ among the denormals) densely over
 * [-1, 0] and at random over [-745, 0]; exactly 1 at 0, exactly 0 below -746 and for
 * -inf. Skipped, saying why, where the AVX-512 paths do not run (as exp2_accuracy). */
static void exp_accuracy_f64(void **state)
{
    (void)state;
    if (!la_avx512_usable()) {
        print_message("exp_accuracy_f64: skipped, the AVX-512 exp does not run here (%s)\n",
                      la_config().simd);
        skip();
    }
    enum { N = 4096 };
    static double x[N], y[N];
    tu_rng r = tu_rng_for("exp_accuracy_f64");
    double worst = 0, worst_at = 0;
    for (size_t round_ = 0; round_ < 400; round_++) {
        for (size_t i = 0; i < N; i++)
            x[i] = round_ < 100 ? -(double)(round_ * N + i) / (100.0 * N) : -745 * tu_uniform(&r);
        la_fused_simd_exp_f64(x, y, N);
        for (size_t i = 0; i < N; i++) {
            double e = exp(x[i]);
            int ex;
            frexp(e, &ex);
            double ulp = ldexp(1.0, ex - 53 < -1074 ? -1074 : ex - 53);
            double err = fabs(y[i] - e) / ulp;
            if (!(err <= worst)) {
                worst = err;
                worst_at = x[i];
            }
        }
    }
    if (!(worst <= 2.0)) fail_msg("exp: %.3g ulp at x = %.17g", worst, worst_at);
    double edge[5] = {0.0, -INFINITY, -1e4, -746.0, -800.0}, out[5];
    la_fused_simd_exp_f64(edge, out, 5);
    assert_true(out[0] == 1.0);
    for (size_t i = 1; i < 5; i++)
        assert_true(out[i] == 0.0);
}

/* The float64 fused kernel (on AVX-512: its own tiles, 16-query tasks, 8-key micro-tiles,
 * 128-key blocks; else BLIS) against the float64 plain loops at 1e-13, on shapes that
 * reach every edge of the tiles: 1, 2 and 3 queries (one query at a time), N and M not
 * multiples of 16, 8 or 128, d_k and d_v not multiples of 8, causal top-left and
 * bottom-right, key lengths (one of them 0, one M), logits up to about ±60; and its
 * log-sum-exps against the plain loops' at 1e-13 of max(1, |lse|). */
static void fused_f64_edges(void **state)
{
    (void)state;
    typedef struct {
        size_t batch, heads, n, m, d_k, d_v;
        int causal; /* 0, 1 top-left, 2 bottom-right */
        int64_t lengths[2];
        int has_lengths;
    } edge_shape;
    static const edge_shape shapes[] = {
        {1, 2, 1, 300, 16, 8, 0, {0}, 0},       {1, 1, 2, 129, 13, 5, 1, {0}, 0},
        {2, 1, 3, 131, 8, 9, 2, {0}, 0},        {1, 2, 17, 17, 64, 64, 1, {0}, 0},
        {2, 2, 45, 263, 13, 7, 0, {0, 200}, 1}, {2, 1, 100, 77, 24, 16, 2, {50, 77}, 1},
        {1, 1, 129, 257, 64, 72, 1, {0}, 0},    {2, 1, 33, 40, 5, 3, 1, {33, 1}, 1},
    };
    tu_rng r = tu_rng_for("fused_f64_edges");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const edge_shape *s = &shapes[si];
        la_problem p;
        la_problem_init(&p, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v);
        p.causal = s->causal != 0;
        p.causal_align = s->causal == 2 ? LA_CAUSAL_BOTTOM_RIGHT : LA_CAUSAL_TOP_LEFT;
        p.key_lengths = s->has_lengths ? s->lengths : NULL;
        p.scale = 2.0 / sqrt((double)s->d_k); /* logits of a few tens */
        inputs in;
        inputs_make(&in, &p, &r, 0);
        const size_t rows = s->batch * s->heads * s->n;
        double *ref = tu_f64(in.no), *out = tu_f64(in.no), *lse = tu_f64(rows);
        double *want = tu_f64(rows);
        assert_int_equal(la_ref_attention(LA_KERNEL_SOFTMAX, &p, in.q, in.k, in.v, ref), LA_OK);
        assert_int_equal(la_softmax_attention_lse_f64(&p, in.q, in.k, in.v, out, lse), LA_OK);
        tu_assert_close_f64(out, ref, in.no, 1e-13, "fused float64, shape %zu", si);
        for (size_t i = 0; i < in.no; i++) /* the rows that see no key exactly zero */
            if (ref[i] == 0 && out[i] != 0) fail_msg("shape %zu: element %zu is %g", si, i, out[i]);
        lse_by_hand(&p, in.q, in.k, want);
        for (size_t i = 0; i < rows; i++) {
            const double scale = fabs(want[i]) > 1 ? fabs(want[i]) : 1;
            if (want[i] == -INFINITY ? lse[i] != -INFINITY
                                     : !(fabs(lse[i] - want[i]) <= 1e-13 * scale))
                fail_msg("shape %zu: lse[%zu] = %.17g, the plain loops give %.17g", si, i, lse[i],
                         want[i]);
        }
        free(ref);
        free(out);
        free(lse);
        free(want);
        inputs_free(&in);
    }
}

/* The float64 exp against libm's exp over [-708, 709] and over softmax's usual range
 * [-40, 0]: relative error below 1e-15 (measured against expl: 1.4e-16); 0 below -708
 * and for -inf; the sum is the sum of the values. */
static void vexp_accuracy_f64(void **state)
{
    (void)state;
    enum { N = 4096 };
    static double x[N], in[N];
    tu_rng r = tu_rng_for("vexp_accuracy_f64");
    double worst = 0, worst_at = 0;
    for (size_t round_ = 0; round_ < 200; round_++) {
        for (size_t i = 0; i < N; i++)
            in[i] = x[i] = round_ % 2 ? -708 + 1417 * tu_uniform(&r) : -40 * tu_uniform(&r);
        la_exp_shift_sum_f64(x, N, 0);
        for (size_t i = 0; i < N; i++) {
            double e = exp(in[i]), rel = fabs(x[i] - e) / e;
            if (!(rel <= worst)) {
                worst = rel;
                worst_at = in[i];
            }
        }
    }
    if (!(worst < 1e-15)) fail_msg("exp: relative error %.3g at x = %.17g", worst, worst_at);
    /* exact points, and the shift */
    double exact[3] = {0, 1, 2};
    la_exp_shift_sum_f64(exact, 3, 1);
    assert_true(fabs(exact[0] - exp(-1.0)) <= 1e-15 * exp(-1.0) && exact[1] == 1 &&
                fabs(exact[2] - exp(1.0)) <= 1e-15 * exp(1.0));
    /* the sum, within float64 summation error of 256 terms */
    for (size_t i = 0; i < 256; i++)
        x[i] = -5.0 * (double)i / 256;
    double got_sum = la_exp_shift_sum_f64(x, 256, 0), sum = 0;
    for (size_t i = 0; i < 256; i++)
        sum += x[i];
    assert_true(fabs(got_sum - sum) <= 1e-13 * sum);
    /* underflow and -inf give exactly 0 */
    double edge[4] = {-INFINITY, -1e4, -709.0, -708.5};
    assert_true(la_exp_shift_sum_f64(edge, 4, 0) == 0);
    for (size_t i = 0; i < 4; i++)
        assert_true(edge[i] == 0);
}

/* ------------------------------------------------------------------ log-sum-exp and backward */

/* Shapes of the lse tests: a few queries (the AVX-512 kernel's one-query-at-a-time path),
 * partial blocks, a key length 0 (lse -inf), causal with M != N. */
static const shape lse_shapes[] = {
    {1, 2, 3, 70, 16, 8, 0, {0}, 0},
    {2, 1, 100, 300, 32, 16, 1, {0, 250}, 1},
    {1, 1, 129, 65, 64, 64, 1, {0}, 0},
    {3, 1, 33, 40, 8, 3, 0, {40, 1, 17}, 1},
};

/* lse_i = log Σ_j exp(s_ij) over query i's visible keys, in float64 plain loops (-inf when
 * none); per head, q (N, d_k), k (M, d_k). */
static void lse_by_hand(const la_problem *p, const double *q, const double *k, double *lse)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k;
    for (size_t hd = 0; hd < p->batch * p->heads; hd++) {
        const size_t b = hd / p->heads;
        for (size_t i = 0; i < N; i++) {
            const size_t m = visible_keys(p, b, i);
            double max = -INFINITY, sum = 0;
            for (int pass = 0; pass < 2; pass++)
                for (size_t j = 0; j < m; j++) {
                    double s = 0;
                    for (size_t c = 0; c < dk; c++)
                        s += q[(hd * N + i) * dk + c] * k[(hd * M + j) * dk + c];
                    s *= p->scale;
                    if (pass == 0)
                        max = fmax(max, s);
                    else
                        sum += exp(s - max);
                }
            lse[hd * N + i] = m > 0 ? max + log(sum) : -INFINITY;
        }
    }
}

/* la_softmax_attention_lse_*: out bit for bit la_softmax_attention_*'s, lse within
 * 1e-12 (float64) or 1e-6 (float32) of max(1, |lse|) of the plain loops', -inf exactly
 * where a query sees no key. */
static void lse_forward(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof lse_shapes / sizeof *lse_shapes; si++) {
        la_problem p;
        problem_of(&p, &lse_shapes[si]);
        tu_rng r = tu_rng_for("lse_forward");
        inputs in;
        inputs_make(&in, &p, &r, 0);
        const size_t rows = p.batch * p.heads * p.n_queries;
        double *out = tu_f64(in.no), *out2 = tu_f64(in.no), *lse = tu_f64(rows);
        double *want = tu_f64(rows);
        float *out32 = tu_f32(in.no), *out232 = tu_f32(in.no), *lse32 = tu_f32(rows);
        lse_by_hand(&p, in.q, in.k, want);
        assert_int_equal(la_softmax_attention_f64(&p, in.q, in.k, in.v, out), LA_OK);
        assert_int_equal(la_softmax_attention_lse_f64(&p, in.q, in.k, in.v, out2, lse), LA_OK);
        assert_memory_equal(out, out2, in.no * sizeof *out);
        assert_int_equal(la_softmax_attention_f32(&p, in.q32, in.k32, in.v32, out32), LA_OK);
        assert_int_equal(la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, out232, lse32),
                         LA_OK);
        assert_memory_equal(out32, out232, in.no * sizeof *out32);
        for (size_t i = 0; i < rows; i++) {
            if (isinf(want[i])) {
                if (!(isinf(lse[i]) && lse[i] < 0 && isinf(lse32[i]) && lse32[i] < 0))
                    fail_msg("shape %zu row %zu sees no key: lse %g, %g (float32), not -inf", si, i,
                             lse[i], (double)lse32[i]);
                continue;
            }
            const double scale = fmax(1, fabs(want[i]));
            if (!(fabs(lse[i] - want[i]) <= 1e-12 * scale) ||
                !(fabs(lse32[i] - want[i]) <= 1e-6 * scale))
                fail_msg("shape %zu row %zu: lse %.17g, %.9g (float32), by hand %.17g (seed %llu)",
                         si, i, lse[i], (double)lse32[i], want[i], (unsigned long long)tu_seed());
        }
        free(out), free(out2), free(lse), free(want), free(out32), free(out232), free(lse32);
        inputs_free(&in);
    }
}

/* Decoding, N <= 4 queries per head (the AVX-512 kernel's narrow rows, which take the
 * range check's max|k| and max|v| on their own loads and stage their output): against
 * the float64 reference at d_k and d_v off the 16-lane width, d_v past 64 columns, key
 * counts off the 16-key groups, causal and key lengths, lse included; one huge k (past
 * what the scores may hold) among the visible keys must give LA_ERANGE with out and lse
 * untouched, and hidden past a key length (never read) the same bits as without it. */
static void decoding_rows(void **state)
{
    (void)state;
    const shape shapes[] = {
        {1, 3, 1, 300, 40, 80, 0, {0}, 0},
        {2, 2, 3, 37, 64, 64, 1, {0}, 0},
        {2, 1, 4, 200, 24, 17, 0, {150, 9}, 1},
        {1, 2, 1, 1, 64, 64, 0, {0}, 0},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
        la_problem p;
        problem_of(&p, &shapes[si]);
        tu_rng r = tu_rng_for("decoding_rows");
        inputs in;
        inputs_make(&in, &p, &r, 0);
        const size_t rows = p.batch * p.heads * p.n_queries;
        double *ref = tu_f64(in.no), *want = tu_f64(rows);
        float *out = tu_f32(in.no), *lse = tu_f32(rows), *out2 = tu_f32(in.no);
        assert_int_equal(la_ref_attention(LA_KERNEL_SOFTMAX, &p, in.q, in.k, in.v, ref), LA_OK);
        lse_by_hand(&p, in.q, in.k, want);
        assert_int_equal(la_softmax_attention_f32(&p, in.q32, in.k32, in.v32, out), LA_OK);
        tu_assert_close_f32(out, ref, in.no, TOL_F32, "decoding shape %zu", si);
        assert_int_equal(la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, out2, lse),
                         LA_OK);
        assert_memory_equal(out, out2, in.no * sizeof *out);
        for (size_t i = 0; i < rows; i++)
            if (isinf(want[i]) ? !(isinf(lse[i]) && lse[i] < 0)
                               : !(fabs(lse[i] - want[i]) <= 1e-6 * fmax(1, fabs(want[i]))))
                fail_msg("decoding shape %zu row %zu: lse %.9g, by hand %.17g (seed %llu)", si, i,
                         (double)lse[i], want[i], (unsigned long long)tu_seed());
        /* a huge k: in the last head's first key (visible), or past entry 0's key length */
        for (int where = 0; where < 2; where++) {
            if (where == 1 && !shapes[si].has_lengths) continue;
            const size_t at = where == 0 ? in.nk - p.n_keys * p.d_k
                                         : ((size_t)shapes[si].lengths[0] + 1) * p.d_k - 1;
            const float saved = in.k32[at];
            in.k32[at] = 3e37f;
            for (size_t i = 0; i < in.no; i++)
                out[i] = out2[i] = (float)i;
            for (size_t i = 0; i < rows; i++)
                lse[i] = (float)i;
            if (where == 1) { /* hidden: not read, the same bits */
                float *again = tu_f32(in.no), *lse_again = tu_f32(rows);
                assert_int_equal(
                    la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, again, lse_again),
                    LA_OK);
                in.k32[at] = saved;
                assert_int_equal(
                    la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, out2, lse), LA_OK);
                assert_memory_equal(again, out2, in.no * sizeof *out2);
                assert_memory_equal(lse_again, lse, rows * sizeof *lse);
                free(again), free(lse_again);
                continue;
            }
            assert_int_equal(la_softmax_attention_f32(&p, in.q32, in.k32, in.v32, out), LA_ERANGE);
            assert_int_equal(la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, out2, lse),
                             LA_ERANGE);
            for (size_t i = 0; i < in.no; i++)
                if (out[i] != (float)i || out2[i] != (float)i)
                    fail_msg("decoding shape %zu: LA_ERANGE but out written", si);
            for (size_t i = 0; i < rows; i++)
                if (lse[i] != (float)i) fail_msg("decoding shape %zu: lse written", si);
            in.k32[at] = saved;
        }
        free(ref), free(want), free(out), free(lse), free(out2);
        inputs_free(&in);
    }
}

/* The fused backward given the forward's lse against the float64 oracle (float64 1e-11,
 * float32 1e-5 relative per gradient, as test_attention.c holds the registry row, which
 * passes lse = NULL). */
static void backward_given_lse(void **state)
{
    (void)state;
    for (size_t si = 0; si < sizeof lse_shapes / sizeof *lse_shapes; si++) {
        la_problem p;
        problem_of(&p, &lse_shapes[si]);
        tu_rng r = tu_rng_for("backward_given_lse");
        inputs in;
        inputs_make(&in, &p, &r, 0);
        const size_t rows = p.batch * p.heads * p.n_queries, n[3] = {in.nq, in.nk, in.nv};
        double *out = tu_f64(in.no), *d_out = tu_f64(in.no), *lse = tu_f64(rows);
        float *out32 = tu_f32(in.no), *d_out32 = tu_f32(in.no), *lse32 = tu_f32(rows);
        fill(&r, d_out, d_out32, in.no, 0);
        double *ref[3], *g[3];
        float *g32[3];
        for (int t = 0; t < 3; t++) {
            ref[t] = tu_f64(n[t]);
            g[t] = tu_f64(n[t]);
            g32[t] = tu_f32(n[t]);
        }
        assert_int_equal(la_softmax_attention_lse_f64(&p, in.q, in.k, in.v, out, lse), LA_OK);
        assert_int_equal(la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, out32, lse32),
                         LA_OK);
        assert_int_equal(la_ref_softmax_attention_backward(&p, in.q, in.k, in.v, out, d_out, ref[0],
                                                           ref[1], ref[2]),
                         LA_OK);
        assert_int_equal(la_softmax_attention_backward_f64(&p, in.q, in.k, in.v, out, lse, d_out,
                                                           g[0], g[1], g[2]),
                         LA_OK);
        assert_int_equal(la_softmax_attention_backward_f32(&p, in.q32, in.k32, in.v32, out32, lse32,
                                                           d_out32, g32[0], g32[1], g32[2]),
                         LA_OK);
        static const char *const names[3] = {"d_q", "d_k", "d_v"};
        for (int t = 0; t < 3; t++) {
            tu_assert_close_f64(g[t], ref[t], n[t], 1e-11, "shape %zu %s float64", si, names[t]);
            tu_assert_close_f32(g32[t], ref[t], n[t], TOL_F32, "shape %zu %s float32", si,
                                names[t]);
            free(ref[t]), free(g[t]), free(g32[t]);
        }
        free(out), free(d_out), free(lse), free(out32), free(d_out32), free(lse32);
        inputs_free(&in);
    }
}

/* The kernels' large scratch (la_alloc_large: the materializing kernel's scores, FAVOR+'s
 * features) on both sides of LA_HUGE_PAGE_MIN: below it
 * plain malloc, from it on a 2 MiB-aligned block (the huge-page hint); either is writable
 * to its last byte and freed with free. (The kernel reaches the large side only from
 * N·M·4 >= 4 MiB: the full profile's N = 2048 does, the quick profile's sizes do not.) */
static void alloc_large_both_sides(void **state)
{
    (void)state;
    const size_t sizes[] = {LA_HUGE_PAGE_MIN - 1, LA_HUGE_PAGE_MIN, LA_HUGE_PAGE_MIN + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        unsigned char *p = la_alloc_large(sizes[i]);
        assert_non_null(p);
        if (sizes[i] >= LA_HUGE_PAGE_MIN) assert_int_equal((uintptr_t)p % ((size_t)2 << 20), 0);
        p[0] = 1, p[sizes[i] - 1] = 2;
        assert_true(p[0] + p[sizes[i] - 1] == 3);
        free(p);
    }
}

/* The fused float32 kernel's two task sizes (32 and 64 queries in the lanes,
 * la_fused_simd_use_q_block) give the same bits, output and lse, non-causal and causal
 * (top-left and bottom-right), with key lengths, N not a multiple of either, M = N and
 * M > N; the other tests hold the size the CPU runs to the float64 reference. Not where
 * one size leaves a last task of at most LA_FUSED_SIMD_NARROW_ROWS queries, which runs on
 * the narrow tiles (another order of sums): N = 100 does with 32 (100 = 3·32 + 4), so the
 * shapes' N keep N mod 32 and N mod 64 above 4. */
static void fused_task_sizes_same_bits(void **state)
{
    (void)state;
    if (!la_avx512_usable()) {
        print_message("fused_task_sizes_same_bits: skipped, the AVX-512 tiles do not run here\n");
        skip();
    }
    const shape shapes[] = {{2, 3, 150, 150, 64, 64, 0, {150, 77}, 1},
                            {1, 2, 110, 300, 32, 48, 0, {0}, 0},
                            {2, 1, 200, 200, 64, 64, 1, {200, 131}, 1},
                            {1, 2, 90, 260, 16, 16, 1, {0}, 0}};
    tu_rng r = tu_rng_for("fused_task_sizes_same_bits");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int align = 0; align < 2; align++) {
            if (align && !shapes[si].causal) continue;
            la_problem p;
            problem_of(&p, &shapes[si]);
            p.causal_align = align ? LA_CAUSAL_BOTTOM_RIGHT : LA_CAUSAL_TOP_LEFT;
            inputs in;
            inputs_make(&in, &p, &r, 0);
            const size_t rows = p.batch * p.heads * p.n_queries;
            float *out[2] = {tu_f32(in.no), tu_f32(in.no)}, *lse[2] = {tu_f32(rows), tu_f32(rows)};
            const size_t sizes[2] = {LA_FUSED_SIMD_Q_BLOCK, LA_FUSED_SIMD_Q_BLOCK_LARGE};
            for (int t = 0; t < 2; t++) {
                la_fused_simd_use_q_block(sizes[t]);
                assert_int_equal(
                    la_softmax_attention_lse_f32(&p, in.q32, in.k32, in.v32, out[t], lse[t]),
                    LA_OK);
            }
            la_fused_simd_use_q_block(0);
            if (memcmp(out[0], out[1], in.no * sizeof(float)) != 0 ||
                memcmp(lse[0], lse[1], rows * sizeof(float)) != 0)
                fail_msg("shape %zu (causal %d, align %d): 64-query tasks differ from 32-query "
                         "ones (seed %llu)",
                         si, shapes[si].causal, align, (unsigned long long)tu_seed());
            free(out[0]), free(out[1]), free(lse[0]), free(lse[1]);
            inputs_free(&in);
        }
}

int main(void)
{
    tu_init("test_softmax");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vexp_accuracy),
        cmocka_unit_test(vexp_accuracy_f64),
        cmocka_unit_test(rows_sum_to_one),
        cmocka_unit_test(huge_logits),
        cmocka_unit_test(hard_ties_lowest_key),
        cmocka_unit_test(exp2_accuracy),
        cmocka_unit_test(error_flat_in_n),
        cmocka_unit_test(simd_config_names),
        cmocka_unit_test(lse_forward),
        cmocka_unit_test(backward_given_lse),
        cmocka_unit_test(exp_accuracy_f64),
        cmocka_unit_test(fused_f64_edges),
        cmocka_unit_test(decoding_rows),
        cmocka_unit_test(alloc_large_both_sides),
        cmocka_unit_test(fused_task_sizes_same_bits),
    };
    /* fused softmax has two kernels per precision: the AVX-512 one (where the CPU has it)
     * and the BLIS-based one; every test runs against both. */
    int failed = cmocka_run_group_tests_name("default kernels", tests, NULL, NULL);
    if (la_avx512_usable()) {
        la_avx512_enable(false);
        failed += cmocka_run_group_tests_name("BLIS-based fused", tests, NULL, NULL);
        la_avx512_enable(true);
    } else {
        printf("(the AVX-512 paths do not run here, %s: the BLIS-based fused kernels only)\n",
               la_config().simd);
    }
    return failed != 0;
}

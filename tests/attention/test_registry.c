/* test_registry.c — each registry row's capabilities (la_kernel_info: masks, caps, sweep,
 * time_exponent, family, the backward's slots) against what its kernel does: the command, the
 * sweeps and the tests read these fields instead of naming kernels, so a wrong bit would send a
 * mask to a kernel that refuses it, or keep a kernel out of an experiment it runs in. */
#include "../testutil.h"
#include "attention/row.h" /* the rows' entry points */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

enum { N = 6, D = 4 };

/* The variants' sizes within M: one block of each kind, chained (each row reads its own). */
static const la_relative_params relative = {{LA_PARAMS_RELATIVE, NULL}, 2, NULL, NULL, 0};
static const la_score_params score = {{LA_PARAMS_SCORE, &relative.head}, 4, NULL, NULL, 0};
static const la_favor_params favor = {{LA_PARAMS_FAVOR, &score.head}, 8, 0, NULL};
static const la_linformer_params linformer = {{LA_PARAMS_LINFORMER, &favor.head}, 3, NULL, NULL, 0};
static const la_local_params local = {{LA_PARAMS_LOCAL, &linformer.head}, 2};

/* One small self-attention problem the kernel's causal rule accepts. */
static la_problem small_problem(const la_kernel_info *info)
{
    la_problem p;
    la_problem_init(&p, 1, 2, N, N, D, D);
    p.causal = info->causal == LA_CAUSAL_REQUIRED;
    p.params = &local.head;
    return p;
}

typedef struct {
    float q[2 * N * D], k[2 * N * D], v[2 * N * D], out[2 * N * D], weights[2 * N * N];
    double qd[2 * N * D], kd[2 * N * D], weights_d[2 * N * N];
} small_arrays;

static void fill(small_arrays *a)
{
    tu_rng r = tu_rng_for("registry");
    double x[3 * 2 * N * D];
    tu_fill_normal(&r, x, 3 * 2 * N * D, 1.0);
    tu_to_f32(x, a->q, 2 * N * D);
    tu_to_f32(x + 2 * N * D, a->k, 2 * N * D);
    tu_to_f32(x + 4 * N * D, a->v, 2 * N * D);
    memcpy(a->qd, x, sizeof a->qd);
    memcpy(a->kd, x + 2 * N * D, sizeof a->kd);
}

/* A mask that hides nothing: a kernel that honours it runs (LA_OK), one that does not
 * refuses (LA_EINVAL); both before any arithmetic, so the answer is the row's. */
static void masks_match_the_kernels(void **state)
{
    (void)state;
    static small_arrays a;
    fill(&a);
    const uint8_t none[N * N] = {0}, no_key[N] = {0};
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        la_problem p = small_problem(info);
        p.mask = none;
        la_status st = la_attention((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.v, a.out);
        la_status want = info->masks & LA_MASK_GENERAL ? LA_OK : LA_EINVAL;
        if (st != want)
            fail_msg("%s with a general mask: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        p.mask = NULL;
        p.key_mask = no_key;
        st = la_attention((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.v, a.out);
        want = info->masks & LA_MASK_KEY ? LA_OK : LA_EINVAL;
        if (st != want)
            fail_msg("%s with a key mask: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
    }
}

/* weights_f32, weights_f64: set together; la_attention_weights gives the row's matrix in
 * both precisions when they are, and refuses the kernel when they are NULL. */
static void weights_match_the_kernels(void **state)
{
    (void)state;
    static small_arrays a;
    fill(&a);
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        la_problem p = small_problem(info);
        if (!info->fns->weights_f32 != !info->fns->weights_f64 ||
            !info->fns->weights_f32 != !(info->caps & LA_CAP_WEIGHTS))
            fail_msg("%s: weights_f32, weights_f64 and LA_CAP_WEIGHTS not set together",
                     info->name);
        la_status st = la_attention_weights((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.weights);
        la_status want = info->fns->weights_f32 ? LA_OK : LA_EINVAL;
        if (st != want)
            fail_msg("%s's attention matrix: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        st = la_attention_weights((la_kernel)k, &p, LA_FLOAT64, a.qd, a.kd, a.weights_d);
        if (st != want)
            fail_msg("%s's float64 attention matrix: %s, the row says %s", info->name,
                     la_strerror(st), la_strerror(want));
    }
}

/* LA_CAP_LSE: the row's four lse entry points set exactly when the bit is; la_attention_lse
 * then gives la_attention's output bitwise and a finite lse for every row that sees a key,
 * and refuses the kernel otherwise. */
static void lse_matches_the_kernels(void **state)
{
    (void)state;
    static small_arrays a;
    fill(&a);
    static float out[2 * N * D], lse[2 * N];
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        la_problem p = small_problem(info);
        const int bit = (info->caps & LA_CAP_LSE) != 0;
        const int set = !!info->fns->lse_f32 + !!info->fns->lse_f64 +
                        !!info->fns->backward_lse_f32 + !!info->fns->backward_lse_f64;
        if (set != 4 * bit)
            fail_msg("%s: LA_CAP_LSE %d with %d of its 4 lse entry points", info->name, bit, set);
        la_status st = la_attention_lse((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.v, out, lse);
        la_status want = bit ? LA_OK : LA_EINVAL;
        if (st != want)
            fail_msg("%s with lse: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        if (!bit) continue;
        assert_int_equal(la_attention((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.v, a.out), LA_OK);
        if (memcmp(out, a.out, sizeof out) != 0)
            fail_msg("%s: la_attention_lse's output is not la_attention's", info->name);
        for (size_t i = 0; i < 2 * N; i++)
            if (!isfinite(lse[i])) fail_msg("%s: lse[%zu] = %g", info->name, i, (double)lse[i]);
    }
}

/* backward_f32, backward_f64, reference_backward, backward_cost: set together; where they
 * are, la_attention_backward runs in both precisions, la_ref_attention_backward and
 * la_attention_backward_cost answer, each gradient written finite; where they are NULL,
 * each refuses the kernel. */
static void backward_matches_the_kernels(void **state)
{
    (void)state;
    static small_arrays a;
    static float g[3][2 * N * D];
    static double gd[3][2 * N * D], vd[2 * N * D], outd[2 * N * D];
    fill(&a);
    for (size_t x = 0; x < 2 * N * D; x++)
        vd[x] = a.v[x];
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        la_problem p = small_problem(info);
        const bool has = info->fns->backward_f32 != NULL;
        if (has != (info->fns->backward_f64 != NULL) ||
            has != (info->fns->reference_backward != NULL) ||
            has != (info->fns->backward_cost != NULL) || has != !!(info->caps & LA_CAP_BACKWARD))
            fail_msg("%s: backward_f32, backward_f64, reference_backward, backward_cost and "
                     "LA_CAP_BACKWARD not set together",
                     info->name);
        const la_status want = has ? LA_OK : LA_EINVAL;
        la_cost c;
        la_status st = la_attention_backward_cost((la_kernel)k, &p, LA_FLOAT32, &c);
        if (st != want)
            fail_msg("%s's backward cost: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        assert_int_equal(la_attention((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.v, a.out), LA_OK);
        st = la_attention_backward((la_kernel)k, &p, LA_FLOAT32, a.q, a.k, a.v, a.out, NULL, a.out,
                                   g[0], g[1], g[2]);
        if (st != want)
            fail_msg("%s's backward: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        assert_int_equal(la_attention((la_kernel)k, &p, LA_FLOAT64, a.qd, a.kd, vd, outd), LA_OK);
        st = la_attention_backward((la_kernel)k, &p, LA_FLOAT64, a.qd, a.kd, vd, outd, NULL, outd,
                                   gd[0], gd[1], gd[2]);
        if (st != want)
            fail_msg("%s's float64 backward: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        st = la_ref_attention_backward((la_kernel)k, &p, a.qd, a.kd, vd, outd, outd, gd[0], gd[1],
                                       gd[2]);
        if (st != want)
            fail_msg("%s's backward oracle: %s, the row says %s", info->name, la_strerror(st),
                     la_strerror(want));
        for (int t = 0; has && t < 3; t++)
            for (size_t x = 0; x < 2 * N * D; x++)
                if (!isfinite(g[t][x]) || !isfinite(gd[t][x]))
                    fail_msg("%s's backward: gradient %d entry %zu not finite", info->name, t, x);
    }
}

/* time_exponent: the cost model's FLOPs at 2N over N, self-attention at d = 64 and the
 * default budgets (window, rank, features), tend to 2^e; at N = 8192 → 16384 every row
 * is within 0.1 of e in log2. */
static void time_exponent_matches_the_cost_model(void **state)
{
    (void)state;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        assert_true(info->time_exponent == 1 || info->time_exponent == 2);
        double flops[2];
        for (int i = 0; i < 2; i++) {
            la_problem p;
            const size_t n = (size_t)8192 << i;
            la_problem_init(&p, 1, 1, n, n, 64, 64);
            p.causal = info->causal == LA_CAUSAL_REQUIRED;
            la_cost c;
            assert_int_equal(la_attention_cost((la_kernel)k, &p, LA_FLOAT32, &c), LA_OK);
            flops[i] = c.flops_total;
        }
        const double e = log2(flops[1] / flops[0]);
        if (!(fabs(e - info->time_exponent) < 0.1))
            fail_msg("%s: the cost model grows as N^%.3f, the row says N^%g", info->name, e,
                     info->time_exponent);
    }
}

/* sweep: a default series the causal rule forbids would be a sweep that cannot run;
 * family: one of the documented labels. */
static void sweep_and_family_are_consistent(void **state)
{
    (void)state;
    const char *families[] = {"softmax",        "linear", "sparse",  "low-rank",
                              "random-feature", "score",  "position"};
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        if ((info->sweep & LA_SWEEP_PLAIN) && !info->series[0])
            fail_msg("%s: swept without causal masking, which it refuses", info->name);
        if ((info->sweep & LA_SWEEP_CAUSAL) && !info->series[1])
            fail_msg("%s: swept causal, which it refuses", info->name);
        int known = 0;
        for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
            known |= info->family && strcmp(info->family, families[f]) == 0;
        if (!known)
            fail_msg("%s: family '%s' is not a documented label", info->name,
                     info->family ? info->family : "(null)");
        if ((info->caps & LA_CAP_ROTARY) && (info->caps & LA_CAP_ROTARY_FEATURES))
            fail_msg("%s: rotary both before and inside the kernel", info->name);
    }
}

/* .block names the parameter block the row's .params bits read: LA_PARAM_WINDOW the local
 * block, _PROJ Linformer's, _FEATURES FAVOR+'s, _SCORE_WEIGHTS the score block, _RELATIVE the
 * relative one; a row reading none of them names none (0). */
static void block_matches_the_params(void **state)
{
    (void)state;
    static const struct {
        unsigned bit;
        la_params_kind kind;
    } reads[] = {{LA_PARAM_WINDOW, LA_PARAMS_LOCAL},
                 {LA_PARAM_PROJ, LA_PARAMS_LINFORMER},
                 {LA_PARAM_FEATURES, LA_PARAMS_FAVOR},
                 {LA_PARAM_SCORE_WEIGHTS, LA_PARAMS_SCORE},
                 {LA_PARAM_RELATIVE, LA_PARAMS_RELATIVE}};
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        int want = 0, found = 0;
        for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
            if (info->params & reads[i].bit) want = (int)reads[i].kind, found++;
        if (found > 1) fail_msg("%s reads %d kinds of block", info->name, found);
        if ((info->params & LA_PARAM_SCORE_DIM) && !(info->params & LA_PARAM_SCORE_WEIGHTS))
            fail_msg("%s: LA_PARAM_SCORE_DIM without LA_PARAM_SCORE_WEIGHTS", info->name);
        if ((int)info->block != want)
            fail_msg("%s: .block %d, its .params bits (0x%x) read block %d", info->name,
                     (int)info->block, info->params, want);
    }
}

int main(void)
{
    tu_init("test_registry");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(masks_match_the_kernels),
        cmocka_unit_test(weights_match_the_kernels),
        cmocka_unit_test(lse_matches_the_kernels),
        cmocka_unit_test(backward_matches_the_kernels),
        cmocka_unit_test(time_exponent_matches_the_cost_model),
        cmocka_unit_test(sweep_and_family_are_consistent),
        cmocka_unit_test(block_matches_the_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

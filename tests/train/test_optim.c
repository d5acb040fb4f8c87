/* test_optim.c — AdamW, clip_grad_norm_ and the schedules against plain float64 loops of
 * PyTorch's formulas (torch.optim.AdamW's _single_tensor_adamw and
 * torch.nn.utils.clip_grad_norm_ in 1.13, op by op), on random tensors of several shapes
 * over several steps, float32 and float64. */
#include "../testutil.h"
#include "train/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TENSORS = 3 };
static const size_t numel[TENSORS] = {1, 37, 256};

/* The reference state: every tensor in float64. */
typedef struct {
    double *theta[TENSORS], *m[TENSORS], *v[TENSORS], *g[TENSORS];
} ref_state;

/* torch.optim.AdamW, one step, as its ops run (in float64):
 *   param.mul_(1 - lr * weight_decay)
 *   exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
 *   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *   bias_correction1 = 1 - beta1 ** step;  bias_correction2 = 1 - beta2 ** step
 *   step_size = lr / bias_correction1
 *   denom = (exp_avg_sq.sqrt() / sqrt(bias_correction2)).add_(eps)
 *   param.addcdiv_(exp_avg, denom, value=-step_size) */
static void ref_adamw_step(ref_state *r, const la_train_adamw_config *c, double lr, int step)
{
    for (int t = 0; t < TENSORS; t++)
        for (size_t i = 0; i < numel[t]; i++) {
            double *p = &r->theta[t][i], *m = &r->m[t][i], *v = &r->v[t][i], g = r->g[t][i];
            *p *= 1 - lr * c->weight_decay;
            *m = *m * c->beta1 + g * (1 - c->beta1);
            *v = *v * c->beta2 + g * g * (1 - c->beta2);
            double bc1 = 1 - pow(c->beta1, step), bc2 = 1 - pow(c->beta2, step);
            double denom = sqrt(*v) / sqrt(bc2) + c->eps;
            *p += -(lr / bc1) * (*m / denom);
        }
}

/* torch.nn.utils.clip_grad_norm_: total = ‖(‖g_1‖, …, ‖g_n‖)‖, coef = max / (total + 1e-6),
 * clamped to 1, every g multiplied by it. Returns total. */
static double ref_clip(double **g, double max_norm)
{
    double norms[TENSORS], total = 0;
    for (int t = 0; t < TENSORS; t++) {
        double s = 0;
        for (size_t i = 0; i < numel[t]; i++)
            s += g[t][i] * g[t][i];
        norms[t] = sqrt(s);
    }
    for (int t = 0; t < TENSORS; t++)
        total += norms[t] * norms[t];
    total = sqrt(total);
    double coef = fmin(max_norm / (total + 1e-6), 1.0);
    for (int t = 0; t < TENSORS; t++)
        for (size_t i = 0; i < numel[t]; i++)
            g[t][i] *= coef;
    return total;
}

/* Tensors of dtype holding the reference's theta and g (rounded to float32 when dtype is). */
static void to_tensors(la_train_tensor *x, const ref_state *r, la_dtype dtype)
{
    for (int t = 0; t < TENSORS; t++) {
        if (dtype == LA_FLOAT32) {
            tu_to_f32(r->theta[t], x[t].data, numel[t]);
            tu_to_f32(r->g[t], x[t].grad, numel[t]);
        } else {
            memcpy(x[t].data, r->theta[t], numel[t] * sizeof(double));
            memcpy(x[t].grad, r->g[t], numel[t] * sizeof(double));
        }
    }
}

static void check_close(const void *y, const double *ref, size_t n, la_dtype dtype, double tol,
                        const char *what, int step, int t)
{
    if (dtype == LA_FLOAT32)
        tu_assert_close_f32((const float *)y, ref, n, tol, "%s, float32, step %d, tensor %d", what,
                            step, t);
    else
        tu_assert_close_f64((const double *)y, ref, n, tol, "%s, float64, step %d, tensor %d", what,
                            step, t);
}

/* Five AdamW steps, each on fresh gradients (a scale per step, some elements zero),
 * clipped first on odd steps: the parameters and both moments match the reference after
 * every step. float32 runs from the float32-rounded start, so only its own rounding
 * differs (1e-5 relative); float64 within 1e-13. */
static void run_adamw(la_dtype dtype, const la_train_adamw_config *c, double tol)
{
    tu_rng rng = tu_rng_for(dtype == LA_FLOAT32 ? "adamw_f32" : "adamw_f64");
    size_t es = dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
    ref_state r;
    la_train_tensor x[TENSORS];
    for (int t = 0; t < TENSORS; t++) {
        r.theta[t] = tu_f64(numel[t]);
        r.m[t] = tu_f64(numel[t]);
        r.v[t] = tu_f64(numel[t]);
        r.g[t] = tu_f64(numel[t]);
        tu_fill_normal(&rng, r.theta[t], numel[t], 1.0);
        memset(r.m[t], 0, numel[t] * sizeof(double));
        memset(r.v[t], 0, numel[t] * sizeof(double));
        x[t] = (la_train_tensor){.key = "t", .ndim = 1, .shape = {numel[t], 0}, .numel = numel[t]};
        x[t].data = tu_alloc(numel[t] * es);
        x[t].grad = tu_alloc(numel[t] * es);
    }
    /* the reference starts from exactly the values the tensors hold */
    to_tensors(x, &r, dtype);
    if (dtype == LA_FLOAT32)
        for (int t = 0; t < TENSORS; t++)
            tu_to_f64(x[t].data, r.theta[t], numel[t]);
    la_train_adamw o;
    assert_int_equal(la_train_adamw_init(&o, c, dtype, x, TENSORS), LA_OK);
    for (int step = 1; step <= 5; step++) {
        double scale = step % 2 ? 3.0 : 0.01, lr = 1e-3 * step;
        for (int t = 0; t < TENSORS; t++) {
            tu_fill_normal(&rng, r.g[t], numel[t], scale);
            r.g[t][numel[t] / 2] = 0;
            if (dtype == LA_FLOAT32) {
                tu_to_f32(r.g[t], x[t].grad, numel[t]);
                tu_to_f64(x[t].grad, r.g[t], numel[t]);
            } else {
                memcpy(x[t].grad, r.g[t], numel[t] * sizeof(double));
            }
        }
        if (step % 2) {
            double norm = 0, ref_norm = ref_clip(r.g, 1.0);
            assert_int_equal(la_train_clip_grad_norm(x, TENSORS, dtype, 1.0, &norm), LA_OK);
            if (!(fabs(norm - ref_norm) <= 1e-14 * ref_norm))
                fail_msg("norm %.17g, reference %.17g (seed %llu)", norm, ref_norm,
                         (unsigned long long)tu_seed());
            for (int t = 0; t < TENSORS; t++)
                check_close(x[t].grad, r.g[t], numel[t], dtype, tol, "clipped gradient", step, t);
        }
        ref_adamw_step(&r, c, lr, step);
        assert_int_equal(la_train_adamw_step(&o, x, TENSORS, lr), LA_OK);
        assert_int_equal(o.step, (size_t)step);
        for (int t = 0; t < TENSORS; t++) {
            check_close(x[t].data, r.theta[t], numel[t], dtype, tol, "parameters", step, t);
            check_close(o.exp_avg[t], r.m[t], numel[t], dtype, tol, "exp_avg", step, t);
            check_close(o.exp_avg_sq[t], r.v[t], numel[t], dtype, tol, "exp_avg_sq", step, t);
        }
    }
    la_train_adamw_free(&o);
    for (int t = 0; t < TENSORS; t++) {
        free(r.theta[t]);
        free(r.m[t]);
        free(r.v[t]);
        free(r.g[t]);
        free(x[t].data);
        free(x[t].grad);
    }
}

static void test_adamw_defaults(void **state)
{
    (void)state;
    la_train_adamw_config c = la_train_adamw_defaults();
    assert_true(c.beta1 == 0.9 && c.beta2 == 0.999 && c.eps == 1e-8 && c.weight_decay == 0.01);
    run_adamw(LA_FLOAT64, &c, 1e-13);
    run_adamw(LA_FLOAT32, &c, 1e-5);
}

/* Other hyperparameters: a strong weight decay and a large ε weigh the terms differently. */
static void test_adamw_other_hyperparameters(void **state)
{
    (void)state;
    la_train_adamw_config c = {.beta1 = 0.5, .beta2 = 0.9, .eps = 1e-2, .weight_decay = 3.0};
    run_adamw(LA_FLOAT64, &c, 1e-13);
    run_adamw(LA_FLOAT32, &c, 1e-5);
}

/* A norm below max_norm leaves the gradients as they are (a factor that rounds to 1). */
static void test_clip_below_max_is_identity(void **state)
{
    (void)state;
    double g[4] = {0.1, -0.2, 0.05, 0}, orig[4];
    memcpy(orig, g, sizeof g);
    la_train_tensor x = {.key = "g", .ndim = 1, .shape = {4, 0}, .numel = 4, .data = g, .grad = g};
    double norm;
    assert_int_equal(la_train_clip_grad_norm(&x, 1, LA_FLOAT64, 10.0, &norm), LA_OK);
    assert_true(fabs(norm - sqrt(0.01 + 0.04 + 0.0025)) < 1e-16);
    assert_memory_equal(g, orig, sizeof g);
}

static void test_refusals(void **state)
{
    (void)state;
    double d[2] = {1, 2};
    la_train_tensor x = {.key = "x", .ndim = 1, .shape = {2, 0}, .numel = 2, .data = d, .grad = d};
    la_train_adamw o;
    la_train_adamw_config c = la_train_adamw_defaults();
    c.beta1 = 1.0;
    assert_int_equal(la_train_adamw_init(&o, &c, LA_FLOAT64, &x, 1), LA_EINVAL);
    c = la_train_adamw_defaults();
    c.eps = NAN;
    assert_int_equal(la_train_adamw_init(&o, &c, LA_FLOAT64, &x, 1), LA_EINVAL);
    c = la_train_adamw_defaults();
    assert_int_equal(la_train_adamw_init(&o, &c, LA_FLOAT64, &x, 1), LA_OK);
    assert_int_equal(la_train_adamw_step(&o, &x, 1, NAN), LA_EINVAL);
    assert_int_equal(la_train_adamw_step(&o, &x, 1, -1), LA_EINVAL);
    la_train_tensor other = x;
    other.numel = 1;
    assert_int_equal(la_train_adamw_step(&o, &other, 1, 1e-3), LA_EINVAL);
    assert_int_equal(la_train_adamw_step(&o, &x, 0, 1e-3), LA_EINVAL);
    assert_true(d[0] == 1 && d[1] == 2 && o.step == 0);
    la_train_adamw_free(&o);
    la_train_adamw_free(&o);
    assert_int_equal(la_train_clip_grad_norm(&x, 1, LA_FLOAT64, 0, NULL), LA_EINVAL);
    assert_int_equal(la_train_clip_grad_norm(&x, 1, LA_FLOAT64, INFINITY, NULL), LA_EINVAL);
}

/* ---------------------------------------------------------------- schedules */

static void test_schedules(void **state)
{
    (void)state;
    /* warm-up: lr·(t+1)/W, reaching lr at t = W − 1, then constant */
    la_train_schedule s = {.kind = LA_TRAIN_SCHEDULE_CONSTANT, .lr = 0.01, .warmup = 4};
    assert_int_equal(la_train_schedule_check(&s), LA_OK);
    const double warm[] = {0.0025, 0.005, 0.0075, 0.01, 0.01, 0.01};
    for (size_t t = 0; t < 6; t++)
        assert_true(fabs(la_train_schedule_lr(&s, t) - warm[t]) < 1e-18);
    /* step: ×γ every k updates after the warm-up */
    s = (la_train_schedule){
        .kind = LA_TRAIN_SCHEDULE_STEP, .lr = 1.0, .warmup = 2, .every = 3, .gamma = 0.5};
    assert_int_equal(la_train_schedule_check(&s), LA_OK);
    const double stepped[] = {0.5, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25};
    for (size_t t = 0; t < 9; t++)
        assert_true(fabs(la_train_schedule_lr(&s, t) - stepped[t]) < 1e-18);
    /* cosine: lr at the end of the warm-up, the midpoint half-way, the floor at S and after */
    s = (la_train_schedule){
        .kind = LA_TRAIN_SCHEDULE_COSINE, .lr = 1.0, .warmup = 10, .floor = 0.1, .total = 110};
    assert_int_equal(la_train_schedule_check(&s), LA_OK);
    assert_true(fabs(la_train_schedule_lr(&s, 10) - 1.0) < 1e-15);
    assert_true(fabs(la_train_schedule_lr(&s, 60) - 0.55) < 1e-15);
    assert_true(fabs(la_train_schedule_lr(&s, 35) - (0.1 + 0.9 * (1 + cos(acos(-1.0) / 4)) / 2)) <
                1e-15);
    assert_true(fabs(la_train_schedule_lr(&s, 110) - 0.1) < 1e-15);
    assert_true(fabs(la_train_schedule_lr(&s, 500) - 0.1) < 1e-15);
    for (size_t t = 11; t < 110; t++)
        assert_true(la_train_schedule_lr(&s, t) < la_train_schedule_lr(&s, t - 1));
    /* refusals */
    s.floor = 2.0;
    assert_int_equal(la_train_schedule_check(&s), LA_EINVAL);
    s = (la_train_schedule){.kind = LA_TRAIN_SCHEDULE_STEP, .lr = 1.0, .every = 0, .gamma = 0.5};
    assert_int_equal(la_train_schedule_check(&s), LA_EINVAL);
    s.every = 1;
    s.gamma = 0;
    assert_int_equal(la_train_schedule_check(&s), LA_EINVAL);
    s.gamma = 0.5;
    s.lr = NAN;
    assert_int_equal(la_train_schedule_check(&s), LA_EINVAL);
}

int main(void)
{
    tu_init("test_optim");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adamw_defaults),
        cmocka_unit_test(test_adamw_other_hyperparameters),
        cmocka_unit_test(test_clip_below_max_is_identity),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

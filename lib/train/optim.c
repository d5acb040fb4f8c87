/* optim.c — AdamW, gradient-norm clipping and learning-rate schedules (contract in
 * optim.h). The formulas are torch.optim.AdamW's (_single_tensor_adamw, PyTorch 1.13) and
 * torch.nn.utils.clip_grad_norm_'s. */
#include "train/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- AdamW */

la_train_adamw_config la_train_adamw_defaults(void)
{
    return (la_train_adamw_config){.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
}

static int dtype_ok(la_dtype d)
{
    return d == LA_FLOAT32 || d == LA_FLOAT64;
}

static size_t elem_size(la_dtype d)
{
    return d == LA_FLOAT32 ? sizeof(float) : sizeof(double);
}

static int config_ok(const la_train_adamw_config *c)
{
    return c->beta1 >= 0 && c->beta1 < 1 && c->beta2 >= 0 && c->beta2 < 1 && c->eps >= 0 &&
           isfinite(c->eps) && c->weight_decay >= 0 && isfinite(c->weight_decay);
}

void la_train_adamw_free(la_train_adamw *o)
{
    if (!o) return;
    for (size_t i = 0; i < o->count; i++) {
        if (o->exp_avg) free(o->exp_avg[i]);
        if (o->exp_avg_sq) free(o->exp_avg_sq[i]);
    }
    free(o->exp_avg);
    free(o->exp_avg_sq);
    free(o->numel);
    memset(o, 0, sizeof *o);
}

la_status la_train_adamw_init(la_train_adamw *o, const la_train_adamw_config *c, la_dtype dtype,
                              const la_train_tensor *tensors, size_t count)
{
    if (!o || !c || (!tensors && count) || !dtype_ok(dtype) || !config_ok(c)) return LA_EINVAL;
    memset(o, 0, sizeof *o);
    o->c = *c;
    o->dtype = dtype;
    o->numel = calloc(count ? count : 1, sizeof *o->numel);
    o->exp_avg = calloc(count ? count : 1, sizeof *o->exp_avg);
    o->exp_avg_sq = calloc(count ? count : 1, sizeof *o->exp_avg_sq);
    if (!o->numel || !o->exp_avg || !o->exp_avg_sq) goto nomem;
    o->count = count;
    for (size_t i = 0; i < count; i++) {
        size_t n = tensors[i].numel ? tensors[i].numel : 1;
        o->numel[i] = tensors[i].numel;
        o->exp_avg[i] = calloc(n, elem_size(dtype));
        o->exp_avg_sq[i] = calloc(n, elem_size(dtype));
        if (!o->exp_avg[i] || !o->exp_avg_sq[i]) goto nomem;
    }
    return LA_OK;
nomem:
    la_train_adamw_free(o);
    return LA_ENOMEM;
}

/* One tensor's update, per element in double:
 *   θ ← θ·(1 − lr·λ);  m ← β₁m + (1−β₁)g;  v ← β₂v + (1−β₂)g²;
 *   θ ← θ − step_size · m / (√v / √bc2 + ε),  step_size = lr / bc1. */
#define ADAMW_TENSOR(real, name)                                                                   \
    static void name(real *theta, const real *g, real *m, real *v, size_t n, double decay,         \
                     double b1, double b2, double step_size, double bc2_sqrt, double eps)          \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            double t = (double)(real)((double)theta[i] * decay);                                   \
            double gi = g[i];                                                                      \
            double mi = (real)(b1 * m[i] + (1 - b1) * gi);                                         \
            double vi = (real)(b2 * v[i] + (1 - b2) * gi * gi);                                    \
            m[i] = (real)mi;                                                                       \
            v[i] = (real)vi;                                                                       \
            theta[i] = (real)(t - step_size * mi / (sqrt(vi) / bc2_sqrt + eps));                   \
        }                                                                                          \
    }
ADAMW_TENSOR(float, adamw_tensor_f32)
ADAMW_TENSOR(double, adamw_tensor_f64)

la_status la_train_adamw_step(la_train_adamw *o, const la_train_tensor *tensors, size_t count,
                              double lr)
{
    if (!o || (!tensors && count) || count != o->count || !(lr >= 0) || !isfinite(lr))
        return LA_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (tensors[i].numel != o->numel[i] ||
            (tensors[i].numel && (!tensors[i].data || !tensors[i].grad)))
            return LA_EINVAL;
    const double t = (double)(o->step + 1);
    const double b1 = o->c.beta1, b2 = o->c.beta2;
    const double bc1 = 1 - pow(b1, t), bc2 = 1 - pow(b2, t);
    const double step_size = lr / bc1, bc2_sqrt = sqrt(bc2);
    const double decay = 1 - lr * o->c.weight_decay;
    for (size_t i = 0; i < count; i++) {
        const la_train_tensor *x = &tensors[i];
        if (o->dtype == LA_FLOAT32)
            adamw_tensor_f32(x->data, x->grad, o->exp_avg[i], o->exp_avg_sq[i], x->numel, decay, b1,
                             b2, step_size, bc2_sqrt, o->c.eps);
        else
            adamw_tensor_f64(x->data, x->grad, o->exp_avg[i], o->exp_avg_sq[i], x->numel, decay, b1,
                             b2, step_size, bc2_sqrt, o->c.eps);
    }
    o->step++;
    return LA_OK;
}

/* ---------------------------------------------------------------- clipping */

la_status la_train_clip_grad_norm(la_train_tensor *tensors, size_t count, la_dtype dtype,
                                  double max_norm, double *norm)
{
    if ((!tensors && count) || !dtype_ok(dtype) || !(max_norm > 0) || !isfinite(max_norm))
        return LA_EINVAL;
    for (size_t i = 0; i < count; i++)
        if (tensors[i].numel && !tensors[i].grad) return LA_EINVAL;
    /* n = √(Σ_tensors Σ_elements g²), in double, in list order */
    double sum = 0;
    for (size_t i = 0; i < count; i++) {
        const size_t n = tensors[i].numel;
        if (dtype == LA_FLOAT32) {
            const float *g = tensors[i].grad;
            for (size_t j = 0; j < n; j++)
                sum += (double)g[j] * g[j];
        } else {
            const double *g = tensors[i].grad;
            for (size_t j = 0; j < n; j++)
                sum += g[j] * g[j];
        }
    }
    const double total = sqrt(sum);
    if (norm) *norm = total;
    /* clip_coef = max_norm / (n + 1e-6), clamped to at most 1 (a NaN stays NaN) */
    double coef = max_norm / (total + 1e-6);
    if (coef > 1) coef = 1;
    for (size_t i = 0; i < count; i++) {
        const size_t n = tensors[i].numel;
        if (dtype == LA_FLOAT32) {
            float *g = tensors[i].grad, c = (float)coef;
            for (size_t j = 0; j < n; j++)
                g[j] *= c;
        } else {
            double *g = tensors[i].grad;
            for (size_t j = 0; j < n; j++)
                g[j] *= coef;
        }
    }
    return LA_OK;
}

/* ---------------------------------------------------------------- schedules */

static const double pi = 3.14159265358979323846;

const char *la_train_schedule_name(la_train_schedule_kind kind)
{
    switch (kind) {
    case LA_TRAIN_SCHEDULE_CONSTANT: return "constant";
    case LA_TRAIN_SCHEDULE_STEP: return "step";
    case LA_TRAIN_SCHEDULE_COSINE: return "cosine";
    }
    return NULL;
}

la_status la_train_schedule_check(const la_train_schedule *s)
{
    if (!s || !(s->lr >= 0) || !isfinite(s->lr)) return LA_EINVAL;
    switch (s->kind) {
    case LA_TRAIN_SCHEDULE_CONSTANT: return LA_OK;
    case LA_TRAIN_SCHEDULE_STEP:
        return s->every >= 1 && s->gamma > 0 && s->gamma <= 1 ? LA_OK : LA_EINVAL;
    case LA_TRAIN_SCHEDULE_COSINE: return s->floor >= 0 && s->floor <= s->lr ? LA_OK : LA_EINVAL;
    }
    return LA_EINVAL;
}

double la_train_schedule_lr(const la_train_schedule *s, size_t t)
{
    if (t < s->warmup) return s->lr * (double)(t + 1) / (double)s->warmup;
    const size_t after = t - s->warmup;
    switch (s->kind) {
    case LA_TRAIN_SCHEDULE_CONSTANT: return s->lr;
    case LA_TRAIN_SCHEDULE_STEP: return s->lr * pow(s->gamma, (double)(after / s->every));
    case LA_TRAIN_SCHEDULE_COSINE: {
        if (t >= s->total) return s->floor;
        const double progress = (double)after / (double)(s->total - s->warmup);
        return s->floor + (s->lr - s->floor) * (1 + cos(pi * progress)) / 2;
    }
    }
    return s->lr;
}

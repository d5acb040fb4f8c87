/* optim.h — the optimiser of `linattn train`: AdamW as torch.optim.AdamW computes it,
 * global gradient-norm clipping as torch.nn.utils.clip_grad_norm_, and the learning-rate
 * schedules. They work on a model's tensor list (train/train.h), whose elements are of the
 * model's dtype (float32 or float64). Internal (not exported). */
#ifndef LA_TRAIN_OPTIM_H
#define LA_TRAIN_OPTIM_H

#include "linattn.h"
#include "train/train.h"

#include <stddef.h>

/* ---------------------------------------------------------------- AdamW */

/* torch.optim.AdamW's hyperparameters (amsgrad and maximize off). */
typedef struct {
    double beta1, beta2, eps, weight_decay;
} la_train_adamw_config;

/* torch's defaults: β = (0.9, 0.999), ε = 1e-8, weight decay 0.01. */
la_train_adamw_config la_train_adamw_defaults(void);

/* The optimiser's state: its hyperparameters, the step count t and, per tensor, the
 * moments m (exp_avg) and v (exp_avg_sq), numel elements each of the dtype. */
typedef struct {
    la_train_adamw_config c;
    la_dtype dtype;
    size_t count;   /* tensors */
    size_t *numel;  /* count */
    void **exp_avg; /* count arrays of numel[i] elements */
    void **exp_avg_sq;
    size_t step; /* updates done */
} la_train_adamw;

/* The state for `count` tensors of the list (moments zero, step 0). LA_EINVAL (NULL, a
 * hyperparameter torch refuses: β outside [0, 1), ε or weight decay < 0 or not finite, a
 * bad dtype), LA_ENOMEM (nothing allocated then). */
la_status la_train_adamw_init(la_train_adamw *o, const la_train_adamw_config *c, la_dtype dtype,
                              const la_train_tensor *tensors, size_t count);
void la_train_adamw_free(la_train_adamw *o); /* safe on a zeroed or freed state */

/* One update with learning rate lr, for every tensor θ with gradient g (t = step + 1):
 *     θ ← θ − lr·λ·θ                         (decoupled weight decay, first)
 *     m ← β₁·m + (1 − β₁)·g
 *     v ← β₂·v + (1 − β₂)·g²
 *     θ ← θ − (lr / (1 − β₁ᵗ)) · m / (√v / √(1 − β₂ᵗ) + ε)
 * Each element's arithmetic in double, rounded once to the dtype per stored value.
 * LA_EINVAL (NULL, lr < 0 or not finite, a list that does not match the state's). */
la_status la_train_adamw_step(la_train_adamw *o, const la_train_tensor *tensors, size_t count,
                              double lr);

/* ---------------------------------------------------------------- clipping */

/* torch.nn.utils.clip_grad_norm_(params, max_norm) with the 2-norm: the norm of all
 * gradients together, n = √(Σ g²) summed in double in list order, element by element;
 * every gradient is then multiplied by min(1, max_norm / (n + 1e-6)), that factor
 * rounded to the dtype first (as torch multiplies by a tensor of the dtype). *norm = n
 * (it may be infinite or NaN: then every gradient is multiplied by NaN or 0 as in torch;
 * the caller looks at *norm). LA_EINVAL (NULL, max_norm <= 0 or not finite). */
la_status la_train_clip_grad_norm(la_train_tensor *tensors, size_t count, la_dtype dtype,
                                  double max_norm, double *norm);

/* ---------------------------------------------------------------- schedules */

typedef enum {
    LA_TRAIN_SCHEDULE_CONSTANT = 0, /* lr after the warm-up */
    LA_TRAIN_SCHEDULE_STEP,         /* lr · γ^⌊(t − W) / k⌋ */
    LA_TRAIN_SCHEDULE_COSINE,       /* floor + (lr − floor)(1 + cos(π (t − W)/(S − W)))/2 */
} la_train_schedule_kind;

/* The names "constant", "step", "cosine"; NULL outside the enum. */
const char *la_train_schedule_name(la_train_schedule_kind kind);

typedef struct {
    la_train_schedule_kind kind;
    double lr;     /* the peak learning rate */
    size_t warmup; /* W: updates t = 0 .. W−1 take lr·(t + 1)/W */
    size_t every;  /* step: k updates per decay (>= 1) */
    double gamma;  /* step: the factor (in (0, 1]) */
    double floor;  /* cosine: the rate at t = S (0 <= floor <= lr) */
    size_t total;  /* cosine: S, the run's updates; t >= S gives floor */
} la_train_schedule;

/* LA_EINVAL for a schedule out of range (lr < 0 or not finite, the fields of its kind). */
la_status la_train_schedule_check(const la_train_schedule *s);
/* The learning rate of update t (0-based). */
double la_train_schedule_lr(const la_train_schedule *s, size_t t);

#endif

/* model_typed.c — the model's forward and backward pass per element type (train.h). */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/model_internal.h"

static la_status run(la_train_model *m, size_t batch, const int32_t *tokens,
                     const int32_t *targets, int backward, double *loss, size_t *correct,
                     size_t *scored)
{
    (void)m, (void)batch, (void)tokens, (void)targets, (void)backward, (void)loss, (void)correct,
        (void)scored;
    return LA_EINVAL; /* the passes are written next */
}

#if REAL_IS_F32
la_status la_train_run_f32(la_train_model *m, size_t batch, const int32_t *tokens,
                           const int32_t *targets, int backward, double *loss, size_t *correct,
                           size_t *scored)
{
    return run(m, batch, tokens, targets, backward, loss, correct, scored);
}
#else
la_status la_train_run_f64(la_train_model *m, size_t batch, const int32_t *tokens,
                           const int32_t *targets, int backward, double *loss, size_t *correct,
                           size_t *scored)
{
    return run(m, batch, tokens, targets, backward, loss, correct, scored);
}
#endif

/* model_internal.h — the model's layout, shared by model.c (creation, tensors, checks)
 * and model_typed.c (the forward and backward per element type). Internal. */
#ifndef LA_TRAIN_MODEL_INTERNAL_H
#define LA_TRAIN_MODEL_INTERNAL_H

#include "train/train.h"

#include <stdbool.h>

/* A layer's tensors, in the order of train.h's list. */
enum {
    LA_TRAIN_IN_W = 0, /* self_attn.in_proj_weight (3D, D) */
    LA_TRAIN_IN_B,     /* self_attn.in_proj_bias (3D) */
    LA_TRAIN_OUT_W,    /* self_attn.out_proj.weight (D, D) */
    LA_TRAIN_OUT_B,    /* self_attn.out_proj.bias (D) */
    LA_TRAIN_L1_W,     /* linear1.weight (d_ff, D) */
    LA_TRAIN_L1_B,     /* linear1.bias (d_ff) */
    LA_TRAIN_L2_W,     /* linear2.weight (D, d_ff) */
    LA_TRAIN_L2_B,     /* linear2.bias (D) */
    LA_TRAIN_N1_W,     /* norm1.weight (D) */
    LA_TRAIN_N1_B,     /* norm1.bias (D) */
    LA_TRAIN_N2_W,     /* norm2.weight (D) */
    LA_TRAIN_N2_B,     /* norm2.bias (D) */
    LA_TRAIN_LAYER_TENSORS
};

#define LA_TRAIN_NONE ((size_t)-1)

struct la_train_model {
    la_train_config c;
    la_train_tensor *list; /* count entries */
    size_t count;
    char *keys;    /* the keys' text, list[i].key pointing into it */
    void *storage; /* n_params parameters, then n_params gradients */
    size_t n_params;
    /* the sinusoidal table (seq_len, D) in the model's type, formed once at creation as
     * la_add_positional_encoding forms it (NULL with learned positions) */
    void *sinusoid;
    /* indices into list (LA_TRAIN_NONE where the model lacks the tensor) */
    size_t embedding, positions, layer0, norm, head_w, head_b;
};

/* The tensor t of layer i. */
static inline la_train_tensor *la_train_layer_tensor(const la_train_model *m, size_t i, int t)
{
    return &m->list[m->layer0 + i * LA_TRAIN_LAYER_TENSORS + (size_t)t];
}

/* The model's attention problem for a batch: the config's parameters with the model's
 * sizes, causal = 1, scale 1/√(D/H), no masks, contiguous. */
void la_train_attention_problem(const la_train_config *c, size_t batch, la_problem *p);

/* Element counts of the saved state per layer, in the model's type and in doubles (SAVED
 * STATE, train.h); false when they pass size_t. */
bool la_train_saved_counts(const la_train_config *c, size_t batch, size_t *layer_real,
                           size_t *layer_double, size_t *final_real, size_t *final_double);

/* The forward (and, with backward, the backward) pass of train.h per type; logits (R, V),
 * when not NULL, receives the forward's logits. */
la_status la_train_run_f32(la_train_model *m, size_t batch, const int32_t *tokens,
                           const int32_t *targets, int backward, double *loss, size_t *correct,
                           size_t *scored, float *logits);
la_status la_train_run_f64(la_train_model *m, size_t batch, const int32_t *tokens,
                           const int32_t *targets, int backward, double *loss, size_t *correct,
                           size_t *scored, double *logits);

/* out = a + b over n elements, the residual sums of the forward and backward (model_typed.c,
 * per type; decode.c's too); LA_ERANGE when a sum is not finite. */
la_status la_train_add_f32(size_t n, const float *a, const float *b, float *out);
la_status la_train_add_f64(size_t n, const double *a, const double *b, double *out);

/* One token of la_train_decoder_step per type (decode.c). */
la_status la_train_decoder_step_f32(la_train_decoder *d, int32_t token, float *logits);
la_status la_train_decoder_step_f64(la_train_decoder *d, int32_t token, double *logits);

#endif

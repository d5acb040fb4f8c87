/* train.h — a decoder-only causal language model with its forward and backward pass, in
 * float32 and float64, for training in C (`linattn train`). Internal: the command links
 * the static library and includes this header; nothing here is exported by the shared
 * library or declared in linattn.h. The layers' own forward and backward passes are in
 * train/train_layers.h; the optimiser, tasks and checkpoints work on la_train_tensor lists.
 *
 * THE MODEL, for tokens t (B, N) (N = seq_len), as PyTorch computes it with
 *
 *     x = embedding(t) + P                          # no scaling by √D
 *     x = encoder(x, mask=causal, is_causal=True)   # L × nn.TransformerEncoderLayer(D, H,
 *                                                   #   d_ff, dropout=0, activation,
 *                                                   #   batch_first=True, norm_first)
 *     y = norm(x)                                   # nn.LayerNorm(D, eps=ln_eps)
 *     logits = y · head.weightᵀ + head.bias         # head.weight is embedding.weight
 *                                                   #   when tie_head
 *     loss = cross_entropy(logits[scored], targets[scored])   # mean over scored tokens
 *
 * P is pos_embedding.weight (seq_len, D) with learned positions, else the fixed
 * sinusoidal table P[t, 2i] = sin(t / 10000^(2i/D)), P[t, 2i+1] = cos(t / 10000^(2i/D))
 * (la_add_positional_encoding's). The final LayerNorm is applied in both arrangements
 * (pre-LN and post-LN). The self-attention of every layer is the registry kernel
 * c->attention with causal = 1 (query i sees keys j <= i), H heads of D/H, scale
 * 1/√(D/H) (nn.MultiheadAttention's); with softmax it is exactly nn.MultiheadAttention.
 * GELU is the exact one, 0.5·x·(1 + erf(x/√2)).
 *
 * TENSORS, in this order (PyTorch state_dict keys; (out, in) for every weight):
 *     embedding.weight                      (V, D)
 *     pos_embedding.weight                  (seq_len, D)   learned positions only
 *     for each layer i = 0 .. L−1:
 *     layers.{i}.self_attn.in_proj_weight   (3D, D)   W_Q, W_K, W_V stacked
 *     layers.{i}.self_attn.in_proj_bias     (3D)
 *     layers.{i}.self_attn.out_proj.weight  (D, D)
 *     layers.{i}.self_attn.out_proj.bias    (D)
 *     layers.{i}.linear1.weight             (d_ff, D)
 *     layers.{i}.linear1.bias               (d_ff)
 *     layers.{i}.linear2.weight             (D, d_ff)
 *     layers.{i}.linear2.bias               (D)
 *     layers.{i}.norm1.weight               (D)
 *     layers.{i}.norm1.bias                 (D)
 *     layers.{i}.norm2.weight               (D)
 *     layers.{i}.norm2.bias                 (D)
 *     norm.weight                           (D)
 *     norm.bias                             (D)
 *     head.weight                           (V, D)         untied head only
 *     head.bias                             (V)
 * In PyTorch the encoder's layers are `layers.{i}` of a ModuleList (not nn.TransformerEncoder's
 * `layers.layers.{i}`): a module with attributes embedding, pos_embedding, layers, norm,
 * head has exactly these keys (a tied head.weight is the same Parameter as
 * embedding.weight and is not listed here).
 *
 * INITIALIZATION (la_train_model_create), as the PyTorch modules initialize themselves,
 * drawn from the seed alone (splitmix64 then Box-Muller or uniform, tensor by tensor in
 * the order above; the values are not PyTorch's, the distributions are):
 *     embedding.weight, pos_embedding.weight   N(0, 1)                 (nn.Embedding)
 *     in_proj_weight                           U(−a, a), a = √(6 / (D + 3D))  (Xavier)
 *     in_proj_bias, out_proj.bias              0
 *     out_proj.weight, linear1/2.weight,       U(−1/√in, 1/√in)        (nn.Linear)
 *     linear1/2.bias, head.weight, head.bias
 *     norm weights 1, norm biases 0
 *
 * SAVED STATE. The forward keeps, per call, for its backward (elements of the model's
 * type, but the LayerNorm statistics, which are double), with R = B·N rows:
 *     embedding      nothing (the tokens are the caller's)
 *     each layer     4·R·D: pre-LN its input x, a = norm1(x), s = x + attn(a),
 *                    f = norm2(s); post-LN its input x, s = x + attn(x), u = norm1(s),
 *                    s' = u + ffn(u); then Q, K, V and the heads' output O, each
 *                    (B, H, N, D/H) (4·R·D); each row's log-sum-exp (B·H·N) when the
 *                    kernel has LA_CAP_LSE; linear1's pre-activation (R·d_ff); mean and
 *                    1/σ of norm1 and norm2 (4·R doubles)
 *     final norm     its input (R·D) and output (R·D), mean and 1/σ (2·R doubles)
 *     head           nothing: the logits (R, V) are scratch of the call, which the
 *                    cross-entropy turns into their gradient in place
 * la_train_saved_bytes gives the total.
 *
 * THREADS. Every product runs on BLIS's threads summing each element's terms in one order,
 * every reduction over rows (bias, LayerNorm, embedding gradients, the loss) in a fixed
 * order, and the attention kernels' backward passes are bitwise the same on any thread
 * count: the same call gives the same bits with 1 or 8 threads.
 *
 * ERRORS. Every function returns an la_status and never prints, aborts or leaks; on
 * error the parameters are unchanged and the gradients unspecified. */
#ifndef LA_TRAIN_H
#define LA_TRAIN_H

#include "core/blocks.h"
#include "linattn.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    la_dtype dtype;               /* LA_FLOAT32 or LA_FLOAT64: parameters, gradients, activations */
    size_t vocab, d_model, heads; /* V, D, H (H divides D) */
    size_t d_ff, layers, seq_len; /* FFN inner size, L (>= 1), N: every call's sequence length */
    la_kernel attention;          /* a registry row with a backward that allows causal = 1 */
    la_problem attention_params;  /* its parameters (feature_map, eps, chunk, workspace_limit,
                                     ...), copied into every call's problem; sizes, scale,
                                     causal and its alignment, masks, key lengths, strides and
                                     params are the model's own (ignored here) */
    la_blocks attention_blocks;   /* the kernel's block (la_kernel_info.block) is its
                                     problem's params */
    int pre_ln;                   /* 1: norm_first=True (pre-LN); 0: post-LN */
    int gelu;                     /* 0: ReLU; 1: exact GELU */
    int learned_positions;        /* 0: sinusoidal (fixed); 1: pos_embedding.weight (N, D) */
    int tie_head;                 /* 1: head.weight is embedding.weight */
    double ln_eps;                /* every LayerNorm's ε (finite, > 0) */
} la_train_config;

/* Fills every field: the sizes given, float32, LA_KERNEL_SOFTMAX, attention_params from
 * la_problem_init (then sized by the model), pre-LN, ReLU, sinusoidal positions, untied
 * head, ln_eps LA_DEFAULT_NORM_EPS. Adjust after. */
void la_train_config_init(la_train_config *c, size_t vocab, size_t d_model, size_t heads,
                          size_t d_ff, size_t layers, size_t seq_len);
/* LA_OK, LA_EINVAL (NULL, a zero size, H not dividing D, a bad dtype, flag or ε, a kernel
 * without a backward or refusing causal, attention parameters la_problem_check refuses
 * for the model's problem), LA_EOVERFLOW (a tensor or activation beyond size_t). */
la_status la_train_config_check(const la_train_config *c);

/* One parameter: key (static or owned by the model), its shape (ndim 1 or 2, shape[1] 0
 * for ndim 1), numel elements of the model's dtype at data and its gradient at grad. */
typedef struct {
    const char *key;
    size_t ndim, shape[2], numel;
    void *data, *grad;
} la_train_tensor;

typedef struct la_train_model la_train_model; /* opaque */

/* A model of configuration c (copied) initialized from seed, gradients zero. *m is NULL on
 * error. LA_EINVAL (NULL m, la_train_config_check's), LA_EOVERFLOW, LA_ENOMEM. */
la_status la_train_model_create(la_train_model **m, const la_train_config *c, uint64_t seed);
void la_train_model_free(la_train_model *m); /* NULL is fine */
/* The model's configuration (never NULL for a model). */
const la_train_config *la_train_model_config(const la_train_model *m);
/* The parameters in the order of TENSORS above: *list owned by m (valid until it is freed),
 * *count entries. Writing data changes the model (the optimiser's step, a checkpoint's
 * load); grad holds what the last la_train_forward_backward wrote. LA_EINVAL for NULL. */
la_status la_train_model_tensors(la_train_model *m, la_train_tensor **list, size_t *count);
/* Parameters in all: Σ numel over the list. */
size_t la_train_model_param_count(const la_train_model *m);

/* One forward and backward pass over a batch: tokens, targets (batch, seq_len) int32,
 * tokens in [0, V), targets in [0, V) or negative: not scored (MQAR scores the answers
 * only). *loss = mean cross-entropy over the scored positions (0 when none is scored),
 * *correct the scored positions whose argmax logit (first of ties) is the target,
 * *scored their number. Every grad is zeroed and then holds ∂loss/∂parameter (zero
 * everywhere when nothing is scored). Any of loss, correct, scored may be NULL.
 * LA_EINVAL (NULL m, tokens or targets, batch 0, a token or target out of range),
 * LA_EOVERFLOW, LA_ENOMEM, the attention kernel's status (LA_EBUDGET, LA_ERANGE: in
 * float32 a value left the type's range; run in float64), LA_ERANGE also for a loss or
 * activation not finite. */
la_status la_train_forward_backward(la_train_model *m, size_t batch, const int32_t *tokens,
                                    const int32_t *targets, double *loss, size_t *correct,
                                    size_t *scored);
/* The forward alone (gradients untouched): the same loss, correct and scored. */
la_status la_train_evaluate(la_train_model *m, size_t batch, const int32_t *tokens,
                            const int32_t *targets, double *loss, size_t *correct, size_t *scored);
/* The forward's logits: logits (batch, seq_len, V) of the model's dtype, for tokens
 * (batch, seq_len) in [0, V). LA_EINVAL (NULL, batch 0, a token out of range), and the
 * forward's other statuses. */
la_status la_train_logits(la_train_model *m, size_t batch, const int32_t *tokens, void *logits);

/* DECODING, one token at a time (decode.c): the logits of token t from tokens 0 .. t,
 * those of la_train_logits's row t for the same tokens (to rounding). A kernel with
 * LA_CAP_STEP carries its recurrent state per layer (la_linear_step: O(1) per token);
 * any other keeps a KV cache per layer, 2·capacity·D elements, and runs the new query over
 * the cached keys (O(t) per token).
 * create: a decoder for up to `capacity` tokens of m (which must outlive it and not change
 *   while it decodes). LA_EINVAL (NULL, capacity 0 or, with learned positions, beyond
 *   seq_len), LA_EOVERFLOW, LA_ENOMEM, the step state's statuses; *d NULL on error.
 * step: feeds token (in [0, V)) at position la_train_decoder_position(d) and writes its
 *   logits (V elements of the model's dtype); the position advances. LA_EINVAL (NULL, a
 *   token out of range, the capacity reached: nothing changed), the kernel's statuses
 *   and LA_ERANGE for a value not finite (then the position stays, the caches may hold
 *   part of the token: free the decoder). */
typedef struct la_train_decoder la_train_decoder; /* opaque */
la_status la_train_decoder_create(la_train_decoder **d, const la_train_model *m, size_t capacity);
void la_train_decoder_free(la_train_decoder *d); /* NULL is fine */
size_t la_train_decoder_position(const la_train_decoder *d);
la_status la_train_decoder_step(la_train_decoder *d, int32_t token, void *logits);

/* Bytes the forward keeps for the backward (SAVED STATE above) for a batch of c; 0 when c
 * is not valid or the count passes size_t. */
size_t la_train_saved_bytes(const la_train_config *c, size_t batch);

#endif

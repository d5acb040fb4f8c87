/* train_layers.h — the layers of the training model (train.h), each a forward that keeps
 * what its backward needs and that backward, per element type (files compiled once per
 * type: dense.c, layer_norm.c, ffn.c, attention.c, embedding.c, cross_entropy.c), and
 * their float64 plain-loop oracles (reference.c). Internal; the tests include it.
 *
 * Conventions. Row-major arrays; a weight W is (out, in), applied as y = x Wᵀ + b
 * (PyTorch's nn.Linear). A backward takes dy = ∂L/∂y and WRITES dx = ∂L/∂x (whole, NULL:
 * not wanted) and ADDS the parameters' gradients into dw, db, dγ, dβ (so a caller zeroes
 * them once and shares them, as a tied head shares the embedding's). Every reduction over
 * rows (a bias or norm gradient, a product's sum over rows through BLIS, the loss) runs
 * in one fixed order, so the bits do not depend on the thread count. Products run on
 * la_threads() of BLIS's threads: call from outside any parallel region.
 * Statuses: LA_OK, LA_EINVAL (NULL where an array is needed, a zero size), LA_EOVERFLOW,
 * LA_ENOMEM, and the attention kernel's (attention.c); nothing printed, nothing leaked. */
#ifndef LA_TRAIN_LAYERS_H
#define LA_TRAIN_LAYERS_H

#include "linattn.h"

#include <stddef.h>
#include <stdint.h>

/* Dense (nn.Linear): y (rows, out) = x (rows, in) · Wᵀ + b; w (out, in), b (out) or NULL.
 * Backward: dx = dy · W, dw += dyᵀ · x, db += Σ_rows dy (db NULL: no bias). Keeps nothing
 * beyond x. */
la_status la_train_dense_forward_f32(size_t rows, size_t in, size_t out, const float *x,
                                     const float *w, const float *b, float *y);
la_status la_train_dense_forward_f64(size_t rows, size_t in, size_t out, const double *x,
                                     const double *w, const double *b, double *y);
la_status la_train_dense_backward_f32(size_t rows, size_t in, size_t out, const float *x,
                                      const float *w, const float *dy, float *dx, float *dw,
                                      float *db);
la_status la_train_dense_backward_f64(size_t rows, size_t in, size_t out, const double *x,
                                      const double *w, const double *dy, double *dx, double *dw,
                                      double *db);

/* LayerNorm over the last axis (nn.LayerNorm): y = x̂ · γ + β, x̂ = (x − μ) · r, μ the row
 * mean, r = 1/√(var + eps) with the biased variance, in double. Keeps x and per row μ and r
 * (mean, rstd: (rows) doubles). Backward, with g = dy ∘ γ: dx = r · (g − mean(g) − x̂ ·
 * mean(g ∘ x̂)), dγ += Σ_rows dy ∘ x̂, dβ += Σ_rows dy. x, y, dx, dy: (rows, d); y may
 * equal x, dx may equal dy. LA_EINVAL also for eps not finite and > 0. */
la_status la_train_layer_norm_forward_f32(size_t rows, size_t d, const float *x, const float *gamma,
                                          const float *beta, double eps, float *y, double *mean,
                                          double *rstd);
la_status la_train_layer_norm_forward_f64(size_t rows, size_t d, const double *x,
                                          const double *gamma, const double *beta, double eps,
                                          double *y, double *mean, double *rstd);
la_status la_train_layer_norm_backward_f32(size_t rows, size_t d, const float *x,
                                           const float *gamma, const double *mean,
                                           const double *rstd, const float *dy, float *dx,
                                           float *dgamma, float *dbeta);
la_status la_train_layer_norm_backward_f64(size_t rows, size_t d, const double *x,
                                           const double *gamma, const double *mean,
                                           const double *rstd, const double *dy, double *dx,
                                           double *dgamma, double *dbeta);

/* The FFN's activation, element-wise on n values: gelu 0 ReLU max(x, 0) (derivative 1
 * for x > 0, else 0, PyTorch's), 1 exact GELU 0.5·x·(1 + erf(x/√2)) (derivative Φ(x) +
 * x·φ(x)). Backward: d_pre = d_out ∘ act′(pre) (d_pre may equal d_out). */
la_status la_train_activation_forward_f32(size_t n, int gelu, const float *pre, float *out);
la_status la_train_activation_forward_f64(size_t n, int gelu, const double *pre, double *out);
la_status la_train_activation_backward_f32(size_t n, int gelu, const float *pre, const float *d_out,
                                           float *d_pre);
la_status la_train_activation_backward_f64(size_t n, int gelu, const double *pre,
                                           const double *d_out, double *d_pre);

/* FFN: pre = x W1ᵀ + b1, y = act(pre) W2ᵀ + b2. x, y, dx, dy: (rows, d); w1 (d_ff, d),
 * b1 (d_ff), w2 (d, d_ff), b2 (d). Keeps x and pre (rows, d_ff), written by the forward;
 * the backward recomputes act(pre). Scratch: the forward rows·d_ff, the backward
 * 2·rows·d_ff elements. */
la_status la_train_ffn_forward_f32(size_t rows, size_t d, size_t d_ff, int gelu, const float *x,
                                   const float *w1, const float *b1, const float *w2,
                                   const float *b2, float *pre, float *y);
la_status la_train_ffn_forward_f64(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                                   const double *w1, const double *b1, const double *w2,
                                   const double *b2, double *pre, double *y);
la_status la_train_ffn_backward_f32(size_t rows, size_t d, size_t d_ff, int gelu, const float *x,
                                    const float *w1, const float *w2, const float *pre,
                                    const float *dy, float *dx, float *dw1, float *db1, float *dw2,
                                    float *db2);
la_status la_train_ffn_backward_f64(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                                    const double *w1, const double *w2, const double *pre,
                                    const double *dy, double *dx, double *dw1, double *db1,
                                    double *dw2, double *db2);

/* Multi-head self-attention (nn.MultiheadAttention, batch_first, no dropout) over the
 * registry kernel `kernel` on problem p: B = p->batch, H = p->heads, N = p->n_queries =
 * p->n_keys, D = H · p->d_k (p->d_v = p->d_k; p's masks, scale and parameters are the
 * kernel's). [Q K V] = x W_inᵀ + b_in, head h of Q is columns h·d_k .. (h+1)·d_k, O =
 * attention per head, y = concat_h(O_h) W_outᵀ + b_out.
 *   x, y, dx, dy: (B, N, D); in_w (3D, D), in_b (3D), out_w (D, D), out_b (D).
 *   Kept: x, and q, k, v, o (B, H, N, d_k) each and lse (B, H, N) written by the forward;
 *   lse only for a row with LA_CAP_LSE (given: la_attention_lse, read back by
 *   la_attention_backward), else NULL. Scratch: the forward 3·B·N·D elements, the
 *   backward 8·B·N·D, plus the kernel's own.
 * Backward: d_out_w += dyᵀ·concat, d_out_b += Σ dy, d_o from dy · W_out, la_attention_backward
 * for d_q, d_k, d_v, then d_in_w, d_in_b, dx through the input projection. LA_EINVAL also
 * for a kernel without a backward, N != M, d_k != d_v. */
la_status la_train_mha_forward_f32(la_kernel kernel, const la_problem *p, const float *x,
                                   const float *in_w, const float *in_b, const float *out_w,
                                   const float *out_b, float *q, float *k, float *v, float *o,
                                   float *lse, float *y);
la_status la_train_mha_forward_f64(la_kernel kernel, const la_problem *p, const double *x,
                                   const double *in_w, const double *in_b, const double *out_w,
                                   const double *out_b, double *q, double *k, double *v, double *o,
                                   double *lse, double *y);
la_status la_train_mha_backward_f32(la_kernel kernel, const la_problem *p, const float *x,
                                    const float *in_w, const float *out_w, const float *q,
                                    const float *k, const float *v, const float *o,
                                    const float *lse, const float *dy, float *dx, float *d_in_w,
                                    float *d_in_b, float *d_out_w, float *d_out_b);
la_status la_train_mha_backward_f64(la_kernel kernel, const la_problem *p, const double *x,
                                    const double *in_w, const double *out_w, const double *q,
                                    const double *k, const double *v, const double *o,
                                    const double *lse, const double *dy, double *dx, double *d_in_w,
                                    double *d_in_b, double *d_out_w, double *d_out_b);

/* Token embedding and positions: x[b, t] = table[tokens[b, t]] + P[t], P = pos (n, d)
 * (learned) or, pos NULL, the sinusoidal table (la_add_positional_encoding's). tokens
 * (batch, n) in [0, vocab) (LA_EINVAL otherwise). Backward, a scatter-add in token order:
 * d_table[tokens[b, t]] += dx[b, t], d_pos[t] += Σ_b dx[b, t] (d_pos NULL: none). */
la_status la_train_embedding_forward_f32(size_t batch, size_t n, size_t vocab, size_t d,
                                         const int32_t *tokens, const float *table,
                                         const float *pos, float *x);
la_status la_train_embedding_forward_f64(size_t batch, size_t n, size_t vocab, size_t d,
                                         const int32_t *tokens, const double *table,
                                         const double *pos, double *x);
la_status la_train_embedding_backward_f32(size_t batch, size_t n, size_t vocab, size_t d,
                                          const int32_t *tokens, const float *dx, float *d_table,
                                          float *d_pos);
la_status la_train_embedding_backward_f64(size_t batch, size_t n, size_t vocab, size_t d,
                                          const int32_t *tokens, const double *dx, double *d_table,
                                          double *d_pos);

/* Softmax cross-entropy over the vocabulary, forward and backward in one pass, stable
 * (logits shifted by their row maximum, the sums in double). logits (rows, vocab) are
 * replaced by their gradient: row r with targets[r] in [0, vocab) becomes (softmax(l_r) −
 * onehot(targets[r])) · scale, a row with targets[r] < 0 zeros. *loss_sum = Σ over scored
 * rows of lse(l_r) − l_r[target], summed in row order; *correct the scored rows whose
 * first largest logit is the target; *scored their number. LA_EINVAL also for a target
 * >= vocab. */
la_status la_train_cross_entropy_f32(size_t rows, size_t vocab, float *logits,
                                     const int32_t *targets, double scale, double *loss_sum,
                                     size_t *correct, size_t *scored);
la_status la_train_cross_entropy_f64(size_t rows, size_t vocab, double *logits,
                                     const int32_t *targets, double scale, double *loss_sum,
                                     size_t *correct, size_t *scored);

/* ---------------------------------------------------------------- float64 oracles */
/* Plain loops from each definition, sharing nothing with the layers above (reference.c):
 * the same shapes and arguments; dx written, parameter gradients added. The attention
 * oracle runs la_ref_attention and la_ref_attention_backward on the heads. */
void la_train_ref_dense_forward(size_t rows, size_t in, size_t out, const double *x,
                                const double *w, const double *b, double *y);
void la_train_ref_dense_backward(size_t rows, size_t in, size_t out, const double *x,
                                 const double *w, const double *dy, double *dx, double *dw,
                                 double *db);
void la_train_ref_layer_norm_forward(size_t rows, size_t d, const double *x, const double *gamma,
                                     const double *beta, double eps, double *y);
void la_train_ref_layer_norm_backward(size_t rows, size_t d, const double *x, const double *gamma,
                                      double eps, const double *dy, double *dx, double *dgamma,
                                      double *dbeta);
void la_train_ref_ffn_forward(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                              const double *w1, const double *b1, const double *w2,
                              const double *b2, double *y);
void la_train_ref_ffn_backward(size_t rows, size_t d, size_t d_ff, int gelu, const double *x,
                               const double *w1, const double *b1, const double *w2,
                               const double *dy, double *dx, double *dw1, double *db1, double *dw2,
                               double *db2);
la_status la_train_ref_mha_forward(la_kernel kernel, const la_problem *p, const double *x,
                                   const double *in_w, const double *in_b, const double *out_w,
                                   const double *out_b, double *y);
la_status la_train_ref_mha_backward(la_kernel kernel, const la_problem *p, const double *x,
                                    const double *in_w, const double *in_b, const double *out_w,
                                    const double *dy, double *dx, double *d_in_w, double *d_in_b,
                                    double *d_out_w, double *d_out_b);
void la_train_ref_embedding_forward(size_t batch, size_t n, size_t d, const int32_t *tokens,
                                    const double *table, const double *pos, double *x);
void la_train_ref_embedding_backward(size_t batch, size_t n, size_t d, const int32_t *tokens,
                                     const double *dx, double *d_table, double *d_pos);
/* Returns the summed loss of the scored rows and writes the gradient into d_logits. */
double la_train_ref_cross_entropy(size_t rows, size_t vocab, const double *logits,
                                  const int32_t *targets, double scale, double *d_logits);

#endif

/* layers_typed.h — the Transformer and sequence layers per element type (layers.c,
 * recurrent.c, conv1d.c) and the sequence layers' float64 oracles (sequence_reference.c).
 * Internal: linattn.h's la_layer_norm, la_mha, ..., la_conv1d_forward take an la_dtype
 * and dispatch here (dispatch.c); the tests may include it. */
#ifndef LA_LAYERS_TYPED_H
#define LA_LAYERS_TYPED_H

#include "linattn.h"

/* LayerNorm over the last axis: y = (x − mean) / √(var + eps) · γ + β, biased variance
 * (divide by d), statistics accumulated in double.
 *   x, out: (rows, d); gamma, beta: (d). Returns LA_OK, LA_EINVAL (NULL, a zero size,
 *   rows · d overflowing, eps not finite and > 0), LA_ERANGE (a row of finite x gave a
 *   value beyond the element type's range, e.g. γ near its limit; out then holds it). */
la_status la_layer_norm_f32(size_t rows, size_t d, const float *x, const float *gamma,
                            const float *beta, double eps, float *out);
la_status la_layer_norm_f64(size_t rows, size_t d, const double *x, const double *gamma,
                            const double *beta, double eps, double *out);

/* Position-wise FFN: out = act(x W1ᵀ + b1) W2ᵀ + b2, act from c->activation.
 *   x, out: (rows, D); w1: (d_ff, D), b1: (d_ff); w2: (D, d_ff), b2: (D).
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM. */
la_status la_ffn_f32(const la_layer_config *c, size_t rows, const float *x, const float *w1,
                     const float *b1, const float *w2, const float *b2, float *out);
la_status la_ffn_f64(const la_layer_config *c, size_t rows, const double *x, const double *w1,
                     const double *b1, const double *w2, const double *b2, double *out);

/* Multi-head attention as nn.MultiheadAttention (batch_first):
 *   Q = x_q W_Qᵀ + b_Q, K = x_kv W_Kᵀ + b_K, V = x_kv W_Vᵀ + b_V, split into H heads of
 *   D/H, attention per head with c->attention (scale 1/√(D/H) for softmax and hard),
 *   heads concatenated, out = concat · W_Oᵀ + b_O.
 *   x_q: (B, N, D), x_kv: (B, M, D) (x_kv = x_q for self-attention), out: (B, N, D);
 *   in_w: (3D, D), in_b: (3D), out_w: (D, D), out_b: (D); key_lengths NULL or (B,).
 *   c->rotary: Q and K rotated (positions 0..N−1, 0..M−1) when x_kv == x_q.
 * Returns LA_OK, LA_EINVAL, LA_EOVERFLOW, LA_ENOMEM, or the kernel's status. */
la_status la_mha_f32(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                     const float *x_q, const float *x_kv, int causal, const int64_t *key_lengths,
                     const float *in_w, const float *in_b, const float *out_w, const float *out_b,
                     float *out);
la_status la_mha_f64(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                     const double *x_q, const double *x_kv, int causal, const int64_t *key_lengths,
                     const double *in_w, const double *in_b, const double *out_w,
                     const double *out_b, double *out);

/* The layers and stacks below return LA_ERANGE when a value leaves the element type's
 * range: a LayerNorm of a finite row, a residual sum of finite values, or a sublayer's
 * output added to a finite residual is not finite (float32 with weights, inputs or sums
 * near 3.4e38: run it in float64). The check rides on the residual adds and LayerNorms
 * the layers do anyway; the output is then unspecified.
 *
 * Encoder layer (nn.TransformerEncoderLayer): self-attention then FFN, each with its
 * residual and LayerNorm (norm1, norm2) in c->norm's arrangement.
 *   x, out: (B, N, D); key_lengths NULL or (B,). w must be an encoder layer (or a
 *   decoder layer, whose cross-attention is then unused) of c's sizes and dtype. */
la_status la_encoder_layer_f32(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, const float *x, int causal, const int64_t *key_lengths,
                               float *out);
la_status la_encoder_layer_f64(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, const double *x, int causal, const int64_t *key_lengths,
                               double *out);

/* Decoder layer (nn.TransformerDecoderLayer): self-attention (causal when `causal`,
 * target lengths), cross-attention over memory (never causal, memory lengths), FFN;
 * norm1, norm2, norm3 in c->norm's arrangement (pre-LN does not normalize memory).
 *   x, out: (B, N, D); memory: (B, M, D); tgt_lengths, memory_lengths NULL or (B,). */
la_status la_decoder_layer_f32(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, size_t m, const float *x, const float *memory, int causal,
                               const int64_t *tgt_lengths, const int64_t *memory_lengths,
                               float *out);
la_status la_decoder_layer_f64(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, size_t m, const double *x, const double *memory,
                               int causal, const int64_t *tgt_lengths,
                               const int64_t *memory_lengths, double *out);

/* The stacks of nn.Transformer: L encoder layers then encoder.norm; L2 decoder layers
 * (each attending to memory) then decoder.norm. la_transformer_* runs both:
 * memory = encoder(src), out = decoder(tgt, memory) with a causal target.
 *   src: (B, M, D), tgt and out: (B, N, D). */
la_status la_encoder_f32(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, const float *x, int causal, const int64_t *key_lengths,
                         float *out);
la_status la_encoder_f64(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, const double *x, int causal, const int64_t *key_lengths,
                         double *out);
la_status la_decoder_f32(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, size_t m, const float *x, const float *memory, int causal,
                         const int64_t *tgt_lengths, const int64_t *memory_lengths, float *out);
la_status la_decoder_f64(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, size_t m, const double *x, const double *memory, int causal,
                         const int64_t *tgt_lengths, const int64_t *memory_lengths, double *out);
la_status la_transformer_f32(const la_layer_config *c, const la_transformer_weights *w,
                             size_t batch, size_t n_src, size_t n_tgt, const float *src,
                             const float *tgt, const int64_t *src_lengths, float *out);
la_status la_transformer_f64(const la_layer_config *c, const la_transformer_weights *w,
                             size_t batch, size_t n_src, size_t n_tgt, const double *src,
                             const double *tgt, const int64_t *src_lengths, double *out);

/* Sinusoidal positional encoding added in place: x[b, pos, 2i] += sin(pos / 10000^(2i/D)),
 * x[b, pos, 2i+1] += cos(pos / 10000^(2i/D)), positions first_pos .. first_pos + N − 1.
 *   x: (B, N, D). Returns LA_OK, LA_EINVAL (NULL x, a zero size, sizes whose product
 *   overflows, first_pos + N − 1 beyond SIZE_MAX; x untouched). */
la_status la_add_positional_encoding_f32(size_t batch, size_t n, size_t d, size_t first_pos,
                                         float *x);
la_status la_add_positional_encoding_f64(size_t batch, size_t n, size_t d, size_t first_pos,
                                         double *x);

/* Token embeddings: out row t = table row tokens[t] (no scaling).
 *   table: (V, D); tokens: (count) in [0, V) (LA_EINVAL otherwise, out untouched, and
 *   for NULL, a zero V or D, count · D overflowing);
 *   out: (count, D). */
la_status la_embed_f32(size_t vocab, size_t d, const float *table, size_t count,
                       const int64_t *tokens, float *out);
la_status la_embed_f64(size_t vocab, size_t d, const double *table, size_t count,
                       const int64_t *tokens, double *out);

/* ---------------------------------------------------------------- sequence layers */

/* Recurrent (Elman) layer: h_t = tanh(W_h h_{t−1} + W_x x_t + b), h_{−1} = 0, run as
 * the N-step recurrence it is: W_x x_t for every t is one product over all B·N rows (it
 * needs no earlier step); then N sequential steps of one (B, d) × (d, d) product with
 * W_h each (a matrix–vector product when B = 1), then tanh.
 *   x, h: (B, N, d); w_x, w_h: (d, d); b: (d). */
la_status la_rnn_forward_f32(size_t batch, size_t n, size_t d, const float *x, const float *w_x,
                             const float *w_h, const float *b, float *h);
la_status la_rnn_forward_f64(size_t batch, size_t n, size_t d, const double *x, const double *w_x,
                             const double *w_h, const double *b, double *h);

/* 1-D convolution over the sequence, width k (odd), 'same' zero padding: output
 * position i sees inputs i − k/2 .. i + k/2 (those outside 0 .. N−1 are zero):
 *   y_i = Σ_{t=0}^{k−1} W_t x_{i+t−k/2} + b.
 *   x, y: (B, N, d); w: (k, d, d), W_t = w[t] a (d_out, d_in) matrix; b: (d).
 * Through BLIS as k products of (rows, d) × (d, d) over shifted row ranges, per block of
 * output rows (no im2col copy: no scratch; lib/layers/conv1d.c says why). */
la_status la_conv1d_forward_f32(size_t batch, size_t n, size_t d, size_t width, const float *x,
                                const float *w, const float *b, float *y);
la_status la_conv1d_forward_f64(size_t batch, size_t n, size_t d, size_t width, const double *x,
                                const double *w, const double *b, double *y);

/* The float64 oracles of the two layers: plain loops, the same arguments and statuses. */
la_status la_ref_rnn_forward(size_t batch, size_t n, size_t d, const double *x, const double *w_x,
                             const double *w_h, const double *b, double *h);
la_status la_ref_conv1d_forward(size_t batch, size_t n, size_t d, size_t width, const double *x,
                                const double *w, const double *b, double *y);

#endif /* LA_LAYERS_TYPED_H */

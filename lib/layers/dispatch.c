/* dispatch.c — the layers of linattn.h by element type: each public function takes an
 * la_dtype and calls its float32 or float64 instance (layers_typed.h). */
#include "core/internal.h"

/* The instance of dtype, LA_EINVAL for a dtype outside the enum. */
#define BY_DTYPE(call_f32, call_f64)                                                               \
    do {                                                                                           \
        if (dtype == LA_FLOAT32) return call_f32;                                                  \
        if (dtype == LA_FLOAT64) return call_f64;                                                  \
        return LA_EINVAL;                                                                          \
    } while (0)

/* Weights of another element type than the call's are refused (NULL: the layer's). */
#define WEIGHTS_OF(w, dtype)                                                                       \
    do {                                                                                           \
        if ((w) && (w)->dtype != (dtype)) return LA_EINVAL;                                        \
    } while (0)

la_status la_layer_norm(la_dtype dtype, size_t rows, size_t d, const void *x, const void *gamma,
                        const void *beta, double eps, void *out)
{
    BY_DTYPE(la_layer_norm_f32(rows, d, x, gamma, beta, eps, out),
             la_layer_norm_f64(rows, d, x, gamma, beta, eps, out));
}

la_status la_ffn(const la_layer_config *c, la_dtype dtype, size_t rows, const void *x,
                 const void *w1, const void *b1, const void *w2, const void *b2, void *out)
{
    BY_DTYPE(la_ffn_f32(c, rows, x, w1, b1, w2, b2, out),
             la_ffn_f64(c, rows, x, w1, b1, w2, b2, out));
}

la_status la_mha(const la_layer_config *c, la_dtype dtype, size_t batch, size_t n_queries,
                 size_t n_keys, const void *x_q, const void *x_kv, int causal,
                 const int64_t *key_lengths, const void *in_w, const void *in_b, const void *out_w,
                 const void *out_b, void *out)
{
    BY_DTYPE(la_mha_f32(c, batch, n_queries, n_keys, x_q, x_kv, causal, key_lengths, in_w, in_b,
                        out_w, out_b, out),
             la_mha_f64(c, batch, n_queries, n_keys, x_q, x_kv, causal, key_lengths, in_w, in_b,
                        out_w, out_b, out));
}

la_status la_encoder_layer(const la_layer_config *c, const la_layer_weights *w, la_dtype dtype,
                           size_t batch, size_t n, const void *x, int causal,
                           const int64_t *key_lengths, void *out)
{
    WEIGHTS_OF(w, dtype);
    BY_DTYPE(la_encoder_layer_f32(c, w, batch, n, x, causal, key_lengths, out),
             la_encoder_layer_f64(c, w, batch, n, x, causal, key_lengths, out));
}

la_status la_decoder_layer(const la_layer_config *c, const la_layer_weights *w, la_dtype dtype,
                           size_t batch, size_t n, size_t m, const void *x, const void *memory,
                           int causal, const int64_t *tgt_lengths, const int64_t *memory_lengths,
                           void *out)
{
    WEIGHTS_OF(w, dtype);
    BY_DTYPE(la_decoder_layer_f32(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths,
                                  out),
             la_decoder_layer_f64(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths,
                                  out));
}

la_status la_encoder(const la_layer_config *c, const la_transformer_weights *w, la_dtype dtype,
                     size_t batch, size_t n, const void *x, int causal, const int64_t *key_lengths,
                     void *out)
{
    WEIGHTS_OF(w, dtype);
    BY_DTYPE(la_encoder_f32(c, w, batch, n, x, causal, key_lengths, out),
             la_encoder_f64(c, w, batch, n, x, causal, key_lengths, out));
}

la_status la_decoder(const la_layer_config *c, const la_transformer_weights *w, la_dtype dtype,
                     size_t batch, size_t n, size_t m, const void *x, const void *memory,
                     int causal, const int64_t *tgt_lengths, const int64_t *memory_lengths,
                     void *out)
{
    WEIGHTS_OF(w, dtype);
    BY_DTYPE(
        la_decoder_f32(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths, out),
        la_decoder_f64(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths, out));
}

la_status la_transformer(const la_layer_config *c, const la_transformer_weights *w, la_dtype dtype,
                         size_t batch, size_t n_src, size_t n_tgt, const void *src, const void *tgt,
                         const int64_t *src_lengths, void *out)
{
    WEIGHTS_OF(w, dtype);
    BY_DTYPE(la_transformer_f32(c, w, batch, n_src, n_tgt, src, tgt, src_lengths, out),
             la_transformer_f64(c, w, batch, n_src, n_tgt, src, tgt, src_lengths, out));
}

la_status la_add_positional_encoding(la_dtype dtype, size_t batch, size_t n, size_t d,
                                     size_t first_pos, void *x)
{
    BY_DTYPE(la_add_positional_encoding_f32(batch, n, d, first_pos, x),
             la_add_positional_encoding_f64(batch, n, d, first_pos, x));
}

la_status la_embed(la_dtype dtype, size_t vocab, size_t d, const void *table, size_t count,
                   const int64_t *tokens, void *out)
{
    BY_DTYPE(la_embed_f32(vocab, d, table, count, tokens, out),
             la_embed_f64(vocab, d, table, count, tokens, out));
}

la_status la_rnn_forward(la_dtype dtype, size_t batch, size_t n, size_t d, const void *x,
                         const void *w_x, const void *w_h, const void *b, void *h)
{
    BY_DTYPE(la_rnn_forward_f32(batch, n, d, x, w_x, w_h, b, h),
             la_rnn_forward_f64(batch, n, d, x, w_x, w_h, b, h));
}

la_status la_conv1d_forward(la_dtype dtype, size_t batch, size_t n, size_t d, size_t width,
                            const void *x, const void *w, const void *b, void *y)
{
    BY_DTYPE(la_conv1d_forward_f32(batch, n, d, width, x, w, b, y),
             la_conv1d_forward_f64(batch, n, d, width, x, w, b, y));
}

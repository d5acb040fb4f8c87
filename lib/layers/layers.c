/* layers.c — Transformer layers over the attention kernels: LayerNorm, FFN, multi-head
 * attention, encoder and decoder layers, stacks, positional encoding and embeddings,
 * float32 and float64. The layers are written once in layers_tmpl.h and instantiated
 * here per precision; this file holds what both share: the configuration, its checks
 * and the scratch geometry. */
#include "layers/layers_internal.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

void la_layer_config_init(la_layer_config *c, size_t d_model, size_t heads, size_t d_ff)
{
    memset(c, 0, sizeof *c);
    c->d_model = d_model;
    c->heads = heads;
    c->d_ff = d_ff;
    c->attention = LA_KERNEL_SOFTMAX;
    c->cross_attention = LA_KERNEL_COUNT; /* the same as attention */
    c->norm = LA_NORM_POST;
    c->activation = LA_ACTIVATION_RELU;
    c->norm_eps = LA_DEFAULT_NORM_EPS;
    c->feature_map = LA_FEATURE_ELU1;
    c->linear_eps = LA_DEFAULT_EPS;
    c->chunk = LA_DEFAULT_CHUNK;
    c->workspace_limit = LA_DEFAULT_WORKSPACE_LIMIT;
    c->params = NULL;
}

la_status la_layer_config_check(const la_layer_config *c)
{
    if (!c || c->d_model == 0 || c->heads == 0 || c->d_ff == 0 || c->d_model % c->heads != 0)
        return LA_EINVAL;
    /* a layer runs its kernel both with and without causal masking */
    const la_kernel_info *kernel = la_kernel_get(c->attention);
    if (!kernel || kernel->causal != LA_CAUSAL_ALLOWED) return LA_EINVAL;
    kernel = la_kernel_get(la_layer_cross_kernel(c));
    if (!kernel || kernel->causal != LA_CAUSAL_ALLOWED) return LA_EINVAL;
    if ((c->norm != LA_NORM_POST && c->norm != LA_NORM_PRE) ||
        (c->activation != LA_ACTIVATION_RELU && c->activation != LA_ACTIVATION_GELU))
        return LA_EINVAL;
    if (!(isfinite(c->norm_eps) && c->norm_eps > 0) ||
        !(isfinite(c->linear_eps) && c->linear_eps >= 0) || c->chunk == 0 ||
        !la_feature_map_ok(c->feature_map))
        return LA_EINVAL;
    /* positions */
    if ((c->rotary != 0 && c->rotary != 1) || la_params_check(c->params) != LA_OK) return LA_EINVAL;
    if (c->rotary &&
        ((c->d_model / c->heads) % 2 != 0 ||
         !(la_kernel_get(c->attention)->caps & (LA_CAP_ROTARY | LA_CAP_ROTARY_FEATURES))))
        return LA_EINVAL;
    return LA_OK;
}

/* The weights fit the configuration: dtype, D, d_ff, and a decoder layer's tensors
 * when `decoder` is asked for. */
static la_status check_weights(const la_layer_config *c, const la_layer_weights *w, la_dtype dtype,
                               int decoder)
{
    la_status st = la_layer_config_check(c);
    if (st != LA_OK) return st;
    if (!w || !w->storage || w->dtype != dtype || w->d_model != c->d_model || w->d_ff != c->d_ff ||
        (decoder && !w->decoder))
        return LA_EINVAL;
    return LA_OK;
}

/* *count = batch·rows·d, and that many elements of `elem` bytes fit in size_t. */
static bool sizes_ok(size_t batch, size_t rows, size_t d, size_t elem, size_t *count)
{
    size_t bytes;
    return la_mul_ok(batch, rows, count) && la_mul_ok(*count, d, count) &&
           la_mul_ok(*count, elem, &bytes);
}

la_kernel la_layer_cross_kernel(const la_layer_config *c)
{
    return c->cross_attention == LA_KERNEL_COUNT ? c->attention : c->cross_attention;
}

void la_layer_attention_problem(const la_layer_config *c, size_t batch, size_t n, size_t m,
                                int causal, const int64_t *key_lengths, la_problem *p)
{
    const size_t dh = c->d_model / c->heads;
    la_problem_init(p, batch, c->heads, n, m, dh, dh);
    p->causal = causal;
    p->key_lengths = key_lengths;
    p->feature_map = c->feature_map;
    p->eps = c->linear_eps;
    p->chunk = c->chunk;
    p->workspace_limit = c->workspace_limit;
    p->params = c->params;
}

size_t la_ffn_hidden_rows(size_t rows)
{
    return rows < LA_FFN_CHUNK_ROWS ? rows : LA_FFN_CHUNK_ROWS;
}

bool la_layer_scratch_elements(const la_layer_config *c, size_t batch, size_t n, size_t m,
                               size_t *elements)
{
    const size_t D = c->d_model, longer = m > n ? m : n;
    size_t q, kv, ffn, sub;
    if (!sizes_ok(batch, n, D, 1, &q) || !sizes_ok(batch, longer, D, 1, &kv) ||
        !la_mul_ok(la_ffn_hidden_rows(batch * n), c->d_ff, &ffn))
        return false;
    sub = 2 * q; /* the layer's working copy of x and one sublayer output */
    /* MHA: Q (B·N·D), K and V (B·M·D each), the heads' output, which first holds each
     * projection (B·max(N, M)·D) */
    if (q > SIZE_MAX / 4 || kv > SIZE_MAX / 4) return false;
    size_t mha = q + 3 * kv, peak = mha > ffn ? mha : ffn;
    if (peak > SIZE_MAX - sub) return false;
    *elements = peak + sub;
    return true;
}

/* The order of these includes is the instantiation (core/real_f32.h). */
/* clang-format off */
#include "core/real_f32.h"
#include "layers/layers_tmpl.h"
#include "core/real_f64.h"
#include "layers/layers_tmpl.h"
#include "core/real_undef.h"
/* clang-format on */

/* ---------------------------------------------------------------- the public functions */

la_status la_layer_norm_f32(size_t rows, size_t d, const float *x, const float *gamma,
                            const float *beta, double eps, float *out)
{
    return layer_norm_f32(rows, d, x, gamma, beta, eps, out);
}

la_status la_layer_norm_f64(size_t rows, size_t d, const double *x, const double *gamma,
                            const double *beta, double eps, double *out)
{
    return layer_norm_f64(rows, d, x, gamma, beta, eps, out);
}

la_status la_ffn_f32(const la_layer_config *c, size_t rows, const float *x, const float *w1,
                     const float *b1, const float *w2, const float *b2, float *out)
{
    return ffn_f32(c, rows, x, w1, b1, w2, b2, out);
}

la_status la_ffn_f64(const la_layer_config *c, size_t rows, const double *x, const double *w1,
                     const double *b1, const double *w2, const double *b2, double *out)
{
    return ffn_f64(c, rows, x, w1, b1, w2, b2, out);
}

la_status la_mha_f32(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                     const float *x_q, const float *x_kv, int causal, const int64_t *key_lengths,
                     const float *in_w, const float *in_b, const float *out_w, const float *out_b,
                     float *out)
{
    return mha_f32(c, batch, n_queries, n_keys, x_q, x_kv, causal, key_lengths, in_w, in_b, out_w,
                   out_b, out);
}

la_status la_mha_f64(const la_layer_config *c, size_t batch, size_t n_queries, size_t n_keys,
                     const double *x_q, const double *x_kv, int causal, const int64_t *key_lengths,
                     const double *in_w, const double *in_b, const double *out_w,
                     const double *out_b, double *out)
{
    return mha_f64(c, batch, n_queries, n_keys, x_q, x_kv, causal, key_lengths, in_w, in_b, out_w,
                   out_b, out);
}

la_status la_encoder_layer_f32(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, const float *x, int causal, const int64_t *key_lengths,
                               float *out)
{
    return encoder_layer_f32(c, w, batch, n, x, causal, key_lengths, out);
}

la_status la_encoder_layer_f64(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, const double *x, int causal, const int64_t *key_lengths,
                               double *out)
{
    return encoder_layer_f64(c, w, batch, n, x, causal, key_lengths, out);
}

la_status la_decoder_layer_f32(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, size_t m, const float *x, const float *memory, int causal,
                               const int64_t *tgt_lengths, const int64_t *memory_lengths,
                               float *out)
{
    return decoder_layer_f32(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths,
                             out);
}

la_status la_decoder_layer_f64(const la_layer_config *c, const la_layer_weights *w, size_t batch,
                               size_t n, size_t m, const double *x, const double *memory,
                               int causal, const int64_t *tgt_lengths,
                               const int64_t *memory_lengths, double *out)
{
    return decoder_layer_f64(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths,
                             out);
}

la_status la_encoder_f32(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, const float *x, int causal, const int64_t *key_lengths,
                         float *out)
{
    return encoder_f32(c, w, batch, n, x, causal, key_lengths, out);
}

la_status la_encoder_f64(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, const double *x, int causal, const int64_t *key_lengths,
                         double *out)
{
    return encoder_f64(c, w, batch, n, x, causal, key_lengths, out);
}

la_status la_decoder_f32(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, size_t m, const float *x, const float *memory, int causal,
                         const int64_t *tgt_lengths, const int64_t *memory_lengths, float *out)
{
    return decoder_f32(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths, out);
}

la_status la_decoder_f64(const la_layer_config *c, const la_transformer_weights *w, size_t batch,
                         size_t n, size_t m, const double *x, const double *memory, int causal,
                         const int64_t *tgt_lengths, const int64_t *memory_lengths, double *out)
{
    return decoder_f64(c, w, batch, n, m, x, memory, causal, tgt_lengths, memory_lengths, out);
}

la_status la_transformer_f32(const la_layer_config *c, const la_transformer_weights *w,
                             size_t batch, size_t n_src, size_t n_tgt, const float *src,
                             const float *tgt, const int64_t *src_lengths, float *out)
{
    return transformer_f32(c, w, batch, n_src, n_tgt, src, tgt, src_lengths, out);
}

la_status la_transformer_f64(const la_layer_config *c, const la_transformer_weights *w,
                             size_t batch, size_t n_src, size_t n_tgt, const double *src,
                             const double *tgt, const int64_t *src_lengths, double *out)
{
    return transformer_f64(c, w, batch, n_src, n_tgt, src, tgt, src_lengths, out);
}

la_status la_add_positional_encoding_f32(size_t batch, size_t n, size_t d, size_t first_pos,
                                         float *x)
{
    return add_positional_encoding_f32(batch, n, d, first_pos, x);
}

la_status la_add_positional_encoding_f64(size_t batch, size_t n, size_t d, size_t first_pos,
                                         double *x)
{
    return add_positional_encoding_f64(batch, n, d, first_pos, x);
}

la_status la_embed_f32(size_t vocab, size_t d, const float *table, size_t count,
                       const int64_t *tokens, float *out)
{
    return embed_f32(vocab, d, table, count, tokens, out);
}

la_status la_embed_f64(size_t vocab, size_t d, const double *table, size_t count,
                       const int64_t *tokens, double *out)
{
    return embed_f64(vocab, d, table, count, tokens, out);
}

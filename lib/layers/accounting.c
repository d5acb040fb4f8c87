/* accounting.c — exact parameter counts of Transformer components as PyTorch counts
 * them, and the FLOP and memory model of a whole layer (projections, attention from
 * la_attention_cost, FFN, LayerNorm, residuals). */
#include "layers/layers_internal.h"

#include <string.h>

/* ---------------------------------------------------------------- parameters */

/* Overflow-checked uint64 arithmetic: *ok turns false on overflow. */
static uint64_t mul(uint64_t a, uint64_t b, bool *ok)
{
    if (a != 0 && b > UINT64_MAX / a) *ok = false;
    return *ok ? a * b : 0;
}

static uint64_t add(uint64_t a, uint64_t b, bool *ok)
{
    if (a > UINT64_MAX - b) *ok = false;
    return *ok ? a + b : 0;
}

la_status la_param_counts(const la_model_size *s, la_param_count *out)
{
    const unsigned known = LA_MODEL_NO_BIAS | LA_MODEL_RMS_NORM | LA_MODEL_NO_FINAL_NORM |
                           LA_MODEL_EMBEDDING_NORM | LA_MODEL_POOLER | LA_MODEL_UNTIED_HEAD;
    if (!s || !out || s->d_model == 0 || s->heads == 0 || s->d_ff == 0 ||
        s->d_model % s->heads != 0 || (s->options & ~known))
        return LA_EINVAL;
    bool ok = true;
    const uint64_t D = s->d_model, F = s->d_ff, H = s->heads;
    const uint64_t D2 = mul(D, D, &ok);
    const bool bias = !(s->options & LA_MODEL_NO_BIAS);
    la_param_count c;
    memset(&c, 0, sizeof c);

    /* multi-head attention: in_proj (3D, D) + (3D), out_proj (D, D) + (D) */
    c.mha = add(mul(4, D2, &ok), bias ? mul(4, D, &ok) : 0, &ok);
    /* FFN: linear1 (F, D) + (F), linear2 (D, F) + (D) */
    c.ffn = add(mul(2, mul(D, F, &ok), &ok), bias ? add(F, D, &ok) : 0, &ok);
    /* a norm: LayerNorm's γ and β, or RMSNorm's scale alone */
    c.layer_norm = s->options & LA_MODEL_RMS_NORM ? D : mul(2, D, &ok);
    c.encoder_layer = add(add(c.mha, c.ffn, &ok), mul(2, c.layer_norm, &ok), &ok);
    c.decoder_layer = add(add(mul(2, c.mha, &ok), c.ffn, &ok), mul(3, c.layer_norm, &ok), &ok);
    /* stacks: L layers and the final norm (none without layers, or post-LN) */
    const uint64_t final_norm = s->options & LA_MODEL_NO_FINAL_NORM ? 0 : c.layer_norm;
    const uint64_t stacks = (s->encoder_layers != 0) + (s->decoder_layers != 0);
    if (s->encoder_layers)
        c.encoder = add(mul(s->encoder_layers, c.encoder_layer, &ok), final_norm, &ok);
    if (s->decoder_layers)
        c.decoder = add(mul(s->decoder_layers, c.decoder_layer, &ok), final_norm, &ok);
    /* embeddings: one token table (shared by the stacks), learned positions, segments */
    c.embedding = mul(s->vocab, D, &ok);
    c.positional = mul(s->learned_positions, D, &ok);
    c.token_type = mul(s->token_types, D, &ok);
    /* T5: a (buckets, H) bias table in each stack's first layer */
    c.relative_position = mul(stacks, mul(s->relative_buckets, H, &ok), &ok);
    if (s->options & LA_MODEL_EMBEDDING_NORM) c.embedding_norm = mul(stacks, c.layer_norm, &ok);
    /* BERT's pooler: dense (D, D) + (D) on the first token */
    if (s->options & LA_MODEL_POOLER) c.pooler = add(D2, bias ? D : 0, &ok);
    /* an output projection (V, D) of its own; a tied head reuses the token table */
    if (s->options & LA_MODEL_UNTIED_HEAD) c.head = c.embedding;
    c.total = add(add(c.encoder, c.decoder, &ok), add(c.embedding, c.positional, &ok), &ok);
    c.total = add(c.total, add(c.token_type, c.relative_position, &ok), &ok);
    c.total = add(c.total, add(c.embedding_norm, add(c.pooler, c.head, &ok), &ok), &ok);
    /* the D² terms only, d_ff = 4D: 12D² per encoder layer, 16D² per decoder layer */
    c.approx_12d2 = add(mul(mul(12, D2, &ok), s->encoder_layers, &ok),
                        mul(mul(16, D2, &ok), s->decoder_layers, &ok), &ok);
    if (!ok) return LA_EOVERFLOW;
    uint64_t exact = c.encoder + c.decoder;
    c.approx_gap = exact ? ((double)exact - (double)c.approx_12d2) / (double)exact : 0;
    *out = c;
    return LA_OK;
}

/* ---------------------------------------------------------------- FLOPs and bytes */

/* y = x Wᵀ + b over `rows` rows, D inputs, `outputs` outputs: 2 per multiply-add and one
 * add per bias element. */
static double projection_flops(double rows, double d, double outputs)
{
    return 2 * rows * d * outputs + rows * outputs;
}

la_status la_layer_cost_model(const la_layer_config *c, int decoder, size_t batch, size_t n,
                              size_t m, int causal, la_dtype dtype, la_layer_cost *out)
{
    la_status st = la_layer_config_check(c);
    if (st != LA_OK) return st;
    if (!out || batch == 0 || n == 0 || (decoder && m == 0) || (decoder != 0 && decoder != 1) ||
        (causal != 0 && causal != 1) || (dtype != LA_FLOAT32 && dtype != LA_FLOAT64))
        return LA_EINVAL;
    if (!decoder) m = n;
    la_layer_cost r;
    memset(&r, 0, sizeof r);
    const double B = (double)batch, N = (double)n, M = (double)m;
    const double D = (double)c->d_model, F = (double)c->d_ff;
    const double rows = B * N, elem = dtype == LA_FLOAT32 ? 4 : 8;

    /* self-attention: Q, K, V and out projections over the N rows, then the kernel */
    la_problem p;
    la_layer_attention_problem(c, batch, n, n, causal, NULL, &p);
    if ((st = la_attention_cost(c->attention, &p, dtype, &r.self_attention)) != LA_OK) return st;
    r.projections = 4 * projection_flops(rows, D, D);
    r.attention = r.self_attention.flops_total;
    r.workspace_bytes = r.self_attention.workspace_bytes;
    if (decoder) {
        /* cross-attention: Q and out over the N rows, K and V over the M memory rows */
        la_layer_attention_problem(c, batch, n, m, 0, NULL, &p);
        if ((st = la_attention_cost(la_layer_cross_kernel(c), &p, dtype, &r.cross_attention)) !=
            LA_OK)
            return st;
        r.projections += 2 * projection_flops(rows, D, D) + 2 * projection_flops(B * M, D, D);
        r.attention += r.cross_attention.flops_total;
        if (r.cross_attention.workspace_bytes > r.workspace_bytes)
            r.workspace_bytes = r.cross_attention.workspace_bytes;
    }
    /* FFN: linear1, activation, linear2 */
    r.ffn = projection_flops(rows, D, F) + rows * F + projection_flops(rows, F, D);
    /* LayerNorm per row: mean D + 1, variance 3D + 1, 1/√(var + ε) 3, affine 4D */
    const double norms = decoder ? 3 : 2;
    r.layer_norm = norms * rows * (8 * D + 5);
    r.residual = norms * rows * D;
    r.total = r.projections + r.attention + r.ffn + r.layer_norm + r.residual;

    la_model_size size = {c->d_model, c->heads, c->d_ff, decoder ? 0 : 1, decoder ? 1 : 0, 0, 0,
                          0,          0,        0};
    la_param_count params;
    if ((st = la_param_counts(&size, &params)) != LA_OK) return st;
    r.weight_bytes = (double)(decoder ? params.decoder_layer : params.encoder_layer) * elem;
    size_t scratch;
    if (!la_layer_scratch_elements(c, batch, n, m, &scratch)) return LA_EOVERFLOW;
    r.activation_bytes = (double)scratch * elem;
    *out = r;
    return LA_OK;
}

/* decode.c — the training model (train.h) one token at a time, for generation: the logits
 * of token t from tokens 0 .. t, per element type. Each token runs the rows of
 * model_typed.c's forward that belong to it, with the same layers of train_layers.h:
 *   x = embedding[token] + P[t]
 *   per layer, pre-LN  a = norm1(x), s = x + attn(a), next = s + ffn(norm2(s))
 *              post-LN s = x + attn(x), u = norm1(s), next = norm2(u + ffn(u))
 *   logits = norm(x) Wᵀ + b
 * attn(a): [q k v] (3D) = a W_inᵀ + b_in, each (H, d_h); o (H, d_h) the heads' output for
 * the one query; attn = o W_outᵀ + b_out. The heads' output comes from
 *   a row with LA_CAP_STEP   its recurrent state per layer (la_linear_step), which holds
 *                            the keys and values of tokens 0 .. t
 *   any other row            a KV cache per layer, K and V (H, capacity, d_h) each: token t
 *                            writes row t, then the kernel runs the one query over the t + 1
 *                            cached keys, causal bottom-right (N = 1, M = t + 1: the query at
 *                            position t, so local's window ends at it), reading the cache
 *                            through the problem's strides.
 * Scratch per decoder: x, a, s, tmp, o (D each), qkv (3D), pre (d_ff). */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/model_internal.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct la_train_decoder {
    const la_train_model *m;
    size_t capacity, position;
    la_linear_state **state; /* per layer, a row with LA_CAP_STEP; else NULL */
    void *cache;             /* else per layer K then V, (H, capacity, d_h) each */
    void *scratch;           /* x, a, s, tmp, o (D each), qkv (3D), pre (d_ff) */
};

#define DATA(t) ((const REAL *)(t)->data)
#define LW(t) DATA(la_train_layer_tensor(m, i, (t)))

/* tmp = attn(a) of layer i for the token at d->position. */
static la_status attend(la_train_decoder *d, size_t i, const REAL *a, REAL *qkv, REAL *o, REAL *tmp)
{
    const la_train_model *m = d->m;
    const la_train_config *c = &m->c;
    const size_t D = c->d_model, H = c->heads, dh = D / H, t = d->position;
    la_status st =
        FN(la_train_dense_forward)(1, D, 3 * D, a, LW(LA_TRAIN_IN_W), LW(LA_TRAIN_IN_B), qkv);
    if (st != LA_OK) return st;
    if (d->state) {
        st = la_linear_step(d->state[i], qkv, qkv + D, qkv + 2 * D, o);
    } else {
        const size_t per = H * d->capacity * dh; /* one layer's K (and V) */
        REAL *k = (REAL *)d->cache + 2 * i * per, *v = k + per;
        for (size_t h = 0; h < H; h++) {
            memcpy(k + (h * d->capacity + t) * dh, qkv + D + h * dh, dh * sizeof *k);
            memcpy(v + (h * d->capacity + t) * dh, qkv + 2 * D + h * dh, dh * sizeof *v);
        }
        la_problem p;
        la_train_attention_problem(c, 1, &p);
        p.n_queries = 1;
        p.n_keys = t + 1;
        p.causal_align = LA_CAUSAL_BOTTOM_RIGHT;
        p.stride_k = p.stride_v = (la_strides){per, d->capacity * dh, dh};
        st = la_attention(c->attention, &p, REAL_DTYPE, qkv, k, v, o);
    }
    if (st == LA_OK)
        st = FN(la_train_dense_forward)(1, D, D, o, LW(LA_TRAIN_OUT_W), LW(LA_TRAIN_OUT_B), tmp);
    return st;
}

/* x = layer i of x, the token at d->position. */
static la_status layer(la_train_decoder *d, size_t i, REAL *x)
{
    const la_train_model *m = d->m;
    const la_train_config *c = &m->c;
    const size_t D = c->d_model, F = c->d_ff;
    const double eps = c->ln_eps;
    REAL *a = x + D, *s = a + D, *tmp = s + D, *o = tmp + D, *qkv = o + D, *pre = qkv + 3 * D;
    double mean, rstd;
    la_status st;
    if (c->pre_ln) {
        st = FN(la_train_layer_norm_forward)(1, D, x, LW(LA_TRAIN_N1_W), LW(LA_TRAIN_N1_B), eps, a,
                                             &mean, &rstd);
        if (st == LA_OK) st = attend(d, i, a, qkv, o, tmp);
        if (st == LA_OK) st = FN(la_train_add)(D, x, tmp, s);
        if (st == LA_OK)
            st = FN(la_train_layer_norm_forward)(1, D, s, LW(LA_TRAIN_N2_W), LW(LA_TRAIN_N2_B), eps,
                                                 a, &mean, &rstd);
        if (st == LA_OK)
            st = FN(la_train_ffn_forward)(1, D, F, c->gelu, a, LW(LA_TRAIN_L1_W), LW(LA_TRAIN_L1_B),
                                          LW(LA_TRAIN_L2_W), LW(LA_TRAIN_L2_B), pre, tmp);
        if (st == LA_OK) st = FN(la_train_add)(D, s, tmp, x);
    } else {
        st = attend(d, i, x, qkv, o, tmp);
        if (st == LA_OK) st = FN(la_train_add)(D, x, tmp, s);
        if (st == LA_OK)
            st = FN(la_train_layer_norm_forward)(1, D, s, LW(LA_TRAIN_N1_W), LW(LA_TRAIN_N1_B), eps,
                                                 a, &mean, &rstd);
        if (st == LA_OK)
            st = FN(la_train_ffn_forward)(1, D, F, c->gelu, a, LW(LA_TRAIN_L1_W), LW(LA_TRAIN_L1_B),
                                          LW(LA_TRAIN_L2_W), LW(LA_TRAIN_L2_B), pre, tmp);
        if (st == LA_OK) st = FN(la_train_add)(D, a, tmp, s);
        if (st == LA_OK)
            st = FN(la_train_layer_norm_forward)(1, D, s, LW(LA_TRAIN_N2_W), LW(LA_TRAIN_N2_B), eps,
                                                 x, &mean, &rstd);
    }
    return st;
}

#undef LW

static la_status step(la_train_decoder *d, int32_t token, REAL *logits)
{
    const la_train_model *m = d->m;
    const la_train_config *c = &m->c;
    const size_t D = c->d_model, t = d->position;
    REAL *x = d->scratch, *y = x + D;
    const la_train_tensor *emb = &m->list[m->embedding], *norm = &m->list[m->norm];
    const la_train_tensor *head_w = m->head_w == LA_TRAIN_NONE ? emb : &m->list[m->head_w];
    la_status st;
    memcpy(x, DATA(emb) + (size_t)token * D, D * sizeof *x);
    if (m->positions != LA_TRAIN_NONE) {
        const REAL *p = DATA(&m->list[m->positions]) + t * D;
        for (size_t j = 0; j < D; j++)
            x[j] += p[j];
        st = LA_OK;
    } else {
        st = la_add_positional_encoding(REAL_DTYPE, 1, 1, D, t, x);
    }
    for (size_t i = 0; i < c->layers && st == LA_OK; i++)
        st = layer(d, i, x);
    double mean, rstd;
    if (st == LA_OK)
        st = FN(la_train_layer_norm_forward)(1, D, x, DATA(norm), DATA(norm + 1), c->ln_eps, y,
                                             &mean, &rstd);
    if (st == LA_OK)
        st = FN(la_train_dense_forward)(1, D, c->vocab, y, DATA(head_w), DATA(&m->list[m->head_b]),
                                        logits);
    for (size_t j = 0; j < c->vocab && st == LA_OK; j++)
        if (!isfinite(logits[j])) st = LA_ERANGE;
    return st;
}

#if REAL_IS_F32
la_status la_train_decoder_step_f32(la_train_decoder *d, int32_t token, float *logits)
{
    return step(d, token, logits);
}
#else
la_status la_train_decoder_step_f64(la_train_decoder *d, int32_t token, double *logits)
{
    return step(d, token, logits);
}
#endif

/* ---------------------------------------------------------------- the dtype-free part */
#if REAL_IS_F32
la_status la_train_decoder_create(la_train_decoder **out, const la_train_model *m, size_t capacity)
{
    if (!out) return LA_EINVAL;
    *out = NULL;
    if (!m || capacity == 0) return LA_EINVAL;
    const la_train_config *c = &m->c;
    if (c->learned_positions && capacity > c->seq_len) return LA_EINVAL;
    const size_t D = c->d_model, elem = c->dtype == LA_FLOAT32 ? 4 : 8;
    size_t scratch, cache = 0;
    if (!la_mul_ok(D, 8, &scratch) || scratch > SIZE_MAX - c->d_ff ||
        !la_mul_ok(scratch + c->d_ff, elem, &scratch))
        return LA_EOVERFLOW;
    const int stepped = (la_kernel_get(c->attention)->caps & LA_CAP_STEP) != 0;
    if (!stepped && (!la_mul_ok(capacity, D, &cache) || !la_mul_ok(cache, 2 * c->layers, &cache) ||
                     !la_mul_ok(cache, elem, &cache)))
        return LA_EOVERFLOW;
    la_train_decoder *d = calloc(1, sizeof *d);
    if (!d) return LA_ENOMEM;
    d->m = m;
    d->capacity = capacity;
    d->scratch = malloc(scratch);
    la_status st = d->scratch ? LA_OK : LA_ENOMEM;
    if (st == LA_OK && stepped) {
        d->state = calloc(c->layers, sizeof *d->state);
        la_problem p;
        la_train_attention_problem(c, 1, &p);
        st = d->state ? LA_OK : LA_ENOMEM;
        for (size_t i = 0; i < c->layers && st == LA_OK; i++)
            st = la_linear_state_create(&d->state[i], c->attention, &p, c->dtype);
    } else if (st == LA_OK) {
        d->cache = malloc(cache);
        st = d->cache ? LA_OK : LA_ENOMEM;
    }
    if (st != LA_OK) {
        la_train_decoder_free(d);
        return st;
    }
    *out = d;
    return LA_OK;
}

void la_train_decoder_free(la_train_decoder *d)
{
    if (!d) return;
    if (d->state)
        for (size_t i = 0; i < d->m->c.layers; i++)
            la_linear_state_free(d->state[i]);
    free(d->state);
    free(d->cache);
    free(d->scratch);
    free(d);
}

size_t la_train_decoder_position(const la_train_decoder *d)
{
    return d ? d->position : 0;
}

la_status la_train_decoder_step(la_train_decoder *d, int32_t token, void *logits)
{
    if (!d || !logits) return LA_EINVAL;
    if (token < 0 || (size_t)token >= d->m->c.vocab || d->position >= d->capacity) return LA_EINVAL;
    const la_status st = d->m->c.dtype == LA_FLOAT32 ? la_train_decoder_step_f32(d, token, logits)
                                                     : la_train_decoder_step_f64(d, token, logits);
    if (st == LA_OK) d->position++;
    return st;
}
#endif

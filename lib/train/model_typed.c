/* model_typed.c — the model's forward and backward pass per element type (train.h), over
 * the layers of train_layers.h. R = B·N rows, D, F = d_ff, V; per layer the saved arrays
 * x, s1, s2, s3 (R, D) (train.h, SAVED STATE: pre-LN a, s, f; post-LN s, u, s'), q, k, v, o
 * (B, H, N, D/H), lse (B, H, N) or none, pre (R, F); norm statistics (R) doubles ×4.
 *   pre-LN   a = norm1(x), s = x + attn(a), f = norm2(s), next = s + ffn(f)
 *   post-LN  s = x + attn(x), u = norm1(s), s' = u + ffn(u), next = norm2(s')
 * then fin = the last next, y = norm(fin), logits = y Wᵀ + b, the loss. The backward runs
 * the same steps in reverse with the residual stream's gradient in dstream. */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/model_internal.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One layer's saved state. */
typedef struct {
    REAL *x, *s1, *s2, *s3, *q, *k, *v, *o, *lse, *pre;
    double *mean1, *rstd1, *mean2, *rstd2;
} saved_layer;

#define DATA(t) ((REAL *)(t)->data)
#define GRAD(t) ((REAL *)(t)->grad)

/* The residual sums (model_internal.h). */
la_status FN(la_train_add)(size_t n, const REAL *a, const REAL *b, REAL *out)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = a[i] + b[i];
        bad |= !isfinite(out[i]);
    }
    return bad ? LA_ERANGE : LA_OK;
}

/* The layer's tensors as REAL. */
#define LW(t) DATA(la_train_layer_tensor(m, i, (t)))
#define LG(t) GRAD(la_train_layer_tensor(m, i, (t)))

static la_status layer_forward(la_train_model *m, size_t i, const la_problem *p,
                               const saved_layer *s, REAL *next, REAL *tmp)
{
    const la_train_config *c = &m->c;
    const size_t R = p->batch * c->seq_len, D = c->d_model, F = c->d_ff;
    const double eps = c->ln_eps;
    la_status st;
    if (c->pre_ln) {
        st = FN(la_train_layer_norm_forward)(R, D, s->x, LW(LA_TRAIN_N1_W), LW(LA_TRAIN_N1_B), eps,
                                             s->s1, s->mean1, s->rstd1);
        if (st == LA_OK)
            st = FN(la_train_mha_forward)(c->attention, p, s->s1, LW(LA_TRAIN_IN_W),
                                          LW(LA_TRAIN_IN_B), LW(LA_TRAIN_OUT_W), LW(LA_TRAIN_OUT_B),
                                          s->q, s->k, s->v, s->o, s->lse, tmp);
        if (st == LA_OK) st = FN(la_train_add)(R * D, s->x, tmp, s->s2);
        if (st == LA_OK)
            st = FN(la_train_layer_norm_forward)(R, D, s->s2, LW(LA_TRAIN_N2_W), LW(LA_TRAIN_N2_B),
                                                 eps, s->s3, s->mean2, s->rstd2);
        if (st == LA_OK)
            st = FN(la_train_ffn_forward)(R, D, F, c->gelu, s->s3, LW(LA_TRAIN_L1_W),
                                          LW(LA_TRAIN_L1_B), LW(LA_TRAIN_L2_W), LW(LA_TRAIN_L2_B),
                                          s->pre, tmp);
        if (st == LA_OK) st = FN(la_train_add)(R * D, s->s2, tmp, next);
    } else {
        st = FN(la_train_mha_forward)(c->attention, p, s->x, LW(LA_TRAIN_IN_W), LW(LA_TRAIN_IN_B),
                                      LW(LA_TRAIN_OUT_W), LW(LA_TRAIN_OUT_B), s->q, s->k, s->v,
                                      s->o, s->lse, tmp);
        if (st == LA_OK) st = FN(la_train_add)(R * D, s->x, tmp, s->s1);
        if (st == LA_OK)
            st = FN(la_train_layer_norm_forward)(R, D, s->s1, LW(LA_TRAIN_N1_W), LW(LA_TRAIN_N1_B),
                                                 eps, s->s2, s->mean1, s->rstd1);
        if (st == LA_OK)
            st = FN(la_train_ffn_forward)(R, D, F, c->gelu, s->s2, LW(LA_TRAIN_L1_W),
                                          LW(LA_TRAIN_L1_B), LW(LA_TRAIN_L2_W), LW(LA_TRAIN_L2_B),
                                          s->pre, tmp);
        if (st == LA_OK) st = FN(la_train_add)(R * D, s->s2, tmp, s->s3);
        if (st == LA_OK)
            st = FN(la_train_layer_norm_forward)(R, D, s->s3, LW(LA_TRAIN_N2_W), LW(LA_TRAIN_N2_B),
                                                 eps, next, s->mean2, s->rstd2);
    }
    return st;
}

/* dstream: ∂loss/∂next on entry, ∂loss/∂x on return; the layer's gradients added. */
static la_status layer_backward(la_train_model *m, size_t i, const la_problem *p,
                                const saved_layer *s, REAL *dstream, REAL *tmp, REAL *tmp2)
{
    const la_train_config *c = &m->c;
    const size_t R = p->batch * c->seq_len, D = c->d_model, F = c->d_ff;
    la_status st;
    if (c->pre_ln) {
        /* next = s + ffn(f), f = norm2(s): ds = dnext + norm2ᵀ(ffnᵀ(dnext)) */
        st = FN(la_train_ffn_backward)(R, D, F, c->gelu, s->s3, LW(LA_TRAIN_L1_W),
                                       LW(LA_TRAIN_L2_W), s->pre, dstream, tmp, LG(LA_TRAIN_L1_W),
                                       LG(LA_TRAIN_L1_B), LG(LA_TRAIN_L2_W), LG(LA_TRAIN_L2_B));
        if (st == LA_OK)
            st =
                FN(la_train_layer_norm_backward)(R, D, s->s2, LW(LA_TRAIN_N2_W), s->mean2, s->rstd2,
                                                 tmp, tmp2, LG(LA_TRAIN_N2_W), LG(LA_TRAIN_N2_B));
        if (st == LA_OK) st = FN(la_train_add)(R * D, dstream, tmp2, dstream);
        /* s = x + attn(a), a = norm1(x): dx = ds + norm1ᵀ(attnᵀ(ds)) */
        if (st == LA_OK)
            st = FN(la_train_mha_backward)(c->attention, p, s->s1, LW(LA_TRAIN_IN_W),
                                           LW(LA_TRAIN_OUT_W), s->q, s->k, s->v, s->o, s->lse,
                                           dstream, tmp, LG(LA_TRAIN_IN_W), LG(LA_TRAIN_IN_B),
                                           LG(LA_TRAIN_OUT_W), LG(LA_TRAIN_OUT_B));
        if (st == LA_OK)
            st = FN(la_train_layer_norm_backward)(R, D, s->x, LW(LA_TRAIN_N1_W), s->mean1, s->rstd1,
                                                  tmp, tmp2, LG(LA_TRAIN_N1_W), LG(LA_TRAIN_N1_B));
        if (st == LA_OK) st = FN(la_train_add)(R * D, dstream, tmp2, dstream);
    } else {
        /* next = norm2(s'): ds' */
        st = FN(la_train_layer_norm_backward)(R, D, s->s3, LW(LA_TRAIN_N2_W), s->mean2, s->rstd2,
                                              dstream, tmp, LG(LA_TRAIN_N2_W), LG(LA_TRAIN_N2_B));
        /* s' = u + ffn(u): du = ds' + ffnᵀ(ds') */
        if (st == LA_OK)
            st = FN(la_train_ffn_backward)(R, D, F, c->gelu, s->s2, LW(LA_TRAIN_L1_W),
                                           LW(LA_TRAIN_L2_W), s->pre, tmp, tmp2, LG(LA_TRAIN_L1_W),
                                           LG(LA_TRAIN_L1_B), LG(LA_TRAIN_L2_W), LG(LA_TRAIN_L2_B));
        if (st == LA_OK) st = FN(la_train_add)(R * D, tmp, tmp2, tmp);
        /* u = norm1(s): ds */
        if (st == LA_OK)
            st = FN(la_train_layer_norm_backward)(R, D, s->s1, LW(LA_TRAIN_N1_W), s->mean1,
                                                  s->rstd1, tmp, dstream, LG(LA_TRAIN_N1_W),
                                                  LG(LA_TRAIN_N1_B));
        /* s = x + attn(x): dx = ds + attnᵀ(ds) */
        if (st == LA_OK)
            st = FN(la_train_mha_backward)(c->attention, p, s->x, LW(LA_TRAIN_IN_W),
                                           LW(LA_TRAIN_OUT_W), s->q, s->k, s->v, s->o, s->lse,
                                           dstream, tmp, LG(LA_TRAIN_IN_W), LG(LA_TRAIN_IN_B),
                                           LG(LA_TRAIN_OUT_W), LG(LA_TRAIN_OUT_B));
        if (st == LA_OK) st = FN(la_train_add)(R * D, dstream, tmp, dstream);
    }
    return st;
}

#undef LW
#undef LG

static la_status run(la_train_model *m, size_t batch, const int32_t *tokens, const int32_t *targets,
                     int backward, double *loss, size_t *correct, size_t *scored, REAL *logits_out)
{
    const la_train_config *c = &m->c;
    const size_t L = c->layers, D = c->d_model, V = c->vocab, H = c->heads, N = c->seq_len;
    size_t lr, ld, fr, fd, R, rd, rv, nreal, ndouble;
    if (!la_train_saved_counts(c, batch, &lr, &ld, &fr, &fd)) return LA_EOVERFLOW;
    R = batch * N;
    rd = R * D;
    /* saved per layer and final, then scratch: tmp, tmp2, dstream (R·D each), logits (R·V) */
    if (!la_mul_ok(R, V, &rv) || !la_mul_ok(lr, L, &nreal) || nreal > SIZE_MAX - fr - 3 * rd ||
        (nreal += fr + 3 * rd) > SIZE_MAX - rv || !la_mul_ok(nreal + rv, sizeof(REAL), &nreal) ||
        !la_mul_ok(ld, L, &ndouble) || ndouble > SIZE_MAX - fd ||
        !la_mul_ok(ndouble + fd, sizeof(double), &ndouble))
        return LA_EOVERFLOW;
    la_problem p;
    la_train_attention_problem(c, batch, &p);
    la_status st = la_problem_check(&p);
    if (st != LA_OK) return st;
    const int has_lse = (la_kernel_get(c->attention)->caps & LA_CAP_LSE) != 0;

    REAL *arena = malloc(nreal);
    double *stats = malloc(ndouble);
    saved_layer *layer = calloc(L, sizeof *layer);
    if (!arena || !stats || !layer) {
        st = LA_ENOMEM;
        goto done;
    }
    REAL *r = arena;
    double *d = stats;
    for (size_t i = 0; i < L; i++) {
        saved_layer *s = &layer[i];
        REAL **parts[] = {&s->x, &s->s1, &s->s2, &s->s3, &s->q, &s->k, &s->v, &s->o};
        for (size_t j = 0; j < 8; j++, r += rd)
            *parts[j] = r;
        s->lse = has_lse ? r : NULL;
        r += has_lse ? batch * H * N : 0;
        s->pre = r;
        r += R * c->d_ff;
        s->mean1 = d, s->rstd1 = d + R, s->mean2 = d + 2 * R, s->rstd2 = d + 3 * R;
        d += 4 * R;
    }
    REAL *fin = r, *y = r + rd, *tmp = r + 2 * rd, *tmp2 = r + 3 * rd, *dstream = r + 4 * rd,
         *logits = r + 5 * rd;
    double *mean_f = d, *rstd_f = d + R;

    /* ---- forward */
    la_train_tensor *emb = &m->list[m->embedding], *norm = &m->list[m->norm],
                    *head_b = &m->list[m->head_b];
    la_train_tensor *pos = m->positions == LA_TRAIN_NONE ? NULL : &m->list[m->positions];
    la_train_tensor *head_w = m->head_w == LA_TRAIN_NONE ? emb : &m->list[m->head_w];
    st = FN(la_train_embedding_forward)(batch, N, V, D, tokens, DATA(emb),
                                        pos ? DATA(pos) : (const REAL *)m->sinusoid, layer[0].x);
    for (size_t i = 0; i < L && st == LA_OK; i++)
        st = layer_forward(m, i, &p, &layer[i], i + 1 < L ? layer[i + 1].x : fin, tmp);
    if (st == LA_OK)
        st = FN(la_train_layer_norm_forward)(R, D, fin, DATA(norm), DATA(norm + 1), c->ln_eps, y,
                                             mean_f, rstd_f);
    if (st == LA_OK)
        st = FN(la_train_dense_forward)(R, D, V, y, DATA(head_w), DATA(head_b), logits);
    if (st == LA_OK && logits_out) memcpy(logits_out, logits, rv * sizeof *logits);
    size_t count = 0, right = 0;
    for (size_t i = 0; i < R; i++)
        count += targets[i] >= 0;
    double sum = 0;
    if (st == LA_OK)
        st = FN(la_train_cross_entropy)(R, V, logits, targets, count ? 1.0 / (double)count : 0.0,
                                        &sum, &right, &count);
    const double mean_loss = count ? sum / (double)count : 0.0;
    if (st == LA_OK && !isfinite(mean_loss)) st = LA_ERANGE;
    if (st != LA_OK || !backward) goto done;

    /* ---- backward: logits now hold ∂loss/∂logits */
    for (size_t t = 0; t < m->count; t++)
        memset(m->list[t].grad, 0, m->list[t].numel * sizeof(REAL));
    st = FN(la_train_dense_backward)(R, D, V, y, DATA(head_w), logits, tmp, GRAD(head_w),
                                     GRAD(head_b));
    if (st == LA_OK)
        st = FN(la_train_layer_norm_backward)(R, D, fin, DATA(norm), mean_f, rstd_f, tmp, dstream,
                                              GRAD(norm), GRAD(norm + 1));
    for (size_t i = L; i-- > 0 && st == LA_OK;)
        st = layer_backward(m, i, &p, &layer[i], dstream, tmp, tmp2);
    if (st == LA_OK)
        st = FN(la_train_embedding_backward)(batch, N, V, D, tokens, dstream, GRAD(emb),
                                             pos ? GRAD(pos) : NULL);

done:
    if (st == LA_OK) {
        if (loss) *loss = mean_loss;
        if (correct) *correct = right;
        if (scored) *scored = count;
    }
    free(arena);
    free(stats);
    free(layer);
    return st;
}

#if REAL_IS_F32
la_status la_train_run_f32(la_train_model *m, size_t batch, const int32_t *tokens,
                           const int32_t *targets, int backward, double *loss, size_t *correct,
                           size_t *scored, float *logits)
{
    return run(m, batch, tokens, targets, backward, loss, correct, scored, logits);
}
#else
la_status la_train_run_f64(la_train_model *m, size_t batch, const int32_t *tokens,
                           const int32_t *targets, int backward, double *loss, size_t *correct,
                           size_t *scored, double *logits)
{
    return run(m, batch, tokens, targets, backward, loss, correct, scored, logits);
}
#endif

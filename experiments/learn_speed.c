/* learn_speed.c — where a training step's time goes (learn.h): the whole step timed,
 * then each layer kind alone on the step's shapes (train/train_layers.h), float32. */
#include "learn.h"

#include "common/cli.h"
#include "common/inputs.h"
#include "common/timer.h"
#include "train/train_layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Everything the bodies touch. */
typedef struct {
    const learn_setup *s;
    la_train_config c;
    size_t rows, batch;
    la_train_task *task;
    la_train_model *model;
    la_train_tensor *list;
    size_t count;
    la_train_adamw adamw;
    int32_t *tokens, *targets;
    la_problem p;
    /* random arrays: x, y, dx, dy (rows × max(3D, F, V)) and the weights */
    float *x, *y, *dx, *dy, *w1, *w2, *dw1, *dw2, *b, *db, *pre;
    float *q, *k, *v, *o, *lse, *dq, *dk, *dv, *gamma, *beta;
    double *mean, *rstd;
} bench_state;

static int body_step(void *ctx)
{
    bench_state *b = ctx;
    double loss, norm;
    la_status st =
        la_train_forward_backward(b->model, b->batch, b->tokens, b->targets, &loss, NULL, NULL);
    if (!st) st = la_train_clip_grad_norm(b->list, b->count, LA_FLOAT32, b->s->clip, &norm);
    if (!st) st = la_train_adamw_step(&b->adamw, b->list, b->count, 1e-4);
    return (int)st;
}

static int body_attention(void *ctx)
{
    bench_state *b = ctx;
    const int has_lse = (la_kernel_get(b->c.attention)->caps & LA_CAP_LSE) != 0;
    la_status st =
        has_lse
            ? la_attention_lse(b->c.attention, &b->p, LA_FLOAT32, b->q, b->k, b->v, b->o, b->lse)
            : la_attention(b->c.attention, &b->p, LA_FLOAT32, b->q, b->k, b->v, b->o);
    if (!st)
        st = la_attention_backward(b->c.attention, &b->p, LA_FLOAT32, b->q, b->k, b->v, b->o,
                                   has_lse ? b->lse : NULL, b->dy, b->dq, b->dk, b->dv);
    return (int)st;
}

static int body_projections(void *ctx)
{
    bench_state *b = ctx;
    const size_t r = b->rows, d = b->c.d_model;
    la_status st = la_train_dense_forward_f32(r, d, 3 * d, b->x, b->w1, b->b, b->y);
    if (!st) st = la_train_dense_forward_f32(r, d, d, b->x, b->w2, b->b, b->y);
    if (!st) st = la_train_dense_backward_f32(r, d, d, b->x, b->w2, b->dy, b->dx, b->dw2, b->db);
    if (!st)
        st = la_train_dense_backward_f32(r, d, 3 * d, b->x, b->w1, b->dy, b->dx, b->dw1, b->db);
    return (int)st;
}

static int body_ffn(void *ctx)
{
    bench_state *b = ctx;
    const size_t r = b->rows, d = b->c.d_model, f = b->c.d_ff;
    la_status st =
        la_train_ffn_forward_f32(r, d, f, b->c.gelu, b->x, b->w1, b->b, b->w2, b->b, b->pre, b->y);
    if (!st)
        st = la_train_ffn_backward_f32(r, d, f, b->c.gelu, b->x, b->w1, b->w2, b->pre, b->dy, b->dx,
                                       b->dw1, b->db, b->dw2, b->db);
    return (int)st;
}

static int body_norm(void *ctx)
{
    bench_state *b = ctx;
    const size_t r = b->rows, d = b->c.d_model;
    la_status st = la_train_layer_norm_forward_f32(r, d, b->x, b->gamma, b->beta, b->c.ln_eps, b->y,
                                                   b->mean, b->rstd);
    if (!st)
        st = la_train_layer_norm_backward_f32(r, d, b->x, b->gamma, b->mean, b->rstd, b->dy, b->dx,
                                              b->dw1, b->db);
    return (int)st;
}

static int body_head(void *ctx)
{
    bench_state *b = ctx;
    const size_t r = b->rows, d = b->c.d_model, vocab = b->c.vocab, n = b->c.seq_len;
    double loss;
    size_t correct, scored;
    la_status st =
        la_train_embedding_forward_f32(b->batch, n, vocab, d, b->tokens, b->w1, NULL, b->x);
    if (!st) st = la_train_dense_forward_f32(r, d, vocab, b->x, b->w2, b->b, b->y);
    if (!st)
        st = la_train_cross_entropy_f32(r, vocab, b->y, b->targets, 1.0 / (double)r, &loss,
                                        &correct, &scored);
    if (!st) st = la_train_dense_backward_f32(r, d, vocab, b->x, b->w2, b->y, b->dx, b->dw2, b->db);
    if (!st)
        st = la_train_embedding_backward_f32(b->batch, n, vocab, d, b->tokens, b->dx, b->dw1, NULL);
    return (int)st;
}

static int body_optimizer(void *ctx)
{
    bench_state *b = ctx;
    double norm;
    la_status st = la_train_clip_grad_norm(b->list, b->count, LA_FLOAT32, b->s->clip, &norm);
    if (!st) st = la_train_adamw_step(&b->adamw, b->list, b->count, 1e-4);
    return (int)st;
}

static void state_free(bench_state *b)
{
    la_train_task_free(b->task);
    la_train_model_free(b->model);
    la_train_adamw_free(&b->adamw);
    void *arrays[] = {b->tokens, b->targets, b->x,    b->y,   b->dx, b->dy,  b->w1,
                      b->w2,     b->dw1,     b->dw2,  b->b,   b->db, b->pre, b->q,
                      b->k,      b->v,       b->o,    b->lse, b->dq, b->dk,  b->dv,
                      b->gamma,  b->beta,    b->mean, b->rstd};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        free(arrays[i]);
}

/* The model, a batch and random arrays for the layers. LA_OK or the first failure. */
static la_status state_make(bench_state *b, const learn_setup *s, const char **why)
{
    memset(b, 0, sizeof *b);
    b->s = s;
    la_status st = la_train_task_create(&s->task, &b->task, why);
    if (st) return st;
    b->c = s->model;
    b->c.vocab = la_train_task_vocab(b->task);
    b->c.dtype = LA_FLOAT32;
    b->batch = s->batch;
    b->rows = s->batch * s->task.seq_len;
    if ((st = la_train_config_check(&b->c)) ||
        (st = la_train_model_create(&b->model, &b->c, s->seed)) ||
        (st = la_train_model_tensors(b->model, &b->list, &b->count)) ||
        (st = la_train_adamw_init(&b->adamw, &s->adamw, LA_FLOAT32, b->list, b->count)))
        return st;
    const size_t r = b->rows, d = b->c.d_model;
    size_t wide = 3 * d;
    if (b->c.d_ff > wide) wide = b->c.d_ff;
    if (b->c.vocab > wide) wide = b->c.vocab;
    const size_t big = r * wide, weights = wide * (d > b->c.d_ff ? d : b->c.d_ff);
    b->tokens = malloc(r * sizeof *b->tokens);
    b->targets = malloc(r * sizeof *b->targets);
    float **rows_arrays[] = {&b->x, &b->y, &b->dx, &b->dy, &b->pre, &b->q,  &b->k,
                             &b->v, &b->o, &b->dq, &b->dk, &b->dv,  &b->lse};
    for (size_t i = 0; i < sizeof rows_arrays / sizeof rows_arrays[0]; i++)
        *rows_arrays[i] = malloc(big * sizeof(float));
    float **w_arrays[] = {&b->w1, &b->w2, &b->dw1, &b->dw2, &b->b, &b->db, &b->gamma, &b->beta};
    for (size_t i = 0; i < sizeof w_arrays / sizeof w_arrays[0]; i++)
        *w_arrays[i] = malloc(weights * sizeof(float));
    b->mean = malloc(r * sizeof *b->mean);
    b->rstd = malloc(r * sizeof *b->rstd);
    for (size_t i = 0; i < sizeof rows_arrays / sizeof rows_arrays[0]; i++)
        if (!*rows_arrays[i]) return LA_ENOMEM;
    for (size_t i = 0; i < sizeof w_arrays / sizeof w_arrays[0]; i++)
        if (!*w_arrays[i]) return LA_ENOMEM;
    if (!b->tokens || !b->targets || !b->mean || !b->rstd) return LA_ENOMEM;
    la_train_rng rng = la_train_rng_make(s->seed);
    if ((st = la_train_task_batch(b->task, &rng, s->batch, b->tokens, b->targets))) return st;
    inputs_rng g = inputs_rng_for(s->seed, "train-speed");
    for (size_t i = 0; i < sizeof rows_arrays / sizeof rows_arrays[0]; i++)
        inputs_fill_normal_f32(&g, *rows_arrays[i], big, 0.5);
    for (size_t i = 0; i < sizeof w_arrays / sizeof w_arrays[0]; i++)
        inputs_fill_normal_f32(&g, *w_arrays[i], weights, 1.0 / sqrt((double)d));
    /* the model's attention problem (train.h): its kernel's parameters, B sequences, H
     * heads of D/H, causal, scale 1/√(D/H), contiguous, no mask */
    const size_t dh = d / b->c.heads;
    la_problem_init(&b->p, s->batch, b->c.heads, s->task.seq_len, s->task.seq_len, dh, dh);
    const la_problem sized = b->p;
    b->p = b->c.attention_params;
    b->p.batch = sized.batch, b->p.heads = sized.heads;
    b->p.n_queries = sized.n_queries, b->p.n_keys = sized.n_keys;
    b->p.d_k = sized.d_k, b->p.d_v = sized.d_v, b->p.scale = sized.scale;
    b->p.key_lengths = NULL, b->p.mask = NULL, b->p.mask_per_head = 0, b->p.key_mask = NULL;
    b->p.stride_q = sized.stride_q, b->p.stride_k = sized.stride_k;
    b->p.stride_v = sized.stride_v, b->p.stride_out = sized.stride_out;
    b->p.causal = 1;
    b->p.causal_align = LA_CAUSAL_TOP_LEFT;
    b->p.params = la_blocks_get(&b->c.attention_blocks, la_kernel_get(b->c.attention)->block);
    return la_problem_check(&b->p);
}

int learn_measure_speed(const learn_setup *s, double min_s, const char *what, learn_speed *out)
{
    bench_state b;
    const char *why = NULL;
    la_status st = state_make(&b, s, &why);
    if (st) {
        state_free(&b);
        return cli_fail(what, "cannot set up: %s", why ? why : la_strerror(st));
    }
    const timer_rule rule = {3, 100000, min_s, INFINITY};
    const timer_body bodies[] = {body_step, body_attention, body_projections, body_ffn,
                                 body_norm, body_head,      body_optimizer};
    enum { N_BODIES = sizeof bodies / sizeof bodies[0] };
    void *ctxs[N_BODIES];
    timer_result t[N_BODIES];
    int status[N_BODIES];
    for (size_t i = 0; i < N_BODIES; i++)
        ctxs[i] = &b;
    int rc = 0;
    if (timer_run_interleaved(N_BODIES, bodies, ctxs, &rule, t, status) != 0) {
        rc = cli_fail(what, "%s", la_strerror(LA_ENOMEM));
    } else {
        for (size_t i = 0; i < N_BODIES && !rc; i++)
            if (status[i]) rc = cli_fail(what, "%s", la_strerror((la_status)status[i]));
    }
    if (!rc) {
        const double layers = (double)b.c.layers, r = (double)b.rows, d = (double)b.c.d_model,
                     f = (double)b.c.d_ff;
        out->step_s = t[0].median_s;
        out->attention_s = layers * t[1].median_s;
        out->projections_s = layers * t[2].median_s;
        out->ffn_s = layers * t[3].median_s;
        out->norms_s = (2 * layers + 1) * t[4].median_s;
        out->head_s = t[5].median_s;
        out->optimizer_s = t[6].median_s;
        const double flops = 3 * 2 * r * d * (4 * d + 2 * f); /* forward, backward twice */
        out->gemm_gflops = flops / (t[2].median_s + t[3].median_s) / 1e9;
    }
    state_free(&b);
    return rc;
}

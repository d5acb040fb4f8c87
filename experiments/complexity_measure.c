/* complexity_measure.c — one point of `linattn complexity`: every layer type timed on the
 * same input, interleaved, and its rows (complexity.h). */
#include "complexity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void complexity_free_inputs(inputs *in)
{
    free(in->x), free(in->k), free(in->v), free(in->out);
    free(in->w_x), free(in->w_h), free(in->w_conv), free(in->b);
    *in = (inputs){0};
}

/* Random inputs ~ N(0, 1), weights ~ N(0, 1/d) (tanh not saturated), from the seed. */
static int fill_inputs(inputs *in, const config *c, size_t n)
{
    const size_t nx = n * c->d, dd = c->d * c->d;
    complexity_free_inputs(in);
    in->x = malloc(nx * sizeof(float)), in->k = malloc(nx * sizeof(float));
    in->v = malloc(nx * sizeof(float)), in->out = calloc(nx, sizeof(float));
    in->w_x = malloc(dd * sizeof(float)), in->w_h = malloc(dd * sizeof(float));
    in->w_conv = malloc(c->width * dd * sizeof(float)), in->b = malloc(c->d * sizeof(float));
    if (!in->x || !in->k || !in->v || !in->out || !in->w_x || !in->w_h || !in->w_conv || !in->b)
        return -1;
    inputs_rng r = inputs_rng_for(c->common.seed, "complexity");
    const double sigma = 1.0 / sqrt((double)c->d);
    inputs_fill_normal_f32(&r, in->x, nx, 1.0);
    inputs_fill_normal_f32(&r, in->k, nx, 1.0);
    inputs_fill_normal_f32(&r, in->v, nx, 1.0);
    inputs_fill_normal_f32(&r, in->w_x, dd, sigma);
    inputs_fill_normal_f32(&r, in->w_h, dd, sigma);
    inputs_fill_normal_f32(&r, in->w_conv, c->width * dd, sigma);
    inputs_fill_normal_f32(&r, in->b, c->d, 0.5);
    return 0;
}

/* One layer call, the timer's body: its status (LA_OK = 0). */
typedef struct {
    layer_kind kind;
    la_kernel kernel; /* the attention types */
    la_problem p;
    la_local_params local; /* the restricted type's window: p.params points at it */
    size_t n, d, width;
    const inputs *in;
} body_ctx;

static int run_layer(void *ctx)
{
    const body_ctx *b = ctx;
    const inputs *in = b->in;
    switch (b->kind) {
    case L_RECURRENT:
        return (int)la_rnn_forward(LA_FLOAT32, 1, b->n, b->d, in->x, in->w_x, in->w_h, in->b,
                                   in->out);
    case L_CONVOLUTIONAL:
        return (int)la_conv1d_forward(LA_FLOAT32, 1, b->n, b->d, b->width, in->x, in->w_conv, in->b,
                                      in->out);
    default: return (int)la_attention(b->kernel, &b->p, LA_FLOAT32, in->x, in->k, in->v, in->out);
    }
}

/* The call of type l at N: its context (kernel, problem), FLOPs and the bytes it holds
 * (inputs, output, weights, the kernel's workspace). Returns LA_OK or the cost model's
 * status. */
static la_status layer_at(const config *c, layer_kind l, size_t n, const inputs *in, body_ctx *ctx,
                          double *flops, double *bytes)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->kind = l, ctx->n = n, ctx->d = c->d, ctx->width = c->width, ctx->in = in;
    const double arrays = 4.0 * (double)n * (double)c->d * sizeof(float);
    const double weights = (2.0 + (double)c->width) * (double)c->d * (double)c->d * sizeof(float);
    *bytes = arrays + weights;
    if (l == L_RECURRENT) return la_rnn_cost(1, n, c->d, flops);
    if (l == L_CONVOLUTIONAL) return la_conv1d_cost(1, n, c->d, c->width, flops);
    ctx->kernel = l == L_ATTENTION    ? LA_KERNEL_SOFTMAX
                  : l == L_RESTRICTED ? c->local
                  : l == L_LINEAR     ? LA_KERNEL_LINEAR
                                      : LA_KERNEL_LINEAR_RECURRENT;
    la_problem_init(&ctx->p, 1, 1, n, n, c->d, c->d);
    ctx->p.causal = l == L_LINEAR_RECURRENT;
    if (l == L_RESTRICTED) {
        ctx->local = (la_local_params)LA_LOCAL_PARAMS_INIT;
        ctx->local.window = c->window;
        ctx->p.params = &ctx->local.head;
    }
    ctx->p.workspace_limit =
        c->common.max_mem < (double)SIZE_MAX ? (size_t)c->common.max_mem : SIZE_MAX;
    la_cost cost;
    la_status st = la_attention_cost(ctx->kernel, &ctx->p, LA_FLOAT32, &cost);
    if (st != LA_OK) return st;
    *flops = cost.flops_total;
    *bytes += cost.workspace_bytes;
    return LA_OK;
}

/* The key of a point: layer,n,d,kernel_width,window,threads */
void complexity_point_key(char *key, size_t size, const config *c, layer_kind l, size_t n)
{
    snprintf(key, size, "%s,%zu,%zu,%zu,%zu,%d", LAYERS[l].name, n, c->d, c->width, c->window,
             la_get_num_threads());
}

/* Measures every type at one N: points already in the file (--resume) kept, points over
 * a budget recorded as skipped, the others timed together, interleaved, then recorded.
 * Returns 0, 1 (out of memory, write failed) or 2 (refused with its line). */
int complexity_measure_point(record_file *f, const config *c, size_t n, track *tracks, inputs *in)
{
    body_ctx ctxs[L_COUNT];
    timer_body bodies[L_COUNT];
    void *ctx_ptrs[L_COUNT];
    double flops[L_COUNT], predicted[L_COUNT];
    layer_kind which[L_COUNT];
    size_t n_run = 0;
    char key[256];
    for (int l = 0; l < L_COUNT; l++) {
        if (!c->have[l]) continue;
        track *tr = &tracks[l];
        complexity_point_key(key, sizeof key, c, (layer_kind)l, n);
        const char *row = record_find(f, key);
        char prior[32];
        double t_prior;
        if (row && record_get_str(f, row, "status", prior, sizeof prior) == 0 &&
            strcmp(prior, "ok") == 0 && record_get(f, row, "median_s", &t_prior) == 0) {
            tr->last_n = (double)n, tr->last_s = t_prior;
            continue;
        }
        double bytes;
        body_ctx *ctx = &ctxs[n_run];
        la_status st = layer_at(c, (layer_kind)l, n, in, ctx, &flops[n_run], &bytes);
        if (st != LA_OK)
            return cli_fail("complexity", "%s at N = %zu: the cost model failed: %s",
                            LAYERS[l].name, n, la_strerror(st));
        /* predict: from the previous point and the theoretical exponent, or for the
         * first point from the FLOP model at an optimistic 20 GFLOP/s */
        const double pred = tr->last_n > 0
                                ? tr->last_s * pow((double)n / tr->last_n, LAYERS[l].exponent)
                                : flops[n_run] / 20e9;
        const char *status = NULL;
        if (bytes > c->common.max_mem)
            status = "skipped_mem";
        else if (tr->over_time || pred > c->common.max_seconds) {
            status = "skipped_time";
            tr->over_time = 1;
        }
        if (status) {
            if (record_row(f, "%s,%s,0,,,,,,%.6e,%s,%s,%s,%.4g", key, status, flops[n_run],
                           LAYERS[l].complexity, LAYERS[l].sequential_ops, LAYERS[l].path_length,
                           pred))
                return 1;
            continue;
        }
        bodies[n_run] = run_layer, ctx_ptrs[n_run] = ctx;
        predicted[n_run] = pred, which[n_run++] = (layer_kind)l;
    }
    if (n_run == 0) return 0;

    if (fill_inputs(in, c, n) != 0) {
        cli_line("complexity: out of memory at N = %zu", n);
        return 1;
    }
    timer_result t[L_COUNT];
    int status[L_COUNT];
    const timer_rule rule = sweep_rule(&c->common);
    if (timer_run_interleaved(n_run, bodies, ctx_ptrs, &rule, t, status) != 0) {
        cli_line("complexity: out of memory at N = %zu", n);
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < n_run && rc == 0; i++) {
        const layer_kind l = which[i];
        complexity_point_key(key, sizeof key, c, l, n);
        if (status[i] == LA_OK) {
            tracks[l].last_n = (double)n, tracks[l].last_s = t[i].median_s;
            rc = record_row(f, "%s,ok,%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%s,%s,%s,%.4g", key,
                            t[i].reps, t[i].median_s, t[i].min_s, t[i].max_s, t[i].q1_s, t[i].q3_s,
                            flops[i], LAYERS[l].complexity, LAYERS[l].sequential_ops,
                            LAYERS[l].path_length, predicted[i]);
        } else {
            const int budget = status[i] == LA_EBUDGET;
            if (!budget)
                fprintf(stderr, "\nlinattn: complexity: %s at N = %zu: %s\n", LAYERS[l].name, n,
                        la_strerror((la_status)status[i]));
            rc = record_row(f, "%s,%s,0,,,,,,%.6e,%s,%s,%s,%.4g", key,
                            budget ? "skipped_mem" : "error", flops[i], LAYERS[l].complexity,
                            LAYERS[l].sequential_ops, LAYERS[l].path_length, predicted[i]);
        }
    }
    return rc ? 1 : 0;
}

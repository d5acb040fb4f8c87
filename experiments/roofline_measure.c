/* roofline_measure.c — one point of `linattn roofline`: its inputs in the point's dtype,
 * every selected series timed together, interleaved, and its row (roofline.h). */
#include "roofline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void roofline_free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->out);
    free(in->q64), free(in->k64), free(in->v64), free(in->out64);
    *in = (inputs){0};
}

/* Random q, k, v ~ N(0, 1) of (heads, n, d), in the dtype asked, from the seed. */
static int fill_inputs(inputs *in, const config *c, int f64, size_t n, size_t d)
{
    const size_t count = c->heads * n * d;
    roofline_free_inputs(in);
    inputs_rng r = inputs_rng_for(c->common.seed, "roofline");
    if (!f64) {
        in->q = malloc(count * sizeof(float)), in->k = malloc(count * sizeof(float));
        in->v = malloc(count * sizeof(float)), in->out = calloc(count, sizeof(float));
        if (!in->q || !in->k || !in->v || !in->out) return -1;
        inputs_fill_normal_f32(&r, in->q, count, 1.0);
        inputs_fill_normal_f32(&r, in->k, count, 1.0);
        inputs_fill_normal_f32(&r, in->v, count, 1.0);
        return 0;
    }
    in->q64 = malloc(count * sizeof(double)), in->k64 = malloc(count * sizeof(double));
    in->v64 = malloc(count * sizeof(double)), in->out64 = calloc(count, sizeof(double));
    if (!in->q64 || !in->k64 || !in->v64 || !in->out64) return -1;
    for (size_t i = 0; i < count; i++)
        in->q64[i] = inputs_normal(&r);
    for (size_t i = 0; i < count; i++)
        in->k64[i] = inputs_normal(&r);
    for (size_t i = 0; i < count; i++)
        in->v64[i] = inputs_normal(&r);
    return 0;
}

/* One kernel call, the timer's body: its status (LA_OK = 0). */
typedef struct {
    la_kernel kernel;
    int f64;
    la_problem p;
    const inputs *in;
} body_ctx;

static int run_kernel(void *ctx)
{
    const body_ctx *b = ctx;
    const inputs *in = b->in;
    if (b->f64)
        return (int)la_attention(b->kernel, &b->p, LA_FLOAT64, in->q64, in->k64, in->v64,
                                 in->out64);
    return (int)la_attention(b->kernel, &b->p, LA_FLOAT32, in->q, in->k, in->v, in->out);
}

/* The key of a point: variant,kernel,dtype,n,d,heads,threads */
void roofline_point_key(char *key, size_t size, const kernels_series *s, int f64, size_t n,
                        size_t d, size_t heads)
{
    snprintf(key, size, "%s,%s,%s,%zu,%zu,%zu,%d", s->name, la_kernel_name(s->kernel),
             roofline_dtype_name(f64), n, d, heads, la_get_num_threads());
}

/* The row's derived columns from its FLOPs, minimum bytes and median time. */
static int write_ok(record_file *f, const char *key, const timer_result *t, const la_cost *cost,
                    const ceilings *m, int f64)
{
    const double gflops = cost->flops_total / t->median_s * 1e-9;
    const double intensity = cost->flops_total / cost->bytes_min;
    const double peak = m->peak[f64], bw = m->triad;
    const double roof = isfinite(peak) ? fmin(peak, intensity * bw) : NAN;
    char b[4][32];
    return record_row(
        f, "%s,ok,%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.5g,%.5g,%s,%.5g,%s,%s,%s", key, t->reps,
        t->median_s, t->min_s, t->max_s, t->q1_s, t->q3_s, cost->flops_total, cost->bytes_min,
        intensity, gflops, roofline_num(b[0], 32, "%.5g", peak), bw,
        roofline_num(b[1], 32, "%.5g", roof), roofline_num(b[2], 32, "%.4g", 100 * gflops / peak),
        roofline_num(b[3], 32, "%.4g", 100 * gflops / roof));
}

/* A row not measured: its status, and the model's columns. */
static int write_skipped(record_file *f, const char *key, const char *status, const la_cost *cost,
                         const ceilings *m, int f64)
{
    char b[2][32];
    if (!cost)
        return record_row(f, "%s,%s,0,,,,,,,,,,%s,%.5g,,,", key, status,
                          roofline_num(b[0], 32, "%.5g", m->peak[f64]), m->triad);
    const double intensity = cost->flops_total / cost->bytes_min;
    const double roof = isfinite(m->peak[f64]) ? fmin(m->peak[f64], intensity * m->triad) : NAN;
    return record_row(f, "%s,%s,0,,,,,,%.6e,%.6e,%.6e,,%s,%.5g,%s,,", key, status,
                      cost->flops_total, cost->bytes_min, intensity,
                      roofline_num(b[0], 32, "%.5g", m->peak[f64]), m->triad,
                      roofline_num(b[1], 32, "%.5g", roof));
}

/* Measures every selected series at one (dtype, d, N): points in the file (--resume)
 * kept, points over a budget recorded as skipped, the others timed together,
 * interleaved. Returns 0, 1 (out of memory, write failed) or 2 (refused, one line). */
int roofline_measure_point(record_file *f, const config *c, const ceilings *m, int f64, size_t d,
                           size_t n, track *tracks, inputs *in, variants_values *held)
{
    body_ctx ctxs[KERNELS_MAX_SERIES];
    timer_body bodies[KERNELS_MAX_SERIES];
    void *ctx_ptrs[KERNELS_MAX_SERIES];
    la_cost costs[KERNELS_MAX_SERIES];
    size_t which[KERNELS_MAX_SERIES], n_run = 0;
    char key[256];
    for (size_t s = 0; s < c->n_series; s++) {
        if (!c->selected[s]) continue;
        const kernels_series *ser = &c->series[s];
        track *tr = &tracks[s];
        roofline_point_key(key, sizeof key, ser, f64, n, d, c->heads);
        const char *row = record_find(f, key);
        char prior[32];
        double t_prior, flops_prior;
        if (row && record_get_str(f, row, "status", prior, sizeof prior) == 0 &&
            strcmp(prior, "ok") == 0 && record_get(f, row, "median_s", &t_prior) == 0 &&
            record_get(f, row, "flops", &flops_prior) == 0) {
            tr->last_flops = flops_prior, tr->last_s = t_prior;
            continue;
        }
        body_ctx *ctx = &ctxs[n_run];
        ctx->kernel = ser->kernel, ctx->f64 = f64, ctx->in = in;
        la_problem_init(&ctx->p, 1, c->heads, n, n, d, d);
        (void)variants_apply(held, &ctx->p); /* no arrays: cannot fail */
        ctx->p.causal = ser->causal;
        ctx->p.workspace_limit =
            c->common.max_mem < (double)SIZE_MAX ? (size_t)c->common.max_mem : SIZE_MAX;
        if (!variants_rank_fits(ser->kernel, &ctx->p)) {
            if (write_skipped(f, key, "skipped_rank", NULL, m, f64)) return 1;
            continue;
        }
        la_cost *cost = &costs[n_run];
        la_status st = la_attention_cost(ser->kernel, &ctx->p, f64 ? LA_FLOAT64 : LA_FLOAT32, cost);
        if (st != LA_OK)
            return cli_fail("roofline", "%s at N = %zu: the cost model failed: %s", ser->name, n,
                            la_strerror(st));
        /* predict from the series' previous point, scaled by the FLOPs; the first point
         * from the model at an optimistic 20 GFLOP/s */
        const double pred = tr->last_flops > 0 ? tr->last_s * cost->flops_total / tr->last_flops
                                               : cost->flops_total / 20e9;
        const double elem = f64 ? sizeof(double) : sizeof(float);
        const double bytes = 4.0 * (double)(c->heads * n * d) * elem + cost->workspace_bytes;
        const char *status = NULL;
        if (bytes > c->common.max_mem)
            status = "skipped_mem";
        else if (tr->over_time || pred > c->common.max_seconds) {
            status = "skipped_time";
            tr->over_time = 1;
        }
        if (status) {
            if (write_skipped(f, key, status, cost, m, f64)) return 1;
            continue;
        }
        if (variants_hold_draws(held, ser->kernel, &ctx->p)) return 2; /* its line said why */
        bodies[n_run] = run_kernel, ctx_ptrs[n_run] = ctx, which[n_run++] = s;
    }
    if (n_run == 0) return 0;
    if (fill_inputs(in, c, f64, n, d) != 0) {
        cli_line("roofline: out of memory at N = %zu, d = %zu", n, d);
        return 1;
    }
    timer_result t[KERNELS_MAX_SERIES];
    int status[KERNELS_MAX_SERIES];
    const timer_rule rule = sweep_rule(&c->common);
    if (timer_run_interleaved(n_run, bodies, ctx_ptrs, &rule, t, status) != 0) {
        cli_line("roofline: out of memory at N = %zu, d = %zu", n, d);
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < n_run && rc == 0; i++) {
        const kernels_series *ser = &c->series[which[i]];
        roofline_point_key(key, sizeof key, ser, f64, n, d, c->heads);
        if (status[i] == LA_OK) {
            tracks[which[i]].last_flops = costs[i].flops_total;
            tracks[which[i]].last_s = t[i].median_s;
            rc = write_ok(f, key, &t[i], &costs[i], m, f64);
        } else {
            const int budget = status[i] == LA_EBUDGET;
            if (!budget)
                fprintf(stderr, "\nlinattn: roofline: %s %s at N = %zu, d = %zu: %s\n", ser->name,
                        roofline_dtype_name(f64), n, d, la_strerror((la_status)status[i]));
            rc = write_skipped(f, key, budget ? "skipped_mem" : "error", &costs[i], m, f64);
        }
    }
    return rc ? 1 : 0;
}

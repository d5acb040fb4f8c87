/* approx_measure.c — the inputs and points of `linattn approx`: three kinds of random
 * inputs or the user's arrays, each kernel at each budget against exact softmax, and the
 * summary (approx.h). */
#include "approx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void approx_buffers_free(buffers *b)
{
    free(b->q), free(b->k), free(b->v), free(b->out);
    free(b->q64), free(b->k64), free(b->v64), free(b->y64), free(b->exact);
}

int approx_buffers_alloc(buffers *b, size_t elems, size_t v_elems)
{
    memset(b, 0, sizeof *b);
    b->elems = elems, b->v_elems = v_elems;
    float **f[] = {&b->q, &b->k, &b->v, &b->out};
    double **g[] = {&b->q64, &b->k64, &b->v64, &b->y64, &b->exact};
    for (size_t i = 0; i < 4; i++)
        if (!(*f[i] = malloc((i < 2 ? elems : v_elems) * sizeof(float)))) goto fail;
    for (size_t i = 0; i < 5; i++)
        if (!(*g[i] = malloc((i < 2 ? elems : v_elems) * sizeof(double)))) goto fail;
    return 0;
fail:
    approx_buffers_free(b);
    return -1;
}

/* q, k, v of one input kind and seed, (H, N, d) row-major, in both precisions: with
 * --q/--k/--v the arrays' first N queries and keys of each head (the same at every seed),
 * else v N(0, 1) in all three kinds, and scale 1/√d throughout (logit = q·k/√d).
 *   random:   q, k N(0, 1): logits N(0, 1), the weight spread over every key.
 *   dominant: k N(0, 1), q_i = (12/√d)·(k_a + k_b) for two random keys a, b: their logits
 *             about 12, any other key's N(0, 2·12²/d) (sd 2.1 at d = 64).
 *   local:    k_j = c_j + N(0, 1/16), c_j the sinusoidal code of position j
 *             (c_j,2l = √2 sin(ω_l j), c_j,2l+1 = √2 cos(ω_l j), ω_l = 10000^(−2l/d), so
 *             |c_j|² = d), q_i = (12/√d)·c_i: logit 12 at j = i, falling as |i − j| grows. */
void approx_fill(const config *c, buffers *b, int kind, uint64_t seed)
{
    char label[32];
    snprintf(label, sizeof label, "approx_%s", approx_input_names[kind]);
    inputs_rng r = inputs_rng_for(seed, label);
    const size_t n = c->n, d = c->d;
    if (c->source.from_files) /* sizes checked against the arrays by parse: cannot fail */
        inputs_source_fill(&c->source, "approx", c->heads, n, n, d, c->dv, b->q, b->k, b->v);
    else
        inputs_fill_normal_f32(&r, b->v, b->elems, 1.0);
    if (kind == 0 && !c->source.from_files) {
        inputs_fill_normal_f32(&r, b->q, b->elems, 1.0);
        inputs_fill_normal_f32(&r, b->k, b->elems, 1.0);
    }
    const double w = 12.0 / sqrt((double)d); /* q·k/√d = 12 for q = w·k, |k|² = d */
    for (size_t h = 0; kind != 0 && !c->source.from_files && h < c->heads; h++) {
        float *qh = b->q + h * n * d, *kh = b->k + h * n * d;
        if (kind == 1) {
            inputs_fill_normal_f32(&r, kh, n * d, 1.0);
            for (size_t i = 0; i < n; i++) {
                const size_t a = (size_t)(inputs_uniform(&r) * (double)n);
                const size_t e = (size_t)(inputs_uniform(&r) * (double)n);
                for (size_t x = 0; x < d; x++)
                    qh[i * d + x] = (float)(w * ((double)kh[a * d + x] + (double)kh[e * d + x]));
            }
        } else {
            for (size_t j = 0; j < n; j++)
                for (size_t x = 0; x < d; x++) {
                    const double omega = pow(10000.0, -(double)(x / 2 * 2) / (double)d);
                    const double code =
                        sqrt(2.0) * (x % 2 ? cos(omega * (double)j) : sin(omega * (double)j));
                    qh[j * d + x] = (float)(w * code);
                    kh[j * d + x] = (float)(code + 0.25 * inputs_normal(&r));
                }
        }
    }
    for (size_t i = 0; i < b->elems; i++)
        b->q64[i] = b->q[i], b->k64[i] = b->k[i];
    for (size_t i = 0; i < b->v_elems; i++)
        b->v64[i] = b->v[i];
}

/* ---------------------------------------------------------------- points */

void approx_problem_of(const config *c, la_kernel k, size_t budget, uint64_t seed,
                       variants_values *blocks, la_problem *p)
{
    la_problem_init(p, 1, c->heads, c->n, c->n, c->d, c->dv);
    variants_defaults(blocks, seed);
    size_t *field = variants_budget_field(blocks, kernels_budget_of(k));
    if (field) *field = budget;
    (void)variants_apply(blocks, p); /* no arrays: cannot fail */
    p->workspace_limit =
        c->common.max_mem < (double)SIZE_MAX ? (size_t)c->common.max_mem : SIZE_MAX;
}

/* One point: the float64 output against exact softmax, then the float32 time. */
int approx_measure(record_file *f, const config *c, buffers *b, la_kernel k, size_t budget,
                   int kind, uint64_t seed, double softmax_flops)
{
    const char *name = la_kernel_name(k);
    char key[160];
    snprintf(key, sizeof key, "%s,%s,%zu,%s,%llu", name, kernels_budget_names[kernels_budget_of(k)],
             budget, approx_input_name(c, kind), (unsigned long long)seed);
    if (record_find(f, key)) return 0; /* --resume */
    variants_values blocks;
    la_problem p;
    approx_problem_of(c, k, budget, seed, &blocks, &p);
    la_cost cost;
    const double flops =
        la_attention_cost(k, &p, LA_FLOAT32, &cost) == LA_OK ? cost.flops_total : NAN;
    la_status st = la_attention(k, &p, LA_FLOAT64, b->q64, b->k64, b->v64, b->y64);
    if (st != LA_OK)
        return record_row(f, "%s,%zu,%zu,%zu,nan,%.6g,%.6g,nan,nan,nan,%s", key, c->n, c->d,
                          c->heads, flops, flops / softmax_flops, la_strerror(st))
                   ? 1
                   : 0;
    const double err = inputs_rms_error_vs_v(b->y64, b->exact, b->v_elems, b->v64, b->v_elems);
    timer_result t;
    const timer_rule rule = {c->common.min_reps, 1000, c->common.min_time, 1.0};
    st = timer_kernel(k, &p, b->q, b->k, b->v, b->out, &rule, &t);
    if (st != LA_OK)
        return record_row(f, "%s,%zu,%zu,%zu,%.6g,%.6g,%.6g,nan,nan,nan,%s", key, c->n, c->d,
                          c->heads, err, flops, flops / softmax_flops, la_strerror(st))
                   ? 1
                   : 0;
    return record_row(f, "%s,%zu,%zu,%zu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,ok", key, c->n, c->d,
                      c->heads, err, flops, flops / softmax_flops, t.median_s, t.q1_s, t.q3_s)
               ? 1
               : 0;
}

const size_t *approx_budgets_of(const config *c, la_kernel k, size_t *count)
{
    static const size_t none[1] = {0};
    switch (kernels_budget_of(k)) {
    case BUDGET_WINDOW: *count = c->n_windows; return c->windows;
    case BUDGET_PROJ: *count = c->n_ranks; return c->ranks;
    case BUDGET_FEATURES: *count = c->n_features; return c->features;
    case BUDGET_NONE: break;
    }
    *count = 1;
    return none;
}

/* The summary: per input kind and variant, the smallest budget's FLOPs share at which
 * the mean error over seeds fell below 0.1, or the best mean error reached. */
void approx_summarize(const config *c, record_file *f)
{
    for (int kind = 0; kind < N_INPUTS; kind++) {
        if (!c->inputs[kind]) continue;
        for (int k = 0; k < LA_KERNEL_COUNT; k++) {
            if (!c->selected[k] || kernels_exact_softmax((la_kernel)k)) continue;
            size_t nb;
            const size_t *bs = approx_budgets_of(c, (la_kernel)k, &nb);
            double best = INFINITY, best_share = NAN;
            size_t best_budget = 0, hit_budget = 0;
            double hit_share = NAN;
            for (size_t i = 0; i < nb; i++) {
                double sum = 0, share = NAN;
                size_t got = 0;
                for (size_t s = 0; s < c->seeds; s++) {
                    char key[160];
                    snprintf(key, sizeof key, "%s,%s,%zu,%s,%llu", la_kernel_name((la_kernel)k),
                             kernels_budget_names[kernels_budget_of((la_kernel)k)], bs[i],
                             approx_input_name(c, kind), (unsigned long long)(c->common.seed + s));
                    const char *row = record_find(f, key);
                    double e;
                    if (row && record_get(f, row, "error", &e) == 0 && isfinite(e))
                        sum += e, got++, record_get(f, row, "flops_vs_softmax", &share);
                }
                if (!got) continue;
                const double mean = sum / (double)got;
                if (mean < best) best = mean, best_share = share, best_budget = bs[i];
                if (mean < 0.1 && !hit_budget) hit_budget = bs[i], hit_share = share;
            }
            if (!isfinite(best)) continue;
            const char *bn = kernels_budget_names[kernels_budget_of((la_kernel)k)];
            if (hit_budget)
                printf("approx: %s inputs: %s reaches error < 0.1 at %s %zu, %.3gx softmax's "
                       "FLOPs\n",
                       approx_input_name(c, kind), la_kernel_name((la_kernel)k), bn, hit_budget,
                       hit_share);
            else if (kernels_budget_of((la_kernel)k) == BUDGET_NONE)
                printf("approx: %s inputs: %s error %.3g at %.3gx softmax's FLOPs\n",
                       approx_input_name(c, kind), la_kernel_name((la_kernel)k), best, best_share);
            else
                printf("approx: %s inputs: %s best error %.3g (%s %zu, %.3gx softmax's FLOPs)\n",
                       approx_input_name(c, kind), la_kernel_name((la_kernel)k), best, bn,
                       best_budget, best_share);
        }
    }
}

/* scaling_measure.c — one point of `linattn scaling`: its inputs, every selected series
 * timed together, interleaved, and recorded (scaling.h). */
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void scaling_free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->out);
    free(in->d_out), free(in->d_q), free(in->d_k), free(in->d_v);
    *in = (inputs){0};
}

static int fill_inputs(inputs *in, const inputs_source *source, const group *g, size_t n,
                       pass_kind pass)
{
    const size_t elems = g->batch * g->heads * n * g->d;
    scaling_free_inputs(in);
    if (pass == PASS_TRAIN) {
        in->d_out = malloc(elems * sizeof(float)), in->d_q = malloc(elems * sizeof(float));
        in->d_k = malloc(elems * sizeof(float)), in->d_v = malloc(elems * sizeof(float));
        if (!in->d_out || !in->d_q || !in->d_k || !in->d_v) return -1;
        inputs_rng r = inputs_rng_for(1, "scaling d_out");
        inputs_fill_normal_f32(&r, in->d_out, elems, 1.0);
    }
    in->q = malloc(elems * sizeof(float)), in->k = malloc(elems * sizeof(float));
    in->v = malloc(elems * sizeof(float)), in->out = malloc(elems * sizeof(float));
    if (!in->q || !in->k || !in->v || !in->out) return -1;
    inputs_source_fill(source, "scaling", g->batch * g->heads, n, n, g->d, g->d, in->q, in->k,
                       in->v);
    memset(in->out, 0, elems * sizeof(float));
    return 0;
}

/* Measures every selected series at one (N, group): the points already in the file
 * (--resume) are kept, the points over a budget recorded as skipped, the others timed
 * together, interleaved, then recorded. Returns 0, 1 (out of memory, write failed) or
 * 2 (refused with its line). The problems point into c->variant_params (variants_apply). */
int scaling_measure_point(record_file *f, config *c, const group *g, size_t n, track *tracks,
                          inputs *in)
{
    la_kernel kernels[KERNELS_MAX_SERIES];
    la_problem problems[KERNELS_MAX_SERIES];
    la_cost costs[KERNELS_MAX_SERIES];
    double predicted[KERNELS_MAX_SERIES];
    size_t which[KERNELS_MAX_SERIES], n_run = 0;
    char key[256];
    int rc = 0;
    for (size_t vi = 0; vi < c->n_series; vi++) {
        if (!tracks[vi].selected) continue;
        const kernels_series *var = &c->series[vi];
        track *tr = &tracks[vi];
        scaling_point_key(key, sizeof key, var->name, n, g);
        /* a point measured already (--resume) is kept and feeds the predictions; a
         * skipped one is tried again, under this run's budgets */
        const char *row = record_find(f, key);
        char prior[32];
        double t_prior;
        if (row && record_get_str(f, row, "status", prior, sizeof prior) == 0 &&
            strcmp(prior, "ok") == 0 && record_get(f, row, "median_s", &t_prior) == 0) {
            tr->last_n = (double)n, tr->last_s = t_prior;
            continue;
        }
        la_problem *p = &problems[n_run];
        la_problem_init(p, g->batch, g->heads, n, n, g->d, g->d);
        if ((rc = variants_apply(&c->variant_params, p))) return rc;
        p->causal = var->causal;
        p->workspace_limit =
            c->common.max_mem < (double)SIZE_MAX ? (size_t)c->common.max_mem : SIZE_MAX;
        if (!variants_rank_fits(var->kernel, p)) { /* K = --proj-rank above M = N: not run */
            if (record_row(f, "%s,skipped_rank,0,,,,,,,,,,,,", key)) return 1;
            continue;
        }
        la_cost *cost = &costs[n_run];
        la_status st = pass_cost(var->kernel, p, c->pass, LA_FLOAT32, cost);
        if (st != LA_OK) /* a point the model cannot count: refused, one line, exit 2 */
            return cli_fail("scaling", "%s at N = %zu: the cost model failed: %s", var->name, n,
                            la_strerror(st));
        /* predict: from the previous point and the theoretical exponent, or for the
         * first point from the FLOP model at an optimistic 20 GFLOP/s */
        const double pred =
            tr->last_n > 0
                ? tr->last_s * pow((double)n / tr->last_n, kernels_time_exponent(var->kernel, NULL))
                : cost->flops_total / 20e9;
        const char *status = NULL;
        if (cost->io_bytes + cost->workspace_bytes > c->common.max_mem)
            status = "skipped_mem";
        else if (tr->over_time || pred > c->common.max_seconds) {
            status = "skipped_time";
            tr->over_time = 1;
        }
        if (status) {
            if (record_row(f, "%s,%s,0,,,,,,,%.6e,%.0f,%.0f,,,%.4g", key, status, cost->flops_total,
                           cost->workspace_bytes, cost->io_bytes, pred))
                return 1;
            continue;
        }
        kernels[n_run] = var->kernel, predicted[n_run] = pred, which[n_run++] = vi;
    }
    if (n_run == 0) return 0;

    if (fill_inputs(in, &c->source, g, n, c->pass) != 0) {
        cli_line("scaling: out of memory at N = %zu", n);
        return 1;
    }
    timer_result t[KERNELS_MAX_SERIES];
    la_status st[KERNELS_MAX_SERIES];
    const timer_rule rule = sweep_rule(&c->common);
    const pass_arrays arrays = {in->q, in->k, in->v, in->out, in->d_out, in->d_q, in->d_k, in->d_v};
    /* the series that read Linformer's E and F are timed after the others, with E and F
     * drawn once and held (variants_hold_draws), then let go: the others' peak memory
     * never holds them */
    size_t order[KERNELS_MAX_SERIES], n_plain = 0, n_held = 0;
    for (size_t i = 0; i < n_run; i++)
        if (!(la_kernel_get(kernels[i])->params & LA_PARAM_PROJ)) order[n_plain++] = i;
    for (size_t i = 0; i < n_run; i++)
        if (la_kernel_get(kernels[i])->params & LA_PARAM_PROJ) order[n_plain + n_held++] = i;
    la_kernel ks[KERNELS_MAX_SERIES];
    la_problem ps[KERNELS_MAX_SERIES];
    timer_result ts[KERNELS_MAX_SERIES];
    la_status sts[KERNELS_MAX_SERIES];
    for (size_t i = 0; i < n_run; i++)
        ks[i] = kernels[order[i]], ps[i] = problems[order[i]];
    for (size_t i = 0; i < n_plain; i++) /* FAVOR+'s W (features, d_k), held the same way */
        if (variants_hold_draws(&c->variant_params, ks[i], &ps[i])) return 2;
    pass_time_interleaved(n_plain, ks, ps, c->pass, &arrays, &rule, ts, sts);
    if (n_held > 0) {
        if (variants_hold_draws(&c->variant_params, ks[n_plain], &ps[n_plain])) return 2;
        pass_time_interleaved(n_held, ks + n_plain, ps + n_plain, c->pass, &arrays, &rule,
                              ts + n_plain, sts + n_plain);
        variants_release_draws(&c->variant_params);
    }
    for (size_t i = 0; i < n_run; i++)
        t[order[i]] = ts[i], st[order[i]] = sts[i];
    for (size_t i = 0; i < n_run && rc == 0; i++) {
        const kernels_series *var = &c->series[which[i]];
        scaling_point_key(key, sizeof key, var->name, n, g);
        const la_cost *cost = &costs[i];
        if (st[i] == LA_OK) {
            tracks[which[i]].last_n = (double)n, tracks[which[i]].last_s = t[i].median_s;
            rc = record_row(
                f, "%s,ok,%d,%.6e,%.6e,%.6e,%.6e,%.6e,%.4f,%.6e,%.0f,%.0f,%.0f,%.0f,%.4g", key,
                t[i].reps, t[i].median_s, t[i].min_s, t[i].max_s, t[i].q1_s, t[i].q3_s,
                cost->flops_total / t[i].median_s / 1e9, cost->flops_total, cost->workspace_bytes,
                cost->io_bytes, t[i].baseline_rss_bytes, t[i].peak_rss_bytes, predicted[i]);
        } else {
            if (st[i] != LA_EBUDGET)
                fprintf(stderr, "\nlinattn: scaling: %s at N = %zu: %s\n", var->name, n,
                        la_strerror(st[i]));
            rc = record_row(f, "%s,%s,0,,,,,,,%.6e,%.0f,%.0f,,,%.4g", key,
                            st[i] == LA_EBUDGET ? "skipped_mem" : "error", cost->flops_total,
                            cost->workspace_bytes, cost->io_bytes, predicted[i]);
        }
    }
    return rc ? 1 : 0;
}

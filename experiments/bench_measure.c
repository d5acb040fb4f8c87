/* bench_measure.c — a point timed: its problem, its rule, the sgemm yardstick and the
 * kernels on their inputs (bench.h). */
#include "bench.h"
#include "cpu/machine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

la_problem bench_problem_of(const bench_point *pt, const bench_shape *s)
{
    la_problem p;
    la_problem_init(&p, 1, s->heads, pt->n, pt->m, s->d_k, s->d_v);
    if (s->variant_params) variants_apply(s->variant_params, &p); /* no --proj: cannot fail */
    p.causal = pt->causal;
    return p;
}

/* The table's variant column: the kernel as the registry names it, and "/backward" or
 * "/train" after it for those passes. In buf. */
const char *bench_variant_label(const bench_point *pt, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s%s", la_kernel_name(pt->kernel), pt->pass == PASS_FORWARD ? "" : "/",
             pt->pass == PASS_FORWARD ? "" : pass_kind_names[pt->pass]);
    return buf;
}

/* The table's causal column. */
const char *bench_causal_label(const bench_point *pt)
{
    return pt->causal ? "yes" : "no";
}

/* timer_run's rule for a point. predicted_s is a lower bound on one call (its FLOPs at
 * the sgemm rate): under --goals a point that cannot be faster than GOALS_SLOW_S runs
 * min(R, GOALS_SLOW_REPS) times, and a warm-up of GOALS_SLOW_S or more is kept as the
 * first run (timer_rule.slow_s), so N = 16384 fused softmax (seconds per call) costs three
 * calls, not six. */
timer_rule bench_rule_for(const timing_rule *rule, double predicted_s)
{
    if (!rule->budgeted) return (timer_rule){rule->reps, MAX_RUNS, rule->min_total_s, INFINITY};
    int reps = rule->reps;
    if (predicted_s >= GOALS_SLOW_S && reps > GOALS_SLOW_REPS) reps = GOALS_SLOW_REPS;
    return (timer_rule){reps, MAX_RUNS, rule->min_total_s, GOALS_SLOW_S};
}
typedef struct {
    int threads;
    const float *a, *b;
    float *c;
} sgemm_call;

/* C (2000×2000) = A (2000×2000) · B (2000×2000), row-major, on BLIS's threads. BLIS's
 * OpenMP threading was checked to scale on the Debian libblis.a linked here (2000³ on
 * this 2-core machine: 202 GFLOP/s on 1 thread, 364 on 2), so one threaded call is the
 * yardstick rather than panels of single-threaded calls. */
static int run_sgemm(void *ctx)
{
    const sgemm_call *g = ctx;
    return la_blis_sgemm(g->threads, SGEMM_SIZE, SGEMM_SIZE, SGEMM_SIZE, 1, g->a, SGEMM_SIZE, 1,
                         g->b, SGEMM_SIZE, 1, 0, g->c, SGEMM_SIZE, 1) == LA_OK
               ? 0
               : -1;
}

/* Times the yardstick on `threads` threads. Returns 0, or -1 (no memory). */
int bench_measure_sgemm(int threads, const timing_rule *rule, sgemm_result *out)
{
    const size_t count = (size_t)SGEMM_SIZE * SGEMM_SIZE;
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    float *c = malloc(count * sizeof *c);
    int rc = -1;
    if (a && b && c) {
        /* uniform in [-1, 1): a product's time does not depend on its values, and 8
         * million normal draws (a log and a cosine each) took 0.3 s of every bench call */
        inputs_rng r = inputs_rng_for(1, "bench sgemm");
        for (size_t i = 0; i < count; i++) {
            a[i] = (float)(2 * inputs_uniform(&r) - 1);
            b[i] = (float)(2 * inputs_uniform(&r) - 1);
        }
        sgemm_call g = {threads, a, b, c};
        out->threads = threads;
        const timer_rule sgemm_rule = bench_rule_for(rule, 0);
        rc = timer_run(run_sgemm, &g, &sgemm_rule, &out->t);
        if (rc == 0)
            out->gflops = 2.0 * SGEMM_SIZE * SGEMM_SIZE * SGEMM_SIZE / out->t.median_s * 1e-9;
        out->peak_gflops = la_fma_peak_gflops(LA_FLOAT32, threads);
        if (la_memory_bandwidth_gbs(LA_BANDWIDTH_TRIAD, threads, &out->triad_gbs) != LA_OK)
            out->triad_gbs = NAN;
    }
    free(a);
    free(b);
    free(c);
    return rc ? -1 : 0;
}
void bench_free_inputs(bench_inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->out);
    free(in->d_out);
    free(in->d_q);
    free(in->d_k);
    free(in->d_v);
}

/* Allocates and fills the inputs for every point (random: once, for the largest; the
 * user's arrays: bench_run_points copies each point's prefixes). Returns 0, or -1 (no memory). */
int bench_prepare_inputs(const bench_point *points, size_t count, const bench_shape *s,
                         const inputs_source *source, bench_inputs *in)
{
    size_t n_max = 0, m_max = 0;
    for (size_t i = 0; i < count; i++) {
        if (points[i].n > n_max) n_max = points[i].n;
        if (points[i].m > m_max) m_max = points[i].m;
    }
    const size_t n_q = inputs_float_count(s->heads, n_max, s->d_k);
    const size_t n_k = inputs_float_count(s->heads, m_max, s->d_k);
    const size_t n_v = inputs_float_count(s->heads, m_max, s->d_v);
    const size_t n_out = inputs_float_count(s->heads, n_max, s->d_v);
    int backward = 0;
    for (size_t i = 0; i < count; i++)
        backward |= points[i].pass != PASS_FORWARD;
    *in = (bench_inputs){0};
    if (!n_q || !n_k || !n_v || !n_out) return -1;
    in->q = malloc(n_q * sizeof(float));
    in->k = malloc(n_k * sizeof(float));
    in->v = malloc(n_v * sizeof(float));
    in->out = malloc(n_out * sizeof(float));
    if (backward) {
        in->d_out = malloc(n_out * sizeof(float));
        in->d_q = malloc(n_q * sizeof(float));
        in->d_k = malloc(n_k * sizeof(float));
        in->d_v = malloc(n_v * sizeof(float));
    }
    if (!in->q || !in->k || !in->v || !in->out ||
        (backward && (!in->d_out || !in->d_q || !in->d_k || !in->d_v))) {
        bench_free_inputs(in);
        return -1;
    }
    if (!source->from_files)
        inputs_source_fill(source, "bench", s->heads, n_max, m_max, s->d_k, s->d_v, in->q, in->k,
                           in->v);
    if (backward) {
        inputs_rng rd = inputs_rng_for(1, "bench d_out");
        inputs_fill_normal_f32(&rd, in->d_out, n_out, 1.0);
    }
    return 0;
}

/* Times one point on the prepared inputs and fills its measured fields: GFLOP/s from the
 * FLOP model (of the point's pass: common/pass.h), its share of the yardstick, the
 * model's workspace. On the current threads. A pass the kernel does not have (no
 * backward) is skipped with no_backward set. */
void bench_measure_point(bench_point *pt, const bench_shape *s, const bench_inputs *in,
                         const timing_rule *rule, const sgemm_result *sgemm)
{
    const la_kernel kernel = pt->kernel;
    la_problem p = bench_problem_of(pt, s);
    pt->gflops = pt->pct_of_sgemm = pt->workspace_bytes = NAN;
    pt->pct_of_peak = pt->pct_of_roofline = NAN;
    if (!pass_kernel_has(kernel, pt->pass)) {
        pt->no_backward = 1;
        pt->status = LA_EINVAL;
        return;
    }
    if (!variants_rank_fits(kernel, &p)) {
        pt->rank_above_m = 1;
        pt->status = LA_EINVAL;
        return;
    }
    la_cost cost;
    const int have_cost = pass_cost(kernel, &p, pt->pass, LA_FLOAT32, &cost) == LA_OK;
    const double flops = have_cost ? cost.flops_total : NAN;
    pt->workspace_bytes = have_cost ? cost.workspace_bytes : NAN;

    const double predicted_s = have_cost ? flops / (sgemm->gflops * 1e9) : 0;
    const timer_rule point_rule = bench_rule_for(rule, predicted_s);
    if (s->variant_params && variants_hold_draws(s->variant_params, kernel, &p)) {
        pt->status = LA_ENOMEM; /* Linformer's E, F, drawn once per shape: no room */
        return;
    }
    const pass_arrays arrays = {in->q, in->k, in->v, in->out, in->d_out, in->d_q, in->d_k, in->d_v};
    pt->status = pass_time(kernel, &p, pt->pass, &arrays, &point_rule, &pt->t);
    if (pt->status != LA_OK || !have_cost) return;
    pt->gflops = flops / pt->t.median_s * 1e-9;
    pt->pct_of_sgemm = 100.0 * pt->gflops / sgemm->gflops;
    /* NAN propagates where the probes have no value */
    const double roof = fmin(sgemm->peak_gflops, flops / cost.bytes_min * sgemm->triad_gbs);
    pt->pct_of_peak = 100.0 * pt->gflops / sgemm->peak_gflops;
    pt->pct_of_roofline =
        isnan(sgemm->peak_gflops) || isnan(sgemm->triad_gbs) ? NAN : 100.0 * pt->gflops / roof;
}

/* bench_goals.c — `linattn bench --goals`: the goal tables, their points timed as a
 * plain run, and each goal met or not (bench.h). */
#include "attention/series.h"
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The project's performance goals (float32, B = 1, H = 8, d_k = d_v = 64). */
// clang-format off
const goal bench_goals_table[] = {
    /* text                                                   target       kind                value
     *     a: series, N, threads                b (second point) */
    {"1. fused softmax, N=1024: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 1024, 2}, {0}},
    {"1. fused softmax, N=2048: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 2048, 2}, {0}},
    {"1. fused softmax, N=4096: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 4096, 2}, {0}},
    {"1. fused softmax, N=8192: rate vs sgemm",               ">= 75%",    GOAL_RATE,          75,
        {"softmax", 8192, 2}, {0}},
    {"1. fused softmax, N=16384: rate vs sgemm",              ">= 75%",    GOAL_RATE,          75,
        {"softmax", 16384, 2}, {0}},
    {"2. fused softmax, N=4096: time",                        "<= 0.24 s", GOAL_TIME,          0.24,
        {"softmax", 4096, 2}, {0}},
    {"3. softmax, N=4096: causal speedup over non-causal",    ">= 1.8x",   GOAL_SPEEDUP,       1.8,
        {"softmax_causal", 4096, 2},        {"softmax", 4096, 2}},
    {"4. linear, N=4096: time",                               "<= 4 ms",   GOAL_TIME,          .004,
        {"linear", 4096, 2}, {0}},
    {"5. linear, N=4096: rate vs sgemm",                      ">= 60%",    GOAL_RATE,          60,
        {"linear", 4096, 2}, {0}},
    {"5. linear, N=16384: rate vs sgemm",                     ">= 60%",    GOAL_RATE,          60,
        {"linear", 16384, 2}, {0}},
    {"5. linear, N=65536: rate vs sgemm",                     ">= 60%",    GOAL_RATE,          60,
        {"linear", 65536, 2}, {0}},
    {"6. causal linear, N=4096: chunked speedup over recurrent", ">= 1.6x", GOAL_SPEEDUP,      1.6,
        {"linear_causal_chunked", 4096, 2}, {"linear_causal_recurrent", 4096, 2}},
    {"7. linear, N=4096: causal chunked time / non-causal",   "<= 2x",     GOAL_RATIO,         2,
        {"linear_causal_chunked", 4096, 2}, {"linear", 4096, 2}},
    {"8. fused softmax: workspace independent of N (model)",  "equal",     GOAL_SAME_WORKSPACE, 0,
        {"softmax", 1024, 2},               {"softmax", 16384, 2}},
    {"9. 1 thread: fused softmax, N=1024: rate vs sgemm",     ">= 75%",    GOAL_RATE,          75,
        {"softmax", 1024, 1}, {0}},
    {"9. 1 thread: fused softmax, N=4096: rate vs sgemm",     ">= 75%",    GOAL_RATE,          75,
        {"softmax", 4096, 1}, {0}},
    {"9. 1 thread: linear, N=4096: rate vs sgemm",            ">= 60%",    GOAL_RATE,          60,
        {"linear", 4096, 1}, {0}},
    {"9. 1 thread: linear, N=16384: rate vs sgemm",           ">= 60%",    GOAL_RATE,          60,
        {"linear", 16384, 1}, {0}},
    /* backward passes: "series/backward" names the pass */
    {"10. fused softmax, N=4096: backward / forward time",    "<= 2.8x",   GOAL_RATIO,         2.8,
        {"softmax/backward", 4096, 2},  {"softmax", 4096, 2}},
    {"10. causal softmax, N=4096: backward / forward time",   "<= 2.8x",   GOAL_RATIO,         2.8,
        {"softmax_causal/backward", 4096, 2}, {"softmax_causal", 4096, 2}},
    {"10. fused softmax backward, N=1024: rate vs sgemm",     ">= 70%",    GOAL_RATE,          70,
        {"softmax/backward", 1024, 2},  {0}},
    {"10. fused softmax backward, N=2048: rate vs sgemm",     ">= 70%",    GOAL_RATE,          70,
        {"softmax/backward", 2048, 2},  {0}},
    {"10. fused softmax backward, N=4096: rate vs sgemm",     ">= 70%",    GOAL_RATE,          70,
        {"softmax/backward", 4096, 2},  {0}},
    {"10. fused softmax bwd: workspace but D indep. of N (model)", "equal", GOAL_MODEL_SAME_WORKSPACE, 4,
        {"softmax/backward", 1024, 2},  {"softmax/backward", 16384, 2}},
    {"11. linear, N=4096: backward / forward time",           "<= 3x",     GOAL_RATIO,         3,
        {"linear/backward", 4096, 2},   {"linear", 4096, 2}},
    {"11. causal linear chunked, N=4096: backward / forward", "<= 3x",     GOAL_RATIO,         3,
        {"linear_causal_chunked/backward", 4096, 2}, {"linear_causal_chunked", 4096, 2}},
    {"11. causal linear bwd: workspace 16384 vs 4096 (model)", "<= 4.5x", GOAL_MODEL_WORKSPACE_RATIO, 4.5,
        {"linear_causal_chunked/backward", 4096, 2}, {"linear_causal_chunked/backward", 16384, 2}},
    {"12. causal linear bwd, N=4096: chunked over recurrent", ">= 1.6x", GOAL_SPEEDUP,    1.6,
        {"linear_causal_chunked/backward", 4096, 2}, {"linear_causal_recurrent/backward", 4096, 2}},
};
// clang-format on
_Static_assert(sizeof bench_goals_table / sizeof bench_goals_table[0] == N_GOALS,
               "N_GOALS (bench.h) is the length of bench_goals_table");

// clang-format off
const cg_goal bench_ceiling_goals_table[] = {
    {"15. fused softmax, d=64, N=1024: rate vs FMA peak",     ">= 85%",   CG_PEAK,  85,
        {"softmax", 0, 1024, 0, 64, 2, 0}, {0}},
    {"15. fused softmax, d=64, N=4096: rate vs FMA peak",     ">= 85%",   CG_PEAK,  85,
        {"softmax", 0, 4096, 0, 64, 2, 0}, {0}},
    {"15. fused softmax, d=128, N=4096: rate vs FMA peak",    ">= 80%",   CG_PEAK,  80,
        {"softmax", 0, 4096, 0, 128, 2, 0}, {0}},
    {"15. fused softmax, d=32, N=4096: rate vs FMA peak",     ">= 65%",   CG_PEAK,  65,
        {"softmax", 0, 4096, 0, 32, 2, 0}, {0}},
    {"15. causal softmax, d=64, N=4096: rate vs FMA peak",    ">= 80%",   CG_PEAK,  80,
        {"softmax_causal", 0, 4096, 0, 64, 2, 0}, {0}},
    {"15. 1 thread: fused softmax, d=64, N=4096: vs peak",    ">= 88%",   CG_PEAK,  88,
        {"softmax", 0, 4096, 0, 64, 1, 0}, {0}},
    {"15. linear, N=4096: rate vs its roofline bound",        ">= 80%",   CG_ROOF,  80,
        {"linear", 0, 4096, 0, 64, 2, 0}, {0}},
    {"15. linear, N=16384: rate vs its roofline bound",       ">= 80%",   CG_ROOF,  80,
        {"linear", 0, 16384, 0, 64, 2, 0}, {0}},
    {"15. causal linear chunked / non-causal time, N=4096",   "<= 1.25x", CG_RATIO, 1.25,
        {"linear_causal_chunked", 0, 4096, 0, 64, 2, 0}, {"linear", 0, 4096, 0, 64, 2, 0}},
    {"15. causal linear chunked / non-causal time, N=65536",  "<= 1.25x", CG_RATIO, 1.25,
        {"linear_causal_chunked", 0, 65536, 0, 64, 2, 0}, {"linear", 0, 65536, 0, 64, 2, 0}},
    {"15. float64 fused softmax, N=4096: vs float64 peak",    ">= 75%",   CG_PEAK,  75,
        {"softmax", 1, 4096, 0, 64, 2, 0}, {0}},
    {"15. float64 linear, N=4096: vs its float64 bound",      ">= 70%",   CG_ROOF,  70,
        {"linear", 1, 4096, 0, 64, 2, 0}, {0}},
    {"15. decode, t=8192: bytes/s vs read bandwidth",         ">= 70%",   CG_READ,  70,
        {"softmax", 0, 1, 8192, 64, 2, 0}, {0}},
    {"15. decode, t=32768: bytes/s vs read bandwidth",        ">= 70%",   CG_READ,  70,
        {"softmax", 0, 1, 32768, 64, 2, 0}, {0}},
    {"15. one visible key of 8192 (key length 1) / M=1 time", "<= 2x",    CG_RATIO, 2,
        {"softmax", 0, 1, 8192, 64, 2, 1}, {"softmax", 0, 1, 1, 64, 2, 0}},
    {"15. 1 thread: one visible key of 8192 / M=1 time",      "<= 2x",    CG_RATIO, 2,
        {"softmax", 0, 1, 8192, 64, 1, 1}, {"softmax", 0, 1, 1, 64, 1, 0}},
    {"15. FFN, D=512, d_ff=2048, N=512: rate vs sgemm",       ">= 85%",   CG_SGEMM, 85,
        {"ffn", 0, 512, 0, 512, 2, 0}, {0}},
    {"15. FFN, D=512, d_ff=2048, N=2048: rate vs sgemm",      ">= 85%",   CG_SGEMM, 85,
        {"ffn", 0, 2048, 0, 512, 2, 0}, {0}},
};
// clang-format on
_Static_assert(sizeof bench_ceiling_goals_table / sizeof bench_ceiling_goals_table[0] ==
                   N_CEILING_GOALS,
               "N_CEILING_GOALS (bench.h) is the length of bench_ceiling_goals_table");

/* ---------------------------------------------------------------- goals */

/* A goal's point as a bench point: its series' kernel, causal flag and pass (la_status
 * LA_EINVAL when the registry has no such series or the pass is unknown). */
static bench_point point_of(const goal_point *gp)
{
    bench_point pt = {.n = gp->n, .m = gp->n, .threads = gp->threads, .pass = PASS_FORWARD};
    char series[96];
    snprintf(series, sizeof series, "%s", gp->series);
    char *slash = strchr(series, '/');
    if (slash) {
        *slash = 0;
        int i = 0;
        while (pass_kind_names[i] && strcmp(pass_kind_names[i], slash + 1) != 0)
            i++;
        if (!pass_kind_names[i]) pt.status = LA_EINVAL;
        pt.pass = (pass_kind)i;
    }
    if (la_kernel_series_parse(series, &pt.kernel, &pt.causal) != LA_OK) pt.status = LA_EINVAL;
    return pt;
}

static int same_point(const bench_point *a, const bench_point *b)
{
    return a->kernel == b->kernel && a->causal == b->causal && a->n == b->n &&
           a->threads == b->threads && a->pass == b->pass;
}

/* Whether the goal reads a second point. */
static int has_b(const goal *g)
{
    return g->kind != GOAL_RATE && g->kind != GOAL_TIME;
}

/* Whether the goal reads the cost model only (its points are not measured). */
static int model_only(const goal *g)
{
    return g->kind == GOAL_MODEL_SAME_WORKSPACE || g->kind == GOAL_MODEL_WORKSPACE_RATIO;
}

/* The points the goals read, each once, in the order they are first named, the largest
 * thread count first (the yardstick is measured once per count). Returns the count. */
static size_t list_goal_points(bench_point *out)
{
    size_t n = 0;
    for (int pass_threads = 64; pass_threads >= 1; pass_threads--)
        for (size_t i = 0; i < N_GOALS; i++)
            for (int which = 0;
                 which < 1 + has_b(&bench_goals_table[i]) && !model_only(&bench_goals_table[i]);
                 which++) {
                const goal_point *gp = which ? &bench_goals_table[i].b : &bench_goals_table[i].a;
                if (gp->threads != pass_threads) continue;
                bench_point pt = point_of(gp);
                if (pt.status != LA_OK) continue; /* no such series: the goal says so */
                size_t j = 0;
                while (j < n && !same_point(&out[j], &pt))
                    j++;
                if (j == n) out[n++] = pt;
            }
    return n;
}

/* The measured point of a goal, or NULL (its series is not in the registry). */
static const bench_point *find_goal_point(const bench_point *points, size_t n, const goal_point *gp)
{
    bench_point want = point_of(gp);
    if (want.status != LA_OK) return NULL;
    for (size_t i = 0; i < n; i++)
        if (same_point(&points[i], &want)) return &points[i];
    return NULL;
}

/* "skipped: why" for a point that was not measured, into buf; returns whether it was. */
static int was_measured(const bench_point *pt, const goal_point *gp, char *buf, size_t size)
{
    if (pt && pt->status == LA_OK && !isnan(pt->gflops)) return 1;
    if (!pt)
        snprintf(buf, size, "skipped: no series %s", gp->series);
    else
        snprintf(buf, size, "skipped: %s",
                 pt->status == LA_OK ? "no FLOP model" : bench_skip_reason(pt));
    return 0;
}

/* Whether a goal's point needs a backward its kernel does not have. */
static int lacks_backward(const goal_point *gp)
{
    const bench_point pt = point_of(gp);
    return pt.status == LA_OK && !pass_kernel_has(pt.kernel, pt.pass);
}

/* The cost model's workspace of a goal's point as the bench calls it (pass_cost; NAN when
 * it has none). */
static double model_workspace(const goal_point *gp, const bench_shape *s)
{
    const bench_point pt = point_of(gp);
    const la_problem p = bench_problem_of(&pt, s);
    la_cost cost;
    if (pt.status != LA_OK || pass_cost(pt.kernel, &p, pt.pass, LA_FLOAT32, &cost) != LA_OK)
        return NAN;
    return cost.workspace_bytes;
}

/* Times a ratio or speedup goal g's two points again, in turn (pass_time_calls; bench.h's
 * bench_pair says why), into *pair (pair->timed stays 0 when either was not measured in
 * the table, or the two run on different thread counts). Each call has its own out (a
 * backward reads its own forward's). Returns 0, or 1 when out of memory. */
static int time_pair(const goal *g, const bench_point *points, size_t n, const bench_run *run,
                     bench_pair *pair)
{
    *pair = (bench_pair){0};
    const bench_point *a = find_goal_point(points, n, &g->a);
    const bench_point *b = find_goal_point(points, n, &g->b);
    if (!a || !b || a->status != LA_OK || b->status != LA_OK || a->threads != b->threads) return 0;
    const bench_point two[2] = {*a, *b};
    bench_inputs in;
    if (bench_prepare_inputs(two, 2, &run->shape, run->source, &in) != 0) {
        cli_line("bench: goals: out of memory");
        return 1;
    }
    const size_t n_out =
        inputs_float_count(run->shape.heads, a->n > b->n ? a->n : b->n, run->shape.d_v);
    float *out_b = malloc(n_out * sizeof *out_b);
    if (!out_b) {
        bench_free_inputs(&in);
        cli_line("bench: goals: out of memory");
        return 1;
    }
    const la_problem p[2] = {bench_problem_of(a, &run->shape), bench_problem_of(b, &run->shape)};
    const pass_arrays arrays[2] = {
        {in.q, in.k, in.v, in.out, in.d_out, in.d_q, in.d_k, in.d_v},
        {in.q, in.k, in.v, out_b, in.d_out, in.d_q, in.d_k, in.d_v},
    };
    const pass_spec calls[2] = {{a->kernel, &p[0], a->pass, &arrays[0]},
                                {b->kernel, &p[1], b->pass, &arrays[1]}};
    if (la_get_num_threads() != a->threads) la_set_num_threads(a->threads);
    const timer_rule rule = bench_rule_for(&run->rule, fmax(a->t.median_s, b->t.median_s));
    timer_result t[2];
    la_status st[2];
    pass_time_calls(2, calls, &rule, t, st);
    free(out_b);
    bench_free_inputs(&in);
    if (st[0] == LA_ENOMEM || st[1] == LA_ENOMEM) {
        cli_line("bench: goals: out of memory");
        return 1;
    }
    if (st[0] == LA_OK && st[1] == LA_OK) *pair = (bench_pair){1, t[0], t[1]};
    return 0;
}

enum { GOAL_NOT_MET = 0, GOAL_MET = 1, GOAL_NO_BACKWARD = 2 };

/* One goal's line; returns GOAL_MET, GOAL_NOT_MET, or GOAL_NO_BACKWARD when a point it
 * reads needs a backward pass the library does not have (verdict "skipped: no
 * backward"). */
static int print_goal(const goal *g, const bench_point *points, size_t n, const bench_shape *s,
                      const bench_pair *pair)
{
    if (lacks_backward(&g->a) || (has_b(g) && lacks_backward(&g->b))) {
        printf("%-58s %-10s %-46s %s\n", g->text, g->target, "-", "skipped: no backward");
        return GOAL_NO_BACKWARD;
    }
    const bench_point *a = find_goal_point(points, n, &g->a);
    const bench_point *b = has_b(g) ? find_goal_point(points, n, &g->b) : NULL;
    char got[64] = "";
    int met = 0;
    switch (g->kind) {
    case GOAL_RATE:
        if (was_measured(a, &g->a, got, sizeof got)) {
            snprintf(got, sizeof got, "%.1f%% (%.1f GFLOP/s)", a->pct_of_sgemm, a->gflops);
            met = a->pct_of_sgemm >= g->value;
        }
        break;
    case GOAL_TIME:
        if (was_measured(a, &g->a, got, sizeof got)) {
            if (g->value < 0.1)
                snprintf(got, sizeof got, "%.3f ms", a->t.median_s * 1e3);
            else
                snprintf(got, sizeof got, "%.4g s", a->t.median_s);
            met = a->t.median_s <= g->value;
        }
        break;
    case GOAL_SPEEDUP:
    case GOAL_RATIO: {
        /* speedup: b's time over a's; ratio: a's over b's */
        const bench_point *num = g->kind == GOAL_SPEEDUP ? b : a;
        const bench_point *den = g->kind == GOAL_SPEEDUP ? a : b;
        const goal_point *num_gp = g->kind == GOAL_SPEEDUP ? &g->b : &g->a;
        const goal_point *den_gp = g->kind == GOAL_SPEEDUP ? &g->a : &g->b;
        if (was_measured(num, num_gp, got, sizeof got) &&
            was_measured(den, den_gp, got, sizeof got)) {
            /* the two timed in turn when they could be (time_pair), else the table's */
            const double ta = pair->timed ? pair->a.median_s : a->t.median_s;
            const double tb = pair->timed ? pair->b.median_s : b->t.median_s;
            const double t_num = g->kind == GOAL_SPEEDUP ? tb : ta;
            const double t_den = g->kind == GOAL_SPEEDUP ? ta : tb;
            const double ratio = t_num / t_den;
            snprintf(got, sizeof got, "%.2fx (%.4g s / %.4g s%s)", ratio, t_num, t_den,
                     pair->timed ? ", in turn" : "");
            met = g->kind == GOAL_SPEEDUP ? ratio >= g->value : ratio <= g->value;
        }
        break;
    }
    case GOAL_SAME_WORKSPACE: {
        /* the cost model's, which does not need the kernel to have run */
        const double wa = a ? a->workspace_bytes : NAN, wb = b ? b->workspace_bytes : NAN;
        snprintf(got, sizeof got, "%.0f B at %zu, %.0f B at %zu", wa, g->a.n, wb, g->b.n);
        met = !isnan(wa) && wa == wb;
        break;
    }
    case GOAL_MODEL_SAME_WORKSPACE:
    case GOAL_MODEL_WORKSPACE_RATIO: {
        double wa = model_workspace(&g->a, s), wb = model_workspace(&g->b, s);
        if (g->kind == GOAL_MODEL_SAME_WORKSPACE) {
            /* less value bytes per query and head, rounded up to 64 as the library
             * rounds them: the softmax backward's row dots D_i = dO_i·O_i (B = 1) */
            wa -= ceil(g->value * (double)s->heads * (double)g->a.n / 64) * 64;
            wb -= ceil(g->value * (double)s->heads * (double)g->b.n / 64) * 64;
            snprintf(got, sizeof got, "%.0f B at %zu, %.0f B at %zu", wa, g->a.n, wb, g->b.n);
            met = !isnan(wa) && wa == wb;
        } else {
            snprintf(got, sizeof got, "%.2fx (%.0f B / %.0f B)", wb / wa, wb, wa);
            met = !isnan(wa) && !isnan(wb) && wa > 0 && wb / wa <= g->value;
        }
        break;
    }
    }
    printf("%-58s %-10s %-46s %s\n", g->text, g->target, got, met ? "yes" : "no");
    return met ? GOAL_MET : GOAL_NOT_MET;
}

/* The goal table; its exit status is 0 whether or not the goals are met (a benchmark is
 * not a test), 1 when something ran out of memory. */
int bench_run_goals(int argc, char **argv, int reps)
{
    bench_point points[2 * N_GOALS];
    const size_t count = list_goal_points(points);
    inputs_source random;
    inputs_source_open(&random, NULL, NULL, NULL, 1);
    char inputs[256];
    inputs_source_describe(&random, inputs, sizeof inputs);
    metadata_extra(inputs);
    const bench_run run = {argc,         argv,         {8, 64, 64, NULL},
                           NULL,         PASS_FORWARD, {reps, 1, MIN_TOTAL_S},
                           FORMAT_TABLE, &random};
    int failed = bench_run_points(&run, points, count);
    cg_measured measured[2 * N_CEILING_GOALS];
    cg_ceilings ceils[3] = {{0}};
    size_t n_measured = 0;
    bench_pair cg_pairs[N_CEILING_GOALS] = {{0}};
    if (!failed) failed = bench_cg_measure_all(measured, &n_measured, ceils, cg_pairs, reps);
    bench_pair pairs[N_GOALS] = {{0}};
    for (size_t i = 0; i < N_GOALS && !failed; i++) {
        const goal_kind kind = bench_goals_table[i].kind;
        if (kind == GOAL_RATIO || kind == GOAL_SPEEDUP)
            failed = time_pair(&bench_goals_table[i], points, count, &run, &pairs[i]);
    }
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    int met = 0, no_backward = 0;
    printf("\n%-58s %-10s %-46s %s\n", "goal (2 threads unless noted)", "target", "measured",
           "met");
    for (size_t i = 0; i < N_GOALS; i++) {
        const int verdict = print_goal(&bench_goals_table[i], points, count, &run.shape, &pairs[i]);
        met += verdict == GOAL_MET;
        no_backward += verdict == GOAL_NO_BACKWARD;
    }
    for (size_t i = 0; i < N_CEILING_GOALS; i++)
        met += bench_cg_print_goal(&bench_ceiling_goals_table[i], measured, n_measured, ceils,
                                   &cg_pairs[i]);
    const int total = (int)(N_GOALS + N_CEILING_GOALS);
    if (no_backward)
        printf("goals met: %d of %d (%d skipped: no backward)\n", met, total, no_backward);
    else
        printf("goals met: %d of %d\n", met, total);
    return failed;
}

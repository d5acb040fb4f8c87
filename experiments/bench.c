/* bench.c — `linattn bench`: float32 attention kernels timed alone, against BLIS sgemm on
 * a large well-shaped product measured in the same process, so the ratio of the two
 * rates means something; and `--goals`, the goal table on fixed points. */
#include "commands.h"
#include "common/cli.h"
#include "common/inputs.h"
#include "common/record.h" /* res_time: the one timer; the machine facts for the header */
#include "common/sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn bench [--variant LIST] [--n LIST] [--m M] [--heads H] [--d D] [--dv DV]\n"
    "                     [--causal] [--causal-form chunked|recurrent|chunked,recurrent]\n"
    "                     [--threads T] [--reps R] [--format table|csv]\n"
    "       linattn bench --goals [--reps R]\n"
    "\n"
    "Times float32 attention kernels alone and compares their arithmetic rate with BLIS\n"
    "sgemm measured in the same process. The inputs (random, fixed seed, batch B = 1) are\n"
    "prepared before any timing. Each point runs once to warm up, then at least R times\n"
    "and until the timed runs total 0.5 s (at most 1000 runs, so small sizes still get a\n"
    "stable median); the median, min and max of those runs are reported.\n"
    "\n"
    "The yardstick is BLIS sgemm on a large, well-shaped product: C (2000×2000) =\n"
    "A (2000×2000) · B (2000×2000), row-major, 2·2000³ FLOPs, on BLIS's own threads with\n"
    "the same thread count T as the kernels, timed by the same rule. It is the rate this\n"
    "machine reaches on dense float32 products through BLIS. It is not the hardware's\n"
    "limit: the header also gives the FMA peak (16-lane FMAs in registers, the same\n"
    "threads), and a kernel with its own register tiles can pass 100% of sgemm where\n"
    "BLIS's kernels are not tuned for the CPU.\n"
    "\n"
    "variants (--variant takes a comma-separated list; default all four):\n"
    "  softmax               fused streaming softmax: never holds the N×M scores\n"
    "  softmax-materialized  the N×M scores, their softmax, then ·V; skipped when the\n"
    "                        scores would exceed the 4 GiB workspace limit\n"
    "  linear                linear attention, φ = elu+1; with --causal, the chunked form\n"
    "                        or the token-by-token recurrent form (--causal-form)\n"
    "  hard                  argmax attention\n"
    "\n"
    "columns (--format table or csv; the same names in both):\n"
    "  variant          as above; the row \"sgemm\" is the yardstick (n, m, d, dv: 2000)\n"
    "  causal           csv: 0 or 1, and causal_form: chunked, recurrent or - (only causal\n"
    "                   linear has a form); table: no, yes, or the causal linear form\n"
    "  n, m             queries N and keys M per head\n"
    "  heads, d, dv     H, d_k and d_v (csv only; the table's header gives them)\n"
    "  threads          OpenMP threads of the kernel; BLIS threads of the sgemm row\n"
    "  runs             timed runs\n"
    "  median_s, min_s, max_s\n"
    "                   seconds per call over those runs\n"
    "  gflops           FLOPs / median_s / 1e9, with the FLOPs of the library's one model\n"
    "                   (la_attention_cost, lib/attention/cost.c): the visible (query, key) pairs\n"
    "                   only, so causal softmax counts about half of non-causal\n"
    "  pct_of_sgemm     100 · gflops / the yardstick's gflops at the same thread count\n"
    "  workspace_bytes  the scratch the kernel allocates, from the cost model: a model of\n"
    "                   its allocations, not a measurement\n"
    "  sgemm_gflops     the yardstick's rate (csv only; the table's header gives it)\n"
    "  status / note    ok, or skipped: why (a kernel error such as a refused workspace)\n"
    "The lines starting with # give the command, CPU, cores, load average, git commit,\n"
    "BLIS kernels and the yardstick's rate.\n"
    "\n"
    "options (default in brackets):\n"
    "  --variant LIST   comma-separated variants [softmax,softmax-materialized,linear,hard]\n"
    "  --n LIST         comma-separated query counts N [512,2048,8192]\n"
    "  --m M            key count M [N]\n"
    "  --heads H        heads [8]\n"
    "  --d D            d_k [64]\n"
    "  --dv DV          d_v [D]\n"
    "  --causal         causal mask: query i sees keys j <= i\n"
    "  --causal-form F  causal linear attention: chunked, recurrent or chunked,recurrent\n"
    "                   [chunked,recurrent]; only with --causal\n"
    "  --threads T      threads for kernels and sgemm, T >= 1 [LA_NUM_THREADS, else all\n"
    "                   cores]\n"
    "  --reps R         at least R timed runs per point, 1 <= R <= 1000 [5]\n"
    "  --format F       table or csv [table]; rows are printed as they are measured\n"
    "\n"
    "--goals measures the project's performance goals instead, on fixed points (float32,\n"
    "B = 1, H = 8, d_k = d_v = 64, 2 threads; then 1 thread, the yardstick re-measured):\n"
    "fused softmax >= 75% of sgemm (N = 1024 … 16384) and <= 0.24 s at N = 4096; causal\n"
    "softmax >= 1.8× faster than non-causal; linear <= 4 ms at N = 4096 and >= 60% of sgemm\n"
    "(N = 4096, 16384, 65536); causal linear chunked >= 1.6× faster than recurrent and\n"
    "within 2× of non-causal; fused softmax workspace the same at N = 1024 and 16384; and\n"
    "the two rate goals again on 1 thread. It prints the measurement table, one line per\n"
    "goal (goal, target, measured, met) and \"goals met: X of Y\". To bound its time\n"
    "(under a minute), a point that cannot take under 1 s per call even at the sgemm\n"
    "rate runs min(R, 3) times, and a warm-up of 1 s or more counts as the first run.\n"
    "`make bench` runs it and keeps the output in build/bench.txt.\n"
    "\n"
    "exit status: 0 done (also when goals are not met or a kernel was skipped), 1 out of\n"
    "memory, 2 bad flags\n"
    "\n"
    "examples:\n"
    "  linattn bench --variant softmax,linear --n 1024,4096 --threads 2\n"
    "  linattn bench --variant linear --n 4096 --causal --format csv > linear.csv\n"
    "  linattn bench --goals\n";

void cmd_bench_help(FILE *out)
{
    fputs(help_text, out);
}

/* ---------------------------------------------------------------- points */

/* The variants as the command line names them (la_kernel_name spells some with
 * underscores, and "linear" covers two kernels): map explicitly. */
typedef enum { V_SOFTMAX, V_SOFTMAX_MATERIALIZED, V_LINEAR, V_HARD, V_COUNT } variant;
static const char *const variant_names[] = {"softmax", "softmax-materialized", "linear", "hard",
                                            NULL};

/* How causal linear attention runs; FORM_NONE for every other point. */
typedef enum { FORM_NONE = -1, FORM_CHUNKED = 0, FORM_RECURRENT = 1 } causal_form;
static const char *const form_names[] = {"chunked", "recurrent", NULL};

/* Sizes shared by every point of a run. */
typedef struct {
    size_t heads, d_k, d_v;
} bench_shape;

/* One measurement: what to run, then (after measure_point) what was measured. */
typedef struct {
    variant variant;
    int causal;
    causal_form form;
    size_t n, m;
    int threads;
    la_status status; /* LA_OK, or why the point was skipped */
    res_timing t;
    double gflops, pct_of_sgemm; /* NAN when the FLOP model has no count */
    double workspace_bytes;      /* the cost model's; NAN when it has none */
} bench_point;

static la_kernel kernel_of(const bench_point *pt)
{
    switch (pt->variant) {
    case V_SOFTMAX: return LA_KERNEL_SOFTMAX;
    case V_SOFTMAX_MATERIALIZED: return LA_KERNEL_SOFTMAX_MATERIALIZED;
    case V_HARD: return LA_KERNEL_HARD;
    default: break;
    }
    /* linear: the chunked form is the linear kernel with p.causal set */
    return pt->form == FORM_RECURRENT ? LA_KERNEL_LINEAR_RECURRENT : LA_KERNEL_LINEAR;
}

static la_problem problem_of(const bench_point *pt, const bench_shape *s)
{
    la_problem p;
    la_problem_init(&p, 1, s->heads, pt->n, pt->m, s->d_k, s->d_v);
    p.causal = pt->causal;
    return p;
}

/* The table's causal column: no, yes, or the form of causal linear attention. */
static const char *causal_label(const bench_point *pt)
{
    if (!pt->causal) return "no";
    return pt->form == FORM_NONE ? "yes" : form_names[pt->form];
}

/* ---------------------------------------------------------------- timing */

enum { MAX_RUNS = 1000, GOALS_SLOW_REPS = 3 };
static const double MIN_TOTAL_S = 0.5;
static const double GOALS_SLOW_S = 1.0;

/* How many runs a point gets. The plain bench follows --reps exactly (the warm-up is
 * never counted); --goals keeps its runtime bounded on slow points. */
typedef struct {
    int reps;
    int budgeted; /* --goals */
} timing_rule;

/* res_time's rule for a point. predicted_s is a lower bound on one call (its FLOPs at
 * the sgemm rate): under --goals a point that cannot be faster than GOALS_SLOW_S runs
 * min(R, GOALS_SLOW_REPS) times, and a warm-up of GOALS_SLOW_S or more is kept as the
 * first run (res_rule.slow_s), so N = 16384 fused softmax (seconds per call) costs three
 * calls, not six. */
static res_rule rule_for(const timing_rule *rule, double predicted_s)
{
    if (!rule->budgeted) return (res_rule){rule->reps, MAX_RUNS, MIN_TOTAL_S, INFINITY};
    int reps = rule->reps;
    if (predicted_s >= GOALS_SLOW_S && reps > GOALS_SLOW_REPS) reps = GOALS_SLOW_REPS;
    return (res_rule){reps, MAX_RUNS, MIN_TOTAL_S, GOALS_SLOW_S};
}

/* ---------------------------------------------------------------- the yardstick */

enum { SGEMM_SIZE = 2000 };

typedef struct {
    int threads;
    res_timing t;
    double gflops;
    double peak_gflops; /* the FMA peak on the same threads (NAN: not measurable here) */
} sgemm_result;

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
static int measure_sgemm(int threads, const timing_rule *rule, sgemm_result *out)
{
    const size_t count = (size_t)SGEMM_SIZE * SGEMM_SIZE;
    float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
    float *c = malloc(count * sizeof *c);
    int rc = -1;
    if (a && b && c) {
        in_rng r = in_rng_for(1, "bench sgemm");
        in_fill_normal_f32(&r, a, count, 1.0);
        in_fill_normal_f32(&r, b, count, 1.0);
        sgemm_call g = {threads, a, b, c};
        out->threads = threads;
        const res_rule sgemm_rule = rule_for(rule, 0);
        rc = res_time(run_sgemm, &g, &sgemm_rule, &out->t);
        if (rc == 0)
            out->gflops = 2.0 * SGEMM_SIZE * SGEMM_SIZE * SGEMM_SIZE / out->t.median_s * 1e-9;
        out->peak_gflops = la_fma_peak_gflops(threads);
    }
    free(a);
    free(b);
    free(c);
    return rc ? -1 : 0;
}

/* ---------------------------------------------------------------- kernels */

/* q: (H, N_max, d_k), k: (H, M_max, d_k), v: (H, M_max, d_v), out: (H, N_max, d_v), filled
 * once for the largest point; a smaller point reads a prefix as its (1, H, N, d) arrays. */
typedef struct {
    float *q, *k, *v, *out;
} bench_inputs;

static void free_inputs(bench_inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->out);
}

/* Allocates and fills the inputs for every point. Returns 0, or -1 (no memory). */
static int prepare_inputs(const bench_point *points, size_t count, const bench_shape *s,
                          bench_inputs *in)
{
    size_t n_max = 0, m_max = 0;
    for (size_t i = 0; i < count; i++) {
        if (points[i].n > n_max) n_max = points[i].n;
        if (points[i].m > m_max) m_max = points[i].m;
    }
    const size_t n_q = in_float_count(s->heads, n_max, s->d_k);
    const size_t n_k = in_float_count(s->heads, m_max, s->d_k);
    const size_t n_v = in_float_count(s->heads, m_max, s->d_v);
    const size_t n_out = in_float_count(s->heads, n_max, s->d_v);
    *in = (bench_inputs){NULL, NULL, NULL, NULL};
    if (!n_q || !n_k || !n_v || !n_out) return -1;
    in->q = malloc(n_q * sizeof(float));
    in->k = malloc(n_k * sizeof(float));
    in->v = malloc(n_v * sizeof(float));
    in->out = malloc(n_out * sizeof(float));
    if (!in->q || !in->k || !in->v || !in->out) {
        free_inputs(in);
        return -1;
    }
    in_rng r = in_rng_for(1, "bench");
    in_fill_normal_f32(&r, in->q, n_q, 1.0);
    in_fill_normal_f32(&r, in->k, n_k, 1.0);
    in_fill_normal_f32(&r, in->v, n_v, 1.0);
    return 0;
}

/* Times one point on the prepared inputs and fills its measured fields: GFLOP/s from the
 * FLOP model, its share of the yardstick, the model's workspace. On the current threads. */
static void measure_point(bench_point *pt, const bench_shape *s, const bench_inputs *in,
                          const timing_rule *rule, const sgemm_result *sgemm)
{
    const la_kernel kernel = kernel_of(pt);
    const la_problem p = problem_of(pt, s);
    la_cost cost;
    const int have_cost = la_attention_cost(kernel, &p, LA_FLOAT32, &cost) == LA_OK;
    const double flops = have_cost ? cost.flops_total : NAN;
    pt->workspace_bytes = have_cost ? cost.workspace_bytes : NAN;
    pt->gflops = pt->pct_of_sgemm = NAN;

    const double predicted_s = have_cost ? flops / (sgemm->gflops * 1e9) : 0;
    const res_rule point_rule = rule_for(rule, predicted_s);
    pt->status = res_time_kernel(kernel, &p, in->q, in->k, in->v, in->out, &point_rule, &pt->t);
    if (pt->status != LA_OK || !have_cost) return;
    pt->gflops = flops / pt->t.median_s * 1e-9;
    pt->pct_of_sgemm = 100.0 * pt->gflops / sgemm->gflops;
}

/* ---------------------------------------------------------------- output */

typedef enum { FORMAT_TABLE, FORMAT_CSV } out_format;
static const char *const format_names[] = {"table", "csv", NULL};

static const char *const csv_columns =
    "variant,causal,causal_form,n,m,heads,d,dv,threads,runs,median_s,min_s,max_s,gflops,"
    "pct_of_sgemm,workspace_bytes,sgemm_gflops,status";

/* The FMA peak beside the yardstick: how far below the hardware sgemm itself runs. */
static void print_peak(const sgemm_result *sgemm)
{
    if (isnan(sgemm->peak_gflops))
        printf("# fma_peak_gflops: - (no AVX-512 FMA loop on this CPU)\n");
    else
        printf("# fma_peak_gflops: %.1f (%d threads, 16-lane FMAs in registers; sgemm runs at "
               "%.0f%% of it)\n",
               sgemm->peak_gflops, sgemm->threads, 100 * sgemm->gflops / sgemm->peak_gflops);
}

/* The # lines both formats start with: what ran, where, on what, against what. */
static void print_header(int argc, char **argv, const bench_shape *s, const char *m_text,
                         const timing_rule *rule, const sgemm_result *sgemm)
{
    printf("# linattn bench: float32 attention kernels against BLIS sgemm, one process\n");
    printf("# command: linattn");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n# cpu: %s\n", res_cpu_model());
    printf("# cores: %d\n", res_cores());
    printf("# load_average: %s (other processes on the cores add noise)\n", res_load_average());
    printf("# git_commit: %s\n", res_git_commit());
    printf("# blis: %s\n", la_blis_config());
    printf("# float32 kernels: %s\n", la_simd_config());
    printf("# shape: B=1 H=%zu d_k=%zu d_v=%zu M=%s\n", s->heads, s->d_k, s->d_v,
           m_text ? m_text : "N");
    printf("# timing: one warm-up, then >= %d runs until they total %.1f s (at most %d)%s\n",
           rule->reps, MIN_TOTAL_S, MAX_RUNS,
           rule->budgeted ? "; slow points fewer (see linattn help bench)" : "");
    printf("# sgemm_gflops: %.1f (C 2000x2000 = A 2000x2000 * B 2000x2000, row-major, %d "
           "threads, median %.4f s of %d runs)\n",
           sgemm->gflops, sgemm->threads, sgemm->t.median_s, sgemm->t.reps);
    print_peak(sgemm);
}

static void print_columns(out_format format)
{
    if (format == FORMAT_CSV)
        printf("%s\n", csv_columns);
    else
        printf("%-20s %-9s %7s %7s %7s %5s %10s %10s %10s %8s %12s %15s  %s\n", "variant", "causal",
               "n", "m", "threads", "runs", "median_s", "min_s", "max_s", "gflops", "pct_of_sgemm",
               "workspace_bytes", "note");
}

static void print_sgemm(out_format format, const sgemm_result *g)
{
    const res_timing *t = &g->t;
    if (format == FORMAT_CSV)
        printf("sgemm,0,-,%d,%d,1,%d,%d,%d,%d,%.6g,%.6g,%.6g,%.2f,100.00,,%.2f,ok\n", SGEMM_SIZE,
               SGEMM_SIZE, SGEMM_SIZE, SGEMM_SIZE, g->threads, t->reps, t->median_s, t->min_s,
               t->max_s, g->gflops, g->gflops);
    else
        printf("%-20s %-9s %7d %7d %7d %5d %10.4g %10.4g %10.4g %8.1f %12.1f %15s  %s\n", "sgemm",
               "-", SGEMM_SIZE, SGEMM_SIZE, g->threads, t->reps, t->median_s, t->min_s, t->max_s,
               g->gflops, 100.0, "-", "the yardstick");
    fflush(stdout);
}

/* One point's row, skipped or measured. Numbers the point does not have are empty (csv)
 * or "-" (table). */
static void print_point(out_format format, const bench_point *pt, const bench_shape *s,
                        const sgemm_result *sgemm)
{
    const int csv = format == FORMAT_CSV, ok = pt->status == LA_OK;
    const char *time_format = csv ? "%.6g" : "%.4g", *rate_format = csv ? "%.2f" : "%.1f";
    char runs[16] = "0", median[32], min[32], max[32], gflops[32], pct[32], workspace[32];
    char note[96] = "ok";
    strcpy(median, csv ? "" : "-");
    strcpy(min, median);
    strcpy(max, median);
    strcpy(gflops, median);
    strcpy(pct, median);
    strcpy(workspace, median);
    if (ok) {
        snprintf(runs, sizeof runs, "%d", pt->t.reps);
        snprintf(median, sizeof median, time_format, pt->t.median_s);
        snprintf(min, sizeof min, time_format, pt->t.min_s);
        snprintf(max, sizeof max, time_format, pt->t.max_s);
    } else {
        snprintf(note, sizeof note, "skipped: %s", la_strerror(pt->status));
    }
    if (!isnan(pt->gflops)) {
        snprintf(gflops, sizeof gflops, rate_format, pt->gflops);
        snprintf(pct, sizeof pct, rate_format, pt->pct_of_sgemm);
    }
    if (!isnan(pt->workspace_bytes))
        snprintf(workspace, sizeof workspace, "%.0f", pt->workspace_bytes);

    const char *name = variant_names[pt->variant];
    if (csv)
        printf("%s,%d,%s,%zu,%zu,%zu,%zu,%zu,%d,%s,%s,%s,%s,%s,%s,%s,%.2f,%s\n", name, pt->causal,
               pt->form == FORM_NONE ? "-" : form_names[pt->form], pt->n, pt->m, s->heads, s->d_k,
               s->d_v, pt->threads, runs, median, min, max, gflops, pct, workspace, sgemm->gflops,
               note);
    else
        printf("%-20s %-9s %7zu %7zu %7d %5s %10s %10s %10s %8s %12s %15s%s%s\n", name,
               causal_label(pt), pt->n, pt->m, pt->threads, ok ? runs : "-", median, min, max,
               gflops, pct, workspace, ok ? "" : "  ", ok ? "" : note);
    fflush(stdout);
}

/* ---------------------------------------------------------------- a run */

typedef struct {
    int argc;
    char **argv;
    bench_shape shape;
    const char *m_text; /* --m as given, for the header; NULL: M = N */
    timing_rule rule;
    out_format format;
} bench_run;

/* Measures and prints every point in order. The yardstick is measured before the first
 * point and again whenever the thread count changes (--goals), and printed as a row.
 * Returns 0, or 1 when something ran out of memory (the rest still runs). */
static int run_points(const bench_run *run, bench_point *points, size_t count)
{
    bench_inputs in;
    if (prepare_inputs(points, count, &run->shape, &in) != 0) {
        fprintf(stderr, "linattn: bench: inputs: out of memory\n");
        return 1;
    }
    int failed = 0;
    sgemm_result sgemm = {0};
    for (size_t i = 0; i < count; i++) {
        bench_point *pt = &points[i];
        if (i == 0 || pt->threads != sgemm.threads) {
            la_set_num_threads(pt->threads);
            if (measure_sgemm(pt->threads, &run->rule, &sgemm) != 0) {
                fprintf(stderr, "linattn: bench: sgemm yardstick: out of memory\n");
                free_inputs(&in);
                return 1;
            }
            if (i == 0) {
                print_header(run->argc, run->argv, &run->shape, run->m_text, &run->rule, &sgemm);
                print_columns(run->format);
            } else {
                printf("# threads: %d from here on; the yardstick re-measured\n", pt->threads);
                print_peak(&sgemm);
            }
            print_sgemm(run->format, &sgemm);
        }
        measure_point(pt, &run->shape, &in, &run->rule, &sgemm);
        if (pt->status == LA_ENOMEM) failed = 1;
        print_point(run->format, pt, &run->shape, &sgemm);
    }
    free_inputs(&in);
    return failed;
}

/* ---------------------------------------------------------------- goals */

/* The points the goals need, measured once each. */
enum {
    G_SOFTMAX_1024,
    G_SOFTMAX_2048,
    G_SOFTMAX_4096,
    G_SOFTMAX_8192,
    G_SOFTMAX_16384,
    G_SOFTMAX_CAUSAL_4096,
    G_LINEAR_4096,
    G_LINEAR_16384,
    G_LINEAR_65536,
    G_LINEAR_CHUNKED_4096,
    G_LINEAR_RECURRENT_4096,
    G1_SOFTMAX_1024, /* G1_: one thread */
    G1_SOFTMAX_4096,
    G1_LINEAR_4096,
    G1_LINEAR_16384,
    G_POINT_COUNT
};

/* Unset fields are zero: status LA_OK, nothing measured yet. */
#define GOAL_POINT(v, c, f, size, thr)                                                             \
    {                                                                                              \
        .variant = v, .causal = c, .form = f, .n = size, .m = size, .threads = thr                 \
    }
static const bench_point goal_points[G_POINT_COUNT] = {
    [G_SOFTMAX_1024] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 1024, 2),
    [G_SOFTMAX_2048] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 2048, 2),
    [G_SOFTMAX_4096] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 4096, 2),
    [G_SOFTMAX_8192] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 8192, 2),
    [G_SOFTMAX_16384] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 16384, 2),
    [G_SOFTMAX_CAUSAL_4096] = GOAL_POINT(V_SOFTMAX, 1, FORM_NONE, 4096, 2),
    [G_LINEAR_4096] = GOAL_POINT(V_LINEAR, 0, FORM_NONE, 4096, 2),
    [G_LINEAR_16384] = GOAL_POINT(V_LINEAR, 0, FORM_NONE, 16384, 2),
    [G_LINEAR_65536] = GOAL_POINT(V_LINEAR, 0, FORM_NONE, 65536, 2),
    [G_LINEAR_CHUNKED_4096] = GOAL_POINT(V_LINEAR, 1, FORM_CHUNKED, 4096, 2),
    [G_LINEAR_RECURRENT_4096] = GOAL_POINT(V_LINEAR, 1, FORM_RECURRENT, 4096, 2),
    [G1_SOFTMAX_1024] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 1024, 1),
    [G1_SOFTMAX_4096] = GOAL_POINT(V_SOFTMAX, 0, FORM_NONE, 4096, 1),
    [G1_LINEAR_4096] = GOAL_POINT(V_LINEAR, 0, FORM_NONE, 4096, 1),
    [G1_LINEAR_16384] = GOAL_POINT(V_LINEAR, 0, FORM_NONE, 16384, 1),
};
#undef GOAL_POINT

typedef struct {
    int met, total;
} goal_tally;

static void goal_line(goal_tally *tally, const char *goal, const char *target, const char *measured,
                      int met)
{
    printf("%-58s %-10s %-36s %s\n", goal, target, measured, met ? "yes" : "no");
    tally->met += met;
    tally->total++;
}

/* "skipped: why" for a point that was not measured, into buf; returns whether it was. */
static int was_measured(const bench_point *pt, char *buf, size_t size)
{
    if (pt->status == LA_OK && !isnan(pt->gflops)) return 1;
    snprintf(buf, size, "skipped: %s",
             pt->status == LA_OK ? "no FLOP model" : la_strerror(pt->status));
    return 0;
}

/* A rate goal: the point at >= min_pct of the yardstick of its thread count. */
static void rate_goal(goal_tally *tally, const char *prefix, const bench_point *pt, double min_pct)
{
    char goal[96], target[32], got[64] = "";
    snprintf(goal, sizeof goal, "%s%s, N=%zu: rate vs sgemm", prefix,
             pt->variant == V_SOFTMAX ? "fused softmax" : "linear", pt->n);
    snprintf(target, sizeof target, ">= %.0f%%", min_pct);
    int ok = was_measured(pt, got, sizeof got);
    if (ok) snprintf(got, sizeof got, "%.1f%% (%.1f GFLOP/s)", pt->pct_of_sgemm, pt->gflops);
    goal_line(tally, goal, target, got, ok && pt->pct_of_sgemm >= min_pct);
}

/* A speed goal: slow's median over fast's median >= min_ratio (or, with max_ratio, fast's
 * over slow's <= max_ratio). */
static void ratio_goal(goal_tally *tally, const char *goal, const char *target,
                       const bench_point *num, const bench_point *den, double min_ratio,
                       double max_ratio)
{
    char got[64] = "";
    int ok = was_measured(num, got, sizeof got) && was_measured(den, got, sizeof got);
    double ratio = ok ? num->t.median_s / den->t.median_s : NAN;
    if (ok)
        snprintf(got, sizeof got, "%.2fx (%.4g s / %.4g s)", ratio, num->t.median_s,
                 den->t.median_s);
    goal_line(tally, goal, target, got, ok && ratio >= min_ratio && ratio <= max_ratio);
}

/* A time goal: the point's median <= max_s, shown in ms when the target is below 0.1 s. */
static void time_goal(goal_tally *tally, const char *goal, const char *target,
                      const bench_point *pt, double max_s)
{
    char got[64] = "";
    int ok = was_measured(pt, got, sizeof got);
    if (ok && max_s < 0.1)
        snprintf(got, sizeof got, "%.3f ms", pt->t.median_s * 1e3);
    else if (ok)
        snprintf(got, sizeof got, "%.4g s", pt->t.median_s);
    goal_line(tally, goal, target, got, ok && pt->t.median_s <= max_s);
}

static void print_goals(const bench_point *pt)
{
    goal_tally tally = {0, 0};
    printf("\n%-58s %-10s %-36s %s\n", "goal (2 threads unless noted)", "target", "measured",
           "met");
    for (int i = G_SOFTMAX_1024; i <= G_SOFTMAX_16384; i++)
        rate_goal(&tally, "1. ", &pt[i], 75);
    time_goal(&tally, "2. fused softmax, N=4096: time", "<= 0.24 s", &pt[G_SOFTMAX_4096], 0.24);
    ratio_goal(&tally, "3. softmax, N=4096: causal speedup over non-causal", ">= 1.8x",
               &pt[G_SOFTMAX_4096], &pt[G_SOFTMAX_CAUSAL_4096], 1.8, INFINITY);
    time_goal(&tally, "4. linear, N=4096: time", "<= 4 ms", &pt[G_LINEAR_4096], 0.004);
    for (int i = G_LINEAR_4096; i <= G_LINEAR_65536; i++)
        rate_goal(&tally, "5. ", &pt[i], 60);
    ratio_goal(&tally, "6. causal linear, N=4096: chunked speedup over recurrent", ">= 1.6x",
               &pt[G_LINEAR_RECURRENT_4096], &pt[G_LINEAR_CHUNKED_4096], 1.6, INFINITY);
    ratio_goal(&tally, "7. linear, N=4096: causal chunked time / non-causal", "<= 2x",
               &pt[G_LINEAR_CHUNKED_4096], &pt[G_LINEAR_4096], 0, 2.0);

    /* 8: the cost model's workspace, which does not need the kernel to have run */
    const double w_small = pt[G_SOFTMAX_1024].workspace_bytes,
                 w_large = pt[G_SOFTMAX_16384].workspace_bytes;
    char got[64];
    snprintf(got, sizeof got, "%.0f B at 1024, %.0f B at 16384", w_small, w_large);
    goal_line(&tally, "8. fused softmax: workspace independent of N (model)", "equal", got,
              !isnan(w_small) && w_small == w_large);

    rate_goal(&tally, "9. 1 thread: ", &pt[G1_SOFTMAX_1024], 75);
    rate_goal(&tally, "9. 1 thread: ", &pt[G1_SOFTMAX_4096], 75);
    rate_goal(&tally, "9. 1 thread: ", &pt[G1_LINEAR_4096], 60);
    rate_goal(&tally, "9. 1 thread: ", &pt[G1_LINEAR_16384], 60);
    printf("goals met: %d of %d\n", tally.met, tally.total);
}

/* The goal table; its exit status is 0 whether or not the goals are met (a benchmark is
 * not a test), 1 when something ran out of memory. */
static int run_goals(int argc, char **argv, int reps)
{
    bench_point points[G_POINT_COUNT];
    memcpy(points, goal_points, sizeof points);
    const bench_run run = {argc, argv, {8, 64, 64}, NULL, {reps, 1}, FORMAT_TABLE};
    int failed = run_points(&run, points, G_POINT_COUNT);
    print_goals(points);
    return failed;
}

/* ---------------------------------------------------------------- flags */

enum { MAX_LIST = 32 };

/* The points of a plain run: every N, every variant, and both causal forms of linear
 * when asked. Returns the count (at most MAX_LIST · (V_COUNT + 1)). */
static size_t list_points(const size_t *sizes, size_t n_sizes, size_t m_fixed, const int *variants,
                          size_t n_variants, int causal, const int *forms, size_t n_forms,
                          int threads, bench_point *out)
{
    size_t count = 0;
    for (size_t i = 0; i < n_sizes; i++) {
        for (size_t j = 0; j < n_variants; j++) {
            const bench_point base = {.variant = (variant)variants[j],
                                      .causal = causal,
                                      .form = FORM_NONE,
                                      .n = sizes[i],
                                      .m = m_fixed ? m_fixed : sizes[i],
                                      .threads = threads};
            if (variants[j] != V_LINEAR || !causal) {
                out[count++] = base;
                continue;
            }
            for (size_t f = 0; f < n_forms; f++) {
                out[count] = base;
                out[count++].form = (causal_form)forms[f];
            }
        }
    }
    return count;
}

int cmd_bench(int argc, char **argv)
{
    const char *variant_text = NULL, *n_text = NULL, *m_text = NULL, *heads_text = NULL;
    const char *d_text = NULL, *dv_text = NULL, *form_text = NULL, *threads_text = NULL;
    const char *reps_text = NULL, *format_text = NULL;
    int causal = 0, goals = 0;
    const cli_flag flags[] = {
        {"variant", &variant_text, NULL},
        {"n", &n_text, NULL},
        {"m", &m_text, NULL},
        {"heads", &heads_text, NULL},
        {"d", &d_text, NULL},
        {"dv", &dv_text, NULL},
        {"causal", NULL, &causal},
        {"causal-form", &form_text, NULL},
        {"threads", &threads_text, NULL},
        {"reps", &reps_text, NULL},
        {"format", &format_text, NULL},
        {"goals", NULL, &goals},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;

    int reps = 5;
    if (reps_text && (rc = cli_parse_int("--reps", reps_text, &reps))) return rc;
    if (reps < 1 || reps > MAX_RUNS) return cli_fail("--reps", "must be in [1, %d]", MAX_RUNS);
    if (goals) {
        /* the goals fix their own points, threads and format */
        for (const cli_flag *f = flags; f->name; f++) {
            const int given = f->value ? *f->value != NULL : *f->present;
            if (given && strcmp(f->name, "goals") != 0 && strcmp(f->name, "reps") != 0)
                return cli_fail("--goals", "runs fixed points; only --reps goes with it, not --%s",
                                f->name);
        }
        return run_goals(argc, argv, reps);
    }

    int variants[V_COUNT] = {V_SOFTMAX, V_SOFTMAX_MATERIALIZED, V_LINEAR, V_HARD};
    int forms[2] = {FORM_CHUNKED, FORM_RECURRENT}, threads = 0, format = FORMAT_TABLE;
    size_t n_variants = V_COUNT, n_forms = 2;
    size_t sizes[MAX_LIST] = {512, 2048, 8192}, n_sizes = 3, m = 0;
    bench_shape shape = {8, 64, 0};
    if (variant_text && (rc = cli_parse_choice_list("--variant", variant_text, variant_names,
                                                    variants, V_COUNT, &n_variants)))
        return rc;
    if (n_text && (rc = sw_parse_size_list("--n", n_text, sizes, MAX_LIST, &n_sizes))) return rc;
    if (m_text && (rc = sw_parse_positive("--m", m_text, &m))) return rc;
    if (heads_text && (rc = sw_parse_positive("--heads", heads_text, &shape.heads))) return rc;
    if (d_text && (rc = sw_parse_positive("--d", d_text, &shape.d_k))) return rc;
    shape.d_v = shape.d_k;
    if (dv_text && (rc = sw_parse_positive("--dv", dv_text, &shape.d_v))) return rc;
    if (form_text && !causal)
        return cli_fail("--causal-form", "only with --causal (non-causal linear has one form)");
    if (form_text &&
        (rc = cli_parse_choice_list("--causal-form", form_text, form_names, forms, 2, &n_forms)))
        return rc;
    if (threads_text && (rc = cli_parse_int("--threads", threads_text, &threads))) return rc;
    if (threads_text && threads < 1) return cli_fail("--threads", "must be >= 1");
    if (format_text && (rc = cli_parse_choice("--format", format_text, format_names, &format)))
        return rc;
    if (threads_text) la_set_num_threads(threads);

    bench_point points[MAX_LIST * (V_COUNT + 1)];
    const size_t count = list_points(sizes, n_sizes, m, variants, n_variants, causal, forms,
                                     n_forms, la_get_num_threads(), points);
    for (size_t i = 0; i < count; i++) {
        const la_problem p = problem_of(&points[i], &shape);
        const la_status st = la_problem_check(&p);
        if (st != LA_OK)
            return cli_fail(m_text ? "--m" : "--n", "N=%zu, M=%zu with H=%zu, d=%zu, dv=%zu: %s",
                            points[i].n, points[i].m, shape.heads, shape.d_k, shape.d_v,
                            la_strerror(st));
    }
    const bench_run run = {argc, argv, shape, m_text, {reps, 0}, (out_format)format};
    return run_points(&run, points, count);
}

/* bench.c — `linattn bench`: every attention kernel (float32) against BLIS sgemm on a
 * product of the same FLOP count, timed in one process so the ratio means something. */
#include "cli.h"
#include "commands.h"
#include "internal.h" /* la_gemm_f32, la_threads: the sgemm yardstick */
#include "results.h"  /* res_time: the one timer */

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const cmd_bench_help =
    "usage: linattn bench [--n LIST] [--d D] [--heads H] [--batch B] [--reps R]\n"
    "                     [--threads T] [--causal]\n"
    "\n"
    "Times every float32 attention kernel (softmax, softmax_materialized, hard, linear,\n"
    "linear_recurrent) on random inputs with N = M, and BLIS sgemm on a product with the\n"
    "FLOP count of QKᵀ plus PV: per head, C (N×M) = A (N×(d_k+d_v)) · B ((d_k+d_v)×M)\n"
    "in panels of 512 rows, spread over the threads as the kernels spread their tasks\n"
    "(BLIS single-threaded per call, as in the kernels). Each is run once to warm up,\n"
    "then at least R times and until the timed runs total 0.5 s (at most 1000 runs),\n"
    "so small sizes get enough runs for a stable median. A kernel that returns an\n"
    "error (a stub, or linear_recurrent without --causal) is listed as skipped with\n"
    "the reason.\n"
    "\n"
    "columns:\n"
    "  runs              timed runs\n"
    "  median_s, min_s   wall time of one call over those runs\n"
    "  gflops            FLOPs / median_s, FLOPs from la_attention_cost (lib/cost.c): the\n"
    "                    visible pairs only, so causal counts its half; sgemm: 2·N·M·(d_k+d_v)\n"
    "                    per head\n"
    "  vs_sgemm          gflops / sgemm's gflops at the same N\n"
    "\n"
    "options (default in brackets):\n"
    "  --n LIST      comma-separated sequence lengths N = M [512,2048,8192]\n"
    "  --d D         d_k = d_v = D [64]\n"
    "  --heads H     heads [8]\n"
    "  --batch B     batch entries [1]\n"
    "  --reps R      at least R timed runs per point, 1 <= R <= 1000 [5]\n"
    "  --threads T   OpenMP threads, T >= 1 [LA_NUM_THREADS, else all cores]\n"
    "  --causal      causal mask (halves the softmax work; needed by linear_recurrent)\n"
    "\n"
    "exit status: 0 done, 1 a kernel or sgemm could not be timed (out of memory),\n"
    "2 bad flags\n"
    "\n"
    "example:\n"
    "  linattn bench --n 1024,4096 --reps 3 --threads 1\n";

/* Uniform in [-1, 1), from a fixed-seed xorshift: the same inputs on every run. */
static void fill_uniform(float *x, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        x[i] = (float)((double)(*state >> 11) * 0x1.0p-52 - 1.0);
    }
}

/* The kernel's FLOPs from the one FLOP model (la_attention_cost), NAN when it has none. */
static double kernel_flops(la_kernel kernel, const la_problem *p)
{
    la_cost cost;
    return la_attention_cost(kernel, p, LA_FLOAT32, &cost) == LA_OK ? cost.flops_total : NAN;
}

/* One kernel call, for res_time: returns its status (0 = LA_OK). */
typedef struct {
    la_kernel kernel;
    const la_problem *p;
    const float *q, *k, *v;
    float *out;
} kernel_call;

static int run_kernel(void *ctx)
{
    const kernel_call *c = ctx;
    return (int)la_attention_f32(c->kernel, c->p, c->q, c->k, c->v, c->out);
}

/* One sgemm pass over every head, for res_time: per head, C (N×M) = A (N×kk) · B (kk×M)
 * computed in panels of SGEMM_PANEL rows, so each thread holds one panel of C rather
 * than all of it (512 rows × M: 16 MiB at M = 8192); the panels are still large enough
 * for BLIS's blocking. */
enum { SGEMM_PANEL = 512 };

typedef struct {
    size_t n, m, kk, heads;
    int threads;
    const float *a, *b;
    float *c; /* threads × (SGEMM_PANEL × m) */
} sgemm_call;

static int run_sgemm(void *ctx)
{
    const sgemm_call *g = ctx;
    const size_t panels = (g->n + SGEMM_PANEL - 1) / SGEMM_PANEL;
    const size_t rows_max = g->n < SGEMM_PANEL ? g->n : SGEMM_PANEL;
#pragma omp parallel for schedule(dynamic) num_threads(g->threads)
    for (size_t task = 0; task < g->heads * panels; task++) {
        const size_t i0 = (task % panels) * SGEMM_PANEL;
        const size_t rows = g->n - i0 < SGEMM_PANEL ? g->n - i0 : SGEMM_PANEL;
        float *mine = g->c + (size_t)omp_get_thread_num() * rows_max * g->m;
        la_gemm_f32(rows, g->m, g->kk, 1, g->a + i0 * g->kk, (ptrdiff_t)g->kk, 1, g->b,
                    (ptrdiff_t)g->m, 1, 0, mine, (ptrdiff_t)g->m, 1);
    }
    return 0;
}

/* One untimed warm-up, then at least reps timed runs and until they total
 * MIN_TOTAL_S, at most MAX_RUNS. */
enum { MAX_RUNS = 1000 };
static const double MIN_TOTAL_S = 0.5;

static int time_reps(res_body body, void *ctx, int reps, res_timing *t)
{
    return res_time(body, ctx, reps, MAX_RUNS, MIN_TOTAL_S, INFINITY, t);
}

/* sgemm with the FLOPs of QKᵀ + PV: per head C (N×M) = A (N×kk) · B (kk×M), kk =
 * d_k + d_v, (head, row panel) tasks over the threads. Returns 0, or -1 (no memory). */
static int time_sgemm(const la_problem *p, int reps, res_timing *t)
{
    sgemm_call g = {
        p->n_queries, p->n_keys, p->d_k + p->d_v, p->batch * p->heads, la_threads(), NULL,
        NULL,         NULL};
    const size_t tasks = g.heads * ((g.n + SGEMM_PANEL - 1) / SGEMM_PANEL);
    if ((size_t)g.threads > tasks) g.threads = (int)tasks;
    float *a = malloc(g.n * g.kk * sizeof *a), *b = malloc(g.kk * g.m * sizeof *b);
    const size_t rows_max = g.n < SGEMM_PANEL ? g.n : SGEMM_PANEL;
    float *c = malloc((size_t)g.threads * rows_max * g.m * sizeof *c);
    int rc = -1;
    if (a && b && c) {
        uint64_t seed = 0x2545f4914f6cdd1dull;
        fill_uniform(a, g.n * g.kk, &seed);
        fill_uniform(b, g.kk * g.m, &seed);
        g.a = a;
        g.b = b;
        g.c = c;
        rc = time_reps(run_sgemm, &g, reps, t);
    }
    free(a);
    free(b);
    free(c);
    return rc;
}

/* Parses "512,2048,8192" into at most max sizes >= 1. */
static int parse_list(const char *text, size_t *out, size_t max, size_t *count)
{
    char buf[256];
    if (strlen(text) >= sizeof buf) return cli_fail("--n", "list too long");
    strcpy(buf, text);
    *count = 0;
    for (char *item = strtok(buf, ","); item; item = strtok(NULL, ",")) {
        if (*count == max) return cli_fail("--n", "more than %zu sizes", max);
        int rc = cli_parse_size("--n", item, &out[*count]);
        if (rc) return rc;
        if (out[*count] == 0) return cli_fail("--n", "sizes must be >= 1");
        (*count)++;
    }
    if (*count == 0) return cli_fail("--n", "needs at least one size");
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    const char *n_text = NULL, *d_text = NULL, *heads_text = NULL, *batch_text = NULL;
    const char *reps_text = NULL, *threads_text = NULL;
    int causal = 0;
    const cli_flag flags[] = {
        {"n", &n_text, NULL},         {"d", &d_text, NULL},       {"heads", &heads_text, NULL},
        {"batch", &batch_text, NULL}, {"reps", &reps_text, NULL}, {"threads", &threads_text, NULL},
        {"causal", NULL, &causal},    {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;

    size_t sizes[32] = {512, 2048, 8192}, n_sizes = 3, d = 64, heads = 8, batch = 1;
    int reps = 5, threads = 0;
    if (n_text && (rc = parse_list(n_text, sizes, 32, &n_sizes))) return rc;
    if (d_text && (rc = cli_parse_size("--d", d_text, &d))) return rc;
    if (heads_text && (rc = cli_parse_size("--heads", heads_text, &heads))) return rc;
    if (batch_text && (rc = cli_parse_size("--batch", batch_text, &batch))) return rc;
    if (reps_text && (rc = cli_parse_int("--reps", reps_text, &reps))) return rc;
    if (threads_text && (rc = cli_parse_int("--threads", threads_text, &threads))) return rc;
    if (d == 0) return cli_fail("--d", "must be >= 1");
    if (heads == 0) return cli_fail("--heads", "must be >= 1");
    if (batch == 0) return cli_fail("--batch", "must be >= 1");
    if (reps < 1 || reps > 1000) return cli_fail("--reps", "must be in [1, 1000]");
    if (threads_text && threads < 1) return cli_fail("--threads", "must be >= 1");
    if (threads_text) la_set_num_threads(threads);

    printf("# linattn bench: float32, B=%zu H=%zu d_k=d_v=%zu, %s, %d threads; one warm-up, "
           "then >= %d timed runs totalling >= %.1f s\n",
           batch, heads, d, causal ? "causal" : "non-causal", la_threads(), reps, MIN_TOTAL_S);
    printf("# cpu: %s, %d cores, load average %s, git %s\n", res_cpu_model(), res_cores(),
           res_load_average(), res_git_commit());
    printf("# blis kernels: %s\n", la_blis_config());
    printf("# gflops: kernels from la_attention_cost's flops_total; sgemm 2·N·M·(d_k+d_v) "
           "per head\n");
    printf("%-22s %7s %5s %12s %12s %9s %9s  %s\n", "kernel", "n", "runs", "median_s", "min_s",
           "gflops", "vs_sgemm", "note");
    int failed = 0;
    for (size_t si = 0; si < n_sizes; si++) {
        const size_t n = sizes[si];
        la_problem p;
        la_problem_init(&p, batch, heads, n, n, d, d);
        p.causal = causal;
        if (la_problem_check(&p) != LA_OK) {
            rc = cli_fail("--n", "%zu: problem too large", n);
            break;
        }
        /* the yardstick: sgemm with the FLOPs of the full QKᵀ + PV */
        res_timing t;
        if (time_sgemm(&p, reps, &t) != 0) {
            fprintf(stderr, "linattn: bench: sgemm at n=%zu: out of memory\n", n);
            failed = 1;
            continue;
        }
        const double sgemm_gflops = 2.0 * (double)n * (double)n * (double)(2 * d) *
                                    (double)(batch * heads) / t.median_s * 1e-9;
        printf("%-22s %7zu %5d %12.6f %12.6f %9.1f %9.2f\n", "sgemm", n, t.reps, t.median_s,
               t.min_s, sgemm_gflops, 1.0);
        fflush(stdout);

        const size_t n_in = batch * heads * n * d;
        float *q = malloc(n_in * sizeof *q), *k = malloc(n_in * sizeof *k);
        float *v = malloc(n_in * sizeof *v), *out = malloc(n_in * sizeof *out);
        if (!q || !k || !v || !out) {
            fprintf(stderr, "linattn: bench: inputs at n=%zu: out of memory\n", n);
            failed = 1;
            free(q);
            free(k);
            free(v);
            free(out);
            continue;
        }
        uint64_t seed = 0x9e3779b97f4a7c15ull;
        fill_uniform(q, n_in, &seed);
        fill_uniform(k, n_in, &seed);
        fill_uniform(v, n_in, &seed);
        for (int kernel = 0; kernel < LA_KERNEL_COUNT; kernel++) {
            const char *name = la_kernel_name((la_kernel)kernel);
            kernel_call call = {(la_kernel)kernel, &p, q, k, v, out};
            la_status st = (la_status)time_reps(run_kernel, &call, reps, &t);
            if (st != LA_OK) {
                printf("%-22s %7zu %5s %12s %12s %9s %9s  skipped: %s\n", name, n, "-", "-", "-",
                       "-", "-", la_strerror(st));
                if (st == LA_ENOMEM) failed = 1;
                continue;
            }
            const double flops = kernel_flops((la_kernel)kernel, &p);
            if (isnan(flops)) {
                printf("%-22s %7zu %5d %12.6f %12.6f %9s %9s  %s\n", name, n, t.reps, t.median_s,
                       t.min_s, "-", "-", "no FLOP model");
            } else {
                const double gflops = flops / t.median_s * 1e-9;
                printf("%-22s %7zu %5d %12.6f %12.6f %9.1f %9.2f\n", name, n, t.reps, t.median_s,
                       t.min_s, gflops, gflops / sgemm_gflops);
            }
            fflush(stdout);
        }
        free(q);
        free(k);
        free(v);
        free(out);
    }
    if (rc) return rc;
    return failed;
}

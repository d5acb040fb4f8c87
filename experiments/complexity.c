/* complexity.c — `linattn complexity`: Vaswani et al.'s Table 1 ("Attention Is All You
 * Need"), measured. At a fixed d, for each N of a sweep, times one layer of each type on
 * the same random (N, d) input, the types' repetitions interleaved at each point:
 * self-attention (the fused softmax kernel, one head of d), recurrent (la_rnn_forward),
 * convolutional (la_conv1d_forward, width k), restricted self-attention (the registry's
 * "local" kernel, window r, when the library has it) and linear attention (non-causal,
 * and causal as its token-by-token recurrence). Then fits each type's exponent of time
 * in N over the upper half of its points (common/stats.h, as scaling does) and prints
 * the table: complexity per layer (theory), measured exponent with its 95% bootstrap
 * interval, sequential operations, maximum path length. Writes complexity.csv
 * (one row per layer type and N) and complexity_fit.csv (the table). */
#include "commands.h"
#include "common/inputs.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/stats.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn complexity [--n LIST] [--d D] [--kernel-width K] [--window R]\n"
    "                          [shared flags]\n"
    "\n"
    "Vaswani et al.'s Table 1 (\"Attention Is All You Need\") measured: at a fixed d, for\n"
    "each N, times one float32 layer of each type on the same random (N, d) input (one\n"
    "sequence, one head), their repetitions interleaved at each point (round r times\n"
    "type 1, 2, ..., then round r + 1), and records per point the median, min, max and\n"
    "quartiles of the time, and the FLOPs of the library's models. The layer types:\n"
    "  self_attention        softmax attention, fused kernel    O(N^2*d)    1   1\n"
    "  recurrent             h_t = tanh(W_h h_{t-1} + W_x x_t + b)\n"
    "                                                           O(N*d^2)    N   N\n"
    "  convolutional         1-D convolution, width k, d -> d   O(k*N*d^2)  1   log_k(N)\n"
    "  restricted_attention  softmax over the keys within r     O(r*N*d)    1   N/r\n"
    "                        (the registry's \"local\" kernel; left out, with a note, when\n"
    "                        this library has none)\n"
    "  linear_attention      linear attention, non-causal       O(N*d^2)    1   1\n"
    "  linear_attention_recurrent  causal, token by token       O(N*d^2)    N   1\n"
    "(columns: complexity per layer, sequential operations, maximum path length).\n"
    "\n"
    "Then fits log(time) = e*log(N) + c per layer type over the upper half of its\n"
    "measured N, with a 95% bootstrap interval of e (2000 resamples, fixed seed) and R^2,\n"
    "and prints the table: complexity per layer, measured exponent [interval],\n"
    "sequential operations, maximum path length. A fit needs at least 4 points in the\n"
    "upper half (at least 7 lengths of N); with fewer the points are recorded and no\n"
    "exponent is given.\n"
    "\n"
    "  --n LIST           sequence lengths, " SWEEP_SYNTAX "\n"
    "                     (default 128:8192), measured in increasing order\n"
    "  --d D              features d of every layer (and the attention head size;\n"
    "                     default 64)\n"
    "  --kernel-width K   the convolution's width k, odd (default 3)\n"
    "  --window R         restricted attention's window r: query i sees keys j with\n"
    "                     |i - j| <= r (default 64)\n" SWEEP_COMMON_HELP
    "                     (defaults: --out complexity.csv --max-seconds 10\n"
    "                     --max-mem 8G)\n"
    "\n"
    "A point predicted (from the type's previous point and its theoretical exponent) to\n"
    "take longer than --max-seconds, or to hold more than --max-mem, is recorded as\n"
    "skipped_time or skipped_mem instead of run; weights (W_x, W_h and the convolution's\n"
    "k*d*d) beyond --max-mem are refused before anything is written. Also writes\n"
    "<out>_fit.csv with one row per layer type: the table with the fitted exponents.\n";

void cmd_complexity_help(FILE *out)
{
    fputs(help_text, out);
}

/* ---------------------------------------------------------------- the layer types */

typedef enum {
    L_ATTENTION,
    L_RECURRENT,
    L_CONVOLUTIONAL,
    L_RESTRICTED,
    L_LINEAR,
    L_LINEAR_RECURRENT,
    L_COUNT
} layer_kind;

/* Table 1's row of each type (with linear attention's two forms), and the exponent of
 * time in N its complexity predicts at fixed d, k, r. */
static const struct {
    const char *name, *complexity, *sequential_ops, *path_length;
    double exponent;
} LAYERS[L_COUNT] = {
    [L_ATTENTION] = {"self_attention", "O(N^2*d)", "1", "1", 2},
    [L_RECURRENT] = {"recurrent", "O(N*d^2)", "N", "N", 1},
    [L_CONVOLUTIONAL] = {"convolutional", "O(k*N*d^2)", "1", "log_k(N)", 1},
    [L_RESTRICTED] = {"restricted_attention", "O(r*N*d)", "1", "N/r", 1},
    [L_LINEAR] = {"linear_attention", "O(N*d^2)", "1", "1", 1},
    [L_LINEAR_RECURRENT] = {"linear_attention_recurrent", "O(N*d^2)", "N", "1", 1},
};

enum { MAX_POINTS = 64 };

static const char COLUMNS[] =
    "layer,n,d,kernel_width,window,threads,status,reps,median_s,min_s,max_s,q1_s,q3_s,flops,"
    "complexity,sequential_ops,path_length,predicted_s";
enum { N_KEY = 6 };

static const char FIT_COLUMNS[] =
    "layer,d,kernel_width,window,threads,complexity,sequential_ops,path_length,theory_exponent,"
    "fitted_exponent,exponent_ci_lo,exponent_ci_hi,r_squared,prefactor_s,fit_n_min,fit_n_max,"
    "fit_points";

typedef struct {
    size_t ns[MAX_POINTS], n_ns; /* increasing */
    size_t d, width, window;
    sweep_common common;
    int have[L_COUNT]; /* the types this run measures */
    la_kernel local;   /* the "local" kernel, when have[L_RESTRICTED] */
} config;

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Returns 0, or 2 after one line on stderr. */
static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *width = NULL, *window = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},
        {"d", &d, NULL},
        {"kernel-width", &width, NULL},
        {"window", &window, NULL},
        SWEEP_COMMON_FLAGS(common),
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->d = 64, c->width = 3, c->window = LA_DEFAULT_WINDOW;
    if (n) {
        if ((rc = sweep_parse("--n", n, 2, c->ns, MAX_POINTS, &c->n_ns))) return rc;
    } else {
        c->n_ns = sweep_geometric(128, 8192, 2, c->ns, MAX_POINTS);
    }
    qsort(c->ns, c->n_ns, sizeof c->ns[0], cmp_size);
    if ((d && (rc = sweep_parse_positive("--d", d, &c->d))) ||
        (width && (rc = sweep_parse_positive("--kernel-width", width, &c->width))) ||
        (window && (rc = sweep_parse_positive("--window", window, &c->window))))
        return rc;
    if (c->width % 2 == 0)
        return cli_fail("--kernel-width",
                        "%zu is even: the width must be odd (position i sees i - k/2 .. i + k/2)",
                        c->width);
    /* the largest point's arrays, N·d floats and k·d·d weights, addressable */
    if ((rc = sweep_check_floats("--n", c->ns[c->n_ns - 1], c->d, 1)) ||
        (rc = sweep_check_floats("--kernel-width", c->width, c->d, c->d)))
        return rc;
    if ((rc = sweep_common_finish(&common, &c->common, "complexity.csv", 10, 8.0 * (1 << 30))))
        return rc;
    /* every point holds the weights, W_x, W_h and the convolution's k·d·d floats */
    const double weights = (2.0 + (double)c->width) * (double)c->d * (double)c->d * sizeof(float);
    if ((rc = sweep_check_memory(width ? "--kernel-width" : "--d", weights, c->common.max_mem,
                                 "--max-mem (default 8G, at most the memory here)")))
        return rc;
    for (int l = 0; l < L_COUNT; l++)
        c->have[l] = 1;
    c->have[L_RESTRICTED] = la_kernel_parse("local", &c->local) == LA_OK;
    return 0;
}

/* ---------------------------------------------------------------- one point */

/* The inputs of one point: x (N, d), also the attention's Q; K, V (N, d); the layers'
 * weights W_x, W_h (d, d), the convolution's (k, d, d), b (d); one output (N, d). */
typedef struct {
    float *x, *k, *v, *out;
    float *w_x, *w_h, *w_conv, *b;
} inputs;

static void free_inputs(inputs *in)
{
    free(in->x), free(in->k), free(in->v), free(in->out);
    free(in->w_x), free(in->w_h), free(in->w_conv), free(in->b);
    *in = (inputs){0};
}

/* Random inputs ~ N(0, 1), weights ~ N(0, 1/d) (tanh not saturated), from the seed. */
static int fill_inputs(inputs *in, const config *c, size_t n)
{
    const size_t nx = n * c->d, dd = c->d * c->d;
    free_inputs(in);
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
    size_t n, d, width;
    const inputs *in;
} body_ctx;

static int run_layer(void *ctx)
{
    const body_ctx *b = ctx;
    const inputs *in = b->in;
    switch (b->kind) {
    case L_RECURRENT:
        return (int)la_rnn_forward_f32(1, b->n, b->d, in->x, in->w_x, in->w_h, in->b, in->out);
    case L_CONVOLUTIONAL:
        return (int)la_conv1d_forward_f32(1, b->n, b->d, b->width, in->x, in->w_conv, in->b,
                                          in->out);
    default: return (int)la_attention_f32(b->kernel, &b->p, in->x, in->k, in->v, in->out);
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
    if (l == L_RESTRICTED) ctx->p.window = c->window;
    ctx->p.workspace_limit =
        c->common.max_mem < (double)SIZE_MAX ? (size_t)c->common.max_mem : SIZE_MAX;
    la_cost cost;
    la_status st = la_attention_cost(ctx->kernel, &ctx->p, LA_FLOAT32, &cost);
    if (st != LA_OK) return st;
    *flops = cost.flops_total;
    *bytes += cost.workspace_bytes;
    return LA_OK;
}

/* What a sweep remembers of a type's last measured point, to predict the next. */
typedef struct {
    double last_n, last_s; /* last ok point (last_n = 0: none so far) */
    int over_time;         /* a smaller N was already over the time budget */
} track;

/* The key of a point: layer,n,d,kernel_width,window,threads */
static void point_key(char *key, size_t size, const config *c, layer_kind l, size_t n)
{
    snprintf(key, size, "%s,%zu,%zu,%zu,%zu,%d", LAYERS[l].name, n, c->d, c->width, c->window,
             la_get_num_threads());
}

/* Measures every type at one N: points already in the file (--resume) kept, points over
 * a budget recorded as skipped, the others timed together, interleaved, then recorded.
 * Returns 0, 1 (out of memory, write failed) or 2 (refused with its line). */
static int measure_point(record_file *f, const config *c, size_t n, track *tracks, inputs *in)
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
        point_key(key, sizeof key, c, (layer_kind)l, n);
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
        point_key(key, sizeof key, c, l, n);
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

/* ---------------------------------------------------------------- the table */

/* Fits each type over the upper half of its ok points, prints the table and writes it to
 * the fit file. Returns 0, or -1 when the fit file could not be written. */
static int write_table(record_file *f, const config *c, int argc, char **argv)
{
    char path[4096], err[512];
    record_sibling_path(c->common.out, "fit", path, sizeof path);
    record_file *fit =
        record_open(path, "complexity_fit",
                    "Vaswani et al.'s Table 1 with measured exponents: least-squares "
                    "exponent of median time in N over the upper half of each layer "
                    "type's points; 95% pairs-bootstrap interval, 2000 resamples, "
                    "fixed seed",
                    FIT_COLUMNS, 1, 0, argc, argv, err, sizeof err);
    if (!fit) {
        cli_line("%s", err);
        return -1;
    }
    printf("complexity: d = %zu, k = %zu, r = %zu\n", c->d, c->width, c->window);
    printf("complexity: %-27s %-12s %-24s %-11s %s\n", "layer", "per layer",
           "measured exponent [95%]", "sequential", "path length");
    int rc = 0;
    for (int l = 0; l < L_COUNT && rc == 0; l++) {
        if (!c->have[l]) continue;
        double n[MAX_POINTS], t[MAX_POINTS];
        size_t count = 0;
        for (size_t i = 0; i < c->n_ns; i++) {
            char key[256], status[32];
            point_key(key, sizeof key, c, (layer_kind)l, c->ns[i]);
            const char *row = record_find(f, key);
            double s;
            if (!row || record_get_str(f, row, "status", status, sizeof status) != 0 ||
                strcmp(status, "ok") != 0 || record_get(f, row, "median_s", &s) != 0)
                continue;
            n[count] = (double)c->ns[i], t[count++] = s;
        }
        const size_t from = count / 2; /* the upper half of the curve */
        char head[512], measured[64];
        snprintf(head, sizeof head, "%s,%zu,%zu,%zu,%d,%s,%s,%s,%g", LAYERS[l].name, c->d, c->width,
                 c->window, la_get_num_threads(), LAYERS[l].complexity, LAYERS[l].sequential_ops,
                 LAYERS[l].path_length, LAYERS[l].exponent);
        stats_fit e;
        if (stats_fit_loglog(n + from, t + from, count - from, STATS_BOOTSTRAP_SEED, &e) != 0) {
            snprintf(measured, sizeof measured, "no fit (%zu points)", count - from);
            rc = record_row(fit, "%s,,,,,,,,%zu", head, count - from);
        } else {
            snprintf(measured, sizeof measured, "%.2f [%.2f, %.2f]", e.exponent, e.ci_lo, e.ci_hi);
            rc = record_row(fit, "%s,%.4f,%.4f,%.4f,%.5f,%.6e,%.0f,%.0f,%d", head, e.exponent,
                            e.ci_lo, e.ci_hi, e.r_squared, e.prefactor, e.x_min, e.x_max, e.points);
        }
        printf("complexity: %-27s %-12s %-24s %-11s %s\n", LAYERS[l].name, LAYERS[l].complexity,
               measured, LAYERS[l].sequential_ops, LAYERS[l].path_length);
    }
    if (!c->have[L_RESTRICTED])
        printf("complexity: %-27s %-12s %-24s %-11s %s\n", LAYERS[L_RESTRICTED].name,
               LAYERS[L_RESTRICTED].complexity, "not measured (see note)",
               LAYERS[L_RESTRICTED].sequential_ops, LAYERS[L_RESTRICTED].path_length);
    if (rc) cli_line("%s: write failed", path);
    printf("complexity: exponents over the upper half of each type's N (fit needs >= %d "
           "points there); wrote %s and %s\n",
           STATS_MIN_FIT_POINTS, record_path(f), path);
    return record_close(fit) != 0 || rc ? -1 : 0;
}

int cmd_complexity(int argc, char **argv)
{
    config c;
    memset(&c, 0, sizeof c);
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    const machine_report *busy = machine_check();

    char meta[512], err[512];
    snprintf(meta, sizeof meta,
             "# inputs: random normal, seed %llu; weights N(0, 1/d), biases N(0, 0.25)\n%s",
             (unsigned long long)c.common.seed,
             c.have[L_RESTRICTED] ? ""
                                  : "# note: restricted_attention not measured: this library "
                                    "has no \"local\" kernel (la_kernel_parse)\n");
    record_meta_extra(meta);
    record_file *f =
        record_open(c.common.out, "complexity",
                    "time of one layer of each type of Vaswani et al.'s Table 1 against "
                    "N at fixed d (float32, one sequence, one head; one row per layer "
                    "type and n)",
                    COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        cli_line("%s", err);
        record_meta_extra(NULL);
        return 2;
    }
    if (!c.have[L_RESTRICTED])
        printf("complexity: note: restricted_attention not measured: this library has no "
               "\"local\" kernel\n");

    /* progress is weighted by self-attention's N², which dominates every point */
    double total_work = 0;
    for (size_t i = 0; i < c.n_ns; i++)
        total_work += (double)c.ns[i] * (double)c.ns[i];
    progress_line pr;
    progress_start(&pr, "complexity", (int)c.n_ns, total_work);
    track tracks[L_COUNT] = {{0}};
    inputs in = {0};
    for (size_t i = 0; i < c.n_ns && rc == 0; i++) {
        char what[64];
        snprintf(what, sizeof what, "N=%zu d=%zu", c.ns[i], c.d);
        progress_step(&pr, (int)i + 1, (double)c.ns[i] * (double)c.ns[i], what);
        rc = measure_point(f, &c, c.ns[i], tracks, &in);
        if (rc == 1) cli_line("%s: write failed", record_path(f));
    }
    progress_end(&pr);
    free_inputs(&in);
    if (rc == 0) {
        if (write_table(f, &c, argc, argv) != 0) rc = 1;
        if (busy->noisy)
            printf("complexity: the machine was busy (%s): these timings are noisy\n", busy->why);
    }
    if (record_close(f) != 0) rc = 1;
    record_meta_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}

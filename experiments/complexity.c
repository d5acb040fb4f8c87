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
#include "complexity.h"

#include "commands.h"
#include "common/inputs.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/metadata.h"
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

/* Table 1's row of each type (with linear attention's two forms), and the exponent of
 * time in N its complexity predicts at fixed d, k, r. */
const layer_row LAYERS[L_COUNT] = {
    [L_ATTENTION] = {"self_attention", "O(N^2*d)", "1", "1", 2},
    [L_RECURRENT] = {"recurrent", "O(N*d^2)", "N", "N", 1},
    [L_CONVOLUTIONAL] = {"convolutional", "O(k*N*d^2)", "1", "log_k(N)", 1},
    [L_RESTRICTED] = {"restricted_attention", "O(r*N*d)", "1", "N/r", 1},
    [L_LINEAR] = {"linear_attention", "O(N*d^2)", "1", "1", 1},
    [L_LINEAR_RECURRENT] = {"linear_attention_recurrent", "O(N*d^2)", "N", "1", 1},
};

static const char COLUMNS[] =
    "layer,n,d,kernel_width,window,threads,status,reps,median_s,min_s,max_s,q1_s,q3_s,flops,"
    "complexity,sequential_ops,path_length,predicted_s";

static const char FIT_COLUMNS[] =
    "layer,d,kernel_width,window,threads,complexity,sequential_ops,path_length,theory_exponent,"
    "fitted_exponent,exponent_ci_lo,exponent_ci_hi,r_squared,prefactor_s,fit_n_min,fit_n_max,"
    "fit_points";

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
            complexity_point_key(key, sizeof key, c, (layer_kind)l, c->ns[i]);
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
    metadata_extra(meta);
    record_file *f =
        record_open(c.common.out, "complexity",
                    "time of one layer of each type of Vaswani et al.'s Table 1 against "
                    "N at fixed d (float32, one sequence, one head; one row per layer "
                    "type and n)",
                    COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        cli_line("%s", err);
        metadata_extra(NULL);
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
        rc = complexity_measure_point(f, &c, c.ns[i], tracks, &in);
        if (rc == 1) cli_line("%s: write failed", record_path(f));
    }
    progress_end(&pr);
    complexity_free_inputs(&in);
    if (rc == 0) {
        if (write_table(f, &c, argc, argv) != 0) rc = 1;
        if (busy->noisy)
            printf("complexity: the machine was busy (%s): these timings are noisy\n", busy->why);
    }
    if (record_close(f) != 0) rc = 1;
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}

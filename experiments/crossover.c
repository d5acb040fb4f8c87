/* crossover.c — `linattn crossover`: for each head size d, the sequence length N at
 * which linear attention becomes faster than softmax attention, measured (a geometric
 * sweep until linear wins, then bisection between the two sweep points around the
 * change) and predicted by the FLOP model (the N at which la_attention_cost's totals
 * cross), for non-causal attention (fused softmax against linear) and causal (causal
 * fused softmax against chunked causal linear). Writes every timed point to
 * crossover_points.csv and one row per (d, causal) to crossover.csv. */
#include "attention/series.h"
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
    "usage: linattn crossover [--d LIST] [--n LIST] [--heads H] [--bisect-steps K]\n"
    "                         [shared flags]\n"
    "\n"
    "For each head size d (d_k = d_v = d) and for non-causal and causal attention, finds\n"
    "the N (= M) above which linear attention is faster than softmax attention:\n"
    "  measured   time both kernels at the N of --n, smallest first, until linear is\n"
    "             faster at two successive N, then bisect K times between the first of\n"
    "             them and the N before (geometric midpoints); the crossover is where\n"
    "             log(t_softmax / t_linear) interpolates to zero. Times are the fastest\n"
    "             of the repetitions (interference from other processes only adds);\n"
    "  predicted  the N at which the FLOP model's totals (la_attention_cost) cross.\n"
    "Non-causal compares the fused softmax kernel with linear attention; causal compares\n"
    "the causal fused softmax kernel with the chunked causal linear kernel.\n"
    "\n"
    "  --d LIST           head sizes: " SWEEP_SYNTAX "\n"
    "                     (default 16:256, i.e. 16,32,64,128,256)\n"
    "  --n LIST           sequence lengths: " SWEEP_SYNTAX "\n"
    "                     (default 16:16384)\n"
    "  --heads H          heads (default 4)\n"
    "  --bisect-steps K   bisection steps between the bracketing sweep points (default "
    "4)\n" SWEEP_COMMON_HELP
    "                     (defaults: --out crossover.csv --max-seconds 10\n"
    "                     --max-mem 4G; --min-time 0.1; the timed points go to\n"
    "                     <out>_points.csv, which --resume reuses)\n";

void cmd_crossover_help(FILE *out)
{
    fputs(help_text, out);
}

static const char POINT_COLUMNS[] =
    "d,causal,n,heads,threads,stage,status,softmax_median_s,softmax_min_s,softmax_max_s,"
    "softmax_q1_s,softmax_q3_s,linear_median_s,linear_min_s,linear_max_s,linear_q1_s,"
    "linear_q3_s,min_ratio_softmax_over_linear,softmax_flops,linear_flops";
enum { POINT_KEY = 5 };

static const char COLUMNS[] =
    "d,causal,heads,threads,status,measured_crossover_n,bracket_lo_n,bracket_hi_n,"
    "predicted_crossover_n,softmax_kernel,linear_kernel";

enum { MAX_D = 16, MAX_POINTS = 64 };

typedef struct {
    size_t d[MAX_D], n_d;
    size_t ns[MAX_POINTS], n_points, hi; /* --n, increasing; hi the largest */
    size_t heads, bisect_steps;
    sweep_common common;
} config;

static int parse(int argc, char **argv, config *c)
{
    const char *d = NULL, *n = NULL, *heads = NULL, *steps = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"d", &d, NULL},
        {"n", &n, NULL},
        {"heads", &heads, NULL},
        {"bisect-steps", &steps, NULL},
        SWEEP_COMMON_FLAGS(common),
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    static const size_t default_d[] = {16, 32, 64, 128, 256};
    memcpy(c->d, default_d, sizeof default_d);
    c->n_d = 5, c->heads = 4, c->bisect_steps = 4;
    if (d && (rc = sweep_parse("--d", d, 2, c->d, MAX_D, &c->n_d))) return rc;
    if ((rc = sweep_parse("--n", n ? n : "16:16384", 2, c->ns, MAX_POINTS, &c->n_points)))
        return rc;
    sweep_sort_sizes(c->ns, c->n_points); /* the search goes up in N */
    c->hi = c->ns[c->n_points - 1];
    if (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) return rc;
    if (steps && (rc = cli_parse_size("--bisect-steps", steps, &c->bisect_steps))) return rc;
    if (c->bisect_steps > 30) return cli_fail("--bisect-steps", "at most 30");
    if ((rc = sweep_common_finish(&common, &c->common, "crossover.csv", 10, 4.0 * (1 << 30))))
        return rc;
    if (!common.min_time) c->common.min_time = 0.1;
    /* the arrays of the largest point of every d must be addressable */
    for (size_t i = 0; i < c->n_d; i++)
        if ((rc = sweep_check_floats("--n", c->heads, c->hi, c->d[i]))) return rc;
    return 0;
}

/* The pair compared, by name: fused softmax against linear attention (its chunked form
 * when causal), a deliberate comparison of these two rows of the registry. */
static const la_kernel softmax_kernel = LA_KERNEL_SOFTMAX, linear_kernel = LA_KERNEL_LINEAR;

static void problem_for(la_problem *p, size_t heads, size_t n, size_t d, int causal)
{
    la_problem_init(p, 1, heads, n, n, d, d);
    p->causal = causal;
}

/* FLOP-model totals of both kernels at N; 0 on success. */
static int model_flops(size_t heads, size_t n, size_t d, int causal, double *soft, double *lin)
{
    la_problem p;
    la_cost cs, cl;
    problem_for(&p, heads, n, d, causal);
    if (la_attention_cost(softmax_kernel, &p, LA_FLOAT32, &cs) != LA_OK ||
        la_attention_cost(linear_kernel, &p, LA_FLOAT32, &cl) != LA_OK)
        return -1;
    *soft = cs.flops_total;
    *lin = cl.flops_total;
    return 0;
}

/* The smallest N at which the model's softmax FLOPs exceed linear's, searching up to
 * 2^30: a doubling scan, then integer bisection. 0 when they never cross. */
static double predicted_crossover(size_t heads, size_t d, int causal)
{
    double s, l;
    size_t lo = 1, hi = 0;
    if (model_flops(heads, 1, d, causal, &s, &l) != 0) return NAN;
    if (s > l) return 1;
    for (size_t n = 2; n <= ((size_t)1 << 30); n *= 2) {
        if (model_flops(heads, n, d, causal, &s, &l) != 0) return NAN;
        if (s > l) {
            hi = n;
            break;
        }
        lo = n;
    }
    if (!hi) return 0;
    while (hi - lo > 1) { /* invariant: softmax cheaper at lo, dearer at hi */
        size_t mid = lo + (hi - lo) / 2;
        if (model_flops(heads, mid, d, causal, &s, &l) != 0) return NAN;
        if (s > l)
            hi = mid;
        else
            lo = mid;
    }
    return (double)hi;
}

/* A timed point: both kernels at N. */
typedef struct {
    double n, soft, lin; /* fastest of the repetitions (s): interference only adds time */
    int ok;
} point;

typedef struct {
    const config *c;
    record_file *points;
    progress_line *pr;
    int point_no;
    float *q, *k, *v, *out; /* sized for the largest N and d */
} runner;

/* Times both kernels at (d, causal, n), or reads the point back from the file. */
static int time_point(runner *r, size_t d, int causal, size_t n, const char *stage, point *pt)
{
    const config *c = r->c;
    char key[160], what[96];
    snprintf(key, sizeof key, "%zu,%d,%zu,%zu,%d", d, causal, n, c->heads, la_get_num_threads());
    snprintf(what, sizeof what, "d=%zu %s N=%zu (%s)", d, causal ? "causal" : "non-causal", n,
             stage);
    progress_step(r->pr, ++r->point_no, 1, what);
    pt->n = (double)n;
    pt->ok = 0;
    const char *row = record_find(r->points, key);
    char prior[32];
    if (row && record_get_str(r->points, row, "status", prior, sizeof prior) == 0 &&
        strcmp(prior, "ok") == 0 && record_get(r->points, row, "softmax_min_s", &pt->soft) == 0 &&
        record_get(r->points, row, "linear_min_s", &pt->lin) == 0) {
        pt->ok = 1; /* --resume: measured already (a skipped point is tried again) */
        return 0;
    }
    double fs, fl;
    la_problem p;
    problem_for(&p, c->heads, n, d, causal);
    la_cost cost;
    la_status st = la_attention_cost(softmax_kernel, &p, LA_FLOAT32, &cost);
    if (st == LA_OK && model_flops(c->heads, n, d, causal, &fs, &fl) != 0) st = LA_EINVAL;
    if (st != LA_OK) /* a point the model cannot count: refused, one line, exit 2 */
        return cli_fail("crossover", "d = %zu, N = %zu: the cost model failed: %s", d, n,
                        la_strerror(st));
    /* budget: the softmax call is the slower; an optimistic 20 GFLOP/s */
    const char *status = "ok";
    timer_result ts = {0}, tl = {0};
    if (cost.io_bytes + cost.workspace_bytes > c->common.max_mem)
        status = "skipped_mem";
    else if (fs / 20e9 > c->common.max_seconds)
        status = "skipped_time";
    else {
        size_t elems = c->heads * n * d;
        inputs_rng g = inputs_rng_for(c->common.seed, "crossover");
        inputs_fill_normal_f32(&g, r->q, elems, 1.0);
        inputs_fill_normal_f32(&g, r->k, elems, 1.0);
        inputs_fill_normal_f32(&g, r->v, elems, 1.0);
        /* both kernels' repetitions interleaved, so a drift reaches both alike */
        const timer_rule rule = sweep_rule(&c->common);
        const la_kernel pair[2] = {softmax_kernel, linear_kernel};
        const la_problem problems[2] = {p, p};
        timer_result t[2];
        la_status sts[2];
        timer_kernels(2, pair, problems, r->q, r->k, r->v, r->out, &rule, t, sts);
        st = sts[0] != LA_OK ? sts[0] : sts[1];
        ts = t[0], tl = t[1];
        if (st != LA_OK) {
            fprintf(stderr, "\nlinattn: crossover: d = %zu, N = %zu: %s\n", d, n, la_strerror(st));
            status = "error";
        } else {
            pt->soft = ts.min_s, pt->lin = tl.min_s, pt->ok = 1;
        }
    }
    if (pt->ok)
        return record_row(
            r->points, "%s,%s,ok,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e,%.5f,%.6e,%.6e",
            key, stage, ts.median_s, ts.min_s, ts.max_s, ts.q1_s, ts.q3_s, tl.median_s, tl.min_s,
            tl.max_s, tl.q1_s, tl.q3_s, ts.min_s / tl.min_s, fs, fl);
    return record_row(r->points, "%s,%s,%s,,,,,,,,,,,,%.6e,%.6e", key, stage, status, fs, fl);
}

/* log(t_softmax / t_linear): positive when linear is faster */
static double margin(const point *p)
{
    return log(p->soft / p->lin);
}

/* Measures one (d, causal): sweep, bisect, interpolate. Writes the summary row. */
static int measure(runner *r, record_file *f, size_t d, int causal)
{
    const config *c = r->c;
    const size_t *ns = c->ns, n_points = c->n_points;
    point below = {0}, above = {0}, pt;
    int found = 0, have_below = 0, rc;
    const char *status = "ok";
    /* the crossing: the first sweep point where linear is faster and stays faster at
     * the next one (at small N both are dominated by fixed costs and a single win can
     * be noise) */
    point prev = {0};
    int have_prev = 0;
    double last_n = 0; /* the largest N measured */
    for (size_t i = 0; i < n_points && !found; i++) {
        if ((rc = time_point(r, d, causal, ns[i], "sweep", &pt)) != 0) return rc;
        if (!pt.ok) {
            status = "not_reached"; /* budget or error before linear won */
            break;
        }
        last_n = pt.n;
        if (margin(&pt) > 0 && have_prev && margin(&prev) > 0) {
            above = prev;
            found = 1;
        } else if (margin(&pt) > 0 && i + 1 == n_points) {
            above = pt;
            found = 1;
        } else if (margin(&pt) <= 0) {
            below = pt;
            have_below = 1;
        }
        if (!found && margin(&pt) <= 0)
            have_prev = 0;
        else
            have_prev = 1, prev = pt;
    }
    double measured = NAN, predicted = predicted_crossover(c->heads, d, causal);
    if (found && !have_below)
        status = "below_range"; /* linear already faster at LO */
    else if (!found && strcmp(status, "ok") == 0)
        status = "above_range";
    if (found && have_below) {
        /* bisection on log N between the bracketing points */
        for (size_t s = 0; s < c->bisect_steps; s++) {
            size_t mid = (size_t)llround(sqrt(below.n * above.n));
            if (mid <= (size_t)below.n || mid >= (size_t)above.n) break;
            if ((rc = time_point(r, d, causal, mid, "bisect", &pt)) != 0) return rc;
            if (!pt.ok) break;
            if (margin(&pt) > 0)
                above = pt;
            else
                below = pt;
        }
        /* log-linear interpolation of the margin to zero between the bracket (stats.h) */
        const double n2[2] = {below.n, above.n}, soft2[2] = {below.soft, above.soft},
                     lin2[2] = {below.lin, above.lin};
        stats_crossing x;
        if (stats_crossover(n2, soft2, lin2, 2, &x) == 0 && x.where == STATS_CROSS_INSIDE)
            measured = x.n;
    }
    char pred_text[32] = "", meas_text[32] = "", lo_text[32] = "", hi_text[32] = "";
    if (isfinite(predicted) && predicted > 0)
        snprintf(pred_text, sizeof pred_text, "%.0f", predicted);
    if (isfinite(measured)) snprintf(meas_text, sizeof meas_text, "%.1f", measured);
    if (have_below) snprintf(lo_text, sizeof lo_text, "%.0f", below.n);
    if (found) snprintf(hi_text, sizeof hi_text, "%.0f", above.n);
    char where[128] = "";
    if (strcmp(status, "below_range") == 0)
        snprintf(where, sizeof where, "below the measured range: linear faster at N = %s", hi_text);
    else if (strcmp(status, "above_range") == 0)
        snprintf(where, sizeof where, "above the measured range: softmax faster up to N = %.0f",
                 last_n);
    else if (strcmp(status, "ok") != 0)
        snprintf(where, sizeof where, "not reached: the budget stopped the sweep after N = %.0f",
                 last_n);
    else
        snprintf(where, sizeof where, "between the measured N = %s and %s", lo_text, hi_text);
    printf("crossover: d = %3zu %-10s measured N = %-8s (%s)  predicted by FLOPs N = %s\n", d,
           causal ? "causal" : "non-causal", meas_text[0] ? meas_text : "-", where,
           pred_text[0] ? pred_text : "-");
    return record_row(f, "%zu,%d,%zu,%d,%s,%s,%s,%s,%s,%s,%s", d, causal, c->heads,
                      la_get_num_threads(), status, meas_text, lo_text, hi_text, pred_text,
                      la_kernel_series(softmax_kernel, causal),
                      la_kernel_series(linear_kernel, causal));
}

int cmd_crossover(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    char err[512], path[4096];
    record_sibling_path(c.common.out, "points", path, sizeof path);
    const machine_report *busy = machine_check();
    runner r = {&c, NULL, NULL, 0, NULL, NULL, NULL, NULL};
    record_file *f = NULL;
    r.points = record_open(path, "crossover_points",
                           "both kernels timed at each N of the crossover search (float32, "
                           "N = M, random normal inputs)",
                           POINT_COLUMNS, POINT_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!r.points) return cli_fail("crossover", "%s", err);
    f = record_open(c.common.out, "crossover",
                    "N above which linear attention is faster than softmax attention, measured "
                    "and predicted by the FLOP model",
                    COLUMNS, 4, 0, argc, argv, err, sizeof err);
    if (!f) {
        record_close(r.points);
        return cli_fail("crossover", "%s", err);
    }

    size_t max_d = 0;
    for (size_t i = 0; i < c.n_d; i++)
        if (c.d[i] > max_d) max_d = c.d[i];
    /* inputs for the largest point that fits the memory budget */
    double elems = (double)c.heads * (double)c.hi * (double)max_d;
    double cap_elems = c.common.max_mem / (4.0 * 4);
    size_t n_alloc = (size_t)(elems < cap_elems ? elems : cap_elems);
    r.q = malloc(n_alloc * sizeof(float)), r.k = malloc(n_alloc * sizeof(float));
    r.v = malloc(n_alloc * sizeof(float)), r.out = malloc(n_alloc * sizeof(float));
    rc = 1;
    if (!r.q || !r.k || !r.v || !r.out) {
        cli_line("crossover: out of memory");
        goto done;
    }
    /* points the memory budget cannot hold are refused by time_point's check, which
     * uses the same 4 arrays of heads·N·d floats */
    progress_line pr;
    progress_start(&pr, "crossover", (int)(c.n_d * 2 * 12), 0);
    r.pr = &pr;
    for (int causal = 0; causal <= 1; causal++)
        for (size_t i = 0; i < c.n_d; i++)
            if ((rc = measure(&r, f, c.d[i], causal)) != 0) {
                rc = rc == 2 ? 2 : 1; /* 2: refused with its line; else the file's error */
                goto done;
            }
    progress_end(&pr);
    printf("crossover: wrote %s and %s\n", record_path(f), record_path(r.points));
    if (busy->noisy)
        printf("crossover: the machine was busy (%s): these crossovers are noisy\n", busy->why);
    rc = 0;
done:
    free(r.q), free(r.k), free(r.v), free(r.out);
    if (record_close(f) != 0) rc = 1;
    if (record_close(r.points) != 0) rc = 1;
    return rc;
}

/* scaling.c — `linattn scaling`: time and memory of every attention kernel against the
 * sequence length N (geometric sweep, N = M, self-attention), and the least-squares
 * exponent of time in N over the upper half of each curve (theory: 2 for softmax,
 * 1 for linear). The kernels are the registry's series (common/kernels.h). Writes
 * results/scaling.csv (one row per series and N) and results/scaling_fit.csv (one row
 * per series). */
#include "commands.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/record.h"
#include "common/sweep.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn scaling [--n LO:HI] [--factor F] [--d D] [--heads H] [--batch B]\n"
    "                       [--variants LIST] [--q Q.npy --k K.npy --v V.npy]\n"
    "                       [shared flags]\n"
    "\n"
    "Times each attention kernel on random float32 self-attention inputs (N = M) for N\n"
    "from LO to HI in steps of F, records per point the median, min and max time over\n"
    "repetitions, GFLOP/s from the library's FLOP model (la_attention_cost), the bytes\n"
    "the kernel holds, and the peak resident memory of the point; then fits\n"
    "log(time) = e·log(N) + c over the upper half of each kernel's curve.\n"
    "\n"
    "  --n LO:HI          sequence lengths (default 128:65536)\n"
    "  --factor F         geometric step (default 2)\n"
    "  --d D              head size, d_k = d_v = D (default 64)\n"
    "  --heads H          heads (default 8)\n"
    "  --batch B          batch entries (default 1)\n"
    "  --q Q.npy, --k K.npy, --v V.npy\n"
    "                     time the kernels on your arrays instead of random ones: shapes\n"
    "                     as in linattn attend, (N, d), (H, N, d) or (B, H, N, d), any of\n"
    "                     float16, bfloat16, float32, float64 (computed in float32), with\n"
    "                     d_k = d_v; they set d, heads and batch (those flags are then\n"
    "                     refused), and a point of size N takes the first N queries and\n"
    "                     keys. An --n above the arrays' min(N, M) is refused; without\n"
    "                     --n the default range is clipped to it. The results' # inputs\n"
    "                     line names the files (random: the seed)\n"
    "  --variants LIST    comma-separated series, of:\n";
static const char help_after_variants[] = SW_COMMON_HELP
    "                     (defaults: --out results/scaling.csv --max-seconds 20\n"
    "                     --max-mem 8G)\n"
    "\n"
    "A point predicted (from the kernel's previous point and its theoretical exponent,\n"
    "and from the cost model's bytes) to exceed a budget is recorded as skipped_time or\n"
    "skipped_mem instead of run. Also writes <out>_fit.csv with the fitted exponents.\n";

/* The series not run unless --variants names them: their times follow those of series
 * that are run (hard's and materialised causal softmax's, softmax's). */
static const char *const left_out_by_default[] = {"softmax_materialized_causal", "hard",
                                                  "hard_causal", NULL};

void cmd_scaling_help(FILE *out)
{
    kn_series all[KN_MAX_SERIES];
    size_t n = kn_all_series(all);
    int by_default[KN_MAX_SERIES], left_out[KN_MAX_SERIES];
    char names[1024], text[2048];
    fputs(help_text, out);
    fprintf(out, "%21s", "");
    cli_print_wrapped(out, kn_series_names(all, n, NULL, names, sizeof names), 21);
    kn_select_all_but(all, n, left_out_by_default, by_default);
    for (size_t i = 0; i < n; i++)
        left_out[i] = !by_default[i];
    snprintf(text, sizeof text,
             "(default: all but %s, whose times follow those of softmax and "
             "softmax_materialized)",
             kn_series_names(all, n, left_out, names, sizeof names));
    fprintf(out, "%21s", "");
    cli_print_wrapped(out, text, 21);
    fputs(help_after_variants, out);
}

enum { MAX_POINTS = 256 };

static const char COLUMNS[] =
    "variant,n,d_k,d_v,heads,batch,threads,status,reps,median_s,min_s,max_s,gflops,"
    "flops,workspace_bytes,io_bytes,baseline_rss_bytes,peak_rss_bytes,predicted_s";
enum { N_KEY = 7 };

static const char FIT_COLUMNS[] =
    "variant,theory_exponent,fitted_exponent,prefactor_s,fit_n_min,fit_n_max,fit_points";

/* What a sweep remembers of a series' last measured point, to predict the next. */
typedef struct {
    int selected;
    double last_n, last_s; /* last ok point (last_n = 0: none yet) */
    int over_time;         /* a smaller N was already over the time budget */
} track;

typedef struct {
    size_t lo, hi, d, heads, batch;
    double factor;
    sw_common common;
    in_source source;                /* random, or --q/--k/--v (common/inputs.h) */
    kn_series series[KN_MAX_SERIES]; /* every series of the registry */
    size_t n_series;
    int selected[KN_MAX_SERIES];
} config;

/* The inputs: random, or the arrays of --q/--k/--v, which then set d, heads and batch
 * (flags that would set them are refused) and bound N: an --n above min(N, M) is
 * refused, the default range clipped. Returns 0, or 2 after one line. */
static int source_of(config *c, const char *q, const char *k, const char *v, const char *d,
                     const char *heads, const char *batch, int n_given)
{
    int rc = in_source_open(&c->source, q, k, v, c->common.seed);
    if (rc || !c->source.from_files) return rc;
    const in_source *s = &c->source;
    const char *set = d ? "--d" : heads ? "--heads" : batch ? "--batch" : NULL;
    const size_t max_n = in_source_max_n(s);
    if (set)
        rc = cli_fail(set, "set by the arrays with --q/--k/--v (B=%zu H=%zu d=%zu)", s->batch,
                      s->heads, s->d_k);
    else if (s->d_v != s->d_k)
        rc = cli_fail(s->path[2], "d_v = %zu differs from d_k = %zu (scaling times d_k = d_v)",
                      s->d_v, s->d_k);
    else if (n_given && c->hi > max_n)
        rc = cli_fail("--n", "%zu is more than the arrays' %zu tokens (min(N, M) of --q/--k/--v)",
                      c->hi, max_n);
    if (rc) {
        in_source_close(&c->source);
        return rc;
    }
    c->d = s->d_k, c->heads = s->heads, c->batch = s->batch;
    if (c->hi > max_n) c->hi = max_n;
    if (c->lo > c->hi) c->lo = c->hi;
    return 0;
}

/* Returns 0, or 2 after one line on stderr. */
static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *factor = NULL, *d = NULL, *heads = NULL, *batch = NULL, *list = NULL;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL;
    sw_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},         {"factor", &factor, NULL}, {"d", &d, NULL},
        {"heads", &heads, NULL}, {"batch", &batch, NULL},   {"variants", &list, NULL},
        {"q", &q_path, NULL},    {"k", &k_path, NULL},      {"v", &v_path, NULL},
        SW_COMMON_FLAGS(common), {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->lo = 128, c->hi = 65536, c->d = 64, c->heads = 8, c->batch = 1, c->factor = 2;
    c->n_series = kn_all_series(c->series);
    kn_select_all_but(c->series, c->n_series, left_out_by_default, c->selected);
    if (n && (rc = sw_parse_range("--n", n, &c->lo, &c->hi))) return rc;
    if (factor) {
        if ((rc = cli_parse_double("--factor", factor, &c->factor))) return rc;
        if (c->factor < 1.05) return cli_fail("--factor", "must be at least 1.05");
    }
    if (d && (rc = sw_parse_positive("--d", d, &c->d))) return rc;
    if (heads && (rc = sw_parse_positive("--heads", heads, &c->heads))) return rc;
    if (batch && (rc = sw_parse_positive("--batch", batch, &c->batch))) return rc;
    if (list &&
        (rc = kn_parse_series_list("--variants", list, c->series, c->n_series, c->selected)))
        return rc;
    /* the largest point's arrays, B·H·N·d floats, addressable */
    if ((rc = sw_check_floats("--batch", c->batch, c->heads, 1)) ||
        (rc = sw_check_floats("--n", c->batch * c->heads, c->hi, c->d)))
        return rc;
    if ((rc = sw_common_finish(&common, &c->common, "results/scaling.csv", 20, 8.0 * (1 << 30))))
        return rc;
    return source_of(c, q_path, k_path, v_path, d, heads, batch, n != NULL);
}

/* Fits each kernel's ok points (upper half by count) and writes the fit file. */
static int write_fits(res_file *f, const config *c, int argc, char **argv)
{
    char path[4096], err[512];
    res_sibling_path(c->common.out, "fit", path, sizeof path);
    res_file *fit = res_open(path, "scaling_fit",
                             "least-squares exponent of median time in N, upper half of "
                             "each kernel's measured points",
                             FIT_COLUMNS, 1, 0, argc, argv, err, sizeof err);
    if (!fit) {
        fprintf(stderr, "linattn: %s\n", err);
        return -1;
    }
    size_t ns[MAX_POINTS];
    size_t n_points = sw_geometric(c->lo, c->hi, c->factor, ns, MAX_POINTS);
    for (size_t vi = 0; vi < c->n_series; vi++) {
        if (!c->selected[vi]) continue;
        const kn_series *var = &c->series[vi];
        /* the theory's exponent; empty in the file for a kernel kernels.c does not know */
        int known;
        const double theory = kn_time_exponent(var->kernel, &known);
        char theory_text[32] = "?";
        if (known) snprintf(theory_text, sizeof theory_text, "%g", theory);
        double x[MAX_POINTS], y[MAX_POINTS];
        size_t n = 0;
        for (size_t i = 0; i < n_points; i++) {
            char key[256], status[32];
            snprintf(key, sizeof key, "%s,%zu,%zu,%zu,%zu,%zu,%d", var->name, ns[i], c->d, c->d,
                     c->heads, c->batch, la_get_num_threads());
            const char *row = res_find(f, key);
            double t;
            if (row && res_get_str(f, row, "status", status, sizeof status) == 0 &&
                strcmp(status, "ok") == 0 && res_get(f, row, "median_s", &t) == 0) {
                x[n] = (double)ns[i];
                y[n++] = t;
            }
        }
        size_t from = n / 2; /* the upper half of the curve */
        double slope = NAN, intercept = NAN;
        int used =
            n - from >= 2 ? res_fit_loglog(x + from, y + from, n - from, &slope, &intercept) : 0;
        if (used >= 2) {
            res_row(fit, "%s,%s,%.4f,%.6e,%.0f,%.0f,%d", var->name, known ? theory_text : "", slope,
                    exp(intercept), x[from], x[n - 1], used);
            printf("scaling: %-24s time ~ N^%.2f (theory %s) over N = %.0f..%.0f (%d points)\n",
                   var->name, slope, theory_text, x[from], x[n - 1], used);
        } else {
            res_row(fit, "%s,%s,,,,,%d", var->name, known ? theory_text : "", used);
            printf("scaling: %-24s too few measured points to fit\n", var->name);
        }
    }
    printf("scaling: wrote %s and %s\n", res_path(f), path);
    return res_close(fit);
}

int cmd_scaling(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    res_memory_init();

    char err[512], inputs[1024];
    in_source_describe(&c.source, inputs, sizeof inputs);
    res_meta_extra(inputs);
    res_file *f = res_open(c.common.out, "scaling",
                           c.source.from_files
                               ? "time and memory of each attention kernel against N (float32, "
                                 "self-attention N = M, prefixes of the arrays of # inputs)"
                               : "time and memory of each attention kernel against N (float32, "
                                 "self-attention N = M, random normal inputs)",
                           COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        fprintf(stderr, "linattn: %s\n", err);
        in_source_close(&c.source);
        res_meta_extra(NULL);
        return 2;
    }

    size_t ns[MAX_POINTS];
    size_t n_points = sw_geometric(c.lo, c.hi, c.factor, ns, MAX_POINTS);
    track tracks[KN_MAX_SERIES] = {{0}};
    int n_selected = 0;
    for (size_t vi = 0; vi < c.n_series; vi++)
        n_selected += tracks[vi].selected = c.selected[vi];
    const int threads = la_get_num_threads();
    const size_t B = c.batch, H = c.heads, d = c.d;

    /* progress is weighted by the FLOP model (a point's share of all the arithmetic) */
    double total_work = 0;
    for (size_t i = 0; i < n_points; i++)
        total_work += (double)ns[i] * (double)ns[i] * (double)n_selected;
    res_progress pr;
    res_progress_start(&pr, "scaling", (int)(n_points * (size_t)n_selected), total_work);

    float *q = NULL, *k = NULL, *v = NULL, *out = NULL;
    int point = 0;
    for (size_t pi = 0; pi < n_points && rc == 0; pi++) {
        const size_t n = ns[pi];
        const size_t elems = B * H * n * d;
        int filled = 0;
        for (size_t vi = 0; vi < c.n_series && rc == 0; vi++) {
            if (!tracks[vi].selected) continue;
            const kn_series *var = &c.series[vi];
            track *tr = &tracks[vi];
            char key[256], what[96];
            snprintf(key, sizeof key, "%s,%zu,%zu,%zu,%zu,%zu,%d", var->name, n, d, d, H, B,
                     threads);
            snprintf(what, sizeof what, "%s N=%zu", var->name, n);
            res_progress_step(&pr, ++point, (double)n * (double)n, what);

            /* a point measured already (--resume) is kept and feeds the predictions; a
             * skipped one is tried again, under this run's budgets */
            const char *row = res_find(f, key);
            char prior[32];
            double t_prior;
            if (row && res_get_str(f, row, "status", prior, sizeof prior) == 0 &&
                strcmp(prior, "ok") == 0 && res_get(f, row, "median_s", &t_prior) == 0) {
                tr->last_n = (double)n, tr->last_s = t_prior;
                continue;
            }

            la_problem p;
            la_problem_init(&p, B, H, n, n, d, d);
            p.causal = var->causal;
            p.workspace_limit =
                c.common.max_mem < (double)SIZE_MAX ? (size_t)c.common.max_mem : SIZE_MAX;
            la_cost cost;
            la_status st = la_attention_cost(var->kernel, &p, LA_FLOAT32, &cost);
            if (st != LA_OK) {
                /* a point the model cannot count: refused, one line, exit 2 */
                rc = cli_fail("scaling", "%s at N = %zu: the cost model failed: %s", var->name, n,
                              la_strerror(st));
                break;
            }

            /* predict: from the previous point and the theoretical exponent, or for the
             * first point from the FLOP model at an optimistic 20 GFLOP/s */
            double predicted =
                tr->last_n > 0
                    ? tr->last_s * pow((double)n / tr->last_n, kn_time_exponent(var->kernel, NULL))
                    : cost.flops_total / 20e9;
            double bytes = cost.io_bytes + cost.workspace_bytes;
            const char *status = "ok";
            res_timing t = {0};
            double baseline = -1, peak = -1;
            if (bytes > c.common.max_mem)
                status = "skipped_mem";
            else if (tr->over_time || predicted > c.common.max_seconds) {
                status = "skipped_time";
                tr->over_time = 1;
            } else {
                if (!filled) {
                    /* the inputs of this N, shared by every kernel */
                    free(q), free(k), free(v), free(out);
                    q = malloc(elems * sizeof *q), k = malloc(elems * sizeof *k);
                    v = malloc(elems * sizeof *v), out = malloc(elems * sizeof *out);
                    if (!q || !k || !v || !out) {
                        fprintf(stderr, "linattn: scaling: out of memory at N = %zu\n", n);
                        rc = 1;
                        break;
                    }
                    in_source_fill(&c.source, "scaling", B * H, n, n, d, d, q, k, v);
                    memset(out, 0, elems * sizeof *out);
                    filled = 1;
                }
                res_peak_reset();
                baseline = res_rss_bytes();
                const res_rule rule = sw_rule(&c.common);
                la_status ks = res_time_kernel(var->kernel, &p, q, k, v, out, &rule, &t);
                peak = res_peak_rss_bytes();
                if (ks != LA_OK) {
                    if (ks == LA_EBUDGET)
                        status = "skipped_mem";
                    else {
                        fprintf(stderr, "\nlinattn: scaling: %s at N = %zu: %s\n", var->name, n,
                                la_strerror(ks));
                        status = "error";
                    }
                } else {
                    tr->last_n = (double)n, tr->last_s = t.median_s;
                }
            }
            if (strcmp(status, "ok") == 0)
                rc = res_row(f, "%s,ok,%d,%.6e,%.6e,%.6e,%.4f,%.6e,%.0f,%.0f,%.0f,%.0f,%.4g", key,
                             t.reps, t.median_s, t.min_s, t.max_s,
                             cost.flops_total / t.median_s / 1e9, cost.flops_total,
                             cost.workspace_bytes, cost.io_bytes, baseline, peak, predicted);
            else
                rc = res_row(f, "%s,%s,0,,,,,%.6e,%.0f,%.0f,,,%.4g", key, status, cost.flops_total,
                             cost.workspace_bytes, cost.io_bytes, predicted);
            if (rc) fprintf(stderr, "linattn: %s: write failed\n", res_path(f));
        }
    }
    res_progress_end(&pr);
    free(q), free(k), free(v), free(out);
    if (rc == 0 && write_fits(f, &c, argc, argv) != 0) rc = 1;
    if (res_close(f) != 0) rc = 1;
    in_source_close(&c.source);
    res_meta_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc ? 1 : 0;
}

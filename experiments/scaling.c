/* scaling.c — `linattn scaling`: time and memory of every attention kernel against the
 * sequence length N (N = M, self-attention), at every point of a sweep over N, d, heads
 * and batch, the kernels' repetitions interleaved at each point; then per kernel and
 * (d, heads, batch) the exponent of time in N over the upper half of each curve with
 * its bootstrap interval and R² (theory: 2 for softmax, 1 for linear; common/stats.h),
 * and where linear attention overtakes softmax. The kernels are the registry's series
 * (common/kernels.h). Writes scaling.csv (long format: one row per series, N, d,
 * heads and batch) and scaling_fit.csv (one row per series and (d, heads,
 * batch)). */
#include "commands.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/pass.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/stats.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "common/variants.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn scaling [--n LIST] [--factor F] [--d LIST] [--heads LIST]\n"
    "                       [--batch LIST] [--variant LIST] [--pass forward|train] [--no-fit]\n"
    "                       [--q Q.npy --k K.npy --v V.npy] [shared flags]\n"
    "\n"
    "Times each attention kernel on float32 self-attention inputs (N = M; random, or\n"
    "prefixes of your arrays) at every\n"
    "point of the sweep (each N, d, heads, batch of the lists), and records per point the\n"
    "median, min, max and quartiles of the time over repetitions, GFLOP/s from the\n"
    "library's FLOP model (la_attention_cost), the bytes the kernel holds, and the peak\n"
    "resident memory of its first call. At each point the repetitions of the kernels\n"
    "are interleaved (round r times kernel 1, 2, ..., then round r + 1), so a drift in\n"
    "the machine's speed reaches them all alike. The results are in long format: one\n"
    "row per (variant, N, d, heads, batch).\n"
    "\n"
    "Then, for each kernel and each (d, heads, batch), fits log(time) = e*log(N) + c\n"
    "over the upper half of its measured N, with a 95% bootstrap interval of e (2000\n"
    "resamples of the points, fixed seed) and R^2; the same for the memory the kernel\n"
    "adds (peak minus baseline resident bytes). A fit needs at least 4 points: with 1\n"
    "to 3 lengths of N nothing is fitted; with 4 to 6 (an upper half of 2 or 3) the\n"
    "command refuses to run (exit 2) unless --no-fit. Where the sweep holds both,\n"
    "it reports the N at which linear attention becomes faster than softmax, with the\n"
    "two measured N that bracket it, and the speed-up at the largest N with its range\n"
    "from the interquartile ranges of the repetitions.\n"
    "\n"
    "Each LIST is " SWEEP_SYNTAX ", e.g. 256,512,1024\n"
    "or 128:65536 or 64,128:1024:x4.\n"
    "  --n LIST           sequence lengths (default 128:65536), measured in increasing\n"
    "                     order\n"
    "  --factor F         the step of a --n range without its own xF (default 2; ranges\n"
    "                     of the other lists double)\n"
    "  --d LIST           head sizes, d_k = d_v = d (default 64)\n"
    "  --heads LIST       heads (default 8)\n"
    "  --batch LIST       batch entries (default 1)\n"
    "  --no-fit           record the points only: no exponent, whatever the lengths\n"
    "  --q Q.npy, --k K.npy, --v V.npy\n"
    "                     time the kernels on your arrays instead of random ones: shapes\n"
    "                     as in linattn attend, (N, d), (H, N, d) or (B, H, N, d), any of\n"
    "                     float16, bfloat16, float32, float64 (computed in float32), with\n"
    "                     d_k = d_v; they set d, heads and batch (those flags are then\n"
    "                     refused), and a point of size N takes the first N queries and\n"
    "                     keys. An --n above the arrays' min(N, M) is refused; without\n"
    "                     --n the default lengths are clipped to it. The results' # inputs\n"
    "                     line names the files (random: the seed)\n"
    "  --pass P           forward (default): one call is the kernel's forward; train: the\n"
    "                     forward and then the backward (la_attention_backward_f32 of\n"
    "                     L = sum(out * dO), dO random) timed as one call, the cost of a\n"
    "                     training step's attention; FLOPs and workspace from both cost\n"
    "                     models. The file's first line then names the experiment\n"
    "                     scaling_train (plots/scaling_train.gp draws it) and # pass says\n"
    "                     which. With train, only kernels with a backward run (by default\n"
    "                     those of the forward's default that have one; naming one without\n"
    "                     is refused)\n"
    "  --variant LIST     comma-separated series (--variants: deprecated), of:\n";
static const char help_after_variants[] = SWEEP_COMMON_HELP
    "                     (defaults: --out scaling.csv --max-seconds 20\n"
    "                     --max-mem 8G)\n"
    "\n"
    "A point predicted (from the kernel's previous point and its theoretical exponent,\n"
    "and from the cost model's bytes) to exceed a budget is recorded as skipped_time or\n"
    "skipped_mem instead of run; a point whose N is below a kernel's --proj-rank K (the\n"
    "keys cannot be projected to more rows than they have) as skipped_rank. Also writes "
    "<out>_fit.csv with one row per kernel and\n"
    "(d, heads, batch): the fitted exponents, their intervals and R^2. Before the first\n"
    "point the machine's load is measured (# calibration, # noisy in the files); on a\n"
    "busy machine a warning says the timings are noisy.\n";

/* The series not run unless --variant names them: their times follow those of series
 * that are run (causal hard's and materialized causal softmax's, those of their
 * non-causal forms; the score functions' and relative positions', softmax's plus their
 * own O(N·M·d) scoring, and plain loops that would take most of the suite's time). */
static const char *const left_out_by_default[] = {"softmax_materialized_causal", "hard_causal",
                                                  /* the score functions and relative positions:
                                                   * softmax with other scores, quadratic like it */
                                                  "general", "general_causal", "additive",
                                                  "additive_causal", "cosine", "cosine_causal",
                                                  "relative", "relative_causal", NULL};

void cmd_scaling_help(FILE *out)
{
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all);
    int by_default[KERNELS_MAX_SERIES], left_out[KERNELS_MAX_SERIES];
    char names[1024], text[2048];
    fputs(help_text, out);
    fprintf(out, "%21s", "");
    cli_print_wrapped(out, kernels_series_names(all, n, NULL, names, sizeof names), 21);
    kernels_select_all_but(all, n, left_out_by_default, by_default);
    for (size_t i = 0; i < n; i++)
        left_out[i] = !by_default[i];
    snprintf(text, sizeof text,
             "(default: all but %s: causal hard and materialized softmax follow their "
             "non-causal forms, the score functions and relative positions are softmax "
             "attention with their own O(N·M·d) scoring)",
             kernels_series_names(all, n, left_out, names, sizeof names));
    fprintf(out, "%21s", "");
    cli_print_wrapped(out, text, 21);
    variants_print_help(out, 0, 0);
    fputs(help_after_variants, out);
}

enum { MAX_POINTS = 256, MAX_VALUES = 64, MAX_GROUPS = 256 };

static const char COLUMNS[] =
    "variant,n,d_k,d_v,heads,batch,threads,status,reps,median_s,min_s,max_s,q1_s,q3_s,gflops,"
    "flops,workspace_bytes,io_bytes,baseline_rss_bytes,peak_rss_bytes,predicted_s";
enum { N_KEY = 7 };

static const char FIT_COLUMNS[] =
    "variant,d_k,d_v,heads,batch,threads,theory_exponent,fitted_exponent,exponent_ci_lo,"
    "exponent_ci_hi,r_squared,prefactor_s,fit_n_min,fit_n_max,fit_points,memory_exponent,"
    "memory_exponent_ci_lo,memory_exponent_ci_hi,memory_r_squared,memory_fit_points";

/* What a sweep remembers of a series' last measured point, to predict the next. */
typedef struct {
    int selected;
    double last_n, last_s; /* last ok point (last_n = 0: none so far) */
    int over_time;         /* a smaller N was already over the time budget */
} track;

typedef struct {
    size_t ns[MAX_POINTS], n_ns; /* increasing */
    size_t ds[MAX_VALUES], n_ds; /* head sizes, as given */
    size_t hs[MAX_VALUES], n_hs; /* heads */
    size_t bs[MAX_VALUES], n_bs; /* batch entries */
    double factor;
    int fit;        /* fit the exponents (enough lengths, no --no-fit) */
    pass_kind pass; /* --pass: forward or train */
    sweep_common common;
    inputs_source source;                      /* random, or --q/--k/--v (common/inputs.h) */
    kernels_series series[KERNELS_MAX_SERIES]; /* every series of the registry */
    size_t n_series;
    int selected[KERNELS_MAX_SERIES];
    variants_values variant_params; /* --window, --proj-rank, --proj, --features, --seed */
} config;

/* One (d, heads, batch) of the sweep: the fits and crossings are per group. */
typedef struct {
    size_t d, heads, batch;
} group;

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static size_t max_of(const size_t *x, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] > m) m = x[i];
    return m;
}

/* A list flag (sweep_parse) into out, or the default value when absent. */
static int parse_list(const char *flag, const char *text, double factor, size_t fallback,
                      size_t *out, size_t max, size_t *n)
{
    if (!text) {
        out[0] = fallback, *n = 1;
        return 0;
    }
    return sweep_parse(flag, text, factor, out, max, n);
}

/* The inputs: random, or the arrays of --q/--k/--v, which then set d, heads and batch
 * (flags that would set them are refused) and bound N: an --n above min(N, M) is
 * refused, the default lengths clipped. Returns 0, or 2 after one line. */
static int source_of(config *c, const char *q, const char *k, const char *v, const char *d,
                     const char *heads, const char *batch, int n_given)
{
    int rc = inputs_source_open(&c->source, q, k, v, c->common.seed);
    if (rc || !c->source.from_files) return rc;
    const inputs_source *s = &c->source;
    const char *set = d ? "--d" : heads ? "--heads" : batch ? "--batch" : NULL;
    const size_t max_n = inputs_source_max_n(s);
    if (set)
        rc = cli_fail(set, "set by the arrays with --q/--k/--v (B=%zu H=%zu d=%zu)", s->batch,
                      s->heads, s->d_k);
    else if (s->d_v != s->d_k)
        rc = cli_fail(s->path[2], "d_v = %zu differs from d_k = %zu (scaling times d_k = d_v)",
                      s->d_v, s->d_k);
    else if (n_given && c->ns[c->n_ns - 1] > max_n)
        rc = cli_fail("--n", "%zu is more than the arrays' %zu tokens (min(N, M) of --q/--k/--v)",
                      c->ns[c->n_ns - 1], max_n);
    if (rc) {
        inputs_source_close(&c->source);
        return rc;
    }
    c->ds[0] = s->d_k, c->hs[0] = s->heads, c->bs[0] = s->batch;
    c->n_ds = c->n_hs = c->n_bs = 1;
    size_t kept = 0;
    for (size_t i = 0; i < c->n_ns; i++)
        if (c->ns[i] <= max_n) c->ns[kept++] = c->ns[i];
    if (kept == 0) c->ns[kept++] = max_n;
    c->n_ns = kept;
    return 0;
}

/* Returns 0, or 2 after one line on stderr. */
static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *factor = NULL, *d = NULL, *heads = NULL, *batch = NULL, *list = NULL;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL, *pass = NULL;
    int no_fit = 0;
    sweep_common_text common = {0};
    variants_flags variant_flags = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},
        {"factor", &factor, NULL},
        {"d", &d, NULL},
        {"heads", &heads, NULL},
        {"batch", &batch, NULL},
        {"variant", &list, NULL},
        {"no-fit", NULL, &no_fit},
        {"q", &q_path, NULL},
        {"k", &k_path, NULL},
        {"v", &v_path, NULL},
        {"pass", &pass, NULL},
        SWEEP_COMMON_FLAGS(common),
        VARIANTS_PARAM_FLAGS(variant_flags),
        {NULL, NULL, NULL},
    };
    static const cli_alias renamed[] = {{"variants", "variant"}, {NULL, NULL}};
    int rc = cli_parse_flags_aliased(argc, argv, flags, renamed);
    if (rc) return rc;
    c->factor = 2;
    c->n_series = kernels_all_series(c->series);
    kernels_select_all_but(c->series, c->n_series, left_out_by_default, c->selected);
    if (factor) {
        if ((rc = cli_parse_double("--factor", factor, &c->factor))) return rc;
        if (c->factor < 1.05) return cli_fail("--factor", "must be at least 1.05");
    }
    if (n) {
        if ((rc = sweep_parse("--n", n, c->factor, c->ns, MAX_POINTS, &c->n_ns))) return rc;
    } else {
        c->n_ns = sweep_geometric(128, 65536, c->factor, c->ns, MAX_POINTS);
    }
    qsort(c->ns, c->n_ns, sizeof c->ns[0], cmp_size);
    if ((rc = parse_list("--d", d, 2, 64, c->ds, MAX_VALUES, &c->n_ds)) ||
        (rc = parse_list("--heads", heads, 2, 8, c->hs, MAX_VALUES, &c->n_hs)) ||
        (rc = parse_list("--batch", batch, 2, 1, c->bs, MAX_VALUES, &c->n_bs)))
        return rc;
    if (list &&
        (rc = kernels_parse_series_list("--variant", list, c->series, c->n_series, c->selected)))
        return rc;
    static const char *const pass_names[] = {"forward", "train", NULL};
    int pass_index = 0;
    if (pass && (rc = cli_parse_choice("--pass", pass, pass_names, &pass_index))) return rc;
    c->pass = pass_index ? PASS_TRAIN : PASS_FORWARD;
    for (size_t vi = 0; c->pass == PASS_TRAIN && vi < c->n_series; vi++) {
        if (!c->selected[vi] || pass_kernel_has(c->series[vi].kernel, PASS_TRAIN)) continue;
        if (list)
            return cli_fail("--variant", "%s has no backward pass (--pass train)",
                            c->series[vi].name);
        c->selected[vi] = 0; /* the default: the kernels that have one */
    }
    la_kernel chosen[KERNELS_MAX_SERIES];
    size_t n_chosen = 0;
    for (size_t vi = 0; vi < c->n_series; vi++)
        if (c->selected[vi]) chosen[n_chosen++] = c->series[vi].kernel;
    if ((rc = variants_parse(&variant_flags, variants_params_of(chosen, n_chosen),
                             &c->variant_params)))
        return rc;
    /* the largest point's arrays, B·H·N·d floats, addressable */
    const size_t max_b = max_of(c->bs, c->n_bs), max_h = max_of(c->hs, c->n_hs);
    if ((rc = sweep_check_floats("--batch", max_b, max_h, 1)) ||
        (rc = sweep_check_floats("--n", max_b * max_h, c->ns[c->n_ns - 1], max_of(c->ds, c->n_ds))))
        return rc;
    if ((rc = sweep_common_finish(&common, &c->common,
                                  c->pass == PASS_TRAIN ? "scaling_train.csv" : "scaling.csv", 20,
                                  8.0 * (1 << 30))) ||
        (rc = source_of(c, q_path, k_path, v_path, d, heads, batch, n != NULL)))
        return rc;
    c->variant_params.seed = c->common.seed; /* one seed: the inputs' and the variants' draws */
    if (c->n_ds * c->n_hs * c->n_bs > MAX_GROUPS)
        return cli_fail("scaling", "%zu combinations of --d, --heads and --batch: at most %d",
                        c->n_ds * c->n_hs * c->n_bs, MAX_GROUPS);
    /* the fit is over the upper half of the lengths, and needs STATS_MIN_FIT_POINTS */
    const size_t upper = c->n_ns - c->n_ns / 2;
    c->fit = !no_fit && c->n_ns >= STATS_MIN_FIT_POINTS;
    if (c->fit && upper < STATS_MIN_FIT_POINTS) {
        inputs_source_close(&c->source);
        return cli_fail("scaling",
                        "--n gives %zu lengths: the exponent would be fitted over the upper "
                        "half, %zu points, and a fit needs at least %d (give at least %d "
                        "lengths, e.g. a smaller --factor, or --no-fit)",
                        c->n_ns, upper, STATS_MIN_FIT_POINTS, 2 * STATS_MIN_FIT_POINTS - 1);
    }
    return 0;
}

/* The key of a point: variant,n,d_k,d_v,heads,batch,threads */
static void point_key(char *key, size_t size, const char *name, size_t n, const group *g)
{
    snprintf(key, size, "%s,%zu,%zu,%zu,%zu,%zu,%d", name, n, g->d, g->d, g->heads, g->batch,
             la_get_num_threads());
}

/* The ok points of a series in a group: N, median time, its quartiles and the memory the
 * kernel added (peak − baseline resident bytes; 0 when unknown). Returns the count. */
typedef struct {
    double n[MAX_POINTS], median[MAX_POINTS], q1[MAX_POINTS], q3[MAX_POINTS];
    double memory[MAX_POINTS];
    size_t count;
} curve;

static void read_curve(record_file *f, const config *c, const char *name, const group *g, curve *cv)
{
    cv->count = 0;
    for (size_t i = 0; i < c->n_ns; i++) {
        char key[256], status[32];
        point_key(key, sizeof key, name, c->ns[i], g);
        const char *row = record_find(f, key);
        double t, q1, q3, base, peak;
        if (!row || record_get_str(f, row, "status", status, sizeof status) != 0 ||
            strcmp(status, "ok") != 0 || record_get(f, row, "median_s", &t) != 0)
            continue;
        const size_t k = cv->count++;
        cv->n[k] = (double)c->ns[i], cv->median[k] = t;
        /* a file from before the quartiles: the median stands in */
        cv->q1[k] = record_get(f, row, "q1_s", &q1) == 0 ? q1 : t;
        cv->q3[k] = record_get(f, row, "q3_s", &q3) == 0 ? q3 : t;
        cv->memory[k] = record_get(f, row, "baseline_rss_bytes", &base) == 0 &&
                                record_get(f, row, "peak_rss_bytes", &peak) == 0
                            ? peak - base
                            : 0;
    }
}

/* "d=64 H=8 B=1" */
static void group_label(const group *g, char *buf, size_t size)
{
    snprintf(buf, size, "d=%zu H=%zu B=%zu", g->d, g->heads, g->batch);
}

/* Fits one series of one group (upper half of its ok points) into the fit file, and says
 * it on stdout. */
static int fit_series(record_file *fit, record_file *f, const config *c, const kernels_series *var,
                      const group *g)
{
    curve cv;
    read_curve(f, c, var->name, g, &cv);
    int known;
    const double theory = kernels_time_exponent(var->kernel, &known);
    char theory_text[32] = "?", label[96], head[512];
    if (known) snprintf(theory_text, sizeof theory_text, "%g", theory);
    group_label(g, label, sizeof label);
    snprintf(head, sizeof head, "%s,%zu,%zu,%zu,%zu,%d,%s", var->name, g->d, g->d, g->heads,
             g->batch, la_get_num_threads(), known ? theory_text : "");
    const size_t from = cv.count / 2; /* the upper half of the curve */
    stats_fit t, m;
    if (stats_fit_loglog(cv.n + from, cv.median + from, cv.count - from, STATS_BOOTSTRAP_SEED,
                         &t) != 0) {
        printf("scaling: %-24s %s  no exponent: %zu measured points in the upper half, a fit "
               "needs at least %d\n",
               var->name, label, cv.count - from, STATS_MIN_FIT_POINTS);
        return record_row(fit, "%s,,,,,,,,%zu,,,,,", head, cv.count - from);
    }
    char memory[160] = "";
    const int have_memory = stats_fit_loglog(cv.n + from, cv.memory + from, cv.count - from,
                                             STATS_BOOTSTRAP_SEED, &m) == 0;
    if (have_memory)
        snprintf(memory, sizeof memory, "%.4f,%.4f,%.4f,%.4f,%d", m.exponent, m.ci_lo, m.ci_hi,
                 m.r_squared, m.points);
    else
        snprintf(memory, sizeof memory, ",,,,");
    printf("scaling: %-24s %s  time ~ N^%.2f [%.2f, %.2f] R^2 %.3f (theory %s) over N = "
           "%.0f..%.0f (%d points)\n",
           var->name, label, t.exponent, t.ci_lo, t.ci_hi, t.r_squared, theory_text, t.x_min,
           t.x_max, t.points);
    return record_row(fit, "%s,%.4f,%.4f,%.4f,%.5f,%.6e,%.0f,%.0f,%d,%s", head, t.exponent, t.ci_lo,
                      t.ci_hi, t.r_squared, t.prefactor, t.x_min, t.x_max, t.points, memory);
}

/* Where linear attention becomes faster than softmax in one group, for the non-causal
 * and the causal pair, when both series were run: from the medians, with the two
 * measured N that bracket the crossing; then the speed-up at the largest N both
 * measured, with its range from the repetitions' quartiles. */
static void report_crossings(record_file *f, const config *c, const group *g)
{
    for (int causal = 0; causal <= 1; causal++) {
        const char *soft = la_kernel_series(LA_KERNEL_SOFTMAX, causal);
        const char *lin = la_kernel_series(LA_KERNEL_LINEAR, causal);
        int have = 0;
        for (size_t vi = 0; vi < c->n_series; vi++)
            have += c->selected[vi] &&
                    (strcmp(c->series[vi].name, soft) == 0 || strcmp(c->series[vi].name, lin) == 0);
        if (have < 2) continue;
        curve a, b;
        read_curve(f, c, soft, g, &a);
        read_curve(f, c, lin, g, &b);
        /* the N both measured */
        double n[MAX_POINTS], ta[MAX_POINTS], tb[MAX_POINTS];
        size_t count = 0, last_a = 0, last_b = 0;
        for (size_t i = 0, j = 0; i < a.count && j < b.count;) {
            if (a.n[i] < b.n[j])
                i++;
            else if (b.n[j] < a.n[i])
                j++;
            else {
                n[count] = a.n[i], ta[count] = a.median[i], tb[count++] = b.median[j];
                last_a = i++, last_b = j++;
            }
        }
        stats_crossing x;
        char label[96];
        group_label(g, label, sizeof label);
        if (stats_crossover(n, ta, tb, count, &x) != 0) continue;
        if (x.where == STATS_CROSS_INSIDE)
            printf("scaling: %s faster than %s from N ~ %.0f (%s; between the measured N = %.0f "
                   "and %.0f)\n",
                   lin, soft, x.n, label, x.lo, x.hi);
        else if (x.where == STATS_CROSS_BELOW)
            printf("scaling: %s faster than %s already at the smallest N = %.0f (%s): the "
                   "crossing is below the measured range\n",
                   lin, soft, x.hi, label);
        else
            printf("scaling: %s still slower than %s at the largest N = %.0f (%s): the crossing "
                   "is above the measured range\n",
                   lin, soft, x.lo, label);
        /* the speed-up at the largest N both measured, from the repetitions' quartiles */
        const stats_summary sa = {a.median[last_a], 0, 0, a.q1[last_a], a.q3[last_a], 0},
                            sb = {b.median[last_b], 0, 0, b.q1[last_b], b.q3[last_b], 0};
        stats_ratio r;
        if (stats_speedup(&sa, &sb, &r) == 0)
            printf("scaling: %s %.2fx as fast as %s at N = %.0f (%s; %.2fx..%.2fx from the "
                   "interquartile ranges)\n",
                   lin, r.ratio, soft, n[count - 1], label, r.lo, r.hi);
    }
}

/* The groups of the sweep, d-major. Returns the count. */
static size_t all_groups(const config *c, group *out)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_ds; i++)
        for (size_t j = 0; j < c->n_hs; j++)
            for (size_t k = 0; k < c->n_bs; k++)
                out[n++] = (group){c->ds[i], c->hs[j], c->bs[k]};
    return n;
}

/* Fits each kernel of each group and writes the fit file. */
static int write_fits(record_file *f, const config *c, const group *groups, size_t n_groups,
                      int argc, char **argv)
{
    char path[4096], err[512];
    record_sibling_path(c->common.out, "fit", path, sizeof path);
    record_file *fit =
        record_open(path, c->pass == PASS_TRAIN ? "scaling_train_fit" : "scaling_fit",
                    "least-squares exponent of median time (and of the kernel's "
                    "memory) in N, upper half of each kernel's measured points, per "
                    "(d, heads, batch); 95% pairs-bootstrap interval, 2000 "
                    "resamples, fixed seed",
                    FIT_COLUMNS, 6, 0, argc, argv, err, sizeof err);
    if (!fit) {
        cli_line("%s", err);
        return -1;
    }
    int rc = 0;
    for (size_t gi = 0; gi < n_groups && rc == 0; gi++)
        for (size_t vi = 0; vi < c->n_series && rc == 0; vi++)
            if (c->selected[vi]) rc = fit_series(fit, f, c, &c->series[vi], &groups[gi]);
    if (rc) cli_line("%s: write failed", path);
    printf("scaling: wrote %s and %s\n", record_path(f), path);
    return record_close(fit) != 0 || rc ? -1 : 0;
}

/* The inputs of one point, shared by every kernel: B·H·N·d floats each. */
typedef struct {
    float *q, *k, *v, *out;
    float *d_out, *d_q, *d_k, *d_v; /* --pass train */
} inputs;

static void free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->out);
    free(in->d_out), free(in->d_q), free(in->d_k), free(in->d_v);
    *in = (inputs){0};
}

static int fill_inputs(inputs *in, const inputs_source *source, const group *g, size_t n,
                       pass_kind pass)
{
    const size_t elems = g->batch * g->heads * n * g->d;
    free_inputs(in);
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
 * 2 (refused with its line). */
static int measure_point(record_file *f, const config *c, const group *g, size_t n, track *tracks,
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
        point_key(key, sizeof key, var->name, n, g);
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
    pass_time_interleaved(n_run, kernels, problems, c->pass, &arrays, &rule, t, st);
    for (size_t i = 0; i < n_run && rc == 0; i++) {
        const kernels_series *var = &c->series[which[i]];
        point_key(key, sizeof key, var->name, n, g);
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

int cmd_scaling(int argc, char **argv)
{
    config c;
    memset(&c, 0, sizeof c);
    int rc = parse(argc, argv, &c);
    if (rc) {
        variants_free(&c.variant_params);
        return rc;
    }
    memory_init();
    const machine_report *busy = machine_check();

    char err[512], inputs_line[1024];
    inputs_source_describe(&c.source, inputs_line, sizeof inputs_line);
    if (c.pass == PASS_TRAIN)
        snprintf(inputs_line + strlen(inputs_line), sizeof inputs_line - strlen(inputs_line),
                 "# pass: train (forward then backward of L = sum(out * dO), one timed call)\n");
    record_meta_extra(inputs_line);
    record_file *f = record_open(
        c.common.out, c.pass == PASS_TRAIN ? "scaling_train" : "scaling",
        c.source.from_files ? "time and memory of each attention kernel against N (float32, "
                              "self-attention N = M, prefixes of the arrays of # inputs; one "
                              "row per variant, n, d, heads, batch)"
                            : "time and memory of each attention kernel against N (float32, "
                              "self-attention N = M, random normal inputs; one row per "
                              "variant, n, d, heads, batch)",
        COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        cli_line("%s", err);
        inputs_source_close(&c.source);
        variants_free(&c.variant_params);
        record_meta_extra(NULL);
        return 2;
    }

    group groups[MAX_GROUPS];
    const size_t n_groups = all_groups(&c, groups);
    int n_selected = 0;
    for (size_t vi = 0; vi < c.n_series; vi++)
        n_selected += c.selected[vi];

    /* progress is weighted by the FLOP model (a point's share of all the arithmetic) */
    double total_work = 0;
    for (size_t gi = 0; gi < n_groups; gi++)
        for (size_t i = 0; i < c.n_ns; i++)
            total_work += (double)c.ns[i] * (double)c.ns[i] * (double)groups[gi].d *
                          (double)groups[gi].heads * (double)groups[gi].batch;
    progress_line pr;
    progress_start(&pr, "scaling", (int)(n_groups * c.n_ns), total_work);

    inputs in = {0};
    int point = 0;
    for (size_t gi = 0; gi < n_groups && rc == 0; gi++) {
        const group *g = &groups[gi];
        track tracks[KERNELS_MAX_SERIES] = {{0}};
        for (size_t vi = 0; vi < c.n_series; vi++)
            tracks[vi].selected = c.selected[vi];
        for (size_t i = 0; i < c.n_ns && rc == 0; i++) {
            char what[128], label[96];
            group_label(g, label, sizeof label);
            snprintf(what, sizeof what, "N=%zu %s, %d kernels", c.ns[i], label, n_selected);
            progress_step(&pr, ++point,
                          (double)c.ns[i] * (double)c.ns[i] * (double)g->d * (double)g->heads *
                              (double)g->batch,
                          what);
            rc = measure_point(f, &c, g, c.ns[i], tracks, &in);
            if (rc == 1 && f) cli_line("%s: write failed", record_path(f));
        }
    }
    progress_end(&pr);
    free_inputs(&in);
    if (rc == 0) {
        if (c.fit && write_fits(f, &c, groups, n_groups, argc, argv) != 0) rc = 1;
        if (!c.fit) {
            printf("scaling: no exponent fitted (%s)\n",
                   c.n_ns < STATS_MIN_FIT_POINTS ? "fewer than 4 lengths of N" : "--no-fit");
            printf("scaling: wrote %s\n", record_path(f));
        }
        for (size_t gi = 0; gi < n_groups; gi++)
            report_crossings(f, &c, &groups[gi]);
        if (busy->noisy)
            printf("scaling: the machine was busy (%s): these timings are noisy\n", busy->why);
    }
    if (record_close(f) != 0) rc = 1;
    inputs_source_close(&c.source);
    variants_free(&c.variant_params);
    record_meta_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}

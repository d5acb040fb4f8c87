/* scaling.c — `linattn scaling`: time and memory of every attention kernel against the
 * sequence length N (N = M, self-attention), at every point of a sweep over N, d, heads
 * and batch, the kernels' repetitions interleaved at each point; then per kernel and
 * (d, heads, batch) the exponent of time in N over the upper half of each curve with
 * its bootstrap interval and R² (theory: 2 for softmax, 1 for linear; common/stats.h),
 * and where linear attention overtakes softmax. The kernels are the registry's series
 * (common/kernels.h). Writes scaling.csv (long format: one row per series, N, d,
 * heads and batch) and scaling_fit.csv (one row per series and (d, heads,
 * batch)). */
#include "scaling.h"

#include "commands.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/metadata.h"
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
    "                     forward and then the backward (la_attention_backward of\n"
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

static const char COLUMNS[] =
    "variant,n,d_k,d_v,heads,batch,threads,status,reps,median_s,min_s,max_s,q1_s,q3_s,gflops,"
    "flops,workspace_bytes,io_bytes,baseline_rss_bytes,peak_rss_bytes,predicted_s";

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
    metadata_extra(inputs_line);
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
        metadata_extra(NULL);
        return 2;
    }

    group groups[MAX_GROUPS];
    const size_t n_groups = scaling_all_groups(&c, groups);
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
            scaling_group_label(g, label, sizeof label);
            snprintf(what, sizeof what, "N=%zu %s, %d kernels", c.ns[i], label, n_selected);
            progress_step(&pr, ++point,
                          (double)c.ns[i] * (double)c.ns[i] * (double)g->d * (double)g->heads *
                              (double)g->batch,
                          what);
            rc = scaling_measure_point(f, &c, g, c.ns[i], tracks, &in);
            if (rc == 1 && f) cli_line("%s: write failed", record_path(f));
        }
    }
    progress_end(&pr);
    scaling_free_inputs(&in);
    if (rc == 0) {
        if (c.fit && scaling_write_fits(f, &c, groups, n_groups, argc, argv) != 0) rc = 1;
        if (!c.fit) {
            printf("scaling: no exponent fitted (%s)\n",
                   c.n_ns < STATS_MIN_FIT_POINTS ? "fewer than 4 lengths of N" : "--no-fit");
            printf("scaling: wrote %s\n", record_path(f));
        }
        for (size_t gi = 0; gi < n_groups; gi++)
            scaling_report_crossings(f, &c, &groups[gi]);
        if (busy->noisy)
            printf("scaling: the machine was busy (%s): these timings are noisy\n", busy->why);
    }
    if (record_close(f) != 0) rc = 1;
    inputs_source_close(&c.source);
    variants_free(&c.variant_params);
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}

/* accuracy.c — `linattn accuracy`: numerical comparison of the attention variants.
 * Four studies, one row per measurement in accuracy.csv:
 *   error_vs_n  each fast kernel (float32 and float64) against the float64 reference
 *               (la_ref_*) on the same inputs, as N grows;
 *   distance    how far linear attention's output is from softmax attention's, and hard
 *               from soft, on random inputs and on inputs with one dominant key
 *               (float64 references, so this is the math, not rounding);
 *   eps         linear attention's output for ε from 0 to 10 against ε = 0 (float64), and
 *               the float32 kernel against the float64 reference at each ε;
 *   chunk       the chunked causal linear kernel for every chunk size against the
 *               recurrent kernel and the reference: the chunk size must be invisible. */
#include "accuracy.h"

#include "attention/series.h"
#include "commands.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/metadata.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/variants.h" /* variants_rank_fits: linformer's default rank against N */
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn accuracy [--n LIST] [--d D] [--heads H] [--fixed-n N]\n"
    "                        [--studies LIST] [--out PATH] [--resume] [--seed N]\n"
    "                        [--q Q.npy --k K.npy --v V.npy [--layout bhnd|bnhd]]\n"
    "\n"
    "Compares the attention variants numerically. A kernel against its own reference\n"
    "(error_vs_n, eps, chunk): ‖y − y_ref‖ / ‖y_ref‖ over the whole output (error_scale\n"
    "norm_ref); a variant against softmax (distance): RMS(y − y_softmax) / RMS(v)\n"
    "(error_scale rms_v); inf when any value is not finite.\n"
    "  error_vs_n  every kernel of the library's registry, float32 and float64, against\n"
    "              its float64 reference (la_ref_*) on the same inputs, at each N of\n"
    "              --n (linformer at its default rank 256: an N below it is recorded\n"
    "              as skipped_rank); the series:\n";
static const char help_after_series[] =
    "  distance    every kernel the registry marks as approximating softmax attention\n"
    "              (float64, at its default budget: window r, rank k or features m, in\n"
    "              the budget columns) against exact softmax (its float64 reference), on\n"
    "              random inputs (or yours) and on inputs where one key dominates every\n"
    "              query's scores (logit gap ≈ 16), at each N of --n. The error is\n"
    "              RMS(y − y_softmax) / RMS(v) (error_scale rms_v): every output row of\n"
    "              softmax attention is a weighted average of v's rows, so 1 is an error\n"
    "              as large as a typical value, and the scale does not shrink with the\n"
    "              output as the weights spread\n"
    "  eps         linear attention (elu+1 and relu, causal and not) at ε = 0, 1e-12, …,\n"
    "              10 against ε = 0, and the float32 kernel against the reference at\n"
    "              each ε, at N = --fixed-n\n"
    "  chunk       chunked causal linear attention (float32) for chunk sizes 1, 2, 4, …,\n"
    "              N against the recurrent kernel and the reference, at N = --fixed-n\n"
    "\n"
    "  --n LIST         sequence lengths of error_vs_n and distance:\n"
    "                   " SWEEP_SYNTAX " (default 16:4096)\n"
    "  --d D            head size, d_k = d_v = D (default 64)\n"
    "  --heads H        heads (default 2)\n"
    "  --fixed-n N      N of the eps and chunk studies (default 1000)\n"
    "  --studies LIST   comma-separated subset of error_vs_n,distance,eps,chunk (default\n"
    "                   all)\n"
    "  --out PATH       results file (default accuracy.csv)\n"
    "  --resume         keep the measurements already in PATH\n"
    "  --seed N         seed of the random inputs, FAVOR+'s features and Linformer's\n"
    "                   projections (default 1)\n"
    "  --q Q.npy, --k K.npy, --v V.npy\n"
    "                   compare on your arrays instead of random ones (input column\n"
    "                   \"user\"; distance then has no dominant_key inputs): shapes as in\n"
    "                   linattn attend, (N, d), (H, N, d) or (B, H, N, d), any of\n"
    "                   float16, bfloat16, float32, float64, with d_k = d_v; they set d\n"
    "                   and heads (B·H; --d and --heads are then refused). A point of N\n"
    "                   takes the first N queries and keys; an --n or --fixed-n above the\n"
    "                   arrays' min(N, M) is refused, the defaults are clipped to it. The\n"
    "                   results' # inputs line names the files (random: the seed)\n"
    "  --layout L       bhnd: the arrays are (B, H, N, d); bnhd: (B, N, H, d), as\n"
    "                   FlashAttention holds them, transposed on reading [bhnd]\n"
    "  --max-seconds S  skip (and record as skipped_time) an N whose float64 reference is\n"
    "                   predicted to take longer than S seconds at 1 GFLOP/s (default 60)\n"
    "  --max-mem SIZE   skip (skipped_mem) an N whose reference would hold more than SIZE\n"
    "                   bytes: its N×N scores and the inputs and outputs (default 8G)\n"
    "Inputs are N(0, 1) in float32, or --q/--k/--v (the references get the same values\n"
    "in float64). On success one line on stderr says how the inputs were read.\n";

/* The series error_vs_n leaves out: their kernels' code is that of series it runs, with
 * the causal mask. */
const char *const accuracy_left_out_of_error_vs_n[] = {
    "softmax_materialized_causal", "hard_causal",
    /* the score functions: softmax's kernel on transformed inputs (general,
     * cosine), or tested against their oracles in tests/ (additive) */
    "general", "general_causal", "additive", "additive_causal", "cosine", "cosine_causal", NULL};

void cmd_accuracy_help(FILE *out)
{
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all);
    int selected[KERNELS_MAX_SERIES];
    char names[1024];
    kernels_select_all_but(all, n, accuracy_left_out_of_error_vs_n, selected);
    fputs(help_text, out);
    fprintf(out, "%14s", "");
    cli_print_wrapped(out, kernels_series_names(all, n, selected, names, sizeof names), 14);
    fputs(help_after_series, out);
}

static const char COLUMNS[] =
    "study,variant,input,n,d,heads,causal,feature_map,eps,chunk,precision,compared_to,"
    "rel_error,error_scale,max_abs_error,budget_name,budget,status";

static const char *const study_names[] = {"error_vs_n", "distance", "eps", "chunk", NULL};

/* With --q/--k/--v: the arrays set d (d_k = d_v needed) and heads (B·H); an --n or
 * --fixed-n above min(N, M) is refused, the defaults clipped to it. 0, or 2. */
static int shape_from_arrays(config *c, const char *d, const char *heads, int n_given,
                             int fixed_given)
{
    const inputs_source *s = &c->source;
    const size_t max_n = inputs_source_max_n(s);
    if (d || heads)
        return cli_fail(d ? "--d" : "--heads",
                        "set by the arrays with --q/--k/--v (d %zu, "
                        "heads %zu)",
                        s->d_k, s->batch * s->heads);
    if (s->d_v != s->d_k)
        return cli_fail(s->path[2], "d_v = %zu differs from d_k = %zu (accuracy uses d_k = d_v)",
                        s->d_v, s->d_k);
    if (n_given && c->hi > max_n)
        return cli_fail("--n",
                        "%zu is more than the arrays' %zu tokens (min(N, M) of "
                        "--q/--k/--v)",
                        c->hi, max_n);
    if (fixed_given && c->fixed_n > max_n)
        return cli_fail("--fixed-n",
                        "%zu is more than the arrays' %zu tokens (min(N, M) of "
                        "--q/--k/--v)",
                        c->fixed_n, max_n);
    c->d = s->d_k, c->heads = s->batch * s->heads;
    /* the default lengths clipped to the arrays' (at least one length: theirs) */
    size_t kept = 0;
    for (size_t i = 0; i < c->n_points; i++)
        if (c->ns[i] <= max_n) c->ns[kept++] = c->ns[i];
    if (kept == 0) c->ns[kept++] = max_n;
    c->n_points = kept;
    c->hi = c->ns[kept - 1];
    if (c->fixed_n > max_n) c->fixed_n = max_n;
    return 0;
}

static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *heads = NULL, *fixed = NULL, *studies = NULL;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL, *layout_text = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},
        {"d", &d, NULL},
        {"heads", &heads, NULL},
        {"fixed-n", &fixed, NULL},
        {"studies", &studies, NULL},
        {"out", &common.out, NULL},
        {"resume", NULL, &common.resume},
        {"seed", &common.seed, NULL},
        {"max-seconds", &common.max_seconds, NULL},
        {"max-mem", &common.max_mem, NULL},
        {"q", &q_path, NULL},
        {"k", &k_path, NULL},
        {"v", &v_path, NULL},
        {"layout", &layout_text, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->d = 64, c->heads = 2, c->fixed_n = 1000;
    for (int i = 0; i < 4; i++)
        c->studies[i] = 1;
    if ((rc = sweep_parse("--n", n ? n : "16:4096", 2, c->ns, MAX_POINTS, &c->n_points))) return rc;
    sweep_sort_sizes(c->ns, c->n_points); /* rows and figures go up in N */
    c->hi = c->ns[c->n_points - 1];
    if (d && (rc = sweep_parse_positive("--d", d, &c->d))) return rc;
    if (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) return rc;
    if (fixed && (rc = sweep_parse_positive("--fixed-n", fixed, &c->fixed_n))) return rc;
    if (studies) {
        int which[4];
        size_t count;
        if ((rc = cli_parse_choice_list("--studies", studies, study_names, which, 4, &count)))
            return rc;
        memset(c->studies, 0, sizeof c->studies);
        for (size_t i = 0; i < count; i++)
            c->studies[which[i]] = 1;
    }
    /* the largest problem's float64 arrays addressable (N·d·heads doubles) */
    const size_t n_max = c->hi > c->fixed_n ? c->hi : c->fixed_n;
    if ((rc = sweep_check_floats("--n", c->heads, n_max, c->d)) ||
        (rc = sweep_check_floats("--n", c->heads * n_max, c->d, 2)))
        return rc;
    if ((rc = sweep_common_finish(&common, &c->common, "accuracy.csv", 60, 8.0 * (1 << 30))))
        return rc;
    layout_kind layout;
    if ((rc = layout_parse("--layout", layout_text, &layout))) return rc;
    if (layout_text && !q_path) return cli_fail("--layout", "applies with --q/--k/--v only");
    if ((rc = inputs_source_open_as(&c->source, layout, q_path, k_path, v_path, c->common.seed)))
        return rc;
    if (c->source.from_files && (rc = shape_from_arrays(c, d, heads, n != NULL, fixed != NULL)))
        inputs_source_close(&c->source);
    return rc;
}

/* The summary: the worst float32 error of each kernel, and the distances at the
 * largest N. */
static void summarize(ctx *x, const size_t *ns, size_t n_points)
{
    if (x->c->studies[0]) {
        series_set set;
        accuracy_error_vs_n_series(&set);
        for (size_t vi = 0; vi < set.n; vi++) {
            if (!set.selected[vi]) continue;
            const kernels_series *var = &set.all[vi];
            double worst = 0;
            for (size_t i = 0; i < n_points; i++) {
                row_key k = {"error_vs_n", var->name,       INPUT_NAME(x),  ns[i],
                             var->causal,  LA_FEATURE_ELU1, LA_DEFAULT_EPS, accuracy_chunk_of(var),
                             "float32",    "reference_f64"};
                char key[512];
                accuracy_key_text(x, &k, key, sizeof key);
                const char *row = record_find(x->f, key);
                double e;
                if (row && record_get(x->f, row, "rel_error", &e) == 0 && !(e <= worst)) worst = e;
            }
            printf("accuracy: %-24s float32 vs float64 reference: worst relative error %.2e "
                   "(N = %zu..%zu)\n",
                   var->name, worst, ns[0], ns[n_points - 1]);
        }
    }
    if (x->c->studies[1]) {
        const char *const inputs[] = {INPUT_NAME(x), "dominant_key"};
        la_kernel kernels[LA_KERNEL_COUNT];
        const size_t n_kernels = accuracy_approximating(kernels);
        for (int dom = 0; dom <= N_DOMINANT(x); dom++) {
            /* at the largest N with a measured distance */
            for (size_t i = n_points; i-- > 0;) {
                char line[1024];
                int len = snprintf(line, sizeof line,
                                   "accuracy: %s inputs, N = %zu: RMS(y − y_softmax) / RMS(v):",
                                   inputs[dom], ns[i]);
                int any = 0;
                for (size_t j = 0; j < n_kernels && len > 0 && (size_t)len < sizeof line; j++) {
                    row_key k = {"distance",
                                 la_kernel_series(kernels[j], 0),
                                 inputs[dom],
                                 ns[i],
                                 0,
                                 LA_FEATURE_ELU1,
                                 LA_DEFAULT_EPS,
                                 0,
                                 "float64",
                                 la_kernel_series(LA_KERNEL_SOFTMAX, 0)};
                    char key[512];
                    accuracy_key_text(x, &k, key, sizeof key);
                    const char *row = record_find(x->f, key);
                    double e;
                    if (!row || record_get(x->f, row, "rel_error", &e) != 0) continue;
                    len += snprintf(line + len, sizeof line - (size_t)len, "%s %s %.3g",
                                    any ? "," : "", k.variant, e);
                    any = 1;
                }
                if (!any) continue;
                printf("%s\n", line);
                break;
            }
        }
    }
}

int cmd_accuracy(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    char err[512], inputs[2048];
    inputs_source_describe(&c.source, inputs, sizeof inputs);
    const size_t used = strlen(inputs);
    snprintf(inputs + used, sizeof inputs - used,
             "# error: rel_error is ||y - y_ref|| / ||y_ref|| where error_scale is norm_ref "
             "(error_vs_n, eps, chunk: a kernel against its own reference), RMS(y - y_softmax) "
             "/ RMS(v) where it is rms_v (distance: each output row of softmax attention is a "
             "weighted average of v's rows, so 1 is an error as large as a typical value)\n");
    metadata_extra(inputs);
    record_file *f = record_open(c.common.out, "accuracy",
                                 "relative errors of the kernels against float64 references, and "
                                 "distances between attention variants",
                                 COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        inputs_source_close(&c.source);
        metadata_extra(NULL);
        return cli_fail("accuracy", "%s", err);
    }
    const size_t *ns = c.ns, n_points = c.n_points;
    progress_line pr;
    int total = (c.studies[0] ? (int)n_points : 0) +
                (c.studies[1] ? (c.source.from_files ? 1 : 2) * (int)n_points : 0) +
                (c.studies[2] ? 4 : 0) + (c.studies[3] ? 1 : 0);
    progress_start(&pr, "accuracy", total, 0);
    ctx x = {.c = &c, .f = f, .pr = &pr};
    variants_defaults(&x.variants, c.common.seed); /* FAVOR+'s features, Linformer's E, F */
    rc = 0;
    if (c.studies[0] && accuracy_study_error_vs_n(&x, ns, n_points)) rc = 1;
    if (!rc && c.studies[1] && accuracy_study_distance(&x, ns, n_points)) rc = 1;
    if (!rc && c.studies[2] && accuracy_study_eps(&x)) rc = 1;
    if (!rc && c.studies[3] && accuracy_study_chunk(&x)) rc = 1;
    progress_end(&pr);
    if (rc)
        cli_line("accuracy: failed (out of memory or a write error)");
    else
        summarize(&x, ns, n_points);
    printf("accuracy: wrote %s\n", record_path(f));
    const inputs_source *s = &c.source;
    if (rc)
        ;
    else if (s->from_files)
        layout_report("accuracy", s->layout, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v,
                      "float32");
    else
        layout_report("accuracy", LAYOUT_BHND, 1, c.heads, c.hi, c.hi, c.d, c.d,
                      "float32 random normal");
    if (record_close(f) != 0) rc = 1;
    inputs_source_close(&c.source);
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}

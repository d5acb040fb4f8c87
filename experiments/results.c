/* results.c — `linattn results`: the default experiment suite that `make results` runs
 * (the embedded configuration of every experiment, sized to finish in well under 15
 * minutes on a 2-core machine), and the summary it ends with, read back from the CSV
 * files: fitted scaling exponents, crossover lengths, decode speed-up, worst float32
 * errors, the parameter table, where attention starts to dominate a layer, and the paths
 * of what was written. */
#include "commands.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/record.h"
#include "common/sweep.h"
#include "linattn.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help_usage[] =
    "usage: linattn results [--out-dir DIR] [--plots-dir DIR] [--only LIST] [--resume]\n"
    "                       [--quick] [--summary | --no-summary]\n"
    "\n"
    "Runs the default experiment suite and prints a summary; `make results` runs it and\n"
    "then renders the figures (`make plots`) and prints the summary again with them.\n"
    "The suite (each is also a command of its own, with --help):\n";
static const char help_options[] =
    "\n"
    "  --out-dir DIR    where the CSV files go (default results)\n"
    "  --plots-dir DIR  where the summary looks for figures (default plots)\n"
    "  --only LIST      comma-separated subset of the experiments above\n"
    "  --resume         keep the points already in the CSV files (each experiment's\n"
    "                   --resume), to finish an interrupted run\n"
    "  --quick          tiny sizes (a smoke test in well under a minute; the figures are\n"
    "                   not meaningful)\n"
    "  --summary        measure nothing: print the summary of the files in DIR\n"
    "  --no-summary     run the suite without the summary (make results prints it after\n"
    "                   rendering the figures)\n";

/* ---------------------------------------------------------------- the suite */

enum { MAX_ARGS = 32, SUITE_ARGS = 16 };

/* One experiment of the suite: a command of main.c's table (la_command_find), run with
 * args (quick_args under --quick; both NULL-terminated), then --resume when given and
 * --out DIR/file. The embedded configuration, sized so the whole suite takes well under
 * 15 minutes on a 2-core machine. */
typedef struct {
    const char *command;
    const char *file;
    const char *note; /* for the help, where args do not say it ("" when they do) */
    const char *args[SUITE_ARGS];
    const char *quick_args[SUITE_ARGS];
} experiment;

// clang-format off
static const experiment suite[] = {
    {"scaling", "scaling.csv", "",
     {"--n", "128:65536", "--d", "64", "--heads", "1", "--max-seconds", "10", "--max-mem", "8G"},
     {"--n", "16:1024", "--d", "64", "--heads", "1", "--max-seconds", "1", "--max-mem", "8G",
      "--min-time", "0.02"}},
    {"crossover", "crossover.csv", " (d = 16..256, 4 heads)",
     {NULL},
     {"--d", "16,64", "--n", "16:1024", "--min-time", "0.02", "--bisect-steps", "2"}},
    {"decode", "decode.csv", "",
     {"--tokens", "8192", "--heads", "8", "--d", "64"},
     {"--tokens", "256", "--heads", "8", "--d", "64"}},
    {"accuracy", "accuracy.csv", "",
     {"--n", "16:4096"},
     {"--n", "16:256", "--fixed-n", "200"}},
    {"params-sweep", "params.csv", " (D = 64..8192 and the standard models)",
     {NULL},
     {NULL}},
    {"block-sweep", "block.csv", " (D = 512)",
     {"--n", "64:8192"},
     {"--n", "64:512", "--d-model", "128", "--min-time", "0.02"}},
};
// clang-format on
enum { N_EXPERIMENTS = sizeof suite / sizeof suite[0] };

void cmd_results_help(FILE *out)
{
    fputs(help_usage, out);
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        fprintf(out, "  %-13s linattn %s", suite[i].command, suite[i].command);
        for (const char *const *a = suite[i].args; *a; a++)
            fprintf(out, " %s", *a);
        fprintf(out, "%s\n", suite[i].note);
    }
    fputs(help_options, out);
}

typedef struct {
    const char *out_dir, *plots_dir;
    int selected[N_EXPERIMENTS];
    int resume, quick, summary_only, no_summary;
} config;

static int parse(int argc, char **argv, config *c)
{
    const char *out_dir = NULL, *plots_dir = NULL, *only = NULL;
    const cli_flag flags[] = {
        {"out-dir", &out_dir, NULL},
        {"plots-dir", &plots_dir, NULL},
        {"only", &only, NULL},
        {"resume", NULL, &c->resume},
        {"quick", NULL, &c->quick},
        {"summary", NULL, &c->summary_only},
        {"no-summary", NULL, &c->no_summary},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->out_dir = out_dir ? out_dir : "results";
    c->plots_dir = plots_dir ? plots_dir : "plots";
    for (size_t i = 0; i < N_EXPERIMENTS; i++)
        c->selected[i] = 1;
    if (only) {
        const char *names[N_EXPERIMENTS + 1];
        for (size_t i = 0; i < N_EXPERIMENTS; i++)
            names[i] = suite[i].command;
        names[N_EXPERIMENTS] = NULL;
        int which[N_EXPERIMENTS];
        size_t count;
        if ((rc = cli_parse_choice_list("--only", only, names, which, N_EXPERIMENTS, &count)))
            return rc;
        memset(c->selected, 0, sizeof c->selected);
        for (size_t i = 0; i < count; i++)
            c->selected[which[i]] = 1;
    }
    return 0;
}

/* An argument vector under construction: the experiment's name, its flags, --out. */
typedef struct {
    char *argv[MAX_ARGS];
    int argc;
    char out[4096];
} args;

static void arg(args *a, const char *s)
{
    if (a->argc < MAX_ARGS - 1) a->argv[a->argc++] = (char *)s;
    a->argv[a->argc] = NULL;
}

/* The command line of suite[which] under c's flags. */
static void configure(size_t which, const config *c, args *a)
{
    const experiment *e = &suite[which];
    a->argc = 0;
    arg(a, e->command);
    for (const char *const *s = c->quick ? e->quick_args : e->args; *s; s++)
        arg(a, *s);
    if (c->resume) arg(a, "--resume");
    snprintf(a->out, sizeof a->out, "%s/%s", c->out_dir, e->file);
    arg(a, "--out"), arg(a, a->out);
}

/* mkdir -p */
static int make_dir(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return cli_fail("--out-dir", "path too long");
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return cli_fail(path, "cannot create the folder: %s", strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- the summary */

static res_file *load(const config *c, const char *file, int n_key)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", c->out_dir, file);
    return res_load(path, n_key, err, sizeof err);
}

static int is_ok(const res_file *f, const char *row)
{
    char status[32];
    return res_get_str(f, row, "status", status, sizeof status) == 0 && strcmp(status, "ok") == 0;
}

static void summary_scaling(const config *c)
{
    res_file *f = load(c, "scaling_fit.csv", 1);
    if (!f) return;
    printf("\nScaling: time ∝ N^e, e fitted over the upper half of each curve\n");
    for (size_t i = 0; i < res_count(f); i++) {
        const char *row = res_row_at(f, i);
        char name[64];
        double e, theory, lo, hi;
        char theory_text[32] = "?"; /* empty for a kernel scaling has no exponent for */
        res_get_str(f, row, "variant", name, sizeof name);
        if (res_get(f, row, "theory_exponent", &theory) == 0)
            snprintf(theory_text, sizeof theory_text, "%.0f", theory);
        if (res_get(f, row, "fitted_exponent", &e) == 0 && res_get(f, row, "fit_n_min", &lo) == 0 &&
            res_get(f, row, "fit_n_max", &hi) == 0)
            printf("  %-24s e = %.2f  (theory %s, N = %.0f..%.0f)\n", name, e, theory_text, lo, hi);
        else
            printf("  %-24s too few points to fit\n", name);
    }
    res_close(f);
}

static void summary_crossover(const config *c)
{
    res_file *f = load(c, "crossover.csv", 4);
    if (!f) return;
    printf("\nCrossover: N above which linear attention is faster than softmax (measured / "
           "predicted by FLOPs)\n");
    printf("  %6s  %-22s  %-22s\n", "d", "non-causal", "causal");
    for (size_t i = 0; i < res_count(f); i++) {
        const char *row = res_row_at(f, i);
        double d, causal;
        if (res_get(f, row, "d", &d) || res_get(f, row, "causal", &causal) || causal != 0) continue;
        char cell[2][80];
        for (int k = 0; k < 2; k++) {
            snprintf(cell[k], sizeof cell[k], "-");
            for (size_t j = 0; j < res_count(f); j++) {
                const char *r2 = res_row_at(f, j);
                double d2, c2, meas, pred;
                char status[32] = "";
                if (res_get(f, r2, "d", &d2) || res_get(f, r2, "causal", &c2) || d2 != d || c2 != k)
                    continue;
                res_get_str(f, r2, "status", status, sizeof status);
                char m[32] = "-", p[32] = "-";
                if (res_get(f, r2, "measured_crossover_n", &meas) == 0)
                    snprintf(m, sizeof m, "%.0f", meas);
                else if (strcmp(status, "below_range") == 0)
                    snprintf(m, sizeof m, "below range");
                else if (strcmp(status, "above_range") == 0)
                    snprintf(m, sizeof m, "above range");
                if (res_get(f, r2, "predicted_crossover_n", &pred) == 0)
                    snprintf(p, sizeof p, "%.0f", pred);
                snprintf(cell[k], sizeof cell[k], "%s / %s", m, p);
            }
        }
        printf("  %6.0f  %-22s  %-22s\n", d, cell[0], cell[1]);
    }
    res_close(f);
}

static void summary_decode(const config *c)
{
    res_file *f = load(c, "decode.csv", 8);
    if (!f) return;
    double total[2] = {NAN, NAN}, tokens = 0;
    for (size_t i = 0; i < res_count(f); i++) {
        const char *row = res_row_at(f, i);
        char name[64];
        double cum, last, T;
        if (!is_ok(f, row) || res_get_str(f, row, "variant", name, sizeof name) ||
            res_get(f, row, "cumulative_s", &cum) || res_get(f, row, "t_last", &last) ||
            res_get(f, row, "tokens", &T) || last != T)
            continue;
        total[strcmp(name, "softmax_kv_cache") == 0 ? 0 : 1] = cum;
        tokens = T;
    }
    if (isfinite(total[0]) && isfinite(total[1]))
        printf("\nDecode: %.0f tokens in %.3g s with softmax + KV cache, %.3g s with linear "
               "attention's state: %.0f× faster\n",
               tokens, total[0], total[1], total[0] / total[1]);
    res_close(f);
}

static void summary_accuracy(const config *c)
{
    res_file *f = load(c, "accuracy.csv", 12);
    if (!f) return;
    kn_series all[KN_MAX_SERIES];
    const size_t n_series = kn_all_series(all);
    printf("\nAccuracy: worst relative error of the float32 kernels against the float64 "
           "reference\n ");
    int listed = 0;
    for (size_t k = 0; k < n_series; k++) { /* the registry's series found in the file */
        double worst = -1;
        for (size_t i = 0; i < res_count(f); i++) {
            const char *row = res_row_at(f, i);
            char study[32], var[64], prec[16];
            double e;
            if (res_get_str(f, row, "study", study, sizeof study) || strcmp(study, "error_vs_n") ||
                res_get_str(f, row, "variant", var, sizeof var) || strcmp(var, all[k].name) ||
                res_get_str(f, row, "precision", prec, sizeof prec) || strcmp(prec, "float32"))
                continue;
            if (res_get(f, row, "rel_error", &e) != 0) e = INFINITY;
            if (e > worst) worst = e;
        }
        if (worst >= 0) printf("%s %s %.1e", listed++ ? "," : "", all[k].name, worst);
    }
    printf("\n");
    res_close(f);
}

static void summary_params(const config *c)
{
    res_file *f = load(c, "params.csv", 1);
    if (!f) return;
    printf(
        "\nParameters of the standard models: the whole model, its layers exactly, and the 12D²\n"
        "rule for the layers (16D² per decoder layer); gap = (exact − rule) / exact\n");
    printf("  %-16s %5s %3s %5s %6s %14s %14s %15s %7s\n", "model", "D", "H", "d_ff", "layers",
           "total", "layers exact", "12D² rule", "gap");
    for (size_t i = 0; i < res_count(f); i++) {
        const char *row = res_row_at(f, i);
        char model[64], kind[32];
        double d, h, ff, enc, dec, total, approx, gap, all;
        if (res_get_str(f, row, "kind", kind, sizeof kind) || strcmp(kind, "standard")) continue;
        if (res_get_str(f, row, "model", model, sizeof model) || res_get(f, row, "d_model", &d) ||
            res_get(f, row, "heads", &h) || res_get(f, row, "d_ff", &ff) ||
            res_get(f, row, "encoder_layers", &enc) || res_get(f, row, "decoder_layers", &dec) ||
            res_get(f, row, "layers_exact", &total) || res_get(f, row, "layers_approx", &approx) ||
            res_get(f, row, "approx_gap", &gap) || res_get(f, row, "total", &all))
            continue;
        char layers[32];
        snprintf(layers, sizeof layers, dec > 0 ? "%.0f+%.0f" : "%.0f", enc, dec);
        printf("  %-16s %5.0f %3.0f %5.0f %6s %14.0f %14.0f %14.0f %6.3f%%\n", model, d, h, ff,
               layers, all, total, approx, 100 * gap);
    }
    res_close(f);
}

static void summary_block(const config *c)
{
    res_file *f = load(c, "block.csv", 6);
    if (!f) return;
    /* the smallest N at which attention takes over half of a softmax layer's time */
    double first = NAN, d_model = NAN, lin_share = NAN, n_max = 0;
    for (size_t i = 0; i < res_count(f); i++) {
        const char *row = res_row_at(f, i);
        char att[32], comp[32];
        double n, share;
        if (!is_ok(f, row) || res_get_str(f, row, "attention", att, sizeof att) ||
            res_get_str(f, row, "component", comp, sizeof comp) || strcmp(comp, "attention") ||
            res_get(f, row, "n", &n) || res_get(f, row, "share", &share))
            continue;
        res_get(f, row, "d_model", &d_model);
        if (strcmp(att, la_kernel_name(LA_KERNEL_SOFTMAX)) == 0 && share > 0.5 && !(first <= n))
            first = n;
        if (strcmp(att, la_kernel_name(LA_KERNEL_LINEAR)) == 0 && n >= n_max)
            n_max = n, lin_share = share;
    }
    if (isfinite(first))
        printf("\nBlock (D = %.0f): attention is over half of a softmax encoder layer's time from "
               "N = %.0f; with linear attention it is %.0f%% at N = %.0f\n",
               d_model, first, 100 * lin_share, n_max);
    else if (isfinite(d_model))
        printf("\nBlock (D = %.0f): attention stays under half of a softmax layer's time up to the "
               "largest N measured\n",
               d_model);
    res_close(f);
}

/* Lists the files of dir whose names end in one of the suffixes. */
static void list_files(const char *dir, const char *const *suffixes)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char *names[256];
    size_t n = 0;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        for (const char *const *s = suffixes; *s; s++) {
            size_t sl = strlen(*s);
            if (len > sl && strcmp(e->d_name + len - sl, *s) == 0) {
                names[n] = malloc(len + 1);
                if (names[n]) memcpy(names[n++], e->d_name, len + 1);
                break;
            }
        }
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort by name */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        printf("  %s/%s\n", dir, names[i]);
        free(names[i]);
    }
}

static void summary(const config *c)
{
    printf("\n==== Summary (from %s/) ====\n", c->out_dir);
    summary_scaling(c);
    summary_crossover(c);
    summary_decode(c);
    summary_accuracy(c);
    summary_params(c);
    summary_block(c);
    static const char *const csv[] = {".csv", NULL}, *const figs[] = {".png", ".svg", NULL};
    printf("\nResults:\n");
    list_files(c->out_dir, csv);
    printf("Figures:\n");
    list_files(c->plots_dir, figs);
}

int cmd_results(int argc, char **argv)
{
    config c = {0};
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    if (c.summary_only) {
        summary(&c);
        return 0;
    }
    if ((rc = make_dir(c.out_dir))) return rc;
    const double start = res_now();
    int failed = 0;
    printf("linattn results: the default suite%s on %s, %d cores, %d threads (load average "
           "%s)\n",
           c.quick ? " (--quick sizes)" : "", res_cpu_model(), res_cores(), la_get_num_threads(),
           res_load_average());
    double busy = res_busy_fraction(0.5);
    if (busy > 0.2)
        printf("note: other processes keep %.0f%% of the cores busy: the timings will be\n"
               "noisier and slower than on an idle machine\n",
               100 * busy);
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        if (!c.selected[i]) continue;
        args a;
        configure(i, &c, &a);
        printf("\n== linattn");
        for (int k = 0; k < a.argc; k++)
            printf(" %s", a.argv[k]);
        printf("\n");
        fflush(stdout);
        double t0 = res_now();
        /* through main.c's table, as `linattn NAME ...` would run it */
        const la_command *command = la_command_find(suite[i].command);
        int r = command ? command->run(a.argc, a.argv)
                        : cli_fail("results", "%s: no such command", suite[i].command);
        char took[32];
        res_format_duration(res_now() - t0, took, sizeof took);
        printf("== %s: %s in %s\n", suite[i].command, r == 0 ? "done" : "FAILED", took);
        fflush(stdout);
        if (r != 0) failed++;
    }
    char took[32];
    res_format_duration(res_now() - start, took, sizeof took);
    if (!c.no_summary) summary(&c);
    printf("\nThe suite took %s%s.\n", took, failed ? "; some experiments FAILED (see above)" : "");
    return failed ? 1 : 0;
}

/* results.c — `linattn results`: the default experiment suite that `make results` runs
 * (the embedded configuration of every experiment, sized to finish in well under 15
 * minutes on a 2-core machine), the folder it writes to (a dated run folder; the
 * committed reference only with --update), its figures (through `linattn plot` when the
 * build has it), and the summary it ends with, read back from the CSV files and kept as
 * SUMMARY.md beside them: every number the README's figure paragraphs quote, each with
 * its spread (interquartile or min–max range, bootstrap interval, bracket). */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "commands.h"
#include "common/cli.h"
#include "common/guard.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/textout.h"
#include "linattn.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The committed reference: what --update writes, and what nothing else may. */
#define REFERENCE_RESULTS "results"
#define REFERENCE_PLOTS "plots"
#define RUNS "results/runs"
#define LATEST RUNS "/latest"

static const char help_usage[] =
    "usage: linattn results [--out-dir DIR] [--plots-dir DIR] [--only LIST] [--resume]\n"
    "                       [--quick] [--update] [--no-figures] [--summary | --no-summary]\n"
    "\n"
    "Runs the default experiment suite, draws its figures and writes its summary. Where:\n"
    "  a new run folder results/runs/DATE-COMMIT/ (UTC date and time, the commit, -dirty\n"
    "  when tracked files differ from it), with the CSV files, the figures and SUMMARY.md;\n"
    "  results/runs/latest points to it. `make results` runs this. The committed reference\n"
    "  (results/*.csv, results/SUMMARY.md, plots/*.png|svg) is written only with --update\n"
    "  (`make results-update`); --out-dir and --plots-dir refuse those folders without it.\n"
    "Before it starts it prints the expected duration: the sum of the selected\n"
    "experiments' times in the reference run (2-core AMD EPYC, idle; listed below), which\n"
    "the progress line then rescales by how fast the finished experiments actually ran.\n"
    "The suite (each is also a command of its own, with --help), and its reference time:\n";
static const char help_options[] =
    "\n"
    "  --out-dir DIR    where the CSV files and SUMMARY.md go (default: a new run folder)\n"
    "  --plots-dir DIR  where the figures go (default: the --out-dir folder)\n"
    "  --only LIST      comma-separated subset of the experiments above\n"
    "  --resume         keep the points already in the CSV files (each experiment's\n"
    "                   --resume), to finish an interrupted run: of results/runs/latest\n"
    "                   unless --out-dir (or --update) says which\n"
    "  --quick          tiny sizes (a smoke test in well under a minute; the figures are\n"
    "                   not meaningful)\n"
    "  --update         write the committed reference: results/ and plots/\n"
    "  --summary        measure nothing: print the summary of the files (of --out-dir,\n"
    "                   of results/ with --update, else of results/runs/latest) and\n"
    "                   rewrite its SUMMARY.md\n"
    "  --no-summary     run the suite and draw the figures without the summary\n"
    "  --no-figures     run the suite without drawing the figures (no gnuplot needed)\n"
    "\n"
    "Figures are drawn by `linattn plot --from DIR --out DIR` when this build has that\n"
    "command (else it says so and draws none). Exit status: 0 done, 1 an experiment or\n"
    "the figures failed, 2 bad flags or folders (one line: linattn: WHAT: why).\n";

/* ---------------------------------------------------------------- the suite */

enum { MAX_ARGS = 32, SUITE_ARGS = 16 };

/* One experiment of the suite: a command of main.c's table (la_command_find), run with
 * args (quick_args under --quick; both NULL-terminated), then --resume when given and
 * --out DIR/file. seconds and quick_seconds: how long it took in the reference run (the
 * committed results: 2-core AMD EPYC, idle; --quick measured alike), the estimate the
 * suite announces. */
typedef struct {
    const char *command;
    const char *file;
    const char *note; /* for the help, where args do not say it ("" when they do) */
    const char *args[SUITE_ARGS];
    const char *quick_args[SUITE_ARGS];
    double seconds, quick_seconds;
    const char *name; /* its name in --only and the listings; NULL: the command's */
} experiment;

static const char *name_of(const experiment *e)
{
    return e->name ? e->name : e->command;
}

// clang-format off
static const experiment suite[] = {
    {"scaling", "scaling.csv", "",
     {"--n", "128:65536", "--d", "64", "--heads", "1", "--max-seconds", "10", "--max-mem", "8G"},
     {"--n", "16:1024", "--d", "64", "--heads", "1", "--max-seconds", "1", "--max-mem", "8G",
      "--min-time", "0.02"},
     55, 4, NULL},
    {"scaling", "scaling_train.csv", " (forward + backward)",
     {"--pass", "train", "--n", "128:16384", "--d", "64", "--heads", "1", "--max-seconds", "5",
      "--max-mem", "8G"},
     {"--pass", "train", "--n", "16:1024", "--d", "64", "--heads", "1", "--max-seconds", "1",
      "--max-mem", "8G", "--min-time", "0.02"},
     60, 4, "scaling_train"},
    {"crossover", "crossover.csv", " (d = 16..256, 4 heads)",
     {NULL},
     {"--d", "16,64", "--n", "16:1024", "--min-time", "0.02", "--bisect-steps", "2"},
     10, 3, NULL},
    {"decode", "decode.csv", "",
     {"--tokens", "8192", "--heads", "8", "--d", "64"},
     {"--tokens", "256", "--heads", "8", "--d", "64"},
     7, 1, NULL},
    {"accuracy", "accuracy.csv", "",
     {"--n", "16:4096"},
     {"--n", "16:256", "--fixed-n", "200"},
     27, 2, NULL},
    {"approx", "approx.csv", " (N = 1024, d = 64, 3 seeds)",
     {"--n", "1024", "--min-time", "0.05"},
     {"--n", "128", "--seeds", "2", "--min-time", "0.01"},
     40, 2, NULL},
    {"params-sweep", "params.csv", " (D = 64..8192 and the standard models)",
     {NULL},
     {NULL},
     0.1, 0.1, NULL},
    {"block-sweep", "block.csv", " (D = 512)",
     {"--n", "64:8192"},
     {"--n", "64:512", "--d-model", "128", "--min-time", "0.02"},
     30, 2, NULL},
    {"complexity", "complexity.csv", " (Table 1: d = 64, N = 128..8192, k = 3, r = 64)",
     {NULL},
     {"--n", "16:1024", "--min-time", "0.02"},
     15, 2, NULL},
    {"roofline", "roofline.csv", " (N = 256..16384 x4, d = 32, 64, 128, float32 and float64)",
     {NULL},
     {"--n", "256,1024", "--d", "64", "--min-time", "0.02"},
     240, 8, NULL},
    {"scores", "scores.csv", " (N = 256, d_k = 4..1024, 5 seeds; no timing)",
     {NULL},
     {"--d", "4:64", "--seeds", "2"},
     3, 0.2, NULL},
};
// clang-format on
enum { N_EXPERIMENTS = sizeof suite / sizeof suite[0] };

void cmd_results_help(FILE *out)
{
    fputs(help_usage, out);
    double total = 0;
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        char took[32];
        progress_format_duration(suite[i].seconds, took, sizeof took);
        fprintf(out, "  %-13s %6s  linattn %s", name_of(&suite[i]), took, suite[i].command);
        for (const char *const *a = suite[i].args; *a; a++)
            fprintf(out, " %s", *a);
        fprintf(out, "%s\n", suite[i].note);
        total += suite[i].seconds;
    }
    char took[32];
    progress_format_duration(total, took, sizeof took);
    fprintf(out, "  %-13s %6s\n", "(all)", took);
    fputs(help_options, out);
}

typedef struct {
    const char *out_dir, *plots_dir;
    char out_buf[PATH_MAX], plots_buf[PATH_MAX];
    int selected[N_EXPERIMENTS];
    int resume, quick, summary_only, no_summary, update, no_figures;
    int new_run; /* out_dir is a run folder made now: results/runs/latest will point to it */
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
        {"update", NULL, &c->update},
        {"summary", NULL, &c->summary_only},
        {"no-summary", NULL, &c->no_summary},
        {"no-figures", NULL, &c->no_figures},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    if (c->summary_only && c->no_summary)
        return cli_fail("--summary", "not with --no-summary: one prints only the summary, the "
                                     "other everything but it");
    if (c->update && (out_dir || plots_dir))
        return cli_fail("--update",
                        "writes results/ and plots/: not with --out-dir or --plots-dir");
    c->out_dir = out_dir;
    c->plots_dir = plots_dir;
    for (size_t i = 0; i < N_EXPERIMENTS; i++)
        c->selected[i] = 1;
    if (only) {
        const char *names[N_EXPERIMENTS + 1];
        for (size_t i = 0; i < N_EXPERIMENTS; i++)
            names[i] = name_of(&suite[i]);
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
    char out[PATH_MAX + 64];
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

/* ---------------------------------------------------------------- folders */

/* mkdir -p */
static int make_dir(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return cli_fail(path, "path too long");
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
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return cli_fail(path, "not a folder");
    return 0;
}

/* 1 when path is the folder reference names here (both existing, the same device and
 * inode) or the repository's own reference folder (common/guard.h), else 0. */
static int same_folder(const char *path, const char *reference)
{
    struct stat a, b;
    if (guard_is_reference_folder(path)) return 1;
    return stat(path, &a) == 0 && stat(reference, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* A new run folder: results/runs/2026-11-23-2035-abc1234[-dirty][-2 …], created. */
static int new_run_folder(config *c)
{
    char date[32], commit[64], *space;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d-%H%M", &tm);
    snprintf(commit, sizeof commit, "%s", record_git_commit());
    if ((space = strchr(commit, ' ')))
        snprintf(space, sizeof commit - (size_t)(space - commit), "-dirty");
    if (strcmp(commit, "unknown") == 0) snprintf(commit, sizeof commit, "nogit");
    int rc = make_dir(RUNS);
    if (rc) return rc;
    for (int n = 1; n < 100; n++) {
        if (n == 1)
            snprintf(c->out_buf, sizeof c->out_buf, RUNS "/%s-%s", date, commit);
        else
            snprintf(c->out_buf, sizeof c->out_buf, RUNS "/%s-%s-%d", date, commit, n);
        if (mkdir(c->out_buf, 0777) == 0) {
            c->out_dir = c->out_buf;
            c->new_run = 1;
            return 0;
        }
        if (errno != EEXIST)
            return cli_fail(c->out_buf, "cannot create the folder: %s", strerror(errno));
    }
    return cli_fail(RUNS, "too many run folders named %s-%s", date, commit);
}

/* results/runs/latest -> the run folder (a relative link, replaced in one rename). A
 * failure is a warning: the run is complete without it. */
static void point_latest(const config *c)
{
    const char *name = strrchr(c->out_dir, '/') + 1;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, RUNS "/.latest.%ld", (long)getpid());
    unlink(tmp);
    if (symlink(name, tmp) != 0 || rename(tmp, LATEST) != 0) {
        cli_line("warning: %s: cannot point it to %s: %s", LATEST, name, strerror(errno));
        unlink(tmp);
    }
}

/* Where this invocation reads and writes, by the rules of the help. */
static int choose_folders(config *c)
{
    if (c->update) {
        guard_allow_update(1);
        c->out_dir = REFERENCE_RESULTS;
        c->plots_dir = REFERENCE_PLOTS;
        return 0;
    }
    if (c->out_dir && same_folder(c->out_dir, REFERENCE_RESULTS))
        return cli_fail("--out-dir",
                        "%s holds the committed reference results: replace them "
                        "with --update (make results-update)",
                        c->out_dir);
    if (c->plots_dir && same_folder(c->plots_dir, REFERENCE_PLOTS))
        return cli_fail("--plots-dir",
                        "%s holds the committed reference figures: replace them "
                        "with --update (make results-update)",
                        c->plots_dir);
    if (!c->out_dir && (c->resume || c->summary_only)) {
        if (!realpath(LATEST, c->out_buf))
            return cli_fail(c->resume ? "--resume" : "--summary",
                            "no earlier run: %s: %s (give --out-dir DIR, or --update for the "
                            "reference)",
                            LATEST, strerror(errno));
        c->out_dir = c->out_buf;
    }
    int rc = 0;
    struct stat st;
    if (c->summary_only && c->out_dir) {
        if (stat(c->out_dir, &st) != 0)
            return cli_fail(c->out_dir, "not a results folder: %s", strerror(errno));
        if (!S_ISDIR(st.st_mode)) return cli_fail(c->out_dir, "not a results folder: not a folder");
    }
    if (!c->out_dir && !c->summary_only) rc = new_run_folder(c);
    if (!c->plots_dir) c->plots_dir = c->out_dir;
    return rc;
}

/* ---------------------------------------------------------------- the summary */

/* The summary is Markdown: printed, and kept as SUMMARY.md in the results folder. Each
 * number is one the README quotes, from the CSV files by column name; its spread is
 * the interquartile range (q1_s..q3_s) where the files have those columns, else the
 * min..max of the repetitions, and it says which. */

static record_file *load(const config *c, const char *file, int n_key)
{
    char path[PATH_MAX + 64], err[512];
    snprintf(path, sizeof path, "%s/%s", c->out_dir, file);
    return record_load(path, n_key, err, sizeof err);
}

/* The value of a `# key: value` line of path, or "" (buf of size bytes). */
static const char *meta_value(const config *c, const char *file, const char *key, char *buf,
                              size_t size)
{
    char path[PATH_MAX + 64], line[1024];
    snprintf(path, sizeof path, "%s/%s", c->out_dir, file);
    buf[0] = 0;
    FILE *in = fopen(path, "r");
    if (!in) return buf;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, in)) {
        if (line[0] != '#') continue;
        if (strncmp(line + 2, key, klen) == 0 && line[2 + klen] == ':') {
            snprintf(buf, size, "%s", line + 3 + klen + (line[3 + klen] == ' '));
            buf[strcspn(buf, "\n")] = 0;
        }
    }
    fclose(in);
    return buf;
}

static int is_ok(const record_file *f, const char *row)
{
    char status[32];
    return record_get_str(f, row, "status", status, sizeof status) == 0 &&
           strcmp(status, "ok") == 0;
}

static int text_is(const record_file *f, const char *row, const char *column, const char *value)
{
    char buf[128];
    return record_get_str(f, row, column, buf, sizeof buf) == 0 && strcmp(buf, value) == 0;
}

/* "5.6 s", "2.3 ms", "19 µs", "850 ns" */
static const char *fmt_time(double s, char *buf, size_t size)
{
    if (!isfinite(s))
        snprintf(buf, size, "-");
    else if (s >= 1)
        snprintf(buf, size, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, size, "%.3g ms", 1e3 * s);
    else if (s >= 1e-6)
        snprintf(buf, size, "%.3g µs", 1e6 * s);
    else
        snprintf(buf, size, "%.3g ns", 1e9 * s);
    return buf;
}

/* "62", "3.4": a ratio to two digits at least */
static const char *fmt_ratio(double x, char *buf, size_t size)
{
    snprintf(buf, size, x >= 10 ? "%.0f" : "%.2g", x);
    return buf;
}

/* "74 MB", "4.34 GB" */
static const char *fmt_bytes(double b, char *buf, size_t size)
{
    if (!isfinite(b) || b < 0)
        snprintf(buf, size, "-");
    else if (b >= 1e9)
        snprintf(buf, size, "%.3g GB", b / 1e9);
    else
        snprintf(buf, size, "%.3g MB", b / 1e6);
    return buf;
}

/* A time and its spread from row: "<median> (IQR a–b)" from <prefix>q1_s and
 * <prefix>q3_s, else "(min–max a–b)" from <prefix>min_s and <prefix>max_s. */
static const char *time_spread(const record_file *f, const char *row, const char *prefix, char *buf,
                               size_t size)
{
    char col[64], m[32], a[32], b[32];
    double median, lo, hi;
    snprintf(col, sizeof col, "%smedian_s", prefix);
    if (record_get(f, row, col, &median) != 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    const char *kind = "IQR";
    snprintf(col, sizeof col, "%sq1_s", prefix);
    int have = record_get(f, row, col, &lo) == 0;
    snprintf(col, sizeof col, "%sq3_s", prefix);
    have = have && record_get(f, row, col, &hi) == 0;
    if (!have) {
        kind = "min–max";
        snprintf(col, sizeof col, "%smin_s", prefix);
        have = record_get(f, row, col, &lo) == 0;
        snprintf(col, sizeof col, "%smax_s", prefix);
        have = have && record_get(f, row, col, &hi) == 0;
    }
    if (have)
        snprintf(buf, size, "%s (%s %s–%s)", fmt_time(median, m, sizeof m), kind,
                 fmt_time(lo, a, sizeof a), fmt_time(hi, b, sizeof b));
    else
        snprintf(buf, size, "%s", fmt_time(median, m, sizeof m));
    return buf;
}

/* The scaling row of series at n (the first group in the file), or NULL. */
static const char *scaling_row(const record_file *f, const char *series, double n)
{
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double rn;
        if (text_is(f, row, "variant", series) && record_get(f, row, "n", &rn) == 0 && rn == n)
            return row;
    }
    return NULL;
}

/* The series of the registry, in registry order, that appear in f's variant column. */
static size_t series_in(const record_file *f, kernels_series *out)
{
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all), found = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < record_count(f); i++)
            if (text_is(f, record_row_at(f, i), "variant", all[k].name)) {
                out[found++] = all[k];
                break;
            }
    return found;
}

/* min and max of column over the ok rows of series with lo <= n <= hi; count of them. */
static int range_over_n(const record_file *f, const char *series, const char *column, double lo,
                        double hi, double *min, double *max)
{
    int count = 0;
    *min = INFINITY, *max = -INFINITY;
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double n, x;
        if (!is_ok(f, row) || !text_is(f, row, "variant", series) || record_get(f, row, "n", &n) ||
            n < lo || n > hi || record_get(f, row, column, &x))
            continue;
        if (x < *min) *min = x;
        if (x > *max) *max = x;
        count++;
    }
    return count;
}

/* The scaling files (forward, or --pass train): fitted exponents, and the times the README
 * quotes at ns (n_ns of them), softmax against linear. */
static void summary_scaling(FILE *out, const config *c, const char *title, const char *file,
                            const char *fit_file, const double *ns, size_t n_ns)
{
    record_file *fit = load(c, fit_file, 1), *f = load(c, file, 1);
    if (!f && !fit) return;
    fprintf(out, "\n## %s (%s, %s)\n\n", title, file, fit_file);
    if (fit) {
        const int has_ci = record_count(fit) > 0 && record_get(fit, record_row_at(fit, 0),
                                                               "exponent_ci_lo", &(double){0}) == 0;
        fprintf(out, "Fitted exponent e of time ∝ N^e%s:\n\n",
                has_ci ? ", with its bootstrap 95% interval and R²"
                       : " (this file has no interval columns: a single least-squares fit)");
        fprintf(out, "| series | e | interval | R² | theory | N range | points |\n"
                     "| --- | --- | --- | --- | --- | --- | --- |\n");
        for (size_t i = 0; i < record_count(fit); i++) {
            const char *row = record_row_at(fit, i);
            char name[64] = "?", theory[16] = "", ci[48] = "-", r2[16] = "-";
            double e, t, lo, hi, r, nmin, nmax, pts;
            record_get_str(fit, row, "variant", name, sizeof name);
            if (record_get(fit, row, "theory_exponent", &t) == 0)
                snprintf(theory, sizeof theory, "%.0f", t);
            if (record_get(fit, row, "exponent_ci_lo", &lo) == 0 &&
                record_get(fit, row, "exponent_ci_hi", &hi) == 0)
                snprintf(ci, sizeof ci, "%.2f–%.2f", lo, hi);
            if (record_get(fit, row, "r_squared", &r) == 0) snprintf(r2, sizeof r2, "%.4f", r);
            if (record_get(fit, row, "fitted_exponent", &e) == 0 &&
                record_get(fit, row, "fit_n_min", &nmin) == 0 &&
                record_get(fit, row, "fit_n_max", &nmax) == 0 &&
                record_get(fit, row, "fit_points", &pts) == 0)
                fprintf(out, "| %s | %.2f | %s | %s | %s | %.0f–%.0f | %.0f |\n", name, e, ci, r2,
                        theory, nmin, nmax, pts);
            else
                fprintf(out, "| %s | - | - | - | %s | too few points to fit | |\n", name, theory);
        }
    }
    if (f) {
        const char *pair[] = {la_kernel_series(LA_KERNEL_SOFTMAX, 0),
                              la_kernel_series(LA_KERNEL_LINEAR, 0)};
        fprintf(out,
                "\nTimes quoted (median over the repetitions, and their spread):\n\n"
                "| N | %s | %s |\n| --- | --- | --- |\n",
                pair[0], pair[1]);
        for (size_t i = 0; i < n_ns; i++) {
            char cell[2][128];
            int measured = 0;
            for (int k = 0; k < 2; k++) {
                const char *row = scaling_row(f, pair[k], ns[i]);
                if (row && is_ok(f, row))
                    time_spread(f, row, "", cell[k], sizeof cell[k]), measured++;
                else
                    snprintf(cell[k], sizeof cell[k], "not measured");
            }
            if (measured) fprintf(out, "| %.0f | %s | %s |\n", ns[i], cell[0], cell[1]);
        }
    }
    record_close(fit);
    record_close(f);
}

static void summary_memory_and_rate(FILE *out, const config *c)
{
    record_file *f = load(c, "scaling.csv", 1);
    if (!f) return;
    kernels_series s[KERNELS_MAX_SERIES];
    size_t n = series_in(f, s);
    fprintf(out, "\n## Memory and arithmetic rate against N (scaling.csv)\n\n"
                 "Peak resident memory at the largest N measured (VmHWM, inputs included), "
                 "points not run, and GFLOP/s (the cost model's FLOPs over the median time): "
                 "the range over every N, over N = 1,024–16,384, and above 16,384.\n\n"
                 "| series | largest N | peak RSS | not run | GFLOP/s, all N | 1,024–16,384 | "
                 "above 16,384 |\n| --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t k = 0; k < n; k++) {
        double n_max = -1, peak = NAN;
        int skipped = 0;
        char skipped_at[64] = "";
        for (size_t i = 0; i < record_count(f); i++) {
            const char *row = record_row_at(f, i);
            double rn, p;
            if (!text_is(f, row, "variant", s[k].name) || record_get(f, row, "n", &rn)) continue;
            if (!is_ok(f, row)) {
                char why[24] = "";
                if (record_get_str(f, row, "status", why, sizeof why) != 0) why[0] = '\0';
                if (!skipped++) /* its status and N: "skipped_mem from N = 65536" */
                    snprintf(skipped_at, sizeof skipped_at, "%s from N = %.0f", why, rn);
                continue;
            }
            if (rn > n_max && record_get(f, row, "peak_rss_bytes", &p) == 0) n_max = rn, peak = p;
        }
        char rates[3][48];
        const double lo[3] = {0, 1024, 16385}, hi[3] = {INFINITY, 16384, INFINITY};
        for (int r = 0; r < 3; r++) {
            double a, b;
            if (range_over_n(f, s[k].name, "gflops", lo[r], hi[r], &a, &b) > 0)
                snprintf(rates[r], sizeof rates[r], "%.3g–%.3g", a, b);
            else
                snprintf(rates[r], sizeof rates[r], "-");
        }
        char mem[32];
        fprintf(out, "| %s | %.0f | %s | %s | %s | %s | %s |\n", s[k].name, n_max,
                fmt_bytes(peak, mem, sizeof mem), skipped ? skipped_at : "-", rates[0], rates[1],
                rates[2]);
    }
    record_close(f);
}

static void summary_crossover(FILE *out, const config *c)
{
    record_file *f = load(c, "crossover.csv", 4);
    if (!f) return;
    fprintf(out, "\n## Crossover (crossover.csv)\n\n"
                 "The N above which linear attention is faster than softmax: measured (with the "
                 "bracket the bisection ended in) / predicted by the FLOP model.\n\n"
                 "| d | non-causal | causal |\n| --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double d, causal;
        if (record_get(f, row, "d", &d) || record_get(f, row, "causal", &causal) || causal != 0)
            continue;
        char cell[2][128];
        for (int k = 0; k < 2; k++) {
            snprintf(cell[k], sizeof cell[k], "-");
            for (size_t j = 0; j < record_count(f); j++) {
                const char *r2 = record_row_at(f, j);
                double d2, c2, meas, pred, lo, hi;
                char status[32] = "", m[64] = "-", p[32] = "-";
                if (record_get(f, r2, "d", &d2) || record_get(f, r2, "causal", &c2) || d2 != d ||
                    c2 != k)
                    continue;
                record_get_str(f, r2, "status", status, sizeof status);
                if (record_get(f, r2, "measured_crossover_n", &meas) == 0) {
                    if (record_get(f, r2, "bracket_lo_n", &lo) == 0 &&
                        record_get(f, r2, "bracket_hi_n", &hi) == 0)
                        snprintf(m, sizeof m, "%.0f (%.0f–%.0f)", meas, lo, hi);
                    else
                        snprintf(m, sizeof m, "%.0f", meas);
                } else if (strcmp(status, "below_range") == 0 &&
                           record_get(f, r2, "bracket_hi_n", &hi) == 0) {
                    snprintf(m, sizeof m, "below %.0f, the smallest N swept", hi);
                } else if (strcmp(status, "above_range") == 0 &&
                           record_get(f, r2, "bracket_lo_n", &lo) == 0) {
                    snprintf(m, sizeof m, "above %.0f, the largest N swept", lo);
                } else if (status[0]) {
                    snprintf(m, sizeof m, "%s", status);
                }
                if (record_get(f, r2, "predicted_crossover_n", &pred) == 0)
                    snprintf(p, sizeof p, "%.0f", pred);
                snprintf(cell[k], sizeof cell[k], "%s / %s", m, p);
            }
        }
        fprintf(out, "| %.0f | %s | %s |\n", d, cell[0], cell[1]);
    }
    record_close(f);
}

static void summary_decode(FILE *out, const config *c)
{
    record_file *f = load(c, "decode.csv", 8);
    if (!f) return;
    /* per series: the total (cumulative_s at the last token), the last bin's per-token
     * time, and the bins' 10th, 50th and 90th percentiles weighted by their tokens: the
     * relative spread of the per-token times, carried to the totals */
    double total[2] = {NAN, NAN}, p10[2] = {0, 0}, p50[2] = {0, 0}, p90[2] = {0, 0};
    double tokens = 0, t_last[2] = {0, 0};
    int spread[2] = {1, 1};
    const char *last[2] = {NULL, NULL};
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char name[64];
        double cum, tl = -1, T, in_bin, a, m, b;
        if (!is_ok(f, row) || record_get_str(f, row, "variant", name, sizeof name)) continue;
        int k = strcmp(name, "softmax_kv_cache") == 0 ? 0 : 1;
        if (record_get(f, row, "tokens_in_bin", &in_bin) == 0 &&
            record_get(f, row, "p10_s", &a) == 0 && record_get(f, row, "median_s", &m) == 0 &&
            record_get(f, row, "p90_s", &b) == 0)
            p10[k] += in_bin * a, p50[k] += in_bin * m, p90[k] += in_bin * b;
        else
            spread[k] = 0;
        if (record_get(f, row, "t_last", &tl) == 0 && tl >= t_last[k])
            t_last[k] = tl, last[k] = row;
        if (record_get(f, row, "cumulative_s", &cum) == 0 &&
            record_get(f, row, "tokens", &T) == 0 && tl == T)
            total[k] = cum, tokens = T;
    }
    if (isfinite(total[0]) && isfinite(total[1]) && last[0] && last[1]) {
        char a[32], b[32], per[2][128];
        for (int k = 0; k < 2; k++)
            time_spread(f, last[k], "", per[k], sizeof per[k]);
        const double ratio = total[0] / total[1];
        fprintf(out,
                "\n## Generation (decode.csv)\n\n"
                "- per token near t = %.0f: softmax + KV cache %s, linear attention's state "
                "%s (median of the last bin, and its spread)\n",
                tokens, per[0], per[1]);
        char r[3][32];
        fprintf(out,
                "- %.0f tokens: %s with softmax + KV cache, %s with the state: **%s× "
                "faster**",
                tokens, fmt_time(total[0], a, sizeof a), fmt_time(total[1], b, sizeof b),
                fmt_ratio(ratio, r[0], sizeof r[0]));
        if (spread[0] && spread[1] && p50[0] > 0 && p50[1] > 0 && p10[1] > 0 && p90[1] > 0)
            fprintf(out,
                    " (range %s×–%s×: the per-token 10th–90th percentiles, weighted "
                    "by the tokens of each bin, carried to the totals; slowest of one "
                    "against fastest of the other)\n",
                    fmt_ratio(ratio * (p10[0] / p50[0]) / (p90[1] / p50[1]), r[1], sizeof r[1]),
                    fmt_ratio(ratio * (p90[0] / p50[0]) / (p10[1] / p50[1]), r[2], sizeof r[2]));
        else
            fprintf(out, "\n");
    }
    record_close(f);
}

static void summary_accuracy(FILE *out, const config *c)
{
    record_file *f = load(c, "accuracy.csv", 12);
    if (!f) return;
    kernels_series all[KERNELS_MAX_SERIES];
    const size_t n_series = kernels_all_series(all);
    fprintf(out, "\n## Numerical error (accuracy.csv)\n\n"
                 "Relative error against the float64 reference over every N (min–max):\n\n"
                 "| series | float32 | float64 |\n| --- | --- | --- |\n");
    for (size_t k = 0; k < n_series; k++) {
        char cell[2][48];
        int any = 0;
        for (int p = 0; p < 2; p++) {
            double lo = INFINITY, hi = -INFINITY;
            for (size_t i = 0; i < record_count(f); i++) {
                const char *row = record_row_at(f, i);
                double e;
                if (!text_is(f, row, "study", "error_vs_n") ||
                    !text_is(f, row, "variant", all[k].name) ||
                    !text_is(f, row, "precision", p ? "float64" : "float32") ||
                    !text_is(f, row, "status", "ok")) /* skipped: not an error of inf */
                    continue;
                if (record_get(f, row, "rel_error", &e) != 0) e = INFINITY;
                lo = fmin(lo, e), hi = fmax(hi, e);
            }
            if (hi >= lo) {
                any = 1;
                snprintf(cell[p], sizeof cell[p], "%.1e–%.1e", lo, hi);
            } else {
                snprintf(cell[p], sizeof cell[p], "-");
            }
        }
        if (any) fprintf(out, "| %s | %s | %s |\n", all[k].name, cell[0], cell[1]);
    }
    /* the other studies: the range of rel_error per (study, variant, input, compared_to) */
    fprintf(out, "\nThe other studies (rel_error, min–max over their rows):\n\n"
                 "| study | series | input | compared to | rel_error |\n"
                 "| --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char study[32], var[64], input[32], cmp[32];
        if (record_get_str(f, row, "study", study, sizeof study) || !strcmp(study, "error_vs_n") ||
            record_get_str(f, row, "variant", var, sizeof var) ||
            record_get_str(f, row, "input", input, sizeof input) ||
            record_get_str(f, row, "compared_to", cmp, sizeof cmp))
            continue;
        int first = 1; /* one line per group, at its first row */
        for (size_t j = 0; j < i && first; j++) {
            const char *r = record_row_at(f, j);
            first = !(text_is(f, r, "study", study) && text_is(f, r, "variant", var) &&
                      text_is(f, r, "input", input) && text_is(f, r, "compared_to", cmp));
        }
        if (!first) continue;
        double lo = INFINITY, hi = -INFINITY, e;
        for (size_t j = i; j < record_count(f); j++) {
            const char *r = record_row_at(f, j);
            if (text_is(f, r, "study", study) && text_is(f, r, "variant", var) &&
                text_is(f, r, "input", input) && text_is(f, r, "compared_to", cmp) &&
                record_get(f, r, "rel_error", &e) == 0)
                lo = fmin(lo, e), hi = fmax(hi, e);
        }
        if (hi >= lo)
            fprintf(out, "| %s | %s | %s | %s | %.2g–%.2g |\n", study, var, input, cmp, lo, hi);
    }
    record_close(f);
}

/* Scaled against unscaled dot products (scores.csv): per d_k and scaling, the logits' std,
 * the mean row entropy and the median largest softmax gradient, each the mean over seeds
 * with its min–max. */
static void summary_scores(FILE *out, const config *c)
{
    record_file *f = load(c, "scores.csv", 4);
    if (!f) return;
    fprintf(out, "\n## Scaled vs unscaled dot products (scores.csv)\n\n"
                 "Mean over seeds [min–max]; entropy in nats (ln N is its maximum); gradient: "
                 "the median over rows of the softmax Jacobian's largest entry.\n\n"
                 "| d_k | scaling | logit std | entropy (ln N) | gradient |\n"
                 "| --- | --- | --- | --- | --- |\n");
    double dk_seen[64];
    size_t n_dk = 0;
    for (size_t i = 0; i < record_count(f) && n_dk < 64; i++) {
        double dk;
        if (record_get(f, record_row_at(f, i), "d_k", &dk)) continue;
        size_t j = 0;
        while (j < n_dk && dk_seen[j] != dk)
            j++;
        if (j == n_dk) dk_seen[n_dk++] = dk;
    }
    static const char *const cols[] = {"logit_std", "entropy_mean_nats", "grad_median"};
    for (size_t d = 0; d < n_dk; d++)
        for (int sc = 0; sc < 2; sc++) {
            const char *scaling = sc ? "sqrt" : "none";
            double sum[3] = {0}, lo[3], hi[3], ln_n = NAN;
            int count = 0;
            for (int x = 0; x < 3; x++)
                lo[x] = INFINITY, hi[x] = -INFINITY;
            for (size_t i = 0; i < record_count(f); i++) {
                const char *row = record_row_at(f, i);
                double dk, v[3];
                if (!text_is(f, row, "scaling", scaling) || !text_is(f, row, "status", "ok") ||
                    record_get(f, row, "d_k", &dk) || dk != dk_seen[d] ||
                    record_get(f, row, cols[0], &v[0]) || record_get(f, row, cols[1], &v[1]) ||
                    record_get(f, row, cols[2], &v[2]) ||
                    record_get(f, row, "entropy_max_nats", &ln_n))
                    continue;
                for (int x = 0; x < 3; x++)
                    sum[x] += v[x], lo[x] = fmin(lo[x], v[x]), hi[x] = fmax(hi[x], v[x]);
                count++;
            }
            if (count == 0) continue;
            fprintf(out,
                    "| %.0f | %s | %.3g [%.3g–%.3g] | %.3g [%.3g–%.3g] (%.3g) | %.2e "
                    "[%.2e–%.2e] |\n",
                    dk_seen[d], sc ? "1/sqrt(d_k)" : "none", sum[0] / count, lo[0], hi[0],
                    sum[1] / count, lo[1], hi[1], ln_n, sum[2] / count, lo[2], hi[2]);
        }
    record_close(f);
}

/* Vaswani et al.'s Table 1 with the measured exponents (complexity_fit.csv). */
static void summary_complexity(FILE *out, const config *c)
{
    record_file *f = load(c, "complexity_fit.csv", 1);
    if (!f) return;
    fprintf(out, "\n## The complexity table, measured (complexity_fit.csv)\n\n"
                 "Exponent of time in N over the upper half of each layer type's N, with its "
                 "95%% bootstrap interval.\n\n"
                 "| layer | complexity per layer | measured exponent [95%%] | sequential "
                 "operations | maximum path length |\n| --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char layer[64], per[32], seq[16], path[16], measured[64] = "no fit";
        double e, lo, hi;
        if (record_get_str(f, row, "layer", layer, sizeof layer) ||
            record_get_str(f, row, "complexity", per, sizeof per) ||
            record_get_str(f, row, "sequential_ops", seq, sizeof seq) ||
            record_get_str(f, row, "path_length", path, sizeof path))
            continue;
        if (record_get(f, row, "fitted_exponent", &e) == 0 &&
            record_get(f, row, "exponent_ci_lo", &lo) == 0 &&
            record_get(f, row, "exponent_ci_hi", &hi) == 0)
            snprintf(measured, sizeof measured, "%.2f [%.2f, %.2f]", e, lo, hi);
        fprintf(out, "| %s | %s | %s | %s | %s |\n", layer, per, measured, seq, path);
    }
    record_close(f);
}

/* Each series on the roofline (roofline.csv): at d = 64, its largest N measured, per dtype. */
static void summary_roofline(FILE *out, const config *c)
{
    record_file *f = load(c, "roofline.csv", 7);
    if (!f) return;
    char ceilings[512];
    fprintf(out,
            "\n## The roofline (roofline.csv)\n\nCeilings measured in the same process: %s. "
            "Per series and dtype at d = 64, its largest N measured; intensity = FLOPs / the "
            "cost model's minimum bytes, roofline = min(peak, intensity · triad bandwidth).\n\n"
            "| series | dtype | N | GFLOP/s | FLOP/byte | bound | %% of peak | %% of roofline "
            "|\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
            meta_value(c, "roofline.csv", "ceilings", ceilings, sizeof ceilings));
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char variant[64], dtype[8];
        double d, n, g, intensity, peak, bw, pp, pr;
        if (!is_ok(f, row) || record_get(f, row, "d", &d) || d != 64 ||
            record_get_str(f, row, "variant", variant, sizeof variant) ||
            record_get_str(f, row, "dtype", dtype, sizeof dtype) || record_get(f, row, "n", &n) ||
            record_get(f, row, "gflops", &g) ||
            record_get(f, row, "intensity_flop_per_byte", &intensity))
            continue;
        /* only the largest N of this series and dtype */
        int larger = 0;
        for (size_t j = 0; j < record_count(f) && !larger; j++) {
            const char *other = record_row_at(f, j);
            double od, on;
            larger = is_ok(f, other) && text_is(f, other, "variant", variant) &&
                     text_is(f, other, "dtype", dtype) && record_get(f, other, "d", &od) == 0 &&
                     od == 64 && record_get(f, other, "n", &on) == 0 && on > n;
        }
        if (larger) continue;
        const int have = record_get(f, row, "peak_gflops", &peak) == 0 &&
                         record_get(f, row, "bandwidth_gbs", &bw) == 0 &&
                         record_get(f, row, "pct_of_peak", &pp) == 0 &&
                         record_get(f, row, "pct_of_roofline", &pr) == 0;
        if (have)
            fprintf(out, "| %s | %s | %.0f | %.1f | %.1f | %s | %.0f%% | %.0f%% |\n", variant,
                    dtype, n, g, intensity, intensity * bw < peak ? "memory" : "compute", pp, pr);
        else
            fprintf(out, "| %s | %s | %.0f | %.1f | %.1f | - | - | - |\n", variant, dtype, n, g,
                    intensity);
    }
    record_close(f);
}

static void summary_params(FILE *out, const config *c)
{
    record_file *f = load(c, "params.csv", 1);
    if (!f) return;
    fprintf(out, "\n## Parameters (params.csv)\n\nExact counts (no spread: they are counted). "
                 "One encoder layer against 12D²: ");
    const char *sep = "";
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double d, gap;
        if (!text_is(f, row, "kind", "sweep") || record_get(f, row, "d_model", &d) ||
            record_get(f, row, "approx_gap", &gap) || (d != 64 && d != 512 && d != 8192))
            continue;
        fprintf(out, "%sgap %.3g%% at D = %.0f", sep, 100 * gap, d);
        sep = ", ";
    }
    for (size_t i = 0; i < record_count(f); i++) { /* PyTorch's numbers at D = 512 */
        const char *row = record_row_at(f, i);
        double d, enc, dec;
        if (text_is(f, row, "kind", "sweep") && record_get(f, row, "d_model", &d) == 0 &&
            d == 512 && record_get(f, row, "encoder_layer", &enc) == 0 &&
            record_get(f, row, "decoder_layer", &dec) == 0)
            fprintf(out,
                    ". At D = 512 (d_ff = 2048): %.0f per encoder layer, %.0f per decoder "
                    "layer",
                    enc, dec);
    }
    fprintf(out, ".\n\n| model | D | H | d_ff | layers | total | layers exact | 12D² rule | gap | "
                 "attention | FFN | embeddings |\n"
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        char model[64];
        double d, h, ff, enc, dec, total, approx, gap, all, att, ffn, emb;
        if (!text_is(f, row, "kind", "standard") ||
            record_get_str(f, row, "model", model, sizeof model) ||
            record_get(f, row, "d_model", &d) || record_get(f, row, "heads", &h) ||
            record_get(f, row, "d_ff", &ff) || record_get(f, row, "encoder_layers", &enc) ||
            record_get(f, row, "decoder_layers", &dec) ||
            record_get(f, row, "layers_exact", &total) ||
            record_get(f, row, "layers_approx", &approx) ||
            record_get(f, row, "approx_gap", &gap) || record_get(f, row, "total", &all) ||
            record_get(f, row, "attention_share", &att) || record_get(f, row, "ffn_share", &ffn) ||
            record_get(f, row, "embedding_share", &emb))
            continue;
        char layers[32];
        snprintf(layers, sizeof layers, dec > 0 ? "%.0f+%.0f" : "%.0f", enc, dec);
        fprintf(out,
                "| %s | %.0f | %.0f | %.0f | %s | %.0f | %.0f | %.0f | %.3f%% | %.0f%% | %.0f%% | "
                "%.0f%% |\n",
                model, d, h, ff, layers, all, total, approx, 100 * gap, 100 * att, 100 * ffn,
                100 * emb);
    }
    record_close(f);
}

static void summary_block(FILE *out, const config *c)
{
    record_file *f = load(c, "block.csv", 6);
    if (!f) return;
    const char *softmax = la_kernel_name(LA_KERNEL_SOFTMAX),
               *linear = la_kernel_name(LA_KERNEL_LINEAR);
    double first = NAN, d_model = NAN, lin_lo = INFINITY, lin_hi = -INFINITY;
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double n, share;
        if (!is_ok(f, row) || !text_is(f, row, "component", "attention") ||
            record_get(f, row, "n", &n) || record_get(f, row, "share", &share))
            continue;
        record_get(f, row, "d_model", &d_model);
        if (text_is(f, row, "attention", softmax) && share > 0.5 && !(first <= n)) first = n;
        if (text_is(f, row, "attention", linear))
            lin_lo = fmin(lin_lo, share), lin_hi = fmax(lin_hi, share);
    }
    if (!isfinite(d_model)) {
        record_close(f);
        return;
    }
    fprintf(out, "\n## One encoder layer (block.csv, D = %.0f)\n\n", d_model);
    if (isfinite(first))
        fprintf(out, "- softmax attention is over half of the layer's time from N = %.0f\n", first);
    else
        fprintf(out, "- softmax attention stays under half of the layer's time up to the largest "
                     "N measured\n");
    const double ns[] = {2048, 4096, 8192};
    int listed = 0;
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (size_t i = 0; i < record_count(f); i++) {
            const char *row = record_row_at(f, i);
            double n, share;
            char t[128];
            if (is_ok(f, row) && text_is(f, row, "attention", softmax) &&
                text_is(f, row, "component", "attention") && record_get(f, row, "n", &n) == 0 &&
                n == ns[k] && record_get(f, row, "share", &share) == 0)
                fprintf(out, "%s %.0f%% at N = %.0f (%s)",
                        listed++ ? ";"
                                 : "- softmax attention's share, and its time with the "
                                   "spread:",
                        100 * share, n, time_spread(f, row, "", t, sizeof t));
        }
    if (listed) fprintf(out, "\n");
    if (lin_hi >= lin_lo)
        fprintf(out, "- with linear attention, its share is %.1f%%–%.1f%% over every N\n",
                100 * lin_lo, 100 * lin_hi);
    /* projections and FFN: their model FLOPs over their median time */
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double n, flops, t;
        if (!is_ok(f, row) ||
            !(text_is(f, row, "component", "projections") || text_is(f, row, "component", "ffn")) ||
            record_get(f, row, "n", &n) || record_get(f, row, "model_flops", &flops) ||
            record_get(f, row, "median_s", &t) || !(t > 0))
            continue;
        int k = n >= 512;
        lo[k] = fmin(lo[k], flops / t / 1e9), hi[k] = fmax(hi[k], flops / t / 1e9);
    }
    if (hi[1] >= lo[1])
        fprintf(out, "- projections and FFN run at %.0f–%.0f GFLOP/s from N = 512", lo[1], hi[1]);
    if (hi[0] >= lo[0]) fprintf(out, " (%.0f–%.0f below)", lo[0], hi[0]);
    if (hi[1] >= lo[1]) fprintf(out, "\n");
    record_close(f);
}

/* Lists the files of dir whose names end in one of the suffixes. */
static void list_files(FILE *out, const char *dir, const char *const *suffixes)
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
        fprintf(out, "- %s/%s\n", dir, names[i]);
        free(names[i]);
    }
}

/* The summary of the files in c->out_dir: printed, and written to its SUMMARY.md. */
static int summary(const config *c)
{
    textout_buffer t;
    int rc = textout_open(&t, "results");
    if (rc) return rc;
    FILE *out = t.f;
    char v[7][256];
    const char *from = suite[0].file; /* the run's facts: from the first file present */
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", c->out_dir, suite[i].file);
        if (access(path, R_OK) == 0) {
            from = suite[i].file;
            break;
        }
    }
    fprintf(out, "# Summary of %s\n\n", c->out_dir);
    fprintf(out,
            "Generated by `linattn results --summary` from the CSV files of this folder "
            "(every number below is read from them by column name). Run (from %s's "
            "metadata): commit %s, %s, %s, %s cores, %s threads, load average %s.\n",
            from, meta_value(c, from, "git_commit", v[0], sizeof v[0]),
            meta_value(c, from, "date", v[1], sizeof v[1]),
            meta_value(c, from, "cpu", v[2], sizeof v[2]),
            meta_value(c, from, "cores", v[3], sizeof v[3]),
            meta_value(c, from, "threads", v[4], sizeof v[4]),
            meta_value(c, from, "load_average", v[5], sizeof v[5]));
    /* the machine check of each timing experiment, where the files have it */
    static const char *const timed[] = {
        "scaling.csv", "scaling_train.csv", "crossover.csv", "decode.csv",
        "block.csv",   "complexity.csv",    "roofline.csv",  NULL};
    for (const char *const *file = timed; *file; file++) {
        meta_value(c, *file, "noisy", v[6], sizeof v[6]);
        if (strncmp(v[6], "yes", 3) == 0)
            fprintf(out, "\n**%s: noisy run**: %s. Its timings are not reliable.\n", *file, v[6]);
    }
    fprintf(out, "\nSpreads: IQR is the interquartile range of the repetitions of a point "
                 "(where the files have q1_s and q3_s), min–max their range otherwise.\n");
    /* the times the README quotes: forward at N = 128, 32768, 65536; train at 1024, 16384 */
    static const double forward_ns[] = {128, 32768, 65536}, train_ns[] = {1024, 4096, 16384};
    summary_scaling(out, c, "Time against N", "scaling.csv", "scaling_fit.csv", forward_ns, 3);
    summary_scaling(out, c, "Forward + backward (training) time against N", "scaling_train.csv",
                    "scaling_train_fit.csv", train_ns, 3);
    summary_memory_and_rate(out, c);
    summary_crossover(out, c);
    summary_decode(out, c);
    summary_block(out, c);
    summary_complexity(out, c);
    summary_roofline(out, c);
    summary_scores(out, c);
    summary_accuracy(out, c);
    summary_params(out, c);
    static const char *const csv[] = {".csv", NULL}, *const figs[] = {".png", ".svg", NULL};
    fprintf(out, "\n## Files\n\n");
    list_files(out, c->out_dir, csv);
    list_files(out, c->plots_dir, figs);
    fflush(out);
    fwrite(t.buf, 1, t.len, stdout);
    fflush(stdout);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/SUMMARY.md", c->out_dir);
    if ((rc = textout_finish(&t, path))) return rc;
    printf("\n(kept as %s)\n", path);
    return 0;
}

/* ---------------------------------------------------------------- figures */

/* `linattn plot --from OUT --out PLOTS`, when the build has it. 0, or 1 when it failed. */
static int figures(const config *c)
{
    const la_command *plot = la_command_find("plot");
    if (!plot) {
        printf("\nfigures: this build has no `linattn plot`; none drawn\n");
        return 0;
    }
    char *argv[] = {"plot", "--from", (char *)c->out_dir, "--out", (char *)c->plots_dir, NULL};
    printf("\n== linattn plot --from %s --out %s\n", c->out_dir, c->plots_dir);
    fflush(stdout);
    int r = plot->run(5, argv);
    printf("== plot: %s\n", r == 0 ? "done" : "FAILED");
    return r != 0;
}

/* ---------------------------------------------------------------- the run */

int cmd_results(int argc, char **argv)
{
    config c;
    memset(&c, 0, sizeof c);
    int rc = parse(argc, argv, &c);
    if (rc || (rc = choose_folders(&c))) return rc;
    if (c.summary_only) return summary(&c);
    if ((rc = make_dir(c.out_dir)) || (rc = make_dir(c.plots_dir))) return rc;
    if (c.new_run) point_latest(&c);

    /* the estimate: the selected experiments' times in the reference run */
    double estimate = 0;
    int total = 0;
    for (size_t i = 0; i < N_EXPERIMENTS; i++)
        if (c.selected[i]) estimate += c.quick ? suite[i].quick_seconds : suite[i].seconds, total++;
    char took[32];
    progress_format_duration(estimate, took, sizeof took);
    printf("linattn results: the default suite%s into %s/ (figures into %s/)%s\n",
           c.quick ? " (--quick sizes)" : "", c.out_dir, c.plots_dir,
           c.update ? ": the committed reference" : "");
    printf("on %s, %d cores, %d threads (load average %s)\n", machine_cpu_model(), machine_cores(),
           la_get_num_threads(), machine_load_average());
    printf("expected duration: about %s (the reference run's time of each of the %d "
           "experiments, on a 2-core AMD EPYC when idle; `linattn help results` lists them)\n",
           took, total);
    double busy = machine_busy_fraction(0.5);
    if (busy > 0.2)
        printf("note: other processes keep %.0f%% of the cores busy: the timings will be\n"
               "noisier and slower than on an idle machine\n",
               100 * busy);
    fflush(stdout);

    const double start = timer_now();
    double done_estimate = 0; /* the reference time of the experiments finished */
    int failed = 0, k = 0;
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        if (!c.selected[i]) continue;
        args a;
        configure(i, &c, &a);
        printf("\n== [%d/%d] linattn", ++k, total);
        for (int j = 0; j < a.argc; j++)
            printf(" %s", a.argv[j]);
        printf("\n");
        fflush(stdout);
        /* the experiments after this one, rescaled by how the finished ones compared */
        double after = 0;
        for (size_t j = i + 1; j < N_EXPERIMENTS; j++)
            if (c.selected[j]) after += c.quick ? suite[j].quick_seconds : suite[j].seconds;
        if (done_estimate >= 1) after *= (timer_now() - start) / done_estimate;
        progress_suite(k, total, after);
        double t0 = timer_now();
        /* through main.c's table, as `linattn NAME ...` would run it */
        const la_command *command = la_command_find(suite[i].command);
        int r = command ? command->run(a.argc, a.argv)
                        : cli_fail("results", "%s: no such command", suite[i].command);
        progress_suite(0, 0, -1);
        done_estimate += c.quick ? suite[i].quick_seconds : suite[i].seconds;
        progress_format_duration(timer_now() - t0, took, sizeof took);
        printf("== %s: %s in %s\n", name_of(&suite[i]), r == 0 ? "done" : "FAILED", took);
        fflush(stdout);
        if (r != 0) failed++;
    }
    progress_format_duration(timer_now() - start, took, sizeof took);
    int figures_failed = c.no_figures ? 0 : figures(&c);
    if (!c.no_summary && (rc = summary(&c)) != 0) failed++;
    printf("\nThe suite took %s%s%s.\n", took,
           failed ? "; some experiments FAILED (see above)" : "",
           figures_failed ? "; the figures FAILED" : "");
    return failed || figures_failed ? 1 : 0;
}

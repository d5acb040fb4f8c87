/* results.c — `linattn results`: the default experiment suite that `make results` runs
 * (the embedded configuration of every experiment, sized to finish in well under 15
 * minutes on a 2-core machine), the folder it writes to (a dated run folder; the
 * committed reference only with --update), its figures (through `linattn plot` when the
 * build has it), and the summary it ends with, read back from the CSV files and kept as
 * SUMMARY.md beside them: every number the README's figure paragraphs quote, each with
 * its spread (interquartile or min–max range, bootstrap interval, bracket). */
#include "results.h"

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "attention/series.h"
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

void cmd_results_help(FILE *out)
{
    fputs(help_usage, out);
    double total = 0;
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        char took[32];
        progress_format_duration(results_suite[i].seconds, took, sizeof took);
        fprintf(out, "  %-13s %6s  linattn %s", results_name_of(&results_suite[i]), took,
                results_suite[i].command);
        for (const char *const *a = results_suite[i].args; *a; a++)
            fprintf(out, " %s", *a);
        fprintf(out, "%s\n", results_suite[i].note);
        total += results_suite[i].seconds;
    }
    char took[32];
    progress_format_duration(total, took, sizeof took);
    fprintf(out, "  %-13s %6s\n", "(all)", took);
    fputs(help_options, out);
}

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
            names[i] = results_name_of(&results_suite[i]);
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
    const experiment *e = &results_suite[which];
    a->argc = 0;
    arg(a, e->command);
    for (const char *const *s = c->quick ? e->quick_args : e->args; *s; s++)
        arg(a, *s);
    if (c->resume) arg(a, "--resume");
    snprintf(a->out, sizeof a->out, "%s/%s", c->out_dir, e->file);
    arg(a, "--out"), arg(a, a->out);
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
    if (rc || (rc = results_choose_folders(&c))) return rc;
    if (c.summary_only) return results_summary(&c);
    if ((rc = results_make_dir(c.out_dir)) || (rc = results_make_dir(c.plots_dir))) return rc;
    if (c.new_run) results_point_latest(&c);

    /* the estimate: the selected experiments' times in the reference run */
    double estimate = 0;
    int total = 0;
    for (size_t i = 0; i < N_EXPERIMENTS; i++)
        if (c.selected[i])
            estimate += c.quick ? results_suite[i].quick_seconds : results_suite[i].seconds,
                total++;
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
            if (c.selected[j])
                after += c.quick ? results_suite[j].quick_seconds : results_suite[j].seconds;
        if (done_estimate >= 1) after *= (timer_now() - start) / done_estimate;
        progress_suite(k, total, after);
        double t0 = timer_now();
        /* through main.c's table, as `linattn NAME ...` would run it */
        const la_command *command = la_command_find(results_suite[i].command);
        int r = command ? command->run(a.argc, a.argv)
                        : cli_fail("results", "%s: no such command", results_suite[i].command);
        progress_suite(0, 0, -1);
        done_estimate += c.quick ? results_suite[i].quick_seconds : results_suite[i].seconds;
        progress_format_duration(timer_now() - t0, took, sizeof took);
        printf("== %s: %s in %s\n", results_name_of(&results_suite[i]), r == 0 ? "done" : "FAILED",
               took);
        fflush(stdout);
        if (r != 0) failed++;
    }
    progress_format_duration(timer_now() - start, took, sizeof took);
    int figures_failed = c.no_figures ? 0 : figures(&c);
    if (!c.no_summary && (rc = results_summary(&c)) != 0) failed++;
    printf("\nThe suite took %s%s%s.\n", took,
           failed ? "; some experiments FAILED (see above)" : "",
           figures_failed ? "; the figures FAILED" : "");
    return failed || figures_failed ? 1 : 0;
}

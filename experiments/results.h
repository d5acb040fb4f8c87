/* results.h — what the files of `linattn results` share: the suite (results_suite.c), the
 * run's configuration, its folders (results_folders.c) and its summary
 * (results_summary.c, results_summary_timing.c, results_summary_other.c). */
#ifndef LA_RESULTS_H
#define LA_RESULTS_H

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "common/cli.h"
#include "common/guard.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/metadata.h"
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

/* ---------------------------------------------------------------- the suite */

enum { MAX_ARGS = 32, SUITE_ARGS = 16 };

/* One experiment of the suite (a row of results_suite.c): a command of main.c's table
 * (la_command_find), run with
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
    const char *name;     /* its name in --only and the listings; NULL: the command's */
    int noisy_in_summary; /* the summary reports when its file's run was noisy (# noisy) */
} experiment;

/* The suite, in the order it runs (results_suite.c, which checks the length). */
enum { N_EXPERIMENTS = 14 };

typedef struct {
    const char *out_dir, *plots_dir;
    char out_buf[PATH_MAX], plots_buf[PATH_MAX];
    int selected[N_EXPERIMENTS];
    int resume, quick, summary_only, no_summary, update, no_figures;
    int new_run; /* out_dir is a run folder made now: results/runs/latest will point to it */
} config;

/* results_suite.c */
const char *results_name_of(const experiment *e);
extern const experiment results_suite[];

/* results_folders.c */
int results_make_dir(const char *path);
void results_point_latest(const config *c);
int results_choose_folders(config *c);

/* results_summary.c */
record_file *results_load(const config *c, const char *file, int n_key);
const char *results_meta_value(const config *c, const char *file, const char *key, char *buf,
                               size_t size);
int results_is_ok(const record_file *f, const char *row);
int results_text_is(const record_file *f, const char *row, const char *column, const char *value);
const char *results_fmt_time(double s, char *buf, size_t size);
const char *results_fmt_ratio(double x, char *buf, size_t size);
const char *results_fmt_bytes(double b, char *buf, size_t size);
const char *results_time_spread(const record_file *f, const char *row, const char *prefix,
                                char *buf, size_t size);
const char *results_scaling_row(const record_file *f, const char *series, double n);
size_t results_series_in(const record_file *f, kernels_series *out);
int results_range_over_n(const record_file *f, const char *series, const char *column, double lo,
                         double hi, double *min, double *max);
int results_summary(const config *c);

/* results_summary_timing.c */
void results_summary_forward_time(FILE *out, const config *c);
void results_summary_train_time(FILE *out, const config *c);
void results_summary_memory_and_rate(FILE *out, const config *c);
void results_summary_crossover(FILE *out, const config *c);
void results_summary_decode(FILE *out, const config *c);
void results_summary_complexity(FILE *out, const config *c);
void results_summary_roofline(FILE *out, const config *c);
void results_summary_block(FILE *out, const config *c);

/* results_summary_other.c */
void results_summary_accuracy(FILE *out, const config *c);
void results_summary_scores(FILE *out, const config *c);
void results_summary_params(FILE *out, const config *c);

#endif

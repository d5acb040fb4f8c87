/* record.h — what every experiment shares to measure and record: the one CSV writer
 * (with its `#` metadata header, append-and-flush per point, --resume), the one timer,
 * the peak-resident-memory probe, the machine check, and the progress line.
 *
 * A results file reads:
 *   # linattn <experiment>: <one line on what it measures>
 *   # command: build/linattn scaling --n 128:65536
 *   # date: 2026-11-22T06:10:00Z
 *   # git_commit: 10a9cbf (dirty)
 *   # cpu: AMD EPYC          # cores: 2          # threads: 2
 *   # load_average: 0.12 0.30 0.25 (...)
 *   # calibration: 0.0512 0.0498 (spread 2.8%)    <- timing experiments only (machine.h)
 *   # noisy: no                                    <- or: # noisy: yes (<why>)
 *   # blis: 0.9.0            # linattn: 0.1.0    # peak_rss: <how it is measured>
 *   kernel,n,...,status       <- the header row (snake_case, units in the names)
 *   softmax,128,...,ok        <- one row per point, flushed as soon as it is measured
 * gnuplot reads it with `set datafile separator comma; set datafile columnheaders`,
 * skipping the `#` lines. */
#ifndef LA_RECORD_H
#define LA_RECORD_H

#include "linattn.h"
#include "machine.h"

#include <stddef.h>
#include <stdio.h>

/* ---------------------------------------------------------------- timer */

/* Seconds from CLOCK_MONOTONIC. */
double timer_now(void);

typedef struct {
    double median_s, min_s, max_s; /* over the timed repetitions */
    double q1_s, q3_s;             /* their 25th and 75th percentiles (stats.h) */
    int reps;                      /* repetitions timed */
    /* resident memory around the warm-up call, alone (see memory below): VmRSS before
     * it, VmHWM after it with the mark reset before it */
    double baseline_rss_bytes, peak_rss_bytes;
} timer_result;

/* How many times timer_run runs a body: one warm-up call, then repetitions until at least
 * min_reps were timed and they took min_total_s together (at most max_reps). A warm-up
 * slower than slow_s counts as the first repetition and only min_reps - 1 more are run
 * (INFINITY: the warm-up is never counted). */
typedef struct {
    int min_reps, max_reps;
    double min_total_s, slow_s;
} timer_rule;

/* The median of x[0..n) (n >= 1), sorting x in place: the timer's, and decode's over
 * tokens. */
double timer_median(double *x, size_t n);

typedef int (*timer_body)(void *ctx);

/* Times n bodies by the same rule, their repetitions interleaved: a warm-up call of
 * each, then rounds in which each body still short of the rule is timed once, in
 * order (round r runs body 1, 2, …, then round r + 1), so a drift in the machine's
 * speed reaches all of them alike; a body leaves the rounds when its rule is met.
 * status[i] is 0 or the first nonzero value body i returned (it is not called again,
 * out[i] is untouched); out[i] is set when status[i] is 0. Returns 0, or -1 when it
 * could not allocate (statuses and out undefined). The one timer. */
int timer_run_interleaved(size_t n, const timer_body *bodies, void *const *ctxs,
                          const timer_rule *rule, timer_result *out, int *status);

/* Times body(ctx) by the rule: timer_run_interleaved of one body. Returns 0, the first
 * nonzero value body returned (then *out is undefined), or -1 when it could not
 * allocate its samples. */
static inline int timer_run(timer_body body, void *ctx, const timer_rule *rule, timer_result *out)
{
    int status;
    if (timer_run_interleaved(1, &body, &ctx, rule, out, &status) != 0) return -1;
    return status;
}

/* Times one la_attention_f32 call of kernel on the given inputs by the rule (bench's
 * loop). Returns the kernel's status (LA_ENOMEM also when the timer could not
 * allocate); *t is set when it is LA_OK. */
la_status timer_kernel(la_kernel kernel, const la_problem *p, const float *q, const float *k,
                       const float *v, float *out, const timer_rule *rule, timer_result *t);

/* Times one la_attention_f32 call of each kernels[i] on its problem p[i], all on the
 * same inputs and output buffer, interleaved by timer_run_interleaved: the
 * kernel-timing loop of the sweeps (n <= TIMER_MAX_INTERLEAVED). status[i] is kernel
 * i's status (LA_ENOMEM when the timer could not allocate); t[i] is set when it is
 * LA_OK. timer_kernel is the case n = 1. */
enum { TIMER_MAX_INTERLEAVED = 64 };
void timer_kernels(size_t n, const la_kernel *kernels, const la_problem *p, const float *q,
                   const float *k, const float *v, float *out, const timer_rule *rule,
                   timer_result *t, la_status *status);

/* ---------------------------------------------------------------- memory */

/* The peak resident memory of a point is measured by the timer around each body's
 * warm-up call, which runs alone (timer_result's baseline_rss_bytes, peak_rss_bytes):
 * the process's VmHWM (/proc/self/status) after it, with the high-water mark reset just
 * before it by writing "5" to /proc/self/clear_refs (Linux >= 4.0). It includes
 * everything resident: the inputs, the outputs, the kernel's scratch and the program
 * itself; VmRSS just before the call is the baseline, so the kernel's own share is the
 * difference. Where the mark cannot be reset, VmHWM is the peak since the process
 * started, and the files say so (# peak_rss). */
/* Called once at start: big blocks are mmapped and returned to the system when freed,
 * so one point's buffers do not stay resident into the next. */
void timer_memory_init(void);

/* ---------------------------------------------------------------- CSV */

typedef struct record_file record_file;

/* Opens path for an experiment's points. columns is the header row; the first n_key
 * columns name a point (for --resume). With resume and an existing file whose header row
 * equals columns, the points in it are kept (record_find sees them) and new rows are
 * appended after a `# resumed:` comment; otherwise the file is created anew with the
 * metadata header. argv is the command line recorded in the header; about is one line
 * on what the file holds. Returns NULL and a one-line reason in err on failure. */
record_file *record_open(const char *path, const char *experiment, const char *about,
                         const char *columns, int n_key, int resume, int argc, char **argv,
                         char *err, size_t err_size);

/* The same file on a stream the caller owns (bench's --format csv on standard output):
 * the metadata header, then extra (more `# ` lines, each ending in a newline; NULL for
 * none), then the header row. No --resume, no key (n_key 0). record_close flushes the
 * stream and leaves it open. Returns NULL and a reason in err on failure. */
record_file *record_open_stream(FILE *out, const char *experiment, const char *about,
                                const char *columns, const char *extra, int argc, char **argv,
                                char *err, size_t err_size);

/* The metadata header alone (the `#` lines above, without the header row), for output
 * that is not CSV but states the same facts (bench's table). */
void record_write_meta(FILE *out, const char *experiment, const char *about, int argc, char **argv);
/* More `# ` lines (each ending in a newline) that every metadata header written after
 * this call adds at its end, such as "# inputs: q.npy k.npy v.npy\n" (common/inputs.h);
 * NULL or "" for none. Copied (at most 2 KiB kept). */
void record_meta_extra(const char *lines);

/* The stored row whose key (its first n_key fields, joined by commas) equals key, from
 * the resumed file or written since (the latest when there are several: a point skipped
 * in an earlier run and measured after --resume with a larger budget); NULL if none. */
const char *record_find(const record_file *f, const char *key);

/* The value of a named column in a row from record_find; returns 0, or -1 when the column
 * does not exist or the field is not a number. */
int record_get(const record_file *f, const char *row, const char *column, double *out);
/* The same for a text field: copies it into buf (truncated to size - 1). */
int record_get_str(const record_file *f, const char *row, const char *column, char *buf,
                   size_t size);

/* Appends one row (printf-style, without the newline) and flushes it to disk.
 * Returns 0, or -1 when the write failed. */
int record_row(record_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a results file without writing to it (for summaries): its header row gives the
 * columns, the first n_key of them the key. record_find, record_get and record_row_at work on it.
 * Returns NULL and a reason in err when it cannot be read. */
record_file *record_load(const char *path, int n_key, char *err, size_t err_size);
size_t record_count(const record_file *f);                 /* rows held */
const char *record_row_at(const record_file *f, size_t i); /* row i, in file order */

const char *record_path(const record_file *f);
int record_resumed_rows(const record_file *f); /* rows kept from the existing file */

/* "<out without its .csv>_<suffix>.csv" into buf: the companion files of a results file
 * (scaling.csv's scaling_fit.csv, crossover.csv's crossover_points.csv). */
void record_sibling_path(const char *out, const char *suffix, char *buf, size_t size);

/* Closes the file; returns 0, or -1 when a write failed at any point. NULL is fine. */
int record_close(record_file *f);

/* ---------------------------------------------------------------- machine */

/* The facts the header records, for summaries too. Strings are static. */
const char *machine_cpu_model(void);
int machine_cores(void);
const char *machine_load_average(void); /* "0.12 0.30 0.25" from /proc/loadavg, or "unknown" */
/* The share of all cores busy over the next `seconds` (this process sleeping), from
 * /proc/stat; -1 when unknown. */
double machine_busy_fraction(double seconds);
/* The commit as the header records it: "abc1234", "abc1234 (dirty)" or "unknown". */
const char *record_git_commit(void);

/* How busy the machine is, for timing experiments (machine.h). A timing experiment
 * (scaling, crossover, decode, bench, block-sweep) calls machine_check() once,
 * after its flags are parsed and before it opens its results files: it measures the
 * load and times the calibration kernel twice (about 0.4 s) and returns the report for
 * the experiment's summary. The metadata header of every file opened after it
 * (record_open, record_open_stream, record_write_meta) then records it (`# calibration:`,
 * `# noisy:`), and when the machine is busy the warning line (machine.h) goes to stderr
 * with the first row written (or with record_write_meta's header), so a command refused
 * before it measured anything still prints only its one error line. The check is
 * forgotten when no results file is left open (record_close of the last one). An
 * experiment that times nothing (params, accuracy, flops) does not call it, and its
 * files carry neither line. */
const machine_report *machine_check(void);

/* ---------------------------------------------------------------- progress */

/* The progress line, on stderr. Call a step as a point starts, passing the work it
 * stands for in any unit (predicted FLOPs, or 1 per point); the time left extrapolates
 * the elapsed time of the finished points' work to the work still to do. When the last
 * finished point ran at another rate (small points pay fixed costs, so the rate changes
 * as N grows), the range between the two estimates follows: "left ~30.0s (12.0s–30.0s)".
 * On a terminal, one line rewritten in place as each point starts:
 *   [2/6 crossover] point 12/40  elapsed 1m05s  left ~2m10s (suite ~6m00s)  softmax N=8192
 * Elsewhere (a pipe or a file: `make results 2>&1 | tee log`), plain lines: one per
 * finished point, at most one every every_s seconds (2; fast points are reported
 * together, so the log stays short):
 *   [2/6 crossover] 12/40 points done (last: softmax N=8192)  elapsed 1m05s  left ~2m10s ...
 * and, while one point runs longer, a line every heartbeat_s seconds (10) from a helper
 * thread, so a log is never silent for longer:
 *   [2/6 crossover] point 13/40 running for 20.0s (softmax N=16384)  elapsed 1m25s ...
 * In both cases a closing line "[crossover] 40 points in 3m15s". "2/6" and the suite's
 * time left appear only inside `linattn results` (progress_suite). The helper thread
 * reads a copy of the line's state, never the caller's progress_line. */
typedef struct {
    const char *label;
    int total_points;
    double total_work, work_done, start_s;
    int tty;
    FILE *out;      /* stderr (tests may point it elsewhere) */
    double every_s; /* plain lines: at most one per every_s seconds */
    double last_line_s;
    int point;         /* the point running (its number), 0 before the first */
    char what[96];     /* what it is */
    double point_work; /* its work */
    double point_start_s;
    double last_rate_s; /* seconds per unit of work of the last finished point (0: none) */
    double heartbeat_s; /* plain lines: one at least this often while a point runs */
} progress_line;

void progress_start(progress_line *pr, const char *label, int total_points, double total_work);
void progress_step(progress_line *pr, int point, double work, const char *what);
void progress_end(progress_line *pr);

/* Set by `linattn results` before each experiment: it is experiment k of total, and the
 * ones after it are expected to take after_s seconds (< 0: unknown). total 0: not in a
 * suite (the default). */
void progress_suite(int k, int total, double after_s);

/* "1.5s", "2m05s", "1h02m" */
void progress_format_duration(double seconds, char *buf, size_t size);

#endif

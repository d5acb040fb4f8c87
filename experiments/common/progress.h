/* progress.h — the progress line of an experiment, on stderr.
 * Uses: timer.h (the clock). */
#ifndef LA_PROGRESS_H
#define LA_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

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
    const char *unit; /* what a point is, singular: "point" (progress_start's), "step" */
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

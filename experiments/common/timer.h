/* timer.h — the one timer of the experiments: a body timed by a rule (a warm-up call,
 * then repetitions until the rule is met), several bodies interleaved so a drift in the
 * machine's speed reaches all alike, and the kernel-timing loops built on it. Each
 * body's warm-up call runs alone and is where the memory probe (memory.h) measures its
 * peak resident memory.
 * Uses: stats.h (the median and quartiles of the repetitions), memory.h. */
#ifndef LA_TIMER_H
#define LA_TIMER_H

#include "linattn.h"

#include <stddef.h>

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

/* Times one la_attention call of kernel on the given inputs by the rule (bench's
 * loop). Returns the kernel's status (LA_ENOMEM also when the timer could not
 * allocate); *t is set when it is LA_OK. */
la_status timer_kernel(la_kernel kernel, const la_problem *p, const float *q, const float *k,
                       const float *v, float *out, const timer_rule *rule, timer_result *t);

/* Times one la_attention call of each kernels[i] on its problem p[i], all on the
 * same inputs and output buffer, interleaved by timer_run_interleaved: the
 * kernel-timing loop of the sweeps (n <= TIMER_MAX_INTERLEAVED). status[i] is kernel
 * i's status (LA_ENOMEM when the timer could not allocate); t[i] is set when it is
 * LA_OK. timer_kernel is the case n = 1. */
enum { TIMER_MAX_INTERLEAVED = 64 };
void timer_kernels(size_t n, const la_kernel *kernels, const la_problem *p, const float *q,
                   const float *k, const float *v, float *out, const timer_rule *rule,
                   timer_result *t, la_status *status);

#endif

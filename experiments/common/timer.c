/* timer.c — the one timer and the kernel-timing loops (timer.h). */
#include "timer.h"

#include "linattn.h"
#include "memory.h"
#include "stats.h"

#include <stdlib.h>
#include <time.h>

double timer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double timer_median(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int timer_run_interleaved(size_t n, const timer_body *bodies, void *const *ctxs,
                          const timer_rule *rule, timer_result *out, int *status)
{
    const int min_reps = rule->min_reps < 1 ? 1 : rule->min_reps;
    const int max_reps = rule->max_reps < min_reps ? min_reps : rule->max_reps;
    double *samples = malloc((n ? n : 1) * (size_t)max_reps * sizeof *samples);
    double *warm = malloc((n ? n : 1) * sizeof *warm), *total = calloc(n ? n : 1, sizeof *total);
    double *rss = malloc((n ? n : 1) * 2 * sizeof *rss);
    int *count = calloc(n ? n : 1, sizeof *count);
    int rc = -1;
    if (!samples || !warm || !total || !rss || !count) goto done;

    /* warm-up of each: page faults, caches, thread pool; kept as a sample only when slow.
     * It runs alone, so it is where each body's peak memory is measured. */
    for (size_t i = 0; i < n; i++) {
        memory_peak_reset();
        rss[2 * i] = memory_rss_bytes();
        double t0 = timer_now();
        status[i] = bodies[i](ctxs[i]);
        warm[i] = timer_now() - t0;
        rss[2 * i + 1] = memory_peak_rss_bytes();
        if (status[i] == 0 && warm[i] >= rule->slow_s) samples[i * max_reps + count[i]++] = warm[i];
    }
    /* rounds: each body still short of the rule is timed once, in order, so a drift
     * (another process, the clock frequency) reaches every body alike */
    for (int any = 1; any;) {
        any = 0;
        for (size_t i = 0; i < n; i++) {
            const int c = count[i];
            if (status[i] != 0 || c >= max_reps ||
                (c >= min_reps && (total[i] >= rule->min_total_s || warm[i] >= rule->slow_s)))
                continue;
            any = 1;
            double t0 = timer_now();
            if ((status[i] = bodies[i](ctxs[i])) != 0) continue;
            samples[i * max_reps + c] = timer_now() - t0;
            total[i] += samples[i * max_reps + c];
            count[i]++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        stats_summary s;
        if (status[i] != 0 || stats_summarize(samples + i * max_reps, (size_t)count[i], &s) != 0)
            continue;
        out[i] = (timer_result){s.median, s.min,    s.max,      s.q1,
                                s.q3,     count[i], rss[2 * i], rss[2 * i + 1]};
    }
    rc = 0;
done:
    free(samples), free(warm), free(total), free(rss), free(count);
    return rc;
}

/* One kernel call, for timer_run_interleaved. */
typedef struct {
    la_kernel kernel;
    const la_problem *p;
    const float *q, *k, *v;
    float *out;
    la_status status;
} kernel_call;

static int run_kernel_call(void *ctx)
{
    kernel_call *c = ctx;
    c->status = la_attention(c->kernel, c->p, LA_FLOAT32, c->q, c->k, c->v, c->out);
    return c->status != LA_OK;
}

void timer_kernels(size_t n, const la_kernel *kernels, const la_problem *p, const float *q,
                   const float *k, const float *v, float *out, const timer_rule *rule,
                   timer_result *t, la_status *status)
{
    kernel_call calls[TIMER_MAX_INTERLEAVED];
    timer_body bodies[TIMER_MAX_INTERLEAVED] = {0};
    void *ctxs[TIMER_MAX_INTERLEAVED] = {0};
    int failed[TIMER_MAX_INTERLEAVED];
    if (n > TIMER_MAX_INTERLEAVED) n = TIMER_MAX_INTERLEAVED;
    for (size_t i = 0; i < n; i++) {
        calls[i] = (kernel_call){kernels[i], &p[i], q, k, v, out, LA_OK};
        bodies[i] = run_kernel_call, ctxs[i] = &calls[i];
    }
    int rc = timer_run_interleaved(n, bodies, ctxs, rule, t, failed);
    for (size_t i = 0; i < n; i++)
        status[i] = rc != 0 ? LA_ENOMEM : failed[i] == 0 ? LA_OK : calls[i].status;
}

la_status timer_kernel(la_kernel kernel, const la_problem *p, const float *q, const float *k,
                       const float *v, float *out, const timer_rule *rule, timer_result *t)
{
    la_status status;
    timer_kernels(1, &kernel, p, q, k, v, out, rule, t, &status);
    return status;
}

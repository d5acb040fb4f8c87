/* bench_ceilings.c — the goals against this machine's own ceilings measured: the FMA
 * peak, the roofline bound, the read bandwidth and the sgemm yardstick (bench.h). */
#include "attention/series.h"
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cg_same(const cg_point *a, const cg_point *b)
{
    return strcmp(a->series, b->series) == 0 && a->f64 == b->f64 && a->n == b->n && a->m == b->m &&
           a->d == b->d && a->threads == b->threads && a->length == b->length;
}

static int cg_has_b(const cg_goal *g)
{
    return g->kind == CG_RATIO;
}

/* The buffers of one timed call: attention (q, k, v, out in the point's dtype) or the
 * FFN (x, w1, b1, w2, b2, out in float32). */
typedef struct {
    const cg_point *pt;
    la_kernel kernel;
    la_problem p;
    la_layer_config layer;
    int64_t length; /* the key length of the batch entry, when the point has one */
    void *q, *k, *v, *out;
    float *w1, *b1, *w2, *b2;
} cg_call;

static int cg_run(void *ctx)
{
    const cg_call *c = ctx;
    if (strcmp(c->pt->series, "ffn") == 0)
        return (int)la_ffn(&c->layer, LA_FLOAT32, c->pt->n, c->q, c->w1, c->b1, c->w2, c->b2,
                           c->out);
    if (c->pt->f64)
        return (int)la_attention(c->kernel, &c->p, LA_FLOAT64, c->q, c->k, c->v, c->out);
    return (int)la_attention(c->kernel, &c->p, LA_FLOAT32, c->q, c->k, c->v, c->out);
}

/* Random N(0, 1) values into x (floats or doubles). */
static void cg_fill(inputs_rng *r, void *x, size_t count, int f64, double sigma)
{
    if (!f64) {
        inputs_fill_normal_f32(r, x, count, sigma);
        return;
    }
    double *d = x;
    for (size_t i = 0; i < count; i++)
        d[i] = sigma * inputs_normal(r);
}

/* Allocates and fills c's buffers for m's point and sets m's FLOPs and minimum bytes;
 * m->status is LA_OK or why the point cannot run (its buffers are then not allocated).
 * Returns 0, or 1 when out of memory (cg_release frees what was allocated). */
static int cg_prepare(cg_call *c, cg_measured *m)
{
    const cg_point *pt = &m->pt;
    *c = (cg_call){.pt = pt};
    m->status = LA_OK;
    m->flops = m->bytes_min = NAN;
    const int ffn = strcmp(pt->series, "ffn") == 0;
    const size_t keys = pt->m ? pt->m : pt->n, e = pt->f64 ? sizeof(double) : sizeof(float);
    size_t nq, nk, nout;
    if (ffn) {
        /* x (rows, D), W1 (4D, D), W2 (D, 4D): FLOPs of the two products, 4·rows·D·4D */
        la_layer_config_init(&c->layer, pt->d, 8, 4 * pt->d);
        nq = nout = pt->n * pt->d, nk = 4 * pt->d * pt->d;
        m->flops = 4.0 * (double)pt->n * (double)pt->d * 4.0 * (double)pt->d;
    } else {
        int causal;
        if (la_kernel_series_parse(pt->series, &c->kernel, &causal) != LA_OK) {
            m->status = LA_EINVAL;
            return 0;
        }
        la_problem_init(&c->p, 1, CG_HEADS, pt->n, keys, pt->d, pt->d);
        c->p.causal = causal;
        c->length = (int64_t)pt->length;
        if (pt->length) c->p.key_lengths = &c->length;
        la_cost cost;
        m->status = la_attention_cost(c->kernel, &c->p, pt->f64 ? LA_FLOAT64 : LA_FLOAT32, &cost);
        if (m->status != LA_OK) return 0;
        m->flops = cost.flops_total, m->bytes_min = cost.bytes_min;
        nq = nout = CG_HEADS * pt->n * pt->d, nk = CG_HEADS * keys * pt->d;
    }
    c->q = malloc(nq * e), c->k = malloc(nk * e), c->v = malloc(nk * e), c->out = malloc(nout * e);
    if (!c->q || !c->k || !c->v || !c->out) return 1;
    inputs_rng r = inputs_rng_for(1, "bench ceilings");
    cg_fill(&r, c->q, nq, pt->f64, 1.0);
    cg_fill(&r, c->k, nk, pt->f64, ffn ? 1.0 / sqrt((double)pt->d) : 1.0);
    cg_fill(&r, c->v, nk, pt->f64, ffn ? 1.0 / sqrt((double)pt->d) : 1.0);
    if (ffn) {
        /* W1 (4D, D) in k's buffer, W2 (D, 4D) in v's; zero biases */
        c->w1 = c->k, c->w2 = c->v;
        c->b1 = calloc(4 * pt->d, sizeof(float)), c->b2 = calloc(pt->d, sizeof(float));
        if (!c->b1 || !c->b2) return 1;
    }
    return 0;
}

static void cg_release(cg_call *c)
{
    free(c->q), free(c->k), free(c->v), free(c->out), free(c->b1), free(c->b2);
}

/* The timing rule of m's point on `reps` runs (the goals' rule). */
static timer_rule cg_rule(const cg_measured *m, int reps, const cg_ceilings *ceil)
{
    const double peak = ceil->peak[m->pt.f64];
    const double predicted = isnan(peak) ? 0 : m->flops / (peak * 1e9);
    return bench_rule_for(&(timing_rule){reps, 1, MIN_TOTAL_S}, predicted);
}

/* Measures one point on `reps` runs (the goals' rule): fills m. Returns 0, or 1 when out
 * of memory. */
static int cg_measure(cg_measured *m, int reps, const cg_ceilings *ceil)
{
    cg_call c;
    int rc = cg_prepare(&c, m);
    if (rc == 0 && m->status == LA_OK) {
        if (la_get_num_threads() != m->pt.threads) la_set_num_threads(m->pt.threads);
        const timer_rule rule = cg_rule(m, reps, ceil);
        const int st = timer_run(cg_run, &c, &rule, &m->t);
        if (st < 0) rc = 1;
        m->status = st < 0 ? LA_ENOMEM : (la_status)st;
    }
    cg_release(&c);
    return rc;
}

/* A ratio goal's two points timed again, in turn (timer_run_interleaved; bench.h's
 * bench_pair says why): fills pair when both ran, else leaves pair->timed 0. Returns 0, or
 * 1 when out of memory. */
static int cg_measure_pair(const cg_goal *g, int reps, const cg_ceilings *ceil, bench_pair *pair)
{
    *pair = (bench_pair){0};
    cg_measured m[2] = {{.pt = g->a}, {.pt = g->b}};
    cg_call c[2] = {{0}}; /* cg_prepare sets each it reaches; cg_release frees NULLs */
    int rc = cg_prepare(&c[0], &m[0]);
    if (rc == 0) rc = cg_prepare(&c[1], &m[1]);
    if (rc == 0 && m[0].status == LA_OK && m[1].status == LA_OK && g->a.threads == g->b.threads) {
        if (la_get_num_threads() != g->a.threads) la_set_num_threads(g->a.threads);
        const timer_rule ra = cg_rule(&m[0], reps, ceil), rb = cg_rule(&m[1], reps, ceil);
        const timer_rule rule = ra.min_reps < rb.min_reps ? ra : rb;
        const timer_body bodies[2] = {cg_run, cg_run};
        void *const ctxs[2] = {&c[0], &c[1]};
        timer_result t[2];
        int status[2];
        if (timer_run_interleaved(2, bodies, ctxs, &rule, t, status) != 0)
            rc = 1;
        else if (status[0] == 0 && status[1] == 0)
            *pair = (bench_pair){1, t[0], t[1]};
    }
    cg_release(&c[0]);
    cg_release(&c[1]);
    return rc;
}

/* The ceilings of `threads` threads, into c (once). The sgemm yardstick only when
 * with_sgemm (an FFN goal reads it). Returns 0, or 1 when out of memory. */
static int cg_ceilings_for(int threads, int reps, int with_sgemm, cg_ceilings *c)
{
    if (la_get_num_threads() != threads) la_set_num_threads(threads);
    if (!c->measured) {
        c->measured = 1;
        c->peak[0] = la_fma_peak_gflops(LA_FLOAT32, threads);
        c->peak[1] = la_fma_peak_gflops(LA_FLOAT64, threads);
        if (la_memory_bandwidth_gbs(LA_BANDWIDTH_READ, threads, &c->read) != LA_OK) c->read = NAN;
        if (la_memory_bandwidth_gbs(LA_BANDWIDTH_TRIAD, threads, &c->triad) != LA_OK)
            c->triad = NAN;
        c->sgemm = NAN;
    }
    if (with_sgemm && isnan(c->sgemm)) {
        sgemm_result g;
        if (bench_measure_sgemm(threads, &(timing_rule){reps, 1, MIN_TOTAL_S}, &g) != 0) return 1;
        c->sgemm = g.gflops;
    }
    return 0;
}

/* A number or "-" into buf. */
static const char *cg_num(char *buf, size_t size, const char *fmt, double x)
{
    if (isnan(x))
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, fmt, x);
    return buf;
}

/* Two threads' FMA peak below 1.5 times one thread's means a core was held by something
 * else while it was measured (each core has its own FMA units: a quiet machine gives
 * about twice: a 2-core Zen 5 guest gave 1.6-2.0 over 300 calls, and 1.26 in one
 * `bench --goals` run, whose two-thread percentages of the peak then read a third too
 * high). Then the two-thread peaks are measured again, up to twice,
 * keeping the best, and a line says so; one more line if they stay that low. */
static void cg_check_peaks(cg_ceilings *two, const cg_ceilings *one)
{
    if (!two->measured || !one->measured || !(two->peak[0] > 0) || !(one->peak[0] > 0) ||
        two->peak[0] >= 1.5 * one->peak[0])
        return;
    const double first = two->peak[0];
    for (int again = 0; again < 2 && two->peak[0] < 1.5 * one->peak[0]; again++) {
        const double p32 = la_fma_peak_gflops(LA_FLOAT32, 2),
                     p64 = la_fma_peak_gflops(LA_FLOAT64, 2);
        if (p32 > two->peak[0]) two->peak[0] = p32;
        if (p64 > two->peak[1]) two->peak[1] = p64;
    }
    char b[2][32];
    printf("# 2 thread(s): FMA peak measured again, %s GFLOP/s float32, %s float64 (the first, "
           "%.1f, was %.2f times one thread's)\n",
           cg_num(b[0], 32, "%.1f", two->peak[0]), cg_num(b[1], 32, "%.1f", two->peak[1]), first,
           first / one->peak[0]);
    if (two->peak[0] < 1.5 * one->peak[0])
        printf("# 2 thread(s): the FMA peak stays %.2f times one thread's: a core was busy, and "
               "the two-thread percentages of the peak below read high\n",
               two->peak[0] / one->peak[0]);
}

/* Measures every point the ceiling goals read (each once), printing the ceilings and one
 * row per point, then times each ratio goal's two points again in turn into pairs[i] (of
 * goal i). ceils[t] for t threads (1..2). Returns 0, or 1 when out of memory. */
int bench_cg_measure_all(cg_measured *ms, size_t *count, cg_ceilings *ceils, bench_pair *pairs,
                         int reps)
{
    *count = 0;
    for (size_t i = 0; i < N_CEILING_GOALS; i++)
        for (int which = 0; which < 1 + cg_has_b(&bench_ceiling_goals_table[i]); which++) {
            const cg_point *pt =
                which ? &bench_ceiling_goals_table[i].b : &bench_ceiling_goals_table[i].a;
            size_t j = 0;
            while (j < *count && !cg_same(&ms[j].pt, pt))
                j++;
            if (j == *count) ms[(*count)++] = (cg_measured){.pt = *pt};
        }
    printf("\n# against the machine: B=1 H=%d, each point's own d; ceilings measured "
           "here\n",
           CG_HEADS);
    int failed = 0;
    for (int threads = 2; threads >= 1 && !failed; threads--) {
        int used = 0, sgemm = 0;
        for (size_t i = 0; i < *count; i++)
            if (ms[i].pt.threads == threads) {
                used = 1;
                sgemm |= strcmp(ms[i].pt.series, "ffn") == 0;
            }
        if (!used) continue;
        cg_ceilings *c = &ceils[threads];
        if (cg_ceilings_for(threads, reps, sgemm, c) != 0) {
            failed = 1;
            break;
        }
        char b[5][32];
        printf("# %d thread(s): FMA peak %s GFLOP/s float32, %s float64; read %s GB/s, triad %s "
               "GB/s; sgemm %s GFLOP/s\n",
               threads, cg_num(b[0], 32, "%.1f", c->peak[0]), cg_num(b[1], 32, "%.1f", c->peak[1]),
               cg_num(b[2], 32, "%.1f", c->read), cg_num(b[3], 32, "%.1f", c->triad),
               cg_num(b[4], 32, "%.1f", c->sgemm));
        for (size_t i = 0; i < *count && !failed; i++) {
            cg_measured *m = &ms[i];
            if (m->pt.threads != threads) continue;
            if (cg_measure(m, reps, c) != 0) failed = 1;
            char length[32] = "";
            if (m->pt.length) snprintf(length, sizeof length, " L=%zu", m->pt.length);
            if (m->status == LA_OK)
                printf("# %-22s %s N=%-6zu M=%-6zu%s d=%-4zu threads=%d  median %.4g s  %.1f "
                       "GFLOP/s  %.1f GB/s (minimum bytes)\n",
                       m->pt.series, m->pt.f64 ? "f64" : "f32", m->pt.n,
                       m->pt.m ? m->pt.m : m->pt.n, length, m->pt.d, threads, m->t.median_s,
                       m->flops / m->t.median_s * 1e-9, m->bytes_min / m->t.median_s * 1e-9);
            else
                printf("# %-22s %s N=%-6zu d=%-4zu threads=%d  skipped: %s\n", m->pt.series,
                       m->pt.f64 ? "f64" : "f32", m->pt.n, m->pt.d, threads,
                       la_strerror(m->status));
            fflush(stdout);
        }
        for (size_t i = 0; i < N_CEILING_GOALS && !failed; i++) {
            const cg_goal *g = &bench_ceiling_goals_table[i];
            if (g->kind == CG_RATIO && g->a.threads == threads &&
                cg_measure_pair(g, reps, c, &pairs[i]) != 0)
                failed = 1;
        }
    }
    if (!failed) cg_check_peaks(&ceils[2], &ceils[1]);
    return failed;
}

static const cg_measured *cg_find(const cg_measured *ms, size_t n, const cg_point *pt)
{
    for (size_t i = 0; i < n; i++)
        if (cg_same(&ms[i].pt, pt)) return ms[i].status == LA_OK ? &ms[i] : NULL;
    return NULL;
}

/* One ceiling goal's line; returns whether it was met. */
int bench_cg_print_goal(const cg_goal *g, const cg_measured *ms, size_t n, const cg_ceilings *ceils,
                        const bench_pair *pair)
{
    const cg_measured *a = cg_find(ms, n, &g->a), *b = cg_has_b(g) ? cg_find(ms, n, &g->b) : NULL;
    const cg_ceilings *c = &ceils[g->a.threads];
    char got[64];
    int met = 0;
    if (!a || (cg_has_b(g) && !b)) {
        snprintf(got, sizeof got, "skipped: not measured");
    } else {
        const double gflops = a->flops / a->t.median_s * 1e-9;
        const double peak = c->peak[g->a.f64];
        double pct = NAN;
        switch (g->kind) {
        case CG_PEAK:
            pct = 100 * gflops / peak;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GFLOP/s)", pct, gflops, peak);
            break;
        case CG_ROOF: {
            const double roof = fmin(peak, a->flops / a->bytes_min * c->triad);
            pct = 100 * gflops / roof;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GFLOP/s)", pct, gflops, roof);
            break;
        }
        case CG_READ: {
            const double gbs = a->bytes_min / a->t.median_s * 1e-9;
            pct = 100 * gbs / c->read;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GB/s)", pct, gbs, c->read);
            break;
        }
        case CG_SGEMM:
            pct = 100 * gflops / c->sgemm;
            snprintf(got, sizeof got, "%.1f%% (%.1f of %.1f GFLOP/s)", pct, gflops, c->sgemm);
            break;
        case CG_RATIO: {
            /* the two timed in turn when they could be (cg_measure_pair), else alone */
            const double ta = pair->timed ? pair->a.median_s : a->t.median_s;
            const double tb = pair->timed ? pair->b.median_s : b->t.median_s;
            const double ratio = ta / tb;
            snprintf(got, sizeof got, "%.2fx (%.4g s / %.4g s%s)", ratio, ta, tb,
                     pair->timed ? ", in turn" : "");
            met = ratio <= g->value;
            break;
        }
        }
        if (g->kind != CG_RATIO) {
            if (isnan(pct)) snprintf(got, sizeof got, "- (no ceiling measured here)");
            met = !isnan(pct) && pct >= g->value;
        }
    }
    printf("%-58s %-10s %-46s %s\n", g->text, g->target, got, met ? "yes" : "no");
    return met;
}

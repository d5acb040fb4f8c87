/* scaling_fits.c — the exponents of time and memory in N fitted per series and group,
 * and where linear attention overtakes softmax (scaling.h). */
#include "attention/series.h"
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char FIT_COLUMNS[] =
    "variant,d_k,d_v,heads,batch,threads,theory_exponent,fitted_exponent,exponent_ci_lo,"
    "exponent_ci_hi,r_squared,prefactor_s,fit_n_min,fit_n_max,fit_points,memory_exponent,"
    "memory_exponent_ci_lo,memory_exponent_ci_hi,memory_r_squared,memory_fit_points";

/* The key of a point: variant,n,d_k,d_v,heads,batch,threads */
void scaling_point_key(char *key, size_t size, const char *name, size_t n, const group *g)
{
    snprintf(key, size, "%s,%zu,%zu,%zu,%zu,%zu,%d", name, n, g->d, g->d, g->heads, g->batch,
             la_get_num_threads());
}

/* The ok points of a series in a group: N, median time, its quartiles and the memory the
 * kernel added (peak − baseline resident bytes; 0 when unknown). Returns the count. */
typedef struct {
    double n[MAX_POINTS], median[MAX_POINTS], q1[MAX_POINTS], q3[MAX_POINTS];
    double memory[MAX_POINTS];
    size_t count;
} curve;

static void read_curve(record_file *f, const config *c, const char *name, const group *g, curve *cv)
{
    cv->count = 0;
    for (size_t i = 0; i < c->n_ns; i++) {
        char key[256], status[32];
        scaling_point_key(key, sizeof key, name, c->ns[i], g);
        const char *row = record_find(f, key);
        double t, q1, q3, base, peak;
        if (!row || record_get_str(f, row, "status", status, sizeof status) != 0 ||
            strcmp(status, "ok") != 0 || record_get(f, row, "median_s", &t) != 0)
            continue;
        const size_t k = cv->count++;
        cv->n[k] = (double)c->ns[i], cv->median[k] = t;
        /* a file from before the quartiles: the median stands in */
        cv->q1[k] = record_get(f, row, "q1_s", &q1) == 0 ? q1 : t;
        cv->q3[k] = record_get(f, row, "q3_s", &q3) == 0 ? q3 : t;
        cv->memory[k] = record_get(f, row, "baseline_rss_bytes", &base) == 0 &&
                                record_get(f, row, "peak_rss_bytes", &peak) == 0
                            ? peak - base
                            : 0;
    }
}

/* "d=64 H=8 B=1" */
void scaling_group_label(const group *g, char *buf, size_t size)
{
    snprintf(buf, size, "d=%zu H=%zu B=%zu", g->d, g->heads, g->batch);
}

/* Fits one series of one group (upper half of its ok points) into the fit file, and says
 * it on stdout. */
static int fit_series(record_file *fit, record_file *f, const config *c, const kernels_series *var,
                      const group *g)
{
    curve cv;
    read_curve(f, c, var->name, g, &cv);
    int known;
    const double theory = kernels_time_exponent(var->kernel, &known);
    char theory_text[32] = "?", label[96], head[512];
    if (known) snprintf(theory_text, sizeof theory_text, "%g", theory);
    scaling_group_label(g, label, sizeof label);
    snprintf(head, sizeof head, "%s,%zu,%zu,%zu,%zu,%d,%s", var->name, g->d, g->d, g->heads,
             g->batch, la_get_num_threads(), known ? theory_text : "");
    const size_t from = cv.count / 2; /* the upper half of the curve */
    stats_fit t, m;
    if (stats_fit_loglog(cv.n + from, cv.median + from, cv.count - from, STATS_BOOTSTRAP_SEED,
                         &t) != 0) {
        printf("scaling: %-24s %s  no exponent: %zu measured points in the upper half, a fit "
               "needs at least %d\n",
               var->name, label, cv.count - from, STATS_MIN_FIT_POINTS);
        return record_row(fit, "%s,,,,,,,,%zu,,,,,", head, cv.count - from);
    }
    char memory[160] = "";
    const int have_memory = stats_fit_loglog(cv.n + from, cv.memory + from, cv.count - from,
                                             STATS_BOOTSTRAP_SEED, &m) == 0;
    if (have_memory)
        snprintf(memory, sizeof memory, "%.4f,%.4f,%.4f,%.4f,%d", m.exponent, m.ci_lo, m.ci_hi,
                 m.r_squared, m.points);
    else
        snprintf(memory, sizeof memory, ",,,,");
    printf("scaling: %-24s %s  time ~ N^%.2f [%.2f, %.2f] R^2 %.3f (theory %s) over N = "
           "%.0f..%.0f (%d points)\n",
           var->name, label, t.exponent, t.ci_lo, t.ci_hi, t.r_squared, theory_text, t.x_min,
           t.x_max, t.points);
    return record_row(fit, "%s,%.4f,%.4f,%.4f,%.5f,%.6e,%.0f,%.0f,%d,%s", head, t.exponent, t.ci_lo,
                      t.ci_hi, t.r_squared, t.prefactor, t.x_min, t.x_max, t.points, memory);
}

/* Where linear attention becomes faster than softmax in one group, for the non-causal
 * and the causal pair, when both series were run: from the medians, with the two
 * measured N that bracket the crossing; then the speed-up at the largest N both
 * measured, with its range from the repetitions' quartiles. */
void scaling_report_crossings(record_file *f, const config *c, const group *g)
{
    for (int causal = 0; causal <= 1; causal++) {
        const char *soft = la_kernel_series(LA_KERNEL_SOFTMAX, causal);
        const char *lin = la_kernel_series(LA_KERNEL_LINEAR, causal);
        int have = 0;
        for (size_t vi = 0; vi < c->n_series; vi++)
            have += c->selected[vi] &&
                    (strcmp(c->series[vi].name, soft) == 0 || strcmp(c->series[vi].name, lin) == 0);
        if (have < 2) continue;
        curve a, b;
        read_curve(f, c, soft, g, &a);
        read_curve(f, c, lin, g, &b);
        /* the N both measured */
        double n[MAX_POINTS], ta[MAX_POINTS], tb[MAX_POINTS];
        size_t count = 0, last_a = 0, last_b = 0;
        for (size_t i = 0, j = 0; i < a.count && j < b.count;) {
            if (a.n[i] < b.n[j])
                i++;
            else if (b.n[j] < a.n[i])
                j++;
            else {
                n[count] = a.n[i], ta[count] = a.median[i], tb[count++] = b.median[j];
                last_a = i++, last_b = j++;
            }
        }
        stats_crossing x;
        char label[96];
        scaling_group_label(g, label, sizeof label);
        if (stats_crossover(n, ta, tb, count, &x) != 0) continue;
        if (x.where == STATS_CROSS_INSIDE)
            printf("scaling: %s faster than %s from N ~ %.0f (%s; between the measured N = %.0f "
                   "and %.0f)\n",
                   lin, soft, x.n, label, x.lo, x.hi);
        else if (x.where == STATS_CROSS_BELOW)
            printf("scaling: %s faster than %s already at the smallest N = %.0f (%s): the "
                   "crossing is below the measured range\n",
                   lin, soft, x.hi, label);
        else
            printf("scaling: %s still slower than %s at the largest N = %.0f (%s): the crossing "
                   "is above the measured range\n",
                   lin, soft, x.lo, label);
        /* the speed-up at the largest N both measured, from the repetitions' quartiles */
        const stats_summary sa = {a.median[last_a], 0, 0, a.q1[last_a], a.q3[last_a], 0},
                            sb = {b.median[last_b], 0, 0, b.q1[last_b], b.q3[last_b], 0};
        stats_ratio r;
        if (stats_speedup(&sa, &sb, &r) == 0)
            printf("scaling: %s %.2fx as fast as %s at N = %.0f (%s; %.2fx..%.2fx from the "
                   "interquartile ranges)\n",
                   lin, r.ratio, soft, n[count - 1], label, r.lo, r.hi);
    }
}

/* The groups of the sweep, d-major. Returns the count. */
size_t scaling_all_groups(const config *c, group *out)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_ds; i++)
        for (size_t j = 0; j < c->n_hs; j++)
            for (size_t k = 0; k < c->n_bs; k++)
                out[n++] = (group){c->ds[i], c->hs[j], c->bs[k]};
    return n;
}

/* Fits each kernel of each group and writes the fit file. */
int scaling_write_fits(record_file *f, const config *c, const group *groups, size_t n_groups,
                       int argc, char **argv)
{
    char path[4096], err[512];
    record_sibling_path(c->common.out, "fit", path, sizeof path);
    record_file *fit =
        record_open(path, c->pass == PASS_TRAIN ? "scaling_train_fit" : "scaling_fit",
                    "least-squares exponent of median time (and of the kernel's "
                    "memory) in N, upper half of each kernel's measured points, per "
                    "(d, heads, batch); 95% pairs-bootstrap interval, 2000 "
                    "resamples, fixed seed",
                    FIT_COLUMNS, 6, 0, argc, argv, err, sizeof err);
    if (!fit) {
        cli_line("%s", err);
        return -1;
    }
    int rc = 0;
    for (size_t gi = 0; gi < n_groups && rc == 0; gi++)
        for (size_t vi = 0; vi < c->n_series && rc == 0; vi++)
            if (c->selected[vi]) rc = fit_series(fit, f, c, &c->series[vi], &groups[gi]);
    if (rc) cli_line("%s: write failed", path);
    printf("scaling: wrote %s and %s\n", record_path(f), path);
    return record_close(fit) != 0 || rc ? -1 : 0;
}

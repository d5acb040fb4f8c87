/* accuracy_rows.c — the rows of `linattn accuracy` and what every study needs to write
 * them: keys, errors, skips, the budget, the inputs in both precisions (accuracy.h). */
#include "accuracy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void accuracy_key_text(const ctx *x, const row_key *k, char *buf, size_t size)
{
    char chunk[32] = "";
    if (k->chunk) snprintf(chunk, sizeof chunk, "%zu", k->chunk);
    snprintf(buf, size, "%s,%s,%s,%zu,%zu,%zu,%d,%s,%g,%s,%s,%s", k->study, k->variant, k->input,
             k->n, x->c->d, x->c->heads, k->causal, la_feature_map_name(k->fm), k->eps, chunk,
             k->precision, k->compared_to);
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

/* The error_scale column of a row: distances from softmax are on v's scale, the other
 * comparisons on the reference output's. */
static const char *scale_of(const row_key *k)
{
    return strcmp(k->study, "distance") == 0 ? "rms_v" : "norm_ref";
}

/* The budget columns of a row: its kernel's budget (common/kernels.h) in the default
 * problem every study runs, "none,0" for a kernel without one. */
static void budget_text(ctx *x, const row_key *k, char *buf, size_t size)
{
    la_kernel kernel;
    int causal;
    kernels_budget b = BUDGET_NONE;
    if (la_kernel_series_parse(k->variant, &kernel, &causal) == LA_OK)
        b = kernels_budget_of(kernel);
    const size_t *field = variants_budget_field(&x->variants, b);
    snprintf(buf, size, "%s,%zu", kernels_budget_names[b], field ? *field : 0);
}

static int write_row(ctx *x, const row_key *k, double e, double m, const char *status)
{
    char key[512], budget[64];
    accuracy_key_text(x, k, key, sizeof key);
    budget_text(x, k, budget, sizeof budget);
    if (isnan(e) && isnan(m)) /* not measured: no error columns */
        return record_row(x->f, "%s,,%s,,%s,%s", key, scale_of(k), budget, status);
    return record_row(x->f, "%s,%.6e,%s,%.6e,%s,%s", key, e, scale_of(k), m, budget, status);
}

/* Writes one comparison of y (float64 values) against ref: ‖y − ref‖ / ‖ref‖. */
int accuracy_record(ctx *x, const row_key *k, const double *y, const double *ref, size_t n)
{
    double e = inputs_rel_error_f64(y, ref, n), m = max_abs_diff(y, ref, n);
    return write_row(x, k, e, m, isfinite(e) ? "ok" : "nonfinite");
}

/* The same with the error RMS(y − ref) / RMS(v), v of n values too (d_k = d_v, N = M). */
int accuracy_record_vs_v(ctx *x, const row_key *k, const double *y, const double *ref,
                         const double *v, size_t n)
{
    double e = inputs_rms_error_vs_v(y, ref, n, v, n), m = max_abs_diff(y, ref, n);
    return write_row(x, k, e, m, isfinite(e) ? "ok" : "nonfinite");
}

int accuracy_record_failure(ctx *x, const row_key *k, la_status st)
{
    char key[512];
    accuracy_key_text(x, k, key, sizeof key);
    fprintf(stderr, "\nlinattn: accuracy: %s: %s\n", key, la_strerror(st));
    return write_row(x, k, NAN, NAN, "error");
}

int accuracy_record_skip(ctx *x, const row_key *k, const char *status)
{
    return write_row(x, k, NAN, NAN, status);
}

/* NULL when the float64 references at N fit the budgets, else the skip status:
 * the softmax reference's N×N scores and ten arrays of the problem's size, and its
 * 4·N²·d FLOPs per head at 1 GFLOP/s (plain loops). */
const char *accuracy_over_budget(const ctx *x, size_t n)
{
    const double N = (double)n, d = (double)x->c->d, H = (double)x->c->heads;
    double bytes = 8 * N * N + 10 * 8 * H * N * d;
    double seconds = 4 * N * N * d * H / 1e9;
    if (bytes > x->c->common.max_mem) return "skipped_mem";
    if (seconds > x->c->common.max_seconds) return "skipped_time";
    return NULL;
}

int accuracy_done_already(ctx *x, const row_key *k)
{
    char key[512];
    accuracy_key_text(x, k, key, sizeof key);
    return record_find(x->f, key) != NULL;
}

void accuracy_widen(const float *a, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i];
}

void accuracy_buffers_free(buffers *b)
{
    free(b->q), free(b->k), free(b->v), free(b->y32);
    free(b->q64), free(b->k64), free(b->v64), free(b->y64), free(b->ref), free(b->ref2);
    memset(b, 0, sizeof *b);
}

int accuracy_buffers_alloc(buffers *b, size_t elems)
{
    memset(b, 0, sizeof *b);
    b->elems = elems;
    b->q = malloc(elems * sizeof(float)), b->k = malloc(elems * sizeof(float));
    b->v = malloc(elems * sizeof(float)), b->y32 = malloc(elems * sizeof(float));
    b->q64 = malloc(elems * sizeof(double)), b->k64 = malloc(elems * sizeof(double));
    b->v64 = malloc(elems * sizeof(double)), b->y64 = malloc(elems * sizeof(double));
    b->ref = malloc(elems * sizeof(double)), b->ref2 = malloc(elems * sizeof(double));
    if (!b->q || !b->k || !b->v || !b->y32 || !b->q64 || !b->k64 || !b->v64 || !b->y64 || !b->ref ||
        !b->ref2) {
        accuracy_buffers_free(b);
        return -1;
    }
    return 0;
}

/* Random N(0, 1) inputs; with dominant, one key (j = 0) aligned with a direction u that
 * every query shares: q_i = g_i + 2·√d·u, k_0 = 8·u (|u| = 1), so q_i·k_0·scale ≈ 16
 * while the other logits are O(1). */
void accuracy_fill_inputs(ctx *x, buffers *b, const char *label, int dominant)
{
    const size_t d = x->c->d, heads = x->c->heads, n = b->elems / (heads * d);
    inputs_rng r = inputs_rng_for(x->c->common.seed, label);
    if (x->c->source.from_files) { /* prefixes of the arrays (never dominant) */
        inputs_source_fill(&x->c->source, label, heads, n, n, d, d, b->q, b->k, b->v);
    } else {
        inputs_fill_normal_f32(&r, b->q, b->elems, 1.0);
        inputs_fill_normal_f32(&r, b->k, b->elems, 1.0);
        inputs_fill_normal_f32(&r, b->v, b->elems, 1.0);
    }
    if (dominant) {
        for (size_t h = 0; h < heads; h++) {
            double u[1024], norm = 0;
            size_t du = d < 1024 ? d : 1024;
            for (size_t c = 0; c < du; c++)
                u[c] = inputs_normal(&r), norm += u[c] * u[c];
            norm = sqrt(norm);
            for (size_t c = 0; c < du; c++)
                u[c] /= norm;
            float *qh = b->q + h * n * d, *kh = b->k + h * n * d;
            for (size_t i = 0; i < n; i++)
                for (size_t c = 0; c < du; c++)
                    qh[i * d + c] += (float)(2 * sqrt((double)d) * u[c]);
            for (size_t c = 0; c < du; c++)
                kh[c] = (float)(8 * u[c]);
        }
    }
    accuracy_widen(b->q, b->q64, b->elems);
    accuracy_widen(b->k, b->k64, b->elems);
    accuracy_widen(b->v, b->v64, b->elems);
}

void accuracy_error_vs_n_series(series_set *s)
{
    s->n = kernels_all_series(s->all);
    kernels_select_all_but(s->all, s->n, accuracy_left_out_of_error_vs_n, s->selected);
}

/* The chunk column: the default chunk where the kernel reads it (causal), else none. */
size_t accuracy_chunk_of(const kernels_series *var)
{
    return var->causal && (la_kernel_get(var->kernel)->params & LA_PARAM_CHUNK) ? LA_DEFAULT_CHUNK
                                                                                : 0;
}

void accuracy_problem_for(ctx *x, la_problem *p, size_t n, int causal)
{
    la_problem_init(p, 1, x->c->heads, n, n, x->c->d, x->c->d);
    p->causal = causal;
    (void)variants_apply(&x->variants, p); /* no arrays: cannot fail */
    p->workspace_limit = (size_t)8 << 30;
}

void accuracy_progress(ctx *x, const char *what)
{
    progress_step(x->pr, ++x->step, 1, what);
}

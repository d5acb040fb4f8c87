/* accuracy.h — what the files of `linattn accuracy` share: the configuration, a row's
 * key, the run's context, the buffers of one problem and the series (accuracy.c,
 * accuracy_rows.c, accuracy_studies.c). */
#ifndef LA_ACCURACY_H
#define LA_ACCURACY_H

#include "attention/series.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/variants.h" /* the kernels' blocks; variants_rank_fits */
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_KEY = 12, MAX_POINTS = 64 };

typedef struct {
    size_t ns[MAX_POINTS], n_points, hi; /* --n, increasing; hi the largest */
    size_t d, heads, fixed_n;
    int studies[4];
    sweep_common common;
    inputs_source source; /* random, or --q/--k/--v (common/inputs.h) */
} config;

/* The input column: "random", or "user" for the arrays of --q/--k/--v; with those, the
 * distance study has no dominant_key inputs (N_DOMINANT 0). */
#define INPUT_NAME(x) ((x)->c->source.from_files ? "user" : "random")
#define N_DOMINANT(x) ((x)->c->source.from_files ? 0 : 1)

/* One comparison's row. */
typedef struct {
    const char *study, *variant, *input;
    size_t n;
    int causal;
    la_feature_map fm;
    double eps;
    size_t chunk; /* 0: not applicable */
    const char *precision, *compared_to;
} row_key;

typedef struct {
    const config *c;
    record_file *f;
    progress_line *pr;
    int step;
    variants_values variants; /* every problem's parameter blocks: the defaults, the draws
                                 from --seed (accuracy_problem_for points into them) */
} ctx;

/* Inputs of one problem in both precisions: the float64 copies hold exactly the
 * float32 values, so a float32 kernel's error is its own arithmetic. */
typedef struct {
    size_t n, elems;
    float *q, *k, *v, *y32;
    double *q64, *k64, *v64, *y64, *ref, *ref2;
} buffers;

/* The series of error_vs_n, from the registry. */
typedef struct {
    kernels_series all[KERNELS_MAX_SERIES];
    int selected[KERNELS_MAX_SERIES];
    size_t n;
} series_set;

/* accuracy.c */
extern const char *const accuracy_left_out_of_error_vs_n[];

/* accuracy_rows.c */
void accuracy_key_text(const ctx *x, const row_key *k, char *buf, size_t size);
int accuracy_record(ctx *x, const row_key *k, const double *y, const double *ref, size_t n);
int accuracy_record_vs_v(ctx *x, const row_key *k, const double *y, const double *ref,
                         const double *v, size_t n);
int accuracy_record_failure(ctx *x, const row_key *k, la_status st);
int accuracy_record_skip(ctx *x, const row_key *k, const char *status);
const char *accuracy_over_budget(const ctx *x, size_t n);
int accuracy_done_already(ctx *x, const row_key *k);
void accuracy_widen(const float *a, double *out, size_t n);
void accuracy_buffers_free(buffers *b);
int accuracy_buffers_alloc(buffers *b, size_t elems);
void accuracy_fill_inputs(ctx *x, buffers *b, const char *label, int dominant);
void accuracy_error_vs_n_series(series_set *s);
size_t accuracy_chunk_of(const kernels_series *var);
void accuracy_problem_for(ctx *x, la_problem *p, size_t n, int causal);
void accuracy_progress(ctx *x, const char *what);

/* accuracy_studies.c */
int accuracy_study_error_vs_n(ctx *x, const size_t *ns, size_t n_points);
int accuracy_study_distance(ctx *x, const size_t *ns, size_t n_points);
size_t accuracy_approximating(la_kernel *out);
int accuracy_study_eps(ctx *x);
int accuracy_study_chunk(ctx *x);

#endif

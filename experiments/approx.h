/* approx.h — what the files of `linattn approx` share: the configuration, a kernel's
 * budget parameter and the inputs of a run (approx.c, approx_measure.c). */
#ifndef LA_APPROX_H
#define LA_APPROX_H

#include "common/cli.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/stats.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_KEY = 5, MAX_BUDGETS = 32, N_INPUTS = 3 };

/* The exact attention every error is measured against: its rows are written at every
 * point (cmd_approx), so the summary leaves it out. */
#define APPROX_REFERENCE LA_KERNEL_SOFTMAX

typedef struct {
    size_t n, d, heads, seeds;
    int inputs[N_INPUTS];
    int selected[LA_KERNEL_COUNT];
    size_t windows[MAX_BUDGETS], n_windows;
    size_t ranks[MAX_BUDGETS], n_ranks;
    size_t features[MAX_BUDGETS], n_features;
    sweep_common common;
} config;

/* The budget parameter of a kernel: which la_problem field its list sets. */
typedef enum { BUDGET_NONE, BUDGET_WINDOW, BUDGET_PROJ, BUDGET_FEATURES } budget_kind;

typedef struct {
    float *q, *k, *v, *out;
    double *q64, *k64, *v64, *y64, *exact;
    size_t elems;
} buffers;

/* approx.c */
extern const char *const approx_input_names[];
extern const char *const approx_budget_names[];
budget_kind approx_budget_of(la_kernel k);

/* approx_measure.c */
void approx_buffers_free(buffers *b);
int approx_buffers_alloc(buffers *b, size_t elems);
void approx_fill(const config *c, buffers *b, int kind, uint64_t seed);
void approx_problem_of(const config *c, la_kernel k, size_t budget, uint64_t seed, la_problem *p);
int approx_measure(record_file *f, const config *c, buffers *b, la_kernel k, size_t budget,
                   int kind, uint64_t seed, double softmax_flops);
const size_t *approx_budgets_of(const config *c, la_kernel k, size_t *count);
void approx_summarize(const config *c, record_file *f);

#endif

/* approx.h — what the files of `linattn approx` share: the configuration, a kernel's
 * budget parameter (common/kernels.h) and the inputs of a run (approx.c,
 * approx_measure.c). */
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
#include "common/variants.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_KEY = 5, MAX_BUDGETS = 32, N_INPUTS = 3 };

/* What the error column holds, as the results' # error line and the help say it. */
#define APPROX_ERROR_TEXT                                                                          \
    "RMS(y - y_softmax) / RMS(v), y_softmax exact softmax attention (float64 both): each "         \
    "output row of softmax attention is a weighted average of v's rows, so 1 is an error "         \
    "as large as a typical value"

typedef struct {
    size_t n, d, dv, heads, seeds; /* d = d_k; dv = d_v (d with random inputs) */
    int inputs[N_INPUTS];          /* with --q/--k/--v: inputs[0] only, named "user" */
    inputs_source source;          /* random, or the arrays of --q/--k/--v */
    int selected[LA_KERNEL_COUNT];
    size_t windows[MAX_BUDGETS], n_windows;
    size_t ranks[MAX_BUDGETS], n_ranks;
    size_t features[MAX_BUDGETS], n_features;
    sweep_common common;
} config;

/* q and k of elems (heads × N × d_k) values, v and the outputs of v_elems (heads × N × d_v) */
typedef struct {
    float *q, *k, *v, *out;
    double *q64, *k64, *v64, *y64, *exact;
    size_t elems, v_elems;
} buffers;

/* approx.c */
extern const char *const approx_input_names[];
/* The inputs column: approx_input_names[kind], or "user" for the arrays of --q/--k/--v. */
const char *approx_input_name(const config *c, int kind);

/* approx_measure.c */
void approx_buffers_free(buffers *b);
int approx_buffers_alloc(buffers *b, size_t elems, size_t v_elems);
void approx_fill(const config *c, buffers *b, int kind, uint64_t seed);
/* k's problem at its budget, its draws from seed: p->params points into *blocks. */
void approx_problem_of(const config *c, la_kernel k, size_t budget, uint64_t seed,
                       variants_values *blocks, la_problem *p);
int approx_measure(record_file *f, const config *c, buffers *b, la_kernel k, size_t budget,
                   int kind, uint64_t seed, double softmax_flops);
const size_t *approx_budgets_of(const config *c, la_kernel k, size_t *count);
void approx_summarize(const config *c, record_file *f);

#endif

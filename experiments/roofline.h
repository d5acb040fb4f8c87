/* roofline.h — what the files of `linattn roofline` share: the configuration and the
 * ceilings (roofline.c, roofline_measure.c). */
#ifndef LA_ROOFLINE_H
#define LA_ROOFLINE_H

#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "common/variants.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- settings */

enum { MAX_POINTS = 64, MAX_DS = 16 };

enum { N_KEY = 7 };

typedef struct {
    size_t ns[MAX_POINTS], n_ns;
    size_t ds[MAX_DS], n_ds;
    int dtypes[2], n_dtypes; /* 0 float32, 1 float64 */
    size_t heads;
    kernels_series series[KERNELS_MAX_SERIES];
    size_t n_series;
    int selected[KERNELS_MAX_SERIES];
    sweep_common common;
} config;

/* The ceilings, measured once at the start. NAN where a probe has no value. */
typedef struct {
    double peak1[2], peak[2];          /* GFLOP/s, [dtype]: 1 thread, the run's threads */
    double read1, read, triad1, triad; /* GB/s */
} ceilings;

/* ---------------------------------------------------------------- one point */

typedef struct {
    float *q, *k, *v, *out;
    double *q64, *k64, *v64, *out64;
} inputs;

/* What a series remembers of its last measured point (per dtype and d), to predict. */
typedef struct {
    double last_flops, last_s; /* last ok point (last_flops = 0: none so far) */
    int over_time;
} track;

/* roofline.c */
const char *roofline_dtype_name(int f64);
const char *roofline_num(char *buf, size_t size, const char *fmt, double x);

/* roofline_measure.c */
void roofline_free_inputs(inputs *in);
void roofline_point_key(char *key, size_t size, const kernels_series *s, int f64, size_t n,
                        size_t d, size_t heads);
/* held: the blocks' defaults (variants_defaults, seed 0, as a call without blocks),
 * holding Linformer's E and F per shape (variants_hold_draws). */
int roofline_measure_point(record_file *f, const config *c, const ceilings *m, int f64, size_t d,
                           size_t n, track *tracks, inputs *in, variants_values *held);

#endif

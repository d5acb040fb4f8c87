/* scaling.h — what the files of `linattn scaling` share: the configuration, a group
 * (d, heads, batch) and a series' track (scaling.c, scaling_fits.c, scaling_measure.c). */
#ifndef LA_SCALING_H
#define LA_SCALING_H

#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/pass.h"
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

enum { MAX_POINTS = 256, MAX_VALUES = 64, MAX_GROUPS = 256 };

enum { N_KEY = 7 };

/* What a sweep remembers of a series' last measured point, to predict the next. */
typedef struct {
    int selected;
    double last_n, last_s; /* last ok point (last_n = 0: none so far) */
    int over_time;         /* a smaller N was already over the time budget */
} track;

typedef struct {
    size_t ns[MAX_POINTS], n_ns; /* increasing */
    size_t ds[MAX_VALUES], n_ds; /* head sizes, as given */
    size_t hs[MAX_VALUES], n_hs; /* heads */
    size_t bs[MAX_VALUES], n_bs; /* batch entries */
    double factor;
    int fit;        /* fit the exponents (enough lengths, no --no-fit) */
    pass_kind pass; /* --pass: forward or train */
    sweep_common common;
    inputs_source source;                      /* random, or --q/--k/--v (common/inputs.h) */
    kernels_series series[KERNELS_MAX_SERIES]; /* every series of the registry */
    size_t n_series;
    int selected[KERNELS_MAX_SERIES];
    variants_values variant_params; /* --window, --proj-rank, --proj, --features, --seed */
} config;

/* One (d, heads, batch) of the sweep: the fits and crossings are per group. */
typedef struct {
    size_t d, heads, batch;
} group;

/* The inputs of one point, shared by every kernel: B·H·N·d floats each. */
typedef struct {
    float *q, *k, *v, *out;
    float *d_out, *d_q, *d_k, *d_v; /* --pass train */
} inputs;

/* scaling_fits.c */
void scaling_point_key(char *key, size_t size, const char *name, size_t n, const group *g);
void scaling_group_label(const group *g, char *buf, size_t size);
void scaling_report_crossings(record_file *f, const config *c, const group *g);
size_t scaling_all_groups(const config *c, group *out);
int scaling_write_fits(record_file *f, const config *c, const group *groups, size_t n_groups,
                       int argc, char **argv);

/* scaling_measure.c */
void scaling_free_inputs(inputs *in);
int scaling_measure_point(record_file *f, config *c, const group *g, size_t n, track *tracks,
                          inputs *in);

#endif

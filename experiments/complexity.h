/* complexity.h — what the files of `linattn complexity` share: the layer types and
 * their Table 1 rows, the configuration, a point's inputs (complexity.c,
 * complexity_measure.c). */
#ifndef LA_COMPLEXITY_H
#define LA_COMPLEXITY_H

#include "common/inputs.h"
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

/* ---------------------------------------------------------------- the layer types */

typedef enum {
    L_ATTENTION,
    L_RECURRENT,
    L_CONVOLUTIONAL,
    L_RESTRICTED,
    L_LINEAR,
    L_LINEAR_RECURRENT,
    L_COUNT
} layer_kind;

/* Table 1's row of a layer type (complexity.c: LAYERS, one per layer_kind). */
typedef struct {
    const char *name, *complexity, *sequential_ops, *path_length;
    double exponent;
} layer_row;
extern const layer_row LAYERS[L_COUNT];

enum { MAX_POINTS = 64 };

enum { N_KEY = 6 };

typedef struct {
    size_t ns[MAX_POINTS], n_ns; /* increasing */
    size_t d, width, window;
    sweep_common common;
    int have[L_COUNT]; /* the types this run measures */
    la_kernel local;   /* the "local" kernel, when have[L_RESTRICTED] */
} config;

/* ---------------------------------------------------------------- one point */

/* The inputs of one point: x (N, d), also the attention's Q; K, V (N, d); the layers'
 * weights W_x, W_h (d, d), the convolution's (k, d, d), b (d); one output (N, d). */
typedef struct {
    float *x, *k, *v, *out;
    float *w_x, *w_h, *w_conv, *b;
} inputs;

/* What a sweep remembers of a type's last measured point, to predict the next. */
typedef struct {
    double last_n, last_s; /* last ok point (last_n = 0: none so far) */
    int over_time;         /* a smaller N was already over the time budget */
} track;

/* complexity_measure.c */
void complexity_free_inputs(inputs *in);
void complexity_point_key(char *key, size_t size, const config *c, layer_kind l, size_t n);
int complexity_measure_point(record_file *f, const config *c, size_t n, track *tracks, inputs *in);

#endif

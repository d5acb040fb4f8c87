/* layer_flags.h — the flags `linattn block` and `linattn model` share, which say how the
 * layers run: --norm, --variant, --cross-variant, --activation, --precision,
 * --feature-map and --threads, parsed and checked in one place. */
#ifndef LA_EXPERIMENTS_LAYER_FLAGS_H
#define LA_EXPERIMENTS_LAYER_FLAGS_H

#include "linattn.h"

/* The flags' text as given (NULL: absent). */
typedef struct {
    const char *norm, *variant, *cross_variant, *activation, *precision, *feature_map;
    const char *threads;
} layer_flags_text;

/* What they say; absent flags give post-LN, softmax (the cross kernel LA_KERNEL_COUNT:
 * the same as --variant), ReLU, float32, elu+1, the default threads. */
typedef struct {
    la_norm_order norm;
    la_kernel kernel, cross_kernel;
    la_activation activation;
    la_dtype dtype;
    la_feature_map feature_map;
} layer_flags_values;

/* Parses and checks t into *out (the thread count is set, cli_parse_threads). A
 * --feature-map no chosen kernel reads is refused. Returns 0, or 2 after one line. */
int layer_flags_parse(const layer_flags_text *t, layer_flags_values *out);

/* The layer kernels that read --feature-map (for help texts). */
int layer_flags_reads_feature_map(la_kernel k);

#endif

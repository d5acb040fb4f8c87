/* attend.h — what the files of `linattn attend` share: the flags as given, the help
 * (attend_help.c), the inputs beside q, k, v (attend_inputs.c) and the gradients
 * (attend_gradients.c). */
#ifndef LA_ATTEND_H
#define LA_ATTEND_H

#include "common/arrays.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/layout.h"
#include "common/machine.h"
#include "common/outputs.h"
#include "common/position.h"
#include "common/sweep.h" /* sweep_check_memory: the weights matrix within the machine's memory */
#include "common/variants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The flags' texts, as given (NULL when absent). */
typedef struct {
    const char *variant, *q, *k, *v, *out, *key_lengths, *precision, *threads, *scale, *feature_map,
        *eps, *kernel, *chunk, *save_weights, *score, *causal_align, *mask, *key_padding_mask,
        *layout;
    const char *grad_out, *grad_q, *grad_k, *grad_v; /* all four or none */
    int causal;
    variants_flags
        variant_params;       /* --window, --proj-rank, --proj, --features, --seed, --score-* */
    position_flags positions; /* --positions, --position-table, --max-distance, --relative */
} attend_args;

/* attend_help.c */
int attend_reads_scale(la_kernel k);
int attend_reads_feature_map(la_kernel k);
int attend_reads_eps(la_kernel k);
int attend_reads_chunk(la_kernel k);
const char *attend_kernel_list(int (*keep)(la_kernel), const char *conjunction, char *buf,
                               size_t size);

/* attend_inputs.c */
int attend_rotary_linear(la_kernel kernel, const position_values *v);
int attend_choose_positions(attend_args *a, la_kernel *kernel, int gradients, position_values *out);
int attend_apply_relative(const position_values *v, const la_problem *p, la_relative_params *out);
int attend_check_shapes(const attend_args *a, const la_array *q, const la_array *k,
                        const la_array *v);
int attend_read_key_lengths(const char *path, size_t batch, size_t n_keys, int64_t **out);
int attend_check_masks_allowed(const attend_args *a, la_kernel kernel);
int attend_read_masks(const attend_args *a, size_t batch, size_t heads, size_t n, size_t m,
                      uint8_t **mask, int *per_head, uint8_t **key_mask);

/* attend_gradients.c */
int attend_check_gradient_flags(const attend_args *a, int *wanted);
int attend_check_has_backward(la_kernel kernel);
int attend_read_grad_out(const char *path, la_dtype dtype, const la_array *y, la_array *d_out);
int attend_backward_and_write(const attend_args *a, la_kernel kernel, const la_problem *p,
                              la_dtype dtype, const la_array *q, const la_array *k,
                              const la_array *v, const la_array *y, const la_array *d_out,
                              la_array grads[3]);

#endif

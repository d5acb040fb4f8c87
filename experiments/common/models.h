/* models.h — the published Transformers as la_model_size rows: `linattn params --model`
 * and the params experiment (params-sweep) read them from this one table. Each row is
 * the architecture as its reference implementation builds it (vocabulary, learned or
 * sinusoidal positions, tied or untied head, biases, norms); tests/command/test_models.c
 * checks every row's la_param_counts total against the published count. */
#ifndef LA_MODELS_H
#define LA_MODELS_H

#include "linattn.h"

#include <stddef.h>

typedef struct {
    const char *name;  /* "gpt2-medium": the one spelling of --model */
    const char *about; /* one line: whose model, what the count includes */
    la_model_size size;
    /* "encoder-decoder", "encoder-only" or "decoder-only". A decoder-only model's blocks
     * (masked self-attention and FFN, no cross-attention) have an encoder layer's
     * parameters, so la_model_size counts them as encoder_layers. */
    const char *stack;
} models_entry;

/* The rows, in the order help lists them; *count is set to their number. */
const models_entry *models_all(size_t *count);

/* --model NAME, the flag's one parser in every command that describes a model (params,
 * flops, block-sweep): 0 and *out, or 2 after one line listing the names (and the
 * nearest one when the name is a near miss). */
int models_parse(const char *flag, const char *text, const models_entry **out);

#endif

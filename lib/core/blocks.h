/* blocks.h — one parameter block of each kind (linattn.h's la_params), held by value: what
 * a caller that serves every kernel keeps (the command's flags, a training config, the
 * tests). Internal to the project, as train/train.h is: not installed. */
#ifndef LA_CORE_BLOCKS_H
#define LA_CORE_BLOCKS_H

#include "linattn.h"

#include <stdint.h>

typedef struct {
    la_local_params local;
    la_linformer_params linformer;
    la_favor_params favor;
    la_score_params score;
    la_relative_params relative;
} la_blocks;

/* Every block its LA_*_PARAMS_INIT defaults, unchained, every seed `seed`. */
void la_blocks_init(la_blocks *b, uint64_t seed);
/* The block of `kind` in b, unchained (NULL for LA_PARAMS_NONE or an unknown kind): what a
 * copy of b may hand one kernel, since no block points at another. */
const la_params *la_blocks_get(const la_blocks *b, la_params_kind kind);
/* Links the five blocks local → Linformer → FAVOR+ → scores → relative and returns the
 * chain's head, for a problem that serves every kernel; the chain points into *b. */
const la_params *la_blocks_chain(la_blocks *b);

#endif

/* layers_internal.h — shared by layers.c and accounting.c: the scratch geometry of the
 * Transformer layers, so the memory model and the allocations cannot drift apart. */
#ifndef LA_LAYERS_INTERNAL_H
#define LA_LAYERS_INTERNAL_H

#include "core/internal.h"

/* Rows of a task: the FFN's row blocks (each thread holds LA_LAYER_ROW_BLOCK × d_ff
 * hidden values) and the output projection's row blocks. Fixed, so the split — and the
 * rounding — never depends on the thread count. Every BLIS call repacks the weights it
 * reads, so a block must be tall enough to pay for that: 256 rows against 64 took the
 * FFN of a D = 512 layer from 33 to 17 ms at N = 1024 and from 136 to 82 ms at
 * N = 4096 (linattn block-sweep). */
enum { LA_LAYER_ROW_BLOCK = 256 };

/* Elements of scratch a layer forward allocates, at its peak:
 *   multi-head attention: Q (B·N·D), K and V (B·M·D each), the heads' output (B·N·D);
 *   the layer: its working copy of x and one sublayer output (B·N·D each);
 *   the FFN: min(threads, row blocks) × LA_LAYER_ROW_BLOCK × d_ff hidden values.
 * MHA and FFN run one after the other, so the peak is the larger of the two plus the
 * sublayer buffer. m = n for self-attention. false on overflow. */
bool la_layer_scratch_elements(const la_layer_config *c, size_t batch, size_t n, size_t m,
                               size_t *elements);

/* The kernel of a decoder's cross-attention: c->cross_attention, or c->attention when
 * that is LA_KERNEL_COUNT. */
la_kernel la_layer_cross_kernel(const la_layer_config *c);

/* The kernel problem of one attention of a layer: B × H heads of d_h = D/H, c's φ, ε,
 * chunk and workspace limit, the masks given. */
void la_layer_attention_problem(const la_layer_config *c, size_t batch, size_t n, size_t m,
                                int causal, const int64_t *key_lengths, la_problem *p);

/* Threads the FFN uses for `rows` rows: min(la_threads(), row blocks). */
size_t la_ffn_threads(size_t rows);

#endif

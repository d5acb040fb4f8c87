/* layers_internal.h — shared by layers.c and accounting.c: the scratch geometry of the
 * Transformer layers, so the memory model and the allocations cannot drift apart. */
#ifndef LA_LAYERS_INTERNAL_H
#define LA_LAYERS_INTERNAL_H

#include "core/internal.h"

/* Rows of the FFN's hidden slice: the FFN runs in chunks of this many rows, each of its
 * two products one threaded BLIS call (layers_tmpl.h), so BLIS packs each weight once
 * per chunk (row blocks with one single-threaded BLIS call each would pack both weights
 * again for every block). */
enum { LA_FFN_CHUNK_ROWS = 4096 };

/* Elements of scratch a layer forward allocates, at its peak:
 *   multi-head attention: Q (B·N·D), K and V (B·M·D each), the heads' output, which
 *   first holds each projection's (B·rows, D) (B·max(N, M)·D);
 *   the layer: its working copy of x and one sublayer output (B·N·D each);
 *   the FFN: la_ffn_hidden_rows(B·N) × d_ff hidden values.
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

/* Rows of the FFN's hidden slice for `rows` rows: min(rows, LA_FFN_CHUNK_ROWS). */
size_t la_ffn_hidden_rows(size_t rows);

#endif

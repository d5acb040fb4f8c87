/* sequence_internal.h — shared by the recurrent and convolutional layers (recurrent.c,
 * conv1d.c) and their references (sequence_reference.c): the argument checks, so the
 * fast path and the oracle refuse exactly the same calls. */
#ifndef LA_SEQUENCE_INTERNAL_H
#define LA_SEQUENCE_INTERNAL_H

#include "core/internal.h"

/* Rows of a task in the layers' parallel products (the recurrent layer's input
 * projection, the convolution's output rows). Fixed, so the split — and the rounding —
 * never depends on the thread count. */
enum { LA_SEQ_ROW_BLOCK = 256 };

/* The sizes of a recurrent layer's call: B, N, d >= 1, B·N·d elements and d·d weights
 * (and their bytes, elem each) addressable. LA_OK, LA_EINVAL (a zero size),
 * LA_EOVERFLOW. */
la_status la_rnn_sizes(size_t batch, size_t n, size_t d, size_t elem);

/* The same for a convolutional layer of width k (odd, >= 1; LA_EINVAL otherwise),
 * whose weights are k·d·d. */
la_status la_conv1d_sizes(size_t batch, size_t n, size_t d, size_t width, size_t elem);

#endif

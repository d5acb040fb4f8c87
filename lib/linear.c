/* linear.c — linear attention kernels (non-causal, chunked causal, recurrent) in float
 * and double: the code is written once in linear_impl.h and instantiated here twice. */
#include "linear_internal.h"

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>

/* Block sizes, fixed whatever the thread count (so the rounding is too). */
#define LA_LINEAR_KEY_BLOCK 256   /* non-causal: keys per φ(K)ᵀV product */
#define LA_LINEAR_QUERY_BLOCK 256 /* non-causal: queries per φ(Q)·S product and task */

#define T float
#define LA_SUFFIX _f32
#include "linear_impl.h"
#undef T
#undef LA_SUFFIX

#define T double
#define LA_SUFFIX _f64
#include "linear_impl.h"
#undef T
#undef LA_SUFFIX

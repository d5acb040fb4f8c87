/* real_f32.h — instantiate a template in float32. One of a pair with real_f64.h: a
 * float/double twin is either a whole file compiled once per precision (core/real_typed.h,
 * which includes one of the pair) or a *_tmpl.h written once and included twice,
 *
 *     #include "core/real_f32.h"
 *     #include "attention/weights_matrix_tmpl.h"
 *     #include "core/real_f64.h"
 *     #include "attention/weights_matrix_tmpl.h"
 *
 * and each of the pair defines, for the code that follows it:
 *   REAL        the element type                       float
 *   REAL_DTYPE  its la_dtype                           LA_FLOAT32
 *   REAL_IS_F32 1 in float32, 0 in float64            1
 *   FN(name)    name with the precision's suffix       name_f32
 *   GEMM        a matrix product through BLIS          la_gemm_f32
 *   GEMM_THREADED  the same on BLIS's own threads     la_gemm_threaded_f32
 *   GEMM_SMALL  the same for the small blocks of the   la_gemm_small_f32 (AVX-512 tiles
 *               linear kernels                         where they pay, else BLIS)
 *   TRANSPOSE   dst = srcᵀ for a small block           la_transpose_f32 (AVX-512 16×16
 *                                                      blocks, else loops)
 *   EXP, ERF    the libm functions                     expf, erff
 *   REAL_BITS   an unsigned integer of REAL's width    uint32_t
 *   REAL_MAX    the largest finite REAL                FLT_MAX (needs <float.h>)
 * A template defines its functions static, as FN(name); the file that includes it writes
 * the public functions out in full (la_softmax_weights_f32 calling attention_weights_f32),
 * so grep, ctags and a debugger find every public name where it is defined.
 * Each of the pair undefines what the other defined: include them one after the other. */
#include "core/real_undef.h"

#define REAL float
#define REAL_DTYPE LA_FLOAT32
#define REAL_IS_F32 1
#define FN(name) name##_f32
#define GEMM la_gemm_f32
#define GEMM_THREADED la_gemm_threaded_f32
#define GEMM_SMALL la_gemm_small_f32
#define GEMM_SMALL_ABT la_gemm_small_abt_f32
#define TRANSPOSE la_transpose_f32
#define EXP expf
#define ERF erff
#define REAL_BITS uint32_t
#define REAL_MAX FLT_MAX

/* real_f64.h — instantiate a template in float64; see real_f32.h for the scheme. */
#include "core/real_undef.h"

#define REAL double
#define REAL_DTYPE LA_FLOAT64
#define REAL_IS_F32 0
#define FN(name) name##_f64
#define GEMM la_gemm_f64
#define GEMM_THREADED la_gemm_threaded_f64
#define GEMM_SMALL la_gemm_small_f64
#define GEMM_SMALL_ABT la_gemm_small_abt_f64
#define TRANSPOSE la_transpose_f64
#define EXP exp
#define ERF erf
#define REAL_BITS uint64_t
#define REAL_MAX DBL_MAX

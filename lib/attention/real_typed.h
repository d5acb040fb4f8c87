/* real_typed.h — the element type of a file the Makefile compiles once per precision
 * (TYPED_SRC: softmax.c, local.c, scores.c, relative.c, engine_portable.c), with
 * -DLA_REAL_F32 into NAME_f32.o and -DLA_REAL_F64 into NAME_f64.o. Such a file is written
 * in REAL, GEMM, EXP ... (core/real_f32.h lists them); its static functions need no suffix,
 * each object has its own, and it defines every function other files call with its full
 * name inside `#if REAL_IS_F32 ... #else ... #endif`, so grep finds each definition. What
 * does not depend on the precision (costs, seeded draws) it defines under REAL_IS_F32 only. */
#if defined(LA_REAL_F32)
#include "core/real_f32.h"
#elif defined(LA_REAL_F64)
#include "core/real_f64.h"
#else
#error "compile with -DLA_REAL_F32 or -DLA_REAL_F64 (the Makefile's TYPED_SRC)"
#endif

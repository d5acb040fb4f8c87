/* real_typed.h — the element type of a file compiled once per precision. The Makefile
 * compiles every lib/ file that includes this header twice (TYPED_SRC), with
 * -DLA_REAL_F32 into NAME.f32.o and -DLA_REAL_F64 into NAME.f64.o. Such a file includes
 * it first and is written in REAL, GEMM, EXP, FN(name) ... (core/real_f32.h lists them);
 * its static functions need no suffix, each object has its own, and it defines every
 * function other files call with its full name inside `#if REAL_IS_F32 ... #else ...
 * #endif`, so grep finds each definition. What does not depend on the precision (costs,
 * scratch layouts, seeded draws, registry rows) it defines under `#if REAL_IS_F32` only:
 * compiled into the float32 object. */
#if defined(LA_REAL_F32) && !defined(LA_REAL_F64)
#include "core/real_f32.h"
#elif defined(LA_REAL_F64) && !defined(LA_REAL_F32)
#include "core/real_f64.h"
#else
#error "compile with -DLA_REAL_F32 or -DLA_REAL_F64 (the Makefile's TYPED_SRC)"
#endif

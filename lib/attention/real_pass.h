/* real_pass.h — the precision of a kernel file compiled once per type. The Makefile
 * compiles each file of its TYPED_SRC twice, with -DLA_REAL_F32 and with -DLA_REAL_F64;
 * the file includes this header first and is written in REAL, FN(name) and the rest of
 * core/real_f32.h's macros. Its extern functions are written with their literal names,
 * one per precision under `#if REAL_IS_F32`, so grep finds each where it is defined.
 * Code that has no element type (cost models, scratch layouts, drawing W) sits under
 * `#if LA_REAL_ONCE`: compiled into the float32 object only. */
#if defined(LA_REAL_F32) && !defined(LA_REAL_F64)
#include "core/real_f32.h"
#define LA_REAL_ONCE 1
#elif defined(LA_REAL_F64) && !defined(LA_REAL_F32)
#include "core/real_f64.h"
#define LA_REAL_ONCE 0
#else
#error "compile with -DLA_REAL_F32 or -DLA_REAL_F64 (the Makefile's TYPED_SRC)"
#endif

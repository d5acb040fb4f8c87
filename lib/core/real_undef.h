/* real_undef.h — forget the precision real_f32.h or real_f64.h defined (they include it
 * first; a file may include it after its last template, too). */
#undef REAL
#undef REAL_DTYPE
#undef REAL_IS_F32
#undef FN
#undef GEMM
#undef GEMM_THREADED
#undef GEMM_SMALL
#undef GEMM_SMALL_ABT
#undef TRANSPOSE
#undef EXP
#undef ERF
#undef REAL_BITS
#undef REAL_MAX

/* machine.h — what the library knows of the machine, for the command: the BLIS kernel set
 * and release, BLIS sgemm on its own threads (bench's yardstick), the SIMD path, the FMA
 * peak per element type. Internal (not exported); la_config() and la_fma_peak_gflops()
 * are their public faces in linattn.h. */
#ifndef LA_CPU_MACHINE_H
#define LA_CPU_MACHINE_H

#include "linattn.h"

/* The BLIS sub-configuration (kernel set) every matrix product runs on, e.g. "zen3", or
 * "skx (chosen by linattn)" where BLIS did not recognize the CPU and linattn chose
 * kernels by the CPU's instruction sets (lib/cpu/gemm.c). The environment variable
 * LA_BLIS_CONFIG = native | haswell | skx overrides the choice. A static string. */
const char *la_blis_config(void);

/* The BLIS release linked into the library, e.g. "0.9.0". A static string. */
const char *la_blis_version(void);

/* C (m×n, strides rsc, csc) = alpha · A (m×k, rsa, csa) · B (k×n, rsb, csb) + beta · C
 * in float32 through BLIS, on `threads` BLIS threads (1..LA_MAX_THREADS, run on at most
 * the online cores; BLIS's own threading): the
 * sgemm yardstick of `linattn bench`, on the kernel set la_blis_config names. Call it
 * outside an OpenMP parallel region. Returns LA_OK, LA_EINVAL (threads outside
 * 1..LA_MAX_THREADS, a NULL matrix), LA_ENOMEM (BLIS's packing buffers could not be
 * reserved; c untouched). */
la_status la_blis_sgemm(int threads, size_t m, size_t n, size_t k, float alpha, const float *a,
                        ptrdiff_t rsa, ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                        float beta, float *c, ptrdiff_t rsc, ptrdiff_t csc);

/* The float32 FMA peak of `threads` threads (1..LA_MAX_THREADS, run on at most the
 * online cores; NAN outside) in GFLOP/s: the best of three runs of 12
 * independent chains of 16-lane FMAs in registers (lib/cpu/simd.c), the rate no kernel
 * can pass. NAN where the AVX-512 code does not run (or its result comes out wrong). Call
 * outside a parallel region. */
double la_fma_peak_gflops_f32(int threads);

/* The float64 FMA peak of `threads` threads, as la_fma_peak_gflops: 12 independent chains
 * of 8-lane (double) FMAs in registers, best of three runs; about half the float32 peak.
 * NAN for threads outside 1..LA_MAX_THREADS and where the AVX-512 code does not run. */
double la_fma_peak_gflops_f64(int threads);

/* On CPUs with AVX-512 the fused softmax kernel, φ and the linear kernels' block products, in
 * float32 and float64, run on linattn's own register tiles (lib/attention/engine_avx512.c,
 * lib/cpu/gemm_small.c) instead of BLIS; the environment variable LA_SIMD=off keeps them on the
 * portable path (BLIS and compiler-vectorized loops), for comparisons. Results agree with the
 * float64 references either way; bits differ between the two paths. la_simd_config says which path
 * runs: "avx512", "portable (LA_SIMD=off)" or "portable (no AVX-512)". A static string. */
const char *la_simd_config(void);

/* The float32 small products' register tile (gemm_small.c): the shapes 8x32, 12x32, 6x64
 * and 4x64 give bitwise the same products. Once per process, at first use: LA_TILE=name
 * forces one; on a Zen 4, where they time alike, 8x32; on a Zen 5 6x64 (measured there);
 * elsewhere the fastest, timed (about 10 ms). la_gemm_small_shape is its index in
 * la_gemm_small_shapes' names (which returns how many there are); la_gemm_small_config
 * says what runs, for la_config().simd: "avx512, tile 8x32 (Zen 4: the shapes time
 * alike)", "avx512, tile 6x64 (Zen 5: measured fastest there)", "avx512, tile 12x32 (timed
 * fastest)", "... (LA_TILE)", or la_simd_config() where the tiles do not run.
 * la_gemm_small_time_shapes runs the timing and returns the index it finds (tests).
 * Static strings; thread-safe. */
int la_gemm_small_shape(void);
int la_gemm_small_time_shapes(void);
/* Runs every later product on shape index `shape` (tests); -1 goes back to the choice. */
void la_gemm_small_use_shape(int shape);
int la_gemm_small_shapes(const char **names, int max);
const char *la_gemm_small_config(void);

#endif /* LA_CPU_MACHINE_H */

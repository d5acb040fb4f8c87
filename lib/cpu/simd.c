/* simd.c — whether the hand-written AVX-512 kernels run (simd_avx512.h), and the
 * machine's float32 and float64 FMA peaks, the ceilings `linattn bench` and `linattn
 * roofline` report beside sgemm. */
#include "core/internal.h"
#include "cpu/simd_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static bool cpu_ok, env_off;
static _Atomic bool enabled = true;

/* The CPU's features, and LA_SIMD=off (to compare with the portable kernels). */
static void detect(void)
{
#if LA_HAVE_AVX512_CODE
    __builtin_cpu_init();
    cpu_ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
#endif
    const char *env = getenv("LA_SIMD");
    env_off = env && strcmp(env, "off") == 0;
}

bool la_avx512_usable(void)
{
    pthread_once(&detect_once, detect);
    return cpu_ok && !env_off && enabled;
}

bool la_avx512_present(void)
{
    pthread_once(&detect_once, detect);
    return cpu_ok && !env_off;
}

unsigned la_cpu_amd_family(void)
{
#if LA_HAVE_AVX512_CODE
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* AuthenticAMD */
    if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned base = (a >> 8) & 0xfu;
    return base == 0xfu ? base + ((a >> 20) & 0xffu) : base;
#else
    return 0;
#endif
}

void la_avx512_enable(bool on)
{
    enabled = on;
}

const char *la_simd_config(void)
{
    pthread_once(&detect_once, detect);
    if (!cpu_ok) return "portable (no AVX-512)";
    if (env_off) return "portable (LA_SIMD=off)";
    return enabled ? "avx512" : "portable (switched off by the caller)";
}

/* ---------------------------------------------------------------- the FMA peak */

#if LA_HAVE_AVX512_CODE
/* 12 independent chains of 16-lane FMAs, iters times: enough chains to cover the FMA
 * latency on every current x86 core, all in registers. Each chain starts from its own
 * value derived from seed, which the caller reads from a volatile: chains started from
 * equal constants are one chain to the compiler, and GCC kept 2 FMAs of the 12 (the
 * peak came out 1.5 times too high). The loop must hold 12 vfmadd per iteration
 * (objdump -d build/lib/cpu/simd.o); tests/hostile/test_fma_probe.c compares the rate
 * with 12 FMAs written in assembly. Returns the sum so the work cannot be dropped. */
#define LA_FMA12(x, y)                                                                             \
    a0 = _mm512_fmadd_ps(a0, x, y), a1 = _mm512_fmadd_ps(a1, x, y),                                \
    a2 = _mm512_fmadd_ps(a2, x, y), a3 = _mm512_fmadd_ps(a3, x, y),                                \
    a4 = _mm512_fmadd_ps(a4, x, y), a5 = _mm512_fmadd_ps(a5, x, y),                                \
    a6 = _mm512_fmadd_ps(a6, x, y), a7 = _mm512_fmadd_ps(a7, x, y),                                \
    a8 = _mm512_fmadd_ps(a8, x, y), a9 = _mm512_fmadd_ps(a9, x, y),                                \
    a10 = _mm512_fmadd_ps(a10, x, y), a11 = _mm512_fmadd_ps(a11, x, y)
LA_AVX512 static float fma_chains(long iters, float seed)
{
    /* a_i → y / (1 − x) = seed: every value stays normal and finite */
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(seed * 1e-6f);
#define LA_CHAIN(i) _mm512_set1_ps(seed *(1.0f + (float)(i) / 64))
    __m512 a0 = LA_CHAIN(0), a1 = LA_CHAIN(1), a2 = LA_CHAIN(2), a3 = LA_CHAIN(3), a4 = LA_CHAIN(4),
           a5 = LA_CHAIN(5), a6 = LA_CHAIN(6), a7 = LA_CHAIN(7), a8 = LA_CHAIN(8), a9 = LA_CHAIN(9),
           a10 = LA_CHAIN(10), a11 = LA_CHAIN(11);
#undef LA_CHAIN
    for (long t = 0; t < iters; t++)
        LA_FMA12(x, y);
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    return _mm512_reduce_add_ps(s);
}
#undef LA_FMA12
#endif

#if LA_HAVE_AVX512_CODE
/* The float64 twin of fma_chains: 12 independent chains of 8-lane FMAs (vfmadd on zmm
 * holding doubles), started from distinct values derived from the volatile seed, as
 * above. Checked with objdump -d build/lib/cpu/simd.o: the loop of fma_chains_f64 holds
 * 12 vfmadd...pd on 12 distinct zmm accumulators and one counter update per iteration,
 * nothing else (no loads, no stores); tests/hostile/test_fma_probe.c holds its rate to
 * about half the float32 one. */
#define LA_FMA12_PD(x, y)                                                                          \
    a0 = _mm512_fmadd_pd(a0, x, y), a1 = _mm512_fmadd_pd(a1, x, y),                                \
    a2 = _mm512_fmadd_pd(a2, x, y), a3 = _mm512_fmadd_pd(a3, x, y),                                \
    a4 = _mm512_fmadd_pd(a4, x, y), a5 = _mm512_fmadd_pd(a5, x, y),                                \
    a6 = _mm512_fmadd_pd(a6, x, y), a7 = _mm512_fmadd_pd(a7, x, y),                                \
    a8 = _mm512_fmadd_pd(a8, x, y), a9 = _mm512_fmadd_pd(a9, x, y),                                \
    a10 = _mm512_fmadd_pd(a10, x, y), a11 = _mm512_fmadd_pd(a11, x, y)
LA_AVX512 static double fma_chains_f64(long iters, double seed)
{
    /* a_i → y / (1 − x) = seed, as in fma_chains */
    const __m512d x = _mm512_set1_pd(0.999999), y = _mm512_set1_pd(seed * 1e-6);
#define LA_CHAIN(i) _mm512_set1_pd(seed *(1.0 + (double)(i) / 64))
    __m512d a0 = LA_CHAIN(0), a1 = LA_CHAIN(1), a2 = LA_CHAIN(2), a3 = LA_CHAIN(3),
            a4 = LA_CHAIN(4), a5 = LA_CHAIN(5), a6 = LA_CHAIN(6), a7 = LA_CHAIN(7),
            a8 = LA_CHAIN(8), a9 = LA_CHAIN(9), a10 = LA_CHAIN(10), a11 = LA_CHAIN(11);
#undef LA_CHAIN
    for (long t = 0; t < iters; t++)
        LA_FMA12_PD(x, y);
    __m512d s = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)),
                              _mm512_add_pd(_mm512_add_pd(a4, a5), _mm512_add_pd(a6, a7)));
    s = _mm512_add_pd(s, _mm512_add_pd(_mm512_add_pd(a8, a9), _mm512_add_pd(a10, a11)));
    return _mm512_reduce_add_pd(s);
}
#undef LA_FMA12_PD
#endif

double la_fma_peak_gflops_f64(int threads)
{
#if LA_HAVE_AVX512_CODE
    if (!la_avx512_usable() || threads < 1 || threads > LA_MAX_THREADS) return NAN;
    threads = la_thread_clamp(threads);
    const long iters = 20000000;       /* 3.8 GFLOP per thread: about 25 ms at 150 GFLOP/s */
    static volatile double seed = 1.0; /* a value the compiler cannot know */
    double best = 0;
    for (int round = 0; round < 3; round++) {
        double sink = 0;
        const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += fma_chains_f64(iters, seed);
        /* 8 lanes × 12 chains, each near seed: the work was done, and done right */
        if (!(fabs(sink - 96.0 * seed * threads) < 4.0 * threads)) return NAN;
        const double rate = 12.0 * 8 * 2 * (double)iters * threads / (omp_get_wtime() - t0) * 1e-9;
        if (rate > best) best = rate;
    }
    return best;
#else
    (void)threads;
    return NAN;
#endif
}

double la_fma_peak_gflops_f32(int threads)
{
#if LA_HAVE_AVX512_CODE
    if (!la_avx512_usable() || threads < 1 || threads > LA_MAX_THREADS) return NAN;
    threads = la_thread_clamp(threads);
    const long iters = 20000000;       /* 7.7 GFLOP per thread: about 25 ms at 300 GFLOP/s */
    static volatile float seed = 1.0f; /* a value the compiler cannot know */
    double best = 0;
    for (int round = 0; round < 3; round++) {
        float sink = 0;
        const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : sink)
        sink += fma_chains(iters, seed);
        /* 16 lanes × 12 chains, each near seed: the work was done, and done right */
        if (!(fabsf(sink - 192.0f * seed * threads) < 8.0f * threads)) return NAN;
        const double rate = 12.0 * 16 * 2 * (double)iters * threads / (omp_get_wtime() - t0) * 1e-9;
        if (rate > best) best = rate;
    }
    return best;
#else
    (void)threads;
    return NAN;
#endif
}

double la_fma_peak_gflops(la_dtype dtype, int threads)
{
    if (dtype == LA_FLOAT32) return la_fma_peak_gflops_f32(threads);
    if (dtype == LA_FLOAT64) return la_fma_peak_gflops_f64(threads);
    return NAN;
}

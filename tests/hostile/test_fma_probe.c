/* test_fma_probe.c — la_fma_peak_gflops against a second probe written differently:
 * 12 FMA chains as 12 explicit vfmadd231ps on zmm registers in assembly, which no compiler
 * can merge. The library's probe once started its chains from two constants, GCC merged
 * them into 2 FMAs per iteration while the rate counted 12, and the peak came out about
 * 1.5 times too high; the two probes must now agree within 15%.
 * On a loaded machine a probe can only come out low, so each side is the best of several
 * runs, and a disagreement is measured again (up to 5 times); one that persists but stays
 * within 0.5-1.35 is noise, not a fold, and skips (saying so). Skips too where the
 * AVX-512 code does not run. */
#include "../testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The assembly probe, one thread: iters × 12 vfmadd231ps zmm, 12 independent chains. */
static double asm_probe_gflops(long iters)
{
    double best = 0;
    for (int round = 0; round < 5; round++) {
        float out[16];
        const double t0 = now();
        __asm__ volatile("vbroadcastss %[one], %%zmm0\n\t" /* x */
                         "vbroadcastss %[eps], %%zmm1\n\t" /* y */
                         "vmovaps %%zmm0, %%zmm2\n\t"
                         "vaddps %%zmm1, %%zmm0, %%zmm3\n\t" /* distinct starts */
                         "vaddps %%zmm1, %%zmm3, %%zmm4\n\t"
                         "vaddps %%zmm1, %%zmm4, %%zmm5\n\t"
                         "vaddps %%zmm1, %%zmm5, %%zmm6\n\t"
                         "vaddps %%zmm1, %%zmm6, %%zmm7\n\t"
                         "vaddps %%zmm1, %%zmm7, %%zmm8\n\t"
                         "vaddps %%zmm1, %%zmm8, %%zmm9\n\t"
                         "vaddps %%zmm1, %%zmm9, %%zmm10\n\t"
                         "vaddps %%zmm1, %%zmm10, %%zmm11\n\t"
                         "vaddps %%zmm1, %%zmm11, %%zmm12\n\t"
                         "vaddps %%zmm1, %%zmm12, %%zmm13\n\t"
                         "mov %[n], %%rcx\n\t"
                         "1:\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm2\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm3\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm4\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm5\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm6\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm7\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm8\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm9\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm10\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm11\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm12\n\t"
                         "vfmadd231ps %%zmm0, %%zmm1, %%zmm13\n\t"
                         "dec %%rcx\n\t"
                         "jnz 1b\n\t"
                         "vaddps %%zmm3, %%zmm2, %%zmm2\n\t"
                         "vaddps %%zmm13, %%zmm2, %%zmm2\n\t"
                         "vmovups %%zmm2, %[out]\n\t"
                         "vzeroupper"
                         : [out] "=m"(out)
                         : [one] "m"((float){0.5f}), [eps] "m"((float){1e-3f}), [n] "r"(iters)
                         : "rcx", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
                           "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "cc", "memory");
        const double rate = 12.0 * 16 * 2 * (double)iters / (now() - t0) * 1e-9;
        assert_true(isfinite(out[0]));
        if (rate > best) best = rate;
    }
    return best;
}

static void test_fma_peak_agrees_with_assembly(void **state)
{
    (void)state;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || isnan(la_fma_peak_gflops(1))) {
        printf("skipped: no AVX-512 FMA probe on this run (%s)\n", la_simd_config());
        skip();
    }
    double lib = 0, ref = 0, ratio = 0;
    for (int attempt = 0; attempt < 5; attempt++) {
        for (int i = 0; i < 2; i++) {
            const double l = la_fma_peak_gflops(1), r = asm_probe_gflops(20000000);
            if (l > lib) lib = l;
            if (r > ref) ref = r;
        }
        ratio = lib / ref;
        printf("FMA peak, 1 thread: library %.1f GFLOP/s, assembly %.1f (ratio %.2f)\n", lib, ref,
               ratio);
        if (ratio > 0.85 && ratio < 1.15) return;
    }
    /* Rates measured while other processes compete for the cores (or while the host
     * steals the virtual CPU, which the load average does not show) can disagree by more
     * than 15% whatever the probes are; the skip says so instead of failing. A folded
     * probe (2 FMAs counted as 12) is 1.5x or more too high even then, and a probe
     * slower than half the assembly's is broken: those still fail. */
    if (ratio > 0.5 && ratio < 1.35) {
        printf("skipped: the probes disagree by more than 15%% after 5 attempts (ratio %.2f): "
               "too noisy a machine to compare them, but not a folded probe's 1.5x\n",
               ratio);
        skip();
    }
    fail_msg("la_fma_peak_gflops(1) = %.1f GFLOP/s but 12 FMA chains in assembly run at %.1f "
             "(ratio %.2f: outside 0.5-1.35, a folded or broken probe)",
             lib, ref, ratio);
}

int main(void)
{
    tu_init("test_fma_probe");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fma_peak_agrees_with_assembly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

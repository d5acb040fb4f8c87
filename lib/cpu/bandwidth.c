/* bandwidth.c — the machine's memory bandwidth (la_memory_bandwidth_gbs): a streaming
 * read and STREAM's triad, the memory ceiling of `linattn roofline` beside the FMA peaks
 * of simd.c.
 *
 * The arrays hold max(4 × L3, 64 MiB) in all (capped at 1 GiB), so no pass is served
 * from cache; each thread first-touches and then streams its own contiguous slice. They
 * are allocated on 2 MiB pages where the system has them (la_alloc_large): with 4 KiB
 * pages, first-touching the 128 MiB took 0.7 s of a `linattn bench` call on a Zen 5 guest
 * where a page fault costs 11 µs, more than the passes themselves. The
 * loops are plain C (GCC vector extensions for the sum, so it needs no -ffast-math to run
 * 4 × 4 lanes wide): checked with objdump -d build/lib/cpu/bandwidth.o, la_read_sum's
 * main loop is 4 vaddpd with ymm memory operands (one 32-byte load each) and the index
 * update, no stores; la_triad's is vmulpd (s · a ymm load of c), vaddpd (+ a ymm load of
 * b) and one vmovupd store per 4 elements (no FMA: -std=c11 keeps contraction off), on
 * x86-64-v3 builds; the portable baseline gives the SSE2 forms of the same loops. The sum and
 * sampled triad values are checked against their known values, so a pass cannot be dropped or
 * shortened by the compiler. The loops that touch the arrays (the passes and the fills) are
 * built as LA_MEASURES_MACHINE (core/sanitizer.h): with AddressSanitizer's checks the
 * triad ran at 6 GB/s and took 1.0 s of every `linattn bench` call. */
#include "cpu/bandwidth.h"

#include "core/alloc_large.h"
#include "core/internal.h"
#include "core/sanitizer.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef double v4d __attribute__((vector_size(32)));

LA_MEASURES_MACHINE double la_read_sum(const double *a, size_t n)
{
    v4d s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        v4d x0, x1, x2, x3;
        memcpy(&x0, a + i, sizeof x0);
        memcpy(&x1, a + i + 4, sizeof x1);
        memcpy(&x2, a + i + 8, sizeof x2);
        memcpy(&x3, a + i + 12, sizeof x3);
        s0 += x0, s1 += x1, s2 += x2, s3 += x3;
    }
    double tail = 0;
    for (; i < n; i++)
        tail += a[i];
    const v4d s = (s0 + s1) + (s2 + s3);
    return ((s[0] + s[1]) + (s[2] + s[3])) + tail;
}

LA_MEASURES_MACHINE void la_triad(double *a, const double *b, const double *c, double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

/* Bytes of L3 cache (cpu0's index3 in sysfs), or 32 MiB where the system does not say. */
static size_t l3_bytes(void)
{
    size_t bytes = (size_t)32 << 20;
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (!f) return bytes;
    unsigned long v;
    char unit = 0;
    if (fscanf(f, "%lu%c", &v, &unit) >= 1 && v > 0)
        bytes = unit == 'K' ? (size_t)v << 10 : unit == 'M' ? (size_t)v << 20 : (size_t)v;
    fclose(f);
    return bytes;
}

/* Thread t's slice [lo, hi) of n elements split over nt threads. */
static void slice(size_t n, int t, int nt, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)t / (size_t)nt;
    *hi = n * (size_t)(t + 1) / (size_t)nt;
}

/* a[lo .. hi) = i mod 8, the read probe's values */
LA_MEASURES_MACHINE static void fill_read(double *a, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        a[i] = (double)(i % 8);
}

/* a[lo .. hi) = 0, b = i mod 4, c = 2: the triad probe's values */
LA_MEASURES_MACHINE static void fill_triad(double *a, double *b, double *c, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++)
        a[i] = 0, b[i] = (double)(i % 4), c[i] = 2;
}

/* The read probe: a[i] = i mod 8, so every partial sum is an integer below 2^53 and the
 * total is exact: 28 per 8 elements. */
static la_status read_probe(size_t total, int threads, double *gbs)
{
    const size_t n = total / sizeof(double);
    double *a = la_alloc_large(n * sizeof *a);
    if (!a) return LA_ENOMEM;
#pragma omp parallel num_threads(threads)
    {
        size_t lo, hi;
        slice(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        fill_read(a, lo, hi);
    }
    const double expect = 28.0 * (double)(n / 8) + (double)((n % 8) * (n % 8 - 1) / 2);
    double best = 0;
    la_status st = LA_OK;
    for (int pass = 0; pass < 5 && st == LA_OK; pass++) {
        double sum = 0;
        const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(threads) reduction(+ : sum)
        {
            size_t lo, hi;
            slice(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
            sum += la_read_sum(a + lo, hi - lo);
        }
        const double rate = (double)(n * sizeof *a) / (omp_get_wtime() - t0) * 1e-9;
        if (sum != expect) st = LA_EIO;
        if (rate > best) best = rate;
    }
    free(a);
    if (st == LA_OK) *gbs = best;
    return st;
}

/* The triad probe: b[i] = i mod 4, c[i] = 2, s = 3 (from a volatile), so a[i] = 6 + i mod 4
 * exactly; every 4099th element and the last are checked after each pass. */
static la_status triad_probe(size_t total, int threads, double *gbs)
{
    const size_t n = total / (3 * sizeof(double));
    double *a = la_alloc_large(n * sizeof *a), *b = la_alloc_large(n * sizeof *b),
           *c = la_alloc_large(n * sizeof *c);
    la_status st = LA_OK;
    if (!a || !b || !c) {
        st = LA_ENOMEM;
        goto done;
    }
#pragma omp parallel num_threads(threads)
    {
        size_t lo, hi;
        slice(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
        fill_triad(a, b, c, lo, hi);
    }
    static volatile double scalar = 3.0; /* a value the compiler cannot know */
    const double s = scalar;
    double best = 0;
    for (int pass = 0; pass < 5 && st == LA_OK; pass++) {
        const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(threads)
        {
            size_t lo, hi;
            slice(n, omp_get_thread_num(), omp_get_num_threads(), &lo, &hi);
            la_triad(a + lo, b + lo, c + lo, s, hi - lo);
        }
        const double rate = 3.0 * (double)(n * sizeof *a) / (omp_get_wtime() - t0) * 1e-9;
        for (size_t i = 0; i < n; i += 4099)
            if (a[i] != 6 + (double)(i % 4)) st = LA_EIO;
        if (a[n - 1] != 6 + (double)((n - 1) % 4)) st = LA_EIO;
        if (rate > best) best = rate;
    }
    if (st == LA_OK) *gbs = best;
done:
    free(a), free(b), free(c);
    return st;
}

la_status la_memory_bandwidth_gbs(la_bandwidth_kind kind, int threads, double *gbs)
{
    if (!gbs || (kind != LA_BANDWIDTH_READ && kind != LA_BANDWIDTH_TRIAD) || threads < 1 ||
        threads > LA_MAX_THREADS)
        return LA_EINVAL;
    threads = la_thread_clamp(threads);
    size_t total = 4 * l3_bytes();
    if (total < ((size_t)64 << 20)) total = (size_t)64 << 20;
    if (total > ((size_t)1 << 30)) total = (size_t)1 << 30;
    return kind == LA_BANDWIDTH_READ ? read_probe(total, threads, gbs)
                                     : triad_probe(total, threads, gbs);
}

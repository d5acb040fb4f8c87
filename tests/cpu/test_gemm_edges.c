/* test_gemm_edges.c — la_gemm_f32 and la_gemm_threaded_f32 (lib/cpu/gemm.c) never read
 * past C: each product's C ends exactly at a page whose successor is unreadable
 * (PROT_NONE), so a read one float past it is a SIGSEGV, not a silent garbage load.
 * BLIS before 1.0 loads 4 floats of a row of C where 2 exist in its small-product kernels
 * for an edge of 2 columns when beta != 0; the wrapper must compute that row apart.
 * Shapes: every n with n mod 4 in {2, 3} up to 2 tiles of 16 and some wider, m from 1
 * past a 6-row tile, C row-stored and column-stored, beta 0 and 1; each result against a
 * float64 plain-loop product (relative 1e-5). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include "../testutil.h"
#include "core/internal.h" /* la_gemm_f32, la_gemm_threaded_f32, la_gemm_reserve */

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { K = 5 };

/* Two pages: the first readable, the second not; *end is the first byte of the second. */
typedef struct {
    unsigned char *base, *end;
    size_t page;
} guarded;

static guarded guard_pages(size_t bytes)
{
    guarded g;
    g.page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t usable = (bytes + g.page - 1) / g.page * g.page;
    g.base =
        mmap(NULL, usable + g.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(g.base != MAP_FAILED);
    g.end = g.base + usable;
    assert_int_equal(mprotect(g.end, g.page, PROT_NONE), 0);
    return g;
}

/* c (m × n) = alpha a b + beta c with C stored row- or column-major, ending at the guard;
 * checked against float64 loops. */
static void one_product(tu_rng *r, guarded *g, size_t m, size_t n, int col_stored, float beta,
                        int threads)
{
    float a[64 * K], b[K * 64];
    double c0[64 * 64];
    const size_t count = m * n;
    float *c = (float *)(void *)(g->end - count * sizeof(float));
    for (size_t i = 0; i < m * K; i++)
        a[i] = (float)tu_normal(r);
    for (size_t i = 0; i < K * n; i++)
        b[i] = (float)tu_normal(r);
    for (size_t i = 0; i < count; i++)
        c[i] = (float)tu_normal(r), c0[i] = c[i];
    const ptrdiff_t rsc = col_stored ? 1 : (ptrdiff_t)n, csc = col_stored ? (ptrdiff_t)m : 1;
    if (threads)
        la_gemm_threaded_f32(threads, m, n, K, 1.0f, a, K, 1, b, (ptrdiff_t)n, 1, beta, c, rsc,
                             csc);
    else
        la_gemm_f32(m, n, K, 1.0f, a, K, 1, b, (ptrdiff_t)n, 1, beta, c, rsc, csc);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double want = beta * c0[(size_t)((ptrdiff_t)i * rsc + (ptrdiff_t)j * csc)];
            for (size_t p = 0; p < K; p++)
                want += (double)a[i * K + p] * b[p * n + j];
            const double got = c[(ptrdiff_t)i * rsc + (ptrdiff_t)j * csc];
            const double err = fabs(got - want) / fmax(1.0, fabs(want));
            if (!(err < 1e-5))
                fail_msg("m %zu n %zu %s-stored beta %g threads %d: c[%zu][%zu] = %g, want %g", m,
                         n, col_stored ? "column" : "row", (double)beta, threads, i, j, got, want);
        }
}

static void products_never_read_past_c(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("gemm_edges");
    guarded g = guard_pages(64 * 64 * sizeof(float));
    assert_int_equal(la_gemm_reserve(2), LA_OK);
    const size_t ns[] = {2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 30, 31, 34, 35, 50, 63};
    const float betas[] = {0.0f, 1.0f};
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
        for (size_t m = 1; m <= 8; m++)
            for (int col = 0; col < 2; col++)
                for (int bi = 0; bi < 2; bi++) {
                    /* column-stored: the kernels' rows are C's columns, so m is the edge */
                    const size_t mm = col ? ns[ni] : m, nn = col ? m : ns[ni];
                    one_product(&r, &g, mm, nn, col, betas[bi], 0);
                    one_product(&r, &g, mm, nn, col, betas[bi], 2);
                }
    munmap(g.base, (size_t)(g.end - g.base) + g.page);
}

int main(void)
{
    tu_init("test_gemm_edges");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(products_never_read_past_c),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_gemm_small.c — la_gemm_small_f32 and la_gemm_small_f64 (lib/cpu/gemm_small.c), the
 * products of the linear kernels' small blocks (and la_gemm_small_abt_*, the portable
 * engine's Q·Kᵀ: products_with_bt), against plain loops on random shapes that
 * reach every edge of their register tiles (8 rows × 32 floats or 16 doubles): m, n, k
 * from 0 or 1 past two tiles, A read row-major and transposed through its strides, B and C
 * with leading dimensions wider than n, C = A·B and C += A·B.
 *
 * The contract (lib/core/internal.h): each element of A·B is one FMA chain over p in
 * order, added to C at the end. Where the AVX-512 tiles run, the result must equal, bit for
 * bit, plain loops that do exactly that (fma() in order, then the add): which also says it
 * does not depend on the tiling. Everywhere (BLIS where the tiles do not run) it must match
 * the float64 plain-loop product to 1e-14 (float64) or 1e-6 (float32), and C outside the
 * m × n block is never written. */
#include "../testutil.h"
#include "core/internal.h" /* la_gemm_small_*, la_avx512_enable */
#include "cpu/simd_avx512.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROUNDS = 300, PAD = 3 };
static const double SENTINEL = 12345.0; /* C's padding, which must stay as it was */

/* One random problem: sizes, A's layout, whether C accumulates. */
typedef struct {
    size_t m, n, k;
    int a_transposed; /* A stored as Aᵀ (k × m, row-major): rsa = 1, csa = m + PAD */
    int accumulate;
} gemm_case;

/* m, n, k from 0 to a little past two tiles (n past two float32 tiles of 32 columns). */
static gemm_case random_case(tu_rng *r)
{
    gemm_case c;
    c.m = (size_t)(tu_uniform(r) * 20);
    c.n = (size_t)(tu_uniform(r) * 70);
    c.k = (size_t)(tu_uniform(r) * 70);
    c.a_transposed = tu_uniform(r) < 0.5;
    c.accumulate = tu_uniform(r) < 0.5;
    return c;
}

/* Strides of A (m × k) in its storage, B (k × n, ld n + PAD) and C (m × n, ld n + PAD). */
typedef struct {
    ptrdiff_t rsa, csa, ldb, ldc;
    size_t a_size, b_size, c_size;
} layout;

static layout layout_of(const gemm_case *c)
{
    layout l;
    l.rsa = c->a_transposed ? 1 : (ptrdiff_t)(c->k + PAD);
    l.csa = c->a_transposed ? (ptrdiff_t)(c->m + PAD) : 1;
    l.a_size = c->a_transposed ? (c->k + 1) * (c->m + PAD) : (c->m + 1) * (c->k + PAD);
    l.ldb = (ptrdiff_t)(c->n + PAD);
    l.b_size = (c->k + 1) * (c->n + PAD);
    l.ldc = (ptrdiff_t)(c->n + PAD);
    l.c_size = (c->m + 1) * (c->n + PAD);
    return l;
}

/* Whether (i, c) of C's storage is inside the m × n block. */
static int in_block(const gemm_case *gc, const layout *l, size_t idx)
{
    const size_t i = idx / (size_t)l->ldc, c = idx % (size_t)l->ldc;
    return i < gc->m && c < gc->n;
}

static void float64_products(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("float64_products");
    const int tiles = la_avx512_usable();
    for (int round_ = 0; round_ < ROUNDS; round_++) {
        const gemm_case gc = random_case(&r);
        const layout l = layout_of(&gc);
        double *a = tu_f64(l.a_size), *b = tu_f64(l.b_size), *c = tu_f64(l.c_size);
        double *fma_ref = tu_f64(l.c_size), *ref = tu_f64(l.c_size);
        tu_fill_normal(&r, a, l.a_size, 1.0);
        tu_fill_normal(&r, b, l.b_size, 1.0);
        for (size_t i = 0; i < l.c_size; i++)
            c[i] = fma_ref[i] = ref[i] = SENTINEL;
        for (size_t i = 0; i < gc.m; i++)
            for (size_t j = 0; j < gc.n; j++)
                c[i * l.ldc + j] = fma_ref[i * l.ldc + j] = ref[i * l.ldc + j] = tu_normal(&r);
        /* the plain loops: one FMA chain per element, in order, then added to C */
        for (size_t i = 0; i < gc.m; i++)
            for (size_t j = 0; j < gc.n; j++) {
                double chain = 0, plain = 0;
                for (size_t p = 0; p < gc.k; p++) {
                    const double x = a[i * l.rsa + p * l.csa], y = b[p * l.ldb + j];
                    chain = fma(x, y, chain);
                    plain += x * y;
                }
                double *f = &fma_ref[i * l.ldc + j], *e = &ref[i * l.ldc + j];
                *f = gc.accumulate ? *f + chain : chain;
                *e = gc.accumulate ? *e + plain : plain;
            }
        la_gemm_small_f64(gc.m, gc.n, gc.k, 1, a, l.rsa, l.csa, b, l.ldb, 1, gc.accumulate ? 1 : 0,
                          c, l.ldc, 1);
        for (size_t i = 0; i < l.c_size; i++) {
            if (!in_block(&gc, &l, i) && c[i] != SENTINEL)
                fail_msg("round %d (m %zu n %zu k %zu): C[%zu] outside the block written", round_,
                         gc.m, gc.n, gc.k, i);
            if (tiles && in_block(&gc, &l, i) && !(c[i] == fma_ref[i]))
                fail_msg("round %d (m %zu n %zu k %zu, A%s, %s): C[%zu] = %.17g, one FMA chain "
                         "gives %.17g",
                         round_, gc.m, gc.n, gc.k, gc.a_transposed ? "ᵀ" : "",
                         gc.accumulate ? "C +=" : "C =", i, c[i], fma_ref[i]);
        }
        tu_assert_close_f64(c, ref, l.c_size, 1e-14, "round %d (m %zu n %zu k %zu)", round_, gc.m,
                            gc.n, gc.k);
        free(a), free(b), free(c), free(fma_ref), free(ref);
    }
}

static void float32_products(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("float32_products");
    const int tiles = la_avx512_usable();
    for (int round_ = 0; round_ < ROUNDS; round_++) {
        const gemm_case gc = random_case(&r);
        const layout l = layout_of(&gc);
        float *a = tu_f32(l.a_size), *b = tu_f32(l.b_size), *c = tu_f32(l.c_size);
        float *fma_ref = tu_f32(l.c_size);
        double *ref = tu_f64(l.c_size);
        for (size_t i = 0; i < l.a_size; i++)
            a[i] = (float)tu_normal(&r);
        for (size_t i = 0; i < l.b_size; i++)
            b[i] = (float)tu_normal(&r);
        for (size_t i = 0; i < l.c_size; i++)
            c[i] = fma_ref[i] = (float)(ref[i] = SENTINEL);
        for (size_t i = 0; i < gc.m; i++)
            for (size_t j = 0; j < gc.n; j++)
                c[i * l.ldc + j] = fma_ref[i * l.ldc + j] =
                    (float)(ref[i * l.ldc + j] = (float)tu_normal(&r));
        for (size_t i = 0; i < gc.m; i++)
            for (size_t j = 0; j < gc.n; j++) {
                float chain = 0;
                double exact = 0;
                for (size_t p = 0; p < gc.k; p++) {
                    const float x = a[i * l.rsa + p * l.csa], y = b[p * l.ldb + j];
                    chain = fmaf(x, y, chain);
                    exact += (double)x * y;
                }
                float *f = &fma_ref[i * l.ldc + j];
                double *e = &ref[i * l.ldc + j];
                *f = gc.accumulate ? *f + chain : chain;
                *e = gc.accumulate ? *e + exact : exact;
            }
        la_gemm_small_f32(gc.m, gc.n, gc.k, 1, a, l.rsa, l.csa, b, l.ldb, 1, gc.accumulate ? 1 : 0,
                          c, l.ldc, 1);
        for (size_t i = 0; i < l.c_size; i++) {
            if (!in_block(&gc, &l, i) && c[i] != (float)SENTINEL)
                fail_msg("round %d (m %zu n %zu k %zu): C[%zu] outside the block written", round_,
                         gc.m, gc.n, gc.k, i);
            if (tiles && in_block(&gc, &l, i) && !(c[i] == fma_ref[i]))
                fail_msg("round %d (m %zu n %zu k %zu): C[%zu] = %.9g, one FMA chain gives %.9g",
                         round_, gc.m, gc.n, gc.k, i, c[i], fma_ref[i]);
        }
        tu_assert_close_f32(c, ref, l.c_size, 1e-6, "round %d (m %zu n %zu k %zu)", round_, gc.m,
                            gc.n, gc.k);
        free(a), free(b), free(c), free(fma_ref), free(ref);
    }
}

/* What the tiles do not take (alpha != 1, beta other than 0 and 1) goes to BLIS, with
 * BLIS's meaning: C = alpha·A·B + beta·C. */
static void other_alpha_beta_f64(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("other_alpha_beta_f64");
    enum { M = 9, N = 17, K = 5 };
    double a[M * K], b[K * N], c[M * N], ref[M * N];
    tu_fill_normal(&r, a, M * K, 1.0);
    tu_fill_normal(&r, b, K * N, 1.0);
    tu_fill_normal(&r, c, M * N, 1.0);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t p = 0; p < K; p++)
                s += a[i * K + p] * b[p * N + j];
            ref[i * N + j] = 2 * s + 0.5 * c[i * N + j];
        }
    la_gemm_small_f64(M, N, K, 2, a, K, 1, b, N, 1, 0.5, c, N, 1);
    tu_assert_close_f64(c, ref, M * N, 1e-14, "alpha 2, beta 0.5");
}

/* la_gemm_small_abt_f32 and _f64: C = alpha·A·Bᵀ, A (m × k), B (n × k), both row-major
 * with leading dimensions past k, C's padding untouched; k up to 300, past the float32
 * panel's 256 (BLIS beyond it). On the tiles the float32 result equals alpha times one FMA
 * chain per element, bit for bit; everywhere it matches float64 plain loops to 1e-6
 * (float32) or 1e-14 (float64), relative to Σ|alpha·a·b| per element. */
static void products_with_bt(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("products_with_bt");
    const int tiles = la_avx512_usable();
    for (int round_ = 0; round_ < ROUNDS / 3; round_++) {
        const size_t m = (size_t)(tu_uniform(&r) * 20), n = (size_t)(tu_uniform(&r) * 70);
        const size_t k =
            round_ % 10 == 9 ? 257 + (size_t)(tu_uniform(&r) * 44) : (size_t)(tu_uniform(&r) * 70);
        const size_t lda = k + PAD, ldb = k + PAD, ldc = n + PAD;
        const double alpha = round_ % 2 ? 0.125 : 1.0;
        double *a = tu_f64((m + 1) * lda), *b = tu_f64((n + 1) * ldb);
        double *c = tu_f64((m + 1) * ldc);
        float *a32 = tu_f32((m + 1) * lda), *b32 = tu_f32((n + 1) * ldb);
        float *c32 = tu_f32((m + 1) * ldc);
        tu_fill_normal(&r, a, (m + 1) * lda, 1), tu_fill_normal(&r, b, (n + 1) * ldb, 1);
        tu_to_f32(a, a32, (m + 1) * lda), tu_to_f32(b, b32, (n + 1) * ldb);
        tu_to_f64(a32, a, (m + 1) * lda), tu_to_f64(b32, b, (n + 1) * ldb);
        for (size_t e = 0; e < (m + 1) * ldc; e++)
            c[e] = SENTINEL, c32[e] = (float)SENTINEL;
        la_gemm_small_abt_f64(m, n, k, alpha, a, (ptrdiff_t)lda, b, (ptrdiff_t)ldb, c,
                              (ptrdiff_t)ldc);
        la_gemm_small_abt_f32(m, n, k, (float)alpha, a32, (ptrdiff_t)lda, b32, (ptrdiff_t)ldb, c32,
                              (ptrdiff_t)ldc);
        for (size_t i = 0; i <= m; i++)
            for (size_t j = 0; j < ldc; j++) {
                const size_t e = i * ldc + j;
                if (i == m || j >= n) { /* outside the block */
                    if (c[e] != SENTINEL || c32[e] != (float)SENTINEL)
                        fail_msg("round %d (m %zu n %zu k %zu): C[%zu] outside the block written",
                                 round_, m, n, k, e);
                    continue;
                }
                double exact = 0, mag = 0;
                float chain = 0;
                for (size_t p = 0; p < k; p++) {
                    exact += a[i * lda + p] * b[j * ldb + p];
                    mag += fabs(a[i * lda + p] * b[j * ldb + p]);
                    chain = fmaf(a32[i * lda + p], b32[j * ldb + p], chain);
                }
                exact *= alpha, mag *= alpha;
                if (!(fabs(c[e] - exact) <= 1e-14 * mag))
                    fail_msg("round %d (m %zu n %zu k %zu) float64 C[%zu][%zu] = %.17g, want %.17g",
                             round_, m, n, k, i, j, c[e], exact);
                if (!(fabs((double)c32[e] - exact) <= 1e-6 * mag))
                    fail_msg("round %d (m %zu n %zu k %zu) float32 C[%zu][%zu] = %.9g, want %.9g",
                             round_, m, n, k, i, j, (double)c32[e], exact);
                if (tiles && k <= 256 && !(c32[e] == (float)alpha * chain))
                    fail_msg("round %d (m %zu n %zu k %zu): C[%zu][%zu] = %.9g, alpha times one "
                             "FMA chain gives %.9g",
                             round_, m, n, k, i, j, (double)c32[e], (double)((float)alpha * chain));
            }
        free(a), free(b), free(c), free(a32), free(b32), free(c32);
    }
}

int main(void)
{
    tu_init("test_gemm_small");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(float64_products),
        cmocka_unit_test(float32_products),
        cmocka_unit_test(other_alpha_beta_f64),
        cmocka_unit_test(products_with_bt),
    };
    const struct CMUnitTest shape_tests[] = {
        cmocka_unit_test(float32_products),
        cmocka_unit_test(products_with_bt),
    };
    /* the AVX-512 tiles where the CPU has them, and the BLIS path the others take */
    int failed = cmocka_run_group_tests_name("default path", tests, NULL, NULL);
    if (la_avx512_usable()) {
        /* every float32 tile shape (bitwise the same products: the FMA-chain checks) */
        const char *names[8];
        const int shapes = la_gemm_small_shapes(names, 8);
        printf("float32 tiles: %s\n", la_config().simd);
        /* the timing that picks a shape where the CPU does not settle it: it runs, and
         * names one of the shapes */
        const int timed = la_gemm_small_time_shapes();
        printf("timed fastest here: %s\n", timed >= 0 && timed < shapes ? names[timed] : "?");
        if (timed < 0 || timed >= shapes) failed++;
        for (int s = 0; s < shapes; s++) {
            char group[64];
            snprintf(group, sizeof group, "float32 tile %s", names[s]);
            la_gemm_small_use_shape(s);
            printf("%s\n", group);
            failed += cmocka_run_group_tests_name(group, shape_tests, NULL, NULL);
        }
        la_gemm_small_use_shape(-1);
        la_avx512_enable(false);
        failed += cmocka_run_group_tests_name("BLIS path", tests, NULL, NULL);
        la_avx512_enable(true);
    } else {
        printf("(the AVX-512 tiles do not run here, %s: the BLIS path only)\n", la_config().simd);
    }
    return failed != 0;
}

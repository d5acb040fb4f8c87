/* test_transpose.c — la_transpose_f32/_f64 (lib/cpu/transpose.c), the linear kernels'
 * block transpose: every element lands at its transposed place bit for bit, nothing
 * outside the destination block is written, on whole 16×16 blocks (the AVX-512 path),
 * their edges and shapes under 16, with row strides wider than the rows. */
#include "../testutil.h"
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One shape: src (rows, cols; row stride lds) of random bits, dst (cols, rows; row stride
 * ldd) filled with a sentinel first; checks every element and every gap. */
static int one_shape_f32(tu_rng *r, size_t rows, size_t cols, size_t lds, size_t ldd)
{
    float *src = tu_f32(rows * lds + 1), *dst = tu_f32(cols * ldd + 1);
    for (size_t i = 0; i < rows * lds; i++)
        src[i] = (float)tu_normal(r);
    const float sentinel = -12345.5f;
    for (size_t i = 0; i < cols * ldd; i++)
        dst[i] = sentinel;
    la_transpose_f32(rows, cols, src, lds, dst, ldd);
    int bad = 0;
    for (size_t c = 0; c < cols; c++)
        for (size_t x = 0; x < ldd; x++) {
            const float want = x < rows ? src[x * lds + c] : sentinel;
            if (memcmp(&dst[c * ldd + x], &want, sizeof want) != 0) bad++;
        }
    if (bad)
        printf("  f32 rows=%zu cols=%zu lds=%zu ldd=%zu: %d elements wrong (seed %llu)\n", rows,
               cols, lds, ldd, bad, (unsigned long long)tu_seed());
    free(src), free(dst);
    return bad;
}

static int one_shape_f64(tu_rng *r, size_t rows, size_t cols, size_t lds, size_t ldd)
{
    double *src = tu_f64(rows * lds + 1), *dst = tu_f64(cols * ldd + 1);
    for (size_t i = 0; i < rows * lds; i++)
        src[i] = tu_normal(r);
    for (size_t i = 0; i < cols * ldd; i++)
        dst[i] = -1;
    la_transpose_f64(rows, cols, src, lds, dst, ldd);
    int bad = 0;
    for (size_t c = 0; c < cols; c++)
        for (size_t x = 0; x < ldd; x++)
            bad += dst[c * ldd + x] != (x < rows ? src[x * lds + c] : -1);
    free(src), free(dst);
    return bad;
}

static void transposes_every_shape(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("transpose");
    const size_t sizes[] = {1, 3, 15, 16, 17, 31, 32, 33, 48, 64, 70};
    const size_t n = sizeof sizes / sizeof sizes[0];
    int bad = 0, shapes = 0;
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++) {
            const size_t rows = sizes[a], cols = sizes[b];
            const size_t lds = cols + tu_next(&r) % 3, ldd = rows + tu_next(&r) % 3;
            bad += one_shape_f32(&r, rows, cols, lds, ldd);
            bad += one_shape_f64(&r, rows, cols, lds, ldd);
            shapes++;
        }
    /* the chunked kernel's own shape: φ(K_c) (C, d_k) into φKᵀ with row stride C */
    bad += one_shape_f32(&r, 16, 64, 64, 16) + one_shape_f32(&r, 32, 128, 128, 32);
    printf("  %d shapes, float32 and float64, %d elements wrong\n", shapes + 2, bad);
    assert_int_equal(bad, 0);
}

int main(void)
{
    tu_init("test_transpose");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(transposes_every_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

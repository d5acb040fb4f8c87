/* test_state_restore.c — la_linear_state_restore refuses an image whose header is right
 * but whose data no stepping can reach: a NaN or an infinity in S or z, a negative z,
 * data at position 0, a position the next step would wrap to 0, FAVOR+'s running
 * maximum μ NaN or beyond what its features allow. Each refusal is LA_EINVAL and leaves
 * the state as it was (its saved image unchanged); the untouched image restores. States
 * are stepped on fresh random tokens (seed printed, LA_TEST_SEED replays). */
#include "../testutil.h"
#include "attention/kernels.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { H = 2, DK = 4, DV = 3, M = 8, TOKENS = 5 };

/* The saved header's size: the image is header then S, z (and μ) in the dtype; the
 * header's position field sits 40 bytes in (magic 8, dtype and φ 4 each, heads, d_k,
 * d_v 8 each). */
static size_t header_size(const la_linear_state *st, size_t elements, size_t es)
{
    return la_linear_state_save_size(st) - elements * es;
}
enum { POSITION_AT = 40 };

/* A state of TOKENS random steps, and its image. */
static la_linear_state *stepped(la_dtype dtype, int favor, const char *label, unsigned char **img,
                                size_t *n)
{
    la_linear_state *st = NULL;
    if (favor)
        assert_int_equal(la_favor_state_create(&st, dtype, H, DK, DV, M, 7, NULL, 1e-6), LA_OK);
    else
        assert_int_equal(
            la_linear_state_create_phi(&st, dtype, H, DK, DV, LA_FEATURE_ELU1, LA_DEFAULT_EPS),
            LA_OK);
    tu_rng r = tu_rng_for(label);
    double q[H * DK], k[H * DK], v[H * DV], y[H * DV];
    float qf[H * DK], kf[H * DK], vf[H * DV], yf[H * DV];
    for (int t = 0; t < TOKENS; t++) {
        tu_fill_normal(&r, q, H * DK, 1);
        tu_fill_normal(&r, k, H * DK, 1);
        tu_fill_normal(&r, v, H * DV, 1);
        if (dtype == LA_FLOAT32) {
            tu_to_f32(q, qf, H * DK), tu_to_f32(k, kf, H * DK), tu_to_f32(v, vf, H * DV);
            assert_int_equal(la_linear_step(st, qf, kf, vf, yf), LA_OK);
        } else {
            assert_int_equal(la_linear_step(st, q, k, v, y), LA_OK);
        }
    }
    *n = la_linear_state_save_size(st);
    *img = tu_alloc(*n);
    assert_int_equal(la_linear_state_save(st, *img, *n), LA_OK);
    return st;
}

static void put(unsigned char *data, la_dtype dtype, size_t i, double x)
{
    if (dtype == LA_FLOAT32) {
        float f = (float)x;
        memcpy(data + 4 * i, &f, 4);
    } else {
        memcpy(data + 8 * i, &x, 8);
    }
}

/* restore of a copy of img with element i set to x (or, i == SIZE_MAX, the position set
 * to x) is refused and leaves the state's image as img */
static void refused(la_linear_state *st, const unsigned char *img, size_t n, la_dtype dtype,
                    size_t elements, size_t i, double x, const char *what)
{
    const size_t es = dtype == LA_FLOAT32 ? 4 : 8, hdr = header_size(st, elements, es);
    unsigned char *bad = tu_alloc(n), *after = tu_alloc(n);
    memcpy(bad, img, n);
    if (i == SIZE_MAX) {
        uint64_t p = (uint64_t)x == 0 ? 0 : UINT64_MAX;
        memcpy(bad + POSITION_AT, &p, sizeof p);
    } else {
        put(bad + hdr, dtype, i, x);
    }
    la_status s = la_linear_state_restore(st, bad, n);
    if (s != LA_EINVAL) fail_msg("%s: restore gave %s, want LA_EINVAL", what, la_strerror(s));
    assert_int_equal(la_linear_state_save(st, after, n), LA_OK);
    if (memcmp(after, img, n) != 0) fail_msg("%s: the refused restore changed the state", what);
    free(bad);
    free(after);
}

static void linear_state(la_dtype dtype)
{
    unsigned char *img;
    size_t n;
    la_linear_state *st = stepped(dtype, 0, dtype == LA_FLOAT32 ? "lin32" : "lin64", &img, &n);
    const size_t s_n = H * DK * DV, z_n = H * DK, elements = s_n + z_n;
    assert_int_equal(la_linear_state_position(st), TOKENS);
    refused(st, img, n, dtype, elements, 1, NAN, "NaN in S");
    refused(st, img, n, dtype, elements, s_n - 1, -INFINITY, "-inf in S");
    refused(st, img, n, dtype, elements, s_n, INFINITY, "+inf in z");
    refused(st, img, n, dtype, elements, s_n + 1, -1, "negative z");
    refused(st, img, n, dtype, elements, SIZE_MAX, 1, "position 2^64 - 1");
    refused(st, img, n, dtype, elements, SIZE_MAX, 0, "data at position 0");
    /* the image itself restores, and the state then steps on */
    assert_int_equal(la_linear_state_restore(st, img, n), LA_OK);
    assert_int_equal(la_linear_state_position(st), TOKENS);
    la_linear_state_free(st);
    free(img);
}

static void favor_state(la_dtype dtype)
{
    unsigned char *img;
    size_t n;
    la_linear_state *st = stepped(dtype, 1, dtype == LA_FLOAT32 ? "fav32" : "fav64", &img, &n);
    const size_t s_n = H * M * DV, z_n = H * M, elements = s_n + z_n + H;
    refused(st, img, n, dtype, elements, s_n + z_n, NAN, "NaN in mu");
    refused(st, img, n, dtype, elements, s_n + z_n + 1, 1e30, "mu 1e30");
    refused(st, img, n, dtype, elements, s_n + 2, NAN, "NaN in S");
    refused(st, img, n, dtype, elements, SIZE_MAX, 1, "position 2^64 - 1");
    assert_int_equal(la_linear_state_restore(st, img, n), LA_OK);
    la_linear_state_free(st);
    free(img);
}

static void linear_f32(void **state)
{
    (void)state;
    linear_state(LA_FLOAT32);
}
static void linear_f64(void **state)
{
    (void)state;
    linear_state(LA_FLOAT64);
}
static void favor_f32(void **state)
{
    (void)state;
    favor_state(LA_FLOAT32);
}
static void favor_f64(void **state)
{
    (void)state;
    favor_state(LA_FLOAT64);
}

int main(void)
{
    tu_init("test_state_restore");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(linear_f32),
        cmocka_unit_test(linear_f64),
        cmocka_unit_test(favor_f32),
        cmocka_unit_test(favor_f64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

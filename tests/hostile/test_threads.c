/* test_threads.c — the library's thread rule (linattn.h, threads), the same at every
 * entry point: a count in 1..LA_MAX_THREADS is accepted, anything else refused with
 * LA_EINVAL and the setting untouched; a count above the online cores runs on the
 * cores, the count asked for kept; LA_NUM_THREADS follows the same rule; BLIS's
 * yardstick refuses what la_set_num_threads refuses and runs a huge count on the cores. */
#include "../testutil.h"
#include "attention/kernels.h"
#include "cpu/machine.h"

#include <omp.h>
#include <stdlib.h>

static int cores(void)
{
    return omp_get_num_procs() > 0 ? omp_get_num_procs() : 1;
}

/* Out-of-range counts are refused and leave the setting as it was. */
static void refuses_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(la_set_num_threads(1), LA_OK);
    const int bad[] = {-1, -1000, LA_MAX_THREADS + 1, 100000, 0x7fffffff};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(la_set_num_threads(bad[i]), LA_EINVAL);
        assert_int_equal(la_num_threads_requested(), 1);
        assert_int_equal(la_get_num_threads(), 1);
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
}

/* Above the cores: runs on the cores, the request kept for the record. */
static void clamps_to_the_cores(void **state)
{
    (void)state;
    assert_int_equal(la_set_num_threads(LA_MAX_THREADS), LA_OK);
    assert_int_equal(la_num_threads_requested(), LA_MAX_THREADS);
    assert_int_equal(la_get_num_threads(), cores() < LA_MAX_THREADS ? cores() : LA_MAX_THREADS);
    assert_int_equal(la_set_num_threads(cores()), LA_OK);
    assert_int_equal(la_get_num_threads(), cores());
    assert_int_equal(la_set_num_threads(0), LA_OK);
}

/* LA_NUM_THREADS: the same rule; an invalid value is refused by la_set_num_threads(0)
 * and never used (the default stays within the cores). */
static void environment_variable(void **state)
{
    (void)state;
    const char *bad[] = {"100000", "0", "-3", "abc", "4x", "1025"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("LA_NUM_THREADS", bad[i], 1);
        assert_int_equal(la_set_num_threads(0), LA_EINVAL);
        assert_in_range(la_get_num_threads(), 1, cores());
        assert_in_range(la_num_threads_requested(), 1, LA_MAX_THREADS);
    }
    setenv("LA_NUM_THREADS", "1024", 1);
    assert_int_equal(la_set_num_threads(0), LA_OK);
    assert_int_equal(la_num_threads_requested(), 1024);
    assert_in_range(la_get_num_threads(), 1, cores());
    setenv("LA_NUM_THREADS", "1", 1);
    assert_int_equal(la_get_num_threads(), 1);
    unsetenv("LA_NUM_THREADS");
    assert_int_equal(la_set_num_threads(0), LA_OK);
}

/* A kernel run on a clamped count gives the same output as on the cores. */
static void kernel_runs_clamped(void **state)
{
    (void)state;
    enum { N = 64, D = 8 };
    la_problem p;
    la_problem_init(&p, 1, 2, N, N, D, D);
    tu_rng r = tu_rng_for("threads");
    float *q = tu_f32(2 * N * D), *k = tu_f32(2 * N * D), *v = tu_f32(2 * N * D);
    float *a = tu_f32(2 * N * D), *b = tu_f32(2 * N * D);
    double *x = tu_f64(2 * N * D);
    tu_fill_normal(&r, x, 2 * N * D, 1), tu_to_f32(x, q, 2 * N * D);
    tu_fill_normal(&r, x, 2 * N * D, 1), tu_to_f32(x, k, 2 * N * D);
    tu_fill_normal(&r, x, 2 * N * D, 1), tu_to_f32(x, v, 2 * N * D);
    assert_int_equal(la_set_num_threads(LA_MAX_THREADS), LA_OK);
    assert_int_equal(la_softmax_attention_f32(&p, q, k, v, a), LA_OK);
    assert_int_equal(la_set_num_threads(cores()), LA_OK);
    assert_int_equal(la_softmax_attention_f32(&p, q, k, v, b), LA_OK);
    assert_memory_equal(a, b, sizeof(float) * 2 * N * D);
    assert_int_equal(la_set_num_threads(0), LA_OK);
    free(q), free(k), free(v), free(a), free(b), free(x);
}

/* BLIS's yardstick: the same cap (was passed to BLIS unclamped: a crash in libgomp). */
static void blis_sgemm_thread_rule(void **state)
{
    (void)state;
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4] = {0};
    assert_int_equal(la_blis_sgemm(0, 2, 2, 2, 1, a, 2, 1, b, 2, 1, 0, c, 2, 1), LA_EINVAL);
    assert_int_equal(la_blis_sgemm(LA_MAX_THREADS + 1, 2, 2, 2, 1, a, 2, 1, b, 2, 1, 0, c, 2, 1),
                     LA_EINVAL);
    assert_int_equal(la_blis_sgemm(LA_MAX_THREADS, 2, 2, 2, 1, a, 2, 1, b, 2, 1, 0, c, 2, 1),
                     LA_OK);
    assert_true(c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4);
}

int main(void)
{
    tu_init("test_threads");
    unsetenv("LA_NUM_THREADS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refuses_out_of_range),   cmocka_unit_test(clamps_to_the_cores),
        cmocka_unit_test(environment_variable),   cmocka_unit_test(kernel_runs_clamped),
        cmocka_unit_test(blis_sgemm_thread_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_reference.c — the float64 oracles against hand-worked cases, so the oracle the
 * other tests trust is itself checked against numbers a reader can verify. */
#include "../testutil.h"
#include "attention/kernels.h"

#include <math.h>
#include <stdio.h>

/* One query, two keys: weights softmax([1·1, 1·2]·scale) with scale 1, so
 * out = (e¹·v0 + e²·v1) / (e¹ + e²). */
static void softmax_two_keys(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 1, 2, 1, 1);
    p.scale = 1;
    double q[] = {1}, k[] = {1, 2}, v[] = {10, 20}, out[1];
    assert_int_equal(la_ref_softmax_attention(&p, q, k, v, out), LA_OK);
    double e1 = exp(1), e2 = exp(2);
    assert_true(fabs(out[0] - (e1 * 10 + e2 * 20) / (e1 + e2)) < 1e-13);
    /* causal: query 0 sees key 0 only */
    p.causal = 1;
    assert_int_equal(la_ref_softmax_attention(&p, q, k, v, out), LA_OK);
    assert_true(out[0] == 10);
}

/* Linear attention with φ = relu on a case worked by hand:
 * φ(q) = [1, 2], φ(k0) = [1, 0], φ(k1) = [0, 3], v0 = 5, v1 = 7:
 * num = 1·1·5 + 2·3·7 = 47, den = 1·1 + 2·3 = 7, out = 47 / (7 + eps). */
static void linear_by_hand(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 1, 2, 2, 1);
    p.feature_map = LA_FEATURE_RELU;
    p.eps = 0.5;
    double q[] = {1, 2}, k[] = {1, -4, -1, 3}, v[] = {5, 7}, out[1];
    assert_int_equal(la_ref_linear_attention(&p, q, k, v, out), LA_OK);
    assert_true(fabs(out[0] - 47 / 7.5) < 1e-14);
}

/* elu+1 without cancellation: exp(x) below zero, x + 1 above. */
static void elu_plus_one(void **state)
{
    (void)state;
    double x[] = {-30, -1, 0, 2.5}, y[4];
    la_ref_feature_map(LA_FEATURE_ELU1, x, y, 4);
    assert_true(y[0] == exp(-30) && y[0] > 0);
    assert_true(y[1] == exp(-1));
    assert_true(y[2] == 1 && y[3] == 3.5);
}

/* Hard attention: ties go to the lowest key; key lengths hide the rest. */
static void hard_ties_and_lengths(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 1, 3, 1, 1);
    double q[] = {1}, k[] = {2, 3, 3}, v[] = {1, 2, 3}, out[1];
    assert_int_equal(la_ref_hard_attention(&p, q, k, v, out), LA_OK);
    assert_true(out[0] == 2);
    int64_t len[] = {1};
    p.key_lengths = len;
    assert_int_equal(la_ref_hard_attention(&p, q, k, v, out), LA_OK);
    assert_true(out[0] == 1);
    len[0] = 0; /* nothing visible: zeros */
    assert_int_equal(la_ref_hard_attention(&p, q, k, v, out), LA_OK);
    assert_true(out[0] == 0);
}

/* The references' scratch sizes are overflow-checked: a problem whose arrays pass
 * la_problem_check but whose scratch does not fit size_t (softmax's N·M scores, linear's
 * (M + 1)·d_k·d_v prefix states, or their bytes) is refused with LA_EOVERFLOW before
 * anything is allocated or read. The inputs are one-element dummies: a reference that
 * allocated a wrapped size and filled it, or read q, would crash here. */
static void scratch_overflow(void **state)
{
    (void)state;
    const size_t two32 = (size_t)1 << 32, two31 = (size_t)1 << 31;
    const struct {
        size_t n, m, d_k, d_v;
        la_kernel kernel;
        const char *what;
    } cases[] = {
        {two32, two32, 1, 1, LA_KERNEL_SOFTMAX, "N·M = 2^64 wraps to 0 elements"},
        {two31, two31, 1, 1, LA_KERNEL_SOFTMAX, "N·M·8 = 2^65 wraps to 0 bytes"},
        {two32 + 1, two32 - 1, 1, 1, LA_KERNEL_SOFTMAX, "N·M = 2^64 - 1 (bytes wrap)"},
        {1, 1, two32, two32, LA_KERNEL_LINEAR, "(M + 1)·d_k·d_v = 2^65 wraps to 0"},
        {1, 1, two31, (size_t)1 << 30, LA_KERNEL_LINEAR, "(M + 1)·d_k·d_v·8 = 2^65 wraps"},
    };
    double q[1] = {0}, k[1] = {0}, v[1] = {0}, out[1];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int causal = 0; causal <= 1; causal++) {
            la_problem p;
            la_problem_init(&p, 1, 1, cases[c].n, cases[c].m, cases[c].d_k, cases[c].d_v);
            p.causal = causal;
            /* the arrays themselves are addressable: only the scratch overflows */
            assert_int_equal(la_problem_check(&p), LA_OK);
            la_status st = la_ref_attention(cases[c].kernel, &p, q, k, v, out);
            if (st != LA_EOVERFLOW)
                fail_msg("%s reference, N=%zu M=%zu d_k=%zu d_v=%zu causal=%d (%s): %s, "
                         "want LA_EOVERFLOW",
                         la_kernel_name(cases[c].kernel), cases[c].n, cases[c].m, cases[c].d_k,
                         cases[c].d_v, causal, cases[c].what, la_strerror(st));
        }
    }
}

int main(void)
{
    tu_init("test_reference");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_two_keys), cmocka_unit_test(linear_by_hand),
        cmocka_unit_test(elu_plus_one),     cmocka_unit_test(hard_ties_and_lengths),
        cmocka_unit_test(scratch_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

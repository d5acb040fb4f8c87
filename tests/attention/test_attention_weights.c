/* test_attention_weights.c — la_attention_weights, the N×M attention matrix,
 * for every kernel of the registry, every causal form its rule allows, key lengths
 * (one entry hiding every key), M < N and M > N, both feature maps and eps = 0:
 *   matches_reference   against a float64 reference written here as plain loops (the
 *                       weights' definitions, not the kernels' code): float64 1e-12,
 *                       float32 1e-5, hard attention exactly (inputs on a grid where
 *                       every score is exact, so every tie is a true tie);
 *   masked_and_rows     hidden entries exactly 0, a row that sees no key all 0, every
 *                       other softmax and hard row sums to 1 (linear: to (den − eps)/den,
 *                       so to 1 at eps = 0);
 *   times_v_is_forward  A·V (float64 product) equals the kernel's own forward output;
 *   threads_bitwise     1 and 3 threads give the same bits.
 * Replay a failure with LA_TEST_SEED=<the printed seed>. */
#include "../testutil.h"
#include "attention/row.h" /* the rows' entry points */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ cases */

typedef struct {
    size_t batch, heads, n, m, d_k, d_v;
    bool lengths; /* key lengths {M, 0, M/2, ...}: entry 1 sees no key */
} shape;

static const shape shapes[] = {
    {2, 3, 37, 37, 8, 5, false},
    {3, 2, 70, 45, 16, 16, true}, /* M < N: a causal query i >= M sees every key */
    {1, 1, 33, 130, 4, 3, false}, /* M > N: keys past N are hidden from causal rows */
    {3, 1, 65, 65, 32, 8, true},  /* more rows than one task (64) */
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

typedef struct {
    la_kernel kernel;
    int causal;
    const shape *s;
    la_feature_map fm;
    double eps;
    int64_t lengths[4];
} wcase;

/* Kernels whose weights la_attention_weights does not give (LA_EINVAL: their rows'
 * weights_f32 is NULL): skipped by the properties, checked to refuse in
 * errors_leave_output. */
static bool without_weights(la_kernel kernel)
{
    return !la_kernel_get(kernel)->fns->weights_f32;
}

static bool reads(la_kernel kernel, unsigned param)
{
    return (la_kernel_get(kernel)->params & param) != 0;
}

static void problem_of(const wcase *c, la_problem *p)
{
    const shape *s = c->s;
    la_problem_init(p, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v);
    p->causal = c->causal;
    p->feature_map = c->fm;
    p->eps = c->eps;
    p->key_lengths = s->lengths ? c->lengths : NULL;
}

static void describe(const wcase *c, char *buf, size_t size)
{
    snprintf(buf, size, "%s%s B=%zu H=%zu N=%zu M=%zu d_k=%zu%s φ=%s eps=%g",
             la_kernel_name(c->kernel), c->causal ? " causal" : "", c->s->batch, c->s->heads,
             c->s->n, c->s->m, c->s->d_k, c->s->lengths ? " key lengths" : "",
             la_feature_map_name(c->fm), c->eps);
}

/* Calls fn on every case: kernels × causal forms × shapes × (φ, eps) where read. */
static void for_each_case(void (*fn)(const wcase *))
{
    for (int kn = 0; kn < LA_KERNEL_COUNT; kn++) {
        const la_kernel kernel = (la_kernel)kn;
        const la_kernel_info *info = la_kernel_get(kernel);
        if (without_weights(kernel)) continue;
        for (int causal = 0; causal <= 1; causal++) {
            if ((info->causal == LA_CAUSAL_REQUIRED && !causal) ||
                (info->causal == LA_CAUSAL_REFUSED && causal))
                continue;
            for (size_t si = 0; si < N_SHAPES; si++) {
                const int n_fm = reads(kernel, LA_PARAM_FEATURE_MAP) ? 2 : 1;
                for (int f = 0; f < n_fm; f++) {
                    const int n_eps = reads(kernel, LA_PARAM_EPS) ? 2 : 1;
                    for (int e = 0; e < n_eps; e++) {
                        wcase c = {kernel,
                                   causal,
                                   &shapes[si],
                                   f ? LA_FEATURE_RELU : LA_FEATURE_ELU1,
                                   e ? 0.0 : LA_DEFAULT_EPS,
                                   {0}};
                        const size_t m = shapes[si].m;
                        const int64_t lengths[4] = {(int64_t)m, 0, (int64_t)(m / 2), 1};
                        memcpy(c.lengths, lengths, sizeof lengths);
                        fn(&c);
                    }
                }
            }
        }
    }
}

/* ------------------------------------------------------------------ inputs */

typedef struct {
    size_t nq, nk, nv, nw, no;
    double *q, *k, *v;
    float *q32, *k32, *v32;
} inputs;

/* Normal inputs; for hard attention multiples of 1/8 in [-3.125, 3.125] with scale 1/8
 * set by the caller, so every score is exact in float32 and ties are true ties. For
 * relu, some queries are made all negative so that φ(q_i) = 0 (a zero denominator at
 * eps = 0). */
static void make_inputs(const wcase *c, inputs *in)
{
    const shape *s = c->s;
    const size_t heads = s->batch * s->heads;
    in->nq = heads * s->n * s->d_k, in->nk = heads * s->m * s->d_k, in->nv = heads * s->m * s->d_v;
    in->nw = heads * s->n * s->m, in->no = heads * s->n * s->d_v;
    in->q = tu_f64(in->nq), in->k = tu_f64(in->nk), in->v = tu_f64(in->nv);
    char label[160];
    describe(c, label, sizeof label);
    tu_rng r = tu_rng_for(label);
    tu_fill_normal(&r, in->q, in->nq, 1.0);
    tu_fill_normal(&r, in->k, in->nk, 1.0);
    tu_fill_normal(&r, in->v, in->nv, 1.0);
    if (c->kernel == LA_KERNEL_HARD) {
        for (size_t i = 0; i < in->nq; i++)
            in->q[i] = fmax(-3.125, fmin(3.125, round(in->q[i] * 8) / 8));
        for (size_t i = 0; i < in->nk; i++)
            in->k[i] = fmax(-3.125, fmin(3.125, round(in->k[i] * 4) / 8)); /* ties happen */
    }
    if (c->fm == LA_FEATURE_RELU)
        for (size_t i = 0; i < in->nq / s->d_k; i += 5)
            for (size_t a = 0; a < s->d_k; a++)
                in->q[i * s->d_k + a] = -fabs(in->q[i * s->d_k + a]);
    in->q32 = tu_f32(in->nq), in->k32 = tu_f32(in->nk), in->v32 = tu_f32(in->nv);
    tu_to_f32(in->q, in->q32, in->nq);
    tu_to_f32(in->k, in->k32, in->nk);
    tu_to_f32(in->v, in->v32, in->nv);
    /* the float64 inputs hold exactly the float32 values */
    tu_to_f64(in->q32, in->q, in->nq);
    tu_to_f64(in->k32, in->k, in->nk);
    tu_to_f64(in->v32, in->v, in->nv);
}

static void free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->q32), free(in->k32), free(in->v32);
}

/* The window of a row that reads one (local): narrower than every shape. */
static const la_local_params narrow = {{LA_PARAMS_LOCAL, NULL}, 7};

static void setup_problem(const wcase *c, la_problem *p)
{
    problem_of(c, p);
    if (c->kernel == LA_KERNEL_HARD) p->scale = 0.125;
    if (reads(c->kernel, LA_PARAM_WINDOW)) p->params = &narrow.head;
}

/* ------------------------------------------------------------------ the reference */

/* Key j visible to query i: the masks, and for a row that reads a window (local) the
 * window |i − j| <= narrow.window (setup_problem's block). */
static bool visible(la_kernel kernel, const la_problem *p, size_t b, size_t i, size_t j)
{
    if (p->key_lengths && (int64_t)j >= p->key_lengths[b]) return false;
    if (reads(kernel, LA_PARAM_WINDOW) && (i > j ? i - j : j - i) > narrow.window) return false;
    return !p->causal || j <= i;
}

static double phi(la_feature_map fm, double x)
{
    if (fm == LA_FEATURE_RELU) return x > 0 ? x : 0;
    return x >= 0 ? x + 1 : exp(x);
}

/* The weights by their definitions, one entry at a time. w: (B, H, N, M). */
static void reference_weights(la_kernel kernel, const la_problem *p, const double *q,
                              const double *k, double *w)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k;
    double *row = tu_f64(M);
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++) {
            const size_t head = b * p->heads + h;
            const double *qh = q + head * N * dk, *kh = k + head * M * dk;
            for (size_t i = 0; i < N; i++) {
                double *wrow = w + (head * N + i) * M;
                size_t n_visible = 0;
                for (size_t j = 0; j < M; j++) {
                    wrow[j] = 0;
                    row[j] = 0;
                    if (!visible(kernel, p, b, i, j)) continue;
                    n_visible++;
                    for (size_t a = 0; a < dk; a++)
                        row[j] += kernel == LA_KERNEL_LINEAR || kernel == LA_KERNEL_LINEAR_RECURRENT
                                      ? phi(p->feature_map, qh[i * dk + a]) *
                                            phi(p->feature_map, kh[j * dk + a])
                                      : qh[i * dk + a] * kh[j * dk + a] * p->scale;
                }
                if (n_visible == 0) continue;
                if (kernel == LA_KERNEL_HARD) {
                    size_t best = M;
                    for (size_t j = 0; j < M; j++)
                        if (visible(kernel, p, b, i, j) && (best == M || row[j] > row[best]))
                            best = j;
                    wrow[best] = 1;
                } else if (kernel == LA_KERNEL_LINEAR || kernel == LA_KERNEL_LINEAR_RECURRENT) {
                    double den = p->eps;
                    for (size_t j = 0; j < M; j++)
                        den += row[j];
                    if (den != 0)
                        for (size_t j = 0; j < M; j++)
                            wrow[j] = row[j] / den;
                } else {
                    double mx = -INFINITY, sum = 0;
                    for (size_t j = 0; j < M; j++)
                        if (visible(kernel, p, b, i, j) && row[j] > mx) mx = row[j];
                    for (size_t j = 0; j < M; j++)
                        if (visible(kernel, p, b, i, j)) sum += exp(row[j] - mx);
                    for (size_t j = 0; j < M; j++)
                        if (visible(kernel, p, b, i, j)) wrow[j] = exp(row[j] - mx) / sum;
                }
            }
        }
    free(row);
}

/* ------------------------------------------------------------------ properties */

static int failures;

static void note_failure(const wcase *c, const char *what)
{
    char d[160];
    describe(c, d, sizeof d);
    print_error("%s: %s (seed %llu)\n", d, what, (unsigned long long)tu_seed());
    failures++;
}

static void check_matches_reference(const wcase *c)
{
    inputs in;
    make_inputs(c, &in);
    la_problem p;
    setup_problem(c, &p);
    double *ref = tu_f64(in.nw), *w64 = tu_f64(in.nw);
    float *w32 = tu_f32(in.nw);
    reference_weights(c->kernel, &p, in.q, in.k, ref);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT64, in.q, in.k, w64), LA_OK);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT32, in.q32, in.k32, w32), LA_OK);
    char d[160];
    describe(c, d, sizeof d);
    if (c->kernel == LA_KERNEL_HARD) {
        for (size_t i = 0; i < in.nw; i++)
            if (w64[i] != ref[i] || (double)w32[i] != ref[i]) {
                note_failure(c, "hard weights differ from the reference's argmax");
                break;
            }
    } else {
        tu_assert_close_f64(w64, ref, in.nw, 1e-12, "%s float64", d);
        tu_assert_close_f32(w32, ref, in.nw, 1e-5, "%s float32", d);
    }
    free(ref), free(w64), free(w32);
    free_inputs(&in);
}

static void check_masked_and_rows(const wcase *c)
{
    inputs in;
    make_inputs(c, &in);
    la_problem p;
    setup_problem(c, &p);
    double *w64 = tu_f64(in.nw);
    float *w32 = tu_f32(in.nw);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT64, in.q, in.k, w64), LA_OK);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT32, in.q32, in.k32, w32), LA_OK);
    const bool linear = c->kernel == LA_KERNEL_LINEAR || c->kernel == LA_KERNEL_LINEAR_RECURRENT;
    const size_t N = p.n_queries, M = p.n_keys;
    for (size_t b = 0; b < p.batch; b++)
        for (size_t h = 0; h < p.heads; h++)
            for (size_t i = 0; i < N; i++) {
                const size_t at = ((b * p.heads + h) * N + i) * M;
                double sum64 = 0, sum32 = 0;
                size_t n_visible = 0;
                for (size_t j = 0; j < M; j++) {
                    if (!visible(c->kernel, &p, b, i, j)) {
                        if (w64[at + j] != 0 || w32[at + j] != 0 || signbit(w64[at + j]) ||
                            signbit(w32[at + j])) {
                            note_failure(c, "a hidden entry is not exactly +0");
                            goto done;
                        }
                        continue;
                    }
                    n_visible++;
                    if (!(w64[at + j] >= 0 && w64[at + j] <= 1 && w32[at + j] >= 0 &&
                          w32[at + j] <= 1)) {
                        note_failure(c, "a weight outside [0, 1] (or NaN)");
                        goto done;
                    }
                    sum64 += w64[at + j], sum32 += w32[at + j];
                }
                if (n_visible == 0) {
                    if (sum64 != 0 || sum32 != 0) note_failure(c, "an empty row is not zero");
                    continue;
                }
                /* linear rows sum to (den − eps)/den: 1 at eps = 0 unless den = 0 */
                if (linear && (c->eps != 0 || sum64 == 0)) continue;
                if (fabs(sum64 - 1) > 1e-12 || fabs(sum32 - 1) > 1e-5) {
                    note_failure(c, "a row with visible keys does not sum to 1");
                    goto done;
                }
            }
done:
    free(w64), free(w32);
    free_inputs(&in);
}

/* out = A·V per head, in float64 */
static void weights_times_v(const la_problem *p, const double *w, const double *v, double *out)
{
    const size_t N = p->n_queries, M = p->n_keys, dv = p->d_v;
    for (size_t head = 0; head < p->batch * p->heads; head++)
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < dv; c++) {
                double acc = 0;
                for (size_t j = 0; j < M; j++)
                    acc += w[(head * N + i) * M + j] * v[(head * M + j) * dv + c];
                out[(head * N + i) * dv + c] = acc;
            }
}

static void check_times_v_is_forward(const wcase *c)
{
    inputs in;
    make_inputs(c, &in);
    la_problem p;
    setup_problem(c, &p);
    double *w64 = tu_f64(in.nw), *av = tu_f64(in.no), *y64 = tu_f64(in.no), *w32d = tu_f64(in.nw);
    float *w32 = tu_f32(in.nw), *y32 = tu_f32(in.no);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT64, in.q, in.k, w64), LA_OK);
    assert_int_equal(la_attention(c->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, y64), LA_OK);
    char d[160];
    describe(c, d, sizeof d);
    weights_times_v(&p, w64, in.v, av);
    tu_assert_close_f64(av, y64, in.no, 1e-12, "%s float64: A·V against the kernel", d);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT32, in.q32, in.k32, w32), LA_OK);
    assert_int_equal(la_attention(c->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, y32), LA_OK);
    tu_to_f64(w32, w32d, in.nw);
    weights_times_v(&p, w32d, in.v, av);
    tu_assert_close_f32(y32, av, in.no, 1e-5, "%s float32: the kernel against A·V", d);
    free(w64), free(av), free(y64), free(w32d), free(w32), free(y32);
    free_inputs(&in);
}

static void check_threads_bitwise(const wcase *c)
{
    inputs in;
    make_inputs(c, &in);
    la_problem p;
    setup_problem(c, &p);
    float *one = tu_f32(in.nw), *three = tu_f32(in.nw);
    assert_int_equal(la_set_num_threads(1), LA_OK);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT32, in.q32, in.k32, one), LA_OK);
    assert_int_equal(la_set_num_threads(3), LA_OK);
    assert_int_equal(la_attention_weights(c->kernel, &p, LA_FLOAT32, in.q32, in.k32, three), LA_OK);
    assert_int_equal(la_set_num_threads(1), LA_OK);
    if (memcmp(one, three, in.nw * sizeof *one) != 0)
        note_failure(c, "1 and 3 threads give different bits");
    free(one), free(three);
    free_inputs(&in);
}

static void run_property(void (*fn)(const wcase *))
{
    failures = 0;
    for_each_case(fn);
    assert_int_equal(failures, 0);
}

static void matches_reference(void **state)
{
    (void)state;
    run_property(check_matches_reference);
}
static void masked_and_rows(void **state)
{
    (void)state;
    run_property(check_masked_and_rows);
}
static void times_v_is_forward(void **state)
{
    (void)state;
    run_property(check_times_v_is_forward);
}
static void threads_bitwise(void **state)
{
    (void)state;
    run_property(check_threads_bitwise);
}

/* Errors return their status and leave out untouched: a budget too small for linear
 * attention's φ(K), values beyond float32's range, a causal rule refused, a kernel
 * without weights. */
static void errors_leave_output(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 4, 4, 2, 2);
    float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, k[8] = {1, 0, 0, 1, 1, 1, 2, 2}, w[16];
    memset(w, 0x5a, sizeof w);
    la_problem tight = p;
    tight.workspace_limit = 8;
    assert_int_equal(la_attention_weights(LA_KERNEL_LINEAR, &tight, LA_FLOAT32, q, k, w),
                     LA_EBUDGET);
    /* softmax needs no scratch: it runs under any limit */
    assert_int_equal(la_attention_weights(LA_KERNEL_SOFTMAX, &tight, LA_FLOAT32, q, k, w), LA_OK);
    memset(w, 0x5a, sizeof w);
    float huge[8] = {1e20f, 1e20f, 1e20f, 1e20f, 1e20f, 1e20f, 1e20f, 1e20f};
    assert_int_equal(la_attention_weights(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, huge, huge, w),
                     LA_ERANGE);
    assert_int_equal(la_attention_weights(LA_KERNEL_LINEAR, &p, LA_FLOAT32, huge, huge, w),
                     LA_ERANGE);
    assert_int_equal(la_attention_weights(LA_KERNEL_LINEAR_RECURRENT, &p, LA_FLOAT32, q, k, w),
                     LA_EINVAL);
    /* kernels without weights refuse */
    for (int kn = 0; kn < LA_KERNEL_COUNT; kn++)
        if (without_weights((la_kernel)kn))
            assert_int_equal(la_attention_weights((la_kernel)kn, &p, LA_FLOAT32, q, k, w),
                             LA_EINVAL);
    for (size_t i = 0; i < sizeof w; i++)
        assert_int_equal(((unsigned char *)w)[i], 0x5a);
    /* float64 computes what float32 refuses */
    double hq[8], dw[16];
    for (int i = 0; i < 8; i++)
        hq[i] = 1e20;
    assert_int_equal(la_attention_weights(LA_KERNEL_SOFTMAX, &p, LA_FLOAT64, hq, hq, dw), LA_OK);
    assert_true(tu_all_finite_f64(dw, 16));
}

int main(void)
{
    tu_init("test_attention_weights");
    la_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_reference),   cmocka_unit_test(masked_and_rows),
        cmocka_unit_test(times_v_is_forward),  cmocka_unit_test(threads_bitwise),
        cmocka_unit_test(errors_leave_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_linformer.c — Linformer attention (la_linformer_attention_*) beyond what the harness
 * (test_attention.c) checks of every row: shapes past one key block, ranks 1 and M, given and
 * drawn projections against the float64 reference; with k = M and E = F = I it is softmax
 * attention; given projections equal to the drawn ones give the drawn output bit for bit; the
 * seeded draw itself (deterministic, N(0, 1/k)); key lengths equal projecting only the visible
 * keys; and the refusals (k > M, k = 0, causal, one projection, a non-finite projection, range). */
#include "../testutil.h"
#include "attention/kernels.h"

#include "core/internal.h"   /* la_avx512_enable */
#include "cpu/simd_avx512.h" /* la_avx512_usable */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One problem's inputs in both precisions (the float64 copies hold the float32 values). */
typedef struct {
    size_t nq, nk, nv, no;
    double *q, *k, *v, *out, *ref;
    float *q32, *k32, *v32, *out32;
} io;

static io io_make(const la_problem *p, tu_rng *r)
{
    io x;
    const size_t heads = p->batch * p->heads;
    x.nq = heads * p->n_queries * p->d_k, x.nk = heads * p->n_keys * p->d_k;
    x.nv = heads * p->n_keys * p->d_v, x.no = heads * p->n_queries * p->d_v;
    x.q = tu_f64(x.nq), x.k = tu_f64(x.nk), x.v = tu_f64(x.nv);
    x.out = tu_f64(x.no), x.ref = tu_f64(x.no);
    x.q32 = tu_f32(x.nq), x.k32 = tu_f32(x.nk), x.v32 = tu_f32(x.nv), x.out32 = tu_f32(x.no);
    tu_fill_normal(r, x.q, x.nq, 1);
    tu_fill_normal(r, x.k, x.nk, 1);
    tu_fill_normal(r, x.v, x.nv, 1);
    tu_to_f32(x.q, x.q32, x.nq), tu_to_f32(x.k, x.k32, x.nk), tu_to_f32(x.v, x.v32, x.nv);
    tu_to_f64(x.q32, x.q, x.nq), tu_to_f64(x.k32, x.k, x.nk), tu_to_f64(x.v32, x.v, x.nv);
    return x;
}

static void io_free(io *x)
{
    free(x->q), free(x->k), free(x->v), free(x->out), free(x->ref);
    free(x->q32), free(x->k32), free(x->v32), free(x->out32);
}

/* Both precisions against the reference on p: float64 1e-12, float32 1e-5. */
static void check_against_reference(const la_problem *p, tu_rng *r, const char *what)
{
    io x = io_make(p, r);
    assert_int_equal(la_ref_linformer_attention(p, x.q, x.k, x.v, x.ref), LA_OK);
    assert_int_equal(la_linformer_attention_f64(p, x.q, x.k, x.v, x.out), LA_OK);
    tu_assert_close_f64(x.out, x.ref, x.no, 1e-12, "%s, float64", what);
    assert_int_equal(la_linformer_attention_f32(p, x.q32, x.k32, x.v32, x.out32), LA_OK);
    tu_assert_close_f32(x.out32, x.ref, x.no, 1e-5, "%s, float32", what);
    io_free(&x);
}

/* Shapes past one key block (256) and one query block, ranks 1, a few and M, drawn and
 * given projections, with and without key lengths (one of them 0). */
static void matches_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("matches_reference");
    const struct {
        size_t batch, heads, n, m, dk, dv, rank;
    } shapes[] = {
        {1, 1, 1, 1, 1, 1, 1},       {2, 3, 17, 9, 4, 5, 3},        {1, 2, 70, 300, 16, 8, 1},
        {2, 1, 65, 300, 8, 16, 300}, {1, 1, 130, 520, 32, 32, 260}, {3, 2, 9, 40, 3, 7, 40},
    };
    int64_t lengths[3];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int given = 0; given <= 1; given++) {
            for (int with_lengths = 0; with_lengths <= 1; with_lengths++) {
                la_problem p;
                la_problem_init(&p, shapes[s].batch, shapes[s].heads, shapes[s].n, shapes[s].m,
                                shapes[s].dk, shapes[s].dv);
                la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
                p.params = &lin.head;
                lin.proj_rank = shapes[s].rank;
                lin.seed = tu_next(&r);
                double *e = NULL;
                if (given) {
                    e = tu_f64(2 * lin.proj_rank * p.n_keys);
                    tu_fill_normal(&r, e, 2 * lin.proj_rank * p.n_keys, 0.3);
                    lin.proj_e = e, lin.proj_f = e + lin.proj_rank * p.n_keys;
                }
                if (with_lengths) {
                    for (size_t b = 0; b < p.batch; b++)
                        lengths[b] = (int64_t)(tu_next(&r) % (p.n_keys + 1));
                    lengths[0] = p.batch > 1 ? 0 : lengths[0];
                    p.key_lengths = lengths;
                }
                char what[160];
                snprintf(what, sizeof what, "shape %zu, k=%zu, %s projections%s", s, lin.proj_rank,
                         given ? "given" : "drawn", with_lengths ? ", key lengths" : "");
                check_against_reference(&p, &r, what);
                free(e);
            }
        }
    }
}

/* k = M with E = F = I: K' = K, V' = V, so the output is softmax attention's, to rounding
 * (float64 1e-14: the same fused kernel on exactly K and V, only the identity products
 * between; float32 bit for bit, as 1·x + 0·y is exact). */
static void identity_is_softmax(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("identity_is_softmax");
    const size_t ms[] = {1, 7, 64, 300};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        la_problem p;
        la_problem_init(&p, 2, 2, 33, ms[i], 8, 5);
        la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
        p.params = &lin.head;
        lin.proj_rank = ms[i];
        double *eye = tu_f64(ms[i] * ms[i]);
        memset(eye, 0, ms[i] * ms[i] * sizeof *eye);
        for (size_t j = 0; j < ms[i]; j++)
            eye[j * ms[i] + j] = 1;
        lin.proj_e = lin.proj_f = eye;
        io x = io_make(&p, &r);
        float *soft32 = tu_f32(x.no);
        assert_int_equal(la_softmax_attention_f64(&p, x.q, x.k, x.v, x.ref), LA_OK);
        assert_int_equal(la_linformer_attention_f64(&p, x.q, x.k, x.v, x.out), LA_OK);
        tu_assert_close_f64(x.out, x.ref, x.no, 1e-14, "M = k = %zu, float64", ms[i]);
        assert_int_equal(la_softmax_attention_f32(&p, x.q32, x.k32, x.v32, soft32), LA_OK);
        assert_int_equal(la_linformer_attention_f32(&p, x.q32, x.k32, x.v32, x.out32), LA_OK);
        assert_memory_equal(x.out32, soft32, x.no * sizeof *soft32);
        free(soft32);
        free(eye);
        io_free(&x);
    }
}

/* The projections la_linformer_projections draws, given as E and F, give the drawn
 * output bit for bit in both precisions; another seed gives another output. */
static void given_equals_drawn(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("given_equals_drawn");
    la_problem p;
    la_problem_init(&p, 2, 3, 40, 90, 8, 6);
    la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
    p.params = &lin.head;
    lin.proj_rank = 20;
    lin.seed = tu_next(&r);
    io x = io_make(&p, &r);
    double *ef = tu_f64(2 * lin.proj_rank * p.n_keys), *y64 = tu_f64(x.no);
    float *y32 = tu_f32(x.no);
    assert_int_equal(la_linformer_projections(lin.proj_rank, p.n_keys, lin.seed, ef,
                                              ef + lin.proj_rank * p.n_keys),
                     LA_OK);
    assert_int_equal(la_linformer_attention_f64(&p, x.q, x.k, x.v, x.out), LA_OK);
    assert_int_equal(la_linformer_attention_f32(&p, x.q32, x.k32, x.v32, x.out32), LA_OK);
    la_problem given = p;
    la_linformer_params given_lin = lin;
    given_lin.proj_e = ef, given_lin.proj_f = ef + lin.proj_rank * p.n_keys;
    given.params = &given_lin.head;
    assert_int_equal(la_linformer_attention_f64(&given, x.q, x.k, x.v, y64), LA_OK);
    assert_int_equal(la_linformer_attention_f32(&given, x.q32, x.k32, x.v32, y32), LA_OK);
    assert_memory_equal(y64, x.out, x.no * sizeof *y64);
    assert_memory_equal(y32, x.out32, x.no * sizeof *y32);
    /* the workspace with given projections (no copy of them in either precision, only a
     * block of PROJ_KEYS columns per thread, drawn ones as well): at the cost model's bytes
     * the call runs, one byte under it is refused */
    for (int dtype = LA_FLOAT32; dtype <= LA_FLOAT64; dtype++) {
        la_cost cost, drawn_cost;
        assert_int_equal(la_attention_cost(LA_KERNEL_LINFORMER, &given, (la_dtype)dtype, &cost),
                         LA_OK);
        assert_int_equal(la_attention_cost(LA_KERNEL_LINFORMER, &p, (la_dtype)dtype, &drawn_cost),
                         LA_OK);
        const double copy = 2.0 * (double)(lin.proj_rank * p.n_keys) * (dtype ? 8 : 4);
        assert_true(drawn_cost.workspace_bytes - cost.workspace_bytes == copy);
        la_problem at = given;
        at.workspace_limit = (size_t)cost.workspace_bytes;
        la_status ok = dtype ? la_linformer_attention_f64(&at, x.q, x.k, x.v, y64)
                             : la_linformer_attention_f32(&at, x.q32, x.k32, x.v32, y32);
        at.workspace_limit--;
        la_status refused = dtype ? la_linformer_attention_f64(&at, x.q, x.k, x.v, y64)
                                  : la_linformer_attention_f32(&at, x.q32, x.k32, x.v32, y32);
        if (ok != LA_OK || refused != LA_EBUDGET)
            fail_msg("given projections, %s: at the model's %.0f bytes %s, one under %s",
                     dtype ? "float64" : "float32", cost.workspace_bytes, la_strerror(ok),
                     la_strerror(refused));
    }
    /* another seed: another draw, another output */
    la_problem other = p;
    la_linformer_params other_lin = lin;
    other_lin.seed = lin.seed + 1;
    other.params = &other_lin.head;
    assert_int_equal(la_linformer_attention_f64(&other, x.q, x.k, x.v, y64), LA_OK);
    assert_true(tu_rel_error_f64(y64, x.out, x.no, NULL) > 1e-3);
    free(ef), free(y64), free(y32);
    io_free(&x);
}

/* The draw: the same seed the same matrices, another seed others; entries N(0, 1/k):
 * mean within 5 standard errors of 0 and k·variance within 5% of 1 over 2·64·512 entries
 * (its standard error there is 0.6%); E and F differ. */
static void projections_draw(void **state)
{
    (void)state;
    const size_t k = 64, m = 512, n = k * m;
    double *a = tu_f64(2 * n), *b = tu_f64(2 * n);
    const uint64_t seed = tu_seed();
    assert_int_equal(la_linformer_projections(k, m, seed, a, a + n), LA_OK);
    assert_int_equal(la_linformer_projections(k, m, seed, b, b + n), LA_OK);
    assert_memory_equal(a, b, 2 * n * sizeof *a);
    assert_int_equal(la_linformer_projections(k, m, seed ^ 1, b, b + n), LA_OK);
    assert_memory_not_equal(a, b, n * sizeof *a);
    assert_memory_not_equal(a, a + n, n * sizeof *a);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        assert_true(isfinite(a[i]));
        sum += a[i];
        sq += a[i] * a[i];
    }
    const double mean = sum / (double)(2 * n), var = sq / (double)(2 * n) - mean * mean;
    const double se = sqrt(1.0 / (double)k / (double)(2 * n));
    if (!(fabs(mean) < 5 * se) || !(fabs(var * (double)k - 1) < 0.05))
        fail_msg("draw of seed %llu: mean %.3g (standard error %.3g), k·variance %.4f",
                 (unsigned long long)seed, mean, se, var * (double)k);
    /* errors: nothing written */
    b[0] = 7;
    assert_int_equal(la_linformer_projections(0, m, seed, b, b + n), LA_EINVAL);
    assert_int_equal(la_linformer_projections(k, 0, seed, b, b + n), LA_EINVAL);
    assert_int_equal(la_linformer_projections(k, m, seed, NULL, b + n), LA_EINVAL);
    assert_int_equal(la_linformer_projections(k, m, seed, b, NULL), LA_EINVAL);
    assert_int_equal(la_linformer_projections(k, m, seed, b, b), LA_EINVAL);
    assert_int_equal(la_linformer_projections(SIZE_MAX / 2, 3, seed, b, b + n), LA_EOVERFLOW);
    assert_true(b[0] == 7);
    free(a), free(b);
}

/* A key length L_b equals projecting only the visible keys: the kernel on (M keys, L_b
 * visible) against the reference on the first L_b keys with E[:, :L_b], F[:, :L_b]. */
static void key_lengths_project_visible_keys(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("key_lengths_project_visible_keys");
    const size_t M = 50, L = 23, rank = 10;
    la_problem p;
    la_problem_init(&p, 1, 2, 19, M, 6, 4);
    la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
    p.params = &lin.head;
    lin.proj_rank = rank;
    const int64_t length = (int64_t)L;
    p.key_lengths = &length;
    double *ef = tu_f64(2 * rank * M);
    tu_fill_normal(&r, ef, 2 * rank * M, 0.3);
    lin.proj_e = ef, lin.proj_f = ef + rank * M;
    io x = io_make(&p, &r);
    assert_int_equal(la_linformer_attention_f64(&p, x.q, x.k, x.v, x.out), LA_OK);
    /* the truncated problem: the first L keys of each head, the first L columns */
    la_problem t;
    la_problem_init(&t, 1, 2, 19, L, 6, 4);
    la_linformer_params t_lin = LA_LINFORMER_PARAMS_INIT;
    t.params = &t_lin.head;
    t_lin.proj_rank = rank;
    double *et = tu_f64(2 * rank * L), *kt = tu_f64(2 * L * 6), *vt = tu_f64(2 * L * 4);
    for (size_t a = 0; a < 2 * rank; a++)
        memcpy(et + a * L, ef + a * M, L * sizeof *et);
    for (size_t h = 0; h < 2; h++) {
        memcpy(kt + h * L * 6, x.k + h * M * 6, L * 6 * sizeof *kt);
        memcpy(vt + h * L * 4, x.v + h * M * 4, L * 4 * sizeof *vt);
    }
    t_lin.proj_e = et, t_lin.proj_f = et + rank * L;
    assert_int_equal(la_ref_linformer_attention(&t, x.q, kt, vt, x.ref), LA_OK);
    tu_assert_close_f64(x.out, x.ref, x.no, 1e-12, "key length %zu of %zu", L, M);
    free(ef), free(et), free(kt), free(vt);
    io_free(&x);
}

typedef struct {
    const char *what;
    la_problem p;
    la_linformer_params lin; /* p.params, set once the cases are in place */
    la_status want;
    bool reference_too; /* the reference refuses it too */
} refusal;

/* Each refusal returns its status and leaves out untouched, in both precisions and in the
 * reference (except the range rule, the kernels' only). */
static void refusals(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("refusals");
    la_problem good;
    la_problem_init(&good, 1, 2, 8, 12, 4, 3);
    la_linformer_params good_lin = LA_LINFORMER_PARAMS_INIT;
    good.params = &good_lin.head;
    good_lin.proj_rank = 5;
    io x = io_make(&good, &r);
    /* projections of the good shape (k, M) = (5, 12): finite, one NaN, huge */
    double e_ok[5 * 12], e_nan[5 * 12], e_huge[5 * 12];
    for (size_t i = 0; i < 5 * 12; i++)
        e_ok[i] = e_nan[i] = 0.1, e_huge[i] = 1e37;
    e_nan[17] = NAN;
    refusal cases[8];
    size_t n = 0;
#define CASE(text, field, value, status, ref)                                                      \
    do {                                                                                           \
        cases[n] = (refusal){(text), good, good_lin, (status), (ref)};                             \
        cases[n++].field = (value);                                                                \
    } while (0)
    CASE("k > M", lin.proj_rank, 13, LA_EINVAL, true);
    CASE("k = 0", lin.proj_rank, 0, LA_EINVAL, true);
    CASE("causal", p.causal, 1, LA_EINVAL, true);
    CASE("E given, F NULL", lin.proj_e, e_ok, LA_EINVAL, true);
    CASE("F given, E NULL", lin.proj_f, e_ok, LA_EINVAL, true);
    CASE("workspace_limit 0", p.workspace_limit, 0, LA_EBUDGET, false);
    CASE("a NaN in E", lin.proj_e, e_nan, LA_EINVAL, true);
    cases[n - 1].lin.proj_f = e_ok;
    /* float32 only: every projected entry within 12·1e37·max|K|, beyond FLT_MAX/8 */
    CASE("E and F of 1e37 (the range rule)", lin.proj_e, e_huge, LA_ERANGE, false);
    cases[n - 1].lin.proj_f = e_huge;
#undef CASE
    for (size_t c = 0; c < n; c++)
        cases[c].p.params = &cases[c].lin.head;

    for (size_t c = 0; c < n; c++) {
        for (size_t i = 0; i < x.no; i++)
            x.out[i] = -7, x.out32[i] = -7;
        const bool f32_only = cases[c].want == LA_ERANGE;
        if (!f32_only) {
            la_status st = la_linformer_attention_f64(&cases[c].p, x.q, x.k, x.v, x.out);
            if (st != cases[c].want)
                fail_msg("%s, float64: %s, want %s", cases[c].what, la_strerror(st),
                         la_strerror(cases[c].want));
        }
        la_status st = la_linformer_attention_f32(&cases[c].p, x.q32, x.k32, x.v32, x.out32);
        if (st != cases[c].want)
            fail_msg("%s, float32: %s, want %s", cases[c].what, la_strerror(st),
                     la_strerror(cases[c].want));
        if (cases[c].reference_too) {
            st = la_ref_linformer_attention(&cases[c].p, x.q, x.k, x.v, x.out);
            if (st != cases[c].want)
                fail_msg("%s, reference: %s, want %s", cases[c].what, la_strerror(st),
                         la_strerror(cases[c].want));
        }
        for (size_t i = 0; i < x.no; i++)
            if (x.out[i] != -7 || x.out32[i] != -7)
                fail_msg("%s: output element %zu written", cases[c].what, i);
    }
    /* NULL pointers */
    assert_int_equal(la_linformer_attention_f64(NULL, x.q, x.k, x.v, x.out), LA_EINVAL);
    assert_int_equal(la_linformer_attention_f64(&good, NULL, x.k, x.v, x.out), LA_EINVAL);
    assert_int_equal(la_linformer_attention_f32(&good, x.q32, NULL, x.v32, x.out32), LA_EINVAL);
    assert_int_equal(la_linformer_attention_f32(&good, x.q32, x.k32, NULL, x.out32), LA_EINVAL);
    assert_int_equal(la_linformer_attention_f32(&good, x.q32, x.k32, x.v32, NULL), LA_EINVAL);
    assert_int_equal(la_ref_linformer_attention(&good, x.q, x.k, x.v, NULL), LA_EINVAL);
    /* the good problem runs (each refusal was about its one change); k = M too */
    assert_int_equal(la_linformer_attention_f32(&good, x.q32, x.k32, x.v32, x.out32), LA_OK);
    good_lin.proj_rank = good.n_keys;
    assert_int_equal(la_linformer_attention_f64(&good, x.q, x.k, x.v, x.out), LA_OK);
    /* the registry and the cost model refuse what the kernel refuses */
    good.causal = 1;
    la_cost cost;
    assert_int_equal(la_attention(LA_KERNEL_LINFORMER, &good, LA_FLOAT64, x.q, x.k, x.v, x.out),
                     LA_EINVAL);
    assert_int_equal(la_attention_cost(LA_KERNEL_LINFORMER, &good, LA_FLOAT32, &cost), LA_EINVAL);
    good.causal = 0, good_lin.proj_rank = good.n_keys + 1;
    assert_int_equal(la_attention_cost(LA_KERNEL_LINFORMER, &good, LA_FLOAT32, &cost), LA_EINVAL);
    io_free(&x);
}

int main(void)
{
    tu_init("test_linformer");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_reference),
        cmocka_unit_test(identity_is_softmax),
        cmocka_unit_test(given_equals_drawn),
        cmocka_unit_test(projections_draw),
        cmocka_unit_test(key_lengths_project_visible_keys),
        cmocka_unit_test(refusals),
    };
    int failed = cmocka_run_group_tests_name("default kernels", tests, NULL, NULL);
    if (la_avx512_usable()) {
        la_avx512_enable(false);
        failed += cmocka_run_group_tests_name("portable float32 paths", tests, NULL, NULL);
        la_avx512_enable(true);
    }
    return failed != 0;
}

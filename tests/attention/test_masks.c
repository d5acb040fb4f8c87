/* test_masks.c — the causal mask's alignment for N != M (la_problem.causal_align), over
 * every kernel of the registry that takes a causal mask: bottom-right against the
 * float64 references (forward, backward, the attention matrix), bottom-right with M = N
 * bit for bit the top-left result, one query over t keys (decoding with a KV cache)
 * equal to attention over all t keys, the queries before the first key (N > M) exactly
 * zero rows as the empty row is everywhere, top-left still the default, and the cost
 * model's pair count against a brute-force count. */
#include "../testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12
#define TOL_BWD_F32 1e-5
#define TOL_BWD_F64 1e-11

/* q, k, v (and d_out) of a problem in both precisions: multiples of 1/8 in
 * [-3.125, 3.125], so that with scale 1/8 every score is exact in float32 and hard
 * attention's argmax is the reference's bit for bit. */
typedef struct {
    size_t nq, nk, nv, no;
    double *q, *k, *v, *g;
    float *q32, *k32, *v32, *g32;
} inputs;

static void make_inputs(const la_problem *p, tu_rng *r, inputs *in)
{
    const size_t heads = p->batch * p->heads;
    in->nq = heads * p->n_queries * p->d_k, in->nk = heads * p->n_keys * p->d_k;
    in->nv = heads * p->n_keys * p->d_v, in->no = heads * p->n_queries * p->d_v;
    double **x[4] = {&in->q, &in->k, &in->v, &in->g};
    float **x32[4] = {&in->q32, &in->k32, &in->v32, &in->g32};
    const size_t n[4] = {in->nq, in->nk, in->nv, in->no};
    for (int t = 0; t < 4; t++) {
        *x[t] = tu_f64(n[t]);
        *x32[t] = tu_f32(n[t]);
        for (size_t e = 0; e < n[t]; e++)
            (*x[t])[e] = (double)((int)(tu_next(r) % 51) - 25) / 8;
        tu_to_f32(*x[t], *x32[t], n[t]);
    }
}

static void free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v), free(in->g);
    free(in->q32), free(in->k32), free(in->v32), free(in->g32);
}

/* The problems: N < M (decoding a few tokens over a cache), N > M (queries before the
 * first key), N = M, sizes crossing the fused kernel's 64/32-query and 256/128-key
 * blocks and the linear kernels' chunks, key lengths (0 included), B·H > 1. */
typedef struct {
    size_t batch, heads, n, m, d_k, d_v, chunk;
    int64_t lengths[2]; /* -1: no key lengths */
} shape;

static const shape shapes[] = {
    {1, 1, 1, 1, 1, 1, 32, {-1}},      {1, 2, 1, 7, 3, 2, 32, {-1}},
    {2, 1, 3, 11, 8, 5, 2, {11, 4}},   {1, 1, 11, 3, 8, 5, 2, {-1}},
    {2, 2, 5, 9, 16, 3, 3, {0, 9}},    {1, 2, 9, 5, 4, 4, 4, {3}},
    {1, 1, 70, 300, 16, 8, 32, {-1}},  {1, 1, 300, 70, 16, 8, 32, {-1}},
    {2, 1, 40, 130, 8, 8, 7, {130, 61}}, {1, 1, 17, 17, 8, 8, 5, {-1}},
};
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static la_problem problem_of(const shape *s, la_causal_align align)
{
    la_problem p;
    la_problem_init(&p, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v);
    p.causal = 1;
    p.causal_align = align;
    p.key_lengths = s->lengths[0] >= 0 ? s->lengths : NULL;
    p.scale = 0.125;
    p.chunk = s->chunk;
    p.window = 5;
    p.features = 16;
    return p;
}

static bool takes_causal(const la_kernel_info *info)
{
    return info->causal != LA_CAUSAL_REFUSED;
}

/* Every kernel, both precisions, bottom-right against its float64 reference; elements
 * the reference leaves exactly 0 (rows that see no key) exactly 0 in the kernel too. */
static void bottom_right_matches_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("bottom_right_matches_reference");
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info)) continue;
        for (size_t si = 0; si < N_SHAPES; si++) {
            const la_problem p = problem_of(&shapes[si], LA_CAUSAL_BOTTOM_RIGHT);
            inputs in;
            make_inputs(&p, &r, &in);
            double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
            float *y32 = tu_f32(in.no);
            assert_int_equal(la_ref_attention(info->kernel, &p, in.q, in.k, in.v, ref), LA_OK);
            assert_int_equal(la_attention_f64(info->kernel, &p, in.q, in.k, in.v, y64), LA_OK);
            assert_int_equal(la_attention_f32(info->kernel, &p, in.q32, in.k32, in.v32, y32),
                             LA_OK);
            const bool exact = info->kernel == LA_KERNEL_HARD;
            tu_assert_close_f64(y64, ref, in.no, exact ? 1e-300 : TOL_F64,
                                "%s bottom-right shape %zu float64", info->name, si);
            tu_assert_close_f32(y32, ref, in.no, exact ? 1e-300 : TOL_F32,
                                "%s bottom-right shape %zu float32", info->name, si);
            for (size_t x = 0; x < in.no; x++)
                if (ref[x] == 0 && (y64[x] != 0 || y32[x] != 0))
                    fail_msg("%s shape %zu: element %zu is %g / %g where the reference has 0 "
                             "(seed %llu)",
                             info->name, si, x, y64[x], (double)y32[x],
                             (unsigned long long)tu_seed());
            free(ref), free(y64), free(y32);
            free_inputs(&in);
        }
    }
}

/* The references themselves, written from the definition: query i sees key j exactly
 * when j <= i + M − N (and j < L_b). Checked on softmax's reference with one-hot values:
 * v_j = e_j, so out[i][j] > 0 exactly where query i sees key j. */
static void reference_sees_the_bottom_right_keys(void **state)
{
    (void)state;
    const size_t sizes[][2] = {{3, 7}, {7, 3}, {4, 4}, {1, 5}};
    for (size_t s = 0; s < 4; s++) {
        const size_t N = sizes[s][0], M = sizes[s][1];
        la_problem p;
        la_problem_init(&p, 1, 1, N, M, 2, M);
        p.causal = 1;
        p.causal_align = LA_CAUSAL_BOTTOM_RIGHT;
        double *q = tu_f64(N * 2), *k = tu_f64(M * 2), *v = tu_f64(M * M), *out = tu_f64(N * M);
        for (size_t e = 0; e < N * 2; e++)
            q[e] = 0.1 * (double)e;
        for (size_t e = 0; e < M * 2; e++)
            k[e] = -0.05 * (double)e;
        for (size_t j = 0; j < M; j++)
            for (size_t c = 0; c < M; c++)
                v[j * M + c] = j == c;
        assert_int_equal(la_ref_softmax_attention(&p, q, k, v, out), LA_OK);
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < M; j++) {
                const bool sees = (long)j <= (long)i + (long)M - (long)N;
                if (sees != (out[i * M + j] > 0))
                    fail_msg("N=%zu M=%zu: query %zu %s key %zu", N, M, i,
                             sees ? "does not see" : "sees", j);
            }
        free(q), free(k), free(v), free(out);
    }
}

/* With M = N the two alignments are one mask: the same bits in every kernel. */
static void square_bottom_right_is_top_left(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("square_bottom_right_is_top_left");
    const shape sq[] = {{2, 1, 17, 17, 8, 8, 5, {17, 6}}, {1, 2, 130, 130, 16, 4, 32, {-1}}};
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info)) continue;
        for (size_t si = 0; si < 2; si++) {
            const la_problem tl = problem_of(&sq[si], LA_CAUSAL_TOP_LEFT);
            const la_problem br = problem_of(&sq[si], LA_CAUSAL_BOTTOM_RIGHT);
            inputs in;
            make_inputs(&tl, &r, &in);
            float *a = tu_f32(in.no), *b = tu_f32(in.no);
            double *a64 = tu_f64(in.no), *b64 = tu_f64(in.no);
            assert_int_equal(la_attention_f32(info->kernel, &tl, in.q32, in.k32, in.v32, a), LA_OK);
            assert_int_equal(la_attention_f32(info->kernel, &br, in.q32, in.k32, in.v32, b), LA_OK);
            assert_int_equal(la_attention_f64(info->kernel, &tl, in.q, in.k, in.v, a64), LA_OK);
            assert_int_equal(la_attention_f64(info->kernel, &br, in.q, in.k, in.v, b64), LA_OK);
            if (memcmp(a, b, in.no * sizeof *a) != 0 || memcmp(a64, b64, in.no * sizeof *a64) != 0)
                fail_msg("%s shape %zu: bottom-right with M = N differs from top-left",
                         info->name, si);
            free(a), free(b), free(a64), free(b64);
            free_inputs(&in);
        }
    }
}

/* Decoding: one query over t cached keys sees all t of them (top-left would show it key
 * 0 only): the causal bottom-right output equals the non-causal reference. */
static void one_query_sees_every_cached_key(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("one_query_sees_every_cached_key");
    const size_t ts[] = {1, 2, 5, 64, 300};
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info)) continue;
        for (size_t ti = 0; ti < sizeof ts / sizeof ts[0]; ti++) {
            const shape s = {1, 2, 1, ts[ti], 8, 4, 32, {-1}};
            la_problem p = problem_of(&s, LA_CAUSAL_BOTTOM_RIGHT);
            p.window = ts[ti]; /* local: a window over every key */
            la_problem all = p;
            all.causal = 0;
            inputs in;
            make_inputs(&p, &r, &in);
            double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
            float *y32 = tu_f32(in.no);
            /* the recurrent rows require causal: their non-causal twin is the other row's
             * reference (linear's, FAVOR+'s), which follows p->causal */
            assert_int_equal(la_ref_attention(info->causal == LA_CAUSAL_REQUIRED
                                                  ? (la_kernel)(info->kernel - 1)
                                                  : info->kernel,
                                              &all, in.q, in.k, in.v, ref),
                             LA_OK);
            assert_int_equal(la_attention_f64(info->kernel, &p, in.q, in.k, in.v, y64), LA_OK);
            assert_int_equal(la_attention_f32(info->kernel, &p, in.q32, in.k32, in.v32, y32),
                             LA_OK);
            const bool exact = info->kernel == LA_KERNEL_HARD;
            tu_assert_close_f64(y64, ref, in.no, exact ? 1e-300 : TOL_F64,
                                "%s one query over %zu keys, float64", info->name, ts[ti]);
            tu_assert_close_f32(y32, ref, in.no, exact ? 1e-300 : TOL_F32,
                                "%s one query over %zu keys, float32", info->name, ts[ti]);
            /* and top-left is what it was: the query sees key 0 only */
            p.causal_align = LA_CAUSAL_TOP_LEFT;
            if (ts[ti] > 1 && info->kernel == LA_KERNEL_SOFTMAX) {
                assert_int_equal(la_attention_f64(info->kernel, &p, in.q, in.k, in.v, y64), LA_OK);
                for (size_t h = 0; h < 2; h++)
                    for (size_t c = 0; c < 4; c++)
                        assert_true(y64[h * 4 + c] == in.v[h * ts[ti] * 4 + c]);
            }
            free(ref), free(y64), free(y32);
            free_inputs(&in);
        }
    }
}

/* N > M bottom-right: queries i < N − M see no key; their rows are exactly zero in every
 * kernel (the empty row, as a key length of 0 gives), and the rest are not all zero. */
static void queries_before_the_first_key_get_zero_rows(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("queries_before_the_first_key_get_zero_rows");
    const shape s = {2, 1, 40, 6, 8, 3, 4, {-1}};
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info)) continue;
        const la_problem p = problem_of(&s, LA_CAUSAL_BOTTOM_RIGHT);
        inputs in;
        make_inputs(&p, &r, &in);
        float *y32 = tu_f32(in.no);
        double *y64 = tu_f64(in.no);
        assert_int_equal(la_attention_f32(info->kernel, &p, in.q32, in.k32, in.v32, y32), LA_OK);
        assert_int_equal(la_attention_f64(info->kernel, &p, in.q, in.k, in.v, y64), LA_OK);
        for (size_t hd = 0; hd < 2; hd++)
            for (size_t i = 0; i < s.n; i++) {
                bool zero = true;
                for (size_t c = 0; c < s.d_v; c++) {
                    const size_t e = (hd * s.n + i) * s.d_v + c;
                    zero = zero && y32[e] == 0 && y64[e] == 0;
                }
                if (i < s.n - s.m && !zero)
                    fail_msg("%s: query %zu sees no key but its row is not zero", info->name, i);
            }
        free(y32), free(y64);
        free_inputs(&in);
    }
}

/* The backward passes bottom-right against their float64 oracles. */
static void bottom_right_backward_matches_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("bottom_right_backward_matches_reference");
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info) || !info->backward_f64) continue;
        for (size_t si = 0; si < N_SHAPES; si++) {
            la_problem p = problem_of(&shapes[si], LA_CAUSAL_BOTTOM_RIGHT);
            p.eps = 0.5; /* linear: d_q well conditioned (test_attention.c's gradient shapes) */
            inputs in;
            make_inputs(&p, &r, &in);
            double *out = tu_f64(in.no);
            float *out32 = tu_f32(in.no);
            assert_int_equal(la_attention_f64(info->kernel, &p, in.q, in.k, in.v, out), LA_OK);
            assert_int_equal(la_attention_f32(info->kernel, &p, in.q32, in.k32, in.v32, out32),
                             LA_OK);
            const size_t n[3] = {in.nq, in.nk, in.nv};
            double *ref[3], *g64[3];
            float *g32[3];
            for (int t = 0; t < 3; t++)
                ref[t] = tu_f64(n[t]), g64[t] = tu_f64(n[t]), g32[t] = tu_f32(n[t]);
            assert_int_equal(la_ref_attention_backward(info->kernel, &p, in.q, in.k, in.v, out,
                                                       in.g, ref[0], ref[1], ref[2]),
                             LA_OK);
            assert_int_equal(la_attention_backward_f64(info->kernel, &p, in.q, in.k, in.v, out,
                                                       in.g, g64[0], g64[1], g64[2]),
                             LA_OK);
            assert_int_equal(la_attention_backward_f32(info->kernel, &p, in.q32, in.k32, in.v32,
                                                       out32, in.g32, g32[0], g32[1], g32[2]),
                             LA_OK);
            static const char *const names[3] = {"d_q", "d_k", "d_v"};
            for (int t = 0; t < 3; t++) {
                tu_assert_close_f64(g64[t], ref[t], n[t], TOL_BWD_F64,
                                    "%s backward bottom-right shape %zu %s float64", info->name,
                                    si, names[t]);
                tu_assert_close_f32(g32[t], ref[t], n[t], TOL_BWD_F32 * (p.n_keys > 64 ? 10 : 1),
                                    "%s backward bottom-right shape %zu %s float32", info->name,
                                    si, names[t]);
                free(ref[t]), free(g64[t]), free(g32[t]);
            }
            free(out), free(out32);
            free_inputs(&in);
        }
    }
}

/* The attention matrix bottom-right: A·V equals the reference output, hidden entries 0. */
static void bottom_right_weights_times_v(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("bottom_right_weights_times_v");
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info)) continue;
        for (size_t si = 0; si < 6; si++) {
            const shape *s = &shapes[si];
            const la_problem p = problem_of(s, LA_CAUSAL_BOTTOM_RIGHT);
            const size_t heads = s->batch * s->heads, N = s->n, M = s->m;
            double *a = tu_f64(heads * N * M);
            inputs in;
            make_inputs(&p, &r, &in);
            const la_status st = la_attention_weights_f64(info->kernel, &p, in.q, in.k, a);
            if (st == LA_EINVAL) { /* no matrix for this kernel (documented) */
                free(a);
                free_inputs(&in);
                break;
            }
            assert_int_equal(st, LA_OK);
            double *ref = tu_f64(in.no), *av = tu_f64(in.no);
            assert_int_equal(la_ref_attention(info->kernel, &p, in.q, in.k, in.v, ref), LA_OK);
            for (size_t hd = 0; hd < heads; hd++) {
                const size_t b = hd / s->heads;
                const size_t len = p.key_lengths ? (size_t)p.key_lengths[b] : M;
                for (size_t i = 0; i < N; i++) {
                    for (size_t c = 0; c < s->d_v; c++) {
                        double sum = 0;
                        for (size_t j = 0; j < M; j++)
                            sum += a[(hd * N + i) * M + j] * in.v[(hd * M + j) * s->d_v + c];
                        av[(hd * N + i) * s->d_v + c] = sum;
                    }
                    for (size_t j = 0; j < M; j++) {
                        const bool seen = j + N <= i + M && j < len;
                        if (!seen && a[(hd * N + i) * M + j] != 0)
                            fail_msg("%s shape %zu: weight (%zu, %zu) of a hidden key is %g",
                                     info->name, si, i, j, a[(hd * N + i) * M + j]);
                    }
                }
            }
            tu_assert_close_f64(av, ref, in.no, 1e-12, "%s weights bottom-right shape %zu",
                                info->name, si);
            free(a), free(ref), free(av);
            free_inputs(&in);
        }
    }
}

/* la_visible_pairs and la_attention_cost bottom-right: the pairs counted one by one. */
static void pair_count_is_exact(void **state)
{
    (void)state;
    for (size_t si = 0; si < N_SHAPES; si++) {
        const shape *s = &shapes[si];
        const la_problem p = problem_of(s, LA_CAUSAL_BOTTOM_RIGHT);
        for (size_t b = 0; b < s->batch; b++) {
            const size_t len = p.key_lengths ? (size_t)p.key_lengths[b] : s->m;
            double pairs = 0;
            for (size_t i = 0; i < s->n; i++)
                for (size_t j = 0; j < len; j++)
                    pairs += j + s->n <= i + s->m;
            assert_true(la_visible_pairs(&p, b) == pairs);
        }
        for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
            const la_kernel_info *info = la_kernel_get((la_kernel)kk);
            if (!takes_causal(info)) continue;
            la_cost c;
            assert_int_equal(la_attention_cost(info->kernel, &p, LA_FLOAT32, &c), LA_OK);
            assert_true(isfinite(c.flops_total) && c.flops_total >= 0);
        }
    }
}

/* The padded square problem is held against the workspace limit: a budget too small for
 * it is refused with LA_EBUDGET and nothing written. */
static void square_rows_count_against_the_budget(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("square_rows_count_against_the_budget");
    const shape s = {1, 1, 2, 300, 8, 8, 32, {-1}};
    la_problem p = problem_of(&s, LA_CAUSAL_BOTTOM_RIGHT);
    p.workspace_limit = 300 * 16 * sizeof(float) - 1;
    inputs in;
    make_inputs(&p, &r, &in);
    float *y = tu_f32(in.no);
    memset(y, 0xA5, in.no * sizeof *y);
    assert_int_equal(la_linear_attention_f32(&p, in.q32, in.k32, in.v32, y), LA_EBUDGET);
    for (size_t e = 0; e < in.no * sizeof *y; e++)
        assert_int_equal(((unsigned char *)y)[e], 0xA5);
    free(y);
    free_inputs(&in);
}

int main(void)
{
    tu_init("test_masks");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_sees_the_bottom_right_keys),
        cmocka_unit_test(bottom_right_matches_reference),
        cmocka_unit_test(square_bottom_right_is_top_left),
        cmocka_unit_test(one_query_sees_every_cached_key),
        cmocka_unit_test(queries_before_the_first_key_get_zero_rows),
        cmocka_unit_test(bottom_right_backward_matches_reference),
        cmocka_unit_test(bottom_right_weights_times_v),
        cmocka_unit_test(pair_count_is_exact),
        cmocka_unit_test(square_rows_count_against_the_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

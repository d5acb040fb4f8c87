/* test_masks.c — the masks beyond causal top-left and key lengths. First the causal mask's
 * alignment for N != M (la_problem.causal_align), over every kernel of the registry that takes a
 * causal mask: bottom-right against the float64 references (forward, backward, the attention
 * matrix), bottom-right with M = N bit for bit the top-left result, one query over t keys (decoding
 * with a KV cache) equal to attention over all t keys, the queries before the first key (N > M)
 * exactly zero rows as the empty row is everywhere, top-left still the default, and the cost
 * model's pair count against a brute-force count. Then the general masks (p->mask, (N, M)
 * or (B·H, N, M), and p->key_mask, (B, M)): random masks with rows they hide whole, alone
 * and with causal masks and key lengths, against the float64 references in every kernel
 * that takes them (forward, backward, log-sum-exps), LA_EINVAL from the rest; a mask
 * equal to the causal one gives the causal result. */
#include "../testutil.h"
#include "../yardsticks.h"
#include "attention/kernels.h"

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

static const shape full_shapes[] = {
    {1, 1, 1, 1, 1, 1, 32, {-1}},        {1, 2, 1, 7, 3, 2, 32, {-1}},
    {2, 1, 3, 11, 8, 5, 2, {11, 4}},     {1, 1, 11, 3, 8, 5, 2, {-1}},
    {2, 2, 5, 9, 16, 3, 3, {0, 9}},      {1, 2, 9, 5, 4, 4, 4, {3}},
    {1, 1, 70, 300, 16, 8, 32, {-1}},    {1, 1, 300, 70, 16, 8, 32, {-1}},
    {2, 1, 40, 130, 8, 8, 7, {130, 61}}, {1, 1, 17, 17, 8, 8, 5, {-1}},
};

/* The quick profile's problems (LA_TEST_PROFILE=quick): the six small ones above (the
 * tests that read only the first six read the same), then the large ones cut to the
 * edges they stand for. */
static const shape quick_shapes[] = {
    {1, 1, 1, 1, 1, 1, 32, {-1}},
    {1, 2, 1, 7, 3, 2, 32, {-1}},
    {2, 1, 3, 11, 8, 5, 2, {11, 4}},
    {1, 1, 11, 3, 8, 5, 2, {-1}},
    {2, 2, 5, 9, 16, 3, 3, {0, 9}},
    {1, 2, 9, 5, 4, 4, 4, {3}},
    /* N < M: 65 queries past the 32- and 64-query blocks and three 32-query chunks, 257
     * keys past the 128- and 256-key blocks */
    {1, 1, 65, 257, 16, 8, 32, {-1}},
    /* N > M: the first 80 queries see no key, a whole 64-query block of them */
    {1, 1, 100, 20, 16, 8, 32, {-1}},
    /* key lengths 130 and 61 about the 128-key block, chunk 7 not dividing N */
    {2, 1, 20, 130, 8, 8, 7, {130, 61}},
    {1, 1, 17, 17, 8, 8, 5, {-1}},
};

/* The table in use (main picks it) and its length. */
static const shape *shapes = full_shapes;
static size_t n_shapes = sizeof full_shapes / sizeof full_shapes[0];

/* Every problem's window (local) and features (FAVOR+): the blocks problem_of chains. */
static const la_favor_params favor16 = {{LA_PARAMS_FAVOR, NULL}, 16, 0, NULL};
static const la_local_params window5 = {{LA_PARAMS_LOCAL, &favor16.head}, 5};

static la_problem problem_of(const shape *s, la_causal_align align)
{
    la_problem p;
    la_problem_init(&p, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v);
    p.causal = 1;
    p.causal_align = align;
    p.key_lengths = s->lengths[0] >= 0 ? s->lengths : NULL;
    p.scale = 0.125;
    p.chunk = s->chunk;
    p.params = &window5.head;
    return p;
}

static bool takes_causal(const la_kernel_info *info)
{
    return info->causal != LA_CAUSAL_REFUSED;
}

/* The float32 backward's tolerance for gradient t (0 d_q, 1 d_k, 2 d_v): d_v, a plain sum,
 * 1e-5 (times 10 past 64 keys: longer sums); d_q and d_k 1e-4: their terms cancel (softmax
 * P ∘ (dP − D), whose logits reach ±20 here; linear where a query sees few keys: linattn.h,
 * "Accuracy" beside la_linear_attention_backward_*), and test_attention.c measures them
 * against a floor instead; 1e-4 is its gradient mode's float32 tolerance. */
static double bwd_tol_f32(int t, const la_problem *p)
{
    if (t < 2) return 1e-4;
    return TOL_BWD_F32 * (p->n_keys > 64 ? 10 : 1);
}

/* Whether query i of batch entry b sees no key, bottom-right: none below its key length,
 * or i + M − N < 0. */
static bool bottom_right_row_empty(const la_problem *p, size_t b, size_t i)
{
    const size_t m = p->key_lengths ? (size_t)p->key_lengths[b] : p->n_keys;
    return m == 0 || i + p->n_keys < p->n_queries;
}

/* Every kernel, both precisions, bottom-right against its float64 reference; the rows
 * that see no key exactly 0 in the kernel and the reference. (Not every element the
 * reference leaves 0: on these inputs, multiples of 1/8, two keys can cancel exactly in
 * the reference's order and leave 1e-17 in the kernel's.) */
static void bottom_right_matches_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("bottom_right_matches_reference");
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info)) continue;
        for (size_t si = 0; si < n_shapes; si++) {
            const la_problem p = problem_of(&shapes[si], LA_CAUSAL_BOTTOM_RIGHT);
            inputs in;
            make_inputs(&p, &r, &in);
            double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
            float *y32 = tu_f32(in.no);
            assert_int_equal(la_ref_attention(info->kernel, &p, in.q, in.k, in.v, ref), LA_OK);
            assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, y64),
                             LA_OK);
            assert_int_equal(
                la_attention(info->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, y32), LA_OK);
            const bool exact = info->kernel == LA_KERNEL_HARD;
            tu_assert_close_f64(y64, ref, in.no, exact ? 1e-300 : TOL_F64,
                                "%s bottom-right shape %zu float64", info->name, si);
            tu_assert_close_f32(y32, ref, in.no, exact ? 1e-300 : TOL_F32,
                                "%s bottom-right shape %zu float32", info->name, si);
            for (size_t x = 0; x < in.no; x++) {
                const size_t row = x / p.d_v, b = row / (p.heads * p.n_queries);
                if (bottom_right_row_empty(&p, b, row % p.n_queries) &&
                    (ref[x] != 0 || y64[x] != 0 || y32[x] != 0))
                    fail_msg("%s shape %zu: element %zu of a row that sees no key is %g / %g, "
                             "the reference's %g (seed %llu)",
                             info->name, si, x, y64[x], (double)y32[x], ref[x],
                             (unsigned long long)tu_seed());
            }
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
    /* the quick profile: the second on one head of d_k = 8, still past the 64-query and
     * 128-key blocks */
    const shape sq[] = {{2, 1, 17, 17, 8, 8, 5, {17, 6}},
                        tu_quick() ? (shape){1, 1, 130, 130, 8, 4, 32, {-1}}
                                   : (shape){1, 2, 130, 130, 16, 4, 32, {-1}}};
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
            assert_int_equal(la_attention(info->kernel, &tl, LA_FLOAT32, in.q32, in.k32, in.v32, a),
                             LA_OK);
            assert_int_equal(la_attention(info->kernel, &br, LA_FLOAT32, in.q32, in.k32, in.v32, b),
                             LA_OK);
            assert_int_equal(la_attention(info->kernel, &tl, LA_FLOAT64, in.q, in.k, in.v, a64),
                             LA_OK);
            assert_int_equal(la_attention(info->kernel, &br, LA_FLOAT64, in.q, in.k, in.v, b64),
                             LA_OK);
            if (memcmp(a, b, in.no * sizeof *a) != 0 || memcmp(a64, b64, in.no * sizeof *a64) != 0)
                fail_msg("%s shape %zu: bottom-right with M = N differs from top-left", info->name,
                         si);
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
            /* local: a window over every key */
            const la_local_params wide = {{LA_PARAMS_LOCAL, &favor16.head}, ts[ti]};
            p.params = &wide.head;
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
            assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, y64),
                             LA_OK);
            assert_int_equal(
                la_attention(info->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, y32), LA_OK);
            const bool exact = info->kernel == LA_KERNEL_HARD;
            tu_assert_close_f64(y64, ref, in.no, exact ? 1e-300 : TOL_F64,
                                "%s one query over %zu keys, float64", info->name, ts[ti]);
            tu_assert_close_f32(y32, ref, in.no, exact ? 1e-300 : TOL_F32,
                                "%s one query over %zu keys, float32", info->name, ts[ti]);
            /* and top-left is what it was: the query sees key 0 only */
            p.causal_align = LA_CAUSAL_TOP_LEFT;
            if (ts[ti] > 1 && info->kernel == LA_KERNEL_SOFTMAX) {
                assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, y64),
                                 LA_OK);
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
        assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, y32),
                         LA_OK);
        assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, y64), LA_OK);
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

/* One case's backward in both precisions (given its forward's outputs) against the row's
 * float64 oracle: d_q, d_k and d_v against max(‖ref‖, the cancellation floor)
 * (yardsticks.h). `what` names the case in a failure. */
static void backward_matches(const la_kernel_info *info, const la_problem *p, const inputs *in,
                             const double *out, const float *out32, const char *what)
{
    static const char *const names[3] = {"d_q", "d_k", "d_v"};
    const size_t n[3] = {in->nq, in->nk, in->nv};
    double *ref[3], *g64[3];
    float *g32[3];
    for (int t = 0; t < 3; t++)
        ref[t] = tu_f64(n[t]), g64[t] = tu_f64(n[t]), g32[t] = tu_f32(n[t]);
    assert_int_equal(la_ref_attention_backward(info->kernel, p, in->q, in->k, in->v, out, in->g,
                                               ref[0], ref[1], ref[2]),
                     LA_OK);
    assert_int_equal(la_attention_backward(info->kernel, p, LA_FLOAT64, in->q, in->k, in->v, out,
                                           NULL, in->g, g64[0], g64[1], g64[2]),
                     LA_OK);
    assert_int_equal(la_attention_backward(info->kernel, p, LA_FLOAT32, in->q32, in->k32, in->v32,
                                           out32, NULL, in->g32, g32[0], g32[1], g32[2]),
                     LA_OK);
    double yard[2];
    const tu_backward bw = {in->q, in->k, in->v, out, in->g};
    tu_gradient_yardsticks(info, p, &bw, yard);
    for (int t = 0; t < 3; t++) {
        /* d_v: relative to its norm (floor 0), and only where that fails against its floor
         * from Aᵀ|d_out| (an oracle call; the floored error never exceeds the plain one, and
         * a floor below 0, where the row has no yardstick, leaves it plain) */
        double floor = t < 2 ? TU_BWD_FLOOR * yard[t] : 0;
        double e64 = tu_floored_error_f64(g64[t], ref[t], n[t], floor);
        double e32 = tu_floored_error_f32(g32[t], ref[t], n[t], floor);
        if (t == 2 && (!(e64 < TOL_BWD_F64) || !(e32 < bwd_tol_f32(t, p)))) {
            floor = TU_BWD_FLOOR * tu_dv_yardstick(info, p, &bw);
            e64 = tu_floored_error_f64(g64[t], ref[t], n[t], floor);
            e32 = tu_floored_error_f32(g32[t], ref[t], n[t], floor);
        }
        if (!(e64 < TOL_BWD_F64) || !(e32 < bwd_tol_f32(t, p)))
            fail_msg("%s backward %s %s: error %.3g (float64), %.3g (float32) against "
                     "max(‖ref‖, floor %.3g) (seed %llu)",
                     info->name, what, names[t], e64, e32, floor, (unsigned long long)tu_seed());
    }
    for (int t = 0; t < 3; t++)
        free(ref[t]), free(g64[t]), free(g32[t]);
}

/* The backward passes bottom-right against their float64 oracles. */
static void bottom_right_backward_matches_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("bottom_right_backward_matches_reference");
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!takes_causal(info) || !info->fns->backward_f64) continue;
        for (size_t si = 0; si < n_shapes; si++) {
            la_problem p = problem_of(&shapes[si], LA_CAUSAL_BOTTOM_RIGHT);
            p.eps = 0.5; /* linear: d_q well conditioned (test_attention.c's gradient shapes) */
            inputs in;
            make_inputs(&p, &r, &in);
            double *out = tu_f64(in.no);
            float *out32 = tu_f32(in.no);
            assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, out),
                             LA_OK);
            assert_int_equal(
                la_attention(info->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, out32), LA_OK);
            char what[64];
            snprintf(what, sizeof what, "bottom-right shape %zu", si);
            backward_matches(info, &p, &in, out, out32, what);
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
            const la_status st = la_attention_weights(info->kernel, &p, LA_FLOAT64, in.q, in.k, a);
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
    for (size_t si = 0; si < n_shapes; si++) {
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

/* ------------------------------------------------------------------ general masks */

/* A random mask of n bytes, about `hidden` of them nonzero (values 1..255: any nonzero
 * byte hides), and every `empty`-th row of `cols` entries wholly hidden (0: none). */
static uint8_t *random_mask(tu_rng *r, size_t n, size_t cols, double hidden, size_t empty)
{
    uint8_t *m = tu_alloc(n);
    for (size_t e = 0; e < n; e++)
        m[e] = tu_uniform(r) < hidden ? (uint8_t)(1 + tu_next(r) % 255) : 0;
    if (empty)
        for (size_t row = 0; row * cols < n; row += empty)
            memset(m + row * cols, 1, cols);
    return m;
}

/* The mask forms: none, (N, M) shared, (B·H, N, M) per head; with and without a key
 * mask; non-causal and causal in both alignments; key lengths. */
typedef struct {
    int per_head; /* -1: no mask, 0: (N, M), 1: (B·H, N, M) */
    bool key_mask;
    int causal; /* 0, 1 top-left, 2 bottom-right */
} mask_form;

static const mask_form mask_forms[] = {
    {0, false, 0}, {1, false, 0}, {-1, true, 0}, {0, true, 0},
    {1, true, 1},  {0, false, 2}, {-1, true, 2}, {1, true, 2},
};
enum { N_MASK_FORMS = sizeof mask_forms / sizeof mask_forms[0] };

typedef struct {
    uint8_t *mask, *key_mask;
} masks;

static la_problem masked_problem(const shape *s, const mask_form *f, tu_rng *r, masks *m)
{
    la_problem p = problem_of(s, f->causal == 2 ? LA_CAUSAL_BOTTOM_RIGHT : LA_CAUSAL_TOP_LEFT);
    p.causal = f->causal != 0;
    const size_t heads = s->batch * s->heads;
    m->mask = m->key_mask = NULL;
    if (f->per_head >= 0) {
        m->mask = random_mask(r, (f->per_head ? heads : 1) * s->n * s->m, s->m, 0.3, 7);
        p.mask = m->mask;
        p.mask_per_head = f->per_head;
    }
    if (f->key_mask) {
        m->key_mask = random_mask(r, s->batch * s->m, s->m, 0.25, 0);
        p.key_mask = m->key_mask;
    }
    return p;
}

static void masks_free(masks *m)
{
    free(m->mask), free(m->key_mask);
}

/* Whether a kernel takes the masks p gives: the masks its registry row names (LA_MASK_*;
 * test_registry holds the rows to what the kernels accept). */
static bool takes_mask(la_kernel kernel, const la_problem *p)
{
    const unsigned given = (p->mask ? LA_MASK_GENERAL : 0u) | (p->key_mask ? LA_MASK_KEY : 0u);
    return (la_kernel_get(kernel)->masks & given) == given;
}

/* Random masks against the float64 references, forward and backward, in every kernel
 * that takes them; the rest refuse them with LA_EINVAL, the output untouched. */
static void masks_match_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("masks_match_reference");
    size_t checked = 0, refused = 0;
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        for (size_t fi = 0; fi < N_MASK_FORMS; fi++) {
            const mask_form *f = &mask_forms[fi];
            if ((f->causal && info->causal == LA_CAUSAL_REFUSED) ||
                (!f->causal && info->causal == LA_CAUSAL_REQUIRED))
                continue;
            for (size_t si = 0; si < n_shapes; si++) {
                masks m;
                la_problem p = masked_problem(&shapes[si], f, &r, &m);
                /* Linformer: k = 3, within M */
                const la_linformer_params rank3 = {
                    {LA_PARAMS_LINFORMER, p.params}, p.n_keys < 3 ? p.n_keys : 3, NULL, NULL, 0};
                if (info->params & LA_PARAM_PROJ) p.params = &rank3.head;
                p.eps = 0.5;
                inputs in;
                make_inputs(&p, &r, &in);
                double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
                float *y32 = tu_f32(in.no);
                memset(y32, 0xA5, in.no * sizeof *y32);
                if (!takes_mask(info->kernel, &p)) {
                    assert_int_equal(
                        la_attention(info->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, y32),
                        LA_EINVAL);
                    assert_int_equal(la_ref_attention(info->kernel, &p, in.q, in.k, in.v, ref),
                                     LA_EINVAL);
                    for (size_t e = 0; e < in.no * sizeof *y32; e++)
                        assert_int_equal(((unsigned char *)y32)[e], 0xA5);
                    refused++;
                    goto next;
                }
                assert_int_equal(la_ref_attention(info->kernel, &p, in.q, in.k, in.v, ref), LA_OK);
                assert_int_equal(la_attention(info->kernel, &p, LA_FLOAT64, in.q, in.k, in.v, y64),
                                 LA_OK);
                assert_int_equal(
                    la_attention(info->kernel, &p, LA_FLOAT32, in.q32, in.k32, in.v32, y32), LA_OK);
                const bool exact = info->kernel == LA_KERNEL_HARD;
                tu_assert_close_f64(y64, ref, in.no, exact ? 1e-300 : TOL_F64,
                                    "%s mask form %zu shape %zu float64", info->name, fi, si);
                tu_assert_close_f32(y32, ref, in.no, exact ? 1e-300 : TOL_F32,
                                    "%s mask form %zu shape %zu float32", info->name, fi, si);
                /* a row the masks leave no key (the reference's row all zeros) is exact
                 * zeros; a single 0 can also be an input value times a weight of 1 */
                for (size_t r0 = 0; r0 < in.no; r0 += p.d_v) {
                    bool empty = true;
                    for (size_t c = 0; c < p.d_v; c++)
                        empty &= ref[r0 + c] == 0;
                    for (size_t x = r0; empty && x < r0 + p.d_v; x++)
                        if (y64[x] != 0 || y32[x] != 0)
                            fail_msg("%s mask form %zu shape %zu: element %zu of an empty row is "
                                     "%g / %g, not 0 (seed %llu)",
                                     info->name, fi, si, x, y64[x], (double)y32[x],
                                     (unsigned long long)tu_seed());
                }
                checked++;
                if (info->fns->backward_f64) {
                    char what[64];
                    snprintf(what, sizeof what, "mask form %zu shape %zu", fi, si);
                    backward_matches(info, &p, &in, y64, y32, what);
                }
            next:
                free(ref), free(y64), free(y32);
                free_inputs(&in);
                masks_free(&m);
            }
        }
    }
    printf("masks_match_reference: %zu kernel × mask × shape cases checked, %zu refused\n", checked,
           refused);
}

/* The attention matrix under masks (softmax and hard every mask, linear the key mask):
 * A·V equals the reference output, and a hidden pair's weight is exactly 0. */
static void masked_weights_times_v(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("masked_weights_times_v");
    const la_kernel kernels[] = {LA_KERNEL_SOFTMAX, LA_KERNEL_SOFTMAX_MATERIALIZED,
                                 LA_KERNEL_HARD,    LA_KERNEL_LOCAL,
                                 LA_KERNEL_LINEAR,  LA_KERNEL_LINEAR_RECURRENT};
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        for (size_t fi = 0; fi < N_MASK_FORMS; fi++) {
            const mask_form *f = &mask_forms[fi];
            const bool linear =
                kernels[ki] == LA_KERNEL_LINEAR || kernels[ki] == LA_KERNEL_LINEAR_RECURRENT;
            if (kernels[ki] == LA_KERNEL_LINEAR_RECURRENT && !f->causal) continue;
            for (size_t si = 0; si < 6; si++) {
                const shape *s = &shapes[si];
                masks m;
                la_problem p = masked_problem(s, f, &r, &m);
                const size_t heads = s->batch * s->heads, N = s->n, M = s->m;
                inputs in;
                make_inputs(&p, &r, &in);
                double *a = tu_f64(heads * N * M);
                const la_status st =
                    la_attention_weights(kernels[ki], &p, LA_FLOAT64, in.q, in.k, a);
                if (linear && p.mask) {
                    assert_int_equal(st, LA_EINVAL);
                } else {
                    assert_int_equal(st, LA_OK);
                    double *ref = tu_f64(in.no), *av = tu_f64(in.no);
                    assert_int_equal(la_ref_attention(kernels[ki], &p, in.q, in.k, in.v, ref),
                                     LA_OK);
                    for (size_t hd = 0; hd < heads; hd++)
                        for (size_t i = 0; i < N; i++) {
                            for (size_t c = 0; c < s->d_v; c++) {
                                double sum = 0;
                                for (size_t j = 0; j < M; j++)
                                    sum +=
                                        a[(hd * N + i) * M + j] * in.v[(hd * M + j) * s->d_v + c];
                                av[(hd * N + i) * s->d_v + c] = sum;
                            }
                            const size_t b = hd / s->heads;
                            for (size_t j = 0; j < M; j++) {
                                const bool hidden =
                                    (m.key_mask && m.key_mask[b * M + j]) ||
                                    (m.mask && m.mask[((f->per_head ? hd : 0) * N + i) * M + j]);
                                if (hidden && a[(hd * N + i) * M + j] != 0)
                                    fail_msg(
                                        "%s form %zu shape %zu: hidden weight (%zu, %zu) is %g",
                                        la_kernel_name(kernels[ki]), fi, si, i, j,
                                        a[(hd * N + i) * M + j]);
                            }
                        }
                    tu_assert_close_f64(av, ref, in.no, 1e-12,
                                        "%s weights, mask form %zu shape %zu",
                                        la_kernel_name(kernels[ki]), fi, si);
                    free(ref), free(av);
                }
                free(a);
                free_inputs(&in);
                masks_free(&m);
            }
        }
    }
}

/* The fused kernel's log-sum-exps under masks: -inf exactly for a wholly hidden row, the
 * reference's log Σ exp elsewhere; and the backward given them equals the one without. */
static void masked_lse(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("masked_lse");
    const shape s = {2, 2, 30, 40, 8, 5, 32, {40, 17}};
    const mask_form f = {1, true, 0};
    masks m;
    la_problem p = masked_problem(&s, &f, &r, &m);
    inputs in;
    make_inputs(&p, &r, &in);
    const size_t rows = 4 * s.n;
    double *out = tu_f64(in.no), *lse = tu_f64(rows);
    assert_int_equal(la_softmax_attention_lse_f64(&p, in.q, in.k, in.v, out, lse), LA_OK);
    for (size_t hd = 0; hd < 4; hd++) {
        const size_t b = hd / 2, len = (size_t)s.lengths[b];
        for (size_t i = 0; i < s.n; i++) {
            double max = -INFINITY, sum = 0;
            double sc[40];
            for (size_t j = 0; j < len; j++) {
                sc[j] = -INFINITY;
                if (m.key_mask[b * s.m + j] || m.mask[(hd * s.n + i) * s.m + j]) continue;
                double dot = 0;
                for (size_t c = 0; c < s.d_k; c++)
                    dot += in.q[(hd * s.n + i) * s.d_k + c] * in.k[(hd * s.m + j) * s.d_k + c];
                sc[j] = dot * p.scale;
                if (sc[j] > max) max = sc[j];
            }
            for (size_t j = 0; j < len; j++)
                sum += sc[j] == -INFINITY ? 0 : exp(sc[j] - max);
            const double want = sum > 0 ? max + log(sum) : -INFINITY;
            const double got = lse[hd * s.n + i];
            if (!(want == -INFINITY ? got == -INFINITY
                                    : fabs(got - want) <= 1e-12 * fabs(want) + 1e-14))
                fail_msg("head %zu query %zu: lse %.17g, want %.17g", hd, i, got, want);
        }
    }
    /* the backward with the forward's lse, and without (its own lse pass): the same bits */
    double *a[3], *b[3];
    const size_t n[3] = {in.nq, in.nk, in.nv};
    for (int t = 0; t < 3; t++)
        a[t] = tu_f64(n[t]), b[t] = tu_f64(n[t]);
    assert_int_equal(
        la_softmax_attention_backward_f64(&p, in.q, in.k, in.v, out, lse, in.g, a[0], a[1], a[2]),
        LA_OK);
    assert_int_equal(
        la_softmax_attention_backward_f64(&p, in.q, in.k, in.v, out, NULL, in.g, b[0], b[1], b[2]),
        LA_OK);
    for (int t = 0; t < 3; t++) {
        tu_assert_close_f64(a[t], b[t], n[t], 1e-14, "backward with and without lse, %d", t);
        free(a[t]), free(b[t]);
    }
    free(out), free(lse);
    free_inputs(&in);
    masks_free(&m);
}

/* A mask equal to the causal one (hidden j > i, or j > i + M − N) gives the causal
 * result; a mask hiding every key of a row gives that row zeros, as the empty row. */
static void mask_as_causal_and_empty_rows(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("mask_as_causal_and_empty_rows");
    const la_kernel kernels[] = {LA_KERNEL_SOFTMAX, LA_KERNEL_SOFTMAX_MATERIALIZED, LA_KERNEL_HARD};
    for (size_t si = 0; si < n_shapes; si++) {
        const shape *s = &shapes[si];
        for (int align = 0; align <= 1; align++) {
            la_problem causal = problem_of(s, (la_causal_align)align);
            la_problem masked = causal;
            masked.causal = 0;
            uint8_t *mask = tu_alloc(s->n * s->m);
            for (size_t i = 0; i < s->n; i++)
                for (size_t j = 0; j < s->m; j++)
                    mask[i * s->m + j] = align ? j + s->n > i + s->m : j > i;
            masked.mask = mask;
            inputs in;
            make_inputs(&causal, &r, &in);
            for (size_t ki = 0; ki < 3; ki++) {
                double *a = tu_f64(in.no), *b = tu_f64(in.no);
                assert_int_equal(
                    la_attention(kernels[ki], &causal, LA_FLOAT64, in.q, in.k, in.v, a), LA_OK);
                assert_int_equal(
                    la_attention(kernels[ki], &masked, LA_FLOAT64, in.q, in.k, in.v, b), LA_OK);
                tu_assert_close_f64(b, a, in.no, kernels[ki] == LA_KERNEL_HARD ? 1e-300 : 1e-13,
                                    "%s: mask as causal (align %d) shape %zu",
                                    la_kernel_name(kernels[ki]), align, si);
                free(a), free(b);
            }
            /* every key of query 0 hidden: its rows (every head) are zeros */
            memset(mask, 1, s->m);
            float *y = tu_f32(in.no);
            for (size_t ki = 0; ki < 3; ki++) {
                assert_int_equal(
                    la_attention(kernels[ki], &masked, LA_FLOAT32, in.q32, in.k32, in.v32, y),
                    LA_OK);
                for (size_t hd = 0; hd < s->batch * s->heads; hd++)
                    for (size_t c = 0; c < s->d_v; c++)
                        assert_true(y[hd * s->n * s->d_v + c] == 0);
            }
            free(y);
            free(mask);
            free_inputs(&in);
        }
    }
}

int main(void)
{
    tu_init("test_masks");
    if (tu_quick()) {
        shapes = quick_shapes;
        n_shapes = sizeof quick_shapes / sizeof quick_shapes[0];
    }
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
        cmocka_unit_test(masks_match_reference),
        cmocka_unit_test(masked_lse),
        cmocka_unit_test(masked_weights_times_v),
        cmocka_unit_test(mask_as_causal_and_empty_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

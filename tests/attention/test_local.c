/* test_local.c — what is particular to restricted (local) softmax attention: the window.
 * Every window size against the float64 reference (the harness, test_attention.c, runs
 * the registry row at the default window only); a window covering every key equals
 * softmax attention; a hand-checked r = 1; the window's edge exactly (a key at distance r
 * is seen, one at r + 1 is not), also for N != M where positions are the indices
 * themselves; the pair count and the workspace of the cost model (the workspace does not
 * grow with N); the same bits on 1, 2 and 3 threads at every window; window 0 refused.
 * What every kernel must hold — causal masking, thread counts, error paths, the workspace
 * limit — is test_attention.c's, over every row. */
#include "../testutil.h"
#include "attention/kernels.h"
#include "core/internal.h"   /* the AVX-512 switch, the fused tiles' block sizes */
#include "cpu/simd_avx512.h" /* la_avx512_usable */

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* q, k, v of a problem in both precisions (the float64 copies hold the float32 values). */
typedef struct {
    size_t nq, nk, nv, no;
    double *q, *k, *v;
    float *q32, *k32, *v32;
} inputs;

static void make_inputs(const la_problem *p, tu_rng *r, inputs *in)
{
    const size_t heads = p->batch * p->heads;
    in->nq = heads * p->n_queries * p->d_k, in->nk = heads * p->n_keys * p->d_k;
    in->nv = heads * p->n_keys * p->d_v, in->no = heads * p->n_queries * p->d_v;
    in->q = tu_f64(in->nq), in->k = tu_f64(in->nk), in->v = tu_f64(in->nv);
    in->q32 = tu_f32(in->nq), in->k32 = tu_f32(in->nk), in->v32 = tu_f32(in->nv);
    double *x[3] = {in->q, in->k, in->v};
    float *x32[3] = {in->q32, in->k32, in->v32};
    const size_t n[3] = {in->nq, in->nk, in->nv};
    for (int t = 0; t < 3; t++) {
        tu_fill_normal(r, x[t], n[t], 1);
        tu_to_f32(x[t], x32[t], n[t]);
        tu_to_f64(x32[t], x[t], n[t]);
    }
}

static void free_inputs(inputs *in)
{
    free(in->q), free(in->k), free(in->v);
    free(in->q32), free(in->k32), free(in->v32);
}

/* Both precisions against la_ref_local_attention, and the zero rows exactly zero. */
/* Both tile sets against the reference: the AVX-512 ones (the fused kernel's, queries in
 * the lanes) where the CPU has them, and the portable ones. */
static void check_against_reference(const la_problem *p, const inputs *in, const char *what)
{
    double *ref = tu_f64(in->no), *y64 = tu_f64(in->no);
    float *y32 = tu_f32(in->no);
    assert_int_equal(la_ref_local_attention(p, in->q, in->k, in->v, ref), LA_OK);
    for (int simd = la_avx512_usable(); simd >= 0; simd--) {
        la_avx512_enable(simd);
        assert_int_equal(la_local_attention_f64(p, in->q, in->k, in->v, y64), LA_OK);
        assert_int_equal(la_local_attention_f32(p, in->q32, in->k32, in->v32, y32), LA_OK);
        tu_assert_close_f64(y64, ref, in->no, TOL_F64, "%s float64 vs reference (%s tiles)", what,
                            simd ? "AVX-512" : "portable");
        tu_assert_close_f32(y32, ref, in->no, TOL_F32, "%s float32 vs reference (%s tiles)", what,
                            simd ? "AVX-512" : "portable");
        for (size_t x = 0; x < in->no; x++)
            if (ref[x] == 0 && (y64[x] != 0 || y32[x] != 0))
                fail_msg("%s (%s tiles): element %zu is %g / %g where the reference has an "
                         "exact 0 (seed %llu)",
                         what, simd ? "AVX-512" : "portable", x, y64[x], (double)y32[x],
                         (unsigned long long)tu_seed());
    }
    la_avx512_enable(true);
    free(ref), free(y64), free(y32);
}

/* Every window from 1 past max(N, M), both masks, key lengths, N != M, sizes crossing the
 * 64-query and 256-key blocks, against the float64 reference. */
static void every_window_matches_reference(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("every_window_matches_reference");
    const size_t full_sizes[][2] = {{1, 1},     {3, 5},     {17, 17},  {65, 40},
                                    {130, 300}, {300, 130}, {333, 333}};
    /* The quick profile, every window and both masks on: the first four, and N < M past
     * the 64-query and the 256-key block ({70, 257}) for the three large ones (N > M past
     * the 64-query block is {65, 40}'s). */
    const size_t quick_sizes[][2] = {{1, 1}, {3, 5}, {17, 17}, {65, 40}, {70, 257}};
    const size_t(*sizes)[2] = tu_quick() ? quick_sizes : full_sizes;
    const size_t n_sizes = tu_quick() ? 5 : 7;
    const size_t windows[] = {1, 2, 3, 7, 31, 63, 64, 65, 100, 128, 129, 200, 400, SIZE_MAX};
    int64_t lengths[2];
    size_t cases = 0;
    for (size_t s = 0; s < n_sizes; s++) {
        for (size_t w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            /* the quick profile: of the windows past max(N, M) (all cover every key) only the
             * first and SIZE_MAX */
            const size_t big = sizes[s][0] > sizes[s][1] ? sizes[s][0] : sizes[s][1];
            if (tu_quick() && w > 0 && windows[w - 1] > big && windows[w] != SIZE_MAX) continue;
            for (int causal = 0; causal <= 1; causal++) {
                la_problem p;
                la_local_params local = LA_LOCAL_PARAMS_INIT;
                la_problem_init(&p, 2, 1 + tu_next(&r) % 2, sizes[s][0], sizes[s][1],
                                1 + tu_next(&r) % 24, 1 + tu_next(&r) % 24);
                p.params = &local.head;
                local.window = windows[w];
                p.causal = causal;
                if (tu_next(&r) % 2) {
                    lengths[0] = (int64_t)(tu_next(&r) % (p.n_keys + 1));
                    lengths[1] = (int64_t)p.n_keys;
                    p.key_lengths = lengths;
                }
                inputs in;
                make_inputs(&p, &r, &in);
                char what[160];
                snprintf(what, sizeof what, "N=%zu M=%zu d_k=%zu d_v=%zu r=%zu causal=%d%s",
                         p.n_queries, p.n_keys, p.d_k, p.d_v, local.window, causal,
                         p.key_lengths ? " key lengths" : "");
                check_against_reference(&p, &in, what);
                free_inputs(&in);
                cases++;
            }
        }
    }
    printf("  %zu problems\n", cases);
}

/* A window that covers every key is softmax attention: r >= max(N, M), causal or not. */
static void wide_window_is_softmax(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("wide_window_is_softmax");
    const size_t sizes[][2] = {{1, 1}, {5, 3}, {64, 64}, {100, 257}, {300, 70}, {513, 513}};
    /* the quick profile leaves out {513, 513}: past the 256-key block is {100, 257}'s */
    const size_t n_sizes = tu_quick() ? 5 : 6;
    int64_t lengths[2];
    for (size_t s = 0; s < n_sizes; s++) {
        for (int causal = 0; causal <= 1; causal++) {
            la_problem p;
            la_local_params local = LA_LOCAL_PARAMS_INIT;
            la_problem_init(&p, 2, 2, sizes[s][0], sizes[s][1], 16, 8);
            p.params = &local.head;
            p.causal = causal;
            lengths[0] = (int64_t)(tu_next(&r) % (p.n_keys + 1)), lengths[1] = (int64_t)p.n_keys;
            p.key_lengths = tu_next(&r) % 2 ? lengths : NULL;
            inputs in;
            make_inputs(&p, &r, &in);
            double *soft64 = tu_f64(in.no), *loc64 = tu_f64(in.no);
            float *soft32 = tu_f32(in.no), *loc32 = tu_f32(in.no);
            double *soft32_wide = tu_f64(in.no);
            assert_int_equal(la_softmax_attention_f64(&p, in.q, in.k, in.v, soft64), LA_OK);
            assert_int_equal(la_softmax_attention_f32(&p, in.q32, in.k32, in.v32, soft32), LA_OK);
            tu_to_f64(soft32, soft32_wide, in.no);
            const size_t big = p.n_queries > p.n_keys ? p.n_queries : p.n_keys;
            const size_t windows[] = {big, big + 1, 10 * big, SIZE_MAX};
            for (size_t w = 0; w < 4; w++) {
                local.window = windows[w];
                assert_int_equal(la_local_attention_f64(&p, in.q, in.k, in.v, loc64), LA_OK);
                assert_int_equal(la_local_attention_f32(&p, in.q32, in.k32, in.v32, loc32), LA_OK);
                tu_assert_close_f64(loc64, soft64, in.no, TOL_F64,
                                    "float64 N=%zu M=%zu causal=%d r=%zu vs softmax", p.n_queries,
                                    p.n_keys, causal, local.window);
                tu_assert_close_f32(loc32, soft32_wide, in.no, TOL_F32,
                                    "float32 N=%zu M=%zu causal=%d r=%zu vs softmax", p.n_queries,
                                    p.n_keys, causal, local.window);
            }
            free(soft64), free(loc64), free(soft32), free(loc32), free(soft32_wide);
            free_inputs(&in);
        }
    }
}

/* r = 1 by hand: d_k = d_v = 1, q_i = 1 and k_j = ln(j + 1) with scale 1, so key j weighs
 * j + 1; v = 1, 10, 100, 1000. Non-causal query i sees keys i − 1 .. i + 1, causal i − 1, i. */
static void window_one_by_hand(void **state)
{
    (void)state;
    la_problem p;
    la_local_params local = LA_LOCAL_PARAMS_INIT;
    la_problem_init(&p, 1, 1, 4, 4, 1, 1);
    p.params = &local.head;
    local.window = 1;
    p.scale = 1;
    const double q[] = {1, 1, 1, 1}, k[] = {log(1), log(2), log(3), log(4)};
    const double v[] = {1, 10, 100, 1000};
    const double want[] = {
        (1 * 1 + 2 * 10) / 3.0,
        (1 * 1 + 2 * 10 + 3 * 100) / 6.0,
        (2 * 10 + 3 * 100 + 4 * 1000) / 9.0,
        (3 * 100 + 4 * 1000) / 7.0,
    };
    const double want_causal[] = {1, (1 * 1 + 2 * 10) / 3.0, (2 * 10 + 3 * 100) / 5.0,
                                  (3 * 100 + 4 * 1000) / 7.0};
    float q32[4], k32[4], v32[4], y32[4];
    double y[4];
    tu_to_f32(q, q32, 4), tu_to_f32(k, k32, 4), tu_to_f32(v, v32, 4);
    for (int causal = 0; causal <= 1; causal++) {
        p.causal = causal;
        const double *expect = causal ? want_causal : want;
        assert_int_equal(la_local_attention_f64(&p, q, k, v, y), LA_OK);
        assert_int_equal(la_local_attention_f32(&p, q32, k32, v32, y32), LA_OK);
        for (int i = 0; i < 4; i++) {
            if (!(fabs(y[i] - expect[i]) <= 1e-12 * expect[i]) ||
                !(fabs(y32[i] - expect[i]) <= 1e-6 * expect[i]))
                fail_msg("causal=%d query %d: %.17g (float32 %.9g), by hand %.17g", causal, i, y[i],
                         (double)y32[i], expect[i]);
        }
        assert_int_equal(la_ref_local_attention(&p, q, k, v, y), LA_OK);
        for (int i = 0; i < 4; i++)
            assert_true(fabs(y[i] - expect[i]) <= 1e-12 * expect[i]);
    }
}

/* The spike after key j, `step` keys on; the quick profile (larger steps) never steps
 * past the last key without trying it. */
static size_t next_spike(size_t j, size_t step, size_t M)
{
    if (tu_quick() && j + 1 < M && j + step >= M) return M - 1;
    return j + step;
}

/* The window's edge: with v zero but for one key j (v_j = 1), query i's output is
 * positive exactly when it sees j — |i − j| <= r (causal: 0 <= i − j <= r) and j within
 * the key length — and exactly 0 otherwise. Every query of every spike position, for
 * windows around the block sizes and N != M (positions compared as indices). */
static void window_edge_exact(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("window_edge_exact");
    const size_t sizes[][2] = {{200, 200}, {40, 150}, {150, 40}};
    const size_t windows[] = {1, 2, 5, 63, 64, 100};
    size_t checked = 0;
    for (size_t s = 0; s < 3; s++) {
        for (size_t w = 0; w < 6; w++) {
            for (int causal = 0; causal <= 1; causal++) {
                la_problem p;
                la_local_params local = LA_LOCAL_PARAMS_INIT;
                la_problem_init(&p, 1, 1, sizes[s][0], sizes[s][1], 8, 1);
                p.params = &local.head;
                local.window = windows[w];
                p.causal = causal;
                int64_t length = (int64_t)(p.n_keys - tu_next(&r) % 10);
                p.key_lengths = &length;
                const size_t N = p.n_queries, M = p.n_keys;
                double *q = tu_f64(N * 8), *k = tu_f64(M * 8), *v = tu_f64(M), *y = tu_f64(N);
                double *ref = tu_f64(N);
                float *q32 = tu_f32(N * 8), *k32 = tu_f32(M * 8), *v32 = tu_f32(M);
                float *y32 = tu_f32(N);
                tu_fill_normal(&r, q, N * 8, 0.5);
                tu_fill_normal(&r, k, M * 8, 0.5);
                tu_to_f32(q, q32, N * 8), tu_to_f32(k, k32, M * 8);
                /* spikes 1 to 9 keys apart; the quick profile 1 to 80 apart, and always the
                 * last key (past the key length when it is short) */
                const size_t gap = tu_quick() ? 80 : 9;
                for (size_t j = 0; j < M; j = next_spike(j, 1 + tu_next(&r) % gap, M)) {
                    memset(v, 0, M * sizeof *v);
                    v[j] = 1;
                    tu_to_f32(v, v32, M);
                    assert_int_equal(la_local_attention_f64(&p, q, k, v, y), LA_OK);
                    assert_int_equal(la_local_attention_f32(&p, q32, k32, v32, y32), LA_OK);
                    assert_int_equal(la_ref_local_attention(&p, q, k, v, ref), LA_OK);
                    for (size_t i = 0; i < N; i++) {
                        const size_t distance = i > j ? i - j : j - i;
                        const bool sees =
                            distance <= local.window && (!causal || j <= i) && (int64_t)j < length;
                        if (sees != (y[i] > 0) || sees != (y32[i] > 0) || sees != (ref[i] > 0))
                            fail_msg("N=%zu M=%zu r=%zu causal=%d: query %zu, spike at key %zu "
                                     "(length %lld): %s it, float64 %g, float32 %g, reference "
                                     "%g",
                                     N, M, local.window, causal, i, j, (long long)length,
                                     sees ? "sees" : "does not see", y[i], (double)y32[i], ref[i]);
                        if (!sees && (y[i] != 0 || y32[i] != 0 || ref[i] != 0))
                            fail_msg("query %zu, key %zu outside: not an exact 0", i, j);
                        checked++;
                    }
                }
                free(q), free(k), free(v), free(y), free(ref), free(q32), free(k32), free(v32);
                free(y32);
            }
        }
    }
    printf("  %zu (query, spike) pairs checked\n", checked);
}

/* The cost model: its pairs against counting them one query at a time (as the window
 * is defined), and the closed forms N(2r + 1) − r(r + 1) (causal N(r + 1) − r(r + 1)/2)
 * for N = M > r; FLOPs 2·d_k + 5 + 2·d_v per pair. */
static void cost_counts_window_pairs(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("cost_counts_window_pairs");
    for (int trial = 0; trial < 300; trial++) {
        la_problem p;
        la_local_params local = LA_LOCAL_PARAMS_INIT;
        const size_t N = 1 + tu_next(&r) % 200, M = 1 + tu_next(&r) % 200;
        la_problem_init(&p, 1, 1, N, M, 3, 5);
        p.params = &local.head;
        p.causal = (int)(tu_next(&r) % 2);
        local.window = trial % 10 == 0 ? SIZE_MAX : 1 + tu_next(&r) % 250;
        int64_t length = (int64_t)(tu_next(&r) % (M + 1));
        if (trial % 2) p.key_lengths = &length;
        const size_t m = p.key_lengths ? (size_t)length : M;
        double pairs = 0;
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < m; j++)
                pairs += (i > j ? i - j : j - i) <= local.window && (!p.causal || j <= i);
        la_cost c;
        assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &c), LA_OK);
        if (c.flops_qk != 2 * 3 * pairs || c.flops_softmax != 5 * pairs ||
            c.flops_av != 2 * 5 * pairs || c.flops_total != (6 + 5 + 10) * pairs)
            fail_msg("N=%zu M=%zu m=%zu r=%zu causal=%d: model qk %g softmax %g av %g, counted "
                     "%g pairs",
                     N, M, m, local.window, p.causal, c.flops_qk, c.flops_softmax, c.flops_av,
                     pairs);
    }
    la_problem p;
    la_local_params local = LA_LOCAL_PARAMS_INIT;
    la_problem_init(&p, 1, 1, 100000, 100000, 1, 1);
    p.params = &local.head;
    local.window = 64;
    la_cost c;
    assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT64, &c), LA_OK);
    assert_true(c.flops_softmax == 5 * (100000.0 * 129 - 64 * 65));
    p.causal = 1;
    assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT64, &c), LA_OK);
    assert_true(c.flops_softmax == 5 * (100000.0 * 65 - 64 * 65 / 2));
    /* N far beyond what a loop would count: still exact */
    la_problem_init(&p, 1, 1, (size_t)1 << 40, (size_t)1 << 40, 1, 1);
    p.params = &local.head;
    local.window = 1000;
    assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT64, &c), LA_OK);
    assert_true(c.flops_softmax == 5 * (1099511627776.0 * 2001 - 1000.0 * 1001));
}

/* The scratch does not grow with N: the model's workspace at N = M = 1024 and 65536 is the
 * same (one thread and four), and the kernel runs within it (test_attention.c checks that
 * the kernel needs exactly that much). It grows with r only up to the 256-key block. */
static void workspace_independent_of_n(void **state)
{
    (void)state;
    const int threads = la_get_num_threads();
    for (int t = 1; t <= 4; t *= 4) {
        assert_int_equal(la_set_num_threads(t), LA_OK);
        for (int causal = 0; causal <= 1; causal++) {
            la_problem p;
            la_local_params local = LA_LOCAL_PARAMS_INIT;
            la_cost small, big;
            la_problem_init(&p, 1, 4, 1024, 1024, 64, 64);
            p.params = &local.head;
            p.causal = causal;
            local.window = 32;
            assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &small), LA_OK);
            p.n_queries = p.n_keys = 65536;
            assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &big), LA_OK);
            assert_true(small.workspace_bytes > 0);
            assert_true(big.workspace_bytes == small.workspace_bytes);
            if (la_avx512_usable()) {
                /* the fused kernel's AVX-512 tiles: per thread qᵀ, a score block of 128 keys
                 * and oᵀ, la_fused_simd_q_block() queries wide (32 or 64; float64 16),
                 * whatever N and the window */
                const double simd = la_get_num_threads() * (64.0 + LA_FUSED_SIMD_K_BLOCK + 64) *
                                    (double)la_fused_simd_q_block() * 4;
                assert_true(small.workspace_bytes == simd);
                local.window = 100000;
                assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &big), LA_OK);
                assert_true(big.workspace_bytes == simd);
                local.window = 32;
                la_avx512_enable(false); /* the portable tiles' model, below */
                assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &big), LA_OK);
                p.n_queries = p.n_keys = 1024;
                assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &small), LA_OK);
                assert_true(big.workspace_bytes == small.workspace_bytes);
            }
            /* tasks of 32 queries: a 32 × bk score block, bk = 32 + 2r (causal 32 + r), and
             * 2 · 32 row values per thread */
            const double bk = 32 + (causal ? 32 : 64);
            const double per_thread = (2 * 32 + 32 * bk) * 4.0;
            assert_true(small.workspace_bytes == la_get_num_threads() * per_thread);
            /* windows past the key block: the block stays 256 keys */
            local.window = 1000;
            assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &big), LA_OK);
            local.window = 100000;
            assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &small), LA_OK);
            assert_true(big.workspace_bytes == small.workspace_bytes);
            assert_true(big.workspace_bytes == la_get_num_threads() * (2 * 32 + 32 * 256) * 4.0);
            la_avx512_enable(true);
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

/* 1, 2 and 3 threads give the same bits at windows inside, at and past the blocks (the
 * harness, test_attention.c, checks the default window). */
static void threads_bitwise_every_window(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("threads_bitwise_every_window");
    const size_t windows[] = {1, 5, 64, 100, 300};
    const int threads = la_get_num_threads();
    for (size_t w = 0; w < 5; w++) {
        for (int causal = 0; causal <= 1; causal++) {
            la_problem p;
            la_local_params local = LA_LOCAL_PARAMS_INIT;
            /* the quick profile: 130 × 100, still three 64-query blocks and 3 heads */
            la_problem_init(&p, 1, 3, tu_quick() ? 130 : 200, tu_quick() ? 100 : 170, 16, 8);
            p.params = &local.head;
            local.window = windows[w];
            p.causal = causal;
            inputs in;
            make_inputs(&p, &r, &in);
            float *one = tu_f32(in.no), *more = tu_f32(in.no);
            double *one64 = tu_f64(in.no), *more64 = tu_f64(in.no);
            assert_int_equal(la_set_num_threads(1), LA_OK);
            assert_int_equal(la_local_attention_f32(&p, in.q32, in.k32, in.v32, one), LA_OK);
            assert_int_equal(la_local_attention_f64(&p, in.q, in.k, in.v, one64), LA_OK);
            for (int t = 2; t <= 3; t++) {
                assert_int_equal(la_set_num_threads(t), LA_OK);
                assert_int_equal(la_local_attention_f32(&p, in.q32, in.k32, in.v32, more), LA_OK);
                assert_int_equal(la_local_attention_f64(&p, in.q, in.k, in.v, more64), LA_OK);
                if (memcmp(one, more, in.no * sizeof *one) != 0 ||
                    memcmp(one64, more64, in.no * sizeof *one64) != 0)
                    fail_msg("r=%zu causal=%d: %d threads differ from 1 (seed %llu)", local.window,
                             causal, t, (unsigned long long)tu_seed());
            }
            free(one), free(more), free(one64), free(more64);
            free_inputs(&in);
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

/* Window 0 is refused (la_problem_check), as are a float32 scale beyond float and the
 * range rule; out untouched each time. */
static void bad_calls_refused(void **state)
{
    (void)state;
    la_problem p;
    la_local_params local = LA_LOCAL_PARAMS_INIT;
    la_problem_init(&p, 1, 1, 3, 3, 2, 2);
    p.params = &local.head;
    float q[6] = {1, 2, 3, 4, 5, 6}, k[6] = {1, 0, 0, 1, 1, 1}, v[6] = {1, 2, 3, 4, 5, 6};
    double qd[6] = {0}, kd[6] = {0}, vd[6] = {0};
    float y[6], untouched[6];
    double yd[6];
    memset(y, 0x5a, sizeof y), memcpy(untouched, y, sizeof y);
    local.window = 0;
    assert_int_equal(la_local_attention_f32(&p, q, k, v, y), LA_EINVAL);
    assert_int_equal(la_local_attention_f64(&p, qd, kd, vd, yd), LA_EINVAL);
    assert_int_equal(la_ref_local_attention(&p, qd, kd, vd, yd), LA_EINVAL);
    la_cost c;
    assert_int_equal(la_attention_cost(LA_KERNEL_LOCAL, &p, LA_FLOAT32, &c), LA_EINVAL);
    local.window = 1;
    p.scale = 1e39;
    assert_int_equal(la_local_attention_f32(&p, q, k, v, y), LA_EINVAL);
    p.scale = 1;
    const float huge[6] = {1e20f, 1e20f, 1e20f, 1e20f, 1e20f, 1e20f};
    assert_int_equal(la_local_attention_f32(&p, huge, huge, v, y), LA_ERANGE);
    assert_memory_equal(y, untouched, sizeof y);
    assert_int_equal(la_local_attention_f32(&p, q, k, v, y), LA_OK);
    assert_true(tu_all_finite_f32(y, 6));
}

int main(void)
{
    tu_init("test_local");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_window_matches_reference),
        cmocka_unit_test(wide_window_is_softmax),
        cmocka_unit_test(window_one_by_hand),
        cmocka_unit_test(window_edge_exact),
        cmocka_unit_test(cost_counts_window_pairs),
        cmocka_unit_test(workspace_independent_of_n),
        cmocka_unit_test(threads_bitwise_every_window),
        cmocka_unit_test(bad_calls_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

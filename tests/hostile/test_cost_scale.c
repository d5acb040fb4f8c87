/* test_cost_scale.c — the cost model at sizes no kernel could run: la_attention_cost and
 * la_layer_cost_model must answer in constant time for any N up to la_problem_check's
 * overflow limit and any batch without key lengths (they are what `linattn flops`,
 * `scaling` and `crossover` print for N = 2^40 or B = 10^12), and their closed forms must
 * equal, bit for bit, the per-query and per-chunk loops they replaced at sizes where
 * those loops were exact. */
#include "../testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* This thread's CPU time: a call descheduled on a loaded machine is not charged for the
 * time it waited (wall-clock time once failed a CI run here). */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Generous: a closed form takes microseconds of CPU (even under ASan); a loop over
 * N = 2^40 queries or B = 10^12 entries takes minutes. */
#define SLOW_S 0.02

/* Whether kernel k holds scratch per token beyond q, k and v (FAVOR+'s and Taylor's
 * features, Linformer's E and F, the score functions' projections): its workspace grows
 * with N at a size every kernel runs. Such a workspace may pass size_t near
 * la_problem_check's limit on N, where LA_EOVERFLOW is the honest answer. Read off the
 * cost model itself, so a new kernel needs no entry here. */
static int workspace_per_token(la_kernel k)
{
    double w[2];
    for (int i = 0; i < 2; i++) {
        la_problem p;
        la_problem_init(&p, 1, 1, (size_t)1024 << i, (size_t)1024 << i, 8, 8);
        p.causal = la_kernel_get(k)->causal == LA_CAUSAL_REQUIRED;
        la_cost c;
        assert_int_equal(la_attention_cost(k, &p, LA_FLOAT32, &c), LA_OK);
        w[i] = c.workspace_bytes;
    }
    return w[1] > w[0];
}

/* Every kernel (in each causal form it allows) on p, timed; each call must succeed
 * with finite, positive totals. */
static void cost_every_kernel_fast(la_problem *p, const char *what)
{
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        for (int causal = 0; causal <= 1; causal++) {
            p->causal = causal;
            la_cost c;
            double t0 = now_s();
            la_status st = la_attention_cost((la_kernel)k, p, LA_FLOAT32, &c);
            double dt = now_s() - t0;
            const la_causal_rule rule = la_kernel_get((la_kernel)k)->causal;
            if ((rule == LA_CAUSAL_REQUIRED && !causal) || (rule == LA_CAUSAL_REFUSED && causal)) {
                assert_int_equal(st, LA_EINVAL);
                continue;
            }
            /* a chunked causal form's workspace C·(3·d_k + C) may not fit in size_t for a
             * huge chunk (the rows that read a chunk), nor the scratch per token of the
             * kernels that hold one (workspace_per_token), near la_problem_check's limit on
             * N: an honest LA_EOVERFLOW, but as fast as an answer */
            const int chunked = causal && (la_kernel_get((la_kernel)k)->params & LA_PARAM_CHUNK);
            const int too_big =
                st == LA_EOVERFLOW && (chunked || workspace_per_token((la_kernel)k));
            if (dt > SLOW_S ||
                (!too_big && (st != LA_OK || !(c.flops_total > 0) || !isfinite(c.flops_total))))
                fail_msg("%s, %s causal=%d: status %s, flops %g, %.3f ms", what,
                         la_kernel_name((la_kernel)k), causal, la_strerror(st), c.flops_total,
                         dt * 1e3);
        }
    }
}

/* N from 2^20 to the overflow limit, many chunk sizes; B = 10^12 without key lengths. */
static void huge_sizes_answer_at_once(void **state)
{
    (void)state;
    const size_t limit = SIZE_MAX / sizeof(double); /* B·H·N·d·8 must fit */
    const size_t ns[] = {(size_t)1 << 20, (size_t)1 << 40, (size_t)1 << 50, limit - 1, limit};
    const size_t chunks[] = {1, 7, 32, 4096, (size_t)1 << 33, SIZE_MAX};
    char what[128];
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
        for (size_t j = 0; j < sizeof chunks / sizeof *chunks; j++) {
            la_problem p;
            la_problem_init(&p, 1, 1, ns[i], ns[i], 1, 1);
            p.chunk = chunks[j];
            snprintf(what, sizeof what, "N = %zu, chunk %zu", ns[i], chunks[j]);
            assert_int_equal(la_problem_check(&p), LA_OK);
            cost_every_kernel_fast(&p, what);
        }
    }
    /* N = 2^40 with a typical head size, M != N both ways */
    la_problem p;
    la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
    la_problem_init(&p, 1, 8, (size_t)1 << 40, (size_t)1 << 30, 64, 64);
    cost_every_kernel_fast(&p, "N = 2^40, M = 2^30, H = 8, d = 64");
    la_problem_init(&p, 1, 8, (size_t)1 << 30, (size_t)1 << 40, 64, 64);
    cost_every_kernel_fast(&p, "N = 2^30, M = 2^40, H = 8, d = 64");
    /* B = 10^12 entries, no key lengths */
    la_problem_init(&p, 1000000000000ull, 8, 128, 128, 64, 64);
    lin.proj_rank = 64; /* Linformer: k in 1..M */
    p.params = &lin.head;
    cost_every_kernel_fast(&p, "B = 10^12");

    /* the layer model over the same sizes */
    la_layer_config cfg;
    la_layer_config_init(&cfg, 512, 8, 2048);
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        if (la_kernel_get((la_kernel)k)->causal != LA_CAUSAL_ALLOWED) continue; /* no layer */
        cfg.attention = (la_kernel)k;
        for (int decoder = 0; decoder <= 1; decoder++) {
            const size_t sizes[][2] = {{1000000000000ull, 128}, {1, (size_t)1 << 40}};
            for (size_t s = 0; s < 2; s++) {
                la_layer_cost lc;
                double t0 = now_s();
                la_status st = la_layer_cost_model(&cfg, decoder, sizes[s][0], sizes[s][1],
                                                   sizes[s][1], decoder, LA_FLOAT32, &lc);
                double dt = now_s() - t0;
                /* scratch per token (Taylor's features, B·H·N·(1 + d_h + d_h²) elements) may
                 * pass size_t at B = 10^12: an honest overflow, answered as fast */
                const int overflow_ok = st == LA_EOVERFLOW && workspace_per_token((la_kernel)k);
                if ((!overflow_ok && (st != LA_OK || !(lc.total > 0))) || dt > SLOW_S)
                    fail_msg("layer model %s decoder=%d B=%zu N=%zu: %s, %.3f ms",
                             la_kernel_name((la_kernel)k), decoder, sizes[s][0], sizes[s][1],
                             la_strerror(st), dt * 1e3);
            }
        }
    }
}

/* The old per-query loop of the chunked causal form, one head with m visible keys. */
static void chunked_loop(size_t N, size_t C, size_t m, double *pairs_intra, double *carried_keys,
                         double *carried_queries)
{
    *pairs_intra = *carried_keys = *carried_queries = 0;
    for (size_t s = 0; s < N; s += C) {
        const size_t e = s + C < N ? s + C : N;
        for (size_t i = s; i < e; i++) {
            const size_t vis = i + 1 < m ? i + 1 : m;
            if (vis > s) *pairs_intra += (double)(vis - s);
        }
        if (s > 0) *carried_queries += (double)(e - s);
        if (e < N && s < m) *carried_keys += (double)((e < m ? e : m) - s);
    }
}

/* The chunked causal model equals the loop for every N <= 70, every chunk size
 * 1..N+2 and every key length 0..N+1 (as key_lengths of one entry, and as M without
 * them); larger N with a few chunk sizes; the softmax pairs equal Σ_i min(i+1, m). */
static void closed_forms_equal_loops(void **state)
{
    (void)state;
    size_t cases = 0;
    for (size_t N = 1; N <= 300; N += N < 70 ? 1 : 37) {
        for (size_t C = 1; C <= N + 2; C += N < 70 ? 1 : 1 + C / 3) {
            for (size_t m = 0; m <= N + 1; m += N < 70 ? 1 : 1 + m / 4) {
                const size_t dk = 3, dv = 5;
                int64_t len = (int64_t)m;
                la_problem p;
                la_problem_init(&p, 1, 1, N, N + 1, dk, dv);
                p.causal = 1;
                p.chunk = C;
                p.key_lengths = &len;
                la_cost c;
                assert_int_equal(la_attention_cost(LA_KERNEL_LINEAR, &p, LA_FLOAT64, &c), LA_OK);
                double pi, ck, cq;
                chunked_loop(N, C, m, &pi, &ck, &cq);
                if (m == 0) pi = ck = cq = 0;
                const double ekv = ck * (2.0 * dk * dv + dk), eqs = cq * (2.0 * dk * dv + 2.0 * dk);
                if (c.flops_qk != 2 * pi * dk || c.flops_av != pi * (2.0 * dv + 1) ||
                    c.flops_kv != ekv || c.flops_qs != (m ? eqs : 0))
                    fail_msg("N %zu chunk %zu m %zu: qk %.17g (loop %.17g) kv %.17g (loop "
                             "%.17g) qs %.17g (loop %.17g)",
                             N, C, m, c.flops_qk, 2 * pi * dk, c.flops_kv, ekv, c.flops_qs, eqs);
                /* softmax: pairs Σ_i min(i + 1, m) */
                double pairs = 0;
                for (size_t i = 0; i < N; i++)
                    pairs += (double)(i + 1 < m ? i + 1 : m);
                assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT64, &c), LA_OK);
                if (c.flops_softmax != 5 * pairs)
                    fail_msg("softmax N %zu m %zu: %.17g, loop %.17g", N, m, c.flops_softmax,
                             5 * pairs);
                cases++;
            }
        }
    }
    assert_true(cases > 50000);
}

/* B identical entries without key lengths: batch × one entry, equal to the sum of the
 * B entries given as key lengths (the old per-entry loop), bit for bit. */
static void batch_product_equals_sum(void **state)
{
    (void)state;
    const size_t B = 1000;
    int64_t *lens = tu_alloc(B * sizeof *lens);
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_causal_rule rule = la_kernel_get((la_kernel)k)->causal;
        for (int causal = rule == LA_CAUSAL_REQUIRED; causal <= (rule != LA_CAUSAL_REFUSED);
             causal++) {
            la_problem p;
            la_problem_init(&p, B, 3, 77, 91, 16, 24);
            la_linformer_params lin = LA_LINFORMER_PARAMS_INIT;
            lin.proj_rank = 50; /* Linformer: k in 1..M */
            p.params = &lin.head;
            p.causal = causal;
            p.chunk = 10;
            la_cost a, b;
            assert_int_equal(la_attention_cost((la_kernel)k, &p, LA_FLOAT32, &a), LA_OK);
            for (size_t i = 0; i < B; i++)
                lens[i] = 91;
            p.key_lengths = lens;
            assert_int_equal(la_attention_cost((la_kernel)k, &p, LA_FLOAT32, &b), LA_OK);
            assert_true(a.flops_qk == b.flops_qk && a.flops_softmax == b.flops_softmax &&
                        a.flops_av == b.flops_av && a.flops_phi == b.flops_phi &&
                        a.flops_kv == b.flops_kv && a.flops_qs == b.flops_qs &&
                        a.flops_normalize == b.flops_normalize && a.flops_total == b.flops_total);
        }
    }
    free(lens);
}

int main(void)
{
    tu_init("test_cost_scale");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(huge_sizes_answer_at_once),
        cmocka_unit_test(closed_forms_equal_loops),
        cmocka_unit_test(batch_product_equals_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

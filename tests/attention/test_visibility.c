/* test_visibility.c — the keys no query sees are never read, and the key blocks a general
 * mask hides whole add nothing:
 *   unseen_keys_are_never_read   every registry row, both dtypes, one and three threads:
 *                                key lengths (0 included), causal top-left with N < M
 *                                (keys past N unseen), causal bottom-right, on inputs
 *                                whose unseen keys and values (rows past what the last
 *                                query sees, counted here) are then overwritten with
 *                                values past the range rule's bound, then with NaN: the
 *                                call still answers LA_OK with the same bits; the backward
 *                                passes too (d_q, and d_k, d_v of every key, the same
 *                                bits: zeros for the unseen);
 *   hidden_blocks_add_nothing    softmax (fused and materialized), hard, local, general and
 *                                cosine under a general mask or key mask that hides whole
 *                                key blocks (and rows): equal to the float64 reference
 *                                (1e-5 float32, 1e-12 float64), and bit for bit on one and
 *                                three threads.
 * Rows whose kernel refuses a setting (LA_EINVAL: a causal rule, a mask) are passed over. */
#include "../testutil.h"
#include "attention/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t B, H, N, M, dk, dv;
    int causal;
    la_causal_align align;
    int64_t lengths[2]; /* -1: no key lengths */
} shape;

static const shape shapes[] = {
    {2, 2, 5, 40, 8, 4, 0, LA_CAUSAL_TOP_LEFT, {3, 0}},
    {2, 1, 3, 300, 16, 8, 0, LA_CAUSAL_TOP_LEFT, {1, 270}},
    {1, 2, 7, 90, 8, 8, 1, LA_CAUSAL_TOP_LEFT, {-1, 0}},
    {2, 1, 70, 300, 4, 4, 1, LA_CAUSAL_TOP_LEFT, {65, 300}},
    {2, 2, 4, 50, 8, 4, 1, LA_CAUSAL_BOTTOM_RIGHT, {20, 1}},
    {2, 1, 1, 600, 64, 64, 0, LA_CAUSAL_TOP_LEFT, {1, 0}},
};

static void problem_of(la_problem *p, const shape *s)
{
    la_problem_init(p, s->B, s->H, s->N, s->M, s->dk, s->dv);
    p->causal = s->causal;
    p->causal_align = s->align;
    if (s->lengths[0] >= 0) p->key_lengths = s->lengths;
}

/* Keys of entry b some query sees, from the definitions: min(M, L_b), and under causal
 * masking what the last query sees, j <= N − 1 + o (o = M − N bottom-right, else 0). */
static size_t keys_seen(const la_problem *p, size_t b)
{
    size_t m = p->n_keys;
    if (p->key_lengths && (size_t)p->key_lengths[b] < m) m = (size_t)p->key_lengths[b];
    if (!p->causal) return m;
    const long long o = p->causal_align == LA_CAUSAL_BOTTOM_RIGHT
                            ? (long long)p->n_keys - (long long)p->n_queries
                            : 0;
    const long long last = (long long)p->n_queries + o; /* keys [0, last) */
    if (last <= 0) return 0;
    return (size_t)last < m ? (size_t)last : m;
}

/* Overwrites the unseen rows of x (B, H, M, d) with value; returns how many it wrote. */
static size_t poison(const la_problem *p, void *x, size_t d, la_dtype dt, double value)
{
    size_t n = 0;
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++)
            for (size_t j = keys_seen(p, b); j < p->n_keys; j++)
                for (size_t c = 0; c < d; c++, n++) {
                    const size_t at = ((b * p->heads + h) * p->n_keys + j) * d + c;
                    if (dt == LA_FLOAT32)
                        ((float *)x)[at] = (float)value;
                    else
                        ((double *)x)[at] = value;
                }
    return n;
}

static void *fill(tu_rng *r, size_t n, la_dtype dt)
{
    double *x = tu_f64(n);
    tu_fill_normal(r, x, n, 1);
    if (dt == LA_FLOAT64) return x;
    float *y = tu_f32(n);
    tu_to_f32(x, y, n);
    free(x);
    return y;
}

static void unseen_keys_are_never_read(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("unseen_keys_are_never_read");
    const int threads = la_get_num_threads();
    size_t checked = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        la_problem p;
        problem_of(&p, &shapes[si]);
        const size_t heads = p.batch * p.heads;
        const size_t nq = heads * p.n_queries * p.d_k, nk = heads * p.n_keys * p.d_k;
        const size_t nv = heads * p.n_keys * p.d_v, no = heads * p.n_queries * p.d_v;
        for (int dti = 0; dti < 2; dti++) {
            const la_dtype dt = dti ? LA_FLOAT64 : LA_FLOAT32;
            const size_t es = dt == LA_FLOAT32 ? sizeof(float) : sizeof(double);
            /* past the range rule's bound in either precision: 1e30 squared passes float32,
             * 1e300 float64 */
            const double huge = dt == LA_FLOAT32 ? 1e30 : 1e300;
            void *q = fill(&r, nq, dt), *k = fill(&r, nk, dt), *v = fill(&r, nv, dt);
            unsigned char *want = tu_alloc(no * es), *got = tu_alloc(no * es);
            for (la_kernel kr = 0; kr < LA_KERNEL_COUNT; kr++) {
                const la_kernel_info *row = la_kernel_get(kr);
                if (!row->fns->forward_f32) continue;
                assert_int_equal(la_set_num_threads(1), LA_OK);
                memset(want, 0, no * es);
                const la_status st0 = la_attention(kr, &p, dt, q, k, v, want);
                if (st0 == LA_EINVAL) continue; /* a causal rule the row refuses */
                if (st0 != LA_OK)
                    fail_msg("%s %s shape %zu: clean inputs: %s (seed %llu)", row->name,
                             dt == LA_FLOAT32 ? "f32" : "f64", si, la_strerror(st0),
                             (unsigned long long)tu_seed());
                void *k2 = tu_alloc(nk * es), *v2 = tu_alloc(nv * es);
                /* the backward on clean inputs: d_out drawn, out the forward's */
                const bool bwd = row->fns->backward_f32 != NULL;
                void *d_out = bwd ? fill(&r, no, dt) : NULL;
                unsigned char *g_want = bwd ? tu_alloc((nq + nk + nv) * es) : NULL;
                unsigned char *g_got = bwd ? tu_alloc((nq + nk + nv) * es) : NULL;
                if (bwd)
                    assert_int_equal(la_attention_backward(kr, &p, dt, q, k, v, want, NULL, d_out,
                                                           g_want, g_want + nq * es,
                                                           g_want + (nq + nk) * es),
                                     LA_OK);
                for (int what = 0; what < 2; what++) {
                    memcpy(k2, k, nk * es);
                    memcpy(v2, v, nv * es);
                    const double value = what == 0 ? huge : NAN;
                    const size_t n = poison(&p, k2, p.d_k, dt, value);
                    poison(&p, v2, p.d_v, dt, value);
                    if (n == 0) continue; /* every key seen */
                    for (int t = 1; t <= 3; t += 2) {
                        assert_int_equal(la_set_num_threads(t), LA_OK);
                        memset(got, 0xA5, no * es);
                        const la_status st = la_attention(kr, &p, dt, q, k2, v2, got);
                        if (st != LA_OK || memcmp(want, got, no * es) != 0)
                            fail_msg("%s %s shape %zu threads %d: unseen keys %s: %s%s (seed "
                                     "%llu)",
                                     row->name, dt == LA_FLOAT32 ? "f32" : "f64", si, t,
                                     what == 0 ? "huge" : "NaN", la_strerror(st),
                                     st == LA_OK ? ", output changed" : "",
                                     (unsigned long long)tu_seed());
                        checked++;
                        /* FAVOR+'s backward forms every key's features: a NaN in an
                         * unseen key answers LA_ERANGE there (nothing written) */
                        if (!bwd || (strcmp(row->family, "random-feature") == 0 && what == 1))
                            continue;
                        memset(g_got, 0xA5, (nq + nk + nv) * es);
                        const la_status sb =
                            la_attention_backward(kr, &p, dt, q, k2, v2, want, NULL, d_out, g_got,
                                                  g_got + nq * es, g_got + (nq + nk) * es);
                        if (sb != LA_OK || memcmp(g_want, g_got, (nq + nk + nv) * es) != 0)
                            fail_msg("%s %s shape %zu threads %d: backward, unseen keys %s: "
                                     "%s%s (seed %llu)",
                                     row->name, dt == LA_FLOAT32 ? "f32" : "f64", si, t,
                                     what == 0 ? "huge" : "NaN", la_strerror(sb),
                                     sb == LA_OK ? ", gradients changed" : "",
                                     (unsigned long long)tu_seed());
                        checked++;
                    }
                }
                free(k2), free(v2), free(d_out), free(g_want), free(g_got);
            }
            free(q), free(k), free(v), free(want), free(got);
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    assert_true(checked > 0);
    printf("  %zu calls with unseen keys poisoned\n", checked);
}

/* A mask hiding keys [256, 768) from every query (whole key blocks of the portable tiles,
 * 256 keys, and of local's), every key from query 1 and every fifth key from the odd
 * queries, or a key mask hiding keys [64, 320) of entry 0 and [256, 1024) of entry 1:
 * against the float64 reference, bit for bit on one and three threads. (That the blocks
 * are skipped, not computed and dropped, is test_cost's engine_work_follows_visibility.) */
static void hidden_blocks_add_nothing(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("hidden_blocks_add_nothing");
    const la_kernel kernels[] = {LA_KERNEL_SOFTMAX, LA_KERNEL_SOFTMAX_MATERIALIZED,
                                 LA_KERNEL_HARD,    LA_KERNEL_LOCAL,
                                 LA_KERNEL_GENERAL, LA_KERNEL_COSINE};
    const size_t B = 2, H = 2, N = 70, M = 1100, dk = 16, dv = 8;
    const int threads = la_get_num_threads();
    size_t checked = 0;
    for (int which = 0; which < 2; which++) {
        for (int causal = 0; causal < 2; causal++) {
            la_problem p;
            la_local_params local = LA_LOCAL_PARAMS_INIT;
            la_problem_init(&p, B, H, N, M, dk, dv);
            p.params = &local.head;
            p.causal = causal;
            p.causal_align = LA_CAUSAL_BOTTOM_RIGHT;
            local.window = 300;
            uint8_t *mask = tu_alloc(which == 0 ? N * M : B * M);
            if (which == 0) {
                for (size_t i = 0; i < N; i++)
                    for (size_t j = 0; j < M; j++)
                        mask[i * M + j] =
                            i == 1 || (j >= 256 && j < 768) || (i % 2 == 1 && j % 5 == 0);
                p.mask = mask;
            } else {
                for (size_t b = 0; b < B; b++)
                    for (size_t j = 0; j < M; j++)
                        mask[b * M + j] = b == 0 ? j >= 64 && j < 320 : j >= 256 && j < 1024;
                p.key_mask = mask;
            }
            const size_t heads = B * H;
            double *q = tu_f64(heads * N * dk), *k = tu_f64(heads * M * dk);
            double *v = tu_f64(heads * M * dv), *ref = tu_f64(heads * N * dv);
            tu_fill_normal(&r, q, heads * N * dk, 1);
            tu_fill_normal(&r, k, heads * M * dk, 1);
            tu_fill_normal(&r, v, heads * M * dv, 1);
            float *q32 = tu_f32(heads * N * dk), *k32 = tu_f32(heads * M * dk);
            float *v32 = tu_f32(heads * M * dv);
            tu_to_f32(q, q32, heads * N * dk), tu_to_f32(k, k32, heads * M * dk);
            tu_to_f32(v, v32, heads * M * dv);
            for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
                if (la_ref_attention(kernels[ki], &p, q, k, v, ref) != LA_OK)
                    fail_msg("%s: reference refused", la_kernel_name(kernels[ki]));
                double *y64[2] = {tu_f64(heads * N * dv), tu_f64(heads * N * dv)};
                float *y32[2] = {tu_f32(heads * N * dv), tu_f32(heads * N * dv)};
                for (int t = 0; t < 2; t++) {
                    assert_int_equal(la_set_num_threads(t ? 3 : 1), LA_OK);
                    assert_int_equal(la_attention(kernels[ki], &p, LA_FLOAT64, q, k, v, y64[t]),
                                     LA_OK);
                    assert_int_equal(
                        la_attention(kernels[ki], &p, LA_FLOAT32, q32, k32, v32, y32[t]), LA_OK);
                }
                const char *name = la_kernel_name(kernels[ki]);
                tu_assert_close_f64(y64[0], ref, heads * N * dv, 1e-12, "%s f64 mask %d causal %d",
                                    name, which, causal);
                tu_assert_close_f32(y32[0], ref, heads * N * dv, 1e-5, "%s f32 mask %d causal %d",
                                    name, which, causal);
                assert_memory_equal(y64[0], y64[1], heads * N * dv * sizeof(double));
                assert_memory_equal(y32[0], y32[1], heads * N * dv * sizeof(float));
                free(y64[0]), free(y64[1]), free(y32[0]), free(y32[1]);
                checked++;
            }
            free(q), free(k), free(v), free(ref), free(q32), free(k32), free(v32), free(mask);
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    printf("  %zu masked kernels checked\n", checked);
}

int main(void)
{
    tu_init("test_visibility");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unseen_keys_are_never_read),
        cmocka_unit_test(hidden_blocks_add_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

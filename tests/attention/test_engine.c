/* test_engine.c — the online-softmax engine (lib/attention/engine.h) itself, on a keys
 * function no kernel pairs with every tile set: a window [i − r, i + r] whose lower end
 * moves, cut by key lengths. What the kernels' tests do not cover:
 *   window_matches_plain_loop   each tile set (portable; AVX-512 wide, float32 with 32 and
 *                               with 64 queries a task, and narrow, where the CPU has them),
 *                               float32 and float64, against a float64 plain loop over each
 *                               row's window (tolerances 1e-5 and 1e-12, as every kernel);
 *                               empty windows give zero rows;
 *   window_threads_bitwise      1, 2 and 3 threads give the same bits, and so do the 32- and
 *                               64-query float32 tiles. */
#include "../testutil.h"
#include "attention/engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { SET_PORTABLE, SET_AVX512, SET_AVX512_64, N_SETS };
static const char *const set_names[N_SETS] = {"portable", "avx512 (32 queries)",
                                              "avx512 (64 queries)"};

/* The window of query i: keys [i − r, i + r] within the m the key lengths leave. */
static void window_keys(const la_engine_task *t, size_t i, size_t *lo, size_t *hi)
{
    const size_t r = *(const size_t *)t->e->ctx;
    *lo = i > r ? i - r : 0;
    *hi = i + r + 1 < t->m ? i + r + 1 : t->m;
    if (*lo > *hi) *lo = *hi;
}

/* The engine of tile set `set` in float32 (f32) or float64 on p, with the window r. */
static la_engine engine_of(int set, int f32, const la_problem *p, const size_t *r)
{
    const size_t elem = f32 ? sizeof(float) : sizeof(double);
    la_engine e = {.elem = elem, .keys = window_keys, .ctx = r};
    if (set == SET_PORTABLE) {
        e.wide = f32 ? la_engine_portable_f32 : la_engine_portable_f64;
        e.q_block = LA_SOFTMAX_Q_BLOCK;
        e.k_block = 64; /* several key blocks per task */
        e.bq = p->n_queries < e.q_block ? p->n_queries : e.q_block;
        e.bk = p->n_keys < e.k_block ? p->n_keys : e.k_block;
        e.scratch_bytes = la_engine_portable_bytes(e.bq, e.bk, elem, elem, 0);
    } else {
        const bool large = f32 && set == SET_AVX512_64;
        e.wide = !f32    ? la_engine_avx512_wide_f64
                 : large ? la_engine_avx512_wide64_f32
                         : la_engine_avx512_wide_f32;
        e.narrow = f32 ? la_engine_avx512_narrow_f32 : la_engine_avx512_narrow_f64;
        e.narrow_rows = f32 ? LA_FUSED_SIMD_NARROW_ROWS : LA_FUSED_SIMD_F64_NARROW_ROWS;
        e.q_block = !f32    ? LA_FUSED_SIMD_F64_Q_BLOCK
                    : large ? LA_FUSED_SIMD_Q_BLOCK_LARGE
                            : LA_FUSED_SIMD_Q_BLOCK;
        e.k_block = f32 ? LA_FUSED_SIMD_K_BLOCK : LA_FUSED_SIMD_F64_K_BLOCK;
        e.scratch_bytes = la_round_up_64(f32 ? la_fused_simd_scratch_bytes(p, e.q_block)
                                             : la_fused_simd_scratch_bytes_f64(p));
    }
    return e;
}

/* out_i = Σ_{j in the window} softmax(q_i·k_j · scale)_j v_j in float64, zero for an empty
 * window. */
static void plain_loop(const la_problem *p, const int64_t *lengths, size_t r, const double *q,
                       const double *k, const double *v, double *out)
{
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    double *s = tu_f64(M);
    for (size_t bh = 0; bh < p->batch * p->heads; bh++) {
        const size_t m = (size_t)lengths[bh / p->heads] < M ? (size_t)lengths[bh / p->heads] : M;
        for (size_t i = 0; i < N; i++) {
            const size_t lo = i > r ? i - r : 0, hi = i + r + 1 < m ? i + r + 1 : m;
            double *o = out + (bh * N + i) * dv, max = -INFINITY, sum = 0;
            memset(o, 0, dv * sizeof *o);
            for (size_t j = lo; j < hi; j++) {
                s[j] = 0;
                for (size_t c = 0; c < dk; c++)
                    s[j] += q[(bh * N + i) * dk + c] * k[(bh * M + j) * dk + c];
                s[j] *= p->scale;
                max = s[j] > max ? s[j] : max;
            }
            for (size_t j = lo; j < hi; j++) {
                const double w = exp(s[j] - max);
                sum += w;
                for (size_t c = 0; c < dv; c++)
                    o[c] += w * v[(bh * M + j) * dv + c];
            }
            for (size_t c = 0; c < dv && sum > 0; c++)
                o[c] /= sum;
        }
    }
    free(s);
}

typedef struct {
    size_t n;      /* queries */
    size_t window; /* r */
} shape;

/* N = 3 runs the narrow tiles, N = 70 the wide ones with a tail task; windows inside a key
 * block, across blocks, past every key, and r = 0 (one key). */
static const shape shapes[] = {{3, 0}, {3, 40}, {70, 0}, {70, 5}, {70, 40}, {70, 500}};

static void window_matches_plain_loop(void **state)
{
    (void)state;
    const size_t B = 2, H = 2, M = 300, dk = 16, dv = 8;
    int64_t lengths[2] = {300, 30}; /* entry 1: rows past 30 + r see no key */
    int sets_run = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        la_problem p;
        la_problem_init(&p, B, H, shapes[si].n, M, dk, dv);
        p.key_lengths = lengths;
        const size_t r = shapes[si].window, N = p.n_queries;
        const size_t nq = B * H * N * dk, nk = B * H * M * dk, nv = B * H * M * dv,
                     no = B * H * N * dv;
        tu_rng rng = tu_rng_for("window_matches_plain_loop");
        double *q = tu_f64(nq), *k = tu_f64(nk), *v = tu_f64(nv), *ref = tu_f64(no),
               *out = tu_f64(no);
        float *q32 = tu_f32(nq), *k32 = tu_f32(nk), *v32 = tu_f32(nv), *out32 = tu_f32(no);
        tu_fill_normal(&rng, q, nq, 1);
        tu_fill_normal(&rng, k, nk, 1);
        tu_fill_normal(&rng, v, nv, 1);
        tu_to_f32(q, q32, nq), tu_to_f32(k, k32, nk), tu_to_f32(v, v32, nv);
        tu_to_f64(q32, q, nq), tu_to_f64(k32, k, nk), tu_to_f64(v32, v, nv);
        plain_loop(&p, lengths, r, q, k, v, ref);
        for (int set = 0; set < N_SETS; set++) {
            if (set != SET_PORTABLE && !la_fused_simd_usable(&p)) continue;
            sets_run |= 1 << set;
            la_engine e = engine_of(set, 0, &p, &r);
            assert_int_equal(la_engine_run(&e, &p, q, k, v, out, NULL, 0), LA_OK);
            tu_assert_close_f64(out, ref, no, 1e-12, "%s float64 N=%zu r=%zu", set_names[set], N,
                                r);
            e = engine_of(set, 1, &p, &r);
            assert_int_equal(la_engine_run(&e, &p, q32, k32, v32, out32, NULL, 0), LA_OK);
            tu_assert_close_f32(out32, ref, no, 1e-5, "%s float32 N=%zu r=%zu", set_names[set], N,
                                r);
        }
        free(q), free(k), free(v), free(ref), free(out), free(q32), free(k32), free(v32),
            free(out32);
    }
    if (!(sets_run & (1 << SET_AVX512)))
        print_message("window_matches_plain_loop: the AVX-512 tiles do not run here (%s)\n",
                      la_simd_config());
}

static void window_threads_bitwise(void **state)
{
    (void)state;
    const int threads = la_get_num_threads();
    const size_t B = 1, H = 3, N = 70, M = 300, dk = 16, dv = 8, r = 40;
    int64_t lengths[1] = {300};
    la_problem p;
    la_problem_init(&p, B, H, N, M, dk, dv);
    p.key_lengths = lengths;
    const size_t nq = B * H * N * dk, nk = B * H * M * dk, nv = B * H * M * dv, no = B * H * N * dv;
    tu_rng rng = tu_rng_for("window_threads_bitwise");
    double *q = tu_f64(nq), *k = tu_f64(nk), *v = tu_f64(nv);
    float *q32 = tu_f32(nq), *k32 = tu_f32(nk), *v32 = tu_f32(nv), *first = tu_f32(no),
          *again = tu_f32(no), *of32 = tu_f32(no); /* the 32-query tiles' output */
    tu_fill_normal(&rng, q, nq, 1);
    tu_fill_normal(&rng, k, nk, 1);
    tu_fill_normal(&rng, v, nv, 1);
    tu_to_f32(q, q32, nq), tu_to_f32(k, k32, nk), tu_to_f32(v, v32, nv);
    for (int set = 0; set < N_SETS; set++) {
        if (set != SET_PORTABLE && !la_fused_simd_usable(&p)) continue;
        for (int t = 1; t <= 3; t++) {
            assert_int_equal(la_set_num_threads(t), LA_OK);
            const la_engine e = engine_of(set, 1, &p, &r);
            assert_int_equal(la_engine_run(&e, &p, q32, k32, v32, t == 1 ? first : again, NULL, 0),
                             LA_OK);
            if (t > 1 && memcmp(first, again, no * sizeof *first) != 0)
                fail_msg("%s: %d threads differ from 1", set_names[set], t);
        }
        if (set == SET_AVX512) memcpy(of32, first, no * sizeof *first);
        if (set == SET_AVX512_64 && memcmp(first, of32, no * sizeof *first) != 0)
            fail_msg("the 64-query tiles differ from the 32-query ones");
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
    free(q), free(k), free(v), free(q32), free(k32), free(v32), free(first), free(again);
    free(of32);
}

int main(void)
{
    tu_init("test_engine");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(window_matches_plain_loop),
        cmocka_unit_test(window_threads_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

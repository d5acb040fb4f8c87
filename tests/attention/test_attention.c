/* test_attention.c — one harness for every attention kernel, in the spirit of ggml's
 * test-backend-ops: a table of rows and the properties every row must hold.
 *
 * ROWS are generated from the kernel registry (la_kernel_get): every kernel × every
 * causal form its rule allows × every shape below × every feature map when the kernel
 * reads one (LA_PARAM_FEATURE_MAP); the chunk and eps of a shape apply where the kernel
 * reads them. A new registry row is tested here with no edit, beyond at most an entry
 * in `tolerances`.
 *
 * PROPERTIES, one cmocka test each, each over every row; a failing row is named (kernel,
 * form, shape, parameters) with the seed, and the property fails after every row ran:
 *   matches_reference       forward_f64 and forward_f32 against the row's float64
 *                           reference; queries that see no key give exact zeros;
 *   causal_ignores_future   causal rows: new keys and values from position t on (and new
 *                           queries from t on) leave output rows i < t bit for bit;
 *   threads_bitwise         1, 2 and 3 threads give the same bits;
 *   errors_leave_output     every bad call returns its status and leaves out untouched;
 *   workspace_as_cost       at workspace_limit = la_attention_cost's workspace_bytes the
 *                           call runs (the same bits as unlimited), one byte less it
 *                           returns LA_EBUDGET and leaves out untouched;
 *   backward_matches_reference  backward_f64 and backward_f32 against the row's
 *                           reference_backward on the shapes above, also with a query
 *                           whose keys all score alike and with logits of ±1e3 (softmax
 *                           d_q, d_k: relative to their norm or, where they cancel to far
 *                           below their terms, to a tenth of the terms' size: yardsticks.h);
 *   backward_threads_bitwise, backward_errors_leave_output, backward_workspace_as_cost
 *                           the forwards' properties, for the backwards;
 *   gradients               gradient mode: reference_backward, backward_f64 and
 *                           backward_f32 against central differences of the float64
 *                           reference, also with equal scores and (float64) logits of ±1e3
 *                           (skipped, saying so, for rows without a backward);
 *   finite_differences_self_test  the gradient mode's machinery against a softmax
 *                           backward written by hand, and against two broken ones.
 * They run on one thread, except threads_bitwise (1, 2, 3) and workspace_as_cost (1, 2):
 * what holds on one thread holds on more, bit for bit (property_begin says why).
 * main runs them all twice: on the default float32 paths, then with the AVX-512 paths
 * switched off (la_avx512_enable(false)) where the CPU has them; where it has not, the
 * second run would repeat the first, and the output says so.
 *
 * Replay a failure with LA_TEST_SEED=<the printed seed>. */
#include "../testutil.h"
#include "../yardsticks.h"
#include "attention/row.h" /* the rows' entry points */

#include "core/internal.h"   /* la_avx512_enable: the portable float32 paths */
#include "cpu/simd_avx512.h" /* la_avx512_usable */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tolerances */

/* Relative error ‖y − ref‖ / ‖ref‖ allowed against the float64 reference. The default
 * is what test_softmax.c and test_linear.c held every kernel to: float64 1e-12 (the
 * kernels sum in another order than the reference's plain loops: measured below 4e-15
 * here), float32 1e-5 (float32 rounding, 6e-8 per operation, over sums of up to 1000
 * terms: measured below 6e-7, and up to 1.2e-6 in the -O1 sanitizer build, where the
 * materializing kernel sums a row of exps in one chain). matches_reference prints the
 * worst it sees, per kernel.
 * `exact` is for kernels whose output selects rows of v (argmax): their inputs are
 * multiples of 1/8 in [-3.125, 3.125] with scale 1/8, so every score q·k·scale is exact
 * in float32 (d_k <= 128: at most 128 · 3.125² < 2¹¹ in steps of 2⁻⁹), every tie is a
 * true tie, and the output must equal the reference bit for bit. */
typedef struct {
    la_kernel kernel;
    double f32, f64;
    bool exact;
    double bwd_f32; /* the float32 backward's, where above max(TOL_BWD_F32, f32); else 0 */
} tolerance;

static const tolerance default_tolerance = {LA_KERNEL_COUNT, 1e-5, 1e-12, false, 0};
/* Taylor's float32 products run over its F = 1 + d_k + d_k² features (16,513 at d_k = 128),
 * whose rounding grows as √F·6e-8 ≈ 8e-6: measured up to 7.1e-6 forward at d_k = 127, 128;
 * 2e-5. Its backward's d_q (held to max(‖ref‖, TU_BWD_FLOOR · Y)) reaches further where a
 * query sees few keys: causal, N = 17, M = 64, d_k = 128, d_v = 1, key length 2 (seed
 * 889415392907: 2.27e-5) gave over 200,000 draws 2e-5 or more in 0.67%, 3e-5 in 2.7e-4,
 * 4e-5 once and 5e-5 never (largest 4.4e-5); 6e-5 for the backward. */
static const tolerance tolerances[] = {
    {LA_KERNEL_HARD, 0, 0, true, 0},
    {LA_KERNEL_TAYLOR, 2e-5, 1e-12, false, 6e-5},
};

static tolerance tolerance_of(la_kernel kernel)
{
    for (size_t i = 0; i < sizeof tolerances / sizeof tolerances[0]; i++)
        if (tolerances[i].kernel == kernel) return tolerances[i];
    return default_tolerance;
}

/* Gradient mode: central differences with step h = 1e-5 · max(1, |x|) have a truncation
 * error of h²/6 · L''' and a rounding error of about 1e-16 · |L| / h, together about
 * 1e-9 relative on these tiny problems (the self-test measures it); a float64 backward
 * must agree to 1e-6. A float32 backward to 1e-4, d_q and d_k of its norm or of the floor
 * TU_BWD_FLOOR · Y (yardsticks.h), whichever is larger: the softmax backward's
 * P (dP − Σ P dP) cancels, and float32's rounding is then of the size of the terms. */
#define FD_STEP 1e-5
#define TOL_GRAD_F64 1e-6
#define TOL_GRAD_F32 1e-4

/* ------------------------------------------------------------------ shapes */

/* One shape of a row: sizes, key lengths (one per batch entry: none, the given ones, or
 * drawn in [0, M] from the run's seed), and the parameters only some kernels read: the
 * chunk of a causal chunked kernel (0: the default, 32) and eps (0: the default, 1e-6). */
enum { NO_LENGTHS = 0, GIVEN_LENGTHS = 1, RANDOM_LENGTHS = 2 };
typedef struct {
    size_t batch, heads, n, m, d_k, d_v;
    int lengths_kind;
    int64_t lengths[3];
    size_t chunk;
    double eps;
} shape;

/* The shapes test_softmax.c (matches_reference and the property tests) and
 * test_linear.c (kernels_match_reference, causal_ignores_future, workspace_limit_is_exact,
 * error_paths) checked their kernels on, in that order, now checked on every kernel and
 * both causal forms: N, M in {1, 2, 3, 5, 6, 17, 33, 64, 65, 70, 100, 129, 200, 257, 280,
 * 300, 1000}, M != N in most, d_k in {1, 3, 8, 16, 32, 64, 127, 128} and d_v != d_k in
 * most, B·H from 1 to 6 (so on 2 and 3 threads the linear kernels run both schedules:
 * whole heads per thread, and ordered tasks within heads), key lengths absent, 0,
 * partial, M, random; chunks 1, 2, 3, 5, 7, 16, 32, 64, 100, 128: not dividing N, = N
 * and > N. Block edges: fused softmax 64 queries × 256 keys (AVX-512: 32 × 128), linear
 * 128-key blocks, 128-query blocks and 512-key pieces (M = 1000: two, the second cut
 * short by key length 777). The 1000s only with small d, so the float64 reference stays
 * quick. (test_linear.c keeps its two larger schedule tests: 6 heads of 600 × 550 on 4
 * threads, and one head of 1100 tokens in 138 chunks or 5000 keys in ten pieces.) */
/* clang-format off */
static shape shapes[] = {
    /* B, H, N, M, d_k, d_v, lengths: 0 none, 1 given, 2 random, {L_b}, chunk, eps */
    {1, 1, 1, 1, 1, 1, 0, {0}, 0, 0},
    {1, 2, 2, 3, 3, 5, 0, {0}, 0, 0},
    {2, 1, 3, 2, 16, 16, 1, {0, 2}, 0, 0},
    {2, 2, 17, 17, 64, 64, 1, {17, 5}, 0, 0},
    {1, 3, 64, 65, 127, 32, 1, {65}, 0, 0},
    {2, 1, 65, 64, 128, 127, 1, {0, 40}, 0, 0},
    {1, 2, 129, 129, 16, 8, 0, {0}, 0, 0},
    {3, 1, 129, 17, 3, 1, 1, {17, 0, 9}, 0, 0},
    {1, 2, 64, 129, 64, 64, 1, {100}, 0, 0},
    {1, 1, 1000, 1000, 3, 2, 0, {0}, 0, 0},
    {2, 1, 1000, 65, 1, 4, 1, {65, 33}, 0, 0},
    {1, 1, 17, 1000, 16, 16, 1, {1000}, 0, 0},
    {1, 1, 2, 1000, 128, 3, 0, {0}, 0, 0},
    {2, 1, 1000, 3, 16, 17, 1, {3, 1}, 0, 0},
    {1, 2, 200, 200, 16, 8, 0, {0}, 0, 0},
    {2, 3, 300, 257, 32, 24, 1, {257, 190}, 0, 0},
    {2, 1, 5, 6, 3, 2, 1, {6, 2}, 0, 0},
    {1, 2, 33, 70, 8, 8, 0, {0}, 0, 0},
    {1, 1, 1, 1, 1, 2, 0, {0}, 64, 0},
    {2, 3, 2, 3, 3, 5, 2, {0}, 64, 0},
    {1, 2, 3, 2, 16, 7, 0, {0}, 2, 0},
    {2, 2, 17, 17, 16, 9, 1, {0, 17}, 5, 1e-3},
    {1, 2, 64, 65, 64, 32, 0, {0}, 64, 0},
    {2, 1, 65, 64, 127, 33, 1, {64, 5}, 16, 0},
    {1, 1, 129, 129, 128, 130, 0, {0}, 64, 0},
    {1, 2, 1000, 1000, 3, 4, 1, {777}, 64, 0},
    {1, 1, 1000, 129, 16, 8, 0, {0}, 100, 0},
    {1, 1, 129, 1000, 16, 8, 1, {1000}, 64, 0},
    {3, 1, 65, 17, 1, 3, 1, {0, 17, 9}, 7, 0},
    {1, 1, 17, 64, 128, 1, 2, {0}, 3, 0},
    {1, 1, 2, 1, 127, 64, 0, {0}, 1, 0},
    {2, 2, 1, 129, 64, 16, 2, {0}, 64, 0},
    {1, 3, 129, 3, 3, 1, 1, {2}, 128, 0},
    {1, 2, 100, 100, 8, 5, 0, {0}, 1, 0.5},
    {1, 2, 100, 100, 8, 5, 0, {0}, 16, 0},
    {1, 2, 100, 100, 8, 5, 0, {0}, 64, 0},
    {1, 2, 100, 100, 8, 5, 0, {0}, 100, 0},
    {2, 2, 300, 280, 16, 8, 0, {0}, 32, 0},
    {2, 1, 5, 5, 3, 2, 0, {0}, 0, 0},
};
/* clang-format on */
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

/* The quick profile's shapes (LA_TEST_PROFILE=quick: the sanitizer and emulated runs),
 * each small and each for the edges it stands for: the same edges as the table above at
 * a small fraction of its arithmetic (under qemu every operation is emulated). Every
 * kernel, causal form and feature map still runs on every property; docs/testing.md shows
 * that the C tests reach the same lines and branches in both profiles. */
/* clang-format off */
static shape quick_shapes[] = {
    /* the smallest problem: one query, one key, d = 1 */
    {1, 1, 1, 1, 1, 1, 0, {0}, 0, 0},
    /* a key length 0 (queries that see no key: exact zeros), d = 16 (one vector) */
    {2, 1, 3, 2, 16, 16, 1, {0, 2}, 0, 0},
    /* d_k = 127 (a vector's remainder lanes), M = 65 past a 64-key edge, H = 3 */
    {1, 3, 5, 65, 127, 32, 1, {65}, 0, 0},
    /* B = 3, key lengths {17, 0, 9}, d_v = 1, N = 129 past 32-, 64- and 128-query blocks */
    {3, 1, 129, 17, 3, 1, 1, {17, 0, 9}, 0, 0},
    /* M = 257 past the 256-key block; B·H = 6 with 70 queries in 3 chunks: whole heads
     * per thread and ordered tasks within heads on 2 and 3 threads */
    {2, 3, 70, 257, 8, 6, 1, {257, 190}, 0, 0},
    /* a chunk (64) larger than N */
    {1, 1, 1, 1, 1, 2, 0, {0}, 64, 0},
    /* a chunk (5) that does not divide N, eps = 1e-3, a key length 0 in a batch */
    {2, 2, 17, 17, 16, 9, 1, {0, 17}, 5, 1e-3},
    /* d_k = 128, d_v = 130, chunk 64: a whole 64-row pass and one row more */
    {1, 1, 65, 65, 128, 130, 0, {0}, 64, 0},
    /* M = 1000: two 512-key pieces, the second cut short by key length 777 */
    {1, 2, 17, 1000, 3, 4, 1, {777}, 64, 0},
    /* one query (decoding) over random key lengths, d_k = 64 */
    {2, 2, 1, 129, 64, 16, 2, {0}, 64, 0},
    /* chunk 1 (the recurrence itself), eps = 0.5 */
    {1, 2, 9, 9, 8, 5, 0, {0}, 1, 0.5},
};
/* clang-format on */
enum { N_QUICK_SHAPES = sizeof quick_shapes / sizeof quick_shapes[0] };

/* The gradient mode's shapes: tiny (central differences cost two reference calls per
 * input element), and still N != M, a zero key length, d_k != d_v, B·H > 1, a chunk
 * that does not divide N, eps not the default. Linear attention reads eps = 0.5 in all
 * three: with the default 1e-6, a query that sees one key (shape 0), or a relu query with
 * one positive feature (likely at d_k = 3), has an output that depends on q only through
 * eps, so its d_q and d_k are about 1e-6 of the terms that cancel to form them: central
 * differences lose them in rounding and float32 cannot resolve them (u·den/eps ≈ 1e-2);
 * test_linear_backward.c says more. */
static shape grad_shapes[] = {
    {1, 1, 1, 1, 1, 1, 0, {0}, 0, 0.5},
    {2, 1, 3, 4, 3, 2, 1, {4, 0}, 2, 0.5},
    {1, 2, 4, 3, 2, 3, 1, {2}, 3, 0.5},
};
enum { N_GRAD_SHAPES = sizeof grad_shapes / sizeof grad_shapes[0] };

/* Draws the RANDOM_LENGTHS of a shape list from the run's seed, in [0, M] (call after
 * tu_init; the row labels show them). */
static void shapes_draw_lengths(shape *list, size_t n, const char *name)
{
    for (size_t si = 0; si < n; si++) {
        if (list[si].lengths_kind != RANDOM_LENGTHS) continue;
        char label[64];
        snprintf(label, sizeof label, "%s %zu lengths", name, si);
        tu_rng rng = tu_rng_for(label);
        for (size_t b = 0; b < list[si].batch; b++)
            list[si].lengths[b] = (int64_t)(tu_next(&rng) % (list[si].m + 1));
    }
}

/* ------------------------------------------------------------------ rows */

typedef struct {
    const la_kernel_info *info;
    int causal;
    la_feature_map fm;
    const shape *s;
    size_t shape_index;
    tolerance tol;
    char label[320]; /* "linear causal phi=relu chunk=2 eps=1e-06, shape 20: B=1 H=2 ..." */
} row;

/* Every row of the kernels infos[] × causal forms × shapes × feature maps, in that order;
 * returns the count and fills rows[] when rows is not NULL. infos are the registry's rows
 * (registry_rows), or the self-test's copy with a hand-written backward. */
static size_t rows_generate(const shape *shape_list, size_t n_shapes,
                            const la_kernel_info *const *infos, size_t n_infos, row *rows)
{
    size_t count = 0;
    for (size_t ki = 0; ki < n_infos; ki++) {
        const la_kernel_info *info = infos[ki];
        for (int causal = 0; causal <= 1; causal++) {
            if ((info->causal == LA_CAUSAL_REQUIRED && !causal) ||
                (info->causal == LA_CAUSAL_REFUSED && causal))
                continue;
            const int n_fm = info->params & LA_PARAM_FEATURE_MAP ? LA_FEATURE_COUNT : 1;
            for (size_t si = 0; si < n_shapes; si++) {
                for (int fm = 0; fm < n_fm; fm++, count++) {
                    if (!rows) continue;
                    row *r = &rows[count];
                    const shape *s = &shape_list[si];
                    r->info = info;
                    r->causal = causal;
                    r->fm = (la_feature_map)fm;
                    r->s = s;
                    r->shape_index = si;
                    r->tol = tolerance_of(info->kernel);
                    char params[96] = "", lengths[64] = "none";
                    size_t at = 0;
                    if (info->params & LA_PARAM_SCALE)
                        at += (size_t)snprintf(params + at, sizeof params - at, " scale=%s",
                                               r->tol.exact ? "1/8" : "1/sqrt(d_k)");
                    if (info->params & LA_PARAM_FEATURE_MAP)
                        at += (size_t)snprintf(params + at, sizeof params - at, " phi=%s",
                                               la_feature_map_name(r->fm));
                    if ((info->params & LA_PARAM_CHUNK) && causal)
                        at += (size_t)snprintf(params + at, sizeof params - at, " chunk=%zu",
                                               s->chunk ? s->chunk : (size_t)LA_DEFAULT_CHUNK);
                    if (info->params & LA_PARAM_EPS)
                        at += (size_t)snprintf(params + at, sizeof params - at, " eps=%g",
                                               s->eps > 0 ? s->eps : LA_DEFAULT_EPS);
                    if (info->params & LA_PARAM_PROJ)
                        at += (size_t)snprintf(params + at, sizeof params - at, " k=%zu (drawn)",
                                               s->m < 8 ? s->m : (size_t)8);
                    if (info->params & LA_PARAM_SCORE_WEIGHTS)
                        at += (size_t)snprintf(params + at, sizeof params - at, " W%s (drawn)",
                                               info->params & LA_PARAM_SCORE_DIM ? " d_a=8" : "");
                    if (s->lengths_kind) {
                        size_t l = (size_t)snprintf(lengths, sizeof lengths, "{");
                        for (size_t b = 0; b < s->batch; b++)
                            l += (size_t)snprintf(lengths + l, sizeof lengths - l, "%s%lld",
                                                  b ? "," : "", (long long)s->lengths[b]);
                        snprintf(lengths + l, sizeof lengths - l, "}");
                    }
                    snprintf(r->label, sizeof r->label,
                             "%s %s%s, %sshape %zu: B=%zu H=%zu N=%zu M=%zu d_k=%zu d_v=%zu "
                             "key_lengths=%s",
                             info->name, causal ? "causal" : "non-causal", params,
                             shape_list == quick_shapes ? "quick " : "", si, s->batch, s->heads,
                             s->n, s->m, s->d_k, s->d_v, lengths);
                }
            }
        }
    }
    return count;
}

/* The rows of the registry over shape_list, allocated (free them). */
static row *registry_rows(const shape *shape_list, size_t n_shapes, size_t *n_rows)
{
    const la_kernel_info *infos[LA_KERNEL_COUNT];
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        infos[k] = la_kernel_get((la_kernel)k);
        assert_non_null(infos[k]);
    }
    *n_rows = rows_generate(shape_list, n_shapes, infos, LA_KERNEL_COUNT, NULL);
    row *rows = tu_alloc(*n_rows * sizeof *rows);
    rows_generate(shape_list, n_shapes, infos, LA_KERNEL_COUNT, rows);
    return rows;
}

/* The problem of a row: its shape, causal form, key lengths (pointing into the shape
 * table), φ, chunk, eps, and scale 1/8 for exact rows. */
/* The blocks row_problem points at (static: its problem is returned by value). Linformer:
 * the default rank (256) is above these shapes' M; k must be in 1..M, so k = min(M, 8).
 * Additive scores: d_a = 8 keeps the N·M·d_a tanh of the 1000-token shapes quick
 * (tests/attention/test_scores.c runs the default 64 and given weights). */
#define RANK(k)                                                                                    \
    {                                                                                              \
        {LA_PARAMS_LINFORMER, NULL}, (k), NULL, NULL, 0                                            \
    }
static const la_linformer_params rank_up_to_8[8] = {RANK(1), RANK(2), RANK(3), RANK(4),
                                                    RANK(5), RANK(6), RANK(7), RANK(8)};
#undef RANK
static const la_score_params score_dim_8 = {{LA_PARAMS_SCORE, NULL}, 8, NULL, NULL, 0};

static la_problem row_problem(const row *r)
{
    const shape *s = r->s;
    la_problem p;
    la_problem_init(&p, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v);
    p.causal = r->causal;
    p.key_lengths = s->lengths_kind ? s->lengths : NULL;
    p.feature_map = r->fm;
    if (s->chunk) p.chunk = s->chunk;
    if (s->eps > 0) p.eps = s->eps;
    if (r->tol.exact) p.scale = 0.125;
    if (r->info->params & LA_PARAM_PROJ) p.params = &rank_up_to_8[(s->m < 8 ? s->m : 8) - 1].head;
    if (r->info->params & LA_PARAM_SCORE_DIM) p.params = &score_dim_8.head;
    return p;
}

/* ------------------------------------------------------------------ inputs */

/* q (B,H,N,d_k), k (B,H,M,d_k), v (B,H,M,d_v) in both precisions: the float64 copies
 * hold exactly the float32 values, so the reference sees what the float32 kernel sees. */
typedef struct {
    size_t nq, nk, nv, no; /* elements of q, k, v, out */
    double *q, *k, *v;
    float *q32, *k32, *v32;
} inputs;

/* One value: N(0, 1) rounded to float32, or for exact rows a multiple of 1/8 in
 * [-3.125, 3.125]. */
static double draw(tu_rng *rng, bool exact)
{
    double z = tu_normal(rng);
    if (exact) {
        z = round(z * 8) / 8;
        z = z > 3.125 ? 3.125 : z < -3.125 ? -3.125 : z;
    }
    return (float)z;
}

static void fill(tu_rng *rng, bool exact, double *x, float *x32, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x32[i] = (float)(x[i] = draw(rng, exact));
}

/* Fresh inputs of a problem, on the 1/8 grid when exact, from the rng of `label`. */
static void inputs_make(inputs *in, const la_problem *p, bool exact, const char *label)
{
    const size_t bh = p->batch * p->heads;
    in->nq = bh * p->n_queries * p->d_k;
    in->nk = bh * p->n_keys * p->d_k;
    in->nv = bh * p->n_keys * p->d_v;
    in->no = bh * p->n_queries * p->d_v;
    in->q = tu_f64(in->nq);
    in->k = tu_f64(in->nk);
    in->v = tu_f64(in->nv);
    in->q32 = tu_f32(in->nq);
    in->k32 = tu_f32(in->nk);
    in->v32 = tu_f32(in->nv);
    tu_rng rng = tu_rng_for(label);
    fill(&rng, exact, in->q, in->q32, in->nq);
    fill(&rng, exact, in->k, in->k32, in->nk);
    fill(&rng, exact, in->v, in->v32, in->nv);
}

static void inputs_copy(inputs *to, const inputs *from)
{
    *to = *from;
    to->q = tu_f64(from->nq);
    to->k = tu_f64(from->nk);
    to->v = tu_f64(from->nv);
    to->q32 = tu_f32(from->nq);
    to->k32 = tu_f32(from->nk);
    to->v32 = tu_f32(from->nv);
    memcpy(to->q, from->q, from->nq * sizeof *from->q);
    memcpy(to->k, from->k, from->nk * sizeof *from->k);
    memcpy(to->v, from->v, from->nv * sizeof *from->v);
    memcpy(to->q32, from->q32, from->nq * sizeof *from->q32);
    memcpy(to->k32, from->k32, from->nk * sizeof *from->k32);
    memcpy(to->v32, from->v32, from->nv * sizeof *from->v32);
}

static void inputs_free(inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->q32);
    free(in->k32);
    free(in->v32);
}

/* The inputs of a row: one set per shape (two for shapes that exact rows use too), drawn
 * once from the rng of "shape <index>" and shared by every row and property on that
 * shape (drawing them afresh for each of the ~500 rows and 5 properties took seconds). */
static struct {
    const shape *s;
    bool exact;
    inputs in;
} input_cache[2 * N_SHAPES];
static size_t n_cached;

static const inputs *inputs_of(const row *r, const la_problem *p)
{
    for (size_t c = 0; c < n_cached; c++)
        if (input_cache[c].s == r->s && input_cache[c].exact == r->tol.exact)
            return &input_cache[c].in;
    assert_true(n_cached < sizeof input_cache / sizeof input_cache[0]);
    char label[64];
    snprintf(label, sizeof label, "shape %zu%s", r->shape_index, r->tol.exact ? " exact" : "");
    input_cache[n_cached].s = r->s;
    input_cache[n_cached].exact = r->tol.exact;
    inputs_make(&input_cache[n_cached].in, p, r->tol.exact, label);
    return &input_cache[n_cached++].in;
}

static void input_cache_free(void)
{
    for (size_t c = 0; c < n_cached; c++)
        inputs_free(&input_cache[c].in);
    n_cached = 0;
}

/* Every row through the public entry point (la_attention: the row's forward for dtype). */
static la_status run_f64(const row *r, const la_problem *p, const inputs *in, double *out)
{
    return la_attention(r->info->kernel, p, LA_FLOAT64, in->q, in->k, in->v, out);
}
static la_status run_f32(const row *r, const la_problem *p, const inputs *in, float *out)
{
    return la_attention(r->info->kernel, p, LA_FLOAT32, in->q32, in->k32, in->v32, out);
}

/* ------------------------------------------------------------------ reporting */

/* The property running and its failures: each failure names its row and the seed and
 * the property goes on with the next row; it fails at its end (property_end). Only the
 * first MAX_PRINTED failures are printed. */
enum { MAX_PRINTED = 25 };
#define MAX_PRINTED_TEXT "25"
static struct {
    const char *name;
    size_t failures, rows;
} prop;

/* threads: the thread count the property runs on, or 0 for a property that sets its own.
 * Every property but threads_bitwise and workspace_as_cost runs on one thread: on more,
 * the outputs are the same bits (threads_bitwise says so for every row), and where
 * another process keeps a core busy every OpenMP region waits for one (the whole
 * harness, with one busy process beside it on 2 cores: 7-8 s, against 9-10 s with these
 * properties on the default 2 threads; 3.5 s either way on an idle machine). */
static void property_begin(const char *name, int threads)
{
    prop.name = name;
    prop.failures = 0;
    prop.rows = 0;
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

static void row_fail(const row *r, const char *fmt, ...)
{
    if (prop.failures++ >= MAX_PRINTED) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_error("%s FAILED on row [%s]: %s (seed %llu)\n", prop.name, r ? r->label : "-", msg,
                (unsigned long long)tu_seed());
}

static void property_end(void)
{
    assert_int_equal(la_set_num_threads(0), LA_OK);
    if (prop.failures)
        fail_msg("%s: %zu check(s) failed over %zu rows (%s printed above; float32 paths: %s); "
                 "replay with LA_TEST_SEED=%llu",
                 prop.name, prop.failures, prop.rows,
                 prop.failures > MAX_PRINTED ? "the first " MAX_PRINTED_TEXT : "each",
                 la_config().simd, (unsigned long long)tu_seed());
    print_message("%s: %zu rows passed (float32 paths: %s)\n", prop.name, prop.rows,
                  la_config().simd);
}

/* Where flat output element e of p is: "b=1 h=0 i=17 c=3". */
static const char *where(const la_problem *p, size_t e, char *buf, size_t size)
{
    const size_t c = e % p->d_v, i = e / p->d_v % p->n_queries;
    const size_t h = e / p->d_v / p->n_queries % p->heads;
    const size_t b = e / p->d_v / p->n_queries / p->heads;
    snprintf(buf, size, "b=%zu h=%zu i=%zu c=%zu", b, h, i, c);
    return buf;
}

static bool check_status(const row *r, const char *what, la_status got, la_status want)
{
    if (got == want) return true;
    row_fail(r, "%s: status %s, expected %s", what, la_strerror(got), la_strerror(want));
    return false;
}

/* The output of every kernel is a weighted average of value rows (relative positions add
 * a^V's), so where those cancel (one query over one key of v ≈ −a^V) ‖out‖ can be far
 * below what was summed and its rounding large beside it: the error is taken relative to
 * max(‖ref‖, FWD_FLOOR · RMS(v) · √n), which is ‖ref‖ unless the averages cancel to a
 * hundredth of the values' size. */
#define FWD_FLOOR 0.01
static double values_floor(const inputs *in, size_t n_out)
{
    double s = 0;
    for (size_t e = 0; e < in->nv; e++)
        s += in->v[e] * in->v[e];
    return in->nv ? FWD_FLOOR * sqrt(s / (double)in->nv * (double)n_out) : 0;
}

/* y (float64 or float32) against ref: relative error below tol (relative to max(‖ref‖,
 * floor)), or for exact rows every element equal. Returns the relative error (+inf on
 * NaN, inf, or a mismatch). */
static double check_close(const row *r, const la_problem *p, const char *what, const double *y64,
                          const float *y32, const double *ref, size_t n, double tol, double floor)
{
    char at[96];
    size_t worst = 0;
    if (r->tol.exact) {
        for (size_t e = 0; e < n; e++) {
            const double y = y64 ? y64[e] : (double)y32[e];
            if (!(y == ref[e])) {
                row_fail(r, "%s: element %zu (%s) is %.9g, the reference %.9g (exact row)", what, e,
                         where(p, e, at, sizeof at), y, ref[e]);
                return INFINITY;
            }
        }
        return 0;
    }
    double err =
        y64 ? tu_rel_error_f64(y64, ref, n, &worst) : tu_rel_error_f32(y32, ref, n, &worst);
    double ref_norm = 0;
    for (size_t e = 0; e < n; e++)
        ref_norm += ref[e] * ref[e];
    ref_norm = sqrt(ref_norm);
    if (ref_norm > 0 && floor > ref_norm) err *= ref_norm / floor; /* ‖y − ref‖ / floor */
    if (!(err < tol))
        row_fail(r,
                 "%s: relative error %.3e >= %.0e; worst element %zu (%s): %.17g vs "
                 "reference %.17g",
                 what, err, tol, worst, where(p, worst, at, sizeof at),
                 y64 ? y64[worst] : (double)y32[worst], ref[worst]);
    return err;
}

/* a and b (n elements of elem_size bytes) the same bits; names the first difference. */
static bool check_same_bits(const row *r, const la_problem *p, const char *what, const void *a,
                            const void *b, size_t first, size_t n, size_t elem_size)
{
    const unsigned char *x = (const unsigned char *)a + first * elem_size;
    const unsigned char *y = (const unsigned char *)b + first * elem_size;
    if (memcmp(x, y, n * elem_size) == 0) return true;
    for (size_t e = 0; e < n; e++) {
        if (memcmp(x + e * elem_size, y + e * elem_size, elem_size) != 0) {
            char at[96];
            const double u = elem_size == 4 ? *(const float *)(const void *)(x + e * elem_size)
                                            : *(const double *)(const void *)(x + e * elem_size);
            const double w = elem_size == 4 ? *(const float *)(const void *)(y + e * elem_size)
                                            : *(const double *)(const void *)(y + e * elem_size);
            row_fail(r, "%s: element %zu (%s) differs: %.17g vs %.17g", what, first + e,
                     where(p, first + e, at, sizeof at), u, w);
            return false;
        }
    }
    return false;
}

#define SENTINEL 12345.0

static void fill_sentinel(double *out64, float *out32, size_t n)
{
    for (size_t e = 0; e < n; e++) {
        out64[e] = SENTINEL;
        out32[e] = (float)SENTINEL;
    }
}

/* out (float64 or float32) still the sentinel everywhere. */
static bool check_untouched(const row *r, const la_problem *p, const char *what,
                            const double *out64, const float *out32, size_t n)
{
    for (size_t e = 0; e < n; e++) {
        const double y = out64 ? out64[e] : (double)out32[e];
        if (!(y == SENTINEL)) {
            char at[96];
            row_fail(r, "%s: output element %zu (%s) written (%.17g) on error", what, e,
                     where(p, e, at, sizeof at), y);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ the rows of a run */

static row *rows;
static size_t n_rows;

/* ------------------------------------------------------------------ matches_reference */

/* The float64 references, computed once per (reference, shape, causal form, φ, grid) —
 * what a row's problem and inputs depend on — and kept for the program: softmax and
 * softmax_materialized share theirs, and the run with the AVX-512 paths off reuses them. */
static struct {
    la_forward_f64_fn reference;
    const shape *s;
    int causal;
    la_feature_map fm;
    bool exact;
    double *out;
} * ref_cache;
static size_t n_refs;

static const double *reference_of(const row *r, const la_problem *p, const inputs *in)
{
    for (size_t c = 0; c < n_refs; c++)
        if (ref_cache[c].reference == r->info->fns->reference && ref_cache[c].s == r->s &&
            ref_cache[c].causal == r->causal && ref_cache[c].fm == r->fm &&
            ref_cache[c].exact == r->tol.exact)
            return ref_cache[c].out;
    double *out = tu_f64(in->no);
    if (!check_status(r, "reference", r->info->fns->reference(p, in->q, in->k, in->v, out),
                      LA_OK)) {
        free(out);
        return NULL;
    }
    if (!ref_cache) ref_cache = tu_alloc(n_rows * sizeof *ref_cache); /* at most one a row */
    ref_cache[n_refs].reference = r->info->fns->reference;
    ref_cache[n_refs].s = r->s;
    ref_cache[n_refs].causal = r->causal;
    ref_cache[n_refs].fm = r->fm;
    ref_cache[n_refs].exact = r->tol.exact;
    ref_cache[n_refs].out = out;
    return ref_cache[n_refs++].out;
}

static void ref_cache_free(void)
{
    for (size_t c = 0; c < n_refs; c++)
        free(ref_cache[c].out);
    free(ref_cache);
    ref_cache = NULL;
    n_refs = 0;
}

/* forward_f64 and forward_f32 against the row's reference, at the row's tolerance (bit
 * for bit for exact rows); and every query of a batch entry whose key length is 0 (it
 * sees no key) gets an exact zero row, in both precisions. */
static void matches_reference(void **state)
{
    (void)state;
    property_begin("matches_reference", 1);
    double worst[LA_KERNEL_COUNT][2] = {{0}};
    for (size_t ri = 0; ri < n_rows; ri++, prop.rows++) {
        const row *r = &rows[ri];
        la_problem p = row_problem(r);
        const inputs *in = inputs_of(r, &p);
        const double *ref = reference_of(r, &p, in);
        double *y64 = tu_f64(in->no);
        float *y32 = tu_f32(in->no);
        if (ref) {
            if (check_status(r, "float64", run_f64(r, &p, in, y64), LA_OK)) {
                double e = check_close(r, &p, "float64", y64, NULL, ref, in->no, r->tol.f64,
                                       values_floor(in, in->no));
                if (e > worst[r->info->kernel][1]) worst[r->info->kernel][1] = e;
            }
            if (check_status(r, "float32", run_f32(r, &p, in, y32), LA_OK)) {
                double e = check_close(r, &p, "float32", NULL, y32, ref, in->no, r->tol.f32,
                                       values_floor(in, in->no));
                if (e > worst[r->info->kernel][0]) worst[r->info->kernel][0] = e;
            }
            /* queries that see no key: exact zeros */
            const size_t per_entry = p.heads * p.n_queries * p.d_v;
            for (size_t b = 0; b < p.batch; b++) {
                if (!p.key_lengths || p.key_lengths[b] != 0) continue;
                for (size_t e = b * per_entry; e < (b + 1) * per_entry; e++) {
                    if (y64[e] != 0 || y32[e] != 0) {
                        char at[96];
                        row_fail(r,
                                 "element %zu (%s) sees no key but is %.9g (float64), %.9g "
                                 "(float32), not 0",
                                 e, where(&p, e, at, sizeof at), y64[e], (double)y32[e]);
                        break;
                    }
                }
            }
        }
        free(y64);
        free(y32);
    }
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const tolerance t = tolerance_of((la_kernel)k);
        if (t.exact)
            print_message("  %-22s float64 and float32 bit for bit equal to the reference\n",
                          la_kernel_name((la_kernel)k));
        else
            print_message("  %-22s worst relative error: float64 %.1e (tolerance %.0e), "
                          "float32 %.1e (tolerance %.0e)\n",
                          la_kernel_name((la_kernel)k), worst[k][1], t.f64, worst[k][0], t.f32);
    }
    property_end();
}

/* ------------------------------------------------------------------ causal_ignores_future */

/* New values for queries i >= t and keys, values j >= t of every head: multiples of 1/8
 * in [-3.125, 3.125] (the grid of exact rows, and ordinary inputs for the others), one
 * tu_next each (normal draws here took a second per run). */
static void perturb_from(const la_problem *p, inputs *in, size_t t, tu_rng *rng)
{
    const size_t bh = p->batch * p->heads, N = p->n_queries, M = p->n_keys;
    const size_t dk = p->d_k, dv = p->d_v;
    for (size_t hd = 0; hd < bh; hd++) {
        for (size_t i = t; i < N; i++) {
            for (size_t c = 0; c < dk; c++) {
                const size_t at = (hd * N + i) * dk + c;
                in->q32[at] = (float)(in->q[at] = ((double)(tu_next(rng) % 51) - 25) / 8);
            }
        }
        for (size_t j = t; j < M; j++) {
            for (size_t c = 0; c < dk; c++) {
                const size_t at = (hd * M + j) * dk + c;
                in->k32[at] = (float)(in->k[at] = ((double)(tu_next(rng) % 51) - 25) / 8);
            }
            for (size_t c = 0; c < dv; c++) {
                const size_t at = (hd * M + j) * dv + c;
                in->v32[at] = (float)(in->v[at] = ((double)(tu_next(rng) % 51) - 25) / 8);
            }
        }
    }
}

/* Causal rows: query i sees keys j <= i only, so new keys and values from position t on,
 * and new queries from t on, leave output rows i < t of every head bit for bit, in both
 * precisions; t = N/2 + 1 (or N - 1), and t = N when M > N (keys no query sees). And the
 * test can fail: the rows from t on do change (on every row whose output is continuous
 * in its inputs and where a row from t on sees a changed key; for exact rows, whose
 * argmax may land on an unchanged key, at least once per kernel over all its rows). */
static void causal_ignores_future(void **state)
{
    (void)state;
    property_begin("causal_ignores_future", 1);
    bool changed_kernel[LA_KERNEL_COUNT] = {false}, causal_kernel[LA_KERNEL_COUNT] = {false};
    size_t checked = 0;
    for (size_t ri = 0; ri < n_rows; ri++) {
        const row *r = &rows[ri];
        if (!r->causal) continue;
        prop.rows++;
        causal_kernel[r->info->kernel] = true;
        la_problem p = row_problem(r);
        const size_t N = p.n_queries, M = p.n_keys, dv = p.d_v, bh = p.batch * p.heads;
        const inputs *in = inputs_of(r, &p);
        double *base64 = tu_f64(in->no), *y64 = tu_f64(in->no);
        float *base32 = tu_f32(in->no), *y32 = tu_f32(in->no);
        if (!check_status(r, "float64", run_f64(r, &p, in, base64), LA_OK) ||
            !check_status(r, "float32", run_f32(r, &p, in, base32), LA_OK))
            goto next;
        /* t in the middle (N/2 + 1, off the block edges of even N), and N when there are
         * keys no query sees (M > N) */
        size_t ts[2], n_t = 0;
        if (N >= 2) ts[n_t++] = N / 2 + 1 < N ? N / 2 + 1 : N - 1;
        if (M > N) ts[n_t++] = N;
        /* whether some row i >= t sees a changed key (row t sees key t when t < L_b), so
         * that a continuous kernel must change it */
        bool must_change = false, changed = false;
        for (size_t u = 0; u < n_t; u++)
            for (size_t b = 0; b < p.batch; b++)
                must_change |=
                    ts[u] < N && ts[u] < M && (!p.key_lengths || (size_t)p.key_lengths[b] > ts[u]);
        /* relu: φ(q_i)·φ(k_j) is 0 whenever the two have no positive component in common
         * (likely at d_k = 3), so a continuous kernel may leave every later row as it was;
         * the elu+1 rows (φ > 0) keep the check */
        if ((r->info->params & LA_PARAM_FEATURE_MAP) && p.feature_map == LA_FEATURE_RELU)
            must_change = false;
        tu_rng rng = tu_rng_for(r->label);
        for (size_t u = 0; u < n_t; u++) {
            const size_t t = ts[u];
            inputs later;
            inputs_copy(&later, in);
            perturb_from(&p, &later, t, &rng);
            char what[64];
            if (!check_status(r, "float64", run_f64(r, &p, &later, y64), LA_OK) ||
                !check_status(r, "float32", run_f32(r, &p, &later, y32), LA_OK)) {
                inputs_free(&later);
                break;
            }
            const size_t kept = t < N ? t : N;
            for (size_t hd = 0; hd < bh; hd++) {
                snprintf(what, sizeof what, "t=%zu, float64 rows before t", t);
                if (!check_same_bits(r, &p, what, base64, y64, hd * N * dv, kept * dv, 8)) break;
                snprintf(what, sizeof what, "t=%zu, float32 rows before t", t);
                if (!check_same_bits(r, &p, what, base32, y32, hd * N * dv, kept * dv, 4)) break;
                if (t < N && memcmp(base64 + (hd * N + t) * dv, y64 + (hd * N + t) * dv,
                                    (N - t) * dv * sizeof *y64) != 0)
                    changed = true;
            }
            inputs_free(&later);
            checked++;
        }
        if (changed) changed_kernel[r->info->kernel] = true;
        if (!r->tol.exact && must_change && !changed)
            row_fail(r, "the later rows never changed: the perturbation did nothing");
    next:
        free(base64);
        free(y64);
        free(base32);
        free(y32);
    }
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        if (causal_kernel[k] && !changed_kernel[k])
            row_fail(NULL, "%s: no perturbation changed any later row in any shape",
                     la_kernel_name((la_kernel)k));
    print_message("  %zu (row, t) pairs checked\n", checked);
    property_end();
}

/* ------------------------------------------------------------------ threads_bitwise */

static const int thread_counts[] = {1, 2, 3};
enum { N_THREAD_COUNTS = sizeof thread_counts / sizeof thread_counts[0] };

/* FNV-1a over the bytes of an output: threads_bitwise keeps one per row and precision. */
static uint64_t hash_bytes(const void *x, size_t bytes)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ ((const unsigned char *)x)[i]) * 0x100000001b3ull;
    return h;
}

/* Row r's output on t threads, float64 or float32, into y, against the 1-thread hash
 * one (recorded when t == 1): on a difference, the 1-thread output is recomputed to name
 * the first element that differs. */
static void threads_check(const row *r, int t, bool f32, uint64_t *one, double *y64, float *y32,
                          double *again64, float *again32)
{
    const la_problem p = row_problem(r);
    const inputs *in = inputs_of(r, &p);
    const char *name = f32 ? "float32" : "float64";
    const size_t bytes = in->no * (f32 ? sizeof(float) : sizeof(double));
    char what[64];
    snprintf(what, sizeof what, "%s on %d thread%s", name, t, t > 1 ? "s" : "");
    la_status st = f32 ? run_f32(r, &p, in, y32) : run_f64(r, &p, in, y64);
    if (!check_status(r, what, st, LA_OK)) return;
    const uint64_t h = f32 ? hash_bytes(y32, bytes) : hash_bytes(y64, bytes);
    if (t == 1) {
        *one = h;
        return;
    }
    if (h == *one) return;
    assert_int_equal(la_set_num_threads(1), LA_OK);
    st = f32 ? run_f32(r, &p, in, again32) : run_f64(r, &p, in, again64);
    assert_int_equal(la_set_num_threads(t), LA_OK);
    snprintf(what, sizeof what, "%s, 1 thread against %d threads", name, t);
    if (check_status(r, "the 1-thread output again", st, LA_OK) &&
        (f32 ? check_same_bits(r, &p, what, again32, y32, 0, in->no, 4)
             : check_same_bits(r, &p, what, again64, y64, 0, in->no, 8)))
        row_fail(r,
                 "%s: the output's hash differs from the first 1-thread run's, but a second "
                 "1-thread run equals it: the 1-thread output is not reproducible",
                 what);
}

/* The same input on 1, 2 and 3 threads (3: more than the cores here) gives the same
 * bits, in both precisions. With B·H from 1 to 6 over the shapes, both schedules of the
 * linear kernels run: whole heads per thread (B·H a multiple of the threads) and
 * ordered tasks within heads (not). One pass over every row per thread count, keeping a
 * hash of each 1-thread output: switching OpenMP's team size from call to call made this
 * property take 3.5-4.3 s instead of 1.9-2.2 s with one busy process beside it on 2 cores
 * (0.6 s either way on an idle machine). */
static void threads_bitwise(void **state)
{
    (void)state;
    property_begin("threads_bitwise", 0);
    uint64_t(*one)[2] = tu_alloc(n_rows * sizeof *one);
    size_t most = 0; /* the largest output */
    for (size_t ri = 0; ri < n_rows; ri++) {
        const la_problem p = row_problem(&rows[ri]);
        const size_t no = p.batch * p.heads * p.n_queries * p.d_v;
        most = no > most ? no : most;
    }
    double *y64 = tu_f64(most), *again64 = tu_f64(most);
    float *y32 = tu_f32(most), *again32 = tu_f32(most);
    for (int ti = 0; ti < N_THREAD_COUNTS; ti++) {
        const int t = thread_counts[ti];
        assert_int_equal(la_set_num_threads(t), LA_OK);
        for (size_t ri = 0; ri < n_rows; ri++) {
            threads_check(&rows[ri], t, false, &one[ri][0], y64, y32, again64, again32);
            threads_check(&rows[ri], t, true, &one[ri][1], y64, y32, again64, again32);
        }
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
    prop.rows = n_rows;
    free(one);
    free(y64);
    free(again64);
    free(y32);
    free(again32);
    property_end();
}

/* ------------------------------------------------------------------ errors_leave_output */

/* One bad call: a problem (NULL for no problem), which argument is NULL (0: none, 1: q,
 * 2: k, 3: v, 4: out), and the status it must return. */
typedef struct {
    char what[64];
    la_problem p;
    bool null_p;
    int null_arg;
    la_status want;
} bad_call;

/* Runs one bad call in both precisions: the expected status, and out untouched (good:
 * the row's problem, to say where an element is). */
static void expect_error(const row *r, const bad_call *bc, const la_problem *good, const inputs *in,
                         double *out64, float *out32)
{
    const la_problem *p = bc->null_p ? NULL : &bc->p;
    fill_sentinel(out64, out32, in->no);
    char what[128];
    snprintf(what, sizeof what, "%.63s, float64", bc->what);
    la_status st = la_attention(r->info->kernel, p, LA_FLOAT64, bc->null_arg == 1 ? NULL : in->q,
                                bc->null_arg == 2 ? NULL : in->k, bc->null_arg == 3 ? NULL : in->v,
                                bc->null_arg == 4 ? NULL : out64);
    if (check_status(r, what, st, bc->want) && bc->want != LA_OK)
        check_untouched(r, good, what, out64, NULL, in->no);
    snprintf(what, sizeof what, "%.63s, float32", bc->what);
    st = la_attention(r->info->kernel, p, LA_FLOAT32, bc->null_arg == 1 ? NULL : in->q32,
                      bc->null_arg == 2 ? NULL : in->k32, bc->null_arg == 3 ? NULL : in->v32,
                      bc->null_arg == 4 ? NULL : out32);
    if (check_status(r, what, st, bc->want) && bc->want != LA_OK)
        check_untouched(r, good, what, NULL, out32, in->no);
}

/* Every error path returns its status and writes nothing: no problem, NULL q, k, v or
 * out, each size 0, sizes that overflow, causal 2, the causal form the row's rule
 * forbids, a key length above M or below 0, scale NaN or ±inf (and, float32, beyond
 * float32 when the kernel reads the scale), eps NaN, inf or < 0, an unknown φ, chunk 0,
 * workspace_limit 0 (when the kernel allocates). The good problem runs (so each error
 * was about its one change). */
static void errors_leave_output(void **state)
{
    (void)state;
    property_begin("errors_leave_output", 1);
    for (size_t ri = 0; ri < n_rows; ri++, prop.rows++) {
        const row *r = &rows[ri];
        const la_problem good = row_problem(r);
        const inputs *in = inputs_of(r, &good);
        double *out64 = tu_f64(in->no);
        float *out32 = tu_f32(in->no);
        int64_t too_long[3], negative[3];
        assert_true(good.batch <= 3);
        for (size_t b = 0; b < good.batch; b++)
            too_long[b] = negative[b] =
                good.key_lengths ? good.key_lengths[b] : (int64_t)good.n_keys;
        too_long[good.batch - 1] = (int64_t)good.n_keys + 1;
        negative[0] = -1;

        bad_call bad[32];
        size_t n_bad = 0;
#define BAD(text, field, value, status)                                                            \
    do {                                                                                           \
        bad[n_bad] = (bad_call){.p = good, .want = (status)};                                      \
        snprintf(bad[n_bad].what, sizeof bad[n_bad].what, "%s", (text));                           \
        bad[n_bad++].p.field = (value);                                                            \
    } while (0)
        BAD("the good problem", causal, good.causal, LA_OK);
        BAD("batch 0", batch, 0, LA_EINVAL);
        BAD("heads 0", heads, 0, LA_EINVAL);
        BAD("N 0", n_queries, 0, LA_EINVAL);
        BAD("M 0", n_keys, 0, LA_EINVAL);
        BAD("d_k 0", d_k, 0, LA_EINVAL);
        BAD("d_v 0", d_v, 0, LA_EINVAL);
        BAD("N·d_k overflows", n_queries, SIZE_MAX / 4, LA_EOVERFLOW);
        BAD("causal 2", causal, 2, LA_EINVAL);
        if (r->info->causal == LA_CAUSAL_REQUIRED)
            BAD("non-causal, which the kernel's rule forbids", causal, 0, LA_EINVAL);
        if (r->info->causal == LA_CAUSAL_REFUSED)
            BAD("causal, which the kernel's rule forbids", causal, 1, LA_EINVAL);
        BAD("a key length > M", key_lengths, too_long, LA_EINVAL);
        BAD("a key length < 0", key_lengths, negative, LA_EINVAL);
        BAD("scale NaN", scale, NAN, LA_EINVAL);
        BAD("scale inf", scale, INFINITY, LA_EINVAL);
        BAD("scale -inf", scale, -INFINITY, LA_EINVAL);
        BAD("eps NaN", eps, NAN, LA_EINVAL);
        BAD("eps inf", eps, INFINITY, LA_EINVAL);
        BAD("eps < 0", eps, -1e-9, LA_EINVAL);
        BAD("an unknown feature map", feature_map, LA_FEATURE_COUNT, LA_EINVAL);
        BAD("chunk 0", chunk, 0, LA_EINVAL);
        la_cost cost;
        assert_int_equal(la_attention_cost(r->info->kernel, &good, LA_FLOAT32, &cost), LA_OK);
        if (cost.workspace_bytes > 0) BAD("workspace_limit 0", workspace_limit, 0, LA_EBUDGET);
#undef BAD
        for (int arg = 0; arg <= 4; arg++) {
            static const char *const names[] = {"no problem (NULL)", "q NULL", "k NULL", "v NULL",
                                                "out NULL"};
            bad[n_bad] =
                (bad_call){.p = good, .null_p = arg == 0, .null_arg = arg, .want = LA_EINVAL};
            snprintf(bad[n_bad++].what, sizeof bad[0].what, "%s", names[arg]);
        }
        assert_true(n_bad <= sizeof bad / sizeof bad[0]);
        for (size_t i = 0; i < n_bad; i++)
            expect_error(r, &bad[i], &good, in, out64, out32);
        /* float32 only: a finite scale float32 cannot hold */
        if (r->info->params & LA_PARAM_SCALE) {
            la_problem huge = good;
            huge.scale = 1e300;
            fill_sentinel(out64, out32, in->no);
            if (check_status(r, "scale 1e300, float32",
                             r->info->fns->forward_f32(&huge, in->q32, in->k32, in->v32, out32),
                             LA_EINVAL))
                check_untouched(r, &good, "scale 1e300, float32", NULL, out32, in->no);
        }
        free(out64);
        free(out32);
    }
    property_end();
}

/* ------------------------------------------------------------------ workspace_as_cost */

/* For each precision, on 1 and 2 threads (the workspace counts min(threads, tasks)
 * threads' scratch): with p->workspace_limit at exactly la_attention_cost's
 * workspace_bytes the call runs and gives the same bits as without a limit; one byte
 * less, LA_EBUDGET with out untouched. A kernel that allocates nothing (workspace_bytes
 * 0) has no limit to test: counted and printed as skipped. (tests/attention/test_cost.c
 * checks the same on 3 threads, on random small shapes.) */
static void workspace_as_cost(void **state)
{
    (void)state;
    property_begin("workspace_as_cost", 0);
    size_t skipped = 0;
    for (size_t ri = 0; ri < n_rows; ri++, prop.rows++) {
        const row *r = &rows[ri];
        const la_problem p = row_problem(r);
        const inputs *in = inputs_of(r, &p);
        double *unlimited64 = tu_f64(in->no), *y64 = tu_f64(in->no);
        float *unlimited32 = tu_f32(in->no), *y32 = tu_f32(in->no);
        for (int dtype = LA_FLOAT32; dtype <= LA_FLOAT64; dtype++) {
            const bool f32 = dtype == LA_FLOAT32;
            const char *name = f32 ? "float32" : "float64";
            char what[128];
            /* the output without a limit (any thread count: threads_bitwise) */
            assert_int_equal(la_set_num_threads(1), LA_OK);
            snprintf(what, sizeof what, "%s, no limit", name);
            la_status st = f32 ? run_f32(r, &p, in, unlimited32) : run_f64(r, &p, in, unlimited64);
            if (!check_status(r, what, st, LA_OK)) continue;
            for (int t = 1; t <= 2; t++) {
                assert_int_equal(la_set_num_threads(t), LA_OK);
                la_cost cost;
                snprintf(what, sizeof what, "la_attention_cost, %s, %d thread%s", name, t,
                         t > 1 ? "s" : "");
                st = la_attention_cost(r->info->kernel, &p, (la_dtype)dtype, &cost);
                if (!check_status(r, what, st, LA_OK)) continue;
                const double bytes = cost.workspace_bytes;
                if (!(bytes >= 0 && bytes == floor(bytes) && bytes < (double)SIZE_MAX)) {
                    row_fail(r, "%s: workspace_bytes %.17g is not a byte count", what, bytes);
                    continue;
                }
                if (bytes == 0) {
                    if (skipped++ < 10)
                        print_message("  [%s] %s allocates nothing: no limit to test (skipped)\n",
                                      r->label, name);
                    continue;
                }
                /* at the limit: runs, the same bits */
                la_problem at = p;
                at.workspace_limit = (size_t)bytes;
                snprintf(what, sizeof what, "%s, %d thread%s, limit = workspace_bytes = %.0f", name,
                         t, t > 1 ? "s" : "", bytes);
                st = f32 ? run_f32(r, &at, in, y32) : run_f64(r, &at, in, y64);
                if (!check_status(r, what, st, LA_OK)) continue;
                if (f32 ? !check_same_bits(r, &p, what, unlimited32, y32, 0, in->no, 4)
                        : !check_same_bits(r, &p, what, unlimited64, y64, 0, in->no, 8))
                    continue;
                /* one byte under: refused, nothing written */
                at.workspace_limit--;
                snprintf(what, sizeof what, "%s, %d thread%s, limit = workspace_bytes - 1 = %.0f",
                         name, t, t > 1 ? "s" : "", bytes - 1);
                fill_sentinel(y64, y32, in->no);
                st = f32 ? run_f32(r, &at, in, y32) : run_f64(r, &at, in, y64);
                if (check_status(r, what, st, LA_EBUDGET))
                    check_untouched(r, &p, what, f32 ? NULL : y64, f32 ? y32 : NULL, in->no);
            }
            assert_int_equal(la_set_num_threads(0), LA_OK);
        }
        free(unlimited64);
        free(y64);
        free(unlimited32);
        free(y32);
    }
    print_message("  %zu (row, precision, thread count) cases allocate nothing: skipped\n",
                  skipped);
    property_end();
}

/* ------------------------------------------------------------------ backward passes */

static const char *const grad_names[3] = {"d_q", "d_k", "d_v"};

/* Relative error of a backward against the row's reference_backward, per gradient: float64
 * 1e-11 (the kernels sum in blocks, the oracle in one plain loop; and D_i = d_out_i·out_i
 * where the oracle forms Σ_j P_ij dP_ij), float32 1e-5. On the large-logit inputs both
 * times max(1, the largest |logit|), as tests/hostile/test_extremes.c holds the forwards:
 * a logit's rounding is relative to its size, and P = exp(s − lse) inherits it. */
#define TOL_BWD_F64 1e-11
#define TOL_BWD_F32 1e-5

static bool has_backward(const row *r)
{
    return r->info->fns->backward_f64 && r->info->fns->backward_f32 &&
           r->info->fns->reference_backward;
}

/* The float32 backward's tolerance of a row: the larger of TOL_BWD_F32, its forward's and
 * its own bwd_f32. */
static double bwd_tol_f32(const tolerance *t)
{
    return fmax(fmax(TOL_BWD_F32, t->f32), t->bwd_f32);
}

/* Where flat element e of gradient t (0: d_q (B,H,N,d_k), 1: d_k (B,H,M,d_k), 2: d_v
 * (B,H,M,d_v)) is: "b=1 h=0 j=17 c=3". */
static const char *grad_where(const la_problem *p, int t, size_t e, char *buf, size_t size)
{
    const size_t rows = t == 0 ? p->n_queries : p->n_keys, cols = t == 2 ? p->d_v : p->d_k;
    const size_t c = e % cols, i = e / cols % rows, h = e / cols / rows % p->heads;
    const size_t b = e / cols / rows / p->heads;
    snprintf(buf, size, "b=%zu h=%zu %s=%zu c=%zu", b, h, t == 0 ? "i" : "j", i, c);
    return buf;
}

/* The three gradients of one call, float64 and float32, and what a backward reads beyond
 * q, k, v: d_out (fresh, from the rng of the label) and the forward's out in each
 * precision. */
typedef struct {
    size_t n[3];
    double *d_out, *out, *g64[3];
    float *d_out32, *out32, *g32[3];
} backward_io;

static void backward_io_make(backward_io *io, const inputs *in, bool exact, const char *label)
{
    io->n[0] = in->nq;
    io->n[1] = in->nk;
    io->n[2] = in->nv;
    io->d_out = tu_f64(in->no);
    io->out = tu_f64(in->no);
    io->d_out32 = tu_f32(in->no);
    io->out32 = tu_f32(in->no);
    for (int t = 0; t < 3; t++) {
        io->g64[t] = tu_f64(io->n[t]);
        io->g32[t] = tu_f32(io->n[t]);
    }
    tu_rng rng = tu_rng_for(label);
    fill(&rng, exact, io->d_out, io->d_out32, in->no); /* exact rows: sums of d_out exact too */
}

static void backward_io_free(backward_io *io)
{
    free(io->d_out);
    free(io->out);
    free(io->d_out32);
    free(io->out32);
    for (int t = 0; t < 3; t++) {
        free(io->g64[t]);
        free(io->g32[t]);
    }
}

static la_status run_backward_f64(const row *r, const la_problem *p, const inputs *in,
                                  backward_io *io)
{
    return la_attention_backward(r->info->kernel, p, LA_FLOAT64, in->q, in->k, in->v, io->out, NULL,
                                 io->d_out, io->g64[0], io->g64[1], io->g64[2]);
}
static la_status run_backward_f32(const row *r, const la_problem *p, const inputs *in,
                                  backward_io *io)
{
    return la_attention_backward(r->info->kernel, p, LA_FLOAT32, in->q32, in->k32, in->v32,
                                 io->out32, NULL, io->d_out32, io->g32[0], io->g32[1], io->g32[2]);
}

/* Largest |q_i·k_j · scale| over every pair of every head (masks ignored). */
static double largest_logit(const la_problem *p, const inputs *in)
{
    const size_t bh = p->batch * p->heads, N = p->n_queries, M = p->n_keys, dk = p->d_k;
    double most = 0;
    for (size_t hd = 0; hd < bh; hd++)
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < M; j++) {
                double s = 0;
                for (size_t c = 0; c < dk; c++)
                    s += in->q[(hd * N + i) * dk + c] * in->k[(hd * M + j) * dk + c];
                most = fmax(most, fabs(s * p->scale));
            }
    return most;
}

/* The inputs of the property's three cases for a row:
 *   CASE_NORMAL        the harness's inputs of the shape;
 *   CASE_EQUAL_SCORES  (rows that read a scale) the first query of every head zero: its
 *                      visible keys all have the
 *                      same score 0 (P uniform; hard: all tied, the lowest key wins). One
 *                      query only: with most queries zero, d_k would rest on a few dS_ij,
 *                      and float32 on a few cancellations dP_ij − D_i;
 *   CASE_LARGE_LOGITS  (rows that read a scale) every key plus c times its head's first key,
 *                      c chosen so that the largest |logit| is about 1e3 (exact rows: c =
 *                      32, which keeps their 1/8 grid exact): logits of ±1e3 whose
 *                      differences within a row are the normal case's, so the softmax is
 *                      not saturated (a saturated row, P ≈ 1 on one key, has dS = P (dP − D)
 *                      ≈ 0 made of rounding alone, which no tolerance can hold). */
enum { CASE_NORMAL, CASE_EQUAL_SCORES, CASE_LARGE_LOGITS, N_CASES };
static const char *const case_names[N_CASES] = {"", ", query 0 zero", ", logits ±1e3"};

/* Makes case c's inputs in *own from the row's (false: the case does not apply to the row);
 * *times: the multiple of the first key added to every key (0 but for CASE_LARGE_LOGITS). */
static bool case_inputs(const row *r, int c, const la_problem *p, const inputs *in, inputs *own,
                        double *times_out)
{
    *times_out = 0;
    /* both are about scores: rows without a scale (linear attention) have none */
    if (c != CASE_NORMAL && !(r->info->params & LA_PARAM_SCALE)) return false;
    /* logits of ±1e3 are softmax's case: in the linear family (Taylor's weights 1 + s + s²/2,
     * about 5e5 there) a query that sees one key depends on q only through eps/den ≈ 2e-12,
     * so its d_q is that fraction of terms that cancel, and no float32 kernel resolves it
     * relative to its own size (the gradient mode leaves these rows out for the same
     * reason) */
    if (c == CASE_LARGE_LOGITS && strcmp(r->info->family, "linear") == 0) return false;
    inputs_copy(own, in);
    const size_t bh = p->batch * p->heads, N = p->n_queries, M = p->n_keys, dk = p->d_k;
    if (c == CASE_EQUAL_SCORES)
        for (size_t hd = 0; hd < bh; hd++)
            for (size_t e = 0; e < dk; e++)
                own->q32[hd * N * dk + e] = (float)(own->q[hd * N * dk + e] = 0);
    if (c == CASE_LARGE_LOGITS) {
        /* largest |q_i·k_0 · scale| over the heads: c = 1e3 / it */
        double most = 0;
        for (size_t hd = 0; hd < bh; hd++)
            for (size_t i = 0; i < N; i++) {
                double s = 0;
                for (size_t e = 0; e < dk; e++)
                    s += in->q[(hd * N + i) * dk + e] * in->k[hd * M * dk + e];
                most = fmax(most, fabs(s * p->scale));
            }
        const double times = r->tol.exact ? 32 : most > 0 ? 1000 / most : 1;
        *times_out = times;
        for (size_t hd = 0; hd < bh; hd++)
            for (size_t j = 0; j < M; j++)
                for (size_t e = 0; e < dk; e++) {
                    const size_t at = (hd * M + j) * dk + e;
                    own->k32[at] =
                        (float)(own->k[at] = (float)(in->k[at] + times * in->k[hd * M * dk + e]));
                }
    }
    return true;
}

/* The float32 d_q of CASE_LARGE_LOGITS, relative to the reference, with each row's error
 * component along its head's first key removed. Why: there every key is k_j + times·k_0, so
 * d_q_i = scale Σ_j dS_ij (k_j + times·k_0), whose second part vanishes because Σ_j dS_ij = 0.
 * The fused backward takes D_i = d_out_i·out_i from the forward's output, whose P was
 * rounded at the scale of the logits (|logit|·6e-8), not from its own recomputed P; their
 * difference leaves Σ_j dS_ij ≈ |logit|·6e-8 instead of 0, which times·k_0 magnifies: the
 * algorithm's error (FlashAttention-2 shares it), along k_0 only. Off that direction d_q must
 * meet the tolerance like every other gradient. */
static double large_logits_dq_error(const la_problem *p, const inputs *in, const float *dq,
                                    const double *ref)
{
    const size_t bh = p->batch * p->heads, N = p->n_queries, M = p->n_keys, dk = p->d_k;
    double err2 = 0, ref2 = 0;
    for (size_t hd = 0; hd < bh; hd++) {
        const double *k0 = in->k + hd * M * dk;
        double k0k0 = 0;
        for (size_t e = 0; e < dk; e++)
            k0k0 += k0[e] * k0[e];
        for (size_t i = 0; i < N; i++) {
            const float *y = dq + (hd * N + i) * dk;
            const double *x = ref + (hd * N + i) * dk;
            double along = 0;
            for (size_t e = 0; e < dk; e++)
                along += ((double)y[e] - x[e]) * k0[e];
            along = k0k0 > 0 ? along / k0k0 : 0;
            for (size_t e = 0; e < dk; e++) {
                const double d = (double)y[e] - x[e] - along * k0[e];
                err2 += d * d;
                ref2 += x[e] * x[e];
            }
        }
    }
    if (!isfinite(err2)) return INFINITY;
    return ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
}

/* The row's backward_f64 and backward_f32 against its reference_backward, on the three
 * cases, every gradient, with a fresh d_out. Returns the worst relative errors seen
 * (divided by the case's tolerance factor) in worst[0] (float32) and worst[1] (float64). */
static void backward_check_row(const row *r, double worst[2])
{
    const la_problem base = row_problem(r);
    const inputs *shared = inputs_of(r, &base);
    for (int c = 0; c < N_CASES; c++) {
        const la_problem p = base;
        inputs in;
        double times;
        if (!case_inputs(r, c, &p, shared, &in, &times)) continue;
        char label[400], what[160], at[96];
        snprintf(label, sizeof label, "%s backward d_out%s", r->label, case_names[c]);
        backward_io io;
        backward_io_make(&io, &in, r->tol.exact, label);
        double *ref[3];
        for (int t = 0; t < 3; t++)
            ref[t] = tu_f64(io.n[t]);
        const double factor = c == CASE_LARGE_LOGITS ? fmax(1, largest_logit(&p, &in)) : 1;
        bool ok = check_status(r, "forward_f64", run_f64(r, &p, &in, io.out), LA_OK) &&
                  check_status(r, "forward_f32", run_f32(r, &p, &in, io.out32), LA_OK) &&
                  check_status(r, "reference_backward",
                               r->info->fns->reference_backward(&p, in.q, in.k, in.v, io.out,
                                                                io.d_out, ref[0], ref[1], ref[2]),
                               LA_OK);
        double yard[3] = {-1, -1, -1}; /* the floor's Y (yardsticks.h); exact rows: none */
        const tu_backward bw = {in.q, in.k, in.v, io.out, io.d_out};
        if (ok && !r->tol.exact) tu_gradient_yardsticks(r->info, &p, &bw, yard);
        for (int f32 = 0; ok && f32 <= 1; f32++) {
            snprintf(what, sizeof what, "backward_%s%s", f32 ? "f32" : "f64", case_names[c]);
            const la_status st =
                f32 ? run_backward_f32(r, &p, &in, &io) : run_backward_f64(r, &p, &in, &io);
            if (!check_status(r, what, st, LA_OK)) continue;
            const double tol = (f32 ? bwd_tol_f32(&r->tol) : TOL_BWD_F64) * factor;
            for (int t = 0; t < 3; t++) {
                size_t w = 0;
                double err = f32 ? tu_rel_error_f32(io.g32[t], ref[t], io.n[t], &w)
                                 : tu_rel_error_f64(io.g64[t], ref[t], io.n[t], &w);
                if (t == 2 && !(err < tol) && !r->tol.exact && yard[2] < 0)
                    /* d_v's Y only where its plain error fails: another oracle call, and
                     * the floored error is never the larger */
                    yard[2] = tu_dv_yardstick(r->info, &p, &bw);
                if (yard[t] >= 0) {
                    /* relative to the larger of their norm and the floor (yardsticks.h) */
                    const double floor = TU_BWD_FLOOR * yard[t];
                    err = f32 ? tu_floored_error_f32(io.g32[t], ref[t], io.n[t], floor)
                              : tu_floored_error_f64(io.g64[t], ref[t], io.n[t], floor);
                }
                if (f32 && t == 0 && c == CASE_LARGE_LOGITS) {
                    /* float32 d_q at logits made large by a common key part: held to the
                     * tolerance off that part's direction (large_logits_dq_error), and within
                     * `times` tolerances along it */
                    if (!(err < tol * (1 + times))) {
                        row_fail(r, "%s d_q: relative error %.3e >= %.1e (times %.0f)", what, err,
                                 tol * (1 + times), times);
                        break;
                    }
                    err = large_logits_dq_error(&p, &in, io.g32[0], ref[0]);
                }
                if (!(err < tol)) {
                    row_fail(r,
                             "%s %s: relative error %.3e >= %.1e; worst element %zu (%s): %.17g "
                             "vs reference %.17g",
                             what, grad_names[t], err, tol, w, grad_where(&p, t, w, at, sizeof at),
                             f32 ? (double)io.g32[t][w] : io.g64[t][w], ref[t][w]);
                    break;
                }
                worst[f32 ? 0 : 1] = fmax(worst[f32 ? 0 : 1], err / factor);
            }
        }
        for (int t = 0; t < 3; t++)
            free(ref[t]);
        backward_io_free(&io);
        inputs_free(&in);
    }
}

/* Every row with a backward: backward_f64 and backward_f32 against reference_backward on
 * the harness's shapes (M != N, d_k != d_v, key lengths 0, 1 and random, causal), each
 * also with all keys equal and, where the kernel reads a scale, with logits of ±1e3
 * (case_inputs). Rows without a backward are counted and named. */
/* The float64 oracle of a random-feature kernel's backward goes pair by pair over its m
 * features: B·H·N·M·m terms, 5·10⁸ at N = M = 1000 with the default 256 features, about
 * 5 s a call here. Its rows on such shapes are left to the smaller ones (counted). */
enum { ORACLE_TERMS_MAX = 50000000 };
static int oracle_too_slow(const row *r)
{
    const la_problem p = row_problem(r);
    const double terms =
        (double)(p.batch * p.heads) * (double)p.n_queries * (double)p.n_keys *
        (r->info->params & LA_PARAM_FEATURES ? (double)la_favor_params_of(&p).features : 1);
    return terms > ORACLE_TERMS_MAX;
}

static void backward_matches_reference(void **state)
{
    (void)state;
    property_begin("backward_matches_reference", 1);
    double worst[LA_KERNEL_COUNT][2] = {{0}};
    size_t skipped = 0, slow = 0;
    for (size_t ri = 0; ri < n_rows; ri++) {
        const row *r = &rows[ri];
        if (!has_backward(r)) {
            skipped++;
            continue;
        }
        if (oracle_too_slow(r)) {
            slow++;
            continue;
        }
        prop.rows++;
        backward_check_row(r, worst[r->info->kernel]);
    }
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        const tolerance kt = tolerance_of((la_kernel)k);
        if (info->fns->backward_f64 && info->fns->backward_f32 && info->fns->reference_backward)
            print_message("  %-22s backward, worst relative error (per logit on ±1e3): float64 "
                          "%.1e (tolerance %.0e), float32 %.1e (tolerance %.0e)\n",
                          info->name, worst[k][1], TOL_BWD_F64, worst[k][0], bwd_tol_f32(&kt));
        else
            print_message("  %-22s no backward in the registry: its rows skipped\n", info->name);
    }
    print_message("  %zu rows checked, %zu skipped (no backward), %zu left to smaller shapes "
                  "(an oracle of more than %d terms); d_q or d_k mostly cancelled, held "
                  "relative to the floor: %zu comparisons\n",
                  prop.rows, skipped, slow, ORACLE_TERMS_MAX, tu_floor_uses());
    tu_floor_uses_reset();
    property_end();
}

/* The backward's bits on 1, 2 and 3 threads are the same (both precisions), as
 * threads_bitwise holds the forwards: the fused softmax backward runs one schedule when
 * the (batch, head) pairs outnumber the threads and another when not. */
static void backward_threads_bitwise(void **state)
{
    (void)state;
    property_begin("backward_threads_bitwise", 0);
    for (size_t ri = 0; ri < n_rows; ri++) {
        const row *r = &rows[ri];
        if (!has_backward(r)) continue;
        prop.rows++;
        const la_problem p = row_problem(r);
        const inputs *in = inputs_of(r, &p);
        backward_io io;
        char label[400];
        snprintf(label, sizeof label, "%s backward d_out", r->label);
        backward_io_make(&io, in, r->tol.exact, label);
        if (!check_status(r, "forward_f64", run_f64(r, &p, in, io.out), LA_OK) ||
            !check_status(r, "forward_f32", run_f32(r, &p, in, io.out32), LA_OK)) {
            backward_io_free(&io);
            continue;
        }
        double *one64[3];
        float *one32[3];
        for (int t = 0; t < 3; t++) {
            one64[t] = tu_f64(io.n[t]);
            one32[t] = tu_f32(io.n[t]);
        }
        for (int ti = 0; ti < N_THREAD_COUNTS; ti++) {
            const int threads = thread_counts[ti];
            assert_int_equal(la_set_num_threads(threads), LA_OK);
            char what[96];
            snprintf(what, sizeof what, "backward on %d thread%s", threads, threads > 1 ? "s" : "");
            if (!check_status(r, what, run_backward_f64(r, &p, in, &io), LA_OK) ||
                !check_status(r, what, run_backward_f32(r, &p, in, &io), LA_OK))
                break;
            bool same = true;
            for (int t = 0; t < 3 && same; t++) {
                if (threads == 1) {
                    memcpy(one64[t], io.g64[t], io.n[t] * sizeof *one64[t]);
                    memcpy(one32[t], io.g32[t], io.n[t] * sizeof *one32[t]);
                } else if (memcmp(one64[t], io.g64[t], io.n[t] * sizeof *one64[t]) != 0 ||
                           memcmp(one32[t], io.g32[t], io.n[t] * sizeof *one32[t]) != 0) {
                    row_fail(r, "%s: %s differs from 1 thread's", what, grad_names[t]);
                    same = false;
                }
            }
        }
        for (int t = 0; t < 3; t++) {
            free(one64[t]);
            free(one32[t]);
        }
        backward_io_free(&io);
    }
    property_end();
}

/* Fills every gradient of io with the sentinel. */
static void grads_sentinel(backward_io *io)
{
    for (int t = 0; t < 3; t++)
        for (size_t e = 0; e < io->n[t]; e++) {
            io->g64[t][e] = SENTINEL;
            io->g32[t][e] = (float)SENTINEL;
        }
}

/* Every gradient of io (float64 or float32) still the sentinel. */
static bool grads_untouched(const row *r, const char *what, const backward_io *io, bool f32)
{
    for (int t = 0; t < 3; t++)
        for (size_t e = 0; e < io->n[t]; e++) {
            const double y = f32 ? (double)io->g32[t][e] : io->g64[t][e];
            if (!(y == SENTINEL)) {
                row_fail(r, "%s: %s element %zu written (%.17g) on error", what, grad_names[t], e,
                         y);
                return false;
            }
        }
    return true;
}

/* The backward's errors return their status and write no gradient: no problem, each of
 * the eight pointers NULL (out too: every backward's contract takes it), N = 0, a key
 * length above M, scale NaN, the causal form the row's rule forbids, workspace_limit 0
 * (where the backward allocates), d_out huge (LA_ERANGE in float32 for the rows whose
 * range rule reads it: a backward with one must refuse rather than overflow). */
static void backward_errors_leave_output(void **state)
{
    (void)state;
    property_begin("backward_errors_leave_output", 1);
    for (size_t ri = 0; ri < n_rows; ri++) {
        const row *r = &rows[ri];
        if (!has_backward(r)) continue;
        prop.rows++;
        const la_problem good = row_problem(r);
        const inputs *in = inputs_of(r, &good);
        backward_io io;
        backward_io_make(&io, in, r->tol.exact, r->label);
        /* out: any values of the right shape (the forward's are not needed to fail) */
        for (size_t e = 0; e < in->no; e++)
            io.out32[e] = (float)(io.out[e] = io.d_out[e]);
        int64_t too_long[3];
        for (size_t b = 0; b < good.batch; b++)
            too_long[b] = good.key_lengths ? good.key_lengths[b] : (int64_t)good.n_keys;
        too_long[good.batch - 1] = (int64_t)good.n_keys + 1;
        la_cost cost;
        const bool allocates =
            la_attention_backward_cost(r->info->kernel, &good, LA_FLOAT64, &cost) == LA_OK &&
            cost.workspace_bytes > 0;
        for (int bad = 0; bad <= 12; bad++) {
            la_problem p = good;
            const la_problem *pp = &p;
            const void *args[8] = {in->q, in->k, in->v, io.out, io.d_out, NULL, NULL, NULL};
            const void *args32[8] = {in->q32, in->k32, in->v32, io.out32, io.d_out32};
            la_status want = LA_EINVAL;
            const char *what = "";
            switch (bad) {
            case 0: pp = NULL, what = "no problem (NULL)"; break;
            case 1: args[0] = args32[0] = NULL, what = "q NULL"; break;
            case 2: args[1] = args32[1] = NULL, what = "k NULL"; break;
            case 3: args[2] = args32[2] = NULL, what = "v NULL"; break;
            case 4: args[4] = args32[4] = NULL, what = "d_out NULL"; break;
            case 5: args[5] = args32[5] = (void *)1, what = "d_q NULL"; break;
            case 6: args[6] = args32[6] = (void *)1, what = "d_k NULL"; break;
            case 7: args[7] = args32[7] = (void *)1, what = "d_v NULL"; break;
            case 8: p.n_queries = 0, what = "N 0"; break;
            case 9: p.key_lengths = too_long, what = "a key length > M"; break;
            case 10: p.scale = NAN, what = "scale NaN"; break;
            case 11:
                if (!allocates) continue;
                p.workspace_limit = 0, want = LA_EBUDGET, what = "workspace_limit 0";
                break;
            case 12:
                if (r->info->causal != LA_CAUSAL_REQUIRED) continue;
                p.causal = 0, what = "non-causal, which the kernel's rule forbids";
                break;
            }
            /* the gradients: NULL where the case says (marked 1 above) */
            double *g64[3];
            float *g32[3];
            for (int t = 0; t < 3; t++) {
                g64[t] = args[5 + t] ? NULL : io.g64[t];
                g32[t] = args32[5 + t] ? NULL : io.g32[t];
            }
            grads_sentinel(&io);
            char text[128];
            snprintf(text, sizeof text, "%s, float64", what);
            la_status st =
                la_attention_backward(r->info->kernel, pp, LA_FLOAT64, args[0], args[1], args[2],
                                      args[3], NULL, args[4], g64[0], g64[1], g64[2]);
            if (check_status(r, text, st, want)) grads_untouched(r, text, &io, false);
            snprintf(text, sizeof text, "%s, float32", what);
            st = la_attention_backward(r->info->kernel, pp, LA_FLOAT32, args32[0], args32[1],
                                       args32[2], args32[3], NULL, args32[4], g32[0], g32[1],
                                       g32[2]);
            if (check_status(r, text, st, want)) grads_untouched(r, text, &io, true);
        }
        /* float32: d_out of 1e37 (finite) would overflow d_v's sums: LA_ERANGE, nothing
         * written */
        float *huge = tu_f32(in->no);
        for (size_t e = 0; e < in->no; e++)
            huge[e] = 1e37f;
        grads_sentinel(&io);
        const la_status st = r->info->fns->backward_f32(&good, in->q32, in->k32, in->v32, io.out32,
                                                        huge, io.g32[0], io.g32[1], io.g32[2]);
        if (st != LA_OK) {
            if (check_status(r, "d_out 1e37, float32", st, LA_ERANGE))
                grads_untouched(r, "d_out 1e37, float32", &io, true);
        } else {
            for (int t = 0; t < 3; t++)
                if (!tu_all_finite_f32(io.g32[t], io.n[t])) {
                    row_fail(r, "d_out 1e37, float32: LA_OK with a non-finite %s", grad_names[t]);
                    break;
                }
        }
        free(huge);
        backward_io_free(&io);
    }
    property_end();
}

/* At workspace_limit = la_attention_backward_cost's workspace_bytes the backward runs (the
 * same bits as without a limit), one byte less it returns LA_EBUDGET and writes nothing;
 * both precisions, 1 and 2 threads. */
static void backward_workspace_as_cost(void **state)
{
    (void)state;
    property_begin("backward_workspace_as_cost", 0);
    for (size_t ri = 0; ri < n_rows; ri++) {
        const row *r = &rows[ri];
        if (!has_backward(r)) continue;
        prop.rows++;
        const la_problem p = row_problem(r);
        const inputs *in = inputs_of(r, &p);
        backward_io io;
        char label[400];
        snprintf(label, sizeof label, "%s backward d_out", r->label);
        backward_io_make(&io, in, r->tol.exact, label);
        double *free64[3];
        float *free32[3];
        for (int t = 0; t < 3; t++) {
            free64[t] = tu_f64(io.n[t]);
            free32[t] = tu_f32(io.n[t]);
        }
        assert_int_equal(la_set_num_threads(1), LA_OK);
        bool ok =
            check_status(r, "forward_f64", run_f64(r, &p, in, io.out), LA_OK) &&
            check_status(r, "forward_f32", run_f32(r, &p, in, io.out32), LA_OK) &&
            check_status(r, "backward_f64, no limit", run_backward_f64(r, &p, in, &io), LA_OK) &&
            check_status(r, "backward_f32, no limit", run_backward_f32(r, &p, in, &io), LA_OK);
        for (int t = 0; ok && t < 3; t++) {
            memcpy(free64[t], io.g64[t], io.n[t] * sizeof *free64[t]);
            memcpy(free32[t], io.g32[t], io.n[t] * sizeof *free32[t]);
        }
        for (int threads = 1; ok && threads <= 2; threads++) {
            assert_int_equal(la_set_num_threads(threads), LA_OK);
            for (int f32 = 0; f32 <= 1; f32++) {
                la_cost cost;
                if (!check_status(r, "la_attention_backward_cost",
                                  la_attention_backward_cost(r->info->kernel, &p,
                                                             f32 ? LA_FLOAT32 : LA_FLOAT64, &cost),
                                  LA_OK))
                    continue;
                const double bytes = cost.workspace_bytes;
                if (!(bytes >= 1 && bytes == floor(bytes))) {
                    row_fail(r, "backward workspace_bytes %.17g is not a positive byte count",
                             bytes);
                    continue;
                }
                la_problem at = p;
                at.workspace_limit = (size_t)bytes;
                char what[128];
                snprintf(what, sizeof what, "backward_%s, %d thread%s, limit = %.0f",
                         f32 ? "f32" : "f64", threads, threads > 1 ? "s" : "", bytes);
                la_status st =
                    f32 ? run_backward_f32(r, &at, in, &io) : run_backward_f64(r, &at, in, &io);
                if (!check_status(r, what, st, LA_OK)) continue;
                for (int t = 0; t < 3; t++)
                    if (f32 ? memcmp(free32[t], io.g32[t], io.n[t] * sizeof(float)) != 0
                            : memcmp(free64[t], io.g64[t], io.n[t] * sizeof(double)) != 0) {
                        row_fail(r, "%s: %s differs from the unlimited call's", what,
                                 grad_names[t]);
                        break;
                    }
                at.workspace_limit--;
                snprintf(what, sizeof what, "backward_%s, %d thread%s, limit = %.0f - 1",
                         f32 ? "f32" : "f64", threads, threads > 1 ? "s" : "", bytes);
                grads_sentinel(&io);
                st = f32 ? run_backward_f32(r, &at, in, &io) : run_backward_f64(r, &at, in, &io);
                if (check_status(r, what, st, LA_EBUDGET)) grads_untouched(r, what, &io, f32);
            }
        }
        assert_int_equal(la_set_num_threads(0), LA_OK);
        for (int t = 0; t < 3; t++) {
            free(free64[t]);
            free(free32[t]);
        }
        backward_io_free(&io);
    }
    property_end();
}

/* ------------------------------------------------------------------ gradient mode */

/* The gradient mode's inputs: the shape's, every other query zero (equal scores), or
 * logits of ±1e3; and the central differences' relative step (fd_step · max(1, |x|)). */
enum { GRAD_NORMAL, GRAD_EQUAL_SCORES, GRAD_LARGE_LOGITS };
static double fd_step = FD_STEP;

/* L(q, k, v) = Σ out ∘ d_out, out = the row's float64 reference on (q, k, v). */
static double loss(const row *r, const la_problem *p, const inputs *in, const double *d_out,
                   double *out)
{
    if (r->info->fns->reference(p, in->q, in->k, in->v, out) != LA_OK) return NAN;
    double sum = 0;
    for (size_t e = 0; e < in->no; e++)
        sum += out[e] * d_out[e];
    return sum;
}

/* ∂L/∂x for every element of x, which is in->q, in->k or in->v (perturbed in place and
 * restored), by central differences: (L(x + h) − L(x − h)) / (the step actually taken),
 * h = fd_step · max(1, |x|) (FD_STEP, but for logits of ±1e3). */
static void finite_differences(const row *r, const la_problem *p, inputs *in, double *x, size_t n,
                               const double *d_out, double *out, double *grad)
{
    for (size_t e = 0; e < n; e++) {
        const double x0 = x[e], h = fd_step * fmax(1.0, fabs(x0));
        const double up = x[e] = x0 + h;
        const double l_up = loss(r, p, in, d_out, out);
        const double down = x[e] = x0 - h;
        const double l_down = loss(r, p, in, d_out, out);
        x[e] = x0;
        grad[e] = (l_up - l_down) / (up - down);
    }
}

/* The relative errors of the row's backward_f64 (err64), backward_f32 (err32) and
 * reference_backward (err_ref) against central differences of its reference, per tensor
 * d_q, d_k, d_v, on fresh inputs and a random d_out; NAN where the row has no such function.
 * equal_scores: every other query (i even) zero, so that its visible keys all score 0.
 * false (the row failed) when a call did not return LA_OK. */
static bool gradient_errors(const row *r, int variant, double err64[3], double err32[3],
                            double err_ref[3])
{
    const la_problem p = row_problem(r);
    inputs in;
    char label[400];
    snprintf(label, sizeof label, "%s gradient", r->label);
    inputs_make(&in, &p, false, label); /* not the 1/8 grid: no ties, L is smooth */
    /* FAVOR+'s maxima apart by more than the steps can move them, else a fresh draw */
    const bool favor = strncmp(r->info->name, "favor", 5) == 0;
    for (int draw = 2;
         favor && variant == GRAD_NORMAL && draw <= 16 && tu_favor_kink_gap(&p, in.q, in.k) < 1e-3;
         draw++) {
        inputs_free(&in);
        snprintf(label, sizeof label, "%s gradient, draw %d", r->label, draw);
        inputs_make(&in, &p, false, label);
    }
    if ((r->info->params & LA_PARAM_FEATURE_MAP) && p.feature_map == LA_FEATURE_RELU) {
        /* relu's φ′ jumps at 0, and central differences across the jump are off by it:
         * no q or k entry within a few steps of 0 (seed 837071810049 drew a key entry
         * within the step, and d_k missed its central differences by 6%) */
        double *xs[2] = {in.q, in.k};
        float *x32s[2] = {in.q32, in.k32};
        const size_t ns[2] = {in.nq, in.nk};
        for (int t = 0; t < 2; t++)
            for (size_t e = 0; e < ns[t]; e++)
                if (fabs(xs[t][e]) < 4 * FD_STEP) {
                    x32s[t][e] = (float)(xs[t][e] < 0 ? -4 * FD_STEP : 4 * FD_STEP);
                    xs[t][e] = x32s[t][e];
                }
    }
    if (variant == GRAD_LARGE_LOGITS) {
        /* every key plus `times` its head's first key: logits of about ±1e3 (as
         * backward_matches_reference's case), their differences unchanged */
        inputs plain = in;
        double times;
        assert_true(case_inputs(r, CASE_LARGE_LOGITS, &p, &plain, &in, &times));
        inputs_free(&plain);
    }
    if (variant == GRAD_EQUAL_SCORES)
        for (size_t hd = 0; hd < p.batch * p.heads; hd++)
            for (size_t i = 0; i < p.n_queries; i += 2)
                for (size_t e = 0; e < p.d_k; e++)
                    in.q32[(hd * p.n_queries + i) * p.d_k + e] =
                        (float)(in.q[(hd * p.n_queries + i) * p.d_k + e] = 0);
    const size_t sizes[3] = {in.nq, in.nk, in.nv};
    double *xs[3] = {in.q, in.k, in.v};
    double *d_out = tu_f64(in.no), *out = tu_f64(in.no), *fd[3], *g64[3];
    float *d_out32 = tu_f32(in.no), *out32 = tu_f32(in.no), *g32[3];
    tu_rng rng = tu_rng_for(r->label);
    fill(&rng, false, d_out, d_out32, in.no);
    for (int t = 0; t < 3; t++) {
        fd[t] = tu_f64(sizes[t]);
        g64[t] = tu_f64(sizes[t]);
        g32[t] = tu_f32(sizes[t]);
        finite_differences(r, &p, &in, xs[t], sizes[t], d_out, out, fd[t]);
        err64[t] = err32[t] = err_ref[t] = NAN;
    }
    bool ok = true;
    if (r->info->fns->reference_backward) {
        ok &= check_status(r, "gradient mode: reference",
                           r->info->fns->reference(&p, in.q, in.k, in.v, out), LA_OK) &&
              check_status(r, "reference_backward",
                           r->info->fns->reference_backward(&p, in.q, in.k, in.v, out, d_out,
                                                            g64[0], g64[1], g64[2]),
                           LA_OK);
        for (int t = 0; ok && t < 3; t++)
            err_ref[t] = tu_rel_error_f64(g64[t], fd[t], sizes[t], NULL);
    }
    if (r->info->fns->backward_f64) {
        ok &= check_status(r, "gradient mode: forward_f64", run_f64(r, &p, &in, out), LA_OK) &&
              check_status(r, "backward_f64",
                           r->info->fns->backward_f64(&p, in.q, in.k, in.v, out, d_out, g64[0],
                                                      g64[1], g64[2]),
                           LA_OK);
        for (int t = 0; ok && t < 3; t++)
            err64[t] = tu_rel_error_f64(g64[t], fd[t], sizes[t], NULL);
    }
    if (r->info->fns->backward_f32 && variant != GRAD_LARGE_LOGITS) {
        ok &= check_status(r, "gradient mode: forward_f32", run_f32(r, &p, &in, out32), LA_OK) &&
              check_status(r, "backward_f32",
                           r->info->fns->backward_f32(&p, in.q32, in.k32, in.v32, out32, d_out32,
                                                      g32[0], g32[1], g32[2]),
                           LA_OK);
        /* d_q, d_k and d_v relative to the larger of their norm and the floor
         * (yardsticks.h): where they cancel, float32's rounding is of the size of their
         * terms (seed 834898392513: softmax causal, a query of zeros, d_k at 1.05e-4 of
         * its norm) */
        double yard[3] = {-1, -1, -1};
        const tu_backward bw = {in.q, in.k, in.v, out, d_out};
        if (ok && check_status(r, "gradient mode: forward_f64", run_f64(r, &p, &in, out), LA_OK))
            tu_gradient_yardsticks(r->info, &p, &bw, yard);
        if (ok && !(tu_rel_error_f32(g32[2], fd[2], sizes[2], NULL) < TOL_GRAD_F32))
            yard[2] = tu_dv_yardstick(r->info, &p, &bw); /* as backward_check_row: lazily */
        for (int t = 0; ok && t < 3; t++)
            err32[t] = yard[t] >= 0
                           ? tu_floored_error_f32(g32[t], fd[t], sizes[t], TU_BWD_FLOOR * yard[t])
                           : tu_rel_error_f32(g32[t], fd[t], sizes[t], NULL);
    }
    for (int t = 0; t < 3; t++) {
        free(fd[t]);
        free(g64[t]);
        free(g32[t]);
    }
    free(d_out);
    free(out);
    free(d_out32);
    free(out32);
    inputs_free(&in);
    return ok;
}

/* Fails row r where an error is at or above its tolerance (NaN included); `what` names the
 * inputs. */
static void check_gradient_errors(const row *r, const char *what, const double err64[3],
                                  const double err32[3], const double err_ref[3])
{
    for (int t = 0; t < 3; t++) {
        if (r->info->fns->reference_backward && !(err_ref[t] < TOL_GRAD_F64))
            row_fail(r,
                     "%sreference_backward %s: relative error %.3e >= %.0e against central "
                     "differences",
                     what, grad_names[t], err_ref[t], TOL_GRAD_F64);
        if (r->info->fns->backward_f64 && !(err64[t] < TOL_GRAD_F64))
            row_fail(r,
                     "%sbackward_f64 %s: relative error %.3e >= %.0e against central differences",
                     what, grad_names[t], err64[t], TOL_GRAD_F64);
        if (r->info->fns->backward_f32 && !isnan(err32[t]) && !(err32[t] < TOL_GRAD_F32))
            row_fail(r,
                     "%sbackward_f32 %s: relative error %.3e >= %.0e against central differences",
                     what, grad_names[t], err32[t], TOL_GRAD_F32);
    }
}

/* Gradient mode: every row with a backward_f64 or backward_f32, on the tiny gradient
 * shapes, against central differences of the float64 reference of L = Σ out ∘ d_out.
 * Rows without a backward are skipped, and the output says which; when no row has one
 * the test is reported as skipped. */
static void gradients(void **state)
{
    (void)state;
    property_begin("gradients", 1);
    size_t n_grad;
    row *grad_rows = registry_rows(grad_shapes, N_GRAD_SHAPES, &n_grad);
    size_t skipped = 0;
    for (size_t ri = 0; ri < n_grad; ri++) {
        const row *r = &grad_rows[ri];
        if (!r->info->fns->backward_f64 && !r->info->fns->backward_f32) {
            /* one line per kernel and form, at its first row */
            if (ri == 0 || grad_rows[ri - 1].info != r->info ||
                grad_rows[ri - 1].causal != r->causal)
                print_message("  gradient mode: %s %s: no backward_f64 or backward_f32 in the "
                              "registry: its rows skipped\n",
                              r->info->name, r->causal ? "causal" : "non-causal");
            skipped++;
            continue;
        }
        prop.rows++;
        double err64[3], err32[3], err_ref[3];
        if (gradient_errors(r, GRAD_NORMAL, err64, err32, err_ref))
            check_gradient_errors(r, "", err64, err32, err_ref);
        /* a query whose visible keys all score alike: not for argmax kernels (exact rows),
         * whose output jumps there (no derivative: central differences see the jump), and
         * only for rows with scores (a scale): for linear attention the zero query sits on
         * φ's kink at 0 (relu's φ′ jumps, elu+1's φ″ does), where central differences and
         * φ′ legitimately differ */
        if (!r->tol.exact && (r->info->params & LA_PARAM_SCALE) &&
            gradient_errors(r, GRAD_EQUAL_SCORES, err64, err32, err_ref))
            check_gradient_errors(r, "even queries 0: ", err64, err32, err_ref);
        /* logits of ±1e3, float64 only (float32's error there is logit-sized: held by
         * backward_matches_reference): steps 10 times shorter, as L's curvature grows with
         * the logits: at h = 1e-6·|x| a logit moves by about 1e-3, truncation ≈ (1e-3)²/6, and
         * rounding (L's float64 error is about 1e-16·|logit|, divided by h) ≈ 1e-7. Not for
         * the linear family (Taylor's weights 1 + s + s²/2, about 5e5 there): a query that
         * sees one key then depends on q only through eps/den ≈ 1e-6, the case the gradient
         * shapes' eps = 0.5 keeps out at ordinary logits, and central differences lose its
         * d_q in rounding (backward_matches_reference holds the kernels there) */
        if (!r->tol.exact && (r->info->params & LA_PARAM_SCALE) &&
            strcmp(r->info->family, "linear") != 0) {
            fd_step = FD_STEP / 10;
            if (gradient_errors(r, GRAD_LARGE_LOGITS, err64, err32, err_ref))
                check_gradient_errors(r, "logits ±1e3: ", err64, err32, err_ref);
            fd_step = FD_STEP;
        }
    }
    free(grad_rows);
    print_message("  gradient mode: %zu rows checked, %zu of %zu skipped (no backward)\n",
                  prop.rows, skipped, n_grad);
    if (prop.rows == 0) {
        print_message("gradients: SKIPPED on every row: no kernel has a backward\n");
        skip();
    }
    property_end();
}

/* ------------------------------------------------------------------ the self-test */

/* 0: the correct gradient; 1: without the softmax Jacobian's centring term (d_s = P dP),
 * a classic bug; 2: d_v off by a relative 1e-5 (the mode must see that small an error). */
static int by_hand_bug;

/* The gradient of softmax attention, written by hand from its definition and not from
 * the library: per head and query i with m_i visible keys (0: a zero row, no gradient),
 *   s_ij = q_i·k_j·scale, P_ij = exp(s_ij − max_l s_il) / Σ_l exp(…), out_i = Σ_j P_ij v_j,
 *   d_v_j += P_ij d_out_i                          (d_V = Pᵀ d_out)
 *   dP_ij = d_out_i·v_j,  d_s_ij = P_ij (dP_ij − Σ_l P_il dP_il)
 *   d_q_i += scale Σ_j d_s_ij k_j,  d_k_j += scale d_s_ij q_i.
 * Shapes as la_backward_f64_fn; out is not needed. */
static la_status softmax_backward_by_hand(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out,
                                          double *d_q, double *d_k, double *d_v)
{
    (void)out;
    const size_t N = p->n_queries, M = p->n_keys, dk = p->d_k, dv = p->d_v;
    const size_t bh = p->batch * p->heads;
    memset(d_q, 0, bh * N * dk * sizeof *d_q);
    memset(d_k, 0, bh * M * dk * sizeof *d_k);
    memset(d_v, 0, bh * M * dv * sizeof *d_v);
    double *P = tu_f64(M), *dP = tu_f64(M);
    for (size_t hd = 0; hd < bh; hd++) {
        const size_t b = hd / p->heads;
        const double *qh = q + hd * N * dk, *kh = k + hd * M * dk, *vh = v + hd * M * dv;
        const double *gh = d_out + hd * N * dv;
        double *dqh = d_q + hd * N * dk, *dkh = d_k + hd * M * dk, *dvh = d_v + hd * M * dv;
        for (size_t i = 0; i < N; i++) {
            size_t m =
                p->key_lengths && (size_t)p->key_lengths[b] < M ? (size_t)p->key_lengths[b] : M;
            if (p->causal && i + 1 < m) m = i + 1;
            if (m == 0) continue;
            /* P_i = softmax(s_i) over the m visible keys */
            double max = -INFINITY, sum = 0, centre = 0;
            for (size_t j = 0; j < m; j++) {
                P[j] = 0;
                for (size_t c = 0; c < dk; c++)
                    P[j] += qh[i * dk + c] * kh[j * dk + c];
                P[j] *= p->scale;
                max = fmax(max, P[j]);
            }
            for (size_t j = 0; j < m; j++)
                sum += P[j] = exp(P[j] - max);
            /* d_v_j += P_ij d_out_i; dP_ij = d_out_i·v_j; centre = Σ_j P_ij dP_ij */
            for (size_t j = 0; j < m; j++) {
                P[j] /= sum;
                dP[j] = 0;
                for (size_t c = 0; c < dv; c++) {
                    dvh[j * dv + c] += P[j] * gh[i * dv + c] * (by_hand_bug == 2 ? 1 + 1e-5 : 1);
                    dP[j] += gh[i * dv + c] * vh[j * dv + c];
                }
                centre += P[j] * dP[j];
            }
            /* d_s_ij = P_ij (dP_ij − centre), then into d_q_i and d_k_j */
            for (size_t j = 0; j < m; j++) {
                const double ds = P[j] * (dP[j] - (by_hand_bug == 1 ? 0 : centre)) * p->scale;
                for (size_t c = 0; c < dk; c++) {
                    dqh[i * dk + c] += ds * kh[j * dk + c];
                    dkh[j * dk + c] += ds * qh[i * dk + c];
                }
            }
        }
    }
    free(P);
    free(dP);
    return LA_OK;
}

/* The gradient mode's machinery (rows, inputs, central differences, the comparison) on
 * a copy of the softmax registry row given the hand-written backward above, both causal
 * forms, every gradient shape: it must pass; and with either bug in the backward, every
 * row must fail (so the mode is ready, and can fail, the moment a backward lands). */
static void finite_differences_self_test(void **state)
{
    (void)state;
    property_begin("finite_differences_self_test", 1);
    la_kernel_info by_hand = *la_kernel_get(LA_KERNEL_SOFTMAX);
    la_kernel_fns fns_by_hand = *by_hand.fns;
    fns_by_hand.backward_f64 = softmax_backward_by_hand;
    by_hand.fns = &fns_by_hand;
    const la_kernel_info *infos[1] = {&by_hand};
    const size_t n = rows_generate(grad_shapes, N_GRAD_SHAPES, infos, 1, NULL);
    row *test_rows = tu_alloc(n * sizeof *test_rows);
    rows_generate(grad_shapes, N_GRAD_SHAPES, infos, 1, test_rows);
    double worst = 0, least_bug[3] = {INFINITY, INFINITY, INFINITY};
    for (size_t ri = 0; ri < n; ri++, prop.rows++) {
        const row *r = &test_rows[ri];
        for (by_hand_bug = 0; by_hand_bug <= 2; by_hand_bug++) {
            double err64[3], err32[3], err_ref[3];
            if (!gradient_errors(r, GRAD_NORMAL, err64, err32, err_ref)) continue;
            if (by_hand_bug == 0) {
                check_gradient_errors(r, "", err64, err32, err_ref);
                for (int t = 0; t < 3; t++)
                    worst = fmax(worst, err64[t]);
                continue;
            }
            /* the bug must show: some tensor at or above the tolerance */
            double max_err = 0;
            for (int t = 0; t < 3; t++)
                max_err = fmax(max_err, err64[t]);
            least_bug[by_hand_bug] = fmin(least_bug[by_hand_bug], max_err);
            if (max_err < TOL_GRAD_F64)
                row_fail(r, "a backward with bug %d passed (largest relative error %.3e)",
                         by_hand_bug, max_err);
        }
    }
    by_hand_bug = 0;
    free(test_rows);
    print_message("  central differences against the hand-written softmax gradient: worst "
                  "relative error %.1e (tolerance %.0e); the broken gradients show at least "
                  "%.1e (no centring) and %.1e (d_v off by 1e-5)\n",
                  worst, TOL_GRAD_F64, least_bug[1], least_bug[2]);
    property_end();
}

/* ------------------------------------------------------------------ main */

/* Where the CPU has no AVX-512 (or LA_SIMD=off), the run with the AVX-512 paths off is
 * the default run again: said, not silently passed. */
static void avx512_paths_off(void **state)
{
    (void)state;
    print_message("AVX-512 paths off: the same as the default run here (float32 paths: %s); "
                  "not run twice\n",
                  la_config().simd);
    skip();
}

/* The quick profile's cap on a row's forward FLOPs (la_attention_cost): under qemu the
 * rows above it (Taylor's 1 + d_k + d_k² features at d_k = 127 first) took most of the
 * portable stage's 541 s; natively, LA_SIMD=off, the quick run goes from 18 s to 3 s and
 * keeps 290 of 304 rows. The full profile runs them all. */
#define QUICK_FLOPS_MAX 5e6

/* Taylor attention with a negative scale: the queries' linear features take its sign
 * (φ_q = [1, −r·q, t·q⊗q], taylor.c), which no registry row's positive scale reaches.
 * Forward and backward, non-causal and causal, both precisions, against the reference. */
static void taylor_negative_scale(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("taylor_negative_scale");
    const size_t B = 1, H = 2, N = 37, d = 6, nx = B * H * N * d;
    double *q = tu_f64(nx), *k = tu_f64(nx), *v = tu_f64(nx), *ref = tu_f64(nx), *out = tu_f64(nx),
           *d_out = tu_f64(nx);
    double *g_ref = tu_f64(3 * nx), *g = tu_f64(3 * nx), *wide = tu_f64(3 * nx);
    float *q32 = tu_f32(nx), *k32 = tu_f32(nx), *v32 = tu_f32(nx), *out32 = tu_f32(nx),
          *d_out32 = tu_f32(nx), *g32 = tu_f32(3 * nx);
    tu_fill_normal(&r, q, nx, 1), tu_fill_normal(&r, k, nx, 1), tu_fill_normal(&r, v, nx, 1);
    tu_fill_normal(&r, d_out, nx, 1);
    tu_to_f32(q, q32, nx), tu_to_f64(q32, q, nx);
    tu_to_f32(k, k32, nx), tu_to_f64(k32, k, nx);
    tu_to_f32(v, v32, nx), tu_to_f64(v32, v, nx);
    tu_to_f32(d_out, d_out32, nx), tu_to_f64(d_out32, d_out, nx);
    for (int causal = 0; causal <= 1; causal++) {
        la_problem p;
        la_problem_init(&p, B, H, N, N, d, d);
        p.causal = causal;
        p.scale = -0.3;
        assert_int_equal(la_ref_attention(LA_KERNEL_TAYLOR, &p, q, k, v, ref), LA_OK);
        assert_int_equal(la_attention(LA_KERNEL_TAYLOR, &p, LA_FLOAT64, q, k, v, out), LA_OK);
        assert_int_equal(la_attention(LA_KERNEL_TAYLOR, &p, LA_FLOAT32, q32, k32, v32, out32),
                         LA_OK);
        tu_assert_close_f64(out, ref, nx, 1e-12, "taylor scale -0.3 causal=%d float64", causal);
        tu_assert_close_f32(out32, ref, nx, 1e-5, "taylor scale -0.3 causal=%d float32", causal);
        assert_int_equal(la_ref_attention_backward(LA_KERNEL_TAYLOR, &p, q, k, v, ref, d_out, g_ref,
                                                   g_ref + nx, g_ref + 2 * nx),
                         LA_OK);
        assert_int_equal(la_attention_backward(LA_KERNEL_TAYLOR, &p, LA_FLOAT64, q, k, v, out, NULL,
                                               d_out, g, g + nx, g + 2 * nx),
                         LA_OK);
        assert_int_equal(la_attention_backward(LA_KERNEL_TAYLOR, &p, LA_FLOAT32, q32, k32, v32,
                                               out32, NULL, d_out32, g32, g32 + nx, g32 + 2 * nx),
                         LA_OK);
        tu_assert_close_f64(g, g_ref, 3 * nx, 1e-12, "taylor backward scale -0.3 causal=%d",
                            causal);
        tu_to_f64(g32, wide, 3 * nx);
        tu_assert_close_f64(wide, g_ref, 3 * nx, 1e-4, "taylor float32 backward causal=%d", causal);
    }
    free(q), free(k), free(v), free(ref), free(out), free(d_out), free(g_ref), free(g), free(wide);
    free(q32), free(k32), free(v32), free(out32), free(d_out32), free(g32);
}

/* Whether a Taylor backward call refused (LA_ERANGE) with every bit of d_q, d_k, d_v (3·nx
 * values from g, kept in `kept`) untouched; fails the test otherwise, naming `what`. */
static void taylor_backward_refuses(const la_problem *p, la_dtype dt, const void *q, const void *k,
                                    const void *v, const void *out, const void *d_out, void *g,
                                    const void *kept, size_t bytes, const char *what)
{
    const size_t third = bytes / 3;
    const la_status st = la_attention_backward(LA_KERNEL_TAYLOR, p, dt, q, k, v, out, NULL, d_out,
                                               g, (char *)g + third, (char *)g + 2 * third);
    if (st != LA_ERANGE || memcmp(g, kept, bytes) != 0)
        fail_msg("taylor backward, %s, causal=%d: %s, gradients %s (seed %llu)", what, p->causal,
                 la_strerror(st), memcmp(g, kept, bytes) ? "written" : "kept",
                 (unsigned long long)tu_seed());
}

/* Taylor attention's range rules where float64 reaches them (float32 refuses long before,
 * by its precision rule: test_extremes.c): queries of 1e160, whose features t·q_a·q_b pass
 * DBL_MAX, refused in both forms, forward and backward; queries and keys of 1e80, whose
 * features are finite but whose products φ(q)·φ(k) are not, refused by the causal form's
 * range rule. Then the backward's float32 precision rule (|scale|·max‖q‖·max‖k‖ past 128,
 * as the forward's). Refused means LA_ERANGE with every bit of the output kept. */
static void taylor_range_rules(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("taylor_range_rules");
    const size_t B = 1, H = 1, N = 9, d = 4, nx = B * H * N * d;
    double *q = tu_f64(nx), *k = tu_f64(nx), *v = tu_f64(nx), *out = tu_f64(nx), *kept = tu_f64(nx);
    double *g = tu_f64(3 * nx), *g_kept = tu_f64(3 * nx);
    const struct {
        double q_mag, k_mag;
        bool both_forms; /* refused non-causal too */
    } cases[] = {{1e160, 1, true}, {1e80, 1e80, false}};
    for (size_t c = 0; c < 2; c++) {
        tu_fill_normal(&r, q, nx, cases[c].q_mag), tu_fill_normal(&r, k, nx, cases[c].k_mag);
        tu_fill_normal(&r, v, nx, 1);
        for (int causal = !cases[c].both_forms; causal <= 1; causal++) {
            la_problem p;
            la_problem_init(&p, B, H, N, N, d, d);
            p.causal = causal;
            for (size_t i = 0; i < nx; i++)
                out[i] = kept[i] = 0.5 + (double)i;
            const la_status st = la_attention(LA_KERNEL_TAYLOR, &p, LA_FLOAT64, q, k, v, out);
            if (st != LA_ERANGE || memcmp(out, kept, nx * sizeof *out) != 0)
                fail_msg("taylor float64, q %g, k %g, causal=%d: %s, output %s (seed %llu)",
                         cases[c].q_mag, cases[c].k_mag, causal, la_strerror(st),
                         memcmp(out, kept, nx * sizeof *out) ? "written" : "kept",
                         (unsigned long long)tu_seed());
            if (cases[c].both_forms) { /* the backward's rule is the forward's */
                for (size_t i = 0; i < 3 * nx; i++)
                    g[i] = g_kept[i] = 0.25 + (double)i;
                taylor_backward_refuses(&p, LA_FLOAT64, q, k, v, v, v, g, g_kept,
                                        3 * nx * sizeof *g, "float64, q 1e160");
            }
        }
    }
    /* float32: q and k N(0, 20²) at d = 4, scale 1/2: max‖q‖·max‖k‖/2 near 800, past 128 */
    float *q32 = tu_f32(nx), *k32 = tu_f32(nx), *v32 = tu_f32(nx), *g32 = tu_f32(3 * nx),
          *g32_kept = tu_f32(3 * nx);
    tu_fill_normal(&r, q, nx, 20), tu_fill_normal(&r, k, nx, 20), tu_fill_normal(&r, v, nx, 1);
    tu_to_f32(q, q32, nx), tu_to_f32(k, k32, nx), tu_to_f32(v, v32, nx);
    for (int causal = 0; causal <= 1; causal++) {
        la_problem p;
        la_problem_init(&p, B, H, N, N, d, d);
        p.causal = causal;
        for (size_t i = 0; i < 3 * nx; i++)
            g32[i] = g32_kept[i] = (float)(0.25 + (double)i);
        taylor_backward_refuses(&p, LA_FLOAT32, q32, k32, v32, v32, v32, g32, g32_kept,
                                3 * nx * sizeof *g32, "float32, logits past 128");
    }
    free(q), free(k), free(v), free(out), free(kept), free(g), free(g_kept);
    free(q32), free(k32), free(v32), free(g32), free(g32_kept);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress and failures (stderr) in order in logs */
    tu_init("test_attention");
    shape *table = tu_quick() ? quick_shapes : shapes;
    const size_t n_table = tu_quick() ? N_QUICK_SHAPES : N_SHAPES;
    shapes_draw_lengths(table, n_table, "shape");
    shapes_draw_lengths(grad_shapes, N_GRAD_SHAPES, "gradient shape");
    rows = registry_rows(table, n_table, &n_rows);
    if (tu_quick()) { /* the quick profile runs under qemu and ASan: no costly row */
        size_t kept = 0, dropped = 0;
        for (size_t ri = 0; ri < n_rows; ri++) {
            const la_problem p = row_problem(&rows[ri]);
            la_cost c;
            if (la_attention_cost(rows[ri].info->kernel, &p, LA_FLOAT32, &c) == LA_OK &&
                c.flops_total > QUICK_FLOPS_MAX)
                dropped++;
            else
                rows[kept++] = rows[ri];
        }
        n_rows = kept;
        printf("test_attention: quick profile: %zu rows of more than %.0e FLOPs left to the "
               "full profile\n",
               dropped, (double)QUICK_FLOPS_MAX);
    }
    printf("test_attention: %zu rows: %d registry kernels × the causal forms each allows × %zu "
           "%s × the feature maps a kernel reads\n",
           n_rows, (int)LA_KERNEL_COUNT, n_table,
           tu_quick() ? "shapes of the quick profile" : "shapes");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matches_reference),
        cmocka_unit_test(causal_ignores_future),
        cmocka_unit_test(threads_bitwise),
        cmocka_unit_test(errors_leave_output),
        cmocka_unit_test(workspace_as_cost),
        cmocka_unit_test(backward_matches_reference),
        cmocka_unit_test(backward_threads_bitwise),
        cmocka_unit_test(backward_errors_leave_output),
        cmocka_unit_test(backward_workspace_as_cost),
        cmocka_unit_test(gradients),
        cmocka_unit_test(finite_differences_self_test),
        cmocka_unit_test(taylor_negative_scale),
        cmocka_unit_test(taylor_range_rules),
    };
    const bool avx512 = la_avx512_usable();
    printf("== the default float32 paths: %s\n", la_config().simd);
    int failed = cmocka_run_group_tests_name("default float32 paths", tests, NULL, NULL);
    if (avx512) {
        la_avx512_enable(false);
        printf("== again with the AVX-512 paths off: %s\n", la_config().simd);
        failed += cmocka_run_group_tests_name("AVX-512 paths off", tests, NULL, NULL);
        la_avx512_enable(true);
    } else {
        printf("== again with the AVX-512 paths off\n");
        const struct CMUnitTest off[] = {cmocka_unit_test(avx512_paths_off)};
        failed += cmocka_run_group_tests_name("AVX-512 paths off", off, NULL, NULL);
    }
    ref_cache_free();
    input_cache_free();
    free(rows);
    return failed != 0;
}

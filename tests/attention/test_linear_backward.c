/* test_linear_backward.c — the backward passes of linear attention (non-causal, chunked
 * causal, recurrent; float32 and float64; elu+1 and relu):
 *   - every kernel against la_ref_linear_attention_backward, per gradient (float64 to
 *     1e-11, float32 to 1e-5; d_q and d_k floored at a tenth of their terms' size), on
 *     shapes with M != N, d_k != d_v, key lengths 0 and 1,
 *     N not a multiple of the chunk, chunk 1, eps 0 with empty rows;
 *   - the reference against central differences of la_ref_linear_attention (float64, 1e-6);
 *   - the chunked form against the token-by-token one, for many chunk sizes;
 *   - the same bits on 1, 2 and 3 threads (both schedules of each kernel);
 *   - the workspace: what la_attention_backward_cost reports is what the kernel holds
 *     (runs at that limit, LA_EBUDGET one byte under), and the causal one grows at most
 *     linearly in N, by O(d) per token, never O(d²);
 *   - errors (NULL, bad problems, the budget, the range rule) leave every output untouched.
 * Inputs are fresh each run (seed printed by tu_init; replay with LA_TEST_SEED). */
#include "../testutil.h"
#include "../yardsticks.h"
#include "attention/kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F64 1e-11
#define TOL_F32 1e-5
/* The recurrent form's float32 gradients sum one rank-1 term per token in order, and d_k
 * cancels between them: over 25 random seeds the worst error was 2.7e-6, but seed
 * 785956141765 reached 1.25e-5 (recurrent elu d_k, relative to its largest element). A
 * wrong term costs 1e-1 or more. */
#define TOL_F32_RECURRENT 4e-5
#define TOL_FD 1e-6
#define FD_STEP 1e-5

/* ---------------------------------------------------------------- inputs */

/* q, k, v and d_out drawn N(0, 1) and rounded to float32, so the float64 copies are exactly
 * what the float32 kernels see; the gradients and outputs of both precisions. */
typedef struct {
    la_problem p;
    int64_t lengths[4];
    size_t n[4]; /* elements of q, k, v, out */
    double *x[4], *d_out;
    float *x32[4], *d_out32;
} inputs;

enum { Q, K, V, OUT };
static const char *const grad_name[3] = {"d_q", "d_k", "d_v"};

/* q and k (rows of d_k) moved away from relu's kink, |x| >= 0.25 (central differences
 * never cross it), and every row given two positive entries (when d_k >= 2). A relu
 * query with a single positive entry a is degenerate: its output φ(q)ᵀS / (φ(q)·z + eps)
 * does not depend on a but through eps, so its d_q is rounding noise of size
 * u·|S|·|d_out|/den, far above the true 1e-6-sized value once a is small; no precision
 * resolves it relative to itself. So is a query whose visible keys but one have φ(k) = 0.
 * (Empty rows are made on purpose: shapes with eps = 0.) */
static void condition(double *x, size_t rows, size_t dk)
{
    for (size_t e = 0; e < rows * dk; e++)
        x[e] = x[e] < 0 ? x[e] - 0.25 : x[e] + 0.25;
    if (dk >= 2)
        for (size_t i = 0; i < rows; i++)
            for (size_t a = 0; a < 2; a++)
                x[i * dk + a] = fabs(x[i * dk + a]);
}

static void make_inputs(inputs *in, const char *label, size_t B, size_t H, size_t N, size_t M,
                        size_t dk, size_t dv)
{
    memset(in, 0, sizeof *in);
    la_problem_init(&in->p, B, H, N, M, dk, dv);
    const size_t heads = B * H;
    in->n[Q] = heads * N * dk;
    in->n[K] = heads * M * dk;
    in->n[V] = heads * M * dv;
    in->n[OUT] = heads * N * dv;
    tu_rng r = tu_rng_for(label);
    for (int t = 0; t < 4; t++) {
        in->x[t] = tu_f64(in->n[t]);
        in->x32[t] = tu_f32(in->n[t]);
        if (t == OUT) break;
        tu_fill_normal(&r, in->x[t], in->n[t], 1.0);
        if (t != V) condition(in->x[t], in->n[t] / dk, dk);
        tu_to_f32(in->x[t], in->x32[t], in->n[t]);
        tu_to_f64(in->x32[t], in->x[t], in->n[t]);
    }
    in->d_out = tu_f64(in->n[OUT]);
    in->d_out32 = tu_f32(in->n[OUT]);
    tu_fill_normal(&r, in->d_out, in->n[OUT], 1.0);
    tu_to_f32(in->d_out, in->d_out32, in->n[OUT]);
    tu_to_f64(in->d_out32, in->d_out, in->n[OUT]);
}

static void free_inputs(inputs *in)
{
    for (int t = 0; t < 4; t++) {
        free(in->x[t]);
        free(in->x32[t]);
    }
    free(in->d_out);
    free(in->d_out32);
}

/* Gradients d_q, d_k, d_v of one call, in both precisions. */
typedef struct {
    double *g[3];
    float *g32[3];
} grads;

static void make_grads(grads *g, const inputs *in)
{
    for (int t = 0; t < 3; t++) {
        g->g[t] = tu_f64(in->n[t]);
        g->g32[t] = tu_f32(in->n[t]);
    }
}

static void free_grads(grads *g)
{
    for (int t = 0; t < 3; t++) {
        free(g->g[t]);
        free(g->g32[t]);
    }
}

/* ---------------------------------------------------------------- running */

/* The three forms: the linear row non-causal and causal (chunked), and the recurrent row. */
typedef enum { NONCAUSAL, CHUNKED, RECURRENT } form;
static const char *const form_name[] = {"non-causal", "chunked", "recurrent"};

static la_kernel kernel_of(form f)
{
    return f == RECURRENT ? LA_KERNEL_LINEAR_RECURRENT : LA_KERNEL_LINEAR;
}

static la_problem problem_of(form f, const la_problem *p0)
{
    la_problem p = *p0;
    p.causal = f != NONCAUSAL;
    return p;
}

/* The forward in float64 (in->x[OUT]), then the backward of form f into g->g. */
static la_status backward_f64(form f, const la_problem *p0, inputs *in, grads *g)
{
    const la_problem p = problem_of(f, p0);
    la_status st =
        la_attention(kernel_of(f), &p, LA_FLOAT64, in->x[Q], in->x[K], in->x[V], in->x[OUT]);
    if (st != LA_OK) return st;
    if (f == RECURRENT)
        return la_linear_attention_recurrent_backward_f64(
            &p, in->x[Q], in->x[K], in->x[V], in->x[OUT], in->d_out, g->g[0], g->g[1], g->g[2]);
    return la_linear_attention_backward_f64(&p, in->x[Q], in->x[K], in->x[V], in->x[OUT], in->d_out,
                                            g->g[0], g->g[1], g->g[2]);
}

/* The same in float32 (in->x32[OUT], g->g32). */
static la_status backward_f32(form f, const la_problem *p0, inputs *in, grads *g)
{
    const la_problem p = problem_of(f, p0);
    la_status st = la_attention(kernel_of(f), &p, LA_FLOAT32, in->x32[Q], in->x32[K], in->x32[V],
                                in->x32[OUT]);
    if (st != LA_OK) return st;
    if (f == RECURRENT)
        return la_linear_attention_recurrent_backward_f32(&p, in->x32[Q], in->x32[K], in->x32[V],
                                                          in->x32[OUT], in->d_out32, g->g32[0],
                                                          g->g32[1], g->g32[2]);
    return la_linear_attention_backward_f32(&p, in->x32[Q], in->x32[K], in->x32[V], in->x32[OUT],
                                            in->d_out32, g->g32[0], g->g32[1], g->g32[2]);
}

/* The reference gradients for form f (its causal flag) into ref->g. */
static void reference(form f, const la_problem *p0, inputs *in, grads *ref)
{
    const la_problem p = problem_of(f, p0);
    assert_int_equal(la_ref_linear_attention(&p, in->x[Q], in->x[K], in->x[V], in->x[OUT]), LA_OK);
    assert_int_equal(la_ref_linear_attention_backward(&p, in->x[Q], in->x[K], in->x[V], in->x[OUT],
                                                      in->d_out, ref->g[0], ref->g[1], ref->g[2]),
                     LA_OK);
}

/* ---------------------------------------------------------------- shapes */

typedef struct {
    size_t B, H, N, M, dk, dv;
    int64_t lengths[4]; /* -1: no key lengths */
    size_t chunk;
    double eps; /* < 0: the default */
} shape;

/* M != N both ways, d_k != d_v both ways, key lengths 0 and 1 (and partial, and M), N not
 * a multiple of the chunk, chunk 1, a chunk above N, several chunks of 64, more than one
 * non-causal block (128) and piece (512), B·H from 1 to 6, eps 0 (relu then has empty rows
 * at d_k = 2: a query with no positive entry).
 * Where every query that sees a key sees exactly one (N = M = 1; key lengths 0 and 1), its
 * output is v·a/(a + eps) with a = φ(q)·φ(k), so d_q and d_k are about eps·d_out·v/a: with
 * the default eps, 1e-6 of the terms that cancel to form them, and a float32 kernel (whose
 * den = a + eps holds eps to 6%) cannot give them to 1e-5 relative — nor PyTorch's float32
 * autograd. Those shapes take eps = 16, where the gradient is well-conditioned (the
 * cancellation is about (a + eps)/eps; eps = 4 was not always enough: seed 487553697443
 * gave a float32 d_k 2.6e-5 off). Shapes with
 * eps = 0 get empty rows (every fifth query all negative: relu's den is 0). */
/* clang-format off */
static const shape shapes[] = {
    {1, 1, 1, 1, 1, 1, {-1}, 1, 16},
    {1, 2, 5, 7, 3, 2, {-1}, 2, -1},
    {2, 1, 9, 4, 2, 5, {0, 1}, 3, 16},
    {2, 2, 17, 17, 8, 8, {1, 17}, 1, -1},
    {3, 1, 33, 20, 4, 6, {0, 20, 7}, 5, -1},
    {1, 3, 70, 90, 16, 12, {-1}, 64, -1},
    {2, 1, 130, 100, 12, 16, {100, 3}, 32, -1},
    {1, 1, 200, 600, 5, 7, {550}, 64, -1},
    {1, 2, 600, 150, 6, 5, {-1}, 100, -1},
    {2, 3, 40, 40, 2, 3, {40, 13}, 7, 0},
    {1, 1, 20, 30, 3, 4, {-1}, 50, 1e-3},
};
/* clang-format on */
enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };

static void problem_for(const shape *s, const char *label, inputs *in)
{
    make_inputs(in, label, s->B, s->H, s->N, s->M, s->dk, s->dv);
    in->p.chunk = s->chunk;
    if (s->eps >= 0) in->p.eps = s->eps;
    if (s->eps == 0) { /* empty rows: every fifth query all negative */
        for (size_t i = 0; i < s->B * s->H * s->N; i += 5)
            for (size_t a = 0; a < s->dk; a++) {
                in->x[Q][i * s->dk + a] = -fabs(in->x[Q][i * s->dk + a]);
                in->x32[Q][i * s->dk + a] = (float)in->x[Q][i * s->dk + a];
            }
    }
    if (s->lengths[0] >= 0) {
        memcpy(in->lengths, s->lengths, sizeof in->lengths);
        in->p.key_lengths = in->lengths;
    }
}

/* ---------------------------------------------------------------- against the reference */

/* Every form, φ and shape: backward_f64 within 1e-11 and backward_f32 within 1e-5 (the
 * recurrent form 4e-5) of the reference, per gradient; d_q and d_k relative to the larger
 * of their norm and TU_BWD_FLOOR times the size of the terms they sum (yardsticks.h).
 * Shape 2's d_k has two nonzero elements (one visible key, nine queries) whose terms can
 * cancel to 1e-3 of their size: against their own norm alone, float32 missed 1e-5 about
 * once in 1,000 runs (1 of 1,167, and 7 more above 0.4 of it); against the floor the worst
 * of 1,055 runs on the same seeds was 0.08 of the tolerance. */
static void backward_matches_reference(void **state)
{
    (void)state;
    double worst64 = 0, worst32 = 0;
    for (size_t si = 0; si < N_SHAPES; si++) {
        for (int fm = 0; fm < LA_FEATURE_COUNT; fm++) {
            for (int f = NONCAUSAL; f <= RECURRENT; f++) {
                char label[96];
                snprintf(label, sizeof label, "matches_reference %zu %d %d", si, fm, f);
                inputs in;
                problem_for(&shapes[si], label, &in);
                in.p.feature_map = (la_feature_map)fm;
                grads ref, got;
                make_grads(&ref, &in);
                make_grads(&got, &in);
                reference((form)f, &in.p, &in, &ref);
                /* d_q and d_k against max(‖ref‖, TU_BWD_FLOOR · Y), Y the size of the terms
                 * they sum (yardsticks.h), from the reference's forward in in.x[OUT] */
                const la_problem pf = problem_of((form)f, &in.p);
                const tu_backward bw = {in.x[Q], in.x[K], in.x[V], in.x[OUT], in.d_out};
                double yard[2];
                assert_true(
                    tu_gradient_yardsticks(la_kernel_get(kernel_of((form)f)), &pf, &bw, yard));
                assert_int_equal(backward_f64((form)f, &in.p, &in, &got), LA_OK);
                assert_int_equal(backward_f32((form)f, &in.p, &in, &got), LA_OK);
                for (int t = 0; t < 3; t++) {
                    const double floor = t < 2 ? TU_BWD_FLOOR * yard[t] : 0;
                    const double e64 = tu_floored_error_f64(got.g[t], ref.g[t], in.n[t], floor);
                    const double e32 = tu_floored_error_f32(got.g32[t], ref.g[t], in.n[t], floor);
                    const double tol32 = f == RECURRENT ? TOL_F32_RECURRENT : TOL_F32;
                    worst64 = e64 > worst64 ? e64 : worst64;
                    worst32 = e32 > worst32 ? e32 : worst32;
                    size_t w64, w32;
                    tu_rel_error_f64(got.g[t], ref.g[t], in.n[t], &w64);
                    tu_rel_error_f32(got.g32[t], ref.g[t], in.n[t], &w32);
                    tu_check_close(e64, TOL_F64, got.g[t][w64], ref.g[t][w64], w64, __FILE__,
                                   __LINE__, "f64 %s %s %s shape %zu", form_name[f],
                                   la_feature_map_name(fm), grad_name[t], si);
                    tu_check_close(e32, tol32, (double)got.g32[t][w32], ref.g[t][w32], w32,
                                   __FILE__, __LINE__, "f32 %s %s %s shape %zu", form_name[f],
                                   la_feature_map_name(fm), grad_name[t], si);
                }
                free_grads(&ref);
                free_grads(&got);
                free_inputs(&in);
            }
        }
    }
    printf("  worst relative error against the reference: float64 %.1e, float32 %.1e\n", worst64,
           worst32);
}

/* Inputs of ±1e3 (q and k scaled; elu+1 then is x + 1 or exp(x) ≈ 0, den is large): every
 * form still matches the reference, float64 to 1e-11 and float32 to 1e-5, with no refusal. */
static void large_inputs(void **state)
{
    (void)state;
    for (int fm = 0; fm < LA_FEATURE_COUNT; fm++) {
        for (int f = NONCAUSAL; f <= RECURRENT; f++) {
            inputs in;
            make_inputs(&in, "large_inputs", 2, 2, 37, 29, 8, 6);
            in.p.feature_map = (la_feature_map)fm;
            in.p.chunk = 8;
            for (int t = Q; t <= K; t++)
                for (size_t e = 0; e < in.n[t]; e++) {
                    in.x32[t][e] *= 1e3f;
                    in.x[t][e] = in.x32[t][e];
                }
            grads ref, got;
            make_grads(&ref, &in);
            make_grads(&got, &in);
            reference((form)f, &in.p, &in, &ref);
            assert_int_equal(backward_f64((form)f, &in.p, &in, &got), LA_OK);
            assert_int_equal(backward_f32((form)f, &in.p, &in, &got), LA_OK);
            for (int t = 0; t < 3; t++) {
                tu_assert_close_f64(got.g[t], ref.g[t], in.n[t], TOL_F64, "f64 %s %s %s ±1e3",
                                    form_name[f], la_feature_map_name(fm), grad_name[t]);
                tu_assert_close_f32(got.g32[t], ref.g[t], in.n[t], TOL_F32, "f32 %s %s %s ±1e3",
                                    form_name[f], la_feature_map_name(fm), grad_name[t]);
            }
            free_grads(&ref);
            free_grads(&got);
            free_inputs(&in);
        }
    }
}

/* A key a head never sees (beyond its key length, or j >= N when causal) gets zero rows,
 * and a head with key length 0 zeros everywhere: exactly, in every kernel. */
static void unseen_keys_get_zeros(void **state)
{
    (void)state;
    inputs in;
    make_inputs(&in, "unseen_keys_get_zeros", 2, 1, 6, 9, 3, 4);
    const int64_t lengths[2] = {0, 4};
    in.p.key_lengths = lengths;
    in.p.chunk = 4;
    grads g;
    make_grads(&g, &in);
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        assert_int_equal(backward_f64((form)f, &in.p, &in, &g), LA_OK);
        assert_int_equal(backward_f32((form)f, &in.p, &in, &g), LA_OK);
        for (size_t a = 0; a < 6 * 3; a++) /* head 0: d_q zero */
            assert_true(g.g[0][a] == 0 && g.g32[0][a] == 0);
        for (size_t j = 0; j < 9; j++) { /* head 0 sees no key */
            for (size_t a = 0; a < 3; a++)
                assert_true(g.g[1][j * 3 + a] == 0 && g.g32[1][j * 3 + a] == 0);
            for (size_t a = 0; a < 4; a++)
                assert_true(g.g[2][j * 4 + a] == 0 && g.g32[2][j * 4 + a] == 0);
        }
        for (size_t j = 4; j < 9; j++) { /* head 1: keys 4..8 hidden */
            for (size_t a = 0; a < 3; a++)
                assert_true(g.g[1][(9 + j) * 3 + a] == 0 && g.g32[1][(9 + j) * 3 + a] == 0);
            for (size_t a = 0; a < 4; a++)
                assert_true(g.g[2][(9 + j) * 4 + a] == 0 && g.g32[2][(9 + j) * 4 + a] == 0);
        }
    }
    free_grads(&g);
    free_inputs(&in);
}

/* ---------------------------------------------------------------- finite differences */

/* L = Σ out ∘ d_out with out = la_ref_linear_attention(q, k, v). */
static double loss(const la_problem *p, inputs *in, double *out)
{
    assert_int_equal(la_ref_linear_attention(p, in->x[Q], in->x[K], in->x[V], out), LA_OK);
    double sum = 0;
    for (size_t e = 0; e < in->n[OUT]; e++)
        sum += out[e] * in->d_out[e];
    return sum;
}

/* The reference backward against central differences of the reference forward, every φ,
 * both causal forms, tiny shapes with M != N, d_k != d_v and key lengths 0 and 1. */
static void reference_matches_finite_differences(void **state)
{
    (void)state;
    /* clang-format off */
    const shape tiny[] = {
        {1, 1, 1, 1, 1, 1, {-1}, 1, 16}, /* one key: eps 4 (shapes[] says why) */
        {2, 1, 3, 4, 3, 2, {4, 0}, 2, -1},
        {1, 2, 4, 3, 2, 3, {1}, 3, 0.5},
        {2, 1, 5, 2, 3, 2, {1, 2}, 2, 0.5},
        {1, 1, 4, 6, 3, 1, {-1}, 1, 0},
    };
    /* clang-format on */
    double worst = 0;
    for (size_t si = 0; si < sizeof tiny / sizeof tiny[0]; si++) {
        for (int fm = 0; fm < LA_FEATURE_COUNT; fm++) {
            for (int causal = 0; causal <= 1; causal++) {
                char label[64];
                snprintf(label, sizeof label, "finite_differences %zu %d %d", si, fm, causal);
                inputs in;
                problem_for(&tiny[si], label, &in);
                in.p.feature_map = (la_feature_map)fm;
                in.p.causal = causal;
                grads ref;
                make_grads(&ref, &in);
                reference(causal ? CHUNKED : NONCAUSAL, &in.p, &in, &ref);
                double *out = tu_f64(in.n[OUT]);
                for (int t = 0; t < 3; t++) {
                    double *fd = tu_f64(in.n[t]), *x = in.x[t];
                    for (size_t e = 0; e < in.n[t]; e++) {
                        const double x0 = x[e], h = FD_STEP * fmax(1.0, fabs(x0));
                        const double up = x[e] = x0 + h;
                        const double l_up = loss(&in.p, &in, out);
                        const double down = x[e] = x0 - h;
                        const double l_down = loss(&in.p, &in, out);
                        x[e] = x0;
                        fd[e] = (l_up - l_down) / (up - down);
                    }
                    const double err = tu_rel_error_f64(ref.g[t], fd, in.n[t], NULL);
                    worst = err > worst ? err : worst;
                    tu_assert_close_f64(ref.g[t], fd, in.n[t], TOL_FD,
                                        "reference %s vs central differences, %s %s shape %zu",
                                        grad_name[t], causal ? "causal" : "non-causal",
                                        la_feature_map_name(fm), si);
                    free(fd);
                }
                free(out);
                free_grads(&ref);
                free_inputs(&in);
            }
        }
    }
    printf("  worst relative error of the reference against central differences: %.1e\n", worst);
}

/* ---------------------------------------------------------------- forms against forms */

/* The chunked causal backward equals the token-by-token one for every chunk size. */
static void chunked_equals_recurrent(void **state)
{
    (void)state;
    const size_t full_sizes[][2] = {{150, 150}, {150, 140}, {97, 200}};
    /* the quick profile: N = M, N > M and N < M again, N still past the chunk of 128 */
    const size_t quick_sizes[][2] = {{130, 130}, {130, 120}, {60, 150}};
    const size_t(*sizes)[2] = tu_quick() ? quick_sizes : full_sizes;
    for (size_t s = 0; s < 3; s++) {
        const size_t N = sizes[s][0], M = sizes[s][1];
        inputs in;
        make_inputs(&in, "chunked_equals_recurrent", 2, 2, N, M, 16, 12);
        const int64_t lengths[2] = {(int64_t)M, (int64_t)M / 2 + 3};
        const size_t chunks[] = {1, 2, 3, 7, 64, 128, N, N + 9};
        grads rec, chk;
        make_grads(&rec, &in);
        make_grads(&chk, &in);
        for (int masked = 0; masked < 2; masked++) {
            in.p.key_lengths = masked ? lengths : NULL;
            for (int fm = 0; fm < LA_FEATURE_COUNT; fm++) {
                in.p.feature_map = (la_feature_map)fm;
                assert_int_equal(backward_f64(RECURRENT, &in.p, &in, &rec), LA_OK);
                for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
                    in.p.chunk = chunks[c];
                    assert_int_equal(backward_f64(CHUNKED, &in.p, &in, &chk), LA_OK);
                    assert_int_equal(backward_f32(CHUNKED, &in.p, &in, &chk), LA_OK);
                    for (int t = 0; t < 3; t++) {
                        tu_assert_close_f64(chk.g[t], rec.g[t], in.n[t], TOL_F64,
                                            "f64 %s N=%zu M=%zu chunk %zu masked %d %s",
                                            grad_name[t], N, M, chunks[c], masked,
                                            la_feature_map_name(fm));
                        tu_assert_close_f32(chk.g32[t], rec.g[t], in.n[t], TOL_F32,
                                            "f32 %s N=%zu M=%zu chunk %zu masked %d %s",
                                            grad_name[t], N, M, chunks[c], masked,
                                            la_feature_map_name(fm));
                    }
                }
            }
        }
        free_grads(&rec);
        free_grads(&chk);
        free_inputs(&in);
    }
}

/* With N = M and no key lengths, the gradient through the last causal query alone
 * (d_out zero elsewhere) equals the non-causal gradient through that query. */
static void last_query_is_noncausal(void **state)
{
    (void)state;
    const size_t N = 77, dk = 9, dv = 6;
    inputs in;
    make_inputs(&in, "last_query_is_noncausal", 1, 1, N, N, dk, dv);
    for (size_t e = 0; e < (N - 1) * dv; e++)
        in.d_out[e] = 0;
    in.p.chunk = 10;
    grads nc, c;
    make_grads(&nc, &in);
    make_grads(&c, &in);
    assert_int_equal(backward_f64(NONCAUSAL, &in.p, &in, &nc), LA_OK);
    for (int f = CHUNKED; f <= RECURRENT; f++) {
        assert_int_equal(backward_f64((form)f, &in.p, &in, &c), LA_OK);
        for (int t = 0; t < 3; t++)
            tu_assert_close_f64(c.g[t], nc.g[t], in.n[t], TOL_F64, "%s %s", form_name[f],
                                grad_name[t]);
    }
    free_grads(&nc);
    free_grads(&c);
    free_inputs(&in);
}

/* ---------------------------------------------------------------- threads */

/* 1, 2 and 3 threads give the same bits, across both schedules of each kernel: 1 head
 * (ordered tasks on 2 and 3 threads), 4 heads (whole heads per thread on 2, ordered tasks
 * over several heads on 3), a non-causal head over several pieces. */
static void threads_bitwise(void **state)
{
    (void)state;
    const size_t dims[][4] = {{1, 300, 300, 32}, {4, 150, 140, 32}, {1, 1100, 1300, 64}};
    const int threads = la_get_num_threads();
    for (size_t s = 0; s < 3; s++) {
        inputs in;
        make_inputs(&in, "threads_bitwise", 1, dims[s][0], dims[s][1], dims[s][2], 8, 5);
        in.p.chunk = dims[s][3];
        grads one, more;
        make_grads(&one, &in);
        make_grads(&more, &in);
        for (int f = NONCAUSAL; f <= RECURRENT; f++) {
            assert_int_equal(la_set_num_threads(1), LA_OK);
            assert_int_equal(backward_f64((form)f, &in.p, &in, &one), LA_OK);
            assert_int_equal(backward_f32((form)f, &in.p, &in, &one), LA_OK);
            for (int t = 2; t <= 3; t++) {
                assert_int_equal(la_set_num_threads(t), LA_OK);
                assert_int_equal(backward_f64((form)f, &in.p, &in, &more), LA_OK);
                assert_int_equal(backward_f32((form)f, &in.p, &in, &more), LA_OK);
                for (int g = 0; g < 3; g++) {
                    if (memcmp(one.g[g], more.g[g], in.n[g] * sizeof(double)) != 0 ||
                        memcmp(one.g32[g], more.g32[g], in.n[g] * sizeof(float)) != 0)
                        fail_msg("%s %s: %d threads differ from 1 (shape %zu, seed %llu)",
                                 form_name[f], grad_name[g], t, s, (unsigned long long)tu_seed());
                }
            }
        }
        free_grads(&one);
        free_grads(&more);
        free_inputs(&in);
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

/* ---------------------------------------------------------------- workspace */

static double backward_workspace(form f, size_t N, size_t d, la_dtype dtype)
{
    la_problem p;
    la_problem_init(&p, 2, 4, N, N, d, d);
    p.causal = f != NONCAUSAL;
    la_cost c;
    assert_int_equal(la_attention_backward_cost(kernel_of(f), &p, dtype, &c), LA_OK);
    return c.workspace_bytes;
}

/* The causal backward's workspace grows at most linearly in N (at 4N at most 4 times that
 * at N), and by at most 2·d elements per token and head, so never O(N·d²); the
 * non-causal one does not grow with N at all beyond a block. */
static void workspace_linear_in_n(void **state)
{
    (void)state;
    const size_t d = 64, heads = 8;
    for (int dtype = LA_FLOAT32; dtype <= LA_FLOAT64; dtype++) {
        const double elem = dtype == LA_FLOAT32 ? 4 : 8;
        for (size_t N = 256; N <= 16384; N *= 4) {
            for (int f = CHUNKED; f <= RECURRENT; f++) {
                const double at_n = backward_workspace((form)f, N, d, (la_dtype)dtype);
                const double at_4n = backward_workspace((form)f, 4 * N, d, (la_dtype)dtype);
                if (!(at_4n <= 4 * at_n))
                    fail_msg("%s: workspace %.0f bytes at N = %zu, %.0f at 4N: more than linear",
                             form_name[f], at_n, N, at_4n);
                const double per_token = (at_4n - at_n) / (3.0 * (double)N * (double)heads);
                if (!(per_token <= 2 * (double)d * elem))
                    fail_msg("%s: workspace grows by %.1f bytes per token and head, more than "
                             "2·d elements (%.0f)",
                             form_name[f], per_token, 2 * (double)d * elem);
                /* and far below one state per token: N·d² elements per head */
                assert_true(at_4n < 4 * (double)N * heads * (double)d * (double)d * elem / 16);
            }
            assert_true(backward_workspace(NONCAUSAL, N, d, (la_dtype)dtype) ==
                        backward_workspace(NONCAUSAL, 4 * N, d, (la_dtype)dtype));
        }
    }
}

/* Sentinel-filled gradients of both precisions. */
#define SENTINEL 0xA5
static void fill_sentinel(const inputs *in, grads *g)
{
    for (int t = 0; t < 3; t++) {
        memset(g->g[t], SENTINEL, in->n[t] * sizeof(double));
        memset(g->g32[t], SENTINEL, in->n[t] * sizeof(float));
    }
}

static bool untouched(const inputs *in, const grads *g)
{
    for (int t = 0; t < 3; t++) {
        const unsigned char *a = (const unsigned char *)g->g[t];
        const unsigned char *b = (const unsigned char *)g->g32[t];
        for (size_t e = 0; e < in->n[t] * sizeof(double); e++)
            if (a[e] != SENTINEL) return false;
        for (size_t e = 0; e < in->n[t] * sizeof(float); e++)
            if (b[e] != SENTINEL) return false;
    }
    return true;
}

/* The backward with the forward's output already in in->x[OUT], in->x32[OUT]. */
static la_status call(form f, bool f32, const la_problem *p, inputs *in, grads *g)
{
    if (f32) {
        if (f == RECURRENT)
            return la_linear_attention_recurrent_backward_f32(p, in->x32[Q], in->x32[K], in->x32[V],
                                                              in->x32[OUT], in->d_out32, g->g32[0],
                                                              g->g32[1], g->g32[2]);
        return la_linear_attention_backward_f32(p, in->x32[Q], in->x32[K], in->x32[V], in->x32[OUT],
                                                in->d_out32, g->g32[0], g->g32[1], g->g32[2]);
    }
    if (f == RECURRENT)
        return la_linear_attention_recurrent_backward_f64(
            p, in->x[Q], in->x[K], in->x[V], in->x[OUT], in->d_out, g->g[0], g->g[1], g->g[2]);
    return la_linear_attention_backward_f64(p, in->x[Q], in->x[K], in->x[V], in->x[OUT], in->d_out,
                                            g->g[0], g->g[1], g->g[2]);
}

/* At workspace_limit = the cost model's workspace_bytes the backward runs and gives the
 * same bits as unlimited; one byte under it returns LA_EBUDGET, outputs untouched. */
static void workspace_is_the_cost_model(void **state)
{
    (void)state;
    const int threads = la_get_num_threads();
    const size_t dims[][5] = {{1, 1, 1, 1, 1}, {2, 3, 40, 33, 7}, {1, 2, 300, 200, 64}};
    for (int t = 1; t <= 2; t++) {
        assert_int_equal(la_set_num_threads(t), LA_OK);
        for (size_t s = 0; s < 3; s++) {
            inputs in;
            make_inputs(&in, "workspace_is_the_cost_model", dims[s][0], dims[s][1], dims[s][2],
                        dims[s][3], 5, 3);
            in.p.chunk = dims[s][4];
            grads free_run, g;
            make_grads(&free_run, &in);
            make_grads(&g, &in);
            for (int f = NONCAUSAL; f <= RECURRENT; f++) {
                for (int f32 = 0; f32 <= 1; f32++) {
                    la_problem p = problem_of((form)f, &in.p);
                    assert_int_equal(f32 ? backward_f32((form)f, &in.p, &in, &free_run)
                                         : backward_f64((form)f, &in.p, &in, &free_run),
                                     LA_OK);
                    la_cost c;
                    assert_int_equal(la_attention_backward_cost(kernel_of((form)f), &p,
                                                                f32 ? LA_FLOAT32 : LA_FLOAT64, &c),
                                     LA_OK);
                    assert_true(c.workspace_bytes > 0);
                    p.workspace_limit = (size_t)c.workspace_bytes;
                    assert_int_equal(call((form)f, f32, &p, &in, &g), LA_OK);
                    for (int x = 0; x < 3; x++)
                        assert_memory_equal(f32 ? (void *)g.g32[x] : (void *)g.g[x],
                                            f32 ? (void *)free_run.g32[x] : (void *)free_run.g[x],
                                            in.n[x] * (f32 ? sizeof(float) : sizeof(double)));
                    p.workspace_limit--;
                    fill_sentinel(&in, &g);
                    assert_int_equal(call((form)f, f32, &p, &in, &g), LA_EBUDGET);
                    assert_true(untouched(&in, &g));
                }
            }
            free_grads(&free_run);
            free_grads(&g);
            free_inputs(&in);
        }
    }
    assert_int_equal(la_set_num_threads(threads), LA_OK);
}

/* ---------------------------------------------------------------- errors */

/* Every refused call returns its status and writes nothing. */
static void errors_leave_outputs_untouched(void **state)
{
    (void)state;
    inputs in;
    make_inputs(&in, "errors", 1, 2, 8, 6, 4, 3);
    grads g;
    make_grads(&g, &in);
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        for (int f32 = 0; f32 <= 1; f32++) {
            la_problem p = problem_of((form)f, &in.p);
            assert_int_equal(f32 ? backward_f32((form)f, &in.p, &in, &g)
                                 : backward_f64((form)f, &in.p, &in, &g),
                             LA_OK);
            /* NULL problem, each NULL pointer */
            fill_sentinel(&in, &g);
            if (f32) {
                float *save[3] = {g.g32[0], g.g32[1], g.g32[2]};
                assert_int_equal(la_linear_attention_backward_f32(
                                     NULL, in.x32[Q], in.x32[K], in.x32[V], in.x32[OUT], in.d_out32,
                                     save[0], save[1], save[2]),
                                 LA_EINVAL);
                assert_int_equal(la_linear_attention_backward_f32(&p, in.x32[Q], in.x32[K],
                                                                  in.x32[V], NULL, in.d_out32,
                                                                  save[0], save[1], save[2]),
                                 LA_EINVAL);
                assert_int_equal(la_linear_attention_recurrent_backward_f32(
                                     &p, in.x32[Q], in.x32[K], in.x32[V], in.x32[OUT], NULL,
                                     save[0], save[1], save[2]),
                                 LA_EINVAL);
                assert_int_equal(la_linear_attention_backward_f32(
                                     &p, in.x32[Q], in.x32[K], in.x32[V], in.x32[OUT], in.d_out32,
                                     save[0], NULL, save[2]),
                                 LA_EINVAL);
            } else {
                assert_int_equal(la_linear_attention_backward_f64(&p, NULL, in.x[K], in.x[V],
                                                                  in.x[OUT], in.d_out, g.g[0],
                                                                  g.g[1], g.g[2]),
                                 LA_EINVAL);
                assert_int_equal(
                    la_linear_attention_recurrent_backward_f64(
                        &p, in.x[Q], in.x[K], in.x[V], in.x[OUT], in.d_out, g.g[0], g.g[1], NULL),
                    LA_EINVAL);
            }
            assert_true(untouched(&in, &g));
            /* bad fields: φ, eps, a key length beyond M; sizes that overflow */
            la_problem bad = p;
            bad.feature_map = LA_FEATURE_COUNT;
            assert_int_equal(call((form)f, f32, &bad, &in, &g), LA_EINVAL);
            bad = p;
            bad.eps = -1;
            assert_int_equal(call((form)f, f32, &bad, &in, &g), LA_EINVAL);
            int64_t too_long[1] = {7};
            bad = p;
            bad.key_lengths = too_long;
            assert_int_equal(call((form)f, f32, &bad, &in, &g), LA_EINVAL);
            bad = p;
            bad.n_queries = SIZE_MAX / 4;
            assert_int_equal(call((form)f, f32, &bad, &in, &g), LA_EOVERFLOW);
            /* the budget */
            bad = p;
            bad.workspace_limit = 1;
            assert_int_equal(call((form)f, f32, &bad, &in, &g), LA_EBUDGET);
            assert_true(untouched(&in, &g));
        }
    }
    /* the recurrent form requires causal */
    la_problem nc = in.p;
    nc.causal = 0;
    assert_int_equal(call(RECURRENT, false, &nc, &in, &g), LA_EINVAL);
    assert_int_equal(call(RECURRENT, true, &nc, &in, &g), LA_EINVAL);
    assert_true(untouched(&in, &g));
    free_grads(&g);
    free_inputs(&in);
}

/* The range rule in float32: huge inputs, and a den so small that 1/den passes float32's
 * range, are refused (LA_ERANGE, nothing written); float64 computes them, finite; and a
 * float32 call that is not refused returns finite gradients. */
static void range_rule(void **state)
{
    (void)state;
    inputs in;
    make_inputs(&in, "range_rule", 1, 2, 9, 9, 4, 3);
    grads g;
    make_grads(&g, &in);
    in.p.chunk = 4;
    /* q huge: every form refuses in float32 (the non-causal forward scales such a query
     * and accepts it; its backward applies the bound) */
    for (size_t e = 0; e < in.n[Q]; e++) {
        in.x32[Q][e] *= 1e36f;
        in.x[Q][e] = in.x32[Q][e];
    }
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        la_problem p = problem_of((form)f, &in.p);
        assert_int_equal(
            la_attention(kernel_of((form)f), &p, LA_FLOAT64, in.x[Q], in.x[K], in.x[V], in.x[OUT]),
            LA_OK);
        tu_to_f32(in.x[OUT], in.x32[OUT], in.n[OUT]);
        fill_sentinel(&in, &g);
        assert_int_equal(call((form)f, true, &p, &in, &g), LA_ERANGE);
        assert_true(untouched(&in, &g));
        assert_int_equal(call((form)f, false, &p, &in, &g), LA_OK);
        for (int t = 0; t < 3; t++)
            assert_true(tu_all_finite_f64(g.g[t], in.n[t]));
    }
    /* relu, eps 0: query 0 of each head has one positive entry of 1e-37, the keys are all
     * positive, so den_0 = 1e-37·z_0: 1/den beyond the bound in float32 */
    tu_rng r = tu_rng_for("range_rule tiny den");
    for (size_t e = 0; e < in.n[Q]; e++)
        in.x[Q][e] = -fabs(tu_normal(&r));
    for (size_t e = 0; e < in.n[K]; e++)
        in.x[K][e] = fabs(in.x[K][e]) + 0.5;
    for (size_t hd = 0; hd < 2; hd++)
        in.x[Q][hd * 9 * 4] = 1e-37;
    tu_to_f32(in.x[Q], in.x32[Q], in.n[Q]);
    tu_to_f32(in.x[K], in.x32[K], in.n[K]);
    in.p.feature_map = LA_FEATURE_RELU;
    in.p.eps = 0;
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        la_problem p = problem_of((form)f, &in.p);
        assert_int_equal(la_attention(kernel_of((form)f), &p, LA_FLOAT32, in.x32[Q], in.x32[K],
                                      in.x32[V], in.x32[OUT]),
                         LA_OK);
        fill_sentinel(&in, &g);
        assert_int_equal(call((form)f, true, &p, &in, &g), LA_ERANGE);
        assert_true(untouched(&in, &g));
        /* with eps = 1e-6 the same inputs pass, finite */
        p.eps = 1e-6;
        assert_int_equal(la_attention(kernel_of((form)f), &p, LA_FLOAT32, in.x32[Q], in.x32[K],
                                      in.x32[V], in.x32[OUT]),
                         LA_OK);
        assert_int_equal(call((form)f, true, &p, &in, &g), LA_OK);
        for (int t = 0; t < 3; t++)
            assert_true(tu_all_finite_f32(g.g32[t], in.n[t]));
    }
    free_grads(&g);
    free_inputs(&in);
}

int main(void)
{
    tu_init("test_linear_backward");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(backward_matches_reference),
        cmocka_unit_test(large_inputs),
        cmocka_unit_test(unseen_keys_get_zeros),
        cmocka_unit_test(reference_matches_finite_differences),
        cmocka_unit_test(chunked_equals_recurrent),
        cmocka_unit_test(last_query_is_noncausal),
        cmocka_unit_test(threads_bitwise),
        cmocka_unit_test(workspace_linear_in_n),
        cmocka_unit_test(workspace_is_the_cost_model),
        cmocka_unit_test(errors_leave_outputs_untouched),
        cmocka_unit_test(range_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

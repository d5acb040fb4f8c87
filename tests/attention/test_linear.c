/* test_linear.c — what is particular to linear attention (the non-causal, chunked causal
 * and recurrent kernels, float32 and float64, elu+1 and relu): the forms against each
 * other, the step API (bit for bit against the recurrent kernel, save/restore, reset,
 * its errors), eps, the feature map's no-cancellation requirement, the workspace size
 * the kernels hold, and the kernels' thread schedules on larger problems. What every
 * kernel must hold — the float64 reference, causal masking, thread counts, error paths,
 * the workspace limit — is tests/attention/test_attention.c's, over every registry row. */
#include "../testutil.h"
#include "attention/kernels.h"

#include "attention/linear_internal.h"
#include "cpu/simd_avx512.h" /* la_avx512_usable: which float32 paths exist here */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_F32 1e-5
#define TOL_F64 1e-12

/* ---------------------------------------------------------------- inputs */

/* One problem's inputs: q (B,H,N,d_k), k (B,H,M,d_k), v (B,H,M,d_v), drawn N(0, 1) and
 * rounded to float32, so the float64 copies are exactly what the float32 kernels see. */
typedef struct {
    la_problem p;
    int64_t lengths[8];
    size_t nq, nk, nv, no; /* element counts of q, k, v, out */
    double *q, *k, *v;
    float *qf, *kf, *vf;
} inputs;

static void make_inputs(inputs *in, const char *label, size_t B, size_t H, size_t N, size_t M,
                        size_t dk, size_t dv)
{
    memset(in, 0, sizeof *in);
    la_problem_init(&in->p, B, H, N, M, dk, dv);
    in->nq = B * H * N * dk;
    in->nk = B * H * M * dk;
    in->nv = B * H * M * dv;
    in->no = B * H * N * dv;
    in->q = tu_f64(in->nq);
    in->k = tu_f64(in->nk);
    in->v = tu_f64(in->nv);
    in->qf = tu_f32(in->nq);
    in->kf = tu_f32(in->nk);
    in->vf = tu_f32(in->nv);
    tu_rng r = tu_rng_for(label);
    tu_fill_normal(&r, in->q, in->nq, 1.0);
    tu_fill_normal(&r, in->k, in->nk, 1.0);
    tu_fill_normal(&r, in->v, in->nv, 1.0);
    tu_to_f32(in->q, in->qf, in->nq);
    tu_to_f32(in->k, in->kf, in->nk);
    tu_to_f32(in->v, in->vf, in->nv);
    tu_to_f64(in->qf, in->q, in->nq);
    tu_to_f64(in->kf, in->k, in->nk);
    tu_to_f64(in->vf, in->v, in->nv);
}

static void free_inputs(inputs *in)
{
    free(in->q);
    free(in->k);
    free(in->v);
    free(in->qf);
    free(in->kf);
    free(in->vf);
}

/* ---------------------------------------------------------------- running */

typedef enum { NONCAUSAL, CHUNKED, RECURRENT } form;
static const char *form_name[] = {"non-causal", "chunked", "recurrent"};

static la_status run_f32(form f, const la_problem *p0, const inputs *in, float *out)
{
    la_problem p = *p0;
    p.causal = f != NONCAUSAL;
    if (f == RECURRENT) return la_linear_attention_recurrent_f32(&p, in->qf, in->kf, in->vf, out);
    return la_linear_attention_f32(&p, in->qf, in->kf, in->vf, out);
}

static la_status run_f64(form f, const la_problem *p0, const inputs *in, double *out)
{
    la_problem p = *p0;
    p.causal = f != NONCAUSAL;
    if (f == RECURRENT) return la_linear_attention_recurrent_f64(&p, in->q, in->k, in->v, out);
    return la_linear_attention_f64(&p, in->q, in->k, in->v, out);
}

/* ---------------------------------------------------------------- forms against forms */

/* The chunked causal form equals the token-by-token recurrence for every chunk size,
 * with and without key lengths, M = N and M != N. */
static void chunked_equals_recurrent(void **state)
{
    (void)state;
    const size_t full_shapes[][2] = {{150, 150}, {150, 140}, {97, 200}};
    /* the quick profile: N = M, N > M and N < M again, N still past the chunk of 128; and
     * each feature map once, with and without key lengths in turn (below) */
    const size_t quick_shapes[][2] = {{130, 130}, {130, 120}, {60, 150}};
    const size_t(*shapes)[2] = tu_quick() ? quick_shapes : full_shapes;
    for (size_t s = 0; s < 3; s++) {
        const size_t N = shapes[s][0], M = shapes[s][1];
        inputs in;
        make_inputs(&in, "chunked_equals_recurrent", 2, 2, N, M, 16, 12);
        const int64_t lengths[2] = {(int64_t)M, (int64_t)M / 2 + 3};
        const size_t chunks[] = {1, 2, 3, 7, 64, 128, N, N + 9};
        float *rec32 = tu_f32(in.no), *chk32 = tu_f32(in.no);
        double *rec64 = tu_f64(in.no), *chk64 = tu_f64(in.no), *rec64d = tu_f64(in.no);
        for (int masked = 0; masked < 2; masked++) {
            in.p.key_lengths = masked ? lengths : NULL;
            for (int fm = 0; fm < 2; fm++) {
                if (tu_quick() && (fm + masked) % 2) continue;
                in.p.feature_map = (la_feature_map)fm;
                assert_int_equal(run_f32(RECURRENT, &in.p, &in, rec32), LA_OK);
                assert_int_equal(run_f64(RECURRENT, &in.p, &in, rec64), LA_OK);
                tu_to_f64(rec32, rec64d, in.no);
                for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
                    in.p.chunk = chunks[c];
                    assert_int_equal(run_f64(CHUNKED, &in.p, &in, chk64), LA_OK);
                    tu_assert_close_f64(chk64, rec64, in.no, TOL_F64,
                                        "f64 N=%zu M=%zu chunk %zu masked %d %s", N, M, chunks[c],
                                        masked, la_feature_map_name(fm));
                    assert_int_equal(run_f32(CHUNKED, &in.p, &in, chk32), LA_OK);
                    tu_assert_close_f32(chk32, rec64d, in.no, TOL_F32,
                                        "f32 N=%zu M=%zu chunk %zu masked %d %s", N, M, chunks[c],
                                        masked, la_feature_map_name(fm));
                }
            }
        }
        free(rec32);
        free(chk32);
        free(rec64);
        free(chk64);
        free(rec64d);
        free_inputs(&in);
    }
}

/* With N = M and no key lengths the last causal query sees every key: its row equals
 * the non-causal one. */
static void last_causal_row_is_noncausal(void **state)
{
    (void)state;
    const size_t N = 300, dv = 24;
    inputs in;
    make_inputs(&in, "last_causal_row", 2, 2, N, N, 32, dv);
    float *nc32 = tu_f32(in.no), *c32 = tu_f32(in.no);
    double *nc64 = tu_f64(in.no), *c64 = tu_f64(in.no), *last = tu_f64(dv);
    for (size_t hd = 0; hd < 4; hd++) {
        for (int f = CHUNKED; f <= RECURRENT; f++) {
            size_t row = (hd * N + N - 1) * dv;
            assert_int_equal(run_f64(NONCAUSAL, &in.p, &in, nc64), LA_OK);
            assert_int_equal(run_f64((form)f, &in.p, &in, c64), LA_OK);
            tu_assert_close_f64(c64 + row, nc64 + row, dv, TOL_F64, "f64 %s head %zu", form_name[f],
                                hd);
            assert_int_equal(run_f32(NONCAUSAL, &in.p, &in, nc32), LA_OK);
            assert_int_equal(run_f32((form)f, &in.p, &in, c32), LA_OK);
            tu_to_f64(nc32 + row, last, dv);
            tu_assert_close_f32(c32 + row, last, dv, TOL_F32, "f32 %s head %zu", form_name[f], hd);
        }
    }
    free(nc32);
    free(c32);
    free(nc64);
    free(c64);
    free(last);
    free_inputs(&in);
}

/* ---------------------------------------------------------------- step API */

/* Token t of every head, gathered from (B·H, N, d) into (B·H, d). */
static void gather_f32(const float *x, size_t heads, size_t n, size_t d, size_t t, float *out)
{
    for (size_t hd = 0; hd < heads; hd++)
        memcpy(out + hd * d, x + (hd * n + t) * d, d * sizeof *x);
}
static void gather_f64(const double *x, size_t heads, size_t n, size_t d, size_t t, double *out)
{
    for (size_t hd = 0; hd < heads; hd++)
        memcpy(out + hd * d, x + (hd * n + t) * d, d * sizeof *x);
}

/* Steps tokens [t_begin, t_end) of the inputs through st, scattering y_t into out. */
static void step_range_f32(la_linear_state *st, const inputs *in, size_t t_begin, size_t t_end,
                           float *out)
{
    const size_t heads = in->p.batch * in->p.heads, N = in->p.n_queries;
    const size_t dk = in->p.d_k, dv = in->p.d_v;
    float *q = tu_f32(heads * dk), *k = tu_f32(heads * dk), *v = tu_f32(heads * dv);
    float *y = tu_f32(heads * dv);
    for (size_t t = t_begin; t < t_end; t++) {
        gather_f32(in->qf, heads, N, dk, t, q);
        gather_f32(in->kf, heads, N, dk, t, k);
        gather_f32(in->vf, heads, N, dv, t, v);
        assert_int_equal(la_linear_step(st, q, k, v, y), LA_OK);
        for (size_t hd = 0; hd < heads; hd++)
            memcpy(out + (hd * N + t) * dv, y + hd * dv, dv * sizeof *y);
    }
    free(q);
    free(k);
    free(v);
    free(y);
}

static void step_range_f64(la_linear_state *st, const inputs *in, size_t t_begin, size_t t_end,
                           double *out)
{
    const size_t heads = in->p.batch * in->p.heads, N = in->p.n_queries;
    const size_t dk = in->p.d_k, dv = in->p.d_v;
    double *q = tu_f64(heads * dk), *k = tu_f64(heads * dk), *v = tu_f64(heads * dv);
    double *y = tu_f64(heads * dv);
    for (size_t t = t_begin; t < t_end; t++) {
        gather_f64(in->q, heads, N, dk, t, q);
        gather_f64(in->k, heads, N, dk, t, k);
        gather_f64(in->v, heads, N, dv, t, v);
        assert_int_equal(la_linear_step(st, q, k, v, y), LA_OK);
        for (size_t hd = 0; hd < heads; hd++)
            memcpy(out + (hd * N + t) * dv, y + hd * dv, dv * sizeof *y);
    }
    free(q);
    free(k);
    free(v);
    free(y);
}

/* Stepping through a sequence gives the recurrent kernel's output bit for bit, and the
 * chunked kernel's within tolerance; reset starts over. */
static void step_reproduces_recurrent(void **state)
{
    (void)state;
    const size_t B = 2, H = 3, N = 70, dk = 19, dv = 11;
    inputs in;
    make_inputs(&in, "step_reproduces_recurrent", B, H, N, N, dk, dv);
    in.p.causal = 1;
    in.p.chunk = 16;
    float *rec32 = tu_f32(in.no), *chk32 = tu_f32(in.no), *st32 = tu_f32(in.no);
    double *rec64 = tu_f64(in.no), *chk64 = tu_f64(in.no), *st64 = tu_f64(in.no);
    double *wide = tu_f64(in.no);
    for (int fm = 0; fm < 2; fm++) {
        in.p.feature_map = (la_feature_map)fm;
        in.p.eps = fm ? 1e-3 : LA_DEFAULT_EPS;
        la_linear_state *s32 = NULL, *s64 = NULL;
        assert_int_equal(la_linear_state_create_phi(&s32, LA_FLOAT32, B * H, dk, dv, fm, in.p.eps),
                         LA_OK);
        assert_int_equal(la_linear_state_create_phi(&s64, LA_FLOAT64, B * H, dk, dv, fm, in.p.eps),
                         LA_OK);
        assert_int_equal(la_linear_state_position(s32), 0);
        assert_int_equal(run_f32(RECURRENT, &in.p, &in, rec32), LA_OK);
        assert_int_equal(run_f64(RECURRENT, &in.p, &in, rec64), LA_OK);
        assert_int_equal(run_f32(CHUNKED, &in.p, &in, chk32), LA_OK);
        assert_int_equal(run_f64(CHUNKED, &in.p, &in, chk64), LA_OK);
        for (int round = 0; round < 2; round++) { /* round 1: after a reset */
            step_range_f32(s32, &in, 0, N, st32);
            step_range_f64(s64, &in, 0, N, st64);
            assert_int_equal(la_linear_state_position(s32), N);
            assert_int_equal(la_linear_state_position(s64), N);
            assert_memory_equal(st32, rec32, in.no * sizeof(float));
            assert_memory_equal(st64, rec64, in.no * sizeof(double));
            tu_assert_close_f64(st64, chk64, in.no, TOL_F64, "step f64 vs chunked");
            tu_to_f64(chk32, wide, in.no);
            tu_assert_close_f32(st32, wide, in.no, TOL_F32, "step f32 vs chunked");
            la_linear_state_reset(s32);
            la_linear_state_reset(s64);
            assert_int_equal(la_linear_state_position(s32), 0);
        }
        la_linear_state_free(s32);
        la_linear_state_free(s64);
    }
    free(rec32);
    free(chk32);
    free(st32);
    free(rec64);
    free(chk64);
    free(st64);
    free(wide);
    free_inputs(&in);
}

/* With fewer heads than threads the recurrent kernel splits each head's d_v columns
 * among the threads (in multiples of 16), where la_linear_recurrent_split says so (forced
 * on and off here): one head of d_v = 40 runs as parts of 32 and 8 columns on 2 threads
 * (and on 4, which run on the cores), one task on 1. Every thread count, split or not,
 * gives the step API's bits, and the chunked kernel's output within tolerance, also with
 * the keys past a length left out. */
static void recurrent_column_parts(void **state)
{
    (void)state;
    const size_t B = 1, H = 1, N = 45, dk = 24, dv = 40;
    inputs in;
    make_inputs(&in, "recurrent_column_parts", B, H, N, N, dk, dv);
    const int64_t lengths[1] = {30};
    in.p.causal = 1;
    in.p.key_lengths = lengths;
    float *rec32 = tu_f32(in.no), *st32 = tu_f32(in.no), *chk32 = tu_f32(in.no);
    double *rec64 = tu_f64(in.no), *st64 = tu_f64(in.no), *wide = tu_f64(in.no);
    la_linear_state *s32 = NULL, *s64 = NULL;
    assert_int_equal(
        la_linear_state_create_phi(&s32, LA_FLOAT32, B * H, dk, dv, LA_FEATURE_ELU1, in.p.eps),
        LA_OK);
    assert_int_equal(
        la_linear_state_create_phi(&s64, LA_FLOAT64, B * H, dk, dv, LA_FEATURE_ELU1, in.p.eps),
        LA_OK);
    in.p.key_lengths = NULL; /* the step API has no lengths: compare the full-length runs */
    step_range_f32(s32, &in, 0, N, st32);
    step_range_f64(s64, &in, 0, N, st64);
    assert_int_equal(run_f32(CHUNKED, &in.p, &in, chk32), LA_OK);
    const int threads[] = {1, 2, 4, 2, 4};
    for (size_t i = 0; i < 5; i++) {
        la_linear_recurrent_split_force(i < 3); /* split, then whole heads */
        assert_int_equal(la_set_num_threads(threads[i]), LA_OK);
        in.p.key_lengths = NULL;
        assert_int_equal(run_f32(RECURRENT, &in.p, &in, rec32), LA_OK);
        assert_int_equal(run_f64(RECURRENT, &in.p, &in, rec64), LA_OK);
        assert_memory_equal(rec32, st32, in.no * sizeof(float));
        assert_memory_equal(rec64, st64, in.no * sizeof(double));
        tu_to_f64(chk32, wide, in.no);
        tu_assert_close_f32(rec32, wide, in.no, TOL_F32, "recurrent vs chunked, %d threads",
                            threads[i]);
        in.p.key_lengths = lengths; /* the keys past 30 left out */
        assert_int_equal(run_f32(CHUNKED, &in.p, &in, chk32), LA_OK);
        assert_int_equal(run_f32(RECURRENT, &in.p, &in, rec32), LA_OK);
        tu_to_f64(chk32, wide, in.no);
        tu_assert_close_f32(rec32, wide, in.no, TOL_F32, "with lengths, %d threads", threads[i]);
        in.p.key_lengths = NULL;
        assert_int_equal(run_f32(CHUNKED, &in.p, &in, chk32), LA_OK);
    }
    la_linear_recurrent_split_force(-1);
    assert_int_equal(la_set_num_threads(0), LA_OK);
    la_linear_state_free(s32);
    la_linear_state_free(s64);
    free(rec32);
    free(st32);
    free(chk32);
    free(rec64);
    free(st64);
    free(wide);
    free_inputs(&in);
}

/* Save mid-sequence, go on, restore, go on again: the same outputs bit for bit, also in
 * a fresh state restored from the buffer. */
static void save_restore_continues(void **state)
{
    (void)state;
    const size_t H = 3, N = 40, dk = 9, dv = 6, t_save = 23;
    inputs in;
    make_inputs(&in, "save_restore", 1, H, N, N, dk, dv);
    for (int dt = 0; dt < 2; dt++) {
        la_linear_state *st = NULL, *fresh = NULL;
        assert_int_equal(
            la_linear_state_create_phi(&st, (la_dtype)dt, H, dk, dv, LA_FEATURE_ELU1, 1e-6), LA_OK);
        assert_int_equal(
            la_linear_state_create_phi(&fresh, (la_dtype)dt, H, dk, dv, LA_FEATURE_ELU1, 1e-6),
            LA_OK);
        size_t size = la_linear_state_save_size(st);
        assert_true(size > (H * dk * dv + H * dk) * (dt ? 8 : 4));
        unsigned char *buf = tu_alloc(size);
        size_t bytes = in.no * (dt ? sizeof(double) : sizeof(float));
        unsigned char *first = tu_alloc(bytes), *second = tu_alloc(bytes), *third = tu_alloc(bytes);
        memset(first, 0, bytes);
        memset(second, 0, bytes);
        memset(third, 0, bytes);
        if (dt == LA_FLOAT32)
            step_range_f32(st, &in, 0, t_save, (float *)first);
        else
            step_range_f64(st, &in, 0, t_save, (double *)first);
        assert_int_equal(la_linear_state_save(st, buf, size), LA_OK);
        if (dt == LA_FLOAT32)
            step_range_f32(st, &in, t_save, N, (float *)first);
        else
            step_range_f64(st, &in, t_save, N, (double *)first);
        /* back to t_save in the same state, and in a fresh one */
        assert_int_equal(la_linear_state_restore(st, buf, size), LA_OK);
        assert_int_equal(la_linear_state_position(st), t_save);
        assert_int_equal(la_linear_state_restore(fresh, buf, size), LA_OK);
        assert_int_equal(la_linear_state_position(fresh), t_save);
        if (dt == LA_FLOAT32) {
            step_range_f32(st, &in, t_save, N, (float *)second);
            step_range_f32(fresh, &in, t_save, N, (float *)third);
        } else {
            step_range_f64(st, &in, t_save, N, (double *)second);
            step_range_f64(fresh, &in, t_save, N, (double *)third);
        }
        /* compare rows t_save..N-1 of every head */
        size_t es = dt ? sizeof(double) : sizeof(float);
        for (size_t hd = 0; hd < H; hd++) {
            size_t off = (hd * N + t_save) * dv * es, len = (N - t_save) * dv * es;
            assert_memory_equal(first + off, second + off, len);
            assert_memory_equal(first + off, third + off, len);
        }
        la_linear_state_free(st);
        la_linear_state_free(fresh);
        free(buf);
        free(first);
        free(second);
        free(third);
    }
    free_inputs(&in);
}

/* Restore refuses a buffer of another dtype, size, φ, eps or magic, a truncated one, and
 * leaves the state exactly as it was. */
static void restore_refuses_mismatch(void **state)
{
    (void)state;
    const size_t H = 2, dk = 4, dv = 3;
    la_linear_state *st = NULL;
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, H, dk, dv, LA_FEATURE_ELU1, 1e-6),
                     LA_OK);
    /* move it off zero */
    float q[8], k[8], v[6], y[6];
    tu_rng r = tu_rng_for("restore_refuses");
    for (int i = 0; i < 8; i++)
        q[i] = (float)tu_normal(&r), k[i] = (float)tu_normal(&r);
    for (int i = 0; i < 6; i++)
        v[i] = (float)tu_normal(&r);
    for (int t = 0; t < 3; t++)
        assert_int_equal(la_linear_step(st, q, k, v, y), LA_OK);
    size_t size = la_linear_state_save_size(st);
    unsigned char *before = tu_alloc(size), *after = tu_alloc(size);
    assert_int_equal(la_linear_state_save(st, before, size), LA_OK);

    struct {
        la_dtype dtype;
        size_t heads, dk, dv;
        la_feature_map fm;
        double eps;
    } others[] = {
        {LA_FLOAT64, H, dk, dv, LA_FEATURE_ELU1, 1e-6},
        {LA_FLOAT32, H + 1, dk, dv, LA_FEATURE_ELU1, 1e-6},
        {LA_FLOAT32, H, dk + 1, dv, LA_FEATURE_ELU1, 1e-6},
        {LA_FLOAT32, H, dk, dv + 1, LA_FEATURE_ELU1, 1e-6},
        {LA_FLOAT32, H, dk, dv, LA_FEATURE_RELU, 1e-6},
        {LA_FLOAT32, H, dk, dv, LA_FEATURE_ELU1, 1e-3},
        /* same total size as (H, dk, dv) with the sizes swapped: only the header tells */
        {LA_FLOAT32, H, dv, dk, LA_FEATURE_ELU1, 1e-6},
    };
    for (size_t o = 0; o < sizeof others / sizeof others[0]; o++) {
        la_linear_state *other = NULL;
        assert_int_equal(la_linear_state_create_phi(&other, others[o].dtype, others[o].heads,
                                                    others[o].dk, others[o].dv, others[o].fm,
                                                    others[o].eps),
                         LA_OK);
        size_t osize = la_linear_state_save_size(other);
        unsigned char *obuf = tu_alloc(osize);
        assert_int_equal(la_linear_state_save(other, obuf, osize), LA_OK);
        assert_int_equal(la_linear_state_restore(st, obuf, osize), LA_EINVAL);
        assert_int_equal(la_linear_state_position(st), 3);
        assert_int_equal(la_linear_state_save(st, after, size), LA_OK);
        assert_memory_equal(before, after, size);
        free(obuf);
        la_linear_state_free(other);
    }
    /* a bad magic, a truncated buffer, a longer one, NULL */
    unsigned char *bad = tu_alloc(size + 1);
    memcpy(bad, before, size);
    bad[0] ^= 0x5a;
    assert_int_equal(la_linear_state_restore(st, bad, size), LA_EINVAL);
    bad[0] ^= 0x5a;
    assert_int_equal(la_linear_state_restore(st, bad, size - 1), LA_EINVAL);
    assert_int_equal(la_linear_state_restore(st, bad, size + 1), LA_EINVAL);
    assert_int_equal(la_linear_state_restore(st, NULL, size), LA_EINVAL);
    assert_int_equal(la_linear_state_restore(NULL, bad, size), LA_EINVAL);
    assert_int_equal(la_linear_state_save(st, after, size - 1), LA_EINVAL);
    assert_int_equal(la_linear_state_save(st, after, size), LA_OK);
    assert_memory_equal(before, after, size);
    /* and the good buffer is accepted */
    la_linear_state_reset(st);
    assert_int_equal(la_linear_state_position(st), 0);
    assert_int_equal(la_linear_state_restore(st, bad, size), LA_OK);
    assert_int_equal(la_linear_state_position(st), 3);
    free(bad);
    free(before);
    free(after);
    la_linear_state_free(st);
}

/* ---------------------------------------------------------------- φ and eps */

/* elu+1 far below zero: exp(x), positive, never elu(x) + 1 = 0 (no cancellation). */
static void elu_no_cancellation(void **state)
{
    (void)state;
    const float x[] = {-20.0f, -50.0f, -100.0f, -1.0f, -0.0f, 0.0f, 2.5f};
    float y[7];
    la_feature_map_f32(LA_FEATURE_ELU1, x, y, 7);
    for (int i = 0; i < 3; i++) {
        assert_true(y[i] > 0);
        assert_true(y[i] == expf(x[i]));
    }
    assert_true(y[3] == expf(-1.0f));
    assert_true(y[4] == 1.0f && y[5] == 1.0f && y[6] == 3.5f);
    const double xd[] = {-20, -100, -700, 0.5};
    double yd[4];
    la_feature_map_f64(LA_FEATURE_ELU1, xd, yd, 4);
    for (int i = 0; i < 3; i++)
        assert_true(yd[i] > 0 && yd[i] == exp(xd[i]));
    assert_true(yd[3] == 1.5);
    /* the float32 exp over a sweep of [-104, 0]: within one ulp of expf */
    float xs[4096], ys[4096];
    for (int i = 0; i < 4096; i++)
        xs[i] = -104.0f * (float)i / 4095.0f;
    la_feature_map_f32(LA_FEATURE_ELU1, xs, ys, 4096);
    for (int i = 0; i < 4096; i++) {
        float e = expf(xs[i]);
        assert_true(ys[i] == e || ys[i] == nextafterf(e, 0) || ys[i] == nextafterf(e, 1));
    }
    /* through a kernel: one key at k = -100, q = 0 (φ = 1), eps = 0: y = v exactly when
     * φ(k) > 0, NaN (0/0) if it had cancelled */
    la_problem p;
    la_problem_init(&p, 1, 1, 1, 1, 1, 1);
    p.eps = 0;
    float q = 0, k = -100, v = 3, out = 0;
    assert_int_equal(la_linear_attention_f32(&p, &q, &k, &v, &out), LA_OK);
    assert_true(out == 3.0f);
    p.causal = 1;
    assert_int_equal(la_linear_attention_recurrent_f32(&p, &q, &k, &v, &out), LA_OK);
    assert_true(out == 3.0f);
}

/* eps: with relu, a query orthogonal to every key has den = 0 and num = 0, so y = 0;
 * and eps enters as y = num / (den + eps). */
static void eps_honoured(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 1, 1, 2, 2, 2, 1);
    p.feature_map = LA_FEATURE_RELU;
    /* φ(q) = (1, 0) and (2, 0); φ(k) = (0, 1.5), (0, 4) */
    const double q[] = {1, -3, 2, -1}, k[] = {-1, 1.5, -2, 4}, v[] = {5, -7};
    float qf[4], kf[4], vf[2], yf[2];
    double y[2];
    tu_to_f32(q, qf, 4);
    tu_to_f32(k, kf, 4);
    tu_to_f32(v, vf, 2);
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        la_problem pf = p;
        pf.causal = f != NONCAUSAL;
        la_status s64 = f == RECURRENT ? la_linear_attention_recurrent_f64(&pf, q, k, v, y)
                                       : la_linear_attention_f64(&pf, q, k, v, y);
        la_status s32 = f == RECURRENT ? la_linear_attention_recurrent_f32(&pf, qf, kf, vf, yf)
                                       : la_linear_attention_f32(&pf, qf, kf, vf, yf);
        assert_int_equal(s64, LA_OK);
        assert_int_equal(s32, LA_OK);
        assert_true(y[0] == 0 && y[1] == 0 && yf[0] == 0 && yf[1] == 0);
    }
    /* d_k = 1, relu: q = (1, 2), k = (1, 2), v = (3, 5).
     * non-causal: y_i = q_i (1·3 + 2·5) / (q_i (1 + 2) + eps) = 13 q_i / (3 q_i + eps);
     * causal: y_0 = 3 q_0 / (q_0 + eps), y_1 as non-causal. */
    la_problem_init(&p, 1, 1, 2, 2, 1, 1);
    p.feature_map = LA_FEATURE_RELU;
    const double q1[] = {1, 2}, k1[] = {1, 2}, v1[] = {3, 5};
    const float q1f[] = {1, 2}, k1f[] = {1, 2}, v1f[] = {3, 5};
    const double epss[] = {0, 0.5, 1, 3};
    for (int e = 0; e < 4; e++) {
        p.eps = epss[e];
        for (int f = NONCAUSAL; f <= RECURRENT; f++) {
            la_problem pf = p;
            pf.causal = f != NONCAUSAL;
            double want[2] = {pf.causal ? 3 * 1 / (1 + p.eps) : 13 * 1 / (3 + p.eps),
                              13 * 2 / (6 + p.eps)};
            la_status s64 = f == RECURRENT ? la_linear_attention_recurrent_f64(&pf, q1, k1, v1, y)
                                           : la_linear_attention_f64(&pf, q1, k1, v1, y);
            la_status s32 = f == RECURRENT
                                ? la_linear_attention_recurrent_f32(&pf, q1f, k1f, v1f, yf)
                                : la_linear_attention_f32(&pf, q1f, k1f, v1f, yf);
            assert_int_equal(s64, LA_OK);
            assert_int_equal(s32, LA_OK);
            tu_assert_close_f64(y, want, 2, 1e-15, "eps %g %s", p.eps, form_name[f]);
            tu_assert_close_f32(yf, want, 2, 1e-6, "eps %g %s", p.eps, form_name[f]);
        }
    }
}

/* ---------------------------------------------------------------- the step API's errors */

#define SENTINEL 12345.0f

/* Every error of the step API returns its status, writes no y_t and counts no step; the
 * NULL-tolerant helpers accept NULL. (The kernels' errors are test_attention.c's.) */
static void step_api_errors(void **state)
{
    (void)state;
    la_linear_state *st = NULL;
    assert_int_equal(la_linear_state_create_phi(NULL, LA_FLOAT32, 1, 2, 2, LA_FEATURE_ELU1, 0),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, (la_dtype)2, 1, 2, 2, LA_FEATURE_ELU1, 0),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 0, 2, 2, LA_FEATURE_ELU1, 0),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 1, 0, 2, LA_FEATURE_ELU1, 0),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 1, 2, 0, LA_FEATURE_ELU1, 0),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 1, 2, 2, (la_feature_map)9, 0),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 1, 2, 2, LA_FEATURE_ELU1, -1),
                     LA_EINVAL);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 1, 2, 2, LA_FEATURE_ELU1, NAN),
                     LA_EINVAL);
    assert_int_equal(
        la_linear_state_create_phi(&st, LA_FLOAT32, SIZE_MAX / 2, 2, 2, LA_FEATURE_ELU1, 0),
        LA_EOVERFLOW);
    assert_null(st);
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT32, 1, 2, 2, LA_FEATURE_ELU1, 0),
                     LA_OK);
    float qf[2] = {1, 2}, kf[2] = {3, 4}, vf[2] = {5, 6}, yf[2] = {SENTINEL, SENTINEL};
    double qd[2] = {1, 2}, kd[2] = {3, 4}, vd[2] = {5, 6}, yd[2] = {SENTINEL, SENTINEL};
    assert_int_equal(la_linear_step(NULL, qf, kf, vf, yf), LA_EINVAL);
    assert_int_equal(la_linear_step(st, NULL, kf, vf, yf), LA_EINVAL);
    assert_int_equal(la_linear_step(st, qf, NULL, vf, yf), LA_EINVAL);
    assert_int_equal(la_linear_step(st, qf, kf, NULL, yf), LA_EINVAL);
    assert_int_equal(la_linear_step(st, qf, kf, vf, NULL), LA_EINVAL);
    assert_true(yf[0] == SENTINEL && yf[1] == SENTINEL);
    assert_int_equal(la_linear_state_position(st), 0); /* no failed step counted */
    assert_int_equal(la_linear_step(st, qf, kf, vf, yf), LA_OK);
    assert_int_equal(la_linear_state_position(st), 1);
    la_linear_state_free(st);
    st = NULL;
    assert_int_equal(la_linear_state_create_phi(&st, LA_FLOAT64, 1, 2, 2, LA_FEATURE_RELU, 0),
                     LA_OK);
    assert_int_equal(la_linear_step(st, qd, kd, vd, yd), LA_OK);
    la_linear_state_free(st);
    /* NULL-tolerant helpers */
    la_linear_state_free(NULL);
    la_linear_state_reset(NULL);
    assert_int_equal(la_linear_state_position(NULL), 0);
    assert_int_equal(la_linear_state_save_size(NULL), 0);
    assert_int_equal(la_linear_state_save(NULL, yd, sizeof yd), LA_EINVAL);
}

/* ---------------------------------------------------------------- workspace */

/* la_linear_workspace_bytes, which the kernels hold against p->workspace_limit, is what
 * la_attention_cost reports (test_attention.c holds every kernel to the cost model), for
 * every form and precision; each thread's part and the shared part are whole 128-byte
 * line pairs (LA_SCRATCH_LINE), so the total is too; float64 twice float32 in the causal
 * forms but for that rounding (each of the at most threads + 1 parts rounds up by less
 * than 128 bytes), and in the non-causal one 8·64·d_k bytes a thread fewer besides (its
 * φ block has 64 rows of doubles against 128 of floats); and it refuses a non-causal
 * recurrent problem and a NULL result. */
static void workspace_bytes_is_the_cost_model(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, 2, 2, 300, 280, 15, 7); /* odd sizes: parts of no whole line */
    p.chunk = 32;
    /* two threads, fewer than any form's tasks, so each layout runs on both */
    assert_int_equal(la_set_num_threads(2), LA_OK);
    const size_t threads = 2, slack = (threads + 1) * 128;
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        p.causal = f != NONCAUSAL;
        la_kernel kernel = f == RECURRENT ? LA_KERNEL_LINEAR_RECURRENT : LA_KERNEL_LINEAR;
        size_t b32 = 0, b64 = 0;
        const bool recurrent = f == RECURRENT;
        assert_int_equal(la_linear_workspace_bytes(&p, recurrent, sizeof(float), &b32), LA_OK);
        assert_int_equal(la_linear_workspace_bytes(&p, recurrent, sizeof(double), &b64), LA_OK);
        assert_true(b32 > 0 && b32 % 128 == 0 && b64 % 128 == 0 && b64 <= 2 * b32);
        /* the φ blocks' difference, a thread's (its rows: 128 floats, 64 doubles) */
        const size_t phi = f == NONCAUSAL ? threads * 8 * 64 * p.d_k : 0;
        assert_true(2 * b32 - b64 >= phi && 2 * b32 - b64 - phi < slack);
        la_cost c32, c64;
        assert_int_equal(la_attention_cost(kernel, &p, LA_FLOAT32, &c32), LA_OK);
        assert_int_equal(la_attention_cost(kernel, &p, LA_FLOAT64, &c64), LA_OK);
        assert_true(c32.workspace_bytes == (double)b32 && c64.workspace_bytes == (double)b64);
    }
    p.causal = 0;
    size_t bytes;
    assert_int_equal(la_linear_workspace_bytes(&p, true, 4, &bytes), LA_EINVAL);
    assert_int_equal(la_linear_workspace_bytes(&p, false, 4, NULL), LA_EINVAL);
    assert_int_equal(la_set_num_threads(0), LA_OK);
}

/* ---------------------------------------------------------------- threads */

/* One thread, two, three and four give the same bits for every form and precision
 * (several heads, several query blocks of the non-causal apply phase, two key pieces,
 * key lengths), on a problem larger than test_attention.c's shapes: 6 heads on 4
 * threads run the ordered schedule, on 2 and 3 whole heads per thread. */
static void thread_count_determinism(void **state)
{
    (void)state;
    inputs in;
    /* the quick profile: 260 queries, still three query blocks of 128 */
    make_inputs(&in, "threads", 2, 3, tu_quick() ? 260 : 600, 550, 32, 24);
    const int64_t lengths[2] = {550, 301};
    in.p.key_lengths = lengths;
    in.p.chunk = 48;
    float *a32 = tu_f32(in.no), *b32 = tu_f32(in.no);
    double *a64 = tu_f64(in.no), *b64 = tu_f64(in.no);
    for (int f = NONCAUSAL; f <= RECURRENT; f++) {
        assert_int_equal(la_set_num_threads(1), LA_OK);
        assert_int_equal(run_f32((form)f, &in.p, &in, a32), LA_OK);
        assert_int_equal(run_f64((form)f, &in.p, &in, a64), LA_OK);
        assert_int_equal(la_set_num_threads(2), LA_OK);
        assert_int_equal(run_f32((form)f, &in.p, &in, b32), LA_OK);
        assert_int_equal(run_f64((form)f, &in.p, &in, b64), LA_OK);
        assert_memory_equal(a32, b32, in.no * sizeof(float));
        assert_memory_equal(a64, b64, in.no * sizeof(double));
        assert_int_equal(la_set_num_threads(3), LA_OK); /* more threads than cores */
        assert_int_equal(run_f32((form)f, &in.p, &in, b32), LA_OK);
        assert_memory_equal(a32, b32, in.no * sizeof(float));
        /* 6 heads on 4 threads: the chunked and non-causal kernels' other schedule
         * (ordered tasks within heads, not whole heads per thread) */
        assert_int_equal(la_set_num_threads(4), LA_OK);
        assert_int_equal(run_f32((form)f, &in.p, &in, b32), LA_OK);
        assert_int_equal(run_f64((form)f, &in.p, &in, b64), LA_OK);
        assert_memory_equal(a32, b32, in.no * sizeof(float));
        assert_memory_equal(a64, b64, in.no * sizeof(double));
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
    free(a32);
    free(b32);
    free(a64);
    free(b64);
    free_inputs(&in);
}

/* The float32 small products' tile shapes (8x32, 12x32, 6x64, 4x64: la_gemm_small_shapes)
 * are one FMA chain per element each, so the non-causal and chunked kernels give the
 * same bits on every shape; d_k = 64, d_v = 72 reaches the wide shapes' strips and the
 * columns past them. */
static void same_bits_on_every_tile_shape(void **state)
{
    (void)state;
    if (!la_avx512_usable()) {
        printf("  (no AVX-512 tiles here)\n");
        return;
    }
    inputs in;
    make_inputs(&in, "tile_shapes", 1, 2, 300, 290, 64, 72);
    in.p.chunk = 40;
    const char *names[8];
    const int shapes = la_gemm_small_shapes(names, 8);
    float *first = tu_f32(in.no), *y = tu_f32(in.no);
    for (int f = NONCAUSAL; f <= CHUNKED; f++)
        for (int s = 0; s < shapes; s++) {
            la_gemm_small_use_shape(s);
            assert_int_equal(run_f32((form)f, &in.p, &in, s == 0 ? first : y), LA_OK);
            if (s > 0 && memcmp(first, y, in.no * sizeof(float)) != 0)
                fail_msg("form %d: tile %s differs from tile %s", f, names[s], names[0]);
        }
    la_gemm_small_use_shape(-1);
    free(first);
    free(y);
    free_inputs(&in);
}

/* One head (B = H = 1) split within itself: the chunked form over many chunks equals
 * the recurrence, the non-causal form over many key pieces (M = 5000: ten pieces of 512
 * keys, with key lengths cutting the last pieces short or empty) equals the oracle, and
 * both give the same bits for 1, 2 and 3 threads. */
static void one_head_many_pieces(void **state)
{
    (void)state;
    /* causal: N = 1100, chunk 8: 138 chunks (the quick profile: N = 300, 38 chunks) */
    const size_t n_causal = tu_quick() ? 300 : 1100;
    inputs in;
    make_inputs(&in, "one_head_chunks", 1, 1, n_causal, n_causal, 16, 12);
    in.p.chunk = 8;
    float *rec32 = tu_f32(in.no), *a32 = tu_f32(in.no), *b32 = tu_f32(in.no);
    double *rec64 = tu_f64(in.no), *rec64d = tu_f64(in.no), *a64 = tu_f64(in.no);
    double *b64 = tu_f64(in.no);
    assert_int_equal(run_f32(RECURRENT, &in.p, &in, rec32), LA_OK);
    assert_int_equal(run_f64(RECURRENT, &in.p, &in, rec64), LA_OK);
    tu_to_f64(rec32, rec64d, in.no);
    for (int t = 1; t <= 3; t++) {
        assert_int_equal(la_set_num_threads(t), LA_OK);
        float *y32 = t == 1 ? a32 : b32;
        double *y64 = t == 1 ? a64 : b64;
        assert_int_equal(run_f32(CHUNKED, &in.p, &in, y32), LA_OK);
        assert_int_equal(run_f64(CHUNKED, &in.p, &in, y64), LA_OK);
        tu_assert_close_f32(y32, rec64d, in.no, TOL_F32, "f32 chunked, %d threads", t);
        tu_assert_close_f64(y64, rec64, in.no, TOL_F64, "f64 chunked, %d threads", t);
        if (t > 1) {
            assert_memory_equal(a32, b32, in.no * sizeof(float));
            assert_memory_equal(a64, b64, in.no * sizeof(double));
        }
    }
    free(rec32);
    free(a32);
    free(b32);
    free(rec64);
    free(rec64d);
    free(a64);
    free(b64);
    free_inputs(&in);

    /* non-causal: M = 5000 keys, pieces [0, 512), [512, 1024), …, [4608, 5000); the quick
     * profile: 130 queries (two blocks of 128) over M = 1600 keys, pieces [0, 512), …,
     * [1536, 1600), key lengths cutting the third and the first piece short, the rest empty */
    make_inputs(&in, "one_head_pieces", 1, 1, tu_quick() ? 130 : 300, tu_quick() ? 1600 : 5000, 16,
                12);
    double *ref = tu_f64(in.no);
    a32 = tu_f32(in.no);
    b32 = tu_f32(in.no);
    a64 = tu_f64(in.no);
    b64 = tu_f64(in.no);
    const int64_t full_lengths[] = {5000, 4100, 1000}, quick_lengths[] = {1600, 1100, 500};
    const int64_t *lengths = tu_quick() ? quick_lengths : full_lengths; /* plus none */
    for (int l = 0; l < 4; l++) {
        in.p.key_lengths = l < 3 ? &lengths[l] : NULL;
        assert_int_equal(la_ref_linear_attention(&in.p, in.q, in.k, in.v, ref), LA_OK);
        for (int t = 1; t <= 3; t++) {
            assert_int_equal(la_set_num_threads(t), LA_OK);
            float *y32 = t == 1 ? a32 : b32;
            double *y64 = t == 1 ? a64 : b64;
            assert_int_equal(run_f32(NONCAUSAL, &in.p, &in, y32), LA_OK);
            assert_int_equal(run_f64(NONCAUSAL, &in.p, &in, y64), LA_OK);
            tu_assert_close_f32(y32, ref, in.no, TOL_F32, "f32 non-causal, lengths %d, %d threads",
                                l, t);
            tu_assert_close_f64(y64, ref, in.no, TOL_F64, "f64 non-causal, lengths %d, %d threads",
                                l, t);
            if (t > 1) {
                assert_memory_equal(a32, b32, in.no * sizeof(float));
                assert_memory_equal(a64, b64, in.no * sizeof(double));
            }
        }
    }
    assert_int_equal(la_set_num_threads(0), LA_OK);
    free(ref);
    free(a32);
    free(b32);
    free(a64);
    free(b64);
    free_inputs(&in);
}

/* Wide heads, non-causal, against the oracle: d_k = 64 (the key sums' whole 64-column
 * pass), 72 (a pass and 8 columns past it) and 130 (two passes and 2 columns), float32
 * and float64, keys past one block of 128, with and without a key length. */
static void noncausal_wide_heads(void **state)
{
    (void)state;
    const size_t dks[] = {64, 72, 130};
    for (size_t s = 0; s < sizeof dks / sizeof dks[0]; s++) {
        inputs in;
        make_inputs(&in, "noncausal_wide_heads", 2, 1, 70, 300, dks[s], 24);
        const int64_t lengths[2] = {300, 171};
        double *ref = tu_f64(in.no), *y64 = tu_f64(in.no);
        float *y32 = tu_f32(in.no);
        for (int l = 0; l < 2; l++) {
            in.p.key_lengths = l ? lengths : NULL;
            assert_int_equal(la_ref_linear_attention(&in.p, in.q, in.k, in.v, ref), LA_OK);
            assert_int_equal(run_f32(NONCAUSAL, &in.p, &in, y32), LA_OK);
            assert_int_equal(run_f64(NONCAUSAL, &in.p, &in, y64), LA_OK);
            tu_assert_close_f32(y32, ref, in.no, TOL_F32, "f32 non-causal d_k=%zu lengths %d",
                                dks[s], l);
            tu_assert_close_f64(y64, ref, in.no, TOL_F64, "f64 non-causal d_k=%zu lengths %d",
                                dks[s], l);
        }
        free(ref), free(y64), free(y32);
        free_inputs(&in);
    }
}

int main(void)
{
    tu_init("test_linear");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chunked_equals_recurrent),
        cmocka_unit_test(last_causal_row_is_noncausal),
        cmocka_unit_test(step_reproduces_recurrent),
        cmocka_unit_test(recurrent_column_parts),
        cmocka_unit_test(save_restore_continues),
        cmocka_unit_test(restore_refuses_mismatch),
        cmocka_unit_test(elu_no_cancellation),
        cmocka_unit_test(eps_honoured),
        cmocka_unit_test(step_api_errors),
        cmocka_unit_test(workspace_bytes_is_the_cost_model),
        cmocka_unit_test(thread_count_determinism),
        cmocka_unit_test(one_head_many_pieces),
        cmocka_unit_test(noncausal_wide_heads),
        cmocka_unit_test(same_bits_on_every_tile_shape),
    };
    /* float32 φ and the linear kernels' block products have two paths: AVX-512 (where
     * the CPU has it) and portable (BLIS); every test runs against both. */
    int failed = cmocka_run_group_tests_name("default kernels", tests, NULL, NULL);
    if (la_avx512_usable()) {
        la_avx512_enable(false);
        failed += cmocka_run_group_tests_name("portable float32 paths", tests, NULL, NULL);
        la_avx512_enable(true);
    } else {
        printf("(the AVX-512 paths do not run here, %s: the portable float32 paths only)\n",
               la_config().simd);
    }
    return failed != 0;
}

/* test_strides.c — the generic entry points on real layouts (la_problem's strides): every
 * registry row, in both element types, run on q, k, v, out laid out as a KV cache
 * (B, H, T, d) holding M < T keys and as PyTorch's (B, N, H, d), must give bitwise the
 * output of the contiguous call (the same kernel on the same values), leave the layout's
 * gaps untouched, and do the same for the log-sum-exps, the backward passes and the
 * attention matrix. Layouts whose rows overlap, and a budget the copies pass, are refused
 * with the output untouched. Also: la_kernel_draw gives each row's own draw. */
#include "../testutil.h"
#include "attention/kernels.h"
#include "core/internal.h" /* la_avx512_enable */

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, H = 3, N = 5, M = 7, T = 10, DK = 4, DV = 3 };
#define SENTINEL 0xA5

/* The variants' sizes within M: one block of each kind, chained (each row reads its own). */
static const la_relative_params relative = {{LA_PARAMS_RELATIVE, NULL}, 2, NULL, NULL, 7};
static const la_score_params score = {{LA_PARAMS_SCORE, &relative.head}, 4, NULL, NULL, 7};
static const la_favor_params favor = {{LA_PARAMS_FAVOR, &score.head}, 8, 7, NULL};
static const la_linformer_params linformer = {{LA_PARAMS_LINFORMER, &favor.head}, 3, NULL, NULL, 7};
static const la_local_params local = {{LA_PARAMS_LOCAL, &linformer.head}, 2};

/* One small problem the row's causal rule accepts, its variants' sizes within M. */
static la_problem small_problem(const la_kernel_info *info)
{
    la_problem p;
    la_problem_init(&p, B, H, N, M, DK, DV);
    p.causal = info->causal == LA_CAUSAL_REQUIRED;
    p.params = &local.head;
    return p;
}

/* The layouts under test, per array of `rows` rows of d elements (rows padded past d: the
 * in-place test's only). */
typedef enum { LAYOUT_KV_CACHE, LAYOUT_TORCH, LAYOUT_COUNT, LAYOUT_PADDED = LAYOUT_COUNT } layout;
static const char *const layout_name[] = {"KV cache (B, H, T, d)", "PyTorch (B, N, H, d)",
                                          "rows padded to d + 3"};

/* The strides of an array of `rows` rows of d, and its elements in that layout. The KV
 * cache holds keys and values (rows = M) in T-row slots; queries and outputs stay
 * contiguous there. */
static la_strides strides_of(layout l, int is_key_side, size_t rows, size_t d, size_t *elements)
{
    if (l == LAYOUT_KV_CACHE && is_key_side) {
        *elements = (size_t)B * H * T * d;
        return (la_strides){(size_t)H * T * d, (size_t)T * d, d};
    }
    if (l == LAYOUT_TORCH) {
        *elements = (size_t)B * rows * H * d;
        return (la_strides){rows * H * d, d, H * d};
    }
    *elements = (size_t)B * H * rows * d;
    return (la_strides){0, 0, 0};
}

/* Copies a contiguous (B, H, rows, d) array into the layout s (elements of es bytes):
 * the test's own walk, independent of the library's. */
static void scatter(const void *src, void *dst, la_strides s, size_t rows, size_t d, size_t es)
{
    if (s.batch == 0 && s.head == 0 && s.row == 0) s = (la_strides){H * rows * d, rows * d, d};
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t r = 0; r < rows; r++)
                memcpy((char *)dst + (b * s.batch + h * s.head + r * s.row) * es,
                       (const char *)src + (((b * H + h) * rows + r) * d) * es, d * es);
}

/* The inverse: the layout's rows gathered into a contiguous (B, H, rows, d) array. */
static void gather(const void *src, void *dst, la_strides s, size_t rows, size_t d, size_t es)
{
    if (s.batch == 0 && s.head == 0 && s.row == 0) s = (la_strides){H * rows * d, rows * d, d};
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t r = 0; r < rows; r++)
                memcpy((char *)dst + (((b * H + h) * rows + r) * d) * es,
                       (const char *)src + (b * s.batch + h * s.head + r * s.row) * es, d * es);
}

/* Bytes of a strided array that are no element of it: still the sentinel? */
static int gaps_untouched(const void *x, size_t elements, la_strides s, size_t rows, size_t d,
                          size_t es)
{
    unsigned char *mark = calloc(elements, 1);
    if (!mark) return 0;
    if (s.batch == 0 && s.head == 0 && s.row == 0) s = (la_strides){H * rows * d, rows * d, d};
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t r = 0; r < rows; r++)
                memset(mark + b * s.batch + h * s.head + r * s.row, 1, d);
    int ok = 1;
    for (size_t e = 0; e < elements && ok; e++)
        for (size_t byte = 0; byte < es && !mark[e]; byte++)
            if (((const unsigned char *)x)[e * es + byte] != SENTINEL) ok = 0;
    free(mark);
    return ok;
}

/* The random inputs of a call, contiguous, in both element types. */
typedef struct {
    double *q64, *k64, *v64, *d_out64;
    float *q32, *k32, *v32, *d_out32;
} inputs;

static inputs make_inputs(void)
{
    inputs in;
    tu_rng r = tu_rng_for("strides");
    const size_t nq = (size_t)B * H * N * DK, nk = (size_t)B * H * M * DK;
    const size_t nv = (size_t)B * H * M * DV, no = (size_t)B * H * N * DV;
    in.q64 = tu_f64(nq), in.k64 = tu_f64(nk), in.v64 = tu_f64(nv), in.d_out64 = tu_f64(no);
    tu_fill_normal(&r, in.q64, nq, 1.0), tu_fill_normal(&r, in.k64, nk, 1.0);
    tu_fill_normal(&r, in.v64, nv, 1.0), tu_fill_normal(&r, in.d_out64, no, 1.0);
    in.q32 = tu_f32(nq), in.k32 = tu_f32(nk), in.v32 = tu_f32(nv), in.d_out32 = tu_f32(no);
    tu_to_f32(in.q64, in.q32, nq), tu_to_f32(in.k64, in.k32, nk);
    tu_to_f32(in.v64, in.v32, nv), tu_to_f32(in.d_out64, in.d_out32, no);
    return in;
}

static void free_inputs(inputs *in)
{
    free(in->q64), free(in->k64), free(in->v64), free(in->d_out64);
    free(in->q32), free(in->k32), free(in->v32), free(in->d_out32);
}

/* One array in a layout: its strides, elements and storage (the sentinel in the gaps). */
typedef struct {
    la_strides s;
    size_t rows, d, elements;
    void *x;
} placed;

static placed place(layout l, int is_key_side, size_t rows, size_t d, const void *contiguous,
                    size_t es)
{
    placed a = {.rows = rows, .d = d};
    a.s = strides_of(l, is_key_side, rows, d, &a.elements);
    a.x = tu_alloc(a.elements * es);
    memset(a.x, SENTINEL, a.elements * es);
    if (contiguous) scatter(contiguous, a.x, a.s, rows, d, es);
    return a;
}

/* Whether out (placed) holds bitwise the contiguous want and nothing in its gaps. */
static void assert_same(const placed *out, const void *want, size_t es, const char *what,
                        const char *kernel, layout l, la_dtype dtype)
{
    const size_t n = (size_t)B * H * out->rows * out->d * es;
    void *got = tu_alloc(n);
    gather(out->x, got, out->s, out->rows, out->d, es);
    if (memcmp(got, want, n) != 0)
        fail_msg("%s, %s, %s, %s: not bitwise the contiguous call's", kernel, layout_name[l],
                 dtype == LA_FLOAT32 ? "float32" : "float64", what);
    if (!gaps_untouched(out->x, out->elements, out->s, out->rows, out->d, es))
        fail_msg("%s, %s: %s written outside its rows", kernel, layout_name[l], what);
    free(got);
}

/* Forward, log-sum-exps and backward of every row, both types, both layouts. */
static void strided_calls_equal_contiguous(void **state)
{
    (void)state;
    inputs in = make_inputs();
    int forwards = 0, backwards = 0, lses = 0;
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel kernel = (la_kernel)kk;
        const la_kernel_info *info = la_kernel_get(kernel);
        for (int dt = 0; dt < 2; dt++) {
            const la_dtype dtype = dt ? LA_FLOAT64 : LA_FLOAT32;
            const size_t es = dt ? sizeof(double) : sizeof(float);
            const void *q = dt ? (void *)in.q64 : (void *)in.q32;
            const void *k = dt ? (void *)in.k64 : (void *)in.k32;
            const void *v = dt ? (void *)in.v64 : (void *)in.v32;
            const void *d_out = dt ? (void *)in.d_out64 : (void *)in.d_out32;
            la_problem p = small_problem(info);
            const size_t no = (size_t)B * H * N * DV;
            void *want = tu_alloc(no * es);
            assert_int_equal(la_attention(kernel, &p, dtype, q, k, v, want), LA_OK);
            /* the backward's contiguous gradients, for the rows that have one */
            void *want_dq = NULL, *want_dk = NULL, *want_dv = NULL;
            if (info->fns->backward_f32) {
                want_dq = tu_alloc((size_t)B * H * N * DK * es);
                want_dk = tu_alloc((size_t)B * H * M * DK * es);
                want_dv = tu_alloc((size_t)B * H * M * DV * es);
                assert_int_equal(la_attention_backward(kernel, &p, dtype, q, k, v, want, NULL,
                                                       d_out, want_dq, want_dk, want_dv),
                                 LA_OK);
            }
            for (int l = 0; l < LAYOUT_COUNT; l++) {
                placed pq = place((layout)l, 0, N, DK, q, es);
                placed pk = place((layout)l, 1, M, DK, k, es);
                placed pv = place((layout)l, 1, M, DV, v, es);
                placed po = place((layout)l, 0, N, DV, NULL, es);
                la_problem sp = p;
                sp.stride_q = pq.s, sp.stride_k = pk.s, sp.stride_v = pv.s, sp.stride_out = po.s;
                assert_int_equal(la_problem_check(&sp), LA_OK);
                assert_int_equal(la_attention(kernel, &sp, dtype, pq.x, pk.x, pv.x, po.x), LA_OK);
                assert_same(&po, want, es, "out", info->name, (layout)l, dtype);
                forwards++;
                if (info->caps & LA_CAP_LSE) { /* out and lse as the contiguous lse call's */
                    void *want_lse = tu_alloc((size_t)B * H * N * es);
                    void *got_lse = tu_alloc((size_t)B * H * N * es);
                    void *lse_out = tu_alloc(no * es);
                    assert_int_equal(
                        la_attention_lse(kernel, &p, dtype, q, k, v, lse_out, want_lse), LA_OK);
                    assert_memory_equal(lse_out, want, no * es);
                    memset(po.x, SENTINEL, po.elements * es);
                    assert_int_equal(
                        la_attention_lse(kernel, &sp, dtype, pq.x, pk.x, pv.x, po.x, got_lse),
                        LA_OK);
                    assert_same(&po, want, es, "lse's out", info->name, (layout)l, dtype);
                    assert_memory_equal(got_lse, want_lse, (size_t)B * H * N * es);
                    free(want_lse), free(got_lse), free(lse_out);
                    lses++;
                }
                if (info->fns->backward_f32) { /* gradients laid out as q, k, v; d_out as out */
                    placed pout = place((layout)l, 0, N, DV, want, es);
                    placed pdo = place((layout)l, 0, N, DV, d_out, es);
                    placed pdq = place((layout)l, 0, N, DK, NULL, es);
                    placed pdk = place((layout)l, 1, M, DK, NULL, es);
                    placed pdv = place((layout)l, 1, M, DV, NULL, es);
                    assert_int_equal(la_attention_backward(kernel, &sp, dtype, pq.x, pk.x, pv.x,
                                                           pout.x, NULL, pdo.x, pdq.x, pdk.x,
                                                           pdv.x),
                                     LA_OK);
                    assert_same(&pdq, want_dq, es, "d_q", info->name, (layout)l, dtype);
                    assert_same(&pdk, want_dk, es, "d_k", info->name, (layout)l, dtype);
                    assert_same(&pdv, want_dv, es, "d_v", info->name, (layout)l, dtype);
                    free(pout.x), free(pdo.x), free(pdq.x), free(pdk.x), free(pdv.x);
                    backwards++;
                }
                free(pq.x), free(pk.x), free(pv.x), free(po.x);
            }
            free(want), free(want_dq), free(want_dk), free(want_dv);
        }
    }
    printf("  %d strided forwards, %d lse calls, %d backwards bitwise the contiguous ones\n",
           forwards, lses, backwards);
    assert_int_equal(forwards, 2 * 2 * LA_KERNEL_COUNT);
    assert_true(lses >= 4 && backwards >= 4);
    free_inputs(&in);
}

/* The attention matrix on strided q and k (it is (B, H, N, M), contiguous, itself). */
static void strided_weights_equal_contiguous(void **state)
{
    (void)state;
    inputs in = make_inputs();
    int rows_with_weights = 0;
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)kk);
        if (!info->fns->weights_f32) continue;
        rows_with_weights++;
        for (int dt = 0; dt < 2; dt++) {
            const la_dtype dtype = dt ? LA_FLOAT64 : LA_FLOAT32;
            const size_t es = dt ? sizeof(double) : sizeof(float), nw = (size_t)B * H * N * M;
            const void *q = dt ? (void *)in.q64 : (void *)in.q32;
            const void *k = dt ? (void *)in.k64 : (void *)in.k32;
            la_problem p = small_problem(info);
            void *want = tu_alloc(nw * es), *got = tu_alloc(nw * es);
            assert_int_equal(la_attention_weights(info->kernel, &p, dtype, q, k, want), LA_OK);
            for (int l = 0; l < LAYOUT_COUNT; l++) {
                placed pq = place((layout)l, 0, N, DK, q, es);
                placed pk = place((layout)l, 1, M, DK, k, es);
                la_problem sp = p;
                sp.stride_q = pq.s, sp.stride_k = pk.s;
                assert_int_equal(la_attention_weights(info->kernel, &sp, dtype, pq.x, pk.x, got),
                                 LA_OK);
                if (memcmp(got, want, nw * es) != 0)
                    fail_msg("%s, %s: attention matrix not bitwise the contiguous call's",
                             info->name, layout_name[l]);
                free(pq.x), free(pk.x);
            }
            free(want), free(got);
        }
    }
    assert_true(rows_with_weights >= 4);
    free_inputs(&in);
}

/* The fused softmax forward reads every valid layout in place (its row's reads_strides):
 * float32 and float64, with AVX-512 and on the portable tiles (la_avx512_enable(false)),
 * decoding (N = 1, 3: the narrow tiles) and longer (N = 34, 37, 70: the wide tiles and
 * their tails, several portable query blocks), keys and values in T-row slots holding M,
 * q, k, v and out as a KV cache (B, H, T, d), PyTorch's (B, N, H, d) (keys in (B, T, H, d))
 * and rows padded past d; causal (both alignments), key lengths, general masks. Each call
 * runs with the workspace limit at the contiguous call's workspace, which a copy would
 * pass, and must give bitwise the contiguous call's out and lse, out's gaps untouched.
 * The gaps of q, k and v hold NaN (a tile that reads one spoils the output) or, in a
 * second round, half the type's largest value (a range scan that reads one refuses the
 * call: LA_ERANGE). */
enum { IP_DK = 20, IP_DV = 12, IP_PAD = 3 };

/* The strides of an array of `rows` rows (in `slots` row slots) of d, and its elements. */
static la_strides ip_strides(layout l, int is_key_side, size_t slots, size_t d, size_t *elements)
{
    switch (l) {
    case LAYOUT_KV_CACHE:
        *elements = (size_t)B * H * slots * d;
        return is_key_side ? (la_strides){H * slots * d, slots * d, d} : (la_strides){0, 0, 0};
    case LAYOUT_TORCH:
        *elements = (size_t)B * slots * H * d;
        return (la_strides){slots * H * d, d, H * d};
    default:
        *elements = (size_t)B * H * slots * (d + IP_PAD);
        return (la_strides){H * slots * (d + IP_PAD), slots * (d + IP_PAD), d + IP_PAD};
    }
}

/* A contiguous array placed in layout l, every other element `gap`. */
static placed ip_place(layout l, int is_key_side, size_t rows, size_t slots, size_t d,
                       const void *contiguous, la_dtype dtype, double gap)
{
    const size_t es = dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
    placed a = {.rows = rows, .d = d};
    a.s = ip_strides(l, is_key_side, slots, d, &a.elements);
    a.x = tu_alloc(a.elements * es);
    for (size_t e = 0; e < a.elements; e++)
        if (dtype == LA_FLOAT32)
            ((float *)a.x)[e] = (float)gap;
        else
            ((double *)a.x)[e] = gap;
    scatter(contiguous, a.x, a.s, rows, d, es);
    return a;
}

static void softmax_reads_strides_in_place(void **state)
{
    (void)state;
    const la_kernel_info *row = la_kernel_get(LA_KERNEL_SOFTMAX);
    if (!row->fns->reads_strides) fail_msg("softmax's row reads no strides");
    const size_t m = tu_quick() ? 150 : 300, slots = m + 20; /* keys, cache rows */
    const size_t ns[] = {1, 3, 34, 37, 70};
    const int64_t lengths[B] = {(int64_t)m, (int64_t)m - 37};
    tu_rng r = tu_rng_for("softmax_reads_strides_in_place");
    int calls = 0;
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++) {
        const size_t n = ns[ni];
        const size_t nq = (size_t)B * H * n * IP_DK, no = (size_t)B * H * n * IP_DV;
        const size_t nk = (size_t)B * H * m * IP_DK, nv = (size_t)B * H * m * IP_DV;
        double *x64 = tu_f64(nq + nk + nv);
        float *x32 = tu_f32(nq + nk + nv);
        tu_fill_normal(&r, x64, nq + nk + nv, 1);
        tu_to_f32(x64, x32, nq + nk + nv);
        uint8_t *mask = tu_alloc(n * m), *key_mask = tu_alloc((size_t)B * m);
        for (size_t e = 0; e < n * m; e++)
            mask[e] = tu_uniform(&r) < 0.2;
        for (size_t e = 0; e < (size_t)B * m; e++)
            key_mask[e] = tu_uniform(&r) < 0.1;
        for (int dt = 0; dt < 2; dt++) {
            const la_dtype dtype = dt ? LA_FLOAT64 : LA_FLOAT32;
            const size_t es = dt ? sizeof(double) : sizeof(float);
            const unsigned char *x = dt ? (const void *)x64 : (const void *)x32;
            const void *q = x, *k = x + nq * es, *v = x + (nq + nk) * es;
            void *want = tu_alloc(no * es), *lse_want = tu_alloc((size_t)B * H * n * es);
            void *lse_got = tu_alloc((size_t)B * H * n * es);
            for (int simd = 0; simd < 2; simd++) {
                la_avx512_enable(simd == 1);
                for (int mc = 0; mc < 6; mc++) {
                    la_problem p;
                    la_problem_init(&p, B, H, n, m, IP_DK, IP_DV);
                    p.causal = mc == 1 || mc == 2 || mc == 4;
                    p.causal_align = mc == 1 ? LA_CAUSAL_TOP_LEFT : LA_CAUSAL_BOTTOM_RIGHT;
                    p.key_lengths = mc == 3 || mc == 4 ? lengths : NULL;
                    p.mask = mc == 5 ? mask : NULL;
                    p.key_mask = mc == 5 ? key_mask : NULL;
                    la_cost c;
                    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, dtype, &c), LA_OK);
                    assert_int_equal(la_attention(LA_KERNEL_SOFTMAX, &p, dtype, q, k, v, want),
                                     LA_OK);
                    void *lse_out = tu_alloc(no * es);
                    assert_int_equal(
                        la_attention_lse(LA_KERNEL_SOFTMAX, &p, dtype, q, k, v, lse_out, lse_want),
                        LA_OK);
                    assert_memory_equal(lse_out, want, no * es);
                    free(lse_out);
                    for (int l = 0; l <= LAYOUT_PADDED; l++)
                        for (int g = 0; g < 2; g++) {
                            const double gap = g == 0 ? NAN : dt ? DBL_MAX / 2 : FLT_MAX / 2;
                            placed pq = ip_place((layout)l, 0, n, n, IP_DK, q, dtype, gap);
                            placed pk = ip_place((layout)l, 1, m, slots, IP_DK, k, dtype, gap);
                            placed pv = ip_place((layout)l, 1, m, slots, IP_DV, v, dtype, gap);
                            placed po = place(l == LAYOUT_KV_CACHE ? LAYOUT_KV_CACHE : LAYOUT_TORCH,
                                              0, n, IP_DV, NULL, es);
                            if (l == LAYOUT_PADDED) { /* out's rows padded as well */
                                free(po.x);
                                po = ip_place(LAYOUT_PADDED, 0, n, n, IP_DV, want, dtype, 0);
                                memset(po.x, SENTINEL, po.elements * es);
                            }
                            la_problem sp = p;
                            sp.stride_q = pq.s, sp.stride_k = pk.s, sp.stride_v = pv.s;
                            sp.stride_out = po.s;
                            assert_int_equal(la_problem_check(&sp), LA_OK);
                            if (!row->fns->reads_strides(&sp, dtype))
                                fail_msg("%s, %s: softmax copies the layout", layout_name[l],
                                         dt ? "float64" : "float32");
                            /* a copy of k alone would pass the contiguous call's workspace */
                            sp.workspace_limit = (size_t)c.workspace_bytes;
                            const la_status st =
                                la_attention(LA_KERNEL_SOFTMAX, &sp, dtype, pq.x, pk.x, pv.x, po.x);
                            if (st != LA_OK)
                                fail_msg("%s, %s, N = %zu, masks %d, AVX-512 %s, gaps %g: %s",
                                         layout_name[l], dt ? "float64" : "float32", n, mc,
                                         simd ? "on" : "off", gap, la_strerror(st));
                            char what[160];
                            snprintf(what, sizeof what, "N = %zu, masks %d, AVX-512 %s, gaps %g", n,
                                     mc, simd ? "on" : "off", gap);
                            assert_same(&po, want, es, what, "softmax in place", (layout)l, dtype);
                            /* the log-sum-exps: float32 decoding stages them with out */
                            sp.workspace_limit += (size_t)B * H * n * es + 64;
                            memset(po.x, SENTINEL, po.elements * es);
                            assert_int_equal(la_attention_lse(LA_KERNEL_SOFTMAX, &sp, dtype, pq.x,
                                                              pk.x, pv.x, po.x, lse_got),
                                             LA_OK);
                            assert_same(&po, want, es, what, "softmax lse in place", (layout)l,
                                        dtype);
                            assert_memory_equal(lse_got, lse_want, (size_t)B * H * n * es);
                            free(pq.x), free(pk.x), free(pv.x), free(po.x);
                            calls++;
                        }
                }
            }
            free(want), free(lse_want), free(lse_got);
        }
        free(x64), free(x32), free(mask), free(key_mask);
    }
    la_avx512_enable(true);
    printf("  %d strided layouts read in place, bitwise the contiguous calls\n", calls);
}

/* Layouts la_problem_check refuses, and a budget the copies pass: the output untouched. */
static void bad_strides_refused(void **state)
{
    (void)state;
    la_problem p;
    la_problem_init(&p, B, H, N, M, DK, DV);
    struct {
        la_strides s;
        la_status want;
        const char *why;
    } cases[] = {
        {{H * N * DK, N * DK, DK - 1}, LA_EINVAL, "row stride below d: rows overlap"},
        {{H * N * DK, DK, DK}, LA_EINVAL, "head stride d with row stride d: heads overlap"},
        {{DK, H * N * DK, N * DK}, LA_EINVAL, "batch stride d: batch entries overlap rows"},
        {{0, N * DK, DK}, LA_EINVAL, "batch stride 0 with B = 2"},
        {{(size_t)-1 / 2, N * DK, DK}, LA_EOVERFLOW, "offsets beyond size_t"},
    };
    float q[B * H * N * DK] = {0}, k[B * H * M * DK] = {0}, v[B * H * M * DV] = {0};
    float out[4 * B * H * N * DV];
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        la_problem sp = p;
        sp.stride_q = cases[c].s;
        if (la_problem_check(&sp) != cases[c].want)
            fail_msg("stride_q {%zu, %zu, %zu} (%s): %s, expected %s", cases[c].s.batch,
                     cases[c].s.head, cases[c].s.row, cases[c].why,
                     la_strerror(la_problem_check(&sp)), la_strerror(cases[c].want));
        memset(out, SENTINEL, sizeof out);
        assert_int_equal(la_attention(LA_KERNEL_SOFTMAX, &sp, LA_FLOAT32, q, k, v, out),
                         cases[c].want);
        for (size_t i = 0; i < sizeof out; i++)
            assert_int_equal(((unsigned char *)out)[i], SENTINEL);
    }
    /* every array's layout is checked: rows that overlap in k, v, out */
    la_problem sp = p;
    sp.stride_k = (la_strides){H * M * DK, M * DK, DK - 1};
    assert_int_equal(la_problem_check(&sp), LA_EINVAL);
    sp = p, sp.stride_v = (la_strides){H * M * DV, M * DV, DV - 1};
    assert_int_equal(la_problem_check(&sp), LA_EINVAL);
    sp = p, sp.stride_out = (la_strides){H * N * DV, DV, DV};
    assert_int_equal(la_problem_check(&sp), LA_EINVAL);
    /* a layout that is fine, for a row that copies it (the materializing softmax): its copy
     * and the kernel's own scratch share the budget, so one byte less than both is
     * LA_EBUDGET (output untouched), both exactly runs; the fused softmax reads it in
     * place within its own workspace */
    sp = p;
    sp.stride_q = (la_strides){N * H * DK, DK, H * DK};
    la_cost cost;
    const la_kernel copies = LA_KERNEL_SOFTMAX_MATERIALIZED;
    assert_int_equal(la_attention_cost(copies, &p, LA_FLOAT32, &cost), LA_OK);
    const size_t both = (size_t)cost.workspace_bytes + sizeof q;
    sp.workspace_limit = both - 1;
    memset(out, SENTINEL, sizeof out);
    assert_int_equal(la_attention(copies, &sp, LA_FLOAT32, q, k, v, out), LA_EBUDGET);
    for (size_t i = 0; i < sizeof out; i++)
        assert_int_equal(((unsigned char *)out)[i], SENTINEL);
    sp.workspace_limit = both;
    assert_int_equal(la_attention(copies, &sp, LA_FLOAT32, q, k, v, out), LA_OK);
    assert_int_equal(la_attention_cost(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, &cost), LA_OK);
    sp.workspace_limit = (size_t)cost.workspace_bytes;
    assert_int_equal(la_attention(LA_KERNEL_SOFTMAX, &sp, LA_FLOAT32, q, k, v, out), LA_OK);
    /* the references take contiguous arrays only */
    sp.workspace_limit = p.workspace_limit;
    double q64[B * H * N * DK] = {0}, k64[B * H * M * DK] = {0}, v64[B * H * M * DV] = {0};
    double out64[B * H * N * DV];
    assert_int_equal(la_ref_attention(LA_KERNEL_SOFTMAX, &sp, q64, k64, v64, out64), LA_EINVAL);
    double g64[3][B * H * M * DK];
    assert_int_equal(la_ref_attention_backward(LA_KERNEL_SOFTMAX, &sp, q64, k64, v64, out64, out64,
                                               g64[0], g64[1], g64[2]),
                     LA_EINVAL);
    /* and so does rotary linear attention, which is no registry row */
    memset(out, SENTINEL, sizeof out);
    assert_int_equal(la_linear_attention_rotary(&sp, LA_FLOAT32, 0, 0, q, k, v, out), LA_EINVAL);
    for (size_t i = 0; i < sizeof out; i++)
        assert_int_equal(((unsigned char *)out)[i], SENTINEL);
    sp.stride_q = (la_strides){0, 0, 0};
    assert_int_equal(la_linear_attention_rotary(&sp, LA_FLOAT32, 0, 0, q, k, v, out), LA_OK);
    /* the same layout written as its contiguous strides is the contiguous call */
    sp = p, sp.stride_q = (la_strides){H * N * DK, N * DK, DK};
    assert_int_equal(la_attention(LA_KERNEL_SOFTMAX, &sp, LA_FLOAT32, q, k, v, out), LA_OK);
}

/* la_kernel_draw: each row's own draw, bit for bit, and nothing for a row that draws none. */
static void kernel_draw_is_the_rows_draw(void **state)
{
    (void)state;
    int drawn = 0;
    for (int kk = 0; kk < LA_KERNEL_COUNT; kk++) {
        const la_kernel kernel = (la_kernel)kk;
        const la_kernel_info *info = la_kernel_get(kernel);
        la_problem p = small_problem(info);
        enum { MAX = 4096 };
        static double first[MAX], second[MAX], want1[MAX], want2[MAX];
        const unsigned prm = info->params;
        la_status st;
        size_t n1 = 0, n2 = 0;
        if (prm & LA_PARAM_PROJ) {
            st = la_linformer_projections(linformer.proj_rank, p.n_keys, linformer.seed, want1,
                                          want2);
            n1 = n2 = linformer.proj_rank * p.n_keys;
        } else if (prm & LA_PARAM_FEATURES) {
            st = la_favor_features(favor.features, p.d_k, favor.seed, want1);
            n1 = favor.features * p.d_k;
        } else if (prm & LA_PARAM_SCORE_WEIGHTS) {
            const int additive = (prm & LA_PARAM_SCORE_DIM) != 0;
            st = la_score_weights(kernel, p.d_k, score.score_dim, score.seed, want1,
                                  additive ? want2 : NULL);
            n1 = additive ? score.score_dim * 2 * p.d_k : p.d_k * p.d_k;
            n2 = additive ? score.score_dim : 0;
        } else if (prm & LA_PARAM_RELATIVE) {
            st = la_relative_embeddings(relative.max_distance, p.d_k, p.d_v, relative.seed, want1,
                                        want2);
            n1 = (2 * relative.max_distance + 1) * p.d_k,
            n2 = (2 * relative.max_distance + 1) * p.d_v;
        } else {
            assert_int_equal(la_kernel_draw(kernel, &p, first, second), LA_EINVAL);
            assert_int_equal(la_kernel_draw(kernel, &p, first, NULL), LA_EINVAL);
            continue;
        }
        assert_int_equal(st, LA_OK);
        assert_int_equal(la_kernel_draw(kernel, &p, first, n2 ? second : NULL), LA_OK);
        if (memcmp(first, want1, n1 * sizeof(double)) != 0 ||
            (n2 && memcmp(second, want2, n2 * sizeof(double)) != 0))
            fail_msg("%s: la_kernel_draw is not the row's own draw", info->name);
        /* one tensor too many or too few */
        assert_int_equal(la_kernel_draw(kernel, &p, first, n2 ? NULL : second), LA_EINVAL);
        drawn++;
    }
    assert_int_equal(drawn, 6); /* linformer, favor (2), general, additive, relative */
    la_problem p;
    la_problem_init(&p, 1, 1, 2, 2, 2, 2);
    double x[16];
    assert_int_equal(la_kernel_draw(LA_KERNEL_COUNT, &p, x, NULL), LA_EINVAL);
    assert_int_equal(la_kernel_draw(LA_KERNEL_LINFORMER, NULL, x, x + 8), LA_EINVAL);
    assert_int_equal(la_kernel_draw(LA_KERNEL_LINFORMER, &p, NULL, x), LA_EINVAL);
}

int main(void)
{
    tu_init("test_strides");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strided_calls_equal_contiguous),
        cmocka_unit_test(strided_weights_equal_contiguous),
        cmocka_unit_test(softmax_reads_strides_in_place),
        cmocka_unit_test(bad_strides_refused),
        cmocka_unit_test(kernel_draw_is_the_rows_draw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

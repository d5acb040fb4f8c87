/* test_passes.c — what bench's --pass and attend's gradients stand on
 * (experiments/common/pass.c, outputs.c):
 *   - a pass's cost is the library's models' (forward, backward, their sum for train with
 *     the larger workspace), and a kernel without a backward has no backward or train;
 *   - a timed pass computes exactly what the library's call computes (bitwise), and one
 *     the kernel does not have is refused with every array untouched;
 *   - a set of outputs appears all or none: nothing before the commit, nothing after a
 *     failed add or a failed commit, two outputs naming one file refused.
 * Stated over every registry row, so the kernels' backwards are checked as they land. */
#include "../testutil.h"
#include "attention/kernels.h"

#include "../../experiments/common/outputs.h"
#include "../../experiments/common/pass.h"
#include "../../experiments/common/timer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Linformer: k in 1..M (static: small_problem returns its problem by value). */
static const la_linformer_params rank16 = {{LA_PARAMS_LINFORMER, NULL}, 16, NULL, NULL, 0};

static la_problem small_problem(la_kernel kernel)
{
    la_problem p;
    la_problem_init(&p, 2, 3, 37, 29, 8, 5);
    p.causal = la_kernel_get(kernel)->causal == LA_CAUSAL_REQUIRED;
    p.params = &rank16.head;
    return p;
}

/* Whether the row has a backward (the registry's slots, read directly). */
static int row_has_backward(la_kernel kernel)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    return info->fns->backward_f32 != NULL && info->fns->backward_cost != NULL;
}

static void costs(void **state)
{
    (void)state;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel kernel = (la_kernel)k;
        const la_problem p = small_problem(kernel);
        la_cost got, fwd, bwd;
        assert_true(pass_kernel_has(kernel, PASS_FORWARD));
        assert_int_equal(pass_kernel_has(kernel, PASS_BACKWARD), row_has_backward(kernel));
        assert_int_equal(pass_kernel_has(kernel, PASS_TRAIN), row_has_backward(kernel));
        assert_int_equal(la_attention_cost(kernel, &p, LA_FLOAT32, &fwd), LA_OK);
        assert_int_equal(pass_cost(kernel, &p, PASS_FORWARD, LA_FLOAT32, &got), LA_OK);
        assert_memory_equal(&got, &fwd, sizeof got);
        if (!row_has_backward(kernel)) {
            assert_int_equal(pass_cost(kernel, &p, PASS_BACKWARD, LA_FLOAT32, &got), LA_EINVAL);
            assert_int_equal(pass_cost(kernel, &p, PASS_TRAIN, LA_FLOAT32, &got), LA_EINVAL);
            continue;
        }
        assert_int_equal(la_attention_backward_cost(kernel, &p, LA_FLOAT32, &bwd), LA_OK);
        /* the call is given the forward's B·H·N log-sum-exps where the row keeps them: the
         * library's model counts them as workspace, 64-byte aligned */
        if (la_kernel_get(kernel)->caps & LA_CAP_LSE)
            bwd.workspace_bytes -= ceil((double)(p.batch * p.heads * p.n_queries) * 4 / 64) * 64;
        assert_int_equal(pass_cost(kernel, &p, PASS_BACKWARD, LA_FLOAT32, &got), LA_OK);
        assert_memory_equal(&got, &bwd, sizeof got);
        assert_int_equal(pass_cost(kernel, &p, PASS_TRAIN, LA_FLOAT32, &got), LA_OK);
        assert_true(got.flops_total == fwd.flops_total + bwd.flops_total);
        assert_true(got.io_bytes == fwd.io_bytes + bwd.io_bytes);
        assert_true(got.workspace_bytes == (fwd.workspace_bytes > bwd.workspace_bytes
                                                ? fwd.workspace_bytes
                                                : bwd.workspace_bytes));
    }
    /* outside the registry, an unknown pass */
    la_problem p = small_problem(LA_KERNEL_SOFTMAX);
    la_cost c;
    assert_false(pass_kernel_has(LA_KERNEL_COUNT, PASS_FORWARD));
    assert_false(pass_kernel_has(LA_KERNEL_SOFTMAX, PASS_COUNT));
    assert_int_equal(pass_cost(LA_KERNEL_COUNT, &p, PASS_FORWARD, LA_FLOAT32, &c), LA_EINVAL);
    assert_int_equal(pass_cost(LA_KERNEL_SOFTMAX, &p, PASS_COUNT, LA_FLOAT32, &c), LA_EINVAL);
    assert_string_equal(pass_kind_names[PASS_TRAIN], "train");
    assert_null(pass_kind_names[PASS_COUNT]);
}

static float *random_floats(tu_rng *r, size_t n)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)tu_normal(r);
    return x;
}

static float *filled(size_t n, unsigned char byte)
{
    float *x = malloc(n * sizeof *x);
    assert_non_null(x);
    memset(x, byte, n * sizeof *x);
    return x;
}

static void timed_calls(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("timed_calls");
    const timer_rule rule = {2, 3, 0, INFINITY};
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel kernel = (la_kernel)k;
        const la_problem p = small_problem(kernel);
        const size_t bh = p.batch * p.heads, n_q = bh * p.n_queries * p.d_k,
                     n_k = bh * p.n_keys * p.d_k, n_v = bh * p.n_keys * p.d_v,
                     n_o = bh * p.n_queries * p.d_v;
        float *q = random_floats(&r, n_q), *k_ = random_floats(&r, n_k);
        float *v = random_floats(&r, n_v), *d_out = random_floats(&r, n_o);
        float *out = filled(n_o, 0xA5), *want_out = filled(n_o, 0);
        float *d_q = filled(n_q, 0xA5), *d_k = filled(n_k, 0xA5), *d_v = filled(n_v, 0xA5);
        const pass_arrays a = {q, k_, v, out, d_out, d_q, d_k, d_v};
        timer_result t;

        /* forward: the library's output, bitwise */
        assert_int_equal(la_attention(kernel, &p, LA_FLOAT32, q, k_, v, want_out), LA_OK);
        assert_int_equal(pass_time(kernel, &p, PASS_FORWARD, &a, &rule, &t), LA_OK);
        assert_true(t.reps >= 2 && t.median_s >= 0);
        assert_memory_equal(out, want_out, n_o * sizeof *out);

        for (int pass = PASS_BACKWARD; pass <= PASS_TRAIN; pass++) {
            memset(out, 0xA5, n_o * sizeof *out);
            memset(d_q, 0xA5, n_q * sizeof *d_q);
            memset(d_k, 0xA5, n_k * sizeof *d_k);
            memset(d_v, 0xA5, n_v * sizeof *d_v);
            if (!row_has_backward(kernel)) {
                /* refused, nothing written */
                assert_int_equal(pass_time(kernel, &p, (pass_kind)pass, &a, &rule, &t), LA_EINVAL);
                float *sentinel = filled(n_q, 0xA5);
                assert_memory_equal(d_q, sentinel, n_q * sizeof *d_q);
                assert_memory_equal(out, sentinel, n_o * sizeof *out);
                free(sentinel);
                continue;
            }
            /* the gradients of the library's backward on the forward's output, bitwise;
             * the output is the forward's */
            float *want_q = filled(n_q, 0), *want_k = filled(n_k, 0), *want_v = filled(n_v, 0);
            if (kernel == LA_KERNEL_SOFTMAX) {
                /* fused softmax trains with the forward's log-sum-exp (pass.h) */
                float *lse = filled(bh * p.n_queries, 0), *lse_out = filled(n_o, 0);
                assert_int_equal(la_softmax_attention_lse_f32(&p, q, k_, v, lse_out, lse), LA_OK);
                assert_memory_equal(lse_out, want_out, n_o * sizeof *out);
                assert_int_equal(la_softmax_attention_backward_f32(&p, q, k_, v, want_out, lse,
                                                                   d_out, want_q, want_k, want_v),
                                 LA_OK);
                free(lse), free(lse_out);
            } else {
                assert_int_equal(la_attention_backward(kernel, &p, LA_FLOAT32, q, k_, v, want_out,
                                                       NULL, d_out, want_q, want_k, want_v),
                                 LA_OK);
            }
            assert_int_equal(pass_time(kernel, &p, (pass_kind)pass, &a, &rule, &t), LA_OK);
            assert_memory_equal(out, want_out, n_o * sizeof *out);
            assert_memory_equal(d_q, want_q, n_q * sizeof *d_q);
            assert_memory_equal(d_k, want_k, n_k * sizeof *d_k);
            assert_memory_equal(d_v, want_v, n_v * sizeof *d_v);
            free(want_q), free(want_k), free(want_v);
        }
        free(q), free(k_), free(v), free(d_out), free(out), free(want_out);
        free(d_q), free(d_k), free(d_v);
    }
}

/* pass_time_calls: a backward timed in turn with another kernel's forward, each on its own
 * arrays, gives the library's bits for both (the backward on its own forward's output);
 * a backward the kernel does not have is refused beside them. */
static void calls_in_turn(void **state)
{
    (void)state;
    tu_rng r = tu_rng_for("calls_in_turn");
    const la_problem p = small_problem(LA_KERNEL_LINEAR);
    const size_t bh = p.batch * p.heads, n_q = bh * p.n_queries * p.d_k,
                 n_k = bh * p.n_keys * p.d_k, n_v = bh * p.n_keys * p.d_v,
                 n_o = bh * p.n_queries * p.d_v;
    float *q = random_floats(&r, n_q), *k_ = random_floats(&r, n_k);
    float *v = random_floats(&r, n_v), *d_out = random_floats(&r, n_o);
    float *out0 = filled(n_o, 0xA5), *out1 = filled(n_o, 0xA5), *out2 = filled(n_o, 0xA5);
    float *d_q = filled(n_q, 0xA5), *d_k = filled(n_k, 0xA5), *d_v = filled(n_v, 0xA5);
    float *want0 = filled(n_o, 0), *want1 = filled(n_o, 0);
    float *want_q = filled(n_q, 0), *want_k = filled(n_k, 0), *want_v = filled(n_v, 0);
    assert_int_equal(la_attention(LA_KERNEL_LINEAR, &p, LA_FLOAT32, q, k_, v, want0), LA_OK);
    assert_int_equal(la_attention(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, q, k_, v, want1), LA_OK);
    assert_int_equal(la_attention_backward(LA_KERNEL_LINEAR, &p, LA_FLOAT32, q, k_, v, want0, NULL,
                                           d_out, want_q, want_k, want_v),
                     LA_OK);
    la_kernel none = LA_KERNEL_COUNT; /* a kernel without a backward */
    for (int k = 0; k < LA_KERNEL_COUNT && none == LA_KERNEL_COUNT; k++)
        if (!row_has_backward((la_kernel)k) &&
            la_kernel_get((la_kernel)k)->causal != LA_CAUSAL_REQUIRED)
            none = (la_kernel)k;
    assert_true(none != LA_KERNEL_COUNT);
    const pass_arrays a0 = {q, k_, v, out0, d_out, d_q, d_k, d_v};
    const pass_arrays a1 = {q, k_, v, out1, NULL, NULL, NULL, NULL};
    const pass_arrays a2 = {q, k_, v, out2, d_out, d_q, d_k, d_v};
    const pass_spec calls[3] = {{LA_KERNEL_LINEAR, &p, PASS_BACKWARD, &a0},
                                {LA_KERNEL_SOFTMAX, &p, PASS_FORWARD, &a1},
                                {none, &p, PASS_BACKWARD, &a2}};
    const timer_rule rule = {2, 3, 0, INFINITY};
    timer_result t[3];
    la_status st[3];
    pass_time_calls(3, calls, &rule, t, st);
    assert_int_equal(st[0], LA_OK);
    assert_int_equal(st[1], LA_OK);
    assert_int_equal(st[2], LA_EINVAL);
    assert_true(t[0].reps >= 2 && t[1].reps >= 2 && t[0].median_s >= 0 && t[1].median_s >= 0);
    assert_memory_equal(out0, want0, n_o * sizeof *out0);
    assert_memory_equal(out1, want1, n_o * sizeof *out1);
    assert_memory_equal(d_q, want_q, n_q * sizeof *d_q);
    assert_memory_equal(d_k, want_k, n_k * sizeof *d_k);
    assert_memory_equal(d_v, want_v, n_v * sizeof *d_v);
    float *sentinel = filled(n_o, 0xA5); /* the refused call wrote nothing */
    assert_memory_equal(out2, sentinel, n_o * sizeof *out2);
    free(sentinel);
    free(q), free(k_), free(v), free(d_out), free(out0), free(out1), free(out2);
    free(d_q), free(d_k), free(d_v), free(want0), free(want1), free(want_q), free(want_k),
        free(want_v);
}

/* ---------------------------------------------------------------- outputs */

static char dir[64];

static const char *in_dir(const char *name)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The folder holds exactly `count` entries (no temporaries left). */
static void assert_entries(int count)
{
    char command[160];
    snprintf(command, sizeof command, "test $(ls -A %s | wc -l) -eq %d", dir, count);
    if (system(command) != 0) {
        snprintf(command, sizeof command, "ls -A %s", dir);
        assert_int_equal(system(command), 0);
        fail_msg("%s does not hold exactly %d files", dir, count);
    }
}

static void output_sets(void **state)
{
    (void)state;
    float data[6] = {1, 2, 3, 4, 5, 6};
    const la_array a = {LA_NPY_F32, 2, {2, 3}, 6, data}, b = {LA_NPY_F32, 1, {4}, 4, data};
    const char *pa = in_dir("a.npy"), *pb = in_dir("b.npy");
    outputs_set s;

    /* staged: nothing at the paths; committed: both, with their contents */
    outputs_set_init(&s);
    assert_int_equal(outputs_set_add(&s, "--out", pa, &a), 0);
    assert_int_equal(outputs_set_add(&s, "--grad-q", pb, &b), 0);
    assert_false(exists(pa) || exists(pb));
    assert_int_equal(outputs_set_commit(&s), 0);
    outputs_set_free(&s);
    outputs_set_free(&s); /* twice is safe */
    la_array back;
    const char *why;
    assert_int_equal(la_npy_read(pb, &back, &why), LA_OK);
    assert_int_equal(back.count, 4);
    assert_memory_equal(back.data, data, 4 * sizeof *data);
    la_array_free(&back);
    assert_entries(2);
    unlink(pa), unlink(pb);

    /* a later add fails (no such folder): after free, nothing anywhere */
    outputs_set_init(&s);
    assert_int_equal(outputs_set_add(&s, "--out", pa, &a), 0);
    assert_int_equal(outputs_set_add(&s, "--grad-q", in_dir("missing/b.npy"), &b), 2);
    outputs_set_free(&s);
    assert_entries(0);

    /* the same file twice, also through a symbolic link: refused */
    assert_int_equal(symlink("a.npy", in_dir("link.npy")), 0);
    outputs_set_init(&s);
    assert_int_equal(outputs_set_add(&s, "--out", pa, &a), 0);
    assert_int_equal(outputs_set_add(&s, "--grad-q", pa, &b), 2);
    outputs_set_free(&s);
    outputs_set_init(&s);
    assert_int_equal(outputs_set_add(&s, "--out", pa, &a), 0);
    assert_int_equal(outputs_set_add(&s, "--grad-q", in_dir("link.npy"), &b), 2);
    outputs_set_free(&s);
    assert_false(exists(pa));
    unlink(in_dir("link.npy"));

    /* an existing target stays as it was when the set is not committed */
    FILE *f = fopen(pa, "w");
    assert_non_null(f);
    fputs("previous", f);
    fclose(f);
    outputs_set_init(&s);
    assert_int_equal(outputs_set_add(&s, "--out", pa, &a), 0);
    outputs_set_free(&s);
    char text[16] = "";
    f = fopen(pa, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "previous");
    unlink(pa);

    /* a commit that fails after another succeeded (the second target's folder moved
     * away): the first is removed again, so none of the set remains */
    const char *sub = in_dir("sub"), *moved = in_dir("moved");
    assert_int_equal(mkdir(sub, 0755), 0);
    char pc[160];
    snprintf(pc, sizeof pc, "%s/c.npy", sub);
    outputs_set_init(&s);
    assert_int_equal(outputs_set_add(&s, "--out", pa, &a), 0);
    assert_int_equal(outputs_set_add(&s, "--grad-q", pc, &b), 0);
    assert_int_equal(rename(sub, moved), 0);
    assert_int_equal(outputs_set_commit(&s), 2);
    outputs_set_free(&s);
    assert_false(exists(pa));
    char command[200];
    snprintf(command, sizeof command, "rm -rf %s", moved);
    assert_int_equal(system(command), 0);
    assert_entries(0);
}

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/test_passes.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", dir);
    return system(command) == 0 ? 0 : -1;
}

int main(void)
{
    tu_init("test_passes");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(costs),
        cmocka_unit_test(timed_calls),
        cmocka_unit_test(calls_in_turn),
        cmocka_unit_test_setup_teardown(output_sets, make_dir, remove_dir),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

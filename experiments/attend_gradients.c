/* attend_gradients.c — the gradients of `linattn attend` (--grad-out, --grad-q, --grad-k,
 * --grad-v): the backward call and its outputs (attend.h). */
#include "attend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- gradients */

/* --grad-out, --grad-q, --grad-k, --grad-v: none, or all four. */
int attend_check_gradient_flags(const attend_args *a, int *wanted)
{
    const char *flags[][2] = {{"--grad-out", a->grad_out},
                              {"--grad-q", a->grad_q},
                              {"--grad-k", a->grad_k},
                              {"--grad-v", a->grad_v}};
    int given = 0;
    for (int i = 0; i < 4; i++)
        given += flags[i][1] != NULL;
    *wanted = given == 4;
    if (given == 0 || given == 4) return 0;
    for (int i = 0; i < 4; i++)
        if (!flags[i][1])
            return cli_fail(flags[i][0],
                            "missing: --grad-out, --grad-q, --grad-k and --grad-v go together");
    return 0;
}

/* The kernel has a backward pass in the library (its registry row's backward slots). */
int attend_check_has_backward(la_kernel kernel)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (info && (info->caps & LA_CAP_BACKWARD)) return 0;
    return cli_fail("--grad-out", "kernel %s has no backward pass", la_kernel_name(kernel));
}

/* dO: read in the precision, shaped exactly as the output y. */
int attend_read_grad_out(const char *path, la_dtype dtype, const la_array *y, la_array *d_out)
{
    char s1[160], s2[160];
    int rc = arrays_read_floats(path, dtype, d_out);
    if (rc) return rc;
    if (d_out->ndim != y->ndim ||
        memcmp(d_out->shape, y->shape, (size_t)y->ndim * sizeof y->shape[0]) != 0)
        return cli_fail(path, "shape %s differs from the output's %s",
                        arrays_shape_str(d_out, s1, sizeof s1), arrays_shape_str(y, s2, sizeof s2));
    return 0;
}

/* An empty array of like's dtype and shape (the gradients of q, k, v). */
static int alloc_like(const la_array *like, la_array *out)
{
    *out = *like;
    out->data = malloc(like->count * la_npy_dtype_size(like->dtype));
    if (!out->data) return cli_fail("attend", "%s", la_strerror(LA_ENOMEM));
    return 0;
}

/* The backward of L = Σ y ∘ dO into d_q, d_k, d_v (allocated here, freed by the caller),
 * then y and the three gradients written together. */
int attend_backward_and_write(const attend_args *a, la_kernel kernel, const la_problem *p,
                              la_dtype dtype, const la_array *q, const la_array *k,
                              const la_array *v, const la_array *y, const la_array *d_out,
                              la_array grads[3])
{
    int rc;
    if ((rc = alloc_like(q, &grads[0])) || (rc = alloc_like(k, &grads[1])) ||
        (rc = alloc_like(v, &grads[2])))
        return rc;
    la_status st;
    if (dtype == LA_FLOAT32)
        st = la_attention_backward(kernel, p, LA_FLOAT32, q->data, k->data, v->data, y->data, NULL,
                                   d_out->data, grads[0].data, grads[1].data, grads[2].data);
    else
        st = la_attention_backward(kernel, p, LA_FLOAT64, q->data, k->data, v->data, y->data, NULL,
                                   d_out->data, grads[0].data, grads[1].data, grads[2].data);
    if (st == LA_ERANGE && dtype == LA_FLOAT32)
        return cli_fail("attend", "gradients overflow float32: use --precision float64");
    if (st != LA_OK)
        return cli_fail("attend", "backward of %s: %s", la_kernel_name(kernel), la_strerror(st));

    outputs_set outs;
    outputs_set_init(&outs);
    if (!(rc = outputs_set_add(&outs, "--out", a->out, y)) &&
        !(rc = outputs_set_add(&outs, "--grad-q", a->grad_q, &grads[0])) &&
        !(rc = outputs_set_add(&outs, "--grad-k", a->grad_k, &grads[1])) &&
        !(rc = outputs_set_add(&outs, "--grad-v", a->grad_v, &grads[2])))
        rc = outputs_set_commit(&outs);
    outputs_set_free(&outs);
    return rc;
}

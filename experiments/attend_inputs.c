/* attend_inputs.c — what `linattn attend` reads beside q, k and v: positions, key
 * lengths, masks, and the shapes they must agree with (attend.h). */
#include "attend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- positions */

/* Rotary positions on a linear kernel: la_linear_attention_rotary_* runs instead of the
 * kernel (RoFormer's form: the rotation on φ(q), φ(k) in the numerator only). */
int attend_rotary_linear(la_kernel kernel, const position_values *v)
{
    return v->kind == POSITION_ROTARY && (la_kernel_get(kernel)->caps & LA_CAP_ROTARY_FEATURES);
}

/* --positions against the kernel: relative runs the relative kernel (--variant relative,
 * or softmax / softmax_materialized, which it extends); --variant relative alone means
 * --positions relative; rotary rotates q and k of the softmax-type kernels and runs
 * inside linear attention; FAVOR+ takes neither. No gradients with positions. */
int attend_choose_positions(attend_args *a, la_kernel *kernel, int gradients, position_values *out)
{
    if ((la_kernel_get(*kernel)->caps & LA_CAP_POSITIONS) && !a->positions.positions)
        a->positions.positions = "relative";
    int rc = position_parse(&a->positions, out);
    if (rc) return rc;
    const char *name = la_kernel_name(*kernel);
    if (out->kind == POSITION_RELATIVE) {
        if (!(la_kernel_get(*kernel)->caps & LA_CAP_POSITIONS) && !kernels_exact_softmax(*kernel))
            return cli_fail("--positions",
                            "relative applies to softmax attention only "
                            "(--variant softmax or relative), not %s",
                            name);
        *kernel = LA_KERNEL_RELATIVE;
    } else if (la_kernel_get(*kernel)->caps & LA_CAP_POSITIONS) {
        return cli_fail("--positions", "--variant relative is --positions relative, not %s",
                        position_name(out->kind));
    }
    if (out->kind == POSITION_ROTARY &&
        !(la_kernel_get(*kernel)->caps & (LA_CAP_ROTARY | LA_CAP_ROTARY_FEATURES)))
        return cli_fail("--positions",
                        "rotary does not apply to %s (its random features "
                        "are not rotated)",
                        name);
    if (out->kind != POSITION_NONE && gradients)
        return cli_fail("--grad-out", "not with --positions %s", position_name(out->kind));
    return 0;
}

/* The relative kernel's clip distance and tables (given: (2K+1, d_k) and (2K+1, d_v),
 * d_k and d_v p's) into its block *out; the tables stay owned by v. */
int attend_apply_relative(const position_values *v, const la_problem *p, la_relative_params *out)
{
    char s1[160];
    out->max_distance = v->max_distance;
    if (!v->rel_k.data) return 0;
    if (v->rel_k.shape[1] != p->d_k)
        return cli_fail("--relative", "a^K has shape %s: need (2K+1, d_k) with d_k = %zu",
                        arrays_shape_str(&v->rel_k, s1, sizeof s1), p->d_k);
    if (v->rel_v.shape[1] != p->d_v)
        return cli_fail("--relative", "a^V has shape %s: need (2K+1, d_v) with d_v = %zu",
                        arrays_shape_str(&v->rel_v, s1, sizeof s1), p->d_v);
    out->rel_k = v->rel_k.data;
    out->rel_v = v->rel_v.data;
    return 0;
}

/* Q, K, V agree: same rank 2..4, same leading dims, shared d_k and M, no zero sizes. */
int attend_check_shapes(const attend_args *a, const la_array *q, const la_array *k,
                        const la_array *v)
{
    char s1[160], s2[160];
    const char *paths[] = {a->q, a->k, a->v};
    const la_array *arrays[] = {q, k, v};
    if (q->ndim < 2 || q->ndim > 4)
        return cli_fail(a->q, "shape %s must be (N, d), (H, N, d) or (B, H, N, d)",
                        arrays_shape_str(q, s1, sizeof s1));
    for (int i = 1; i < 3; i++) {
        if (arrays[i]->ndim != q->ndim)
            return cli_fail(paths[i], "shape %s has %d dims, Q %s has %d",
                            arrays_shape_str(arrays[i], s1, sizeof s1), arrays[i]->ndim,
                            arrays_shape_str(q, s2, sizeof s2), q->ndim);
        for (int d = 0; d < q->ndim - 2; d++)
            if (arrays[i]->shape[d] != q->shape[d])
                return cli_fail(paths[i], "leading dims of %s differ from Q's %s",
                                arrays_shape_str(arrays[i], s1, sizeof s1),
                                arrays_shape_str(q, s2, sizeof s2));
    }
    int r = q->ndim - 2, c = q->ndim - 1; /* rows and columns */
    if (k->shape[c] != q->shape[c])
        return cli_fail(a->k, "d_k = %zu differs from Q's d_k = %zu", k->shape[c], q->shape[c]);
    if (v->shape[r] != k->shape[r])
        return cli_fail(a->v, "has %zu rows (keys), K has %zu", v->shape[r], k->shape[r]);
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < q->ndim; d++)
            if (arrays[i]->shape[d] == 0)
                return cli_fail(paths[i], "shape %s has a zero dimension",
                                arrays_shape_str(arrays[i], s1, sizeof s1));
    return 0;
}

/* key lengths: integers, shape (B,), each in [0, M]; converted to int64 in *out. */
int attend_read_key_lengths(const char *path, size_t batch, size_t n_keys, int64_t **out)
{
    la_array l;
    char s1[160];
    int rc = arrays_read_npy(path, &l);
    if (rc) return rc;
    if (l.dtype != LA_NPY_I32 && l.dtype != LA_NPY_I64) {
        rc = cli_fail(path, "dtype %s, need int32 or int64", arrays_dtype_name(l.dtype));
        goto done;
    }
    if (l.ndim != 1 || l.shape[0] != batch) {
        rc = cli_fail(path, "shape %s must be (B,) = (%zu,)", arrays_shape_str(&l, s1, sizeof s1),
                      batch);
        goto done;
    }
    int64_t *lengths = malloc(batch * sizeof *lengths);
    if (!lengths) {
        rc = cli_fail(path, "out of memory");
        goto done;
    }
    for (size_t b = 0; b < batch; b++) {
        lengths[b] = l.dtype == LA_NPY_I32 ? ((int32_t *)l.data)[b] : ((int64_t *)l.data)[b];
        if (lengths[b] < 0 || (uint64_t)lengths[b] > n_keys) {
            rc = cli_fail(path, "key length %lld at index %zu is outside [0, %zu]",
                          (long long)lengths[b], b, n_keys);
            free(lengths);
            goto done;
        }
    }
    *out = lengths;
done:
    la_array_free(&l);
    return rc;
}

/* ---------------------------------------------------------------- masks */

/* Which kernels take --mask and --key-padding-mask (linattn.h, la_problem.mask): a
 * refusal before any file is read, with why. */
int attend_check_masks_allowed(const attend_args *a, la_kernel kernel)
{
    const char *name = la_kernel_name(kernel);
    const unsigned masks = la_kernel_get(kernel)->masks;
    const int general = (masks & LA_MASK_GENERAL) != 0, keys = (masks & LA_MASK_KEY) != 0;
    if (a->mask && keys && !general) /* linear attention's one state for every query */
        return cli_fail("--mask",
                        "%s keeps one state S = sum of phi(k_j) v_j^T for every query, "
                        "so a per-query mask cannot be honoured (--key-padding-mask and "
                        "--causal can)",
                        name);
    if (a->mask && !general)
        return cli_fail("--mask",
                        "applies to --variant softmax, softmax_materialized, hard, local, "
                        "general or cosine (not %s)",
                        name);
    if (a->key_padding_mask && !keys)
        return cli_fail("--key-padding-mask",
                        "applies to --variant softmax, softmax_materialized, hard, local, "
                        "general, cosine, linear or linear_recurrent (not %s)",
                        name);
    return 0;
}

/* A mask file: bool (True = hidden) or float32/float64 with values 0 or -inf (-inf =
 * hidden), shaped as one of the `n_shapes` shapes given (each `ndim` long); *out gets
 * its count bytes, 1 = hidden, and *which the index of the shape it matched. */
static int read_mask(const char *flag, const char *path, int ndim, size_t n_shapes,
                     const size_t shapes[][3], const char *want, uint8_t **out, size_t *which)
{
    la_array a;
    char s1[160];
    int rc = arrays_read_npy(path, &a);
    if (rc) return rc;
    *which = n_shapes;
    for (size_t s = 0; s < n_shapes && a.ndim == ndim; s++)
        if (memcmp(a.shape, shapes[s], (size_t)ndim * sizeof a.shape[0]) == 0) *which = s;
    if (a.dtype != LA_NPY_BOOL && a.dtype != LA_NPY_F32 && a.dtype != LA_NPY_F64) {
        rc = cli_fail(flag, "dtype %s, need bool or float32/float64 (0 or -inf)",
                      arrays_dtype_name(a.dtype));
        goto done;
    }
    if (*which == n_shapes) {
        rc = cli_fail(flag, "shape %s must be %s", arrays_shape_str(&a, s1, sizeof s1), want);
        goto done;
    }
    uint8_t *m = malloc(a.count ? a.count : 1);
    if (!m) {
        rc = cli_fail(flag, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < a.count; e++) {
        if (a.dtype == LA_NPY_BOOL) {
            const uint8_t x = ((const uint8_t *)a.data)[e];
            if (x > 1) {
                rc = cli_fail(flag, "byte %u at index %zu is not a bool (0 or 1)", x, e);
                free(m);
                goto done;
            }
            m[e] = x;
            continue;
        }
        const double x = a.dtype == LA_NPY_F32 ? (double)((const float *)a.data)[e]
                                               : ((const double *)a.data)[e];
        if (x != 0 && x != -INFINITY) {
            rc = cli_fail(flag, "value %g at index %zu: an additive mask holds 0 or -inf only", x,
                          e);
            free(m);
            goto done;
        }
        m[e] = x == -INFINITY;
    }
    *out = m;
done:
    la_array_free(&a);
    return rc;
}

/* --mask: (N, M) or (B·H, N, M); --key-padding-mask: (B, M). */
int attend_read_masks(const attend_args *a, size_t batch, size_t heads, size_t n, size_t m,
                      uint8_t **mask, int *per_head, uint8_t **key_mask)
{
    char want[160];
    size_t which;
    int rc;
    if (a->mask) {
        const size_t two[][3] = {{n, m, 0}}, three[][3] = {{batch * heads, n, m}};
        snprintf(want, sizeof want, "(N, M) = (%zu, %zu) or (B*H, N, M) = (%zu, %zu, %zu)", n, m,
                 batch * heads, n, m);
        la_array probe;
        if ((rc = arrays_read_npy(a->mask, &probe))) return rc;
        const int ndim = probe.ndim == 3 ? 3 : 2;
        la_array_free(&probe);
        if ((rc = read_mask("--mask", a->mask, ndim, 1, ndim == 3 ? three : two, want, mask,
                            &which)))
            return rc;
        *per_head = ndim == 3;
    }
    if (a->key_padding_mask) {
        const size_t shape[][3] = {{batch, m, 0}};
        snprintf(want, sizeof want, "(B, M) = (%zu, %zu)", batch, m);
        if ((rc = read_mask("--key-padding-mask", a->key_padding_mask, 2, 1, shape, want, key_mask,
                            &which)))
            return rc;
    }
    return 0;
}

/* dispatch.c — the generic attention entry points of linattn.h: one function per
 * operation, the kernel and the element type as arguments, dispatched to the registry
 * row's per-dtype function (kernels.h). Arrays laid out with strides (la_strides) are
 * copied into contiguous scratch first and the outputs copied back, so a kernel sees the
 * contiguous (B, H, rows, d) layout, unless its row reads the strides itself
 * (la_kernel_fns.reads_strides: the fused softmax forward). */
#include "attention/attention_internal.h"
#include "attention/linear_internal.h"

#include <stdlib.h>
#include <string.h>

static size_t dtype_size(la_dtype dtype)
{
    return dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
}

static bool dtype_ok(la_dtype dtype)
{
    return dtype == LA_FLOAT32 || dtype == LA_FLOAT64;
}

/* The row of kernel when it accepts p's causal flag (a NULL p is the kernel's to refuse). */
static const la_kernel_info *row_for(la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || (p && !la_causal_allowed(info, p->causal))) return NULL;
    return info;
}

/* The row of kernel when it has a backward and accepts p's causal flag. */
static const la_kernel_info *backward_row(la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *info = row_for(kernel, p);
    return info && (info->caps & LA_CAP_BACKWARD) ? info : NULL;
}

/* Whether the row gives each row's log-sum-exp (LA_CAP_LSE) and its lse entry points. */
static bool has_lse(const la_kernel_info *info)
{
    return (info->caps & LA_CAP_LSE) && info->fns->lse_f32 && info->fns->lse_f64 &&
           info->fns->backward_lse_f32 && info->fns->backward_lse_f64;
}

/* Whether the row's forward reads this call's strides itself (la_kernel_fns.reads_strides),
 * so nothing is copied. */
static bool reads_strides(const la_kernel_info *info, const la_problem *p, la_dtype dtype)
{
    return info->fns->reads_strides && info->fns->reads_strides(p, dtype);
}

/* ---------------------------------------------------------------- strided arrays */

/* One array of a call: a (B, H, rows, d) array laid out as *s says, read (in) or written
 * (out) by the kernel. at is what the kernel gets: the caller's pointer, or the
 * contiguous copy in scratch. */
typedef struct {
    const void *caller;
    const la_strides *s;
    size_t rows, d;
    bool out;
    void *at;
} staged;

/* Whether the array needs a copy: strides given and not the contiguous layout's. */
static bool needs_copy(const la_problem *p, const staged *a)
{
    if (la_strides_contiguous(a->s)) return false;
    return !(a->s->row == a->d && a->s->head == a->rows * a->d &&
             (p->batch == 1 || a->s->batch == p->heads * a->rows * a->d));
}

/* Copies a (B, H, rows, d) array between the strided layout s and the contiguous one. */
static void copy_rows(const la_problem *p, const la_strides *s, size_t rows, size_t d, size_t es,
                      char *strided, char *contiguous, bool to_contiguous)
{
    for (size_t b = 0; b < p->batch; b++)
        for (size_t h = 0; h < p->heads; h++)
            for (size_t r = 0; r < rows; r++) {
                char *x = strided + (b * s->batch + h * s->head + r * s->row) * es;
                char *y = contiguous + (((b * p->heads + h) * rows + r) * d) * es;
                if (to_contiguous)
                    memcpy(y, x, d * es);
                else
                    memcpy(x, y, d * es);
            }
}

/* Makes every array of a[0..n) contiguous for the kernel: the strided ones copied into
 * one block of scratch (*block, the caller frees it), its bytes taken off kp's
 * workspace_limit (LA_EBUDGET when they pass it). kp is p with contiguous strides. */
static la_status stage_arrays(const la_problem *p, la_dtype dtype, staged *a, int n, la_problem *kp,
                              void **block)
{
    *kp = *p;
    kp->stride_q = kp->stride_k = kp->stride_v = kp->stride_out = (la_strides){0, 0, 0};
    *block = NULL;
    const size_t es = dtype_size(dtype);
    size_t bytes = 0, offset[8];
    for (int i = 0; i < n; i++) {
        a[i].at = (void *)a[i].caller;
        offset[i] = bytes;
        if (!needs_copy(p, &a[i])) continue;
        if (!a[i].caller) return LA_EINVAL;
        size_t elements, size; /* la_problem_check bounded B·H·rows·d·8 */
        elements = p->batch * p->heads * a[i].rows * a[i].d;
        size = elements * es;
        if (size > SIZE_MAX - bytes) return LA_EOVERFLOW;
        bytes += size;
    }
    if (bytes == 0) return LA_OK;
    if (bytes > p->workspace_limit) return LA_EBUDGET;
    kp->workspace_limit -= bytes;
    char *scratch = malloc(bytes);
    if (!scratch) return LA_ENOMEM;
    for (int i = 0; i < n; i++) {
        if (!needs_copy(p, &a[i])) continue;
        a[i].at = scratch + offset[i];
        if (!a[i].out)
            copy_rows(p, a[i].s, a[i].rows, a[i].d, es, (char *)a[i].caller, a[i].at, true);
    }
    *block = scratch;
    return LA_OK;
}

/* After a successful call: the outputs copied from scratch to the caller's layout. */
static void unstage_outputs(const la_problem *p, la_dtype dtype, const staged *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].out && a[i].at != a[i].caller)
            copy_rows(p, a[i].s, a[i].rows, a[i].d, dtype_size(dtype), (char *)a[i].caller, a[i].at,
                      false);
}

/* Whether a call on p takes the contiguous path: no problem, or every stride contiguous
 * (the strided path checks p first, so its strides are valid before they are walked). */
static bool all_contiguous(const la_problem *p)
{
    return !p || (la_strides_contiguous(&p->stride_q) && la_strides_contiguous(&p->stride_k) &&
                  la_strides_contiguous(&p->stride_v) && la_strides_contiguous(&p->stride_out));
}

/* ---------------------------------------------------------------- forward */

typedef enum { CALL_FORWARD, CALL_LSE, CALL_WEIGHTS } forward_kind;

static la_status forward_call(forward_kind kind, const la_kernel_info *info, const la_problem *p,
                              la_dtype dtype, const void *q, const void *k, const void *v,
                              void *out, void *lse)
{
    const bool f32 = dtype == LA_FLOAT32;
    switch (kind) {
    case CALL_FORWARD:
        return f32 ? info->fns->forward_f32(p, q, k, v, out)
                   : info->fns->forward_f64(p, q, k, v, out);
    case CALL_LSE:
        return f32 ? info->fns->lse_f32(p, q, k, v, out, lse)
                   : info->fns->lse_f64(p, q, k, v, out, lse);
    case CALL_WEIGHTS:
        return f32 ? info->fns->weights_f32(p, q, k, out) : info->fns->weights_f64(p, q, k, out);
    }
    return LA_EINVAL;
}

static la_status forward(forward_kind kind, la_kernel kernel, const la_problem *p, la_dtype dtype,
                         const void *q, const void *k, const void *v, void *out, void *lse)
{
    const la_kernel_info *info = row_for(kernel, p);
    if (!info || !dtype_ok(dtype)) return LA_EINVAL;
    if (kind == CALL_LSE && (!has_lse(info) || !lse)) return LA_EINVAL;
    if (kind == CALL_WEIGHTS && !(info->caps & LA_CAP_WEIGHTS)) return LA_EINVAL;
    if (all_contiguous(p) || (kind != CALL_WEIGHTS && reads_strides(info, p, dtype)))
        return forward_call(kind, info, p, dtype, q, k, v, out, lse);
    la_status s = la_problem_check(p);
    if (s != LA_OK) return s;
    /* the attention matrix is (B, H, N, M), contiguous: only q and k are staged */
    staged a[] = {
        {q, &p->stride_q, p->n_queries, p->d_k, false, NULL},
        {k, &p->stride_k, p->n_keys, p->d_k, false, NULL},
        {v, &p->stride_v, p->n_keys, p->d_v, false, NULL},
        {out, &p->stride_out, p->n_queries, p->d_v, true, NULL},
    };
    const int n = kind == CALL_WEIGHTS ? 2 : 4;
    la_problem kp;
    void *block;
    s = stage_arrays(p, dtype, a, n, &kp, &block);
    if (s == LA_OK)
        s = forward_call(kind, info, &kp, dtype, a[0].at, a[1].at,
                         kind == CALL_WEIGHTS ? v : a[2].at, kind == CALL_WEIGHTS ? out : a[3].at,
                         lse);
    if (s == LA_OK) unstage_outputs(p, dtype, a, n);
    free(block);
    return s;
}

la_status la_attention(la_kernel kernel, const la_problem *p, la_dtype dtype, const void *q,
                       const void *k, const void *v, void *out)
{
    return forward(CALL_FORWARD, kernel, p, dtype, q, k, v, out, NULL);
}

la_status la_attention_lse(la_kernel kernel, const la_problem *p, la_dtype dtype, const void *q,
                           const void *k, const void *v, void *out, void *lse)
{
    return forward(CALL_LSE, kernel, p, dtype, q, k, v, out, lse);
}

la_status la_attention_weights(la_kernel kernel, const la_problem *p, la_dtype dtype, const void *q,
                               const void *k, void *out)
{
    return forward(CALL_WEIGHTS, kernel, p, dtype, q, k, NULL, out, NULL);
}

/* ---------------------------------------------------------------- backward */

static la_status backward_call(const la_kernel_info *info, const la_problem *p, la_dtype dtype,
                               const void *const *x, const void *lse, void *d_q, void *d_k,
                               void *d_v)
{
    if (lse) /* a row with log-sum-exps (la_attention_backward checked): the given ones */
        return dtype == LA_FLOAT32 ? info->fns->backward_lse_f32(p, x[0], x[1], x[2], x[3], lse,
                                                                 x[4], d_q, d_k, d_v)
                                   : info->fns->backward_lse_f64(p, x[0], x[1], x[2], x[3], lse,
                                                                 x[4], d_q, d_k, d_v);
    return dtype == LA_FLOAT32
               ? info->fns->backward_f32(p, x[0], x[1], x[2], x[3], x[4], d_q, d_k, d_v)
               : info->fns->backward_f64(p, x[0], x[1], x[2], x[3], x[4], d_q, d_k, d_v);
}

la_status la_attention_backward(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                const void *q, const void *k, const void *v, const void *out,
                                const void *lse, const void *d_out, void *d_q, void *d_k, void *d_v)
{
    const la_kernel_info *info = backward_row(kernel, p);
    if (!info || !dtype_ok(dtype)) return LA_EINVAL;
    if (lse && !has_lse(info)) return LA_EINVAL;
    if (all_contiguous(p)) {
        const void *x[] = {q, k, v, out, d_out};
        return backward_call(info, p, dtype, x, lse, d_q, d_k, d_v);
    }
    la_status s = la_problem_check(p);
    if (s != LA_OK) return s;
    /* the gradients are laid out as their forward arrays: d_out as out, d_q as q, ... */
    staged a[] = {
        {q, &p->stride_q, p->n_queries, p->d_k, false, NULL},
        {k, &p->stride_k, p->n_keys, p->d_k, false, NULL},
        {v, &p->stride_v, p->n_keys, p->d_v, false, NULL},
        {out, &p->stride_out, p->n_queries, p->d_v, false, NULL},
        {d_out, &p->stride_out, p->n_queries, p->d_v, false, NULL},
        {d_q, &p->stride_q, p->n_queries, p->d_k, true, NULL},
        {d_k, &p->stride_k, p->n_keys, p->d_k, true, NULL},
        {d_v, &p->stride_v, p->n_keys, p->d_v, true, NULL},
    };
    la_problem kp;
    void *block;
    s = stage_arrays(p, dtype, a, 8, &kp, &block);
    if (s == LA_OK) {
        const void *x[] = {a[0].at, a[1].at, a[2].at, a[3].at, a[4].at};
        s = backward_call(info, &kp, dtype, x, lse, a[5].at, a[6].at, a[7].at);
    }
    if (s == LA_OK) unstage_outputs(p, dtype, a, 8);
    free(block);
    return s;
}

/* ---------------------------------------------------------------- references */

la_status la_ref_attention(la_kernel kernel, const la_problem *p, const double *q, const double *k,
                           const double *v, double *out)
{
    const la_kernel_info *info = row_for(kernel, p);
    if (!info || !all_contiguous(p)) return LA_EINVAL;
    return info->fns->reference(p, q, k, v, out);
}

la_status la_ref_attention_backward(la_kernel kernel, const la_problem *p, const double *q,
                                    const double *k, const double *v, const double *out,
                                    const double *d_out, double *d_q, double *d_k, double *d_v)
{
    const la_kernel_info *info = backward_row(kernel, p);
    if (!info || !all_contiguous(p)) return LA_EINVAL;
    return info->fns->reference_backward(p, q, k, v, out, d_out, d_q, d_k, d_v);
}

/* ---------------------------------------------------------------- drawn tensors, positions */

/* The tensors a row draws, by the parameters it reads (la_kernel_info.params). */
la_status la_kernel_draw(la_kernel kernel, const la_problem *p, double *first, double *second)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || !p || !first || la_params_check(p->params) != LA_OK) return LA_EINVAL;
    const unsigned params = info->params;
    if (params & LA_PARAM_PROJ) {
        const la_linformer_params lp = la_linformer_params_of(p);
        if (!second) return LA_EINVAL;
        return la_linformer_projections(lp.proj_rank, p->n_keys, lp.seed, first, second);
    }
    if (params & LA_PARAM_FEATURES) {
        if (second) return LA_EINVAL;
        return la_favor_features(la_favor_params_of(p).features, p->d_k, la_favor_params_of(p).seed,
                                 first);
    }
    if (params & LA_PARAM_SCORE_WEIGHTS) { /* additive also draws v (LA_PARAM_SCORE_DIM) */
        if ((second != NULL) != ((params & LA_PARAM_SCORE_DIM) != 0)) return LA_EINVAL;
        return la_score_weights(kernel, p->d_k, la_score_params_of(p).score_dim,
                                la_score_params_of(p).seed, first, second);
    }
    if (params & LA_PARAM_RELATIVE) {
        const la_relative_params rp = la_relative_params_of(p);
        if (!second) return LA_EINVAL;
        return la_relative_embeddings(rp.max_distance, p->d_k, p->d_v, rp.seed, first, second);
    }
    return LA_EINVAL;
}

la_status la_rotary_apply(la_dtype dtype, size_t rows, size_t n, size_t d, size_t first_pos,
                          void *x)
{
    if (!dtype_ok(dtype)) return LA_EINVAL;
    return dtype == LA_FLOAT32 ? la_rotary_apply_f32(rows, n, d, first_pos, x)
                               : la_rotary_apply_f64(rows, n, d, first_pos, x);
}

la_status la_linear_attention_rotary(const la_problem *p, la_dtype dtype, size_t q_first_pos,
                                     size_t k_first_pos, const void *q, const void *k,
                                     const void *v, void *out)
{
    if (!dtype_ok(dtype) || !all_contiguous(p)) return LA_EINVAL;
    return dtype == LA_FLOAT32
               ? la_linear_attention_rotary_f32(p, q_first_pos, k_first_pos, q, k, v, out)
               : la_linear_attention_rotary_f64(p, q_first_pos, k_first_pos, q, k, v, out);
}

/* ---------------------------------------------------------------- step API */

/* The state of a row that steps (LA_CAP_STEP): FAVOR+'s random features when the row
 * reads them (LA_PARAM_FEATURES), else φ. */
la_status la_linear_state_create(la_linear_state **st, la_kernel kernel, const la_problem *p,
                                 la_dtype dtype)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!st || !p || !info || !(info->caps & LA_CAP_STEP)) return LA_EINVAL;
    if (la_params_check(p->params) != LA_OK) return LA_EINVAL;
    size_t heads;
    if (!la_mul_ok(p->batch, p->heads, &heads)) return LA_EOVERFLOW;
    if (info->params & LA_PARAM_FEATURES) {
        const la_favor_params fp = la_favor_params_of(p);
        return la_favor_state_create(st, dtype, heads, p->d_k, p->d_v, fp.features, fp.seed,
                                     fp.proj_w, p->eps);
    }
    return la_linear_state_create_phi(st, dtype, heads, p->d_k, p->d_v, p->feature_map, p->eps);
}

la_status la_linear_step(la_linear_state *st, const void *q_t, const void *k_t, const void *v_t,
                         void *y_t)
{
    if (!st) return LA_EINVAL;
    return st->dtype == LA_FLOAT32 ? la_linear_step_f32(st, q_t, k_t, v_t, y_t)
                                   : la_linear_step_f64(st, q_t, k_t, v_t, y_t);
}

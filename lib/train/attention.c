/* attention.c — multi-head self-attention for training: the forward keeping the heads'
 * Q, K, V, O (and log-sum-exp where the kernel offers it) and the backward through
 * la_attention_backward, per element type (train_layers.h). Shapes, R = B·N, D = H·d_h:
 *   x, y, dx, dy (B, N, D); in_w (3D, D), in_b (3D); out_w (D, D), out_b (D)
 *   q, k, v, o (B, H, N, d_h); lse (B, H, N)
 *   forward   [Q K V] (R, 3D) = x W_inᵀ + b_in, scattered to heads; O = attention(Q, K, V);
 *             cat (R, D) = O gathered from heads; y = cat W_outᵀ + b_out
 *   backward  dcat = dy W_out, dW_out += dyᵀ cat, db_out += Σ dy; dO = dcat scattered;
 *             dQ, dK, dV = la_attention_backward; dqkv (R, 3D) gathered;
 *             dx = dqkv W_in, dW_in += dqkvᵀ x, db_in += Σ dqkv */
#include "core/real_typed.h"

#include "core/internal.h"
#include "train/train_layers.h"

#include <stdlib.h>

/* Checks the problem and kernel; *rd = R·D elements. */
static la_status check(la_kernel kernel, const la_problem *p, size_t *rd)
{
    if (!p) return LA_EINVAL;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    const la_kernel_info *row = la_kernel_get(kernel);
    if (!row || !(row->caps & LA_CAP_BACKWARD) || p->n_queries != p->n_keys || p->d_k != p->d_v)
        return LA_EINVAL;
    size_t n;
    if (!la_mul_ok(p->batch, p->heads, &n) || !la_mul_ok(n, p->n_queries, &n) ||
        !la_mul_ok(n, p->d_k, &n) || n > SIZE_MAX / 8 / sizeof(REAL))
        return LA_EOVERFLOW;
    *rd = n;
    return LA_OK;
}

/* Columns [part·D + h·d_h, part·D + (h+1)·d_h) of the (R, width) matrix m, row b·N + i,
 * are row i of head (b, h) of t (B, H, N, d_h); to_heads copies m into t, else t into m. */
static void move_heads(const la_problem *p, REAL *m, size_t width, size_t part, REAL *t,
                       int to_heads)
{
    const size_t B = p->batch, H = p->heads, N = p->n_queries, dh = p->d_k, D = H * dh;
    const int threads = la_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (B * N * D > 65536)
    for (size_t r = 0; r < B * N; r++) {
        const size_t b = r / N, i = r % N;
        for (size_t h = 0; h < H; h++) {
            REAL *row = m + r * width + part * D + h * dh, *head = t + ((b * H + h) * N + i) * dh;
            for (size_t c = 0; c < dh; c++)
                if (to_heads)
                    head[c] = row[c];
                else
                    row[c] = head[c];
        }
    }
}

static la_status forward(la_kernel kernel, const la_problem *p, const REAL *x, const REAL *in_w,
                         const REAL *in_b, const REAL *out_w, const REAL *out_b, REAL *q, REAL *k,
                         REAL *v, REAL *o, REAL *lse, REAL *y)
{
    size_t rd;
    la_status st = check(kernel, p, &rd);
    if (st != LA_OK) return st;
    const int has_lse = (la_kernel_get(kernel)->caps & LA_CAP_LSE) != 0;
    if (!x || !in_w || !in_b || !out_w || !out_b || !q || !k || !v || !o || !y ||
        (has_lse != (lse != NULL)))
        return LA_EINVAL;
    const size_t R = p->batch * p->n_queries, D = p->heads * p->d_k;
    REAL *qkv = malloc(3 * rd * sizeof *qkv);
    if (!qkv) return LA_ENOMEM;
    st = FN(la_train_dense_forward)(R, D, 3 * D, x, in_w, in_b, qkv);
    if (st == LA_OK) {
        move_heads(p, qkv, 3 * D, 0, q, 1);
        move_heads(p, qkv, 3 * D, 1, k, 1);
        move_heads(p, qkv, 3 * D, 2, v, 1);
        st = lse ? la_attention_lse(kernel, p, REAL_DTYPE, q, k, v, o, lse)
                 : la_attention(kernel, p, REAL_DTYPE, q, k, v, o);
    }
    if (st == LA_OK) {
        move_heads(p, qkv, D, 0, o, 0); /* cat (R, D) in qkv's first third */
        st = FN(la_train_dense_forward)(R, D, D, qkv, out_w, out_b, y);
    }
    free(qkv);
    return st;
}

static la_status backward(la_kernel kernel, const la_problem *p, const REAL *x, const REAL *in_w,
                          const REAL *out_w, const REAL *q, const REAL *k, const REAL *v,
                          const REAL *o, const REAL *lse, const REAL *dy, REAL *dx, REAL *d_in_w,
                          REAL *d_in_b, REAL *d_out_w, REAL *d_out_b)
{
    size_t rd;
    la_status st = check(kernel, p, &rd);
    if (st != LA_OK) return st;
    const int has_lse = (la_kernel_get(kernel)->caps & LA_CAP_LSE) != 0;
    if (!x || !in_w || !out_w || !q || !k || !v || !o || !dy || !d_in_w || !d_in_b || !d_out_w ||
        !d_out_b || (has_lse != (lse != NULL)))
        return LA_EINVAL;
    const size_t R = p->batch * p->n_queries, D = p->heads * p->d_k;
    /* scratch: big (R, 3D) holds cat then dqkv; dcat, d_o (R·D); dq, dk, dv (R·D each) */
    REAL *big = malloc(8 * rd * sizeof *big);
    if (!big) return LA_ENOMEM;
    REAL *dcat = big + 3 * rd, *d_o = dcat + rd, *dq = d_o + rd, *dk = dq + rd, *dv = dk + rd;
    move_heads(p, big, D, 0, (REAL *)o, 0);
    st = FN(la_train_dense_backward)(R, D, D, big, out_w, dy, dcat, d_out_w, d_out_b);
    if (st == LA_OK) {
        move_heads(p, dcat, D, 0, d_o, 1);
        st = la_attention_backward(kernel, p, REAL_DTYPE, q, k, v, o, lse, d_o, dq, dk, dv);
    }
    if (st == LA_OK) {
        move_heads(p, big, 3 * D, 0, dq, 0);
        move_heads(p, big, 3 * D, 1, dk, 0);
        move_heads(p, big, 3 * D, 2, dv, 0);
        st = FN(la_train_dense_backward)(R, D, 3 * D, x, in_w, big, dx, d_in_w, d_in_b);
    }
    free(big);
    return st;
}

#if REAL_IS_F32
la_status la_train_mha_forward_f32(la_kernel kernel, const la_problem *p, const float *x,
                                   const float *in_w, const float *in_b, const float *out_w,
                                   const float *out_b, float *q, float *k, float *v, float *o,
                                   float *lse, float *y)
{
    return forward(kernel, p, x, in_w, in_b, out_w, out_b, q, k, v, o, lse, y);
}
la_status la_train_mha_backward_f32(la_kernel kernel, const la_problem *p, const float *x,
                                    const float *in_w, const float *out_w, const float *q,
                                    const float *k, const float *v, const float *o,
                                    const float *lse, const float *dy, float *dx, float *d_in_w,
                                    float *d_in_b, float *d_out_w, float *d_out_b)
{
    return backward(kernel, p, x, in_w, out_w, q, k, v, o, lse, dy, dx, d_in_w, d_in_b, d_out_w,
                    d_out_b);
}
#else
la_status la_train_mha_forward_f64(la_kernel kernel, const la_problem *p, const double *x,
                                   const double *in_w, const double *in_b, const double *out_w,
                                   const double *out_b, double *q, double *k, double *v, double *o,
                                   double *lse, double *y)
{
    return forward(kernel, p, x, in_w, in_b, out_w, out_b, q, k, v, o, lse, y);
}
la_status la_train_mha_backward_f64(la_kernel kernel, const la_problem *p, const double *x,
                                    const double *in_w, const double *out_w, const double *q,
                                    const double *k, const double *v, const double *o,
                                    const double *lse, const double *dy, double *dx, double *d_in_w,
                                    double *d_in_b, double *d_out_w, double *d_out_b)
{
    return backward(kernel, p, x, in_w, out_w, q, k, v, o, lse, dy, dx, d_in_w, d_in_b, d_out_w,
                    d_out_b);
}
#endif

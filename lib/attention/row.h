/* row.h — a registry row's per-dtype entry points (la_kernel_info.fns): what
 * lib/attention/dispatch.c calls behind the generic functions of linattn.h, after it has
 * checked the problem, the dtype, the causal rule, the masks and the strides. Each kernel
 * file defines its rows' la_kernel_fns beside its la_kernel_info. White-box tests call them
 * to reach past the generic checks. */
#ifndef LA_ATTENTION_ROW_H
#define LA_ATTENTION_ROW_H

#include "linattn.h"

typedef la_status (*la_forward_f32_fn)(const la_problem *p, const float *q, const float *k,
                                       const float *v, float *out);
typedef la_status (*la_forward_f64_fn)(const la_problem *p, const double *q, const double *k,
                                       const double *v, double *out);
/* Gradients through one call given d_out = ∂L/∂out (la_attention_backward). */
typedef la_status (*la_backward_f32_fn)(const la_problem *p, const float *q, const float *k,
                                        const float *v, const float *out, const float *d_out,
                                        float *d_q, float *d_k, float *d_v);
typedef la_status (*la_backward_f64_fn)(const la_problem *p, const double *q, const double *k,
                                        const double *v, const double *out, const double *d_out,
                                        double *d_q, double *d_k, double *d_v);
typedef la_status (*la_lse_f32_fn)(const la_problem *p, const float *q, const float *k,
                                   const float *v, float *out, float *lse);
typedef la_status (*la_lse_f64_fn)(const la_problem *p, const double *q, const double *k,
                                   const double *v, double *out, double *lse);
typedef la_status (*la_backward_lse_f32_fn)(const la_problem *p, const float *q, const float *k,
                                            const float *v, const float *out, const float *lse,
                                            const float *d_out, float *d_q, float *d_k, float *d_v);
typedef la_status (*la_backward_lse_f64_fn)(const la_problem *p, const double *q, const double *k,
                                            const double *v, const double *out, const double *lse,
                                            const double *d_out, double *d_q, double *d_k,
                                            double *d_v);
/* The kernel's FLOP fields and workspace_bytes of *out for a problem la_attention_cost
 * has already checked; call la_attention_cost, which adds the totals. */
typedef la_status (*la_cost_fn)(const la_problem *p, la_dtype dtype, la_cost *out);
/* The attention matrix out (B, H, N, M) of q and k (la_attention_weights). */
typedef la_status (*la_weights_f32_fn)(const la_problem *p, const float *q, const float *k,
                                       float *out);
typedef la_status (*la_weights_f64_fn)(const la_problem *p, const double *q, const double *k,
                                       double *out);

struct la_kernel_fns {
    int (*reads_strides)(const la_problem *, la_dtype); /* nonzero: reads p's strides itself */
    la_forward_f32_fn forward_f32;
    la_forward_f64_fn forward_f64;
    la_forward_f64_fn reference; /* the float64 oracle (la_ref_*) */
    la_cost_fn cost;
    la_backward_f32_fn backward_f32;         /* NULL without LA_CAP_BACKWARD. softmax: */
    la_backward_f64_fn backward_f64;         /* la_softmax_attention_backward_*, lse NULL */
    la_backward_f64_fn reference_backward;   /* the float64 oracle of the backward (la_ref_*) */
    la_cost_fn backward_cost;                /* the backward's FLOP fields and workspace */
    la_weights_f32_fn weights_f32;           /* NULL without LA_CAP_WEIGHTS. Its N×M */
    la_weights_f64_fn weights_f64;           /* attention matrix (la_attention_weights) */
    la_lse_f32_fn lse_f32;                   /* NULL without LA_CAP_LSE, else the forward */
    la_lse_f64_fn lse_f64;                   /* with lse (la_attention_lse) and the */
    la_backward_lse_f32_fn backward_lse_f32; /* backward reading it */
    la_backward_lse_f64_fn backward_lse_f64;
};
typedef struct la_kernel_fns la_kernel_fns;

#endif

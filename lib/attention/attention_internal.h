/* attention_internal.h — what the attention kernels share with the registry
 * (registry.c) and the cost model (cost.c). Internal, not installed. */
#ifndef LA_ATTENTION_INTERNAL_H
#define LA_ATTENTION_INTERNAL_H

#include "attention/row.h"
#include "core/internal.h"

/* The cost functions of the registry rows (la_cost_fn), each beside its kernel: the
 * FLOP fields and workspace_bytes of one call on a checked problem. */
la_status la_softmax_cost(const la_problem *p, la_dtype dtype, la_cost *out); /* softmax.c */
la_status la_softmax_materialized_cost(const la_problem *p, la_dtype dtype,
                                       la_cost *out);                        /* softmax.c */
la_status la_hard_cost(const la_problem *p, la_dtype dtype, la_cost *out);   /* softmax.c */
la_status la_linear_cost(const la_problem *p, la_dtype dtype, la_cost *out); /* linear.c */
la_status la_linear_recurrent_cost(const la_problem *p, la_dtype dtype,
                                   la_cost *out);                               /* linear.c */
la_status la_linformer_cost(const la_problem *p, la_dtype dtype, la_cost *out); /* linformer.c */
la_status la_local_cost(const la_problem *p, la_dtype dtype, la_cost *out);     /* local.c */
la_status la_local_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out);  /* local.c */
la_status la_favor_cost(const la_problem *p, la_dtype dtype, la_cost *out);           /* favor.c */
la_status la_favor_recurrent_cost(const la_problem *p, la_dtype dtype, la_cost *out); /* favor.c */
la_status la_favor_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out);  /* favor.c */
la_status la_general_cost(const la_problem *p, la_dtype dtype, la_cost *out);         /* scores.c */
la_status la_additive_cost(const la_problem *p, la_dtype dtype, la_cost *out);        /* scores.c */
la_status la_cosine_cost(const la_problem *p, la_dtype dtype, la_cost *out);          /* scores.c */
la_status la_relative_cost(const la_problem *p, la_dtype dtype, la_cost *out); /* relative.c */

/* The FLOPs of one head of a batch entry that leaves m keys visible (la_keys_in_length),
 * in the flops_* fields of *head (zeroed before the call). A closed form, O(1): the
 * model answers for any N (la_problem_check's limit) without looping over queries. */
typedef void (*la_head_flops_fn)(const la_problem *p, size_t m, la_cost *head);

/* Adds heads × per_head(p, m_b) over every batch entry b to the flops_* fields of *c
 * (cost.c): O(1) without key lengths (every entry sees M keys), O(batch) with them. */
void la_cost_sum_heads(const la_problem *p, la_head_flops_fn per_head, la_cost *c);

/* Keys of batch entry b that some query sees under causal (either alignment) and key
 * lengths: [0, la_keys_seen), those the last query sees (range.c). Every kernel reads at
 * most these; the range check scans only these. */
size_t la_keys_seen(const la_problem *p, size_t b);
/* The largest la_keys_seen over the batch entries: O(1) without key lengths. */
size_t la_keys_seen_max(const la_problem *p);

/* Whether the values of a kernel of this family on (q, k, v), laid out as p's strides say,
 * stay within its element type (range.c: one scan of max |q| and of max |k|, |v| over the
 * keys seen, and the bounds it documents). The
 * kernels call it after checking p and the pointers, before writing anything, and
 * return LA_ERANGE when it is false. */
typedef enum { LA_RANGE_SOFTMAX, LA_RANGE_HARD, LA_RANGE_LINEAR } la_range_kind;
bool la_range_ok_f32(la_range_kind kind, const la_problem *p, const float *q, const float *k,
                     const float *v);
bool la_range_ok_f64(la_range_kind kind, const la_problem *p, const double *q, const double *k,
                     const double *v);
/* The same check on maxima already taken, a = max|q|, b = max|k|, c = max|v| over the
 * keys seen (+inf for a non-finite input): for a kernel that takes them on its own loads (decoding,
 * engine.c) or bounds them itself (Taylor's features) and checks before it writes its output. */
bool la_range_fits_f32(la_range_kind kind, const la_problem *p, double a, double b, double c);
bool la_range_fits_f64(la_range_kind kind, const la_problem *p, double a, double b, double c);

/* The linear backward passes' range rule (range.c): the largest bound r on 1/den (over
 * the queries whose den is not 0) that keeps every value they form within the element
 * type, from one scan of q, k, v, out and d_out; +inf when one of them is not finite.
 * A backward returns LA_ERANGE, having written nothing, when max(r, 1) exceeds it. */
double la_range_linear_backward_limit_f32(const la_problem *p, const float *q, const float *k,
                                          const float *v, const float *out, const float *d_out);
double la_range_linear_backward_limit_f64(const la_problem *p, const double *q, const double *k,
                                          const double *v, const double *out, const double *d_out);

/* The backward cost functions of the linear rows (la_cost_fn; linear.c). */
la_status la_linear_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out);
la_status la_linear_recurrent_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out);
/* max |x[i]| over n elements, +inf when one is not finite (range.c): the scan above, for
 * the backward passes' own bounds. */
double la_max_abs_f32(const float *x, size_t n);
double la_max_abs_f64(const double *x, size_t n);
/* Whether all n doubles of a caller's tensor are finite (Linformer's E and F, relative
 * positions' a^K and a^V), max |x| into *max_abs; not a range scan (not counted as one).
 * Vectorized: Σ x·0 is 0 for finite entries and NaN from an inf or a NaN. */
static inline bool la_finite_max_abs(const double *x, size_t n, double *max_abs)
{
    double m = 0, zero = 0;
#pragma omp simd reduction(max : m) reduction(+ : zero)
    for (size_t i = 0; i < n; i++) {
        const double a = x[i] < 0 ? -x[i] : x[i];
        m = a > m ? a : m;
        zero += x[i] * 0;
    }
    *max_abs = m;
    return zero == 0;
}
/* The same over the keys seen (la_keys_seen) of a contiguous (B, H, M, d) array. */
double la_max_abs_seen_f32(const la_problem *p, const float *x, size_t d);
double la_max_abs_seen_f64(const la_problem *p, const double *x, size_t d);
/* max |x| over a (B, H, rows, d) array laid out as *s (all zero: contiguous, la_max_abs). */
double la_max_abs_layout_f32(const la_problem *p, const la_strides *s, const float *x, size_t rows,
                             size_t d);
double la_max_abs_layout_f64(const la_problem *p, const la_strides *s, const double *x, size_t rows,
                             size_t d);

/* Hard attention's argmax over the visible keys of query rows i0 .. i0+rows-1 of one head
 * hd = b·H + h (its batch entry b = hd / H), ties to the lowest key, SIZE_MAX for a row that sees
 * none (softmax.c): the forward's own choice, bit for bit, for the backward. qh: (N, d_k), kh:
 * (M, d_k); s: LA_SOFTMAX_Q_BLOCK · LA_SOFTMAX_K_BLOCK scratch, best_score: (LA_SOFTMAX_Q_BLOCK)
 * scratch, best_key: (rows), rows <= LA_SOFTMAX_Q_BLOCK. */
void la_hard_argmax_f32(const la_problem *p, size_t hd, const float *qh, const float *kh, size_t i0,
                        size_t rows, float *s, float *best_score, size_t *best_key);
void la_hard_argmax_f64(const la_problem *p, size_t hd, const double *qh, const double *kh,
                        size_t i0, size_t rows, double *s, double *best_score, size_t *best_key);

/* The fused softmax row's backward (la_backward_*_fn): la_softmax_attention_backward_*
 * with lse = NULL (softmax.c). */
la_status la_softmax_row_backward_f32(const la_problem *p, const float *q, const float *k,
                                      const float *v, const float *out, const float *d_out,
                                      float *d_q, float *d_k, float *d_v);
la_status la_softmax_row_backward_f64(const la_problem *p, const double *q, const double *k,
                                      const double *v, const double *out, const double *d_out,
                                      double *d_q, double *d_k, double *d_v);

/* The keys query i sees, [*lo, *hi), in an entry whose key lengths leave m keys; both never
 * decrease with i (local attention's window: local.c). */
typedef void (*la_key_range_fn)(const la_problem *p, size_t m, size_t i, size_t *lo, size_t *hi);
/* The fused softmax backward (lse computed first) over the keys `keys` gives each query,
 * beside the causal mask, key lengths and general masks: la_softmax_attention_backward_*'s
 * blocks, schedules, range rule and scratch (softmax.c), the blocks no query of a block
 * sees skipped. Local attention's backward. */
la_status la_softmax_range_backward_f32(const la_problem *p, la_key_range_fn keys, const float *q,
                                        const float *k, const float *v, const float *out,
                                        const float *d_out, float *d_q, float *d_k, float *d_v);
la_status la_softmax_range_backward_f64(const la_problem *p, la_key_range_fn keys, const double *q,
                                        const double *k, const double *v, const double *out,
                                        const double *d_out, double *d_q, double *d_k, double *d_v);

/* The backward passes' cost functions (la_cost_fn), beside their kernels. */
la_status la_softmax_backward_cost(const la_problem *p, la_dtype dtype,
                                   la_cost *out); /* softmax.c */
la_status la_softmax_materialized_backward_cost(const la_problem *p, la_dtype dtype,
                                                la_cost *out);                      /* softmax.c */
la_status la_hard_backward_cost(const la_problem *p, la_dtype dtype, la_cost *out); /* softmax.c */

/* Causal bottom-right problems (la_causal_square) on the kernels written for the top-left
 * diagonal (align.c): fn, a top-left kernel, run on the square M × M problem whose row
 * i + M − N is query i, the outputs copied back (zero rows for queries that see no key).
 * p already checked; pointers checked here. Statuses: fn's, and LA_EBUDGET when the
 * padded rows alone pass p->workspace_limit (the kernel gets what remains), LA_ENOMEM. */
la_status la_square_forward_f32(const la_problem *p, la_forward_f32_fn fn, const float *q,
                                const float *k, const float *v, float *out);
la_status la_square_forward_f64(const la_problem *p, la_forward_f64_fn fn, const double *q,
                                const double *k, const double *v, double *out);
la_status la_square_backward_f32(const la_problem *p, la_backward_f32_fn fn, const float *q,
                                 const float *k, const float *v, const float *out,
                                 const float *d_out, float *d_q, float *d_k, float *d_v);
la_status la_square_backward_f64(const la_problem *p, la_backward_f64_fn fn, const double *q,
                                 const double *k, const double *v, const double *out,
                                 const double *d_out, double *d_q, double *d_k, double *d_v);
/* The cost of that: cost on the square problem, plus the padded rows in workspace_bytes. */
la_status la_square_cost(const la_problem *p, la_dtype dtype, la_cost_fn cost, bool backward,
                         la_cost *out);

/* Bytes of one element of dtype (4 or 8). */
static inline size_t la_dtype_size(la_dtype dtype)
{
    return dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
}

#endif

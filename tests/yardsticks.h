/* yardsticks.h — the floor under a backward pass's d_q, d_k and d_v errors.
 *
 * d_q and d_k are sums of terms that can cancel to far below the terms' size: a softmax
 * query that sees one key has dS = 0 exactly, and a linear or FAVOR+ query that sees one
 * key leaves only eps's part. There the kernel's and the reference's roundings, each of
 * order u times the terms, are large beside the gradient's own norm. So d_q and d_k are
 * held to ‖got − ref‖ / max(‖ref‖, TU_BWD_FLOOR · Y), with Y the norm of the terms'
 * sizes (yardsticks.c gives Y per family). A wrong gradient is wrong by about Y, far past
 * the tolerances' 1e-11 and 1e-4 of it; where the gradient does not cancel, ‖ref‖ is the
 * larger and the check is the plain relative one. */
#ifndef LA_TEST_YARDSTICKS_H
#define LA_TEST_YARDSTICKS_H

#include <stdbool.h>

#include "testutil.h"

#define TU_BWD_FLOOR 0.1

/* One backward call's float64 tensors, each in the contiguous (B,H,rows,d) layout. */
typedef struct {
    const double *q, *k, *v, *out, *d_out;
} tu_backward;

/* Y of d_q (y[0]) and d_k (y[1]) for the row's family: softmax (LA_PARAM_SCALE), linear
 * (LA_PARAM_FEATURE_MAP) or FAVOR+ (LA_PARAM_FEATURES); false, with y = {-1, -1}, for a
 * row of none of them. */
bool tu_gradient_yardsticks(const la_kernel_info *info, const la_problem *p, const tu_backward *b,
                            double y[2]);

/* Y of d_v: ‖Aᵀ|d_out|‖, the size of the terms d_v_j = Σ_i A_ij d_out_i sums (a key seen by
 * queries whose d_out cancel, as one key of a key length 1 seen by 17 queries: seed
 * 845514006060), from the row's float64 oracle run on |d_out| (its d_v is Aᵀ|d_out|
 * where the attention weights A are >= 0: softmax, hard, local, linear attention's and
 * FAVOR+'s positive features, Taylor's 1 + s + s²/2). -1 where the row has no oracle of
 * the backward or it fails. */
double tu_dv_yardstick(const la_kernel_info *info, const la_problem *p, const tu_backward *b);

/* ‖y − ref‖ / max(‖ref‖, floor) over n elements (the plain ‖y − ref‖ where both are 0);
 * +inf where y or ref holds an inf or a NaN. A comparison where floor exceeds ‖ref‖ is
 * counted (tu_floor_uses, back to 0 with tu_floor_uses_reset). */
double tu_floored_error_f64(const double *y, const double *ref, size_t n, double floor);
double tu_floored_error_f32(const float *y, const double *ref, size_t n, double floor);
size_t tu_floor_uses(void);
void tu_floor_uses_reset(void);

/* FAVOR+ with eps != 0 is smooth only away from the ties of the maxima its stabilizers
 * take (la_ref_favor_attention: each row's largest projection over the features, and μ_i,
 * the largest g_j = max_l w_l·s·k_j − ‖s·k_j‖²/2 over the keys query i sees): the
 * stabilizers cancel between numerator and denominator but not in eps, so L has a kink
 * where a maximum changes hands, and central differences across it are off (seed
 * 845864446147: d_q by 2e-3). The smallest gap between such a maximum and its runner-up
 * over q and k (p's shape and masks, contiguous (B,H,rows,d)), for a test to draw its
 * inputs again below what its steps can move. */
double tu_favor_kink_gap(const la_problem *p, const double *q, const double *k);

#endif

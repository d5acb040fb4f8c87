/* pass.h — what one timed "call" of a kernel is, for bench's --pass and the sweeps:
 *   forward   la_attention: out from q, k, v;
 *   backward  la_attention_backward alone: d_q, d_k, d_v from q, k, v, the forward's
 *             out (computed once, before the timing) and d_out;
 *   train     forward then backward as one body, the cost of a training step's attention.
 * Its FLOPs and workspace come from the library's one model: la_attention_cost for the
 * forward, la_attention_backward_cost for the backward (less the log-sum-exps a row with
 * LA_CAP_LSE is given here, which that model counts as workspace), both for train. A kernel whose
 * registry row has no backward has no backward or train pass (pass_kernel_has).
 *
 * bench --pass uses them; a sweep adopts them in a few lines (scaling --pass train):
 * pass_cost in place of la_attention_cost, pass_time in place of timer_kernel, d_out
 * (random), d_q, d_k, d_v allocated beside q, k, v and out when pass != PASS_FORWARD, and
 * a column pass (forward|train) in its CSV, which plots/scaling_train.gp reads. */
#ifndef LA_PASS_H
#define LA_PASS_H

#include "linattn.h"
#include "timer.h"

/* Fused softmax's backward and train passes train as FlashAttention-2 does: the forward
 * (la_attention_lse) keeps each row's log-sum-exp, B·H·N floats the pass
 * allocates, and the backward reads it (la_attention_backward); the registry's
 * backward, which has no lse, would first recompute it. The other kernels run the
 * registry's functions. */
typedef enum { PASS_FORWARD = 0, PASS_BACKWARD, PASS_TRAIN, PASS_COUNT } pass_kind;

/* "forward", "backward", "train", NULL: the spellings of --pass (cli_parse_choice). */
extern const char *const pass_kind_names[];

/* Whether kernel can run pass: every kernel runs forward; backward and train need the
 * registry row's backward (LA_CAP_BACKWARD). */
int pass_kernel_has(la_kernel kernel, pass_kind pass);

/* The cost of one call of pass. forward: la_attention_cost's. backward: the backward's.
 * train: the sums of the two's FLOP fields, flops_total and io_bytes, and the larger
 * workspace_bytes (the two calls hold their scratch one after the other). The statuses of
 * the library's cost functions (LA_EINVAL for a pass the kernel does not have). */
la_status pass_cost(la_kernel kernel, const la_problem *p, pass_kind pass, la_dtype dtype,
                    la_cost *out);

/* The float32 arrays of one call, shaped as p says ((B, H, N, d_k) and so on, linattn.h).
 * forward reads q, k, v and writes out; backward also reads d_out and writes d_q, d_k,
 * d_v (and writes out once before timing: the forward it differentiates); train writes
 * all four. The backward arrays may be NULL for the forward pass. */
typedef struct {
    const float *q, *k, *v;
    float *out;
    const float *d_out;
    float *d_q, *d_k, *d_v;
} pass_arrays;

/* Times one call of pass of kernel by the rule (timer_run): the one loop of bench and the
 * sweeps, as timer_kernel is for the forward. Returns the library's status (LA_EINVAL
 * for a pass the kernel does not have, LA_ENOMEM also when the timer could not
 * allocate); *t is set when it is LA_OK. */
la_status pass_time(la_kernel kernel, const la_problem *p, pass_kind pass, const pass_arrays *a,
                    const timer_rule *rule, timer_result *t);

/* One call of a pass: kernel on problem p and arrays a. */
typedef struct {
    la_kernel kernel;
    const la_problem *p;
    pass_kind pass;
    const pass_arrays *a;
} pass_spec;

/* Times n calls, each its own kernel, problem, pass and arrays, interleaved
 * (timer_run_interleaved): bench --goals' pairs, a backward beside its forward, so the
 * ratio of their medians sees one machine. A backward call first runs its forward once,
 * untimed, into its arrays' out: no other call may write that out with other values.
 * status[i] as pass_time's; t[i] is set when it is LA_OK. n <= TIMER_MAX_INTERLEAVED. */
void pass_time_calls(size_t n, const pass_spec *calls, const timer_rule *rule, timer_result *t,
                     la_status *status);

/* Times one call of pass for each of n kernels on the same arrays, interleaved
 * (timer_run_interleaved: round r times kernel 1, 2, ..., then round r + 1), as
 * timer_kernels does for the forward: the sweeps' loop. p: n problems. pass forward or
 * train (backward alone would need each kernel's own forward output: pass_time_calls).
 * status[i] is kernel i's status (LA_EINVAL for a pass it does not have, LA_ENOMEM also
 * when the timer could not allocate); t[i] is set when it is LA_OK. */
void pass_time_interleaved(size_t n, const la_kernel *kernels, const la_problem *p, pass_kind pass,
                           const pass_arrays *a, const timer_rule *rule, timer_result *t,
                           la_status *status);

#endif

/* pass.c — forward, backward and train calls of a kernel: cost and timing (pass.h). */
#include "pass.h"
#include "timer.h"

#include <math.h>
#include <stdlib.h>

const char *const pass_kind_names[] = {"forward", "backward", "train", NULL};

int pass_kernel_has(la_kernel kernel, pass_kind pass)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || pass < PASS_FORWARD || pass >= PASS_COUNT) return 0;
    return pass == PASS_FORWARD || (info->caps & LA_CAP_BACKWARD);
}

/* The backward's cost as pass_run calls it: a kernel with LA_CAP_LSE is given the
 * forward's log-sum-exps (lse_for, below), so the B·H·N of them, rounded up to 64 bytes,
 * that la_attention_backward_cost counts for a caller without them are not workspace. */
static la_status backward_cost(la_kernel kernel, const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_status st = la_attention_backward_cost(kernel, p, dtype, out);
    if (st == LA_OK && (la_kernel_get(kernel)->caps & LA_CAP_LSE))
        out->workspace_bytes -= ceil((double)p->batch * (double)p->heads * (double)p->n_queries *
                                     (dtype == LA_FLOAT32 ? 4.0 : 8.0) / 64) *
                                64;
    return st;
}

la_status pass_cost(la_kernel kernel, const la_problem *p, pass_kind pass, la_dtype dtype,
                    la_cost *out)
{
    if (!pass_kernel_has(kernel, pass)) return LA_EINVAL;
    if (pass == PASS_FORWARD) return la_attention_cost(kernel, p, dtype, out);
    if (pass == PASS_BACKWARD) return backward_cost(kernel, p, dtype, out);
    la_cost f, b;
    la_status st = la_attention_cost(kernel, p, dtype, &f);
    if (st == LA_OK) st = backward_cost(kernel, p, dtype, &b);
    if (st != LA_OK) return st;
    la_cost sum = f;
    sum.flops_qk += b.flops_qk;
    sum.flops_softmax += b.flops_softmax;
    sum.flops_av += b.flops_av;
    sum.flops_phi += b.flops_phi;
    sum.flops_kv += b.flops_kv;
    sum.flops_qs += b.flops_qs;
    sum.flops_normalize += b.flops_normalize;
    sum.flops_total += b.flops_total;
    sum.io_bytes += b.io_bytes;
    sum.bytes_min += b.bytes_min;
    sum.workspace_bytes = fmax(f.workspace_bytes, b.workspace_bytes);
    *out = sum;
    return LA_OK;
}

/* One call of a pass, for the timer. */
typedef struct {
    la_kernel kernel;
    const la_problem *p;
    pass_kind pass;
    const pass_arrays *a;
    la_status status;
    float *lse; /* softmax's backward and train: the forward's log-sum-exps (B, H, N) */
} pass_call;

/* Fused softmax trains as FlashAttention-2 does: the forward keeps each row's
 * log-sum-exp (a kernel with LA_CAP_LSE) and the backward reads it (the registry's backward, given
 * no lse, first recomputes it). The buffer for c, when its kernel and pass use one: LA_OK or
 * LA_ENOMEM. */
static la_status lse_for(pass_call *c)
{
    c->lse = NULL;
    if (!(la_kernel_get(c->kernel)->caps & LA_CAP_LSE) || c->pass == PASS_FORWARD) return LA_OK;
    const size_t rows = c->p->batch * c->p->heads * c->p->n_queries;
    c->lse = malloc((rows ? rows : 1) * sizeof *c->lse);
    return c->lse ? LA_OK : LA_ENOMEM;
}

static la_status forward(const pass_call *c)
{
    if (c->lse)
        return la_attention_lse(c->kernel, c->p, LA_FLOAT32, c->a->q, c->a->k, c->a->v, c->a->out,
                                c->lse);
    return la_attention(c->kernel, c->p, LA_FLOAT32, c->a->q, c->a->k, c->a->v, c->a->out);
}

static la_status backward(const pass_call *c)
{
    const pass_arrays *a = c->a;
    if (c->lse)
        return la_attention_backward(c->kernel, c->p, LA_FLOAT32, a->q, a->k, a->v, a->out, c->lse,
                                     a->d_out, a->d_q, a->d_k, a->d_v);
    return la_attention_backward(c->kernel, c->p, LA_FLOAT32, a->q, a->k, a->v, a->out, NULL,
                                 a->d_out, a->d_q, a->d_k, a->d_v);
}

static int run_pass_call(void *ctx)
{
    pass_call *c = ctx;
    c->status = c->pass == PASS_BACKWARD ? backward(c) : forward(c);
    if (c->status == LA_OK && c->pass == PASS_TRAIN) c->status = backward(c);
    return c->status != LA_OK;
}

void pass_time_calls(size_t n, const pass_spec *calls, const timer_rule *rule, timer_result *t,
                     la_status *status)
{
    pass_call pc[TIMER_MAX_INTERLEAVED];
    timer_body bodies[TIMER_MAX_INTERLEAVED] = {0};
    void *ctxs[TIMER_MAX_INTERLEAVED] = {0};
    int failed[TIMER_MAX_INTERLEAVED];
    size_t idx[TIMER_MAX_INTERLEAVED], m = 0;
    if (n > TIMER_MAX_INTERLEAVED) n = TIMER_MAX_INTERLEAVED;
    for (size_t i = 0; i < n; i++) {
        const pass_spec *s = &calls[i];
        status[i] = LA_OK;
        if (!pass_kernel_has(s->kernel, s->pass)) {
            status[i] = LA_EINVAL;
            continue;
        }
        pc[m] = (pass_call){s->kernel, s->p, s->pass, s->a, LA_OK, NULL};
        if (lse_for(&pc[m]) != LA_OK) {
            status[i] = LA_ENOMEM;
            continue;
        }
        /* the backward differentiates this forward: its output, computed once untimed */
        if (s->pass == PASS_BACKWARD && (status[i] = forward(&pc[m])) != LA_OK) {
            free(pc[m].lse);
            continue;
        }
        bodies[m] = run_pass_call, ctxs[m] = &pc[m], idx[m++] = i;
    }
    timer_result tm[TIMER_MAX_INTERLEAVED];
    const int rc = m == 0 ? 0 : timer_run_interleaved(m, bodies, ctxs, rule, tm, failed);
    for (size_t j = 0; j < m; j++) {
        const size_t i = idx[j];
        status[i] = rc != 0 ? LA_ENOMEM : failed[j] == 0 ? LA_OK : pc[j].status;
        if (status[i] == LA_OK) t[i] = tm[j];
        free(pc[j].lse);
    }
}

la_status pass_time(la_kernel kernel, const la_problem *p, pass_kind pass, const pass_arrays *a,
                    const timer_rule *rule, timer_result *t)
{
    const pass_spec call = {kernel, p, pass, a};
    la_status st;
    pass_time_calls(1, &call, rule, t, &st);
    return st;
}

void pass_time_interleaved(size_t n, const la_kernel *kernels, const la_problem *p, pass_kind pass,
                           const pass_arrays *a, const timer_rule *rule, timer_result *t,
                           la_status *status)
{
    pass_spec calls[TIMER_MAX_INTERLEAVED];
    if (n > TIMER_MAX_INTERLEAVED) n = TIMER_MAX_INTERLEAVED;
    for (size_t i = 0; i < n; i++)
        calls[i] = (pass_spec){kernels[i], &p[i], pass, a};
    if (pass != PASS_BACKWARD) {
        pass_time_calls(n, calls, rule, t, status);
        return;
    }
    for (size_t i = 0; i < n; i++)
        status[i] = LA_EINVAL;
}

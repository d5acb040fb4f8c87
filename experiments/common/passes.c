/* passes.c — forward, backward and train calls of a kernel: cost and timing (passes.h). */
#include "passes.h"

#include <math.h>
#include <stdlib.h>

const char *const ps_pass_names[] = {"forward", "backward", "train", NULL};

int ps_kernel_has(la_kernel kernel, ps_pass pass)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || pass < PS_FORWARD || pass >= PS_COUNT) return 0;
    return pass == PS_FORWARD || (info->backward_f32 && info->backward_cost);
}

la_status ps_cost(la_kernel kernel, const la_problem *p, ps_pass pass, la_dtype dtype, la_cost *out)
{
    if (!ps_kernel_has(kernel, pass)) return LA_EINVAL;
    if (pass == PS_FORWARD) return la_attention_cost(kernel, p, dtype, out);
    if (pass == PS_BACKWARD) return la_attention_backward_cost(kernel, p, dtype, out);
    la_cost f, b;
    la_status st = la_attention_cost(kernel, p, dtype, &f);
    if (st == LA_OK) st = la_attention_backward_cost(kernel, p, dtype, &b);
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

/* One call of a pass, for res_time. */
typedef struct {
    la_kernel kernel;
    const la_problem *p;
    ps_pass pass;
    const ps_arrays *a;
    la_status status;
    float *lse; /* softmax's backward and train: the forward's log-sum-exps (B, H, N) */
} pass_call;

/* Fused softmax trains as FlashAttention-2 does: the forward keeps each row's
 * log-sum-exp and the backward reads it (the registry's backward, given no lse, first
 * recomputes it). The buffer for c, when its kernel and pass use one: LA_OK or LA_ENOMEM. */
static la_status lse_for(pass_call *c)
{
    c->lse = NULL;
    if (c->kernel != LA_KERNEL_SOFTMAX || c->pass == PS_FORWARD) return LA_OK;
    const size_t rows = c->p->batch * c->p->heads * c->p->n_queries;
    c->lse = malloc((rows ? rows : 1) * sizeof *c->lse);
    return c->lse ? LA_OK : LA_ENOMEM;
}

static la_status forward(const pass_call *c)
{
    if (c->lse)
        return la_attention_lse(LA_KERNEL_SOFTMAX, c->p, LA_FLOAT32, c->a->q, c->a->k, c->a->v,
                                c->a->out, c->lse);
    return la_attention(c->kernel, c->p, LA_FLOAT32, c->a->q, c->a->k, c->a->v, c->a->out);
}

static la_status backward(const pass_call *c)
{
    const ps_arrays *a = c->a;
    if (c->lse)
        return la_attention_backward(LA_KERNEL_SOFTMAX, c->p, LA_FLOAT32, a->q, a->k, a->v, a->out,
                                     c->lse, a->d_out, a->d_q, a->d_k, a->d_v);
    return la_attention_backward(c->kernel, c->p, LA_FLOAT32, a->q, a->k, a->v, a->out, NULL,
                                 a->d_out, a->d_q, a->d_k, a->d_v);
}

static int run_pass_call(void *ctx)
{
    pass_call *c = ctx;
    c->status = c->pass == PS_BACKWARD ? backward(c) : forward(c);
    if (c->status == LA_OK && c->pass == PS_TRAIN) c->status = backward(c);
    return c->status != LA_OK;
}

la_status ps_time(la_kernel kernel, const la_problem *p, ps_pass pass, const ps_arrays *a,
                  const res_rule *rule, res_timing *t)
{
    if (!ps_kernel_has(kernel, pass)) return LA_EINVAL;
    pass_call call = {kernel, p, pass, a, LA_OK, NULL};
    if (lse_for(&call) != LA_OK) return LA_ENOMEM;
    la_status st = LA_OK;
    /* the backward differentiates this forward: its output, computed once untimed */
    if (pass == PS_BACKWARD && (st = call.status = forward(&call)) != LA_OK) goto done;
    if (res_time(run_pass_call, &call, rule, t) != 0)
        st = call.status != LA_OK ? call.status : LA_ENOMEM;
done:
    free(call.lse);
    return st;
}

void ps_time_interleaved(size_t n, const la_kernel *kernels, const la_problem *p, ps_pass pass,
                         const ps_arrays *a, const res_rule *rule, res_timing *t, la_status *status)
{
    pass_call calls[RES_MAX_INTERLEAVED];
    res_body bodies[RES_MAX_INTERLEAVED] = {0};
    void *ctxs[RES_MAX_INTERLEAVED] = {0};
    int failed[RES_MAX_INTERLEAVED];
    size_t idx[RES_MAX_INTERLEAVED], m = 0;
    if (n > RES_MAX_INTERLEAVED) n = RES_MAX_INTERLEAVED;
    for (size_t i = 0; i < n; i++) {
        status[i] = LA_OK;
        if (pass == PS_BACKWARD || !ps_kernel_has(kernels[i], pass)) {
            status[i] = LA_EINVAL;
            continue;
        }
        calls[m] = (pass_call){kernels[i], &p[i], pass, a, LA_OK, NULL};
        if (lse_for(&calls[m]) != LA_OK) {
            status[i] = LA_ENOMEM;
            continue;
        }
        bodies[m] = run_pass_call, ctxs[m] = &calls[m], idx[m++] = i;
    }
    res_timing tm[RES_MAX_INTERLEAVED];
    if (m == 0) return;
    const int rc = res_time_interleaved(m, bodies, ctxs, rule, tm, failed);
    for (size_t j = 0; j < m; j++) {
        const size_t i = idx[j];
        status[i] = rc != 0 ? LA_ENOMEM : failed[j] == 0 ? LA_OK : calls[j].status;
        if (status[i] == LA_OK) t[i] = tm[j];
        free(calls[j].lse);
    }
}

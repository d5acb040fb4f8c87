/* passes.c — forward, backward and train calls of a kernel: cost and timing (passes.h). */
#include "passes.h"

#include <math.h>

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
} pass_call;

static la_status forward(const pass_call *c)
{
    return la_attention_f32(c->kernel, c->p, c->a->q, c->a->k, c->a->v, c->a->out);
}

static la_status backward(const pass_call *c)
{
    const ps_arrays *a = c->a;
    return la_attention_backward_f32(c->kernel, c->p, a->q, a->k, a->v, a->out, a->d_out, a->d_q,
                                     a->d_k, a->d_v);
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
    pass_call call = {kernel, p, pass, a, LA_OK};
    /* the backward differentiates this forward: its output, computed once untimed */
    if (pass == PS_BACKWARD && (call.status = forward(&call)) != LA_OK) return call.status;
    if (res_time(run_pass_call, &call, rule, t) != 0)
        return call.status != LA_OK ? call.status : LA_ENOMEM;
    return LA_OK;
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
        calls[m] = (pass_call){kernels[i], &p[i], pass, a, LA_OK};
        bodies[m] = run_pass_call, ctxs[m] = &calls[m], idx[m++] = i;
    }
    if (m == 0) return;
    res_timing tm[RES_MAX_INTERLEAVED];
    const int rc = res_time_interleaved(m, bodies, ctxs, rule, tm, failed);
    for (size_t j = 0; j < m; j++) {
        const size_t i = idx[j];
        status[i] = rc != 0 ? LA_ENOMEM : failed[j] == 0 ? LA_OK : calls[j].status;
        if (status[i] == LA_OK) t[i] = tm[j];
    }
}

/* cost.c — the FLOP and memory model of one kernel call (la_attention_cost).
 *
 * One model for the whole toolkit: the benchmarks and experiments divide these counts
 * by measured time. Each kernel's own count is its registry row's cost function, beside
 * the kernel (softmax.c, linear.c); this file checks the call, sums the heads and adds
 * the totals. Conventions (also in lib/linattn.h):
 *   - a multiply-add is 2 FLOPs; an add, multiply, divide, compare, max or exp is 1;
 *   - only the (query, key) pairs the masks leave visible count, so a causal call costs
 *     about half a full one; a query that sees no key costs nothing (zeros are written);
 *   - φ costs 1 FLOP per element (elu+1 is one add or one exp, relu one max);
 *   - bookkeeping that is not in the formula is not counted: the scale multiply (folded
 *     into q·k), the fused kernel's online rescaling, index arithmetic.
 * Every count is a total over the batch × heads problems of the call. */
#include "attention/attention_internal.h"

/* c->field += times × heads × f.field, for every flops_* field. */
static void add_heads(la_cost *c, double times, double heads, const la_cost *f)
{
    c->flops_qk += times * (heads * f->flops_qk);
    c->flops_softmax += times * (heads * f->flops_softmax);
    c->flops_av += times * (heads * f->flops_av);
    c->flops_phi += times * (heads * f->flops_phi);
    c->flops_kv += times * (heads * f->flops_kv);
    c->flops_qs += times * (heads * f->flops_qs);
    c->flops_normalize += times * (heads * f->flops_normalize);
}

void la_cost_sum_heads(const la_problem *p, la_head_flops_fn per_head, la_cost *c)
{
    const double heads = (double)p->heads;
    if (!p->key_lengths) {
        /* every entry sees all M keys: one head's count, batch × heads times (equal to
         * the sum over entries whenever that sum is exact, i.e. below 2^53) */
        la_cost f = {0};
        per_head(p, p->n_keys, &f);
        add_heads(c, (double)p->batch, heads, &f);
        return;
    }
    for (size_t b = 0; b < p->batch; b++) {
        la_cost f = {0};
        per_head(p, la_keys_in_length(p, b), &f);
        add_heads(c, 1, heads, &f);
    }
}

/* One call of fn (a row's cost or backward_cost) on a checked problem: its FLOP fields,
 * their total, its workspace, io_bytes = the arrays read and written once, in units of
 * their elements (forward or backward, below), and bytes_min. */
static la_status cost_of(const la_kernel_info *info, la_cost_fn fn, const la_problem *p,
                         la_dtype dtype, int backward, la_cost *out)
{
    if (!out || !info || !fn || (dtype != LA_FLOAT32 && dtype != LA_FLOAT64)) return LA_EINVAL;
    la_status st = la_problem_check(p);
    if (st != LA_OK) return st;
    if (!la_causal_allowed(info, p->causal)) return LA_EINVAL;

    la_cost c = {0};
    st = fn(p, dtype, &c);
    if (st != LA_OK) return st;
    c.flops_total = c.flops_qk + c.flops_softmax + c.flops_av + c.flops_phi + c.flops_kv +
                    c.flops_qs + c.flops_normalize;
    const double n = (double)p->n_queries, m = (double)p->n_keys;
    const double dk = (double)p->d_k, dv = (double)p->d_v;
    /* forward: q, k, v read, out written; backward: q, k, v, out, d_out read and d_q, d_k,
     * d_v written */
    const double elements =
        backward ? 2 * (n * dk + m * dk + m * dv) + 2 * n * dv : n * dk + m * dk + m * dv + n * dv;
    const double elem = (double)la_dtype_size(dtype);
    c.io_bytes = (double)p->batch * (double)p->heads * elements * elem;
    /* bytes_min: the inputs and outputs (a forward reads k and v of the keys seen only,
     * la_keys_seen: u_b rows per head of entry b), and what a forward's cost function
     * counted beyond them (la_cost.bytes_min: what its algorithm holds outside registers
     * and cache) */
    if (backward) {
        c.bytes_min = c.io_bytes;
    } else {
        double seen = p->key_lengths ? 0 : (double)p->batch * (double)la_keys_seen(p, 0);
        for (size_t b = 0; p->key_lengths && b < p->batch; b++)
            seen += (double)la_keys_seen(p, b);
        c.bytes_min +=
            (double)p->heads * elem * ((double)p->batch * (n * dk + n * dv) + seen * (dk + dv));
    }
    *out = c;
    return LA_OK;
}

la_status la_attention_cost(la_kernel kernel, const la_problem *p, la_dtype dtype, la_cost *out)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    return cost_of(info, info ? info->fns->cost : NULL, p, dtype, 0, out);
}

la_status la_attention_backward_cost(la_kernel kernel, const la_problem *p, la_dtype dtype,
                                     la_cost *out)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    return cost_of(info, info ? info->fns->backward_cost : NULL, p, dtype, 1, out);
}

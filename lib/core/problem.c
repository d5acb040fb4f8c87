/* problem.c — la_problem defaults and validation, names, masks, and kernel dispatch. */
#include "core/internal.h"

#include <math.h>
#include <string.h>

void la_problem_init(la_problem *p, size_t batch, size_t heads, size_t n_queries, size_t n_keys,
                     size_t d_k, size_t d_v)
{
    memset(p, 0, sizeof *p);
    p->batch = batch;
    p->heads = heads;
    p->n_queries = n_queries;
    p->n_keys = n_keys;
    p->d_k = d_k;
    p->d_v = d_v;
    p->causal = 0;
    p->key_lengths = NULL;
    p->scale = d_k > 0 ? 1.0 / sqrt((double)d_k) : 1.0;
    p->feature_map = LA_FEATURE_ELU1;
    p->eps = LA_DEFAULT_EPS;
    p->chunk = LA_DEFAULT_CHUNK;
    p->workspace_limit = LA_DEFAULT_WORKSPACE_LIMIT;
}

bool la_mul_ok(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

/* Elements of a (B, H, rows, cols) array, overflow-checked, and that many 8-byte
 * elements must fit too (so float64 byte counts never overflow). */
static bool array_fits(const la_problem *p, size_t rows, size_t cols)
{
    size_t n;
    return la_mul_ok(p->batch, p->heads, &n) && la_mul_ok(n, rows, &n) && la_mul_ok(n, cols, &n) &&
           la_mul_ok(n, sizeof(double), &n);
}

la_status la_problem_check(const la_problem *p)
{
    if (!p) return LA_EINVAL;
    if (p->batch == 0 || p->heads == 0 || p->n_queries == 0 || p->n_keys == 0 || p->d_k == 0 ||
        p->d_v == 0)
        return LA_EINVAL;
    if (p->causal != 0 && p->causal != 1) return LA_EINVAL;
    if (!isfinite(p->scale)) return LA_EINVAL;
    if (!(isfinite(p->eps) && p->eps >= 0)) return LA_EINVAL;
    if (p->feature_map != LA_FEATURE_ELU1 && p->feature_map != LA_FEATURE_RELU) return LA_EINVAL;
    if (p->chunk == 0) return LA_EINVAL;
    if (p->key_lengths) {
        for (size_t b = 0; b < p->batch; b++)
            if (p->key_lengths[b] < 0 || (uint64_t)p->key_lengths[b] > p->n_keys) return LA_EINVAL;
    }
    if (!array_fits(p, p->n_queries, p->d_k) || !array_fits(p, p->n_keys, p->d_k) ||
        !array_fits(p, p->n_keys, p->d_v) || !array_fits(p, p->n_queries, p->d_v))
        return LA_EOVERFLOW;
    return LA_OK;
}

size_t la_keys_in_length(const la_problem *p, size_t b)
{
    size_t m = p->n_keys;
    if (p->key_lengths && (size_t)p->key_lengths[b] < m) m = (size_t)p->key_lengths[b];
    return m;
}

size_t la_visible_keys(const la_problem *p, size_t b, size_t i)
{
    size_t m = la_keys_in_length(p, b);
    if (p->causal && i + 1 < m) m = i + 1;
    return m;
}

double la_visible_pairs(const la_problem *p, size_t b)
{
    size_t m = la_keys_in_length(p, b);
    double n = (double)p->n_queries;
    if (!p->causal) return n * (double)m;
    /* Σ_i min(i + 1, m): a triangle of queries 0..m-1, then full rows. */
    double tri_rows = n < (double)m ? n : (double)m;
    return tri_rows * (tri_rows + 1) / 2 + (n - tri_rows) * (double)m;
}

const char *la_feature_map_name(la_feature_map fm)
{
    switch (fm) {
    case LA_FEATURE_ELU1: return "elu";
    case LA_FEATURE_RELU: return "relu";
    }
    return "unknown";
}

la_status la_feature_map_parse(const char *name, la_feature_map *out)
{
    if (!name || !out) return LA_EINVAL;
    if (strcmp(name, "elu") == 0 || strcmp(name, "elu+1") == 0)
        *out = LA_FEATURE_ELU1;
    else if (strcmp(name, "relu") == 0)
        *out = LA_FEATURE_RELU;
    else
        return LA_EINVAL;
    return LA_OK;
}

const char *la_kernel_name(la_kernel kernel)
{
    switch (kernel) {
    case LA_KERNEL_SOFTMAX: return "softmax";
    case LA_KERNEL_SOFTMAX_MATERIALIZED: return "softmax_materialized";
    case LA_KERNEL_HARD: return "hard";
    case LA_KERNEL_LINEAR: return "linear";
    case LA_KERNEL_LINEAR_RECURRENT: return "linear_recurrent";
    case LA_KERNEL_COUNT: break;
    }
    return "unknown";
}

la_status la_attention_f32(la_kernel kernel, const la_problem *p, const float *q, const float *k,
                           const float *v, float *out)
{
    switch (kernel) {
    case LA_KERNEL_SOFTMAX: return la_softmax_attention_f32(p, q, k, v, out);
    case LA_KERNEL_SOFTMAX_MATERIALIZED:
        return la_softmax_attention_materialized_f32(p, q, k, v, out);
    case LA_KERNEL_HARD: return la_hard_attention_f32(p, q, k, v, out);
    case LA_KERNEL_LINEAR: return la_linear_attention_f32(p, q, k, v, out);
    case LA_KERNEL_LINEAR_RECURRENT: return la_linear_attention_recurrent_f32(p, q, k, v, out);
    case LA_KERNEL_COUNT: break;
    }
    return LA_EINVAL;
}

la_status la_attention_f64(la_kernel kernel, const la_problem *p, const double *q, const double *k,
                           const double *v, double *out)
{
    switch (kernel) {
    case LA_KERNEL_SOFTMAX: return la_softmax_attention_f64(p, q, k, v, out);
    case LA_KERNEL_SOFTMAX_MATERIALIZED:
        return la_softmax_attention_materialized_f64(p, q, k, v, out);
    case LA_KERNEL_HARD: return la_hard_attention_f64(p, q, k, v, out);
    case LA_KERNEL_LINEAR: return la_linear_attention_f64(p, q, k, v, out);
    case LA_KERNEL_LINEAR_RECURRENT: return la_linear_attention_recurrent_f64(p, q, k, v, out);
    case LA_KERNEL_COUNT: break;
    }
    return LA_EINVAL;
}

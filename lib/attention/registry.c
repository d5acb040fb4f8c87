/* registry.c — the kernel registry: one row per attention kernel, and the functions
 * that read it (names, parsing, series, dispatch). Everything else that iterates over
 * kernels — the command, the benchmark, the sweeps, the cost model, the test harness —
 * iterates over this table.
 *
 * A new kernel: its kernel file (and its declarations in linattn.h), its float64
 * reference, its cost function, one enum value and one row here, and its own tests; the
 * test harness (tests/attention/test_attention.c) runs every row through its properties
 * with no edit (at most a tolerance entry). */
#include "attention/attention_internal.h"

#include <string.h>

static const la_kernel_info registry[LA_KERNEL_COUNT] = {
    [LA_KERNEL_SOFTMAX] =
        {
            .kernel = LA_KERNEL_SOFTMAX,
            .name = "softmax",
            .summary = "softmax(Q Kᵀ·scale) V, fused: online softmax over key blocks, never the "
                       "N×M scores",
            .series = {"softmax", "softmax_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE,
            .masks = LA_MASK_GENERAL | LA_MASK_KEY,
            .caps = LA_CAP_LSE | LA_CAP_WEIGHTS | LA_CAP_ROTARY,
            .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
            .time_exponent = 2,
            .family = "softmax",
            .forward_f32 = la_softmax_attention_f32,
            .forward_f64 = la_softmax_attention_f64,
            .reference = la_ref_softmax_attention,
            .cost = la_softmax_cost,
            .backward_f32 = la_softmax_row_backward_f32,
            .backward_f64 = la_softmax_row_backward_f64,
            .reference_backward = la_ref_softmax_attention_backward,
            .backward_cost = la_softmax_backward_cost,
        },
    [LA_KERNEL_SOFTMAX_MATERIALIZED] =
        {
            .kernel = LA_KERNEL_SOFTMAX_MATERIALIZED,
            .name = "softmax_materialized",
            .summary =
                "softmax(Q Kᵀ·scale) V, materializing: the N×M scores, their softmax, then ·V",
            .series = {"softmax_materialized", "softmax_materialized_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE,
            .masks = LA_MASK_GENERAL | LA_MASK_KEY,
            .caps = LA_CAP_WEIGHTS | LA_CAP_ROTARY,
            .sweep = LA_SWEEP_PLAIN,
            .time_exponent = 2,
            .family = "softmax",
            .forward_f32 = la_softmax_attention_materialized_f32,
            .forward_f64 = la_softmax_attention_materialized_f64,
            .reference = la_ref_softmax_attention,
            .cost = la_softmax_materialized_cost,
            .backward_f32 = la_softmax_attention_materialized_backward_f32,
            .backward_f64 = la_softmax_attention_materialized_backward_f64,
            .reference_backward = la_ref_softmax_attention_backward,
            .backward_cost = la_softmax_materialized_backward_cost,
        },
    [LA_KERNEL_HARD] =
        {
            .kernel = LA_KERNEL_HARD,
            .name = "hard",
            .summary = "hard: the V row of the best-scoring visible key (ties: the lowest)",
            .series = {"hard", "hard_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE,
            .masks = LA_MASK_GENERAL | LA_MASK_KEY,
            .caps = LA_CAP_WEIGHTS | LA_CAP_ROTARY | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_PLAIN,
            .time_exponent = 2,
            .family = "softmax",
            .forward_f32 = la_hard_attention_f32,
            .forward_f64 = la_hard_attention_f64,
            .reference = la_ref_hard_attention,
            .cost = la_hard_cost,
            .backward_f32 = la_hard_attention_backward_f32,
            .backward_f64 = la_hard_attention_backward_f64,
            .reference_backward = la_ref_hard_attention_backward,
            .backward_cost = la_hard_backward_cost,
        },
    [LA_KERNEL_LINEAR] =
        {
            .kernel = LA_KERNEL_LINEAR,
            .name = "linear",
            .summary = "linear, φ(q)ᵀS / (φ(q)ᵀz + eps) (Katharopoulos et al. 2020): S = φ(K)ᵀV "
                       "once per head; causal: in chunks, carrying S and z",
            .series = {"linear", "linear_causal_chunked"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_FEATURE_MAP | LA_PARAM_EPS | LA_PARAM_CHUNK,
            .masks = LA_MASK_KEY,
            .caps = LA_CAP_WEIGHTS | LA_CAP_STEP | LA_CAP_ROTARY_FEATURES | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
            .time_exponent = 1,
            .family = "linear",
            .forward_f32 = la_linear_attention_f32,
            .forward_f64 = la_linear_attention_f64,
            .reference = la_ref_linear_attention,
            .cost = la_linear_cost,
            .backward_f32 = la_linear_attention_backward_f32,
            .backward_f64 = la_linear_attention_backward_f64,
            .reference_backward = la_ref_linear_attention_backward,
            .backward_cost = la_linear_backward_cost,
        },
    [LA_KERNEL_LINEAR_RECURRENT] =
        {
            .kernel = LA_KERNEL_LINEAR_RECURRENT,
            .name = "linear_recurrent",
            .summary =
                "linear, causal, token by token: S and z updated per token, as the step API does",
            .series = {NULL, "linear_causal_recurrent"},
            .causal = LA_CAUSAL_REQUIRED,
            .params = LA_PARAM_FEATURE_MAP | LA_PARAM_EPS,
            .masks = LA_MASK_KEY,
            .caps = LA_CAP_WEIGHTS | LA_CAP_STEP | LA_CAP_ROTARY_FEATURES | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_CAUSAL,
            .time_exponent = 1,
            .family = "linear",
            .forward_f32 = la_linear_attention_recurrent_f32,
            .forward_f64 = la_linear_attention_recurrent_f64,
            .reference = la_ref_linear_attention,
            .cost = la_linear_recurrent_cost,
            .backward_f32 = la_linear_attention_recurrent_backward_f32,
            .backward_f64 = la_linear_attention_recurrent_backward_f64,
            .reference_backward = la_ref_linear_attention_backward,
            .backward_cost = la_linear_recurrent_backward_cost,
        },
    [LA_KERNEL_LINFORMER] =
        {
            .kernel = LA_KERNEL_LINFORMER,
            .name = "linformer",
            .summary = "Linformer (Wang et al. 2020): K and V projected along the sequence to k "
                       "rows (E·K, F·V), then softmax over the k projected keys",
            .series = {"linformer", NULL},
            .causal = LA_CAUSAL_REFUSED,
            .params = LA_PARAM_SCALE | LA_PARAM_PROJ,
            .masks = 0,
            .caps = LA_CAP_ROTARY | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_PLAIN,
            .time_exponent = 1,
            .family = "low-rank",
            .forward_f32 = la_linformer_attention_f32,
            .forward_f64 = la_linformer_attention_f64,
            .reference = la_ref_linformer_attention,
            .cost = la_linformer_cost,
            .backward_f32 = NULL, /* no backward */
            .backward_f64 = NULL,
            .reference_backward = NULL,
            .backward_cost = NULL,
        },
    [LA_KERNEL_LOCAL] =
        {
            .kernel = LA_KERNEL_LOCAL,
            .name = "local",
            .summary = "restricted (local) softmax: each query attends to the keys within "
                       "--window r positions, |i − j| <= r (causal i − r <= j <= i)",
            .series = {"local", "local_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE | LA_PARAM_WINDOW,
            .masks = LA_MASK_GENERAL | LA_MASK_KEY,
            .caps = LA_CAP_WEIGHTS | LA_CAP_ROTARY | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
            .time_exponent = 1,
            .family = "sparse",
            .forward_f32 = la_local_attention_f32,
            .forward_f64 = la_local_attention_f64,
            .reference = la_ref_local_attention,
            .cost = la_local_cost,
            /* no backward */
        },
    [LA_KERNEL_FAVOR] =
        {
            .kernel = LA_KERNEL_FAVOR,
            .name = "favor",
            .summary = "FAVOR+ (Performer, Choromanski et al. 2021): linear attention on m "
                       "positive random features, approximating softmax at scale 1/√d_k; "
                       "causal: in chunks",
            .series = {"favor", "favor_causal_chunked"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_EPS | LA_PARAM_FEATURES | LA_PARAM_CHUNK,
            .masks = 0,
            .caps = LA_CAP_STEP | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_PLAIN | LA_SWEEP_CAUSAL,
            .time_exponent = 1,
            .family = "random-feature",
            .forward_f32 = la_favor_attention_f32,
            .forward_f64 = la_favor_attention_f64,
            .reference = la_ref_favor_attention,
            .cost = la_favor_cost,
        },
    [LA_KERNEL_FAVOR_RECURRENT] =
        {
            .kernel = LA_KERNEL_FAVOR_RECURRENT,
            .name = "favor_recurrent",
            .summary = "FAVOR+, causal, token by token: S and z per token, rescaled as the "
                       "keys' running max rises",
            .series = {NULL, "favor_causal_recurrent"},
            .causal = LA_CAUSAL_REQUIRED,
            .params = LA_PARAM_EPS | LA_PARAM_FEATURES,
            .masks = 0,
            .caps = LA_CAP_STEP | LA_CAP_APPROXIMATES,
            .sweep = LA_SWEEP_CAUSAL,
            .time_exponent = 1,
            .family = "random-feature",
            .forward_f32 = la_favor_attention_recurrent_f32,
            .forward_f64 = la_favor_attention_recurrent_f64,
            .reference = la_ref_favor_attention,
            .cost = la_favor_recurrent_cost,
        },
    [LA_KERNEL_GENERAL] =
        {
            .kernel = LA_KERNEL_GENERAL,
            .name = "general",
            .summary = "softmax over general scores q·W·k · scale (Luong et al. 2015), W (d_k, "
                       "d_k): K' = K Wᵀ, then the fused softmax kernel",
            .series = {"general", "general_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE | LA_PARAM_SCORE_WEIGHTS,
            .masks = LA_MASK_GENERAL | LA_MASK_KEY,
            .caps = LA_CAP_ROTARY,
            .sweep = 0,
            .time_exponent = 2,
            .family = "score",
            .forward_f32 = la_general_attention_f32,
            .forward_f64 = la_general_attention_f64,
            .reference = la_ref_general_attention,
            .cost = la_general_cost,
            /* no backward */
        },
    [LA_KERNEL_ADDITIVE] =
        {
            .kernel = LA_KERNEL_ADDITIVE,
            .name = "additive",
            .summary = "softmax over additive scores vᵀtanh(W_q q + W_k k) (Bahdanau et al. "
                       "2015), W (d_a, 2·d_k), v (d_a): O(N·M·d_a) tanh",
            .series = {"additive", "additive_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCORE_WEIGHTS | LA_PARAM_SCORE_DIM,
            .masks = 0,
            .caps = LA_CAP_ROTARY,
            .sweep = 0,
            .time_exponent = 2,
            .family = "score",
            .forward_f32 = la_additive_attention_f32,
            .forward_f64 = la_additive_attention_f64,
            .reference = la_ref_additive_attention,
            .cost = la_additive_cost,
        },
    [LA_KERNEL_COSINE] =
        {
            .kernel = LA_KERNEL_COSINE,
            .name = "cosine",
            .summary = "softmax over cosine similarities cos(q, k) · scale (scale: the inverse "
                       "temperature): Q, K normalized, then the fused softmax kernel",
            .series = {"cosine", "cosine_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE,
            .masks = LA_MASK_GENERAL | LA_MASK_KEY,
            .caps = LA_CAP_ROTARY,
            .sweep = 0,
            .time_exponent = 2,
            .family = "score",
            .forward_f32 = la_cosine_attention_f32,
            .forward_f64 = la_cosine_attention_f64,
            .reference = la_ref_cosine_attention,
            .cost = la_cosine_cost,
        },
    [LA_KERNEL_RELATIVE] =
        {
            .kernel = LA_KERNEL_RELATIVE,
            .name = "relative",
            .summary = "softmax with relative positions (Shaw et al. 2018): embeddings of the "
                       "distance clip(j − i, −K, K) added to the keys in the scores and to the "
                       "values",
            .series = {"relative", "relative_causal"},
            .causal = LA_CAUSAL_ALLOWED,
            .params = LA_PARAM_SCALE | LA_PARAM_RELATIVE,
            .masks = 0,
            .caps = LA_CAP_POSITIONS | LA_CAP_ROTARY,
            .sweep = 0,
            .time_exponent = 2,
            .family = "position",
            .forward_f32 = la_relative_attention_f32,
            .forward_f64 = la_relative_attention_f64,
            .reference = la_ref_relative_attention,
            .cost = la_relative_cost,
            /* no backward */
        },
};

const la_kernel_info *la_kernel_get(la_kernel kernel)
{
    if ((unsigned)kernel >= LA_KERNEL_COUNT) return NULL;
    return &registry[kernel];
}

const char *la_kernel_name(la_kernel kernel)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    return info ? info->name : "unknown";
}

/* a equals b, reading '-' in a as '_' */
static bool same_name(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (*a != *b && !(*a == '-' && *b == '_')) return false;
    return *a == *b;
}

la_status la_kernel_parse(const char *name, la_kernel *out)
{
    if (!name || !out) return LA_EINVAL;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        if (same_name(name, registry[k].name)) {
            *out = (la_kernel)k;
            return LA_OK;
        }
    }
    return LA_EINVAL;
}

const char *la_kernel_series(la_kernel kernel, int causal)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || (causal != 0 && causal != 1)) return NULL;
    return info->series[causal];
}

la_status la_kernel_series_parse(const char *series, la_kernel *kernel, int *causal)
{
    if (!series || !kernel || !causal) return LA_EINVAL;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        for (int c = 0; c < 2; c++) {
            if (registry[k].series[c] && same_name(series, registry[k].series[c])) {
                *kernel = (la_kernel)k;
                *causal = c;
                return LA_OK;
            }
        }
    }
    return LA_EINVAL;
}

bool la_causal_allowed(const la_kernel_info *info, int causal)
{
    switch (info->causal) {
    case LA_CAUSAL_ALLOWED: return causal == 0 || causal == 1;
    case LA_CAUSAL_REQUIRED: return causal == 1;
    case LA_CAUSAL_REFUSED: return causal == 0;
    }
    return false;
}

/* The row of kernel when it accepts p's causal flag (a NULL p is the kernel's to refuse). */
static const la_kernel_info *row_for(la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (!info || (p && !la_causal_allowed(info, p->causal))) return NULL;
    return info;
}

la_status la_attention_f32(la_kernel kernel, const la_problem *p, const float *q, const float *k,
                           const float *v, float *out)
{
    const la_kernel_info *info = row_for(kernel, p);
    return info ? info->forward_f32(p, q, k, v, out) : LA_EINVAL;
}

la_status la_attention_f64(la_kernel kernel, const la_problem *p, const double *q, const double *k,
                           const double *v, double *out)
{
    const la_kernel_info *info = row_for(kernel, p);
    return info ? info->forward_f64(p, q, k, v, out) : LA_EINVAL;
}

la_status la_ref_attention(la_kernel kernel, const la_problem *p, const double *q, const double *k,
                           const double *v, double *out)
{
    const la_kernel_info *info = row_for(kernel, p);
    return info ? info->reference(p, q, k, v, out) : LA_EINVAL;
}

/* The row of kernel when it has a backward and accepts p's causal flag. */
static const la_kernel_info *backward_row(la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *info = row_for(kernel, p);
    return info && info->backward_f32 && info->backward_f64 && info->reference_backward ? info
                                                                                        : NULL;
}

la_status la_attention_backward_f32(la_kernel kernel, const la_problem *p, const float *q,
                                    const float *k, const float *v, const float *out,
                                    const float *d_out, float *d_q, float *d_k, float *d_v)
{
    const la_kernel_info *info = backward_row(kernel, p);
    return info ? info->backward_f32(p, q, k, v, out, d_out, d_q, d_k, d_v) : LA_EINVAL;
}

la_status la_attention_backward_f64(la_kernel kernel, const la_problem *p, const double *q,
                                    const double *k, const double *v, const double *out,
                                    const double *d_out, double *d_q, double *d_k, double *d_v)
{
    const la_kernel_info *info = backward_row(kernel, p);
    return info ? info->backward_f64(p, q, k, v, out, d_out, d_q, d_k, d_v) : LA_EINVAL;
}

la_status la_ref_attention_backward(la_kernel kernel, const la_problem *p, const double *q,
                                    const double *k, const double *v, const double *out,
                                    const double *d_out, double *d_q, double *d_k, double *d_v)
{
    const la_kernel_info *info = backward_row(kernel, p);
    return info ? info->reference_backward(p, q, k, v, out, d_out, d_q, d_k, d_v) : LA_EINVAL;
}

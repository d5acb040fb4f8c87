/* problem.c — la_problem defaults and validation, feature-map names, masks. */
#include "core/blocks.h"
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
    p->causal_align = LA_CAUSAL_TOP_LEFT;
    p->key_lengths = NULL;
    p->scale = d_k > 0 ? 1.0 / sqrt((double)d_k) : 1.0;
    p->feature_map = LA_FEATURE_ELU1;
    p->eps = LA_DEFAULT_EPS;
    p->chunk = LA_DEFAULT_CHUNK;
    p->workspace_limit = LA_DEFAULT_WORKSPACE_LIMIT;
    p->params = NULL;
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

bool la_strides_contiguous(const la_strides *s)
{
    return s->batch == 0 && s->head == 0 && s->row == 0;
}

/* A strided (B, H, rows, d) array: its elements must be addressable (the largest offset
 * and its 8-byte size within size_t) and no two (b, h, r, c) may share one. The check
 * for the second: the axes of extent > 1 sorted by stride, each stride at least the span
 * of the axes below it (the columns, stride 1 and extent d, first). */
static la_status strides_check(const la_problem *p, const la_strides *s, size_t rows, size_t d)
{
    if (la_strides_contiguous(s)) return LA_OK;
    size_t stride[3] = {s->batch, s->head, s->row}, extent[3] = {p->batch, p->heads, rows};
    for (int a = 1; a < 3; a++) /* insertion sort by stride */
        for (int b = a; b > 0 && stride[b] < stride[b - 1]; b--) {
            size_t t = stride[b];
            stride[b] = stride[b - 1];
            stride[b - 1] = t;
            t = extent[b];
            extent[b] = extent[b - 1];
            extent[b - 1] = t;
        }
    size_t span = d; /* elements spanned by the axes below, less one, plus one */
    for (int a = 0; a < 3; a++) {
        if (extent[a] == 1) continue;
        size_t reach;
        if (!la_mul_ok(stride[a], extent[a] - 1, &reach) || reach > SIZE_MAX - span)
            return LA_EOVERFLOW;
        if (stride[a] < span) return LA_EINVAL;
        span += reach;
    }
    size_t bytes;
    return la_mul_ok(span, sizeof(double), &bytes) ? LA_OK : LA_EOVERFLOW;
}

/* ---------------------------------------------------------------- parameter blocks */

static bool block_ok(const la_params *b)
{
    switch (b->kind) {
    case LA_PARAMS_LOCAL: return ((const la_local_params *)b)->window >= 1;
    case LA_PARAMS_LINFORMER: {
        const la_linformer_params *x = (const la_linformer_params *)b;
        return x->proj_rank >= 1 && (x->proj_e == NULL) == (x->proj_f == NULL);
    }
    case LA_PARAMS_FAVOR: return ((const la_favor_params *)b)->features >= 1;
    case LA_PARAMS_SCORE: return ((const la_score_params *)b)->score_dim >= 1;
    case LA_PARAMS_RELATIVE: {
        const la_relative_params *x = (const la_relative_params *)b;
        return x->max_distance >= 1 && (x->rel_k == NULL) == (x->rel_v == NULL);
    }
    default: return false;
    }
}

/* At most one block per kind, so a chain longer than the kinds is refused (and a cycle
 * with it) before any block past them is read. */
la_status la_params_check(const la_params *chain)
{
    unsigned seen = 0;
    for (int n = 0; chain; chain = chain->next, n++) {
        if (n >= LA_PARAMS_END - 1 || chain->kind < 1 || chain->kind >= LA_PARAMS_END)
            return LA_EINVAL;
        const unsigned bit = 1u << chain->kind;
        if ((seen & bit) || !block_ok(chain)) return LA_EINVAL;
        seen |= bit;
    }
    return LA_OK;
}

void la_blocks_init(la_blocks *b, uint64_t seed)
{
    static const la_blocks defaults = {LA_LOCAL_PARAMS_INIT, LA_LINFORMER_PARAMS_INIT,
                                       LA_FAVOR_PARAMS_INIT, LA_SCORE_PARAMS_INIT,
                                       LA_RELATIVE_PARAMS_INIT};
    *b = defaults;
    b->linformer.seed = b->favor.seed = b->score.seed = b->relative.seed = seed;
}

const la_params *la_blocks_get(const la_blocks *b, la_params_kind kind)
{
    switch (kind) {
    case LA_PARAMS_LOCAL: return &b->local.head;
    case LA_PARAMS_LINFORMER: return &b->linformer.head;
    case LA_PARAMS_FAVOR: return &b->favor.head;
    case LA_PARAMS_SCORE: return &b->score.head;
    case LA_PARAMS_RELATIVE: return &b->relative.head;
    default: return NULL;
    }
}

const la_params *la_blocks_chain(la_blocks *b)
{
    b->local.head.next = &b->linformer.head;
    b->linformer.head.next = &b->favor.head;
    b->favor.head.next = &b->score.head;
    b->score.head.next = &b->relative.head;
    b->relative.head.next = NULL;
    return &b->local.head;
}

la_status la_problem_check(const la_problem *p)
{
    if (!p) return LA_EINVAL;
    if (p->batch == 0 || p->heads == 0 || p->n_queries == 0 || p->n_keys == 0 || p->d_k == 0 ||
        p->d_v == 0)
        return LA_EINVAL;
    if (p->causal != 0 && p->causal != 1) return LA_EINVAL;
    if (p->causal_align != LA_CAUSAL_TOP_LEFT && p->causal_align != LA_CAUSAL_BOTTOM_RIGHT)
        return LA_EINVAL;
    if (!isfinite(p->scale)) return LA_EINVAL;
    if (!(isfinite(p->eps) && p->eps >= 0)) return LA_EINVAL;
    if (!la_feature_map_ok(p->feature_map)) return LA_EINVAL;
    if (p->chunk == 0) return LA_EINVAL;
    if (la_params_check(p->params) != LA_OK) return LA_EINVAL;
    if (p->mask_per_head != 0 && p->mask_per_head != 1) return LA_EINVAL;
    if (p->mask_per_head && !p->mask) return LA_EINVAL;
    if (p->key_lengths) {
        for (size_t b = 0; b < p->batch; b++)
            if (p->key_lengths[b] < 0 || (uint64_t)p->key_lengths[b] > p->n_keys) return LA_EINVAL;
    }
    if (!array_fits(p, p->n_queries, p->d_k) || !array_fits(p, p->n_keys, p->d_k) ||
        !array_fits(p, p->n_keys, p->d_v) || !array_fits(p, p->n_queries, p->d_v))
        return LA_EOVERFLOW;
    if (p->mask && !array_fits(p, p->n_queries, p->n_keys)) return LA_EOVERFLOW;
    la_status s = strides_check(p, &p->stride_q, p->n_queries, p->d_k);
    if (s == LA_OK) s = strides_check(p, &p->stride_k, p->n_keys, p->d_k);
    if (s == LA_OK) s = strides_check(p, &p->stride_v, p->n_keys, p->d_v);
    if (s == LA_OK) s = strides_check(p, &p->stride_out, p->n_queries, p->d_v);
    return s;
}

size_t la_keys_in_length(const la_problem *p, size_t b)
{
    size_t m = p->n_keys;
    if (p->key_lengths && (size_t)p->key_lengths[b] < m) m = (size_t)p->key_lengths[b];
    return m;
}

ptrdiff_t la_causal_offset(const la_problem *p)
{
    if (!p->causal || p->causal_align != LA_CAUSAL_BOTTOM_RIGHT) return 0;
    /* N, M < SIZE_MAX / 8 (la_problem_check's array sizes): both fit in ptrdiff_t */
    return (ptrdiff_t)p->n_keys - (ptrdiff_t)p->n_queries;
}

bool la_causal_square(const la_problem *p)
{
    return p && p->causal == 1 && p->causal_align == LA_CAUSAL_BOTTOM_RIGHT &&
           p->n_queries != p->n_keys;
}

size_t la_visible_keys(const la_problem *p, size_t b, size_t i)
{
    return la_visible_keys_of(p, la_keys_in_length(p, b), i);
}

size_t la_visible_keys_of(const la_problem *p, size_t m, size_t i)
{
    if (!p->causal) return m;
    /* query i sees j <= i + o: i + o + 1 keys, none when that is <= 0 */
    const ptrdiff_t end = (ptrdiff_t)i + la_causal_offset(p) + 1;
    if (end <= 0) return 0;
    return (size_t)end < m ? (size_t)end : m;
}

size_t la_first_query_seeing(const la_problem *p, size_t j)
{
    if (!p->causal) return 0;
    /* j <= i + o  <=>  i >= j − o */
    const ptrdiff_t first = (ptrdiff_t)j - la_causal_offset(p);
    return first > 0 ? (size_t)first : 0;
}

/* Σ_{i=0}^{y-1} min(x, m) for the integers x = 0 .. y − 1, 0 for y <= 0. */
static double clamped_prefix(double y, double m)
{
    if (y <= 0) return 0;
    if (y <= m + 1) return y * (y - 1) / 2;
    return m * (m + 1) / 2 + (y - m - 1) * m;
}

double la_visible_pairs_of(const la_problem *p, size_t m)
{
    double n = (double)p->n_queries;
    if (!p->causal) return n * (double)m;
    /* Σ_i clamp(i + o + 1, 0, m) = prefix(n + t) − prefix(t), t = o + 1 */
    const double t = (double)la_causal_offset(p) + 1;
    return clamped_prefix(n + t, (double)m) - clamped_prefix(t, (double)m);
}

double la_visible_pairs(const la_problem *p, size_t b)
{
    return la_visible_pairs_of(p, la_keys_in_length(p, b));
}

/* The feature maps' names, by enum value (la_feature_map_parse also takes "elu+1"). */
static const char *const feature_map_names[LA_FEATURE_COUNT] = {
    [LA_FEATURE_ELU1] = "elu",
    [LA_FEATURE_RELU] = "relu",
};

const char *la_feature_map_name(la_feature_map fm)
{
    return la_feature_map_ok(fm) ? feature_map_names[fm] : "unknown";
}

la_status la_feature_map_parse(const char *name, la_feature_map *out)
{
    if (!name || !out) return LA_EINVAL;
    for (int fm = 0; fm < LA_FEATURE_COUNT; fm++) {
        if (strcmp(name, feature_map_names[fm]) == 0) {
            *out = (la_feature_map)fm;
            return LA_OK;
        }
    }
    if (strcmp(name, "elu+1") == 0) {
        *out = LA_FEATURE_ELU1;
        return LA_OK;
    }
    return LA_EINVAL;
}

bool la_has_masks(const la_problem *p)
{
    return p->mask || p->key_mask;
}

bool la_mask_hides(const la_problem *p, size_t hd, size_t i, size_t j)
{
    const size_t M = p->n_keys;
    if (p->key_mask && p->key_mask[(hd / p->heads) * M + j]) return true;
    if (!p->mask) return false;
    const size_t head = p->mask_per_head ? hd : 0;
    return p->mask[(head * p->n_queries + i) * M + j] != 0;
}

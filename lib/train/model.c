/* model.c — the training model's configuration, creation, initialization and tensor
 * list (train.h); the passes themselves are in model_typed.c. */
#include "core/internal.h"
#include "train/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void la_train_config_init(la_train_config *c, size_t vocab, size_t d_model, size_t heads,
                          size_t d_ff, size_t layers, size_t seq_len)
{
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->dtype = LA_FLOAT32;
    c->vocab = vocab;
    c->d_model = d_model;
    c->heads = heads;
    c->d_ff = d_ff;
    c->layers = layers;
    c->seq_len = seq_len;
    c->attention = LA_KERNEL_SOFTMAX;
    la_problem_init(&c->attention_params, 1, 1, 1, 1, 1, 1);
    la_blocks_init(&c->attention_blocks, 0);
    c->pre_ln = 1;
    c->ln_eps = LA_DEFAULT_NORM_EPS;
}

void la_train_attention_problem(const la_train_config *c, size_t batch, la_problem *p)
{
    const size_t dh = c->d_model / c->heads;
    *p = c->attention_params;
    p->batch = batch;
    p->heads = c->heads;
    p->n_queries = p->n_keys = c->seq_len;
    p->d_k = p->d_v = dh;
    p->causal = 1;
    p->causal_align = LA_CAUSAL_TOP_LEFT;
    p->scale = 1.0 / sqrt((double)dh);
    p->key_lengths = NULL;
    p->mask = NULL;
    p->mask_per_head = 0;
    p->key_mask = NULL;
    p->params = la_blocks_get(&c->attention_blocks, la_kernel_get(c->attention)->block);
    memset(&p->stride_q, 0, sizeof p->stride_q);
    memset(&p->stride_k, 0, sizeof p->stride_k);
    memset(&p->stride_v, 0, sizeof p->stride_v);
    memset(&p->stride_out, 0, sizeof p->stride_out);
}

/* n = a·b·c without overflow. */
static bool mul3(size_t a, size_t b, size_t c, size_t *n)
{
    return la_mul_ok(a, b, n) && la_mul_ok(*n, c, n);
}

bool la_train_saved_counts(const la_train_config *c, size_t batch, size_t *layer_real,
                           size_t *layer_double, size_t *final_real, size_t *final_double)
{
    size_t rows, rd, rf, lse = 0, sum;
    if (!la_mul_ok(batch, c->seq_len, &rows) || !la_mul_ok(rows, c->d_model, &rd) ||
        !la_mul_ok(rows, c->d_ff, &rf) || rd > SIZE_MAX / 8 || rows > SIZE_MAX / 4)
        return false;
    if ((la_kernel_get(c->attention)->caps & LA_CAP_LSE) &&
        !mul3(batch, c->heads, c->seq_len, &lse))
        return false;
    sum = 8 * rd; /* four activations, Q, K, V, O */
    if (sum > SIZE_MAX - rf || sum + rf > SIZE_MAX - lse) return false;
    *layer_real = sum + rf + lse;
    *layer_double = 4 * rows;
    *final_real = 2 * rd;
    *final_double = 2 * rows;
    return true;
}

la_status la_train_config_check(const la_train_config *c)
{
    if (!c || c->vocab == 0 || c->d_model == 0 || c->heads == 0 || c->d_ff == 0 || c->layers == 0 ||
        c->seq_len == 0 || c->d_model % c->heads != 0)
        return LA_EINVAL;
    if ((c->dtype != LA_FLOAT32 && c->dtype != LA_FLOAT64) || (c->pre_ln != 0 && c->pre_ln != 1) ||
        (c->gelu != 0 && c->gelu != 1) ||
        (c->learned_positions != 0 && c->learned_positions != 1) ||
        (c->tie_head != 0 && c->tie_head != 1) || !(isfinite(c->ln_eps) && c->ln_eps > 0))
        return LA_EINVAL;
    if (c->vocab > INT32_MAX) return LA_EINVAL; /* tokens are int32 */
    const la_kernel_info *row = la_kernel_get(c->attention);
    if (!row || !(row->caps & LA_CAP_BACKWARD) || !la_causal_allowed(row, 1)) return LA_EINVAL;
    size_t n;
    if (!la_mul_ok(c->vocab, c->d_model, &n) || !mul3(3, c->d_model, c->d_model, &n) ||
        !la_mul_ok(c->d_ff, c->d_model, &n) || !la_mul_ok(c->seq_len, c->d_model, &n))
        return LA_EOVERFLOW;
    la_problem p;
    la_train_attention_problem(c, 1, &p);
    return la_problem_check(&p);
}

size_t la_train_saved_bytes(const la_train_config *c, size_t batch)
{
    size_t lr, ld, fr, fd, real, dbl, total;
    if (la_train_config_check(c) != LA_OK || batch == 0 ||
        !la_train_saved_counts(c, batch, &lr, &ld, &fr, &fd))
        return 0;
    const size_t elem = c->dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
    if (!la_mul_ok(lr, c->layers, &real) || real > SIZE_MAX - fr ||
        !la_mul_ok(real + fr, elem, &real) || !la_mul_ok(ld, c->layers, &dbl) ||
        dbl > SIZE_MAX - fd || !la_mul_ok(dbl + fd, sizeof(double), &dbl) || real > SIZE_MAX - dbl)
        return 0;
    total = real + dbl;
    return total;
}

/* ---------------------------------------------------------------- initialization */

/* splitmix64 */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A uniform draw in (0, 1): ((x >> 11) + 0.5) · 2^-53. */
static double next_unit(uint64_t *s)
{
    return ((double)(next_u64(s) >> 11) + 0.5) * 0x1.0p-53;
}

/* N(0, 1) by Box–Muller, the cosine half. */
static double next_normal(uint64_t *s)
{
    const double u1 = next_unit(s), u2 = next_unit(s);
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

enum init_kind { INIT_NORMAL, INIT_UNIFORM, INIT_CONST };

/* Fills tensor t: N(0, 1), U(−a, a) or the constant a. */
static void init_tensor(const la_train_tensor *t, la_dtype dtype, enum init_kind kind, double a,
                        uint64_t *s)
{
    for (size_t i = 0; i < t->numel; i++) {
        double v = kind == INIT_NORMAL    ? next_normal(s)
                   : kind == INIT_UNIFORM ? (2 * next_unit(s) - 1) * a
                                          : a;
        if (dtype == LA_FLOAT32)
            ((float *)t->data)[i] = (float)v;
        else
            ((double *)t->data)[i] = v;
    }
}

/* The init of each tensor (train.h, INITIALIZATION), in list order. */
static void init_model(la_train_model *m, uint64_t seed)
{
    const la_train_config *c = &m->c;
    const double D = (double)c->d_model, F = (double)c->d_ff;
    uint64_t s = seed;
    init_tensor(&m->list[m->embedding], c->dtype, INIT_NORMAL, 0, &s);
    if (m->positions != LA_TRAIN_NONE)
        init_tensor(&m->list[m->positions], c->dtype, INIT_NORMAL, 0, &s);
    for (size_t i = 0; i < c->layers; i++) {
        for (int t = 0; t < LA_TRAIN_LAYER_TENSORS; t++) {
            enum init_kind kind = INIT_UNIFORM;
            double a = 0;
            switch (t) {
            case LA_TRAIN_IN_W: a = sqrt(6.0 / (D + 3 * D)); break;
            case LA_TRAIN_IN_B:
            case LA_TRAIN_OUT_B:
            case LA_TRAIN_N1_B:
            case LA_TRAIN_N2_B: kind = INIT_CONST; break;
            case LA_TRAIN_N1_W:
            case LA_TRAIN_N2_W: kind = INIT_CONST, a = 1; break;
            case LA_TRAIN_OUT_W:
            case LA_TRAIN_L1_W:
            case LA_TRAIN_L1_B: a = 1 / sqrt(D); break;
            default: a = 1 / sqrt(F); break; /* linear2 */
            }
            init_tensor(la_train_layer_tensor(m, i, t), c->dtype, kind, a, &s);
        }
    }
    init_tensor(&m->list[m->norm], c->dtype, INIT_CONST, 1, &s);
    init_tensor(&m->list[m->norm + 1], c->dtype, INIT_CONST, 0, &s);
    if (m->head_w != LA_TRAIN_NONE)
        init_tensor(&m->list[m->head_w], c->dtype, INIT_UNIFORM, 1 / sqrt(D), &s);
    init_tensor(&m->list[m->head_b], c->dtype, INIT_UNIFORM, 1 / sqrt(D), &s);
}

/* ---------------------------------------------------------------- the list */

static const char *const layer_keys[LA_TRAIN_LAYER_TENSORS] = {
    "self_attn.in_proj_weight",
    "self_attn.in_proj_bias",
    "self_attn.out_proj.weight",
    "self_attn.out_proj.bias",
    "linear1.weight",
    "linear1.bias",
    "linear2.weight",
    "linear2.bias",
    "norm1.weight",
    "norm1.bias",
    "norm2.weight",
    "norm2.bias",
};

#define KEY_SIZE 64 /* "layers.{i}.self_attn.out_proj.weight" with i up to 20 digits fits */

/* Appends entry list[*n] = key with shape (a) or (a, b). */
static void add(la_train_model *m, size_t *n, const char *key, size_t ndim, size_t a, size_t b)
{
    la_train_tensor *t = &m->list[*n];
    char *k = m->keys + *n * KEY_SIZE;
    snprintf(k, KEY_SIZE, "%s", key);
    t->key = k;
    t->ndim = ndim;
    t->shape[0] = a;
    t->shape[1] = ndim == 2 ? b : 0;
    t->numel = ndim == 2 ? a * b : a;
    (*n)++;
}

la_status la_train_model_create(la_train_model **out, const la_train_config *c, uint64_t seed)
{
    if (!out) return LA_EINVAL;
    *out = NULL;
    la_status st = la_train_config_check(c);
    if (st != LA_OK) return st;
    const size_t D = c->d_model, F = c->d_ff, V = c->vocab, L = c->layers;
    size_t count;
    if (!la_mul_ok(L, LA_TRAIN_LAYER_TENSORS, &count) || count > SIZE_MAX - 6) return LA_EOVERFLOW;
    count += 1 + (size_t)c->learned_positions + 2 + (c->tie_head ? 1 : 2);

    la_train_model *m = calloc(1, sizeof *m);
    if (!m) return LA_ENOMEM;
    m->c = *c;
    m->list = calloc(count, sizeof *m->list);
    m->keys = calloc(count, KEY_SIZE);
    if (!m->list || !m->keys) {
        la_train_model_free(m);
        return LA_ENOMEM;
    }
    size_t n = 0;
    char key[KEY_SIZE];
    m->embedding = n;
    add(m, &n, "embedding.weight", 2, V, D);
    m->positions = LA_TRAIN_NONE;
    if (c->learned_positions) {
        m->positions = n;
        add(m, &n, "pos_embedding.weight", 2, c->seq_len, D);
    }
    m->layer0 = n;
    for (size_t i = 0; i < L; i++)
        for (int t = 0; t < LA_TRAIN_LAYER_TENSORS; t++) {
            snprintf(key, sizeof key, "layers.%zu.%s", i, layer_keys[t]);
            const size_t rows = t == LA_TRAIN_IN_W || t == LA_TRAIN_IN_B   ? 3 * D
                                : t == LA_TRAIN_L1_W || t == LA_TRAIN_L1_B ? F
                                                                           : D;
            const int matrix = t == LA_TRAIN_IN_W || t == LA_TRAIN_OUT_W || t == LA_TRAIN_L1_W ||
                               t == LA_TRAIN_L2_W;
            add(m, &n, key, matrix ? 2 : 1, rows, t == LA_TRAIN_L2_W ? F : D);
        }
    m->norm = n;
    add(m, &n, "norm.weight", 1, D, 0);
    add(m, &n, "norm.bias", 1, D, 0);
    m->head_w = LA_TRAIN_NONE;
    if (!c->tie_head) {
        m->head_w = n;
        add(m, &n, "head.weight", 2, V, D);
    }
    m->head_b = n;
    add(m, &n, "head.bias", 1, V, 0);
    m->count = n;

    /* storage: every parameter, then every gradient, each tensor 64-byte aligned */
    const size_t elem = c->dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double), align = 64 / elem;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t padded = (m->list[i].numel + align - 1) / align * align;
        if (padded < m->list[i].numel || total > SIZE_MAX / 2 / elem - padded) {
            la_train_model_free(m);
            return LA_EOVERFLOW;
        }
        total += padded;
        m->n_params += m->list[i].numel;
    }
    m->storage = aligned_alloc(64, 2 * total * elem);
    if (!m->storage) {
        la_train_model_free(m);
        return LA_ENOMEM;
    }
    memset(m->storage, 0, 2 * total * elem);
    char *base = m->storage;
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        m->list[i].data = base + off * elem;
        m->list[i].grad = base + (total + off) * elem;
        off += (m->list[i].numel + align - 1) / align * align;
    }
    if (!c->learned_positions) {
        size_t cells;
        const bool fits = la_mul_ok(c->seq_len, c->d_model, &cells);
        if (!fits || !(m->sinusoid = calloc(cells, elem))) {
            la_train_model_free(m);
            return fits ? LA_ENOMEM : LA_EOVERFLOW;
        }
        st = la_add_positional_encoding(c->dtype, 1, c->seq_len, c->d_model, 0, m->sinusoid);
        if (st != LA_OK) {
            la_train_model_free(m);
            return st;
        }
    }
    init_model(m, seed);
    *out = m;
    return LA_OK;
}

void la_train_model_free(la_train_model *m)
{
    if (!m) return;
    free(m->storage);
    free(m->sinusoid);
    free(m->keys);
    free(m->list);
    free(m);
}

const la_train_config *la_train_model_config(const la_train_model *m)
{
    return m ? &m->c : NULL;
}

la_status la_train_model_tensors(la_train_model *m, la_train_tensor **list, size_t *count)
{
    if (!m || !list || !count) return LA_EINVAL;
    *list = m->list;
    *count = m->count;
    return LA_OK;
}

size_t la_train_model_param_count(const la_train_model *m)
{
    return m ? m->n_params : 0;
}

/* ---------------------------------------------------------------- the passes */

static la_status run(la_train_model *m, size_t batch, const int32_t *tokens, const int32_t *targets,
                     int backward, double *loss, size_t *correct, size_t *scored, void *logits)
{
    if (!m || !tokens || !targets || batch == 0) return LA_EINVAL;
    size_t rows;
    if (!la_mul_ok(batch, m->c.seq_len, &rows)) return LA_EOVERFLOW;
    for (size_t r = 0; r < rows; r++)
        if (tokens[r] < 0 || (size_t)tokens[r] >= m->c.vocab ||
            (targets[r] >= 0 && (size_t)targets[r] >= m->c.vocab))
            return LA_EINVAL;
    return m->c.dtype == LA_FLOAT32 ? la_train_run_f32(m, batch, tokens, targets, backward, loss,
                                                       correct, scored, logits)
                                    : la_train_run_f64(m, batch, tokens, targets, backward, loss,
                                                       correct, scored, logits);
}

la_status la_train_forward_backward(la_train_model *m, size_t batch, const int32_t *tokens,
                                    const int32_t *targets, double *loss, size_t *correct,
                                    size_t *scored)
{
    return run(m, batch, tokens, targets, 1, loss, correct, scored, NULL);
}

la_status la_train_evaluate(la_train_model *m, size_t batch, const int32_t *tokens,
                            const int32_t *targets, double *loss, size_t *correct, size_t *scored)
{
    return run(m, batch, tokens, targets, 0, loss, correct, scored, NULL);
}

la_status la_train_logits(la_train_model *m, size_t batch, const int32_t *tokens, void *logits)
{
    size_t rows;
    if (!m || !tokens || !logits || batch == 0) return LA_EINVAL;
    if (!la_mul_ok(batch, m->c.seq_len, &rows)) return LA_EOVERFLOW;
    int32_t *none = malloc(rows * sizeof *none); /* no target scored */
    if (!none) return LA_ENOMEM;
    for (size_t r = 0; r < rows; r++)
        none[r] = -1;
    la_status st = run(m, batch, tokens, none, 0, NULL, NULL, NULL, logits);
    free(none);
    return st;
}

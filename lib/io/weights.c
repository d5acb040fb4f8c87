/* weights.c — the weights of Transformer layers and stacks, in PyTorch's layout and
 * named by PyTorch's state_dict keys: the tensor table, Xavier-uniform initialization
 * from a seed, and loading from a folder of .npy files. */
#include "core/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the tensor table */

/* Each tensor's key and shape, as multiples of D and d_ff: rows = rows_d·D + rows_ff·d_ff,
 * cols likewise (cols 0: a vector). */
typedef struct {
    const char *key;
    unsigned rows_d, rows_ff, cols_d, cols_ff;
    int decoder_only;
} tensor_spec;

static const tensor_spec specs[LA_W_COUNT] = {
    [LA_W_SELF_IN_WEIGHT] = {"self_attn.in_proj_weight", 3, 0, 1, 0, 0},
    [LA_W_SELF_IN_BIAS] = {"self_attn.in_proj_bias", 3, 0, 0, 0, 0},
    [LA_W_SELF_OUT_WEIGHT] = {"self_attn.out_proj.weight", 1, 0, 1, 0, 0},
    [LA_W_SELF_OUT_BIAS] = {"self_attn.out_proj.bias", 1, 0, 0, 0, 0},
    [LA_W_CROSS_IN_WEIGHT] = {"multihead_attn.in_proj_weight", 3, 0, 1, 0, 1},
    [LA_W_CROSS_IN_BIAS] = {"multihead_attn.in_proj_bias", 3, 0, 0, 0, 1},
    [LA_W_CROSS_OUT_WEIGHT] = {"multihead_attn.out_proj.weight", 1, 0, 1, 0, 1},
    [LA_W_CROSS_OUT_BIAS] = {"multihead_attn.out_proj.bias", 1, 0, 0, 0, 1},
    [LA_W_LINEAR1_WEIGHT] = {"linear1.weight", 0, 1, 1, 0, 0},
    [LA_W_LINEAR1_BIAS] = {"linear1.bias", 0, 1, 0, 0, 0},
    [LA_W_LINEAR2_WEIGHT] = {"linear2.weight", 1, 0, 0, 1, 0},
    [LA_W_LINEAR2_BIAS] = {"linear2.bias", 1, 0, 0, 0, 0},
    [LA_W_NORM1_WEIGHT] = {"norm1.weight", 1, 0, 0, 0, 0},
    [LA_W_NORM1_BIAS] = {"norm1.bias", 1, 0, 0, 0, 0},
    [LA_W_NORM2_WEIGHT] = {"norm2.weight", 1, 0, 0, 0, 0},
    [LA_W_NORM2_BIAS] = {"norm2.bias", 1, 0, 0, 0, 0},
    [LA_W_NORM3_WEIGHT] = {"norm3.weight", 1, 0, 0, 0, 1},
    [LA_W_NORM3_BIAS] = {"norm3.bias", 1, 0, 0, 0, 1},
};

const char *la_layer_tensor_key(la_layer_tensor t)
{
    return (unsigned)t < LA_W_COUNT ? specs[t].key : "";
}

/* Overflow-checked a·D + b·d_ff. */
static bool extent(unsigned a, unsigned b, size_t d_model, size_t d_ff, size_t *out)
{
    size_t x, y;
    if (!la_mul_ok(a, d_model, &x) || !la_mul_ok(b, d_ff, &y) || x > SIZE_MAX - y) return false;
    *out = x + y;
    return true;
}

/* Shape and element count of tensor t; false on overflow. Absent tensors: 0 elements. */
static bool tensor_shape(la_layer_tensor t, size_t d_model, size_t d_ff, int decoder,
                         size_t shape[2], int *ndim, size_t *count)
{
    const tensor_spec *s = &specs[t];
    *count = 0;
    shape[0] = shape[1] = 0;
    *ndim = 0;
    if (s->decoder_only && !decoder) return true;
    if (!extent(s->rows_d, s->rows_ff, d_model, d_ff, &shape[0]) ||
        !extent(s->cols_d, s->cols_ff, d_model, d_ff, &shape[1]))
        return false;
    *ndim = shape[1] ? 2 : 1;
    if (*ndim == 1) return (*count = shape[0], true);
    return la_mul_ok(shape[0], shape[1], count);
}

size_t la_layer_tensor_shape(la_layer_tensor t, size_t d_model, size_t d_ff, int decoder,
                             size_t shape[2], int *ndim)
{
    size_t count = 0, tmp[2];
    int nd;
    if ((unsigned)t >= LA_W_COUNT || !tensor_shape(t, d_model, d_ff, decoder, tmp, &nd, &count))
        return 0;
    if (shape) shape[0] = tmp[0], shape[1] = tmp[1];
    if (ndim) *ndim = nd;
    return count;
}

static size_t elem_size(la_dtype dtype)
{
    return dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double);
}

/* Allocates w's storage for the layer's tensors and points tensor[] into it. */
static la_status layer_alloc(la_layer_weights *w, la_dtype dtype, size_t d_model, size_t d_ff,
                             int decoder)
{
    memset(w, 0, sizeof *w);
    if ((dtype != LA_FLOAT32 && dtype != LA_FLOAT64) || d_model == 0 || d_ff == 0 ||
        (decoder != 0 && decoder != 1))
        return LA_EINVAL;
    size_t offsets[LA_W_COUNT], total = 0;
    for (int t = 0; t < LA_W_COUNT; t++) {
        size_t shape[2], count;
        int ndim;
        if (!tensor_shape((la_layer_tensor)t, d_model, d_ff, decoder, shape, &ndim, &count) ||
            total > SIZE_MAX - count)
            return LA_EOVERFLOW;
        offsets[t] = count ? total : SIZE_MAX;
        total += count;
    }
    size_t bytes;
    if (!la_mul_ok(total, elem_size(dtype), &bytes)) return LA_EOVERFLOW;
    unsigned char *storage = malloc(bytes);
    if (!storage) return LA_ENOMEM;
    w->dtype = dtype;
    w->d_model = d_model;
    w->d_ff = d_ff;
    w->decoder = decoder;
    w->n_params = total;
    w->storage = storage;
    for (int t = 0; t < LA_W_COUNT; t++)
        w->tensor[t] = offsets[t] == SIZE_MAX ? NULL : storage + offsets[t] * elem_size(dtype);
    return LA_OK;
}

void la_layer_weights_free(la_layer_weights *w)
{
    if (!w) return;
    free(w->storage);
    memset(w, 0, sizeof *w);
}

/* ---------------------------------------------------------------- initialization */

/* splitmix64: the one generator of the initialization. */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* x[i] = value, n elements of dtype. */
static void fill(void *x, la_dtype dtype, size_t n, double value)
{
    for (size_t i = 0; i < n; i++) {
        if (dtype == LA_FLOAT32)
            ((float *)x)[i] = (float)value;
        else
            ((double *)x)[i] = value;
    }
}

/* Xavier-uniform: U(-a, a), a = √(6 / (fan_in + fan_out)), for a (rows, cols) matrix. */
static void xavier_uniform(void *x, la_dtype dtype, size_t rows, size_t cols, uint64_t *rng)
{
    double a = sqrt(6.0 / ((double)rows + (double)cols));
    for (size_t i = 0; i < rows * cols; i++) {
        double u = (double)(next_u64(rng) >> 11) * 0x1.0p-53; /* [0, 1) */
        double value = (2 * u - 1) * a;
        if (dtype == LA_FLOAT32)
            ((float *)x)[i] = (float)value;
        else
            ((double *)x)[i] = value;
    }
}

/* Matrices Xavier-uniform, biases 0, LayerNorm γ 1 and β 0, in enum order. */
static void layer_init_values(la_layer_weights *w, uint64_t seed)
{
    uint64_t rng = seed;
    for (int t = 0; t < LA_W_COUNT; t++) {
        if (!w->tensor[t]) continue;
        size_t shape[2], count;
        int ndim;
        tensor_shape((la_layer_tensor)t, w->d_model, w->d_ff, w->decoder, shape, &ndim, &count);
        bool gamma = t == LA_W_NORM1_WEIGHT || t == LA_W_NORM2_WEIGHT || t == LA_W_NORM3_WEIGHT;
        if (ndim == 2)
            xavier_uniform(w->tensor[t], w->dtype, shape[0], shape[1], &rng);
        else
            fill(w->tensor[t], w->dtype, count, gamma ? 1.0 : 0.0);
    }
}

la_status la_layer_weights_init(la_layer_weights *w, la_dtype dtype, size_t d_model, size_t d_ff,
                                int decoder, uint64_t seed)
{
    if (!w) return LA_EINVAL;
    la_status st = layer_alloc(w, dtype, d_model, d_ff, decoder);
    if (st != LA_OK) return st;
    layer_init_values(w, seed);
    return LA_OK;
}

/* ---------------------------------------------------------------- loading */

static void set_error(la_load_error *err, const char *path, const char *fmt, ...)
{
    if (!err) return;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->why, sizeof err->why, fmt, ap);
    va_end(ap);
}

/* path = dir/prefix key .npy; false when it does not fit. */
static bool make_path(char *path, size_t size, const char *dir, const char *prefix, const char *key)
{
    int n = snprintf(path, size, "%s/%s%s.npy", dir, prefix, key);
    return n >= 0 && (size_t)n < size;
}

/* Reads one float .npy file; on error fills *err and returns the status. */
static la_status read_tensor(const char *path, la_array *a, la_load_error *err)
{
    const char *why = NULL;
    la_status st = la_npy_read(path, a, &why);
    if (st != LA_OK) {
        set_error(err, path, "%s", why ? why : la_strerror(st));
        return st;
    }
    if (a->dtype == LA_NPY_F16 || a->dtype == LA_NPY_BF16) {
        st = la_array_to_f32(a); /* exact */
        if (st != LA_OK) {
            set_error(err, path, "%s", la_strerror(st));
            la_array_free(a);
            return st;
        }
    }
    if (a->dtype != LA_NPY_F32 && a->dtype != LA_NPY_F64) {
        set_error(err, path, "dtype is %s, expected a float type",
                  a->dtype == LA_NPY_I32    ? "int32"
                  : a->dtype == LA_NPY_BOOL ? "bool"
                                            : "int64");
        la_array_free(a);
        return LA_EDTYPE;
    }
    return LA_OK;
}

/* "(12, 4)" or "(12,)" of a shape. */
static void shape_text(char *buf, size_t size, int ndim, const size_t *shape)
{
    int n = snprintf(buf, size, "(");
    for (int i = 0; i < ndim && n >= 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%zu", i ? ", " : "", shape[i]);
    if (n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, ndim == 1 ? ",)" : ")");
}

/* Reads path into dst (count elements of dtype) when its shape is exactly `shape`. */
static la_status load_tensor(const char *path, int ndim, const size_t *shape, void *dst,
                             la_dtype dtype, la_load_error *err)
{
    la_array a;
    la_status st = read_tensor(path, &a, err);
    if (st != LA_OK) return st;
    bool same = a.ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = a.shape[i] == shape[i];
    if (!same) {
        char got[96], want[96];
        shape_text(got, sizeof got, a.ndim, a.shape);
        shape_text(want, sizeof want, ndim, shape);
        set_error(err, path, "shape %s, expected %s", got, want);
        la_array_free(&a);
        return LA_EFORMAT;
    }
    /* converted to dtype; every value finite (in dtype too) */
    for (size_t i = 0; i < a.count; i++) {
        double x = a.dtype == LA_NPY_F32 ? (double)((const float *)a.data)[i]
                                         : ((const double *)a.data)[i];
        if (dtype == LA_FLOAT32)
            ((float *)dst)[i] = (float)x;
        else
            ((double *)dst)[i] = x;
        if (!isfinite(x) || (dtype == LA_FLOAT32 && !isfinite((float)x))) {
            set_error(err, path, "element %zu (%g) is not finite%s", i, x,
                      isfinite(x) ? " in float32" : "");
            la_array_free(&a);
            return LA_EFORMAT;
        }
    }
    la_array_free(&a);
    return LA_OK;
}

/* D from prefix self_attn.in_proj_weight (3D, D), d_ff from prefix linear1.weight. */
static la_status infer_sizes(const char *dir, const char *prefix, size_t *d_model, size_t *d_ff,
                             la_load_error *err)
{
    char path[1024];
    la_array a;
    if (!make_path(path, sizeof path, dir, prefix, specs[LA_W_SELF_IN_WEIGHT].key)) {
        set_error(err, dir, "path too long");
        return LA_EINVAL;
    }
    la_status st = read_tensor(path, &a, err);
    if (st != LA_OK) return st;
    bool ok = a.ndim == 2 && a.shape[1] > 0 && a.shape[0] / 3 == a.shape[1] && a.shape[0] % 3 == 0;
    char got[96];
    shape_text(got, sizeof got, a.ndim, a.shape);
    *d_model = ok ? a.shape[1] : 0;
    la_array_free(&a);
    if (!ok) {
        set_error(err, path, "shape %s, expected (3·D, D) with D >= 1", got);
        return LA_EFORMAT;
    }
    if (!make_path(path, sizeof path, dir, prefix, specs[LA_W_LINEAR1_WEIGHT].key)) {
        set_error(err, dir, "path too long");
        return LA_EINVAL;
    }
    st = read_tensor(path, &a, err);
    if (st != LA_OK) return st;
    ok = a.ndim == 2 && a.shape[0] > 0 && a.shape[1] == *d_model;
    shape_text(got, sizeof got, a.ndim, a.shape);
    *d_ff = ok ? a.shape[0] : 0;
    la_array_free(&a);
    if (!ok) {
        set_error(err, path, "shape %s, expected (d_ff, %zu) with d_ff >= 1", got, *d_model);
        return LA_EFORMAT;
    }
    return LA_OK;
}

/* Loads every tensor of an allocated layer from dir/prefix*.npy. */
static la_status load_layer_tensors(la_layer_weights *w, const char *dir, const char *prefix,
                                    la_load_error *err)
{
    for (int t = 0; t < LA_W_COUNT; t++) {
        if (!w->tensor[t]) continue;
        size_t shape[2], count;
        int ndim;
        tensor_shape((la_layer_tensor)t, w->d_model, w->d_ff, w->decoder, shape, &ndim, &count);
        char path[1024];
        if (!make_path(path, sizeof path, dir, prefix, specs[t].key)) {
            set_error(err, dir, "path too long");
            return LA_EINVAL;
        }
        la_status st = load_tensor(path, ndim, shape, w->tensor[t], w->dtype, err);
        if (st != LA_OK) return st;
    }
    return LA_OK;
}

la_status la_layer_weights_load(la_layer_weights *w, la_dtype dtype, int decoder, const char *dir,
                                const char *prefix, la_load_error *err)
{
    if (err) err->path[0] = err->why[0] = '\0';
    if (!w) return LA_EINVAL;
    memset(w, 0, sizeof *w);
    if (!dir || !prefix || (dtype != LA_FLOAT32 && dtype != LA_FLOAT64) ||
        (decoder != 0 && decoder != 1)) {
        set_error(err, NULL, "invalid argument");
        return LA_EINVAL;
    }
    size_t d_model, d_ff;
    la_status st = infer_sizes(dir, prefix, &d_model, &d_ff, err);
    if (st != LA_OK) return st;
    st = layer_alloc(w, dtype, d_model, d_ff, decoder);
    if (st != LA_OK) {
        set_error(err, NULL, "%s", la_strerror(st));
        return st;
    }
    st = load_layer_tensors(w, dir, prefix, err);
    if (st != LA_OK) la_layer_weights_free(w);
    return st;
}

/* ---------------------------------------------------------------- stacks */

void la_transformer_weights_free(la_transformer_weights *w)
{
    if (!w) return;
    for (size_t i = 0; w->encoder && i < w->encoder_layers; i++)
        la_layer_weights_free(&w->encoder[i]);
    for (size_t i = 0; w->decoder && i < w->decoder_layers; i++)
        la_layer_weights_free(&w->decoder[i]);
    free(w->encoder);
    free(w->decoder);
    free(w->storage);
    memset(w, 0, sizeof *w);
}

/* The layer counts of a stack: LA_EINVAL for none at all, LA_EOVERFLOW when their sum or
 * either side's array of la_layer_weights does not fit in size_t. */
static la_status layer_counts_ok(size_t encoder_layers, size_t decoder_layers)
{
    size_t bytes;
    if (encoder_layers > SIZE_MAX - decoder_layers) return LA_EOVERFLOW;
    if (encoder_layers + decoder_layers == 0) return LA_EINVAL;
    if (!la_mul_ok(encoder_layers, sizeof(la_layer_weights), &bytes) ||
        !la_mul_ok(decoder_layers, sizeof(la_layer_weights), &bytes))
        return LA_EOVERFLOW;
    return LA_OK;
}

/* The arrays of layers (zeroed, so freeing a half-built stack is safe) and the final
 * norms' storage: (encoder ? 2D : 0) + (decoder ? 2D : 0) elements. */
static la_status stack_alloc(la_transformer_weights *w, la_dtype dtype, size_t d_model, size_t d_ff,
                             size_t encoder_layers, size_t decoder_layers)
{
    memset(w, 0, sizeof *w);
    if ((dtype != LA_FLOAT32 && dtype != LA_FLOAT64) || d_model == 0 || d_ff == 0) return LA_EINVAL;
    la_status st = layer_counts_ok(encoder_layers, decoder_layers);
    if (st != LA_OK) return st;
    w->dtype = dtype;
    w->d_model = d_model;
    w->d_ff = d_ff;
    w->encoder_layers = encoder_layers;
    w->decoder_layers = decoder_layers;
    w->encoder = calloc(encoder_layers ? encoder_layers : 1, sizeof *w->encoder);
    w->decoder = calloc(decoder_layers ? decoder_layers : 1, sizeof *w->decoder);
    size_t norms = (encoder_layers ? 2 : 0) + (decoder_layers ? 2 : 0), bytes;
    if (!la_mul_ok(norms, d_model, &bytes) || !la_mul_ok(bytes, elem_size(dtype), &bytes)) {
        la_transformer_weights_free(w);
        return LA_EOVERFLOW;
    }
    w->storage = malloc(bytes);
    if (!w->encoder || !w->decoder || !w->storage) {
        la_transformer_weights_free(w);
        return LA_ENOMEM;
    }
    unsigned char *p = w->storage;
    size_t vec = d_model * elem_size(dtype);
    if (encoder_layers) {
        w->encoder_norm[0] = p;
        w->encoder_norm[1] = p + vec;
        p += 2 * vec;
    }
    if (decoder_layers) {
        w->decoder_norm[0] = p;
        w->decoder_norm[1] = p + vec;
    }
    return LA_OK;
}

/* n_params of the whole stack: layers plus the final norms. */
static void stack_count(la_transformer_weights *w)
{
    size_t n = 0;
    for (size_t i = 0; i < w->encoder_layers; i++)
        n += w->encoder[i].n_params;
    for (size_t i = 0; i < w->decoder_layers; i++)
        n += w->decoder[i].n_params;
    n += ((w->encoder_layers ? 2 : 0) + (w->decoder_layers ? 2 : 0)) * w->d_model;
    w->n_params = n;
}

/* A per-layer seed: the stack's seed mixed with the side (0 encoder, 1 decoder) and index. */
static uint64_t layer_seed(uint64_t seed, int side, size_t index)
{
    uint64_t s = seed ^ (0x5851f42d4c957f2dull * (2 * (uint64_t)index + (uint64_t)side + 1));
    return next_u64(&s);
}

la_status la_transformer_weights_init(la_transformer_weights *w, la_dtype dtype, size_t d_model,
                                      size_t d_ff, size_t encoder_layers, size_t decoder_layers,
                                      uint64_t seed)
{
    if (!w) return LA_EINVAL;
    la_status st = stack_alloc(w, dtype, d_model, d_ff, encoder_layers, decoder_layers);
    if (st != LA_OK) return st;
    for (size_t i = 0; i < encoder_layers && st == LA_OK; i++)
        st = la_layer_weights_init(&w->encoder[i], dtype, d_model, d_ff, 0, layer_seed(seed, 0, i));
    for (size_t i = 0; i < decoder_layers && st == LA_OK; i++)
        st = la_layer_weights_init(&w->decoder[i], dtype, d_model, d_ff, 1, layer_seed(seed, 1, i));
    if (st != LA_OK) {
        la_transformer_weights_free(w);
        return st;
    }
    for (int side = 0; side < 2; side++) {
        void **norm = side ? w->decoder_norm : w->encoder_norm;
        if (norm[0]) fill(norm[0], dtype, d_model, 1.0);
        if (norm[1]) fill(norm[1], dtype, d_model, 0.0);
    }
    stack_count(w);
    return LA_OK;
}

/* Loads the layers of one side ("encoder" or "decoder") and its final norm. */
static la_status load_side(la_transformer_weights *w, int decoder, const char *dir,
                           la_load_error *err)
{
    const char *side = decoder ? "decoder" : "encoder";
    size_t layers = decoder ? w->decoder_layers : w->encoder_layers;
    la_layer_weights *arr = decoder ? w->decoder : w->encoder;
    char prefix[128], path[1024];
    for (size_t i = 0; i < layers; i++) {
        snprintf(prefix, sizeof prefix, "%s.layers.%zu.", side, i);
        la_status st = la_layer_weights_load(&arr[i], w->dtype, decoder, dir, prefix, err);
        if (st != LA_OK) return st;
        if (w->d_model == 0) { /* the first layer sets the sizes */
            w->d_model = arr[i].d_model;
            w->d_ff = arr[i].d_ff;
        } else if (arr[i].d_model != w->d_model || arr[i].d_ff != w->d_ff) {
            make_path(path, sizeof path, dir, prefix, specs[LA_W_LINEAR1_WEIGHT].key);
            set_error(err, path,
                      "layer has D = %zu, d_ff = %zu; earlier layers D = %zu, d_ff = %zu",
                      arr[i].d_model, arr[i].d_ff, w->d_model, w->d_ff);
            return LA_EFORMAT;
        }
    }
    return LA_OK;
}

static la_status load_norm(const char *dir, const char *side, void *norm[2], size_t d_model,
                           la_dtype dtype, la_load_error *err)
{
    const char *keys[2] = {"norm.weight", "norm.bias"};
    for (int i = 0; i < 2; i++) {
        char prefix[64], path[1024];
        snprintf(prefix, sizeof prefix, "%s.", side);
        if (!make_path(path, sizeof path, dir, prefix, keys[i])) {
            set_error(err, dir, "path too long");
            return LA_EINVAL;
        }
        la_status st = load_tensor(path, 1, &d_model, norm[i], dtype, err);
        if (st != LA_OK) return st;
    }
    return LA_OK;
}

la_status la_transformer_weights_load(la_transformer_weights *w, la_dtype dtype,
                                      size_t encoder_layers, size_t decoder_layers, const char *dir,
                                      la_load_error *err)
{
    if (err) err->path[0] = err->why[0] = '\0';
    if (!w) return LA_EINVAL;
    memset(w, 0, sizeof *w);
    if (!dir || (dtype != LA_FLOAT32 && dtype != LA_FLOAT64)) {
        set_error(err, NULL, "invalid argument");
        return LA_EINVAL;
    }
    la_status st = layer_counts_ok(encoder_layers, decoder_layers);
    if (st != LA_OK) {
        set_error(err, NULL, "%s", la_strerror(st));
        return st;
    }
    /* the layers first (they give D), then the final norms' storage */
    la_transformer_weights layers = {0}, norms;
    layers.dtype = dtype;
    layers.encoder_layers = encoder_layers;
    layers.decoder_layers = decoder_layers;
    layers.encoder = calloc(encoder_layers ? encoder_layers : 1, sizeof *layers.encoder);
    layers.decoder = calloc(decoder_layers ? decoder_layers : 1, sizeof *layers.decoder);
    st = LA_ENOMEM;
    if (!layers.encoder || !layers.decoder) goto fail;
    if ((st = load_side(&layers, 0, dir, err)) != LA_OK) goto fail;
    if ((st = load_side(&layers, 1, dir, err)) != LA_OK) goto fail;
    st = stack_alloc(&norms, dtype, layers.d_model, layers.d_ff, encoder_layers, decoder_layers);
    if (st != LA_OK) goto fail;
    /* move the loaded layers into the allocated stack */
    free(norms.encoder);
    free(norms.decoder);
    norms.encoder = layers.encoder;
    norms.decoder = layers.decoder;
    *w = norms;
    if (encoder_layers &&
        (st = load_norm(dir, "encoder", w->encoder_norm, w->d_model, dtype, err)) != LA_OK) {
        la_transformer_weights_free(w);
        return st;
    }
    if (decoder_layers &&
        (st = load_norm(dir, "decoder", w->decoder_norm, w->d_model, dtype, err)) != LA_OK) {
        la_transformer_weights_free(w);
        return st;
    }
    stack_count(w);
    return LA_OK;
fail:
    la_transformer_weights_free(&layers);
    if (err && !err->why[0]) set_error(err, NULL, "%s", la_strerror(st));
    return st;
}

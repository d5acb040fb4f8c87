/* model.c — `linattn model`: a whole nn.Transformer (encoder stack and its final norm,
 * decoder stack and its final norm; batch_first, dropout off) on an .npy source and
 * target, with the weights of a folder of .npy files named by nn.Transformer's state_dict
 * keys; token ids are embedded first when the folder holds the embedding tables. */
#include "commands.h"
#include "common/arrays.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/layer_flags.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help_text[] =
    "usage: linattn model --weights DIR --src S.npy --tgt T.npy --out Y.npy --heads H [options]\n"
    "\n"
    "Runs a whole encoder-decoder Transformer as torch.nn.Transformer(D, H, L, L2, d_ff,\n"
    "dropout=0, batch_first=True) computes it with a causal target:\n"
    "  memory = encoder.norm(encoder layers(src))\n"
    "  y      = decoder.norm(decoder layers(tgt, memory)),\n"
    "  tgt_mask = generate_square_subsequent_mask(N): target token i sees targets j <= i;\n"
    "the source and the memory are not masked. Each layer is the one `linattn help block`\n"
    "describes (post-LN, or pre-LN with --norm pre).\n"
    "\n"
    "DIR holds nn.Transformer's state_dict, one .npy file (float32 or float64) per key:\n"
    "  encoder.layers.{i}.<key>   an encoder layer's tensors, i = 0 .. L-1\n"
    "  encoder.norm.weight (D)    encoder.norm.bias (D)\n"
    "  decoder.layers.{i}.<key>   a decoder layer's tensors (with multihead_attn.*, norm3.*)\n"
    "  decoder.norm.weight (D)    decoder.norm.bias (D)\n"
    "L and L2 are the layers found in DIR (at least one each), D and d_ff their shapes:\n"
    "  for k, t in model.state_dict().items(): np.save(f\"DIR/{k}.npy\", t.numpy())\n"
    "\n"
    "S is (M, D) or (B, M, D) and T is (N, D) or (B, N, D), float32 or float64, both\n"
    "batched or neither, the same B; Y has T's shape, in --precision. Token ids instead\n"
    "(int32 or int64, S (M) or (B, M), T (N) or (B, N)) are looked up, without scaling or\n"
    "positions, in the tables DIR/src_embedding.weight.npy and DIR/tgt_embedding.weight.npy\n"
    "(nn.Embedding weights, (V, D) each; save one table under both names to share it).\n"
    "\n"
    "required:\n"
    "  --weights DIR        the folder of .npy tensors\n"
    "  --src S.npy          the source, read by the encoder\n"
    "  --tgt T.npy          the target, read by the decoder\n"
    "  --out Y.npy          the decoder's output, written atomically (nothing on any error)\n"
    "  --heads H            attention heads, dividing D\n"
    "options (default in brackets):\n"
    "  --norm post|pre      LayerNorm after (post) or before (pre) each sublayer [post]\n"
    "  --variant K          the kernel, one of those below (every attention's) [softmax]\n"
    "  --cross-variant K    the decoder's cross-attention kernel [--variant's]\n"
    "  --activation F       relu or gelu (exact, erf) [relu]\n"
    "  --precision P        float32 or float64 [float32]\n";
static const char help_feature_map[] =
    "  --feature-map F      %s only: elu (φ = elu + 1) or relu [elu]\n";
static const char help_after_feature_map[] =
    "  --threads T          OpenMP threads [LA_NUM_THREADS, else all cores];\n"
    "                       " CLI_THREADS_HELP "\n";
static const char help_after_kernels[] =
    "\n"
    "exit status: 0 done, 2 bad flags, input or weights (one line on stderr:\n"
    "linattn: WHAT: why, naming the file at fault)\n"
    "\n"
    "example:\n"
    "  linattn model --weights transformer/ --src src.npy --tgt tgt.npy --out y.npy --heads 8\n";

void cmd_model_help(FILE *out)
{
    char names[512];
    fputs(help_text, out);
    fprintf(out, help_feature_map,
            kernels_kernel_names(layer_flags_reads_feature_map, ", ", names, sizeof names));
    fputs(help_after_feature_map, out);
    fputs("\n", out);
    kernels_print_kernels(out, kernels_layer_kernel, ", those a layer can use");
    fputs(help_after_kernels, out);
}

/* More layers than any model has: a file numbered beyond is not a layer. */
enum { MAX_LAYERS = 100000 };

/* *count = 1 + the largest i of a file "<side>.layers.<i>.*" in dir (0 when none); the
 * loader then requires every tensor of every layer below it. 0, or 2 after one line. */
static int count_layers(const char *dir, const char *side, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) return cli_fail(dir, "cannot open the folder: %s", strerror(errno));
    char prefix[32];
    int len = snprintf(prefix, sizeof prefix, "%s.layers.", side);
    *count = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, prefix, (size_t)len) != 0) continue;
        const char *digits = e->d_name + len;
        char *end;
        errno = 0;
        unsigned long long i = strtoull(digits, &end, 10);
        if (end == digits || *end != '.' || *digits == '-' || *digits == '+' || errno ||
            i >= MAX_LAYERS)
            continue;
        if ((size_t)i + 1 > *count) *count = (size_t)i + 1;
    }
    closedir(d);
    if (*count == 0)
        return cli_fail(dir, "no %s layer: no file %s0.* (nn.Transformer's state_dict keys)", side,
                        prefix);
    return 0;
}

/* The token ids of a (N) or (B, N) integer array as int64; NULL when out of memory. */
static int64_t *token_ids(const la_array *a)
{
    int64_t *ids = malloc((a->count ? a->count : 1) * sizeof *ids);
    if (!ids) return NULL;
    for (size_t i = 0; i < a->count; i++)
        ids[i] =
            a->dtype == LA_NPY_I32 ? ((const int32_t *)a->data)[i] : ((const int64_t *)a->data)[i];
    return ids;
}

/* Embeds the token ids `ids` (already read, integer) with DIR/<side>_embedding.weight.npy
 * into *out: (N, D) or (B, N, D) in dtype. 0, or 2 after one line. */
static int embed_tokens(const char *path, const la_array *ids, const char *dir, const char *side,
                        la_dtype dtype, size_t D, la_array *out)
{
    char table_path[1024], shape[160];
    snprintf(table_path, sizeof table_path, "%s/%s_embedding.weight.npy", dir, side);
    if (ids->ndim != 1 && ids->ndim != 2)
        return cli_fail(path, "token ids of shape %s: must be (N) or (B, N)",
                        arrays_shape_str(ids, shape, sizeof shape));
    if (ids->count == 0)
        return cli_fail(path, "shape %s has a zero dimension",
                        arrays_shape_str(ids, shape, sizeof shape));
    if (access(table_path, F_OK) != 0)
        return cli_fail(table_path, "no such file: token ids in %s need this (V, D) table", path);
    la_array table = {0};
    int64_t *tokens = NULL;
    int rc = arrays_read_floats(table_path, dtype, &table);
    if (rc) return rc;
    if (table.ndim != 2 || table.shape[0] == 0 || table.shape[1] != D) {
        rc = cli_fail(table_path, "shape %s, expected (V, %zu): V >= 1 rows of D = %zu",
                      arrays_shape_str(&table, shape, sizeof shape), D, D);
        goto done;
    }
    const size_t vocab = table.shape[0];
    if (!(tokens = token_ids(ids))) {
        rc = cli_fail(path, "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    for (size_t t = 0; t < ids->count; t++)
        if (tokens[t] < 0 || (uint64_t)tokens[t] >= vocab) {
            rc = cli_fail(path,
                          "token id %" PRId64 " at index %zu is outside [0, %zu), the rows of %s",
                          tokens[t], t, vocab, table_path);
            goto done;
        }
    *out = (la_array){0};
    out->dtype = dtype == LA_FLOAT32 ? LA_NPY_F32 : LA_NPY_F64;
    out->ndim = ids->ndim + 1;
    for (int i = 0; i < ids->ndim; i++)
        out->shape[i] = ids->shape[i];
    out->shape[ids->ndim] = D;
    out->count = ids->count * D; /* no overflow: the table holds vocab·D, the ids count */
    if (ids->count > SIZE_MAX / D / la_npy_dtype_size(out->dtype) ||
        !(out->data = malloc(out->count * la_npy_dtype_size(out->dtype)))) {
        rc = cli_fail(path, "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    la_status st = dtype == LA_FLOAT32
                       ? la_embed(LA_FLOAT32, vocab, D, table.data, ids->count, tokens, out->data)
                       : la_embed(LA_FLOAT64, vocab, D, table.data, ids->count, tokens, out->data);
    if (st != LA_OK) {
        la_array_free(out);
        rc = cli_fail(path, "%s", la_strerror(st));
    }
done:
    la_array_free(&table);
    free(tokens);
    return rc;
}

/* One side's input as floats (N, D) or (B, N, D) in dtype: read as it is, or embedded
 * when it holds token ids. *batch and *rows from its shape. 0, or 2 after one line. */
static int read_sequence(const char *path, const char *dir, const char *side, la_dtype dtype,
                         size_t D, la_array *out, size_t *batch, size_t *rows)
{
    la_array raw = {0};
    int rc = arrays_read_npy(path, &raw);
    if (rc) return rc;
    if (raw.dtype == LA_NPY_I32 || raw.dtype == LA_NPY_I64)
        rc = embed_tokens(path, &raw, dir, side, dtype, D, out);
    else
        rc = arrays_read_floats(path, dtype, out);
    la_array_free(&raw);
    if (rc) return rc;
    char shape[160];
    if (out->ndim != 2 && out->ndim != 3)
        rc = cli_fail(path, "shape %s must be (N, D) or (B, N, D)",
                      arrays_shape_str(out, shape, sizeof shape));
    else if (out->shape[out->ndim - 1] != D)
        rc = cli_fail(path, "shape %s: last dim must be D = %zu, the weights' d_model",
                      arrays_shape_str(out, shape, sizeof shape), D);
    else if (out->count == 0)
        rc = cli_fail(path, "shape %s has a zero dimension",
                      arrays_shape_str(out, shape, sizeof shape));
    if (rc) {
        la_array_free(out);
        return rc;
    }
    *batch = out->ndim == 3 ? out->shape[0] : 1;
    *rows = out->shape[out->ndim - 2];
    return 0;
}

int cmd_model(int argc, char **argv)
{
    const char *weights = NULL, *src_path = NULL, *tgt_path = NULL, *out_path = NULL;
    const char *heads_text = NULL, *norm = NULL, *attention = NULL, *cross_attention = NULL;
    const char *activation = NULL, *precision = NULL, *feature_map = NULL, *threads_text = NULL;
    const cli_flag flags[] = {
        {"weights", &weights, NULL},
        {"src", &src_path, NULL},
        {"tgt", &tgt_path, NULL},
        {"out", &out_path, NULL},
        {"heads", &heads_text, NULL},
        {"norm", &norm, NULL},
        {"variant", &attention, NULL},
        {"cross-variant", &cross_attention, NULL},
        {"activation", &activation, NULL},
        {"precision", &precision, NULL},
        {"feature-map", &feature_map, NULL},
        {"threads", &threads_text, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;

    /* step 1: the flags, all checked before any file is read */
    const char *required[][2] = {{"--weights", weights},
                                 {"--src", src_path},
                                 {"--tgt", tgt_path},
                                 {"--out", out_path},
                                 {"--heads", heads_text}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i][1])
            return cli_fail(required[i][0], "required flag is missing (see linattn help model)");
    size_t heads;
    if ((rc = cli_parse_size("--heads", heads_text, &heads))) return rc;
    if (heads < 1) return cli_fail("--heads", "must be at least 1");
    const layer_flags_text lt = {norm,      attention,   cross_attention, activation,
                                 precision, feature_map, threads_text};
    layer_flags_values lv;
    if ((rc = layer_flags_parse(&lt, &lv))) return rc;
    la_kernel kernel = lv.kernel;
    const la_dtype dtype = lv.dtype;

    /* step 2: the weights (the layer counts from the files, D and d_ff from their shapes) */
    size_t encoder_layers, decoder_layers;
    if ((rc = count_layers(weights, "encoder", &encoder_layers)) ||
        (rc = count_layers(weights, "decoder", &decoder_layers)))
        return rc;
    la_transformer_weights w;
    la_load_error err;
    la_status st =
        la_transformer_weights_load(&w, dtype, encoder_layers, decoder_layers, weights, &err);
    if (st != LA_OK) return cli_fail(err.path[0] ? err.path : weights, "%s", err.why);
    const size_t D = w.d_model;

    /* step 3: the source and the target, floats or embedded token ids, of one batch */
    la_array src = {0}, tgt = {0}, y = {0};
    size_t batch, tgt_batch, n_src, n_tgt;
    if ((rc = read_sequence(src_path, weights, "src", dtype, D, &src, &batch, &n_src)) ||
        (rc = read_sequence(tgt_path, weights, "tgt", dtype, D, &tgt, &tgt_batch, &n_tgt)))
        goto done;
    if (src.ndim != tgt.ndim || batch != tgt_batch) {
        char s_shape[160], t_shape[160];
        rc = cli_fail(tgt_path,
                      "shape %s does not fit the source's %s: both batched (B, ·, D) "
                      "with the same B, or neither",
                      arrays_shape_str(&tgt, t_shape, sizeof t_shape),
                      arrays_shape_str(&src, s_shape, sizeof s_shape));
        goto done;
    }
    if (D % heads != 0) {
        rc = cli_fail("--heads", "%zu does not divide D = %zu (from %s)", heads, D, weights);
        goto done;
    }

    /* step 4: the model */
    la_layer_config c;
    la_layer_config_init(&c, D, heads, w.d_ff);
    c.norm = lv.norm;
    c.attention = kernel;
    c.cross_attention = lv.cross_kernel;
    c.activation = lv.activation;
    c.feature_map = lv.feature_map;
    y = tgt;
    y.data = malloc(tgt.count * la_npy_dtype_size(tgt.dtype));
    if (!y.data) {
        rc = cli_fail("model", "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    if (dtype == LA_FLOAT32)
        st = la_transformer(&c, &w, LA_FLOAT32, batch, n_src, n_tgt, src.data, tgt.data, NULL,
                            y.data);
    else
        st = la_transformer(&c, &w, LA_FLOAT64, batch, n_src, n_tgt, src.data, tgt.data, NULL,
                            y.data);
    if (st == LA_ERANGE && dtype == LA_FLOAT32) {
        rc = cli_fail("model", "values overflow float32: use --precision float64");
        goto done;
    }
    if (st != LA_OK) {
        rc = cli_fail("model", "%s", la_strerror(st));
        goto done;
    }

    /* step 5: written atomically */
    rc = arrays_write_npy(out_path, &y);
done:
    la_transformer_weights_free(&w);
    la_array_free(&src);
    la_array_free(&tgt);
    la_array_free(&y);
    return rc;
}

/* block.c — `linattn block`: one Transformer encoder layer (nn.TransformerEncoderLayer,
 * batch_first, dropout off) or decoder layer (nn.TransformerDecoderLayer, over a memory)
 * on an .npy input, with PyTorch-layout weights loaded from a folder of .npy files named
 * by their state_dict keys. */
#include "commands.h"
#include "common/arrays.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/layer_flags.h"
#include "common/memory.h"
#include "common/position.h"
#include "common/variants.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn block --weights DIR --x X.npy --out Y.npy --heads H [options]\n"
    "       linattn block --layer decoder --memory M.npy --weights DIR --x X.npy ...\n"
    "\n"
    "Runs one Transformer encoder layer, as torch.nn.TransformerEncoderLayer(D, H, d_ff,\n"
    "dropout=0, batch_first=True) computes it, on X and writes the output Y.\n"
    "  post-LN (PyTorch's default):   x = LN1(x + SelfAttn(x));  y = LN2(x + FFN(x))\n"
    "  pre-LN (norm_first=True):      x = x + SelfAttn(LN1(x));  y = x + FFN(LN2(x))\n"
    "with FFN(x) = linear2(act(linear1(x))) and LayerNorm ε = 1e-5. With --variant\n"
    "linear every head uses elu+1 linear attention (the paper's linear Transformer).\n"
    "With --layer decoder, one nn.TransformerDecoderLayer: self-attention over X (masked\n"
    "with --causal, PyTorch's tgt_mask = generate_square_subsequent_mask(N)), then\n"
    "cross-attention from X to the memory M (the encoder's output; never masked), then FFN:\n"
    "  post-LN:  x = LN1(x + SelfAttn(x)); x = LN2(x + CrossAttn(x, M)); y = LN3(x + FFN(x))\n"
    "  pre-LN:   x = x + SelfAttn(LN1(x)); x = x + CrossAttn(LN2(x), M); y = x + FFN(LN3(x))\n"
    "(pre-LN does not normalise M). --cross-variant gives the cross-attention its own kernel.\n"
    "X is (N, D) or (B, N, D), PyTorch's batch_first layout: the heads are split off D\n"
    "inside the layer, so X has no head axis to lay out (--layout, which attend and\n"
    "accuracy take, is refused here with that reason). On success one line on stderr\n"
    "says how X was read: B, H, N, M, d_k = d_v = D/H, precision and layout.\n"
    "\n"
    "DIR holds one .npy file (float32 or float64) per tensor of the layer's state_dict:\n"
    "  self_attn.in_proj_weight (3D, D)   self_attn.in_proj_bias (3D)\n"
    "  self_attn.out_proj.weight (D, D)   self_attn.out_proj.bias (D)\n"
    "  linear1.weight (d_ff, D)  linear1.bias (d_ff)  linear2.weight (D, d_ff)  linear2.bias (D)\n"
    "  norm1.weight (D)  norm1.bias (D)  norm2.weight (D)  norm2.bias (D)\n"
    "and for a decoder layer also\n"
    "  multihead_attn.in_proj_weight (3D, D)   multihead_attn.in_proj_bias (3D)\n"
    "  multihead_attn.out_proj.weight (D, D)   multihead_attn.out_proj.bias (D)\n"
    "  norm3.weight (D)  norm3.bias (D)\n"
    "D and d_ff are read from the shapes. In Python:\n"
    "  for k, t in layer.state_dict().items(): np.save(f\"DIR/{k}.npy\", t.numpy())\n"
    "With --prefix P the files are DIR/P<key>.npy: layer i of a `linattn train`\n"
    "checkpoint is --weights CKPT --prefix layers.i. (with --causal, and --norm pre\n"
    "unless it was trained post-LN), and of a model's stack --prefix encoder.layers.i.\n"
    "X is (N, D) or (B, N, D), float32 or float64; Y has X's shape, in --precision.\n"
    "M is (M, D) for X (N, D), (B, M, D) for X (B, N, D): the same B and D, any M.\n"
    "\n"
    "required:\n"
    "  --weights DIR        the folder of .npy tensors\n"
    "  --x X.npy            the input\n"
    "  --out Y.npy          the output, written atomically (nothing on any error)\n"
    "  --heads H            attention heads, dividing D\n"
    "  --memory M.npy       with --layer decoder only: what the cross-attention reads\n"
    "options (default in brackets):\n"
    "  --prefix P           the tensors' file names start with P [none]\n"
    "  --layer L            encoder or decoder [encoder]\n"
    "  --norm post|pre      LayerNorm after (post) or before (pre) each sublayer [post]\n"
    "  --variant K          the kernel, one of those below [softmax]\n"
    "  --cross-variant K    decoder only: the cross-attention's kernel [--variant's]\n"
    "  --causal             query i sees tokens j <= i (is_causal=True; in a decoder\n"
    "                       layer its self-attention only) [off]\n"
    "  --activation F       relu or gelu (exact, erf) [relu]\n"
    "  --precision P        float32 or float64 [float32]\n";
static const char help_feature_map[] =
    "  --feature-map F      %s only: elu (φ = elu + 1) or relu [elu]\n";
static const char help_after_feature_map[] =
    "  --threads T          OpenMP threads [LA_NUM_THREADS, else all cores];\n"
    "                       " CLI_THREADS_HELP "\n"
    "  --attention A        deprecated spelling of --variant A\n";
static const char help_after_kernels[] =
    "\n"
    "exit status: 0 done, 2 bad flags, input or weights (one line on stderr:\n"
    "linattn: WHAT: why, naming the file at fault)\n"
    "\n"
    "example:\n"
    "  linattn block --weights layer0/ --x x.npy --out y.npy --heads 8 --precision float64\n"
    "  linattn block --layer decoder --weights dec0/ --x tgt.npy --memory mem.npy --causal \\\n"
    "      --out y.npy --heads 8 --variant linear --cross-variant softmax\n";

void cmd_block_help(FILE *out)
{
    char names[512];
    fputs(help_text, out);
    fprintf(out, help_feature_map,
            kernels_kernel_names(layer_flags_reads_feature_map, ", ", names, sizeof names));
    fputs(help_after_feature_map, out);
    position_print_help(out);
    fputs("  --seed S             learned and relative: the drawn tables' seed [0]\n"
          "                       In block, absolute positions are added to X before the\n"
          "                       layer; rotary rotates each head's queries and keys in the\n"
          "                       self-attention (linear: RoFormer's form, see help attend);\n"
          "                       relative runs the relative kernel in the self-attention\n"
          "                       (tables (2K+1, D/H), shared by the heads)\n",
          out);
    fputs("\n", out);
    kernels_print_kernels(out, kernels_layer_kernel, ", those a layer can use");
    fputs(help_after_kernels, out);
}

static const char *const layer_names[] = {"encoder", "decoder", NULL};
/* --positions and --seed against the kernel: relative runs the relative kernel in place
 * of softmax (--variant relative alone means it); rotary not with FAVOR+; --seed only
 * for a drawn table (learned, relative). */
static int block_positions(position_flags *pf, const char *seed_text, size_t *seed,
                           la_kernel *kernel, position_values *pos)
{
    if ((la_kernel_get(*kernel)->caps & LA_CAP_POSITIONS) && !pf->positions)
        pf->positions = "relative";
    int rc = position_parse(pf, pos);
    if (rc) return rc;
    if (pos->kind == POSITION_RELATIVE) {
        if (!kernels_exact_softmax(*kernel) && !(la_kernel_get(*kernel)->caps & LA_CAP_POSITIONS))
            return cli_fail("--positions", "relative applies to softmax attention only, not %s",
                            la_kernel_name(*kernel));
        *kernel = LA_KERNEL_RELATIVE;
    } else if (la_kernel_get(*kernel)->caps & LA_CAP_POSITIONS) {
        return cli_fail("--positions", "--variant relative is --positions relative, not %s",
                        position_name(pos->kind));
    }
    if (pos->kind == POSITION_ROTARY &&
        !(la_kernel_get(*kernel)->caps & (LA_CAP_ROTARY | LA_CAP_ROTARY_FEATURES)))
        return cli_fail("--positions", "rotary does not apply to favor");
    const int drawn = (pos->kind == POSITION_LEARNED && !pos->table.data) ||
                      (pos->kind == POSITION_RELATIVE && !pos->rel_k.data);
    if (seed_text && !drawn)
        return cli_fail("--seed", "applies to a drawn table only (--positions learned without "
                                  "--position-table, relative without --relative)");
    if (seed_text && (rc = cli_parse_size("--seed", seed_text, seed))) return rc;
    return 0;
}

/* A sequence input: (N, D) or (B, N, D) with no zero dimension; *batch and *rows from
 * its shape. 0, or 2 after one line naming the file. */
static int check_sequence(const char *path, const la_array *a, size_t D, size_t *batch,
                          size_t *rows)
{
    char shape[160];
    if (a->ndim != 2 && a->ndim != 3)
        return cli_fail(path, "shape %s must be (N, D) or (B, N, D)",
                        arrays_shape_str(a, shape, sizeof shape));
    if (a->shape[a->ndim - 1] != D)
        return cli_fail(path, "shape %s: last dim must be D = %zu, the weights' d_model",
                        arrays_shape_str(a, shape, sizeof shape), D);
    *batch = a->ndim == 3 ? a->shape[0] : 1;
    *rows = a->shape[a->ndim - 2];
    if (*batch == 0 || *rows == 0)
        return cli_fail(path, "shape %s has a zero dimension",
                        arrays_shape_str(a, shape, sizeof shape));
    return 0;
}

int cmd_block(int argc, char **argv)
{
    const char *weights = NULL, *x_path = NULL, *out_path = NULL, *heads_text = NULL;
    const char *norm = NULL, *attention = NULL, *activation = NULL, *precision = NULL;
    const char *feature_map = NULL, *threads_text = NULL, *seed_text = NULL;
    const char *layer = NULL, *memory_path = NULL, *cross_attention = NULL, *layout = NULL;
    const char *prefix = "";
    position_flags pf = {0};
    position_values pos = {0};
    int causal = 0;
    const cli_flag flags[] = {
        {"weights", &weights, NULL},
        {"prefix", &prefix, NULL},
        {"x", &x_path, NULL},
        {"layer", &layer, NULL},
        {"memory", &memory_path, NULL},
        {"cross-variant", &cross_attention, NULL},
        {"out", &out_path, NULL},
        {"heads", &heads_text, NULL},
        {"norm", &norm, NULL},
        {"variant", &attention, NULL},
        {"causal", NULL, &causal},
        {"activation", &activation, NULL},
        {"precision", &precision, NULL},
        {"feature-map", &feature_map, NULL},
        {"threads", &threads_text, NULL},
        {"seed", &seed_text, NULL},
        {"layout", &layout, NULL},
        POSITION_FLAGS(pf),
        {NULL, NULL, NULL},
    };
    static const cli_alias renamed[] = {{"attention", "variant"}, {NULL, NULL}};
    int rc = cli_parse_flags_aliased(argc, argv, flags, renamed);
    if (rc) return rc;

    /* step 1: the flags, all checked before any file is read */
    if (layout)
        return cli_fail("--layout", "X is (N, D) or (B, N, D): its heads are split off D inside "
                                    "the layer, so there is no head axis to lay out");
    const char *required[][2] = {
        {"--weights", weights}, {"--x", x_path}, {"--out", out_path}, {"--heads", heads_text}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i][1])
            return cli_fail(required[i][0], "required flag is missing (see linattn help block)");
    size_t heads;
    int decoder = 0;
    if ((rc = cli_parse_size("--heads", heads_text, &heads))) return rc;
    if (heads < 1) return cli_fail("--heads", "must be at least 1");
    if ((layer && (rc = cli_parse_choice("--layer", layer, layer_names, &decoder)))) return rc;
    if (decoder && !memory_path)
        return cli_fail("--memory", "required with --layer decoder (see linattn help block)");
    if (!decoder && memory_path) return cli_fail("--memory", "applies to --layer decoder only");
    if (!decoder && cross_attention)
        return cli_fail("--cross-variant", "applies to --layer decoder only");
    const layer_flags_text lt = {norm,      attention,   cross_attention, activation,
                                 precision, feature_map, threads_text};
    layer_flags_values lv;
    if ((rc = layer_flags_parse(&lt, &lv))) return rc;
    la_kernel kernel = lv.kernel;
    const la_dtype dtype = lv.dtype;
    size_t seed = 0;
    if ((rc = block_positions(&pf, seed_text, &seed, &kernel, &pos))) {
        position_free(&pos);
        return rc;
    }

    /* step 2: the weights (D and d_ff from their shapes), then X and the memory */
    la_layer_weights w;
    la_load_error err;
    la_array x = {0}, y = {0}, memory = {0};
    la_status st = la_layer_weights_load(&w, dtype, decoder, weights, prefix, &err);
    if (st != LA_OK) {
        position_free(&pos);
        return cli_fail(err.path[0] ? err.path : weights, "%s", err.why);
    }
    const size_t D = w.d_model;
    size_t batch, n, m = 0, memory_batch;
    if ((rc = arrays_read_floats(x_path, dtype, &x)) ||
        (rc = check_sequence(x_path, &x, D, &batch, &n)))
        goto done;
    if (decoder && ((rc = arrays_read_floats(memory_path, dtype, &memory)) ||
                    (rc = check_sequence(memory_path, &memory, D, &memory_batch, &m))))
        goto done;
    if (decoder && (memory.ndim != x.ndim || memory_batch != batch)) {
        char x_shape[160], m_shape[160];
        rc = cli_fail(memory_path,
                      "shape %s does not fit X %s: (M, D) for (N, D), (B, M, D) for "
                      "(B, N, D)",
                      arrays_shape_str(&memory, m_shape, sizeof m_shape),
                      arrays_shape_str(&x, x_shape, sizeof x_shape));
        goto done;
    }
    if (D % heads != 0) {
        rc = cli_fail("--heads",
                      "%zu does not divide D = %zu (from %s/self_attn.in_proj_weight.npy)", heads,
                      D, weights);
        goto done;
    }

    /* positions: absolute ones added to X; rotary and relative in the self-attention */
    if ((rc = position_add_absolute(&pos, x_path, seed, &x))) goto done;
    if (pos.kind == POSITION_ROTARY && (D / heads) % 2 != 0) {
        rc = cli_fail("--positions", "rotary rotates channel pairs: D/H = %zu must be even",
                      D / heads);
        goto done;
    }
    if (pos.rel_k.data && (pos.rel_k.shape[1] != D / heads || pos.rel_v.shape[1] != D / heads)) {
        rc = cli_fail("--relative", "a^K %zu wide, a^V %zu: both need D/H = %zu columns",
                      pos.rel_k.shape[1], pos.rel_v.shape[1], D / heads);
        goto done;
    }

    /* step 3: the layer */
    la_layer_config c;
    la_layer_config_init(&c, D, heads, w.d_ff);
    c.norm = lv.norm;
    c.attention = kernel;
    c.cross_attention = lv.cross_kernel;
    c.activation = lv.activation;
    c.feature_map = lv.feature_map;
    c.rotary = pos.kind == POSITION_ROTARY;
    variants_values blocks; /* the attention's: the defaults, --seed's draws, positions */
    variants_defaults(&blocks, (uint64_t)seed);
    blocks.blocks.relative.max_distance = pos.max_distance;
    blocks.blocks.relative.rel_k = pos.rel_k.data;
    blocks.blocks.relative.rel_v = pos.rel_v.data;
    c.params = variants_chain(&blocks); /* points into blocks */
    y = x;
    y.data = malloc(x.count * la_npy_dtype_size(x.dtype));
    if (!y.data) {
        rc = cli_fail("block", "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    if (decoder && dtype == LA_FLOAT32)
        st = la_decoder_layer(&c, &w, LA_FLOAT32, batch, n, m, x.data, memory.data, causal, NULL,
                              NULL, y.data);
    else if (decoder)
        st = la_decoder_layer(&c, &w, LA_FLOAT64, batch, n, m, x.data, memory.data, causal, NULL,
                              NULL, y.data);
    else if (dtype == LA_FLOAT32)
        st = la_encoder_layer(&c, &w, LA_FLOAT32, batch, n, x.data, causal, NULL, y.data);
    else
        st = la_encoder_layer(&c, &w, LA_FLOAT64, batch, n, x.data, causal, NULL, y.data);
    if (st == LA_ERANGE && dtype == LA_FLOAT32) {
        rc = cli_fail("block", "values overflow float32: use --precision float64");
        goto done;
    }
    if (st != LA_OK) {
        rc = cli_fail("block", "%s", la_strerror(st));
        goto done;
    }

    /* step 4: written atomically, then how X was read: (B, N, D) rows split into heads
     * of D/H inside the layer (the self-attention's M is N; a decoder's cross-attention
     * reads M memory rows) */
    rc = arrays_write_npy(out_path, &y);
    if (!rc)
        fprintf(stderr,
                "block: input B=%zu H=%zu N=%zu M=%zu d_k=%zu d_v=%zu, %s, layout (B, N, D) "
                "with D = H·d split into heads inside the layer\n",
                batch, heads, n, decoder ? m : n, D / heads, D / heads,
                dtype == LA_FLOAT32 ? "float32" : "float64");
done:
    position_free(&pos);
    la_layer_weights_free(&w);
    la_array_free(&x);
    la_array_free(&memory);
    la_array_free(&y);
    return rc;
}

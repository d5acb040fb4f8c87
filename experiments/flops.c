/* flops.c — `linattn flops`: the FLOPs and bytes of one Transformer layer forward, per
 * component, from the library's one model (la_layer_cost_model, la_attention_cost). */
#include "commands.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/models.h"

#include <stdio.h>
#include <string.h>

static const char help_usage[] =
    "usage: linattn flops --d-model D --heads H --d-ff F --n N [--m M] [--batch B]\n"
    "       linattn flops --model NAME --n N [any flag below, to change one size]\n";
static const char help_text[] =
    "                     [--layer encoder|decoder] [--precision float32|float64]\n"
    "                     [--feature-map elu|relu] [--chunk C] [--threads T]\n"
    "                     [--format table|csv]\n"
    "\n"
    "FLOPs and memory of one Transformer layer forward on B sequences of N tokens, per\n"
    "component: the model every benchmark and experiment takes its GFLOP/s from. A\n"
    "multiply-add counts 2 FLOPs; an add, multiply, divide, compare, max or exp 1; only\n"
    "the (query, key) pairs the causal mask leaves visible are counted.\n"
    "  projections   Q, K, V and output: 2·rows·D² + rows·D each (decoder: also the\n"
    "                cross-attention's, K and V over the M memory rows)\n"
    "  attention_*   the kernel's own breakdown (self-attention; cross_attention_* for a\n"
    "                decoder layer): qk 2·pairs·d_k, softmax 5·pairs, av 2·pairs·d_v for\n"
    "                softmax; phi, kv, qs, normalize for linear (O(N·d_k·d_v) per head)\n"
    "  ffn           2·B·N·D·F twice, biases B·N·(F + D), activation B·N·F\n"
    "  layer_norm    (8·D + 5) per row per LayerNorm (2 per encoder, 3 per decoder layer)\n"
    "  residual      B·N·D per sublayer\n"
    "memory (bytes): weights (the layer's parameters), activations (the scratch the layer\n"
    "allocates: Q, K, V, the heads' output, its working copies, the FFN's hidden rows),\n"
    "attention_workspace (the kernel's scratch at its peak, for the thread count: the N×M\n"
    "score matrix for softmax_materialized, a block per thread for the fused softmax, the\n"
    "d_k×d_v state for linear).\n"
    "\n"
    "required:\n"
    "  --d-model D, --heads H (dividing D), --d-ff F, --n N      all >= 1\n"
    "  or --model NAME: D, H and d_ff of a published model (as linattn params --model);\n"
    "                       a decoder-only model (GPT-2) runs its causal self-attention\n"
    "options (default in brackets):\n"
    "  --m M                decoder: memory tokens of the cross-attention [N]\n"
    "  --batch B            [1]\n"
    "  --variant K          the kernel, one of those below [softmax]\n"
    "  --cross-variant K    decoder: the cross-attention's kernel [--variant's]\n"
    "  --causal             causal self-attention [off]\n"
    "  --layer L            encoder or decoder [encoder]\n"
    "  --precision P        float32 or float64: element size of the bytes [float32]\n"
    "  --feature-map F      linear: elu or relu [elu]\n"
    "  --chunk C            linear --causal: tokens per chunk [32]\n"
    "  --threads T          threads the workspace is counted for [LA_NUM_THREADS, else all];\n"
    "                       " CLI_THREADS_HELP "\n"
    "  --format FMT         table or csv (header component,flops,bytes; one row per\n"
    "                       component, FLOP rows with bytes empty and memory rows with\n"
    "                       flops empty) [table]\n"
    "  --attention A        deprecated spelling of --variant A\n";
static const char help_after_kernels[] =
    "\n"
    "exit status: 0 done, 2 bad flags (one line on stderr: linattn: WHAT: why)\n"
    "\n"
    "example:\n"
    "  linattn flops --d-model 512 --heads 8 --d-ff 2048 --n 4096 --variant linear --causal\n";

void cmd_flops_help(FILE *out)
{
    char names[512];
    fputs(help_usage, out);
    fprintf(out, "                     [--variant %s] [--causal]\n",
            kernels_kernel_names(kernels_layer_kernel, "|", names, sizeof names));
    fputs(help_text, out);
    fputs("\n", out);
    kernels_print_kernels(out, kernels_layer_kernel, ", those a layer can use");
    fputs(help_after_kernels, out);
}

static const char *const layer_names[] = {"encoder", "decoder", NULL};
static const char *const precision_names[] = {"float32", "float64", NULL};
static const char *const format_names[] = {"table", "csv", NULL};

/* One output row: FLOPs or bytes (the other negative: not applicable). */
typedef struct {
    char name[48];
    double flops, bytes;
} row;

/* The kernel's breakdown as rows named prefix_qk, prefix_softmax, … */
static size_t attention_rows(const char *prefix, const la_cost *c, row *rows)
{
    const char *names[] = {"qk", "softmax", "av", "phi", "kv", "qs", "normalize"};
    const double values[] = {c->flops_qk, c->flops_softmax, c->flops_av,       c->flops_phi,
                             c->flops_kv, c->flops_qs,      c->flops_normalize};
    for (size_t i = 0; i < 7; i++) {
        snprintf(rows[i].name, sizeof rows[i].name, "%s_%s", prefix, names[i]);
        rows[i].flops = values[i];
        rows[i].bytes = -1;
    }
    return 7;
}

static size_t add_row(row *rows, size_t n, const char *name, double flops, double bytes)
{
    snprintf(rows[n].name, sizeof rows[n].name, "%s", name);
    rows[n].flops = flops;
    rows[n].bytes = bytes;
    return n + 1;
}

int cmd_flops(int argc, char **argv)
{
    const char *d_model = NULL, *heads = NULL, *d_ff = NULL, *n_text = NULL, *m_text = NULL;
    const char *batch_text = NULL, *attention = NULL, *cross_attention = NULL, *layer = NULL,
               *precision = NULL;
    const char *feature_map = NULL, *chunk = NULL, *threads = NULL, *format = NULL;
    const char *model = NULL;
    int causal = 0;
    const cli_flag flags[] = {
        {"model", &model, NULL},
        {"d-model", &d_model, NULL},
        {"heads", &heads, NULL},
        {"d-ff", &d_ff, NULL},
        {"n", &n_text, NULL},
        {"m", &m_text, NULL},
        {"batch", &batch_text, NULL},
        {"variant", &attention, NULL},
        {"cross-variant", &cross_attention, NULL},
        {"causal", NULL, &causal},
        {"layer", &layer, NULL},
        {"precision", &precision, NULL},
        {"feature-map", &feature_map, NULL},
        {"chunk", &chunk, NULL},
        {"threads", &threads, NULL},
        {"format", &format, NULL},
        {NULL, NULL, NULL},
    };
    static const cli_alias renamed[] = {{"attention", "variant"}, {NULL, NULL}};
    int rc = cli_parse_flags_aliased(argc, argv, flags, renamed);
    if (rc) return rc;
    size_t D = 0, H = 0, F = 0, N = 0, M = 0, B = 1, C = LA_DEFAULT_CHUNK;
    int decoder = 0, prec = 0, fmt = 0;
    la_kernel kernel = LA_KERNEL_SOFTMAX, cross_kernel = LA_KERNEL_COUNT; /* as --variant */
    const models_entry *preset = NULL;
    if (model) {
        if ((rc = models_parse("--model", model, &preset))) return rc;
        D = preset->size.d_model, H = preset->size.heads, F = preset->size.d_ff;
        if (strcmp(preset->stack, "decoder-only") == 0) causal = 1;
    }
    const int required = preset == NULL;
    if ((rc = cli_parse_size_flag("flops", "--d-model", d_model, required, 1, &D)) ||
        (rc = cli_parse_size_flag("flops", "--heads", heads, required, 1, &H)) ||
        (rc = cli_parse_size_flag("flops", "--d-ff", d_ff, required, 1, &F)) ||
        (rc = cli_parse_size_flag("flops", "--n", n_text, 1, 1, &N)) ||
        (rc = cli_parse_size_flag("flops", "--m", m_text, 0, 1, &M)) ||
        (rc = cli_parse_size_flag("flops", "--batch", batch_text, 0, 1, &B)) ||
        (rc = cli_parse_size_flag("flops", "--chunk", chunk, 0, 1, &C)))
        return rc;
    if ((attention &&
         (rc = kernels_parse_kernel("--variant", attention, kernels_layer_kernel, &kernel))) ||
        (cross_attention && (rc = kernels_parse_kernel("--cross-variant", cross_attention,
                                                       kernels_layer_kernel, &cross_kernel))) ||
        (layer && (rc = cli_parse_choice("--layer", layer, layer_names, &decoder))) ||
        (precision && (rc = cli_parse_choice("--precision", precision, precision_names, &prec))) ||
        (format && (rc = cli_parse_choice("--format", format, format_names, &fmt))))
        return rc;
    if ((rc = cli_parse_threads("--threads", threads))) return rc;
    if (D % H != 0) return cli_fail("--heads", "%zu does not divide --d-model %zu", H, D);
    if (m_text && !decoder) return cli_fail("--m", "applies to --layer decoder only");
    if (cross_attention && !decoder)
        return cli_fail("--cross-variant", "applies to --layer decoder only");
    if (!m_text) M = N;
    la_layer_config c;
    la_layer_config_init(&c, D, H, F);
    c.attention = kernel;
    c.cross_attention = cross_kernel;
    c.chunk = C;
    if (feature_map && la_feature_map_parse(feature_map, &c.feature_map) != LA_OK) {
        char hint[160];
        return cli_fail("--feature-map", "'%s' is not one of elu, relu%s", feature_map,
                        cli_did_you_mean(feature_map, "elu, relu", hint, sizeof hint));
    }
    la_dtype dtype = prec ? LA_FLOAT64 : LA_FLOAT32;

    la_layer_cost lc;
    la_status st = la_layer_cost_model(&c, decoder, B, N, M, causal, dtype, &lc);
    if (st != LA_OK) return cli_fail("flops", "%s", la_strerror(st));

    row rows[32];
    size_t n = 0;
    n = add_row(rows, n, "projections", lc.projections, -1);
    n += attention_rows("attention", &lc.self_attention, rows + n);
    if (decoder) n += attention_rows("cross_attention", &lc.cross_attention, rows + n);
    n = add_row(rows, n, "attention", lc.attention, -1);
    n = add_row(rows, n, "ffn", lc.ffn, -1);
    n = add_row(rows, n, "layer_norm", lc.layer_norm, -1);
    n = add_row(rows, n, "residual", lc.residual, -1);
    n = add_row(rows, n, "total", lc.total, -1);
    n = add_row(rows, n, "weights", -1, lc.weight_bytes);
    n = add_row(rows, n, "activations", -1, lc.activation_bytes);
    n = add_row(rows, n, "attention_workspace", -1, lc.workspace_bytes);

    if (fmt == 1) {
        printf("component,flops,bytes\n");
        for (size_t i = 0; i < n; i++) {
            printf("%s,", rows[i].name);
            if (rows[i].flops >= 0) printf("%.17g", rows[i].flops);
            printf(",");
            if (rows[i].bytes >= 0) printf("%.17g", rows[i].bytes);
            printf("\n");
        }
        return 0;
    }
    if (preset) printf("%s (%s): %s\n", preset->name, preset->stack, preset->about);
    const int block_only = preset && !decoder && strcmp(preset->stack, "decoder-only") == 0;
    printf("%s, %s attention%s: B = %zu, N = %zu%s, D = %zu, H = %zu, d_ff = %zu, %s\n\n",
           decoder      ? "decoder layer"
           : block_only ? "decoder-only block (self-attention and FFN, no cross-attention)"
                        : "encoder layer",
           la_kernel_name(kernel), causal ? " (causal)" : "", B, N, decoder ? "" : " (M = N)", D, H,
           F, precision_names[prec]);
    if (decoder)
        printf("cross-attention (%s) over M = %zu memory tokens\n\n",
               la_kernel_name(cross_kernel == LA_KERNEL_COUNT ? kernel : cross_kernel), M);
    printf("  %-28s %16s %8s\n", "component", "GFLOP", "share");
    for (size_t i = 0; i < n; i++) {
        if (rows[i].flops < 0) continue;
        /* the kernel's breakdown rows: only those the kernel has */
        if (strchr(rows[i].name, '_') && strstr(rows[i].name, "attention_") && rows[i].flops == 0)
            continue;
        printf("  %-28s %16.6f %7.2f%%\n", rows[i].name, rows[i].flops / 1e9,
               100 * rows[i].flops / lc.total);
    }
    printf("\n  %-28s %16s\n", "memory", "MiB");
    for (size_t i = 0; i < n; i++)
        if (rows[i].bytes >= 0)
            printf("  %-28s %16.3f\n", rows[i].name, rows[i].bytes / (1024.0 * 1024.0));
    return 0;
}

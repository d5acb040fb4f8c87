/* params.c — `linattn params`: exact parameter counts of a Transformer, per component,
 * as PyTorch (or the model's reference implementation) counts them, beside the 12·D²
 * approximation (la_param_counts); --model takes a published model's sizes from
 * common/models.c. */
#include "commands.h"
#include "common/cli.h"
#include "common/models.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn params --d-model D --heads H --d-ff F [--encoder-layers L]\n"
    "                      [--decoder-layers L2] [--vocab V] [--learned-positions P]\n"
    "                      [--format table|csv|json]\n"
    "       linattn params --model NAME [any flag above, to change one size]\n"
    "\n"
    "Exact parameter counts of a Transformer as PyTorch builds it (nn.MultiheadAttention,\n"
    "nn.TransformerEncoderLayer, nn.TransformerDecoderLayer, nn.Transformer with its\n"
    "final norms), per component, and the familiar 12·D² approximation beside them:\n"
    "  mha            4·D² + 4·D      (in_proj 3D×D + 3D, out_proj D×D + D)\n"
    "  ffn            2·D·F + F + D   (linear1 F×D + F, linear2 D×F + D)\n"
    "  layer_norm     2·D             (γ, β)\n"
    "  encoder_layer  mha + ffn + 2 layer_norm        (= 12·D² + 13·D when F = 4·D)\n"
    "  decoder_layer  2 mha + ffn + 3 layer_norm      (= 16·D² + 19·D when F = 4·D)\n"
    "  encoder        L encoder layers + the final layer_norm (0 when L = 0)\n"
    "  decoder        L2 decoder layers + the final layer_norm (0 when L2 = 0)\n"
    "  embedding      V·D (one token table, shared by the stacks; only with --vocab)\n"
    "  positional     P·D (a learned position table; only with --learned-positions;\n"
    "                 the sinusoidal encoding has no parameters)\n"
    "  total          the sum of the components above (and of a model's own below)\n"
    "  approx_12d2    the D² terms only with F = 4·D: 12·D² per encoder layer, 16·D² per\n"
    "                 decoder layer; approx_gap = (exact − approx) / exact over the layers\n"
    "\n"
    "--model NAME counts a published model as its reference implementation builds it\n"
    "(checked against the published counts by tests/command/test_models.c):\n"
    "%s"
    "Their own components: token_type (BERT's 2 segments, 2·D), relative_position (T5: 32\n"
    "buckets × H per stack), embedding_norm (BERT's LayerNorm after the embeddings; BERT and\n"
    "the original Transformer are post-LN, with no final norms), pooler (BERT, D² + D); T5's\n"
    "projections and FFN have no biases (mha 4·D², ffn 2·D·F) and its norms a scale only (D).\n"
    "Every head is tied to the token table (no parameters of its own): GPT-2's and T5's LM\n"
    "heads, the Transformer's pre-softmax layer; BERT is counted without its MLM head.\n"
    "The Transformer's paper gives only 65M and 213M: with its 37000 shared BPE tokens the\n"
    "architecture has 63,082,496 (2.9%% below) and 214,245,376 (0.6%% above).\n"
    "\n"
    "required (without --model):\n"
    "  --d-model D, --heads H (dividing D), --d-ff F      all >= 1\n"
    "options (default in brackets, or the model's):\n"
    "  --encoder-layers L   [1: one encoder layer, the unit the 12·D² rule describes]\n"
    "  --decoder-layers L2  [0]  (nn.Transformer's default is 6 and 6: give them)\n"
    "  --vocab V            [0: no embedding table]\n"
    "  --learned-positions P  [0: sinusoidal]\n"
    "  --format FMT         table, csv (header, then one row per component: name,\n"
    "                       exact count, formula, approx_gap on the approx_12d2 row) or\n"
    "                       json [table]\n"
    "\n"
    "exit status: 0 done, 2 bad flags (one line on stderr: linattn: WHAT: why)\n"
    "\n"
    "examples:\n"
    "  linattn params --model gpt2-medium          (354823168 parameters)\n"
    "  linattn params --d-model 512 --heads 8 --d-ff 2048 --encoder-layers 6 \\\n"
    "      --decoder-layers 6 --format csv          (nn.Transformer's defaults: 44140544)\n";

void cmd_params_help(FILE *out)
{
    size_t n;
    const models_entry *m = models_all(&n);
    char list[4096] = "";
    size_t used = 0;
    for (size_t i = 0; i < n && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "  %-17s %s\n", m[i].name,
                                 m[i].about);
    fprintf(out, help_text, list);
}

enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };
static const char *const format_names[] = {"table", "csv", "json", NULL};

/* One output row: a component's name, its exact count, the formula it follows. */
typedef struct {
    const char *name;
    uint64_t count;
    const char *formula;
} row;

/* The rows to print, in order; the optional components only when the model has them. */
static size_t make_rows(const la_model_size *s, const la_param_count *c, row *rows)
{
    const int bias = !(s->options & LA_MODEL_NO_BIAS), rms = s->options & LA_MODEL_RMS_NORM;
    const int final_norm = !(s->options & LA_MODEL_NO_FINAL_NORM);
    size_t n = 0;
    rows[n++] = (row){"mha", c->mha, bias ? "4*D^2 + 4*D" : "4*D^2"};
    rows[n++] = (row){"ffn", c->ffn, bias ? "2*D*F + F + D" : "2*D*F"};
    rows[n++] = (row){"layer_norm", c->layer_norm, rms ? "D (RMSNorm)" : "2*D"};
    rows[n++] = (row){"encoder_layer", c->encoder_layer, "mha + ffn + 2*layer_norm"};
    rows[n++] = (row){"decoder_layer", c->decoder_layer, "2*mha + ffn + 3*layer_norm"};
    rows[n++] = (row){"encoder", c->encoder,
                      final_norm ? "L*encoder_layer + layer_norm" : "L*encoder_layer"};
    rows[n++] = (row){"decoder", c->decoder,
                      final_norm ? "L2*decoder_layer + layer_norm" : "L2*decoder_layer"};
    if (s->vocab) rows[n++] = (row){"embedding", c->embedding, "V*D"};
    if (s->learned_positions) rows[n++] = (row){"positional", c->positional, "P*D"};
    if (c->token_type) rows[n++] = (row){"token_type", c->token_type, "T*D"};
    if (c->relative_position)
        rows[n++] = (row){"relative_position", c->relative_position, "buckets*H per stack"};
    if (c->embedding_norm)
        rows[n++] = (row){"embedding_norm", c->embedding_norm, "layer_norm per stack"};
    if (c->pooler) rows[n++] = (row){"pooler", c->pooler, bias ? "D^2 + D" : "D^2"};
    if (c->head) rows[n++] = (row){"head", c->head, "V*D (untied)"};
    rows[n++] = (row){"total", c->total, "sum of the components above"};
    rows[n++] = (row){"approx_12d2", c->approx_12d2, "12*D^2*L + 16*D^2*L2"};
    return n;
}

int cmd_params(int argc, char **argv)
{
    const char *d_model = NULL, *heads = NULL, *d_ff = NULL, *enc = NULL, *dec = NULL;
    const char *vocab = NULL, *positions = NULL, *format = NULL, *model = NULL;
    const cli_flag flags[] = {
        {"model", &model, NULL},        {"d-model", &d_model, NULL},
        {"heads", &heads, NULL},        {"d-ff", &d_ff, NULL},
        {"encoder-layers", &enc, NULL}, {"decoder-layers", &dec, NULL},
        {"vocab", &vocab, NULL},        {"learned-positions", &positions, NULL},
        {"format", &format, NULL},      {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    /* one encoder layer by default: the unit of the 12·D² rule */
    la_model_size s = {0, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    const models_entry *preset = NULL;
    if (model) {
        if ((rc = models_parse("--model", model, &preset))) return rc;
        s = preset->size;
    }
    const int required = preset == NULL;
    int fmt = FORMAT_TABLE;
    if ((rc = cli_parse_size_flag("params", "--d-model", d_model, required, 1, &s.d_model)) ||
        (rc = cli_parse_size_flag("params", "--heads", heads, required, 1, &s.heads)) ||
        (rc = cli_parse_size_flag("params", "--d-ff", d_ff, required, 1, &s.d_ff)) ||
        (rc = cli_parse_size_flag("params", "--encoder-layers", enc, 0, 0, &s.encoder_layers)) ||
        (rc = cli_parse_size_flag("params", "--decoder-layers", dec, 0, 0, &s.decoder_layers)) ||
        (rc = cli_parse_size_flag("params", "--vocab", vocab, 0, 0, &s.vocab)) ||
        (rc = cli_parse_size_flag("params", "--learned-positions", positions, 0, 0,
                                  &s.learned_positions)))
        return rc;
    if (format && (rc = cli_parse_choice("--format", format, format_names, &fmt))) return rc;
    if (s.d_model % s.heads != 0)
        return cli_fail("--heads", "%zu does not divide --d-model %zu", s.heads, s.d_model);

    la_param_count c;
    la_status st = la_param_counts(&s, &c);
    if (st != LA_OK) return cli_fail("params", "%s", la_strerror(st));
    row rows[24];
    size_t n = make_rows(&s, &c, rows);

    if (fmt == FORMAT_CSV) {
        printf("component,parameters,formula,approx_gap\n");
        for (size_t i = 0; i < n; i++) {
            printf("%s,%" PRIu64 ",%s,", rows[i].name, rows[i].count, rows[i].formula);
            if (strcmp(rows[i].name, "approx_12d2") == 0) printf("%.17g", c.approx_gap);
            printf("\n");
        }
    } else if (fmt == FORMAT_JSON) {
        printf("{\"model\": %s%s%s, \"stack\": %s%s%s, \"d_model\": %zu, \"heads\": %zu, \"d_ff\": "
               "%zu, "
               "\"encoder_layers\": %zu, \"decoder_layers\": %zu, \"vocab\": %zu, "
               "\"learned_positions\": %zu,\n \"parameters\": {",
               preset ? "\"" : "", preset ? preset->name : "null", preset ? "\"" : "",
               preset ? "\"" : "", preset ? preset->stack : "null", preset ? "\"" : "", s.d_model,
               s.heads, s.d_ff, s.encoder_layers, s.decoder_layers, s.vocab, s.learned_positions);
        for (size_t i = 0; i < n; i++)
            printf("%s\"%s\": %" PRIu64, i ? ", " : "", rows[i].name, rows[i].count);
        printf("},\n \"approx_gap\": %.17g}\n", c.approx_gap);
    } else {
        if (preset) printf("%s: %s\n", preset->name, preset->about);
        printf("Transformer parameters: D = %zu, H = %zu, d_ff = %zu, ", s.d_model, s.heads,
               s.d_ff);
        if (preset && strcmp(preset->stack, "decoder-only") == 0 && s.decoder_layers == 0)
            printf("%zu decoder-only layers (masked self-attention and FFN, no cross-attention: "
                   "an encoder layer's parameters, counted in the encoder rows)\n\n",
                   s.encoder_layers);
        else if (preset && strcmp(preset->stack, "encoder-only") == 0 && s.decoder_layers == 0)
            printf("%zu encoder layers (encoder-only)\n\n", s.encoder_layers);
        else
            printf("%zu encoder + %zu decoder layers\n\n", s.encoder_layers, s.decoder_layers);
        printf("  %-17s %20s   %s\n", "component", "parameters", "formula");
        for (size_t i = 0; i < n; i++)
            printf("  %-17s %20" PRIu64 "   %s\n", rows[i].name, rows[i].count, rows[i].formula);
        printf("\n  the 12·D² approximation is %.4f%% below the exact count of the layers\n",
               100 * c.approx_gap);
    }
    return 0;
}

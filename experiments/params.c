/* params.c — `linattn params`: exact parameter counts of a Transformer, per component,
 * as PyTorch counts them, beside the 12·D² approximation (la_param_counts). */
#include "commands.h"
#include "common/cli.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn params --d-model D --heads H --d-ff F [--encoder-layers L]\n"
    "                      [--decoder-layers L2] [--vocab V] [--learned-positions P]\n"
    "                      [--format table|csv|json]\n"
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
    "  embedding      V·D (one token table; only with --vocab)\n"
    "  positional     P·D (a learned position table; only with --learned-positions;\n"
    "                 the sinusoidal encoding has no parameters)\n"
    "  total          encoder + decoder + embedding + positional\n"
    "  approx_12d2    the D² terms only with F = 4·D: 12·D² per encoder layer, 16·D² per\n"
    "                 decoder layer; approx_gap = (exact − approx) / exact over the layers\n"
    "\n"
    "required:\n"
    "  --d-model D, --heads H (dividing D), --d-ff F      all >= 1\n"
    "options (default in brackets):\n"
    "  --encoder-layers L   [6, as nn.Transformer]\n"
    "  --decoder-layers L2  [6, as nn.Transformer]\n"
    "  --vocab V            [0: no embedding table]\n"
    "  --learned-positions P  [0: sinusoidal]\n"
    "  --format FMT         table, csv (header, then one row per component: name,\n"
    "                       exact count, formula, approx_gap on the approx_12d2 row) or\n"
    "                       json [table]\n"
    "\n"
    "exit status: 0 done, 2 bad flags (one line on stderr: linattn: WHAT: why)\n"
    "\n"
    "example (PyTorch's nn.Transformer defaults: 44140544 parameters):\n"
    "  linattn params --d-model 512 --heads 8 --d-ff 2048 --format csv\n";

void cmd_params_help(FILE *out)
{
    fputs(help_text, out);
}

enum { FORMAT_TABLE, FORMAT_CSV, FORMAT_JSON };
static const char *const format_names[] = {"table", "csv", "json", NULL};

/* One output row: a component's name, its exact count, the formula it follows. */
typedef struct {
    const char *name;
    uint64_t count;
    const char *formula;
} row;

/* The rows to print, in order; embedding and positional only when asked for. */
static size_t make_rows(const la_model_size *s, const la_param_count *c, row *rows)
{
    size_t n = 0;
    rows[n++] = (row){"mha", c->mha, "4*D^2 + 4*D"};
    rows[n++] = (row){"ffn", c->ffn, "2*D*F + F + D"};
    rows[n++] = (row){"layer_norm", c->layer_norm, "2*D"};
    rows[n++] = (row){"encoder_layer", c->encoder_layer, "mha + ffn + 2*layer_norm"};
    rows[n++] = (row){"decoder_layer", c->decoder_layer, "2*mha + ffn + 3*layer_norm"};
    rows[n++] = (row){"encoder", c->encoder, "L*encoder_layer + layer_norm"};
    rows[n++] = (row){"decoder", c->decoder, "L2*decoder_layer + layer_norm"};
    if (s->vocab) rows[n++] = (row){"embedding", c->embedding, "V*D"};
    if (s->learned_positions) rows[n++] = (row){"positional", c->positional, "P*D"};
    rows[n++] = (row){"total", c->total, "encoder + decoder + embedding + positional"};
    rows[n++] = (row){"approx_12d2", c->approx_12d2, "12*D^2*L + 16*D^2*L2"};
    return n;
}

int cmd_params(int argc, char **argv)
{
    const char *d_model = NULL, *heads = NULL, *d_ff = NULL, *enc = NULL, *dec = NULL;
    const char *vocab = NULL, *positions = NULL, *format = NULL;
    const cli_flag flags[] = {
        {"d-model", &d_model, NULL},
        {"heads", &heads, NULL},
        {"d-ff", &d_ff, NULL},
        {"encoder-layers", &enc, NULL},
        {"decoder-layers", &dec, NULL},
        {"vocab", &vocab, NULL},
        {"learned-positions", &positions, NULL},
        {"format", &format, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    la_model_size s = {0, 0, 0, 6, 6, 0, 0};
    int fmt = FORMAT_TABLE;
    if ((rc = cli_parse_size_flag("params", "--d-model", d_model, 1, 1, &s.d_model)) ||
        (rc = cli_parse_size_flag("params", "--heads", heads, 1, 1, &s.heads)) ||
        (rc = cli_parse_size_flag("params", "--d-ff", d_ff, 1, 1, &s.d_ff)) ||
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
    row rows[16];
    size_t n = make_rows(&s, &c, rows);

    if (fmt == FORMAT_CSV) {
        printf("component,parameters,formula,approx_gap\n");
        for (size_t i = 0; i < n; i++) {
            printf("%s,%" PRIu64 ",%s,", rows[i].name, rows[i].count, rows[i].formula);
            if (strcmp(rows[i].name, "approx_12d2") == 0) printf("%.17g", c.approx_gap);
            printf("\n");
        }
    } else if (fmt == FORMAT_JSON) {
        printf("{\"d_model\": %zu, \"heads\": %zu, \"d_ff\": %zu, \"encoder_layers\": %zu, "
               "\"decoder_layers\": %zu, \"vocab\": %zu, \"learned_positions\": %zu,\n"
               " \"parameters\": {",
               s.d_model, s.heads, s.d_ff, s.encoder_layers, s.decoder_layers, s.vocab,
               s.learned_positions);
        for (size_t i = 0; i < n; i++)
            printf("%s\"%s\": %" PRIu64, i ? ", " : "", rows[i].name, rows[i].count);
        printf("},\n \"approx_gap\": %.17g}\n", c.approx_gap);
    } else {
        printf("Transformer parameters: D = %zu, H = %zu, d_ff = %zu, %zu encoder + %zu decoder "
               "layers\n\n",
               s.d_model, s.heads, s.d_ff, s.encoder_layers, s.decoder_layers);
        printf("  %-14s %20s   %s\n", "component", "parameters", "formula");
        for (size_t i = 0; i < n; i++)
            printf("  %-14s %20" PRIu64 "   %s\n", rows[i].name, rows[i].count, rows[i].formula);
        printf("\n  the 12·D² approximation is %.4f%% below the exact count of the layers\n",
               100 * c.approx_gap);
    }
    return 0;
}

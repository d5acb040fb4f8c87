/* params_sweep.c — `linattn params-sweep`: the params experiment. The exact parameter
 * count of an encoder layer against the 12·D² approximation for D from 64 to 8192, and
 * the exact counts of the standard models (common/models.c: the original Transformer
 * base and big, BERT-base and -large, GPT-2 small to XL, T5 small and base) with each
 * component's share, all from la_param_counts (the accounting `linattn params` prints for one
 * size). Writes params.csv. */
#include "commands.h"
#include "common/cli.h"
#include "common/models.h"
#include "common/record.h"
#include "common/sweep.h"
#include "linattn.h"

#include <stdio.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn params-sweep [--d-model LIST] [--out PATH] [--resume]\n"
    "\n"
    "The params experiment (`linattn params` gives one size in detail). Rows of kind\n"
    "'sweep': one encoder layer with H = D/64 heads (at least 1) and d_ff = 4D for each\n"
    "D of --d-model (64, 96, 128, 192, …, 8192 by default): its exact count (12D² + 13D), the 12D² "
    "approximation and the\n"
    "relative gap (exact − 12D²) / exact. Rows of kind 'standard': whole models as\n"
    "la_param_counts counts them (encoder and decoder stacks with their final\n"
    "norms, one embedding table, learned positions where the model has them): the models\n"
    "of `linattn params --model` (see its help for what each count includes):\n"
    "  transformer-base/big  6+6 post-LN layers, D 512/1024, shared vocabulary 37000\n"
    "  bert-base/large   12/24 encoder layers, D 768/1024, vocabulary 30522, 512 positions,\n"
    "                    2 segments, embedding LayerNorm, pooler (109,482,240 / 335,141,888)\n"
    "  gpt2 … gpt2-xl    12/24/36/48 layers of D 768/1024/1280/1600, vocabulary 50257, 1024\n"
    "                    positions, tied head (124,439,808 for gpt2)\n"
    "  t5-small/base     6+6 / 12+12 layers, vocabulary 32128, no biases, RMSNorm, relative\n"
    "                    position buckets (60,506,624 / 222,903,552)\n"
    "For the standard models layers_exact is the encoder and decoder stacks and\n"
    "layers_approx la_param_counts' 12D² per encoder layer (16D² per decoder layer).\n"
    "Shares are of the total: attention (every MHA), FFN, norms (every LayerNorm or\n"
    "RMSNorm), embeddings (tokens, positions, segments, relative position bias); BERT's\n"
    "pooler (0.5%) is in none of them.\n"
    "\n"
    "  --d-model LIST  the widths D of the 'sweep' rows (sorted; default 64:8192,96:6144):\n"
    "                  " SWEEP_SYNTAX "; H is the largest\n"
    "                  divisor of D up to D/64 (D/64 for a multiple of 64)\n"
    "  --out PATH      results file (default params.csv)\n"
    "  --resume        accepted for `linattn results --resume`; the file is rewritten (the\n"
    "                  counts take no time)\n";

void cmd_params_sweep_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] =
    "kind,model,d_model,heads,d_ff,encoder_layers,decoder_layers,vocab,positions,status,mha,"
    "ffn,layer_norm,encoder_layer,decoder_layer,encoder,decoder,embedding,positional,total,"
    "layers_exact,layers_approx,approx_gap,attention_share,ffn_share,norm_share,"
    "embedding_share";

/* One row: the counts of s, and the layer totals to compare with the approximation. */
static int write_row(record_file *f, const char *kind, const char *name, const la_model_size *s,
                     int per_layer)
{
    la_param_count p;
    la_status st = la_param_counts(s, &p);
    if (st != LA_OK) {
        cli_line("params-sweep: %s: %s", name, la_strerror(st));
        return record_row(f, "%s,%s,%zu,%zu,%zu,%zu,%zu,%zu,%zu,error,,,,,,,,,,,,,,,,,", kind, name,
                          s->d_model, s->heads, s->d_ff, s->encoder_layers, s->decoder_layers,
                          s->vocab, s->learned_positions);
    }
    double exact, approx, gap;
    if (per_layer) { /* one bare encoder layer against 12D² */
        exact = (double)p.encoder_layer;
        approx = 12.0 * (double)s->d_model * (double)s->d_model;
        gap = (exact - approx) / exact;
    } else {
        exact = (double)(p.encoder + p.decoder);
        approx = (double)p.approx_12d2;
        gap = p.approx_gap;
    }
    /* shares of the whole: every MHA (decoder layers hold two), FFNs, norms (2 per
     * encoder layer, 3 per decoder layer, the final and embedding ones), embeddings
     * (tokens, positions, segments, relative bias); the pooler is in none */
    double L = (double)s->encoder_layers, L2 = (double)s->decoder_layers;
    double total = per_layer ? (double)p.encoder_layer : (double)p.total;
    double attention = (double)p.mha * (per_layer ? 1 : L + 2 * L2);
    double ffn = (double)p.ffn * (per_layer ? 1 : L + L2);
    double norms =
        per_layer ? 2.0 * (double)p.layer_norm
                  : (double)(p.encoder + p.decoder) - attention - ffn + (double)p.embedding_norm;
    double embed =
        per_layer ? 0 : (double)(p.embedding + p.positional + p.token_type + p.relative_position);
    return record_row(f,
                      "%s,%s,%zu,%zu,%zu,%zu,%zu,%zu,%zu,ok,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
                      "%llu,%llu,%llu,%.0f,%.0f,%.6e,%.6f,%.6f,%.6e,%.6f",
                      kind, name, s->d_model, s->heads, s->d_ff, s->encoder_layers,
                      s->decoder_layers, s->vocab, s->learned_positions, (unsigned long long)p.mha,
                      (unsigned long long)p.ffn, (unsigned long long)p.layer_norm,
                      (unsigned long long)p.encoder_layer, (unsigned long long)p.decoder_layer,
                      (unsigned long long)p.encoder, (unsigned long long)p.decoder,
                      (unsigned long long)p.embedding, (unsigned long long)p.positional,
                      (unsigned long long)p.total, exact, approx, gap, attention / total,
                      ffn / total, norms / total, embed / total);
}

int cmd_params_sweep(int argc, char **argv)
{
    const char *out = NULL, *d_text = NULL;
    int resume = 0; /* accepted for `linattn results --resume`; the counts take no time */
    const cli_flag flags[] = {{"d-model", &d_text, NULL},
                              {"out", &out, NULL},
                              {"resume", NULL, &resume},
                              {NULL, NULL, NULL}};
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    /* the sweep: D = 64·{1, 1.5, 2, 3, 4, …} up to 8192 by default */
    size_t ds[256], n_d;
    if ((rc = sweep_parse("--d-model", d_text ? d_text : "64:8192,96:6144", 2, ds, 256, &n_d)))
        return rc;
    sweep_sort_sizes(ds, n_d);
    char err[512];
    record_file *f = record_open(out ? out : "params.csv", "params",
                                 "exact parameter counts (la_param_counts) against 12·D², per "
                                 "encoder layer for a sweep of D and for the standard models",
                                 COLUMNS, 3, 0, argc, argv, err, sizeof err);
    if (!f) return cli_fail("params-sweep", "%s", err);

    for (size_t i = 0; i < n_d; i++) {
        const size_t d = ds[i];
        size_t heads = d / 64 ? d / 64 : 1;
        while (d % heads) /* heads must divide D */
            heads--;
        la_model_size s = {d, heads, 4 * d, 1, 0, 0, 0, 0, 0, 0};
        char name[32];
        snprintf(name, sizeof name, "D%zu", d);
        if (write_row(f, "sweep", name, &s, 1)) rc = 1;
    }
    size_t n_models;
    const models_entry *models = models_all(&n_models);
    for (size_t i = 0; i < n_models; i++) {
        const models_entry *m = &models[i];
        if (write_row(f, "standard", m->name, &m->size, 0)) rc = 1;
        la_param_count p;
        if (la_param_counts(&m->size, &p) == LA_OK)
            printf("params: %-16s %13llu parameters (layers %llu, 12D² rule %llu, gap %.2f%%)\n",
                   m->name, (unsigned long long)p.total,
                   (unsigned long long)(p.encoder + p.decoder), (unsigned long long)p.approx_12d2,
                   100 * p.approx_gap);
    }
    printf("params: wrote %s\n", record_path(f));
    if (record_close(f) != 0) rc = 1;
    return rc ? 1 : 0;
}

/* models.c — the table of published Transformers (models.h). Sizes from the papers and
 * the reference implementations' configuration files:
 *   Transformer base/big  Vaswani et al. 2017, table 3; the shared source-target BPE
 *                         vocabulary of 37000 (EN-DE), its table also the decoder's input
 *                         and pre-softmax weights (tied); sinusoidal positions; post-LN,
 *                         so no norm after the stacks
 *   BERT                  Hugging Face BertModel (bert-base-uncased, bert-large-uncased):
 *                         token, position (512) and segment (2) tables, the embedding
 *                         LayerNorm, post-LN layers, the pooler; no MLM head
 *   GPT-2                 Hugging Face GPT2Model / GPT2LMHeadModel (the head is tied):
 *                         50257 tokens, 1024 learned positions, pre-LN blocks with ln_f
 *   T5 (v1.0)             Hugging Face T5ForConditionalGeneration (t5-small, t5-base):
 *                         32128 tokens shared by both stacks and the tied head, no biases,
 *                         RMSNorm scales, 32 relative position buckets per stack */
#include "models.h"

#include "cli.h"

#include <stdio.h>
#include <string.h>

enum {
    POST_LN = LA_MODEL_NO_FINAL_NORM,
    BERT = LA_MODEL_NO_FINAL_NORM | LA_MODEL_EMBEDDING_NORM | LA_MODEL_POOLER,
    T5 = LA_MODEL_NO_BIAS | LA_MODEL_RMS_NORM,
};

// clang-format off
/*                                         D     H  d_ff   enc dec  vocab  pos  types buckets options */
static const models_entry models[] = {
    {"transformer-base", "Vaswani et al. 2017 base: 6+6 post-LN layers, shared 37000 BPE, sinusoidal",
     {512,   8,  2048,  6,  6, 37000,    0, 0,  0, POST_LN}, "encoder-decoder"},
    {"transformer-big", "Vaswani et al. 2017 big: 6+6 post-LN layers, shared 37000 BPE, sinusoidal",
     {1024, 16,  4096,  6,  6, 37000,    0, 0,  0, POST_LN}, "encoder-decoder"},
    {"bert-base", "BertModel: 12 post-LN layers, 30522 tokens, 512 positions, 2 segments, pooler",
     {768,  12,  3072, 12,  0, 30522,  512, 2,  0, BERT}, "encoder-only"},
    {"bert-large", "BertModel: 24 post-LN layers, 30522 tokens, 512 positions, 2 segments, pooler",
     {1024, 16,  4096, 24,  0, 30522,  512, 2,  0, BERT}, "encoder-only"},
    {"gpt2", "GPT-2 124M: 12 pre-LN layers, 50257 tokens, 1024 positions, tied head",
     {768,  12,  3072, 12,  0, 50257, 1024, 0,  0, 0}, "decoder-only"},
    {"gpt2-medium", "GPT-2 355M: 24 pre-LN layers, 50257 tokens, 1024 positions, tied head",
     {1024, 16,  4096, 24,  0, 50257, 1024, 0,  0, 0}, "decoder-only"},
    {"gpt2-large", "GPT-2 774M: 36 pre-LN layers, 50257 tokens, 1024 positions, tied head",
     {1280, 20,  5120, 36,  0, 50257, 1024, 0,  0, 0}, "decoder-only"},
    {"gpt2-xl", "GPT-2 1.5B: 48 pre-LN layers, 50257 tokens, 1024 positions, tied head",
     {1600, 25,  6400, 48,  0, 50257, 1024, 0,  0, 0}, "decoder-only"},
    {"t5-small", "T5 v1.0: 6+6 layers, 32128 shared tokens, no biases, RMSNorm, relative bias",
     {512,   8,  2048,  6,  6, 32128,    0, 0, 32, T5}, "encoder-decoder"},
    {"t5-base", "T5 v1.0: 12+12 layers, 32128 shared tokens, no biases, RMSNorm, relative bias",
     {768,  12,  3072, 12, 12, 32128,    0, 0, 32, T5}, "encoder-decoder"},
};
// clang-format on

const models_entry *models_all(size_t *count)
{
    *count = sizeof models / sizeof models[0];
    return models;
}

/* The row named name, or NULL. */
static const models_entry *find_model(const char *name)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
        if (strcmp(models[i].name, name) == 0) return &models[i];
    return NULL;
}

/* The names, comma-separated. */
static const char *model_names(void)
{
    static char list[512];
    if (!list[0]) {
        size_t used = 0;
        for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
            int k =
                snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", models[i].name);
            if (k > 0 && (size_t)k < sizeof list - used) used += (size_t)k;
        }
    }
    return list;
}

int models_parse(const char *flag, const char *text, const models_entry **out)
{
    if (!text || !*text) return cli_fail(flag, "needs a value");
    const models_entry *m = find_model(text);
    if (!m) {
        char hint[160];
        return cli_fail(flag, "'%s' is not one of %s%s", text, model_names(),
                        cli_did_you_mean(text, model_names(), hint, sizeof hint));
    }
    *out = m;
    return 0;
}

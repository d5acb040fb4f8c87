/* generate.c — `linattn generate`: tokens decoded from a checkpoint of `linattn train`, one
 * at a time (la_train_decoder_*, lib/train/decode.c): the prompt fed token by token, then
 * each next token the most likely one (or sampled with --temperature) and fed back. The
 * tokens go to stdout (bytes for the text task, ids for copy and recall), one summary line
 * with the rate to stderr; no file is written. */
#include "train.h"

#include "commands.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/timer.h"
#include "linattn.h"
#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/tasks.h"
#include "train/train.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn generate --checkpoint DIR --prompt TEXT --tokens N\n"
    "                        [--temperature T [--seed S]] [--precision P] [--threads T]\n"
    "\n"
    "Loads the model of a `linattn train` checkpoint and generates N tokens after the\n"
    "prompt, one at a time: kernels that run token by token on a state (below) carry it\n"
    "from token to token, O(1) each; the others keep each layer's keys and values and run\n"
    "the new query over them, O(t) at position t. The logits are those of the model's\n"
    "forward on the same tokens.\n"
    "\n"
    "  --checkpoint DIR     a folder `linattn train --checkpoint` wrote\n"
    "  --prompt TEXT        the text task: the prompt's bytes; copy and recall: token ids\n"
    "                       separated by spaces (\"3 5 1 11\"), each below the vocabulary\n"
    "  --tokens N           tokens to generate (>= 1); with learned positions the prompt\n"
    "                       and N - 1 more must fit in the model's --seq-len, sinusoidal\n"
    "                       positions go on past it\n"
    "  --temperature T      0: the most likely token (greedy, first of ties); T > 0:\n"
    "                       sampled from softmax(logits / T) [0]\n"
    "  --seed S             the sampling's generator, with --temperature [0]\n"
    "  --precision P        float32 or float64: the parameters converted to it\n"
    "                       [the checkpoint's]\n"
    "  --threads T          OpenMP threads, 1..1024 (above the cores runs on the cores)\n"
    "                       [LA_NUM_THREADS, else 1: one token's products are too small\n"
    "                       to share]\n"
    "\n"
    "output: the N tokens on stdout, then a newline: the text task's as bytes, the others'\n"
    "as ids separated by spaces; on stderr one line: the tokens, seconds and tokens/s\n"
    "\n";
static const char help_after_kernels[] =
    "\n"
    "exit status: 0 done, 2 bad flags, a checkpoint that cannot be read, a prompt token\n"
    "outside the vocabulary, too many tokens for learned positions, or a value that is not\n"
    "finite (one line on stderr: linattn: WHAT: why)\n"
    "\n"
    "example (after the example of `linattn help train`: 5 symbols, the separator, the copy):\n"
    "  linattn generate --checkpoint copy.ckpt --prompt \"3 1 4 1 5 11\" --tokens 5\n";

/* A kernel a model can use that runs token by token on a state. */
static int stepped(la_kernel k)
{
    return train_kernel(k) && (la_kernel_get(k)->caps & LA_CAP_STEP);
}

void cmd_generate_help(FILE *out)
{
    char names[512];
    fputs(help_text, out);
    fputs("kernels decoded on their state (the registry's rows with a step API):\n  ", out);
    cli_print_wrapped(out, kernels_kernel_names(stepped, ", ", names, sizeof names), 2);
    fputs(help_after_kernels, out);
}

typedef struct {
    la_train_model *m;
    int text; /* the text task: bytes */
    int32_t *tokens;
    size_t n_prompt, n_new;
    void *logits;
    double *scores;
} gen;

static void gen_free(gen *g)
{
    la_train_model_free(g->m);
    free(g->tokens);
    free(g->logits);
    free(g->scores);
}

/* The checkpoint's model and task into g. 0, or 2 after one line. */
static int load(const char *dir, gen *g)
{
    la_train_config c;
    la_train_adamw_config oc;
    la_train_checkpoint_state *ck = malloc(sizeof *ck);
    if (!ck) return cli_fail("generate", "%s", la_strerror(LA_ENOMEM));
    const char *why = NULL;
    la_status st = la_train_checkpoint_read(dir, &c, &oc, ck, &why);
    int rc = st ? cli_fail("--checkpoint", "%s", why) : 0;
    const char *task = rc ? NULL : la_train_checkpoint_get(ck, "task");
    if (!rc && !task)
        rc = cli_fail("--checkpoint", "%s: not a checkpoint of linattn train (no setting task)",
                      dir);
    if (!rc) g->text = strcmp(task, la_train_task_name(LA_TRAIN_TASK_TEXT)) == 0;
    if (!rc && (st = la_train_model_create(&g->m, &c, 0)))
        rc = cli_fail("--checkpoint", "%s: cannot make its model: %s", dir, la_strerror(st));
    if (!rc && la_train_checkpoint_load(dir, g->m, NULL, ck, &why))
        rc = cli_fail("--checkpoint", "%s", why);
    free(ck);
    return rc;
}

/* g's model in the other precision, its parameters converted (float64 to float32 rounds to
 * nearest). 0, or 2 after one line. */
static int convert(gen *g)
{
    la_train_config c = *la_train_model_config(g->m);
    c.dtype = c.dtype == LA_FLOAT32 ? LA_FLOAT64 : LA_FLOAT32;
    la_train_model *to = NULL;
    la_train_tensor *a, *b;
    size_t na, nb;
    la_status st = la_train_model_create(&to, &c, 0);
    if (!st) st = la_train_model_tensors(g->m, &a, &na);
    if (!st) st = la_train_model_tensors(to, &b, &nb);
    if (st) {
        la_train_model_free(to);
        return cli_fail("--precision", "%s", la_strerror(st));
    }
    for (size_t i = 0; i < na; i++)
        for (size_t e = 0; e < a[i].numel; e++)
            if (c.dtype == LA_FLOAT64)
                ((double *)b[i].data)[e] = ((const float *)a[i].data)[e];
            else
                ((float *)b[i].data)[e] = (float)((const double *)a[i].data)[e];
    la_train_model_free(g->m);
    g->m = to;
    return 0;
}

/* The prompt's tokens into g->tokens (room for n_new more). 0, or 2 after one line. */
static int parse_prompt(const char *text, gen *g)
{
    const size_t V = la_train_model_config(g->m)->vocab, len = strlen(text);
    /* at most len tokens: a byte each, or an id of at least one digit each */
    if (len > SIZE_MAX / sizeof *g->tokens - g->n_new - 1 ||
        !(g->tokens = malloc((len + g->n_new) * sizeof *g->tokens)))
        return cli_fail("--prompt", "%s", la_strerror(LA_ENOMEM));
    size_t n = 0;
    if (g->text) {
        for (size_t i = 0; i < len; i++)
            g->tokens[n++] = (int32_t)(unsigned char)text[i];
    } else {
        for (const char *p = text; *p;) {
            if (*p == ' ') {
                p++;
                continue;
            }
            char *end;
            errno = 0;
            const unsigned long long id = strtoull(p, &end, 10);
            if (end == p || (*end && *end != ' ') || *p == '-' || *p == '+' || errno)
                return cli_fail("--prompt", "'%s' is not token ids separated by spaces", text);
            if (id >= V)
                return cli_fail("--prompt", "token %llu is outside the vocabulary 0..%zu", id,
                                V - 1);
            g->tokens[n++] = (int32_t)id;
            p = end;
        }
    }
    for (size_t i = 0; i < n; i++)
        if ((size_t)g->tokens[i] >= V)
            return cli_fail("--prompt", "byte %d is outside the vocabulary 0..%zu",
                            (int)g->tokens[i], V - 1);
    if (n == 0) return cli_fail("--prompt", "holds no token");
    g->n_prompt = n;
    return 0;
}

/* The next token from the scores (V doubles): the first largest, or sampled at temperature
 * (the scores become their weights exp((s − max) / T) in place). */
static int32_t choose(double *s, size_t V, double temperature, la_train_rng *rng)
{
    size_t best = 0;
    for (size_t j = 1; j < V; j++)
        if (s[j] > s[best]) best = j;
    if (temperature == 0) return (int32_t)best;
    const double top = s[best];
    double sum = 0;
    for (size_t j = 0; j < V; j++)
        sum += s[j] = exp((s[j] - top) / temperature);
    double u = la_train_rng_uniform(rng) * sum;
    for (size_t j = 0; j < V; j++) {
        u -= s[j];
        if (u < 0) return (int32_t)j;
    }
    return (int32_t)best;
}

/* Feeds the prompt and generates g->n_new tokens after it; *seconds the time. */
static int run(gen *g, double temperature, uint64_t seed, double *seconds)
{
    const la_train_config *c = la_train_model_config(g->m);
    const size_t V = c->vocab, total = g->n_prompt + g->n_new - 1; /* the tokens fed */
    if (c->learned_positions && total > c->seq_len)
        return cli_fail("--tokens",
                        "%zu after %zu prompt tokens need %zu positions; the "
                        "checkpoint's learned positions end at --seq-len %zu",
                        g->n_new, g->n_prompt, total, c->seq_len);
    la_train_decoder *d = NULL;
    la_status st = la_train_decoder_create(&d, g->m, total);
    if (st) return cli_fail("--tokens", "%zu: %s", g->n_new, la_strerror(st));
    g->logits = malloc(V * (c->dtype == LA_FLOAT32 ? sizeof(float) : sizeof(double)));
    g->scores = malloc(V * sizeof *g->scores);
    if (!g->logits || !g->scores) {
        la_train_decoder_free(d);
        return cli_fail("generate", "%s", la_strerror(LA_ENOMEM));
    }
    la_train_rng rng = la_train_rng_make(seed);
    const double start = timer_now();
    for (size_t t = 0; t < total && !st; t++) {
        st = la_train_decoder_step(d, g->tokens[t], g->logits);
        if (st || t + 1 < g->n_prompt) continue;
        for (size_t j = 0; j < V; j++)
            g->scores[j] = c->dtype == LA_FLOAT32 ? (double)((const float *)g->logits)[j]
                                                  : ((const double *)g->logits)[j];
        g->tokens[t + 1] = choose(g->scores, V, temperature, &rng);
    }
    *seconds = timer_now() - start;
    const size_t at = la_train_decoder_position(d);
    la_train_decoder_free(d);
    if (st)
        return cli_fail("generate", "position %zu: %s%s", at, la_strerror(st),
                        st == LA_ERANGE && c->dtype == LA_FLOAT32 ? " (float32's range)" : "");
    return 0;
}

/* The generated tokens to stdout. 0, or 2 after one line. */
static int print(const gen *g)
{
    const int32_t *t = g->tokens + g->n_prompt;
    for (size_t i = 0; i < g->n_new; i++) {
        if (g->text)
            putchar((unsigned char)t[i]);
        else
            printf(i ? " %d" : "%d", (int)t[i]);
    }
    putchar('\n');
    if (fflush(stdout) != 0 || ferror(stdout))
        return cli_fail("standard output", "%s", strerror(errno ? errno : EIO));
    return 0;
}

int cmd_generate(int argc, char **argv)
{
    const char *dir = NULL, *prompt = NULL, *tokens = NULL, *temperature = NULL, *seed = NULL,
               *threads = NULL, *precision = NULL;
    static const char *const precisions[] = {"float32", "float64", NULL};
    int f64 = 0;
    const cli_flag flags[] = {
        {"checkpoint", &dir, NULL},          {"prompt", &prompt, NULL}, {"tokens", &tokens, NULL},
        {"temperature", &temperature, NULL}, {"seed", &seed, NULL},     {"threads", &threads, NULL},
        {"precision", &precision, NULL},     {NULL, NULL, NULL},
    };
    gen g = {0};
    double temp = 0, seconds = 0;
    size_t seed_value = 0;
    int rc = cli_parse_flags(argc, argv, flags);
    if (!rc && !dir)
        rc = cli_fail("--checkpoint", "required flag is missing (see linattn help generate)");
    if (!rc && !prompt)
        rc = cli_fail("--prompt", "required flag is missing (see linattn help generate)");
    if (!rc) rc = cli_parse_size_flag("generate", "--tokens", tokens, 1, 1, &g.n_new);
    if (!rc && temperature && !(rc = cli_parse_double("--temperature", temperature, &temp)) &&
        temp < 0)
        rc = cli_fail("--temperature", "must be at least 0 (0: the most likely token)");
    if (!rc && seed && !temperature) rc = cli_fail("--seed", "only --temperature reads it");
    if (!rc && seed) rc = cli_parse_size("--seed", seed, &seed_value);
    if (!rc) rc = cli_parse_threads("--threads", threads);
    if (!rc && !threads && !getenv("LA_NUM_THREADS")) la_set_num_threads(1);
    if (!rc && precision) rc = cli_parse_choice("--precision", precision, precisions, &f64);
    if (!rc) rc = load(dir, &g);
    if (!rc && precision && f64 != (la_train_model_config(g.m)->dtype == LA_FLOAT64))
        rc = convert(&g);
    if (!rc) rc = parse_prompt(prompt, &g);
    if (!rc) rc = run(&g, temp, (uint64_t)seed_value, &seconds);
    if (!rc) rc = print(&g);
    if (!rc) {
        const la_kernel_info *row = la_kernel_get(la_train_model_config(g.m)->attention);
        const size_t steps = g.n_prompt + g.n_new - 1;
        cli_line("generate: %zu tokens after %zu of prompt, %zu decoder steps in %.3f s, %.0f "
                 "tokens/s (%s, %s)",
                 g.n_new, g.n_prompt, steps, seconds, seconds > 0 ? (double)steps / seconds : 0.0,
                 row->name, row->caps & LA_CAP_STEP ? "recurrent state" : "KV cache");
    }
    gen_free(&g);
    return rc;
}

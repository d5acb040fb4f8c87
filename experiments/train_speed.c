/* train_speed.c — `linattn train-speed`: how fast the model of `linattn train` trains, per
 * attention variant, against the sequence length N at a fixed number of tokens per step:
 * tokens per second of a whole step (forward, backward, clipping, AdamW), and where the
 * step's time goes, each layer kind timed alone on the step's shapes (learn_speed.c). */
#include "commands.h"
#include "common/cli.h"
#include "common/machine.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "learn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn train-speed [--n LIST] [--tokens T] [--variants LIST] [--threads T]\n"
    "                           [--min-time S] [--out PATH] [--resume]\n"
    "\n"
    "Training throughput of the model of `linattn train` (2 layers, D = 64, 4 heads,\n"
    "d_ff = 128, float32, pre-LN, the copy task's vocabulary of 12) per attention variant,\n"
    "against N at T tokens per step (batch T/N): the median time of a whole training step\n"
    "(forward, backward, clipping, AdamW) and tokens/s; then each layer kind timed alone on\n"
    "the step's shapes, forward and backward, times the layers: the attention kernel, the\n"
    "attention's projections (in and out), the FFN, the LayerNorms, the embedding, head and\n"
    "loss, the optimiser (clipping and AdamW); other_s is the step's rest. FAVOR+ runs with\n"
    "m = 64 features, local with a window of 64.\n"
    "\n"
    "  --n LIST         sequence lengths (default 64:1024; " SWEEP_SYNTAX ")\n"
    "  --tokens T       tokens per step, a multiple of every N (default 4096)\n"
    "  --variants LIST  among softmax, linear_elu, linear_relu, taylor, favor, local\n"
    "                   (default: all but linear_relu)\n"
    "  --threads T      " CLI_THREADS_HELP "\n"
    "  --min-time S     seconds of repetitions per timing (default 0.3; at least 3)\n"
    "  --out PATH       results file (CSV with a # metadata header; default\n"
    "                   train_speed.csv)\n"
    "  --resume         keep the points already in PATH, measure the others\n"
    "\n"
    "Columns: variant,n,sequences,d_model,heads,layers,tokens_per_s,step_s,attention_s,\n"
    "projections_s,ffn_s,norms_s,head_s,optimizer_s,other_s,attention_share,gemm_gflops,status.\n"
    "attention_share = attention_s / step_s; gemm_gflops the projections' and FFN's\n"
    "rate, forward and backward. Load-dependent: the times are this run's.\n"
    "Figure: linattn plot (plots/train_speed.gp).\n";

void cmd_train_speed_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] =
    "variant,n,sequences,d_model,heads,layers,tokens_per_s,step_s,attention_s,projections_s,"
    "ffn_s,norms_s,head_s,optimizer_s,other_s,attention_share,gemm_gflops,status";
enum { N_KEY = 2, MAX_N = 32 };

int cmd_train_speed(int argc, char **argv)
{
    const char *n_text = NULL, *tokens = NULL, *variants = NULL, *threads = NULL, *out = NULL,
               *min_time = NULL;
    int resume = 0;
    const cli_flag flags[] = {
        {"n", &n_text, NULL},          {"tokens", &tokens, NULL},
        {"variants", &variants, NULL}, {"threads", &threads, NULL},
        {"min-time", &min_time, NULL}, {"out", &out, NULL},
        {"resume", NULL, &resume},     {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    if ((rc = cli_parse_threads("--threads", threads))) return rc;
    int use[LEARN_VARIANTS];
    size_t ns[MAX_N], n_n, n_tokens = 4096;
    double min_s = 0.3;
    if ((rc = learn_parse_variants(variants, 1u << 2, use)) ||
        (rc = sweep_parse("--n", n_text ? n_text : "64:1024", 2, ns, MAX_N, &n_n)) ||
        (rc = cli_parse_size_flag("train-speed", "--tokens", tokens, 0, 1, &n_tokens)) ||
        (min_time && (rc = cli_parse_double("--min-time", min_time, &min_s))))
        return rc;
    if (min_s < 0) return cli_fail("--min-time", "must be at least 0");
    for (size_t i = 0; i < n_n; i++)
        if (ns[i] < 2 || n_tokens % ns[i])
            return cli_fail("--n", "%zu does not divide --tokens %zu (or is below 2)", ns[i],
                            n_tokens);
    if (!out) out = "train_speed.csv";
    learn_variant v[LEARN_VARIANTS];
    learn_variants(64, 64, v);
    char err[512];
    machine_check(); /* how busy the machine is: into the header, a warning if busy */
    record_file *f = record_open(out, "train_speed",
                                 "training throughput of a small causal Transformer per attention "
                                 "variant against N, and where a step's time goes",
                                 COLUMNS, N_KEY, resume, argc, argv, err, sizeof err);
    if (!f) return cli_fail("train-speed", "%s", err);
    int todo = 0;
    for (size_t i = 0; i < LEARN_VARIANTS; i++)
        todo += use[i] * (int)n_n;
    progress_line pr;
    progress_start(&pr, "train-speed", todo, 0);
    int done = 0;
    for (size_t j = 0; j < n_n && !rc; j++)
        for (size_t i = 0; i < LEARN_VARIANTS && !rc; i++) {
            if (!use[i]) continue;
            char key[96];
            snprintf(key, sizeof key, "%s,%zu", v[i].name, ns[j]);
            if (resume && record_find(f, key)) {
                progress_step(&pr, ++done, 0, key);
                continue;
            }
            learn_setup s;
            learn_setup_init(&s, LA_TRAIN_TASK_COPY, 2, 64, 4, ns[j], n_tokens / ns[j], 1, &v[i]);
            learn_speed sp;
            if ((rc = learn_measure_speed(&s, min_s, key, &sp))) break;
            const double other = sp.step_s - sp.attention_s - sp.projections_s - sp.ffn_s -
                                 sp.norms_s - sp.head_s - sp.optimizer_s;
            if (record_row(f,
                           "%s,%zu,%zu,%zu,%zu,%.1f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,"
                           "%.3f,ok",
                           key, s.batch, s.model.d_model, s.model.heads, s.model.layers,
                           (double)n_tokens / sp.step_s, sp.step_s, sp.attention_s,
                           sp.projections_s, sp.ffn_s, sp.norms_s, sp.head_s, sp.optimizer_s, other,
                           sp.attention_s / sp.step_s, sp.gemm_gflops) != 0) {
                rc = cli_fail(out, "a write failed");
                break;
            }
            progress_step(&pr, ++done, 1, key);
        }
    if (!rc) progress_end(&pr);
    if (record_close(f) != 0 && !rc) rc = cli_fail(out, "a write failed");
    return rc;
}

/* recall.c — `linattn recall`: multi-query associative recall (MQAR, Zoology: Arora et
 * al. 2023) trained in C per attention variant (learn.h), the final held-out accuracy
 * against the number of key-value pairs K at a fixed width and against the width at a
 * fixed K: where a fixed-size state (linear, Taylor, FAVOR+) or a window (local) stops
 * being enough and softmax, which sees every key, still recalls. The default is scaled
 * down to run in about three minutes on one thread; --full is Zoology's grid. */
#include "commands.h"
#include "common/cli.h"
#include "common/progress.h"
#include "common/record.h"
#include "learn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn recall [--full] [--steps S] [--variants LIST] [--seed S]\n"
    "                      [--threads T] [--out PATH] [--resume]\n"
    "\n"
    "Multi-query associative recall as Zoology (Arora et al. 2023) generates it: K\n"
    "key-value pairs (keys from one half of the vocabulary, values from the other), then\n"
    "the keys queried again at power-law gaps; only the answers are scored (`linattn help\n"
    "train`). A two-layer decoder-only Transformer (heads of 16, d_ff = 2·D) is trained from\n"
    "the same seed for each attention variant and point, and its final accuracy on 4\n"
    "held-out batches goes to PATH. Two studies share one point:\n"
    "  pairs   accuracy against K at a fixed width D\n"
    "  width   accuracy against D at a fixed K\n"
    "\n"
    "default (scaled down, about three minutes on one thread): vocabulary 64, N = 32;\n"
    "  pairs: K = 2, 4, 8 at D = 32; width: D = 16, 32, 64 at K = 4; batch 32, 600 steps,\n"
    "  lr 0.003 constant after 50 warm-up steps; FAVOR+ m = 32, local window 8\n"
    "--full (Zoology's grid): vocabulary 8192; pairs: (N, K) = (64, 4), (128, 8),\n"
    "  (256, 16) at D = 64; width: D = 64, 128, 256 at (N, K) = (64, 4); batch 64, 4000\n"
    "  steps, lr 0.001; FAVOR+ m = 64, local window 32\n"
    "\n"
    "  --steps S        optimiser steps per point (default: the size's)\n"
    "  --variants LIST  among softmax, linear_elu, linear_relu, taylor, favor, local\n"
    "                   (default: all but linear_relu)\n"
    "  --seed S         the initialization and the batches, the same for every run [0]\n"
    "  --threads T      " CLI_THREADS_HELP "\n"
    "  --out PATH       results file (CSV with a # metadata header; default recall.csv)\n"
    "  --resume         keep the points already in PATH, train the others\n"
    "\n"
    "Columns: study,variant,seq_len,pairs,width,head_dim,vocab,batch,steps,eval_loss,\n"
    "eval_accuracy,elapsed_s,status. study is pairs, width or both (the shared point).\n"
    "elapsed_s is load-dependent, the other columns are the same bits on every run.\n"
    "Figure: linattn plot (plots/recall.gp).\n";

void cmd_recall_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] = "study,variant,seq_len,pairs,width,head_dim,vocab,batch,steps,"
                              "eval_loss,eval_accuracy,elapsed_s,status";
enum { N_KEY = 5, MAX_POINTS = 8, HEAD_DIM = 16 };

/* One point of the studies: N, K, D and which study it belongs to. */
typedef struct {
    const char *study;
    size_t seq_len, pairs, width;
} point;

/* The points of a size, the shared one (study "both") first. */
static size_t points_of(int full, point *p)
{
    if (full) {
        const point q[] = {{"both", 64, 4, 64},
                           {"pairs", 128, 8, 64},
                           {"pairs", 256, 16, 64},
                           {"width", 64, 4, 128},
                           {"width", 64, 4, 256}};
        memcpy(p, q, sizeof q);
        return sizeof q / sizeof q[0];
    }
    const point q[] = {{"both", 32, 4, 32},
                       {"pairs", 32, 2, 32},
                       {"pairs", 32, 8, 32},
                       {"width", 32, 4, 16},
                       {"width", 32, 4, 64}};
    memcpy(p, q, sizeof q);
    return sizeof q / sizeof q[0];
}

int cmd_recall(int argc, char **argv)
{
    learn_options o;
    int rc = learn_parse_options(argc, argv, "recall", 600, 4000, 1u << 2, "recall.csv", &o);
    if (rc) return rc;
    const int full = o.full, resume = o.resume, *use = o.use;
    const size_t n_steps = o.steps, seed_v = o.seed;
    const char *out = o.out;
    learn_variant v[LEARN_VARIANTS];
    learn_variants(full ? 64 : 32, full ? 32 : 8, v);
    point pts[MAX_POINTS];
    const size_t n_points = points_of(full, pts);
    const size_t vocab = full ? 8192 : 64, batch = full ? 64 : 32;
    char err[512];
    record_file *f = record_open(out, "recall",
                                 "multi-query associative recall (Zoology) trained per attention "
                                 "variant: final held-out accuracy against K and against width",
                                 COLUMNS, N_KEY, resume, argc, argv, err, sizeof err);
    if (!f) return cli_fail("recall", "%s", err);
    int todo = 0;
    for (size_t i = 0; i < LEARN_VARIANTS; i++)
        todo += use[i] * (int)n_points;
    progress_line pr;
    progress_start(&pr, "recall", todo, 0);
    int done = 0;
    for (size_t j = 0; j < n_points && !rc; j++)
        for (size_t i = 0; i < LEARN_VARIANTS && !rc; i++) {
            if (!use[i]) continue;
            const point *p = &pts[j];
            char key[128], what[160];
            snprintf(key, sizeof key, "%s,%s,%zu,%zu,%zu", p->study, v[i].name, p->seq_len,
                     p->pairs, p->width);
            snprintf(what, sizeof what, "%s N=%zu K=%zu D=%zu", v[i].name, p->seq_len, p->pairs,
                     p->width);
            if (resume && record_find(f, key)) {
                progress_step(&pr, ++done, 0, what);
                continue;
            }
            learn_setup s;
            learn_setup_init(&s, LA_TRAIN_TASK_RECALL, 2, p->width, p->width / HEAD_DIM, p->seq_len,
                             batch, n_steps, &v[i]);
            s.task.pairs = p->pairs, s.task.vocab = vocab;
            if (full) s.schedule.lr = 0.001;
            s.seed = seed_v;
            learn_point last;
            if ((rc = learn_run(&s, what, NULL, NULL, &last))) break;
            if (record_row(f, "%s,%zu,%zu,%zu,%zu,%.9g,%.6g,%.3f,ok", key, (size_t)HEAD_DIM, vocab,
                           batch, n_steps, last.eval_loss, last.eval_accuracy,
                           last.elapsed_s) != 0) {
                rc = cli_fail(out, "a write failed");
                break;
            }
            progress_step(&pr, ++done, 1, what);
        }
    if (!rc) progress_end(&pr);
    if (record_close(f) != 0 && !rc) rc = cli_fail(out, "a write failed");
    return rc;
}

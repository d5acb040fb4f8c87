/* copy_task.c — `linattn copy-task`: Katharopoulos et al. (2020, §4.1.1)'s sequence
 * duplication task, trained in C per attention variant (learn.h), the held-out loss and
 * copy accuracy against the step: does linear attention learn what softmax learns, and
 * how much slower. The default is scaled down to run in about 90 s on one thread;
 * --full is the paper's size. */
#include "commands.h"
#include "common/cli.h"
#include "common/progress.h"
#include "common/record.h"
#include "learn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn copy-task [--full] [--steps S] [--variants LIST] [--seed S]\n"
    "                         [--threads T] [--out PATH] [--resume]\n"
    "\n"
    "The copy task of Katharopoulos et al. (2020, §4.1.1): L random symbols of an alphabet\n"
    "of 10, a separator, the same L symbols again; only the copy is scored. A decoder-only\n"
    "Transformer is trained from the same seed for each attention variant (AdamW, the loop\n"
    "of `linattn train`), and every --eval-every steps the held-out loss and accuracy (the\n"
    "copied symbols predicted right) on 4 batches it never trains on go to PATH.\n"
    "\n"
    "default (scaled down, about 90 s on one thread): sequences of N = 64 (L <= 31),\n"
    "  2 layers, D = 32, 4 heads, d_ff = 64, batch 16, 1500 steps, lr 0.003 constant after\n"
    "  50 warm-up steps, evaluated every 100 steps; FAVOR+ with m = 32 features\n"
    "--full (the paper's task: N = 128, 4 layers, 8 heads, batch 64): D = 256, d_ff = 1024,\n"
    "  10000 steps, lr 0.001 times 0.1 every 3000 steps (the paper: RAdam, 1e-3 then 1e-4\n"
    "  after 3000 updates), evaluated every 250 steps; FAVOR+ with m = 64\n"
    "\n"
    "  --steps S        optimiser steps per variant (default: the size's)\n"
    "  --variants LIST  among softmax, linear_elu, linear_relu, taylor, favor, local\n"
    "                   (default: all but local)\n"
    "  --seed S         the initialization and the batches, the same for every variant [0]\n"
    "  --threads T      " CLI_THREADS_HELP "\n"
    "  --out PATH       results file (CSV with a # metadata header; default copy_task.csv)\n"
    "  --resume         keep the variants already finished in PATH, train the others\n"
    "\n"
    "Columns: variant,step,seq_len,layers,d_model,heads,batch,train_loss,eval_loss,\n"
    "eval_accuracy,elapsed_s,status. train_loss is the mean since the previous row;\n"
    "elapsed_s is load-dependent, the other columns are the same bits on every run.\n"
    "Figure: linattn plot (plots/copy_task.gp).\n";

void cmd_copy_task_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] = "variant,step,seq_len,layers,d_model,heads,batch,train_loss,"
                              "eval_loss,eval_accuracy,elapsed_s,status";
enum { N_KEY = 2 };

typedef struct {
    record_file *f;
    const learn_setup *s;
    const char *variant;
} sink;

static int write_point(void *ctx, const learn_point *pt)
{
    sink *k = ctx;
    const learn_setup *s = k->s;
    if (record_row(k->f, "%s,%zu,%zu,%zu,%zu,%zu,%zu,%.9g,%.9g,%.6g,%.3f,ok", k->variant, pt->step,
                   s->task.seq_len, s->model.layers, s->model.d_model, s->model.heads, s->batch,
                   pt->train_loss, pt->eval_loss, pt->eval_accuracy, pt->elapsed_s) != 0)
        return cli_fail(record_path(k->f), "a write failed");
    return 0;
}

int cmd_copy_task(int argc, char **argv)
{
    learn_options o;
    int rc =
        learn_parse_options(argc, argv, "copy-task", 1500, 10000, 1u << 5, "copy_task.csv", &o);
    if (rc) return rc;
    const int full = o.full, resume = o.resume, *use = o.use;
    const size_t n_steps = o.steps, seed_v = o.seed;
    const char *out = o.out;
    learn_variant v[LEARN_VARIANTS];
    learn_variants(full ? 64 : 32, full ? 32 : 8, v);
    char err[512];
    record_file *f =
        record_open(out, "copy_task",
                    "the copy task (Katharopoulos et al. 2020) trained per attention variant: "
                    "held-out loss and copy accuracy against the step",
                    COLUMNS, N_KEY, resume, argc, argv, err, sizeof err);
    if (!f) return cli_fail("copy-task", "%s", err);
    int todo = 0;
    for (size_t i = 0; i < LEARN_VARIANTS; i++)
        todo += use[i];
    progress_line pr;
    progress_start(&pr, "copy-task", todo, 0);
    int done = 0;
    for (size_t i = 0; i < LEARN_VARIANTS && !rc; i++) {
        if (!use[i]) continue;
        learn_setup s;
        if (full) {
            learn_setup_init(&s, LA_TRAIN_TASK_COPY, 4, 256, 8, 128, 64, n_steps, &v[i]);
            s.model.d_ff = 1024;
            s.schedule.lr = 0.001;
            s.schedule.kind = LA_TRAIN_SCHEDULE_STEP, s.schedule.every = 3000;
            s.schedule.gamma = 0.1;
            s.eval_every = 250;
        } else {
            learn_setup_init(&s, LA_TRAIN_TASK_COPY, 2, 32, 4, 64, 16, n_steps, &v[i]);
            s.eval_every = 100;
        }
        s.seed = seed_v;
        char key[64];
        snprintf(key, sizeof key, "%s,%zu", v[i].name, n_steps);
        if (resume && record_find(f, key)) {
            progress_step(&pr, ++done, 0, v[i].name);
            continue;
        }
        sink k = {f, &s, v[i].name};
        rc = learn_run(&s, v[i].name, write_point, &k, NULL);
        if (!rc) progress_step(&pr, ++done, 1, v[i].name);
    }
    if (!rc) progress_end(&pr);
    if (record_close(f) != 0 && !rc) rc = cli_fail(out, "a write failed");
    return rc;
}

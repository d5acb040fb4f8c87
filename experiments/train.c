/* train.c — `linattn train`: a decoder-only Transformer trained in C on a synthetic task
 * (copy, MQAR recall) or a text file, with AdamW, checkpoints and --resume. This file reads
 * the flags (and a resumed checkpoint's settings) into train_settings; train_loop.c runs
 * them; train_help.c prints the help. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "train.h"

#include "commands.h"
#include "common/cli.h"
#include "common/guard.h"
#include "common/kernels.h"
#include "common/layer_flags.h"
#include "common/variants.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const train_recorded_flags[TRAIN_RECORDED] = {
    [TRAIN_TASK] = "task",
    [TRAIN_DATA] = "data",
    [TRAIN_PAIRS] = "pairs",
    [TRAIN_VOCAB] = "vocab",
    [TRAIN_COPY_LENGTH] = "copy-length",
    [TRAIN_ATTENTION] = "attention",
    [TRAIN_WINDOW] = "window",
    [TRAIN_PROJ_RANK] = "proj-rank",
    [TRAIN_FEATURES] = "features",
    [TRAIN_SCORE_DIM] = "score-dim",
    [TRAIN_FEATURE_MAP] = "feature-map",
    [TRAIN_LAYERS] = "layers",
    [TRAIN_D_MODEL] = "d-model",
    [TRAIN_HEADS] = "heads",
    [TRAIN_D_FF] = "d-ff",
    [TRAIN_SEQ_LEN] = "seq-len",
    [TRAIN_NORM] = "norm",
    [TRAIN_ACTIVATION] = "activation",
    [TRAIN_POSITIONS] = "positions",
    [TRAIN_HEAD] = "head",
    [TRAIN_BATCH] = "batch",
    [TRAIN_LR] = "lr",
    [TRAIN_WARMUP] = "warmup",
    [TRAIN_SCHEDULE] = "schedule",
    [TRAIN_STEP_EVERY] = "step-every",
    [TRAIN_GAMMA] = "gamma",
    [TRAIN_MIN_LR] = "min-lr",
    [TRAIN_WEIGHT_DECAY] = "weight-decay",
    [TRAIN_CLIP] = "clip",
    [TRAIN_SEED] = "seed",
    [TRAIN_PRECISION] = "precision",
};

/* The defaults ("" : absent, nothing applies), indexed as the flags; small enough that the
 * copy task trains in about a minute on 2 cores. */
static const char *const defaults[TRAIN_RECORDED] = {
    [TRAIN_TASK] = "copy",
    [TRAIN_DATA] = "",
    [TRAIN_PAIRS] = "",
    [TRAIN_VOCAB] = "",
    [TRAIN_COPY_LENGTH] = "",
    [TRAIN_ATTENTION] = "softmax",
    [TRAIN_WINDOW] = "",
    [TRAIN_PROJ_RANK] = "",
    [TRAIN_FEATURES] = "",
    [TRAIN_SCORE_DIM] = "",
    [TRAIN_FEATURE_MAP] = "",
    [TRAIN_LAYERS] = "2",
    [TRAIN_D_MODEL] = "64",
    [TRAIN_HEADS] = "4",
    [TRAIN_D_FF] = "128",
    [TRAIN_SEQ_LEN] = "64",
    [TRAIN_NORM] = "pre",
    [TRAIN_ACTIVATION] = "relu",
    [TRAIN_POSITIONS] = "sinusoidal",
    [TRAIN_HEAD] = "separate",
    [TRAIN_BATCH] = "16",
    [TRAIN_LR] = "0.003",
    [TRAIN_WARMUP] = "50",
    [TRAIN_SCHEDULE] = "constant",
    [TRAIN_STEP_EVERY] = "",
    [TRAIN_GAMMA] = "",
    [TRAIN_MIN_LR] = "",
    [TRAIN_WEIGHT_DECAY] = "0.01",
    [TRAIN_CLIP] = "1",
    [TRAIN_SEED] = "0",
    [TRAIN_PRECISION] = "float32",
};
static const char *const default_steps = "2000", *const default_eval_every = "200";

/* Canonical text of a setting, to compare a flag with a checkpoint's: a number as %.17g,
 * anything else with '-' read as '_'. */
static void canonical(const char *text, char *buf, size_t size)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*text && !*end && !errno) {
        snprintf(buf, size, "%.17g", v);
        return;
    }
    snprintf(buf, size, "%s", text);
    for (char *c = buf; *c; c++)
        if (*c == '-') *c = '_';
}

/* With --resume DIR: every recorded flag not given takes the checkpoint's value; one given
 * with another value is refused (the run would not continue the checkpoint's). --steps
 * and --eval-every not given take the checkpoint's. */
static int merge_checkpoint(const char *dir, const char **text, const char **steps,
                            const char **eval_every, la_train_checkpoint_state *ck)
{
    la_train_config c;
    la_train_adamw_config oc;
    const char *why = NULL;
    if (la_train_checkpoint_read(dir, &c, &oc, ck, &why) != LA_OK)
        return cli_fail("--resume", "%s", why);
    for (int i = 0; i < TRAIN_RECORDED; i++) {
        const char *theirs = la_train_checkpoint_get(ck, train_recorded_flags[i]);
        if (!theirs)
            return cli_fail("--resume", "%s: not a checkpoint of linattn train (no setting %s)",
                            dir, train_recorded_flags[i]);
        if (text[i]) {
            char a[PATH_MAX], b[PATH_MAX];
            if (i == TRAIN_DATA) {
                if (!realpath(text[i], a)) snprintf(a, sizeof a, "%s", text[i]);
                snprintf(b, sizeof b, "%s", theirs);
            } else {
                canonical(text[i], a, sizeof a);
                canonical(theirs, b, sizeof b);
            }
            char flag[48];
            snprintf(flag, sizeof flag, "--%s", train_recorded_flags[i]);
            if (strcmp(a, b))
                return cli_fail(flag, "'%s', but the checkpoint %s was trained with '%s'", text[i],
                                dir, *theirs ? theirs : "(none)");
        }
        text[i] = theirs;
    }
    if (!*steps) *steps = la_train_checkpoint_get(ck, "steps");
    if (!*eval_every) *eval_every = la_train_checkpoint_get(ck, "eval-every");
    return 0;
}

static int given(const char *text)
{
    return text && *text;
}

/* A flag that the chosen task or kernel does not read: refused. */
static int not_read(const char *flag, const char *text, const char *by)
{
    return given(text) ? cli_fail(flag, "only %s reads it", by) : 0;
}

int train_kernel(la_kernel k)
{
    const la_kernel_info *row = la_kernel_get(k);
    return kernels_layer_kernel(k) && kernels_allows(k, 1) && (row->caps & LA_CAP_BACKWARD);
}

static int parse_size_min(const char *flag, const char *text, size_t min, size_t *out)
{
    if (!given(text)) return 0;
    int rc = cli_parse_size(flag, text, out);
    if (!rc && *out < min) rc = cli_fail(flag, "must be at least %zu", min);
    return rc;
}

static int parse_positive(const char *flag, const char *text, double *out)
{
    if (!given(text)) return 0;
    int rc = cli_parse_double(flag, text, out);
    if (!rc && !(*out > 0)) rc = cli_fail(flag, "must be positive");
    return rc;
}

/* The task's and the model's flags into s. */
static int parse_model(const char **t, train_settings *s)
{
    static const char *const tasks[] = {"copy", "recall", "text", NULL};
    static const char *const norms[] = {"post", "pre", NULL};
    static const char *const activations[] = {"relu", "gelu", NULL};
    static const char *const precisions[] = {"float32", "float64", NULL};
    static const char *const positions[] = {"sinusoidal", "learned", NULL};
    static const char *const heads[] = {"separate", "tied", NULL};
    int task, rc, pre, gelu, f64, learned, tied;
    size_t n[6];
    if ((rc = cli_parse_choice("--task", t[TRAIN_TASK], tasks, &task)) ||
        (rc = cli_parse_choice("--norm", t[TRAIN_NORM], norms, &pre)) ||
        (rc = cli_parse_choice("--activation", t[TRAIN_ACTIVATION], activations, &gelu)) ||
        (rc = cli_parse_choice("--precision", t[TRAIN_PRECISION], precisions, &f64)) ||
        (rc = cli_parse_choice("--positions", t[TRAIN_POSITIONS], positions, &learned)) ||
        (rc = cli_parse_choice("--head", t[TRAIN_HEAD], heads, &tied)))
        return rc;
    const char *const size_flags[6] = {"--layers", "--d-model", "--heads",
                                       "--d-ff",   "--seq-len", "--batch"};
    const int size_index[6] = {TRAIN_LAYERS, TRAIN_D_MODEL, TRAIN_HEADS,
                               TRAIN_D_FF,   TRAIN_SEQ_LEN, TRAIN_BATCH};
    for (int i = 0; i < 6; i++)
        if ((rc = parse_size_min(size_flags[i], t[size_index[i]], i == 4 ? 2 : 1, &n[i])))
            return rc;
    if (n[1] % n[2]) return cli_fail("--heads", "%zu does not divide --d-model %zu", n[2], n[1]);
    s->task = (la_train_task_config){.kind = (la_train_task_kind)task, .seq_len = n[4]};
    s->batch = n[5];
    if (task != LA_TRAIN_TASK_TEXT && (rc = not_read("--data", t[TRAIN_DATA], "--task text")))
        return rc;
    if (task != LA_TRAIN_TASK_RECALL &&
        ((rc = not_read("--pairs", t[TRAIN_PAIRS], "--task recall")) ||
         (rc = not_read("--vocab", t[TRAIN_VOCAB], "--task recall"))))
        return rc;
    if (task != LA_TRAIN_TASK_COPY &&
        (rc = not_read("--copy-length", t[TRAIN_COPY_LENGTH], "--task copy")))
        return rc;
    if (task == LA_TRAIN_TASK_TEXT) {
        if (!given(t[TRAIN_DATA])) return cli_fail("--data", "--task text needs a file");
        if (!realpath(t[TRAIN_DATA], s->data_path))
            return cli_fail(t[TRAIN_DATA], "%s", strerror(errno));
        s->task.data = s->data_path;
    }
    s->task.pairs = 8, s->task.vocab = 64;
    if ((rc = parse_size_min("--pairs", t[TRAIN_PAIRS], 1, &s->task.pairs)) ||
        (rc = parse_size_min("--vocab", t[TRAIN_VOCAB], 4, &s->task.vocab)) ||
        (rc = parse_size_min("--copy-length", t[TRAIN_COPY_LENGTH], 1, &s->task.copy_max_len)))
        return rc;
    /* the attention kernel and its parameters */
    la_kernel k;
    if ((rc = kernels_parse_kernel("--attention", t[TRAIN_ATTENTION], train_kernel, &k))) return rc;
    const la_kernel_info *row = la_kernel_get(k);
    variants_flags vf = {0};
    variants_values vv = {0};
    vf.window = given(t[TRAIN_WINDOW]) ? t[TRAIN_WINDOW] : NULL;
    vf.proj_rank = given(t[TRAIN_PROJ_RANK]) ? t[TRAIN_PROJ_RANK] : NULL;
    vf.features = given(t[TRAIN_FEATURES]) ? t[TRAIN_FEATURES] : NULL;
    vf.score_dim = given(t[TRAIN_SCORE_DIM]) ? t[TRAIN_SCORE_DIM] : NULL;
    rc = variants_parse(&vf, row->params, &vv);
    variants_free(&vv);
    if (rc) return rc;
    la_train_config_init(&s->model, 1, n[1], n[2], n[3], n[0], n[4]);
    la_problem *p = &s->model.attention_params;
    la_blocks *b = &s->model.attention_blocks; /* the seeds: --seed, below */
    b->local.window = vv.blocks.local.window,
    b->linformer.proj_rank = vv.blocks.linformer.proj_rank;
    b->favor.features = vv.blocks.favor.features, b->score.score_dim = vv.blocks.score.score_dim;
    if (given(t[TRAIN_FEATURE_MAP])) {
        if (!(row->params & LA_PARAM_FEATURE_MAP))
            return cli_fail("--feature-map", "--attention %s has no feature map", row->name);
        if (la_feature_map_parse(t[TRAIN_FEATURE_MAP], &p->feature_map) != LA_OK)
            return cli_fail("--feature-map", "'%s' is not one of elu, relu", t[TRAIN_FEATURE_MAP]);
    }
    s->model.attention = k;
    s->model.dtype = f64 ? LA_FLOAT64 : LA_FLOAT32;
    s->model.pre_ln = pre;
    s->model.gelu = gelu;
    s->model.learned_positions = learned;
    s->model.tie_head = tied;
    return 0;
}

/* The optimiser's flags into s. */
static int parse_optim(const char **t, train_settings *s)
{
    static const char *const schedules[] = {"constant", "step", "cosine", NULL};
    int kind, rc;
    la_train_schedule *sc = &s->schedule;
    if ((rc = cli_parse_choice("--schedule", t[TRAIN_SCHEDULE], schedules, &kind))) return rc;
    *sc = (la_train_schedule){.kind = (la_train_schedule_kind)kind, .every = 100, .gamma = 0.5};
    if (kind != LA_TRAIN_SCHEDULE_STEP &&
        ((rc = not_read("--step-every", t[TRAIN_STEP_EVERY], "--schedule step")) ||
         (rc = not_read("--gamma", t[TRAIN_GAMMA], "--schedule step"))))
        return rc;
    if (kind != LA_TRAIN_SCHEDULE_COSINE &&
        (rc = not_read("--min-lr", t[TRAIN_MIN_LR], "--schedule cosine")))
        return rc;
    s->adamw = la_train_adamw_defaults();
    if ((rc = cli_parse_double("--lr", t[TRAIN_LR], &sc->lr)) ||
        (rc = parse_size_min("--warmup", t[TRAIN_WARMUP], 0, &sc->warmup)) ||
        (rc = parse_size_min("--step-every", t[TRAIN_STEP_EVERY], 1, &sc->every)) ||
        (rc = parse_positive("--gamma", t[TRAIN_GAMMA], &sc->gamma)) ||
        (given(t[TRAIN_MIN_LR]) &&
         (rc = cli_parse_double("--min-lr", t[TRAIN_MIN_LR], &sc->floor))) ||
        (rc = cli_parse_double("--weight-decay", t[TRAIN_WEIGHT_DECAY], &s->adamw.weight_decay)) ||
        (rc = cli_parse_double("--clip", t[TRAIN_CLIP], &s->clip)))
        return rc;
    if (sc->lr < 0) return cli_fail("--lr", "must be at least 0");
    if (sc->gamma > 1) return cli_fail("--gamma", "must be in (0, 1]");
    if (!(sc->floor >= 0 && sc->floor <= sc->lr))
        return cli_fail("--min-lr", "must be in [0, --lr]");
    if (s->adamw.weight_decay < 0) return cli_fail("--weight-decay", "must be at least 0");
    if (s->clip < 0) return cli_fail("--clip", "must be at least 0 (0: no clipping)");
    return 0;
}

int cmd_train(int argc, char **argv)
{
    const char *text[TRAIN_RECORDED] = {0}, *steps = NULL, *eval_every = NULL, *threads = NULL;
    train_settings *s = calloc(1, sizeof *s);
    la_train_checkpoint_state *ck = calloc(1, sizeof *ck);
    if (!s || !ck) {
        free(s);
        free(ck);
        return cli_fail("train", "out of memory");
    }
    cli_flag flags[TRAIN_RECORDED + 7];
    for (int i = 0; i < TRAIN_RECORDED; i++)
        flags[i] = (cli_flag){train_recorded_flags[i], &text[i], NULL};
    flags[TRAIN_RECORDED + 0] = (cli_flag){"steps", &steps, NULL};
    flags[TRAIN_RECORDED + 1] = (cli_flag){"eval-every", &eval_every, NULL};
    flags[TRAIN_RECORDED + 2] = (cli_flag){"log", &s->log, NULL};
    flags[TRAIN_RECORDED + 3] = (cli_flag){"checkpoint", &s->checkpoint, NULL};
    flags[TRAIN_RECORDED + 4] = (cli_flag){"resume", &s->resume, NULL};
    flags[TRAIN_RECORDED + 5] = (cli_flag){"threads", &threads, NULL};
    flags[TRAIN_RECORDED + 6] = (cli_flag){NULL, NULL, NULL};
    int rc = cli_parse_flags(argc, argv, flags);
    if (!rc && s->resume) rc = merge_checkpoint(s->resume, text, &steps, &eval_every, ck);
    if (!rc && s->resume && !s->checkpoint) s->checkpoint = s->resume; /* carries on there */
    char guard_err[PATH_MAX + 256];
    if (!rc && s->checkpoint && guard_check(s->checkpoint, guard_err, sizeof guard_err))
        rc = cli_fail("--checkpoint", "%s", guard_err);
    for (int i = 0; i < TRAIN_RECORDED; i++)
        if (!text[i]) text[i] = defaults[i];
    if (!rc) rc = cli_parse_threads("--threads", threads);
    if (!rc) rc = parse_model(text, s);
    if (!rc) rc = parse_optim(text, s);
    if (!rc) rc = parse_size_min("--steps", steps ? steps : default_steps, 1, &s->steps);
    if (!rc)
        rc = parse_size_min("--eval-every", eval_every ? eval_every : default_eval_every, 1,
                            &s->eval_every);
    if (!rc) {
        uint64_t seed = 0;
        size_t v;
        if ((rc = cli_parse_size("--seed", text[TRAIN_SEED], &v)) == 0) seed = v;
        s->seed = seed;
        la_blocks *b = &s->model.attention_blocks; /* every drawn tensor */
        b->linformer.seed = b->favor.seed = b->score.seed = b->relative.seed = seed;
    }
    if (!rc) {
        s->schedule.total = s->steps;
        s->eval_batches = 4;
        for (int i = 0; i < TRAIN_RECORDED; i++)
            s->recorded[i] = text[i];
        if (s->task.kind == LA_TRAIN_TASK_TEXT) s->recorded[TRAIN_DATA] = s->data_path;
        rc = train_run(s, argc, argv);
    }
    free(ck);
    free(s);
    return rc;
}

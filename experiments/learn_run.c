/* learn_run.c — one training run in process for the learning experiments (learn.h): the
 * steps of `linattn train` (batch, forward and backward, clipping, AdamW at the
 * schedule's rate) and its held-out evaluation, from the seed alone, so the same setup
 * gives the same bits. */
#include "learn.h"

#include "common/cli.h"
#include "common/timer.h"

#include <math.h>
#include <stdlib.h>

const char *const learn_variant_names[LEARN_VARIANTS + 1] = {
    "softmax", "linear_elu", "linear_relu", "taylor", "favor", "local", NULL};

void learn_variants(size_t features, size_t window, learn_variant out[LEARN_VARIANTS])
{
    const learn_variant v[LEARN_VARIANTS] = {
        {"softmax", LA_KERNEL_SOFTMAX, LA_FEATURE_ELU1, 0, 0},
        {"linear_elu", LA_KERNEL_LINEAR, LA_FEATURE_ELU1, 0, 0},
        {"linear_relu", LA_KERNEL_LINEAR, LA_FEATURE_RELU, 0, 0},
        {"taylor", LA_KERNEL_TAYLOR, LA_FEATURE_ELU1, 0, 0},
        {"favor", LA_KERNEL_FAVOR, LA_FEATURE_ELU1, features, 0},
        {"local", LA_KERNEL_LOCAL, LA_FEATURE_ELU1, 0, window},
    };
    for (size_t i = 0; i < LEARN_VARIANTS; i++)
        out[i] = v[i];
}

int learn_parse_variants(const char *text, unsigned default_off, int use[LEARN_VARIANTS])
{
    int idx[LEARN_VARIANTS];
    size_t n = 0;
    for (size_t i = 0; i < LEARN_VARIANTS; i++)
        use[i] = text ? 0 : !(default_off >> i & 1);
    if (!text) return 0;
    int rc =
        cli_parse_choice_list("--variants", text, learn_variant_names, idx, LEARN_VARIANTS, &n);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++)
        use[idx[i]] = 1;
    return 0;
}

int learn_parse_options(int argc, char **argv, const char *what, size_t quick_steps,
                        size_t full_steps, unsigned default_off, const char *default_out,
                        learn_options *o)
{
    const char *steps = NULL, *variants = NULL, *seed = NULL, *threads = NULL;
    *o = (learn_options){.out = NULL};
    const cli_flag flags[] = {
        {"full", NULL, &o->full},     {"steps", &steps, NULL},     {"variants", &variants, NULL},
        {"seed", &seed, NULL},        {"threads", &threads, NULL}, {"out", &o->out, NULL},
        {"resume", NULL, &o->resume}, {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc || (rc = cli_parse_threads("--threads", threads)) ||
        (rc = learn_parse_variants(variants, default_off, o->use)))
        return rc;
    o->steps = o->full ? full_steps : quick_steps;
    if ((rc = cli_parse_size_flag(what, "--steps", steps, 0, 1, &o->steps)) ||
        (seed && (rc = cli_parse_size("--seed", seed, &o->seed))))
        return rc;
    if (!o->out) o->out = default_out;
    return 0;
}

void learn_setup_init(learn_setup *s, la_train_task_kind task, size_t layers, size_t d_model,
                      size_t heads, size_t seq_len, size_t batch, size_t steps,
                      const learn_variant *v)
{
    *s = (learn_setup){0};
    s->task.kind = task;
    s->task.seq_len = seq_len;
    s->task.vocab = 64, s->task.pairs = 8;
    la_train_config_init(&s->model, 1, d_model, heads, 2 * d_model, layers, seq_len);
    s->model.attention = v->kernel;
    la_problem *p = &s->model.attention_params;
    p->feature_map = v->feature_map;
    if (v->features) s->model.attention_blocks.favor.features = v->features;
    if (v->window) s->model.attention_blocks.local.window = v->window;
    s->batch = batch, s->steps = steps, s->eval_every = steps, s->eval_batches = 4;
    s->schedule = (la_train_schedule){
        .kind = LA_TRAIN_SCHEDULE_CONSTANT, .lr = 0.003, .warmup = 50, .every = 100, .gamma = 0.5};
    s->adamw = la_train_adamw_defaults();
    s->clip = 1;
    s->seed = 0;
}

typedef struct {
    la_train_task *task;
    la_train_model *model;
    la_train_tensor *list;
    size_t count;
    la_train_adamw adamw;
    int32_t *tokens, *targets;
} run;

static la_status evaluate(const learn_setup *s, run *r, double *loss, double *accuracy)
{
    return la_train_task_evaluate(r->task, r->model, s->seed, s->batch, s->eval_batches, r->tokens,
                                  r->targets, loss, accuracy);
}

static la_status step(const learn_setup *s, run *r, la_train_rng *rng, size_t t, double *loss)
{
    la_status st = la_train_task_batch(r->task, rng, s->batch, r->tokens, r->targets);
    if (!st)
        st = la_train_forward_backward(r->model, s->batch, r->tokens, r->targets, loss, NULL, NULL);
    if (!st && !isfinite(*loss)) st = LA_ERANGE;
    if (!st && s->clip > 0) {
        double norm;
        st = la_train_clip_grad_norm(r->list, r->count, s->model.dtype, s->clip, &norm);
        if (!st && !isfinite(norm)) st = LA_ERANGE;
    }
    if (!st)
        st = la_train_adamw_step(&r->adamw, r->list, r->count,
                                 la_train_schedule_lr(&s->schedule, t));
    return st;
}

int learn_run(const learn_setup *s, const char *what, learn_eval_fn fn, void *ctx,
              learn_point *last)
{
    run r = {0};
    const char *why = NULL;
    int rc = 0;
    la_status st = la_train_task_create(&s->task, &r.task, &why);
    if (st) return cli_fail(what, "the task is refused: %s", why ? why : la_strerror(st));
    la_train_config c = s->model;
    c.vocab = la_train_task_vocab(r.task);
    const size_t n = s->batch * s->task.seq_len;
    if ((st = la_train_config_check(&c)) || (st = la_train_model_create(&r.model, &c, s->seed)) ||
        (st = la_train_model_tensors(r.model, &r.list, &r.count)) ||
        (st = la_train_adamw_init(&r.adamw, &s->adamw, c.dtype, r.list, r.count))) {
        rc = cli_fail(what, "cannot make the model: %s", la_strerror(st));
        goto done;
    }
    r.tokens = malloc(n * sizeof *r.tokens);
    r.targets = malloc(n * sizeof *r.targets);
    if (!r.tokens || !r.targets) {
        rc = cli_fail(what, "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    la_train_rng rng = la_train_rng_make(s->seed);
    const double start = timer_now();
    double loss_sum = 0;
    size_t since = 0;
    for (size_t t = 0; t < s->steps && !rc; t++) {
        double loss = NAN;
        if ((st = step(s, &r, &rng, t, &loss))) {
            rc = cli_fail(what, "step %zu: %s", t + 1,
                          st == LA_ERANGE ? "the loss or a gradient is not finite"
                                          : la_strerror(st));
            break;
        }
        loss_sum += loss, since++;
        if ((t + 1) % s->eval_every && t + 1 != s->steps) continue;
        learn_point pt = {.step = t + 1, .train_loss = loss_sum / (double)since};
        if ((st = evaluate(s, &r, &pt.eval_loss, &pt.eval_accuracy))) {
            rc = cli_fail(what, "evaluation at step %zu: %s", t + 1, la_strerror(st));
            break;
        }
        pt.elapsed_s = timer_now() - start;
        loss_sum = 0, since = 0;
        if (last) *last = pt;
        if (fn) rc = fn(ctx, &pt);
    }
done:
    la_train_task_free(r.task);
    la_train_model_free(r.model);
    la_train_adamw_free(&r.adamw);
    free(r.tokens);
    free(r.targets);
    return rc;
}

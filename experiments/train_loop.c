/* train_loop.c — the loop of `linattn train` (train.h): batches, forward and backward,
 * clipping, the schedule's rate, AdamW; every --eval-every steps an evaluation (a row of
 * the log) and a checkpoint; SIGINT or SIGTERM stops after the step running, writes the
 * checkpoint and exits 130. */
#include "train.h"

#include "common/cli.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/timer.h"
#include "io/outfile.h"

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLUMNS "step,train_loss,eval_loss,eval_accuracy,elapsed_s,tokens_per_s"

/* ---------------------------------------------------------------- signals */

static volatile sig_atomic_t stop_signal;

/* The first SIGINT or SIGTERM asks the loop to stop; a second one ends the process as
 * main.c's handler does (a checkpoint being written stays a temporary folder). */
static void on_stop(int sig)
{
    if (stop_signal) {
        la_outfile_signal_cleanup();
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_signal = sig;
}

/* on: the loop's handler, the previous ones kept; off: those put back. */
static void catch_signals(int on)
{
    static struct sigaction old_int, old_term;
    if (!on) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
}

/* ---------------------------------------------------------------- the run's state */

typedef struct {
    const train_settings *s;
    la_train_task *task;
    la_train_model *model;
    la_train_tensor *list;
    size_t count;
    la_train_adamw adamw;
    la_train_checkpoint_state ck; /* step, generator, settings */
    double elapsed_before;        /* seconds of the runs before --resume */
    int32_t *tokens, *targets;
} run;

static void run_free(run *r)
{
    la_train_task_free(r->task);
    la_train_model_free(r->model);
    la_train_adamw_free(&r->adamw);
    free(r->tokens);
    free(r->targets);
}

/* The settings a checkpoint records into r->ck: -1, or the flag whose value cannot be
 * stored (a newline in it, or too long: checked before the run). */
static int record_settings(run *r, double elapsed)
{
    la_train_checkpoint_state *ck = &r->ck;
    char value[64];
    ck->n_settings = 0;
    for (int i = 0; i < TRAIN_RECORDED; i++)
        if (la_train_checkpoint_set(ck, train_recorded_flags[i], r->s->recorded[i]) != LA_OK)
            return i;
    snprintf(value, sizeof value, "%zu", r->s->steps);
    la_train_checkpoint_set(ck, "steps", value);
    snprintf(value, sizeof value, "%zu", r->s->eval_every);
    la_train_checkpoint_set(ck, "eval-every", value);
    snprintf(value, sizeof value, "%.3f", elapsed);
    la_train_checkpoint_set(ck, "elapsed_s", value);
    return -1;
}

/* The checkpoint, with the settings (nothing without --checkpoint): NULL, or why not. */
static const char *save(run *r, double elapsed)
{
    if (!r->s->checkpoint) return NULL;
    la_train_checkpoint_state *ck = &r->ck;
    record_settings(r, elapsed);
    const char *why = NULL;
    if (la_train_checkpoint_save(r->s->checkpoint, r->model, &r->adamw, ck, &why) != LA_OK)
        return why;
    return NULL;
}

/* The evaluation set's mean loss over its scored tokens, and its accuracy. */
static la_status evaluate(run *r, double *loss, double *accuracy)
{
    const train_settings *s = r->s;
    return la_train_task_evaluate(r->task, r->model, s->seed, s->batch, s->eval_batches, r->tokens,
                                  r->targets, loss, accuracy);
}

/* Task, model, optimiser, and the checkpoint resumed. 0, or 2 after one line. */
static int setup(run *r)
{
    const train_settings *s = r->s;
    const char *why = NULL;
    la_status st = la_train_task_create(&s->task, &r->task, &why);
    if (st)
        return cli_fail(s->task.kind == LA_TRAIN_TASK_TEXT && st != LA_EINVAL ? s->data_path
                                                                              : "train",
                        "%s", why);
    la_train_config c = s->model;
    c.vocab = la_train_task_vocab(r->task);
    if ((st = la_train_config_check(&c)))
        return cli_fail("train", "the model's configuration is refused: %s", la_strerror(st));
    if ((st = la_train_model_create(&r->model, &c, s->seed)) ||
        (st = la_train_model_tensors(r->model, &r->list, &r->count)) ||
        (st = la_train_adamw_init(&r->adamw, &s->adamw, c.dtype, r->list, r->count)))
        return cli_fail("train", "cannot make the model: %s", la_strerror(st));
    size_t n = s->batch * s->task.seq_len;
    r->tokens = malloc(n * sizeof *r->tokens);
    r->targets = malloc(n * sizeof *r->targets);
    if (!r->tokens || !r->targets) return cli_fail("train", "%s", la_strerror(LA_ENOMEM));
    r->ck.rng = la_train_rng_make(s->seed);
    if (s->checkpoint && la_train_checkpoint_replaceable(s->checkpoint, NULL, &why) != LA_OK)
        return cli_fail("--checkpoint", "%s", why);
    int bad = s->checkpoint ? record_settings(r, 0) : -1;
    if (bad >= 0)
        return cli_fail("--checkpoint", "cannot record --%s's value '%s' (a newline, or too long)",
                        train_recorded_flags[bad], s->recorded[bad]);
    if (s->resume) {
        if ((st = la_train_checkpoint_load(s->resume, r->model, &r->adamw, &r->ck, &why)))
            return cli_fail("--resume", "%s", why);
        const char *e = la_train_checkpoint_get(&r->ck, "elapsed_s");
        r->elapsed_before = e ? atof(e) : 0;
        if (r->ck.step >= s->steps)
            return cli_fail("--steps", "%zu, but the checkpoint %s is at step %zu already",
                            s->steps, s->resume, r->ck.step);
    }
    return 0;
}

/* One step on the next batch; *loss its loss. LA_ERANGE for a loss or gradient norm that
 * is not finite. */
static la_status step(run *r, double *loss)
{
    const train_settings *s = r->s;
    size_t correct, scored;
    la_status st = la_train_task_batch(r->task, &r->ck.rng, s->batch, r->tokens, r->targets);
    if (!st)
        st = la_train_forward_backward(r->model, s->batch, r->tokens, r->targets, loss, &correct,
                                       &scored);
    if (!st && !isfinite(*loss)) st = LA_ERANGE;
    if (!st && s->clip > 0) {
        double norm;
        st = la_train_clip_grad_norm(r->list, r->count, s->model.dtype, s->clip, &norm);
        if (!st && !isfinite(norm)) st = LA_ERANGE;
    }
    if (!st)
        st = la_train_adamw_step(&r->adamw, r->list, r->count,
                                 la_train_schedule_lr(&s->schedule, r->ck.step));
    if (!st) r->ck.step++;
    return st;
}

/* The progress line ended without its closing line, before an error's one line: the
 * heartbeat stopped (progress_suite's reset), a terminal's line cleared. */
static void progress_abort(const progress_line *pr)
{
    if (pr->tty) fputs("\r\033[K", pr->out);
    progress_suite(0, 0, -1);
}

static int loop(run *r, record_file *log)
{
    const train_settings *s = r->s;
    const size_t first = r->ck.step;
    const double tokens_per_step = (double)(s->batch * s->task.seq_len);
    const double start = timer_now();
    double since_s = start, loss_sum = 0;
    size_t since_steps = 0;
    progress_line pr;
    progress_start(&pr, "train", (int)(s->steps - first), 0);
    pr.unit = "step";
    int rc = 0;
    while (r->ck.step < s->steps && !stop_signal) {
        double loss = NAN;
        la_status st = step(r, &loss);
        if (st) progress_abort(&pr);
        if (st == LA_ERANGE) {
            rc = cli_fail("train",
                          "the loss or a gradient is not finite at step %zu (loss %g): stopped; "
                          "the last checkpoint is kept (lower --lr, or --precision float64)",
                          r->ck.step + 1, loss);
            break;
        }
        if (st) {
            rc = cli_fail("train", "step %zu: %s", r->ck.step + 1, la_strerror(st));
            break;
        }
        loss_sum += loss;
        since_steps++;
        const double now = timer_now();
        char what[96];
        snprintf(what, sizeof what, "step %zu/%zu  loss %.4f  %.0f tok/s", r->ck.step, s->steps,
                 loss, tokens_per_step * (double)since_steps / (now - since_s));
        progress_step(&pr, (int)(r->ck.step - first), 1, what);
        if (r->ck.step % s->eval_every && r->ck.step != s->steps) continue;
        double eval_loss, accuracy;
        if ((st = evaluate(r, &eval_loss, &accuracy))) {
            progress_abort(&pr);
            rc = cli_fail("train", "evaluation at step %zu: %s", r->ck.step, la_strerror(st));
            break;
        }
        const double after = timer_now(), elapsed = r->elapsed_before + (after - start);
        if (log && record_row(log, "%zu,%.12g,%.12g,%.6g,%.3f,%.1f", r->ck.step,
                              loss_sum / (double)since_steps, eval_loss, accuracy, elapsed,
                              tokens_per_step * (double)since_steps / (after - since_s)) != 0) {
            progress_abort(&pr);
            rc = cli_fail(s->log, "cannot write the row of step %zu", r->ck.step);
            break;
        }
        const char *why = save(r, elapsed);
        if (why) {
            progress_abort(&pr);
            rc = cli_fail("--checkpoint", "%s", why);
            break;
        }
        loss_sum = 0, since_steps = 0, since_s = timer_now();
    }
    if (!rc) progress_end(&pr);
    if (!rc && stop_signal) {
        const char *why = save(r, r->elapsed_before + (timer_now() - start));
        if (why) {
            rc = cli_fail("--checkpoint", "%s", why);
        } else {
            cli_line("train: stopped by signal %d at step %zu%s%s%s", (int)stop_signal, r->ck.step,
                     s->checkpoint ? "; resume with --resume " : "",
                     s->checkpoint ? s->checkpoint : "", s->checkpoint ? "" : " (no --checkpoint)");
            rc = 130;
        }
    }
    return rc;
}

int train_run(const train_settings *s, int argc, char **argv)
{
    run *r = calloc(1, sizeof *r);
    if (!r) return cli_fail("train", "%s", la_strerror(LA_ENOMEM));
    r->s = s;
    int rc = setup(r);
    record_file *log = NULL;
    if (!rc && s->log) {
        char err[512];
        log = record_open(s->log, "train",
                          "a decoder-only Transformer trained with AdamW: the training loss "
                          "since the last row, the held-out loss and accuracy",
                          COLUMNS, 1, s->resume != NULL, argc, argv, err, sizeof err);
        if (!log) rc = cli_fail("--log", "%s", err);
    }
    if (!rc) {
        stop_signal = 0;
        catch_signals(1);
        rc = loop(r, log);
        catch_signals(0);
    }
    if (record_close(log) != 0 && !rc) rc = cli_fail("--log", "a write failed");
    run_free(r);
    free(r);
    return rc;
}

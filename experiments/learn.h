/* learn.h — what the learning experiments share (copy_task.c, recall.c, train_speed.c):
 * one training run in process, from a seed to its evaluations (learn_run.c), with the
 * loop of `linattn train` (AdamW, clipping, the schedule, the held-out evaluation) but no
 * checkpoint, log or progress line of its own; and the variants they compare. */
#ifndef LA_EXPERIMENTS_LEARN_H
#define LA_EXPERIMENTS_LEARN_H

#include "train/optim.h"
#include "train/tasks.h"
#include "train/train.h"

#include <stddef.h>
#include <stdint.h>

/* One attention variant of a comparison: its name in the CSV (a word: no space or
 * comma), the kernel, and the parameters it takes (feature map, FAVOR+'s features,
 * local's window; 0 keeps the library's default). */
typedef struct {
    const char *name;
    la_kernel kernel;
    la_feature_map feature_map;
    size_t features, window;
} learn_variant;

/* The variants the experiments compare, in the order they run: softmax, linear_elu
 * (φ = elu + 1), linear_relu, taylor, favor (FAVOR+, m = features), local (a window of
 * window keys); learn_variant_names lists their names for the help. features and window
 * set the last two. Fills out[0..6). */
enum { LEARN_VARIANTS = 6 };
void learn_variants(size_t features, size_t window, learn_variant out[LEARN_VARIANTS]);
extern const char *const learn_variant_names[LEARN_VARIANTS + 1];

/* --variants LIST (names of learn_variants; NULL: all but those whose bit is set in
 * default_off) into use[i] = 1 for the variants chosen. 0, or 2 after one line. */
int learn_parse_variants(const char *text, unsigned default_off, int use[LEARN_VARIANTS]);

/* The flags copy-task and recall share: --full, --steps S (default quick_steps, or
 * full_steps with --full), --variants LIST (learn_parse_variants with default_off),
 * --seed S, --threads T (applied), --out PATH (default default_out), --resume. */
typedef struct {
    int full, resume;
    size_t steps, seed;
    int use[LEARN_VARIANTS];
    const char *out;
} learn_options;

/* Parses argv into *o for the command `what`. 0, or 2 after one line. */
int learn_parse_options(int argc, char **argv, const char *what, size_t quick_steps,
                        size_t full_steps, unsigned default_off, const char *default_out,
                        learn_options *o);

/* One run: the task, the model (vocab is the task's), the optimiser and the evaluation. */
typedef struct {
    la_train_task_config task;
    la_train_config model;
    size_t batch, steps, eval_every, eval_batches;
    la_train_schedule schedule;
    la_train_adamw_config adamw;
    double clip; /* 0: none */
    uint64_t seed;
} learn_setup;

/* The defaults of `linattn train` for the sizes given (d_ff = 2·D, pre-LN, ReLU, float32,
 * lr 0.003 after 50 warm-up steps, constant, weight decay 0.01, clip 1, 4 evaluation
 * batches), then the variant's kernel and parameters. */
void learn_setup_init(learn_setup *s, la_train_task_kind task, size_t layers, size_t d_model,
                      size_t heads, size_t seq_len, size_t batch, size_t steps,
                      const learn_variant *v);

/* What an evaluation gives: the step, the training loss (mean since the last), the
 * held-out loss and accuracy, the seconds since the run began (evaluations included). */
typedef struct {
    size_t step;
    double train_loss, eval_loss, eval_accuracy, elapsed_s;
} learn_point;

/* Called at every evaluation (every eval_every steps and at the last); returns 0 to go on,
 * nonzero to stop the run with that status. */
typedef int (*learn_eval_fn)(void *ctx, const learn_point *pt);

/* Trains s from its seed; *last the final evaluation (may be NULL). Returns 0, the
 * callback's nonzero value, or 2 after one line `linattn: what: why` (a refused setting,
 * memory, a loss that is not finite). */
int learn_run(const learn_setup *s, const char *what, learn_eval_fn fn, void *ctx,
              learn_point *last);

/* Where a training step of s (float32) goes (learn_speed.c): the median seconds of a
 * whole step (forward and backward, clipping, AdamW) on one batch of s's task, and of
 * each layer kind run alone on the step's shapes, forward and backward, times its
 * count in the model: the attention kernel, the attention's input and output
 * projections, the FFN, the LayerNorms, the embedding with the head and the loss, the
 * optimiser. gemm_gflops: the projections' and FFN's FLOPs (forward 2·R·D·(4D + 2F),
 * backward twice that) over their time. */
typedef struct {
    double step_s, attention_s, projections_s, ffn_s, norms_s, head_s, optimizer_s;
    double gemm_gflops;
} learn_speed;

/* Each timing repeats until min_s seconds and at least 3 repetitions. 0, or 2 after one
 * line. */
int learn_measure_speed(const learn_setup *s, double min_s, const char *what, learn_speed *out);

#endif

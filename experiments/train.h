/* train.h — what the files of `linattn train` share: the run's settings (train.c reads
 * them from the flags and, with --resume, from the checkpoint), and the loop that runs them
 * (train_loop.c). */
#ifndef LA_EXPERIMENTS_TRAIN_H
#define LA_EXPERIMENTS_TRAIN_H

#include "train/checkpoint.h"
#include "train/optim.h"
#include "train/tasks.h"
#include "train/train.h"

#include <stddef.h>
#include <stdint.h>

/* The flags recorded in a checkpoint (every one but --steps, --eval-every, --log,
 * --checkpoint, --resume and --threads), in the order of the flag table. */
enum {
    TRAIN_TASK,
    TRAIN_DATA,
    TRAIN_PAIRS,
    TRAIN_VOCAB,
    TRAIN_COPY_LENGTH,
    TRAIN_ATTENTION,
    TRAIN_WINDOW,
    TRAIN_PROJ_RANK,
    TRAIN_FEATURES,
    TRAIN_SCORE_DIM,
    TRAIN_FEATURE_MAP,
    TRAIN_LAYERS,
    TRAIN_D_MODEL,
    TRAIN_HEADS,
    TRAIN_D_FF,
    TRAIN_SEQ_LEN,
    TRAIN_NORM,
    TRAIN_ACTIVATION,
    TRAIN_POSITIONS,
    TRAIN_HEAD,
    TRAIN_BATCH,
    TRAIN_LR,
    TRAIN_WARMUP,
    TRAIN_SCHEDULE,
    TRAIN_STEP_EVERY,
    TRAIN_GAMMA,
    TRAIN_MIN_LR,
    TRAIN_WEIGHT_DECAY,
    TRAIN_CLIP,
    TRAIN_SEED,
    TRAIN_PRECISION,
    TRAIN_RECORDED /* their count */
};

typedef struct {
    la_train_task_config task;
    char data_path[4096]; /* text: the file, absolute */
    la_train_config model;
    size_t batch, steps, eval_every, eval_batches;
    la_train_schedule schedule;
    la_train_adamw_config adamw;
    double clip; /* 0: no clipping */
    uint64_t seed;
    const char *log, *checkpoint, *resume; /* NULL when absent */
    /* the recorded flags' values as text (the given flag's, else the checkpoint's, else
     * the default's), stored in the checkpoint as setting.<flag> */
    const char *recorded[TRAIN_RECORDED];
} train_settings;

/* The flags' names (without dashes), indexed by the enum above. */
extern const char *const train_recorded_flags[TRAIN_RECORDED];

/* The kernels --attention accepts: a layer's kernel (causal allowed) with a backward in
 * both precisions. */
int train_kernel(la_kernel k);

/* Runs the settings: from scratch, or from the checkpoint *resumed (NULL: none) whose
 * model and optimiser state are loaded. argc, argv: the command line, for the log's
 * header. The process exit status: 0, 2 after one line, 130 after SIGINT or SIGTERM (a
 * checkpoint written first when --checkpoint was given). */
int train_run(const train_settings *s, int argc, char **argv);

#endif

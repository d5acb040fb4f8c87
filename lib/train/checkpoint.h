/* checkpoint.h — a training run saved to a folder and loaded back, so that a resumed run
 * continues bit for bit. Internal (not exported).
 *
 * The folder holds
 *     <key>.npy                    every parameter (train.h's keys: embedding.weight, …)
 *     optim.exp_avg.<key>.npy      AdamW's first moment of each
 *     optim.exp_avg_sq.<key>.npy   and its second
 *     checkpoint.txt               "key value" lines: the format's first line, the model's
 *                                  configuration, AdamW's hyperparameters, the step, the
 *                                  batches' generator, then the caller's settings
 *                                  ("setting.<name> <value>")
 * in the model's dtype, shaped as the tensors are. It is written whole or not at all: a
 * new folder next to it (DIR.tmp.XXXXXX) is written and fsynced, then takes the name DIR in
 * one rename (an existing checkpoint at DIR is exchanged with it atomically and only then
 * removed), so DIR is always the old checkpoint or the whole new one. */
#ifndef LA_TRAIN_CHECKPOINT_H
#define LA_TRAIN_CHECKPOINT_H

#include "linattn.h"
#include "train/optim.h"
#include "train/tasks.h"
#include "train/train.h"

#include <stddef.h>
#include <stdint.h>

enum { LA_TRAIN_SETTINGS_MAX = 64, LA_TRAIN_SETTING_KEY = 32, LA_TRAIN_SETTING_VALUE = 1024 };

/* Where a run stands, besides the tensors. */
typedef struct {
    size_t step;      /* optimiser updates done (the AdamW state's step) */
    la_train_rng rng; /* the training batches' generator after them */
    size_t n_settings;
    char setting_key[LA_TRAIN_SETTINGS_MAX][LA_TRAIN_SETTING_KEY];
    char setting_value[LA_TRAIN_SETTINGS_MAX][LA_TRAIN_SETTING_VALUE];
} la_train_checkpoint_state;

/* Adds a setting (a key of letters, digits, '_' and '-'; a value without a newline).
 * LA_EINVAL for one that does not fit or has another character, or one too many. */
la_status la_train_checkpoint_set(la_train_checkpoint_state *s, const char *key, const char *value);
/* The value of a setting; NULL when absent. */
const char *la_train_checkpoint_get(const la_train_checkpoint_state *s, const char *key);

/* Saves m, o (its moments; its step must be s->step) and s into dir, atomically (above).
 * A dir that exists and is neither a checkpoint (no checkpoint.txt) nor an empty folder is
 * refused (LA_EIO, "exists and is not a checkpoint"): never replaced. LA_EINVAL (NULL, o
 * not made for m's tensors), LA_EIO, LA_ENOMEM; *why (when not NULL) one line; then dir
 * is as it was. */
la_status la_train_checkpoint_save(const char *dir, la_train_model *m, const la_train_adamw *o,
                                   const la_train_checkpoint_state *s, const char **why);

/* LA_OK when la_train_checkpoint_save may write dir: absent, an empty folder or a
 * checkpoint (*exists, when not NULL, says whether it exists); else LA_EIO and *why, as
 * save refuses it. A command checks its target with it before a run. */
la_status la_train_checkpoint_replaceable(const char *dir, int *exists, const char **why);

/* Reads checkpoint.txt alone: the model's configuration (attention tensors NULL: drawn from
 * its seed), AdamW's hyperparameters and the state. LA_EIO (no such folder or file),
 * LA_EFORMAT (not a checkpoint of this format, a line or value malformed), *why one line. */
la_status la_train_checkpoint_read(const char *dir, la_train_config *c, la_train_adamw_config *oc,
                                   la_train_checkpoint_state *s, const char **why);

/* Loads dir into m and o (made for m's tensors) and *s; o NULL: the weights alone (the
 * optimiser's moments neither read nor checked: generation). Refused, with m and o unchanged:
 * a configuration other than m's (LA_EINVAL; *why names the first field that differs, as
 * "d_model: 64 in the checkpoint, 32 here"), a tensor file missing, of another dtype or
 * shape (LA_EFORMAT, *why names the file), and checkpoint.txt's own errors (above). */
la_status la_train_checkpoint_load(const char *dir, la_train_model *m, la_train_adamw *o,
                                   la_train_checkpoint_state *s, const char **why);

#endif

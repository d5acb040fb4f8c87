/* tasks.h — the training tasks of `linattn train`: batches of token ids and targets drawn
 * from a counter-based generator whose whole state is two integers (a checkpoint stores
 * them, and a resumed run draws the very batches the uninterrupted one would have).
 * Internal (not exported): the command links build/liblinattn.a.
 *
 * Every batch is two int32 arrays of shape (batch, seq_len), row-major: tokens, the model's
 * input, and targets, the token each position should predict (-1: not scored).
 *
 *   copy    Katharopoulos et al. (2020) §4.1.1: a sequence of L symbols drawn uniformly from
 *           an alphabet of 10, a separator, then the same L symbols again, padding after;
 *           L uniform in 1..copy_max_len. Only the copied half is scored: at the
 *           separator and the L - 1 positions after it, the target is the symbol to copy.
 *           Vocabulary 12: 0 padding, 1..10 the symbols, 11 the separator.
 *   recall  multi-query associative recall (MQAR), as Zoology (Arora et al. 2023) generates
 *           it (zoology/data/multiquery_ar.py, one pass, random_non_queries): K keys drawn
 *           without replacement from 1..V/2-1 and K values from V/2..V-1, written as
 *           k0 v0 k1 v1 … in the first 2K positions; then key j is queried again at
 *           position 2K + 2·g_j, the gaps g_j drawn without replacement from
 *           0..(N-2K)/2-1 with probability ∝ (g + 1)^(a - 1) (a = power_a, 0.01 in
 *           Zoology: short gaps are the most likely); the target at a query is its
 *           value, and only queries are scored. Every other position after the pairs is
 *           a uniformly random token of 0..V-1. N must be even and 4K ≤ N (Zoology's
 *           asserts; its third, V > N, is not required here).
 *   text    byte-level language modelling on a file (vocabulary 256): training windows of
 *           seq_len + 1 bytes at uniformly random offsets in the file's first part; the
 *           last eval_fraction of the file is held out and evaluated in consecutive
 *           windows. Every position is scored. */
#ifndef LA_TRAIN_TASKS_H
#define LA_TRAIN_TASKS_H

#include "linattn.h"
#include "train/train.h"

#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------- the generator */

/* SplitMix64 as a counter-based generator: draw i of a stream is a bijective mix of
 * mix(seed) + i · 0x9E3779B97F4A7C15. The state is (seed, counter): copying it copies the
 * stream's future. */
typedef struct {
    uint64_t seed, counter;
} la_train_rng;

la_train_rng la_train_rng_make(uint64_t seed);
uint64_t la_train_rng_next(la_train_rng *r);
/* Uniform in [0, 1), 53 bits. */
double la_train_rng_uniform(la_train_rng *r);
/* Uniform in [0, n) without modulo bias (n > 0). */
uint64_t la_train_rng_below(la_train_rng *r, uint64_t n);

/* ---------------------------------------------------------------- tasks */

typedef enum {
    LA_TRAIN_TASK_COPY = 0,
    LA_TRAIN_TASK_RECALL,
    LA_TRAIN_TASK_TEXT
} la_train_task_kind;

/* The names "copy", "recall", "text"; NULL outside the enum. */
const char *la_train_task_name(la_train_task_kind kind);

typedef struct {
    la_train_task_kind kind;
    size_t seq_len;       /* N: tokens per row */
    size_t copy_max_len;  /* copy: the longest sequence copied, 1..N/2 (0: N/2) */
    size_t pairs;         /* recall: K key-value pairs, 1..N/4 and at most V/2 - 1 */
    size_t vocab;         /* recall: V >= 4 (copy has 12, text 256, whatever is given) */
    double power_a;       /* recall: the gaps' power law, in (0, 1] (0: Zoology's 0.01) */
    const char *data;     /* text: the file */
    double eval_fraction; /* text: the held-out tail, in (0, 1) (0: 0.1) */
} la_train_task_config;

typedef struct la_train_task la_train_task;

/* Checks c and makes the task (text: reads the whole file). LA_EINVAL for a setting out of
 * range, LA_EIO for a file that cannot be read, LA_EFORMAT for one too short to give a
 * training window and an evaluation window (an empty file among them), LA_ENOMEM; *why
 * (when not NULL) then holds one line, static storage ("the file is empty"). */
la_status la_train_task_create(const la_train_task_config *c, la_train_task **out,
                               const char **why);
void la_train_task_free(la_train_task *t);

/* The vocabulary the model needs: 12 (copy), V (recall), 256 (text). */
size_t la_train_task_vocab(const la_train_task *t);

/* A training batch from r's stream (r advances): tokens, targets (batch, seq_len).
 * LA_EINVAL for NULL arguments or batch 0. */
la_status la_train_task_batch(const la_train_task *t, la_train_rng *r, size_t batch,
                              int32_t *tokens, int32_t *targets);

/* The evaluation set: the same batches at every call for the same seed. Synthetic tasks:
 * `wanted` batches, each from a stream of its own that no training batch draws from;
 * text: every window of the held-out tail, batch rows at a time (rows past the last
 * window are padding with nothing scored), at most `wanted` batches. */
size_t la_train_task_eval_batches(const la_train_task *t, size_t batch, size_t wanted);
la_status la_train_task_eval_batch(const la_train_task *t, uint64_t seed, size_t index,
                                   size_t batch, int32_t *tokens, int32_t *targets);

/* m on that evaluation set: *loss the mean cross-entropy over its scored tokens, *accuracy
 * the share of them predicted right (both NaN when none is scored); tokens, targets
 * (batch, seq_len) are the caller's scratch. The first status that is not LA_OK. */
la_status la_train_task_evaluate(const la_train_task *t, la_train_model *m, uint64_t seed,
                                 size_t batch, size_t wanted, int32_t *tokens, int32_t *targets,
                                 double *loss, double *accuracy);

#endif

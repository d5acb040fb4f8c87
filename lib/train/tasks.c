/* tasks.c — the training tasks' batches (copy, recall, text) and their generator
 * (contract in tasks.h). */
#include "train/tasks.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the generator */

static const uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;

/* SplitMix64's finaliser (Stafford's Mix13): a bijection of 64-bit words. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

la_train_rng la_train_rng_make(uint64_t seed)
{
    return (la_train_rng){seed, 0};
}

uint64_t la_train_rng_next(la_train_rng *r)
{
    r->counter++;
    return mix64(mix64(r->seed) + r->counter * golden_gamma);
}

double la_train_rng_uniform(la_train_rng *r)
{
    return (double)(la_train_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t la_train_rng_below(la_train_rng *r, uint64_t n)
{
    /* reject the top partial copy of [0, n) in [0, 2^64) */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
        uint64_t x = la_train_rng_next(r);
        if (x < limit) return x % n;
    }
}

/* ---------------------------------------------------------------- the task */

enum {
    COPY_PAD = 0,
    COPY_SYMBOLS = 10, /* symbols 1..10 */
    COPY_SEPARATOR = 11,
    COPY_VOCAB = 12,
    TEXT_VOCAB = 256,
};

/* Streams of the evaluation set: mixed with this so they never meet a training seed's. */
static const uint64_t eval_salt = 0x6576616c5f736574ull; /* "eval_set" */

struct la_train_task {
    la_train_task_config c;
    unsigned char *bytes; /* text: the file */
    size_t n_bytes, n_train;
    double *gap_weight; /* recall: (g + 1)^(a - 1), g = 0 .. space-1 */
    size_t space;
};

const char *la_train_task_name(la_train_task_kind kind)
{
    switch (kind) {
    case LA_TRAIN_TASK_COPY: return "copy";
    case LA_TRAIN_TASK_RECALL: return "recall";
    case LA_TRAIN_TASK_TEXT: return "text";
    }
    return NULL;
}

static la_status fail(const char **why, const char *reason, la_status st)
{
    if (why) *why = reason;
    return st;
}

/* The whole file into t->bytes. */
static la_status read_file(la_train_task *t, const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail(why, errno == ENOENT ? "no such file" : "cannot open it", LA_EIO);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(why, "not a regular file", LA_EIO);
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size : 1, n = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return fail(why, "out of memory for the file", LA_ENOMEM);
    }
    for (;;) {
        if (n == cap) break;
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            free(buf);
            close(fd);
            return fail(why, "read error", LA_EIO);
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    t->bytes = buf;
    t->n_bytes = n;
    return LA_OK;
}

static la_status check_and_prepare(la_train_task *t, const char **why)
{
    la_train_task_config *c = &t->c;
    size_t n = c->seq_len;
    if (n < 2) return fail(why, "the sequence length must be at least 2", LA_EINVAL);
    switch (c->kind) {
    case LA_TRAIN_TASK_COPY:
        if (c->copy_max_len == 0) c->copy_max_len = n / 2;
        if (c->copy_max_len > n / 2)
            return fail(why, "the copied length must be at most half the sequence", LA_EINVAL);
        return LA_OK;
    case LA_TRAIN_TASK_RECALL:
        if (c->power_a == 0) c->power_a = 0.01;
        if (!(c->power_a > 0 && c->power_a <= 1))
            return fail(why, "the gaps' power must be in (0, 1]", LA_EINVAL);
        if (n % 2) return fail(why, "recall needs an even sequence length", LA_EINVAL);
        if (c->pairs == 0 || 4 * c->pairs > n)
            return fail(why, "recall needs 1 <= pairs and 4 * pairs <= sequence length", LA_EINVAL);
        if (c->vocab < 4 || c->vocab > INT32_MAX)
            return fail(why, "recall needs a vocabulary of 4 .. 2^31-1", LA_EINVAL);
        if (c->pairs > c->vocab / 2 - 1)
            return fail(why, "recall needs pairs <= vocab/2 - 1 distinct keys", LA_EINVAL);
        t->space = (n - 2 * c->pairs) / 2;
        if (!(t->gap_weight = malloc(t->space * sizeof *t->gap_weight)))
            return fail(why, "out of memory", LA_ENOMEM);
        for (size_t g = 0; g < t->space; g++)
            t->gap_weight[g] = pow((double)(g + 1), c->power_a - 1);
        return LA_OK;
    case LA_TRAIN_TASK_TEXT: {
        if (c->eval_fraction == 0) c->eval_fraction = 0.1;
        if (!(c->eval_fraction > 0 && c->eval_fraction < 1))
            return fail(why, "the held-out fraction must be in (0, 1)", LA_EINVAL);
        if (!c->data || !*c->data) return fail(why, "text needs a data file", LA_EINVAL);
        la_status st = read_file(t, c->data, why);
        if (st) return st;
        if (t->n_bytes == 0) return fail(why, "the file is empty", LA_EFORMAT);
        size_t tail = (size_t)ceil((double)t->n_bytes * c->eval_fraction);
        t->n_train = t->n_bytes - (tail < t->n_bytes ? tail : t->n_bytes);
        if (t->n_train < n + 1 || t->n_bytes - t->n_train < n + 1)
            return fail(why,
                        "too short: its training part and its held-out tail must each "
                        "hold sequence length + 1 bytes",
                        LA_EFORMAT);
        return LA_OK;
    }
    }
    return fail(why, "unknown task", LA_EINVAL);
}

la_status la_train_task_create(const la_train_task_config *c, la_train_task **out, const char **why)
{
    if (!c || !out) return fail(why, "NULL argument", LA_EINVAL);
    *out = NULL;
    la_train_task *t = calloc(1, sizeof *t);
    if (!t) return fail(why, "out of memory", LA_ENOMEM);
    t->c = *c;
    la_status st = check_and_prepare(t, why);
    if (st) {
        la_train_task_free(t);
        return st;
    }
    t->c.data = NULL; /* the caller's string: not kept */
    *out = t;
    return LA_OK;
}

void la_train_task_free(la_train_task *t)
{
    if (!t) return;
    free(t->bytes);
    free(t->gap_weight);
    free(t);
}

size_t la_train_task_vocab(const la_train_task *t)
{
    switch (t->c.kind) {
    case LA_TRAIN_TASK_COPY: return COPY_VOCAB;
    case LA_TRAIN_TASK_RECALL: return t->c.vocab;
    case LA_TRAIN_TASK_TEXT: return TEXT_VOCAB;
    }
    return 0;
}

/* ---------------------------------------------------------------- one row of each task */

/* copy: s = x_1..x_L SEP x_1..x_L PAD…, tokens = s[0, N), targets[i] = s[i + 1] for
 * L <= i < 2L (the separator and the copied symbols but the last predict the next). */
static void copy_row(const la_train_task *t, la_train_rng *r, int32_t *tok, int32_t *tgt)
{
    const size_t n = t->c.seq_len;
    const size_t len = 1 + (size_t)la_train_rng_below(r, t->c.copy_max_len);
    for (size_t i = 0; i < n; i++) {
        tok[i] = COPY_PAD;
        tgt[i] = -1;
    }
    for (size_t i = 0; i < len; i++) {
        int32_t x = 1 + (int32_t)la_train_rng_below(r, COPY_SYMBOLS);
        tok[i] = x;
        if (len + 1 + i < n) tok[len + 1 + i] = x;
        tgt[len + i] = x; /* the position before the copy of x_i predicts it */
    }
    tok[len] = COPY_SEPARATOR;
}

/* out[0..k) distinct, uniform in [lo, hi), in the order drawn (k <= hi - lo). */
static void draw_distinct(la_train_rng *r, int32_t lo, int32_t hi, size_t k, int32_t *out)
{
    for (size_t j = 0; j < k;) {
        int32_t x = lo + (int32_t)la_train_rng_below(r, (uint64_t)(hi - lo));
        size_t i = 0;
        while (i < j && out[i] != x)
            i++;
        if (i == j) out[j++] = x;
    }
}

/* recall: Zoology's MQAR row (tasks.h). */
static void recall_row(const la_train_task *t, la_train_rng *r, int32_t *tok, int32_t *tgt,
                       int32_t *scratch /* 3K */)
{
    const size_t n = t->c.seq_len, k = t->c.pairs;
    const int32_t v = (int32_t)t->c.vocab, half = v / 2;
    int32_t *keys = scratch, *values = scratch + k, *gaps = scratch + 2 * k;
    draw_distinct(r, 1, half, k, keys);
    draw_distinct(r, half, v, k, values);
    /* gaps: successive sampling without replacement, weights gap_weight (numpy's
     * choice(replace=False, p) draws the same law) */
    double total = 0;
    for (size_t g = 0; g < t->space; g++)
        total += t->gap_weight[g];
    for (size_t j = 0; j < k; j++) {
        double left = total, u;
        for (size_t i = 0; i < j; i++)
            left -= t->gap_weight[gaps[i]];
        size_t g;
        do {
            u = la_train_rng_uniform(r) * left;
            g = t->space;
            for (size_t c = 0; c < t->space; c++) {
                size_t i = 0;
                while (i < j && gaps[i] != (int32_t)c)
                    i++;
                if (i < j) continue; /* drawn already */
                if (u < t->gap_weight[c]) {
                    g = c;
                    break;
                }
                u -= t->gap_weight[c];
            }
        } while (g == t->space); /* rounding ran past the end: draw again */
        gaps[j] = (int32_t)g;
    }
    for (size_t i = 0; i < n; i++)
        tgt[i] = -1;
    for (size_t j = 0; j < k; j++) {
        tok[2 * j] = keys[j];
        tok[2 * j + 1] = values[j];
    }
    for (size_t i = 2 * k; i < n; i++)
        tok[i] = -1;
    for (size_t j = 0; j < k; j++) {
        size_t at = 2 * k + 2 * (size_t)gaps[j];
        tok[at] = keys[j];
        tgt[at] = values[j];
    }
    for (size_t i = 2 * k; i < n; i++)
        if (tok[i] < 0) tok[i] = (int32_t)la_train_rng_below(r, (uint64_t)v);
}

/* text: the window of seq_len + 1 bytes at start. */
static void text_row(const la_train_task *t, size_t start, int32_t *tok, int32_t *tgt)
{
    for (size_t i = 0; i < t->c.seq_len; i++) {
        tok[i] = t->bytes[start + i];
        tgt[i] = t->bytes[start + i + 1];
    }
}

la_status la_train_task_batch(const la_train_task *t, la_train_rng *r, size_t batch,
                              int32_t *tokens, int32_t *targets)
{
    if (!t || !r || !tokens || !targets || batch == 0) return LA_EINVAL;
    const size_t n = t->c.seq_len;
    int32_t *scratch = NULL;
    if (t->c.kind == LA_TRAIN_TASK_RECALL && !(scratch = malloc(3 * t->c.pairs * sizeof *scratch)))
        return LA_ENOMEM;
    for (size_t b = 0; b < batch; b++) {
        int32_t *tok = tokens + b * n, *tgt = targets + b * n;
        switch (t->c.kind) {
        case LA_TRAIN_TASK_COPY: copy_row(t, r, tok, tgt); break;
        case LA_TRAIN_TASK_RECALL: recall_row(t, r, tok, tgt, scratch); break;
        case LA_TRAIN_TASK_TEXT:
            text_row(t, (size_t)la_train_rng_below(r, t->n_train - n), tok, tgt);
            break;
        }
    }
    free(scratch);
    return LA_OK;
}

/* ---------------------------------------------------------------- the evaluation set */

/* text: consecutive windows of the tail, each starting seq_len after the last. */
static size_t text_eval_windows(const la_train_task *t)
{
    return (t->n_bytes - t->n_train - 1) / t->c.seq_len;
}

size_t la_train_task_eval_batches(const la_train_task *t, size_t batch, size_t wanted)
{
    if (!t || batch == 0) return 0;
    if (t->c.kind != LA_TRAIN_TASK_TEXT) return wanted;
    size_t all = (text_eval_windows(t) + batch - 1) / batch;
    return all < wanted ? all : wanted;
}

la_status la_train_task_eval_batch(const la_train_task *t, uint64_t seed, size_t index,
                                   size_t batch, int32_t *tokens, int32_t *targets)
{
    if (!t || !tokens || !targets || batch == 0) return LA_EINVAL;
    if (t->c.kind != LA_TRAIN_TASK_TEXT) {
        la_train_rng r = la_train_rng_make(mix64(seed ^ eval_salt) + index * golden_gamma);
        return la_train_task_batch(t, &r, batch, tokens, targets);
    }
    const size_t n = t->c.seq_len, windows = text_eval_windows(t);
    for (size_t b = 0; b < batch; b++) {
        size_t w = index * batch + b;
        int32_t *tok = tokens + b * n, *tgt = targets + b * n;
        if (w < windows) {
            text_row(t, t->n_train + w * n, tok, tgt);
        } else {
            for (size_t i = 0; i < n; i++) {
                tok[i] = 0;
                tgt[i] = -1;
            }
        }
    }
    return LA_OK;
}

la_status la_train_task_evaluate(const la_train_task *t, la_train_model *m, uint64_t seed,
                                 size_t batch, size_t wanted, int32_t *tokens, int32_t *targets,
                                 double *loss, double *accuracy)
{
    const size_t n = la_train_task_eval_batches(t, batch, wanted);
    double sum = 0;
    size_t right = 0, all = 0;
    for (size_t i = 0; i < n; i++) {
        double l;
        size_t correct, scored;
        la_status st = la_train_task_eval_batch(t, seed, i, batch, tokens, targets);
        if (st == LA_OK) st = la_train_evaluate(m, batch, tokens, targets, &l, &correct, &scored);
        if (st != LA_OK) return st;
        sum += l * (double)scored;
        right += correct;
        all += scored;
    }
    *loss = all ? sum / (double)all : NAN;
    *accuracy = all ? (double)right / (double)all : NAN;
    return LA_OK;
}

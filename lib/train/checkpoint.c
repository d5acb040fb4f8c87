/* checkpoint.c — a training run's folder: tensors and AdamW's moments as .npy, the rest in
 * checkpoint.txt, written to a new folder and renamed into place (contract in
 * checkpoint.h). */
#define _GNU_SOURCE /* renameat2's RENAME_EXCHANGE */
#include "train/checkpoint.h"
#include "io/outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char format_line[] = "linattn-train-checkpoint 1";
static const char text_name[] = "checkpoint.txt";

/* A message built for *why: per-thread storage, valid until the thread's next call. */
static _Thread_local char why_buf[512];

static la_status fail(const char **why, la_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static la_status fail(const char **why, la_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why_buf, sizeof why_buf, fmt, ap);
    va_end(ap);
    if (why) *why = why_buf;
    return st;
}

/* ---------------------------------------------------------------- settings */

la_status la_train_checkpoint_set(la_train_checkpoint_state *s, const char *key, const char *value)
{
    if (!s || !key || !value || !*key || s->n_settings == LA_TRAIN_SETTINGS_MAX ||
        strlen(key) >= LA_TRAIN_SETTING_KEY || strlen(value) >= LA_TRAIN_SETTING_VALUE)
        return LA_EINVAL;
    for (const char *c = key; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return LA_EINVAL;
    if (strchr(value, '\n') || strchr(value, '\r')) return LA_EINVAL;
    strcpy(s->setting_key[s->n_settings], key);
    strcpy(s->setting_value[s->n_settings], value);
    s->n_settings++;
    return LA_OK;
}

const char *la_train_checkpoint_get(const la_train_checkpoint_state *s, const char *key)
{
    for (size_t i = 0; s && key && i < s->n_settings; i++)
        if (strcmp(s->setting_key[i], key) == 0) return s->setting_value[i];
    return NULL;
}

/* ---------------------------------------------------------------- the configuration as text */

/* One field of la_train_config and la_train_adamw_config: its name in checkpoint.txt, how
 * it is written and read. */
/* F_SEEDS: the seed of every la_blocks block, one value (la_blocks_init's). */
typedef enum { F_SIZE, F_INT, F_DOUBLE, F_DTYPE, F_KERNEL, F_FEATURE, F_SEEDS } field_kind;
typedef struct {
    const char *name;
    field_kind kind;
    size_t offset;
} field;

#define CFG(name, kind, member)                                                                    \
    {                                                                                              \
        name, kind, offsetof(la_train_config, member)                                              \
    }
static const field config_fields[] = {
    CFG("dtype", F_DTYPE, dtype),
    CFG("vocab", F_SIZE, vocab),
    CFG("d_model", F_SIZE, d_model),
    CFG("heads", F_SIZE, heads),
    CFG("d_ff", F_SIZE, d_ff),
    CFG("layers", F_SIZE, layers),
    CFG("seq_len", F_SIZE, seq_len),
    CFG("attention", F_KERNEL, attention),
    CFG("feature_map", F_FEATURE, attention_params.feature_map),
    CFG("attention_eps", F_DOUBLE, attention_params.eps),
    CFG("chunk", F_SIZE, attention_params.chunk),
    CFG("window", F_SIZE, attention_blocks.local.window),
    CFG("proj_rank", F_SIZE, attention_blocks.linformer.proj_rank),
    CFG("features", F_SIZE, attention_blocks.favor.features),
    CFG("attention_seed", F_SEEDS, attention_blocks),
    CFG("score_dim", F_SIZE, attention_blocks.score.score_dim),
    CFG("max_distance", F_SIZE, attention_blocks.relative.max_distance),
    CFG("pre_ln", F_INT, pre_ln),
    CFG("gelu", F_INT, gelu),
    CFG("learned_positions", F_INT, learned_positions),
    CFG("tie_head", F_INT, tie_head),
    CFG("ln_eps", F_DOUBLE, ln_eps),
};
#undef CFG
#define OPT(name, member)                                                                          \
    {                                                                                              \
        name, F_DOUBLE, offsetof(la_train_adamw_config, member)                                    \
    }
static const field adamw_fields[] = {
    OPT("adamw_beta1", beta1),
    OPT("adamw_beta2", beta2),
    OPT("adamw_eps", eps),
    OPT("adamw_weight_decay", weight_decay),
};
#undef OPT
enum {
    N_CONFIG = sizeof config_fields / sizeof config_fields[0],
    N_ADAMW = sizeof adamw_fields / sizeof adamw_fields[0],
};

/* The field's value at base as text (doubles to 17 digits: read back exactly). */
static void field_format(const field *f, const void *base, char *buf, size_t size)
{
    const char *at = (const char *)base + f->offset;
    switch (f->kind) {
    case F_SIZE: snprintf(buf, size, "%zu", *(const size_t *)at); return;
    case F_INT: snprintf(buf, size, "%d", *(const int *)at); return;
    case F_DOUBLE: snprintf(buf, size, "%.17g", *(const double *)at); return;
    case F_SEEDS:
        snprintf(buf, size, "%" PRIu64, ((const la_blocks *)(const void *)at)->favor.seed);
        return;
    case F_DTYPE:
        snprintf(buf, size, "%s", *(const la_dtype *)at == LA_FLOAT64 ? "float64" : "float32");
        return;
    case F_KERNEL: snprintf(buf, size, "%s", la_kernel_name(*(const la_kernel *)at)); return;
    case F_FEATURE:
        snprintf(buf, size, "%s", la_feature_map_name(*(const la_feature_map *)at));
        return;
    }
}

static int parse_u64(const char *text, uint64_t *out)
{
    if (*text < '0' || *text > '9') return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end) return 0;
    *out = v;
    return 1;
}

/* text into the field at base; 0 when malformed. */
static int field_parse(const field *f, void *base, const char *text)
{
    char *at = (char *)base + f->offset, *end;
    uint64_t u;
    switch (f->kind) {
    case F_SIZE:
        if (!parse_u64(text, &u) || u > SIZE_MAX) return 0;
        *(size_t *)at = (size_t)u;
        return 1;
    case F_SEEDS: {
        la_blocks *b = (la_blocks *)(void *)at;
        if (!parse_u64(text, &u)) return 0;
        b->linformer.seed = b->favor.seed = b->score.seed = b->relative.seed = u;
        return 1;
    }
    case F_INT:
        if (strcmp(text, "0") && strcmp(text, "1")) return 0;
        *(int *)at = text[0] - '0';
        return 1;
    case F_DOUBLE:
        errno = 0;
        *(double *)at = strtod(text, &end);
        return !errno && end != text && !*end;
    case F_DTYPE:
        if (strcmp(text, "float32") == 0)
            *(la_dtype *)at = LA_FLOAT32;
        else if (strcmp(text, "float64") == 0)
            *(la_dtype *)at = LA_FLOAT64;
        else
            return 0;
        return 1;
    case F_KERNEL: return la_kernel_parse(text, (la_kernel *)at) == LA_OK;
    case F_FEATURE: return la_feature_map_parse(text, (la_feature_map *)at) == LA_OK;
    }
    return 0;
}

/* ---------------------------------------------------------------- writing */

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 0;
        p += w;
        n -= (size_t)w;
    }
    return 1;
}

/* checkpoint.txt's text into a malloc'ed buffer (NULL when out of memory). */
static char *format_text(const la_train_config *c, const la_train_adamw_config *oc,
                         const la_train_checkpoint_state *s)
{
    size_t cap = 4096 + s->n_settings * (LA_TRAIN_SETTING_KEY + LA_TRAIN_SETTING_VALUE + 16);
    char *text = malloc(cap), value[64];
    if (!text) return NULL;
    size_t at = (size_t)snprintf(text, cap, "%s\n", format_line);
    for (size_t i = 0; i < N_CONFIG; i++) {
        field_format(&config_fields[i], c, value, sizeof value);
        at += (size_t)snprintf(text + at, cap - at, "%s %s\n", config_fields[i].name, value);
    }
    for (size_t i = 0; i < N_ADAMW; i++) {
        field_format(&adamw_fields[i], oc, value, sizeof value);
        at += (size_t)snprintf(text + at, cap - at, "%s %s\n", adamw_fields[i].name, value);
    }
    at += (size_t)snprintf(text + at, cap - at,
                           "step %zu\nrng_seed %" PRIu64 "\nrng_counter %" PRIu64 "\n", s->step,
                           s->rng.seed, s->rng.counter);
    for (size_t i = 0; i < s->n_settings; i++)
        at += (size_t)snprintf(text + at, cap - at, "setting.%s %s\n", s->setting_key[i],
                               s->setting_value[i]);
    return text;
}

/* out = dir + "/" + name; 0 when it does not fit. */
static int join(char *out, size_t size, const char *dir, const char *name)
{
    int n = snprintf(out, size, "%s/%s", dir, name);
    return n > 0 && (size_t)n < size;
}

/* path = dir + "/" + prefix + key + ".npy"; 0 when it does not fit. */
static int tensor_path(char *path, size_t size, const char *dir, const char *prefix,
                       const char *key)
{
    int n = snprintf(path, size, "%s/%s%s.npy", dir, prefix, key);
    return n > 0 && (size_t)n < size;
}

static la_array tensor_array(const la_train_tensor *t, la_dtype dtype, void *data)
{
    la_array a = {.dtype = dtype == LA_FLOAT64 ? LA_NPY_F64 : LA_NPY_F32,
                  .ndim = (int)t->ndim,
                  .count = t->numel,
                  .data = data};
    for (size_t d = 0; d < t->ndim; d++)
        a.shape[d] = t->shape[d];
    return a;
}

static const char *const prefixes[3] = {"", "optim.exp_avg.", "optim.exp_avg_sq."};

/* Every file of the checkpoint into the folder tmp, each fsynced, then the folder. */
static la_status write_folder(const char *tmp, la_train_model *m, const la_train_adamw *o,
                              const la_train_checkpoint_state *s, const char **why)
{
    const la_train_config *c = la_train_model_config(m);
    la_train_tensor *list;
    size_t count;
    la_train_model_tensors(m, &list, &count);
    char path[PATH_MAX];
    for (size_t i = 0; i < count; i++)
        for (int p = 0; p < 3; p++) {
            void *data = p == 0 ? list[i].data : p == 1 ? o->exp_avg[i] : o->exp_avg_sq[i];
            la_array a = tensor_array(&list[i], c->dtype, data);
            if (!tensor_path(path, sizeof path, tmp, prefixes[p], list[i].key))
                return fail(why, LA_EINVAL, "%s: the path is too long", tmp);
            const char *reason = NULL;
            la_status st = la_npy_write_why(path, &a, &reason);
            if (st)
                return fail(why, st, "%s: cannot write: %s", path,
                            reason ? reason : la_strerror(st));
        }
    char *text = format_text(c, &o->c, s);
    if (!text) return fail(why, LA_ENOMEM, "out of memory");
    if (!join(path, sizeof path, tmp, text_name)) {
        free(text);
        return fail(why, LA_EINVAL, "%s: the path is too long", tmp);
    }
    la_outfile f;
    const char *reason = "write error";
    la_status st = la_outfile_open(&f, path, &reason);
    if (st == LA_OK && !write_all(f.fd, text, strlen(text))) st = LA_EIO;
    if (st == LA_OK) st = la_outfile_commit(&f, &reason);
    la_outfile_close(&f);
    free(text);
    if (st) return fail(why, st, "%s: cannot write: %s", path, reason);
    int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        if (fd >= 0) close(fd);
        return fail(why, LA_EIO, "%s: cannot sync the folder: %s", tmp, strerror(errno));
    }
    close(fd);
    return LA_OK;
}

/* Removes a checkpoint folder: its .npy files and checkpoint.txt, then the folder (left
 * in place when it holds anything else). */
static void remove_folder(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    char path[PATH_MAX];
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (strcmp(e->d_name, text_name) != 0 && (n < 4 || strcmp(e->d_name + n - 4, ".npy")))
            continue;
        if (join(path, sizeof path, dir, e->d_name)) unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

la_status la_train_checkpoint_replaceable(const char *dir, int *exists, const char **why)
{
    struct stat st;
    int dummy;
    if (!exists) exists = &dummy;
    *exists = 0;
    if (!dir || !*dir) return fail(why, LA_EINVAL, "no folder named");
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) return LA_OK;
        return fail(why, LA_EIO, "%s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return fail(why, LA_EIO, "%s: exists and is not a folder; refusing to replace it", dir);
    *exists = 1;
    char path[PATH_MAX];
    if (join(path, sizeof path, dir, text_name) && access(path, F_OK) == 0) return LA_OK;
    DIR *d = opendir(dir);
    if (!d) return fail(why, LA_EIO, "%s: %s", dir, strerror(errno));
    int empty = 1;
    for (struct dirent *e; empty && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = 0;
    closedir(d);
    if (!empty)
        return fail(why, LA_EIO,
                    "%s: exists and is not a checkpoint (no %s); refusing to replace it", dir,
                    text_name);
    return LA_OK;
}

/* fsync of the folder that holds path. */
static void sync_parent(const char *path)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash)
        strcpy(parent, ".");
    else if (slash == parent)
        parent[1] = 0;
    else
        *slash = 0;
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

la_status la_train_checkpoint_save(const char *dir, la_train_model *m, const la_train_adamw *o,
                                   const la_train_checkpoint_state *s, const char **why)
{
    if (!dir || !*dir || !m || !o || !s) return fail(why, LA_EINVAL, "NULL argument");
    la_train_tensor *list;
    size_t count;
    if (la_train_model_tensors(m, &list, &count) != LA_OK || o->count != count ||
        o->dtype != la_train_model_config(m)->dtype || o->step != s->step)
        return fail(why, LA_EINVAL, "the optimiser's state is not the model's");
    for (size_t i = 0; i < count; i++)
        if (o->numel[i] != list[i].numel)
            return fail(why, LA_EINVAL, "the optimiser's state is not the model's");
    /* the name without trailing slashes */
    char target[PATH_MAX - 32], tmp[PATH_MAX];
    if (snprintf(target, sizeof target, "%s", dir) >= (int)sizeof target)
        return fail(why, LA_EINVAL, "%s: the path is too long", dir);
    for (size_t n = strlen(target); n > 1 && target[n - 1] == '/'; n--)
        target[n - 1] = 0;
    int exists;
    la_status st = la_train_checkpoint_replaceable(target, &exists, why);
    if (st) return st;
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", target);
    if (!mkdtemp(tmp))
        return fail(why, LA_EIO, "%s: cannot make a folder beside it: %s", target, strerror(errno));
    if ((st = write_folder(tmp, m, o, s, why))) {
        remove_folder(tmp);
        return st;
    }
    if (!exists) {
        if (rename(tmp, target) != 0) {
            st = fail(why, LA_EIO, "%s: cannot rename the new checkpoint into place: %s", target,
                      strerror(errno));
            remove_folder(tmp);
            return st;
        }
    } else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) != 0) {
        /* no atomic exchange on this file system: the old one aside under a name of its
         * own, the new one into place, then the old one removed */
        char old[PATH_MAX];
        snprintf(old, sizeof old, "%s.old.XXXXXX", target);
        if (!mkdtemp(old) || rename(target, old) != 0) {
            st = fail(why, LA_EIO, "%s: cannot replace it: %s", target, strerror(errno));
            remove_folder(tmp);
            return st;
        }
        if (rename(tmp, target) != 0) {
            st = fail(why, LA_EIO, "%s: cannot replace it: %s", target, strerror(errno));
            rename(old, target);
            remove_folder(tmp);
            return st;
        }
        strcpy(tmp, old);
    }
    sync_parent(target);
    if (exists) remove_folder(tmp); /* the old checkpoint, now under the temporary name */
    return LA_OK;
}

/* ---------------------------------------------------------------- reading */

/* checkpoint.txt of dir into a malloc'ed, NUL-terminated buffer. */
static la_status read_text(const char *dir, char **out, const char **why)
{
    char path[PATH_MAX];
    if (!join(path, sizeof path, dir, text_name))
        return fail(why, LA_EINVAL, "%s: the path is too long", dir);
    FILE *f = fopen(path, "rb");
    if (!f) {
        struct stat st;
        if (stat(dir, &st) != 0) return fail(why, LA_EIO, "%s: no such folder", dir);
        return fail(why, LA_EIO, "%s: not a checkpoint (%s: %s)", dir, text_name, strerror(errno));
    }
    const size_t cap = 1 << 16;
    if (!(*out = malloc(cap + 1))) {
        fclose(f);
        return fail(why, LA_ENOMEM, "out of memory");
    }
    size_t n = fread(*out, 1, cap + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > cap) {
        free(*out);
        *out = NULL;
        return fail(why, bad ? LA_EIO : LA_EFORMAT, "%s: %s", path,
                    bad ? "read error" : "longer than a checkpoint's text");
    }
    (*out)[n] = 0;
    return LA_OK;
}

la_status la_train_checkpoint_read(const char *dir, la_train_config *c, la_train_adamw_config *oc,
                                   la_train_checkpoint_state *s, const char **why)
{
    if (!dir || !c || !oc || !s) return fail(why, LA_EINVAL, "NULL argument");
    char *text = NULL;
    la_status st = read_text(dir, &text, why);
    if (st) return st;
    la_train_config_init(c, 1, 1, 1, 1, 1, 1);
    memset(oc, 0, sizeof *oc);
    memset(s, 0, sizeof *s);
    int seen_config[N_CONFIG] = {0}, seen_adamw[N_ADAMW] = {0}, seen_state = 0;
    size_t line_no = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        line_no++;
        if (line_no == 1) {
            if (strcmp(line, format_line)) {
                st = fail(why, LA_EFORMAT, "%s: not a checkpoint of this format (first line)", dir);
                goto done;
            }
            continue;
        }
        char *value = strchr(line, ' ');
        if (!value) goto malformed;
        *value++ = 0;
        int ok = 0;
        for (size_t i = 0; i < N_CONFIG && !ok; i++)
            if (strcmp(line, config_fields[i].name) == 0) {
                if (!field_parse(&config_fields[i], c, value)) goto malformed;
                ok = seen_config[i] = 1;
            }
        for (size_t i = 0; i < N_ADAMW && !ok; i++)
            if (strcmp(line, adamw_fields[i].name) == 0) {
                if (!field_parse(&adamw_fields[i], oc, value)) goto malformed;
                ok = seen_adamw[i] = 1;
            }
        uint64_t u;
        if (!ok && strcmp(line, "step") == 0) {
            if (!parse_u64(value, &u) || u > SIZE_MAX) goto malformed;
            s->step = (size_t)u;
            ok = 1, seen_state |= 1;
        }
        if (!ok && strcmp(line, "rng_seed") == 0) {
            if (!parse_u64(value, &s->rng.seed)) goto malformed;
            ok = 1, seen_state |= 2;
        }
        if (!ok && strcmp(line, "rng_counter") == 0) {
            if (!parse_u64(value, &s->rng.counter)) goto malformed;
            ok = 1, seen_state |= 4;
        }
        if (!ok && strncmp(line, "setting.", 8) == 0) {
            if (la_train_checkpoint_set(s, line + 8, value) != LA_OK) goto malformed;
            ok = 1;
        }
        if (!ok) goto malformed;
        continue;
    malformed:
        st = fail(why, LA_EFORMAT, "%s/%s: line %zu is malformed", dir, text_name, line_no);
        goto done;
    }
    if (line_no == 0) {
        st = fail(why, LA_EFORMAT, "%s/%s: empty", dir, text_name);
        goto done;
    }
    for (size_t i = 0; i < N_CONFIG; i++)
        if (!seen_config[i]) {
            st = fail(why, LA_EFORMAT, "%s/%s: no %s line", dir, text_name, config_fields[i].name);
            goto done;
        }
    for (size_t i = 0; i < N_ADAMW; i++)
        if (!seen_adamw[i]) {
            st = fail(why, LA_EFORMAT, "%s/%s: no %s line", dir, text_name, adamw_fields[i].name);
            goto done;
        }
    if (seen_state != 7) st = fail(why, LA_EFORMAT, "%s/%s: no step or generator", dir, text_name);
done:
    free(text);
    return st;
}

la_status la_train_checkpoint_load(const char *dir, la_train_model *m, la_train_adamw *o,
                                   la_train_checkpoint_state *s, const char **why)
{
    if (!dir || !m || !s) return fail(why, LA_EINVAL, "NULL argument");
    la_train_config c;
    la_train_adamw_config oc;
    la_train_checkpoint_state *read = malloc(sizeof *read);
    if (!read) return fail(why, LA_ENOMEM, "out of memory");
    la_status st = la_train_checkpoint_read(dir, &c, &oc, read, why);
    if (st) {
        free(read);
        return st;
    }
    /* the configuration, field by field, as text */
    const la_train_config *mine = la_train_model_config(m);
    for (size_t i = 0; i < N_CONFIG; i++) {
        char theirs[64], ours[64];
        field_format(&config_fields[i], &c, theirs, sizeof theirs);
        field_format(&config_fields[i], mine, ours, sizeof ours);
        if (strcmp(theirs, ours)) {
            free(read);
            return fail(why, LA_EINVAL, "%s: %s in the checkpoint, %s here", config_fields[i].name,
                        theirs, ours);
        }
    }
    la_train_tensor *list;
    size_t count;
    la_train_model_tensors(m, &list, &count);
    if (o && (o->count != count || o->dtype != mine->dtype)) {
        free(read);
        return fail(why, LA_EINVAL, "the optimiser's state is not the model's");
    }
    /* every file read and checked before anything is copied */
    la_array *arrays = calloc(3 * count + 1, sizeof *arrays);
    if (!arrays) {
        free(read);
        return fail(why, LA_ENOMEM, "out of memory");
    }
    const la_npy_dtype want = mine->dtype == LA_FLOAT64 ? LA_NPY_F64 : LA_NPY_F32;
    char path[PATH_MAX];
    const int parts = o ? 3 : 1; /* the weights, then AdamW's two moments */
    for (size_t i = 0; i < count && !st; i++)
        for (int p = 0; p < parts && !st; p++) {
            la_array *a = &arrays[3 * i + (size_t)p];
            if (!tensor_path(path, sizeof path, dir, prefixes[p], list[i].key)) {
                st = fail(why, LA_EINVAL, "%s: the path is too long", dir);
                break;
            }
            const char *reason = NULL;
            if ((st = la_npy_read(path, a, &reason))) {
                st = fail(why, st == LA_EIO ? LA_EFORMAT : st, "%s: %s", path,
                          reason ? reason : la_strerror(st));
                break;
            }
            int same = a->dtype == want && (size_t)a->ndim == list[i].ndim;
            for (size_t d = 0; same && d < list[i].ndim; d++)
                same = a->shape[d] == list[i].shape[d];
            if (!same)
                st = fail(why, LA_EFORMAT, "%s: not the %s tensor of %zu × %zu this model has",
                          path, mine->dtype == LA_FLOAT64 ? "float64" : "float32", list[i].shape[0],
                          list[i].ndim == 2 ? list[i].shape[1] : (size_t)1);
        }
    if (!st) {
        const size_t es = mine->dtype == LA_FLOAT64 ? sizeof(double) : sizeof(float);
        for (size_t i = 0; i < count; i++) {
            memcpy(list[i].data, arrays[3 * i].data, list[i].numel * es);
            if (!o) continue;
            memcpy(o->exp_avg[i], arrays[3 * i + 1].data, list[i].numel * es);
            memcpy(o->exp_avg_sq[i], arrays[3 * i + 2].data, list[i].numel * es);
        }
        if (o) o->step = read->step;
        *s = *read;
    }
    for (size_t i = 0; i < 3 * count; i++)
        la_array_free(&arrays[i]);
    free(arrays);
    free(read);
    return st;
}

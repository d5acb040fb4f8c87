/* record.c — the experiments' results files: the CSV writer with its metadata header,
 * --resume, folder locks, and the reader of finished files (record.h). */

#include "record.h"

#include "guard.h"
#include "linattn.h"
#include "machine.h"
#include "memory.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *git_commit(void);
const char *record_git_commit(void)
{
    return git_commit();
}

/* The commit linattn was built from: "abc1234", "abc1234 (dirty)" (tracked files differed
 * from it) or "unknown", recorded by the Makefile at build time (LA_GIT_COMMIT). git never
 * runs here: in the folder the command runs in it would name another repository and run
 * whatever that repository's configuration says. */
#ifndef LA_GIT_COMMIT
#define LA_GIT_COMMIT "unknown"
#endif
static const char *git_commit(void)
{
    return LA_GIT_COMMIT[0] ? LA_GIT_COMMIT : "unknown";
}

/* results files open in this process: the machine check lasts while one is (machine.h) */
static int open_files;

/* ---------------------------------------------------------------- CSV */

typedef struct {
    char *key; /* first n_key fields */
    char *row; /* the whole row */
} stored_row;

struct record_file {
    FILE *out;
    char *path;
    char **columns; /* names, n_columns of them */
    int n_columns, n_key;
    stored_row *rows;
    size_t n_rows, cap_rows;
    int resumed_rows;
    int failed;
    int borrowed;      /* out is the caller's stream (record_open_stream): flushed, not closed */
    la_outfile *fresh; /* a new file: unnamed until its first measured row (row_measured),
                        * then it replaces path */
    int write_failed;  /* a write or flush failed: a new file is never published */
    int lock;          /* index in held_locks, or -1 */
    int counted;       /* in open_files */
};

/* ---------------------------------------------------------------- folder locks */

/* Two runs writing into one folder at once would race for the same files (and disturb
 * each other's timings): each results file holds an flock on its folder for as long as
 * it is open, and a second process is refused. Files of one process share the lock. */
static struct {
    dev_t dev;
    ino_t ino;
    int fd, users;
} held_locks[8];

static int lock_folder(const char *path, char *err, size_t err_size)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -2;
    }
    int free_slot = -1;
    for (int i = 0; i < (int)(sizeof held_locks / sizeof held_locks[0]); i++) {
        if (held_locks[i].users && held_locks[i].dev == st.st_dev &&
            held_locks[i].ino == st.st_ino) {
            close(fd);
            held_locks[i].users++;
            return i;
        }
        if (!held_locks[i].users && free_slot < 0) free_slot = i;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, err_size,
                 "%s: another linattn run is writing into %s (folder locked); wait for it or "
                 "choose another folder",
                 path, dir);
        close(fd);
        return -2;
    }
    if (free_slot < 0) { /* more folders than slots: locked until the process ends */
        return -1;
    }
    held_locks[free_slot].dev = st.st_dev;
    held_locks[free_slot].ino = st.st_ino;
    held_locks[free_slot].fd = fd;
    held_locks[free_slot].users = 1;
    return free_slot;
}

static void unlock_folder(int i)
{
    if (i < 0 || !held_locks[i].users) return;
    if (--held_locks[i].users == 0) close(held_locks[i].fd);
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* The first n_key comma-separated fields of row, or NULL on allocation failure. */
static char *key_of(const char *row, int n_key)
{
    const char *end = row;
    for (int i = 0; i < n_key && *end; i++) {
        end += strcspn(end, ",");
        if (i < n_key - 1 && *end == ',') end++;
    }
    size_t len = (size_t)(end - row);
    char *key = malloc(len + 1);
    if (!key) return NULL;
    memcpy(key, row, len);
    key[len] = 0;
    return key;
}

static int store_row(record_file *f, const char *row)
{
    if (f->n_rows == f->cap_rows) {
        size_t cap = f->cap_rows ? 2 * f->cap_rows : 64;
        stored_row *r = realloc(f->rows, cap * sizeof *r);
        if (!r) return -1;
        f->rows = r;
        f->cap_rows = cap;
    }
    stored_row *s = &f->rows[f->n_rows];
    s->row = dup_string(row);
    s->key = key_of(row, f->n_key);
    if (!s->row || !s->key) {
        free(s->row);
        free(s->key);
        return -1;
    }
    f->n_rows++;
    return 0;
}

/* A finished row has exactly one field per column (a row cut short by a full disk or a
 * kill has fewer, or is glued to the next). */
static int row_complete(const record_file *f, const char *row)
{
    int fields = 1;
    for (const char *c = row; *c; c++)
        fields += *c == ',';
    return fields == f->n_columns;
}

/* Whether a row read back by --resume is kept: an `ok` point whose median is not a
 * finite number (a hand-edited or damaged file) is measured again. */
static int row_trusted(const record_file *f, const char *row)
{
    char status[16], median[64], *end;
    if (record_get_str(f, row, "status", status, sizeof status) != 0 || strcmp(status, "ok") != 0 ||
        record_get_str(f, row, "median_s", median, sizeof median) != 0)
        return 1;
    const double m = strtod(median, &end);
    return end != median && *end == 0 && isfinite(m) && m >= 0;
}

static int split_columns(record_file *f, const char *columns)
{
    f->n_columns = 1;
    for (const char *c = columns; *c; c++)
        f->n_columns += *c == ',';
    f->columns = calloc((size_t)f->n_columns, sizeof *f->columns);
    if (!f->columns) return -1;
    const char *start = columns;
    for (int i = 0; i < f->n_columns; i++) {
        size_t len = strcspn(start, ",");
        f->columns[i] = malloc(len + 1);
        if (!f->columns[i]) return -1;
        memcpy(f->columns[i], start, len);
        f->columns[i][len] = 0;
        start += len + (start[len] == ',');
    }
    return 0;
}

static void utc_now(char *buf, size_t size)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* s with its control characters written as \n, \t, \r or \xHH, so a metadata line
 * stays one line whatever an argument or a path holds. keep_lines: a newline that
 * starts another `#` line is kept (the extra metadata lines), any other is escaped. */
static void put_escaped(FILE *out, const char *s, int keep_lines)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '\n' && keep_lines && (c[1] == '#' || c[1] == 0))
            fputc('\n', out);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c == '\t')
            fputs("\\t", out);
        else if (*c == '\r')
            fputs("\\r", out);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\x%02x", *c);
        else
            fputc(*c, out);
    }
}

static void write_command(FILE *out, int argc, char **argv)
{
    fputs("build/linattn", out);
    for (int i = 0; i < argc; i++) {
        fputc(' ', out);
        put_escaped(out, argv[i], 0);
    }
    fputc('\n', out);
}

/* Reads an existing file's rows into f. Returns 1 when they were kept, 0 when the file
 * does not exist, -1 (and err) when it exists but cannot be resumed. */
static int read_existing(record_file *f, const char *columns, char *err, size_t err_size)
{
    /* a FIFO would block the read, a device never end it: results are regular files */
    struct stat st;
    if (stat(f->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, err_size, "%s: not a regular file; refusing to resume from it", f->path);
        return -1;
    }
    FILE *in = fopen(f->path, "r");
    if (!in) {
        if (errno == ENOENT) return 0;
        snprintf(err, err_size, "%s: %s", f->path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int seen_header = 0, rc = 1;
    while ((len = getline(&line, &cap, in)) >= 0) {
        /* a last line without its newline is a row cut short: measured again */
        int whole = len > 0 && line[len - 1] == '\n';
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || line[0] == 0) continue;
        if (!seen_header) {
            if (!whole) break; /* a header cut short: nothing to resume, start anew */
            if (strcmp(line, columns) != 0) {
                snprintf(err, err_size,
                         "%s: its columns differ from this version's; move it away or run "
                         "without --resume",
                         f->path);
                rc = -1;
                break;
            }
            seen_header = 1;
            continue;
        }
        if (!whole || !row_complete(f, line) || !row_trusted(f, line)) continue;
        if (store_row(f, line) != 0) {
            snprintf(err, err_size, "%s: out of memory", f->path);
            rc = -1;
            break;
        }
    }
    free(line);
    fclose(in);
    if (rc == 1 && !seen_header) rc = 0; /* empty or header-less: start anew */
    return rc;
}

static char meta_extra[2048];

void record_meta_extra(const char *lines)
{
    snprintf(meta_extra, sizeof meta_extra, "%s", lines ? lines : "");
}

static void write_meta(FILE *out, const char *experiment, const char *about, int argc, char **argv)
{
    char date[32];
    utc_now(date, sizeof date);
    int reset = memory_peak_reset();
    fprintf(out, "# linattn %s: %s\n", experiment, about);
    fputs("# command: ", out);
    write_command(out, argc, argv);
    fprintf(out, "# date: %s\n", date);
    fprintf(out, "# git_commit: %s\n", git_commit());
    fprintf(out, "# cpu: %s\n", machine_cpu_model());
    fprintf(out, "# cores: %d\n", machine_cores());
    /* the count asked for and, when it was above the cores, the count run on (linattn.h) */
    const int threads = la_get_num_threads(), requested = la_num_threads_requested();
    fprintf(out, "# threads: %d\n", threads);
    if (requested == threads)
        fprintf(out, "# threads_requested: %d\n", requested);
    else
        fprintf(out, "# threads_requested: %d (clamped to the %d online cores)\n", requested,
                threads);
    fprintf(out,
            "# load_average: %s (other processes competing for the cores add "
            "noise to timings)\n",
            machine_load_average());
    const machine_report *check = machine_checked();
    if (check) machine_write_meta(out, check);
    fprintf(out, "# blis: %s, kernels %s\n", la_blis_version(), la_blis_config());
    fprintf(out, "# float32 kernels: %s\n", la_simd_config());
    fprintf(out, "# linattn: %s\n", LA_VERSION_STRING);
    fprintf(out, "# peak_rss: %s\n",
            reset ? "VmHWM after the point, reset before it via /proc/self/clear_refs; "
                    "includes inputs, outputs and the program"
                  : "VmHWM since the process started (clear_refs unavailable): an upper "
                    "bound, monotone over the sweep");
    put_escaped(out, meta_extra, 1);
}

void record_write_meta(FILE *out, const char *experiment, const char *about, int argc, char **argv)
{
    write_meta(out, experiment, about, argc, argv);
    machine_warn_once(); /* bench's table: its rows follow */
}

record_file *record_open_stream(FILE *out, const char *experiment, const char *about,
                                const char *columns, const char *extra, int argc, char **argv,
                                char *err, size_t err_size)
{
    record_file *f = calloc(1, sizeof *f);
    if (f) f->lock = -1;
    if (!f || !(f->path = dup_string("(standard output)")) || split_columns(f, columns) != 0) {
        snprintf(err, err_size, "%s: out of memory", experiment);
        record_close(f);
        return NULL;
    }
    f->out = out;
    f->borrowed = 1;
    write_meta(out, experiment, about, argc, argv);
    if (extra) put_escaped(out, extra, 1);
    fprintf(out, "%s\n", columns);
    if (fflush(out) != 0) {
        snprintf(err, err_size, "%s: %s", f->path, strerror(errno));
        record_close(f);
        return NULL;
    }
    f->counted = 1, open_files++;
    return f;
}

record_file *record_open(const char *path, const char *experiment, const char *about,
                         const char *columns, int n_key, int resume, int argc, char **argv,
                         char *err, size_t err_size)
{
    record_file *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(err, err_size, "%s: out of memory", path);
        return NULL;
    }
    f->n_key = n_key;
    f->lock = -1;
    f->path = dup_string(path);
    if (!f->path || split_columns(f, columns) != 0) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    if (guard_check(path, err, err_size)) goto fail;
    if ((f->lock = lock_folder(path, err, err_size)) == -2) goto fail;

    int kept = 0;
    if (resume) {
        kept = read_existing(f, columns, err, err_size);
        if (kept < 0) goto fail;
    }
    char date[32];
    utc_now(date, sizeof date);
    const char *why = NULL;
    int fd = -1;
    off_t resume_end = 0;
    if (kept) {
        /* appending: first cut a last line left without its newline (a row cut short) */
        fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
        off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
        char c = '\n';
        while (end > 0 && pread(fd, &c, 1, end - 1) == 1 && c != '\n')
            end--;
        resume_end = end;
        if (fd < 0 || end < 0 || ftruncate(fd, end) != 0) {
            snprintf(err, err_size, "%s: %s", path, strerror(errno));
            if (fd >= 0) close(fd);
            goto fail;
        }
    } else {
        /* a new file stays unnamed until its first row: the old one lives until then */
        f->fresh = malloc(sizeof *f->fresh);
        if (!f->fresh || la_outfile_open(f->fresh, path, &why) != LA_OK) {
            snprintf(err, err_size, "%s: %s", path, f->fresh ? why : "out of memory");
            free(f->fresh);
            f->fresh = NULL;
            goto fail;
        }
        fd = f->fresh->fd;
    }
    f->out = fdopen(fd, "a");
    if (!f->out) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        if (!f->fresh) close(fd);
        goto fail;
    }
    f->resumed_rows = (int)f->n_rows;
    if (kept) {
        fprintf(f->out, "# resumed: %s (commit %s), %d points kept: ", date, git_commit(),
                f->resumed_rows);
        write_command(f->out, argc, argv);
    } else {
        write_meta(f->out, experiment, about, argc, argv);
        fprintf(f->out, "%s\n", columns);
    }
    if (fflush(f->out) != 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        f->write_failed = 1;
        /* a `# resumed:` line cut short by a full disk is cut off again */
        if (kept && ftruncate(fd, resume_end) != 0) { /* nothing more to do */
        }
        goto fail;
    }
    f->counted = 1, open_files++;
    return f;
fail:
    record_close(f);
    return NULL;
}

const char *record_find(const record_file *f, const char *key)
{
    for (size_t i = f->n_rows; i-- > 0;) /* the latest row of a key wins */
        if (strcmp(f->rows[i].key, key) == 0) return f->rows[i].row;
    return NULL;
}

/* Copies field `index` of row into buf; -1 when the row is shorter. */
static int field(const char *row, int index, char *buf, size_t size)
{
    const char *start = row;
    for (int i = 0; i < index; i++) {
        start = strchr(start, ',');
        if (!start) return -1;
        start++;
    }
    size_t len = strcspn(start, ",");
    if (len >= size) len = size - 1;
    memcpy(buf, start, len);
    buf[len] = 0;
    return 0;
}

static int column_index(const record_file *f, const char *column)
{
    for (int i = 0; i < f->n_columns; i++)
        if (strcmp(f->columns[i], column) == 0) return i;
    return -1;
}

int record_get_str(const record_file *f, const char *row, const char *column, char *buf,
                   size_t size)
{
    int i = column_index(f, column);
    if (i < 0 || size == 0) return -1;
    return field(row, i, buf, size);
}

int record_get(const record_file *f, const char *row, const char *column, double *out)
{
    char buf[64], *end;
    if (record_get_str(f, row, column, buf, sizeof buf) != 0 || !buf[0]) return -1;
    double x = strtod(buf, &end);
    if (*end) return -1;
    *out = x;
    return 0;
}

/* Whether row is a measured point: a file without a status column holds nothing else;
 * otherwise any status but a skip (skipped_*), an error or not_reached. */
static int row_measured(const record_file *f, const char *row)
{
    char status[64];
    if (record_get_str(f, row, "status", status, sizeof status) != 0) return 1;
    return strncmp(status, "skipped", 7) != 0 && strncmp(status, "error", 5) != 0 &&
           strcmp(status, "not_reached") != 0;
}

int record_row(record_file *f, const char *fmt, ...)
{
    char *row = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0 || !(row = malloc((size_t)len + 2))) {
        f->failed = 1;
        return -1;
    }
    va_start(ap, fmt);
    vsnprintf(row, (size_t)len + 1, fmt, ap);
    va_end(ap);
    int rc = 0;
    if (f->borrowed) {
        if (fprintf(f->out, "%s\n", row) < 0 || fflush(f->out) != 0) rc = -1;
    } else {
        /* whole or not at all: one write(2) of the row and its newline; a short write
         * (full disk) is cut back off, so no partial row stays in the file */
        int fd = fileno(f->out);
        row[len] = '\n';
        off_t before = fflush(f->out) == 0 ? lseek(fd, 0, SEEK_END) : -1;
        ssize_t put = before < 0 ? -1 : write(fd, row, (size_t)len + 1);
        row[len] = 0;
        if (put != (ssize_t)len + 1) {
            if (before >= 0 && ftruncate(fd, before) != 0) { /* nothing more to do */
            }
            rc = -1;
        }
        if (rc) f->write_failed = 1;
        /* the first measured row makes a new file worth keeping: it now replaces the old
         * one (a run that only skipped points never replaces measurements) */
        if (rc == 0 && f->fresh && !f->fresh->committed && row_measured(f, row) &&
            la_outfile_commit(f->fresh, NULL))
            rc = -1;
    }
    if (rc == 0 && store_row(f, row) != 0) rc = -1;
    if (rc == 0) machine_warn_once();
    free(row);
    if (rc) f->failed = 1;
    return rc;
}

record_file *record_load(const char *path, int n_key, char *err, size_t err_size)
{
    record_file *f = calloc(1, sizeof *f);
    FILE *in = NULL;
    char *line = NULL;
    size_t cap = 0;
    if (f) f->lock = -1;
    if (!f || !(f->path = dup_string(path))) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    f->n_key = n_key;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a FIFO would block the read */
        snprintf(err, err_size, "%s: not a regular file", path);
        goto fail;
    }
    if (!(in = fopen(path, "r"))) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        goto fail;
    }
    while (getline(&line, &cap, in) >= 0) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == '#' || line[0] == 0) continue;
        if (f->columns && !row_complete(f, line)) continue;
        if (!f->columns ? split_columns(f, line) != 0 : store_row(f, line) != 0) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto fail;
        }
    }
    if (!f->columns) {
        snprintf(err, err_size, "%s: no header row", path);
        goto fail;
    }
    free(line);
    fclose(in);
    return f;
fail:
    free(line);
    if (in) fclose(in);
    record_close(f);
    return NULL;
}

size_t record_count(const record_file *f)
{
    return f->n_rows;
}
const char *record_row_at(const record_file *f, size_t i)
{
    return i < f->n_rows ? f->rows[i].row : NULL;
}

const char *record_path(const record_file *f)
{
    return f->path;
}
int record_resumed_rows(const record_file *f)
{
    return f->resumed_rows;
}

void record_sibling_path(const char *out, const char *suffix, char *buf, size_t size)
{
    size_t len = strlen(out);
    if (len > 4 && strcmp(out + len - 4, ".csv") == 0) len -= 4;
    snprintf(buf, size, "%.*s_%s.csv", (int)len, out, suffix);
}

int record_close(record_file *f)
{
    if (!f) return 0;
    int rc = f->failed ? -1 : 0;
    /* the last results file of an experiment closed: its machine check is forgotten */
    if (f->counted) open_files--;
    if (open_files == 0) machine_forget();
    /* a new file that got no measured row still appears where there was none (a file of
     * skipped points, or header-only, says the run happened); it never replaces one, and
     * never appears when any write failed (stdio forgets a failed write: ferror keeps it) */
    struct stat st;
    if (f->out && f->fresh && !f->fresh->committed && !f->write_failed && !f->failed &&
        !ferror(f->out) && fflush(f->out) == 0) {
        if (stat(f->fresh->path, &st) != 0 && errno == ENOENT) {
            if (la_outfile_commit(f->fresh, NULL)) rc = -1;
        } else if (f->n_rows > 0) {
            fputs("linattn: note: ", stderr);
            put_escaped(stderr, f->path, 0);
            fputs(": no point was measured; the file there is kept\n", stderr);
        }
    }
    if (f->out && (f->borrowed ? fflush(f->out) : fclose(f->out)) != 0) rc = -1;
    if (f->fresh) { /* fclose closed its descriptor; a file that got no row vanishes */
        if (!f->out) la_outfile_close(f->fresh);
        f->fresh->fd = -1;
        la_outfile_close(f->fresh);
        free(f->fresh);
    }
    unlock_folder(f->lock);
    for (size_t i = 0; i < f->n_rows; i++) {
        free(f->rows[i].key);
        free(f->rows[i].row);
    }
    free(f->rows);
    if (f->columns)
        for (int i = 0; i < f->n_columns; i++)
            free(f->columns[i]);
    free(f->columns);
    free(f->path);
    free(f);
    return rc;
}

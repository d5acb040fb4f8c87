/* record.c — the experiments' results files: the CSV writer with its metadata header,
 * --resume, folder locks, and the reader of finished files (record.h). */

#include "record.h"

#include "guard.h"
#include "io/outfile.h"
#include "linattn.h"
#include "lock.h"
#include "machine.h"
#include "metadata.h"
#include "rows.h"

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

/* results files open in this process: the machine check lasts while one is (machine.h) */
static int open_files;

/* ---------------------------------------------------------------- CSV */

struct record_file {
    FILE *out;
    char *path;
    rows_table table; /* the header row's columns and the rows held (rows.h) */
    int resumed_rows;
    int failed;
    int borrowed;      /* out is the caller's stream (record_open_stream): flushed, not closed */
    la_outfile *fresh; /* a new file: unnamed until its first measured row (row_measured),
                        * then it replaces path */
    int write_failed;  /* a write or flush failed: a new file is never published */
    int lock;          /* lock_folder's index, or -1 */
    int counted;       /* in open_files */
};

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
        if (!whole || !rows_complete(&f->table, line) || !row_trusted(f, line)) continue;
        if (rows_store(&f->table, line) != 0) {
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

void record_write_meta(FILE *out, const char *experiment, const char *about, int argc, char **argv)
{
    metadata_write(out, experiment, about, argc, argv);
    machine_warn_once(); /* bench's table: its rows follow */
}

record_file *record_open_stream(FILE *out, const char *experiment, const char *about,
                                const char *columns, const char *extra, int argc, char **argv,
                                char *err, size_t err_size)
{
    record_file *f = calloc(1, sizeof *f);
    if (f) f->lock = -1;
    if (!f || !(f->path = strdup("(standard output)")) ||
        rows_split_columns(&f->table, columns) != 0) {
        snprintf(err, err_size, "%s: out of memory", experiment);
        record_close(f);
        return NULL;
    }
    f->out = out;
    f->borrowed = 1;
    metadata_write(out, experiment, about, argc, argv);
    if (extra) metadata_put_escaped(out, extra, 1);
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
    f->table.n_key = n_key;
    f->lock = -1;
    f->path = strdup(path);
    if (!f->path || rows_split_columns(&f->table, columns) != 0) {
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
    metadata_utc_now(date, sizeof date);
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
    f->resumed_rows = (int)f->table.n_rows;
    if (kept) {
        fprintf(f->out, "# resumed: %s (commit %s), %d points kept: ", date, metadata_git_commit(),
                f->resumed_rows);
        metadata_write_command(f->out, argc, argv);
    } else {
        metadata_write(f->out, experiment, about, argc, argv);
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
    return rows_find(&f->table, key);
}

int record_get_str(const record_file *f, const char *row, const char *column, char *buf,
                   size_t size)
{
    return rows_get_str(&f->table, row, column, buf, size);
}

int record_get(const record_file *f, const char *row, const char *column, double *out)
{
    return rows_get(&f->table, row, column, out);
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
    if (rc == 0 && rows_store(&f->table, row) != 0) rc = -1;
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
    if (!f || !(f->path = strdup(path))) {
        snprintf(err, err_size, "%s: out of memory", path);
        goto fail;
    }
    f->table.n_key = n_key;
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
        if (f->table.columns && !rows_complete(&f->table, line)) continue;
        if (!f->table.columns ? rows_split_columns(&f->table, line) != 0
                              : rows_store(&f->table, line) != 0) {
            snprintf(err, err_size, "%s: out of memory", path);
            goto fail;
        }
    }
    if (!f->table.columns) {
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
    return f->table.n_rows;
}
const char *record_row_at(const record_file *f, size_t i)
{
    return i < f->table.n_rows ? f->table.rows[i].row : NULL;
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
        } else if (f->table.n_rows > 0) {
            fputs("linattn: note: ", stderr);
            metadata_put_escaped(stderr, f->path, 0);
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
    lock_release(f->lock);
    rows_free(&f->table);
    free(f->path);
    free(f);
    return rc;
}

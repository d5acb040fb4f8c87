/* record.c — the experiments' CSV writer, timer, memory probe, machine check and progress
 * line.
 * See record.h for the file format and the meaning of each measurement. */
#include "record.h"

#include "guard.h"
#include "linattn.h"
#include "machine.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* the memory probe (below) the timer calls around each warm-up */
static int peak_reset(void);
static double read_peak_rss_bytes(void);
static double read_rss_bytes(void);

/* ---------------------------------------------------------------- timer */

double timer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double timer_median(double *x, size_t n)
{
    qsort(x, n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int timer_run_interleaved(size_t n, const timer_body *bodies, void *const *ctxs,
                          const timer_rule *rule, timer_result *out, int *status)
{
    const int min_reps = rule->min_reps < 1 ? 1 : rule->min_reps;
    const int max_reps = rule->max_reps < min_reps ? min_reps : rule->max_reps;
    double *samples = malloc((n ? n : 1) * (size_t)max_reps * sizeof *samples);
    double *warm = malloc((n ? n : 1) * sizeof *warm), *total = calloc(n ? n : 1, sizeof *total);
    double *rss = malloc((n ? n : 1) * 2 * sizeof *rss);
    int *count = calloc(n ? n : 1, sizeof *count);
    int rc = -1;
    if (!samples || !warm || !total || !rss || !count) goto done;

    /* warm-up of each: page faults, caches, thread pool; kept as a sample only when slow.
     * It runs alone, so it is where each body's peak memory is measured. */
    for (size_t i = 0; i < n; i++) {
        peak_reset();
        rss[2 * i] = read_rss_bytes();
        double t0 = timer_now();
        status[i] = bodies[i](ctxs[i]);
        warm[i] = timer_now() - t0;
        rss[2 * i + 1] = read_peak_rss_bytes();
        if (status[i] == 0 && warm[i] >= rule->slow_s) samples[i * max_reps + count[i]++] = warm[i];
    }
    /* rounds: each body still short of the rule is timed once, in order, so a drift
     * (another process, the clock frequency) reaches every body alike */
    for (int any = 1; any;) {
        any = 0;
        for (size_t i = 0; i < n; i++) {
            const int c = count[i];
            if (status[i] != 0 || c >= max_reps ||
                (c >= min_reps && (total[i] >= rule->min_total_s || warm[i] >= rule->slow_s)))
                continue;
            any = 1;
            double t0 = timer_now();
            if ((status[i] = bodies[i](ctxs[i])) != 0) continue;
            samples[i * max_reps + c] = timer_now() - t0;
            total[i] += samples[i * max_reps + c];
            count[i]++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        stats_summary s;
        if (status[i] != 0 || stats_summarize(samples + i * max_reps, (size_t)count[i], &s) != 0)
            continue;
        out[i] = (timer_result){s.median, s.min,    s.max,      s.q1,
                                s.q3,     count[i], rss[2 * i], rss[2 * i + 1]};
    }
    rc = 0;
done:
    free(samples), free(warm), free(total), free(rss), free(count);
    return rc;
}

/* One kernel call, for timer_run_interleaved. */
typedef struct {
    la_kernel kernel;
    const la_problem *p;
    const float *q, *k, *v;
    float *out;
    la_status status;
} kernel_call;

static int run_kernel_call(void *ctx)
{
    kernel_call *c = ctx;
    c->status = la_attention_f32(c->kernel, c->p, c->q, c->k, c->v, c->out);
    return c->status != LA_OK;
}

void timer_kernels(size_t n, const la_kernel *kernels, const la_problem *p, const float *q,
                   const float *k, const float *v, float *out, const timer_rule *rule,
                   timer_result *t, la_status *status)
{
    kernel_call calls[TIMER_MAX_INTERLEAVED];
    timer_body bodies[TIMER_MAX_INTERLEAVED] = {0};
    void *ctxs[TIMER_MAX_INTERLEAVED] = {0};
    int failed[TIMER_MAX_INTERLEAVED];
    if (n > TIMER_MAX_INTERLEAVED) n = TIMER_MAX_INTERLEAVED;
    for (size_t i = 0; i < n; i++) {
        calls[i] = (kernel_call){kernels[i], &p[i], q, k, v, out, LA_OK};
        bodies[i] = run_kernel_call, ctxs[i] = &calls[i];
    }
    int rc = timer_run_interleaved(n, bodies, ctxs, rule, t, failed);
    for (size_t i = 0; i < n; i++)
        status[i] = rc != 0 ? LA_ENOMEM : failed[i] == 0 ? LA_OK : calls[i].status;
}

la_status timer_kernel(la_kernel kernel, const la_problem *p, const float *q, const float *k,
                       const float *v, float *out, const timer_rule *rule, timer_result *t)
{
    la_status status;
    timer_kernels(1, &kernel, p, q, k, v, out, rule, t, &status);
    return status;
}

/* ---------------------------------------------------------------- memory */

void timer_memory_init(void)
{
    /* A fixed threshold turns off glibc's growing one, which would keep freed blocks of
     * up to 32 MiB in the heap (resident) after the first large free. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

static int peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return 0;
    int ok = fputs("5", f) >= 0;
    ok = (fclose(f) == 0) && ok;
    return ok;
}

/* A "Key:   123 kB" line of /proc/self/status, in bytes. */
static double status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    size_t len = strlen(key);
    double bytes = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, len) == 0 && line[len] == ':') {
            bytes = 1024.0 * strtod(line + len + 1, NULL);
            break;
        }
    }
    fclose(f);
    return bytes;
}

static double read_peak_rss_bytes(void)
{
    return status_kb("VmHWM");
}
static double read_rss_bytes(void)
{
    return status_kb("VmRSS");
}

/* ---------------------------------------------------------------- machine */

const char *machine_cpu_model(void)
{
    static char model[128] = "";
    if (model[0]) return model;
    snprintf(model, sizeof model, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return model;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (!colon) break;
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            colon[strcspn(colon, "\n")] = 0;
            /* commas would split a CSV field elsewhere; the header is a comment, but keep
             * the string safe to reuse */
            for (char *c = colon; *c; c++)
                if (*c == ',') *c = ';';
            snprintf(model, sizeof model, "%s", colon);
            break;
        }
    }
    fclose(f);
    return model;
}

const char *machine_load_average(void)
{
    static char load[64];
    snprintf(load, sizeof load, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return load;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
        snprintf(load, sizeof load, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
    return load;
}

/* The cpu line of /proc/stat: busy and total jiffies. */
static int cpu_jiffies(double *busy, double *total)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4) return -1;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += (double)v[i];
    *busy = *total - (double)v[3] - (double)v[4]; /* minus idle and iowait */
    return 0;
}

double machine_busy_fraction(double seconds)
{
    double b0, t0, b1, t1;
    if (cpu_jiffies(&b0, &t0) != 0) return -1;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
    if (cpu_jiffies(&b1, &t1) != 0 || t1 <= t0) return -1;
    return (b1 - b0) / (t1 - t0);
}

static const char *git_commit(void);
const char *record_git_commit(void)
{
    return git_commit();
}

int machine_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
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

/* ---------------------------------------------------------------- machine check */

/* The check of the running timing experiment, kept while its files are open. */
static machine_report machine;
static int machine_checked, machine_warned, open_files;

const machine_report *machine_check(void)
{
    machine_measure(&machine);
    machine_checked = 1, machine_warned = 0;
    return &machine;
}

/* The warning of a busy machine, once, when the experiment has its first result (so a
 * command refused before it measures anything prints its one error line alone). */
static void warn_once(void)
{
    if (machine_checked && !machine_warned) machine_warn(&machine);
    machine_warned = 1;
}

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
    int reset = peak_reset();
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
    if (machine_checked) machine_write_meta(out, &machine);
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
    warn_once(); /* bench's table: its rows follow */
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
    if (rc == 0) warn_once();
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
    if (open_files == 0) machine_checked = 0;
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

/* ---------------------------------------------------------------- progress */

void progress_format_duration(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7)
        snprintf(buf, size, "?");
    else if (s < 60)
        snprintf(buf, size, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, size, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

/* the suite around the experiment (progress_suite) */
static int suite_k, suite_total;
static double suite_after_s = -1;

static pthread_mutex_t beat_mu = PTHREAD_MUTEX_INITIALIZER;
static int beat_active;

void progress_suite(int k, int total, double after_s)
{
    /* between experiments: the heartbeat stops (also after one that never called
     * progress_end, on an error path) and reads the new values from its next one */
    pthread_mutex_lock(&beat_mu);
    suite_k = k;
    suite_total = total;
    suite_after_s = after_s;
    beat_active = 0;
    pthread_mutex_unlock(&beat_mu);
}

void progress_start(progress_line *pr, const char *label, int total_points, double total_work)
{
    pr->label = label;
    pr->total_points = total_points;
    pr->total_work = total_work > 0 ? total_work : total_points;
    pr->work_done = 0;
    pr->start_s = timer_now();
    pr->out = stderr;
    pr->tty = isatty(2);
    pr->every_s = 2;
    pr->last_line_s = pr->start_s;
    pr->point = 0;
    pr->what[0] = 0;
    pr->point_work = 0;
    pr->point_start_s = pr->start_s;
    pr->last_rate_s = 0;
    pr->heartbeat_s = 10;
}

/* "[2/6 scaling]" inside a suite, else "[scaling]" */
static void progress_label(const progress_line *pr, char *buf, size_t size)
{
    if (suite_total > 0)
        snprintf(buf, size, "[%d/%d %s]", suite_k, suite_total, pr->label);
    else
        snprintf(buf, size, "[%s]", pr->label);
}

/* "elapsed 1m05s  left ~2m10s (1m40s–2m10s) (suite ~6m00s)" after `done` units of work:
 * the work left at the rate of all finished points, and the range to the rate of the
 * last one when the two differ by more than a fifth */
static void progress_times(const progress_line *pr, double done, double now, char *buf, size_t size)
{
    double elapsed = now - pr->start_s, left = NAN;
    char e[32], r[96] = "?", s[64] = "";
    progress_format_duration(elapsed, e, sizeof e);
    if (done > 0 && done <= pr->total_work) {
        left = elapsed * (pr->total_work - done) / done;
        progress_format_duration(left, r, sizeof r);
        const double other = pr->last_rate_s * (pr->total_work - done);
        if (pr->last_rate_s > 0 && (other > 1.2 * left || left > 1.2 * other)) {
            char lo[32], hi[32];
            progress_format_duration(other < left ? other : left, lo, sizeof lo);
            progress_format_duration(other < left ? left : other, hi, sizeof hi);
            size_t used = strlen(r);
            if (strcmp(lo, hi) != 0) snprintf(r + used, sizeof r - used, " (%s–%s)", lo, hi);
        }
    }
    if (suite_total > 0 && suite_k < suite_total && suite_after_s >= 0 && isfinite(left)) {
        char t[32];
        progress_format_duration(left + suite_after_s, t, sizeof t);
        snprintf(s, sizeof s, " (suite ~%s)", t);
    }
    snprintf(buf, size, "elapsed %s  left ~%s%s", e, r, s);
}

/* The heartbeat: a helper thread that prints a line when a point has run heartbeat_s
 * seconds since the last line, from beat (a copy of the progress state, under beat_mu). */
static pthread_cond_t beat_cv = PTHREAD_COND_INITIALIZER;
static progress_line beat;
static int beat_started;
static double beat_last_s; /* when the last line was printed */

static void *heartbeat(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&beat_mu);
    for (;;) {
        double period = beat_active && beat.heartbeat_s < 2 ? beat.heartbeat_s / 2 : 1;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double at = (double)until.tv_nsec * 1e-9 + (period > 0.01 ? period : 0.01);
        until.tv_sec += (time_t)at;
        until.tv_nsec = (long)((at - floor(at)) * 1e9);
        pthread_cond_timedwait(&beat_cv, &beat_mu, &until);
        const double now = timer_now();
        if (!beat_active || !(beat.heartbeat_s > 0) || now - beat_last_s < beat.heartbeat_s)
            continue;
        char label[96], times[256], running[32];
        progress_label(&beat, label, sizeof label);
        progress_times(&beat, beat.work_done - beat.point_work, now, times, sizeof times);
        progress_format_duration(now - beat.point_start_s, running, sizeof running);
        fprintf(beat.out, "%s point %d/%d running for %s (%s)  %s\n", label, beat.point,
                beat.total_points, running, beat.what, times);
        fflush(beat.out);
        beat_last_s = now;
    }
    return NULL;
}

/* Hands the state of pr to the heartbeat (active: a point is running), starting the
 * thread the first time; a thread that cannot start means no heartbeat, nothing else. */
static void beat_update(const progress_line *pr, int active, double last_line_s)
{
    pthread_mutex_lock(&beat_mu);
    beat = *pr;
    beat_active = active;
    if (last_line_s > beat_last_s) beat_last_s = last_line_s;
    if (active && !beat_started) {
        pthread_t thread;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) == 0) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            beat_started = pthread_create(&thread, &attr, heartbeat, NULL) == 0;
            pthread_attr_destroy(&attr);
        }
    }
    pthread_cond_signal(&beat_cv);
    pthread_mutex_unlock(&beat_mu);
}

void progress_step(progress_line *pr, int point, double work, const char *what)
{
    /* the point before this one has finished: its rate, for the range of the time left */
    const double done = pr->work_done, now = timer_now();
    if (pr->point > 0 && pr->point_work > 0)
        pr->last_rate_s = (now - pr->point_start_s) / pr->point_work;
    char label[96], times[256];
    progress_label(pr, label, sizeof label);
    progress_times(pr, done, now, times, sizeof times);
    if (pr->tty) {
        fprintf(pr->out, "\r\033[K%s point %d/%d  %s  %s", label, point, pr->total_points, times,
                what ? what : "");
        fflush(pr->out);
    } else if (pr->point > 0 && now - pr->last_line_s >= pr->every_s) {
        fprintf(pr->out, "%s %d/%d points done (last: %s)  %s\n", label, pr->point,
                pr->total_points, pr->what, times);
        fflush(pr->out);
        pr->last_line_s = now;
    }
    pr->work_done += work;
    pr->point = point;
    pr->point_work = work;
    pr->point_start_s = now;
    snprintf(pr->what, sizeof pr->what, "%s", what ? what : "");
    if (!pr->tty) beat_update(pr, 1, point == 1 ? now : pr->last_line_s);
}

void progress_end(progress_line *pr)
{
    if (!pr->tty) beat_update(pr, 0, 0);
    char label[96], e[32];
    progress_label(pr, label, sizeof label);
    progress_format_duration(timer_now() - pr->start_s, e, sizeof e);
    fprintf(pr->out, "%s%s %d points in %s\n", pr->tty ? "\r\033[K" : "", label, pr->total_points,
            e);
    fflush(pr->out);
}

/* plot_files.c — one results file read for its figures: its experiment, metadata and
 * the values of its setting columns; a folder of them (plot.h). */
#include "plot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int plot_has_column(const char *header, const char *column)
{
    size_t len = strlen(column);
    for (const char *p = header; *p;) {
        size_t field = strcspn(p, ",");
        if (field == len && strncmp(p, column, len) == 0) return 1;
        p += field + (p[field] == ',');
    }
    return 0;
}

/* The value after "# key: " in a metadata line, trimmed, into out (first one only). */
static void meta_value(const char *line, const char *key, char *out, size_t size)
{
    size_t len = strlen(key);
    if (out[0] || strncmp(line, "# ", 2) != 0 || strncmp(line + 2, key, len) != 0 ||
        line[2 + len] != ':')
        return;
    const char *v = line + 3 + len;
    while (*v == ' ')
        v++;
    snprintf(out, size, "%s", v);
}

/* The `#` lines and the header row of path: the experiment of its first line (when f
 * is not NULL), the metadata, the header. Returns 0; 1 when the file is not a linattn
 * results file; -1 when it cannot be read. The reason is in err either way. */
static int read_head(const char *path, csv_file *f, char *header, size_t header_size, char *err,
                     size_t err_size)
{
    struct stat st;
    FILE *in = NULL;
    if (stat(path, &st) != 0 || (S_ISREG(st.st_mode) && !(in = fopen(path, "r")))) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_size, "%s: not a regular file", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int first = 1, rc = 0;
    header[0] = 0;
    while (getline(&line, &cap, in) >= 0) {
        line[strcspn(line, "\r\n")] = 0;
        if (first && f) {
            const char *colon = strchr(line, ':');
            size_t len = colon ? (size_t)(colon - line) - 10 : 0;
            if (strncmp(line, "# linattn ", 10) != 0 || !colon || len == 0 ||
                len >= sizeof f->experiment || memchr(line + 10, ' ', len)) {
                snprintf(err, err_size,
                         "%s: not a linattn results file (its first line is not '# linattn "
                         "<experiment>: ...')",
                         path);
                rc = 1;
                break;
            }
            memcpy(f->experiment, line + 10, len);
            f->experiment[len] = 0;
        }
        first = 0;
        if (line[0] == 0) continue;
        if (line[0] != '#') {
            snprintf(header, header_size, "%s", line);
            break;
        }
        if (!f) continue;
        meta_value(line, "cpu", f->cpu, sizeof f->cpu);
        meta_value(line, "git_commit", f->commit, sizeof f->commit);
        meta_value(line, "date", f->date, sizeof f->date);
        meta_value(line, "threads", f->threads, sizeof f->threads);
        meta_value(line, "precision", f->precision, sizeof f->precision);
        meta_value(line, "dtype", f->precision, sizeof f->precision);
        char noisy[64] = "";
        meta_value(line, "noisy", noisy, sizeof noisy);
        if (strncmp(noisy, "yes", 3) == 0) snprintf(f->noisy, sizeof f->noisy, "yes");
    }
    free(line);
    fclose(in);
    if (rc == 0 && !header[0]) {
        snprintf(err, err_size, "%s: no header row", path);
        rc = f ? 1 : -1;
    }
    return rc;
}

/* The distinct values of the setting columns, from the rows. */
static int read_settings(csv_file *f)
{
    char err[512];
    record_file *r = record_load(f->path, 0, err, sizeof err);
    if (!r) return cli_fail("plot", "%s", err);
    /* the index of each row's value of setting s in f->values[s], -1: none */
    for (size_t s = 0; s < N_SETTINGS; s++) {
        f->n_values[s] = 0;
        int axis = 0;
        for (const char *const *a = f->kind->axis_columns; *a; a++)
            axis |= strcmp(*a, plot_settings[s].column) == 0;
        if (axis || !plot_has_column(f->header, plot_settings[s].column)) continue;
        for (size_t i = 0; i < record_count(r); i++) {
            char v[32];
            if (record_get_str(r, record_row_at(r, i), plot_settings[s].column, v, sizeof v) ||
                !v[0] || strpbrk(v, " '"))
                continue;
            int seen = 0;
            for (int k = 0; k < f->n_values[s] && !seen; k++)
                seen = strcmp(f->values[s][k], v) == 0;
            if (!seen && f->n_values[s] < MAX_VALUES)
                snprintf(f->values[s][f->n_values[s]++], sizeof f->values[s][0], "%s", v);
        }
    }
    /* the combinations of the values that occur, in the order they first appear */
    f->n_combos = 0;
    for (size_t i = 0; i < record_count(r); i++) {
        unsigned char pick[N_SETTINGS] = {0};
        for (size_t s = 0; s < N_SETTINGS; s++) {
            char v[32];
            if (f->n_values[s] < 2 ||
                record_get_str(r, record_row_at(r, i), plot_settings[s].column, v, sizeof v))
                continue;
            for (int k = 0; k < f->n_values[s]; k++)
                if (strcmp(f->values[s][k], v) == 0) pick[s] = (unsigned char)k;
        }
        int seen = 0;
        for (int c = 0; c < f->n_combos && !seen; c++)
            seen = memcmp(f->combo[c], pick, sizeof pick) == 0;
        if (!seen && f->n_combos < MAX_GROUPS) memcpy(f->combo[f->n_combos++], pick, sizeof pick);
    }
    if (f->n_combos == 0) f->n_combos = 1; /* no rows: one group, all zeros */
    record_close(r);
    return 0;
}

/* The precision the about text of the first line names, when no column or line does. */
static void precision_from_about(const char *path, char *out, size_t size)
{
    FILE *in = fopen(path, "r");
    char line[1024] = "";
    if (!in) return;
    if (!fgets(line, sizeof line, in)) line[0] = 0;
    fclose(in);
    /* "(float32, self-attention N = M, ...)": the experiment's one precision */
    int f32 = strstr(line, "(float32") != NULL, f64 = strstr(line, "(float64") != NULL;
    if (f32 != f64) snprintf(out, size, "%s", f32 ? "float32" : "float64");
}

static int is_companion(const char *experiment)
{
    for (const char *const *c = plot_companions; *c; c++)
        if (strcmp(*c, experiment) == 0) return 1;
    return 0;
}

static const char *kind_names(void)
{
    static char buf[256];
    buf[0] = 0;
    for (size_t i = 0; i < N_FIGURES; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "",
                 plot_figures[i].experiment);
    return buf;
}

/* Reads path into f. explicit: the user named the file (a file with no figure is an
 * error); else it came from a folder (skipped: returns 1). Returns 0, 1 or 2. */
int plot_load_file(const char *path, int explicit, csv_file *f)
{
    memset(f, 0, sizeof *f);
    char err[PATH_MAX + 128];
    int r = read_head(path, f, f->header, sizeof f->header, err, sizeof err);
    if (r == 1 && !explicit) return 1; /* a folder's other CSV files */
    if (r != 0) return cli_fail("plot", "%s", err);
    if (!realpath(path, f->path)) return cli_fail("plot", "%s: %s", path, strerror(errno));
    for (const char *c = f->path; *c; c++)
        if (*c == '\'' || (unsigned char)*c < 0x20 || *c == 0x7f)
            return cli_fail("plot", "%s: a path with a ' or a control character is not supported",
                            path);
    for (size_t i = 0; i < N_FIGURES; i++)
        if (strcmp(plot_figures[i].experiment, f->experiment) == 0) f->kind = &plot_figures[i];
    if (!f->kind) {
        if (!explicit) return 1;
        if (is_companion(f->experiment))
            return cli_fail("plot", "%s: a %s file is drawn with the file it belongs to; give that",
                            path, f->experiment);
        return cli_fail("plot", "%s: no figure for a '%s' file (figures exist for %s)", path,
                        f->experiment, kind_names());
    }
    if (!f->precision[0] && !plot_has_column(f->header, "precision") &&
        !plot_has_column(f->header, "dtype"))
        precision_from_about(f->path, f->precision, sizeof f->precision);
    if (f->kind->aux_suffix[0]) {
        record_sibling_path(f->path, f->kind->aux_suffix, f->aux, sizeof f->aux);
        if (access(f->aux, R_OK) != 0 ||
            read_head(f->aux, NULL, f->aux_header, sizeof f->aux_header, err, sizeof err) != 0)
            f->aux[0] = 0; /* drawn without it (scaling_time: no fitted slopes) */
    }
    return read_settings(f);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.csv of a folder, by name, appended to files. */
int plot_load_folder(const char *dir, csv_file *files, size_t *n_files)
{
    DIR *d = opendir(dir);
    if (!d) return cli_fail("plot", "%s: %s", dir, strerror(errno));
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".csv") == 0 && e->d_name[0] != '.') {
            char *p = malloc(strlen(dir) + len + 2);
            if (!p) break;
            sprintf(p, "%s/%s", dir, e->d_name);
            names[n++] = p;
        }
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && *n_files >= MAX_INPUTS)
            rc = cli_fail("--from", "more than %d results files", MAX_INPUTS);
        int r = rc ? 0 : plot_load_file(names[i], 0, &files[*n_files]);
        if (r == 2) rc = 2;
        if (r == 0 && rc == 0) (*n_files)++, found++;
        free(names[i]);
    }
    if (rc == 0 && found == 0)
        rc = cli_fail("plot", "%s: no results file with a figure (%s)", dir, kind_names());
    return rc;
}

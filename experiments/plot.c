/* plot.c — `linattn plot`: the figures of any results folder or CSV files, drawn by the
 * gnuplot scripts of plots/ with the run's own settings in each figure's subtitle.
 *
 * Each CSV names its experiment on its first line (`# linattn scaling: ...`, record.h);
 * that picks the scripts (figures[] below). The settings come from the file itself: the
 * setting columns (d_k, heads, threads, ...) and the `#` metadata (cpu, git_commit, date,
 * noisy). Several files of one experiment are drawn in one figure where the script can
 * overlay them (scaling, crossover, decode): every distinct combination of settings in a
 * file is a group, the settings shared by all groups go in the subtitle and those that
 * differ name the groups in the legend. The other experiments get one figure per file.
 *
 * How a script is told (style.gpi documents the variables): gnuplot runs in the scripts'
 * folder with `-e` assignments: formats, out_png / out_svg (the outputs), subtitle, noisy,
 * ngroups and the arrays gfile, gwhere ("column=value ..." selecting the group's rows),
 * glabel, gaux and gauxwhere (a companion file: scaling's _fit.csv). Each output is an
 * la_outfile (an unnamed file in the output folder, handed to gnuplot as /dev/fd/N) that
 * takes its name only when gnuplot succeeded and wrote it: a figure is whole or absent. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "commands.h"
#include "common/cli.h"
#include "common/record.h"
#include "linattn.h"

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

static const char help_text[] =
    "usage: linattn plot [--from DIR|FILE...] [--out DIR] [--format png,svg]\n"
    "\n"
    "Draws the figures of a results folder or of results files with gnuplot (the scripts\n"
    "in plots/), with the run's settings in each subtitle: d, heads, threads, precision,\n"
    "CPU, commit and date, read from the files' own `#` metadata and setting columns. A\n"
    "file's first line names its experiment and so its figures:\n"
    "  scaling      scaling_time, scaling_memory, scaling_gflops (with <file>_fit.csv)\n"
    "  scaling_train  scaling_train (scaling --pass train: forward + backward)\n"
    "  crossover    crossover\n"
    "  decode       decode\n"
    "  accuracy     accuracy_error, accuracy_distance\n"
    "  approx       approx\n"
    "  params       params\n"
    "  block        block\n"
    "  complexity   complexity (with <file>_fit.csv)\n"
    "  roofline     roofline\n"
    "  scores       scores\n"
    "Several files of scaling, crossover or decode (or one file holding several d, heads,\n"
    "...) are overlaid in one figure: the legend names the setting that differs (d = 32,\n"
    "d = 64). Several files of the other experiments give one figure each (block.png,\n"
    "block_2.png, ...). A run whose file says `# noisy: yes` is titled \"(noisy run)\".\n"
    "Points not measured (skipped_mem, skipped_time, error) are drawn as hollow markers at\n"
    "the bottom of the axis with their status; a crossover beyond the largest N swept as\n"
    "an arrow up from it. Timing bars are the interquartile range (q1_s..q3_s) when the\n"
    "files have those columns, else min..max; each figure says which.\n"
    "\n"
    "  --from DIR|FILE...  results folders (their *.csv) and files (default results)\n"
    "  --out DIR           where the figures go (default: the first input of --from if\n"
    "                      it is a folder, else the folder of that file)\n"
    "  --format LIST       png, svg or png,svg (default png,svg)\n"
    "\n"
    "A figure is written under a temporary name and renamed when complete: never a part\n"
    "of one. Needs gnuplot (Debian: apt-get install gnuplot-nox). The scripts are found in\n"
    "$LINATTN_PLOTS, else in plots/ beside the build folder of this program, else ./plots.\n"
    "`make plots RESULTS=DIR` runs it (figures of results/ go to plots/, of another DIR\n"
    "into DIR).\n";

void cmd_plot_help(FILE *out)
{
    fputs(help_text, out);
}

/* ---------------------------------------------------------------- what is drawn */

enum { MAX_SCRIPTS = 3, MAX_INPUTS = 64, MAX_GROUPS = 32, MAX_FACTS = 16, MAX_VALUES = 16 };

/* One experiment with figures: its scripts (plots/<name>.gp), whether they overlay
 * several files, the columns that are its x axis rather than a setting, and the suffix
 * of its companion file (record_sibling_path), "" for none. */
typedef struct {
    const char *experiment;
    const char *scripts[MAX_SCRIPTS + 1];
    int overlay;
    const char *axis_columns[4];
    const char *aux_suffix;
} figure_kind;

static const figure_kind figures[] = {
    {"scaling", {"scaling_time", "scaling_memory", "scaling_gflops", NULL}, 1, {"n", NULL}, "fit"},
    {"scaling_train", {"scaling_train", NULL}, 0, {"n", NULL}, ""},
    {"crossover", {"crossover", NULL}, 1, {"d", NULL}, ""},
    {"decode", {"decode", NULL}, 1, {"t_first", NULL}, ""},
    {"accuracy", {"accuracy_error", "accuracy_distance", NULL}, 0, {"n", NULL}, ""},
    {"approx", {"approx", NULL}, 0, {"flops", NULL}, ""},
    {"params", {"params", NULL}, 0, {"d_model", NULL}, ""},
    {"block", {"block", NULL}, 0, {"n", NULL}, ""},
    {"complexity", {"complexity", NULL}, 0, {"n", NULL}, "fit"},
    {"roofline", {"roofline", NULL}, 0, {"n", "d", "dtype", NULL}, ""},
    {"scores", {"scores", NULL}, 0, {"d_k", NULL}, ""},
};
enum { N_FIGURES = sizeof figures / sizeof figures[0] };

/* Files drawn with another's figure (given alone they are refused, in a folder skipped). */
static const char *const companions[] = {"scaling_fit", "scaling_train_fit", "crossover_points",
                                         "complexity_fit", NULL};

/* The columns that are settings of a run, and how a value is shown. */
typedef struct {
    const char *column, *format;
} setting;
static const setting settings[] = {
    {"d", "d = %s"},       {"d_k", "d_k = %s"},   {"d_v", "d_v = %s"},
    {"heads", "%s heads"}, {"batch", "batch %s"}, {"d_model", "D = %s"},
    {"d_ff", "d_ff = %s"}, {"tokens", "T = %s"},  {"threads", "%s threads"},
    {"precision", "%s"},   {"dtype", "%s"},       {"kernel_width", "k = %s"},
    {"window", "r = %s"},
};
enum { N_SETTINGS = sizeof settings / sizeof settings[0] };

/* ---------------------------------------------------------------- one results file */

typedef struct {
    char path[PATH_MAX]; /* absolute */
    char experiment[64];
    const figure_kind *kind;
    char cpu[128], commit[96], date[32], threads[16], precision[16], noisy[8];
    char aux[PATH_MAX];       /* companion file, "" when there is none */
    char header[4096];        /* the header row */
    char aux_header[4096];    /* the companion's */
    int n_values[N_SETTINGS]; /* distinct values of each setting column (0: no column) */
    char values[N_SETTINGS][MAX_VALUES][32];
    int n_combos; /* the combinations of the settings that vary that rows have: */
    unsigned char combo[MAX_GROUPS][N_SETTINGS]; /* indices into values, in row order */
} csv_file;

/* "column" is a field of the header row "a,b,c" */
static int has_column(const char *header, const char *column)
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
            axis |= strcmp(*a, settings[s].column) == 0;
        if (axis || !has_column(f->header, settings[s].column)) continue;
        for (size_t i = 0; i < record_count(r); i++) {
            char v[32];
            if (record_get_str(r, record_row_at(r, i), settings[s].column, v, sizeof v) || !v[0] ||
                strpbrk(v, " '"))
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
                record_get_str(r, record_row_at(r, i), settings[s].column, v, sizeof v))
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
    for (const char *const *c = companions; *c; c++)
        if (strcmp(*c, experiment) == 0) return 1;
    return 0;
}

static const char *kind_names(void)
{
    static char buf[256];
    buf[0] = 0;
    for (size_t i = 0; i < N_FIGURES; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "",
                 figures[i].experiment);
    return buf;
}

/* Reads path into f. explicit: the user named the file (a file with no figure is an
 * error); else it came from a folder (skipped: returns 1). Returns 0, 1 or 2. */
static int load_file(const char *path, int explicit, csv_file *f)
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
        if (strcmp(figures[i].experiment, f->experiment) == 0) f->kind = &figures[i];
    if (!f->kind) {
        if (!explicit) return 1;
        if (is_companion(f->experiment))
            return cli_fail("plot", "%s: a %s file is drawn with the file it belongs to; give that",
                            path, f->experiment);
        return cli_fail("plot", "%s: no figure for a '%s' file (figures exist for %s)", path,
                        f->experiment, kind_names());
    }
    if (!f->precision[0] && !has_column(f->header, "precision") && !has_column(f->header, "dtype"))
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
static int load_folder(const char *dir, csv_file *files, size_t *n_files)
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
        int r = rc ? 0 : load_file(names[i], 0, &files[*n_files]);
        if (r == 2) rc = 2;
        if (r == 0 && rc == 0) (*n_files)++, found++;
        free(names[i]);
    }
    if (rc == 0 && found == 0)
        rc = cli_fail("plot", "%s: no results file with a figure (%s)", dir, kind_names());
    return rc;
}

/* ---------------------------------------------------------------- groups and facts */

/* One group of rows: a file and the values of its varying settings. Its facts are the
 * settings and metadata as shown ("d = 64", "commit 6382cac"), each under a key. */
typedef struct {
    const csv_file *file;
    char where[256]; /* "d_k=32 heads=8": the rows of the group ("" all) */
    char aux_where[256];
    int n_facts;
    char fact_key[MAX_FACTS][16];
    char fact[MAX_FACTS][160];
    char label[256];
} group;

static void add_fact(group *g, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void add_fact(group *g, const char *key, const char *fmt, ...)
{
    if (g->n_facts >= MAX_FACTS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->fact[g->n_facts], sizeof g->fact[0], fmt, ap);
    va_end(ap);
    snprintf(g->fact_key[g->n_facts++], sizeof g->fact_key[0], "%s", key);
}

static const char *fact_of(const group *g, const char *key)
{
    for (int i = 0; i < g->n_facts; i++)
        if (strcmp(g->fact_key[i], key) == 0) return g->fact[i];
    return NULL;
}

/* A setting as its format shows it, "1 head" rather than "1 heads". */
static void add_setting(group *g, const char *key, const char *format, const char *value)
{
    char shown[160];
    snprintf(shown, sizeof shown, format, value);
    size_t len = strlen(shown);
    if (strcmp(value, "1") == 0 && strncmp(format, "%s ", 3) == 0 && shown[len - 1] == 's')
        shown[len - 1] = 0;
    add_fact(g, key, "%s", shown);
}

/* The facts of a group whose setting s has the value value[s] ("" when it varies in the
 * file and is not fixed by the group). */
static void make_facts(group *g, char value[N_SETTINGS][32])
{
    const char *dk = NULL, *dv = NULL;
    for (size_t s = 0; s < N_SETTINGS; s++) {
        if (strcmp(settings[s].column, "d_k") == 0) dk = value[s];
        if (strcmp(settings[s].column, "d_v") == 0) dv = value[s];
    }
    for (size_t s = 0; s < N_SETTINGS; s++) {
        const char *c = settings[s].column, *v = value[s];
        if (!v[0]) continue;
        if (strcmp(c, "d_k") == 0 && dv && dv[0] && strcmp(dk, dv) == 0) {
            add_fact(g, "d", "d = %s", v); /* d_k = d_v */
            continue;
        }
        if (strcmp(c, "d_v") == 0 && dk && dk[0] && strcmp(dk, dv) == 0) continue;
        if (strcmp(c, "precision") == 0 || strcmp(c, "dtype") == 0) c = "precision";
        add_setting(g, c, settings[s].format, v);
    }
    const csv_file *f = g->file;
    if (!fact_of(g, "threads") && f->threads[0])
        add_setting(g, "threads", "%s threads", f->threads);
    if (!fact_of(g, "precision") && f->precision[0]) add_fact(g, "precision", "%s", f->precision);
    if (f->cpu[0]) add_fact(g, "cpu", "%s", f->cpu);
    if (f->commit[0]) add_fact(g, "commit", "commit %s", f->commit);
    if (f->date[0]) /* 2026-11-23T20:28:52Z -> 2026-11-23 20:28 UTC */
        add_fact(g, "date", "%.10s %.5s UTC", f->date, strlen(f->date) > 11 ? f->date + 11 : "");
}

/* The groups of file f: one per combination of the settings that vary in it that its
 * rows have (only overlays split a file; the others draw it whole). Returns the count
 * added. */
static size_t file_groups(const csv_file *f, int split, group *out, size_t room)
{
    size_t added = 0;
    for (int c = 0; c < (split ? f->n_combos : 1) && added < room; c++) {
        group *g = &out[added++];
        memset(g, 0, sizeof *g);
        g->file = f;
        char value[N_SETTINGS][32];
        for (size_t s = 0; s < N_SETTINGS; s++) {
            const int varies = f->n_values[s] > 1;
            snprintf(value[s], sizeof value[s], "%s",
                     !varies && f->n_values[s] == 1 ? f->values[s][0]
                     : varies && split              ? f->values[s][f->combo[c][s]]
                                                    : "");
            if (!varies || !split) continue;
            snprintf(g->where + strlen(g->where), sizeof g->where - strlen(g->where), "%s%s=%s",
                     g->where[0] ? " " : "", settings[s].column, value[s]);
            if (f->aux[0] && has_column(f->aux_header, settings[s].column))
                snprintf(g->aux_where + strlen(g->aux_where),
                         sizeof g->aux_where - strlen(g->aux_where), "%s%s=%s",
                         g->aux_where[0] ? " " : "", settings[s].column, value[s]);
        }
        make_facts(g, value);
    }
    return added;
}

/* Whether fact i of group a is the same in all n groups. */
static int fact_shared(const group *g, size_t n, const group *a, int i)
{
    for (size_t j = 0; j < n; j++) {
        const char *other = fact_of(&g[j], a->fact_key[i]);
        if (!other || strcmp(other, a->fact[i]) != 0) return 0;
    }
    return 1;
}

/* The machine and the version: they name groups only when no setting does. */
static int is_run_fact(const char *key)
{
    return strcmp(key, "cpu") == 0 || strcmp(key, "commit") == 0 || strcmp(key, "date") == 0;
}

/* The facts every group shares, joined into subtitle; each group's label from the facts
 * that differ: the settings (d = 32), else the run (commit, date), else the file's name;
 * ", noisy" for a noisy run among quiet ones. */
static void subtitle_and_labels(group *g, size_t n, char *subtitle, size_t size)
{
    subtitle[0] = 0;
    for (int i = 0; i < g[0].n_facts; i++)
        if (fact_shared(g, n, &g[0], i))
            snprintf(subtitle + strlen(subtitle), size - strlen(subtitle), "%s%s",
                     subtitle[0] ? ", " : "", g[0].fact[i]);
    int noisy = 0;
    for (size_t k = 0; k < n; k++)
        noisy += g[k].file->noisy[0] != 0;
    for (size_t k = 0; k < n && n > 1; k++) {
        group *a = &g[k];
        for (int run = 0; run < 2 && !a->label[0]; run++)
            for (int i = 0; i < a->n_facts; i++)
                if (is_run_fact(a->fact_key[i]) == run && !fact_shared(g, n, a, i))
                    snprintf(a->label + strlen(a->label), sizeof a->label - strlen(a->label),
                             "%s%s", a->label[0] ? ", " : "", a->fact[i]);
        if (!a->label[0]) { /* same settings: name the file (its folder and name) */
            const char *p = a->file->path, *slash = strrchr(p, '/'), *prev = slash;
            while (prev && prev > p && prev[-1] != '/')
                prev--;
            snprintf(a->label, sizeof a->label, "%.200s", prev && prev > p ? prev : p);
        }
        if (a->file->noisy[0] && noisy < (int)n)
            snprintf(a->label + strlen(a->label), sizeof a->label - strlen(a->label), ", noisy");
    }
}

/* ---------------------------------------------------------------- gnuplot */

/* A growing string for the -e assignments. */
typedef struct {
    char *s;
    size_t len, cap;
    int failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || t->failed) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = 2 * (t->len + (size_t)n + 1);
        char *s = realloc(t->s, cap);
        if (!s) {
            t->failed = 1;
            return;
        }
        t->s = s, t->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* s as a gnuplot single-quoted string, the only kind whose one special character is
 * the quote itself ('' for a quote): what a file holds stays a string. A control
 * character (paths with one are refused before) shows as a space; enhanced: also escape
 * the characters enhanced text gives a meaning (_ ^ { } @ & ~ \) so they show as
 * written. */
static void put_quoted(text *t, const char *s, int enhanced)
{
    put(t, "'");
    for (; *s; s++) {
        if (*s == '\'')
            put(t, "''");
        else if ((unsigned char)*s < 0x20 || *s == 0x7f)
            put(t, " ");
        else if (enhanced && strchr("_^{}@&~\\", *s))
            put(t, "\\%c", *s);
        else
            put(t, "%c", *s);
    }
    put(t, "'");
}

/* array name[n] = [items...] */
static void put_array(text *t, const char *name, const char *const *items, size_t n, int enhanced)
{
    put(t, "array %s[%zu] = [", name, n);
    for (size_t i = 0; i < n; i++) {
        if (i) put(t, ", ");
        put_quoted(t, items[i], enhanced);
    }
    put(t, "]; ");
}

static int gnuplot_found(void)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
        size_t len = strcspn(p, ":");
        snprintf(buf, sizeof buf, "%.*s/gnuplot", (int)len, len ? p : ".");
        if (access(buf, X_OK) == 0) return 1;
        p += len + (p[len] == ':');
    }
    return 0;
}

/* The folder of the scripts: $LINATTN_PLOTS, plots/ up to three folders above this
 * program (build/linattn, build/asan/linattn), share/linattn/plots beside an installed
 * one, ./plots. */
static int find_scripts(char *dir, size_t size)
{
    char candidate[PATH_MAX + 64];
    const char *env = getenv("LINATTN_PLOTS");
    if (env && *env) {
        snprintf(candidate, sizeof candidate, "%s/style.gpi", env);
        if (access(candidate, R_OK) != 0)
            return cli_fail("LINATTN_PLOTS", "%s has no style.gpi (the folder of plots/*.gp)", env);
        return realpath(env, dir) ? 0 : cli_fail("LINATTN_PLOTS", "%s", strerror(errno));
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = 0;
    static const char *const tails[] = {"/../plots", "/../../plots", "/../../../plots",
                                        "/../share/linattn/plots"};
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    for (size_t i = 0; i < sizeof tails / sizeof *tails + 1; i++) {
        if (i < sizeof tails / sizeof *tails)
            snprintf(candidate, sizeof candidate, "%s%s", exe, tails[i]);
        else
            snprintf(candidate, sizeof candidate, "plots");
        char style[PATH_MAX + 80];
        snprintf(style, sizeof style, "%s/style.gpi", candidate);
        if ((i < sizeof tails / sizeof *tails && !slash) || access(style, R_OK) != 0) continue;
        if (realpath(candidate, dir) && strlen(dir) < size) return 0;
    }
    return cli_fail("plot", "cannot find the gnuplot scripts (plots/style.gpi); set "
                            "LINATTN_PLOTS to the plots folder of linattn's sources");
}

/* Runs `gnuplot -e setup script.gp` in dir with the fds open in it; its stderr is
 * collected: on failure its last line is the error, on success each line is passed on
 * as a note. Returns 0 or 2. */
static int run_gnuplot(const char *dir, const char *script, const char *setup, const int *fds,
                       size_t n_fds, const char *what)
{
    char file[256];
    snprintf(file, sizeof file, "%s.gp", script);
    int pipefd[2];
    if (pipe(pipefd) != 0) return cli_fail("plot", "pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]), close(pipefd[1]);
        return cli_fail("plot", "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]), close(pipefd[1]);
        for (size_t i = 0; i < n_fds; i++) /* the outputs stay open across exec */
            fcntl(fds[i], F_SETFD, 0);
        if (chdir(dir) != 0) _exit(126);
        execlp("gnuplot", "gnuplot", "-e", setup, file, (char *)NULL);
        _exit(127);
    }
    close(pipefd[1]);
    char *log = NULL;
    size_t len = 0, cap = 0;
    char chunk[4096];
    ssize_t got;
    while ((got = read(pipefd[0], chunk, sizeof chunk)) != 0) {
        if (got < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (len + (size_t)got + 1 > cap) {
            char *grown = realloc(log, cap = 2 * (len + (size_t)got + 1));
            if (!grown) break;
            log = grown;
        }
        memcpy(log + len, chunk, (size_t)got);
        len += (size_t)got;
    }
    close(pipefd[0]);
    if (log) log[len] = 0;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    /* the last non-empty line, or each line as a note */
    char last[512] = "", previous[512] = "";
    for (char *line = log; line && *line;) {
        size_t l = strcspn(line, "\n");
        int blank = strspn(line, " \t^") >= l;
        if (!blank) {
            snprintf(last, sizeof last, "%.*s", (int)l, line);
            if (ok && strcmp(last, previous) != 0) /* a warning repeated per panel: once */
                cli_line("plot: note: %s: %s", what, last);
            memcpy(previous, last, sizeof last);
        }
        line += l + (line[l] == '\n');
    }
    free(log);
    if (ok) return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        return cli_fail("plot", "cannot run gnuplot (install it: apt-get install gnuplot-nox)");
    return cli_fail("plot", "%s: gnuplot failed: %s", what, last[0] ? last : "no message");
}

/* Whether the figure gnuplot wrote to fd is whole: a PNG ends with its IEND chunk, an
 * SVG with </svg> (gnuplot may exit 0 after a write failed, on a full disk). */
static int figure_whole(int fd, int svg)
{
    struct stat st;
    char tail[64];
    if (fstat(fd, &st) != 0 || st.st_size < 12) return 0;
    size_t n = st.st_size < (off_t)sizeof tail ? (size_t)st.st_size : sizeof tail;
    if (pread(fd, tail, n, st.st_size - (off_t)n) != (ssize_t)n) return 0;
    if (!svg) return memcmp(tail + n - 12, "\0\0\0\0IEND\xae\x42\x60\x82", 12) == 0;
    while (n > 0 && strchr(" \t\r\n", tail[n - 1]))
        n--;
    return n >= 6 && memcmp(tail + n - 6, "</svg>", 6) == 0;
}

typedef struct {
    char scripts[PATH_MAX];
    char out_dir[PATH_MAX];
    int png, svg;
} plot_config;

/* Draws script over the groups into out_dir/<name>.png|svg. Returns 0 or 2. */
static int render(const plot_config *c, const char *script, const char *name, group *g, size_t n)
{
    char subtitle[1024];
    subtitle_and_labels(g, n, subtitle, sizeof subtitle);
    int noisy = 0;
    for (size_t i = 0; i < n; i++)
        noisy |= g[i].file->noisy[0] != 0;

    la_outfile out[2];
    int fds[2];
    size_t n_out = 0;
    const char *fmt_names[2] = {"png", "svg"};
    const int wanted[2] = {c->png, c->svg};
    char path[2][PATH_MAX + 300];
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        if (!wanted[k]) continue;
        snprintf(path[k], sizeof path[k], "%s/%s.%s", c->out_dir, name, fmt_names[k]);
        const char *why = NULL;
        if (la_outfile_open(&out[n_out], path[k], &why) != LA_OK)
            rc = cli_fail("plot", "%s: cannot write: %s", path[k], why ? why : "error");
        else
            fds[n_out] = out[n_out].fd, n_out++;
    }

    text t = {0};
    put(&t, "formats = '%s%s%s'; ", c->png ? "png" : "", c->png && c->svg ? " " : "",
        c->svg ? "svg" : "");
    put(&t, "out = ");
    put_quoted(&t, path[c->png ? 0 : 1], 0);
    put(&t, "; ");
    for (size_t k = 0, i = 0; k < 2; k++)
        if (wanted[k]) put(&t, "out_%s = '/dev/fd/%d'; ", fmt_names[k], fds[i++]);
    put(&t, "subtitle = ");
    put_quoted(&t, subtitle, 1);
    put(&t, "; noisy = %d; data = ", noisy);
    put_quoted(&t, g[0].file->path, 0);
    put(&t, "; fits = ");
    put_quoted(&t, g[0].file->aux, 0);
    put(&t, "; ngroups = %zu; ", n);
    const char *field[5][MAX_GROUPS];
    for (size_t i = 0; i < n; i++) {
        field[0][i] = g[i].file->path;
        field[1][i] = g[i].file->aux;
        field[2][i] = g[i].where;
        field[3][i] = g[i].aux_where;
        field[4][i] = g[i].label;
    }
    put_array(&t, "gfile", field[0], n, 0);
    put_array(&t, "gaux", field[1], n, 0);
    put_array(&t, "gwhere", field[2], n, 0);
    put_array(&t, "gauxwhere", field[3], n, 0);
    put_array(&t, "glabel", field[4], n, 1);
    if (t.failed && rc == 0) rc = cli_fail("plot", "out of memory");

    if (rc == 0) rc = run_gnuplot(c->scripts, script, t.s, fds, n_out, script);
    for (size_t i = 0, k = 0; i < n_out && rc == 0; i++, k++) {
        while (!wanted[k])
            k++;
        struct stat st;
        const char *why = NULL;
        if (fstat(out[i].fd, &st) != 0 || st.st_size == 0)
            rc = cli_fail("plot", "%s: gnuplot wrote nothing to %s", script, path[k]);
        else if (!figure_whole(out[i].fd, k == 1))
            rc = cli_fail("plot", "%s: %s is incomplete (a full disk?); the old figure is kept",
                          script, path[k]);
        else if (la_outfile_commit(&out[i], &why) != LA_OK)
            rc = cli_fail("plot", "%s: cannot write: %s", path[k], why ? why : "error");
    }
    for (size_t i = 0; i < n_out; i++)
        la_outfile_close(&out[i]);
    if (rc == 0)
        printf("plot: %s/%s%s%s\n", c->out_dir, name,
               c->png && c->svg ? ".png, .svg"
               : c->png         ? ".png"
                                : ".svg",
               n > 1 ? " (overlay)" : "");
    free(t.s);
    return rc;
}

/* ---------------------------------------------------------------- the command */

/* mkdir -p */
static int make_dir(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return cli_fail("--out", "path too long");
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char ch = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return cli_fail("--out", "%s: cannot create the folder: %s", buf, strerror(errno));
            *p = ch;
            if (!ch) break;
        }
    }
    return 0;
}

int cmd_plot(int argc, char **argv)
{
    /* --from takes every argument up to the next flag; the rest go to cli_parse_flags */
    const char *from[MAX_INPUTS];
    size_t n_from = 0;
    char *rest[64];
    int n_rest = 0, seen_from = 0;
    rest[n_rest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--from") == 0 || strncmp(argv[i], "--from=", 7) == 0) {
            if (seen_from) return cli_fail("--from", "given more than once");
            seen_from = 1;
            if (argv[i][6] == '=' && argv[i][7]) from[n_from++] = argv[i] + 7;
            while (argv[i][6] != '=' && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) {
                if (n_from == MAX_INPUTS)
                    return cli_fail("--from", "more than %d inputs", MAX_INPUTS);
                from[n_from++] = argv[++i];
            }
            if (n_from == 0) return cli_fail("--from", "needs a folder or a file");
        } else if (n_rest < 63) {
            rest[n_rest++] = argv[i];
        } else {
            return cli_fail("plot", "too many arguments");
        }
    }
    rest[n_rest] = NULL;
    const char *out_text = NULL, *format_text = NULL;
    const cli_flag flags[] = {
        {"out", &out_text, NULL},
        {"format", &format_text, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(n_rest, rest, flags);
    if (rc) return rc;
    plot_config c = {.png = 1, .svg = 1};
    if (format_text) {
        static const char *const formats[] = {"png", "svg", NULL};
        int which[2];
        size_t count;
        if ((rc = cli_parse_choice_list("--format", format_text, formats, which, 2, &count)))
            return rc;
        c.png = c.svg = 0;
        for (size_t i = 0; i < count; i++)
            *(which[i] ? &c.svg : &c.png) = 1;
    }
    if (n_from == 0) from[n_from++] = "results";

    /* everything is read and checked before anything is written */
    if (!gnuplot_found())
        return cli_fail("plot", "gnuplot not found: install it (Debian: apt-get install "
                                "gnuplot-nox, or make deps)");
    if ((rc = find_scripts(c.scripts, sizeof c.scripts))) return rc;
    csv_file *files = calloc(MAX_INPUTS, sizeof *files);
    group *groups = calloc(MAX_GROUPS, sizeof *groups);
    if (!files || !groups) {
        free(files), free(groups);
        return cli_fail("plot", "out of memory");
    }
    size_t n_files = 0;
    for (size_t i = 0; i < n_from && rc == 0; i++) {
        struct stat st;
        if (stat(from[i], &st) != 0)
            rc = cli_fail("--from", "%s: %s", from[i], strerror(errno));
        else if (S_ISDIR(st.st_mode))
            rc = load_folder(from[i], files, &n_files);
        else if (n_files == MAX_INPUTS)
            rc = cli_fail("--from", "more than %d results files", MAX_INPUTS);
        else if ((rc = load_file(from[i], 1, &files[n_files])) == 0)
            n_files++;
    }
    if (rc == 0) { /* the output folder: --out, else the first input's folder */
        char first[PATH_MAX];
        snprintf(first, sizeof first, "%s", from[0]);
        struct stat st;
        if (!out_text && stat(first, &st) == 0 && !S_ISDIR(st.st_mode)) {
            char *slash = strrchr(first, '/'); /* its folder: "dir/", or "." */
            if (slash)
                slash[1] = 0;
            else
                strcpy(first, ".");
        }
        const char *dir = out_text ? out_text : first;
        if ((rc = make_dir(dir)) == 0 && !realpath(dir, c.out_dir))
            rc = cli_fail("--out", "%s: %s", dir, strerror(errno));
    }

    /* per experiment: an overlay of all its files, or one figure per file */
    for (size_t k = 0; k < N_FIGURES && rc == 0; k++) {
        const figure_kind *kind = &figures[k];
        size_t n_groups = 0, nth = 0;
        for (size_t i = 0; i < n_files && rc == 0; i++) {
            if (files[i].kind != kind) continue;
            if (!kind->overlay) n_groups = 0;
            if (n_groups + (size_t)(kind->overlay ? files[i].n_combos : 1) > MAX_GROUPS) {
                rc = cli_fail("plot", "%s: more than %d runs to overlay in one figure",
                              kind->experiment, MAX_GROUPS);
                break;
            }
            n_groups +=
                file_groups(&files[i], kind->overlay, groups + n_groups, MAX_GROUPS - n_groups);
            if (kind->overlay) continue;
            nth++;
            for (const char *const *s = kind->scripts; *s && rc == 0; s++) {
                char name[128];
                snprintf(name, sizeof name, nth > 1 ? "%s_%zu" : "%s", *s, nth);
                rc = render(&c, *s, name, groups, 1);
            }
        }
        if (kind->overlay && n_groups > 0)
            for (const char *const *s = kind->scripts; *s && rc == 0; s++)
                rc = render(&c, *s, *s, groups, n_groups);
    }
    free(files);
    free(groups);
    return rc;
}

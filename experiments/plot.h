/* plot.h — what the files of `linattn plot` share: the table of figures
 * (plot_figures.c), a results file read (plot_files.c), its groups of rows and their facts
 * (plot_groups.c), and gnuplot run on them (plot_gnuplot.c). */
#ifndef LA_PLOT_H
#define LA_PLOT_H

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
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

/* The columns that are settings of a run, and how a value is shown. */
typedef struct {
    const char *column, *format;
} setting;

/* The lengths of plot_figures and plot_settings (plot_figures.c checks them against
 * the tables). */
enum { N_FIGURES = 15, N_SETTINGS = 13 };

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

typedef struct {
    char scripts[PATH_MAX];
    char out_dir[PATH_MAX];
    int png, svg;
} plot_config;

/* plot_figures.c */
extern const figure_kind plot_figures[];
/* Files drawn with another's figure, NULL-terminated. */
extern const char *const plot_companions[];
extern const setting plot_settings[];

/* plot_files.c */
int plot_has_column(const char *header, const char *column);
int plot_load_file(const char *path, int explicit, csv_file *f);
int plot_load_folder(const char *dir, csv_file *files, size_t *n_files);

/* plot_groups.c */
size_t plot_file_groups(const csv_file *f, int split, group *out, size_t room);
void plot_subtitle_and_labels(group *g, size_t n, char *subtitle, size_t size);

/* plot_gnuplot.c */
int plot_gnuplot_found(void);
int plot_find_scripts(char *dir, size_t size);
int plot_render(const plot_config *c, const char *script, const char *name, group *g, size_t n);

#endif

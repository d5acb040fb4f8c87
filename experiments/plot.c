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
#include "plot.h"

#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "commands.h"
#include "common/cli.h"
#include "common/record.h"
#include "io/outfile.h"
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
    "  dist_scaling dist_scaling (with the dist_model.csv beside it)\n"
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
    if (!plot_gnuplot_found())
        return cli_fail("plot", "gnuplot not found: install it (Debian: apt-get install "
                                "gnuplot-nox, or make deps)");
    if ((rc = plot_find_scripts(c.scripts, sizeof c.scripts))) return rc;
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
            rc = plot_load_folder(from[i], files, &n_files);
        else if (n_files == MAX_INPUTS)
            rc = cli_fail("--from", "more than %d results files", MAX_INPUTS);
        else if ((rc = plot_load_file(from[i], 1, &files[n_files])) == 0)
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
        const figure_kind *kind = &plot_figures[k];
        size_t n_groups = 0, nth = 0;
        for (size_t i = 0; i < n_files && rc == 0; i++) {
            if (files[i].kind != kind) continue;
            if (!kind->overlay) n_groups = 0;
            if (n_groups + (size_t)(kind->overlay ? files[i].n_combos : 1) > MAX_GROUPS) {
                rc = cli_fail("plot", "%s: more than %d runs to overlay in one figure",
                              kind->experiment, MAX_GROUPS);
                break;
            }
            n_groups += plot_file_groups(&files[i], kind->overlay, groups + n_groups,
                                         MAX_GROUPS - n_groups);
            if (kind->overlay) continue;
            nth++;
            for (const char *const *s = kind->scripts; *s && rc == 0; s++) {
                char name[128];
                snprintf(name, sizeof name, nth > 1 ? "%s_%zu" : "%s", *s, nth);
                rc = plot_render(&c, *s, name, groups, 1);
            }
        }
        if (kind->overlay && n_groups > 0)
            for (const char *const *s = kind->scripts; *s && rc == 0; s++)
                rc = plot_render(&c, *s, *s, groups, n_groups);
    }
    free(files);
    free(groups);
    return rc;
}

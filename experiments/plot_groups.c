/* plot_groups.c — the groups of rows a figure draws, their facts, the subtitle and the
 * legend (plot.h). */
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
        if (strcmp(plot_settings[s].column, "d_k") == 0) dk = value[s];
        if (strcmp(plot_settings[s].column, "d_v") == 0) dv = value[s];
    }
    for (size_t s = 0; s < N_SETTINGS; s++) {
        const char *c = plot_settings[s].column, *v = value[s];
        if (!v[0]) continue;
        if (strcmp(c, "d_k") == 0 && dv && dv[0] && strcmp(dk, dv) == 0) {
            add_fact(g, "d", "d = %s", v); /* d_k = d_v */
            continue;
        }
        if (strcmp(c, "d_v") == 0 && dk && dk[0] && strcmp(dk, dv) == 0) continue;
        if (strcmp(c, "precision") == 0 || strcmp(c, "dtype") == 0) c = "precision";
        add_setting(g, c, plot_settings[s].format, v);
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
size_t plot_file_groups(const csv_file *f, int split, group *out, size_t room)
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
                     g->where[0] ? " " : "", plot_settings[s].column, value[s]);
            if (f->aux[0] && plot_has_column(f->aux_header, plot_settings[s].column))
                snprintf(g->aux_where + strlen(g->aux_where),
                         sizeof g->aux_where - strlen(g->aux_where), "%s%s=%s",
                         g->aux_where[0] ? " " : "", plot_settings[s].column, value[s]);
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
void plot_subtitle_and_labels(group *g, size_t n, char *subtitle, size_t size)
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

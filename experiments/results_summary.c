/* results_summary.c — the summary of a results folder, SUMMARY.md: reading the files and
 * the sections in order (results.h). */
#include "results.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the summary */

/* The summary is Markdown: printed, and kept as SUMMARY.md in the results folder. Each
 * number is one the README quotes, from the CSV files by column name; its spread is
 * the interquartile range (q1_s..q3_s) where the files have those columns, else the
 * min..max of the repetitions, and it says which. */

record_file *results_load(const config *c, const char *file, int n_key)
{
    char path[PATH_MAX + 64], err[512];
    snprintf(path, sizeof path, "%s/%s", c->out_dir, file);
    return record_load(path, n_key, err, sizeof err);
}

/* The value of a `# key: value` line of path, or "" (buf of size bytes). */
const char *results_meta_value(const config *c, const char *file, const char *key, char *buf,
                               size_t size)
{
    char path[PATH_MAX + 64], line[1024];
    snprintf(path, sizeof path, "%s/%s", c->out_dir, file);
    buf[0] = 0;
    FILE *in = fopen(path, "r");
    if (!in) return buf;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, in)) {
        if (line[0] != '#') continue;
        if (strncmp(line + 2, key, klen) == 0 && line[2 + klen] == ':') {
            snprintf(buf, size, "%s", line + 3 + klen + (line[3 + klen] == ' '));
            buf[strcspn(buf, "\n")] = 0;
        }
    }
    fclose(in);
    return buf;
}

int results_is_ok(const record_file *f, const char *row)
{
    char status[32];
    return record_get_str(f, row, "status", status, sizeof status) == 0 &&
           strcmp(status, "ok") == 0;
}

int results_text_is(const record_file *f, const char *row, const char *column, const char *value)
{
    char buf[128];
    return record_get_str(f, row, column, buf, sizeof buf) == 0 && strcmp(buf, value) == 0;
}

/* "5.6 s", "2.3 ms", "19 µs", "850 ns" */
const char *results_fmt_time(double s, char *buf, size_t size)
{
    if (!isfinite(s))
        snprintf(buf, size, "-");
    else if (s >= 1)
        snprintf(buf, size, "%.3g s", s);
    else if (s >= 1e-3)
        snprintf(buf, size, "%.3g ms", 1e3 * s);
    else if (s >= 1e-6)
        snprintf(buf, size, "%.3g µs", 1e6 * s);
    else
        snprintf(buf, size, "%.3g ns", 1e9 * s);
    return buf;
}

/* "62", "3.4": a ratio to two digits at least */
const char *results_fmt_ratio(double x, char *buf, size_t size)
{
    snprintf(buf, size, x >= 10 ? "%.0f" : "%.2g", x);
    return buf;
}

/* "74 MB", "4.34 GB" */
const char *results_fmt_bytes(double b, char *buf, size_t size)
{
    if (!isfinite(b) || b < 0)
        snprintf(buf, size, "-");
    else if (b >= 1e9)
        snprintf(buf, size, "%.3g GB", b / 1e9);
    else
        snprintf(buf, size, "%.3g MB", b / 1e6);
    return buf;
}

/* A time and its spread from row: "<median> (IQR a–b)" from <prefix>q1_s and
 * <prefix>q3_s, else "(min–max a–b)" from <prefix>min_s and <prefix>max_s. */
const char *results_time_spread(const record_file *f, const char *row, const char *prefix,
                                char *buf, size_t size)
{
    char col[64], m[32], a[32], b[32];
    double median, lo, hi;
    snprintf(col, sizeof col, "%smedian_s", prefix);
    if (record_get(f, row, col, &median) != 0) {
        snprintf(buf, size, "-");
        return buf;
    }
    const char *kind = "IQR";
    snprintf(col, sizeof col, "%sq1_s", prefix);
    int have = record_get(f, row, col, &lo) == 0;
    snprintf(col, sizeof col, "%sq3_s", prefix);
    have = have && record_get(f, row, col, &hi) == 0;
    if (!have) {
        kind = "min–max";
        snprintf(col, sizeof col, "%smin_s", prefix);
        have = record_get(f, row, col, &lo) == 0;
        snprintf(col, sizeof col, "%smax_s", prefix);
        have = have && record_get(f, row, col, &hi) == 0;
    }
    if (have)
        snprintf(buf, size, "%s (%s %s–%s)", results_fmt_time(median, m, sizeof m), kind,
                 results_fmt_time(lo, a, sizeof a), results_fmt_time(hi, b, sizeof b));
    else
        snprintf(buf, size, "%s", results_fmt_time(median, m, sizeof m));
    return buf;
}

/* The scaling row of series at n (the first group in the file), or NULL. */
const char *results_scaling_row(const record_file *f, const char *series, double n)
{
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double rn;
        if (results_text_is(f, row, "variant", series) && record_get(f, row, "n", &rn) == 0 &&
            rn == n)
            return row;
    }
    return NULL;
}

/* The series of the registry, in registry order, that appear in f's variant column. */
size_t results_series_in(const record_file *f, kernels_series *out)
{
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all), found = 0;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < record_count(f); i++)
            if (results_text_is(f, record_row_at(f, i), "variant", all[k].name)) {
                out[found++] = all[k];
                break;
            }
    return found;
}

/* min and max of column over the ok rows of series with lo <= n <= hi; count of them. */
int results_range_over_n(const record_file *f, const char *series, const char *column, double lo,
                         double hi, double *min, double *max)
{
    int count = 0;
    *min = INFINITY, *max = -INFINITY;
    for (size_t i = 0; i < record_count(f); i++) {
        const char *row = record_row_at(f, i);
        double n, x;
        if (!results_is_ok(f, row) || !results_text_is(f, row, "variant", series) ||
            record_get(f, row, "n", &n) || n < lo || n > hi || record_get(f, row, column, &x))
            continue;
        if (x < *min) *min = x;
        if (x > *max) *max = x;
        count++;
    }
    return count;
}

/* Lists the files of dir whose names end in one of the suffixes. */
static void list_files(FILE *out, const char *dir, const char *const *suffixes)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char *names[256];
    size_t n = 0;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        for (const char *const *s = suffixes; *s; s++) {
            size_t sl = strlen(*s);
            if (len > sl && strcmp(e->d_name + len - sl, *s) == 0) {
                names[n] = malloc(len + 1);
                if (names[n]) memcpy(names[n++], e->d_name, len + 1);
                break;
            }
        }
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort by name */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j];
            names[j] = names[j - 1];
            names[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "- %s/%s\n", dir, names[i]);
        free(names[i]);
    }
}

/* The summary's sections, in the order SUMMARY.md has them: each reads its files from
 * c->out_dir and prints nothing when they are missing. */
static void (*const sections[])(FILE *out, const config *c) = {
    results_summary_forward_time, results_summary_train_time, results_summary_memory_and_rate,
    results_summary_crossover,    results_summary_decode,     results_summary_block,
    results_summary_complexity,   results_summary_roofline,   results_summary_scores,
    results_summary_accuracy,     results_summary_params,
};

/* The summary of the files in c->out_dir: printed, and written to its SUMMARY.md. */
int results_summary(const config *c)
{
    textout_buffer t;
    int rc = textout_open(&t, "results");
    if (rc) return rc;
    FILE *out = t.f;
    char v[7][256];
    const char *from = results_suite[0].file; /* the run's facts: from the first file present */
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", c->out_dir, results_suite[i].file);
        if (access(path, R_OK) == 0) {
            from = results_suite[i].file;
            break;
        }
    }
    fprintf(out, "# Summary of %s\n\n", c->out_dir);
    fprintf(out,
            "Generated by `linattn results --summary` from the CSV files of this folder "
            "(every number below is read from them by column name). Run (from %s's "
            "metadata): commit %s, %s, %s, %s cores, %s threads, load average %s.\n",
            from, results_meta_value(c, from, "git_commit", v[0], sizeof v[0]),
            results_meta_value(c, from, "date", v[1], sizeof v[1]),
            results_meta_value(c, from, "cpu", v[2], sizeof v[2]),
            results_meta_value(c, from, "cores", v[3], sizeof v[3]),
            results_meta_value(c, from, "threads", v[4], sizeof v[4]),
            results_meta_value(c, from, "load_average", v[5], sizeof v[5]));
    /* the machine check of the experiments whose noisy runs the summary reports */
    for (size_t i = 0; i < N_EXPERIMENTS; i++) {
        if (!results_suite[i].noisy_in_summary) continue;
        const char *file = results_suite[i].file;
        results_meta_value(c, file, "noisy", v[6], sizeof v[6]);
        if (strncmp(v[6], "yes", 3) == 0)
            fprintf(out, "\n**%s: noisy run**: %s. Its timings are not reliable.\n", file, v[6]);
    }
    fprintf(out, "\nSpreads: IQR is the interquartile range of the repetitions of a point "
                 "(where the files have q1_s and q3_s), min–max their range otherwise.\n");
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        sections[i](out, c);
    static const char *const csv[] = {".csv", NULL}, *const figs[] = {".png", ".svg", NULL};
    fprintf(out, "\n## Files\n\n");
    list_files(out, c->out_dir, csv);
    list_files(out, c->plots_dir, figs);
    fflush(out);
    fwrite(t.buf, 1, t.len, stdout);
    fflush(stdout);
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/SUMMARY.md", c->out_dir);
    if ((rc = textout_finish(&t, path))) return rc;
    printf("\n(kept as %s)\n", path);
    return 0;
}

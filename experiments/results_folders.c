/* results_folders.c — where `linattn results` writes: a dated run folder and its latest
 * link, or the committed reference with --update (results.h). */
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

/* ---------------------------------------------------------------- folders */

/* mkdir -p */
int results_make_dir(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return cli_fail(path, "path too long");
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == 0) {
            char c = *p;
            *p = 0;
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return cli_fail(path, "cannot create the folder: %s", strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return cli_fail(path, "not a folder");
    return 0;
}

/* 1 when path is the folder reference names here (both existing, the same device and
 * inode) or the repository's own reference folder (common/guard.h), else 0. */
static int same_folder(const char *path, const char *reference)
{
    struct stat a, b;
    if (guard_is_reference_folder(path)) return 1;
    return stat(path, &a) == 0 && stat(reference, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* A new run folder: results/runs/2026-11-23-2035-abc1234[-dirty][-2 …], created. */
static int new_run_folder(config *c)
{
    char date[32], commit[64], *space;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%d-%H%M", &tm);
    snprintf(commit, sizeof commit, "%s", metadata_git_commit());
    if ((space = strchr(commit, ' ')))
        snprintf(space, sizeof commit - (size_t)(space - commit), "-dirty");
    if (strcmp(commit, "unknown") == 0) snprintf(commit, sizeof commit, "nogit");
    int rc = results_make_dir(RUNS);
    if (rc) return rc;
    for (int n = 1; n < 100; n++) {
        if (n == 1)
            snprintf(c->out_buf, sizeof c->out_buf, RUNS "/%s-%s", date, commit);
        else
            snprintf(c->out_buf, sizeof c->out_buf, RUNS "/%s-%s-%d", date, commit, n);
        if (mkdir(c->out_buf, 0777) == 0) {
            c->out_dir = c->out_buf;
            c->new_run = 1;
            return 0;
        }
        if (errno != EEXIST)
            return cli_fail(c->out_buf, "cannot create the folder: %s", strerror(errno));
    }
    return cli_fail(RUNS, "too many run folders named %s-%s", date, commit);
}

/* results/runs/latest -> the run folder (a relative link, replaced in one rename). A
 * failure is a warning: the run is complete without it. */
void results_point_latest(const config *c)
{
    const char *name = strrchr(c->out_dir, '/') + 1;
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, RUNS "/.latest.%ld", (long)getpid());
    unlink(tmp);
    if (symlink(name, tmp) != 0 || rename(tmp, LATEST) != 0) {
        cli_line("warning: %s: cannot point it to %s: %s", LATEST, name, strerror(errno));
        unlink(tmp);
    }
}

/* Where this invocation reads and writes, by the rules of the help. */
int results_choose_folders(config *c)
{
    if (c->update) {
        guard_allow_update(1);
        c->out_dir = REFERENCE_RESULTS;
        c->plots_dir = REFERENCE_PLOTS;
        return 0;
    }
    if (c->out_dir && same_folder(c->out_dir, REFERENCE_RESULTS))
        return cli_fail("--out-dir",
                        "%s holds the committed reference results: replace them "
                        "with --update (make results-update)",
                        c->out_dir);
    if (c->plots_dir && same_folder(c->plots_dir, REFERENCE_PLOTS))
        return cli_fail("--plots-dir",
                        "%s holds the committed reference figures: replace them "
                        "with --update (make results-update)",
                        c->plots_dir);
    if (!c->out_dir && (c->resume || c->summary_only)) {
        if (!realpath(LATEST, c->out_buf))
            return cli_fail(c->resume ? "--resume" : "--summary",
                            "no earlier run: %s: %s (give --out-dir DIR, or --update for the "
                            "reference)",
                            LATEST, strerror(errno));
        c->out_dir = c->out_buf;
    }
    int rc = 0;
    struct stat st;
    if (c->summary_only && c->out_dir) {
        if (stat(c->out_dir, &st) != 0)
            return cli_fail(c->out_dir, "not a results folder: %s", strerror(errno));
        if (!S_ISDIR(st.st_mode)) return cli_fail(c->out_dir, "not a results folder: not a folder");
    }
    if (!c->out_dir && !c->summary_only) rc = new_run_folder(c);
    if (!c->plots_dir) c->plots_dir = c->out_dir;
    return rc;
}

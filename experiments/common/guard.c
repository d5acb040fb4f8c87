/* guard.c — which folders hold the committed reference, and the guard around them.
 * See guard.h. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* realpath */
#endif
#include "guard.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int update_allowed;

void guard_allow_update(int allow)
{
    update_allowed = allow;
}

/* The repository this executable was built in (root of size bytes), or 0: the nearest
 * folder above the executable's that holds lib/linattn.h (build/linattn, build/asan/linattn) */
static int repository(char *root, size_t size)
{
    char exe[PATH_MAX], header[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return 0;
    exe[n] = 0;
    for (int up = 0; up < 4; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash || slash == exe) return 0;
        *slash = 0;
        if (up == 0) continue; /* the executable's own folder is build output */
        snprintf(header, sizeof header, "%s/lib/linattn.h", exe);
        if (access(header, F_OK) == 0) return snprintf(root, size, "%s", exe) < (int)size;
    }
    return 0;
}

static int same_inode(const struct stat *a, const char *path)
{
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* The reference folder folder is (its name, "results" or "plots"), or NULL. */
static const char *reference_name(const char *folder, char *root, size_t size)
{
    struct stat st;
    if (stat(folder, &st) != 0 || !S_ISDIR(st.st_mode) || !repository(root, size)) return NULL;
    static const char *const names[] = {"results", "plots"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/%s", root, names[i]);
        if (same_inode(&st, path)) return names[i];
    }
    return NULL;
}

int guard_is_reference_folder(const char *folder)
{
    char root[PATH_MAX];
    return reference_name(folder, root, sizeof root) != NULL;
}

int guard_check(const char *path, char *err, size_t err_size)
{
    if (update_allowed) return 0;
    /* the folder the file lands in: through a symbolic link when path is one */
    char real[PATH_MAX], folder[PATH_MAX], root[PATH_MAX];
    const char *target = realpath(path, real) ? real : path;
    snprintf(folder, sizeof folder, "%s", target);
    char *slash = strrchr(folder, '/');
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else if (slash == folder)
        folder[1] = 0;
    else
        *slash = 0;
    const char *name = reference_name(folder, root, sizeof root);
    if (!name) return 0;
    snprintf(err, err_size,
             "%s: %s/%s/ holds the committed reference, written only by `linattn results "
             "--update` (make results-update): give a path elsewhere",
             path, root, name);
    return 1;
}

/* outputs.c — a set of .npy outputs committed together (outputs.h). */
#include "outputs.h"
#include "io/outfile.h"

#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The folder and the name a resolved target path (la_outfile's path) is renamed into. */
static int target_folder(const char *path, struct stat *dir, const char **name)
{
    char folder[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else
        snprintf(folder, sizeof folder, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    *name = slash ? slash + 1 : path;
    return stat(folder, dir);
}

/* Whether two open outputs name one file (outputs_paths_alias). */
static int same_target(const la_outfile *a, const la_outfile *b)
{
    struct stat fa, fb;
    if (stat(a->path, &fa) == 0 && stat(b->path, &fb) == 0)
        return fa.st_dev == fb.st_dev && fa.st_ino == fb.st_ino;
    const char *na, *nb;
    if (target_folder(a->path, &fa, &na) != 0 || target_folder(b->path, &fb, &nb) != 0)
        return strcmp(a->path, b->path) == 0;
    return fa.st_dev == fb.st_dev && fa.st_ino == fb.st_ino && strcmp(na, nb) == 0;
}

int outputs_paths_alias(const char *a, const char *b)
{
    la_outfile oa, ob;
    int same = 0;
    if (la_outfile_open(&oa, a, NULL) != LA_OK) return 0; /* the write itself says why */
    if (la_outfile_open(&ob, b, NULL) == LA_OK) {
        same = same_target(&oa, &ob);
        la_outfile_close(&ob);
    }
    la_outfile_close(&oa);
    return same;
}

void outputs_set_init(outputs_set *s)
{
    memset(s, 0, sizeof *s);
}

int outputs_set_add(outputs_set *s, const char *flag, const char *path, const la_array *a)
{
    if (s->count == OUTPUTS_SET_MAX) return cli_fail(path, "cannot write: too many outputs");
    la_outfile *o = malloc(sizeof *o);
    if (!o) return cli_fail(path, "cannot write: out of memory");
    const char *why = NULL;
    la_status st = la_outfile_open(o, path, &why);
    if (st != LA_OK) {
        free(o);
        return cli_fail(path, "cannot write: %s", why ? why : la_strerror(st));
    }
    /* kept before the checks below, so outputs_set_free closes it on every path */
    s->files[s->count] = o;
    s->flags[s->count] = flag;
    s->paths[s->count] = path;
    s->count++;
    for (size_t i = 0; i + 1 < s->count; i++)
        if (same_target(s->files[i], o))
            return cli_fail(path, "%s names the file of %s", flag, s->flags[i]);
    if ((st = la_npy_write_outfile(o, a, &why)) != LA_OK)
        return cli_fail(path, "cannot write: %s", why ? why : la_strerror(st));
    return 0;
}

int outputs_set_commit(outputs_set *s)
{
    for (size_t i = 0; i < s->count; i++) {
        const char *why = NULL;
        if (la_outfile_commit(s->files[i], &why) == LA_OK) continue;
        /* none of the set may remain: remove those already renamed */
        for (size_t j = 0; j < i; j++)
            unlink(s->files[j]->path);
        return cli_fail(s->paths[i], "cannot write: %s", why ? why : "commit failed");
    }
    return 0;
}

void outputs_set_free(outputs_set *s)
{
    for (size_t i = 0; i < s->count; i++) {
        la_outfile_close(s->files[i]);
        free(s->files[i]);
    }
    s->count = 0;
}

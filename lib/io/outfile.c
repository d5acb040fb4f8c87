/* outfile.c — the one way linattn writes a file: never in place, never over something
 * that is not a regular file, and never leaving a half-written file at the path.
 *
 *   la_outfile_open    resolves path (a symbolic link is followed to its target, so the
 *                      link stays a link), refuses a target that exists and is not a
 *                      regular file (directory, device, FIFO, socket), and opens an
 *                      unnamed file in the target's folder: O_TMPFILE where the file
 *                      system has it (nothing to clean up even after SIGKILL), else
 *                      target.tmp.XXXXXX, remembered for la_outfile_signal_cleanup.
 *   la_outfile_commit  fsync, then gives the file the target's name in one rename(2)
 *                      (an unnamed file is first linked at target.tmp.PID.N). The
 *                      descriptor stays open and now writes the file at path.
 *   la_outfile_close   closes; a file never committed disappears.
 * An output that is also an input is therefore safe: the input is read before the new
 * file replaces its name, and a reader holding it open keeps the old contents. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE, linkat */
#endif
#include "linattn.h"

#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Temporary names that exist right now, for la_outfile_signal_cleanup: written before
 * the name is created, cleared after it is gone. A handful of files are open at once
 * (crossover writes two); a name that finds no slot is simply not cleaned on a signal. */
#define PENDING_SLOTS 8
static char pending_name[PENDING_SLOTS][4096 + 48];
static volatile sig_atomic_t pending_used[PENDING_SLOTS];

static int pending_add(const char *name)
{
    for (int i = 0; i < PENDING_SLOTS; i++) {
        if (!pending_used[i]) {
            snprintf(pending_name[i], sizeof pending_name[i], "%s", name);
            pending_used[i] = 1;
            return i;
        }
    }
    return -1;
}

static void pending_drop(int slot)
{
    if (slot >= 0) pending_used[slot] = 0;
}

void la_outfile_signal_cleanup(void)
{
    for (int i = 0; i < PENDING_SLOTS; i++)
        if (pending_used[i]) unlink(pending_name[i]);
}

/* The target path: path itself, or for a symbolic link the file it leads to (which may
 * not exist: a link to a file still to be written). Links are followed by hand,
 * at most 40 deep, a relative one from its own folder. */
static la_status resolve(const char *path, char *target, const char **why)
{
    if (strlen(path) >= PATH_MAX) {
        *why = "path too long";
        return LA_EINVAL;
    }
    strcpy(target, path);
    for (int depth = 0;; depth++) {
        struct stat st;
        if (lstat(target, &st) != 0 || !S_ISLNK(st.st_mode)) return LA_OK;
        char link[PATH_MAX];
        ssize_t n = readlink(target, link, sizeof link - 1);
        if (n < 0 || depth == 40) {
            *why = n < 0 ? strerror(errno) : "too many levels of symbolic links";
            return LA_EIO;
        }
        link[n] = 0;
        char *slash = strrchr(target, '/');
        if (link[0] == '/' || !slash) { /* absolute, or relative to the current folder */
            strcpy(target, link);
        } else { /* relative to the link's folder */
            size_t dir_len = (size_t)(slash - target) + 1;
            if (dir_len + (size_t)n >= PATH_MAX) {
                *why = "path too long";
                return LA_EINVAL;
            }
            memcpy(target + dir_len, link, (size_t)n + 1);
        }
    }
}

/* Tests: the named fallback in place of O_TMPFILE (core/internal.h). */
static bool named_only;
void la_outfile_named_only(bool on)
{
    named_only = on;
}

la_status la_outfile_open(la_outfile *o, const char *path, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    if (!o) return LA_EINVAL;
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->slot = -1;
    if (!path || !*path) {
        *why = "no path";
        return LA_EINVAL;
    }
    la_status s = resolve(path, o->path, why);
    if (s != LA_OK) return s;

    struct stat st;
    const int exists = stat(o->path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EEXIST;
        *why = S_ISDIR(st.st_mode) ? "is a directory; refusing to replace it"
               : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "is a device; refusing to replace it"
               : S_ISFIFO(st.st_mode)                       ? "is a FIFO; refusing to replace it"
                                      : "is not a regular file; refusing to replace it";
        return LA_EIO;
    }

#ifdef O_TMPFILE
    /* the target's folder: everything before the last '/' ("." when there is none) */
    char dir[PATH_MAX];
    const char *slash = strrchr(o->path, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == o->path)
        strcpy(dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - o->path), o->path);
    o->fd = named_only ? -1 : open(dir, O_TMPFILE | O_RDWR | O_APPEND | O_CLOEXEC, 0644);
    if (o->fd >= 0) {
        o->anonymous = 1;
        /* a file replaced keeps its permission bits (a private 0600 file stays private) */
        if (exists && fchmod(o->fd, st.st_mode & 0777) != 0) {
            int err = errno;
            la_outfile_close(o);
            errno = err;
            *why = strerror(err);
            return LA_EIO;
        }
        return LA_OK;
    }
    /* EOPNOTSUPP, EISDIR (kernel without O_TMPFILE), EINVAL: fall back to a named file;
     * other errors (ENOENT, EACCES) the named file would meet too */
#endif
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.XXXXXX", o->path);
    o->slot = pending_add(o->tmp);
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
        int err = errno;
        pending_drop(o->slot);
        o->slot = -1;
        errno = err;
        *why = strerror(err);
        return LA_EIO;
    }
    if (o->slot >= 0) snprintf(pending_name[o->slot], sizeof pending_name[o->slot], "%s", o->tmp);
    /* mkstemp makes 0600, O_TMPFILE 0644 less the umask: a new output is an ordinary
     * readable file either way, a replaced one keeps its mode; append mode so every
     * write goes to the end */
    const mode_t mode = exists ? st.st_mode & 0777 : 0644;
    if (fchmod(o->fd, mode) != 0 || fcntl(o->fd, F_SETFL, O_APPEND) != 0) {
        int err = errno;
        la_outfile_close(o);
        errno = err;
        *why = strerror(err);
        return LA_EIO;
    }
    return LA_OK;
}

la_status la_outfile_commit(la_outfile *o, const char **why)
{
    const char *dummy;
    if (!why) why = &dummy;
    if (!o || o->fd < 0 || o->committed) return LA_EINVAL;
    if (fsync(o->fd) != 0) goto fail;
    if (o->anonymous) {
        /* an unnamed file cannot be renamed: link it at a fresh name first */
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
        for (unsigned n = 0;; n++) {
            snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%ld.%u", o->path, (long)getpid(), n);
            o->slot = pending_add(o->tmp);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0) break;
            pending_drop(o->slot);
            o->slot = -1;
            if (errno != EEXIST || n > 100) goto fail;
        }
    }
    if (rename(o->tmp, o->path) != 0) goto fail;
    pending_drop(o->slot);
    o->slot = -1;
    o->committed = 1;
    return LA_OK;
fail:;
    int err = errno;
    if (o->slot >= 0) {
        unlink(o->tmp);
        pending_drop(o->slot);
        o->slot = -1;
        if (o->anonymous) o->tmp[0] = 0;
    }
    errno = err;
    *why = strerror(err);
    return LA_EIO;
}

int la_outfile_close(la_outfile *o)
{
    if (!o) return 0;
    int rc = 0;
    if (o->fd >= 0 && close(o->fd) != 0) rc = -1;
    o->fd = -1;
    if (!o->committed && !o->anonymous && o->tmp[0]) {
        int err = errno;
        unlink(o->tmp);
        errno = err;
    }
    pending_drop(o->slot);
    o->slot = -1;
    return rc;
}

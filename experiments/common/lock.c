/* lock.c — one linattn run per results folder (lock.h). */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Two runs writing into one folder at once would race for the same files (and disturb
 * each other's timings): each results file holds an flock on its folder for as long as
 * it is open, and a second process is refused. Files of one process share the lock. */
static struct {
    dev_t dev;
    ino_t ino;
    int fd, users;
} held_locks[8];

int lock_folder(const char *path, char *err, size_t err_size)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -2;
    }
    int free_slot = -1;
    for (int i = 0; i < (int)(sizeof held_locks / sizeof held_locks[0]); i++) {
        if (held_locks[i].users && held_locks[i].dev == st.st_dev &&
            held_locks[i].ino == st.st_ino) {
            close(fd);
            held_locks[i].users++;
            return i;
        }
        if (!held_locks[i].users && free_slot < 0) free_slot = i;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(err, err_size,
                 "%s: another linattn run is writing into %s (folder locked); wait for it or "
                 "choose another folder",
                 path, dir);
        close(fd);
        return -2;
    }
    if (free_slot < 0) { /* more folders than slots: locked until the process ends */
        return -1;
    }
    held_locks[free_slot].dev = st.st_dev;
    held_locks[free_slot].ino = st.st_ino;
    held_locks[free_slot].fd = fd;
    held_locks[free_slot].users = 1;
    return free_slot;
}

void lock_release(int i)
{
    if (i < 0 || !held_locks[i].users) return;
    if (--held_locks[i].users == 0) close(held_locks[i].fd);
}

/* lock.h — one linattn run per results folder: each results file holds an flock on its
 * folder while it is open; files of one process share it. Uses nothing else of the
 * harness. */
#ifndef LA_LOCK_H
#define LA_LOCK_H

#include <stddef.h>

/* Locks the folder of path (a file in it). Returns the lock's index (>= 0), -1 when it
 * is locked but not tracked (more folders than slots: held until the process ends), or
 * -2 with a reason in err (the folder cannot be opened, or another run holds it). */
int lock_folder(const char *path, char *err, size_t err_size);
/* Releases a lock_folder index (negative: nothing). */
void lock_release(int i);

#endif

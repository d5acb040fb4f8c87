/* outfile.h — the atomic output file behind la_npy_write and the command's results
 * files (outfile.c), and the .npy writers on it (npy.c). Internal (not exported): the
 * command and the tests include it and link build/liblinattn.a. */
#ifndef LA_IO_OUTFILE_H
#define LA_IO_OUTFILE_H

#include "linattn.h"

/* Same as la_npy_write, and *why (when not NULL) gets a one-line reason on failure,
 * such as "is a device; refusing to replace it". */
la_status la_npy_write_why(const char *path, const la_array *a, const char **why);

/* The one way linattn writes a file (la_npy_write, the command's results files): the
 * contents go to an unnamed file in the target's folder (O_TMPFILE; where the file
 * system lacks it, path.tmp.XXXXXX) and replace path in one rename(2) only when
 * committed, so path holds the old file or the whole new one, never a part.
 *   - A symbolic link at path is followed: its target is replaced and the link stays.
 *   - A file replaced keeps its permission bits.
 *   - A target that exists and is not a regular file (directory, device, FIFO, socket)
 *     is refused (LA_EIO, errno EISDIR or EEXIST): never replaced.
 *   - An output that is also an input is safe: the input is read first and the new
 *     file takes its name only when complete.
 * la_outfile_open: LA_OK, LA_EINVAL, LA_EIO (and *why). fd is open for appending.
 * la_outfile_commit: fsync, then the file is at path; fd stays open and keeps writing
 *   it (the results files append their rows after the first one is committed).
 * la_outfile_close: closes; an uncommitted file disappears. Returns 0 or -1.
 * la_outfile_signal_cleanup: removes the temporary names that exist right now (the
 *   path.tmp.* fallback); async-signal-safe, for the command's SIGINT/SIGTERM handler.
 *   With O_TMPFILE there is nothing to remove, even after SIGKILL. */
typedef struct {
    int fd;
    int anonymous, committed, slot;
    char path[4096], tmp[4096 + 48];
} la_outfile;
la_status la_outfile_open(la_outfile *o, const char *path, const char **why);
la_status la_outfile_commit(la_outfile *o, const char **why);
int la_outfile_close(la_outfile *o);
void la_outfile_signal_cleanup(void);
/* a as a .npy file (as la_npy_write writes it) into o, open and uncommitted,
 * without committing it: several files written first, then committed together, appear
 * all or none (the command's attend with gradients). LA_EINVAL (o not open or already
 * committed, an inconsistent array; *why says which), LA_EIO (a failed write). */
la_status la_npy_write_outfile(la_outfile *o, const la_array *a, const char **why);

#endif /* LA_IO_OUTFILE_H */

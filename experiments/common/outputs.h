/* outputs.h — several .npy outputs of one command that appear together or not at all
 * (attend's --out with --grad-q, --grad-k, --grad-v). Each array is written to its own
 * unnamed temporary in its target's folder (la_outfile, la_npy_write_outfile); only when
 * every one was written are they committed, one rename each. A failure before that
 * leaves no file and every existing target as it was. A rename that fails after others
 * succeeded (a rare I/O error: the data are already on disk) removes the files already
 * renamed, so still none of the outputs is left; a target they replaced is gone then.
 *
 *     outputs_set outs;
 *     outputs_set_init(&outs);
 *     if ((rc = outputs_set_add(&outs, "--out", path, &y)) || … || (rc =
 * outputs_set_commit(&outs))) … outputs_set_free(&outs);
 */
#ifndef LA_OUTPUTS_H
#define LA_OUTPUTS_H

#include "io/outfile.h"
#include "linattn.h"

#include <stddef.h>

enum { OUTPUTS_SET_MAX = 8 };

typedef struct {
    size_t count;
    la_outfile *files[OUTPUTS_SET_MAX];
    const char *flags[OUTPUTS_SET_MAX]; /* the flag that named each file, for messages */
    const char *paths[OUTPUTS_SET_MAX]; /* the path as given, for messages */
} outputs_set;

void outputs_set_init(outputs_set *s);

/* Writes a to a temporary for path (named by flag). Refuses, with one line and 2: a
 * target that cannot be written ("PATH: cannot write: why", as arrays_write_npy), the same
 * file as an earlier output of the set ("PATH: --grad-q names the file of --out"),
 * more than OUTPUTS_SET_MAX files. */
int outputs_set_add(outputs_set *s, const char *flag, const char *path, const la_array *a);

/* Gives every file its name. Returns 0, or 2 after one line (then no output remains). */
int outputs_set_commit(outputs_set *s);

/* Closes every file; those not committed disappear. Safe after a failure and twice. */
void outputs_set_free(outputs_set *s);

/* Whether the outputs path a and path b would write are one file, whatever the spelling
 * of the paths (a symbolic link, "./", "dir/../"): the same device and inode when the file
 * exists, else the same folder (device and inode) and name. 0 when either cannot be
 * opened (writing it says why). outputs_set_add compares its files the same way. */
int outputs_paths_alias(const char *a, const char *b);

#endif

/* outputs.h — several .npy outputs of one command that appear together or not at all
 * (attend's --out with --grad-q, --grad-k, --grad-v). Each array is written to its own
 * unnamed temporary in its target's folder (la_outfile, la_npy_write_outfile); only when
 * every one was written are they committed, one rename each. A failure before that
 * leaves no file and every existing target as it was. A rename that fails after others
 * succeeded (a rare I/O error: the data are already on disk) removes the files already
 * renamed, so still none of the outputs is left; a target they replaced is gone then.
 *
 *     out_set outs;
 *     out_set_init(&outs);
 *     if ((rc = out_set_add(&outs, "--out", path, &y)) || … || (rc = out_set_commit(&outs)))
 *         …
 *     out_set_free(&outs);
 */
#ifndef LA_OUTPUTS_H
#define LA_OUTPUTS_H

#include "io/outfile.h"
#include "linattn.h"

#include <stddef.h>

enum { OUT_SET_MAX = 8 };

typedef struct {
    size_t count;
    la_outfile *files[OUT_SET_MAX];
    const char *flags[OUT_SET_MAX]; /* the flag that named each file, for messages */
    const char *paths[OUT_SET_MAX]; /* the path as given, for messages */
} out_set;

void out_set_init(out_set *s);

/* Writes a to a temporary for path (named by flag). Refuses, with one line and 2: a
 * target that cannot be written ("PATH: cannot write: why", as cli_write_npy), the same
 * file as an earlier output of the set ("PATH: --grad-q names the file of --out"),
 * more than OUT_SET_MAX files. */
int out_set_add(out_set *s, const char *flag, const char *path, const la_array *a);

/* Gives every file its name. Returns 0, or 2 after one line (then no output remains). */
int out_set_commit(out_set *s);

/* Closes every file; those not committed disappear. Safe after a failure and twice. */
void out_set_free(out_set *s);

/* Whether the outputs path a and path b would write are one file, whatever the spelling
 * of the paths (a symbolic link, "./", "dir/../"): the same device and inode when the file
 * exists, else the same folder (device and inode) and name. 0 when either cannot be
 * opened (writing it says why). out_set_add compares its files the same way. */
int out_paths_alias(const char *a, const char *b);

#endif

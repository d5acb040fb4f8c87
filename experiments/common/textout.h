/* textout.h — a text output of the command (a summary, a CSV copy, JSON) built in memory
 * and then written whole: to standard output, or to a file through la_outfile (a
 * temporary that takes the name only when complete, so the file is never half-written
 * and an old one survives a failed write). */
#ifndef LA_TEXTOUT_H
#define LA_TEXTOUT_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
    FILE *f; /* write into it with fprintf; open_memstream's */
    char *buf;
    size_t len;
} textout_buffer;

/* Opens an empty buffer; returns 0, or 2 after "linattn: WHAT: out of memory". */
int textout_open(textout_buffer *t, const char *what);

/* Writes the buffer to path (standard output when path is NULL or "-") and frees it.
 * Returns 0, or 2 after one line "linattn: PATH: cannot write: why" (nothing at path). */
int textout_finish(textout_buffer *t, const char *path);

/* Frees the buffer without writing it (on an error path). */
void textout_discard(textout_buffer *t);

#endif

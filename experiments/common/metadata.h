/* metadata.h — the `#` metadata header of every results file (the lines record.h shows):
 * what ran, when, from which commit, on which machine, how peak memory is measured.
 * Uses: machine.h (the facts and the check in force), memory.h (whether the peak mark
 * can be reset). */
#ifndef LA_METADATA_H
#define LA_METADATA_H

#include <stddef.h>
#include <stdio.h>

/* Writes the `#` lines of an experiment's header (without the header row): argv is the
 * command line recorded, about one line on what the file holds. */
void metadata_write(FILE *out, const char *experiment, const char *about, int argc, char **argv);

/* More `# ` lines (each ending in a newline) that every metadata header written after
 * this call adds at its end, such as "# inputs: q.npy k.npy v.npy\n" (common/inputs.h);
 * NULL or "" for none. Copied (at most 2 KiB kept). */
void metadata_extra(const char *lines);

/* The commit as the header records it: "abc1234", "abc1234 (dirty)" or "unknown". */
const char *metadata_git_commit(void);

/* The command line as the header records it: "build/linattn ARGS...", escaped, and a
 * newline. */
void metadata_write_command(FILE *out, int argc, char **argv);

/* The time now, UTC: "2026-11-22T06:10:00Z". */
void metadata_utc_now(char *buf, size_t size);

/* s with its control characters written as \n, \t, \r or \xHH (keep_lines: a newline
 * that starts another `#` line is kept), so a metadata line stays one line. */
void metadata_put_escaped(FILE *out, const char *s, int keep_lines);

#endif

/* guard.h — the committed reference: the CSV files in the repository's results/ and
 * the figures in its plots/. Only `linattn results --update` (make results-update) writes
 * them; every other command writes to the current directory or where --out says.
 *
 * The repository is the one this command was built in: the nearest folder above the
 * executable's (build/linattn, build/asan/linattn) that has lib/linattn.h. Folders are compared by
 * device and inode, so no spelling reaches around the guard (an absolute path, `..`, a
 * symbolic link, another current directory).
 *
 *     char err[512];
 *     if (guard_check(path, err, sizeof err)) { fprintf(stderr, "linattn: %s\n", err); … }
 */
#ifndef LA_GUARD_H
#define LA_GUARD_H

#include <stddef.h>

/* `linattn results --update` turns this on for the experiments it runs. */
void guard_allow_update(int allow);

/* 1 when folder (existing) is the repository's results/ or plots/, else 0. */
int guard_is_reference_folder(const char *folder);

/* 0 when a results file may be written at path; else 1 with err holding
 * "PATH: the committed reference (FOLDER) is written only by make results-update: ...". */
int guard_check(const char *path, char *err, size_t err_size);

#endif

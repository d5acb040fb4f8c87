/* record.h — the experiments' results files: the one CSV writer (with its `#` metadata
 * header, append-and-flush per point, --resume) and the reader of finished files.
 * Uses: metadata.h (the `#` lines), rows.h (the rows held), lock.h (one run per
 * folder), machine.h (the check's warning and lifetime), guard.h (the committed
 * reference folders).
 *
 * A results file reads:
 *   # linattn <experiment>: <one line on what it measures>
 *   # command: build/linattn scaling --n 128:65536
 *   # date: 2026-11-22T06:10:00Z
 *   # git_commit: 10a9cbf (dirty)
 *   # cpu: AMD EPYC          # cores: 2          # threads: 2
 *   # load_average: 0.12 0.30 0.25 (...)
 *   # calibration: 0.0512 0.0498 (spread 2.8%)    <- timing experiments only (machine.h)
 *   # noisy: no                                    <- or: # noisy: yes (<why>)
 *   # blis: 0.9.0            # linattn: 0.1.0    # peak_rss: <how it is measured>
 *   kernel,n,...,status       <- the header row (snake_case, units in the names)
 *   softmax,128,...,ok        <- one row per point, flushed as soon as it is measured
 * gnuplot reads it with `set datafile separator comma; set datafile columnheaders`,
 * skipping the `#` lines. */
#ifndef LA_RECORD_H
#define LA_RECORD_H

#include "linattn.h"

#include <stddef.h>
#include <stdio.h>

/* ---------------------------------------------------------------- CSV */

typedef struct record_file record_file;

/* Opens path for an experiment's points. columns is the header row; the first n_key
 * columns name a point (for --resume). With resume and an existing file whose header row
 * equals columns, the points in it are kept (record_find sees them) and new rows are
 * appended after a `# resumed:` comment; otherwise the file is created anew with the
 * metadata header. argv is the command line recorded in the header; about is one line
 * on what the file holds. Returns NULL and a one-line reason in err on failure. */
record_file *record_open(const char *path, const char *experiment, const char *about,
                         const char *columns, int n_key, int resume, int argc, char **argv,
                         char *err, size_t err_size);

/* The same file on a stream the caller owns (bench's --format csv on standard output):
 * the metadata header, then extra (more `# ` lines, each ending in a newline; NULL for
 * none), then the header row. No --resume, no key (n_key 0). record_close flushes the
 * stream and leaves it open. Returns NULL and a reason in err on failure. */
record_file *record_open_stream(FILE *out, const char *experiment, const char *about,
                                const char *columns, const char *extra, int argc, char **argv,
                                char *err, size_t err_size);

/* The metadata header alone (the `#` lines above, without the header row), for output
 * that is not CSV but states the same facts (bench's table). */
void record_write_meta(FILE *out, const char *experiment, const char *about, int argc, char **argv);

/* The stored row whose key (its first n_key fields, joined by commas) equals key, from
 * the resumed file or written since (the latest when there are several: a point skipped
 * in an earlier run and measured after --resume with a larger budget); NULL if none. */
const char *record_find(const record_file *f, const char *key);

/* The value of a named column in a row from record_find; returns 0, or -1 when the column
 * does not exist or the field is not a number. */
int record_get(const record_file *f, const char *row, const char *column, double *out);
/* The same for a text field: copies it into buf (truncated to size - 1). */
int record_get_str(const record_file *f, const char *row, const char *column, char *buf,
                   size_t size);

/* Appends one row (printf-style, without the newline) and flushes it to disk.
 * Returns 0, or -1 when the write failed. */
int record_row(record_file *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a results file without writing to it (for summaries): its header row gives the
 * columns, the first n_key of them the key. record_find, record_get and record_row_at work on it.
 * Returns NULL and a reason in err when it cannot be read. */
record_file *record_load(const char *path, int n_key, char *err, size_t err_size);
size_t record_count(const record_file *f);                 /* rows held */
const char *record_row_at(const record_file *f, size_t i); /* row i, in file order */

const char *record_path(const record_file *f);
int record_resumed_rows(const record_file *f); /* rows kept from the existing file */

/* "<out without its .csv>_<suffix>.csv" into buf: the companion files of a results file
 * (scaling.csv's scaling_fit.csv, crossover.csv's crossover_points.csv). */
void record_sibling_path(const char *out, const char *suffix, char *buf, size_t size);

/* Closes the file; returns 0, or -1 when a write failed at any point. NULL is fine. */
int record_close(record_file *f);

#endif

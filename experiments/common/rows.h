/* rows.h — the rows of a results file held in memory (record.h keeps one per file): the
 * header row's columns, each row whole and under its key (its first n_key fields), the
 * latest row of a key found first. Uses nothing else of the harness. */
#ifndef LA_ROWS_H
#define LA_ROWS_H

#include <stddef.h>

typedef struct {
    char *key; /* first n_key fields */
    char *row; /* the whole row */
} rows_entry;

typedef struct {
    char **columns; /* names, n_columns of them */
    int n_columns, n_key;
    rows_entry *rows;
    size_t n_rows, cap_rows;
} rows_table;

/* The columns of a header row "a,b,c" into t->columns. 0, or -1 (no memory). */
int rows_split_columns(rows_table *t, const char *columns);
/* Keeps a copy of row (and its key). 0, or -1 (no memory). */
int rows_store(rows_table *t, const char *row);
/* A finished row has exactly one field per column. */
int rows_complete(const rows_table *t, const char *row);
/* The latest row stored under key, or NULL. */
const char *rows_find(const rows_table *t, const char *key);
/* A named column of row: as text into buf (truncated to size - 1), or as a number.
 * 0, or -1 when the column does not exist (or the field is not a number). */
int rows_get_str(const rows_table *t, const char *row, const char *column, char *buf, size_t size);
int rows_get(const rows_table *t, const char *row, const char *column, double *out);
/* Frees what the table holds (the table itself is the caller's). */
void rows_free(rows_table *t);

#endif

/* rows.c — the rows of a results file held in memory, by key (rows.h). */
#include "rows.h"

#include <stdlib.h>
#include <string.h>

/* The first n_key comma-separated fields of row, or NULL on allocation failure. */
static char *key_of(const char *row, int n_key)
{
    const char *end = row;
    for (int i = 0; i < n_key && *end; i++) {
        end += strcspn(end, ",");
        if (i < n_key - 1 && *end == ',') end++;
    }
    size_t len = (size_t)(end - row);
    char *key = malloc(len + 1);
    if (!key) return NULL;
    memcpy(key, row, len);
    key[len] = 0;
    return key;
}

int rows_split_columns(rows_table *f, const char *columns)
{
    f->n_columns = 1;
    for (const char *c = columns; *c; c++)
        f->n_columns += *c == ',';
    f->columns = calloc((size_t)f->n_columns, sizeof *f->columns);
    if (!f->columns) return -1;
    const char *start = columns;
    for (int i = 0; i < f->n_columns; i++) {
        size_t len = strcspn(start, ",");
        f->columns[i] = malloc(len + 1);
        if (!f->columns[i]) return -1;
        memcpy(f->columns[i], start, len);
        f->columns[i][len] = 0;
        start += len + (start[len] == ',');
    }
    return 0;
}

int rows_store(rows_table *f, const char *row)
{
    if (f->n_rows == f->cap_rows) {
        size_t cap = f->cap_rows ? 2 * f->cap_rows : 64;
        rows_entry *r = realloc(f->rows, cap * sizeof *r);
        if (!r) return -1;
        f->rows = r;
        f->cap_rows = cap;
    }
    rows_entry *s = &f->rows[f->n_rows];
    s->row = strdup(row);
    s->key = key_of(row, f->n_key);
    if (!s->row || !s->key) {
        free(s->row);
        free(s->key);
        return -1;
    }
    f->n_rows++;
    return 0;
}

/* A finished row has exactly one field per column (a row cut short by a full disk or a
 * kill has fewer, or is glued to the next). */
int rows_complete(const rows_table *f, const char *row)
{
    int fields = 1;
    for (const char *c = row; *c; c++)
        fields += *c == ',';
    return fields == f->n_columns;
}

const char *rows_find(const rows_table *f, const char *key)
{
    for (size_t i = f->n_rows; i-- > 0;) /* the latest row of a key wins */
        if (strcmp(f->rows[i].key, key) == 0) return f->rows[i].row;
    return NULL;
}

/* Copies field `index` of row into buf; -1 when the row is shorter. */
static int field(const char *row, int index, char *buf, size_t size)
{
    const char *start = row;
    for (int i = 0; i < index; i++) {
        start = strchr(start, ',');
        if (!start) return -1;
        start++;
    }
    size_t len = strcspn(start, ",");
    if (len >= size) len = size - 1;
    memcpy(buf, start, len);
    buf[len] = 0;
    return 0;
}

static int column_index(const rows_table *f, const char *column)
{
    for (int i = 0; i < f->n_columns; i++)
        if (strcmp(f->columns[i], column) == 0) return i;
    return -1;
}

int rows_get_str(const rows_table *f, const char *row, const char *column, char *buf, size_t size)
{
    int i = column_index(f, column);
    if (i < 0 || size == 0) return -1;
    return field(row, i, buf, size);
}

int rows_get(const rows_table *f, const char *row, const char *column, double *out)
{
    char buf[64], *end;
    if (rows_get_str(f, row, column, buf, sizeof buf) != 0 || !buf[0]) return -1;
    double x = strtod(buf, &end);
    if (*end) return -1;
    *out = x;
    return 0;
}

void rows_free(rows_table *f)
{
    for (size_t i = 0; i < f->n_rows; i++) {
        free(f->rows[i].key);
        free(f->rows[i].row);
    }
    free(f->rows);
    if (f->columns)
        for (int i = 0; i < f->n_columns; i++)
            free(f->columns[i]);
    free(f->columns);
}

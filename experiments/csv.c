/* csv.c — `linattn csv`: a results file for tools that cannot skip its `#` lines. --plain
 * prints the header row and the data rows alone; --meta prints the `#` metadata as one
 * JSON object. */
#include "commands.h"
#include "common/cli.h"
#include "common/textout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help_text[] =
    "usage: linattn csv --plain FILE [--out PATH]\n"
    "       linattn csv --meta FILE [--out PATH]\n"
    "\n"
    "A results file (every CSV the experiments write) begins with `#` lines: the command,\n"
    "date, commit, CPU, threads, BLIS, ... (`# resumed:` lines may follow later). Python\n"
    "loads it directly with\n"
    "  pandas  pd.read_csv(path, comment='#')\n"
    "  NumPy   np.genfromtxt((l for l in open(path) if l[0] != '#'), delimiter=',',\n"
    "                        names=True, dtype=None, encoding=None)\n"
    "(NumPy's own comments='#' is not enough with names=True: it takes the names from the\n"
    "first line even when it is a comment). For other tools:\n"
    "\n"
    "  --plain FILE  the header row and the data rows, without the `#` lines (and without\n"
    "                empty lines): plain CSV\n"
    "  --meta FILE   the metadata as one JSON object: \"file\", \"experiment\" and \"about\"\n"
    "                (the first line, `# linattn EXPERIMENT: about`), then one member per\n"
    "                `# key: value` line in file order, the key with spaces made '_'\n"
    "                (\"float32_kernels\") and the value a string as written; a key given more\n"
    "                than once (`# resumed:`) holds the list of its values; `#` lines that\n"
    "                are not `key: value` go to \"comments\"; last \"columns\" (the header\n"
    "                row) and \"rows\" (the count of data rows)\n"
    "  --out PATH    write there (whole or not at all) instead of standard output\n"
    "\n"
    "exit status: 0 done, 2 bad flags or an unreadable file (one line: linattn: WHAT: why)\n"
    "\n"
    "example:\n"
    "  linattn csv --plain results/scaling.csv --out /tmp/scaling_plain.csv\n"
    "  linattn csv --meta results/scaling.csv | python3 -m json.tool\n";

void cmd_csv_help(FILE *out)
{
    fputs(help_text, out);
}

/* One `#` line: its key ("" for a comment that is not `key: value`) and value. */
typedef struct {
    char *key, *value;
} meta_line;

typedef struct {
    meta_line *lines;
    size_t n, cap;
    char *header; /* the header row, or NULL */
    size_t rows;
} meta;

static void meta_free(meta *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->lines[i].key);
        free(m->lines[i].value);
    }
    free(m->lines);
    free(m->header);
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) memcpy(d, s, n), d[n] = 0;
    return d;
}

/* Splits "key: value" (text after "# "): a key of letters, digits, '_' and spaces, at
 * most 48 characters, before the first ": ". Returns 0, -1 when out of memory. */
static int add_meta(meta *m, const char *text)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 32;
        meta_line *grown = realloc(m->lines, cap * sizeof *grown);
        if (!grown) return -1;
        m->lines = grown, m->cap = cap;
    }
    const char *colon = strstr(text, ": ");
    size_t klen = colon ? (size_t)(colon - text) : 0;
    int is_key = klen > 0 && klen <= 48;
    for (size_t i = 0; is_key && i < klen; i++) {
        char c = text[i];
        is_key = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == ' ';
    }
    meta_line *l = &m->lines[m->n];
    l->key = dup_n(text, is_key ? klen : 0);
    l->value = is_key ? dup_n(colon + 2, strlen(colon + 2)) : dup_n(text, strlen(text));
    if (!l->key || !l->value) {
        free(l->key), free(l->value);
        return -1;
    }
    for (char *c = l->key; *c; c++)
        if (*c == ' ') *c = '_';
    m->n++;
    return 0;
}

/* Reads path: the `#` lines into m (with out NULL), or every other non-empty line into
 * out. Returns 0 or 2 after one line. */
static int read_file(const char *path, meta *m, FILE *out)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* a FIFO would block the read */
        return cli_fail(path, "not a regular file");
    FILE *in = fopen(path, "r");
    if (!in) return cli_fail(path, "%s", strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (getline(&line, &cap, in) >= 0) {
        line[strcspn(line, "\r\n")] = 0;
        if (line[0] == 0) continue;
        if (line[0] == '#') {
            if (out) continue;
            const char *text = line + 1 + (line[1] == ' ');
            if (add_meta(m, text) != 0) {
                rc = cli_fail(path, "out of memory");
                break;
            }
        } else if (!m->header) {
            if (!(m->header = dup_n(line, strlen(line)))) {
                rc = cli_fail(path, "out of memory");
                break;
            }
            if (out) fprintf(out, "%s\n", line);
        } else {
            m->rows++;
            if (out) fprintf(out, "%s\n", line);
        }
    }
    if (rc == 0 && ferror(in)) rc = cli_fail(path, "%s", strerror(errno));
    if (rc == 0 && !m->header) rc = cli_fail(path, "no header row: not a results file");
    free(line);
    fclose(in);
    return rc;
}

/* The length of the well-formed UTF-8 sequence at c (1 to 4), or 0 when it is not one
 * (a stray continuation byte, a sequence cut short, an overlong form, a surrogate, a
 * value above U+10FFFF). */
static int utf8_length(const unsigned char *c)
{
    if (c[0] < 0x80) return 1;
    int n = c[0] >= 0xc2 && c[0] <= 0xdf   ? 2
            : c[0] >= 0xe0 && c[0] <= 0xef ? 3
            : c[0] >= 0xf0 && c[0] <= 0xf4 ? 4
                                           : 0;
    for (int i = 1; i < n; i++)
        if ((c[i] & 0xc0) != 0x80) return 0;
    if ((c[0] == 0xe0 && c[1] < 0xa0) || (c[0] == 0xed && c[1] >= 0xa0) ||
        (c[0] == 0xf0 && c[1] < 0x90) || (c[0] == 0xf4 && c[1] >= 0x90))
        return 0;
    return n;
}

/* A JSON string: quotes, backslashes and control characters escaped; well-formed UTF-8
 * as it is, any other byte as U+FFFD (JSON text is UTF-8: a file's stray Latin-1 byte
 * must not make the whole object unreadable). */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        const int n = utf8_length(c);
        if (n == 0)
            fputs("\\ufffd", out);
        else if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\u%04x", *c);
        else
            fwrite(c, 1, (size_t)n, out);
        c += n ? n : 1;
    }
    fputc('"', out);
}

static void write_json(FILE *out, const char *path, const meta *m)
{
    fputs("{\"file\": ", out);
    json_string(out, path);
    size_t first = 0;
    /* the first line: "linattn EXPERIMENT: about" */
    if (m->n > 0 && strncmp(m->lines[0].key, "linattn_", 8) == 0) {
        fputs(",\n \"experiment\": ", out);
        json_string(out, m->lines[0].key + 8);
        fputs(",\n \"about\": ", out);
        json_string(out, m->lines[0].value);
        first = 1;
    }
    /* one member per key, in order of first appearance; repeated keys as lists */
    for (size_t i = first; i < m->n; i++) {
        const char *key = m->lines[i].key;
        if (!key[0]) continue;
        int seen = 0, count = 0;
        for (size_t j = first; j < m->n; j++) {
            if (strcmp(m->lines[j].key, key) != 0) continue;
            if (j < i) seen = 1;
            count++;
        }
        if (seen) continue;
        fputs(",\n ", out);
        json_string(out, key);
        fputs(": ", out);
        if (count == 1 && strcmp(key, "resumed") != 0) {
            json_string(out, m->lines[i].value);
            continue;
        }
        fputc('[', out);
        for (size_t j = i, k = 0; j < m->n; j++) {
            if (strcmp(m->lines[j].key, key) != 0) continue;
            if (k++) fputs(", ", out);
            json_string(out, m->lines[j].value);
        }
        fputc(']', out);
    }
    int comments = 0;
    for (size_t i = first; i < m->n; i++) {
        if (m->lines[i].key[0]) continue;
        fputs(comments++ ? ", " : ",\n \"comments\": [", out);
        json_string(out, m->lines[i].value);
    }
    if (comments) fputc(']', out);
    fputs(",\n \"columns\": [", out);
    const char *c = m->header;
    for (int k = 0;; k++) {
        size_t len = strcspn(c, ",");
        char *name = dup_n(c, len);
        if (k) fputs(", ", out);
        json_string(out, name ? name : "");
        free(name);
        if (!c[len]) break;
        c += len + 1;
    }
    fprintf(out, "],\n \"rows\": %zu}\n", m->rows);
}

int cmd_csv(int argc, char **argv)
{
    const char *plain = NULL, *meta_path = NULL, *out = NULL;
    const cli_flag flags[] = {
        {"plain", &plain, NULL},
        {"meta", &meta_path, NULL},
        {"out", &out, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    if (!plain == !meta_path)
        return cli_fail("csv", "give one of --plain FILE and --meta FILE (see linattn help csv)");
    const char *path = plain ? plain : meta_path;
    textout_buffer t;
    if ((rc = textout_open(&t, "csv"))) return rc;
    meta m = {0};
    rc = read_file(path, &m, plain ? t.f : NULL);
    if (rc == 0 && meta_path && m.n == 0)
        rc = cli_fail(path, "no # metadata lines: not a linattn results file");
    if (rc == 0 && meta_path) write_json(t.f, path, &m);
    meta_free(&m);
    if (rc) {
        textout_discard(&t);
        return rc;
    }
    return textout_finish(&t, out);
}

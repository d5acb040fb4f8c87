/* cli.c — one-line errors, validated numbers and long options for the subcommands
 * (contract in cli.h). */
#include "cli.h"
#include "io/outfile.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s into out (size > 0) with its control characters written as \n, \t, \r or \xHH
 * (a path may hold any), cut short where out ends. */
static void escape_into(char *out, size_t size, const char *s)
{
    size_t at = 0;
    for (const unsigned char *c = (const unsigned char *)s; *c && at + 5 < size; c++) {
        if (*c == '\n' || *c == '\t' || *c == '\r') {
            out[at++] = '\\';
            out[at++] = *c == '\n' ? 'n' : *c == '\t' ? 't' : 'r';
        } else if (*c < 0x20 || *c == 0x7f) {
            at += (size_t)snprintf(out + at, size - at, "\\x%02x", *c);
        } else {
            out[at++] = (char)*c;
        }
    }
    out[at] = 0;
}

void cli_line(const char *fmt, ...)
{
    char line[1024], shown[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    escape_into(shown, sizeof shown, line);
    fprintf(stderr, "linattn: %s\n", shown);
}

int cli_fail(const char *what, const char *fmt, ...)
{
    char why[512], shown_what[1024], shown_why[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    /* one line, whatever the subject (often a path) or the message held */
    escape_into(shown_what, sizeof shown_what, what);
    escape_into(shown_why, sizeof shown_why, why);
    fprintf(stderr, "linattn: %s: %s\n", shown_what, shown_why);
    return 2;
}

/* ---------------------------------------------------------------- numbers */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* An optional '-' then decimal digits and nothing else. */
static int is_decimal(const char *text, int allow_minus)
{
    if (allow_minus && *text == '-') text++;
    if (!*text) return 0;
    for (; *text; text++)
        if (!is_digit(*text)) return 0;
    return 1;
}

int cli_parse_size(const char *flag, const char *text, size_t *out)
{
    if (!text || !*text) return cli_fail(flag, "needs a value");
    if (!is_decimal(text, 1)) return cli_fail(flag, "'%s' is not a number", text);
    if (*text == '-') return cli_fail(flag, "'%s' is negative", text);
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE || v > SIZE_MAX) return cli_fail(flag, "'%s' is too large", text);
    *out = (size_t)v;
    return 0;
}

int cli_parse_size_flag(const char *command, const char *flag, const char *text, int required,
                        size_t min, size_t *out)
{
    if (!text)
        return required ? cli_fail(flag, "required flag is missing (see linattn help %s)", command)
                        : 0;
    size_t v;
    int rc = cli_parse_size(flag, text, &v);
    if (rc) return rc;
    if (v < min) return cli_fail(flag, "must be at least %zu", min);
    *out = v;
    return 0;
}

int cli_parse_int(const char *flag, const char *text, int *out)
{
    if (!text || !*text) return cli_fail(flag, "needs a value");
    if (!is_decimal(text, 1)) return cli_fail(flag, "'%s' is not an integer", text);
    errno = 0;
    long v = strtol(text, NULL, 10);
    if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return cli_fail(flag, "'%s' is out of range", text);
    *out = (int)v;
    return 0;
}

int cli_parse_double(const char *flag, const char *text, double *out)
{
    if (!text || !*text) return cli_fail(flag, "needs a value");
    /* strtod would skip leading spaces and accept "nan", "inf", hex: the first two are
     * refused below as not finite, spaces here */
    if (*text == ' ' || *text == '\t' || *text == '\n')
        return cli_fail(flag, "'%s' is not a number", text);
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end != '\0') return cli_fail(flag, "'%s' is not a number", text);
    if (!isfinite(v)) return cli_fail(flag, "'%s' is not a finite number", text);
    *out = v;
    return 0;
}

int cli_parse_threads(const char *flag, const char *text)
{
    if (!text) return 0;
    errno = 0;
    const long n = is_decimal(text, 1) ? strtol(text, NULL, 10) : 0;
    if (errno == ERANGE || n < 1 || n > LA_MAX_THREADS || la_set_num_threads((int)n) != LA_OK)
        return cli_fail(flag, "'%s' is not a thread count in 1..%d", text, LA_MAX_THREADS);
    return 0;
}

int cli_parse_choice(const char *flag, const char *text, const char *const *choices, int *out)
{
    if (!text || !*text) return cli_fail(flag, "needs a value");
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; choices[i]; i++) {
        if (strcmp(text, choices[i]) == 0) {
            *out = i;
            return 0;
        }
        int n = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", choices[i]);
        if (n > 0 && (size_t)n < sizeof list - used) used += (size_t)n;
    }
    char hint[160];
    return cli_fail(flag, "'%s' is not one of %s%s", text, list,
                    cli_did_you_mean(text, list, hint, sizeof hint));
}

/* ---------------------------------------------------------------- lists */

int cli_split_list(const char *flag, const char *text, char *buf, size_t size, char **items,
                   size_t max, size_t *count)
{
    *count = 0;
    if (!text || !*text) return cli_fail(flag, "needs a value");
    if (strlen(text) >= size) return cli_fail(flag, "list too long");
    strcpy(buf, text);
    for (char *item = buf;;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = 0;
        if (!*item) return cli_fail(flag, "empty item in '%s'", text);
        if (*count == max) return cli_fail(flag, "more than %zu items", max);
        items[(*count)++] = item;
        if (!comma) return 0;
        item = comma + 1;
    }
}

int cli_parse_choice_list(const char *flag, const char *text, const char *const *choices, int *out,
                          size_t max, size_t *count)
{
    char buf[1024], *items[64];
    int rc = cli_split_list(flag, text, buf, sizeof buf, items, max < 64 ? max : 64, count);
    for (size_t i = 0; !rc && i < *count; i++) {
        rc = cli_parse_choice(flag, items[i], choices, &out[i]);
        for (size_t j = 0; !rc && j < i; j++)
            if (out[j] == out[i]) rc = cli_fail(flag, "'%s' given twice", items[i]);
    }
    return rc;
}

/* ---------------------------------------------------------------- help */

/* Characters (UTF-8 code points) in s[0..n). */
static size_t width_of(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += ((unsigned char)s[i] & 0xC0) != 0x80;
    return w;
}

void cli_print_wrapped(FILE *out, const char *text, size_t column)
{
    const size_t limit = 88;
    size_t used = column;
    for (const char *word = text; *word;) {
        size_t len = strcspn(word, " ");
        size_t w = width_of(word, len);
        if (used > column && used + 1 + w > limit) {
            fprintf(out, "\n%*s", (int)column, "");
            used = column;
        } else if (used > column) {
            fputc(' ', out);
            used++;
        }
        fwrite(word, 1, len, out);
        used += w;
        word += len;
        while (*word == ' ')
            word++;
    }
    fputc('\n', out);
}

/* ---------------------------------------------------------------- flags */

/* Edit distance between a[0..n) and b[0..m) (insert, delete, replace, swap two
 * neighbours; '-' equals '_'), capped: anything above 3 is 3. */
static size_t edits(const char *a, size_t n, const char *b, size_t m)
{
    enum { CAP = 3, MAXLEN = 64 };
    if (n > MAXLEN || m > MAXLEN) return CAP;
    size_t d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            char x = a[i - 1] == '-' ? '_' : a[i - 1], y = b[j - 1] == '-' ? '_' : b[j - 1];
            size_t best = d[i - 1][j - 1] + (x != y);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m] < CAP ? d[n][m] : CAP;
}

const char *cli_did_you_mean(const char *word, const char *list, char *buf, size_t size)
{
    const char *best = NULL;
    size_t best_len = 0, best_d = 3, ties = 0, wlen = strlen(word);
    for (const char *p = list; *p;) {
        p += strspn(p, ", |");
        size_t len = strcspn(p, ", |");
        if (!len) break;
        size_t d = edits(word, wlen, p, len);
        if (d < best_d)
            best = p, best_len = len, best_d = d, ties = 1;
        else if (d == best_d && best)
            ties++;
        p += len;
    }
    /* one clear candidate, and not a rewrite of most of a short word */
    if (!best || ties != 1 || best_d == 0 || 2 * best_d >= wlen) {
        if (size) buf[0] = 0;
        return buf;
    }
    snprintf(buf, size, "; did you mean %.*s?", (int)best_len, best);
    return buf;
}

static const cli_flag *find_flag(const cli_flag *flags, const char *name, size_t len)
{
    for (const cli_flag *f = flags; f->name; f++)
        if (strlen(f->name) == len && strncmp(f->name, name, len) == 0) return f;
    return NULL;
}

void cli_deprecated(const char *old, const char *use)
{
    cli_line("warning: %s is deprecated, use %s", old, use);
}

static const cli_alias *find_alias(const cli_alias *aliases, const char *name, size_t len)
{
    for (const cli_alias *a = aliases; a && a->old; a++)
        if (strlen(a->old) == len && strncmp(a->old, name, len) == 0) return a;
    return NULL;
}

int cli_parse_flags(int argc, char **argv, const cli_flag *flags)
{
    return cli_parse_flags_aliased(argc, argv, flags, NULL);
}

int cli_parse_flags_aliased(int argc, char **argv, const cli_flag *flags, const cli_alias *aliases)
{
    const char *command = argc > 0 ? argv[0] : "linattn";
    /* which flags were seen, to refuse repeats (at most 64 flags per command) */
    unsigned long long seen = 0;
    /* the deprecated names used, by alias (at most 64): warned about once parsing has
     * succeeded, so an error stays the only line */
    unsigned long long renamed = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            return cli_fail(command, "unexpected argument '%s' (see linattn help %s)", arg,
                            command);
        /* --name or --name=value */
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t name_len = eq ? (size_t)(eq - name) : strlen(name);
        char shown[128];
        snprintf(shown, sizeof shown, "--%.*s", (int)(name_len < 100 ? name_len : 100), name);
        /* a deprecated name is the flag it now is (its warning comes after the loop) */
        const cli_alias *alias = find_alias(aliases, name, name_len);
        const cli_flag *f = alias ? find_flag(flags, alias->now, strlen(alias->now))
                                  : find_flag(flags, name, name_len);
        if (!f) {
            char names[2048] = "", hint[160];
            size_t used = 0;
            for (const cli_flag *g = flags; g->name && used + 4 < sizeof names; g++) {
                int k = snprintf(names + used, sizeof names - used, "--%s ", g->name);
                if (k > 0) used += (size_t)k;
            }
            char typed[104];
            snprintf(typed, sizeof typed, "--%.*s", (int)(name_len < 100 ? name_len : 100), name);
            return cli_fail(shown, "unknown flag%s (see linattn help %s)",
                            cli_did_you_mean(typed, names, hint, sizeof hint), command);
        }
        if (alias && alias - aliases < 64) renamed |= 1ull << (alias - aliases);
        size_t index = (size_t)(f - flags);
        if (index < 64) {
            if (seen >> index & 1) return cli_fail(shown, "given more than once");
            seen |= 1ull << index;
        }
        if (f->value) {
            const char *value;
            if (eq)
                value = eq + 1;
            else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                value = argv[++i];
            else
                value = NULL;
            if (!value || !*value) return cli_fail(shown, "needs a value");
            *f->value = value;
        } else if (eq) {
            return cli_fail(shown, "takes no value");
        }
        if (f->present) *f->present = 1;
    }
    for (const cli_alias *a = aliases; renamed && a->old; a++, renamed >>= 1) {
        if (!(renamed & 1)) continue;
        char old[128], now[128];
        snprintf(old, sizeof old, "--%s", a->old);
        snprintf(now, sizeof now, "--%s", a->now);
        cli_deprecated(old, now);
    }
    return 0;
}

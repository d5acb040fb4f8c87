/* cli.h — what every `linattn` subcommand shares: one-line errors, validated numbers,
 * long options (arrays.h: the .npy files).
 *
 * The rule for errors: a subcommand prints exactly one line to stderr,
 *     linattn: WHAT: why
 * where WHAT is the flag (--scale), the file (q.npy) or the command (attend) at fault,
 * and exits 2. Every helper below that can fail prints that line itself and returns 2,
 * so a caller writes `if ((rc = cli_parse_double("--scale", text, &scale))) return rc;`.
 * On success they return 0.
 *
 * A typical subcommand:
 *     const char *q_path = NULL, *scale_text = NULL;
 *     int causal = 0;
 *     const cli_flag flags[] = {
 *         {"q", &q_path, NULL}, {"scale", &scale_text, NULL}, {"causal", NULL, &causal},
 *         {NULL, NULL, NULL},
 *     };
 *     int rc = cli_parse_flags(argc, argv, flags);
 *     if (rc) return rc;
 */
#ifndef LA_CLI_H
#define LA_CLI_H

#include "linattn.h"

#include <stddef.h>
#include <stdio.h>

/* Prints "linattn: <fmt, ...>" and a newline to stderr, one line: control characters
 * (a path may hold any) written as \n, \t, \r or \xHH. Notes, warnings, and errors
 * whose subject is already in the message. */
void cli_line(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Prints "linattn: WHAT: <fmt, ...>" and a newline to stderr, one line whatever WHAT or
 * the message hold (escaped as cli_line does); returns 2. */
int cli_fail(const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "; did you mean NAME?" when exactly one name of list (names separated by commas,
 * spaces or '|') is nearest to word and within 2 edits of it ('-' and '_' alike), else
 * "": for the end of an "unknown" message. Written into buf (size bytes), returned. */
const char *cli_did_you_mean(const char *word, const char *list, char *buf, size_t size);

/* ---------------------------------------------------------------- numbers */

/* The whole of text must be the number: no spaces, no trailing characters. Errors name
 * the flag: "linattn: --scale: 'abc' is not a number". */
int cli_parse_size(const char *flag, const char *text, size_t *out);   /* decimal, >= 0 */
int cli_parse_int(const char *flag, const char *text, int *out);       /* decimal, int range */
int cli_parse_double(const char *flag, const char *text, double *out); /* finite only */

/* A size flag of command with a lower bound: text NULL (the flag absent) leaves *out as
 * it is, or, when required, fails with "--heads: required flag is missing (see linattn
 * help flops)"; else the size must be >= min ("--heads: must be at least 1"). */
int cli_parse_size_flag(const char *command, const char *flag, const char *text, int required,
                        size_t min, size_t *out);

/* --threads T (text NULL: the flag absent, nothing to do): an integer in
 * 1..LA_MAX_THREADS, else "--threads: '0' is not a thread count in 1..1024"; applied with
 * la_set_num_threads, which runs a count above the online cores on the cores (the rule
 * in linattn.h; the results' # threads_requested records the count asked for). */
#define CLI_THREADS_HELP                                                                           \
    "T in 1..1024; above the cores runs on the cores,\n"                                           \
    "                       recorded as threads_requested" /* under a flag's text at column 23 */
int cli_parse_threads(const char *flag, const char *text);

/* text must be one of choices (a NULL-terminated list); *out receives its index.
 * "linattn: --variant: 'foo' is not one of softmax, linear, hard". */
int cli_parse_choice(const char *flag, const char *text, const char *const *choices, int *out);

/* ---------------------------------------------------------------- lists */

/* Splits a comma-separated list ("16,32,64") into its items: a copy of text goes into buf
 * (size bytes) and items[0..*count) point into it. Refuses, with one line naming flag, an
 * empty item ("--n: empty item in '16,,64'"), more than max items and a text that does
 * not fit buf. The one list parser: the lists of sizes, names and choices use it. */
int cli_split_list(const char *flag, const char *text, char *buf, size_t size, char **items,
                   size_t max, size_t *count);

/* A list whose items are each one of choices (NULL-terminated) and none given twice:
 * out[0..*count) receives their indices in the order given (at most max). */
int cli_parse_choice_list(const char *flag, const char *text, const char *const *choices, int *out,
                          size_t max, size_t *count);

/* ---------------------------------------------------------------- help */

/* Prints text, the cursor being at column `column` (0-based), wrapped at spaces before
 * column 88, each continuation line indented to column; then a newline. */
void cli_print_wrapped(FILE *out, const char *text, size_t column);

/* ---------------------------------------------------------------- flags */

/* One long option. name is without the dashes ("q" for --q). A flag with a value has
 * value set: it receives the text of `--name VALUE` or `--name=VALUE` and stays NULL
 * when the flag is absent. A boolean flag has value NULL and present set: *present
 * becomes 1 when the flag is given. (present may also be set for a flag with a value.)
 * A list of flags ends with {NULL, NULL, NULL}. */
typedef struct {
    const char *name;
    const char **value;
    int *present;
} cli_flag;

/* Parses argv[1..argc-1] (argv[0] is the subcommand's name, used in messages) against
 * flags. Refuses, with one line and 2: an unknown flag ("--bogus: unknown flag (see
 * linattn help attend)"), a missing or empty value ("--q: needs a value"; the next
 * argument does not count as a value when it starts with "--"), a value given to a
 * boolean flag, a flag given twice, and any argument that is not a flag. */
int cli_parse_flags(int argc, char **argv, const cli_flag *flags);

/* ---------------------------------------------------------------- deprecations */

/* Old spellings keep working for one release, after one line on stderr:
 *     linattn: warning: --variants is deprecated, use --variant
 * cli_deprecated prints it (old: what was given; use: what to write instead). A flag
 * that was only renamed goes in an alias list given to cli_parse_flags_aliased; a
 * deprecated flag with a meaning of its own (attend --kernel FORM) stays in the
 * command's table and the command calls cli_deprecated with the exact replacement. */
void cli_deprecated(const char *old, const char *use);

/* A renamed flag: --old reads as --now (a flag of the table); giving both is "given more
 * than once". A list ends with {NULL, NULL}. */
typedef struct {
    const char *old, *now; /* without the dashes: {"variants", "variant"} */
} cli_alias;

/* cli_parse_flags, with the old names of aliases (NULL: none) read as their new ones:
 * one cli_deprecated line per old name used, printed once parsing has succeeded (a
 * parsing error stays the only line; a later error of the command follows the warning). */
int cli_parse_flags_aliased(int argc, char **argv, const cli_flag *flags, const cli_alias *aliases);

#endif

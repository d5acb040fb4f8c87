/* sweep.h — what the experiment drivers share beyond cli.h: the flags every sweep takes
 * (output file, --resume, budgets, threads, seed, repetitions), and parsers for sizes,
 * byte counts, ranges and lists. Errors follow cli.h: one line, return 2. */
#ifndef LA_SWEEP_H
#define LA_SWEEP_H

#include "cli.h"
#include "machine.h"
#include "timer.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *out;    /* --out PATH */
    int resume;         /* --resume: keep the points already in PATH */
    double max_seconds; /* --max-seconds S: skip a kernel call predicted to take longer */
    double max_mem;     /* --max-mem SIZE: skip a point predicted to hold more bytes */
    int threads;        /* --threads T (0: the library's default) */
    uint64_t seed;      /* --seed N */
    int min_reps;       /* --reps N: at least N timed repetitions per point */
    double min_time;    /* --min-time S: repeat a fast point until it took S in total */
} sweep_common;

/* The shared flags' texts, filled by cli_parse_flags through SWEEP_COMMON_FLAGS. */
typedef struct {
    const char *out, *max_seconds, *max_mem, *threads, *seed, *reps, *min_time;
    int resume;
} sweep_common_text;

/* Entries for a cli_flag table: {..., SWEEP_COMMON_FLAGS(text), {NULL, NULL, NULL}} */
// clang-format off
#define SWEEP_COMMON_FLAGS(t)                                                                 \
    {"out", &(t).out, NULL}, {"resume", NULL, &(t).resume},                                \
    {"max-seconds", &(t).max_seconds, NULL}, {"max-mem", &(t).max_mem, NULL},              \
    {"threads", &(t).threads, NULL}, {"seed", &(t).seed, NULL},                            \
    {"reps", &(t).reps, NULL}, {"min-time", &(t).min_time, NULL}
// clang-format on

/* Help text for the shared flags. */
#define SWEEP_COMMON_HELP                                                                          \
    "  --out PATH         results file (CSV with a # metadata header; by default in the\n"         \
    "                     current directory, never in the repository's results/, which\n"          \
    "                     only `linattn results --update` writes)\n"                               \
    "  --resume           keep the points already in PATH, measure only the missing ones\n"        \
    "  --max-seconds S    skip (and record as skipped) a kernel call predicted to take\n"          \
    "                     longer than S seconds\n"                                                 \
    "  --max-mem SIZE     skip (and record) a point predicted to hold more than SIZE\n"            \
    "                     bytes (suffixes K, M, G; at most the machine's memory)\n"                \
    "  --threads T        kernel threads (default: LA_NUM_THREADS or all cores), T in\n"           \
    "                     1..1024; above the cores runs on the cores, recorded in the\n"           \
    "                     results as # threads_requested\n"                                        \
    "  --seed N           seed of the random inputs (default 1)\n"                                 \
    "  --reps N           at least N timed repetitions per point (default 3)\n"                    \
    "  --min-time S       repeat fast points until they took S seconds (default 0.2)\n"

/* Converts the texts given (defaults for the others: out, max_seconds, max_mem as
 * passed, seed 1, 3 repetitions, 0.2 s) and applies --threads. --max-mem takes a byte
 * count with an optional suffix K, M or G (powers of 1024) and B: 8G, 512M, 1000000;
 * the budget is at most the machine's physical memory (machine_physical_memory).
 * Returns 0 or 2. */
int sweep_common_finish(const sweep_common_text *t, sweep_common *c, const char *out,
                        double max_seconds, double max_mem);

/* Value parsers on top of cli.h: 0, or 2 after one line. */
int sweep_parse_positive(const char *flag, const char *s, size_t *out); /* >= 1 */

/* The one syntax of every numeric sweep flag (--n, --d, --heads, --batch, ... in every
 * subcommand): a comma-separated list whose items are each
 *     V          one value                                    512
 *     LO:HI      LO, LO·F, LO·F², ... up to HI (F = factor)   128:65536
 *     LO:HI:xF   the same with the factor F given (F > 1)     128:4096:x1.5
 * e.g. "256,512,1024", "128:65536", "64,128:1024:x4". Values are sizes in 1..2^53,
 * kept in the order given without repeats; at most max (<= 256) in all. factor is the
 * default F (a subcommand's --factor; <= 1 means 2), 1 < F <= 1024. Errors name the
 * flag and the item: 0, or 2 after one line, e.g.
 *     --n: empty item in '16,,64'            --n: '12:x' is not a value, LO:HI or LO:HI:xF
 *     --n: '64:16': HI is below LO          --n: '0:8': values must be at least 1
 *     --n: '1:8:x1': 'x1' is not a factor xF with 1 < F <= 1024
 *     --n: '99999999999999999999' is too large (at most 2^53)
 *     --n: more than 64 values in '1:1000000:x1.01'
 *     --n: '16:64:x1.000000000000001': 1.25e+15 steps from LO to HI; at most 4096 (…)
 * A range of more than SWEEP_MAX_STEPS multiplications is refused, whatever its values. */
enum { SWEEP_MAX_STEPS = 4096 };
#define SWEEP_SYNTAX "V, LO:HI (doubling) or LO:HI:xF, comma-separated"
int sweep_parse(const char *flag, const char *s, double factor, size_t *out, size_t max, size_t *n);
/* A sweep that searches N upwards (a crossover, a budget that skips every larger point
 * once one is too slow) takes its values in increasing order: sorts v[0..n). */
void sweep_sort_sizes(size_t *v, size_t n);

/* Sizes and memory, checked before anything is allocated (the rule of every command):
 *   - a size whose arrays cannot be addressed is refused: sweep_check_floats fails, with
 *     one line naming flag, when `a × b × c` floats (inputs_float_count, the one
 *     overflow-checked size) or their bytes overflow size_t;
 *   - a sweep skips, and records as skipped_mem, a point predicted to hold more than
 *     --max-mem bytes; a command without --max-mem refuses a run whose buffers exceed
 *     the machine's physical memory (sweep_check_memory with machine_physical_memory()). */
int sweep_check_floats(const char *flag, size_t a, size_t b, size_t c);
/* bytes > budget: "WHAT: needs 12.0 GiB, more than the 7.6 GiB of BUDGET_NAME", 2
 * (budget_name: "memory here", "--max-mem"). */
int sweep_check_memory(const char *what, double bytes, double budget, const char *budget_name);

/* The repetition rule of a sweep's points (for timer_run, timer_kernel): at least
 * c->min_reps, until they took c->min_time together (at most 1000); a warm-up slower
 * than 1 s counts as the first repetition. */
timer_rule sweep_rule(const sweep_common *c);

/* Geometric sweep lo, lo·f, lo·f², … up to hi (inclusive, rounded to integers, no
 * repeats), at most SWEEP_MAX_STEPS + 1 multiplications. Returns the count (at most max). */
size_t sweep_geometric(size_t lo, size_t hi, double factor, size_t *out, size_t max);

#endif

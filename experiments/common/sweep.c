/* sweep.c — shared flags and parsers of the experiment drivers. */
#include "sweep.h"

#include "inputs.h"
#include "linattn.h"
#include "machine.h"
#include "timer.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sweep_parse_positive(const char *flag, const char *s, size_t *out)
{
    int rc = cli_parse_size(flag, s, out);
    if (rc) return rc;
    if (*out == 0) return cli_fail(flag, "must be at least 1");
    return 0;
}

/* 8G, 512M, 1000000: bytes, > 0 */
static int parse_bytes(const char *flag, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double unit = 1;
    if (*end == 'K' || *end == 'k')
        unit = 1024.0, end++;
    else if (*end == 'M' || *end == 'm')
        unit = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        unit = 1024.0 * 1024 * 1024, end++;
    if (*end == 'B' || *end == 'b') end++;
    if (errno || !s[0] || *end || !isfinite(v) || v <= 0)
        return cli_fail(flag, "'%s' is not a size such as 8G, 512M or 1000000", s);
    *out = v * unit;
    return 0;
}

/* text is a size >= 1, at most 2^53 (where doubles stop counting exactly: a size that
 * large is refused by the memory checks anyway; this keeps the arithmetic defined): 1
 * (into *out), 0 not a decimal, -1 too large, -2 zero. Prints nothing. */
static int sweep_value(const char *text, size_t *out)
{
    if (!*text) return 0;
    for (const char *c = text; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    errno = 0;
    unsigned long long v = strtoull(text, NULL, 10);
    if (errno == ERANGE || v > (1ull << 53) || v > SIZE_MAX) return -1;
    if (v == 0) return -2;
    *out = (size_t)v;
    return 1;
}

/* One item of a sweep: V, LO:HI or LO:HI:xF, into values (the first cap of them: the
 * caller's max + 1 tells it that there are more than max); the count, or 0 after one
 * line. */
static size_t sweep_item(const char *flag, const char *item, double factor, size_t *values,
                         size_t cap)
{
    char buf[256], *part[3] = {buf, NULL, NULL};
    if (strlen(item) >= sizeof buf) return cli_fail(flag, "'%.40s…' is too long", item), 0;
    strcpy(buf, item);
    int parts = 1;
    for (char *c = buf; *c; c++)
        if (*c == ':') {
            if (parts == 3)
                return cli_fail(flag, "'%s' is not a value, LO:HI or LO:HI:xF", item), 0;
            *c = 0;
            part[parts++] = c + 1;
        }
    size_t ends[2];
    for (int i = 0; i < (parts < 2 ? 1 : 2); i++) {
        int got = sweep_value(part[i], &ends[i]);
        if (got == 0) return cli_fail(flag, "'%s' is not a value, LO:HI or LO:HI:xF", item), 0;
        if (got == -1) return cli_fail(flag, "'%s' is too large (at most 2^53)", item), 0;
        if (got == -2) return cli_fail(flag, "'%s': values must be at least 1", item), 0;
    }
    if (parts == 1) {
        values[0] = ends[0];
        return 1;
    }
    if (ends[1] < ends[0]) return cli_fail(flag, "'%s': HI is below LO", item), 0;
    double f = factor > 1 ? factor : 2;
    if (parts == 3) {
        char *end;
        errno = 0;
        f = part[2][0] == 'x' && part[2][1] >= '0' && part[2][1] <= '9' ? strtod(part[2] + 1, &end)
                                                                        : 0;
        if (f == 0 || errno || *end || !(f > 1 && f <= 1024))
            return cli_fail(flag, "'%s': '%s' is not a factor xF with 1 < F <= 1024", item,
                            part[2]),
                   0;
    }
    /* bounded by its number of steps, not only of distinct values: a factor just above
     * 1 (x1.000000000000001) would round to the same value some 10^14 times */
    const double steps = log((double)ends[1] / (double)ends[0]) / log(f);
    if (!(steps <= SWEEP_MAX_STEPS))
        return cli_fail(flag, "'%s': %.3g steps from LO to HI; at most %d (a larger factor)", item,
                        steps, SWEEP_MAX_STEPS),
               0;
    return sweep_geometric(ends[0], ends[1], f, values, cap);
}

int sweep_parse(const char *flag, const char *s, double factor, size_t *out, size_t max, size_t *n)
{
    char buf[2048], *items[256];
    size_t count;
    if (max > 256) max = 256;
    *n = 0;
    int rc = cli_split_list(flag, s, buf, sizeof buf, items, 256, &count);
    if (rc) return rc;
    for (size_t i = 0; i < count; i++) {
        /* max + 1 values of the item: if they all are new, the check below fails */
        size_t values[257];
        const size_t got = sweep_item(flag, items[i], factor, values, max + 1);
        if (got == 0) return 2;
        for (size_t j = 0; j < got; j++) {
            bool seen = false;
            for (size_t m = 0; m < *n && !seen; m++)
                seen = out[m] == values[j];
            if (seen) continue;
            if (*n == max) return cli_fail(flag, "more than %zu values in '%s'", max, s);
            out[(*n)++] = values[j];
        }
    }
    return 0;
}

void sweep_sort_sizes(size_t *v, size_t n)
{
    for (size_t i = 1; i < n; i++) /* insertion sort: at most 256 values */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            size_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

int sweep_common_finish(const sweep_common_text *t, sweep_common *c, const char *out,
                        double max_seconds, double max_mem)
{
    size_t sz;
    int rc;
    memset(c, 0, sizeof *c);
    c->out = t->out ? t->out : out;
    c->resume = t->resume;
    c->max_seconds = max_seconds;
    c->max_mem = max_mem;
    c->seed = 1;
    c->min_reps = 3;
    c->min_time = 0.2;
    if (t->max_seconds) {
        if ((rc = cli_parse_double("--max-seconds", t->max_seconds, &c->max_seconds))) return rc;
        if (c->max_seconds <= 0) return cli_fail("--max-seconds", "must be positive");
    }
    if (t->max_mem && (rc = parse_bytes("--max-mem", t->max_mem, &c->max_mem))) return rc;
    /* no budget beyond the machine: a point that cannot fit is skipped, not allocated */
    if (c->max_mem > machine_physical_memory()) c->max_mem = machine_physical_memory();
    if ((rc = cli_parse_threads("--threads", t->threads))) return rc;
    c->threads = t->threads ? la_num_threads_requested() : 0;
    if (t->seed) {
        if ((rc = cli_parse_size("--seed", t->seed, &sz))) return rc;
        c->seed = sz;
    }
    if (t->reps) {
        if ((rc = sweep_parse_positive("--reps", t->reps, &sz))) return rc;
        if (sz > 1000) return cli_fail("--reps", "at most 1000");
        c->min_reps = (int)sz;
    }
    if (t->min_time) {
        if ((rc = cli_parse_double("--min-time", t->min_time, &c->min_time))) return rc;
        if (c->min_time < 0) return cli_fail("--min-time", "must not be negative");
    }
    return 0;
}

int sweep_check_floats(const char *flag, size_t a, size_t b, size_t c)
{
    if (a && b && c && inputs_float_count(a, b, c) == 0)
        return cli_fail(flag, "%zu x %zu x %zu floats overflow the address space", a, b, c);
    return 0;
}

int sweep_check_memory(const char *what, double bytes, double budget, const char *budget_name)
{
    if (!(bytes <= budget)) {
        const double gib = 1024.0 * 1024 * 1024;
        return cli_fail(what, "needs %.1f GiB, more than the %.1f GiB of %s", bytes / gib,
                        budget / gib, budget_name);
    }
    return 0;
}

timer_rule sweep_rule(const sweep_common *c)
{
    return (timer_rule){c->min_reps, 1000, c->min_time, 1.0};
}

size_t sweep_geometric(size_t lo, size_t hi, double factor, size_t *out, size_t max)
{
    size_t n = 0;
    if (factor <= 1) factor = 2;
    double x = (double)lo;
    for (int step = 0;
         step <= SWEEP_MAX_STEPS && n < max && x <= (double)hi * (1 + 1e-9) && x < 0x1p63;
         step++, x *= factor) {
        size_t v = (size_t)llround(x);
        if (n == 0 || v != out[n - 1]) out[n++] = v;
    }
    return n;
}

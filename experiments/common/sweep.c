/* sweep.c — shared flags and parsers of the experiment drivers. */
#include "sweep.h"

#include "inputs.h"
#include "linattn.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sw_parse_positive(const char *flag, const char *s, size_t *out)
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

int sw_parse_range(const char *flag, const char *s, size_t *lo, size_t *hi)
{
    const char *colon = strchr(s, ':');
    char buf[64];
    int rc;
    if (!colon) {
        if ((rc = sw_parse_positive(flag, s, lo))) return rc;
        *hi = *lo;
        return 0;
    }
    size_t len = (size_t)(colon - s);
    if (len >= sizeof buf) return cli_fail(flag, "'%s' is not a range LO:HI", s);
    memcpy(buf, s, len);
    buf[len] = 0;
    if ((rc = sw_parse_positive(flag, buf, lo)) || (rc = sw_parse_positive(flag, colon + 1, hi)))
        return rc;
    if (*hi < *lo) return cli_fail(flag, "'%s': HI is below LO", s);
    return 0;
}

int sw_parse_size_list(const char *flag, const char *s, size_t *out, size_t max, size_t *n)
{
    char buf[1024], *items[64];
    int rc = cli_split_list(flag, s, buf, sizeof buf, items, max < 64 ? max : 64, n);
    for (size_t i = 0; !rc && i < *n; i++)
        rc = sw_parse_positive(flag, items[i], &out[i]);
    return rc;
}

int sw_parse_sweep(const char *flag, const char *s, double factor, size_t *out, size_t max,
                   size_t *n)
{
    char buf[2048], *items[256];
    size_t count;
    if (max > 256) max = 256;
    int rc = cli_split_list(flag, s, buf, sizeof buf, items, 256, &count);
    if (rc) return rc;
    *n = 0;
    for (size_t i = 0; i < count; i++) {
        char *item = items[i], *c1 = strchr(item, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        size_t lo, hi;
        double f = factor > 1 ? factor : 2;
        if (!c1) {
            if ((rc = sw_parse_positive(flag, item, &lo))) return rc;
            hi = lo;
        } else {
            *c1 = 0;
            if (c2) *c2 = 0;
            if ((rc = sw_parse_positive(flag, item, &lo)) ||
                (rc = sw_parse_positive(flag, c1 + 1, &hi)))
                return rc;
            if (hi < lo) return cli_fail(flag, "'%s:%s': HI is below LO", item, c1 + 1);
            if (c2) {
                if (c2[1] != 'x' || cli_parse_double(flag, c2 + 2, &f))
                    return cli_fail(flag, "'%s' is not a factor xF (e.g. x2, x1.5)", c2 + 1);
                if (!(f > 1 && f <= 1024))
                    return cli_fail(flag, "factor %s must be in (1, 1024]", c2 + 1);
            }
        }
        size_t values[256];
        const size_t got = c1 ? sw_geometric(lo, hi, f, values, 256) : (values[0] = lo, 1);
        for (size_t j = 0; j < got; j++) {
            bool seen = false;
            for (size_t m = 0; m < *n && !seen; m++)
                seen = out[m] == values[j];
            if (seen) continue;
            if (*n == max) return cli_fail(flag, "more than %zu values", max);
            out[(*n)++] = values[j];
        }
    }
    return 0;
}

int sw_common_finish(const sw_common_text *t, sw_common *c, const char *out, double max_seconds,
                     double max_mem)
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
    if (c->max_mem > sw_physical_memory()) c->max_mem = sw_physical_memory();
    if ((rc = cli_parse_threads("--threads", t->threads))) return rc;
    c->threads = t->threads ? la_num_threads_requested() : 0;
    if (t->seed) {
        if ((rc = cli_parse_size("--seed", t->seed, &sz))) return rc;
        c->seed = sz;
    }
    if (t->reps) {
        if ((rc = sw_parse_positive("--reps", t->reps, &sz))) return rc;
        if (sz > 1000) return cli_fail("--reps", "at most 1000");
        c->min_reps = (int)sz;
    }
    if (t->min_time) {
        if ((rc = cli_parse_double("--min-time", t->min_time, &c->min_time))) return rc;
        if (c->min_time < 0) return cli_fail("--min-time", "must not be negative");
    }
    return 0;
}

int sw_check_floats(const char *flag, size_t a, size_t b, size_t c)
{
    if (a && b && c && in_float_count(a, b, c) == 0)
        return cli_fail(flag, "%zu x %zu x %zu floats overflow the address space", a, b, c);
    return 0;
}

double sw_physical_memory(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
}

int sw_check_memory(const char *what, double bytes, double budget, const char *budget_name)
{
    if (!(bytes <= budget)) {
        const double gib = 1024.0 * 1024 * 1024;
        return cli_fail(what, "needs %.1f GiB, more than the %.1f GiB of %s", bytes / gib,
                        budget / gib, budget_name);
    }
    return 0;
}

res_rule sw_rule(const sw_common *c)
{
    return (res_rule){c->min_reps, 1000, c->min_time, 1.0};
}

size_t sw_geometric(size_t lo, size_t hi, double factor, size_t *out, size_t max)
{
    size_t n = 0;
    if (factor <= 1) factor = 2;
    for (double x = (double)lo; n < max && x <= (double)hi * (1 + 1e-9); x *= factor) {
        size_t v = (size_t)llround(x);
        if (n == 0 || v != out[n - 1]) out[n++] = v;
    }
    return n;
}

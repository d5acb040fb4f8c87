/* decode.c — `linattn decode`: autoregressive generation, one token at a time.
 * Softmax attention keeps a KV cache and attends the new query over all t cached keys
 * (la_attention with N = 1, M = t: O(t) per token, O(T²) in total); linear
 * attention carries its recurrent state (la_linear_step: O(1) per token, O(T) in
 * total). Writes per-token latency against the position t, in geometric bins, and the
 * running total, to decode.csv. */
#include "commands.h"
#include "common/inputs.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/stats.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn decode [--tokens T] [--d D] [--heads H] [--bins-per-doubling K]\n"
    "                      [shared flags]\n"
    "\n"
    "Generates T tokens autoregressively from random float32 q, k, v streams and times\n"
    "each token: softmax attention over a growing KV cache (the new query against the t\n"
    "keys written so far, la_attention with N = 1 and M = t reading the cache in place\n"
    "through its strides) against causal linear attention's\n"
    "recurrent state (la_linear_step). Each generation is repeated --reps times and\n"
    "a token's latency is its median over them; rows give the median, min, max, 10th\n"
    "and 90th percentiles over the tokens of geometric bins of positions, and the\n"
    "cumulative time to generate up to the bin's last token (the last row of each\n"
    "variant is the total).\n"
    "\n"
    "  --tokens T             tokens to generate (default 8192)\n"
    "  --d D                  head size, d_k = d_v = D (default 64)\n"
    "  --heads H              heads (default 8)\n"
    "  --bins-per-doubling K  position bins per factor of two (default 4)\n" SWEEP_COMMON_HELP
    "                         (defaults: --out decode.csv --max-seconds 120\n"
    "                         --max-mem 8G; --max-seconds bounds one whole generation:\n"
    "                         past it the rest of that variant is recorded skipped_time)\n";

void cmd_decode_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] =
    "variant,tokens,d_k,d_v,heads,threads,t_first,t_last,status,tokens_in_bin,median_s,"
    "min_s,max_s,p10_s,p90_s,cumulative_s";
enum { N_KEY = 8 };

typedef struct {
    size_t tokens, d, heads, bins_per_doubling;
    sweep_common common;
} config;

static int parse(int argc, char **argv, config *c)
{
    const char *tokens = NULL, *d = NULL, *heads = NULL, *bins = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"tokens", &tokens, NULL},  {"d", &d, NULL},
        {"heads", &heads, NULL},    {"bins-per-doubling", &bins, NULL},
        SWEEP_COMMON_FLAGS(common), {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->tokens = 8192, c->d = 64, c->heads = 8, c->bins_per_doubling = 4;
    if (tokens && (rc = sweep_parse_positive("--tokens", tokens, &c->tokens))) return rc;
    if (d && (rc = sweep_parse_positive("--d", d, &c->d))) return rc;
    if (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) return rc;
    if (bins && (rc = sweep_parse_positive("--bins-per-doubling", bins, &c->bins_per_doubling)))
        return rc;
    if (c->bins_per_doubling > 64) return cli_fail("--bins-per-doubling", "at most 64");
    if ((rc = sweep_common_finish(&common, &c->common, "decode.csv", 120, 8.0 * (1 << 30))))
        return rc;
    /* the streams (T, H, d) and the latencies (reps, T) doubles must be addressable */
    if ((rc = sweep_check_floats("--tokens", c->tokens, c->heads, c->d)) ||
        (rc = sweep_check_floats("--tokens", (size_t)c->common.min_reps, c->tokens, 2)))
        return rc;
    return 0;
}

/* The token streams and what each generator holds. q, k, v: (T, H, d) token-major, so
 * token t's (H, d) rows are contiguous as the step API wants them. */
typedef struct {
    size_t T, H, d;
    const float *q, *k, *v;
    float *y;                 /* (H, d) the current token's output */
    float *k_cache, *v_cache; /* softmax: (H, T, d), the first t rows of each head used */
    la_linear_state *state;   /* linear: (S, z) per head */
} gen;

/* Softmax with a KV cache, token t (0-based): append k_t, v_t to the cache, then the
 * one query against the t + 1 keys written so far: M = t + 1, the cache's T-row slots
 * given by its strides, read in place. */
static la_status softmax_token(gen *g, size_t t)
{
    const size_t H = g->H, d = g->d;
    for (size_t h = 0; h < H; h++) {
        memcpy(g->k_cache + (h * g->T + t) * d, g->k + (t * H + h) * d, d * sizeof(float));
        memcpy(g->v_cache + (h * g->T + t) * d, g->v + (t * H + h) * d, d * sizeof(float));
    }
    la_problem p;
    la_problem_init(&p, 1, H, 1, t + 1, d, d);
    p.stride_k = p.stride_v = (la_strides){H * g->T * d, g->T * d, d};
    return la_attention(LA_KERNEL_SOFTMAX, &p, LA_FLOAT32, g->q + t * H * d, g->k_cache, g->v_cache,
                        g->y);
}

/* A causal linear attention state of H heads of size d: φ = elu + 1, the default eps. */
static la_status linear_state_elu(la_linear_state **state, size_t H, size_t d)
{
    la_problem p;
    la_problem_init(&p, 1, H, 1, 1, d, d);
    return la_linear_state_create(state, LA_KERNEL_LINEAR, &p, LA_FLOAT32);
}

/* Linear attention, token t: one step of the recurrence. */
static la_status linear_token(gen *g, size_t t)
{
    const size_t off = t * g->H * g->d;
    return la_linear_step(g->state, g->q + off, g->k + off, g->v + off, g->y);
}

/* One generation of T tokens, timing each into lat[t]. Returns the number of tokens
 * generated (< T when the budget ran out), or -1 on a library error. */
static long generate(gen *g, int softmax, double *lat, double max_seconds)
{
    if (!softmax) la_linear_state_reset(g->state);
    double start = timer_now();
    for (size_t t = 0; t < g->T; t++) {
        double t0 = timer_now();
        la_status st = softmax ? softmax_token(g, t) : linear_token(g, t);
        double t1 = timer_now();
        if (st != LA_OK) {
            cli_line("decode: token %zu: %s", t, la_strerror(st));
            return -1;
        }
        lat[t] = t1 - t0;
        if (t1 - start > max_seconds) return (long)t + 1;
    }
    return (long)g->T;
}

int cmd_decode(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    char err[512];
    const machine_report *busy = machine_check();
    record_file *f = record_open(c.common.out, "decode",
                                 "per-token latency of autoregressive generation against the "
                                 "position t: softmax with a KV cache vs linear attention's state",
                                 COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) return cli_fail("decode", "%s", err);

    const size_t T = c.tokens, H = c.heads, d = c.d;
    const int threads = la_get_num_threads();
    const int reps = c.common.min_reps;

    /* position bins: [1], then geometric with bins_per_doubling per factor of two: at
     * most bins_per_doubling per doubling of T < 2^64, whatever T */
    size_t *bin_end = malloc((64 * c.bins_per_doubling + 2) * sizeof *bin_end), n_bins = 0;
    double *lat = NULL, *tok = NULL, *scratch = NULL;
    gen g = {T, H, d, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    float *q = NULL, *k = NULL, *v = NULL;
    rc = 1;
    if (!bin_end) goto fail;
    for (double e = 0;; e += 1.0 / (double)c.bins_per_doubling) {
        size_t end = (size_t)floor(pow(2.0, e) + 1e-9);
        if (end > T) end = T;
        if (n_bins == 0 || end > bin_end[n_bins - 1]) bin_end[n_bins++] = end;
        if (end == T) break;
    }

    /* memory, checked before allocating: streams, cache, outputs, per-token latencies
     * (parse checked that these sizes are addressable) */
    double bytes = 4.0 * (3.0 * T * H * d + 2.0 * H * T * d + H * d) +
                   8.0 * ((double)reps * T + T + (T > (size_t)reps ? T : (size_t)reps));
    int mem_ok = bytes <= c.common.max_mem;
    if (mem_ok) {
        size_t n = T * H * d;
        lat = malloc((size_t)reps * T * sizeof *lat), tok = malloc(T * sizeof *tok);
        scratch = malloc((T > (size_t)reps ? T : (size_t)reps) * sizeof *scratch);
        if (!lat || !tok || !scratch) goto fail;
        q = malloc(n * sizeof *q), k = malloc(n * sizeof *k), v = malloc(n * sizeof *v);
        g.k_cache = malloc(n * sizeof *g.k_cache), g.v_cache = malloc(n * sizeof *g.v_cache);
        g.y = malloc(H * d * sizeof *g.y);
        if (!q || !k || !v || !g.k_cache || !g.v_cache || !g.y) goto fail;
        inputs_rng r = inputs_rng_for(c.common.seed, "decode");
        inputs_fill_normal_f32(&r, q, n, 1.0);
        inputs_fill_normal_f32(&r, k, n, 1.0);
        inputs_fill_normal_f32(&r, v, n, 1.0);
        g.q = q, g.k = k, g.v = v;
        la_status st = linear_state_elu(&g.state, H, d);
        if (st != LA_OK) {
            cli_line("decode: %s", la_strerror(st));
            goto fail;
        }
    }

    progress_line pr;
    progress_start(&pr, "decode", 2 * reps, 0);
    double totals[2] = {NAN, NAN};
    stats_summary whole[2]; /* the totals of the tokens' medians and quartiles */
    for (int softmax = 1; softmax >= 0; softmax--) {
        const char *name = softmax ? "softmax_kv_cache" : "linear_recurrent_state";
        char key0[256];
        snprintf(key0, sizeof key0, "%s,%zu,%zu,%zu,%zu,%d,1,1", name, T, d, d, H, threads);
        if (record_find(f, key0)) { /* --resume: this variant is in the file already */
            for (int r = 0; r < reps; r++)
                progress_step(&pr, softmax ? r + 1 : reps + r + 1, 1, name);
            continue;
        }
        /* generate reps times; a token's latency is the median over the generations */
        long done = mem_ok ? (long)T : 0;
        int reps_run = 0;
        for (int r = 0; r < reps && mem_ok; r++) {
            char what[96];
            snprintf(what, sizeof what, "%s generation %d/%d", name, r + 1, reps);
            progress_step(&pr, (softmax ? 0 : reps) + r + 1, 1, what);
            long got = generate(&g, softmax, lat + (size_t)r * T, c.common.max_seconds);
            if (got < 0) goto fail;
            reps_run++;
            if (got < done) done = got;
            if (got < (long)T) break; /* over budget: no more repetitions */
        }
        whole[softmax] = (stats_summary){0, 0, 0, 0, 0, (size_t)reps_run};
        for (size_t t = 0; t < (size_t)done; t++) {
            int n = 0;
            for (int r = 0; r < reps_run; r++)
                scratch[n++] = lat[(size_t)r * T + t];
            stats_summary s = {0};
            stats_summarize(scratch, (size_t)n, &s);
            tok[t] = s.median;
            whole[softmax].median += s.median;
            whole[softmax].q1 += s.q1, whole[softmax].q3 += s.q3;
        }
        /* one row per bin; bins past the budget are recorded as skipped */
        double cumulative = 0;
        size_t first = 1;
        for (size_t b = 0; b < n_bins; b++) {
            size_t last = bin_end[b], count = last - first + 1;
            char key[256];
            snprintf(key, sizeof key, "%s,%zu,%zu,%zu,%zu,%d,%zu,%zu", name, T, d, d, H, threads,
                     first, last);
            if (last <= (size_t)done) {
                double mn = INFINITY, mx = 0;
                for (size_t t = first - 1; t < last; t++) {
                    cumulative += tok[t];
                    scratch[t - (first - 1)] = tok[t];
                    if (tok[t] < mn) mn = tok[t];
                    if (tok[t] > mx) mx = tok[t];
                }
                double med = timer_median(scratch, count); /* sorts scratch */
                double p10 = scratch[(size_t)floor(0.1 * (double)(count - 1))];
                double p90 = scratch[(size_t)ceil(0.9 * (double)(count - 1))];
                if (record_row(f, "%s,ok,%zu,%.6e,%.6e,%.6e,%.6e,%.6e,%.6e", key, count, med, mn,
                               mx, p10, p90, cumulative))
                    goto fail;
            } else if (record_row(f, "%s,%s,%zu,,,,,,", key,
                                  mem_ok ? "skipped_time" : "skipped_mem", count)) {
                goto fail;
            }
            first = last + 1;
        }
        if ((size_t)done == T) totals[softmax] = cumulative;
    }
    progress_end(&pr);

    stats_ratio speedup;
    if (isfinite(totals[0]) && isfinite(totals[1]) &&
        stats_speedup(&whole[1], &whole[0], &speedup) == 0)
        /* the range: the totals of the tokens' quartiles over the generations */
        printf("decode: %zu tokens, %zu heads of d = %zu: softmax with KV cache %.3f s, linear "
               "state %.3f s, %.1fx faster (%.1fx..%.1fx from the interquartile ranges of %zu "
               "generations)\n",
               T, H, d, totals[1], totals[0], speedup.ratio, speedup.lo, speedup.hi,
               whole[1].n < whole[0].n ? whole[1].n : whole[0].n);
    else if (record_resumed_rows(f) == 0)
        printf("decode: a generation did not finish within the budget (see %s)\n", record_path(f));
    printf("decode: wrote %s\n", record_path(f));
    if (busy->noisy)
        printf("decode: the machine was busy (%s): these latencies are noisy\n", busy->why);
    rc = 0;
fail:
    if (rc) cli_line("decode: failed");
    if (record_close(f) != 0) rc = 1;
    la_linear_state_free(g.state);
    free(q), free(k), free(v), free(g.k_cache), free(g.v_cache), free(g.y);
    free(bin_end), free(lat), free(tok), free(scratch);
    return rc;
}

/* approx.c — `linattn approx`: error against cost of the approximating attention variants.
 * At a fixed N and d, every kernel of the registry with a budget parameter (FAVOR+'s
 * features m, local attention's window r, Linformer's rank k: the LA_PARAM_FEATURES,
 * LA_PARAM_WINDOW and LA_PARAM_PROJ rows) runs at each budget of its list, and every
 * other kernel but softmax once, on three kinds of inputs, several seeds each; a row
 * holds the output's relative error against exact softmax attention (both in float64:
 * the approximation's error, not rounding), the FLOPs of the cost model and the float32
 * kernel's time. One row per (variant, budget, inputs, seed), in approx.csv;
 * softmax's own rows (error 0) mark the exact cost. */
#include "commands.h"
#include "common/cli.h"
#include "common/inputs.h"
#include "common/kernels.h"
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
    "usage: linattn approx [--n N] [--d D] [--heads H] [--inputs LIST] [--seeds S]\n"
    "                      [--variant LIST] [--window LIST] [--proj-rank LIST]\n"
    "                      [--features LIST] [--out PATH] [--resume] [...]\n"
    "\n"
    "Error against cost: how close each approximating variant comes to exact softmax\n"
    "attention for the FLOPs it spends. At one N (self-attention, N = M) and head size d,\n"
    "each variant with a budget runs at every budget of its list, the others once:\n"
    "the relative error ‖y − y_softmax‖ / ‖y_softmax‖ (both float64, so it is the\n"
    "approximation's, not rounding), the cost model's FLOPs and the float32 time.\n"
    "\n"
    "  --n N            sequence length (default 1024)\n"
    "  --d D            head size, d_k = d_v = D (default 64)\n"
    "  --heads H        heads (default 2)\n"
    "  --inputs LIST    random, dominant, local (default all), v always N(0, 1):\n"
    "                   random: q, k N(0, 1); dominant: k N(0, 1), each query the sum\n"
    "                   of 2 random keys scaled so their logits are about 12 (the rest\n"
    "                   spread about 2): two keys hold nearly all the weight; local: k_j\n"
    "                   a sinusoidal position code of j (|k_j|² = d) plus N(0, 1/16)\n"
    "                   noise, q_i that code scaled to logit 12 at j = i, falling with\n"
    "                   |i − j|: nearby keys hold most of the weight\n"
    "  --seeds S        seeds per point, --seed .. --seed + S - 1 (default 3)\n"
    "  --variant LIST   the kernels (default: all but softmax's, the reference; those\n"
    "                   with a non-causal form):\n";
static const char help_after_variants[] =
    "  --window LIST    local attention's windows r (default 4:N/2 by x4)\n"
    "  --proj-rank LIST Linformer's ranks k (default 16:N/2 by x4)\n"
    "  --features LIST  FAVOR+'s features m (default 16:4096 by x4)\n"
    "                   (each LIST: " SWEEP_SYNTAX ")\n" SWEEP_COMMON_HELP
    "                   (default --out approx.csv)\n"
    "\n"
    "Columns: variant,budget_name,budget,inputs,seed,n,d,heads,rel_error,flops,\n"
    "flops_vs_softmax,median_s,q1_s,q3_s,status. budget_name is window, proj_rank,\n"
    "features or none; softmax's rows (error 0) give the exact cost. Figure:\n"
    "linattn plot (plots/approx.gp): error against FLOPs, one curve per variant and\n"
    "panel per input kind.\n";

void cmd_approx_help(FILE *out)
{
    fputs(help_text, out);
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *row = la_kernel_get((la_kernel)k);
        if (row->causal == LA_CAUSAL_REQUIRED) continue;
        fprintf(out, "                     %s\n", row->name);
    }
    fputs(help_after_variants, out);
}

static const char COLUMNS[] = "variant,budget_name,budget,inputs,seed,n,d,heads,rel_error,flops,"
                              "flops_vs_softmax,median_s,q1_s,q3_s,status";
enum { N_KEY = 5, MAX_BUDGETS = 32, N_INPUTS = 3 };

static const char *const input_names[] = {"random", "dominant", "local", NULL};

typedef struct {
    size_t n, d, heads, seeds;
    int inputs[N_INPUTS];
    int selected[LA_KERNEL_COUNT];
    size_t windows[MAX_BUDGETS], n_windows;
    size_t ranks[MAX_BUDGETS], n_ranks;
    size_t features[MAX_BUDGETS], n_features;
    sweep_common common;
} config;

/* The budget parameter of a kernel: which la_problem field its list sets. */
typedef enum { BUDGET_NONE, BUDGET_WINDOW, BUDGET_PROJ, BUDGET_FEATURES } budget_kind;
static const char *const budget_names[] = {"none", "window", "proj_rank", "features"};

static budget_kind budget_of(la_kernel k)
{
    const unsigned params = la_kernel_get(k)->params;
    if (params & LA_PARAM_WINDOW) return BUDGET_WINDOW;
    if (params & LA_PARAM_PROJ) return BUDGET_PROJ;
    if (params & LA_PARAM_FEATURES) return BUDGET_FEATURES;
    return BUDGET_NONE;
}

static int keep_runnable(la_kernel k)
{
    return la_kernel_get(k)->causal != LA_CAUSAL_REQUIRED;
}

/* The score functions and relative positions change what attention computes
 * instead of approximating softmax: not in the default list (--variant may still name
 * them). */
static int is_score_function(la_kernel k)
{
    return k == LA_KERNEL_GENERAL || k == LA_KERNEL_ADDITIVE || k == LA_KERNEL_COSINE ||
           k == LA_KERNEL_RELATIVE;
}

/* A budget list: given, or LO:HI by x4 with HI clipped to the default's top. */
static int budget_list(const char *flag, const char *text, size_t lo, size_t hi, size_t *out,
                       size_t *count)
{
    if (text) return sweep_parse(flag, text, 4, out, MAX_BUDGETS, count);
    *count = 0;
    for (size_t b = lo; b <= hi && *count < MAX_BUDGETS; b *= 4)
        out[(*count)++] = b;
    if (*count == 0) out[(*count)++] = lo;
    return 0;
}

static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *heads = NULL, *inputs = NULL, *seeds = NULL, *list = NULL;
    const char *window = NULL, *rank = NULL, *features = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},
        {"d", &d, NULL},
        {"heads", &heads, NULL},
        {"inputs", &inputs, NULL},
        {"seeds", &seeds, NULL},
        {"variant", &list, NULL},
        {"window", &window, NULL},
        {"proj-rank", &rank, NULL},
        {"features", &features, NULL},
        SWEEP_COMMON_FLAGS(common),
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->n = 1024, c->d = 64, c->heads = 2, c->seeds = 3;
    if ((n && (rc = sweep_parse_positive("--n", n, &c->n))) ||
        (d && (rc = sweep_parse_positive("--d", d, &c->d))) ||
        (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) ||
        (seeds && (rc = sweep_parse_positive("--seeds", seeds, &c->seeds))))
        return rc;
    if (c->seeds > 100) return cli_fail("--seeds", "at most 100");
    if ((rc = sweep_check_floats("--n", c->heads, c->n, c->d))) return rc;
    if (inputs) {
        int chosen[N_INPUTS];
        size_t count;
        if ((rc = cli_parse_choice_list("--inputs", inputs, input_names, chosen, N_INPUTS, &count)))
            return rc;
        memset(c->inputs, 0, sizeof c->inputs);
        for (size_t i = 0; i < count; i++)
            c->inputs[chosen[i]] = 1;
    } else {
        for (int i = 0; i < N_INPUTS; i++)
            c->inputs[i] = 1;
    }
    la_kernel kernels[LA_KERNEL_COUNT];
    size_t n_kernels = 0;
    if (list) {
        if ((rc = kernels_parse_kernel_list("--variant", list, keep_runnable, kernels,
                                            LA_KERNEL_COUNT, &n_kernels)))
            return rc;
    } else {
        for (int k = 0; k < LA_KERNEL_COUNT; k++) /* softmax's family is the reference */
            if (kernels_family((la_kernel)k) != LA_KERNEL_SOFTMAX && keep_runnable((la_kernel)k) &&
                !is_score_function((la_kernel)k))
                kernels[n_kernels++] = (la_kernel)k;
    }
    memset(c->selected, 0, sizeof c->selected);
    unsigned read = 0;
    for (size_t i = 0; i < n_kernels; i++)
        c->selected[kernels[i]] = 1, read |= la_kernel_get(kernels[i])->params;
    const struct {
        const char *flag, *text;
        unsigned bit;
    } budgets[] = {{"--window", window, LA_PARAM_WINDOW},
                   {"--proj-rank", rank, LA_PARAM_PROJ},
                   {"--features", features, LA_PARAM_FEATURES}};
    for (size_t i = 0; i < 3; i++)
        if (budgets[i].text && !(read & budgets[i].bit))
            return cli_fail(budgets[i].flag, "none of the chosen kernels has this budget");
    if ((rc = budget_list("--window", window, 4, c->n / 2, c->windows, &c->n_windows)) ||
        (rc = budget_list("--proj-rank", rank, 16, c->n / 2, c->ranks, &c->n_ranks)) ||
        (rc = budget_list("--features", features, 16, 4096, c->features, &c->n_features)))
        return rc;
    for (size_t i = 0; i < c->n_ranks; i++)
        if (c->ranks[i] > c->n)
            return cli_fail("--proj-rank", "%zu is above N = %zu (k must be at most M)",
                            c->ranks[i], c->n);
    return sweep_common_finish(&common, &c->common, "approx.csv", 10, 8.0 * (1 << 30));
}

/* ---------------------------------------------------------------- inputs */

typedef struct {
    float *q, *k, *v, *out;
    double *q64, *k64, *v64, *y64, *exact;
    size_t elems;
} buffers;

static void buffers_free(buffers *b)
{
    free(b->q), free(b->k), free(b->v), free(b->out);
    free(b->q64), free(b->k64), free(b->v64), free(b->y64), free(b->exact);
}

static int buffers_alloc(buffers *b, size_t elems)
{
    memset(b, 0, sizeof *b);
    b->elems = elems;
    float **f[] = {&b->q, &b->k, &b->v, &b->out};
    double **g[] = {&b->q64, &b->k64, &b->v64, &b->y64, &b->exact};
    for (size_t i = 0; i < 4; i++)
        if (!(*f[i] = malloc(elems * sizeof(float)))) goto fail;
    for (size_t i = 0; i < 5; i++)
        if (!(*g[i] = malloc(elems * sizeof(double)))) goto fail;
    return 0;
fail:
    buffers_free(b);
    return -1;
}

/* q, k, v of one input kind and seed, (H, N, d) row-major, in both precisions; v is
 * N(0, 1) in all three, and scale 1/√d throughout (logit = q·k/√d).
 *   random:   q, k N(0, 1): logits N(0, 1), the weight spread over every key.
 *   dominant: k N(0, 1), q_i = (12/√d)·(k_a + k_b) for two random keys a, b: their logits
 *             about 12, any other key's N(0, 2·12²/d) (sd 2.1 at d = 64).
 *   local:    k_j = c_j + N(0, 1/16), c_j the sinusoidal code of position j
 *             (c_j,2l = √2 sin(ω_l j), c_j,2l+1 = √2 cos(ω_l j), ω_l = 10000^(−2l/d), so
 *             |c_j|² = d), q_i = (12/√d)·c_i: logit 12 at j = i, falling as |i − j| grows. */
static void fill(const config *c, buffers *b, int kind, uint64_t seed)
{
    char label[32];
    snprintf(label, sizeof label, "approx_%s", input_names[kind]);
    inputs_rng r = inputs_rng_for(seed, label);
    const size_t n = c->n, d = c->d;
    inputs_fill_normal_f32(&r, b->v, b->elems, 1.0);
    if (kind == 0) {
        inputs_fill_normal_f32(&r, b->q, b->elems, 1.0);
        inputs_fill_normal_f32(&r, b->k, b->elems, 1.0);
    }
    const double w = 12.0 / sqrt((double)d); /* q·k/√d = 12 for q = w·k, |k|² = d */
    for (size_t h = 0; kind != 0 && h < c->heads; h++) {
        float *qh = b->q + h * n * d, *kh = b->k + h * n * d;
        if (kind == 1) {
            inputs_fill_normal_f32(&r, kh, n * d, 1.0);
            for (size_t i = 0; i < n; i++) {
                const size_t a = (size_t)(inputs_uniform(&r) * (double)n);
                const size_t e = (size_t)(inputs_uniform(&r) * (double)n);
                for (size_t x = 0; x < d; x++)
                    qh[i * d + x] = (float)(w * ((double)kh[a * d + x] + (double)kh[e * d + x]));
            }
        } else {
            for (size_t j = 0; j < n; j++)
                for (size_t x = 0; x < d; x++) {
                    const double omega = pow(10000.0, -(double)(x / 2 * 2) / (double)d);
                    const double code =
                        sqrt(2.0) * (x % 2 ? cos(omega * (double)j) : sin(omega * (double)j));
                    qh[j * d + x] = (float)(w * code);
                    kh[j * d + x] = (float)(code + 0.25 * inputs_normal(&r));
                }
        }
    }
    for (size_t i = 0; i < b->elems; i++)
        b->q64[i] = b->q[i], b->k64[i] = b->k[i], b->v64[i] = b->v[i];
}

/* ---------------------------------------------------------------- points */

static void problem_of(const config *c, la_kernel k, size_t budget, uint64_t seed, la_problem *p)
{
    la_problem_init(p, 1, c->heads, c->n, c->n, c->d, c->d);
    p->seed = seed;
    switch (budget_of(k)) {
    case BUDGET_WINDOW: p->window = budget; break;
    case BUDGET_PROJ: p->proj_rank = budget; break;
    case BUDGET_FEATURES: p->features = budget; break;
    case BUDGET_NONE: break;
    }
    p->workspace_limit =
        c->common.max_mem < (double)SIZE_MAX ? (size_t)c->common.max_mem : SIZE_MAX;
}

/* One point: the float64 output against exact softmax, then the float32 time. */
static int measure(record_file *f, const config *c, buffers *b, la_kernel k, size_t budget,
                   int kind, uint64_t seed, double softmax_flops)
{
    const char *name = la_kernel_name(k);
    const budget_kind bk = budget_of(k);
    char key[160];
    snprintf(key, sizeof key, "%s,%s,%zu,%s,%llu", name, budget_names[bk], budget,
             input_names[kind], (unsigned long long)seed);
    if (record_find(f, key)) return 0; /* --resume */
    la_problem p;
    problem_of(c, k, budget, seed, &p);
    la_cost cost;
    const double flops =
        la_attention_cost(k, &p, LA_FLOAT32, &cost) == LA_OK ? cost.flops_total : NAN;
    la_status st = la_attention_f64(k, &p, b->q64, b->k64, b->v64, b->y64);
    if (st != LA_OK)
        return record_row(f, "%s,%zu,%zu,%zu,nan,%.6g,%.6g,nan,nan,nan,%s", key, c->n, c->d,
                          c->heads, flops, flops / softmax_flops, la_strerror(st))
                   ? 1
                   : 0;
    const double err = inputs_rel_error_f64(b->y64, b->exact, b->elems);
    timer_result t;
    const timer_rule rule = {c->common.min_reps, 1000, c->common.min_time, 1.0};
    st = timer_kernel(k, &p, b->q, b->k, b->v, b->out, &rule, &t);
    if (st != LA_OK)
        return record_row(f, "%s,%zu,%zu,%zu,%.6g,%.6g,%.6g,nan,nan,nan,%s", key, c->n, c->d,
                          c->heads, err, flops, flops / softmax_flops, la_strerror(st))
                   ? 1
                   : 0;
    return record_row(f, "%s,%zu,%zu,%zu,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,ok", key, c->n, c->d,
                      c->heads, err, flops, flops / softmax_flops, t.median_s, t.q1_s, t.q3_s)
               ? 1
               : 0;
}

static const size_t *budgets_of(const config *c, la_kernel k, size_t *count)
{
    static const size_t none[1] = {0};
    switch (budget_of(k)) {
    case BUDGET_WINDOW: *count = c->n_windows; return c->windows;
    case BUDGET_PROJ: *count = c->n_ranks; return c->ranks;
    case BUDGET_FEATURES: *count = c->n_features; return c->features;
    case BUDGET_NONE: break;
    }
    *count = 1;
    return none;
}

/* The summary: per input kind and variant, the smallest budget's FLOPs share at which
 * the mean error over seeds fell below 0.1, or the best mean error reached. */
static void summarize(const config *c, record_file *f)
{
    for (int kind = 0; kind < N_INPUTS; kind++) {
        if (!c->inputs[kind]) continue;
        for (int k = 0; k < LA_KERNEL_COUNT; k++) {
            if (!c->selected[k] || k == LA_KERNEL_SOFTMAX) continue;
            size_t nb;
            const size_t *bs = budgets_of(c, (la_kernel)k, &nb);
            double best = INFINITY, best_share = NAN;
            size_t best_budget = 0, hit_budget = 0;
            double hit_share = NAN;
            for (size_t i = 0; i < nb; i++) {
                double sum = 0, share = NAN;
                size_t got = 0;
                for (size_t s = 0; s < c->seeds; s++) {
                    char key[160];
                    snprintf(key, sizeof key, "%s,%s,%zu,%s,%llu", la_kernel_name((la_kernel)k),
                             budget_names[budget_of((la_kernel)k)], bs[i], input_names[kind],
                             (unsigned long long)(c->common.seed + s));
                    const char *row = record_find(f, key);
                    double e;
                    if (row && record_get(f, row, "rel_error", &e) == 0 && isfinite(e))
                        sum += e, got++, record_get(f, row, "flops_vs_softmax", &share);
                }
                if (!got) continue;
                const double mean = sum / (double)got;
                if (mean < best) best = mean, best_share = share, best_budget = bs[i];
                if (mean < 0.1 && !hit_budget) hit_budget = bs[i], hit_share = share;
            }
            if (!isfinite(best)) continue;
            const char *bn = budget_names[budget_of((la_kernel)k)];
            if (hit_budget)
                printf("approx: %s inputs: %s reaches error < 0.1 at %s %zu, %.3gx softmax's "
                       "FLOPs\n",
                       input_names[kind], la_kernel_name((la_kernel)k), bn, hit_budget, hit_share);
            else if (budget_of((la_kernel)k) == BUDGET_NONE)
                printf("approx: %s inputs: %s error %.3g at %.3gx softmax's FLOPs\n",
                       input_names[kind], la_kernel_name((la_kernel)k), best, best_share);
            else
                printf("approx: %s inputs: %s best error %.3g (%s %zu, %.3gx softmax's FLOPs)\n",
                       input_names[kind], la_kernel_name((la_kernel)k), best, bn, best_budget,
                       best_share);
        }
    }
}

int cmd_approx(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    const machine_report *busy = machine_check();
    const size_t elems = c.heads * c.n * c.d; /* checked by sweep_check_floats */
    buffers b;
    if (buffers_alloc(&b, elems) != 0) return cli_fail("approx", "out of memory");
    char err[512];
    record_file *f =
        record_open(c.common.out, "approx",
                    "error against cost of the approximating variants: relative error "
                    "of each against exact softmax (float64), FLOPs, float32 time; one "
                    "row per variant, budget, input kind and seed",
                    COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        buffers_free(&b);
        return cli_fail("approx", "%s", err);
    }
    int points = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        size_t nb = 0;
        if (c.selected[k]) budgets_of(&c, (la_kernel)k, &nb);
        points += (int)nb;
    }
    int kinds = 0;
    for (int i = 0; i < N_INPUTS; i++)
        kinds += c.inputs[i];
    points = (points + 1) * kinds * (int)c.seeds;
    progress_line pr;
    progress_start(&pr, "approx", points, points);
    int point = 0;
    la_problem exact_p;
    problem_of(&c, LA_KERNEL_SOFTMAX, 0, 0, &exact_p);
    la_cost exact_cost;
    const double softmax_flops =
        la_attention_cost(LA_KERNEL_SOFTMAX, &exact_p, LA_FLOAT32, &exact_cost) == LA_OK
            ? exact_cost.flops_total
            : NAN;
    for (int kind = 0; kind < N_INPUTS && rc == 0; kind++) {
        if (!c.inputs[kind]) continue;
        for (size_t s = 0; s < c.seeds && rc == 0; s++) {
            const uint64_t seed = c.common.seed + s;
            fill(&c, &b, kind, seed);
            la_status st =
                la_attention_f64(LA_KERNEL_SOFTMAX, &exact_p, b.q64, b.k64, b.v64, b.exact);
            if (st != LA_OK) {
                rc = cli_fail("approx", "exact softmax: %s", la_strerror(st));
                break;
            }
            progress_step(&pr, ++point, 1, "softmax");
            rc = measure(f, &c, &b, LA_KERNEL_SOFTMAX, 0, kind, seed, softmax_flops);
            for (int k = 0; k < LA_KERNEL_COUNT && rc == 0; k++) {
                if (!c.selected[k]) continue;
                size_t nb;
                const size_t *bs = budgets_of(&c, (la_kernel)k, &nb);
                for (size_t i = 0; i < nb && rc == 0; i++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s %s %zu, %s inputs",
                             la_kernel_name((la_kernel)k), budget_names[budget_of((la_kernel)k)],
                             bs[i], input_names[kind]);
                    progress_step(&pr, ++point, 1, what);
                    rc = measure(f, &c, &b, (la_kernel)k, bs[i], kind, seed, softmax_flops);
                }
            }
        }
    }
    progress_end(&pr);
    if (rc == 1) cli_line("%s: write failed", c.common.out);
    if (rc == 0) {
        summarize(&c, f);
        printf("approx: wrote %s\n", record_path(f));
        if (busy->noisy)
            printf("approx: the machine was busy (%s): the times are noisy (errors are not)\n",
                   busy->why);
    }
    if (record_close(f) != 0 && rc == 0) rc = 1;
    buffers_free(&b);
    return rc;
}

/* approx.c — `linattn approx`: error against cost of the approximating attention variants.
 * At a fixed N and d, every kernel of the registry with a budget parameter (FAVOR+'s
 * features m, local attention's window r, Linformer's rank k: the LA_PARAM_FEATURES,
 * LA_PARAM_WINDOW and LA_PARAM_PROJ rows) runs at each budget of its list, and every
 * other kernel but softmax once, on three kinds of inputs, several seeds each; a row
 * holds the output's relative error against exact softmax attention (both in float64:
 * the approximation's error, not rounding), the FLOPs of the cost model and the float32
 * kernel's time. One row per (variant, budget, inputs, seed), in approx.csv;
 * softmax's own rows (error 0) mark the exact cost. */
#include "approx.h"

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

const char *const approx_input_names[] = {"random", "dominant", "local", NULL};

const char *const approx_budget_names[] = {"none", "window", "proj_rank", "features"};

budget_kind approx_budget_of(la_kernel k)
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

/* The default list: the kernels that approximate softmax attention (LA_CAP_APPROXIMATES).
 * Exact softmax is the reference; the score functions and relative positions change
 * what attention computes instead (--variant may still name them). */
static int approximates_softmax(la_kernel k)
{
    return (la_kernel_get(k)->caps & LA_CAP_APPROXIMATES) != 0;
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
        if ((rc = cli_parse_choice_list("--inputs", inputs, approx_input_names, chosen, N_INPUTS,
                                        &count)))
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
        for (int k = 0; k < LA_KERNEL_COUNT; k++)
            if (approximates_softmax((la_kernel)k) && keep_runnable((la_kernel)k))
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

int cmd_approx(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    const machine_report *busy = machine_check();
    const size_t elems = c.heads * c.n * c.d; /* checked by sweep_check_floats */
    buffers b;
    if (approx_buffers_alloc(&b, elems) != 0) return cli_fail("approx", "out of memory");
    char err[512];
    record_file *f =
        record_open(c.common.out, "approx",
                    "error against cost of the approximating variants: relative error "
                    "of each against exact softmax (float64), FLOPs, float32 time; one "
                    "row per variant, budget, input kind and seed",
                    COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        approx_buffers_free(&b);
        return cli_fail("approx", "%s", err);
    }
    int points = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        size_t nb = 0;
        if (c.selected[k]) approx_budgets_of(&c, (la_kernel)k, &nb);
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
    approx_problem_of(&c, LA_KERNEL_SOFTMAX, 0, 0, &exact_p);
    la_cost exact_cost;
    const double softmax_flops =
        la_attention_cost(LA_KERNEL_SOFTMAX, &exact_p, LA_FLOAT32, &exact_cost) == LA_OK
            ? exact_cost.flops_total
            : NAN;
    for (int kind = 0; kind < N_INPUTS && rc == 0; kind++) {
        if (!c.inputs[kind]) continue;
        for (size_t s = 0; s < c.seeds && rc == 0; s++) {
            const uint64_t seed = c.common.seed + s;
            approx_fill(&c, &b, kind, seed);
            la_status st =
                la_attention(LA_KERNEL_SOFTMAX, &exact_p, LA_FLOAT64, b.q64, b.k64, b.v64, b.exact);
            if (st != LA_OK) {
                rc = cli_fail("approx", "exact softmax: %s", la_strerror(st));
                break;
            }
            progress_step(&pr, ++point, 1, "softmax");
            rc = approx_measure(f, &c, &b, LA_KERNEL_SOFTMAX, 0, kind, seed, softmax_flops);
            for (int k = 0; k < LA_KERNEL_COUNT && rc == 0; k++) {
                if (!c.selected[k]) continue;
                size_t nb;
                const size_t *bs = approx_budgets_of(&c, (la_kernel)k, &nb);
                for (size_t i = 0; i < nb && rc == 0; i++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s %s %zu, %s inputs",
                             la_kernel_name((la_kernel)k),
                             approx_budget_names[approx_budget_of((la_kernel)k)], bs[i],
                             approx_input_names[kind]);
                    progress_step(&pr, ++point, 1, what);
                    rc = approx_measure(f, &c, &b, (la_kernel)k, bs[i], kind, seed, softmax_flops);
                }
            }
        }
    }
    progress_end(&pr);
    if (rc == 1) cli_line("%s: write failed", c.common.out);
    if (rc == 0) {
        approx_summarize(&c, f);
        printf("approx: wrote %s\n", record_path(f));
        if (busy->noisy)
            printf("approx: the machine was busy (%s): the times are noisy (errors are not)\n",
                   busy->why);
    }
    if (record_close(f) != 0 && rc == 0) rc = 1;
    approx_buffers_free(&b);
    return rc;
}

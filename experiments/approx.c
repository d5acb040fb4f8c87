/* approx.c — `linattn approx`: error against cost of the approximating attention variants.
 * At a fixed N and d, every kernel of the registry that approximates softmax attention
 * (its row's caps hold LA_CAP_APPROXIMATES) runs, one with a budget parameter (FAVOR+'s
 * features m, local attention's window r, Linformer's rank k: the LA_PARAM_FEATURES,
 * LA_PARAM_WINDOW and LA_PARAM_PROJ rows) at each budget of its list, the others once, on
 * three kinds of random inputs, several seeds each, or on the user's arrays (--q/--k/--v);
 * a row holds the output's error against exact softmax attention (both in float64: the
 * approximation's error, not rounding) as RMS(y − y_softmax) / RMS(v), the FLOPs of the
 * cost model and the float32 kernel's time. One row per (variant, budget, inputs, seed),
 * in approx.csv; softmax's own rows (error 0) mark the exact cost. */
#include "approx.h"

#include "commands.h"
#include "common/cli.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/metadata.h"
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
    "       linattn approx --q Q.npy --k K.npy --v V.npy [--layout bhnd|bnhd] [--n N] [...]\n"
    "\n"
    "Error against cost: how close each approximating variant comes to exact softmax\n"
    "attention for the FLOPs it spends. At one N (self-attention, N = M) and head size d,\n"
    "each variant with a budget runs at every budget of its list, the others once: the\n"
    "error RMS(y − y_softmax) / RMS(v) (both float64, so it is the approximation's, not\n"
    "rounding; every output row of softmax attention is a weighted average of v's rows,\n"
    "so 1 is an error as large as a typical value of v, and the scale does not shrink as\n"
    "the output does when the weights spread), the cost model's FLOPs and the float32 time.\n"
    "\n"
    "  --n N            sequence length (default 1024; with --q/--k/--v the arrays'\n"
    "                   min(N, M), and the first N queries and keys of each head)\n"
    "  --d D            head size, d_k = d_v = D (default 64)\n"
    "  --heads H        heads (default 2)\n"
    "  --inputs LIST    random, dominant, local (default all), v always N(0, 1):\n"
    "                   random: q, k N(0, 1); dominant: k N(0, 1), each query the sum\n"
    "                   of 2 random keys scaled so their logits are about 12 (the rest\n"
    "                   spread about 2): two keys hold nearly all the weight; local: k_j\n"
    "                   a sinusoidal position code of j (|k_j|² = d) plus N(0, 1/16)\n"
    "                   noise, q_i that code scaled to logit 12 at j = i, falling with\n"
    "                   |i − j|: nearby keys hold most of the weight\n"
    "  --q Q.npy, --k K.npy, --v V.npy\n"
    "                   measure on your arrays instead (inputs column \"user\", one seed\n"
    "                   unless --seeds: the seed draws FAVOR+'s features and Linformer's\n"
    "                   projections): shapes as in linattn attend, (N, d), (H, N, d) or\n"
    "                   (B, H, N, d), float16, bfloat16, float32 or float64; they set d_k,\n"
    "                   d_v and the heads (B·H), so --d, --heads and --inputs are refused.\n"
    "                   The results' # inputs line names the files, and one line on stderr\n"
    "                   says how they were read\n"
    "  --layout L       bhnd: the arrays are (B, H, N, d); bnhd: (B, N, H, d), as\n"
    "                   FlashAttention holds them, transposed on reading [bhnd]\n"
    "  --seeds S        seeds per point, --seed .. --seed + S - 1 (default 3; 1 with\n"
    "                   --q/--k/--v)\n"
    "  --variant LIST   the kernels (default: those marked as approximating softmax\n"
    "                   attention in the registry; any with a non-causal form):\n";
static const char help_after_variants[] =
    "  --window LIST    local attention's windows r (default 4:N/2 by x4)\n"
    "  --proj-rank LIST Linformer's ranks k (default 16:N/2 by x4)\n"
    "  --features LIST  FAVOR+'s features m (default 16:4096 by x4)\n"
    "                   (each LIST: " SWEEP_SYNTAX ")\n" SWEEP_COMMON_HELP
    "                   (default --out approx.csv)\n"
    "\n"
    "Columns: variant,budget_name,budget,inputs,seed,n,d,heads,error,flops,\n"
    "flops_vs_softmax,median_s,q1_s,q3_s,status. error is RMS(y − y_softmax) / RMS(v)\n"
    "(the results' # error line says so); budget_name is window, proj_rank, features or\n"
    "none, budget its value (r, k, m); softmax's rows (error 0) give the exact cost.\n"
    "Figure: linattn plot (plots/approx.gp): error against FLOPs, one curve per variant,\n"
    "each point labelled with its budget, and a panel per input kind.\n";

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

static const char COLUMNS[] = "variant,budget_name,budget,inputs,seed,n,d,heads,error,flops,"
                              "flops_vs_softmax,median_s,q1_s,q3_s,status";

const char *const approx_input_names[] = {"random", "dominant", "local", NULL};

const char *approx_input_name(const config *c, int kind)
{
    return c->source.from_files ? "user" : approx_input_names[kind];
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

/* With --q/--k/--v: the arrays set d_k, d_v and the heads (B·H); N is their min(N, M)
 * unless --n asks for a shorter prefix. 0, or 2 after one line. */
static int shape_from_arrays(config *c, const char *n, const char *d, const char *heads,
                             const char *inputs, const char *seeds)
{
    const inputs_source *s = &c->source;
    const size_t max_n = inputs_source_max_n(s);
    if (d || heads || inputs)
        return cli_fail(d       ? "--d"
                        : heads ? "--heads"
                                : "--inputs",
                        "set by the arrays with --q/--k/--v (d_k %zu, d_v %zu, heads %zu)", s->d_k,
                        s->d_v, s->batch * s->heads);
    if (n && c->n > max_n)
        return cli_fail("--n", "%zu is more than the arrays' %zu tokens (min(N, M) of --q/--k/--v)",
                        c->n, max_n);
    if (!n) c->n = max_n;
    if (!seeds) c->seeds = 1;
    c->d = s->d_k, c->dv = s->d_v, c->heads = s->batch * s->heads;
    c->inputs[0] = 1, c->inputs[1] = c->inputs[2] = 0;
    return 0;
}

/* The kernel list and each budget list (given, or the defaults at N). 0, or 2. */
static int parse_kernels(config *c, const char *list, const char *window, const char *rank,
                         const char *features)
{
    int rc;
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
    const size_t half = c->n / 2 ? c->n / 2 : 1;
    if ((rc = budget_list("--window", window, 4, half, c->windows, &c->n_windows)) ||
        (rc = budget_list("--proj-rank", rank, 16 < half ? 16 : half, half, c->ranks,
                          &c->n_ranks)) ||
        (rc = budget_list("--features", features, 16, 4096, c->features, &c->n_features)))
        return rc;
    for (size_t i = 0; i < c->n_ranks; i++)
        if (c->ranks[i] > c->n)
            return cli_fail("--proj-rank", "%zu is above N = %zu (k must be at most M)",
                            c->ranks[i], c->n);
    return 0;
}

static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *heads = NULL, *inputs = NULL, *seeds = NULL, *list = NULL;
    const char *window = NULL, *rank = NULL, *features = NULL;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL, *layout_text = NULL;
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
        {"q", &q_path, NULL},
        {"k", &k_path, NULL},
        {"v", &v_path, NULL},
        {"layout", &layout_text, NULL},
        SWEEP_COMMON_FLAGS(common),
        {NULL, NULL, NULL},
    };
    memset(c, 0, sizeof *c);
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->n = 1024, c->d = 64, c->heads = 2, c->seeds = 3;
    if ((n && (rc = sweep_parse_positive("--n", n, &c->n))) ||
        (d && (rc = sweep_parse_positive("--d", d, &c->d))) ||
        (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) ||
        (seeds && (rc = sweep_parse_positive("--seeds", seeds, &c->seeds))))
        return rc;
    if (c->seeds > 100) return cli_fail("--seeds", "at most 100");
    c->dv = c->d;
    if (inputs) {
        int chosen[N_INPUTS];
        size_t count;
        if ((rc = cli_parse_choice_list("--inputs", inputs, approx_input_names, chosen, N_INPUTS,
                                        &count)))
            return rc;
        for (size_t i = 0; i < count; i++)
            c->inputs[chosen[i]] = 1;
    } else {
        for (int i = 0; i < N_INPUTS; i++)
            c->inputs[i] = 1;
    }
    if ((rc = sweep_common_finish(&common, &c->common, "approx.csv", 10, 8.0 * (1 << 30))))
        return rc;
    layout_kind layout;
    if ((rc = layout_parse("--layout", layout_text, &layout))) return rc;
    if (layout_text && !q_path) return cli_fail("--layout", "applies with --q/--k/--v only");
    if ((rc = inputs_source_open_as(&c->source, layout, q_path, k_path, v_path, c->common.seed)))
        return rc;
    if ((c->source.from_files && (rc = shape_from_arrays(c, n, d, heads, inputs, seeds))) ||
        (rc = sweep_check_floats("--n", c->heads, c->n, c->d > c->dv ? c->d : c->dv)) ||
        (rc = parse_kernels(c, list, window, rank, features)))
        inputs_source_close(&c->source);
    return rc;
}

/* ---------------------------------------------------------------- inputs */

int cmd_approx(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    const machine_report *busy = machine_check();
    buffers b; /* sizes checked by sweep_check_floats */
    if (approx_buffers_alloc(&b, c.heads * c.n * c.d, c.heads * c.n * c.dv) != 0) {
        inputs_source_close(&c.source);
        return cli_fail("approx", "out of memory");
    }
    char err[512], extra[1536];
    inputs_source_describe(&c.source, extra, sizeof extra);
    size_t used = strlen(extra);
    snprintf(extra + used, sizeof extra - used, "# error: %s\n", APPROX_ERROR_TEXT);
    metadata_extra(extra);
    record_file *f =
        record_open(c.common.out, "approx",
                    "error against cost of the approximating variants: the error of each "
                    "against exact softmax (float64; # error says on which scale), FLOPs, "
                    "float32 time; one row per variant, budget, input kind and seed",
                    COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    metadata_extra(NULL); /* `linattn results` runs the next experiment in this process */
    if (!f) {
        approx_buffers_free(&b);
        inputs_source_close(&c.source);
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
    variants_values exact_blocks; /* none read: softmax */
    la_problem exact_p;
    approx_problem_of(&c, LA_KERNEL_SOFTMAX, 0, 0, &exact_blocks, &exact_p);
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
                             kernels_budget_names[kernels_budget_of((la_kernel)k)], bs[i],
                             approx_input_name(&c, kind));
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
    if (rc == 0) {
        const inputs_source *s = &c.source;
        if (s->from_files)
            layout_report("approx", s->layout, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v,
                          "float32");
        else
            layout_report("approx", LAYOUT_BHND, 1, c.heads, c.n, c.n, c.d, c.dv, "float32 random");
    }
    if (record_close(f) != 0 && rc == 0) rc = 1;
    approx_buffers_free(&b);
    inputs_source_close(&c.source);
    return rc;
}

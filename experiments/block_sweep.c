/* block_sweep.c — `linattn block-sweep`: the block experiment. A whole post-LN encoder
 * layer (la_encoder_layer, Xavier-initialised weights) timed against N for softmax
 * and linear attention, with the time of each component: the projections (the
 * multi-head attention minus its attention kernel), the attention kernel, the FFN, the
 * two LayerNorms, and the rest (residual adds and copies: the layer minus the parts).
 * Shows where attention starts to dominate (N ≫ D) and how linear attention removes
 * that. Writes block.csv (`linattn block` runs one layer on .npy input). */
#include "commands.h"
#include "common/cli.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/machine.h"
#include "common/memory.h"
#include "common/metadata.h"
#include "common/models.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/timer.h"
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn block-sweep [--n LIST] [--d-model D] [--heads H] [--d-ff F]\n"
    "                           [--model NAME] [shared flags]\n"
    "\n"
    "The block experiment (`linattn block` runs one layer on .npy input). Times one\n"
    "post-LN encoder layer (B = 1, float32, Xavier-uniform weights, random N(0, 1)\n"
    "input) for each N of --n with softmax (fused) and with linear attention, and each\n"
    "of its components on the same sizes:\n"
    "  projections  la_mha minus the attention kernel alone (Q, K, V, out and the\n"
    "               head reshapes)\n"
    "  attention    the kernel alone on (1, H, N, D/H) inputs\n"
    "  ffn          la_ffn on N rows\n"
    "  layer_norm   two la_layer_norm calls on N rows\n"
    "  other        the layer minus all of the above (residual adds, copies; 0 when the\n"
    "               parts' separate timings add up to more)\n"
    "A row per component gives its median time, its share of the sum, the cumulative\n"
    "share below it (for stacked plots) and the FLOP model's count\n"
    "(la_layer_cost_model). The last row of each N, component 'layer', is the whole layer.\n"
    "\n"
    "  --n LIST        sequence lengths: " SWEEP_SYNTAX "\n"
    "                  (default 64:8192)\n"
    "  --d-model D     model width (default 512)\n"
    "  --heads H       heads (default 8)\n"
    "  --d-ff F        FFN inner size (default 4·D)\n"
    "  --model NAME    D, H and d_ff of a published model (as linattn params --model;\n"
    "                  the flags above change one size); the layer timed is still the\n"
    "                  post-LN encoder layer of those sizes\n" SWEEP_COMMON_HELP
    "                  (defaults: --out block.csv --max-seconds 10 --max-mem 8G;\n"
    "                  --max-seconds applies to one layer call, predicted from the\n"
    "                  previous N with exponent 2 for softmax, 1 for linear)\n";

void cmd_block_sweep_help(FILE *out)
{
    fputs(help_text, out);
}

static const char COLUMNS[] =
    "attention,n,d_model,heads,d_ff,threads,component,status,median_s,min_s,max_s,share,"
    "share_below,model_flops";
enum { N_KEY = 7, MAX_POINTS = 64, N_COMPONENTS = 5 };

/* Stacking order, bottom to top. */
static const char *const components[N_COMPONENTS] = {"attention", "projections", "ffn",
                                                     "layer_norm", "other"};

typedef struct {
    size_t ns[MAX_POINTS], n_points, hi; /* --n, increasing; hi the largest */
    size_t d, heads, d_ff;
    const models_entry *preset; /* --model, or NULL */
    sweep_common common;
} config;

static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *heads = NULL, *dff = NULL, *model = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},      {"d-model", &d, NULL},   {"heads", &heads, NULL},
        {"d-ff", &dff, NULL}, {"model", &model, NULL}, SWEEP_COMMON_FLAGS(common),
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->d = 512, c->heads = 8, c->d_ff = 0, c->preset = NULL;
    if (model) {
        const models_entry *preset;
        if ((rc = models_parse("--model", model, &preset))) return rc;
        c->preset = preset;
        c->d = preset->size.d_model, c->heads = preset->size.heads, c->d_ff = preset->size.d_ff;
    }
    if ((rc = sweep_parse("--n", n ? n : "64:8192", 2, c->ns, MAX_POINTS, &c->n_points))) return rc;
    sweep_sort_sizes(c->ns, c->n_points); /* once a point is too slow, every larger one is */
    c->hi = c->ns[c->n_points - 1];
    if (d && (rc = sweep_parse_positive("--d-model", d, &c->d))) return rc;
    if (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) return rc;
    if (dff && (rc = sweep_parse_positive("--d-ff", dff, &c->d_ff))) return rc;
    /* the largest point's arrays addressable: 5 of (N, D), the FFN's (N, d_ff) */
    if ((rc = sweep_check_floats("--d-model", c->d, 4, 1)) ||
        (rc = sweep_check_floats("--n", c->hi, c->d, 5)))
        return rc;
    if (!c->d_ff) c->d_ff = 4 * c->d;
    if ((rc = sweep_check_floats("--d-ff", c->hi, c->d_ff, 1))) return rc;
    if (c->d % c->heads) return cli_fail("--heads", "must divide --d-model (%zu)", c->d);
    if ((rc = sweep_common_finish(&common, &c->common, "block.csv", 10, 8.0 * (1 << 30))))
        return rc;
    /* the weights, held for every point, within the budget before anything is allocated */
    const double D = (double)c->d, F = (double)c->d_ff;
    return sweep_check_memory("--d-model", 4.0 * ((4 * D + 4) * D + 2 * D * F + F + D),
                              c->common.max_mem, "--max-mem");
}

/* What one timed call needs. */
typedef struct {
    int what; /* 0 layer, 1 mha, 3 ffn, 4 layer norms (2, the kernel: timer_kernel) */
    const la_layer_config *lc;
    const la_layer_weights *w;
    size_t n;
    const float *x;
    float *out;
    la_status status;
} call;

static int run_call(void *ctx)
{
    call *c = ctx;
#define W(which) ((const float *)c->w->tensor[which])
    const size_t D = c->lc->d_model;
    switch (c->what) {
    case 0:
        c->status = la_encoder_layer(c->lc, c->w, LA_FLOAT32, 1, c->n, c->x, 0, NULL, c->out);
        break;
    case 1:
        c->status =
            la_mha(c->lc, LA_FLOAT32, 1, c->n, c->n, c->x, c->x, 0, NULL, W(LA_W_SELF_IN_WEIGHT),
                   W(LA_W_SELF_IN_BIAS), W(LA_W_SELF_OUT_WEIGHT), W(LA_W_SELF_OUT_BIAS), c->out);
        break;
    case 3:
        c->status =
            la_ffn(c->lc, LA_FLOAT32, c->n, c->x, W(LA_W_LINEAR1_WEIGHT), W(LA_W_LINEAR1_BIAS),
                   W(LA_W_LINEAR2_WEIGHT), W(LA_W_LINEAR2_BIAS), c->out);
        break;
    case 4:
        c->status = la_layer_norm(LA_FLOAT32, c->n, D, c->x, W(LA_W_NORM1_WEIGHT),
                                  W(LA_W_NORM1_BIAS), c->lc->norm_eps, c->out);
        if (c->status == LA_OK)
            c->status = la_layer_norm(LA_FLOAT32, c->n, D, c->x, W(LA_W_NORM2_WEIGHT),
                                      W(LA_W_NORM2_BIAS), c->lc->norm_eps, c->out);
        break;
    }
#undef W
    return c->status != LA_OK;
}

int cmd_block_sweep(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    memory_init();
    char err[512];
    machine_check(); /* how busy the machine is: into the header, a warning if busy */
    /* --model: which model's sizes, its stack, and what is timed of it */
    char model_line[512] = "";
    if (c.preset)
        snprintf(model_line, sizeof model_line,
                 "# model: %s (%s): D = %zu, H = %zu, d_ff = %zu, timed as one post-LN encoder "
                 "layer of these sizes%s\n",
                 c.preset->name, c.preset->stack, c.d, c.heads, c.d_ff,
                 strcmp(c.preset->stack, "decoder-only") == 0
                     ? " (its own blocks are causal and pre-LN: the sizes, not the block)"
                     : "");
    metadata_extra(model_line);
    record_file *f = record_open(c.common.out, "block",
                                 "time per component of one post-LN encoder layer against N, "
                                 "softmax and linear attention (float32, B = 1)",
                                 COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    metadata_extra(NULL);
    if (!f) return cli_fail("block-sweep", "%s", err);
    if (model_line[0]) printf("block-sweep: %s", model_line + 2);

    const size_t D = c.d, H = c.heads, dh = D / H;
    const int threads = la_get_num_threads();
    const size_t *ns = c.ns, n_points = c.n_points;
    la_layer_weights w = {0};
    float *x = NULL, *q = NULL, *k = NULL, *v = NULL, *out = NULL;
    rc = 1;
    la_status st = la_layer_weights_init(&w, LA_FLOAT32, D, c.d_ff, 0, c.common.seed);
    if (st != LA_OK) {
        cli_line("block-sweep: weights: %s", la_strerror(st));
        goto done;
    }
    progress_line pr;
    double total_work = 0;
    for (size_t i = 0; i < n_points; i++)
        total_work += 2.0 * (double)ns[i] * (double)ns[i];
    progress_start(&pr, "block", (int)(2 * n_points), total_work);
    int point = 0;

    /* the pair compared, by name: fused softmax and linear attention */
    static const la_kernel kernels[2] = {LA_KERNEL_SOFTMAX, LA_KERNEL_LINEAR};
    for (int lin = 0; lin <= 1; lin++) {
        const char *att = la_kernel_name(kernels[lin]);
        double last_n = 0, last_s = 0;
        int over = 0;
        for (size_t pi = 0; pi < n_points; pi++) {
            const size_t n = ns[pi];
            char what[64], key0[256];
            snprintf(what, sizeof what, "%s N=%zu", att, n);
            progress_step(&pr, ++point, (double)n * (double)n, what);
            snprintf(key0, sizeof key0, "%s,%zu,%zu,%zu,%zu,%d,layer", att, n, D, H, c.d_ff,
                     threads);
            const char *row = record_find(f, key0);
            double t_prior;
            if (row && record_get(f, row, "median_s", &t_prior) == 0) {
                /* --resume: measured already; it still feeds the prediction (a skipped
                 * point is tried again under this run's budgets) */
                last_n = (double)n, last_s = t_prior;
                continue;
            }
            la_layer_config lc;
            la_layer_config_init(&lc, D, H, c.d_ff);
            lc.attention = kernels[lin];
            lc.workspace_limit =
                c.common.max_mem < (double)SIZE_MAX ? (size_t)c.common.max_mem : SIZE_MAX;
            la_layer_cost cost;
            if ((st = la_layer_cost_model(&lc, 0, 1, n, n, 0, LA_FLOAT32, &cost)) != LA_OK) {
                /* a point the model cannot count: refused, one line, exit 2 */
                rc = cli_fail("block-sweep", "N = %zu: the cost model failed: %s", n,
                              la_strerror(st));
                goto done;
            }
            double predicted = last_n > 0 ? last_s * pow((double)n / last_n,
                                                         kernels_time_exponent(kernels[lin], NULL))
                                          : cost.total / 20e9;
            double bytes = cost.weight_bytes + cost.activation_bytes + cost.workspace_bytes +
                           4.0 * (double)n * (double)D * 5;
            const char *skip = bytes > c.common.max_mem                     ? "skipped_mem"
                               : (over || predicted > c.common.max_seconds) ? "skipped_time"
                                                                            : NULL;
            if (skip) {
                if (strcmp(skip, "skipped_time") == 0) over = 1;
                for (int ci = 0; ci <= N_COMPONENTS; ci++)
                    if (record_row(f, "%s,%zu,%zu,%zu,%zu,%d,%s,%s,,,,,,", att, n, D, H, c.d_ff,
                                   threads, ci < N_COMPONENTS ? components[ci] : "layer", skip))
                        goto done;
                continue;
            }

            /* inputs: x (N, D) for the layer parts, q, k, v (1, H, N, D/H) for the kernel */
            free(x), free(q), free(k), free(v), free(out);
            x = malloc(n * D * sizeof *x), q = malloc(n * D * sizeof *q);
            k = malloc(n * D * sizeof *k), v = malloc(n * D * sizeof *v);
            out = malloc(n * D * sizeof *out);
            if (!x || !q || !k || !v || !out) {
                cli_line("block-sweep: out of memory at N = %zu", n);
                goto done;
            }
            inputs_rng r = inputs_rng_for(c.common.seed, "block");
            inputs_fill_normal_f32(&r, x, n * D, 1.0);
            inputs_fill_normal_f32(&r, q, n * D, 1.0);
            inputs_fill_normal_f32(&r, k, n * D, 1.0);
            inputs_fill_normal_f32(&r, v, n * D, 1.0);
            la_problem p;
            la_problem_init(&p, 1, H, n, n, dh, dh);
            p.workspace_limit = lc.workspace_limit;

            /* time: layer, mha, kernel, ffn, norms */
            const timer_rule rule = sweep_rule(&c.common);
            timer_result t[5];
            for (int what_i = 0; what_i < 5; what_i++) {
                call cl = {what_i, &lc, &w, n, x, out, LA_OK};
                la_status ts;
                if (what_i == 2) /* the kernel alone */
                    ts = timer_kernel(lc.attention, &p, q, k, v, out, &rule, &t[2]);
                else if (timer_run(run_call, &cl, &rule, &t[what_i]) == 0)
                    ts = LA_OK;
                else
                    ts = cl.status != LA_OK ? cl.status : LA_ENOMEM;
                if (ts != LA_OK) {
                    fprintf(stderr, "\nlinattn: block-sweep: %s N = %zu: %s\n", att, n,
                            la_strerror(ts));
                    goto done;
                }
            }
            last_n = (double)n, last_s = t[0].median_s;
            double layer = t[0].median_s, attention = t[2].median_s;
            double projections = fmax(0, t[1].median_s - attention);
            double ffn = t[3].median_s, norms = t[4].median_s;
            double other = fmax(0, layer - (t[1].median_s + ffn + norms));
            double parts[N_COMPONENTS] = {attention, projections, ffn, norms, other};
            double flops[N_COMPONENTS] = {cost.attention, cost.projections, cost.ffn,
                                          cost.layer_norm, cost.residual};
            const timer_result *timing[N_COMPONENTS] = {&t[2], NULL, &t[3], &t[4], NULL};
            double sum = 0, below = 0;
            for (int ci = 0; ci < N_COMPONENTS; ci++)
                sum += parts[ci];
            for (int ci = 0; ci < N_COMPONENTS; ci++) {
                char mn[32] = "", mx[32] = "";
                if (timing[ci]) {
                    snprintf(mn, sizeof mn, "%.6e", timing[ci]->min_s);
                    snprintf(mx, sizeof mx, "%.6e", timing[ci]->max_s);
                }
                if (record_row(f, "%s,%zu,%zu,%zu,%zu,%d,%s,ok,%.6e,%s,%s,%.5f,%.5f,%.6e", att, n,
                               D, H, c.d_ff, threads, components[ci], parts[ci], mn, mx,
                               parts[ci] / sum, below / sum, flops[ci]))
                    goto done;
                below += parts[ci];
            }
            if (record_row(f, "%s,%zu,%zu,%zu,%zu,%d,layer,ok,%.6e,%.6e,%.6e,1,0,%.6e", att, n, D,
                           H, c.d_ff, threads, layer, t[0].min_s, t[0].max_s, cost.total))
                goto done;
        }
    }
    progress_end(&pr);
    printf("block-sweep: wrote %s\n", record_path(f));
    rc = 0;
done:
    free(x), free(q), free(k), free(v), free(out);
    la_layer_weights_free(&w);
    if (record_close(f) != 0) rc = 1;
    return rc;
}

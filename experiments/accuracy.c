/* accuracy.c — `linattn accuracy`: numerical comparison of the attention variants.
 * Four studies, one row per measurement in accuracy.csv:
 *   error_vs_n  each fast kernel (float32 and float64) against the float64 reference
 *               (la_ref_*) on the same inputs, as N grows;
 *   distance    how far linear attention's output is from softmax attention's, and hard
 *               from soft, on random inputs and on inputs with one dominant key
 *               (float64 references, so this is the math, not rounding);
 *   eps         linear attention's output for ε from 0 to 10 against ε = 0 (float64), and
 *               the float32 kernel against the float64 reference at each ε;
 *   chunk       the chunked causal linear kernel for every chunk size against the
 *               recurrent kernel and the reference: the chunk size must be invisible. */
#include "commands.h"
#include "common/inputs.h"
#include "common/kernels.h"
#include "common/progress.h"
#include "common/record.h"
#include "common/sweep.h"
#include "common/variants.h" /* variants_rank_fits: linformer's default rank against N */
#include "linattn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help_text[] =
    "usage: linattn accuracy [--n LIST] [--d D] [--heads H] [--fixed-n N]\n"
    "                        [--studies LIST] [--out PATH] [--resume] [--seed N]\n"
    "                        [--q Q.npy --k K.npy --v V.npy [--layout bhnd|bnhd]]\n"
    "\n"
    "Compares the attention variants numerically; relative errors are\n"
    "‖y − y_ref‖ / ‖y_ref‖ over the whole output (inf when any value is not finite).\n"
    "  error_vs_n  every kernel of the library's registry, float32 and float64, against\n"
    "              its float64 reference (la_ref_*) on the same inputs, at each N of\n"
    "              --n (linformer at its default rank 256: an N below it is recorded\n"
    "              as skipped_rank); the series:\n";
static const char help_after_series[] =
    "  distance    linear vs softmax, hard vs softmax and linear vs hard (float64\n"
    "              references) on random inputs and on inputs where one key dominates\n"
    "              every query's scores (logit gap ≈ 16), at each N of --n\n"
    "  eps         linear attention (elu+1 and relu, causal and not) at ε = 0, 1e-12, …,\n"
    "              10 against ε = 0, and the float32 kernel against the reference at\n"
    "              each ε, at N = --fixed-n\n"
    "  chunk       chunked causal linear attention (float32) for chunk sizes 1, 2, 4, …,\n"
    "              N against the recurrent kernel and the reference, at N = --fixed-n\n"
    "\n"
    "  --n LIST         sequence lengths of error_vs_n and distance:\n"
    "                   " SWEEP_SYNTAX " (default 16:4096)\n"
    "  --d D            head size, d_k = d_v = D (default 64)\n"
    "  --heads H        heads (default 2)\n"
    "  --fixed-n N      N of the eps and chunk studies (default 1000)\n"
    "  --studies LIST   comma-separated subset of error_vs_n,distance,eps,chunk (default\n"
    "                   all)\n"
    "  --out PATH       results file (default accuracy.csv)\n"
    "  --resume         keep the measurements already in PATH\n"
    "  --seed N         seed of the random inputs (default 1)\n"
    "  --q Q.npy, --k K.npy, --v V.npy\n"
    "                   compare on your arrays instead of random ones (input column\n"
    "                   \"user\"; distance then has no dominant_key inputs): shapes as in\n"
    "                   linattn attend, (N, d), (H, N, d) or (B, H, N, d), any of\n"
    "                   float16, bfloat16, float32, float64, with d_k = d_v; they set d\n"
    "                   and heads (B·H; --d and --heads are then refused). A point of N\n"
    "                   takes the first N queries and keys; an --n or --fixed-n above the\n"
    "                   arrays' min(N, M) is refused, the defaults are clipped to it. The\n"
    "                   results' # inputs line names the files (random: the seed)\n"
    "  --layout L       bhnd: the arrays are (B, H, N, d); bnhd: (B, N, H, d), as\n"
    "                   FlashAttention holds them, transposed on reading [bhnd]\n"
    "  --max-seconds S  skip (and record as skipped_time) an N whose float64 reference is\n"
    "                   predicted to take longer than S seconds at 1 GFLOP/s (default 60)\n"
    "  --max-mem SIZE   skip (skipped_mem) an N whose reference would hold more than SIZE\n"
    "                   bytes: its N×N scores and the inputs and outputs (default 8G)\n"
    "Inputs are N(0, 1) in float32, or --q/--k/--v (the references get the same values\n"
    "in float64). On success one line on stderr says how the inputs were read.\n";

/* The series error_vs_n leaves out: their kernels' code is that of series it runs, with
 * the causal mask. */
static const char *const left_out_of_error_vs_n[] = {
    "softmax_materialized_causal", "hard_causal",
    /* the score functions: softmax's kernel on transformed inputs (general,
     * cosine), or tested against their oracles in tests/ (additive) */
    "general", "general_causal", "additive", "additive_causal", "cosine", "cosine_causal", NULL};

void cmd_accuracy_help(FILE *out)
{
    kernels_series all[KERNELS_MAX_SERIES];
    size_t n = kernels_all_series(all);
    int selected[KERNELS_MAX_SERIES];
    char names[1024];
    kernels_select_all_but(all, n, left_out_of_error_vs_n, selected);
    fputs(help_text, out);
    fprintf(out, "%14s", "");
    cli_print_wrapped(out, kernels_series_names(all, n, selected, names, sizeof names), 14);
    fputs(help_after_series, out);
}

static const char COLUMNS[] =
    "study,variant,input,n,d,heads,causal,feature_map,eps,chunk,precision,compared_to,"
    "rel_error,max_abs_error,status";
enum { N_KEY = 12, MAX_POINTS = 64 };

typedef struct {
    size_t ns[MAX_POINTS], n_points, hi; /* --n, increasing; hi the largest */
    size_t d, heads, fixed_n;
    int studies[4];
    sweep_common common;
    inputs_source source; /* random, or --q/--k/--v (common/inputs.h) */
} config;

/* The input column: "random", or "user" for the arrays of --q/--k/--v; with those, the
 * distance study has no dominant_key inputs (N_DOMINANT 0). */
#define INPUT_NAME(x) ((x)->c->source.from_files ? "user" : "random")
#define N_DOMINANT(x) ((x)->c->source.from_files ? 0 : 1)

static const char *const study_names[] = {"error_vs_n", "distance", "eps", "chunk", NULL};

/* With --q/--k/--v: the arrays set d (d_k = d_v needed) and heads (B·H); an --n or
 * --fixed-n above min(N, M) is refused, the defaults clipped to it. 0, or 2. */
static int shape_from_arrays(config *c, const char *d, const char *heads, int n_given,
                             int fixed_given)
{
    const inputs_source *s = &c->source;
    const size_t max_n = inputs_source_max_n(s);
    if (d || heads)
        return cli_fail(d ? "--d" : "--heads",
                        "set by the arrays with --q/--k/--v (d %zu, "
                        "heads %zu)",
                        s->d_k, s->batch * s->heads);
    if (s->d_v != s->d_k)
        return cli_fail(s->path[2], "d_v = %zu differs from d_k = %zu (accuracy uses d_k = d_v)",
                        s->d_v, s->d_k);
    if (n_given && c->hi > max_n)
        return cli_fail("--n",
                        "%zu is more than the arrays' %zu tokens (min(N, M) of "
                        "--q/--k/--v)",
                        c->hi, max_n);
    if (fixed_given && c->fixed_n > max_n)
        return cli_fail("--fixed-n",
                        "%zu is more than the arrays' %zu tokens (min(N, M) of "
                        "--q/--k/--v)",
                        c->fixed_n, max_n);
    c->d = s->d_k, c->heads = s->batch * s->heads;
    /* the default lengths clipped to the arrays' (at least one length: theirs) */
    size_t kept = 0;
    for (size_t i = 0; i < c->n_points; i++)
        if (c->ns[i] <= max_n) c->ns[kept++] = c->ns[i];
    if (kept == 0) c->ns[kept++] = max_n;
    c->n_points = kept;
    c->hi = c->ns[kept - 1];
    if (c->fixed_n > max_n) c->fixed_n = max_n;
    return 0;
}

static int parse(int argc, char **argv, config *c)
{
    const char *n = NULL, *d = NULL, *heads = NULL, *fixed = NULL, *studies = NULL;
    const char *q_path = NULL, *k_path = NULL, *v_path = NULL, *layout_text = NULL;
    sweep_common_text common = {0};
    const cli_flag flags[] = {
        {"n", &n, NULL},
        {"d", &d, NULL},
        {"heads", &heads, NULL},
        {"fixed-n", &fixed, NULL},
        {"studies", &studies, NULL},
        {"out", &common.out, NULL},
        {"resume", NULL, &common.resume},
        {"seed", &common.seed, NULL},
        {"max-seconds", &common.max_seconds, NULL},
        {"max-mem", &common.max_mem, NULL},
        {"q", &q_path, NULL},
        {"k", &k_path, NULL},
        {"v", &v_path, NULL},
        {"layout", &layout_text, NULL},
        {NULL, NULL, NULL},
    };
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;
    c->d = 64, c->heads = 2, c->fixed_n = 1000;
    for (int i = 0; i < 4; i++)
        c->studies[i] = 1;
    if ((rc = sweep_parse("--n", n ? n : "16:4096", 2, c->ns, MAX_POINTS, &c->n_points))) return rc;
    sweep_sort_sizes(c->ns, c->n_points); /* rows and figures go up in N */
    c->hi = c->ns[c->n_points - 1];
    if (d && (rc = sweep_parse_positive("--d", d, &c->d))) return rc;
    if (heads && (rc = sweep_parse_positive("--heads", heads, &c->heads))) return rc;
    if (fixed && (rc = sweep_parse_positive("--fixed-n", fixed, &c->fixed_n))) return rc;
    if (studies) {
        int which[4];
        size_t count;
        if ((rc = cli_parse_choice_list("--studies", studies, study_names, which, 4, &count)))
            return rc;
        memset(c->studies, 0, sizeof c->studies);
        for (size_t i = 0; i < count; i++)
            c->studies[which[i]] = 1;
    }
    /* the largest problem's float64 arrays addressable (N·d·heads doubles) */
    const size_t n_max = c->hi > c->fixed_n ? c->hi : c->fixed_n;
    if ((rc = sweep_check_floats("--n", c->heads, n_max, c->d)) ||
        (rc = sweep_check_floats("--n", c->heads * n_max, c->d, 2)))
        return rc;
    if ((rc = sweep_common_finish(&common, &c->common, "accuracy.csv", 60, 8.0 * (1 << 30))))
        return rc;
    layout_kind layout;
    if ((rc = layout_parse("--layout", layout_text, &layout))) return rc;
    if (layout_text && !q_path) return cli_fail("--layout", "applies with --q/--k/--v only");
    if ((rc = inputs_source_open_as(&c->source, layout, q_path, k_path, v_path, c->common.seed)))
        return rc;
    if (c->source.from_files && (rc = shape_from_arrays(c, d, heads, n != NULL, fixed != NULL)))
        inputs_source_close(&c->source);
    return rc;
}

/* One comparison's row. */
typedef struct {
    const char *study, *variant, *input;
    size_t n;
    int causal;
    la_feature_map fm;
    double eps;
    size_t chunk; /* 0: not applicable */
    const char *precision, *compared_to;
} row_key;

typedef struct {
    const config *c;
    record_file *f;
    progress_line *pr;
    int step;
} ctx;

static void key_text(const ctx *x, const row_key *k, char *buf, size_t size)
{
    char chunk[32] = "";
    if (k->chunk) snprintf(chunk, sizeof chunk, "%zu", k->chunk);
    snprintf(buf, size, "%s,%s,%s,%zu,%zu,%zu,%d,%s,%g,%s,%s,%s", k->study, k->variant, k->input,
             k->n, x->c->d, x->c->heads, k->causal, la_feature_map_name(k->fm), k->eps, chunk,
             k->precision, k->compared_to);
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN propagates */
    }
    return m;
}

/* Writes one comparison of y (float64 values) against ref. */
static int record(ctx *x, const row_key *k, const double *y, const double *ref, size_t n)
{
    char key[512];
    key_text(x, k, key, sizeof key);
    double e = inputs_rel_error_f64(y, ref, n), m = max_abs_diff(y, ref, n);
    return record_row(x->f, "%s,%.6e,%.6e,%s", key, e, m, isfinite(e) ? "ok" : "nonfinite");
}

static int record_failure(ctx *x, const row_key *k, la_status st)
{
    char key[512];
    key_text(x, k, key, sizeof key);
    fprintf(stderr, "\nlinattn: accuracy: %s: %s\n", key, la_strerror(st));
    return record_row(x->f, "%s,,,error", key);
}

static int record_skip(ctx *x, const row_key *k, const char *status)
{
    char key[512];
    key_text(x, k, key, sizeof key);
    return record_row(x->f, "%s,,,%s", key, status);
}

/* NULL when the float64 references at N fit the budgets, else the skip status:
 * the softmax reference's N×N scores and ten arrays of the problem's size, and its
 * 4·N²·d FLOPs per head at 1 GFLOP/s (plain loops). */
static const char *over_budget(const ctx *x, size_t n)
{
    const double N = (double)n, d = (double)x->c->d, H = (double)x->c->heads;
    double bytes = 8 * N * N + 10 * 8 * H * N * d;
    double seconds = 4 * N * N * d * H / 1e9;
    if (bytes > x->c->common.max_mem) return "skipped_mem";
    if (seconds > x->c->common.max_seconds) return "skipped_time";
    return NULL;
}

static int done_already(ctx *x, const row_key *k)
{
    char key[512];
    key_text(x, k, key, sizeof key);
    return record_find(x->f, key) != NULL;
}

static void widen(const float *a, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = a[i];
}

/* Inputs of one problem in both precisions: the float64 copies hold exactly the
 * float32 values, so a float32 kernel's error is its own arithmetic. */
typedef struct {
    size_t n, elems;
    float *q, *k, *v, *y32;
    double *q64, *k64, *v64, *y64, *ref, *ref2;
} buffers;

static void buffers_free(buffers *b)
{
    free(b->q), free(b->k), free(b->v), free(b->y32);
    free(b->q64), free(b->k64), free(b->v64), free(b->y64), free(b->ref), free(b->ref2);
    memset(b, 0, sizeof *b);
}

static int buffers_alloc(buffers *b, size_t elems)
{
    memset(b, 0, sizeof *b);
    b->elems = elems;
    b->q = malloc(elems * sizeof(float)), b->k = malloc(elems * sizeof(float));
    b->v = malloc(elems * sizeof(float)), b->y32 = malloc(elems * sizeof(float));
    b->q64 = malloc(elems * sizeof(double)), b->k64 = malloc(elems * sizeof(double));
    b->v64 = malloc(elems * sizeof(double)), b->y64 = malloc(elems * sizeof(double));
    b->ref = malloc(elems * sizeof(double)), b->ref2 = malloc(elems * sizeof(double));
    if (!b->q || !b->k || !b->v || !b->y32 || !b->q64 || !b->k64 || !b->v64 || !b->y64 || !b->ref ||
        !b->ref2) {
        buffers_free(b);
        return -1;
    }
    return 0;
}

/* Random N(0, 1) inputs; with dominant, one key (j = 0) aligned with a direction u that
 * every query shares: q_i = g_i + 2·√d·u, k_0 = 8·u (|u| = 1), so q_i·k_0·scale ≈ 16
 * while the other logits are O(1). */
static void fill_inputs(ctx *x, buffers *b, const char *label, int dominant)
{
    const size_t d = x->c->d, heads = x->c->heads, n = b->elems / (heads * d);
    inputs_rng r = inputs_rng_for(x->c->common.seed, label);
    if (x->c->source.from_files) { /* prefixes of the arrays (never dominant) */
        inputs_source_fill(&x->c->source, label, heads, n, n, d, d, b->q, b->k, b->v);
    } else {
        inputs_fill_normal_f32(&r, b->q, b->elems, 1.0);
        inputs_fill_normal_f32(&r, b->k, b->elems, 1.0);
        inputs_fill_normal_f32(&r, b->v, b->elems, 1.0);
    }
    if (dominant) {
        for (size_t h = 0; h < heads; h++) {
            double u[1024], norm = 0;
            size_t du = d < 1024 ? d : 1024;
            for (size_t c = 0; c < du; c++)
                u[c] = inputs_normal(&r), norm += u[c] * u[c];
            norm = sqrt(norm);
            for (size_t c = 0; c < du; c++)
                u[c] /= norm;
            float *qh = b->q + h * n * d, *kh = b->k + h * n * d;
            for (size_t i = 0; i < n; i++)
                for (size_t c = 0; c < du; c++)
                    qh[i * d + c] += (float)(2 * sqrt((double)d) * u[c]);
            for (size_t c = 0; c < du; c++)
                kh[c] = (float)(8 * u[c]);
        }
    }
    widen(b->q, b->q64, b->elems);
    widen(b->k, b->k64, b->elems);
    widen(b->v, b->v64, b->elems);
}

/* The series of error_vs_n, from the registry. */
typedef struct {
    kernels_series all[KERNELS_MAX_SERIES];
    int selected[KERNELS_MAX_SERIES];
    size_t n;
} series_set;

static void error_vs_n_series(series_set *s)
{
    s->n = kernels_all_series(s->all);
    kernels_select_all_but(s->all, s->n, left_out_of_error_vs_n, s->selected);
}

/* The chunk column: the default chunk where the kernel reads it (causal), else none. */
static size_t chunk_of(const kernels_series *var)
{
    return var->causal && (la_kernel_get(var->kernel)->params & LA_PARAM_CHUNK) ? LA_DEFAULT_CHUNK
                                                                                : 0;
}

static void problem_for(const ctx *x, la_problem *p, size_t n, int causal)
{
    la_problem_init(p, 1, x->c->heads, n, n, x->c->d, x->c->d);
    p->causal = causal;
    p->workspace_limit = (size_t)8 << 30;
}

static void progress(ctx *x, const char *what)
{
    progress_step(x->pr, ++x->step, 1, what);
}

/* ---------------------------------------------------------------- error_vs_n */

static int study_error_vs_n(ctx *x, const size_t *ns, size_t n_points)
{
    series_set set;
    error_vs_n_series(&set);
    for (size_t pi = 0; pi < n_points; pi++) {
        const size_t n = ns[pi];
        const char *skip = over_budget(x, n);
        if (skip) {
            for (size_t vi = 0; vi < set.n; vi++) {
                if (!set.selected[vi]) continue;
                const kernels_series *var = &set.all[vi];
                row_key k = {"error_vs_n", var->name,       INPUT_NAME(x),  n,
                             var->causal,  LA_FEATURE_ELU1, LA_DEFAULT_EPS, chunk_of(var),
                             "float32",    "reference_f64"};
                if (record_skip(x, &k, skip)) return -1;
                k.precision = "float64";
                if (record_skip(x, &k, skip)) return -1;
            }
            continue;
        }
        buffers b;
        if (buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
        fill_inputs(x, &b, "error_vs_n", 0);
        char what[64];
        snprintf(what, sizeof what, "error_vs_n N=%zu", n);
        progress(x, what);
        for (size_t vi = 0; vi < set.n; vi++) {
            if (!set.selected[vi]) continue;
            const kernels_series *var = &set.all[vi];
            row_key k32 = {"error_vs_n", var->name,       INPUT_NAME(x),  n,
                           var->causal,  LA_FEATURE_ELU1, LA_DEFAULT_EPS, chunk_of(var),
                           "float32",    "reference_f64"};
            row_key k64 = k32;
            k64.precision = "float64";
            if (done_already(x, &k32) && done_already(x, &k64)) continue;
            la_problem p;
            problem_for(x, &p, n, var->causal);
            if (!variants_rank_fits(var->kernel, &p)) { /* linformer: K above M = N, not run */
                if (record_skip(x, &k32, "skipped_rank") || record_skip(x, &k64, "skipped_rank"))
                    return -1;
                continue;
            }
            la_status st = la_ref_attention(var->kernel, &p, b.q64, b.k64, b.v64, b.ref);
            if (st != LA_OK) {
                if (record_failure(x, &k32, st)) return -1;
                continue;
            }
            st = la_attention_f32(var->kernel, &p, b.q, b.k, b.v, b.y32);
            if (st == LA_OK) {
                widen(b.y32, b.y64, b.elems);
                if (record(x, &k32, b.y64, b.ref, b.elems)) return -1;
            } else if (record_failure(x, &k32, st))
                return -1;
            st = la_attention_f64(var->kernel, &p, b.q64, b.k64, b.v64, b.y64);
            if (st == LA_OK) {
                if (record(x, &k64, b.y64, b.ref, b.elems)) return -1;
            } else if (record_failure(x, &k64, st))
                return -1;
        }
        buffers_free(&b);
    }
    return 0;
}

/* ---------------------------------------------------------------- distance */

/* The three attentions compared, by name: softmax, linear and hard (their references,
 * float64), a deliberate comparison of these kernels rather than a sweep of the registry. */
static int study_distance(ctx *x, const size_t *ns, size_t n_points)
{
    const char *const inputs[] = {INPUT_NAME(x), "dominant_key"};
    const char *softmax = la_kernel_series(LA_KERNEL_SOFTMAX, 0);
    const char *linear = la_kernel_series(LA_KERNEL_LINEAR, 0);
    const char *hard_name = la_kernel_series(LA_KERNEL_HARD, 0);
    for (size_t pi = 0; pi < n_points; pi++) {
        const size_t n = ns[pi];
        for (int dom = 0; dom <= N_DOMINANT(x); dom++) {
            row_key lin = {"distance",      linear,         inputs[dom], n,         0,
                           LA_FEATURE_ELU1, LA_DEFAULT_EPS, 0,           "float64", softmax};
            row_key hard = lin, lin_hard = lin;
            hard.variant = hard_name;
            lin_hard.compared_to = hard_name;
            if (done_already(x, &lin) && done_already(x, &hard) && done_already(x, &lin_hard))
                continue;
            const char *skip = over_budget(x, n);
            if (skip) {
                if (record_skip(x, &lin, skip) || record_skip(x, &hard, skip) ||
                    record_skip(x, &lin_hard, skip))
                    return -1;
                continue;
            }
            char what[64];
            snprintf(what, sizeof what, "distance %s N=%zu", inputs[dom], n);
            progress(x, what);
            buffers b;
            if (buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
            fill_inputs(x, &b, dom ? "distance_dominant" : "distance_random", dom);
            la_problem p;
            problem_for(x, &p, n, 0);
            /* ref = softmax, ref2 = hard, y64 = linear (all float64 references) */
            la_status st = la_ref_attention(LA_KERNEL_SOFTMAX, &p, b.q64, b.k64, b.v64, b.ref);
            if (st == LA_OK) st = la_ref_attention(LA_KERNEL_HARD, &p, b.q64, b.k64, b.v64, b.ref2);
            if (st == LA_OK)
                st = la_ref_attention(LA_KERNEL_LINEAR, &p, b.q64, b.k64, b.v64, b.y64);
            if (st != LA_OK) {
                int rc = record_failure(x, &lin, st);
                buffers_free(&b);
                if (rc) return -1;
                continue;
            }
            int rc = record(x, &lin, b.y64, b.ref, b.elems) ||
                     record(x, &hard, b.ref2, b.ref, b.elems) ||
                     record(x, &lin_hard, b.y64, b.ref2, b.elems);
            buffers_free(&b);
            if (rc) return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- eps */

static int study_eps(ctx *x)
{
    static const double eps_values[] = {0, 1e-12, 1e-9, 1e-6, 1e-4, 1e-2, 1e-1, 1, 10};
    const size_t n = x->c->fixed_n;
    buffers b;
    if (buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
    fill_inputs(x, &b, "eps", 0);
    for (int fmi = 0; fmi <= 1; fmi++) {
        la_feature_map fm = fmi ? LA_FEATURE_RELU : LA_FEATURE_ELU1;
        for (int causal = 0; causal <= 1; causal++) {
            char what[64];
            snprintf(what, sizeof what, "eps %s %s", la_feature_map_name(fm),
                     causal ? "causal" : "non-causal");
            progress(x, what);
            const char *name = la_kernel_series(LA_KERNEL_LINEAR, causal);
            la_problem p;
            problem_for(x, &p, n, causal);
            p.feature_map = fm;
            p.eps = 0;
            /* ref2 = the float64 reference at ε = 0 */
            la_status st = la_ref_attention(LA_KERNEL_LINEAR, &p, b.q64, b.k64, b.v64, b.ref2);
            for (size_t e = 0; e < sizeof eps_values / sizeof eps_values[0]; e++) {
                row_key vs0 = {"eps",     name,   INPUT_NAME(x), n,
                               causal,    fm,     eps_values[e], causal ? LA_DEFAULT_CHUNK : 0,
                               "float64", "eps_0"};
                row_key f32 = vs0;
                f32.precision = "float32";
                f32.compared_to = "reference_f64";
                if (done_already(x, &vs0) && done_already(x, &f32)) continue;
                p.eps = eps_values[e];
                la_status s2 =
                    st == LA_OK ? la_ref_attention(LA_KERNEL_LINEAR, &p, b.q64, b.k64, b.v64, b.ref)
                                : st;
                if (s2 != LA_OK) {
                    if (record_failure(x, &vs0, s2)) goto fail;
                    continue;
                }
                if (record(x, &vs0, b.ref, b.ref2, b.elems)) goto fail;
                s2 = la_attention_f32(LA_KERNEL_LINEAR, &p, b.q, b.k, b.v, b.y32);
                if (s2 == LA_OK) {
                    widen(b.y32, b.y64, b.elems);
                    if (record(x, &f32, b.y64, b.ref, b.elems)) goto fail;
                } else if (record_failure(x, &f32, s2))
                    goto fail;
            }
        }
    }
    buffers_free(&b);
    return 0;
fail:
    buffers_free(&b);
    return -1;
}

/* ---------------------------------------------------------------- chunk */

/* The chunked causal form of linear attention against its recurrent kernel: a named pair
 * (the two causal forms of linear attention in the registry). */
static int study_chunk(ctx *x)
{
    const char *chunked = la_kernel_series(LA_KERNEL_LINEAR, 1);
    const char *recurrent_name = la_kernel_series(LA_KERNEL_LINEAR_RECURRENT, 1);
    const size_t n = x->c->fixed_n;
    buffers b;
    if (buffers_alloc(&b, x->c->heads * n * x->c->d)) return -1;
    fill_inputs(x, &b, "chunk", 0);
    float *recurrent = malloc(b.elems * sizeof *recurrent);
    double *recurrent64 = malloc(b.elems * sizeof *recurrent64);
    int rc = -1;
    if (!recurrent || !recurrent64) goto done;
    progress(x, "chunk sizes");
    la_problem p;
    problem_for(x, &p, n, 1);
    /* the recurrent kernel against the reference: the line the chunked forms sit on */
    const row_key rec_key = {"chunk",   recurrent_name,  INPUT_NAME(x),  n,
                             1,         LA_FEATURE_ELU1, LA_DEFAULT_EPS, 0,
                             "float32", "reference_f64"};
    la_status st = la_ref_attention(LA_KERNEL_LINEAR_RECURRENT, &p, b.q64, b.k64, b.v64, b.ref);
    if (st == LA_OK)
        st = la_attention_f32(LA_KERNEL_LINEAR_RECURRENT, &p, b.q, b.k, b.v, recurrent);
    if (st != LA_OK) {
        rc = record_failure(x, &rec_key, st) ? -1 : 0;
        goto done;
    }
    widen(recurrent, recurrent64, b.elems);
    if (!done_already(x, &rec_key) && record(x, &rec_key, recurrent64, b.ref, b.elems)) goto done;
    for (size_t chunk = 1;; chunk = chunk * 2 > n ? n : chunk * 2) {
        row_key vs_rec = {"chunk", chunked,   INPUT_NAME(x),  n, 1, LA_FEATURE_ELU1, LA_DEFAULT_EPS,
                          chunk,   "float32", "recurrent_f32"};
        row_key vs_ref = vs_rec;
        vs_ref.compared_to = "reference_f64";
        if (!(done_already(x, &vs_rec) && done_already(x, &vs_ref))) {
            p.chunk = chunk;
            st = la_attention_f32(LA_KERNEL_LINEAR, &p, b.q, b.k, b.v, b.y32);
            if (st != LA_OK) {
                if (record_failure(x, &vs_ref, st)) goto done;
            } else {
                widen(b.y32, b.y64, b.elems);
                if (record(x, &vs_rec, b.y64, recurrent64, b.elems) ||
                    record(x, &vs_ref, b.y64, b.ref, b.elems))
                    goto done;
            }
        }
        if (chunk == n) break;
    }
    rc = 0;
done:
    free(recurrent), free(recurrent64);
    buffers_free(&b);
    return rc;
}

/* The summary: the worst float32 error of each kernel, and the distances at the
 * largest N. */
static void summarize(ctx *x, const size_t *ns, size_t n_points)
{
    if (x->c->studies[0]) {
        series_set set;
        error_vs_n_series(&set);
        for (size_t vi = 0; vi < set.n; vi++) {
            if (!set.selected[vi]) continue;
            const kernels_series *var = &set.all[vi];
            double worst = 0;
            for (size_t i = 0; i < n_points; i++) {
                row_key k = {"error_vs_n", var->name,       INPUT_NAME(x),  ns[i],
                             var->causal,  LA_FEATURE_ELU1, LA_DEFAULT_EPS, chunk_of(var),
                             "float32",    "reference_f64"};
                char key[512];
                key_text(x, &k, key, sizeof key);
                const char *row = record_find(x->f, key);
                double e;
                if (row && record_get(x->f, row, "rel_error", &e) == 0 && !(e <= worst)) worst = e;
            }
            printf("accuracy: %-24s float32 vs float64 reference: worst relative error %.2e "
                   "(N = %zu..%zu)\n",
                   var->name, worst, ns[0], ns[n_points - 1]);
        }
    }
    if (x->c->studies[1]) {
        const char *const inputs[] = {INPUT_NAME(x), "dominant_key"};
        for (int dom = 0; dom <= N_DOMINANT(x); dom++) {
            /* at the largest N that was measured */
            for (size_t i = n_points; i-- > 0;) {
                double e1 = NAN, e2 = NAN;
                row_key k = {"distance",
                             la_kernel_series(LA_KERNEL_LINEAR, 0),
                             inputs[dom],
                             ns[i],
                             0,
                             LA_FEATURE_ELU1,
                             LA_DEFAULT_EPS,
                             0,
                             "float64",
                             la_kernel_series(LA_KERNEL_SOFTMAX, 0)};
                char key[512];
                key_text(x, &k, key, sizeof key);
                const char *row = record_find(x->f, key);
                if (!row || record_get(x->f, row, "rel_error", &e1) != 0) continue;
                k.variant = la_kernel_series(LA_KERNEL_HARD, 0);
                key_text(x, &k, key, sizeof key);
                if ((row = record_find(x->f, key))) record_get(x->f, row, "rel_error", &e2);
                printf("accuracy: %-12s inputs, N = %zu: ‖linear − softmax‖/‖softmax‖ = %.3g, "
                       "‖hard − softmax‖/‖softmax‖ = %.3g\n",
                       inputs[dom], ns[i], e1, e2);
                break;
            }
        }
    }
}

int cmd_accuracy(int argc, char **argv)
{
    config c;
    int rc = parse(argc, argv, &c);
    if (rc) return rc;
    char err[512], inputs[1024];
    inputs_source_describe(&c.source, inputs, sizeof inputs);
    record_meta_extra(inputs);
    record_file *f = record_open(c.common.out, "accuracy",
                                 "relative errors of the kernels against float64 references, and "
                                 "distances between attention variants",
                                 COLUMNS, N_KEY, c.common.resume, argc, argv, err, sizeof err);
    if (!f) {
        inputs_source_close(&c.source);
        record_meta_extra(NULL);
        return cli_fail("accuracy", "%s", err);
    }
    const size_t *ns = c.ns, n_points = c.n_points;
    progress_line pr;
    int total = (c.studies[0] ? (int)n_points : 0) +
                (c.studies[1] ? (c.source.from_files ? 1 : 2) * (int)n_points : 0) +
                (c.studies[2] ? 4 : 0) + (c.studies[3] ? 1 : 0);
    progress_start(&pr, "accuracy", total, 0);
    ctx x = {&c, f, &pr, 0};
    rc = 0;
    if (c.studies[0] && study_error_vs_n(&x, ns, n_points)) rc = 1;
    if (!rc && c.studies[1] && study_distance(&x, ns, n_points)) rc = 1;
    if (!rc && c.studies[2] && study_eps(&x)) rc = 1;
    if (!rc && c.studies[3] && study_chunk(&x)) rc = 1;
    progress_end(&pr);
    if (rc)
        cli_line("accuracy: failed (out of memory or a write error)");
    else
        summarize(&x, ns, n_points);
    printf("accuracy: wrote %s\n", record_path(f));
    const inputs_source *s = &c.source;
    if (rc)
        ;
    else if (s->from_files)
        layout_report("accuracy", s->layout, s->batch, s->heads, s->n, s->m, s->d_k, s->d_v,
                      "float32");
    else
        layout_report("accuracy", LAYOUT_BHND, 1, c.heads, c.hi, c.hi, c.d, c.d,
                      "float32 random normal");
    if (record_close(f) != 0) rc = 1;
    inputs_source_close(&c.source);
    record_meta_extra(NULL); /* `linattn results` runs the next experiment in this process */
    return rc;
}

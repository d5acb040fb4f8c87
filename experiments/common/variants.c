/* variants.c — the approximating kernels' flags (variants.h). */
#include "variants.h"

#include "arrays.h"
#include "cli.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One flag: its name, the LA_PARAM_* bit of the rows that read it, and its help text. */
static const struct {
    const char *flag;
    unsigned param;
    const char *help;
    int attend_only; /* a file whose shape a sweep would change: --proj, --score-w, --score-v */
} param_flags[] = {
    {"--window R", LA_PARAM_WINDOW,
     "keys within R positions of the query (causal: R before it) [64]", 0},
    {"--proj-rank K", LA_PARAM_PROJ, "keys and values projected along the sequence to K rows [256]",
     0},
    {"--proj E.npy,F.npy", LA_PARAM_PROJ, "the projections, (K, M) each; else drawn from --seed",
     1},
    {"--features M", LA_PARAM_FEATURES, "random features per head [256]", 0},
    {"--score-dim A", LA_PARAM_SCORE_DIM, "d_a, the rows of W and the entries of v [64]", 0},
    {"--score-w W.npy", LA_PARAM_SCORE_WEIGHTS,
     "W: general (d_k, d_k), additive (d_a, 2·d_k); else drawn from --seed", 1},
    {"--score-v v.npy", LA_PARAM_SCORE_DIM, "v (d_a,), with --score-w", 1},
    {"--seed S", LA_PARAM_PROJ | LA_PARAM_FEATURES | LA_PARAM_SCORE_WEIGHTS | LA_PARAM_RELATIVE,
     "the random draw of projections, features, score weights, position embeddings [0]", 0},
};

unsigned variants_params_of(const la_kernel *kernels, size_t n)
{
    unsigned params = 0;
    for (size_t i = 0; i < n; i++) {
        const la_kernel_info *row = la_kernel_get(kernels[i]);
        if (row) params |= row->params;
    }
    return params;
}

/* "local or linformer": the rows that read any of the bits, into buf. */
static const char *readers(unsigned bits, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    int count = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        count += (la_kernel_get((la_kernel)k)->params & bits) != 0;
    for (int k = 0, seen = 0; k < LA_KERNEL_COUNT && len < size; k++) {
        const la_kernel_info *row = la_kernel_get((la_kernel)k);
        if (!(row->params & bits)) continue;
        seen++;
        const char *sep = seen == 1 ? "" : seen == count ? " or " : ", ";
        len += (size_t)snprintf(buf + len, size - len, "%s%s", sep, row->name);
    }
    return count ? buf : "no kernel";
}

static int refuse_unread(const char *flag, const char *given, unsigned bits, unsigned read)
{
    if (!given || (bits & read)) return 0;
    char names[256];
    return cli_fail(flag, "applies to --variant %s only", readers(bits, names, sizeof names));
}

/* --proj E.npy,F.npy: both read as float64 matrices of the same shape. */
static int read_projections(const char *text, variants_values *out)
{
    const char *comma = strchr(text, ',');
    if (!comma || comma == text || !comma[1] || strchr(comma + 1, ','))
        return cli_fail("--proj", "'%s' is not E.npy,F.npy (two files)", text);
    char e_path[4096];
    snprintf(e_path, sizeof e_path, "%.*s", (int)(comma - text), text);
    int rc = arrays_read_floats(e_path, LA_FLOAT64, &out->proj_e);
    if (!rc) rc = arrays_read_floats(comma + 1, LA_FLOAT64, &out->proj_f);
    if (rc) return rc;
    char a[64], b[64];
    if (out->proj_e.ndim != 2 || out->proj_e.shape[0] == 0 || out->proj_e.shape[1] == 0)
        return cli_fail("--proj", "%s has shape %s, need (K, M) with K, M >= 1", e_path,
                        arrays_shape_str(&out->proj_e, a, sizeof a));
    if (out->proj_f.ndim != 2 || out->proj_f.shape[0] != out->proj_e.shape[0] ||
        out->proj_f.shape[1] != out->proj_e.shape[1])
        return cli_fail("--proj", "%s has shape %s, E has %s: need the same (K, M)", comma + 1,
                        arrays_shape_str(&out->proj_f, a, sizeof a),
                        arrays_shape_str(&out->proj_e, b, sizeof b));
    return 0;
}

/* --score-dim, --score-w, --score-v: d_a >= 1; W a float64 matrix; with a kernel that reads
 * v (additive) W and v together or neither, v a vector, and no --score-dim beside them
 * (v's length is d_a). */
static int read_score_weights(const variants_flags *f, unsigned params_read, variants_values *out)
{
    int rc;
    char a[64];
    if (f->score_dim && (f->score_w || f->score_v))
        return cli_fail("--score-dim", "not with --score-w, --score-v (v's length is d_a)");
    if (f->score_dim) {
        if ((rc = cli_parse_size("--score-dim", f->score_dim, &out->blocks.score.score_dim)))
            return rc;
        if (out->blocks.score.score_dim < 1) return cli_fail("--score-dim", "must be at least 1");
        out->given |= LA_PARAM_SCORE_DIM;
    }
    if ((params_read & LA_PARAM_SCORE_DIM) && (f->score_w != NULL) != (f->score_v != NULL))
        return cli_fail(f->score_w ? "--score-v" : "--score-w",
                        "missing: additive scores take --score-w and --score-v together");
    if (f->score_w) {
        if ((rc = arrays_read_floats(f->score_w, LA_FLOAT64, &out->score_w))) return rc;
        if (out->score_w.ndim != 2 || out->score_w.count == 0)
            return cli_fail(f->score_w, "shape %s, need a matrix: (d_k, d_k) or (d_a, 2·d_k)",
                            arrays_shape_str(&out->score_w, a, sizeof a));
        out->given |= LA_PARAM_SCORE_WEIGHTS;
    }
    if (f->score_v) {
        if ((rc = arrays_read_floats(f->score_v, LA_FLOAT64, &out->score_v))) return rc;
        if (out->score_v.ndim != 1 || out->score_v.count == 0)
            return cli_fail(f->score_v, "shape %s, need (d_a,) with d_a >= 1",
                            arrays_shape_str(&out->score_v, a, sizeof a));
        out->blocks.score.score_dim = out->score_v.shape[0];
    }
    return 0;
}

void variants_defaults(variants_values *out, uint64_t seed)
{
    memset(out, 0, sizeof *out);
    la_blocks_init(&out->blocks, seed);
    out->seed = seed;
}

int variants_parse(const variants_flags *f, unsigned params_read, variants_values *out)
{
    variants_defaults(out, 0);
    int rc;
    if ((rc = refuse_unread("--window", f->window, LA_PARAM_WINDOW, params_read)) ||
        (rc = refuse_unread("--proj-rank", f->proj_rank, LA_PARAM_PROJ, params_read)) ||
        (rc = refuse_unread("--proj", f->proj, LA_PARAM_PROJ, params_read)) ||
        (rc = refuse_unread("--features", f->features, LA_PARAM_FEATURES, params_read)) ||
        (rc = refuse_unread("--score-dim", f->score_dim, LA_PARAM_SCORE_DIM, params_read)) ||
        (rc = refuse_unread("--score-w", f->score_w, LA_PARAM_SCORE_WEIGHTS, params_read)) ||
        (rc = refuse_unread("--score-v", f->score_v, LA_PARAM_SCORE_DIM, params_read)) ||
        (rc = refuse_unread("--seed", f->seed,
                            LA_PARAM_PROJ | LA_PARAM_FEATURES | LA_PARAM_SCORE_WEIGHTS |
                                LA_PARAM_RELATIVE,
                            params_read)))
        return rc;
    if (f->window) {
        if ((rc = cli_parse_size("--window", f->window, &out->blocks.local.window))) return rc;
        if (out->blocks.local.window < 1) return cli_fail("--window", "must be at least 1");
        out->given |= LA_PARAM_WINDOW;
    }
    if (f->proj_rank && f->proj)
        return cli_fail("--proj-rank", "not with --proj (the projections' rows are the rank)");
    if (f->proj_rank) {
        if ((rc = cli_parse_size("--proj-rank", f->proj_rank, &out->blocks.linformer.proj_rank)))
            return rc;
        if (out->blocks.linformer.proj_rank < 1)
            return cli_fail("--proj-rank", "must be at least 1");
        out->given |= LA_PARAM_PROJ;
    }
    if (f->proj) {
        if ((rc = read_projections(f->proj, out))) return rc;
        out->blocks.linformer.proj_rank = out->proj_e.shape[0];
        out->given |= LA_PARAM_PROJ;
    }
    if (f->features) {
        if ((rc = cli_parse_size("--features", f->features, &out->blocks.favor.features)))
            return rc;
        if (out->blocks.favor.features < 1) return cli_fail("--features", "must be at least 1");
        out->given |= LA_PARAM_FEATURES;
    }
    if ((rc = read_score_weights(f, params_read, out))) return rc;
    if (f->seed) {
        size_t seed;
        if ((rc = cli_parse_size("--seed", f->seed, &seed))) return rc;
        out->seed = (uint64_t)seed;
    }
    return 0;
}

/* Whether v holds Linformer's E and F drawn for keys rows, at v's rank and seed. */
static bool held_fits(const variants_values *v, size_t keys)
{
    return v->held_e && v->held_keys == keys && v->held_rank == v->blocks.linformer.proj_rank &&
           v->held_seed == v->seed;
}

/* The Linformer half of variants_release_draws. */
static void release_projections(variants_values *v)
{
    free(v->held_e), free(v->held_f);
    v->held_e = v->held_f = NULL;
    v->held_rank = v->held_keys = 0;
    v->blocks.linformer.proj_e = v->proj_e.data;
    v->blocks.linformer.proj_f = v->proj_f.data;
}

/* Whether v holds FAVOR+'s W drawn for d_k columns, at v's feature count and seed. */
static bool held_w_fits(const variants_values *v, size_t dk)
{
    return v->held_w && v->held_dk == dk && v->held_features == v->blocks.favor.features &&
           v->held_w_seed == v->seed;
}

int variants_apply(variants_values *v, la_problem *p)
{
    v->blocks.linformer.proj_e = v->blocks.linformer.proj_f = NULL;
    v->blocks.favor.proj_w = held_w_fits(v, p->d_k) ? v->held_w : NULL;
    v->blocks.score.score_w = v->blocks.score.score_v = NULL;
    if (v->score_w.data) {
        const int additive = v->score_v.data != NULL;
        const size_t rows = additive ? v->blocks.score.score_dim : p->d_k;
        const size_t cols = additive ? 2 * p->d_k : p->d_k;
        char a[64];
        if (v->score_w.shape[0] != rows || v->score_w.shape[1] != cols)
            return additive ? cli_fail("--score-w",
                                       "shape %s, need (d_a, 2·d_k) = (%zu, %zu) (d_a: --score-v's "
                                       "length, d_k: Q's columns)",
                                       arrays_shape_str(&v->score_w, a, sizeof a), rows, cols)
                            : cli_fail("--score-w", "shape %s, need (d_k, d_k) = (%zu, %zu)",
                                       arrays_shape_str(&v->score_w, a, sizeof a), rows, cols);
        v->blocks.score.score_w = v->score_w.data;
        v->blocks.score.score_v = v->score_v.data; /* NULL for general */
    }
    if (v->proj_e.data) {
        if (v->proj_e.shape[1] != p->n_keys)
            return cli_fail("--proj",
                            "the projections have %zu columns, the keys %zu rows: "
                            "need (K, M) with M = %zu",
                            v->proj_e.shape[1], p->n_keys, p->n_keys);
        v->blocks.linformer.proj_e = v->proj_e.data;
        v->blocks.linformer.proj_f = v->proj_f.data;
    } else if (held_fits(v, p->n_keys)) { /* the draw variants_hold_draws keeps */
        v->blocks.linformer.proj_e = v->held_e;
        v->blocks.linformer.proj_f = v->held_f;
    }
    p->params = variants_chain(v);
    return 0;
}

/* variants_hold_draws for FAVOR+: W (features, d_k). */
static int hold_w(variants_values *v, la_kernel kernel, const la_problem *p)
{
    const size_t m = v->blocks.favor.features, dk = p->d_k;
    if (!held_w_fits(v, dk)) {
        free(v->held_w);
        v->held_w = NULL;
        v->blocks.favor.proj_w = NULL; /* the draw from the seed, not the W it replaces */
        la_problem drawn = *p;
        drawn.params = variants_chain(v);
        double *w = m <= SIZE_MAX / sizeof(double) / dk ? malloc(m * dk * sizeof *w) : NULL;
        const la_status st = w ? la_kernel_draw(kernel, &drawn, w, NULL) : LA_ENOMEM;
        if (st != LA_OK) {
            free(w);
            cli_line("FAVOR+'s W (%zu, %zu): %s", m, dk, la_strerror(st));
            return 1;
        }
        v->held_w = w, v->held_features = m, v->held_dk = dk, v->held_w_seed = v->seed;
    }
    v->blocks.favor.proj_w = v->held_w;
    return 0;
}

int variants_hold_draws(variants_values *v, la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (info && (info->params & LA_PARAM_FEATURES)) return hold_w(v, kernel, p);
    if (!info || !(info->params & LA_PARAM_PROJ) || v->proj_e.data) return 0;
    const size_t rank = v->blocks.linformer.proj_rank, keys = p->n_keys;
    if (!held_fits(v, keys)) {
        release_projections(v); /* and the block's E, F back to none */
        la_problem drawn = *p;
        drawn.params = variants_chain(v);
        double *e =
            rank <= SIZE_MAX / sizeof(double) / keys ? malloc(rank * keys * sizeof *e) : NULL;
        double *f = e ? malloc(rank * keys * sizeof *f) : NULL;
        const la_status st = f ? la_kernel_draw(kernel, &drawn, e, f) : LA_ENOMEM;
        if (st != LA_OK) {
            free(e), free(f);
            cli_line("Linformer's projections E, F (%zu, %zu): %s", rank, keys, la_strerror(st));
            return 1;
        }
        v->held_e = e, v->held_f = f;
        v->held_rank = rank, v->held_keys = keys, v->held_seed = v->seed;
    }
    v->blocks.linformer.proj_e = v->held_e;
    v->blocks.linformer.proj_f = v->held_f;
    return 0;
}

const la_params *variants_chain(variants_values *v)
{
    la_blocks *b = &v->blocks;
    b->linformer.seed = b->favor.seed = b->score.seed = b->relative.seed = v->seed;
    return la_blocks_chain(b);
}

size_t *variants_budget_field(variants_values *v, kernels_budget b)
{
    switch (b) {
    case BUDGET_WINDOW: return &v->blocks.local.window;
    case BUDGET_PROJ: return &v->blocks.linformer.proj_rank;
    case BUDGET_FEATURES: return &v->blocks.favor.features;
    case BUDGET_NONE: break;
    }
    return NULL;
}

/* K of p's la_linformer_params: the chain's block, or the default (a chain holds each
 * kind at most once: no more links are followed than there are kinds). */
static size_t proj_rank_of(const la_problem *p)
{
    const la_params *b = p->params;
    for (int n = 1; b && n < LA_PARAMS_END; b = b->next, n++)
        if (b->kind == LA_PARAMS_LINFORMER) return ((const la_linformer_params *)b)->proj_rank;
    return LA_DEFAULT_PROJ_RANK;
}

int variants_rank_fits(la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *row = la_kernel_get(kernel);
    return !row || !(row->params & LA_PARAM_PROJ) || proj_rank_of(p) <= p->n_keys;
}

void variants_release_draws(variants_values *v)
{
    free(v->held_w);
    v->held_w = NULL;
    v->held_features = v->held_dk = 0;
    v->blocks.favor.proj_w = NULL;
    release_projections(v);
}

void variants_free(variants_values *v)
{
    la_array_free(&v->proj_e);
    la_array_free(&v->proj_f);
    la_array_free(&v->score_w);
    la_array_free(&v->score_v);
    variants_release_draws(v);
}

void variants_print_help(FILE *out, int with_proj, int with_seed)
{
    char names[256];
    for (size_t i = 0; i < sizeof param_flags / sizeof param_flags[0]; i++) {
        if (!with_proj && param_flags[i].attend_only) continue;
        if (!with_seed && strncmp(param_flags[i].flag, "--seed ", 7) == 0) continue;
        unsigned read = 0;
        for (int k = 0; k < LA_KERNEL_COUNT; k++)
            read |= la_kernel_get((la_kernel)k)->params & param_flags[i].param;
        if (!read) continue;
        char text[512];
        snprintf(text, sizeof text, "%s: %s", readers(param_flags[i].param, names, sizeof names),
                 param_flags[i].help);
        fprintf(out, "  %-20s ", param_flags[i].flag);
        cli_print_wrapped(out, text, 23);
    }
}

/* variants.c — the approximating kernels' flags (variants.h). */
#include "variants.h"

#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* One flag: its name, the LA_PARAM_* bit of the rows that read it, and its help text. */
static const struct {
    const char *flag;
    unsigned param;
    const char *help;
} vp_table[] = {
    {"--window R", LA_PARAM_WINDOW,
     "keys within R positions of the query (causal: R before it) [64]"},
    {"--proj-rank K", LA_PARAM_PROJ,
     "keys and values projected along the sequence to K rows [256]"},
    {"--proj E.npy,F.npy", LA_PARAM_PROJ, "the projections, (K, M) each; else drawn from --seed"},
    {"--features M", LA_PARAM_FEATURES, "random features per head [256]"},
    {"--seed S", LA_PARAM_PROJ | LA_PARAM_FEATURES | LA_PARAM_RELATIVE,
     "the random projections', features' or position embeddings' draw [0]"},
};

unsigned vp_params_of(const la_kernel *kernels, size_t n)
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
    return count ? buf : "no kernel yet";
}

static int refuse_unread(const char *flag, const char *given, unsigned bits, unsigned read)
{
    if (!given || (bits & read)) return 0;
    char names[256];
    return cli_fail(flag, "applies to --variant %s only", readers(bits, names, sizeof names));
}

/* --proj E.npy,F.npy: both read as float64 matrices of the same shape. */
static int read_projections(const char *text, vp_values *out)
{
    const char *comma = strchr(text, ',');
    if (!comma || comma == text || !comma[1] || strchr(comma + 1, ','))
        return cli_fail("--proj", "'%s' is not E.npy,F.npy (two files)", text);
    char e_path[4096];
    snprintf(e_path, sizeof e_path, "%.*s", (int)(comma - text), text);
    int rc = cli_read_floats(e_path, LA_FLOAT64, &out->proj_e);
    if (!rc) rc = cli_read_floats(comma + 1, LA_FLOAT64, &out->proj_f);
    if (rc) return rc;
    char a[64], b[64];
    if (out->proj_e.ndim != 2 || out->proj_e.shape[0] == 0 || out->proj_e.shape[1] == 0)
        return cli_fail("--proj", "%s has shape %s, need (K, M) with K, M >= 1", e_path,
                        cli_shape_str(&out->proj_e, a, sizeof a));
    if (out->proj_f.ndim != 2 || out->proj_f.shape[0] != out->proj_e.shape[0] ||
        out->proj_f.shape[1] != out->proj_e.shape[1])
        return cli_fail("--proj", "%s has shape %s, E has %s: need the same (K, M)", comma + 1,
                        cli_shape_str(&out->proj_f, a, sizeof a),
                        cli_shape_str(&out->proj_e, b, sizeof b));
    return 0;
}

int vp_parse(const vp_flags *f, unsigned params_read, vp_values *out)
{
    memset(out, 0, sizeof *out);
    out->window = LA_DEFAULT_WINDOW;
    out->proj_rank = LA_DEFAULT_PROJ_RANK;
    out->features = LA_DEFAULT_FEATURES;
    int rc;
    if ((rc = refuse_unread("--window", f->window, LA_PARAM_WINDOW, params_read)) ||
        (rc = refuse_unread("--proj-rank", f->proj_rank, LA_PARAM_PROJ, params_read)) ||
        (rc = refuse_unread("--proj", f->proj, LA_PARAM_PROJ, params_read)) ||
        (rc = refuse_unread("--features", f->features, LA_PARAM_FEATURES, params_read)) ||
        (rc = refuse_unread("--seed", f->seed,
                            LA_PARAM_PROJ | LA_PARAM_FEATURES | LA_PARAM_RELATIVE, params_read)))
        return rc;
    if (f->window) {
        if ((rc = cli_parse_size("--window", f->window, &out->window))) return rc;
        if (out->window < 1) return cli_fail("--window", "must be at least 1");
        out->given |= LA_PARAM_WINDOW;
    }
    if (f->proj_rank && f->proj)
        return cli_fail("--proj-rank", "not with --proj (the projections' rows are the rank)");
    if (f->proj_rank) {
        if ((rc = cli_parse_size("--proj-rank", f->proj_rank, &out->proj_rank))) return rc;
        if (out->proj_rank < 1) return cli_fail("--proj-rank", "must be at least 1");
        out->given |= LA_PARAM_PROJ;
    }
    if (f->proj) {
        if ((rc = read_projections(f->proj, out))) return rc;
        out->proj_rank = out->proj_e.shape[0];
        out->given |= LA_PARAM_PROJ;
    }
    if (f->features) {
        if ((rc = cli_parse_size("--features", f->features, &out->features))) return rc;
        if (out->features < 1) return cli_fail("--features", "must be at least 1");
        out->given |= LA_PARAM_FEATURES;
    }
    if (f->seed) {
        size_t seed;
        if ((rc = cli_parse_size("--seed", f->seed, &seed))) return rc;
        out->seed = (uint64_t)seed;
    }
    return 0;
}

int vp_apply(const vp_values *v, la_problem *p)
{
    p->window = v->window;
    p->proj_rank = v->proj_rank;
    p->features = v->features;
    p->seed = v->seed;
    p->proj_e = p->proj_f = NULL;
    if (v->proj_e.data) {
        if (v->proj_e.shape[1] != p->n_keys)
            return cli_fail("--proj",
                            "the projections have %zu columns, the keys %zu rows: "
                            "need (K, M) with M = %zu",
                            v->proj_e.shape[1], p->n_keys, p->n_keys);
        p->proj_e = v->proj_e.data;
        p->proj_f = v->proj_f.data;
    }
    return 0;
}

int vp_rank_fits(la_kernel kernel, const la_problem *p)
{
    const la_kernel_info *row = la_kernel_get(kernel);
    return !row || !(row->params & LA_PARAM_PROJ) || p->proj_rank <= p->n_keys;
}

void vp_free(vp_values *v)
{
    la_array_free(&v->proj_e);
    la_array_free(&v->proj_f);
}

void vp_print_help(FILE *out, int with_proj, int with_seed)
{
    char names[256];
    for (size_t i = 0; i < sizeof vp_table / sizeof vp_table[0]; i++) {
        if (!with_proj && strncmp(vp_table[i].flag, "--proj ", 7) == 0) continue;
        if (!with_seed && strncmp(vp_table[i].flag, "--seed ", 7) == 0) continue;
        unsigned read = 0;
        for (int k = 0; k < LA_KERNEL_COUNT; k++)
            read |= la_kernel_get((la_kernel)k)->params & vp_table[i].param;
        if (!read) continue;
        char text[512];
        snprintf(text, sizeof text, "%s: %s", readers(vp_table[i].param, names, sizeof names),
                 vp_table[i].help);
        fprintf(out, "  %-20s ", vp_table[i].flag);
        cli_print_wrapped(out, text, 23);
    }
}

/* kernels.c — the registry as the commands see it (contract in kernels.h). */
#include "kernels.h"
#include "attention/series.h"

#include "cli.h"

#include <string.h>

/* ---------------------------------------------------------------- series */

size_t kernels_all_series(kernels_series *out)
{
    size_t n = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        for (int causal = 0; causal <= 1; causal++) {
            const char *name = la_kernel_series((la_kernel)k, causal);
            if (name) out[n++] = (kernels_series){(la_kernel)k, causal, name};
        }
    return n;
}

void kernels_select_all_but(const kernels_series *all, size_t n, const char *const *left_out,
                            int *selected)
{
    for (size_t i = 0; i < n; i++) {
        selected[i] = 1;
        for (const char *const *name = left_out; name && *name; name++)
            if (strcmp(all[i].name, *name) == 0) selected[i] = 0;
    }
}

const char *kernels_series_names(const kernels_series *all, size_t n, const int *selected,
                                 char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (selected && !selected[i]) continue;
        int len = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", all[i].name);
        if (len < 0 || (size_t)len >= size - used) break;
        used += (size_t)len;
    }
    return buf;
}

int kernels_parse_series_list(const char *flag, const char *text, const kernels_series *all,
                              size_t n, int *selected)
{
    char buf[1024], *items[KERNELS_MAX_SERIES];
    size_t count;
    int rc = cli_split_list(flag, text, buf, sizeof buf, items, KERNELS_MAX_SERIES, &count);
    if (rc) return rc;
    memset(selected, 0, n * sizeof *selected);
    for (size_t i = 0; i < count; i++) {
        /* either spelling: the registry's parser reads '-' as '_' */
        la_kernel kernel;
        int causal;
        size_t j = n;
        if (la_kernel_series_parse(items[i], &kernel, &causal) == LA_OK)
            for (j = 0; j < n && !(all[j].kernel == kernel && all[j].causal == causal); j++)
                ;
        if (j == n) {
            char names[1024], hint[160];
            kernels_series_names(all, n, NULL, names, sizeof names);
            return cli_fail(flag, "'%s' is not one of %s%s", items[i], names,
                            cli_did_you_mean(items[i], names, hint, sizeof hint));
        }
        if (selected[j]) return cli_fail(flag, "'%s' given twice", items[i]);
        selected[j] = 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- names */

const char *kernels_kernel_names(int (*keep)(la_kernel), const char *sep, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        if (keep && !keep((la_kernel)k)) continue;
        int len = snprintf(buf + used, size - used, "%s%s", used ? sep : "",
                           la_kernel_name((la_kernel)k));
        if (len < 0 || (size_t)len >= size - used) break;
        used += (size_t)len;
    }
    return buf;
}

int kernels_parse_kernel(const char *flag, const char *text, int (*keep)(la_kernel), la_kernel *out)
{
    la_kernel k;
    if (!text || !*text) return cli_fail(flag, "needs a value");
    if (strchr(text, ',')) return cli_fail(flag, "takes one kernel here, not the list '%s'", text);
    if (la_kernel_parse(text, &k) != LA_OK || (keep && !keep(k))) {
        char names[512], hint[160];
        kernels_kernel_names(keep, ", ", names, sizeof names);
        return cli_fail(flag, "'%s' is not one of %s%s", text, names,
                        cli_did_you_mean(text, names, hint, sizeof hint));
    }
    *out = k;
    return 0;
}

int kernels_parse_kernel_list(const char *flag, const char *text, int (*keep)(la_kernel),
                              la_kernel *out, size_t max, size_t *count)
{
    char buf[1024], *items[64];
    int rc = cli_split_list(flag, text, buf, sizeof buf, items, max < 64 ? max : 64, count);
    for (size_t i = 0; !rc && i < *count; i++) {
        rc = kernels_parse_kernel(flag, items[i], keep, &out[i]);
        for (size_t j = 0; !rc && j < i; j++)
            if (out[j] == out[i])
                rc = cli_fail(flag, "'%s' given twice (%s)", items[i], la_kernel_name(out[i]));
    }
    return rc;
}

int kernels_layer_kernel(la_kernel k)
{
    const la_kernel_info *info = la_kernel_get(k);
    return info && info->causal == LA_CAUSAL_ALLOWED;
}

int kernels_exact_softmax(la_kernel k)
{
    const la_kernel_info *info = la_kernel_get(k);
    return info && strcmp(info->family, "softmax") == 0 && !(info->caps & LA_CAP_APPROXIMATES);
}

const char *const kernels_budget_names[] = {"none", "window", "proj_rank", "features"};

kernels_budget kernels_budget_of(la_kernel k)
{
    const la_kernel_info *info = la_kernel_get(k);
    const unsigned params = info ? info->params : 0;
    if (params & LA_PARAM_WINDOW) return BUDGET_WINDOW;
    if (params & LA_PARAM_PROJ) return BUDGET_PROJ;
    if (params & LA_PARAM_FEATURES) return BUDGET_FEATURES;
    return BUDGET_NONE;
}

la_kernel kernels_family(la_kernel k)
{
    const la_kernel_info *info = la_kernel_get(k);
    if (!info) return k;
    la_kernel family = k;
    size_t best = 0;
    for (int j = 0; j < LA_KERNEL_COUNT; j++) {
        const char *head = la_kernel_get((la_kernel)j)->name;
        size_t len = strlen(head);
        if (j != (int)k && len > best && strncmp(info->name, head, len) == 0 &&
            info->name[len] == '_') {
            family = (la_kernel)j;
            best = len;
        }
    }
    return family;
}

/* The word of a family's own kernel among its forms. Not in the registry (a
 * candidate field: the form's name); a family not listed calls it "default". */
static const struct {
    const char *family, *form;
} own_forms[] = {
    {"softmax", "fused"},  /* online softmax over key blocks */
    {"linear", "chunked"}, /* causal: the chunked form */
};

const char *kernels_form(la_kernel k)
{
    const la_kernel_info *info = la_kernel_get(k);
    if (!info) return "unknown";
    la_kernel family = kernels_family(k);
    if (family != k) return info->name + strlen(la_kernel_get(family)->name) + 1;
    for (size_t i = 0; i < sizeof own_forms / sizeof own_forms[0]; i++)
        if (strcmp(own_forms[i].family, info->name) == 0) return own_forms[i].form;
    return "default";
}

int kernels_allows(la_kernel k, int causal)
{
    const la_kernel_info *info = la_kernel_get(k);
    if (!info) return 0;
    return causal ? info->causal != LA_CAUSAL_REFUSED : info->causal != LA_CAUSAL_REQUIRED;
}

size_t kernels_family_kernels(la_kernel family, int causal, la_kernel *out)
{
    size_t n = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        if (kernels_family((la_kernel)k) == family && kernels_allows((la_kernel)k, causal))
            out[n++] = (la_kernel)k;
    return n;
}

int kernels_has_causal_forms(la_kernel family)
{
    for (int k = 0; k < LA_KERNEL_COUNT; k++)
        if (kernels_family((la_kernel)k) == family &&
            la_kernel_get((la_kernel)k)->causal == LA_CAUSAL_REQUIRED)
            return 1;
    return 0;
}

/* ---------------------------------------------------------------- time */

double kernels_time_exponent(la_kernel k, int *known)
{
    const la_kernel_info *row = la_kernel_get(k);
    if (known) *known = row != NULL;
    return row ? row->time_exponent : 2;
}

/* ---------------------------------------------------------------- help */

void kernels_print_kernels(FILE *out, int (*keep)(la_kernel), const char *note)
{
    int width = 0;
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        int len = (int)strlen(la_kernel_name((la_kernel)k));
        if ((!keep || keep((la_kernel)k)) && len > width) width = len;
    }
    fprintf(out, "kernels (--variant, from the registry%s; '-' for '_' accepted):\n",
            note ? note : "");
    for (int k = 0; k < LA_KERNEL_COUNT; k++) {
        const la_kernel_info *info = la_kernel_get((la_kernel)k);
        if (keep && !keep((la_kernel)k)) continue;
        char summary[512];
        snprintf(summary, sizeof summary, "%s%s", info->summary,
                 info->causal == LA_CAUSAL_REQUIRED  ? " (causal only)"
                 : info->causal == LA_CAUSAL_REFUSED ? " (non-causal only)"
                                                     : "");
        int name_width = fprintf(out, "  %-*s  ", width, info->name);
        cli_print_wrapped(out, summary, name_width > 0 ? (size_t)name_width : 0);
    }
}

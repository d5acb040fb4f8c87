/* layer_flags.c — the layer flags of `block` and `model` (layer_flags.h). */
#include "layer_flags.h"

#include "cli.h"
#include "kernels.h"

static const char *const norm_names[] = {"post", "pre", NULL};
static const char *const activation_names[] = {"relu", "gelu", NULL};
static const char *const precision_names[] = {"float32", "float64", NULL};

int layer_flags_reads_feature_map(la_kernel k)
{
    return kernels_layer_kernel(k) && (la_kernel_get(k)->params & LA_PARAM_FEATURE_MAP);
}

int layer_flags_parse(const layer_flags_text *t, layer_flags_values *out)
{
    int rc, norm_i = 0, activation_i = 0, precision_i = 0;
    la_kernel kernel = LA_KERNEL_SOFTMAX, cross_kernel = LA_KERNEL_COUNT; /* as --variant */
    if ((t->norm && (rc = cli_parse_choice("--norm", t->norm, norm_names, &norm_i))) ||
        (t->variant &&
         (rc = kernels_parse_kernel("--variant", t->variant, kernels_layer_kernel, &kernel))) ||
        (t->cross_variant && (rc = kernels_parse_kernel("--cross-variant", t->cross_variant,
                                                        kernels_layer_kernel, &cross_kernel))) ||
        (t->activation &&
         (rc = cli_parse_choice("--activation", t->activation, activation_names, &activation_i))) ||
        (t->precision &&
         (rc = cli_parse_choice("--precision", t->precision, precision_names, &precision_i))))
        return rc;
    la_feature_map fm = LA_FEATURE_ELU1;
    if (t->feature_map && !layer_flags_reads_feature_map(kernel) &&
        !(cross_kernel != LA_KERNEL_COUNT && layer_flags_reads_feature_map(cross_kernel))) {
        char names[512];
        return cli_fail(
            "--feature-map", "applies to a --variant or --cross-variant %s only",
            kernels_kernel_names(layer_flags_reads_feature_map, " or ", names, sizeof names));
    }
    if (t->feature_map && la_feature_map_parse(t->feature_map, &fm) != LA_OK) {
        char hint[160];
        return cli_fail("--feature-map", "'%s' is not one of elu, relu%s", t->feature_map,
                        cli_did_you_mean(t->feature_map, "elu, relu", hint, sizeof hint));
    }
    if ((rc = cli_parse_threads("--threads", t->threads))) return rc;
    out->norm = norm_i ? LA_NORM_PRE : LA_NORM_POST;
    out->kernel = kernel;
    out->cross_kernel = cross_kernel;
    out->activation = activation_i ? LA_ACTIVATION_GELU : LA_ACTIVATION_RELU;
    out->dtype = precision_i ? LA_FLOAT64 : LA_FLOAT32;
    out->feature_map = fm;
    return 0;
}

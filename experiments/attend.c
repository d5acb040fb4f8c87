/* attend.c — `linattn attend`: one attention kernel on .npy inputs, the output to .npy.
 *
 * Inputs Q (…, N, d_k), K (…, M, d_k), V (…, M, d_v) with the same leading dims, none,
 * (H,) or (B, H); the output is (…, N, d_v) in the chosen precision. Every malformed
 * input is refused with one line and exit status 2 before any output is written, and
 * the output appears atomically or not at all. With --grad-out dO and --grad-q/-k/-v,
 * the kernel's backward of L = Σ out ∘ dO follows, and the output and the three
 * gradients appear together or not at all (common/outputs.h). */
#include "attend.h"

#include "commands.h"
#include "common/arrays.h"
#include "common/cli.h"
#include "common/kernels.h"
#include "common/layout.h"
#include "common/machine.h"
#include "common/outputs.h"
#include "common/position.h"
#include "common/sweep.h" /* sweep_check_memory: the weights matrix within the machine's memory */
#include "common/variants.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const precision_names[] = {"float32", "float64", NULL};
/* --causal-align, by la_causal_align value */
static const char *const align_names[] = {"top-left", "bottom-right", NULL};

/* The deprecated --kernel FORM: the kernel of --variant's family with that form, for
 * the --causal given. */
static int kernel_of_form(const char *family_text, la_kernel named, const char *form, int causal,
                          la_kernel *kernel)
{
    la_kernel forms[LA_KERNEL_COUNT];
    const size_t n_forms = kernels_family_kernels(kernels_family(named), causal, forms);
    if (n_forms < 2)
        return kernels_family_kernels(kernels_family(named), 1, forms) > 1 && !causal
                   ? cli_fail("--kernel", "applies to --variant %s with --causal only", family_text)
                   : cli_fail("--kernel", "--variant %s has a single kernel", family_text);
    char names[512];
    size_t used = 0;
    names[0] = 0;
    for (size_t i = 0; i < n_forms; i++) {
        if (strcmp(form, kernels_form(forms[i])) == 0) {
            *kernel = forms[i];
            return 0;
        }
        int len = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                           kernels_form(forms[i]));
        if (len > 0 && (size_t)len < sizeof names - used) used += (size_t)len;
    }
    return cli_fail("--kernel", "'%s' is not one of %s (for --variant %s%s)", form, names,
                    family_text, causal ? " --causal" : "");
}

/* --score S: the score function, and the kernel that computes it. dot and scaled
 * are softmax at scale 1 and 1/√d_k (either softmax kernel; softmax unless --variant says);
 * general, additive and cosine are kernels of their own. */
static const char *const score_names[] = {"dot", "scaled", "general", "additive", "cosine", NULL};
enum { SCORE_NONE = -1, SCORE_DOT, SCORE_SCALED, SCORE_GENERAL, SCORE_ADDITIVE, SCORE_COSINE };

static int choose_score(const attend_args *a, int *score, la_kernel *kernel)
{
    static const la_kernel own[] = {[SCORE_GENERAL] = LA_KERNEL_GENERAL,
                                    [SCORE_ADDITIVE] = LA_KERNEL_ADDITIVE,
                                    [SCORE_COSINE] = LA_KERNEL_COSINE};
    int rc = cli_parse_choice("--score", a->score, score_names, score);
    if (rc) return rc;
    if (*score >= SCORE_GENERAL) {
        if (a->variant && *kernel != own[*score])
            return cli_fail("--score", "%s is the kernel %s: not with --variant %s", a->score,
                            la_kernel_name(own[*score]), a->variant);
        *kernel = own[*score];
        return 0;
    }
    if (a->variant && !kernels_exact_softmax(*kernel))
        return cli_fail("--score", "%s applies to --variant softmax or softmax_materialized only",
                        a->score);
    if (!a->variant) *kernel = LA_KERNEL_SOFTMAX;
    if (a->scale)
        return cli_fail("--scale", "not with --score %s, which fixes the scale (%s)", a->score,
                        *score == SCORE_DOT ? "1" : "1/sqrt(d_k)");
    return 0;
}

/* The kernel from --variant (and the deprecated --kernel) or --score, and the problem's
 * knobs checked against what it reads (its LA_PARAM_* bits). */
static int choose_kernel(const attend_args *a, la_kernel *kernel, int *score)
{
    char names[512];
    int rc = 0;
    *score = SCORE_NONE;
    if (a->variant && (rc = kernels_parse_kernel("--variant", a->variant, NULL, kernel))) return rc;
    if (a->kernel && !a->variant) return cli_fail("--kernel", "needs --variant FAMILY");
    if (a->kernel) {
        if ((rc = kernel_of_form(a->variant, *kernel, a->kernel, a->causal, kernel))) return rc;
        char use[128];
        snprintf(use, sizeof use, "--variant %s", la_kernel_name(*kernel));
        cli_deprecated("--kernel", use);
    }
    if (a->score && (rc = choose_score(a, score, kernel))) return rc;
    const char *name = la_kernel_name(*kernel);
    if (!kernels_allows(*kernel, a->causal))
        return cli_fail("--variant", "%s runs %s only", name,
                        a->causal ? "without --causal" : "with --causal");

    const unsigned params = la_kernel_get(*kernel)->params;
    if (a->chunk && !(a->causal && (params & LA_PARAM_CHUNK)))
        return cli_fail("--chunk", "applies to --variant %s with --causal only",
                        attend_kernel_list(attend_reads_chunk, "or", names, sizeof names));
    if (a->scale && !(params & LA_PARAM_SCALE))
        return cli_fail("--scale", "applies to --variant %s only",
                        attend_kernel_list(attend_reads_scale, "or", names, sizeof names));
    if (a->eps && !(params & LA_PARAM_EPS))
        return cli_fail("--eps", "applies to --variant %s only",
                        attend_kernel_list(attend_reads_eps, "or", names, sizeof names));
    if (a->feature_map && !(params & LA_PARAM_FEATURE_MAP))
        return cli_fail("--feature-map", "applies to --variant %s only",
                        attend_kernel_list(attend_reads_feature_map, "or", names, sizeof names));
    return 0;
}

int cmd_attend(int argc, char **argv)
{
    attend_args a;
    memset(&a, 0, sizeof a);
    const cli_flag flags[] = {
        {"variant", &a.variant, NULL},
        {"q", &a.q, NULL},
        {"k", &a.k, NULL},
        {"v", &a.v, NULL},
        {"out", &a.out, NULL},
        {"causal", NULL, &a.causal},
        {"causal-align", &a.causal_align, NULL},
        {"mask", &a.mask, NULL},
        {"key-padding-mask", &a.key_padding_mask, NULL},
        {"key-lengths", &a.key_lengths, NULL},
        {"precision", &a.precision, NULL},
        {"layout", &a.layout, NULL},
        {"threads", &a.threads, NULL},
        {"scale", &a.scale, NULL},
        {"feature-map", &a.feature_map, NULL},
        {"eps", &a.eps, NULL},
        {"kernel", &a.kernel, NULL},
        {"chunk", &a.chunk, NULL},
        {"save-weights", &a.save_weights, NULL},
        {"score", &a.score, NULL},
        {"grad-out", &a.grad_out, NULL},
        {"grad-q", &a.grad_q, NULL},
        {"grad-k", &a.grad_k, NULL},
        {"grad-v", &a.grad_v, NULL},
        VARIANTS_PARAM_FLAGS(a.variant_params),
        VARIANTS_SEED_FLAG(a.variant_params),
        VARIANTS_PROJ_FLAG(a.variant_params),
        VARIANTS_SCORE_FLAGS(a.variant_params),
        POSITION_FLAGS(a.positions),
        {NULL, NULL, NULL},
    };
    la_array q = {0}, k = {0}, v = {0}, y = {0}, w = {0}, d_out = {0}, grads[3] = {{0}, {0}, {0}};
    variants_values variant_values = {0};
    position_values positions = {0};
    int gradients = 0;
    int64_t *key_lengths = NULL;
    uint8_t *mask = NULL, *key_mask = NULL;
    int mask_per_head = 0;
    int rc = cli_parse_flags(argc, argv, flags);
    if (rc) return rc;

    /* step 1: the flags, all checked before any file is read */
    const char *required[][2] = {{"--variant", a.variant ? a.variant : a.score},
                                 {"--q", a.q},
                                 {"--k", a.k},
                                 {"--v", a.v},
                                 {"--out", a.out}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i][1])
            return cli_fail(required[i][0], "required flag is missing (see linattn help attend)");
    int precision = 0;
    la_kernel kernel = LA_KERNEL_SOFTMAX;
    double scale = 0, eps = LA_DEFAULT_EPS;
    size_t chunk = LA_DEFAULT_CHUNK;
    la_feature_map fm = LA_FEATURE_ELU1;
    int score = SCORE_NONE;
    if ((rc = choose_kernel(&a, &kernel, &score))) return rc;
    if ((rc = attend_check_masks_allowed(&a, kernel))) return rc;
    if (a.save_weights && strcmp(la_kernel_get(kernel)->family, "low-rank") == 0)
        return cli_fail("--save-weights", "linformer has no attention matrix");
    if (a.save_weights && outputs_paths_alias(a.save_weights, a.out))
        return cli_fail("--save-weights", "'%s' is the file of --out", a.save_weights);
    if ((rc = attend_check_gradient_flags(&a, &gradients))) return rc;
    const char *const grad_paths[3] = {a.grad_q, a.grad_k, a.grad_v};
    for (int i = 0; gradients && a.save_weights && i < 3; i++)
        if (outputs_paths_alias(a.save_weights, grad_paths[i]))
            return cli_fail("--save-weights", "'%s' is the file of a --grad-* output",
                            a.save_weights);
    if (a.precision &&
        (rc = cli_parse_choice("--precision", a.precision, precision_names, &precision)))
        return rc;
    if ((rc = cli_parse_threads("--threads", a.threads))) return rc;
    layout_kind layout;
    if ((rc = layout_parse("--layout", a.layout, &layout))) return rc;
    if (layout == LAYOUT_BNHD && gradients)
        return cli_fail("--layout", "bnhd is not taken with --grad-*: give (B, H, N, d) arrays");
    int align = LA_CAUSAL_TOP_LEFT;
    if (a.causal_align &&
        (rc = cli_parse_choice("--causal-align", a.causal_align, align_names, &align)))
        return rc;
    if (a.causal_align && !a.causal)
        return cli_fail("--causal-align", "applies with --causal only");
    if (a.scale && (rc = cli_parse_double("--scale", a.scale, &scale))) return rc;
    if (a.eps && (rc = cli_parse_double("--eps", a.eps, &eps))) return rc;
    if (eps < 0) return cli_fail("--eps", "must be >= 0");
    if (a.chunk && (rc = cli_parse_size("--chunk", a.chunk, &chunk))) return rc;
    if (chunk < 1) return cli_fail("--chunk", "must be at least 1");
    if (a.feature_map && la_feature_map_parse(a.feature_map, &fm) != LA_OK) {
        char hint[160];
        return cli_fail("--feature-map", "'%s' is not one of elu, relu%s", a.feature_map,
                        cli_did_you_mean(a.feature_map, "elu, relu", hint, sizeof hint));
    }
    la_dtype dtype = precision == 0 ? LA_FLOAT32 : LA_FLOAT64;
    if ((rc = attend_choose_positions(&a, &kernel, gradients, &positions))) goto done;
    if ((a.mask || a.key_padding_mask) && ((la_kernel_get(kernel)->caps & LA_CAP_POSITIONS) ||
                                           attend_rotary_linear(kernel, &positions))) {
        rc = cli_fail(a.mask ? "--mask" : "--key-padding-mask", "%s takes no masks",
                      (la_kernel_get(kernel)->caps & LA_CAP_POSITIONS)
                          ? "--positions relative"
                          : "--positions rotary with linear attention");
        goto done;
    }
    /* --seed also draws a learned table that was not given */
    const unsigned reads =
        la_kernel_get(kernel)->params |
        (positions.kind == POSITION_LEARNED && !positions.table.data ? LA_PARAM_RELATIVE : 0);
    if ((rc = variants_parse(&a.variant_params, reads, &variant_values))) goto done;
    if (a.save_weights && (!(la_kernel_get(kernel)->caps & LA_CAP_WEIGHTS) ||
                           attend_rotary_linear(kernel, &positions))) {
        /* la_attention_weights_* has no matrix for it */
        rc = cli_fail("--save-weights", "%s%s has no attention matrix in the library",
                      la_kernel_name(kernel),
                      attend_rotary_linear(kernel, &positions) ? " with rotary positions" : "");
        goto done;
    }

    /* step 2: the inputs, converted to the precision, and their shapes */
    if ((rc = arrays_read_floats(a.q, dtype, &q)) || (rc = arrays_read_floats(a.k, dtype, &k)) ||
        (rc = arrays_read_floats(a.v, dtype, &v)) || (rc = layout_swap_heads(layout, a.q, &q)) ||
        (rc = layout_swap_heads(layout, a.k, &k)) || (rc = layout_swap_heads(layout, a.v, &v)) ||
        (rc = attend_check_shapes(&a, &q, &k, &v)))
        goto done;
    int nd = q.ndim;
    size_t batch = nd == 4 ? q.shape[0] : 1, heads = nd >= 3 ? q.shape[nd - 3] : 1;
    size_t n = q.shape[nd - 2], d_k = q.shape[nd - 1], m = k.shape[nd - 2], d_v = v.shape[nd - 1];
    if (a.key_lengths && (rc = attend_read_key_lengths(a.key_lengths, batch, m, &key_lengths)))
        goto done;
    if ((rc = attend_read_masks(&a, batch, heads, n, m, &mask, &mask_per_head, &key_mask)))
        goto done;
    /* positions: absolute ones added to Q, K and V (the input of a layer whose projections
     * are the identity), rotary ones rotating Q and K (for linear attention: inside the
     * kernel, below); the seed is --seed's */
    if ((rc = position_add_absolute(&positions, "Q", variant_values.seed, &q)) ||
        (rc = position_add_absolute(&positions, "K", variant_values.seed, &k)) ||
        (rc = position_add_absolute(&positions, "V", variant_values.seed, &v)))
        goto done;
    if (positions.kind == POSITION_ROTARY && !attend_rotary_linear(kernel, &positions) &&
        ((rc = position_rotate(a.q, &q)) || (rc = position_rotate(a.k, &k))))
        goto done;
    if (attend_rotary_linear(kernel, &positions) && d_k % 2 != 0) {
        rc = cli_fail(a.q, "rotary positions rotate channel pairs: d = %zu must be even", d_k);
        goto done;
    }

    /* step 3: the problem */
    la_problem p;
    la_problem_init(&p, batch, heads, n, m, d_k, d_v);
    p.causal = a.causal;
    p.causal_align = (la_causal_align)align;
    p.key_lengths = key_lengths;
    p.mask = mask;
    p.mask_per_head = mask_per_head;
    p.key_mask = key_mask;
    if (a.scale) p.scale = scale;
    if (score == SCORE_DOT) p.scale = 1; /* scaled: the default, 1/sqrt(d_k) */
    p.feature_map = fm;
    p.eps = eps;
    p.chunk = chunk;
    if ((la_kernel_get(kernel)->caps & LA_CAP_POSITIONS) &&
        (rc = attend_apply_relative(&positions, &p, &variant_values.blocks.relative)))
        goto done;
    if ((rc = variants_apply(&variant_values, &p))) goto done; /* p->params: its blocks */
    if (!variants_rank_fits(kernel, &p)) {
        rc = variant_values.proj_e.data
                 ? cli_fail("--proj", "K = %zu rows, must be at most M = %zu (the keys' rows)",
                            variant_values.blocks.linformer.proj_rank, m)
                 : cli_fail("--proj-rank", "K = %zu must be at most M = %zu (the keys' rows)",
                            variant_values.blocks.linformer.proj_rank, m);
        goto done;
    }
    la_status st = la_problem_check(&p);
    if (st != LA_OK) {
        rc = cli_fail("attend", "%s", la_strerror(st));
        goto done;
    }

    /* step 4: the output (…, N, d_v), same leading dims as Q, and the kernel; with
     * --save-weights the matrix (…, N, M), checked against the memory before anything */
    if (a.save_weights) {
        const double elems = (double)batch * (double)heads * (double)n * (double)m;
        const double bytes = elems * (dtype == LA_FLOAT32 ? 4.0 : 8.0);
        if ((rc = sweep_check_memory("--save-weights", bytes, machine_physical_memory(),
                                     "memory here")))
            goto done;
        w.dtype = q.dtype;
        w.ndim = nd;
        memcpy(w.shape, q.shape, sizeof w.shape);
        w.shape[nd - 1] = m;
        w.count = (size_t)elems; /* within the memory, so within size_t */
        w.data = malloc(w.count * la_npy_dtype_size(w.dtype));
        if (!w.data) {
            rc = cli_fail("--save-weights", "%s", la_strerror(LA_ENOMEM));
            goto done;
        }
    }
    y.dtype = q.dtype;
    y.ndim = nd;
    memcpy(y.shape, q.shape, sizeof y.shape);
    y.shape[nd - 1] = d_v;
    y.count = batch * heads * n * d_v; /* fits: la_problem_check checked it */
    /* dO checked before the kernel's backward is looked up: bad input is bad input */
    if (gradients && ((rc = attend_read_grad_out(a.grad_out, dtype, &y, &d_out)) ||
                      (rc = attend_check_has_backward(kernel))))
        goto done;
    y.data = malloc(y.count * la_npy_dtype_size(y.dtype));
    if (!y.data) {
        rc = cli_fail("attend", "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    if (attend_rotary_linear(kernel, &positions))
        st = dtype == LA_FLOAT32
                 ? la_linear_attention_rotary(&p, LA_FLOAT32, 0, 0, q.data, k.data, v.data, y.data)
                 : la_linear_attention_rotary(&p, LA_FLOAT64, 0, 0, q.data, k.data, v.data, y.data);
    else if (dtype == LA_FLOAT32)
        st = la_attention(kernel, &p, LA_FLOAT32, q.data, k.data, v.data, y.data);
    else
        st = la_attention(kernel, &p, LA_FLOAT64, q.data, k.data, v.data, y.data);
    const char *failed = "attend";
    if (st == LA_OK && a.save_weights) {
        failed = "--save-weights";
        if (dtype == LA_FLOAT32)
            st = la_attention_weights(kernel, &p, LA_FLOAT32, q.data, k.data, w.data);
        else
            st = la_attention_weights(kernel, &p, LA_FLOAT64, q.data, k.data, w.data);
    }
    if (st == LA_ERANGE && dtype == LA_FLOAT32) {
        rc = cli_fail(failed, "values overflow float32: use --precision float64");
        goto done;
    }
    if (st != LA_OK) {
        rc = cli_fail(failed, "%s", la_strerror(st));
        goto done;
    }

    /* step 5: written atomically, the weights first (every input was checked above);
     * with gradients, the backward first and the four files together */
    if (a.save_weights && (rc = arrays_write_npy(a.save_weights, &w))) goto done;
    if (gradients)
        rc = attend_backward_and_write(&a, kernel, &p, dtype, &q, &k, &v, &y, &d_out, grads);
    else if (!(rc = layout_swap_heads(layout, a.out, &y)))
        rc = arrays_write_npy(a.out, &y);
    if (!rc)
        layout_report("attend", layout, batch, heads, n, m, d_k, d_v, precision_names[precision]);
done:
    variants_free(&variant_values);
    position_free(&positions);
    la_array_free(&q);
    la_array_free(&k);
    la_array_free(&v);
    la_array_free(&y);
    la_array_free(&w);
    la_array_free(&d_out);
    for (int i = 0; i < 3; i++)
        la_array_free(&grads[i]);
    free(key_lengths);
    free(mask);
    free(key_mask);
    return rc;
}

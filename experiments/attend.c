/* attend.c — `linattn attend`: one attention kernel on .npy inputs, the output to .npy.
 *
 * Inputs Q (…, N, d_k), K (…, M, d_k), V (…, M, d_v) with the same leading dims, none,
 * (H,) or (B, H); the output is (…, N, d_v) in the chosen precision. Every malformed
 * input is refused with one line and exit status 2 before any output is written, and
 * the output appears atomically or not at all. With --grad-out dO and --grad-q/-k/-v,
 * the kernel's backward of L = Σ out ∘ dO follows, and the output and the three
 * gradients appear together or not at all (common/outputs.h). */
#include "commands.h"
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

static const char help_intro[] =
    "Runs one attention kernel on arrays from .npy files and writes the output.\n"
    "Q is (N, d_k), (H, N, d_k) or (B, H, N, d_k); K is (…, M, d_k) and V (…, M, d_v)\n"
    "with the same leading dims as Q. Inputs may be float16, bfloat16 (descr '<V2' or\n"
    "'|V2': ml_dtypes' bfloat16 as np.save writes it), float32 or float64; they are\n"
    "converted to --precision (half precision exactly; computed in float32 or float64).\n"
    "The output Y is (…, N, d_v) in that precision, written atomically (a temporary\n"
    "file, then rename): on any error no file appears. On success one line on stderr\n"
    "says how the inputs were read: B, H, N, M, d_k, d_v, precision and layout.\n"
    "\n"
    "required:\n";
static const char help_options[] =
    "  --q Q.npy, --k K.npy, --v V.npy   the inputs\n"
    "  --out Y.npy          the output\n"
    "\n"
    "options (default in brackets):\n"
    "  --causal             query i sees keys j <= i (top-left aligned when M != N) [off]\n"
    "  --causal-align A     with --causal and M != N, where the diagonal sits:\n"
    "                       top-left (query i sees j <= i: PyTorch's is_causal, the\n"
    "                       default, so results match PyTorch's) or bottom-right (j <=\n"
    "                       i + M - N: the last query sees every key, as decoding N new\n"
    "                       tokens over M cached keys needs; FlashAttention >= 2.1's);\n"
    "                       bottom-right with N > M: queries i < N - M see no key and\n"
    "                       get zero rows [top-left]\n"
    "  --key-lengths L.npy  int32/int64 of shape (B,), or (1,) for (N, d) and (H, N, d)\n"
    "                       inputs: keys j >= L[b] are hidden; each in [0, M] [none]\n"
    "                       (a query that sees no key gets a zero row)\n"
    "  --mask MASK.npy      an attention mask as PyTorch's attn_mask: (N, M), the same for\n"
    "                       every batch entry and head, or (B*H, N, M) (H, N, M for (H, N,\n"
    "                       d) inputs); bool (True = hidden) or float32/float64 additive,\n"
    "                       each value 0 or -inf (-inf = hidden) [none]\n"
    "  --key-padding-mask KPM.npy\n"
    "                       keys to ignore, as PyTorch's key_padding_mask: (B, M), (1, M)\n"
    "                       for (N, d) and (H, N, d) inputs; bool (True = ignore) or 0/-inf\n"
    "                       as --mask [none]. Masks combine with --causal and\n"
    "                       --key-lengths; a query they leave no key gets a zero row.\n"
    "                       softmax (both kernels), hard, local, general and cosine take\n"
    "                       both; linear and linear_recurrent take --key-padding-mask\n"
    "                       only (one state S = sum of phi(k_j) v_j^T serves every query,\n"
    "                       so a per-query mask cannot be honoured); linformer, favor,\n"
    "                       additive, relative and rotary linear neither\n"
    "  --precision P        float32 or float64 [float32]\n"
    "  --layout L           bhnd: Q, K, V and Y are (B, H, N, d) (PyTorch's\n"
    "                       scaled_dot_product_attention); bnhd: they are (B, N, H, d)\n"
    "                       (FlashAttention's), read as such and transposed, the output\n"
    "                       written (B, N, H, d_v) too; 3-D arrays are (H, N, d) or\n"
    "                       (N, H, d). --mask, --save-weights stay (…, N, M); not with\n"
    "                       --grad-* [bhnd]\n"
    "  --save-weights W.npy also write the attention matrix A (…, N, M) in --precision,\n"
    "                       Y = A·V: softmax (either kernel) its row softmax P, hard\n"
    "                       one-hot rows, linear φ(q_i)·φ(k_j) / (φ(q_i)·z_i + eps);\n"
    "                       hidden entries 0, a query that sees no key a zero row;\n"
    "                       favor, favor_recurrent, general, additive, cosine:\n"
    "                       refused.\n"
    "                       Refused (one line) when its N·M·B·H elements pass the\n"
    "                       machine's memory, and for linformer (it has no matrix) [none]\n"
    "  --threads T          OpenMP threads [LA_NUM_THREADS, else all cores];\n"
    "                       " CLI_THREADS_HELP "\n";
static const char help_scores[] =
    "  --score S            the score function s_ij of softmax attention:\n"
    "                         dot       q·k: softmax at --scale 1\n"
    "                         scaled    q·k / sqrt(d_k): softmax at the default scale\n"
    "                         general   q·W·k · scale, W (d_k, d_k): --variant general\n"
    "                         additive  vᵀtanh(W_q q + W_k k), W = [W_q W_k] (d_a, 2·d_k),\n"
    "                                   v (d_a,); no scale: --variant additive\n"
    "                         cosine    q·k / (|q| |k|) · scale: --variant cosine; scale is\n"
    "                                   the inverse temperature, and the default 1/sqrt(d_k)\n"
    "                                   leaves the weights nearly uniform: pass --scale\n"
    "                       dot and scaled run --variant softmax (or softmax_materialized\n"
    "                       when given) and refuse --scale; the others are kernels of\n"
    "                       their own (--variant, when given, must name it). Weights:\n"
    "                       --score-w (and --score-v), .npy read as float64, shapes\n"
    "                       checked; else drawn from --seed as la_score_weights draws them\n"
    "                       (W entries N(0, 1/d_k), additive N(0, 1/(2·d_k)), v N(0, 1/d_a))\n"
    "                       [none: --variant's own]\n";
static const char help_gradients[] =
    "\n"
    "gradients (all four flags together, or none):\n"
    "  --grad-out DO.npy    the upstream gradient dO = dL/dY, shaped as the output Y\n"
    "                       (…, N, d_v); float32 or float64, converted to --precision\n"
    "  --grad-q DQ.npy, --grad-k DK.npy, --grad-v DV.npy\n"
    "                       the gradients of L = sum(Y * dO) with respect to Q, K and V,\n"
    "                       shaped as Q, K, V, in --precision: the forward runs, then the\n"
    "                       kernel's backward pass (la_attention_backward_f32/_f64) with\n"
    "                       the same masks, scale, feature map, eps and chunk. Y and the\n"
    "                       three gradients appear together or not at all. hard: dQ = dK =\n"
    "                       0 (the argmax is piecewise constant), dV sums dO over the\n"
    "                       queries that chose each key. A kernel whose backward the\n"
    "                       library does not have is refused (exit 2).\n";
static const char help_end[] =
    "\n"
    "exit status: 0 done, 2 bad flags or inputs (one line on stderr: linattn: WHAT: why)\n"
    "\n"
    "examples:\n"
    "  linattn attend --variant linear --causal --q q.npy --k k.npy --v v.npy \\\n"
    "      --out y.npy --precision float64\n"
    "  linattn attend --variant softmax --q q.npy --k k.npy --v v.npy --out y.npy \\\n"
    "      --save-weights attn.npy\n"
    "  linattn attend --score additive --score-w w.npy --score-v v_a.npy --q q.npy \\\n"
    "      --k k.npy --v v.npy --out y.npy\n";

/* ---------------------------------------------------------------- kernels */

/* --variant names one kernel of the registry (common/kernels.h); which flags apply
 * follows the kernel's params. The deprecated --kernel FORM (one release more) picks a
 * kernel of --variant's family by its form: --variant softmax --kernel materialized is
 * softmax_materialized. */

static int reads_scale(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_SCALE) != 0;
}
static int reads_feature_map(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_FEATURE_MAP) != 0;
}
static int reads_eps(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_EPS) != 0;
}
/* --chunk: the kernels that read it, run causal */
static int reads_chunk(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_CHUNK) && kernels_allows(k, 1);
}

/* "softmax, softmax_materialized and hard" (or, with conjunction "or", "… or hard"):
 * the kernels keep accepts. */
static const char *kernel_list(int (*keep)(la_kernel), const char *conjunction, char *buf,
                               size_t size)
{
    char names[512];
    kernels_kernel_names(keep, ", ", names, sizeof names);
    char *last = strrchr(names, ',');
    if (last)
        snprintf(buf, size, "%.*s %s %s", (int)(last - names), names, conjunction, last + 2);
    else
        snprintf(buf, size, "%s", names);
    return buf;
}

void cmd_attend_help(FILE *out)
{
    char names[512], text[1024];
    fputs("usage: linattn attend --variant K --q Q.npy --k K.npy --v V.npy --out Y.npy\n"
          "                      [options]\n"
          "       linattn attend --score S --q Q.npy --k K.npy --v V.npy --out Y.npy [options]\n\n",
          out);
    fputs(help_intro, out);
    fputs("  --variant K          the kernel, one of those below (or --score)\n", out);
    fputs(help_scores, out);
    fputs(help_options, out);
    snprintf(text, sizeof text, "%s only: logits = q·k · S [1/sqrt(d_k)]",
             kernel_list(reads_scale, "and", names, sizeof names));
    fputs("  --scale S            ", out);
    cli_print_wrapped(out, text, 23);
    snprintf(text, sizeof text, "%s only: elu (φ = elu + 1) or relu [elu]",
             kernel_list(reads_feature_map, "and", names, sizeof names));
    fputs("  --feature-map F      ", out);
    cli_print_wrapped(out, text, 23);
    snprintf(text, sizeof text, "%s only: E >= 0 in the denominator [1e-6]",
             kernel_list(reads_eps, "and", names, sizeof names));
    fputs("  --eps E              ", out);
    cli_print_wrapped(out, text, 23);
    snprintf(text, sizeof text, "%s with --causal: tokens per chunk, C >= 1 [%d]",
             kernel_list(reads_chunk, "or", names, sizeof names), LA_DEFAULT_CHUNK);
    fputs("  --chunk C            ", out);
    cli_print_wrapped(out, text, 23);
    variants_print_help(out, 1, 1);
    position_print_help(out);
    fputs("                       In attend, absolute positions are added to Q, K and V\n"
          "                       alike (position i to row i: a layer's input with identity\n"
          "                       projections; learned: one table (L, d) per array, so a\n"
          "                       given table needs d_k = d_v); rotary rotates Q and K and,\n"
          "                       for linear and linear_recurrent, runs RoFormer's form:\n"
          "                       R φ(q), R φ(k) in the numerator, φ(q)·φ(k) unrotated in\n"
          "                       the denominator (la_linear_attention_rotary_*); not favor.\n"
          "                       relative runs the relative kernel (--variant relative:\n"
          "                       the same) in place of softmax; refused with any other.\n"
          "                       No --save-weights for relative or rotary linear, and no\n"
          "                       --grad-* with positions\n",
          out);
    fputs(help_gradients, out);
    fputs("  --kernel FORM        deprecated (until the next release): --variant FAMILY\n"
          "                       --kernel FORM, e.g. --variant softmax --kernel\n"
          "                       materialized, is --variant softmax_materialized\n\n",
          out);
    kernels_print_kernels(out, NULL, NULL);
    char none[256] = "";
    for (int i = 0; i < LA_KERNEL_COUNT; i++)
        if (!la_kernel_get((la_kernel)i)->backward_f32)
            snprintf(none + strlen(none), sizeof none - strlen(none), "%s%s", none[0] ? ", " : "",
                     la_kernel_name((la_kernel)i));
    if (none[0]) fprintf(out, "No gradients (--grad-*): %s.\n", none);
    fputs(help_end, out);
}

static const char *const precision_names[] = {"float32", "float64", NULL};
/* --causal-align, by la_causal_align value */
static const char *const align_names[] = {"top-left", "bottom-right", NULL};

/* The flags' texts, as given (NULL when absent). */
typedef struct {
    const char *variant, *q, *k, *v, *out, *key_lengths, *precision, *threads, *scale, *feature_map,
        *eps, *kernel, *chunk, *save_weights, *score, *causal_align, *mask, *key_padding_mask,
        *layout;
    const char *grad_out, *grad_q, *grad_k, *grad_v; /* all four or none */
    int causal;
    variants_flags
        variant_params;       /* --window, --proj-rank, --proj, --features, --seed, --score-* */
    position_flags positions; /* --positions, --position-table, --max-distance, --relative */
} attend_args;

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
    if (a->variant && *kernel != LA_KERNEL_SOFTMAX && *kernel != LA_KERNEL_SOFTMAX_MATERIALIZED)
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
                        kernel_list(reads_chunk, "or", names, sizeof names));
    if (a->scale && !(params & LA_PARAM_SCALE))
        return cli_fail("--scale", "applies to --variant %s only",
                        kernel_list(reads_scale, "or", names, sizeof names));
    if (a->eps && !(params & LA_PARAM_EPS))
        return cli_fail("--eps", "applies to --variant %s only",
                        kernel_list(reads_eps, "or", names, sizeof names));
    if (a->feature_map && !(params & LA_PARAM_FEATURE_MAP))
        return cli_fail("--feature-map", "applies to --variant %s only",
                        kernel_list(reads_feature_map, "or", names, sizeof names));
    return 0;
}

/* ---------------------------------------------------------------- positions */

/* Rotary positions on a linear kernel: la_linear_attention_rotary_* runs instead of the
 * kernel (RoFormer's form: the rotation on φ(q), φ(k) in the numerator only). */
static int rotary_linear(la_kernel kernel, const position_values *v)
{
    return v->kind == POSITION_ROTARY &&
           (kernel == LA_KERNEL_LINEAR || kernel == LA_KERNEL_LINEAR_RECURRENT);
}

/* --positions against the kernel: relative runs the relative kernel (--variant relative,
 * or softmax / softmax_materialized, which it extends); --variant relative alone means
 * --positions relative; rotary rotates q and k of the softmax-type kernels and runs
 * inside linear attention; FAVOR+ takes neither. No gradients with positions. */
static int choose_positions(attend_args *a, la_kernel *kernel, int gradients, position_values *out)
{
    if (*kernel == LA_KERNEL_RELATIVE && !a->positions.positions)
        a->positions.positions = "relative";
    int rc = position_parse(&a->positions, out);
    if (rc) return rc;
    const char *name = la_kernel_name(*kernel);
    if (out->kind == POSITION_RELATIVE) {
        if (*kernel != LA_KERNEL_RELATIVE && *kernel != LA_KERNEL_SOFTMAX &&
            *kernel != LA_KERNEL_SOFTMAX_MATERIALIZED)
            return cli_fail("--positions",
                            "relative applies to softmax attention only "
                            "(--variant softmax or relative), not %s",
                            name);
        *kernel = LA_KERNEL_RELATIVE;
    } else if (*kernel == LA_KERNEL_RELATIVE) {
        return cli_fail("--positions", "--variant relative is --positions relative, not %s",
                        position_name(out->kind));
    }
    if (out->kind == POSITION_ROTARY &&
        (*kernel == LA_KERNEL_FAVOR || *kernel == LA_KERNEL_FAVOR_RECURRENT))
        return cli_fail("--positions",
                        "rotary does not apply to %s (its random features "
                        "are not rotated)",
                        name);
    if (out->kind != POSITION_NONE && gradients)
        return cli_fail("--grad-out", "not with --positions %s", position_name(out->kind));
    return 0;
}

/* The relative kernel's clip distance and tables (given: (2K+1, d_k) and (2K+1, d_v)). */
static int apply_relative(const position_values *v, la_problem *p)
{
    char s1[160];
    p->max_distance = v->max_distance;
    if (!v->rel_k.data) return 0;
    if (v->rel_k.shape[1] != p->d_k)
        return cli_fail("--relative", "a^K has shape %s: need (2K+1, d_k) with d_k = %zu",
                        arrays_shape_str(&v->rel_k, s1, sizeof s1), p->d_k);
    if (v->rel_v.shape[1] != p->d_v)
        return cli_fail("--relative", "a^V has shape %s: need (2K+1, d_v) with d_v = %zu",
                        arrays_shape_str(&v->rel_v, s1, sizeof s1), p->d_v);
    p->rel_k = v->rel_k.data;
    p->rel_v = v->rel_v.data;
    return 0;
}

/* Q, K, V agree: same rank 2..4, same leading dims, shared d_k and M, no zero sizes. */
static int check_shapes(const attend_args *a, const la_array *q, const la_array *k,
                        const la_array *v)
{
    char s1[160], s2[160];
    const char *paths[] = {a->q, a->k, a->v};
    const la_array *arrays[] = {q, k, v};
    if (q->ndim < 2 || q->ndim > 4)
        return cli_fail(a->q, "shape %s must be (N, d), (H, N, d) or (B, H, N, d)",
                        arrays_shape_str(q, s1, sizeof s1));
    for (int i = 1; i < 3; i++) {
        if (arrays[i]->ndim != q->ndim)
            return cli_fail(paths[i], "shape %s has %d dims, Q %s has %d",
                            arrays_shape_str(arrays[i], s1, sizeof s1), arrays[i]->ndim,
                            arrays_shape_str(q, s2, sizeof s2), q->ndim);
        for (int d = 0; d < q->ndim - 2; d++)
            if (arrays[i]->shape[d] != q->shape[d])
                return cli_fail(paths[i], "leading dims of %s differ from Q's %s",
                                arrays_shape_str(arrays[i], s1, sizeof s1),
                                arrays_shape_str(q, s2, sizeof s2));
    }
    int r = q->ndim - 2, c = q->ndim - 1; /* rows and columns */
    if (k->shape[c] != q->shape[c])
        return cli_fail(a->k, "d_k = %zu differs from Q's d_k = %zu", k->shape[c], q->shape[c]);
    if (v->shape[r] != k->shape[r])
        return cli_fail(a->v, "has %zu rows (keys), K has %zu", v->shape[r], k->shape[r]);
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < q->ndim; d++)
            if (arrays[i]->shape[d] == 0)
                return cli_fail(paths[i], "shape %s has a zero dimension",
                                arrays_shape_str(arrays[i], s1, sizeof s1));
    return 0;
}

/* key lengths: integers, shape (B,), each in [0, M]; converted to int64 in *out. */
static int read_key_lengths(const char *path, size_t batch, size_t n_keys, int64_t **out)
{
    la_array l;
    char s1[160];
    int rc = arrays_read_npy(path, &l);
    if (rc) return rc;
    if (l.dtype != LA_NPY_I32 && l.dtype != LA_NPY_I64) {
        rc = cli_fail(path, "dtype %s, need int32 or int64", arrays_dtype_name(l.dtype));
        goto done;
    }
    if (l.ndim != 1 || l.shape[0] != batch) {
        rc = cli_fail(path, "shape %s must be (B,) = (%zu,)", arrays_shape_str(&l, s1, sizeof s1),
                      batch);
        goto done;
    }
    int64_t *lengths = malloc(batch * sizeof *lengths);
    if (!lengths) {
        rc = cli_fail(path, "out of memory");
        goto done;
    }
    for (size_t b = 0; b < batch; b++) {
        lengths[b] = l.dtype == LA_NPY_I32 ? ((int32_t *)l.data)[b] : ((int64_t *)l.data)[b];
        if (lengths[b] < 0 || (uint64_t)lengths[b] > n_keys) {
            rc = cli_fail(path, "key length %lld at index %zu is outside [0, %zu]",
                          (long long)lengths[b], b, n_keys);
            free(lengths);
            goto done;
        }
    }
    *out = lengths;
done:
    la_array_free(&l);
    return rc;
}

/* ---------------------------------------------------------------- masks */

/* Which kernels take --mask and --key-padding-mask (linattn.h, la_problem.mask): a
 * refusal before any file is read, with why. */
static int check_masks_allowed(const attend_args *a, la_kernel kernel)
{
    const char *name = la_kernel_name(kernel);
    const int general = kernel == LA_KERNEL_SOFTMAX || kernel == LA_KERNEL_SOFTMAX_MATERIALIZED ||
                        kernel == LA_KERNEL_HARD || kernel == LA_KERNEL_LOCAL ||
                        kernel == LA_KERNEL_GENERAL || kernel == LA_KERNEL_COSINE;
    const int keys = general || kernel == LA_KERNEL_LINEAR || kernel == LA_KERNEL_LINEAR_RECURRENT;
    if (a->mask && (kernel == LA_KERNEL_LINEAR || kernel == LA_KERNEL_LINEAR_RECURRENT))
        return cli_fail("--mask",
                        "%s keeps one state S = sum of phi(k_j) v_j^T for every query, "
                        "so a per-query mask cannot be honoured (--key-padding-mask and "
                        "--causal can)",
                        name);
    if (a->mask && !general)
        return cli_fail("--mask",
                        "applies to --variant softmax, softmax_materialized, hard, local, "
                        "general or cosine (not %s)",
                        name);
    if (a->key_padding_mask && !keys)
        return cli_fail("--key-padding-mask",
                        "applies to --variant softmax, softmax_materialized, hard, local, "
                        "general, cosine, linear or linear_recurrent (not %s)",
                        name);
    return 0;
}

/* A mask file: bool (True = hidden) or float32/float64 with values 0 or -inf (-inf =
 * hidden), shaped as one of the `n_shapes` shapes given (each `ndim` long); *out gets
 * its count bytes, 1 = hidden, and *which the index of the shape it matched. */
static int read_mask(const char *flag, const char *path, int ndim, size_t n_shapes,
                     const size_t shapes[][3], const char *want, uint8_t **out, size_t *which)
{
    la_array a;
    char s1[160];
    int rc = arrays_read_npy(path, &a);
    if (rc) return rc;
    *which = n_shapes;
    for (size_t s = 0; s < n_shapes && a.ndim == ndim; s++)
        if (memcmp(a.shape, shapes[s], (size_t)ndim * sizeof a.shape[0]) == 0) *which = s;
    if (a.dtype != LA_NPY_BOOL && a.dtype != LA_NPY_F32 && a.dtype != LA_NPY_F64) {
        rc = cli_fail(flag, "dtype %s, need bool or float32/float64 (0 or -inf)",
                      arrays_dtype_name(a.dtype));
        goto done;
    }
    if (*which == n_shapes) {
        rc = cli_fail(flag, "shape %s must be %s", arrays_shape_str(&a, s1, sizeof s1), want);
        goto done;
    }
    uint8_t *m = malloc(a.count ? a.count : 1);
    if (!m) {
        rc = cli_fail(flag, "out of memory");
        goto done;
    }
    for (size_t e = 0; e < a.count; e++) {
        if (a.dtype == LA_NPY_BOOL) {
            const uint8_t x = ((const uint8_t *)a.data)[e];
            if (x > 1) {
                rc = cli_fail(flag, "byte %u at index %zu is not a bool (0 or 1)", x, e);
                free(m);
                goto done;
            }
            m[e] = x;
            continue;
        }
        const double x = a.dtype == LA_NPY_F32 ? (double)((const float *)a.data)[e]
                                               : ((const double *)a.data)[e];
        if (x != 0 && x != -INFINITY) {
            rc = cli_fail(flag, "value %g at index %zu: an additive mask holds 0 or -inf only", x,
                          e);
            free(m);
            goto done;
        }
        m[e] = x == -INFINITY;
    }
    *out = m;
done:
    la_array_free(&a);
    return rc;
}

/* --mask: (N, M) or (B·H, N, M); --key-padding-mask: (B, M). */
static int read_masks(const attend_args *a, size_t batch, size_t heads, size_t n, size_t m,
                      uint8_t **mask, int *per_head, uint8_t **key_mask)
{
    char want[160];
    size_t which;
    int rc;
    if (a->mask) {
        const size_t two[][3] = {{n, m, 0}}, three[][3] = {{batch * heads, n, m}};
        snprintf(want, sizeof want, "(N, M) = (%zu, %zu) or (B*H, N, M) = (%zu, %zu, %zu)", n, m,
                 batch * heads, n, m);
        la_array probe;
        if ((rc = arrays_read_npy(a->mask, &probe))) return rc;
        const int ndim = probe.ndim == 3 ? 3 : 2;
        la_array_free(&probe);
        if ((rc = read_mask("--mask", a->mask, ndim, 1, ndim == 3 ? three : two, want, mask,
                            &which)))
            return rc;
        *per_head = ndim == 3;
    }
    if (a->key_padding_mask) {
        const size_t shape[][3] = {{batch, m, 0}};
        snprintf(want, sizeof want, "(B, M) = (%zu, %zu)", batch, m);
        if ((rc = read_mask("--key-padding-mask", a->key_padding_mask, 2, 1, shape, want, key_mask,
                            &which)))
            return rc;
    }
    return 0;
}

/* ---------------------------------------------------------------- gradients */

/* --grad-out, --grad-q, --grad-k, --grad-v: none, or all four. */
static int check_gradient_flags(const attend_args *a, int *wanted)
{
    const char *flags[][2] = {{"--grad-out", a->grad_out},
                              {"--grad-q", a->grad_q},
                              {"--grad-k", a->grad_k},
                              {"--grad-v", a->grad_v}};
    int given = 0;
    for (int i = 0; i < 4; i++)
        given += flags[i][1] != NULL;
    *wanted = given == 4;
    if (given == 0 || given == 4) return 0;
    for (int i = 0; i < 4; i++)
        if (!flags[i][1])
            return cli_fail(flags[i][0],
                            "missing: --grad-out, --grad-q, --grad-k and --grad-v go together");
    return 0;
}

/* The kernel has a backward pass in the library (its registry row's backward slots). */
static int check_has_backward(la_kernel kernel)
{
    const la_kernel_info *info = la_kernel_get(kernel);
    if (info && info->backward_f32 && info->backward_f64) return 0;
    return cli_fail("--grad-out", "kernel %s has no backward pass", la_kernel_name(kernel));
}

/* dO: read in the precision, shaped exactly as the output y. */
static int read_grad_out(const char *path, la_dtype dtype, const la_array *y, la_array *d_out)
{
    char s1[160], s2[160];
    int rc = arrays_read_floats(path, dtype, d_out);
    if (rc) return rc;
    if (d_out->ndim != y->ndim ||
        memcmp(d_out->shape, y->shape, (size_t)y->ndim * sizeof y->shape[0]) != 0)
        return cli_fail(path, "shape %s differs from the output's %s",
                        arrays_shape_str(d_out, s1, sizeof s1), arrays_shape_str(y, s2, sizeof s2));
    return 0;
}

/* An empty array of like's dtype and shape (the gradients of q, k, v). */
static int alloc_like(const la_array *like, la_array *out)
{
    *out = *like;
    out->data = malloc(like->count * la_npy_dtype_size(like->dtype));
    if (!out->data) return cli_fail("attend", "%s", la_strerror(LA_ENOMEM));
    return 0;
}

/* The backward of L = Σ y ∘ dO into d_q, d_k, d_v (allocated here, freed by the caller),
 * then y and the three gradients written together. */
static int backward_and_write(const attend_args *a, la_kernel kernel, const la_problem *p,
                              la_dtype dtype, const la_array *q, const la_array *k,
                              const la_array *v, const la_array *y, const la_array *d_out,
                              la_array grads[3])
{
    int rc;
    if ((rc = alloc_like(q, &grads[0])) || (rc = alloc_like(k, &grads[1])) ||
        (rc = alloc_like(v, &grads[2])))
        return rc;
    la_status st;
    if (dtype == LA_FLOAT32)
        st = la_attention_backward_f32(kernel, p, q->data, k->data, v->data, y->data, d_out->data,
                                       grads[0].data, grads[1].data, grads[2].data);
    else
        st = la_attention_backward_f64(kernel, p, q->data, k->data, v->data, y->data, d_out->data,
                                       grads[0].data, grads[1].data, grads[2].data);
    if (st == LA_ERANGE && dtype == LA_FLOAT32)
        return cli_fail("attend", "gradients overflow float32: use --precision float64");
    if (st != LA_OK)
        return cli_fail("attend", "backward of %s: %s", la_kernel_name(kernel), la_strerror(st));

    outputs_set outs;
    outputs_set_init(&outs);
    if (!(rc = outputs_set_add(&outs, "--out", a->out, y)) &&
        !(rc = outputs_set_add(&outs, "--grad-q", a->grad_q, &grads[0])) &&
        !(rc = outputs_set_add(&outs, "--grad-k", a->grad_k, &grads[1])) &&
        !(rc = outputs_set_add(&outs, "--grad-v", a->grad_v, &grads[2])))
        rc = outputs_set_commit(&outs);
    outputs_set_free(&outs);
    return rc;
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
    if ((rc = check_masks_allowed(&a, kernel))) return rc;
    if (a.save_weights && kernel == LA_KERNEL_LINFORMER)
        return cli_fail("--save-weights", "linformer has no attention matrix");
    if (a.save_weights && outputs_paths_alias(a.save_weights, a.out))
        return cli_fail("--save-weights", "'%s' is the file of --out", a.save_weights);
    if ((rc = check_gradient_flags(&a, &gradients))) return rc;
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
    if ((rc = choose_positions(&a, &kernel, gradients, &positions))) goto done;
    if ((a.mask || a.key_padding_mask) &&
        (kernel == LA_KERNEL_RELATIVE || rotary_linear(kernel, &positions))) {
        rc = cli_fail(a.mask ? "--mask" : "--key-padding-mask", "%s takes no masks",
                      kernel == LA_KERNEL_RELATIVE ? "--positions relative"
                                                   : "--positions rotary with linear attention");
        goto done;
    }
    /* --seed also draws a learned table that was not given */
    const unsigned reads =
        la_kernel_get(kernel)->params |
        (positions.kind == POSITION_LEARNED && !positions.table.data ? LA_PARAM_RELATIVE : 0);
    if ((rc = variants_parse(&a.variant_params, reads, &variant_values))) goto done;
    if (a.save_weights && (kernel == LA_KERNEL_FAVOR || kernel == LA_KERNEL_FAVOR_RECURRENT ||
                           kernel == LA_KERNEL_GENERAL || kernel == LA_KERNEL_ADDITIVE ||
                           kernel == LA_KERNEL_COSINE || kernel == LA_KERNEL_RELATIVE ||
                           rotary_linear(kernel, &positions))) {
        /* la_attention_weights_* has no matrix for it */
        rc = cli_fail("--save-weights", "%s%s has no attention matrix in the library",
                      la_kernel_name(kernel),
                      rotary_linear(kernel, &positions) ? " with rotary positions" : "");
        goto done;
    }

    /* step 2: the inputs, converted to the precision, and their shapes */
    if ((rc = arrays_read_floats(a.q, dtype, &q)) || (rc = arrays_read_floats(a.k, dtype, &k)) ||
        (rc = arrays_read_floats(a.v, dtype, &v)) || (rc = layout_swap_heads(layout, a.q, &q)) ||
        (rc = layout_swap_heads(layout, a.k, &k)) || (rc = layout_swap_heads(layout, a.v, &v)) ||
        (rc = check_shapes(&a, &q, &k, &v)))
        goto done;
    int nd = q.ndim;
    size_t batch = nd == 4 ? q.shape[0] : 1, heads = nd >= 3 ? q.shape[nd - 3] : 1;
    size_t n = q.shape[nd - 2], d_k = q.shape[nd - 1], m = k.shape[nd - 2], d_v = v.shape[nd - 1];
    if (a.key_lengths && (rc = read_key_lengths(a.key_lengths, batch, m, &key_lengths))) goto done;
    if ((rc = read_masks(&a, batch, heads, n, m, &mask, &mask_per_head, &key_mask))) goto done;
    /* positions: absolute ones added to Q, K and V (the input of a layer whose projections
     * are the identity), rotary ones rotating Q and K (for linear attention: inside the
     * kernel, below); the seed is --seed's */
    if ((rc = position_add_absolute(&positions, "Q", variant_values.seed, &q)) ||
        (rc = position_add_absolute(&positions, "K", variant_values.seed, &k)) ||
        (rc = position_add_absolute(&positions, "V", variant_values.seed, &v)))
        goto done;
    if (positions.kind == POSITION_ROTARY && !rotary_linear(kernel, &positions) &&
        ((rc = position_rotate(a.q, &q)) || (rc = position_rotate(a.k, &k))))
        goto done;
    if (rotary_linear(kernel, &positions) && d_k % 2 != 0) {
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
    if ((rc = variants_apply(&variant_values, &p))) goto done;
    if (kernel == LA_KERNEL_RELATIVE && (rc = apply_relative(&positions, &p))) goto done;
    if (!variants_rank_fits(kernel, &p)) {
        rc = variant_values.proj_e.data
                 ? cli_fail("--proj", "K = %zu rows, must be at most M = %zu (the keys' rows)",
                            p.proj_rank, m)
                 : cli_fail("--proj-rank", "K = %zu must be at most M = %zu (the keys' rows)",
                            p.proj_rank, m);
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
    if (gradients &&
        ((rc = read_grad_out(a.grad_out, dtype, &y, &d_out)) || (rc = check_has_backward(kernel))))
        goto done;
    y.data = malloc(y.count * la_npy_dtype_size(y.dtype));
    if (!y.data) {
        rc = cli_fail("attend", "%s", la_strerror(LA_ENOMEM));
        goto done;
    }
    if (rotary_linear(kernel, &positions))
        st = dtype == LA_FLOAT32
                 ? la_linear_attention_rotary_f32(&p, 0, 0, q.data, k.data, v.data, y.data)
                 : la_linear_attention_rotary_f64(&p, 0, 0, q.data, k.data, v.data, y.data);
    else if (dtype == LA_FLOAT32)
        st = la_attention_f32(kernel, &p, q.data, k.data, v.data, y.data);
    else
        st = la_attention_f64(kernel, &p, q.data, k.data, v.data, y.data);
    const char *failed = "attend";
    if (st == LA_OK && a.save_weights) {
        failed = "--save-weights";
        if (dtype == LA_FLOAT32)
            st = la_attention_weights_f32(kernel, &p, q.data, k.data, w.data);
        else
            st = la_attention_weights_f64(kernel, &p, q.data, k.data, w.data);
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
        rc = backward_and_write(&a, kernel, &p, dtype, &q, &k, &v, &y, &d_out, grads);
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

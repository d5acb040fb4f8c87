/* attend_help.c — the help of `linattn attend`, and which kernels read which flag
 * (attend.h). */
#include "attend.h"

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
    "                       checked; else drawn from --seed as la_kernel_draw draws them\n"
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
    "                       kernel's backward pass (la_attention_backward/_f64) with\n"
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
 * follows the kernel's params. The deprecated --kernel FORM picks a
 * kernel of --variant's family by its form: --variant softmax --kernel materialized is
 * softmax_materialized. */

int attend_reads_scale(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_SCALE) != 0;
}
int attend_reads_feature_map(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_FEATURE_MAP) != 0;
}
int attend_reads_eps(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_EPS) != 0;
}
/* --chunk: the kernels that read it, run causal */
int attend_reads_chunk(la_kernel k)
{
    return (la_kernel_get(k)->params & LA_PARAM_CHUNK) && kernels_allows(k, 1);
}

/* "softmax, softmax_materialized and hard" (or, with conjunction "or", "… or hard"):
 * the kernels keep accepts. */
const char *attend_kernel_list(int (*keep)(la_kernel), const char *conjunction, char *buf,
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
             attend_kernel_list(attend_reads_scale, "and", names, sizeof names));
    fputs("  --scale S            ", out);
    cli_print_wrapped(out, text, 23);
    snprintf(text, sizeof text, "%s only: elu (φ = elu + 1) or relu [elu]",
             attend_kernel_list(attend_reads_feature_map, "and", names, sizeof names));
    fputs("  --feature-map F      ", out);
    cli_print_wrapped(out, text, 23);
    snprintf(text, sizeof text, "%s only: E >= 0 in the denominator [1e-6]",
             attend_kernel_list(attend_reads_eps, "and", names, sizeof names));
    fputs("  --eps E              ", out);
    cli_print_wrapped(out, text, 23);
    snprintf(text, sizeof text, "%s with --causal: tokens per chunk, C >= 1 [%d]",
             attend_kernel_list(attend_reads_chunk, "or", names, sizeof names), LA_DEFAULT_CHUNK);
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
    fputs("  --kernel FORM        deprecated: --variant FAMILY\n"
          "                       --kernel FORM, e.g. --variant softmax --kernel\n"
          "                       materialized, is --variant softmax_materialized\n\n",
          out);
    kernels_print_kernels(out, NULL, NULL);
    char none[256] = "";
    for (int i = 0; i < LA_KERNEL_COUNT; i++)
        if (!(la_kernel_get((la_kernel)i)->caps & LA_CAP_BACKWARD))
            snprintf(none + strlen(none), sizeof none - strlen(none), "%s%s", none[0] ? ", " : "",
                     la_kernel_name((la_kernel)i));
    if (none[0]) fprintf(out, "No gradients (--grad-*): %s.\n", none);
    fputs(help_end, out);
}

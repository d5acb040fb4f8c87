/* train_help.c — the help of `linattn train`. */
#include "train.h"

#include "commands.h"
#include "common/cli.h"
#include "common/kernels.h"

#include <stdio.h>

static const char help_text[] =
    "usage: linattn train --task copy|recall|text [--data FILE] --attention KERNEL [options]\n"
    "\n"
    "Trains a decoder-only Transformer language model in C (the layers of `linattn help\n"
    "block`, causal self-attention with the chosen kernel, a final LayerNorm, a linear head;\n"
    "positions added to the embedding) with AdamW, on one of three tasks:\n"
    "  copy    Katharopoulos et al. (2020): L random symbols of 10, a separator, the same L\n"
    "          again (L up to --copy-length); only the copy is scored\n"
    "  recall  MQAR as Zoology (Arora et al. 2023) generates it: K key-value pairs (keys\n"
    "          from one half of the vocabulary, values from the other), then the keys\n"
    "          queried again at power-law distributed gaps; only the answers are scored\n"
    "  text    bytes of FILE (vocabulary 256); the last 10% held out for evaluation\n"
    "Every --eval-every steps the held-out loss and accuracy (scored tokens whose most\n"
    "likely prediction is the target) go to the progress line and to --log; the same\n"
    "steps write --checkpoint. SIGINT (Ctrl-C) or SIGTERM stops after the step running,\n"
    "writes the checkpoint and exits 130; --resume DIR carries on bit for bit.\n"
    "\n"
    "task and model (default in brackets):\n"
    "  --task T             copy, recall or text [copy]\n"
    "  --data FILE          text: the file (at least 2 windows of --seq-len + 1 bytes)\n"
    "  --pairs K            recall: key-value pairs, 4K <= --seq-len [8]\n"
    "  --vocab V            recall: the vocabulary, K <= V/2 - 1 [64]\n"
    "  --copy-length L      copy: the longest sequence copied, <= --seq-len/2 [--seq-len/2]\n"
    "  --attention K        the kernel (below) [softmax]\n"
    "  --feature-map F      the kernels with a feature map: elu (φ = elu + 1) or relu [elu]\n"
    "  --layers L [2]  --d-model D [64]  --heads H [4]  --d-ff F [128]  --seq-len N [64]\n"
    "  --norm pre|post      LayerNorm before (pre) or after (post) each sublayer [pre]\n"
    "  --activation F       relu or gelu [relu]\n"
    "  --positions P        sinusoidal (fixed) or learned (pos_embedding.weight) [sinusoidal]\n"
    "  --head H             separate (head.weight) or tied (the embedding's) [separate]\n"
    "  --precision P        float32 or float64 [float32]\n"
    "training:\n"
    "  --batch B            sequences per step [16]\n"
    "  --steps S            optimiser steps in all (with --resume: the checkpoint's) [2000]\n"
    "  --lr LR              the peak learning rate (0: the weights stay) [0.003]\n"
    "  --warmup W           steps of linear warm-up from lr/W to lr [50]\n"
    "  --schedule S         constant, step (×--gamma [0.5] every --step-every [100] steps)\n"
    "                       or cosine (to --min-lr [0] at step S) after the warm-up [constant]\n"
    "  --weight-decay WD    AdamW's decoupled weight decay; β = (0.9, 0.999), ε = 1e-8 [0.01]\n"
    "  --clip C             the gradients' global 2-norm clipped to C; 0: off [1]\n"
    "  --seed S             the initialization, the batches, the kernel's draws [0]\n"
    "  --threads T          OpenMP threads [LA_NUM_THREADS, else all cores];\n"
    "                       " CLI_THREADS_HELP "\n"
    "output:\n"
    "  --eval-every K       evaluate (and checkpoint) every K steps and at the end [200]\n"
    "  --log FILE.csv       one row per evaluation: step, train_loss (mean since the last\n"
    "                       row), eval_loss, eval_accuracy, elapsed_s, tokens_per_s\n"
    "  --checkpoint DIR     the model, AdamW's state, the step and the batches' generator:\n"
    "                       a folder of .npy files named by PyTorch's keys, replaced whole\n"
    "  --resume DIR         continue DIR's run, checkpointing into DIR (or --checkpoint's);\n"
    "                       its settings apply, a flag that differs from them is refused\n"
    "                       (but --steps, --eval-every, --log, --checkpoint, --threads)\n";
static const char help_after_kernels[] =
    "\n"
    "exit status: 0 done, 2 bad flags, data or checkpoint, or a loss that is not finite\n"
    "(one line on stderr: linattn: WHAT: why; the last checkpoint is kept), 130 stopped by\n"
    "a signal after writing the checkpoint\n"
    "\n"
    "example (the copy task with the defaults: 74 s on this machine's 2 cores shared with\n"
    "other jobs, 26 s of CPU time; the held-out accuracy reaches 0.98 at step 2000):\n"
    "  linattn train --task copy --attention softmax --log copy.csv --checkpoint copy.ckpt\n";

void cmd_train_help(FILE *out)
{
    char names[512];
    fputs(help_text, out);
    fputs("\nkernels (--attention; those with a backward that run causal, from the registry):\n  ",
          out);
    cli_print_wrapped(out, kernels_kernel_names(train_kernel, ", ", names, sizeof names), 2);
    fputs(help_after_kernels, out);
}

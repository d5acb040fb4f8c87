/* main.c — `linattn COMMAND [ARGS]`: git-style dispatch and `linattn help [COMMAND]`. */
#include "commands.h"
#include "common/cli.h"
#include "io/outfile.h"
#include "linattn.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One row per subcommand; keep in the order `linattn help` should list them. */
static const la_command commands[] = {
    {"attend", "run one attention kernel on .npy inputs", cmd_attend, cmd_attend_help},
    {"block", "one Transformer encoder or decoder layer on .npy input, PyTorch weights", cmd_block,
     cmd_block_help},
    {"model", "a whole nn.Transformer (encoder and decoder stacks) on .npy source and target",
     cmd_model, cmd_model_help},
    {"params", "exact parameter counts per component, as PyTorch counts them", cmd_params,
     cmd_params_help},
    {"flops", "FLOPs and memory of one Transformer layer, per component", cmd_flops,
     cmd_flops_help},
    {"train", "train a small causal Transformer in C: copy, MQAR recall or a text file", cmd_train,
     cmd_train_help},
    {"generate", "tokens from a `linattn train` checkpoint, decoded one at a time", cmd_generate,
     cmd_generate_help},
    {"csv", "a results file without its # lines (--plain), or its metadata as JSON (--meta)",
     cmd_csv, cmd_csv_help},
    {"bench", "time the kernels against BLIS sgemm and the FMA peak (make bench)", cmd_bench,
     cmd_bench_help},
    {"results", "run the default experiment suite (make results) and summarise", cmd_results,
     cmd_results_help},
    {"plot", "the figures of a results folder or CSV files, with the run's settings", cmd_plot,
     cmd_plot_help},
    {"scaling", "experiment: time and memory of each kernel against N", cmd_scaling,
     cmd_scaling_help},
    {"crossover", "experiment: the N where linear attention overtakes softmax, per d",
     cmd_crossover, cmd_crossover_help},
    {"decode", "experiment: per-token latency of generation, KV cache vs state", cmd_decode,
     cmd_decode_help},
    {"accuracy", "experiment: kernel errors vs float64, distances between variants", cmd_accuracy,
     cmd_accuracy_help},
    {"approx", "experiment: error against FLOPs of the approximating variants", cmd_approx,
     cmd_approx_help},
    {"scores", "experiment: scaled vs unscaled dot products, weights' entropy and gradient vs d_k",
     cmd_scores, cmd_scores_help},
    {"params-sweep", "experiment: exact parameters vs 12D², D sweep and standard models",
     cmd_params_sweep, cmd_params_sweep_help},
    {"block-sweep", "experiment: encoder layer time per component against N", cmd_block_sweep,
     cmd_block_sweep_help},
    {"complexity", "experiment: Vaswani et al.'s Table 1 measured, time of each layer type vs N",
     cmd_complexity, cmd_complexity_help},
    {"roofline", "experiment: every kernel's GFLOP/s against the FMA peak and memory bandwidth",
     cmd_roofline, cmd_roofline_help},
    {"copy-task", "experiment: the copy task trained per variant, loss and accuracy vs step",
     cmd_copy_task, cmd_copy_task_help},
    {"recall", "experiment: MQAR accuracy vs key-value pairs and width, per variant", cmd_recall,
     cmd_recall_help},
    {"train-speed", "experiment: training tokens/s and attention's share of a step vs N",
     cmd_train_speed, cmd_train_speed_help},
    {"dist-attend", "attend over MPI ranks, a sequence slice each (mpirun; make MPI=1)",
     cmd_dist_attend, cmd_dist_attend_help},
    {"dist-scaling", "experiment: distributed linear vs ring softmax against P (mpirun)",
     cmd_dist_scaling, cmd_dist_scaling_help},
};
static const size_t n_commands = sizeof commands / sizeof commands[0];

const la_command *la_command_find(const char *name)
{
    for (size_t i = 0; i < n_commands; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: linattn COMMAND [ARGS]\n"
                "       linattn help [COMMAND]\n\n"
                "Softmax against kernelized linear attention: kernels, layers, experiments.\n\n"
                "commands:\n");
    for (size_t i = 0; i < n_commands; i++)
        fprintf(to, "  %-13s %s\n", commands[i].name, commands[i].summary);
    fprintf(to,
            "\n`linattn help COMMAND` or `linattn COMMAND --help` describes one.\n"
            "library %s\n",
            LA_VERSION_STRING);
}

/* SIGINT, SIGTERM: remove the temporary files being written (la_outfile's fallback
 * names; O_TMPFILE files vanish by themselves), then die of the signal as usual, so
 * the shell sees 130 or 143. */
static void on_signal(int sig)
{
    la_outfile_signal_cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* 0 when what went to standard output reached it, else 2 after one line (help or
 * --version into a full disk or a closed pipe fails like any other write) */
static int stdout_done(void)
{
    if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
    return cli_fail("standard output", "%s", strerror(errno ? errno : EIO));
}

int main(int argc, char **argv)
{
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        if (argc < 3) {
            usage(stdout);
            return stdout_done();
        }
        const la_command *c = la_command_find(argv[2]);
        if (!c) return cli_fail(argv[2], "unknown command (see `linattn help`)");
        c->help(stdout);
        return stdout_done();
    }
    if (strcmp(name, "--version") == 0) {
        printf("linattn %s\n", LA_VERSION_STRING);
        return stdout_done();
    }
    const la_command *c = la_command_find(name);
    if (!c) return cli_fail(name, "unknown command (see `linattn help`)");
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            c->help(stdout);
            return stdout_done();
        }
    }
    /* LA_NUM_THREADS under the rule of --threads (linattn.h, threads) */
    if (la_set_num_threads(0) != LA_OK)
        return cli_fail("LA_NUM_THREADS", "'%s' is not a thread count in 1..%d",
                        getenv("LA_NUM_THREADS"), LA_MAX_THREADS);
    return c->run(argc - 1, argv + 1);
}

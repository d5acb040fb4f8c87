/* results_suite.c — the default suite of `linattn results`: one row per experiment, the
 * command and flags it runs (full and --quick), the file it writes, its reference times,
 * and whether the summary reports a noisy run (results.h). The figures of each file are
 * plot's table (plot_figures.c), keyed by the experiment the file names. */
#include "results.h"

const char *results_name_of(const experiment *e)
{
    return e->name ? e->name : e->command;
}

// clang-format off
const experiment results_suite[] = {
    {"scaling", "scaling.csv", "",
     {"--n", "128:65536", "--d", "64", "--heads", "1", "--max-seconds", "10", "--max-mem", "8G"},
     {"--n", "16:1024", "--d", "64", "--heads", "1", "--max-seconds", "1", "--max-mem", "8G",
      "--min-time", "0.02"},
     116, 4, NULL, 1},
    {"scaling", "scaling_train.csv", " (forward + backward)",
     {"--pass", "train", "--n", "128:16384", "--d", "64", "--heads", "1", "--max-seconds", "5",
      "--max-mem", "8G"},
     {"--pass", "train", "--n", "16:1024", "--d", "64", "--heads", "1", "--max-seconds", "1",
      "--max-mem", "8G", "--min-time", "0.02"},
     67, 4, "scaling_train", 1},
    {"crossover", "crossover.csv", " (d = 16..256, 4 heads)",
     {NULL},
     {"--d", "16,64", "--n", "16:1024", "--min-time", "0.02", "--bisect-steps", "2"},
     11.8, 3, NULL, 1},
    {"decode", "decode.csv", "",
     {"--tokens", "8192", "--heads", "8", "--d", "64"},
     {"--tokens", "256", "--heads", "8", "--d", "64"},
     6.6, 1, NULL, 1},
    {"accuracy", "accuracy.csv", "",
     {"--n", "16:4096"},
     {"--n", "16:256", "--fixed-n", "200"},
     66, 2, NULL, 0},
    {"approx", "approx.csv", " (N = 1024, d = 64, 3 seeds)",
     {"--n", "1024", "--min-time", "0.05"},
     {"--n", "128", "--seeds", "2", "--min-time", "0.01"},
     14.4, 2, NULL, 0},
    {"params-sweep", "params.csv", " (D = 64..8192 and the standard models)",
     {NULL},
     {NULL},
     0.1, 0.1, NULL, 0},
    {"block-sweep", "block.csv", " (D = 512)",
     {"--n", "64:8192"},
     {"--n", "64:512", "--d-model", "128", "--min-time", "0.02"},
     34.7, 2, NULL, 1},
    {"complexity", "complexity.csv", " (Table 1: d = 64, N = 128..8192, k = 3, r = 64)",
     {NULL},
     {"--n", "16:1024", "--min-time", "0.02"},
     7.3, 2, NULL, 1},
    {"roofline", "roofline.csv", " (N = 256..16384 x4, d = 32 and 64, float32 and float64)",
     {"--d", "32,64", "--min-time", "0.1"},
     {"--n", "256,1024", "--d", "64", "--min-time", "0.02"},
     161, 8, NULL, 1},
    {"scores", "scores.csv", " (N = 256, d_k = 4..1024, 5 seeds; no timing)",
     {NULL},
     {"--d", "4:64", "--seeds", "2"},
     1.4, 0.2, NULL, 0},
    {"copy-task", "copy_task.csv", " (scaled down: N = 64, 2 layers, D = 32)",
     {"--threads", "2"},
     {"--threads", "1", "--steps", "100"},
     38.9, 4, NULL, 0},
    {"recall", "recall.csv", " (scaled down: N = 32, K = 2..8, D = 16..64)",
     {"--threads", "2"},
     {"--threads", "1", "--steps", "60"},
     101, 17, NULL, 0},
    {"train-speed", "train_speed.csv", " (2048 tokens per step; 1 thread)",
     {"--n", "64:512", "--tokens", "2048", "--min-time", "0.2", "--threads", "1"},
     {"--n", "64,128", "--tokens", "512", "--min-time", "0.02", "--threads", "1"},
     33.3, 3, NULL, 1},
};
// clang-format on
_Static_assert(sizeof results_suite / sizeof results_suite[0] == N_EXPERIMENTS,
               "N_EXPERIMENTS (results.h) is the length of results_suite");

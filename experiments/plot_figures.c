/* plot_figures.c — the table of figures: the scripts of each experiment, the companion
 * files drawn with another's figure, and the setting columns a subtitle shows (plot.h). */
#include "plot.h"

const figure_kind plot_figures[] = {
    {"scaling", {"scaling_time", "scaling_memory", "scaling_gflops", NULL}, 1, {"n", NULL}, "fit"},
    {"scaling_train", {"scaling_train", NULL}, 0, {"n", NULL}, ""},
    {"crossover", {"crossover", NULL}, 1, {"d", NULL}, ""},
    {"decode", {"decode", NULL}, 1, {"t_first", NULL}, ""},
    {"accuracy", {"accuracy_error", "accuracy_distance", NULL}, 0, {"n", NULL}, ""},
    {"approx", {"approx", NULL}, 0, {"flops", NULL}, ""},
    {"params", {"params", NULL}, 0, {"d_model", NULL}, ""},
    {"block", {"block", NULL}, 0, {"n", NULL}, ""},
    {"complexity", {"complexity", NULL}, 0, {"n", NULL}, "fit"},
    {"roofline", {"roofline", NULL}, 0, {"n", "d", "dtype", NULL}, ""},
    {"scores", {"scores", NULL}, 0, {"d_k", NULL}, ""},
    {"dist_scaling", {"dist_scaling", NULL}, 0, {"ranks", "n", NULL}, ""},
    {"copy_task", {"copy_task", NULL}, 0, {"step", NULL}, ""},
    {"recall", {"recall", NULL}, 0, {"pairs", "width", NULL}, ""},
    {"train_speed", {"train_speed", NULL}, 0, {"n", NULL}, ""},
};
_Static_assert(sizeof plot_figures / sizeof plot_figures[0] == N_FIGURES,
               "N_FIGURES (plot.h) is the length of plot_figures");

/* Files drawn with another's figure (given alone they are refused, in a folder skipped). */
const char *const plot_companions[] = {"scaling_fit",    "scaling_train_fit", "crossover_points",
                                       "complexity_fit", "dist_model",        NULL};

const setting plot_settings[] = {
    {"d", "d = %s"},       {"d_k", "d_k = %s"},   {"d_v", "d_v = %s"},
    {"heads", "%s heads"}, {"batch", "batch %s"}, {"d_model", "D = %s"},
    {"d_ff", "d_ff = %s"}, {"tokens", "T = %s"},  {"threads", "%s threads"},
    {"precision", "%s"},   {"dtype", "%s"},       {"kernel_width", "k = %s"},
    {"window", "r = %s"},
};
_Static_assert(sizeof plot_settings / sizeof plot_settings[0] == N_SETTINGS,
               "N_SETTINGS (plot.h) is the length of plot_settings");

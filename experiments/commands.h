/* commands.h — the `linattn` subcommands. Each lives in the file named after it,
 * experiments/<name>.c (a '-' in the name is '_' in the file: params-sweep is
 * params_sweep.c), and provides cmd_<name>(argc, argv) (argv[0] is the subcommand's
 * name) returning the process exit status: 0 success, 1 a failed check or experiment,
 * 2 bad input/usage, and cmd_<name>_help(out), which prints what `linattn help <name>`
 * and `<name> --help` show (the kernel lists in them come from the library's registry). main.c
 * holds the table of them; what they share lives in experiments/common/ (build/libcommand.a). */
#ifndef LA_COMMANDS_H
#define LA_COMMANDS_H

#include <stdio.h>

typedef struct {
    const char *name;
    const char *summary; /* one line for `linattn help` */
    int (*run)(int argc, char **argv);
    void (*help)(FILE *out); /* prints `linattn help <name>` */
} la_command;

#define LA_DECLARE_COMMAND(name)                                                                   \
    int cmd_##name(int argc, char **argv);                                                         \
    void cmd_##name##_help(FILE *out)

LA_DECLARE_COMMAND(attend);
LA_DECLARE_COMMAND(scaling);
LA_DECLARE_COMMAND(decode);
LA_DECLARE_COMMAND(crossover);
LA_DECLARE_COMMAND(accuracy);
LA_DECLARE_COMMAND(approx);
LA_DECLARE_COMMAND(scores);
LA_DECLARE_COMMAND(params_sweep);
LA_DECLARE_COMMAND(block_sweep);
LA_DECLARE_COMMAND(complexity);
LA_DECLARE_COMMAND(roofline);
LA_DECLARE_COMMAND(results);
LA_DECLARE_COMMAND(plot);
LA_DECLARE_COMMAND(bench);
LA_DECLARE_COMMAND(params);
LA_DECLARE_COMMAND(flops);
LA_DECLARE_COMMAND(block);
LA_DECLARE_COMMAND(model);
LA_DECLARE_COMMAND(csv);
LA_DECLARE_COMMAND(train);
LA_DECLARE_COMMAND(generate);
LA_DECLARE_COMMAND(copy_task);
LA_DECLARE_COMMAND(recall);
LA_DECLARE_COMMAND(train_speed);
LA_DECLARE_COMMAND(dist_attend);  /* MPI (make MPI=1): dist_attend.c */
LA_DECLARE_COMMAND(dist_scaling); /* MPI (make MPI=1): dist_scaling.c */

/* The subcommand named name ("params-sweep"), from main.c's table; NULL if none.
 * `linattn results` runs its experiments through it. */
const la_command *la_command_find(const char *name);

#endif

/* dist_scaling.c — `linattn dist-scaling` (placeholder until the experiment lands). */
#include "commands.h"
#include "common/cli.h"

void cmd_dist_scaling_help(FILE *out)
{
    fputs("Distributed scaling experiment (make MPI=1; run under mpirun).\n", out);
}

int cmd_dist_scaling(int argc, char **argv)
{
    (void)argc, (void)argv;
    return cli_fail("dist-scaling", "this linattn was built without MPI: build it with make MPI=1");
}

/* attend.c — STUB: `linattn attend`. */
#include "commands.h"

#include <stdio.h>

const char *const cmd_attend_help = "usage: linattn attend ... (not yet)\n";

int cmd_attend(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "linattn: attend: not implemented yet\n");
    return 2;
}

/*
 * cmd_load.c - placeholder: `ggufmap load` is being written.
 */
#include <stdio.h>

#include "commands.h"
#include "util.h"

int cmd_load(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ggufmap load: not available yet\n");
    return EXIT_USAGE;
}

/*
 * cmd_repack.c - placeholder: `ggufmap repack` is being written.
 */
#include <stdio.h>

#include "commands.h"
#include "util.h"

int cmd_repack(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ggufmap repack: not available yet\n");
    return EXIT_USAGE;
}

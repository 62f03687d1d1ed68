/*
 * cmd_hash.c - placeholder: `ggufmap hash` is being written.
 */
#include <stdio.h>

#include "commands.h"
#include "util.h"

int cmd_hash(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ggufmap hash: not available yet\n");
    return EXIT_USAGE;
}

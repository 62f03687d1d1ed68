/*
 * cmd_verify.c - placeholder: `ggufmap verify` is being written.
 */
#include <stdio.h>

#include "commands.h"
#include "util.h"

int cmd_verify(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "ggufmap verify: not available yet\n");
    return EXIT_USAGE;
}

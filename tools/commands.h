/*
 * commands.h - the subcommands, each one option table and its run function
 * (cli.h).  tools/ggufmap.c lists them.
 */
#ifndef GGUFMAP_TOOLS_COMMANDS_H
#define GGUFMAP_TOOLS_COMMANDS_H

#include "cli.h"

extern const cli_command inspect_command;
extern const cli_command plan_command;
extern const cli_command repack_command;
extern const cli_command hash_command;
extern const cli_command verify_command;
extern const cli_command load_command;
extern const cli_command fit_command;

#endif

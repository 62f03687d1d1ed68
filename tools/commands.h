/*
 * commands.h - one entry point per subcommand; argv[0] is the command name.
 */
#ifndef GGUFMAP_TOOLS_COMMANDS_H
#define GGUFMAP_TOOLS_COMMANDS_H

int cmd_inspect(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_repack(int argc, char **argv);
int cmd_hash(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_fit(int argc, char **argv);

#endif

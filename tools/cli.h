/*
 * cli.h - one option table per command, and everything made from it.
 *
 * A command is a cli_command: its name, operands, a description, and groups
 * of cli_option entries.  From that one table come
 *   - the parser (getopt_long_only: "-ngl 4", "--n-gpu-layers=4", "-o OUT"),
 *     with the same messages everywhere ("-ngl needs a value", "unknown
 *     option '--bogus'", "--json takes no value");
 *   - `ggufmap CMD --help` and `ggufmap help CMD`;
 *   - the man page (`ggufmap help --man`, installed as ggufmap.1);
 *   - the bash completion (`ggufmap completion bash`, installed);
 *   - the usage lines of docs/cli.md (`ggufmap help --usage CMD`).
 * So adding an option is one table entry plus its case in the command's
 * apply function, and the help, the man page, the completion and docs/cli.md
 * cannot drift apart (tests/cli/docs.sh checks that they agree).
 */
#ifndef GGUFMAP_TOOLS_CLI_H
#define GGUFMAP_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Exit statuses, one scheme for every command. */
enum {
    EXIT_OK = 0,        /* done; the models are the same; it fits */
    EXIT_USAGE = 1,     /* the command line is wrong */
    EXIT_BAD_INPUT = 2, /* a file cannot be read or llama.cpp would refuse it; an I/O error */
    EXIT_NO = 3         /* a negative answer: the models differ; it does not fit */
};

typedef struct cli_option {
    int code;             /* what the command's apply function is given; for a one-letter
                             spelling ("-o", "-q") it must be that letter */
    const char *names;    /* every spelling, ", "-separated, the usual one first: "-ngl, --n-gpu-layers" */
    const char *arg;      /* the value's name ("N|all", "FILE"), or NULL for a flag */
    const char *complete; /* completion of the value: words ("cpu metal cuda"), "@file", or NULL */
    const char *help;     /* what it does, one paragraph (wrapped when printed) */
} cli_option;

typedef struct cli_group {
    const char *title;    /* "placement (llama.cpp's options)"; NULL: "options" */
    const cli_option *options;
    size_t n_options;
} cli_group;

#define CLI_GROUP(title, table) {title, table, sizeof table / sizeof table[0]}

typedef struct cli_command {
    const char *name;
    const char *operands;    /* "MODEL", "A B" */
    const char *summary;     /* one line, for `ggufmap --help` */
    const char *description; /* paragraphs, separated by "\n\n"; a line starting with two
                                spaces is an example, printed as it is */
    const cli_group *const *groups;
    size_t n_groups;
    const char *status_ok;   /* what exit status 0 means ("the models are the same") */
    const char *status_bad;  /* what 2 means */
    const char *status_no;   /* what 3 means, or NULL when the command never answers no */
    int (*run)(const struct cli_command *cmd, int argc, char **argv);
} cli_command;

/* Option codes shared by several commands; a command's own codes are small
 * letters or values of its own below 0x1000.  Placement flags use
 * 0x1000-0x10ff (placement_args.h), remote reading 0x1100-0x11ff
 * (model_arg.h). */
enum {
    OPT_HELP = 'h',
    OPT_QUIET = 'q',
    OPT_JSON = 0x2000,
    OPT_PROGRESS,
    OPT_NO_PROGRESS
};

/* --quiet, --json, --progress and --no-progress as a command received them. */
typedef struct cli_common {
    bool quiet, json;
    int progress; /* -1 unless --progress (1) or --no-progress (0) was given */
} cli_common;

/* Applies a shared option's code to c; sets *handled when it was one. */
void cli_common_apply(cli_common *c, int code, bool *handled);

/* Whether to draw a progress line on stderr: --progress or --no-progress
 * when given; otherwise only on a terminal, and not under --quiet. */
bool cli_progress_on(const cli_common *c);

/* Receives each option of the command line with its value (NULL for a
 * flag).  Returns EXIT_OK, or EXIT_USAGE after cli_usage_error said why. */
typedef int (*cli_apply_fn)(void *ctx, int code, const char *value);

/* Parses argv (argv[0] is the command's name) by cmd's table, giving every
 * option to apply, and checks that n_operands operands follow (named as in
 * cmd->operands).  --help prints the command's help.  Returns EXIT_OK with
 * *first_operand set to the index of the first operand, CLI_HELPED after
 * --help, or EXIT_USAGE after saying what is wrong. */
enum { CLI_HELPED = -1 };
/* n_operands for a command that checks its operands itself (model_arg_take). */
enum { CLI_ANY_OPERANDS = -1 };
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_apply_fn apply, void *ctx, int n_operands,
              int *first_operand);

/* The exit status for what cli_parse returned when it was not EXIT_OK:
 * 0 after --help (or 2 when the help could not be written), else it. */
int cli_parse_status(const cli_command *cmd, int rc);

/* "ggufmap CMD: MESSAGE" and a hint to --help on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "ggufmap CMD: MESSAGE" on stderr with the message escaped (it may quote a
 * file's names); returns status. */
int cli_fail(const char *cmd, int status, const char *message);

/* Flushes stdout; when that or an earlier write failed (a full disk, a
 * closed pipe, > /dev/full) says so and returns EXIT_BAD_INPUT, else rc. */
int cli_finish_stdout(const char *cmd, int rc);

/* Whether to colour output for fd: --color always or never when given,
 * else a terminal that is not "dumb" and no NO_COLOR in the environment. */
bool cli_color(const char *mode, int fd);

/* The help of a command, its usage lines (wrapped to width), and for every
 * command the man page and the bash completion script. */
void cli_print_help(FILE *out, const cli_command *cmd);
void cli_print_usage(FILE *out, const cli_command *cmd, const char *prefix);
void cli_print_man(FILE *out, const cli_command *const *cmds, size_t n, const char *version);
void cli_print_bash_completion(FILE *out, const cli_command *const *cmds, size_t n);

#endif

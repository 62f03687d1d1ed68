/*
 * ggufmap_web.c - the entry of the browser build (make web).  The page's
 * worker (web/worker.js) runs `ggufmap plan` and `ggufmap fit` here exactly
 * as the command line runs them: the same option tables and parsers
 * (tools/cmd_plan.c, tools/cmd_fit.c, placement_args.c, model_arg.c), the
 * same library, the same JSON documents (ggufmap.plan/1, ggufmap.fit/1) on
 * stdout and the same messages on stderr.  The page only chooses the
 * arguments and renders what comes back, so its figures are the command
 * line's, to the byte.  Only the bytes come another way: the browser
 * fetches them (src/byte_source_web.c).
 *
 * Data structure.  The commands the page runs, a table as in
 * tools/ggufmap.c (those that read tensor data, hash and write files stay
 * out of the browser).
 * Workload.  One command per call, one call at a time (the worker queues
 * them); a call may suspend while the browser fetches bytes (Asyncify).
 */
#define _GNU_SOURCE /* musl's optreset: a fresh getopt for every command */
#include <emscripten.h>
#include <getopt.h>
#include <string.h>

#include "commands.h"
#include "ggufmap/ggufmap.h"
#include "internal.h"
#include "repack_internal.h"

/* The llama.cpp release the library models: the text reports name it
 * ("llama.cpp v0.5.0 would print:"); tests/web checks that the page's
 * equals theirs. */
#define MODELLED_LLAMA_CPP "v0.5.0"

static const cli_command *const commands[] = {&plan_command, &fit_command};

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i]->name) == 0) return commands[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* What the worker calls                                                     */
/* ------------------------------------------------------------------------ */

int ggufmap_web_run(int argc, char **argv);
const char *ggufmap_web_choices(const char *command, const char *option);
const char *ggufmap_web_version(void);

/* Runs `ggufmap ARGV...` (argv[0] is the command: plan or fit) and returns
 * its exit status (cli.h); its output went to stdout and stderr. */
EMSCRIPTEN_KEEPALIVE int ggufmap_web_run(int argc, char **argv) {
    const cli_command *cmd = argc > 0 ? find_command(argv[0]) : NULL;
    if (!cmd) return cli_usage_error(argc > 0 ? argv[0] : "", "the page runs plan and fit only");
    optreset = 1;
    return cmd->run(cmd, argc, argv);
}

/* True when option (e.g. "-ctk") is one of the ", "-separated spellings in
 * names. */
static bool spelled(const char *names, const char *option) {
    size_t n = strlen(option);
    for (const char *s = names; *s; s += strspn(s, ", ")) {
        size_t k = strcspn(s, ", ");
        if (k == n && strncmp(s, option, n) == 0) return true;
        s += k;
    }
    return false;
}

/* The values the command line completes for command's option, space-
 * separated ("f32 f16 bf16 q8_0 ..."), from its option table: the page's
 * choices cannot drift from what the command accepts.  "" when it has none. */
EMSCRIPTEN_KEEPALIVE const char *ggufmap_web_choices(const char *command, const char *option) {
    const cli_command *cmd = find_command(command);
    for (size_t g = 0; cmd && g < cmd->n_groups; g++)
        for (size_t i = 0; i < cmd->groups[g]->n_options; i++) {
            const cli_option *o = &cmd->groups[g]->options[i];
            if (spelled(o->names, option)) return o->complete && o->complete[0] != '@' ? o->complete : "";
        }
    return "";
}

/* "ggufmap 0.1.0, modelling llama.cpp v0.5.0". */
EMSCRIPTEN_KEEPALIVE const char *ggufmap_web_version(void) {
    return "ggufmap " GGUFMAP_VERSION_STRING ", modelling llama.cpp " MODELLED_LLAMA_CPP;
}

/* ------------------------------------------------------------------------ */
/* What the browser does not do                                              */
/* ------------------------------------------------------------------------ */

/* repack's copy engine (src/repack_copy.c) is left out of the browser: plan
 * runs repack's dry run for its advice, which copies nothing. */
int rp_copy_all(rp_copy *c, ggufmap_error *err) {
    (void)c;
    return gm_fail(err, GGUFMAP_EINVAL, "the page writes no models: run ggufmap repack on the command line");
}

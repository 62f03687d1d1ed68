/*
 * model_arg.h - the MODEL argument of the commands that read headers only
 * (inspect, plan, fit): a local path, an http(s):// URL, an
 * hf://OWNER/REPO[@REVISION]/PATH name, or `-hf OWNER/REPO[:QUANT]`, with the
 * options of remote reading.  One call opens the model whichever it is.
 *
 * A command adds model_arg_group to its option table (cli.h), hands each
 * parsed option to model_arg_apply, takes MODEL with model_arg_take (after
 * cli_parse with CLI_ANY_OPERANDS), and opens it with model_arg_open.
 */
#ifndef GGUFMAP_TOOLS_MODEL_ARG_H
#define GGUFMAP_TOOLS_MODEL_ARG_H

#include <stdbool.h>
#include <stdio.h>

#include "ggufmap/ggufmap.h"
#include "cli.h"

/* Option codes 0x1100-0x11ff (cli.h: 0x1000-0x10ff are the placement flags). */
enum {
    OPT_HF = 0x1100, OPT_HF_TOKEN, OPT_CACHE, OPT_NO_CACHE, OPT_OFFLINE, OPT_CACERT, OPT_TIMEOUT, OPT_RETRIES,
    OPT_MAX_HEADER, OPT_VERBOSE
};

/* The remote-reading options, for a command's table. */
extern const cli_group model_arg_group;

typedef struct model_arg {
    const char *sub;          /* the command, for messages */
    const char *model;        /* MODEL as given, or NULL with -hf */
    const char *hf_repo;      /* -hf OWNER/REPO[:QUANT] */
    const char *hf_token;     /* --hf-token, else $HF_TOKEN */
    const char *cache_dir;    /* --cache, else the default below; NULL with --no-cache */
    const char *cacert;       /* --cacert, else $CURL_CA_BUNDLE */
    bool offline, verbose;
    ggufmap_remote_opts opts; /* timeouts, retries, limits */
    char default_cache[4096]; /* $XDG_CACHE_HOME/ggufmap or ~/.cache/ggufmap */
    ggufmap_remote *remote;   /* the session of a remote model */
    char *picked;             /* -hf's pick: hf://OWNER/REPO@COMMIT/PATH */
} model_arg;

/* Sets the defaults for command sub. */
void model_arg_init(model_arg *a, const char *sub);
/* Ends the remote session, if any.  The model must be closed first or
 * after: it does not need the session. */
void model_arg_free(model_arg *a);

/* When code is one of model_arg's options, applies it and sets *handled.
 * Returns EXIT_OK, or EXIT_USAGE after printing the error. */
int model_arg_apply(model_arg *a, int code, const char *arg, bool *handled);

/* Takes MODEL from argv[first..argc): exactly one, or none with -hf.
 * Returns EXIT_OK, or EXIT_USAGE after printing the error. */
int model_arg_take(model_arg *a, int argc, char **argv, int first);

/* Opens the model (flags: GGUFMAP_OPEN_*): locally, or over HTTP.  Prints
 * what fails as "ggufmap SUB: ..." and returns EXIT_BAD_INPUT (EXIT_USAGE
 * for a malformed name); EXIT_OK with *out set otherwise.  --verbose logs
 * every request and, once opened, what each shard cost. */
int model_arg_open(model_arg *a, unsigned flags, ggufmap_model **out);


#endif

/*
 * cmd_inspect.c - `ggufmap inspect MODEL`: what a model holds and where.
 *
 * Text: a summary (architecture, name, shards with their sizes, alignment,
 * tensors and bytes per type), then one row per tensor.  --json: the schema
 * documented in docs/json.md ("ggufmap.inspect/1"); every size in bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "model_arg.h"

enum { OPT_FULL = 0x100, OPT_METADATA, OPT_NO_TENSORS, OPT_LENIENT };

static const cli_option inspect_options[] = {
    {OPT_JSON, "--json", NULL, NULL, "machine-readable output (schema ggufmap.inspect/1, docs/json.md)"},
    {OPT_FULL, "--full", NULL, NULL, "do not shorten long arrays (a tokenizer's tokens) or strings"},
    {OPT_METADATA, "--metadata", NULL, NULL, "also list the key-value pairs in the text"},
    {OPT_NO_TENSORS, "--no-tensors", NULL, NULL, "leave out the per-tensor rows"},
    {OPT_LENIENT, "--lenient", NULL, NULL,
     "list tensors of unknown ggml types, sized from the next tensor's offset, instead of refusing the file"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing: only check that llama.cpp would read the model"},
};
static const cli_group inspect_group = CLI_GROUP(NULL, inspect_options);
static const cli_group *const inspect_groups[] = {&inspect_group, &model_arg_group};

typedef struct inspect_args {
    cli_common common;
    model_arg model;
    unsigned flags;
    bool lenient;
} inspect_args;

static int apply(void *ctx, int code, const char *value) {
    inspect_args *a = ctx;
    bool handled;
    int rc = model_arg_apply(&a->model, code, value, &handled);
    if (handled) return rc;
    cli_common_apply(&a->common, code, &handled);
    if (code == OPT_JSON) a->flags |= GGUFMAP_REPORT_JSON;
    if (code == OPT_FULL) a->flags |= GGUFMAP_REPORT_FULL;
    if (code == OPT_METADATA) a->flags |= GGUFMAP_REPORT_METADATA;
    if (code == OPT_NO_TENSORS) a->flags |= GGUFMAP_REPORT_NO_TENSORS;
    if (code == OPT_LENIENT) a->lenient = true;
    return EXIT_OK;
}

static int run(const cli_command *cmd, int argc, char **argv) {
    inspect_args a = {.common = {.progress = -1}};
    model_arg_init(&a.model, cmd->name);
    int first, rc = cli_parse(cmd, argc, argv, apply, &a, CLI_ANY_OPERANDS, &first);
    if (rc == EXIT_OK) rc = model_arg_take(&a.model, argc, argv, first);
    ggufmap_model *m = NULL;
    if (rc == EXIT_OK) rc = model_arg_open(&a.model, a.lenient ? GGUFMAP_OPEN_LENIENT : 0, &m);
    if (rc == EXIT_OK && !a.common.quiet) ggufmap_report_inspect(stdout, m, a.flags);
    ggufmap_model_free(m);
    model_arg_free(&a.model);
    return rc == EXIT_OK ? cli_finish_stdout(cmd->name, EXIT_OK) : cli_parse_status(cmd, rc);
}

const cli_command inspect_command = {
    .name = "inspect",
    .operands = "MODEL",
    .summary = "list a model's shards, metadata and tensors (text or JSON)",
    .description =
        "Reads MODEL (any shard of a split model: every shard is found and opened; on a server, only the header "
        "bytes of each shard) as llama.cpp v0.5.0 reads it, "
        "and prints a summary (architecture, name, shards, alignment, tensors and bytes per type), then one row "
        "per tensor: index, shard (numbered from 1, as the file names number them), name, type, shape, absolute "
        "file offset, bytes.  Names and values from the file are escaped: control bytes never reach the "
        "terminal.",
    .groups = inspect_groups,
    .n_groups = 2,
    .status_ok = "done",
    .status_bad = "the model cannot be read or llama.cpp would refuse it (the message names the file, offset and "
                  "key or tensor), or the output cannot be written",
    .run = run,
};

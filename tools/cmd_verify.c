/*
 * cmd_verify.c - `ggufmap verify A B`: do two models hold the same tensors
 * and metadata, whatever their tensor order and sharding?
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "json.h"
#include "util.h"

static const cli_option verify_options[] = {
    {OPT_JSON, "--json", NULL, NULL, "the ggufmap.verify/1 document (docs/json.md)"},
    {OPT_PROGRESS, "--progress", NULL, NULL, "a progress line on stderr even when it is not a terminal"},
    {OPT_NO_PROGRESS, "--no-progress", NULL, NULL, "no progress line, even on a terminal"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing; the exit status says it"},
};
static const cli_group verify_group = CLI_GROUP(NULL, verify_options);
static const cli_group *const verify_groups[] = {&verify_group};

static int apply(void *ctx, int code, const char *value) {
    bool handled;
    (void)value;
    cli_common_apply(ctx, code, &handled);
    return EXIT_OK;
}

static void print_json(const char *a_path, const char *b_path, const ggufmap_model *a, bool same, const char *diff) {
    json j;
    json_init(&j, stdout);
    json_begin_object(&j);
    json_key(&j, "schema"), json_string(&j, "ggufmap.verify/1");
    json_key(&j, "a"), json_string(&j, a_path);
    json_key(&j, "b"), json_string(&j, b_path);
    json_key(&j, "same"), json_bool(&j, same);
    json_key(&j, "difference");
    same ? json_null(&j) : json_string(&j, diff);
    json_key(&j, "n_tensors"), json_int(&j, ggufmap_model_n_tensors(a));
    json_key(&j, "tensor_bytes"), json_uint(&j, ggufmap_model_tensor_bytes(a));
    json_end_object(&j);
    json_finish(&j);
}

static void print_text(const ggufmap_model *a, bool same, const char *diff) {
    char bytes[32];
    if (same) {
        printf("same: %lld tensors, %s, metadata equal\n", (long long)ggufmap_model_n_tensors(a),
               ggufmap_format_bytes(bytes, sizeof bytes, ggufmap_model_tensor_bytes(a)));
        return;
    }
    printf("differ: ");
    ggufmap_fputs_escaped(stdout, diff, strlen(diff));
    putchar('\n');
}

static int run(const cli_command *cmd, int argc, char **argv) {
    cli_common common = {.progress = -1};
    int first, rc = cli_parse(cmd, argc, argv, apply, &common, 2, &first);
    if (rc != EXIT_OK) return cli_parse_status(cmd, rc);
    ggufmap_model *a = NULL, *b = NULL;
    ggufmap_error err;
    bool same = false;
    char diff[1024];
    progress_line line = progress_start("verify");
    if (ggufmap_model_open(argv[first], 0, &a, &err) != GGUFMAP_OK ||
        ggufmap_model_open(argv[first + 1], 0, &b, &err) != GGUFMAP_OK ||
        ggufmap_models_compare_progress(a, b, 0, cli_progress_on(&common) ? progress_show : NULL, &line, &same, diff,
                                        sizeof diff, &err) != GGUFMAP_OK) {
        rc = cli_fail(cmd->name, EXIT_BAD_INPUT, err.message);
    } else {
        if (!common.quiet && common.json) print_json(argv[first], argv[first + 1], a, same, diff);
        else if (!common.quiet) print_text(a, same, diff);
        rc = same ? EXIT_OK : EXIT_NO;
    }
    ggufmap_model_free(a);
    ggufmap_model_free(b);
    return cli_finish_stdout(cmd->name, rc);
}

const cli_command verify_command = {
    .name = "verify",
    .operands = "A B",
    .summary = "do two models hold the same tensors and metadata?",
    .description =
        "Compares two models (any shard of each): the metadata of the first shard without the split.* keys (same "
        "keys, types and bytes, in any order), the tensor names, types and shapes, and every tensor's bytes "
        "(SHA-256; two ranges that are both holes of sparse files are equal without reading).  Tensor order, shard "
        "count, alignment padding and file layout may differ.  Prints 'same' or the first difference, with both "
        "values:\n\n"
        "  differ: key 'general.name': values differ: \"Qwen3\" vs \"Qwen3.5\"\n"
        "  differ: tensor 'blk.0.attn_q.weight': data differs (sparse digest ... vs ...)",
    .groups = verify_groups,
    .n_groups = 1,
    .status_ok = "the models are the same",
    .status_bad = "a model cannot be read, or the output cannot be written",
    .status_no = "the models differ",
    .run = run,
};

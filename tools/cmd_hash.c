/*
 * cmd_hash.c - `ggufmap hash MODEL`: one SHA-256 line per tensor in the
 * layout of llama.cpp's gguf-py/gguf/scripts/gguf_hash.py, the whole-data
 * sha256 line gguf_hash.py prints, and the order- and sharding-free model
 * digest (defined in ggufmap/hash.h); or the same as JSON.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "json.h"
#include "util.h"

enum { OPT_NO_LAYER = 0x100, OPT_DIGEST_ONLY };

static const cli_option hash_options[] = {
    {OPT_NO_LAYER, "--no-layer", NULL, NULL, "no per-tensor lines (as gguf_hash.py --no-layer)"},
    {OPT_DIGEST_ONLY, "--digest-only", NULL, NULL, "only the digest (tensors hashed by several threads)"},
    {OPT_JSON, "--json", NULL, NULL, "the ggufmap.hash/1 document (docs/json.md): every tensor's sha256 and the digest"},
    {OPT_PROGRESS, "--progress", NULL, NULL, "a progress line on stderr even when it is not a terminal"},
    {OPT_NO_PROGRESS, "--no-progress", NULL, NULL, "no progress line, even on a terminal"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing: only read and hash every tensor (exit status 2 on a read error)"},
};
static const cli_group hash_group = CLI_GROUP(NULL, hash_options);
static const cli_group *const hash_groups[] = {&hash_group};

typedef struct hash_args {
    cli_common common;
    bool no_layer, digest_only;
} hash_args;

static int apply(void *ctx, int code, const char *value) {
    hash_args *a = ctx;
    bool handled;
    (void)value;
    cli_common_apply(&a->common, code, &handled);
    if (code == OPT_NO_LAYER) a->no_layer = true;
    if (code == OPT_DIGEST_ONLY) a->digest_only = true;
    return EXIT_OK;
}

/* gguf_hash.py's lines; names escaped (a newline in a name would forge a line). */
static void print_lines(const hash_args *a, const char *path, const ggufmap_model *m, const ggufmap_model_hash *h) {
    char hex[65];
    for (int64_t i = 0; i < h->n_tensors && !a->no_layer && !a->digest_only; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        if (ggufmap_hash_skipped_name(t->name, t->name_len)) continue;
        printf("sha256    %s  ", ggufmap_sha256_hex(h->tensors[i].sha256, hex));
        ggufmap_fputs_escaped(stdout, path, strlen(path));
        putchar(':');
        ggufmap_fputs_escaped(stdout, t->name, t->name_len);
        putchar('\n');
    }
    if (!a->digest_only) {
        printf("sha256    %s  ", ggufmap_sha256_hex(h->stream, hex));
        ggufmap_fputs_escaped(stdout, path, strlen(path));
        putchar('\n');
    }
    printf("digest    %s  ", ggufmap_sha256_hex(h->digest, hex));
    ggufmap_fputs_escaped(stdout, path, strlen(path));
    putchar('\n');
}

static void print_json(const hash_args *a, const char *path, const ggufmap_model *m, const ggufmap_model_hash *h) {
    char hex[65];
    json j;
    json_init(&j, stdout);
    json_begin_object(&j);
    json_key(&j, "schema"), json_string(&j, "ggufmap.hash/1");
    json_key(&j, "model"), json_string(&j, path);
    json_key(&j, "digest"), json_string(&j, ggufmap_sha256_hex(h->digest, hex));
    json_key(&j, "sha256");
    a->digest_only ? json_null(&j) : json_string(&j, ggufmap_sha256_hex(h->stream, hex));
    json_key(&j, "tensors");
    json_begin_array(&j);
    for (int64_t i = 0; i < h->n_tensors && !a->no_layer; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        json_begin_object(&j);
        json_key(&j, "name"), json_string_n(&j, t->name, t->name_len);
        json_key(&j, "sha256"), json_string(&j, ggufmap_sha256_hex(h->tensors[i].sha256, hex));
        json_key(&j, "in_sha256"), json_bool(&j, !ggufmap_hash_skipped_name(t->name, t->name_len));
        json_end_object(&j);
    }
    json_end_array(&j);
    json_end_object(&j);
    json_finish(&j);
}

static int run(const cli_command *cmd, int argc, char **argv) {
    hash_args a = {.common = {.progress = -1}};
    int first, rc = cli_parse(cmd, argc, argv, apply, &a, 1, &first);
    if (rc != EXIT_OK) return cli_parse_status(cmd, rc);
    const char *path = argv[first];
    ggufmap_model *m = NULL;
    ggufmap_model_hash *h = NULL;
    ggufmap_error err;
    if (ggufmap_model_open(path, 0, &m, &err) != GGUFMAP_OK) return cli_fail(cmd->name, EXIT_BAD_INPUT, err.message);
    progress_line line = progress_start("hash");
    bool show = cli_progress_on(&a.common);
    unsigned flags = a.digest_only ? 0 : GGUFMAP_HASH_STREAM;
    if (ggufmap_model_hash_build(m, flags, 0, show ? progress_show : NULL, &line, &h, &err) != GGUFMAP_OK) {
        rc = cli_fail(cmd->name, EXIT_BAD_INPUT, err.message);
    } else if (!a.common.quiet) {
        if (a.common.json) print_json(&a, path, m, h);
        else print_lines(&a, path, m, h);
    }
    ggufmap_model_hash_free(h);
    ggufmap_model_free(m);
    return cli_finish_stdout(cmd->name, rc);
}

const cli_command hash_command = {
    .name = "hash",
    .operands = "MODEL",
    .summary = "SHA-256 of every tensor and an order-free model digest",
    .description =
        "SHA-256 of every tensor's data of MODEL (any shard of a split model), in model order, as llama.cpp's "
        "gguf_hash.py prints them:\n\n"
        "  sha256    <hex>  MODEL:<tensor name>       one per tensor\n"
        "  sha256    <hex>  MODEL                     all tensor data in model order\n"
        "  digest    <hex>  MODEL                     the model digest\n\n"
        "The per-tensor lines equal gguf_hash.py's; like it, the whole-data line leaves out names ending "
        ".attention.masked_bias, .attention.bias and .rotary_emb.inv_freq, and depends on the tensor order.  The "
        "digest does not: it covers the metadata without the split.* keys and every tensor's name, type, shape and "
        "SHA-256, sorted (docs/repack.md), so a repacked or resharded model keeps it.  Names are escaped: control "
        "bytes never reach the terminal.",
    .groups = hash_groups,
    .n_groups = 1,
    .status_ok = "done",
    .status_bad = "the model cannot be read, or the output cannot be written",
    .run = run,
};

/*
 * cmd_inspect.c - `ggufmap inspect MODEL`: what a model holds and where.
 *
 * Text: a summary (architecture, name, shards with their sizes, alignment,
 * tensors and bytes per type), then one row per tensor.  --json: the schema
 * documented in README.md ("ggufmap.inspect/1"); every size in bytes.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "model_arg.h"
#include "util.h"


static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap inspect MODEL [--json] [--full] [--metadata] [--no-tensors] [--lenient]\n"
            "                       [remote options]\n"
            "\n"
            "Reads MODEL (any shard of a split model: every shard is found and opened)\n"
            "as llama.cpp v0.5.0 reads it, and prints a summary (architecture, name,\n"
            "shards, alignment, tensors and bytes per type), then one row per tensor:\n"
            "index, shard, name, type, shape, absolute file offset, bytes.  A remote\n"
            "MODEL costs only the header bytes of each shard.\n"
            "\n"
            "  --json        machine-readable output (schema ggufmap.inspect/1, see README)\n"
            "  --full        do not shorten long arrays (e.g. a tokenizer's tokens)\n"
            "  --metadata    also list the key-value pairs in the text output\n"
            "  --no-tensors  leave out the per-tensor rows\n"
            "  --lenient     list tensors of unknown ggml types, sized from the next\n"
            "                tensor's offset, instead of refusing the file\n"
            "  -h, --help    this text\n"
            "\n");
    model_arg_help(out);
    fprintf(out,
            "\n"
            "exit status: 0 done, 1 usage error, 2 the model cannot be read or llama.cpp\n"
            "would refuse it (the message names the file, offset and key or tensor)\n");
}

/* ------------------------------------------------------------------------ */

int cmd_inspect(int argc, char **argv) {
    static const struct option own[] = {
        {"json", no_argument, NULL, 'j'},     {"full", no_argument, NULL, 'f'},
        {"lenient", no_argument, NULL, 'l'},  {"metadata", no_argument, NULL, 'm'},
        {"no-tensors", no_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
    };
    struct option longopts[32];
    if (model_arg_longopts(longopts, 32, own, sizeof own / sizeof own[0]) < 0) return EXIT_USAGE; /* table too small */
    model_arg ma;
    model_arg_init(&ma, "inspect");
    unsigned flags = 0;
    bool lenient = false;
    int c, rc;
    optind = 1;
    opterr = 0;
    /* Long options with one dash too, for llama.cpp's -hf. */
    while ((c = getopt_long_only(argc, argv, "h", longopts, NULL)) != -1) {
        bool handled;
        if ((rc = model_arg_apply(&ma, c, optarg, &handled)) != EXIT_OK) return rc;
        if (handled) continue;
        switch (c) {
        case 'j': flags |= GGUFMAP_REPORT_JSON; break;
        case 'f': flags |= GGUFMAP_REPORT_FULL; break;
        case 'l': lenient = true; break;
        case 'm': flags |= GGUFMAP_REPORT_METADATA; break;
        case 'n': flags |= GGUFMAP_REPORT_NO_TENSORS; break;
        case 'h': help(stdout); return EXIT_OK;
        default: return usage_error("inspect", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if ((rc = model_arg_take(&ma, argc, argv, optind)) != EXIT_OK) return rc;
    ggufmap_model *m;
    rc = model_arg_open(&ma, lenient ? GGUFMAP_OPEN_LENIENT : 0, &m);
    model_arg_free(&ma);
    if (rc != EXIT_OK) return rc;
    ggufmap_report_inspect(stdout, m, flags);
    ggufmap_model_close(m);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("ggufmap inspect: stdout");
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

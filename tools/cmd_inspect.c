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
#include "util.h"


static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap inspect MODEL [--json] [--full] [--metadata] [--no-tensors] [--lenient]\n"
            "\n"
            "Reads MODEL (any shard of a split model: every shard is found and opened)\n"
            "as llama.cpp v0.5.0 reads it, and prints a summary (architecture, name,\n"
            "shards, alignment, tensors and bytes per type), then one row per tensor:\n"
            "index, shard, name, type, shape, absolute file offset, bytes.\n"
            "\n"
            "  --json        machine-readable output (schema ggufmap.inspect/1, see README)\n"
            "  --full        do not shorten long arrays (e.g. a tokenizer's tokens)\n"
            "  --metadata    also list the key-value pairs in the text output\n"
            "  --no-tensors  leave out the per-tensor rows\n"
            "  --lenient     list tensors of unknown ggml types, sized from the next\n"
            "                tensor's offset, instead of refusing the file\n"
            "  -h, --help    this text\n"
            "\n"
            "exit status: 0 done, 1 usage error, 2 the model cannot be read or llama.cpp\n"
            "would refuse it (the message names the file, offset and key or tensor)\n");
}

/* ------------------------------------------------------------------------ */

int cmd_inspect(int argc, char **argv) {
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},     {"full", no_argument, NULL, 'f'},
        {"lenient", no_argument, NULL, 'l'},  {"metadata", no_argument, NULL, 'm'},
        {"no-tensors", no_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    unsigned flags = 0;
    bool lenient = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
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
    if (optind != argc - 1)
        return usage_error("inspect", optind == argc ? "no MODEL given" : "one MODEL expected, got %d",
                           argc - optind);
    ggufmap_model *m;
    ggufmap_error err;
    if (ggufmap_model_open(argv[optind], lenient ? GGUFMAP_OPEN_LENIENT : 0, &m, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap inspect: %s\n", err.message);
        return EXIT_BAD_INPUT;
    }
    ggufmap_report_inspect(stdout, m, flags);
    ggufmap_model_close(m);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("ggufmap inspect: stdout");
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

/*
 * cmd_verify.c - `ggufmap verify A B`: do two models hold the same tensors
 * and metadata, whatever their tensor order and sharding?
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "ggufmap/hash.h"
#include "commands.h"
#include "util.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap verify A B [--quiet]\n"
            "\n"
            "Compares two models (any shard of each): the metadata of the first shard\n"
            "without the split.* keys (same keys, types and bytes, in any order), the\n"
            "tensor names, types and shapes, and every tensor's bytes (SHA-256; two\n"
            "ranges that are both holes of sparse files are equal without reading).\n"
            "Tensor order, shard count, alignment padding and file layout may differ.\n"
            "Prints 'same' or the first difference, e.g.\n"
            "  differ: tensor 'blk.0.attn_q.weight': data differs (sha256 … vs …)\n"
            "\n"
            "  -q, --quiet   print nothing; the exit status says it\n"
            "  -h, --help    this text\n"
            "\n"
            "exit status: 0 same, 1 different (or a usage error), 2 a model cannot be read\n");
}

int cmd_verify(int argc, char **argv) {
    static const struct option longopts[] = {
        {"quiet", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, "hq", longopts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = true; break;
        case 'h': help(stdout); return EXIT_OK;
        default: return usage_error("verify", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 2) return usage_error("verify", "two models expected, got %d", argc - optind);
    ggufmap_model *a = NULL, *b = NULL;
    ggufmap_error err;
    int rc = EXIT_BAD_INPUT;
    if (ggufmap_model_open(argv[optind], 0, &a, &err) != GGUFMAP_OK ||
        ggufmap_model_open(argv[optind + 1], 0, &b, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap verify: %s\n", err.message);
        goto done;
    }
    bool same = false;
    char diff[1024];
    if (ggufmap_models_compare(a, b, 0, &same, diff, sizeof diff, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap verify: %s\n", err.message);
        goto done;
    }
    if (!quiet) {
        if (same)
            printf("same: %lld tensors, %llu bytes, metadata equal\n", (long long)ggufmap_model_n_tensors(a),
                   (unsigned long long)ggufmap_model_tensor_bytes(a));
        else
            printf("differ: %s\n", diff);
    }
    rc = same ? EXIT_OK : 1;
    if (fflush(stdout) != 0 || ferror(stdout)) rc = EXIT_BAD_INPUT;
done:
    ggufmap_model_close(a);
    ggufmap_model_close(b);
    return rc;
}

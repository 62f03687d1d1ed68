/*
 * cmd_hash.c - `ggufmap hash MODEL`: one SHA-256 line per tensor in the
 * layout of llama.cpp's gguf-py/gguf/scripts/gguf_hash.py, the whole-data
 * sha256 line gguf_hash.py prints, and the order- and sharding-free model
 * digest (defined in ggufmap/hash.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"
#include "ggufmap/hash.h"
#include "commands.h"
#include "util.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap hash MODEL [--no-layer] [--digest-only] [--progress]\n"
            "\n"
            "SHA-256 of every tensor's data of MODEL (any shard of a split model), in\n"
            "model order, as llama.cpp's gguf_hash.py prints them:\n"
            "\n"
            "  sha256    <hex>  MODEL:<tensor name>       one per tensor\n"
            "  sha256    <hex>  MODEL                     all tensor data in model order\n"
            "  digest    <hex>  MODEL                     the model digest\n"
            "\n"
            "The per-tensor lines equal gguf_hash.py's; like it, the whole-data line\n"
            "leaves out names ending .attention.masked_bias, .attention.bias and\n"
            ".rotary_emb.inv_freq, and depends on the tensor order.  The digest does\n"
            "not: it covers the metadata without the split.* keys and every tensor's\n"
            "name, type, shape and SHA-256, sorted (docs/repack.md), so a repacked or\n"
            "resharded model keeps it.\n"
            "\n"
            "  --no-layer      no per-tensor lines (as gguf_hash.py --no-layer)\n"
            "  --digest-only   only the digest line (hashed by several threads)\n"
            "  --progress      a progress line on stderr\n"
            "  -h, --help      this text\n"
            "\n"
            "exit status: 0 done, 1 usage error, 2 the model cannot be read\n");
}

int cmd_hash(int argc, char **argv) {
    static const struct option longopts[] = {
        {"no-layer", no_argument, NULL, 'l'}, {"digest-only", no_argument, NULL, 'd'},
        {"progress", no_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    bool no_layer = false, digest_only = false, show = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': no_layer = true; break;
        case 'd': digest_only = true; break;
        case 'p': show = true; break;
        case 'h': help(stdout); return EXIT_OK;
        default: return usage_error("hash", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_error("hash", optind == argc ? "no MODEL given" : "one MODEL expected, got %d", argc - optind);
    const char *path = argv[optind];
    ggufmap_model *m = NULL;
    ggufmap_model_hash *h = NULL;
    ggufmap_error err;
    int rc = EXIT_OK;
    if (ggufmap_model_open(path, 0, &m, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap hash: %s\n", err.message);
        return EXIT_BAD_INPUT;
    }
    progress_line pl = {.label = "hash", .tty = isatty(STDERR_FILENO) != 0};
    if (ggufmap_hash_model(m, digest_only ? 0 : GGUFMAP_HASH_STREAM, 0, show ? progress_show : NULL, &pl, &h, &err) !=
        GGUFMAP_OK) {
        fprintf(stderr, "ggufmap hash: %s\n", err.message);
        rc = EXIT_BAD_INPUT;
        goto done;
    }
    char hex[65];
    for (int64_t i = 0; i < h->n_tensors && !no_layer && !digest_only; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        if (ggufmap_hash_skipped_name(t->name, t->name_len)) continue;
        printf("sha256    %s  %s:%.*s\n", ggufmap_sha256_hex(h->tensors[i].sha256, hex), path, (int)t->name_len, t->name);
    }
    if (!digest_only) printf("sha256    %s  %s\n", ggufmap_sha256_hex(h->stream, hex), path);
    printf("digest    %s  %s\n", ggufmap_sha256_hex(h->digest, hex), path);
    if (fflush(stdout) != 0 || ferror(stdout)) rc = EXIT_BAD_INPUT;
done:
    ggufmap_model_hash_free(h);
    ggufmap_model_close(m);
    return rc;
}

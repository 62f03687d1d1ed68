/*
 * make_hostile.c - ggufmap-hostile: small files that once made repack
 * misbehave (issue 13), written with the library's writer.
 *
 *   ggufmap-hostile one-tensor NAME OUT
 *       a model of one f32 tensor of 8 elements called NAME and no keys:
 *       with NAME blk.999999.x it is 128 bytes and names a layer a million
 *       layers up (repack once planned a million placements for it);
 *   ggufmap-hostile nul-keys IN OUT
 *       IN with three more pairs whose keys hold a NUL byte
 *       ("test.nul\0key", "tokenizer.ggml.model\0x", "a\0b\0c"), which
 *       ggml keeps whole; the tensors are copied from IN.
 *
 * Exit status 0, or 2 with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"

static int fail(const char *what, const ggufmap_error *err) {
    fprintf(stderr, "ggufmap-hostile: %s%s%s\n", what, err ? ": " : "", err ? err->message : "");
    return 2;
}

/* A model of n f32 tensors of 8 elements, the i-th named by fmt with i. */
static int tensors(const char *fmt, long n, const char *out) {
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    static const float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t ne[1] = {8};
    ggufmap_data d = {.kind = GGUFMAP_DATA_BUFFER, .buffer = data};
    ggufmap_error err;
    int rc = w ? 0 : fail("out of memory", NULL);
    for (long i = 0; i < n && !rc; i++) {
        char name[GGUFMAP_MAX_NAME];
        snprintf(name, sizeof name, fmt, i);
        if (ggufmap_writer_add_tensor(w, name, 1, ne, 0, &d)) rc = fail("cannot add a tensor", NULL);
    }
    if (!rc && ggufmap_writer_write(w, out, 0, &err)) rc = fail("write", &err);
    ggufmap_writer_free(w);
    return rc;
}

/* Copies every pair and tensor of src into w. */
static int copy_model(ggufmap_writer *w, const ggufmap_source *src) {
    ggufmap_writer_set_version(w, ggufmap_source_version(src));
    ggufmap_writer_set_alignment(w, ggufmap_source_alignment(src));
    for (int64_t k = 0; k < ggufmap_source_n_kv(src); k++) {
        const ggufmap_kv *kv = ggufmap_source_kv(src, k);
        if (ggufmap_writer_add_raw(w, kv->key, (size_t)kv->key_len, kv->type, kv->elem_type, kv->count, kv->value,
                                   kv->value_size))
            return -1;
    }
    static const struct { const char *key; size_t len; } extra[3] = {
        {"test.nul\0key", 12}, {"tokenizer.ggml.model\0x", 22}, {"a\0b\0c", 5}};
    for (int i = 0; i < 3; i++) {
        uint8_t v[4] = {(uint8_t)(7 + i), 0, 0, 0};
        if (ggufmap_writer_add_raw(w, extra[i].key, extra[i].len, GGUFMAP_VALUE_UINT32, GGUFMAP_VALUE_UINT32, 1, v, 4))
            return -1;
    }
    for (int64_t i = 0; i < ggufmap_source_n_tensors(src); i++) {
        const ggufmap_tensor *t = ggufmap_source_tensor(src, i);
        char name[GGUFMAP_MAX_NAME + 1];
        snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
        ggufmap_data d = {.kind = GGUFMAP_DATA_FILE, .fd = ggufmap_source_fd(src), .file_offset = t->offset};
        if (ggufmap_writer_add_tensor(w, name, t->n_dims, t->ne, t->type, &d)) return -1;
    }
    return 0;
}

static int nul_keys(const char *in, const char *out) {
    ggufmap_source *src = NULL;
    ggufmap_error err;
    if (ggufmap_source_open(in, 0, &src, &err)) return fail("open", &err);
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    int rc = !w || copy_model(w, src) ? fail("cannot copy the model", NULL)
             : ggufmap_writer_write(w, out, 0, &err) ? fail("write", &err)
                                                      : 0;
    ggufmap_writer_free(w);
    ggufmap_source_free(src);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "one-tensor") == 0 && !strchr(argv[2], '%')) return tensors(argv[2], 1, argv[3]);
    if (argc == 4 && strcmp(argv[1], "nul-keys") == 0) return nul_keys(argv[2], argv[3]);
    fprintf(stderr, "usage: ggufmap-hostile one-tensor NAME OUT | nul-keys IN OUT\n");
    return 2;
}

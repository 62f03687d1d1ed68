/*
 * test_loaders.c - every architecture's loader in src/arch_table.c runs to
 * its end.
 *
 * For each architecture ggufmap_architecture() lists, a model is grown from
 * nothing: block_count 2 and no tensors, then, as long as placing it fails
 * with "check_tensor_dims: tensor 'NAME' not found", NAME is added (an f32
 * vector).  The loader must then finish: the model placed, every tensor
 * used.  One more tensor no loader asks for must be refused, named.  clip,
 * llama.cpp's stub for llama-quantize, must be refused at once
 * (llama_model_load refuses it after its hyperparameters: the placement's
 * refusal says so).  Hyperparameter keys are not written: llama.cpp would
 * refuse these files for that (and for the shapes), which the placement
 * reports (ggufmap_placement_refusal) without failing.  This runs the
 * compiled program of every loader, fixture or not, to the end of at least
 * one path through it.
 *
 *   test_loaders DIR   (a scratch folder is made inside DIR and removed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../unit/check.h"
#include "ggufmap/ggufmap.h"

#define MAX_TENSORS 600

static char path[1024];

/* Writes ARCH with block_count 2 and the n tensors named. */
static int write_model(const char *arch, char names[][96], int n) {
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    char key[128];
    ggufmap_writer_add_string(w, "general.architecture", arch);
    snprintf(key, sizeof key, "%s.block_count", arch);
    ggufmap_writer_add_u32(w, key, 2);
    ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    int64_t ne[1] = {32};
    for (int i = 0; i < n; i++) ggufmap_writer_add_tensor(w, names[i], 1, ne, 0, &z);
    ggufmap_error err;
    unlink(path);
    int rc = ggufmap_writer_write(w, path, GGUFMAP_WRITE_SPARSE, &err);
    if (rc) fprintf(stderr, "%s: %s\n", arch, err.message);
    ggufmap_writer_free(w);
    return rc;
}

/* Places the model at path; GGUFMAP_OK (msg: the refusal, or ""), or the
 * status with msg filled. */
static int place(char *msg, size_t cap) {
    ggufmap_model *m;
    ggufmap_error err;
    int rc = ggufmap_model_open(path, 0, &m, &err);
    if (!rc) {
        ggufmap_placement_opts o;
        ggufmap_placement_opts_init(&o);
        ggufmap_placement *p = NULL;
        rc = ggufmap_placement_build(m, &o, &p, &err);
        const char *refusal = rc ? NULL : ggufmap_placement_refusal(p);
        if (!rc) snprintf(err.message, sizeof err.message, "%s", refusal ? refusal : "");
        ggufmap_placement_free(p);
        ggufmap_model_free(m);
    }
    snprintf(msg, cap, "%s", err.message);
    return rc;
}

/* Grows arch's model until it places; the number of tensors, or -1 with msg. */
static int grow(const char *arch, char names[][96], char *msg, size_t cap) {
    for (int n = 0; n < MAX_TENSORS; n++) {
        if (write_model(arch, names, n)) return -1;
        if (place(msg, cap) == GGUFMAP_OK) return n;
        static const char missing[] = "check_tensor_dims: tensor '";
        const char *q = strstr(msg, missing);
        const char *e = q ? strstr(q + sizeof missing - 1, "' not found") : NULL;
        if (!e) return -1;
        snprintf(names[n], 96, "%.*s", (int)(e - q) - (int)(sizeof missing - 1), q + sizeof missing - 1);
    }
    snprintf(msg, cap, "more than %d tensors", MAX_TENSORS);
    return -1;
}

int main(int argc, char **argv) {
    char dir[900];
    snprintf(dir, sizeof dir, "%s/ggufmap-loaders-XXXXXX", argc > 1 ? argv[1] : "/tmp");
    if (!mkdtemp(dir)) {
        perror(dir);
        return 2;
    }
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    static char names[MAX_TENSORS + 1][96];
    char msg[1200];
    int n_arch = 0, total = 0;
    for (uint32_t i = 0; ggufmap_architecture(i); i++, n_arch++) {
        const char *arch = ggufmap_architecture(i);
        int n = grow(arch, names, msg, sizeof msg);
        if (strcmp(arch, "clip") == 0) {
            CHECK_MSG(n == 0 && strstr(msg, "CLIP cannot be used as main model"), "clip: %s", msg);
            continue;
        }
        CHECK_MSG(n >= 0, "%s: %s", arch, msg);
        if (n < 0) continue;
        total += n;
        snprintf(names[n], 96, "ggufmap_unused.weight");
        CHECK_MSG(write_model(arch, names, n + 1) == 0 && place(msg, sizeof msg) == GGUFMAP_EFORMAT &&
                      strstr(msg, "'ggufmap_unused.weight' is not used"),
                  "%s: %s", arch, msg);
    }
    unlink(path);
    rmdir(dir);
    printf("%d architectures, %d tensors asked for\n", n_arch, total);
    CHECK(n_arch > 140);
    return check_summary();
}

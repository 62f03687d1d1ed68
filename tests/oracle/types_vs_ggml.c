/*
 * types_vs_ggml.c - our ggml type table against the real libggml-base of
 * llama.cpp v0.5.0: name, block size and type size for every id.
 *
 * usage: types_vs_ggml ORACLE_DIR
 * The library is opened with dlopen, so ggufmap itself never links ggml.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ggufmap/types.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: types_vs_ggml ORACLE_DIR\n");
        return 2;
    }
    char lib[4096];
    snprintf(lib, sizeof lib, "%s/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so", argv[1]);
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "types_vs_ggml: cannot load the oracle's libggml-base (%s): run tests/oracle/setup.sh\n",
                dlerror());
        return 1;
    }
    typedef long long (*blck_fn)(int);
    typedef size_t (*size_fn)(int);
    typedef const char *(*name_fn)(int);
    blck_fn blck = (blck_fn)(size_t)dlsym(h, "ggml_blck_size");
    size_fn tsize = (size_fn)(size_t)dlsym(h, "ggml_type_size");
    name_fn tname = (name_fn)(size_t)dlsym(h, "ggml_type_name");
    if (!blck || !tsize || !tname) {
        fprintf(stderr, "types_vs_ggml: symbols missing in %s\n", lib);
        return 1;
    }
    int passed = 0, failed = 0;
    for (int id = 0; id < GGUFMAP_TYPE_COUNT; id++) {
        const ggufmap_type_info *t = ggufmap_type(id);
        long long b = blck(id);
        size_t s = tsize(id);
        int same = t && (long long)t->block_size == b && t->type_size == s &&
                   (b == 0 || strcmp(t->name, tname(id)) == 0);
        if (same) {
            passed++;
        } else {
            failed++;
            printf("type %d: ours %s/%u/%u, ggml %s/%lld/%zu\n", id, t ? t->name : "?", t ? t->block_size : 0,
                   t ? t->type_size : 0, tname(id), b, s);
        }
    }
    dlclose(h);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 && passed == GGUFMAP_TYPE_COUNT ? 0 : 1;
}

/*
 * repack-probe.so: preloaded into ggufmap-oracle (qemu-aarch64 -E
 * LD_PRELOAD=...), it reports which repack layout ggml chose for every tensor
 * of a CPU_REPACK buffer, e.g.
 *
 *   LAYOUT name=blk.0.attn_q.weight traits=q4_0_4x4_q8_0
 *
 * The oracle's own ggml_backend_alloc_ctx_tensors_from_buft (in the
 * executable) forwards with dlsym(RTLD_NEXT), which finds this library
 * before libggml-base; we forward the same way. After the real call every
 * tensor's `extra` points at the function-local static tensor_traits object
 * that ggml_repack_get_optimal_repack_type returned
 * (`ggml_repack_get_optimal_repack_type(...)::q4_0_4x4_q8_0`). Those statics
 * are not in the dynamic symbol table, so setup.sh writes, per CPU variant,
 * GGUFMAP_REPACK_SYMS_DIR/<libggml-cpu-X.so>.syms = "hexaddr name" lines taken
 * from the (unstripped) library with nm; we match dladdr's offset against it.
 *
 * LAYOUT lines come right BEFORE the ALLOC line of their buffer (the oracle
 * prints after the call returns). traits=? when the address is not in the
 * table. Environment: GGUFMAP_REPACK_SYMS_DIR (required).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

typedef ggml_backend_buffer_t (*alloc_ctx_fn)(struct ggml_context *, ggml_backend_buffer_type_t);

static const char *lookup(const void *p, char *out, size_t cap)
{
    Dl_info info;
    snprintf(out, cap, "?");
    if (!p || !dladdr(p, &info) || !info.dli_fname || !info.dli_fbase)
        return out;
    const char *dir = getenv("GGUFMAP_REPACK_SYMS_DIR");
    if (!dir || !*dir)
        return out;
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.syms", dir, base);
    FILE *f = fopen(path, "r");
    if (!f)
        return out;
    uintptr_t off = (uintptr_t)p - (uintptr_t)info.dli_fbase;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char name[256];
        unsigned long long a;
        if (sscanf(line, "%llx %255s", &a, name) == 2 && (uintptr_t)a == off) {
            snprintf(out, cap, "%s", name);
            break;
        }
    }
    fclose(f);
    return out;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context *ctx,
                                                               ggml_backend_buffer_type_t buft)
{
    static alloc_ctx_fn real;
    if (!real) {
        real = (alloc_ctx_fn)dlsym(RTLD_NEXT, "ggml_backend_alloc_ctx_tensors_from_buft");
        if (!real) {
            fprintf(stderr, "repack-probe: dlsym(RTLD_NEXT) failed: %s\n", dlerror());
            abort();
        }
    }
    ggml_backend_buffer_t buf = real(ctx, buft);
    if (buf && strcmp(ggml_backend_buft_name(buft), "CPU_REPACK") == 0) {
        for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
            char traits[256];
            printf("LAYOUT name=%s traits=%s\n", ggml_get_name(t), lookup(t->extra, traits, sizeof traits));
        }
        fflush(stdout);
    }
    return buf;
}

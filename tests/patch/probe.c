/*
 * probe.c - what the kernel says about a model that llama.cpp has loaded.
 *
 * Built as a shared object and put in LD_PRELOAD of ggufmap-oracle (either
 * build: the prebuilt llama.cpp or the patched one).  The oracle calls
 * llama_model_load_from_file and llama_model_free through the PLT, so the
 * two definitions below run in their place and forward to libllama's with
 * dlsym(RTLD_NEXT):
 *
 *   PROBE load_ns=N                          wall time of the load itself
 *   PROBE vmlck_kb=N vmrss_kb=N vmsize_kb=N  /proc/self/status while the
 *                                            model is still loaded
 *
 * The second line is what the seed test compares with the plan: with load
 * mode mmap_mlock, VmLck is the bytes llama.cpp wired (what a Metal
 * residency set does to a mapped buffer).  The oracle's own output is not
 * changed otherwise, so its buffer lines stay comparable.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

/* ------------------------------------------------------------------------ */
/* Forwarding                                                                */
/* ------------------------------------------------------------------------ */

/* The next definition of NAME after this one (libllama's); exits if none,
 * since a probe that measured nothing must not look like a pass. */
static void *next_symbol(const char *name)
{
    void *sym = dlsym(RTLD_NEXT, name);
    if (!sym) {
        fprintf(stderr, "probe: %s not found after the probe: %s\n", name, dlerror());
        exit(2);
    }
    return sym;
}

/* The value of a "Key:   N kB" line of /proc/self/status, or -1. */
static long status_kb(const char *status, const char *key)
{
    const char *line = strstr(status, key);
    return line ? strtol(line + strlen(key), NULL, 10) : -1;
}

/* ------------------------------------------------------------------------ */
/* Interposed llama.cpp API                                                  */
/* ------------------------------------------------------------------------ */

struct llama_model *llama_model_load_from_file(const char *path, struct llama_model_params params)
{
    struct llama_model *(*load)(const char *, struct llama_model_params) =
        (struct llama_model *(*)(const char *, struct llama_model_params))next_symbol("llama_model_load_from_file");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct llama_model *model = load(path, params);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("PROBE load_ns=%lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    return model;
}

void llama_model_free(struct llama_model *model)
{
    void (*model_free)(struct llama_model *) = (void (*)(struct llama_model *))next_symbol("llama_model_free");
    char status[8192] = "";
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        size_t n = fread(status, 1, sizeof status - 1, f);
        status[n] = '\0';
        fclose(f);
    }
    printf("PROBE vmlck_kb=%ld vmrss_kb=%ld vmsize_kb=%ld\n", status_kb(status, "VmLck:"), status_kb(status, "VmRSS:"),
           status_kb(status, "VmSize:"));
    model_free(model);
}

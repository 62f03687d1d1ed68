/*
 * ggml-cpu-report: which ggml CPU backend variant the prebuilt llama.cpp
 * loads on this (possibly emulated) CPU, and what that variant was compiled
 * for. Built by tests/oracle/arm64/setup.sh for aarch64 and run under qemu;
 * it also builds and runs natively (x86-64) against the x86 oracle's libs.
 *
 * Output, one record per line:
 *   HWCAP dotprod=0|1 fp16=0|1 sve=0|1 sve2=0|1 i8mm=0|1 sme=0|1 bf16=0|1 sve_vl=N
 *       (aarch64 only: the kernel/qemu view that ggml's variant scoring reads)
 *   VARIANT name=libggml-cpu-XXX.so     (the CPU backend library actually mapped)
 *   FEATURE name=VALUE                  (ggml_backend_get_features of the CPU backend:
 *                                        compile-time features of that variant)
 *   HAS dotprod=N matmul_int8=N sve=N sve_cnt=N sme=N neon=N avx2=N
 *       (the ggml_cpu_has_* functions that ggml_repack_get_optimal_repack_type
 *        calls, looked up with dlsym in the loaded variant)
 *   SYSTEM_INFO <llama_print_system_info()>
 * Exit 0, or 1 when no CPU backend could be loaded.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

#include "ggml-backend.h"
#include "llama.h"

static void print_hwcap(void)
{
#if defined(__aarch64__) && defined(__linux__)
    unsigned long h = getauxval(AT_HWCAP), h2 = getauxval(AT_HWCAP2);
    int sve = !!(h & (1UL << 22));
    int vl = 0;
    if (sve) {
        vl = prctl(51 /* PR_SVE_GET_VL */);
        vl = vl < 0 ? 0 : (vl & 0xffff);
    }
    printf("HWCAP dotprod=%d fp16=%d sve=%d sve2=%d i8mm=%d sme=%d bf16=%d sve_vl=%d\n",
           !!(h & (1UL << 20)), !!(h & (1UL << 9)) && !!(h & (1UL << 10)), sve, !!(h2 & (1UL << 1)),
           !!(h2 & (1UL << 13)), !!(h2 & (1UL << 23)), !!(h2 & (1UL << 14)), vl);
#endif
}

/* the libggml-cpu-*.so in /proc/self/maps (qemu-user emulates this file) */
static int print_variant(char *path, size_t cap)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[PATH_MAX + 256];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char *p = strstr(line, "/libggml-cpu-");
        if (!p)
            continue;
        line[strcspn(line, "\n")] = '\0';
        char *start = strchr(line, '/');
        snprintf(path, cap, "%s", start);
        printf("VARIANT name=%s\n", p + 1);
        found = 1;
    }
    fclose(f);
    return found;
}

static void print_has(const char *variant_path)
{
    void *h = dlopen(variant_path, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return;
    static const char *const names[] = { "dotprod", "matmul_int8", "sve", "sme", "neon", "avx2" };
    printf("HAS");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char sym[64];
        snprintf(sym, sizeof sym, "ggml_cpu_has_%s", names[i]);
        int (*fn)(void) = (int (*)(void))dlsym(h, sym);
        printf(" %s=%d", names[i], fn ? fn() : -1);
    }
    int (*cnt)(void) = (int (*)(void))dlsym(h, "ggml_cpu_get_sve_cnt");
    printf(" sve_cnt=%d\n", cnt ? cnt() : -1);
    dlclose(h);
}

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)level;
    (void)text;
    (void)ud;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    llama_log_set(quiet, NULL);
    print_hwcap();

    const char *dir = getenv("GGUFMAP_ORACLE_BACKEND_DIR");
    static char buf[PATH_MAX];
    if (!dir || !*dir) {
        Dl_info info;
        if (!dladdr((void *)&llama_backend_init, &info) || !info.dli_fname) {
            fprintf(stderr, "ggml-cpu-report: cannot locate libllama\n");
            return 1;
        }
        snprintf(buf, sizeof buf, "%s", info.dli_fname);
        char *slash = strrchr(buf, '/');
        if (slash)
            *slash = '\0';
        dir = buf;
    }
    llama_backend_init();
    ggml_backend_load_all_from_path(dir);
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) {
        fprintf(stderr, "ggml-cpu-report: no CPU backend could be loaded from %s\n", dir);
        return 1;
    }
    char vpath[PATH_MAX];
    if (print_variant(vpath, sizeof vpath))
        print_has(vpath);
    else
        printf("VARIANT name=builtin\n");

    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    ggml_backend_get_features_t get_features =
        (ggml_backend_get_features_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features");
    if (get_features) {
        for (struct ggml_backend_feature *f = get_features(reg); f && f->name; f++)
            printf("FEATURE %s=%s\n", f->name, f->value);
    }
    printf("SYSTEM_INFO %s\n", llama_print_system_info());
    llama_backend_free();
    return 0;
}

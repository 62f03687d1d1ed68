/*
 * placement_args.c - the placement flags, spelled as llama.cpp spells them.
 */
#include <stdlib.h>
#include <string.h>

#include "placement_args.h"
#include "util.h"

enum {
    OPT_DEVICE = 0x1000, OPT_NGL, OPT_OT, OPT_CPU_MOE, OPT_N_CPU_MOE, OPT_NO_REPACK, OPT_CPU, OPT_LAZY,
    OPT_NO_MMAP, OPT_NO_HOST, OPT_MTP, OPT_REGEX
};

static const struct option placement_options[] = {
    {"device", required_argument, NULL, OPT_DEVICE},       {"ngl", required_argument, NULL, OPT_NGL},
    {"n-gpu-layers", required_argument, NULL, OPT_NGL},    {"ot", required_argument, NULL, OPT_OT},
    {"override-tensor", required_argument, NULL, OPT_OT},  {"cmoe", no_argument, NULL, OPT_CPU_MOE},
    {"cpu-moe", no_argument, NULL, OPT_CPU_MOE},           {"ncmoe", required_argument, NULL, OPT_N_CPU_MOE},
    {"n-cpu-moe", required_argument, NULL, OPT_N_CPU_MOE}, {"nr", no_argument, NULL, OPT_NO_REPACK},
    {"no-repack", no_argument, NULL, OPT_NO_REPACK},       {"cpu", required_argument, NULL, OPT_CPU},
    {"lzm", required_argument, NULL, OPT_LAZY},            {"lazy-mode", required_argument, NULL, OPT_LAZY},
    {"no-mmap", no_argument, NULL, OPT_NO_MMAP},           {"no-host", no_argument, NULL, OPT_NO_HOST},
    {"mtp", no_argument, NULL, OPT_MTP},                 {"regex", required_argument, NULL, OPT_REGEX},
};

int placement_args_init(placement_args *a) {
    memset(a, 0, sizeof *a);
    ggufmap_placement_opts_init(&a->opts);
    a->opts.overrides = a->overrides;
    a->pool_cap = 1 << 20;
    a->pool = malloc(a->pool_cap);
    return a->pool ? 0 : -1;
}

void placement_args_free(placement_args *a) {
    free(a->pool);
    a->pool = NULL;
}

int placement_args_longopts(struct option *out, size_t cap, const struct option *own, size_t n_own) {
    size_t k = sizeof placement_options / sizeof placement_options[0];
    return longopts_join(out, cap, placement_options, k, own, n_own) < 0 ? -1 : 0;
}

static char *keep(placement_args *a, const char *s, size_t n) {
    if (a->pool_used + n + 1 > a->pool_cap) return NULL;
    char *p = a->pool + a->pool_used;
    memcpy(p, s, n);
    p[n] = '\0';
    a->pool_used += n + 1;
    return p;
}

static int add_override(placement_args *a, const char *sub, const char *pattern, size_t plen, const char *buft,
                        size_t blen) {
    if (a->opts.n_overrides >= PLACEMENT_MAX_OVERRIDES)
        return usage_error(sub, "more than %d overrides", PLACEMENT_MAX_OVERRIDES);
    ggufmap_override *o = &a->overrides[a->opts.n_overrides];
    o->pattern = keep(a, pattern, plen);
    o->buft = keep(a, buft, blen);
    if (!o->pattern || !o->buft) return usage_error(sub, "overrides too long");
    a->opts.n_overrides++;
    return EXIT_OK;
}

/* -ot "a=CPU,b=MTL0": a comma list, each entry split at its first '=' as
 * llama.cpp's parse_tensor_buffer_overrides does (common/arg.cpp:264-270):
 * every piece between commas counts, an empty one too, and the pattern may
 * be empty (it matches every tensor); so a pattern can hold neither ','
 * nor '='. */
static int parse_ot(placement_args *a, const char *sub, const char *arg) {
    for (const char *s = arg;;) {
        size_t n = strcspn(s, ",");
        const char *eq = memchr(s, '=', n);
        if (!eq || eq == s + n - 1) return usage_error(sub, "override '%.*s' is not REGEX=BUFT", (int)n, s);
        int rc = add_override(a, sub, s, (size_t)(eq - s), eq + 1, n - (size_t)(eq - s) - 1);
        if (rc || s[n] == '\0') return rc;
        s += n + 1;
    }
}

/* --cpu-moe (n_layers < 0) and --n-cpu-moe N: llama.cpp's patterns, to CPU. */
static int add_cpu_moe(placement_args *a, const char *sub, int n_layers) {
    size_t cap = n_layers < 0 ? 256 : (size_t)n_layers * 64 + 64;
    char *buf = malloc(cap);
    int n = buf ? ggufmap_cpu_moe_patterns(n_layers, buf, cap) : -1;
    int rc = n < 0 ? usage_error(sub, "--n-cpu-moe %d: too many layers", n_layers) : EXIT_OK;
    const char *p = buf;
    for (int i = 0; i < n && !rc; i++, p += strlen(p) + 1) rc = add_override(a, sub, p, strlen(p), "CPU", 3);
    free(buf);
    return rc;
}

static int parse_count(const char *arg, long *out) {
    char *end;
    long n = strtol(arg, &end, 10);
    if (end == arg || *end || n > 100000) return -1;
    *out = n;
    return 0;
}

int placement_args_apply(placement_args *a, int code, const char *arg, const char *sub, bool *handled) {
    long n;
    *handled = code >= OPT_DEVICE && code <= OPT_REGEX;
    if (*handled && code != OPT_CPU && code != OPT_REGEX) a->any = true;
    switch (code) {
    case OPT_DEVICE:
        if (strcmp(arg, "cpu") == 0) a->opts.device = GGUFMAP_DEVICE_CPU;
        else if (strcmp(arg, "metal") == 0) a->opts.device = GGUFMAP_DEVICE_METAL;
        else if (strcmp(arg, "cuda") == 0) a->opts.device = GGUFMAP_DEVICE_CUDA;
        else return usage_error(sub, "--device %s: expected cpu, metal or cuda", arg);
        return EXIT_OK;
    case OPT_NGL:
        if (strcmp(arg, "all") == 0) n = -1;
        else if (parse_count(arg, &n)) return usage_error(sub, "-ngl %s: expected a number or all", arg);
        a->opts.n_gpu_layers = (int)(n < 0 ? -1 : n);
        return EXIT_OK;
    case OPT_OT: return parse_ot(a, sub, arg);
    case OPT_CPU_MOE: return add_cpu_moe(a, sub, -1);
    case OPT_N_CPU_MOE:
        if (parse_count(arg, &n) || n < 0) return usage_error(sub, "--n-cpu-moe %s: expected a count", arg);
        return add_cpu_moe(a, sub, (int)n);
    case OPT_NO_REPACK: a->opts.no_repack = true; return EXIT_OK;
    case OPT_CPU:
        a->cpu_given = true;
        if (strcmp(arg, "x86") == 0) a->opts.cpu = GGUFMAP_CPU_X86;
        else if (strcmp(arg, "x86-avx2") == 0) a->opts.cpu = GGUFMAP_CPU_X86_AVX2;
        else if (strcmp(arg, "arm64") == 0) a->opts.cpu = GGUFMAP_CPU_ARM64;
        else if (strcmp(arg, "generic") == 0) a->opts.cpu = GGUFMAP_CPU_GENERIC;
        else if (strcmp(arg, "host") == 0) a->opts.cpu = GGUFMAP_CPU_HOST;
        else return usage_error(sub, "--cpu %s: expected x86, x86-avx2, arm64, generic or host", arg);
        return EXIT_OK;
    case OPT_LAZY:
        if (strcmp(arg, "on") == 0) a->opts.lazy = GGUFMAP_LAZY_ON;
        else if (strcmp(arg, "off") == 0) a->opts.lazy = GGUFMAP_LAZY_OFF;
        else if (strcmp(arg, "auto") == 0) a->opts.lazy = GGUFMAP_LAZY_AUTO;
        else return usage_error(sub, "--lazy-mode %s: expected on, off or auto", arg);
        return EXIT_OK;
    case OPT_NO_MMAP: a->opts.no_mmap = true; return EXIT_OK;
    case OPT_NO_HOST: a->opts.no_host = true; return EXIT_OK;
    case OPT_MTP: a->opts.load_mtp = true; return EXIT_OK;
    case OPT_REGEX:
        if (strcmp(arg, "libstdc++") == 0) a->opts.regex = GGUFMAP_REGEX_LIBSTDCXX;
        else if (strcmp(arg, "libc++") == 0) a->opts.regex = GGUFMAP_REGEX_LIBCXX;
        else if (strcmp(arg, "auto") == 0) a->opts.regex = GGUFMAP_REGEX_AUTO;
        else return usage_error(sub, "--regex %s: expected libstdc++, libc++ or auto", arg);
        return EXIT_OK;
    default: return EXIT_OK;
    }
}

void placement_args_finish(placement_args *a) {
    if (a->opts.device == GGUFMAP_DEVICE_METAL && !a->cpu_given) a->opts.cpu = GGUFMAP_CPU_ARM64;
}

void placement_args_help(FILE *out) {
    fprintf(out,
            "placement (llama.cpp's options):\n"
            "  --device cpu|metal|cuda   the GPU (default cpu: none); metal maps host\n"
            "                            pointers (MTL0_Mapped), cuda copies (CUDA0)\n"
            "  -ngl, --n-gpu-layers N|all  layers on the GPU; the output layer goes first,\n"
            "                            the input layer never (default all with a GPU)\n"
            "  -ot, --override-tensor REGEX=BUFT[,...]  repeatable; first match wins;\n"
            "                            BUFT: CPU or the GPU's (MTL0, CUDA0)\n"
            "  -cmoe, --cpu-moe          all expert tensors to the CPU\n"
            "  -ncmoe, --n-cpu-moe N     the expert tensors of layers 0..N-1 to the CPU\n"
            "  -nr, --no-repack          no CPU_REPACK buffer\n"
            "  --cpu x86|x86-avx2|arm64|generic  CPU_REPACK rules (default: arm64 with\n"
            "                            --device metal, else this machine's)\n"
            "  -lzm, --lazy-mode on|off|auto  lazily read tables (default auto: > 4 GiB)\n"
            "  --no-mmap                 load mode none: nothing mapped but lazy tables\n"
            "  --no-host                 no CUDA_Host buffer type\n"
            "  --mtp                     load_mtp: the MTP/NextN layers are created, not\n"
            "                            skipped (an MTP draft head, --spec-type draft-mtp);\n"
            "                            plan shows that load beside the model's\n"
            "  --regex libstdc++|libc++|auto  whose std::regex reads -ot patterns: the\n"
            "                            C++ library llama.cpp was built with (default\n"
            "                            auto: libc++ with --device metal, as on macOS;\n"
            "                            else libstdc++, as on Linux)\n");
}

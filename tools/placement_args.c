/*
 * placement_args.c - the placement flags, spelled as llama.cpp spells them,
 * and the planning options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "placement_args.h"
#include "util.h"

static const cli_option placement_options[] = {
    {OPT_DEVICE, "--device, -dev", "D[,D...]", "cpu none metal MTL0 cuda CUDA0 CUDA1 rocm ROCm0",
     "the GPUs, by kind or by llama.cpp's device names, comma-separated in llama.cpp's order: cpu or none (no "
     "GPU, the default), metal or MTL0 (an Apple GPU: maps host pointers, MTL0_Mapped; also means Apple "
     "Silicon's CPU and 16 KiB pages), cuda or CUDA0, CUDA1, ... (NVIDIA GPUs: weights copied), rocm or ROCm0, "
     "... (AMD GPUs, CUDA's rules); docs/devices.md"},
    {OPT_TS, "-ts, --tensor-split", "N0,N1,...", NULL,
     "the share of the layers each GPU of -dev gets, e.g. 3,1 (default equal shares: llama.cpp splits by free "
     "memory, equal on equal GPUs)"},
    {OPT_SM, "-sm, --split-mode", "none|layer|row", "none layer row",
     "layer (default: whole layers per GPU), none (-mg's GPU alone); row is refused (docs/devices.md)"},
    {OPT_MG, "-mg, --main-gpu", "INDEX", NULL, "with -sm none, the GPU of -dev used (default 0)"},
    {OPT_NGL, "-ngl, --n-gpu-layers, --gpu-layers", "N|all", "all",
     "layers on the GPU; the output layer goes first, the input layer never (default all, as llama.cpp's)"},
    {OPT_OT, "-ot, --override-tensor", "REGEX=BUFT[,...]", NULL,
     "tensors whose name REGEX matches go to BUFT: CPU or the GPU's (MTL0, CUDA0); repeatable, the first match "
     "wins"},
    {OPT_CPU_MOE, "-cmoe, --cpu-moe", NULL, NULL, "every expert tensor to the CPU"},
    {OPT_N_CPU_MOE, "-ncmoe, --n-cpu-moe", "N", NULL, "the expert tensors of layers 0..N-1 to the CPU"},
    {OPT_NO_REPACK, "-nr, --no-repack", NULL, NULL, "no CPU_REPACK buffer"},
    {OPT_CPU, "--cpu", "C", "host x86 x86-amx x86-avx2 arm64 generic sapphirerapids zen4 icelake haswell x64",
     "the CPU's extra buffer types: x86 (CPU_REPACK by AVX-512's rules), x86-amx (AMX, then CPU_REPACK), x86-avx2, "
     "arm64, generic (none), host (what llama.cpp's CPU backend offers on this machine; the default, arm64 with "
     "metal), or the name of the x86 CPU variant llama.cpp loads (libggml-cpu-NAME.so: sapphirerapids, zen4, "
     "icelake, haswell, x64, ...)"},
    {OPT_LAZY, "-lzm, --lazy-mode", "on|off|auto", "on off auto",
     "lazily read tables such as per_layer_token_embd (default auto: those over 4 GiB)"},
    {OPT_NO_MMAP, "--no-mmap", NULL, NULL, "load mode none: nothing mapped but lazy tables"},
    {OPT_NO_HOST, "--no-host", NULL, NULL, "no CUDA_Host buffer type"},
    {OPT_MTP, "--mtp", NULL, NULL,
     "load_mtp: the MTP/NextN layers are created, not skipped, as in the second load llama.cpp makes for an MTP "
     "draft head (--spec-type draft-mtp); plan shows that load beside the model's"},
    {OPT_REGEX, "--regex", "libstdc++|libc++|auto", "libstdc++ libc++ auto",
     "whose std::regex reads the -ot patterns: the C++ library llama.cpp was built with (default auto: libc++ "
     "with metal, as on macOS; else libstdc++, as on Linux)"},
};

const cli_group placement_group = CLI_GROUP("placement (llama.cpp's options)", placement_options);

/* ------------------------------------------------------------------------ */
/* State                                                                     */
/* ------------------------------------------------------------------------ */

int placement_args_init(placement_args *a) {
    memset(a, 0, sizeof *a);
    ggufmap_preset(GGUFMAP_DEVICE_CPU, &a->opts, NULL);
    a->opts.overrides = a->overrides;
    a->pool_cap = 1 << 20;
    a->pool = malloc(a->pool_cap);
    return a->pool ? 0 : -1;
}

void placement_args_free(placement_args *a) {
    free(a->pool);
    a->pool = NULL;
}

static char *keep(placement_args *a, const char *s, size_t n) {
    if (a->pool_used + n + 1 > a->pool_cap) return NULL;
    char *p = a->pool + a->pool_used;
    memcpy(p, s, n);
    p[n] = '\0';
    a->pool_used += n + 1;
    return p;
}

static int add_override(placement_args *a, const char *cmd, const char *pattern, size_t plen, const char *buft,
                        size_t blen) {
    if (a->opts.n_overrides >= PLACEMENT_MAX_OVERRIDES)
        return cli_usage_error(cmd, "more than %d overrides", PLACEMENT_MAX_OVERRIDES);
    ggufmap_override *o = &a->overrides[a->opts.n_overrides];
    o->pattern = keep(a, pattern, plen);
    o->buft = keep(a, buft, blen);
    if (!o->pattern || !o->buft) return cli_usage_error(cmd, "overrides too long");
    a->opts.n_overrides++;
    return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* The flags                                                                 */
/* ------------------------------------------------------------------------ */

/* -ot "a=CPU,b=MTL0": a comma list, each entry split at its first '=' as
 * llama.cpp's parse_tensor_buffer_overrides does (common/arg.cpp:264-270):
 * every piece between commas counts, an empty one too, and the pattern may
 * be empty (it matches every tensor); so a pattern can hold neither ','
 * nor '='. */
static int parse_ot(placement_args *a, const char *cmd, const char *arg) {
    for (const char *s = arg;;) {
        size_t n = strcspn(s, ",");
        const char *eq = memchr(s, '=', n);
        if (!eq || eq == s + n - 1) return cli_usage_error(cmd, "-ot: '%.*s' is not REGEX=BUFT", (int)n, s);
        int rc = add_override(a, cmd, s, (size_t)(eq - s), eq + 1, n - (size_t)(eq - s) - 1);
        if (rc || s[n] == '\0') return rc;
        s += n + 1;
    }
}

/* --cpu-moe (n_layers < 0) and --n-cpu-moe N: llama.cpp's patterns, to CPU. */
static int add_cpu_moe(placement_args *a, const char *cmd, int n_layers) {
    size_t cap = n_layers < 0 ? 256 : (size_t)n_layers * 64 + 64;
    char *buf = malloc(cap);
    int n = 0;
    int rc = !buf || ggufmap_cpu_moe_patterns(n_layers, buf, cap, &n) != GGUFMAP_OK
                 ? cli_usage_error(cmd, "--n-cpu-moe %d: too many layers", n_layers)
                 : EXIT_OK;
    const char *p = buf;
    char cpu[16];
    ggufmap_buft_name(GGUFMAP_DEVICE_CPU, GGUFMAP_BUFT_CPU, 0, cpu, sizeof cpu);
    for (int i = 0; i < n && !rc; i++, p += strlen(p) + 1) rc = add_override(a, cmd, p, strlen(p), cpu, strlen(cpu));
    free(buf);
    return rc;
}

/* -dev: llama.cpp's device names (MTL0, CUDA0, CUDA1, none) or the kinds,
 * any case, comma-separated (parse_device_list), all of one backend. */
static int parse_devices(placement_args *a, const char *cmd, const char *value) {
    ggufmap_placement_opts *o = &a->opts;
    o->n_gpus = 0;
    memset(o->gpus, 0, sizeof o->gpus);
    for (const char *s = value;;) {
        size_t n = strcspn(s, ",");
        char name[64];
        ggufmap_device d;
        uint32_t ordinal;
        ggufmap_error err;
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), s);
        int rc = ggufmap_device_parse(name, &d, &ordinal, &err);
        if (rc != GGUFMAP_OK) return cli_usage_error(cmd, "-dev %s", err.message);
        if (o->n_gpus > 0 && d != o->device)
            return cli_usage_error(cmd, "-dev %s: the GPUs of a run are of one backend here (%s and %s)", value,
                                   ggufmap_device_name(o->device), ggufmap_device_name(d));
        if (o->n_gpus >= GGUFMAP_MAX_GPUS) return cli_usage_error(cmd, "-dev %s: at most %d GPUs", value, GGUFMAP_MAX_GPUS);
        o->device = d;
        if (d != GGUFMAP_DEVICE_CPU) o->gpus[o->n_gpus++] = ordinal;
        if (s[n] == '\0') return EXIT_OK;
        s += n + 1;
    }
}

int device_limits_parse(device_limits *l, const char *cmd, const char *value) {
    memset(l, 0, sizeof *l);
    for (const char *s = value;;) {
        const size_t n = strcspn(s, ",");
        char item[96];
        if (n == 0 || n >= sizeof item) return cli_usage_error(cmd, "--limit %s: expected SIZE or D=SIZE[,D=SIZE...]", value);
        snprintf(item, sizeof item, "%.*s", (int)n, s);
        char *eq = strchr(item, '=');
        if (!eq) {
            int rc = parse_size_option(cmd, "--limit", item, 0, &l->limit);
            if (rc != EXIT_OK) return rc;
        } else {
            *eq = '\0';
            ggufmap_device d;
            uint32_t ordinal;
            ggufmap_error err;
            if (ggufmap_device_parse(item, &d, &ordinal, &err) != GGUFMAP_OK)
                return cli_usage_error(cmd, "--limit %s: %s", value, err.message);
            if (d == GGUFMAP_DEVICE_CPU)
                return cli_usage_error(cmd, "--limit %s: '%s' is not a GPU (the host's RAM is --mem)", value, item);
            if (l->named && d != l->device)
                return cli_usage_error(cmd, "--limit %s: the GPUs of a run are of one backend here", value);
            if (ordinal >= GGUFMAP_MAX_GPUS) return cli_usage_error(cmd, "--limit %s: no device %s", value, item);
            int rc = parse_size_option(cmd, "--limit", eq + 1, 0, &l->gpu[ordinal]);
            if (rc != EXIT_OK) return rc;
            l->device = d;
            l->named = true;
        }
        if (s[n] == '\0') return EXIT_OK;
        s += n + 1;
    }
}

int device_limits_check(const device_limits *l, const char *cmd, const ggufmap_placement_opts *o) {
    if (!l->named) return EXIT_OK;
    if (l->device != o->device)
        return cli_usage_error(cmd, "--limit names %s devices, the run's are %s (-dev)", ggufmap_device_name(l->device),
                               ggufmap_device_name(o->device));
    for (uint32_t g = 0; g < GGUFMAP_MAX_GPUS; g++) {
        if (!l->gpu[g]) continue;
        bool listed = o->n_gpus == 0 && g == 0;
        for (uint32_t i = 0; i < o->n_gpus; i++) listed |= o->gpus[i] == g;
        if (!listed) {
            char name[32];
            ggufmap_buft_name(o->device, GGUFMAP_BUFT_GPU, g, name, sizeof name);
            return cli_usage_error(cmd, "--limit names %s, which is not a device of the run (-dev)", name);
        }
    }
    return EXIT_OK;
}

void device_limits_split(const device_limits *l, ggufmap_placement_opts *o) {
    for (uint32_t i = 0; i < o->n_gpus && i < GGUFMAP_MAX_GPUS; i++)
        o->gpu_free[i] = ggufmap_gpu_limit(l->limit, l->gpu, o->gpus[i]);
}

bool device_limits_any(const device_limits *l) { return l->limit || l->named; }

/* -ts 3,1 (or 3/1): one share per GPU of -dev, as common/arg.cpp reads them */
static int parse_tensor_split(placement_args *a, const char *cmd, const char *value) {
    memset(a->opts.tensor_split, 0, sizeof a->opts.tensor_split);
    uint32_t i = 0;
    for (const char *s = value; *s;) {
        size_t n = strcspn(s, ",/");
        char num[64], *end;
        if (n == 0 || n >= sizeof num || i >= GGUFMAP_MAX_GPUS - 1)
            return cli_usage_error(cmd, "-ts %s: expected at most %d shares, N0,N1,...", value, GGUFMAP_MAX_GPUS - 1);
        snprintf(num, sizeof num, "%.*s", (int)n, s);
        float v = strtof(num, &end);
        if (*end || !(v >= 0.0f)) return cli_usage_error(cmd, "-ts %s: '%s' is not a share (a number >= 0)", value, num);
        a->opts.tensor_split[i++] = v;
        s += n;
        s += strspn(s, ",/");
    }
    return EXIT_OK;
}

static int pick(const char *cmd, const char *opt, const char *value, const char *const *words, int n, int *out) {
    char list[256];
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(value, words[i]) == 0) {
            *out = i;
            return EXIT_OK;
        }
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? (i == n - 1 ? " or " : ", ") : "", words[i]);
    }
    return cli_usage_error(cmd, "%s %s: expected %s", opt, value, list);
}

static int apply_flag(placement_args *a, int code, const char *value, const char *cmd) {
    static const char *const lazy[] = {"auto", "on", "off"};
    static const char *const split_modes[] = {"layer", "none", "row"};
    static const char *const regex[] = {"auto", "libstdc++", "libc++"};
    long n;
    int k, rc;
    switch (code) {
    case OPT_DEVICE: return parse_devices(a, cmd, value);
    case OPT_TS: return parse_tensor_split(a, cmd, value);
    case OPT_SM:
        if ((rc = pick(cmd, "-sm", value, split_modes, 3, &k))) return rc;
        a->opts.split_mode = (ggufmap_split_mode)(k == 0 ? GGUFMAP_SPLIT_LAYER : k == 1 ? GGUFMAP_SPLIT_NONE
                                                                                   : GGUFMAP_SPLIT_ROW);
        return EXIT_OK;
    case OPT_MG:
        if (parse_count(value, GGUFMAP_MAX_GPUS - 1, &n)) return cli_usage_error(cmd, "-mg %s: expected 0..%d", value,
                                                                                 GGUFMAP_MAX_GPUS - 1);
        a->opts.main_gpu = (uint32_t)n;
        return EXIT_OK;
    case OPT_NGL:
        if (strcmp(value, "all") == 0) n = -1;
        else if (parse_count(value, 100000, &n)) return cli_usage_error(cmd, "-ngl %s: expected a number or all", value);
        a->opts.n_gpu_layers = (int)n;
        return EXIT_OK;
    case OPT_OT: return parse_ot(a, cmd, value);
    case OPT_CPU_MOE: return add_cpu_moe(a, cmd, -1);
    case OPT_N_CPU_MOE:
        if (parse_count(value, 100000, &n)) return cli_usage_error(cmd, "--n-cpu-moe %s: expected a count", value);
        return add_cpu_moe(a, cmd, (int)n);
    case OPT_NO_REPACK: a->opts.no_repack = true; return EXIT_OK;
    case OPT_CPU:
        a->cpu_given = true;
        if (ggufmap_cpu_parse(value, &a->opts.cpu) != GGUFMAP_OK)
            return cli_usage_error(cmd, "--cpu %s: expected host, x86, x86-amx, x86-avx2, arm64, generic or an x86 "
                                        "CPU variant of ggml (haswell, zen4, sapphirerapids, ...)", value);
        return EXIT_OK;
    case OPT_LAZY:
        if ((rc = pick(cmd, "--lazy-mode", value, lazy, 3, &k))) return rc;
        a->opts.lazy = (ggufmap_lazy)k;
        return EXIT_OK;
    case OPT_NO_MMAP: a->opts.no_mmap = true; return EXIT_OK;
    case OPT_NO_HOST: a->opts.no_host = true; return EXIT_OK;
    case OPT_MTP: a->opts.load_mtp = true; return EXIT_OK;
    case OPT_REGEX:
        if ((rc = pick(cmd, "--regex", value, regex, 3, &k))) return rc;
        a->opts.regex = (ggufmap_regex_dialect)k;
        return EXIT_OK;
    default: return EXIT_OK;
    }
}

int placement_args_apply(placement_args *a, int code, const char *value, const char *cmd, bool *handled) {
    *handled = code >= OPT_DEVICE && code <= OPT_MG;
    if (!*handled) return EXIT_OK;
    if (code != OPT_CPU && code != OPT_REGEX) a->any = true;
    if (a->n_given < PLACEMENT_MAX_GIVEN) a->given[a->n_given++] = (placement_flag){code, value};
    return apply_flag(a, code, value, cmd);
}

const char *placement_args_ngl_without_device(const placement_args *a, char *buf, size_t cap) {
    const char *ngl = NULL;
    for (unsigned i = 0; i < a->n_given; i++) {
        if (a->given[i].code == OPT_DEVICE) return NULL;
        if (a->given[i].code == OPT_NGL) ngl = a->given[i].value;
    }
    if (!ngl || a->opts.n_gpu_layers == 0 || a->opts.device != GGUFMAP_DEVICE_CPU) return NULL;
    snprintf(buf, cap, "warning: -ngl %s without --device: no GPU is modelled (the default is --device cpu), so "
                       "every layer stays on the CPU; did you mean --device metal (Apple Silicon) or --device cuda "
                       "(NVIDIA)?", ngl);
    return buf;
}

void placement_args_finish(placement_args *a) {
    ggufmap_placement_opts preset;
    ggufmap_preset(a->opts.device, &preset, NULL);
    if (!a->cpu_given) a->opts.cpu = preset.cpu;
}

/* ------------------------------------------------------------------------ */
/* Spelling a command line again                                             */
/* ------------------------------------------------------------------------ */

const char *shell_quote(const char *value, char *buf, size_t cap) {
    if (value[0] && strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,+@%") ==
                        strlen(value)) {
        snprintf(buf, cap, "%s", value);
        return buf;
    }
    size_t o = 0;
    if (cap < 3) return "''";
    buf[o++] = '\'';
    for (const char *s = value; *s && o + 5 < cap; s++) {
        if (*s == '\'') {
            memcpy(buf + o, "'\\''", 4);
            o += 4;
        } else {
            buf[o++] = *s;
        }
    }
    buf[o++] = '\'';
    buf[o] = '\0';
    return buf;
}

void placement_args_spell(const placement_args *a, const int *skip, size_t n_skip, char *buf, size_t cap) {
    size_t used = 0;
    char quoted[1024], name[64];
    buf[0] = '\0';
    for (unsigned i = 0; i < a->n_given; i++) {
        const placement_flag *f = &a->given[i];
        bool skipped = false;
        for (size_t k = 0; k < n_skip; k++) skipped |= skip[k] == f->code;
        const cli_option *o = NULL;
        for (size_t k = 0; k < placement_group.n_options; k++)
            if (placement_options[k].code == f->code) o = &placement_options[k];
        if (skipped || !o) continue;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(o->names, ","), o->names);
        int n = snprintf(buf + used, cap - used, " %s%s%s", name, f->value ? " " : "",
                         f->value ? shell_quote(f->value, quoted, sizeof quoted) : "");
        if (n < 0 || (size_t)n >= cap - used) break;
        used += (size_t)n;
    }
}

/* ------------------------------------------------------------------------ */
/* Planning                                                                  */
/* ------------------------------------------------------------------------ */

int planning_args_apply(planning_args *p, int code, const char *value, const char *cmd, bool *handled) {
    *handled = true;
    switch (code) {
    case OPT_PLANNER:
        p->planner_given = true;
        if (ggufmap_planner_parse(value, &p->planner) != GGUFMAP_OK)
            return cli_usage_error(cmd, "--planner %s: expected span, coalesce[:GAP], runs[:GAP[:MAX]] or "
                                        "tight[:COST[:MAX]]", value);
        return EXIT_OK;
    case OPT_PAGE:
        p->page_given = true;
        p->page_text = value;
        return parse_size_option(cmd, "--page", value, SIZE_POWER_OF_TWO, &p->page);
    case OPT_MAX_BUFFER:
        p->max_buffer_given = true;
        return parse_size_option(cmd, "--max-buffer", value, SIZE_ZERO_OK, &p->max_buffer);
    default: *handled = false; return EXIT_OK;
    }
}

void planning_args_finish(const planning_args *p, ggufmap_device device, ggufmap_plan_opts *out) {
    ggufmap_preset(device, NULL, out);
    if (p->planner_given) out->planner = p->planner;
    if (p->page_given) out->page = p->page;
    if (p->max_buffer_given) out->max_buffer = p->max_buffer;
}

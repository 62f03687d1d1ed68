/*
 * device.c - the machine llama.cpp runs on, as data.
 *
 * Data structure.  Static tables, one row per thing llama.cpp's build
 * knows: the backends ggufmap models (their buffer types, scheduler rules,
 * page, regex dialect and memory model), the x86 CPU variants of the
 * prebuilt ggml (the feature tags each was compiled with, which also make
 * its score), the CPU_REPACK rules of each CPU kind, and the weight types
 * ggml's AMX buffer type packs.  Names are made from the rows, never
 * written elsewhere (tests/install/buft_names.sh checks the sources).
 *
 * Workload.  Placement asks, per weight, which buffer type of its list
 * takes it and what it costs there; the fit asks per cache tensor and per
 * graph tensor.  Every answer is a table lookup; the host's CPU kind is
 * decided from CPUID (a handful of instructions) when a placement asks.
 *
 * Fidelity.  Each row cites the ggml source it reads: ggml-cpu.cpp,
 * repack.cpp, amx/ (the CPU), ggml-metal*.m/.cpp (Metal), ggml-cuda.cu
 * (CUDA and, built with GGML_USE_HIP, ROCm: the same code under the name
 * GGML_CUDA_NAME = "ROCm", ggml-cuda.h:10-19); the x86 variant set is
 * ggml/src/CMakeLists.txt:494-517 (the GGML_CPU_ALL_VARIANTS build the npm
 * package ships), the score ggml-cpu/arch/x86/cpu-feats.cpp:279-330.
 * tests/plan (differential, cpu_variants) checks the rules against the
 * real llama.cpp with the fake Metal and CUDA devices of tests/oracle.
 * Vulkan is not a row: its alignment and buffer size are the GPU's own
 * (minStorageBufferOffsetAlignment, suballocation_block_size,
 * ggml-vulkan.cpp:12786-12798), unknown from the model alone.
 */
#include "device.h"

#include <stdio.h>
#include <string.h>

#include "ggufmap/types.h"
#include "internal.h"
#include "os.h"

enum { T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q8_0 = 8, T_Q2_K = 10, T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14,
       T_IQ4_NL = 20, T_IQ4_XS = 23, T_MXFP4 = 39, T_Q1_0 = 41 };

/* ------------------------------------------------------------------------ */
/* x86 CPU variants                                                          */
/* ------------------------------------------------------------------------ */

/* ggml's variant tags, each worth its bit in the score (score = 1 + tags). */
enum {
    TAG_FMA = 1u << 0, TAG_F16C = 1u << 1, TAG_SSE42 = 1u << 2, TAG_BMI2 = 1u << 3, TAG_AVX = 1u << 4,
    TAG_AVX2 = 1u << 5, TAG_AVX_VNNI = 1u << 6, TAG_AVX512 = 1u << 7, TAG_AVX512_VBMI = 1u << 8,
    TAG_AVX512_BF16 = 1u << 9, TAG_AVX512_VNNI = 1u << 10, TAG_AMX_INT8 = 1u << 11,
};

/* The CPUID features each tag needs (GGML_AVX512 needs five). */
static const struct { uint32_t tag, features; } tag_needs[] = {
    {TAG_FMA, GM_X86_FMA},
    {TAG_F16C, GM_X86_F16C},
    {TAG_SSE42, GM_X86_SSE42},
    {TAG_BMI2, GM_X86_BMI2},
    {TAG_AVX, GM_X86_AVX},
    {TAG_AVX2, GM_X86_AVX2},
    {TAG_AVX_VNNI, GM_X86_AVX_VNNI},
    {TAG_AVX512, GM_X86_AVX512F | GM_X86_AVX512CD | GM_X86_AVX512VL | GM_X86_AVX512DQ | GM_X86_AVX512BW},
    {TAG_AVX512_VBMI, GM_X86_AVX512_VBMI},
    {TAG_AVX512_BF16, GM_X86_AVX512_BF16},
    {TAG_AVX512_VNNI, GM_X86_AVX512_VNNI},
    {TAG_AMX_INT8, GM_X86_AMX_INT8},
};

#define BASE (TAG_SSE42 | TAG_AVX | TAG_F16C | TAG_FMA | TAG_AVX2 | TAG_BMI2)
static const struct { const char *name; uint32_t tags; } x86_variants[] = {
    {"x64", 0},
    {"sse42", TAG_SSE42},
    {"sandybridge", TAG_SSE42 | TAG_AVX},
    {"ivybridge", TAG_SSE42 | TAG_AVX | TAG_F16C},
    {"piledriver", TAG_SSE42 | TAG_AVX | TAG_F16C | TAG_FMA},
    {"haswell", BASE},
    {"skylakex", BASE | TAG_AVX512},
    {"cannonlake", BASE | TAG_AVX512 | TAG_AVX512_VBMI},
    {"cascadelake", BASE | TAG_AVX512 | TAG_AVX512_VNNI},
    {"icelake", BASE | TAG_AVX512 | TAG_AVX512_VBMI | TAG_AVX512_VNNI},
    {"cooperlake", BASE | TAG_AVX512 | TAG_AVX512_VNNI | TAG_AVX512_BF16},
    {"zen4", BASE | TAG_AVX512 | TAG_AVX512_VBMI | TAG_AVX512_VNNI | TAG_AVX512_BF16},
    {"alderlake", BASE | TAG_AVX_VNNI},
    {"sapphirerapids", BASE | TAG_AVX512 | TAG_AVX512_VBMI | TAG_AVX512_VNNI | TAG_AVX512_BF16 | TAG_AMX_INT8},
};
#undef BASE

static bool variant_runs(uint32_t tags, uint32_t features) {
    for (size_t i = 0; i < sizeof tag_needs / sizeof tag_needs[0]; i++)
        if ((tags & tag_needs[i].tag) && (features & tag_needs[i].features) != tag_needs[i].features) return false;
    return true;
}

/* What a variant's compiled-in instructions make of the CPU rules:
 * ggml_cpu_has_avx2/avx512 are compile-time answers in repack.cpp, and
 * the AMX buffer type exists only in a build with AMX_INT8 and
 * AVX512_VNNI (ggml-cpu.cpp:46) whose process the kernel lets use it. */
static ggufmap_cpu kind_of_tags(uint32_t tags, bool amx_permitted) {
    if ((tags & TAG_AMX_INT8) && (tags & TAG_AVX512_VNNI) && amx_permitted) return GGUFMAP_CPU_X86_AMX;
    if (tags & TAG_AVX512) return GGUFMAP_CPU_X86;
    if (tags & TAG_AVX2) return GGUFMAP_CPU_X86_AVX2;
    return GGUFMAP_CPU_GENERIC;
}

ggufmap_cpu gm_cpu_of_x86(uint32_t features, bool amx_permitted, const char **variant) {
    size_t best = 0;
    for (size_t i = 1; i < sizeof x86_variants / sizeof x86_variants[0]; i++)
        if (variant_runs(x86_variants[i].tags, features) && x86_variants[i].tags > x86_variants[best].tags) best = i;
    if (variant) *variant = x86_variants[best].name;
    return kind_of_tags(x86_variants[best].tags, amx_permitted);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */
/* ------------------------------------------------------------------------ */

static const char *const cpu_names[] = {
    [GGUFMAP_CPU_HOST] = "host",       [GGUFMAP_CPU_X86] = "x86",         [GGUFMAP_CPU_X86_AVX2] = "x86-avx2",
    [GGUFMAP_CPU_ARM64] = "arm64",     [GGUFMAP_CPU_GENERIC] = "generic", [GGUFMAP_CPU_X86_AMX] = "x86-amx",
};

const char *ggufmap_cpu_name(ggufmap_cpu cpu) {
    return (unsigned)cpu < sizeof cpu_names / sizeof cpu_names[0] ? cpu_names[cpu] : "host";
}

int ggufmap_cpu_parse(const char *name, ggufmap_cpu *out) {
    for (size_t i = 0; i < sizeof cpu_names / sizeof cpu_names[0]; i++)
        if (strcmp(name, cpu_names[i]) == 0) {
            *out = (ggufmap_cpu)i;
            return GGUFMAP_OK;
        }
    for (size_t i = 0; i < sizeof x86_variants / sizeof x86_variants[0]; i++)
        if (strcmp(name, x86_variants[i].name) == 0) { /* named: its kernel is taken to allow AMX */
            *out = kind_of_tags(x86_variants[i].tags, true);
            return GGUFMAP_OK;
        }
    return GGUFMAP_EINVAL;
}

ggufmap_cpu gm_cpu_host(void) {
#if defined(__x86_64__) || defined(__i386__)
    return gm_cpu_of_x86(gm_os_x86_features(), gm_os_amx_permitted(), NULL);
#elif defined(__aarch64__)
    return GGUFMAP_CPU_ARM64;
#else
    return GGUFMAP_CPU_GENERIC;
#endif
}

/* ------------------------------------------------------------------------ */
/* CPU_REPACK                                                                */
/* ------------------------------------------------------------------------ */

/* ggml_repack_get_optimal_repack_type (repack.cpp:4925-5141): per CPU kind,
 * the types it repacks and the row multiple each needs. */
typedef struct repack_rule {
    int32_t type;
    int32_t rows;
} repack_rule;

static const repack_rule repack_x86[] = { /* AVX2; AVX-512F adds Q2_K */
    {T_Q4_0, 8}, {T_Q4_K, 8}, {T_IQ4_NL, 8}, {T_MXFP4, 8}, {T_Q2_K, 8}, {-1, 0}};
static const repack_rule repack_x86_avx2[] = {{T_Q4_0, 8}, {T_Q4_K, 8}, {T_IQ4_NL, 8}, {T_MXFP4, 8}, {-1, 0}};
static const repack_rule repack_arm64[] = { /* NEON + dotprod + i8mm, no SVE */
    {T_Q4_0, 4}, {T_Q8_0, 4}, {T_IQ4_NL, 4}, {T_MXFP4, 4}, {T_Q1_0, 4}, {T_Q4_K, 8}, {T_Q5_K, 8}, {T_Q6_K, 8},
    {-1, 0}};
static const repack_rule repack_none[] = {{-1, 0}};

static const struct {
    const repack_rule *repack;
    bool amx;
} cpu_rules[] = {
    [GGUFMAP_CPU_HOST] = {repack_none, false}, /* resolved before use */
    [GGUFMAP_CPU_X86] = {repack_x86, false},
    [GGUFMAP_CPU_X86_AVX2] = {repack_x86_avx2, false},
    [GGUFMAP_CPU_ARM64] = {repack_arm64, false},
    [GGUFMAP_CPU_GENERIC] = {repack_none, false},
    [GGUFMAP_CPU_X86_AMX] = {repack_x86, true},
};

static bool known_cpu(ggufmap_cpu cpu) { return (unsigned)cpu < sizeof cpu_rules / sizeof cpu_rules[0]; }

bool gm_cpu_has_amx(ggufmap_cpu cpu) { return known_cpu(cpu) && cpu_rules[cpu].amx; }

bool gm_cpu_repacks(ggufmap_cpu cpu, int32_t type, int64_t r) {
    if (!known_cpu(cpu)) return false;
    for (const repack_rule *x = cpu_rules[cpu].repack; x->type >= 0; x++)
        if (x->type == type) return r % x->rows == 0;
    return false;
}

/* ------------------------------------------------------------------------ */
/* AMX                                                                       */
/* ------------------------------------------------------------------------ */

/* amx.cpp's supports_op (the row length each type's kernel needs) and
 * mmq.cpp's get_row_size (bytes added per block: Q8_0's compensation,
 * Q4_K/Q5_K's packed scales, IQ4_XS's); packed: qtype_has_amx_kernels. */
static const struct {
    int32_t type;
    int32_t k_align;
    uint32_t extra_per_block;
    bool packed;
} amx_types[] = {
    {T_Q4_0, 32, 0, true},    {T_Q4_1, 32, 0, true},    {T_Q8_0, 32, 4, true},   {T_Q4_K, 256, 4, true},
    {T_Q5_K, 256, 4, true},   {T_Q6_K, 256, 0, true},   {T_IQ4_XS, 256, 2, true}, {T_F16, 16, 0, false},
};

static int amx_row(int32_t type) {
    for (size_t i = 0; i < sizeof amx_types / sizeof amx_types[0]; i++)
        if (amx_types[i].type == type) return (int)i;
    return -1;
}

bool gm_amx_takes(int32_t type, const int64_t ne[4], bool mul_mat) {
    enum { TILE_N = 16 };
    const int r = amx_row(type);
    return mul_mat && r >= 0 && ne[1] % (TILE_N * 2) == 0 && ne[0] % amx_types[r].k_align == 0;
}

bool gm_amx_packs(int32_t type) {
    const int r = amx_row(type);
    return r >= 0 && amx_types[r].packed;
}

uint64_t gm_amx_alloc_size(int32_t type, const int64_t ne[4]) {
    const int r = amx_row(type);
    const ggufmap_type_info *t = ggufmap_type(type);
    if (!gm_amx_packs(type) || !t || t->block_size == 0) return ggufmap_type_nbytes(type, ne);
    const uint64_t blocks = (uint64_t)ne[0] / t->block_size; /* int K / BLOCK_K */
    return (uint64_t)ne[1] * blocks * (t->type_size + amx_types[r].extra_per_block);
}

/* ------------------------------------------------------------------------ */
/* Backends                                                                  */
/* ------------------------------------------------------------------------ */

/* ggml-metal-device.m supports_op (:1525-1950) on Apple7+ for a weight's
 * test op: element-wise ops need an F32 weight (the test input's type),
 * SCALE an F32/F16 one; matrix products and row gathers every type but
 * NVFP4 and TQ1_0; the rest (ROPE, SSM_CONV/SCAN, RWKV_WKV6, IM2COL) all. */
static bool metal_weight_supported(int32_t type, const int64_t ne[4], gm_weight_op op, const gm_ssm_dims *ssm) {
    (void)ne;
    (void)ssm;
    enum { F32 = 0, F16 = 1, TQ1_0 = 34, NVFP4 = 40 };
    switch (op) {
    case GM_WOP_ELEMENTWISE: case GM_WOP_ADD_ID: return type == F32;
    case GM_WOP_SCALE: return type == F32 || type == F16;
    case GM_WOP_MATMUL: case GM_WOP_GET_ROWS: return type != NVFP4 && type != TQ1_0;
    default: return true;
    }
}

#define CUDA_HOOKS                                                                                       \
    .alloc_extra = gm_cuda_alloc_extra, .supports_node = gm_cuda_supports_node, .runs_fa = gm_cuda_runs_fa, \
    .fa_kv_type = gm_cuda_fa_kv_type, .runs_indexer = gm_cuda_runs_indexer, .fusion = gm_cuda_fusion
static const gm_backend_def backends[] = {
    [GGUFMAP_DEVICE_CPU] = {
        .device = GGUFMAP_DEVICE_CPU, .kind = "cpu", .prefix = NULL, .alignment = 32, .alloc = GM_ALLOC_NBYTES,
        .maps_host_ptr = true, .cpu = GGUFMAP_CPU_HOST, .page = 1, .regex = GGUFMAP_REGEX_LIBSTDCXX,
    },
    /* ggml-metal.cpp: MTL0 (shared) type, alignment 32, get_alloc_size nbytes for weights (op NONE);
       caps.buffer_from_host_ptr (MTL0_Mapped); no host type, no split type (-sm row throws);
       offload_op MUL_MAT/MUL_MAT_ID of >= 32 rows (ggml-metal.cpp:744-760); Apple Silicon's 16 KiB pages;
       macOS builds use libc++; one memory for CPU and GPU */
    [GGUFMAP_DEVICE_METAL] = {
        .device = GGUFMAP_DEVICE_METAL, .kind = "metal", .prefix = "MTL", .alignment = 32,
        .alloc = GM_ALLOC_NBYTES, .maps_host_ptr = true, .weight_supported = metal_weight_supported,
        .offload = GM_OFFLOAD_MATMUL, .offload_min_batch = 32, .cpu = GGUFMAP_CPU_ARM64, .page = 16384,
        .regex = GGUFMAP_REGEX_LIBCXX, .unified = true,
    },
    /* ggml-cuda.cu: CUDA0 type, alignment 128 (:902), get_alloc_size pads quantized rows to 512
       (:908-925); no buffer_from_host_ptr: weights copied; CUDA_Host pinned type (:1263); CUDA_Split
       (-sm row); offload_op any op but GET_ROWS of >= 32 rows (:5650-5660); its supports_op,
       flash-attention kernels and fusions as hooks (device_cuda.c, measured on an H200: docs/cuda.md) */
    [GGUFMAP_DEVICE_CUDA] = {
        .device = GGUFMAP_DEVICE_CUDA, .kind = "cuda", .prefix = "CUDA", .alignment = 128,
        .alloc = GM_ALLOC_ROW_PAD_512, .host_buft = true, .split_buft = true,
        .weight_supported = gm_cuda_weight_supported,
        .offload = GM_OFFLOAD_ALL_BUT_ROWS, .offload_min_batch = 32, .cpu = GGUFMAP_CPU_HOST, .page = 1,
        .regex = GGUFMAP_REGEX_LIBSTDCXX, .fa_f16_copies = true, CUDA_HOOKS,
    },
    /* ROCm: ggml-cuda.cu built with GGML_USE_HIP, every rule above under the name "ROCm" (the hooks
       as measured on NVIDIA: an AMD GPU's flash-attention kernel choice may differ) */
    [GGUFMAP_DEVICE_ROCM] = {
        .device = GGUFMAP_DEVICE_ROCM, .kind = "rocm", .prefix = "ROCm", .alignment = 128,
        .alloc = GM_ALLOC_ROW_PAD_512, .host_buft = true, .split_buft = true,
        .weight_supported = gm_cuda_weight_supported,
        .offload = GM_OFFLOAD_ALL_BUT_ROWS, .offload_min_batch = 32, .cpu = GGUFMAP_CPU_HOST, .page = 1,
        .regex = GGUFMAP_REGEX_LIBSTDCXX, .fa_f16_copies = true, CUDA_HOOKS,
    },
};

#undef CUDA_HOOKS

const gm_backend_def *gm_backend(ggufmap_device d) {
    return (unsigned)d < sizeof backends / sizeof backends[0] ? &backends[d] : &backends[GGUFMAP_DEVICE_CPU];
}

ggufmap_cpu gm_device_cpu(ggufmap_device d, ggufmap_cpu asked) {
    if (asked != GGUFMAP_CPU_HOST) return asked;
    const ggufmap_cpu cpu = gm_backend(d)->cpu;
    return cpu == GGUFMAP_CPU_HOST ? gm_cpu_host() : cpu;
}

ggufmap_regex_dialect gm_device_regex(ggufmap_device d, ggufmap_regex_dialect asked) {
    return asked != GGUFMAP_REGEX_AUTO ? asked : gm_backend(d)->regex;
}

uint64_t gm_device_page(ggufmap_device d, uint64_t asked) { return asked ? asked : gm_backend(d)->page; }

float gm_device_split_share(const ggufmap_placement_opts *o, uint32_t i) {
    bool ts_given = false, free_known = true;
    for (uint32_t g = 0; g < o->n_gpus && g < GGUFMAP_MAX_GPUS; g++) {
        ts_given |= o->tensor_split[g] != 0.0f;
        free_known &= o->gpu_free[g] != 0;
    }
    if (ts_given) return o->tensor_split[i];
    return free_known ? (float)o->gpu_free[i] : 1.0f; /* llama.cpp: splits[i] = free (size_t to float) */
}

const char *ggufmap_device_name(ggufmap_device d) { return gm_backend(d)->kind; }

bool ggufmap_device_unified(ggufmap_device d) { return gm_backend(d)->unified; }

/* ------------------------------------------------------------------------ */
/* Buffer types                                                              */
/* ------------------------------------------------------------------------ */

/* The names of the kinds that are not a GPU's own (ggml-cpu.cpp "CPU",
 * repack.cpp:5163 "CPU_REPACK", amx.cpp:123 "AMX", the host types
 * "<prefix>_Host"); a mapped buffer is the type's name + "_Mapped"
 * (llama-model.cpp's buffer names, ggml-backend.cpp:2523). */
static const char *const kind_names[] = {
    [GGUFMAP_BUFT_CPU] = "CPU", [GGUFMAP_BUFT_CPU_REPACK] = "CPU_REPACK", [GGUFMAP_BUFT_CPU_AMX] = "AMX",
};
static const char host_suffix[] = "_Host", mapped_suffix[] = "_Mapped";

const char *gm_buft_name(ggufmap_device d, gm_buft_id b, bool mapped, char *buf, size_t cap) {
    const char *prefix = gm_backend(d)->prefix ? gm_backend(d)->prefix : "";
    const char *suffix = mapped ? mapped_suffix : "";
    switch (b.kind) {
    case GGUFMAP_BUFT_GPU: snprintf(buf, cap, "%s%u%s", prefix, b.gpu, suffix); break;
    case GGUFMAP_BUFT_GPU_HOST: snprintf(buf, cap, "%s%s%s", prefix, host_suffix, suffix); break;
    default:
        snprintf(buf, cap, "%s%s", (unsigned)b.kind < sizeof kind_names / sizeof kind_names[0] && kind_names[b.kind]
                                       ? kind_names[b.kind] : "?", suffix);
    }
    return buf;
}

const char *gm_cpu_buft_name(void) { return kind_names[GGUFMAP_BUFT_CPU]; }

const char *ggufmap_buft_name(ggufmap_device d, ggufmap_buft_kind kind, uint32_t ordinal, char *buf, size_t cap) {
    return gm_buft_name(d, (gm_buft_id){kind, kind == GGUFMAP_BUFT_GPU ? ordinal : 0}, false, buf, cap);
}

/* "<prefix><ordinal>" with a decimal ordinal, as ggml-cuda and ggml-metal name their devices */
static bool parse_ordinal(const char *name, const char *prefix, uint32_t *gpu) {
    const size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9') return false;
    uint64_t v = 0;
    const char *s = name + n;
    for (; *s >= '0' && *s <= '9' && v < 1000000; s++) v = v * 10 + (uint64_t)(*s - '0');
    if (*s || (name[n] == '0' && name[n + 1])) return false;
    *gpu = (uint32_t)v;
    return true;
}

bool gm_buft_parse(ggufmap_device d, const char *name, uint32_t max_gpu, gm_buft_id *out) {
    const gm_backend_def *be = gm_backend(d);
    char host[32];
    for (unsigned k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
        if (kind_names[k] && strcmp(name, kind_names[k]) == 0) {
            *out = (gm_buft_id){(ggufmap_buft_kind)k, 0};
            return true;
        }
    if (!be->prefix) return false;
    snprintf(host, sizeof host, "%s%s", be->prefix, host_suffix);
    if (be->host_buft && strcmp(name, host) == 0) {
        *out = (gm_buft_id){GGUFMAP_BUFT_GPU_HOST, 0};
        return true;
    }
    uint32_t gpu;
    if (!parse_ordinal(name, be->prefix, &gpu) || gpu > max_gpu) return false;
    *out = (gm_buft_id){GGUFMAP_BUFT_GPU, gpu};
    return true;
}

int gm_buft_kind_of_name(const char *name) {
    gm_buft_id b;
    for (unsigned d = 0; d < sizeof backends / sizeof backends[0]; d++)
        if (gm_buft_parse((ggufmap_device)d, name, UINT32_MAX, &b)) return (int)b.kind;
    return -1;
}

uint32_t gm_buft_alignment(ggufmap_device d, ggufmap_buft_kind kind) {
    /* TENSOR_ALIGNMENT 32 for the CPU's types and the host types (ggml-impl.h:44) */
    return kind == GGUFMAP_BUFT_GPU ? gm_backend(d)->alignment : 32;
}

static gm_alloc_rule alloc_rule(ggufmap_device d, ggufmap_buft_kind kind) {
    switch (kind) {
    case GGUFMAP_BUFT_GPU: return gm_backend(d)->alloc;
    case GGUFMAP_BUFT_CPU_AMX: return GM_ALLOC_AMX;
    default: return GM_ALLOC_NBYTES;
    }
}

uint64_t gm_buft_row_pad(ggufmap_device d, ggufmap_buft_kind kind, int32_t type, int64_t ne0) {
    enum { MATRIX_ROW_PADDING = 512 };
    const ggufmap_type_info *t = ggufmap_type(type);
    if (alloc_rule(d, kind) != GM_ALLOC_ROW_PAD_512 || !t || t->block_size <= 1 || ne0 % MATRIX_ROW_PADDING == 0)
        return 0;
    return (uint64_t)t->type_size * (uint64_t)((MATRIX_ROW_PADDING - ne0 % MATRIX_ROW_PADDING) / t->block_size);
}

uint64_t gm_buft_alloc_size(ggufmap_device d, ggufmap_buft_kind kind, int32_t type, const int64_t ne[4]) {
    if (alloc_rule(d, kind) == GM_ALLOC_AMX) return gm_amx_alloc_size(type, ne);
    return ggufmap_type_nbytes(type, ne) + gm_buft_row_pad(d, kind, type, ne[0]);
}

bool gm_buft_is_host(ggufmap_buft_kind kind) { return kind == GGUFMAP_BUFT_CPU || kind == GGUFMAP_BUFT_GPU_HOST; }

bool gm_buft_maps(ggufmap_device d, ggufmap_buft_kind kind) {
    return kind == GGUFMAP_BUFT_CPU || (kind == GGUFMAP_BUFT_GPU && gm_backend(d)->maps_host_ptr);
}

ggufmap_buft_kind gm_cpu_compute_buft(ggufmap_device d) {
    return gm_backend(d)->host_buft ? GGUFMAP_BUFT_GPU_HOST : GGUFMAP_BUFT_CPU;
}

/* ------------------------------------------------------------------------ */
/* Devices by name                                                           */
/* ------------------------------------------------------------------------ */

static bool same_ci(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20)) return false;
    return *a == *b;
}

/* a device name "<prefix><ordinal>" in any case */
static bool parse_ordinal_ci(const char *name, const char *prefix, uint32_t *ordinal) {
    char lower[64], low_prefix[16];
    size_t n = strlen(name), m = strlen(prefix);
    if (n >= sizeof lower || m >= sizeof low_prefix) return false;
    for (size_t i = 0; i <= n; i++) lower[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] | 0x20) : name[i];
    for (size_t i = 0; i <= m; i++) low_prefix[i] = prefix[i] >= 'A' && prefix[i] <= 'Z' ? (char)(prefix[i] | 0x20) : prefix[i];
    return parse_ordinal(lower, low_prefix, ordinal);
}

int ggufmap_device_parse(const char *name, ggufmap_device *device, uint32_t *ordinal, ggufmap_error *err) {
    static const struct { const char *alias; ggufmap_device d; } aliases[] = {
        {"none", GGUFMAP_DEVICE_CPU}, {"hip", GGUFMAP_DEVICE_ROCM},
    };
    *ordinal = 0;
    for (unsigned d = 0; d < sizeof backends / sizeof backends[0]; d++) {
        const gm_backend_def *be = &backends[d];
        if (same_ci(name, be->kind) || (be->prefix && parse_ordinal_ci(name, be->prefix, ordinal))) {
            *device = be->device;
            return GGUFMAP_OK;
        }
    }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (same_ci(name, aliases[i].alias)) {
            *device = aliases[i].d;
            return GGUFMAP_OK;
        }
    uint32_t vk;
    if (same_ci(name, "vulkan") || parse_ordinal_ci(name, "vulkan", &vk))
        return gm_fail(err, GGUFMAP_ENOTFOUND,
                       "%s: Vulkan is not modelled: the alignment and the size of its buffers are the GPU's own "
                       "(minStorageBufferOffsetAlignment, suballocation_block_size, read when ggml opens the device: "
                       "ggml-vulkan.cpp:12786-12798), so its buffers cannot be predicted from the model", name);
    return gm_fail(err, GGUFMAP_EINVAL, "%s: not a device: expected cpu, none, metal, cuda, rocm or a device name "
                   "(MTL0, CUDA0, CUDA1, ROCm0, ...)", name);
}

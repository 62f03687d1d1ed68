/*
 * device.c - the machine llama.cpp runs on, as data.
 *
 * Data structure.  Static tables, one row per thing llama.cpp's build
 * knows: the x86 CPU variants of the prebuilt ggml (the feature tags each
 * was compiled with, which also make its score), the CPU_REPACK rules of
 * each CPU kind, and the weight types ggml's AMX buffer type packs.
 *
 * Workload.  Placement asks, per weight, whether an extra buffer type takes
 * it and what it costs there; the host's kind is decided once per
 * placement from CPUID (a handful of instructions).
 *
 * Fidelity.  The variant table is ggml/src/CMakeLists.txt:494-517 (the
 * GGML_CPU_ALL_VARIANTS set the npm build ships), the score
 * ggml-cpu/arch/x86/cpu-feats.cpp:279-330, the repack rules
 * ggml-cpu/repack.cpp:4925-5141, the AMX rules ggml-cpu/amx/amx.cpp and
 * mmq.cpp.  tests/plan (differential) checks them against the real
 * llama.cpp on the host it runs on, whichever variant ggml loads there.
 */
#include "device.h"

#include <string.h>

#include "ggufmap/types.h"
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

/*
 * device.h - the machine llama.cpp runs on, as data (internal).
 *
 * One module owns what a backend is: its buffer types with llama.cpp's
 * names, which weights its extra buffer types take, how much a tensor
 * costs in them, and how ggml picks the CPU variant that decides those
 * rules on this host.  Placement, plan and fit ask here; nobody else
 * spells a rule.
 */
#ifndef GGUFMAP_DEVICE_H
#define GGUFMAP_DEVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/placement.h"

/* ------------------------------------------------------------------------ */
/* The CPU                                                                   */
/* ------------------------------------------------------------------------ */

/* x86 features as ggml's cpu-feats.cpp reads them from CPUID
 * (gm_os_x86_features fills them). */
enum {
    GM_X86_SSE42 = 1u << 0,
    GM_X86_AVX = 1u << 1,
    GM_X86_F16C = 1u << 2,
    GM_X86_FMA = 1u << 3,
    GM_X86_BMI2 = 1u << 4,
    GM_X86_AVX2 = 1u << 5,
    GM_X86_AVX_VNNI = 1u << 6,
    GM_X86_AVX512F = 1u << 7,
    GM_X86_AVX512CD = 1u << 8,
    GM_X86_AVX512VL = 1u << 9,
    GM_X86_AVX512DQ = 1u << 10,
    GM_X86_AVX512BW = 1u << 11,
    GM_X86_AVX512_VBMI = 1u << 12,
    GM_X86_AVX512_VNNI = 1u << 13,
    GM_X86_AVX512_BF16 = 1u << 14,
    GM_X86_AMX_INT8 = 1u << 15,
};

/* The CPU variant ggml loads on a processor with these features (the
 * best-scoring one of the prebuilt x86 set, ggml_backend_load_best), its
 * name ("sapphirerapids", "zen4", "haswell", ...), and the CPU rules it
 * implies (whether the AMX buffer type exists also needs the kernel's
 * permission: amx_permitted). */
ggufmap_cpu gm_cpu_of_x86(uint32_t features, bool amx_permitted, const char **variant);

/* This machine's CPU rules (GGUFMAP_CPU_HOST resolved). */
ggufmap_cpu gm_cpu_host(void);

/* Whether the CPU with these rules offers ggml's AMX buffer type ("AMX",
 * ahead of CPU_REPACK among the CPU's extra buffer types). */
bool gm_cpu_has_amx(ggufmap_cpu cpu);

/* ggml_repack_get_optimal_repack_type: does this CPU repack a weight of
 * this type with r rows per matrix? */
bool gm_cpu_repacks(ggufmap_cpu cpu, int32_t type, int64_t r);

/* The AMX buffer type's supports_op for a weight's test op (amx.cpp): a
 * matrix product (not MUL_MAT_ID) of a type with AMX kernels, or F16, whose
 * rows are a multiple of 32 and whose row length the kernel's block
 * divides.  ne[2] is not looked at (see gm_amx_alloc_size). */
bool gm_amx_takes(int32_t type, const int64_t ne[4], bool mul_mat);

/* Whether AMX packs weights of this type (qtype_has_amx_kernels; F16 is
 * taken but kept as it is). */
bool gm_amx_packs(int32_t type);

/* ggml_backend_amx_get_alloc_size: a type with AMX kernels is packed into
 * ne[1] rows of the VNNI layout (blocks plus per-block extras for Q8_0,
 * Q4_K, Q5_K and IQ4_XS); F16 keeps its bytes.  Only the first matrix of a
 * 3-D weight is counted and packed, while the kernels step through the
 * others by the unpacked strides (ggml_batch_offset): llama.cpp v0.5.0
 * computes wrong products with such a weight (placement warns). */
uint64_t gm_amx_alloc_size(int32_t type, const int64_t ne[4]);

#endif

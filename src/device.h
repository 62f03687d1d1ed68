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

/* ------------------------------------------------------------------------ */
/* The CUDA GPU (device_cuda.c; measured on an H200: docs/cuda.md)           */
/* ------------------------------------------------------------------------ */

/* A FLASH_ATTN_EXT node as ggml-cuda looks at it: Q [d_k, n_q, n_head,
 * q_ne3], K [d_k, n_kv, n_head_kv, ...] of type_k, V [d_v, ...] of type_v. */
typedef struct gm_cuda_fattn {
    int64_t d_k, d_v;       /* K->ne[0], V->ne[0] */
    int64_t n_q, q_ne3;     /* Q->ne[1], Q->ne[3] */
    int64_t n_kv;           /* K->ne[1] */
    int64_t gqa;            /* Q->ne[2] / K->ne[2] */
    int32_t type_k, type_v;
    int64_t nel_k, nel_v;   /* ggml_nelements of K and V */
    bool mask;              /* a KQ mask is given */
    bool rows_aligned;      /* Q, K, V and the mask (those not quantized) have strides of 16 bytes */
    bool v_is_k_view;       /* V views K's data (MLA) */
} gm_cuda_fattn;

typedef enum gm_cuda_fa_kernel { GM_CUDA_FA_NONE, GM_CUDA_FA_VEC, GM_CUDA_FA_TILE, GM_CUDA_FA_MMA } gm_cuda_fa_kernel;

/* ggml_cuda_get_best_fattn_kernel: GM_CUDA_FA_NONE where CUDA has no kernel
 * (its supports_op refuses the node: a head size without kernels, a K or V
 * type such as IQ4_NL, a 192/320/512/576 head without the GQA the kernel
 * needs); the kernel it runs otherwise. */
gm_cuda_fa_kernel gm_cuda_fattn_kernel(const gm_cuda_fattn *fa);

/* A K or V type ggml-cuda's flash attention takes (f32, f16, bf16, q4_0,
 * q4_1, q5_0, q5_1, q8_0; not iq4_nl) */
bool gm_cuda_fattn_type(int32_t type);

/* ggml_cuda_flash_attn_ext_get_alloc_size: the output's nbytes plus, 128
 * bytes aligned, f16 copies of K and of V where the kernel needs them
 * (tensor-core kernels for a K or V not in F16; the vector kernel for F32
 * or a K/V pair it was not compiled for). */
uint64_t gm_cuda_fattn_alloc_size(const gm_cuda_fattn *fa, uint64_t nbytes);

/* supports_op for SSM_CONV (the channels, conv_x->ne[1], a multiple of
 * 128) and SSM_SCAN (Mamba-2: d_state 128 or 256 and head_dim a multiple
 * of 16; Mamba-1: d_state 16, one group, n_head a multiple of 128). */
bool gm_cuda_ssm_conv(int64_t channels);
bool gm_cuda_ssm_scan(int64_t d_state, int64_t head_dim, int64_t n_head, int64_t n_group, bool mamba2);

#endif

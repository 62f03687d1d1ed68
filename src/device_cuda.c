/*
 * device_cuda.c - the CUDA profile: what llama.cpp v0.5.0's ggml-cuda
 * decides that changes memory, as data and small predicates.
 *
 * Data structure.  Tables of the ggml types ggml-cuda's flash attention
 * takes and of the K/V pairs its vector kernel was compiled for (llama.cpp's
 * default build: GGML_CUDA_FA_QUANTS = q4_0-q4_0, q8_0-q8_0, f16-f16,
 * bf16-bf16); the head sizes of its kernels; the shapes its SSM kernels
 * need.  Callers describe an op by its shapes (gm_cuda_fattn) and ask.
 *
 * Workload.  Placement asks once per weight (the test op of
 * weight_buft_supported); the scheduler model asks once per graph node; the
 * allocator model once per FLASH_ATTN_EXT node.  Constant time each.
 *
 * Fidelity.  The GPU is an NVIDIA one with Turing tensor cores and compute
 * capability 8.9 or more (Ada, Hopper, Blackwell): the H200 of the
 * measured run (docs/cuda.md, tests/cuda).  Older GPUs pick other
 * flash-attention kernels (fattn.cu:655-700), which changes only the f16
 * copies below.  Sources: ggml-cuda.cu:5132-5489 (supports_op),
 * ggml-cuda.cu:908-925 (get_alloc_size), fattn.cu:436-752 (kernel choice
 * and its allocation), fattn-common.cuh:53-80 (the f16 copies).
 */
#include "device.h"

#include "ggufmap/types.h"

enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_BF16 = 30 };

/* ------------------------------------------------------------------------ */
/* Flash attention                                                           */
/* ------------------------------------------------------------------------ */

/* ggml_cuda_fattn_kv_type_supported (fattn.cu:525-539) */
static const int32_t fattn_kv_types[] = { T_F32, T_F16, T_BF16, T_Q4_0, T_Q4_1, T_Q5_0, T_Q5_1, T_Q8_0 };

/* The vector kernel's compiled K-V pairs (GGML_CUDA_FA_QUANTS' default,
 * ggml/CMakeLists.txt:207; an F32 K or V uses the F16 instance,
 * fattn.cu:418-426), for head sizes 64, 128 and 256 */
static const struct { int32_t k, v; } fattn_vec_pairs[] = {
    { T_F16, T_F16 }, { T_Q4_0, T_Q4_0 }, { T_Q8_0, T_Q8_0 }, { T_BF16, T_BF16 },
};

static bool is_quantized(int32_t type) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return t && t->block_size > 1;
}

bool gm_cuda_fattn_type(int32_t type) {
    for (size_t i = 0; i < sizeof fattn_kv_types / sizeof fattn_kv_types[0]; i++)
        if (fattn_kv_types[i] == type) return true;
    return false;
}

/* ggml_cuda_get_fattn_vec_case != nullptr */
static bool fattn_vec_compiled(int64_t d, int32_t k, int32_t v) {
    if (d != 64 && d != 128 && d != 256) return false;
    if (k == T_F32) k = T_F16;
    if (v == T_F32) v = T_F16;
    for (size_t i = 0; i < sizeof fattn_vec_pairs / sizeof fattn_vec_pairs[0]; i++)
        if (fattn_vec_pairs[i].k == k && fattn_vec_pairs[i].v == v) return true;
    return false;
}

/* gqa_opt_applies (fattn.cu:558-571) */
static bool gqa_opt_applies(const gm_cuda_fattn *a) {
    return a->gqa >= 2 && a->mask && a->n_kv % 256 == 0 && a->rows_aligned;
}

/* The head sizes with kernels (fattn.cu:575-620): K and V alike, or
 * DeepSeek's 192/128, 320/256 and MLA's 576/512 with enough query heads
 * per K head. */
static bool fattn_head_supported(const gm_cuda_fattn *a) {
    switch (a->d_k) {
    case 40: case 64: case 72: case 80: case 96: case 112: case 128: case 256: return a->d_v == a->d_k;
    case 192: return a->d_v == 128 && gqa_opt_applies(a) && a->gqa % 8 == 0;
    case 320: return a->d_v == 256 && gqa_opt_applies(a) && a->gqa % 32 == 0;
    case 512: return a->d_v == 512 && gqa_opt_applies(a);
    case 576: return a->d_v == 512 && gqa_opt_applies(a);
    default: return false;
    }
}

gm_cuda_fa_kernel gm_cuda_fattn_kernel(const gm_cuda_fattn *a) {
    if (!fattn_head_supported(a) || !gm_cuda_fattn_type(a->type_k) || !gm_cuda_fattn_type(a->type_v))
        return GM_CUDA_FA_NONE;
    /* the mask's ne[2] is 1 in every llama.cpp graph */
    const int64_t d = a->d_k;
    const bool can_vec = d <= 256 && d % 64 == 0 && d != 192 && a->n_kv % 256 == 0;
    if (d == 40 || d == 72) return can_vec ? GM_CUDA_FA_VEC : GM_CUDA_FA_TILE; /* no tensor-core kernel */
    if (can_vec) {
        if (!is_quantized(a->type_k) && !is_quantized(a->type_v)) {
            /* the sparse single-query gather (256/256 and 512 heads, GQA > 4)
             * is not modelled: it only moves a one-token batch to the MMA kernel */
            if (a->n_q == 1 && a->q_ne3 == 1 && !(a->gqa > 4 && (d >= 256 || a->n_kv >= 8192))) return GM_CUDA_FA_VEC;
        } else if (a->n_q <= 2) {
            return GM_CUDA_FA_VEC;
        }
        if (!gqa_opt_applies(a) && a->n_q == 1) return GM_CUDA_FA_VEC;
    }
    return GM_CUDA_FA_MMA;
}

static uint64_t pad128(uint64_t x) { return (x + 127) & ~(uint64_t)127; }

uint64_t gm_cuda_fattn_alloc_size(const gm_cuda_fattn *a, uint64_t nbytes) {
    bool need_k = false, need_v = false;
    switch (gm_cuda_fattn_kernel(a)) {
    case GM_CUDA_FA_TILE:
    case GM_CUDA_FA_MMA: need_k = need_v = true; break;
    case GM_CUDA_FA_VEC: {
        const bool fallback = !fattn_vec_compiled(a->d_k, a->type_k, a->type_v);
        need_k = a->type_k == T_F32 || fallback;
        need_v = a->type_v == T_F32 || fallback;
        break;
    }
    default: return nbytes;
    }
    /* ggml_cuda_flash_attn_ext_get_f16_extra_data, from a NULL data pointer
     * as ggml-alloc asks: K's then V's f16 copy, each 128-aligned */
    uint64_t end = nbytes;
    if (need_k && a->type_k != T_F16) end = pad128(end) + (uint64_t)a->nel_k * 2u;
    if (need_v && a->type_v != T_F16 && !a->v_is_k_view) end = pad128(end) + (uint64_t)a->nel_v * 2u;
    return end;
}

/* ------------------------------------------------------------------------ */
/* State-space ops                                                           */
/* ------------------------------------------------------------------------ */

bool gm_cuda_ssm_conv(int64_t channels) { return channels % 128 == 0; }

bool gm_cuda_ssm_scan(int64_t d_state, int64_t head_dim, int64_t n_head, int64_t n_group, bool mamba2) {
    if (mamba2) return (d_state == 128 || d_state == 256) && head_dim % 16 == 0;
    return d_state == 16 && head_dim == 1 && n_head % 128 == 0 && n_group == 1;
}

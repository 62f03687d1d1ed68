/*
 * A fake GPU device for ggufmap-oracle, registered at run time with
 * ggml_backend_register(). It lets the prebuilt, CPU-only llama.cpp v0.5.0
 * place layers on "a GPU" so that n_gpu_layers, GPU buffer-type overrides and
 * GPU mapped buffers can be observed on a machine without one.
 *
 *   metal: device MTL0 (registry "Metal"), default buft MTL0, no host buft,
 *          caps.buffer_from_host_ptr = 1: mmap'ed weights of GPU layers become
 *          a MTL0_Mapped buffer that wraps the mapping (zero copy).
 *   cuda:  device CUDA0 (registry "CUDA"), default buft CUDA0 (allocated,
 *          alignment 128, CUDA's row padding of quantized tensors), host buft
 *          CUDA_Host (is_host, allocated), caps.buffer_from_host_ptr = 0.
 *
 * Compute: init_backend gives a backend stream that hands every graph to a
 * CPU backend of its own, so a llama_context can be created and decode on
 * the fake device. Tensor data lives in host memory (aligned_alloc or the
 * mapping itself), which is what makes that possible; set/get/memset/clear/
 * cpy are plain memory operations. For the scheduler (which decides where
 * each op runs, and so how big each compute buffer is) the device behaves
 * like the real one: supports_buft accepts only the device's own buffer
 * types, and offload_op is Metal's or CUDA's rule for ops whose weights are
 * on the CPU.
 *
 * This file uses ggml's internal structs from ggml/src/ggml-backend-impl.h of
 * exactly the pinned tree (v0.5.0, de3ff815). The static assertions below pin
 * the slot lists: a header of another version shifts function pointers
 * silently, ggml_backend_register() does not check api_version.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "fake_gpu.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "ggml-backend.h"
#include "ggml-backend-impl.h"

/* ------------------------------------------------------------------ */
/* ABI pins for v0.5.0 (de3ff815ea7d559ee917f063901b8986f038abc6)      */
/* ------------------------------------------------------------------ */

typedef void (*any_fn)(void);
#define SLOTS(n) ((n) * sizeof(any_fn))
#define SLOT_AT(type, member, i) _Static_assert(offsetof(type, member) == SLOTS(i), #type "." #member " slot")

_Static_assert(GGML_BACKEND_API_VERSION == 2, "ggml-backend-impl.h is not the v0.5.0 one");

_Static_assert(sizeof(struct ggml_backend_buffer_type_i) == SLOTS(6), "ggml_backend_buffer_type_i: 6 slots");
SLOT_AT(struct ggml_backend_buffer_type_i, get_name, 0);
SLOT_AT(struct ggml_backend_buffer_type_i, alloc_buffer, 1);
SLOT_AT(struct ggml_backend_buffer_type_i, get_alignment, 2);
SLOT_AT(struct ggml_backend_buffer_type_i, get_max_size, 3);
SLOT_AT(struct ggml_backend_buffer_type_i, get_alloc_size, 4);
SLOT_AT(struct ggml_backend_buffer_type_i, is_host, 5);

_Static_assert(sizeof(struct ggml_backend_buffer_i) == SLOTS(11), "ggml_backend_buffer_i: 11 slots");
SLOT_AT(struct ggml_backend_buffer_i, free_buffer, 0);
SLOT_AT(struct ggml_backend_buffer_i, get_base, 1);
SLOT_AT(struct ggml_backend_buffer_i, init_tensor, 2);
SLOT_AT(struct ggml_backend_buffer_i, memset_tensor, 3);
SLOT_AT(struct ggml_backend_buffer_i, set_tensor, 4);
SLOT_AT(struct ggml_backend_buffer_i, get_tensor, 5);
SLOT_AT(struct ggml_backend_buffer_i, set_tensor_2d, 6);
SLOT_AT(struct ggml_backend_buffer_i, get_tensor_2d, 7);
SLOT_AT(struct ggml_backend_buffer_i, cpy_tensor, 8);
SLOT_AT(struct ggml_backend_buffer_i, clear, 9);
SLOT_AT(struct ggml_backend_buffer_i, reset, 10);

_Static_assert(sizeof(struct ggml_backend_device_i) == SLOTS(15), "ggml_backend_device_i: 15 slots");
SLOT_AT(struct ggml_backend_device_i, get_name, 0);
SLOT_AT(struct ggml_backend_device_i, get_description, 1);
SLOT_AT(struct ggml_backend_device_i, get_memory, 2);
SLOT_AT(struct ggml_backend_device_i, get_type, 3);
SLOT_AT(struct ggml_backend_device_i, get_props, 4);
SLOT_AT(struct ggml_backend_device_i, init_backend, 5);
SLOT_AT(struct ggml_backend_device_i, get_buffer_type, 6);
SLOT_AT(struct ggml_backend_device_i, get_host_buffer_type, 7);
SLOT_AT(struct ggml_backend_device_i, buffer_from_host_ptr, 8);
SLOT_AT(struct ggml_backend_device_i, supports_op, 9);
SLOT_AT(struct ggml_backend_device_i, supports_buft, 10);
SLOT_AT(struct ggml_backend_device_i, offload_op, 11);
SLOT_AT(struct ggml_backend_device_i, event_new, 12);
SLOT_AT(struct ggml_backend_device_i, event_free, 13);
SLOT_AT(struct ggml_backend_device_i, event_synchronize, 14);

_Static_assert(sizeof(struct ggml_backend_reg_i) == SLOTS(4), "ggml_backend_reg_i: 4 slots");
SLOT_AT(struct ggml_backend_reg_i, get_name, 0);
SLOT_AT(struct ggml_backend_reg_i, get_device_count, 1);
SLOT_AT(struct ggml_backend_reg_i, get_device, 2);
SLOT_AT(struct ggml_backend_reg_i, get_proc_address, 3);

_Static_assert(sizeof(struct ggml_backend_i) == SLOTS(16), "ggml_backend_i: 16 slots");
SLOT_AT(struct ggml_backend_i, get_name, 0);
SLOT_AT(struct ggml_backend_i, free, 1);
SLOT_AT(struct ggml_backend_i, set_tensor_async, 2);
SLOT_AT(struct ggml_backend_i, get_tensor_async, 3);
SLOT_AT(struct ggml_backend_i, set_tensor_2d_async, 4);
SLOT_AT(struct ggml_backend_i, get_tensor_2d_async, 5);
SLOT_AT(struct ggml_backend_i, cpy_tensor_async, 6);
SLOT_AT(struct ggml_backend_i, synchronize, 7);
SLOT_AT(struct ggml_backend_i, graph_plan_create, 8);
SLOT_AT(struct ggml_backend_i, graph_plan_free, 9);
SLOT_AT(struct ggml_backend_i, graph_plan_update, 10);
SLOT_AT(struct ggml_backend_i, graph_plan_compute, 11);
SLOT_AT(struct ggml_backend_i, graph_compute, 12);
SLOT_AT(struct ggml_backend_i, event_record, 13);
SLOT_AT(struct ggml_backend_i, event_wait, 14);
SLOT_AT(struct ggml_backend_i, graph_optimize, 15);
_Static_assert(offsetof(struct ggml_backend, iface) == sizeof(void *), "ggml_backend layout");
_Static_assert(offsetof(struct ggml_backend, device) == sizeof(void *) + sizeof(struct ggml_backend_i),
               "ggml_backend layout");

_Static_assert(offsetof(struct ggml_backend_reg, iface) == sizeof(void *), "ggml_backend_reg layout");
_Static_assert(offsetof(struct ggml_backend_device, reg) == sizeof(struct ggml_backend_device_i),
               "ggml_backend_device layout");
_Static_assert(offsetof(struct ggml_backend_buffer_type, device) == sizeof(struct ggml_backend_buffer_type_i),
               "ggml_backend_buffer_type layout");

/* caps: 5 bools in this order (mmap_support is new in this generation) */
_Static_assert(sizeof(struct ggml_backend_dev_caps) == 5 * sizeof(bool), "ggml_backend_dev_caps: 5 bools");
_Static_assert(offsetof(struct ggml_backend_dev_caps, async) == 0, "caps.async");
_Static_assert(offsetof(struct ggml_backend_dev_caps, host_buffer) == 1, "caps.host_buffer");
_Static_assert(offsetof(struct ggml_backend_dev_caps, buffer_from_host_ptr) == 2, "caps.buffer_from_host_ptr");
_Static_assert(offsetof(struct ggml_backend_dev_caps, events) == 3, "caps.events");
_Static_assert(offsetof(struct ggml_backend_dev_caps, mmap_support) == 4, "caps.mmap_support");

/* ------------------------------------------------------------------ */
/* the devices                                                         */
/* ------------------------------------------------------------------ */

#define FAKE_MEMORY ((size_t)1 << 40) /* 1 TiB free and total */

/* context of each of our buffer types */
struct fake_buft_ctx {
    char name[32];
    size_t alignment;
    bool is_host;
    bool cuda_row_padding; /* CUDA's get_alloc_size for quantized tensors */
};

/* one fake device: MTL<i> or CUDA<i>, its own default and mapped types */
struct fake_dev {
    char name[16];
    char description[64];
    char device_id[32];
    struct fake_buft_ctx def_ctx, mapped_ctx;
    struct ggml_backend_buffer_type def_buft, mapped_buft;
    struct ggml_backend_device dev;
};

/* the registry: one backend with n devices (as ggml-cuda registers every GPU),
 * one pinned host type for all of them (ggml_backend_cuda_host_buffer_type,
 * whose device is the first GPU) */
struct fake_gpu {
    enum fake_gpu_kind kind;
    int n_devices;
    const char *reg_name;
    struct ggml_backend_dev_caps caps;
    bool has_host_buft;
    struct fake_buft_ctx host_ctx;
    struct ggml_backend_buffer_type host_buft;
    struct fake_dev devs[FAKE_GPU_MAX_DEVICES];
    struct ggml_backend_reg reg;
};

static struct fake_gpu g_fake;
static size_t g_free[FAKE_GPU_MAX_DEVICES]; /* fake_gpu_set_free; 0: FAKE_MEMORY */

void fake_gpu_set_free(int device, size_t free_bytes)
{
    if (device >= 0 && device < FAKE_GPU_MAX_DEVICES)
        g_free[device] = free_bytes;
}

static struct fake_dev *dev_of(ggml_backend_dev_t dev)
{
    return dev->context;
}

static bool is_own_buft(ggml_backend_buffer_type_t buft)
{
    for (int i = 0; i < g_fake.n_devices; i++)
        if (buft == &g_fake.devs[i].def_buft || buft == &g_fake.devs[i].mapped_buft)
            return true;
    return g_fake.has_host_buft && buft == &g_fake.host_buft;
}

/* ------------------------------------------------------------------ */
/* buffers: host memory, plain memory operations                       */
/* ------------------------------------------------------------------ */

static void *buf_get_base(ggml_backend_buffer_t buffer)
{
    return buffer->context;
}

static void buf_free(ggml_backend_buffer_t buffer)
{
    free(buffer->context);
}

static void buf_memset_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor, uint8_t value, size_t offset,
                              size_t size)
{
    (void)buffer;
    memset((char *)tensor->data + offset, value, size);
}

static void buf_set_tensor(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor, const void *data, size_t offset,
                           size_t size)
{
    (void)buffer;
    memcpy((char *)tensor->data + offset, data, size);
}

static void buf_get_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor *tensor, void *data, size_t offset,
                           size_t size)
{
    (void)buffer;
    memcpy(data, (const char *)tensor->data + offset, size);
}

static bool buf_cpy_tensor(ggml_backend_buffer_t buffer, const struct ggml_tensor *src, struct ggml_tensor *dst)
{
    (void)buffer;
    /* our data is host memory; so is that of host buffers */
    if (src->buffer && (ggml_backend_buffer_is_host(src->buffer) || is_own_buft(src->buffer->buft))) {
        memcpy(dst->data, src->data, ggml_nbytes(src));
        return true;
    }
    return false;
}

static void buf_clear(ggml_backend_buffer_t buffer, uint8_t value)
{
    memset(buffer->context, value, buffer->size);
}

/* allocated buffers (MTL0, CUDA0, CUDA_Host): own the memory */
static const struct ggml_backend_buffer_i alloc_buffer_iface = {
    .free_buffer = buf_free,
    .get_base = buf_get_base,
    .init_tensor = NULL,
    .memset_tensor = buf_memset_tensor,
    .set_tensor = buf_set_tensor,
    .get_tensor = buf_get_tensor,
    .set_tensor_2d = NULL,
    .get_tensor_2d = NULL,
    .cpy_tensor = buf_cpy_tensor,
    .clear = buf_clear,
    .reset = NULL,
};

/* MTL0_Mapped: wraps the caller's pointer, owns nothing, no alignment assert */
static const struct ggml_backend_buffer_i mapped_buffer_iface = {
    .free_buffer = NULL,
    .get_base = buf_get_base,
    .init_tensor = NULL,
    .memset_tensor = buf_memset_tensor,
    .set_tensor = buf_set_tensor,
    .get_tensor = buf_get_tensor,
    .set_tensor_2d = NULL,
    .get_tensor_2d = NULL,
    .cpy_tensor = buf_cpy_tensor,
    .clear = buf_clear,
    .reset = NULL,
};

/* ------------------------------------------------------------------ */
/* buffer types                                                        */
/* ------------------------------------------------------------------ */

static const char *buft_get_name(ggml_backend_buffer_type_t buft)
{
    return ((const struct fake_buft_ctx *)buft->context)->name;
}

static size_t buft_get_alignment(ggml_backend_buffer_type_t buft)
{
    return ((const struct fake_buft_ctx *)buft->context)->alignment;
}

static bool buft_is_host(ggml_backend_buffer_type_t buft)
{
    return ((const struct fake_buft_ctx *)buft->context)->is_host;
}

static ggml_backend_buffer_t buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size)
{
    size_t align = buft_get_alignment(buft);
    size_t n = size ? size : 1;
    n = (n + align - 1) / align * align; /* aligned_alloc: size must be a multiple */
    void *p = aligned_alloc(align, n);
    if (!p) {
        fprintf(stderr, "ggufmap-oracle: fake %s: cannot allocate %zu bytes\n", buft_get_name(buft), size);
        return NULL;
    }
    return ggml_backend_buffer_init(buft, alloc_buffer_iface, p, size);
}

/* ------------------------------------------------------------------ */
/* the CUDA profile: what ggml-cuda decides that changes memory         */
/* ------------------------------------------------------------------ */

/* The fake CUDA device follows the rules measured on a real H200 (ggufmap's
 * src/device_cuda.c, docs/cuda.md): which flash-attention nodes and SSM ops
 * it runs (ggml-cuda.cu:5132-5489), the f16 copies of K and V its
 * flash-attention kernels add to the output's allocation (fattn.cu:436-752,
 * fattn-common.cuh:53-80), and the allocation dependencies of its fused MoE
 * reduction (ggml-cuda.cu:3047-3175, 4505-4535). An NVIDIA GPU of compute
 * capability >= 8.9 built with llama.cpp's defaults (vector kernels for
 * f16-f16, q4_0-q4_0, q8_0-q8_0, bf16-bf16). */

enum fattn_kernel { FATTN_NONE, FATTN_VEC, FATTN_TILE, FATTN_MMA };

static bool fattn_kv_type(enum ggml_type t)
{
    return t == GGML_TYPE_F32 || t == GGML_TYPE_F16 || t == GGML_TYPE_BF16 || t == GGML_TYPE_Q4_0 ||
           t == GGML_TYPE_Q4_1 || t == GGML_TYPE_Q5_0 || t == GGML_TYPE_Q5_1 || t == GGML_TYPE_Q8_0;
}

static bool fattn_vec_compiled(int64_t d, enum ggml_type k, enum ggml_type v)
{
    if (d != 64 && d != 128 && d != 256)
        return false;
    if (k == GGML_TYPE_F32)
        k = GGML_TYPE_F16;
    if (v == GGML_TYPE_F32)
        v = GGML_TYPE_F16;
    return k == v && (k == GGML_TYPE_F16 || k == GGML_TYPE_Q4_0 || k == GGML_TYPE_Q8_0 || k == GGML_TYPE_BF16);
}

static bool strides_16(const struct ggml_tensor *t)
{
    if (!t || ggml_is_quantized(t->type))
        return true;
    for (int i = 1; i < GGML_MAX_DIMS; i++)
        if (t->nb[i] % 16 != 0)
            return false;
    return true;
}

/* ggml_cuda_get_best_fattn_kernel on compute capability >= 8.9 */
static enum fattn_kernel fattn_kernel(const struct ggml_tensor *dst)
{
    const struct ggml_tensor *Q = dst->src[0], *K = dst->src[1], *V = dst->src[2], *mask = dst->src[3];
    const int64_t gqa = Q->ne[2] / K->ne[2];
    float max_bias;
    memcpy(&max_bias, (const float *)dst->op_params + 1, sizeof max_bias);
    const bool gqa_opt = gqa >= 2 && mask && max_bias == 0.0f && K->ne[1] % 256 == 0 && strides_16(Q) &&
                         strides_16(K) && strides_16(V) && strides_16(mask);
    bool ok;
    switch (K->ne[0]) {
    case 40: case 64: case 72: case 80: case 96: case 112: case 128: case 256: ok = V->ne[0] == K->ne[0]; break;
    case 192: ok = V->ne[0] == 128 && gqa_opt && gqa % 8 == 0; break;
    case 320: ok = V->ne[0] == 256 && gqa_opt && gqa % 32 == 0; break;
    case 512: ok = V->ne[0] == 512 && gqa_opt; break;
    case 576: ok = V->ne[0] == 512 && gqa_opt; break;
    default: ok = false;
    }
    if (!ok || !fattn_kv_type(K->type) || !fattn_kv_type(V->type) || (mask && mask->ne[2] != 1))
        return FATTN_NONE;
    const int64_t d = Q->ne[0];
    const bool can_vec = d <= 256 && d % 64 == 0 && d != 192 && K->ne[1] % 256 == 0;
    if (d == 40 || d == 72)
        return FATTN_TILE;
    if (can_vec) {
        if (!ggml_is_quantized(K->type) && !ggml_is_quantized(V->type)) {
            if (Q->ne[1] == 1 && Q->ne[3] == 1 && !(gqa > 4 && (d >= 256 || K->ne[1] >= 8192)))
                return FATTN_VEC;
        } else if (Q->ne[1] <= 2) {
            return FATTN_VEC;
        }
        if (!gqa_opt && Q->ne[1] == 1)
            return FATTN_VEC;
    }
    return FATTN_MMA;
}

/* ggml_cuda_flash_attn_ext_get_alloc_size, from a NULL data pointer */
static size_t fattn_alloc_size(const struct ggml_tensor *dst)
{
    const struct ggml_tensor *K = dst->src[1], *V = dst->src[2];
    bool need_k = false, need_v = false;
    switch (fattn_kernel(dst)) {
    case FATTN_TILE:
    case FATTN_MMA: need_k = need_v = true; break;
    case FATTN_VEC: {
        const bool fallback = !fattn_vec_compiled(dst->src[0]->ne[0], K->type, V->type);
        need_k = K->type == GGML_TYPE_F32 || fallback;
        need_v = V->type == GGML_TYPE_F32 || fallback;
        break;
    }
    default: break;
    }
    const bool v_is_k = V->view_src && (V->view_src == K || (V->view_src == K->view_src && V->view_offs == K->view_offs));
    size_t end = ggml_nbytes(dst);
    if (need_k && K->type != GGML_TYPE_F16)
        end = GGML_PAD(end, 128) + (size_t)ggml_nelements(K) * 2;
    if (need_v && V->type != GGML_TYPE_F16 && !v_is_k)
        end = GGML_PAD(end, 128) + (size_t)ggml_nelements(V) * 2;
    return end;
}

/* ggml-cuda's supports_op for what it refuses in llama.cpp's graphs and
 * weight tests; everything else runs */
static bool cuda_supports_op(const struct ggml_tensor *op)
{
    switch (op->op) {
    case GGML_OP_FLASH_ATTN_EXT: return fattn_kernel(op) != FATTN_NONE;
    case GGML_OP_SSM_CONV: return op->src[0]->ne[1] % 128 == 0;
    case GGML_OP_SSM_SCAN:
        if (op->src[3]->ne[0] == 1)
            return (op->src[0]->ne[0] == 128 || op->src[0]->ne[0] == 256) && op->src[0]->ne[1] % 16 == 0;
        return ((const int32_t *)op->op_params)[0] <= 1 && op->src[0]->ne[0] == 16 && op->src[0]->ne[1] == 1 &&
               op->src[0]->ne[2] % 128 == 0 && op->src[4]->ne[1] == 1;
    case GGML_OP_GET_ROWS:
        if (op->src[0]->type == GGML_TYPE_IQ4_NL || op->src[0]->type == GGML_TYPE_MXFP4)
            return op->src[0]->ne[0] % 256 == 0;
        return true;
    case GGML_OP_ADD: case GGML_OP_SUB: case GGML_OP_MUL: case GGML_OP_DIV: {
        const enum ggml_type a = op->src[0]->type, b = op->src[1]->type;
        return (a == GGML_TYPE_F32 || a == GGML_TYPE_F16) && (b == GGML_TYPE_F32 || b == GGML_TYPE_F16) &&
               (op->type == GGML_TYPE_F32 || op->type == GGML_TYPE_F16);
    }
    case GGML_OP_LIGHTNING_INDEXER:
        return op->src[0]->ne[0] == 128 && (op->src[0]->ne[1] == 64 || op->src[0]->ne[1] == 32);
    default: return true;
    }
}

/* ggml_cuda_match_moe_weighted_reduction: the node count of the fused
 * expert reduction starting at node i, 0 if none; *experts, *weights,
 * *scale and *dst its inputs kept alive and its last node */
static bool f32_cont(const struct ggml_tensor *t) { return t && t->type == GGML_TYPE_F32 && ggml_is_contiguous(t); }

static bool split_mul(const struct ggml_tensor *mul, struct ggml_tensor **full, struct ggml_tensor **bcast)
{
    for (int o = 0; o < 2; o++) {
        struct ggml_tensor *e = mul->src[o], *w = mul->src[1 - o];
        if (!f32_cont(e) || !f32_cont(w) || !ggml_are_same_shape(e, mul))
            continue;
        if (w->ne[0] != 1 || w->ne[1] != mul->ne[1] || w->ne[2] != mul->ne[2] || w->ne[3] != mul->ne[3])
            continue;
        *full = e;
        *bcast = w;
        return true;
    }
    return false;
}

static int use_count(struct ggml_cgraph *g, const struct ggml_tensor *t, int from, int to, int *inside)
{
    int all = 0;
    *inside = 0;
    for (int j = 0; j < ggml_graph_n_nodes(g); j++)
        for (int x = 0; x < GGML_MAX_SRC; x++)
            if (ggml_graph_node(g, j)->src[x] == t) {
                all++;
                if (j > from && j < to)
                    (*inside)++;
            }
    return all;
}

static int match_moe_reduction(struct ggml_cgraph *g, int i, struct ggml_tensor *keep[3], int *n_keep,
                               struct ggml_tensor **dst)
{
    const int n = ggml_graph_n_nodes(g);
    struct ggml_tensor *first = ggml_graph_node(g, i), *weighted = first, *experts = NULL, *weights = NULL,
                       *scale = NULL, *a, *b, *raw, *sc;
    if (first->op != GGML_OP_MUL || !f32_cont(first))
        return 0;
    int mul_count = 1;
    if (i + 1 < n) {
        struct ggml_tensor *second = ggml_graph_node(g, i + 1);
        if (second->op == GGML_OP_MUL && f32_cont(second) && split_mul(second, &a, &b) && a == first &&
            split_mul(first, &raw, &sc)) {
            weighted = second, experts = raw, scale = sc, weights = b, mul_count = 2;
        }
    }
    if (!experts && !split_mul(first, &experts, &weights))
        return 0;
    const int64_t k = weighted->ne[1], n_tokens = weighted->ne[2] * weighted->ne[3];
    if (k < 2 || k > 15 || n_tokens <= 0)
        return 0;
    const int count = (int)(2 * k + mul_count - 1);
    if (i + count > n)
        return 0;
    struct ggml_tensor *views[15], *prev = NULL;
    int64_t n_views = 0, n_adds = 0;
    for (int o = mul_count; o < count; o++) {
        struct ggml_tensor *c = ggml_graph_node(g, i + o);
        if (c->op == GGML_OP_VIEW) {
            if (n_views >= k || c->src[0] != weighted || c->view_src != weighted || c->type != GGML_TYPE_F32 ||
                c->ne[0] != weighted->ne[0] || c->ne[1] != n_tokens || c->ne[2] != 1 || c->ne[3] != 1 ||
                c->nb[0] != weighted->nb[0] || c->nb[1] != weighted->nb[2] ||
                c->view_offs != (size_t)n_views * weighted->nb[1])
                return 0;
            views[n_views++] = c;
            continue;
        }
        if (c->op != GGML_OP_ADD || n_views < 2 || n_adds + 1 >= n_views)
            return 0;
        if (c->src[0] != (n_adds == 0 ? views[0] : prev) || c->src[1] != views[n_adds + 1] || c->type != GGML_TYPE_F32)
            return 0;
        prev = c;
        n_adds++;
    }
    if (n_views != k || n_adds != k - 1 || !prev || !ggml_is_contiguous(prev) || prev->ne[0] != weighted->ne[0] ||
        prev->ne[1] != n_tokens || prev->ne[2] != 1 || prev->ne[3] != 1)
        return 0;
    /* ggml_can_fuse_subgraph: the inner nodes are used only inside, no outputs */
    for (int o = 0; o < count - 1; o++) {
        struct ggml_tensor *t = ggml_graph_node(g, i + o);
        int inside;
        if ((t->flags & GGML_TENSOR_FLAG_OUTPUT) || use_count(g, t, i + o, i + count, &inside) != inside)
            return 0;
    }
    *n_keep = 0;
    keep[(*n_keep)++] = experts;
    keep[(*n_keep)++] = weights;
    if (scale)
        keep[(*n_keep)++] = scale;
    *dst = prev;
    return count;
}

/* ggml-cuda's fused top-k gating (ggml_cuda_topk_moe_fusion,
 * ggml-cuda.cu:2816-2968, with graph_optimize's op list, :4537-4590, and
 * ggml_cuda_should_use_topk_moe, topk-moe.cu:398-440), the forms
 * graph_optimize keeps alive: the gating activation (SOFT_MAX, sigmoid, or
 * softplus then SQRT), RESHAPE, [ADD bias], ARGSORT, VIEW, GET_ROWS, then
 * [RESHAPE SUM_ROWS CLAMP DIV RESHAPE] and [SCALE].  The node count at node
 * i, 0 if none; ggml's own ggml_can_fuse_subgraph_ext (exported by
 * libggml-base) judges the uses. */
bool ggml_can_fuse_subgraph_ext(const struct ggml_cgraph *cgraph, const int *node_idxs, int count,
                                const enum ggml_op *ops, const int *outputs, int num_outputs);

static struct ggml_tensor *node_at(struct ggml_cgraph *g, int k) { return k < ggml_graph_n_nodes(g) ? ggml_graph_node(g, k) : NULL; }

static bool op_of(struct ggml_cgraph *g, int k, enum ggml_op op, const struct ggml_tensor *src0)
{
    const struct ggml_tensor *t = node_at(g, k);
    return t && t->op == op && t->src[0] == src0;
}

static int match_topk_gating(struct ggml_cgraph *g, int i)
{
    struct ggml_tensor *gate = ggml_graph_node(g, i);
    enum ggml_op ops[16];
    int n = 0;
    if (gate->op == GGML_OP_SOFT_MAX) {
        float scale, max_bias;
        memcpy(&scale, (const float *)gate->op_params + 0, sizeof scale);
        memcpy(&max_bias, (const float *)gate->op_params + 1, sizeof max_bias);
        if (scale != 1.0f || max_bias != 0.0f || gate->src[1] || gate->src[2] || !ggml_is_contiguous(gate->src[0]))
            return 0;
        ops[n++] = GGML_OP_SOFT_MAX;
    } else if (gate->op == GGML_OP_UNARY && ggml_get_unary_op(gate) == GGML_UNARY_OP_SIGMOID) {
        ops[n++] = GGML_OP_UNARY;
    } else if (gate->op == GGML_OP_UNARY && ggml_get_unary_op(gate) == GGML_UNARY_OP_SOFTPLUS &&
               op_of(g, i + 1, GGML_OP_SQRT, gate)) {
        ops[n++] = GGML_OP_UNARY;
        ops[n++] = GGML_OP_SQRT;
    } else {
        return 0;
    }
    const int probs = i + n - 1;
    if (!op_of(g, probs + 1, GGML_OP_RESHAPE, node_at(g, probs)))
        return 0;
    const bool bias = op_of(g, probs + 2, GGML_OP_ADD, node_at(g, probs));
    const int sort = probs + 2 + bias;
    if (!op_of(g, sort, GGML_OP_ARGSORT, node_at(g, bias ? probs + 2 : probs)) ||
        !op_of(g, sort + 1, GGML_OP_VIEW, node_at(g, sort)) || !node_at(g, sort + 2) ||
        node_at(g, sort + 2)->op != GGML_OP_GET_ROWS || node_at(g, sort + 2)->src[0] != node_at(g, probs + 1) ||
        node_at(g, sort + 2)->src[1] != node_at(g, sort + 1))
        return 0;
    ops[n++] = GGML_OP_RESHAPE;
    if (bias)
        ops[n++] = GGML_OP_ADD;
    ops[n++] = GGML_OP_ARGSORT;
    ops[n++] = GGML_OP_VIEW;
    ops[n++] = GGML_OP_GET_ROWS;
    const int ids = sort + 1;
    int k = sort + 3;
    /* the normalisation, all five or none; then a scale (not after a RESHAPE that starts no normalisation) */
    const bool norm = op_of(g, k, GGML_OP_RESHAPE, node_at(g, k - 1)) && op_of(g, k + 1, GGML_OP_SUM_ROWS, node_at(g, k)) &&
                      op_of(g, k + 2, GGML_OP_CLAMP, node_at(g, k + 1)) && op_of(g, k + 3, GGML_OP_DIV, node_at(g, k)) &&
                      node_at(g, k + 3)->src[1] == node_at(g, k + 2) && op_of(g, k + 4, GGML_OP_RESHAPE, node_at(g, k + 3));
    if (norm) {
        const enum ggml_op more[5] = {GGML_OP_RESHAPE, GGML_OP_SUM_ROWS, GGML_OP_CLAMP, GGML_OP_DIV, GGML_OP_RESHAPE};
        memcpy(ops + n, more, sizeof more);
        n += 5;
        k += 5;
    }
    if ((norm || !node_at(g, k) || node_at(g, k)->op != GGML_OP_RESHAPE) && op_of(g, k, GGML_OP_SCALE, node_at(g, k - 1)))
        ops[n++] = GGML_OP_SCALE;
    const int outs[2] = {ids, i + n - 1};
    int idxs[16];
    for (int j = 0; j < n; j++)
        idxs[j] = i + j;
    if (i + n > ggml_graph_n_nodes(g) || !ggml_can_fuse_subgraph_ext(g, idxs, n, ops, outs, 2))
        return 0;
    const struct ggml_tensor *id = ggml_graph_node(g, ids), *weights = ggml_graph_node(g, i + n - 1);
    const int n_expert = (int)(id->nb[1] / id->nb[0]);
    if (((n_expert & (n_expert - 1)) != 0 || n_expert > 512) && n_expert != 288 && n_expert != 576)
        return 0;
    return ggml_is_contiguous(weights) && ggml_is_contiguous(gate->src[0]) ? n : 0;
}

/* ggml_backend_cuda_graph_optimize: the allocation dependencies of the
 * fused MoE reduction (its inputs, until its last node) and of the top-k
 * gating (its nodes and their sources, until the node after it), unless
 * GGML_CUDA_DISABLE_FUSION is set */
static void be_graph_optimize(ggml_backend_t backend, struct ggml_cgraph *cgraph,
                              struct ggml_backend_graph_optimize_params *params)
{
    (void)backend;
    const char *off = getenv("GGML_CUDA_DISABLE_FUSION");
    if (g_fake.kind != FAKE_GPU_CUDA || (off && atoi(off)))
        return;
    for (int i = 0; i < ggml_graph_n_nodes(cgraph); i++) {
        struct ggml_tensor *keep[3], *dst;
        int n_keep;
        const int n = match_moe_reduction(cgraph, i, keep, &n_keep, &dst);
        if (n) {
            for (int j = 0; j < n_keep; j++)
                params->add_alloc_dep(params->user_data, keep[j], dst);
            i += n - 1;
            continue;
        }
        const int t = match_topk_gating(cgraph, i);
        if (!t)
            continue;
        /* one past the last, as ggml-cuda asks: past the split's end that is the next split's first node */
        struct ggml_tensor *until = ggml_graph_nodes(cgraph)[i + t];
        if (!until)
            continue;
        for (int j = i; j < i + t; j++) {
            struct ggml_tensor *node = ggml_graph_node(cgraph, j);
            params->add_alloc_dep(params->user_data, node, until);
            for (int x = 0; x < GGML_MAX_SRC; x++)
                if (node->src[x])
                    params->add_alloc_dep(params->user_data, node->src[x], until);
        }
        i += t - 1;
    }
}

/* ggml-cuda.cu ggml_backend_cuda_buffer_type_get_alloc_size: flash attention's
 * f16 copies of K and V (above); quantized rows padded to a multiple of
 * MATRIX_ROW_PADDING = 512 elements */
static size_t buft_get_alloc_size(ggml_backend_buffer_type_t buft, const struct ggml_tensor *tensor)
{
    const struct fake_buft_ctx *c = buft->context;
    size_t size = c->cuda_row_padding && tensor->op == GGML_OP_FLASH_ATTN_EXT ? fattn_alloc_size(tensor)
                                                                              : ggml_nbytes(tensor);
    if (c->cuda_row_padding && ggml_is_quantized(tensor->type)) {
        const int64_t pad = 512;
        int64_t ne0 = tensor->ne[0];
        if (ne0 % pad != 0)
            size += ggml_row_size(tensor->type, pad - ne0 % pad);
    }
    return size;
}

static const struct ggml_backend_buffer_type_i buft_iface = {
    .get_name = buft_get_name,
    .alloc_buffer = buft_alloc_buffer,
    .get_alignment = buft_get_alignment,
    .get_max_size = NULL,
    .get_alloc_size = buft_get_alloc_size,
    .is_host = buft_is_host,
};

/* ------------------------------------------------------------------ */
/* device                                                              */
/* ------------------------------------------------------------------ */

static const char *dev_get_name(ggml_backend_dev_t dev)
{
    return dev_of(dev)->name;
}

static const char *dev_get_description(ggml_backend_dev_t dev)
{
    return dev_of(dev)->description;
}

static void dev_get_memory(ggml_backend_dev_t dev, size_t *free_mem, size_t *total)
{
    const int i = (int)(dev_of(dev) - g_fake.devs);
    *free_mem = g_free[i] ? g_free[i] : FAKE_MEMORY;
    *total = FAKE_MEMORY;
}

static enum ggml_backend_dev_type dev_get_type(ggml_backend_dev_t dev)
{
    (void)dev;
    return GGML_BACKEND_DEVICE_TYPE_GPU;
}

static void dev_get_props(ggml_backend_dev_t dev, struct ggml_backend_dev_props *props)
{
    props->name = dev_get_name(dev);
    props->description = dev_get_description(dev);
    dev_get_memory(dev, &props->memory_free, &props->memory_total);
    props->type = dev_get_type(dev);
    props->device_id = dev_of(dev)->device_id;
    props->caps = g_fake.caps;
}

static ggml_backend_buffer_type_t dev_get_buffer_type(ggml_backend_dev_t dev)
{
    return &dev_of(dev)->def_buft;
}

static ggml_backend_buffer_type_t dev_get_host_buffer_type(ggml_backend_dev_t dev)
{
    (void)dev;
    return &g_fake.host_buft;
}

static ggml_backend_buffer_t dev_buffer_from_host_ptr(ggml_backend_dev_t dev, void *ptr, size_t size,
                                                      size_t max_tensor_size)
{
    (void)max_tensor_size;
    /* Metal page-aligns inside ggml_metal_buffer_map but reports the size it was given */
    return ggml_backend_buffer_init(&dev_of(dev)->mapped_buft, mapped_buffer_iface, ptr, size);
}

static bool dev_supports_op(ggml_backend_dev_t dev, const struct ggml_tensor *op)
{
    (void)dev;
    return g_fake.kind == FAKE_GPU_CUDA ? cuda_supports_op(op) : true;
}

/* The scheduler runs an op on this device only if the device can use the
 * buffers of its weights. Metal accepts its shared, private and mapped types
 * (ggml-metal.cpp ggml_backend_metal_device_supports_buft), CUDA its device
 * type (ggml-cuda.cu ggml_backend_cuda_device_supports_buft: the buffer
 * type's device must be this one; CUDA_Host only on integrated GPUs): never
 * another GPU's, the CPU's or the host type. Loading never asks. */
static bool dev_supports_buft(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft)
{
    return buft == &dev_of(dev)->def_buft || buft == &dev_of(dev)->mapped_buft;
}

/* ggml-metal.cpp / ggml-cuda.cu get_op_batch_size: the rows an op works on */
static int64_t op_batch_size(const struct ggml_tensor *op)
{
    switch (op->op) {
    case GGML_OP_GET_ROWS:
        return g_fake.kind == FAKE_GPU_CUDA ? 0 : ggml_nrows(op);
    case GGML_OP_MUL_MAT:
        return op->ne[1];
    case GGML_OP_MUL_MAT_ID:
        return op->ne[2];
    case GGML_OP_ROPE:
    case GGML_OP_ROPE_BACK:
        return g_fake.kind == FAKE_GPU_CUDA ? op->ne[2] : ggml_nrows(op);
    default:
        return ggml_nrows(op);
    }
}

/* offload_op: does the device want an op whose weight lives in a CPU buffer
 * (the scheduler then copies the weight over)? Both real devices say yes from
 * 32 rows on (GGML_OP_OFFLOAD_MIN_BATCH's default); Metal only for matrix
 * products (ggml_backend_metal_device_offload_op), CUDA for any op
 * (ggml_backend_cuda_device_offload_op). */
static bool dev_offload_op(ggml_backend_dev_t dev, const struct ggml_tensor *op)
{
    (void)dev;
    const int64_t min_batch = 32;
    if (g_fake.kind == FAKE_GPU_METAL && op->op != GGML_OP_MUL_MAT && op->op != GGML_OP_MUL_MAT_ID)
        return false;
    return op_batch_size(op) >= min_batch;
}

/* ------------------------------------------------------------------ */
/* compute: a backend stream that hands each graph to a CPU backend    */
/* ------------------------------------------------------------------ */

/* Our buffers are host memory, so the CPU backend can compute on them in
 * place. The scheduler has already split the graph: this backend only sees
 * the ops it assigned to the fake device, with their inputs copied into our
 * buffers. No async slots: ggml then synchronizes and copies synchronously. */
struct fake_stream {
    ggml_backend_t cpu;
    ggml_backend_set_n_threads_t cpu_set_n_threads; /* NULL if the CPU backend has none */
};

static const char *be_get_name(ggml_backend_t backend)
{
    return dev_of(backend->device)->name;
}

static void be_free(ggml_backend_t backend)
{
    struct fake_stream *s = backend->context;
    ggml_backend_free(s->cpu);
    free(s);
    free(backend);
}

static enum ggml_status be_graph_compute(ggml_backend_t backend, struct ggml_cgraph *cgraph)
{
    struct fake_stream *s = backend->context;
    return ggml_backend_graph_compute(s->cpu, cgraph);
}

static const struct ggml_backend_i stream_iface = {
    .get_name = be_get_name,
    .free = be_free,
    .set_tensor_async = NULL,
    .get_tensor_async = NULL,
    .set_tensor_2d_async = NULL,
    .get_tensor_2d_async = NULL,
    .cpy_tensor_async = NULL,
    .synchronize = NULL,
    .graph_plan_create = NULL,
    .graph_plan_free = NULL,
    .graph_plan_update = NULL,
    .graph_plan_compute = NULL,
    .graph_compute = be_graph_compute,
    .event_record = NULL,
    .event_wait = NULL,
    .graph_optimize = be_graph_optimize,
};

static ggml_guid g_stream_guid = { 0x67, 0x67, 0x75, 0x66, 0x6d, 0x61, 0x70, 0x2d,
                                   0x66, 0x61, 0x6b, 0x65, 0x2d, 0x67, 0x70, 0x75 };

/* llama.cpp sets the thread count of every backend whose registry exports
 * ggml_backend_set_n_threads; ours passes it to the CPU backend inside */
static void stream_set_n_threads(ggml_backend_t backend, int n_threads)
{
    struct fake_stream *s = backend->context;
    if (s->cpu_set_n_threads)
        s->cpu_set_n_threads(s->cpu, n_threads);
}

static ggml_backend_t dev_init_backend(ggml_backend_dev_t dev, const char *params)
{
    ggml_backend_dev_t cpu_dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    struct fake_stream *s = calloc(1, sizeof *s);
    struct ggml_backend *backend = calloc(1, sizeof *backend);
    if (!cpu_dev || !s || !backend) {
        free(s);
        free(backend);
        return NULL;
    }
    s->cpu = ggml_backend_dev_init(cpu_dev, params);
    if (!s->cpu) {
        free(s);
        free(backend);
        return NULL;
    }
    ggml_backend_reg_t cpu_reg = ggml_backend_dev_backend_reg(cpu_dev);
    s->cpu_set_n_threads = (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(
        cpu_reg, "ggml_backend_set_n_threads");
    backend->guid = &g_stream_guid;
    backend->iface = stream_iface;
    backend->device = dev;
    backend->context = s;
    return backend;
}

/* ------------------------------------------------------------------ */
/* registry                                                            */
/* ------------------------------------------------------------------ */

static const char *reg_get_name(ggml_backend_reg_t reg)
{
    (void)reg;
    return g_fake.reg_name;
}

static size_t reg_get_device_count(ggml_backend_reg_t reg)
{
    (void)reg;
    return (size_t)g_fake.n_devices;
}

static ggml_backend_dev_t reg_get_device(ggml_backend_reg_t reg, size_t index)
{
    (void)reg;
    return index < (size_t)g_fake.n_devices ? &g_fake.devs[index].dev : NULL;
}

static void *reg_get_proc_address(ggml_backend_reg_t reg, const char *name)
{
    (void)reg;
    /* only the thread count: no extra bufts, no split buft */
    if (strcmp(name, "ggml_backend_set_n_threads") == 0)
        return (void *)stream_set_n_threads;
    return NULL;
}

static void init_buft(struct ggml_backend_buffer_type *buft, struct fake_buft_ctx *ctx, const char *name,
                      size_t alignment, bool is_host, bool cuda_row_padding, struct fake_dev *owner)
{
    snprintf(ctx->name, sizeof ctx->name, "%s", name);
    ctx->alignment = alignment;
    ctx->is_host = is_host;
    ctx->cuda_row_padding = cuda_row_padding;
    buft->iface = buft_iface;
    buft->device = &owner->dev;
    buft->context = ctx;
}

/* device i of the kind: its name, id and buffer types */
static void init_device(struct fake_dev *d, int i, const struct ggml_backend_device_i *iface)
{
    char mapped[32];
    const bool metal = g_fake.kind == FAKE_GPU_METAL;
    snprintf(d->name, sizeof d->name, "%s%d", metal ? "MTL" : "CUDA", i);
    snprintf(d->description, sizeof d->description, "fake %s GPU %d (ggufmap-oracle)", metal ? "Metal" : "CUDA", i);
    /* distinct ids: llama.cpp skips a GPU whose id another one has */
    snprintf(d->device_id, sizeof d->device_id, metal ? "fake-metal:%d" : "0000:%02x:00.0", metal ? i : 0xfa + i);
    snprintf(mapped, sizeof mapped, "%s_Mapped", d->name);
    /* ggml-metal.cpp: shared and mapped bufts have alignment 32, is_host false;
     * ggml-cuda.cu: CUDA<i> alignment 128 + row padding */
    init_buft(&d->def_buft, &d->def_ctx, d->name, metal ? 32 : 128, false, !metal, d);
    if (metal)
        init_buft(&d->mapped_buft, &d->mapped_ctx, mapped, 32, false, false, d);
    d->dev.iface = *iface;
    d->dev.reg = &g_fake.reg;
    d->dev.context = d;
}

bool fake_gpu_register(enum fake_gpu_kind kind, int n_devices)
{
    if (kind == FAKE_GPU_NONE)
        return true;
    if (g_fake.kind != FAKE_GPU_NONE) {
        fprintf(stderr, "ggufmap-oracle: fake GPU already registered\n");
        return false;
    }
    if (n_devices < 1 || n_devices > FAKE_GPU_MAX_DEVICES) {
        fprintf(stderr, "ggufmap-oracle: %d fake GPUs: 1 to %d\n", n_devices, FAKE_GPU_MAX_DEVICES);
        return false;
    }
    memset(&g_fake, 0, sizeof g_fake);
    g_fake.kind = kind;
    g_fake.n_devices = n_devices;

    struct ggml_backend_device_i dev_iface = {
        .get_name = dev_get_name,
        .get_description = dev_get_description,
        .get_memory = dev_get_memory,
        .get_type = dev_get_type,
        .get_props = dev_get_props,
        .init_backend = dev_init_backend,
        .get_buffer_type = dev_get_buffer_type,
        .get_host_buffer_type = NULL,
        .buffer_from_host_ptr = NULL,
        .supports_op = dev_supports_op,
        .supports_buft = dev_supports_buft,
        .offload_op = dev_offload_op,
        .event_new = NULL,
        .event_free = NULL,
        .event_synchronize = NULL,
    };

    if (kind == FAKE_GPU_METAL) {
        g_fake.reg_name = "Metal";
        /* async = events = 1 as ggml-metal says (ggml-metal.cpp:695-701): with several devices and every layer
         * on them, llama.cpp then turns on pipeline parallelism (llama-context.cpp:429-456, n_copies = 4); the
         * events themselves are NULL (no event_new), which ggml's scheduler and the loader allow */
        g_fake.caps = (struct ggml_backend_dev_caps){
            .async = true, .host_buffer = false, .buffer_from_host_ptr = true, .events = true, .mmap_support = true,
        };
        g_fake.has_host_buft = false;
        dev_iface.buffer_from_host_ptr = dev_buffer_from_host_ptr;
    } else if (kind == FAKE_GPU_CUDA) {
        g_fake.reg_name = "CUDA";
        /* host_buffer = 1 as for real CUDA (it does not change the CPU buft list); async = events = 1 as
         * ggml-cuda says (ggml-cuda.cu:5099-5112), which with several devices turns on pipeline parallelism;
         * the loader's async uploads (--no-mmap) need an event, and event_new is NULL, so it loads
         * synchronously (llama-model-loader.cpp:1526-1598) */
        g_fake.caps = (struct ggml_backend_dev_caps){
            .async = true, .host_buffer = true, .buffer_from_host_ptr = false, .events = true, .mmap_support = true,
        };
        g_fake.has_host_buft = true;
        dev_iface.get_host_buffer_type = dev_get_host_buffer_type;
    } else {
        fprintf(stderr, "ggufmap-oracle: unknown fake GPU kind %d\n", (int)kind);
        return false;
    }
    for (int i = 0; i < n_devices; i++)
        init_device(&g_fake.devs[i], i, &dev_iface);
    /* CUDA_Host takes the CPU buft's alignment (32); its device is the first GPU */
    if (g_fake.has_host_buft)
        init_buft(&g_fake.host_buft, &g_fake.host_ctx, "CUDA_Host",
                  ggml_backend_buft_get_alignment(ggml_backend_cpu_buffer_type()), true, false, &g_fake.devs[0]);

    g_fake.reg.api_version = GGML_BACKEND_API_VERSION;
    g_fake.reg.iface = (struct ggml_backend_reg_i){
        .get_name = reg_get_name,
        .get_device_count = reg_get_device_count,
        .get_device = reg_get_device,
        .get_proc_address = reg_get_proc_address,
    };
    g_fake.reg.context = NULL;

    size_t before = ggml_backend_dev_count();
    ggml_backend_register(&g_fake.reg);
    bool ok = ggml_backend_dev_count() == before + (size_t)n_devices;
    for (int i = 0; ok && i < n_devices; i++)
        ok = ggml_backend_dev_by_name(g_fake.devs[i].name) == &g_fake.devs[i].dev;
    if (!ok) {
        fprintf(stderr, "ggufmap-oracle: registering the fake %s devices failed\n", g_fake.reg_name);
        return false;
    }
    return true;
}

/*
 * device.h - the machine llama.cpp runs on, as data (internal).
 *
 * One module owns what a backend is, so that no other file spells a
 * buffer type's name or a backend's rule:
 *
 *   the CPU      the CPU variant ggml loads (its extra buffer types AMX and
 *                CPU_REPACK, which weights they take and what they cost);
 *   a GPU kind   (Metal, CUDA, ROCm) its buffer types with llama.cpp's
 *                names (MTL0, CUDA0, CUDA_Host, ...), their alignment,
 *                get_alloc_size rule, whether it is host memory, whether the
 *                device wraps host pointers (a mapped buffer), its pinned
 *                host type, its maximum buffer size; the scheduler's rules
 *                that change compute buffers (supports_op of weights,
 *                offload_op and its batch threshold, flash attention); the
 *                page its buffers are wired in, the -ot regex dialect of its
 *                usual build and its memory model (discrete, or one RAM with
 *                a GPU working-set limit, as Apple Silicon).
 *
 * A buffer type in a run is a kind (ggufmap_buft_kind) and, for a GPU's
 * own type, which GPU (its ordinal: CUDA1 is 1); gm_loc packs both for the
 * graph tensors of the compute model.  Where the CUDA backend has rules
 * beyond the table (op-specific allocation sizes, flash attention per head
 * size, ops it refuses, fusion), they are its row's hooks, implemented in
 * device_cuda.c (docs/devices.md lists them, docs/cuda.md measures them).
 */
#ifndef GGUFMAP_DEVICE_H
#define GGUFMAP_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
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

/* This machine's CPU rules. */
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
/* Backends                                                                  */
/* ------------------------------------------------------------------------ */

/* get_alloc_size of a buffer type for weights and graph tensors. */
typedef enum gm_alloc_rule {
    GM_ALLOC_NBYTES,      /* ggml_nbytes (the CPU's, Metal's, the host types') */
    GM_ALLOC_ROW_PAD_512, /* ggml-cuda: a quantized row padded to a multiple of 512 elements */
    GM_ALLOC_AMX          /* ggml-cpu/amx: gm_amx_alloc_size */
} gm_alloc_rule;

/* offload_op: which ops with a weight in host memory a GPU takes from the
 * CPU, given a batch of at least offload_min_batch rows. */
typedef enum gm_offload_rule {
    GM_OFFLOAD_MATMUL,        /* ggml-metal: MUL_MAT and MUL_MAT_ID only */
    GM_OFFLOAD_ALL_BUT_ROWS   /* ggml-cuda: every op but GET_ROWS */
} gm_offload_rule;

/* The ops a weight is tried with (weight_buft_supported's test op), as
 * supports_op of a GPU's default type judges them. */
typedef enum gm_weight_op {
    GM_WOP_OTHER,             /* ROPE, RWKV, IM2COL, ... */
    GM_WOP_ELEMENTWISE,       /* MUL, ADD, DIV: the weight is a second operand */
    GM_WOP_ADD_ID,            /* ADD_ID: the weight is the added rows */
    GM_WOP_SCALE,
    GM_WOP_MATMUL,            /* MUL_MAT, MUL_MAT_ID */
    GM_WOP_GET_ROWS,          /* GET_ROWS: the weight is the table */
    GM_WOP_SSM_CONV,          /* the weight is the conv kernel [d_conv, channels] */
    GM_WOP_SSM_SCAN,          /* the weight is A [d_state or 1, n_head] */
} gm_weight_op;

/* The SSM hyperparameters of a model that its weights' shapes do not show
 * (Mamba-2's A is [1, n_head]): <arch>.ssm.state_size, inner_size and
 * group_count, 0 where absent.  weight_supported reads them for SSM_SCAN. */
typedef struct gm_ssm_dims {
    int64_t d_state, d_inner, n_group;
} gm_ssm_dims;

/* A FLASH_ATTN_EXT node as a device's kernels look at it: Q [d_k, n_q,
 * n_head, q_ne3], K [d_k, n_kv, n_head_kv, ...] of type_k, V [d_v, ...] of
 * type_v.  Read off a graph node (device_cuda.c) or written for a layer's
 * attention in llama.cpp's probe graph (fit_context.c). */
typedef struct gm_fa_shape {
    int64_t d_k, d_v;       /* K->ne[0], V->ne[0] */
    int64_t n_q, q_ne3;     /* Q->ne[1], Q->ne[3] */
    int64_t n_kv;           /* K->ne[1] */
    int64_t gqa;            /* Q->ne[2] / K->ne[2] */
    int32_t type_k, type_v;
    int64_t nel_k, nel_v;   /* ggml_nelements of K and V */
    bool mask;              /* a KQ mask is given */
    bool rows_aligned;      /* Q, K, V and the mask (those not quantized) have strides of 16 bytes */
    bool v_is_k_view;       /* V views K's data (MLA) */
} gm_fa_shape;

/* A fusion the device's graph_optimize will run at some node: it asks the
 * scheduler to keep tensors alive until a node (ggml merges the lists of
 * one node, without repeats, and puts them in dependency views of up to
 * GGML_MAX_SRC sources right after it, ggml-backend.cpp:1442-1540). */
#define GM_FUSION_MAX_KEEP 144 /* CUDA's top-k gating: 13 nodes and their sources */
typedef struct gm_fusion {
    int32_t until;          /* the node they stay alive until */
    int32_t keep[GM_FUSION_MAX_KEEP]; /* the tensors kept alive, in the order ggml adds them */
    int n_keep;
} gm_fusion;

struct gm_graph; /* the compute model's graph (fit_graph.h), for the hooks below */

typedef struct gm_backend_def {
    ggufmap_device device;
    const char *kind;          /* "cpu", "metal", "cuda", "rocm": --device */
    const char *prefix;        /* llama.cpp's device and buffer-type name before the ordinal: "MTL",
                                  "CUDA", "ROCm" (NULL: the CPU) */
    uint32_t alignment;        /* its default buffer type's get_alignment */
    gm_alloc_rule alloc;       /* ... and get_alloc_size */
    uint64_t max_buffer;       /* ... and get_max_size, 0: SIZE_MAX */
    bool maps_host_ptr;        /* caps.buffer_from_host_ptr: weights mapped, not copied (MTL0_Mapped) */
    bool host_buft;            /* a pinned host type "<prefix>_Host" (CUDA_Host) heads the CPU list */
    bool split_buft;           /* a split buffer type for -sm row ("<prefix>_Split") */
    bool (*weight_supported)(int32_t type, const int64_t ne[4], gm_weight_op op,
                             const gm_ssm_dims *ssm); /* NULL: every weight */
    gm_offload_rule offload;
    uint32_t offload_min_batch; /* get_op_batch_size's threshold */
    ggufmap_cpu cpu;           /* the CPU rules of the machines it comes in (HOST: this machine's) */
    uint64_t page;             /* the page its buffers are wired in: Metal 16 KiB; 1 = exact bytes */
    ggufmap_regex_dialect regex; /* whose std::regex its usual build has: libc++ (macOS) or libstdc++ */
    bool unified;              /* one RAM for CPU and GPU (Apple Silicon): a working-set limit */
    bool fa_f16_copies;        /* its flash attention may copy a K or V not in F16 into F16 in the
                                  output's allocation (ggml-cuda's tensor-core kernels): the compute
                                  bound counts the copies */
    /* Hooks for rules beyond the table (NULL: none), each with its ggml source in device*.c
     * (docs/devices.md lists the callers):
     *   alloc_extra   bytes get_alloc_size adds to a graph tensor t in the device's own type beyond
     *                 ggml_nbytes and the row padding (ggml-cuda: FLASH_ATTN_EXT's f16 K/V copies);
     *   supports_node whether the device's supports_op takes graph node t (ggml-cuda: FLASH_ATTN_EXT
     *                 without a kernel, SSM_CONV, SSM_SCAN);
     *   runs_fa       whether flash attention has a kernel for this shape (-fa auto resolves to off
     *                 where a GPU layer's has none: ggml-cuda's fattn.cu);
     *   fa_kv_type    whether its flash attention reads a K or V of this type at all;
     *   runs_indexer  whether its LIGHTNING_INDEXER takes keys of head_size with n_head heads (the
     *                 compute bound: the op is not in the modelled graphs);
     *   fusion        the fusion its graph_optimize runs at node i of a split of its own [i, end)
     *                 whose inputs the scheduler keeps alive: the node count, 0 for none (uses:
     *                 each tensor's uses by the graph as built; opts.no_cuda_fusion turns it off). */
    uint64_t (*alloc_extra)(const struct gm_graph *g, int32_t t);
    bool (*supports_node)(const struct gm_graph *g, int32_t t);
    bool (*runs_fa)(const gm_fa_shape *fa);
    bool (*fa_kv_type)(int32_t type);
    bool (*runs_indexer)(uint32_t head_size, uint32_t n_head);
    int32_t (*fusion)(const struct gm_graph *g, const int32_t *uses, int32_t i, int32_t end, gm_fusion *out);
} gm_backend_def;

/* ggml-cuda's hooks (device_cuda.c), the CUDA and ROCm rows' */
bool gm_cuda_weight_supported(int32_t type, const int64_t ne[4], gm_weight_op op, const gm_ssm_dims *ssm);
uint64_t gm_cuda_alloc_extra(const struct gm_graph *g, int32_t t);
bool gm_cuda_supports_node(const struct gm_graph *g, int32_t t);
bool gm_cuda_runs_fa(const gm_fa_shape *fa);
bool gm_cuda_fa_kv_type(int32_t type);
bool gm_cuda_runs_indexer(uint32_t head_size, uint32_t n_head);
int32_t gm_cuda_fusion(const struct gm_graph *g, const int32_t *uses, int32_t i, int32_t end, gm_fusion *out);

/* The row of a device kind (GGUFMAP_DEVICE_CPU: the CPU alone). */
const gm_backend_def *gm_backend(ggufmap_device device);

/* The CPU rules opts leave to the device (GGUFMAP_CPU_HOST): the machine
 * the device runs on (Apple Silicon for Metal, this machine otherwise). */
ggufmap_cpu gm_device_cpu(ggufmap_device device, ggufmap_cpu asked);
/* The -ot dialect (GGUFMAP_REGEX_AUTO resolved by the device). */
ggufmap_regex_dialect gm_device_regex(ggufmap_device device, ggufmap_regex_dialect asked);
/* The page a plan counts in (0 resolved by the device). */
uint64_t gm_device_page(ggufmap_device device, uint64_t asked);
/* GPU i's (of o->gpus) share of the layers before normalising
 * (llama-model.cpp:1488-1510): its -ts share when any is given, else the
 * free memory its device reports (o->gpu_free), else 1 when any GPU's is
 * unknown (equal GPUs report equal memory). */
float gm_device_split_share(const ggufmap_placement_opts *o, uint32_t i);

/* ------------------------------------------------------------------------ */
/* Buffer types                                                              */
/* ------------------------------------------------------------------------ */

/* A buffer type of a run: its kind, and which GPU for GGUFMAP_BUFT_GPU. */
typedef struct gm_buft_id {
    ggufmap_buft_kind kind;
    uint32_t gpu;              /* GGUFMAP_BUFT_GPU: the GPU's ordinal (CUDA1: 1); else 0 */
} gm_buft_id;

/* llama.cpp's name of a buffer type on device kind d: "CPU", "CPU_REPACK",
 * "AMX", "CUDA_Host", "MTL0", "CUDA1", ...; with mapped, the name of its
 * buffer over the file mapping ("CPU_Mapped", "MTL0_Mapped"). */
const char *gm_buft_name(ggufmap_device d, gm_buft_id b, bool mapped, char *buf, size_t cap);
/* "CPU": the buffer type an -ot entry (--cpu-moe's) names to keep weights
 * on the CPU list. */
const char *gm_cpu_buft_name(void);
/* Reads a name as gm_buft_name writes it; false for a name that is none of
 * d's (a GPU's name with an ordinal past max_gpu is none either). */
bool gm_buft_parse(ggufmap_device d, const char *name, uint32_t max_gpu, gm_buft_id *out);
/* The kind of any name llama.cpp gives a buffer type ("CPU", "CPU_REPACK",
 * "AMX", "CUDA_Host", "MTL0", "CUDA1", "ROCm0", ...), or -1. */
int gm_buft_kind_of_name(const char *name);

uint32_t gm_buft_alignment(ggufmap_device d, ggufmap_buft_kind kind);
/* get_alloc_size of a contiguous tensor of this type and shape in the
 * buffer type (a weight, a cache tensor). */
uint64_t gm_buft_alloc_size(ggufmap_device d, ggufmap_buft_kind kind, int32_t type, const int64_t ne[4]);
/* What get_alloc_size adds to ggml_nbytes for a row of ne0 elements of
 * this type (ggml-cuda's padding of quantized rows to 512), for graph
 * tensors whose strides are their own. */
uint64_t gm_buft_row_pad(ggufmap_device d, ggufmap_buft_kind kind, int32_t type, int64_t ne0);
/* is_host: host memory that every backend's CPU side reads (CPU, the
 * mapped CPU buffers, the pinned host types; not the extra types). */
bool gm_buft_is_host(ggufmap_buft_kind kind);
/* Whether a buffer of this kind wraps the file mapping under mmap. */
bool gm_buft_maps(ggufmap_device d, ggufmap_buft_kind kind);
/* Whether a buffer of this kind lives in the GPU's memory (else the host's RAM). */
static inline bool gm_buft_on_gpu(ggufmap_buft_kind kind) { return kind == GGUFMAP_BUFT_GPU; }

/* The buffer type the CPU backend computes in beside GPUs of kind d: the
 * first GPU's pinned host type when it has one (CUDA_Host), else CPU
 * (llama_context, llama-context.cpp:330-421). */
ggufmap_buft_kind gm_cpu_compute_buft(ggufmap_device d);

/* ------------------------------------------------------------------------ */
/* Where a graph tensor's memory is (the compute model's gm_buft)            */
/* ------------------------------------------------------------------------ */

/* A buffer type packed in a byte: the kind in the low 3 bits, the GPU's
 * ordinal above; GM_LOC_NONE: not allocated yet (ggml-alloc places it). */
typedef uint8_t gm_loc;
#define GM_LOC_NONE ((gm_loc)0xFF)
static inline gm_loc gm_loc_of(gm_buft_id b) { return (gm_loc)(b.kind | (b.gpu << 3)); }
static inline ggufmap_buft_kind gm_loc_kind(gm_loc l) { return (ggufmap_buft_kind)(l & 7u); }
static inline uint32_t gm_loc_gpu(gm_loc l) { return (uint32_t)l >> 3; }

#endif

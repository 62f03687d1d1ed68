/*
 * fit_graph.h - a shape-only model of ggml's graphs, its scheduler and its
 * graph allocator, enough to size llama.cpp's compute buffers (internal).
 *
 * Tensors live in one growing array and refer to each other by index.  A
 * tensor has what ggml-alloc and ggml-backend's scheduler look at: type,
 * shape, strides (ggml's nb), op, sources, view source and offset, flags,
 * and, for tensors that already have memory (weights, KV cache), which
 * buffer type holds it.  The op constructors (fit_graph.c) give results the
 * shapes, strides and view relations ggml.c gives them; the numbers are
 * never computed.
 *
 *   gm_expand        ggml_build_forward_expand: post-order over sources
 *   gm_sched_split   ggml_backend_sched_split_graph: backend per node,
 *                    splits, input copies (fit_sched.c)
 *   gm_alloc_reserve ggml_gallocr_reserve_n: the peak of the dynamic
 *                    allocator per backend buffer (fit_alloc.c)
 */
#ifndef GGUFMAP_FIT_GRAPH_H
#define GGUFMAP_FIT_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device.h"

#define GM_MAX_SRC 10   /* GGML_MAX_SRC */
#define GM_NONE (-1)    /* no tensor */

/* The ggml ops the modelled graphs use (ggml.h enum ggml_op, unary ops
 * folded in: the allocator only asks whether an op is a view and whether it
 * may run in place). */
typedef enum gm_op {
    GM_OP_NONE = 0,
    GM_OP_VIEW, GM_OP_RESHAPE, GM_OP_PERMUTE, GM_OP_TRANSPOSE,
    GM_OP_ADD, GM_OP_MUL, GM_OP_DIV, GM_OP_SCALE, GM_OP_SQRT, GM_OP_CLAMP, GM_OP_FILL,
    GM_OP_UNARY,          /* silu, gelu, sigmoid, tanh, relu, abs, sgn, softplus, exp, neg */
    GM_OP_RMS_NORM, GM_OP_NORM, GM_OP_L2_NORM, GM_OP_SOFT_MAX, GM_OP_ROPE,
    GM_OP_MUL_MAT, GM_OP_MUL_MAT_ID, GM_OP_GET_ROWS, GM_OP_SET_ROWS,
    GM_OP_CPY, GM_OP_CONT, GM_OP_GLU, GM_OP_SUM_ROWS, GM_OP_REPEAT, GM_OP_CONCAT, GM_OP_PAD,
    GM_OP_ARGSORT, GM_OP_TOP_K, GM_OP_FLASH_ATTN_EXT, GM_OP_SSM_CONV, GM_OP_GATED_DELTA_NET,
    GM_OP_CUSTOM,         /* a fused op (dsv4 hyper-connections, lightning indexer, ...) */
    GM_OP_SUB, GM_OP_SQR, GM_OP_SSM_SCAN, GM_OP_RWKV_WKV7, /* graphs-recurrent: Mamba-2, RWKV-7 */
    GM_OP_ADD_ID,         /* ggml_add_id: a + b's rows picked by ids (experts' biases) */
    GM_OP_MEAN,           /* graphs-dense: gemma3n's activation sparsity (a [1, ...] reduction, not in place) */
    GM_OP_LIGHTNING_INDEXER, /* the DSA indexer's fused scores (ggml_lightning_indexer: q, k, weights, mask) */
    GM_OP_COUNT
} gm_op;

/* The buffer type a pre-allocated tensor is in (weights, caches): the one
 * enum of buffer kinds (ggufmap_buft_kind) with the GPU's ordinal, packed
 * (device.h gm_loc); the scheduler asks which backends accept it and
 * whether it is host memory. */
typedef gm_loc gm_buft;
#define GM_BUFT_NONE GM_LOC_NONE                      /* not allocated: the graph allocator places it */
#define GM_BUFT_CPU ((gm_buft)GGUFMAP_BUFT_CPU)        /* CPU, CPU_Mapped: host */
#define GM_BUFT_REPACK ((gm_buft)GGUFMAP_BUFT_CPU_REPACK) /* CPU_REPACK: the CPU's extra type, not host */
#define GM_BUFT_AMX ((gm_buft)GGUFMAP_BUFT_CPU_AMX)    /* AMX: the CPU's other extra type, not host */
#define GM_BUFT_HOST ((gm_buft)GGUFMAP_BUFT_GPU_HOST)  /* CUDA_Host: host */
#define GM_BUFT_GPU ((gm_buft)GGUFMAP_BUFT_GPU)        /* the first GPU's own: MTL0, MTL0_Mapped, CUDA0 */

enum { GM_FLAG_INPUT = 1, GM_FLAG_OUTPUT = 2 };

typedef struct gm_tensor {
    int32_t type;
    int64_t ne[4];
    uint64_t nb[4];
    uint8_t op;             /* gm_op */
    uint8_t flags;          /* GM_FLAG_* */
    uint8_t buft;           /* gm_buft of its memory (views: their source's) */
    bool weight;            /* its buffer is a weights buffer (usage WEIGHTS) */
    int8_t user_backend;    /* ggml_backend_sched_set_tensor_backend, GM_NONE if not set */
    int16_t il;             /* a fused node's layer (llm_graph_result::add_fused_node), -1 */
    int32_t src[GM_MAX_SRC];
    int32_t view_src;       /* the root tensor this is a view of, GM_NONE */
    uint64_t view_offs;
} gm_tensor;

typedef struct gm_graph {
    gm_tensor *t;
    int32_t n, cap;
    int32_t *nodes, *leafs;
    int32_t n_nodes, n_leafs, cap_order;
    uint8_t *visited;       /* per tensor: in nodes/leafs already */
    bool oom;               /* an allocation failed: the graph is unusable */
    bool too_big;           /* a tensor of more than GM_FIT_MAX_BYTES (or sizes that overflow) */
    char aborts[160];       /* "" or where building the graph aborts llama.cpp (a ggml assert, a crash) */
    int64_t max_ctx_tensors; /* the compute context's room in tensors (llm_graph_result's max_nodes), 0: no limit */
    int64_t n_ctx_tensors;  /* the tensors the compute context holds: all but weights and caches */
} gm_graph;

void gm_graph_init(gm_graph *g);
/* Building the graph aborts llama.cpp here (the first reason is kept): fmt
 * names the assertion or the crash and its place. */
void gm_graph_abort(gm_graph *g, const char *fmt, ...);
/* a / b for the integer divisions of a graph builder: a division by zero
 * (hyperparameters llama.cpp loads but divides by, as its graph does)
 * records its crash in g->aborts and gives 0. */
int64_t gm_div(gm_graph *g, int64_t a, int64_t b);
void gm_graph_free(gm_graph *g);
/* Forgets the node and leaf order (a new graph over the same tensors). */
void gm_graph_clear_order(gm_graph *g);

/* ---- tensors ---- */
int32_t gm_new_tensor(gm_graph *g, int32_t type, int n_dims, const int64_t ne[4]);
int32_t gm_new_1d(gm_graph *g, int32_t type, int64_t ne0);
int32_t gm_new_2d(gm_graph *g, int32_t type, int64_t ne0, int64_t ne1);
int32_t gm_new_3d(gm_graph *g, int32_t type, int64_t ne0, int64_t ne1, int64_t ne2);
int32_t gm_new_4d(gm_graph *g, int32_t type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
/* A tensor that already has memory: a weight or a cache tensor. */
int32_t gm_new_buffered(gm_graph *g, int32_t type, const int64_t ne[4], gm_buft buft, bool weight);
void gm_set_input(gm_graph *g, int32_t t);
void gm_set_output(gm_graph *g, int32_t t);
uint64_t gm_nbytes(const gm_graph *g, int32_t t);
bool gm_is_contiguous(const gm_graph *g, int32_t t);
int64_t gm_nrows(const gm_graph *g, int32_t t);

/* ---- ops: the shapes of ggml.c's ---- */
int32_t gm_view_tensor(gm_graph *g, int32_t a);
int32_t gm_view_1d(gm_graph *g, int32_t a, int64_t ne0, uint64_t offset);
int32_t gm_view_2d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, uint64_t nb1, uint64_t offset);
int32_t gm_view_3d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, uint64_t nb1, uint64_t nb2,
                   uint64_t offset);
int32_t gm_view_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint64_t nb1,
                   uint64_t nb2, uint64_t nb3, uint64_t offset);
int32_t gm_reshape_1d(gm_graph *g, int32_t a, int64_t ne0);
int32_t gm_reshape_2d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1);
int32_t gm_reshape_3d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2);
int32_t gm_reshape_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
int32_t gm_permute(gm_graph *g, int32_t a, int ax0, int ax1, int ax2, int ax3);
int32_t gm_transpose(gm_graph *g, int32_t a);
int32_t gm_cont(gm_graph *g, int32_t a);
int32_t gm_cont_2d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1);
int32_t gm_cont_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
int32_t gm_cpy(gm_graph *g, int32_t a, int32_t b);
int32_t gm_cast(gm_graph *g, int32_t a, int32_t type);

/* elementwise: a new tensor shaped like a (in-place variants: a view of a) */
int32_t gm_binary(gm_graph *g, gm_op op, int32_t a, int32_t b);      /* add, mul, div */
int32_t gm_binary_inplace(gm_graph *g, gm_op op, int32_t a, int32_t b);
int32_t gm_unary(gm_graph *g, gm_op op, int32_t a);                   /* scale, sqrt, clamp, unary, norms, ... */
int32_t gm_unary_inplace(gm_graph *g, gm_op op, int32_t a);
int32_t gm_op2(gm_graph *g, gm_op op, int32_t a, int32_t b);          /* shape of a, op with two sources */
int32_t gm_rope(gm_graph *g, int32_t a, int32_t pos, int32_t freq_factors);
int32_t gm_soft_max_ext(gm_graph *g, int32_t a, int32_t mask, int32_t sinks);
int32_t gm_glu_split(gm_graph *g, int32_t a, int32_t b);
/* ggml_glu without a second operand (swiglu, geglu, reglu of one tensor): half of a's rows */
int32_t gm_glu(gm_graph *g, int32_t a);
/* ggml_add_id: a's shape; sources a, b, ids */
int32_t gm_add_id(gm_graph *g, int32_t a, int32_t b, int32_t ids);
int32_t gm_mul_mat(gm_graph *g, int32_t a, int32_t b);
int32_t gm_mul_mat_id(gm_graph *g, int32_t as, int32_t b, int32_t ids);
int32_t gm_get_rows(gm_graph *g, int32_t a, int32_t b);
int32_t gm_set_rows(gm_graph *g, int32_t a, int32_t b, int32_t c);
int32_t gm_sum_rows(gm_graph *g, int32_t a);
int32_t gm_repeat_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3);
int32_t gm_concat(gm_graph *g, int32_t a, int32_t b, int dim);
int32_t gm_pad_tensor(gm_graph *g, int32_t a, int p0, int p1, int p2, int p3);
int32_t gm_argsort(gm_graph *g, int32_t a);
int32_t gm_top_k(gm_graph *g, int32_t a, int64_t k);
int32_t gm_argsort_top_k(gm_graph *g, int32_t a, int64_t k);
int32_t gm_flash_attn_ext(gm_graph *g, int32_t q, int32_t k, int32_t v, int32_t mask, int32_t sinks);
int32_t gm_fill(gm_graph *g, int32_t a);
int32_t gm_fill_inplace(gm_graph *g, int32_t a);
/* a new tensor of the given shape computed by op from up to 6 sources (fused and model-specific ops) */
int32_t gm_op_shaped(gm_graph *g, gm_op op, int32_t type, int n_dims, const int64_t ne[4], const int32_t *srcs,
                     int n_srcs);

/* ggml_build_forward_expand */
void gm_expand(gm_graph *g, int32_t t);

/* ---- scheduler and allocator ---- */

#define GM_MAX_BACKENDS (GGUFMAP_MAX_GPUS + 1)
#define GM_SCHED_MAX_COPIES 4 /* GGML_SCHED_MAX_COPIES, ggml/CMakeLists.txt:188 */

/* The scheduler's backends, highest priority first: the run's GPUs in
 * llama.cpp's order, then the CPU. */
typedef struct gm_backends {
    int n;
    bool gpu;                 /* backends 0..n-2 are GPUs */
    ggufmap_device device;    /* their kind: its rules (device.h) */
    bool op_offload;
    int n_copies;             /* the scheduler's copies of its inputs: GGML_SCHED_MAX_COPIES (4) with
                                 pipeline parallelism, else 1 (0 counts as 1) */
    gm_buft buft[GM_MAX_BACKENDS];     /* the buffer type each backend computes in */
    uint64_t alignment[GM_MAX_BACKENDS];
    bool no_fusion;           /* the GPUs' graph_optimize fuses nothing (GGML_CUDA_DISABLE_FUSION=1) */
} gm_backends;

/* The split graph: its nodes and leafs (indices into the graph's tensors)
 * with a backend each, as ggml_backend_sched builds sched->graph. */
typedef struct gm_split_graph {
    int32_t *nodes, *leafs;
    int8_t *node_backend, *leaf_backend;
    int32_t n_nodes, n_leafs;
    int n_splits;
    int32_t unrunnable;     /* a node no backend runs (ggml asserts), GM_NONE */
} gm_split_graph;

/* Assigns backends and splits g as ggml_backend_sched_split_graph does;
 * adds the input copies to g.  Returns false when out of memory or when no
 * backend runs a node (out->unrunnable: ggml_backend_sched_split_graph
 * asserts, llama.cpp aborts). */
bool gm_sched_split(gm_graph *g, const gm_backends *be, gm_split_graph *out);
void gm_split_graph_free(gm_split_graph *s);

/* ggml_gallocr_reserve_n: the peak bytes of each backend's buffer. */
bool gm_alloc_reserve(const gm_graph *g, const gm_split_graph *s, const gm_backends *be,
                      uint64_t size[GM_MAX_BACKENDS]);

#endif

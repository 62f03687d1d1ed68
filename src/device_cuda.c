/*
 * device_cuda.c - the CUDA row's hooks (device.h gm_backend_def): what
 * llama.cpp v0.5.0's ggml-cuda decides beyond the row's table that changes
 * memory, as data and small predicates.  ROCm's row (ggml-cuda built for
 * HIP) has the same hooks.
 *
 * Data structure.  Tables of the ggml types ggml-cuda's flash attention
 * takes and of the K/V pairs its vector kernel was compiled for (llama.cpp's
 * default build: GGML_CUDA_FA_QUANTS = q4_0-q4_0, q8_0-q8_0, f16-f16,
 * bf16-bf16); the head sizes of its kernels; the shapes its SSM kernels
 * need; the pattern of the fused MoE reduction its graph optimizer runs.
 * Callers describe an op by its shapes (gm_fa_shape) or hand a graph node.
 *
 * Workload.  Placement asks once per weight (weight_supported: the test op
 * of weight_buft_supported); the scheduler model once per graph node
 * (supports_node) and once per node of a GPU split (fusion); the allocator
 * model once per tensor in a GPU's type (alloc_extra); -fa auto once per
 * layer (runs_fa).  Constant time each but fusion's use check (the nodes of
 * one match).
 *
 * Fidelity.  The GPU is an NVIDIA one with Turing tensor cores and compute
 * capability 8.9 or more (Ada, Hopper, Blackwell): the H200 of the
 * measured run (docs/cuda.md, tests/cuda).  Older GPUs and AMD ones pick
 * other flash-attention kernels (fattn.cu:655-700), which changes only the
 * f16 copies below.  Sources: ggml-cuda.cu:5132-5489 (supports_op),
 * ggml-cuda.cu:908-925 (get_alloc_size), fattn.cu:436-752 (kernel choice
 * and its allocation), fattn-common.cuh:53-80 (the f16 copies),
 * ggml-cuda.cu:3047-3175 and 4505-4590 (the fused MoE reduction),
 * ggml-cuda.cu:2816-2968, 4537-4590 and topk-moe.cu:398-440 (the fused
 * top-k gating), lightning-indexer.cu:536-590.
 */
#include <string.h>

#include "device.h"
#include "fit_graph.h"
#include "ggufmap/types.h"

enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_IQ4_NL = 20, T_BF16 = 30,
       T_MXFP4 = 39 };

typedef enum fa_kernel { FA_NONE, FA_VEC, FA_TILE, FA_MMA } fa_kernel;

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

/* ggml_cuda_fattn_kv_type_supported */
bool gm_cuda_fa_kv_type(int32_t type) {
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
static bool gqa_opt_applies(const gm_fa_shape *a) {
    return a->gqa >= 2 && a->mask && a->n_kv % 256 == 0 && a->rows_aligned;
}

/* The head sizes with kernels (fattn.cu:575-620): K and V alike, or
 * DeepSeek's 192/128, 320/256 and MLA's 576/512 with enough query heads
 * per K head. */
static bool fattn_head_supported(const gm_fa_shape *a) {
    switch (a->d_k) {
    case 40: case 64: case 72: case 80: case 96: case 112: case 128: case 256: return a->d_v == a->d_k;
    case 192: return a->d_v == 128 && gqa_opt_applies(a) && a->gqa % 8 == 0;
    case 320: return a->d_v == 256 && gqa_opt_applies(a) && a->gqa % 32 == 0;
    case 512: return a->d_v == 512 && gqa_opt_applies(a);
    case 576: return a->d_v == 512 && gqa_opt_applies(a);
    default: return false;
    }
}

/* ggml_cuda_get_best_fattn_kernel: FA_NONE where CUDA has no kernel (its
 * supports_op refuses the node: a head size without kernels, a K or V type
 * such as IQ4_NL, a 192/320/512/576 head without the GQA the kernel
 * needs); the kernel it runs otherwise. */
static fa_kernel fattn_kernel(const gm_fa_shape *a) {
    if (!fattn_head_supported(a) || !gm_cuda_fa_kv_type(a->type_k) || !gm_cuda_fa_kv_type(a->type_v))
        return FA_NONE;
    /* the mask's ne[2] is 1 in every llama.cpp graph */
    const int64_t d = a->d_k;
    const bool can_vec = d <= 256 && d % 64 == 0 && d != 192 && a->n_kv % 256 == 0;
    if (d == 40 || d == 72) return can_vec ? FA_VEC : FA_TILE; /* no tensor-core kernel */
    if (can_vec) {
        if (!is_quantized(a->type_k) && !is_quantized(a->type_v)) {
            /* the sparse single-query gather (256/256 and 512 heads, GQA > 4)
             * is not modelled: it only moves a one-token batch to the MMA kernel */
            if (a->n_q == 1 && a->q_ne3 == 1 && !(a->gqa > 4 && (d >= 256 || a->n_kv >= 8192))) return FA_VEC;
        } else if (a->n_q <= 2) {
            return FA_VEC;
        }
        if (!gqa_opt_applies(a) && a->n_q == 1) return FA_VEC;
    }
    return FA_MMA;
}

static uint64_t pad128(uint64_t x) { return (x + 127) & ~(uint64_t)127; }

/* ggml_cuda_flash_attn_ext_get_alloc_size: the output's nbytes plus, 128
 * bytes aligned, f16 copies of K and of V where the kernel needs them
 * (tensor-core kernels for a K or V not in F16; the vector kernel for F32
 * or a K/V pair it was not compiled for). */
static uint64_t fattn_alloc_size(const gm_fa_shape *a, uint64_t nbytes) {
    bool need_k = false, need_v = false;
    switch (fattn_kernel(a)) {
    case FA_TILE:
    case FA_MMA: need_k = need_v = true; break;
    case FA_VEC: {
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

/* supports_op for SSM_CONV (the channels, conv_x->ne[1], a multiple of
 * 128) and SSM_SCAN (Mamba-2: d_state 128 or 256 and head_dim a multiple
 * of 16; Mamba-1: d_state 16, one group, n_head a multiple of 128). */
static bool ssm_conv_runs(int64_t channels) { return channels % 128 == 0; }

static bool ssm_scan_runs(int64_t d_state, int64_t head_dim, int64_t n_head, int64_t n_group, bool mamba2) {
    if (mamba2) return (d_state == 128 || d_state == 256) && head_dim % 16 == 0;
    return d_state == 16 && head_dim == 1 && n_head % 128 == 0 && n_group == 1;
}

/* ------------------------------------------------------------------------ */
/* The hooks                                                                 */
/* ------------------------------------------------------------------------ */

/* weight_buft_supported's test op against CUDA0 (llama-model-loader.cpp:
 * 946-1120): the SSM kernels' shapes (a Mamba-2 model whose d_state is not
 * 128 or 256, or whose conv channels are not a multiple of 128, keeps
 * ssm_a or ssm_conv1d on the CPU), GET_ROWS of IQ4_NL/MXFP4 rows not a
 * multiple of 256, element-wise ops of a weight that is not F32/F16. */
bool gm_cuda_weight_supported(int32_t type, const int64_t ne[4], gm_weight_op op, const gm_ssm_dims *ssm) {
    switch (op) {
    case GM_WOP_SSM_CONV: return ssm_conv_runs(ne[1]);
    case GM_WOP_SSM_SCAN: {
        const bool mamba2 = ne[0] == 1; /* A [1, n_head]; Mamba-1's is [d_state, d_inner] */
        const int64_t n_head = ne[1], n_group = ssm && ssm->n_group ? ssm->n_group : 1;
        const int64_t d_inner = ssm ? ssm->d_inner : 0, d_state = mamba2 ? (ssm ? ssm->d_state : 0) : ne[0];
        return ssm_scan_runs(d_state, n_head ? d_inner / n_head : 0, n_head, n_group, mamba2);
    }
    case GM_WOP_GET_ROWS: return (type != T_IQ4_NL && type != T_MXFP4) || ne[0] % 256 == 0;
    case GM_WOP_ELEMENTWISE: return type == T_F32 || type == T_F16;
    default: return true;
    }
}

static bool strides_16(const gm_graph *g, int32_t t) {
    if (t == GM_NONE) return true;
    if (is_quantized(g->t[t].type)) return true; /* quantized tensors are not checked */
    for (int i = 1; i < 4; i++)
        if (g->t[t].nb[i] % 16 != 0) return false;
    return true;
}

/* A FLASH_ATTN_EXT node's shapes as ggml-cuda reads them */
static void fattn_of(const gm_graph *g, int32_t t, gm_fa_shape *fa) {
    const gm_tensor *x = &g->t[t];
    const gm_tensor *q = &g->t[x->src[0]], *k = &g->t[x->src[1]], *v = &g->t[x->src[2]];
    const int32_t mask = x->src[3];
    fa->d_k = k->ne[0];
    fa->d_v = v->ne[0];
    fa->n_q = q->ne[1];
    fa->q_ne3 = q->ne[3];
    fa->n_kv = k->ne[1];
    fa->gqa = k->ne[2] > 0 ? q->ne[2] / k->ne[2] : 1;
    fa->type_k = k->type;
    fa->type_v = v->type;
    fa->nel_k = k->ne[0] * k->ne[1] * k->ne[2] * k->ne[3];
    fa->nel_v = v->ne[0] * v->ne[1] * v->ne[2] * v->ne[3];
    fa->mask = mask != GM_NONE;
    fa->rows_aligned = strides_16(g, x->src[0]) && strides_16(g, x->src[1]) && strides_16(g, x->src[2]) &&
                       strides_16(g, mask);
    fa->v_is_k_view = v->view_src != GM_NONE &&
                      (v->view_src == x->src[1] || (v->view_src == k->view_src && v->view_offs == k->view_offs));
}

/* get_alloc_size beyond nbytes and the row padding: FLASH_ATTN_EXT's f16 K/V copies */
uint64_t gm_cuda_alloc_extra(const gm_graph *g, int32_t t) {
    if (g->t[t].op != GM_OP_FLASH_ATTN_EXT) return 0;
    gm_fa_shape fa;
    fattn_of(g, t, &fa);
    const uint64_t nbytes = gm_nbytes(g, t);
    return fattn_alloc_size(&fa, nbytes) - nbytes;
}

/* ggml_cuda_lightning_indexer_supported (lightning-indexer.cu:536-590):
 * 128-wide keys, 32 or 64 heads (the bound asks only this); a graph node
 * also needs Q's and K's strides 16-byte aligned and K of a type below */
bool gm_cuda_runs_indexer(uint32_t head_size, uint32_t n_head) {
    return head_size == 128 && (n_head == 32 || n_head == 64);
}

static bool indexer_key_type(int32_t type) {
    static const int32_t types[] = { T_F32, T_BF16, T_F16, T_Q8_0, T_Q5_1, T_Q5_0, T_Q4_1, T_Q4_0 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i] == type) return true;
    return false;
}

/* supports_op for the ops of the modelled graphs CUDA refuses: flash
 * attention without a kernel for the head size or K/V types, the SSM
 * kernels' shapes, the lightning indexer's */
bool gm_cuda_supports_node(const gm_graph *g, int32_t t) {
    const gm_tensor *x = &g->t[t];
    switch (x->op) {
    case GM_OP_FLASH_ATTN_EXT: {
        gm_fa_shape fa;
        fattn_of(g, t, &fa);
        return fattn_kernel(&fa) != FA_NONE;
    }
    case GM_OP_SSM_CONV: return ssm_conv_runs(g->t[x->src[0]].ne[1]);
    case GM_OP_SSM_SCAN: {
        const gm_tensor *st = &g->t[x->src[0]];
        return ssm_scan_runs(st->ne[0], st->ne[1], st->ne[2], g->t[x->src[4]].ne[1], g->t[x->src[3]].ne[0] == 1);
    }
    case GM_OP_LIGHTNING_INDEXER: {
        const gm_tensor *q = &g->t[x->src[0]];
        return gm_cuda_runs_indexer((uint32_t)q->ne[0], (uint32_t)q->ne[1]) && strides_16(g, x->src[0]) &&
               strides_16(g, x->src[1]) && indexer_key_type(g->t[x->src[1]].type);
    }
    default: return true;
    }
}

bool gm_cuda_runs_fa(const gm_fa_shape *fa) { return fattn_kernel(fa) != FA_NONE; }



/* ------------------------------------------------------------------------ */
/* The fused MoE reduction keeps its inputs alive                            */
/* ------------------------------------------------------------------------ */

/* ggml_backend_cuda_graph_optimize (ggml-cuda.cu:4505-4590) asks the
 * scheduler to keep tensors of two fusions it will run alive: the weighted
 * expert reduction (ggml_cuda_match_moe_weighted_reduction, :3047-3175):
 * experts * router weights (optionally * a scale first), then the views of
 * each used expert summed with ADDs, its inputs kept until its last node
 * (without that the product runs in place of the experts' tensor); and the
 * top-k gating (below).  GGML_CUDA_DISABLE_FUSION=1 turns both off
 * (opts.no_cuda_fusion). */

static bool f32_contiguous(const gm_graph *g, int32_t t) { return g->t[t].type == T_F32 && gm_is_contiguous(g, t); }

/* mul's sources as (experts shaped like mul, weights [1, ne1, ne2, ne3]) */
static bool split_mul(const gm_graph *g, int32_t mul, int32_t *full, int32_t *bcast) {
    const gm_tensor *m = &g->t[mul];
    for (int o = 0; o < 2; o++) {
        const int32_t e = m->src[o], w = m->src[1 - o];
        if (e == GM_NONE || w == GM_NONE || !f32_contiguous(g, e) || !f32_contiguous(g, w)) continue;
        if (memcmp(g->t[e].ne, m->ne, sizeof m->ne) != 0) continue;
        if (g->t[w].ne[0] != 1 || g->t[w].ne[1] != m->ne[1] || g->t[w].ne[2] != m->ne[2] || g->t[w].ne[3] != m->ne[3])
            continue;
        *full = e;
        *bcast = w;
        return true;
    }
    return false;
}

/* ggml_can_fuse_subgraph: every node but the last is no graph output and
 * has all its uses inside [i, i + n); uses are counted as the graph was
 * built (cgraph->use_counts), before the scheduler pointed consumers in
 * other splits at copies */
static bool only_used_inside(const gm_graph *g, const int32_t *uses, int32_t i, int32_t n) {
    for (int32_t k = i; k < i + n - 1; k++) {
        const int32_t t = g->nodes[k];
        if (g->t[t].flags & GM_FLAG_OUTPUT) return false;
        int32_t inside = 0;
        for (int32_t j = k + 1; j < i + n; j++)
            for (int x = 0; x < GM_MAX_SRC; x++)
                if (g->t[g->nodes[j]].src[x] == t) inside++;
        if (inside != uses[t]) return false;
    }
    return true;
}

/* the views of the weighted experts and the ADDs summing them, after the
 * mul_count products at node i: the last ADD, or GM_NONE */
static int32_t match_sum(const gm_graph *g, int32_t i, int32_t mul_count, int32_t count, int32_t weighted) {
    const gm_tensor *w = &g->t[weighted];
    const int64_t k = w->ne[1], n_tokens = w->ne[2] * w->ne[3];
    int64_t n_views = 0, n_adds = 0;
    int32_t views[15], prev = GM_NONE;
    for (int32_t o = mul_count; o < count; o++) {
        const int32_t c = g->nodes[i + o];
        const gm_tensor *x = &g->t[c];
        if (x->op == GM_OP_VIEW) {
            if (n_views >= k || x->src[0] != weighted || x->view_src != weighted || x->type != T_F32 ||
                x->ne[0] != w->ne[0] || x->ne[1] != n_tokens || x->ne[2] != 1 || x->ne[3] != 1 ||
                x->nb[0] != w->nb[0] || x->nb[1] != w->nb[2] || x->view_offs != (uint64_t)n_views * w->nb[1])
                return GM_NONE;
            views[n_views++] = c;
            continue;
        }
        if (x->op != GM_OP_ADD || n_views < 2 || n_adds + 1 >= n_views) return GM_NONE;
        if (x->src[0] != (n_adds == 0 ? views[0] : prev) || x->src[1] != views[n_adds + 1] || x->type != T_F32)
            return GM_NONE;
        prev = c;
        n_adds++;
    }
    if (n_views != k || n_adds != k - 1 || prev == GM_NONE || !gm_is_contiguous(g, prev)) return GM_NONE;
    const gm_tensor *sum = &g->t[prev];
    if (sum->ne[0] != w->ne[0] || sum->ne[1] != n_tokens || sum->ne[2] != 1 || sum->ne[3] != 1) return GM_NONE;
    return prev;
}

static int32_t moe_reduction(const gm_graph *g, const int32_t *uses, int32_t i, int32_t end, gm_fusion *d) {
    const int32_t first = g->nodes[i];
    if (g->t[first].op != GM_OP_MUL || !f32_contiguous(g, first)) return 0;
    int32_t weighted = first, experts = GM_NONE, weights = GM_NONE, scale = GM_NONE, a, b, raw, sc;
    int32_t mul_count = 1;
    if (i + 1 < end) {
        const int32_t second = g->nodes[i + 1];
        if (g->t[second].op == GM_OP_MUL && f32_contiguous(g, second) && split_mul(g, second, &a, &b) && a == first &&
            split_mul(g, first, &raw, &sc)) {
            weighted = second, experts = raw, scale = sc, weights = b, mul_count = 2;
        }
    }
    if (experts == GM_NONE && !split_mul(g, first, &experts, &weights)) return 0;
    const gm_tensor *w = &g->t[weighted];
    const int64_t k = w->ne[1], n_tokens = w->ne[2] * w->ne[3];
    if (k < 2 || k > 15 || n_tokens <= 0) return 0;
    const int32_t count = (int32_t)(2 * k + mul_count - 1);
    if (i + count > end) return 0;
    const int32_t sum = match_sum(g, i, mul_count, count, weighted);
    if (sum == GM_NONE || !only_used_inside(g, uses, i, count)) return 0;
    d->until = sum;
    d->n_keep = 0;
    d->keep[d->n_keep++] = experts;
    d->keep[d->n_keep++] = weights;
    if (scale != GM_NONE) d->keep[d->n_keep++] = scale;
    return count;
}

/* ------------------------------------------------------------------------ */
/* The fused top-k gating keeps its nodes alive                              */
/* ------------------------------------------------------------------------ */

/* The router's nodes as build_moe_ffn makes them: the gating activation
 * (SOFT_MAX; sigmoid; softplus then SQRT), RESHAPE, [ADD of the selection
 * bias], ARGSORT, VIEW (the top k), GET_ROWS (the weights), then [RESHAPE,
 * SUM_ROWS, CLAMP, DIV, RESHAPE] (normalised) and [SCALE].  ggml-cuda runs
 * them as one kernel and keeps every one of them and their sources alive
 * until the node after (add_alloc_deps(i, i + n): one past the last),
 * ggml-cuda.cu:4537-4590.  The softmax-after-selection form adds nothing
 * there.  A UNARY is taken for a sigmoid (softplus when a SQRT follows): the
 * graph model keeps no unary kind, and no other UNARY starts this chain. */
typedef struct topk_shape {
    int32_t n_ops;           /* the nodes fused */
    int32_t ids, weights;    /* the two results kept (node indices) */
} topk_shape;

static bool is_node(const gm_graph *g, int32_t k, int32_t end, gm_op op, int32_t src0) {
    return k < end && g->t[g->nodes[k]].op == op && g->t[g->nodes[k]].src[0] == src0;
}

/* ggml_cuda_topk_moe_fusion with graph_optimize's list of ops: the shape of
 * the match at node i, false when none.  Nodes after the first checks are
 * read to the graph's end, as ggml reads past its split's view. */
static bool topk_match(const gm_graph *g, int32_t i, int32_t end, topk_shape *m) {
    const int32_t *N = g->nodes;
    const uint8_t op = g->t[N[i]].op;
    int32_t act = 1, k = i;
    if (op == GM_OP_UNARY && is_node(g, i + 1, end, GM_OP_SQRT, N[i])) act = 2, k++;
    else if (op != GM_OP_SOFT_MAX && op != GM_OP_UNARY) return false;
    k++;
    if (!is_node(g, k, end, GM_OP_RESHAPE, N[k - 1])) return false;
    const int32_t probs_reshaped = N[k++];
    if (k >= end) return false;
    const bool bias = is_node(g, k, end, GM_OP_ADD, N[k - 2]);
    k += bias;
    if (!is_node(g, k, end, GM_OP_ARGSORT, N[k - (bias ? 1 : 2)])) return false;
    k++;
    if (!is_node(g, k, end, GM_OP_VIEW, N[k - 1])) return false;
    k++;
    if (k >= end || g->t[N[k]].op != GM_OP_GET_ROWS || g->t[N[k]].src[0] != probs_reshaped ||
        g->t[N[k]].src[1] != N[k - 1])
        return false;
    k++;
    bool norm = false, scale = false;
    if (k < end) {
        const int32_t all = g->n_nodes;
        if (g->t[N[k]].op == GM_OP_RESHAPE)
            norm = is_node(g, k, all, GM_OP_RESHAPE, N[k - 1]) && is_node(g, k + 1, all, GM_OP_SUM_ROWS, N[k]) &&
                   is_node(g, k + 2, all, GM_OP_CLAMP, N[k + 1]) && is_node(g, k + 3, all, GM_OP_DIV, N[k]) &&
                   g->t[N[k + 3]].src[1] == N[k + 2] && is_node(g, k + 4, all, GM_OP_RESHAPE, N[k + 3]);
        /* a RESHAPE that does not start the normalisation ends the match there (scale unchecked) */
        if (norm) k += 5;
        if (norm || g->t[N[k]].op != GM_OP_RESHAPE) scale = is_node(g, k, all, GM_OP_SCALE, N[k - 1]);
    }
    m->n_ops = act + (bias ? 5 : 4) + (norm ? 5 : 0) + (scale ? 1 : 0);
    m->ids = i + act - 1 + (bias ? 4 : 3);
    m->weights = i + m->n_ops - 1;
    return true;
}

/* ggml_can_fuse_subgraph (ggml.c:7760-7816) over [i, i + n): every node
 * but the two results used only inside, no graph output, and a view only
 * of a node inside or of a weight. */
static bool fusable(const gm_graph *g, const int32_t *uses, int32_t i, int32_t end, const topk_shape *m) {
    if (i + m->n_ops > end) return false;
    for (int32_t k = i; k < i + m->n_ops; k++) {
        if (k == m->ids || k == m->weights) continue;
        const int32_t t = g->nodes[k];
        if (g->t[t].flags & GM_FLAG_OUTPUT) return false;
        int32_t inside = 0;
        for (int32_t j = k + 1; j < i + m->n_ops; j++)
            for (int x = 0; x < GM_MAX_SRC; x++) inside += g->t[g->nodes[j]].src[x] == t;
        if (inside != uses[t]) return false;
        const int32_t root = g->t[t].view_src;
        bool found = root == GM_NONE || g->t[root].weight;
        for (int32_t j = i; !found && j < i + m->n_ops; j++) found = g->nodes[j] == root;
        if (!found) return false;
    }
    return true;
}

/* ggml_cuda_should_use_topk_moe (topk-moe.cu:398-440): a kernel for this
 * many experts (the top-k view's row stride), contiguous logits and
 * weights, a softmax without mask or sinks (its scale is 1 in MoE). */
static bool kernel_takes(const gm_graph *g, int32_t i, const topk_shape *m) {
    const gm_tensor *gate = &g->t[g->nodes[i]], *ids = &g->t[g->nodes[m->ids]];
    const int64_t n_expert = ids->nb[0] ? (int64_t)(ids->nb[1] / ids->nb[0]) : 0;
    if (((n_expert & (n_expert - 1)) != 0 || n_expert > 512) && n_expert != 288 && n_expert != 576) return false;
    if (!gm_is_contiguous(g, g->nodes[m->weights]) || !gm_is_contiguous(g, gate->src[0])) return false;
    return gate->op != GM_OP_SOFT_MAX || (gate->src[1] == GM_NONE && gate->src[2] == GM_NONE);
}

/* add_alloc_deps(i, i + n): each node of the match and its sources, once
 * each, until the node after it */
static int32_t topk_gating(const gm_graph *g, const int32_t *uses, int32_t i, int32_t end, gm_fusion *d) {
    topk_shape m;
    if (!topk_match(g, i, end, &m) || !fusable(g, uses, i, end, &m) || !kernel_takes(g, i, &m)) return 0;
    d->until = GM_NONE;
    d->n_keep = 0;
    if (i + m.n_ops >= g->n_nodes) return m.n_ops; /* no node after: nothing to keep */
    d->until = g->nodes[i + m.n_ops];
    for (int32_t k = i; k < i + m.n_ops; k++) {
        const gm_tensor *t = &g->t[g->nodes[k]];
        int32_t add[1 + GM_MAX_SRC], n_add = 0;
        add[n_add++] = g->nodes[k];
        for (int x = 0; x < GM_MAX_SRC; x++)
            if (t->src[x] != GM_NONE) add[n_add++] = t->src[x];
        for (int32_t a = 0; a < n_add; a++) {
            bool seen = false;
            for (int j = 0; j < d->n_keep && !seen; j++) seen = d->keep[j] == add[a];
            if (!seen && d->n_keep < GM_FUSION_MAX_KEEP) d->keep[d->n_keep++] = add[a];
        }
    }
    return m.n_ops;
}

/* graph_optimize's loop body at node i: the reduction, else the gating */
int32_t gm_cuda_fusion(const gm_graph *g, const int32_t *uses, int32_t i, int32_t end, gm_fusion *d) {
    const int32_t n = moe_reduction(g, uses, i, end, d);
    return n ? n : topk_gating(g, uses, i, end, d);
}

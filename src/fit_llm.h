/*
 * fit_llm.h - llama.cpp's graph-building blocks over the shape-only graph
 * (internal): what llm_graph_context (src/llama-graph.cpp) and the memory
 * modules' graph helpers build, so that an architecture's worst-case graph
 * (src/models/<arch>.cpp) can be written once per architecture in
 * fit_arch_*.c.
 */
#ifndef GGUFMAP_FIT_LLM_H
#define GGUFMAP_FIT_LLM_H

#include "fit_graph.h"
#include "fit_internal.h"

/* The ubatch a reserve builds its graph for (llama_context::graph_reserve). */
typedef struct gm_ubatch {
    int64_t n_tokens, n_seqs, n_seq_tokens, n_outputs;
} gm_ubatch;

/* One llama_kv_cache: per layer its K and V tensors (a layer that reuses
 * another's cache has that layer's), GM_NONE where it has none. */
typedef struct gm_kv_cache {
    bool present;
    bool v_trans;
    bool k_only;               /* the indexer cache: keys only */
    int64_t kv_size;
    uint32_t head_k_override;  /* the indexer's key length (one head), 0 otherwise */
    int32_t k[GM_MAX_LAYERS], v[GM_MAX_LAYERS];
} gm_kv_cache;

typedef struct gm_llm {
    gm_graph *g;
    const gm_fit_ctx *fit;
    const gm_hparams *hp;
    const gm_cparams *cp;
    gm_backends be;
    gm_ubatch ub;
    bool full_offload;          /* every layer and the output on the GPU */
    const int32_t *ctx_of, *dup_ctx_of; /* per model tensor: the context of its instance and of its output copy */
    int32_t *w, *w_dup;         /* per model tensor: its tensor in this graph, GM_NONE */
    int32_t *w_copy;            /* per (context, model tensor): a TENSOR_DUPLICATED weight's copy in that
                                   context (gm_w_layer), GM_NONE */
    gm_kv_cache kv, kv_swa, kv_idx;
    int32_t rs_r[GM_MAX_LAYERS], rs_s[GM_MAX_LAYERS], rs_p[GM_MAX_LAYERS];
    int32_t t_logits, t_embd;
    uint32_t max_nodes;         /* llama_context::graph_max_nodes: the compute context's room in tensors */
} gm_llm;

/* ---- model tensors ---- */
/* The weight named by fmt (with %d for il) as the graph sees it, or GM_NONE
 * when the model has none (optional tensors). */
int32_t gm_w(gm_llm *l, const char *fmt, int il);
/* The output projection: output.weight, or token_embd's copy llama.cpp
 * creates for the output layer of a tied model. */
int32_t gm_w_output(gm_llm *l);
/* A weight with the shape llama.cpp creates it with (TENSOR_ALLOW_RESHAPE). */
int32_t gm_w_shaped(gm_llm *l, const char *fmt, int il, int64_t ne0, int64_t ne1);

/* The instance of the weight that layer il's context holds: its
 * TENSOR_DUPLICATED copy (per-layer rope_freqs and rope factors: one per
 * buffer-type context, shared by the layers there), else the weight itself. */
int32_t gm_w_layer(gm_llm *l, const char *fmt, int il);

/* GGML_ASSERT(cond) in a graph builder: llama.cpp aborts when the reserve
 * builds a graph where it fails; the first failed one (what: its text) is
 * recorded in the graph's aborts (gm_graph_abort) and the context is
 * reported as an abort.
 * Returns cond, so that the builder can skip what would not be built. */
bool gm_assert(gm_llm *l, bool cond, const char *what);

/* the backend a layer's device runs (0 the GPU, n-1 the CPU) */
int gm_layer_backend(const gm_llm *l, int il);

/* llama_context::graph_get_cb for the names that matter: "norm" and
 * "l_last" are pinned to their layer's backend for small batches or full
 * offload. */
void gm_cb_norm(gm_llm *l, int32_t t, int il);

/* ---- inputs (llm_graph_input_*) ---- */
int32_t gm_inp_embd(gm_llm *l, int32_t tok_embd);
int32_t gm_inp_pos(gm_llm *l);
int32_t gm_inp_out_ids(gm_llm *l);

/* the inputs of one attention cache (llm_graph_input_attn_kv) */
typedef struct gm_attn_inp {
    const gm_kv_cache *kv;
    int32_t k_idxs, v_idxs, kq_mask, k_rot, v_rot;
} gm_attn_inp;

void gm_attn_inp_kv(gm_llm *l, const gm_kv_cache *kv, gm_attn_inp *inp);
/* the iswa pair: base for full layers, swa for sliding-window ones (same input objects order as llama.cpp) */
void gm_attn_inp_kv_iswa(gm_llm *l, gm_attn_inp *base, gm_attn_inp *swa);

/* ---- blocks ---- */
int32_t gm_build_norm_rms(gm_llm *l, int32_t cur, int32_t w, int il);
int32_t gm_build_lora_mm(gm_llm *l, int32_t w, int32_t cur);
/* layer il's separate Q/K/V projections, with their biases, reshaped to heads (build_qkv) */
void gm_build_qkv(gm_llm *l, int il, int32_t cur, int64_t head_k, int64_t n_head, int64_t n_head_kv, int64_t head_v,
                  int32_t *q, int32_t *k, int32_t *v);
/* build_qkv in full (llama-graph.cpp:1633-1745, the overload with a head
 * size and count each for Q, K and V): fused attn_qkv or separate
 * projections, with their biases; reshape false leaves them [width, T]
 * (fit_blocks.h's gm_build_qkv_ex is the one-head-size form) */
void gm_build_qkv_heads(gm_llm *l, int il, int32_t cur, const int64_t head[3], const int64_t n_heads[3], bool reshape,
                        int32_t *q, int32_t *k, int32_t *v);
/* What build_attn takes beside q, k, v: the output projection and its
 * bias, a KQ bias (T5's position bias: no flash attention then), the
 * attention sinks, soft-capped scores (hparams.attn_soft_cap), and whether
 * the input is an iswa pair's (q, k, v expanded in that order). */
typedef struct gm_attn_opts {
    int32_t wo, wo_b, kq_b, sinks;
    bool soft_cap, iswa;
} gm_attn_opts;
/* build_attn_mha over k, v (views of a cache, or the current K and V) for layer il (its
 * FLASH_ATTN_EXT node records il, llm_graph_result's fused node, for -fa auto's probe) */
int32_t gm_build_attn_mha(gm_llm *l, int32_t q, int32_t k, int32_t v, int32_t kq_b, int32_t kq_mask, int32_t sinks,
                          bool soft_cap, int il);
/* build_attn with a KV cache (plain, or one of an iswa pair): store K/V
 * (k and v GM_NONE: a layer that reads another's cache), attend, project */
int32_t gm_build_attn_opts(gm_llm *l, const gm_attn_inp *inp, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                           int il);
/* the same with MLA's V decompression (wv_b, build_attn's v_mla); over a
 * cache of keys only (gm_attn_inp_k) K alone is stored and V is a view of K */
int32_t gm_build_attn_mla(gm_llm *l, const gm_attn_inp *inp, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                          int32_t v_mla, int il);
/* build_attn with a KV cache: store K/V, attend, project with wo */
int32_t gm_build_attn(gm_llm *l, const gm_attn_inp *inp, int32_t wo, int32_t q, int32_t k, int32_t v, int il,
                      bool soft_cap);
/* the same for a sliding-window pair of caches: q, k, v expanded in that
 * order; k and v GM_NONE on a layer that reads another layer's cache */
int32_t gm_build_attn_ex(gm_llm *l, const gm_attn_inp *inp, int32_t wo, int32_t q, int32_t k, int32_t v, int il,
                         bool soft_cap, bool iswa);
/* build_ffn with a SiLU-gated parallel up/gate (LLM_FFN_SILU, LLM_FFN_PAR) or GELU */
int32_t gm_build_ffn(gm_llm *l, int32_t cur, int32_t up, int32_t gate, int32_t down, bool gelu);
/* build_moe_ffn: softmax gating, top-k experts, SiLU */
int32_t gm_build_moe_ffn(gm_llm *l, int32_t cur, int32_t gate_inp, int32_t up_exps, int32_t gate_exps,
                         int32_t down_exps, int64_t n_expert, int64_t n_expert_used, bool norm_w);

/* build_norm in full (llama-graph.cpp:1583-1615): LLM_NORM (layer norm)
 * or LLM_NORM_RMS, then the weight and the bias where given ("norm" pinned
 * as gm_build_norm_rms does) */
int32_t gm_build_norm(gm_llm *l, int32_t cur, int32_t w, int32_t b, bool rms, int il);

/* The NextN/MTP block's input (llm_graph_input_embd_h and the block's
 * first ops, qwen35.cpp:530-575 and its kin): the token rows (the block's
 * embed_tokens, else token_embd) and the target's hidden states [n_embd,
 * n_tokens], each RMS-normed (enorm, hnorm), concatenated and projected by
 * eh_proj: [n_embd, n_tokens] */
int32_t gm_build_mtp_eh_proj(gm_llm *l, int il);
/* the same with enorm/hnorm layer norms unless rms (cohere2moe) */
int32_t gm_build_mtp_eh_proj_norm(gm_llm *l, int il, bool rms);

/* ---- general blocks (graphs-moe): every optional operand of llama.cpp's ---- */

/* build_attn_inp_k: the inputs of a cache of keys only (MLA's) */
void gm_attn_inp_k(gm_llm *l, const gm_kv_cache *kv, gm_attn_inp *inp);

/* the KQ mask opened on top_k's cells [n_top, T/ns, 1, ns] (-inf elsewhere):
 * build_attn with a top_k (DSA, qwen4exp's QSA) */
int32_t gm_kq_mask_top_k(gm_llm *l, int32_t kq_mask, int32_t top_k);

/* llama_kv_cache::cpy_k (store k_cur's rows at k_idxs) and get_k (the
 * whole cache as [head, n_head_kv, kv_size, n_stream]) of layer il */
int32_t gm_cache_cpy_k(gm_llm *l, const gm_kv_cache *kv, int32_t k_cur, int32_t k_idxs, int il);
int32_t gm_cache_get_k(gm_llm *l, const gm_kv_cache *kv, int il);


/* marks the graph's outputs as llm_graph_result::set_outputs does */
void gm_set_outputs(gm_llm *l);

/* ---- the architectures' worst-case graphs (fit_arch_*.c) ---- */
void gm_arch_llama(gm_llm *l);
void gm_arch_qwen3moe(gm_llm *l);
void gm_arch_smollm3(gm_llm *l);
void gm_arch_gemma4(gm_llm *l);
/* gemma4's and gemma3n's per-layer token embeddings, projected: [ple, T, n_layer] */
int32_t gm_per_layer_inputs(gm_llm *l, int32_t inpL, int64_t ple);
void gm_arch_qwen4exp(gm_llm *l);
/* graphs-dense: fit_arch_dense.c, fit_arch_gemma.c, fit_arch_encoder.c */
void gm_arch_mistral3(gm_llm *l);
void gm_arch_phi3(gm_llm *l);
void gm_arch_granite(gm_llm *l);
/* granite's build_layer_ffn (granite.cpp:150-220): the residual scales
 * around the dense or routed FFN (+ shared expert) of layer il; shared with
 * granitehybrid (fit_arch_mamba.c) */
int32_t gm_build_granite_ffn(gm_llm *l, int32_t cur, int32_t inpSA, int il);
void gm_arch_command_r(gm_llm *l);
void gm_arch_cohere2(gm_llm *l);
void gm_arch_olmo2(gm_llm *l);
void gm_arch_starcoder2(gm_llm *l);
void gm_arch_exaone4(gm_llm *l);
void gm_arch_gemma2(gm_llm *l);
void gm_arch_gemma3(gm_llm *l);
void gm_arch_gemma3n(gm_llm *l);
void gm_arch_bert(gm_llm *l);
void gm_arch_nomic_bert(gm_llm *l);
void gm_arch_t5(gm_llm *l);
void gm_arch_t5encoder(gm_llm *l);

#endif

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
    const ggufmap_fit *fit;
    const gm_hparams *hp;
    const gm_cparams *cp;
    gm_backends be;
    gm_ubatch ub;
    bool full_offload;          /* every layer and the output on the GPU */
    const int32_t *ctx_of, *dup_ctx_of; /* per model tensor: the context of its instance and of its output copy */
    int32_t *w, *w_dup;         /* per model tensor: its tensor in this graph, GM_NONE */
    gm_kv_cache kv, kv_swa, kv_idx;
    int32_t rs_r[GM_MAX_LAYERS], rs_s[GM_MAX_LAYERS], rs_p[GM_MAX_LAYERS];
    int32_t t_logits, t_embd;
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

/* a tensor every layer creates with TENSOR_DUPLICATED (rope_freqs,
 * rope_factors_*): the copy in the context of layer il's device */
int32_t gm_w_layer(gm_llm *l, const char *name, int il);

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
/* build_qkv in full: fused attn_qkv or separate projections, with biases;
 * head[] and n_heads[] for Q, K, V; reshape false leaves them [width, T] */
void gm_build_qkv_ex(gm_llm *l, int il, int32_t cur, const int64_t head[3], const int64_t n_heads[3], bool reshape,
                     int32_t *q, int32_t *k, int32_t *v);
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

/* ---- general blocks (graphs-moe): every optional operand of llama.cpp's ---- */

/* build_attn_inp_k: the inputs of a cache of keys only (MLA's) */
void gm_attn_inp_k(gm_llm *l, const gm_kv_cache *kv, gm_attn_inp *inp);

/* build_attn's operands: wo and wo_b may be GM_NONE; k and v GM_NONE on a
 * layer that reads another's cache (iswa); kq_b, sinks, v_mla as llama.cpp
 * passes them (GM_NONE when absent) */
typedef struct gm_attn_args {
    int32_t wo, wo_b;
    int32_t q, k, v;
    int32_t kq_b, sinks, v_mla;
    bool soft_cap;      /* attention logit soft-capping (gemma2) */
    bool iswa;          /* expanded q, k, v (llm_graph_input_attn_kv_iswa) instead of q, v, k */
} gm_attn_args;
/* build_attn over inp's cache; a cache of keys only (inp from gm_attn_inp_k)
 * stores K alone and reads V as a view of K */
int32_t gm_build_attn_args(gm_llm *l, const gm_attn_inp *inp, const gm_attn_args *a, int il);

/* llama_kv_cache::cpy_k (store k_cur's rows at k_idxs) and get_k (the
 * whole cache as [head, n_head_kv, kv_size, n_stream]) of layer il */
int32_t gm_cache_cpy_k(gm_llm *l, const gm_kv_cache *kv, int32_t k_cur, int32_t k_idxs, int il);
int32_t gm_cache_get_k(gm_llm *l, const gm_kv_cache *kv, int il);

typedef enum gm_norm_type { GM_NORM_RMS = 0, GM_NORM_LAYER } gm_norm_type;
/* build_norm: norm, times w, plus b (either GM_NONE) */
int32_t gm_build_norm(gm_llm *l, int32_t cur, int32_t w, int32_t b, gm_norm_type type, int il);

/* build_ffn's activations (llm_ffn_op_type) */
typedef enum gm_ffn_op {
    GM_FFN_SILU = 0, GM_FFN_GELU, GM_FFN_RELU, GM_FFN_RELU_SQR, GM_FFN_SWIGLU, GM_FFN_SWIGLU_OAI, GM_FFN_GEGLU,
    GM_FFN_REGLU
} gm_ffn_op;
typedef struct gm_ffn_args {
    int32_t up, up_b, gate, gate_b, down, down_b;   /* GM_NONE where absent */
    gm_ffn_op op;
    bool gate_seq;      /* LLM_FFN_SEQ: the gate reads up's output */
    float clamp;        /* swiglu_clamp_shexp[il]: SwiGLU limited when > 0 */
} gm_ffn_args;
int32_t gm_build_ffn_args(gm_llm *l, int32_t cur, const gm_ffn_args *a);
/* layer il's dense FFN (ffn_up/gate/down and biases) and its shared expert (ffn_*_shexp) */
gm_ffn_args gm_ffn_layer(gm_llm *l, int il, gm_ffn_op op);
gm_ffn_args gm_ffn_shexp(gm_llm *l, int il);
/* clamp(up) * clamp(silu(gate)): the limited SwiGLU of build_ffn and build_moe_ffn */
int32_t gm_swiglu_limited(gm_graph *g, int32_t gate, int32_t up);

/* build_moe_ffn in full (fit_block_moe.c) */
typedef enum gm_moe_gating {
    GM_GATING_SOFTMAX = 1, GM_GATING_SIGMOID = 2, GM_GATING_SOFTMAX_WEIGHT = 3, GM_GATING_SQRT_SOFTPLUS = 4
} gm_moe_gating;     /* llama_expert_gating_func_type */
typedef struct gm_moe_args {
    int32_t gate_inp, gate_inp_b, probs_in;
    int32_t up_exps, up_exps_b, gate_exps, gate_exps_b, down_exps, down_exps_b;
    int32_t gate_up_exps, gate_up_exps_b;   /* merged up|gate experts */
    int32_t exp_probs_b;                    /* expert selection bias */
    int64_t n_expert, n_expert_used;
    gm_ffn_op op;                           /* SILU, GELU, RELU, RELU_SQR, SWIGLU_OAI */
    bool norm_w;
    float w_scale;
    gm_moe_gating gating;
    float clamp;                            /* swiglu_clamp_exp[il] */
} gm_moe_args;
void gm_moe_args_init(gm_moe_args *a);
/* layer il's experts by llama.cpp's names, routing from the hyperparameters */
void gm_moe_args_layer(gm_llm *l, int il, gm_moe_args *a);
int32_t gm_build_moe(gm_llm *l, int32_t cur, const gm_moe_args *a, int il);
typedef enum gm_shexp_kind {
    GM_SHEXP_NONE = 0,  /* routed experts only */
    GM_SHEXP_PLAIN,     /* + the shared expert's FFN */
    GM_SHEXP_GATED      /* + the shared expert's FFN times sigmoid(ffn_gate_inp_shexp x) (qwen2moe) */
} gm_shexp_kind;
int32_t gm_build_moe_shexp(gm_llm *l, int32_t cur, const gm_moe_args *a, gm_shexp_kind shexp, int il);
/* layer il's FFN: dense SwiGLU without a router, else routed experts (the
 * hyperparameters' routing) plus the shared expert where there is one */
int32_t gm_build_layer_ffn(gm_llm *l, int32_t cur, int il);

/* ---- multi-head latent attention and the DSA indexer (fit_block_mla.c) ---- */
void gm_mla_kv(gm_llm *l, int32_t cur, int32_t pos, int il, int32_t *kv_cmpr, int32_t *k_pe);
void gm_mla_split_q(gm_llm *l, int32_t q, int32_t *q_nope, int32_t *q_pe);
void gm_mla_absorb(gm_llm *l, int32_t q_nope, int32_t q_pe, int32_t kv_cmpr, int32_t k_pe, int32_t pos, int il,
                   int32_t *Q, int32_t *K, int32_t *V);
typedef struct gm_dsa_inp {
    gm_attn_inp mla;                             /* the MLA cache's (keys only) */
    int32_t k_idxs_lid, kq_mask_lid, k_rot_lid;  /* the indexer cache's */
} gm_dsa_inp;
void gm_dsa_inputs(gm_llm *l, gm_dsa_inp *inp);
int32_t gm_dsa_top_k(gm_llm *l, const gm_dsa_inp *inp, int32_t qr, int32_t cur, int32_t pos, int il);
int32_t gm_dsa_attn(gm_llm *l, const gm_dsa_inp *inp, const gm_attn_args *a, int32_t top_k, int il);

/* ---- the NextN (MTP) draft graph around its block (fit_block_mtp.c) ---- */
int32_t gm_mtp_input(gm_llm *l, int il, gm_norm_type norm);
int32_t gm_mtp_head(gm_llm *l, int32_t cur, int il, int32_t out_ids, gm_norm_type norm, bool rows_first);

/* marks the graph's outputs as llm_graph_result::set_outputs does */
void gm_set_outputs(gm_llm *l);

/* ---- the architectures' worst-case graphs (fit_arch_*.c) ---- */
void gm_arch_llama(gm_llm *l);
void gm_arch_qwen3moe(gm_llm *l);
void gm_arch_smollm3(gm_llm *l);
void gm_arch_gemma4(gm_llm *l);
void gm_arch_qwen4exp(gm_llm *l);
/* fit_arch_moe.c */
void gm_arch_gpt_oss(gm_llm *l);
void gm_arch_qwen2moe(gm_llm *l);
void gm_arch_olmoe(gm_llm *l);
void gm_arch_minimax_m2(gm_llm *l);
void gm_arch_phimoe(gm_llm *l);
void gm_arch_ernie4_5_moe(gm_llm *l);
void gm_arch_granite(gm_llm *l);
void gm_arch_glm4moe(gm_llm *l);
void gm_arch_hy_v3(gm_llm *l);
void gm_arch_step35(gm_llm *l);
void gm_arch_cohere2moe(gm_llm *l);
/* the MTP draft graphs (graph_mtp) */
void gm_arch_glm4moe_mtp(gm_llm *l);
void gm_arch_hy_v3_mtp(gm_llm *l);
void gm_arch_step35_mtp(gm_llm *l);
void gm_arch_cohere2moe_mtp(gm_llm *l);
/* fit_arch_mla.c */
void gm_arch_deepseek2(gm_llm *l);
void gm_arch_dsa(gm_llm *l);
void gm_arch_mla_mtp(gm_llm *l);

#endif

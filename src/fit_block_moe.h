/*
 * fit_block_moe.h - the mixture-of-experts families' blocks over the
 * shape-only graph (internal), beside fit_llm.h's and fit_blocks.h's:
 *
 *   fit_block_moe.c  build_moe_ffn in full and the shared expert beside it
 *                    (any architecture with routed experts: the MoE
 *                    decoders, qwen35moe, nemotron_h_moe, ...)
 *   fit_block_mla.c  multi-head latent attention and the DSA lightning
 *                    indexer (deepseek2, deepseek32, glm-dsa)
 *   fit_block_mtp.c  the NextN (MTP) draft graph's head
 *   fit_arch_moe.c, fit_arch_mla.c  the architectures built from them
 *
 * Each follows the llama.cpp function it names op for op and in its order.
 */
#ifndef GGUFMAP_FIT_BLOCK_MOE_H
#define GGUFMAP_FIT_BLOCK_MOE_H

#include "fit_blocks.h"

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
/* a layer's FFN as an architecture builds it */
typedef int32_t (*gm_layer_ffn_fn)(gm_llm *l, int32_t cur, int il);
/* the second half of a decoder layer: (with out_ids: the output rows), the
 * residual, the RMS norm norm_name, ffn (NULL: gm_build_layer_ffn), the
 * residual */
int32_t gm_build_ffn_residual(gm_llm *l, int32_t cur, int32_t inpSA, int32_t out_ids, const char *norm_name,
                              gm_layer_ffn_fn ffn, int il);

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
/* build_attn over the MLA cache with the mask opened on top_k's cells (v_mla: wv_b) */
int32_t gm_dsa_attn(gm_llm *l, const gm_dsa_inp *inp, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                    int32_t v_mla, int32_t top_k, int il);

/* ---- the NextN (MTP) draft graph's head (fit_block_mtp.c) ---- */
/* shared_head_norm (else output_norm; layer norm unless rms), t_h_nextn,
 * the output rows, shared_head_head (else output); rows_first (step35):
 * the rows before the norm, t_h_nextn the un-normed state */
int32_t gm_mtp_head(gm_llm *l, int32_t cur, int il, int32_t out_ids, bool rms, bool rows_first);

/* ---- the architectures (fit_arch_moe.c, fit_arch_mla.c) ---- */
void gm_arch_gpt_oss(gm_llm *l);
void gm_arch_qwen2moe(gm_llm *l);
void gm_arch_olmoe(gm_llm *l);
void gm_arch_minimax_m2(gm_llm *l);
void gm_arch_ernie4_5_moe(gm_llm *l);
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
void gm_arch_deepseek2_mtp(gm_llm *l);

#endif

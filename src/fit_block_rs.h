/*
 * fit_block_rs.h - llama.cpp's recurrent building blocks over the
 * shape-only graph (internal): the recurrent memory's inputs and state
 * gathers (llama-graph.cpp build_rs*), the gated delta net
 * (models/delta-net-base.cpp), Mamba-2 (models/mamba-base.cpp), LFM2's
 * short convolution and RWKV-7's time and channel mix
 * (models/rwkv7-base.cpp).  Each family's graph (fit_arch_*.c) is a short
 * description over these.
 */
#ifndef GGUFMAP_FIT_BLOCK_RS_H
#define GGUFMAP_FIT_BLOCK_RS_H

#include "fit_llm.h"

/* llm_graph_input_rs: the state-copy indices and their two views */
typedef struct gm_rs_inp {
    int32_t s_copy, s_copy_main, s_copy_extra;
} gm_rs_inp;

/* build_rs_inp_impl (llama-graph.cpp:3514-3535) */
void gm_rs_inp_build(gm_llm *l, gm_rs_inp *inp);

/* build_rs (llama-graph.cpp:3478-3512) over the whole memory (head 0,
 * rs_z 0, as a reserve sees it): the n_seqs rows of states s
 * [state_size, n_seqs] */
int32_t gm_build_rs(gm_llm *l, const gm_rs_inp *inp, int32_t s, int64_t state_size);

/* llm_build_delta_net_base::build_conv_state (delta-net-base.cpp:421-495,
 * n_rs_seq 0): the convolution input [kernel - 1 + T, channels, n_seqs] of
 * x [channels, n_seq_tokens, n_seqs], the new tail written back */
int32_t gm_build_conv_state(gm_llm *l, const gm_rs_inp *inp, int32_t conv_states_all, int32_t x, int64_t kernel,
                            int64_t channels);

/* beta = sigmoid(ssm_beta x) and gate = softplus(ssm_alpha x + ssm_dt) *
 * ssm_a, both [1, n_v_heads, n_seq_tokens, n_seqs] (qwen35.cpp:346-370,
 * qwen4exp.cpp:884-903) */
void gm_build_gdn_beta_gate(gm_llm *l, int32_t cur, int il, int32_t *beta, int32_t *gate);

/* How a gated delta net's q and k reach n_v_heads when n_k_heads differs:
 * not at all (the fused op broadcasts; qwen35), or by qwen3next's
 * interleaving repeat (reshape, repeat_4d, reshape). */
typedef enum gm_gdn_repeat { GM_GDN_REPEAT_NONE = 0, GM_GDN_REPEAT_INTERLEAVE } gm_gdn_repeat;

/* The gated delta net after its projections (qwen35.cpp:395-490 and its
 * kin): the state rows, the short convolution of conv_input, q/k/v, the
 * fused GATED_DELTA_NET with the new state stored, the gated norm by z and
 * ssm_out: [n_embd, n_tokens].  beta and gate [1, n_v_heads, n_seq_tokens,
 * n_seqs]. */
int32_t gm_build_gdn(gm_llm *l, const gm_rs_inp *inp, int32_t conv_input, int32_t z, int32_t beta, int32_t gate,
                     int il, gm_gdn_repeat repeat);

/* build_moe_ffn with softmax gating plus a shared expert gated by a
 * sigmoid (qwen35moe.cpp:493-545, qwen3next, qwen4exp, qwen2moe's shape):
 * routed experts, then the shared SwiGLU FFN times sigmoid(gate_inp_shexp) */
int32_t gm_build_moe_shexp_gated(gm_llm *l, int32_t cur, int il);

#endif

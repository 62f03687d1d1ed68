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

/* build_inp_mem_hybrid (llama-graph.cpp:3599-3608): the state inputs, then
 * the attention cache's */
void gm_inp_mem_hybrid(gm_llm *l, gm_rs_inp *rs, gm_attn_inp *attn);

/* build_rs (llama-graph.cpp:3478-3512) over the whole memory (head 0,
 * rs_z 0, as a reserve sees it): the n_seqs rows of states s
 * [state_size, n_seqs] */
int32_t gm_build_rs(gm_llm *l, const gm_rs_inp *inp, int32_t s, int64_t state_size);
/* the same with the rows taken by rows(l, ctx, states, ids) instead of
 * get_rows (llm_graph_get_rows_fn: Mamba's scan reads the states itself) */
typedef int32_t (*gm_rs_rows_fn)(gm_llm *l, void *ctx, int32_t states, int32_t ids);
int32_t gm_build_rs_with(gm_llm *l, const gm_rs_inp *inp, int32_t s, int64_t state_size, gm_rs_rows_fn rows,
                         void *ctx);

/* llm_build_delta_net_base::build_conv_state (delta-net-base.cpp:421-528):
 * the convolution input [kernel - 1 + T, channels, n_seqs] of
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

/* llm_build_mamba_base::build_mamba2_layer (mamba-base.cpp:156-304): the
 * Mamba-2 mixer of layer il on cur [n_embd, n_tokens], its conv
 * and ssm states read and written: [n_embd, n_tokens] */
int32_t gm_build_mamba2_layer(gm_llm *l, const gm_rs_inp *inp, int32_t cur, int il);

/* LFM2's short convolution block (lfm2.cpp:158-232, causal):
 * in_proj split in b, c, x; conv over the state and b*x; c times the
 * convolution; out_proj: [n_embd, n_tokens] */
int32_t gm_build_shortconv(gm_llm *l, const gm_rs_inp *inp, int32_t cur, int il);

/* RWKV-7 (rwkv7-base.cpp): the time mix of layer il on cur and x_prev
 * [n_embd, n_seq_tokens, n_seqs], with the first layer's value (*v_first,
 * GM_NONE before layer 0 sets it), its wkv state read and written:
 * [n_embd, n_seq_tokens, n_seqs]; the channel mix on [n_embd, n_tokens] */
int32_t gm_build_rwkv7_time_mix(gm_llm *l, const gm_rs_inp *inp, int32_t cur, int32_t x_prev, int32_t *v_first, int il);
int32_t gm_build_rwkv7_channel_mix(gm_llm *l, int32_t cur, int32_t x_prev, int il);

/* build_moe_ffn with softmax gating plus a shared expert gated by a
 * sigmoid (qwen35moe.cpp:493-545, qwen3next, qwen4exp, qwen2moe's shape):
 * routed experts, then the shared SwiGLU FFN times sigmoid(gate_inp_shexp) */
int32_t gm_build_moe_shexp_gated(gm_llm *l, int32_t cur, int il);

#endif

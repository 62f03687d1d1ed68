/*
 * fit_block_rs.c - the recurrent blocks llama.cpp builds its hybrid and
 * recurrent graphs from, over the shape-only graph (fit_block_rs.h).
 *
 * Data structure: the gm_llm of one graph; the recurrent memory's state
 * tensors (l->rs_r, l->rs_s: [n_embd_r or n_embd_s, rows]) are leafs with
 * memory.  Workload: one call per layer.  Fidelity: each function follows
 * the llama.cpp function it names op for op and expansion for expansion,
 * with the values a reserve graph sees (the memory's full context: head 0,
 * rs_z 0, n_rs = max(1, n_seq_max), n_rs_seq 0) and llama.cpp's fused ops
 * as enabled (every modelled device runs GATED_DELTA_NET, so
 * resolve_fused_ops keeps it).
 */
#include "fit_block_rs.h"

enum { T_F32 = 0, T_I32 = 26 };

static uint64_t f32s(int64_t n) { return (uint64_t)n * 4u; }

/* ------------------------------------------------------------------------ */
/* The recurrent memory                                                      */
/* ------------------------------------------------------------------------ */

/* n_rs of the memory's full context: its size, max(1, n_seq_max) */
static int64_t n_rs(const gm_llm *l) { return l->cp->sizes.n_seq_max > 0 ? l->cp->sizes.n_seq_max : 1; }

void gm_rs_inp_build(gm_llm *l, gm_rs_inp *inp) {
    gm_graph *g = l->g;
    const int64_t n = n_rs(l), n_seqs = l->ub.n_seqs;
    inp->s_copy = gm_new_1d(g, T_I32, n);
    gm_set_input(g, inp->s_copy);
    inp->s_copy_main = gm_view_1d(g, inp->s_copy, n_seqs, 0);
    inp->s_copy_extra = gm_view_1d(g, inp->s_copy, n - n_seqs, (uint64_t)n_seqs * 4);
}

int32_t gm_build_rs(gm_llm *l, const gm_rs_inp *inp, int32_t s, int64_t state_size) {
    gm_graph *g = l->g;
    const int64_t n_seqs = l->ub.n_seqs, n = n_rs(l);
    int32_t states = gm_reshape_2d(g, s, state_size, g->t[s].ne[1]);
    int32_t zero = gm_view_1d(g, states, state_size, 0);
    gm_expand(g, gm_unary_inplace(g, GM_OP_SCALE, zero));
    int32_t out = gm_get_rows(g, states, inp->s_copy_main);
    gm_expand(g, out);
    int32_t extra = gm_get_rows(g, states, inp->s_copy_extra);
    int32_t dst = gm_view_2d(g, s, state_size, n - n_seqs, g->t[s].nb[1], (uint64_t)n_seqs * g->t[s].nb[1]);
    gm_expand(g, gm_cpy(g, extra, dst));
    return out;
}

int32_t gm_build_conv_state(gm_llm *l, const gm_rs_inp *inp, int32_t conv_states_all, int32_t x, int64_t kernel,
                            int64_t channels) {
    gm_graph *g = l->g;
    const int64_t n_seqs = l->ub.n_seqs, row_count = (kernel - 1) * channels;
    int32_t states = gm_build_rs(l, inp, conv_states_all, gm_n_embd_r(l->hp));
    states = gm_reshape_3d(g, states, kernel - 1, channels, n_seqs);
    int32_t input = gm_concat(g, states, gm_transpose(g, x), 0);
    const int64_t s_idx = g->t[input].ne[0] - g->t[states].ne[0];
    const gm_tensor *in = &g->t[input];
    int32_t last = gm_view_3d(g, input, kernel - 1, channels, n_seqs, in->nb[1], in->nb[2], f32s(s_idx));
    int32_t dst = gm_view_2d(g, conv_states_all, row_count, n_seqs, g->t[conv_states_all].nb[1], 0);
    gm_expand(g, gm_cpy(g, last, dst));
    return input;
}

/* ------------------------------------------------------------------------ */
/* The gated delta net                                                       */
/* ------------------------------------------------------------------------ */

void gm_build_gdn_beta_gate(gm_llm *l, int32_t cur, int il, int32_t *beta, int32_t *gate) {
    gm_graph *g = l->g;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens, nv = l->hp->ssm_dt_rank;
    *beta = gm_reshape_4d(g, gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_beta.weight", il), cur), 1, nv, nst, ns);
    *beta = gm_unary(g, GM_OP_UNARY, *beta);
    int32_t alpha = gm_reshape_3d(g, gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_alpha.weight", il), cur), nv, nst, ns);
    alpha = gm_unary(g, GM_OP_UNARY, gm_binary(g, GM_OP_ADD, alpha, gm_w(l, "blk.%d.ssm_dt.bias", il)));
    *gate = gm_binary(g, GM_OP_MUL, alpha, gm_w(l, "blk.%d.ssm_a", il));
    *gate = gm_reshape_4d(g, *gate, 1, nv, nst, ns);
}

/* build_gdn_l2_norm (models.h:14-18) */
static int32_t gdn_l2_norm(gm_graph *g, int32_t x) { return gm_unary(g, GM_OP_SCALE, gm_unary(g, GM_OP_RMS_NORM, x)); }

/* qwen3next's repeat interleave of q or k to n_v_heads (qwen3next.cpp:560-580) */
static int32_t repeat_interleave(gm_graph *g, int32_t x, int64_t hk, int64_t nk, int64_t nv, int64_t nst, int64_t ns) {
    int32_t r = gm_reshape_4d(g, x, hk, 1, nk, nst * ns);
    r = gm_repeat_4d(g, r, hk, nv / nk, nk, nst * ns);
    return gm_reshape_4d(g, r, hk, nv, nst, ns);
}

/* build_recurrent_attn, n_rs_seq 0, with build_delta_net_fused
 * (delta-net-base.cpp:497-540, :335-378): the output view; the new state
 * copied into the memory */
static int32_t recurrent_attn(gm_llm *l, int32_t q, int32_t k, int32_t v, int32_t gate, int32_t beta, int32_t state,
                              int il) {
    gm_graph *g = l->g;
    const int64_t hv = g->t[v].ne[0], nv = g->t[v].ne[1], nst = g->t[v].ne[2], ns = g->t[v].ne[3];
    const int32_t srcs[6] = { q, k, v, gate, beta, state };
    int32_t result = gm_op_shaped(g, GM_OP_GATED_DELTA_NET, T_F32, 2, (int64_t[4]){ hv * nv, nst * ns + hv * ns }, srcs, 6);
    int32_t output = gm_view_4d(g, result, hv, nv, nst, ns, f32s(hv), f32s(hv * nv), f32s(hv * nv * nst), 0);
    int32_t new_state = gm_view_4d(g, result, hv, hv, nv, ns, f32s(hv), f32s(hv * hv), f32s(hv * hv * nv),
                                   f32s(hv * nv * nst * ns));
    const int32_t s_all = l->rs_s[il];
    const int64_t n_embd_s = gm_n_embd_s(l->hp);
    gm_expand(g, gm_cpy(g, new_state, gm_view_2d(g, s_all, n_embd_s, ns, g->t[s_all].nb[1], 0)));
    return output;
}

int32_t gm_build_gdn(gm_llm *l, const gm_rs_inp *inp, int32_t conv_input, int32_t z, int32_t beta, int32_t gate,
                     int il, gm_gdn_repeat repeat) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens;
    const int64_t hk = hp->ssm_d_state, nk = hp->ssm_n_group, nv = hp->ssm_dt_rank, hv = hp->ssm_d_inner / nv;
    const int64_t channels = hk * nk * 2 + hv * nv;
    int32_t state = gm_build_rs(l, inp, l->rs_s[il], gm_n_embd_s(hp));
    state = gm_reshape_4d(g, state, hv, hv, nv, ns);
    const int32_t conv_w = gm_w(l, "blk.%d.ssm_conv1d.weight", il);
    const int64_t n_t = g->t[conv_input].ne[0] - g->t[conv_w].ne[0] + 1;
    int32_t conv = gm_op_shaped(g, GM_OP_SSM_CONV, T_F32, 3, (int64_t[4]){ g->t[conv_w].ne[1], n_t, g->t[conv_input].ne[2] },
                                (int32_t[2]){ conv_input, conv_w }, 2);
    conv = gm_unary(g, GM_OP_UNARY, conv);
    const uint64_t nb1 = f32s(channels);
    int32_t q = gm_view_4d(g, conv, hk, nk, nst, ns, f32s(hk), nb1, nb1 * (uint64_t)nst, 0);
    int32_t k = gm_view_4d(g, conv, hk, nk, nst, ns, f32s(hk), nb1, nb1 * (uint64_t)nst, f32s(hk * nk));
    int32_t v = gm_view_4d(g, conv, hv, nv, nst, ns, f32s(hv), nb1, nb1 * (uint64_t)nst, f32s(2 * hk * nk));
    q = gdn_l2_norm(g, q);
    k = gdn_l2_norm(g, k);
    if (repeat == GM_GDN_REPEAT_INTERLEAVE && nk != nv) {
        q = repeat_interleave(g, q, hk, nk, nv, nst, ns);
        k = repeat_interleave(g, k, hk, nk, nv, nst, ns);
    }
    int32_t output = recurrent_attn(l, q, k, v, gate, beta, state, il);
    int32_t z2 = gm_reshape_4d(g, z, hv, nv, nst, ns);
    int32_t norm = gm_build_norm_rms(l, output, gm_w(l, "blk.%d.ssm_norm.weight", il), il);
    int32_t out = gm_binary(g, GM_OP_MUL, norm, gm_unary(g, GM_OP_UNARY, z2));
    out = gm_reshape_3d(g, out, hv * nv, nst, ns);
    out = gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_out.weight", il), out);
    return gm_reshape_2d(g, out, hp->n_embd, nst * ns);
}

/* ------------------------------------------------------------------------ */
/* Routed experts with a sigmoid-gated shared expert                         */
/* ------------------------------------------------------------------------ */

int32_t gm_build_moe_shexp_gated(gm_llm *l, int32_t cur, int il) {
    gm_graph *g = l->g;
    int32_t moe = gm_build_moe_ffn(l, cur, gm_w(l, "blk.%d.ffn_gate_inp.weight", il), gm_w(l, "blk.%d.ffn_up_exps.weight", il),
                                   gm_w(l, "blk.%d.ffn_gate_exps.weight", il), gm_w(l, "blk.%d.ffn_down_exps.weight", il),
                                   l->hp->n_expert, l->hp->n_expert_used, true);
    int32_t up = gm_w(l, "blk.%d.ffn_up_shexp.weight", il);
    if (up == GM_NONE) return moe;
    int32_t sh = gm_build_ffn(l, cur, up, gm_w(l, "blk.%d.ffn_gate_shexp.weight", il),
                              gm_w(l, "blk.%d.ffn_down_shexp.weight", il), false);
    int32_t sg = gm_unary(g, GM_OP_UNARY, gm_build_lora_mm(l, gm_w(l, "blk.%d.ffn_gate_inp_shexp.weight", il), cur));
    return gm_binary(g, GM_OP_ADD, moe, gm_binary(g, GM_OP_MUL, sh, sg));
}

/*
 * fit_arch_qwen35.c - the graphs of the Qwen3.5/3.6 family and Qwen3-Next
 * (src/models/qwen35.cpp, qwen35moe.cpp, qwen3next.cpp): gated delta-net
 * layers and, every full_attention_interval-th layer, a gated attention
 * whose query projection carries its gate; after each, a post-attention
 * norm and a dense SwiGLU FFN (qwen35) or routed experts with a
 * sigmoid-gated shared expert (qwen35moe, qwen3next).
 *
 * The three differ in small ways, kept as data in a variant: qwen3next's
 * attention splits the query as 4-D views and conts its gate after the
 * attention, its delta net reads one fused ssm_in projection (or the
 * attn_qkv/attn_gate pair) and a fused beta/alpha one, and repeats q and k
 * to the value heads; qwen35* reads separate projections and lets the fused
 * GATED_DELTA_NET broadcast.  The MTP blocks are loaded but not run by the
 * trunk graph (the MTP draft graph is separate).
 */
#include "fit_arch_recurrent.h"
#include "fit_block_rs.h"

/* bytes of n f32 values (the activations here are all f32) */
static uint64_t f32s(int64_t n) { return (uint64_t)n * 4u; }

typedef struct q35 {
    gm_llm *l;
    bool next;            /* qwen3next's variant */
    bool q_4d;            /* the query and gate split as 4-D views of a reshape (qwen3next's trunk) */
    gm_rs_inp rs;
    gm_attn_inp attn;
} q35;

/* ------------------------------------------------------------------------ */
/* Gated attention                                                           */
/* ------------------------------------------------------------------------ */

/* build_qkv with reshape = false (llama-graph.cpp:1633-1745): the fused
 * attn_qkv as three contiguous copies, or the separate projections with
 * their biases, all [width, n_tokens] */
static void qkv_flat(gm_llm *l, int il, int32_t cur, int64_t n_q, int64_t n_k, int32_t *q, int32_t *k, int32_t *v) {
    static const char *const w_names[3] = { "blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight" };
    static const char *const b_names[3] = { "blk.%d.attn_q.bias", "blk.%d.attn_k.bias", "blk.%d.attn_v.bias" };
    gm_graph *g = l->g;
    int32_t *out[3] = { q, k, v };
    const int32_t wqkv = gm_w(l, "blk.%d.attn_qkv.weight", il);
    if (wqkv != GM_NONE) {
        int32_t qkv = gm_build_lora_mm(l, wqkv, cur);
        const int32_t bias = gm_w(l, "blk.%d.attn_qkv.bias", il);
        if (bias != GM_NONE) qkv = gm_binary(g, GM_OP_ADD, qkv, bias);
        const int64_t n = g->t[qkv].ne[1], n_v = g->t[qkv].ne[0] - n_q - n_k;
        const uint64_t nb1 = g->t[qkv].nb[1];
        *q = gm_cont(g, gm_view_2d(g, qkv, n_q, n, nb1, 0));
        *k = gm_cont(g, gm_view_2d(g, qkv, n_k, n, nb1, f32s(n_q)));
        *v = gm_cont(g, gm_view_2d(g, qkv, n_v, n, nb1, f32s(n_q + n_k)));
        return;
    }
    for (int i = 0; i < 3; i++) {
        *out[i] = gm_build_lora_mm(l, gm_w(l, w_names[i], il), cur);
        const int32_t bias = gm_w(l, b_names[i], il);
        if (bias != GM_NONE) *out[i] = gm_binary(g, GM_OP_ADD, *out[i], bias);
    }
}

/* build_layer_attn (qwen35.cpp:233-316, qwen3next.cpp:176-250) */
static int32_t attention(q35 *c, int32_t cur, int32_t pos, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->head_v_full, n_head = hp->n_head[0], n_head_kv = hp->n_head_kv[0], n = l->ub.n_tokens;
    int32_t q_full, k, v;
    qkv_flat(l, il, cur, head * 2 * n_head, head * n_head_kv, &q_full, &k, &v);
    int32_t q, gate;
    if (c->q_4d) {
        q_full = gm_reshape_4d(g, q_full, head * 2, n_head, n, 1);
        const gm_tensor *f = &g->t[q_full];
        q = gm_view_4d(g, q_full, head, n_head, n, 1, f->nb[1], f->nb[2], f->nb[3], 0);
        gate = gm_view_4d(g, q_full, head, n_head, n, 1, f->nb[1], f->nb[2], f->nb[3], f32s(head));
    } else {
        q = gm_view_3d(g, q_full, head, n_head, n, f32s(head * 2), f32s(head * 2 * n_head), 0);
        gate = gm_view_3d(g, q_full, head, n_head, n, f32s(head * 2), f32s(head * 2 * n_head), f32s(head));
    }
    k = gm_reshape_3d(g, k, head, n_head_kv, n);
    v = gm_reshape_3d(g, v, head, n_head_kv, n);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    q = gm_rope(g, q, pos, GM_NONE);
    k = gm_rope(g, k, pos, GM_NONE);
    cur = gm_build_attn(l, &c->attn, GM_NONE, q, k, v, il, false);
    gate = gm_cont_2d(g, gate, head * n_head, n);
    cur = gm_binary(g, GM_OP_MUL, cur, gm_unary(g, GM_OP_UNARY, gate));
    return gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_output.weight", il), cur);
}

/* ------------------------------------------------------------------------ */
/* Gated delta net                                                           */
/* ------------------------------------------------------------------------ */

/* qwen3next's legacy build_qkvz (qwen3next.cpp:263-320): one ssm_in
 * projection split per key head into q, k, v and z */
static int32_t qkvz_legacy(q35 *c, int32_t cur, int il, int32_t *z) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens;
    const int64_t hk = hp->ssm_d_state, nk = hp->ssm_n_group, nv = hp->ssm_dt_rank, hv = gm_div(g, hp->ssm_d_inner, nv);
    const int64_t vz = gm_div(g, hv * nv, nk);
    int32_t mixed = gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_in.weight", il), cur);
    mixed = gm_reshape_4d(g, mixed, 2 * hk + 2 * vz, nk, nst, ns);
    const gm_tensor *m = &g->t[mixed];
    const uint64_t nb1 = m->nb[1], nb2 = m->nb[2], nb3 = m->nb[3];
    int32_t query = gm_view_4d(g, mixed, hk, nk, nst, ns, nb1, nb2, nb3, 0);
    int32_t key = gm_view_4d(g, mixed, hk, nk, nst, ns, nb1, nb2, nb3, f32s(hk));
    int32_t value = gm_view_4d(g, mixed, vz, nk, nst, ns, nb1, nb2, nb3, f32s(2 * hk));
    *z = gm_cont(g, gm_view_4d(g, mixed, vz, nk, nst, ns, nb1, nb2, nb3, f32s(2 * hk + vz)));
    int32_t qkv = gm_concat(g, gm_cont_4d(g, query, hk * nk, nst, ns, 1), gm_cont_4d(g, key, hk * nk, nst, ns, 1), 0);
    return gm_concat(g, qkv, gm_cont_4d(g, value, hv * nv, nst, ns, 1), 0);
}

/* beta and gate [1, n_v_heads, n_seq_tokens, n_seqs] from qwen3next's
 * fused ssm_ba (qwen3next.cpp:337-372) */
static void beta_gate_fused(q35 *c, int32_t cur, int il, int32_t *beta, int32_t *gate) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens, nk = hp->ssm_n_group, nv = hp->ssm_dt_rank;
    int32_t ba = gm_build_lora_mm(l, gm_w(l, "blk.%d.ssm_ba.weight", il), cur);
    ba = gm_reshape_4d(g, ba, gm_div(g, 2 * nv, nk), nk, nst, ns);
    const gm_tensor *t = &g->t[ba];
    int32_t b = gm_view_4d(g, ba, gm_div(g, nv, nk), nk, nst, ns, t->nb[1], t->nb[2], t->nb[3], 0);
    int32_t a = gm_view_4d(g, ba, gm_div(g, nv, nk), nk, nst, ns, t->nb[1], t->nb[2], t->nb[3], f32s(gm_div(g, nv, nk)));
    *beta = gm_unary(g, GM_OP_UNARY, gm_cont(g, b));
    int32_t alpha = gm_cont_4d(g, a, nv, nst, ns, 1);
    alpha = gm_unary(g, GM_OP_UNARY, gm_binary(g, GM_OP_ADD, alpha, gm_w(l, "blk.%d.ssm_dt.bias", il)));
    *gate = gm_binary(g, GM_OP_MUL, alpha, gm_w(l, "blk.%d.ssm_a", il));
    *beta = gm_reshape_4d(g, *beta, 1, nv, nst, ns);
    *gate = gm_reshape_4d(g, *gate, 1, nv, nst, ns);
}

/* build_layer_attn_linear (qwen35.cpp:318-470, qwen3next.cpp:322-490) */
static int32_t linear_attention(q35 *c, int32_t cur, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t ns = l->ub.n_seqs, nst = l->ub.n_seq_tokens;
    int32_t qkv, z;
    if (c->next && gm_w(l, "blk.%d.attn_qkv.weight", il) == GM_NONE) {
        qkv = qkvz_legacy(c, cur, il, &z);
    } else {
        qkv = gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_qkv.weight", il), cur);
        qkv = gm_reshape_3d(g, qkv, g->t[qkv].ne[0], nst, ns);
        z = gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_gate.weight", il), cur);
    }
    int32_t beta, gate;
    if (c->next) beta_gate_fused(c, cur, il, &beta, &gate);
    else gm_build_gdn_beta_gate(l, cur, il, &beta, &gate);
    const int32_t conv_w = gm_w(l, "blk.%d.ssm_conv1d.weight", il);
    const int64_t channels = hp->ssm_d_inner + 2 * (int64_t)hp->ssm_n_group * hp->ssm_d_state;
    int32_t input = gm_build_conv_state(l, &c->rs, l->rs_r[il], qkv, g->t[conv_w].ne[0], channels);
    return gm_build_gdn(l, &c->rs, input, z, beta, gate, il, c->next ? GM_GDN_REPEAT_INTERLEAVE : GM_GDN_REPEAT_NONE);
}

/* ------------------------------------------------------------------------ */
/* The graph                                                                 */
/* ------------------------------------------------------------------------ */

/* build_layer_ffn: experts plus the gated shared expert where the layer
 * routes, else the dense SwiGLU FFN */
static int32_t ffn(q35 *c, int32_t cur, int il) {
    gm_llm *l = c->l;
    if (gm_w(l, "blk.%d.ffn_gate_inp.weight", il) != GM_NONE) return gm_build_moe_shexp_gated(l, cur, il);
    return gm_build_ffn(l, cur, gm_w(l, "blk.%d.ffn_up.weight", il), gm_w(l, "blk.%d.ffn_gate.weight", il),
                        gm_w(l, "blk.%d.ffn_down.weight", il), false);
}

/* llama_model_qwen35::graph (qwen35.cpp:120-231) and its kin */
static void qwen35_graph(gm_llm *l, bool next) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    q35 c = { .l = l, .next = next, .q_4d = next };
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    gm_inp_mem_hybrid(l, &c.rs, &c.attn);
    int32_t pos = gm_inp_pos(l);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        gm_expand(g, cur);
        cur = hp->is_recr[il] ? linear_attention(&c, cur, il) : attention(&c, cur, pos, il);
        int32_t residual = gm_binary(g, GM_OP_ADD, cur, inpL);
        cur = gm_build_norm_rms(l, residual, gm_w(l, "blk.%d.post_attention_norm.weight", il), il);
        cur = ffn(&c, cur, il);
        inpL = gm_binary(g, GM_OP_ADD, cur, residual);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_set_output(g, cur); /* t_h_nextn: the post-norm hidden state for MTP drafts */
    cur = gm_get_rows(g, cur, out_ids);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

void gm_arch_qwen35(gm_llm *l) { qwen35_graph(l, false); }

void gm_arch_qwen3next(gm_llm *l) { qwen35_graph(l, true); }

/* ------------------------------------------------------------------------ */
/* The MTP draft graph                                                       */
/* ------------------------------------------------------------------------ */

/* llama_model_qwen35::graph_mtp (qwen35.cpp:505-644), qwen35moe's
 * (qwen35moe.cpp:548-741) and qwen3next's: the MTP block over the token rows
 * and the target's hidden states, one gated attention layer over the MTP
 * cache, the block's FFN, the shared head.  qwen3next keeps the output rows
 * before the attention residual, qwen35* after the head norm. */
static void qwen35_mtp_graph(gm_llm *l, bool next) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int il = (int)hp->n_layer;
    q35 c = { .l = l, .next = next };
    int32_t pos = gm_inp_pos(l);
    int32_t out_ids = gm_inp_out_ids(l);
    gm_attn_inp_kv(l, &l->kv, &c.attn);
    int32_t cur = gm_build_mtp_eh_proj(l, il);
    int32_t inpSA = cur;
    cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    cur = attention(&c, cur, pos, il);
    if (next) {
        cur = gm_get_rows(g, cur, out_ids);
        inpSA = gm_get_rows(g, inpSA, out_ids);
    }
    int32_t residual = gm_binary(g, GM_OP_ADD, cur, inpSA);
    cur = gm_build_norm_rms(l, residual, gm_w(l, "blk.%d.post_attention_norm.weight", il), il);
    cur = ffn(&c, cur, il);
    cur = gm_binary(g, GM_OP_ADD, cur, residual);
    int32_t head_norm = gm_w(l, "blk.%d.nextn.shared_head_norm.weight", il);
    if (head_norm == GM_NONE) head_norm = gm_w(l, "output_norm.weight", 0);
    cur = gm_build_norm_rms(l, cur, head_norm, -1);
    gm_set_output(g, cur); /* t_h_nextn */
    if (!next) cur = gm_get_rows(g, cur, out_ids);
    int32_t head_w = gm_w(l, "blk.%d.nextn.shared_head_head.weight", il);
    cur = gm_build_lora_mm(l, head_w != GM_NONE ? head_w : gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

void gm_arch_qwen35_mtp(gm_llm *l) { qwen35_mtp_graph(l, false); }

void gm_arch_qwen3next_mtp(gm_llm *l) { qwen35_mtp_graph(l, true); }

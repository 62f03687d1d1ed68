/*
 * fit_arch_mla.c - the graphs of the DeepSeek-style decoders with
 * multi-head latent attention: deepseek2 (src/models/deepseek2.cpp) and the
 * DSA architectures, deepseek32 and glm-dsa (deepseek32.cpp, glm-dsa.cpp),
 * whose lightning indexer picks the cells each query attends.  The dense
 * lead and the routed experts with the shared expert follow
 * (fit_block_moe.c's gm_build_layer_ffn).
 */
#include "fit_block_moe.h"

/* q through the low-rank pair (wq_a, its norm, wq_b), or one wq on the lite models */
static int32_t mla_q(gm_llm *l, int32_t cur, int il) {
    gm_graph *g = l->g;
    const int32_t wq_a = gm_w(l, "blk.%d.attn_q_a.weight", il);
    if (wq_a == GM_NONE) return gm_mul_mat(g, gm_w(l, "blk.%d.attn_q.weight", il), cur);
    int32_t q = gm_mul_mat(g, wq_a, cur);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_a_norm.weight", il), il);
    return gm_mul_mat(g, gm_w(l, "blk.%d.attn_q_b.weight", il), q);
}

/* deepseek2.cpp:484-600: MLA absorbed over a cache of keys only, or (no
 * key_length_mla) K and V decompressed by wkv_b per head */
static int32_t deepseek2_attention(gm_llm *l, const gm_attn_inp *inp, int32_t cur, int32_t pos, int32_t attn_scale,
                                   int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n = l->ub.n_tokens, n_head = hp->n_head[il], rope = hp->n_rot_full;
    const int64_t nope = hp->head_k_mla - rope, head_v = hp->head_v_mla;
    int32_t q = gm_reshape_3d(g, mla_q(l, cur, il), hp->head_k_mla, n_head, n);
    int32_t kv_cmpr, k_pe, Q, K, V;
    gm_mla_kv(l, cur, pos, il, &kv_cmpr, &k_pe);
    const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il), .wo_b = GM_NONE, .kq_b = GM_NONE,
                             .sinks = GM_NONE };
    int32_t v_mla = GM_NONE;
    if (hp->is_mla) {
        int32_t q_nope, q_pe;
        gm_mla_split_q(l, q, &q_nope, &q_pe);
        gm_mla_absorb(l, q_nope, q_pe, kv_cmpr, k_pe, pos, il, &Q, &K, &V);
        v_mla = gm_w(l, "blk.%d.attn_v_b.weight", il);
    } else {
        int32_t kv = gm_mul_mat(g, gm_w(l, "blk.%d.attn_kv_b.weight", il), kv_cmpr);
        const uint64_t rs = (uint64_t)(nope + head_v) * g->t[kv].nb[0];
        int32_t k_nope = gm_view_3d(g, kv, nope, n_head, n, rs, rs * (uint64_t)n_head, 0);
        V = gm_cont(g, gm_view_3d(g, kv, head_v, n_head, n, rs, rs * (uint64_t)n_head, (uint64_t)nope * g->t[kv].nb[0]));
        Q = gm_rope(g, q, pos, GM_NONE);
        K = gm_concat(g, k_nope, gm_repeat_4d(g, k_pe, rope, n_head, n, 1), 0);
    }
    if (attn_scale != GM_NONE) Q = gm_binary(g, GM_OP_MUL, Q, attn_scale);
    return gm_build_attn_mla(l, inp, &o, Q, K, V, v_mla, il);
}

/* the trunk's end: output norm (t_h_nextn), the head */
static void mla_head(gm_llm *l, int32_t inpL) {
    gm_graph *g = l->g;
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_set_output(g, cur); /* t_h_nextn */
    l->t_embd = cur;
    cur = gm_mul_mat(g, gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

void gm_arch_deepseek2(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t attn_scale = GM_NONE;
    if (hp->f_attn_temp_scale != 0.0f) {
        attn_scale = gm_new_3d(g, 0, 1, 1, l->ub.n_tokens);
        gm_set_input(g, attn_scale);
    }
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    if (hp->is_mla) gm_attn_inp_k(l, &l->kv, &inp);
    else gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        cur = deepseek2_attention(l, &inp, cur, pos, attn_scale, il);
        inpL = gm_build_ffn_residual(l, cur, inpL, il == (int)hp->n_layer - 1 ? out_ids : GM_NONE,
                                     "blk.%d.ffn_norm.weight", NULL, il);
    }
    mla_head(l, inpL);
}

/* MLA absorbed from the flat q (the DSA graphs and every MTP block): q's
 * views, the compressed KV, the absorbed Q, K, V, attention over a cache of
 * keys only (dsa: with its mask opened on top_k's cells) */
static int32_t mla_flat_q(gm_llm *l, const gm_attn_inp *inp, const gm_dsa_inp *dsa, int32_t top_k, int32_t q,
                          int32_t cur, int32_t pos, int il) {
    int32_t q_nope, q_pe, kv_cmpr, k_pe, Q, K, V;
    gm_mla_split_q(l, q, &q_nope, &q_pe);
    gm_mla_kv(l, cur, pos, il, &kv_cmpr, &k_pe);
    gm_mla_absorb(l, q_nope, q_pe, kv_cmpr, k_pe, pos, il, &Q, &K, &V);
    const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il), .wo_b = GM_NONE, .kq_b = GM_NONE,
                             .sinks = GM_NONE };
    const int32_t v_mla = gm_w(l, "blk.%d.attn_v_b.weight", il);
    return dsa ? gm_dsa_attn(l, dsa, &o, Q, K, V, v_mla, top_k, il) : gm_build_attn_mla(l, inp, &o, Q, K, V, v_mla, il);
}

/* deepseek32.cpp / glm-dsa.cpp: the indexer on qr and the layer input, then
 * MLA over the cells it picked; glm-dsa's shared-indexer layers reuse the
 * previous full layer's top-k */
void gm_arch_dsa(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    if (!gm_assert(l, hp->is_mla, "is_mla") ||
        !gm_assert(l, hp->n_rot_full <= hp->indexer_head_size, "hparams.n_rot() <= n_embd_indexer_head") ||
        !gm_assert(l, hp->is_indexer_full[0], "prev_top_k != nullptr && \"shared indexer layer must follow a previous "
                   "full indexer layer\""))
        return;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_dsa_inp inp;
    gm_dsa_inputs(l, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    int32_t top_k = GM_NONE;
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        int32_t qr = gm_mul_mat(g, gm_w(l, "blk.%d.attn_q_a.weight", il), cur);
        qr = gm_build_norm_rms(l, qr, gm_w(l, "blk.%d.attn_q_a_norm.weight", il), il);
        if (hp->is_indexer_full[il]) top_k = gm_dsa_top_k(l, &inp, qr, cur, pos, il);
        int32_t q = gm_mul_mat(g, gm_w(l, "blk.%d.attn_q_b.weight", il), qr);
        cur = mla_flat_q(l, NULL, &inp, top_k, q, cur, pos, il);
        inpL = gm_build_ffn_residual(l, cur, inpL, il == (int)hp->n_layer - 1 ? out_ids : GM_NONE,
                                     "blk.%d.ffn_norm.weight", NULL, il);
    }
    mla_head(l, inpL);
}

/* the MTP block of deepseek2, deepseek32 and glm-dsa (graph_mtp in each):
 * the NextN input, MLA absorbed over the draft's cache of keys only (q
 * viewed from the flat projection, no indexer), the routed and shared
 * experts, the NextN head */
void gm_arch_mla_mtp(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int il = (int)hp->n_layer;
    if (!gm_assert(l, hp->is_mla, "hparams.is_mla() && \"MTP requires MLA\"")) return;
    int32_t inpSA = gm_build_mtp_eh_proj(l, il);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp inp;
    gm_attn_inp_k(l, &l->kv, &inp);
    int32_t cur = gm_build_norm_rms(l, inpSA, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    cur = mla_flat_q(l, &inp, NULL, GM_NONE, mla_q(l, cur, il), cur, pos, il);
    cur = gm_build_ffn_residual(l, cur, inpSA, GM_NONE, "blk.%d.ffn_norm.weight", NULL, il);
    gm_expand(g, gm_mtp_head(l, cur, il, out_ids, true, false));
}

/* deepseek2.cpp's graph_mtp asserts more: no attention temperature, a MoE
 * layer, q through the low-rank pair, a no-rope part of the head */
void gm_arch_deepseek2_mtp(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    if (gm_assert(l, hp->f_attn_temp_scale == 0.0f,
                  "hparams.f_attn_temp_scale == 0.0f && \"GLM4 MTP does not support attention temperature scaling\"") &&
        gm_assert(l, hp->n_layer >= hp->n_layer_dense_lead, "(uint32_t) il >= hparams.n_layer_dense_lead") &&
        gm_assert(l, hp->head_k_mla > hp->n_rot_full, "n_embd_head_qk_nope >= 1") &&
        gm_assert(l, hp->n_lora_q > 0, "hparams.n_lora_q > 0"))
        gm_arch_mla_mtp(l);
}

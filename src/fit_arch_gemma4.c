/*
 * fit_arch_gemma4.c - the graph of gemma4 (src/models/gemma4.cpp):
 * sliding-window and full layers over two caches, layers that read an
 * earlier layer's cache, per-layer input embeddings, soft-capped logits.
 */
#include "fit_llm.h"

/* build_inp_per_layer and project_per_layer_inputs (gemma4.cpp:431-498,
 * gemma3n.cpp:333-380, the same ops): [ple, n_tokens, n_layer] */
int32_t gm_per_layer_inputs(gm_llm *l, int32_t inpL, int64_t ple) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n = l->ub.n_tokens, L = hp->n_layer;
    int32_t tokens = gm_new_1d(g, 26, n);
    gm_set_input(g, tokens);
    int32_t inp = gm_get_rows(g, gm_w(l, "per_layer_token_embd.weight", 0), tokens);
    inp = gm_reshape_3d(g, inp, ple, L, n);
    inp = gm_unary(g, GM_OP_SCALE, inp);
    gm_expand(g, inp);
    int32_t proj = gm_mul_mat(g, gm_w(l, "per_layer_model_proj.weight", 0), inpL);
    proj = gm_unary(g, GM_OP_SCALE, proj);
    proj = gm_reshape_3d(g, proj, ple, L, n);
    proj = gm_build_norm_rms(l, proj, gm_w(l, "per_layer_proj_norm.weight", 0), -1);
    inp = gm_binary(g, GM_OP_ADD, proj, inp);
    inp = gm_unary(g, GM_OP_SCALE, inp);
    return gm_cont(g, gm_permute(g, inp, 0, 2, 1, 3));
}

/* one layer's attention (gemma4.cpp:186-281) */
static int32_t attention(gm_llm *l, const gm_attn_inp *base, const gm_attn_inp *swa, int32_t cur, int32_t pos,
                         int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = gm_head_k(hp, (uint32_t)il), n_head = hp->n_head[il], n_head_kv = hp->n_head_kv[il];
    const int64_t n = l->ub.n_tokens;
    const int32_t freq = hp->is_swa[il] ? GM_NONE : gm_w_layer(l, "rope_freqs.weight", il); /* the copy in the layer's context */
    int32_t q = gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_q.weight", il), cur);
    q = gm_reshape_3d(g, q, head, n_head, n);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    q = gm_rope(g, q, pos, freq);
    int32_t k = GM_NONE, v = GM_NONE;
    if (gm_has_kv(hp, (uint32_t)il)) {
        k = gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_k.weight", il), cur);
        int32_t wv = gm_w(l, "blk.%d.attn_v.weight", il);
        v = wv != GM_NONE ? gm_build_lora_mm(l, wv, cur) : k;
        k = gm_reshape_3d(g, k, head, n_head_kv, n);
        v = gm_reshape_3d(g, v, head, n_head_kv, n);
        k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
        v = gm_unary(g, GM_OP_RMS_NORM, v);
        k = gm_rope(g, k, pos, freq);
    }
    return gm_build_attn_ex(l, hp->is_swa[il] ? swa : base, gm_w(l, "blk.%d.attn_output.weight", il), q, k, v, il,
                            false, true);
}

/* the per-layer embedding residual (gemma4.cpp:366-386) */
static int32_t per_layer_embedding(gm_llm *l, int32_t cur, int32_t inp_per_layer, int il) {
    gm_graph *g = l->g;
    const gm_tensor *x = &g->t[inp_per_layer];
    int32_t pe_in = cur;
    cur = gm_build_lora_mm(l, gm_w(l, "blk.%d.inp_gate.weight", il), cur);
    cur = gm_unary(g, GM_OP_UNARY, cur);
    int32_t slice = gm_view_2d(g, inp_per_layer, x->ne[0], x->ne[1], x->nb[1], (uint64_t)il * x->nb[2]);
    cur = gm_binary(g, GM_OP_MUL, cur, slice);
    cur = gm_build_lora_mm(l, gm_w(l, "blk.%d.proj.weight", il), cur);
    cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.post_norm.weight", il), il);
    return gm_binary(g, GM_OP_ADD, pe_in, cur);
}

/* llama_model_gemma4::graph (gemma4.cpp:154-430), dense FFN layers */
void gm_arch_gemma4(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    inpL = gm_unary(g, GM_OP_SCALE, inpL);
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    int32_t out_ids = gm_inp_out_ids(l);
    int32_t inp_per_layer = GM_NONE;
    if (gm_w(l, "per_layer_token_embd.weight", 0) != GM_NONE) inp_per_layer = gm_per_layer_inputs(l, inpL, hp->n_embd_per_layer);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        cur = attention(l, &base, &swa, cur, pos, il);
        cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.post_attention_norm.weight", il), il);
        int32_t attn_out = gm_binary(g, GM_OP_ADD, cur, inpL);
        cur = gm_build_norm_rms(l, attn_out, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        cur = gm_build_ffn(l, cur, gm_w(l, "blk.%d.ffn_up.weight", il), gm_w(l, "blk.%d.ffn_gate.weight", il),
                           gm_w(l, "blk.%d.ffn_down.weight", il), true);
        cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.post_ffw_norm.weight", il), -1);
        cur = gm_binary(g, GM_OP_ADD, cur, attn_out);
        if (inp_per_layer != GM_NONE) cur = per_layer_embedding(l, cur, inp_per_layer, il);
        int32_t scale = gm_w(l, "blk.%d.layer_output_scale.weight", il);
        if (scale != GM_NONE) cur = gm_binary(g, GM_OP_MUL, cur, scale);
        inpL = cur;
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_set_output(g, cur); /* t_h_nextn: the post-norm hidden state for MTP drafts */
    cur = gm_get_rows(g, cur, out_ids);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    if (hp->final_logit_softcapping != 0.0f) {
        cur = gm_unary(g, GM_OP_SCALE, cur);
        cur = gm_unary(g, GM_OP_UNARY, cur);
        cur = gm_unary(g, GM_OP_SCALE, cur);
    }
    l->t_logits = cur;
    gm_expand(g, cur);
}

/*
 * fit_arch_lfm2.c - the graph of lfm2 (src/models/lfm2.cpp, causal, one
 * attention cache): short-convolution layers where a layer has no KV
 * heads, attention with q/k norms elsewhere, a SwiGLU FFN after each; the
 * logits only without embeddings.
 */
#include "fit_arch_recurrent.h"
#include "fit_block_rs.h"

/* build_attn_block (lfm2.cpp:130-156) */
static int32_t attention(gm_llm *l, const gm_attn_inp *inp, int32_t cur, int32_t pos, int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t q, k, v;
    gm_build_qkv(l, il, cur, hp->head_k_full, hp->n_head[0], hp->n_head_kv[il], hp->head_v_full, &q, &k, &v);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    q = gm_rope(g, q, pos, GM_NONE);
    k = gm_rope(g, k, pos, GM_NONE);
    return gm_build_attn(l, inp, gm_w(l, "blk.%d.attn_output.weight", il), q, k, v, il, false);
}

/* llama_model_lfm2::graph<false> (lfm2.cpp:234-292) */
void gm_arch_lfm2(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    gm_rs_inp rs;
    gm_attn_inp attn;
    int32_t cur = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    gm_inp_mem_hybrid(l, &rs, &attn);
    int32_t pos = gm_inp_pos(l);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t prev = cur;
        cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        cur = hp->is_recr[il] ? gm_build_shortconv(l, &rs, cur, il) : attention(l, &attn, cur, pos, il);
        if (il == (int)hp->n_layer - 1) {
            cur = gm_get_rows(g, cur, out_ids);
            prev = gm_get_rows(g, prev, out_ids);
        }
        cur = gm_binary(g, GM_OP_ADD, prev, cur);
        int32_t ffn = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        ffn = gm_build_ffn(l, ffn, gm_w(l, "blk.%d.ffn_up.weight", il), gm_w(l, "blk.%d.ffn_gate.weight", il),
                           gm_w(l, "blk.%d.ffn_down.weight", il), false);
        cur = gm_binary(g, GM_OP_ADD, cur, ffn);
    }
    cur = gm_build_norm_rms(l, cur, gm_w(l, "token_embd_norm.weight", 0), -1);
    l->t_embd = cur;
    if (!l->cp->embeddings) {
        cur = gm_build_lora_mm(l, gm_w_output(l), cur);
        l->t_logits = cur;
    }
    gm_expand(g, cur);
}

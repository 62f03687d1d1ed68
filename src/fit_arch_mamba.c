/*
 * fit_arch_mamba.c - the graphs of the Mamba-2 family: mamba2
 * (src/models/mamba.cpp), the hybrids nemotron_h and nemotron_h_moe
 * (nemotron-h.cpp: every layer one of a Mamba-2 mixer, an attention or an
 * FFN), granitehybrid (granite-hybrid.cpp: Mamba-2 or attention, then an
 * FFN) and falcon-h1 (falcon-h1.cpp: attention and a Mamba-2 mixer side by
 * side in every layer, then an FFN), over fit_block_rs.c's Mamba-2 layer.
 */
#include "fit_arch_recurrent.h"
#include "fit_block_ffn.h"
#include "fit_block_rs.h"

/* build_attn with the layer's wo and its bias (llama-graph.cpp:2851-2930) */
static int32_t attn_out(gm_llm *l, const gm_attn_inp *inp, int32_t q, int32_t k, int32_t v, int il) {
    int32_t cur = gm_build_attn(l, inp, gm_w(l, "blk.%d.attn_output.weight", il), q, k, v, il, false);
    const int32_t wo_b = gm_w(l, "blk.%d.attn_output.bias", il);
    return wo_b == GM_NONE ? cur : gm_binary(l->g, GM_OP_ADD, cur, wo_b);
}

/* build_qkv with the layer's head counts, reshaped */
static void qkv(gm_llm *l, int32_t cur, int il, int32_t *q, int32_t *k, int32_t *v) {
    const gm_hparams *hp = l->hp;
    gm_build_qkv(l, il, cur, hp->head_k_full, hp->n_head[il], hp->n_head_kv[il], hp->head_v_full, q, k, v);
}

/* the output head: norm, the hidden state kept for MTP drafts where the
 * architecture has them, the output rows, the projection */
static void head(gm_llm *l, int32_t cur, int32_t out_ids, const char *norm_name) {
    gm_graph *g = l->g;
    cur = gm_build_norm_rms(l, cur, gm_w(l, norm_name, 0), -1);
    if (out_ids != GM_NONE) {
        gm_set_output(g, cur); /* t_h_nextn */
        cur = gm_get_rows(g, cur, out_ids);
    }
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

/* ------------------------------------------------------------------------ */
/* mamba2                                                                    */
/* ------------------------------------------------------------------------ */

/* llama_model_mamba::graph (mamba.cpp:88-137) for Mamba-2 layers */
void gm_arch_mamba2(gm_llm *l) {
    gm_graph *g = l->g;
    gm_rs_inp rs;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    gm_rs_inp_build(l, &rs);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)l->hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        cur = gm_build_mamba2_layer(l, &rs, cur, il);
        if (il == (int)l->hp->n_layer - 1) {
            cur = gm_get_rows(g, cur, out_ids);
            inpL = gm_get_rows(g, inpL, out_ids);
        }
        inpL = gm_binary(g, GM_OP_ADD, cur, inpL);
    }
    head(l, inpL, GM_NONE, "output_norm.weight");
}

/* ------------------------------------------------------------------------ */
/* nemotron_h                                                                */
/* ------------------------------------------------------------------------ */

/* build_ffn_layer's dense branch (nemotron-h.cpp:284-292): up, ReLU², down */
static int32_t nemotron_ffn(gm_llm *l, int32_t cur, int il) {
    const gm_ffn_w w = gm_ffn_weights(l, "ffn", il);
    return gm_build_ffn_ex(l, cur, &w, GM_FFN_RELU_SQR, GM_FFN_PAR);
}

/* llama_model_nemotron_h::graph (nemotron-h.cpp:200-270); the routed
 * layers of nemotron_h_moe have no graph here yet */
void gm_arch_nemotron_h(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    gm_rs_inp rs;
    gm_attn_inp attn;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    gm_inp_mem_hybrid(l, &rs, &attn);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        if (hp->is_recr[il]) {
            cur = gm_build_mamba2_layer(l, &rs, cur, il);
        } else if (hp->n_ff[il] == 0) {
            int32_t q, k, v;
            qkv(l, cur, il, &q, &k, &v);
            cur = attn_out(l, &attn, q, k, v, il);
        } else {
            cur = nemotron_ffn(l, cur, il);
        }
        inpL = gm_binary(g, GM_OP_ADD, cur, inpL);
    }
    head(l, inpL, out_ids, "output_norm.weight");
}

/* ------------------------------------------------------------------------ */
/* falcon-h1                                                                 */
/* ------------------------------------------------------------------------ */

/* llama_model_falcon_h1::graph (falcon-h1.cpp:111-209) */
void gm_arch_falcon_h1(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    gm_rs_inp rs;
    gm_attn_inp attn;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_inp_mem_hybrid(l, &rs, &attn);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        int32_t q, k, v;
        qkv(l, cur, il, &q, &k, &v);
        q = gm_rope(g, q, pos, GM_NONE);
        k = gm_rope(g, k, pos, GM_NONE);
        int32_t attn_o = gm_build_attn(l, &attn, gm_w(l, "blk.%d.attn_output.weight", il), q, k, v, il, false);
        cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        int32_t ssm_o = gm_build_mamba2_layer(l, &rs, cur, il);
        cur = gm_binary(g, GM_OP_ADD, attn_o, ssm_o);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpL);
        if (il == (int)hp->n_layer - 1) ffn_inp = gm_get_rows(g, ffn_inp, out_ids);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm", il), il);
        const gm_ffn_w w = gm_ffn_weights(l, "ffn", il);
        cur = gm_build_ffn_ex(l, cur, &w, GM_FFN_SILU, GM_FFN_PAR);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    head(l, inpL, GM_NONE, "output_norm.weight");
}

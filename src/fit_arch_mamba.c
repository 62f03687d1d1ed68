/*
 * fit_arch_mamba.c - the graphs of the Mamba-2 family: mamba2
 * (src/models/mamba.cpp), the hybrids nemotron_h and nemotron_h_moe
 * (nemotron-h.cpp: every layer one of a Mamba-2 mixer, an attention or an
 * FFN), granitehybrid (granite-hybrid.cpp: Mamba-2 or attention, then an
 * FFN, granite's muP scales) and falcon-h1 (falcon-h1.cpp: attention and a
 * Mamba-2 mixer side by side in every layer, then an FFN), over
 * fit_block_rs.c's Mamba-2 layer.
 */
#include "fit_arch_recurrent.h"
#include "fit_block_moe.h"
#include "fit_blocks.h"
#include "fit_block_rs.h"

/* build_attn with the layer's wo and its bias (llama-graph.cpp:2851-2930) */
static int32_t attn_out(gm_llm *l, const gm_attn_inp *inp, int32_t q, int32_t k, int32_t v, int il) {
    const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il), .wo_b = gm_w(l, "blk.%d.attn_output.bias", il),
                             .kq_b = GM_NONE, .sinks = GM_NONE };
    return gm_build_attn_opts(l, inp, &o, q, k, v, il);
}

/* build_qkv with the biases the model has, reshaped, with the layer's head
 * counts (nemotron-h.cpp:271: hparams.n_head(il)) or layer 0's
 * (falcon-h1.cpp:139: the graph context's n_head, n_head_kv) */
static void qkv(gm_llm *l, int32_t cur, int il, bool layer_heads, int32_t *q, int32_t *k, int32_t *v) {
    const gm_hparams *hp = l->hp;
    const int h = layer_heads ? il : 0;
    gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[h], hp->n_head_kv[h], true, q, k, v);
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

/* build_ffn_layer's routed branch (nemotron-h.cpp:294-331): the router's
 * logits as the experts' probabilities (sigmoid gating, selection bias),
 * experts without a gate (ReLU²) between the optional latent projections,
 * plus the shared expert (ReLU²) on the layer's input */
static int32_t nemotron_moe(gm_llm *l, int32_t cur, int il) {
    gm_graph *g = l->g;
    int32_t latent = cur;
    const int32_t latent_down = gm_w(l, "blk.%d.ffn_latent_down.weight", il);
    const int32_t latent_up = gm_w(l, "blk.%d.ffn_latent_up.weight", il);
    if (latent_down != GM_NONE) latent = gm_mul_mat(g, latent_down, cur);
    gm_moe_args a;
    gm_moe_args_layer(l, il, &a);
    a.probs_in = gm_build_lora_mm(l, a.gate_inp, cur);
    a.gate_exps = a.gate_up_exps = GM_NONE;
    a.op = GM_FFN_RELU_SQR;
    a.gating = GM_GATING_SIGMOID;
    int32_t moe = gm_build_moe(l, latent, &a, il);
    if (latent_up != GM_NONE) moe = gm_mul_mat(g, latent_up, moe);
    const gm_ffn_w sh = { .up = gm_w(l, "blk.%d.ffn_up_shexp.weight", il), .up_b = GM_NONE, .gate = GM_NONE,
                          .gate_b = GM_NONE, .down = gm_w(l, "blk.%d.ffn_down_shexp.weight", il), .down_b = GM_NONE };
    return gm_binary(g, GM_OP_ADD, moe, gm_build_ffn_ex(l, cur, &sh, GM_FFN_RELU_SQR, GM_FFN_PAR));
}


/* build_ffn_layer (nemotron-h.cpp:284-331): the dense branch (up, ReLU²,
 * down) or the routed one */
static int32_t nemotron_ffn(gm_llm *l, int32_t cur, int il) {
    if (gm_w(l, "blk.%d.ffn_gate_inp.weight", il) != GM_NONE) return nemotron_moe(l, cur, il);
    const gm_ffn_w w = gm_ffn_weights(l, "ffn", il);
    return gm_build_ffn_ex(l, cur, &w, GM_FFN_RELU_SQR, GM_FFN_PAR);
}

/* llama_model_nemotron_h::graph (nemotron-h.cpp:200-270), nemotron_h_moe's
 * too */
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
            qkv(l, cur, il, true, &q, &k, &v);
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
        qkv(l, cur, il, false, &q, &k, &v);
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

/* ------------------------------------------------------------------------ */
/* granitehybrid                                                             */
/* ------------------------------------------------------------------------ */

/* llama_model_granite_hybrid::graph (granite-hybrid.cpp:120-185) and
 * build_attention_layer (:187-210); the FFN is granite's */
void gm_arch_granitehybrid(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    gm_rs_inp rs;
    gm_attn_inp attn;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    gm_inp_mem_hybrid(l, &rs, &attn);
    int32_t out_ids = gm_inp_out_ids(l);
    int32_t pos = hp->no_rope ? GM_NONE : gm_inp_pos(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = inpL;
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        if (hp->is_recr[il]) {
            cur = gm_build_mamba2_layer(l, &rs, cur, il);
        } else {
            int32_t q, k, v;
            qkv(l, cur, il, true, &q, &k, &v);
            if (!hp->no_rope) {
                const int32_t factors = gm_rope_factors(l, il);
                q = gm_rope(g, q, pos, factors);
                k = gm_rope(g, k, pos, factors);
            }
            cur = attn_out(l, &attn, q, k, v, il);
        }
        if (il == (int)hp->n_layer - 1) {
            cur = gm_get_rows(g, cur, out_ids);
            inpSA = gm_get_rows(g, inpSA, out_ids);
        }
        inpL = gm_build_granite_ffn(l, cur, inpSA, il);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    if (hp->f_logit_scale != 0.0f) cur = gm_unary(g, GM_OP_SCALE, cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}
/* ------------------------------------------------------------------------ */
/* nemotron_h_moe's MTP draft graph                                          */
/* ------------------------------------------------------------------------ */

/* llama_model_nemotron_h_moe::graph_mtp (nemotron-h-moe.cpp:11-164) as a
 * reserve builds it (no embeddings_nextn yet: the output rows are taken
 * before the MoE): the NextN input, a NoPE attention layer, the routed FFN,
 * the head's own layer norm */
void gm_arch_nemotron_h_moe_mtp(gm_llm *l) {
    gm_graph *g = l->g;
    const int il = (int)l->hp->n_layer;
    gm_attn_inp attn;
    int32_t out_ids = gm_inp_out_ids(l);
    gm_attn_inp_kv(l, &l->kv, &attn);
    int32_t cur = gm_build_mtp_eh_proj(l, il);
    int32_t inpSA = cur;
    cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    int32_t q, k, v;
    qkv(l, cur, il, true, &q, &k, &v);
    cur = attn_out(l, &attn, q, k, v, il);
    cur = gm_get_rows(g, gm_binary(g, GM_OP_ADD, cur, inpSA), out_ids);
    int32_t residual = cur;
    cur = gm_build_norm_rms(l, cur, gm_w(l, "blk.%d.post_attention_norm.weight", il), il);
    cur = gm_binary(g, GM_OP_ADD, nemotron_moe(l, cur, il), residual);
    cur = gm_build_norm(l, cur, gm_w(l, "blk.%d.nextn.shared_head_norm.weight", il), GM_NONE, false, -1);
    gm_set_output(g, cur); /* t_h_nextn */
    const int32_t head_w = gm_w(l, "blk.%d.nextn.shared_head_head.weight", il);
    cur = gm_build_lora_mm(l, head_w != GM_NONE ? head_w : gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

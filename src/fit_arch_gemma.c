/*
 * fit_arch_gemma.c - the graphs of gemma2, gemma3 and gemma3n
 * (src/models/gemma2.cpp, gemma3.cpp, gemma3n.cpp) over the shared blocks.
 *
 * gemma2 and gemma3 are one decoder: a scaled input, pre- and post-norms
 * around attention and a GeGLU FFN, Q scaled before attention, the
 * sliding-window pair of caches (gemma3 only with a window), soft-capped
 * scores (gemma2) and logits (gemma2; gemma3 when set).  gemma3n adds
 * AltUp's parallel streams, LAuReL, per-layer token embeddings and layers
 * that read an earlier layer's cache.
 */
#include "fit_blocks.h"

static int32_t w(gm_llm *l, const char *name, int il) { return gm_w(l, name, il); }

static int32_t rms(gm_llm *l, int32_t cur, const char *name, int il) {
    return gm_build_norm(l, cur, w(l, name, il), GM_NONE, true, il);
}

/* scale, tanh, scale */
static int32_t soft_cap(gm_graph *g, int32_t cur) {
    cur = gm_unary(g, GM_OP_SCALE, cur);
    cur = gm_unary(g, GM_OP_UNARY, cur);
    return gm_unary(g, GM_OP_SCALE, cur);
}

static int32_t geglu(gm_llm *l, int32_t cur, int il) {
    const gm_ffn_w fw = gm_ffn_weights(l, "ffn", il);
    return gm_build_ffn_ex(l, cur, &fw, GM_FFN_GELU, GM_FFN_PAR);
}

/* gemma2.cpp:33-150 and gemma3.cpp:80-200 */
static void gemma23(gm_llm *l, bool qk_norm, bool cap_logits) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    int32_t inpL = gm_unary(g, GM_OP_SCALE, gm_inp_embd(l, w(l, "token_embd.weight", 0)));
    const int32_t pos = gm_inp_pos(l);
    gm_attn_kv_inputs in;
    gm_attn_inp_kv_auto(l, &in);
    const int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t q, k, v;
        int32_t cur = rms(l, inpL, "blk.%d.attn_norm.weight", il);
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[il], hp->n_head_kv[il], true, &q, &k, &v);
        if (qk_norm) q = rms(l, q, "blk.%d.attn_q_norm.weight", il);
        q = gm_rope(g, q, pos, GM_NONE);
        if (qk_norm) k = rms(l, k, "blk.%d.attn_k_norm.weight", il);
        k = gm_rope(g, k, pos, GM_NONE);
        q = gm_unary(g, GM_OP_SCALE, q);
        const gm_attn_opts o = { .wo = w(l, "blk.%d.attn_output.weight", il), .wo_b = GM_NONE, .kq_b = GM_NONE,
                                 .sinks = GM_NONE, .soft_cap = hp->attn_soft_cap };
        cur = gm_build_attn_auto(l, &in, o, q, k, v, il);
        if (il == (int)hp->n_layer - 1) {
            cur = gm_get_rows(g, cur, out_ids);
            inpL = gm_get_rows(g, inpL, out_ids);
        }
        cur = rms(l, cur, "blk.%d.post_attention_norm.weight", il);
        const int32_t sa_out = gm_binary(g, GM_OP_ADD, cur, inpL);
        cur = geglu(l, rms(l, sa_out, "blk.%d.ffn_norm.weight", il), il);
        cur = gm_build_norm(l, cur, w(l, "blk.%d.post_ffw_norm.weight", il), GM_NONE, true, -1);
        inpL = gm_binary(g, GM_OP_ADD, cur, sa_out);
    }
    int32_t cur = gm_build_norm(l, inpL, w(l, "output_norm.weight", 0), GM_NONE, true, -1);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    if (cap_logits) cur = soft_cap(g, cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

void gm_arch_gemma2(gm_llm *l) { gemma23(l, false, true); }

void gm_arch_gemma3(gm_llm *l) { gemma23(l, true, l->hp->final_logit_softcapping != 0.0f); }

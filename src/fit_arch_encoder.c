/*
 * fit_arch_encoder.c - the graphs of the encoders and T5
 * (src/models/bert.cpp, nomic-bert.cpp, t5.cpp, t5encoder.cpp).
 *
 * BERT-style encoders attend without a cache over a [T, T] mask: token,
 * type and (bert) position embeddings under a layer norm, then per layer
 * Q/K/V (biased, or one fused product with RoPE for nomic-bert), attention,
 * post-norms and a GELU (bert) or SwiGLU (nomic-bert) FFN; their output is
 * t_embd, which the pooling head (fit_block_pool.c) reads.  T5's context
 * reserves the decoder: self-attention over the KV cache with a relative
 * position bias (so never flash attention), cross-attention over
 * n_ctx_train encoder rows, a ReLU or gated-GELU FFN; t5encoder is T5's
 * encoder, attention without a cache with the same bias.
 */
#include "fit_blocks.h"

static int32_t w(gm_llm *l, const char *name, int il) { return gm_w(l, name, il); }

static int32_t layer_norm(gm_llm *l, int32_t cur, const char *name, const char *bias, int il) {
    return gm_build_norm(l, cur, w(l, name, il), w(l, bias, il), false, il);
}

/* ------------------------------------------------------------------------ */
/* bert, nomic-bert (models/bert.cpp graph, which nomic-bert builds too)     */
/* ------------------------------------------------------------------------ */

/* the input: positions first, token rows, + type row 0, + position rows
 * (bert; nomic-bert ropes instead), the embedding norm (bert.cpp:73-96) */
static int32_t bert_input(gm_llm *l, int32_t *pos, bool nomic) {
    gm_graph *g = l->g;
    *pos = gm_inp_pos(l);
    int32_t inpL = gm_inp_embd(l, w(l, "token_embd.weight", 0));
    const int32_t types = w(l, "token_types.weight", 0);
    if (types != GM_NONE) inpL = gm_binary(g, GM_OP_ADD, inpL, gm_view_1d(g, types, l->hp->n_embd, 0));
    if (!nomic)
        inpL = gm_binary(g, GM_OP_ADD, gm_get_rows(g, w(l, "position_embd.weight", 0), *pos), inpL);
    return layer_norm(l, inpL, "token_embd_norm.weight", "token_embd_norm.bias", 0);
}

/* q or k normed over its whole width when the model has the norm */
static int32_t qk_norm(gm_llm *l, int32_t x, const char *name, const char *bias, int il) {
    if (w(l, name, il) == GM_NONE) return x;
    gm_graph *g = l->g;
    const gm_tensor *t = &g->t[x];
    const int64_t head = t->ne[0], heads = t->ne[1], n = t->ne[2];
    x = layer_norm(l, gm_reshape_2d(g, x, head * heads, n), name, bias, il);
    return gm_reshape_3d(g, x, head, heads, n);
}

/* bert.cpp's graph; nomic: nomic-bert's differences in it (RoPE instead of
 * position rows, a SwiGLU FFN without biases) */
static void encoder(gm_llm *l, bool nomic) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    int32_t pos;
    int32_t inpL = bert_input(l, &pos, nomic);
    gm_attn_inp_nc inp;
    gm_attn_inp_no_cache(l, &inp);
    const int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t q, k, v;
        gm_build_qkv_ex(l, il, inpL, hp->head_k_full, hp->n_head[il], hp->n_head_kv[il], true, &q, &k, &v);
        q = qk_norm(l, q, "blk.%d.attn_q_norm.weight", "blk.%d.attn_q_norm.bias", il);
        k = qk_norm(l, k, "blk.%d.attn_k_norm.weight", "blk.%d.attn_k_norm.bias", il);
        if (nomic) {
            q = gm_rope(g, q, pos, GM_NONE);
            k = gm_rope(g, k, pos, GM_NONE);
        }
        const gm_attn_opts o = { .wo = w(l, "blk.%d.attn_output.weight", il), .wo_b = w(l, "blk.%d.attn_output.bias", il),
                                 .kq_b = GM_NONE, .sinks = GM_NONE };
        int32_t cur = gm_build_attn_no_cache(l, &inp, &o, q, k, v, il);
        if (il == (int)hp->n_layer - 1) {
            cur = gm_get_rows(g, cur, out_ids);
            inpL = gm_get_rows(g, inpL, out_ids);
        }
        cur = gm_binary(g, GM_OP_ADD, cur, inpL);
        cur = layer_norm(l, cur, "blk.%d.attn_output_norm.weight", "blk.%d.attn_output_norm.bias", il);
        if (w(l, "blk.%d.attn_norm_2.weight", il) != GM_NONE) {
            cur = gm_binary(g, GM_OP_ADD, cur, inpL);
            cur = layer_norm(l, cur, "blk.%d.attn_norm_2.weight", "blk.%d.attn_norm_2.bias", il);
        }
        const int32_t ffn_inp = cur;
        gm_ffn_w fw = gm_ffn_weights(l, "ffn", il);
        if (nomic) {
            fw.up_b = fw.gate_b = fw.down_b = GM_NONE;
            cur = gm_build_ffn_ex(l, cur, &fw, GM_FFN_SILU, GM_FFN_PAR);
        } else {
            fw.gate = fw.gate_b = GM_NONE;
            cur = gm_build_ffn_ex(l, cur, &fw, GM_FFN_GELU, GM_FFN_SEQ);
        }
        cur = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
        inpL = layer_norm(l, cur, "blk.%d.layer_output_norm.weight", "blk.%d.layer_output_norm.bias", il);
    }
    l->t_embd = inpL;
    gm_expand(g, inpL);
}

void gm_arch_bert(gm_llm *l) { encoder(l, false); }

void gm_arch_nomic_bert(gm_llm *l) { encoder(l, true); }

/* ------------------------------------------------------------------------ */
/* T5 (models/t5.cpp): the decoder a context reserves, the encoder alone     */
/* ------------------------------------------------------------------------ */

/* the layer's relative position bias table, else layer 0's */
static int32_t rel_b(gm_llm *l, const char *name, int il) {
    const int32_t b = w(l, name, il);
    return b != GM_NONE ? b : w(l, name, 0);
}

/* three projections of x (and y for K, V) reshaped to heads */
static void t5_qkv(gm_llm *l, const char *const names[3], int il, int32_t x, int32_t kv_x, int32_t *q, int32_t *k,
                   int32_t *v) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->head_k_full, n = l->ub.n_tokens, n_kv = g->t[kv_x].ne[1];
    *q = gm_build_lora_mm(l, w(l, names[0], il), x);
    *k = gm_build_lora_mm(l, w(l, names[1], il), kv_x);
    *v = gm_build_lora_mm(l, w(l, names[2], il), kv_x);
    *q = gm_reshape_3d(g, *q, head, hp->n_head[il], n);
    *k = gm_reshape_3d(g, *k, head, hp->n_head_kv[il], n_kv);
    *v = gm_reshape_3d(g, *v, head, hp->n_head_kv[il], n_kv);
}

/* T5's FFN (enc. or dec. weights): gated GELU where the layer has a gate, else ReLU */
static int32_t t5_ffn(gm_llm *l, int32_t cur, bool enc, int il) {
    const gm_ffn_w fw = {
        .up = w(l, enc ? "enc.blk.%d.ffn_up.weight" : "dec.blk.%d.ffn_up.weight", il), .up_b = GM_NONE,
        .gate = w(l, enc ? "enc.blk.%d.ffn_gate.weight" : "dec.blk.%d.ffn_gate.weight", il), .gate_b = GM_NONE,
        .down = w(l, enc ? "enc.blk.%d.ffn_down.weight" : "dec.blk.%d.ffn_down.weight", il), .down_b = GM_NONE,
    };
    const bool gated = fw.gate != GM_NONE;
    return gm_build_ffn_ex(l, cur, &fw, gated ? GM_FFN_GELU : GM_FFN_RELU, gated ? GM_FFN_PAR : GM_FFN_SEQ);
}

/* the end of a T5 layer (enc. or dec.): the last layer's output rows, the
 * residual, the FFN norm, the FFN, the residual again */
static int32_t t5_ffn_block(gm_llm *l, int32_t cur, int32_t residual, int32_t out_ids, bool last, bool enc, int il) {
    gm_graph *g = l->g;
    if (last) {
        cur = gm_get_rows(g, cur, out_ids);
        residual = gm_get_rows(g, residual, out_ids);
    }
    const int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, residual);
    cur = gm_build_norm(l, ffn_inp, w(l, enc ? "enc.blk.%d.ffn_norm.weight" : "dec.blk.%d.ffn_norm.weight", il),
                        GM_NONE, true, il);
    return gm_binary(g, GM_OP_ADD, t5_ffn(l, cur, enc, il), ffn_inp);
}

/* llama_model_t5::graph<true> (t5.cpp:264-355) */
void gm_arch_t5encoder(gm_llm *l) {
    static const char *const QKV[3] = { "enc.blk.%d.attn_q.weight", "enc.blk.%d.attn_k.weight", "enc.blk.%d.attn_v.weight" };
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    int32_t inpL = gm_inp_embd(l, w(l, "token_embd.weight", 0));
    const int32_t pos_bucket = gm_inp_pos_bucket_enc(l);
    gm_attn_inp_nc inp;
    gm_attn_inp_no_cache(l, &inp);
    const int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        const int32_t inpSA = inpL;
        int32_t q, k, v;
        int32_t cur = gm_build_norm(l, inpL, w(l, "enc.blk.%d.attn_norm.weight", il), GM_NONE, true, il);
        t5_qkv(l, QKV, il, cur, cur, &q, &k, &v);
        const gm_attn_opts o = { .wo = w(l, "enc.blk.%d.attn_o.weight", il), .wo_b = GM_NONE, .sinks = GM_NONE,
                                 .kq_b = gm_build_pos_bias(l, pos_bucket, rel_b(l, "enc.blk.%d.attn_rel_b.weight", il)) };
        cur = gm_build_attn_no_cache(l, &inp, &o, q, k, v, il);
        inpL = t5_ffn_block(l, cur, inpSA, out_ids, il == (int)hp->n_layer - 1, true, il);
    }
    const int32_t cur = gm_build_norm(l, inpL, w(l, "enc.output_norm.weight", 0), GM_NONE, true, -1);
    l->t_embd = cur;
    gm_expand(g, cur);
}

/* llama_model_t5::graph<false> (t5.cpp:109-262) */
void gm_arch_t5(gm_llm *l) {
    static const char *const SELF[3] = { "dec.blk.%d.attn_q.weight", "dec.blk.%d.attn_k.weight", "dec.blk.%d.attn_v.weight" };
    static const char *const CROSS[3] = { "dec.blk.%d.cross_attn_q.weight", "dec.blk.%d.cross_attn_k.weight",
                                          "dec.blk.%d.cross_attn_v.weight" };
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    int32_t inpL = gm_inp_embd(l, w(l, "token_embd.weight", 0));
    const int32_t embd_enc = gm_inp_cross_embd(l);
    const int32_t pos_bucket = gm_inp_pos_bucket_dec(l, &l->kv);
    gm_attn_inp self;
    gm_attn_inp_kv(l, &l->kv, &self);
    const int32_t cross_mask = gm_attn_inp_cross(l);
    const int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->dec_n_layer; il++) {
        int32_t q, k, v;
        int32_t cur = gm_build_norm(l, inpL, w(l, "dec.blk.%d.attn_norm.weight", il), GM_NONE, true, il);
        t5_qkv(l, SELF, il, cur, cur, &q, &k, &v);
        const gm_attn_opts o = { .wo = w(l, "dec.blk.%d.attn_o.weight", il), .wo_b = GM_NONE, .sinks = GM_NONE,
                                 .kq_b = gm_build_pos_bias(l, pos_bucket, rel_b(l, "dec.blk.%d.attn_rel_b.weight", il)) };
        cur = gm_build_attn_opts(l, &self, &o, q, k, v, il);
        cur = gm_binary(g, GM_OP_ADD, cur, inpL);
        const int32_t inpCA = cur;
        cur = gm_build_norm(l, cur, w(l, "dec.blk.%d.cross_attn_norm.weight", il), GM_NONE, true, il);
        t5_qkv(l, CROSS, il, cur, embd_enc, &q, &k, &v);
        const gm_attn_opts oc = { .wo = w(l, "dec.blk.%d.cross_attn_o.weight", il), .wo_b = GM_NONE, .kq_b = GM_NONE,
                                  .sinks = GM_NONE };
        cur = gm_build_attn_cross(l, cross_mask, &oc, q, k, v, il);
        inpL = t5_ffn_block(l, cur, inpCA, out_ids, il == (int)hp->dec_n_layer - 1, false, il);
    }
    int32_t cur = gm_build_norm(l, inpL, w(l, "dec.output_norm.weight", 0), GM_NONE, true, -1);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

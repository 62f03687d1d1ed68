/*
 * fit_arch_dense.c - the graphs of the dense decoders (src/models/<arch>.cpp):
 * mistral3, phi3, granite, command-r, cohere2, olmo2, starcoder2, exaone4.
 *
 * Each is llama.cpp's graph written over the shared blocks (fit_llm.h,
 * fit_blocks.h): token embedding, per layer a norm, Q/K/V (fused or
 * separate, with the biases the model has), RoPE with the layer's own rope
 * factors, attention over the KV cache (a sliding-window pair where the
 * model has one), the residual, the FFN, and the output head.  What tells
 * them apart is written out per architecture: the norm type, where the
 * norms sit (pre, post, q/k), parallel attention and FFN (command-r,
 * cohere2), the scales that exist only when a value is set.
 */
#include "fit_blocks.h"

enum { T_F32 = 0 };

/* ------------------------------------------------------------------------ */
/* The frame every decoder here shares                                       */
/* ------------------------------------------------------------------------ */

typedef struct dec {
    gm_llm *l;
    int32_t inpL, pos, out_ids;
    gm_attn_kv_inputs attn;
} dec;

/* build_inp_embd, build_inp_pos (unless the model has no RoPE), the cache
 * inputs and build_inp_out_ids, in that order */
static void dec_begin(dec *d, gm_llm *l, bool with_pos) {
    d->l = l;
    d->inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    d->pos = with_pos ? gm_inp_pos(l) : GM_NONE;
    gm_attn_inp_kv_auto(l, &d->attn);
    d->out_ids = gm_inp_out_ids(l);
}

static bool last_layer(const dec *d, int il) { return il == (int)d->l->hp->n_layer - 1; }

static int32_t rows(dec *d, int32_t t) { return gm_get_rows(d->l->g, t, d->out_ids); }

static int32_t attn(dec *d, int il, int32_t q, int32_t k, int32_t v, bool with_bias) {
    gm_llm *l = d->l;
    const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                             .wo_b = with_bias ? gm_w(l, "blk.%d.attn_output.bias", il) : GM_NONE,
                             .kq_b = GM_NONE, .sinks = GM_NONE, .soft_cap = l->hp->attn_soft_cap };
    return gm_build_attn_auto(l, &d->attn, o, q, k, v, il);
}

static void rope_qk(dec *d, int32_t *q, int32_t *k, int32_t factors) {
    *q = gm_rope(d->l->g, *q, d->pos, factors);
    *k = gm_rope(d->l->g, *k, d->pos, factors);
}

static int32_t w(dec *d, const char *name, int il) { return gm_w(d->l, name, il); }

/* the output norm (t_embd) and the projection to the vocabulary */
static int32_t head(dec *d, int32_t cur, bool rms) {
    gm_llm *l = d->l;
    cur = gm_build_norm(l, cur, w(d, "output_norm.weight", 0), w(d, "output_norm.bias", 0), rms, -1);
    l->t_embd = cur;
    return gm_build_lora_mm(l, gm_w_output(l), cur);
}

static void finish(dec *d, int32_t logits) {
    d->l->t_logits = logits;
    gm_expand(d->l->g, logits);
}

/* a llama-style FFN block's feed-forward: SwiGLU with the layer's biases,
 * or the routed experts of a layer with ffn_gate_inp */
static int32_t ffn_or_moe(dec *d, int32_t cur, int il) {
    gm_llm *l = d->l;
    const int32_t gate_inp = w(d, "blk.%d.ffn_gate_inp.weight", il);
    if (gate_inp == GM_NONE) {
        const gm_ffn_w fw = gm_ffn_weights(l, "ffn", il);
        return gm_build_ffn_ex(l, cur, &fw, GM_FFN_SILU, GM_FFN_PAR);
    }
    return gm_build_moe_ffn(l, cur, gate_inp, w(d, "blk.%d.ffn_up_exps.weight", il),
                            w(d, "blk.%d.ffn_gate_exps.weight", il), w(d, "blk.%d.ffn_down_exps.weight", il),
                            l->hp->n_expert, l->hp->n_expert_used, true);
}

/* ------------------------------------------------------------------------ */
/* mistral3 (models/mistral3.cpp:95-240)                                      */
/* ------------------------------------------------------------------------ */

void gm_arch_mistral3(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    dec d;
    d.l = l;
    d.inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    d.pos = gm_inp_pos(l);
    int32_t attn_scale = GM_NONE; /* build_inp_attn_scale: [1, 1, T] */
    if (hp->f_attn_temp_scale != 0.0f) {
        attn_scale = gm_new_3d(g, T_F32, 1, 1, l->ub.n_tokens);
        gm_set_input(g, attn_scale);
    }
    gm_attn_inp_kv_auto(l, &d.attn);
    d.out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = d.inpL, q, k, v;
        int32_t cur = gm_build_norm(l, d.inpL, w(&d, "blk.%d.attn_norm.weight", il), GM_NONE, true, il);
        const int32_t factors = gm_rope_factors(l, il);
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[0], hp->n_head_kv[0], true, &q, &k, &v);
        rope_qk(&d, &q, &k, factors);
        if (attn_scale != GM_NONE) q = gm_binary(g, GM_OP_MUL, q, attn_scale);
        cur = attn(&d, il, q, k, v, true);
        if (last_layer(&d, il)) cur = rows(&d, cur), inpSA = rows(&d, inpSA);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm(l, ffn_inp, w(&d, "blk.%d.ffn_norm.weight", il), GM_NONE, true, il);
        cur = ffn_or_moe(&d, cur, il);
        d.inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    finish(&d, head(&d, d.inpL, true));
}

/* ------------------------------------------------------------------------ */
/* phi3 (models/phi3.cpp, graph<false>: its window never turns SWA on)       */
/* ------------------------------------------------------------------------ */

void gm_arch_phi3(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    dec d;
    dec_begin(&d, l, true);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t residual = d.inpL, q, k, v;
        const int32_t factors = gm_rope_factors(l, il);
        int32_t cur = gm_build_norm(l, d.inpL, w(&d, "blk.%d.attn_norm.weight", il), w(&d, "blk.%d.attn_norm.bias", il),
                                    true, il);
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[0], hp->n_head_kv[0], true, &q, &k, &v);
        rope_qk(&d, &q, &k, factors);
        q = gm_unary(g, GM_OP_SCALE, q);
        cur = attn(&d, il, q, k, v, true);
        if (last_layer(&d, il)) cur = rows(&d, cur), residual = rows(&d, residual);
        cur = gm_binary(g, GM_OP_ADD, cur, residual);
        residual = cur;
        cur = gm_build_norm(l, cur, w(&d, "blk.%d.ffn_norm.weight", il), w(&d, "blk.%d.ffn_norm.bias", il),
                            true, il);
        const int32_t gate_inp = w(&d, "blk.%d.ffn_gate_inp.weight", il);
        if (gate_inp == GM_NONE) {
            const gm_ffn_w fw = { .up = w(&d, "blk.%d.ffn_up.weight", il), .up_b = GM_NONE, .gate = GM_NONE,
                                  .gate_b = GM_NONE, .down = w(&d, "blk.%d.ffn_down.weight", il), .down_b = GM_NONE };
            cur = gm_build_ffn_ex(l, cur, &fw, GM_FFN_SWIGLU, GM_FFN_SEQ);
        } else {
            cur = ffn_or_moe(&d, cur, il);
        }
        d.inpL = gm_binary(g, GM_OP_ADD, residual, cur);
    }
    int32_t cur = head(&d, d.inpL, true);
    const int32_t out_b = w(&d, "output.bias", 0);
    if (out_b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, out_b);
    finish(&d, cur);
}

/* ------------------------------------------------------------------------ */
/* granite (models/granite.cpp): muP scales, RoPE by rope.scaling.finetuned  */
/* ------------------------------------------------------------------------ */

/* build_layer_ffn (granite.cpp:150-220), the dense or routed FFN (with the
 * shared expert of granitemoe's layers) between the residual scales */
int32_t gm_build_granite_ffn(gm_llm *l, int32_t cur, int32_t inpSA, int il) {
    dec dd = { .l = l }, *d = &dd;
    gm_graph *g = l->g;
    if (l->hp->f_residual_scale != 0.0f) cur = gm_unary(g, GM_OP_SCALE, cur);
    int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
    cur = gm_build_norm(l, ffn_inp, w(d, "blk.%d.ffn_norm.weight", il), GM_NONE, true, il);
    const bool moe = w(d, "blk.%d.ffn_gate_inp.weight", il) != GM_NONE;
    int32_t out = ffn_or_moe(d, cur, il);
    if (moe && l->hp->n_ff_shexp > 0) {
        const gm_ffn_w sh = { .up = w(d, "blk.%d.ffn_up_shexp.weight", il), .up_b = GM_NONE,
                              .gate = w(d, "blk.%d.ffn_gate_shexp.weight", il), .gate_b = GM_NONE,
                              .down = w(d, "blk.%d.ffn_down_shexp.weight", il), .down_b = GM_NONE };
        out = gm_binary(g, GM_OP_ADD, out, gm_build_ffn_ex(l, cur, &sh, GM_FFN_SILU, GM_FFN_PAR));
    }
    if (l->hp->f_residual_scale != 0.0f) out = gm_unary(g, GM_OP_SCALE, out);
    return gm_binary(g, GM_OP_ADD, out, ffn_inp);
}

void gm_arch_granite(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    dec d;
    dec_begin(&d, l, !hp->no_rope);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = d.inpL, q, k, v;
        int32_t cur = gm_build_norm(l, d.inpL, w(&d, "blk.%d.attn_norm.weight", il), GM_NONE, true, il);
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[il], hp->n_head_kv[il], true, &q, &k, &v);
        if (!hp->no_rope) rope_qk(&d, &q, &k, gm_rope_factors(l, il));
        cur = attn(&d, il, q, k, v, true);
        if (last_layer(&d, il)) cur = rows(&d, cur), inpSA = rows(&d, inpSA);
        d.inpL = gm_build_granite_ffn(l, cur, inpSA, il);
    }
    finish(&d, gm_unary(l->g, GM_OP_SCALE, head(&d, d.inpL, true)));
}

/* ------------------------------------------------------------------------ */
/* command-r, cohere2 (models/command-r.cpp, cohere2.cpp): layer norms,      */
/* attention and FFN in parallel on the same normed input                    */
/* ------------------------------------------------------------------------ */

static void cohere(gm_llm *l, bool rope_swa_only) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    dec d;
    dec_begin(&d, l, true);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t q, k, v;
        int32_t cur = gm_build_norm(l, d.inpL, w(&d, "blk.%d.attn_norm.weight", il), GM_NONE, false, il);
        int32_t ffn_inp = cur;
        const int32_t factors = rope_swa_only ? gm_rope_factors(l, il) : GM_NONE;
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[0], hp->n_head_kv[0], true, &q, &k, &v);
        const int32_t q_norm = w(&d, "blk.%d.attn_q_norm.weight", il), k_norm = w(&d, "blk.%d.attn_k_norm.weight", il);
        const bool rope = !rope_swa_only || hp->is_swa[il];
        if (q_norm != GM_NONE) q = gm_build_norm(l, q, q_norm, GM_NONE, false, il);
        if (rope) q = gm_rope(g, q, d.pos, factors);
        if (k_norm != GM_NONE) k = gm_build_norm(l, k, k_norm, GM_NONE, false, il);
        if (rope) k = gm_rope(g, k, d.pos, factors);
        cur = attn(&d, il, q, k, v, true);
        int32_t inpL = d.inpL;
        if (last_layer(&d, il)) cur = rows(&d, cur), inpL = rows(&d, inpL), ffn_inp = rows(&d, ffn_inp);
        const int32_t attn_out = cur;
        const gm_ffn_w fw = { .up = w(&d, "blk.%d.ffn_up.weight", il), .up_b = GM_NONE,
                              .gate = w(&d, "blk.%d.ffn_gate.weight", il), .gate_b = GM_NONE,
                              .down = w(&d, "blk.%d.ffn_down.weight", il), .down_b = GM_NONE };
        cur = gm_build_ffn_ex(l, ffn_inp, &fw, GM_FFN_SILU, GM_FFN_PAR);
        cur = gm_binary(g, GM_OP_ADD, cur, inpL);
        d.inpL = gm_binary(g, GM_OP_ADD, cur, attn_out);
    }
    int32_t cur = head(&d, d.inpL, false);
    if (hp->f_logit_scale != 0.0f) cur = gm_unary(g, GM_OP_SCALE, cur);
    finish(&d, cur);
}

void gm_arch_command_r(gm_llm *l) { cohere(l, false); }

void gm_arch_cohere2(gm_llm *l) { cohere(l, true); }

/* ------------------------------------------------------------------------ */
/* olmo2, exaone4 (models/olmo2.cpp, exaone4.cpp): q/k norms, post-norms      */
/* ------------------------------------------------------------------------ */

/* the post-norm block both end with (olmo2.cpp:118-140, exaone4.cpp:85-103) */
static int32_t post_norm_ffn(dec *d, int32_t cur, int32_t inpSA, int il) {
    gm_llm *l = d->l;
    gm_graph *g = l->g;
    if (last_layer(d, il)) cur = rows(d, cur), inpSA = rows(d, inpSA);
    cur = gm_build_norm(l, cur, w(d, "blk.%d.post_attention_norm.weight", il), GM_NONE, true, il);
    int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
    const gm_ffn_w fw = gm_ffn_weights(l, "ffn", il);
    cur = gm_build_ffn_ex(l, ffn_inp, &fw, GM_FFN_SILU, GM_FFN_PAR);
    cur = gm_build_norm(l, cur, w(d, "blk.%d.post_ffw_norm.weight", il), GM_NONE, true, -1);
    return gm_binary(g, GM_OP_ADD, cur, ffn_inp);
}

void gm_arch_olmo2(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens, head_dim = hp->head_k_full;
    dec d;
    dec_begin(&d, l, true);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t q, k, v;
        gm_build_qkv_ex(l, il, d.inpL, head_dim, hp->n_head[0], hp->n_head_kv[0], false, &q, &k, &v);
        q = gm_build_norm(l, q, w(&d, "blk.%d.attn_q_norm.weight", il), GM_NONE, true, il);
        k = gm_build_norm(l, k, w(&d, "blk.%d.attn_k_norm.weight", il), GM_NONE, true, il);
        q = gm_reshape_3d(g, q, head_dim, hp->n_head[0], n);
        k = gm_reshape_3d(g, k, head_dim, hp->n_head_kv[0], n);
        v = gm_reshape_3d(g, v, head_dim, hp->n_head_kv[0], n);
        rope_qk(&d, &q, &k, GM_NONE);
        d.inpL = post_norm_ffn(&d, attn(&d, il, q, k, v, false), d.inpL, il);
    }
    finish(&d, head(&d, d.inpL, true));
}

void gm_arch_exaone4(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    dec d;
    dec_begin(&d, l, true);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t q, k, v;
        const bool use_rope = hp->is_swa[il] || hp->swa_type == GM_SWA_NONE;
        const int32_t factors = gm_rope_factors(l, il);
        gm_build_qkv_ex(l, il, d.inpL, hp->head_k_full, hp->n_head[0], hp->n_head_kv[0], true, &q, &k, &v);
        q = gm_build_norm(l, q, w(&d, "blk.%d.attn_q_norm.weight", il), GM_NONE, true, il);
        k = gm_build_norm(l, k, w(&d, "blk.%d.attn_k_norm.weight", il), GM_NONE, true, il);
        if (use_rope) rope_qk(&d, &q, &k, factors);
        d.inpL = post_norm_ffn(&d, attn(&d, il, q, k, v, false), d.inpL, il);
    }
    finish(&d, head(&d, d.inpL, true));
}

/* ------------------------------------------------------------------------ */
/* starcoder2 (models/starcoder2.cpp): biased layer norms, GELU FFN          */
/* ------------------------------------------------------------------------ */

void gm_arch_starcoder2(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    dec d;
    dec_begin(&d, l, true);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = d.inpL, q, k, v;
        int32_t cur = gm_build_norm(l, d.inpL, w(&d, "blk.%d.attn_norm.weight", il), w(&d, "blk.%d.attn_norm.bias", il),
                                    false, il);
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[0], hp->n_head_kv[0], true, &q, &k, &v);
        rope_qk(&d, &q, &k, GM_NONE);
        cur = attn(&d, il, q, k, v, true);
        if (last_layer(&d, il)) cur = rows(&d, cur), inpSA = rows(&d, inpSA);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm(l, ffn_inp, w(&d, "blk.%d.ffn_norm.weight", il), w(&d, "blk.%d.ffn_norm.bias", il),
                            false, il);
        gm_ffn_w fw = gm_ffn_weights(l, "ffn", il);
        fw.gate = fw.gate_b = GM_NONE;
        cur = gm_build_ffn_ex(l, cur, &fw, GM_FFN_GELU, GM_FFN_SEQ);
        d.inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    finish(&d, head(&d, d.inpL, false));
}

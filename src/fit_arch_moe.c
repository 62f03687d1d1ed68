/*
 * fit_arch_moe.c - the graphs of the mixture-of-experts decoders with a
 * standard attention (src/models/<arch>.cpp): gpt-oss, qwen2moe, olmoe,
 * phimoe, ernie4_5-moe, minimax-m2, granitemoe (granite's graph), glm4moe,
 * hy_v3, step35, cohere2moe.
 *
 * Data structure: each architecture is a short function over the shared
 * blocks (fit_llm.c: norms, build_qkv, build_attn with its optional sinks,
 * biases and the sliding-window pair; fit_block_moe.c: build_moe_ffn and the
 * shared expert).  What differs between them is written where llama.cpp
 * writes it: the norms around attention, where the last layer keeps only
 * the output rows, the router's options and how the shared expert joins.
 *
 * Workload: one graph per reserve (prompt and one-token ubatches); every
 * node in llama.cpp's order, since the order decides ggml-alloc's reuse.
 *
 * Fidelity: each proven against the real llama.cpp v0.5.0 by
 * tests/fit/graphs_moe.sh (compute buffers equal to the byte).
 */
#include "fit_llm.h"

/* ------------------------------------------------------------------------ */
/* Shared pieces                                                             */
/* ------------------------------------------------------------------------ */

/* rope of q and k (shapes only: factors, sections and frequencies do not change them) */
static void rope_qk(gm_llm *l, int32_t *q, int32_t *k, int32_t pos, int32_t factors) {
    *q = gm_rope(l->g, *q, pos, factors);
    *k = gm_rope(l->g, *k, pos, factors);
}

/* the head: output norm, the projection, t_embd and t_logits */
static int32_t lm_head(gm_llm *l, int32_t cur) {
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    l->t_logits = cur;
    return cur;
}

/* ------------------------------------------------------------------------ */
/* gpt-oss (models/openai-moe.cpp)                                           */
/* ------------------------------------------------------------------------ */

/* Alternating sliding-window layers with attention sinks and biases; the
 * experts' biases (add_id) and the OpenAI SwiGLU; router weights softmaxed
 * after the top-k.  The trunk's last layer keeps every row (t_h_nextn); the
 * output rows are taken before the output norm. */
void gm_arch_gpt_oss(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->n_rot_full;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        int32_t q, k, v;
        gm_build_qkv(l, il, cur, head, hp->n_head[il], hp->n_head_kv[il], head, &q, &k, &v);
        rope_qk(l, &q, &k, pos, GM_NONE);
        const gm_attn_args a = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                                 .wo_b = gm_w(l, "blk.%d.attn_output.bias", il), .q = q, .k = k, .v = v,
                                 .kq_b = GM_NONE, .sinks = gm_w(l, "blk.%d.attn_sinks.weight", il),
                                 .v_mla = GM_NONE, .iswa = true };
        cur = gm_build_attn_args(l, hp->is_swa[il] ? &swa : &base, &a, il);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpL);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.post_attention_norm.weight", il), il);
        gm_moe_args m;
        gm_moe_args_layer(l, il, &m);
        m.op = GM_FFN_SWIGLU_OAI;
        m.norm_w = false;
        m.gating = GM_GATING_SOFTMAX_WEIGHT;
        cur = gm_build_moe(l, cur, &m, il);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    gm_set_output(g, inpL); /* t_h_nextn */
    int32_t cur = gm_get_rows(g, inpL, out_ids);
    cur = gm_build_norm_rms(l, cur, gm_w(l, "output_norm.weight", 0), -1);
    gm_expand(g, lm_head(l, cur));
}

/* ------------------------------------------------------------------------ */
/* The llama-like MoE decoders                                               */
/* ------------------------------------------------------------------------ */

/* build_qkv reshaped to heads of the full-attention head size */
static void qkv_heads(gm_llm *l, int il, int32_t cur, int32_t *q, int32_t *k, int32_t *v) {
    const gm_hparams *hp = l->hp;
    gm_build_qkv(l, il, cur, hp->head_k_full, hp->n_head[il], hp->n_head_kv[il], hp->head_v_full, q, k, v);
}

/* build_qkv with reshape false, the whole-projection q/k norms, then the
 * reshapes (olmoe.cpp:82-101, minimax-m2.cpp) */
static void qkv_flat_normed(gm_llm *l, int il, int32_t cur, int32_t *q, int32_t *k, int32_t *v) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head[3] = { hp->head_k_full, hp->head_k_full, hp->head_v_full };
    const int64_t n_heads[3] = { hp->n_head[il], hp->n_head_kv[il], hp->n_head_kv[il] };
    const int64_t n = l->ub.n_tokens;
    gm_build_qkv_ex(l, il, cur, head, n_heads, false, q, k, v);
    *q = gm_build_norm_rms(l, *q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    *k = gm_build_norm_rms(l, *k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    *q = gm_reshape_3d(g, *q, head[0], n_heads[0], n);
    *k = gm_reshape_3d(g, *k, head[1], n_heads[1], n);
    *v = gm_reshape_3d(g, *v, head[2], n_heads[2], n);
}

/* build_attn over the plain cache with the layer's attn_output (and bias) */
static int32_t attn_out(gm_llm *l, const gm_attn_inp *inp, int32_t q, int32_t k, int32_t v, int il) {
    const gm_attn_args a = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                             .wo_b = gm_w(l, "blk.%d.attn_output.bias", il), .q = q, .k = k, .v = v,
                             .kq_b = GM_NONE, .sinks = GM_NONE, .v_mla = GM_NONE };
    return gm_build_attn_args(l, inp, &a, il);
}

/* model.get_rope_factors (llama-model.cpp:2259-2272): rope_freqs, else the
 * long factors past the original context, else the short ones */
static int32_t rope_factors(gm_llm *l, int il) {
    int32_t f = gm_w_layer(l, "rope_freqs.weight", il);
    if (f != GM_NONE) return f;
    if (l->cp->sizes.n_ctx_seq > l->hp->n_ctx_orig_yarn) return gm_w_layer(l, "rope_factors_long.weight", il);
    return gm_w_layer(l, "rope_factors_short.weight", il);
}

/* the last layer keeps the output rows (the trunks that take them inside the loop) */
static void last_rows(gm_llm *l, int il, int32_t out_ids, int32_t *cur, int32_t *inpSA) {
    if (il != (int)l->hp->n_layer - 1) return;
    *cur = gm_get_rows(l->g, *cur, out_ids);
    *inpSA = gm_get_rows(l->g, *inpSA, out_ids);
}

/* qwen2moe.cpp: biased q/k/v, softmax router without normalization, the
 * shared expert gated by a sigmoid */
void gm_arch_qwen2moe(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = inpL, q, k, v;
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        qkv_heads(l, il, cur, &q, &k, &v);
        rope_qk(l, &q, &k, pos, GM_NONE);
        cur = attn_out(l, &inp, q, k, v, il);
        last_rows(l, il, out_ids, &cur, &inpSA);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        gm_moe_args m;
        gm_moe_args_layer(l, il, &m);
        m.norm_w = false, m.gating = GM_GATING_SOFTMAX, m.exp_probs_b = GM_NONE;
        cur = gm_build_moe_shexp(l, cur, &m, GM_SHEXP_GATED, il);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_expand(g, lm_head(l, cur));
}

/* olmoe.cpp and minimax-m2.cpp: q/k norms over the whole projection before
 * the reshape; olmoe's router is a softmax without normalization,
 * minimax-m2's the model's gating with the selection bias, normalized */
static void flat_qk_norm_moe(gm_llm *l, bool minimax) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = inpL, q, k, v;
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        qkv_flat_normed(l, il, cur, &q, &k, &v);
        rope_qk(l, &q, &k, pos, GM_NONE);
        cur = attn_out(l, &inp, q, k, v, il);
        last_rows(l, il, out_ids, &cur, &inpSA);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        gm_moe_args m;
        gm_moe_args_layer(l, il, &m);
        m.norm_w = minimax;
        if (!minimax) m.gating = GM_GATING_SOFTMAX, m.exp_probs_b = GM_NONE;
        cur = gm_build_moe(l, cur, &m, il);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_expand(g, lm_head(l, cur));
}

void gm_arch_olmoe(gm_llm *l) { flat_qk_norm_moe(l, false); }
void gm_arch_minimax_m2(gm_llm *l) { flat_qk_norm_moe(l, true); }

/* phi3.cpp (phimoe's graph): biased norms, LongRoPE factors, q scaled
 * before attention, the residual added first, the output bias */
void gm_arch_phimoe(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t residual = inpL, q, k, v;
        const int32_t factors = rope_factors(l, il);
        int32_t cur = gm_build_norm(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), gm_w(l, "blk.%d.attn_norm.bias", il),
                                    GM_NORM_RMS, il);
        qkv_heads(l, il, cur, &q, &k, &v);
        rope_qk(l, &q, &k, pos, factors);
        q = gm_unary(g, GM_OP_SCALE, q);
        cur = attn_out(l, &inp, q, k, v, il);
        last_rows(l, il, out_ids, &cur, &residual);
        cur = gm_binary(g, GM_OP_ADD, cur, residual);
        residual = cur;
        cur = gm_build_norm(l, cur, gm_w(l, "blk.%d.ffn_norm.weight", il), gm_w(l, "blk.%d.ffn_norm.bias", il),
                            GM_NORM_RMS, il);
        gm_moe_args m;
        gm_moe_args_layer(l, il, &m);
        m.norm_w = true, m.gating = GM_GATING_SOFTMAX, m.exp_probs_b = GM_NONE;
        cur = gm_build_moe(l, cur, &m, il);
        inpL = gm_binary(g, GM_OP_ADD, residual, cur);
    }
    int32_t cur = gm_build_norm(l, inpL, gm_w(l, "output_norm.weight", 0), gm_w(l, "output_norm.bias", 0), GM_NORM_RMS, -1);
    cur = lm_head(l, cur);
    const int32_t output_b = gm_w(l, "output.bias", 0);
    if (output_b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, output_b);
    l->t_logits = cur;
    gm_expand(g, cur);
}

/* ernie4-5-moe.cpp: experts every n_moe_layer_step-th layer after the dense
 * lead, softmax router with the selection bias, normalized; the shared
 * expert where the model has one */
void gm_arch_ernie4_5_moe(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = inpL, q, k, v;
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        qkv_heads(l, il, cur, &q, &k, &v);
        rope_qk(l, &q, &k, pos, GM_NONE);
        cur = attn_out(l, &inp, q, k, v, il);
        last_rows(l, il, out_ids, &cur, &inpSA);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        const bool moe = (uint32_t)il >= hp->n_layer_dense_lead && hp->n_moe_layer_step &&
                         (uint32_t)(il + 1) % hp->n_moe_layer_step == 0;
        if (!moe) {
            const gm_ffn_args f = gm_ffn_layer(l, il, GM_FFN_SILU);
            cur = gm_build_ffn_args(l, cur, &f);
        } else {
            gm_moe_args m;
            gm_moe_args_layer(l, il, &m);
            m.norm_w = true, m.gating = GM_GATING_SOFTMAX;
            cur = gm_build_moe_shexp(l, cur, &m, hp->n_ff_shexp > 0 ? GM_SHEXP_PLAIN : GM_SHEXP_NONE, il);
        }
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_expand(g, lm_head(l, cur));
}

/* granite.cpp (granite's and granitemoe's graph): the embedding, residual
 * and logit scales of muP, dense or routed FFN with an optional shared
 * expert */
void gm_arch_granite(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    if (hp->f_embedding_scale != 0.0f) {
        inpL = gm_unary(g, GM_OP_SCALE, inpL);
        gm_expand(g, inpL);
    }
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = inpL, q, k, v;
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        qkv_heads(l, il, cur, &q, &k, &v);
        rope_qk(l, &q, &k, pos, rope_factors(l, il));
        cur = attn_out(l, &inp, q, k, v, il);
        last_rows(l, il, out_ids, &cur, &inpSA);
        if (hp->f_residual_scale != 0.0f) cur = gm_unary(g, GM_OP_SCALE, cur);
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        if (gm_w(l, "blk.%d.ffn_gate_inp.weight", il) == GM_NONE) {
            const gm_ffn_args f = gm_ffn_layer(l, il, GM_FFN_SILU);
            cur = gm_build_ffn_args(l, cur, &f);
        } else {
            gm_moe_args m;
            gm_moe_args_layer(l, il, &m);
            m.norm_w = true, m.gating = GM_GATING_SOFTMAX, m.exp_probs_b = GM_NONE;
            cur = gm_build_moe_shexp(l, cur, &m, hp->n_ff_shexp > 0 ? GM_SHEXP_PLAIN : GM_SHEXP_NONE, il);
        }
        if (hp->f_residual_scale != 0.0f) cur = gm_unary(g, GM_OP_SCALE, cur);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    cur = gm_unary(g, GM_OP_SCALE, lm_head(l, cur));
    l->t_logits = cur;
    gm_expand(g, cur);
}

/* glm4-moe.cpp: biased q/k/v, optional q/k norms per head, a post-attention
 * norm before the FFN, the dense lead, sigmoid routing with the selection
 * bias plus the shared expert; t_h_nextn is the output norm.  One layer
 * (the trunk's, and the MTP block's, graph_mtp); out_ids GM_NONE: every row */
static int32_t glm4moe_layer(gm_llm *l, const gm_attn_inp *inp, int32_t inpL, int32_t pos, int32_t out_ids, int il) {
    gm_graph *g = l->g;
    int32_t inpSA = inpL, q, k, v;
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    qkv_heads(l, il, cur, &q, &k, &v);
    const int32_t qn = gm_w(l, "blk.%d.attn_q_norm.weight", il), kn = gm_w(l, "blk.%d.attn_k_norm.weight", il);
    if (qn != GM_NONE) q = gm_build_norm_rms(l, q, qn, il);
    if (kn != GM_NONE) k = gm_build_norm_rms(l, k, kn, il);
    rope_qk(l, &q, &k, pos, GM_NONE);
    cur = attn_out(l, inp, q, k, v, il);
    if (out_ids != GM_NONE) {
        cur = gm_get_rows(g, cur, out_ids);
        inpSA = gm_get_rows(g, inpSA, out_ids);
    }
    int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
    cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.post_attention_norm.weight", il), il);
    cur = gm_build_layer_ffn(l, cur, il);
    return gm_binary(g, GM_OP_ADD, cur, ffn_inp);
}

void gm_arch_glm4moe(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++)
        inpL = glm4moe_layer(l, &inp, inpL, pos, il == (int)hp->n_layer - 1 ? out_ids : GM_NONE, il);
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_set_output(g, cur); /* t_h_nextn */
    gm_expand(g, lm_head(l, cur));
}

void gm_arch_glm4moe_mtp(gm_llm *l) {
    const int il = (int)l->hp->n_layer;
    int32_t cur = gm_mtp_input(l, il, GM_NORM_RMS);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    cur = glm4moe_layer(l, &inp, cur, pos, GM_NONE, il);
    gm_expand(l->g, gm_mtp_head(l, cur, il, out_ids, GM_NORM_RMS, false));
}

/* hy-v3.cpp: q/k norms per head, rope factors, the dense lead, sigmoid
 * routing plus the shared expert; the trunk keeps every row, the output
 * rows are taken after the output norm (t_h_nextn) */
static int32_t hy_v3_layer(gm_llm *l, const gm_attn_inp *inp, int32_t inpL, int32_t pos, int il) {
    gm_graph *g = l->g;
    int32_t q, k, v;
    const int32_t factors = rope_factors(l, il);
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    qkv_heads(l, il, cur, &q, &k, &v);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    rope_qk(l, &q, &k, pos, factors);
    cur = attn_out(l, inp, q, k, v, il);
    int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpL);
    cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
    cur = gm_build_layer_ffn(l, cur, il);
    return gm_binary(g, GM_OP_ADD, cur, ffn_inp);
}

void gm_arch_hy_v3(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) inpL = hy_v3_layer(l, &inp, inpL, pos, il);
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    gm_set_output(g, cur); /* t_h_nextn */
    cur = gm_get_rows(g, cur, out_ids);
    gm_expand(g, lm_head(l, cur));
}

void gm_arch_hy_v3_mtp(gm_llm *l) {
    const int il = (int)l->hp->n_layer;
    int32_t cur = gm_mtp_input(l, il, GM_NORM_RMS);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    cur = hy_v3_layer(l, &inp, cur, pos, il);
    gm_expand(l->g, gm_mtp_head(l, cur, il, out_ids, GM_NORM_RMS, false));
}

/* ------------------------------------------------------------------------ */
/* Sliding-window MoE decoders                                               */
/* ------------------------------------------------------------------------ */

/* step35.cpp: q/k/v flat then reshaped, optional q/k norms per head, rope
 * with factors on full layers, attention without its projection, the
 * per-head sigmoid gate, then wo; the dense lead and experts with the
 * shared expert; the output rows are taken before the output norm */
static int32_t step35_layer(gm_llm *l, const gm_attn_inp *base, const gm_attn_inp *swa, int32_t inpL, int32_t pos,
                            int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n = l->ub.n_tokens, head_k = hp->head_k_full, head_v = hp->head_v_full;
    const int64_t nh = hp->n_head[il], nkv = hp->n_head_kv[il];
    const int64_t heads[3] = { head_k, head_k, head_v }, n_heads[3] = { nh, nkv, nkv };
    int32_t q, k, v;
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    gm_build_qkv_ex(l, il, cur, heads, n_heads, false, &q, &k, &v);
    q = gm_reshape_3d(g, q, head_k, nh, n);
    k = gm_reshape_3d(g, k, head_k, nkv, n);
    v = gm_reshape_3d(g, v, head_v, nkv, n);
    const int32_t qn = gm_w(l, "blk.%d.attn_q_norm.weight", il), kn = gm_w(l, "blk.%d.attn_k_norm.weight", il);
    if (qn != GM_NONE) q = gm_build_norm_rms(l, q, qn, il);
    if (kn != GM_NONE) k = gm_build_norm_rms(l, k, kn, il);
    rope_qk(l, &q, &k, pos, hp->is_swa[il] ? GM_NONE : rope_factors(l, il));
    const gm_attn_args a = { .wo = GM_NONE, .wo_b = GM_NONE, .q = q, .k = k, .v = v, .kq_b = GM_NONE,
                             .sinks = GM_NONE, .v_mla = GM_NONE, .iswa = true };
    int32_t attn = gm_build_attn_args(l, hp->is_swa[il] ? swa : base, &a, il);
    const int32_t wgate = gm_w(l, "blk.%d.attn_gate.weight", il);
    if (wgate != GM_NONE) {
        int32_t gate = gm_unary(g, GM_OP_UNARY, gm_build_lora_mm(l, wgate, cur));
        int32_t a3 = gm_reshape_3d(g, attn, head_v, nh, n);
        a3 = gm_binary(g, GM_OP_MUL, a3, gm_reshape_3d(g, gate, 1, nh, n));
        attn = gm_reshape_2d(g, a3, head_v * nh, n);
    }
    cur = gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_output.weight", il), attn);
    int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpL);
    cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
    cur = gm_build_layer_ffn(l, cur, il);
    return gm_binary(g, GM_OP_ADD, cur, ffn_inp);
}

void gm_arch_step35(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) inpL = step35_layer(l, &base, &swa, inpL, pos, il);
    gm_set_output(g, inpL); /* t_h_nextn */
    int32_t cur = gm_get_rows(g, inpL, out_ids);
    cur = gm_build_norm_rms(l, cur, gm_w(l, "output_norm.weight", 0), -1);
    gm_expand(g, lm_head(l, cur));
}

void gm_arch_step35_mtp(gm_llm *l) {
    const int il = (int)l->hp->n_layer;
    int32_t cur = gm_mtp_input(l, il, GM_NORM_RMS);
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    cur = step35_layer(l, &base, &swa, cur, pos, il);
    gm_expand(l->g, gm_mtp_head(l, cur, il, gm_inp_out_ids(l), GM_NORM_RMS, true));
}

/* cohere2moe.cpp: parallel attention and FFN from one norm (a layer norm
 * when the model gives no RMS epsilon), rope on the sliding-window layers
 * and the dense lead (always in the MTP block), the shared expert averaged
 * with the routed ones, the residual added twice; the output rows are taken
 * after the output norm, the logits scaled */
static int32_t cohere2moe_layer(gm_llm *l, const gm_attn_inp *base, const gm_attn_inp *swa, int32_t inpL, int32_t pos,
                                bool rope, int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t q, k, v;
    int32_t cur = gm_build_norm(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), GM_NONE,
                                hp->layer_norm ? GM_NORM_LAYER : GM_NORM_RMS, il);
    const int32_t ffn_in = cur;
    qkv_heads(l, il, cur, &q, &k, &v);
    if (rope) rope_qk(l, &q, &k, pos, rope_factors(l, il));
    const gm_attn_args a = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                             .wo_b = gm_w(l, "blk.%d.attn_output.bias", il), .q = q, .k = k, .v = v,
                             .kq_b = GM_NONE, .sinks = GM_NONE, .v_mla = GM_NONE, .iswa = true };
    const int32_t attn = gm_build_attn_args(l, hp->is_swa[il] ? swa : base, &a, il);
    if (gm_w(l, "blk.%d.ffn_gate_inp.weight", il) == GM_NONE) {
        gm_ffn_args f = gm_ffn_layer(l, il, GM_FFN_SILU);
        f.up_b = f.gate_b = f.down_b = GM_NONE;
        cur = gm_build_ffn_args(l, ffn_in, &f);
    } else {
        gm_moe_args m;
        gm_moe_args_layer(l, il, &m);
        m.exp_probs_b = GM_NONE;
        cur = gm_build_moe(l, ffn_in, &m, il);
        if (gm_w(l, "blk.%d.ffn_up_shexp.weight", il) != GM_NONE) {
            const gm_ffn_args s = gm_ffn_shexp(l, il);
            cur = gm_binary(g, GM_OP_ADD, cur, gm_build_ffn_args(l, ffn_in, &s));
            cur = gm_unary(g, GM_OP_SCALE, cur);
        }
    }
    cur = gm_binary(g, GM_OP_ADD, cur, inpL);
    return gm_binary(g, GM_OP_ADD, cur, attn);
}

static int32_t logit_scale(gm_llm *l, int32_t cur) {
    if (l->hp->f_logit_scale != 0.0f) cur = gm_unary(l->g, GM_OP_SCALE, cur);
    l->t_logits = cur;
    return cur;
}

void gm_arch_cohere2moe(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const gm_norm_type norm = hp->layer_norm ? GM_NORM_LAYER : GM_NORM_RMS;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++)
        inpL = cohere2moe_layer(l, &base, &swa, inpL, pos, hp->is_swa[il] || (uint32_t)il < hp->n_layer_dense_lead, il);
    int32_t cur = gm_build_norm(l, inpL, gm_w(l, "output_norm.weight", 0), GM_NONE, norm, -1);
    gm_set_output(g, cur); /* t_h_nextn */
    cur = gm_get_rows(g, cur, out_ids);
    gm_expand(g, logit_scale(l, lm_head(l, cur)));
}

void gm_arch_cohere2moe_mtp(gm_llm *l) {
    const int il = (int)l->hp->n_layer;
    const gm_norm_type norm = l->hp->layer_norm ? GM_NORM_LAYER : GM_NORM_RMS;
    int32_t cur = gm_mtp_input(l, il, norm);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    cur = cohere2moe_layer(l, &base, &swa, cur, pos, true, il);
    gm_expand(l->g, logit_scale(l, gm_mtp_head(l, cur, il, out_ids, norm, false)));
}

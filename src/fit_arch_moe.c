/*
 * fit_arch_moe.c - the graphs of the mixture-of-experts decoders with a
 * standard attention (src/models/<arch>.cpp): gpt-oss, qwen2moe, olmoe,
 * ernie4_5-moe, minimax-m2, glm4moe, hy_v3, step35, cohere2moe.  (phimoe
 * and granitemoe are phi3's and granite's graphs, fit_arch_dense.c: they
 * route through the same block.)
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
#include "fit_block_moe.h"

/* ------------------------------------------------------------------------ */
/* Shared pieces                                                             */
/* ------------------------------------------------------------------------ */

/* the head-size asserts most graphs open with: n_embd_head_v == _k (and == n_rot) */
static bool heads_equal(gm_llm *l, bool and_rot) {
    const gm_hparams *hp = l->hp;
    return gm_assert(l, hp->head_v_full == hp->head_k_full, "n_embd_head == hparams.n_embd_head_k()") &&
           (!and_rot || gm_assert(l, hp->head_v_full == hp->n_rot_full, "n_embd_head == n_rot"));
}

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
        const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                                 .wo_b = gm_w(l, "blk.%d.attn_output.bias", il), .kq_b = GM_NONE,
                                 .sinks = gm_w(l, "blk.%d.attn_sinks.weight", il), .iswa = true };
        cur = gm_build_attn_opts(l, hp->is_swa[il] ? &swa : &base, &o, q, k, v, il);
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
    gm_build_qkv_heads(l, il, cur, head, n_heads, false, q, k, v);
    *q = gm_build_norm_rms(l, *q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    *k = gm_build_norm_rms(l, *k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    *q = gm_reshape_3d(g, *q, head[0], n_heads[0], n);
    *k = gm_reshape_3d(g, *k, head[1], n_heads[1], n);
    *v = gm_reshape_3d(g, *v, head[2], n_heads[2], n);
}

/* build_attn over the plain cache with the layer's attn_output (and bias) */
static int32_t attn_out(gm_llm *l, const gm_attn_inp *inp, int32_t q, int32_t k, int32_t v, int il) {
    const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                             .wo_b = gm_w(l, "blk.%d.attn_output.bias", il), .kq_b = GM_NONE, .sinks = GM_NONE };
    return gm_build_attn_opts(l, inp, &o, q, k, v, il);
}

/* ------------------------------------------------------------------------ */
/* The llama-style MoE decoders: one frame, the differences as a row         */
/* ------------------------------------------------------------------------ */

/* What tells qwen2moe, olmoe, minimax-m2, ernie4_5-moe and glm4moe apart:
 * Q/K/V with their norms, the FFN norm's name, the FFN, and whether the
 * output norm is t_h_nextn (a graph output). */
typedef struct moe_decoder {
    void (*qkv)(gm_llm *l, int il, int32_t cur, int32_t *q, int32_t *k, int32_t *v);
    const char *ffn_norm;
    gm_layer_ffn_fn ffn;
    bool h_nextn;
    bool rot_is_head;        /* GGML_ASSERT(n_embd_head == n_rot) too */
} moe_decoder;

/* one layer: norm, Q/K/V, rope, attention, the residual (the output rows
 * when out_ids is given: the trunk's last layer), the FFN norm, the FFN,
 * the residual */
static int32_t decoder_layer(gm_llm *l, const moe_decoder *d, const gm_attn_inp *inp, int32_t inpL, int32_t pos,
                             int32_t out_ids, int il) {
    int32_t q, k, v;
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    d->qkv(l, il, cur, &q, &k, &v);
    rope_qk(l, &q, &k, pos, GM_NONE);
    cur = attn_out(l, inp, q, k, v, il);
    return gm_build_ffn_residual(l, cur, inpL, out_ids, d->ffn_norm, d->ffn, il);
}

static void decoder(gm_llm *l, const moe_decoder *d) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    if (!heads_equal(l, d->rot_is_head)) return;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++)
        inpL = decoder_layer(l, d, &inp, inpL, pos, il == (int)hp->n_layer - 1 ? out_ids : GM_NONE, il);
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    if (d->h_nextn) gm_set_output(g, cur); /* t_h_nextn */
    gm_expand(g, lm_head(l, cur));
}

/* glm4-moe.cpp: optional q/k norms per head after build_qkv */
static void qkv_heads_normed(gm_llm *l, int il, int32_t cur, int32_t *q, int32_t *k, int32_t *v) {
    qkv_heads(l, il, cur, q, k, v);
    const int32_t qn = gm_w(l, "blk.%d.attn_q_norm.weight", il), kn = gm_w(l, "blk.%d.attn_k_norm.weight", il);
    if (qn != GM_NONE) *q = gm_build_norm_rms(l, *q, qn, il);
    if (kn != GM_NONE) *k = gm_build_norm_rms(l, *k, kn, il);
}

/* the layer's routed experts with the options of an architecture that
 * reads no routing keys: softmax, no selection bias, normalized or not */
static int32_t softmax_moe(gm_llm *l, int32_t cur, int il, bool norm_w, gm_shexp_kind shexp) {
    gm_moe_args m;
    gm_moe_args_layer(l, il, &m);
    m.norm_w = norm_w, m.gating = GM_GATING_SOFTMAX, m.exp_probs_b = GM_NONE;
    return gm_build_moe_shexp(l, cur, &m, shexp, il);
}

/* qwen2moe.cpp: unnormalized, the shared expert gated by a sigmoid */
static int32_t qwen2moe_ffn(gm_llm *l, int32_t cur, int il) { return softmax_moe(l, cur, il, false, GM_SHEXP_GATED); }

/* olmoe.cpp: unnormalized, no shared expert */
static int32_t olmoe_ffn(gm_llm *l, int32_t cur, int il) { return softmax_moe(l, cur, il, false, GM_SHEXP_NONE); }

/* minimax-m2.cpp: the model's gating with the selection bias, normalized */
static int32_t minimax_m2_ffn(gm_llm *l, int32_t cur, int il) {
    gm_moe_args m;
    gm_moe_args_layer(l, il, &m);
    m.norm_w = true;
    return gm_build_moe(l, cur, &m, il);
}

/* ernie4-5-moe.cpp: experts every n_moe_layer_step-th layer after the
 * dense lead, softmax with the selection bias, normalized; the shared
 * expert where the model has one (n_ff_shexp) */
static int32_t ernie4_5_moe_ffn(gm_llm *l, int32_t cur, int il) {
    const gm_hparams *hp = l->hp;
    const bool moe = (uint32_t)il >= hp->n_layer_dense_lead && hp->n_moe_layer_step &&
                     (uint32_t)(il + 1) % hp->n_moe_layer_step == 0;
    if (!moe) {
        const gm_ffn_w f = gm_ffn_weights(l, "ffn", il);
        return gm_build_ffn_il(l, cur, &f, GM_FFN_SILU, GM_FFN_PAR, il);
    }
    gm_moe_args m;
    gm_moe_args_layer(l, il, &m);
    m.norm_w = true, m.gating = GM_GATING_SOFTMAX;
    return gm_build_moe_shexp(l, cur, &m, hp->n_ff_shexp > 0 ? GM_SHEXP_PLAIN : GM_SHEXP_NONE, il);
}

static const moe_decoder QWEN2MOE = { qkv_heads, "blk.%d.ffn_norm.weight", qwen2moe_ffn, false, true };
static const moe_decoder OLMOE = { qkv_flat_normed, "blk.%d.ffn_norm.weight", olmoe_ffn, false, true };
static const moe_decoder MINIMAX_M2 = { qkv_flat_normed, "blk.%d.ffn_norm.weight", minimax_m2_ffn, false, false };
static const moe_decoder ERNIE4_5_MOE = { qkv_heads, "blk.%d.ffn_norm.weight", ernie4_5_moe_ffn, false, true };
/* glm4-moe.cpp: a post-attention norm before the FFN, the dense lead,
 * sigmoid routing with the selection bias plus the shared expert; the
 * output norm is t_h_nextn */
static const moe_decoder GLM4MOE = { qkv_heads_normed, "blk.%d.post_attention_norm.weight", gm_build_layer_ffn, true,
                                     false };

void gm_arch_qwen2moe(gm_llm *l) { decoder(l, &QWEN2MOE); }
void gm_arch_olmoe(gm_llm *l) { decoder(l, &OLMOE); }
void gm_arch_minimax_m2(gm_llm *l) { decoder(l, &MINIMAX_M2); }
void gm_arch_ernie4_5_moe(gm_llm *l) {
    if (gm_assert(l, l->hp->n_moe_layer_step > 0, "hparams.n_moe_layer_step > 0")) decoder(l, &ERNIE4_5_MOE);
}
void gm_arch_glm4moe(gm_llm *l) { decoder(l, &GLM4MOE); }

/* glm4-moe.cpp graph_mtp: the NextN input, the trunk's layer (every row),
 * the NextN head */
void gm_arch_glm4moe_mtp(gm_llm *l) {
    const int il = (int)l->hp->n_layer;
    if (!heads_equal(l, false)) return;
    int32_t cur = gm_build_mtp_eh_proj(l, il);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    cur = decoder_layer(l, &GLM4MOE, &inp, cur, pos, GM_NONE, il);
    gm_expand(l->g, gm_mtp_head(l, cur, il, out_ids, true, false));
}

/* hy-v3.cpp: q/k norms per head, rope factors, the dense lead, sigmoid
 * routing plus the shared expert; the trunk keeps every row, the output
 * rows are taken after the output norm (t_h_nextn) */
static int32_t hy_v3_layer(gm_llm *l, const gm_attn_inp *inp, int32_t inpL, int32_t pos, int il) {
    int32_t q, k, v;
    const int32_t factors = gm_rope_factors(l, il);
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
    qkv_heads(l, il, cur, &q, &k, &v);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    rope_qk(l, &q, &k, pos, factors);
    cur = attn_out(l, inp, q, k, v, il);
    return gm_build_ffn_residual(l, cur, inpL, GM_NONE, "blk.%d.ffn_norm.weight", NULL, il);
}

void gm_arch_hy_v3(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    if (!heads_equal(l, true)) return;
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
    if (!heads_equal(l, true)) return;
    int32_t cur = gm_build_mtp_eh_proj(l, il);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    cur = hy_v3_layer(l, &inp, cur, pos, il);
    gm_expand(l->g, gm_mtp_head(l, cur, il, out_ids, true, false));
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
    gm_build_qkv_heads(l, il, cur, heads, n_heads, false, &q, &k, &v);
    q = gm_reshape_3d(g, q, head_k, nh, n);
    k = gm_reshape_3d(g, k, head_k, nkv, n);
    v = gm_reshape_3d(g, v, head_v, nkv, n);
    const int32_t qn = gm_w(l, "blk.%d.attn_q_norm.weight", il), kn = gm_w(l, "blk.%d.attn_k_norm.weight", il);
    if (qn != GM_NONE) q = gm_build_norm_rms(l, q, qn, il);
    if (kn != GM_NONE) k = gm_build_norm_rms(l, k, kn, il);
    rope_qk(l, &q, &k, pos, hp->is_swa[il] ? GM_NONE : gm_rope_factors(l, il));
    const gm_attn_opts o = { .wo = GM_NONE, .wo_b = GM_NONE, .kq_b = GM_NONE, .sinks = GM_NONE, .iswa = true };
    int32_t attn = gm_build_attn_opts(l, hp->is_swa[il] ? swa : base, &o, q, k, v, il);
    const int32_t wgate = gm_w(l, "blk.%d.attn_gate.weight", il);
    if (wgate != GM_NONE) {
        int32_t gate = gm_unary(g, GM_OP_UNARY, gm_build_lora_mm(l, wgate, cur));
        int32_t a3 = gm_reshape_3d(g, attn, head_v, nh, n);
        a3 = gm_binary(g, GM_OP_MUL, a3, gm_reshape_3d(g, gate, 1, nh, n));
        attn = gm_reshape_2d(g, a3, head_v * nh, n);
    }
    cur = gm_build_lora_mm(l, gm_w(l, "blk.%d.attn_output.weight", il), attn);
    return gm_build_ffn_residual(l, cur, inpL, GM_NONE, "blk.%d.ffn_norm.weight", NULL, il);
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
    int32_t cur = gm_build_mtp_eh_proj(l, il);
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    cur = step35_layer(l, &base, &swa, cur, pos, il);
    gm_expand(l->g, gm_mtp_head(l, cur, il, gm_inp_out_ids(l), true, true));
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
    int32_t cur = gm_build_norm(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), GM_NONE, !hp->layer_norm, il);
    const int32_t ffn_in = cur;
    qkv_heads(l, il, cur, &q, &k, &v);
    if (rope) rope_qk(l, &q, &k, pos, gm_rope_factors(l, il));
    const gm_attn_opts o = { .wo = gm_w(l, "blk.%d.attn_output.weight", il),
                             .wo_b = gm_w(l, "blk.%d.attn_output.bias", il), .kq_b = GM_NONE, .sinks = GM_NONE,
                             .iswa = true };
    const int32_t attn = gm_build_attn_opts(l, hp->is_swa[il] ? swa : base, &o, q, k, v, il);
    if (gm_w(l, "blk.%d.ffn_gate_inp.weight", il) == GM_NONE) {
        gm_ffn_w f = gm_ffn_weights(l, "ffn", il);
        f.up_b = f.gate_b = f.down_b = GM_NONE;
        cur = gm_build_ffn_il(l, ffn_in, &f, GM_FFN_SILU, GM_FFN_PAR, il);
    } else {
        gm_moe_args m;
        gm_moe_args_layer(l, il, &m);
        m.exp_probs_b = GM_NONE;
        cur = gm_build_moe(l, ffn_in, &m, il);
        if (gm_w(l, "blk.%d.ffn_up_shexp.weight", il) != GM_NONE) {
            const gm_ffn_w sw = gm_ffn_shexp_weights(l, il);
            cur = gm_binary(g, GM_OP_ADD, cur, gm_build_ffn_il(l, ffn_in, &sw, GM_FFN_SILU, GM_FFN_PAR, il));
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
    if (!heads_equal(l, true)) return;
    const bool rms = !hp->layer_norm;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++)
        inpL = cohere2moe_layer(l, &base, &swa, inpL, pos, hp->is_swa[il] || (uint32_t)il < hp->n_layer_dense_lead, il);
    int32_t cur = gm_build_norm(l, inpL, gm_w(l, "output_norm.weight", 0), GM_NONE, rms, -1);
    gm_set_output(g, cur); /* t_h_nextn */
    cur = gm_get_rows(g, cur, out_ids);
    gm_expand(g, logit_scale(l, lm_head(l, cur)));
}

void gm_arch_cohere2moe_mtp(gm_llm *l) {
    const int il = (int)l->hp->n_layer;
    if (!heads_equal(l, true)) return;
    const bool rms = !l->hp->layer_norm;
    int32_t cur = gm_build_mtp_eh_proj_norm(l, il, rms);
    int32_t pos = gm_inp_pos(l), out_ids = gm_inp_out_ids(l);
    gm_attn_inp base, swa;
    gm_attn_inp_kv_iswa(l, &base, &swa);
    cur = cohere2moe_layer(l, &base, &swa, cur, pos, true, il);
    gm_expand(l->g, logit_scale(l, gm_mtp_head(l, cur, il, out_ids, rms, false)));
}

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
        gm_build_qkv_ex(l, il, cur, hp->head_k_full, hp->n_head[0], hp->n_head_kv[0], true, &q, &k, &v);
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

/* ------------------------------------------------------------------------ */
/* gemma3n (models/gemma3n.cpp): AltUp, LAuReL, per-layer embeddings         */
/* ------------------------------------------------------------------------ */

/* llama_hparams' fixed AltUp sizes (llama-hparams.h:264-267), and the
 * layers with activation sparsity (models.h: n_layer_sparsity) */
enum { N_ALTUP = 4, I_ALTUP_ACT = 0, N_EMBD_ALTUP = 256, N_LAYER_SPARSITY = 10 };

/* gemma3n_view_2d_slice: plane idx of a [ne0, ne1, ne2] tensor */
static int32_t slice(gm_graph *g, int32_t x, int idx) {
    const gm_tensor *t = &g->t[x];
    return gm_view_2d(g, x, t->ne[0], t->ne[1], t->nb[1], (uint64_t)idx * (uint64_t)(t->ne[0] * t->ne[1]) * t->nb[0]);
}

/* planes 1.. of a [ne0, ne1, n_altup] tensor */
static int32_t rest(gm_graph *g, int32_t x) {
    const gm_tensor *t = &g->t[x];
    const uint64_t plane = (uint64_t)(t->ne[0] * t->ne[1]) * t->nb[0];
    return gm_view_3d(g, x, t->ne[0], t->ne[1], N_ALTUP - 1, t->nb[1], plane, plane);
}

/* calc_magnitude: sqrt(sum_rows(sqr(x))) */
static int32_t magnitude(gm_graph *g, int32_t x) {
    return gm_unary(g, GM_OP_SQRT, gm_sum_rows(g, gm_unary(g, GM_OP_SQR, x)));
}

/* x times the target magnitude over its own (the AltUp projections in and out) */
static int32_t rescale(gm_graph *g, int32_t x, int32_t target) {
    const int32_t own = magnitude(g, x);
    return gm_binary(g, GM_OP_DIV, gm_binary(g, GM_OP_MUL, x, target), own);
}

/* altup_compute_router_modalities (gemma3n.cpp:404-414): [n_altup, T] */
static int32_t modalities(gm_llm *l, int32_t x, int il) {
    int32_t cur = rms(l, x, "blk.%d.altup_router_norm.weight", il);
    cur = gm_unary(l->g, GM_OP_SCALE, cur);
    return gm_unary(l->g, GM_OP_UNARY, gm_mul_mat(l->g, w(l, "blk.%d.altup_router.weight", il), cur));
}

/* altup_predict (:416-438): [n_embd, T, n_altup] */
static int32_t altup_predict(gm_llm *l, int32_t cur, int il) {
    gm_graph *g = l->g;
    const int32_t mod = modalities(l, slice(g, cur, I_ALTUP_ACT), il);
    int32_t coefs = gm_build_lora_mm(l, w(l, "blk.%d.altup_predict_coef.weight", il), mod);
    coefs = gm_reshape_3d(g, coefs, N_ALTUP, N_ALTUP, l->ub.n_tokens);
    const int32_t permuted = gm_cont(g, gm_permute(g, cur, 1, 2, 0, 3));
    int32_t pred = gm_mul_mat(g, permuted, coefs);
    pred = gm_cont(g, gm_permute(g, pred, 0, 2, 1, 3));
    return gm_binary(g, GM_OP_ADD, pred, cur);
}

/* altup_correct (:440-464): [n_embd, T, n_altup] */
static int32_t altup_correct(gm_llm *l, int32_t pred, int32_t activated, int il) {
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    const int32_t mod = modalities(l, activated, il);
    int32_t innovation = gm_binary(g, GM_OP_SUB, activated, slice(g, pred, I_ALTUP_ACT));
    int32_t coefs = gm_build_lora_mm(l, w(l, "blk.%d.altup_correct_coef.weight", il), mod);
    coefs = gm_unary(g, GM_OP_SCALE, coefs); /* ggml_scale_bias: + 1 */
    coefs = gm_cont_4d(g, gm_transpose(g, coefs), 1, n, N_ALTUP, 1);
    innovation = gm_repeat_4d(g, innovation, l->hp->n_embd, n, N_ALTUP, 1);
    return gm_binary(g, GM_OP_ADD, gm_binary(g, GM_OP_MUL, innovation, coefs), pred);
}

/* laurel (:383-392) */
static int32_t laurel(gm_llm *l, int32_t cur, int il) {
    int32_t tmp = gm_build_lora_mm(l, w(l, "blk.%d.laurel_l.weight", il), cur);
    tmp = gm_build_lora_mm(l, w(l, "blk.%d.laurel_r.weight", il), tmp);
    tmp = rms(l, tmp, "blk.%d.laurel_post_norm.weight", il);
    return gm_binary(l->g, GM_OP_ADD, tmp, cur);
}

/* gaussian_topk (:394-400) */
static int32_t gaussian_topk(gm_graph *g, int32_t x) {
    const gm_tensor *t = &g->t[x];
    const int32_t mean = gm_op_shaped(g, GM_OP_MEAN, t->type, 4, (int64_t[4]){ 1, t->ne[1], t->ne[2], t->ne[3] }, &x, 1);
    int32_t std = gm_unary(g, GM_OP_SQR, gm_binary(g, GM_OP_SUB, x, mean));
    std = gm_unary(g, GM_OP_SQRT, gm_unary(g, GM_OP_SCALE, gm_sum_rows(g, std)));
    const int32_t cutoff = gm_binary(g, GM_OP_ADD, mean, gm_unary(g, GM_OP_SCALE, std));
    return gm_unary(g, GM_OP_UNARY, gm_binary(g, GM_OP_SUB, x, cutoff));
}

/* the attention of layer il (:150-205): its own K/V, or (from layer
 * n_layer_kv_from_start) Q alone over an earlier layer's cache */
static int32_t gemma3n_attention(gm_llm *l, const gm_attn_kv_inputs *in, int32_t cur, int32_t pos, int il) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    const int64_t head = hp->head_k_full, n = l->ub.n_tokens;
    int32_t q, k = GM_NONE, v = GM_NONE;
    if (gm_has_kv(hp, (uint32_t)il)) {
        gm_build_qkv_ex(l, il, cur, head, hp->n_head[il], hp->n_head_kv[il], true, &q, &k, &v);
        q = rms(l, q, "blk.%d.attn_q_norm.weight", il);
        k = rms(l, k, "blk.%d.attn_k_norm.weight", il);
        v = gm_unary(g, GM_OP_RMS_NORM, v);
        q = gm_rope(g, q, pos, GM_NONE);
        k = gm_rope(g, k, pos, GM_NONE);
    } else {
        const int32_t wqkv = w(l, "blk.%d.attn_qkv.weight", il);
        if (wqkv != GM_NONE) {
            const int32_t qkv = gm_build_lora_mm(l, wqkv, cur);
            q = gm_cont(g, gm_view_2d(g, qkv, head * hp->n_head[il], n, g->t[qkv].nb[1], 0));
        } else {
            q = gm_build_lora_mm(l, w(l, "blk.%d.attn_q.weight", il), cur);
        }
        q = gm_reshape_3d(g, q, head, hp->n_head[il], n);
        q = gm_rope(g, rms(l, q, "blk.%d.attn_q_norm.weight", il), pos, GM_NONE);
    }
    const gm_attn_opts o = { .wo = w(l, "blk.%d.attn_output.weight", il), .wo_b = GM_NONE, .kq_b = GM_NONE,
                             .sinks = GM_NONE };
    return gm_build_attn_auto(l, in, o, q, k, v, il);
}

/* the per-layer input mixed into the corrected streams (:230-262) */
static int32_t per_layer_mix(gm_llm *l, int32_t corrected, int32_t inp_per_layer, int il) {
    gm_graph *g = l->g;
    int32_t first = gm_binary(g, GM_OP_MUL, slice(g, corrected, I_ALTUP_ACT), w(l, "blk.%d.altup_correct_scale.weight", il));
    first = gm_unary(g, GM_OP_UNARY, gm_build_lora_mm(l, w(l, "blk.%d.inp_gate.weight", il), first));
    first = gm_binary(g, GM_OP_MUL, first, slice(g, inp_per_layer, il));
    first = gm_build_lora_mm(l, w(l, "blk.%d.proj.weight", il), first);
    first = rms(l, first, "blk.%d.post_norm.weight", il);
    const int32_t tmp = gm_binary(g, GM_OP_ADD, rest(g, corrected), first);
    return gm_concat(g, slice(g, corrected, 0), tmp, 2);
}

/* one decoder layer (:126-264) */
static int32_t gemma3n_layer(gm_llm *l, const gm_attn_kv_inputs *in, int32_t inpL, int32_t pos, int32_t inp_per_layer,
                             int il) {
    gm_graph *g = l->g;
    const int32_t pred = altup_predict(l, inpL, il);
    const int32_t active = slice(g, pred, I_ALTUP_ACT);
    int32_t cur = rms(l, active, "blk.%d.attn_norm.weight", il);
    const int32_t laurel_out = laurel(l, cur, il);
    cur = gemma3n_attention(l, in, cur, pos, il);
    cur = rms(l, cur, "blk.%d.post_attention_norm.weight", il);
    cur = gm_binary(g, GM_OP_ADD, cur, active);
    const int32_t attn_laurel = gm_unary(g, GM_OP_SCALE, gm_binary(g, GM_OP_ADD, cur, laurel_out));
    cur = rms(l, attn_laurel, "blk.%d.ffn_norm.weight", il);
    const int32_t up = gm_build_lora_mm(l, w(l, "blk.%d.ffn_up.weight", il), cur);
    int32_t gate = gm_build_lora_mm(l, w(l, "blk.%d.ffn_gate.weight", il), cur);
    if (il < N_LAYER_SPARSITY) gate = gaussian_topk(g, gate);
    cur = gm_binary(g, GM_OP_MUL, up, gm_unary(g, GM_OP_UNARY, gate));
    cur = gm_build_lora_mm(l, w(l, "blk.%d.ffn_down.weight", il), cur);
    cur = gm_build_norm(l, cur, w(l, "blk.%d.post_ffw_norm.weight", il), GM_NONE, true, -1);
    const int32_t gated = gm_binary(g, GM_OP_ADD, cur, attn_laurel);
    return per_layer_mix(l, altup_correct(l, pred, gated, il), inp_per_layer, il);
}

void gm_arch_gemma3n(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    int32_t inpL = gm_unary(g, GM_OP_SCALE, gm_inp_embd(l, w(l, "token_embd.weight", 0)));
    const int32_t pos = gm_inp_pos(l);
    gm_attn_kv_inputs in;
    gm_attn_inp_kv_auto(l, &in);
    const int32_t inp_per_layer = gm_per_layer_inputs(l, inpL, N_EMBD_ALTUP);
    /* the other AltUp streams, projected from the input (:112-124) */
    const int32_t target = magnitude(g, inpL);
    int32_t added = gm_mul_mat(g, w(l, "altup_proj.weight", 0), gm_repeat_4d(g, inpL, hp->n_embd, n, N_ALTUP - 1, 1));
    inpL = gm_concat(g, inpL, rescale(g, added, target), 2);
    for (int il = 0; il < (int)hp->n_layer; il++) inpL = gemma3n_layer(l, &in, inpL, pos, inp_per_layer, il);
    /* the streams merged back (:266-290) */
    const int32_t target_out = magnitude(g, slice(g, inpL, I_ALTUP_ACT));
    const int32_t unembd = rescale(g, gm_mul_mat(g, w(l, "altup_unembd_proj.weight", 0), rest(g, inpL)), target_out);
    int32_t cur = slice(g, inpL, 0);
    for (int i = 0; i < N_ALTUP - 1; i++) cur = gm_binary(g, GM_OP_ADD, cur, slice(g, unembd, i));
    cur = gm_unary(g, GM_OP_SCALE, cur);
    cur = gm_get_rows(g, cur, gm_inp_out_ids(l));
    cur = gm_build_norm(l, cur, w(l, "output_norm.weight", 0), GM_NONE, true, -1);
    l->t_embd = cur;
    cur = soft_cap(g, gm_build_lora_mm(l, gm_w_output(l), cur));
    l->t_logits = cur;
    gm_expand(g, cur);
}

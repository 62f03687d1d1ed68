/*
 * fit_block_attn.c - attention blocks beyond fit_llm.c's cached ones
 * (declared in fit_blocks.h): build_qkv's fused and unreshaped forms, the
 * attention of encoders (no cache: the current K and V over a [T, T]
 * mask), and T5's cross attention and relative position bias.
 */
#include "fit_blocks.h"

enum { T_F32 = 0, T_F16 = 1, T_I32 = 26 };

/* build_qkv with one head size for Q, K and V: gm_build_qkv_heads (fit_llm.c) */
void gm_build_qkv_ex(gm_llm *l, int il, int32_t cur, int64_t head, int64_t n_head, int64_t n_head_kv, bool reshape,
                     int32_t *q, int32_t *k, int32_t *v) {
    const int64_t heads[3] = { head, head, head }, n_heads[3] = { n_head, n_head_kv, n_head_kv };
    gm_build_qkv_heads(l, il, cur, heads, n_heads, reshape, q, k, v);
}

void gm_attn_inp_kv_auto(gm_llm *l, gm_attn_kv_inputs *in) {
    const gm_memory_kind m = l->hp->memory;
    in->iswa = m == GM_MEMORY_KV_ISWA || m == GM_MEMORY_HYBRID_ISWA;
    if (in->iswa) gm_attn_inp_kv_iswa(l, &in->base, &in->swa);
    else gm_attn_inp_kv(l, &l->kv, &in->base);
}

int32_t gm_build_attn_auto(gm_llm *l, const gm_attn_kv_inputs *in, gm_attn_opts o, int32_t q, int32_t k, int32_t v,
                           int il) {
    o.iswa = in->iswa;
    const gm_attn_inp *inp = in->iswa && l->hp->is_swa[il] ? &in->swa : &in->base;
    return gm_build_attn_opts(l, inp, &o, q, k, v, il);
}

int32_t gm_rope_factors(gm_llm *l, int il) {
    int32_t f = gm_w_layer(l, "rope_freqs.weight", il);
    if (f != GM_NONE) return f;
    const bool long_ctx = l->cp->sizes.n_ctx_seq > l->hp->n_ctx_orig_yarn;
    return gm_w_layer(l, long_ctx ? "rope_factors_long.weight" : "rope_factors_short.weight", il);
}

/* ------------------------------------------------------------------------ */
/* Without a cache (encoders)                                                */
/* ------------------------------------------------------------------------ */

void gm_attn_inp_no_cache(gm_llm *l, gm_attn_inp_nc *inp) {
    const int64_t n = l->ub.n_tokens;
    const int32_t type = l->cp->sizes.flash_attn ? T_F16 : T_F32;
    inp->kq_mask = gm_new_4d(l->g, type, n, n, 1, 1);
    gm_set_input(l->g, inp->kq_mask);
    inp->kq_mask_swa = GM_NONE;
    if (l->hp->swa_type != GM_SWA_NONE) {
        inp->kq_mask_swa = gm_new_4d(l->g, type, n, n, 1, 1);
        gm_set_input(l->g, inp->kq_mask_swa);
    }
}

/* the output projection and its bias, as every build_attn ends */
static int32_t project(gm_llm *l, const gm_attn_opts *o, int32_t cur) {
    if (o->wo != GM_NONE) cur = gm_build_lora_mm(l, o->wo, cur);
    if (o->wo_b != GM_NONE) cur = gm_binary(l->g, GM_OP_ADD, cur, o->wo_b);
    return cur;
}

int32_t gm_build_attn_no_cache(gm_llm *l, const gm_attn_inp_nc *inp, const gm_attn_opts *o, int32_t q, int32_t k,
                               int32_t v, int il) {
    gm_expand(l->g, q);
    gm_expand(l->g, k);
    gm_expand(l->g, v);
    const int32_t mask = l->hp->is_swa[il] ? inp->kq_mask_swa : inp->kq_mask;
    return project(l, o, gm_build_attn_mha(l, q, k, v, o->kq_b, mask, o->sinks, o->soft_cap, il));
}

/* ------------------------------------------------------------------------ */
/* T5                                                                        */
/* ------------------------------------------------------------------------ */

static int32_t input(gm_llm *l, int32_t t) {
    gm_set_input(l->g, t);
    return t;
}

int32_t gm_inp_cross_embd(gm_llm *l) { return input(l, gm_new_2d(l->g, T_F32, l->hp->n_embd, l->hp->n_ctx_train)); }

int32_t gm_attn_inp_cross(gm_llm *l) {
    const int32_t type = l->cp->sizes.flash_attn ? T_F16 : T_F32;
    return input(l, gm_new_4d(l->g, type, l->hp->n_ctx_train, l->ub.n_tokens, 1, 1));
}

int32_t gm_inp_pos_bucket_enc(gm_llm *l) { return input(l, gm_new_2d(l->g, T_I32, l->ub.n_tokens, l->ub.n_tokens)); }

int32_t gm_inp_pos_bucket_dec(gm_llm *l, const gm_kv_cache *kv) {
    return input(l, gm_new_2d(l->g, T_I32, kv->kv_size, l->ub.n_tokens));
}

int32_t gm_build_pos_bias(gm_llm *l, int32_t pos_bucket, int32_t attn_rel_b) {
    gm_graph *g = l->g;
    const int64_t ne0 = g->t[pos_bucket].ne[0], ne1 = g->t[pos_bucket].ne[1];
    int32_t bias = gm_get_rows(g, attn_rel_b, gm_reshape_1d(g, pos_bucket, ne0 * ne1));
    bias = gm_reshape_3d(g, bias, g->t[bias].ne[0], ne0, ne1);
    return gm_cont(g, gm_permute(g, bias, 2, 0, 1, 3));
}

int32_t gm_build_attn_cross(gm_llm *l, int32_t kq_mask, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                            int il) {
    gm_expand(l->g, q);
    gm_expand(l->g, k);
    gm_expand(l->g, v);
    return project(l, o, gm_build_attn_mha(l, q, k, v, o->kq_b, kq_mask, o->sinks, o->soft_cap, il));
}

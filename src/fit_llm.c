/*
 * fit_llm.c - the blocks llama.cpp builds its graphs from (llama-graph.cpp,
 * llama-kv-cache.cpp), over the shape-only graph.
 *
 * Each function follows the llama.cpp function it names op for op, in the
 * same order and with the same expansions (ggml_build_forward_expand), since
 * node order decides what the allocator can reuse.  Values (scales, eps,
 * rope parameters) are left out: they change no shape.  Weights are the
 * model's tensors as the placement put them: a tensor in a buffer of the
 * context's type, marked as a weight, so that the scheduler sends ops to
 * the weight's backend.
 */
#include "fit_llm.h"

#include "fit_block_ffn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ggufmap/types.h"

enum { T_F32 = 0, T_F16 = 1, T_I32 = 26, T_I64 = 27 };

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */
/* ------------------------------------------------------------------------ */

static gm_buft buft_of_context(const gm_llm *l, int32_t ctx) {
    const ggufmap_placement *pl = ggufmap_plan_placement(l->fit->plan);
    const ggufmap_context *c = ggufmap_placement_context(pl, (uint32_t)ctx);
    return gm_loc_of((gm_buft_id){c->kind, c->ordinal});
}

static const ggufmap_model *model_of(const gm_llm *l) {
    return ggufmap_placement_model(ggufmap_plan_placement(l->fit->plan));
}

static int32_t weight_tensor(gm_llm *l, int64_t ti, int32_t ctx, int32_t *slot, const int64_t *shape) {
    if (*slot != GM_NONE) return *slot;
    const ggufmap_tensor *t = ggufmap_model_tensor(model_of(l), ti);
    int64_t ne[4] = { t->ne[0], t->ne[1], t->ne[2], t->ne[3] };
    if (shape) ne[0] = shape[0], ne[1] = shape[1], ne[2] = ne[3] = 1;
    *slot = gm_new_buffered(l->g, t->type, ne, buft_of_context(l, ctx), true);
    return *slot;
}

static int64_t find_weight(gm_llm *l, const char *fmt, int il) {
    char name[128];
    snprintf(name, sizeof name, fmt, il);
    int64_t ti = ggufmap_model_find_tensor(model_of(l), name);
    return ti >= 0 && l->ctx_of[ti] >= 0 ? ti : -1;
}

int32_t gm_w(gm_llm *l, const char *fmt, int il) {
    int64_t ti = find_weight(l, fmt, il);
    return ti < 0 ? GM_NONE : weight_tensor(l, ti, l->ctx_of[ti], &l->w[ti], NULL);
}

int32_t gm_w_shaped(gm_llm *l, const char *fmt, int il, int64_t ne0, int64_t ne1) {
    int64_t ti = find_weight(l, fmt, il);
    const int64_t shape[2] = { ne0, ne1 };
    return ti < 0 ? GM_NONE : weight_tensor(l, ti, l->ctx_of[ti], &l->w[ti], shape);
}

/* a tied output reuses token_embd's tensor when both land in one context */
int32_t gm_w_output(gm_llm *l) {
    int32_t out = gm_w(l, "output.weight", 0);
    if (out != GM_NONE) return out;
    int64_t ti = find_weight(l, "token_embd.weight", 0);
    if (ti < 0) return GM_NONE;
    const int32_t ctx = l->dup_ctx_of[ti] >= 0 ? l->dup_ctx_of[ti] : l->ctx_of[ti];
    if (ctx == l->ctx_of[ti]) return weight_tensor(l, ti, ctx, &l->w[ti], NULL);
    return weight_tensor(l, ti, ctx, &l->w_dup[ti], NULL);
}

/* The instance of a weight that layer il's context holds: a TENSOR_DUPLICATED
 * copy (rope_freqs, rope_factors_long/short) lives once per buffer-type
 * context (create_tensor reuses a copy the context already has,
 * llama-model-loader.cpp:1371-1376): the one created for layer il, else the
 * copy on layer il's device (its GPU, or the host), else the weight.  One
 * tensor per context in the graph: w[] for the weight's own context, w_copy[]
 * for the others (one slot per context, several GPUs each their own). */
int32_t gm_w_layer(gm_llm *l, const char *fmt, int il) {
    const int64_t ti = find_weight(l, fmt, il);
    if (ti < 0) return GM_NONE;
    const ggufmap_placement *pl = ggufmap_plan_placement(l->fit->plan);
    const int32_t gpu = gm_fit_layer_gpu(l->fit, (uint32_t)il);
    int32_t ctx = -1;
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        if (in->tensor != ti) continue;
        const ggufmap_context *c = ggufmap_placement_context(pl, in->context);
        if (in->duplicate && in->layer == il) {
            ctx = (int32_t)in->context;
            break;
        }
        if (ctx < 0 && (gpu >= 0 ? c->gpu && c->ordinal == (uint32_t)gpu : !c->gpu)) ctx = (int32_t)in->context;
    }
    if (ctx < 0 || ctx == l->ctx_of[ti]) return gm_w(l, fmt, il);
    return weight_tensor(l, ti, ctx, &l->w_copy[(int64_t)ctx * ggufmap_model_n_tensors(model_of(l)) + ti], NULL);
}

bool gm_assert(gm_llm *l, bool cond, const char *what) {
    if (!cond)
        gm_graph_abort(l->g, "the %s%s graph fails GGML_ASSERT(%s) while the reserve builds it", l->hp->arch_name,
                       l->hp->ctx_mtp ? " MTP draft" : "", what);
    return cond;
}

int gm_layer_backend(const gm_llm *l, int il) {
    const int32_t gpu = gm_fit_layer_gpu(l->fit, (uint32_t)il);
    const gm_buft own = gpu >= 0 ? gm_loc_of((gm_buft_id){GGUFMAP_BUFT_GPU, (uint32_t)gpu}) : GM_BUFT_NONE;
    for (int b = 0; b + 1 < l->be.n; b++)
        if (l->be.buft[b] == own) return b;
    return l->be.n - 1;
}

void gm_cb_norm(gm_llm *l, int32_t t, int il) {
    if (il >= 0 && (l->ub.n_tokens < 32 || l->full_offload)) l->g->t[t].user_backend = (int8_t)gm_layer_backend(l, il);
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */
/* ------------------------------------------------------------------------ */

static int32_t input(gm_llm *l, int32_t t) {
    gm_set_input(l->g, t);
    return t;
}

/* build_inp_embd (llama-graph.cpp:2362-2449): the token rows and, for
 * batches of embeddings, an input of the same shape; both stay in the graph
 * (ggml_build_forward_select) */
int32_t gm_inp_embd(gm_llm *l, int32_t tok_embd) {
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    int32_t tokens = input(l, gm_new_1d(g, T_I32, n));
    int32_t embd = input(l, gm_new_2d(g, T_F32, l->hp->n_embd, n));
    int32_t cur = gm_get_rows(g, tok_embd, tokens);
    gm_expand(g, cur);
    gm_expand(g, embd);
    if (l->hp->f_embedding_scale != 0.0f) cur = gm_unary(g, GM_OP_SCALE, cur); /* granite */
    gm_expand(g, cur);
    return cur;
}

int32_t gm_inp_pos(gm_llm *l) {
    const int64_t per = l->hp->n_pos_per_embd ? l->hp->n_pos_per_embd : 1; /* 4 with M-RoPE */
    return input(l, gm_new_1d(l->g, T_I32, l->ub.n_tokens * per));
}

int32_t gm_inp_out_ids(gm_llm *l) { return input(l, gm_new_1d(l->g, T_I32, l->ub.n_outputs)); }

/* llama_kv_cache's rotation inputs: a Hadamard matrix when a quantized
 * cache's heads are whole multiples of 64 (llama-kv-cache.cpp:307-340, 1437-1475) */
static int32_t rot_input(gm_llm *l, const gm_kv_cache *kv, bool is_k) {
    const gm_hparams *hp = l->hp;
    const int32_t type = is_k ? l->cp->type_k : l->cp->type_v;
    const ggufmap_type_info *t = ggufmap_type(type);
    int64_t head_all = 0;
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        if (kv->k[il] == GM_NONE) continue;
        int64_t h = kv->head_k_override ? kv->head_k_override : is_k ? gm_head_k(hp, il) : gm_head_v(hp, il);
        if (head_all == 0) head_all = h;
        else if (head_all != h) head_all = -1;
    }
    const uint32_t head0 = kv->head_k_override ? kv->head_k_override : is_k ? gm_head_k(hp, 0) : gm_head_v(hp, 0);
    if (kv->k_only && !is_k) return GM_NONE;
    if (!(head_all > 0 && t && t->block_size > 1 && head0 % 64 == 0)) return GM_NONE;
    int64_t nrot = 64;
    if (is_k) {
        do nrot *= 2;
        while (head_all % nrot == 0);
        nrot /= 2;
    }
    return input(l, gm_new_2d(l->g, T_F32, nrot, nrot));
}

/* the row indices, the mask and (with_v) the V indices and rotations of
 * one cache's attention inputs */
static void attn_inputs(gm_llm *l, const gm_kv_cache *kv, gm_attn_inp *inp, bool with_v) {
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    const int64_t n_stream = l->cp->kv_unified ? 1 : l->ub.n_seqs;
    memset(inp, 0, sizeof *inp);
    inp->kv = kv;
    inp->k_idxs = input(l, gm_new_1d(g, T_I64, n));
    inp->v_idxs = !with_v || kv->k_only ? GM_NONE
                                        : input(l, gm_new_1d(g, T_I64, kv->v_trans ? n * gm_n_embd_v_gqa_max(l->hp) : n));
    inp->kq_mask = input(l, gm_new_4d(g, l->cp->sizes.flash_attn ? T_F16 : T_F32, kv->kv_size, n / n_stream, 1, n_stream));
    inp->k_rot = with_v ? rot_input(l, kv, true) : GM_NONE;
    inp->v_rot = with_v ? rot_input(l, kv, false) : GM_NONE;
}

void gm_attn_inp_kv(gm_llm *l, const gm_kv_cache *kv, gm_attn_inp *inp) { attn_inputs(l, kv, inp, true); }

/* build_attn_inp_k (llama-graph.cpp:2926-2953): a cache of keys only (MLA):
 * row indices and the mask, no V indices, no rotation */
void gm_attn_inp_k(gm_llm *l, const gm_kv_cache *kv, gm_attn_inp *inp) { attn_inputs(l, kv, inp, false); }

/* build_attn_inp_kv_iswa (llama-graph.cpp:3391-3422): the base inputs, then the SWA ones */
void gm_attn_inp_kv_iswa(gm_llm *l, gm_attn_inp *base, gm_attn_inp *swa) {
    gm_attn_inp_kv(l, &l->kv, base);
    gm_attn_inp_kv(l, &l->kv_swa, swa);
}

/* ------------------------------------------------------------------------ */
/* Blocks                                                                    */
/* ------------------------------------------------------------------------ */

int32_t gm_build_lora_mm(gm_llm *l, int32_t w, int32_t cur) { return gm_mul_mat(l->g, w, cur); }

/* build_norm, LLM_NORM_RMS: rms_norm ("norm"), times the weight */
int32_t gm_build_norm_rms(gm_llm *l, int32_t cur, int32_t w, int il) {
    return gm_build_norm(l, cur, w, GM_NONE, true, il);
}

static uint64_t row_size(int32_t type, int64_t n) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return (uint64_t)t->type_size * (uint64_t)(n / t->block_size);
}

/* build_qkv (llama-graph.cpp:1633-1745): the fused projection (attn_qkv and
 * its bias, or the three separate biases concatenated) cut into views, or
 * the separate projections with their biases; reshaped to heads, or with
 * reshape false flat (the fused views made contiguous).  head[] and
 * n_heads[] are Q's, K's and V's. */
void gm_build_qkv_heads(gm_llm *l, int il, int32_t cur, const int64_t head[3], const int64_t n_heads[3], bool reshape,
                        int32_t *q, int32_t *k, int32_t *v) {
    static const char *const w_names[3] = { "blk.%d.attn_q.weight", "blk.%d.attn_k.weight", "blk.%d.attn_v.weight" };
    static const char *const b_names[3] = { "blk.%d.attn_q.bias", "blk.%d.attn_k.bias", "blk.%d.attn_v.bias" };
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    int32_t *out[3] = { q, k, v };
    const int32_t wqkv = gm_w(l, "blk.%d.attn_qkv.weight", il);
    if (wqkv != GM_NONE) {
        int32_t qkv = gm_build_lora_mm(l, wqkv, cur);
        int32_t bias = gm_w(l, "blk.%d.attn_qkv.bias", il);
        const int32_t qb = gm_w(l, b_names[0], il), kb = gm_w(l, b_names[1], il), vb = gm_w(l, b_names[2], il);
        if (bias == GM_NONE && qb != GM_NONE && kb != GM_NONE && vb != GM_NONE)
            bias = gm_concat(g, gm_concat(g, qb, kb, 0), vb, 0);
        if (bias != GM_NONE) qkv = gm_binary(g, GM_OP_ADD, qkv, bias);
        const int32_t type = g->t[qkv].type;
        const uint64_t nb1 = g->t[qkv].nb[1];
        uint64_t offs = 0;
        for (int i = 0; i < 3; i++) {
            *out[i] = reshape ? gm_view_3d(g, qkv, head[i], n_heads[i], n, row_size(type, head[i]), nb1, offs)
                              : gm_view_2d(g, qkv, head[i] * n_heads[i], n, nb1, offs);
            offs += row_size(type, head[i] * n_heads[i]);
        }
        if (!reshape)
            for (int i = 0; i < 3; i++) *out[i] = gm_cont(g, *out[i]);
        return;
    }
    for (int i = 0; i < 3; i++) {
        *out[i] = gm_build_lora_mm(l, gm_w(l, w_names[i], il), cur);
        const int32_t bias = gm_w(l, b_names[i], il);
        if (bias != GM_NONE) *out[i] = gm_binary(g, GM_OP_ADD, *out[i], bias);
    }
    if (reshape)
        for (int i = 0; i < 3; i++) *out[i] = gm_reshape_3d(g, *out[i], head[i], n_heads[i], n);
}

void gm_build_qkv(gm_llm *l, int il, int32_t cur, int64_t head_k, int64_t n_head, int64_t n_head_kv, int64_t head_v,
                  int32_t *q, int32_t *k, int32_t *v) {
    const int64_t head[3] = { head_k, head_k, head_v }, n_heads[3] = { n_head, n_head_kv, n_head_kv };
    gm_build_qkv_heads(l, il, cur, head, n_heads, true, q, k, v);
}

/* llama_mul_mat_hadamard (llama-impl.h:57-74) */
static int32_t mul_mat_hadamard(gm_graph *g, int32_t cur, int32_t rot) {
    const int64_t n = g->t[rot].ne[0];
    const gm_tensor *c = &g->t[cur];
    const int64_t ne[4] = { c->ne[0], c->ne[1], c->ne[2], c->ne[3] };
    const int64_t elems = ne[0] * ne[1] * ne[2] * ne[3];
    int32_t r = gm_is_contiguous(g, cur) ? gm_reshape_2d(g, cur, n, elems / n) : gm_cont_2d(g, cur, n, elems / n);
    r = gm_mul_mat(g, rot, r);
    return gm_reshape_4d(g, r, ne[0], ne[1], ne[2], ne[3]);
}

/* llama_kv_cache::cpy_k (llama-kv-cache.cpp:1318-1351) */
static int32_t cpy_k(gm_llm *l, const gm_kv_cache *kv, int32_t k_cur, int32_t k_idxs, int il) {
    gm_graph *g = l->g;
    const gm_tensor *kc = &g->t[k_cur];
    const int64_t n_embd_gqa = kc->ne[0] * kc->ne[1], n = kc->ne[2];
    int32_t cur = gm_view_2d(g, k_cur, n_embd_gqa, n, g->t[k_cur].nb[2], 0);
    int32_t k = kv->k[il];
    if (g->t[k].ne[2] > 1) k = gm_reshape_2d(g, k, n_embd_gqa, kv->kv_size * g->t[k].ne[2]);
    return gm_set_rows(g, k, cur, k_idxs);
}

/* llama_kv_cache::cpy_v (:1353-1407): rows, or one element per row when V is transposed */
static int32_t cpy_v(gm_llm *l, const gm_kv_cache *kv, int32_t v_cur, int32_t v_idxs, int il) {
    gm_graph *g = l->g;
    const gm_tensor *vc = &g->t[v_cur];
    const int64_t n_embd_gqa = vc->ne[0] * vc->ne[1], n = vc->ne[2];
    int32_t v = kv->v[il];
    const int64_t n_stream = g->t[v].ne[2];
    if (!kv->v_trans) {
        int32_t cur = gm_view_2d(g, v_cur, n_embd_gqa, n, g->t[v_cur].nb[2], 0);
        if (n_stream > 1) v = gm_reshape_2d(g, v, n_embd_gqa, kv->kv_size * n_stream);
        return gm_set_rows(g, v, cur, v_idxs);
    }
    int32_t cur = row_size(g->t[v_cur].type, n_embd_gqa) == g->t[v_cur].nb[2] ? gm_reshape_2d(g, v_cur, n_embd_gqa, n)
                                                                             : gm_cont_2d(g, v_cur, n_embd_gqa, n);
    if (n_embd_gqa < g->t[v].ne[0]) cur = gm_pad_tensor(g, cur, (int)(g->t[v].ne[0] - n_embd_gqa), 0, 0, 0);
    const gm_tensor *vt = &g->t[v];
    int32_t view = gm_reshape_2d(g, v, 1, vt->ne[0] * vt->ne[1] * vt->ne[2] * vt->ne[3]);
    const gm_tensor *ct = &g->t[cur];
    cur = gm_reshape_2d(g, cur, 1, ct->ne[0] * ct->ne[1] * ct->ne[2] * ct->ne[3]);
    return gm_set_rows(g, view, cur, v_idxs);
}

/* llama_kv_cache::get_k / get_v (:1266-1316) over the whole cache */
static int32_t get_k(gm_llm *l, const gm_kv_cache *kv, int il) {
    gm_graph *g = l->g;
    const int32_t k = kv->k[il];
    const int32_t type = g->t[k].type;
    const int64_t n_embd_gqa = g->t[k].ne[0], ns = g->t[k].ne[2];
    const int64_t head = kv->head_k_override ? kv->head_k_override : gm_head_k(l->hp, (uint32_t)il);
    const int64_t n_head_kv = kv->head_k_override ? 1 : l->hp->n_head_kv[il];
    return gm_view_4d(g, k, head, n_head_kv, kv->kv_size, ns, row_size(type, head), row_size(type, n_embd_gqa),
                      row_size(type, n_embd_gqa * kv->kv_size), 0);
}

static int32_t get_v(gm_llm *l, const gm_kv_cache *kv, int il) {
    gm_graph *g = l->g;
    const int32_t v = kv->v[il];
    const int32_t type = g->t[v].type;
    const int64_t n_embd_gqa = g->t[v].ne[0], ns = g->t[v].ne[2], size = kv->kv_size;
    const int64_t head = gm_head_v(l->hp, (uint32_t)il), n_head_kv = l->hp->n_head_kv[il];
    if (!kv->v_trans)
        return gm_view_4d(g, v, head, n_head_kv, size, ns, row_size(type, head), row_size(type, n_embd_gqa),
                          row_size(type, n_embd_gqa * size), 0);
    return gm_view_4d(g, v, size, n_head_kv, head, ns, row_size(type, size * head), row_size(type, size),
                      row_size(type, size * n_embd_gqa), 0);
}

/* build_attn_mha (llama-graph.cpp:2602-2738): flash attention unless off
 * or a KQ bias is given; without it the scores, soft-capped, biased,
 * soft-maxed (with the sinks), times V; MLA's V decompression (v_mla)
 * after either */
static int32_t attn_mha(gm_llm *l, int32_t q, int32_t k, int32_t v, int32_t kq_b, int32_t kq_mask, int32_t sinks,
                        int32_t v_mla, bool soft_cap, int il) {
    gm_graph *g = l->g;
    const bool v_trans = g->t[v].nb[1] > g->t[v].nb[2];
    const int64_t n_stream = g->t[k].ne[3];
    const gm_tensor *qt = &g->t[q];
    q = gm_view_4d(g, q, qt->ne[0], qt->ne[1], qt->ne[2] / n_stream, n_stream, qt->nb[1], qt->nb[2],
                   qt->nb[3] / (uint64_t)n_stream, 0);
    q = gm_permute(g, q, 0, 2, 1, 3);
    k = gm_permute(g, k, 0, 2, 1, 3);
    v = gm_permute(g, v, 0, 2, 1, 3);
    int32_t cur;
    if (l->cp->sizes.flash_attn && kq_b == GM_NONE) {
        if (v_trans) v = gm_transpose(g, v);
        if (g->t[k].type == T_F32) k = gm_cast(g, k, T_F16);
        if (g->t[v].type == T_F32) v = gm_cast(g, v, T_F16);
        cur = gm_flash_attn_ext(g, q, k, v, kq_mask, sinks);
        if (il >= 0) g->t[cur].il = (int16_t)il; /* add_fused_node (llama-graph.cpp:2645) */
        if (v_mla != GM_NONE) {
            cur = gm_permute(g, cur, 0, 2, 1, 3);
            cur = gm_mul_mat(g, v_mla, cur);
            cur = gm_permute(g, cur, 0, 2, 1, 3);
            cur = gm_cont(g, cur);
        }
        const gm_tensor *c = &g->t[cur];
        cur = gm_reshape_2d(g, cur, c->ne[0] * c->ne[1], c->ne[2] * c->ne[3]);
    } else {
        int32_t kq = gm_mul_mat(g, k, q);
        if (soft_cap) {
            kq = gm_unary(g, GM_OP_SCALE, kq);
            kq = gm_unary(g, GM_OP_UNARY, kq);
            kq = gm_unary(g, GM_OP_SCALE, kq);
        }
        if (kq_b != GM_NONE) kq = gm_binary(g, GM_OP_ADD, kq, kq_b);
        kq = gm_soft_max_ext(g, kq, kq_mask, sinks);
        if (!v_trans) v = gm_cont(g, gm_transpose(g, v));
        int32_t kqv = gm_mul_mat(g, v, kq);
        if (v_mla != GM_NONE) kqv = gm_mul_mat(g, v_mla, kqv);
        cur = gm_permute(g, kqv, 0, 2, 1, 3);
        const gm_tensor *c = &g->t[cur];
        cur = gm_cont_2d(g, cur, c->ne[0] * c->ne[1], c->ne[2] * c->ne[3]);
        if (!l->cp->offload_kqv) g->t[cur].user_backend = (int8_t)(l->be.n - 1);
    }
    gm_expand(g, cur);
    return cur;
}

int32_t gm_build_attn_mha(gm_llm *l, int32_t q, int32_t k, int32_t v, int32_t kq_b, int32_t kq_mask, int32_t sinks,
                          bool soft_cap, int il) {
    return attn_mha(l, q, k, v, kq_b, kq_mask, sinks, GM_NONE, soft_cap, il);
}

/* build_attn over a cache (llama-graph.cpp:2851-2930 with
 * llm_graph_input_attn_kv, :3089-3170 with the iswa pair, :2955-3010 with
 * llm_graph_input_attn_k): rotate, expand q and v then k (iswa: q, k, v;
 * k and v may be absent on a layer that reads another's cache), store K
 * and V (K only when the cache has no V: V is then a view of K's first
 * v->ne[0] values), attend (v_mla: MLA's decompression), project with wo
 * and its bias. */
int32_t gm_build_attn_mla(gm_llm *l, const gm_attn_inp *inp, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                          int32_t v_mla, int il) {
    gm_graph *g = l->g;
    if (inp->k_rot != GM_NONE) {
        q = mul_mat_hadamard(g, q, inp->k_rot);
        if (k != GM_NONE) k = mul_mat_hadamard(g, k, inp->k_rot);
    }
    if (inp->v_rot != GM_NONE && v != GM_NONE) v = mul_mat_hadamard(g, v, inp->v_rot);
    gm_expand(g, q);
    if (o->iswa) {
        if (k != GM_NONE) gm_expand(g, k);
        if (v != GM_NONE) gm_expand(g, v);
    } else {
        gm_expand(g, v);
        gm_expand(g, k);
    }
    const bool k_only = inp->v_idxs == GM_NONE;
    if (k != GM_NONE) gm_expand(g, cpy_k(l, inp->kv, k, inp->k_idxs, il));
    if (v != GM_NONE && !k_only) gm_expand(g, cpy_v(l, inp->kv, v, inp->v_idxs, il));
    int32_t kv_k = get_k(l, inp->kv, il), kv_v;
    if (k_only) {
        const gm_tensor *kt = &g->t[kv_k];
        kv_v = gm_view_4d(g, kv_k, g->t[v].ne[0], kt->ne[1], kt->ne[2], kt->ne[3], kt->nb[1], kt->nb[2], kt->nb[3], 0);
    } else {
        kv_v = get_v(l, inp->kv, il);
    }
    int32_t cur = attn_mha(l, q, kv_k, kv_v, o->kq_b, inp->kq_mask, o->sinks, v_mla, o->soft_cap, il);
    if (inp->v_rot != GM_NONE) cur = mul_mat_hadamard(g, cur, inp->v_rot);
    if (o->wo != GM_NONE) cur = gm_build_lora_mm(l, o->wo, cur);
    if (o->wo_b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, o->wo_b);
    return cur;
}

int32_t gm_build_attn_opts(gm_llm *l, const gm_attn_inp *inp, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                           int il) {
    return gm_build_attn_mla(l, inp, o, q, k, v, GM_NONE, il);
}

/* build_attn's top-k mask (llama-graph.cpp:3041-3071): -inf everywhere,
 * zeros set at the top-k cells of each query, plus the mask */
int32_t gm_kq_mask_top_k(gm_llm *l, int32_t kq_mask, int32_t top_k) {
    gm_graph *g = l->g;
    int32_t all = gm_fill(g, kq_mask);
    const gm_tensor *a = &g->t[all];
    all = gm_view_4d(g, all, 1, a->ne[0], a->ne[1], a->ne[3], a->nb[0], a->nb[1], a->nb[2], 0);
    const gm_tensor *t = &g->t[top_k];
    int32_t top3 = gm_view_4d(g, top_k, t->ne[0], t->ne[1], t->ne[3], 1, t->nb[1], t->nb[2], (uint64_t)t->ne[3] * t->nb[3], 0);
    int32_t zeros = gm_new_4d(g, T_F32, 1, g->t[top3].ne[0], g->t[top3].ne[1], g->t[top3].ne[2]);
    zeros = gm_fill(g, zeros);
    int32_t m = gm_set_rows(g, all, zeros, top3);
    const gm_tensor *mt = &g->t[m];
    m = gm_view_4d(g, m, mt->ne[1], mt->ne[2], 1, mt->ne[3], mt->nb[2], mt->nb[3], mt->nb[3], 0);
    return gm_binary(g, GM_OP_ADD, m, kq_mask);
}

int32_t gm_cache_cpy_k(gm_llm *l, const gm_kv_cache *kv, int32_t k_cur, int32_t k_idxs, int il) {
    return cpy_k(l, kv, k_cur, k_idxs, il);
}

int32_t gm_cache_get_k(gm_llm *l, const gm_kv_cache *kv, int il) { return get_k(l, kv, il); }

int32_t gm_build_attn_ex(gm_llm *l, const gm_attn_inp *inp, int32_t wo, int32_t q, int32_t k, int32_t v, int il,
                         bool soft_cap, bool iswa) {
    const gm_attn_opts o = { .wo = wo, .wo_b = GM_NONE, .kq_b = GM_NONE, .sinks = GM_NONE, .soft_cap = soft_cap, .iswa = iswa };
    return gm_build_attn_opts(l, inp, &o, q, k, v, il);
}

int32_t gm_build_attn(gm_llm *l, const gm_attn_inp *inp, int32_t wo, int32_t q, int32_t k, int32_t v, int il,
                      bool soft_cap) {
    return gm_build_attn_ex(l, inp, wo, q, k, v, il, soft_cap, false);
}

/* build_ffn, type_gate LLM_FFN_PAR: up, gate, swiglu/geglu(gate, up), down */
int32_t gm_build_ffn(gm_llm *l, int32_t cur, int32_t up, int32_t gate, int32_t down, bool gelu) {
    const gm_ffn_w w = { .up = up, .up_b = GM_NONE, .gate = gate, .gate_b = GM_NONE, .down = down, .down_b = GM_NONE };
    return gm_build_ffn_ex(l, cur, &w, gelu ? GM_FFN_GELU : GM_FFN_SILU, GM_FFN_PAR);
}

/* llm_graph_result::set_outputs: logits and embeddings are graph outputs */
void gm_set_outputs(gm_llm *l) {
    if (l->t_logits != GM_NONE) gm_set_output(l->g, l->t_logits);
    if (l->t_embd != GM_NONE) gm_set_output(l->g, l->t_embd);
}

int32_t gm_build_norm(gm_llm *l, int32_t cur, int32_t w, int32_t b, bool rms, int il) {
    cur = gm_unary(l->g, rms ? GM_OP_RMS_NORM : GM_OP_NORM, cur);
    if (w != GM_NONE || b != GM_NONE) gm_cb_norm(l, cur, il);
    if (w != GM_NONE) cur = gm_binary(l->g, GM_OP_MUL, cur, w);
    if (b != GM_NONE) cur = gm_binary(l->g, GM_OP_ADD, cur, b);
    return cur;
}

int32_t gm_build_mtp_eh_proj_norm(gm_llm *l, int il, bool rms) {
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    int32_t tokens = input(l, gm_new_1d(g, T_I32, n));
    /* the input's embd tensor is left out: the reserve's ubatch has tokens */
    int32_t embd_w = gm_w(l, "blk.%d.nextn.embed_tokens.weight", il);
    int32_t tok = gm_get_rows(g, embd_w != GM_NONE ? embd_w : gm_w(l, "token_embd.weight", 0), tokens);
    int32_t h = input(l, gm_new_2d(g, T_F32, l->hp->n_embd, n));
    int32_t h_norm = gm_build_norm(l, h, gm_w(l, "blk.%d.nextn.hnorm.weight", il), GM_NONE, rms, il);
    int32_t e_norm = gm_build_norm(l, tok, gm_w(l, "blk.%d.nextn.enorm.weight", il), GM_NONE, rms, il);
    return gm_build_lora_mm(l, gm_w(l, "blk.%d.nextn.eh_proj.weight", il), gm_concat(g, e_norm, h_norm, 0));
}

int32_t gm_build_mtp_eh_proj(gm_llm *l, int il) { return gm_build_mtp_eh_proj_norm(l, il, true); }

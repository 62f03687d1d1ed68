/*
 * fit_arch_qwen4exp.c - the graph of qwen4exp (src/models/qwen4exp.cpp):
 * hyper-connections (hc parallel residual streams mixed before each block),
 * gated delta-net recurrent layers, every full_attention_interval-th layer
 * a gated attention whose visible cells an indexer picks (QSA), routed and
 * shared experts, and an n-gram per-layer embedding on one layer.
 *
 * The fused ops llama.cpp enables by default (DSV4 hyper-connection pre and
 * post, the gated delta net) are taken as enabled: every device modelled
 * runs them, so llama_context::resolve_fused_ops keeps them.
 */
#include "fit_block_rs.h"

#include <stdio.h>

#include "ggufmap/types.h"

enum { T_F32 = 0, T_I32 = 26 };

/* bytes of n f32 values (the activations here are all f32) */
static uint64_t f32s(int64_t n) { return (uint64_t)n * 4u; }

/* the recurrent memory's inputs (build_rs_inp_impl) and, per graph, the row
 * gathers already built per state tensor (build_conv_state_at's rs_rows) */
typedef struct q4 {
    gm_llm *l;
    gm_rs_inp rs;
    int32_t rows_of[GM_MAX_LAYERS][2];      /* [il][0]: the r rows, [1]: the PLE rows */
    int32_t qsa_inp[5];                      /* k_idxs, cell_blk, blk_cells, blk_pos, bias (ratio 4: one set) */
    int64_t qsa_ratio;
    gm_attn_inp attn;
} q4;

/* build_conv_state_at (qwen4exp.cpp:1120-1170): the history rows, the
 * convolution input, and the new tail written back */
static int32_t conv_state_at(q4 *c, int32_t states_all, int which, int il, int32_t x, int64_t cols, int64_t channels) {
    gm_graph *g = c->l->g;
    const int64_t n_seqs = c->l->ub.n_seqs;
    const int64_t row_total = g->t[states_all].ne[0];
    if (c->rows_of[il][which] == GM_NONE) c->rows_of[il][which] = gm_build_rs(c->l, &c->rs, states_all, row_total);
    int32_t state = gm_reshape_3d(g, c->rows_of[il][which], cols, channels, n_seqs);
    int32_t input = gm_concat(g, state, gm_transpose(g, x), 0);
    /* once per rollback slot, slot s ending s tokens earlier (:1159-1179) */
    const int64_t n_slots = 1 + (int64_t)c->l->cp->n_rs_seq, mem_size = c->l->cp->sizes.n_seq_max;
    const uint64_t row = g->t[states_all].nb[1];
    for (int64_t slot = 0; slot < n_slots; slot++) {
        const int64_t s_idx = g->t[input].ne[0] - cols - slot > 0 ? g->t[input].ne[0] - cols - slot : 0;
        int32_t tail = gm_view_3d(g, input, cols, channels, n_seqs, g->t[input].nb[1], g->t[input].nb[2],
                                  (uint64_t)s_idx * 4);
        int32_t dst = gm_view_2d(g, states_all, cols * channels, n_seqs, row, (uint64_t)(slot * mem_size) * row);
        gm_expand(g, gm_cpy(g, gm_cont(g, tail), dst));
    }
    return input;
}

/* ------------------------------------------------------------------------ */
/* Hyper-connections                                                         */
/* ------------------------------------------------------------------------ */

/* The weights of one hyper-connection mixer: norm, down, up, inject. */
static const char *const HC_ATTN[4] = { "blk.%d.hc_attn_norm.weight", "blk.%d.hc_attn_down.weight",
                                        "blk.%d.hc_attn_up.weight", "blk.%d.hc_attn_inject.weight" };
static const char *const HC_FFN[4] = { "blk.%d.hc_ffn_norm.weight", "blk.%d.hc_ffn_down.weight",
                                       "blk.%d.hc_ffn_up.weight", "blk.%d.hc_ffn_inject.weight" };
static const char *const HC_HEAD[4] = { "output_hc_norm.weight", "output_hc_down.weight", "output_hc_up.weight", NULL };

/* build_hc_mix (:267-322): mixed [n_embd, T]; *inject [hc, T] when asked;
 * the layers' mixers are fused (DSV4_HC_PRE), the head's (il -1) is not */
static int32_t hc_mix(q4 *c, int32_t x, const char *const w[4], int il, int32_t *inject) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const int64_t n_embd = l->hp->n_embd, hc = l->hp->hc_mult, nt = g->t[x].ne[2];
    int32_t xn = gm_binary(g, GM_OP_MUL, gm_unary(g, GM_OP_RMS_NORM, x), gm_w_shaped(l, w[0], il, n_embd, hc));
    xn = gm_reshape_2d(g, xn, hc * n_embd, nt);
    int32_t lo = gm_mul_mat(g, gm_w(l, w[1], il), xn);
    lo = gm_unary(g, GM_OP_UNARY, gm_unary(g, GM_OP_SCALE, lo));
    int32_t gate = gm_mul_mat(g, gm_w(l, w[2], il), lo);
    int32_t mixed;
    if (il >= 0) {
        const int32_t srcs[2] = { gm_reshape_3d(g, xn, n_embd, hc, nt), gm_reshape_3d(g, gate, n_embd, hc, nt) };
        mixed = gm_op_shaped(g, GM_OP_CUSTOM, T_F32, 2, (int64_t[4]){ n_embd, nt }, srcs, 2);
    } else {
        int32_t gated = gm_binary(g, GM_OP_MUL, xn, gm_unary(g, GM_OP_UNARY, gate));
        gated = gm_reshape_3d(g, gated, n_embd, hc, nt);
        const uint64_t nb1 = (uint64_t)n_embd * 4 * (uint64_t)hc;
        mixed = gm_cont(g, gm_view_2d(g, gated, n_embd, nt, nb1, 0));
        for (int64_t k = 1; k < hc && (k == 1 || !g->oom); k++)
            mixed = gm_binary(g, GM_OP_ADD, mixed, gm_view_2d(g, gated, n_embd, nt, nb1, f32s(k * n_embd)));
        mixed = gm_unary(g, GM_OP_SCALE, mixed);
    }
    if (inject) *inject = gm_mul_mat(g, gm_w(l, w[3], il), xn);
    return mixed;
}

/* build_hc_combine, fused (:324-350): [n_embd, hc, T] */
static int32_t hc_combine(q4 *c, int32_t residual, int32_t block_out, int32_t inject) {
    gm_graph *g = c->l->g;
    int32_t w = gm_unary(g, GM_OP_UNARY, gm_unary(g, GM_OP_SCALE, inject));
    w = gm_unary(g, GM_OP_SCALE, w);
    const gm_tensor *r = &g->t[residual];
    const int32_t srcs[3] = { block_out, residual, w };
    return gm_op_shaped(g, GM_OP_CUSTOM, T_F32, 3, (int64_t[4]){ r->ne[0], r->ne[1], g->t[block_out].ne[1] }, srcs, 3);
}

/* ------------------------------------------------------------------------ */
/* Per-layer n-gram embedding                                                */
/* ------------------------------------------------------------------------ */

/* build_inp_ple (:1172-1190) */
static int32_t inp_ple(q4 *c) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    int32_t rows = gm_new_1d(g, T_I32, (int64_t)hp->ple_n_heads * l->ub.n_tokens);
    gm_set_input(g, rows);
    int32_t emb = gm_get_rows(g, gm_w(l, "per_layer_token_embd.weight", 0), rows);
    return gm_reshape_2d(g, emb, (int64_t)hp->ple_head_dim * hp->ple_n_heads, l->ub.n_tokens);
}

static int32_t grouped_norm(q4 *c, int32_t x, const char *w, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const int64_t n_embd = l->hp->n_embd, hc = l->hp->hc_mult;
    int32_t t = gm_reshape_3d(g, x, n_embd, hc, l->ub.n_tokens);
    return gm_binary(g, GM_OP_MUL, gm_unary(g, GM_OP_RMS_NORM, t), gm_w_shaped(l, w, il, n_embd, hc));
}

/* the depthwise dilated causal convolution as a sum of shifted copies (:1240-1290) */
static int32_t ple_conv(q4 *c, int32_t padded, int il, int64_t hc_dim) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const int64_t kern = l->hp->ple_conv_kernel, dil = l->hp->ple_ngram_size, hist = (kern - 1) * dil;
    const int64_t n_seqs = l->ub.n_seqs, n_seq_tokens = l->ub.n_seq_tokens;
    int32_t w = gm_w(l, "blk.%d.ple_conv1d.weight", il), out = GM_NONE;
    for (int64_t k = 0; k < kern && (k == 0 || !g->oom); k++) {
        const int64_t start = hist - (kern - 1 - k) * dil;
        const gm_tensor *p = &g->t[padded];
        int32_t shifted = gm_view_3d(g, padded, n_seq_tokens, hc_dim, n_seqs, p->nb[1], p->nb[2], (uint64_t)start * 4);
        shifted = gm_cont(g, gm_transpose(g, shifted));
        int32_t wk = gm_cont(g, gm_view_2d(g, w, 1, hc_dim, g->t[w].nb[1], (uint64_t)k * g->t[w].nb[0]));
        wk = gm_reshape_1d(g, wk, hc_dim);
        if (g->t[wk].type != T_F32) wk = gm_cast(g, wk, T_F32);
        int32_t term = gm_binary(g, GM_OP_MUL, shifted, wk);
        out = out == GM_NONE ? term : gm_binary(g, GM_OP_ADD, out, term);
    }
    out = gm_unary(g, GM_OP_UNARY, out);
    return gm_reshape_3d(g, gm_cont(g, out), l->hp->n_embd, l->hp->hc_mult, l->ub.n_tokens);
}

/* build_ple (:1192-1290) */
static int32_t build_ple(q4 *c, int32_t emb, int32_t hidden, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const int64_t n_embd = l->hp->n_embd, hc = l->hp->hc_mult, hc_dim = hc * n_embd, n = l->ub.n_tokens;
    int32_t key = gm_mul_mat(g, gm_w(l, "blk.%d.ple_key.weight", il), emb);
    int32_t value = gm_mul_mat(g, gm_w(l, "blk.%d.ple_value.weight", il), emb);
    key = grouped_norm(c, key, "blk.%d.ple_norm_key.weight", il);
    int32_t query = grouped_norm(c, hidden, "blk.%d.ple_norm_query.weight", il);
    int32_t s = gm_sum_rows(g, gm_binary(g, GM_OP_MUL, key, query));
    s = gm_unary(g, GM_OP_SCALE, s);
    int32_t mag = gm_unary(g, GM_OP_SQRT, gm_unary(g, GM_OP_CLAMP, gm_unary(g, GM_OP_UNARY, s)));
    int32_t gate = gm_unary(g, GM_OP_UNARY, gm_binary(g, GM_OP_MUL, gm_unary(g, GM_OP_UNARY, s), mag));
    int32_t v3 = gm_repeat_4d(g, gm_reshape_3d(g, value, n_embd, 1, n), n_embd, hc, n, 1);
    int32_t gated = gm_binary(g, GM_OP_MUL, v3, gate);
    int32_t normalized = grouped_norm(c, gm_reshape_2d(g, gated, hc_dim, n), "blk.%d.ple_norm_conv.weight", il);
    normalized = gm_reshape_2d(g, normalized, hc_dim, n);
    const int64_t hist = ((int64_t)l->hp->ple_conv_kernel - 1) * l->hp->ple_ngram_size;
    int32_t padded = conv_state_at(c, l->rs_p[il], 1, il, gm_reshape_3d(g, normalized, hc_dim, l->ub.n_seq_tokens, l->ub.n_seqs),
                                   hist, hc_dim);
    int32_t conv_out = ple_conv(c, padded, il, hc_dim);
    return gm_binary(g, GM_OP_ADD, hidden, gm_binary(g, GM_OP_ADD, gated, conv_out));
}

/* ------------------------------------------------------------------------ */
/* Gated delta-net layers                                                    */
/* ------------------------------------------------------------------------ */

/* build_layer_attn_linear (:855-990) with the fused gated delta net */
static int32_t attn_linear(q4 *c, int32_t cur, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n_seqs = l->ub.n_seqs, nst = l->ub.n_seq_tokens;
    const int64_t hk = hp->ssm_d_state, nk = hp->ssm_n_group, nv = hp->ssm_dt_rank, hv = hp->ssm_d_state;
    const int64_t channels = hk * nk * 2 + hv * nv;
    int32_t qkv = gm_mul_mat(g, gm_w(l, "blk.%d.attn_qkv.weight", il), cur);
    qkv = gm_reshape_3d(g, qkv, g->t[qkv].ne[0], nst, n_seqs);
    int32_t z = gm_mul_mat(g, gm_w(l, "blk.%d.attn_gate.weight", il), cur);
    int32_t beta, gate;
    gm_build_gdn_beta_gate(l, cur, il, &beta, &gate);
    int32_t conv_w = gm_w(l, "blk.%d.ssm_conv1d.weight", il);
    int32_t input = conv_state_at(c, l->rs_r[il], 0, il, qkv, g->t[conv_w].ne[0] - 1, channels);
    return gm_build_gdn(l, &c->rs, input, z, beta, gate, il, GM_GDN_REPEAT_NONE);
}

/* ------------------------------------------------------------------------ */
/* Attention layers with the indexer                                         */
/* ------------------------------------------------------------------------ */

static void qsa_inputs(q4 *c, int64_t r, int64_t n_kv, int64_t n_stream, int64_t n_tps) {
    gm_graph *g = c->l->g;
    const int64_t n_blocks = (n_kv + r - 1) / r;
    if (c->qsa_ratio == r) return;
    c->qsa_ratio = r;
    c->qsa_inp[0] = gm_new_1d(g, 27, c->l->ub.n_tokens); /* the indexer cache's k_idxs, i64 */
    c->qsa_inp[1] = gm_new_2d(g, T_I32, n_kv, n_stream);
    c->qsa_inp[2] = gm_new_2d(g, T_I32, r * n_blocks, n_stream);
    c->qsa_inp[3] = gm_new_1d(g, T_I32, 4 * n_blocks * n_stream);
    c->qsa_inp[4] = gm_new_3d(g, T_F32, n_blocks, n_tps, n_stream);
    for (int i = 0; i < 5; i++) gm_set_input(g, c->qsa_inp[i]);
}

/* pooled, normed, roped block keys [idx_dim, n_blocks, n_stream] */
static int32_t qsa_pooled_keys(q4 *c, int32_t cur, int64_t r, int64_t n_blocks, int64_t n_stream, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const int64_t idx_dim = l->hp->indexer_head_size, n_kv = l->kv_idx.kv_size;
    int32_t k_raw = gm_mul_mat(g, gm_w(l, "blk.%d.indexer.k_proj.weight", il), cur);
    k_raw = gm_reshape_3d(g, k_raw, idx_dim, 1, l->ub.n_tokens);
    int32_t kc = l->kv_idx.k[il];
    int32_t set = gm_set_rows(g, g->t[kc].ne[2] > 1 ? gm_reshape_2d(g, kc, idx_dim, n_kv * g->t[kc].ne[2]) : kc,
                              gm_view_2d(g, k_raw, idx_dim, l->ub.n_tokens, g->t[k_raw].nb[2], 0), c->qsa_inp[0]);
    gm_expand(g, set);
    const ggufmap_type_info *ti = ggufmap_type(g->t[kc].type);
    const uint64_t row = (uint64_t)ti->type_size * (uint64_t)(idx_dim / ti->block_size);
    int32_t k_all = gm_view_4d(g, kc, idx_dim, 1, n_kv, n_stream, row, row, row * (uint64_t)n_kv, 0);
    k_all = gm_view_3d(g, k_all, idx_dim, n_kv, n_stream, g->t[k_all].nb[2], g->t[k_all].nb[3], 0);
    int32_t members = gm_reshape_4d(g, gm_get_rows(g, k_all, c->qsa_inp[2]), idx_dim, r, n_blocks, n_stream);
    int32_t pooled = GM_NONE;
    for (int64_t i = 0; i < r && (i == 0 || !g->oom); i++) { /* r of 2^32: the compute context is full long before */
        const gm_tensor *m = &g->t[members];
        int32_t slice = gm_cont(g, gm_view_3d(g, members, idx_dim, n_blocks, n_stream, m->nb[2], m->nb[3], (uint64_t)i * m->nb[1]));
        pooled = pooled == GM_NONE ? slice : gm_binary(g, GM_OP_ADD, pooled, slice);
    }
    pooled = gm_unary(g, GM_OP_SCALE, pooled);
    pooled = gm_reshape_3d(g, pooled, idx_dim, n_blocks * n_stream, 1);
    pooled = gm_build_norm_rms(l, pooled, gm_w(l, "blk.%d.indexer.k_norm.weight", il), il);
    pooled = gm_reshape_3d(g, pooled, idx_dim, 1, n_blocks * n_stream);
    pooled = gm_rope(g, pooled, c->qsa_inp[3], GM_NONE);
    return gm_reshape_3d(g, pooled, idx_dim, n_blocks, n_stream);
}

/* build_qsa_top_k (:543-680): the cells each query may see [width, n_tps, 1, n_stream] */
static int32_t qsa_top_k(q4 *c, int32_t cur, int32_t pos, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t idx_dim = hp->indexer_head_size, n_h = hp->indexer_n_head, r = hp->compress_ratio[il];
    const int64_t n_kv = l->kv_idx.kv_size, n_blocks = (n_kv + r - 1) / r;
    const int64_t n_stream = l->cp->sizes.n_stream, n_tps = l->ub.n_tokens / n_stream;
    qsa_inputs(c, r, n_kv, n_stream, n_tps);
    int32_t pooled = qsa_pooled_keys(c, cur, r, n_blocks, n_stream, il);
    int32_t q = gm_mul_mat(g, gm_w(l, "blk.%d.indexer.q_proj.weight", il), cur);
    q = gm_reshape_3d(g, q, idx_dim, n_h, l->ub.n_tokens);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.indexer.q_norm.weight", il), il);
    q = gm_rope(g, q, pos, GM_NONE);
    int32_t score = gm_mul_mat(g, pooled, gm_reshape_3d(g, q, idx_dim, n_h * n_tps, n_stream));
    score = gm_unary(g, GM_OP_UNARY, gm_reshape_4d(g, score, n_blocks, n_h, n_tps, n_stream));
    int32_t summed = GM_NONE;
    for (int64_t h = 0; h < n_h && (h == 0 || !g->oom); h++) {
        const gm_tensor *s = &g->t[score];
        int32_t slice = gm_view_3d(g, score, n_blocks, n_tps, n_stream, s->nb[2], s->nb[3], (uint64_t)h * s->nb[1]);
        summed = summed == GM_NONE ? gm_cont(g, slice) : gm_binary(g, GM_OP_ADD, summed, slice);
    }
    score = gm_binary(g, GM_OP_ADD, summed, c->qsa_inp[4]);
    int32_t expanded = gm_get_rows(g, gm_cont(g, gm_permute(g, score, 1, 0, 2, 3)), c->qsa_inp[1]);
    expanded = gm_cont(g, gm_permute(g, expanded, 1, 0, 2, 3));
    int32_t mask = c->attn.kq_mask;
    if (g->t[mask].type != T_F32) mask = gm_cast(g, mask, T_F32);
    expanded = gm_binary(g, GM_OP_ADD, expanded, gm_reshape_3d(g, mask, n_kv, n_tps, n_stream));
    const int64_t width = n_kv < (int64_t)hp->indexer_top_k + r - 1 ? n_kv : (int64_t)hp->indexer_top_k + r - 1;
    int32_t top_k = gm_cont(g, gm_top_k(g, expanded, width));
    return gm_reshape_4d(g, top_k, width, n_tps, 1, n_stream);
}

/* build_attn_qsa (:682-776): the KQ mask opened on the top-k cells */
static int32_t attn_qsa(q4 *c, int32_t q, int32_t k, int32_t v, int32_t top_k, int il) {
    gm_llm *l = c->l;
    gm_attn_inp masked = c->attn;
    masked.kq_mask = gm_kq_mask_top_k(l, c->attn.kq_mask, top_k);
    return gm_build_attn(l, &masked, GM_NONE, q, k, v, il, false);
}

/* build_layer_attn (:778-853) */
static int32_t attn_full(q4 *c, int32_t cur, int32_t pos, int il) {
    gm_llm *l = c->l;
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->head_v_full, n_head = hp->n_head[0], n_head_kv = hp->n_head_kv[0], n = l->ub.n_tokens;
    const bool qsa = l->kv_idx.present && hp->compress_ratio[il] > 0;
    int32_t top_k = qsa ? qsa_top_k(c, cur, pos, il) : GM_NONE;
    int32_t q_full = gm_mul_mat(g, gm_w(l, "blk.%d.attn_q.weight", il), cur);
    int32_t q = gm_view_3d(g, q_full, head, n_head, n, f32s(head * 2), f32s(head * 2 * n_head), 0);
    q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
    int32_t k = gm_mul_mat(g, gm_w(l, "blk.%d.attn_k.weight", il), cur);
    int32_t v = gm_mul_mat(g, gm_w(l, "blk.%d.attn_v.weight", il), cur);
    k = gm_reshape_3d(g, k, head, n_head_kv, n);
    k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
    int32_t gate = gm_view_3d(g, q_full, head, n_head, n, f32s(head * 2), f32s(head * 2 * n_head), f32s(head));
    gate = gm_cont_2d(g, gate, head * n_head, n);
    v = gm_reshape_3d(g, v, head, n_head_kv, n);
    q = gm_rope(g, q, pos, GM_NONE);
    k = gm_rope(g, k, pos, GM_NONE);
    cur = top_k != GM_NONE ? attn_qsa(c, q, k, v, top_k, il) : gm_build_attn(l, &c->attn, GM_NONE, q, k, v, il, false);
    cur = gm_binary(g, GM_OP_MUL, cur, gm_unary(g, GM_OP_UNARY, gate));
    return gm_mul_mat(g, gm_w(l, "blk.%d.attn_output.weight", il), cur);
}

/* ------------------------------------------------------------------------ */
/* The graph (:352-458)                                                      */
/* ------------------------------------------------------------------------ */

static void hybrid_inputs(q4 *c) {
    gm_llm *l = c->l;
    gm_inp_mem_hybrid(l, &c->rs, &c->attn);
}

/* the last layer keeps the output rows only (:401-410) */
static void last_rows(gm_graph *g, int32_t out_ids, int32_t *cur, int32_t *inject, int32_t *res_hc, int64_t n_embd,
                      int64_t hc) {
    *cur = gm_get_rows(g, *cur, out_ids);
    *inject = gm_get_rows(g, *inject, out_ids);
    int32_t r = gm_reshape_2d(g, *res_hc, n_embd * hc, g->t[*res_hc].ne[2]);
    r = gm_get_rows(g, r, out_ids);
    *res_hc = gm_reshape_3d(g, r, n_embd, hc, g->t[r].ne[1]);
}

void gm_arch_qwen4exp(gm_llm *l) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t n_embd = hp->n_embd, hc = hp->hc_mult, n = l->ub.n_tokens;
    q4 c = { .l = l, .qsa_ratio = 0 };
    for (uint32_t il = 0; il < GM_MAX_LAYERS; il++) c.rows_of[il][0] = c.rows_of[il][1] = GM_NONE;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    hybrid_inputs(&c);
    int32_t pos = gm_inp_pos(l);
    int32_t out_ids = gm_inp_out_ids(l);
    int32_t ple_emb = GM_NONE;
    if (hp->ple_n_heads > 0) {
        ple_emb = inp_ple(&c);
        gm_expand(g, ple_emb);
    }
    int32_t res_hc = gm_repeat_4d(g, gm_reshape_3d(g, inpL, n_embd, 1, n), n_embd, hc, n, 1);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        if (hp->is_ple[il]) res_hc = build_ple(&c, ple_emb, res_hc, il);
        int32_t inject;
        int32_t cur = hc_mix(&c, res_hc, HC_ATTN, il, &inject);
        gm_expand(g, cur);
        cur = hp->is_recr[il] ? attn_linear(&c, cur, il) : attn_full(&c, cur, pos, il);
        if (il == (int)hp->n_layer - 1) last_rows(g, out_ids, &cur, &inject, &res_hc, n_embd, hc);
        res_hc = hc_combine(&c, res_hc, cur, inject);
        cur = hc_mix(&c, res_hc, HC_FFN, il, &inject);
        cur = gm_build_moe_shexp_gated(l, cur, il); /* build_layer_ffn (:992-1038) */
        res_hc = hc_combine(&c, res_hc, cur, inject);
        gm_cb_norm(l, res_hc, il); /* "l_last" */
    }
    int32_t cur = hc_mix(&c, res_hc, HC_HEAD, -1, NULL);
    l->t_embd = cur;
    cur = gm_mul_mat(g, gm_w_output(l), cur);
    l->t_logits = cur;
    gm_expand(g, cur);
}

/*
 * fit_block_mla.c - multi-head latent attention (DeepSeek's MLA,
 * src/models/deepseek2.cpp) and the DSA lightning indexer that picks the
 * cells each query attends (src/models/deepseek32.cpp, glm-dsa.cpp), over
 * the shape-only graph.
 *
 * Data structure: the compressed KV of a layer (kv_cmpr [kv_lora_rank, T]
 * and its rope part k_pe [n_rot, 1, T]); with MLA's absorption Q becomes
 * [kv_lora_rank + n_rot, n_head, T] against a cache of keys only
 * (llm_graph_input_attn_k), V a view of K and wv_b decompressing the
 * result; without it (no key_length_mla) K and V are decompressed per head
 * and cached as usual.  The DSA inputs add the indexer cache's row indices,
 * its f16 mask and its Hadamard rotation (always built for these
 * architectures, llama-kv-cache.cpp:327-332).
 *
 * Workload: per layer a handful of projections, the indexer's fused scores
 * [n_kv, T] per stream and their top-k, the opened mask, the attention.
 *
 * Fidelity: op for op llama.cpp's order (the graphs differ in where they
 * take views of q: deepseek2 reshapes it first, the DSA graphs view the
 * flat projection), proven by tests/fit/graphs_moe.sh.
 */
#include "fit_block_moe.h"

#include <string.h>

#include "ggufmap/types.h"

enum { T_F32 = 0, T_F16 = 1, T_I32 = 26, T_I64 = 27 };

static int32_t input(gm_llm *l, int32_t t) {
    gm_set_input(l->g, t);
    return t;
}

static uint64_t row_size(int32_t type, int64_t n) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return (uint64_t)t->type_size * (uint64_t)(n / t->block_size);
}

/* ------------------------------------------------------------------------ */
/* MLA                                                                       */
/* ------------------------------------------------------------------------ */

/* wkv_a_mqa's output split into the compressed KV (normed) and the rope
 * part of the key (roped) (deepseek2.cpp:520-545) */
void gm_mla_kv(gm_llm *l, int32_t cur, int32_t pos, int il, int32_t *kv_cmpr, int32_t *k_pe) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t rank = hp->n_lora_kv, rope = hp->n_rot_full, n = l->ub.n_tokens;
    int32_t pe = gm_mul_mat(g, gm_w(l, "blk.%d.attn_kv_a_mqa.weight", il), cur);
    const uint64_t rs = row_size(g->t[pe].type, rank + rope);
    *kv_cmpr = gm_view_2d(g, pe, rank, n, rs, 0);
    *k_pe = gm_view_3d(g, pe, rope, 1, n, rs, rs, row_size(g->t[pe].type, rank));
    *k_pe = gm_rope(g, *k_pe, pos, GM_NONE);
    *kv_cmpr = gm_build_norm_rms(l, *kv_cmpr, gm_w(l, "blk.%d.attn_kv_a_norm.weight", il), il);
}

/* the absorbed Q, K and V of MLA (deepseek2.cpp:548-585): q_nope through
 * wk_b, concatenated with the roped q_pe; K the compressed KV with k_pe; V
 * the compressed KV */
void gm_mla_absorb(gm_llm *l, int32_t q_nope, int32_t q_pe, int32_t kv_cmpr, int32_t k_pe, int32_t pos, int il,
                   int32_t *Q, int32_t *K, int32_t *V) {
    gm_graph *g = l->g;
    q_pe = gm_rope(g, q_pe, pos, GM_NONE);
    q_nope = gm_permute(g, q_nope, 0, 2, 1, 3);
    int32_t absorbed = gm_mul_mat(g, gm_w(l, "blk.%d.attn_k_b.weight", il), q_nope);
    absorbed = gm_permute(g, absorbed, 0, 2, 1, 3);
    *Q = gm_concat(g, absorbed, q_pe, 0);
    kv_cmpr = gm_reshape_3d(g, kv_cmpr, l->hp->n_lora_kv, 1, l->ub.n_tokens);
    *K = gm_concat(g, kv_cmpr, k_pe, 0);
    *V = kv_cmpr;
}

/* the views of q's heads: no-rope part and rope part; q is [head_k_mla *
 * n_head, T] (or already [head_k_mla, n_head, T]) */
void gm_mla_split_q(gm_llm *l, int32_t q, int32_t *q_nope, int32_t *q_pe) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->head_k_mla, rope = hp->n_rot_full, nope = head - rope, n_head = hp->n_head[0];
    const uint64_t nb1 = row_size(g->t[q].type, head);
    *q_nope = gm_view_3d(g, q, nope, n_head, l->ub.n_tokens, nb1, nb1 * (uint64_t)n_head, 0);
    *q_pe = gm_view_3d(g, q, rope, n_head, l->ub.n_tokens, nb1, nb1 * (uint64_t)n_head, row_size(g->t[q].type, nope));
}

/* ------------------------------------------------------------------------ */
/* The DSA lightning indexer                                                 */
/* ------------------------------------------------------------------------ */

/* build_attn_inp_k_dsa (llama-graph.cpp:3306-3340): the MLA cache's inputs,
 * then the indexer cache's row indices, its f16 mask (the fused indexer)
 * and its rotation */
void gm_dsa_inputs(gm_llm *l, gm_dsa_inp *inp) {
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens, n_stream = l->cp->kv_unified ? 1 : l->ub.n_seqs;
    gm_attn_inp_k(l, &l->kv, &inp->mla);
    inp->k_idxs_lid = input(l, gm_new_1d(g, T_I64, n));
    inp->kq_mask_lid = input(l, gm_new_4d(g, T_F16, l->kv_idx.kv_size, n / n_stream, 1, n_stream));
    int64_t nrot = 64;
    do nrot *= 2;
    while (l->hp->indexer_head_size % nrot == 0);
    nrot /= 2;
    inp->k_rot_lid = input(l, gm_new_2d(g, T_F32, nrot, nrot));
}

/* the fused lightning indexer of layer il (deepseek32.cpp:70-160): the
 * indexer's queries from qr, its key from cur stored in its cache, the
 * scores over every cached cell, their top-k [n_top_k, T/ns, 1, ns] */
int32_t gm_dsa_top_k(gm_llm *l, const gm_dsa_inp *inp, int32_t qr, int32_t cur, int32_t pos, int il) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->indexer_head_size, n_head = hp->indexer_n_head, n = l->ub.n_tokens;
    int32_t q = gm_mul_mat(g, gm_w(l, "blk.%d.indexer.attn_q_b.weight", il), qr);
    q = gm_reshape_3d(g, q, head, n_head, n);
    q = gm_rope(g, q, pos, GM_NONE);
    int32_t k = gm_mul_mat(g, gm_w(l, "blk.%d.indexer.attn_k.weight", il), cur);
    k = gm_build_norm(l, k, gm_w(l, "blk.%d.indexer.k_norm.weight", il), gm_w(l, "blk.%d.indexer.k_norm.bias", il),
                      false, il);
    k = gm_reshape_3d(g, k, head, 1, n);
    k = gm_rope(g, k, pos, GM_NONE);
    q = gm_mul_mat(g, inp->k_rot_lid, q);
    k = gm_mul_mat(g, inp->k_rot_lid, k);
    gm_expand(g, gm_cache_cpy_k(l, &l->kv_idx, k, inp->k_idxs_lid, il));
    int32_t w = gm_mul_mat(g, gm_w(l, "blk.%d.indexer.proj.weight", il), cur);
    k = gm_cache_get_k(l, &l->kv_idx, il);
    const int64_t ns = g->t[k].ne[3];
    const gm_tensor *qt = &g->t[q];
    q = gm_view_4d(g, q, qt->ne[0], qt->ne[1], qt->ne[2] / ns, ns, qt->nb[1], qt->nb[2], qt->nb[3] / (uint64_t)ns, 0);
    const gm_tensor *wt = &g->t[w];
    w = gm_view_4d(g, w, wt->ne[0], wt->ne[1] / ns, wt->ne[2], ns, wt->nb[1], wt->nb[2] / (uint64_t)ns,
                   wt->nb[3] / (uint64_t)ns, 0);
    w = gm_unary(g, GM_OP_SCALE, w);
    const int32_t srcs[4] = { q, k, w, inp->kq_mask_lid };
    const int64_t ne[4] = { g->t[k].ne[2], g->t[q].ne[2], 1, g->t[q].ne[3] };
    int32_t score = gm_op_shaped(g, GM_OP_LIGHTNING_INDEXER, T_F32, 4, ne, srcs, 4);
    const int64_t top = g->t[score].ne[0] < (int64_t)hp->indexer_top_k ? g->t[score].ne[0] : (int64_t)hp->indexer_top_k;
    return gm_cont(g, gm_top_k(g, score, top));
}

/* build_attn with llm_graph_input_attn_k_dsa and top_k (llama-graph.cpp:3013-3087):
 * the MLA mask opened on the top-k cells, then attention as over a cache of
 * keys only */
int32_t gm_dsa_attn(gm_llm *l, const gm_dsa_inp *inp, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                    int32_t v_mla, int32_t top_k, int il) {
    gm_attn_inp masked = inp->mla;
    masked.kq_mask = gm_kq_mask_top_k(l, inp->mla.kq_mask, top_k);
    return gm_build_attn_mla(l, &masked, o, q, k, v, v_mla, il);
}

/*
 * fit_block_pool.c - llm_graph_context::build_pooling (llama-graph.cpp:
 * 3677-3775), which llama_model::build_graph adds after every
 * architecture's graph (llama-model.cpp:2766): with --embedding, the
 * pooled embeddings over t_embd by the model's pooling type (mean, CLS or
 * last token, rank with the classifier head), a graph output.
 */
#include "fit_blocks.h"

enum { T_F32 = 0, T_I32 = 26 };
/* llama_pooling_type */
enum { POOL_NONE = 0, POOL_MEAN = 1, POOL_CLS = 2, POOL_LAST = 3, POOL_RANK = 4 };

static int32_t input(gm_llm *l, int32_t t) {
    gm_set_input(l->g, t);
    return t;
}

/* build_inp_mean: [n_tokens, n_seqs_unq]; build_inp_cls: [n_seqs_unq] */
static int32_t mean_of(gm_llm *l, int32_t inp) {
    gm_graph *g = l->g;
    int32_t mean = input(l, gm_new_2d(g, T_F32, l->ub.n_tokens, l->ub.n_seqs));
    return gm_mul_mat(g, gm_cont(g, gm_transpose(g, inp)), mean);
}

static int32_t rows_of(gm_llm *l, int32_t inp) {
    return gm_get_rows(l->g, inp, input(l, gm_new_1d(l->g, T_I32, l->ub.n_seqs)));
}

/* the classification head of rank pooling: cls (+ bias, tanh, cls.norm),
 * cls.output (+ bias), qwen3's soft max */
static int32_t rank_head(gm_llm *l, int32_t cur) {
    gm_graph *g = l->g;
    const int32_t cls = gm_w(l, "cls.weight", 0), cls_out = gm_w(l, "cls.output.weight", 0);
    if (cls != GM_NONE) {
        cur = gm_mul_mat(g, cls, cur);
        const int32_t b = gm_w(l, "cls.bias", 0);
        if (b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, b);
        cur = gm_unary(g, GM_OP_UNARY, cur);
        const int32_t norm = gm_w(l, "cls.norm.weight", 0);
        if (norm != GM_NONE) cur = gm_build_norm(l, cur, norm, GM_NONE, false, -1);
    }
    if (cls_out != GM_NONE) {
        cur = gm_mul_mat(g, cls_out, cur);
        const int32_t b = gm_w(l, "cls.output.bias", 0);
        if (b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, b);
    }
    if (l->hp->traits.rank_soft_max) cur = gm_soft_max_ext(g, cur, GM_NONE, GM_NONE);
    return cur;
}

void gm_build_pooling(gm_llm *l) {
    if (!l->cp->embeddings || l->t_embd == GM_NONE) return;
    int32_t cur = l->t_embd;
    switch (l->hp->pooling_type) {
    case POOL_MEAN: cur = mean_of(l, cur); break;
    case POOL_CLS: case POOL_LAST: cur = rows_of(l, cur); break;
    case POOL_RANK: cur = rank_head(l, rows_of(l, cur)); break;
    default: break;
    }
    gm_set_output(l->g, cur);
    gm_expand(l->g, cur);
}

/*
 * fit_block_mtp.c - the NextN (MTP) draft graph's input and head, as the
 * MTP graphs of llama.cpp v0.5.0 build them around their one decoder block
 * (graph_mtp in src/models/{glm4-moe,deepseek2,deepseek32,glm-dsa,hy-v3,
 * step35,cohere2moe}.cpp).
 *
 * Data structure: the draft's ubatch carries tokens (the reserve's ubatch
 * has them, so the token path is the one built) and the target's hidden
 * states h [n_embd, T]; both are normed (nextn.enorm, nextn.hnorm),
 * concatenated and projected by nextn.eh_proj into the block's input.  The
 * head norms with nextn.shared_head_norm (else output_norm), keeps the
 * output rows and projects with nextn.shared_head_head (else output).
 *
 * Workload: a handful of nodes on top of the block; fidelity as the trunk
 * graphs (proven by tests/fit/graphs_moe.sh's --mtp cases).
 */
#include "fit_llm.h"

/* the block's input: eh_proj(concat(enorm(embed(tokens)), hnorm(h))) */
int32_t gm_mtp_input(gm_llm *l, int il, gm_norm_type norm) {
    gm_graph *g = l->g;
    const int64_t n = l->ub.n_tokens;
    int32_t tokens = gm_new_1d(g, 26, n);
    gm_set_input(g, tokens);
    int32_t w = gm_w(l, "blk.%d.nextn.embed_tokens.weight", il);
    if (w == GM_NONE) w = gm_w(l, "token_embd.weight", 0);
    int32_t tok = gm_get_rows(g, w, tokens);
    int32_t h = gm_new_2d(g, 0, l->hp->n_embd, n);
    gm_set_input(g, h);
    int32_t h_norm = gm_build_norm(l, h, gm_w(l, "blk.%d.nextn.hnorm.weight", il), GM_NONE, norm, il);
    int32_t e_norm = gm_build_norm(l, tok, gm_w(l, "blk.%d.nextn.enorm.weight", il), GM_NONE, norm, il);
    return gm_build_lora_mm(l, gm_w(l, "blk.%d.nextn.eh_proj.weight", il), gm_concat(g, e_norm, h_norm, 0));
}

/* the head: norm (t_h_nextn), the output rows, the projection; with
 * rows_first (step35) the rows are taken before the norm and t_h_nextn is
 * the un-normed state */
int32_t gm_mtp_head(gm_llm *l, int32_t cur, int il, int32_t out_ids, gm_norm_type norm, bool rows_first) {
    gm_graph *g = l->g;
    int32_t nw = gm_w(l, "blk.%d.nextn.shared_head_norm.weight", il);
    if (nw == GM_NONE) nw = gm_w(l, "output_norm.weight", 0);
    if (rows_first) {
        cur = gm_get_rows(g, cur, out_ids);
        gm_set_output(g, cur); /* t_h_nextn */
        cur = gm_build_norm(l, cur, nw, GM_NONE, norm, -1);
    } else {
        cur = gm_build_norm(l, cur, nw, GM_NONE, norm, -1);
        gm_set_output(g, cur); /* t_h_nextn */
        cur = gm_get_rows(g, cur, out_ids);
    }
    int32_t head = gm_w(l, "blk.%d.nextn.shared_head_head.weight", il);
    if (head == GM_NONE) head = gm_w_output(l);
    cur = gm_build_lora_mm(l, head, cur);
    l->t_logits = cur;
    return cur;
}

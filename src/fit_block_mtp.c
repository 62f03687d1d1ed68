/*
 * fit_block_mtp.c - the NextN (MTP) draft graph's head, as the
 * MTP graphs of llama.cpp v0.5.0 build them around their one decoder block
 * (graph_mtp in src/models/{glm4-moe,deepseek2,deepseek32,glm-dsa,hy-v3,
 * step35,cohere2moe}.cpp).
 *
 * Data structure: the draft's ubatch carries tokens (the reserve's ubatch
 * has them, so the token path is the one built) and the target's hidden
 * states h [n_embd, T]; both are normed (nextn.enorm, nextn.hnorm),
 * concatenated and projected by nextn.eh_proj into the block's input
 * (gm_build_mtp_eh_proj_norm, fit_llm.c).  The head norms with
 * nextn.shared_head_norm (else output_norm), keeps the output rows and
 * projects with nextn.shared_head_head (else output).
 *
 * Workload: a handful of nodes on top of the block; fidelity as the trunk
 * graphs (proven by tests/fit/graphs_moe.sh's --mtp cases).
 */
#include "fit_block_moe.h"

/* the head: norm (t_h_nextn), the output rows, the projection; with
 * rows_first (step35) the rows are taken before the norm and t_h_nextn is
 * the un-normed state */
int32_t gm_mtp_head(gm_llm *l, int32_t cur, int il, int32_t out_ids, bool rms, bool rows_first) {
    gm_graph *g = l->g;
    int32_t nw = gm_w(l, "blk.%d.nextn.shared_head_norm.weight", il);
    if (nw == GM_NONE) nw = gm_w(l, "output_norm.weight", 0);
    if (rows_first) {
        cur = gm_get_rows(g, cur, out_ids);
        gm_set_output(g, cur); /* t_h_nextn */
        cur = gm_build_norm(l, cur, nw, GM_NONE, rms, -1);
    } else {
        cur = gm_build_norm(l, cur, nw, GM_NONE, rms, -1);
        gm_set_output(g, cur); /* t_h_nextn */
        cur = gm_get_rows(g, cur, out_ids);
    }
    int32_t head = gm_w(l, "blk.%d.nextn.shared_head_head.weight", il);
    if (head == GM_NONE) head = gm_w_output(l);
    cur = gm_build_lora_mm(l, head, cur);
    l->t_logits = cur;
    return cur;
}

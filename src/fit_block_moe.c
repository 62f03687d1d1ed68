/*
 * fit_block_moe.c - llama.cpp's mixture-of-experts FFN (build_moe_ffn,
 * llama-graph.cpp:1993-2360) over the shape-only graph, with every option
 * the architectures use, and the shared expert beside it.
 *
 * Data structure: a gm_moe_args names the router and expert weights (any
 * of them GM_NONE where the model has none) and the routing options
 * (gating function, weight normalization and scale, the activation, the
 * SwiGLU clamp); expert groups and the per-layer number of experts used
 * come from the hyperparameters, as in llama.cpp.
 *
 * Workload: one call per MoE layer of a reserve graph: the router
 * [n_expert, T], the top-k selection, the weights, up/gate/down through
 * MUL_MAT_ID over [n_ff, n_expert_used, T], the weighted experts summed in
 * n_expert_used views (expanded before the adds, as llama.cpp does, since
 * node order decides what ggml-alloc reuses).
 *
 * Fidelity: op for op the order of build_moe_ffn, including its early
 * expansion of the weights; the values (scales, clamps) are left out.
 */
#include "fit_block_moe.h"

#include <string.h>

/* build_lora_mm_id without adapters: ggml_mul_mat_id */
static int32_t mm_id(gm_llm *l, int32_t w, int32_t cur, int32_t ids) { return gm_mul_mat_id(l->g, w, cur, ids); }

/* expert groups (DeepSeek V3: n_expert_groups > 1): keep the experts of the
 * n_group_used groups with the best two scores, the rest at -inf
 * (llama-graph.cpp:2072-2098) */
static int32_t select_groups(gm_llm *l, int32_t probs, int64_t n_expert, int64_t n) {
    gm_graph *g = l->g;
    const int64_t n_groups = l->hp->n_expert_groups, per = n_expert / n_groups;
    int32_t groups = gm_reshape_3d(g, probs, per, n_groups, n);
    int32_t scores = gm_argsort_top_k(g, groups, 2);
    const gm_tensor *gt = &g->t[groups];
    scores = gm_get_rows(g, gm_reshape_4d(g, groups, 1, gt->ne[0], gt->ne[1], gt->ne[2]), scores);
    const gm_tensor *st = &g->t[scores];
    scores = gm_sum_rows(g, gm_reshape_3d(g, scores, st->ne[1], st->ne[2], st->ne[3]));
    st = &g->t[scores];
    scores = gm_reshape_2d(g, scores, st->ne[1], st->ne[2]);
    int32_t best = gm_argsort_top_k(g, scores, l->hp->n_group_used);
    int32_t kept = gm_get_rows(g, groups, best);
    int32_t masked = gm_set_rows(g, gm_fill(g, groups), kept, best);
    return gm_reshape_2d(g, masked, n_expert, n);
}

/* the router: probabilities, the selected experts, their weights [1, used, T] */
static int32_t route(gm_llm *l, int32_t cur, const gm_moe_args *a, int32_t *selected) {
    gm_graph *g = l->g;
    const int64_t n = g->t[cur].ne[1], n_expert = a->n_expert, used = a->n_expert_used;
    int32_t logits = a->probs_in != GM_NONE ? a->probs_in : gm_build_lora_mm(l, a->gate_inp, cur);
    if (a->gate_inp_b != GM_NONE) logits = gm_binary(g, GM_OP_ADD, logits, a->gate_inp_b);
    int32_t probs = logits;
    switch (a->gating) {
    case GM_GATING_SOFTMAX: probs = gm_soft_max_ext(g, logits, GM_NONE, GM_NONE); break;
    case GM_GATING_SIGMOID: probs = gm_unary(g, GM_OP_UNARY, logits); break;
    case GM_GATING_SOFTMAX_WEIGHT: break;
    case GM_GATING_SQRT_SOFTPLUS: probs = gm_unary(g, GM_OP_SQRT, gm_unary(g, GM_OP_UNARY, logits)); break;
    }
    int32_t selection = probs;
    if (a->exp_probs_b != GM_NONE) selection = gm_binary(g, GM_OP_ADD, probs, a->exp_probs_b);
    if (l->hp->n_expert_groups > 1 && n > 0) selection = select_groups(l, selection, n_expert, n);
    *selected = gm_argsort_top_k(g, selection, used);
    probs = gm_reshape_3d(g, probs, 1, n_expert, n);
    int32_t weights = gm_get_rows(g, probs, *selected);
    if (a->gating == GM_GATING_SOFTMAX_WEIGHT) {
        weights = gm_reshape_2d(g, weights, used, n);
        weights = gm_soft_max_ext(g, weights, GM_NONE, GM_NONE);
        weights = gm_reshape_3d(g, weights, 1, used, n);
    }
    if (a->norm_w) {
        weights = gm_reshape_2d(g, weights, used, n);
        int32_t sum = gm_sum_rows(g, weights);
        sum = gm_unary(g, GM_OP_CLAMP, sum);
        weights = gm_binary(g, GM_OP_DIV, weights, sum);
        weights = gm_reshape_3d(g, weights, 1, used, n);
    }
    if (a->w_scale != 0.0f && a->w_scale != 1.0f) weights = gm_unary(g, GM_OP_SCALE, weights);
    gm_expand(g, weights);
    return weights;
}

/* up and gate through the selected experts (merged or separate), with their biases */
static int32_t up_gate(gm_llm *l, int32_t cur, const gm_moe_args *a, int32_t selected, int32_t *up) {
    gm_graph *g = l->g;
    if (a->gate_up_exps != GM_NONE) {
        int32_t gu = mm_id(l, a->gate_up_exps, cur, selected);
        if (a->gate_up_exps_b != GM_NONE) gu = gm_add_id(g, gu, a->gate_up_exps_b, selected);
        const gm_tensor *t = &g->t[gu];
        const int64_t n_ff = t->ne[0] / 2;
        int32_t gate = gm_view_3d(g, gu, n_ff, t->ne[1], t->ne[2], t->nb[1], t->nb[2], 0);
        *up = gm_view_3d(g, gu, n_ff, t->ne[1], t->ne[2], t->nb[1], t->nb[2], (uint64_t)n_ff * t->nb[0]);
        return gate;
    }
    *up = mm_id(l, a->up_exps, cur, selected);
    if (a->up_exps_b != GM_NONE) *up = gm_add_id(g, *up, a->up_exps_b, selected);
    int32_t gate = a->gate_exps != GM_NONE ? mm_id(l, a->gate_exps, cur, selected) : *up;
    if (a->gate_exps_b != GM_NONE) gate = gm_add_id(g, gate, a->gate_exps_b, selected);
    return gate;
}

/* the activation (llama-graph.cpp:2220-2300) */
static int32_t activate(gm_graph *g, const gm_moe_args *a, int32_t cur, int32_t up) {
    const bool has_gate = a->gate_exps != GM_NONE || a->gate_up_exps != GM_NONE;
    if (a->op == GM_FFN_SILU && a->gate_exps != GM_NONE && a->clamp > 1e-6f) return gm_swiglu_limited(g, cur, up);
    switch (a->op) {
    case GM_FFN_SWIGLU_OAI: return gm_glu_split(g, cur, up);
    case GM_FFN_RELU_SQR: return gm_unary(g, GM_OP_SQR, gm_unary(g, GM_OP_UNARY, cur)); /* relu, then sqr */
    default: return has_gate ? gm_glu_split(g, cur, up) : gm_unary(g, GM_OP_UNARY, cur);
    }
}

int32_t gm_build_moe(gm_llm *l, int32_t cur, const gm_moe_args *a, int il) {
    gm_graph *g = l->g;
    /* a gating function build_moe_ffn does not know aborts ("fatal error") */
    if (!gm_assert(l, a->gating >= GM_GATING_SOFTMAX && a->gating <= GM_GATING_SQRT_SOFTPLUS,
                   "0 && \"fatal error\": build_moe_ffn's gating_op"))
        return cur;
    const int64_t n_embd = g->t[cur].ne[0], n = g->t[cur].ne[1];
    int32_t selected;
    int32_t weights = route(l, cur, a, &selected);
    cur = gm_reshape_3d(g, cur, n_embd, 1, n);
    int32_t up;
    cur = up_gate(l, cur, a, selected, &up);
    cur = activate(g, a, cur, up);
    int32_t experts = mm_id(l, a->down_exps, cur, selected);
    if (a->down_exps_b != GM_NONE) experts = gm_add_id(g, experts, a->down_exps_b, selected);
    experts = gm_binary(g, GM_OP_MUL, experts, weights);
    gm_expand(g, experts);
    /* hparams.n_expert_used(il): the layer's own count bounds the views */
    int64_t used = il >= 0 && il < GM_MAX_LAYERS && l->hp->n_expert_used_l[il] ? l->hp->n_expert_used_l[il] : a->n_expert_used;
    if (used > 256) used = 256;
    int32_t views[256] = { 0 };
    for (int64_t i = 0; i < used; i++) {
        views[i] = gm_view_2d(g, experts, n_embd, n, g->t[experts].nb[2], (uint64_t)i * g->t[experts].nb[1]);
        gm_expand(g, views[i]);
    }
    int32_t out = views[0];
    for (int64_t i = 1; i < used; i++) {
        out = gm_binary(g, GM_OP_ADD, out, views[i]);
        gm_expand(g, out);
    }
    if (used == 1) out = gm_cont(g, out);
    return out;
}

/* build_moe_ffn as qwen3moe and qwen4exp call it: softmax gating, SiLU */
int32_t gm_build_moe_ffn(gm_llm *l, int32_t cur, int32_t gate_inp, int32_t up_exps, int32_t gate_exps,
                         int32_t down_exps, int64_t n_expert, int64_t n_expert_used, bool norm_w) {
    gm_moe_args a;
    gm_moe_args_init(&a);
    a.gate_inp = gate_inp, a.up_exps = up_exps, a.gate_exps = gate_exps, a.down_exps = down_exps;
    a.n_expert = n_expert, a.n_expert_used = n_expert_used, a.norm_w = norm_w;
    return gm_build_moe(l, cur, &a, -1);
}

void gm_moe_args_init(gm_moe_args *a) {
    memset(a, 0, sizeof *a);
    a->gate_inp = a->gate_inp_b = a->probs_in = GM_NONE;
    a->up_exps = a->up_exps_b = a->gate_exps = a->gate_exps_b = GM_NONE;
    a->down_exps = a->down_exps_b = a->exp_probs_b = a->gate_up_exps = a->gate_up_exps_b = GM_NONE;
    a->gating = GM_GATING_SOFTMAX;
    a->op = GM_FFN_SILU;
}

/* a layer's experts by llama.cpp's names (ffn_*_exps, their biases, the
 * router and its selection bias, exp_probs_b with or without ".bias"), the
 * routing options from the hyperparameters */
void gm_moe_args_layer(gm_llm *l, int il, gm_moe_args *a) {
    const gm_hparams *hp = l->hp;
    gm_moe_args_init(a);
    a->gate_inp = gm_w(l, "blk.%d.ffn_gate_inp.weight", il);
    a->gate_inp_b = gm_w(l, "blk.%d.ffn_gate_inp.bias", il);
    a->up_exps = gm_w(l, "blk.%d.ffn_up_exps.weight", il);
    a->up_exps_b = gm_w(l, "blk.%d.ffn_up_exps.bias", il);
    a->gate_exps = gm_w(l, "blk.%d.ffn_gate_exps.weight", il);
    a->gate_exps_b = gm_w(l, "blk.%d.ffn_gate_exps.bias", il);
    a->down_exps = gm_w(l, "blk.%d.ffn_down_exps.weight", il);
    a->down_exps_b = gm_w(l, "blk.%d.ffn_down_exps.bias", il);
    a->gate_up_exps = gm_w(l, "blk.%d.ffn_gate_up_exps.weight", il);
    a->gate_up_exps_b = gm_w(l, "blk.%d.ffn_gate_up_exps.bias", il);
    a->exp_probs_b = gm_w(l, "blk.%d.exp_probs_b.bias", il);
    if (a->exp_probs_b == GM_NONE) a->exp_probs_b = gm_w(l, "blk.%d.exp_probs_b", il);
    a->n_expert = hp->n_expert;
    a->n_expert_used = hp->n_expert_used;
    a->norm_w = hp->expert_weights_norm;
    a->w_scale = hp->expert_weights_scale;
    a->gating = (gm_moe_gating)hp->expert_gating_func; /* 0 (none) aborts in gm_build_moe */
    if (il >= 0 && il < GM_MAX_LAYERS) a->clamp = hp->swiglu_clamp_exp[il];
}

/* routed experts plus the shared expert: plain (their sum) or gated by
 * sigmoid(ffn_gate_inp_shexp x), as qwen2moe writes it
 * (silu(x) / x, qwen2moe.cpp:145-168) */
int32_t gm_build_moe_shexp(gm_llm *l, int32_t cur, const gm_moe_args *a, gm_shexp_kind shexp, int il) {
    gm_graph *g = l->g;
    int32_t moe = gm_build_moe(l, cur, a, il);
    if (shexp == GM_SHEXP_NONE) return moe;
    const gm_ffn_w sw = gm_ffn_shexp_weights(l, il);
    if (shexp == GM_SHEXP_PLAIN) return gm_binary(g, GM_OP_ADD, moe, gm_build_ffn_il(l, cur, &sw, GM_FFN_SILU, GM_FFN_PAR, il));
    int32_t gate_in = gm_build_lora_mm(l, gm_w(l, "blk.%d.ffn_gate_inp_shexp.weight", il), cur);
    int32_t gate = gm_binary(g, GM_OP_DIV, gm_unary(g, GM_OP_UNARY, gate_in), gate_in);
    int32_t sh = gm_build_ffn_il(l, cur, &sw, GM_FFN_SILU, GM_FFN_PAR, il);
    return gm_binary(g, GM_OP_ADD, moe, gm_binary(g, GM_OP_MUL, sh, gate));
}

/* a layer's FFN as the MoE families with a dense lead build it: the dense
 * SwiGLU where the layer has no router, else the routed experts with the
 * hyperparameters' routing plus the shared expert where the layer has one */
int32_t gm_build_layer_ffn(gm_llm *l, int32_t cur, int il) {
    if (gm_w(l, "blk.%d.ffn_gate_inp.weight", il) == GM_NONE) {
        const gm_ffn_w f = gm_ffn_weights(l, "ffn", il);
        return gm_build_ffn_il(l, cur, &f, GM_FFN_SILU, GM_FFN_PAR, il);
    }
    gm_moe_args m;
    gm_moe_args_layer(l, il, &m);
    const bool shared = gm_w(l, "blk.%d.ffn_up_shexp.weight", il) != GM_NONE;
    return gm_build_moe_shexp(l, cur, &m, shared ? GM_SHEXP_PLAIN : GM_SHEXP_NONE, il);
}

/* a decoder layer's second half: with out_ids (the trunk's last layer)
 * the output rows of the attention's result and of the residual, the
 * residual, the FFN norm (RMS, weight norm_name), the FFN (ffn, NULL:
 * gm_build_layer_ffn), the residual */
int32_t gm_build_ffn_residual(gm_llm *l, int32_t cur, int32_t inpSA, int32_t out_ids, const char *norm_name,
                              gm_layer_ffn_fn ffn, int il) {
    gm_graph *g = l->g;
    if (out_ids != GM_NONE) {
        cur = gm_get_rows(g, cur, out_ids);
        inpSA = gm_get_rows(g, inpSA, out_ids);
    }
    int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
    cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, norm_name, il), il);
    cur = (ffn ? ffn : gm_build_layer_ffn)(l, cur, il);
    return gm_binary(g, GM_OP_ADD, cur, ffn_inp);
}

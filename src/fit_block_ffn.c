/*
 * fit_block_ffn.c - build_norm and build_ffn (llama-graph.cpp) in their
 * general forms, over the shape-only graph (declared in fit_blocks.h).
 *
 * Unary ops (silu, gelu, relu, tanh, sqr) are one op kind here: the
 * allocator treats them alike (each may run in place of its source) and the
 * scheduler looks only at their shapes.
 */
#include "fit_blocks.h"

/* build_norm: ggml_norm or ggml_rms_norm, the "norm" callback when a weight
 * or bias follows, then the weight and the bias */
int32_t gm_build_norm(gm_llm *l, int32_t cur, int32_t w, int32_t b, gm_norm_type type, int il) {
    cur = gm_unary(l->g, type == GM_NORM_RMS ? GM_OP_RMS_NORM : GM_OP_NORM, cur);
    if (w != GM_NONE || b != GM_NONE) gm_cb_norm(l, cur, il);
    if (w != GM_NONE) cur = gm_binary(l->g, GM_OP_MUL, cur, w);
    if (b != GM_NONE) cur = gm_binary(l->g, GM_OP_ADD, cur, b);
    return cur;
}

gm_ffn_w gm_ffn_weights(gm_llm *l, int il) {
    return (gm_ffn_w){
        .up = gm_w(l, "blk.%d.ffn_up.weight", il), .up_b = gm_w(l, "blk.%d.ffn_up.bias", il),
        .gate = gm_w(l, "blk.%d.ffn_gate.weight", il), .gate_b = gm_w(l, "blk.%d.ffn_gate.bias", il),
        .down = gm_w(l, "blk.%d.ffn_down.weight", il), .down_b = gm_w(l, "blk.%d.ffn_down.bias", il),
    };
}

/* ggml_glu_impl without a second operand: half of a's rows (ggml.c) */
static int32_t glu_single(gm_graph *g, int32_t a) {
    const gm_tensor *x = &g->t[a];
    const int64_t ne[4] = { x->ne[0] / 2, x->ne[1], x->ne[2], x->ne[3] };
    return gm_op_shaped(g, GM_OP_GLU, x->type, 4, ne, &a, 1);
}

/* the activation of build_ffn's switch; *par_left: a parallel gate still
 * to multiply in afterwards (the activations without a split form) */
static int32_t activation(gm_graph *g, int32_t cur, int32_t tmp, gm_ffn_act act, bool par, bool *par_left) {
    const bool split = act == GM_FFN_SILU || act == GM_FFN_GELU || act == GM_FFN_RELU;
    *par_left = par && !split;
    if (split && par) return gm_glu_split(g, cur, tmp);
    switch (act) {
    case GM_FFN_RELU_SQR: return gm_unary(g, GM_OP_UNARY, gm_unary(g, GM_OP_UNARY, cur));
    case GM_FFN_SWIGLU: case GM_FFN_GEGLU: case GM_FFN_REGLU: return glu_single(g, cur);
    default: return gm_unary(g, GM_OP_UNARY, cur);
    }
}

int32_t gm_build_ffn_w(gm_llm *l, int32_t cur, const gm_ffn_w *w, gm_ffn_act act, gm_ffn_gate gate) {
    gm_graph *g = l->g;
    int32_t tmp = w->up != GM_NONE ? gm_build_lora_mm(l, w->up, cur) : cur;
    if (w->up_b != GM_NONE) tmp = gm_binary(g, GM_OP_ADD, tmp, w->up_b);
    if (w->gate != GM_NONE) {
        cur = gm_build_lora_mm(l, w->gate, gate == GM_FFN_PAR ? cur : tmp);
        if (w->gate_b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, w->gate_b);
    } else {
        cur = tmp;
    }
    bool par_left;
    cur = activation(g, cur, tmp, act, w->gate != GM_NONE && gate == GM_FFN_PAR, &par_left);
    if (par_left) cur = gm_binary(g, GM_OP_MUL, cur, tmp);
    if (w->down != GM_NONE) cur = gm_build_lora_mm(l, w->down, cur);
    if (w->down_b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, w->down_b);
    return cur;
}

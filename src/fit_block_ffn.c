/*
 * fit_block_ffn.c - build_ffn (llama-graph.cpp:1753-1905) over the
 * shape-only graph, op for op (fit_block_ffn.h).
 *
 * Data structure: the layer's weights as graph tensors.  Workload: one call
 * per FFN.  Fidelity: the NVFP4 scales (*_s), LoRA, activation scales and
 * the SwiGLU clamp of DeepSeek-4-style models are not modelled (none of the
 * architectures using this block has them; the SwiGLU clamp of the
 * others is gm_build_ffn_il's); the GLU variants (split or
 * one-operand) fold into one
 * GLU op and the unary activations into UNARY, as fit_graph.h does.
 */
#include "fit_block_ffn.h"

#include <stdio.h>

gm_ffn_w gm_ffn_weights(gm_llm *l, const char *prefix, int il) {
    static const char *const parts[6] = { "up.weight", "up.bias", "gate.weight", "gate.bias", "down.weight", "down.bias" };
    int32_t out[6];
    for (int i = 0; i < 6; i++) {
        char fmt[96];
        snprintf(fmt, sizeof fmt, "blk.%%d.%s_%s", prefix, parts[i]);
        out[i] = gm_w(l, fmt, il);
    }
    return (gm_ffn_w){ out[0], out[1], out[2], out[3], out[4], out[5] };
}

static int32_t add_bias(gm_graph *g, int32_t cur, int32_t b) { return b == GM_NONE ? cur : gm_binary(g, GM_OP_ADD, cur, b); }

gm_ffn_w gm_ffn_shexp_weights(gm_llm *l, int il) {
    return (gm_ffn_w){ gm_w(l, "blk.%d.ffn_up_shexp.weight", il), GM_NONE, gm_w(l, "blk.%d.ffn_gate_shexp.weight", il),
                       GM_NONE, gm_w(l, "blk.%d.ffn_down_shexp.weight", il), GM_NONE };
}

int32_t gm_swiglu_limited(gm_graph *g, int32_t gate, int32_t up) {
    up = gm_unary(g, GM_OP_CLAMP, up);
    int32_t act = gm_unary(g, GM_OP_UNARY, gate);
    act = gm_unary(g, GM_OP_CLAMP, act);
    return gm_binary(g, GM_OP_MUL, act, up);
}

int32_t gm_build_ffn_ex(gm_llm *l, int32_t cur, const gm_ffn_w *w, gm_ffn_op op, gm_ffn_gate type_gate) {
    return gm_build_ffn_il(l, cur, w, op, type_gate, -1);
}

int32_t gm_build_ffn_il(gm_llm *l, int32_t cur, const gm_ffn_w *w, gm_ffn_op op, gm_ffn_gate type_gate, int il) {
    gm_graph *g = l->g;
    int32_t tmp = w->up != GM_NONE ? gm_build_lora_mm(l, w->up, cur) : cur;
    tmp = add_bias(g, tmp, w->up_b);
    if (w->gate != GM_NONE) {
        cur = gm_build_lora_mm(l, w->gate, type_gate == GM_FFN_SEQ ? tmp : cur);
        cur = add_bias(g, cur, w->gate_b);
    } else {
        cur = tmp;
    }
    const bool single_glu = op == GM_FFN_SWIGLU || op == GM_FFN_GEGLU;
    const bool glu = w->gate != GM_NONE && type_gate == GM_FFN_PAR && op != GM_FFN_RELU_SQR && !single_glu;
    const bool limited = glu && op == GM_FFN_SILU && il >= 0 && il < GM_MAX_LAYERS && l->hp->swiglu_clamp_shexp[il] > 1e-6f;
    if (limited) {
        cur = gm_swiglu_limited(g, cur, tmp);
    } else if (glu) {
        cur = gm_glu_split(g, cur, tmp); /* swiglu_split, geglu_split, reglu_split */
    } else {
        cur = single_glu ? gm_glu(g, cur) : gm_unary(g, GM_OP_UNARY, cur);
        if (op == GM_FFN_RELU_SQR) cur = gm_unary(g, GM_OP_SQR, cur);
        /* a parallel gate without a fused GLU multiplies by up afterwards */
        if (w->gate != GM_NONE && type_gate == GM_FFN_PAR) cur = gm_binary(g, GM_OP_MUL, cur, tmp);
    }
    if (w->down != GM_NONE) cur = gm_build_lora_mm(l, w->down, cur);
    return add_bias(g, cur, w->down_b);
}

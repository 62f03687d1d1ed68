/*
 * fit_block_ffn.h - llama.cpp's dense feed-forward block in full
 * (llm_graph_context::build_ffn, llama-graph.cpp:1753-1905) over the
 * shape-only graph (internal): optional up, gate and down projections,
 * each with an optional bias, the activations and both gate layouts.
 * gm_build_ffn (fit_llm.h) is its SwiGLU/GeGLU-parallel case without biases.
 */
#ifndef GGUFMAP_FIT_BLOCK_FFN_H
#define GGUFMAP_FIT_BLOCK_FFN_H

#include "fit_llm.h"

/* llm_ffn_op_type, the activations modelled (SiLU, GELU and ReLU gate a
 * parallel up projection with one fused GLU op; ReLU² never gates;
 * SWIGLU/GEGLU are the one-operand GLUs over an up projection twice as
 * wide, phi3's, halving its rows) */
typedef enum gm_ffn_op {
    GM_FFN_SILU = 0, GM_FFN_GELU, GM_FFN_RELU, GM_FFN_RELU_SQR, GM_FFN_SWIGLU, GM_FFN_GEGLU,
    GM_FFN_SWIGLU_OAI       /* gpt-oss's clamped SwiGLU: a fused GLU over a parallel gate */
} gm_ffn_op;

/* llm_ffn_gate_type: the gate reads the block's input (PAR) or the up
 * projection's output (SEQ) */
typedef enum gm_ffn_gate { GM_FFN_PAR = 0, GM_FFN_SEQ } gm_ffn_gate;

/* the weights: GM_NONE where the model has none */
typedef struct gm_ffn_w {
    int32_t up, up_b, gate, gate_b, down, down_b;
} gm_ffn_w;

/* blk.IL.PREFIX_{up,gate,down}.{weight,bias} (prefix "ffn", "ffn_*_shexp"
 * style names are not covered: give the fields directly) */
gm_ffn_w gm_ffn_weights(gm_llm *l, const char *prefix, int il);

int32_t gm_build_ffn_ex(gm_llm *l, int32_t cur, const gm_ffn_w *w, gm_ffn_op op, gm_ffn_gate type_gate);
/* the same for layer il: a SiLU-gated parallel FFN is the limited SwiGLU
 * where the model sets swiglu_clamp_shexp[il] (llama-graph.cpp:1842-1862;
 * gm_build_ffn_ex is il -1: never) */
int32_t gm_build_ffn_il(gm_llm *l, int32_t cur, const gm_ffn_w *w, gm_ffn_op op, gm_ffn_gate type_gate, int il);
/* clamp(up) times clamp(silu(gate)): the limited SwiGLU of build_ffn and build_moe_ffn */
int32_t gm_swiglu_limited(gm_graph *g, int32_t gate, int32_t up);
/* the shared expert's weights: blk.IL.ffn_{up,gate,down}_shexp, no biases */
gm_ffn_w gm_ffn_shexp_weights(gm_llm *l, int il);

#endif

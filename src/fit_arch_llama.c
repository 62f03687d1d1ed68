/*
 * fit_arch_llama.c - the graphs of llama (src/models/llama.cpp), qwen3moe
 * (src/models/qwen3moe.cpp) and the dense decoders that build the same ops:
 * qwen2 (llama's with Q/K/V and output biases, qwen2.cpp), qwen3 (qwen3moe's
 * with a dense FFN, qwen3.cpp), smollm3 (llama's without RoPE on every
 * fourth layer, smollm3.cpp).  Attention over a KV cache, then a SwiGLU FFN
 * or routed experts, per layer; each proven exact by tests/fit/archs.sh.
 */
#include "fit_blocks.h"

/* The decoder both follow: llama_model_llama::graph<false>
 * (models/llama.cpp:98-247) and llama_model_qwen3moe::graph
 * (models/qwen3moe.cpp:62-178), which norms q and k before rope (and reads
 * no rope factors) and whose FFN is always routed experts.  A layer with
 * ffn_gate_inp takes the experts, any other the SwiGLU FFN. */
static void decoder_graph(gm_llm *l, bool qk_norm, int no_rope_step) {
    gm_graph *g = l->g;
    const gm_hparams *hp = l->hp;
    const int64_t head = hp->head_v_full;
    int32_t inpL = gm_inp_embd(l, gm_w(l, "token_embd.weight", 0));
    int32_t pos = gm_inp_pos(l);
    gm_attn_inp inp;
    gm_attn_inp_kv(l, &l->kv, &inp);
    int32_t out_ids = gm_inp_out_ids(l);
    for (int il = 0; il < (int)hp->n_layer; il++) {
        int32_t inpSA = inpL;
        int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "blk.%d.attn_norm.weight", il), il);
        /* get_rope_factors: each layer's own copy of rope_freqs (TENSOR_DUPLICATED) */
        const int32_t rope_factors = qk_norm ? GM_NONE : gm_rope_factors(l, il);
        int32_t q, k, v;
        gm_build_qkv(l, il, cur, head, hp->n_head[0], hp->n_head_kv[0], head, &q, &k, &v); /* the graph context's n_head(), n_head_kv(): layer 0's */
        const bool use_rope = no_rope_step == 0 || (il + 1) % no_rope_step != 0;
        if (qk_norm) q = gm_build_norm_rms(l, q, gm_w(l, "blk.%d.attn_q_norm.weight", il), il);
        if (use_rope) q = gm_rope(g, q, pos, rope_factors);
        if (qk_norm) k = gm_build_norm_rms(l, k, gm_w(l, "blk.%d.attn_k_norm.weight", il), il);
        if (use_rope) k = gm_rope(g, k, pos, rope_factors);
        cur = gm_build_attn(l, &inp, gm_w(l, "blk.%d.attn_output.weight", il), q, k, v, il, false);
        if (il == (int)hp->n_layer - 1) {
            cur = gm_get_rows(g, cur, out_ids);
            inpSA = gm_get_rows(g, inpSA, out_ids);
        }
        int32_t ffn_inp = gm_binary(g, GM_OP_ADD, cur, inpSA);
        cur = gm_build_norm_rms(l, ffn_inp, gm_w(l, "blk.%d.ffn_norm.weight", il), il);
        int32_t gate_inp = gm_w(l, "blk.%d.ffn_gate_inp.weight", il);
        if (gate_inp == GM_NONE)
            cur = gm_build_ffn(l, cur, gm_w(l, "blk.%d.ffn_up.weight", il), gm_w(l, "blk.%d.ffn_gate.weight", il),
                               gm_w(l, "blk.%d.ffn_down.weight", il), false);
        else
            cur = gm_build_moe_ffn(l, cur, gate_inp, gm_w(l, "blk.%d.ffn_up_exps.weight", il),
                                   gm_w(l, "blk.%d.ffn_gate_exps.weight", il), gm_w(l, "blk.%d.ffn_down_exps.weight", il),
                                   hp->n_expert, hp->n_expert_used, true);
        inpL = gm_binary(g, GM_OP_ADD, cur, ffn_inp);
    }
    int32_t cur = gm_build_norm_rms(l, inpL, gm_w(l, "output_norm.weight", 0), -1);
    l->t_embd = cur;
    cur = gm_build_lora_mm(l, gm_w_output(l), cur);
    const int32_t output_b = gm_w(l, "output.bias", 0); /* qwen2 */
    if (output_b != GM_NONE) cur = gm_binary(g, GM_OP_ADD, cur, output_b);
    l->t_logits = cur;
    gm_expand(g, cur);
}

void gm_arch_llama(gm_llm *l) { decoder_graph(l, false, 0); }

void gm_arch_qwen3moe(gm_llm *l) { decoder_graph(l, true, 0); }

/* smollm3.cpp:19-60: llama's, without RoPE on every fourth layer
 * (n_no_rope_layer_step) */
void gm_arch_smollm3(gm_llm *l) { decoder_graph(l, false, 4); }

/*
 * fit_blocks.h - more of llama.cpp's graph-building blocks over the
 * shape-only graph (internal), beside fit_llm.h's: the general forms the
 * dense decoders and the encoders need, shared by every architecture file.
 *
 *   (build_norm is gm_build_norm in fit_llm.h; build_ffn is
 *   gm_build_ffn_ex in fit_block_ffn.h, included here)
 *   fit_block_attn.c  build_qkv (fused or separate, biases, reshaped or
 *                     not), the attention without a cache (encoders), T5's
 *                     cross attention and relative position bias, the
 *                     choice of a sliding-window pair's cache per layer
 *   fit_block_pool.c  build_pooling (mean, CLS/last, rank heads)
 *
 * Each follows the llama.cpp function it names op for op and in its order
 * (node order decides what ggml-alloc reuses); values that change no shape
 * (eps, scales, rope parameters) are left out, but an op that exists only
 * when a value is non-zero (a scale by f_logit_scale, ...) is built when
 * llama.cpp builds it.
 */
#ifndef GGUFMAP_FIT_BLOCKS_H
#define GGUFMAP_FIT_BLOCKS_H

#include "fit_block_ffn.h"
#include "fit_llm.h"

/* ---- attention (fit_block_attn.c) ---- */

/* build_qkv (llama-graph.cpp:1633-1745): layer il's fused attn_qkv (views
 * of one product) or separate Q, K, V, each with its bias when the model
 * has one; reshaped to heads, or (reshape false: olmo2) left 2-D */
void gm_build_qkv_ex(gm_llm *l, int il, int32_t cur, int64_t head, int64_t n_head, int64_t n_head_kv, bool reshape,
                     int32_t *q, int32_t *k, int32_t *v);

/* A decoder's cache inputs: build_attn_inp_kv, or build_attn_inp_kv_iswa
 * where the memory is a sliding-window pair (the architectures whose
 * graph is a template over iswa: gemma3, olmo2, exaone4, phi3, ...). */
typedef struct gm_attn_kv_inputs {
    gm_attn_inp base, swa;
    bool iswa;
} gm_attn_kv_inputs;
void gm_attn_inp_kv_auto(gm_llm *l, gm_attn_kv_inputs *in);
/* build_attn over them for layer il: the sliding-window cache on a
 * sliding-window layer, else the base one (o->iswa is set from in) */
int32_t gm_build_attn_auto(gm_llm *l, const gm_attn_kv_inputs *in, gm_attn_opts o, int32_t q, int32_t k, int32_t v,
                           int il);

/* llama_model::get_rope_factors (llama-model.cpp:2259-2272): layer il's
 * rope_freqs, else its long or short factors by n_ctx_seq against
 * n_ctx_orig_yarn (the copy in the layer's context: gm_w_layer); GM_NONE
 * without. */
int32_t gm_rope_factors(gm_llm *l, int il);

/* llm_graph_input_attn_no_cache (build_attn_inp_no_cache, :2740-2764): the
 * [T, T] masks of an encoder, f16 with flash attention */
typedef struct gm_attn_inp_nc {
    int32_t kq_mask, kq_mask_swa;
} gm_attn_inp_nc;
void gm_attn_inp_no_cache(gm_llm *l, gm_attn_inp_nc *inp);
/* build_attn without a cache (:2766-2841): q, k, v expanded, attended */
int32_t gm_build_attn_no_cache(gm_llm *l, const gm_attn_inp_nc *inp, const gm_attn_opts *o, int32_t q, int32_t k,
                               int32_t v, int il);

/* T5: the encoder's output rows (build_inp_cross_embd: n_ctx_train rows at
 * a reserve), the cross-attention mask, the relative position buckets of
 * the encoder ([T, T]) and of the decoder ([n_kv, T]) */
int32_t gm_inp_cross_embd(gm_llm *l);
int32_t gm_attn_inp_cross(gm_llm *l);
int32_t gm_inp_pos_bucket_enc(gm_llm *l);
int32_t gm_inp_pos_bucket_dec(gm_llm *l, const gm_kv_cache *kv);
/* build_pos_bias (:2587-2600): attn_rel_b's rows per bucket, [n_kv, T, n_head] */
int32_t gm_build_pos_bias(gm_llm *l, int32_t pos_bucket, int32_t attn_rel_b);
/* build_attn with llm_graph_input_attn_cross (:3259-3332) */
int32_t gm_build_attn_cross(gm_llm *l, int32_t kq_mask, const gm_attn_opts *o, int32_t q, int32_t k, int32_t v,
                            int il);

/* ---- pooling (fit_block_pool.c) ---- */

/* llm_graph_context::build_pooling (:3677-3775), with --embedding: the
 * pooled embeddings over t_embd, marked as a graph output */
void gm_build_pooling(gm_llm *l);

#endif

/*
 * hparams.h - the hyperparameters llama.cpp v0.5.0 reads from a model's
 * metadata that decide how much memory a context takes (internal).
 *
 * llama.cpp reads them in llama_model_base::load_hparams
 * (src/llama-model.cpp:1231-1420: the keys every architecture shares) and
 * then in each architecture's load_arch_hparams (src/models/<arch>.cpp).
 * gm_hparams_read does the same in two steps: the shared keys, then the
 * architecture's reader from a table (hparams.c), so that one more
 * architecture is one more table row and one more reader.
 *
 * Per-layer values live in arrays of GM_MAX_LAYERS (LLAMA_MAX_LAYERS) as in
 * llama.cpp; a key may be a scalar (every layer) or an array of one value per
 * layer (get_key_or_arr).
 */
#ifndef GGUFMAP_HPARAMS_H
#define GGUFMAP_HPARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/model.h"

#define GM_MAX_LAYERS 512   /* LLAMA_MAX_LAYERS (src/llama-hparams.h:11) */

/* The architectures whose context memory is modelled: every architecture
 * ggufmap-fixture makes (docs/fixture-archs.md), one row each in hparams.c. */
typedef enum gm_arch {
    GM_ARCH_UNKNOWN = 0,
    GM_ARCH_LLAMA, GM_ARCH_QWEN3MOE, GM_ARCH_GEMMA4, GM_ARCH_QWEN4EXP,
    /* dense decoders */
    GM_ARCH_QWEN2, GM_ARCH_QWEN3, GM_ARCH_PHI3, GM_ARCH_MISTRAL3, GM_ARCH_GRANITE, GM_ARCH_COMMAND_R,
    GM_ARCH_COHERE2, GM_ARCH_OLMO2, GM_ARCH_STARCODER2, GM_ARCH_EXAONE4, GM_ARCH_SMOLLM3,
    /* mixtures of experts */
    GM_ARCH_GPT_OSS, GM_ARCH_QWEN2MOE, GM_ARCH_OLMOE, GM_ARCH_PHIMOE, GM_ARCH_ERNIE4_5_MOE, GM_ARCH_MINIMAX_M2,
    GM_ARCH_GRANITEMOE, GM_ARCH_GLM4MOE, GM_ARCH_STEP35, GM_ARCH_COHERE2MOE, GM_ARCH_HY_V3,
    /* multi-head latent attention */
    GM_ARCH_DEEPSEEK2, GM_ARCH_DEEPSEEK32, GM_ARCH_GLM_DSA,
    /* recurrent and hybrid */
    GM_ARCH_QWEN35, GM_ARCH_QWEN35MOE, GM_ARCH_QWEN3NEXT, GM_ARCH_GRANITEHYBRID, GM_ARCH_NEMOTRON_H,
    GM_ARCH_NEMOTRON_H_MOE, GM_ARCH_LFM2, GM_ARCH_FALCON_H1, GM_ARCH_MAMBA2, GM_ARCH_RWKV7,
    /* gemma */
    GM_ARCH_GEMMA2, GM_ARCH_GEMMA3, GM_ARCH_GEMMA3N,
    /* encoders and encoder-decoders */
    GM_ARCH_BERT, GM_ARCH_NOMIC_BERT, GM_ARCH_T5, GM_ARCH_T5ENCODER
} gm_arch;

/* Which memory module llama_model::create_memory makes (llama-model.cpp:2274-2760). */
typedef enum gm_memory_kind {
    GM_MEMORY_NONE = 0,     /* none: encoders (BERT-style), res = nullptr */
    GM_MEMORY_KV,           /* llama_kv_cache */
    GM_MEMORY_KV_ISWA,      /* llama_kv_cache_iswa: a full cache and a sliding-window one */
    GM_MEMORY_KV_DSA,       /* llama_kv_cache_dsa: the MLA cache and the lightning indexer's key cache */
    GM_MEMORY_RECURRENT,    /* llama_memory_recurrent */
    GM_MEMORY_HYBRID,       /* llama_memory_hybrid: KV on attention layers, state on recurrent ones */
    GM_MEMORY_HYBRID_ISWA,  /* llama_memory_hybrid_iswa: the same with a sliding-window pair of caches */
    GM_MEMORY_HYBRID_IDX    /* llama_memory_hybrid_idx: hybrid plus an indexer key cache (qwen4exp) */
} gm_memory_kind;

/* Which layers a hybrid model's attention cache holds (create_memory's filter_attn). */
typedef enum gm_attn_filter {
    GM_ATTN_NOT_RECR = 0,   /* the default: !is_recr(il) */
    GM_ATTN_ALL,            /* falcon-h1: every layer has attention and state */
    GM_ATTN_TRUNK_NOT_RECR, /* qwen3next, qwen35*, qwen4exp: il < n_layer && !is_recr(il) */
    GM_ATTN_NEMOTRON        /* nemotron_h*: !is_recr(il) && n_ff(il) == 0 */
} gm_attn_filter;

/* When llama.cpp turns -fa auto off after the fact: the probe graph puts
 * a layer's FLASH_ATTN_EXT on another device than the layer
 * (resolve_fused_ops, llama-context.cpp:506-560; fit_context.c). */
typedef enum gm_fa_auto {
    GM_FA_STAYS = 0,             /* every other architecture keeps it (measured on the fixtures) */
    GM_FA_OFF_WHEN_MOVED,        /* Mamba/short-conv hybrids: the op takes the next recurrent layer's device */
    GM_FA_OFF_GPU_NKVO,          /* falcon-h1: with a GPU layer and -nkvo (its state stays on the CPU) */
    GM_FA_OFF_GPU_WITH_CPU_LAYER /* t5: its decoder attention runs on the GPU whenever one is present */
} gm_fa_auto;

/* The state-space ops of its layers whose shapes a device's kernels judge
 * (the compute bound asks the device's weight_supported with them). */
typedef enum gm_ssm_ops {
    GM_SSM_OPS_NONE = 0,
    GM_SSM_OPS_SHORT_CONV,       /* lfm2: SSM_CONV over n_embd channels */
    GM_SSM_OPS_MAMBA2            /* SSM_CONV over d_inner + 2 n_group d_state channels, then Mamba-2's SSM_SCAN */
} gm_ssm_ops;

/* What an architecture does differently from the common path, as data in
 * its row (hparams.c): the parts of fit ask these, not its name. */
typedef struct gm_arch_traits {
    bool encoder_decoder;        /* t5: the decoder attends over the encoder's n_ctx_train rows, the output
                                    buffer always holds embeddings ("hacky enc-dec support",
                                    llama-context.cpp:2121-2125), and its position bias cannot broadcast over
                                    KV streams (t5.cpp:147) */
    bool position_bias;          /* t5, t5encoder: a relative position bias on the scores keeps flash
                                    attention off (llama-graph.cpp:2626) */
    bool cache_unread;           /* t5encoder: a KV cache its graph never reads (it attends over the ubatch) */
    bool kv_shared;              /* gemma4, gemma3n: layers from n_layer_kv_from_start read an earlier layer's
                                    cache (llama-model.cpp:2657-2666) */
    bool mtp_plain_cache;        /* the MTP draft context makes a plain KV cache instead of the hybrid memory
                                    (qwen35*, qwen3next, nemotron_h_moe) */
    bool mtp_one_block;          /* its MTP draft graph asserts a single NextN block
                                    (GGML_ASSERT(hparams.n_layer_nextn == 1), e.g. qwen35.cpp:489) */
    gm_fa_auto fa_auto;
    uint8_t nodes_per_token;     /* the compute context's room (llama_context::graph_max_nodes,
                                    llama-context.cpp:2365): max(n_tokens x this, nodes_per_tensor x the
                                    model's tensors); 0: max(1024, 8 x the tensors) */
    uint8_t nodes_per_tensor;    /* 0: 8 */
    bool rs_rollback;            /* llm_arch_supports_rs_rollback (llama-arch.cpp:1112-1128): the recurrent
                                    memory keeps n_rs_seq rollback rows per sequence when asked (--mtp) */
    bool rank_soft_max;          /* qwen3: build_pooling's rank head ends in a soft max (llama-graph.cpp:3760) */
    gm_ssm_ops ssm_ops;
} gm_arch_traits;

typedef enum gm_swa_type { GM_SWA_NONE = 0, GM_SWA_STANDARD = 1, GM_SWA_CHUNKED = 2, GM_SWA_SYMMETRIC = 3 } gm_swa_type;

typedef struct gm_hparams {
    gm_arch arch;                /* for the graph builders' dispatch (fit_compute.c) */
    char arch_name[64];          /* general.architecture */
    gm_arch_traits traits;       /* its row's differences */
    gm_memory_kind memory;
    gm_attn_filter attn_filter;
    bool ctx_mtp;                /* the MTP draft context's view (LLAMA_CONTEXT_TYPE_MTP): gm_hparams_for_mtp */

    uint32_t n_layer_all;        /* <arch>.block_count */
    uint32_t n_layer_nextn;      /* <arch>.nextn_predict_layers (MTP blocks, at the end) */
    uint32_t n_layer;            /* n_layer_all - n_layer_nextn: the trunk */
    uint32_t n_ctx_train;
    uint32_t n_embd;
    uint32_t n_embd_out;         /* rows of the embeddings output (qwen4exp: hc * n_embd) */
    uint32_t n_vocab;
    bool causal;                 /* attention.causal (default true) */
    uint32_t pooling_type;       /* pooling_type (0: none) */
    bool has_encoder;            /* T5: the output buffer always has embeddings rows, n_outputs_max = n_batch */
    bool is_mla;                 /* key_length_mla and value_length_mla: the cache has K only */

    uint32_t n_head[GM_MAX_LAYERS];
    uint32_t n_head_kv[GM_MAX_LAYERS];
    uint32_t n_ff[GM_MAX_LAYERS];
    uint32_t head_k_full, head_v_full;   /* key_length / value_length (default n_embd / n_head) */
    uint32_t head_k_swa, head_v_swa;     /* on sliding-window layers (default: the full ones) */
    uint32_t n_rot_full, n_rot_swa;

    gm_swa_type swa_type;
    uint32_t n_swa;                      /* attention.sliding_window */
    bool is_swa[GM_MAX_LAYERS];
    int32_t n_layer_kv_from_start;       /* layers >= this one have no KV cache of their own; -1: all have */

    /* mixture of experts */
    uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;

    /* dense layers first (deepseek2, glm4moe, ...), shared experts */
    uint32_t n_layer_dense_lead, n_expert_shared;

    /* recurrent layers: Mamba-2 and gated delta nets (ssm_*), RWKV (wkv, token shift), LFM2 (short conv) */
    bool is_recr[GM_MAX_LAYERS];
    uint32_t ssm_d_conv, ssm_d_inner, ssm_d_state, ssm_dt_rank, ssm_n_group;
    uint32_t wkv_head_size, token_shift_count, shortconv_l_cache;

    /* the DSA lightning indexer's key cache (deepseek32, glm-dsa): which trunk layers have one */
    bool is_indexer_full[GM_MAX_LAYERS];

    /* qwen4exp: hyper-connections, the indexer, per-layer n-gram embeddings */
    uint32_t hc_mult, hc_low_rank;
    uint32_t indexer_n_head, indexer_head_size, indexer_top_k;
    uint32_t compress_ratio[GM_MAX_LAYERS];
    bool is_ple[GM_MAX_LAYERS];
    uint32_t ple_n_heads, ple_head_dim, ple_ngram_size, ple_conv_kernel;
    uint32_t n_embd_per_layer;           /* gemma4: per-layer input embedding width */
    float final_logit_softcapping;       /* gemma4: logits soft-capped unless 0 (default 30) */

    /* graphs-dense: values whose being non-zero adds ops to the graph, and
     * the sizes the dense decoders' and encoders' graphs read */
    float f_embedding_scale;             /* embedding_scale (granite): the input scaled */
    float f_logit_scale;                 /* logit_scale (granite: divided by, command-r/cohere2: times) */
    float f_residual_scale;              /* residual_scale (granite): both residual branches scaled */
    float f_attn_temp_scale;             /* attention.temperature_scale (mistral3): Q times an input */
    bool attn_soft_cap;                  /* gemma2: attention scores soft-capped */
    bool no_rope;                        /* granite: rope.scaling.finetuned false turns RoPE off */
    bool deepstack;                      /* granite vision: deepstack_mapping injects projector rows (no graph) */
    uint32_t n_ctx_orig_yarn;            /* rope.scaling.original_context_length (default n_ctx_train) */
    uint32_t dec_n_layer;                /* t5: decoder_block_count (default n_layer) */
    /* graphs (graphs-recurrent): positions per token in inp_pos, 4 with
     * M-RoPE/IMRoPE (llama_hparams::n_pos_per_embd; 0 reads as 1) */
    uint32_t n_pos_per_embd;

    /* graphs-moe: what build_moe_ffn, MLA and the MoE families' graphs read
     * (llama_hparams' fields of the same names; their defaults) */
    uint32_t n_expert_used_l[GM_MAX_LAYERS];     /* expert_used_count per layer (n_expert_used(il)) */
    uint32_t expert_gating_func;                 /* llama_expert_gating_func_type after the arch's default */
    bool expert_weights_norm;
    float expert_weights_scale;                  /* 0 and 1: no scale op */
    uint32_t n_expert_groups, n_group_used;      /* expert groups (DeepSeek V3) */
    uint32_t n_moe_layer_step;                   /* ernie4_5-moe: interleave_moe_layer_step */
    float swiglu_clamp_exp[GM_MAX_LAYERS], swiglu_clamp_shexp[GM_MAX_LAYERS];
    uint32_t n_lora_q, n_lora_kv;                /* MLA: q_lora_rank (0: a plain wq), kv_lora_rank */
    uint32_t head_k_mla, head_v_mla;             /* key_length_mla / value_length_mla (default key/value_length) */
    bool layer_norm;                             /* cohere2moe without an RMS epsilon: LLM_NORM */
} gm_hparams;

/* Reads what llama.cpp reads, with its defaults.  Returns GGUFMAP_OK;
 * GGUFMAP_ENOTFOUND when the architecture is not modelled (arch_name is
 * still filled in); GGUFMAP_EFORMAT with a message naming the key when a key
 * llama.cpp requires is missing or malformed. */
int gm_hparams_read(const ggufmap_model *model, gm_hparams *hp, ggufmap_error *err);

/* The same model as the MTP draft context sees it: create_memory with
 * ctx_type MTP (llama-model.cpp:2274-2760) gives the DSA archs and the
 * qwen3.5/qwen3next/nemotron_h_moe hybrids a plain cache, and every cache
 * holds the MTP layers (il >= n_layer) instead of the trunk. */
void gm_hparams_for_mtp(gm_hparams *hp);

/* Per-layer sizes as llama_hparams computes them (src/llama-hparams.cpp:140-260). */
uint32_t gm_head_k(const gm_hparams *hp, uint32_t il);
uint32_t gm_head_v(const gm_hparams *hp, uint32_t il);
uint32_t gm_n_embd_k_gqa(const gm_hparams *hp, uint32_t il);
uint32_t gm_n_embd_v_gqa(const gm_hparams *hp, uint32_t il);
uint32_t gm_n_embd_v_gqa_max(const gm_hparams *hp);
bool gm_n_embd_v_gqa_variable(const gm_hparams *hp);
bool gm_has_kv(const gm_hparams *hp, uint32_t il);
/* Recurrent state rows (llama-hparams.cpp:208-258): conv or token shift (r),
 * ssm or wkv (s), and the PLE conv history. */
uint32_t gm_n_embd_r(const gm_hparams *hp);
uint32_t gm_n_embd_s(const gm_hparams *hp);
uint32_t gm_ple_conv_state(const gm_hparams *hp);

#endif

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

/* The architectures whose context memory is modelled. */
typedef enum gm_arch {
    GM_ARCH_UNKNOWN = 0,
    GM_ARCH_LLAMA,
    GM_ARCH_QWEN3MOE,
    GM_ARCH_GEMMA4,
    GM_ARCH_QWEN4EXP
} gm_arch;

/* Which memory module llama_model::create_memory makes (llama-model.cpp:2480-2750). */
typedef enum gm_memory_kind {
    GM_MEMORY_KV = 0,       /* llama_kv_cache */
    GM_MEMORY_KV_ISWA,      /* llama_kv_cache_iswa: a full cache and a sliding-window one */
    GM_MEMORY_RECURRENT,    /* llama_memory_recurrent */
    GM_MEMORY_HYBRID,       /* llama_memory_hybrid: KV on attention layers, state on recurrent ones */
    GM_MEMORY_HYBRID_IDX    /* llama_memory_hybrid_idx: hybrid plus an indexer key cache (qwen4exp) */
} gm_memory_kind;

typedef enum gm_swa_type { GM_SWA_NONE = 0, GM_SWA_STANDARD = 1, GM_SWA_CHUNKED = 2, GM_SWA_SYMMETRIC = 3 } gm_swa_type;

typedef struct gm_hparams {
    gm_arch arch;
    char arch_name[64];          /* general.architecture */
    gm_memory_kind memory;

    uint32_t n_layer_all;        /* <arch>.block_count */
    uint32_t n_layer_nextn;      /* <arch>.nextn_predict_layers (MTP blocks, at the end) */
    uint32_t n_layer;            /* n_layer_all - n_layer_nextn: the trunk */
    uint32_t n_ctx_train;
    uint32_t n_embd;
    uint32_t n_embd_out;         /* rows of the embeddings output (qwen4exp: hc * n_embd) */
    uint32_t n_vocab;
    bool causal;

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

    /* recurrent layers (qwen4exp's gated delta net) */
    bool is_recr[GM_MAX_LAYERS];
    uint32_t ssm_d_conv, ssm_d_inner, ssm_d_state, ssm_dt_rank, ssm_n_group;

    /* qwen4exp: hyper-connections, the indexer, per-layer n-gram embeddings */
    uint32_t hc_mult, hc_low_rank;
    uint32_t indexer_n_head, indexer_head_size, indexer_top_k;
    uint32_t compress_ratio[GM_MAX_LAYERS];
    bool is_ple[GM_MAX_LAYERS];
    uint32_t ple_n_heads, ple_head_dim, ple_ngram_size, ple_conv_kernel;
    uint32_t n_embd_per_layer;           /* gemma4: per-layer input embedding width */
    float final_logit_softcapping;       /* gemma4: logits soft-capped unless 0 (default 30) */
} gm_hparams;

/* Reads what llama.cpp reads, with its defaults.  Returns GGUFMAP_OK;
 * GGUFMAP_ENOTFOUND when the architecture is not modelled (arch_name is
 * still filled in); GGUFMAP_EFORMAT with a message naming the key when a key
 * llama.cpp requires is missing or malformed. */
int gm_hparams_read(const ggufmap_model *model, gm_hparams *hp, ggufmap_error *err);

/* Per-layer sizes as llama_hparams computes them (src/llama-hparams.cpp:140-260). */
uint32_t gm_head_k(const gm_hparams *hp, uint32_t il);
uint32_t gm_head_v(const gm_hparams *hp, uint32_t il);
uint32_t gm_n_embd_k_gqa(const gm_hparams *hp, uint32_t il);
uint32_t gm_n_embd_v_gqa(const gm_hparams *hp, uint32_t il);
uint32_t gm_n_embd_v_gqa_max(const gm_hparams *hp);
bool gm_n_embd_v_gqa_variable(const gm_hparams *hp);
bool gm_has_kv(const gm_hparams *hp, uint32_t il);
/* Recurrent state rows: conv (r), ssm (s), and the PLE conv history. */
uint32_t gm_n_embd_r(const gm_hparams *hp);
uint32_t gm_n_embd_s(const gm_hparams *hp);
uint32_t gm_ple_conv_state(const gm_hparams *hp);

#endif

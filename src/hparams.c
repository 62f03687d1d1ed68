/*
 * hparams.c - reading the hyperparameters that size a llama.cpp context.
 *
 * A reader walks the first shard's metadata with llama.cpp's rules
 * (llama-model-loader.cpp): a scalar key must have exactly the type llama.cpp
 * asks for (get_key: "key ... has wrong type"), an array key read per layer
 * may be a scalar for every layer or an array of exactly n_layer_all bool,
 * u32 or i32 values (get_key_or_arr / get_arr).  The shared keys come first
 * (load_hparams, llama-model.cpp:1231-1420), then the architecture's own
 * keys through the table at the bottom: adding an architecture is adding a
 * row and its reader.
 */
#include "hparams.h"

#include <stdio.h>
#include <string.h>

#include "ggufmap/source.h"
#include "ggufmap/types.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* Key reading with llama.cpp's type rules                                   */
/* ------------------------------------------------------------------------ */

typedef struct reader {
    const ggufmap_model *model;
    const char *path;      /* the first shard, for messages */
    const char *arch;      /* key prefix */
    ggufmap_error *err;
    int status;            /* the first failure, GGUFMAP_OK until then */
} reader;

static const ggufmap_kv *find_key(const reader *r, const char *suffix, char *key, size_t cap) {
    snprintf(key, cap, "%s.%s", r->arch, suffix);
    return ggufmap_model_find_kv(r->model, key);
}

static void fail_key(reader *r, const ggufmap_kv *kv, const char *key, const char *why) {
    if (r->status != GGUFMAP_OK) return;
    if (kv)
        r->status = gm_fail(r->err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s': %s", r->path,
                            (unsigned long long)kv->offset, key, why);
    else
        r->status = gm_fail(r->err, GGUFMAP_EFORMAT, "%s: key '%s': %s", r->path, key, why);
}

/* get_key for a u32 (the key must be a UINT32 scalar).  Leaves *out alone
 * when the key is absent; a missing required key fails the reader. */
static bool get_u32(reader *r, const char *suffix, uint32_t *out, bool required) {
    char key[160];
    const ggufmap_kv *kv = find_key(r, suffix, key, sizeof key);
    int64_t v;
    if (!kv) {
        if (required) fail_key(r, NULL, key, "missing (llama.cpp requires it)");
        return false;
    }
    if (kv->type != GGUFMAP_VALUE_UINT32 || ggufmap_kv_int(kv, &v) != GGUFMAP_OK) {
        fail_key(r, kv, key, "not a u32 (llama.cpp refuses the model)");
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* get_key for a f32 (the key must be a FLOAT32 scalar) */
static void get_f32(reader *r, const char *suffix, float *out) {
    char key[160];
    const ggufmap_kv *kv = find_key(r, suffix, key, sizeof key);
    double v;
    if (!kv) return;
    if (kv->type != GGUFMAP_VALUE_FLOAT32 || ggufmap_kv_float(kv, &v) != GGUFMAP_OK) {
        fail_key(r, kv, key, "not a f32 (llama.cpp refuses the model)");
        return;
    }
    *out = (float)v;
}

static bool get_bool(reader *r, const char *suffix, bool *out) {
    char key[160];
    const ggufmap_kv *kv = find_key(r, suffix, key, sizeof key);
    int64_t v;
    if (!kv) return false;
    if (kv->type != GGUFMAP_VALUE_BOOL || ggufmap_kv_int(kv, &v) != GGUFMAP_OK) {
        fail_key(r, kv, key, "not a bool (llama.cpp refuses the model)");
        return false;
    }
    *out = v != 0;
    return true;
}

/* get_arr into u32[]: a bool, u32 or i32 array of at most cap elements.
 * Returns the element count, or -1 when absent or bad. */
static int64_t get_arr_u32(reader *r, const char *suffix, uint32_t *out, uint32_t cap, bool required) {
    char key[160];
    const ggufmap_kv *kv = find_key(r, suffix, key, sizeof key);
    if (!kv || kv->type != GGUFMAP_VALUE_ARRAY) {
        if (required) fail_key(r, kv, key, "array missing (llama.cpp requires it)");
        return -1;
    }
    if (kv->elem_type != GGUFMAP_VALUE_BOOL && kv->elem_type != GGUFMAP_VALUE_UINT32 &&
        kv->elem_type != GGUFMAP_VALUE_INT32) {
        fail_key(r, kv, key, "not a bool, u32 or i32 array");
        return -1;
    }
    if (kv->count > cap) {
        fail_key(r, kv, key, "longer than llama.cpp allows");
        return -1;
    }
    for (uint64_t i = 0; i < kv->count; i++) {
        int64_t v = 0;
        ggufmap_kv_array_int(kv, i, &v);
        out[i] = kv->elem_type == GGUFMAP_VALUE_BOOL ? (v != 0) : (uint32_t)v;
    }
    return (int64_t)kv->count;
}

/* get_key_or_arr: one u32 for every layer, or an array of exactly n values. */
static bool get_u32_or_arr(reader *r, const char *suffix, uint32_t *out, uint32_t n, bool required) {
    char key[160];
    const ggufmap_kv *kv = find_key(r, suffix, key, sizeof key);
    if (!kv) {
        if (required) fail_key(r, NULL, key, "missing (llama.cpp requires it)");
        return false;
    }
    if (kv->type == GGUFMAP_VALUE_ARRAY) {
        if (kv->count != n) {
            fail_key(r, kv, key, "array length differs from block_count");
            return false;
        }
        return get_arr_u32(r, suffix, out, GM_MAX_LAYERS, required) == (int64_t)n;
    }
    uint32_t v;
    if (!get_u32(r, suffix, &v, required)) return false;
    for (uint32_t i = 0; i < n; i++) out[i] = v;
    return true;
}

static bool get_bool_or_arr(reader *r, const char *suffix, bool *out, uint32_t n) {
    uint32_t v[GM_MAX_LAYERS];
    if (!get_u32_or_arr(r, suffix, v, n, false)) return false;
    for (uint32_t i = 0; i < n; i++) out[i] = v[i] != 0;
    return true;
}

/* get_key_or_arr for f32: one value for every layer, or an array of exactly
 * n f32 values */
static void get_f32_or_arr(reader *r, const char *suffix, float *out, uint32_t n) {
    char key[160];
    const ggufmap_kv *kv = find_key(r, suffix, key, sizeof key);
    if (!kv) return;
    if (kv->type != GGUFMAP_VALUE_ARRAY) {
        float v = 0.0f;
        get_f32(r, suffix, &v);
        for (uint32_t i = 0; i < n; i++) out[i] = v;
        return;
    }
    if (kv->elem_type != GGUFMAP_VALUE_FLOAT32 || kv->count != n) {
        fail_key(r, kv, key, kv->count != n ? "array length differs from block_count" : "not a f32 array");
        return;
    }
    for (uint64_t i = 0; i < kv->count; i++) {
        double v = 0;
        ggufmap_kv_array_float(kv, i, &v);
        out[i] = (float)v;
    }
}

/* llama_vocab::load: tokenizer "none"/"no_vocab" sizes the vocabulary from
 * <arch>.vocab_size, every other tokenizer from tokenizer.ggml.tokens. */
static uint32_t vocab_size(reader *r) {
    const ggufmap_kv *kv = ggufmap_model_find_kv(r->model, "tokenizer.ggml.model");
    const char *s;
    uint64_t n;
    if (kv && ggufmap_kv_string(kv, &s, &n) == GGUFMAP_OK &&
        ((n == 4 && memcmp(s, "none", 4) == 0) || (n == 8 && memcmp(s, "no_vocab", 8) == 0))) {
        uint32_t v = 0;
        get_u32(r, "vocab_size", &v, false);
        return v;
    }
    kv = ggufmap_model_find_kv(r->model, "tokenizer.ggml.tokens");
    return kv && kv->type == GGUFMAP_VALUE_ARRAY ? (uint32_t)kv->count : 0;
}

/* ------------------------------------------------------------------------ */
/* The keys every architecture shares (llama-model.cpp:1255-1402)           */
/* ------------------------------------------------------------------------ */

static void read_shared(reader *r, gm_hparams *hp) {
    get_u32(r, "context_length", &hp->n_ctx_train, true);
    get_u32(r, "embedding_length", &hp->n_embd, true);
    get_u32(r, "embedding_length_out", &hp->n_embd_out, false);
    hp->causal = true;
    get_bool(r, "attention.causal", &hp->causal);
    get_u32(r, "pooling_type", &hp->pooling_type, false);
    if (get_u32(r, "block_count", &hp->n_layer_all, true) &&
        (hp->n_layer_all == 0 || hp->n_layer_all > GM_MAX_LAYERS))
        fail_key(r, NULL, "block_count", "outside 1..512 (llama.cpp asserts)");
    if (r->status != GGUFMAP_OK) return;
    get_u32(r, "nextn_predict_layers", &hp->n_layer_nextn, false);
    if (hp->n_layer_nextn > hp->n_layer_all) fail_key(r, NULL, "nextn_predict_layers", "exceeds block_count");
    hp->n_layer = hp->n_layer_all - hp->n_layer_nextn;
    const uint32_t n = hp->n_layer_all;
    get_u32(r, "expert_count", &hp->n_expert, false);
    if (get_u32_or_arr(r, "expert_used_count", hp->n_expert_used_l, n, false)) hp->n_expert_used = hp->n_expert_used_l[0];
    get_u32(r, "expert_group_count", &hp->n_expert_groups, false);
    get_u32(r, "expert_group_used_count", &hp->n_group_used, false);
    get_u32_or_arr(r, "feed_forward_length", hp->n_ff, n, false);
    get_u32_or_arr(r, "attention.head_count", hp->n_head, n, false);
    memcpy(hp->n_head_kv, hp->n_head, sizeof hp->n_head); /* head_count_kv defaults to head_count */
    get_u32_or_arr(r, "attention.head_count_kv", hp->n_head_kv, n, false);
    if (hp->n_head[0] > 0) {
        hp->head_k_full = hp->head_v_full = hp->n_embd / hp->n_head[0];
        get_u32(r, "attention.key_length", &hp->head_k_full, false);
        get_u32(r, "attention.value_length", &hp->head_v_full, false);
        hp->n_rot_full = hp->head_k_full;
        get_u32(r, "rope.dimension_count", &hp->n_rot_full, false);
    }
    hp->head_k_swa = hp->head_k_full;
    hp->head_v_swa = hp->head_v_full;
    get_u32(r, "attention.key_length_swa", &hp->head_k_swa, false);
    get_u32(r, "attention.value_length_swa", &hp->head_v_swa, false);
    hp->n_rot_swa = hp->n_rot_full;
    get_u32(r, "rope.dimension_count_swa", &hp->n_rot_swa, false);
    hp->n_vocab = vocab_size(r);
    hp->n_layer_kv_from_start = -1;
    hp->n_ctx_orig_yarn = hp->n_ctx_train;
    get_u32(r, "rope.scaling.original_context_length", &hp->n_ctx_orig_yarn, false);
}

/* ------------------------------------------------------------------------ */
/* Readers the architectures share                                           */
/* ------------------------------------------------------------------------ */

static void require_nonzero(reader *r, const char *suffix, uint32_t v) {
    char key[160];
    if (v != 0) return;
    snprintf(key, sizeof key, "%s.%s", r->arch, suffix);
    fail_key(r, NULL, key, "must be greater than zero (llama.cpp refuses the model)");
}

/* expert_feed_forward_length, scalar or per layer: only the graph's sizes use it */
static void read_expert_ff(reader *r, gm_hparams *hp) {
    uint32_t ff_exp[GM_MAX_LAYERS] = {0};
    if (get_u32_or_arr(r, "expert_feed_forward_length", ff_exp, hp->n_layer_all, false)) hp->n_ff_exp = ff_exp[0];
    get_u32(r, "expert_shared_feed_forward_length", &hp->n_ff_shexp, false);
    get_u32(r, "leading_dense_block_count", &hp->n_layer_dense_lead, false);
    get_u32(r, "expert_shared_count", &hp->n_expert_shared, false);
}

/* load_swa_pattern (llama-model.cpp:3308-3315): a per-layer array, else a
 * period (the key, or the architecture's default) for set_swa_pattern
 * (llama-hparams.cpp:8-22): with dense_first layer 0 of each period is
 * full, else the last one; MTP layers are never SWA. */
static void read_swa_pattern(reader *r, gm_hparams *hp, uint32_t n_pattern, bool dense_first) {
    uint32_t arr[GM_MAX_LAYERS] = {0};
    hp->swa_type = GM_SWA_STANDARD;
    int64_t n = get_arr_u32(r, "attention.sliding_window_pattern", arr, GM_MAX_LAYERS, false);
    if (n >= 0) {
        for (int64_t i = 0; i < n; i++) hp->is_swa[i] = arr[i] != 0;
        return;
    }
    get_u32(r, "attention.sliding_window_pattern", &n_pattern, false);
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        const uint32_t k = n_pattern ? il % n_pattern : 0;
        hp->is_swa[il] = n_pattern == 0 || (dense_first ? k != 0 : k < n_pattern - 1);
    }
}

/* the architectures that turn SWA on only when the window key is there and
 * positive (olmo2, gemma3, lfm2's attention layers) */
static bool read_optional_window(reader *r, gm_hparams *hp) {
    return get_u32(r, "attention.sliding_window", &hp->n_swa, false) && hp->n_swa > 0;
}

/* the Mamba-2 / gated delta net sizes, all required (llama.cpp's get_key) */
static void read_ssm(reader *r, gm_hparams *hp) {
    get_u32(r, "ssm.conv_kernel", &hp->ssm_d_conv, true);
    get_u32(r, "ssm.inner_size", &hp->ssm_d_inner, true);
    get_u32(r, "ssm.state_size", &hp->ssm_d_state, true);
    get_u32(r, "ssm.time_step_rank", &hp->ssm_dt_rank, true);
    get_u32(r, "ssm.group_count", &hp->ssm_n_group, true);
}

/* qwen3next, qwen35*, qwen4exp: attention.recurrent_layers, else all trunk
 * layers but every full_attention_interval-th (default 4) are recurrent */
static void read_recurrent_interval(reader *r, gm_hparams *hp) {
    if (get_bool_or_arr(r, "attention.recurrent_layers", hp->is_recr, hp->n_layer_all)) return;
    uint32_t interval = 4;
    get_u32(r, "full_attention_interval", &interval, false);
    require_nonzero(r, "full_attention_interval", interval);
    for (uint32_t i = 0; interval && i < hp->n_layer_all; i++)
        hp->is_recr[i] = i < hp->n_layer && (i + 1) % interval != 0;
}

/* multi-head latent attention (deepseek2.cpp:3-40, deepseek32.cpp,
 * glm-dsa.cpp): the cache holds the compressed K (key_length per head) and
 * no V when both MLA lengths are set; q_lora_rank (required unless the
 * model projects q with one wq: lite), kv_lora_rank, the MLA head sizes,
 * the attention temperature and the routing keys (gating: the
 * architecture's default when absent, or required) */
static void read_mla(reader *r, gm_hparams *hp, bool lite, uint32_t default_gating, bool gating_required) {
    uint32_t k_mla = 0, v_mla = 0;
    get_u32(r, "attention.key_length_mla", &k_mla, false);
    get_u32(r, "attention.value_length_mla", &v_mla, false);
    hp->is_mla = k_mla != 0 && v_mla != 0;
    hp->head_k_mla = k_mla ? k_mla : hp->head_k_full;
    hp->head_v_mla = v_mla ? v_mla : hp->head_v_full;
    read_expert_ff(r, hp);
    get_u32(r, "attention.q_lora_rank", &hp->n_lora_q, !lite);
    get_u32(r, "attention.kv_lora_rank", &hp->n_lora_kv, true);
    get_f32(r, "attention.temperature_scale", &hp->f_attn_temp_scale);
    get_f32(r, "expert_weights_scale", &hp->expert_weights_scale);
    get_bool(r, "expert_weights_norm", &hp->expert_weights_norm);
    get_u32(r, "expert_gating_func", &hp->expert_gating_func, gating_required);
    if (hp->expert_gating_func == 0) hp->expert_gating_func = default_gating;
}

/* deepseek2.cpp:3-31: the lite models (26 or 27 layers, or 48 with a
 * 128256-token vocabulary) have no q_lora_rank; without expert_gating_func
 * softmax, sigmoid for GLM 4.7 Lite (47 or 48 layers, 154880 tokens) */
static void read_deepseek2(reader *r, gm_hparams *hp) {
    const bool lite = hp->n_layer == 27 || hp->n_layer == 26 || (hp->n_layer == 48 && hp->n_vocab == 128256);
    const bool glm47_lite = (hp->n_layer == 47 || hp->n_layer == 48) && hp->n_vocab == 154880;
    read_mla(r, hp, lite, glm47_lite ? 2 : 1, false);
}

/* ------------------------------------------------------------------------ */
/* Architecture readers (src/models/<arch>.cpp load_arch_hparams)            */
/* ------------------------------------------------------------------------ */

/* a KV cache over every layer, no key beyond the shared ones sizes it */
static void read_plain(reader *r, gm_hparams *hp) { read_expert_ff(r, hp); }

static void read_t5(reader *r, gm_hparams *hp) {
    hp->has_encoder = true;
    hp->dec_n_layer = hp->n_layer;
    get_u32(r, "decoder_block_count", &hp->dec_n_layer, false);
}

/* command-r.cpp:3-10, cohere2.cpp:3-17: logits times logit_scale when set */
static void read_command_r(reader *r, gm_hparams *hp) {
    read_expert_ff(r, hp);
    get_f32(r, "logit_scale", &hp->f_logit_scale);
}

static void read_cohere2(reader *r, gm_hparams *hp) {
    read_swa_pattern(r, hp, 4, false);
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
    get_f32(r, "logit_scale", &hp->f_logit_scale);
}

/* mistral3.cpp:3-20: llama 4's attention temperature when set */
static void read_mistral3(reader *r, gm_hparams *hp) {
    read_expert_ff(r, hp);
    get_f32(r, "attention.temperature_scale", &hp->f_attn_temp_scale);
}

/* granite-moe.cpp: muP scales (the logit one required) */
static void read_granitemoe(reader *r, gm_hparams *hp) {
    char key[160];
    read_expert_ff(r, hp);
    if (!find_key(r, "logit_scale", key, sizeof key)) fail_key(r, NULL, key, "missing (llama.cpp requires it)");
    get_f32(r, "logit_scale", &hp->f_logit_scale);
    get_f32(r, "residual_scale", &hp->f_residual_scale);
    get_f32(r, "embedding_scale", &hp->f_embedding_scale);
}

/* granite.cpp:5-38: granitemoe's keys and RoPE switched by rope.scaling.finetuned */
static void read_granite(reader *r, gm_hparams *hp) {
    bool rope_finetuned = true;
    read_granitemoe(r, hp);
    get_bool(r, "rope.scaling.finetuned", &rope_finetuned);
    hp->no_rope = !rope_finetuned;
    uint32_t map[GM_MAX_LAYERS];
    const int64_t n = get_arr_u32(r, "deepstack_mapping", map, GM_MAX_LAYERS, false);
    for (int64_t i = 0; i < n; i++) hp->deepstack |= (int32_t)map[i] >= 0;
}

/* olmo2.cpp: SWA only with a window, on 3 layers of 4 */
static void read_olmo2(reader *r, gm_hparams *hp) {
    if (read_optional_window(r, hp)) read_swa_pattern(r, hp, 4, false);
}

/* gemma3.cpp:3-16: SWA only with a window, on 5 layers of 6; logits
 * soft-capped when set */
static void read_gemma3(reader *r, gm_hparams *hp) {
    if (read_optional_window(r, hp)) read_swa_pattern(r, hp, 6, false);
    get_f32(r, "final_logit_softcapping", &hp->final_logit_softcapping);
}

/* exaone4.cpp:3-20: the 64-layer model has a 4096 window on 3 of 4 layers */
static void read_exaone4(reader *r, gm_hparams *hp) {
    if (hp->n_layer == 64) {
        hp->n_swa = 4096;
        read_swa_pattern(r, hp, 4, false);
    }
    get_u32(r, "attention.sliding_window", &hp->n_swa, false);
}

/* ------------------------------------------------------------------------ */
/* graphs-moe: the routing and scale keys the MoE families' graphs read      */
/* ------------------------------------------------------------------------ */

/* expert_weights_scale / _norm and expert_gating_func, with the
 * architecture's gating when the key is absent (0: none, as llama.cpp) */
static void read_moe_routing(reader *r, gm_hparams *hp, uint32_t default_gating) {
    read_expert_ff(r, hp);
    get_f32(r, "expert_weights_scale", &hp->expert_weights_scale);
    get_bool(r, "expert_weights_norm", &hp->expert_weights_norm);
    get_u32(r, "expert_gating_func", &hp->expert_gating_func, false);
    if (hp->expert_gating_func == 0) hp->expert_gating_func = default_gating;
}

/* hy-v3.cpp: sigmoid unless the key says otherwise */
static void read_moe_sigmoid(reader *r, gm_hparams *hp) { read_moe_routing(r, hp, 2); }

/* glm4-moe.cpp: hy_v3's routing; with rope sections M-RoPE, four positions
 * per token (llama_model_rope_type, llama-model.cpp:3074) */
static void read_glm4moe(reader *r, gm_hparams *hp) {
    uint32_t sections[4] = { 0 };
    read_moe_routing(r, hp, 2);
    if (get_arr_u32(r, "rope.dimension_sections", sections, 4, false) >= 2)
        hp->n_pos_per_embd = sections[0] > 0 && sections[1] > 0 ? 4 : 1;
}

/* minimax-m2.cpp:3-8: only the gating function (no default) */
static void read_minimax_m2(reader *r, gm_hparams *hp) {
    read_expert_ff(r, hp);
    get_u32(r, "expert_gating_func", &hp->expert_gating_func, false);
}

/* ernie4-5.cpp:8-13: MoE every interleave_moe_layer_step-th layer after the dense ones */
static void read_ernie4_5_moe(reader *r, gm_hparams *hp) {
    read_expert_ff(r, hp);
    get_u32(r, "interleave_moe_layer_step", &hp->n_moe_layer_step, true);
}

static void read_gpt_oss(reader *r, gm_hparams *hp) {
    read_expert_ff(r, hp);
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
    read_swa_pattern(r, hp, 2, false);
}

/* step35.cpp:3-40: the SWA layers by a required array */
static void read_step35(reader *r, gm_hparams *hp) {
    uint32_t arr[GM_MAX_LAYERS] = {0};
    read_moe_routing(r, hp, 2);
    get_f32_or_arr(r, "swiglu_clamp_exp", hp->swiglu_clamp_exp, hp->n_layer_all);
    get_f32_or_arr(r, "swiglu_clamp_shexp", hp->swiglu_clamp_shexp, hp->n_layer_all);
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
    hp->swa_type = GM_SWA_STANDARD;
    int64_t n = get_arr_u32(r, "attention.sliding_window_pattern", arr, GM_MAX_LAYERS, true);
    for (int64_t i = 0; i < n; i++) hp->is_swa[i] = arr[i] != 0;
}

static void read_cohere2moe(reader *r, gm_hparams *hp) {
    char key[160];
    read_moe_routing(r, hp, 2);
    hp->layer_norm = !find_key(r, "attention.layer_norm_rms_epsilon", key, sizeof key);
    get_f32(r, "logit_scale", &hp->f_logit_scale);
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
    get_u32(r, "leading_dense_block_count", &hp->n_layer_dense_lead, true);
    read_swa_pattern(r, hp, 4, true);
}

static void read_gemma2(reader *r, gm_hparams *hp) {
    hp->n_swa = 4096;
    read_swa_pattern(r, hp, 2, false);
    get_u32(r, "attention.sliding_window", &hp->n_swa, false);
    hp->attn_soft_cap = true; /* gemma2.cpp:7 */
}

/* gemma3n.cpp:3-12: layers from 20 on read the cache of layer 18 or 19 */
static void read_gemma3n(reader *r, gm_hparams *hp) {
    read_swa_pattern(r, hp, 5, false);
    hp->n_layer_kv_from_start = 20;
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
}

/* gemma4.cpp:3-33: every layer SWA or not by a required array, the last
 * shared_kv_layers without a cache of their own. */
static void read_gemma4(reader *r, gm_hparams *hp) {
    uint32_t pattern[GM_MAX_LAYERS] = {0};
    hp->swa_type = GM_SWA_STANDARD;
    int64_t n = get_arr_u32(r, "attention.sliding_window_pattern", pattern, GM_MAX_LAYERS, true);
    for (int64_t i = 0; i < n; i++) hp->is_swa[i] = pattern[i] != 0;
    uint32_t shared = 0;
    get_u32(r, "attention.shared_kv_layers", &shared, false);
    hp->n_layer_kv_from_start = (int32_t)hp->n_layer_all - (int32_t)shared;
    read_expert_ff(r, hp);
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
    get_u32(r, "embedding_length_per_layer_input", &hp->n_embd_per_layer, true);
    get_u32(r, "attention.key_length_swa", &hp->head_k_swa, true);
    get_u32(r, "attention.value_length_swa", &hp->head_v_swa, true);
    hp->final_logit_softcapping = 30.0f; /* llama_hparams' default */
    get_f32(r, "final_logit_softcapping", &hp->final_logit_softcapping);
}

/* deepseek32.cpp / glm-dsa.cpp: MLA plus the lightning indexer; glm-dsa's
 * 5.2 models (a 1M context) index only some layers, by a default table
 * (glm-dsa.cpp:6-26: layers 0, 1 and every fourth from 2) or
 * attention.indexer.types */
static void read_dsa(reader *r, gm_hparams *hp, bool glm) {
    read_mla(r, hp, false, glm ? 2 : 0, !glm);
    get_u32(r, "attention.indexer.head_count", &hp->indexer_n_head, true);
    get_u32(r, "attention.indexer.key_length", &hp->indexer_head_size, true);
    get_u32(r, "attention.indexer.top_k", &hp->indexer_top_k, true);
    for (uint32_t il = 0; il < hp->n_layer; il++)
        hp->is_indexer_full[il] = !glm || hp->n_ctx_train < 1048576 || (il < 78 && (il < 2 || (il - 2) % 4 == 0));
    if (glm) get_bool_or_arr(r, "attention.indexer.types", hp->is_indexer_full, hp->n_layer);
}

/* deepseek32.cpp: the gating function required */
static void read_deepseek32(reader *r, gm_hparams *hp) { read_dsa(r, hp, false); }

/* glm-dsa.cpp: sigmoid without the key; GLM-5.2's indexer table */
static void read_glm_dsa(reader *r, gm_hparams *hp) { read_dsa(r, hp, true); }

/* qwen3next.cpp: gated delta nets and attention, NEOX rope */
static void read_qwen3next(reader *r, gm_hparams *hp) {
    read_expert_ff(r, hp);
    read_ssm(r, hp);
    read_recurrent_interval(r, hp);
    hp->attn_filter = GM_ATTN_TRUNK_NOT_RECR;
    hp->n_pos_per_embd = 1;
}

/* qwen35.cpp, qwen35moe.cpp: the same with IMROPE's four positions a token */
static void read_qwen35(reader *r, gm_hparams *hp) {
    read_qwen3next(r, hp);
    hp->n_pos_per_embd = 4;
}

/* granite-hybrid.cpp: a layer is recurrent when it has no KV heads */
static void read_mamba_hybrid(reader *r, gm_hparams *hp) {
    read_granite(r, hp); /* granite-hybrid.cpp:3-20: granite's scales and rope switch */
    read_ssm(r, hp);
    for (uint32_t i = 0; i < hp->n_layer; i++) hp->is_recr[i] = hp->n_head_kv[i] == 0;
    hp->attn_filter = GM_ATTN_NOT_RECR;
}

/* nemotron-h.cpp: recurrent when it has neither KV heads nor an FFN; the
 * routing keys of nemotron_h_moe (nemotron-h.cpp:23-29: its graph gates by
 * sigmoid whatever the key) */
static void read_nemotron(reader *r, gm_hparams *hp) {
    read_moe_routing(r, hp, 2);
    read_ssm(r, hp);
    for (uint32_t i = 0; i < hp->n_layer; i++) hp->is_recr[i] = hp->n_head_kv[i] == 0 && hp->n_ff[i] == 0;
    hp->attn_filter = GM_ATTN_NEMOTRON;
}

/* lfm2.cpp:7-30: short convolutions where a layer has no KV heads; with a
 * window every attention layer slides */
static void read_lfm2(reader *r, gm_hparams *hp) {
    get_u32(r, "shortconv.l_cache", &hp->shortconv_l_cache, true);
    for (uint32_t il = 0; il < hp->n_layer; il++) hp->is_recr[il] = hp->n_head_kv[il] == 0;
    if (read_optional_window(r, hp)) {
        hp->swa_type = GM_SWA_STANDARD;
        for (uint32_t il = 0; il < hp->n_layer; il++) hp->is_swa[il] = !hp->is_recr[il];
        hp->memory = GM_MEMORY_HYBRID_ISWA;
    }
}

/* falcon-h1.cpp: a Mamba-2 mixer beside attention in every layer */
static void read_falcon_h1(reader *r, gm_hparams *hp) {
    read_ssm(r, hp);
    for (uint32_t i = 0; i < GM_MAX_LAYERS; i++) hp->is_recr[i] = true;
    hp->attn_filter = GM_ATTN_ALL;
}

static void read_mamba2(reader *r, gm_hparams *hp) { read_ssm(r, hp); }

static void read_rwkv7(reader *r, gm_hparams *hp) {
    get_u32(r, "wkv.head_size", &hp->wkv_head_size, true);
    hp->token_shift_count = 2; /* llama_hparams' default */
    get_u32(r, "token_shift_count", &hp->token_shift_count, false);
}

/* qwen4exp.cpp:26-70: state-space sizes, hyper-connections, the indexer. */
static void read_qwen4exp_core(reader *r, gm_hparams *hp) {
    static const char *const ssm[] = { "ssm.conv_kernel", "ssm.inner_size", "ssm.state_size",
                                       "ssm.time_step_rank", "ssm.group_count" };
    const uint32_t *ssm_out[] = { &hp->ssm_d_conv, &hp->ssm_d_inner, &hp->ssm_d_state, &hp->ssm_dt_rank, &hp->ssm_n_group };
    read_expert_ff(r, hp);
    read_ssm(r, hp);
    for (size_t i = 0; i < sizeof ssm / sizeof ssm[0]; i++) require_nonzero(r, ssm[i], *ssm_out[i]);
    get_u32(r, "hyper_connection.count", &hp->hc_mult, true);
    get_u32(r, "hyper_connection.low_rank", &hp->hc_low_rank, true);
    if (r->status == GGUFMAP_OK && hp->hc_mult <= 1)
        fail_key(r, NULL, "hyper_connection.count", "must be greater than one (llama.cpp refuses the model)");
    hp->n_embd_out = hp->hc_mult * hp->n_embd;
    get_u32(r, "attention.indexer.head_count", &hp->indexer_n_head, true);
    get_u32(r, "attention.indexer.key_length", &hp->indexer_head_size, true);
    get_u32(r, "attention.indexer.top_k", &hp->indexer_top_k, true);
    require_nonzero(r, "attention.indexer.head_count", hp->indexer_n_head);
    require_nonzero(r, "attention.indexer.key_length", hp->indexer_head_size);
    get_u32_or_arr(r, "attention.compress_ratios", hp->compress_ratio, hp->n_layer_all, false);
}

/* qwen4exp.cpp:65-140: the PLE layer (at most one, a recurrent one) and which
 * layers are recurrent. */
static void read_qwen4exp_layers(reader *r, gm_hparams *hp) {
    uint32_t ple_layers[GM_MAX_LAYERS];
    int64_t n_ple = get_arr_u32(r, "ple.layers", ple_layers, GM_MAX_LAYERS, false);
    if (n_ple > 0) {
        for (int64_t i = 0; i < n_ple; i++)
            if (ple_layers[i] < hp->n_layer_all) hp->is_ple[ple_layers[i]] = true;
        uint32_t heads_per = 0;
        get_u32(r, "ple.ngram_size", &hp->ple_ngram_size, true);
        get_u32(r, "ple.heads_per_ngram", &heads_per, true);
        get_u32(r, "ple.conv_kernel", &hp->ple_conv_kernel, true);
        get_u32(r, "embedding_length_per_layer_input", &hp->n_embd_per_layer, true);
        hp->ple_n_heads = hp->ple_ngram_size > 0 ? (hp->ple_ngram_size - 1) * heads_per : 0;
        hp->ple_head_dim = hp->n_embd_per_layer;
    }
    read_recurrent_interval(r, hp);
    for (uint32_t i = 0; i < hp->n_layer_all; i++)
        if (hp->is_ple[i] && !hp->is_recr[i]) fail_key(r, NULL, "ple.layers", "names a layer that is not recurrent");
}

static void read_qwen4exp(reader *r, gm_hparams *hp) {
    read_qwen4exp_core(r, hp);
    if (r->status == GGUFMAP_OK) read_qwen4exp_layers(r, hp);
    hp->attn_filter = GM_ATTN_TRUNK_NOT_RECR;
    hp->n_pos_per_embd = 4; /* M-RoPE */
}

/* One row per modelled architecture: its name, the memory create_memory
 * makes for it, the reader of its own keys, and what it does differently
 * from the common path (gm_arch_traits, hparams.h: the parts of fit ask
 * these, never the architecture's name). */
#define T5_DECODER { .encoder_decoder = true, .position_bias = true, .fa_auto = GM_FA_OFF_GPU_WITH_CPU_LAYER }
#define T5_ENCODER { .position_bias = true, .cache_unread = true }
#define SHARED_KV { .kv_shared = true }
#define BIG_GRAPH .nodes_per_token = 40, .nodes_per_tensor = 32 /* llama-context.cpp:2373-2385 */
#define MTP_PLAIN { .mtp_plain_cache = true, .mtp_one_block = true, BIG_GRAPH }
#define MTP_PLAIN_ROLLBACK { .mtp_plain_cache = true, .mtp_one_block = true, .rs_rollback = true, BIG_GRAPH }
#define MTP_ONE { .mtp_one_block = true }
#define MAMBA2_HYBRID { .fa_auto = GM_FA_OFF_WHEN_MOVED, .ssm_ops = GM_SSM_OPS_MAMBA2 }
#define MAMBA2_HYBRID_ROLLBACK { .fa_auto = GM_FA_OFF_WHEN_MOVED, .rs_rollback = true, .ssm_ops = GM_SSM_OPS_MAMBA2 }
#define SHORT_CONV_HYBRID_ROLLBACK { .fa_auto = GM_FA_OFF_WHEN_MOVED, .rs_rollback = true, .ssm_ops = GM_SSM_OPS_SHORT_CONV }
static const struct arch_row {
    const char *name;
    gm_arch arch;
    gm_memory_kind memory;
    void (*read)(reader *r, gm_hparams *hp);
    gm_arch_traits traits;
} ARCHS[] = {
    { "llama", GM_ARCH_LLAMA, GM_MEMORY_KV, read_plain, { 0 } },
    { "qwen3moe", GM_ARCH_QWEN3MOE, GM_MEMORY_KV, read_plain, { 0 } },
    { "gemma4", GM_ARCH_GEMMA4, GM_MEMORY_KV_ISWA, read_gemma4, SHARED_KV },
    { "qwen4exp", GM_ARCH_QWEN4EXP, GM_MEMORY_HYBRID_IDX, read_qwen4exp, { .rs_rollback = true, BIG_GRAPH } },
    { "qwen2", GM_ARCH_QWEN2, GM_MEMORY_KV, read_plain, { 0 } },
    { "qwen3", GM_ARCH_QWEN3, GM_MEMORY_KV, read_plain, { .rank_soft_max = true } },
    { "phi3", GM_ARCH_PHI3, GM_MEMORY_KV, read_plain, { 0 } }, /* a window key turns SWA off (phi3.cpp:13-24) */
    { "mistral3", GM_ARCH_MISTRAL3, GM_MEMORY_KV, read_mistral3, { 0 } },
    { "granite", GM_ARCH_GRANITE, GM_MEMORY_KV, read_granite, { 0 } },
    { "command-r", GM_ARCH_COMMAND_R, GM_MEMORY_KV, read_command_r, { 0 } },
    { "cohere2", GM_ARCH_COHERE2, GM_MEMORY_KV_ISWA, read_cohere2, { 0 } },
    { "olmo2", GM_ARCH_OLMO2, GM_MEMORY_KV, read_olmo2, { 0 } },
    { "starcoder2", GM_ARCH_STARCODER2, GM_MEMORY_KV, read_plain, { 0 } },
    { "exaone4", GM_ARCH_EXAONE4, GM_MEMORY_KV, read_exaone4, { 0 } },
    { "smollm3", GM_ARCH_SMOLLM3, GM_MEMORY_KV, read_plain, { 0 } },
    { "gpt-oss", GM_ARCH_GPT_OSS, GM_MEMORY_KV_ISWA, read_gpt_oss, { 0 } },
    { "qwen2moe", GM_ARCH_QWEN2MOE, GM_MEMORY_KV, read_plain, { 0 } },
    { "olmoe", GM_ARCH_OLMOE, GM_MEMORY_KV, read_plain, { 0 } },
    { "phimoe", GM_ARCH_PHIMOE, GM_MEMORY_KV, read_plain, { 0 } },
    { "ernie4_5-moe", GM_ARCH_ERNIE4_5_MOE, GM_MEMORY_KV, read_ernie4_5_moe, { 0 } },
    { "minimax-m2", GM_ARCH_MINIMAX_M2, GM_MEMORY_KV, read_minimax_m2, { 0 } },
    { "granitemoe", GM_ARCH_GRANITEMOE, GM_MEMORY_KV, read_granitemoe, { 0 } },
    { "glm4moe", GM_ARCH_GLM4MOE, GM_MEMORY_KV, read_glm4moe, MTP_ONE },
    { "step35", GM_ARCH_STEP35, GM_MEMORY_KV_ISWA, read_step35, { 0 } },
    { "cohere2moe", GM_ARCH_COHERE2MOE, GM_MEMORY_KV_ISWA, read_cohere2moe, MTP_ONE },
    { "hy_v3", GM_ARCH_HY_V3, GM_MEMORY_KV, read_moe_sigmoid, { 0 } },
    { "deepseek2", GM_ARCH_DEEPSEEK2, GM_MEMORY_KV, read_deepseek2, MTP_ONE },
    { "deepseek32", GM_ARCH_DEEPSEEK32, GM_MEMORY_KV_DSA, read_deepseek32, MTP_ONE },
    { "glm-dsa", GM_ARCH_GLM_DSA, GM_MEMORY_KV_DSA, read_glm_dsa, MTP_ONE },
    { "qwen35", GM_ARCH_QWEN35, GM_MEMORY_HYBRID, read_qwen35, MTP_PLAIN_ROLLBACK },
    { "qwen35moe", GM_ARCH_QWEN35MOE, GM_MEMORY_HYBRID, read_qwen35, MTP_PLAIN_ROLLBACK },
    { "qwen3next", GM_ARCH_QWEN3NEXT, GM_MEMORY_HYBRID, read_qwen3next, MTP_PLAIN },
    { "granitehybrid", GM_ARCH_GRANITEHYBRID, GM_MEMORY_HYBRID, read_mamba_hybrid, MAMBA2_HYBRID },
    { "nemotron_h", GM_ARCH_NEMOTRON_H, GM_MEMORY_HYBRID, read_nemotron, MAMBA2_HYBRID_ROLLBACK },
    { "nemotron_h_moe", GM_ARCH_NEMOTRON_H_MOE, GM_MEMORY_HYBRID, read_nemotron,
      { .mtp_plain_cache = true, .mtp_one_block = true, .fa_auto = GM_FA_OFF_WHEN_MOVED, .rs_rollback = true,
        .ssm_ops = GM_SSM_OPS_MAMBA2 } },
    { "lfm2", GM_ARCH_LFM2, GM_MEMORY_HYBRID, read_lfm2, SHORT_CONV_HYBRID_ROLLBACK },
    { "falcon-h1", GM_ARCH_FALCON_H1, GM_MEMORY_HYBRID, read_falcon_h1,
      { .fa_auto = GM_FA_OFF_GPU_NKVO, .ssm_ops = GM_SSM_OPS_MAMBA2 } },
    { "mamba2", GM_ARCH_MAMBA2, GM_MEMORY_RECURRENT, read_mamba2, { .ssm_ops = GM_SSM_OPS_MAMBA2 } },
    { "rwkv7", GM_ARCH_RWKV7, GM_MEMORY_RECURRENT, read_rwkv7, { 0 } },
    { "gemma2", GM_ARCH_GEMMA2, GM_MEMORY_KV_ISWA, read_gemma2, { 0 } },
    { "gemma3", GM_ARCH_GEMMA3, GM_MEMORY_KV_ISWA, read_gemma3, { 0 } },
    { "gemma3n", GM_ARCH_GEMMA3N, GM_MEMORY_KV_ISWA, read_gemma3n, SHARED_KV },
    { "bert", GM_ARCH_BERT, GM_MEMORY_NONE, read_plain, { 0 } },
    { "nomic-bert", GM_ARCH_NOMIC_BERT, GM_MEMORY_NONE, read_plain, { 0 } },
    { "t5", GM_ARCH_T5, GM_MEMORY_KV, read_t5, T5_DECODER },
    { "t5encoder", GM_ARCH_T5ENCODER, GM_MEMORY_KV, read_t5, T5_ENCODER },
};
#undef T5_DECODER
#undef T5_ENCODER
#undef SHARED_KV
#undef MTP_PLAIN
#undef BIG_GRAPH
#undef MTP_PLAIN_ROLLBACK
#undef MTP_ONE
#undef MAMBA2_HYBRID
#undef MAMBA2_HYBRID_ROLLBACK
#undef SHORT_CONV_HYBRID_ROLLBACK

/* create_memory picks the iswa pair by swa_type: an architecture whose SWA
 * is optional (olmo2, exaone4, gemma3) makes one only when its reader found
 * a window.  Recurrent architectures have every layer recurrent
 * (load_hparams' default for llm_arch_is_recurrent). */
static void settle_memory(gm_hparams *hp) {
    if (hp->memory == GM_MEMORY_KV && hp->swa_type != GM_SWA_NONE) hp->memory = GM_MEMORY_KV_ISWA;
    if (hp->memory == GM_MEMORY_KV_ISWA && hp->swa_type == GM_SWA_NONE) hp->memory = GM_MEMORY_KV;
    if (hp->memory == GM_MEMORY_RECURRENT)
        for (uint32_t i = 0; i < GM_MAX_LAYERS; i++) hp->is_recr[i] = true; /* llm_arch_is_recurrent's default */
}

int gm_hparams_read(const ggufmap_model *model, gm_hparams *hp, ggufmap_error *err) {
    memset(hp, 0, sizeof *hp);
    reader r = { model, ggufmap_source_path(ggufmap_model_shard(model, 0)), hp->arch_name, err, GGUFMAP_OK };
    const ggufmap_kv *kv = ggufmap_model_find_kv(model, "general.architecture");
    const char *s;
    uint64_t n;
    if (!kv || ggufmap_kv_string(kv, &s, &n) != GGUFMAP_OK)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: key 'general.architecture' missing or not a string", r.path);
    snprintf(hp->arch_name, sizeof hp->arch_name, "%.*s", (int)(n < 63 ? n : 63), s);
    const struct arch_row *row = NULL;
    for (size_t i = 0; i < sizeof ARCHS / sizeof ARCHS[0]; i++)
        if (strcmp(ARCHS[i].name, hp->arch_name) == 0) row = &ARCHS[i];
    if (!row)
        return gm_fail(err, GGUFMAP_ENOTFOUND, "%s: architecture '%s' is not modelled for context memory "
                       "(fit models the %zu that ggufmap-fixture makes; docs/fit.md lists them)", r.path, hp->arch_name,
                       sizeof ARCHS / sizeof ARCHS[0]);
    hp->arch = row->arch;
    hp->memory = row->memory;
    hp->traits = row->traits;
    read_shared(&r, hp);
    if (r.status == GGUFMAP_OK) row->read(&r, hp);
    if (r.status == GGUFMAP_OK && hp->n_embd_out == 0) hp->n_embd_out = hp->n_embd;
    settle_memory(hp);
    return r.status;
}

void gm_hparams_for_mtp(gm_hparams *hp) {
    hp->ctx_mtp = true;
    if (hp->memory == GM_MEMORY_KV_DSA || (hp->memory == GM_MEMORY_HYBRID && hp->traits.mtp_plain_cache))
        hp->memory = GM_MEMORY_KV;
}

/* ------------------------------------------------------------------------ */
/* Derived sizes (llama-hparams.cpp)                                         */
/* ------------------------------------------------------------------------ */

uint32_t gm_head_k(const gm_hparams *hp, uint32_t il) { return hp->is_swa[il] ? hp->head_k_swa : hp->head_k_full; }
uint32_t gm_head_v(const gm_hparams *hp, uint32_t il) { return hp->is_swa[il] ? hp->head_v_swa : hp->head_v_full; }
uint32_t gm_n_embd_k_gqa(const gm_hparams *hp, uint32_t il) { return gm_head_k(hp, il) * hp->n_head_kv[il]; }
uint32_t gm_n_embd_v_gqa(const gm_hparams *hp, uint32_t il) { return gm_head_v(hp, il) * hp->n_head_kv[il]; }

/* max over all layers, starting from layer 0's as llama.cpp does (:187-194) */
uint32_t gm_n_embd_v_gqa_max(const gm_hparams *hp) {
    uint32_t v = gm_n_embd_v_gqa(hp, 0);
    for (uint32_t il = 0; il < hp->n_layer_all; il++)
        if (gm_n_embd_v_gqa(hp, il) > v) v = gm_n_embd_v_gqa(hp, il);
    return v;
}

bool gm_n_embd_v_gqa_variable(const gm_hparams *hp) {
    for (uint32_t il = 0; il < hp->n_layer_all; il++)
        if (gm_n_embd_v_gqa(hp, il) != gm_n_embd_v_gqa(hp, 0)) return true;
    return false;
}

bool gm_has_kv(const gm_hparams *hp, uint32_t il) {
    return hp->n_layer_kv_from_start < 0 || il < (uint32_t)hp->n_layer_kv_from_start;
}

/* RWKV: token_shift_count rows of n_embd; LFM2: l_cache - 1 of n_embd;
 * else Mamba's (ssm_d_conv - 1) * (ssm_d_inner + 2 * ssm_n_group * ssm_d_state) (:208-232) */
uint32_t gm_n_embd_r(const gm_hparams *hp) {
    if (hp->wkv_head_size) return hp->token_shift_count * hp->n_embd;
    if (hp->shortconv_l_cache) return hp->n_embd * (hp->shortconv_l_cache - 1);
    return (hp->ssm_d_conv > 0 ? hp->ssm_d_conv - 1 : 0) * (hp->ssm_d_inner + 2 * hp->ssm_n_group * hp->ssm_d_state);
}

/* RWKV: n_embd * wkv_head_size; else ssm_d_state * ssm_d_inner (:236-258) */
uint32_t gm_n_embd_s(const gm_hparams *hp) {
    return hp->wkv_head_size ? hp->n_embd * hp->wkv_head_size : hp->ssm_d_state * hp->ssm_d_inner;
}

/* (ple_conv_kernel - 1) * ngram * hc * n_embd, 0 without PLE (:268-275) */
uint32_t gm_ple_conv_state(const gm_hparams *hp) {
    if (hp->ple_n_heads == 0 || hp->ple_conv_kernel == 0) return 0;
    return (hp->ple_conv_kernel - 1) * hp->ple_ngram_size * hp->hc_mult * hp->n_embd;
}

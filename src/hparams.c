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
    if (get_u32(r, "block_count", &hp->n_layer_all, true) &&
        (hp->n_layer_all == 0 || hp->n_layer_all > GM_MAX_LAYERS))
        fail_key(r, NULL, "block_count", "outside 1..512 (llama.cpp asserts)");
    if (r->status != GGUFMAP_OK) return;
    get_u32(r, "nextn_predict_layers", &hp->n_layer_nextn, false);
    if (hp->n_layer_nextn > hp->n_layer_all) fail_key(r, NULL, "nextn_predict_layers", "exceeds block_count");
    hp->n_layer = hp->n_layer_all - hp->n_layer_nextn;
    const uint32_t n = hp->n_layer_all;
    get_u32(r, "expert_count", &hp->n_expert, false);
    uint32_t used[GM_MAX_LAYERS] = {0};
    if (get_u32_or_arr(r, "expert_used_count", used, n, false)) hp->n_expert_used = used[0];
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
}

/* ------------------------------------------------------------------------ */
/* Architecture readers (src/models/<arch>.cpp load_arch_hparams)            */
/* ------------------------------------------------------------------------ */

static void read_llama(reader *r, gm_hparams *hp) {
    (void)r;
    hp->memory = GM_MEMORY_KV;
}

static void read_qwen3moe(reader *r, gm_hparams *hp) {
    uint32_t ff_exp[GM_MAX_LAYERS] = {0};
    if (get_u32_or_arr(r, "expert_feed_forward_length", ff_exp, hp->n_layer_all, false)) hp->n_ff_exp = ff_exp[0];
    hp->memory = GM_MEMORY_KV;
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
    uint32_t ff_exp[GM_MAX_LAYERS] = {0};
    if (get_u32_or_arr(r, "expert_feed_forward_length", ff_exp, hp->n_layer_all, false)) hp->n_ff_exp = ff_exp[0];
    get_u32(r, "attention.sliding_window", &hp->n_swa, true);
    get_u32(r, "embedding_length_per_layer_input", &hp->n_embd_per_layer, true);
    get_u32(r, "attention.key_length_swa", &hp->head_k_swa, true);
    get_u32(r, "attention.value_length_swa", &hp->head_v_swa, true);
    hp->final_logit_softcapping = 30.0f; /* llama_hparams' default */
    get_f32(r, "final_logit_softcapping", &hp->final_logit_softcapping);
    hp->memory = GM_MEMORY_KV_ISWA;
}

static void require_nonzero(reader *r, const char *suffix, uint32_t v) {
    char key[160];
    if (v != 0) return;
    snprintf(key, sizeof key, "%s.%s", r->arch, suffix);
    fail_key(r, NULL, key, "must be greater than zero (llama.cpp refuses the model)");
}

/* qwen4exp.cpp:26-70: state-space sizes, hyper-connections, the indexer. */
static void read_qwen4exp_core(reader *r, gm_hparams *hp) {
    static const char *const ssm[] = { "ssm.conv_kernel", "ssm.inner_size", "ssm.state_size",
                                       "ssm.time_step_rank", "ssm.group_count" };
    uint32_t *ssm_out[] = { &hp->ssm_d_conv, &hp->ssm_d_inner, &hp->ssm_d_state, &hp->ssm_dt_rank, &hp->ssm_n_group };
    uint32_t ff_exp[GM_MAX_LAYERS] = {0};
    if (get_u32_or_arr(r, "expert_feed_forward_length", ff_exp, hp->n_layer_all, false)) hp->n_ff_exp = ff_exp[0];
    get_u32(r, "expert_shared_feed_forward_length", &hp->n_ff_shexp, false);
    for (size_t i = 0; i < sizeof ssm / sizeof ssm[0]; i++) {
        get_u32(r, ssm[i], ssm_out[i], true);
        require_nonzero(r, ssm[i], *ssm_out[i]);
    }
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
 * layers are recurrent: attention.recurrent_layers, else all but every
 * full_attention_interval-th (default 4). */
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
    if (!get_bool_or_arr(r, "attention.recurrent_layers", hp->is_recr, hp->n_layer_all)) {
        uint32_t interval = 4;
        get_u32(r, "full_attention_interval", &interval, false);
        require_nonzero(r, "full_attention_interval", interval);
        for (uint32_t i = 0; interval && i < hp->n_layer_all; i++)
            hp->is_recr[i] = i < hp->n_layer && (i + 1) % interval != 0;
    }
    for (uint32_t i = 0; i < hp->n_layer_all; i++)
        if (hp->is_ple[i] && !hp->is_recr[i]) fail_key(r, NULL, "ple.layers", "names a layer that is not recurrent");
}

static void read_qwen4exp(reader *r, gm_hparams *hp) {
    read_qwen4exp_core(r, hp);
    if (r->status == GGUFMAP_OK) read_qwen4exp_layers(r, hp);
    hp->memory = GM_MEMORY_HYBRID_IDX;
}

/* One row per modelled architecture. */
static const struct arch_row {
    const char *name;
    gm_arch arch;
    void (*read)(reader *r, gm_hparams *hp);
} ARCHS[] = {
    { "llama", GM_ARCH_LLAMA, read_llama },
    { "qwen3moe", GM_ARCH_QWEN3MOE, read_qwen3moe },
    { "gemma4", GM_ARCH_GEMMA4, read_gemma4 },
    { "qwen4exp", GM_ARCH_QWEN4EXP, read_qwen4exp },
};

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
                       "(llama, qwen3moe, gemma4, qwen4exp are)", r.path, hp->arch_name);
    hp->arch = row->arch;
    read_shared(&r, hp);
    if (r.status == GGUFMAP_OK) row->read(&r, hp);
    if (r.status == GGUFMAP_OK && hp->n_embd_out == 0) hp->n_embd_out = hp->n_embd;
    return r.status;
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

/* (ssm_d_conv - 1) * (ssm_d_inner + 2 * ssm_n_group * ssm_d_state) (:228-232) */
uint32_t gm_n_embd_r(const gm_hparams *hp) {
    return (hp->ssm_d_conv > 0 ? hp->ssm_d_conv - 1 : 0) * (hp->ssm_d_inner + 2 * hp->ssm_n_group * hp->ssm_d_state);
}

uint32_t gm_n_embd_s(const gm_hparams *hp) { return hp->ssm_d_state * hp->ssm_d_inner; }

/* (ple_conv_kernel - 1) * ngram * hc * n_embd, 0 without PLE (:268-275) */
uint32_t gm_ple_conv_state(const gm_hparams *hp) {
    if (hp->ple_n_heads == 0 || hp->ple_conv_kernel == 0) return 0;
    return (hp->ple_conv_kernel - 1) * hp->ple_ngram_size * hp->hc_mult * hp->n_embd;
}

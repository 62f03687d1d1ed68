/*
 * fit_memory.c - the context buffers with closed forms: the output buffer,
 * the KV caches and the recurrent state.
 *
 * Output (llama_context::output_reserve, llama-context.cpp:2103-2190):
 * allocated first, for n_seq_max rows of n_vocab logits (plus n_embd_out
 * embeddings with --embedding), f32, in the host buffer type of the output
 * layer's device (CUDA_Host) or the CPU's; it is re-allocated at the first
 * batch with more outputs, up to n_outputs_max (n_batch) rows.
 *
 * KV cache (llama_kv_cache, llama-kv-cache.cpp:65-295): for each layer that
 * has a cache and passes the module's filter, a K tensor
 * [n_embd_k_gqa, kv_size, n_stream] of type_k and a V tensor of type_v whose
 * rows are the widest layer's when V is stored transposed (flash attention
 * off) and widths differ.  A layer's tensors go to its device's buffer type
 * (the CPU's with -nkvo); one buffer per buffer type, in strcmp order of the
 * names, each tensor padded to the type's alignment (ggml-alloc.c:1184).
 * A quantized type whose row is not whole blocks makes ggml assert.
 *
 * Recurrent state (llama_memory_recurrent, llama-memory-recurrent.cpp:20-125):
 * per recurrent layer f32 r [n_embd_r, rows], s [n_embd_s, rows] and on the
 * PLE layer the conv history [ple_conv_state, rows], rows = max(1, n_seq_max)
 * * (1 + n_rs_seq), one buffer per buffer type as for KV.
 *
 * Which modules a model makes is gm_hparams.memory: one cache; a full and a
 * sliding-window cache (iswa); or hybrid: attention KV, recurrent state and,
 * for qwen4exp, an indexer key cache (K only, one head of
 * indexer.key_length, named cache_idx_k_l*).
 */
#include <stdio.h>
#include <string.h>

#include "fit_internal.h"
#include "ggufmap/types.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* Output buffer                                                             */
/* ------------------------------------------------------------------------ */

static void add_output(gm_fit_ctx *fit) {
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_context *s = &fit->cp.sizes;
    const bool embd = fit->cp.embeddings || hp->traits.encoder_decoder; /* "hacky enc-dec support" (:2121-2125) */
    const uint64_t row = 4ull * (hp->n_vocab + (embd ? hp->n_embd_out : 0));
    const bool host = gm_backend(fit->device)->host_buft && gm_fit_layer_on_gpu(fit, hp->n_layer_all);
    const uint64_t rows_max = s->n_outputs_max > s->n_seq_max ? s->n_outputs_max : s->n_seq_max;
    uint64_t max_bytes;
    if (!gm_mul_ok(row, rows_max, &max_bytes) || max_bytes > GM_FIT_MAX_BYTES) { /* 2^32 rows of 2^32 logits */
        snprintf(fit->refusal, sizeof fit->refusal, "failed to reserve the output buffer: %llu rows of %llu bytes "
                 "exceed %llu PiB", (unsigned long long)rows_max, (unsigned long long)row,
                 (unsigned long long)(GM_FIT_MAX_BYTES >> 50));
        return;
    }
    const gm_buft_id buft = {host ? GGUFMAP_BUFT_GPU_HOST : GGUFMAP_BUFT_CPU, 0};
    ggufmap_fit_buffer *b = gm_fit_add_buffer(fit, GGUFMAP_FIT_OUTPUT, buft, row * s->n_seq_max);
    if (!b) return;
    b->bytes_max = row * rows_max;
    snprintf(b->what, sizeof b->what, "%s of %u row%s (%llu row%s at the first full batch)",
             embd ? "logits + embeddings" : "logits", s->n_seq_max, s->n_seq_max == 1 ? "" : "s",
             (unsigned long long)rows_max, rows_max == 1 ? "" : "s");
}

/* ------------------------------------------------------------------------ */
/* Cache tensors, grouped per buffer type                                    */
/* ------------------------------------------------------------------------ */

/* One memory module's buffers: the CPU's and each GPU's. */
typedef struct module_bufs {
    gm_buft_id buft[GM_MAX_DEVICES];
    char name[GM_MAX_DEVICES][16];
    uint64_t bytes[GM_MAX_DEVICES];
    uint32_t layers[GM_MAX_DEVICES];
    uint32_t n;
} module_bufs;

static uint32_t slot_for(const gm_fit_ctx *fit, module_bufs *m, gm_buft_id buft) {
    for (uint32_t i = 0; i < m->n; i++)
        if (m->buft[i].kind == buft.kind && m->buft[i].gpu == buft.gpu) return i;
    gm_buft_name(fit->device, buft, false, m->name[m->n], sizeof m->name[m->n]);
    m->buft[m->n] = buft;
    m->bytes[m->n] = 0;
    m->layers[m->n] = 0;
    return m->n++;
}

/* A cache tensor of ne0 elements per row: false (and an abort recorded) when
 * a quantized row is not whole blocks, or (a refusal) when it is beyond what
 * any machine allocates. */
static bool add_tensor(gm_fit_ctx *fit, module_bufs *m, uint32_t slot, int32_t type, int64_t ne0, int64_t ne1,
                       int64_t ne2) {
    const ggufmap_type_info *t = ggufmap_type(type);
    if (!t || t->block_size == 0 || ne0 % t->block_size != 0) {
        snprintf(fit->refusal, sizeof fit->refusal, "a %s cache row of %lld elements is not whole blocks of %u: "
                 "ggml asserts (view of the cache tensor)", t ? t->name : "?", (long long)ne0, t ? t->block_size : 0);
        fit->aborts = true;
        return false;
    }
    const int64_t ne[4] = { ne0, ne1, ne2, 1 };
    const ggufmap_buft_kind kind = m->buft[slot].kind;
    uint64_t bytes;
    if (!gm_mul_ok((uint64_t)ne0 / t->block_size * t->type_size, (uint64_t)ne1, &bytes) ||
        !gm_mul_ok(bytes, (uint64_t)ne2, &bytes) || bytes > GM_FIT_MAX_BYTES || m->bytes[slot] > GM_FIT_MAX_BYTES) {
        snprintf(fit->refusal, sizeof fit->refusal, "failed to allocate a cache buffer: a %lld x %lld x %lld %s "
                 "tensor exceeds %llu PiB", (long long)ne0, (long long)ne1, (long long)ne2, t->name,
                 (unsigned long long)(GM_FIT_MAX_BYTES >> 50));
        return false;
    }
    m->bytes[slot] += gm_pad(gm_buft_alloc_size(fit->device, kind, type, ne), gm_buft_alignment(fit->device, kind));
    return true;
}

/* llama.cpp's buffers of a module come in the order of its ctx_map: by the
 * buffer types' names */
static void sort_by_name(module_bufs *m) {
    for (uint32_t i = 1; i < m->n; i++)
        for (uint32_t j = i; j > 0 && strcmp(m->name[j - 1], m->name[j]) > 0; j--) {
            const gm_buft_id b = m->buft[j];
            const uint64_t x = m->bytes[j];
            const uint32_t l = m->layers[j];
            char name[16];
            memcpy(name, m->name[j], sizeof name);
            m->buft[j] = m->buft[j - 1], m->bytes[j] = m->bytes[j - 1], m->layers[j] = m->layers[j - 1];
            memcpy(m->name[j], m->name[j - 1], sizeof name);
            m->buft[j - 1] = b, m->bytes[j - 1] = x, m->layers[j - 1] = l;
            memcpy(m->name[j - 1], name, sizeof name);
        }
}

static void emit_module(gm_fit_ctx *fit, module_bufs *m, ggufmap_fit_kind kind, const char *what, uint32_t cells) {
    sort_by_name(m);
    for (uint32_t i = 0; i < m->n; i++) {
        ggufmap_fit_buffer *b = gm_fit_add_buffer(fit, kind, m->buft[i], m->bytes[i]);
        if (!b) return;
        if (kind == GGUFMAP_FIT_RS)
            snprintf(b->what, sizeof b->what, "%s, %u layer%s", what, m->layers[i], m->layers[i] == 1 ? "" : "s");
        else
            snprintf(b->what, sizeof b->what, "%s, %u layer%s x %u cells x %u stream%s", what, m->layers[i],
                     m->layers[i] == 1 ? "" : "s", cells, fit->cp.sizes.n_stream, fit->cp.sizes.n_stream == 1 ? "" : "s");
    }
}

/* ------------------------------------------------------------------------ */
/* The memory modules                                                        */
/* ------------------------------------------------------------------------ */

/* create_memory's filter_attn for a hybrid model (llama-model.cpp:2556-2584,
 * llama-memory-hybrid.cpp:47-50: !is_recr by default). */
static bool hybrid_attention_layer(const gm_hparams *hp, uint32_t il) {
    switch (hp->attn_filter) {
    case GM_ATTN_ALL: return true;
    case GM_ATTN_TRUNK_NOT_RECR: return il < hp->n_layer && !hp->is_recr[il];
    case GM_ATTN_NEMOTRON: return !hp->is_recr[il] && hp->n_ff[il] == 0;
    case GM_ATTN_NOT_RECR: break;
    }
    return !hp->is_recr[il];
}

static bool is_hybrid(const gm_hparams *hp) {
    return hp->memory == GM_MEMORY_HYBRID || hp->memory == GM_MEMORY_HYBRID_ISWA || hp->memory == GM_MEMORY_HYBRID_IDX;
}

/* The filters create_memory and the caches chain (llama-model.cpp:2274-2760,
 * llama-kv-cache-iswa.cpp:52-66, llama-kv-cache-dsa.cpp:14-54): a plain
 * cache holds the trunk layers only when the model has MTP blocks; a
 * hybrid's the layers of its attention filter; an iswa pair splits them by
 * SWA; in the MTP draft context a plain cache holds the MTP layers instead;
 * the indexer caches hold the attention layers of the trunk (qwen4exp)
 * or the indexed ones (DSA); the state the recurrent layers of the trunk. */
bool gm_cache_has_layer(const gm_hparams *hp, gm_cache cache, uint32_t il) {
    const bool trunk = il < hp->n_layer;
    const bool iswa = hp->memory == GM_MEMORY_KV_ISWA || hp->memory == GM_MEMORY_HYBRID_ISWA;
    switch (cache) {
    case GM_CACHE_KV:
    case GM_CACHE_KV_SWA:
        if (!gm_has_kv(hp, il)) return false;
        /* a plain cache of a model with MTP layers: the trunk's, or in the MTP context the MTP layers' */
        if (is_hybrid(hp) ? !hybrid_attention_layer(hp, il) : hp->n_layer_nextn > 0 && trunk == hp->ctx_mtp) return false;
        if (iswa) return hp->is_swa[il] == (cache == GM_CACHE_KV_SWA);
        return cache == GM_CACHE_KV;
    case GM_CACHE_IDX:
        if (!gm_has_kv(hp, il) || !trunk) return false;
        return hp->memory == GM_MEMORY_KV_DSA ? hp->is_indexer_full[il] : !hp->is_recr[il];
    case GM_CACHE_RS: return trunk && hp->is_recr[il];
    }
    return false;
}

int32_t gm_cache_reuse(const gm_hparams *hp, uint32_t il) {
    if (!hp->traits.kv_shared || gm_has_kv(hp, il)) return -1;
    return hp->n_layer_kv_from_start - (hp->is_swa[il] ? 2 : 1);
}

/* A llama_kv_cache over the layers of a cache with kv_size cells; the
 * indexers' are K-only (one head of indexer_head_size), and so is an MLA
 * model's (the compressed K, llama-kv-cache.cpp:223-227). */
static bool add_kv_cache(gm_fit_ctx *fit, gm_cache cache, uint32_t kv_size) {
    const bool idx = cache == GM_CACHE_IDX;
    const gm_hparams *hp = fit->hp;
    const gm_cparams *cp = &fit->cp;
    const uint32_t n_stream = cp->sizes.n_stream;
    const bool variable_v = cp->sizes.v_trans && gm_n_embd_v_gqa_variable(hp);
    module_bufs m = { .n = 0 };
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        if (!gm_cache_has_layer(hp, cache, il)) continue;
        uint32_t slot = slot_for(fit, &m, gm_fit_layer_buft(fit, il, cp->offload_kqv));
        m.layers[slot]++;
        const int64_t k_row = idx ? hp->indexer_head_size : gm_n_embd_k_gqa(hp, il);
        if (!add_tensor(fit, &m, slot, cp->type_k, k_row, kv_size, n_stream)) return false;
        if (idx || hp->is_mla) continue;
        const int64_t v_row = variable_v ? gm_n_embd_v_gqa_max(hp) : gm_n_embd_v_gqa(hp, il);
        if (!add_tensor(fit, &m, slot, cp->type_v, v_row, kv_size, n_stream)) return false;
    }
    char what[64];
    const ggufmap_type_info *tk = ggufmap_type(cp->type_k), *tv = ggufmap_type(cp->type_v);
    if (idx)
        snprintf(what, sizeof what, "indexer keys %s", tk->name);
    else if (hp->is_mla)
        snprintf(what, sizeof what, "MLA latent K %s", tk->name);
    else
        snprintf(what, sizeof what, "%sK %s + V %s", cache == GM_CACHE_KV_SWA ? "SWA " : "", tk->name, tv->name);
    emit_module(fit, &m, GGUFMAP_FIT_KV, what, kv_size);
    return true;
}

static void add_recurrent(gm_fit_ctx *fit) {
    const gm_hparams *hp = fit->hp;
    const gm_cparams *cp = &fit->cp;
    const int64_t rows = (int64_t)(cp->sizes.n_seq_max > 0 ? cp->sizes.n_seq_max : 1) * (1 + cp->n_rs_seq);
    module_bufs m = { .n = 0 };
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (!gm_cache_has_layer(hp, GM_CACHE_RS, il)) continue;
        uint32_t slot = slot_for(fit, &m, gm_fit_layer_buft(fit, il, cp->offload_kqv));
        m.layers[slot]++;
        add_tensor(fit, &m, slot, 0, gm_n_embd_r(hp), rows, 1);
        add_tensor(fit, &m, slot, 0, gm_n_embd_s(hp), rows, 1);
        if (gm_ple_conv_state(hp) > 0 && hp->is_ple[il]) add_tensor(fit, &m, slot, 0, gm_ple_conv_state(hp), rows, 1);
    }
    char what[64];
    snprintf(what, sizeof what, "recurrent state f32, %lld row%s", (long long)rows, rows == 1 ? "" : "s");
    emit_module(fit, &m, GGUFMAP_FIT_RS, what, 0);
}

int gm_fit_memory(gm_fit_ctx *fit, ggufmap_error *err) {
    (void)err;
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_context *s = &fit->cp.sizes;
    add_output(fit);
    const bool swa = hp->memory == GM_MEMORY_KV_ISWA || hp->memory == GM_MEMORY_HYBRID_ISWA;
    bool ok = !fit->refusal[0];
    if (hp->memory != GM_MEMORY_NONE && hp->memory != GM_MEMORY_RECURRENT) ok = add_kv_cache(fit, GM_CACHE_KV, s->kv_size);
    if (ok && swa) ok = add_kv_cache(fit, GM_CACHE_KV_SWA, s->kv_size_swa);
    if (ok && hp->memory == GM_MEMORY_KV_DSA) ok = add_kv_cache(fit, GM_CACHE_IDX, s->kv_size);
    if (ok && (hp->memory == GM_MEMORY_RECURRENT || is_hybrid(hp))) add_recurrent(fit);
    if (ok && hp->memory == GM_MEMORY_HYBRID_IDX && hp->indexer_head_size > 0) add_kv_cache(fit, GM_CACHE_IDX, s->kv_size);
    return fit->buffers.n > 0 ? GGUFMAP_OK : GGUFMAP_ENOMEM;
}

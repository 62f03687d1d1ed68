/*
 * fit_context.c - the context llama.cpp v0.5.0 makes of the options: its
 * refusals and its effective sizes.
 *
 * llama_init_from_model (src/llama-context.cpp:3739-3830) checks the
 * parameters in a fixed order and refuses with a message; the constructor
 * (:85-305) then derives the sizes: n_ctx from -c or the trained context,
 * n_batch capped by that n_ctx *before* n_ctx is padded to 256, n_ubatch
 * capped by n_batch, and per stream pad(n_ctx / n_seq_max, 256) cells unless
 * the cache is unified (n_ctx is then rounded to a whole number of streams).
 * Flash attention "auto" counts as on when the memory is created (the KV
 * cache's V layout is fixed then) and is resolved afterwards by whether the
 * device runs the op: the CPU and Metal do, CUDA not for every head size or
 * cache type (device_cuda.c).
 */
#include <stdio.h>

#include "fit_internal.h"
#include "ggufmap/types.h"
#include "internal.h"

static bool is_quantized(int32_t type) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return t && t->block_size > 1;
}

static const char *type_name(int32_t type) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return t ? t->name : "?";
}

/* llama_init_from_model's checks of K and V types against every layer's
 * head size (:3776-3812): MLA takes one type for both, a quantized cache
 * needs heads that are whole blocks, and a quantized V needs flash
 * attention. */
static bool cache_types_refused(gm_fit_ctx *fit, ggufmap_flash_attn *fa) {
    const gm_hparams *hp = fit->hp;
    const int32_t tk = fit->opts.type_k, tv = fit->opts.type_v;
    if (hp->is_mla && tk != tv) { /* one latent tensor stands for both (:3776-3779) */
        snprintf(fit->refusal, sizeof fit->refusal, "model does not support different K (%s) and V (%s) cache types",
                 type_name(tk), type_name(tv));
        return true;
    }
    if (is_quantized(tv) && *fa != GGUFMAP_FA_ON) {
        if (*fa == GGUFMAP_FA_AUTO) {
            *fa = GGUFMAP_FA_ON; /* "enabling flash_attn since it is required for quantized V cache" */
        } else {
            snprintf(fit->refusal, sizeof fit->refusal, "quantized V cache requires flash_attn to be enabled");
            return true;
        }
    }
    for (int pass = 0; pass < 2 && *fa != GGUFMAP_FA_OFF; pass++) {
        const int32_t t = pass == 0 ? tk : tv;
        if (!is_quantized(t)) continue;
        const uint32_t blck = ggufmap_type(t)->block_size;
        for (uint32_t il = 0; il < hp->n_layer; il++) {
            const uint32_t head = pass == 0 ? gm_head_k(hp, il) : gm_head_v(hp, il);
            if (head % blck == 0) continue;
            snprintf(fit->refusal, sizeof fit->refusal, "%s cache type %s with block size %u does not divide "
                     "n_embd_head_%s=%u", pass == 0 ? "K" : "V", type_name(t), blck, pass == 0 ? "k" : "v", head);
            return true;
        }
    }
    return false;
}

static bool refused_before_constructor(gm_fit_ctx *fit, ggufmap_flash_attn *fa) {
    const ggufmap_fit_opts *o = &fit->opts;
    if (o->n_batch == 0 && o->n_ubatch == 0) {
        snprintf(fit->refusal, sizeof fit->refusal, "n_batch and n_ubatch cannot both be zero");
        return true;
    }
    if (o->n_ctx == 0 && fit->hp->n_ctx_train == 0) {
        snprintf(fit->refusal, sizeof fit->refusal, "n_ctx and model->hparams.n_ctx_train cannot both be zero");
        return true;
    }
    if (cache_types_refused(fit, fa)) return true;
    if (fit->hp->ctx_mtp && fit->hp->n_layer_nextn == 0) { /* :3822-3826 */
        snprintf(fit->refusal, sizeof fit->refusal, "context type MTP requested but model doesn't contain MTP layers");
        return true;
    }
    return false;
}

/* llama_context::llama_context (:91-305). */
static void derive_sizes(gm_fit_ctx *fit, ggufmap_flash_attn fa) {
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_opts *o = &fit->opts;
    gm_cparams *cp = &fit->cp;
    ggufmap_fit_context *s = &cp->sizes;
    s->n_seq_max = o->n_seq_max > 0 ? o->n_seq_max : 1;
    if (s->n_seq_max > GM_MAX_SEQ) {
        snprintf(fit->refusal, sizeof fit->refusal, "n_seq_max must be <= %d", GM_MAX_SEQ);
        return;
    }
    uint32_t n_ctx = o->n_ctx == 0 ? hp->n_ctx_train : o->n_ctx;
    s->n_batch = hp->causal && n_ctx < o->n_batch ? n_ctx : o->n_batch;
    const uint32_t ub = o->n_ubatch == 0 ? o->n_batch : o->n_ubatch;
    s->n_ubatch = ub < s->n_batch ? ub : s->n_batch;
    s->n_outputs_max = o->n_outputs_max == 0 || hp->has_encoder ? s->n_batch : o->n_outputs_max;
    n_ctx = (uint32_t)gm_pad(n_ctx, 256);
    if (o->kv_unified) {
        s->n_ctx_seq = n_ctx;
        s->n_stream = 1;
    } else {
        s->n_ctx_seq = (uint32_t)gm_pad(n_ctx / s->n_seq_max, 256);
        if (s->n_ctx_seq == 0) {
            snprintf(fit->refusal, sizeof fit->refusal, "n_ctx_seq == 0");
            return;
        }
        n_ctx = s->n_ctx_seq * s->n_seq_max;
        s->n_stream = s->n_seq_max;
    }
    s->n_ctx = n_ctx;
    s->kv_size = s->n_ctx_seq;
    s->flash_attn = fa != GGUFMAP_FA_OFF; /* auto resolves on: every modelled device runs FLASH_ATTN_EXT */
    s->v_trans = fa == GGUFMAP_FA_OFF;    /* the memory sees "auto" as on */
    if (hp->memory == GM_MEMORY_KV_ISWA || hp->memory == GM_MEMORY_HYBRID_ISWA) {
        uint64_t swa = (uint64_t)hp->n_swa * (o->kv_unified ? s->n_seq_max : 1) + s->n_ubatch;
        s->kv_size_swa = o->swa_full ? s->kv_size : (uint32_t)gm_pad(swa < s->kv_size ? swa : s->kv_size, 256);
    }
}

/* The constructor reserves the output buffer for n_seq_max outputs
 * (output_reserve(params.n_seq_max), llama-context.cpp:375) and asserts
 * that they fit n_outputs_max, which is the effective n_batch unless set
 * (:250, :2107, :2260): -np above the batch (-b 2 -np 3, or -c 1 -np 2
 * where n_batch is capped by n_ctx) aborts. */
static bool outputs_refused(gm_fit_ctx *fit) {
    const ggufmap_fit_context *s = &fit->cp.sizes;
    if (s->n_seq_max > s->n_outputs_max)
        snprintf(fit->refusal, sizeof fit->refusal, "output_reserve: %u sequences need %u outputs, n_outputs_max is "
                 "%u (the effective n_batch): GGML_ASSERT(n_outputs_max <= cparams.n_outputs_max) failed "
                 "(llama-context.cpp:2260)", s->n_seq_max, s->n_seq_max, s->n_outputs_max);
    else if (s->n_ctx == 0) /* n_ctx_seq * n_seq_max wrapped to 0 in uint32_t: a reserve of no token */
        snprintf(fit->refusal, sizeof fit->refusal, "n_ctx %u x %u streams wraps to 0 in 32 bits: graph_reserve of "
                 "0 tokens, GGML_ASSERT(n_outputs >= 1) failed (llama-context.cpp:2490)", s->n_ctx_seq, s->n_stream);
    else
        return false;
    fit->aborts = true;
    return true;
}

/* Flash attention "auto" is turned off after the fact when the probe graph
 * puts a layer's FLASH_ATTN_EXT on another device than the layer
 * (resolve_fused_ops, llama-context.cpp:506-560).  The scheduler gives the
 * op the device of its neighbours in node order (ggml-backend.cpp's
 * expansion passes).  Measured on the fixtures (tests/fit), every
 * architecture keeps it, except:
 *   - the Mamba/short-conv hybrids (granitehybrid, lfm2, nemotron_h*),
 *     whose attention op is followed in the graph by the next layer's state
 *     views: when that next layer is recurrent, the op takes its device, or
 *     the CPU's with -nkvo (the state stays there);
 *   - falcon-h1, whose attention follows its CPU-side state under -nkvo;
 *   - t5, whose decoder attention runs on the GPU whenever one is present. */
static bool hybrid_fa_moves(const gm_fit_ctx *fit) {
    const gm_hparams *hp = fit->hp;
    for (uint32_t il = 0; il + 1 < hp->n_layer; il++) {
        const bool cached = gm_cache_has_layer(hp, GM_CACHE_KV, il) || gm_cache_has_layer(hp, GM_CACHE_KV_SWA, il);
        if (hp->is_recr[il] || !hp->is_recr[il + 1] || !cached) continue;
        const bool op_on_gpu = !fit->opts.no_kv_offload && gm_fit_layer_on_gpu(fit, il + 1);
        if (op_on_gpu != gm_fit_layer_on_gpu(fit, il)) return true;
    }
    return false;
}

/* A layer's attention as a device's flash attention sees it in the probe
 * graph: K of the cache type (f16 where there is no cache: the encoders'
 * activations are cast), V a view of K with MLA, the KV cells padded to
 * 256. */
static void layer_fa_shape(const gm_fit_ctx *fit, uint32_t il, gm_fa_shape *fa) {
    const gm_hparams *hp = fit->hp;
    enum { T_F16 = 1 };
    const bool cache = hp->memory != GM_MEMORY_NONE;
    fa->d_k = gm_head_k(hp, il);
    fa->d_v = hp->is_mla ? gm_head_k(hp, il) - hp->n_rot_full : gm_head_v(hp, il);
    fa->n_q = 1;
    fa->q_ne3 = 1;
    fa->n_kv = cache ? 256 : 1;
    fa->gqa = hp->is_mla ? hp->n_head[il] : hp->n_head[il] / (hp->n_head_kv[il] ? hp->n_head_kv[il] : 1);
    fa->type_k = cache ? fit->cp.type_k : T_F16;
    fa->type_v = hp->is_mla ? fa->type_k : cache ? fit->cp.type_v : T_F16;
    fa->nel_k = fa->nel_v = 0;
    fa->mask = true;
    fa->rows_aligned = true;
    fa->v_is_k_view = hp->is_mla;
}

/* The device's own answer (device.h runs_fa): flash attention without a
 * kernel for a layer on a GPU (on_gpu) or on the CPU (its head size or the
 * cache types) runs on the CPU in the probe graph (measured on the H200:
 * gemma2/3/3n/4's 16-wide heads, deepseek2/32 and glm-dsa's MLA, every
 * 16-wide fixture head; docs/cuda.md).  An architecture whose every
 * attention has a position bias (t5encoder) has no fused op to probe. */
bool gm_fit_lacks_fa_kernel(const gm_fit_ctx *fit, bool on_gpu) {
    const gm_backend_def *d = gm_backend(fit->device);
    const gm_hparams *hp = fit->hp;
    if (!d->runs_fa || (hp->traits.position_bias && !hp->traits.encoder_decoder)) return false;
    /* the MTP draft context's graph runs its NextN layers, the main one its trunk */
    const uint32_t first = hp->ctx_mtp ? hp->n_layer : 0, end = hp->ctx_mtp ? hp->n_layer_all : hp->n_layer;
    for (uint32_t il = first; il < end; il++) {
        if (gm_fit_layer_on_gpu(fit, il) != on_gpu || hp->n_head[il] == 0) continue;
        if (!hp->ctx_mtp && hp->is_recr[il] && hp->attn_filter != GM_ATTN_ALL) continue;
        if (!hp->ctx_mtp && hp->attn_filter == GM_ATTN_NEMOTRON && hp->n_ff[il] != 0) continue;
        gm_fa_shape fa;
        layer_fa_shape(fit, il, &fa);
        if (!d->runs_fa(&fa)) return true;
    }
    return false;
}

static bool auto_fa_turns_off(const gm_fit_ctx *fit) {
    const gm_hparams *hp = fit->hp;
    if (gm_fit_lacks_fa_kernel(fit, true)) return true;
    bool gpu_layer = false, cpu_layer = false;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (gm_fit_layer_on_gpu(fit, il)) gpu_layer = true;
        else cpu_layer = true;
    }
    switch (hp->traits.fa_auto) {
    case GM_FA_OFF_GPU_NKVO: return gpu_layer && fit->opts.no_kv_offload;
    case GM_FA_OFF_GPU_WITH_CPU_LAYER: return gm_fit_has_gpu(fit) && cpu_layer;
    case GM_FA_OFF_WHEN_MOVED: return gm_fit_has_gpu(fit) && hybrid_fa_moves(fit);
    default: return false;
    }
}

/* Graphs ggml refuses to build when the reserve builds them (GGML_ASSERT:
 * the process aborts): T5's relative position bias [n_kv, n_tokens, n_head]
 * cannot broadcast over several KV streams (t5.cpp:147, ggml.c:2063); mean
 * pooling multiplies the last layer's n_outputs rows by a [n_tokens, n_seqs]
 * matrix, and graph_reserve rounds n_tokens up to a multiple of n_seq_max
 * after n_outputs was taken (llama-context.cpp:2492, llama-graph.cpp:3711,
 * ggml.c:3345); a pooling type llama.cpp does not know aborts the graph
 * with embeddings on (build_pooling, llama-graph.cpp:3765-3768); the MTP
 * draft graphs of the architectures whose row says mtp_one_block assert a
 * single NextN block (qwen35.cpp:489, nemotron-h-moe.cpp:13,
 * glm4-moe.cpp:135; hy_v3 and step35 build one block per graph and take any
 * count). */
static void graph_aborts(gm_fit_ctx *fit) {
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_context *s = &fit->cp.sizes;
    const uint32_t n_tokens = s->n_ctx < s->n_ubatch ? s->n_ctx : s->n_ubatch;
    if (hp->ctx_mtp && hp->n_layer_nextn != 1 && hp->traits.mtp_one_block)
        snprintf(fit->refusal, sizeof fit->refusal, "the %s MTP draft graph supports a single MTP block, the model "
                 "has %u: llama.cpp asserts (GGML_ASSERT(hparams.n_layer_nextn == 1))", hp->arch_name, hp->n_layer_nextn);
    else if (hp->traits.encoder_decoder && s->n_stream > 1)
        snprintf(fit->refusal, sizeof fit->refusal, "T5's position bias over %u KV streams: ggml asserts "
                 "(ggml_can_repeat; use --kv-unified or -np 1)", s->n_stream);
    else if (hp->pooling_type == 1 && fit->cp.embeddings && n_tokens % s->n_seq_max != 0)
        snprintf(fit->refusal, sizeof fit->refusal, "mean pooling over a %u-token reserve rounded up to a multiple "
                 "of -np %u: ggml asserts (ggml_can_mul_mat)", n_tokens, s->n_seq_max);
    else if (fit->cp.embeddings && hp->pooling_type > 4) /* NONE, MEAN, CLS, LAST, RANK (llama.h) */
        snprintf(fit->refusal, sizeof fit->refusal, "build_pooling: unknown pooling type %u (pooling_type): "
                 "GGML_ABORT(\"unknown pooling type\") (llama-graph.cpp:3767)", hp->pooling_type);
    else
        return;
    fit->aborts = true;
}

void gm_fit_context(gm_fit_ctx *fit) {
    gm_cparams *cp = &fit->cp;
    ggufmap_flash_attn fa = fit->opts.flash_attn;
    cp->type_k = fit->opts.type_k;
    cp->type_v = fit->opts.type_v;
    cp->offload_kqv = !fit->opts.no_kv_offload;
    cp->op_offload = !fit->opts.no_op_offload;
    cp->kv_unified = fit->opts.kv_unified;
    cp->swa_full = fit->opts.swa_full;
    cp->embeddings = fit->opts.embeddings;
    cp->causal = fit->hp->causal;
    /* --spec-type draft-mtp asks the target for rollback rows (common.cpp:1723,
     * need_n_rs_seq); llama.cpp clamps them to 0 where the architecture has no
     * partial rollback (llama-context.cpp:105-110); the draft has none
     * (common.cpp:1311) */
    cp->n_rs_seq = fit->opts.mtp && !fit->hp->ctx_mtp && fit->hp->traits.rs_rollback ? fit->opts.spec_draft_n_max : 0;
    if (refused_before_constructor(fit, &fa)) return;
    derive_sizes(fit, fa);
    if (fit->refusal[0]) return;
    if (outputs_refused(fit)) return;
    /* with a graph, fit_compute.c resolves -fa auto as llama.cpp does, by
     * its probe; the rules below stand in where there is none */
    cp->fa_auto = fa == GGUFMAP_FA_AUTO && gm_fit_has_graph(fit->hp);
    if (fa == GGUFMAP_FA_AUTO && !cp->fa_auto && auto_fa_turns_off(fit)) cp->sizes.flash_attn = false;
    graph_aborts(fit);
}

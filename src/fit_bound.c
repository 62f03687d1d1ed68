/*
 * fit_bound.c - an upper bound of the compute buffers of the architectures
 * whose worst-case graph fit does not build op for op.
 *
 * llama_context::sched_reserve (llama-context.cpp:617-765) sizes each
 * backend's compute buffer as ggml-alloc's peak over the worst-case graph:
 * a prompt ubatch of T = min(n_ctx, n_ubatch) tokens (rounded up to a
 * multiple of n_seq_max) with O = min(T, n_outputs_max) outputs, and a
 * one-token-per-sequence ubatch, over the whole KV cache.  ggml-alloc frees
 * a tensor after its last use, so what is live at any moment is: the graph
 * inputs (live to the end), one layer's activations, one layer's attention
 * scores, or the output head.  The bound adds those up, each taken at its
 * largest, so it does not depend on which of them coincide:
 *
 *   inputs      token ids, input embedding rows, positions, output ids;
 *               per attention cache its KQ mask [n_kv, T] (f16 with flash
 *               attention, f32 without) and its K/V row indices (one per
 *               element of V when V is stored transposed), llama-graph.cpp
 *               :29-46, :2800-2841; encoders' [T, T] masks; T5's position
 *               buckets, encoder rows and cross mask (n_ctx_train rows at
 *               reserve, llama-graph.cpp:2544)
 *   embed       the rows get_rows takes from the input tables, x3
 *   layer       T x (the sum of the output widths of the layer's matmul
 *               weights, experts counted n_expert_used times, + twice the
 *               widest + 3 n_embd + 4 n_expert) f32, for the widest layer
 *               plus the weights outside layers (per-layer embeddings,
 *               AltUp): every activation is a matmul result or an
 *               elementwise function of live ones
 *   attention   per layer, the largest: without flash attention the scores
 *               [n_kv, T, n_head] f32 (soft_max in place; x4 for T5's
 *               position bias, which also keeps flash attention off), a
 *               transposed copy of V when V is not stored transposed (and
 *               MLA's, a view of K); with it the f16 copies of an f32
 *               cache; the DSA indexer's scores, sparse mask and masked
 *               mask over every stream's cells (build_attn_mha,
 *               llama-graph.cpp:2602-2738)
 *   recurrent   the conv windows and scan outputs of T tokens and three
 *               copies of every sequence's state
 *   output      the logits [n_vocab, O] and two hidden rows of O
 *
 * Per backend (the GPU's first, then the CPU's, as llama.cpp allocates
 * them): a backend that runs layers (its own, or, for the GPU at T >= 32
 * with op offload, the CPU layers' matmuls) gets the whole sum, less the
 * scores that -nkvo without flash attention pins to the CPU; the CPU that
 * runs no layer only the inputs and the embedding rows.  The GPU also holds
 * the split copies of the host weights its offloaded ops read (the largest
 * CPU layer's and the output head's), of one cache layer's K and V (-nkvo,
 * offload), and room for a second layer's scores beside the fragments the
 * splits leave (ggml-backend.cpp's split inputs; measured on DSA).  With
 * several GPUs each holds the inputs and hidden rows the split before it
 * hands over, and with pipeline parallelism four copies of every input on
 * every backend that reads it, never freed (ggml-backend.cpp:1375-1416).  Each
 * buffer gets 1% and 64 KiB on top for what the terms do not name (norm
 * results, small inputs, alignment).  Every buffer is labelled an upper
 * bound (exact = false); tests/fit/archs.sh checks it is never below what
 * llama.cpp allocates, and docs/fit.md has the measured ratios.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_graph.h"
#include "fit_internal.h"
#include "ggufmap/types.h"
#include "internal.h"

/* Saturating arithmetic: hostile sizes (-c 4294967040 -ub 4294967040 makes
 * a [T, T] mask of 2^66 bytes) must not wrap into a small figure; a bound
 * beyond GM_FIT_MAX_BYTES is refused (gm_fit_compute_bound). */
static uint64_t sadd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t smul(uint64_t a, uint64_t b) {
    uint64_t r;
    return gm_mul_ok(a, b, &r) ? r : UINT64_MAX;
}
static uint64_t smul3(uint64_t a, uint64_t b, uint64_t c) { return smul(smul(a, b), c); }
static uint64_t smul4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return smul(smul3(a, b, c), d); }

/* ------------------------------------------------------------------------ */
/* What the model's weights say about the graph                             */
/* ------------------------------------------------------------------------ */

typedef struct weight_sums {
    uint64_t layer_width_max;   /* the largest per-layer sum of matmul output widths */
    uint64_t layer_width_one;   /* the widest single matmul result of a layer */
    uint64_t global_width;      /* the sum over the weights outside layers, output head excluded */
    uint64_t input_width;       /* the rows get_rows takes from the input tables (token_embd, per-layer ones) */
    uint64_t cpu_layer_bytes;   /* the largest per-layer sum of host-resident weight bytes */
    uint64_t cpu_output_bytes;  /* host-resident output head bytes */
    uint64_t token_embd_bytes;  /* token_embd, the output matrix of a tied model */
    bool output_matrix;         /* the output head has a matrix of its own (output.weight or a copy elsewhere) */
} weight_sums;

/* How wide the result of a matmul with weight t is: ne[1] per row of input,
 * times the experts used for an expert tensor, times ne[2] for a batched
 * (per-head) one.  Vectors make no result wider than their input. */
static uint64_t output_width(const gm_hparams *hp, const ggufmap_tensor *t, const char *name) {
    if (t->n_dims < 2) return 0;
    uint64_t w = (uint64_t)t->ne[1];
    if (t->n_dims >= 3) w = smul(w, strstr(name, "_exps") ? (hp->n_expert_used ? hp->n_expert_used : 1) : (uint64_t)t->ne[2]);
    return w;
}

static bool is_output_head(const ggufmap_instance *in, const char *name) {
    return in->cls == GGUFMAP_CLASS_OUTPUT || in->duplicate || strcmp(name, "token_embd.weight") == 0 ||
           strcmp(name, "output.weight") == 0;
}

/* the layers a context's graph runs: the trunk, or the MTP layers in the
 * MTP draft context (its LLM_GRAPH_TYPE_DECODER_MTP graph) */
static bool in_context(const gm_hparams *hp, int32_t il) {
    return il >= 0 && (uint32_t)il < hp->n_layer_all && ((uint32_t)il < hp->n_layer) != hp->ctx_mtp;
}

static bool sum_weights(const gm_fit_ctx *fit, weight_sums *w) {
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    uint64_t *width = calloc(GM_MAX_LAYERS, sizeof *width), *bytes = calloc(GM_MAX_LAYERS, sizeof *bytes);
    memset(w, 0, sizeof *w);
    if (!width || !bytes) {
        free(width);
        free(bytes);
        return false;
    }
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_tensor *t = ggufmap_model_tensor(m, in->tensor);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, in->context);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name); /* names are not NUL-terminated */
        const bool host = !ctx->gpu;
        const uint64_t nbytes = gm_buft_alloc_size(fit->device, ctx->kind, t->type, t->ne);
        const uint64_t ow = output_width(fit->hp, t, name);
        if (in->cls == GGUFMAP_CLASS_LAYER && in->layer >= 0 && in->layer < GM_MAX_LAYERS) {
            if (!in_context(fit->hp, in->layer)) continue;
            if (ow > w->layer_width_one) w->layer_width_one = ow;
            width[in->layer] = sadd(width[in->layer], ow);
            if (host) bytes[in->layer] = sadd(bytes[in->layer], nbytes);
        } else if (in->cls == GGUFMAP_CLASS_INPUT) {
            w->input_width = sadd(w->input_width, (uint64_t)t->ne[0]);
            if (strcmp(name, "token_embd.weight") == 0) w->token_embd_bytes = nbytes;
        } else if (is_output_head(in, name)) {
            if (t->n_dims >= 2) w->output_matrix = true;
            if (host && in->cls == GGUFMAP_CLASS_OUTPUT) w->cpu_output_bytes = sadd(w->cpu_output_bytes, nbytes);
        } else {
            if (ow > w->layer_width_one) w->layer_width_one = ow;
            w->global_width = sadd(w->global_width, ow);
        }
    }
    for (uint32_t il = 0; il < GM_MAX_LAYERS; il++) {
        if (width[il] > w->layer_width_max) w->layer_width_max = width[il];
        if (bytes[il] > w->cpu_layer_bytes) w->cpu_layer_bytes = bytes[il];
    }
    /* a tied output on the CPU is token_embd itself (no instance of its own) */
    if (!w->output_matrix && !gm_fit_layer_on_gpu(fit, fit->hp->n_layer_all))
        w->cpu_output_bytes = sadd(w->cpu_output_bytes, w->token_embd_bytes);
    free(width);
    free(bytes);
    return true;
}

/* ------------------------------------------------------------------------ */
/* The terms of one reserve                                                  */
/* ------------------------------------------------------------------------ */

typedef struct reserve_shape {
    uint64_t T, O, np;          /* tokens (a multiple of np), outputs, sequences */
} reserve_shape;

typedef struct bound_terms {
    uint64_t inputs, embed, layer, attention, recurrent, output, kv_copy, bias;
} bound_terms;

static bool has_attention_cache(const gm_hparams *hp) {
    return hp->memory != GM_MEMORY_NONE && hp->memory != GM_MEMORY_RECURRENT;
}

/* the KV cache sizes the graph attends over: full, SWA, indexer */
static void cache_sizes(const gm_fit_ctx *fit, uint64_t n_kv[3]) {
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_context *s = &fit->cp.sizes;
    const uint64_t n_stream = s->n_stream;
    n_kv[0] = has_attention_cache(hp) ? smul(s->kv_size, n_stream) : 0;
    n_kv[1] = s->kv_size_swa ? smul(s->kv_size_swa, n_stream) : 0;
    n_kv[2] = hp->memory == GM_MEMORY_KV_DSA || hp->memory == GM_MEMORY_HYBRID_IDX ? smul(s->kv_size, n_stream) : 0;
}

/* encoders attend over the ubatch itself (build_attn_inp_no_cache), even
 * t5encoder, whose KV cache the graph never reads */
static bool attends_ubatch(const gm_hparams *hp) {
    return !has_attention_cache(hp) || hp->traits.cache_unread;
}

/* T5's relative position bias: kq + kq_b keeps flash attention off for
 * every layer (llama-graph.cpp:2626), and the bias is a get_rows result, its
 * contiguous copy and, when the GPU computes it, a split copy, each the size
 * of the scores (t5.cpp:147, :306) */
static bool has_position_bias(const gm_hparams *hp) { return hp->traits.position_bias; }

static uint64_t inputs_term(const gm_fit_ctx *fit, reserve_shape r) {
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_context *s = &fit->cp.sizes;
    /* T * (4 + 4 n_embd + 16) + 4 O + 16 np */
    uint64_t n_kv[3], bytes = sadd(sadd(smul(r.T, sadd(smul(4, hp->n_embd), 20)), smul(r.O, 4)), smul(r.np, 16));
    cache_sizes(fit, n_kv);
    const uint64_t v_idx = s->v_trans ? gm_n_embd_v_gqa_max(hp) : 1;
    for (int c = 0; c < 3 && !attends_ubatch(hp); c++) {
        if (!n_kv[c]) continue;
        /* the mask is [n_kv per stream, T per stream, 1, streams]: n_kv x T / streams in all */
        bytes = sadd(bytes, sadd(smul3(n_kv[c] / s->n_stream, r.T, s->flash_attn && c < 2 ? 2 : 4),
                                 smul3(r.T, 8, 1 + v_idx)));
    }
    if (attends_ubatch(hp) && hp->n_head[0]) bytes = sadd(bytes, smul3(r.T, r.T, 4)); /* no cache: [T, T] */
    if (has_position_bias(hp)) bytes = sadd(bytes, smul3(r.T, r.T, 4));            /* the encoder's position buckets */
    if (hp->traits.encoder_decoder) /* the decoder's; the encoder output and the cross mask over n_ctx_train rows */
        bytes = sadd(bytes, sadd(smul3(n_kv[0] / s->n_stream, r.T, 4), smul3(4, hp->n_ctx_train, sadd(hp->n_embd, r.T))));
    const uint64_t head = gm_head_k(hp, 0) > gm_head_v(hp, 0) ? gm_head_k(hp, 0) : gm_head_v(hp, 0);
    bytes = sadd(bytes, smul3(8, head, head)); /* Hadamard rotations */
    return bytes;
}


/* one attention layer's transient tensors, the largest over the layers */
static uint64_t attention_term(const gm_fit_ctx *fit, reserve_shape r) {
    const gm_hparams *hp = fit->hp;
    const gm_cparams *cp = &fit->cp;
    const ggufmap_fit_context *s = &cp->sizes;
    const bool bias = has_position_bias(hp), fa = s->flash_attn && !bias;
    uint64_t n_kv[3], best = 0;
    cache_sizes(fit, n_kv);
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        if (hp->n_head[il] == 0) continue;
        uint64_t kv = hp->is_swa[il] && n_kv[1] ? n_kv[1] / s->n_stream : n_kv[0] / s->n_stream;
        if (attends_ubatch(hp) || kv < r.T) kv = kv > r.T ? kv : r.T;
        if (hp->traits.encoder_decoder && kv < hp->n_ctx_train) kv = hp->n_ctx_train; /* cross attention */
        const uint64_t heads = hp->n_head[il], cells = smul(kv, s->n_stream);
        uint64_t t = smul4(8, r.T, heads, (uint64_t)gm_head_v(hp, il) + gm_head_k(hp, il));
        if (!fa) {
            t = sadd(t, smul4(4, kv, r.T, heads * (bias ? 4 : 1)));
            /* V read from a cache that is not transposed is copied transposed; MLA's V is a view of K */
            if (!s->v_trans || hp->is_mla)
                t = sadd(t, smul(gm_row_size(hp->is_mla ? cp->type_k : cp->type_v, gm_n_embd_v_gqa(hp, il)), cells));
        } else {
            /* f16 copies of an f32 cache; of any cache not in f16 where the
             * device's kernels convert K and V (CUDA's tensor-core kernels) */
            const bool converts = gm_backend(fit->device)->fa_f16_copies;
            enum { F32 = 0, F16 = 1 };
            if (cp->type_k == F32 || (converts && cp->type_k != F16)) t = sadd(t, smul3(2, gm_n_embd_k_gqa(hp, il), cells));
            if (!hp->is_mla && (cp->type_v == F32 || (converts && cp->type_v != F16)))
                t = sadd(t, smul3(2, gm_n_embd_v_gqa(hp, il), cells));
            if (attends_ubatch(hp))
                t = sadd(t, smul3(2, (uint64_t)gm_n_embd_k_gqa(hp, il) + gm_n_embd_v_gqa(hp, il), r.T));
        }
        /* the indexer's scores, the sparse mask it fills and the mask it adds, over every stream's cells */
        if (n_kv[2] && hp->indexer_n_head) t = sadd(t, smul4(4, n_kv[2], r.T, hp->indexer_n_head + 3ull));
        if (hp->traits.encoder_decoder) t = sadd(t, smul3(16, hp->n_ctx_train, hp->n_embd)); /* cross K and V of the encoder rows */
        if (t > best) best = t;
    }
    return best;
}

/* T5's position bias with pipeline parallelism: the bias (computed by the
 * first layer's device, [n_kv, T, n_head] f32 like one layer's scores) draws
 * the score ops of the layers on the other GPUs to that device (the
 * scheduler's expansion), so scores-sized tensors cross between the GPUs as
 * split inputs, each kept four times and never freed.  Measured on the t5
 * fixture over two devices: 3.5, 7.8 and 12.1 scores more on the first GPU
 * with 0, 1 and 2 layers on the second.  The term: one scores per
 * attention layer of the context plus one, each of the four copies. */
static uint64_t bias_term(const gm_fit_ctx *fit, reserve_shape r) {
    const gm_hparams *hp = fit->hp;
    const ggufmap_fit_context *s = &fit->cp.sizes;
    uint64_t n_kv[3], best = 0, layers = 1;
    if (!has_position_bias(hp)) return 0;
    cache_sizes(fit, n_kv);
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        if (hp->n_head[il] == 0 || !in_context(hp, (int32_t)il)) continue;
        uint64_t kv = n_kv[0] / s->n_stream;
        if (attends_ubatch(hp) || kv < r.T) kv = r.T;
        const uint64_t b = smul4(4, kv, r.T, hp->n_head[il]);
        if (b > best) best = b;
        layers++;
    }
    return smul(layers, best);
}

/* the K and V of the largest cache layer, as a split copies them to the GPU */
static uint64_t kv_layer_bytes(const gm_fit_ctx *fit) {
    const gm_hparams *hp = fit->hp;
    const gm_cparams *cp = &fit->cp;
    const uint64_t cells = smul(cp->sizes.kv_size, cp->sizes.n_stream);
    uint64_t best = 0;
    if (!has_attention_cache(hp)) return 0;
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        const uint64_t b = smul(sadd(gm_row_size(cp->type_k, gm_n_embd_k_gqa(hp, il)),
                                     gm_row_size(cp->type_v, gm_n_embd_v_gqa_max(hp))), cells);
        if (b > best) best = b;
    }
    if (hp->indexer_head_size) best = sadd(best, smul(gm_row_size(cp->type_k, hp->indexer_head_size), cells));
    return best;
}

static uint64_t recurrent_term(const gm_hparams *hp, reserve_shape r) {
    if (hp->memory != GM_MEMORY_RECURRENT && hp->memory != GM_MEMORY_HYBRID && hp->memory != GM_MEMORY_HYBRID_ISWA &&
        hp->memory != GM_MEMORY_HYBRID_IDX)
        return 0;
    const uint64_t d_conv = hp->ssm_d_conv > 1 ? hp->ssm_d_conv - 1 : 1;
    const uint64_t conv_dim = gm_n_embd_r(hp) / d_conv;
    const uint64_t inner = hp->wkv_head_size ? 6ull * hp->n_embd : hp->ssm_d_inner ? hp->ssm_d_inner : hp->n_embd;
    return smul(4, sadd(smul3(r.T, 3, sadd(conv_dim, inner)), smul3(3, r.np, (uint64_t)gm_n_embd_r(hp) + gm_n_embd_s(hp))));
}

static bound_terms terms_of(const gm_fit_ctx *fit, const weight_sums *w, reserve_shape r) {
    const gm_hparams *hp = fit->hp;
    bound_terms b;
    b.inputs = inputs_term(fit, r);
    b.embed = smul3(12, r.T, w->input_width > hp->n_embd ? w->input_width : hp->n_embd);
    b.layer = smul3(4, r.T, sadd(sadd(sadd(w->layer_width_max, w->global_width), smul(2, w->layer_width_one)),
                                 3ull * hp->n_embd + 4ull * hp->n_expert));
    b.attention = attention_term(fit, r);
    b.recurrent = recurrent_term(hp, r);
    b.output = smul3(4, r.O, (uint64_t)hp->n_vocab + 2ull * hp->n_embd_out);
    b.kv_copy = smul(2, kv_layer_bytes(fit));
    b.bias = bias_term(fit, r);
    return b;
}

/* ------------------------------------------------------------------------ */
/* Per backend                                                               */
/* ------------------------------------------------------------------------ */

/* the model's devices: whether any layer (with its share of the graph) or
 * the output head is on a GPU, and on the CPU */
typedef struct layout {
    bool gpu, gpu_layers, cpu_layers, output_on_gpu;
    uint32_t n_gpu_layers;
} layout;

static layout layout_of(const gm_fit_ctx *fit) {
    layout lo = { .gpu = gm_fit_has_gpu(fit) };
    for (uint32_t il = 0; il < fit->hp->n_layer_all; il++) {
        if (!in_context(fit->hp, (int32_t)il)) continue;
        if (gm_fit_layer_on_gpu(fit, il)) lo.gpu_layers = true, lo.n_gpu_layers++;
        else lo.cpu_layers = true;
    }
    lo.output_on_gpu = gm_fit_layer_on_gpu(fit, fit->hp->n_layer_all);
    return lo;
}

/* Ops of a GPU layer the device refuses run on the CPU, which then
 * computes a share of the GPU's layers: flash attention without a kernel
 * (forced on), the DSA lightning indexer outside the shapes it has kernels
 * for (CUDA: 128-wide keys of 32 or 64 heads), the SSM kernels' shapes (the
 * row's weight_supported for the architecture's SSM_CONV and SSM_SCAN,
 * device_cuda.c). */
static bool device_refuses_layer_ops(const gm_fit_ctx *fit) {
    const gm_backend_def *d = gm_backend(fit->device);
    const gm_hparams *hp = fit->hp;
    enum { F32 = 0 };
    if (fit->cp.sizes.flash_attn && gm_fit_lacks_fa_kernel(fit, true)) return true;
    if (hp->indexer_head_size && d->runs_indexer && !d->runs_indexer(hp->indexer_head_size, hp->indexer_n_head))
        return true;
    if (!d->weight_supported || hp->traits.ssm_ops == GM_SSM_OPS_NONE) return false;
    const int64_t groups = hp->ssm_n_group ? hp->ssm_n_group : 1, n_head = hp->ssm_dt_rank ? hp->ssm_dt_rank : 1;
    const gm_ssm_dims dims = {hp->ssm_d_state, hp->ssm_d_inner, groups};
    if (hp->traits.ssm_ops == GM_SSM_OPS_SHORT_CONV) {
        const int64_t conv[4] = {hp->shortconv_l_cache, hp->n_embd, 1, 1};
        return !d->weight_supported(F32, conv, GM_WOP_SSM_CONV, &dims);
    }
    const int64_t conv[4] = {hp->ssm_d_conv, (int64_t)hp->ssm_d_inner + 2 * groups * hp->ssm_d_state, 1, 1};
    const int64_t a[4] = {1, n_head, 1, 1}; /* Mamba-2's A */
    return !d->weight_supported(F32, conv, GM_WOP_SSM_CONV, &dims) || !d->weight_supported(F32, a, GM_WOP_SSM_SCAN, &dims);
}

/* Whether GPU `ordinal` runs any of this context's layers or the output
 * head: each GPU of a split gets a compute buffer of its own for them.  The
 * output "layer" is work only where it has weights (an encoder's pooled
 * output has none: a GPU given only that layer computes nothing). */
static bool gpu_has_work(const gm_fit_ctx *fit, uint32_t ordinal) {
    for (uint32_t il = 0; il < fit->hp->n_layer_all; il++)
        if (in_context(fit->hp, (int32_t)il) && gm_fit_layer_gpu(fit, il) == (int32_t)ordinal) return true;
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_context *c = ggufmap_placement_context(pl, in->context);
        if (in->cls == GGUFMAP_CLASS_OUTPUT && c->gpu && c->ordinal == ordinal) return true;
    }
    return false;
}

/* one reserve's bound: *gpu for a GPU that computes (every GPU with layers
 * or the output head, and the first one when it takes the CPU layers'
 * offloaded ops), *cpu for the CPU */
static void bound_reserve(const gm_fit_ctx *fit, const weight_sums *w, reserve_shape r, uint64_t *gpu, uint64_t *cpu,
                          bool *offload_out) {
    const layout lo = layout_of(fit);
    const bound_terms b = terms_of(fit, w, r);
    const uint64_t n_copies = gm_fit_pipeline_parallel(fit) ? GM_SCHED_MAX_COPIES : 1;
    const uint64_t work = sadd(sadd(b.layer, b.attention), b.recurrent);
    const bool offload = lo.gpu && fit->cp.op_offload && r.T >= 32 && lo.cpu_layers;
    /* -nkvo without flash attention pins everything from the KV store to the
     * attention output to the CPU (build_attn_mha, llama-graph.cpp:2730-2733);
     * MLA's scores follow its offloaded absorption matmuls instead */
    const bool attention_on_cpu = !fit->cp.offload_kqv && !fit->cp.sizes.flash_attn && !fit->hp->is_mla &&
                                  !attends_ubatch(fit->hp) &&
                                  !(offload && gm_backend(fit->device)->offload == GM_OFFLOAD_ALL_BUT_ROWS);
    *gpu = *cpu = 0;
    *offload_out = offload;
    if (lo.gpu && (lo.gpu_layers || lo.output_on_gpu || offload)) {
        const uint64_t gpu_work = work == UINT64_MAX ? work : work - (attention_on_cpu ? b.attention : 0);
        *gpu = sadd(sadd(sadd(b.inputs, b.embed), gpu_work), b.output);
        /* the weights its offloaded ops read, and room for the scores of one
         * layer beside the hole another's left: splits interleave their
         * input copies with the attention tensors (measured on DSA) */
        if (offload) *gpu = sadd(*gpu, sadd(sadd(w->cpu_layer_bytes, w->cpu_output_bytes), b.attention / 2));
        if (offload || !fit->cp.offload_kqv) *gpu = sadd(*gpu, b.kv_copy);
        /* several GPUs: each also holds the copies of the activations the split before it hands over,
         * with pipeline parallelism GM_SCHED_MAX_COPIES of them and of every input, kept to the end */
        if (ggufmap_placement_n_gpus(ggufmap_plan_placement(fit->plan)) > 1)
            *gpu = sadd(*gpu, sadd(smul(n_copies, sadd(b.inputs, b.embed)), n_copies > 1 ? smul(n_copies, b.bias) : 0));
    }
    *cpu = sadd(sadd(b.inputs, b.embed), smul(n_copies - 1, b.inputs)); /* the graph inputs' copies stay where they are */
    const bool refused = lo.gpu_layers && device_refuses_layer_ops(fit);
    if (!lo.gpu || lo.cpu_layers || !fit->cp.offload_kqv || refused) *cpu = sadd(*cpu, work);
    /* ops of every GPU layer run on the CPU: with pipeline parallelism the scheduler keeps
     * GM_SCHED_MAX_COPIES copies of each such split's inputs to the end, on the CPU (a layer's
     * activations and its cache views) and on the GPU the results come back to (activations) */
    if (refused && n_copies > 1) {
        *cpu = sadd(*cpu, smul3(n_copies, lo.n_gpu_layers, sadd(b.layer, b.kv_copy / 2)));
        if (*gpu) *gpu = sadd(*gpu, smul3(n_copies, lo.n_gpu_layers, b.layer));
    }
    if (!lo.gpu || !lo.output_on_gpu) *cpu = sadd(*cpu, b.output);
}

static ggufmap_fit_buffer *add_bound(gm_fit_ctx *fit, gm_buft_id buft, uint64_t size, uint64_t T) {
    size += size / 100 + 65536; /* what the terms do not name: norms' results, small inputs, alignment */
    ggufmap_fit_buffer *x = gm_fit_add_buffer(fit, GGUFMAP_FIT_COMPUTE, buft, gm_pad(size, 32));
    if (!x) return NULL;
    x->exact = false;
    snprintf(x->what, sizeof x->what, "at most: inputs, a layer's activations and attention, the output head "
             "(%llu-token ubatch)", (unsigned long long)T);
    return x;
}

int gm_fit_compute_bound(gm_fit_ctx *fit) {
    const ggufmap_fit_context *s = &fit->cp.sizes;
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    weight_sums w;
    if (!sum_weights(fit, &w)) return GGUFMAP_ENOMEM;
    const uint64_t np = s->n_seq_max;
    uint64_t T = s->n_ctx < s->n_ubatch ? s->n_ctx : s->n_ubatch;
    const uint64_t O = T < s->n_outputs_max ? T : s->n_outputs_max;
    T = (T + np - 1) / np * np;
    uint64_t pp_gpu, pp_cpu, tg_gpu, tg_cpu;
    bool pp_off, tg_off;
    bound_reserve(fit, &w, (reserve_shape){ T, O, np }, &pp_gpu, &pp_cpu, &pp_off);
    bound_reserve(fit, &w, (reserve_shape){ np, np, np }, &tg_gpu, &tg_cpu, &tg_off);
    const uint64_t gpu = pp_gpu > tg_gpu ? pp_gpu : tg_gpu, cpu = pp_cpu > tg_cpu ? pp_cpu : tg_cpu;
    if (gpu > GM_FIT_MAX_BYTES || cpu > GM_FIT_MAX_BYTES) {
        /* sizes that overflow, or beyond any machine: llama.cpp cannot allocate them */
        if (!fit->refusal[0])
            snprintf(fit->refusal, sizeof fit->refusal, "failed to allocate compute buffers: the worst-case "
                     "graph needs more than %llu PiB at these sizes", (unsigned long long)(GM_FIT_MAX_BYTES >> 50));
        return GGUFMAP_OK;
    }
    /* the scheduler's backends in order: the run's GPUs, then the CPU */
    for (uint32_t i = 0; gpu && i < ggufmap_placement_n_gpus(pl); i++) {
        const uint32_t ord = ggufmap_placement_gpu(pl, i);
        if (!gpu_has_work(fit, ord) && !(i == 0 && (pp_off || tg_off))) continue;
        if (!add_bound(fit, (gm_buft_id){GGUFMAP_BUFT_GPU, ord}, gpu, T)) return GGUFMAP_ENOMEM;
    }
    const gm_buft_id host = {gm_fit_has_gpu(fit) ? gm_cpu_compute_buft(fit->device) : GGUFMAP_BUFT_CPU, 0};
    if (cpu && !add_bound(fit, host, cpu, T)) return GGUFMAP_ENOMEM;
    return GGUFMAP_OK;
}

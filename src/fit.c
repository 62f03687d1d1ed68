/*
 * fit.c - one context's memory, buffer by buffer and device by device.
 *
 * A fit is a list of buffers in llama.cpp's order: the weights as the plan
 * has them (mapped spans and allocated contexts), then what
 * llama_init_from_model allocates (fit_memory.c: output, KV, recurrent
 * state; fit_compute.c: compute).  Each buffer belongs to a device: buffer
 * types of the GPU ("MTL0", "MTL0_Mapped", "CUDA0") to the GPU, everything
 * else (CPU, CPU_REPACK, CUDA_Host, the lazily read tables) to the host.
 * A device's total counts the output buffer at its full size (it grows at
 * the first batch that asks for n_batch outputs) and, with a page size
 * (Metal), every GPU buffer page-aligned as Metal allocates it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_internal.h"
#include "ggufmap/types.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* Helpers for the fit modules                                               */
/* ------------------------------------------------------------------------ */

ggufmap_fit_buffer *gm_fit_add_buffer(ggufmap_fit *fit, ggufmap_fit_kind kind, const char *buft, uint64_t bytes) {
    if (fit->n_buffers == fit->cap_buffers) {
        uint32_t cap = fit->cap_buffers ? fit->cap_buffers * 2 : 32;
        ggufmap_fit_buffer *n = realloc(fit->buffers, cap * sizeof *n);
        if (!n) return NULL;
        fit->buffers = n;
        fit->cap_buffers = cap;
    }
    ggufmap_fit_buffer *b = &fit->buffers[fit->n_buffers++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    snprintf(b->buft, sizeof b->buft, "%s", buft);
    b->bytes = b->planned = b->bytes_max = bytes;
    b->exact = true;
    const char *gpu = gm_fit_gpu_buft(fit);
    b->device = gpu && strncmp(buft, gpu, strlen(gpu)) == 0 ? GM_DEVICE_GPU : GM_DEVICE_CPU;
    return b;
}

bool gm_fit_layer_on_gpu(const ggufmap_fit *fit, uint32_t il) {
    return fit->device != GGUFMAP_DEVICE_CPU &&
           ggufmap_placement_layer_on_gpu(ggufmap_plan_placement(fit->plan), (int32_t)il);
}

const char *gm_fit_gpu_buft(const ggufmap_fit *fit) {
    switch (fit->device) {
    case GGUFMAP_DEVICE_METAL: return "MTL0";
    case GGUFMAP_DEVICE_CUDA: return "CUDA0";
    default: return NULL;
    }
}

/* llama_model::dev_layer's buffer type with offload_kqv, else the CPU's
 * (llama-kv-cache.cpp:212-221). */
const char *gm_fit_layer_buft(const ggufmap_fit *fit, uint32_t il, bool offload) {
    return offload && gm_fit_layer_on_gpu(fit, il) ? gm_fit_gpu_buft(fit) : "CPU";
}

/* TENSOR_ALIGNMENT 32 for the CPU and host types and Metal; 128 for CUDA's
 * device type (ggml-cuda.cu ggml_backend_cuda_buffer_type_get_alignment). */
uint64_t gm_buft_alignment(const char *buft) { return strcmp(buft, "CUDA0") == 0 ? 128 : 32; }

uint64_t gm_row_size(int32_t type, int64_t n) {
    const ggufmap_type_info *t = ggufmap_type(type);
    if (!t || t->block_size == 0) return 0;
    return (uint64_t)t->type_size * (uint64_t)(n / t->block_size);
}

/* ggml_nbytes, plus CUDA's padding of a quantized row to 512 elements
 * (ggml_backend_cuda_buffer_type_get_alloc_size, ggml-cuda.cu:908-925). */
uint64_t gm_buft_alloc_size(const char *buft, int32_t type, const int64_t ne[4]) {
    uint64_t size = ggufmap_type_nbytes(type, ne);
    const ggufmap_type_info *t = ggufmap_type(type);
    if (strcmp(buft, "CUDA0") == 0 && t && t->block_size > 1 && ne[0] % 512 != 0)
        size += gm_row_size(type, 512 - ne[0] % 512);
    return size;
}

/* ------------------------------------------------------------------------ */
/* Weights and devices                                                       */
/* ------------------------------------------------------------------------ */

static int add_weights(ggufmap_fit *fit) {
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(fit->plan); i++) {
        const ggufmap_buffer *pb = ggufmap_plan_buffer(fit->plan, i);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, pb->context);
        ggufmap_fit_buffer *b = gm_fit_add_buffer(fit, GGUFMAP_FIT_WEIGHTS, pb->name, pb->mapped ? pb->span_resident : pb->size);
        if (!b) return GGUFMAP_ENOMEM;
        b->planned = pb->mapped ? pb->ranges_resident : pb->size;
        const char *gpu = gm_fit_gpu_buft(fit);
        b->device = gpu && strcmp(ctx->buft, gpu) == 0 ? GM_DEVICE_GPU : GM_DEVICE_CPU;
        if (pb->mapped)
            snprintf(b->what, sizeof b->what, "%lld tensor%s mapped from shard %u%s", (long long)pb->n_tensors,
                     pb->n_tensors == 1 ? "" : "s", pb->shard,
                     ctx->lazy ? " (read lazily)" : "");
        else
            snprintf(b->what, sizeof b->what, "%lld tensor%s copied", (long long)pb->n_tensors,
                     pb->n_tensors == 1 ? "" : "s");
    }
    return GGUFMAP_OK;
}

static void init_devices(ggufmap_fit *fit) {
    memset(fit->devices, 0, sizeof fit->devices);
    snprintf(fit->devices[0].name, sizeof fit->devices[0].name, "CPU");
    fit->n_devices = 1;
    const char *gpu = gm_fit_gpu_buft(fit);
    if (gpu) {
        snprintf(fit->devices[1].name, sizeof fit->devices[1].name, "%s", gpu);
        fit->devices[1].gpu = true;
        fit->n_devices = 2;
    }
    for (uint32_t d = 0; d < fit->n_devices; d++) fit->devices[d].exact = true;
}

static void sum_devices(ggufmap_fit *fit) {
    const uint64_t page = ggufmap_plan_options(fit->plan)->page;
    for (uint32_t i = 0; i < fit->n_buffers; i++) {
        const ggufmap_fit_buffer *b = &fit->buffers[i];
        ggufmap_fit_device *d = &fit->devices[b->device];
        /* Metal allocates its buffers in whole pages; mapped weights are already page-aligned */
        const bool round = d->gpu && page > 1 && b->kind != GGUFMAP_FIT_WEIGHTS;
        const uint64_t max = round ? gm_ceil_to(b->bytes_max, page) : b->bytes_max;
        d->exact &= b->exact;
        switch (b->kind) {
        case GGUFMAP_FIT_WEIGHTS:
            d->weights += b->bytes;
            d->weights_planned += b->planned;
            break;
        case GGUFMAP_FIT_KV: d->kv += max; break;
        case GGUFMAP_FIT_RS: d->rs += max; break;
        case GGUFMAP_FIT_OUTPUT:
            d->output += b->bytes;
            d->output_max += max;
            break;
        case GGUFMAP_FIT_COMPUTE: d->compute += max; break;
        }
    }
    for (uint32_t i = 0; i < fit->n_devices; i++) {
        ggufmap_fit_device *d = &fit->devices[i];
        const uint64_t context = d->kv + d->rs + d->output_max + d->compute;
        d->total = d->weights + context;
        d->total_planned = d->weights_planned + context;
    }
}

/* ------------------------------------------------------------------------ */
/* Building a fit                                                            */
/* ------------------------------------------------------------------------ */

void ggufmap_fit_opts_init(ggufmap_fit_opts *o) {
    memset(o, 0, sizeof *o);
    o->n_seq_max = 1;
    o->n_batch = 2048;
    o->n_ubatch = 512;
    o->type_k = o->type_v = 1; /* f16 */
    o->flash_attn = GGUFMAP_FA_AUTO;
    o->spec_draft_n_max = 3; /* common_params_speculative_draft::n_max */
}

static int build_context(ggufmap_fit *fit, ggufmap_error *err) {
    gm_fit_context(fit);
    if (fit->refusal[0]) return GGUFMAP_OK;
    const uint32_t n_before = fit->n_buffers;
    int rc = gm_fit_memory(fit, err);
    if (rc == GGUFMAP_OK && !fit->refusal[0]) rc = gm_fit_compute(fit, err);
    if (fit->refusal[0]) fit->n_buffers = n_before; /* a refused context has no buffers */
    return rc;
}

/* Whether the plan created the MTP layers' tensors: an architecture that
 * skips them always (exaone4.cpp:39-43) has a draft graph with no layer and
 * llama.cpp fails ("failed to initialize the context"). */
static bool mtp_layers_loaded(const ggufmap_fit *fit) {
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++)
        if (ggufmap_placement_instance(pl, i)->layer >= (int32_t)fit->hp->n_layer &&
            ggufmap_placement_instance(pl, i)->cls == GGUFMAP_CLASS_LAYER)
            return true;
    return false;
}

/* The MTP draft context (common/speculative.cpp:2536-2590): built as a fit
 * of its own on the same plan with the draft's parameters and the MTP view of
 * the model, its buffers then moved behind the main context's.  The main
 * context's output buffer grows by n_embd_out rows per batch token: the
 * draft reads the target's hidden states (llama_set_embeddings_nextn, not
 * masked, speculative.cpp:1420; output_reserve llama-context.cpp:2132). */
static int build_mtp_context(ggufmap_fit *fit, ggufmap_error *err) {
    ggufmap_fit d;
    memset(&d, 0, sizeof d);
    d.plan = fit->plan;
    d.device = fit->device;
    d.opts = fit->opts;
    d.opts.n_ctx = fit->cp.sizes.n_ctx;               /* llama_n_ctx(ctx_tgt) */
    d.opts.type_k = d.opts.type_v = 1;                 /* the draft's cache types: f16 unless -ctkd/-ctvd */
    d.opts.n_outputs_max = fit->cp.sizes.n_seq_max;    /* n_parallel */
    d.opts.embeddings = false;
    d.hp = malloc(sizeof *d.hp);
    if (!d.hp) return GGUFMAP_ENOMEM;
    *d.hp = *fit->hp;
    gm_hparams_for_mtp(d.hp);
    fit->mtp_built = true;
    int rc = GGUFMAP_OK;
    gm_fit_context(&d);
    if (!d.refusal[0] && !mtp_layers_loaded(fit))
        snprintf(d.refusal, sizeof d.refusal, "failed to initialize the context: the model's loader skips its "
                 "MTP layers");
    if (!d.refusal[0]) rc = build_context(&d, err);
    for (uint32_t i = 0; rc == GGUFMAP_OK && i < d.n_buffers; i++) {
        ggufmap_fit_buffer *b = gm_fit_add_buffer(fit, d.buffers[i].kind, d.buffers[i].buft, d.buffers[i].bytes);
        if (!b) rc = GGUFMAP_ENOMEM;
        else {
            *b = d.buffers[i];
            b->mtp = true;
        }
    }
    memcpy(fit->mtp_refusal, d.refusal, sizeof fit->mtp_refusal);
    fit->mtp_aborts = d.aborts;
    fit->mtp_sizes = d.cp.sizes;
    for (uint32_t i = 0; rc == GGUFMAP_OK && !d.refusal[0] && i < fit->n_buffers; i++)
        if (fit->buffers[i].kind == GGUFMAP_FIT_OUTPUT && !fit->buffers[i].mtp)
            fit->buffers[i].bytes_max += 4ull * fit->hp->n_embd_out * fit->cp.sizes.n_batch;
    free(d.buffers);
    free(d.hp);
    return rc;
}

int ggufmap_fit_build(const ggufmap_plan *plan, const ggufmap_fit_opts *opts, ggufmap_fit **out,
                      ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    ggufmap_fit *fit = calloc(1, sizeof *fit);
    if (fit) fit->hp = malloc(sizeof *fit->hp);
    if (!fit || !fit->hp) {
        free(fit);
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    fit->plan = plan;
    fit->opts = *opts;
    fit->device = ggufmap_placement_options(pl)->device;
    init_devices(fit);
    int rc = gm_hparams_read(ggufmap_placement_model(pl), fit->hp, err);
    if (rc == GGUFMAP_OK) rc = add_weights(fit);
    if (rc == GGUFMAP_OK) rc = build_context(fit, err);
    if (rc == GGUFMAP_OK && opts->mtp && !fit->refusal[0]) rc = build_mtp_context(fit, err);
    if (rc != GGUFMAP_OK) {
        if (rc == GGUFMAP_ENOMEM) gm_fail(err, rc, "out of memory");
        ggufmap_fit_free(fit);
        return rc;
    }
    sum_devices(fit);
    *out = fit;
    return GGUFMAP_OK;
}

void ggufmap_fit_free(ggufmap_fit *fit) {
    if (!fit) return;
    free(fit->buffers);
    free(fit->hp);
    free(fit);
}

/* ------------------------------------------------------------------------ */
/* Accessors and the verdict                                                 */
/* ------------------------------------------------------------------------ */

const char *ggufmap_fit_kind_name(ggufmap_fit_kind kind) {
    static const char *const names[] = { "weights", "kv", "rs", "output", "compute" };
    return (unsigned)kind < 5 ? names[kind] : "?";
}

const char *ggufmap_fit_refusal(const ggufmap_fit *fit, bool *aborts) {
    if (!fit->refusal[0] && fit->mtp_refusal[0]) return ggufmap_fit_mtp_refusal(fit, aborts);
    if (aborts) *aborts = fit->aborts;
    return fit->refusal[0] ? fit->refusal : NULL;
}

const char *ggufmap_fit_mtp_refusal(const ggufmap_fit *fit, bool *aborts) {
    if (aborts) *aborts = fit->mtp_aborts;
    return fit->mtp_refusal[0] ? fit->mtp_refusal : NULL;
}

const ggufmap_fit_context *ggufmap_fit_mtp_sizes(const ggufmap_fit *fit) {
    return fit->mtp_built && !fit->mtp_refusal[0] ? &fit->mtp_sizes : NULL;
}

const ggufmap_fit_context *ggufmap_fit_context_sizes(const ggufmap_fit *fit) { return &fit->cp.sizes; }
const ggufmap_fit_opts *ggufmap_fit_options(const ggufmap_fit *fit) { return &fit->opts; }
const ggufmap_plan *ggufmap_fit_plan(const ggufmap_fit *fit) { return fit->plan; }
uint32_t ggufmap_fit_n_buffers(const ggufmap_fit *fit) { return fit->n_buffers; }
const ggufmap_fit_buffer *ggufmap_fit_buffer_at(const ggufmap_fit *fit, uint32_t i) {
    return i < fit->n_buffers ? &fit->buffers[i] : NULL;
}
uint32_t ggufmap_fit_n_devices(const ggufmap_fit *fit) { return fit->n_devices; }
const ggufmap_fit_device *ggufmap_fit_device_at(const ggufmap_fit *fit, uint32_t i) {
    return i < fit->n_devices ? &fit->devices[i] : NULL;
}

uint32_t ggufmap_fit_limited_device(const ggufmap_fit *fit) { return fit->n_devices - 1; }

bool ggufmap_fit_fits(const ggufmap_fit *fit, bool planned) {
    if (fit->refusal[0] || fit->mtp_refusal[0]) return false;
    if (fit->opts.limit == 0) return true;
    const ggufmap_fit_device *d = &fit->devices[ggufmap_fit_limited_device(fit)];
    return (planned ? d->total_planned : d->total) <= fit->opts.limit;
}

/*
 * fit_internal.h - what the fit modules share (internal).
 *
 *   fit_context.c  the effective context sizes and llama.cpp's refusals
 *   fit_memory.c   KV cache, recurrent state and output buffer (closed forms)
 *   fit_compute.c  compute buffers: the worst-case graph through ggml-alloc
 *   fit.c          per-device totals, the verdict, the context search, suggestions
 *   fit_report.c   text and JSON
 *
 * A fit is built in that order; each step appends buffers in the order
 * llama.cpp allocates them (output, memory modules, compute).
 */
#ifndef GGUFMAP_FIT_INTERNAL_H
#define GGUFMAP_FIT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/fit.h"
#include "hparams.h"

#define GM_MAX_SEQ 256          /* LLAMA_MAX_SEQ (src/llama-cparams.h) */
#define GM_DEVICE_CPU 0
#define GM_DEVICE_GPU 1

/* The effective parameters (llama_cparams) beside the public sizes. */
typedef struct gm_cparams {
    ggufmap_fit_context sizes;
    int32_t type_k, type_v;
    bool offload_kqv, op_offload, kv_unified, swa_full, embeddings, causal;
    uint32_t n_rs_seq;          /* recurrent rollback rows per sequence (0 without MTP) */
} gm_cparams;

struct ggufmap_fit {
    const ggufmap_plan *plan;
    ggufmap_fit_opts opts;
    gm_hparams *hp;
    gm_cparams cp;
    char refusal[256];          /* "" when llama.cpp creates the context */
    bool aborts;
    /* --mtp: the MTP draft context (its buffers are in buffers[] with mtp set) */
    bool mtp_built;             /* the main context was created, so the draft was tried */
    ggufmap_fit_context mtp_sizes;
    char mtp_refusal[256];
    bool mtp_aborts;
    ggufmap_fit_buffer *buffers;
    uint32_t n_buffers, cap_buffers;
    ggufmap_fit_device devices[2];
    uint32_t n_devices;
    ggufmap_device device;      /* the placement's GPU kind */
};

/* fit_context.c: the sizes llama_context's constructor computes from opts,
 * or a refusal in fit->refusal (llama_init_from_model's checks, in order). */
void gm_fit_context(ggufmap_fit *fit);

/* fit_memory.c: the output buffer, then the memory module's buffers. */
int gm_fit_memory(ggufmap_fit *fit, ggufmap_error *err);

/* The caches a memory module has, and whether layer il has tensors of its
 * own in one (the module's layer filters and has_kv). */
typedef enum gm_cache { GM_CACHE_KV, GM_CACHE_KV_SWA, GM_CACHE_IDX, GM_CACHE_RS } gm_cache;
bool gm_cache_has_layer(const gm_hparams *hp, gm_cache cache, uint32_t il);
/* The layer whose cache layer il uses instead of its own (gemma4's shared
 * KV layers, llama-model.cpp:2657-2666), or -1. */
int32_t gm_cache_reuse(const gm_hparams *hp, uint32_t il);

/* fit_compute.c: the compute buffers of the scheduler's backends. */
int gm_fit_compute(ggufmap_fit *fit, ggufmap_error *err);

/* fit_bound.c: an upper bound of the compute buffers for an architecture
 * without a graph in fit_compute.c (every buffer exact = false). */
int gm_fit_compute_bound(ggufmap_fit *fit);

/* fit.c helpers for the modules above */
ggufmap_fit_buffer *gm_fit_add_buffer(ggufmap_fit *fit, ggufmap_fit_kind kind, const char *buft, uint64_t bytes);
bool gm_fit_layer_on_gpu(const ggufmap_fit *fit, uint32_t il);
/* CUDA has no flash-attention kernel for the attention of some layer on
 * the GPU (on_gpu) or on the CPU (fit_context.c; device_cuda.c's rule) */
bool gm_fit_cuda_lacks_fa_kernel(const ggufmap_fit *fit, bool on_gpu);
/* The buffer type llama.cpp gives a layer's cache ("CPU", "MTL0", "CUDA0"). */
const char *gm_fit_layer_buft(const ggufmap_fit *fit, uint32_t il, bool offload);
/* The GPU's default buffer type name, or NULL without a GPU. */
const char *gm_fit_gpu_buft(const ggufmap_fit *fit);
/* Alignment and per-tensor allocation size of a buffer type, as its backend
 * reports them (get_alignment, get_alloc_size). */
uint64_t gm_buft_alignment(const char *buft);
uint64_t gm_buft_alloc_size(const char *buft, int32_t type, const int64_t ne[4]);
/* Bytes of n elements of a ggml type (ggml_row_size). */
uint64_t gm_row_size(int32_t type, int64_t n);

#endif

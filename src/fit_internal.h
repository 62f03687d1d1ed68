/*
 * fit_internal.h - the parts of a fit and what they share (internal).
 *
 * A fit is one model of a llama.cpp run: the weights the plan maps, then a
 * list of contexts (llama_context), the main one and, with --mtp, the MTP
 * draft context beside it.  Each context is built by the same parts, in
 * the order llama_init_from_model allocates:
 *
 *   fit_context.c  its effective sizes and llama.cpp's refusals
 *   fit_memory.c   its output buffer, KV cache and recurrent state (closed forms)
 *   fit_compute.c  its compute buffers: the architecture's worst-case graph
 *                  (fit_arch_*.c over fit_llm.c's blocks) through the
 *                  scheduler (fit_sched.c) and ggml-alloc (fit_alloc.c);
 *                  fit_bound.c's upper bound where no graph is modelled
 *
 * The parts see one context (gm_fit_ctx) and, through it, the run it
 * belongs to (gm_run: the plan, the machine, where a layer lives); they
 * call only fit_run.c below them.  Above them:
 *
 *   fit.c          the orchestrator: the run, its contexts in order, the
 *                  per-device totals and the verdict (ggufmap_fit_build)
 *   fit_search.c   the largest context, the suggestions (whole fits)
 *   fit_report.c   text and JSON
 *
 * Arrows point down only: fit_run <- parts <- fit.c <- search, report.
 */
#ifndef GGUFMAP_FIT_INTERNAL_H
#define GGUFMAP_FIT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "ggufmap/fit.h"
#include "hparams.h"

#define GM_MAX_SEQ 256          /* LLAMA_MAX_SEQ (src/llama-cparams.h) */
#define GM_DEVICE_CPU 0         /* a run's devices: the host first, then the GPUs */
#define GM_MAX_DEVICES (1 + GGUFMAP_MAX_GPUS)

/* ------------------------------------------------------------------------ */
/* The run (fit_run.c)                                                       */
/* ------------------------------------------------------------------------ */

/* A list of buffers in llama.cpp's order. */
typedef struct gm_buffers {
    ggufmap_fit_buffer *v;
    uint32_t n, cap;
} gm_buffers;

/* What every context of a run shares: the weights (the plan) and the
 * machine they are placed on. */
typedef struct gm_run {
    const ggufmap_plan *plan;
    ggufmap_device device;      /* the GPUs' kind (device.h: their rules) */
    ggufmap_fit_device devices[GM_MAX_DEVICES]; /* the host, the run's GPUs, then any other GPU holding weights */
    uint32_t n_devices;
} gm_run;

/* Fills run's devices from the plan's placement. */
void gm_run_init(gm_run *run, const ggufmap_plan *plan);
/* The device (index in run->devices) a buffer type's memory belongs to. */
uint32_t gm_run_device_of(const gm_run *run, gm_buft_id b);

/* Appends a buffer of buffer type buft (named and given its device by the
 * run) to list; NULL when out of memory. */
ggufmap_fit_buffer *gm_buffers_add(gm_buffers *list, const gm_run *run, ggufmap_fit_kind kind, gm_buft_id buft,
                                   uint64_t bytes);
void gm_buffers_free(gm_buffers *list);

/* ------------------------------------------------------------------------ */
/* One context of a run                                                      */
/* ------------------------------------------------------------------------ */

/* The effective parameters (llama_cparams) beside the public sizes. */
typedef struct gm_cparams {
    ggufmap_fit_context sizes;
    int32_t type_k, type_v;
    bool offload_kqv, op_offload, kv_unified, swa_full, embeddings, causal;
    uint32_t n_rs_seq;          /* recurrent rollback rows per sequence (0 without MTP) */
    bool fa_auto;               /* -fa auto still to resolve (cparams.auto_fa): resolve_fused_ops decides */
} gm_cparams;

/* A llama_context of the run, as the parts build it.  plan, hp and device
 * are the run's (the graph builders read l->fit->plan and l->fit->hp). */
typedef struct gm_fit_ctx {
    const ggufmap_plan *plan;   /* run->plan */
    const gm_run *run;
    ggufmap_device device;      /* run->device */
    const gm_hparams *hp;       /* the model as this context sees it (the draft's: gm_hparams_for_mtp) */
    ggufmap_fit_opts opts;      /* its options */
    bool mtp;                   /* the MTP draft context (ctx_type MTP) */
    gm_cparams cp;              /* fit_context.c */
    char refusal[256];          /* "" when llama.cpp creates the context */
    bool aborts;                /* the refusal is an abort (GGML_ASSERT), not an error */
    gm_buffers buffers;         /* its buffers, in llama.cpp's order */
} gm_fit_ctx;

/* fit_run.c: what the parts ask of the run, through their context */
ggufmap_fit_buffer *gm_fit_add_buffer(gm_fit_ctx *fit, ggufmap_fit_kind kind, gm_buft_id buft, uint64_t bytes);
/* The GPU layer il runs on (its ordinal), or -1. */
int32_t gm_fit_layer_gpu(const gm_fit_ctx *fit, uint32_t il);
bool gm_fit_layer_on_gpu(const gm_fit_ctx *fit, uint32_t il);
/* Whether the run has a GPU at all (a GPU backend computes, at any -ngl). */
bool gm_fit_has_gpu(const gm_fit_ctx *fit);
/* The buffer type llama.cpp gives a layer's cache: its GPU's with
 * offload_kqv, else the CPU's. */
gm_buft_id gm_fit_layer_buft(const gm_fit_ctx *fit, uint32_t il, bool offload);
/* Bytes of n elements of a ggml type (ggml_row_size). */
uint64_t gm_row_size(int32_t type, int64_t n);

/* fit_context.c: the sizes llama_context's constructor computes from opts,
 * or a refusal in fit->refusal (llama_init_from_model's checks, in order). */
void gm_fit_context(gm_fit_ctx *fit);
/* Whether the device's flash attention has no kernel (its runs_fa hook)
 * for the attention of some layer on a GPU (on_gpu) or on the CPU. */
bool gm_fit_lacks_fa_kernel(const gm_fit_ctx *fit, bool on_gpu);

/* fit_memory.c: the output buffer, then the memory module's buffers. */
int gm_fit_memory(gm_fit_ctx *fit, ggufmap_error *err);

/* The caches a memory module has, and whether layer il has tensors of its
 * own in one (the module's layer filters and has_kv). */
typedef enum gm_cache { GM_CACHE_KV, GM_CACHE_KV_SWA, GM_CACHE_IDX, GM_CACHE_RS } gm_cache;
bool gm_cache_has_layer(const gm_hparams *hp, gm_cache cache, uint32_t il);
/* The layer whose cache layer il uses instead of its own (gemma4's shared
 * KV layers, llama-model.cpp:2657-2666), or -1. */
int32_t gm_cache_reuse(const gm_hparams *hp, uint32_t il);

/* fit_compute.c: the compute buffers of the scheduler's backends; with
 * -fa auto it first resolves flash attention by llama.cpp's probe on the
 * graph (cp.sizes.flash_attn may turn off). */
int gm_fit_compute(gm_fit_ctx *fit, ggufmap_error *err);
/* whether fit_compute.c builds the architecture's graph (else a bound) */
bool gm_fit_has_graph(const gm_hparams *hp);
/* Whether llama.cpp runs the context with pipeline parallelism (several
 * GPUs holding every layer, -sm layer, no override, KV offloaded): the
 * scheduler then keeps GM_SCHED_MAX_COPIES copies of its inputs. */
bool gm_fit_pipeline_parallel(const gm_fit_ctx *fit);

/* fit_bound.c: an upper bound of the compute buffers for an architecture
 * without a graph in fit_compute.c (every buffer exact = false). */
int gm_fit_compute_bound(gm_fit_ctx *fit);

/* ------------------------------------------------------------------------ */
/* The fit (fit.c)                                                           */
/* ------------------------------------------------------------------------ */

enum { GM_CTX_MAIN = 0, GM_CTX_DRAFT = 1, GM_MAX_CTX = 2 };

struct ggufmap_fit {
    gm_run run;
    ggufmap_fit_opts opts;
    gm_hparams *hp;             /* the model's (the main context's view) */
    gm_hparams *hp_draft;       /* the MTP draft context's view, with --mtp */
    gm_fit_ctx ctx[GM_MAX_CTX]; /* the contexts, in creation order */
    uint32_t n_ctx;             /* how many were tried (the draft only after the main one was created) */
    gm_buffers buffers;         /* the weights, then every created context's buffers */
    ggufmap_fit_check checks[GM_MAX_DEVICES + 1]; /* the verdict: each limited GPU, then the RAM */
    uint32_t n_checks;
};

#endif

/*
 * ggufmap/fit.h - all the memory a llama.cpp v0.5.0 run needs, per device,
 * and whether it fits.
 *
 * A plan says what llama.cpp maps for the weights.  When it then creates a
 * context (llama_init_from_model) llama.cpp allocates, per buffer type:
 *
 *   kv       the KV cache: per layer with a cache, K and V rows for every
 *            cell of every stream (llama-kv-cache.cpp), a second, smaller
 *            cache for sliding-window layers (llama-kv-cache-iswa.cpp), an
 *            indexer key cache (qwen4exp);
 *   rs       the recurrent state of recurrent layers (llama-memory-recurrent.cpp);
 *   output   the logits (and embeddings) rows: one per sequence at
 *            creation, growing to n_batch rows at the first batch that asks
 *            for that many outputs (llama_context::output_reserve);
 *   compute  the scheduler's buffers, the peak of ggml-alloc's plan for the
 *            worst-case graph (llama_context::sched_reserve).
 *
 * The first three follow closed forms and are exact.  Compute buffers are
 * obtained by building the architecture's worst-case graph and running
 * ggml-alloc's allocator over the scheduler's split of it (fit_compute*.c);
 * where that model is not exact a buffer says so (exact = false) and is an
 * upper bound.  docs/fit.md has the rules with source lines and the measured
 * errors; every number is checked against the real llama.cpp in tests/fit.
 *
 * The verdict is a list of checks (ggufmap_fit_check): each GPU's total
 * against its limit (Metal's working set, recommendedMaxWorkingSetSize:
 * ggufmap_metal_default_limit derives macOS's default from the RAM; a
 * discrete GPU's memory), and everything the host's RAM holds against the
 * RAM (with unified memory, everything the run holds at all).
 */
#ifndef GGUFMAP_FIT_H
#define GGUFMAP_FIT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ggufmap/error.h"
#include "ggufmap/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ggufmap_flash_attn {
    GGUFMAP_FA_AUTO = -1, /* llama.cpp's default: on when the device runs it */
    GGUFMAP_FA_OFF = 0,
    GGUFMAP_FA_ON = 1
} ggufmap_flash_attn;

/* The context options, with the meanings and defaults of llama.cpp's CLI
 * (common/common.h, common/arg.cpp). */
typedef struct ggufmap_fit_opts {
    uint32_t n_ctx;             /* -c: 0 = the trained context (default) */
    uint32_t n_seq_max;         /* -np (default 1) */
    uint32_t n_batch;           /* -b (default 2048) */
    uint32_t n_ubatch;          /* -ub (default 512) */
    uint32_t n_outputs_max;     /* outputs per batch; 0 = n_batch (default) */
    int32_t type_k, type_v;     /* -ctk / -ctv, ggml type ids (default f16) */
    ggufmap_flash_attn flash_attn; /* -fa (default auto) */
    bool swa_full;              /* --swa-full (default off) */
    bool kv_unified;            /* --kv-unified */
    bool no_kv_offload;         /* -nkvo: the KV cache stays on the CPU */
    bool embeddings;            /* --embedding: embeddings rows in the output buffer */
    bool no_op_offload;         /* --no-op-offload */
    bool no_cuda_fusion;        /* as llama.cpp with GGML_CUDA_DISABLE_FUSION=1 (the CLI reads that variable): CUDA keeps no fused-MoE inputs alive */
    bool mtp;                   /* --mtp (--spec-type draft-mtp): the MTP draft context too, on the
                                   plan's weights (plan them with load_mtp: one load holds the MTP layers) */
    uint32_t spec_draft_n_max;  /* with mtp: llama.cpp's --spec-draft-n-max (default 3), the tokens a draft
                                   proposes; the main context keeps that many recurrent rollback rows per
                                   sequence where the architecture rolls back (n_rs_seq) */
    uint64_t limit;             /* bytes each GPU may hold (the CPU without a GPU); 0 = no such check.
                                   On Metal it is the GPU working-set limit (recommendedMaxWorkingSetSize) */
    uint64_t gpu_limits[GGUFMAP_MAX_GPUS]; /* per GPU ordinal (CUDA1: [1]): its own limit; 0 = limit's */
    uint64_t mem;               /* the host's RAM: everything the run holds in it must fit (with unified
                                   memory, everything the run holds at all); 0 = no such check */
} ggufmap_fit_opts;

GGUFMAP_API void ggufmap_fit_opts_init(ggufmap_fit_opts *opts);

typedef enum ggufmap_fit_kind {
    GGUFMAP_FIT_WEIGHTS = 0,
    GGUFMAP_FIT_KV = 1,
    GGUFMAP_FIT_RS = 2,
    GGUFMAP_FIT_OUTPUT = 3,
    GGUFMAP_FIT_COMPUTE = 4
} ggufmap_fit_kind;

/* "weights", "kv", "rs", "output", "compute". */
GGUFMAP_API const char *ggufmap_fit_kind_name(ggufmap_fit_kind kind);

/* One buffer llama.cpp creates, in the order it creates them. */
typedef struct ggufmap_fit_buffer {
    ggufmap_fit_kind kind;
    char buft[40];              /* its buffer type: "CPU", "MTL0", "CUDA0", "CUDA_Host"; for
                                   weights the buffer's name ("MTL0_Mapped", "CPU_REPACK") */
    uint32_t device;            /* index among ggufmap_fit_device_at */
    uint64_t bytes;             /* as llama.cpp allocates it; mapped weights: the span, page-aligned */
    uint64_t planned;           /* weights: the plan's ranges, page-aligned; others: bytes */
    uint64_t bytes_max;         /* output: at n_batch rows; others: bytes */
    uint64_t logged;            /* the size llama.cpp's log line prints ("model buffer size", "KV buffer
                                   size", ...): mapped weights' span not page-aligned; others: bytes */
    bool exact;                 /* false: an upper bound */
    bool mtp;                   /* a buffer of the MTP draft context (--mtp) */
    char what[96];              /* what it holds, for people */
} ggufmap_fit_buffer;

typedef struct ggufmap_fit_device {
    char name[16];              /* "CPU", "MTL0", "CUDA0", "CUDA1" */
    bool gpu;
    uint32_t ordinal;           /* a GPU's number (CUDA1: 1) */
    uint64_t weights, weights_planned;
    uint64_t kv, rs, output, output_max, compute;
    /* weights + kv + rs + output_max + compute, GPU buffers rounded to the
       plan's page as Metal rounds them; with llama.cpp's and the plan's weights */
    uint64_t total, total_planned;
    bool exact;                 /* every buffer of the device is exact */
} ggufmap_fit_device;

/* The context as llama.cpp sizes it (llama-context.cpp:133-305). */
typedef struct ggufmap_fit_context {
    uint32_t n_ctx, n_ctx_seq, n_batch, n_ubatch, n_seq_max, n_stream, n_outputs_max;
    uint32_t kv_size;           /* cells per stream of the (full-attention) cache */
    uint32_t kv_size_swa;       /* cells per stream of the sliding-window cache, 0 without */
    bool flash_attn;            /* as llama.cpp resolves -fa */
    bool v_trans;               /* V stored transposed (flash attention off at creation) */
} ggufmap_fit_context;

typedef struct ggufmap_fit ggufmap_fit;

/* The memory of a context with opts for the plan's placement.  On success
 * *out owns the result and borrows the plan.  Errors: an architecture whose
 * context memory is not modelled (ENOTFOUND) or metadata llama.cpp refuses
 * (EFORMAT); both name the model and the key.  A context that llama.cpp
 * itself refuses is a result, not an error: see ggufmap_fit_refusal.  With
 * opts->mtp the MTP draft context llama.cpp's --spec-type draft-mtp creates
 * beside the main one (common/speculative.cpp:2536-2590) follows it:
 * ctx_type MTP, the main context's n_ctx, f16 caches (the draft's default),
 * n_seq_max outputs, its own KV cache over the MTP layers, its output and
 * compute buffers (flagged mtp), and the main context's output buffer grows
 * by the hidden rows the draft reads (embeddings_nextn). */
GGUFMAP_API int ggufmap_fit_build(const ggufmap_plan *plan, const ggufmap_fit_opts *opts, ggufmap_fit **out,
                      ggufmap_error *err);
GGUFMAP_API void ggufmap_fit_free(ggufmap_fit *fit);

/* Why llama.cpp v0.5.0 would not create this context (its own message), or
 * NULL.  *aborts (may be NULL) says whether it aborts the process instead of
 * returning an error.  A refused fit has only its weight buffers.  With
 * --mtp a refused MTP draft context refuses the run too (llama-server stops:
 * "failed to create MTP context"); ggufmap_fit_mtp_refusal says which. */
GGUFMAP_API const char *ggufmap_fit_refusal(const ggufmap_fit *fit, bool *aborts);
/* The MTP draft context's refusal, or NULL (also without --mtp). */
GGUFMAP_API const char *ggufmap_fit_mtp_refusal(const ggufmap_fit *fit, bool *aborts);
/* The MTP draft context's sizes, or NULL when it was not created. */
GGUFMAP_API const ggufmap_fit_context *ggufmap_fit_mtp_sizes(const ggufmap_fit *fit);

GGUFMAP_API const ggufmap_fit_context *ggufmap_fit_context_sizes(const ggufmap_fit *fit);
GGUFMAP_API const ggufmap_fit_opts *ggufmap_fit_options(const ggufmap_fit *fit);
GGUFMAP_API const ggufmap_plan *ggufmap_fit_plan(const ggufmap_fit *fit);
GGUFMAP_API uint32_t ggufmap_fit_n_buffers(const ggufmap_fit *fit);
GGUFMAP_API const ggufmap_fit_buffer *ggufmap_fit_buffer_at(const ggufmap_fit *fit, uint32_t i);
/* Devices: the CPU first, then the GPU when the placement has one. */
GGUFMAP_API uint32_t ggufmap_fit_n_devices(const ggufmap_fit *fit);
GGUFMAP_API const ggufmap_fit_device *ggufmap_fit_device_at(const ggufmap_fit *fit, uint32_t i);

/* The device the limit applies to: the (first) GPU, or the CPU without one. */
GGUFMAP_API uint32_t ggufmap_fit_limited_device(const ggufmap_fit *fit);

/* One check of the verdict: a total against a limit, with llama.cpp's
 * weights and with the plan's (after repack).  The checks, in order: one
 * per GPU with a limit (opts.limit or its gpu_limits entry; on the CPU
 * alone the CPU's, against opts.limit), then, with opts.mem, the host's
 * RAM: everything resident in it (docs/fit.md "Unified memory"): the
 * weights as ggufmap_plan_resident counts them (overlapping spans once,
 * lazily read tables not), and the KV cache, recurrent state, output
 * buffer (full size) and compute buffers of the devices whose memory is
 * the RAM (all of them with unified memory, the host otherwise). */
typedef struct ggufmap_fit_check {
    char what[64];              /* "GPU working set (MTL0)", "GPU memory (CUDA1)", "RAM (unified memory: ...)" */
    int32_t device;             /* the device judged (ggufmap_fit_device_at), -1: the host's RAM */
    uint64_t total, total_planned;
    uint64_t limit;
} ggufmap_fit_check;

GGUFMAP_API uint32_t ggufmap_fit_n_checks(const ggufmap_fit *fit);
GGUFMAP_API const ggufmap_fit_check *ggufmap_fit_check_at(const ggufmap_fit *fit, uint32_t i);

/* Whether every check passes with llama.cpp's weights (planned: with the
 * plan's); true when no limit was given; false when llama.cpp refuses. */
GGUFMAP_API bool ggufmap_fit_fits(const ggufmap_fit *fit, bool planned);

/* The largest -c (a multiple of 256, at most opts->n_ctx, or the trained
 * context when opts->n_ctx is 0) whose run passes every check with
 * llama.cpp's weights (planned: with the plan's, as after a repack), found
 * by bisection over fit results (the total never shrinks as the context
 * grows); 0 when not even 256 fits or llama.cpp refuses.  The other options
 * are opts'. */
GGUFMAP_API int ggufmap_fit_max_ctx(const ggufmap_plan *plan, const ggufmap_fit_opts *opts, bool planned, uint32_t *n_ctx,
                        ggufmap_error *err);

/* Ways to make a run fit, cheapest first: repack (the plan's weights),
 * q8_0 K and V with flash attention, then moving experts (--n-cpu-moe N),
 * or when that cannot fit, layers (-ngl N) to the CPU; each keeps the
 * changes before it and comes with the limited device's new total and the
 * RAM check's.  Each is judged by a fit built with it (the changes before
 * it included) against every check, the GPU's and, with opts.mem, the
 * RAM's: repack and the q8_0 cache are listed when they save bytes, marked
 * whether that fits; the last step (--n-cpu-moe or -ngl) only when it
 * passes every check. */
typedef struct ggufmap_fit_suggestion {
    char flags[96];             /* what to pass: "repack", "-ctk q8_0 -ctv q8_0 -fa on", "--n-cpu-moe 12" */
    uint64_t total;             /* the limited device's total with it (the first GPU) */
    uint64_t resident;          /* the RAM check's total with it (0 without opts.mem) */
    uint32_t n_gpus;            /* the run's GPUs (devices 1.. of the fit), each one's total with it: */
    uint64_t gpu_total[GGUFMAP_MAX_GPUS];
    bool fits;                  /* every check passes with it (a fit was built for it) */
} ggufmap_fit_suggestion;

GGUFMAP_API int ggufmap_fit_suggest(const ggufmap_model *model, const ggufmap_placement_opts *placement,
                        const ggufmap_plan_opts *plan_opts, const ggufmap_fit_opts *opts,
                        ggufmap_fit_suggestion *out, uint32_t cap, uint32_t *n, ggufmap_error *err);

/* What `ggufmap fit` prints beside a fit: the context search and the
 * suggestions, when they were made. */
typedef struct ggufmap_fit_report_opts {
    bool json;                  /* the "ggufmap.fit/1" document (README) instead of text */
    bool searched;              /* max_ctx* hold ggufmap_fit_max_ctx's answers */
    uint32_t max_ctx;           /* with llama.cpp's weights */
    uint32_t max_ctx_planned;   /* with the plan's (after a repack) */
    const ggufmap_fit_suggestion *suggestions;
    uint32_t n_suggestions;
} ggufmap_fit_report_opts;

/* Text: the context, every buffer, the per-device totals, the verdict under
 * the limit, the largest context and the suggestions; or JSON. */
GGUFMAP_API void ggufmap_fit_report(FILE *out, const ggufmap_fit *fit, const ggufmap_fit_report_opts *opts);

/* macOS's default GPU working-set limit (recommendedMaxWorkingSetSize) on
 * an Apple Silicon Mac with this much RAM: two thirds up to 32 GiB, three
 * quarters above (docs/fit.md has the measurements and the
 * iogpu.wired_limit_mb override). */
GGUFMAP_API uint64_t ggufmap_metal_default_limit(uint64_t ram_bytes);

#ifdef __cplusplus
}
#endif
#endif

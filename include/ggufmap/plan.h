/*
 * ggufmap/plan.h - the buffers llama.cpp creates for a placement, what is
 * foreign inside each mapped span, and tighter ways to map the same tensors.
 *
 * For every context of a placement, in llama.cpp's order:
 *   - a mapped context gives one buffer per file that holds any of its
 *     tensors, spanning [lowest offset, highest offset + bytes) of them
 *     (llama_model_loader::get_mapping_range): every byte in between is
 *     mapped, whoever owns it;
 *   - an allocated context gives one buffer of the summed, padded sizes.
 *
 * A planner then turns each mapped buffer's own tensors into byte ranges:
 *
 *   span              llama.cpp today: one range, the whole span
 *   coalesce[:GAP]    PR 25309: ranges merged across gaps <= GAP (64 MiB)
 *   runs[:GAP[:MAX]]  unsloth PR #152: runs merged across gaps < GAP (32 MiB);
 *                     more than MAX (64) ranges fall back to the span
 *   tight[:COST[:MAX]] ours: the fewest mapped bytes, counting COST bytes for
 *                     every range (default 0) and never more than MAX ranges
 *                     per buffer (default 64); optimal, see plan.c
 *
 * With a page size (Metal: 16 KiB) every range is counted page-aligned, as
 * ggml_metal_buffer_map aligns it, and a range longer than the maximum
 * buffer length is split into overlapping views as Metal does.
 */
#ifndef GGUFMAP_PLAN_H
#define GGUFMAP_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/placement.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ggufmap_planner_kind {
    GGUFMAP_PLANNER_SPAN = 0,
    GGUFMAP_PLANNER_COALESCE = 1,
    GGUFMAP_PLANNER_RUNS = 2,
    GGUFMAP_PLANNER_TIGHT = 3
} ggufmap_planner_kind;

typedef struct ggufmap_planner {
    ggufmap_planner_kind kind;
    uint64_t gap;         /* coalesce / runs: the merge threshold */
    uint64_t cost;        /* tight: bytes charged per range */
    uint32_t max_ranges;  /* runs: fallback threshold; tight: the cap per buffer */
} ggufmap_planner;

/* Parses "span", "coalesce", "coalesce:32M", "runs:32M:64", "tight:1M:16"...
 * with the defaults above.  Returns GGUFMAP_OK or GGUFMAP_EINVAL. */
GGUFMAP_API int ggufmap_planner_parse(const char *text, ggufmap_planner *out);
/* "tight:0:64" etc.: the planner with its parameters, into buf. */
GGUFMAP_API const char *ggufmap_planner_format(const ggufmap_planner *planner, char *buf, size_t cap);

typedef struct ggufmap_plan_opts {
    ggufmap_planner planner;
    uint64_t page;        /* 1 = exact bytes; Metal: 16384; 0 = the placement's device's */
    uint64_t max_buffer;  /* Metal maxBufferLength; 0 = no limit */
} ggufmap_plan_opts;

/* Fills opts with the defaults: the tight planner (tight:0:64), the
 * device's page (0: resolved by ggufmap_plan_build from the placement's
 * device: 16 KiB for Metal, exact bytes otherwise), no maximum buffer
 * length.  ggufmap_preset gives the same values spelled out. */
GGUFMAP_API void ggufmap_plan_opts_init(ggufmap_plan_opts *opts);

/* The defaults for a device: the options `ggufmap plan --device D` (and
 * repack, load) start from, so that a program gets the command line's
 * figures.  One table (src/device.c), shared by the library and the CLI;
 * ggufmap_placement_opts_init and ggufmap_plan_opts_init with only the
 * device set give the same rules:
 *
 *   device     CPU rules                -ngl  planner     page
 *   cpu        this machine's (host)    all   tight:0:64  1 (exact bytes)
 *   metal      arm64 (Apple Silicon)    all   tight:0:64  16 KiB (Apple Silicon's
 *                                                         page, as ggml_metal_buffer_map
 *                                                         aligns every buffer)
 *   cuda, rocm this machine's (host)    all   tight:0:64  1
 *
 * "-ngl all" is llama_model_default_params' n_gpu_layers (-1); with no GPU it
 * changes nothing.  Every other field is llama.cpp's default, as
 * ggufmap_placement_opts_init and ggufmap_plan_opts_init set them (mmap on,
 * repack on, lazy tables auto, no overrides).  Either pointer may be NULL.
 * ggufmap_mapped_open (load.h) maps with the running system's page size, whatever
 * the plan counted with. */
GGUFMAP_API void ggufmap_preset(ggufmap_device device, ggufmap_placement_opts *placement, ggufmap_plan_opts *plan);

typedef struct ggufmap_range {
    uint64_t first, last; /* file offsets, [first, last) */
} ggufmap_range;

typedef struct ggufmap_foreign {
    int64_t tensor;       /* model tensor index */
    uint64_t bytes;       /* its bytes inside the span */
    int32_t owner;        /* the context it belongs to, or -1 when it has none here */
} ggufmap_foreign;

typedef struct ggufmap_buffer {
    char name[40];            /* as llama.cpp prints it: "CPU_Mapped", "MTL0_Mapped", "CPU_REPACK" */
    uint32_t context;         /* index into the placement's contexts */
    bool mapped;
    uint32_t shard;           /* mapped buffers only */
    uint64_t first, last;     /* mapped buffers only: the span */
    uint64_t size;            /* bytes as llama.cpp sizes the buffer */
    uint64_t max_tensor;      /* the max_tensor_size llama.cpp passes */
    int64_t n_tensors;        /* tensors of the context in this buffer */
    uint64_t own_bytes;       /* bytes of those tensors */
    const ggufmap_foreign *foreign; /* tensors inside the span owned by others, largest first */
    uint32_t n_foreign;
    uint64_t foreign_bytes;
    const ggufmap_range *ranges;    /* the planner's ranges (mapped buffers) */
    uint32_t n_ranges;
    uint64_t ranges_bytes;          /* sum of range lengths */
    uint64_t span_resident;         /* page-aligned bytes of the span (Metal: what is wired) */
    uint64_t ranges_resident;       /* page-aligned bytes of the ranges */
    uint32_t span_views, ranges_views; /* Metal views (buffers) needed under max_buffer */
} ggufmap_buffer;

typedef struct ggufmap_plan ggufmap_plan;

/* Builds the buffers of a placement and plans each mapped one.  On success
 * *out owns the result and borrows the placement. */
GGUFMAP_API int ggufmap_plan_build(const ggufmap_placement *placement, const ggufmap_plan_opts *opts, ggufmap_plan **out,
                       ggufmap_error *err);
GGUFMAP_API void ggufmap_plan_free(ggufmap_plan *plan);

GGUFMAP_API uint32_t ggufmap_plan_n_buffers(const ggufmap_plan *plan);
GGUFMAP_API const ggufmap_buffer *ggufmap_plan_buffer(const ggufmap_plan *plan, uint32_t i);
GGUFMAP_API const ggufmap_placement *ggufmap_plan_placement(const ggufmap_plan *plan);
GGUFMAP_API const ggufmap_plan_opts *ggufmap_plan_options(const ggufmap_plan *plan);

/* Why llama.cpp would fail to load with this placement (a CPU mapping that
 * starts off 32 bytes makes ggml abort), or NULL when it loads. */
GGUFMAP_API const char *ggufmap_plan_failure(const ggufmap_plan *plan);

/* The contexts holding model tensor i, one bit per context index (0 when
 * llama.cpp creates no tensor for it), and its owner: the context of its
 * first instance, or -1. */
GGUFMAP_API uint32_t ggufmap_plan_tensor_contexts(const ggufmap_plan *plan, int64_t i);
GGUFMAP_API int32_t ggufmap_plan_tensor_owner(const ggufmap_plan *plan, int64_t i);

/* Bytes that count against a GPU working-set limit: the GPU's buffers (all
 * buffers on a CPU-only placement), by llama.cpp's spans and by the planned
 * ranges, page-aligned as the plan's page size says. */
GGUFMAP_API void ggufmap_plan_working_set(const ggufmap_plan *plan, uint64_t *llama_bytes, uint64_t *planned_bytes);

/* One GPU's share of the working set: the buffers of the run's GPU i (0 ..
 * ggufmap_placement_n_gpus - 1, in -dev's order), counted as
 * ggufmap_plan_working_set counts them.  With one GPU, the same. */
GGUFMAP_API void ggufmap_plan_gpu_working_set(const ggufmap_plan *plan, uint32_t i, uint64_t *llama_bytes,
                                              uint64_t *planned_bytes);

/* The limit of the GPU with this ordinal, as every verdict reads --limit:
 * its own (gpu_limits[ordinal], when gpu_limits is not NULL and that is not
 * 0), else limit (0: none). */
GGUFMAP_API uint64_t ggufmap_gpu_limit(uint64_t limit, const uint64_t *gpu_limits, uint32_t ordinal);

/* The working-set verdict: each GPU of the run against its own limit
 * (gpu_limits[its ordinal], NULL or 0: limit); with at most one GPU,
 * ggufmap_plan_working_set against it; with mtp (the MTP head's load of the same run, or NULL)
 * both loads' buffers together.  planned: the planned ranges, else
 * llama.cpp's spans.  True when no limit applies. */
GGUFMAP_API bool ggufmap_plan_fits_limits(const ggufmap_plan *plan, const ggufmap_plan *mtp, uint64_t limit,
                                          const uint64_t *gpu_limits, bool planned);

/* The CPU side: every buffer ggufmap_plan_working_set leaves out (CPU_Mapped
 * spans or ranges, page-aligned; allocated CPU buffers such as CPU_REPACK at
 * their size; 0 on a CPU-only placement, where the working set counts them).
 * On a unified-memory Mac these live in the same RAM as the GPU's. */
GGUFMAP_API void ggufmap_plan_cpu_side(const ggufmap_plan *plan, uint64_t *llama_bytes, uint64_t *planned_bytes);

/* Bytes of weights the run holds in the host's RAM: on a device with
 * unified memory (Metal) every buffer, on the CPU alone every buffer, with
 * a discrete GPU the host's buffers only.  Mapped buffers count their pages
 * once where spans overlap (the file's pages are in memory once, however
 * many buffers map them: a CPU_Mapped span reaching over MTL0_Mapped
 * tensors), page-aligned as the plan's page says; lazily read tables
 * (--lazy-mode) do not count, llama.cpp maps their files without
 * MAP_POPULATE and reads only the rows a batch gathers; allocated buffers
 * count their size.  With llama.cpp's spans and with the planned ranges. */
GGUFMAP_API void ggufmap_plan_resident(const ggufmap_plan *plan, uint64_t *llama_bytes, uint64_t *planned_bytes);

/* Plans one list of own byte ranges (sorted by first, non-overlapping, as
 * the tensors of one context in one file are) with a planner: the ranges it
 * maps go to out (room for n), their count is returned.  page as in
 * ggufmap_plan_opts.  Exposed for tests and other loaders. */
GGUFMAP_API uint32_t ggufmap_plan_ranges(const ggufmap_planner *planner, uint64_t page, const ggufmap_range *own, uint32_t n,
                             ggufmap_range *out);

/* Bytes a set of ranges costs when each is page-aligned (first down, last up). */
GGUFMAP_API uint64_t ggufmap_ranges_resident(const ggufmap_range *ranges, uint32_t n, uint64_t page);

/* Metal views for one range: the number of MTLBuffers ggml_metal_buffer_map
 * makes and the sum of their lengths. */
GGUFMAP_API uint32_t ggufmap_metal_views(uint64_t first, uint64_t last, uint64_t page, uint64_t max_buffer, uint64_t max_tensor,
                             uint64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif

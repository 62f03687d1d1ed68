/*
 * report_internal.h - what the plan's text, JSON and SVG reports share (not
 * installed): names for contexts, shards and totals, and one colour per
 * buffer type so every picture says the same thing the same way.
 */
#ifndef GGUFMAP_REPORT_INTERNAL_H
#define GGUFMAP_REPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "ggufmap/report.h"

/* The file name of a path (after the last '/'). */
const char *gm_base_name(const char *path);

/* "CPU", "CPU (lazy)", "MTL0" ... into buf. */
const char *gm_context_label(const ggufmap_context *c, char *buf, size_t cap);

/* The kind of buffer a context makes, for its colour and letter: the same
 * kind always gets the same colour, in every picture of every model. */
typedef enum gm_buffer_kind {
    GM_KIND_GPU = 0,     /* MTL0, CUDA0 */
    GM_KIND_CPU,         /* CPU (mapped: CPU_Mapped) */
    GM_KIND_CPU_REPACK,  /* CPU_REPACK */
    GM_KIND_CUDA_HOST,   /* CUDA_Host */
    GM_KIND_LAZY,        /* a lazily read CPU table */
    GM_KIND_CPU_AMX,     /* AMX */
    GM_KIND_COUNT
} gm_buffer_kind;

gm_buffer_kind gm_context_kind(const ggufmap_context *c);
/* Its colour as "#rrggbb" (SVG) and its letter in the terminal picture. */
const char *gm_kind_rgb(gm_buffer_kind k);
char gm_kind_letter(gm_buffer_kind k);
/* What the kind is, for a legend: "GPU (MTL0, CUDA0)". */
const char *gm_kind_name(gm_buffer_kind k);

/* Sums over a plan's buffers. */
typedef struct gm_totals {
    uint64_t span, own, foreign, planned, allocated, span_resident, planned_resident;
    uint32_t n_mapped, n_ranges;
} gm_totals;
gm_totals gm_plan_totals(const ggufmap_plan *plan);

/* "FITS under the limit of 96.00 GiB by 19.14 GiB" or "EXCEEDS ...", into
 * buf; "" without a limit. */
const char *gm_fmt_against_limit(char *buf, size_t cap, uint64_t bytes, uint64_t limit);

/* "layers 0..47 and the output layer on the GPU", "layer 3 on the GPU",
 * "the output layer on the GPU", "no GPU", into buf. */
const char *gm_gpu_layers(const ggufmap_plan *plan, char *buf, size_t cap);

/* Whether the placement puts anything on a GPU, and the GPU's buffer type
 * ("MTL0", "CUDA0"; NULL without one). */
bool gm_plan_has_gpu(const ggufmap_plan *plan);
const char *gm_plan_gpu_name(const ggufmap_plan *plan);
/* Whether the placement's device is Metal (unified memory: the CPU side
 * shares the Mac's RAM with the working set). */
bool gm_plan_is_metal(const ggufmap_plan *plan);

/* For shard s: per cell of width cells, the context owning most bytes in it
 * (-1: no tensor, -2: a tensor llama.cpp creates no tensor for). */
void gm_shard_cells(const ggufmap_plan *plan, uint32_t s, uint32_t width, int *cell_owner);

#endif

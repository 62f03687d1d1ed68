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

/* The paint of a context's buffers, for its colour and letter: its buffer
 * kind (ggufmap_buft_kind, the one enum of buffer types), or, for a lazily
 * read table, GM_PAINT_LAZY.  The same kind always gets the same colour, in
 * every picture of every model. */
typedef unsigned gm_paint;
#define GM_PAINT_LAZY ((gm_paint)GGUFMAP_BUFT_CPU_AMX + 1)
#define GM_PAINT_COUNT (GM_PAINT_LAZY + 1)

gm_paint gm_context_paint(const ggufmap_context *c);
/* Its colour as "#rrggbb" (SVG) and its letter in the terminal picture. */
const char *gm_paint_rgb(gm_paint k);
char gm_paint_letter(gm_paint k);
/* What it is, for a legend on device kind d: "GPU", "CPU_REPACK", ... */
const char *gm_paint_name(gm_paint k, ggufmap_device d, char *buf, size_t cap);

/* Sums over a plan's buffers. */
typedef struct gm_totals {
    uint64_t span, own, foreign, planned, allocated, span_resident, planned_resident;
    uint32_t n_mapped, n_ranges;
} gm_totals;
gm_totals gm_plan_totals(const ggufmap_plan *plan);

/* "FITS under the limit of 96.00 GiB by 19.14 GiB" or "EXCEEDS ...", into
 * buf; "" without a limit. */
const char *gm_fmt_against_limit(char *buf, size_t cap, uint64_t bytes, uint64_t limit);

/* The limit GPU i of the run (ggufmap_plan_gpu_working_set's index) is
 * judged against: its own from gpu_limits, else limit. */
uint64_t gm_gpu_limit(const ggufmap_plan *plan, uint32_t i, uint64_t limit, const uint64_t *gpu_limits);

/* Whether a suggestion's working set passes the limits of o (each GPU's
 * with several) and its RAM --mem. */
bool gm_suggestion_fits(const ggufmap_plan *plan, const ggufmap_report_opts *o, const ggufmap_suggestion *s);

/* "layers 0..47 and the output layer on the GPU", "layer 3 on the GPU",
 * "the output layer on the GPU", "no GPU", into buf. */
const char *gm_gpu_layers(const ggufmap_plan *plan, char *buf, size_t cap);

/* Whether the placement puts anything on a GPU, and the GPU's buffer type
 * ("MTL0", "CUDA0"; NULL without one). */
bool gm_plan_has_gpu(const ggufmap_plan *plan);
const char *gm_plan_gpu_name(const ggufmap_plan *plan);
/* Whether the placement's device has unified memory (a Mac: the CPU side
 * shares the RAM with the working set). */
bool gm_plan_unified(const ggufmap_plan *plan);

/* For shard s: per cell of width cells, the context owning most bytes in it
 * (-1: no tensor, -2: a tensor llama.cpp creates no tensor for). */
void gm_shard_cells(const ggufmap_plan *plan, uint32_t s, uint32_t width, int *cell_owner);

#endif

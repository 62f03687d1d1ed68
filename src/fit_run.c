/*
 * fit_run.c - the run a context belongs to: its devices, where a layer
 * lives, and the buffer lists every part of a fit appends to.
 *
 * Data structure.  A run (gm_run) is the plan and the machine: the host,
 * then the run's GPUs in llama.cpp's order (llama_model::devices), then any
 * other GPU an override put weights on.  A buffer list is a growing array
 * of ggufmap_fit_buffer in llama.cpp's creation order; each buffer gets its
 * name and device from its buffer type here, the one place a fit turns a
 * buffer type into either.
 *
 * This is the bottom of the fit: every part (fit_context, fit_memory,
 * fit_compute, fit_bound, the graph builders) calls it, it calls none of
 * them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_internal.h"
#include "ggufmap/types.h"

/* ------------------------------------------------------------------------ */
/* Devices                                                                   */
/* ------------------------------------------------------------------------ */

static void add_gpu(gm_run *run, uint32_t ordinal) {
    for (uint32_t d = 1; d < run->n_devices; d++)
        if (run->devices[d].ordinal == ordinal) return;
    if (run->n_devices >= GM_MAX_DEVICES) return;
    ggufmap_fit_device *d = &run->devices[run->n_devices++];
    memset(d, 0, sizeof *d);
    gm_buft_name(run->device, (gm_buft_id){GGUFMAP_BUFT_GPU, ordinal}, false, d->name, sizeof d->name);
    d->gpu = true;
    d->ordinal = ordinal;
    d->exact = true;
}

void gm_run_init(gm_run *run, const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    memset(run, 0, sizeof *run);
    run->plan = plan;
    run->device = ggufmap_placement_options(pl)->device;
    gm_buft_name(run->device, (gm_buft_id){GGUFMAP_BUFT_CPU, 0}, false, run->devices[0].name,
                 sizeof run->devices[0].name);
    run->devices[0].exact = true;
    run->n_devices = 1;
    for (uint32_t i = 0; i < ggufmap_placement_n_gpus(pl); i++) add_gpu(run, ggufmap_placement_gpu(pl, i));
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++)
        if (ggufmap_placement_context(pl, c)->gpu) add_gpu(run, ggufmap_placement_context(pl, c)->ordinal);
}

uint32_t gm_run_device_of(const gm_run *run, gm_buft_id b) {
    if (!gm_buft_on_gpu(b.kind)) return GM_DEVICE_CPU;
    for (uint32_t d = 1; d < run->n_devices; d++)
        if (run->devices[d].ordinal == b.gpu) return d;
    return GM_DEVICE_CPU; /* not reached: gm_run_init lists every GPU a context uses */
}

/* ------------------------------------------------------------------------ */
/* Buffer lists                                                              */
/* ------------------------------------------------------------------------ */

ggufmap_fit_buffer *gm_buffers_add(gm_buffers *list, const gm_run *run, ggufmap_fit_kind kind, gm_buft_id buft,
                                   uint64_t bytes) {
    if (list->n == list->cap) {
        uint32_t cap = list->cap ? list->cap * 2 : 32;
        ggufmap_fit_buffer *n = realloc(list->v, cap * sizeof *n);
        if (!n) return NULL;
        list->v = n;
        list->cap = cap;
    }
    ggufmap_fit_buffer *b = &list->v[list->n++];
    memset(b, 0, sizeof *b);
    b->kind = kind;
    gm_buft_name(run->device, buft, false, b->buft, sizeof b->buft);
    b->bytes = b->planned = b->bytes_max = b->logged = bytes;
    b->exact = true;
    b->device = gm_run_device_of(run, buft);
    return b;
}

void gm_buffers_free(gm_buffers *list) {
    free(list->v);
    memset(list, 0, sizeof *list);
}

/* ------------------------------------------------------------------------ */
/* What a context asks of its run                                            */
/* ------------------------------------------------------------------------ */

ggufmap_fit_buffer *gm_fit_add_buffer(gm_fit_ctx *fit, ggufmap_fit_kind kind, gm_buft_id buft, uint64_t bytes) {
    ggufmap_fit_buffer *b = gm_buffers_add(&fit->buffers, fit->run, kind, buft, bytes);
    if (b) b->mtp = fit->mtp;
    return b;
}

int32_t gm_fit_layer_gpu(const gm_fit_ctx *fit, uint32_t il) {
    return ggufmap_placement_layer_gpu(ggufmap_plan_placement(fit->plan), (int32_t)il);
}

bool gm_fit_layer_on_gpu(const gm_fit_ctx *fit, uint32_t il) { return gm_fit_layer_gpu(fit, il) >= 0; }

bool gm_fit_has_gpu(const gm_fit_ctx *fit) { return fit->device != GGUFMAP_DEVICE_CPU; }

/* llama_model::dev_layer's buffer type with offload_kqv, else the CPU's
 * (llama-kv-cache.cpp:212-221). */
gm_buft_id gm_fit_layer_buft(const gm_fit_ctx *fit, uint32_t il, bool offload) {
    const int32_t gpu = gm_fit_layer_gpu(fit, il);
    return offload && gpu >= 0 ? (gm_buft_id){GGUFMAP_BUFT_GPU, (uint32_t)gpu} : (gm_buft_id){GGUFMAP_BUFT_CPU, 0};
}

uint64_t gm_row_size(int32_t type, int64_t n) {
    const ggufmap_type_info *t = ggufmap_type(type);
    if (!t || t->block_size == 0) return 0;
    return (uint64_t)t->type_size * (uint64_t)(n / t->block_size);
}

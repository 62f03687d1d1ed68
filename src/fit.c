/*
 * fit.c - one model of a llama.cpp run: its weights, its contexts, its
 * memory device by device, and the verdict.
 *
 * Data structure.  A fit is a run (fit_run.c: the plan, the machine) and a
 * list of contexts built in the order llama.cpp creates them: the main
 * context with the caller's options, then, with --mtp, the MTP draft
 * context of --spec-type draft-mtp, whose options are derived from the main
 * one's sizes.  Each context is built by the same parts (fit_context,
 * fit_memory, fit_compute) into its own buffer list; a context llama.cpp
 * refuses keeps none.  The fit's buffers are then the plan's weights
 * followed by every created context's buffers, and each device's total
 * sums the buffers whose memory it holds (a buffer of a GPU's type to that
 * GPU, everything else to the host).  A device's total counts the output
 * buffer at its full size (it grows at the first batch that asks for
 * n_batch outputs) and, with a page size (Metal), every GPU buffer
 * page-aligned as Metal allocates it.
 *
 * This file is the orchestrator: it calls the parts, they never call it
 * (fit_internal.h has the layering).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_internal.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* Weights                                                                   */
/* ------------------------------------------------------------------------ */

/* The plan's buffers: mapped spans (page-aligned) and allocated contexts. */
static int add_weights(ggufmap_fit *fit) {
    const ggufmap_plan *plan = fit->run.plan;
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *pb = ggufmap_plan_buffer(plan, i);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, pb->context);
        const gm_buft_id id = {ctx->kind, ctx->ordinal};
        ggufmap_fit_buffer *b = gm_buffers_add(&fit->buffers, &fit->run, GGUFMAP_FIT_WEIGHTS, id,
                                               pb->mapped ? pb->span_resident : pb->size);
        if (!b) return GGUFMAP_ENOMEM;
        snprintf(b->buft, sizeof b->buft, "%s", pb->name); /* the buffer's own name: CPU_Mapped, MTL0_Mapped */
        b->planned = pb->mapped ? pb->ranges_resident : pb->size;
        b->logged = pb->size; /* llama.cpp's "model buffer size" line: the span, not page-aligned */
        if (pb->mapped)
            snprintf(b->what, sizeof b->what, "%lld tensor%s mapped from shard %u%s", (long long)pb->n_tensors,
                     pb->n_tensors == 1 ? "" : "s", pb->shard + 1 /* from 1, as the file names */, ctx->lazy ? " (read lazily)" : "");
        else
            snprintf(b->what, sizeof b->what, "%lld tensor%s copied", (long long)pb->n_tensors,
                     pb->n_tensors == 1 ? "" : "s");
    }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* The contexts                                                              */
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

static void init_context(ggufmap_fit *fit, gm_fit_ctx *c, const ggufmap_fit_opts *opts, const gm_hparams *hp,
                         bool mtp) {
    memset(c, 0, sizeof *c);
    c->plan = fit->run.plan;
    c->run = &fit->run;
    c->device = fit->run.device;
    c->hp = hp;
    c->opts = *opts;
    c->mtp = mtp;
}

/* Whether the plan created the MTP layers' tensors: an architecture that
 * skips them always (exaone4.cpp:39-43) has a draft graph with no layer and
 * llama.cpp fails ("failed to initialize the context"). */
static bool mtp_layers_loaded(const gm_fit_ctx *c) {
    const ggufmap_placement *pl = ggufmap_plan_placement(c->plan);
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++)
        if (ggufmap_placement_instance(pl, i)->layer >= (int32_t)c->hp->n_layer &&
            ggufmap_placement_instance(pl, i)->cls == GGUFMAP_CLASS_LAYER)
            return true;
    return false;
}

/* llama_init_from_model for one context: the checks and the sizes, then
 * what it allocates in order (output, memory, compute).  A refused context
 * has no buffers. */
static int build_context(gm_fit_ctx *c, ggufmap_error *err) {
    gm_fit_context(c);
    if (!c->refusal[0] && c->mtp && !mtp_layers_loaded(c))
        snprintf(c->refusal, sizeof c->refusal, "failed to initialize the context: the model's loader skips its "
                 "MTP layers");
    if (c->refusal[0]) return GGUFMAP_OK;
    int rc = gm_fit_memory(c, err);
    if (rc == GGUFMAP_OK && !c->refusal[0]) rc = gm_fit_compute(c, err);
    if (c->refusal[0]) c->buffers.n = 0;
    return rc;
}

/* The MTP draft context's options (common/speculative.cpp:2536-2590): the
 * main context's n_ctx, f16 caches (the draft's default, -ctkd/-ctvd),
 * one output per sequence (n_parallel), no embeddings. */
static ggufmap_fit_opts draft_opts(const gm_fit_ctx *main) {
    ggufmap_fit_opts o = main->opts;
    o.n_ctx = main->cp.sizes.n_ctx;                /* llama_n_ctx(ctx_tgt) */
    o.type_k = o.type_v = 1;
    o.n_outputs_max = main->cp.sizes.n_seq_max;
    o.embeddings = false;
    return o;
}

/* The list of contexts: the main one, then the draft beside it once the
 * main one exists (llama-server creates it after). */
static int build_contexts(ggufmap_fit *fit, ggufmap_error *err) {
    gm_fit_ctx *main = &fit->ctx[GM_CTX_MAIN];
    init_context(fit, main, &fit->opts, fit->hp, false);
    fit->n_ctx = 1;
    int rc = build_context(main, err);
    if (rc != GGUFMAP_OK || !fit->opts.mtp || main->refusal[0]) return rc;
    fit->hp_draft = malloc(sizeof *fit->hp_draft);
    if (!fit->hp_draft) return GGUFMAP_ENOMEM;
    *fit->hp_draft = *fit->hp;
    gm_hparams_for_mtp(fit->hp_draft);
    const ggufmap_fit_opts o = draft_opts(main);
    init_context(fit, &fit->ctx[GM_CTX_DRAFT], &o, fit->hp_draft, true);
    fit->n_ctx = 2;
    return build_context(&fit->ctx[GM_CTX_DRAFT], err);
}

/* The run's buffers: the weights (already there), then each created
 * context's.  With a draft, the main context's output buffer grows by
 * n_embd_out rows per batch token: the draft reads the target's hidden
 * states (llama_set_embeddings_nextn, not masked, speculative.cpp:1420;
 * output_reserve, llama-context.cpp:2132). */
static int gather_buffers(ggufmap_fit *fit) {
    const gm_fit_ctx *draft = fit->n_ctx > GM_CTX_DRAFT ? &fit->ctx[GM_CTX_DRAFT] : NULL;
    for (uint32_t k = 0; k < fit->n_ctx; k++) {
        const gm_fit_ctx *c = &fit->ctx[k];
        for (uint32_t i = 0; i < c->buffers.n; i++) {
            ggufmap_fit_buffer *b = gm_buffers_add(&fit->buffers, &fit->run, c->buffers.v[i].kind,
                                                   (gm_buft_id){GGUFMAP_BUFT_CPU, 0}, 0);
            if (!b) return GGUFMAP_ENOMEM;
            *b = c->buffers.v[i];
            if (k == GM_CTX_MAIN && draft && !draft->refusal[0] && b->kind == GGUFMAP_FIT_OUTPUT)
                b->bytes_max += 4ull * fit->hp->n_embd_out * c->cp.sizes.n_batch;
        }
    }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Per device                                                                */
/* ------------------------------------------------------------------------ */

static void sum_devices(ggufmap_fit *fit) {
    const uint64_t page = ggufmap_plan_options(fit->run.plan)->page;
    for (uint32_t i = 0; i < fit->buffers.n; i++) {
        const ggufmap_fit_buffer *b = &fit->buffers.v[i];
        ggufmap_fit_device *d = &fit->run.devices[b->device];
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
    for (uint32_t i = 0; i < fit->run.n_devices; i++) {
        ggufmap_fit_device *d = &fit->run.devices[i];
        const uint64_t context = d->kv + d->rs + d->output_max + d->compute;
        d->total = d->weights + context;
        d->total_planned = d->weights_planned + context;
    }
}

/* ------------------------------------------------------------------------ */
/* The verdict's checks                                                      */
/* ------------------------------------------------------------------------ */

static ggufmap_fit_check *add_check(ggufmap_fit *fit, int32_t device, uint64_t limit) {
    ggufmap_fit_check *c = &fit->checks[fit->n_checks++];
    memset(c, 0, sizeof *c);
    c->device = device;
    c->limit = limit;
    return c;
}

/* Each GPU against its limit (the CPU alone against opts.limit). */
static void device_checks(ggufmap_fit *fit) {
    const gm_run *run = &fit->run;
    const bool unified = gm_backend(run->device)->unified;
    for (uint32_t i = run->n_devices > 1 ? 1 : 0; i < run->n_devices; i++) {
        const ggufmap_fit_device *d = &run->devices[i];
        const uint64_t limit =
            d->gpu ? ggufmap_gpu_limit(fit->opts.limit, fit->opts.gpu_limits, d->ordinal) : fit->opts.limit;
        if (!limit) continue;
        char name[sizeof d->name];
        memcpy(name, d->name, sizeof name);
        ggufmap_fit_check *c = add_check(fit, (int32_t)i, limit);
        snprintf(c->what, sizeof c->what, "%s (%s)", !d->gpu ? "memory" : unified ? "GPU working set" : "GPU memory",
                 name);
        c->total = d->total;
        c->total_planned = d->total_planned;
    }
}

/* Everything the host's RAM holds (docs/fit.md "Unified memory"): the
 * weights counted once (ggufmap_plan_resident), and every context buffer of
 * the devices whose memory is the RAM. */
static void ram_check(ggufmap_fit *fit) {
    const gm_run *run = &fit->run;
    const bool unified = gm_backend(run->device)->unified;
    uint64_t weights, weights_planned, context = 0;
    ggufmap_plan_resident(run->plan, &weights, &weights_planned);
    for (uint32_t i = 0; i < run->n_devices; i++) {
        const ggufmap_fit_device *d = &run->devices[i];
        if (unified || !d->gpu) context += d->kv + d->rs + d->output_max + d->compute;
    }
    ggufmap_fit_check *c = add_check(fit, -1, fit->opts.mem);
    snprintf(c->what, sizeof c->what, "%s", unified ? "RAM (unified memory: everything resident)"
                                            : run->n_devices > 1 ? "RAM (the host's side)" : "RAM");
    c->total = weights + context;
    c->total_planned = weights_planned + context;
}

/* ------------------------------------------------------------------------ */
/* Building a fit                                                            */
/* ------------------------------------------------------------------------ */

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
    gm_run_init(&fit->run, plan);
    fit->opts = *opts;
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const char *model_refusal = ggufmap_placement_refusal(pl); /* no figures for a model llama.cpp refuses */
    int rc = model_refusal ? gm_fail(err, GGUFMAP_EFORMAT, "%s", model_refusal)
                           : gm_hparams_read(ggufmap_placement_model(pl), fit->hp, err);
    if (rc == GGUFMAP_OK) rc = add_weights(fit);
    if (rc == GGUFMAP_OK) rc = build_contexts(fit, err);
    if (rc == GGUFMAP_OK) rc = gather_buffers(fit);
    if (rc != GGUFMAP_OK) {
        if (rc == GGUFMAP_ENOMEM) gm_fail(err, rc, "out of memory");
        ggufmap_fit_free(fit);
        return rc;
    }
    sum_devices(fit);
    device_checks(fit);
    if (opts->mem) ram_check(fit);
    *out = fit;
    return GGUFMAP_OK;
}

void ggufmap_fit_free(ggufmap_fit *fit) {
    if (!fit) return;
    for (uint32_t k = 0; k < GM_MAX_CTX; k++) gm_buffers_free(&fit->ctx[k].buffers);
    gm_buffers_free(&fit->buffers);
    free(fit->hp);
    free(fit->hp_draft);
    free(fit);
}

/* ------------------------------------------------------------------------ */
/* Accessors and the verdict                                                 */
/* ------------------------------------------------------------------------ */

const char *ggufmap_fit_kind_name(ggufmap_fit_kind kind) {
    static const char *const names[] = { "weights", "kv", "rs", "output", "compute" };
    return (unsigned)kind < 5 ? names[kind] : "?";
}

static const char *refusal_of(const gm_fit_ctx *c, bool *aborts) {
    if (aborts) *aborts = c->aborts;
    return c->refusal[0] ? c->refusal : NULL;
}

const char *ggufmap_fit_refusal(const ggufmap_fit *fit, bool *aborts) {
    for (uint32_t k = 0; k < fit->n_ctx; k++)
        if (fit->ctx[k].refusal[0]) return refusal_of(&fit->ctx[k], aborts);
    if (aborts) *aborts = false;
    return NULL;
}

const char *ggufmap_fit_mtp_refusal(const ggufmap_fit *fit, bool *aborts) {
    if (fit->n_ctx > GM_CTX_DRAFT) return refusal_of(&fit->ctx[GM_CTX_DRAFT], aborts);
    if (aborts) *aborts = false;
    return NULL;
}

const ggufmap_fit_context *ggufmap_fit_mtp_sizes(const ggufmap_fit *fit) {
    return fit->n_ctx > GM_CTX_DRAFT && !fit->ctx[GM_CTX_DRAFT].refusal[0] ? &fit->ctx[GM_CTX_DRAFT].cp.sizes : NULL;
}

const ggufmap_fit_context *ggufmap_fit_context_sizes(const ggufmap_fit *fit) { return &fit->ctx[GM_CTX_MAIN].cp.sizes; }
const ggufmap_fit_opts *ggufmap_fit_options(const ggufmap_fit *fit) { return &fit->opts; }
const ggufmap_plan *ggufmap_fit_plan(const ggufmap_fit *fit) { return fit->run.plan; }
uint32_t ggufmap_fit_n_buffers(const ggufmap_fit *fit) { return fit->buffers.n; }
const ggufmap_fit_buffer *ggufmap_fit_buffer_at(const ggufmap_fit *fit, uint32_t i) {
    return i < fit->buffers.n ? &fit->buffers.v[i] : NULL;
}
uint32_t ggufmap_fit_n_devices(const ggufmap_fit *fit) { return fit->run.n_devices; }
const ggufmap_fit_device *ggufmap_fit_device_at(const ggufmap_fit *fit, uint32_t i) {
    return i < fit->run.n_devices ? &fit->run.devices[i] : NULL;
}

uint32_t ggufmap_fit_limited_device(const ggufmap_fit *fit) { return fit->run.n_devices > 1 ? 1 : 0; }

uint32_t ggufmap_fit_n_checks(const ggufmap_fit *fit) { return fit->n_checks; }
const ggufmap_fit_check *ggufmap_fit_check_at(const ggufmap_fit *fit, uint32_t i) {
    return i < fit->n_checks ? &fit->checks[i] : NULL;
}

bool ggufmap_fit_fits(const ggufmap_fit *fit, bool planned) {
    if (ggufmap_fit_refusal(fit, NULL)) return false;
    for (uint32_t i = 0; i < fit->n_checks; i++)
        if ((planned ? fit->checks[i].total_planned : fit->checks[i].total) > fit->checks[i].limit) return false;
    return true;
}

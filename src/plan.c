/*
 * plan.c - llama.cpp's buffers for a placement, and the planners.
 *
 * Data structure.  A plan is an array of buffers in llama.cpp's order, plus
 * two pools (foreign tensors, ranges) that the buffers point into.  Building
 * it is one pass over the instances (to know which contexts hold each
 * tensor), then, per mapped buffer, one walk over the tensors of its file
 * that lie inside its span (tensors of a file are stored in offset order).
 *
 * The planners work on "runs": maximal stretches of a buffer's own tensors
 * with nothing but alignment padding between them.  A foreign tensor ends a
 * run.  Each planner decides which gaps between runs to bridge.
 *
 * The tight planner and why it is optimal.  Let the runs be r_0 .. r_{k-1} in
 * file order and P the page size.  A range [f, l) costs res(f, l) =
 * ceil_P(l) - floor_P(f) bytes (P = 1: exactly l - f) plus COST.  If runs
 * i..j are mapped as one range, its bytes telescope:
 *     ceil(l_j) - floor(f_i) = sum_{m=i..j} res(r_m) + sum_{m=i..j-1} d_m,
 *     where d_m = floor(f_{m+1}) - ceil(l_m)   (negative when r_m and
 *                                              r_{m+1} share a page).
 * So for any set B of bridged gaps the total cost is
 *     F(B) = sum_m res(r_m) + COST * k + sum_{m in B} (d_m - COST),
 * a constant plus a sum of independent weights w_m = d_m - COST, and the
 * range count is k - |B|.  Minimising F subject to k - |B| <= MAX means
 * choosing at least k - MAX gaps with the least total weight: take every
 * gap with w_m <= 0 (each lowers F, ties taken to save a buffer) and, if
 * fewer than k - MAX were taken, the smallest remaining weights.  Exchange
 * argument: an optimal B* that misses a gap g with w_g <= 0 can add it
 * without raising F; one that takes a gap h with w_h > 0 while a gap g with
 * w_g < w_h is free (and |B*| > k - MAX or g swappable) can swap h for g or
 * drop h, lowering F.  Hence the greedy set is optimal.  tests/unit/
 * test_plan.c checks it against brute force over every subset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "device.h"
#include "ggufmap/plan.h"
#include "internal.h"

#define MIB (1024ull * 1024)

struct ggufmap_plan {
    const ggufmap_placement *placement;
    ggufmap_plan_opts opts;
    ggufmap_buffer *buffers;
    uint32_t n_buffers;
    ggufmap_foreign *foreign_pool;
    ggufmap_range *range_pool;
    char failure[512]; /* why llama.cpp would abort loading, or "" */
    uint32_t *mask;  /* per model tensor: the contexts holding it */
    int32_t *owner;  /* per model tensor: the context of its first instance */
};

/* ------------------------------------------------------------------------ */
/* Planner parameters                                                        */
/* ------------------------------------------------------------------------ */

/* A size that ends at n bytes into s. */
static int parse_bytes(const char *s, size_t n, uint64_t *out) {
    char buf[64];
    if (n == 0 || n >= sizeof buf) return GGUFMAP_EINVAL;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return ggufmap_parse_size(buf, out);
}

int ggufmap_planner_parse(const char *text, ggufmap_planner *out) {
    const char *colon = strchr(text, ':');
    size_t n = colon ? (size_t)(colon - text) : strlen(text);
    ggufmap_planner p = {GGUFMAP_PLANNER_SPAN, 0, 0, 0};
    if (n == 4 && strncmp(text, "span", 4) == 0) p.kind = GGUFMAP_PLANNER_SPAN;
    else if (n == 8 && strncmp(text, "coalesce", 8) == 0) p = (ggufmap_planner){GGUFMAP_PLANNER_COALESCE, 64 * MIB, 0, 0};
    else if (n == 4 && strncmp(text, "runs", 4) == 0) p = (ggufmap_planner){GGUFMAP_PLANNER_RUNS, 32 * MIB, 0, 64};
    else if (n == 5 && strncmp(text, "tight", 5) == 0) p = (ggufmap_planner){GGUFMAP_PLANNER_TIGHT, 0, 0, 64};
    else return GGUFMAP_EINVAL;
    const char *a = colon ? colon + 1 : NULL;
    if (a) {
        if (p.kind == GGUFMAP_PLANNER_SPAN) return GGUFMAP_EINVAL;
        const char *b = strchr(a, ':');
        size_t an = b ? (size_t)(b - a) : strlen(a);
        uint64_t v;
        if (parse_bytes(a, an, &v)) return GGUFMAP_EINVAL;
        if (p.kind == GGUFMAP_PLANNER_TIGHT) p.cost = v; else p.gap = v;
        if (b) {
            if (p.kind == GGUFMAP_PLANNER_COALESCE) return GGUFMAP_EINVAL;
            char *end;
            unsigned long m = strtoul(b + 1, &end, 10);
            if (end == b + 1 || *end || m == 0 || m > 1000000) return GGUFMAP_EINVAL;
            p.max_ranges = (uint32_t)m;
        }
    }
    *out = p;
    return GGUFMAP_OK;
}

/* "32M", "16K" or plain bytes: the shortest exact spelling. */
static const char *size_text(uint64_t v, char *buf, size_t cap) {
    if (v && v % MIB == 0)
        snprintf(buf, cap, "%lluM", (unsigned long long)(v / MIB));
    else if (v && v % 1024 == 0)
        snprintf(buf, cap, "%lluK", (unsigned long long)(v / 1024));
    else
        snprintf(buf, cap, "%llu", (unsigned long long)v);
    return buf;
}

const char *ggufmap_planner_format(const ggufmap_planner *p, char *buf, size_t cap) {
    char v[32];
    switch (p->kind) {
    case GGUFMAP_PLANNER_COALESCE: snprintf(buf, cap, "coalesce:%s", size_text(p->gap, v, sizeof v)); break;
    case GGUFMAP_PLANNER_RUNS: snprintf(buf, cap, "runs:%s:%u", size_text(p->gap, v, sizeof v), p->max_ranges); break;
    case GGUFMAP_PLANNER_TIGHT: snprintf(buf, cap, "tight:%s:%u", size_text(p->cost, v, sizeof v), p->max_ranges); break;
    default: snprintf(buf, cap, "span"); break;
    }
    return buf;
}

void ggufmap_plan_opts_init(ggufmap_plan_opts *o) {
    memset(o, 0, sizeof *o);
    ggufmap_planner_parse("tight", &o->planner);
    o->page = 0; /* the device's (ggufmap_plan_build resolves it) */
}

/* ------------------------------------------------------------------------ */
/* Defaults per device                                                       */
/* ------------------------------------------------------------------------ */

/* Every default a device implies comes from its row (device.c): the CPU
 * rules of the machine it comes in, the page its buffers are wired in.
 * The same values ggufmap_placement_build and ggufmap_plan_build resolve
 * from GGUFMAP_CPU_HOST and page 0, so a caller gets the same rules either
 * way (tests/unit/test_placement.c checks it). */
void ggufmap_preset(ggufmap_device device, ggufmap_placement_opts *placement, ggufmap_plan_opts *plan) {
    if (placement) {
        ggufmap_placement_opts_init(placement);
        placement->device = device;
        placement->cpu = gm_backend(device)->cpu;
    }
    if (plan) {
        ggufmap_plan_opts_init(plan);
        plan->page = gm_backend(device)->page;
    }
}

/* ------------------------------------------------------------------------ */
/* Page arithmetic and Metal views                                           */
/* ------------------------------------------------------------------------ */

uint64_t ggufmap_ranges_resident(const ggufmap_range *r, uint32_t n, uint64_t page) {
    uint64_t sum = 0;
    if (page == 0) page = 1;
    for (uint32_t i = 0; i < n; i++) sum += gm_ceil_to(r[i].last, page) - gm_floor_to(r[i].first, page);
    return sum;
}

/* ggml_metal_buffer_map (ggml-metal-device.m:2171-2264), the arithmetic only. */
uint32_t ggufmap_metal_views(uint64_t first, uint64_t last, uint64_t page, uint64_t max_buffer, uint64_t max_tensor,
                             uint64_t *bytes) {
    if (page == 0) page = 1;
    uint64_t size = last - first + first % page; /* pointer aligned down, size grown */
    uint64_t size_aligned = gm_ceil_to(size, page);
    if (max_buffer == 0 || size_aligned <= max_buffer) {
        *bytes = size_aligned;
        return 1;
    }
    uint64_t overlap = ((max_tensor + page - 1) / page + 1) * page;
    if (overlap >= max_buffer) { /* a tensor larger than a view: Metal would fail; count one view */
        *bytes = size_aligned;
        return 1;
    }
    uint64_t step = max_buffer - overlap, sum = 0;
    uint32_t n = 0;
    for (uint64_t i = 0; i < size; i += step) {
        sum += i + max_buffer <= size ? max_buffer : size_aligned - i;
        n++;
    }
    *bytes = sum;
    return n;
}

/* ------------------------------------------------------------------------ */
/* Planners                                                                  */
/* ------------------------------------------------------------------------ */

/* Merges runs across every gap for which bridge[i] is set (gap i lies
 * between run i and run i + 1); returns the number of ranges. */
static uint32_t merge(const ggufmap_range *runs, uint32_t n, const bool *bridge, ggufmap_range *out) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m > 0 && bridge[i - 1])
            out[m - 1].last = runs[i].last;
        else
            out[m++] = runs[i];
    }
    return m;
}

typedef struct gap_weight {
    int64_t weight;
    uint32_t index;
} gap_weight;

static int by_weight(const void *a, const void *b) {
    const gap_weight *x = a, *y = b;
    if (x->weight != y->weight) return x->weight < y->weight ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

uint32_t ggufmap_plan_ranges(const ggufmap_planner *pl, uint64_t page, const ggufmap_range *runs, uint32_t n,
                             ggufmap_range *out) {
    if (n == 0) return 0;
    if (page == 0) page = 1;
    if (pl->kind == GGUFMAP_PLANNER_SPAN) {
        out[0].first = runs[0].first;
        out[0].last = runs[n - 1].last;
        return 1;
    }
    bool *bridge = calloc(n, sizeof *bridge);
    if (!bridge) { /* out of memory: the span is always a valid plan */
        out[0].first = runs[0].first;
        out[0].last = runs[n - 1].last;
        return 1;
    }
    uint32_t m;
    if (pl->kind == GGUFMAP_PLANNER_COALESCE || pl->kind == GGUFMAP_PLANNER_RUNS) {
        for (uint32_t i = 0; i + 1 < n; i++) {
            uint64_t gap = runs[i + 1].first - runs[i].last;
            bridge[i] = pl->kind == GGUFMAP_PLANNER_COALESCE ? gap <= pl->gap : gap < pl->gap;
        }
        m = merge(runs, n, bridge, out);
        if (pl->kind == GGUFMAP_PLANNER_RUNS && pl->max_ranges && m > pl->max_ranges) {
            out[0].first = runs[0].first;
            out[0].last = runs[n - 1].last;
            m = 1;
        }
    } else {
        /* tight: see the proof at the top of this file. */
        gap_weight *w = malloc((n > 1 ? n - 1 : 1) * sizeof *w);
        uint32_t taken = 0;
        for (uint32_t i = 0; w && i + 1 < n; i++) {
            int64_t d = (int64_t)gm_floor_to(runs[i + 1].first, page) - (int64_t)gm_ceil_to(runs[i].last, page);
            w[i].weight = d - (int64_t)pl->cost;
            w[i].index = i;
            if (w[i].weight <= 0) {
                bridge[i] = true;
                taken++;
            }
        }
        uint32_t max = pl->max_ranges ? pl->max_ranges : n;
        if (w && n - taken > max) {
            qsort(w, n - 1, sizeof *w, by_weight);
            for (uint32_t k = 0; k + 1 < n && n - taken > max; k++)
                if (!bridge[w[k].index]) {
                    bridge[w[k].index] = true;
                    taken++;
                }
        }
        if (!w) memset(bridge, 1, n * sizeof *bridge);
        free(w);
        m = merge(runs, n, bridge, out);
    }
    free(bridge);
    return m;
}

/* ------------------------------------------------------------------------ */
/* Building the buffers                                                      */
/* ------------------------------------------------------------------------ */

static int by_foreign_size(const void *a, const void *b) {
    const ggufmap_foreign *x = a, *y = b;
    if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
    return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}

/* Index of the first tensor of shard s (model order is shard, then offset). */
static int64_t shard_start(const ggufmap_model *m, uint32_t s) {
    int64_t lo = 0, hi = ggufmap_model_n_tensors(m);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ggufmap_model_tensor(m, mid)->shard < s) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* What building a plan works with: the plan being filled, and per tensor
 * and per (context, shard) cell the facts the buffers are made from.  Owned
 * here and freed in one place (build_free), except mask and owner, which
 * the plan keeps. */
typedef struct build {
    ggufmap_plan *p;
    const ggufmap_model *m;
    int64_t nt;                 /* tensors of the model */
    uint32_t nc, ns;            /* contexts, shards */
    uint32_t *mask;             /* per tensor: a bit per context holding it */
    int32_t *owner;             /* per tensor: the context of its first instance */
    ggufmap_buffer *cell;       /* per (context, shard): first, last, count, own bytes */
    ggufmap_range *runs;        /* scratch: the runs of one buffer */
    size_t used_foreign, used_ranges;
} build;

static void build_free(build *w) {
    free(w->mask);
    free(w->owner);
    free(w->cell);
    free(w->runs);
}

/* Per tensor, the contexts holding it and its owner; per cell, the span,
 * the count and the own bytes of its tensors. */
static void index_instances(build *w, const ggufmap_placement *pl) {
    for (int64_t i = 0; i < w->nt; i++) w->owner[i] = -1;
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_tensor *t = ggufmap_model_tensor(w->m, in->tensor);
        bool first_here = !(w->mask[in->tensor] & (1u << in->context));
        w->mask[in->tensor] |= 1u << in->context;
        if (w->owner[in->tensor] < 0) w->owner[in->tensor] = (int32_t)in->context;
        ggufmap_buffer *c = &w->cell[(size_t)in->context * w->ns + t->shard];
        if (c->n_tensors == 0 || t->offset < c->first) c->first = t->offset;
        if (t->offset + t->size > c->last) c->last = t->offset + t->size;
        c->n_tensors++;
        if (first_here) c->own_bytes += t->size;
    }
}

/* llama.cpp's buffers: one per allocated context that holds a tensor, one
 * per (mapped context, shard) that does. */
static uint32_t count_buffers(const build *w, const ggufmap_placement *pl) {
    uint32_t nb = 0;
    for (uint32_t c = 0; c < w->nc; c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
        if (!ctx->mapped) {
            nb += ctx->n_instances > 0;
            continue;
        }
        for (uint32_t s = 0; s < w->ns; s++) nb += w->cell[(size_t)c * w->ns + s].n_tensors > 0;
    }
    return nb;
}

static void add_allocated_buffer(build *w, uint32_t c, const ggufmap_context *ctx) {
    ggufmap_buffer *b = &w->p->buffers[w->p->n_buffers++];
    snprintf(b->name, sizeof b->name, "%s", ctx->buffer_name);
    b->context = c;
    b->size = ctx->alloc_size;
    b->max_tensor = ctx->max_tensor;
    b->n_tensors = ctx->n_instances;
    for (uint32_t s = 0; s < w->ns; s++) b->own_bytes += w->cell[(size_t)c * w->ns + s].own_bytes;
}

/* Walks the tensors of b's shard inside its span: the foreign ones go to
 * the foreign pool (largest first), the own ones make runs.  Returns the
 * number of runs (in w->runs). */
static uint32_t walk_span(build *w, ggufmap_buffer *b) {
    const uint32_t c = b->context;
    ggufmap_foreign *fg = w->p->foreign_pool + w->used_foreign;
    uint32_t n_runs = 0;
    bool run_open = false;
    for (int64_t i = shard_start(w->m, b->shard); i < w->nt; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(w->m, i);
        if (t->shard != b->shard || t->offset >= b->last) break;
        if (t->offset + t->size <= b->first) continue;
        if (w->mask[i] & (1u << c)) {
            if (run_open) w->runs[n_runs - 1].last = t->offset + t->size;
            else w->runs[n_runs++] = (ggufmap_range){t->offset, t->offset + t->size};
            run_open = true;
        } else if (t->size > 0) {
            fg[b->n_foreign++] = (ggufmap_foreign){.tensor = i, .bytes = t->size, .owner = w->owner[i]};
            b->foreign_bytes += t->size;
            run_open = false;
        }
    }
    qsort(fg, b->n_foreign, sizeof *fg, by_foreign_size);
    b->foreign = fg;
    w->used_foreign += b->n_foreign;
    return n_runs;
}

/* The planner's ranges over the runs, their bytes and Metal views, and the
 * span's. */
static void plan_ranges(build *w, ggufmap_buffer *b, uint32_t n_runs) {
    const ggufmap_plan_opts *o = &w->p->opts;
    ggufmap_range *rg = w->p->range_pool + w->used_ranges;
    b->n_ranges = ggufmap_plan_ranges(&o->planner, o->page, w->runs, n_runs, rg);
    b->ranges = rg;
    w->used_ranges += b->n_ranges;
    for (uint32_t k = 0; k < b->n_ranges; k++) {
        uint64_t vb;
        b->ranges_bytes += rg[k].last - rg[k].first;
        b->ranges_views += ggufmap_metal_views(rg[k].first, rg[k].last, o->page, o->max_buffer, b->max_tensor, &vb);
        b->ranges_resident += vb;
    }
    b->span_views = ggufmap_metal_views(b->first, b->last, o->page, o->max_buffer, b->max_tensor, &b->span_resident);
}

static void add_mapped_buffer(build *w, uint32_t c, uint32_t s, const ggufmap_context *ctx) {
    ggufmap_buffer *b = &w->p->buffers[w->p->n_buffers++];
    *b = w->cell[(size_t)c * w->ns + s];
    snprintf(b->name, sizeof b->name, "%s", ctx->buffer_name);
    b->context = c;
    b->mapped = true;
    b->shard = s;
    b->size = b->last - b->first;
    b->max_tensor = ctx->max_tensor;
    plan_ranges(w, b, walk_span(w, b));
}

/* ggml_backend_cpu_buffer_from_ptr asserts a 32-byte aligned pointer: a
 * CPU span starting off 32 (general.alignment < 32) aborts the load. */
static void check_cpu_alignment(ggufmap_plan *p, const ggufmap_placement *pl, const ggufmap_model *m) {
    for (uint32_t i = 0; i < p->n_buffers && !p->failure[0]; i++) {
        const ggufmap_buffer *b = &p->buffers[i];
        if (b->mapped && b->first % 32 != 0 && ggufmap_placement_context(pl, b->context)->kind == GGUFMAP_BUFT_CPU)
            snprintf(p->failure, sizeof p->failure,
                     "%s: llama.cpp aborts the load: its %s buffer would start at offset %llu, not a multiple of 32 "
                     "(ggml_backend_cpu_buffer_from_ptr asserts an aligned pointer; general.alignment is %u)",
                     ggufmap_source_path(ggufmap_model_shard(m, b->shard)), b->name, (unsigned long long)b->first,
                     ggufmap_source_alignment(ggufmap_model_shard(m, b->shard)));
    }
}

/* The buffers and the pools they point into: a tensor is foreign at most
 * once per buffer; ranges <= runs <= tensors + 1 per buffer. */
static bool alloc_buffers(build *w, uint32_t nb) {
    ggufmap_plan *p = w->p;
    p->buffers = calloc(nb ? nb : 1, sizeof *p->buffers);
    p->foreign_pool = malloc(((size_t)w->nt * nb + 1) * sizeof *p->foreign_pool);
    p->range_pool = malloc(((size_t)(w->nt + 1) * nb + 1) * sizeof *p->range_pool);
    w->runs = malloc(((size_t)w->nt + 1) * sizeof *w->runs);
    return p->buffers && p->foreign_pool && p->range_pool && w->runs;
}

int ggufmap_plan_build(const ggufmap_placement *pl, const ggufmap_plan_opts *opts, ggufmap_plan **out,
                       ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    build w = {.m = ggufmap_placement_model(pl), .nc = ggufmap_placement_n_contexts(pl)};
    w.nt = ggufmap_model_n_tensors(w.m);
    w.ns = ggufmap_model_n_shards(w.m);
    size_t n = w.nt ? (size_t)w.nt : 1, cells = (size_t)w.nc * w.ns;
    w.p = calloc(1, sizeof *w.p);
    w.mask = calloc(n, sizeof *w.mask);
    w.owner = malloc(n * sizeof *w.owner);
    w.cell = calloc(cells ? cells : 1, sizeof *w.cell);
    int rc = w.p && w.mask && w.owner && w.cell ? GGUFMAP_OK : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    uint32_t nb = 0;
    if (!rc) {
        w.p->placement = pl;
        w.p->opts = *opts;
        w.p->opts.page = gm_device_page(ggufmap_placement_options(pl)->device, w.p->opts.page);
        index_instances(&w, pl);
        nb = count_buffers(&w, pl);
        if (!alloc_buffers(&w, nb))
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory for %u buffers of %lld tensors", nb, (long long)w.nt);
    }
    for (uint32_t c = 0; !rc && c < w.nc; c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
        if (!ctx->mapped && ctx->n_instances > 0) add_allocated_buffer(&w, c, ctx);
        for (uint32_t s = 0; ctx->mapped && s < w.ns; s++)
            if (w.cell[(size_t)c * w.ns + s].n_tensors > 0) add_mapped_buffer(&w, c, s, ctx);
    }
    if (rc) {
        ggufmap_plan_free(w.p);
        build_free(&w);
        return rc;
    }
    check_cpu_alignment(w.p, pl, w.m);
    w.p->mask = w.mask; /* the plan keeps these two */
    w.p->owner = w.owner;
    w.mask = NULL;
    w.owner = NULL;
    build_free(&w);
    *out = w.p;
    return GGUFMAP_OK;
}

void ggufmap_plan_free(ggufmap_plan *p) {
    if (!p) return;
    free(p->buffers);
    free(p->foreign_pool);
    free(p->range_pool);
    free(p->mask);
    free(p->owner);
    free(p);
}

const char *ggufmap_plan_failure(const ggufmap_plan *p) { return p->failure[0] ? p->failure : NULL; }

uint32_t ggufmap_plan_tensor_contexts(const ggufmap_plan *p, int64_t i) {
    return i >= 0 && i < ggufmap_model_n_tensors(ggufmap_placement_model(p->placement)) ? p->mask[i] : 0;
}

int32_t ggufmap_plan_tensor_owner(const ggufmap_plan *p, int64_t i) {
    return i >= 0 && i < ggufmap_model_n_tensors(ggufmap_placement_model(p->placement)) ? p->owner[i] : -1;
}

void ggufmap_plan_working_set(const ggufmap_plan *p, uint64_t *llama_bytes, uint64_t *planned_bytes) {
    const ggufmap_placement *pl = p->placement;
    bool gpu_only = false;
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++) gpu_only |= ggufmap_placement_context(pl, c)->gpu;
    *llama_bytes = *planned_bytes = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const ggufmap_buffer *b = &p->buffers[i];
        if (gpu_only && !ggufmap_placement_context(pl, b->context)->gpu) continue;
        *llama_bytes += b->mapped ? b->span_resident : b->size;
        *planned_bytes += b->mapped ? b->ranges_resident : b->size;
    }
}

void ggufmap_plan_gpu_working_set(const ggufmap_plan *p, uint32_t gpu, uint64_t *llama_bytes, uint64_t *planned_bytes) {
    const ggufmap_placement *pl = p->placement;
    *llama_bytes = *planned_bytes = 0;
    if (gpu >= ggufmap_placement_n_gpus(pl)) return;
    const uint32_t ordinal = ggufmap_placement_gpu(pl, gpu);
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const ggufmap_buffer *b = &p->buffers[i];
        const ggufmap_context *c = ggufmap_placement_context(pl, b->context);
        if (!c->gpu || c->ordinal != ordinal) continue;
        *llama_bytes += b->mapped ? b->span_resident : b->size;
        *planned_bytes += b->mapped ? b->ranges_resident : b->size;
    }
}

uint64_t ggufmap_gpu_limit(uint64_t limit, const uint64_t *gpu_limits, uint32_t ordinal) {
    return gpu_limits && ordinal < GGUFMAP_MAX_GPUS && gpu_limits[ordinal] ? gpu_limits[ordinal] : limit;
}

bool ggufmap_plan_fits_limits(const ggufmap_plan *p, const ggufmap_plan *mtp, uint64_t limit, const uint64_t *gpu_limits,
                              bool planned) {
    const ggufmap_placement *pl = p->placement;
    const uint32_t n = ggufmap_placement_n_gpus(pl);
    uint64_t l, q, ml = 0, mq = 0;
    if (n <= 1) { /* as ggufmap_plan_working_set counts: everything when no buffer is the GPU's */
        const uint32_t ordinal = n ? ggufmap_placement_gpu(pl, 0) : 0;
        if (n) limit = ggufmap_gpu_limit(limit, gpu_limits, ordinal);
        if (!limit) return true;
        ggufmap_plan_working_set(p, &l, &q);
        if (mtp) ggufmap_plan_working_set(mtp, &ml, &mq);
        return (planned ? q + mq : l + ml) <= limit;
    }
    for (uint32_t g = 0; g < n; g++) {
        const uint32_t ordinal = ggufmap_placement_gpu(pl, g);
        const uint64_t lim = ggufmap_gpu_limit(limit, gpu_limits, ordinal);
        if (!lim) continue;
        ggufmap_plan_gpu_working_set(p, g, &l, &q);
        if (mtp) ggufmap_plan_gpu_working_set(mtp, g, &ml, &mq);
        if ((planned ? q + mq : l + ml) > lim) return false;
    }
    return true;
}

void ggufmap_plan_cpu_side(const ggufmap_plan *p, uint64_t *llama_bytes, uint64_t *planned_bytes) {
    uint64_t all_llama = 0, all_planned = 0, gpu_llama, gpu_planned;
    for (uint32_t i = 0; i < p->n_buffers; i++) {
        const ggufmap_buffer *b = &p->buffers[i];
        all_llama += b->mapped ? b->span_resident : b->size;
        all_planned += b->mapped ? b->ranges_resident : b->size;
    }
    ggufmap_plan_working_set(p, &gpu_llama, &gpu_planned);
    *llama_bytes = all_llama - gpu_llama;
    *planned_bytes = all_planned - gpu_planned;
}

/* An interval list per shard: ranges page-aligned, then merged. */
typedef struct span {
    uint32_t shard;
    uint64_t first, last;
} span;

static int by_shard_first(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static uint64_t union_bytes(span *v, size_t n) {
    uint64_t sum = 0;
    qsort(v, n, sizeof *v, by_shard_first);
    for (size_t i = 0; i < n;) {
        uint64_t first = v[i].first, last = v[i].last;
        size_t j = i + 1;
        for (; j < n && v[j].shard == v[i].shard && v[j].first <= last; j++)
            if (v[j].last > last) last = v[j].last;
        sum += last - first;
        i = j;
    }
    return sum;
}

/* Whether buffer b's memory is the host's RAM under the device's model. */
static bool in_ram(const ggufmap_plan *p, const ggufmap_buffer *b) {
    const ggufmap_placement *pl = p->placement;
    return gm_backend(ggufmap_placement_options(pl)->device)->unified || !ggufmap_placement_context(pl, b->context)->gpu;
}

void ggufmap_plan_resident(const ggufmap_plan *p, uint64_t *llama_bytes, uint64_t *planned_bytes) {
    const ggufmap_placement *pl = p->placement;
    const uint64_t page = p->opts.page ? p->opts.page : 1;
    size_t n_span = 0, n_range = 0;
    for (uint32_t i = 0; i < p->n_buffers; i++) n_range += p->buffers[i].n_ranges, n_span++;
    span *spans = malloc((n_span + 1) * sizeof *spans), *ranges = malloc((n_range + 1) * sizeof *ranges);
    uint64_t alloc = 0;
    size_t ns = 0, nr = 0;
    for (uint32_t i = 0; spans && ranges && i < p->n_buffers; i++) {
        const ggufmap_buffer *b = &p->buffers[i];
        if (!in_ram(p, b) || ggufmap_placement_context(pl, b->context)->lazy) continue;
        if (!b->mapped) {
            alloc += b->size;
            continue;
        }
        spans[ns++] = (span){b->shard, gm_floor_to(b->first, page), gm_ceil_to(b->last, page)};
        for (uint32_t k = 0; k < b->n_ranges; k++)
            ranges[nr++] = (span){b->shard, gm_floor_to(b->ranges[k].first, page), gm_ceil_to(b->ranges[k].last, page)};
    }
    if (!spans || !ranges) { /* out of memory: every span whole, an upper bound */
        uint64_t l = 0, q = 0;
        ggufmap_plan_working_set(p, &l, &q);
        ggufmap_plan_cpu_side(p, llama_bytes, planned_bytes);
        *llama_bytes += l;
        *planned_bytes += q;
    } else {
        *llama_bytes = alloc + union_bytes(spans, ns);
        *planned_bytes = alloc + union_bytes(ranges, nr);
    }
    free(spans);
    free(ranges);
}

uint32_t ggufmap_plan_n_buffers(const ggufmap_plan *p) { return p->n_buffers; }
const ggufmap_buffer *ggufmap_plan_buffer(const ggufmap_plan *p, uint32_t i) {
    return i < p->n_buffers ? &p->buffers[i] : NULL;
}
const ggufmap_placement *ggufmap_plan_placement(const ggufmap_plan *p) { return p->placement; }
const ggufmap_plan_opts *ggufmap_plan_options(const ggufmap_plan *p) { return &p->opts; }

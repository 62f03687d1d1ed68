/*
 * load.c - mapping a plan: the files, one backend buffer per planned range,
 * the range-aware buffer map, and the release of every unplanned page.
 *
 * Data structures.  The buffer map is one array of entries sorted by
 * (context, shard, first); the ranges of one (context, shard) never overlap,
 * so the entry that may contain an offset is the last one that starts at or
 * before it, found by binary search.  A mapped model keeps per shard its
 * whole-file mapping and, once built, the union of its ranges rounded out to
 * pages ("keep" intervals, sorted and disjoint): release unmaps the
 * complement, unmap later unmaps only the keep intervals (after a release
 * the holes may belong to someone else's mapping).
 *
 * Page arithmetic: a range [first, last) touches the pages
 * [floor(first), ceil(last)); the file mapping is page-aligned at offset 0,
 * so file offsets and addresses round alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ggufmap/load.h"
#include "ggufmap/model.h"
#include "ggufmap/placement.h"
#include "device.h"
#include "internal.h"
#include "load_internal.h"

/* ------------------------------------------------------------------------ */
/* The buffer map                                                            */
/* ------------------------------------------------------------------------ */

struct ggufmap_bufmap {
    ggufmap_bufmap_entry *v;
    size_t n, cap;
};

int ggufmap_bufmap_new(ggufmap_bufmap **out, ggufmap_error *err) {
    *out = calloc(1, sizeof **out);
    return *out ? GGUFMAP_OK : gm_fail(err, GGUFMAP_ENOMEM, "out of memory for a buffer map");
}

void ggufmap_bufmap_free(ggufmap_bufmap *map) {
    if (!map) return;
    free(map->v);
    free(map);
}

size_t ggufmap_bufmap_size(const ggufmap_bufmap *map) { return map->n; }

const ggufmap_bufmap_entry *ggufmap_bufmap_at(const ggufmap_bufmap *map, size_t i) {
    return i < map->n ? &map->v[i] : NULL;
}

/* -1, 0, 1 as (context, shard, first) of e orders before, equal to, after the key. */
static int key_cmp(const ggufmap_bufmap_entry *e, uint32_t context, uint32_t shard, uint64_t first) {
    if (e->context != context) return e->context < context ? -1 : 1;
    if (e->shard != shard) return e->shard < shard ? -1 : 1;
    if (e->first != first) return e->first < first ? -1 : 1;
    return 0;
}

/* Number of entries ordered at or before the key (the upper bound). */
static size_t upper_bound(const ggufmap_bufmap *map, uint32_t context, uint32_t shard, uint64_t first) {
    size_t lo = 0, hi = map->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(&map->v[mid], context, shard, first) <= 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool same_cell(const ggufmap_bufmap_entry *e, uint32_t context, uint32_t shard) {
    return e->context == context && e->shard == shard;
}

/* Messages number shards from 1, as the file names do (docs/cli.md); the
 * API's shard arguments are 0-based indexes. */
int ggufmap_bufmap_add(ggufmap_bufmap *map, const ggufmap_bufmap_entry *e, ggufmap_error *err) {
    if (e->first >= e->last)
        return gm_fail(err, GGUFMAP_EINVAL, "context %u, shard %u: empty range [%llu, %llu)", e->context, e->shard + 1,
                       (unsigned long long)e->first, (unsigned long long)e->last);
    size_t at = upper_bound(map, e->context, e->shard, e->first);
    const ggufmap_bufmap_entry *prev = at > 0 ? &map->v[at - 1] : NULL;
    const ggufmap_bufmap_entry *next = at < map->n ? &map->v[at] : NULL;
    if (prev && same_cell(prev, e->context, e->shard) && prev->last > e->first)
        return gm_fail(err, GGUFMAP_EINVAL, "context %u, shard %u: range [%llu, %llu) overlaps [%llu, %llu)",
                       e->context, e->shard + 1, (unsigned long long)e->first, (unsigned long long)e->last,
                       (unsigned long long)prev->first, (unsigned long long)prev->last);
    if (next && same_cell(next, e->context, e->shard) && next->first < e->last)
        return gm_fail(err, GGUFMAP_EINVAL, "context %u, shard %u: range [%llu, %llu) overlaps [%llu, %llu)",
                       e->context, e->shard + 1, (unsigned long long)e->first, (unsigned long long)e->last,
                       (unsigned long long)next->first, (unsigned long long)next->last);
    if (map->n == map->cap) {
        size_t cap = map->cap ? map->cap * 2 : 16;
        ggufmap_bufmap_entry *v = realloc(map->v, cap * sizeof *v);
        if (!v) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory for %zu buffer map entries", cap);
        map->v = v;
        map->cap = cap;
    }
    memmove(&map->v[at + 1], &map->v[at], (map->n - at) * sizeof *map->v);
    map->v[at] = *e;
    map->n++;
    return GGUFMAP_OK;
}

int ggufmap_bufmap_find(const ggufmap_bufmap *map, uint32_t context, uint32_t shard, uint64_t offset, uint64_t size,
                        ggufmap_bufmap_entry *out, ggufmap_error *err) {
    if (size > UINT64_MAX - offset)
        return gm_fail(err, GGUFMAP_EINVAL, "context %u, shard %u: offset %llu + size %llu overflows", context, shard + 1,
                       (unsigned long long)offset, (unsigned long long)size);
    uint64_t end = offset + size;
    size_t at = upper_bound(map, context, shard, offset);
    if (at > 0) {
        const ggufmap_bufmap_entry *e = &map->v[at - 1];
        if (same_cell(e, context, shard) && e->first <= offset && end <= e->last) {
            *out = *e;
            return GGUFMAP_OK;
        }
        if (same_cell(e, context, shard) && e->last > offset)
            return gm_fail(err, GGUFMAP_ENOTFOUND,
                           "context %u, shard %u: bytes [%llu, %llu) are only in part inside range [%llu, %llu)",
                           context, shard + 1, (unsigned long long)offset, (unsigned long long)end,
                           (unsigned long long)e->first, (unsigned long long)e->last);
    }
    if (at < map->n && same_cell(&map->v[at], context, shard) && map->v[at].first < end)
        return gm_fail(err, GGUFMAP_ENOTFOUND,
                       "context %u, shard %u: bytes [%llu, %llu) are only in part inside range [%llu, %llu)", context,
                       shard + 1, (unsigned long long)offset, (unsigned long long)end,
                       (unsigned long long)map->v[at].first, (unsigned long long)map->v[at].last);
    return gm_fail(err, GGUFMAP_ENOTFOUND, "context %u, shard %u: no range contains bytes [%llu, %llu)", context,
                   shard + 1, (unsigned long long)offset, (unsigned long long)end);
}

/* ------------------------------------------------------------------------ */
/* The mapped model                                                          */
/* ------------------------------------------------------------------------ */

typedef struct shard_map {
    uint8_t *base;          /* whole-file mapping, or NULL when not mapped */
    size_t len;             /* its length (the file size) */
    ggufmap_range *keep;    /* page-rounded union of the ranges, sorted, disjoint */
    uint32_t n_keep;
    bool released;
} shard_map;

/* A tensor of an allocated context, read into that context's buffer. */
typedef struct alloc_copy {
    uint32_t context, shard;
    uint64_t offset, size;      /* in the file */
    const uint8_t *addr;        /* in the context's buffer */
} alloc_copy;

struct ggufmap_mapped {
    const ggufmap_plan *plan;
    ggufmap_map_opts opts;
    ggufmap_backend host; /* the default cpu backend */
    shard_map *shards;
    uint32_t n_shards;
    ggufmap_mapped_range *ranges;
    uint32_t n_ranges;
    ggufmap_bufmap *bufmap;
    uint8_t **alloc_buffers;    /* per placement context: its allocated buffer, or NULL */
    uint32_t n_contexts;
    alloc_copy *copies;         /* sorted by (context, shard, offset) */
    size_t n_copies;
    ggufmap_mapped_stats stats;
};

void ggufmap_map_opts_init(ggufmap_map_opts *opts) {
    memset(opts, 0, sizeof *opts);
    opts->shard = -1;
}

bool ggufmap_buft_is_gpu(const char *buft) { return gm_buft_kind_of_name(buft) == GGUFMAP_BUFT_GPU; }


static int by_first(const void *a, const void *b) {
    const ggufmap_range *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* Sorts and merges page-rounded intervals in place; returns the count. */
static uint32_t union_pages(ggufmap_range *r, uint32_t n) {
    if (n == 0) return 0;
    qsort(r, n, sizeof *r, by_first);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (m > 0 && r[i].first <= r[m - 1].last) {
            if (r[i].last > r[m - 1].last) r[m - 1].last = r[i].last;
        } else {
            r[m++] = r[i];
        }
    }
    return m;
}

static uint64_t pages_bytes(const ggufmap_range *r, uint32_t n) {
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++) s += r[i].last - r[i].first;
    return s;
}

/* Bytes of the page-rounded union of the ranges selected by gpu (-1: all). */
static int union_bytes(const ggufmap_mapped *m, uint32_t shard, int gpu, uint64_t page, uint64_t *out) {
    ggufmap_range *tmp = malloc((m->n_ranges ? m->n_ranges : 1) * sizeof *tmp);
    if (!tmp) return -1;
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        const ggufmap_mapped_range *r = &m->ranges[i];
        if (r->shard != shard || (gpu >= 0 && r->gpu != (gpu != 0))) continue;
        tmp[n++] = (ggufmap_range){gm_floor_to(r->first, page), gm_ceil_to(r->last, page)};
    }
    n = union_pages(tmp, n);
    *out += pages_bytes(tmp, n);
    free(tmp);
    return 0;
}

/* Frees the buffers made so far and every mapping. */
static void teardown(ggufmap_mapped *m) {
    for (uint32_t i = m->n_ranges; i-- > 0;) {
        ggufmap_mapped_range *r = &m->ranges[i];
        if (r->handle && r->backend->free_buffer) r->backend->free_buffer(r->backend->ctx, r->handle);
        r->handle = NULL;
    }
    uint64_t page = m->stats.page;
    for (uint32_t s = 0; s < m->n_shards; s++) {
        shard_map *sm = &m->shards[s];
        if (!sm->base) continue;
        if (!sm->released) {
            munmap(sm->base, sm->len);
        } else {
            for (uint32_t k = 0; k < sm->n_keep; k++) {
                uint64_t last = sm->keep[k].last < gm_ceil_to(sm->len, page) ? sm->keep[k].last : gm_ceil_to(sm->len, page);
                if (last > sm->keep[k].first) munmap(sm->base + sm->keep[k].first, (size_t)(last - sm->keep[k].first));
            }
        }
        sm->base = NULL;
    }
}

void ggufmap_mapped_free(ggufmap_mapped *m) {
    if (!m) return;
    teardown(m);
    for (uint32_t c = 0; m->alloc_buffers && c < m->n_contexts; c++) free(m->alloc_buffers[c]);
    free(m->alloc_buffers);
    free(m->copies);
    for (uint32_t s = 0; s < m->n_shards; s++) free(m->shards[s].keep);
    free(m->shards);
    free(m->ranges);
    ggufmap_bufmap_free(m->bufmap);
    free(m);
}

static void *host_from_ptr(void *ctx, void *ptr, size_t size, size_t max_tensor_size, ggufmap_error *err) {
    (void)ctx;
    (void)size;
    (void)max_tensor_size;
    (void)err;
    return ptr; /* the handle is the pointer: never NULL inside a mapping */
}

void gm_backend_host_init(ggufmap_backend *b) {
    memset(b, 0, sizeof *b);
    b->name = "host";
    b->buffer_from_host_ptr = host_from_ptr;
    b->free_buffer = NULL;
}

/* Maps shard s of the model whole, read-only and shared, as llama_mmap does. */
static int map_shard(ggufmap_mapped *m, uint32_t s, ggufmap_error *err) {
    const ggufmap_source *src = ggufmap_model_shard(ggufmap_placement_model(ggufmap_plan_placement(m->plan)), s);
    uint64_t size = ggufmap_source_file_size(src);
    if (size == 0 || size > SIZE_MAX) return gm_fail(err, GGUFMAP_EIO, "%s: cannot map %llu bytes", ggufmap_source_path(src),
                                                     (unsigned long long)size);
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, ggufmap_source_fd(src), 0);
    if (p == MAP_FAILED)
        return gm_fail_errno(err, errno, "%s: mmap of %llu bytes", ggufmap_source_path(src), (unsigned long long)size);
    m->shards[s].base = p;
    m->shards[s].len = (size_t)size;
    m->stats.file_bytes += size;
    return GGUFMAP_OK;
}

/* Hands range [first, last) of plan buffer bi to its backend and records it. */
static int add_range(ggufmap_mapped *m, uint32_t bi, const ggufmap_buffer *b, uint64_t first, uint64_t last, bool gpu,
                     ggufmap_error *err) {
    const ggufmap_model *model = ggufmap_placement_model(ggufmap_plan_placement(m->plan));
    const char *path = ggufmap_source_path(ggufmap_model_shard(model, b->shard));
    shard_map *sm = &m->shards[b->shard];
    if (last > sm->len || first >= last)
        return gm_fail(err, GGUFMAP_EINVAL, "%s: buffer %s: range [%llu, %llu) is not inside the file (%zu bytes)", path,
                       b->name, (unsigned long long)first, (unsigned long long)last, sm->len);
    const ggufmap_backend *be = gpu ? m->opts.gpu : m->opts.cpu;
    ggufmap_mapped_range *r = &m->ranges[m->n_ranges];
    memset(r, 0, sizeof *r);
    r->plan_buffer = bi;
    r->context = b->context;
    r->shard = b->shard;
    r->first = first;
    r->last = last;
    r->addr = sm->base + first;
    r->backend = be;
    r->gpu = gpu;
    ggufmap_error berr;
    ggufmap_error_clear(&berr);
    uint64_t t0 = gm_now_ns();
    r->handle = be->buffer_from_host_ptr(be->ctx, sm->base + first, (size_t)(last - first), (size_t)b->max_tensor, &berr);
    r->ns = gm_now_ns() - t0;
    if (!r->handle)
        return gm_fail(err, GGUFMAP_EIO, "%s: offset %llu: %s backend refused buffer %s range [%llu, %llu) (%llu bytes): %s",
                       path, (unsigned long long)first, be->name, b->name, (unsigned long long)first,
                       (unsigned long long)last, (unsigned long long)(last - first),
                       berr.message[0] ? berr.message : "no reason given");
    m->n_ranges++;
    if (gpu) {
        m->stats.gpu_ns += r->ns;
        m->stats.n_gpu_ranges++;
        m->stats.gpu_resident += gm_ceil_to(last, m->stats.page) - gm_floor_to(first, m->stats.page);
    } else {
        m->stats.cpu_ns += r->ns;
    }
    m->stats.planned_bytes += last - first;
    ggufmap_bufmap_entry e = {b->context, b->shard, first, last, r->handle, (int64_t)(m->n_ranges - 1)};
    return ggufmap_bufmap_add(m->bufmap, &e, err);
}

/* ------------------------------------------------------------------------ */
/* Allocated contexts: their tensors read into buffers of their own          */
/* ------------------------------------------------------------------------ */

static int by_copy_key(const void *x, const void *y) {
    const alloc_copy *a = x, *b = y;
    if (a->context != b->context) return a->context < b->context ? -1 : 1;
    if (a->shard != b->shard) return a->shard < b->shard ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* The copy of (context, shard, offset, size), or NULL. */
static const alloc_copy *find_copy(const ggufmap_mapped *m, uint32_t context, uint32_t shard, uint64_t offset,
                                   uint64_t size) {
    alloc_copy key = {context, shard, offset, 0, NULL};
    const alloc_copy *c = m->n_copies ? bsearch(&key, m->copies, m->n_copies, sizeof key, by_copy_key) : NULL;
    return c && c->size == size ? c : NULL;
}

/* The instances of allocated contexts in mapped files: how many, and the
 * bytes each context's buffer needs (every tensor at its buft alignment). */
static size_t count_allocated(const ggufmap_mapped *m, uint64_t *need) {
    const ggufmap_placement *pl = ggufmap_plan_placement(m->plan);
    const ggufmap_model *model = ggufmap_placement_model(pl);
    size_t n = 0;
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, in->context);
        const ggufmap_tensor *t = ggufmap_model_tensor(model, in->tensor);
        if (ctx->mapped || !m->shards[t->shard].base) continue;
        need[in->context] += gm_pad(t->size, ctx->alignment ? ctx->alignment : 32);
        n++;
    }
    return n;
}

/* One buffer per allocated context, every tensor of it read in from its
 * file: what llama.cpp's load_all_data does for CPU_REPACK, --no-mmap and
 * GPU types that copy (ggml_backend_tensor_set from the file's bytes),
 * before any page is released.  Read with pread, so the mapping's pages
 * stay as they were. */
static int copy_allocated(ggufmap_mapped *m, ggufmap_error *err) {
    const ggufmap_placement *pl = ggufmap_plan_placement(m->plan);
    const ggufmap_model *model = ggufmap_placement_model(pl);
    uint64_t t0 = gm_now_ns();
    m->n_contexts = ggufmap_placement_n_contexts(pl);
    uint64_t *cursor = calloc(m->n_contexts + 1, sizeof *cursor);
    m->alloc_buffers = calloc(m->n_contexts + 1, sizeof *m->alloc_buffers);
    if (!cursor || !m->alloc_buffers) {
        free(cursor);
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    size_t n = count_allocated(m, cursor);
    m->copies = malloc((n ? n : 1) * sizeof *m->copies);
    int rc = m->copies ? GGUFMAP_OK : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t c = 0; !rc && c < m->n_contexts; c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
        size_t align = ctx->alignment > 64 ? ctx->alignment : 64;
        if (cursor[c] && posix_memalign((void **)&m->alloc_buffers[c], align, (size_t)cursor[c]) != 0)
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory for the %s buffer (%llu bytes)", ctx->buffer_name,
                         (unsigned long long)cursor[c]);
        m->stats.alloc_bytes += cursor[c];
        m->stats.n_alloc_buffers += cursor[c] != 0;
        cursor[c] = 0;
    }
    for (int64_t i = 0; !rc && i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, in->context);
        const ggufmap_tensor *t = ggufmap_model_tensor(model, in->tensor);
        if (ctx->mapped || !m->shards[t->shard].base) continue;
        uint8_t *dst = m->alloc_buffers[in->context] + cursor[in->context];
        const ggufmap_source *src = ggufmap_model_shard(model, t->shard);
        int sys = gm_pread_full(ggufmap_source_fd(src), dst, (size_t)t->size, t->offset);
        if (sys)
            rc = gm_fail_errno(err, sys == GM_SHORT_FILE ? EIO : sys, "%s: offset %llu: tensor '%.*s' (%s): read",
                               ggufmap_source_path(src), (unsigned long long)t->offset, (int)t->name_len, t->name,
                               ctx->buffer_name);
        m->copies[m->n_copies++] = (alloc_copy){in->context, t->shard, t->offset, t->size, dst};
        m->stats.copied_bytes += t->size;
        cursor[in->context] += gm_pad(t->size, ctx->alignment ? ctx->alignment : 32);
    }
    free(cursor);
    qsort(m->copies, m->n_copies, sizeof *m->copies, by_copy_key);
    m->stats.n_copied = (uint32_t)m->n_copies;
    m->stats.copy_ns = gm_now_ns() - t0;
    return rc;
}

/* The mapped model's records, before anything is mapped: options with
 * their defaults, the shards, room for every planned range, the map. */
static int mapped_new(const ggufmap_plan *plan, const ggufmap_map_opts *opts_in, ggufmap_mapped **out,
                      ggufmap_error *err) {
    const ggufmap_model *model = ggufmap_placement_model(ggufmap_plan_placement(plan));
    uint32_t ns = ggufmap_model_n_shards(model), nb = ggufmap_plan_n_buffers(plan);
    ggufmap_mapped *m = *out = calloc(1, sizeof *m);
    if (!m) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    m->plan = plan;
    if (opts_in) m->opts = *opts_in;
    else ggufmap_map_opts_init(&m->opts);
    gm_backend_host_init(&m->host);
    if (!m->opts.cpu) m->opts.cpu = &m->host;
    if (!m->opts.gpu) m->opts.gpu = m->opts.cpu;
    m->stats.page = gm_page_size();
    if (m->opts.shard >= 0 && (uint32_t)m->opts.shard >= ns)
        return gm_fail(err, GGUFMAP_EINVAL, "shard %d: the model has %u", m->opts.shard + 1, ns);
    uint64_t total_ranges = 0;
    for (uint32_t i = 0; i < nb; i++) total_ranges += ggufmap_plan_buffer(plan, i)->n_ranges;
    m->n_shards = ns;
    m->shards = calloc(ns, sizeof *m->shards);
    m->ranges = malloc((size_t)(total_ranges ? total_ranges : 1) * sizeof *m->ranges);
    if (!m->shards || !m->ranges || ggufmap_bufmap_new(&m->bufmap, err) != GGUFMAP_OK)
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory for %llu ranges", (unsigned long long)total_ranges);
    return GGUFMAP_OK;
}

/* Step 1: the files (every shard, or the one asked for). */
static int map_files(ggufmap_mapped *m, ggufmap_error *err) {
    uint64_t t0 = gm_now_ns();
    int rc = GGUFMAP_OK;
    for (uint32_t s = 0; s < m->n_shards && rc == GGUFMAP_OK; s++)
        if (m->opts.shard < 0 || (uint32_t)m->opts.shard == s) rc = map_shard(m, s, err);
    m->stats.map_ns = gm_now_ns() - t0;
    return rc;
}

/* Step 2: one backend buffer per planned range of every mapped buffer. */
static int add_planned_ranges(ggufmap_mapped *m, ggufmap_error *err) {
    const ggufmap_plan *plan = m->plan;
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    uint32_t nb = ggufmap_plan_n_buffers(plan);
    uint64_t range_bytes = 0;
    for (uint32_t i = 0; i < nb; i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (b->mapped && m->shards[b->shard].base) range_bytes += b->ranges_bytes;
    }
    if (m->opts.progress) m->opts.progress(m->opts.progress_ctx, 0, range_bytes);
    int rc = GGUFMAP_OK;
    for (uint32_t i = 0; i < nb && rc == GGUFMAP_OK; i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (!b->mapped || !m->shards[b->shard].base) continue;
        bool gpu = ggufmap_placement_context(pl, b->context)->gpu;
        for (uint32_t k = 0; k < b->n_ranges && rc == GGUFMAP_OK; k++) {
            rc = add_range(m, i, b, b->ranges[k].first, b->ranges[k].last, gpu, err);
            if (m->opts.progress) m->opts.progress(m->opts.progress_ctx, m->stats.planned_bytes, range_bytes);
        }
    }
    return rc;
}

/* Step 3: a catch-all per mapped file for each allocated context. */
static int add_catch_alls(ggufmap_mapped *m, ggufmap_error *err) {
    const ggufmap_placement *pl = ggufmap_plan_placement(m->plan);
    int rc = GGUFMAP_OK;
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl) && rc == GGUFMAP_OK; c++) {
        if (ggufmap_placement_context(pl, c)->mapped) continue;
        for (uint32_t s = 0; s < m->n_shards && rc == GGUFMAP_OK; s++) {
            if (!m->shards[s].base) continue;
            ggufmap_bufmap_entry e = {c, s, 0, GGUFMAP_CATCH_ALL_LAST, NULL, -1};
            rc = ggufmap_bufmap_add(m->bufmap, &e, err);
        }
    }
    return rc;
}

/* Step 4: the pages to keep, per file, and the predicted figures. */
static int keep_pages(ggufmap_mapped *m, ggufmap_error *err) {
    const uint64_t page = m->stats.page;
    m->stats.n_ranges = m->n_ranges;
    for (uint32_t s = 0; s < m->n_shards; s++) {
        shard_map *sm = &m->shards[s];
        if (!sm->base) continue;
        sm->keep = malloc((m->n_ranges ? m->n_ranges : 1) * sizeof *sm->keep);
        if (!sm->keep) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        for (uint32_t i = 0; i < m->n_ranges; i++)
            if (m->ranges[i].shard == s)
                sm->keep[sm->n_keep++] =
                    (ggufmap_range){gm_floor_to(m->ranges[i].first, page), gm_ceil_to(m->ranges[i].last, page)};
        sm->n_keep = union_pages(sm->keep, sm->n_keep);
        m->stats.planned_pages += pages_bytes(sm->keep, sm->n_keep);
        if (union_bytes(m, s, 1, page, &m->stats.gpu_pages) || union_bytes(m, s, 0, page, &m->stats.cpu_pages))
            return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    return GGUFMAP_OK;
}

int ggufmap_mapped_open(const ggufmap_plan *plan, const ggufmap_map_opts *opts_in, ggufmap_mapped **out, ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    ggufmap_mapped *m = NULL;
    int rc = mapped_new(plan, opts_in, &m, err);
    if (!rc) rc = map_files(m, err);
    if (!rc) rc = add_planned_ranges(m, err);
    if (!rc) rc = add_catch_alls(m, err);
    if (!rc) rc = keep_pages(m, err);
    /* Step 5: the allocated contexts' tensors, read in before any page goes. */
    if (!rc && !(m->opts.flags & GGUFMAP_MAP_NO_COPY)) rc = copy_allocated(m, err);
    /* Step 6: release what no range needs. */
    if (!rc && !(m->opts.flags & GGUFMAP_MAP_KEEP_UNPLANNED)) rc = ggufmap_mapped_release(m, NULL, err);
    if (rc) {
        ggufmap_mapped_free(m);
        return rc;
    }
    *out = m;
    return GGUFMAP_OK;
}

int ggufmap_mapped_release(ggufmap_mapped *m, uint64_t *released, ggufmap_error *err) {
    uint64_t page = m->stats.page, freed = 0, t0 = gm_now_ns();
    int rc = GGUFMAP_OK;
    const ggufmap_model *model = ggufmap_placement_model(ggufmap_plan_placement(m->plan));
    for (uint32_t s = 0; s < m->n_shards && rc == GGUFMAP_OK; s++) {
        shard_map *sm = &m->shards[s];
        if (!sm->base || sm->released) continue;
        uint64_t end = gm_ceil_to(sm->len, page), at = 0;
        for (uint32_t k = 0; k <= sm->n_keep && rc == GGUFMAP_OK; k++) {
            uint64_t stop = k < sm->n_keep ? sm->keep[k].first : end;
            if (stop > end) stop = end;
            if (stop > at) {
                if (munmap(sm->base + at, (size_t)(stop - at)) != 0)
                    rc = gm_fail_errno(err, errno, "%s: munmap of [%llu, %llu)",
                                       ggufmap_source_path(ggufmap_model_shard(model, s)), (unsigned long long)at,
                                       (unsigned long long)stop);
                else
                    freed += stop - at;
            }
            if (k < sm->n_keep && sm->keep[k].last > at) at = sm->keep[k].last;
        }
        sm->released = true; /* even after a failed munmap: unmap walks only the keep intervals */
    }
    m->stats.released_bytes += freed;
    m->stats.release_ns += gm_now_ns() - t0;
    if (released) *released = freed;
    return rc;
}

/* Fills out for a bufmap entry e and the bytes [offset, offset + size). */
static int resolved_from(const ggufmap_mapped *m, const ggufmap_bufmap_entry *e, uint64_t offset, uint64_t size,
                         ggufmap_resolved *out, ggufmap_error *err) {
    const shard_map *sm = &m->shards[e->shard];
    const ggufmap_model *model = ggufmap_placement_model(ggufmap_plan_placement(m->plan));
    const char *path = ggufmap_source_path(ggufmap_model_shard(model, e->shard));
    if (offset + size > sm->len)
        return gm_fail(err, GGUFMAP_ENOTFOUND, "%s: offset %llu: %llu bytes end past the file (%zu bytes)", path,
                       (unsigned long long)offset, (unsigned long long)size, sm->len);
    const alloc_copy *copy = e->index < 0 ? find_copy(m, e->context, e->shard, offset, size) : NULL;
    if (copy) {
        /* An allocated context's tensor: its copy in the context's buffer. */
        *out = (ggufmap_resolved){-1, m->alloc_buffers[e->context], copy->addr, offset, size, e->shard, e->context};
        return GGUFMAP_OK;
    }
    if (e->index < 0 && sm->released) {
        /* A catch-all after release: only kept pages can be read. */
        uint64_t page = m->stats.page, f = gm_floor_to(offset, page), l = gm_ceil_to(offset + size, page);
        bool kept = false;
        for (uint32_t k = 0; k < sm->n_keep && !kept; k++) kept = sm->keep[k].first <= f && l <= sm->keep[k].last;
        if (!kept)
            return gm_fail(err, GGUFMAP_ENOTFOUND,
                           "%s: offset %llu: the pages of these %llu bytes were released and no allocated "
                           "buffer holds them (GGUFMAP_MAP_NO_COPY: copy before ggufmap_mapped_release)",
                           path, (unsigned long long)offset, (unsigned long long)size);
    }
    out->range = e->index;
    out->buffer = e->buffer;
    out->addr = sm->base + offset;
    out->offset = offset;
    out->size = size;
    out->shard = e->shard;
    out->context = e->context;
    return GGUFMAP_OK;
}

int ggufmap_mapped_find(const ggufmap_mapped *m, uint32_t context, uint32_t shard, uint64_t offset, uint64_t size,
                        ggufmap_resolved *out, ggufmap_error *err) {
    const ggufmap_model *model = ggufmap_placement_model(ggufmap_plan_placement(m->plan));
    if (shard >= m->n_shards || !m->shards[shard].base)
        return gm_fail(err, GGUFMAP_ENOTFOUND, "shard %u is not mapped", shard + 1);
    ggufmap_bufmap_entry e;
    ggufmap_error ferr;
    int rc = ggufmap_bufmap_find(m->bufmap, context, shard, offset, size, &e, &ferr);
    if (rc)
        return gm_fail(err, rc, "%s: offset %llu: %s", ggufmap_source_path(ggufmap_model_shard(model, shard)),
                       (unsigned long long)offset, ferr.message);
    return resolved_from(m, &e, offset, size, out, err);
}

int ggufmap_mapped_resolve(const ggufmap_mapped *m, int64_t instance, ggufmap_resolved *out, ggufmap_error *err) {
    const ggufmap_placement *pl = ggufmap_plan_placement(m->plan);
    const ggufmap_model *model = ggufmap_placement_model(pl);
    if (instance < 0 || instance >= ggufmap_placement_n_instances(pl))
        return gm_fail(err, GGUFMAP_EINVAL, "instance %lld is out of range", (long long)instance);
    const ggufmap_instance *in = ggufmap_placement_instance(pl, instance);
    const ggufmap_tensor *t = ggufmap_model_tensor(model, in->tensor);
    const char *path = ggufmap_source_path(ggufmap_model_shard(model, t->shard));
    if (!m->shards[t->shard].base)
        return gm_fail(err, GGUFMAP_ENOTFOUND, "%s: offset %llu: tensor '%.*s': shard %u is not mapped", path,
                       (unsigned long long)t->offset, (int)t->name_len, t->name, t->shard + 1);
    ggufmap_bufmap_entry e;
    ggufmap_error ferr;
    int rc = ggufmap_bufmap_find(m->bufmap, in->context, t->shard, t->offset, t->size, &e, &ferr);
    if (rc)
        return gm_fail(err, rc, "%s: offset %llu: tensor '%.*s' (%s): %s", path, (unsigned long long)t->offset,
                       (int)t->name_len, t->name, ggufmap_placement_context(pl, in->context)->buffer_name, ferr.message);
    rc = resolved_from(m, &e, t->offset, t->size, out, &ferr);
    if (rc) return gm_fail(err, rc, "tensor '%.*s': %s", (int)t->name_len, t->name, ferr.message);
    return GGUFMAP_OK;
}

uint64_t ggufmap_mapped_touch(const ggufmap_mapped *m) {
    uint64_t page = m->stats.page, bytes = 0;
    volatile uint8_t sink = 0;
    for (uint32_t s = 0; s < m->n_shards; s++) {
        const shard_map *sm = &m->shards[s];
        if (!sm->base) continue;
        for (uint32_t k = 0; k < sm->n_keep; k++) {
            uint64_t last = sm->keep[k].last < sm->len ? sm->keep[k].last : sm->len;
            for (uint64_t off = sm->keep[k].first; off < last; off += page) sink ^= sm->base[off];
            if (last > sm->keep[k].first) bytes += gm_ceil_to(last, page) - sm->keep[k].first;
        }
    }
    (void)sink;
    return bytes;
}

uint32_t ggufmap_mapped_n_ranges(const ggufmap_mapped *m) { return m->n_ranges; }
const ggufmap_mapped_range *ggufmap_mapped_range_at(const ggufmap_mapped *m, uint32_t i) {
    return i < m->n_ranges ? &m->ranges[i] : NULL;
}
const uint8_t *ggufmap_mapped_base(const ggufmap_mapped *m, uint32_t shard) {
    return shard < m->n_shards ? m->shards[shard].base : NULL;
}
const ggufmap_bufmap *ggufmap_mapped_bufmap(const ggufmap_mapped *m) { return m->bufmap; }
void ggufmap_mapped_get_stats(const ggufmap_mapped *m, ggufmap_mapped_stats *out) { *out = m->stats; }
const ggufmap_plan *ggufmap_mapped_plan(const ggufmap_mapped *m) { return m->plan; }

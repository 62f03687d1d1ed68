/*
 * test_load.c - the loader: the range-aware buffer map and ggufmap_mapped_open.
 *
 * usage: test_load FIXTURE_TOOL SCRATCH_DIR
 *
 * 1. The buffer map against brute force over random ranges: a lookup returns
 *    an entry that contains the bytes completely, finds one whenever one
 *    exists, never returns one that holds them in part, and rejects an
 *    offset + size that overflows; overlapping adds are refused.
 * 2. Property test of ggufmap_mapped_open over random layouts (fixture archs,
 *    shuffled orders, several seeds) and random placements and planners,
 *    with a counting host backend: every instance resolves to a range of its
 *    own context that contains it, its address is the mapping base plus its
 *    offset and holds the file's bytes, every range was handed to the right
 *    backend once with the exact pointer and size, lookups across a range's
 *    edge fail, and after release exactly the pages outside every range are
 *    unmapped (mincore).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "ggufmap/ggufmap.h"
#include "ggufmap/load.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* ------------------------------------------------------------------------ */
/* 1. The buffer map                                                         */
/* ------------------------------------------------------------------------ */

static void test_bufmap(void) {
    for (int round = 0; round < 200; round++) {
        ggufmap_bufmap *map = NULL;
        ggufmap_error err;
        CHECK(ggufmap_bufmap_new(&map, &err) == GGUFMAP_OK);
        if (!map) return;
        /* Random disjoint ranges in 3 contexts x 2 shards; near UINT64_MAX too. */
        enum { MAXR = 64 };
        ggufmap_bufmap_entry all[3 * 2 * MAXR];
        size_t n = 0;
        for (uint32_t c = 0; c < 3; c++)
            for (uint32_t s = 0; s < 2; s++) {
                uint64_t at = (round % 5 == 0) ? UINT64_MAX - 100000 : rnd() % 1000;
                uint32_t k = (uint32_t)(rnd() % MAXR);
                for (uint32_t i = 0; i < k; i++) {
                    at += rnd() % 50; /* a gap, maybe none */
                    uint64_t len = 1 + rnd() % 200;
                    if (at > UINT64_MAX - len) break;
                    ggufmap_bufmap_entry e = {c, s, at, at + len, (void *)(uintptr_t)(n + 1), (int64_t)n};
                    all[n++] = e;
                    at += len;
                }
            }
        /* Add in random order. */
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)(rnd() % i);
            ggufmap_bufmap_entry t = all[i - 1];
            all[i - 1] = all[j];
            all[j] = t;
        }
        for (size_t i = 0; i < n; i++) CHECK(ggufmap_bufmap_add(map, &all[i], &err) == GGUFMAP_OK);
        CHECK(ggufmap_bufmap_size(map) == n);
        /* Overlapping and empty adds are refused and change nothing. */
        if (n > 0) {
            ggufmap_bufmap_entry o = all[0];
            o.last = o.first + 1;
            CHECK(ggufmap_bufmap_add(map, &o, &err) == GGUFMAP_EINVAL);
            o.first = o.last;
            CHECK(ggufmap_bufmap_add(map, &o, &err) == GGUFMAP_EINVAL);
            CHECK(ggufmap_bufmap_size(map) == n);
        }
        /* Sorted by (context, shard, first). */
        for (size_t i = 1; i < ggufmap_bufmap_size(map); i++) {
            const ggufmap_bufmap_entry *a = ggufmap_bufmap_at(map, i - 1), *b = ggufmap_bufmap_at(map, i);
            CHECK(a->context < b->context || (a->context == b->context && a->shard < b->shard) ||
                  (a->context == b->context && a->shard == b->shard && a->last <= b->first));
        }
        /* Random queries against brute force. */
        for (int q = 0; q < 400; q++) {
            uint32_t c = (uint32_t)(rnd() % 3), s = (uint32_t)(rnd() % 2);
            uint64_t off, size;
            if (n > 0 && rnd() % 2) { /* near an existing range's edges */
                const ggufmap_bufmap_entry *e = &all[rnd() % n];
                c = e->context;
                s = e->shard;
                off = e->first + rnd() % 8 - 4 * (rnd() % 2);
                size = rnd() % (e->last - e->first + 8);
            } else {
                off = (round % 5 == 0) ? UINT64_MAX - rnd() % 200000 : rnd() % 3000;
                size = rnd() % 300;
            }
            if (q % 50 == 0) size = UINT64_MAX - off + 1 + rnd() % 10; /* overflow */
            bool overflow = size > UINT64_MAX - off;
            const ggufmap_bufmap_entry *want = NULL;
            for (size_t i = 0; i < n && !overflow; i++)
                if (all[i].context == c && all[i].shard == s && all[i].first <= off && off + size <= all[i].last)
                    want = &all[i];
            ggufmap_bufmap_entry got;
            int rc = ggufmap_bufmap_find(map, c, s, off, size, &got, &err);
            if (overflow) {
                CHECK_MSG(rc == GGUFMAP_EINVAL, "offset %llu size %llu must overflow", (unsigned long long)off,
                          (unsigned long long)size);
            } else if (want) {
                CHECK_MSG(rc == GGUFMAP_OK && got.index == want->index, "query c%u s%u [%llu +%llu)", c, s,
                          (unsigned long long)off, (unsigned long long)size);
            } else {
                CHECK_MSG(rc == GGUFMAP_ENOTFOUND, "query c%u s%u [%llu +%llu) rc %d", c, s, (unsigned long long)off,
                          (unsigned long long)size, rc);
            }
            if (rc == GGUFMAP_OK) /* never in part */
                CHECK(got.context == c && got.shard == s && got.first <= off && off + size <= got.last);
        }
        /* A catch-all holds anything that does not overflow. */
        ggufmap_bufmap_entry ca = {7, 0, 0, GGUFMAP_CATCH_ALL_LAST, NULL, -1};
        CHECK(ggufmap_bufmap_add(map, &ca, &err) == GGUFMAP_OK);
        ggufmap_bufmap_entry got;
        CHECK(ggufmap_bufmap_find(map, 7, 0, UINT64_MAX - 10, 10, &got, &err) == GGUFMAP_OK && got.index == -1);
        CHECK(ggufmap_bufmap_find(map, 7, 0, UINT64_MAX - 10, 11, &got, &err) == GGUFMAP_EINVAL);
        CHECK(ggufmap_bufmap_find(map, 7, 1, 0, 1, &got, &err) == GGUFMAP_ENOTFOUND);
        ggufmap_bufmap_free(map);
    }
}

/* ------------------------------------------------------------------------ */
/* 2. Mapping plans                                                          */
/* ------------------------------------------------------------------------ */

/* A host backend that records each call, to check what the loader hands over. */
typedef struct call { const uint8_t *ptr; size_t size, max_tensor; bool freed; } call;
typedef struct counting { const char *tag; call calls[4096]; size_t n; } counting;

static void *count_from_ptr(void *ctx, void *ptr, size_t size, size_t max_tensor, ggufmap_error *err) {
    (void)err;
    counting *c = ctx;
    if (c->n >= 4096) return NULL;
    c->calls[c->n] = (call){ptr, size, max_tensor, false};
    return &c->calls[c->n++];
}

static void count_free(void *ctx, void *buffer) {
    (void)ctx;
    call *k = buffer;
    CHECK(!k->freed);
    k->freed = true;
}

static int run(const char *cmd) {
    int rc = system(cmd);
    if (rc != 0) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

/* True when the page at p is mapped (mincore answers ENOMEM for unmapped). */
static bool page_mapped(const void *p) {
    unsigned char v;
    return mincore((void *)p, 1, &v) == 0 || errno != ENOMEM;
}

static void check_mapped(const ggufmap_plan *plan, const ggufmap_mapped *mp, counting *cpu, counting *gpu, int fd0) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    ggufmap_error err;
    /* Every range went to the right backend once, with the exact pointer. */
    size_t seen_cpu = 0, seen_gpu = 0;
    for (uint32_t i = 0; i < ggufmap_mapped_n_ranges(mp); i++) {
        const ggufmap_mapped_range *r = ggufmap_mapped_range_at(mp, i);
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, r->plan_buffer);
        bool is_gpu = ggufmap_buft_is_gpu(ggufmap_placement_context(pl, b->context)->buft);
        const call *k = r->handle;
        counting *want = is_gpu ? gpu : cpu;
        CHECK(k >= want->calls && k < want->calls + want->n);
        CHECK(r->gpu == is_gpu);
        CHECK(k->ptr == ggufmap_mapped_base(mp, r->shard) + r->first && k->size == r->last - r->first);
        CHECK(k->max_tensor == b->max_tensor);
        CHECK(b->mapped && r->first >= b->first && r->last <= b->last);
        if (is_gpu) seen_gpu++; else seen_cpu++;
    }
    CHECK(seen_cpu == cpu->n && seen_gpu == gpu->n);
    /* Every instance resolves into a range of its own context that contains it. */
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_tensor *t = ggufmap_model_tensor(m, in->tensor);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, in->context);
        ggufmap_resolved r;
        int rc = ggufmap_mapped_resolve(mp, i, &r, &err);
        if (!ctx->mapped) {
            /* Allocated: read into the context's own buffer before any page
             * was released (as llama.cpp's load_all_data), so it always
             * resolves, to a copy outside the mapping holding the file's bytes. */
            CHECK_MSG(rc == GGUFMAP_OK, "allocated %s: %s", ctx->buffer_name, err.message);
            if (rc) continue;
            const uint8_t *base = ggufmap_mapped_base(mp, t->shard);
            CHECK(r.range == -1 && r.buffer != NULL && r.size == t->size);
            CHECK(r.addr < base || r.addr >= base + ggufmap_source_file_size(ggufmap_model_shard(m, t->shard)));
            uint8_t *want = malloc(t->size + 1);
            const ggufmap_source *src = ggufmap_model_shard(m, t->shard);
            CHECK(want && pread(ggufmap_source_fd(src), want, (size_t)t->size, (off_t)t->offset) == (ssize_t)t->size);
            CHECK(want && memcmp(want, r.addr, (size_t)t->size) == 0);
            free(want);
            ggufmap_resolved x;
            CHECK(ggufmap_mapped_find(mp, in->context, t->shard, t->offset, t->size, &x, &err) == GGUFMAP_OK &&
                  x.addr == r.addr);
            continue;
        }
        CHECK_MSG(rc == GGUFMAP_OK, "%s", err.message);
        if (rc) continue;
        const ggufmap_mapped_range *mr = ggufmap_mapped_range_at(mp, (uint32_t)r.range);
        CHECK(mr && mr->context == in->context && mr->shard == t->shard);
        CHECK(mr && mr->first <= t->offset && t->offset + t->size <= mr->last);
        CHECK(mr && r.buffer == mr->handle);
        CHECK(r.addr == ggufmap_mapped_base(mp, t->shard) + t->offset);
        if (t->shard == 0 && t->size > 0) { /* the bytes at the address are the file's */
            uint8_t buf[64];
            size_t len = t->size < sizeof buf ? (size_t)t->size : sizeof buf;
            CHECK(pread(fd0, buf, len, (off_t)t->offset) == (ssize_t)len);
            CHECK(memcmp(buf, r.addr, len) == 0);
            uint64_t tail = t->offset + t->size - len;
            CHECK(pread(fd0, buf, len, (off_t)tail) == (ssize_t)len);
            CHECK(memcmp(buf, ggufmap_mapped_base(mp, 0) + tail, len) == 0);
        }
        /* Bytes that cross the range's edge are never found in part. */
        if (mr && mr->last - mr->first < UINT64_MAX / 2) {
            ggufmap_resolved x;
            CHECK(ggufmap_mapped_find(mp, in->context, t->shard, mr->last - 1, 2, &x, &err) != GGUFMAP_OK ||
                  x.range != r.range);
            if (mr->first > 0)
                CHECK(ggufmap_mapped_find(mp, in->context, t->shard, mr->first - 1, 2, &x, &err) != GGUFMAP_OK ||
                      x.range != r.range);
            CHECK(ggufmap_mapped_find(mp, in->context, t->shard, t->offset, UINT64_MAX, &x, &err) ==
                  (t->offset ? GGUFMAP_EINVAL : GGUFMAP_ENOTFOUND));
        }
    }
    /* After release: exactly the pages touched by some range stay mapped. */
    ggufmap_mapped_stats st;
    ggufmap_mapped_get_stats(mp, &st);
    uint64_t page = st.page;
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const uint8_t *base = ggufmap_mapped_base(mp, s);
        uint64_t size = ggufmap_source_file_size(ggufmap_model_shard(m, s));
        uint64_t kept = 0;
        for (uint64_t off = 0; off < size; off += page) {
            bool in_range = false;
            for (uint32_t i = 0; i < ggufmap_mapped_n_ranges(mp) && !in_range; i++) {
                const ggufmap_mapped_range *r = ggufmap_mapped_range_at(mp, i);
                in_range = r->shard == s && r->first < off + page && off < r->last;
            }
            CHECK_MSG(page_mapped(base + off) == in_range, "shard %u page at %llu: mapped %d, in a range %d", s,
                      (unsigned long long)off, page_mapped(base + off), in_range);
            kept += in_range ? page : 0;
        }
        (void)kept;
    }
    CHECK(st.released_bytes + st.planned_pages >= st.file_bytes);
}

static void test_map(const char *tool, const char *dir) {
    static const char *const archs[] = {"llama", "qwen3moe", "gemma4", "qwen4exp"};
    static const char *const planners[] = {"span", "coalesce:4K", "runs:1K:4", "tight", "tight:8K:3", "tight:0:1"};
    char path[1024], cmd[2048];
    int n_models = 0, n_with_alloc = 0;
    for (int k = 0; k < 12; k++) {
        const char *arch = archs[k % 4];
        snprintf(path, sizeof path, "%s/m%d.gguf", dir, k);
        unlink(path);
        snprintf(cmd, sizeof cmd, "'%s' --arch %s --layers %d --order shuffle:%d --seed %d %s -o '%s' >/dev/null", tool,
                 arch, 2 + k % 3, k + 1, k, k % 3 == 0 ? "--type q8_0" : k % 3 == 1 ? "--tied" : "", path);
        if (run(cmd) != 0) {
            CHECK(0);
            continue;
        }
        n_models++;
        ggufmap_model *m = NULL;
        ggufmap_error err;
        CHECK_MSG(ggufmap_model_open(path, 0, &m, &err) == GGUFMAP_OK, "%s", err.message);
        if (!m) continue;
        int fd0 = ggufmap_source_fd(ggufmap_model_shard(m, 0));
        for (int trial = 0; trial < 8; trial++) {
            ggufmap_placement_opts po;
            ggufmap_placement_opts_init(&po);
            po.device = (ggufmap_device)(rnd() % 3);
            po.n_gpu_layers = (int)(rnd() % 5) - 1;
            po.cpu = (ggufmap_cpu)(1 + rnd() % 4);
            po.lazy = (ggufmap_lazy)(rnd() % 3);
            ggufmap_override ov[2] = {{"blk\\.[13579]\\.", "CPU"}, {"ffn_(up|down)", "CPU"}};
            po.overrides = ov;
            po.n_overrides = (uint32_t)(rnd() % 3);
            ggufmap_placement *pl = NULL;
            ggufmap_plan *plan = NULL;
            ggufmap_plan_opts popt;
            ggufmap_plan_opts_init(&popt);
            ggufmap_planner_parse(planners[rnd() % 6], &popt.planner);
            popt.page = rnd() % 2 ? 1 : 4096;
            CHECK_MSG(ggufmap_placement_build(m, &po, &pl, &err) == GGUFMAP_OK, "%s", err.message);
            if (pl) CHECK_MSG(ggufmap_plan_build(pl, &popt, &plan, &err) == GGUFMAP_OK, "%s", err.message);
            static counting cpu, gpu;
            cpu.n = gpu.n = 0;
            ggufmap_backend cb = {"count-cpu", &cpu, count_from_ptr, count_free};
            ggufmap_backend gb = {"count-gpu", &gpu, count_from_ptr, count_free};
            ggufmap_map_opts mo;
            ggufmap_map_opts_init(&mo);
            mo.cpu = &cb;
            mo.gpu = &gb;
            ggufmap_mapped *mp = NULL;
            if (plan) CHECK_MSG(ggufmap_mapped_open(plan, &mo, &mp, &err) == GGUFMAP_OK, "%s", err.message);
            if (mp) {
                check_mapped(plan, mp, &cpu, &gpu, fd0);
                ggufmap_mapped_stats st;
                ggufmap_mapped_get_stats(mp, &st);
                uint64_t alloc_instances = 0;
                for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++)
                    alloc_instances += !ggufmap_placement_context(pl, ggufmap_placement_instance(pl, i)->context)->mapped;
                CHECK(st.n_copied == alloc_instances && (st.copied_bytes > 0) == (alloc_instances > 0));
                n_with_alloc += alloc_instances > 0;
                uint64_t again = 1;
                CHECK(ggufmap_mapped_release(mp, &again, &err) == GGUFMAP_OK && again == 0); /* idempotent */
                ggufmap_mapped_touch(mp);
                ggufmap_mapped_free(mp);
                for (size_t i = 0; i < cpu.n; i++) CHECK(cpu.calls[i].freed);
                for (size_t i = 0; i < gpu.n; i++) CHECK(gpu.calls[i].freed);
            }
            /* KEEP_UNPLANNED: allocated contexts resolve to the catch-all everywhere. */
            mo.flags = GGUFMAP_MAP_KEEP_UNPLANNED;
            cpu.n = gpu.n = 0;
            mp = NULL;
            if (plan) CHECK(ggufmap_mapped_open(plan, &mo, &mp, &err) == GGUFMAP_OK);
            for (int64_t i = 0; mp && i < ggufmap_placement_n_instances(pl); i++) {
                ggufmap_resolved r;
                CHECK_MSG(ggufmap_mapped_resolve(mp, i, &r, &err) == GGUFMAP_OK, "%s", err.message);
            }
            /* A range no plan made: a tensor outside it is an error, never a fallback. */
            ggufmap_mapped_free(mp);
            ggufmap_plan_free(plan);
            ggufmap_placement_free(pl);
        }
        ggufmap_model_free(m);
        unlink(path);
    }
    CHECK(n_models == 12);
    CHECK_MSG(n_with_alloc >= 10, "only %d placements had allocated contexts", n_with_alloc);
}

/* A backend that refuses: ggufmap_mapped_open fails cleanly and names the range. */
static void *refuse(void *ctx, void *ptr, size_t size, size_t max_tensor, ggufmap_error *err) {
    (void)ctx, (void)ptr, (void)size, (void)max_tensor;
    snprintf(err->message, sizeof err->message, "no room");
    return NULL;
}

static void test_refusal(const char *tool, const char *dir) {
    char path[1024], cmd[2048];
    snprintf(path, sizeof path, "%s/r.gguf", dir);
    unlink(path);
    snprintf(cmd, sizeof cmd, "'%s' --arch llama -o '%s' >/dev/null", tool, path);
    if (run(cmd) != 0) {
        CHECK(0);
        return;
    }
    ggufmap_model *m = NULL;
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_error err;
    ggufmap_placement_opts po;
    ggufmap_placement_opts_init(&po);
    ggufmap_plan_opts popt;
    ggufmap_plan_opts_init(&popt);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == GGUFMAP_OK);
    CHECK(m && ggufmap_placement_build(m, &po, &pl, &err) == GGUFMAP_OK);
    CHECK(pl && ggufmap_plan_build(pl, &popt, &plan, &err) == GGUFMAP_OK);
    ggufmap_backend no = {"refusing", NULL, refuse, NULL};
    ggufmap_map_opts mo;
    ggufmap_map_opts_init(&mo);
    mo.cpu = &no;
    ggufmap_mapped *mp = NULL;
    if (plan) {
        CHECK(ggufmap_mapped_open(plan, &mo, &mp, &err) == GGUFMAP_EIO && mp == NULL);
        CHECK_MSG(strstr(err.message, "r.gguf") && strstr(err.message, "no room") && strstr(err.message, "refusing"),
                  "%s", err.message);
        mo.cpu = NULL;
        mo.shard = 5;
        CHECK(ggufmap_mapped_open(plan, &mo, &mp, &err) == GGUFMAP_EINVAL && mp == NULL);
    }
    ggufmap_backend *b = NULL;
    CHECK(ggufmap_backend_open("nope", &b, &err) == GGUFMAP_EINVAL && b == NULL);
    CHECK(ggufmap_backend_open("host", &b, &err) == GGUFMAP_OK && b);
    ggufmap_backend_free(b);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    ggufmap_model_free(m);
    unlink(path);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_load FIXTURE_TOOL SCRATCH_DIR\n");
        return 2;
    }
    mkdir(argv[2], 0755);
    test_bufmap();
    test_map(argv[1], argv[2]);
    test_refusal(argv[1], argv[2]);
    return check_summary();
}

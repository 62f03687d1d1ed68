/*
 * repack_copy.c - repack's copy engine: every tensor from its input shard to
 * its place in an output temporary, hashed on the way and checked against
 * the bytes read back from the output.
 *
 * How the bytes move.  The library's worker pool (workers.c) hands whole
 * tensors to the workers, the largest first (so the last to finish is a
 * small one), and each streams its tensor through one 8 MiB buffer:
 *
 *   piece k:           read it from the input, add it to the copy digest,
 *                      write it at its output offset, and ask the kernel to
 *                      start writing it to the disk (gm_os_writeback_start);
 *   piece k-CHECK_LAG: wait until the disk has it, read it back from the
 *                      output file, add it to the read-back digest, and drop
 *                      it from the page cache (gm_os_writeback_wait,
 *                      gm_os_drop_cache).
 *
 * When a tensor ends both digests must agree.  Why this shape: at most
 * CHECK_LAG pieces per worker are dirty or cached at any moment, so a 100 GiB
 * output neither floods the page cache (evicting what the user had there)
 * nor waits for the dirty limit before write-back starts, and the read-back
 * of a piece costs no disk read.  Plain buffered writes of 8.5 GiB took 35 s
 * of kernel time on a VM whose freed memory goes back to the host; this
 * stream took 4.6 s (docs/repack.md).
 *
 * Holes: each piece is a run of whole 64 KiB chunks (counted from the
 * tensor's first byte) that hold data; chunks wholly inside a hole of the
 * input are neither read nor written, so they stay holes in the output and
 * count as all-zero chunks in the sparse digest (ggufmap/hash.h).  Where
 * the system cannot say where the holes are (os.h, posix) every chunk is
 * read, and an all-zero chunk is not written: the output was sized with
 * ftruncate, so it reads back as zeros and stays a hole all the same.
 *
 * Test hooks (compiled only with GGUFMAP_TEST_HOOKS, the test build of the
 * library): GGUFMAP_REPACK_TEST_DELAY_US sleeps after each piece,
 * GGUFMAP_REPACK_TEST_FLIP=NAME flips a byte of NAME's copy before its
 * read-back (the check must catch it).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ggufmap/hash.h"
#include "os.h"
#include "repack_internal.h"

#define COPY_CHUNK (8u << 20)
#define CHECK_LAG 4

/* The state the workers share while copying (one per rp_copy_all call). */
typedef struct engine {
    rp_copy *c;
    atomic_ullong done;   /* tensor bytes copied, holes included: progress */
    atomic_int use_cfr;   /* gm_os_copy_range; cleared when the kernel refuses */
    atomic_int cfr_used;
    atomic_int use_sfr;   /* gm_os_writeback_wait works on the output */
    unsigned delay_us;    /* test hook */
    const char *flip;     /* test hook */
} engine;

typedef struct piece {
    uint64_t rel;         /* offset from the tensor's first byte */
    size_t len;
} piece;

/* ------------------------------------------------------------------------ */
/* One piece                                                                 */
/* ------------------------------------------------------------------------ */

/* gm_pread_full, a file that ends early counting as EIO. */
static int read_piece(int fd, uint8_t *buf, size_t k, uint64_t pos) {
    int sys = gm_pread_full(fd, buf, k, pos);
    return sys == GM_SHORT_FILE ? EIO : sys;
}

/* Adds the whole chunks of one piece (rel is a multiple of the chunk). */
static int digest_piece(ggufmap_sparse *sp, uint64_t rel, const uint8_t *bytes, size_t k) {
    const size_t ch = GGUFMAP_SPARSE_CHUNK;
    for (size_t q = 0; q < k; q += ch)
        if (ggufmap_sparse_chunk(sp, (rel + q) / ch, bytes + q, k - q < ch ? k - q : ch)) return -1;
    return 0;
}

/* Writes n bytes at out in chunks, leaving out the all-zero ones (they
 * read back as zeros from the file ftruncate sized).  0 or an errno; *done
 * says how far it got. */
static int write_data_chunks(int fd, const uint8_t *buf, size_t n, uint64_t out, size_t *done) {
    const size_t ch = GGUFMAP_SPARSE_CHUNK;
    for (*done = 0; *done < n; *done += ch) {
        size_t k = n - *done < ch ? n - *done : ch;
        if (gm_all_zero(buf + *done, k)) continue;
        int sys = gm_pwrite_full(fd, buf + *done, k, out + *done);
        if (sys) return sys;
    }
    *done = n;
    return 0;
}

/* Copies one piece and adds it to the copy digest.  The digest needs the
 * bytes in memory, so they are always read into buf; the kernel then copies
 * them with gm_os_copy_range where it can (a reflink on XFS or Btrfs: no
 * data moves), else buf is written.  The second read of the input costs
 * little: it comes from the page cache the first one filled. */
static int copy_piece(engine *en, const rp_task *t, const piece *p, uint8_t *buf, ggufmap_sparse *sp,
                      ggufmap_error *e) {
    int dfd = en->c->out[t->shard].fd, sys;
    uint64_t in = t->src_off + p->rel, out = t->dst_off + p->rel;
    size_t done = 0, written = 0;
    if ((sys = read_piece(t->src_fd, buf, p->len, in)))
        return gm_fail_errno(e, sys, "%s: read at offset %llu (tensor '%s')", t->src_path, (unsigned long long)in,
                             t->name);
    GM_TEST_INPUT_READ(t->src_path);
    if (digest_piece(sp, p->rel, buf, p->len)) return gm_fail(e, GGUFMAP_ENOMEM, "SHA-256 failed");
    if (atomic_load(&en->use_cfr)) {
        sys = gm_os_copy_range(t->src_fd, in, dfd, out, p->len, &done);
        if (sys > 0) goto write_failed;
        if (sys == GM_OS_UNSUPPORTED) atomic_store(&en->use_cfr, 0);
        else atomic_store(&en->cfr_used, 1);
    }
    if (done < p->len && (sys = write_data_chunks(dfd, buf + done, p->len - done, out + done, &written))) goto write_failed;
    return GGUFMAP_OK;
write_failed:
    return gm_fail_errno(e, sys, "%s: write at offset %llu (tensor '%s')", en->c->out[t->shard].tmp,
                         (unsigned long long)(out + done + written), t->name);
}

/* Waits for one written piece to reach the disk, reads it back from the
 * output into buf, adds it to the read-back digest, and lets its pages go. */
static int check_piece(engine *en, const rp_task *t, const piece *p, uint8_t *buf, ggufmap_sparse *sp,
                       ggufmap_error *e) {
    const gm_tempfile *o = &en->c->out[t->shard];
    uint64_t out = t->dst_off + p->rel;
    int sys = atomic_load(&en->use_sfr) ? gm_os_writeback_wait(o->fd, out, p->len) : GM_OS_UNSUPPORTED;
    if (sys > 0)
        return gm_fail_errno(e, sys, "%s: writing offset %llu (tensor '%s') to the disk", o->tmp,
                             (unsigned long long)out, t->name);
    if (sys == GM_OS_UNSUPPORTED) atomic_store(&en->use_sfr, 0);
    if ((sys = read_piece(o->fd, buf, p->len, out)))
        return gm_fail_errno(e, sys, "%s: read back at offset %llu (tensor '%s')", o->tmp, (unsigned long long)out,
                             t->name);
    if (digest_piece(sp, p->rel, buf, p->len)) return gm_fail(e, GGUFMAP_ENOMEM, "SHA-256 failed");
    if (atomic_load(&en->use_sfr)) gm_os_drop_cache(o->fd, out, p->len);
    return GGUFMAP_OK;
}

#ifdef GGUFMAP_TEST_HOOKS
/* Test hook: corrupts the first byte written of the tensor named by
 * GGUFMAP_REPACK_TEST_FLIP, before its read-back. */
static int flip_byte(const engine *en, const rp_task *t, const piece *p, ggufmap_error *e) {
    uint8_t b = 0;
    int dfd = en->c->out[t->shard].fd;
    off_t at = (off_t)(t->dst_off + p->rel);
    if (pread(dfd, &b, 1, at) != 1) return gm_fail(e, GGUFMAP_EIO, "test hook: read");
    b ^= 0x01;
    if (pwrite(dfd, &b, 1, at) != 1) return gm_fail(e, GGUFMAP_EIO, "test hook: write");
    return GGUFMAP_OK;
}
#endif

/* ------------------------------------------------------------------------ */
/* One tensor                                                                */
/* ------------------------------------------------------------------------ */

/* The pieces written but not yet read back, oldest first. */
typedef struct lag_ring {
    piece p[CHECK_LAG];
    unsigned head, queued;
} lag_ring;

/* Copies the pieces of one run of data [s, stop) of task t, reading each
 * back CHECK_LAG pieces later. */
static int copy_run(engine *en, const rp_task *t, uint64_t s, uint64_t stop, uint8_t *buf, ggufmap_sparse *cs,
                    ggufmap_sparse *rs, lag_ring *ring, bool *flip, ggufmap_error *e) {
    int rc;
    while (s < stop) {
        if (en->c->cancel && *en->c->cancel) return gm_fail(e, GGUFMAP_EIO, "interrupted by a signal");
        piece p = {s - t->src_off, stop - s < COPY_CHUNK ? (size_t)(stop - s) : COPY_CHUNK};
        if ((rc = copy_piece(en, t, &p, buf, cs, e))) return rc;
#ifdef GGUFMAP_TEST_HOOKS
        if (*flip && (rc = flip_byte(en, t, &p, e))) return rc;
        if (en->delay_us) nanosleep(&(struct timespec){en->delay_us / 1000000u, (long)(en->delay_us % 1000000u) * 1000L}, NULL);
#endif
        *flip = false;
        if (atomic_load(&en->use_sfr)) gm_os_writeback_start(en->c->out[t->shard].fd, t->dst_off + p.rel, p.len);
        if (ring->queued == CHECK_LAG) {
            if ((rc = check_piece(en, t, &ring->p[ring->head], buf, rs, e))) return rc;
            ring->head = (ring->head + 1) % CHECK_LAG;
            ring->queued--;
        }
        ring->p[(ring->head + ring->queued++) % CHECK_LAG] = p;
        atomic_fetch_add(&en->done, p.len);
        s += p.len;
    }
    return GGUFMAP_OK;
}

/* The two digests of a tensor must agree. */
static int compare_digests(const engine *en, const rp_task *t, ggufmap_sparse *cs, ggufmap_sparse *rs,
                           ggufmap_error *e) {
    uint8_t copied[GGUFMAP_SHA256_LEN], read_back[GGUFMAP_SHA256_LEN];
    if (ggufmap_sparse_final(cs, t->size, copied) || ggufmap_sparse_final(rs, t->size, read_back))
        return gm_fail(e, GGUFMAP_ENOMEM, "SHA-256 failed");
    if (memcmp(copied, read_back, GGUFMAP_SHA256_LEN) == 0) return GGUFMAP_OK;
    char a[65], b[65];
    return gm_fail(e, GGUFMAP_EFORMAT,
                   "%s: offset %llu: tensor '%s': read-back check failed: digest %s copied, %s read back",
                   en->c->final_path[t->shard], (unsigned long long)t->dst_off, t->name,
                   ggufmap_sha256_hex(copied, a), ggufmap_sha256_hex(read_back, b));
}

/* Copies and checks task i (a worker-pool item; buf is the worker's buffer). */
static int copy_task(void *ctx, int64_t i, uint8_t *buf, ggufmap_error *e) {
    engine *en = ctx;
    const rp_task *t = &en->c->tasks[i];
    const uint64_t ch = GGUFMAP_SPARSE_CHUNK, base = t->src_off, end = base + t->size;
    ggufmap_sparse *cs = NULL, *rs = NULL;
    ggufmap_sparse_new(&cs);
    ggufmap_sparse_new(&rs);
    lag_ring ring = {.head = 0};
    bool flip = en->flip && strcmp(en->flip, t->name) == 0;
    int rc = !cs || !rs ? gm_fail(e, GGUFMAP_ENOMEM, "out of memory") : GGUFMAP_OK;
    uint64_t pos = base, s, stop;
    while (!rc && pos < end && gm_next_data_run(t->src_fd, base, end, ch, pos, &s, &stop)) {
        atomic_fetch_add(&en->done, s - pos);
        rc = copy_run(en, t, s, stop, buf, cs, rs, &ring, &flip, e);
        pos = stop;
    }
    if (!rc) atomic_fetch_add(&en->done, end - pos); /* a hole up to the end */
    for (; !rc && ring.queued > 0; ring.queued--, ring.head = (ring.head + 1) % CHECK_LAG)
        rc = check_piece(en, t, &ring.p[ring.head], buf, rs, e);
    if (!rc) rc = compare_digests(en, t, cs, rs, e);
    ggufmap_sparse_free(cs);
    ggufmap_sparse_free(rs);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Every tensor                                                              */
/* ------------------------------------------------------------------------ */

static int larger_first(const void *x, const void *y) {
    const rp_task *a = x, *b = y;
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return a->dst_off < b->dst_off ? -1 : a->dst_off > b->dst_off; /* a stable order for equal sizes */
}

static void tick(void *ctx) {
    engine *en = ctx;
    en->c->progress(en->c->progress_ctx, atomic_load(&en->done), en->c->total);
}

int rp_copy_all(rp_copy *c, ggufmap_error *err) {
    engine en = {.c = c};
    atomic_init(&en.done, 0);
    atomic_init(&en.use_cfr, c->kernel_copy);
    atomic_init(&en.cfr_used, 0);
    atomic_init(&en.use_sfr, 1);
#ifdef GGUFMAP_TEST_HOOKS
    const char *delay = getenv("GGUFMAP_REPACK_TEST_DELAY_US");
    en.delay_us = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
    en.flip = getenv("GGUFMAP_REPACK_TEST_FLIP");
#endif
    qsort(c->tasks, (size_t)c->n_tasks, sizeof *c->tasks, larger_first);
    gm_workers_job job = {.n_items = c->n_tasks, .n_threads = c->n_threads, .scratch_bytes = COPY_CHUNK,
                          .run = copy_task, .ctx = &en, .cancel = c->cancel,
                          .tick = c->progress ? tick : NULL, .tick_ctx = &en, .tick_ms = 200};
    int rc = gm_workers_run(&job, err);
    c->used_copy_file_range = atomic_load(&en.cfr_used) != 0;
    return rc;
}

/*
 * repack_copy.c - repack's copy engine: every tensor from its input shard to
 * its place in an output temporary, each piece checked against the bytes
 * read back from the output.
 *
 * How the bytes move.  The library's worker pool (workers.c) hands whole
 * tensors to the workers, the largest first (so the last to finish is a
 * small one), and each streams its tensor in 4 MiB pieces through a ring
 * of RING piece buffers:
 *
 *   piece k:           read it from the input into its ring slot, write it
 *                      at its output offset, and ask the kernel to start
 *                      writing it to the disk (gm_os_writeback_start);
 *   piece k-CHECK_LAG: wait until the disk has it, read it back from the
 *                      output file, compare it with the bytes still in its
 *                      slot, and drop it from the page cache
 *                      (gm_os_writeback_wait, gm_os_drop_cache).
 *
 * Why this shape: at most CHECK_LAG pieces per worker are dirty or cached
 * at any moment, so a 100 GiB output neither floods the page cache
 * (evicting what the user had there) nor waits for the dirty limit before
 * write-back starts, and the read-back of a piece costs no disk read.
 * Plain buffered writes of 8.5 GiB took 35 s of kernel time on a VM whose
 * freed memory goes back to the host; this stream took 4.6 s
 * (docs/repack.md).  The check compares bytes, which memcmp does at memory
 * speed: it used to hash both the copy and the read-back with SHA-256 and
 * compare the digests, two passes of ~1.2 GB/s per core that made repack
 * slower than cp (issue 21); keeping each piece in memory until it is read
 * back costs RING x 4 MiB per worker instead.
 *
 * Holes: each piece is a run of whole 64 KiB chunks (counted from the
 * tensor's first byte) that hold data; chunks wholly inside a hole of the
 * input are neither read nor written, so they stay holes in the output.
 * Where the system cannot say where the holes are (os.h, posix) every
 * chunk is read, and an all-zero chunk is not written: the output was sized
 * with ftruncate, so it reads back as zeros and stays a hole all the same.
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

#define COPY_CHUNK (4u << 20)
#define CHECK_LAG 4
#define RING (CHECK_LAG + 1)          /* piece buffers: the ones waiting for their check, and the next */
#define READBACK_CHUNK (1u << 20)     /* read back and compared this much at a time */
#define WORKER_SCRATCH ((size_t)RING * COPY_CHUNK + READBACK_CHUNK)

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

/* Copies one piece.  The check needs the bytes in memory, so they are
 * always read into buf (the piece's ring slot); the kernel then copies them
 * with gm_os_copy_range where it can (a reflink on XFS or Btrfs: no data
 * moves), else buf is written.  The second read of the input costs little:
 * it comes from the page cache the first one filled. */
static int copy_piece(engine *en, const rp_task *t, const piece *p, uint8_t *buf, ggufmap_error *e) {
    int dfd = en->c->out[t->shard].fd, sys;
    uint64_t in = t->src_off + p->rel, out = t->dst_off + p->rel;
    size_t done = 0, written = 0;
    if ((sys = read_piece(t->src_fd, buf, p->len, in)))
        return gm_fail_errno(e, sys, "%s: read at offset %llu (tensor '%s')", t->src_path, (unsigned long long)in,
                             t->name);
    GM_TEST_INPUT_READ(t->src_path);
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

/* The first byte where a and b (n bytes) differ; n when none. */
static size_t first_difference(const uint8_t *a, const uint8_t *b, size_t n) {
    size_t i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* Waits for one written piece to reach the disk, reads it back from the
 * output (READBACK_CHUNK at a time, into rb) and compares it with the
 * bytes written, still in the piece's slot; then lets its pages go. */
static int check_piece(engine *en, const rp_task *t, const piece *p, const uint8_t *written, uint8_t *rb,
                       ggufmap_error *e) {
    const gm_tempfile *o = &en->c->out[t->shard];
    uint64_t out = t->dst_off + p->rel;
    int sys = atomic_load(&en->use_sfr) ? gm_os_writeback_wait(o->fd, out, p->len) : GM_OS_UNSUPPORTED;
    if (sys > 0)
        return gm_fail_errno(e, sys, "%s: writing offset %llu (tensor '%s') to the disk", o->tmp,
                             (unsigned long long)out, t->name);
    if (sys == GM_OS_UNSUPPORTED) atomic_store(&en->use_sfr, 0);
    for (size_t done = 0; done < p->len;) {
        size_t k = p->len - done < READBACK_CHUNK ? p->len - done : READBACK_CHUNK;
        if ((sys = read_piece(o->fd, rb, k, out + done)))
            return gm_fail_errno(e, sys, "%s: read back at offset %llu (tensor '%s')", o->tmp,
                                 (unsigned long long)(out + done), t->name);
        if (memcmp(rb, written + done, k) != 0) {
            size_t at = first_difference(rb, written + done, k);
            return gm_fail(e, GGUFMAP_EFORMAT,
                           "%s: offset %llu: tensor '%s': read-back check failed: byte 0x%02x read back where 0x%02x "
                           "was written (byte %llu of the tensor)",
                           en->c->final_path[t->shard], (unsigned long long)(out + done + at), t->name, rb[at],
                           written[done + at], (unsigned long long)(p->rel + done + at));
        }
        done += k;
    }
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

/* The pieces written but not yet read back, oldest first: piece i of the
 * ring has its bytes in slot i of the worker's scratch. */
typedef struct lag_ring {
    piece p[RING];
    unsigned head, queued;
    uint8_t *slots;   /* RING x COPY_CHUNK */
    uint8_t *rb;      /* READBACK_CHUNK, for reading back */
} lag_ring;

static uint8_t *slot(const lag_ring *ring, unsigned i) { return ring->slots + (size_t)i * COPY_CHUNK; }

/* Checks the oldest piece waiting and frees its slot. */
static int check_oldest(engine *en, const rp_task *t, lag_ring *ring, ggufmap_error *e) {
    int rc = check_piece(en, t, &ring->p[ring->head], slot(ring, ring->head), ring->rb, e);
    ring->head = (ring->head + 1) % RING;
    ring->queued--;
    return rc;
}

/* Copies the pieces of one run of data [s, stop) of task t, each into the
 * ring's free slot, and checks each CHECK_LAG pieces later. */
static int copy_run(engine *en, const rp_task *t, uint64_t s, uint64_t stop, lag_ring *ring, bool *flip,
                    ggufmap_error *e) {
    int rc;
    while (s < stop) {
        if (en->c->cancel && *en->c->cancel) return gm_fail(e, GGUFMAP_EIO, "interrupted by a signal");
        piece p = {s - t->src_off, stop - s < COPY_CHUNK ? (size_t)(stop - s) : COPY_CHUNK};
        unsigned at = (ring->head + ring->queued) % RING; /* free: at most CHECK_LAG are queued */
        if ((rc = copy_piece(en, t, &p, slot(ring, at), e))) return rc;
#ifdef GGUFMAP_TEST_HOOKS
        if (*flip && (rc = flip_byte(en, t, &p, e))) return rc;
        if (en->delay_us) nanosleep(&(struct timespec){en->delay_us / 1000000u, (long)(en->delay_us % 1000000u) * 1000L}, NULL);
#endif
        *flip = false;
        if (atomic_load(&en->use_sfr)) gm_os_writeback_start(en->c->out[t->shard].fd, t->dst_off + p.rel, p.len);
        ring->p[at] = p;
        ring->queued++;
        if (ring->queued > CHECK_LAG && (rc = check_oldest(en, t, ring, e))) return rc;
        atomic_fetch_add(&en->done, p.len);
        s += p.len;
    }
    return GGUFMAP_OK;
}

/* Copies and checks task i (a worker-pool item; scratch is the worker's
 * WORKER_SCRATCH bytes: the ring's slots, then the read-back buffer). */
static int copy_task(void *ctx, int64_t i, uint8_t *scratch, ggufmap_error *e) {
    engine *en = ctx;
    const rp_task *t = &en->c->tasks[i];
    const uint64_t ch = GGUFMAP_SPARSE_CHUNK, base = t->src_off, end = base + t->size;
    lag_ring ring = {.head = 0, .slots = scratch, .rb = scratch + (size_t)RING * COPY_CHUNK};
    bool flip = en->flip && strcmp(en->flip, t->name) == 0;
    int rc = GGUFMAP_OK;
    uint64_t pos = base, s, stop;
    while (!rc && pos < end && gm_next_data_run(t->src_fd, base, end, ch, pos, &s, &stop)) {
        atomic_fetch_add(&en->done, s - pos);
        rc = copy_run(en, t, s, stop, &ring, &flip, e);
        pos = stop;
    }
    if (!rc) atomic_fetch_add(&en->done, end - pos); /* a hole up to the end */
    while (!rc && ring.queued > 0) rc = check_oldest(en, t, &ring, e);
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
    gm_workers_job job = {.n_items = c->n_tasks, .n_threads = c->n_threads, .scratch_bytes = WORKER_SCRATCH,
                          .run = copy_task, .ctx = &en, .cancel = c->cancel,
                          .tick = c->progress ? tick : NULL, .tick_ctx = &en, .tick_ms = 200};
    int rc = gm_workers_run(&job, err);
    c->used_copy_file_range = atomic_load(&en.cfr_used) != 0;
    return rc;
}

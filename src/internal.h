/*
 * internal.h - helpers shared by the library's modules; not installed.
 */
#ifndef GGUFMAP_INTERNAL_H
#define GGUFMAP_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ggufmap/error.h"
#include "ggufmap/source.h"

#if defined(__GNUC__)
#define GM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GM_PRINTF(a, b)
#endif

/* Fills err (if not NULL) with status and a formatted message; returns status. */
int gm_fail(ggufmap_error *err, int status, const char *fmt, ...) GM_PRINTF(3, 4);

/* Like gm_fail for GGUFMAP_EIO/ENOSPC/EEXIST: appends strerror(sys_errno). */
int gm_fail_errno(ggufmap_error *err, int sys_errno, const char *fmt, ...) GM_PRINTF(3, 4);

/* ---- source.c, for the model module and byte-exact comparisons ---- */

/* Sets the shard index of every tensor of src (the model module numbers them). */
void gm_source_set_shard(ggufmap_source *src, uint32_t shard);
/* Index of the pair whose key is exactly these len bytes (NULs included), or
 * -1.  For comparing two files' metadata pair by pair (verify); a lookup of
 * a key's meaning uses ggufmap_source_find_kv, ggml's rule. */
int64_t gm_source_find_kv_bytes(const ggufmap_source *src, const char *key, size_t len);

/* ---- fileio.c ---- */

/* pread/pwrite of all n bytes at pos, through short counts and EINTR.
 * Return 0, an errno, or (reading) GM_SHORT_FILE when the file ends first;
 * a write that moves nothing reports ENOSPC. */
#define GM_SHORT_FILE (-1)
int gm_pread_full(int fd, void *buf, size_t n, uint64_t pos);
int gm_pwrite_full(int fd, const void *buf, size_t n, uint64_t pos);

/* The next run at or after pos of whole chunks (chunk bytes, counted from
 * base; the last one may end at end) that hold data: [*start, *stop).  A
 * chunk that straddles a hole's edge is in the run, zeros and all, so the
 * run covers every byte of data.  False when only holes remain. */
bool gm_next_data_run(int fd, uint64_t base, uint64_t end, uint64_t chunk, uint64_t pos, uint64_t *start,
                      uint64_t *stop);

/* ---- fileio.c: a file that changes while a command reads it ----
 *
 * What identifies a local input from its open to the end of a command:
 * its device and inode (the path still names the same file), its size and
 * its modification time (nobody truncated, extended or rewrote it).  A
 * digest, a copy or a comparison of a file that changed meanwhile mixes
 * two files: hash, verify and repack refuse to give it (exit 2). */
typedef struct gm_file_identity {
    bool known;               /* false: not a local file (nothing to check) */
    uint64_t dev, ino, size;
    int64_t mtime_s;
    long mtime_ns;
} gm_file_identity;

/* The identity of the file open at fd (known false when fstat fails). */
void gm_file_identity_read(int fd, gm_file_identity *id);
/* GGUFMAP_OK when the file open at fd, and the file path names, are still
 * the one *was describes; else GGUFMAP_EIO with a message saying what
 * changed ("PATH: changed while being read: its size went from A to B
 * bytes").  Nothing to check (OK) when !was->known. */
int gm_file_check_unchanged(const char *path, int fd, const gm_file_identity *was, ggufmap_error *err);
/* (source.c) A local source's identity when it was opened; NULL for a
 * remote one. */
const gm_file_identity *gm_source_identity(const ggufmap_source *src);
/* (model.c) gm_file_check_unchanged on every shard of a model. */
struct ggufmap_model;
int gm_model_check_unchanged(const struct ggufmap_model *m, ggufmap_error *err);

#ifdef GGUFMAP_TEST_HOOKS
/* Test hook: after an input piece of path is read (hash, verify, repack;
 * only of the path GGUFMAP_TEST_INPUT_FILE when that is set),
 * GGUFMAP_TEST_INPUT_CHANGE changes the file as another process could:
 * "truncate:N" (to N bytes), "write:OFFSET" (one byte flipped in place),
 * "replace:OTHER" (OTHER renamed onto path).  Each is harmless to repeat. */
void gm_test_input_read(const char *path);
#define GM_TEST_INPUT_READ(path) gm_test_input_read(path)
#else
#define GM_TEST_INPUT_READ(path) ((void)0)
#endif

/* Whether all n bytes at p are zero (hash.c, beside its zero page): the
 * sparse digest leaves such chunks out, and repack does not write them. */
bool gm_all_zero(const uint8_t *p, size_t n);

/* ---- fileio.c: every output file goes the same way ----
 *
 *   gm_temp_create   PATH.tmp-XXXXXX beside PATH, created O_EXCL with mode
 *                    0666 (the kernel applies the process's umask), refused
 *                    when PATH exists;
 *   ... the caller writes through t.fd ...
 *   gm_temp_commit   fsync, close, rename onto PATH without replacing it
 *                    (gm_os_rename_noreplace), fsync the folder;
 *   gm_temp_discard  on any failure: close and remove the temporary file.
 *
 * A caller that puts several files in place together (repack's shards)
 * uses gm_temp_sync_close on each, then gm_place_file and gm_sync_parent. */
typedef struct gm_tempfile {
    char *tmp;        /* the temporary path (malloc'd), NULL once placed or discarded */
    const char *path; /* the final path (borrowed) */
    int fd;           /* open for reading and writing, -1 once closed */
} gm_tempfile;

int gm_temp_create(gm_tempfile *t, const char *path, ggufmap_error *err);
int gm_temp_sync_close(gm_tempfile *t, ggufmap_error *err);
int gm_temp_commit(gm_tempfile *t, ggufmap_error *err);
void gm_temp_discard(gm_tempfile *t);
/* Renames tmp onto path unless path exists (gm_os_rename_noreplace).
 * Returns 0 or an error naming path. */
int gm_place_file(const char *tmp, const char *path, ggufmap_error *err);
/* fsyncs the folder holding path (so a rename into it is durable). */
void gm_sync_parent(const char *path);

/* ---- workers.c: the one worker pool (hash, repack) ---- */

#define GM_WORKERS_MAX 64u
/* Workers for a request: requested (at most GM_WORKERS_MAX), or without one
 * (0) the CPUs online, at most 4. */
unsigned gm_workers_count(unsigned requested);

typedef struct gm_workers_job {
    int64_t n_items;
    unsigned n_threads;                 /* 0: gm_workers_count's default */
    size_t scratch_bytes;               /* a buffer of this size per worker (0: none) */
    /* Does item i; returns 0 or a status with err filled.  Called from the
     * workers, several at once. */
    int (*run)(void *ctx, int64_t item, uint8_t *scratch, ggufmap_error *err);
    void *ctx;
    volatile sig_atomic_t *cancel;      /* no new item once non-zero (NULL: never) */
    void (*tick)(void *tick_ctx);       /* from the calling thread while waiting, and once at the end */
    void *tick_ctx;
    unsigned tick_ms;                   /* 0: 100 */
} gm_workers_job;

/* Runs every item of job.  Returns GGUFMAP_OK; the first item's error (the
 * others stop taking items); or GGUFMAP_EIO "interrupted by a signal" when
 * *job->cancel was set and no item failed. */
int gm_workers_run(const gm_workers_job *job, ggufmap_error *err);

/* ---- memory ---- */

/* The system page size (sysconf), 4096 when it cannot be read (fileio.c). */
uint64_t gm_page_size(void);

/* ---- time ---- */

/* CLOCK_MONOTONIC in nanoseconds: the one clock for durations. */
static inline uint64_t gm_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- key-value pairs ---- */

/* Two pairs are equal when every byte of their keys and encoded values and
 * their types and counts are: the one comparison behind verify and repack's
 * read-back check. */
static inline bool gm_kv_equal(const ggufmap_kv *a, const ggufmap_kv *b) {
    return a->key_len == b->key_len && memcmp(a->key, b->key, (size_t)a->key_len) == 0 && a->type == b->type &&
           a->elem_type == b->elem_type && a->count == b->count && a->value_size == b->value_size &&
           memcmp(a->value, b->value, (size_t)a->value_size) == 0;
}

/* "1.50 GiB", "512 B" into buf; returns buf. */
const char *gm_fmt_bytes(char *buf, size_t cap, uint64_t bytes);
/* "47674.92 MiB", as llama.cpp prints buffer sizes; returns buf. */
const char *gm_fmt_mib(char *buf, size_t cap, uint64_t bytes);

/* A metadata value as text, strings escaped for a terminal (format.c):
 * "\"Qwen3\"", 7, [str x 262144] ["<pad>", ...]; arrays shortened to their
 * first elements unless full. */
struct ggufmap_kv;
void gm_print_kv_value(FILE *out, const struct ggufmap_kv *kv, bool full);
/* How two values of one key differ, into buf: both values, or for arrays the
 * counts and the first element that differs ("element 3: 7 vs 8"). */
const char *gm_fmt_kv_difference(char *buf, size_t cap, const struct ggufmap_kv *a, const struct ggufmap_kv *b);

/* Little-endian loads from possibly unaligned bytes of a mapping. */
static inline uint16_t gm_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t gm_le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t gm_le64(const uint8_t *p) { return (uint64_t)gm_le32(p) | ((uint64_t)gm_le32(p + 4) << 32); }

/* Round x up to a multiple of the power of two n, wrapping like GGML_PAD on overflow. */
static inline uint64_t gm_pad(uint64_t x, uint64_t n) { return (x + n - 1) & ~(n - 1); }

/* a * b into *out, or false when the product does not fit 64 bits. */
static inline bool gm_mul_ok(uint64_t a, uint64_t b, uint64_t *out) {
    if (a != 0 && b > UINT64_MAX / a) return false;
    *out = a * b;
    return true;
}

/* The largest buffer fit computes (64 PiB): beyond it no machine holds the
 * context, and sums of a few hundred such sizes still fit 64 bits. */
#define GM_FIT_MAX_BYTES (1ull << 56)

/* x rounded down / up to a multiple of n (any n > 0: page sizes are given by
 * users, not only powers of two). */
static inline uint64_t gm_floor_to(uint64_t x, uint64_t n) { return x - x % n; }
static inline uint64_t gm_ceil_to(uint64_t x, uint64_t n) { return x % n ? x + n - x % n : x; }

/* FNV-1a over bytes: the hash behind duplicate detection and name lookup. */
static inline uint64_t gm_hash_bytes(const void *data, size_t len) {
    const uint8_t *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* ------------------------------------------------------------------------ */
/* Open-addressing hash table of (bytes, length) -> index.                   */
/* The key bytes are not copied: they must outlive the table (they live in   */
/* the file mapping).  Used for O(1) duplicate checks and lookups by name.   */
/* ------------------------------------------------------------------------ */
typedef struct gm_hashtab {
    struct gm_slot { const char *key; size_t len; int64_t value; } *slots;
    size_t capacity; /* power of two, or 0 */
    size_t count;
} gm_hashtab;

/* Sizes the table for n entries. Returns 0 or GGUFMAP_ENOMEM. */
int gm_hashtab_init(gm_hashtab *t, size_t n);
void gm_hashtab_free(gm_hashtab *t);
/* Inserts key -> value unless present. Returns the existing value (>= 0) if
 * the key is present, -1 when inserted, -2 when out of room (never happens if
 * init was given the final count). */
int64_t gm_hashtab_insert(gm_hashtab *t, const char *key, size_t len, int64_t value);
/* The value for key, or -1. */
int64_t gm_hashtab_find(const gm_hashtab *t, const char *key, size_t len);

#endif

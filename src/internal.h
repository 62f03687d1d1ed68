/*
 * internal.h - helpers shared by the library's modules; not installed.
 */
#ifndef GGUFMAP_INTERNAL_H
#define GGUFMAP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggufmap/error.h"

#if defined(__GNUC__)
#define GM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GM_PRINTF(a, b)
#endif

/* Fills err (if not NULL) with status and a formatted message; returns status. */
int gm_fail(ggufmap_error *err, int status, const char *fmt, ...) GM_PRINTF(3, 4);

/* Like gm_fail for GGUFMAP_EIO/ENOSPC/EEXIST: appends strerror(sys_errno). */
int gm_fail_errno(ggufmap_error *err, int sys_errno, const char *fmt, ...) GM_PRINTF(3, 4);

/* ---- fileio.c ---- */

/* pread/pwrite of all n bytes at pos, through short counts and EINTR.
 * Return 0, an errno, or (reading) GM_SHORT_FILE when the file ends first;
 * a write that moves nothing reports ENOSPC. */
#define GM_SHORT_FILE (-1)
int gm_pread_full(int fd, void *buf, size_t n, uint64_t pos);
int gm_pwrite_full(int fd, const void *buf, size_t n, uint64_t pos);

/* The first byte of data at or after pos, at most end (end when only a hole
 * follows; pos when the file system cannot tell: then all is data). */
uint64_t gm_next_data(int fd, uint64_t pos, uint64_t end);
/* The first hole after pos, at most end (the end of the file counts). */
uint64_t gm_next_hole(int fd, uint64_t pos, uint64_t end);
/* The next run at or after pos of whole chunks (chunk bytes, counted from
 * base; the last one may end at end) that hold data: [*start, *stop).  A
 * chunk that straddles a hole's edge is in the run, zeros and all, so the
 * run covers every byte of data.  False when only holes remain. */
bool gm_next_data_run(int fd, uint64_t base, uint64_t end, uint64_t chunk, uint64_t pos, uint64_t *start,
                      uint64_t *stop);

/* Renames tmp onto path unless path exists (RENAME_NOREPLACE, or link +
 * unlink where the file system lacks it).  Returns 0 or an error naming path. */
int gm_place_file(const char *tmp, const char *path, ggufmap_error *err);
/* fsyncs the folder holding path (so a rename into it is durable). */
void gm_sync_parent(const char *path);

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

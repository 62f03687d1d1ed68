/*
 * corpus.h - small helpers shared by ggufmap-corpus (writes the corpus) and
 * ggufmap-corpus-check (compares our reader with llama.cpp on it).
 */
#ifndef GGUFMAP_TESTS_CORPUS_H
#define GGUFMAP_TESTS_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte buffer.  Allocation failure ends the program: these are
 * test tools and the corpus is small. */
typedef struct cbuf {
    uint8_t *p;
    size_t n, cap;
} cbuf;

static inline void cbuf_reserve(cbuf *b, size_t extra) {
    if (b->n + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    b->p = p;
    b->cap = cap;
}

static inline void cbuf_put(cbuf *b, const void *src, size_t len) {
    if (len == 0) return;
    cbuf_reserve(b, len);
    memcpy(b->p + b->n, src, len);
    b->n += len;
}

static inline void cbuf_zeros(cbuf *b, size_t len) {
    cbuf_reserve(b, len);
    memset(b->p + b->n, 0, len);
    b->n += len;
}

static inline void cbuf_free(cbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Little-endian scalars (the corpus is written on and for little-endian hosts,
 * but the encoding is explicit so the files are the same everywhere). */
static inline void le_store(uint8_t *dst, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) dst[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t le_load(const uint8_t *src, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)src[i] << (8 * i);
    return v;
}

static inline void cbuf_u8(cbuf *b, uint8_t v) { cbuf_put(b, &v, 1); }
static inline void cbuf_u16(cbuf *b, uint16_t v) {
    uint8_t t[2];
    le_store(t, v, 2);
    cbuf_put(b, t, 2);
}
static inline void cbuf_u32(cbuf *b, uint32_t v) {
    uint8_t t[4];
    le_store(t, v, 4);
    cbuf_put(b, t, 4);
}
static inline void cbuf_u64(cbuf *b, uint64_t v) {
    uint8_t t[8];
    le_store(t, v, 8);
    cbuf_put(b, t, 8);
}
static inline void cbuf_i32(cbuf *b, int32_t v) { cbuf_u32(b, (uint32_t)v); }
static inline void cbuf_i64(cbuf *b, int64_t v) { cbuf_u64(b, (uint64_t)v); }
/* A GGUF string: u64 length, then the bytes. */
static inline void cbuf_str(cbuf *b, const char *s, size_t len) {
    cbuf_u64(b, (uint64_t)len);
    cbuf_put(b, s, len);
}

#endif

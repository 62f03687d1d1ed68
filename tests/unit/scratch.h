/*
 * scratch.h - a fresh scratch folder per test program, and small helpers to
 * write models with the library's writer.
 */
#ifndef GGUFMAP_TESTS_SCRATCH_H
#define GGUFMAP_TESTS_SCRATCH_H

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"

static char scratch_dir[512];

/* Empties (non-recursively) or creates dir and remembers it. */
static inline void scratch_init(const char *dir) {
    snprintf(scratch_dir, sizeof scratch_dir, "%s", dir);
    mkdir(dir, 0755);
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        exit(2);
    }
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
}

static inline const char *scratch_path(char *buf, size_t cap, const char *name) {
    snprintf(buf, cap, "%s/%s", scratch_dir, name);
    return buf;
}

/* Number of entries in the scratch folder (to catch stray temporary files). */
static inline int scratch_count(void) {
    DIR *d = opendir(scratch_dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

/* Deterministic non-zero bytes for tensor data: byte k of tensor seed. */
static inline uint8_t pattern_byte(uint64_t seed, uint64_t k) {
    uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ (k * 0xBF58476D1CE4E5B9ull);
    x ^= x >> 31;
    return (uint8_t)(x | 1);
}

static inline int pattern_fill(void *ctx, uint64_t offset, void *dst, size_t len) {
    uint64_t seed = (uint64_t)(uintptr_t)ctx;
    uint8_t *p = dst;
    for (size_t i = 0; i < len; i++) p[i] = pattern_byte(seed, offset + i);
    return 0;
}

static inline ggufmap_data pattern_data(uint64_t seed) {
    ggufmap_data d = {.kind = GGUFMAP_DATA_CALLBACK, .fill = pattern_fill, .ctx = (void *)(uintptr_t)seed};
    return d;
}

static inline long file_size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Reads a whole file into a malloc'd buffer; *len gets its size. */
static inline uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static inline int spit(const char *path, const uint8_t *p, size_t len) {
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, len, f);
    return fclose(f) == 0 && w == len ? 0 : -1;
}

#endif

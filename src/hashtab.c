/*
 * hashtab.c - a fixed-capacity open-addressing table of byte strings.
 *
 * Workload: one insert per key or tensor name while a file is parsed (to catch
 * duplicates as ggml does, but in O(1) rather than ggml's O(n) scan), then
 * lookups by name.  The final count is known before the first insert, so the
 * table never grows; load factor stays <= 1/2 and linear probing is enough.
 */
#include <stdlib.h>

#include "internal.h"

int gm_hashtab_init(gm_hashtab *t, size_t n) {
    size_t cap = 16;
    while (cap < 2 * n + 1) {
        if (cap > SIZE_MAX / 4) return GGUFMAP_ENOMEM;
        cap *= 2;
    }
    t->slots = calloc(cap, sizeof *t->slots);
    if (!t->slots) return GGUFMAP_ENOMEM;
    t->capacity = cap;
    t->count = 0;
    return GGUFMAP_OK;
}

void gm_hashtab_free(gm_hashtab *t) {
    free(t->slots);
    t->slots = NULL;
    t->capacity = t->count = 0;
}

static size_t probe(const gm_hashtab *t, const char *key, size_t len, int *found) {
    size_t mask = t->capacity - 1;
    size_t i = (size_t)gm_hash_bytes(key, len) & mask;
    for (;;) {
        const struct gm_slot *s = &t->slots[i];
        if (!s->key) { *found = 0; return i; }
        if (s->len == len && memcmp(s->key, key, len) == 0) { *found = 1; return i; }
        i = (i + 1) & mask;
    }
}

int64_t gm_hashtab_insert(gm_hashtab *t, const char *key, size_t len, int64_t value) {
    if (t->capacity == 0 || 2 * (t->count + 1) > t->capacity) return -2;
    int found;
    size_t i = probe(t, key, len, &found);
    if (found) return t->slots[i].value;
    /* An empty key would read as a free slot; give it a non-NULL pointer. */
    t->slots[i].key = key ? key : "";
    t->slots[i].len = len;
    t->slots[i].value = value;
    t->count++;
    return -1;
}

int64_t gm_hashtab_find(const gm_hashtab *t, const char *key, size_t len) {
    if (t->capacity == 0) return -1;
    int found;
    size_t i = probe(t, key, len, &found);
    return found ? t->slots[i].value : -1;
}

/*
 * regex_cache.c - the answers of -ot pattern searches on tensor names,
 * remembered across the placements that share a cache
 * (ggufmap_regex_cache, ggufmap/placement.h).
 *
 * Workload.  `plan`'s next steps place the same model a dozen times or more
 * (a repack dry run with its candidate orders, a bisection over -ngl and
 * --n-cpu-moe), each time with the user's -ot patterns in front: without
 * a memory, every placement searches every pattern in every name again,
 * and a costly pattern (`.*.*.*.*.*x`: 10^6 steps per name) costs 13-17
 * times what one placement costs.  With the cache each pattern is searched
 * once per distinct name; a placement after the first only looks answers
 * up.
 *
 * Data structure.  The names met so far, each copied once (repack's
 * candidate layouts are other files whose names die with them), in a hash
 * table name -> index; per pattern and dialect a memo: one byte per name
 * index (0 not searched yet, 1 no, 2 yes).  Errors (a search given up) are
 * not kept: they end the placement, and the next one that reaches them
 * searches again and fails the same way.
 *
 * Fidelity.  An answer depends only on the pattern's bytes, the dialect and
 * the name's bytes, which are the keys; the search itself is
 * gm_regex_search with the default budget, as without the cache.
 */
#include <stdlib.h>

#include "internal.h"
#include "regex.h"

enum { ANSWER_UNKNOWN = 0, ANSWER_NO = 1, ANSWER_YES = 2 };

struct gm_regex_memo {
    ggufmap_regex_cache *cache;
    ggufmap_regex_dialect dialect;
    char *pattern;
    size_t len;
    uint8_t *answer;   /* per name index */
    size_t n_answer;   /* entries allocated */
};

struct ggufmap_regex_cache {
    gm_hashtab names;  /* name bytes -> index; keys are the copies below */
    char **name_copy;
    size_t n_names, cap_names;
    gm_regex_memo **memos;
    size_t n_memos, cap_memos;
};

int ggufmap_regex_cache_new(ggufmap_regex_cache **out) {
    ggufmap_regex_cache *c = *out = calloc(1, sizeof *c);
    if (!c || gm_hashtab_init(&c->names, 64)) {
        free(c);
        *out = NULL;
        return GGUFMAP_ENOMEM;
    }
    return GGUFMAP_OK;
}

void ggufmap_regex_cache_free(ggufmap_regex_cache *c) {
    if (!c) return;
    for (size_t i = 0; i < c->n_memos; i++) {
        free(c->memos[i]->pattern);
        free(c->memos[i]->answer);
        free(c->memos[i]);
    }
    for (size_t i = 0; i < c->n_names; i++) free(c->name_copy[i]);
    free(c->memos);
    free(c->name_copy);
    gm_hashtab_free(&c->names);
    free(c);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */
/* ------------------------------------------------------------------------ */

/* Twice the room, every name inserted again (the table does not grow). */
static bool grow_names(ggufmap_regex_cache *c) {
    gm_hashtab bigger;
    if (gm_hashtab_init(&bigger, 2 * c->n_names + 64)) return false;
    for (size_t i = 0; i < c->n_names; i++) gm_hashtab_insert(&bigger, c->name_copy[i], strlen(c->name_copy[i]), (int64_t)i);
    gm_hashtab_free(&c->names);
    c->names = bigger;
    return true;
}

/* The index of name s[0, n) (NUL-free: llama.cpp's C string), added when
 * new; -1 when out of memory. */
static int64_t name_index(ggufmap_regex_cache *c, const char *s, size_t n) {
    int64_t i = gm_hashtab_find(&c->names, s, n);
    if (i >= 0) return i;
    if (2 * (c->names.count + 1) > c->names.capacity && !grow_names(c)) return -1;
    if (c->n_names == c->cap_names) {
        size_t cap = c->cap_names ? 2 * c->cap_names : 256;
        char **more = realloc(c->name_copy, cap * sizeof *more);
        if (!more) return -1;
        c->name_copy = more;
        c->cap_names = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy) return -1;
    memcpy(copy, s, n);
    copy[n] = '\0';
    c->name_copy[c->n_names] = copy;
    gm_hashtab_insert(&c->names, copy, n, (int64_t)c->n_names);
    return (int64_t)c->n_names++;
}

/* ------------------------------------------------------------------------ */
/* Memos                                                                     */
/* ------------------------------------------------------------------------ */

gm_regex_memo *gm_regex_memo_of(ggufmap_regex_cache *c, const char *pattern, size_t len,
                                ggufmap_regex_dialect dialect) {
    if (!c) return NULL;
    for (size_t i = 0; i < c->n_memos; i++) {
        gm_regex_memo *m = c->memos[i];
        if (m->dialect == dialect && m->len == len && memcmp(m->pattern, pattern, len) == 0) return m;
    }
    if (c->n_memos == c->cap_memos) {
        size_t cap = c->cap_memos ? 2 * c->cap_memos : 8;
        gm_regex_memo **more = realloc(c->memos, cap * sizeof *more);
        if (!more) return NULL;
        c->memos = more;
        c->cap_memos = cap;
    }
    gm_regex_memo *m = calloc(1, sizeof *m);
    if (!m || !(m->pattern = malloc(len + 1))) {
        free(m);
        return NULL;
    }
    memcpy(m->pattern, pattern, len);
    m->pattern[len] = '\0';
    m->len = len;
    m->dialect = dialect;
    m->cache = c;
    c->memos[c->n_memos++] = m;
    return m;
}

/* The answer slot of name index i, made room for; NULL when out of memory. */
static uint8_t *answer_slot(gm_regex_memo *m, int64_t i) {
    if ((size_t)i >= m->n_answer) {
        size_t n = m->n_answer ? m->n_answer : 256;
        while (n <= (size_t)i) n *= 2;
        uint8_t *more = realloc(m->answer, n);
        if (!more) return NULL;
        memset(more + m->n_answer, ANSWER_UNKNOWN, n - m->n_answer);
        m->answer = more;
        m->n_answer = n;
    }
    return &m->answer[i];
}

int gm_regex_memo_search(gm_regex_memo *m, const gm_regex *re, const char *s, size_t n, gm_regex_error *err) {
    int64_t i = m ? name_index(m->cache, s, n) : -1;
    uint8_t *slot = i >= 0 ? answer_slot(m, i) : NULL;
    if (slot && *slot != ANSWER_UNKNOWN) return *slot == ANSWER_YES ? GM_REGEX_MATCH : GM_REGEX_NOMATCH;
    int r = gm_regex_search(re, s, n, 0, err);
    if (slot && (r == GM_REGEX_MATCH || r == GM_REGEX_NOMATCH)) *slot = r == GM_REGEX_MATCH ? ANSWER_YES : ANSWER_NO;
    return r;
}

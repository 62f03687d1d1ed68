/*
 * regex_driver.c - our engine's answers for the corpus, in probe.cpp's
 * format, so that check.sh can compare them with the real libraries'.
 *
 * usage: regex-driver [--why] libstdc++|libc++ PATTERNS NAMES
 *        regex-driver --random SEED COUNT
 *        regex-driver --budget
 * For pattern i: "i ok BITS" (1 found, 0 not, C libc++'s error_complexity),
 * "i reject CODE", or "i hang" (the step budget ran out on some name).
 * --why adds the position and reason of a refusal, for people.
 * The files are read as corpus_text.h reads them.
 * --random writes COUNT random patterns (a pattern file) from SEED: half
 * of them token soup from ECMAScript's and other languages' pieces, half
 * built as trees of groups, lookaheads, quantifiers and back-references
 * to groups that exist, the constructs whose semantics the engines model.
 * --budget prints the step budget of one search (GM_REGEX_STEP_BUDGET):
 * check.sh gives it to the libstdc++ probe, which counts the same steps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regex.h"

typedef struct text {
    char *s;
    size_t n;
} text;

typedef struct list {
    text *items;
    size_t n, cap;
} list;

static int hex_value(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes "X" lines' escapes in place; returns the new length or -1. */
static long unescape(char *s, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') {
            s[o++] = s[i];
            continue;
        }
        if (++i == n) return -1;
        char c = s[i];
        if (c == 'n') s[o++] = '\n';
        else if (c == 'r') s[o++] = '\r';
        else if (c == 't') s[o++] = '\t';
        else if (c == '\\') s[o++] = '\\';
        else if (c == 'x' && i + 2 < n && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
            s[o++] = (char)(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 2;
        } else return -1;
    }
    return (long)o;
}

static int read_list(const char *path, char kind, list *out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "regex-driver: cannot read %s\n", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = 0;
    for (size_t no = 1; rc == 0 && (len = getline(&line, &cap, f)) >= 0; no++) {
        if (len > 0 && line[len - 1] == '\n') len--;
        if (len < 2 || line[1] != ' ' || (line[0] != kind && line[0] != 'X')) continue;
        char *s = malloc((size_t)len - 1);
        long n = len - 2;
        if (!s) { rc = -1; break; }
        memcpy(s, line + 2, (size_t)n);
        if (line[0] == 'X' && (n = unescape(s, (size_t)n)) < 0) {
            fprintf(stderr, "regex-driver: %s:%zu: bad escape\n", path, no);
            free(s);
            rc = -1;
            break;
        }
        s[n] = '\0';
        if (out->n == out->cap) {
            out->cap = out->cap ? 2 * out->cap : 64;
            out->items = realloc(out->items, out->cap * sizeof *out->items);
            if (!out->items) { free(s); rc = -1; break; }
        }
        out->items[out->n++] = (text){s, (size_t)n};
    }
    free(line);
    fclose(f);
    return rc;
}

static void answer(size_t i, const text *pattern, const list *names, ggufmap_regex_dialect d, int why) {
    gm_regex *re;
    gm_regex_error err = {0};
    int rc = gm_regex_compile(pattern->s, pattern->n, d, &re, &err);
    if (rc != 0) {
        if (why) printf("%zu reject %s at %zu: %s\n", i, err.code, err.position, err.reason);
        else printf("%zu reject %s\n", i, rc == 4 ? err.code : "ENOMEM");
        return;
    }
    char *bits = malloc(names->n + 1);
    int hang = 0;
    for (size_t k = 0; k < names->n && bits && !hang; k++) {
        int r = gm_regex_search(re, names->items[k].s, names->items[k].n, 0, &err);
        bits[k] = r == GM_REGEX_MATCH ? '1' : r == GM_REGEX_NOMATCH ? '0' : r == GM_REGEX_ECOMPLEXITY ? 'C' : '?';
        hang = r == GM_REGEX_EBUDGET; /* the probe's answer for the whole pattern: stop here */
    }
    if (bits) bits[names->n] = '\0';
    if (hang) printf("%zu hang\n", i);
    else printf("%zu ok %s\n", i, bits ? bits : "(out of memory)");
    free(bits);
    gm_regex_free(re);
}

/* ------------------------------------------------------------------------ */
/* Random patterns                                                           */
/* ------------------------------------------------------------------------ */

static uint64_t rng_state;

static unsigned rnd(unsigned n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

#define PICK(arr) (arr)[rnd(sizeof(arr) / sizeof((arr)[0]))]

static void soup(char *out, size_t cap) {
    static const char *const pieces[] = {
        "a", "b", "k", ".", "l", "_", "\\.", "\\d", "\\w", "\\W", "\\s", "\\D", "[a-c]", "[^a]", "[\\w.]", "[.]",
        "\\b", "\\B", "^", "$", "\\1", "\\2", "(?=a)", "(?!b)", "(?=", "(?!", "(", "(?:", ")", "|", "[", "]", "{",
        "}", "*", "+", "?", "{2}", "{1,}", "{0,2}", "{,", "*?", "+?", "??", "\\", "\\x61", "\\u0062", "\\cA",
        "\\h", "\\0", "blk", "exps", "\\.ffn_", "[[:alpha:]]", "[[:w:]]", "[]", "[^]", "-", "[a-]", "[-a]",
        "[\\d-z]", "a{1", "e", "w", "(?i)", "\\_", "[z-a]", "\\N",
    };
    out[0] = '\0';
    for (unsigned i = 0, n = 1 + rnd(8); i < n; i++) strncat(out, PICK(pieces), cap - strlen(out) - 1);
}

static void tree(char *out, size_t cap, unsigned depth, unsigned *groups);

static void tree_atom(char *out, size_t cap, unsigned depth, unsigned *groups) {
    static const char *const leaves[] = {"a", "b", ".", "\\b", "^", "$", "[ab]", "k", "l", "", "\\.", "_", "\\w", "e"};
    static const char *const opens[] = {"(", "(", "(?:", "(?=", "(?!"};
    static const char *const quants[] = {"", "", "", "*", "+", "?", "*?", "+?", "??", "{2}", "{0,1}", "{1,3}", "{2,}"};
    unsigned r = rnd(100);
    if (depth < 3 && r < 30) {
        const char *open = PICK(opens);
        if (strcmp(open, "(") == 0) ++*groups;
        strncat(out, open, cap - strlen(out) - 1);
        tree(out, cap, depth + 1, groups);
        strncat(out, ")", cap - strlen(out) - 1);
    } else if (r < 45 && *groups > 0) {
        char ref[16];
        snprintf(ref, sizeof ref, "\\%u", 1 + rnd(*groups));
        strncat(out, ref, cap - strlen(out) - 1);
    } else {
        strncat(out, PICK(leaves), cap - strlen(out) - 1);
    }
    strncat(out, PICK(quants), cap - strlen(out) - 1);
}

static void tree(char *out, size_t cap, unsigned depth, unsigned *groups) {
    for (unsigned alt = 0, n_alts = rnd(4) ? 1 : 2 + rnd(2); alt < n_alts; alt++) {
        if (alt) strncat(out, "|", cap - strlen(out) - 1);
        for (unsigned k = 0, n = rnd(5); k < n; k++) tree_atom(out, cap, depth, groups);
    }
}

static int random_patterns(const char *seed, const char *count) {
    rng_state = strtoull(seed, NULL, 10) * 2654435761u + 88172645463325252ull;
    long n = strtol(count, NULL, 10);
    char pattern[512];
    printf("# regex-driver --random %s %s\n", seed, count);
    for (long i = 0; i < n; i++) {
        unsigned groups = 0;
        pattern[0] = '\0';
        if (i % 2) tree(pattern, sizeof pattern, 0, &groups);
        else soup(pattern, sizeof pattern);
        printf("P %s\n", pattern);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "--random") == 0) return random_patterns(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "--budget") == 0) return printf("%u\n", GM_REGEX_STEP_BUDGET) > 0 ? 0 : 1;
    int why = argc > 1 && strcmp(argv[1], "--why") == 0;
    if (argc != 4 + why || (strcmp(argv[1 + why], "libstdc++") != 0 && strcmp(argv[1 + why], "libc++") != 0)) {
        fprintf(stderr, "usage: regex-driver [--why] libstdc++|libc++ PATTERNS NAMES\n");
        return 2;
    }
    ggufmap_regex_dialect d = strcmp(argv[1 + why], "libc++") == 0 ? GGUFMAP_REGEX_LIBCXX : GGUFMAP_REGEX_LIBSTDCXX;
    list patterns = {0}, names = {0};
    if (read_list(argv[2 + why], 'P', &patterns) || read_list(argv[3 + why], 'N', &names)) return 2;
    for (size_t i = 0; i < patterns.n; i++) answer(i, &patterns.items[i], &names, d, why);
    for (size_t i = 0; i < patterns.n; i++) free(patterns.items[i].s);
    for (size_t i = 0; i < names.n; i++) free(names.items[i].s);
    free(patterns.items);
    free(names.items);
    return fflush(stdout) == 0 ? 0 : 1;
}

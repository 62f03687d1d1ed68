/*
 * regex.c - the regex front door: a compiled pattern is one of the two
 * engines (regex_libstdcxx.c, regex_libcxx.c), chosen by dialect; and what
 * both engines share: the "C" locale's character classes and the names
 * regex_traits knows for classes ([[:alpha:]]) and collating elements
 * ([[.hyphen.]]).
 *
 * The tables are data: the POSIX names of the portable character set, as
 * each library's regex_traits lists them (libstdc++ in its lookup_collatename,
 * libc++ in src/regex.cpp's collation table); which names each knows was
 * observed with a probe program compiled against each (tests/regex).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "regex.h"

/* Literal runs that every match must contain, for a quick no (below). */
#define REQUIRED_MAX 8
#define REQUIRED_LEN 24

struct gm_regex {
    ggufmap_regex_dialect dialect;
    gm_rx_libstdcxx *gnu; /* exactly one of the two is set */
    gm_rx_libcxx *llvm;
    unsigned n_required;
    unsigned char required_len[REQUIRED_MAX];
    char required[REQUIRED_MAX][REQUIRED_LEN];
};

/* ------------------------------------------------------------------------ */
/* The quick no                                                              */
/* ------------------------------------------------------------------------ */

/* A placement searches every tensor name with every override pattern, and
 * repack's family of placements does so hundreds of times: an --n-cpu-moe
 * pattern (blk\.(0|1|...)\.ffn_(up|down|gate|gate_up)_(ch|)exps) on a
 * 400-layer model costs seconds in the engines.  Most names cannot match:
 * they lack a literal the pattern requires ("exps").  So a compiled pattern
 * keeps the literal runs of its top level (outside groups and classes), and
 * a name that lacks one is a no without running the engine.
 *
 * That answer must be the library's, errors included: a library can give
 * up (libc++'s error_complexity) or run away (libstdc++) on a name it would
 * not match.  So the quick no is kept only for patterns on which neither
 * can happen: no quantifier at all (*, +, ?, {), and few alternative paths
 * (the product of the groups' alternatives at most 4096): the engines then
 * take at most a few steps per path and start position.  Anything the
 * scanner is not sure of (a '|' at the top level, an unclosed group, a
 * class that starts with ']', non-ASCII bytes) leaves the pattern without
 * required literals: the engine answers as before. */
typedef struct literal_scan {
    gm_regex *re;
    char run[REQUIRED_LEN];
    size_t run_len;
} literal_scan;

static void end_run(literal_scan *ls) {
    gm_regex *re = ls->re;
    if (ls->run_len && re->n_required < REQUIRED_MAX) {
        memcpy(re->required[re->n_required], ls->run, ls->run_len);
        re->required_len[re->n_required++] = (unsigned char)ls->run_len;
    }
    ls->run_len = 0;
}

static void add_literal(literal_scan *ls, char c) {
    if (ls->run_len < REQUIRED_LEN) ls->run[ls->run_len++] = c; /* a prefix of a required run is required */
}

/* The end of the class that starts at p[i] == '[', or 0 when unsure. */
static size_t class_end(const char *p, size_t n, size_t i) {
    size_t j = i + 1;
    if (j < n && p[j] == '^') j++;
    if (j >= n || p[j] == ']') return 0; /* "[]" and "[]a]" mean different things to the two libraries */
    for (; j < n; j++) {
        if (p[j] == '\\') {
            j++;
        } else if (p[j] == '[' && j + 1 < n && strchr(":.=", p[j + 1]) && p[j + 1]) { /* [:alpha:] [.a.] [=a=] */
            char kind = p[j + 1];
            for (j += 2; j + 1 < n && !(p[j] == kind && p[j + 1] == ']'); j++) {}
            if (j + 1 >= n) return 0;
            j++;
        } else if (p[j] == ']') {
            return j;
        }
    }
    return 0;
}

/* Fills re's required literals from the n bytes at p, or leaves none. */
static void find_required(gm_regex *re, const char *p, size_t n) {
    literal_scan ls = {.re = re};
    unsigned alts[64], depth = 0;
    double paths = 1;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\\') {
            if (++i >= n) goto unsure;
            if (depth == 0 && p[i] && strchr("^$\\.*+?()[]{}|/", p[i])) {
                add_literal(&ls, p[i]);
            } else { /* a class, an assertion, a back-reference, a code (\x41, \u0141, \cA): no literal */
                end_run(&ls);
                while (i + 1 < n && isalnum((unsigned char)p[i + 1])) i++;
            }
        } else if (c == '[') {
            end_run(&ls);
            if (!(i = class_end(p, n, i))) goto unsure;
        } else if (c == '(') {
            end_run(&ls);
            if (depth == 64) goto unsure;
            alts[depth++] = 1;
            if (i + 1 < n && p[i + 1] == '?') i += 2; /* (?: (?= (?! */
        } else if (c == ')') {
            end_run(&ls);
            if (depth == 0 || (paths *= alts[--depth]) > 4096) goto unsure;
        } else if (c == '|') {
            end_run(&ls);
            if (depth == 0) goto unsure;
            alts[depth - 1]++;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            goto unsure;
        } else if (depth == 0 && (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f && !strchr(".^$]}", c)) {
            add_literal(&ls, c);
        } else {
            end_run(&ls);
        }
    }
    end_run(&ls);
    if (depth == 0) return;
unsure:
    re->n_required = 0;
}

/* Whether the n bytes at s hold every required literal of re. */
static bool has_required(const gm_regex *re, const char *s, size_t n) {
    for (unsigned k = 0; k < re->n_required; k++) {
        const char *lit = re->required[k];
        size_t len = re->required_len[k], at = 0;
        while (at + len <= n && memcmp(s + at, lit, len) != 0) at++;
        if (at + len > n) return false;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Compile, search, free                                                     */
/* ------------------------------------------------------------------------ */

const char *gm_regex_dialect_name(ggufmap_regex_dialect dialect) {
    return dialect == GGUFMAP_REGEX_LIBCXX ? "libc++" : "libstdc++";
}

int gm_regex_compile(const char *pattern, size_t n, ggufmap_regex_dialect dialect, gm_regex **out,
                     gm_regex_error *err) {
    *out = NULL;
    if (n > GM_REGEX_MAX_PATTERN)
        return gm_rx_refuse(err, GM_REGEX_MAX_PATTERN, "error_space",
                            "pattern longer than %u bytes (ggufmap's limit)", GM_REGEX_MAX_PATTERN);
    gm_regex *re = calloc(1, sizeof *re);
    if (!re) return GGUFMAP_ENOMEM;
    re->dialect = dialect == GGUFMAP_REGEX_LIBCXX ? GGUFMAP_REGEX_LIBCXX : GGUFMAP_REGEX_LIBSTDCXX;
    int rc = re->dialect == GGUFMAP_REGEX_LIBCXX ? gm_rx_libcxx_compile(pattern, n, &re->llvm, err)
                                                 : gm_rx_libstdcxx_compile(pattern, n, &re->gnu, err);
    if (rc != GGUFMAP_OK) {
        free(re);
        return rc;
    }
    find_required(re, pattern, n);
    *out = re;
    return GGUFMAP_OK;
}

int gm_regex_search(const gm_regex *re, const char *s, size_t n, uint64_t max_steps, gm_regex_error *err) {
    if (max_steps == 0) max_steps = GM_REGEX_STEP_BUDGET;
    if (!has_required(re, s, n)) return GM_REGEX_NOMATCH;
    return re->llvm ? gm_rx_libcxx_search(re->llvm, s, n, max_steps, err)
                    : gm_rx_libstdcxx_search(re->gnu, s, n, max_steps, err);
}

void gm_regex_free(gm_regex *re) {
    if (!re) return;
    gm_rx_libstdcxx_free(re->gnu);
    gm_rx_libcxx_free(re->llvm);
    free(re);
}

bool gm_rx_grow(void *items, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return true;
    void *old, *grown;
    memcpy(&old, items, sizeof old); /* items is a T ** of some T */
    size_t want = *cap ? 2 * *cap : 16;
    if (!(grown = realloc(old, want * size))) return false;
    memcpy(items, &grown, sizeof grown);
    *cap = want;
    return true;
}

int gm_rx_refuse(gm_regex_error *err, size_t offset, const char *code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->reason, sizeof err->reason, fmt, ap);
        va_end(ap);
        err->position = offset + 1;
        err->code = code;
    }
    return GGUFMAP_EINVAL;
}

/* ------------------------------------------------------------------------ */
/* Character classes of the "C" locale                                       */
/* ------------------------------------------------------------------------ */

static unsigned ctype_of(unsigned char c) {
    unsigned m = 0;
    if (c >= 'A' && c <= 'Z') m |= GM_RX_UPPER | GM_RX_ALPHA | GM_RX_ALNUM;
    if (c >= 'a' && c <= 'z') m |= GM_RX_LOWER | GM_RX_ALPHA | GM_RX_ALNUM;
    if (c >= '0' && c <= '9') m |= GM_RX_DIGIT | GM_RX_ALNUM | GM_RX_XDIGIT;
    if ((c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f')) m |= GM_RX_XDIGIT;
    if (c == ' ' || (c >= '\t' && c <= '\r')) m |= GM_RX_SPACE;
    if (c == ' ' || c == '\t') m |= GM_RX_BLANK;
    if (c < 32 || c == 127) m |= GM_RX_CNTRL;
    if (c >= 32 && c <= 126) m |= GM_RX_PRINT;
    if (c >= 33 && c <= 126) m |= GM_RX_GRAPH;
    if ((m & GM_RX_GRAPH) && !(m & GM_RX_ALNUM)) m |= GM_RX_PUNCT;
    return m;
}

bool gm_rx_isctype(unsigned char c, unsigned mask) {
    return (ctype_of(c) & mask) != 0 || (c == '_' && (mask & GM_RX_UNDERSCORE));
}

unsigned gm_rx_classname(const char *name, size_t n) {
    static const struct { const char *name; unsigned mask; } classes[] = {
        {"d", GM_RX_DIGIT},       {"w", GM_RX_WORD},        {"s", GM_RX_SPACE},       {"alnum", GM_RX_ALNUM},
        {"alpha", GM_RX_ALPHA},   {"blank", GM_RX_BLANK},   {"cntrl", GM_RX_CNTRL},   {"digit", GM_RX_DIGIT},
        {"graph", GM_RX_GRAPH},   {"lower", GM_RX_LOWER},   {"print", GM_RX_PRINT},   {"punct", GM_RX_PUNCT},
        {"space", GM_RX_SPACE},   {"upper", GM_RX_UPPER},   {"xdigit", GM_RX_XDIGIT},
    };
    char folded[8];
    if (n == 0 || n >= sizeof folded) return 0;
    for (size_t i = 0; i < n; i++) folded[i] = (char)gm_rx_tolower((unsigned char)name[i]);
    folded[n] = '\0';
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (strcmp(folded, classes[i].name) == 0) return classes[i].mask;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Collating element names                                                   */
/* ------------------------------------------------------------------------ */

enum { IN_GNU = 1, IN_LLVM = 2, IN_BOTH = 3 };

typedef struct collate_name {
    const char *name;
    unsigned char c;
    unsigned char where;
} collate_name;

/* Every name but the single letters (both libraries list A-Z and a-z as
 * themselves). */
static const collate_name collate_names[] = {
    {"NUL", 0, IN_BOTH},
    {"SOH", 1, IN_GNU},
    {"STX", 2, IN_GNU},
    {"ETX", 3, IN_GNU},
    {"EOT", 4, IN_GNU},
    {"ENQ", 5, IN_GNU},
    {"ACK", 6, IN_GNU},
    {"alert", 7, IN_BOTH},
    {"backspace", 8, IN_BOTH},
    {"tab", 9, IN_BOTH},
    {"newline", 10, IN_BOTH},
    {"vertical-tab", 11, IN_BOTH},
    {"form-feed", 12, IN_BOTH},
    {"carriage-return", 13, IN_BOTH},
    {"SO", 14, IN_GNU},
    {"SI", 15, IN_GNU},
    {"DLE", 16, IN_GNU},
    {"DC1", 17, IN_GNU},
    {"DC2", 18, IN_GNU},
    {"DC3", 19, IN_GNU},
    {"DC4", 20, IN_GNU},
    {"NAK", 21, IN_GNU},
    {"SYN", 22, IN_GNU},
    {"ETB", 23, IN_GNU},
    {"CAN", 24, IN_GNU},
    {"EM", 25, IN_GNU},
    {"SUB", 26, IN_GNU},
    {"ESC", 27, IN_GNU},
    {"IS4", 28, IN_GNU},
    {"IS3", 29, IN_GNU},
    {"IS2", 30, IN_GNU},
    {"IS1", 31, IN_GNU},
    {"space", ' ', IN_BOTH},
    {"exclamation-mark", '!', IN_BOTH},
    {"quotation-mark", '"', IN_BOTH},
    {"number-sign", '#', IN_BOTH},
    {"dollar-sign", '$', IN_BOTH},
    {"percent-sign", '%', IN_BOTH},
    {"ampersand", '&', IN_BOTH},
    {"apostrophe", '\'', IN_BOTH},
    {"left-parenthesis", '(', IN_BOTH},
    {"right-parenthesis", ')', IN_BOTH},
    {"asterisk", '*', IN_BOTH},
    {"plus-sign", '+', IN_BOTH},
    {"comma", ',', IN_BOTH},
    {"hyphen", '-', IN_BOTH},
    {"hyphen-minus", '-', IN_LLVM},
    {"period", '.', IN_BOTH},
    {"full-stop", '.', IN_LLVM},
    {"slash", '/', IN_BOTH},
    {"solidus", '/', IN_LLVM},
    {"zero", '0', IN_BOTH},
    {"one", '1', IN_BOTH},
    {"two", '2', IN_BOTH},
    {"three", '3', IN_BOTH},
    {"four", '4', IN_BOTH},
    {"five", '5', IN_BOTH},
    {"six", '6', IN_BOTH},
    {"seven", '7', IN_BOTH},
    {"eight", '8', IN_BOTH},
    {"nine", '9', IN_BOTH},
    {"colon", ':', IN_BOTH},
    {"semicolon", ';', IN_BOTH},
    {"less-than-sign", '<', IN_BOTH},
    {"equals-sign", '=', IN_BOTH},
    {"greater-than-sign", '>', IN_BOTH},
    {"question-mark", '?', IN_BOTH},
    {"commercial-at", '@', IN_BOTH},
    {"left-square-bracket", '[', IN_BOTH},
    {"backslash", '\\', IN_BOTH},
    {"reverse-solidus", '\\', IN_LLVM},
    {"right-square-bracket", ']', IN_BOTH},
    {"circumflex", '^', IN_BOTH},
    {"circumflex-accent", '^', IN_LLVM},
    {"underscore", '_', IN_BOTH},
    {"low-line", '_', IN_LLVM},
    {"grave-accent", '`', IN_BOTH},
    {"left-curly-bracket", '{', IN_BOTH},
    {"left-brace", '{', IN_LLVM},
    {"vertical-line", '|', IN_BOTH},
    {"right-curly-bracket", '}', IN_BOTH},
    {"right-brace", '}', IN_LLVM},
    {"tilde", '~', IN_BOTH},
    {"DEL", 127, IN_GNU},
};

int gm_rx_collatename(const char *name, size_t n, ggufmap_regex_dialect dialect) {
    unsigned where = dialect == GGUFMAP_REGEX_LIBCXX ? IN_LLVM : IN_GNU;
    if (n == 1 && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')))
        return (unsigned char)name[0];
    for (size_t i = 0; i < sizeof collate_names / sizeof collate_names[0]; i++)
        if ((collate_names[i].where & where) && strlen(collate_names[i].name) == n &&
            memcmp(collate_names[i].name, name, n) == 0)
            return collate_names[i].c;
    /* libc++: a name it does not know is taken as itself when the "C"
     * locale's collation turns it into one character, i.e. any single
     * character (regex_traits::__lookup_collatename). */
    if (where == IN_LLVM && n == 1) return (unsigned char)name[0];
    return -1;
}

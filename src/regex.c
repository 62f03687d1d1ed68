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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "regex.h"

struct gm_regex {
    ggufmap_regex_dialect dialect;
    gm_rx_libstdcxx *gnu; /* exactly one of the two is set */
    gm_rx_libcxx *llvm;
};

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
    *out = re;
    return GGUFMAP_OK;
}

int gm_regex_search(const gm_regex *re, const char *s, size_t n, uint64_t max_steps, gm_regex_error *err) {
    if (max_steps == 0) max_steps = GM_REGEX_STEP_BUDGET;
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

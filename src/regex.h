/*
 * regex.h - ECMAScript regular expressions as llama.cpp's std::regex sees
 * them; internal to the library (not installed).
 *
 * llama.cpp v0.5.0 compiles every -ot pattern with std::regex (ECMAScript
 * grammar, default flags) and tests a tensor with std::regex_search
 * (src/llama-model-loader.cpp:1238-1239).  std::regex is header-template
 * code: the language a build of llama.cpp accepts is that of the C++
 * standard library headers it was compiled with, and the two that matter
 * differ:
 *
 *   GGUFMAP_REGEX_LIBSTDCXX  GNU libstdc++ as in GCC 11.4, the headers the
 *                            prebuilt Linux llama.cpp (our oracle) used;
 *   GGUFMAP_REGEX_LIBCXX     LLVM libc++ (observed: Debian's libc++ 14),
 *                            what macOS builds, hence Metal users, get.
 *
 * Each dialect is its own engine (regex_libstdcxx.c, regex_libcxx.c) that
 * builds the automaton the library builds, with the same construction
 * steps, and runs it with the library's search algorithm, so that the
 * accepted language, the error each refused pattern raises, and the match
 * semantics (backtracking order, loops over empty matches, captures and
 * back-references, lookaheads, anchors, the libraries' known quirks) are
 * the library's.  docs/regex.md lists the differences and how they were
 * measured.  The character classes are those of the "C" locale, which is
 * the locale std::regex uses in llama.cpp (it never sets a C++ locale).
 *
 * Work is bounded: libc++ gives up a search with error_complexity after
 * 4096 x (characters left) steps at one start position, which the libc++
 * engine counts exactly as libc++ does; libstdc++ has no limit (a pattern
 * such as "(a*)*b" backtracks exponentially and llama.cpp does not finish
 * loading), so both engines also stop at GM_REGEX_STEP_BUDGET steps for
 * one search and report it.
 */
#ifndef GGUFMAP_REGEX_H
#define GGUFMAP_REGEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufmap/placement.h"

/* Steps (automaton states visited) one gm_regex_search may take before it
 * stops with GM_REGEX_EBUDGET.  In the libstdc++ engine a step is one call
 * of libstdc++'s _M_dfs, and the count is libstdc++'s own (the regex tests'
 * probe counts the real library's calls and finds the same numbers), so
 * the verdict does not depend on any machine's speed.  An ordinary -ot
 * pattern takes well under a thousand on a tensor name; "(a*)*b" on 16 a's
 * takes libstdc++ over 10^8. */
#define GM_REGEX_STEP_BUDGET 10000000u

/* Patterns longer than this, or nesting groups deeper than
 * GM_REGEX_MAX_NESTING, are refused (the libraries recurse per nesting
 * level, and libstdc++ per term, without a limit). */
#define GM_REGEX_MAX_PATTERN 65536u
#define GM_REGEX_MAX_NESTING 1000u

typedef struct gm_regex gm_regex;

/* Why a pattern was refused or a search given up. */
typedef struct gm_regex_error {
    size_t position;  /* 1-based byte position in the pattern; 0 for search errors */
    const char *code; /* the std::regex_constants::error_type the library throws
                         ("error_paren", ...), or "step_budget" */
    char reason[240]; /* one line, for people */
} gm_regex_error;

/* Results of gm_regex_search. */
enum {
    GM_REGEX_NOMATCH = 0,
    GM_REGEX_MATCH = 1,
    GM_REGEX_ECOMPLEXITY = -1, /* libc++ throws error_complexity */
    GM_REGEX_EBUDGET = -2,     /* more than GM_REGEX_STEP_BUDGET steps */
    GM_REGEX_ENOMEM = -3
};

/* Compiles the n bytes at pattern as std::regex(pattern) compiles them in
 * the given dialect (GGUFMAP_REGEX_AUTO is taken as libstdc++).  Returns
 * GGUFMAP_OK with *out set, GGUFMAP_EINVAL when the library refuses the
 * pattern (err says where and why, with the library's error code), or
 * GGUFMAP_ENOMEM. */
int gm_regex_compile(const char *pattern, size_t n, ggufmap_regex_dialect dialect, gm_regex **out,
                     gm_regex_error *err);

/* std::regex_search over the n bytes at s: GM_REGEX_MATCH or
 * GM_REGEX_NOMATCH, or a negative GM_REGEX_E* with err filled.  max_steps
 * is the step budget (0: GM_REGEX_STEP_BUDGET).  Thread-safe for a shared
 * compiled regex: all scratch memory is the call's own. */
int gm_regex_search(const gm_regex *re, const char *s, size_t n, uint64_t max_steps, gm_regex_error *err);

void gm_regex_free(gm_regex *re);

/* ---- regex_cache.c: answers remembered across placements ---- */

/* One pattern's answers in a ggufmap_regex_cache (ggufmap/placement.h). */
typedef struct gm_regex_memo gm_regex_memo;

/* The memo of the len bytes at pattern in this dialect, made on first use;
 * NULL when cache is NULL or memory runs out (searches then just run). */
gm_regex_memo *gm_regex_memo_of(ggufmap_regex_cache *cache, const char *pattern, size_t len,
                                ggufmap_regex_dialect dialect);
/* gm_regex_search(re, s, n, 0, err) for re, the memo's pattern compiled in
 * its dialect: the answer remembered when memo is not NULL, so each name is
 * searched once (a search given up is not remembered). */
int gm_regex_memo_search(gm_regex_memo *memo, const gm_regex *re, const char *s, size_t n, gm_regex_error *err);

/* "libstdc++" or "libc++". */
const char *gm_regex_dialect_name(ggufmap_regex_dialect dialect);

/* ------------------------------------------------------------------------ */
/* Shared by the two engines                                                 */
/* ------------------------------------------------------------------------ */

/* std::ctype<char> masks of the "C" locale (ASCII; bytes >= 0x80 are in no
 * class), plus GM_RX_UNDERSCORE: the '_' both libraries add for "w". */
enum {
    GM_RX_UPPER = 1 << 0,
    GM_RX_LOWER = 1 << 1,
    GM_RX_ALPHA = 1 << 2,
    GM_RX_DIGIT = 1 << 3,
    GM_RX_XDIGIT = 1 << 4,
    GM_RX_SPACE = 1 << 5,
    GM_RX_PRINT = 1 << 6,
    GM_RX_GRAPH = 1 << 7,
    GM_RX_BLANK = 1 << 8,
    GM_RX_CNTRL = 1 << 9,
    GM_RX_PUNCT = 1 << 10,
    GM_RX_ALNUM = 1 << 11,
    GM_RX_UNDERSCORE = 1 << 12,
    GM_RX_WORD = GM_RX_ALNUM | GM_RX_UNDERSCORE
};

/* Is byte c in any class of mask (regex_traits::isctype)? */
bool gm_rx_isctype(unsigned char c, unsigned mask);
/* The mask regex_traits::lookup_classname gives the n bytes at name (case
 * folded; both libraries know the same 15 names), or 0. */
unsigned gm_rx_classname(const char *name, size_t n);
/* The character regex_traits::lookup_collatename gives name in this
 * dialect's table (libc++ also takes any single character), or -1. */
int gm_rx_collatename(const char *name, size_t n, ggufmap_regex_dialect dialect);
/* ASCII tolower, as the "C" locale's ctype does it. */
static inline unsigned char gm_rx_tolower(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

/* A set of bytes: what a bracket expression or class escape matches. */
typedef struct gm_rx_set {
    uint64_t bits[4];
} gm_rx_set;
static inline bool gm_rx_set_has(const gm_rx_set *s, unsigned char c) { return (s->bits[c >> 6] >> (c & 63)) & 1u; }
static inline void gm_rx_set_add(gm_rx_set *s, unsigned char c) { s->bits[c >> 6] |= (uint64_t)1 << (c & 63); }

/* Makes room for one more item in a growing array: items points to the
 * array's pointer (any element type), n items are in use, *cap allocated,
 * each size bytes; doubles the allocation when full.  False when out of
 * memory (the array is left as it was). */
bool gm_rx_grow(void *items, size_t n, size_t *cap, size_t size);

/* Fills err (if not NULL) with a compile error; returns GGUFMAP_EINVAL. */
int gm_rx_refuse(gm_regex_error *err, size_t offset, const char *code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The two engines, behind gm_regex_*. */
typedef struct gm_rx_libstdcxx gm_rx_libstdcxx;
int gm_rx_libstdcxx_compile(const char *pattern, size_t n, gm_rx_libstdcxx **out, gm_regex_error *err);
int gm_rx_libstdcxx_search(const gm_rx_libstdcxx *re, const char *s, size_t n, uint64_t max_steps,
                           gm_regex_error *err);
void gm_rx_libstdcxx_free(gm_rx_libstdcxx *re);

typedef struct gm_rx_libcxx gm_rx_libcxx;
int gm_rx_libcxx_compile(const char *pattern, size_t n, gm_rx_libcxx **out, gm_regex_error *err);
int gm_rx_libcxx_search(const gm_rx_libcxx *re, const char *s, size_t n, uint64_t max_steps, gm_regex_error *err);
void gm_rx_libcxx_free(gm_rx_libcxx *re);

#endif

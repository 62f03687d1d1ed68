/*
 * regex_libcxx.c - std::regex (ECMAScript) as LLVM libc++ compiles and
 * searches it (observed: libc++ 14, <regex>).
 *
 * Data structure.  libc++ parses a pattern by recursive descent straight
 * into a chain of nodes: each node owns a "first" successor, loops and
 * alternatives also a "second".  The parser keeps __end_, the node whose
 * successor the next construct replaces.  A quantified atom becomes a
 * __loop node (counts min, max, the captures to reset per iteration)
 * whose body ends in a __repeat_one_loop node pointing back to it; an
 * alternative becomes an __alternate node whose two branches meet in an
 * empty node.  A lookahead's body is parsed as a separate regex (its own
 * capture numbering starting at 1, its own loop counters) and runs as a
 * nested match.  This file builds the same nodes in the same way, in an
 * array, with programs (the pattern and each lookahead body) as start
 * indices.
 *
 * Workload.  regex_search tries start positions 0..n-1 (not n: libc++
 * never tries the empty match at the end of a non-empty text, so "$" or
 * "x*$" never match) and at each runs __match_at_start_ecma: a stack of
 * states, each a full copy of (node, position, captures, loop counters);
 * the top state executes its node; a split (alternative, loop that may
 * repeat or leave) copies the state, the preferred branch on top; a
 * rejected state is dropped.  libc++ counts these steps per start position
 * and throws error_complexity when the count reaches a multiple of 4096
 * that is at least 4096 x (characters left), which is kept exactly here.
 *
 * Quirks kept because llama.cpp on macOS has them: "\h", "\_", "\N" and
 * every other escaped letter or digit without a meaning are refused, and
 * so are "]" and "}" outside a class, "a**" and "(?i)"; "[]" is empty,
 * "[z-a]" is accepted and empty; "(a\1)" is accepted (the group counts
 * once opened); a back-reference inside a lookahead counts the
 * lookahead's own groups; "[\W\D]" matches what neither \w nor \d matches;
 * "[[:word:]]" is refused, "[[.-.]]" accepted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "regex.h"

#define COMPLEXITY_FACTOR 4096 /* _LIBCPP_REGEX_COMPLEXITY_FACTOR */
#define MAX_STACK_BYTES ((size_t)256 << 20)

/* ------------------------------------------------------------------------ */
/* Nodes and programs                                                        */
/* ------------------------------------------------------------------------ */

typedef enum node_kind {
    N_END,        /* __end_state: a match */
    N_EMPTY,      /* __empty_state, __empty_non_own_state */
    N_REPEAT_ONE, /* __repeat_one_loop: back to its loop (first) */
    N_LOOP,       /* __loop: first = body, second = the way out */
    N_ALT,        /* __alternate: first, second = the two branches */
    N_GROUP_BEGIN, N_GROUP_END, /* arg: capture number, from 1 */
    N_BACKREF,    /* arg: capture number */
    N_WORDB,      /* flag: \B */
    N_BOL, N_EOL,
    N_ANY,        /* __match_any_but_newline: not \n, \r */
    N_CHAR,       /* arg: the byte */
    N_SET,        /* arg: index in sets (a __bracket_expression) */
    N_LOOKAHEAD   /* arg: program; mexp: captures before it; flag: (?! */
} node_kind;

typedef struct node {
    uint8_t kind;
    bool flag;
    int32_t first, second;
    int32_t arg;
    uint32_t mexp_begin, mexp_end; /* N_LOOP: captures [begin, end) reset per iteration; N_LOOKAHEAD: mexp */
    uint64_t min, max;             /* N_LOOP; max UINT64_MAX: unbounded */
} node;

/* A basic_regex: the pattern, or a lookahead's body. */
typedef struct program {
    int32_t start;     /* its __empty_state */
    uint32_t n_marked; /* mark_count() */
    uint32_t n_loops;  /* __loop_count() */
} program;

struct gm_rx_libcxx {
    node *nodes;
    int32_t n_nodes;
    gm_rx_set *sets;
    int32_t n_sets;
    program *progs;
    int32_t n_progs;
    size_t cap_nodes, cap_sets, cap_progs;
};

void gm_rx_libcxx_free(gm_rx_libcxx *re) {
    if (!re) return;
    free(re->nodes);
    free(re->sets);
    free(re->progs);
    free(re);
}

/* ------------------------------------------------------------------------ */
/* Building the chain (basic_regex::__push_*)                                */
/* ------------------------------------------------------------------------ */

typedef struct parser {
    const char *p;
    size_t n;
    gm_rx_libcxx *re;
    int32_t end;       /* __end_ */
    uint32_t n_marked; /* __marked_count_ of the program being parsed */
    uint32_t n_loops;  /* __loop_count_ */
    uint32_t depth;
    bool nomem;
    gm_regex_error *err;
} parser;

enum { RX_ERR = -1 };

static long fail(parser *ps, size_t at, const char *code, const char *reason) {
    gm_rx_refuse(ps->err, at, code, "%s", reason);
    return RX_ERR;
}

static int oom(parser *ps) {
    ps->nomem = true;
    return RX_ERR;
}

static int32_t new_node(parser *ps, node_kind k, int32_t first) {
    gm_rx_libcxx *re = ps->re;
    if (!gm_rx_grow(&re->nodes, (size_t)re->n_nodes, &re->cap_nodes, sizeof *re->nodes)) return oom(ps);
    re->nodes[re->n_nodes] = (node){.kind = (uint8_t)k, .first = first, .second = -1};
    return re->n_nodes++;
}

/* Inserts a node after __end_ and makes it __end_; its index or RX_ERR. */
static int32_t push_node(parser *ps, node_kind k) {
    int32_t id = new_node(ps, k, ps->re->nodes[ps->end].first);
    if (id < 0) return RX_ERR;
    ps->re->nodes[ps->end].first = id;
    ps->end = id;
    return id;
}

static long push_arg(parser *ps, node_kind k, int32_t arg, size_t next) {
    int32_t id = push_node(ps, k);
    if (id < 0) return RX_ERR;
    ps->re->nodes[id].arg = arg;
    return (long)next;
}

/* __push_loop: the atom after node s becomes the body of a loop. */
static int push_loop(parser *ps, uint64_t min, uint64_t max, int32_t s, uint32_t mexp_begin, uint32_t mexp_end,
                     bool greedy) {
    int32_t e1 = new_node(ps, N_EMPTY, ps->re->nodes[ps->end].first);
    if (e1 < 0) return RX_ERR;
    ps->re->nodes[ps->end].first = -1;
    int32_t e2 = new_node(ps, N_LOOP, ps->re->nodes[s].first);
    if (e2 < 0) return RX_ERR;
    node *lp = &ps->re->nodes[e2];
    lp->second = e1;
    lp->arg = (int32_t)ps->n_loops++;
    lp->mexp_begin = mexp_begin;
    lp->mexp_end = mexp_end;
    lp->flag = greedy;
    lp->min = min;
    lp->max = max;
    ps->re->nodes[s].first = -1;
    int32_t back = new_node(ps, N_REPEAT_ONE, e2);
    if (back < 0) return RX_ERR;
    ps->re->nodes[ps->end].first = back;
    ps->end = e1;
    ps->re->nodes[s].first = e2;
    return 0;
}

/* __push_alternation: the chains after sa (up to sb) and after sb (up to
 * __end_) become the two branches of an alternative. */
static int push_alternation(parser *ps, int32_t sa, int32_t sb) {
    node *nodes;
    int32_t alt = new_node(ps, N_ALT, ps->re->nodes[sa].first);
    if (alt < 0) return RX_ERR;
    nodes = ps->re->nodes;
    nodes[alt].second = nodes[sb].first;
    nodes[sa].first = alt;
    int32_t join = new_node(ps, N_EMPTY, ps->re->nodes[ps->end].first);
    if (join < 0) return RX_ERR;
    ps->re->nodes[sb].first = join;
    int32_t from_second = new_node(ps, N_EMPTY, join);
    if (from_second < 0) return RX_ERR;
    ps->re->nodes[ps->end].first = from_second;
    ps->end = join;
    return 0;
}

static int32_t new_set(parser *ps, const gm_rx_set *set) {
    gm_rx_libcxx *re = ps->re;
    if (!gm_rx_grow(&re->sets, (size_t)re->n_sets, &re->cap_sets, sizeof *re->sets)) return oom(ps);
    re->sets[re->n_sets] = *set;
    return re->n_sets++;
}

static int32_t new_program(parser *ps) {
    gm_rx_libcxx *re = ps->re;
    if (!gm_rx_grow(&re->progs, (size_t)re->n_progs, &re->cap_progs, sizeof *re->progs)) return oom(ps);
    int32_t end = new_node(ps, N_END, -1), start = end < 0 ? -1 : new_node(ps, N_EMPTY, end);
    if (start < 0) return RX_ERR;
    re->progs[re->n_progs] = (program){start, 0, 0};
    return re->n_progs++;
}

/* ------------------------------------------------------------------------ */
/* Bracket expressions (__bracket_expression)                                */
/* ------------------------------------------------------------------------ */

/* What a __bracket_expression holds; ranges and equivalences fold into
 * chars since they test one byte each (the "C" locale has no digraphs). */
typedef struct bracket {
    gm_rx_set chars, neg_chars;
    unsigned mask, neg_mask;
    bool negate, any_neg_char;
} bracket;

static gm_rx_set bracket_set(const bracket *b) {
    gm_rx_set set = {{0}};
    bool has_neg = b->neg_mask != 0 || b->any_neg_char;
    for (int c = 0; c < 256; c++) {
        unsigned char ch = (unsigned char)c;
        bool found = gm_rx_set_has(&b->chars, ch) || gm_rx_isctype(ch, b->mask) ||
                     (has_neg && !(gm_rx_isctype(ch, b->neg_mask) || gm_rx_set_has(&b->neg_chars, ch)));
        if (found != b->negate) gm_rx_set_add(&set, ch);
    }
    return set;
}

static long push_bracket(parser *ps, const bracket *b, size_t next) {
    gm_rx_set set = bracket_set(b);
    int32_t id = new_set(ps, &set);
    return id < 0 ? RX_ERR : push_arg(ps, N_SET, id, next);
}

/* The byte after '\' in a class: \b is backspace, \d \D \s \S \w \W add
 * classes (*str stays -1), anything else is a character escape. */
static long parse_character_escape(parser *ps, size_t first, int *str);

static long parse_class_escape(parser *ps, size_t first, int *str, bracket *ml) {
    if (first == ps->n) return fail(ps, first, "error_escape", "the pattern ends after '\\'");
    char c = ps->p[first];
    *str = -1;
    switch (c) {
    case 'b': *str = 8; return (long)first + 1;
    case 'd': ml->mask |= GM_RX_DIGIT; return (long)first + 1;
    case 'D': ml->neg_mask |= GM_RX_DIGIT; return (long)first + 1;
    case 's': ml->mask |= GM_RX_SPACE; return (long)first + 1;
    case 'S': ml->neg_mask |= GM_RX_SPACE; return (long)first + 1;
    case 'w':
        ml->mask |= GM_RX_ALNUM;
        gm_rx_set_add(&ml->chars, '_');
        return (long)first + 1;
    case 'W':
        ml->neg_mask |= GM_RX_ALNUM;
        gm_rx_set_add(&ml->neg_chars, '_');
        ml->any_neg_char = true;
        return (long)first + 1;
    default: return parse_character_escape(ps, first, str);
    }
}

/* "[.name.]", "[=name=]", "[:name:]": the name runs to the first ".]"
 * (resp. "=]", ":]") anywhere after it. */
static long named_end(parser *ps, size_t first, char kind, size_t *name_len) {
    for (size_t i = first; i + 1 < ps->n; i++)
        if (ps->p[i] == kind && ps->p[i + 1] == ']') {
            *name_len = i - first;
            return (long)i + 2;
        }
    return fail(ps, first - 2, "error_brack", kind == ':' ? "'[:' is not closed by ':]'"
                                              : kind == '.' ? "'[.' is not closed by '.]'"
                                                            : "'[=' is not closed by '=]'");
}

static long parse_collating_symbol(parser *ps, size_t first, int *sym) {
    size_t len;
    long next = named_end(ps, first, '.', &len);
    if (next < 0) return RX_ERR;
    *sym = len ? gm_rx_collatename(ps->p + first, len, GGUFMAP_REGEX_LIBCXX) : -1;
    if (*sym < 0) return fail(ps, first - 2, "error_collate", "unknown collating element name");
    return next;
}

static long parse_named_class(parser *ps, size_t first, char kind, bracket *ml) {
    size_t len;
    long next = named_end(ps, first, kind, &len);
    if (next < 0) return RX_ERR;
    if (kind == ':') {
        unsigned mask = gm_rx_classname(ps->p + first, len);
        if (!mask)
            return fail(ps, first - 2, "error_ctype",
                        "unknown class name (known: alnum alpha blank cntrl d digit graph lower print punct s space upper w xdigit)");
        ml->mask |= mask;
        return next;
    }
    int ch = len ? gm_rx_collatename(ps->p + first, len, GGUFMAP_REGEX_LIBCXX) : -1;
    if (ch < 0) return fail(ps, first - 2, "error_collate", "unknown collating element name");
    gm_rx_set_add(&ml->chars, (unsigned char)ch); /* [=x=]: in the "C" locale just x */
    return next;
}

/* One end of a range, or a lone character: a collating symbol, an escape
 * or a byte.  *str is the character, or -1 when there is none (a class). */
static long range_end(parser *ps, size_t first, int *str, bracket *ml) {
    if (first + 1 < ps->n && ps->p[first] == '[' && ps->p[first + 1] == '.')
        return parse_collating_symbol(ps, first + 2, str);
    if (ps->p[first] == '\\') return parse_class_escape(ps, first + 1, str, ml);
    *str = (unsigned char)ps->p[first];
    return (long)first + 1;
}

/* __parse_expression_term: one item; returns first unchanged at ']'. */
static long parse_expression_term(parser *ps, size_t first, bracket *ml) {
    if (first == ps->n || ps->p[first] == ']') return (long)first;
    if (first + 1 < ps->n && ps->p[first] == '[' && (ps->p[first + 1] == '=' || ps->p[first + 1] == ':'))
        return parse_named_class(ps, first + 2, ps->p[first + 1], ml);
    int start, stop;
    long at = range_end(ps, first, &start, ml);
    if (at < 0) return RX_ERR;
    size_t pos = (size_t)at;
    if (pos + 1 < ps->n && ps->p[pos] == '-' && ps->p[pos + 1] != ']') {
        long to = range_end(ps, pos + 1, &stop, ml);
        if (to < 0) return RX_ERR;
        if (start < 0 || stop < 0) return fail(ps, pos, "error_range", "a range must start and end with a character");
        for (int c = start; c <= stop; c++) gm_rx_set_add(&ml->chars, (unsigned char)c); /* [z-a] is empty */
        return to;
    }
    if (start >= 0) gm_rx_set_add(&ml->chars, (unsigned char)start);
    return (long)pos;
}

static long parse_bracket_expression(parser *ps, size_t first) {
    size_t open = first++;
    if (first == ps->n) return fail(ps, open, "error_brack", "'[' is not closed");
    bracket ml = {.negate = ps->p[first] == '^'};
    if (ml.negate) first++;
    if (first == ps->n) return fail(ps, open, "error_brack", "'[' is not closed");
    long at;
    while ((at = parse_expression_term(ps, first, &ml)) != (long)first) {
        if (at < 0) return RX_ERR;
        first = (size_t)at;
    }
    if (first == ps->n) return fail(ps, open, "error_brack", "'[' is not closed");
    if (ps->p[first] == '-') {
        gm_rx_set_add(&ml.chars, '-');
        first++;
    }
    if (first == ps->n || ps->p[first] != ']') return fail(ps, open, "error_brack", "'[' is not closed");
    return push_bracket(ps, &ml, first + 1);
}

/* ------------------------------------------------------------------------ */
/* Escapes                                                                   */
/* ------------------------------------------------------------------------ */

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    unsigned char l = (unsigned char)(c | 0x20); /* libc++'s __to_lower */
    return l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
}

static long escaped_char(parser *ps, int *str, int ch, size_t next) {
    if (str) {
        *str = ch;
        return (long)next;
    }
    return push_arg(ps, N_CHAR, ch, next);
}

/* \xHH, \uHHHH (the low byte kept): first is at the 'x' or 'u'. */
static long hex_escape(parser *ps, size_t first, int *str) {
    int digits = ps->p[first] == 'u' ? 4 : 2;
    unsigned sum = 0;
    for (int i = 1; i <= digits; i++) {
        int d = first + (size_t)i < ps->n ? hex_digit(ps->p[first + (size_t)i]) : -1;
        if (d < 0) return fail(ps, first - 1, "error_escape", digits == 2 ? "'\\x' needs two hex digits" : "'\\u' needs four hex digits");
        sum = 16 * sum + (unsigned)d;
    }
    return escaped_char(ps, str, (unsigned char)sum, first + (size_t)digits + 1);
}

/* __parse_character_escape at the byte after '\': a control escape, \cX,
 * \x, \u, \0, or a byte that is neither a letter, a digit nor '_'.  With
 * str the character is returned there instead of pushed. */
static long parse_character_escape(parser *ps, size_t first, int *str) {
    static const char from[] = "fnrtv0", to[] = "\f\n\r\t\v\0";
    char c = ps->p[first];
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit) return escaped_char(ps, str, (unsigned char)to[hit - from], first + 1);
    if (c == 'c') {
        char l = first + 1 < ps->n ? ps->p[first + 1] : 0;
        if (!((l >= 'A' && l <= 'Z') || (l >= 'a' && l <= 'z')))
            return fail(ps, first - 1, "error_escape", "'\\c' must be followed by a letter");
        return escaped_char(ps, str, l % 32, first + 2);
    }
    if (c == 'x' || c == 'u') return hex_escape(ps, first, str);
    if (c == '_' || gm_rx_isctype((unsigned char)c, GM_RX_ALNUM))
        return fail(ps, first - 1, "error_escape",
                    "escaped letter, digit or '_' without a meaning in ECMAScript (libc++ refuses it)");
    return escaped_char(ps, str, (unsigned char)c, first + 1);
}

/* __parse_decimal_escape: \0, or a back-reference to a group opened so far. */
static long parse_decimal_escape(parser *ps, size_t first) {
    char c = ps->p[first];
    if (c == '0') return push_arg(ps, N_CHAR, 0, first + 1);
    if (c < '1' || c > '9') return (long)first;
    unsigned v = (unsigned)(c - '0');
    size_t i = first + 1;
    for (; i < ps->n && ps->p[i] >= '0' && ps->p[i] <= '9'; i++) {
        if (v >= 0xffffffffu / 10) return fail(ps, first - 1, "error_backref", "back-reference number too large");
        v = 10 * v + (unsigned)(ps->p[i] - '0');
    }
    if (v > ps->n_marked) return fail(ps, first - 1, "error_backref", "back-reference to a group not opened yet");
    return push_arg(ps, N_BACKREF, (int32_t)v, i);
}

/* __parse_character_class_escape: \d \D \s \S \w \W as one-item classes. */
static long parse_class_letter(parser *ps, size_t first) {
    bracket ml = {0};
    switch (ps->p[first]) {
    case 'D': ml.negate = true; /* fall through */
    case 'd': ml.mask = GM_RX_DIGIT; break;
    case 'S': ml.negate = true; /* fall through */
    case 's': ml.mask = GM_RX_SPACE; break;
    case 'W': ml.negate = true; /* fall through */
    case 'w':
        ml.mask = GM_RX_ALNUM;
        gm_rx_set_add(&ml.chars, '_');
        break;
    default: return (long)first;
    }
    return push_bracket(ps, &ml, first + 1);
}

static long parse_atom_escape(parser *ps, size_t first) {
    size_t t1 = first + 1;
    if (t1 == ps->n) return fail(ps, first, "error_escape", "the pattern ends with '\\'");
    long t2 = parse_decimal_escape(ps, t1);
    if (t2 != (long)t1) return t2;
    if ((t2 = parse_class_letter(ps, t1)) != (long)t1) return t2;
    return parse_character_escape(ps, t1, NULL);
}

/* ------------------------------------------------------------------------ */
/* Atoms, assertions, quantifiers, alternatives                              */
/* ------------------------------------------------------------------------ */

static long parse_ecma_exp(parser *ps, size_t first);

static int enter(parser *ps, size_t at) {
    if (++ps->depth > GM_REGEX_MAX_NESTING) {
        fail(ps, at, "ggufmap_limit", "groups nested more than 1000 deep (ggufmap's limit)");
        return RX_ERR;
    }
    return 0;
}

/* ( ... ) and (?: ... ); first is at '('. */
static long parse_group(parser *ps, size_t first) {
    size_t open = first++;
    if (first == ps->n) return fail(ps, open, "error_paren", "the pattern ends with '('");
    bool capture = !(first + 1 < ps->n && ps->p[first] == '?' && ps->p[first + 1] == ':');
    uint32_t number = 0;
    if (capture) {
        number = ++ps->n_marked;
        if (push_arg(ps, N_GROUP_BEGIN, (int32_t)number, 0) < 0) return RX_ERR;
    } else {
        first += 2;
    }
    if (enter(ps, open)) return RX_ERR;
    long at = parse_ecma_exp(ps, first);
    if (at < 0) return RX_ERR;
    if ((size_t)at == ps->n || ps->p[at] != ')') return fail(ps, open, "error_paren", "'(' is not closed");
    ps->depth--;
    if (capture && push_arg(ps, N_GROUP_END, (int32_t)number, 0) < 0) return RX_ERR;
    return at + 1;
}

static long parse_atom(parser *ps, size_t first) {
    if (first == ps->n) return (long)first;
    switch (ps->p[first]) {
    case '.': return push_arg(ps, N_ANY, 0, first + 1);
    case '\\': return parse_atom_escape(ps, first);
    case '[': return parse_bracket_expression(ps, first);
    case '(': return parse_group(ps, first);
    case '*': case '+': case '?': case '{':
        return fail(ps, first, "error_badrepeat", "quantifier with nothing to repeat");
    case '^': case '$': case ')': case ']': case '}': case '|':
        return (long)first; /* not a pattern character: the caller stops here */
    default: return push_arg(ps, N_CHAR, (unsigned char)ps->p[first], first + 1);
    }
}

/* (?= ... ) and (?! ... ): the body is a regex of its own. */
static long parse_lookahead(parser *ps, size_t first, bool invert) {
    parser outer = *ps;
    int32_t prog = new_program(ps);
    if (prog < 0) return RX_ERR;
    ps->end = ps->re->progs[prog].start;
    ps->n_marked = ps->n_loops = 0;
    if (enter(ps, first)) return RX_ERR;
    long at = parse_ecma_exp(ps, first + 3);
    if (at < 0) return RX_ERR;
    ps->re->progs[prog].n_marked = ps->n_marked;
    ps->re->progs[prog].n_loops = ps->n_loops;
    uint32_t inner = ps->n_marked;
    ps->end = outer.end;
    ps->n_marked = outer.n_marked;
    ps->n_loops = outer.n_loops;
    ps->depth = outer.depth;
    int32_t id = push_node(ps, N_LOOKAHEAD);
    if (id < 0) return RX_ERR;
    node *la = &ps->re->nodes[id];
    la->arg = prog;
    la->flag = invert;
    la->mexp_begin = ps->n_marked;
    ps->n_marked += inner;
    if ((size_t)at == ps->n || ps->p[at] != ')') return fail(ps, first, "error_paren", "'(?=' or '(?!' is not closed");
    return at + 1;
}

static long parse_assertion(parser *ps, size_t first) {
    if (first == ps->n) return (long)first;
    const char *p = ps->p;
    size_t n = ps->n;
    switch (p[first]) {
    case '^': return push_arg(ps, N_BOL, 0, first + 1);
    case '$': return push_arg(ps, N_EOL, 0, first + 1);
    case '\\':
        if (first + 1 < n && (p[first + 1] == 'b' || p[first + 1] == 'B')) {
            if (push_arg(ps, N_WORDB, 0, 0) < 0) return RX_ERR;
            ps->re->nodes[ps->end].flag = p[first + 1] == 'B';
            return (long)first + 2;
        }
        return (long)first;
    case '(':
        if (first + 2 < n && p[first + 1] == '?' && (p[first + 2] == '=' || p[first + 2] == '!'))
            return parse_lookahead(ps, first, p[first + 2] == '!');
        return (long)first;
    default: return (long)first;
    }
}

static long parse_dup_count(parser *ps, size_t first, uint64_t *count) {
    if (first == ps->n || ps->p[first] < '0' || ps->p[first] > '9') return (long)first;
    int c = ps->p[first++] - '0';
    for (; first < ps->n && ps->p[first] >= '0' && ps->p[first] <= '9'; first++) {
        if (c >= 0x7fffffff / 10) return fail(ps, first, "error_badbrace", "count too large");
        c = c * 10 + (ps->p[first] - '0');
    }
    *count = (uint64_t)c;
    return (long)first;
}

/* {m}, {m,}, {m,n}: first is after '{'. */
static long parse_interval(parser *ps, size_t first, uint64_t *min, uint64_t *max) {
    size_t open = first - 1;
    long at = parse_dup_count(ps, first, min);
    if (at < 0) return RX_ERR;
    if ((size_t)at == first) return fail(ps, open, "error_badbrace", "'{' must be followed by a count");
    first = (size_t)at;
    if (first == ps->n) return fail(ps, open, "error_brace", "'{' is not closed");
    if (ps->p[first] == '}') {
        *max = *min;
        return (long)first + 1;
    }
    if (ps->p[first] != ',') return fail(ps, first, "error_badbrace", "only digits and ',' may stand between '{' and '}'");
    if (++first == ps->n) return fail(ps, open, "error_badbrace", "'{' is not closed");
    if (ps->p[first] == '}') {
        *max = UINT64_MAX;
        return (long)first + 1;
    }
    if ((at = parse_dup_count(ps, first, max)) < 0) return RX_ERR;
    if ((size_t)at == first) return fail(ps, first, "error_brace", "'{m,' must be followed by a count or '}'");
    first = (size_t)at;
    if (first == ps->n || ps->p[first] != '}') return fail(ps, open, "error_brace", "'{' is not closed");
    if (*max < *min) return fail(ps, open, "error_badbrace", "{m,n} with n smaller than m");
    return (long)first + 1;
}

/* __parse_ERE_dupl_symbol: at most one quantifier after an atom. */
static long parse_dupl_symbol(parser *ps, size_t first, int32_t s, uint32_t mexp_begin, uint32_t mexp_end) {
    if (first == ps->n) return (long)first;
    uint64_t min, max;
    char c = ps->p[first];
    if (c == '*' || c == '+' || c == '?') {
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : UINT64_MAX;
        first++;
    } else if (c == '{') {
        long at = parse_interval(ps, first + 1, &min, &max);
        if (at < 0) return RX_ERR;
        first = (size_t)at;
    } else {
        return (long)first;
    }
    bool greedy = !(first < ps->n && ps->p[first] == '?');
    if (!greedy) first++;
    return push_loop(ps, min, max, s, mexp_begin, mexp_end, greedy) ? RX_ERR : (long)first;
}

static long parse_term(parser *ps, size_t first) {
    long at = parse_assertion(ps, first);
    if (at != (long)first) return at;
    int32_t before = ps->end;
    uint32_t mexp_begin = ps->n_marked;
    if ((at = parse_atom(ps, first)) < 0 || at == (long)first) return at;
    return parse_dupl_symbol(ps, (size_t)at, before, mexp_begin + 1, ps->n_marked + 1);
}

static long parse_alternative(parser *ps, size_t first) {
    for (;;) {
        long at = parse_term(ps, first);
        if (at < 0) return RX_ERR;
        if (at == (long)first) return at;
        first = (size_t)at;
    }
}

static long parse_ecma_exp(parser *ps, size_t first) {
    int32_t sa = ps->end;
    long at = parse_alternative(ps, first);
    if (at < 0 || (at == (long)first && push_node(ps, N_EMPTY) < 0)) return RX_ERR;
    first = (size_t)at;
    while (first < ps->n && ps->p[first] == '|') {
        int32_t sb = ps->end;
        first++;
        if ((at = parse_alternative(ps, first)) < 0) return RX_ERR;
        if (at == (long)first && push_node(ps, N_EMPTY) < 0) return RX_ERR;
        if (push_alternation(ps, sa, sb)) return RX_ERR;
        first = (size_t)at;
    }
    return (long)first;
}

int gm_rx_libcxx_compile(const char *pattern, size_t n, gm_rx_libcxx **out, gm_regex_error *err) {
    *out = NULL;
    parser ps = {.p = pattern, .n = n, .err = err, .depth = 1}; /* the top level counts as one level */
    ps.re = calloc(1, sizeof *ps.re);
    if (!ps.re) return GGUFMAP_ENOMEM;
    int32_t prog = new_program(&ps);
    long at = prog < 0 ? RX_ERR : (ps.end = ps.re->progs[prog].start, parse_ecma_exp(&ps, 0));
    if (at >= 0 && (size_t)at != n) {
        const char *what = pattern[at] == ')' ? "')' without a matching '('"
                         : pattern[at] == ']' || pattern[at] == '}' ? "']' and '}' must be escaped outside a class"
                                                                    : "cannot be parsed here";
        at = fail(&ps, (size_t)at, "error_parse", what);
    }
    if (at < 0) {
        bool nomem = ps.nomem;
        gm_rx_libcxx_free(ps.re);
        return nomem ? GGUFMAP_ENOMEM : GGUFMAP_EINVAL;
    }
    ps.re->progs[0].n_marked = ps.n_marked;
    ps.re->progs[0].n_loops = ps.n_loops;
    *out = ps.re;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Search (__match_at_start_ecma, __search)                                  */
/* ------------------------------------------------------------------------ */

typedef struct capture {
    int32_t first, second;
    bool matched;
} capture;

typedef struct loop_data {
    uint64_t count; /* iterations so far */
    int32_t start;  /* where the current iteration began; -1 before the first */
} loop_data;

enum { DO_NONE, DO_END, DO_CONSUME, DO_ACCEPT, DO_REJECT, DO_SPLIT, DO_REPEAT };

/* __state: a node to run and everything a branch owns.  The captures and
 * loop counters follow the header in one record of `size` bytes. */
typedef struct mstate {
    int32_t node, cur;
    uint8_t todo;
} mstate;

/* One __match_at_start_ecma call. */
typedef struct matcher {
    const gm_rx_libcxx *re;
    const program *prog;
    const unsigned char *s;
    int32_t first, last;
    bool prev_avail, at_first;
    size_t size;       /* bytes per state record */
    unsigned char *stack;
    size_t n, cap;     /* records */
    capture *result;   /* the captures of the accepting state */
    uint64_t *steps, max_steps;
} matcher;

/* A record: the header, padded to 8 bytes, the loop counters (8-byte
 * aligned), then the captures. */
#define LOOPS_AT ((sizeof(mstate) + 7) & ~(size_t)7)
static loop_data *loops_of(mstate *st) { return (loop_data *)(void *)((unsigned char *)st + LOOPS_AT); }
static capture *caps_of(const matcher *m, mstate *st) {
    return (capture *)(void *)(loops_of(st) + m->prog->n_loops);
}
static mstate *top(matcher *m) { return (mstate *)(void *)(m->stack + (m->n - 1) * m->size); }

static int push_state(matcher *m, const mstate *from) {
    if (m->n == m->cap && 2 * m->cap * m->size > MAX_STACK_BYTES) return GM_REGEX_EBUDGET;
    /* from may be a state on the stack, which growing moves */
    const unsigned char *src = (const unsigned char *)from;
    bool inside = m->stack && src >= m->stack && src < m->stack + m->n * m->size;
    size_t at = inside ? (size_t)(src - m->stack) : 0;
    if (!gm_rx_grow(&m->stack, m->n, &m->cap, m->size)) return GM_REGEX_ENOMEM;
    memcpy(m->stack + m->n++ * m->size, inside ? m->stack + at : src, m->size);
    return 0;
}

static bool is_word(unsigned char ch) { return ch == '_' || gm_rx_isctype(ch, GM_RX_ALNUM); }

static bool word_boundary(const matcher *m, int32_t cur) {
    if (m->first == m->last) return false;
    if (cur == m->last) return is_word(m->s[cur - 1]);
    if (cur == m->first && !m->prev_avail) return is_word(m->s[cur]);
    return is_word(m->s[cur - 1]) != is_word(m->s[cur]);
}

/* __loop::__init_repeat */
static void init_repeat(const matcher *m, const node *lp, mstate *st) {
    loops_of(st)[lp->arg].start = st->cur;
    capture *caps = caps_of(m, st);
    for (uint32_t i = lp->mexp_begin - 1; i != lp->mexp_end - 1; i++) caps[i] = (capture){m->last, m->last, false};
}

/* __loop::__exec */
static void exec_loop(const matcher *m, const node *lp, mstate *st) {
    loop_data *ld = &loops_of(st)[lp->arg];
    bool repeat, leave;
    if (st->todo == DO_REPEAT) {
        ld->count++;
        repeat = ld->count < lp->max;
        leave = ld->count >= lp->min;
        if (repeat && leave && ld->start == st->cur) repeat = false; /* an empty iteration ends the loop */
    } else {
        ld->count = 0;
        repeat = 0 < lp->max;
        leave = lp->min == 0;
    }
    if (repeat && leave) {
        st->todo = DO_SPLIT;
        return;
    }
    st->todo = DO_ACCEPT;
    st->node = repeat ? lp->first : lp->second;
    if (repeat) init_repeat(m, lp, st);
}

/* __exec_split for the branch "second" (false: the one explored first). */
static void exec_split(const matcher *m, mstate *st, bool second) {
    const node *nd = &m->re->nodes[st->node];
    st->todo = DO_ACCEPT;
    if (nd->kind == N_ALT) {
        st->node = second ? nd->second : nd->first;
    } else if (nd->flag != second) { /* a loop: greedy takes the body first */
        st->node = nd->first;
        init_repeat(m, nd, st);
    } else {
        st->node = nd->second;
    }
}

static void go(mstate *st, uint8_t todo, int32_t next) {
    st->todo = todo;
    st->node = next;
}

static int match_at(const gm_rx_libcxx *re, int32_t prog, const unsigned char *s, int32_t first, int32_t last,
                    bool prev_avail, bool at_first, uint64_t *steps, uint64_t max_steps, capture *result);

/* __lookahead::__exec */
static int exec_lookahead(const matcher *m, const node *nd, mstate *st) {
    const program *inner = &m->re->progs[nd->arg];
    capture *got = calloc((size_t)inner->n_marked + 1, sizeof *got);
    if (!got) return GM_REGEX_ENOMEM;
    for (uint32_t i = 0; i < inner->n_marked; i++) got[i] = (capture){m->last, m->last, false};
    int rc = match_at(m->re, nd->arg, m->s, st->cur, m->last, m->prev_avail, m->at_first && st->cur == m->first,
                      m->steps, m->max_steps, got);
    if (rc >= 0) {
        if ((rc == GM_REGEX_MATCH) != nd->flag) {
            memcpy(caps_of(m, st) + nd->mexp_begin, got, inner->n_marked * sizeof *got);
            go(st, DO_ACCEPT, nd->first);
        } else {
            go(st, DO_REJECT, -1);
        }
        rc = 0;
    }
    free(got);
    return rc;
}

static void exec_backref(const matcher *m, const node *nd, mstate *st) {
    const capture *cap = &caps_of(m, st)[nd->arg - 1];
    int32_t len = cap->second - cap->first;
    if (cap->matched && m->last - st->cur >= len && memcmp(m->s + cap->first, m->s + st->cur, (size_t)len) == 0) {
        st->cur += len;
        go(st, DO_ACCEPT, nd->first);
    } else {
        go(st, DO_REJECT, -1);
    }
}

/* Runs the top state's node (the node's __exec). */
static int exec_node(matcher *m, mstate *st) {
    const node *nd = &m->re->nodes[st->node];
    int32_t cur = st->cur;
    bool ok;
    switch ((node_kind)nd->kind) {
    case N_END: st->todo = DO_END; return 0;
    case N_EMPTY: go(st, DO_ACCEPT, nd->first); return 0;
    case N_REPEAT_ONE: go(st, DO_REPEAT, nd->first); return 0;
    case N_LOOP: exec_loop(m, nd, st); return 0;
    case N_ALT: st->todo = DO_SPLIT; return 0;
    case N_GROUP_BEGIN: caps_of(m, st)[nd->arg - 1].first = cur; go(st, DO_ACCEPT, nd->first); return 0;
    case N_GROUP_END:
        caps_of(m, st)[nd->arg - 1].second = cur;
        caps_of(m, st)[nd->arg - 1].matched = true;
        go(st, DO_ACCEPT, nd->first);
        return 0;
    case N_BACKREF: exec_backref(m, nd, st); return 0;
    case N_LOOKAHEAD: return exec_lookahead(m, nd, st);
    case N_WORDB: ok = word_boundary(m, cur) != nd->flag; break;
    case N_BOL: ok = m->at_first && cur == m->first; break;
    case N_EOL: ok = cur == m->last; break;
    default: /* the nodes that consume one byte */
        ok = cur != m->last && (nd->kind == N_CHAR ? m->s[cur] == (unsigned char)nd->arg
                                : nd->kind == N_ANY ? m->s[cur] != '\n' && m->s[cur] != '\r'
                                                    : gm_rx_set_has(&m->re->sets[nd->arg], m->s[cur]));
        if (ok) {
            st->cur++;
            go(st, DO_CONSUME, nd->first);
        } else {
            go(st, DO_REJECT, -1);
        }
        return 0;
    }
    go(st, ok ? DO_ACCEPT : DO_REJECT, ok ? nd->first : -1);
    return 0;
}

/* One state's turn of the loop in __match_at_start_ecma: 1 on a match. */
static int turn(matcher *m) {
    mstate *st = top(m);
    int rc = st->node >= 0 ? exec_node(m, st) : 0;
    if (rc) return rc;
    switch (st->todo) {
    case DO_END:
        memcpy(m->result, caps_of(m, st), m->prog->n_marked * sizeof(capture));
        return GM_REGEX_MATCH;
    case DO_REJECT: m->n--; return 0;
    case DO_SPLIT:
        if ((rc = push_state(m, st))) return rc; /* may move the stack */
        st = (mstate *)(void *)(m->stack + (m->n - 2) * m->size);
        exec_split(m, st, true);
        exec_split(m, top(m), false);
        return 0;
    default: return 0;
    }
}

static int match_at(const gm_rx_libcxx *re, int32_t prog, const unsigned char *s, int32_t first, int32_t last,
                    bool prev_avail, bool at_first, uint64_t *steps, uint64_t max_steps, capture *result) {
    const program *pg = &re->progs[prog];
    matcher m = {.re = re, .prog = pg, .s = s, .first = first, .last = last, .prev_avail = prev_avail,
                 .at_first = at_first, .result = result, .steps = steps, .max_steps = max_steps};
    m.size = LOOPS_AT + pg->n_loops * sizeof(loop_data) + pg->n_marked * sizeof(capture);
    m.size = (m.size + 7) & ~(size_t)7;
    unsigned char *init = calloc(1, m.size);
    int rc = init ? 0 : GM_REGEX_ENOMEM;
    if (init) {
        mstate *st = (mstate *)(void *)init;
        *st = (mstate){pg->start, first, DO_NONE};
        for (uint32_t i = 0; i < pg->n_marked; i++) caps_of(&m, st)[i] = (capture){last, last, false};
        for (uint32_t i = 0; i < pg->n_loops; i++) loops_of(st)[i] = (loop_data){0, -1};
        rc = push_state(&m, st);
        free(init);
    }
    int64_t length = last - first;
    for (uint64_t counter = 1; rc == 0 && m.n > 0; counter++) {
        if (counter % COMPLEXITY_FACTOR == 0 && (int64_t)(counter / COMPLEXITY_FACTOR) >= length)
            rc = GM_REGEX_ECOMPLEXITY;
        else if (++*steps > max_steps)
            rc = GM_REGEX_EBUDGET;
        else
            rc = turn(&m);
    }
    free(m.stack);
    return rc;
}

/* __search: start positions 0 .. n-1 (0 alone for an empty text). */
int gm_rx_libcxx_search(const gm_rx_libcxx *re, const char *s, size_t n, uint64_t max_steps, gm_regex_error *err) {
    uint64_t steps = 0;
    /* libc++ itself stops a start position after 4096 x (bytes left) steps;
     * the budget only has to stop what that limit does not: lookaheads,
     * whose nested matches count on their own. */
    uint64_t budget = max_steps + (uint64_t)COMPLEXITY_FACTOR * n * (n + 1);
    capture *result = calloc((size_t)re->progs[0].n_marked + 1, sizeof *result);
    int rc = result ? GM_REGEX_NOMATCH : GM_REGEX_ENOMEM;
    const unsigned char *text = (const unsigned char *)s;
    for (size_t first = 0; rc == GM_REGEX_NOMATCH && (first < n || first == 0); first++)
        rc = match_at(re, 0, text, (int32_t)first, (int32_t)n, first > 0, first == 0, &steps, budget, result);
    free(result);
    if (rc == GM_REGEX_ECOMPLEXITY && err) {
        err->position = 0;
        err->code = "error_complexity";
        snprintf(err->reason, sizeof err->reason,
                 "libc++'s std::regex_search gives up after 4096 steps per byte left");
    } else if (rc == GM_REGEX_EBUDGET && err) {
        err->position = 0;
        err->code = "step_budget";
        snprintf(err->reason, sizeof err->reason, "more than %llu steps (nested lookaheads)", (unsigned long long)budget);
    }
    return rc;
}

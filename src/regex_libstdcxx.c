/*
 * regex_libstdcxx.c - std::regex (ECMAScript) as GNU libstdc++ (GCC 11)
 * compiles and searches it.
 *
 * Data structure.  libstdc++ turns a pattern into an NFA: an array of
 * states, each with an opcode, a "next" edge and, for alternatives,
 * repeats and lookaheads, an "alt" edge.  A scanner hands tokens to a
 * recursive-descent compiler that keeps a stack of state sequences
 * (start, end); quantifiers {m,n} copy their operand m + n times, so the
 * state count grows with the counts and is capped at 100000
 * (_GLIBCXX_REGEX_STATE_LIMIT, error_space).  This file builds the same
 * states in the same way (bits/regex_scanner.tcc, regex_compiler.tcc,
 * regex_automaton.tcc), because both the errors and the search depend on
 * the exact automaton.
 *
 * Workload.  regex_search tries each start position 0..n in turn and runs
 * a depth-first search over the NFA (bits/regex_executor.tcc, the "DFS"
 * executor libstdc++ always uses for ECMAScript): alternatives left first,
 * greedy repeats once more first, the first accepting path wins.  A repeat
 * may be re-entered at the same position at most twice
 * (_M_rep_once_more), which is what stops loops over empty matches.
 * libstdc++ recurses; here the recursion is an explicit stack of tasks:
 * "visit state i" and the undo records that restore the position, the
 * captures and the repeat counters when a branch fails.  The cost is the
 * number of states visited, which can be exponential ("(a*)*b"): it is
 * counted and bounded by the caller's step budget.
 *
 * Quirks kept because llama.cpp has them: \cX is the letter X itself;
 * \uXXXX keeps the low byte; "[]" is an empty set and "]" and "}" are
 * ordinary; a quantifier may follow a quantifier ("a**"); a back-reference
 * to a group not yet closed is refused; a back-reference to an unmatched
 * group fails; captures made inside a lookahead stay set when the search
 * backtracks over it; inside a lookahead "^" and "\b" treat the lookahead's
 * start as the start of the text unless the search had moved past 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "regex.h"

#define STATE_LIMIT 100000 /* _GLIBCXX_REGEX_STATE_LIMIT */
#define MAX_TASKS (1u << 22)

/* ------------------------------------------------------------------------ */
/* The automaton                                                             */
/* ------------------------------------------------------------------------ */

typedef enum op {
    OP_REPEAT,      /* alt: the loop body, next: the way out; neg: non-greedy */
    OP_GROUP_BEGIN, /* arg: capture index */
    OP_GROUP_END,
    OP_BOL,
    OP_EOL,
    OP_WORDB, /* neg: \B */
    OP_LOOKAHEAD, /* alt: the lookahead's own automaton, ending in OP_ACCEPT */
    OP_CHAR,      /* arg: the byte */
    OP_ANY,       /* any byte but \n and \r */
    OP_SET,       /* arg: index in sets */
    OP_BACKREF,   /* arg: capture index */
    OP_ACCEPT,
    OP_ALT,  /* alt: the left alternative (tried first), next: the right */
    OP_DUMMY /* removed by eliminate_dummies */
} op;

typedef struct state {
    uint8_t op;
    bool neg;
    int32_t next, alt;
    int32_t arg;
    int32_t rep; /* OP_REPEAT: its counter's index */
} state;

struct gm_rx_libstdcxx {
    state *st;
    int32_t n_states;
    gm_rx_set *sets;
    int32_t n_sets;
    int32_t n_groups;  /* capture 0 (the whole match) included */
    int32_t n_repeats; /* counters the search keeps */
};

static bool has_alt(const state *s) { return s->op == OP_REPEAT || s->op == OP_ALT || s->op == OP_LOOKAHEAD; }

void gm_rx_libstdcxx_free(gm_rx_libstdcxx *re) {
    if (!re) return;
    free(re->st);
    free(re->sets);
    free(re);
}

/* ------------------------------------------------------------------------ */
/* Scanner (regex_scanner.tcc, ECMAScript only)                              */
/* ------------------------------------------------------------------------ */

typedef enum tok {
    T_EOF, T_ORD, T_HEX, T_BACKREF, T_QCLASS, T_GROUP, T_GROUP_NC, T_LOOKAHEAD, T_CLOSE, T_BRACKET,
    T_BRACKET_NEG, T_BRACKET_END, T_DASH, T_COLLSYM, T_EQUIV, T_CLASSNAME, T_BRACE, T_BRACE_END, T_COUNT,
    T_COMMA, T_ANY, T_STAR, T_PLUS, T_OPT, T_OR, T_BOL, T_EOL, T_WORDB
} tok;

enum { S_NORMAL, S_BRACKET, S_BRACE };

/* A token's value: a byte (T_ORD; 'p'/'n' for T_LOOKAHEAD and T_WORDB;
 * the letter of T_QCLASS) or a run of the pattern (digits, names). */
typedef struct token {
    tok t;
    size_t at; /* where it starts, for messages */
    unsigned char ch;
    size_t val, len;
} token;

typedef struct compiler {
    const char *p;
    size_t n, pos;
    int scan_state;
    token cur;  /* the scanner's current token */
    token last; /* the value of the token matched last (_M_value) */
    gm_regex_error *err;
    gm_rx_libstdcxx *re;
    size_t cap_states, cap_sets;
    struct seq { int32_t start, end; } *stack;
    size_t n_stack, cap_stack;
    int32_t open[GM_REGEX_MAX_NESTING + 2]; /* captures not yet closed (_M_paren_stack) */
    uint32_t n_open, depth;
    int32_t *clone_map; /* old state -> copy, valid where clone_gen == gen */
    uint32_t *clone_gen, gen;
    bool nomem;
} compiler;

typedef struct seq seq;

enum { RX_ERR = -1 };

static int fail(compiler *c, size_t at, const char *code, const char *reason) {
    gm_rx_refuse(c->err, at, code, "%s", reason);
    return RX_ERR;
}

static int oom(compiler *c) {
    c->nomem = true;
    return RX_ERR;
}

static bool is_digit(unsigned char ch) { return ch >= '0' && ch <= '9'; }
static bool is_xdigit(unsigned char ch) { return gm_rx_isctype(ch, GM_RX_XDIGIT); }

static void set_tok(compiler *c, tok t, size_t at, unsigned char ch) {
    c->cur.t = t;
    c->cur.at = at;
    c->cur.ch = ch;
    c->cur.val = c->cur.len = 0;
}

static void take_digits(compiler *c, size_t from) {
    while (c->pos < c->n && is_digit((unsigned char)c->p[c->pos])) c->pos++;
    c->cur.val = from;
    c->cur.len = c->pos - from;
}

/* After '\' (the scanner has checked one byte follows in normal state). */
static int eat_escape(compiler *c, size_t at) {
    static const char from[] = "0bfnrtv", to[] = "\0\b\f\n\r\t\v";
    if (c->pos == c->n) return fail(c, c->pos, "error_escape", "the pattern ends after '\\'");
    unsigned char ch = (unsigned char)c->p[c->pos++];
    const char *hit = ch ? strchr(from, ch) : NULL;
    if (hit && (ch != 'b' || c->scan_state == S_BRACKET)) {
        set_tok(c, T_ORD, at, (unsigned char)to[hit - from]);
    } else if (ch == 'b' || ch == 'B') {
        set_tok(c, T_WORDB, at, ch == 'b' ? 'p' : 'n');
    } else if (strchr("dDsSwW", ch) && ch) {
        set_tok(c, T_QCLASS, at, ch);
    } else if (ch == 'c') {
        if (c->pos == c->n) return fail(c, c->pos, "error_escape", "the pattern ends after '\\c'");
        set_tok(c, T_ORD, at, (unsigned char)c->p[c->pos++]); /* the letter itself, not a control code */
    } else if (ch == 'x' || ch == 'u') {
        size_t digits = ch == 'x' ? 2 : 4, from_at = c->pos;
        for (size_t i = 0; i < digits; i++, c->pos++)
            if (c->pos == c->n || !is_xdigit((unsigned char)c->p[c->pos]))
                return fail(c, c->pos, "error_escape",
                            ch == 'x' ? "'\\x' needs two hex digits" : "'\\u' needs four hex digits");
        set_tok(c, T_HEX, at, 0);
        c->cur.val = from_at;
        c->cur.len = digits;
    } else if (is_digit(ch)) {
        set_tok(c, T_BACKREF, at, 0);
        take_digits(c, c->pos - 1);
    } else {
        set_tok(c, T_ORD, at, ch); /* any other escaped byte is itself */
    }
    return 0;
}

static int scan_paren(compiler *c, size_t at) {
    if (c->pos < c->n && c->p[c->pos] == '?') {
        if (++c->pos == c->n) return fail(c, c->pos, "error_paren", "the pattern ends after '(?'");
        char k = c->p[c->pos];
        if (k == ':') set_tok(c, T_GROUP_NC, at, 0);
        else if (k == '=' || k == '!') set_tok(c, T_LOOKAHEAD, at, k == '=' ? 'p' : 'n');
        else
            return fail(c, c->pos - 1, "error_paren",
                        "'(?' must be followed by ':', '=' or '!' (std::regex has no (?i), (?<, (?P, (?#, (?>)");
        c->pos++;
    } else {
        set_tok(c, T_GROUP, at, 0);
    }
    return 0;
}

static int scan_normal(compiler *c) {
    size_t at = c->pos;
    unsigned char ch = (unsigned char)c->p[c->pos++];
    switch (ch) {
    case '\\':
        if (c->pos == c->n) return fail(c, at, "error_escape", "the pattern ends with '\\'");
        return eat_escape(c, at);
    case '(': return scan_paren(c, at);
    case ')': set_tok(c, T_CLOSE, at, 0); return 0;
    case '[':
        c->scan_state = S_BRACKET;
        if (c->pos < c->n && c->p[c->pos] == '^') {
            c->pos++;
            set_tok(c, T_BRACKET_NEG, at, 0);
        } else {
            set_tok(c, T_BRACKET, at, 0);
        }
        return 0;
    case '{': c->scan_state = S_BRACE; set_tok(c, T_BRACE, at, 0); return 0;
    case '^': set_tok(c, T_BOL, at, 0); return 0;
    case '$': set_tok(c, T_EOL, at, 0); return 0;
    case '.': set_tok(c, T_ANY, at, 0); return 0;
    case '*': set_tok(c, T_STAR, at, 0); return 0;
    case '+': set_tok(c, T_PLUS, at, 0); return 0;
    case '?': set_tok(c, T_OPT, at, 0); return 0;
    case '|': set_tok(c, T_OR, at, 0); return 0;
    default: set_tok(c, T_ORD, at, ch); return 0; /* ']' and '}' included */
    }
}

/* "[:name:]", "[.name.]", "[=name=]" after the "[" and the kind byte. */
static int eat_class(compiler *c, size_t at, char kind, tok t) {
    size_t from = c->pos;
    while (c->pos < c->n && c->p[c->pos] != kind) c->pos++;
    size_t len = c->pos - from;
    if (c->pos == c->n || ++c->pos == c->n || c->p[c->pos++] != ']')
        return fail(c, at, kind == ':' ? "error_ctype" : "error_collate",
                    kind == ':' ? "'[:' is not closed by ':]'" : kind == '.' ? "'[.' is not closed by '.]'"
                                                                            : "'[=' is not closed by '=]'");
    set_tok(c, t, at, 0);
    c->cur.val = from;
    c->cur.len = len;
    return 0;
}

static int scan_bracket(compiler *c) {
    if (c->pos == c->n) return fail(c, c->pos, "error_brack", "'[' is not closed");
    size_t at = c->pos;
    unsigned char ch = (unsigned char)c->p[c->pos++];
    if (ch == '-') {
        set_tok(c, T_DASH, at, 0);
    } else if (ch == '[') {
        if (c->pos == c->n) return fail(c, c->pos, "error_brack", "'[' is not closed");
        char k = c->p[c->pos];
        if (k == '.' || k == ':' || k == '=') {
            c->pos++;
            return eat_class(c, at, k, k == '.' ? T_COLLSYM : k == ':' ? T_CLASSNAME : T_EQUIV);
        }
        set_tok(c, T_ORD, at, '[');
    } else if (ch == ']') {
        c->scan_state = S_NORMAL;
        set_tok(c, T_BRACKET_END, at, 0);
    } else if (ch == '\\') {
        return eat_escape(c, at);
    } else {
        set_tok(c, T_ORD, at, ch);
    }
    return 0;
}

static int scan_brace(compiler *c) {
    if (c->pos == c->n) return fail(c, c->pos, "error_brace", "'{' is not closed");
    size_t at = c->pos;
    unsigned char ch = (unsigned char)c->p[c->pos++];
    if (is_digit(ch)) {
        set_tok(c, T_COUNT, at, 0);
        take_digits(c, at);
    } else if (ch == ',') {
        set_tok(c, T_COMMA, at, 0);
    } else if (ch == '}') {
        c->scan_state = S_NORMAL;
        set_tok(c, T_BRACE_END, at, 0);
    } else {
        return fail(c, at, "error_badbrace", "only digits and ',' may stand between '{' and '}'");
    }
    return 0;
}

/* _M_advance: scans the next token into c->cur. */
static int advance(compiler *c) {
    if (c->pos == c->n) {
        set_tok(c, T_EOF, c->pos, 0);
        return 0;
    }
    return c->scan_state == S_BRACKET ? scan_bracket(c) : c->scan_state == S_BRACE ? scan_brace(c) : scan_normal(c);
}

/* _M_match_token: 1 and the next token scanned when the current one is t. */
static int match(compiler *c, tok t) {
    if (c->cur.t != t) return 0;
    c->last = c->cur;
    return advance(c) == RX_ERR ? RX_ERR : 1;
}

/* _M_cur_int_value: GCC 11 refuses a number past INT_MAX (as error_backref,
 * whatever the number counts). */
static int int_value(compiler *c, int radix, int *out) {
    int v = 0;
    for (size_t i = 0; i < c->last.len; i++) {
        unsigned char ch = (unsigned char)c->p[c->last.val + i];
        int d = is_digit(ch) ? ch - '0' : gm_rx_tolower(ch) - 'a' + 10;
        if (__builtin_mul_overflow(v, radix, &v) || __builtin_add_overflow(v, d, &v))
            return fail(c, c->last.at, "error_backref", "number too large (libstdc++ calls it an invalid back reference)");
    }
    *out = v;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Building the NFA (regex_automaton.h/.tcc)                                 */
/* ------------------------------------------------------------------------ */

/* _M_insert_state: the new state's index, or RX_ERR past the state limit. */
static int32_t insert(compiler *c, op o, int32_t next, int32_t alt, int32_t arg) {
    gm_rx_libstdcxx *re = c->re;
    if (!gm_rx_grow(&re->st, (size_t)re->n_states, &c->cap_states, sizeof *re->st)) return oom(c);
    state *s = &re->st[re->n_states++];
    *s = (state){.op = (uint8_t)o, .next = next, .alt = alt, .arg = arg, .rep = -1};
    if (re->n_states > STATE_LIMIT)
        return fail(c, c->last.at, "error_space",
                    "more than 100000 NFA states (libstdc++ copies a quantified atom once per count)");
    return re->n_states - 1;
}

static void append(compiler *c, seq *s, int32_t id) {
    c->re->st[s->end].next = id;
    s->end = id;
}

static void append_seq(compiler *c, seq *s, seq t) {
    c->re->st[s->end].next = t.start;
    s->end = t.end;
}

static int push(compiler *c, int32_t start, int32_t end) {
    if (start < 0 || end < 0) return RX_ERR;
    if (!gm_rx_grow(&c->stack, c->n_stack, &c->cap_stack, sizeof *c->stack)) return oom(c);
    c->stack[c->n_stack++] = (seq){start, end};
    return 0;
}

static int push1(compiler *c, int32_t id) { return push(c, id, id); }

static seq pop(compiler *c) { return c->stack[--c->n_stack]; }

static int32_t new_set(compiler *c, const gm_rx_set *set) {
    gm_rx_libstdcxx *re = c->re;
    if (!gm_rx_grow(&re->sets, (size_t)re->n_sets, &c->cap_sets, sizeof *re->sets)) return oom(c);
    re->sets[re->n_sets] = *set;
    return re->n_sets++;
}

/* _StateSeq::_M_clone: copies the states reachable from s.start (stopping
 * at s.end) and rewires the copies among themselves. */
static int clone(compiler *c, seq s, seq *out) {
    if (!c->clone_map) {
        c->clone_map = malloc((STATE_LIMIT + 1) * sizeof *c->clone_map);
        c->clone_gen = calloc(STATE_LIMIT + 1, sizeof *c->clone_gen);
        if (!c->clone_map || !c->clone_gen) return oom(c);
    }
    uint32_t gen = ++c->gen;
    size_t base = c->n_stack; /* the work stack lives above the sequence stack */
    if (push1(c, s.start)) return RX_ERR;
    int32_t first_copy = c->re->n_states;
    while (c->n_stack > base) {
        /* As libstdc++: a state is mapped when it is copied, and a
         * successor is queued unless already mapped. */
        int32_t u = pop(c).start;
        state dup = c->re->st[u];
        int32_t id = insert(c, (op)dup.op, dup.next, dup.alt, dup.arg);
        if (id < 0) return RX_ERR;
        c->re->st[id].neg = dup.neg;
        c->clone_map[u] = id;
        c->clone_gen[u] = gen;
        int32_t follow[2] = {has_alt(&dup) ? dup.alt : -1, u == s.end ? -1 : dup.next};
        for (int k = 0; k < 2; k++)
            if (follow[k] >= 0 && c->clone_gen[follow[k]] != gen && push1(c, follow[k])) return RX_ERR;
    }
    for (int32_t id = first_copy; id < c->re->n_states; id++) {
        state *r = &c->re->st[id];
        if (r->next >= 0 && c->clone_gen[r->next] == gen) r->next = c->clone_map[r->next];
        if (has_alt(r) && r->alt >= 0 && c->clone_gen[r->alt] == gen) r->alt = c->clone_map[r->alt];
    }
    *out = (seq){c->clone_map[s.start], c->clone_map[s.end]};
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Compiler (regex_compiler.tcc)                                             */
/* ------------------------------------------------------------------------ */

static int disjunction(compiler *c);

static int enter(compiler *c) {
    if (++c->depth > GM_REGEX_MAX_NESTING)
        return fail(c, c->cur.at, "ggufmap_limit", "groups nested more than 1000 deep (ggufmap's limit)");
    return 0;
}

/* The sequence of terms between '|'s, ending in a dummy state. */
static int alternative(compiler *c);
static int term(compiler *c);

static int alternative(compiler *c) {
    size_t base = c->n_stack;
    int rc;
    while ((rc = term(c)) == 1) {
    }
    if (rc == RX_ERR || push1(c, insert(c, OP_DUMMY, -1, -1, 0))) return RX_ERR;
    /* libstdc++ recurses once per term and chains them on the way back:
     * the same states and edges as chaining them here. */
    seq all = c->stack[base];
    for (size_t i = base + 1; i < c->n_stack; i++) append_seq(c, &all, c->stack[i]);
    c->n_stack = base;
    return push(c, all.start, all.end);
}

static int disjunction(compiler *c) {
    if (enter(c) || alternative(c)) return RX_ERR;
    int rc;
    while ((rc = match(c, T_OR)) == 1) {
        seq alt1 = pop(c);
        if (alternative(c)) return RX_ERR;
        seq alt2 = pop(c);
        int32_t end = insert(c, OP_DUMMY, -1, -1, 0);
        if (end < 0) return RX_ERR;
        append(c, &alt1, end);
        append(c, &alt2, end);
        if (push(c, insert(c, OP_ALT, alt2.start, alt1.start, 0), end)) return RX_ERR;
    }
    c->depth--;
    return rc;
}

static int lookahead(compiler *c) {
    bool neg = c->last.ch == 'n';
    size_t at = c->last.at;
    if (disjunction(c)) return RX_ERR;
    int rc = match(c, T_CLOSE);
    if (rc != 1) return rc == RX_ERR ? RX_ERR : fail(c, at, "error_paren", "'(?=' or '(?!' is not closed");
    seq body = pop(c);
    int32_t acc = insert(c, OP_ACCEPT, -1, -1, 0);
    if (acc < 0) return RX_ERR;
    append(c, &body, acc);
    int32_t id = insert(c, OP_LOOKAHEAD, -1, body.start, 0);
    if (id < 0) return RX_ERR;
    c->re->st[id].neg = neg;
    return push1(c, id) ? RX_ERR : 1;
}

/* _M_assertion: ^ $ \b \B (?= (?! */
static int assertion(compiler *c) {
    int rc;
    if ((rc = match(c, T_BOL))) return rc == 1 && push1(c, insert(c, OP_BOL, -1, -1, 0)) ? RX_ERR : rc;
    if ((rc = match(c, T_EOL))) return rc == 1 && push1(c, insert(c, OP_EOL, -1, -1, 0)) ? RX_ERR : rc;
    if ((rc = match(c, T_WORDB))) {
        if (rc == RX_ERR) return rc;
        int32_t id = insert(c, OP_WORDB, -1, -1, 0);
        if (id < 0) return RX_ERR;
        c->re->st[id].neg = c->last.ch == 'n';
        return push1(c, id) ? RX_ERR : 1;
    }
    if ((rc = match(c, T_LOOKAHEAD))) return rc == RX_ERR ? rc : lookahead(c);
    return 0;
}

/* An interval's loops: {m}, {m,}, {m,n} (_M_quantifier's brace case). */
static int interval(compiler *c) {
    size_t at = c->last.at;
    int rc = match(c, T_COUNT), lo, hi = 0;
    if (rc != 1) return rc == RX_ERR ? RX_ERR : fail(c, c->cur.at, "error_badbrace", "'{' must be followed by a count");
    seq r = pop(c);
    seq e = {insert(c, OP_DUMMY, -1, -1, 0), 0};
    if (e.start < 0 || int_value(c, 10, &lo)) return RX_ERR;
    e.end = e.start;
    bool unbounded = false;
    long extra = 0;
    if ((rc = match(c, T_COMMA)) == 1) {
        if ((rc = match(c, T_COUNT)) == 1) {
            if (int_value(c, 10, &hi)) return RX_ERR;
            extra = (long)hi - lo;
        } else {
            unbounded = true;
        }
    }
    if (rc == RX_ERR || (rc = match(c, T_BRACE_END)) == RX_ERR) return RX_ERR;
    if (rc == 0) return fail(c, c->cur.at, "error_brace", "'{' is not closed by '}'");
    bool lazy = (rc = match(c, T_OPT)) == 1;
    if (rc == RX_ERR) return RX_ERR;
    seq t;
    for (int i = 0; i < lo; i++) {
        if (clone(c, r, &t)) return RX_ERR;
        append_seq(c, &e, t);
    }
    if (unbounded) {
        if (clone(c, r, &t)) return RX_ERR;
        int32_t s = insert(c, OP_REPEAT, -1, t.start, 0);
        if (s < 0) return RX_ERR;
        c->re->st[s].neg = lazy;
        append(c, &t, s);
        append(c, &e, s);
        return push(c, e.start, e.end) ? RX_ERR : 1;
    }
    if (extra < 0) return fail(c, at, "error_badbrace", "{m,n} with n smaller than m");
    int32_t end = insert(c, OP_DUMMY, -1, -1, 0);
    if (end < 0) return RX_ERR;
    for (long i = 0; i < extra; i++) {
        if (clone(c, r, &t)) return RX_ERR;
        /* "take one more copy, or leave": next and alt swapped at the end
         * in libstdc++, i.e. alt enters the copy. */
        int32_t alt = insert(c, OP_REPEAT, end, t.start, 0);
        if (alt < 0) return RX_ERR;
        c->re->st[alt].neg = lazy;
        append_seq(c, &e, (seq){alt, t.end});
    }
    append(c, &e, end);
    return push(c, e.start, e.end) ? RX_ERR : 1;
}

/* _M_quantifier: * + ? {..}, each optionally followed by ? (non-greedy). */
static int quantifier(compiler *c) {
    int rc;
    tok kinds[3] = {T_STAR, T_PLUS, T_OPT};
    for (int k = 0; k < 3; k++) {
        if ((rc = match(c, kinds[k])) != 1) {
            if (rc == RX_ERR) return RX_ERR;
            continue;
        }
        bool lazy = (rc = match(c, T_OPT)) == 1;
        if (rc == RX_ERR) return RX_ERR;
        seq e = pop(c);
        int32_t end = kinds[k] == T_OPT ? insert(c, OP_DUMMY, -1, -1, 0) : 0;
        int32_t r = insert(c, OP_REPEAT, -1, e.start, 0);
        if (end < 0 || r < 0) return RX_ERR;
        c->re->st[r].neg = lazy;
        if (kinds[k] == T_STAR) {
            append(c, &e, r);
            return push1(c, r) ? RX_ERR : 1;
        }
        if (kinds[k] == T_PLUS) {
            append(c, &e, r);
            return push(c, e.start, e.end) ? RX_ERR : 1;
        }
        append(c, &e, end);
        c->re->st[r].next = end;
        return push(c, r, end) ? RX_ERR : 1;
    }
    if ((rc = match(c, T_BRACE)) != 1) return rc;
    return interval(c);
}

/* ------------------------------------------------------------------------ */
/* Bracket expressions (_M_insert_bracket_matcher, _M_expression_term)       */
/* ------------------------------------------------------------------------ */

/* What libstdc++'s _BracketMatcher holds, folded into a byte set as its
 * 256-entry cache does. */
typedef struct bracket {
    gm_rx_set set;
    enum { LAST_NONE, LAST_CHAR, LAST_CLASS } last; /* _BracketState */
    unsigned char last_ch;
} bracket;

static void add_class(bracket *b, unsigned mask, bool negated) {
    for (int ch = 0; ch < 256; ch++)
        if (gm_rx_isctype((unsigned char)ch, mask) != negated) gm_rx_set_add(&b->set, (unsigned char)ch);
}

/* Ranges compare chars, which are signed: [a-\xff] is refused. */
static int add_range(compiler *c, bracket *b, unsigned char lo, unsigned char hi, size_t at) {
    if ((signed char)lo > (signed char)hi)
        return fail(c, at, "error_range", "range whose start is after its end (bytes compare as signed chars)");
    for (int ch = 0; ch < 256; ch++)
        if ((signed char)ch >= (signed char)lo && (signed char)ch <= (signed char)hi)
            gm_rx_set_add(&b->set, (unsigned char)ch);
    b->last = LAST_NONE;
    return 0;
}

static void push_char(bracket *b, unsigned char ch) {
    if (b->last == LAST_CHAR) gm_rx_set_add(&b->set, b->last_ch);
    b->last = LAST_CHAR;
    b->last_ch = ch;
}

static void push_class(bracket *b) {
    if (b->last == LAST_CHAR) gm_rx_set_add(&b->set, b->last_ch);
    b->last = LAST_CLASS;
}

/* _M_try_char: an ordinary byte or \xHH / \uHHHH (low byte kept). */
static int try_char(compiler *c, unsigned char *ch) {
    int rc = match(c, T_HEX), v;
    if (rc == 1) {
        if (int_value(c, 16, &v)) return RX_ERR;
        *ch = (unsigned char)v;
        return 1;
    }
    if (rc == 0 && (rc = match(c, T_ORD)) == 1) *ch = c->last.ch;
    return rc;
}

static int named(compiler *c, bracket *b, tok t) {
    const char *name = c->p + c->last.val;
    size_t len = c->last.len, at = c->last.at;
    if (t == T_CLASSNAME) {
        unsigned mask = gm_rx_classname(name, len);
        if (!mask) return fail(c, at, "error_collate", "unknown class name (known: alnum alpha blank cntrl d digit graph lower print punct s space upper w xdigit)");
        push_class(b);
        add_class(b, mask, false);
        return 1;
    }
    int ch = gm_rx_collatename(name, len, GGUFMAP_REGEX_LIBSTDCXX);
    if (ch < 0) return fail(c, at, "error_collate", "unknown collating element name");
    if (t == T_COLLSYM) {
        gm_rx_set_add(&b->set, (unsigned char)ch);
        push_char(b, (unsigned char)ch);
        return 1;
    }
    push_class(b); /* [=x=]: the letters whose lower case is x's */
    for (int k = 0; k < 256; k++)
        if (gm_rx_tolower((unsigned char)k) == gm_rx_tolower((unsigned char)ch)) gm_rx_set_add(&b->set, (unsigned char)k);
    return 1;
}

static int bracket_dash(compiler *c, bracket *b) {
    size_t at = c->last.at;
    unsigned char ch;
    int rc = match(c, T_BRACKET_END);
    if (rc) {
        if (rc == 1) push_char(b, '-');
        return rc == 1 ? 0 : RX_ERR;
    }
    if (b->last == LAST_CLASS) return fail(c, at, "error_range", "a range cannot start with a class");
    if (b->last == LAST_NONE) { /* ECMAScript: a '-' after a range is itself */
        push_char(b, '-');
        return 1;
    }
    if ((rc = try_char(c, &ch)) == 1) return add_range(c, b, b->last_ch, ch, at) ? RX_ERR : 1;
    if (rc == 0 && (rc = match(c, T_DASH)) == 1) return add_range(c, b, b->last_ch, '-', at) ? RX_ERR : 1;
    return rc == RX_ERR ? RX_ERR : fail(c, c->cur.at, "error_range", "a range must end with a character");
}

/* One item of a bracket expression: 1, 0 at its ']', or RX_ERR. */
static int expression_term(compiler *c, bracket *b) {
    int rc = match(c, T_BRACKET_END);
    if (rc) return rc == 1 ? 0 : RX_ERR;
    unsigned char ch;
    tok named_kinds[3] = {T_COLLSYM, T_EQUIV, T_CLASSNAME};
    for (int k = 0; k < 3; k++)
        if ((rc = match(c, named_kinds[k]))) return rc == 1 ? named(c, b, named_kinds[k]) : RX_ERR;
    if ((rc = try_char(c, &ch))) {
        if (rc == 1) push_char(b, ch);
        return rc;
    }
    if ((rc = match(c, T_DASH))) return rc == 1 ? bracket_dash(c, b) : RX_ERR;
    if ((rc = match(c, T_QCLASS))) {
        if (rc == RX_ERR) return RX_ERR;
        push_class(b);
        add_class(b, gm_rx_classname((const char *)&c->last.ch, 1), c->last.ch >= 'A' && c->last.ch <= 'Z');
        return 1;
    }
    return fail(c, c->cur.at, "error_brack", "unexpected item in '[...]' (a back-reference or \\b \\B)");
}

static int bracket_expression(compiler *c) {
    int rc = match(c, T_BRACKET_NEG);
    bool negated = rc == 1;
    if (rc == 0) rc = match(c, T_BRACKET);
    if (rc != 1) return rc;
    bracket b = {.last = LAST_NONE};
    unsigned char ch;
    if ((rc = try_char(c, &ch)) == 1) {
        b.last = LAST_CHAR;
        b.last_ch = ch;
    } else if (rc == 0 && (rc = match(c, T_DASH)) == 1) {
        b.last = LAST_CHAR;
        b.last_ch = '-';
    }
    if (rc == RX_ERR) return RX_ERR;
    while ((rc = expression_term(c, &b)) == 1) {
    }
    if (rc == RX_ERR) return RX_ERR;
    if (b.last == LAST_CHAR) gm_rx_set_add(&b.set, b.last_ch);
    if (negated)
        for (int k = 0; k < 4; k++) b.set.bits[k] = ~b.set.bits[k];
    int32_t set = new_set(c, &b.set);
    return set < 0 || push1(c, insert(c, OP_SET, -1, -1, set)) ? RX_ERR : 1;
}

/* ------------------------------------------------------------------------ */
/* Atoms and terms                                                           */
/* ------------------------------------------------------------------------ */

static int backref(compiler *c) {
    size_t at = c->last.at;
    int idx;
    if (int_value(c, 10, &idx)) return RX_ERR;
    if (idx >= c->re->n_groups)
        return fail(c, at, "error_backref", "back-reference to a group that does not exist (yet)");
    for (uint32_t i = 0; i < c->n_open; i++)
        if (c->open[i] == idx) return fail(c, at, "error_backref", "back-reference to a group that is not closed");
    return push1(c, insert(c, OP_BACKREF, -1, -1, idx)) ? RX_ERR : 1;
}

static int class_escape(compiler *c) {
    gm_rx_set set = {{0}};
    unsigned mask = gm_rx_classname((const char *)&c->last.ch, 1);
    bool negated = c->last.ch >= 'A' && c->last.ch <= 'Z';
    for (int ch = 0; ch < 256; ch++)
        if (gm_rx_isctype((unsigned char)ch, mask) != negated) gm_rx_set_add(&set, (unsigned char)ch);
    int32_t id = new_set(c, &set);
    return id < 0 || push1(c, insert(c, OP_SET, -1, -1, id)) ? RX_ERR : 1;
}

/* ( ... ) and (?: ... ) */
static int group(compiler *c, bool capture) {
    size_t at = c->last.at;
    seq r;
    if (capture) {
        if (c->n_open > GM_REGEX_MAX_NESTING) return fail(c, at, "ggufmap_limit", "groups nested too deep");
        int32_t idx = c->re->n_groups++;
        c->open[c->n_open++] = idx;
        r.start = r.end = insert(c, OP_GROUP_BEGIN, -1, -1, idx);
    } else {
        r.start = r.end = insert(c, OP_DUMMY, -1, -1, 0);
    }
    if (r.start < 0 || disjunction(c)) return RX_ERR;
    int rc = match(c, T_CLOSE);
    if (rc != 1) return rc == RX_ERR ? RX_ERR : fail(c, at, "error_paren", "'(' is not closed");
    append_seq(c, &r, pop(c));
    if (capture) {
        int32_t end = insert(c, OP_GROUP_END, -1, -1, c->open[--c->n_open]);
        if (end < 0) return RX_ERR;
        append(c, &r, end);
    }
    return push(c, r.start, r.end) ? RX_ERR : 1;
}

static int atom(compiler *c) {
    unsigned char ch;
    int rc;
    if ((rc = match(c, T_ANY))) return rc == 1 && push1(c, insert(c, OP_ANY, -1, -1, 0)) ? RX_ERR : rc;
    if ((rc = try_char(c, &ch))) return rc == 1 && push1(c, insert(c, OP_CHAR, -1, -1, ch)) ? RX_ERR : rc;
    if ((rc = match(c, T_BACKREF))) return rc == 1 ? backref(c) : rc;
    if ((rc = match(c, T_QCLASS))) return rc == 1 ? class_escape(c) : rc;
    if ((rc = match(c, T_GROUP_NC))) return rc == 1 ? group(c, false) : rc;
    if ((rc = match(c, T_GROUP))) return rc == 1 ? group(c, true) : rc;
    return bracket_expression(c);
}

/* _M_term: an assertion, or an atom with any number of quantifiers. */
static int term(compiler *c) {
    int rc = assertion(c);
    if (rc) return rc;
    if ((rc = atom(c)) != 1) return rc;
    while ((rc = quantifier(c)) == 1) {
    }
    return rc == RX_ERR ? RX_ERR : 1;
}

/* ------------------------------------------------------------------------ */
/* Compile                                                                   */
/* ------------------------------------------------------------------------ */

static const char *stray_token(tok t) {
    switch (t) {
    case T_CLOSE: return "')' without a matching '('";
    case T_STAR: case T_PLUS: case T_OPT: case T_BRACE:
        return "quantifier with nothing to repeat (at the start, after '(' or '|', or after an assertion)";
    default: return "unexpected token";
    }
}

static void eliminate_dummies(gm_rx_libstdcxx *re) {
    for (int32_t i = 0; i < re->n_states; i++) {
        state *s = &re->st[i];
        while (s->next >= 0 && re->st[s->next].op == OP_DUMMY) s->next = re->st[s->next].next;
        if (has_alt(s))
            while (s->alt >= 0 && re->st[s->alt].op == OP_DUMMY) s->alt = re->st[s->alt].next;
        if (s->op == OP_REPEAT) s->rep = re->n_repeats++;
    }
}

static int compile_all(compiler *c) {
    if (advance(c)) return RX_ERR;
    int32_t start = insert(c, OP_GROUP_BEGIN, -1, -1, c->re->n_groups++);
    if (start < 0) return RX_ERR;
    c->open[c->n_open++] = 0;
    seq r = {start, start};
    if (disjunction(c)) return RX_ERR;
    int rc = match(c, T_EOF);
    if (rc != 1) return rc == RX_ERR ? RX_ERR : fail(c, c->cur.at, "error_paren", stray_token(c->cur.t));
    append_seq(c, &r, pop(c));
    int32_t end = insert(c, OP_GROUP_END, -1, -1, c->open[--c->n_open]);
    if (end < 0) return RX_ERR;
    append(c, &r, end);
    int32_t acc = insert(c, OP_ACCEPT, -1, -1, 0);
    if (acc < 0) return RX_ERR;
    append(c, &r, acc);
    eliminate_dummies(c->re);
    return 0;
}

int gm_rx_libstdcxx_compile(const char *pattern, size_t n, gm_rx_libstdcxx **out, gm_regex_error *err) {
    *out = NULL;
    compiler c = {.p = pattern, .n = n, .err = err};
    c.re = calloc(1, sizeof *c.re);
    if (!c.re) return GGUFMAP_ENOMEM;
    int rc = compile_all(&c);
    free(c.stack);
    free(c.clone_map);
    free(c.clone_gen);
    if (rc) {
        gm_rx_libstdcxx_free(c.re);
        return c.nomem ? GGUFMAP_ENOMEM : GGUFMAP_EINVAL;
    }
    *out = c.re;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Search (regex_executor.tcc, the DFS executor)                             */
/* ------------------------------------------------------------------------ */

typedef struct capture {
    int32_t first, second; /* -1: never set */
    bool matched;
} capture;

typedef struct counter {
    int32_t pos, count; /* _M_rep_count[i] */
} counter;

typedef enum task_kind {
    K_VISIT,     /* a: state */
    K_POS,       /* a: position to restore */
    K_CAP_FIRST, /* a: capture, b: its first */
    K_CAP,       /* a: capture, b, c: first, second; d: matched */
    K_REP,       /* a: counter, b, c: pos, count */
    K_REP_DEC,   /* a: counter */
    K_REP_MORE   /* a: state: a non-greedy repeat's "once more", deferred */
} task_kind;

typedef struct task {
    uint8_t kind, d;
    int32_t a, b, c;
} task;

/* One executor: the outer search, or a lookahead's (_M_lookahead makes a
 * new _Executor that starts at the current position). */
typedef struct exec {
    const gm_rx_libstdcxx *re;
    const unsigned char *s;
    int32_t begin, end, cur;
    bool prev_avail;       /* match_prev_avail: the search moved past position 0 */
    capture *caps;         /* _M_cur_results */
    capture *result;       /* _M_results, taken at the accepting state */
    counter *reps;
    task *tasks;
    size_t n_tasks, cap_tasks;
    uint64_t *steps, max_steps;
} exec;

static bool is_word(unsigned char ch) { return gm_rx_isctype(ch, GM_RX_WORD); }

static bool at_begin(const exec *e) { return e->cur == e->begin && !e->prev_avail; }

static bool word_boundary(const exec *e) {
    bool left = (e->cur != e->begin || e->prev_avail) && is_word(e->s[e->cur - 1]);
    bool right = e->cur != e->end && is_word(e->s[e->cur]);
    return left != right;
}

static int task_push(exec *e, task_kind k, int32_t a, int32_t b, int32_t c2, bool d) {
    if (e->n_tasks == e->cap_tasks && e->cap_tasks >= MAX_TASKS) return GM_REGEX_EBUDGET;
    if (!gm_rx_grow(&e->tasks, e->n_tasks, &e->cap_tasks, sizeof *e->tasks)) return GM_REGEX_ENOMEM;
    e->tasks[e->n_tasks++] = (task){(uint8_t)k, d, a, b, c2};
    return 0;
}

static int visit(exec *e, int32_t i) { return task_push(e, K_VISIT, i, 0, 0, false); }

/* _M_rep_once_more: enter the loop body again, at most twice at the same
 * position. */
static int rep_once_more(exec *e, int32_t i) {
    const state *st = &e->re->st[i];
    counter *r = &e->reps[st->rep];
    if (r->count == 0 || r->pos != e->cur) {
        int rc = task_push(e, K_REP, st->rep, r->pos, r->count, false);
        r->pos = e->cur;
        r->count = 1;
        return rc ? rc : visit(e, st->alt);
    }
    if (r->count >= 2) return 0;
    r->count++;
    int rc = task_push(e, K_REP_DEC, st->rep, 0, 0, false);
    return rc ? rc : visit(e, st->alt);
}

static int run(exec *e, int32_t start);

/* _M_lookahead: a new executor from here; its captures, when it matches,
 * are copied over ours and stay when we backtrack. */
static int lookahead_match(exec *e, int32_t start) {
    int32_t ng = e->re->n_groups;
    exec sub = *e;
    sub.begin = e->cur;
    sub.tasks = NULL;
    sub.n_tasks = sub.cap_tasks = 0;
    sub.caps = malloc((size_t)ng * 2 * sizeof *sub.caps);
    sub.reps = calloc((size_t)e->re->n_repeats + 1, sizeof *sub.reps);
    int rc = GM_REGEX_ENOMEM;
    if (sub.caps && sub.reps) {
        sub.result = sub.caps + ng;
        memcpy(sub.caps, e->caps, (size_t)ng * sizeof *sub.caps);
        rc = run(&sub, start);
        if (rc == GM_REGEX_MATCH)
            for (int32_t k = 0; k < ng; k++)
                if (sub.result[k].matched) e->caps[k] = sub.result[k];
    }
    free(sub.caps);
    free(sub.reps);
    free(sub.tasks);
    return rc;
}

static bool byte_matches(const gm_rx_libstdcxx *re, const state *st, unsigned char ch) {
    if (st->op == OP_CHAR) return ch == (unsigned char)st->arg;
    if (st->op == OP_ANY) return ch != '\n' && ch != '\r';
    return gm_rx_set_has(&re->sets[st->arg], ch);
}

static int on_backref(exec *e, const state *st) {
    const capture *cap = &e->caps[st->arg];
    if (!cap->matched) return 0;
    int32_t len = cap->second - cap->first;
    if (len < 0 || len > e->end - e->cur || memcmp(e->s + cap->first, e->s + e->cur, (size_t)len) != 0) return 0;
    int rc = len ? task_push(e, K_POS, e->cur, 0, 0, false) : 0;
    e->cur += len;
    return rc ? rc : visit(e, st->next);
}

/* _M_dfs for one state: pushes what libstdc++ would recurse into, in
 * reverse order, behind the undo records.  GM_REGEX_MATCH on acceptance. */
static int step(exec *e, int32_t i) {
    const state *st = &e->re->st[i];
    int rc = 0;
    switch ((op)st->op) {
    case OP_REPEAT:
        if (st->neg) return (rc = task_push(e, K_REP_MORE, i, 0, 0, false)) ? rc : visit(e, st->next);
        return (rc = visit(e, st->next)) ? rc : rep_once_more(e, i);
    case OP_GROUP_BEGIN:
        rc = task_push(e, K_CAP_FIRST, st->arg, e->caps[st->arg].first, 0, false);
        e->caps[st->arg].first = e->cur;
        return rc ? rc : visit(e, st->next);
    case OP_GROUP_END: {
        capture *cap = &e->caps[st->arg];
        rc = task_push(e, K_CAP, st->arg, cap->first, cap->second, cap->matched);
        cap->second = e->cur;
        cap->matched = true;
        return rc ? rc : visit(e, st->next);
    }
    case OP_BOL: return at_begin(e) ? visit(e, st->next) : 0;
    case OP_EOL: return e->cur == e->end ? visit(e, st->next) : 0;
    case OP_WORDB: return word_boundary(e) != st->neg ? visit(e, st->next) : 0;
    case OP_LOOKAHEAD:
        if ((rc = lookahead_match(e, st->alt)) < 0) return rc;
        return (rc == GM_REGEX_MATCH) != st->neg ? visit(e, st->next) : 0;
    case OP_CHAR:
    case OP_ANY:
    case OP_SET:
        if (e->cur == e->end || !byte_matches(e->re, st, e->s[e->cur])) return 0;
        rc = task_push(e, K_POS, e->cur, 0, 0, false);
        e->cur++;
        return rc ? rc : visit(e, st->next);
    case OP_BACKREF: return on_backref(e, st);
    case OP_ACCEPT:
        memcpy(e->result, e->caps, (size_t)e->re->n_groups * sizeof *e->caps);
        return GM_REGEX_MATCH;
    case OP_ALT: return (rc = visit(e, st->next)) ? rc : visit(e, st->alt);
    default: return 0;
    }
}

static void undo(exec *e, const task *t) {
    switch ((task_kind)t->kind) {
    case K_POS: e->cur = t->a; break;
    case K_CAP_FIRST: e->caps[t->a].first = t->b; break;
    case K_CAP: e->caps[t->a] = (capture){t->b, t->c, t->d != 0}; break;
    case K_REP: e->reps[t->a] = (counter){t->b, t->c}; break;
    case K_REP_DEC: e->reps[t->a].count--; break;
    default: break;
    }
}

/* _M_main_dispatch for the DFS executor: one attempt from e->cur. */
static int run(exec *e, int32_t start) {
    int rc = visit(e, start);
    while (rc == 0 && e->n_tasks > 0) {
        task t = e->tasks[--e->n_tasks];
        if (t.kind == K_VISIT) {
            if (++*e->steps > e->max_steps) return GM_REGEX_EBUDGET;
            rc = step(e, t.a);
        } else if (t.kind == K_REP_MORE) {
            rc = rep_once_more(e, t.a);
        } else {
            undo(e, &t);
        }
    }
    e->n_tasks = 0;
    return rc;
}

/* _M_search: attempts at 0, 1, ..., n (the empty end included). */
int gm_rx_libstdcxx_search(const gm_rx_libstdcxx *re, const char *s, size_t n, uint64_t max_steps,
                           gm_regex_error *err) {
    uint64_t steps = 0;
    int32_t ng = re->n_groups;
    exec e = {.re = re, .s = (const unsigned char *)s, .end = (int32_t)n, .steps = &steps, .max_steps = max_steps};
    e.caps = malloc((size_t)ng * 2 * sizeof *e.caps);
    e.reps = calloc((size_t)re->n_repeats + 1, sizeof *e.reps);
    int rc = e.caps && e.reps ? 0 : GM_REGEX_ENOMEM;
    for (e.begin = 0; rc == 0; e.begin++, e.prev_avail = true) {
        e.result = e.caps + ng;
        for (int32_t k = 0; k < ng; k++) e.caps[k] = (capture){-1, -1, false};
        e.cur = e.begin;
        rc = run(&e, 0);
        if (rc != 0 || e.begin == e.end) break;
    }
    free(e.caps);
    free(e.reps);
    free(e.tasks);
    if (rc == GM_REGEX_EBUDGET && err) {
        err->position = 0;
        err->code = "step_budget";
        snprintf(err->reason, sizeof err->reason,
                 "more than %llu steps (states visited, as libstdc++'s std::regex_search counts them) on "
                 "this name: the pattern backtracks too much for llama.cpp to finish loading",
                 (unsigned long long)max_steps);
    }
    return rc;
}

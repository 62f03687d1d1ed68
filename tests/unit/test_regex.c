/*
 * test_regex.c - the regex engine (src/regex*.c) case by case, its step
 * budget, and how ggufmap_placement_build uses it for -ot patterns.
 *
 * Agreement with the real libraries over the whole corpus is
 * tests/regex's job (probe.cpp compiled against each); the expectations
 * here were read off those libraries (g++-11 and clang++ -stdlib=libc++
 * on Debian 12) and pin the behaviours that tell the dialects apart, the
 * error positions ggufmap reports, and what the budget does.
 */
#include "check.h"
#include "ggufmap/placement.h"
#include "regex.h"
#include "scratch.h"

static const ggufmap_regex_dialect GNU = GGUFMAP_REGEX_LIBSTDCXX, LLVM = GGUFMAP_REGEX_LIBCXX;

/* 1 match, 0 no match, negative: a search error; -100: refused. */
static int search(ggufmap_regex_dialect d, const char *pattern, const char *text, uint64_t budget) {
    gm_regex *re;
    gm_regex_error err;
    if (gm_regex_compile(pattern, strlen(pattern), d, &re, &err) != GGUFMAP_OK) return -100;
    int r = gm_regex_search(re, text, strlen(text), budget, &err);
    gm_regex_free(re);
    return r;
}

/* The error code of a refused pattern ("" when accepted); *pos its position. */
static const char *refusal(ggufmap_regex_dialect d, const char *pattern, size_t *pos) {
    static char code[64];
    gm_regex *re;
    gm_regex_error err = {0};
    int rc = gm_regex_compile(pattern, strlen(pattern), d, &re, &err);
    if (rc == GGUFMAP_OK) {
        gm_regex_free(re);
        return "";
    }
    snprintf(code, sizeof code, "%s", rc == GGUFMAP_EINVAL ? err.code : "ENOMEM");
    if (pos) *pos = err.position;
    return code;
}

static void test_ordinary(void) {
    static const char *const exps = "\\.ffn_(up|down|gate|gate_up)_(ch|)exps";
    for (int k = 0; k < 2; k++) {
        ggufmap_regex_dialect d = k ? LLVM : GNU;
        CHECK(search(d, exps, "blk.3.ffn_up_exps.weight", 0) == 1);
        CHECK(search(d, exps, "blk.3.ffn_gate_up_chexps.weight", 0) == 1);
        CHECK(search(d, exps, "blk.3.ffn_up_shexp.weight", 0) == 0);
        CHECK(search(d, "blk\\.(1[0-9]|2[0-9])\\.ffn_.*_exps\\.", "blk.19.ffn_down_exps.weight", 0) == 1);
        CHECK(search(d, "blk\\.(1[0-9]|2[0-9])\\.ffn_.*_exps\\.", "blk.9.ffn_down_exps.weight", 0) == 0);
        CHECK(search(d, "^output\\.weight$", "output.weight", 0) == 1);
        CHECK(search(d, "^output\\.weight$", "output.weight2", 0) == 0);
        CHECK(search(d, "attn_(q|k)\\b", "blk.0.attn_q.weight", 0) == 1);
        CHECK(search(d, "(\\w)\\1", "blk.10.ffn_up_exps.weight", 0) == 1); /* "ff" */
        CHECK(search(d, "blk(?!\\.0\\.)", "blk.0.x", 0) == 0);
        CHECK(search(d, "[[:digit:]]{2}", "blk.12.x", 0) == 1);
        CHECK(search(d, "", "anything", 0) == 1);
    }
}

/* Where libstdc++ and libc++ part ways (docs/regex.md). */
static void test_dialects(void) {
    size_t pos = 0;
    /* libc++ never tries the empty match at the end of a non-empty text. */
    CHECK(search(GNU, "$", "abc", 0) == 1 && search(LLVM, "$", "abc", 0) == 0);
    CHECK(search(GNU, "x*$", "abc", 0) == 1 && search(LLVM, "x*$", "abc", 0) == 0);
    CHECK(search(LLVM, "c$", "abc", 0) == 1);
    /* Identity escapes of letters: libstdc++ takes the letter, libc++ refuses. */
    CHECK(search(GNU, "\\h", "h", 0) == 1 && strcmp(refusal(LLVM, "\\h", &pos), "error_escape") == 0 && pos == 1);
    CHECK(strcmp(refusal(LLVM, "\\_", NULL), "error_escape") == 0 && search(GNU, "\\_", "a_b", 0) == 1);
    /* \cX: libstdc++ matches X itself, libc++ the control character. */
    CHECK(search(GNU, "\\cJ", "J", 0) == 1 && search(GNU, "\\cJ", "\n", 0) == 0);
    CHECK(search(LLVM, "\\cJ", "\n", 0) == 1 && search(LLVM, "\\cJ", "J", 0) == 0);
    /* "[]" is empty in both; a bare ']' is a character only for libstdc++. */
    CHECK(search(GNU, "[]a]", "a]", 0) == 0 && strcmp(refusal(LLVM, "[]a]", &pos), "error_parse") == 0 && pos == 4);
    /* Quantified quantifiers. */
    CHECK(search(GNU, "a**", "aa", 0) == 1 && strcmp(refusal(LLVM, "a**", &pos), "error_badrepeat") == 0 && pos == 3);
    /* Ranges: libstdc++ refuses a reversed one, libc++ takes it as empty. */
    CHECK(strcmp(refusal(GNU, "[z-a]", NULL), "error_range") == 0 && search(LLVM, "[z-a]", "z", 0) == 0);
    /* Bytes compare as signed chars in libstdc++'s ranges. */
    CHECK(strcmp(refusal(GNU, "[a-\\xff]", NULL), "error_range") == 0 && search(LLVM, "[a-\\xff]", "\xe9", 0) == 1);
    /* A back-reference inside its own group. */
    CHECK(strcmp(refusal(GNU, "(a\\1)", &pos), "error_backref") == 0 && pos == 3);
    CHECK(search(LLVM, "(a\\1)", "aa", 0) == 0 && search(LLVM, "(a\\1)b", "ab", 0) == 0);
    /* [\W\D]: libc++ takes the intersection of the negated classes. */
    CHECK(search(GNU, "[\\W\\D]", "a", 0) == 1 && search(LLVM, "[\\W\\D]", "a", 0) == 0);
    /* Class and collating names. */
    CHECK(strcmp(refusal(GNU, "[[:word:]]", NULL), "error_collate") == 0);
    CHECK(strcmp(refusal(LLVM, "[[:word:]]", NULL), "error_ctype") == 0);
    CHECK(strcmp(refusal(GNU, "[[.-.]]", NULL), "error_collate") == 0 && search(LLVM, "[[.-.]]", "-", 0) == 1);
    CHECK(search(GNU, "[[=a=]]", "A", 0) == 1 && search(LLVM, "[[=a=]]", "A", 0) == 0);
    /* \uXXXX keeps the low byte in both. */
    CHECK(search(GNU, "\\u0141", "A", 0) == 1 && search(LLVM, "\\u0141", "A", 0) == 1);
}

/* Refusals the issue lists, with ggufmap's positions (1-based). */
static void test_refusals(void) {
    static const struct { const char *pattern, *gnu, *llvm; size_t gnu_pos, llvm_pos; } cases[] = {
        {"(?i)x", "error_paren", "error_badrepeat", 2, 2},
        {"(?<!x)blk", "error_paren", "error_badrepeat", 2, 2},
        {"(?P<n>blk)", "error_paren", "error_badrepeat", 2, 2},
        {"a{1", "error_brace", "error_brace", 4, 2},
        {"a{", "error_badbrace", "error_badbrace", 3, 2}, /* libstdc++ scans the end as an end, in braces too */
        {"{", "error_paren", "error_badrepeat", 1, 1},
        {"a{3,2}", "error_badbrace", "error_badbrace", 2, 2},
        {"\\p{L}", "error_badbrace", "error_escape", 4, 1},
        {"\\", "error_escape", "error_escape", 1, 1},
        {"(a", "error_paren", "error_paren", 1, 1},
        {"a)", "error_paren", "error_parse", 2, 2},
        {"*a", "error_paren", "error_badrepeat", 1, 1},
        {"[a", "error_brack", "error_brack", 3, 1},
        {"\\1(a)", "error_backref", "error_backref", 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t pos = 0;
        const char *got = refusal(GNU, cases[i].pattern, &pos);
        CHECK_MSG(strcmp(got, cases[i].gnu) == 0 && pos == cases[i].gnu_pos, "libstdc++ '%s': %s at %zu",
                  cases[i].pattern, got, pos);
        got = refusal(LLVM, cases[i].pattern, &pos);
        CHECK_MSG(strcmp(got, cases[i].llvm) == 0 && pos == cases[i].llvm_pos, "libc++ '%s': %s at %zu",
                  cases[i].pattern, got, pos);
    }
    /* Accepted by both, meaning something else than in PCRE. */
    CHECK(search(GNU, "\\Qblk.\\E", "Qblk.E", 0) == 1);
    CHECK(search(GNU, "\\u0062", "b", 0) == 1 && search(LLVM, "\\u0062", "b", 0) == 1);
    /* libstdc++ copies a quantified atom once per count, up to 100000 NFA states. */
    CHECK(strcmp(refusal(GNU, "a{99993}", NULL), "") == 0 && strcmp(refusal(GNU, "a{99994}", NULL), "error_space") == 0);
    CHECK(strcmp(refusal(GNU, "(a){24997}", NULL), "") == 0 && strcmp(refusal(GNU, "(a){24998}", NULL), "error_space") == 0);
    CHECK(strcmp(refusal(LLVM, "a{99994}", NULL), "") == 0);
    /* GCC 11 refuses a count past INT_MAX (as error_backref). */
    CHECK(strcmp(refusal(GNU, "a{2147483648}", NULL), "error_backref") == 0);
    CHECK(strcmp(refusal(LLVM, "a{2147483648}", NULL), "error_badbrace") == 0);
}

/* ggufmap's own limits: pattern size and nesting depth. */
/* n groups nested around "a". */
static char *nested(size_t n) {
    char *s = malloc(2 * n + 2);
    for (size_t i = 0; s && i < n; i++) {
        s[i] = '(';
        s[n + 1 + i] = ')';
    }
    if (s) {
        s[n] = 'a';
        s[2 * n + 1] = '\0';
    }
    return s;
}

static void test_limits(void) {
    char *deep = nested(1000), *fine = nested(999); /* the top level counts as one */
    CHECK(deep && strcmp(refusal(GNU, deep, NULL), "ggufmap_limit") == 0);
    CHECK(deep && strcmp(refusal(LLVM, deep, NULL), "ggufmap_limit") == 0);
    CHECK(fine && strcmp(refusal(GNU, fine, NULL), "") == 0 && strcmp(refusal(LLVM, fine, NULL), "") == 0);
    free(deep);
    free(fine);
    char *longer = malloc(GM_REGEX_MAX_PATTERN + 2);
    memset(longer, 'a', GM_REGEX_MAX_PATTERN + 1);
    longer[GM_REGEX_MAX_PATTERN + 1] = '\0';
    CHECK(strcmp(refusal(GNU, longer, NULL), "error_space") == 0);
    free(longer);
}

/* The step budget: libstdc++ backtracks without limit, libc++ gives up. */
static void test_budget(void) {
    char as[64];
    memset(as, 'a', 30);
    as[30] = '\0';
    CHECK(search(GNU, "(a*)*c", "aaac", 0) == 1);
    CHECK(search(GNU, "(a*)*c", as, 0) == GM_REGEX_EBUDGET); /* about 2^30 paths */
    CHECK(search(GNU, "(a*)*c", "aaaaaaaa", 0) == 0);        /* a few thousand steps */
    CHECK(search(GNU, "(a*)*c", "aaaaaaaa", 100) == GM_REGEX_EBUDGET);
    CHECK(search(GNU, "blk\\.0\\.", "blk.0.attn_q.weight", 5) == GM_REGEX_EBUDGET);
    CHECK(search(GNU, "blk\\.0\\.", "blk.0.attn_q.weight", 50) == 1);
    /* The quick no (regex.c): a name without a literal the pattern's top
     * level requires is a no without the engine (one step would not do);
     * a name with them runs the engine; a pattern with a quantifier never
     * takes the quick no, whatever the name. */
    const char *moe = "blk\\.(0|1|2)\\.ffn_(up|down|gate|gate_up)_(ch|)exps";
    CHECK(search(GNU, moe, "token_embd.weight", 1) == 0 && search(LLVM, moe, "token_embd.weight", 1) == 0);
    CHECK(search(GNU, moe, "blk.3.ffn_up_exps.weight", 1) == GM_REGEX_EBUDGET);
    CHECK(search(GNU, moe, "blk.2.ffn_gate_up_chexps.weight", 0) == 1);
    CHECK(search(GNU, "blk\\.0\\.x*", "token_embd.weight", 1) == GM_REGEX_EBUDGET);
    CHECK(search(GNU, "a|token", "token_embd.weight", 0) == 1); /* a top-level '|': nothing is required */
    CHECK(search(GNU, "\\x41B", "AB", 0) == 1 && search(GNU, "\\u0041B", "AB", 0) == 1);
    CHECK(search(GNU, "[[:alpha:]_]", "output.weight", 0) == 1 && search(GNU, "[[.hyphen.]-z]x", "ax", 0) == 1);
    /* libc++: error_complexity after 4096 steps per remaining byte, exactly
     * as libc++ counts, well before the budget. */
    CHECK(search(LLVM, "(a*)*c", as, 0) == GM_REGEX_ECOMPLEXITY);
    CHECK(search(LLVM, "(a*)*c", "aaaaaaaa", 0) == 0);
    gm_regex *re;
    gm_regex_error err;
    CHECK(gm_regex_compile("(.*)*x", 6, GNU, &re, &err) == GGUFMAP_OK);
    CHECK(gm_regex_search(re, as, 30, 0, &err) == GM_REGEX_EBUDGET && strcmp(err.code, "step_budget") == 0);
    gm_regex_free(re);
    CHECK(gm_regex_compile("(.*)*x", 6, LLVM, &re, &err) == GGUFMAP_OK);
    CHECK(gm_regex_search(re, as, 30, 0, &err) == GM_REGEX_ECOMPLEXITY && strcmp(err.code, "error_complexity") == 0);
    gm_regex_free(re);
}

/* ------------------------------------------------------------------------ */
/* -ot through ggufmap_placement_build                                                 */
/* ------------------------------------------------------------------------ */

static char path[600];

static void write_model(void) {
    scratch_path(path, sizeof path, "regex.gguf");
    unlink(path);
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    ggufmap_writer_add_string(w, "general.architecture", "llama");
    ggufmap_writer_add_u32(w, "llama.block_count", 2);
    ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    int64_t mat[2] = {64, 8}, vec[1] = {64};
    ggufmap_writer_add_tensor(w, "token_embd.weight", 2, mat, 0, &z);
    /* llama's loader wants every tensor of a layer (src/models/llama.cpp) */
    static const char *const layer[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                        "ffn_norm", "ffn_gate", "ffn_down", "ffn_up"};
    for (int i = 0; i < 2; i++)
        for (size_t k = 0; k < sizeof layer / sizeof layer[0]; k++) {
            char n[64];
            snprintf(n, sizeof n, "blk.%d.%s.weight", i, layer[k]);
            bool norm = strstr(layer[k], "norm") != NULL;
            ggufmap_writer_add_tensor(w, n, norm ? 1 : 2, norm ? vec : mat, 0, &z);
        }
    ggufmap_writer_add_tensor(w, "output_norm.weight", 1, vec, 0, &z);
    ggufmap_writer_add_tensor(w, "output.weight", 2, mat, 0, &z);
    ggufmap_error err;
    if (ggufmap_writer_write(w, path, GGUFMAP_WRITE_SPARSE, &err)) fprintf(stderr, "%s\n", err.message);
    ggufmap_writer_free(w);
}

/* How many tensors an overridden placement puts in the context named buft. */
static int64_t in_context(const ggufmap_placement *p, const char *buft) {
    for (uint32_t i = 0; p && i < ggufmap_placement_n_contexts(p); i++)
        if (strcmp(ggufmap_placement_context(p, i)->buft, buft) == 0) return ggufmap_placement_context(p, i)->n_instances;
    return 0;
}

static int place_with(ggufmap_model *m, ggufmap_device dev, ggufmap_regex_dialect d, const ggufmap_override *ov,
                      uint32_t n, ggufmap_placement **out, ggufmap_error *err) {
    ggufmap_placement_opts o;
    ggufmap_placement_opts_init(&o);
    o.device = dev;
    o.cpu = GGUFMAP_CPU_GENERIC;
    o.no_repack = true;
    o.regex = d;
    o.overrides = ov;
    o.n_overrides = n;
    return ggufmap_placement_build(m, &o, out, err);
}

static void test_placement(void) {
    write_model();
    ggufmap_model *m;
    ggufmap_error err;
    ggufmap_placement *p = NULL;
    CHECK(ggufmap_model_open(path, 0, &m, &err) == GGUFMAP_OK);

    /* The dialect follows the device unless given: "\h" is refused on Metal. */
    ggufmap_override h[1] = {{"\\h", "CPU"}};
    CHECK(place_with(m, GGUFMAP_DEVICE_CPU, GGUFMAP_REGEX_AUTO, h, 1, &p, &err) == GGUFMAP_OK);
    ggufmap_placement_free(p);
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_AUTO, h, 1, &p, &err) == GGUFMAP_EINVAL && !p);
    CHECK_MSG(strstr(err.message, "-ot '\\h=CPU': position 1: invalid regex for libc++'s std::regex (error_escape)"),
              "%s", err.message);
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_LIBSTDCXX, h, 1, &p, &err) == GGUFMAP_OK);
    ggufmap_placement_free(p);

    /* "x*$" matches every name for libstdc++ and none for libc++. */
    ggufmap_override end[1] = {{"x*$", "CPU"}};
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_LIBSTDCXX, end, 1, &p, &err) == GGUFMAP_OK);
    CHECK(p && in_context(p, "MTL0") == 0 && in_context(p, "CPU") == 21);
    ggufmap_placement_free(p);
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_AUTO, end, 1, &p, &err) == GGUFMAP_OK);
    CHECK(p && in_context(p, "MTL0") == 20 && in_context(p, "CPU") == 1); /* token_embd stays on the CPU */
    ggufmap_placement_free(p);

    /* llama.cpp compiles an override only when it reaches it. */
    ggufmap_override lazy[2] = {{".", "CPU"}, {"(?i)x", "CPU"}};
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_LIBSTDCXX, lazy, 2, &p, &err) == GGUFMAP_OK);
    CHECK_MSG(p && strstr(ggufmap_placement_warning(p), "-ot '(?i)x=CPU' is never reached"), "%s",
              p ? ggufmap_placement_warning(p) : "");
    ggufmap_placement_free(p);
    lazy[0].pattern = "blk";
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_LIBSTDCXX, lazy, 2, &p, &err) == GGUFMAP_EINVAL);
    CHECK_MSG(strstr(err.message, "-ot '(?i)x=CPU': position 2: invalid regex for libstdc++'s std::regex (error_paren)"),
              "%s", err.message);

    /* A search the library does not finish. */
    ggufmap_override slow[1] = {{"(.*)*x", "CPU"}};
    CHECK(place_with(m, GGUFMAP_DEVICE_CPU, GGUFMAP_REGEX_AUTO, slow, 1, &p, &err) == GGUFMAP_EINVAL);
    CHECK_MSG(strstr(err.message, "tensor 'token_embd.weight'") && strstr(err.message, "step_budget"), "%s",
              err.message);
    CHECK(place_with(m, GGUFMAP_DEVICE_METAL, GGUFMAP_REGEX_AUTO, slow, 1, &p, &err) == GGUFMAP_EINVAL);
    CHECK_MSG(strstr(err.message, "error_complexity"), "%s", err.message);
    ggufmap_model_free(m);
}

/* A placement given a ggufmap_regex_cache keeps its answers there: the
 * next placement (or anyone) reads them without searching.  The proof: a
 * lookup through the memo with another compiled pattern, one that answers
 * the opposite, still gives the remembered answer; a name never searched
 * gets the other pattern's.  Placements with and without the cache agree. */
static void test_cache(void) {
    write_model();
    ggufmap_model *m;
    ggufmap_error err;
    ggufmap_placement *p = NULL, *q = NULL;
    ggufmap_regex_cache *cache = NULL;
    CHECK(ggufmap_model_open(path, 0, &m, &err) == GGUFMAP_OK);
    CHECK(ggufmap_regex_cache_new(&cache) == GGUFMAP_OK && cache);
    ggufmap_override ov[1] = {{"ffn_(up|down)", "CPU"}};
    ggufmap_placement_opts o;
    ggufmap_placement_opts_init(&o);
    o.device = GGUFMAP_DEVICE_METAL;
    o.cpu = GGUFMAP_CPU_GENERIC;
    o.no_repack = true;
    o.regex = GNU;
    o.overrides = ov;
    o.n_overrides = 1;
    o.regex_cache = cache;
    CHECK(ggufmap_placement_build(m, &o, &p, &err) == GGUFMAP_OK);
    CHECK(ggufmap_placement_options(p)->regex_cache == NULL); /* not kept past the call */
    CHECK(ggufmap_placement_build(m, &o, &q, &err) == GGUFMAP_OK);
    o.regex_cache = NULL;
    ggufmap_placement *r = NULL;
    CHECK(ggufmap_placement_build(m, &o, &r, &err) == GGUFMAP_OK);
    CHECK(p && q && r && in_context(p, "CPU") == 5 && in_context(q, "CPU") == 5 && in_context(r, "CPU") == 5);
    CHECK(p && in_context(p, "MTL0") == 16); /* 21 tensors: 4 ffn_up/down and token_embd on the CPU */

    gm_regex_memo *memo = gm_regex_memo_of(cache, ov[0].pattern, strlen(ov[0].pattern), GNU);
    gm_regex *other = NULL; /* matches what the pattern does not, and not what it does */
    gm_regex_error why;
    CHECK(gm_regex_compile("^(?!.*ffn_(up|down))", 20, GNU, &other, &why) == GGUFMAP_OK);
    const char *up = "blk.1.ffn_up.weight", *q_ = "blk.1.attn_q.weight", *never = "blk.9.ffn_up.weight";
    CHECK(memo && gm_regex_memo_search(memo, other, up, strlen(up), &why) == GM_REGEX_MATCH);
    CHECK(memo && gm_regex_memo_search(memo, other, q_, strlen(q_), &why) == GM_REGEX_NOMATCH);
    CHECK(memo && gm_regex_memo_search(memo, other, never, strlen(never), &why) == GM_REGEX_NOMATCH);
    /* another dialect is another memo: searched afresh */
    gm_regex_memo *llvm = gm_regex_memo_of(cache, ov[0].pattern, strlen(ov[0].pattern), LLVM);
    CHECK(llvm && llvm != memo && gm_regex_memo_search(llvm, other, up, strlen(up), &why) == GM_REGEX_NOMATCH);
    /* a search given up is not remembered */
    gm_regex *slow = NULL;
    CHECK(gm_regex_compile("(.*)*x", 6, GNU, &slow, &why) == GGUFMAP_OK);
    gm_regex_memo *memo_slow = gm_regex_memo_of(cache, "(.*)*x", 6, GNU);
    CHECK(gm_regex_memo_search(memo_slow, slow, up, strlen(up), &why) == GM_REGEX_EBUDGET);
    CHECK(gm_regex_memo_search(memo_slow, other, up, strlen(up), &why) == GM_REGEX_NOMATCH);
    gm_regex_free(slow);
    gm_regex_free(other);
    ggufmap_placement_free(p);
    ggufmap_placement_free(q);
    ggufmap_placement_free(r);
    ggufmap_regex_cache_free(cache);
    ggufmap_regex_cache_free(NULL);
    ggufmap_model_free(m);
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_regex");
    test_ordinary();
    test_dialects();
    test_refusals();
    test_limits();
    test_budget();
    test_placement();
    test_cache();
    return check_summary();
}

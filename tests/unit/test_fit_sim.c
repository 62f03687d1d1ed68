/*
 * test_fit_sim.c - fit's shape-only copy of ggml (src/fit_graph.c,
 * fit_sched.c, fit_alloc.c) on small graphs, against what ggml's own graph
 * allocator reserves for the same graphs.
 *
 * Data structure: each case builds one graph with the gm_* ops, splits it
 * for one CPU backend and runs the allocator; the expected buffer size is
 * what ggml_gallocr_reserve gives for the same ops built with ggml
 * (tests/fit/ggml_probe.c, the same graphs; tests/fit/sim_vs_ggml.sh
 * compiles it against the oracle's libggml v0.5.0 and compares the two
 * programs' output line for line).  With --print the program prints
 * "NAME BYTES" per case instead of checking.
 *
 * Workload: a few graphs of a dozen nodes.  Fidelity: the expected values
 * were measured with the real ggml (libggml-base of llama.cpp v0.5.0), not
 * taken from this code.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fit_graph.h"

enum { F32 = 0, F16 = 1, I32 = 26 };

static int32_t input(gm_graph *g, int32_t t) {
    gm_set_input(g, t);
    return t;
}

/* split for the CPU alone and reserve: the buffer ggml-alloc sizes */
static uint64_t reserve(gm_graph *g, int32_t out) {
    gm_set_output(g, out);
    gm_expand(g, out);
    gm_backends be;
    memset(&be, 0, sizeof be);
    be.n = 1;
    be.buft[0] = GM_BUFT_CPU;
    be.alignment[0] = 32;
    gm_split_graph sg;
    uint64_t size[GM_MAX_BACKENDS] = { 0 };
    const bool ok = gm_sched_split(g, &be, &sg) && gm_alloc_reserve(g, &sg, &be, size);
    gm_split_graph_free(&sg);
    gm_graph_free(g);
    return ok ? size[0] : 0;
}

/* the experts' up projection (weights in a buffer of their own), its bias
 * by expert id (ggml_add_id, which ggml-alloc runs in place), a scale (in
 * place), a row sum: y, z and w share one block */
static uint64_t add_id(void) {
    gm_graph g;
    gm_graph_init(&g);
    int32_t as = gm_new_buffered(&g, F32, (int64_t[4]){ 64, 256, 8, 1 }, GM_BUFT_CPU, true);
    int32_t b = gm_new_buffered(&g, F32, (int64_t[4]){ 256, 8, 1, 1 }, GM_BUFT_CPU, true);
    int32_t x = input(&g, gm_new_3d(&g, F32, 64, 1, 64));
    int32_t ids = input(&g, gm_new_2d(&g, I32, 4, 64));
    int32_t y = gm_mul_mat_id(&g, as, x, ids);
    int32_t z = gm_add_id(&g, y, b, ids);
    int32_t w = gm_unary(&g, GM_OP_SCALE, z);
    return reserve(&g, gm_sum_rows(&g, w));
}

/* the one-operand SwiGLU (half the rows) beside the split one (all of them) */
static uint64_t glu(void) {
    gm_graph g;
    gm_graph_init(&g);
    int32_t x = input(&g, gm_new_2d(&g, F32, 128, 16));
    int32_t h = gm_glu(&g, gm_unary(&g, GM_OP_SCALE, x));
    int32_t u = gm_unary(&g, GM_OP_SCALE, x);
    int32_t s = gm_glu_split(&g, u, gm_unary(&g, GM_OP_SCALE, x));
    return reserve(&g, gm_concat(&g, h, gm_sum_rows(&g, s), 0));
}

/* the DSA mask opened on the top-k cells: fill, views of views, set_rows of
 * filled zeros, the add (llama-graph.cpp:3041-3071) */
static uint64_t top_k_mask(void) {
    gm_graph g;
    gm_graph_init(&g);
    int32_t mask = input(&g, gm_new_4d(&g, F16, 256, 32, 1, 1));
    int32_t score = input(&g, gm_new_4d(&g, F32, 256, 32, 1, 1));
    int32_t top_k = gm_cont(&g, gm_top_k(&g, score, 16));
    int32_t all = gm_fill(&g, mask);
    const gm_tensor *a = &g.t[all];
    all = gm_view_4d(&g, all, 1, a->ne[0], a->ne[1], a->ne[3], a->nb[0], a->nb[1], a->nb[2], 0);
    const gm_tensor *t = &g.t[top_k];
    int32_t t3 = gm_view_4d(&g, top_k, t->ne[0], t->ne[1], t->ne[3], 1, t->nb[1], t->nb[2], (uint64_t)t->ne[3] * t->nb[3], 0);
    int32_t zeros = gm_fill(&g, gm_new_4d(&g, F32, 1, g.t[t3].ne[0], g.t[t3].ne[1], g.t[t3].ne[2]));
    int32_t m = gm_set_rows(&g, all, zeros, t3);
    const gm_tensor *mt = &g.t[m];
    m = gm_view_4d(&g, m, mt->ne[1], mt->ne[2], 1, mt->ne[3], mt->nb[2], mt->nb[3], mt->nb[3], 0);
    m = gm_binary(&g, GM_OP_ADD, m, mask);
    return reserve(&g, gm_sum_rows(&g, m));
}

/* build_moe_ffn's router (softmax, top-k, the normalized weights, expanded
 * early) and the weighted sum of the experts' views (the views expanded
 * before the adds) */
static uint64_t moe(void) {
    gm_graph g;
    gm_graph_init(&g);
    const int64_t n = 48, used = 3;
    int32_t gate_inp = gm_new_buffered(&g, F32, (int64_t[4]){ 64, 8, 1, 1 }, GM_BUFT_CPU, true);
    int32_t up = gm_new_buffered(&g, F32, (int64_t[4]){ 64, 32, 8, 1 }, GM_BUFT_CPU, true);
    int32_t down = gm_new_buffered(&g, F32, (int64_t[4]){ 32, 64, 8, 1 }, GM_BUFT_CPU, true);
    int32_t cur = input(&g, gm_new_2d(&g, F32, 64, n));
    int32_t probs = gm_soft_max_ext(&g, gm_mul_mat(&g, gate_inp, cur), GM_NONE, GM_NONE);
    int32_t sel = gm_argsort_top_k(&g, probs, used);
    int32_t wts = gm_get_rows(&g, gm_reshape_3d(&g, probs, 1, 8, n), sel);
    wts = gm_reshape_2d(&g, wts, used, n);
    wts = gm_binary(&g, GM_OP_DIV, wts, gm_unary(&g, GM_OP_CLAMP, gm_sum_rows(&g, wts)));
    wts = gm_reshape_3d(&g, wts, 1, used, n);
    gm_expand(&g, wts);
    int32_t x = gm_reshape_3d(&g, cur, 64, 1, n);
    int32_t h = gm_unary(&g, GM_OP_UNARY, gm_mul_mat_id(&g, up, x, sel));
    int32_t e = gm_binary(&g, GM_OP_MUL, gm_mul_mat_id(&g, down, h, sel), wts);
    gm_expand(&g, e);
    int32_t v[3];
    for (int i = 0; i < used; i++) {
        v[i] = gm_view_2d(&g, e, 64, n, g.t[e].nb[2], (uint64_t)i * g.t[e].nb[1]);
        gm_expand(&g, v[i]);
    }
    int32_t o = v[0];
    for (int i = 1; i < used; i++) {
        o = gm_binary(&g, GM_OP_ADD, o, v[i]);
        gm_expand(&g, o);
    }
    return reserve(&g, o);
}

static const struct sim_case {
    const char *name;
    uint64_t (*run)(void);
    uint64_t ggml;      /* ggml_gallocr_get_buffer_size, libggml-base v0.5.0 (tests/fit/ggml_probe.c) */
} CASES[] = {
    { "add_id", add_id, 279552 },
    { "glu", glu, 28672 },
    { "topk_mask", top_k_mask, 53248 },
    { "moe", moe, 70656 },
};

int main(int argc, char **argv) {
    const bool print = argc > 1 && strcmp(argv[1], "--print") == 0;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const uint64_t got = CASES[i].run();
        if (print) printf("%s %llu\n", CASES[i].name, (unsigned long long)got);
        else CHECK_MSG(got == CASES[i].ggml, "%s: %llu bytes, ggml %llu", CASES[i].name, (unsigned long long)got,
                       (unsigned long long)CASES[i].ggml);
    }
    return print ? 0 : check_summary();
}

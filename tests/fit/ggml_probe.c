/*
 * ggml_probe.c - ggml's own graph allocator (libggml-base of llama.cpp
 * v0.5.0, the oracle's) over the small graphs of tests/unit/test_fit_sim.c,
 * built with the same ops: prints "NAME BYTES" per graph, the buffer
 * ggml_gallocr_reserve sizes on the CPU buffer type.  tests/fit/sim_vs_ggml.sh
 * compiles it against the oracle's headers and library and compares its
 * output with test_fit_sim --print; the values test_fit_sim checks
 * without the oracle are this program's.
 */
#include <math.h>
#include <stdio.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"

static struct ggml_context *ctx_new(void) {
    struct ggml_init_params p = { 64 * 1024 * 1024, NULL, true };
    return ggml_init(p);
}

static size_t reserve(struct ggml_context *ctx, struct ggml_tensor *out) {
    struct ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_set_output(out);
    ggml_build_forward_expand(gf, out);
    ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_reserve(ga, gf);
    size_t s = ggml_gallocr_get_buffer_size(ga, 0);
    ggml_gallocr_free(ga);
    return s;
}

int main(void) {
    /* 1: experts' up projection (weights in a buffer of their own), its bias by
     * expert id (add_id: in place), a scale (in place), a row sum */
    {
        struct ggml_context *cw = ctx_new();
        struct ggml_tensor *as = ggml_new_tensor_3d(cw, GGML_TYPE_F32, 64, 256, 8);
        struct ggml_tensor *b = ggml_new_tensor_2d(cw, GGML_TYPE_F32, 256, 8);
        ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(cw, ggml_backend_cpu_buffer_type());
        struct ggml_context *ctx = ctx_new();
        struct ggml_tensor *x = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, 64, 1, 64); ggml_set_input(x);
        struct ggml_tensor *ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, 4, 64); ggml_set_input(ids);
        struct ggml_tensor *y = ggml_mul_mat_id(ctx, as, x, ids);
        struct ggml_tensor *z = ggml_add_id(ctx, y, b, ids);
        struct ggml_tensor *w = ggml_scale(ctx, z, 0.5f);
        struct ggml_tensor *o = ggml_sum_rows(ctx, w);
        printf("add_id %zu\n", reserve(ctx, o));
        ggml_free(ctx);
        ggml_backend_buffer_free(wbuf);
        ggml_free(cw);
    }
    /* 2: the one-operand SwiGLU halves the rows; the split one keeps them */
    {
        struct ggml_context *ctx = ctx_new();
        struct ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 128, 16); ggml_set_input(x);
        struct ggml_tensor *h = ggml_swiglu(ctx, ggml_scale(ctx, x, 2.0f));
        struct ggml_tensor *u = ggml_scale(ctx, x, 3.0f);
        struct ggml_tensor *s = ggml_swiglu_split(ctx, u, ggml_scale(ctx, x, 4.0f));
        struct ggml_tensor *o = ggml_concat(ctx, h, ggml_sum_rows(ctx, s), 0);
        printf("glu %zu\n", reserve(ctx, o));
        ggml_free(ctx);
    }
    /* 3: the top-k-opened mask of DSA: fill, views, set_rows of zeros, add */
    {
        struct ggml_context *ctx = ctx_new();
        struct ggml_tensor *mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, 256, 32, 1, 1); ggml_set_input(mask);
        struct ggml_tensor *score = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 256, 32, 1, 1); ggml_set_input(score);
        struct ggml_tensor *top_k = ggml_cont(ctx, ggml_top_k(ctx, score, 16));
        struct ggml_tensor *all = ggml_fill(ctx, mask, -INFINITY);
        all = ggml_view_4d(ctx, all, 1, all->ne[0], all->ne[1], all->ne[3], all->nb[0], all->nb[1], all->nb[2], 0);
        struct ggml_tensor *t3 = ggml_view_4d(ctx, top_k, top_k->ne[0], top_k->ne[1], top_k->ne[3], 1, top_k->nb[1], top_k->nb[2], top_k->ne[3] * top_k->nb[3], 0);
        struct ggml_tensor *zeros = ggml_fill(ctx, ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, t3->ne[0], t3->ne[1], t3->ne[2]), 0.0f);
        struct ggml_tensor *m = ggml_set_rows(ctx, all, zeros, t3);
        m = ggml_view_4d(ctx, m, m->ne[1], m->ne[2], 1, m->ne[3], m->nb[2], m->nb[3], m->nb[3], 0);
        m = ggml_add(ctx, m, mask);
        printf("topk_mask %zu\n", reserve(ctx, ggml_sum_rows(ctx, m)));
        ggml_free(ctx);
    }
    /* 4: build_moe_ffn's router and the weighted sum of the experts' views
     * (the views expanded before the adds) */
    {
        struct ggml_context *cw = ctx_new();
        struct ggml_tensor *gate_inp = ggml_new_tensor_2d(cw, GGML_TYPE_F32, 64, 8);
        struct ggml_tensor *up = ggml_new_tensor_3d(cw, GGML_TYPE_F32, 64, 32, 8);
        struct ggml_tensor *down = ggml_new_tensor_3d(cw, GGML_TYPE_F32, 32, 64, 8);
        ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(cw, ggml_backend_cpu_buffer_type());
        struct ggml_context *ctx = ctx_new();
        struct ggml_cgraph *gf = ggml_new_graph(ctx);
        const int64_t n = 48, used = 3;
        struct ggml_tensor *cur = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 64, n); ggml_set_input(cur);
        struct ggml_tensor *probs = ggml_soft_max(ctx, ggml_mul_mat(ctx, gate_inp, cur));
        struct ggml_tensor *sel = ggml_argsort_top_k(ctx, probs, used);
        struct ggml_tensor *wts = ggml_get_rows(ctx, ggml_reshape_3d(ctx, probs, 1, 8, n), sel);
        wts = ggml_reshape_2d(ctx, wts, used, n);
        wts = ggml_div(ctx, wts, ggml_clamp(ctx, ggml_sum_rows(ctx, wts), 6.103515625e-5f, INFINITY));
        wts = ggml_reshape_3d(ctx, wts, 1, used, n);
        ggml_build_forward_expand(gf, wts);
        struct ggml_tensor *x = ggml_reshape_3d(ctx, cur, 64, 1, n);
        struct ggml_tensor *h = ggml_silu(ctx, ggml_mul_mat_id(ctx, up, x, sel));
        struct ggml_tensor *e = ggml_mul(ctx, ggml_mul_mat_id(ctx, down, h, sel), wts);
        ggml_build_forward_expand(gf, e);
        struct ggml_tensor *v[3];
        for (int i = 0; i < used; i++) {
            v[i] = ggml_view_2d(ctx, e, 64, n, e->nb[2], (size_t)i * e->nb[1]);
            ggml_build_forward_expand(gf, v[i]);
        }
        struct ggml_tensor *o = v[0];
        for (int i = 1; i < used; i++) {
            o = ggml_add(ctx, o, v[i]);
            ggml_build_forward_expand(gf, o);
        }
        ggml_set_output(o);
        ggml_build_forward_expand(gf, o);
        ggml_gallocr_t ga = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
        ggml_gallocr_reserve(ga, gf);
        printf("moe %zu\n", ggml_gallocr_get_buffer_size(ga, 0));
        ggml_gallocr_free(ga);
        ggml_free(ctx);
        ggml_backend_buffer_free(wbuf);
        ggml_free(cw);
    }
    return 0;
}

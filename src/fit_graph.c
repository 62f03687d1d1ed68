/*
 * fit_graph.c - tensors and ops with ggml's shapes (ggml/src/ggml.c), and
 * the forward expansion that orders a graph.
 *
 * Every constructor mirrors the ggml one it names: the result's type, ne
 * and nb, its sources in ggml's slots, and whether it is a view of another
 * tensor (views never get memory of their own from the allocator).  A view's
 * view_src is always the root tensor and view_offs the absolute offset in it
 * (ggml_new_tensor_impl folds chains of views).  Data is never computed.
 */
#include "fit_graph.h"
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/types.h"

/* ------------------------------------------------------------------------ */
/* The tensor array                                                          */
/* ------------------------------------------------------------------------ */

void gm_graph_init(gm_graph *g) { memset(g, 0, sizeof *g); }

void gm_graph_abort(gm_graph *g, const char *fmt, ...) {
    if (g->aborts[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->aborts, sizeof g->aborts, fmt, ap);
    va_end(ap);
}

int64_t gm_div(gm_graph *g, int64_t a, int64_t b) {
    if (b != 0) return a / b;
    gm_graph_abort(g, "an integer division by zero building the graph (SIGFPE: llama.cpp crashes)");
    return 0;
}

void gm_graph_free(gm_graph *g) {
    free(g->t);
    free(g->nodes);
    free(g->leafs);
    free(g->visited);
    memset(g, 0, sizeof *g);
}

void gm_graph_clear_order(gm_graph *g) {
    g->n_nodes = g->n_leafs = 0;
    if (g->visited) memset(g->visited, 0, (size_t)g->cap);
}

static bool grow(gm_graph *g) {
    int32_t cap = g->cap ? g->cap * 2 : 1024;
    gm_tensor *t = realloc(g->t, (size_t)cap * sizeof *t);
    uint8_t *v = t ? realloc(g->visited, (size_t)cap) : NULL;
    if (t) g->t = t;
    if (!t || !v) {
        g->oom = true;
        return false;
    }
    memset(v + g->cap, 0, (size_t)(cap - g->cap));
    g->visited = v;
    g->cap = cap;
    return true;
}

static uint64_t type_size(int32_t type) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return t ? t->type_size : 0;
}

static int64_t block_size(int32_t type) {
    const ggufmap_type_info *t = ggufmap_type(type);
    return t && t->block_size ? t->block_size : 1;
}

/* Whether a tensor's strides and bytes hold in 64 bits and under
 * GM_FIT_MAX_BYTES (hostile sizes and contexts: -c 4294967040 -ub
 * 4294967040 makes a mask of 2^64 elements). */
static bool size_in_range(const gm_tensor *t) {
    uint64_t bytes = type_size(t->type), rows = 1;
    for (int i = 0; i < 4; i++)
        if (t->ne[i] < 0) return false;
    if (!gm_mul_ok(bytes, (uint64_t)t->ne[0] / (uint64_t)block_size(t->type), &bytes)) return false;
    for (int i = 1; i < 4; i++)
        if (!gm_mul_ok(rows, (uint64_t)t->ne[i], &rows)) return false;
    return gm_mul_ok(bytes, rows, &bytes) && bytes <= GM_FIT_MAX_BYTES;
}

/* ggml_new_tensor_impl: ne beyond n_dims are 1, nb contiguous; a view
 * refers to the root of view_src. */
static int32_t new_tensor(gm_graph *g, int32_t type, int n_dims, const int64_t *ne, int32_t view_src, uint64_t offs) {
    if (g->oom) return 0;
    /* llama.cpp's compute context holds max_nodes tensors and the graph:
     * one more and ggml_new_object finds no room (not enough space in the
     * context's memory pool), ggml_new_tensor_impl asserts */
    if (g->max_ctx_tensors && ++g->n_ctx_tensors > g->max_ctx_tensors) {
        gm_graph_abort(g, "ggml_new_tensor_impl building the graph: not enough space in the context's memory pool "
                       "(%lld tensors): GGML_ASSERT(obj_new) failed (ggml.c:1805)", (long long)g->max_ctx_tensors);
        g->oom = true;
        return 0;
    }
    if (g->n == g->cap && !grow(g)) return 0;
    if (view_src != GM_NONE && g->t[view_src].view_src != GM_NONE) {
        offs += g->t[view_src].view_offs;
        view_src = g->t[view_src].view_src;
    }
    int32_t id = g->n++;
    gm_tensor *t = &g->t[id];
    memset(t, 0, sizeof *t);
    t->type = type;
    for (int i = 0; i < 4; i++) t->ne[i] = i < n_dims ? ne[i] : 1;
    t->nb[0] = type_size(type);
    t->nb[1] = t->nb[0] * (uint64_t)(t->ne[0] / block_size(type));
    for (int i = 2; i < 4; i++) t->nb[i] = t->nb[i - 1] * (uint64_t)t->ne[i - 1];
    if (!size_in_range(t)) g->too_big = true;
    for (int i = 0; i < GM_MAX_SRC; i++) t->src[i] = GM_NONE;
    t->view_src = view_src;
    t->view_offs = offs;
    t->user_backend = GM_NONE;
    t->il = -1;
    t->buft = view_src != GM_NONE ? g->t[view_src].buft : GM_BUFT_NONE;
    t->weight = view_src != GM_NONE && g->t[view_src].weight;
    return id;
}

int32_t gm_new_tensor(gm_graph *g, int32_t type, int n_dims, const int64_t ne[4]) {
    return new_tensor(g, type, n_dims, ne, GM_NONE, 0);
}
int32_t gm_new_1d(gm_graph *g, int32_t type, int64_t ne0) { return gm_new_tensor(g, type, 1, (int64_t[4]){ ne0 }); }
int32_t gm_new_2d(gm_graph *g, int32_t type, int64_t ne0, int64_t ne1) {
    return gm_new_tensor(g, type, 2, (int64_t[4]){ ne0, ne1 });
}
int32_t gm_new_3d(gm_graph *g, int32_t type, int64_t ne0, int64_t ne1, int64_t ne2) {
    return gm_new_tensor(g, type, 3, (int64_t[4]){ ne0, ne1, ne2 });
}
int32_t gm_new_4d(gm_graph *g, int32_t type, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return gm_new_tensor(g, type, 4, (int64_t[4]){ ne0, ne1, ne2, ne3 });
}

int32_t gm_new_buffered(gm_graph *g, int32_t type, const int64_t ne[4], gm_buft buft, bool weight) {
    g->n_ctx_tensors--; /* a weight or a cache: in the model's or the memory's context */
    int32_t id = gm_new_tensor(g, type, 4, ne);
    g->t[id].buft = (uint8_t)buft;
    g->t[id].weight = weight;
    return id;
}

void gm_set_input(gm_graph *g, int32_t t) { g->t[t].flags |= GM_FLAG_INPUT; }
void gm_set_output(gm_graph *g, int32_t t) { g->t[t].flags |= GM_FLAG_OUTPUT; }

/* ggml_nbytes */
uint64_t gm_nbytes(const gm_graph *g, int32_t id) {
    const gm_tensor *t = &g->t[id];
    for (int i = 0; i < 4; i++)
        if (t->ne[i] <= 0) return 0;
    const int64_t blck = block_size(t->type);
    uint64_t n = blck == 1 ? type_size(t->type) : (uint64_t)t->ne[0] * t->nb[0] / (uint64_t)blck;
    for (int i = blck == 1 ? 0 : 1; i < 4; i++) n += (uint64_t)(t->ne[i] - 1) * t->nb[i];
    return n;
}

bool gm_is_contiguous(const gm_graph *g, int32_t id) {
    const gm_tensor *t = &g->t[id];
    uint64_t next = type_size(t->type);
    for (int i = 0; i < 4; i++) {
        if (t->ne[i] != 1) {
            if (t->nb[i] != next) return false;
            next *= (uint64_t)(i == 0 ? t->ne[0] / block_size(t->type) : t->ne[i]);
        }
    }
    return true;
}

int64_t gm_nrows(const gm_graph *g, int32_t id) { return g->t[id].ne[1] * g->t[id].ne[2] * g->t[id].ne[3]; }

static void set_src(gm_graph *g, int32_t id, int slot, int32_t src) {
    if (!g->oom) g->t[id].src[slot] = src;
}

static void set_op(gm_graph *g, int32_t id, gm_op op) {
    if (!g->oom) g->t[id].op = (uint8_t)op;
}

/* ggml_dup_tensor: a's type and shape, contiguous */
static int32_t dup_tensor(gm_graph *g, int32_t a) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    return new_tensor(g, g->t[a].type, 4, ne, GM_NONE, 0);
}

/* ------------------------------------------------------------------------ */
/* Views                                                                     */
/* ------------------------------------------------------------------------ */

int32_t gm_view_tensor(gm_graph *g, int32_t a) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    int32_t r = new_tensor(g, g->t[a].type, 4, ne, a, 0);
    if (!g->oom) memcpy(g->t[r].nb, g->t[a].nb, sizeof g->t[r].nb);
    return r;
}

static int32_t view_impl(gm_graph *g, int32_t a, int n_dims, const int64_t *ne, uint64_t offset) {
    int32_t r = new_tensor(g, g->t[a].type, n_dims, ne, a, offset);
    set_op(g, r, GM_OP_VIEW);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_view_1d(gm_graph *g, int32_t a, int64_t ne0, uint64_t offset) { return view_impl(g, a, 1, &ne0, offset); }

int32_t gm_view_2d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, uint64_t nb1, uint64_t offset) {
    int32_t r = view_impl(g, a, 2, (int64_t[2]){ ne0, ne1 }, offset);
    if (g->oom) return r;
    g->t[r].nb[1] = nb1;
    g->t[r].nb[2] = g->t[r].nb[3] = nb1 * (uint64_t)ne1;
    return r;
}

int32_t gm_view_3d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, uint64_t nb1, uint64_t nb2,
                   uint64_t offset) {
    int32_t r = view_impl(g, a, 3, (int64_t[3]){ ne0, ne1, ne2 }, offset);
    if (g->oom) return r;
    g->t[r].nb[1] = nb1;
    g->t[r].nb[2] = nb2;
    g->t[r].nb[3] = nb2 * (uint64_t)ne2;
    return r;
}

int32_t gm_view_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3, uint64_t nb1,
                   uint64_t nb2, uint64_t nb3, uint64_t offset) {
    int32_t r = view_impl(g, a, 4, (int64_t[4]){ ne0, ne1, ne2, ne3 }, offset);
    if (g->oom) return r;
    g->t[r].nb[1] = nb1;
    g->t[r].nb[2] = nb2;
    g->t[r].nb[3] = nb3;
    return r;
}

/* ggml_reshape_Nd's GGML_ASSERT(ggml_nelements(a) == ne0*...) (ggml.c) */
static void reshape_check(gm_graph *g, int32_t a, int n_dims, const int64_t *ne) {
    static const char *const what[4] = { "ne0", "ne0*ne1", "ne0*ne1*ne2", "ne0*ne1*ne2*ne3" };
    static const int line[4] = { 3712, 3730, 3749, 3769 };
    uint64_t want = 1, have = 1;
    bool ok = true;
    for (int i = 0; i < n_dims; i++) ok = ok && ne[i] >= 0 && gm_mul_ok(want, (uint64_t)ne[i], &want);
    for (int i = 0; i < 4; i++) ok = ok && gm_mul_ok(have, (uint64_t)g->t[a].ne[i], &have);
    if (ok && want == have) return;
    gm_graph_abort(g, "ggml_reshape_%dd building the graph: GGML_ASSERT(ggml_nelements(a) == %s) failed "
                   "(ggml.c:%d)", n_dims, what[n_dims - 1], line[n_dims - 1]);
}

static int32_t reshape(gm_graph *g, int32_t a, int n_dims, const int64_t *ne) {
    if (!g->oom) reshape_check(g, a, n_dims, ne);
    int32_t r = new_tensor(g, g->t[a].type, n_dims, ne, a, 0);
    set_op(g, r, GM_OP_RESHAPE);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_reshape_1d(gm_graph *g, int32_t a, int64_t ne0) { return reshape(g, a, 1, &ne0); }
int32_t gm_reshape_2d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1) {
    return reshape(g, a, 2, (int64_t[2]){ ne0, ne1 });
}
int32_t gm_reshape_3d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2) {
    return reshape(g, a, 3, (int64_t[3]){ ne0, ne1, ne2 });
}
int32_t gm_reshape_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    return reshape(g, a, 4, (int64_t[4]){ ne0, ne1, ne2, ne3 });
}

int32_t gm_permute(gm_graph *g, int32_t a, int ax0, int ax1, int ax2, int ax3) {
    int32_t r = gm_view_tensor(g, a);
    if (g->oom) return r;
    const int ax[4] = { ax0, ax1, ax2, ax3 };
    gm_tensor *t = &g->t[r];
    const gm_tensor *s = &g->t[a];
    for (int i = 0; i < 4; i++) {
        t->ne[ax[i]] = s->ne[i];
        t->nb[ax[i]] = s->nb[i];
    }
    t->op = GM_OP_PERMUTE;
    t->src[0] = a;
    return r;
}

int32_t gm_transpose(gm_graph *g, int32_t a) {
    int32_t r = gm_view_tensor(g, a);
    if (g->oom) return r;
    gm_tensor *t = &g->t[r];
    const gm_tensor *s = &g->t[a];
    t->ne[0] = s->ne[1], t->ne[1] = s->ne[0];
    t->nb[0] = s->nb[1], t->nb[1] = s->nb[0];
    t->op = GM_OP_TRANSPOSE;
    t->src[0] = a;
    return r;
}

/* ------------------------------------------------------------------------ */
/* Copies                                                                    */
/* ------------------------------------------------------------------------ */

int32_t gm_cont(gm_graph *g, int32_t a) {
    int32_t r = dup_tensor(g, a);
    set_op(g, r, GM_OP_CONT);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_cont_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    int32_t r = gm_new_4d(g, g->t[a].type, ne0, ne1, ne2, ne3);
    set_op(g, r, GM_OP_CONT);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_cont_2d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1) { return gm_cont_4d(g, a, ne0, ne1, 1, 1); }

/* ggml_cpy: a view of the destination b */
int32_t gm_cpy(gm_graph *g, int32_t a, int32_t b) {
    int32_t r = gm_view_tensor(g, b);
    set_op(g, r, GM_OP_CPY);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

/* ggml_cast: a new tensor whose second source is itself (ggml.c, for the
 * backends' sake; the allocator counts that self-reference as a child) */
int32_t gm_cast(gm_graph *g, int32_t a, int32_t type) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    int32_t r = new_tensor(g, type, 4, ne, GM_NONE, 0);
    set_op(g, r, GM_OP_CPY);
    set_src(g, r, 0, a);
    set_src(g, r, 1, r);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Element-wise ops                                                          */
/* ------------------------------------------------------------------------ */

int32_t gm_binary(gm_graph *g, gm_op op, int32_t a, int32_t b) {
    int32_t r = dup_tensor(g, a);
    set_op(g, r, op);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

int32_t gm_binary_inplace(gm_graph *g, gm_op op, int32_t a, int32_t b) {
    int32_t r = gm_view_tensor(g, a);
    set_op(g, r, op);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

int32_t gm_unary(gm_graph *g, gm_op op, int32_t a) {
    int32_t r = dup_tensor(g, a);
    set_op(g, r, op);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_unary_inplace(gm_graph *g, gm_op op, int32_t a) {
    int32_t r = gm_view_tensor(g, a);
    set_op(g, r, op);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_op2(gm_graph *g, gm_op op, int32_t a, int32_t b) { return gm_binary(g, op, a, b); }

int32_t gm_rope(gm_graph *g, int32_t a, int32_t pos, int32_t freq_factors) {
    int32_t r = dup_tensor(g, a);
    set_op(g, r, GM_OP_ROPE);
    set_src(g, r, 0, a);
    set_src(g, r, 1, pos);
    set_src(g, r, 2, freq_factors);
    return r;
}

/* ggml_soft_max_ext, then ggml_soft_max_add_sinks (src[2]) */
int32_t gm_soft_max_ext(gm_graph *g, int32_t a, int32_t mask, int32_t sinks) {
    int32_t r = dup_tensor(g, a);
    set_op(g, r, GM_OP_SOFT_MAX);
    set_src(g, r, 0, a);
    set_src(g, r, 1, mask);
    set_src(g, r, 2, sinks);
    return r;
}

/* ggml_glu_impl with a second operand: a's shape */
int32_t gm_glu_split(gm_graph *g, int32_t a, int32_t b) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    int32_t r = new_tensor(g, g->t[a].type, 4, ne, GM_NONE, 0);
    set_op(g, r, GM_OP_GLU);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

int32_t gm_glu(gm_graph *g, int32_t a) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    ne[0] /= 2;
    int32_t r = new_tensor(g, g->t[a].type, 4, ne, GM_NONE, 0);
    set_op(g, r, GM_OP_GLU);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_add_id(gm_graph *g, int32_t a, int32_t b, int32_t ids) {
    int32_t r = dup_tensor(g, a);
    set_op(g, r, GM_OP_ADD_ID);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    set_src(g, r, 2, ids);
    return r;
}

int32_t gm_fill(gm_graph *g, int32_t a) { return gm_unary(g, GM_OP_FILL, a); }
int32_t gm_fill_inplace(gm_graph *g, int32_t a) { return gm_unary_inplace(g, GM_OP_FILL, a); }

/* ------------------------------------------------------------------------ */
/* Matrix products, rows, reductions                                         */
/* ------------------------------------------------------------------------ */

int32_t gm_mul_mat(gm_graph *g, int32_t a, int32_t b) {
    const gm_tensor *x = &g->t[a], *y = &g->t[b];
    int32_t r = gm_new_4d(g, 0, x->ne[1], y->ne[1], y->ne[2], y->ne[3]);
    set_op(g, r, GM_OP_MUL_MAT);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

int32_t gm_mul_mat_id(gm_graph *g, int32_t as, int32_t b, int32_t ids) {
    int32_t r = gm_new_4d(g, 0, g->t[as].ne[1], g->t[ids].ne[0], g->t[b].ne[2], 1);
    set_op(g, r, GM_OP_MUL_MAT_ID);
    set_src(g, r, 0, as);
    set_src(g, r, 1, b);
    set_src(g, r, 2, ids);
    return r;
}

int32_t gm_get_rows(gm_graph *g, int32_t a, int32_t b) {
    const int32_t i32 = 26; /* GGML_TYPE_I32 */
    const gm_tensor *y = &g->t[b];
    int32_t r = gm_new_4d(g, g->t[a].type == i32 ? i32 : 0, g->t[a].ne[0], y->ne[0], y->ne[1], y->ne[2]);
    set_op(g, r, GM_OP_GET_ROWS);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

/* ggml_set_rows: a view of the destination a; sources b, c, a */
int32_t gm_set_rows(gm_graph *g, int32_t a, int32_t b, int32_t c) {
    int32_t r = gm_view_tensor(g, a);
    set_op(g, r, GM_OP_SET_ROWS);
    set_src(g, r, 0, b);
    set_src(g, r, 1, c);
    set_src(g, r, 2, a);
    return r;
}

int32_t gm_sum_rows(gm_graph *g, int32_t a) {
    const gm_tensor *x = &g->t[a];
    int32_t r = gm_new_4d(g, x->type, 1, x->ne[1], x->ne[2], x->ne[3]);
    set_op(g, r, GM_OP_SUM_ROWS);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_repeat_4d(gm_graph *g, int32_t a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    int32_t r = gm_new_4d(g, g->t[a].type, ne0, ne1, ne2, ne3);
    set_op(g, r, GM_OP_REPEAT);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_concat(gm_graph *g, int32_t a, int32_t b, int dim) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    ne[dim] += g->t[b].ne[dim];
    int32_t r = gm_new_tensor(g, g->t[a].type, 4, ne);
    set_op(g, r, GM_OP_CONCAT);
    set_src(g, r, 0, a);
    set_src(g, r, 1, b);
    return r;
}

int32_t gm_pad_tensor(gm_graph *g, int32_t a, int p0, int p1, int p2, int p3) {
    const gm_tensor *x = &g->t[a];
    int32_t r = gm_new_4d(g, x->type, x->ne[0] + p0, x->ne[1] + p1, x->ne[2] + p2, x->ne[3] + p3);
    set_op(g, r, GM_OP_PAD);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_argsort(gm_graph *g, int32_t a) {
    int64_t ne[4];
    memcpy(ne, g->t[a].ne, sizeof ne);
    int32_t r = gm_new_tensor(g, 26, 4, ne);
    set_op(g, r, GM_OP_ARGSORT);
    set_src(g, r, 0, a);
    return r;
}

int32_t gm_argsort_top_k(gm_graph *g, int32_t a, int64_t k) {
    int32_t s = gm_argsort(g, a);
    const gm_tensor *x = &g->t[s];
    return gm_view_4d(g, s, k, x->ne[1], x->ne[2], x->ne[3], x->nb[1], x->nb[2], x->nb[3], 0);
}

int32_t gm_top_k(gm_graph *g, int32_t a, int64_t k) {
    const gm_tensor *x = &g->t[a];
    int32_t r = gm_new_4d(g, 26, k, x->ne[1], x->ne[2], x->ne[3]);
    set_op(g, r, GM_OP_TOP_K);
    set_src(g, r, 0, a);
    return r;
}

/* result permuted (0, 2, 1, 3): { v->ne[0], q->ne[2], q->ne[1], q->ne[3] } f32 */
int32_t gm_flash_attn_ext(gm_graph *g, int32_t q, int32_t k, int32_t v, int32_t mask, int32_t sinks) {
    const gm_tensor *x = &g->t[q];
    int32_t r = gm_new_4d(g, 0, g->t[v].ne[0], x->ne[2], x->ne[1], x->ne[3]);
    set_op(g, r, GM_OP_FLASH_ATTN_EXT);
    set_src(g, r, 0, q);
    set_src(g, r, 1, k);
    set_src(g, r, 2, v);
    set_src(g, r, 3, mask);
    set_src(g, r, 4, sinks);
    return r;
}

int32_t gm_op_shaped(gm_graph *g, gm_op op, int32_t type, int n_dims, const int64_t ne[4], const int32_t *srcs,
                     int n_srcs) {
    int32_t r = gm_new_tensor(g, type, n_dims, ne);
    set_op(g, r, op);
    for (int i = 0; i < n_srcs && i < GM_MAX_SRC; i++) set_src(g, r, i, srcs[i]);
    return r;
}

/* ------------------------------------------------------------------------ */
/* ggml_build_forward_expand (ggml.c ggml_visit_parents_graph)               */
/* ------------------------------------------------------------------------ */

static bool push_order(gm_graph *g, bool leaf, int32_t t) {
    if (g->n_nodes + g->n_leafs + 1 > g->cap_order) {
        int32_t cap = g->cap_order ? g->cap_order * 2 : 1024;
        int32_t *n = realloc(g->nodes, (size_t)cap * sizeof *n);
        if (n) g->nodes = n;
        int32_t *l = n ? realloc(g->leafs, (size_t)cap * sizeof *l) : NULL;
        if (l) g->leafs = l;
        if (!n || !l) {
            g->oom = true;
            return false;
        }
        g->cap_order = cap;
    }
    if (leaf) g->leafs[g->n_leafs++] = t;
    else g->nodes[g->n_nodes++] = t;
    return true;
}

/* Post-order: sources left to right, then the tensor, once.  An explicit
 * stack keeps deep graphs (hundreds of layers) off the C stack. */
void gm_expand(gm_graph *g, int32_t root) {
    if (g->oom || g->visited[root]) return;
    int32_t *stack = malloc((size_t)g->n * 2 * sizeof *stack);
    if (!stack) {
        g->oom = true;
        return;
    }
    int32_t sp = 0;
    stack[sp++] = root, stack[sp++] = 0;
    g->visited[root] = 1;
    while (sp > 0 && !g->oom) {
        int32_t t = stack[sp - 2], next = stack[sp - 1];
        if (next < GM_MAX_SRC) {
            stack[sp - 1] = next + 1;
            int32_t s = g->t[t].src[next];
            if (s != GM_NONE && !g->visited[s]) {
                g->visited[s] = 1;
                stack[sp++] = s, stack[sp++] = 0;
            }
            continue;
        }
        sp -= 2;
        push_order(g, g->t[t].op == GM_OP_NONE, t);
    }
    free(stack);
}

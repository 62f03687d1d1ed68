/*
 * fit_sched.c - ggml_backend_sched_split_graph (ggml-backend.cpp:1066-1590)
 * over the shape-only graph: which backend computes each node, where the
 * graph splits, and which tensors are copied into a split's backend.
 *
 * Backends are in priority order, the GPU (if any) first and the CPU last.
 * A GPU runs every op (the fake devices' supports_op); the CPU runs every op
 * but one whose first sources hold a weight in one of its extra buffer
 * types, which that type judges (CPU_REPACK: the matrix products it
 * repacked, of F32 inputs; AMX: 2-D products of F32 contiguous inputs).
 * The assignment:
 *   pass 1  a tensor with memory goes where its buffer type is accepted;
 *           inputs go to the CPU; an op with a weight goes to the weight's
 *           backend, or to the GPU when the weight is host memory and the
 *           GPU wants the op (offload_op, >= 32 rows)
 *   pass 2  GPU assignments spread down then up, then any spreads
 *   pass 3  a node moves to a higher-priority backend with the same buffer type
 *   pass 4  sources and views take their user's or source's backend
 *   pass 5  splits at backend changes; a source on a backend whose buffer
 *           type the split's backend cannot read gets a copy in the split
 * The copies are new tensors (ggml_dup_tensor_layout: same type, shape and
 * strides); the split graph lists, per split, a dependency view and the copy
 * for each input, then the split's nodes (n_copies is 1: no pipelining).
 */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fit_graph.h"

typedef struct sched {
    gm_graph *g;
    const gm_backends *be;
    int8_t *backend;      /* per tensor, -1 unassigned */
    int32_t *copy;        /* per tensor x backend: its copy there, GM_NONE */
    int32_t unrunnable;   /* the first node no backend runs, GM_NONE */
} sched;

static bool is_view_op(uint8_t op) {
    return op == GM_OP_VIEW || op == GM_OP_RESHAPE || op == GM_OP_PERMUTE || op == GM_OP_TRANSPOSE;
}

static bool supports_buft(const sched *s, int b, gm_buft buft) {
    if (s->be->gpu && b == 0) return buft == GM_BUFT_GPU;
    return buft == GM_BUFT_CPU || buft == GM_BUFT_REPACK || buft == GM_BUFT_AMX || buft == GM_BUFT_HOST;
}

static int last(const sched *s) { return s->be->n - 1; }

static int n_dims(const gm_tensor *x) {
    for (int i = 3; i >= 1; i--)
        if (x->ne[i] > 1) return i + 1;
    return 1;
}

/* The extra buffer types' supports_op (repack.cpp:5190-5224, amx.cpp:141-187):
 * only matrix products of F32 inputs, of the weights they hold. */
static bool extra_supports(const sched *s, int32_t t, gm_buft extra, int32_t w) {
    enum { T_F32 = 0 };
    const gm_tensor *x = &s->g->t[t], *wt = &s->g->t[w];
    const int32_t in = x->src[1];
    if (in == GM_NONE || x->src[0] != w || s->g->t[in].type != T_F32) return false;
    if (extra == GM_BUFT_REPACK)
        return (x->op == GM_OP_MUL_MAT && n_dims(wt) == 2) || (x->op == GM_OP_MUL_MAT_ID && n_dims(wt) == 3);
    return x->op == GM_OP_MUL_MAT && gm_is_contiguous(s->g, in) && gm_amx_takes(wt->type, wt->ne, true);
}

/* ggml_backend_supports_op of backend b for node t: the CPU defers to the
 * extra buffer type of the first of src[0..3] in one (ggml-cpu.cpp:432-440) */
static bool supports_op(const sched *s, int b, int32_t t) {
    if (b != last(s)) return true;
    const gm_tensor *x = &s->g->t[t];
    if (x->op == GM_OP_NONE || is_view_op(x->op)) return true;
    for (int i = 0; i < 4; i++) {
        const int32_t src = x->src[i];
        if (src == GM_NONE) continue;
        const int32_t root = s->g->t[src].view_src != GM_NONE ? s->g->t[src].view_src : src;
        const gm_buft buft = (gm_buft)s->g->t[root].buft;
        if (buft == GM_BUFT_REPACK || buft == GM_BUFT_AMX) return extra_supports(s, t, buft, src);
    }
    return true;
}

/* ggml_backend_sched_backend_from_buffer: the first backend that takes
 * t's buffer type and runs op */
static int backend_from_buffer(const sched *s, int32_t t, int32_t op) {
    gm_buft buft = (gm_buft)s->g->t[t].buft;
    if (buft == GM_BUFT_NONE) return -1;
    for (int b = 0; b < s->be->n; b++)
        if (supports_buft(s, b, buft) && supports_op(s, b, op)) return b;
    return -1;
}

/* ggml-metal.cpp / ggml-cuda.cu get_op_batch_size and offload_op (>= 32 rows) */
static bool offload_op(const sched *s, int32_t t) {
    const gm_tensor *x = &s->g->t[t];
    int64_t rows;
    switch (x->op) {
    case GM_OP_MUL_MAT: rows = x->ne[1]; break;
    case GM_OP_MUL_MAT_ID: rows = x->ne[2]; break;
    case GM_OP_GET_ROWS: rows = s->be->gpu_metal ? gm_nrows(s->g, t) : 0; break;
    case GM_OP_ROPE: rows = s->be->gpu_metal ? gm_nrows(s->g, t) : x->ne[2]; break;
    default: rows = gm_nrows(s->g, t);
    }
    if (s->be->gpu_metal && x->op != GM_OP_MUL_MAT && x->op != GM_OP_MUL_MAT_ID) return false;
    return rows >= 32;
}

/* ggml_backend_sched_backend_id_from_cur */
static int backend_from_cur(const sched *s, int32_t t) {
    const gm_tensor *x = &s->g->t[t];
    int b = backend_from_buffer(s, t, t);
    if (b != -1) return b;
    if (x->flags & GM_FLAG_INPUT) return last(s);
    if (x->op == GM_OP_ROPE || x->op == GM_OP_FLASH_ATTN_EXT) return -1;
    for (int i = 0; i < GM_MAX_SRC; i++) {
        int32_t src = x->src[i];
        if (src == GM_NONE || !s->g->t[src].weight || s->g->t[src].view_src != GM_NONE) continue;
        int sb = backend_from_buffer(s, src, t);
        gm_buft sbuft = (gm_buft)s->g->t[src].buft;
        if (s->be->op_offload && sb == last(s) && (sbuft == GM_BUFT_CPU || sbuft == GM_BUFT_HOST))
            for (int b2 = 0; b2 < sb; b2++)
                if (supports_op(s, b2, t) && offload_op(s, t)) return b2;
        return sb;
    }
    return -1;
}

/* ggml_backend_sched_buffer_supported */
static bool buffer_supported(const sched *s, int32_t t, int b) {
    const gm_tensor *x = &s->g->t[t];
    gm_buft buft = (gm_buft)x->buft;
    if (buft == GM_BUFT_NONE) {
        int tb = s->backend[t];
        if (tb == -1 && x->view_src != GM_NONE) tb = s->backend[x->view_src];
        if (tb == -1) return false;
        buft = s->be->buft[tb];
    }
    return supports_buft(s, b, buft);
}

static int8_t backend_of_view_src(const sched *s, int32_t t) {
    int32_t v = s->g->t[t].view_src;
    return v == GM_NONE ? -1 : s->backend[v];
}

/* ------------------------------------------------------------------------ */
/* Passes 1-4: a backend for every node                                      */
/* ------------------------------------------------------------------------ */

static void pass1(sched *s) {
    const gm_graph *g = s->g;
    for (int32_t i = 0; i < g->n_leafs; i++) {
        int32_t t = g->leafs[i];
        if (s->backend[t] == -1) s->backend[t] = (int8_t)backend_from_cur(s, t);
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t t = g->nodes[i];
        if (s->backend[t] == -1) s->backend[t] = (int8_t)backend_from_cur(s, t);
    }
}

/* one sweep of pass 2: spread the current backend to unassigned nodes;
 * skip_cpu: the CPU ends a stretch instead of spreading */
static void expand(sched *s, bool down, bool skip_cpu) {
    const gm_graph *g = s->g;
    int cur = -1;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t t = g->nodes[down ? k : g->n_nodes - 1 - k];
        if (is_view_op(g->t[t].op)) continue;
        if (s->backend[t] != -1) cur = skip_cpu && s->backend[t] == last(s) ? -1 : s->backend[t];
        else if (cur != -1 && supports_op(s, cur, t)) s->backend[t] = (int8_t)cur;
    }
}

/* pass 3: upgrade to a higher-priority backend with the same buffer type
 * (never happens between a GPU and the CPU), or pick the backend with the
 * most supported inputs for a node still unassigned */
static void pass3(sched *s) {
    const gm_graph *g = s->g;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t t = g->nodes[k];
        if (is_view_op(g->t[t].op) || s->backend[t] != -1) continue;
        int best = -1;
        for (int b = 0; b < s->be->n; b++) {
            if (!supports_op(s, b, t)) continue;
            int n = 0;
            for (int j = 0; j < GM_MAX_SRC; j++) {
                int32_t src = g->t[t].src[j];
                if (src == GM_NONE) continue;
                if ((s->backend[src] != -1 || backend_of_view_src(s, src) != -1) && buffer_supported(s, src, b)) n++;
            }
            if (n > best) {
                best = n;
                s->backend[t] = (int8_t)b;
            }
        }
    }
}

static void pass4(sched *s) {
    const gm_graph *g = s->g;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        int32_t t = g->nodes[k];
        const gm_tensor *x = &g->t[t];
        if (x->view_src != GM_NONE && s->backend[t] == -1) s->backend[t] = s->backend[x->view_src];
        for (int j = 0; j < GM_MAX_SRC; j++) {
            int32_t src = x->src[j];
            if (src == GM_NONE || s->backend[src] != -1) continue;
            s->backend[src] = g->t[src].view_src != GM_NONE ? s->backend[g->t[src].view_src] : s->backend[t];
        }
        for (int b = 0; b < s->be->n && s->backend[t] == -1; b++)
            if (supports_op(s, b, t)) s->backend[t] = (int8_t)b;
        if (s->backend[t] == -1 && s->unrunnable == GM_NONE) s->unrunnable = t; /* GGML_ASSERT in ggml */
    }
}

/* ------------------------------------------------------------------------ */
/* Pass 5: splits and input copies                                           */
/* ------------------------------------------------------------------------ */

typedef struct split {
    int backend;
    int32_t i_start, i_end;
    int32_t *inputs;
    int32_t n_inputs, cap_inputs;
} split;

typedef struct splits {
    split *v;
    int32_t n, cap;
} splits;

static bool push_split(splits *sp, int backend, int32_t i_start) {
    if (sp->n == sp->cap) {
        int32_t cap = sp->cap ? sp->cap * 2 : 16;
        split *n = realloc(sp->v, (size_t)cap * sizeof *n);
        if (!n) return false;
        sp->v = n;
        sp->cap = cap;
    }
    sp->v[sp->n++] = (split){ backend, i_start, 0, NULL, 0, 0 };
    return true;
}

static bool push_input(split *sp, int32_t t) {
    if (sp->n_inputs == sp->cap_inputs) {
        int32_t cap = sp->cap_inputs ? sp->cap_inputs * 2 : 30;
        int32_t *n = realloc(sp->inputs, (size_t)cap * sizeof *n);
        if (!n) return false;
        sp->inputs = n;
        sp->cap_inputs = cap;
    }
    sp->inputs[sp->n_inputs++] = t;
    return true;
}

/* ggml_dup_tensor_layout: type, shape and strides of t, no memory yet */
static int32_t dup_layout(gm_graph *g, int32_t t) {
    int64_t ne[4];
    memcpy(ne, g->t[t].ne, sizeof ne);
    int32_t c = gm_new_tensor(g, g->t[t].type, 4, ne);
    if (!g->oom) memcpy(g->t[c].nb, g->t[t].nb, sizeof g->t[c].nb);
    return c;
}

/* a weight on another backend that this one cannot read starts a new split */
static bool weight_needs_new_split(const sched *s, int32_t t, int cur) {
    for (int j = 0; j < GM_MAX_SRC; j++) {
        int32_t src = s->g->t[t].src[j];
        if (src == GM_NONE || !s->g->t[src].weight || s->g->t[src].view_src != GM_NONE) continue;
        if (s->backend[src] != cur && !buffer_supported(s, src, cur)) return true;
    }
    return false;
}

static bool copy_inputs(sched *s, split *sp, int32_t t, int cur) {
    gm_graph *g = s->g;
    for (int j = 0; j < GM_MAX_SRC; j++) {
        int32_t src = g->t[t].src[j];
        if (src == GM_NONE || s->backend[src] == cur || buffer_supported(s, src, cur)) continue;
        int32_t *c = &s->copy[(size_t)src * GM_MAX_BACKENDS + (size_t)cur];
        if (*c == GM_NONE) {
            int32_t cp = dup_layout(g, src); /* may move g->t */
            if (g->oom || !push_input(sp, src)) return false;
            s->copy[(size_t)src * GM_MAX_BACKENDS + (size_t)cur] = cp;
        }
        g->t[t].src[j] = s->copy[(size_t)src * GM_MAX_BACKENDS + (size_t)cur];
    }
    return true;
}

static bool pass5(sched *s, splits *sp) {
    const gm_graph *g = s->g;
    int32_t i = 0;
    while (i < g->n_nodes && is_view_op(g->t[g->nodes[i]].op)) i++;
    if (!push_split(sp, i < g->n_nodes ? s->backend[g->nodes[i]] : 0, 0)) return false;
    int cur = sp->v[0].backend;
    for (; i < g->n_nodes; i++) {
        int32_t t = g->nodes[i];
        if (is_view_op(g->t[t].op)) continue;
        const int b = s->backend[t];
        bool new_split = b == cur && sp->v[sp->n - 1].n_inputs > 0 && weight_needs_new_split(s, t, cur);
        if (b != cur || new_split) {
            sp->v[sp->n - 1].i_end = i;
            if (!push_split(sp, b, i)) return false;
            cur = b;
        }
        if (!copy_inputs(s, &sp->v[sp->n - 1], t, cur)) return false;
    }
    sp->v[sp->n - 1].i_end = g->n_nodes;
    return true;
}

/* ------------------------------------------------------------------------ */
/* The split graph (sched->graph)                                            */
/* ------------------------------------------------------------------------ */

static bool add_node(gm_split_graph *o, int32_t t, int b, int32_t cap) {
    if (o->n_nodes >= cap) return false;
    o->nodes[o->n_nodes] = t;
    o->node_backend[o->n_nodes++] = (int8_t)b;
    return true;
}

static bool build_split_graph(sched *s, const splits *sp, gm_split_graph *o) {
    gm_graph *g = s->g;
    int32_t total_inputs = 0;
    for (int32_t k = 0; k < sp->n; k++) total_inputs += sp->v[k].n_inputs;
    const int32_t cap = g->n_nodes + 2 * total_inputs + 1;
    o->nodes = malloc((size_t)cap * sizeof *o->nodes);
    o->node_backend = malloc((size_t)cap);
    o->leafs = malloc(((size_t)g->n_leafs + 1) * sizeof *o->leafs);
    o->leaf_backend = malloc((size_t)g->n_leafs + 1);
    if (!o->nodes || !o->node_backend || !o->leafs || !o->leaf_backend) return false;
    for (int32_t k = 0; k < sp->n; k++) {
        const split *x = &sp->v[k];
        for (int32_t j = 0; j < x->n_inputs; j++) {
            int32_t in = x->inputs[j];
            int32_t dep = gm_view_tensor(g, in); /* keeps the source alive until the copy */
            if (g->oom) return false;
            g->t[dep].src[0] = in;
            if (!add_node(o, dep, s->backend[in], cap)) return false;
            if (!add_node(o, s->copy[(size_t)in * GM_MAX_BACKENDS + (size_t)x->backend], x->backend, cap)) return false;
        }
        for (int32_t i = x->i_start; i < x->i_end; i++)
            if (!add_node(o, g->nodes[i], s->backend[g->nodes[i]], cap)) return false;
    }
    for (int32_t i = 0; i < g->n_leafs; i++) {
        o->leafs[o->n_leafs] = g->leafs[i];
        o->leaf_backend[o->n_leafs++] = s->backend[g->leafs[i]];
    }
    o->n_splits = sp->n;
    return true;
}

bool gm_sched_split(gm_graph *g, const gm_backends *be, gm_split_graph *out) {
    memset(out, 0, sizeof *out);
    out->unrunnable = GM_NONE;
    /* per-tensor state for the tensors the graph has now (copies and
     * dependency views added below are never looked up by index) */
    const size_t n_max = (size_t)g->n + 1;
    sched s = { g, be, malloc(n_max), malloc(n_max * GM_MAX_BACKENDS * sizeof(int32_t)), GM_NONE };
    splits sp = { NULL, 0, 0 };
    bool ok = s.backend && s.copy;
    if (ok) {
        memset(s.backend, -1, n_max);
        for (size_t i = 0; i < n_max * GM_MAX_BACKENDS; i++) s.copy[i] = GM_NONE;
        for (int32_t i = 0; i < g->n; i++) s.backend[i] = g->t[i].user_backend;
        pass1(&s);
        expand(&s, true, true);
        expand(&s, false, true);
        expand(&s, true, false);
        expand(&s, false, false);
        pass3(&s);
        pass4(&s);
        out->unrunnable = s.unrunnable;
        ok = s.unrunnable == GM_NONE && pass5(&s, &sp) && build_split_graph(&s, &sp, out);
    }
    for (int32_t k = 0; k < sp.n; k++) free(sp.v[k].inputs);
    free(sp.v);
    free(s.backend);
    free(s.copy);
    return ok && !g->oom;
}

void gm_split_graph_free(gm_split_graph *s) {
    free(s->nodes);
    free(s->leafs);
    free(s->node_backend);
    free(s->leaf_backend);
    memset(s, 0, sizeof *s);
}

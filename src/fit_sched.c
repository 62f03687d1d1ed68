/*
 * fit_sched.c - ggml_backend_sched_split_graph (ggml-backend.cpp:1066-1590)
 * over the shape-only graph: which backend computes each node, where the
 * graph splits, and which tensors are copied into a split's backend.
 *
 * Backends are in priority order, the GPU (if any) first and the CPU last.
 * A GPU runs every op its row's supports_node takes (device.h; CUDA's
 * refusals in device_cuda.c); the CPU runs every op
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
 * for each input, then the split's nodes.  With pipeline parallelism
 * (be->n_copies > 1) the scheduler keeps n_copies of each: every graph input
 * (GGML_TENSOR_FLAG_INPUT) a node reads gets n_copies - 1 copies beside
 * itself on its own backend, each split input n_copies copies on the
 * split's backend, all marked input and output (never freed) and listed
 * first among the leafs (ggml-backend.cpp:1375-1416, 1547-1574); the graph
 * reads copy 0 (cur_copy at a reserve: ggml_backend_sched_synchronize).
 */
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fit_graph.h"

typedef struct sched {
    gm_graph *g;
    const gm_backends *be;
    int8_t *backend;      /* per tensor, -1 unassigned */
    int32_t *copy;        /* per tensor x backend x copy: its copy there, GM_NONE */
    int32_t unrunnable;   /* the first node no backend runs, GM_NONE */
    int n_copies;
    int32_t *graph_inputs; /* the graph inputs copied (n_copies > 1), in order */
    int32_t n_graph_inputs, cap_graph_inputs;
    int32_t *uses;        /* per tensor, its uses by the graph's nodes as built (NULL: the GPUs fuse nothing) */
} sched;

/* the slot of copy c of tensor t on backend b */
static int32_t *copy_of(const sched *s, int32_t t, int b, int c) {
    return &s->copy[((size_t)t * (size_t)s->be->n + (size_t)b) * (size_t)s->n_copies + (size_t)c];
}

static bool is_view_op(uint8_t op) {
    return op == GM_OP_VIEW || op == GM_OP_RESHAPE || op == GM_OP_PERMUTE || op == GM_OP_TRANSPOSE;
}

static int last(const sched *s) { return s->be->n - 1; }

/* supports_buft: a GPU computes on its own type alone (ggml-cuda's and
 * ggml-metal's, buft->device == dev); the CPU on host memory and its
 * extra types (ggml-cpu.cpp:486-489) */
static bool supports_buft(const sched *s, int b, gm_buft buft) {
    if (b != last(s)) return buft == s->be->buft[b];
    const ggufmap_buft_kind k = gm_loc_kind(buft);
    return gm_buft_is_host(k) || k == GGUFMAP_BUFT_CPU_REPACK || k == GGUFMAP_BUFT_CPU_AMX;
}

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

/* ggml_backend_supports_op of backend b for node t: a GPU's supports_node
 * hook (device.h; CUDA's refusals: device_cuda.c); the CPU defers to the
 * extra buffer type of the first of src[0..3] in one (ggml-cpu.cpp:432-440) */
static bool supports_op(const sched *s, int b, int32_t t) {
    if (b != last(s)) {
        const gm_backend_def *d = gm_backend(s->be->device);
        return !d->supports_node || d->supports_node(s->g, t);
    }
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

/* ggml-metal.cpp / ggml-cuda.cu get_op_batch_size and offload_op: the
 * device's rule and batch threshold (device.c) */
static bool offload_op(const sched *s, int32_t t) {
    const gm_tensor *x = &s->g->t[t];
    const gm_backend_def *d = gm_backend(s->be->device);
    const bool metal = d->offload == GM_OFFLOAD_MATMUL;
    int64_t rows;
    switch (x->op) {
    case GM_OP_MUL_MAT: rows = x->ne[1]; break;
    case GM_OP_MUL_MAT_ID: rows = x->ne[2]; break;
    case GM_OP_GET_ROWS: rows = metal ? gm_nrows(s->g, t) : 0; break;
    case GM_OP_ROPE: rows = metal ? gm_nrows(s->g, t) : x->ne[2]; break;
    default: rows = gm_nrows(s->g, t);
    }
    if (metal && x->op != GM_OP_MUL_MAT && x->op != GM_OP_MUL_MAT_ID) return false;
    return rows >= d->offload_min_batch;
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
        if (s->be->op_offload && sb == last(s) && gm_buft_is_host(gm_loc_kind(sbuft)))
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

/* with pipeline parallelism: a graph input's copies on its own backend,
 * itself the current one (copy 0) */
static bool copy_graph_input(sched *s, int32_t src) {
    gm_graph *g = s->g;
    const int b = s->backend[src];
    if (*copy_of(s, src, b, 0) != GM_NONE) return true;
    for (int c = 0; c < s->n_copies; c++) {
        const int32_t cp = c == 0 ? src : dup_layout(g, src); /* may move g->t */
        if (g->oom) return false;
        g->t[cp].flags |= GM_FLAG_INPUT | GM_FLAG_OUTPUT; /* ggml-alloc never overwrites it */
        *copy_of(s, src, b, c) = cp;
    }
    if (s->n_graph_inputs == s->cap_graph_inputs) {
        int32_t cap = s->cap_graph_inputs ? s->cap_graph_inputs * 2 : 16;
        int32_t *n = realloc(s->graph_inputs, (size_t)cap * sizeof *n);
        if (!n) return false;
        s->graph_inputs = n;
        s->cap_graph_inputs = cap;
    }
    s->graph_inputs[s->n_graph_inputs++] = src;
    return true;
}

static bool copy_inputs(sched *s, split *sp, int32_t t, int cur) {
    gm_graph *g = s->g;
    for (int j = 0; j < GM_MAX_SRC; j++) {
        int32_t src = g->t[t].src[j];
        if (src == GM_NONE) continue;
        if (s->n_copies > 1 && (g->t[src].flags & GM_FLAG_INPUT) && !copy_graph_input(s, src)) return false;
        if (s->backend[src] == cur || buffer_supported(s, src, cur)) continue;
        if (*copy_of(s, src, cur, 0) == GM_NONE) {
            for (int c = 0; c < s->n_copies; c++) {
                int32_t cp = dup_layout(g, src); /* may move g->t */
                if (g->oom) return false;
                if (s->n_copies > 1) g->t[cp].flags |= GM_FLAG_INPUT | GM_FLAG_OUTPUT;
                *copy_of(s, src, cur, c) = cp;
            }
            if (!push_input(sp, src)) return false;
        }
        g->t[t].src[j] = *copy_of(s, src, cur, 0);
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

/* ------------------------------------------------------------------------ */
/* A GPU's fusions keep their inputs alive                                   */
/* ------------------------------------------------------------------------ */

/* The dependencies a GPU backend's graph_optimize adds over its own splits
 * (ggml-cuda.cu:4505-4590 asks the scheduler to keep tensors of a fusion
 * alive until a node, ggml-backend.cpp:1442-1540: views listing them right
 * after that node).  Which fusions: the row's fusion hook (CUDA's fused MoE
 * reduction and top-k gating, device_cuda.c); none with be->no_fusion
 * (GGML_CUDA_DISABLE_FUSION=1). */
typedef gm_fusion fusion_dep;

static bool fusion_deps(const sched *s, const splits *sp, fusion_dep **out, int32_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!s->uses) return true;
    const gm_backend_def *dev = gm_backend(s->be->device);
    int32_t cap = 0;
    for (int32_t k = 0; k < sp->n; k++) {
        const split *x = &sp->v[k];
        if (x->backend == last(s)) continue; /* the CPU's */
        for (int32_t i = x->i_start; i < x->i_end; i++) {
            fusion_dep d;
            const int32_t n = dev->fusion(s->g, s->uses, i, x->i_end, &d);
            if (n == 0) continue;
            i += n - 1;
            if (d.n_keep == 0) continue;
            if (*n_out == cap) {
                cap = cap ? cap * 2 : 16;
                fusion_dep *grown = realloc(*out, (size_t)cap * sizeof *grown);
                if (!grown) {
                    free(*out);
                    *out = NULL;
                    return false;
                }
                *out = grown;
            }
            (*out)[(*n_out)++] = d;
        }
    }
    return true;
}

/* After node t: the tensors the fusions keep alive until t, merged without
 * repeats in the order they were asked for, as views of up to GM_MAX_SRC
 * sources each (ggml-backend.cpp:1448-1455, 1523-1536). */
static bool add_deps(sched *s, int32_t t, int backend, gm_split_graph *o, int32_t cap, const fusion_dep *deps,
                     int32_t n_deps) {
    gm_graph *g = s->g;
    int32_t *keep = NULL, n_keep = 0, room = 0;
    for (int32_t d = 0; d < n_deps; d++) {
        if (deps[d].until != t) continue;
        int32_t *grown = realloc(keep, (size_t)(room += deps[d].n_keep) * sizeof *keep);
        if (!grown) {
            free(keep);
            return false;
        }
        keep = grown;
        for (int j = 0; j < deps[d].n_keep; j++) {
            bool seen = false;
            for (int32_t k = 0; k < n_keep && !seen; k++) seen = keep[k] == deps[d].keep[j];
            if (!seen) keep[n_keep++] = deps[d].keep[j];
        }
    }
    bool ok = true;
    for (int32_t k = 0; ok && k < n_keep; k += GM_MAX_SRC) {
        const int32_t dep = gm_view_tensor(g, keep[k]); /* keeps them alive past t */
        ok = !g->oom;
        for (int32_t j = 0; ok && j < GM_MAX_SRC && k + j < n_keep; j++) g->t[dep].src[j] = keep[k + j];
        ok = ok && add_node(o, dep, backend, cap);
    }
    free(keep);
    return ok;
}

/* Split x in the split graph: a dependency view and the copy for each of
 * its inputs, then its nodes, each followed by the dependency of a fusion
 * ending there. */
static bool add_split(sched *s, const split *x, gm_split_graph *o, int32_t cap, const fusion_dep *deps,
                      int32_t n_deps) {
    gm_graph *g = s->g;
    for (int32_t j = 0; j < x->n_inputs; j++) {
        int32_t in = x->inputs[j];
        int32_t dep = gm_view_tensor(g, in); /* keeps the source alive until the copy */
        if (g->oom) return false;
        g->t[dep].src[0] = in;
        if (!add_node(o, dep, s->backend[in], cap)) return false;
        if (!add_node(o, *copy_of(s, in, x->backend, 0), x->backend, cap)) return false;
    }
    for (int32_t i = x->i_start; i < x->i_end; i++) {
        const int32_t t = g->nodes[i];
        if (!add_node(o, t, s->backend[t], cap)) return false;
        if (!add_deps(s, t, x->backend, o, cap, deps, n_deps)) return false;
    }
    return true;
}

static bool build_split_graph(sched *s, const splits *sp, gm_split_graph *o) {
    gm_graph *g = s->g;
    int32_t total_inputs = 0;
    for (int32_t k = 0; k < sp->n; k++) total_inputs += sp->v[k].n_inputs;
    fusion_dep *deps;
    int32_t n_deps;
    if (!fusion_deps(s, sp, &deps, &n_deps)) return false;
    int32_t n_dep_views = 0;
    for (int32_t d = 0; d < n_deps; d++) n_dep_views += (deps[d].n_keep + GM_MAX_SRC - 1) / GM_MAX_SRC;
    const int32_t cap = g->n_nodes + 2 * total_inputs + n_dep_views + 1;
    const size_t cap_leafs = (size_t)g->n_leafs + 1 +
                             (s->n_copies > 1 ? (size_t)(s->n_graph_inputs + total_inputs) * (size_t)s->n_copies : 0);
    o->nodes = malloc((size_t)cap * sizeof *o->nodes);
    o->node_backend = malloc((size_t)cap);
    o->leafs = malloc(cap_leafs * sizeof *o->leafs);
    o->leaf_backend = malloc(cap_leafs);
    bool ok = o->nodes && o->node_backend && o->leafs && o->leaf_backend;
    for (int32_t k = 0; ok && k < sp->n; k++) ok = add_split(s, &sp->v[k], o, cap, deps, n_deps);
    free(deps);
    if (!ok) return false;
    if (s->n_copies > 1) { /* the input copies as leafs, allocated first */
        for (int32_t i = 0; i < s->n_graph_inputs; i++) {
            const int32_t in = s->graph_inputs[i];
            for (int c = 0; c < s->n_copies; c++) {
                o->leafs[o->n_leafs] = *copy_of(s, in, s->backend[in], c);
                o->leaf_backend[o->n_leafs++] = s->backend[in];
            }
        }
        for (int32_t k = 0; k < sp->n; k++) {
            const split *x = &sp->v[k];
            for (int32_t j = 0; j < x->n_inputs; j++)
                for (int c = 0; c < s->n_copies; c++) {
                    o->leafs[o->n_leafs] = *copy_of(s, x->inputs[j], x->backend, c);
                    o->leaf_backend[o->n_leafs++] = (int8_t)x->backend;
                }
        }
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
    const int n_copies = be->n_copies > 1 ? be->n_copies : 1;
    sched s = { g, be, malloc(n_max), malloc(n_max * (size_t)be->n * (size_t)n_copies * sizeof(int32_t)), GM_NONE,
                n_copies, NULL, 0, 0, NULL };
    const gm_backend_def *dev = gm_backend(be->device);
    const bool fuses = be->gpu && dev->fusion && !be->no_fusion;
    if (fuses) {
        s.uses = calloc(n_max, sizeof *s.uses);
        for (int32_t j = 0; s.uses && j < g->n_nodes; j++)
            for (int x = 0; x < GM_MAX_SRC; x++)
                if (g->t[g->nodes[j]].src[x] != GM_NONE) s.uses[g->t[g->nodes[j]].src[x]]++;
    }
    splits sp = { NULL, 0, 0 };
    bool ok = s.backend && s.copy && (s.uses || !fuses);
    if (ok) {
        memset(s.backend, -1, n_max);
        for (size_t i = 0; i < n_max * (size_t)be->n * (size_t)n_copies; i++) s.copy[i] = GM_NONE;
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
    free(s.uses);
    free(s.graph_inputs);
    return ok && !g->oom;
}

void gm_split_graph_free(gm_split_graph *s) {
    free(s->nodes);
    free(s->leafs);
    free(s->node_backend);
    free(s->leaf_backend);
    memset(s, 0, sizeof *s);
}

/*
 * fit_alloc.c - ggml-alloc's graph allocator (ggml-alloc.c:200-945) run
 * over a split graph for its peak: the size of each backend's compute
 * buffer.
 *
 * One dynamic allocator per backend buffer keeps free blocks sorted by
 * offset.  A tensor takes the best-fitting free block other than the last
 * one (the smallest that fits, the later one on a tie), else the last
 * block, which grows the buffer; freed bytes merge with their neighbours.
 * Sizes are padded to the buffer type's alignment.  The graph is walked as
 * ggml_gallocr_alloc_graph_impl walks it: leafs first (inputs get their
 * memory before anything else), then per node its sources and itself, a
 * node reusing its only-child parent's memory when the op may run in place
 * and the layouts match; a tensor is freed when its last child has run,
 * except graph outputs.  The peak end offset of each allocator is the
 * buffer llama.cpp allocates.  (ggml's chunking of buffers beyond the
 * type's maximum size does not arise: the modelled buffer types have none.)
 */
#include <stdlib.h>
#include <string.h>

#include "fit_graph.h"
#include "ggufmap/types.h"

#define MAX_FREE_BLOCKS 256

typedef struct free_block {
    uint64_t offset, size;
} free_block;

typedef struct dyn_alloc {
    uint64_t alignment;
    free_block blocks[MAX_FREE_BLOCKS];
    int n_blocks;
    bool started;            /* ggml creates its chunk at the first allocation */
    uint64_t max_size;
} dyn_alloc;

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static void insert_block(dyn_alloc *d, uint64_t offset, uint64_t size) {
    int pos = 0;
    while (pos < d->n_blocks && d->blocks[pos].offset < offset) pos++;
    memmove(&d->blocks[pos + 1], &d->blocks[pos], (size_t)(d->n_blocks - pos) * sizeof d->blocks[0]);
    d->blocks[pos] = (free_block){ offset, size };
    d->n_blocks++;
}

static void remove_block(dyn_alloc *d, int i) {
    memmove(&d->blocks[i], &d->blocks[i + 1], (size_t)(d->n_blocks - i - 1) * sizeof d->blocks[0]);
    d->n_blocks--;
}

/* ggml_dyn_tallocr_alloc with one chunk of unbounded size */
static uint64_t dyn_alloc_bytes(dyn_alloc *d, uint64_t size) {
    size = align_up(size, d->alignment);
    if (!d->started) {
        d->started = true;
        d->n_blocks = 1;
        d->blocks[0] = (free_block){ 0, UINT64_MAX / 2 };
    }
    int best = -1;
    uint64_t best_size = UINT64_MAX;
    for (int i = 0; i < d->n_blocks - 1; i++)
        if (d->blocks[i].size >= size && d->blocks[i].size <= best_size) {
            best = i;
            best_size = d->blocks[i].size;
        }
    if (best == -1) best = d->n_blocks - 1; /* the last block: virtually endless */
    const uint64_t offset = d->blocks[best].offset;
    d->blocks[best].offset += size;
    d->blocks[best].size -= size;
    if (d->blocks[best].size == 0) remove_block(d, best);
    if (offset + size > d->max_size) d->max_size = offset + size;
    return offset;
}

/* ggml_dyn_tallocr_free_bytes */
static void dyn_free_bytes(dyn_alloc *d, uint64_t offset, uint64_t size) {
    size = align_up(size, d->alignment);
    for (int i = 0; i < d->n_blocks; i++) {
        free_block *b = &d->blocks[i];
        if (b->offset + b->size == offset) {
            b->size += size;
            if (i < d->n_blocks - 1 && b->offset + b->size == d->blocks[i + 1].offset) {
                b->size += d->blocks[i + 1].size;
                remove_block(d, i + 1);
            }
            return;
        }
        if (offset + size == b->offset) {
            b->offset = offset;
            b->size += size;
            if (i > 0 && d->blocks[i - 1].offset + d->blocks[i - 1].size == b->offset) {
                d->blocks[i - 1].size += b->size;
                remove_block(d, i);
            }
            return;
        }
    }
    insert_block(d, offset, size);
}

/* ------------------------------------------------------------------------ */
/* The graph walk                                                            */
/* ------------------------------------------------------------------------ */

typedef struct node_state {
    int32_t n_children, n_views;
    int8_t buffer;
    bool allocated;
    uint64_t offset;
} node_state;

typedef struct galloc {
    const gm_graph *g;
    const gm_backends *be;
    node_state *st;
    dyn_alloc alloc[GM_MAX_BACKENDS];
} galloc;

/* ggml_op_can_inplace (ggml-alloc.c:22-51), for the ops modelled */
static bool can_inplace(uint8_t op) {
    switch (op) {
    case GM_OP_FILL: case GM_OP_SCALE: case GM_OP_ADD: case GM_OP_ADD_ID: case GM_OP_MUL: case GM_OP_DIV: case GM_OP_SQRT:
    case GM_OP_UNARY: case GM_OP_ROPE: case GM_OP_RMS_NORM: case GM_OP_CLAMP: case GM_OP_SOFT_MAX:
    case GM_OP_SUB: case GM_OP_SQR:
        return true;
    default:
        return false;
    }
}

/* ggml_backend_buft_get_alloc_size of backend b's buffer type: nbytes,
 * plus what the device adds (device.h: CUDA's row padding of quantized
 * tensors; its alloc_extra hook: the f16 copies of K and V its
 * flash-attention kernel converts into the output's allocation) */
static uint64_t alloc_size(const galloc *a, int b, int32_t t) {
    const gm_tensor *x = &a->g->t[t];
    const ggufmap_buft_kind kind = gm_loc_kind(a->be->buft[b]);
    const gm_backend_def *d = gm_backend(a->be->device);
    uint64_t size = gm_nbytes(a->g, t) + gm_buft_row_pad(a->be->device, kind, x->type, x->ne[0]);
    if (kind == GGUFMAP_BUFT_GPU && d->alloc_extra) size += d->alloc_extra(a->g, t);
    return size;
}

static bool same_layout(const gm_tensor *x, const gm_tensor *y) {
    return x->type == y->type && memcmp(x->ne, y->ne, sizeof x->ne) == 0 && memcmp(x->nb, y->nb, sizeof x->nb) == 0;
}

static bool is_output(const gm_graph *g, int32_t t) {
    const gm_tensor *x = &g->t[t];
    return (x->flags & GM_FLAG_OUTPUT) || (x->view_src != GM_NONE && (g->t[x->view_src].flags & GM_FLAG_OUTPUT));
}

/* in place: the node takes over a parent that is its own, only used here,
 * not an output, of the same layout (views are never "own") */
static bool reuse_parent(galloc *a, int32_t node) {
    const gm_tensor *x = &a->g->t[node];
    if (!can_inplace(x->op)) return false;
    for (int i = 0; i < GM_MAX_SRC; i++) {
        int32_t p = x->src[i];
        if (p == GM_NONE || !a->st[p].allocated || is_output(a->g, p)) continue;
        if (!same_layout(x, &a->g->t[p]) || a->st[p].n_children != 1 || a->st[p].n_views != 0) continue;
        node_state *hn = &a->st[node], *pn = &a->st[p];
        hn->buffer = pn->buffer;
        hn->offset = pn->offset;
        pn->allocated = false; /* the node owns the memory now */
        const uint64_t al = a->alloc[pn->buffer].alignment;
        const uint64_t psize = align_up(alloc_size(a, pn->buffer, p), al), nsize = align_up(alloc_size(a, hn->buffer, node), al);
        if (psize > nsize) dyn_free_bytes(&a->alloc[pn->buffer], pn->offset + nsize, psize - nsize);
        return true;
    }
    return false;
}

static void allocate_node(galloc *a, int32_t t, int b) {
    const gm_tensor *x = &a->g->t[t];
    node_state *hn = &a->st[t];
    if (x->buft != GM_BUFT_NONE || hn->allocated || x->view_src != GM_NONE) return;
    hn->allocated = true;
    if (reuse_parent(a, t)) return;
    hn->buffer = (int8_t)b;
    hn->offset = dyn_alloc_bytes(&a->alloc[b], alloc_size(a, b, t));
}

static void free_node(galloc *a, int32_t t) {
    if (a->g->t[t].flags & GM_FLAG_OUTPUT) return;
    node_state *hn = &a->st[t];
    dyn_free_bytes(&a->alloc[hn->buffer], hn->offset, alloc_size(a, hn->buffer, t));
    hn->allocated = false;
}

/* counts children and views; allocates the graph inputs */
static void count_children(galloc *a, const gm_split_graph *s) {
    const gm_graph *g = a->g;
    for (int32_t i = 0; i < s->n_nodes; i++) {
        const gm_tensor *x = &g->t[s->nodes[i]];
        if (x->view_src != GM_NONE && x->op != GM_OP_NONE) a->st[x->view_src].n_views++;
        if (x->flags & GM_FLAG_INPUT) allocate_node(a, s->nodes[i], s->node_backend[i]);
        for (int j = 0; j < GM_MAX_SRC; j++) {
            int32_t src = x->src[j];
            if (src == GM_NONE) continue;
            a->st[src].n_children++;
            if (g->t[src].flags & GM_FLAG_INPUT) allocate_node(a, src, s->node_backend[i]);
        }
    }
}

static void release_parents(galloc *a, int32_t node) {
    const gm_graph *g = a->g;
    for (int j = 0; j < GM_MAX_SRC; j++) {
        int32_t p = g->t[node].src[j];
        if (p == GM_NONE) continue;
        node_state *pn = &a->st[p];
        if (--pn->n_children != 0 || pn->n_views != 0) continue;
        int32_t v = g->t[p].view_src;
        if (v != GM_NONE) {
            node_state *vn = &a->st[v];
            vn->n_views--;
            if (vn->n_views == 0 && vn->n_children == 0 && vn->allocated) free_node(a, v);
        } else if (pn->allocated) {
            free_node(a, p);
        }
    }
}

bool gm_alloc_reserve(const gm_graph *g, const gm_split_graph *s, const gm_backends *be,
                      uint64_t size[GM_MAX_BACKENDS]) {
    galloc a = { g, be, calloc((size_t)g->n + 1, sizeof(node_state)), { { 0 } } };
    if (!a.st) return false;
    for (int b = 0; b < be->n; b++) a.alloc[b].alignment = be->alignment[b];
    for (int32_t i = 0; i < s->n_leafs; i++) allocate_node(&a, s->leafs[i], s->leaf_backend[i]);
    count_children(&a, s);
    for (int32_t i = 0; i < s->n_nodes; i++) {
        const int32_t t = s->nodes[i];
        for (int j = 0; j < GM_MAX_SRC; j++)
            if (g->t[t].src[j] != GM_NONE) allocate_node(&a, g->t[t].src[j], s->node_backend[i]);
        allocate_node(&a, t, s->node_backend[i]);
        release_parents(&a, t);
    }
    for (int b = 0; b < GM_MAX_BACKENDS; b++) size[b] = b < be->n ? a.alloc[b].max_size : 0;
    free(a.st);
    return true;
}

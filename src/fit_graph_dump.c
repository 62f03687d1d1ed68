/*
 * fit_graph_dump.c - a debugging aid: every graph fit's compute model
 * splits, printed on stderr in the format of the oracle's --graph lines
 * (tests/oracle/README.md), so that an architecture's shape-only graph can
 * be compared with llama.cpp's node for node (tests/fit/graph_diff.py).
 *
 * Data structure: the graph's tensors as built (sources as they were before
 * the scheduler redirected them to split copies) and the backend the split
 * gave each.  Workload: one line per leaf and node.  Fidelity: names are not
 * modelled (NAME is "-"); ops are fit_graph.h's, which fold ggml's unary and
 * GLU variants.
 *
 * Compiled only in a build configured with -DGGUFMAP_GRAPH_DUMP (e.g.
 * `cmake -B build-dump -DCMAKE_C_FLAGS=-DGGUFMAP_GRAPH_DUMP`); the library
 * otherwise has none of it.
 */
#include "fit_graph.h"

#ifdef GGUFMAP_GRAPH_DUMP

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_graph_dump.h"
#include "ggufmap/types.h"

static const char *const OP_NAMES[GM_OP_COUNT] = {
    [GM_OP_NONE] = "NONE", [GM_OP_VIEW] = "VIEW", [GM_OP_RESHAPE] = "RESHAPE", [GM_OP_PERMUTE] = "PERMUTE",
    [GM_OP_TRANSPOSE] = "TRANSPOSE", [GM_OP_ADD] = "ADD", [GM_OP_MUL] = "MUL", [GM_OP_DIV] = "DIV",
    [GM_OP_SCALE] = "SCALE", [GM_OP_SQRT] = "SQRT", [GM_OP_CLAMP] = "CLAMP", [GM_OP_FILL] = "FILL",
    [GM_OP_UNARY] = "UNARY", [GM_OP_RMS_NORM] = "RMS_NORM", [GM_OP_NORM] = "NORM", [GM_OP_L2_NORM] = "L2_NORM",
    [GM_OP_SOFT_MAX] = "SOFT_MAX", [GM_OP_ROPE] = "ROPE", [GM_OP_MUL_MAT] = "MUL_MAT", [GM_OP_MUL_MAT_ID] = "MUL_MAT_ID",
    [GM_OP_GET_ROWS] = "GET_ROWS", [GM_OP_SET_ROWS] = "SET_ROWS", [GM_OP_CPY] = "CPY", [GM_OP_CONT] = "CONT",
    [GM_OP_GLU] = "GLU", [GM_OP_SUM_ROWS] = "SUM_ROWS", [GM_OP_REPEAT] = "REPEAT", [GM_OP_CONCAT] = "CONCAT",
    [GM_OP_PAD] = "PAD", [GM_OP_ARGSORT] = "ARGSORT", [GM_OP_TOP_K] = "TOP_K", [GM_OP_FLASH_ATTN_EXT] = "FLASH_ATTN_EXT",
    [GM_OP_SSM_CONV] = "SSM_CONV", [GM_OP_GATED_DELTA_NET] = "GATED_DELTA_NET", [GM_OP_CUSTOM] = "CUSTOM",
    [GM_OP_SUB] = "SUB", [GM_OP_SQR] = "SQR", [GM_OP_SSM_SCAN] = "SSM_SCAN", [GM_OP_RWKV_WKV7] = "RWKV_WKV7",
    [GM_OP_MEAN] = "MEAN", [GM_OP_LIGHTNING_INDEXER] = "LIGHTNING_INDEXER",
};

static const char *op_name(uint8_t op) {
    return op < GM_OP_COUNT && OP_NAMES[op] ? OP_NAMES[op] : "OP?";
}

/* the oracle's --graph tags of a buffer kind (tests/fit/graph_diff.py) */
static const char *buft_name(uint8_t b) {
    static const char *const n[] = {
        [GGUFMAP_BUFT_CPU_REPACK] = "REPACK", [GGUFMAP_BUFT_GPU_HOST] = "HOST", [GGUFMAP_BUFT_GPU] = "GPU",
        [GGUFMAP_BUFT_CPU_AMX] = "REPACK",
    };
    static char gpu[16]; /* debug builds only */
    if (b == GM_BUFT_NONE) return "-";
    if (gm_loc_kind(b) == GGUFMAP_BUFT_GPU && gm_loc_gpu(b) > 0) {
        snprintf(gpu, sizeof gpu, "GPU%u", gm_loc_gpu(b));
        return gpu;
    }
    return gm_loc_kind(b) == GGUFMAP_BUFT_CPU ? gm_cpu_buft_name() : n[gm_loc_kind(b)] ? n[gm_loc_kind(b)] : "?";
}

/* nI, lI or - as the oracle refers to tensors */
static void ref(const int32_t *node_of, const int32_t *leaf_of, int32_t t, char *out, size_t cap) {
    if (t == GM_NONE) snprintf(out, cap, "-");
    else if (node_of[t] >= 0) snprintf(out, cap, "n%" PRId32, node_of[t]);
    else if (leaf_of[t] >= 0) snprintf(out, cap, "l%" PRId32, leaf_of[t]);
    else snprintf(out, cap, "x:%" PRId32, t);
}

/* a backend as the oracle names it, GPUs by their ordinal (GPU for the first) */
static const char *backend_name(const gm_backends *bes, int be, char *buf, size_t cap) {
    if (be < 0) return "-";
    if (be == bes->n - 1) return gm_cpu_buft_name();
    const uint32_t ord = gm_loc_gpu(bes->buft[be]);
    if (ord == 0) snprintf(buf, cap, "GPU");
    else snprintf(buf, cap, "GPU%u", ord);
    return buf;
}

static void line(FILE *f, const gm_graph *g, const char *kw, int32_t i, int32_t t, const int32_t *srcs,
                 const int32_t *node_of, const int32_t *leaf_of, int be, const gm_backends *bes) {
    char bname[16];
    const gm_tensor *x = &g->t[t];
    const ggufmap_type_info *ti = ggufmap_type(x->type);
    char view[32], s[4][32];
    ref(node_of, leaf_of, x->view_src, view, sizeof view);
    for (int j = 0; j < 4; j++) ref(node_of, leaf_of, srcs[j], s[j], sizeof s[j]);
    fprintf(f,
            "%s %" PRId32 " op=%s type=%s ne=%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 " nb=%" PRIu64 ",%" PRIu64
            ",%" PRIu64 ",%" PRIu64 " view=%s:%" PRIu64 " src=%s,%s,%s,%s flags=%d buf=%s be=%s name=-\n",
            kw, i, op_name(x->op), ti ? ti->name : "?", x->ne[0], x->ne[1], x->ne[2], x->ne[3], x->nb[0], x->nb[1],
            x->nb[2], x->nb[3], view, x->view_offs, s[0], s[1], s[2], s[3], x->flags & 3, buft_name(x->buft),
            backend_name(bes, be, bname, sizeof bname));
}

int32_t *gm_graph_dump_save_srcs(const gm_graph *g) {
    int32_t *s = malloc((size_t)g->n_nodes * GM_MAX_SRC * sizeof *s + 1);
    if (!s) return NULL;
    for (int32_t i = 0; i < g->n_nodes; i++) memcpy(&s[(size_t)i * GM_MAX_SRC], g->t[g->nodes[i]].src, GM_MAX_SRC * sizeof *s);
    return s;
}

void gm_graph_dump(const gm_graph *g, const int32_t *srcs, const gm_split_graph *sg, const gm_backends *bes) {
    static int n_graphs; /* debug builds only: numbers the graphs of a process */
    int32_t *node_of = malloc((size_t)g->n * sizeof *node_of), *leaf_of = malloc((size_t)g->n * sizeof *leaf_of);
    int8_t *be = malloc((size_t)g->n);
    if (!node_of || !leaf_of || !be || !srcs) goto done;
    for (int32_t i = 0; i < g->n; i++) node_of[i] = leaf_of[i] = -1, be[i] = -1;
    for (int32_t i = 0; i < g->n_nodes; i++) node_of[g->nodes[i]] = i;
    for (int32_t i = 0; i < g->n_leafs; i++) leaf_of[g->leafs[i]] = i;
    for (int32_t i = 0; i < sg->n_nodes; i++)
        if (sg->nodes[i] < g->n) be[sg->nodes[i]] = sg->node_backend[i];
    for (int32_t i = 0; i < sg->n_leafs; i++) be[sg->leafs[i]] = sg->leaf_backend[i];
    fprintf(stderr, "GRAPH %d nodes=%" PRId32 " leafs=%" PRId32 " splits=%d\n", n_graphs++, g->n_nodes, g->n_leafs,
            sg->n_splits);
    for (int32_t i = 0; i < g->n_leafs; i++) {
        const int32_t t = g->leafs[i];
        line(stderr, g, "GLEAF", i, t, g->t[t].src, node_of, leaf_of, be[t], bes);
    }
    for (int32_t i = 0; i < g->n_nodes; i++)
        line(stderr, g, "GNODE", i, g->nodes[i], &srcs[(size_t)i * GM_MAX_SRC], node_of, leaf_of, be[g->nodes[i]], bes);
done:
    free(node_of);
    free(leaf_of);
    free(be);
}

#else
typedef int gm_graph_dump_not_built; /* ISO C wants a declaration in every translation unit */
#endif

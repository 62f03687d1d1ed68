/*
 * repack_order.c - choosing repack's tensor order.
 *
 * Workload.  Every tensor is classified once with the placement module (its
 * class and layer, whether it is a lazily read table, whether the output
 * layer reuses it, whether it is an expert tensor).  Each candidate order
 * sorts the tensors (a "layout": an order cut into shards, and one writer
 * per shard holding the output's header), writes header-only files (sparse,
 * of the final size) to a scratch folder and runs placement + plan on them
 * for every case: llama.cpp's mapped and foreign bytes after, against
 * before.  The candidate with the fewest foreign bytes wins.
 *
 * Bounded work.  The cases are the placement given, or the family: every
 * -ngl at which a layer that holds a tensor changes device, and for MoE
 * models every --n-cpu-moe N at which an expert layer changes device.  The
 * layer count is <arch>.block_count as the placement reads it, and the
 * distinct values come from the tensor table, at most FAMILY_MAX_CASES of
 * each (evenly spread beyond that), so no number read from the file (a
 * block_count of 10^6, a tensor named blk.999999.x) sets the work.  Each
 * --n-cpu-moe case is one override that matches exactly what llama.cpp's N
 * patterns match (blk\.(i|j|...)\.ffn_..._exps, see moe_case_pattern), so a
 * placement costs the same for any N.  The cancel flag is read between
 * cases: planning stops within one placement's time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "device.h"
#include "ggufmap/model.h"
#include "ggufmap/writer.h"
#include "repack_internal.h"

/* Most -ngl cases and most --n-cpu-moe cases in the family (real models
 * have far fewer layers; a file claiming more gets an even sample). */
#define FAMILY_MAX_CASES 256

/* ------------------------------------------------------------------------ */
/* Classification                                                            */
/* ------------------------------------------------------------------------ */

typedef struct tinfo {
    int cls;        /* ggufmap_tensor_class, or -1 when llama.cpp creates no tensor */
    int32_t layer;
    bool lazy;      /* a lazily read table (lazy context under --lazy-mode on) */
    bool tied;      /* reused by the output layer */
    bool expert;    /* an ffn_*_exps / _chexps tensor */
    int rank;       /* cpu-last: by the contexts that hold it */
} tinfo;

/* The name endings of expert tensors (LLM_FFN_EXPS_REGEX's alternatives). */
static const char *const expert_parts[] = {".ffn_up_exps",   ".ffn_down_exps",   ".ffn_gate_exps",
                                           ".ffn_gate_up_exps", ".ffn_up_chexps", ".ffn_down_chexps",
                                           ".ffn_gate_chexps", ".ffn_gate_up_chexps"};
#define N_EXPERT_PARTS (sizeof expert_parts / sizeof expert_parts[0])

static bool is_expert(const ggufmap_tensor *t) {
    char name[GGUFMAP_MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
    for (size_t i = 0; i < N_EXPERT_PARTS; i++)
        if (strstr(name, expert_parts[i])) return true;
    return false;
}

/* Fills ti (one per tensor) and the layer count llama.cpp uses. */
static int classify(const ggufmap_model *m, tinfo *ti, int32_t *n_layers, ggufmap_error *err) {
    ggufmap_placement_opts o;
    ggufmap_placement_opts_init(&o);
    o.lazy = GGUFMAP_LAZY_ON;
    o.cpu = GGUFMAP_CPU_GENERIC;
    ggufmap_placement *p = NULL;
    int rc = ggufmap_placement_build(m, &o, &p, err);
    if (rc) return rc;
    *n_layers = ggufmap_placement_n_layers(p);
    int64_t n = ggufmap_model_n_tensors(m);
    for (int64_t i = 0; i < n; i++)
        ti[i] = (tinfo){.cls = -1, .layer = -1, .expert = is_expert(ggufmap_model_tensor(m, i))};
    for (int64_t k = 0; k < ggufmap_placement_n_instances(p); k++) {
        const ggufmap_instance *in = ggufmap_placement_instance(p, k);
        tinfo *t = &ti[in->tensor];
        if (in->duplicate) {
            if (in->cls == GGUFMAP_CLASS_OUTPUT) t->tied = true;
            continue;
        }
        if (t->cls >= 0) continue;
        t->cls = (int)in->cls;
        t->layer = in->layer;
        t->lazy = ggufmap_placement_context(p, in->context)->lazy;
    }
    ggufmap_placement_free(p);
    return GGUFMAP_OK;
}

/* cpu-last ranks from one plan: 0 GPU-mapped only, 1 GPU- and CPU-mapped,
 * 2 CPU-mapped, 3 lazy, 4 allocated only, 5 in no context. */
static void rank_by_plan(const ggufmap_plan *plan, int64_t n, tinfo *ti) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    for (int64_t i = 0; i < n; i++) {
        uint32_t bits = ggufmap_plan_tensor_contexts(plan, i);
        bool gpu = false, cpu = false, lazy = false, any = bits != 0;
        for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl) && c < 32; c++) {
            if (!(bits & (1u << c))) continue;
            const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
            if (!ctx->mapped) continue;
            if (ctx->lazy) lazy = true;
            else if (!ctx->gpu) cpu = true; /* CPU, CPU_REPACK, CUDA_Host: host memory */
            else gpu = true;
        }
        ti[i].rank = gpu && !cpu ? 0 : gpu ? 1 : cpu ? 2 : lazy ? 3 : any ? 4 : 5;
    }
}

/* ------------------------------------------------------------------------ */
/* Sets of layer numbers from the tensor table                               */
/* ------------------------------------------------------------------------ */

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return a < b ? -1 : a > b;
}

/* Sorts v and drops repeats; returns the count left. */
static size_t sort_unique(int32_t *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_i32);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || v[i] != v[m - 1]) v[m++] = v[i];
    return m;
}

/* Keeps at most max of the n sorted values, evenly spread, the first and
 * the last among them; returns the count kept. */
static size_t spread(int32_t *v, size_t n, size_t max) {
    if (n <= max) return n;
    for (size_t k = 0; k < max; k++) v[k] = v[(size_t)((double)k * (double)(n - 1) / (double)(max - 1) + 0.5)];
    return max;
}

/* Adds to out every i < n_layers for which the name holds "blk.<i>" (the
 * decimal llama.cpp's "blk\\.%d" prints) followed by an expert part: the
 * layers whose experts a --n-cpu-moe pattern can match. */
static size_t expert_layers_of(const ggufmap_tensor *t, int32_t n_layers, int32_t *out) {
    char name[GGUFMAP_MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
    size_t n = 0;
    for (const char *p = strstr(name, "blk."); p; p = strstr(p + 1, "blk.")) {
        const char *d = p + 4, *e = d;
        int64_t v = 0;
        while (*e >= '0' && *e <= '9' && v < INT32_MAX) v = v * 10 + (*e++ - '0');
        if (e == d || (e - d > 1 && *d == '0') || v >= n_layers) continue;
        for (size_t k = 0; k < N_EXPERT_PARTS; k++)
            if (strncmp(e, expert_parts[k], strlen(expert_parts[k])) == 0) {
                out[n++] = (int32_t)v;
                break;
            }
    }
    return n;
}

/* ------------------------------------------------------------------------ */
/* The cases: the given placement, or the family                             */
/* ------------------------------------------------------------------------ */

typedef struct cases {
    uint32_t n;
    ggufmap_placement_opts *opts;
    ggufmap_override *ovr;  /* one per case that overrides */
    char **pattern;         /* the overrides' patterns (owned) */
    char (*label)[64];
} cases;

static void cases_free(cases *c) {
    for (uint32_t k = 0; c->pattern && k < c->n; k++) free(c->pattern[k]);
    free(c->pattern);
    free(c->opts);
    free(c->ovr);
    free(c->label);
    memset(c, 0, sizeof *c);
}

/* The family's base: full offload on Metal with the arm64 rules. */
static ggufmap_placement_opts family_base(void) {
    ggufmap_placement_opts base;
    ggufmap_placement_opts_init(&base);
    base.device = GGUFMAP_DEVICE_METAL;
    base.cpu = GGUFMAP_CPU_ARM64;
    return base;
}

static void add_ngl_case(cases *c, int ngl) {
    c->opts[c->n] = family_base();
    c->opts[c->n].n_gpu_layers = ngl;
    if (ngl < 0) snprintf(c->label[c->n], 64, "-ngl all");
    else snprintf(c->label[c->n], 64, "-ngl %d", ngl);
    c->n++;
}

/* -ngl 0, 1 (the output layer), every value at which a layer holding a
 * tensor moves to the GPU (-ngl N puts layers >= n_layers + 1 - N there),
 * and all.  layers: the distinct layers of the tensors, sorted. */
static void add_ngl_cases(cases *c, int32_t n_layers, int32_t *layers, size_t n) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) /* in place: m never passes i */
        if (layers[i] >= 1 && layers[i] < n_layers) layers[m++] = n_layers - layers[i] + 1;
    for (size_t i = 0; i < m / 2; i++) { /* ascending layers gave descending -ngl */
        int32_t x = layers[i];
        layers[i] = layers[m - 1 - i];
        layers[m - 1 - i] = x;
    }
    m = spread(layers, m, FAMILY_MAX_CASES - 3);
    add_ngl_case(c, 0);
    if (n_layers >= 1) add_ngl_case(c, 1);
    for (size_t i = 0; i < m; i++) add_ngl_case(c, layers[i]);
    add_ngl_case(c, -1);
}

/* One pattern matching what llama.cpp's --n-cpu-moe patterns for the
 * layers in[0..n) match together: blk\.(a|b|...)\.ffn_..._exps.  A search
 * finds the alternation iff it finds one of them (llm_ffn_block_regex is
 * "blk\\.%d" + LLM_FFN_EXPS_REGEX, common.h). */
static char *moe_case_pattern(const int32_t *in, size_t n) {
    char exps[128];
    int n_exps;
    if (ggufmap_cpu_moe_patterns(-1, exps, sizeof exps, &n_exps) != GGUFMAP_OK) return NULL;
    size_t cap = strlen(exps) + 16 + 12 * n, o = 0;
    char *p = malloc(cap);
    if (!p) return NULL;
    o += (size_t)snprintf(p + o, cap - o, "blk\\.(");
    for (size_t i = 0; i < n; i++) o += (size_t)snprintf(p + o, cap - o, "%s%d", i ? "|" : "", (int)in[i]);
    snprintf(p + o, cap - o, ")%s", exps);
    return p;
}

/* --n-cpu-moe N for every N = i + 1 at which expert layer i moves to the
 * CPU, and --cpu-moe.  experts: the distinct expert layers, sorted. */
static int add_moe_cases(cases *c, const int32_t *experts, size_t n) {
    size_t keep[FAMILY_MAX_CASES];
    size_t m = n < FAMILY_MAX_CASES - 1 ? n : FAMILY_MAX_CASES - 1;
    for (size_t k = 0; k < m; k++) keep[k] = m == n ? k : (size_t)((double)k * (double)(n - 1) / (double)(m - 1) + 0.5);
    for (size_t k = 0; k <= m; k++) {
        bool all = k == m;
        char *pat = NULL;
        if (all) {
            char exps[128];
            int n_exps;
            if (ggufmap_cpu_moe_patterns(-1, exps, sizeof exps, &n_exps) == GGUFMAP_OK) pat = strdup(exps);
        } else {
            pat = moe_case_pattern(experts, keep[k] + 1);
        }
        if (!pat) return GGUFMAP_ENOMEM;
        c->pattern[c->n] = pat;
        c->ovr[c->n] = (ggufmap_override){pat, gm_cpu_buft_name()};
        c->opts[c->n] = family_base();
        c->opts[c->n].overrides = &c->ovr[c->n];
        c->opts[c->n].n_overrides = 1;
        if (all) snprintf(c->label[c->n], 64, "--cpu-moe");
        else snprintf(c->label[c->n], 64, "--n-cpu-moe %d", (int)experts[keep[k]] + 1);
        c->n++;
    }
    return GGUFMAP_OK;
}

/* The layers of the tensors (layers) and the expert layers (experts), each
 * sorted and unique; *n_l and *n_e their counts. */
static int family_layers(const ggufmap_model *m, const tinfo *ti, int32_t n_layers, int32_t **layers, size_t *n_l,
                         int32_t **experts, size_t *n_e) {
    int64_t n = ggufmap_model_n_tensors(m);
    *layers = malloc(((size_t)n + 1) * sizeof **layers);
    *experts = malloc(((size_t)n * (GGUFMAP_MAX_NAME / 5 + 1) + 1) * sizeof **experts);
    if (!*layers || !*experts) return GGUFMAP_ENOMEM;
    *n_l = *n_e = 0;
    for (int64_t i = 0; i < n; i++) {
        if (ti[i].cls == GGUFMAP_CLASS_LAYER) (*layers)[(*n_l)++] = ti[i].layer;
        if (ti[i].expert) *n_e += expert_layers_of(ggufmap_model_tensor(m, i), n_layers, *experts + *n_e);
    }
    *n_l = sort_unique(*layers, *n_l);
    *n_e = sort_unique(*experts, *n_e);
    return GGUFMAP_OK;
}

static int make_cases(const ggufmap_model *m, const tinfo *ti, int32_t n_layers, const ggufmap_placement_opts *given,
                      cases *c, ggufmap_error *err) {
    memset(c, 0, sizeof *c);
    uint32_t cap = given ? 1 : 2 * FAMILY_MAX_CASES + 2;
    c->opts = calloc(cap, sizeof *c->opts);
    c->label = calloc(cap, sizeof *c->label);
    c->ovr = calloc(cap, sizeof *c->ovr);
    c->pattern = calloc(cap, sizeof *c->pattern);
    if (!c->opts || !c->label || !c->ovr || !c->pattern) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (given) {
        c->opts[0] = *given;
        snprintf(c->label[0], 64, "given");
        c->n = 1;
        return GGUFMAP_OK;
    }
    int32_t *layers = NULL, *experts = NULL;
    size_t n_l = 0, n_e = 0;
    int rc = family_layers(m, ti, n_layers, &layers, &n_l, &experts, &n_e);
    if (!rc) add_ngl_cases(c, n_layers, layers, n_l);
    if (!rc && n_e > 0) rc = add_moe_cases(c, experts, n_e);
    free(layers);
    free(experts);
    return rc ? gm_fail(err, rc, "out of memory for the placements to compare") : GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Layouts                                                                   */
/* ------------------------------------------------------------------------ */

/* Where a tensor goes in an order: by group, then layer, then model index. */
typedef struct pos_key {
    int group;
    int32_t layer;
    int64_t index;
} pos_key;

static pos_key key_of(const tinfo *t, int64_t i, ggufmap_order order) {
    pos_key k = {0, 0, i};
    int base = 0;
    if (order == GGUFMAP_ORDER_CPU_LAST) base = t->rank * 16;
    if (t->cls < 0) k.group = 15;
    else if (t->lazy) k.group = 0;
    else if (t->cls == GGUFMAP_CLASS_INPUT) k.group = t->tied ? (order == GGUFMAP_ORDER_MOE ? 3 : 2) : 1;
    else if (t->cls == GGUFMAP_CLASS_OUTPUT) k.group = 6;
    else if (order == GGUFMAP_ORDER_MOE) k.group = t->expert ? 2 : 4, k.layer = t->layer;
    else k.group = 4, k.layer = t->layer;
    k.group += base;
    return k;
}

static int cmp_pos(const void *x, const void *y) {
    const pos_key *a = x, *b = y;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    if (a->layer != b->layer) return a->layer < b->layer ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Sorts order[0..n) (model indices) by key_of; keys is scratch of n. */
static void sort_slice(int64_t *order, int64_t n, const tinfo *ti, ggufmap_order o, pos_key *keys) {
    for (int64_t i = 0; i < n; i++) keys[i] = key_of(&ti[order[i]], order[i], o);
    qsort(keys, (size_t)n, sizeof *keys, cmp_pos);
    for (int64_t i = 0; i < n; i++) order[i] = keys[i].index;
}

void rp_layout_free(rp_layout *l) {
    if (l->w)
        for (uint32_t s = 0; s < l->n_shards; s++) ggufmap_writer_free(l->w[s]);
    free(l->w);
    free(l->order);
    free(l->start);
    memset(l, 0, sizeof *l);
}

/* Orders the tensors: sorted as a whole and cut into shards of about equal
 * bytes (move), or sorted within each shard. */
static void order_layout(rp_layout *l, const ggufmap_model *m, const tinfo *ti, ggufmap_order order, bool move,
                         pos_key *keys) {
    for (int64_t i = 0; i < l->n; i++) l->order[i] = i;
    if (move) {
        sort_slice(l->order, l->n, ti, order, keys);
        uint64_t total = ggufmap_model_tensor_bytes(m), acc = 0;
        uint32_t s = 0;
        for (int64_t p = 0; p < l->n; p++) {
            int64_t left = l->n - p;
            while (s + 1 < l->n_shards && p > l->start[s] &&
                   (acc >= total / l->n_shards * (s + 1) || left <= (int64_t)(l->n_shards - s - 1)))
                l->start[++s] = p;
            acc += ggufmap_model_tensor(m, l->order[p])->size;
        }
        while (s < l->n_shards) l->start[++s] = l->n;
        return;
    }
    int64_t p = 0; /* model order is shard by shard: sort each shard's slice */
    for (uint32_t s = 0; s < l->n_shards; s++) {
        l->start[s] = p;
        while (p < l->n && ggufmap_model_tensor(m, p)->shard == s) p++;
        sort_slice(l->order + l->start[s], p - l->start[s], ti, order, keys);
    }
    l->start[l->n_shards] = l->n;
}

/* The writer of output shard s: version, alignment and every pair of input
 * shard s byte for byte, then its tensors in layout order. */
static int shard_writer(rp_layout *l, const ggufmap_model *m, uint32_t s, ggufmap_error *err) {
    const ggufmap_source *src = ggufmap_model_shard(m, s);
    if (ggufmap_writer_new(&l->w[s]) != GGUFMAP_OK)
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory laying out the output");
    ggufmap_writer *w = l->w[s];
    ggufmap_writer_set_version(w, ggufmap_source_version(src));
    ggufmap_writer_set_alignment(w, ggufmap_source_alignment(src));
    for (int64_t k = 0; k < ggufmap_source_n_kv(src); k++) {
        const ggufmap_kv *kv = ggufmap_source_kv(src, k);
        int rc = ggufmap_writer_add_raw(w, kv->key, (size_t)kv->key_len, kv->type, kv->elem_type, kv->count,
                                        kv->value, kv->value_size);
        /* Every pair the reader accepted can be added: only memory can fail. */
        if (rc) return gm_fail(err, rc == GGUFMAP_ENOMEM ? rc : GGUFMAP_EFORMAT, "%s: offset %llu: cannot copy key %lld",
                               ggufmap_source_path(src), (unsigned long long)kv->offset, (long long)k);
    }
    for (int64_t p = l->start[s]; p < l->start[s + 1]; p++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, l->order[p]);
        const ggufmap_source *from = ggufmap_model_shard(m, t->shard);
        char name[GGUFMAP_MAX_NAME + 1];
        snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
        ggufmap_data d = {.kind = GGUFMAP_DATA_FILE, .fd = ggufmap_source_fd(from), .file_offset = t->offset};
        int rc = ggufmap_writer_add_tensor(w, name, t->n_dims, t->ne, t->type, &d);
        if (rc) return gm_fail(err, rc == GGUFMAP_ENOMEM ? rc : GGUFMAP_EFORMAT, "%s: tensor '%s': cannot lay it out",
                               ggufmap_source_path(from), name);
    }
    return GGUFMAP_OK;
}

static int build_layout(const ggufmap_model *m, const tinfo *ti, ggufmap_order order, bool move, rp_layout *l,
                        ggufmap_error *err) {
    memset(l, 0, sizeof *l);
    l->n_shards = ggufmap_model_n_shards(m);
    l->n = ggufmap_model_n_tensors(m);
    l->order = malloc((size_t)l->n * sizeof *l->order + 1);
    l->start = calloc(l->n_shards + 1, sizeof *l->start);
    l->w = calloc(l->n_shards, sizeof *l->w);
    pos_key *keys = malloc((size_t)l->n * sizeof *keys + 1);
    int rc = !l->order || !l->start || !l->w || !keys ? gm_fail(err, GGUFMAP_ENOMEM, "out of memory laying out the output")
                                                      : GGUFMAP_OK;
    if (!rc) order_layout(l, m, ti, order, move, keys);
    free(keys);
    for (uint32_t s = 0; s < l->n_shards && !rc; s++) rc = shard_writer(l, m, s, err);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Figures: header-only models of a layout, planned                          */
/* ------------------------------------------------------------------------ */

/* Writes each shard's header into dir as a sparse file of the final size
 * and opens the result as a model. */
static int header_model(const rp_layout *l, const char *dir, int tag, ggufmap_model **out, ggufmap_error *err) {
    char single[4200];
    snprintf(single, sizeof single, "%s/c%d.gguf", dir, tag);
    char **paths = rp_output_paths(single, l->n_shards);
    int rc = GGUFMAP_OK;
    if (!paths) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t s = 0; s < l->n_shards && !rc; s++) {
        uint8_t *h = NULL;
        size_t hl = 0;
        if (ggufmap_writer_header(l->w[s], &h, &hl)) {
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
            break;
        }
        int fd = open(paths[s], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int sys = fd < 0 ? errno : gm_pwrite_full(fd, h, hl, 0);
        if (!sys && ftruncate(fd, (off_t)ggufmap_writer_file_size(l->w[s])) != 0) sys = errno;
        if (sys) rc = gm_fail_errno(err, sys, "%s: cannot write a scratch header", paths[s]);
        if (fd >= 0) close(fd);
        free(h);
    }
    if (!rc) rc = ggufmap_model_open(paths[0], 0, out, err);
    for (uint32_t s = 0; s < l->n_shards; s++) {
        unlink(paths[s]);
        free(paths[s]);
    }
    free(paths);
    return rc;
}

/* The figures of model under one placement. */
static int figures(const ggufmap_model *m, const ggufmap_placement_opts *po, const ggufmap_plan_opts *plo,
                   rp_figure *f, ggufmap_error *err) {
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    uint64_t planned;
    int rc = ggufmap_placement_build(m, po, &pl, err);
    if (!rc) rc = ggufmap_plan_build(pl, plo, &plan, err);
    memset(f, 0, sizeof *f);
    for (uint32_t b = 0; !rc && b < ggufmap_plan_n_buffers(plan); b++) {
        const ggufmap_buffer *buf = ggufmap_plan_buffer(plan, b);
        if (!buf->mapped) continue;
        f->mapped += buf->size;
        f->foreign += buf->foreign_bytes;
    }
    if (!rc) ggufmap_plan_working_set(plan, &f->gpu, &planned);
    if (!rc) ggufmap_plan_cpu_side(plan, &f->cpu, &planned);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Evaluation                                                                */
/* ------------------------------------------------------------------------ */

static int interrupted(ggufmap_error *err) {
    return gm_fail(err, GGUFMAP_EIO, "interrupted by a signal while choosing the order: nothing written");
}

/* The figures of model in every case, and the sums of mapped and foreign bytes. */
static int evaluate(const ggufmap_model *model, const cases *cs, const ggufmap_repack_opts *o, rp_eval *ev,
                    ggufmap_error *err) {
    ev->mapped = ev->foreign = 0;
    ev->cases = calloc(cs->n ? cs->n : 1, sizeof *ev->cases);
    if (!ev->cases) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < cs->n; k++) {
        if (o->cancel && *o->cancel) return interrupted(err);
        int rc = figures(model, &cs->opts[k], &o->plan, &ev->cases[k], err);
        if (rc) return rc;
        ev->mapped += ev->cases[k].mapped;
        ev->foreign += ev->cases[k].foreign;
    }
    return GGUFMAP_OK;
}

/* evaluate for a layout: on its headers, written to dir (header_model). */
static int evaluate_layout(const rp_layout *l, const char *dir, int tag, const cases *cs,
                           const ggufmap_repack_opts *o, rp_eval *ev, ggufmap_error *err) {
    ggufmap_model *hm = NULL;
    int rc = header_model(l, dir, tag, &hm, err);
    if (!rc) rc = evaluate(hm, cs, o, ev, err);
    ggufmap_model_free(hm);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Choosing                                                                  */
/* ------------------------------------------------------------------------ */

/* What choosing needs while it runs; freed in one place (work_free). */
typedef struct work {
    tinfo *ti;
    int32_t n_layers;
    cases cs;
    rp_layout lay[3];
    rp_eval ev[3];
    char scratch[4096]; /* the header-only models' folder, "" when none */
} work;

static void eval_free(rp_eval *e) {
    free(e->cases);
    memset(e, 0, sizeof *e);
}

static void work_free(work *w) {
    if (w->scratch[0]) rmdir(w->scratch);
    for (int c = 0; c < 3; c++) {
        rp_layout_free(&w->lay[c]);
        eval_free(&w->ev[c]);
    }
    cases_free(&w->cs);
    free(w->ti);
}

/* cpu-last ranks from the given placement, or -ngl all on Metal. */
static int rank_tensors(const ggufmap_model *m, work *w, const ggufmap_repack_opts *o, ggufmap_error *err) {
    const ggufmap_placement_opts *po = o->placement ? o->placement : &w->cs.opts[0];
    for (uint32_t k = 0; !o->placement && k < w->cs.n; k++)
        if (strcmp(w->cs.label[k], "-ngl all") == 0) po = &w->cs.opts[k];
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    int rc = ggufmap_placement_build(m, po, &pl, err);
    if (!rc) rc = ggufmap_plan_build(pl, &o->plan, &plan, err);
    if (!rc) rank_by_plan(plan, ggufmap_model_n_tensors(m), w->ti);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    return rc;
}

/* The orders to compare: the one asked for, or canonical, moe for MoE
 * models, cpu-last when a placement is given. */
static void candidates(rp_choice *ch, const work *w, int64_t n, const ggufmap_repack_opts *o) {
    bool moe = false;
    for (int64_t i = 0; i < n; i++) moe = moe || w->ti[i].expert;
    ch->n_candidates = 0;
    if (o->order != GGUFMAP_ORDER_AUTO) {
        ch->candidates[ch->n_candidates++] = o->order;
        return;
    }
    ch->candidates[ch->n_candidates++] = GGUFMAP_ORDER_CANONICAL;
    if (moe) ch->candidates[ch->n_candidates++] = GGUFMAP_ORDER_MOE;
    if (o->placement) ch->candidates[ch->n_candidates++] = GGUFMAP_ORDER_CPU_LAST;
}

static int make_scratch(work *w, ggufmap_error *err) {
    const char *tmpdir = getenv("TMPDIR");
    snprintf(w->scratch, sizeof w->scratch, "%s/ggufmap-repack-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (mkdtemp(w->scratch)) return GGUFMAP_OK;
    snprintf(w->scratch, sizeof w->scratch, "/tmp/ggufmap-repack-XXXXXX");
    if (mkdtemp(w->scratch)) return GGUFMAP_OK;
    int e = errno;
    w->scratch[0] = '\0';
    return gm_fail_errno(err, e, "cannot make a scratch folder for the candidates' headers");
}

/* Cases whose GPU working set, CPU side or foreign bytes grow from before to
 * after (the same rule as ggufmap_repack_case.worse). */
static uint32_t cases_worse(const rp_eval *before, const rp_eval *after, uint32_t n) {
    uint32_t worse = 0;
    for (uint32_t k = 0; k < n; k++) {
        const rp_figure *b = &before->cases[k], *a = &after->cases[k];
        worse += a->gpu > b->gpu || a->cpu > b->cpu || a->foreign > b->foreign;
    }
    return worse;
}

/* Candidate c beats best: fewer foreign bytes; on a tie, fewer cases made
 * worse (page rounding can grow a tight span by a page), then fewer resident
 * bytes (GPU + CPU, page-aligned), then fewer mapped bytes. */
static bool beats(const work *w, const rp_eval *before, uint32_t c, uint32_t best) {
    const rp_eval *x = &w->ev[c], *y = &w->ev[best];
    if (x->foreign != y->foreign) return x->foreign < y->foreign;
    const uint32_t wx = cases_worse(before, x, w->cs.n), wy = cases_worse(before, y, w->cs.n);
    if (wx != wy) return wx < wy;
    uint64_t rx = 0, ry = 0;
    for (uint32_t k = 0; k < w->cs.n; k++) {
        rx += x->cases[k].gpu + x->cases[k].cpu;
        ry += y->cases[k].gpu + y->cases[k].cpu;
    }
    if (rx != ry) return rx < ry;
    return x->mapped < y->mapped;
}

/* Lays out and evaluates every candidate; the winner's layout and figures
 * move into ch. */
static int compare_candidates(const ggufmap_model *m, work *w, const ggufmap_repack_opts *o, rp_choice *ch,
                              ggufmap_error *err) {
    int rc = make_scratch(w, err);
    uint32_t best = 0;
    for (uint32_t c = 0; !rc && c < ch->n_candidates; c++) {
        if (o->cancel && *o->cancel) return interrupted(err);
        rc = build_layout(m, w->ti, ch->candidates[c], o->move_across_shards, &w->lay[c], err);
        if (!rc) rc = evaluate_layout(&w->lay[c], w->scratch, (int)c, &w->cs, o, &w->ev[c], err);
        if (rc) break;
        ch->candidate_foreign[c] = w->ev[c].foreign;
        if (c > 0 && beats(w, &ch->before, c, best)) best = c;
    }
    if (rc) return rc;
    ch->order = ch->candidates[best];
    ch->layout = w->lay[best];
    memset(&w->lay[best], 0, sizeof w->lay[best]);
    ch->after = w->ev[best];
    memset(&w->ev[best], 0, sizeof w->ev[best]);
    return GGUFMAP_OK;
}

int rp_choose(const ggufmap_model *m, const ggufmap_repack_opts *o, rp_choice *ch, ggufmap_error *err) {
    memset(ch, 0, sizeof *ch);
    work w;
    memset(&w, 0, sizeof w);
    int64_t n = ggufmap_model_n_tensors(m);
    w.ti = calloc((size_t)n + 1, sizeof *w.ti);
    int rc = w.ti ? classify(m, w.ti, &w.n_layers, err) : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (!rc) rc = make_cases(m, w.ti, w.n_layers, o->placement, &w.cs, err);
    if (!rc) rc = rank_tensors(m, &w, o, err);
    if (!rc) candidates(ch, &w, n, o);
    if (!rc) rc = evaluate(m, &w.cs, o, &ch->before, err);
    if (!rc) rc = compare_candidates(m, &w, o, ch, err);
    if (!rc) {
        ch->n_cases = w.cs.n;
        ch->label = w.cs.label;
        w.cs.label = NULL;
    }
    work_free(&w);
    if (rc) rp_choice_free(ch);
    return rc;
}

void rp_choice_free(rp_choice *ch) {
    rp_layout_free(&ch->layout);
    eval_free(&ch->before);
    eval_free(&ch->after);
    free(ch->label);
    memset(ch, 0, sizeof *ch);
}

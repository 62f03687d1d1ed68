/*
 * repack.c - reorder a model's tensors so llama.cpp maps nothing foreign.
 *
 * Steps (the contract is in ggufmap/repack.h, the reasoning in
 * docs/repack.md):
 *   1. classify every tensor once with the placement module: its class and
 *      layer, whether it is a lazily read table, whether the output layer
 *      reuses it (tied), whether it is an expert tensor;
 *   2. for each candidate order, sort and cut into shards (a "layout"), lay
 *      out the headers with the writer, write header-only files (sized,
 *      sparse) to a scratch folder and run placement + plan on them for every
 *      case: llama.cpp's mapped and foreign bytes after, against before;
 *   3. write: temporary files beside the outputs, tensors copied and hashed
 *      by workers, fsync, read back and checked, then renamed into place.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "ggufmap/hash.h"
#include "ggufmap/model.h"
#include "ggufmap/repack.h"
#include "ggufmap/writer.h"
#include "internal.h"

#define COPY_CHUNK (8u << 20)

/* ------------------------------------------------------------------------ */
/* Orders                                                                    */
/* ------------------------------------------------------------------------ */

const char *ggufmap_order_name(ggufmap_order order) {
    switch (order) {
    case GGUFMAP_ORDER_CANONICAL: return "canonical";
    case GGUFMAP_ORDER_MOE: return "moe";
    case GGUFMAP_ORDER_CPU_LAST: return "cpu-last";
    default: return "auto";
    }
}

int ggufmap_order_parse(const char *text, ggufmap_order *out) {
    static const ggufmap_order all[] = {GGUFMAP_ORDER_AUTO, GGUFMAP_ORDER_CANONICAL, GGUFMAP_ORDER_MOE,
                                        GGUFMAP_ORDER_CPU_LAST};
    for (size_t i = 0; i < 4; i++)
        if (strcmp(text, ggufmap_order_name(all[i])) == 0) {
            *out = all[i];
            return GGUFMAP_OK;
        }
    return GGUFMAP_EINVAL;
}

const char *ggufmap_copy_mode_name(ggufmap_copy_mode mode) {
    switch (mode) {
    case GGUFMAP_COPY_KERNEL: return "kernel";
    case GGUFMAP_COPY_WRITE: return "write";
    default: return "auto";
    }
}

int ggufmap_copy_mode_parse(const char *text, ggufmap_copy_mode *out) {
    static const ggufmap_copy_mode all[] = {GGUFMAP_COPY_AUTO, GGUFMAP_COPY_KERNEL, GGUFMAP_COPY_WRITE};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(text, ggufmap_copy_mode_name(all[i])) == 0) {
            *out = all[i];
            return GGUFMAP_OK;
        }
    return GGUFMAP_EINVAL;
}

/* Whether copy_file_range on this file system can do better than copy the
 * bytes through the page cache a second time: share blocks (Btrfs, XFS,
 * bcachefs, ZFS block cloning, OCFS2) or copy on the server (NFS, SMB). */
static bool kernel_copy_pays(int fd) {
    static const unsigned long magic[] = {
        0x9123683EUL, /* btrfs */ 0x58465342UL, /* xfs */  0xCA451A4EUL, /* bcachefs */
        0x2FC12FC1UL, /* zfs */   0x7461636FUL, /* ocfs2 */ 0x6969UL,    /* nfs */
        0xFE534D42UL, /* smb2 */  0xFF534D42UL, /* cifs */
    };
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return false;
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if ((unsigned long)fs.f_type == magic[i]) return true;
    return false;
}

void ggufmap_repack_opts_init(ggufmap_repack_opts *opts) {
    memset(opts, 0, sizeof *opts);
    ggufmap_plan_opts_init(&opts->plan);
}

void ggufmap_repack_result_free(ggufmap_repack_result *res) {
    if (!res) return;
    for (uint32_t i = 0; i < res->n_shards && res->paths; i++) free(res->paths[i]);
    free(res->paths);
    free(res->cases);
    free(res);
}

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

static bool is_expert(const ggufmap_tensor *t) {
    static const char *const parts[] = {".ffn_up_exps", ".ffn_down_exps", ".ffn_gate_exps", ".ffn_gate_up_exps",
                                        ".ffn_up_chexps", ".ffn_down_chexps", ".ffn_gate_chexps", ".ffn_gate_up_chexps"};
    char name[GGUFMAP_MAX_NAME + 1];
    snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i])) return true;
    return false;
}

static int classify(const ggufmap_model *m, tinfo *ti, ggufmap_error *err) {
    ggufmap_placement_opts o;
    ggufmap_placement_opts_init(&o);
    o.lazy = GGUFMAP_LAZY_ON;
    o.cpu = GGUFMAP_CPU_GENERIC;
    ggufmap_placement *p = NULL;
    int rc = ggufmap_place(m, &o, &p, err);
    if (rc) return rc;
    int64_t n = ggufmap_model_n_tensors(m);
    for (int64_t i = 0; i < n; i++) {
        ti[i] = (tinfo){.cls = -1, .layer = -1, .expert = is_expert(ggufmap_model_tensor(m, i))};
    }
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
            else if (strncmp(ctx->buft, "CPU", 3) == 0) cpu = true;
            else gpu = true;
        }
        ti[i].rank = gpu && !cpu ? 0 : gpu ? 1 : cpu ? 2 : lazy ? 3 : any ? 4 : 5;
    }
}

/* ------------------------------------------------------------------------ */
/* Layouts                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct sort_key {
    int group;
    int32_t layer;
    int64_t index;
} sort_key;

static sort_key key_of(const tinfo *t, int64_t i, ggufmap_order order) {
    sort_key k = {0, 0, i};
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

static const tinfo *g_ti; /* qsort has no context: set before sorting, single-threaded */
static ggufmap_order g_order;

static int cmp_pos(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    sort_key ka = key_of(&g_ti[a], a, g_order), kb = key_of(&g_ti[b], b, g_order);
    if (ka.group != kb.group) return ka.group < kb.group ? -1 : 1;
    if (ka.layer != kb.layer) return ka.layer < kb.layer ? -1 : 1;
    return ka.index < kb.index ? -1 : ka.index > kb.index;
}

typedef struct layout {
    uint32_t n_shards;
    int64_t n;
    int64_t *order;        /* model tensor indices, shard 0's first */
    int64_t *start;        /* n_shards + 1 positions into order */
    ggufmap_writer **w;    /* per shard */
} layout;

static void layout_free(layout *l) {
    if (l->w)
        for (uint32_t s = 0; s < l->n_shards; s++) ggufmap_writer_free(l->w[s]);
    free(l->w);
    free(l->order);
    free(l->start);
    memset(l, 0, sizeof *l);
}

static int build_layout(const ggufmap_model *m, const tinfo *ti, ggufmap_order order, bool move, layout *l,
                        ggufmap_error *err) {
    memset(l, 0, sizeof *l);
    l->n_shards = ggufmap_model_n_shards(m);
    l->n = ggufmap_model_n_tensors(m);
    l->order = malloc((size_t)l->n * sizeof *l->order + 1);
    l->start = calloc(l->n_shards + 1, sizeof *l->start);
    l->w = calloc(l->n_shards, sizeof *l->w);
    if (!l->order || !l->start || !l->w) goto nomem;
    for (int64_t i = 0; i < l->n; i++) l->order[i] = i;
    g_ti = ti;
    g_order = order;
    if (move) {
        qsort(l->order, (size_t)l->n, sizeof *l->order, cmp_pos);
        /* Cut into n_shards pieces of about equal bytes, none empty. */
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
    } else {
        /* Model order is shard by shard: sort each shard's slice. */
        int64_t p = 0;
        for (uint32_t s = 0; s < l->n_shards; s++) {
            l->start[s] = p;
            while (p < l->n && ggufmap_model_tensor(m, p)->shard == s) p++;
            qsort(l->order + l->start[s], (size_t)(p - l->start[s]), sizeof *l->order, cmp_pos);
        }
        l->start[l->n_shards] = l->n;
    }
    for (uint32_t s = 0; s < l->n_shards; s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        ggufmap_writer *w = l->w[s] = ggufmap_writer_new();
        if (!w) goto nomem;
        ggufmap_writer_set_version(w, ggufmap_source_version(src));
        ggufmap_writer_set_alignment(w, ggufmap_source_alignment(src));
        for (int64_t k = 0; k < ggufmap_source_n_kv(src); k++) {
            const ggufmap_kv *kv = ggufmap_source_kv(src, k);
            int rc = ggufmap_writer_add_raw(w, kv->key, (size_t)kv->key_len, kv->type, kv->elem_type, kv->count,
                                            kv->value, kv->value_size);
            if (rc) return gm_fail(err, rc, "%s: offset %llu: key '%.*s': cannot copy it", ggufmap_source_path(src),
                                   (unsigned long long)kv->offset, (int)(kv->key_len < 200 ? kv->key_len : 200), kv->key);
        }
        for (int64_t p = l->start[s]; p < l->start[s + 1]; p++) {
            const ggufmap_tensor *t = ggufmap_model_tensor(m, l->order[p]);
            const ggufmap_source *from = ggufmap_model_shard(m, t->shard);
            char name[GGUFMAP_MAX_NAME + 1];
            snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
            ggufmap_data d = {.kind = GGUFMAP_DATA_FILE, .fd = ggufmap_source_fd(from), .file_offset = t->offset};
            int rc = ggufmap_writer_add_tensor(w, name, t->n_dims, t->ne, t->type, &d);
            if (rc) return gm_fail(err, rc, "%s: tensor '%s': cannot lay it out", ggufmap_source_path(from), name);
        }
    }
    return GGUFMAP_OK;
nomem:
    return gm_fail(err, GGUFMAP_ENOMEM, "out of memory laying out the output");
}

/* ------------------------------------------------------------------------ */
/* Output names                                                              */
/* ------------------------------------------------------------------------ */

int ggufmap_repack_output_path(char *buf, size_t cap, const char *out, uint32_t index, uint32_t count) {
    size_t len = strlen(out), plen;
    uint32_t idx, cnt;
    bool gguf = len > 5 && strcmp(out + len - 5, ".gguf") == 0;
    if (count <= 1) return snprintf(buf, cap, "%s%s", out, gguf ? "" : ".gguf");
    if (ggufmap_split_parse(out, &plen, &idx, &cnt)) len = plen;
    else if (gguf) len -= 5;
    char *prefix = strndup(out, len);
    int need = prefix ? ggufmap_split_path(buf, cap, prefix, index, count) : -1;
    free(prefix);
    return need;
}

static char **output_paths(const char *out, uint32_t n) {
    char **paths = calloc(n, sizeof *paths);
    if (!paths) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        int need = ggufmap_repack_output_path(NULL, 0, out, i, n);
        paths[i] = need > 0 ? malloc((size_t)need + 1) : NULL;
        if (paths[i]) ggufmap_repack_output_path(paths[i], (size_t)need + 1, out, i, n);
        if (!paths[i]) {
            for (uint32_t k = 0; k < i; k++) free(paths[k]);
            free(paths);
            return NULL;
        }
    }
    return paths;
}

/* ------------------------------------------------------------------------ */
/* Figures: header-only models of a layout, planned                          */
/* ------------------------------------------------------------------------ */

/* Writes each shard's header into dir as a sparse file of the final size
 * and opens the result as a model. */
static int header_model(const layout *l, const char *dir, int tag, ggufmap_model **out, ggufmap_error *err) {
    char prefix[4096];
    snprintf(prefix, sizeof prefix, "%s/c%d", dir, tag);
    char **paths = NULL;
    char single[4200];
    snprintf(single, sizeof single, "%s.gguf", prefix);
    paths = output_paths(single, l->n_shards);
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

/* What one placement costs on one layout. */
typedef struct figure {
    uint64_t mapped, foreign; /* llama.cpp's mapped spans, and the foreign bytes in them */
    uint64_t gpu, cpu;        /* its GPU working set and CPU side (ggufmap_plan_working_set, _cpu_side) */
} figure;

/* The figures of model under one placement. */
static int figures(const ggufmap_model *m, const ggufmap_placement_opts *po, const ggufmap_plan_opts *plo, figure *f,
                   ggufmap_error *err) {
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    uint64_t planned;
    int rc = ggufmap_place(m, po, &pl, err);
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

/* The cases: the given placement, or the family. */
typedef struct cases {
    uint32_t n;
    ggufmap_placement_opts *opts;
    ggufmap_override *ovr;  /* per case, for --n-cpu-moe / --cpu-moe */
    char *pool;
    char (*label)[64];
} cases;

static void cases_free(cases *c) {
    free(c->opts);
    free(c->ovr);
    free(c->pool);
    free(c->label);
    memset(c, 0, sizeof *c);
}

static int make_cases(const ggufmap_model *m, const tinfo *ti, const ggufmap_placement_opts *given, cases *c,
                      ggufmap_error *err) {
    memset(c, 0, sizeof *c);
    int32_t n_layers = 0;
    bool moe = false;
    for (int64_t i = 0; i < ggufmap_model_n_tensors(m); i++) {
        if (ti[i].cls == GGUFMAP_CLASS_LAYER && ti[i].layer + 1 > n_layers) n_layers = ti[i].layer + 1;
        if (ti[i].expert) moe = true;
    }
    uint32_t cap = given ? 1 : (uint32_t)n_layers + 2 + (moe ? (uint32_t)n_layers + 1 : 0);
    size_t pool_cap = given ? 1 : (size_t)(n_layers + 2) * 64 * 2 + 256;
    c->opts = calloc(cap, sizeof *c->opts);
    c->label = calloc(cap, sizeof *c->label);
    c->ovr = calloc((size_t)(n_layers + 2), sizeof *c->ovr);
    c->pool = malloc(pool_cap);
    if (!c->opts || !c->label || !c->ovr || !c->pool) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (given) {
        c->opts[0] = *given;
        snprintf(c->label[0], 64, "given");
        c->n = 1;
        return GGUFMAP_OK;
    }
    ggufmap_placement_opts base;
    ggufmap_placement_opts_init(&base);
    base.device = GGUFMAP_DEVICE_METAL;
    base.cpu = GGUFMAP_CPU_ARM64;
    for (int32_t ngl = 0; ngl <= n_layers + 1; ngl++) {
        c->opts[c->n] = base;
        c->opts[c->n].n_gpu_layers = ngl == n_layers + 1 ? -1 : ngl;
        if (ngl == n_layers + 1) snprintf(c->label[c->n], 64, "-ngl all");
        else snprintf(c->label[c->n], 64, "-ngl %d", ngl);
        c->n++;
    }
    if (moe) {
        /* Patterns for --n-cpu-moe n_layers: the first N of them are --n-cpu-moe N. */
        int np = ggufmap_cpu_moe_patterns(n_layers, c->pool, pool_cap - 128);
        int one = np >= 0 ? ggufmap_cpu_moe_patterns(-1, c->pool + pool_cap - 128, 128) : -1;
        if (np < 0 || one != 1) return gm_fail(err, GGUFMAP_ENOMEM, "--n-cpu-moe patterns do not fit");
        const char *p = c->pool;
        for (int i = 0; i < np; i++, p += strlen(p) + 1) c->ovr[i] = (ggufmap_override){p, "CPU"};
        c->ovr[n_layers + 1] = (ggufmap_override){c->pool + pool_cap - 128, "CPU"};
        for (int32_t k = 1; k <= n_layers && k <= np; k++) {
            c->opts[c->n] = base;
            c->opts[c->n].n_gpu_layers = -1;
            c->opts[c->n].overrides = c->ovr;
            c->opts[c->n].n_overrides = (uint32_t)k;
            snprintf(c->label[c->n], 64, "--n-cpu-moe %d", k);
            c->n++;
        }
        c->opts[c->n] = base;
        c->opts[c->n].n_gpu_layers = -1;
        c->opts[c->n].overrides = &c->ovr[n_layers + 1];
        c->opts[c->n].n_overrides = 1;
        snprintf(c->label[c->n], 64, "--cpu-moe");
        c->n++;
    }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Copying and checking                                                      */
/* ------------------------------------------------------------------------ */

/* How the bytes move.  Workers take whole tensors, the largest first (so the
 * last to finish is a small one), and stream each through one 8 MiB buffer:
 *
 *   piece k:           read it from the input, add it to the copy digest,
 *                      write it at its output offset, and ask the kernel to
 *                      start writing it to the disk (sync_file_range);
 *   piece k-CHECK_LAG: wait until the disk has it, read it back from the
 *                      output file, add it to the read-back digest, and drop
 *                      it from the page cache.
 *
 * When a tensor ends both digests must agree.  Why this shape: at most
 * CHECK_LAG pieces per worker are dirty or cached at any moment, so a 100 GiB
 * output neither floods the page cache (evicting what the user had there)
 * nor waits for the dirty limit before write-back starts, and the read-back
 * of a piece costs no disk read.  Plain buffered writes of 8.5 GiB took 35 s
 * of kernel time on a VM whose freed memory goes back to the host; this
 * stream took 4.6 s (docs/repack.md).
 *
 * Holes: each piece is a run of whole 64 KiB chunks (counted from the
 * tensor's first byte) that hold data; chunks wholly inside a hole of the
 * input are neither read nor written, so they stay holes in the output and
 * count as all-zero chunks in the sparse digest (ggufmap/hash.h). */

#define CHECK_LAG 4

typedef struct task {
    int64_t tensor;       /* model index */
    int src_fd;
    const char *src_path;
    uint64_t src_off;
    uint32_t shard;       /* output shard */
    uint64_t dst_off;
    uint64_t size;
    char name[GGUFMAP_MAX_NAME + 1];
} task;

typedef struct copier {
    task *tasks;
    int64_t n_tasks;
    int64_t *dispatch;    /* task indices, largest first */
    int *dst_fd;
    char **tmp;           /* temporary paths, for messages */
    char **final_path;
    atomic_llong next;
    atomic_ullong done;
    atomic_int failed;
    atomic_int use_cfr;   /* copy_file_range (ggufmap_copy_mode); cleared when the kernel refuses */
    atomic_int cfr_used;
    atomic_int use_sfr;   /* sync_file_range works on the output */
    atomic_uint finished;
    volatile sig_atomic_t *cancel;
    unsigned delay_us;    /* test hook: GGUFMAP_REPACK_TEST_DELAY_US */
    const char *flip;     /* test hook: GGUFMAP_REPACK_TEST_FLIP=NAME */
    pthread_mutex_t lock;
    ggufmap_error err;
} copier;

typedef struct piece {
    uint64_t rel;         /* offset from the tensor's first byte */
    size_t len;
} piece;

static void set_error(copier *c, const ggufmap_error *e) {
    pthread_mutex_lock(&c->lock);
    if (!atomic_load(&c->failed)) {
        c->err = *e;
        atomic_store(&c->failed, 1);
    }
    pthread_mutex_unlock(&c->lock);
}

/* gm_pread_full, a file that ends early counting as EIO. */
static int read_piece(int fd, uint8_t *buf, size_t k, uint64_t pos) {
    int sys = gm_pread_full(fd, buf, k, pos);
    return sys == GM_SHORT_FILE ? EIO : sys;
}

/* Has the kernel copy k bytes; *copied says how many it did.  Returns 0, an
 * errno, or -1 where copy_file_range cannot copy between these files (the
 * caller writes the rest itself). */
static int kernel_copy(int in_fd, uint64_t in, int out_fd, uint64_t out, size_t k, size_t *copied) {
    loff_t a = (loff_t)in, b = (loff_t)out;
    *copied = 0;
    while (*copied < k) {
        ssize_t r = copy_file_range(in_fd, &a, out_fd, &b, k - *copied, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP || errno == EBADF ||
                      errno == EPERM))
            return -1;
        if (r < 0) return errno;
        if (r == 0) return EIO;
        *copied += (size_t)r;
    }
    return 0;
}

/* Adds the whole chunks of one piece (rel is a multiple of the chunk). */
static int digest_piece(ggufmap_sparse *sp, uint64_t rel, const uint8_t *bytes, size_t k) {
    const size_t ch = GGUFMAP_SPARSE_CHUNK;
    for (size_t q = 0; q < k; q += ch)
        if (ggufmap_sparse_chunk(sp, (rel + q) / ch, bytes + q, k - q < ch ? k - q : ch)) return -1;
    return 0;
}

/* Copies one piece and adds it to the copy digest.  The digest needs the
 * bytes in memory, so they are always read into buf; the kernel then copies
 * them with copy_file_range where it can (a reflink on XFS or Btrfs: no data
 * moves), else buf is written.  The second read of the input costs little:
 * it comes from the page cache the first one filled. */
static int copy_piece(copier *c, const task *t, const piece *p, uint8_t *buf, ggufmap_sparse *sp,
                      ggufmap_error *e) {
    int dfd = c->dst_fd[t->shard], sys;
    uint64_t in = t->src_off + p->rel, out = t->dst_off + p->rel;
    size_t done = 0;
    if ((sys = read_piece(t->src_fd, buf, p->len, in)))
        return gm_fail_errno(e, sys, "%s: read at offset %llu (tensor '%s')", t->src_path, (unsigned long long)in,
                             t->name);
    if (digest_piece(sp, p->rel, buf, p->len)) return gm_fail(e, GGUFMAP_ENOMEM, "SHA-256 failed");
    if (atomic_load(&c->use_cfr)) {
        sys = kernel_copy(t->src_fd, in, dfd, out, p->len, &done);
        if (sys > 0) goto write_failed;
        if (sys < 0) atomic_store(&c->use_cfr, 0);
        else atomic_store(&c->cfr_used, 1);
    }
    if (done < p->len && (sys = gm_pwrite_full(dfd, buf + done, p->len - done, out + done))) goto write_failed;
    return GGUFMAP_OK;
write_failed:
    return gm_fail_errno(e, sys, "%s: write at offset %llu (tensor '%s')", c->tmp[t->shard],
                         (unsigned long long)(out + done), t->name);
}

/* Waits for one written piece to reach the disk, reads it back from the
 * output into buf, adds it to the read-back digest, and lets its pages go. */
static int check_piece(copier *c, const task *t, const piece *p, uint8_t *buf, ggufmap_sparse *sp,
                       ggufmap_error *e) {
    int dfd = c->dst_fd[t->shard], sys;
    uint64_t out = t->dst_off + p->rel;
    if (atomic_load(&c->use_sfr) &&
        sync_file_range(dfd, (off64_t)out, (off64_t)p->len,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
        if (errno != EINVAL && errno != ESPIPE && errno != ENOSYS)
            return gm_fail_errno(e, errno, "%s: writing offset %llu (tensor '%s') to the disk", c->tmp[t->shard],
                                 (unsigned long long)out, t->name);
        atomic_store(&c->use_sfr, 0);
    }
    if ((sys = read_piece(dfd, buf, p->len, out)))
        return gm_fail_errno(e, sys, "%s: read back at offset %llu (tensor '%s')", c->tmp[t->shard],
                             (unsigned long long)out, t->name);
    if (digest_piece(sp, p->rel, buf, p->len)) return gm_fail(e, GGUFMAP_ENOMEM, "SHA-256 failed");
    if (atomic_load(&c->use_sfr)) posix_fadvise(dfd, (off_t)out, (off_t)p->len, POSIX_FADV_DONTNEED);
    return GGUFMAP_OK;
}

/* Test hook: corrupts the first byte written of the tensor named by
 * GGUFMAP_REPACK_TEST_FLIP, before its read-back. */
static int flip_byte(copier *c, const task *t, const piece *p, ggufmap_error *e) {
    uint8_t b = 0;
    int dfd = c->dst_fd[t->shard];
    off_t at = (off_t)(t->dst_off + p->rel);
    if (pread(dfd, &b, 1, at) != 1) return gm_fail(e, GGUFMAP_EIO, "test hook: read");
    b ^= 0x01;
    if (pwrite(dfd, &b, 1, at) != 1) return gm_fail(e, GGUFMAP_EIO, "test hook: write");
    return GGUFMAP_OK;
}

/* Copies and checks one tensor (see "How the bytes move" above). */
static int run_task(copier *c, const task *t, uint8_t *buf, ggufmap_error *e) {
    int rc = GGUFMAP_OK;
    const uint64_t ch = GGUFMAP_SPARSE_CHUNK, base = t->src_off, end = base + t->size;
    uint8_t copied[GGUFMAP_SHA256_LEN], read_back[GGUFMAP_SHA256_LEN];
    ggufmap_sparse *cs = ggufmap_sparse_new(), *rs = ggufmap_sparse_new();
    piece ring[CHECK_LAG];
    unsigned head = 0, queued = 0;
    bool flip = c->flip && strcmp(c->flip, t->name) == 0;
    int dfd = c->dst_fd[t->shard];
    if (!cs || !rs) {
        rc = gm_fail(e, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    uint64_t pos = base, s, stop;
    while (pos < end && gm_next_data_run(t->src_fd, base, end, ch, pos, &s, &stop)) {
        atomic_fetch_add(&c->done, s - pos);
        while (s < stop) {
            if (c->cancel && *c->cancel) {
                rc = gm_fail(e, GGUFMAP_EIO, "interrupted");
                goto done;
            }
            piece p = {s - base, stop - s < COPY_CHUNK ? (size_t)(stop - s) : COPY_CHUNK};
            if ((rc = copy_piece(c, t, &p, buf, cs, e))) goto done;
            if (flip) {
                if ((rc = flip_byte(c, t, &p, e))) goto done;
                flip = false;
            }
            if (atomic_load(&c->use_sfr))
                sync_file_range(dfd, (off64_t)(t->dst_off + p.rel), (off64_t)p.len, SYNC_FILE_RANGE_WRITE);
            if (queued == CHECK_LAG) {
                if ((rc = check_piece(c, t, &ring[head], buf, rs, e))) goto done;
                head = (head + 1) % CHECK_LAG;
                queued--;
            }
            ring[(head + queued++) % CHECK_LAG] = p;
            if (c->delay_us) usleep(c->delay_us);
            atomic_fetch_add(&c->done, p.len);
            s += p.len;
        }
        pos = stop;
    }
    atomic_fetch_add(&c->done, end - pos); /* a hole up to the end */
    for (; queued > 0; queued--, head = (head + 1) % CHECK_LAG)
        if ((rc = check_piece(c, t, &ring[head], buf, rs, e))) goto done;
    if (ggufmap_sparse_final(cs, t->size, copied) || ggufmap_sparse_final(rs, t->size, read_back)) {
        rc = gm_fail(e, GGUFMAP_ENOMEM, "SHA-256 failed");
        goto done;
    }
    if (memcmp(copied, read_back, GGUFMAP_SHA256_LEN) != 0) {
        char a[65], b[65];
        rc = gm_fail(e, GGUFMAP_EFORMAT,
                     "%s: offset %llu: tensor '%s': read-back check failed: digest %s copied, %s read back",
                     c->final_path[t->shard], (unsigned long long)t->dst_off, t->name, ggufmap_sha256_hex(copied, a),
                     ggufmap_sha256_hex(read_back, b));
    }
done:
    ggufmap_sparse_free(cs);
    ggufmap_sparse_free(rs);
    return rc;
}

static void *copy_worker(void *arg) {
    copier *c = arg;
    uint8_t *buf = malloc(COPY_CHUNK);
    for (;;) {
        if (atomic_load(&c->failed) || (c->cancel && *c->cancel)) break;
        int64_t i = (int64_t)atomic_fetch_add(&c->next, 1);
        if (i >= c->n_tasks) break;
        ggufmap_error e;
        ggufmap_error_clear(&e);
        int rc = buf ? run_task(c, &c->tasks[c->dispatch[i]], buf, &e) : gm_fail(&e, GGUFMAP_ENOMEM, "out of memory");
        if (rc) {
            set_error(c, &e);
            break;
        }
    }
    free(buf);
    atomic_fetch_add(&c->finished, 1);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const task *g_tasks; /* qsort has no context: set before sorting, single-threaded */
static int cmp_larger(const void *x, const void *y) {
    const task *a = &g_tasks[*(const int64_t *)x], *b = &g_tasks[*(const int64_t *)y];
    if (a->size != b->size) return a->size > b->size ? -1 : 1;
    return *(const int64_t *)x < *(const int64_t *)y ? -1 : 1;
}

/* Copies and checks every tensor with n workers. */
static int copy_all(copier *c, unsigned n, uint64_t total, const ggufmap_repack_opts *o, ggufmap_error *err) {
    for (int64_t i = 0; i < c->n_tasks; i++) c->dispatch[i] = i;
    g_tasks = c->tasks;
    qsort(c->dispatch, (size_t)c->n_tasks, sizeof *c->dispatch, cmp_larger);
    pthread_t tids[16];
    unsigned started = 0;
    for (; started < n && started < 16; started++)
        if (pthread_create(&tids[started], NULL, copy_worker, c) != 0) break;
    if (started == 0) copy_worker(c);
    for (unsigned tick = 0; atomic_load(&c->finished) < started; tick++) {
        if (o->progress && tick % 40 == 0) o->progress(o->progress_ctx, atomic_load(&c->done), total);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (unsigned k = 0; k < started; k++) pthread_join(tids[k], NULL);
    if (o->progress) o->progress(o->progress_ctx, atomic_load(&c->done), total);
    if (atomic_load(&c->failed)) {
        *err = c->err;
        return c->err.status ? c->err.status : GGUFMAP_EIO;
    }
    if (o->cancel && *o->cancel)
        return gm_fail(err, GGUFMAP_EIO, "interrupted by a signal: partial output removed, input untouched");
    return GGUFMAP_OK;
}

/* Checks a written shard's header against the input shard and the layout. */
static int check_header(const char *tmp, const char *final, const ggufmap_source *in, const layout *l, uint32_t s,
                        const ggufmap_model *m, ggufmap_error *err) {
    ggufmap_source *o = NULL;
    int rc = ggufmap_source_open(tmp, 0, &o, err);
    if (rc) {
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "read-back check of %.400s: %.500s", final, err->message);
        memcpy(err->message, msg, sizeof msg);
        return GGUFMAP_EFORMAT;
    }
    if (ggufmap_source_n_kv(o) != ggufmap_source_n_kv(in) || ggufmap_source_alignment(o) != ggufmap_source_alignment(in) ||
        ggufmap_source_version(o) != ggufmap_source_version(in)) {
        rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: read-back check: header differs from the input's", final);
        goto done;
    }
    for (int64_t k = 0; k < ggufmap_source_n_kv(in); k++) {
        const ggufmap_kv *a = ggufmap_source_kv(in, k), *b = ggufmap_source_kv(o, k);
        if (a->key_len != b->key_len || memcmp(a->key, b->key, a->key_len) || a->type != b->type ||
            a->elem_type != b->elem_type || a->count != b->count || a->value_size != b->value_size ||
            memcmp(a->value, b->value, a->value_size)) {
            rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: read-back check: key '%.*s' differs", final,
                         (unsigned long long)b->offset, (int)(a->key_len < 200 ? a->key_len : 200), a->key);
            goto done;
        }
    }
    if (ggufmap_source_n_tensors(o) != l->start[s + 1] - l->start[s]) {
        rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: read-back check: %lld tensors, expected %lld", final,
                     (long long)ggufmap_source_n_tensors(o), (long long)(l->start[s + 1] - l->start[s]));
        goto done;
    }
    for (int64_t p = l->start[s]; p < l->start[s + 1]; p++) {
        const ggufmap_tensor *a = ggufmap_model_tensor(m, l->order[p]);
        const ggufmap_tensor *b = ggufmap_source_tensor(o, p - l->start[s]);
        if (a->name_len != b->name_len || memcmp(a->name, b->name, a->name_len) || a->type != b->type ||
            a->size != b->size || b->offset != ggufmap_writer_tensor_offset(l->w[s], p - l->start[s])) {
            rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: read-back check: tensor '%.*s' differs", final,
                         (unsigned long long)b->info_offset, (int)a->name_len, a->name);
            goto done;
        }
    }
done:
    ggufmap_source_close(o);
    return rc;
}


static char *parent_of(const char *path) {
    char *dir = strdup(path);
    if (!dir) return NULL;
    char *slash = strrchr(dir, '/');
    if (!slash) {
        free(dir);
        return strdup(".");
    }
    *(slash == dir ? slash + 1 : slash) = '\0';
    return dir;
}

/* ------------------------------------------------------------------------ */
/* Evaluation                                                                */
/* ------------------------------------------------------------------------ */

typedef struct eval {
    uint64_t mapped, foreign;
    figure *cases;
} eval;

/* The figures of model in every case, and the sums of mapped and foreign bytes. */
static int evaluate(const ggufmap_model *model, const cases *cs, const ggufmap_plan_opts *plo, eval *ev,
                    ggufmap_error *err) {
    ev->mapped = ev->foreign = 0;
    ev->cases = calloc(cs->n, sizeof *ev->cases);
    if (!ev->cases) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < cs->n; k++) {
        int rc = figures(model, &cs->opts[k], plo, &ev->cases[k], err);
        if (rc) return rc;
        ev->mapped += ev->cases[k].mapped;
        ev->foreign += ev->cases[k].foreign;
    }
    return GGUFMAP_OK;
}

/* evaluate for a layout: on its headers, written to dir (header_model). */
static int evaluate_layout(const layout *l, const char *dir, int tag, const cases *cs, const ggufmap_plan_opts *plo,
                           eval *ev, ggufmap_error *err) {
    ggufmap_model *hm = NULL;
    int rc = header_model(l, dir, tag, &hm, err);
    if (!rc) rc = evaluate(hm, cs, plo, ev, err);
    ggufmap_model_close(hm);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* ggufmap_repack                                                            */
/* ------------------------------------------------------------------------ */

int ggufmap_repack(const char *model_path, const char *out_path, const ggufmap_repack_opts *o,
                   ggufmap_repack_result **res_out, ggufmap_error *err) {
    ggufmap_error_clear(err);
    if (res_out) *res_out = NULL;
    ggufmap_model *m = NULL;
    tinfo *ti = NULL;
    cases cs = {0};
    layout lay[3] = {{0}};
    eval ev[3] = {{0}}, before = {0};
    char scratch[] = "/tmp/ggufmap-repack-XXXXXX";
    const char *tmpdir = getenv("TMPDIR");
    char scratch_dir[4096] = "";
    copier cp;
    memset(&cp, 0, sizeof cp);
    pthread_mutex_init(&cp.lock, NULL);
    ggufmap_repack_result *res = calloc(1, sizeof *res);
    int rc = GGUFMAP_OK;
    uint32_t chosen = 0;
    if (!res) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (!out_path && !o->dry_run) {
        rc = gm_fail(err, GGUFMAP_EINVAL, "no output path");
        goto done;
    }
    if ((rc = ggufmap_model_open(model_path, 0, &m, err))) goto done;
    int64_t n = ggufmap_model_n_tensors(m);
    ti = calloc((size_t)n + 1, sizeof *ti);
    if (!ti) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    if ((rc = classify(m, ti, err))) goto done;
    if ((rc = make_cases(m, ti, o->placement, &cs, err))) goto done;

    /* cpu-last ranks from the given placement, or -ngl all on Metal. */
    {
        ggufmap_placement *pl = NULL;
        ggufmap_plan *plan = NULL;
        const ggufmap_placement_opts *po = o->placement ? o->placement : &cs.opts[cs.n - 1];
        if (!o->placement)
            for (uint32_t k = 0; k < cs.n; k++)
                if (strcmp(cs.label[k], "-ngl all") == 0) po = &cs.opts[k];
        rc = ggufmap_place(m, po, &pl, err);
        if (!rc) rc = ggufmap_plan_build(pl, &o->plan, &plan, err);
        if (!rc) rank_by_plan(plan, n, ti);
        ggufmap_plan_free(plan);
        ggufmap_placement_free(pl);
        if (rc) goto done;
    }

    /* Candidates. */
    bool moe = false;
    for (int64_t i = 0; i < n; i++) moe = moe || ti[i].expert;
    if (o->order != GGUFMAP_ORDER_AUTO) {
        res->candidates[res->n_candidates++] = o->order;
    } else {
        res->candidates[res->n_candidates++] = GGUFMAP_ORDER_CANONICAL;
        if (moe) res->candidates[res->n_candidates++] = GGUFMAP_ORDER_MOE;
        if (o->placement) res->candidates[res->n_candidates++] = GGUFMAP_ORDER_CPU_LAST;
    }
    snprintf(scratch_dir, sizeof scratch_dir, "%s/ggufmap-repack-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(scratch_dir)) {
        if (!mkdtemp(scratch)) {
            rc = gm_fail_errno(err, errno, "%s: cannot make a scratch folder", scratch);
            scratch_dir[0] = '\0';
            goto done;
        }
        snprintf(scratch_dir, sizeof scratch_dir, "%s", scratch);
    }
    if ((rc = evaluate(m, &cs, &o->plan, &before, err))) goto done;
    for (uint32_t c = 0; c < res->n_candidates; c++) {
        if ((rc = build_layout(m, ti, res->candidates[c], o->move_across_shards, &lay[c], err))) goto done;
        if ((rc = evaluate_layout(&lay[c], scratch_dir, (int)c, &cs, &o->plan, &ev[c], err))) goto done;
        res->candidate_foreign[c] = ev[c].foreign;
        if (ev[c].foreign < ev[chosen].foreign ||
            (ev[c].foreign == ev[chosen].foreign && ev[c].mapped < ev[chosen].mapped))
            chosen = c;
    }
    rmdir(scratch_dir);
    scratch_dir[0] = '\0';
    if (o->cancel && *o->cancel) {
        rc = gm_fail(err, GGUFMAP_EIO, "interrupted by a signal before writing: nothing written");
        goto done;
    }

    /* The result's figures. */
    layout *l = &lay[chosen];
    res->order = res->candidates[chosen];
    res->n_cases = cs.n;
    res->cases = calloc(cs.n, sizeof *res->cases);
    res->n_shards = l->n_shards;
    res->paths = out_path ? output_paths(out_path, l->n_shards) : NULL;
    if (!res->cases || (out_path && !res->paths)) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    for (uint32_t k = 0; k < cs.n; k++) {
        ggufmap_repack_case *rcs = &res->cases[k];
        memcpy(rcs->label, cs.label[k], sizeof rcs->label);
        rcs->mapped_before = before.cases[k].mapped;
        rcs->foreign_before = before.cases[k].foreign;
        rcs->mapped_after = ev[chosen].cases[k].mapped;
        rcs->foreign_after = ev[chosen].cases[k].foreign;
        rcs->gpu_before = before.cases[k].gpu;
        rcs->gpu_after = ev[chosen].cases[k].gpu;
        rcs->cpu_before = before.cases[k].cpu;
        rcs->cpu_after = ev[chosen].cases[k].cpu;
    }
    res->mapped_before = before.mapped;
    res->foreign_before = before.foreign;
    res->mapped_after = ev[chosen].mapped;
    res->foreign_after = ev[chosen].foreign;

    /* Tasks, and the bytes that will really be written. */
    cp.n_tasks = n;
    cp.tasks = calloc((size_t)n + 1, sizeof *cp.tasks);
    cp.dispatch = calloc((size_t)n + 1, sizeof *cp.dispatch);
    cp.dst_fd = malloc(l->n_shards * sizeof *cp.dst_fd);
    cp.tmp = calloc(l->n_shards, sizeof *cp.tmp);
    if (!cp.tasks || !cp.dispatch || !cp.dst_fd || !cp.tmp) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    for (uint32_t s = 0; s < l->n_shards; s++) cp.dst_fd[s] = -1;
    uint64_t total = 0;
    for (uint32_t s = 0; s < l->n_shards; s++) {
        res->file_bytes += ggufmap_writer_file_size(l->w[s]);
        for (int64_t p = l->start[s]; p < l->start[s + 1]; p++) {
            const ggufmap_tensor *t = ggufmap_model_tensor(m, l->order[p]);
            const ggufmap_source *src = ggufmap_model_shard(m, t->shard);
            task *tk = &cp.tasks[p];
            tk->tensor = l->order[p];
            tk->src_fd = ggufmap_source_fd(src);
            tk->src_path = ggufmap_source_path(src);
            tk->src_off = t->offset;
            tk->shard = s;
            tk->dst_off = ggufmap_writer_tensor_offset(l->w[s], p - l->start[s]);
            tk->size = t->size;
            snprintf(tk->name, sizeof tk->name, "%.*s", (int)t->name_len, t->name);
            total += t->size;
            for (uint64_t pos = t->offset, end = t->offset + t->size; pos < end;) {
                uint64_t d = gm_next_data(tk->src_fd, pos, end);
                if (d >= end) {
                    res->hole_bytes += end - pos;
                    break;
                }
                res->hole_bytes += d - pos;
                uint64_t h = gm_next_hole(tk->src_fd, d, end);
                res->data_bytes += h - d;
                pos = h;
            }
        }
    }
    /* Free space: the data and headers, and a margin for the file system's
     * own blocks (extent trees, indirect blocks, a journal's share). */
    res->space_margin = (uint64_t)n * 8192 + (uint64_t)l->n_shards * (16u << 20);
    for (uint32_t s = 0; s < l->n_shards; s++) {
        uint64_t first = ggufmap_writer_tensor_offset(l->w[s], 0);
        res->space_headers += first == UINT64_MAX ? ggufmap_writer_file_size(l->w[s]) : first;
    }
    res->space_needed = res->data_bytes + res->space_headers + res->space_margin;
    res->no_gain = res->mapped_after >= res->mapped_before;
    if (o->report) o->report(o->report_ctx, res);
    if (o->dry_run || (o->only_if_gain && res->no_gain)) goto success;

    /* Nothing may exist at an output path; then free space. */
    for (uint32_t s = 0; s < l->n_shards; s++) {
        struct stat st;
        if (lstat(res->paths[s], &st) == 0) {
            rc = gm_fail_errno(err, EEXIST, "%s: exists; refusing to overwrite it", res->paths[s]);
            goto done;
        }
    }
    {
        char *dir = parent_of(res->paths[0]);
        struct statvfs vfs;
        uint64_t need = res->space_needed;
        int vr = dir ? statvfs(dir, &vfs) : -1;
        int verr = errno;
        if (vr != 0) {
            rc = gm_fail_errno(err, verr, "%s: cannot check the free space", dir ? dir : "?");
            free(dir);
            goto done;
        }
        uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
        if (avail < need && !getenv("GGUFMAP_REPACK_TEST_NO_SPACE_CHECK")) {
            char a[32], b[32], c[32], d[32], e[32];
            rc = gm_fail_errno(err, ENOSPC,
                               "%s: needs %s free (%s of data, %s of headers, a margin of %s for the file system's "
                               "own blocks), has %s (nothing written)",
                               dir, gm_fmt_bytes(a, sizeof a, need), gm_fmt_bytes(b, sizeof b, res->data_bytes),
                               gm_fmt_bytes(c, sizeof c, res->space_headers), gm_fmt_bytes(d, sizeof d, res->space_margin),
                               gm_fmt_bytes(e, sizeof e, avail));
            free(dir);
            goto done;
        }
        free(dir);
    }

    /* Temporary files, headers, sizes. */
    mode_t mask = umask(0);
    umask(mask);
    for (uint32_t s = 0; s < l->n_shards; s++) {
        size_t len = strlen(res->paths[s]) + 16;
        cp.tmp[s] = malloc(len);
        if (!cp.tmp[s]) {
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
            goto done;
        }
        snprintf(cp.tmp[s], len, "%s.tmp-XXXXXX", res->paths[s]);
        cp.dst_fd[s] = mkostemp(cp.tmp[s], O_CLOEXEC);
        if (cp.dst_fd[s] < 0) {
            rc = gm_fail_errno(err, errno, "%s: cannot create a temporary file beside it", res->paths[s]);
            free(cp.tmp[s]);
            cp.tmp[s] = NULL;
            goto done;
        }
        fchmod(cp.dst_fd[s], 0666 & ~mask);
        uint8_t *h = NULL;
        size_t hl = 0;
        if (ggufmap_writer_header(l->w[s], &h, &hl)) {
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
            goto done;
        }
        int e = gm_pwrite_full(cp.dst_fd[s], h, hl, 0);
        free(h);
        if (e) {
            rc = gm_fail_errno(err, e, "%s: write of the header", cp.tmp[s]);
            goto done;
        }
        if (ftruncate(cp.dst_fd[s], (off_t)ggufmap_writer_file_size(l->w[s])) != 0) {
            rc = gm_fail_errno(err, errno, "%s: cannot size it to %llu bytes", cp.tmp[s],
                               (unsigned long long)ggufmap_writer_file_size(l->w[s]));
            goto done;
        }
    }

    /* Copy and check every tensor, check the headers, fsync. */
    cp.final_path = res->paths;
    cp.cancel = o->cancel;
    atomic_init(&cp.use_cfr, o->copy == GGUFMAP_COPY_KERNEL ||
                                 (o->copy == GGUFMAP_COPY_AUTO && kernel_copy_pays(cp.dst_fd[0])));
    atomic_init(&cp.use_sfr, 1);
    const char *delay = getenv("GGUFMAP_REPACK_TEST_DELAY_US");
    cp.delay_us = delay ? (unsigned)strtoul(delay, NULL, 10) : 0;
    cp.flip = getenv("GGUFMAP_REPACK_TEST_FLIP");
    unsigned threads = o->n_threads;
    if (!threads) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c < 1 ? 1 : c > 4 ? 4 : (unsigned)c;
    }
    double t0 = now_s();
    if ((rc = copy_all(&cp, threads, total, o, err))) goto done;
    res->used_copy_file_range = atomic_load(&cp.cfr_used) != 0;
    double t1 = now_s();
    res->seconds_copy = t1 - t0;
    for (uint32_t s = 0; s < l->n_shards; s++)
        if ((rc = check_header(cp.tmp[s], res->paths[s], ggufmap_model_shard(m, s), l, s, m, err))) goto done;
    for (uint32_t s = 0; s < l->n_shards; s++)
        if (fsync(cp.dst_fd[s]) != 0) {
            rc = gm_fail_errno(err, errno, "%s: fsync", cp.tmp[s]);
            goto done;
        }
    res->seconds_sync = now_s() - t1;
    for (uint32_t s = 0; s < l->n_shards; s++) {
        int fd = cp.dst_fd[s];
        cp.dst_fd[s] = -1;
        if (close(fd) != 0) {
            rc = gm_fail_errno(err, errno, "%s: close", cp.tmp[s]);
            goto done;
        }
    }
    if (o->cancel && *o->cancel) {
        rc = gm_fail(err, GGUFMAP_EIO, "interrupted by a signal: partial output removed, input untouched");
        goto done;
    }

    /* Into place: the other shards first, the first shard (what llama.cpp
     * opens) last; on failure the placed ones are removed again. */
    for (uint32_t k = 0; k < l->n_shards; k++) {
        uint32_t s = (k + 1) % l->n_shards;
        if ((rc = gm_place_file(cp.tmp[s], res->paths[s], err))) {
            for (uint32_t j = 0; j < k; j++) unlink(res->paths[(j + 1) % l->n_shards]);
            goto done;
        }
        free(cp.tmp[s]);
        cp.tmp[s] = NULL;
    }
    gm_sync_parent(res->paths[0]);
    res->written = true;
success:
    if (res_out) {
        *res_out = res;
        res = NULL;
    }
done:
    if (cp.dst_fd)
        for (uint32_t s = 0; s < lay[chosen].n_shards; s++)
            if (cp.dst_fd[s] >= 0) close(cp.dst_fd[s]);
    if (cp.tmp)
        for (uint32_t s = 0; s < lay[chosen].n_shards; s++) {
            if (cp.tmp[s]) unlink(cp.tmp[s]);
            free(cp.tmp[s]);
        }
    free(cp.tmp);
    free(cp.dst_fd);
    free(cp.tasks);
    free(cp.dispatch);
    pthread_mutex_destroy(&cp.lock);
    if (scratch_dir[0]) rmdir(scratch_dir);
    for (int c = 0; c < 3; c++) {
        layout_free(&lay[c]);
        free(ev[c].cases);
    }
    free(before.cases);
    cases_free(&cs);
    free(ti);
    ggufmap_model_close(m);
    ggufmap_repack_result_free(res);
    return rc;
}

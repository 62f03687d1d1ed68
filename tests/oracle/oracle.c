/*
 * ggufmap-oracle: load a GGUF model through the real, prebuilt llama.cpp
 * (libllama v0.5.0 from @node-llama-cpp/linux-x64@3.22.1) and report, in
 * exact bytes, every weight buffer llama.cpp creates.
 *
 * How: the executable is linked with -rdynamic and defines three ggml
 * functions that libllama imports through its PLT:
 *   ggml_backend_dev_buffer_from_host_ptr     -> MAPPED lines
 *   ggml_backend_alloc_ctx_tensors_from_buft  -> ALLOC / ATENSOR lines
 *   ggml_backend_tensor_alloc                 -> TENSOR lines (mapped tensors)
 * Each wrapper forwards to the real function (dlsym(RTLD_NEXT)).
 *
 * Second mode: --gguf-check FILE runs ggml's own gguf_init_from_file and
 * prints its verdict.
 *
 * --fake-gpu metal|cuda registers a fake GPU device (fake_gpu.c) before the
 * model loads, so that GPU placement and MTL0_Mapped / CUDA0 buffers can be
 * observed without a GPU (it computes too, on a CPU backend of its own).
 *
 * Context report (--ctx, --np, --ctk, ... see usage): after loading, a
 * llama_context is created with those parameters and every backend buffer
 * llama_init_from_model allocates is printed as a CTXBUF line, labelled by
 * what allocated it. Two more interposed functions do that:
 *   ggml_backend_buft_alloc_buffer  every backend buffer (KV cache, recurrent
 *                                   state, output, compute) goes through it
 *   ggml_backend_buffer_free        re-allocations (CTXFREE / DECFREE)
 * and ggml_backend_sched_reserve / ggml_backend_sched_alloc_graph mark the
 * compute buffers; libggml-base is not linked -Bsymbolic, so its internal
 * calls reach these definitions too.
 *
 * Output format: see README.md in this directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "gguf.h"
#include "llama.h"

#include "fake_gpu.h"

/* ------------------------------------------------------------------ */
/* global state                                                        */
/* ------------------------------------------------------------------ */

static bool g_trace;    /* -t */
static bool g_verbose;  /* -v */
static bool g_active;   /* hooks report only while the model loads */
static bool g_no_populate; /* --no-populate */

#define MAX_SHARDS 1024
static char *g_shard_real[MAX_SHARDS]; /* realpath of each shard, may be NULL */
static int   g_n_shards;

/* one record per buffer we reported */
struct buf_rec {
    ggml_backend_buffer_t buf;
    int      id;        /* ordinal among MAPPED/ALLOC lines */
    bool     mapped;
    int      file;      /* shard index, -1 unknown */
    uint64_t first;     /* file offset of the buffer base (mapped only) */
    uintptr_t base;     /* host pointer given to buffer_from_host_ptr */
};
static struct buf_rec *g_bufs;
static size_t g_n_bufs, g_cap_bufs;

/* text printed by the SIGABRT handler if we die inside the real call */
static char g_pending[512];
static volatile sig_atomic_t g_pending_set;

/* context report: which call is running, and what encloses an allocation */
enum ctx_phase { PHASE_NONE, PHASE_INIT, PHASE_DECODE };
static enum ctx_phase g_phase;      /* set around llama_init_from_model / llama_decode when reporting */
static const char *g_enclosing;     /* kind from the enclosing interposed call, NULL if none */
static int g_fa_resolved = -1;      /* flash attention as llama.cpp's log resolved it, -1 unknown */

static void die_oom(void)
{
    fputs("ggufmap-oracle: out of memory\n", stderr);
    _exit(2);
}

/* *arr with room for one more element of elem bytes beyond n: doubles the
 * capacity *cap when full */
static void *grow(void *arr, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return arr;
    size_t c = *cap ? *cap * 2 : 16;
    void *r = realloc(arr, c * elem);
    if (!r)
        die_oom();
    *cap = c;
    return r;
}

static struct buf_rec *add_buf(ggml_backend_buffer_t buf)
{
    g_bufs = grow(g_bufs, g_n_bufs, &g_cap_bufs, sizeof *g_bufs);
    struct buf_rec *r = &g_bufs[g_n_bufs];
    memset(r, 0, sizeof *r);
    r->buf = buf;
    r->id = (int)g_n_bufs;
    r->file = -1;
    g_n_bufs++;
    return r;
}

static struct buf_rec *find_mapped_buf(ggml_backend_buffer_t buf)
{
    for (size_t i = 0; i < g_n_bufs; i++)
        if (g_bufs[i].buf == buf && g_bufs[i].mapped)
            return &g_bufs[i];
    return NULL;
}

/* async-signal-safe write of a whole string */
static void write_all(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* ggml_abort hands us its message instead of printing a backtrace */
static void abort_cb(const char *msg)
{
    /* "DIR/file.cpp:LINE: text" -> "file.cpp:LINE: text" */
    const char *colon = strstr(msg, ": ");
    const char *start = msg;
    for (const char *p = msg; colon && p < colon; p++)
        if (*p == '/')
            start = p + 1;
    if (g_verbose)
        fprintf(stderr, "%s\n", msg);
    if (g_pending_set) {
        write_all(STDOUT_FILENO, g_pending);
        g_pending_set = 0;
    }
    char line[2200];
    snprintf(line, sizeof line, "ABORT %s\n", start);
    line[strcspn(line, "\n")] = '\n';
    line[strcspn(line, "\n") + 1] = '\0';
    write_all(STDOUT_FILENO, line);
}

static void on_fatal_signal(int sig)
{
    /* stdout is line buffered: every complete line is already out */
    if (g_pending_set)
        write_all(STDOUT_FILENO, g_pending);
    if (sig == SIGABRT) {
        write_all(STDOUT_FILENO, "RESULT abort\n");
        _exit(134);
    }
    write_all(STDOUT_FILENO, "RESULT crash\n");
    _exit(128 + sig);
}

/* ------------------------------------------------------------------ */
/* shards and /proc/self/maps                                          */
/* ------------------------------------------------------------------ */

/* If path ends in "-NNNNN-of-MMMMM.gguf", return the prefix length and
 * set *no (1-based) and *count; otherwise return 0. */
static size_t split_suffix(const char *path, int *no, int *count)
{
    static const char tail[] = "-00000-of-00000.gguf";
    size_t len = strlen(path), tl = sizeof tail - 1;
    if (len <= tl)
        return 0;
    const char *s = path + len - tl;
    for (size_t i = 0; i < tl; i++) {
        if (tail[i] == '0') {
            if (s[i] < '0' || s[i] > '9')
                return 0;
        } else if (s[i] != tail[i]) {
            return 0;
        }
    }
    *no = atoi(s + 1);
    *count = atoi(s + 10);
    return len - tl;
}

static void init_shards(const char *model_path)
{
    g_n_shards = 1;
    g_shard_real[0] = realpath(model_path, NULL);
    int no = 0, count = 0;
    size_t plen = split_suffix(model_path, &no, &count);
    if (plen == 0 || count < 2 || count > MAX_SHARDS)
        return;
    g_n_shards = count;
    for (int i = 1; i < count; i++) {
        size_t sz = plen + 32;
        char *p = malloc(sz);
        if (!p)
            die_oom();
        snprintf(p, sz, "%.*s-%05d-of-%05d.gguf", (int)plen, model_path, i + 1, count);
        g_shard_real[i] = realpath(p, NULL);
        free(p);
    }
}

static int shard_index_of(const char *real)
{
    for (int i = 0; i < g_n_shards; i++)
        if (g_shard_real[i] && strcmp(g_shard_real[i], real) == 0)
            return i;
    /* fall back to the split naming convention of the mapped file */
    int no = 0, count = 0;
    if (split_suffix(real, &no, &count) && no >= 1)
        return no - 1;
    return -1;
}

/* Translate a host pointer into (shard index, file offset) via
 * /proc/self/maps. Returns false if ptr is not in a file mapping. */
static bool ptr_to_file(uintptr_t ptr, int *file, uint64_t *off)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return false;
    char line[PATH_MAX + 256];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, pgoff;
        int pos = 0;
        if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &pgoff, &pos) < 3 || pos == 0)
            continue;
        if (ptr < lo || ptr >= hi)
            continue;
        char *path = line + pos;
        path[strcspn(path, "\n")] = '\0';
        if (path[0] != '/')
            break; /* anonymous or special mapping */
        char *del = strstr(path, " (deleted)");
        if (del)
            *del = '\0';
        *off = (uint64_t)(ptr - lo) + (uint64_t)pgoff;
        *file = shard_index_of(path);
        found = true;
        break;
    }
    fclose(f);
    return found;
}

/* ------------------------------------------------------------------ */
/* interposed ggml functions                                           */
/* ------------------------------------------------------------------ */

static void *real_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "ggufmap-oracle: dlsym(RTLD_NEXT, %s) failed: %s\n", name, dlerror());
        _exit(2);
    }
    return p;
}

typedef ggml_backend_buffer_t (*alloc_ctx_fn)(struct ggml_context *, ggml_backend_buffer_type_t);
/* ------------------------------------------------------------------ */
/* context report: every buffer llama_init_from_model allocates        */
/* ------------------------------------------------------------------ */

/* one buffer allocated while a context was created or decoded */
struct ctx_buf {
    ggml_backend_buffer_t buf;
    const char *kind;   /* kv | rs | output | compute | other */
    char buft[64];
    size_t size;
    bool live;
};
static struct ctx_buf *g_ctx_bufs;
static size_t g_n_ctx_bufs, g_cap_ctx_bufs;
static size_t g_ctx_first; /* the first buffer of the context being reported (--mtp-draft: the draft's) */

/* what a memory module's tensors hold, from llama.cpp's names:
 * cache_<tag>k_l<i> / cache_<tag>v_l<i> (llama-kv-cache.cpp: K and V rows, the
 * indexer's keys with tag "idx_") -> kv; cache_r_l<i>, cache_s_l<i>,
 * cache_ple_r_l<i> (llama-memory-recurrent.cpp) -> rs */
static const char *memory_kind_of(const char *name)
{
    static const char *const rs_prefixes[] = { "cache_r_l", "cache_s_l", "cache_ple_r_l" };
    for (size_t i = 0; i < sizeof rs_prefixes / sizeof rs_prefixes[0]; i++)
        if (strncmp(name, rs_prefixes[i], strlen(rs_prefixes[i])) == 0)
            return "rs";
    if (strncmp(name, "cache_", 6) == 0) {
        const char *l = strstr(name, "_l");
        while (l && strstr(l + 1, "_l"))
            l = strstr(l + 1, "_l");
        if (l && l > name + 6 && (l[-1] == 'k' || l[-1] == 'v'))
            return "kv";
    }
    return "other";
}

/* the tensor families of a memory module's ggml context: "cache_k_l:4:8192,..."
 * (name up to its layer number : tensors : bytes; views left out) */
static void memory_parts(struct ggml_context *ctx, char *out, size_t cap)
{
    char fam[16][48];
    size_t count[16], bytes[16], n = 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        if (t->view_src)
            continue; /* per-stream views of a cache tensor take no memory of their own */
        const char *name = ggml_get_name(t);
        size_t len = strlen(name);
        while (len > 0 && name[len - 1] >= '0' && name[len - 1] <= '9')
            len--;
        size_t i = 0;
        while (i < n && (strlen(fam[i]) != len || strncmp(fam[i], name, len) != 0))
            i++;
        if (i == n) {
            if (n == 16)
                continue;
            snprintf(fam[n], sizeof fam[n], "%.*s", (int)len, name);
            count[n] = bytes[n] = 0;
            n++;
        }
        count[i]++;
        bytes[i] += ggml_nbytes(t);
    }
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s:%zu:%zu", i ? "," : "", fam[i], count[i], bytes[i]);
}

static char g_parts[1024]; /* parts of the memory module being allocated, printed with its buffer */

/* A memory module (KV cache, recurrent state) allocates its tensors: label the
 * buffer(s) by the tensors' names. */
static ggml_backend_buffer_t ctx_alloc_memory(alloc_ctx_fn real, struct ggml_context *ctx,
                                              ggml_backend_buffer_type_t buft)
{
    struct ggml_tensor *first = ggml_get_first_tensor(ctx);
    const char *saved = g_enclosing;
    g_enclosing = first ? memory_kind_of(ggml_get_name(first)) : "other";
    memory_parts(ctx, g_parts, sizeof g_parts);
    ggml_backend_buffer_t buf = real(ctx, buft);
    g_enclosing = saved;
    g_parts[0] = '\0';
    return buf;
}

/* The innermost libllama function on the stack, demangled without its
 * parameter list ("llama_context::output_reserve"), or "?" */
static void libllama_caller(char *out, size_t cap)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    static demangle_fn demangle;
    if (!demangle)
        demangle = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    void *frames[64];
    int n = backtrace(frames, 64);
    snprintf(out, cap, "?");
    for (int i = 0; i < n; i++) {
        Dl_info info;
        if (!dladdr(frames[i], &info) || !info.dli_fname || !strstr(info.dli_fname, "libllama.") || !info.dli_sname)
            continue;
        int status = -1;
        char *d = demangle ? demangle(info.dli_sname, NULL, NULL, &status) : NULL;
        const char *name = d && status == 0 ? d : info.dli_sname;
        size_t len = strcspn(name, "(");
        snprintf(out, cap, "%.*s", (int)len, name);
        free(d);
        return;
    }
}

/* label of a buffer allocated outside any memory module or scheduler call */
static const char *kind_from_caller(const char *via)
{
    if (strstr(via, "output_reserve"))
        return "output";
    if (strstr(via, "graph_reserve") || strstr(via, "graph_compute") || strstr(via, "process_ubatch"))
        return "compute";
    return "other";
}

static void record_ctx_buf(ggml_backend_buffer_t buf, ggml_backend_buffer_type_t buft, size_t size)
{
    char via[160];
    libllama_caller(via, sizeof via);
    const char *kind = g_enclosing ? g_enclosing : kind_from_caller(via);
    g_ctx_bufs = grow(g_ctx_bufs, g_n_ctx_bufs, &g_cap_ctx_bufs, sizeof *g_ctx_bufs);
    struct ctx_buf *r = &g_ctx_bufs[g_n_ctx_bufs++];
    r->buf = buf;
    r->kind = kind;
    snprintf(r->buft, sizeof r->buft, "%s", ggml_backend_buft_name(buft));
    r->size = size;
    r->live = true;
    printf("%s kind=%s buft=%s size=%zu%s%s via=%s\n", g_phase == PHASE_INIT ? "CTXBUF" : "DECBUF", kind, r->buft,
           size, g_parts[0] ? " parts=" : "", g_parts, via);
}

typedef ggml_backend_buffer_t (*buft_alloc_fn)(ggml_backend_buffer_type_t, size_t);
typedef void (*buffer_free_fn)(ggml_backend_buffer_t);
typedef bool (*sched_graph_fn)(ggml_backend_sched_t, struct ggml_cgraph *);

ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size)
{
    static buft_alloc_fn real;
    if (!real)
        real = (buft_alloc_fn)real_sym("ggml_backend_buft_alloc_buffer");
    ggml_backend_buffer_t buf = real(buft, size);
    /* size 0 is a dummy buffer without memory (ggml-backend.cpp:41) */
    if (g_phase != PHASE_NONE && buf && size > 0)
        record_ctx_buf(buf, buft, size);
    return buf;
}

void ggml_backend_buffer_free(ggml_backend_buffer_t buffer)
{
    static buffer_free_fn real;
    if (!real)
        real = (buffer_free_fn)real_sym("ggml_backend_buffer_free");
    for (size_t i = 0; buffer && i < g_n_ctx_bufs; i++) {
        struct ctx_buf *r = &g_ctx_bufs[i];
        if (r->buf != buffer || !r->live)
            continue;
        r->live = false;
        if (g_phase != PHASE_NONE)
            printf("%s kind=%s buft=%s size=%zu\n", g_phase == PHASE_INIT ? "CTXFREE" : "DECFREE", r->kind, r->buft,
                   r->size);
    }
    real(buffer);
}

/* the scheduler's calls that size and allocate compute buffers */
static bool sched_call(const char *name, sched_graph_fn *real, ggml_backend_sched_t sched, struct ggml_cgraph *graph)
{
    if (!*real)
        *real = (sched_graph_fn)real_sym(name);
    const char *saved = g_enclosing;
    if (g_phase != PHASE_NONE)
        g_enclosing = "compute";
    bool ok = (*real)(sched, graph);
    g_enclosing = saved;
    return ok;
}

bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph *measure_graph)
{
    static sched_graph_fn real;
    return sched_call("ggml_backend_sched_reserve", &real, sched, measure_graph);
}

bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph)
{
    static sched_graph_fn real;
    return sched_call("ggml_backend_sched_alloc_graph", &real, sched, graph);
}

/* --graph: every graph the scheduler splits while the context is reported,
 * node by node (op, type, shape, strides, view source, sources, flags,
 * name) with the backend the scheduler assigned.  A debugging aid for
 * fit's graph model; the sources are printed as they were before the split
 * (the split redirects them to copies), by index: nI (node) or lI (leaf). */
static bool g_dump_graph;
static int g_n_graphs;

/* The head of ggml-impl.h's struct ggml_cgraph in the pinned tree (the
 * public headers keep it opaque and have no accessor for the leafs). */
struct cgraph_head {
    int size, n_nodes, n_leafs;
    struct ggml_tensor **nodes, **grads, **grad_accs, **leafs;
};

static int graph_n_leafs(struct ggml_cgraph *g) { return ((struct cgraph_head *)(void *)g)->n_leafs; }
static struct ggml_tensor *graph_leaf(struct ggml_cgraph *g, int i) { return ((struct cgraph_head *)(void *)g)->leafs[i]; }

typedef void (*split_graph_fn)(ggml_backend_sched_t, struct ggml_cgraph *);

static void tensor_ref(struct ggml_cgraph *g, const struct ggml_tensor *t, char *out, size_t cap)
{
    snprintf(out, cap, "-");
    if (!t)
        return;
    for (int i = 0; i < ggml_graph_n_nodes(g); i++)
        if (ggml_graph_node(g, i) == t) {
            snprintf(out, cap, "n%d", i);
            return;
        }
    for (int i = 0; i < graph_n_leafs(g); i++)
        if (graph_leaf(g, i) == t) {
            snprintf(out, cap, "l%d", i);
            return;
        }
    snprintf(out, cap, "x:%s", ggml_get_name(t));
}

static void print_graph_tensor(struct ggml_cgraph *g, const char *kw, int i, struct ggml_tensor *t,
                               struct ggml_tensor *const *srcs, ggml_backend_sched_t sched)
{
    char view[80], src[GGML_MAX_SRC][80];
    tensor_ref(g, t->view_src, view, sizeof view);
    for (int j = 0; j < GGML_MAX_SRC; j++)
        tensor_ref(g, srcs[j], src[j], sizeof src[j]);
    ggml_backend_t be = ggml_backend_sched_get_tensor_backend(sched, t);
    printf("%s %d op=%s type=%s ne=%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 " nb=%zu,%zu,%zu,%zu view=%s:%zu "
           "src=%s,%s,%s,%s flags=%d buf=%s be=%s name=%s\n",
           kw, i, ggml_op_desc(t), ggml_type_name(t->type), t->ne[0], t->ne[1], t->ne[2], t->ne[3], t->nb[0], t->nb[1],
           t->nb[2], t->nb[3], view, t->view_offs, src[0], src[1], src[2], src[3], t->flags,
           t->buffer ? ggml_backend_buffer_name(t->buffer) : "-", be ? ggml_backend_name(be) : "-", ggml_get_name(t));
}

void ggml_backend_sched_split_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph)
{
    static split_graph_fn real;
    if (!real)
        real = (split_graph_fn)real_sym("ggml_backend_sched_split_graph");
    if (!g_dump_graph || g_phase == PHASE_NONE) {
        real(sched, graph);
        return;
    }
    const int n = ggml_graph_n_nodes(graph);
    struct ggml_tensor *(*srcs)[GGML_MAX_SRC] = calloc((size_t)n + 1, sizeof *srcs);
    if (!srcs)
        die_oom();
    for (int i = 0; i < n; i++)
        memcpy(srcs[i], ggml_graph_node(graph, i)->src, sizeof srcs[i]);
    real(sched, graph);
    printf("GRAPH %d nodes=%d leafs=%d splits=%d\n", g_n_graphs++, n, graph_n_leafs(graph),
           ggml_backend_sched_get_n_splits(sched));
    for (int i = 0; i < graph_n_leafs(graph); i++)
        print_graph_tensor(graph, "GLEAF", i, graph_leaf(graph, i), graph_leaf(graph, i)->src, sched);
    for (int i = 0; i < n; i++)
        print_graph_tensor(graph, "GNODE", i, ggml_graph_node(graph, i), srcs[i], sched);
    free(srcs);
}

/* TOTAL lines: the live context buffers summed per kind and buffer type, in
 * order of first appearance */
static void print_ctx_totals(const char *keyword)
{
    for (size_t i = g_ctx_first; i < g_n_ctx_bufs; i++) {
        const struct ctx_buf *a = &g_ctx_bufs[i];
        bool seen = false;
        for (size_t j = g_ctx_first; j < i && !seen; j++)
            seen = g_ctx_bufs[j].live && strcmp(g_ctx_bufs[j].kind, a->kind) == 0 &&
                   strcmp(g_ctx_bufs[j].buft, a->buft) == 0;
        if (!a->live || seen)
            continue;
        size_t total = 0, n = 0;
        for (size_t j = i; j < g_n_ctx_bufs; j++) {
            const struct ctx_buf *b = &g_ctx_bufs[j];
            if (b->live && strcmp(b->kind, a->kind) == 0 && strcmp(b->buft, a->buft) == 0) {
                total += b->size;
                n++;
            }
        }
        printf("%s kind=%s buft=%s size=%zu n_buffers=%zu\n", keyword, a->kind, a->buft, total, n);
    }
}

typedef ggml_backend_buffer_t (*from_host_ptr_fn)(ggml_backend_dev_t, void *, size_t, size_t);
typedef enum ggml_status (*tensor_alloc_fn)(ggml_backend_buffer_t, struct ggml_tensor *, void *);

ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t device, void *ptr,
                                                            size_t size, size_t max_tensor_size)
{
    static from_host_ptr_fn real;
    if (!real)
        real = (from_host_ptr_fn)real_sym("ggml_backend_dev_buffer_from_host_ptr");
    if (!g_active)
        return real(device, ptr, size, max_tensor_size);

    int file = -1;
    uint64_t first = 0;
    bool known = ptr_to_file((uintptr_t)ptr, &file, &first);
    if (!known) {
        file = -1;
        first = 0;
    }
    snprintf(g_pending, sizeof g_pending,
             "PENDING dev=%s file=%d first=%" PRIu64 " last=%" PRIu64 " size=%zu max_tensor=%zu\n",
             ggml_backend_dev_name(device), file, first, first + (uint64_t)size, size, max_tensor_size);
    g_pending_set = 1;
    ggml_backend_buffer_t buf = real(device, ptr, size, max_tensor_size);
    g_pending_set = 0;

    if (!buf) {
        printf("MAPFAIL dev=%s file=%d first=%" PRIu64 " last=%" PRIu64 " size=%zu\n",
               ggml_backend_dev_name(device), file, first, first + (uint64_t)size, size);
        return NULL;
    }
    struct buf_rec *r = add_buf(buf);
    r->mapped = true;
    r->file = file;
    r->first = first;
    r->base = (uintptr_t)ptr;
    printf("MAPPED buft=%s file=%d first=%" PRIu64 " last=%" PRIu64 " size=%zu max_tensor=%zu\n",
           ggml_backend_buffer_name(buf), file, first, first + (uint64_t)size,
           ggml_backend_buffer_get_size(buf), max_tensor_size);
    return buf;
}

ggml_backend_buffer_t ggml_backend_alloc_ctx_tensors_from_buft(struct ggml_context *ctx,
                                                               ggml_backend_buffer_type_t buft)
{
    static alloc_ctx_fn real;
    if (!real)
        real = (alloc_ctx_fn)real_sym("ggml_backend_alloc_ctx_tensors_from_buft");
    if (g_phase != PHASE_NONE)
        return ctx_alloc_memory(real, ctx, buft);
    if (!g_active)
        return real(ctx, buft);

    snprintf(g_pending, sizeof g_pending, "PENDING_ALLOC buft=%s\n", ggml_backend_buft_name(buft));
    g_pending_set = 1;
    ggml_backend_buffer_t buf = real(ctx, buft);
    g_pending_set = 0;

    size_t n = 0;
    for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
        n++;
    if (!buf) {
        printf("ALLOCFAIL buft=%s n_tensors=%zu\n", ggml_backend_buft_name(buft), n);
        return NULL;
    }
    struct buf_rec *r = add_buf(buf);
    printf("ALLOC buft=%s size=%zu n_tensors=%zu\n", ggml_backend_buffer_name(buf),
           ggml_backend_buffer_get_size(buf), n);
    if (g_trace) {
        for (struct ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t))
            printf("ATENSOR buf=%d name=%s nbytes=%zu\n", r->id, ggml_get_name(t), ggml_nbytes(t));
    }
    return buf;
}

enum ggml_status ggml_backend_tensor_alloc(ggml_backend_buffer_t buffer, struct ggml_tensor *tensor,
                                           void *addr)
{
    static tensor_alloc_fn real;
    if (!real)
        real = (tensor_alloc_fn)real_sym("ggml_backend_tensor_alloc");
    enum ggml_status st = real(buffer, tensor, addr);
    if (g_active && g_trace) {
        const struct buf_rec *r = find_mapped_buf(buffer);
        if (r) {
            uint64_t off = r->first + (uint64_t)((uintptr_t)addr - r->base);
            printf("TENSOR buf=%d name=%s off=%" PRIu64 " nbytes=%zu\n", r->id, ggml_get_name(tensor), off,
                   ggml_nbytes(tensor));
        }
    }
    return st;
}

/* --no-populate: llama_mmap maps every shard without lazy tensors with
 * MAP_POPULATE (prefetch). On a sparse replica of a 100 GiB model that fills
 * the page cache with zero pages for tens of seconds. Dropping the flag
 * changes no buffer: it only makes the pages fault in on first touch, and the
 * oracle touches none. */
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    static mmap_fn real;
    if (!real)
        real = (mmap_fn)real_sym("mmap");
    if (g_no_populate && fd >= 0)
        flags &= ~MAP_POPULATE;
    return real(addr, length, prot, flags, fd, offset);
}

/* ------------------------------------------------------------------ */
/* logging                                                             */
/* ------------------------------------------------------------------ */

static char  g_logline[8192];
static size_t g_loglen;
static enum ggml_log_level g_loglevel = GGML_LOG_LEVEL_INFO;

/* While a reported context is created or decodes: its warnings and errors
 * (llama.cpp's refusals say why there) and its size lines, as CTXLOG; flash
 * attention as "auto" resolved it (llama-context.cpp resolve_fused_ops). */
static void ctx_log_line(void)
{
    if (strstr(g_logline, "Flash Attention enabled") || strstr(g_logline, "enabling flash_attn"))
        g_fa_resolved = 1;
    else if (strstr(g_logline, "Flash Attention not supported"))
        g_fa_resolved = 0;
    if (g_loglevel == GGML_LOG_LEVEL_ERROR)
        printf("CTXLOG ERROR %s\n", g_logline);
    else if (g_loglevel == GGML_LOG_LEVEL_WARN)
        printf("CTXLOG WARN %s\n", g_logline);
    else if (strstr(g_logline, "buffer size") || strstr(g_logline, "Flash Attention"))
        printf("CTXLOG %s\n", g_logline);
}

static void flush_log_line(void)
{
    g_logline[g_loglen] = '\0';
    if (g_phase != PHASE_NONE) {
        if (g_loglen > 0)
            ctx_log_line();
    } else if (strstr(g_logline, "model buffer size"))
        printf("LOG %s\n", g_logline);
    else if (g_loglevel == GGML_LOG_LEVEL_ERROR && g_loglen > 0)
        printf("ERR %s\n", g_logline);
    g_loglen = 0;
}

static void log_cb(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (g_verbose)
        fputs(text, stderr);
    if (level != GGML_LOG_LEVEL_CONT) {
        if (g_loglen > 0)
            flush_log_line();
        g_loglevel = level;
    }
    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            flush_log_line();
        } else if (g_loglen + 1 < sizeof g_logline) {
            g_logline[g_loglen++] = *p;
        }
    }
}

static void quiet_log_cb(enum ggml_log_level level, const char *text, void *ud)
{
    (void)level;
    (void)ud;
    if (g_verbose)
        fputs(text, stderr);
}

/* ------------------------------------------------------------------ */
/* buffer types by name                                                */
/* ------------------------------------------------------------------ */

typedef void (*buft_visit_fn)(ggml_backend_buffer_type_t buft, ggml_backend_dev_t dev, const char *kind,
                              void *ud);

static void visit_bufts(buft_visit_fn fn, void *ud)
{
    for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
        ggml_backend_dev_t dev = ggml_backend_dev_get(i);
        ggml_backend_buffer_type_t def = ggml_backend_dev_buffer_type(dev);
        if (def)
            fn(def, dev, "default", ud);
        ggml_backend_buffer_type_t host = ggml_backend_dev_host_buffer_type(dev);
        if (host)
            fn(host, dev, "host", ud);
        ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
        if (!reg)
            continue;
        ggml_backend_dev_get_extra_bufts_t get_extra = (ggml_backend_dev_get_extra_bufts_t)
            ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
        if (!get_extra)
            continue;
        for (ggml_backend_buffer_type_t *e = get_extra(dev); e && *e; e++)
            fn(*e, dev, "extra", ud);
    }
}

struct find_ud {
    const char *name;
    ggml_backend_buffer_type_t found;
};

static void find_visit(ggml_backend_buffer_type_t buft, ggml_backend_dev_t dev, const char *kind, void *ud)
{
    (void)dev;
    (void)kind;
    struct find_ud *f = ud;
    if (!f->found && strcmp(ggml_backend_buft_name(buft), f->name) == 0)
        f->found = buft;
}

static void list_visit(ggml_backend_buffer_type_t buft, ggml_backend_dev_t dev, const char *kind, void *ud)
{
    FILE *out = ud;
    fprintf(out, "BUFT name=%s dev=%s kind=%s\n", ggml_backend_buft_name(buft), ggml_backend_dev_name(dev),
            kind);
}

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static void usage(FILE *out)
{
    fputs("usage: ggufmap-oracle [options] MODEL.gguf   (first shard of a split model)\n"
          "       ggufmap-oracle [-v] --gguf-check FILE.gguf\n"
          "       ggufmap-oracle --list-bufts\n"
          "options:\n"
          "  -t                 also print TENSOR / ATENSOR lines\n"
          "  -v                 pass llama.cpp / ggml log through to stderr\n"
          "  --no-mmap          load_mode = NONE (default: MMAP)\n"
          "  --load-mode M      load_mode by name (auto|none|mmap|mlock|mmap_mlock|direct_io)\n"
          "  --no-repack        use_extra_bufts = false (no CPU_REPACK)\n"
          "  --no-host          no_host = true\n"
          "  --ot R=B[,R=B...]  tensor_buft_overrides entries, like llama's -ot (repeatable;\n"
          "                     B as --list-bufts)\n"
          "  --cpu-moe          append llama's --cpu-moe override (all expert FFN weights -> CPU)\n"
          "  --n-cpu-moe N      append llama's --n-cpu-moe overrides (experts of blk.0..N-1 -> CPU)\n"
          "  --n-cpu-ffn N      append llama's --n-cpu-ffn overrides (dense FFN of blk.0..N-1 -> CPU)\n"
          "  --lazy-mode M      on|off|auto (default: llama.cpp default, auto)\n"
          "  --ngl N|all        n_gpu_layers (default 0; all = -1: every layer incl. output)\n"
          "  --no-populate      strip MAP_POPULATE from llama.cpp's mmap (same buffers, no\n"
          "                     prefetch; for big sparse replicas)\n"
          "  --cpu-variant V    load this CPU variant of the prebuilt ggml (libggml-cpu-V.so:\n"
          "                     zen4, haswell, x64, ...) instead of the best one for this\n"
          "                     CPU; no-amx: the best one but sapphirerapids (the one with\n"
          "                     the AMX buffer type); --list-bufts prints the one loaded\n"
          "  --fake-gpus N      with --fake-gpu: N devices of the kind (MTL0..., CUDA0...; 1..8)\n"
          "  --fake-gpu-free B0,B1,...  the free memory (bytes) each fake device reports (default 1 TiB)\n"
          "  --dev D,D...       llama's -dev: the devices, by name, in order\n"
          "  --ts N0,N1,...     llama's -ts (tensor_split)\n"
          "  --sm none|layer|row  llama's -sm (split_mode)    --mg I   llama's -mg (main_gpu)\n"
          "  --fake-gpu K       register a fake GPU: metal (MTL0, mapped weights) or cuda\n"
          "                     (CUDA0 + CUDA_Host); default none\n"
          "  --decode N         after loading, create a context and decode N tokens (ids\n"
          "                     1..N mod n_vocab); prints a DECODE line with a hash of the\n"
          "                     last token's logits (pooled output for embedding models;\n"
          "                     T5 encodes, then decodes its start token);\n"
          "                     n_batch = n_ubatch = N unless --b/--ub say otherwise\n"
          "  --ctx N            n_ctx of the context (0: the trained context; default with\n"
          "                     --decode max(N, 256), else llama.cpp's 512); without\n"
          "                     --decode it creates the context and reports it\n"
          "  --threads N        threads for the context (default 2)\n"
          "  --mtp              after the model, load it again with load_mtp = true (the\n"
          "                     MTP draft head's load); its lines follow a 'LOAD mtp' line\n"
          "  --mtp-draft        --spec-type draft-mtp: load the model with load_mtp = true,\n"
          "                     then after the context the MTP draft context on the same\n"
          "                     model; its context lines follow a 'DRAFT mtp' line; the\n"
          "                     target context gets --draft-n-max rollback rows (n_rs_seq)\n"
          "  --draft-n-max N    --spec-draft-n-max with --mtp-draft (default 3)\n"
          "context options (llama.cpp's meanings; each turns on the context report:\n"
          "CTXPARAM, CTXBUF, CTXFREE, CTXTOTAL, CTX, CTXLOG, and with --decode DECBUF,\n"
          "DECFREE, DECTOTAL):\n"
          "  --context          report the context (for --decode without other options)\n"
          "  --np N             n_seq_max (-np)           --b N / --ub N   n_batch / n_ubatch\n"
          "  --ctk T / --ctv T  K / V cache type (f16, q8_0, ...)\n"
          "  --fa on|off|auto   flash attention (default auto)\n"
          "  --swa-full         full-size SWA cache (default off, as llama.cpp's CLI)\n"
          "  --kv-unified       one KV stream for all sequences\n"
          "  --nkvo             KV cache on the CPU (offload_kqv = false)\n"
          "  --embd             embeddings = true   --no-op-offload   op_offload = false\n"
          "  --n-outputs-max N  n_outputs_max       --logits-all  --decode asks every token's output\n"
          "  --graph            also print every graph the scheduler splits (GRAPH/GLEAF/GNODE lines)\n",
          out);
}

/* ------------------------------------------------------------------ */
/* tensor buffer-type overrides, in command-line order                 */
/* ------------------------------------------------------------------ */

/* common/common.h of the pinned tree (v0.5.0) */
#define LLM_FFN_EXPS_REGEX  "\\.ffn_(up|down|gate|gate_up)_(ch|)exps"
#define LLM_FFN_DENSE_REGEX "\\.ffn_(up|down|gate)\\."

struct ot_entry {
    char *pattern;
    char *buft_name; /* NULL: ggml_backend_cpu_buffer_type(), as common's MoE flags */
};
static struct ot_entry *g_ot;
static size_t g_n_ot, g_cap_ot;

static void ot_push(char *pattern, char *buft_name)
{
    g_ot = grow(g_ot, g_n_ot, &g_cap_ot, sizeof *g_ot);
    g_ot[g_n_ot].pattern = pattern;
    g_ot[g_n_ot].buft_name = buft_name;
    g_n_ot++;
}

static char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        die_oom();
    return p;
}

/* common/arg.cpp parse_tensor_buffer_overrides: split the value at every ','
 * and each item at its first '=' (pattern may be empty, buft may not). */
static bool ot_parse(const char *value)
{
    const char *item = value;
    for (;;) {
        size_t len = strcspn(item, ",");
        const char *eq = memchr(item, '=', len);
        if (!eq || eq + 1 == item + len) {
            fprintf(stderr, "ggufmap-oracle: --ot expects REGEX=BUFT[,REGEX=BUFT...], got '%.*s' in '%s'\n",
                    (int)len, item, value);
            return false;
        }
        ot_push(xstrndup(item, (size_t)(eq - item)), xstrndup(eq + 1, (size_t)(item + len - eq - 1)));
        if (item[len] == '\0')
            return true;
        item += len + 1;
    }
}

/* common/common.h llm_add_n_cpu_ffn_overrides: "blk\\.<i>" + regex -> CPU, i = 0..n-1 */
static void ot_add_n_cpu(long n, const char *ffn_regex)
{
    for (long i = 0; i < n; i++) {
        size_t sz = strlen(ffn_regex) + 32;
        char *p = malloc(sz);
        if (!p)
            die_oom();
        snprintf(p, sz, "blk\\.%ld%s", i, ffn_regex);
        ot_push(p, NULL);
    }
}

/* a count in [0, max] */
static bool parse_count_max(const char *opt, const char *s, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || errno || v < 0 || v > max) {
        fprintf(stderr, "ggufmap-oracle: %s takes a count from 0 to %ld, not '%s'\n", opt, max, s);
        return false;
    }
    *out = v;
    return true;
}

static bool parse_count(const char *opt, const char *s, long *out) { return parse_count_max(opt, s, 100000, out); }

static int gguf_check(const char *path)
{
    ggml_log_set(quiet_log_cb, NULL);
    struct gguf_init_params ip = { .no_alloc = true, .ctx = NULL };
    struct gguf_context *g = gguf_init_from_file(path, ip);
    if (!g) {
        printf("GGUF fail\n");
        return 1;
    }
    printf("GGUF ok n_tensors=%" PRId64 " n_kv=%" PRId64 " data_offset=%zu\n", gguf_get_n_tensors(g),
           gguf_get_n_kv(g), gguf_get_data_offset(g));
    gguf_free(g);
    return 0;
}

/* ------------------------------------------------------------------ */
/* --decode: does the loaded model run?                                */
/* ------------------------------------------------------------------ */

/* FNV-1a over the bytes of n floats: bit-identical outputs give equal hashes. */
static uint64_t hash_floats(const float *v, size_t n, bool *finite)
{
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)v;
    *finite = true;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            *finite = false;
    for (size_t i = 0; i < n * sizeof *v; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* The pooling type an embedding or rerank model declares (<arch>.pooling_type,
 * read into hparams.pooling_type by llama-model.cpp:1258), or 0 (none). */
static int model_pooling(const struct llama_model *m)
{
    char arch[64], key[96], val[32];
    if (llama_model_meta_val_str(m, "general.architecture", arch, sizeof arch) < 0)
        return 0;
    snprintf(key, sizeof key, "%s.pooling_type", arch);
    if (llama_model_meta_val_str(m, key, val, sizeof val) < 0)
        return 0;
    return atoi(val);
}

/* An encoder-decoder model (T5) encodes the batch, then decodes its decoder
 * start token (llama_model_decoder_start_token, or token 0) against it. */
static int encode_then_decode(struct llama_context *ctx, const struct llama_model *m, struct llama_batch b)
{
    int rc = llama_encode(ctx, b);
    if (rc != 0)
        return rc;
    llama_token start = llama_model_decoder_start_token(m);
    if (start == LLAMA_TOKEN_NULL)
        start = 0;
    return llama_decode(ctx, llama_batch_get_one(&start, 1));
}

/* The context options, with llama.cpp's meanings (common/arg.cpp). */
struct ctx_opts {
    bool report;          /* print the context report (CTX* lines) */
    long n_decode;        /* --decode N: decode N tokens, 0 = no decode */
    long n_ctx;           /* -1: default */
    long n_seq_max;       /* --np */
    long n_batch, n_ubatch, n_outputs_max; /* -1: default */
    long draft_n_max;     /* --draft-n-max: --spec-draft-n-max (common's default 3) */
    long n_threads;
    int type_k, type_v;   /* ggml types; -1: default (f16) */
    int flash_attn;       /* enum llama_flash_attn_type */
    bool swa_full, kv_unified, no_kv_offload, embeddings, no_op_offload, logits_all;
    bool mtp_draft;       /* --mtp-draft: load with load_mtp, then the MTP draft context */
};

/* llama_context_default_params() with llama.cpp's CLI swa_full (off), the
 * options given, and for a bare --decode N its old defaults (n_ctx
 * max(N, 256), n_batch = n_ubatch = N). */
static struct llama_context_params context_params(const struct ctx_opts *o, bool pooled)
{
    struct llama_context_params cp = llama_context_default_params();
    cp.swa_full = o->swa_full;
    if (o->n_ctx >= 0)
        cp.n_ctx = (uint32_t)o->n_ctx;
    else if (o->n_decode > 0)
        cp.n_ctx = (uint32_t)(o->n_decode > 256 ? o->n_decode : 256);
    if (o->n_decode > 0)
        cp.n_batch = cp.n_ubatch = (uint32_t)o->n_decode;
    if (o->n_batch >= 0)
        cp.n_batch = (uint32_t)o->n_batch;
    if (o->n_ubatch >= 0)
        cp.n_ubatch = (uint32_t)o->n_ubatch;
    if (o->n_outputs_max >= 0)
        cp.n_outputs_max = (uint32_t)o->n_outputs_max;
    cp.n_seq_max = (uint32_t)o->n_seq_max;
    cp.n_threads = cp.n_threads_batch = (int32_t)o->n_threads;
    if (o->type_k >= 0)
        cp.type_k = (enum ggml_type)o->type_k;
    if (o->type_v >= 0)
        cp.type_v = (enum ggml_type)o->type_v;
    cp.flash_attn_type = (enum llama_flash_attn_type)o->flash_attn;
    cp.kv_unified = o->kv_unified;
    cp.offload_kqv = !o->no_kv_offload;
    cp.op_offload = !o->no_op_offload;
    cp.embeddings = o->embeddings || pooled;
    /* draft-mtp asks the target for rollback rows, one per draft token
     * (common_params_speculative::need_n_rs_seq, common/common.h:394,
     * common.cpp:1723); llama.cpp clamps them to 0 where the architecture
     * has no partial rollback (llama-context.cpp:105-110) */
    if (o->mtp_draft)
        cp.n_rs_seq = (uint32_t)o->draft_n_max;
    return cp;
}

static void print_ctx_params(const struct llama_model *m, const struct llama_context_params *cp)
{
    printf("CTXHP n_ctx_train=%d n_layer=%d n_embd=%d n_head=%d n_head_kv=%d n_swa=%d n_vocab=%d\n",
           llama_model_n_ctx_train(m), llama_model_n_layer(m), llama_model_n_embd(m), llama_model_n_head(m),
           llama_model_n_head_kv(m), llama_model_n_swa(m), llama_vocab_n_tokens(llama_model_get_vocab(m)));
    printf("CTXPARAM n_ctx=%u n_batch=%u n_ubatch=%u n_seq_max=%u n_outputs_max=%u type_k=%s type_v=%s fa=%s "
           "swa_full=%d kv_unified=%d offload_kqv=%d op_offload=%d embeddings=%d n_threads=%d n_rs_seq=%u\n",
           cp->n_ctx, cp->n_batch, cp->n_ubatch, cp->n_seq_max, cp->n_outputs_max, ggml_type_name(cp->type_k),
           ggml_type_name(cp->type_v), llama_flash_attn_type_name(cp->flash_attn_type), cp->swa_full,
           cp->kv_unified, cp->offload_kqv, cp->op_offload, cp->embeddings, cp->n_threads, cp->n_rs_seq);
}

/* llama_init_from_model, reported when o->report: CTXPARAM, the CTXBUF /
 * CTXFREE lines of its allocations, CTXTOTAL per kind and buffer type, and
 * CTX ok (effective sizes) or CTX fail. */
static struct llama_context *create_context(struct llama_model *m, const struct ctx_opts *o,
                                            const struct llama_context_params *cp)
{
    if (o->report)
        print_ctx_params(m, cp);
    g_phase = o->report ? PHASE_INIT : PHASE_NONE;
    g_fa_resolved = -1;
    struct llama_context *ctx = llama_init_from_model(m, *cp);
    if (g_loglen > 0)
        flush_log_line();
    g_phase = PHASE_NONE;
    if (!o->report)
        return ctx;
    if (!ctx) {
        printf("CTX fail\n");
        return NULL;
    }
    print_ctx_totals("CTXTOTAL");
    int fa = cp->flash_attn_type == LLAMA_FLASH_ATTN_TYPE_ENABLED    ? 1
             : cp->flash_attn_type == LLAMA_FLASH_ATTN_TYPE_DISABLED ? 0
                                                                     : g_fa_resolved;
    printf("CTX ok n_ctx=%u n_ctx_seq=%u n_batch=%u n_ubatch=%u n_seq_max=%u fa=%s\n", llama_n_ctx(ctx),
           llama_n_ctx_seq(ctx), llama_n_batch(ctx), llama_n_ubatch(ctx), llama_n_seq_max(ctx),
           fa < 0 ? "unknown" : fa ? "on" : "off");
    return ctx;
}

/* Decodes tokens 1..n (mod n_vocab) in one batch, outputs for the last token
 * (every token with --logits-all); an encoder-decoder model (T5) encodes them
 * and decodes its start token.  A pooled model (an encoder-only one, or one
 * that declares a pooling type: BERT-style embedding and rerank models)
 * runs with embeddings on, an encoder-only one through llama_encode, and its
 * pooled output (n_embd floats, n_cls_out for rank pooling) is hashed
 * instead of logits. Prints
 * DECODE ok|fail, and when reporting the DECBUF / DECFREE lines of buffers
 * the decode (re)allocated and DECTOTAL. */
static bool decode_tokens(struct llama_context *ctx, const struct llama_model *m, const struct ctx_opts *o,
                          bool encoder_only, int pooling)
{
    const bool pooled = encoder_only || pooling != 0;
    const int n_tokens = (int)o->n_decode;
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    struct llama_batch b = llama_batch_init(n_tokens, 0, 1);
    for (int i = 0; i < n_tokens; i++) {
        b.token[i] = (llama_token)(n_vocab > 1 ? 1 + i % (n_vocab - 1) : 0);
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = pooled || o->logits_all || i == n_tokens - 1;
    }
    b.n_tokens = n_tokens;
    g_phase = o->report ? PHASE_DECODE : PHASE_NONE;
    const bool enc_dec = llama_model_has_encoder(m) && !encoder_only;
    int rc = encoder_only ? llama_encode(ctx, b) : enc_dec ? encode_then_decode(ctx, m, b) : llama_decode(ctx, b);
    if (g_loglen > 0)
        flush_log_line();
    g_phase = PHASE_NONE;
    bool ok = rc == 0;
    if (!ok) {
        printf("DECODE fail stage=%s rc=%d\n", encoder_only ? "encode" : "decode", rc);
    } else {
        const float *out = pooled ? llama_get_embeddings_seq(ctx, 0) : llama_get_logits_ith(ctx, -1);
        if (pooled && !out)
            out = llama_get_embeddings_ith(ctx, -1);
        size_t n = !pooled                            ? (size_t)n_vocab
                   : pooling == LLAMA_POOLING_TYPE_RANK ? (size_t)llama_model_n_cls_out(m)
                                                        : (size_t)llama_model_n_embd_out(m);
        if (!out) {
            printf("DECODE fail stage=output\n");
            ok = false;
        } else {
            bool finite;
            uint64_t h = hash_floats(out, n, &finite);
            printf("DECODE ok kind=%s n_tokens=%d n_out=%zu hash=%016" PRIx64 " finite=%d\n",
                   pooled ? "embd" : "logits", n_tokens, n, h, finite ? 1 : 0);
            ok = finite;
        }
    }
    if (o->report)
        print_ctx_totals("DECTOTAL");
    llama_batch_free(b);
    return ok;
}

/* --mtp-draft: the context llama.cpp's --spec-type draft-mtp makes beside
 * the target's, on the same model (common/speculative.cpp:2536-2590,
 * common_base_params_to_speculative :2466-2502): ctx_type MTP, the target's
 * n_ctx, no recurrent rollback rows, the draft's cache types (f16 unless
 * -ctkd/-ctvd), n_parallel outputs at most and one per sequence, no
 * embeddings.  Its lines follow a 'DRAFT mtp' line; its totals count its
 * own buffers only.  Returns false when llama.cpp refuses it. */
static bool run_mtp_draft(struct llama_model *m, struct llama_context *tgt, const struct ctx_opts *o,
                          const struct llama_context_params *tcp)
{
    struct llama_context_params cp = *tcp;
    cp.ctx_type = LLAMA_CONTEXT_TYPE_MTP;
    cp.n_ctx = llama_n_ctx(tgt);
    cp.n_rs_seq = 0;
    cp.ctx_other = tgt;
    cp.type_k = cp.type_v = GGML_TYPE_F16;
    cp.n_outputs_max = cp.n_seq_max;
    cp.n_outputs_max_per_seq = 1;
    cp.embeddings = false;
    printf("DRAFT mtp\n");
    g_ctx_first = g_n_ctx_bufs;
    struct llama_context *ctx = create_context(m, o, &cp);
    g_ctx_first = 0;
    if (!ctx)
        return false;
    llama_free(ctx);
    return true;
}

/* The context part of a run: create it (reported or not), decode if asked.
 * Returns false when the context was refused or the decode failed. */
static bool run_context(struct llama_model *m, const struct ctx_opts *o)
{
    const bool encoder_only = llama_model_has_encoder(m) && !llama_model_has_decoder(m);
    const int pooling = model_pooling(m);
    struct llama_context_params cp = context_params(o, encoder_only || pooling != 0);
    struct llama_context *ctx = create_context(m, o, &cp);
    if (!ctx) {
        if (!o->report)
            printf("DECODE fail stage=context\n");
        return false;
    }
    bool ok = o->n_decode == 0 || decode_tokens(ctx, m, o, encoder_only, pooling);
    if (ok && o->mtp_draft)
        ok = run_mtp_draft(m, ctx, o, &cp);
    llama_free(ctx);
    return ok;
}

/* ggml type by its name (f16, q8_0, ...), -1 if none */
static int type_by_name(const char *name)
{
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char *n = ggml_type_name((enum ggml_type)t);
        if (n && strcmp(n, name) == 0)
            return t;
    }
    return -1;
}

/* Context options (see usage). Returns 1 if argv[*i] was one (and consumed
 * its value), 0 if it is not a context option, -1 on a bad value. */
static int parse_ctx_option(int argc, char **argv, int *i, struct ctx_opts *o, bool *ctx_given)
{
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    long *count = NULL;
    bool new_option = true; /* everything but --decode, --ctx and --threads turns the report on */
    if (strcmp(a, "--decode") == 0) count = &o->n_decode, new_option = false;
    else if (strcmp(a, "--ctx") == 0) count = &o->n_ctx, new_option = false, *ctx_given = true;
    else if (strcmp(a, "--threads") == 0) count = &o->n_threads, new_option = false;
    else if (strcmp(a, "--np") == 0) count = &o->n_seq_max;
    else if (strcmp(a, "--b") == 0) count = &o->n_batch;
    else if (strcmp(a, "--ub") == 0) count = &o->n_ubatch;
    else if (strcmp(a, "--n-outputs-max") == 0) count = &o->n_outputs_max;
    else if (strcmp(a, "--draft-n-max") == 0) count = &o->draft_n_max;
    if (count) {
        /* contexts up to llama.cpp's uint32 n_ctx; 1 << 30 is far beyond any model */
        if (!v || !parse_count_max(a, v, 1l << 30, count))
            return -1;
        if ((count == &o->n_threads || count == &o->n_seq_max) && *count < 1) {
            fprintf(stderr, "ggufmap-oracle: %s must be at least 1\n", a);
            return -1;
        }
        (*i)++;
        o->report |= new_option;
        return 1;
    }
    if (strcmp(a, "--ctk") == 0 || strcmp(a, "--ctv") == 0) {
        int t = v ? type_by_name(v) : -1;
        if (t < 0) {
            fprintf(stderr, "ggufmap-oracle: %s takes a ggml type name (f16, q8_0, ...), not '%s'\n", a, v ? v : "");
            return -1;
        }
        *(strcmp(a, "--ctk") == 0 ? &o->type_k : &o->type_v) = t;
        (*i)++;
    } else if (strcmp(a, "--fa") == 0) {
        if (v && strcmp(v, "on") == 0) o->flash_attn = LLAMA_FLASH_ATTN_TYPE_ENABLED;
        else if (v && strcmp(v, "off") == 0) o->flash_attn = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        else if (v && strcmp(v, "auto") == 0) o->flash_attn = LLAMA_FLASH_ATTN_TYPE_AUTO;
        else {
            fprintf(stderr, "ggufmap-oracle: --fa takes on|off|auto, not '%s'\n", v ? v : "");
            return -1;
        }
        (*i)++;
    } else if (strcmp(a, "--swa-full") == 0) o->swa_full = true;
    else if (strcmp(a, "--kv-unified") == 0) o->kv_unified = true;
    else if (strcmp(a, "--nkvo") == 0) o->no_kv_offload = true;
    else if (strcmp(a, "--embd") == 0) o->embeddings = true;
    else if (strcmp(a, "--no-op-offload") == 0) o->no_op_offload = true;
    else if (strcmp(a, "--logits-all") == 0) o->logits_all = true;
    else if (strcmp(a, "--context") == 0) o->report = true;
    else if (strcmp(a, "--graph") == 0) g_dump_graph = true;
    else return 0;
    o->report = true;
    return 1;
}

/* ------------------------------------------------------------------ */
/* the CPU variant                                                     */
/* ------------------------------------------------------------------ */

/* The CPU variant to load: ggml_backend_load_best's choice (the highest
 * ggml_backend_score of dir's libggml-cpu-*.so) among the variants that
 * are not `exclude`, or exactly `want`.  Its path into path; false when
 * none runs here. */
static bool pick_cpu_variant(const char *dir, const char *want, const char *exclude, char *path, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    int best = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (strncmp(n, "libggml-cpu-", 12) != 0 || len < 16 || strcmp(n + len - 3, ".so") != 0)
            continue;
        char variant[256];
        snprintf(variant, sizeof variant, "%.*s", (int)(len - 15), n + 12);
        if ((want && strcmp(variant, want) != 0) || (exclude && strcmp(variant, exclude) == 0))
            continue;
        char full[PATH_MAX];
        if ((size_t)snprintf(full, sizeof full, "%s/%s", dir, n) >= sizeof full)
            continue;
        void *h = dlopen(full, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        int (*score)(void) = (int (*)(void))dlsym(h, "ggml_backend_score");
        int sc = score ? score() : 0;
        dlclose(h);
        if (sc > best) {
            best = sc;
            snprintf(path, cap, "%s", full);
        }
    }
    closedir(d);
    return best > 0;
}

/* The loaded CPU variant's name, from the CPU backend's library. */
static void print_cpu_variant(void)
{
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    void *fn = cpu ? ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(cpu), "ggml_backend_get_features")
                   : NULL;
    Dl_info info;
    const char *name = fn && dladdr(fn, &info) && info.dli_fname ? strrchr(info.dli_fname, '/') : NULL;
    name = name ? name + 1 : "unknown";
    size_t len = strlen(name);
    if (strncmp(name, "libggml-cpu-", 12) == 0 && len > 15)
        printf("CPUVARIANT name=%.*s\n", (int)(len - 15), name + 12);
    else
        printf("CPUVARIANT name=%s\n", name);
}

static const char *backend_dir(void)
{
    const char *env = getenv("GGUFMAP_ORACLE_BACKEND_DIR");
    if (env && *env)
        return env;
    static char dir[PATH_MAX];
    Dl_info info;
    if (dladdr((void *)&llama_backend_init, &info) && info.dli_fname) {
        snprintf(dir, sizeof dir, "%s", info.dli_fname);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            return dir;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);

    const char *model = NULL;
    const char *check_file = NULL;
    bool list_bufts = false;
    bool no_repack = false, no_host = false;
    enum llama_load_mode load_mode = LLAMA_LOAD_MODE_MMAP;
    int lazy_mode = -1;
    int ngl = 0;
    enum fake_gpu_kind fake_gpu = FAKE_GPU_NONE;
    int n_fake = 1;
    const char *dev_list = NULL;
    static float tensor_split[128]; /* llama_max_devices() entries, zero unless --ts */
    bool ts_given = false;
    int split_mode = -1, main_gpu = -1;
    struct ctx_opts co = {
        .n_ctx = -1, .n_seq_max = 1, .n_batch = -1, .n_ubatch = -1, .n_outputs_max = -1, .draft_n_max = 3, .n_threads = 2,
        .type_k = -1, .type_v = -1, .flash_attn = LLAMA_FLASH_ATTN_TYPE_AUTO,
    };
    bool ctx_given = false;
    bool mtp = false;
    const char *cpu_variant = NULL;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_next = i + 1 < argc;
        int ctx_rc;
        if (strcmp(a, "-t") == 0) {
            g_trace = true;
        } else if (strcmp(a, "-v") == 0) {
            g_verbose = true;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--no-mmap") == 0) {
            load_mode = LLAMA_LOAD_MODE_NONE;
        } else if (strcmp(a, "--load-mode") == 0 && has_next) {
            const char *m = argv[++i];
            if (strcmp(m, "auto") == 0) load_mode = LLAMA_LOAD_MODE_AUTO;
            else if (strcmp(m, "none") == 0) load_mode = LLAMA_LOAD_MODE_NONE;
            else if (strcmp(m, "mmap") == 0) load_mode = LLAMA_LOAD_MODE_MMAP;
            else if (strcmp(m, "mlock") == 0) load_mode = LLAMA_LOAD_MODE_MLOCK;
            else if (strcmp(m, "mmap_mlock") == 0) load_mode = LLAMA_LOAD_MODE_MMAP_MLOCK;
            else if (strcmp(m, "direct_io") == 0) load_mode = LLAMA_LOAD_MODE_DIRECT_IO;
            else {
                fprintf(stderr, "ggufmap-oracle: unknown load mode '%s'\n", m);
                return 2;
            }
        } else if (strcmp(a, "--no-repack") == 0) {
            no_repack = true;
        } else if (strcmp(a, "--no-host") == 0) {
            no_host = true;
        } else if (strcmp(a, "--no-populate") == 0) {
            g_no_populate = true;
        } else if (strcmp(a, "--ot") == 0 && has_next) {
            if (!ot_parse(argv[++i]))
                return 2;
        } else if (strcmp(a, "--cpu-moe") == 0) {
            ot_push(xstrndup(LLM_FFN_EXPS_REGEX, strlen(LLM_FFN_EXPS_REGEX)), NULL);
        } else if ((strcmp(a, "--n-cpu-moe") == 0 || strcmp(a, "--n-cpu-ffn") == 0) && has_next) {
            long n;
            if (!parse_count(a, argv[++i], &n))
                return 2;
            ot_add_n_cpu(n, strcmp(a, "--n-cpu-moe") == 0 ? LLM_FFN_EXPS_REGEX : LLM_FFN_DENSE_REGEX);
        } else if (strcmp(a, "--fake-gpus") == 0 && has_next) {
            long n;
            if (!parse_count(a, argv[++i], &n) || n < 1 || n > FAKE_GPU_MAX_DEVICES) {
                fprintf(stderr, "ggufmap-oracle: --fake-gpus takes 1..%d\n", FAKE_GPU_MAX_DEVICES);
                return 2;
            }
            n_fake = (int)n;
        } else if (strcmp(a, "--fake-gpu-free") == 0 && has_next) {
            /* bytes per fake device, in order: B0,B1,... */
            const char *p = argv[++i];
            for (int d = 0; *p; d++) {
                char *end;
                unsigned long long v = strtoull(p, &end, 10);
                if (end == p || (*end && *end != ',') || d >= FAKE_GPU_MAX_DEVICES) {
                    fprintf(stderr, "ggufmap-oracle: --fake-gpu-free takes bytes per device: B0,B1,...\n");
                    return 2;
                }
                fake_gpu_set_free(d, (size_t)v);
                p = *end ? end + 1 : end;
            }
        } else if (strcmp(a, "--dev") == 0 && has_next) {
            dev_list = argv[++i];
        } else if (strcmp(a, "--ts") == 0 && has_next) {
            /* common/arg.cpp: split at ',' and '/', std::stof each */
            char *list = xstrndup(argv[i + 1], strlen(argv[i + 1])), *save = NULL;
            i++;
            size_t k = 0;
            for (char *t = strtok_r(list, ",/", &save); t; t = strtok_r(NULL, ",/", &save)) {
                if (k >= llama_max_devices() - 1 || k >= sizeof tensor_split / sizeof tensor_split[0]) {
                    fprintf(stderr, "ggufmap-oracle: --ts: too many values\n");
                    return 2;
                }
                tensor_split[k++] = strtof(t, NULL);
            }
            free(list);
            ts_given = true;
        } else if (strcmp(a, "--sm") == 0 && has_next) {
            const char *m = argv[++i];
            if (strcmp(m, "none") == 0) split_mode = LLAMA_SPLIT_MODE_NONE;
            else if (strcmp(m, "layer") == 0) split_mode = LLAMA_SPLIT_MODE_LAYER;
            else if (strcmp(m, "row") == 0) split_mode = LLAMA_SPLIT_MODE_ROW;
            else {
                fprintf(stderr, "ggufmap-oracle: --sm takes none|layer|row, not '%s'\n", m);
                return 2;
            }
        } else if (strcmp(a, "--mg") == 0 && has_next) {
            long n;
            if (!parse_count(a, argv[++i], &n))
                return 2;
            main_gpu = (int)n;
        } else if (strcmp(a, "--cpu-variant") == 0 && has_next) {
            cpu_variant = argv[++i];
        } else if (strcmp(a, "--fake-gpu") == 0 && has_next) {
            const char *k = argv[++i];
            if (strcmp(k, "metal") == 0) fake_gpu = FAKE_GPU_METAL;
            else if (strcmp(k, "cuda") == 0) fake_gpu = FAKE_GPU_CUDA;
            else if (strcmp(k, "none") == 0) fake_gpu = FAKE_GPU_NONE;
            else {
                fprintf(stderr, "ggufmap-oracle: --fake-gpu takes metal|cuda|none, not '%s'\n", k);
                return 2;
            }
        } else if (strcmp(a, "--lazy-mode") == 0 && has_next) {
            const char *m = argv[++i];
            if (strcmp(m, "on") == 0) lazy_mode = LLAMA_LAZY_MODE_ON;
            else if (strcmp(m, "off") == 0) lazy_mode = LLAMA_LAZY_MODE_OFF;
            else if (strcmp(m, "auto") == 0) lazy_mode = LLAMA_LAZY_MODE_AUTO;
            else {
                fprintf(stderr, "ggufmap-oracle: --lazy-mode takes on|off|auto, not '%s'\n", m);
                return 2;
            }
        } else if (strcmp(a, "--ngl") == 0 && has_next) {
            const char *v = argv[++i];
            if (strcmp(v, "all") == 0) {
                ngl = -1; /* llama_model_params: negative = all layers, output included */
            } else {
                char *end;
                errno = 0;
                long n = strtol(v, &end, 10);
                if (*v == '\0' || *end || errno || n < INT32_MIN || n > INT32_MAX) {
                    fprintf(stderr, "ggufmap-oracle: --ngl takes a number or 'all', not '%s'\n", v);
                    return 2;
                }
                ngl = (int)n;
            }
        } else if ((ctx_rc = parse_ctx_option(argc, argv, &i, &co, &ctx_given)) != 0) {
            if (ctx_rc < 0)
                return 2;
        } else if (strcmp(a, "--gguf-check") == 0 && has_next) {
            check_file = argv[++i];
        } else if (strcmp(a, "--mtp") == 0) {
            mtp = true;
        } else if (strcmp(a, "--mtp-draft") == 0) {
            co.mtp_draft = true;
            ctx_given = true;
        } else if (strcmp(a, "--list-bufts") == 0) {
            list_bufts = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "ggufmap-oracle: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!model) {
            model = a;
        } else {
            fprintf(stderr, "ggufmap-oracle: more than one model path given\n");
            return 2;
        }
    }

    /* never let ggml try to attach a debugger on abort */
    if (!g_verbose)
        setenv("GGML_NO_BACKTRACE", "1", 1);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    ggml_set_abort_callback(abort_cb);

    if (check_file)
        return gguf_check(check_file);

    if (!model && !list_bufts) {
        usage(stderr);
        return 2;
    }

    llama_log_set(log_cb, NULL);
    llama_backend_init();
    const char *dir = backend_dir();
    if (!dir) {
        fprintf(stderr, "ggufmap-oracle: cannot locate the ggml backend directory\n");
        return 2;
    }
    if (cpu_variant) {
        char path[PATH_MAX];
        bool no_amx = strcmp(cpu_variant, "no-amx") == 0;
        if (!pick_cpu_variant(dir, no_amx ? NULL : cpu_variant, no_amx ? "sapphirerapids" : NULL, path, sizeof path)) {
            fprintf(stderr, "ggufmap-oracle: no CPU variant '%s' in %s runs on this CPU\n", cpu_variant, dir);
            printf("RESULT fail\n");
            return 1;
        }
        ggml_backend_load(path);
    } else {
        ggml_backend_load_all_from_path(dir);
    }
    if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
        fprintf(stderr, "ggufmap-oracle: no CPU backend could be loaded from %s\n", dir);
        printf("RESULT fail\n");
        return 1;
    }

    /* after the CPU backend (llama.cpp needs it), before the model and the buft lookups */
    if (!fake_gpu_register(fake_gpu, n_fake)) {
        printf("RESULT fail\n");
        return 1;
    }

    if (list_bufts) {
        print_cpu_variant();
        visit_bufts(list_visit, stdout);
        return 0;
    }

    /* tensor_buft_overrides, NULL-terminated */
    struct llama_model_tensor_buft_override *ot = calloc(g_n_ot + 1, sizeof *ot);
    if (!ot)
        die_oom();
    for (size_t i = 0; i < g_n_ot; i++) {
        ot[i].pattern = g_ot[i].pattern;
        if (!g_ot[i].buft_name) {
            ot[i].buft = ggml_backend_cpu_buffer_type();
            continue;
        }
        struct find_ud f = { g_ot[i].buft_name, NULL };
        visit_bufts(find_visit, &f);
        if (!f.found) {
            fprintf(stderr, "ggufmap-oracle: unknown buffer type '%s'; available:\n", g_ot[i].buft_name);
            visit_bufts(list_visit, stderr);
            return 2;
        }
        ot[i].buft = f.found;
    }
    if (g_verbose)
        for (size_t i = 0; i < g_n_ot; i++)
            fprintf(stderr, "ggufmap-oracle: override %zu: '%s' -> %s\n", i, ot[i].pattern,
                    ggml_backend_buft_name(ot[i].buft));

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = ngl;
    mp.load_mode = load_mode;
    if (lazy_mode >= 0)
        mp.lazy_mode = (enum llama_lazy_mode)lazy_mode;
    mp.use_extra_bufts = !no_repack;
    mp.no_host = no_host;
    mp.vocab_only = false;
    mp.no_alloc = false;
    mp.check_tensors = false;
    mp.tensor_buft_overrides = g_n_ot > 0 ? ot : NULL;
    mp.load_mtp = co.mtp_draft; /* draft-mtp loads the target with its MTP layers (common/common.cpp:1713) */
    /* -dev, -ts, -sm, -mg as common/arg.cpp sets them */
    static ggml_backend_dev_t devices[FAKE_GPU_MAX_DEVICES + 1];
    if (dev_list) {
        char *list = xstrndup(dev_list, strlen(dev_list)), *save = NULL;
        size_t k = 0;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            ggml_backend_dev_t d = ggml_backend_dev_by_name(t);
            if (!d || k >= FAKE_GPU_MAX_DEVICES) {
                fprintf(stderr, "ggufmap-oracle: --dev: no device '%s'\n", t);
                return 2;
            }
            devices[k++] = d;
        }
        free(list);
        devices[k] = NULL;
        mp.devices = devices;
    }
    if (ts_given)
        mp.tensor_split = tensor_split;
    if (split_mode >= 0)
        mp.split_mode = (enum llama_split_mode)split_mode;
    if (main_gpu >= 0)
        mp.main_gpu = main_gpu;

    init_shards(model);

    g_active = true;
    struct llama_model *m = llama_model_load_from_file(model, mp);
    g_active = false;
    if (g_loglen > 0)
        flush_log_line();

    if (!m) {
        printf("RESULT fail\n");
        return 1;
    }
    printf("MODEL size=%" PRIu64 " n_params=%" PRIu64 "\n", llama_model_size(m), llama_model_n_params(m));
    struct llama_model *m_mtp = NULL;
    if (mtp) { /* --mtp: the MTP head's load of the same file, beside the first one */
        printf("LOAD mtp\n");
        mp.load_mtp = true;
        g_active = true;
        m_mtp = llama_model_load_from_file(model, mp);
        g_active = false;
        if (g_loglen > 0)
            flush_log_line();
        if (!m_mtp) {
            llama_model_free(m);
            printf("RESULT fail\n");
            return 1;
        }
        printf("MODEL size=%" PRIu64 " n_params=%" PRIu64 "\n", llama_model_size(m_mtp),
               llama_model_n_params(m_mtp));
    }
    /* --ctx alone asks for the context itself; with --decode it only sizes the decode's */
    if (ctx_given && co.n_decode == 0)
        co.report = true;
    bool decoded = (co.n_decode == 0 && !co.report) || run_context(m, &co);
    if (m_mtp)
        llama_model_free(m_mtp);
    llama_model_free(m);
    llama_backend_free();
    printf("RESULT %s\n", decoded ? "ok" : "fail");
    free(ot);
    for (size_t i = 0; i < g_n_ot; i++) {
        free(g_ot[i].pattern);
        free(g_ot[i].buft_name);
    }
    free(g_ot);
    for (int i = 0; i < g_n_shards; i++)
        free(g_shard_real[i]);
    free(g_bufs);
    return decoded ? 0 : 1;
}

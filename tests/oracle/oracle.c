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
 * observed without a GPU.
 *
 * Output format: see README.md in this directory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
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

static void die_oom(void)
{
    fputs("ggufmap-oracle: out of memory\n", stderr);
    _exit(2);
}

static struct buf_rec *add_buf(ggml_backend_buffer_t buf)
{
    if (g_n_bufs == g_cap_bufs) {
        size_t cap = g_cap_bufs ? g_cap_bufs * 2 : 16;
        struct buf_rec *n = realloc(g_bufs, cap * sizeof *n);
        if (!n)
            die_oom();
        g_bufs = n;
        g_cap_bufs = cap;
    }
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

typedef ggml_backend_buffer_t (*from_host_ptr_fn)(ggml_backend_dev_t, void *, size_t, size_t);
typedef ggml_backend_buffer_t (*alloc_ctx_fn)(struct ggml_context *, ggml_backend_buffer_type_t);
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

static void flush_log_line(void)
{
    g_logline[g_loglen] = '\0';
    if (strstr(g_logline, "model buffer size"))
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
          "  --fake-gpu K       register a fake GPU: metal (MTL0, mapped weights) or cuda\n"
          "                     (CUDA0 + CUDA_Host); default none\n"
          "  --decode N         after loading, create a context and decode N tokens (ids\n"
          "                     1..N mod n_vocab); prints a DECODE line with a hash of the\n"
          "                     last token's logits (embeddings for encoder-only models)\n"
          "  --ctx N            n_ctx of that context (default: max(N, 256))\n"
          "  --threads N        threads for decoding (default 2)\n"
          "  --mtp              after the model, load it again with load_mtp = true (the\n"
          "                     MTP draft head's load); its lines follow a 'LOAD mtp' line\n",
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
    if (g_n_ot == g_cap_ot) {
        size_t cap = g_cap_ot ? g_cap_ot * 2 : 16;
        struct ot_entry *n = realloc(g_ot, cap * sizeof *n);
        if (!n)
            die_oom();
        g_ot = n;
        g_cap_ot = cap;
    }
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

static bool parse_count(const char *opt, const char *s, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || errno || v < 0 || v > 100000) {
        fprintf(stderr, "ggufmap-oracle: %s takes a count >= 0, not '%s'\n", opt, s);
        return false;
    }
    *out = v;
    return true;
}

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

/* Creates a context (llama_context_default_params, swa_full off as llama.cpp's
 * CLI sets it) and decodes tokens 1..n (mod n_vocab) in one batch (an
 * encoder-decoder model encodes them and decodes its start token).  A pooled
 * model (an encoder-only one, or one that declares a pooling type: BERT-style
 * embedding and rerank models) runs with embeddings on, an encoder-only one
 * through llama_encode, and its pooled output (n_embd floats, n_cls_out for
 * rank pooling) is hashed instead of logits.  Prints DECODE ok|fail. */
static bool decode_tokens(struct llama_model *m, int n_tokens, int n_ctx, int n_threads)
{
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n_ctx > 0 ? n_ctx : (n_tokens > 256 ? n_tokens : 256));
    cp.n_batch = cp.n_ubatch = (uint32_t)n_tokens;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.swa_full = false;
    const bool encoder_only = llama_model_has_encoder(m) && !llama_model_has_decoder(m);
    const int pooling = model_pooling(m);
    const bool pooled = encoder_only || pooling != 0;
    cp.embeddings = pooled;
    struct llama_context *ctx = llama_init_from_model(m, cp);
    if (!ctx) {
        printf("DECODE fail stage=context\n");
        return false;
    }
    const int32_t n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(m));
    struct llama_batch b = llama_batch_init(n_tokens, 0, 1);
    for (int i = 0; i < n_tokens; i++) {
        b.token[i] = (llama_token)(n_vocab > 1 ? 1 + i % (n_vocab - 1) : 0);
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = pooled || i == n_tokens - 1;
    }
    b.n_tokens = n_tokens;
    const bool enc_dec = llama_model_has_encoder(m) && !encoder_only;
    int rc = encoder_only ? llama_encode(ctx, b) : enc_dec ? encode_then_decode(ctx, m, b) : llama_decode(ctx, b);
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
    llama_batch_free(b);
    llama_free(ctx);
    return ok;
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
    long n_decode = 0, n_ctx = 0, n_threads = 2;
    bool mtp = false;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_next = i + 1 < argc;
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
        } else if (strcmp(a, "--decode") == 0 && has_next) {
            if (!parse_count(a, argv[++i], &n_decode))
                return 2;
        } else if (strcmp(a, "--ctx") == 0 && has_next) {
            if (!parse_count(a, argv[++i], &n_ctx))
                return 2;
        } else if (strcmp(a, "--threads") == 0 && has_next) {
            if (!parse_count(a, argv[++i], &n_threads) || n_threads < 1)
                return 2;
        } else if (strcmp(a, "--gguf-check") == 0 && has_next) {
            check_file = argv[++i];
        } else if (strcmp(a, "--mtp") == 0) {
            mtp = true;
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
    ggml_backend_load_all_from_path(dir);
    if (!ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU)) {
        fprintf(stderr, "ggufmap-oracle: no CPU backend could be loaded from %s\n", dir);
        printf("RESULT fail\n");
        return 1;
    }

    /* after the CPU backend (llama.cpp needs it), before the model and the buft lookups */
    if (!fake_gpu_register(fake_gpu)) {
        printf("RESULT fail\n");
        return 1;
    }

    if (list_bufts) {
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
    bool decoded = n_decode == 0 || decode_tokens(m, (int)n_decode, (int)n_ctx, (int)n_threads);
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

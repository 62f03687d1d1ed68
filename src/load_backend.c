/*
 * load_backend.c - the built-in backends: host, wired (mlock, through the
 * portability layer: gm_os_lock) and cuda (cudaHostRegister through a
 * dlopen'ed libcudart).
 *
 * Pinning whole pages.  wired and cuda pin page-aligned intervals.  Two
 * buffers may share a page (ranges of two buffers meeting inside it); a page
 * must be pinned once and stay pinned while any buffer uses it, and
 * cudaHostRegister refuses to register memory twice and unregisters only by
 * the exact pointer it registered.  So each backend keeps a "pin set":
 * disjoint pinned pieces, sorted, each with the number of live buffers that
 * overlap it.  A new buffer pins only the holes between the pieces it
 * overlaps (each hole becomes a piece) and counts itself on every piece it
 * overlaps; freeing a buffer uncounts it and unpins the pieces nobody uses.
 * Pieces are never split, so every unpin names exactly what was pinned.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ggufmap/load.h"
#include "internal.h"
#include "load_internal.h"
#include "os.h"

#define BACKEND_MAGIC 0x676d6265u /* "gmbe": a backend made by ggufmap_backend_open */

typedef struct pin_piece {
    uintptr_t first, last; /* page-aligned addresses, [first, last) */
    uint32_t refs;         /* live buffers overlapping this piece */
} pin_piece;

/* The CUDA runtime functions used, resolved with dlsym. */
typedef int (*cuda_count_fn)(int *);
typedef int (*cuda_register_fn)(void *, size_t, unsigned int);
typedef int (*cuda_unregister_fn)(void *);
typedef const char *(*cuda_error_string_fn)(int);
typedef int (*cuda_free_fn)(void *);

enum { CUDA_HOST_REGISTER_MAPPED = 2, CUDA_HOST_REGISTER_READ_ONLY = 8 };

typedef struct backend_state {
    uint32_t magic;
    ggufmap_backend vtable;
    int kind; /* 0 host, 1 wired, 2 cuda */
    pin_piece *pieces;
    size_t n, cap;
    ggufmap_backend_stats stats;
    /* cuda */
    void *lib;
    cuda_register_fn cu_register;
    cuda_unregister_fn cu_unregister;
    cuda_error_string_fn cu_error_string;
    unsigned int cu_flags;
} backend_state;

typedef struct pin_buffer {
    uintptr_t first, last;
} pin_buffer;

/* ------------------------------------------------------------------------ */
/* Pin and unpin one piece                                                   */
/* ------------------------------------------------------------------------ */

static int pin(backend_state *st, uintptr_t first, uintptr_t last, ggufmap_error *err) {
    size_t len = (size_t)(last - first);
    uint64_t t0 = gm_now_ns();
    int rc = GGUFMAP_OK;
    if (st->kind == 1) {
        int e = gm_os_lock((const void *)first, len);
        if (e) {
            uint64_t limit = gm_os_lock_limit();
            char lim[32];
            if (limit == UINT64_MAX) snprintf(lim, sizeof lim, "unlimited");
            else if (limit == 0) snprintf(lim, sizeof lim, "unknown");
            else snprintf(lim, sizeof lim, "%llu bytes", (unsigned long long)limit);
            rc = gm_fail_errno(err, e, "mlock of %zu bytes (RLIMIT_MEMLOCK %s)", len, lim);
        }
    } else if (st->kind == 2) {
        int cerr = st->cu_register((void *)first, len, st->cu_flags);
        if (cerr != 0 && st->cu_flags != CUDA_HOST_REGISTER_READ_ONLY) {
            /* Some set-ups refuse mapped registrations: pin without the device mapping. */
            int again = st->cu_register((void *)first, len, CUDA_HOST_REGISTER_READ_ONLY);
            if (again == 0) st->cu_flags = CUDA_HOST_REGISTER_READ_ONLY;
            cerr = again;
        }
        if (cerr != 0)
            rc = gm_fail(err, GGUFMAP_EIO, "cudaHostRegister of %zu bytes: error %d (%s)", len, cerr,
                         st->cu_error_string ? st->cu_error_string(cerr) : "?");
    }
    st->stats.pin_ns += gm_now_ns() - t0;
    st->stats.pin_calls++;
    return rc;
}

static void unpin(backend_state *st, uintptr_t first, uintptr_t last) {
    uint64_t t0 = gm_now_ns();
    if (st->kind == 1) gm_os_unlock((const void *)first, (size_t)(last - first));
    else if (st->kind == 2) st->cu_unregister((void *)first);
    st->stats.unpin_ns += gm_now_ns() - t0;
}

/* ------------------------------------------------------------------------ */
/* The pin set                                                               */
/* ------------------------------------------------------------------------ */

static int by_piece(const void *a, const void *b) {
    const pin_piece *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static void *pinning_from_ptr(void *ctx, void *ptr, size_t size, size_t max_tensor_size, ggufmap_error *err) {
    (void)max_tensor_size;
    backend_state *st = ctx;
    uint64_t page = gm_page_size();
    uintptr_t a = (uintptr_t)gm_floor_to((uintptr_t)ptr, page);
    uintptr_t b = (uintptr_t)gm_ceil_to((uintptr_t)ptr + size, page);
    pin_buffer *buf = malloc(sizeof *buf);
    /* Holes of [a, b) between existing pieces: at most n + 1 of them. */
    pin_piece *holes = malloc((st->n + 1) * sizeof *holes);
    size_t n_holes = 0, n_pinned = 0;
    if (!buf || !holes) {
        gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto fail;
    }
    uintptr_t at = a;
    for (size_t i = 0; i < st->n && at < b; i++) {
        const pin_piece *p = &st->pieces[i];
        if (p->last <= at) continue;
        if (p->first >= b) break;
        if (p->first > at) holes[n_holes++] = (pin_piece){at, p->first, 1};
        at = p->last;
    }
    if (at < b) holes[n_holes++] = (pin_piece){at, b, 1};
    if (st->n + n_holes > st->cap) {
        size_t cap = (st->n + n_holes) * 2 + 16;
        pin_piece *v = realloc(st->pieces, cap * sizeof *v);
        if (!v) {
            gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
            goto fail;
        }
        st->pieces = v;
        st->cap = cap;
    }
    for (; n_pinned < n_holes; n_pinned++)
        if (pin(st, holes[n_pinned].first, holes[n_pinned].last, err) != GGUFMAP_OK) goto fail;
    for (size_t i = 0; i < st->n; i++)
        if (st->pieces[i].last > a && st->pieces[i].first < b) st->pieces[i].refs++;
    for (size_t i = 0; i < n_holes; i++) {
        st->pieces[st->n++] = holes[i];
        st->stats.pinned_bytes += holes[i].last - holes[i].first;
    }
    qsort(st->pieces, st->n, sizeof *st->pieces, by_piece);
    if (st->stats.pinned_bytes > st->stats.peak_pinned_bytes) st->stats.peak_pinned_bytes = st->stats.pinned_bytes;
    free(holes);
    buf->first = a;
    buf->last = b;
    return buf;
fail:
    for (size_t i = 0; i < n_pinned; i++) unpin(st, holes[i].first, holes[i].last);
    free(holes);
    free(buf);
    return NULL;
}

static void pinning_free(void *ctx, void *handle) {
    backend_state *st = ctx;
    pin_buffer *buf = handle;
    size_t m = 0;
    for (size_t i = 0; i < st->n; i++) {
        pin_piece *p = &st->pieces[i];
        if (p->last > buf->first && p->first < buf->last && --p->refs == 0) {
            unpin(st, p->first, p->last);
            st->stats.pinned_bytes -= p->last - p->first;
            continue;
        }
        st->pieces[m++] = *p;
    }
    st->n = m;
    free(buf);
}

/* ------------------------------------------------------------------------ */
/* Opening and closing                                                       */
/* ------------------------------------------------------------------------ */

/* A function of the library, as an object pointer (copied into its type below). */
static void *sym(void *lib, const char *name) {
    gm_os_function f = gm_os_library_symbol(lib, name);
    void *p = NULL;
    if (f) memcpy(&p, &f, sizeof p);
    return p;
}

static int open_cuda(backend_state *st, ggufmap_error *err) {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
                                        "/usr/local/cuda/lib64/libcudart.so", "/usr/local/cuda/lib/libcudart.so"};
    const char *env = getenv("GGUFMAP_CUDART");
    char why[256];
    if (env && *env) st->lib = gm_os_library_open(env, why, sizeof why);
    for (size_t i = 0; !st->lib && i < sizeof names / sizeof *names; i++)
        st->lib = gm_os_library_open(names[i], why, sizeof why);
    if (!st->lib)
        return gm_fail(err, GGUFMAP_ENOTFOUND, "cuda backend: no libcudart could be loaded (set GGUFMAP_CUDART to its path)");
    cuda_count_fn count;
    cuda_free_fn cfree;
    void *p[6] = {sym(st->lib, "cudaGetDeviceCount"), sym(st->lib, "cudaHostRegister"), sym(st->lib, "cudaHostUnregister"),
                  sym(st->lib, "cudaGetErrorString"), sym(st->lib, "cudaFree"), NULL};
    for (int i = 0; i < 5; i++)
        if (!p[i]) return gm_fail(err, GGUFMAP_ENOTFOUND, "cuda backend: libcudart lacks a function (%d)", i);
    memcpy(&count, &p[0], sizeof count);
    memcpy(&st->cu_register, &p[1], sizeof st->cu_register);
    memcpy(&st->cu_unregister, &p[2], sizeof st->cu_unregister);
    memcpy(&st->cu_error_string, &p[3], sizeof st->cu_error_string);
    memcpy(&cfree, &p[4], sizeof cfree);
    int n = 0, e = count(&n);
    if (e != 0 || n < 1)
        return gm_fail(err, GGUFMAP_ENOTFOUND, "cuda backend: no CUDA device (cudaGetDeviceCount: error %d, %s; %d devices)", e,
                       st->cu_error_string(e), n);
    e = cfree(NULL); /* creates the primary context now, not inside the first timed registration */
    if (e != 0) return gm_fail(err, GGUFMAP_EIO, "cuda backend: cannot initialise: error %d (%s)", e, st->cu_error_string(e));
    st->cu_flags = CUDA_HOST_REGISTER_MAPPED | CUDA_HOST_REGISTER_READ_ONLY;
    return GGUFMAP_OK;
}

void ggufmap_backend_free(ggufmap_backend *b) {
    if (!b) return;
    backend_state *st = b->ctx;
    for (size_t i = 0; i < st->n; i++) unpin(st, st->pieces[i].first, st->pieces[i].last);
    free(st->pieces);
    if (st->lib) gm_os_library_close(st->lib);
    st->magic = 0;
    free(st);
}

int ggufmap_backend_open(const char *name, ggufmap_backend **out, ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    int kind = strcmp(name, "host") == 0 ? 0 : strcmp(name, "wired") == 0 ? 1 : strcmp(name, "cuda") == 0 ? 2 : -1;
    if (kind < 0) return gm_fail(err, GGUFMAP_EINVAL, "unknown backend '%s' (expected host, wired or cuda)", name);
    backend_state *st = calloc(1, sizeof *st);
    if (!st) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    st->magic = BACKEND_MAGIC;
    st->kind = kind;
    if (kind == 0) {
        gm_backend_host_init(&st->vtable);
    } else {
        st->vtable.name = kind == 1 ? "wired" : "cuda";
        st->vtable.buffer_from_host_ptr = pinning_from_ptr;
        st->vtable.free_buffer = pinning_free;
    }
    st->vtable.ctx = st;
    if (kind == 2) {
        int rc = open_cuda(st, err);
        if (rc) {
            if (st->lib) gm_os_library_close(st->lib);
            free(st);
            return rc;
        }
    }
    *out = &st->vtable;
    return GGUFMAP_OK;
}

void ggufmap_backend_get_stats(const ggufmap_backend *b, ggufmap_backend_stats *out) {
    memset(out, 0, sizeof *out);
    if (!b || !b->ctx) return;
    const backend_state *st = b->ctx;
    if (b->buffer_from_host_ptr != pinning_from_ptr || st->magic != BACKEND_MAGIC) return;
    *out = st->stats;
}

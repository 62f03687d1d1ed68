/*
 * ggufmap/load.h - the loader: map a model's files, hand each planned range
 * to a backend as its own buffer, and find every tensor's buffer and address.
 *
 * The steps an engine takes:
 *
 *   ggufmap_model_open()  ->  ggufmap_placement_build()  ->  ggufmap_plan_build()
 *     ->  ggufmap_mapped_open(plan, backends)      maps every shard read-only (one
 *                                          whole-file MAP_SHARED mapping per
 *                                          shard, as llama_mmap does) and calls
 *                                          buffer_from_host_ptr once per
 *                                          planned range of every mapped buffer
 *     ->  ggufmap_mapped_resolve(instance) the buffer holding a tensor and its
 *                                          address (mapping base + offset)
 *     ->  ggufmap_mapped_release()         unmaps every whole page that lies
 *                                          outside all planned ranges
 *     ->  ggufmap_mapped_free()                  frees the buffers, unmaps the files
 *
 * The buffer map.  llama.cpp keeps one buffer per (context, file) and looks
 * tensors up by file index alone.  With one buffer per range a lookup must
 * also name the bytes: ggufmap_bufmap_find(context, shard, offset, size)
 * returns the range that contains [offset, offset + size) completely (PR
 * 25309's llama_buf_map_find does the same), rejects an offset + size that
 * overflows, and never returns a range that holds a tensor only in part.  A
 * context that is not mapped (its tensors are copied into an allocated
 * buffer) has one catch-all range per file, [0, UINT64_MAX).  A tensor of a
 * mapped context that no range contains is an error, never a fallback.
 *
 * Backends.  A backend is a small vtable, the part of a ggml device an
 * engine would call (ggml_backend_dev_buffer_from_host_ptr and the buffer's
 * free).  Three are built in (ggufmap_backend_open):
 *
 *   host    wraps the pointer and does nothing else (ggml's CPU backend);
 *   wired   mlock()s each range, page-aligned: what a Metal residency set
 *           does to the pages of an MTLBuffer (they are wired, counted in
 *           VmLck on Linux);
 *   cuda    cudaHostRegister()s each range, page-aligned, read-only and
 *           mapped: what a CUDA engine that maps host memory pays.  libcudart
 *           is loaded with dlopen() at run time, so ggufmap builds and runs
 *           without the CUDA toolkit; opening "cuda" fails with
 *           GGUFMAP_ENOTFOUND where no libcudart (or no GPU) is found.
 *
 * wired and cuda pin whole pages.  Two ranges that share a page (two buffers
 * whose ranges meet inside one page) pin it once: each backend keeps the
 * pieces it pinned with a count of the live buffers that use them and unpins
 * a piece when its last user is freed.
 *
 * Threads: a ggufmap_mapped and a built-in backend are not thread-safe; one
 * thread at a time.  Lookups on a ggufmap_mapped that is not being changed
 * may run in parallel.
 */
#ifndef GGUFMAP_LOAD_H
#define GGUFMAP_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Backends                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct ggufmap_backend {
    const char *name; /* "host", "wired", "cuda", or the engine's own */
    void *ctx;        /* passed back to both functions */
    /* Makes a buffer of the size bytes at ptr (inside a read-only file
     * mapping; not page-aligned in general) whose largest tensor has
     * max_tensor_size bytes.  Returns a non-NULL handle, or NULL after
     * filling err (the loader adds the file and range to the message). */
    void *(*buffer_from_host_ptr)(void *ctx, void *ptr, size_t size, size_t max_tensor_size, ggufmap_error *err);
    /* Frees a handle returned by buffer_from_host_ptr.  Must not fail. */
    void (*free_buffer)(void *ctx, void *buffer);
} ggufmap_backend;

/* Opens the built-in backend called name: "host", "wired" or "cuda".  On
 * success *out is a backend to pass to ggufmap_mapped_open() and to close with
 * ggufmap_backend_free() after every map using it is gone.  Errors:
 * GGUFMAP_EINVAL for an unknown name; for "cuda", GGUFMAP_ENOTFOUND when
 * libcudart cannot be loaded or reports no device, GGUFMAP_EIO when it fails
 * to initialise.  *out is NULL on failure. */
GGUFMAP_API int ggufmap_backend_open(const char *name, ggufmap_backend **out, ggufmap_error *err);

/* Closes a backend from ggufmap_backend_open.  Buffers still alive are
 * unpinned first.  NULL is allowed. */
GGUFMAP_API void ggufmap_backend_free(ggufmap_backend *backend);

/* What a built-in backend has done so far: bytes it holds pinned now (whole
 * pages, each counted once), the most it held at a time, the nanoseconds
 * spent in its pin calls (mlock, cudaHostRegister) and their number.  Zeros
 * for "host" and for a backend not made by ggufmap_backend_open. */
typedef struct ggufmap_backend_stats {
    uint64_t pinned_bytes;
    uint64_t peak_pinned_bytes;
    uint64_t pin_ns;
    uint64_t unpin_ns;
    uint32_t pin_calls;
} ggufmap_backend_stats;
GGUFMAP_API void ggufmap_backend_get_stats(const ggufmap_backend *backend, ggufmap_backend_stats *out);

/* ------------------------------------------------------------------------ */
/* The buffer map                                                            */
/* ------------------------------------------------------------------------ */

#define GGUFMAP_CATCH_ALL_LAST UINT64_MAX /* [0, UINT64_MAX): a catch-all range */

typedef struct ggufmap_bufmap_entry {
    uint32_t context;     /* placement context */
    uint32_t shard;       /* file */
    uint64_t first, last; /* file offsets, [first, last) */
    void *buffer;         /* the backend's handle (NULL for a catch-all) */
    int64_t index;        /* the caller's number for this entry (e.g. a buffer index) */
} ggufmap_bufmap_entry;

typedef struct ggufmap_bufmap ggufmap_bufmap;

/* Makes an empty buffer map.  Returns GGUFMAP_OK or GGUFMAP_ENOMEM. */
GGUFMAP_API int ggufmap_bufmap_new(ggufmap_bufmap **out, ggufmap_error *err);
GGUFMAP_API void ggufmap_bufmap_free(ggufmap_bufmap *map);

/* Adds a range [first, last) of a context in a file.  Ranges of one
 * (context, shard) must not overlap: an overlapping one, an empty one
 * (first >= last) is GGUFMAP_EINVAL and the map is unchanged.  ENOMEM when
 * out of memory.  O(n) in the entries of the map. */
GGUFMAP_API int ggufmap_bufmap_add(ggufmap_bufmap *map, const ggufmap_bufmap_entry *entry, ggufmap_error *err);

/* The entry of (context, shard) that contains [offset, offset + size)
 * completely, into *out.  Returns GGUFMAP_OK; GGUFMAP_EINVAL when offset +
 * size overflows 64 bits; GGUFMAP_ENOTFOUND when no entry contains the bytes
 * (also when one contains them in part: err says which).  O(log n). */
GGUFMAP_API int ggufmap_bufmap_find(const ggufmap_bufmap *map, uint32_t context, uint32_t shard, uint64_t offset, uint64_t size,
                        ggufmap_bufmap_entry *out, ggufmap_error *err);

GGUFMAP_API size_t ggufmap_bufmap_size(const ggufmap_bufmap *map);
/* Entry i in (context, shard, first) order, or NULL. */
GGUFMAP_API const ggufmap_bufmap_entry *ggufmap_bufmap_at(const ggufmap_bufmap *map, size_t i);

/* ------------------------------------------------------------------------ */
/* Mapping a plan                                                            */
/* ------------------------------------------------------------------------ */

enum {
    /* Leave the pages outside every planned range mapped until the caller
     * calls ggufmap_mapped_release(). */
    GGUFMAP_MAP_KEEP_UNPLANNED = 1u << 0,
    /* Do not read the tensors of allocated contexts into buffers of their
     * own: the caller copies them (to a device, say) from the mapping, with
     * GGUFMAP_MAP_KEEP_UNPLANNED, before ggufmap_mapped_release(). */
    GGUFMAP_MAP_NO_COPY = 1u << 1
};

typedef struct ggufmap_map_opts {
    /* Backend for mapped buffers of CPU buffer types (CPU, lazy CPU).  NULL:
     * the built-in host backend. */
    const ggufmap_backend *cpu;
    /* Backend for mapped buffers of GPU buffer types (MTL0, CUDA0...).
     * NULL: the cpu backend. */
    const ggufmap_backend *gpu;
    /* -1: every shard.  Otherwise only this shard is mapped and given to
     * backends; tensors of other shards do not resolve (ENOTFOUND). */
    int32_t shard;
    unsigned flags; /* GGUFMAP_MAP_* */
    /* Called (when not NULL) from the calling thread before the first range
     * and after each range is given to its backend, with the bytes of the
     * ranges done so far and in all: pinning (wired, cuda) takes seconds
     * per GiB. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
} ggufmap_map_opts;

/* Fills opts with: host backend for everything, every shard, release at once. */
GGUFMAP_API void ggufmap_map_opts_init(ggufmap_map_opts *opts);

/* One planned range handed to a backend. */
typedef struct ggufmap_mapped_range {
    uint32_t plan_buffer;     /* index in ggufmap_plan_buffer() */
    uint32_t context;
    uint32_t shard;
    uint64_t first, last;     /* file offsets, [first, last) */
    const uint8_t *addr;      /* mapping base + first: the pointer the backend got */
    void *handle;             /* the backend's buffer */
    const ggufmap_backend *backend;
    bool gpu;                 /* given to the gpu backend */
    uint64_t ns;              /* time buffer_from_host_ptr took */
} ggufmap_mapped_range;

typedef struct ggufmap_mapped_stats {
    uint64_t file_bytes;        /* bytes of the files mapped */
    uint64_t planned_bytes;     /* the ranges' bytes, exact */
    uint64_t planned_pages;     /* bytes of the pages the ranges touch, each page once */
    uint64_t gpu_pages;         /* same, for ranges given to the gpu backend only */
    uint64_t cpu_pages;         /* same, for the cpu backend's ranges */
    uint64_t gpu_resident;      /* sum of page-aligned ranges given to the gpu backend
                                   (plan's ranges_resident at this page size) */
    uint64_t released_bytes;    /* pages unmapped by ggufmap_mapped_release */
    uint64_t map_ns;            /* mmap of the files */
    uint64_t gpu_ns, cpu_ns;    /* time in buffer_from_host_ptr, per backend */
    uint64_t release_ns;
    uint64_t page;              /* the system page size */
    uint32_t n_ranges, n_gpu_ranges;
    /* Allocated contexts (CPU_REPACK, --no-mmap, GPU types that copy): */
    uint64_t alloc_bytes;       /* their buffers' bytes (each tensor at the buft alignment) */
    uint64_t copied_bytes;      /* tensor bytes read into them */
    uint32_t n_alloc_buffers;   /* one per allocated context with tensors in a mapped file */
    uint32_t n_copied;          /* tensors read in */
    uint64_t copy_ns;           /* time reading them */
} ggufmap_mapped_stats;

typedef struct ggufmap_mapped ggufmap_mapped;

/* Maps the files of plan's model (opts->shard: one or all), gives each
 * planned range of each mapped buffer to its backend (cpu or gpu, by the
 * buffer type of its context) and builds the buffer map: the ranges of
 * mapped contexts, one catch-all per file for allocated contexts.  Then,
 * as llama.cpp's load_all_data, it reads every tensor of an allocated
 * context (CPU_REPACK, --no-mmap, a GPU type that copies) into a buffer of
 * that context's own (host memory, one per context, each tensor at the
 * buffer type's alignment; unless GGUFMAP_MAP_NO_COPY), and only then,
 * unless opts->flags has GGUFMAP_MAP_KEEP_UNPLANNED, releases the pages
 * outside every range (ggufmap_mapped_release).  opts NULL: defaults.
 * On success *out owns the mappings and the buffers and borrows plan and the
 * backends, which must outlive it.  On failure (mmap: EIO; a backend
 * refusing a range: EIO, the message names the file, the range and the
 * backend's reason; opts->shard out of range: EINVAL) everything made so
 * far is freed and *out is NULL.  Unlike llama.cpp's CPU backend the host
 * backend does not need a range to start 32-byte aligned, so a plan that
 * ggufmap_plan_failure() refuses still maps. */
GGUFMAP_API int ggufmap_mapped_open(const ggufmap_plan *plan, const ggufmap_map_opts *opts, ggufmap_mapped **out, ggufmap_error *err);

/* Frees every buffer (through its backend), then unmaps the files.  NULL is
 * allowed. */
GGUFMAP_API void ggufmap_mapped_free(ggufmap_mapped *mapped);

/* Where a tensor lives after mapping. */
typedef struct ggufmap_resolved {
    int64_t range;            /* index in ggufmap_mapped_range(), or -1 (allocated context) */
    void *buffer;             /* the backend's handle; for an allocated context its buffer (NULL if not copied) */
    const uint8_t *addr;      /* the tensor's data: mapping base + offset, or its copy */
    uint64_t offset, size;    /* in the file */
    uint32_t shard, context;
} ggufmap_resolved;

/* Resolves instance i of the placement (ggufmap_placement_instance): the
 * range of its context that contains its bytes or, for an allocated
 * context, its copy in that context's buffer (range -1, buffer = the
 * buffer's base).  Returns GGUFMAP_OK; GGUFMAP_EINVAL for an index out of
 * range; GGUFMAP_ENOTFOUND when its shard is not mapped, when no range
 * contains it (a mapped context: a planner bug or a bad plan; the message
 * names tensor, file and offset), or when it is in an allocated context
 * that was not copied (GGUFMAP_MAP_NO_COPY) and its pages were released. */
GGUFMAP_API int ggufmap_mapped_resolve(const ggufmap_mapped *mapped, int64_t instance, ggufmap_resolved *out, ggufmap_error *err);

/* The same for explicit bytes: (context, shard, offset, size), as an engine
 * that keeps its own tensor table would ask.  Overflowing offset + size is
 * GGUFMAP_EINVAL. */
GGUFMAP_API int ggufmap_mapped_find(const ggufmap_mapped *mapped, uint32_t context, uint32_t shard, uint64_t offset, uint64_t size,
                        ggufmap_resolved *out, ggufmap_error *err);

/* Unmaps every whole page of every mapped file that lies outside all
 * planned ranges: the gaps between ranges too, not only the prefix and the
 * suffix llama.cpp's unmap_fragment releases.  Afterwards tensors of
 * allocated contexts resolve only where their pages were kept.  Idempotent;
 * the bytes released (this call) go to *released if not NULL.  Returns
 * GGUFMAP_OK or GGUFMAP_EIO (munmap failed; the message names file and range). */
GGUFMAP_API int ggufmap_mapped_release(ggufmap_mapped *mapped, uint64_t *released, ggufmap_error *err);

/* Reads one byte of every page of every range, so that the pages are
 * resident (and show in VmRSS).  Returns the bytes of the pages touched. */
GGUFMAP_API uint64_t ggufmap_mapped_touch(const ggufmap_mapped *mapped);

GGUFMAP_API uint32_t ggufmap_mapped_n_ranges(const ggufmap_mapped *mapped);
GGUFMAP_API const ggufmap_mapped_range *ggufmap_mapped_range_at(const ggufmap_mapped *mapped, uint32_t i);
/* The base of shard s's mapping (file offset 0), or NULL when not mapped. */
GGUFMAP_API const uint8_t *ggufmap_mapped_base(const ggufmap_mapped *mapped, uint32_t shard);
GGUFMAP_API const ggufmap_bufmap *ggufmap_mapped_bufmap(const ggufmap_mapped *mapped);
GGUFMAP_API void ggufmap_mapped_get_stats(const ggufmap_mapped *mapped, ggufmap_mapped_stats *out);
GGUFMAP_API const ggufmap_plan *ggufmap_mapped_plan(const ggufmap_mapped *mapped);

/* True for a buffer type on a GPU ("MTL0", "CUDA0", ...): its mapped
 * buffers go to the gpu backend. */
GGUFMAP_API bool ggufmap_buft_is_gpu(const char *buft);

#ifdef __cplusplus
}
#endif
#endif

/*
 * ggufmap/repack.h - rewrite a model with its tensors reordered so that
 * llama.cpp maps nothing foreign, losslessly and safely.
 *
 * llama.cpp maps, per buffer type and file, the span from the lowest to the
 * highest offset of that buffer's tensors.  A file whose tensors are grouped
 * by buffer makes every span hold its own tensors only.  repack writes such a
 * file:
 *
 *   - orders (see docs/repack.md for why each is tight):
 *       canonical  input tensors, then the blocks in layer order, then the
 *                  output layer: tight for every -ngl;
 *       moe        input, every layer's expert tensors in layer order, then
 *                  the other block tensors by layer, then output: tight for
 *                  --cpu-moe and every --n-cpu-moe N at full offload;
 *       cpu-last   for one placement: its GPU-mapped tensors, then tensors
 *                  shared by GPU and CPU buffers, then CPU-mapped ones, lazy
 *                  tables, allocated (copied) ones: tight for that placement;
 *       auto       the candidate with the fewest foreign bytes over the
 *                  placement given or, without one, over the family (every
 *                  -ngl and, for MoE models, every --n-cpu-moe and
 *                  --cpu-moe, on a Metal GPU); ties go to canonical, then moe.
 *                  The family has a case for each -ngl / --n-cpu-moe value
 *                  at which a layer holding tensors changes device (layers
 *                  counted by <arch>.block_count), at most 256 of each: the
 *                  work follows the tensor table, not numbers in the file.
 *     Lazily read tables (per_layer_token_embd) come first in their file: as
 *     their own lazy buffer or as an input tensor, they split nothing.
 *   - shards: the count is kept, and each tensor's shard unless
 *     move_across_shards, which cuts the ordered list into as many shards of
 *     about equal bytes.  Every key-value pair of every shard is copied byte
 *     for byte (split.tensors.count is the total and does not change), as are
 *     the version and the alignment.
 *   - output: for n > 1 shards, OUT (with or without .gguf, or already a
 *     -00001-of-0000n.gguf name) names PREFIX-00001-of-0000n.gguf ...; one
 *     file is written at OUT, with .gguf added when OUT lacks it
 *     (ggufmap_repack_output_path).
 *
 * Safety protocol: no output path may exist (so the input is never written).
 * Free space is checked first (holes of a sparse input count as holes).  Each
 * shard is written to OUT.tmp-XXXXXX beside its final name, sized with
 * ftruncate (holes stay holes: only the 64 KiB chunks that hold data are
 * read and written).  Up to n_threads workers copy whole tensors in 4 MiB
 * pieces, each kept in memory after it is written; a few pieces later the
 * worker waits until the disk has the piece (sync_file_range), reads it
 * back from the output, compares it byte for byte with what was written
 * and drops it from the page cache.  Then every shard's header is
 * re-parsed by our reader and its pairs, tensor names, types and offsets
 * compared with the input and the layout; then each shard is fsynced.  Only
 * then are the shards renamed into place with RENAME_NOREPLACE, the first
 * shard last, and the folder fsynced.  On any error or cancellation every
 * temporary file (and any shard already placed) is removed and the input is
 * untouched.  A SIGKILL can leave OUT.tmp-* files, and shards but the first
 * under their final names; the next repack into the folder removes them
 * (ggufmap_repack_recover).
 *
 * Copying: see ggufmap_copy_mode.
 *
 * Memory: one 8 MiB buffer per worker (at most 4 by default) plus the
 * headers and a few words per tensor; not the tensor sizes.  Page cache: a few pieces per worker of
 * output at a time.
 */
#ifndef GGUFMAP_REPACK_H
#define GGUFMAP_REPACK_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/placement.h"
#include "ggufmap/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ggufmap_order {
    GGUFMAP_ORDER_AUTO = 0,
    GGUFMAP_ORDER_CANONICAL = 1,
    GGUFMAP_ORDER_MOE = 2,
    GGUFMAP_ORDER_CPU_LAST = 3
} ggufmap_order;

/* How tensor bytes move.  The read-back check needs every byte in memory,
 * so the input is always read into a buffer; the question is who writes:
 *   AUTO    copy_file_range where the output's file system can share blocks
 *           or copy on the server (Btrfs, XFS, bcachefs, ZFS, NFS, SMB),
 *           write() elsewhere: on ext4 or tmpfs copy_file_range is a second
 *           page-cache copy of bytes already read (measured slower,
 *           docs/repack.md);
 *   KERNEL  copy_file_range wherever the kernel accepts it, write() where
 *           it refuses (another file system, no support);
 *   WRITE   write() always. */
typedef enum ggufmap_copy_mode {
    GGUFMAP_COPY_AUTO = 0,
    GGUFMAP_COPY_KERNEL = 1,
    GGUFMAP_COPY_WRITE = 2
} ggufmap_copy_mode;

/* "auto", "kernel", "write"; parsing: GGUFMAP_OK or GGUFMAP_EINVAL. */
GGUFMAP_API const char *ggufmap_copy_mode_name(ggufmap_copy_mode mode);
GGUFMAP_API int ggufmap_copy_mode_parse(const char *text, ggufmap_copy_mode *out);

/* "auto", "canonical", "moe", "cpu-last". */
GGUFMAP_API const char *ggufmap_order_name(ggufmap_order order);
/* Parses those names; GGUFMAP_OK or GGUFMAP_EINVAL. */
GGUFMAP_API int ggufmap_order_parse(const char *text, ggufmap_order *out);

/* One placement's mapped bytes before and after (sums over mapped buffers
 * of llama.cpp's span sizes, and of the foreign bytes inside them). */
typedef struct ggufmap_repack_case {
    char label[64];            /* "given", "-ngl 12", "-ngl all", "--n-cpu-moe 3", "--cpu-moe" */
    uint64_t mapped_before, mapped_after;
    uint64_t foreign_before, foreign_after;
    /* The GPU working set (ggufmap_plan_working_set: page-aligned GPU spans,
     * all buffers without a GPU) and the CPU side (ggufmap_plan_cpu_side) as
     * llama.cpp maps them, before and after. */
    uint64_t gpu_before, gpu_after;
    uint64_t cpu_before, cpu_after;
    bool worse;                /* the GPU working set, the CPU side or the foreign bytes grow after */
} ggufmap_repack_case;

/* What repacks killed earlier (SIGKILL, a crash, a power cut) had left in a
 * folder, and what was done with it (see ggufmap_repack_recover). */
typedef struct ggufmap_repack_recovery {
    uint32_t killed;        /* killed repacks found (their journals) */
    uint32_t removed_files; /* their temporaries and shards placed before they died, removed */
    uint64_t removed_bytes; /* ... and their bytes */
    uint32_t kept_outputs;  /* whole outputs they had placed before they died, kept */
} ggufmap_repack_recovery;

typedef struct ggufmap_repack_result {
    ggufmap_order order;          /* the order used (auto resolved) */
    uint32_t n_candidates;
    ggufmap_order candidates[3];  /* the orders auto compared */
    uint64_t candidate_foreign[3];/* their foreign bytes over the cases */
    uint32_t n_cases;
    ggufmap_repack_case *cases;   /* the placements evaluated, for the chosen order */
    uint64_t mapped_before, mapped_after, foreign_before, foreign_after; /* sums over cases */
    uint32_t n_shards;
    char **paths;                 /* output paths (final names), n_shards */
    uint64_t file_bytes;          /* bytes of the output files (apparent size) */
    uint64_t data_bytes;          /* bytes to write: tensor data that is not a hole (where the system
                                     cannot find holes, at most the input files' allocated bytes) */
    uint64_t hole_bytes;          /* tensor bytes left as holes */
    uint64_t space_needed;        /* free bytes the output's file system needs: data + headers + margin */
    uint64_t space_headers;       /* of which the shards' headers */
    uint64_t space_margin;        /* and a margin for the file system's own blocks: 8 KiB per tensor,
                                     16 MiB per file */
    bool no_gain;                 /* the chosen order maps no fewer bytes than the input (mapped_after >=
                                     mapped_before): the model is as tight as repacking makes it */
    uint32_t n_worse;             /* cases whose figures grow after (ggufmap_repack_case.worse): a family
                                     order can make some placements worse while it helps the rest */
    bool written;                 /* false for a dry run, or with only_if_gain and no_gain, or with
                                     only_if_gain and a given placement (opts.placement) made worse */
    bool used_copy_file_range;    /* the kernel copied (else pread/pwrite) */
    double seconds_copy;          /* copying, with each piece read back and checked */
    double seconds_sync;          /* checking the headers, fsync */
    ggufmap_repack_recovery recovered; /* what killed repacks had left in the output's folder,
                                          settled before this one wrote */
} ggufmap_repack_result;

typedef struct ggufmap_repack_opts {
    ggufmap_order order;
    /* The placement to make tight, or NULL for the family (Metal, arm64). */
    const ggufmap_placement_opts *placement;
    ggufmap_plan_opts plan;       /* page size etc. for the figures */
    bool move_across_shards;
    bool dry_run;                 /* evaluate only: nothing is written */
    bool only_if_gain;            /* write nothing (as a dry run) when the result says no_gain, or when
                                     the placement given (not the family) gets worse (n_worse) */
    unsigned n_threads;           /* copy/check workers; 0: up to 4 */
    ggufmap_copy_mode copy;
    /* Polled by every phase (between placements while choosing the order,
     * between 8 MiB pieces while copying); when it becomes non-zero the
     * repack stops, removes its partial output and fails with EIO
     * "interrupted".  A signal handler may set it. */
    volatile sig_atomic_t *cancel;
    /* Called from the calling thread about 5 times a second while copying
     * (each piece is read back and checked as it is written), and once at
     * the end; done and total count tensor bytes, holes included. */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    /* Called once the order is chosen and the figures computed, before any
     * output is written (the result's files are not written yet). */
    void (*report)(void *ctx, const ggufmap_repack_result *res);
    void *report_ctx;
} ggufmap_repack_opts;

/* Where shard `index` of `count` is written for out_path: for one file
 * OUT itself when it ends in .gguf, else OUT.gguf; for count > 1
 * PREFIX-%05d-of-%05d.gguf, PREFIX being OUT without .gguf or without an
 * -NNNNN-of-MMMMM.gguf ending.  Returns the length it needs, as snprintf. */
GGUFMAP_API int ggufmap_repack_output_path(char *buf, size_t cap, const char *out_path, uint32_t index, uint32_t count);

/* Defaults: auto, the family, page 1, no move, 0 threads. */
GGUFMAP_API void ggufmap_repack_opts_init(ggufmap_repack_opts *opts);

/* Settles what repacks killed earlier left in the folder that out_path's
 * files go to.  Each repack keeps a journal beside its output
 * (OUT.ggufmap-journal, locked while it runs) that names its temporary
 * files by device and inode; a journal whose lock can be taken belongs to a
 * dead repack.  Its whole output (every shard in place) is kept; anything
 * less is removed: its temporaries, and the shards it had placed before
 * the first (which is placed last, so no reader saw a partial model).
 * Only files the journal proves its own are touched; live repacks' are
 * not.  ggufmap_repack does this itself before it writes; a caller that
 * checks the output names first (the command line does) calls it before.
 * Fills *found; GGUFMAP_OK, or GGUFMAP_ENOMEM. */
GGUFMAP_API int ggufmap_repack_recover(const char *out_path, ggufmap_repack_recovery *found, ggufmap_error *err);

/* Repacks the model that model_path belongs to into out_path (NULL allowed
 * for a dry run).  On success *res (if res is not NULL) is the caller's
 * (ggufmap_repack_result_free).  On error: nothing exists at any output
 * path that was not there before, no temporary file remains (after
 * SIGKILL: the next repack into the folder removes them, see
 * ggufmap_repack_recover), the input is untouched, and err says what happened (file,
 * offset, tensor); EEXIST when an output path exists, ENOSPC when the file
 * system is (or would be) full, EFORMAT when the read-back check fails, EIO
 * for other system errors or a cancellation. */
GGUFMAP_API int ggufmap_repack(const char *model_path, const char *out_path, const ggufmap_repack_opts *opts,
                   ggufmap_repack_result **res, ggufmap_error *err);
GGUFMAP_API void ggufmap_repack_result_free(ggufmap_repack_result *res);

#ifdef __cplusplus
}
#endif
#endif

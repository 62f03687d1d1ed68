/*
 * repack_internal.h - what repack.c (choosing the order, laying out and
 * checking the output) and repack_copy.c (the copy engine) share; not
 * installed.
 */
#ifndef GGUFMAP_REPACK_INTERNAL_H
#define GGUFMAP_REPACK_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/model.h"
#include "ggufmap/repack.h"
#include "ggufmap/source.h"
#include "ggufmap/writer.h"
#include "internal.h"

/* ---- repack_order.c: choosing the order ---- */

/* An order cut into output shards, with one writer per shard holding its
 * header (pairs copied, tensors laid out) and data sources. */
typedef struct rp_layout {
    uint32_t n_shards;
    int64_t n;
    int64_t *order;        /* model tensor indices, shard 0's first */
    int64_t *start;        /* n_shards + 1 positions into order */
    ggufmap_writer **w;    /* per shard */
} rp_layout;

/* What one placement costs on one layout. */
typedef struct rp_figure {
    uint64_t mapped, foreign; /* llama.cpp's mapped spans, and the foreign bytes in them */
    uint64_t gpu, cpu;        /* its GPU working set and CPU side (ggufmap_plan_working_set, _cpu_side) */
} rp_figure;

/* The figures per case, and the sums of mapped and foreign bytes. */
typedef struct rp_eval {
    uint64_t mapped, foreign;
    rp_figure *cases;
} rp_eval;

/* The chosen order, its layout, and the figures before and after. */
typedef struct rp_choice {
    ggufmap_order order;
    uint32_t n_candidates;
    ggufmap_order candidates[3];
    uint64_t candidate_foreign[3];
    rp_layout layout;
    uint32_t n_cases;
    char (*label)[64];     /* per case */
    rp_eval before, after;
} rp_choice;

/* Classifies the tensors, makes the cases (opts->placement or the family),
 * evaluates every candidate order and keeps the best.  Reads opts->cancel
 * between cases (EIO "interrupted" when set).  On failure ch is empty. */
int rp_choose(const ggufmap_model *m, const ggufmap_repack_opts *opts, rp_choice *ch, ggufmap_error *err);
void rp_choice_free(rp_choice *ch);
void rp_layout_free(rp_layout *l);

/* ---- repack.c ---- */

/* The final paths of n output shards named after out (see ggufmap/repack.h);
 * NULL when out of memory.  The caller frees each and the array. */
char **rp_output_paths(const char *out, uint32_t n);

/* ---- repack_journal.c: what a killed repack leaves, cleaned up ---- */

/* The journal of the repack in progress: OUT.ggufmap-journal, locked. */
typedef struct rp_journal {
    char *path; /* NULL: none */
    int fd;
} rp_journal;

/* The journal's path for output OUT (the split suffix and .gguf off, so
 * that every shard count of one -o shares it); NULL when out of memory. */
char *rp_journal_path(const char *out);
/* Creates the journal (O_EXCL: EEXIST when another repack writes OUT now)
 * and locks it. */
int rp_journal_begin(rp_journal *j, const char *path, ggufmap_error *err);
/* Records temporary t (created, nothing written yet), durably. */
int rp_journal_add(rp_journal *j, const gm_tempfile *t, ggufmap_error *err);
/* Removes the journal: the repack placed all of its output, or removed it
 * all.  Nothing when there is none. */
void rp_journal_end(rp_journal *j);
/* Settles every journal in dir whose repack is dead (see the file's head):
 * a whole output kept, anything less removed, file by file, only what the
 * journal proves its own. */
void rp_journal_recover_dir(const char *dir, ggufmap_repack_recovery *rec);

/* ---- repack_copy.c: the copy engine ---- */

/* One tensor to copy: from an input shard to its place in an output shard. */

typedef struct rp_task {
    int src_fd;
    const char *src_path;
    uint64_t src_off;
    uint32_t shard;       /* output shard */
    uint64_t dst_off;
    uint64_t size;
    char name[GGUFMAP_MAX_NAME + 1];
} rp_task;

/* The copy of every task into the output temporaries, each piece compared
 * with what is read back from the output (repack_copy.c). */
typedef struct rp_copy {
    rp_task *tasks;             /* reordered: the largest first */
    int64_t n_tasks;
    const gm_tempfile *out;     /* per output shard: descriptor and temporary path */
    char *const *final_path;    /* per output shard, for messages */
    unsigned n_threads;         /* 0: gm_workers_count's default */
    bool kernel_copy;           /* start with gm_os_copy_range (os.h) */
    volatile sig_atomic_t *cancel;
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint64_t total;             /* bytes of all tasks, holes included */
    bool used_copy_file_range;  /* out: the kernel copied at least once */
} rp_copy;

/* Copies and checks every task (see "How the bytes move" in repack_copy.c).
 * Returns GGUFMAP_OK; EFORMAT when a piece read back differs from what was
 * written; EIO/ENOSPC
 * for the system's errors; EIO "interrupted" on cancellation. */
int rp_copy_all(rp_copy *c, ggufmap_error *err);

#endif

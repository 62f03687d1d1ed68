/*
 * repack.c - ggufmap_repack: rewrite a model with its tensors reordered so
 * llama.cpp maps nothing foreign (the contract is in ggufmap/repack.h, the
 * reasoning in docs/repack.md).
 *
 * Phases, each a function below, all state in one struct (repack) freed in
 * one place (repack_free):
 *
 *   choose the order    repack_order.c: classify, make the cases, evaluate
 *                       every candidate order on header-only layouts;
 *   fill the result     the figures before and after, the output paths;
 *   make the tasks      one per tensor, and the bytes that are data or holes;
 *   journal             what killed repacks left in the folder settled
 *                       (repack_journal.c), this one's journal begun;
 *   check the space     no output path may exist, enough free space;
 *   create temporaries  OUT.tmp-XXXXXX beside each output: header, size;
 *   copy and verify     repack_copy.c: copy, hash, read back, compare; then
 *                       every header re-read and compared, every file fsynced;
 *   commit              renamed into place, the first shard last.
 *
 * The cancel flag (a signal handler's) is read by every phase and between
 * the pieces of every copy; whatever was made is removed on the way out.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ggufmap/hash.h"
#include "ggufmap/model.h"
#include "ggufmap/repack.h"
#include "ggufmap/writer.h"
#include "os.h"
#include "repack_internal.h"

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

char **rp_output_paths(const char *out, uint32_t n) {
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
/* The state                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct repack {
    const ggufmap_repack_opts *o;
    ggufmap_model *m;
    rp_choice ch;
    ggufmap_repack_result *res;
    rp_task *tasks;          /* one per tensor */
    uint64_t total;          /* tensor bytes, holes included */
    gm_tempfile *out;        /* per output shard */
    uint32_t n_out;          /* temporaries made so far */
    uint32_t n_placed;       /* shards renamed into place (removed again on failure) */
    rp_journal journal;      /* what a kill would leave, for the next repack to clean up */
} repack;

static void repack_free(repack *r, bool failed) {
    for (uint32_t s = 0; s < r->n_out; s++) gm_temp_discard(&r->out[s]);
    for (uint32_t k = 0; failed && k < r->n_placed; k++)
        unlink(r->res->paths[(k + 1) % r->ch.layout.n_shards]);
    rp_journal_end(&r->journal); /* all placed, or all removed */
    free(r->out);
    free(r->tasks);
    rp_choice_free(&r->ch);
    ggufmap_model_free(r->m);
    ggufmap_repack_result_free(r->res);
}

#ifdef GGUFMAP_TEST_HOOKS
/* Test hook: GGUFMAP_REPACK_TEST_KILL_AT=PHASE:N dies of SIGKILL here. */
static void kill_point(const char *phase, uint32_t n) {
    const char *at = getenv("GGUFMAP_REPACK_TEST_KILL_AT");
    char here[32];
    snprintf(here, sizeof here, "%s:%u", phase, n);
    if (at && strcmp(at, here) == 0) raise(SIGKILL);
}
#define KILL_POINT(phase, n) kill_point(phase, n)
#else
#define KILL_POINT(phase, n) ((void)0)
#endif

static int interrupted(const repack *r, const char *when, ggufmap_error *err) {
    if (!r->o->cancel || !*r->o->cancel) return GGUFMAP_OK;
    return gm_fail(err, GGUFMAP_EIO, "interrupted by a signal %s", when);
}

/* ------------------------------------------------------------------------ */
/* Fill the result                                                           */
/* ------------------------------------------------------------------------ */

static int fill_result(repack *r, const char *out_path, ggufmap_error *err) {
    ggufmap_repack_result *res = r->res;
    const rp_choice *ch = &r->ch;
    res->order = ch->order;
    res->n_candidates = ch->n_candidates;
    memcpy(res->candidates, ch->candidates, sizeof res->candidates);
    memcpy(res->candidate_foreign, ch->candidate_foreign, sizeof res->candidate_foreign);
    res->n_cases = ch->n_cases;
    res->cases = calloc(ch->n_cases ? ch->n_cases : 1, sizeof *res->cases);
    res->n_shards = ch->layout.n_shards;
    res->paths = out_path ? rp_output_paths(out_path, res->n_shards) : NULL;
    if (!res->cases || (out_path && !res->paths)) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t k = 0; k < ch->n_cases; k++) {
        ggufmap_repack_case *c = &res->cases[k];
        memcpy(c->label, ch->label[k], sizeof c->label);
        const rp_figure *b = &ch->before.cases[k], *a = &ch->after.cases[k];
        c->mapped_before = b->mapped;
        c->foreign_before = b->foreign;
        c->mapped_after = a->mapped;
        c->foreign_after = a->foreign;
        c->gpu_before = b->gpu;
        c->gpu_after = a->gpu;
        c->cpu_before = b->cpu;
        c->cpu_after = a->cpu;
        c->worse = a->gpu > b->gpu || a->cpu > b->cpu || a->foreign > b->foreign;
        res->n_worse += c->worse;
    }
    res->mapped_before = ch->before.mapped;
    res->foreign_before = ch->before.foreign;
    res->mapped_after = ch->after.mapped;
    res->foreign_after = ch->after.foreign;
    res->no_gain = res->mapped_after >= res->mapped_before;
    for (uint32_t s = 0; s < res->n_shards; s++) res->file_bytes += ggufmap_writer_file_size(ch->layout.w[s]);
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Make the tasks                                                            */
/* ------------------------------------------------------------------------ */

/* Adds the data and hole bytes of [pos, end) of fd to the result. */
static void count_holes(ggufmap_repack_result *res, int fd, uint64_t pos, uint64_t end) {
    while (pos < end) {
        uint64_t d = gm_os_next_data(fd, pos, end);
        res->hole_bytes += d - pos;
        if (d >= end) return;
        uint64_t h = gm_os_next_hole(fd, d, end);
        res->data_bytes += h - d;
        pos = h;
    }
}

static int make_tasks(repack *r, ggufmap_error *err) {
    const rp_layout *l = &r->ch.layout;
    r->tasks = calloc((size_t)l->n + 1, sizeof *r->tasks);
    if (!r->tasks) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t s = 0; s < l->n_shards; s++)
        for (int64_t p = l->start[s]; p < l->start[s + 1]; p++) {
            const ggufmap_tensor *t = ggufmap_model_tensor(r->m, l->order[p]);
            const ggufmap_source *src = ggufmap_model_shard(r->m, t->shard);
            rp_task *tk = &r->tasks[p];
            tk->src_fd = ggufmap_source_fd(src);
            tk->src_path = ggufmap_source_path(src);
            tk->src_off = t->offset;
            tk->shard = s;
            tk->dst_off = ggufmap_writer_tensor_offset(l->w[s], p - l->start[s]);
            tk->size = t->size;
            snprintf(tk->name, sizeof tk->name, "%.*s", (int)t->name_len, t->name);
            r->total += t->size;
            count_holes(r->res, tk->src_fd, t->offset, t->offset + t->size);
        }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Check the space                                                           */
/* ------------------------------------------------------------------------ */

static char *parent_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

/* The bytes the input files have allocated on their disks (st_blocks, XSI). */
static uint64_t allocated_bytes(const ggufmap_model *m) {
    uint64_t sum = 0;
    struct stat st;
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++)
        sum += fstat(ggufmap_source_fd(ggufmap_model_shard(m, s)), &st) == 0 ? (uint64_t)st.st_blocks * 512
                                                                             : ggufmap_source_file_size(ggufmap_model_shard(m, s));
    return sum;
}

/* Free space: the data and headers, and a margin for the file system's own
 * blocks (extent trees, indirect blocks, a journal's share).  Once the
 * tasks have counted the data bytes.  Where the system cannot say where the
 * holes are (os.h: posix), every byte counted as data; but only what the
 * inputs have allocated can hold anything but zeros, and all-zero chunks
 * are not written, so that bounds the data (a 103.7 GiB sparse replica
 * needs kilobytes, not 103.7 GiB). */
static void count_space(repack *r) {
    const rp_layout *l = &r->ch.layout;
    ggufmap_repack_result *res = r->res;
    if (!gm_os_sees_holes()) {
        uint64_t allocated = allocated_bytes(r->m);
        if (allocated < res->data_bytes) {
            res->hole_bytes += res->data_bytes - allocated;
            res->data_bytes = allocated;
        }
    }
    res->space_margin = (uint64_t)l->n * 8192 + (uint64_t)l->n_shards * (16u << 20);
    for (uint32_t s = 0; s < l->n_shards; s++) {
        uint64_t data_at = ggufmap_writer_tensor_offset(l->w[s], 0);
        res->space_headers += data_at == UINT64_MAX ? ggufmap_writer_file_size(l->w[s]) : data_at;
    }
    res->space_needed = res->data_bytes + res->space_headers + res->space_margin;
}

static bool space_check_wanted(void) {
#ifdef GGUFMAP_TEST_HOOKS
    /* Test hook: reach a real ENOSPC mid-write. */
    if (getenv("GGUFMAP_REPACK_TEST_NO_SPACE_CHECK")) return false;
#endif
    return true;
}

static int check_space(const repack *r, ggufmap_error *err) {
    const ggufmap_repack_result *res = r->res;
    struct stat st;
    for (uint32_t s = 0; s < res->n_shards; s++)
        if (lstat(res->paths[s], &st) == 0)
            return gm_fail_errno(err, EEXIST, "%s: exists; refusing to overwrite it", res->paths[s]);
    char *dir = parent_of(res->paths[0]);
    struct statvfs vfs;
    int rc = GGUFMAP_OK;
    if (!dir) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (statvfs(dir, &vfs) != 0) {
        rc = gm_fail_errno(err, errno, "%s: cannot check the free space", dir);
    } else {
        uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize, need = res->space_needed;
        char a[32], b[32], c[32], d[32], e[32];
        if (avail < need && space_check_wanted())
            rc = gm_fail_errno(err, ENOSPC,
                               "%s: needs %s free (%s of data, %s of headers, a margin of %s for the file "
                               "system's own blocks), has %s (nothing written)",
                               dir, gm_fmt_bytes(a, sizeof a, need), gm_fmt_bytes(b, sizeof b, res->data_bytes),
                               gm_fmt_bytes(c, sizeof c, res->space_headers),
                               gm_fmt_bytes(d, sizeof d, res->space_margin), gm_fmt_bytes(e, sizeof e, avail));
    }
    free(dir);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Create the temporaries                                                    */
/* ------------------------------------------------------------------------ */

/* Each output's temporary: its header written, sized to the final length
 * (the tensors' places are holes until copied). */
static int create_outputs(repack *r, ggufmap_error *err) {
    const rp_layout *l = &r->ch.layout;
    r->out = calloc(l->n_shards, sizeof *r->out);
    if (!r->out) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t s = 0; s < l->n_shards; s++) {
        int rc = gm_temp_create(&r->out[s], r->res->paths[s], err);
        if (rc) return rc;
        r->n_out++;
        if ((rc = rp_journal_add(&r->journal, &r->out[s], err))) return rc;
        KILL_POINT("temp", s + 1);
        uint8_t *h = NULL;
        size_t hl = 0;
        if (ggufmap_writer_header(l->w[s], &h, &hl)) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        int e = gm_pwrite_full(r->out[s].fd, h, hl, 0);
        free(h);
        if (e) return gm_fail_errno(err, e, "%s: write of the header", r->out[s].tmp);
        uint64_t size = ggufmap_writer_file_size(l->w[s]);
        if (ftruncate(r->out[s].fd, (off_t)size) != 0)
            return gm_fail_errno(err, errno, "%s: cannot size it to %llu bytes", r->out[s].tmp, (unsigned long long)size);
    }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Copy and verify                                                           */
/* ------------------------------------------------------------------------ */

/* A written shard's header, re-read by the reader, against the input
 * shard's pairs and the layout's tensors and offsets. */
static int check_header(const repack *r, uint32_t s, ggufmap_error *err) {
    const rp_layout *l = &r->ch.layout;
    const ggufmap_source *in = ggufmap_model_shard(r->m, s);
    const char *final = r->res->paths[s];
    ggufmap_source *o = NULL;
    ggufmap_error e;
    if (ggufmap_source_open(r->out[s].tmp, 0, &o, &e))
        return gm_fail(err, GGUFMAP_EFORMAT, "read-back check of %.400s: %.500s", final, e.message);
    int rc = GGUFMAP_OK;
    if (ggufmap_source_n_kv(o) != ggufmap_source_n_kv(in) || ggufmap_source_alignment(o) != ggufmap_source_alignment(in) ||
        ggufmap_source_version(o) != ggufmap_source_version(in) ||
        ggufmap_source_n_tensors(o) != l->start[s + 1] - l->start[s])
        rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: read-back check: header differs from the input's", final);
    for (int64_t k = 0; !rc && k < ggufmap_source_n_kv(in); k++)
        if (!gm_kv_equal(ggufmap_source_kv(in, k), ggufmap_source_kv(o, k)))
            rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: read-back check: key %lld differs", final,
                         (unsigned long long)ggufmap_source_kv(o, k)->offset, (long long)k);
    for (int64_t p = l->start[s]; !rc && p < l->start[s + 1]; p++) {
        const ggufmap_tensor *a = ggufmap_model_tensor(r->m, l->order[p]);
        const ggufmap_tensor *b = ggufmap_source_tensor(o, p - l->start[s]);
        if (a->name_len != b->name_len || memcmp(a->name, b->name, a->name_len) || a->type != b->type ||
            a->size != b->size || b->offset != ggufmap_writer_tensor_offset(l->w[s], p - l->start[s]))
            rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: read-back check: tensor '%.*s' differs", final,
                         (unsigned long long)b->info_offset, (int)a->name_len, a->name);
    }
    ggufmap_source_free(o);
    return rc;
}

static int copy_and_verify(repack *r, ggufmap_error *err) {
    const ggufmap_repack_opts *o = r->o;
    rp_copy c = {.tasks = r->tasks, .n_tasks = r->ch.layout.n, .out = r->out, .final_path = r->res->paths,
                 .n_threads = o->n_threads, .cancel = o->cancel, .progress = o->progress,
                 .progress_ctx = o->progress_ctx, .total = r->total,
                 .kernel_copy = o->copy == GGUFMAP_COPY_KERNEL ||
                                (o->copy == GGUFMAP_COPY_AUTO && gm_os_copy_range_pays(r->out[0].fd))};
    uint64_t t0 = gm_now_ns();
    int rc = rp_copy_all(&c, err);
    if (rc && o->cancel && *o->cancel)
        return gm_fail(err, GGUFMAP_EIO, "interrupted by a signal: partial output removed, input untouched");
    /* An input that changed while copied (truncated, rewritten, replaced)
     * makes a copy of two files: that is the error, whatever the copy
     * said, and it is found before the input's header is read again. */
    ggufmap_error changed;
    if (gm_model_check_unchanged(r->m, &changed) != GGUFMAP_OK) {
        if (err) *err = changed;
        return changed.status;
    }
    if (rc) return rc;
    r->res->used_copy_file_range = c.used_copy_file_range;
    uint64_t t1 = gm_now_ns();
    r->res->seconds_copy = (double)(t1 - t0) / 1e9;
    KILL_POINT("copied", 0);
    for (uint32_t s = 0; s < r->n_out && !rc; s++) rc = check_header(r, s, err);
    for (uint32_t s = 0; s < r->n_out && !rc; s++) rc = gm_temp_sync_close(&r->out[s], err);
    r->res->seconds_sync = (double)(gm_now_ns() - t1) / 1e9;
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Commit                                                                    */
/* ------------------------------------------------------------------------ */

/* Into place: the other shards first, the first shard (what llama.cpp opens)
 * last; on failure repack_free removes the ones placed. */
static int commit(repack *r, ggufmap_error *err) {
    int rc = interrupted(r, "before the output was put in place: nothing written", err);
    uint32_t n = r->n_out;
    for (uint32_t k = 0; !rc && k < n; k++) {
        gm_tempfile *t = &r->out[(k + 1) % n];
        rc = gm_place_file(t->tmp, t->path, err);
        if (rc) break;
        free(t->tmp);
        t->tmp = NULL;
        r->n_placed++;
        KILL_POINT("rename", r->n_placed);
    }
    if (rc) return rc;
    gm_sync_parent(r->res->paths[0]);
    KILL_POINT("placed", 0);
    r->res->written = true;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* ggufmap_repack                                                            */
/* ------------------------------------------------------------------------ */

int ggufmap_repack_recover(const char *out_path, ggufmap_repack_recovery *found, ggufmap_error *err) {
    ggufmap_error_clear(err);
    memset(found, 0, sizeof *found);
    char *dir = parent_of(out_path);
    if (!dir) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    rp_journal_recover_dir(dir, found);
    free(dir);
    return GGUFMAP_OK;
}

/* What killed repacks left in the output's folder, settled first (their
 * partial shards would make the output "exist", their temporaries eat the
 * space); then this repack's own journal. */
static int start_journal(repack *r, const char *out_path, ggufmap_error *err) {
    char *journal = rp_journal_path(out_path);
    int rc = journal ? ggufmap_repack_recover(out_path, &r->res->recovered, err)
                     : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (!rc) rc = rp_journal_begin(&r->journal, journal, err);
    KILL_POINT("journal", 0);
    free(journal);
    return rc;
}

static int write_output(repack *r, const char *out_path, ggufmap_error *err) {
    int rc = interrupted(r, "before writing: nothing written", err);
    if (!rc) rc = start_journal(r, out_path, err);
    if (!rc) rc = check_space(r, err);
    if (!rc) rc = create_outputs(r, err);
    if (!rc) rc = copy_and_verify(r, err);
    if (!rc) rc = commit(r, err);
    return rc;
}

int ggufmap_repack(const char *model_path, const char *out_path, const ggufmap_repack_opts *o,
                   ggufmap_repack_result **res_out, ggufmap_error *err) {
    ggufmap_error_clear(err);
    if (res_out) *res_out = NULL;
    if (!out_path && !o->dry_run) return gm_fail(err, GGUFMAP_EINVAL, "no output path");
    repack r = {.o = o, .res = calloc(1, sizeof *r.res), .journal = {.path = NULL, .fd = -1}};
    int rc = r.res ? ggufmap_model_open(model_path, 0, &r.m, err) : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    if (!rc) rc = rp_choose(r.m, o, &r.ch, err);
    if (!rc) rc = fill_result(&r, out_path, err);
    if (!rc) rc = make_tasks(&r, err);
    if (!rc) count_space(&r);
    if (!rc) rc = interrupted(&r, "while choosing the order: nothing written", err);
    if (!rc && o->report) o->report(o->report_ctx, r.res);
    const bool given_worse = o->placement && r.res && r.res->n_worse; /* the user's own placement would suffer */
    if (!rc && !o->dry_run && !(o->only_if_gain && (r.res->no_gain || given_worse))) rc = write_output(&r, out_path, err);
    if (!rc && res_out) {
        *res_out = r.res;
        r.res = NULL;
    }
    repack_free(&r, rc != GGUFMAP_OK);
    return rc;
}

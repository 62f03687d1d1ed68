/*
 * hash.c - SHA-256 of tensor data (OpenSSL libcrypto, EVP API), the model
 * digest defined in ggufmap/hash.h, and the comparison behind `verify`.
 *
 * Reading.  Tensor data is read with pread through one 2 MiB buffer per
 * worker, never mapped, so memory stays bounded whatever the tensor size.
 * The portability layer finds the holes of sparse files (os.h: SEEK_DATA
 * and SEEK_HOLE where the system has them; else all is data): a hole is fed to
 * SHA-256 as zeros from a static zero page, or skipped by the sparse digest
 * (ggufmap/hash.h), which leaves out every all-zero 64 KiB chunk.
 *
 * A file that changes while it is read (truncated, rewritten, replaced:
 * gm_file_identity, internal.h) is an error, checked after the data is
 * read and before anything derived from it is given: a digest of bytes
 * from two files is no digest of either.
 *
 * Threads.  Tensors are independent: the library's worker pool (workers.c)
 * gives them to up to n_threads workers.  Each writes only its own result
 * slot; the first error stops the others.  Nothing here is shared between
 * calls: sorts carry their keys in the elements (no file-scope state).
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ggufmap/hash.h"
#include "internal.h"
#include "os.h"

#define HASH_CHUNK (2u << 20)
#define ZERO_CHUNK (64u << 10)

static const uint8_t zeros[ZERO_CHUNK];

/* ------------------------------------------------------------------------ */
/* One range                                                                 */
/* ------------------------------------------------------------------------ */

/* Feeds n zero bytes to ctx. */
static int feed_zeros(EVP_MD_CTX *ctx, uint64_t n) {
    while (n > 0) {
        size_t k = n < ZERO_CHUNK ? (size_t)n : ZERO_CHUNK;
        if (EVP_DigestUpdate(ctx, zeros, k) != 1) return -1;
        n -= k;
    }
    return 0;
}

/* The error for a gm_pread_full of k bytes at pos that returned sys. */
static int read_failed(ggufmap_error *err, const char *path, int sys, uint64_t pos, size_t k) {
    if (sys == GM_SHORT_FILE)
        return gm_fail(err, GGUFMAP_EIO, "%s: the file ends before offset %llu", path, (unsigned long long)(pos + k));
    return gm_fail_errno(err, sys, "%s: read at offset %llu", path, (unsigned long long)pos);
}

/* The shared body: hashes [offset, offset+size) of fd into ctx (already
 * initialised) and, when stream is not NULL, into it too.  buf has
 * HASH_CHUNK bytes. */
static int hash_into(int fd, const char *path, uint64_t offset, uint64_t size, EVP_MD_CTX *ctx, EVP_MD_CTX *stream,
                     uint8_t *buf, ggufmap_error *err) {
    uint64_t end = offset + size, pos = offset;
    while (pos < end) {
        uint64_t d = gm_os_next_data(fd, pos, end);
        if (d > pos) {
            if (feed_zeros(ctx, d - pos) || (stream && feed_zeros(stream, d - pos)))
                return gm_fail(err, GGUFMAP_ENOMEM, "%s: SHA-256 failed", path);
            pos = d;
            continue;
        }
        uint64_t h = gm_os_next_hole(fd, pos, end);
        while (pos < h) {
            size_t k = h - pos < HASH_CHUNK ? (size_t)(h - pos) : HASH_CHUNK;
            int sys = gm_pread_full(fd, buf, k, pos);
            if (sys) return read_failed(err, path, sys, pos, k);
            GM_TEST_INPUT_READ(path);
            if (EVP_DigestUpdate(ctx, buf, k) != 1 || (stream && EVP_DigestUpdate(stream, buf, k) != 1))
                return gm_fail(err, GGUFMAP_ENOMEM, "%s: SHA-256 failed", path);
            pos += k;
        }
    }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* The sparse digest                                                         */
/* ------------------------------------------------------------------------ */

/* Feeds v to ctx as n little-endian bytes (n <= 8), as every integer of the
 * sparse and model digests is written.  0, or -1 when SHA-256 fails. */
static int update_le(EVP_MD_CTX *ctx, uint64_t v, int n) {
    uint8_t b[8];
    for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return EVP_DigestUpdate(ctx, b, (size_t)n) == 1 ? 0 : -1;
}

struct ggufmap_sparse {
    EVP_MD_CTX *ctx;
};

int ggufmap_sparse_new(ggufmap_sparse **out) {
    ggufmap_sparse *s = *out = calloc(1, sizeof *s);
    if (!s) return GGUFMAP_ENOMEM;
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1) {
        ggufmap_sparse_free(s);
        *out = NULL;
        return GGUFMAP_ENOMEM;
    }
    return GGUFMAP_OK;
}

void ggufmap_sparse_free(ggufmap_sparse *s) {
    if (!s) return;
    EVP_MD_CTX_free(s->ctx);
    free(s);
}

bool gm_all_zero(const uint8_t *p, size_t n) {
    while (n > 0) {
        size_t k = n < ZERO_CHUNK ? n : ZERO_CHUNK;
        if (memcmp(p, zeros, k) != 0) return false;
        p += k;
        n -= k;
    }
    return true;
}

int ggufmap_sparse_chunk(ggufmap_sparse *s, uint64_t index, const void *bytes, size_t len) {
    if (gm_all_zero(bytes, len)) return GGUFMAP_OK;
    if (update_le(s->ctx, index, 8) || EVP_DigestUpdate(s->ctx, bytes, len) != 1) return GGUFMAP_ENOMEM;
    return GGUFMAP_OK;
}

int ggufmap_sparse_final(ggufmap_sparse *s, uint64_t size, uint8_t out[GGUFMAP_SHA256_LEN]) {
    unsigned int n = 0;
    if (update_le(s->ctx, size, 8) || EVP_DigestFinal_ex(s->ctx, out, &n) != 1) return GGUFMAP_ENOMEM;
    return GGUFMAP_OK;
}

/* The sparse digest of [offset, offset+size): only the chunks that hold
 * data are read (whole chunks, counted from offset). */
static int sparse_range(int fd, const char *path, uint64_t offset, uint64_t size, uint8_t *out, uint8_t *buf,
                        ggufmap_error *err) {
    ggufmap_sparse *sp = NULL;
    ggufmap_sparse_new(&sp);
    if (!sp) return gm_fail(err, GGUFMAP_ENOMEM, "%s: cannot start SHA-256", path);
    const uint64_t ch = GGUFMAP_SPARSE_CHUNK, end = offset + size;
    uint64_t pos = offset, s, e;
    int rc = GGUFMAP_OK;
    while (!rc && pos < end && gm_next_data_run(fd, offset, end, ch, pos, &s, &e)) {
        while (s < e && !rc) {
            size_t k = e - s < HASH_CHUNK ? (size_t)(e - s) : HASH_CHUNK;
            int sys = gm_pread_full(fd, buf, k, s);
            if (sys) rc = read_failed(err, path, sys, s, k);
            GM_TEST_INPUT_READ(path);
            for (size_t q = 0; q < k && !rc; q += ch)
                rc = ggufmap_sparse_chunk(sp, (s + q - offset) / ch, buf + q, k - q < ch ? k - q : (size_t)ch);
            s += k;
        }
        pos = e;
    }
    if (!rc && ggufmap_sparse_final(sp, size, out)) rc = gm_fail(err, GGUFMAP_ENOMEM, "%s: SHA-256 failed", path);
    ggufmap_sparse_free(sp);
    return rc;
}

static int range_with(int fd, const char *path, uint64_t offset, uint64_t size, unsigned flags, uint8_t *out,
                      EVP_MD_CTX *stream, uint8_t *buf, ggufmap_error *err) {
    if (flags & GGUFMAP_HASH_SPARSE) return sparse_range(fd, path, offset, size, out, buf, err);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = GGUFMAP_OK;
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "%s: cannot start SHA-256", path);
        goto done;
    }
    if ((rc = hash_into(fd, path, offset, size, ctx, stream, buf, err))) goto done;
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(ctx, out, &n) != 1 || n != GGUFMAP_SHA256_LEN)
        rc = gm_fail(err, GGUFMAP_ENOMEM, "%s: SHA-256 failed", path);
done:
    EVP_MD_CTX_free(ctx);
    return rc;
}

int ggufmap_sha256_range(int fd, const char *path, uint64_t offset, uint64_t size, unsigned flags,
                         uint8_t out[GGUFMAP_SHA256_LEN], ggufmap_error *err) {
    uint8_t *buf = malloc(HASH_CHUNK);
    if (!buf) return gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory", path);
    int rc = range_with(fd, path, offset, size, flags, out, NULL, buf, err);
    free(buf);
    return rc;
}

void ggufmap_sha256_zeros(uint64_t n, uint8_t out[GGUFMAP_SHA256_LEN]) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    memset(out, 0, GGUFMAP_SHA256_LEN);
    if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 && feed_zeros(ctx, n) == 0)
        EVP_DigestFinal_ex(ctx, out, &len);
    EVP_MD_CTX_free(ctx);
}

const char *ggufmap_sha256_hex(const uint8_t sha[GGUFMAP_SHA256_LEN], char *buf) {
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < GGUFMAP_SHA256_LEN; i++) {
        buf[2 * i] = hex[sha[i] >> 4];
        buf[2 * i + 1] = hex[sha[i] & 15];
    }
    buf[2 * GGUFMAP_SHA256_LEN] = '\0';
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Names and keys                                                            */
/* ------------------------------------------------------------------------ */

static bool ends_with(const char *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

bool ggufmap_hash_skipped_name(const char *name, size_t len) {
    return ends_with(name, len, ".attention.masked_bias") || ends_with(name, len, ".attention.bias") ||
           ends_with(name, len, ".rotary_emb.inv_freq");
}

bool ggufmap_is_split_key(const char *key, size_t len) {
    static const char *const keys[] = {"split.no", "split.count", "split.tensors.count"};
    size_t c_len = strnlen(key, len); /* ggml reads a key up to its first NUL */
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (c_len == strlen(keys[i]) && memcmp(key, keys[i], c_len) == 0) return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* Many tensors in parallel                                                  */
/* ------------------------------------------------------------------------ */

/* One tensor per item of the worker pool (workers.c). */
typedef struct job {
    const ggufmap_model *model;
    unsigned flags;
    ggufmap_tensor_hash *out;
    atomic_ullong done_bytes;
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint64_t total;
} job;

static int hash_one(void *ctx, int64_t i, uint8_t *buf, ggufmap_error *err) {
    job *j = ctx;
    const ggufmap_tensor *t = ggufmap_model_tensor(j->model, i);
    const ggufmap_source *src = ggufmap_model_shard(j->model, t->shard);
    ggufmap_error e;
    int rc = range_with(ggufmap_source_fd(src), ggufmap_source_path(src), t->offset, t->size, j->flags,
                        j->out[i].sha256, NULL, buf, &e);
    if (rc) return gm_fail(err, rc, "%.900s (tensor '%.*s')", e.message, (int)t->name_len, t->name);
    atomic_fetch_add(&j->done_bytes, t->size);
    return GGUFMAP_OK;
}

static void hash_tick(void *ctx) {
    job *j = ctx;
    j->progress(j->progress_ctx, atomic_load(&j->done_bytes), j->total);
}

/* Hashes every tensor of model into out (n_tensors slots). */
static int hash_parallel(const ggufmap_model *model, unsigned flags, unsigned n_threads, ggufmap_tensor_hash *out,
                         void (*progress)(void *, uint64_t, uint64_t), void *pctx, ggufmap_error *err) {
    job j = {.model = model, .flags = flags, .out = out, .progress = progress, .progress_ctx = pctx,
             .total = ggufmap_model_tensor_bytes(model)};
    atomic_init(&j.done_bytes, 0);
    gm_workers_job wj = {.n_items = ggufmap_model_n_tensors(model), .n_threads = n_threads,
                         .scratch_bytes = HASH_CHUNK, .run = hash_one, .ctx = &j,
                         .tick = progress ? hash_tick : NULL, .tick_ctx = &j, .tick_ms = 100};
    return gm_workers_run(&wj, err);
}

/* ------------------------------------------------------------------------ */
/* The model digest                                                          */
/* ------------------------------------------------------------------------ */

/* Sorting without shared state: each element carries the bytes it is sorted by. */
typedef struct by_bytes {
    const char *bytes;
    uint64_t len;
    int64_t index;
} by_bytes;

static int cmp_by_bytes(const void *x, const void *y) {
    const by_bytes *a = x, *b = y;
    int c = memcmp(a->bytes, b->bytes, (size_t)(a->len < b->len ? a->len : b->len));
    return c ? c : (a->len < b->len ? -1 : a->len > b->len ? 1 : 0);
}

static int digest(const ggufmap_model *model, const ggufmap_tensor_hash *th, uint8_t out[GGUFMAP_SHA256_LEN]) {
    const ggufmap_source *s0 = ggufmap_model_shard(model, 0);
    int64_t n_kv = ggufmap_source_n_kv(s0), n_t = ggufmap_model_n_tensors(model);
    by_bytes *idx = malloc((size_t)(n_kv > n_t ? n_kv : n_t) * sizeof *idx + 1);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = GGUFMAP_ENOMEM;
    if (!idx || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) goto done;
    int bad = EVP_DigestUpdate(ctx, "ggufmap-digest/1\n", 17) != 1;
    int64_t k = 0;
    for (int64_t i = 0; i < n_kv; i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(s0, i);
        if (!ggufmap_is_split_key(kv->key, kv->key_len)) idx[k++] = (by_bytes){kv->key, kv->key_len, i};
    }
    qsort(idx, (size_t)k, sizeof *idx, cmp_by_bytes);
    bad |= update_le(ctx, (uint64_t)k, 8);
    for (int64_t i = 0; i < k; i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(s0, idx[i].index);
        bad |= update_le(ctx, kv->key_len, 8) | (EVP_DigestUpdate(ctx, kv->key, kv->key_len) != 1) |
               update_le(ctx, (uint32_t)kv->type, 4);
        if (kv->type == GGUFMAP_VALUE_ARRAY)
            bad |= update_le(ctx, (uint32_t)kv->elem_type, 4) | update_le(ctx, kv->count, 8);
        bad |= update_le(ctx, kv->value_size, 8) | (EVP_DigestUpdate(ctx, kv->value, kv->value_size) != 1);
    }
    for (int64_t i = 0; i < n_t; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(model, i);
        idx[i] = (by_bytes){t->name, t->name_len, i};
    }
    qsort(idx, (size_t)n_t, sizeof *idx, cmp_by_bytes);
    bad |= update_le(ctx, (uint64_t)n_t, 8);
    for (int64_t i = 0; i < n_t; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(model, idx[i].index);
        bad |= update_le(ctx, t->name_len, 8) | (EVP_DigestUpdate(ctx, t->name, t->name_len) != 1) |
               update_le(ctx, (uint32_t)t->type, 4) | update_le(ctx, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) bad |= update_le(ctx, (uint64_t)t->ne[d], 8);
        bad |= EVP_DigestUpdate(ctx, th[idx[i].index].sha256, GGUFMAP_SHA256_LEN) != 1;
    }
    unsigned int len = 0;
    if (!bad && EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == GGUFMAP_SHA256_LEN) rc = GGUFMAP_OK;
done:
    EVP_MD_CTX_free(ctx);
    free(idx);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Inputs that change underneath                                             */
/* ------------------------------------------------------------------------ */

/* After reading m's tensor data (rc: how it went): a file that changed
 * meanwhile is the error, whatever the reading said (a read past a new end
 * says only "the file ends"). */
static int settle_reading(const ggufmap_model *m, int rc, ggufmap_error *err) {
    ggufmap_error changed;
    if (gm_model_check_unchanged(m, &changed) == GGUFMAP_OK) return rc;
    if (err) *err = changed;
    return changed.status;
}

/* ------------------------------------------------------------------------ */
/* hash_model                                                                */
/* ------------------------------------------------------------------------ */

void ggufmap_model_hash_free(ggufmap_model_hash *h) {
    if (!h) return;
    free(h->tensors);
    free(h);
}

/* One pass in model order: each tensor's hash and the whole-data stream. */
static int hash_stream(const ggufmap_model *model, ggufmap_model_hash *h,
                       void (*progress)(void *, uint64_t, uint64_t), void *pctx, ggufmap_error *err) {
    EVP_MD_CTX *stream = EVP_MD_CTX_new();
    uint8_t *buf = malloc(HASH_CHUNK);
    int rc = GGUFMAP_OK;
    uint64_t done = 0, total = ggufmap_model_tensor_bytes(model);
    time_t last = 0;
    if (!stream || !buf || EVP_DigestInit_ex(stream, EVP_sha256(), NULL) != 1) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < h->n_tensors; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(model, i);
        const ggufmap_source *src = ggufmap_model_shard(model, t->shard);
        bool skip = ggufmap_hash_skipped_name(t->name, t->name_len);
        rc = range_with(ggufmap_source_fd(src), ggufmap_source_path(src), t->offset, t->size, 0, h->tensors[i].sha256,
                        skip ? NULL : stream, buf, err);
        if (rc) {
            char msg[sizeof err->message];
            snprintf(msg, sizeof msg, "%.900s (tensor '%.*s')", err->message, (int)t->name_len, t->name);
            memcpy(err->message, msg, sizeof msg);
            goto done;
        }
        done += t->size;
        if (progress && time(NULL) != last) {
            last = time(NULL);
            progress(pctx, done, total);
        }
    }
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(stream, h->stream, &len) != 1) rc = gm_fail(err, GGUFMAP_ENOMEM, "SHA-256 failed");
    if (progress) progress(pctx, done, total);
done:
    EVP_MD_CTX_free(stream);
    free(buf);
    return rc;
}

int ggufmap_model_hash_build(const ggufmap_model *model, unsigned flags, unsigned n_threads,
                       void (*progress)(void *ctx, uint64_t done, uint64_t total), void *progress_ctx,
                       ggufmap_model_hash **out, ggufmap_error *err) {
    ggufmap_error_clear(err);
    *out = NULL;
    ggufmap_model_hash *h = calloc(1, sizeof *h);
    int rc = GGUFMAP_OK;
    if (!h) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    h->n_tensors = ggufmap_model_n_tensors(model);
    h->tensors = calloc((size_t)h->n_tensors + 1, sizeof *h->tensors);
    if (!h->tensors) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto fail;
    }
    if (flags & GGUFMAP_HASH_STREAM)
        rc = hash_stream(model, h, progress, progress_ctx, err);
    else
        rc = hash_parallel(model, flags & GGUFMAP_HASH_SPARSE, n_threads, h->tensors, progress, progress_ctx, err);
    if ((rc = settle_reading(model, rc, err))) goto fail; /* before the header's bytes are read again */
    h->has_digest = !(flags & GGUFMAP_HASH_SPARSE);
    if (h->has_digest && digest(model, h->tensors, h->digest) != GGUFMAP_OK) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto fail;
    }
    *out = h;
    return GGUFMAP_OK;
fail:
    ggufmap_model_hash_free(h);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                                */
/* ------------------------------------------------------------------------ */

static const char *type_name(int32_t type) {
    const ggufmap_type_info *ti = ggufmap_type(type);
    return ti ? ti->name : "?";
}

/* A key for a message: printable, NULs and other control bytes as \xNN. */
static const char *key_text(char *buf, size_t cap, const ggufmap_kv *kv) {
    size_t o = 0;
    for (uint64_t i = 0; i < kv->key_len && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)kv->key[i];
        if (c >= 0x20 && c < 0x7f && c != '\'') buf[o++] = (char)c;
        else o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

/* Whether every pair of a (split keys aside) is in b, byte for byte (the
 * lookup is by the key's bytes, NULs included: two keys that ggml tells
 * apart are two keys here).  1 with the first difference in diff, or 0. */
static int kv_missing_from(const ggufmap_source *a, const ggufmap_source *b, const char *which, char *diff,
                           size_t cap, int64_t *counted) {
    *counted = 0;
    for (int64_t i = 0; i < ggufmap_source_n_kv(a); i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(a, i);
        if (ggufmap_is_split_key(kv->key, kv->key_len)) continue;
        ++*counted;
        const ggufmap_kv *o = ggufmap_source_kv(b, gm_source_find_kv_bytes(b, kv->key, (size_t)kv->key_len));
        char key[512];
        if (!o) {
            snprintf(diff, cap, "key '%s': only in the %s model", key_text(key, sizeof key, kv), which);
            return 1;
        }
        if (!gm_kv_equal(kv, o)) { /* kv is the first model's here: a key in both is compared in the first pass */
            char values[768];
            snprintf(diff, cap, "key '%s': values differ: %s", key_text(key, sizeof key, kv),
                     gm_fmt_kv_difference(values, sizeof values, kv, o));
            return 1;
        }
    }
    return 0;
}

/* Compares metadata; writes the first difference into diff and returns 1, or 0. */
static int compare_kv(const ggufmap_model *a, const ggufmap_model *b, char *diff, size_t cap) {
    const ggufmap_source *sa = ggufmap_model_shard(a, 0), *sb = ggufmap_model_shard(b, 0);
    int64_t na, nb;
    if (kv_missing_from(sa, sb, "first", diff, cap, &na) || kv_missing_from(sb, sa, "second", diff, cap, &nb))
        return 1;
    if (na != nb) {
        snprintf(diff, cap, "metadata: %lld pairs vs %lld", (long long)na, (long long)nb);
        return 1;
    }
    return 0;
}

/* Progress over both models: a's bytes, then b's after them. */
typedef struct both_progress {
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *ctx;
    uint64_t before, total;
} both_progress;

static void report_both(void *ctx, uint64_t done, uint64_t total) {
    both_progress *p = ctx;
    (void)total;
    p->progress(p->ctx, p->before + done, p->total);
}

/* Whether the tensor tables differ (a tensor in one model only, or of
 * another type or shape); the first difference goes into diff. */
static bool compare_tables(const ggufmap_model *a, const ggufmap_model *b, char *diff, size_t diff_cap) {
    int64_t n = ggufmap_model_n_tensors(a);
    for (int64_t i = 0; i < n; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(a, i);
        char name[GGUFMAP_MAX_NAME + 1];
        snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
        int64_t j = ggufmap_model_find_tensor(b, name);
        if (j < 0) {
            snprintf(diff, diff_cap, "tensor '%s': only in the first model", name);
            return true;
        }
        const ggufmap_tensor *o = ggufmap_model_tensor(b, j);
        bool shape = o->n_dims == t->n_dims;
        for (uint32_t d = 0; d < GGUFMAP_MAX_DIMS && shape; d++) shape = o->ne[d] == t->ne[d];
        if (o->type != t->type) {
            snprintf(diff, diff_cap, "tensor '%s': type %s vs %s", name, type_name(t->type), type_name(o->type));
            return true;
        }
        if (!shape) {
            snprintf(diff, diff_cap, "tensor '%s': shapes differ", name);
            return true;
        }
    }
    if (ggufmap_model_n_tensors(b) != n) {
        for (int64_t j = 0; j < ggufmap_model_n_tensors(b); j++) {
            const ggufmap_tensor *o = ggufmap_model_tensor(b, j);
            char name[GGUFMAP_MAX_NAME + 1];
            snprintf(name, sizeof name, "%.*s", (int)o->name_len, o->name);
            if (ggufmap_model_find_tensor(a, name) < 0) {
                snprintf(diff, diff_cap, "tensor '%s': only in the second model", name);
                return true;
            }
        }
    }
    return false;
}

int ggufmap_models_compare(const ggufmap_model *a, const ggufmap_model *b, unsigned n_threads, bool *same,
                           char *diff, size_t diff_cap, ggufmap_error *err) {
    return ggufmap_models_compare_progress(a, b, n_threads, NULL, NULL, same, diff, diff_cap, err);
}

int ggufmap_models_compare_progress(const ggufmap_model *a, const ggufmap_model *b, unsigned n_threads,
                                    void (*progress)(void *ctx, uint64_t done, uint64_t total), void *progress_ctx,
                                    bool *same, char *diff, size_t diff_cap, ggufmap_error *err) {
    ggufmap_error_clear(err);
    *same = false;
    if (diff_cap) diff[0] = '\0';
    if (compare_kv(a, b, diff, diff_cap)) return GGUFMAP_OK;
    if (compare_tables(a, b, diff, diff_cap)) return GGUFMAP_OK;
    int64_t n = ggufmap_model_n_tensors(a);
    ggufmap_tensor_hash *ha = calloc((size_t)n + 1, sizeof *ha), *hb = calloc((size_t)n + 1, sizeof *hb);
    int rc = GGUFMAP_OK;
    if (!ha || !hb) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    uint64_t bytes_a = ggufmap_model_tensor_bytes(a);
    both_progress pa = {progress, progress_ctx, 0, bytes_a + ggufmap_model_tensor_bytes(b)}, pb = pa;
    pb.before = bytes_a;
    rc = hash_parallel(a, GGUFMAP_HASH_SPARSE, n_threads, ha, progress ? report_both : NULL, &pa, err);
    if ((rc = settle_reading(a, rc, err))) goto done;
    rc = hash_parallel(b, GGUFMAP_HASH_SPARSE, n_threads, hb, progress ? report_both : NULL, &pb, err);
    if ((rc = settle_reading(b, rc, err)) || (rc = settle_reading(a, rc, err))) goto done;
    for (int64_t i = 0; i < n; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(a, i);
        char name[GGUFMAP_MAX_NAME + 1];
        snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
        int64_t j = ggufmap_model_find_tensor(b, name);
        ggufmap_tensor_hash x = ha[i], y = hb[j];
        if (memcmp(x.sha256, y.sha256, GGUFMAP_SHA256_LEN) != 0) {
            char hx[65], hy[65];
            snprintf(diff, diff_cap, "tensor '%s': data differs (sparse digest %s vs %s)", name, ggufmap_sha256_hex(x.sha256, hx),
                     ggufmap_sha256_hex(y.sha256, hy));
            goto done;
        }
    }
    *same = true;
done:
    free(ha);
    free(hb);
    return rc;
}

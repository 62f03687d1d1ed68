/*
 * hash.c - SHA-256 of tensor data (OpenSSL libcrypto, EVP API), the model
 * digest defined in ggufmap/hash.h, and the comparison behind `verify`.
 *
 * Reading.  Tensor data is read with pread through one 2 MiB buffer per
 * worker, never mapped, so memory stays bounded whatever the tensor size.
 * SEEK_DATA/SEEK_HOLE find the holes of sparse files: a hole is fed to
 * SHA-256 as zeros from a static zero page, or skipped by the sparse digest
 * (ggufmap/hash.h), which leaves out every all-zero 64 KiB chunk.
 *
 * Threads.  Tensors are independent: up to n_threads workers take the next
 * tensor from an atomic counter.  Each writes only its own result slot; the
 * first error stops the others.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ggufmap/hash.h"
#include "internal.h"

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
        uint64_t d = gm_next_data(fd, pos, end);
        if (d > pos) {
            if (feed_zeros(ctx, d - pos) || (stream && feed_zeros(stream, d - pos)))
                return gm_fail(err, GGUFMAP_ENOMEM, "%s: SHA-256 failed", path);
            pos = d;
            continue;
        }
        uint64_t h = gm_next_hole(fd, pos, end);
        while (pos < h) {
            size_t k = h - pos < HASH_CHUNK ? (size_t)(h - pos) : HASH_CHUNK;
            int sys = gm_pread_full(fd, buf, k, pos);
            if (sys) return read_failed(err, path, sys, pos, k);
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

ggufmap_sparse *ggufmap_sparse_new(void) {
    ggufmap_sparse *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1) {
        ggufmap_sparse_free(s);
        return NULL;
    }
    return s;
}

void ggufmap_sparse_free(ggufmap_sparse *s) {
    if (!s) return;
    EVP_MD_CTX_free(s->ctx);
    free(s);
}

static bool is_zero(const uint8_t *p, size_t n) {
    while (n > 0) {
        size_t k = n < ZERO_CHUNK ? n : ZERO_CHUNK;
        if (memcmp(p, zeros, k) != 0) return false;
        p += k;
        n -= k;
    }
    return true;
}

int ggufmap_sparse_chunk(ggufmap_sparse *s, uint64_t index, const void *bytes, size_t len) {
    if (is_zero(bytes, len)) return GGUFMAP_OK;
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
    ggufmap_sparse *sp = ggufmap_sparse_new();
    if (!sp) return gm_fail(err, GGUFMAP_ENOMEM, "%s: cannot start SHA-256", path);
    const uint64_t ch = GGUFMAP_SPARSE_CHUNK, end = offset + size;
    uint64_t pos = offset, s, e;
    int rc = GGUFMAP_OK;
    while (!rc && pos < end && gm_next_data_run(fd, offset, end, ch, pos, &s, &e)) {
        while (s < e && !rc) {
            size_t k = e - s < HASH_CHUNK ? (size_t)(e - s) : HASH_CHUNK;
            int sys = gm_pread_full(fd, buf, k, s);
            if (sys) rc = read_failed(err, path, sys, s, k);
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
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (len == strlen(keys[i]) && memcmp(key, keys[i], len) == 0) return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* Many tensors in parallel                                                  */
/* ------------------------------------------------------------------------ */

typedef struct job {
    const ggufmap_model *model;
    unsigned flags;
    ggufmap_tensor_hash *out;
    atomic_llong next;
    atomic_ullong done_bytes;
    atomic_int failed;
    atomic_uint finished; /* workers that have returned */
    pthread_mutex_t lock;
    ggufmap_error err; /* the first error */
} job;

static void *worker(void *arg) {
    job *j = arg;
    uint8_t *buf = malloc(HASH_CHUNK);
    int64_t n = ggufmap_model_n_tensors(j->model);
    for (;;) {
        if (atomic_load(&j->failed)) break;
        int64_t i = (int64_t)atomic_fetch_add(&j->next, 1);
        if (i >= n) break;
        const ggufmap_tensor *t = ggufmap_model_tensor(j->model, i);
        const ggufmap_source *src = ggufmap_model_shard(j->model, t->shard);
        ggufmap_error e;
        ggufmap_error_clear(&e);
        int rc = buf ? range_with(ggufmap_source_fd(src), ggufmap_source_path(src), t->offset, t->size, j->flags,
                                  j->out[i].sha256, NULL, buf, &e)
                     : gm_fail(&e, GGUFMAP_ENOMEM, "out of memory");
        if (rc) {
            pthread_mutex_lock(&j->lock);
            if (!atomic_load(&j->failed)) {
                snprintf(j->err.message, sizeof j->err.message, "%.900s (tensor '%.*s')", e.message, (int)t->name_len, t->name);
                j->err.status = e.status;
                j->err.sys_errno = e.sys_errno;
                atomic_store(&j->failed, 1);
            }
            pthread_mutex_unlock(&j->lock);
            break;
        }
        atomic_fetch_add(&j->done_bytes, t->size);
    }
    free(buf);
    atomic_fetch_add(&j->finished, 1);
    return NULL;
}

static unsigned default_threads(unsigned n) {
    if (n) return n;
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c < 1 ? 1 : c > 4 ? 4 : (unsigned)c;
}

static void nap(void) {
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* Hashes every tensor of model into out (n_tensors slots). */
static int hash_parallel(const ggufmap_model *model, unsigned flags, unsigned n_threads, ggufmap_tensor_hash *out,
                         void (*progress)(void *, uint64_t, uint64_t), void *pctx, ggufmap_error *err) {
    job j;
    memset(&j, 0, sizeof j);
    j.model = model;
    j.flags = flags;
    j.out = out;
    atomic_init(&j.next, 0);
    atomic_init(&j.done_bytes, 0);
    atomic_init(&j.failed, 0);
    atomic_init(&j.finished, 0);
    pthread_mutex_init(&j.lock, NULL);
    n_threads = default_threads(n_threads);
    pthread_t tids[64];
    unsigned started = 0;
    if (n_threads > 64) n_threads = 64;
    for (; started < n_threads; started++)
        if (pthread_create(&tids[started], NULL, worker, &j) != 0) break;
    if (started == 0) worker(&j); /* no threads: do it here */
    uint64_t total = ggufmap_model_tensor_bytes(model);
    while (progress && atomic_load(&j.finished) < started) {
        progress(pctx, atomic_load(&j.done_bytes), total);
        nap();
    }
    for (unsigned k = 0; k < started; k++) pthread_join(tids[k], NULL);
    if (progress) progress(pctx, atomic_load(&j.done_bytes), total);
    pthread_mutex_destroy(&j.lock);
    if (atomic_load(&j.failed)) {
        if (err) *err = j.err;
        return j.err.status ? j.err.status : GGUFMAP_EIO;
    }
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* The model digest                                                          */
/* ------------------------------------------------------------------------ */

static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb) {
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na < nb ? -1 : na > nb ? 1 : 0);
}

static const ggufmap_source *sort_src; /* qsort has no context argument */
static const ggufmap_model *sort_model;

static int cmp_kv(const void *x, const void *y) {
    const ggufmap_kv *a = ggufmap_source_kv(sort_src, *(const int64_t *)x);
    const ggufmap_kv *b = ggufmap_source_kv(sort_src, *(const int64_t *)y);
    return cmp_bytes(a->key, a->key_len, b->key, b->key_len);
}

static int cmp_tensor(const void *x, const void *y) {
    const ggufmap_tensor *a = ggufmap_model_tensor(sort_model, *(const int64_t *)x);
    const ggufmap_tensor *b = ggufmap_model_tensor(sort_model, *(const int64_t *)y);
    return cmp_bytes(a->name, a->name_len, b->name, b->name_len);
}

static int digest(const ggufmap_model *model, const ggufmap_tensor_hash *th, uint8_t out[GGUFMAP_SHA256_LEN]) {
    const ggufmap_source *s0 = ggufmap_model_shard(model, 0);
    int64_t n_kv = ggufmap_source_n_kv(s0), n_t = ggufmap_model_n_tensors(model);
    int64_t *idx = malloc((size_t)(n_kv > n_t ? n_kv : n_t) * sizeof *idx + 1);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int rc = GGUFMAP_ENOMEM;
    if (!idx || !ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) goto done;
    int bad = EVP_DigestUpdate(ctx, "ggufmap-digest/1\n", 17) != 1;
    int64_t k = 0;
    for (int64_t i = 0; i < n_kv; i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(s0, i);
        if (!ggufmap_is_split_key(kv->key, kv->key_len)) idx[k++] = i;
    }
    sort_src = s0;
    qsort(idx, (size_t)k, sizeof *idx, cmp_kv);
    bad |= update_le(ctx, (uint64_t)k, 8);
    for (int64_t i = 0; i < k; i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(s0, idx[i]);
        bad |= update_le(ctx, kv->key_len, 8) | (EVP_DigestUpdate(ctx, kv->key, kv->key_len) != 1) |
               update_le(ctx, (uint32_t)kv->type, 4);
        if (kv->type == GGUFMAP_VALUE_ARRAY)
            bad |= update_le(ctx, (uint32_t)kv->elem_type, 4) | update_le(ctx, kv->count, 8);
        bad |= update_le(ctx, kv->value_size, 8) | (EVP_DigestUpdate(ctx, kv->value, kv->value_size) != 1);
    }
    for (int64_t i = 0; i < n_t; i++) idx[i] = i;
    sort_model = model;
    qsort(idx, (size_t)n_t, sizeof *idx, cmp_tensor);
    bad |= update_le(ctx, (uint64_t)n_t, 8);
    for (int64_t i = 0; i < n_t; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(model, idx[i]);
        bad |= update_le(ctx, t->name_len, 8) | (EVP_DigestUpdate(ctx, t->name, t->name_len) != 1) |
               update_le(ctx, (uint32_t)t->type, 4) | update_le(ctx, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) bad |= update_le(ctx, (uint64_t)t->ne[d], 8);
        bad |= EVP_DigestUpdate(ctx, th[idx[i]].sha256, GGUFMAP_SHA256_LEN) != 1;
    }
    unsigned int len = 0;
    if (!bad && EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == GGUFMAP_SHA256_LEN) rc = GGUFMAP_OK;
done:
    EVP_MD_CTX_free(ctx);
    free(idx);
    return rc;
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

int ggufmap_hash_model(const ggufmap_model *model, unsigned flags, unsigned n_threads,
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
    if (rc) goto fail;
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

/* Compares metadata; writes the first difference into diff and returns 1, or 0. */
static int compare_kv(const ggufmap_model *a, const ggufmap_model *b, char *diff, size_t cap) {
    const ggufmap_source *sa = ggufmap_model_shard(a, 0), *sb = ggufmap_model_shard(b, 0);
    int64_t na = 0, nb = 0;
    for (int64_t i = 0; i < ggufmap_source_n_kv(sa); i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(sa, i);
        if (ggufmap_is_split_key(kv->key, kv->key_len)) continue;
        na++;
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)(kv->key_len < 500 ? kv->key_len : 500), kv->key);
        int64_t j = ggufmap_source_find_kv(sb, key);
        const ggufmap_kv *o = j >= 0 ? ggufmap_source_kv(sb, j) : NULL;
        if (!o || o->key_len != kv->key_len || memcmp(o->key, kv->key, kv->key_len) != 0) {
            snprintf(diff, cap, "key '%s': only in the first model", key);
            return 1;
        }
        if (o->type != kv->type || o->elem_type != kv->elem_type || o->count != kv->count ||
            o->value_size != kv->value_size || memcmp(o->value, kv->value, kv->value_size) != 0) {
            char values[768];
            snprintf(diff, cap, "key '%s': values differ: %s", key, gm_fmt_kv_difference(values, sizeof values, kv, o));
            return 1;
        }
    }
    for (int64_t i = 0; i < ggufmap_source_n_kv(sb); i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(sb, i);
        if (ggufmap_is_split_key(kv->key, kv->key_len)) continue;
        nb++;
        char key[512];
        snprintf(key, sizeof key, "%.*s", (int)(kv->key_len < 500 ? kv->key_len : 500), kv->key);
        if (ggufmap_source_find_kv(sa, key) < 0) {
            snprintf(diff, cap, "key '%s': only in the second model", key);
            return 1;
        }
    }
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
    int64_t n = ggufmap_model_n_tensors(a);
    for (int64_t i = 0; i < n; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(a, i);
        char name[GGUFMAP_MAX_NAME + 1];
        snprintf(name, sizeof name, "%.*s", (int)t->name_len, t->name);
        int64_t j = ggufmap_model_find_tensor(b, name);
        if (j < 0) {
            snprintf(diff, diff_cap, "tensor '%s': only in the first model", name);
            return GGUFMAP_OK;
        }
        const ggufmap_tensor *o = ggufmap_model_tensor(b, j);
        bool shape = o->n_dims == t->n_dims;
        for (uint32_t d = 0; d < GGUFMAP_MAX_DIMS && shape; d++) shape = o->ne[d] == t->ne[d];
        if (o->type != t->type) {
            snprintf(diff, diff_cap, "tensor '%s': type %s vs %s", name, type_name(t->type), type_name(o->type));
            return GGUFMAP_OK;
        }
        if (!shape) {
            snprintf(diff, diff_cap, "tensor '%s': shapes differ", name);
            return GGUFMAP_OK;
        }
    }
    if (ggufmap_model_n_tensors(b) != n) {
        for (int64_t j = 0; j < ggufmap_model_n_tensors(b); j++) {
            const ggufmap_tensor *o = ggufmap_model_tensor(b, j);
            char name[GGUFMAP_MAX_NAME + 1];
            snprintf(name, sizeof name, "%.*s", (int)o->name_len, o->name);
            if (ggufmap_model_find_tensor(a, name) < 0) {
                snprintf(diff, diff_cap, "tensor '%s': only in the second model", name);
                return GGUFMAP_OK;
            }
        }
    }
    ggufmap_tensor_hash *ha = calloc((size_t)n + 1, sizeof *ha), *hb = calloc((size_t)n + 1, sizeof *hb);
    int rc = GGUFMAP_OK;
    if (!ha || !hb) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    uint64_t bytes_a = ggufmap_model_tensor_bytes(a);
    both_progress pa = {progress, progress_ctx, 0, bytes_a + ggufmap_model_tensor_bytes(b)}, pb = pa;
    pb.before = bytes_a;
    if ((rc = hash_parallel(a, GGUFMAP_HASH_SPARSE, n_threads, ha, progress ? report_both : NULL, &pa, err))) goto done;
    if ((rc = hash_parallel(b, GGUFMAP_HASH_SPARSE, n_threads, hb, progress ? report_both : NULL, &pb, err))) goto done;
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

/*
 * writer.c - the GGUF writer.
 *
 * Data structure.  Key-value pairs are encoded as they are added, into one
 * growing byte buffer (they are small: even a 262,144-token vocabulary is a
 * few MiB).  Tensor infos are kept as records with a data descriptor each; no
 * tensor data is held.  At write time the header is encoded, then each
 * tensor's bytes are streamed through one fixed 1 MiB buffer.
 *
 * Sparse output.  With GGUFMAP_WRITE_SPARSE, a whole buffer of zeros is not
 * written but skipped with lseek, and the file is sized with ftruncate at the
 * end, so runs of zeros become holes on any file system that has them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ggufmap/writer.h"
#include "internal.h"

#define COPY_CHUNK (1u << 20)

typedef struct wtensor {
    char name[64];
    uint32_t n_dims;
    int64_t ne[4];
    int32_t type;
    uint64_t size;
    uint64_t rel_offset;
    ggufmap_data data;
} wtensor;

typedef struct bytes {
    uint8_t *p;
    size_t len, cap;
} bytes;

struct ggufmap_writer {
    uint32_t version;
    uint32_t alignment;
    bytes kv;            /* encoded pairs */
    int64_t n_kv;
    struct wkey { char *bytes; size_t len; } *keys; /* copies, for the duplicate check */
    gm_hashtab key_index;
    wtensor *tensors;
    int64_t n_tensors, cap_tensors;
    gm_hashtab name_index;
    int failed;          /* an add ran out of memory: write refuses */
};

/* ------------------------------------------------------------------------ */
/* Growing buffers and tables                                                */
/* ------------------------------------------------------------------------ */

static int put(bytes *b, const void *src, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) return GGUFMAP_ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->len, src, n);
    b->len += n;
    return GGUFMAP_OK;
}

static int put_u32(bytes *b, uint32_t v) {
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return put(b, le, 4);
}

static int put_u64(bytes *b, uint64_t v) {
    int rc = put_u32(b, (uint32_t)v);
    return rc ? rc : put_u32(b, (uint32_t)(v >> 32));
}

static int put_str(bytes *b, const char *s, size_t n) {
    int rc = put_u64(b, n);
    return rc ? rc : put(b, s, n);
}

/* Inserts into a table that grows by rebuilding (the writer does not know its
 * final count in advance).  Returns 1 if the key was present, 0 if inserted,
 * or -1 when out of memory. */
static int table_add(gm_hashtab *t, const char *key, size_t len, int64_t value,
                     const char *(*key_of)(const ggufmap_writer *, int64_t, size_t *), const ggufmap_writer *w) {
    if (gm_hashtab_find(t, key, len) >= 0) return 1;
    if (2 * (t->count + 1) > t->capacity) {
        gm_hashtab bigger;
        if (gm_hashtab_init(&bigger, 2 * t->count + 16)) return -1;
        for (int64_t i = 0; i < value; i++) {
            size_t l;
            const char *k = key_of(w, i, &l);
            gm_hashtab_insert(&bigger, k, l, i);
        }
        gm_hashtab_free(t);
        *t = bigger;
    }
    gm_hashtab_insert(t, key, len, value);
    return 0;
}

static const char *key_at(const ggufmap_writer *w, int64_t i, size_t *len) {
    *len = w->keys[i].len;
    return w->keys[i].bytes;
}

/* ------------------------------------------------------------------------ */
/* Building                                                                  */
/* ------------------------------------------------------------------------ */

int ggufmap_writer_new(ggufmap_writer **out) {
    ggufmap_writer *w = *out = calloc(1, sizeof *w);
    if (!w) return GGUFMAP_ENOMEM;
    w->version = 3;
    w->alignment = 32;
    return GGUFMAP_OK;
}

void ggufmap_writer_free(ggufmap_writer *w) {
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) free(w->keys[i].bytes);
    free(w->keys);
    free(w->kv.p);
    free(w->tensors);
    gm_hashtab_free(&w->key_index);
    gm_hashtab_free(&w->name_index);
    free(w);
}

int ggufmap_writer_set_version(ggufmap_writer *w, uint32_t version) {
    if (version != 2 && version != 3) return GGUFMAP_EINVAL;
    w->version = version;
    return GGUFMAP_OK;
}

int ggufmap_writer_set_alignment(ggufmap_writer *w, uint32_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) return GGUFMAP_EINVAL;
    if (w->n_tensors > 0) return GGUFMAP_EINVAL; /* offsets already laid out */
    w->alignment = alignment;
    return GGUFMAP_OK;
}

/* Registers key and writes its string and type; the caller appends the value.
 * A key is any non-empty byte string, NUL bytes included: ggml keeps such a
 * key whole, so copying a file's pairs must too (duplicates are byte for byte). */
static int begin_kv(ggufmap_writer *w, const char *key, size_t key_len, int32_t type) {
    if (key_len == 0) return GGUFMAP_EINVAL;
    struct wkey *keys = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof *keys);
    if (!keys) goto nomem;
    w->keys = keys;
    char *copy = malloc(key_len);
    if (!copy) goto nomem;
    memcpy(copy, key, key_len);
    int r = table_add(&w->key_index, copy, key_len, w->n_kv, key_at, w);
    if (r != 0) {
        free(copy);
        if (r > 0) return GGUFMAP_EINVAL;
        goto nomem;
    }
    w->keys[w->n_kv++] = (struct wkey){copy, key_len};
    if (put_str(&w->kv, key, key_len) || put_u32(&w->kv, (uint32_t)type)) goto nomem;
    return GGUFMAP_OK;
nomem:
    w->failed = 1;
    return GGUFMAP_ENOMEM;
}

static int end_kv(ggufmap_writer *w, int rc) {
    if (rc) w->failed = 1;
    return rc;
}

static int add_scalar(ggufmap_writer *w, const char *key, int32_t type, uint64_t v) {
    int rc = begin_kv(w, key, strlen(key), type);
    if (rc) return rc;
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(v >> (8 * i));
    return end_kv(w, put(&w->kv, le, ggufmap_value_type_size(type)));
}

int ggufmap_writer_add_u8(ggufmap_writer *w, const char *k, uint8_t v) { return add_scalar(w, k, GGUFMAP_VALUE_UINT8, v); }
int ggufmap_writer_add_i8(ggufmap_writer *w, const char *k, int8_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_INT8, (uint8_t)v);
}
int ggufmap_writer_add_u16(ggufmap_writer *w, const char *k, uint16_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_UINT16, v);
}
int ggufmap_writer_add_i16(ggufmap_writer *w, const char *k, int16_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_INT16, (uint16_t)v);
}
int ggufmap_writer_add_u32(ggufmap_writer *w, const char *k, uint32_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_UINT32, v);
}
int ggufmap_writer_add_i32(ggufmap_writer *w, const char *k, int32_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_INT32, (uint32_t)v);
}
int ggufmap_writer_add_u64(ggufmap_writer *w, const char *k, uint64_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_UINT64, v);
}
int ggufmap_writer_add_i64(ggufmap_writer *w, const char *k, int64_t v) {
    return add_scalar(w, k, GGUFMAP_VALUE_INT64, (uint64_t)v);
}
int ggufmap_writer_add_f32(ggufmap_writer *w, const char *k, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return add_scalar(w, k, GGUFMAP_VALUE_FLOAT32, bits);
}
int ggufmap_writer_add_f64(ggufmap_writer *w, const char *k, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return add_scalar(w, k, GGUFMAP_VALUE_FLOAT64, bits);
}
int ggufmap_writer_add_bool(ggufmap_writer *w, const char *k, int v) {
    return add_scalar(w, k, GGUFMAP_VALUE_BOOL, v != 0);
}

int ggufmap_writer_add_string(ggufmap_writer *w, const char *key, const char *v) {
    int rc = begin_kv(w, key, strlen(key), GGUFMAP_VALUE_STRING);
    return rc ? rc : end_kv(w, put_str(&w->kv, v, strlen(v)));
}

int ggufmap_writer_add_array(ggufmap_writer *w, const char *key, int32_t elem_type, uint64_t count,
                             const void *values) {
    uint32_t width = ggufmap_value_type_size(elem_type);
    if (width == 0) return GGUFMAP_EINVAL;
    int rc = begin_kv(w, key, strlen(key), GGUFMAP_VALUE_ARRAY);
    if (rc) return rc;
    rc = put_u32(&w->kv, (uint32_t)elem_type);
    if (!rc) rc = put_u64(&w->kv, count);
    const uint8_t *p = values;
    for (uint64_t i = 0; i < count && !rc; i++, p += width) {
        uint64_t v = 0;
        switch (width) { /* host order in, little-endian out */
        case 1: v = p[0]; break;
        case 2: { uint16_t x; memcpy(&x, p, 2); v = x; } break;
        case 4: { uint32_t x; memcpy(&x, p, 4); v = x; } break;
        default: memcpy(&v, p, 8); break;
        }
        uint8_t le[8];
        for (uint32_t b = 0; b < 8; b++) le[b] = (uint8_t)(v >> (8 * b));
        rc = put(&w->kv, le, width);
    }
    return end_kv(w, rc);
}

int ggufmap_writer_add_string_array(ggufmap_writer *w, const char *key, uint64_t count,
                                    const char *const *values) {
    int rc = begin_kv(w, key, strlen(key), GGUFMAP_VALUE_ARRAY);
    if (rc) return rc;
    rc = put_u32(&w->kv, GGUFMAP_VALUE_STRING);
    if (!rc) rc = put_u64(&w->kv, count);
    for (uint64_t i = 0; i < count && !rc; i++) rc = put_str(&w->kv, values[i], strlen(values[i]));
    return end_kv(w, rc);
}

int ggufmap_writer_add_raw(ggufmap_writer *w, const char *key, size_t key_len, int32_t type, int32_t elem_type,
                           uint64_t count, const void *encoded, uint64_t encoded_size) {
    if (type < 0 || type >= GGUFMAP_VALUE_TYPE_COUNT) return GGUFMAP_EINVAL;
    int rc = begin_kv(w, key, key_len, type);
    if (rc) return rc;
    if (type == GGUFMAP_VALUE_ARRAY) {
        rc = put_u32(&w->kv, (uint32_t)elem_type);
        if (!rc) rc = put_u64(&w->kv, count);
    }
    if (!rc) rc = put(&w->kv, encoded, (size_t)encoded_size);
    return end_kv(w, rc);
}

int ggufmap_writer_add_tensor(ggufmap_writer *w, const char *name, uint32_t n_dims, const int64_t *ne,
                              int32_t type, const ggufmap_data *data) {
    size_t len = strlen(name);
    const ggufmap_type_info *ti = ggufmap_type(type);
    if (len >= 64 || n_dims > 4 || !ti || ti->block_size == 0 || !data) return GGUFMAP_EINVAL;
    wtensor t = {0};
    memcpy(t.name, name, len + 1);
    t.n_dims = n_dims;
    for (uint32_t j = 0; j < 4; j++) {
        t.ne[j] = j < n_dims ? ne[j] : 1;
        if (t.ne[j] < 0) return GGUFMAP_EINVAL;
    }
    if (t.ne[0] % (int64_t)ti->block_size != 0) return GGUFMAP_EINVAL;
    t.type = type;
    t.size = ggufmap_type_nbytes(type, t.ne);
    t.data = *data;
    if (w->n_tensors == w->cap_tensors) {
        int64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        wtensor *p = realloc(w->tensors, (size_t)cap * sizeof *p);
        gm_hashtab index;
        if (!p || gm_hashtab_init(&index, (size_t)cap)) {
            if (p) w->tensors = p;
            w->failed = 1;
            return GGUFMAP_ENOMEM;
        }
        /* The index points at the names inside the records, which just moved. */
        w->tensors = p;
        w->cap_tensors = cap;
        for (int64_t i = 0; i < w->n_tensors; i++)
            gm_hashtab_insert(&index, w->tensors[i].name, strlen(w->tensors[i].name), i);
        gm_hashtab_free(&w->name_index);
        w->name_index = index;
    }
    if (gm_hashtab_find(&w->name_index, name, len) >= 0) return GGUFMAP_EINVAL;
    if (w->n_tensors > 0) {
        const wtensor *prev = &w->tensors[w->n_tensors - 1];
        t.rel_offset = prev->rel_offset + gm_pad(prev->size, w->alignment);
    }
    w->tensors[w->n_tensors] = t;
    gm_hashtab_insert(&w->name_index, w->tensors[w->n_tensors].name, len, w->n_tensors);
    w->n_tensors++;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Layout                                                                    */
/* ------------------------------------------------------------------------ */

static int encode_header(const ggufmap_writer *w, bytes *h) {
    int rc = put(h, "GGUF", 4);
    if (!rc) rc = put_u32(h, w->version);
    if (!rc) rc = put_u64(h, (uint64_t)w->n_tensors);
    if (!rc) rc = put_u64(h, (uint64_t)w->n_kv);
    if (!rc) rc = put(h, w->kv.p, w->kv.len);
    for (int64_t i = 0; i < w->n_tensors && !rc; i++) {
        const wtensor *t = &w->tensors[i];
        rc = put_str(h, t->name, strlen(t->name));
        if (!rc) rc = put_u32(h, t->n_dims);
        for (uint32_t j = 0; j < t->n_dims && !rc; j++) rc = put_u64(h, (uint64_t)t->ne[j]);
        if (!rc) rc = put_u32(h, (uint32_t)t->type);
        if (!rc) rc = put_u64(h, t->rel_offset);
    }
    return rc;
}

static uint64_t header_size(const ggufmap_writer *w) {
    uint64_t n = 4 + 4 + 8 + 8 + w->kv.len;
    for (int64_t i = 0; i < w->n_tensors; i++) n += 8 + strlen(w->tensors[i].name) + 4 + 8 * w->tensors[i].n_dims + 4 + 8;
    return n;
}

static uint64_t data_offset(const ggufmap_writer *w) {
    uint64_t h = header_size(w);
    return w->n_tensors > 0 ? gm_pad(h, w->alignment) : h;
}

int64_t ggufmap_writer_n_tensors(const ggufmap_writer *w) { return w->n_tensors; }

int ggufmap_writer_header(const ggufmap_writer *w, uint8_t **out, size_t *len) {
    bytes h = {0};
    *out = NULL;
    *len = 0;
    if (w->failed || encode_header(w, &h)) {
        free(h.p);
        return GGUFMAP_ENOMEM;
    }
    *out = h.p;
    *len = h.len;
    return GGUFMAP_OK;
}

uint64_t ggufmap_writer_file_size(const ggufmap_writer *w) {
    if (w->n_tensors == 0) return header_size(w);
    const wtensor *last = &w->tensors[w->n_tensors - 1];
    return data_offset(w) + last->rel_offset + gm_pad(last->size, w->alignment);
}

uint64_t ggufmap_writer_tensor_offset(const ggufmap_writer *w, int64_t i) {
    if (i < 0 || i >= w->n_tensors) return UINT64_MAX;
    return data_offset(w) + w->tensors[i].rel_offset;
}

/* ------------------------------------------------------------------------ */
/* Output: a buffered, hole-aware sink                                       */
/* ------------------------------------------------------------------------ */

typedef struct sink {
    int fd;
    const char *path;    /* for messages: the final path */
    uint8_t *buf;        /* COPY_CHUNK bytes */
    uint64_t pos;        /* file offset of the next byte */
    int sparse;
    ggufmap_error *err;
} sink;

static int write_all(sink *s, const uint8_t *p, size_t n) {
    int sys = gm_pwrite_full(s->fd, p, n, s->pos);
    if (sys) return gm_fail_errno(s->err, sys, "%s: write at offset %llu", s->path, (unsigned long long)s->pos);
    s->pos += n;
    return GGUFMAP_OK;
}

static int all_zero(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* Emits n bytes from p: skipped (a hole) when sparse and all zero. */
static int emit(sink *s, const uint8_t *p, size_t n) {
    if (s->sparse && all_zero(p, n)) {
        s->pos += n;
        return GGUFMAP_OK;
    }
    return write_all(s, p, n);
}

static int emit_zeros(sink *s, uint64_t n) {
    if (s->sparse) {
        s->pos += n;
        return GGUFMAP_OK;
    }
    memset(s->buf, 0, COPY_CHUNK);
    while (n > 0) {
        size_t k = n < COPY_CHUNK ? (size_t)n : COPY_CHUNK;
        int rc = write_all(s, s->buf, k);
        if (rc) return rc;
        n -= k;
    }
    return GGUFMAP_OK;
}

static int emit_tensor(sink *s, const wtensor *t) {
    const ggufmap_data *d = &t->data;
    uint64_t done = 0;
    if (d->kind == GGUFMAP_DATA_ZEROS) return emit_zeros(s, t->size);
    while (done < t->size) {
        size_t k = t->size - done < COPY_CHUNK ? (size_t)(t->size - done) : COPY_CHUNK;
        const uint8_t *p = s->buf;
        switch (d->kind) {
        case GGUFMAP_DATA_BUFFER: p = (const uint8_t *)d->buffer + done; break;
        case GGUFMAP_DATA_FILE: {
            uint64_t at = d->file_offset + done;
            int sys = gm_pread_full(d->fd, s->buf, k, at);
            if (sys == GM_SHORT_FILE)
                return gm_fail(s->err, GGUFMAP_EIO, "tensor '%s': its source ends before offset %llu", t->name,
                               (unsigned long long)(at + k));
            if (sys)
                return gm_fail_errno(s->err, sys, "tensor '%s': read of its source at offset %llu", t->name,
                                     (unsigned long long)at);
        } break;
        case GGUFMAP_DATA_CALLBACK:
            if (!d->fill || d->fill(d->ctx, done, s->buf, k) != 0)
                return gm_fail(s->err, GGUFMAP_EIO, "tensor '%s': its data callback failed at offset %llu", t->name,
                               (unsigned long long)done);
            break;
        default: return gm_fail(s->err, GGUFMAP_EINVAL, "tensor '%s': unknown data kind %d", t->name, d->kind);
        }
        int rc = emit(s, p, k);
        if (rc) return rc;
        done += k;
    }
    return GGUFMAP_OK;
}


/* Streams the header, the padding and every tensor (with its padding) into s. */
static int write_body(const ggufmap_writer *w, sink *s, const bytes *header) {
    int rc = write_all(s, header->p, header->len);
    if (!rc) rc = emit_zeros(s, data_offset(w) - s->pos);
    for (int64_t i = 0; i < w->n_tensors && !rc; i++) {
        const wtensor *t = &w->tensors[i];
        rc = emit_tensor(s, t);
        if (!rc) rc = emit_zeros(s, gm_pad(t->size, w->alignment) - t->size);
    }
    if (!rc && ftruncate(s->fd, (off_t)s->pos) != 0)
        rc = gm_fail_errno(s->err, errno, "%s: cannot size the file to %llu bytes", s->path,
                           (unsigned long long)s->pos);
    return rc;
}

int ggufmap_writer_write(ggufmap_writer *w, const char *path, unsigned flags, ggufmap_error *err) {
    ggufmap_error_clear(err);
    if (w->failed) return gm_fail(err, GGUFMAP_ENOMEM, "%s: an earlier add ran out of memory", path);
    bytes header = {0};
    gm_tempfile out;
    int rc = gm_temp_create(&out, path, err);
    if (rc) return rc;
    sink s = {.fd = out.fd, .path = path, .sparse = (flags & GGUFMAP_WRITE_SPARSE) != 0, .err = err};
    s.buf = malloc(COPY_CHUNK);
    if (!s.buf || encode_header(w, &header)) rc = gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory", path);
    if (!rc) rc = write_body(w, &s, &header);
    if (!rc) rc = gm_temp_commit(&out, err);
    gm_temp_discard(&out); /* after a commit there is nothing left to remove */
    free(s.buf);
    free(header.p);
    return rc;
}

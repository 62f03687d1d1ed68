/*
 * source.c - the GGUF reader: one file, mapped read-only, checked as llama.cpp
 * v0.5.0 checks it.
 *
 * Data structure.  A source owns a byte source (byte_source.h): for a local
 * file a read-only MAP_PRIVATE mapping of the whole file, for a remote one its
 * header bytes (remote.c); an array of ggufmap_kv and an array of
 * ggufmap_tensor whose string fields point into those bytes, and two hash
 * tables (key -> index, tensor name -> index).  Nothing is copied out of the
 * file except fixed-size numbers.  The parser is the same for both: the
 * cursor asks the byte source for bytes it does not hold yet.
 *
 * Workload.  Opening is one forward pass over the header: every field is
 * bounds-checked against the bytes left before it is read (the cursor below),
 * so hostile bytes end in an error, never an out-of-bounds read.  Counts are
 * checked against the bytes left before anything is allocated for them, so a
 * count of 2^62 costs nothing.  Data bytes are never touched: a 100 GiB
 * sparse replica opens as fast as a 1 MiB fixture.
 *
 * Fidelity.  The order of checks and their arithmetic (including ggml's
 * wrap-around in element counts and GGML_PAD) follow ggml/src/gguf.cpp
 * (gguf_init_from_reader) and llama-model-loader.h (llama_tensor_weight), so
 * that every file gets the same verdict as in llama.cpp; tests/oracle holds
 * the corpus that checks it against the real library.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "byte_source.h"
#include "remote_internal.h"
#include "ggufmap/source.h"
#include "internal.h"

struct ggufmap_source {
    char *path;
    gm_byte_source *bytes; /* the mapped file, or a remote file's header bytes */
    uint64_t size;         /* of the whole file */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    uint64_t data_size;
    int64_t n_kv;
    ggufmap_kv *kvs;
    int64_t n_tensors;
    ggufmap_tensor *tensors;
    gm_hashtab kv_index;     /* whole key bytes -> index: duplicate keys */
    gm_hashtab kv_by_name;   /* key up to its first NUL -> first such index: lookups */
    gm_hashtab tensor_index;
};

/* ------------------------------------------------------------------------ */
/* The cursor: every read is checked against the bytes left.                */
/* ------------------------------------------------------------------------ */

typedef struct gm_cursor {
    const uint8_t *base;
    uint64_t pos;
    uint64_t size;         /* the file's size, or a remote file's header limit if lower */
    gm_byte_source *bytes; /* supplies what is past bytes->have */
    bool fetch_failed;     /* bytes->err says why a read stopped */
    bool over_limit;       /* a read ran into the header limit, not the end of the file */
    bool moved;            /* the byte source moved its bytes: parse again (open_bytes) */
} gm_cursor;

static uint64_t left(const gm_cursor *c) { return c->size - c->pos; }

/* Where the bytes counted by left() end, for messages. */
static const char *left_in(const gm_cursor *c) {
    return c->size < c->bytes->size ? "below the header limit for remote files" : "in the file";
}

/* The next n bytes (n <= left) will be read: a remote file fetches them now,
 * in one request (an array's elements: not one small request after another). */
static bool need_ahead(gm_cursor *c, uint64_t n) {
    if (c->pos + n <= c->bytes->have) return true;
    if (!c->bytes->ops->fetch(c->bytes, c->pos + n)) {
        c->fetch_failed = true;
        return false;
    }
    c->moved = c->bytes->base != c->base; /* only the browser's byte source moves (byte_source.h) */
    return !c->moved;
}

static bool take(gm_cursor *c, uint64_t n, const uint8_t **p) {
    if (n > left(c)) {
        c->over_limit = c->size < c->bytes->size;
        return false;
    }
    if (!need_ahead(c, n)) return false;
    *p = c->base + c->pos;
    c->pos += n;
    return true;
}

static bool read_u32(gm_cursor *c, uint32_t *v) {
    const uint8_t *p;
    if (!take(c, 4, &p)) return false;
    *v = gm_le32(p);
    return true;
}

static bool read_u64(gm_cursor *c, uint64_t *v) {
    const uint8_t *p;
    if (!take(c, 8, &p)) return false;
    *v = gm_le64(p);
    return true;
}

/* Writes a printable, quoted, shortened form of bytes into out. */
static const char *quote(char *out, size_t cap, const char *s, uint64_t len) {
    size_t o = 0;
    uint64_t shown = len > 80 ? 80 : len;
    for (uint64_t i = 0; i < shown && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\'') {
            out[o++] = (char)ch;
        } else {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
        }
    }
    if (shown < len && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < cap ? o : cap - 1] = '\0';
    return out;
}

/* What a string belongs to, formatted into a message only when it fails:
 * "key 3", "key 'NAME' value" or "tensor 7 name". */
typedef struct string_owner {
    const char *kind;  /* "key", "tensor" */
    int64_t index;
    const char *key;   /* for values: the key they belong to */
    uint64_t key_len;
    const char *part;  /* "", " value", " element", " name" */
} string_owner;

static const char *owner_text(char *out, size_t cap, const string_owner *o) {
    char q[400];
    if (o->key)
        snprintf(out, cap, "%s '%s'%s", o->kind, quote(q, sizeof q, o->key, o->key_len), o->part);
    else
        snprintf(out, cap, "%s %lld%s", o->kind, (long long)o->index, o->part);
    return out;
}

/* Reads a GGUF string as ggml does: length <= 1 GiB and <= the bytes left. */
static int read_string(gm_cursor *c, const char **s, uint64_t *len, const char *path, const string_owner *owner,
                       ggufmap_error *err) {
    uint64_t at = c->pos, n;
    const uint8_t *p;
    char what[512];
    if (!read_u64(c, &n))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: %s: file ends inside the string length", path,
                       (unsigned long long)at, owner_text(what, sizeof what, owner));
    if (n > GGUFMAP_MAX_STRING)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: %s: string length %llu exceeds the maximum %llu",
                       path, (unsigned long long)at, owner_text(what, sizeof what, owner), (unsigned long long)n,
                       (unsigned long long)GGUFMAP_MAX_STRING);
    if (!take(c, n, &p))
        return gm_fail(err, GGUFMAP_EFORMAT,
                       "%s: offset %llu: %s: string length %llu exceeds the %llu bytes left %s", path,
                       (unsigned long long)at, owner_text(what, sizeof what, owner), (unsigned long long)n,
                       (unsigned long long)left(c), left_in(c));
    *s = (const char *)p;
    *len = n;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Key-value pairs                                                           */
/* ------------------------------------------------------------------------ */

static int parse_kv(ggufmap_source *src, gm_cursor *c, int64_t i, ggufmap_error *err) {
    ggufmap_kv *kv = &src->kvs[i];
    char q[400];
    string_owner owner = {"key", i, NULL, 0, ""};
    kv->offset = c->pos;
    int rc = read_string(c, &kv->key, &kv->key_len, src->path, &owner, err);
    if (rc) return rc;
    if (kv->key_len == 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key %lld is empty", src->path,
                       (unsigned long long)kv->offset, (long long)i);
    /* ggml refuses a key equal to an earlier one byte for byte (std::string
     * ==), but finds keys with strcmp: "general.alignment\0xyz" is a key of
     * its own, and a lookup of "general.alignment" finds the first key whose
     * C string is that (gguf.cpp:572, 1041). */
    int64_t dup = gm_hashtab_insert(&src->kv_index, kv->key, (size_t)kv->key_len, i);
    if (dup >= 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s': duplicate of key %lld", src->path,
                       (unsigned long long)kv->offset, quote(q, sizeof q, kv->key, kv->key_len), (long long)dup);
    gm_hashtab_insert(&src->kv_by_name, kv->key, strnlen(kv->key, (size_t)kv->key_len), i);

    uint64_t type_at = c->pos;
    uint32_t t;
    if (!read_u32(c, &t))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s': file ends inside the value type", src->path,
                       (unsigned long long)type_at, quote(q, sizeof q, kv->key, kv->key_len));
    kv->type = (int32_t)t;
    kv->elem_type = kv->type;
    kv->count = 1;
    bool is_array = kv->type == GGUFMAP_VALUE_ARRAY;
    if (is_array) {
        uint32_t et;
        if (!read_u32(c, &et) || !read_u64(c, &kv->count))
            return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s': file ends inside the array header",
                           src->path, (unsigned long long)type_at, quote(q, sizeof q, kv->key, kv->key_len));
        kv->elem_type = (int32_t)et;
    }
    int32_t et = kv->elem_type;
    if (et < 0 || et >= GGUFMAP_VALUE_TYPE_COUNT || et == GGUFMAP_VALUE_ARRAY)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s' has invalid GGUF type %d%s", src->path,
                       (unsigned long long)type_at, quote(q, sizeof q, kv->key, kv->key_len), et,
                       et == GGUFMAP_VALUE_ARRAY ? " (nested arrays are not supported)" : "");

    uint64_t value_at = c->pos;
    if (is_array) {
        uint64_t per = et == GGUFMAP_VALUE_STRING ? 8 : ggufmap_value_type_size(et);
        if (kv->count > GGUFMAP_MAX_ARRAY)
            return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s': array of %llu elements exceeds the maximum %llu",
                           src->path, (unsigned long long)value_at, quote(q, sizeof q, kv->key, kv->key_len),
                           (unsigned long long)kv->count, (unsigned long long)GGUFMAP_MAX_ARRAY);
        if (kv->count * per > left(c))
            return gm_fail(err, GGUFMAP_EFORMAT,
                           "%s: offset %llu: key '%s': array of %llu %s elements needs more than the %llu bytes left %s",
                           src->path, (unsigned long long)value_at, quote(q, sizeof q, kv->key, kv->key_len),
                           (unsigned long long)kv->count, ggufmap_value_type_name(et), (unsigned long long)left(c),
                           left_in(c));
        if (!need_ahead(c, kv->count * per))
            return gm_fail(err, GGUFMAP_EIO, "%s: offset %llu: key '%s': the elements cannot be read", src->path,
                           (unsigned long long)value_at, quote(q, sizeof q, kv->key, kv->key_len));
    }
    kv->value = c->base + c->pos;
    if (et == GGUFMAP_VALUE_STRING) {
        for (uint64_t k = 0; k < kv->count; k++) {
            const char *s;
            uint64_t len;
            string_owner value_owner = {"key", i, kv->key, kv->key_len, is_array ? " element" : " value"};
            rc = read_string(c, &s, &len, src->path, &value_owner, err);
            if (rc) return rc;
        }
    } else {
        const uint8_t *p;
        uint64_t bytes = kv->count * ggufmap_value_type_size(et);
        if (!take(c, bytes, &p))
            return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s': file ends inside the value", src->path,
                           (unsigned long long)value_at, quote(q, sizeof q, kv->key, kv->key_len));
    }
    kv->value_size = c->pos - value_at;
    return GGUFMAP_OK;
}

/* general.alignment: a u32 power of two when present, else 32. */
static int check_alignment(ggufmap_source *src, ggufmap_error *err) {
    src->alignment = GGUFMAP_DEFAULT_ALIGNMENT;
    const ggufmap_kv *kv = ggufmap_source_find_kv(src, "general.alignment");
    if (!kv) return GGUFMAP_OK;
    if (kv->type != GGUFMAP_VALUE_UINT32)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key 'general.alignment' must be of type u32 but is %s",
                       src->path, (unsigned long long)kv->offset, ggufmap_value_type_name(kv->type));
    uint32_t a = gm_le32(kv->value);
    if (a == 0 || (a & (a - 1)) != 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key 'general.alignment': %u is not a power of 2",
                       src->path, (unsigned long long)kv->offset, a);
    src->alignment = a;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Tensor infos                                                              */
/* ------------------------------------------------------------------------ */

static int parse_tensor_info(ggufmap_source *src, gm_cursor *c, int64_t i, unsigned flags, ggufmap_error *err) {
    ggufmap_tensor *t = &src->tensors[i];
    char q[400];
    const char *raw;
    uint64_t raw_len;
    t->index = i;
    t->info_offset = c->pos;
    string_owner owner = {"tensor", i, NULL, 0, " name"};
    int rc = read_string(c, &raw, &raw_len, src->path, &owner, err);
    if (rc) return rc;
    if (raw_len >= GGUFMAP_MAX_NAME)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor %lld '%s': name is %llu bytes, at most %d allowed",
                       src->path, (unsigned long long)t->info_offset, (long long)i, quote(q, sizeof q, raw, raw_len),
                       (unsigned long long)raw_len, GGUFMAP_MAX_NAME - 1);
    /* ggml keeps the name as a C string: anything after a NUL is dropped. */
    t->name = raw;
    t->name_len = (uint32_t)strnlen(raw, (size_t)raw_len);
    const char *nm = quote(q, sizeof q, t->name, t->name_len);
    int64_t dup = gm_hashtab_insert(&src->tensor_index, t->name, t->name_len, i);
    if (dup >= 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': duplicate name of tensor %lld", src->path,
                       (unsigned long long)t->info_offset, nm, (long long)dup);

    uint64_t at = c->pos;
    if (!read_u32(c, &t->n_dims))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': file ends inside n_dims", src->path,
                       (unsigned long long)at, nm);
    if (t->n_dims > GGUFMAP_MAX_DIMS)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': %u dimensions, at most %d allowed",
                       src->path, (unsigned long long)at, nm, t->n_dims, GGUFMAP_MAX_DIMS);
    for (uint32_t j = 0; j < GGUFMAP_MAX_DIMS; j++) {
        t->ne[j] = 1;
        if (j < t->n_dims) {
            uint64_t v;
            at = c->pos;
            if (!read_u64(c, &v))
                return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': file ends inside dimension %u",
                               src->path, (unsigned long long)at, nm, j);
            t->ne[j] = (int64_t)v;
            if (t->ne[j] < 0)
                return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': dimension %u is %lld (negative)",
                               src->path, (unsigned long long)at, nm, j, (long long)t->ne[j]);
        }
    }
    /* ggml_nelements and the overflow test, with ggml's int64 wrap-around. */
    const uint64_t n0 = (uint64_t)t->ne[0], n1 = (uint64_t)t->ne[1], n2 = (uint64_t)t->ne[2], n3 = (uint64_t)t->ne[3];
    const int64_t nelements = (int64_t)(n0 * n1 * n2 * n3);
    if (nelements > 0 &&
        ((INT64_MAX / t->ne[1] <= t->ne[0]) || (INT64_MAX / t->ne[2] <= (int64_t)(n0 * n1)) ||
         (INT64_MAX / t->ne[3] <= (int64_t)(n0 * n1 * n2))))
        return gm_fail(err, GGUFMAP_EFORMAT,
                       "%s: offset %llu: tensor '%s': shape (%lld, %lld, %lld, %lld) has too many elements", src->path,
                       (unsigned long long)t->info_offset, nm, (long long)t->ne[0], (long long)t->ne[1],
                       (long long)t->ne[2], (long long)t->ne[3]);

    at = c->pos;
    uint32_t type;
    if (!read_u32(c, &type))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': file ends inside the type", src->path,
                       (unsigned long long)at, nm);
    t->type = (int32_t)type;
    const ggufmap_type_info *ti = ggufmap_type(t->type);
    bool known = ti && ti->block_size != 0;
    if (!known && !(flags & GGUFMAP_OPEN_LENIENT)) {
        if (!ti)
            return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': unknown ggml type %d (valid: 0 to %d)",
                           src->path, (unsigned long long)at, nm, t->type, GGUFMAP_TYPE_COUNT - 1);
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': ggml type %d was removed from ggml",
                       src->path, (unsigned long long)at, nm, t->type);
    }
    if (known) {
        if (t->ne[0] % (int64_t)ti->block_size != 0)
            return gm_fail(err, GGUFMAP_EFORMAT,
                           "%s: offset %llu: tensor '%s': %lld elements per row, not a multiple of the %s block size %u",
                           src->path, (unsigned long long)at, nm, (long long)t->ne[0], ti->name, ti->block_size);
        /* ggml's size_t: 64 bits wherever llama.cpp runs, also when ggufmap is built for 32 (wasm) */
        if ((uint64_t)(nelements / (int64_t)ti->block_size) > UINT64_MAX / ti->type_size)
            return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': size in bytes overflows", src->path,
                           (unsigned long long)at, nm);
        /* ggml_nbytes, wrapping as size_t does (a wrapped size fails the bounds check below). */
        uint64_t nb1 = ti->type_size * (n0 / ti->block_size), nb2 = nb1 * n1, nb3 = nb2 * n2;
        if (t->ne[0] <= 0 || t->ne[1] <= 0 || t->ne[2] <= 0 || t->ne[3] <= 0)
            t->size = 0;
        else
            t->size = n0 * ti->type_size / ti->block_size + (n1 - 1) * nb1 + (n2 - 1) * nb2 + (n3 - 1) * nb3;
    } else {
        t->size_estimated = true;
    }
    at = c->pos;
    if (!read_u64(c, &t->rel_offset))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': file ends inside the data offset",
                       src->path, (unsigned long long)at, nm);
    return GGUFMAP_OK;
}

/* The data section: its start, the packing rule, and the file bounds. */
static int check_data(ggufmap_source *src, uint64_t end_of_infos, unsigned flags, ggufmap_error *err) {
    char q[400];
    src->data_offset = end_of_infos;
    if (src->n_tensors > 0) {
        uint64_t start = gm_pad(end_of_infos, src->alignment);
        if (start < end_of_infos || start > src->size)
            return gm_fail(err, GGUFMAP_EFORMAT,
                           "%s: offset %llu: the data section would start at %llu, past the end of the file (%llu bytes)",
                           src->path, (unsigned long long)end_of_infos, (unsigned long long)start,
                           (unsigned long long)src->size);
        src->data_offset = start;
    }
    uint64_t expected = 0;
    for (int64_t i = 0; i < src->n_tensors; i++) {
        ggufmap_tensor *t = &src->tensors[i];
        const char *nm = quote(q, sizeof q, t->name, t->name_len);
        if (t->rel_offset != expected)
            return gm_fail(err, GGUFMAP_EFORMAT,
                           "%s: offset %llu: tensor '%s': data offset %llu, expected %llu (data must be packed in info order)",
                           src->path, (unsigned long long)t->info_offset, nm, (unsigned long long)t->rel_offset,
                           (unsigned long long)expected);
        if (t->size_estimated) {
            /* Lenient: size this tensor from where the next one starts. */
            uint64_t next = i + 1 < src->n_tensors ? src->tensors[i + 1].rel_offset : src->size - src->data_offset;
            t->size = next >= t->rel_offset ? next - t->rel_offset : 0;
            expected = next;
        } else {
            uint64_t padded = gm_pad(t->size, src->alignment);
            if (UINT64_MAX - expected < padded)
                return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%s': data section size overflows",
                               src->path, (unsigned long long)t->info_offset, nm);
            expected += padded;
        }
        t->offset = src->data_offset + t->rel_offset;
        if (!(flags & GGUFMAP_OPEN_HEADER_ONLY) &&
            (t->offset < src->data_offset || t->offset + t->size < t->offset || t->offset + t->size > src->size))
            return gm_fail(err, GGUFMAP_EFORMAT,
                           "%s: offset %llu: tensor '%s': data [%llu, %llu) is not within the file (%llu bytes)%s",
                           src->path, (unsigned long long)t->info_offset, nm, (unsigned long long)t->offset,
                           (unsigned long long)(t->offset + t->size), (unsigned long long)src->size,
                           t->offset >= src->data_offset && t->offset + t->size > t->offset
                               ? ": the file is shorter than its tensors need, a truncated or unfinished download? "
                                 "(compare its size with the server's and download it again)"
                               : "");
    }
    src->data_size = expected;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* The header                                                                */
/* ------------------------------------------------------------------------ */

/* What a file that is not GGUF most likely is, from its first bytes, for the
 * message ("" when nothing is recognized).  A safetensors file starts with
 * its JSON header's length (u64, little-endian) then '{'. */
static const char *likely_format(gm_cursor *c, const uint8_t *magic) {
    static const struct { const char *prefix; size_t len; const char *what; } known[] = {
        {"PK\x03\x04", 4, ": a zip archive (a PyTorch .bin/.pt checkpoint?); llama.cpp reads GGUF only: convert it "
                           "with llama.cpp's convert_hf_to_gguf.py"},
        {"vers", 4, ": a text file (a Git LFS pointer, 'version https://git-lfs...'? fetch the file itself, e.g. git lfs "
                    "pull or the /resolve/ URL)"},
        {"<!DO", 4, ": an HTML page, not a model (the download got a web page: a login or error page? use the /resolve/ "
                    "URL)"},
        {"<htm", 4, ": an HTML page, not a model (the download got a web page: a login or error page? use the /resolve/ "
                    "URL)"},
        {"ggjt", 4, ": a GGJT file, the format before GGUF; convert the original weights again"},
        {"ggml", 4, ": a GGML file, the format before GGUF; convert the original weights again"},
        {"lmgg", 4, ": a GGML file, the format before GGUF; convert the original weights again"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (memcmp(magic, known[i].prefix, known[i].len) == 0) return known[i].what;
    const uint64_t low = gm_le32(magic); /* read before take(): a remote source may move its bytes */
    const uint8_t *p;
    if (left(c) >= 5 && take(c, 5, &p) && p[4] == '{' && (low | (uint64_t)gm_le32(p) << 32) < c->size)
        return ": a safetensors file (a header length, then JSON); llama.cpp reads GGUF only: convert it with "
               "llama.cpp's convert_hf_to_gguf.py, or pick the .gguf file of the repository";
    return "";
}

static int parse(ggufmap_source *src, gm_cursor *c, unsigned flags, ggufmap_error *err) {
    const uint8_t *p;
    if (!take(c, 4, &p))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 0: file is %llu bytes, too short for the GGUF magic",
                       src->path, (unsigned long long)src->size);
    if (memcmp(p, "GGUF", 4) != 0) {
        char q[64];
        char magic[4];
        memcpy(magic, p, 4);
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 0: invalid magic '%s', expected 'GGUF'%s", src->path,
                       quote(q, sizeof q, magic, 4), likely_format(c, p));
    }
    if (!read_u32(c, &src->version))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 4: file ends inside the version", src->path);
    if (src->version == 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 4: bad GGUF version 0", src->path);
    if ((src->version & 0xFFFFu) == 0)
        return gm_fail(err, GGUFMAP_EFORMAT,
                       "%s: offset 4: version %u is extremely large: a big-endian file? (only little-endian is read)",
                       src->path, src->version);
    if (src->version == 1)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 4: GGUF version 1 is no longer supported", src->path);
    if (src->version > 3)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 4: GGUF version %u is newer than the supported 3", src->path,
                       src->version);
    uint64_t nt, nk;
    if (!read_u64(c, &nt))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 8: file ends inside the tensor count", src->path);
    if (!read_u64(c, &nk))
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 16: file ends inside the key-value count", src->path);
    if ((int64_t)nt < 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 8: tensor count %lld is negative", src->path, (long long)nt);
    if ((int64_t)nk < 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 16: key-value count %lld is negative", src->path,
                       (long long)nk);
    /* A pair takes at least 14 bytes and a tensor info 24: a count the file
     * cannot hold fails here, before anything is allocated for it (ggml fails
     * the same files later, when it runs out of bytes). */
    if (nk > left(c) / 14)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 16: %llu key-value pairs cannot fit in the %llu bytes left %s",
                       src->path, (unsigned long long)nk, (unsigned long long)left(c), left_in(c));
    if (nt > (left(c) - nk * 14) / 24)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset 8: %llu tensor infos cannot fit in the %llu bytes left %s",
                       src->path, (unsigned long long)nt, (unsigned long long)left(c), left_in(c));
    if (!need_ahead(c, nk * 14 + nt * 24))
        return gm_fail(err, GGUFMAP_EIO, "%s: offset 24: the key-value pairs and tensor infos cannot be read", src->path);
    src->n_kv = (int64_t)nk;
    src->n_tensors = (int64_t)nt;
    /* (a 32-bit size_t, as in wasm, cannot count every pair a file may hold) */
    bool countable = nk < SIZE_MAX / sizeof *src->kvs && nt < SIZE_MAX / sizeof *src->tensors;
    src->kvs = countable ? calloc((size_t)(nk ? nk : 1), sizeof *src->kvs) : NULL;
    src->tensors = countable ? calloc((size_t)(nt ? nt : 1), sizeof *src->tensors) : NULL;
    if (!src->kvs || !src->tensors || gm_hashtab_init(&src->kv_index, (size_t)nk) ||
        gm_hashtab_init(&src->kv_by_name, (size_t)nk) || gm_hashtab_init(&src->tensor_index, (size_t)nt))
        return gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory for %llu keys and %llu tensors", src->path,
                       (unsigned long long)nk, (unsigned long long)nt);
    int rc;
    for (int64_t i = 0; i < src->n_kv; i++)
        if ((rc = parse_kv(src, c, i, err))) return rc;
    if ((rc = check_alignment(src, err))) return rc;
    for (int64_t i = 0; i < src->n_tensors; i++)
        if ((rc = parse_tensor_info(src, c, i, flags, err))) return rc;
    return check_data(src, c->pos, flags, err);
}

/* ------------------------------------------------------------------------ */
/* The local byte source: the whole file, mapped read-only                   */
/* ------------------------------------------------------------------------ */

#ifdef __EMSCRIPTEN__
/* In the browser (make web) a local file is one picked from disk, read in
 * slices as the header needs them, never whole (byte_source_web.c). */
static int local_open(const char *path, gm_byte_source **out, ggufmap_error *err) {
    return gm_web_file_open(path, out, err);
}
#else

/* The whole file is at hand (have == limit), so the cursor never asks. */
static bool local_fetch(gm_byte_source *bs, uint64_t end) {
    (void)bs;
    (void)end;
    return false;
}

static void local_close(gm_byte_source *bs) {
    if (bs->base) munmap((void *)(uintptr_t)bs->base, (size_t)bs->size);
    if (bs->fd >= 0) close(bs->fd);
    free(bs);
}

static const gm_byte_source_ops local_ops = {"file", local_fetch, NULL, local_close};

/* Opens path read-only and maps the whole file. */
static int local_open(const char *path, gm_byte_source **out, ggufmap_error *err) {
    gm_byte_source *bs = calloc(1, sizeof *bs);
    if (!bs) return gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory", path);
    bs->ops = &local_ops;
    int rc = GGUFMAP_OK;
    /* O_NONBLOCK: opening a FIFO (or a device) must not wait for a writer;
     * anything but a regular file is refused before a byte is read. */
    bs->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (bs->fd < 0) {
        rc = gm_fail_errno(err, errno, "%s: cannot open", path);
        goto fail;
    }
    struct stat st;
    if (fstat(bs->fd, &st) != 0) {
        rc = gm_fail_errno(err, errno, "%s: cannot stat", path);
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = gm_fail(err, GGUFMAP_EIO, "%s: not a regular file (a %s)", path,
                     S_ISDIR(st.st_mode) ? "directory" : S_ISFIFO(st.st_mode) ? "FIFO"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device" : "socket or other special file");
        goto fail;
    }
    fcntl(bs->fd, F_SETFL, fcntl(bs->fd, F_GETFL) & ~O_NONBLOCK);
    gm_file_identity_read(bs->fd, &bs->identity); /* a command checks it before it trusts what it read */
    bs->size = bs->have = bs->limit = (uint64_t)st.st_size;
    if (bs->size > 0) {
        void *m = mmap(NULL, (size_t)bs->size, PROT_READ, MAP_PRIVATE, bs->fd, 0);
        if (m == MAP_FAILED) {
            rc = gm_fail_errno(err, errno, "%s: cannot map %llu bytes", path, (unsigned long long)bs->size);
            goto fail;
        }
        bs->base = m;
    }
    *out = bs;
    return GGUFMAP_OK;
fail:
    local_close(bs);
    return rc;
}
#endif

/* ------------------------------------------------------------------------ */
/* Open / close                                                              */
/* ------------------------------------------------------------------------ */

/* Drops what a parse built, keeping the name and the bytes. */
static void forget_parse(ggufmap_source *src) {
    char *path = src->path;
    gm_byte_source *bytes = src->bytes;
    uint64_t size = src->size;
    gm_hashtab_free(&src->kv_index);
    gm_hashtab_free(&src->kv_by_name);
    gm_hashtab_free(&src->tensor_index);
    free(src->kvs);
    free(src->tensors);
    memset(src, 0, sizeof *src);
    src->path = path;
    src->bytes = bytes;
    src->size = size;
}

/* Parses the header of the file that bytes reads, named name in messages.
 * The new source owns bytes from the call on, also when it fails. */
static int open_bytes(const char *name, gm_byte_source *bytes, unsigned flags, ggufmap_source **out,
                      ggufmap_error *err) {
    ggufmap_source *src = calloc(1, sizeof *src);
    if (!src || !(src->path = strdup(name))) {
        free(src);
        bytes->ops->close(bytes);
        return gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory", name);
    }
    src->bytes = bytes;
    src->size = bytes->size;
    gm_cursor c;
    int rc;
    do { /* again from byte 0 when the byte source moved the bytes to grow them */
        forget_parse(src);
        ggufmap_error_clear(err);
        c = (gm_cursor){bytes->base, 0, bytes->limit < bytes->size ? bytes->limit : bytes->size, bytes, false, false,
                        false};
        rc = parse(src, &c, flags, err);
    } while (rc && c.moved);
    if (rc && c.fetch_failed) { /* the bytes did not come: say why, not "file ends" */
        if (err) *err = bytes->err;
        rc = bytes->err.status;
    } else if (rc && c.over_limit) {
        rc = gm_fail(err, GGUFMAP_EFORMAT,
                     "%s: offset %llu: the header goes on past the %llu bytes read of a remote file at most "
                     "(the header limit)",
                     name, (unsigned long long)c.pos, (unsigned long long)c.size);
    }
    if (rc) {
        ggufmap_source_free(src);
        return rc;
    }
    if (bytes->ops->parsed) bytes->ops->parsed(bytes, c.pos);
    *out = src;
    return GGUFMAP_OK;
}

int ggufmap_source_open(const char *path, unsigned flags, ggufmap_source **out, ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    gm_byte_source *bytes = NULL;
    int rc = local_open(path, &bytes, err);
    return rc ? rc : open_bytes(path, bytes, flags, out, err);
}

int ggufmap_source_open_url(const char *url, unsigned flags, ggufmap_remote *remote, ggufmap_source **out,
                            ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    gm_byte_source *bytes = NULL;
    char *shown = gm_url_redacted(url);
    if (!shown) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    int rc = gm_remote_open(remote, url, &bytes, err);
    if (!rc) rc = open_bytes(shown, bytes, flags, out, err);
    free(shown);
    return rc;
}

void ggufmap_source_free(ggufmap_source *src) {
    if (!src) return;
    src->bytes->ops->close(src->bytes);
    gm_hashtab_free(&src->kv_index);
    gm_hashtab_free(&src->kv_by_name);
    gm_hashtab_free(&src->tensor_index);
    free(src->kvs);
    free(src->tensors);
    free(src->path);
    free(src);
}

void gm_source_set_shard(ggufmap_source *src, uint32_t shard) {
    for (int64_t i = 0; i < src->n_tensors; i++) src->tensors[i].shard = shard;
}

/* ------------------------------------------------------------------------ */
/* Accessors                                                                 */
/* ------------------------------------------------------------------------ */

const char *ggufmap_source_path(const ggufmap_source *src) { return src->path; }
uint64_t ggufmap_source_file_size(const ggufmap_source *src) { return src->size; }
uint32_t ggufmap_source_version(const ggufmap_source *src) { return src->version; }
uint32_t ggufmap_source_alignment(const ggufmap_source *src) { return src->alignment; }
uint64_t ggufmap_source_data_offset(const ggufmap_source *src) { return src->data_offset; }
uint64_t ggufmap_source_data_size(const ggufmap_source *src) { return src->data_size; }
const uint8_t *ggufmap_source_bytes(const ggufmap_source *src) { return src->bytes->base; }
int ggufmap_source_fd(const ggufmap_source *src) { return src->bytes->fd; }
const gm_file_identity *gm_source_identity(const ggufmap_source *src) {
    return src->bytes->fd >= 0 ? &src->bytes->identity : NULL;
}
bool ggufmap_source_is_remote(const ggufmap_source *src) { return strcmp(src->bytes->ops->kind, "http") == 0; }

void ggufmap_source_fetch_stats(const ggufmap_source *src, uint64_t *fetched_bytes, uint64_t *requests) {
    *fetched_bytes = src->bytes->fetched;
    *requests = src->bytes->requests;
}
int64_t ggufmap_source_n_kv(const ggufmap_source *src) { return src->n_kv; }
int64_t ggufmap_source_n_tensors(const ggufmap_source *src) { return src->n_tensors; }

const ggufmap_kv *ggufmap_source_kv(const ggufmap_source *src, int64_t i) {
    return i >= 0 && i < src->n_kv ? &src->kvs[i] : NULL;
}

const ggufmap_kv *ggufmap_source_find_kv(const ggufmap_source *src, const char *key) {
    return ggufmap_source_kv(src, gm_hashtab_find(&src->kv_by_name, key, strlen(key)));
}

int64_t gm_source_find_kv_bytes(const ggufmap_source *src, const char *key, size_t len) {
    return gm_hashtab_find(&src->kv_index, key, len);
}

const ggufmap_tensor *ggufmap_source_tensor(const ggufmap_source *src, int64_t i) {
    return i >= 0 && i < src->n_tensors ? &src->tensors[i] : NULL;
}

int64_t ggufmap_source_find_tensor(const ggufmap_source *src, const char *name) {
    return gm_hashtab_find(&src->tensor_index, name, strlen(name));
}

/* ------------------------------------------------------------------------ */
/* Values                                                                    */
/* ------------------------------------------------------------------------ */

bool ggufmap_kv_key_is(const ggufmap_kv *kv, const char *key) {
    size_t n = strlen(key);
    return strnlen(kv->key, (size_t)kv->key_len) == n && memcmp(kv->key, key, n) == 0;
}

static int scalar_int(int32_t type, const uint8_t *p, int64_t *out) {
    switch (type) {
    case GGUFMAP_VALUE_UINT8: *out = p[0]; return GGUFMAP_OK;
    case GGUFMAP_VALUE_INT8: *out = (int8_t)p[0]; return GGUFMAP_OK;
    case GGUFMAP_VALUE_BOOL: *out = p[0] != 0; return GGUFMAP_OK;
    case GGUFMAP_VALUE_UINT16: *out = gm_le16(p); return GGUFMAP_OK;
    case GGUFMAP_VALUE_INT16: *out = (int16_t)gm_le16(p); return GGUFMAP_OK;
    case GGUFMAP_VALUE_UINT32: *out = gm_le32(p); return GGUFMAP_OK;
    case GGUFMAP_VALUE_INT32: *out = (int32_t)gm_le32(p); return GGUFMAP_OK;
    case GGUFMAP_VALUE_INT64: *out = (int64_t)gm_le64(p); return GGUFMAP_OK;
    case GGUFMAP_VALUE_UINT64: {
        uint64_t v = gm_le64(p);
        if (v > INT64_MAX) return GGUFMAP_EINVAL;
        *out = (int64_t)v;
        return GGUFMAP_OK;
    }
    default: return GGUFMAP_EINVAL;
    }
}

static int scalar_float(int32_t type, const uint8_t *p, double *out) {
    if (type == GGUFMAP_VALUE_FLOAT32) {
        uint32_t bits = gm_le32(p);
        float f;
        memcpy(&f, &bits, sizeof f);
        *out = f;
        return GGUFMAP_OK;
    }
    if (type == GGUFMAP_VALUE_FLOAT64) {
        uint64_t bits = gm_le64(p);
        memcpy(out, &bits, sizeof *out);
        return GGUFMAP_OK;
    }
    int64_t v;
    if (scalar_int(type, p, &v)) {
        if (type != GGUFMAP_VALUE_UINT64) return GGUFMAP_EINVAL;
        *out = (double)gm_le64(p);
        return GGUFMAP_OK;
    }
    *out = (double)v;
    return GGUFMAP_OK;
}

int ggufmap_kv_int(const ggufmap_kv *kv, int64_t *out) {
    if (kv->type == GGUFMAP_VALUE_ARRAY) return GGUFMAP_EINVAL;
    return scalar_int(kv->type, kv->value, out);
}

int ggufmap_kv_float(const ggufmap_kv *kv, double *out) {
    if (kv->type == GGUFMAP_VALUE_ARRAY) return GGUFMAP_EINVAL;
    return scalar_float(kv->type, kv->value, out);
}

int ggufmap_kv_string(const ggufmap_kv *kv, const char **str, uint64_t *len) {
    if (kv->type != GGUFMAP_VALUE_STRING) return GGUFMAP_EINVAL;
    *len = gm_le64(kv->value);
    *str = (const char *)kv->value + 8;
    return GGUFMAP_OK;
}

int ggufmap_kv_array_int(const ggufmap_kv *kv, uint64_t i, int64_t *out) {
    uint32_t w = ggufmap_value_type_size(kv->elem_type);
    if (kv->type != GGUFMAP_VALUE_ARRAY || w == 0 || i >= kv->count) return GGUFMAP_EINVAL;
    return scalar_int(kv->elem_type, kv->value + i * w, out);
}

int ggufmap_kv_array_float(const ggufmap_kv *kv, uint64_t i, double *out) {
    uint32_t w = ggufmap_value_type_size(kv->elem_type);
    if (kv->type != GGUFMAP_VALUE_ARRAY || w == 0 || i >= kv->count) return GGUFMAP_EINVAL;
    return scalar_float(kv->elem_type, kv->value + i * w, out);
}

int ggufmap_kv_array_next_string(const ggufmap_kv *kv, uint64_t *cursor, const char **str, uint64_t *len) {
    if (kv->type != GGUFMAP_VALUE_ARRAY || kv->elem_type != GGUFMAP_VALUE_STRING) return GGUFMAP_EINVAL;
    /* The parser checked every element, so a cursor inside value_size is safe. */
    if (*cursor + 8 > kv->value_size) return GGUFMAP_ENOTFOUND;
    *len = gm_le64(kv->value + *cursor);
    *str = (const char *)kv->value + *cursor + 8;
    *cursor += 8 + *len;
    return GGUFMAP_OK;
}

/*
 * model.c - the shards of a split model, opened and cross-checked as one.
 *
 * A model holds its sources (one per shard), a flat array of pointers to
 * their tensor infos in shard-then-file order, and one hash table from name to
 * that array's index, which is also how names duplicated across shards are
 * caught (O(1) per tensor).
 *
 * Shards are local files or remote files (URLs, hf:// names): an opener says
 * which.  The split naming applies to a URL's path, its query and fragment
 * kept as they are; a remote model's shards are asked for in parallel before
 * they are read one by one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufmap/model.h"
#include "internal.h"
#include "remote_internal.h"

struct ggufmap_model {
    uint32_t n_shards;
    ggufmap_source **shards;
    int64_t n_tensors;
    const ggufmap_tensor **tensors;
    gm_hashtab names;
};

int ggufmap_split_path(char *buf, size_t cap, const char *prefix, uint32_t index, uint32_t count) {
    return snprintf(buf, cap, "%s-%05u-of-%05u.gguf", prefix, index + 1, count);
}

/* ------------------------------------------------------------------------ */
/* Openers and shard names                                                   */
/* ------------------------------------------------------------------------ */

/* How shards are opened: local files, or remote ones through a session. */
typedef struct opener {
    ggufmap_remote *remote; /* NULL: local files */
} opener;

static int open_source(const opener *op, const char *name, unsigned flags, ggufmap_source **src,
                       ggufmap_error *err) {
    if (op->remote) return ggufmap_source_open_url(name, flags, op->remote, src, err);
    return ggufmap_source_open(name, flags, src, err);
}

/* The name of shard `index` of `count` of the model that `name` (a shard of
 * it, or its first file) belongs to, prefix_len bytes of the name being the
 * prefix: PREFIX-%05d-of-%05d.gguf, then whatever followed the split naming
 * in name (a URL's query).  malloc'd; NULL when out of memory. */
static char *shard_name(const char *name, size_t prefix_len, uint32_t index, uint32_t count) {
    const char *tail = name + gm_url_name_len(name);
    size_t cap = prefix_len + 32 + strlen(tail);
    char *prefix = strndup(name, prefix_len), *out = malloc(cap);
    if (prefix && out) {
        int n = ggufmap_split_path(out, cap, prefix, index, count);
        memcpy(out + n, tail, strlen(tail) + 1);
    } else {
        free(out);
        out = NULL;
    }
    free(prefix);
    return out;
}

/* ggufmap_split_parse over the part of name the split naming applies to. */
static int split_parse_name(const char *name, size_t *prefix_len, uint32_t *index, uint32_t *count) {
    char *head = strndup(name, gm_url_name_len(name));
    int named = head && ggufmap_split_parse(head, prefix_len, index, count);
    free(head);
    return named;
}

/* Asks for the first bytes of the shards after `next` (a hint: the remote
 * session fetches them in parallel and bounds how many at once). */
static void prefetch_shards(const opener *op, const char *first, size_t prefix_len, uint32_t next, uint32_t count) {
    if (!op->remote) return;
    for (uint32_t k = next; k < count; k++) {
        char *name = shard_name(first, prefix_len, k, count);
        if (name) gm_remote_prefetch(op->remote, name);
        free(name);
    }
}

static int five_digits(const char *s, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 5; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        *v = *v * 10 + (uint32_t)(s[i] - '0');
    }
    return 1;
}

bool ggufmap_split_parse(const char *path, size_t *prefix_len, uint32_t *index, uint32_t *count) {
    static const char tail[] = "-NNNNN-of-NNNNN.gguf";
    size_t n = strlen(path), t = sizeof tail - 1;
    if (n < t) return false;
    const char *s = path + n - t;
    uint32_t no, of;
    if (s[0] != '-' || !five_digits(s + 1, &no) || memcmp(s + 6, "-of-", 4) != 0 || !five_digits(s + 10, &of) ||
        strcmp(s + 15, ".gguf") != 0 || no == 0)
        return false;
    *prefix_len = n - t;
    *index = no - 1;
    *count = of;
    return true;
}

/* Reads a u16 key that must have exactly that type (llama.cpp's get_key). */
static int get_u16(const ggufmap_source *src, const char *key, int required, uint16_t *out, int *found,
                   ggufmap_error *err) {
    const ggufmap_kv *kv = ggufmap_source_find_kv(src, key);
    *found = kv != NULL;
    if (!kv) {
        if (required)
            return gm_fail(err, GGUFMAP_EFORMAT, "%s: key '%s' is missing (a split shard must carry it)",
                           ggufmap_source_path(src), key);
        return GGUFMAP_OK;
    }
    if (kv->type != GGUFMAP_VALUE_UINT16)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key '%s' has type %s, llama.cpp requires u16",
                       ggufmap_source_path(src), (unsigned long long)kv->offset, key,
                       ggufmap_value_type_name(kv->type));
    *out = gm_le16(kv->value);
    return GGUFMAP_OK;
}

static int add_shard(ggufmap_model *m, const opener *op, const char *path, unsigned flags, ggufmap_error *err) {
    ggufmap_source *src;
    int rc = open_source(op, path, flags, &src, err);
    if (rc) return rc;
    gm_source_set_shard(src, m->n_shards);
    m->shards[m->n_shards++] = src;
    return GGUFMAP_OK;
}

/* A shard that is not there is named as the split model's missing shard
 * ("shard 4 of 4 missing: NAME"), the likeliest cause being a download that
 * fetched only some of them; other failures are left as they are. */
static int shard_missing(int rc, uint32_t index, uint32_t count, const char *path, ggufmap_error *err) {
    if (rc != GGUFMAP_ENOTFOUND || count < 2) return rc;
    char why[sizeof err->message] = ""; /* what the source said: no such file, not in the cache (offline), ... */
    if (err) snprintf(why, sizeof why, "%s", err->message);
    char *shown = gm_url_redacted(path);
    const char *cause = why; /* without the name, when the source's message starts with it */
    size_t n = shown ? strlen(shown) : 0;
    if (n && strncmp(why, shown, n) == 0 && strncmp(why + n, ": ", 2) == 0) cause = why + n + 2;
    rc = gm_fail(err, GGUFMAP_ENOTFOUND,
                 "shard %u of %u missing: %s (%s; a split model needs every shard, named as the file names number "
                 "them, in the same place: download the missing one too)",
                 index + 1, count, shown ? shown : "?", cause[0] ? cause : "not found");
    free(shown);
    return rc;
}

/* Indexes every tensor of every shard, refusing names seen in an earlier shard. */
static int index_tensors(ggufmap_model *m, ggufmap_error *err) {
    int64_t total = 0;
    for (uint32_t s = 0; s < m->n_shards; s++) total += ggufmap_source_n_tensors(m->shards[s]);
    m->tensors = calloc(total ? (size_t)total : 1, sizeof *m->tensors);
    if (!m->tensors || gm_hashtab_init(&m->names, (size_t)total))
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory for %lld tensors", (long long)total);
    for (uint32_t s = 0; s < m->n_shards; s++) {
        const ggufmap_source *src = m->shards[s];
        for (int64_t i = 0; i < ggufmap_source_n_tensors(src); i++) {
            const ggufmap_tensor *t = ggufmap_source_tensor(src, i);
            int64_t dup = gm_hashtab_insert(&m->names, t->name, t->name_len, m->n_tensors);
            if (dup >= 0)
                return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: tensor '%.*s' is duplicated: also in %s",
                               ggufmap_source_path(src), (unsigned long long)t->info_offset, (int)t->name_len,
                               t->name, ggufmap_source_path(m->shards[m->tensors[dup]->shard]));
            m->tensors[m->n_tensors++] = t;
        }
    }
    return GGUFMAP_OK;
}

static int open_splits(ggufmap_model *m, const opener *op, const char *first_path, uint16_t n_split, unsigned flags,
                       ggufmap_error *err) {
    const ggufmap_source *first = m->shards[0];
    uint16_t no = 0;
    int found, rc;
    if ((rc = get_u16(first, "split.no", 1, &no, &found, err))) return rc;
    if (no != 0)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: split.no is %u: the first shard must have split.no 0",
                       ggufmap_source_path(first), no);
    size_t plen;
    uint32_t idx, count;
    if (!split_parse_name(first_path, &plen, &idx, &count) || idx != 0 || count != n_split)
        return gm_fail(err, GGUFMAP_EFORMAT,
                       "%s: split.count is %u but the file name does not end in -00001-of-%05u.gguf",
                       ggufmap_source_path(first), n_split, n_split);
    for (uint32_t k = 1; k < n_split && !rc; k++) {
        prefetch_shards(op, first_path, plen, k, k + 16 < n_split ? k + 16 : n_split);
        char *path = shard_name(first_path, plen, k, n_split);
        if (!path) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        if ((rc = shard_missing(add_shard(m, op, path, flags, err), k, n_split, path, err)) == GGUFMAP_OK) {
            const ggufmap_source *src = m->shards[k];
            if ((rc = get_u16(src, "split.no", 1, &no, &found, err)) == GGUFMAP_OK && no != k)
                rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: split.no is %u, expected %u", ggufmap_source_path(src), no, k);
        }
        free(path);
    }
    if (rc) return rc;
    if ((rc = index_tensors(m, err))) return rc;
    const ggufmap_kv *kv = ggufmap_source_find_kv(first, "split.tensors.count");
    if (!kv)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: key 'split.tensors.count' is missing", ggufmap_source_path(first));
    if (kv->type != GGUFMAP_VALUE_INT32)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: offset %llu: key 'split.tensors.count' has type %s, llama.cpp requires i32",
                       ggufmap_source_path(first), (unsigned long long)kv->offset, ggufmap_value_type_name(kv->type));
    int32_t expected = (int32_t)gm_le32(kv->value);
    if (expected != m->n_tensors)
        return gm_fail(err, GGUFMAP_EFORMAT, "%s: split.tensors.count is %d but the %u shards hold %lld tensors",
                       ggufmap_source_path(first), expected, n_split, (long long)m->n_tensors);
    return GGUFMAP_OK;
}

/* Opens the model that `name` (any shard) belongs to, through op. */
static int model_open(const opener *op, const char *name, unsigned flags, ggufmap_model **out, ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    ggufmap_model *m = calloc(1, sizeof *m);
    if (!m) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    int rc;
    size_t plen;
    uint32_t idx, count;
    int named_as_shard = split_parse_name(name, &plen, &idx, &count);
    /* Any shard leads to the first: PREFIX-00001-of-COUNT.gguf. */
    char *first_path = named_as_shard && idx != 0 ? shard_name(name, plen, 0, count) : strdup(name);
    /* At most 65535 shards (split.count is a u16). */
    m->shards = calloc(65536, sizeof *m->shards);
    if (!first_path || !m->shards) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto fail;
    }
    if (named_as_shard && count > 1) prefetch_shards(op, first_path, plen, 1, count < 17 ? count : 17);
    if ((rc = add_shard(m, op, first_path, flags, err))) {
        if (named_as_shard && idx != 0) rc = shard_missing(rc, 0, count, first_path, err);
        goto fail;
    }
    uint16_t n_split = 0;
    int found;
    if ((rc = get_u16(m->shards[0], "split.count", 0, &n_split, &found, err))) goto fail;
    if (n_split > 1) {
        rc = open_splits(m, op, first_path, n_split, flags, err);
    } else {
        if (named_as_shard && idx != 0) {
            char *shown = gm_url_redacted(name);
            rc = gm_fail(err, GGUFMAP_EFORMAT, "%s: named as shard %u of %u, but %s has no split.count above 1",
                         shown ? shown : "?", idx + 1, count, ggufmap_source_path(m->shards[0]));
            free(shown);
            goto fail;
        }
        rc = index_tensors(m, err);
    }
    if (rc) goto fail;
    free(first_path);
    *out = m;
    return GGUFMAP_OK;
fail:
    free(first_path);
    ggufmap_model_free(m);
    return rc;
}

int ggufmap_model_open(const char *path, unsigned flags, ggufmap_model **out, ggufmap_error *err) {
    if (ggufmap_is_url(path) && access(path, F_OK) != 0) {
        *out = NULL;
        ggufmap_error_clear(err);
        char *shown = gm_url_redacted(path);
        int rc = gm_fail(err, GGUFMAP_EINVAL,
                         "%s: a URL: this reads tensor data, so it takes local files only (inspect, plan and fit "
                         "read models over HTTP, headers only)",
                         shown ? shown : "model");
        free(shown);
        return rc;
    }
    opener local = {NULL};
    return model_open(&local, path, flags, out, err);
}

int ggufmap_model_open_url(const char *url, unsigned flags, ggufmap_remote *remote, ggufmap_model **out,
                           ggufmap_error *err) {
    opener op = {remote};
    int rc = model_open(&op, url, flags, out, err);
    gm_remote_drop_prefetches(remote); /* any a failure left behind */
    return rc;
}

void ggufmap_model_free(ggufmap_model *m) {
    if (!m) return;
    for (uint32_t s = 0; s < m->n_shards; s++) ggufmap_source_free(m->shards[s]);
    free(m->shards);
    free(m->tensors);
    gm_hashtab_free(&m->names);
    free(m);
}

uint32_t ggufmap_model_n_shards(const ggufmap_model *m) { return m->n_shards; }

const ggufmap_source *ggufmap_model_shard(const ggufmap_model *m, uint32_t i) {
    return i < m->n_shards ? m->shards[i] : NULL;
}

int64_t ggufmap_model_n_tensors(const ggufmap_model *m) { return m->n_tensors; }

const ggufmap_tensor *ggufmap_model_tensor(const ggufmap_model *m, int64_t i) {
    return i >= 0 && i < m->n_tensors ? m->tensors[i] : NULL;
}

int64_t ggufmap_model_find_tensor(const ggufmap_model *m, const char *name) {
    return gm_hashtab_find(&m->names, name, strlen(name));
}

const ggufmap_kv *ggufmap_model_find_kv(const ggufmap_model *m, const char *key) {
    return ggufmap_source_find_kv(m->shards[0], key);
}

bool ggufmap_model_fetch_stats(const ggufmap_model *m, uint64_t *fetched_bytes, uint64_t *requests) {
    *fetched_bytes = *requests = 0;
    for (uint32_t s = 0; s < m->n_shards; s++) {
        uint64_t b, r;
        ggufmap_source_fetch_stats(m->shards[s], &b, &r);
        *fetched_bytes += b;
        *requests += r;
    }
    return ggufmap_source_is_remote(m->shards[0]);
}

uint64_t ggufmap_model_file_bytes(const ggufmap_model *m) {
    uint64_t sum = 0;
    for (uint32_t s = 0; s < m->n_shards; s++) sum += ggufmap_source_file_size(m->shards[s]);
    return sum;
}

uint64_t ggufmap_model_tensor_bytes(const ggufmap_model *m) {
    uint64_t sum = 0;
    for (int64_t i = 0; i < m->n_tensors; i++) sum += m->tensors[i]->size;
    return sum;
}

/* ------------------------------------------------------------------------ */
/* Shards that change underneath                                             */
/* ------------------------------------------------------------------------ */

int gm_model_check_unchanged(const ggufmap_model *m, ggufmap_error *err) {
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        const gm_file_identity *id = gm_source_identity(src);
        int rc = id ? gm_file_check_unchanged(ggufmap_source_path(src), ggufmap_source_fd(src), id, err) : GGUFMAP_OK;
        if (rc) return rc;
    }
    return GGUFMAP_OK;
}

/*
 * report_inspect.c - what a model holds and where: the text and the JSON
 * ("ggufmap.inspect/1", documented in docs/json.md) of `ggufmap inspect`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/report.h"
#include "internal.h"
#include "json.h"

#define SUMMARY_ELEMENTS 8 /* array elements in JSON without GGUFMAP_REPORT_FULL */

static const char *type_name(const ggufmap_tensor *t, char *buf, size_t cap) {
    const ggufmap_type_info *ti = ggufmap_type(t->type);
    if (ti && ti->block_size) return ti->name;
    snprintf(buf, cap, "type#%d", t->type);
    return buf;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The string value of a metadata key in the first shard, or NULL. */
static const char *kv_text(const ggufmap_model *m, const char *key, int *len) {
    const ggufmap_kv *kv = ggufmap_model_find_kv(m, key);
    const char *s;
    uint64_t n;
    if (!kv || ggufmap_kv_string(kv, &s, &n) != GGUFMAP_OK) return NULL;
    *len = n > 200 ? 200 : (int)n;
    return s;
}

/* ------------------------------------------------------------------------ */
/* Per-type totals                                                           */
/* ------------------------------------------------------------------------ */

typedef struct type_total {
    int32_t type;
    int64_t count;
    uint64_t bytes;
} type_total;

/* Totals per type id, in first-seen order; unknown ids get their own rows. */
static type_total *type_totals(const ggufmap_model *m, size_t *n_out) {
    int64_t n = ggufmap_model_n_tensors(m);
    type_total *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows);
    size_t used = 0;
    if (!rows) return NULL;
    for (int64_t i = 0; i < n; i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        size_t k = 0;
        while (k < used && rows[k].type != t->type) k++;
        if (k == used) rows[used++].type = t->type;
        rows[k].count++;
        rows[k].bytes += t->size;
    }
    *n_out = used;
    return rows;
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */
/* ------------------------------------------------------------------------ */

static void print_shape(FILE *out, const ggufmap_tensor *t, int width) {
    char buf[128];
    int o = snprintf(buf, sizeof buf, "[");
    for (uint32_t j = 0; j < t->n_dims; j++)
        o += snprintf(buf + o, sizeof buf - (size_t)o, "%s%lld", j ? ", " : "", (long long)t->ne[j]);
    snprintf(buf + o, sizeof buf - (size_t)o, "]");
    fprintf(out, "%-*s", width, buf);
}

/* A string from a file, escaped for a terminal, cut to width bytes of
 * escaped text and padded to it ("%-*s" with escapes counted). */
static void print_field(FILE *out, const char *s, size_t n, int width) {
    char buf[256];
    ggufmap_escape(buf, sizeof buf, s, n);
    fprintf(out, "%-*s", width, buf);
}

static void print_summary(FILE *out, const ggufmap_model *m) {
    char b1[64], b2[64];
    int len = 0;
    const ggufmap_source *first = ggufmap_model_shard(m, 0);
    const char *path = ggufmap_source_path(first);
    fprintf(out, "model         ");
    ggufmap_fputs_escaped(out, path, strlen(path));
    const char *arch = kv_text(m, "general.architecture", &len);
    fprintf(out, "\narchitecture  ");
    if (arch) ggufmap_fputs_escaped(out, arch, (size_t)len);
    else fprintf(out, "(none)");
    const char *name = kv_text(m, "general.name", &len);
    fprintf(out, "\nname          ");
    if (name) ggufmap_fputs_escaped(out, name, (size_t)len);
    else fprintf(out, "(none)");
    fprintf(out, "\nfile bytes    %llu (%s) in %u shard%s\n", (unsigned long long)ggufmap_model_file_bytes(m),
            gm_fmt_bytes(b1, sizeof b1, ggufmap_model_file_bytes(m)), ggufmap_model_n_shards(m),
            ggufmap_model_n_shards(m) == 1 ? "" : "s");
    fprintf(out, "tensors       %lld, %llu bytes (%s)\n", (long long)ggufmap_model_n_tensors(m),
            (unsigned long long)ggufmap_model_tensor_bytes(m), gm_fmt_bytes(b2, sizeof b2, ggufmap_model_tensor_bytes(m)));
}

/* Shards are numbered from 1 in text, as their file names number them. */
static void print_shards(FILE *out, const ggufmap_model *m) {
    char b1[64];
    fprintf(out, "\nshards\n  %5s  %-48s %7s %6s %12s %8s %6s %16s\n", "shard", "file", "version", "align",
            "data offset", "tensors", "keys", "bytes");
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        const char *file = base_name(ggufmap_source_path(src));
        fprintf(out, "  %5u  ", s + 1);
        print_field(out, file, strlen(file), 48);
        fprintf(out, " %7u %6u %12llu %8lld %6lld %16llu  %s\n", ggufmap_source_version(src), ggufmap_source_alignment(src),
                (unsigned long long)ggufmap_source_data_offset(src), (long long)ggufmap_source_n_tensors(src),
                (long long)ggufmap_source_n_kv(src), (unsigned long long)ggufmap_source_file_size(src),
                gm_fmt_bytes(b1, sizeof b1, ggufmap_source_file_size(src)));
    }
}

static void print_types(FILE *out, const ggufmap_model *m) {
    char b1[64], b2[64];
    size_t n_types = 0;
    type_total *types = type_totals(m, &n_types);
    fprintf(out, "\ntypes\n  %-10s %8s %16s\n", "type", "tensors", "bytes");
    for (size_t k = 0; types && k < n_types; k++) {
        ggufmap_tensor probe = {.type = types[k].type};
        fprintf(out, "  %-10s %8lld %16llu  %s\n", type_name(&probe, b2, sizeof b2), (long long)types[k].count,
                (unsigned long long)types[k].bytes, gm_fmt_bytes(b1, sizeof b1, types[k].bytes));
    }
    free(types);
}

static void print_metadata(FILE *out, const ggufmap_model *m, bool full) {
    const ggufmap_source *first = ggufmap_model_shard(m, 0);
    fprintf(out, "\nmetadata (first shard, %lld key%s)\n", (long long)ggufmap_source_n_kv(first),
            ggufmap_source_n_kv(first) == 1 ? "" : "s");
    for (int64_t i = 0; i < ggufmap_source_n_kv(first); i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(first, i);
        fprintf(out, "  ");
        print_field(out, kv->key, (size_t)kv->key_len, 48);
        fprintf(out, " %-4s ", ggufmap_value_type_name(kv->type));
        gm_print_kv_value(out, kv, full);
        fputc('\n', out);
    }
}

static void print_tensors(FILE *out, const ggufmap_model *m) {
    char b1[64];
    fprintf(out, "\n%6s %5s  %-44s %-8s %-28s %14s %14s\n", "index", "shard", "name", "type", "shape", "offset",
            "bytes");
    for (int64_t i = 0; i < ggufmap_model_n_tensors(m); i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        fprintf(out, "%6lld %5u  ", (long long)i, t->shard + 1);
        print_field(out, t->name, t->name_len, 44);
        fprintf(out, " %-8s ", type_name(t, b1, sizeof b1));
        print_shape(out, t, 28);
        fprintf(out, " %14llu %14llu%s\n", (unsigned long long)t->offset, (unsigned long long)t->size,
                t->size_estimated ? " (estimated)" : "");
    }
}

static void inspect_text(FILE *out, const ggufmap_model *m, unsigned flags) {
    print_summary(out, m);
    print_shards(out, m);
    print_types(out, m);
    if (flags & GGUFMAP_REPORT_METADATA) print_metadata(out, m, (flags & GGUFMAP_REPORT_FULL) != 0);
    if (!(flags & GGUFMAP_REPORT_NO_TENSORS)) print_tensors(out, m);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

static void json_scalar(json *j, int32_t type, const ggufmap_kv *kv, uint64_t i) {
    int64_t iv;
    double fv;
    bool is_array = kv->type == GGUFMAP_VALUE_ARRAY;
    if (type == GGUFMAP_VALUE_FLOAT32) {
        is_array ? ggufmap_kv_array_float(kv, i, &fv) : ggufmap_kv_float(kv, &fv);
        json_float(j, (float)fv);
    } else if (type == GGUFMAP_VALUE_FLOAT64) {
        is_array ? ggufmap_kv_array_float(kv, i, &fv) : ggufmap_kv_float(kv, &fv);
        json_double(j, fv);
    } else if ((is_array ? ggufmap_kv_array_int(kv, i, &iv) : ggufmap_kv_int(kv, &iv)) == 0) {
        if (type == GGUFMAP_VALUE_BOOL)
            json_bool(j, iv != 0);
        else
            json_int(j, iv);
    } else { /* a u64 above INT64_MAX */
        const uint8_t *p = kv->value + (is_array ? i * 8 : 0);
        uint64_t v = 0;
        for (int b = 7; b >= 0; b--) v = (v << 8) | p[b];
        json_uint(j, v);
    }
}

static void json_kv(json *j, const ggufmap_kv *kv, bool full) {
    json_begin_object(j);
    json_key(j, "key");
    json_string_n(j, kv->key, (size_t)kv->key_len);
    json_key(j, "type");
    json_string(j, ggufmap_value_type_name(kv->type));
    json_key(j, "offset");
    json_uint(j, kv->offset);
    if (kv->type == GGUFMAP_VALUE_ARRAY) {
        uint64_t shown = full || kv->count <= SUMMARY_ELEMENTS ? kv->count : SUMMARY_ELEMENTS;
        json_key(j, "elem_type");
        json_string(j, ggufmap_value_type_name(kv->elem_type));
        json_key(j, "count");
        json_uint(j, kv->count);
        json_key(j, "truncated");
        json_bool(j, shown < kv->count);
        json_key(j, "value");
        json_begin_array(j);
        uint64_t cursor = 0;
        for (uint64_t i = 0; i < shown; i++) {
            if (kv->elem_type == GGUFMAP_VALUE_STRING) {
                const char *s;
                uint64_t n;
                if (ggufmap_kv_array_next_string(kv, &cursor, &s, &n) == 0) json_string_n(j, s, (size_t)n);
            } else {
                json_scalar(j, kv->elem_type, kv, i);
            }
        }
        json_end_array(j);
    } else {
        json_key(j, "value");
        if (kv->type == GGUFMAP_VALUE_STRING) {
            const char *s;
            uint64_t n;
            ggufmap_kv_string(kv, &s, &n);
            json_string_n(j, s, (size_t)n);
        } else {
            json_scalar(j, kv->type, kv, 0);
        }
    }
    json_end_object(j);
}

/* "architecture", "name" (null when missing), the byte counts, and what
 * reading over HTTP cost. */
static void json_summary(json *j, const ggufmap_model *m) {
    int len = 0;
    const char *arch = kv_text(m, "general.architecture", &len);
    json_key(j, "architecture");
    arch ? json_string_n(j, arch, (size_t)len) : json_null(j);
    const char *name = kv_text(m, "general.name", &len);
    json_key(j, "name");
    name ? json_string_n(j, name, (size_t)len) : json_null(j);
    json_key(j, "file_bytes");
    json_uint(j, ggufmap_model_file_bytes(m));
    json_key(j, "tensor_bytes");
    json_uint(j, ggufmap_model_tensor_bytes(m));
    json_key(j, "n_tensors");
    json_int(j, ggufmap_model_n_tensors(m));
    uint64_t fetched, requests;
    if (ggufmap_model_fetch_stats(m, &fetched, &requests)) /* read over HTTP: what it cost */
        json_key(j, "fetched_bytes"), json_uint(j, fetched), json_key(j, "requests"), json_uint(j, requests);
}

static void json_shards(json *j, const ggufmap_model *m) {
    uint64_t fetched, requests;
    json_key(j, "shards");
    json_begin_array(j);
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        json_begin_object(j);
        json_key(j, "index"), json_uint(j, s);
        json_key(j, "path"), json_string(j, ggufmap_source_path(src));
        json_key(j, "file_size"), json_uint(j, ggufmap_source_file_size(src));
        json_key(j, "version"), json_uint(j, ggufmap_source_version(src));
        json_key(j, "alignment"), json_uint(j, ggufmap_source_alignment(src));
        json_key(j, "data_offset"), json_uint(j, ggufmap_source_data_offset(src));
        json_key(j, "data_size"), json_uint(j, ggufmap_source_data_size(src));
        json_key(j, "n_kv"), json_int(j, ggufmap_source_n_kv(src));
        json_key(j, "n_tensors"), json_int(j, ggufmap_source_n_tensors(src));
        ggufmap_source_fetch_stats(src, &fetched, &requests);
        if (ggufmap_source_is_remote(src))
            json_key(j, "fetched_bytes"), json_uint(j, fetched), json_key(j, "requests"), json_uint(j, requests);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_types(json *j, const ggufmap_model *m) {
    char buf[32];
    size_t n_types = 0;
    type_total *types = type_totals(m, &n_types);
    json_key(j, "types");
    json_begin_array(j);
    for (size_t k = 0; types && k < n_types; k++) {
        ggufmap_tensor probe = {.type = types[k].type};
        json_begin_object(j);
        json_key(j, "type"), json_string(j, type_name(&probe, buf, sizeof buf));
        json_key(j, "type_id"), json_int(j, types[k].type);
        json_key(j, "n_tensors"), json_int(j, types[k].count);
        json_key(j, "bytes"), json_uint(j, types[k].bytes);
        json_end_object(j);
    }
    json_end_array(j);
    free(types);
}

static void json_tensors(json *j, const ggufmap_model *m, unsigned flags) {
    char buf[32];
    json_key(j, "tensors");
    json_begin_array(j);
    for (int64_t i = 0; i < ((flags & GGUFMAP_REPORT_NO_TENSORS) ? 0 : ggufmap_model_n_tensors(m)); i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        json_begin_object(j);
        json_key(j, "index"), json_int(j, i);
        json_key(j, "name"), json_string_n(j, t->name, t->name_len);
        json_key(j, "shard"), json_uint(j, t->shard);
        json_key(j, "type"), json_string(j, type_name(t, buf, sizeof buf));
        json_key(j, "type_id"), json_int(j, t->type);
        json_key(j, "shape");
        json_begin_array(j);
        for (uint32_t d = 0; d < t->n_dims; d++) json_int(j, t->ne[d]);
        json_end_array(j);
        json_key(j, "offset"), json_uint(j, t->offset);
        json_key(j, "size"), json_uint(j, t->size);
        json_key(j, "size_estimated"), json_bool(j, t->size_estimated);
        json_end_object(j);
    }
    json_end_array(j);
}

/* The ggufmap.inspect/1 document (docs/json.md). */
static void inspect_json(FILE *out, const ggufmap_model *m, unsigned flags) {
    json j;
    json_init(&j, out);
    json_begin_object(&j);
    json_key(&j, "schema");
    json_string(&j, "ggufmap.inspect/1");
    json_summary(&j, m);
    json_shards(&j, m);
    json_types(&j, m);
    json_key(&j, "metadata");
    json_begin_array(&j);
    const ggufmap_source *first = ggufmap_model_shard(m, 0);
    for (int64_t i = 0; i < ggufmap_source_n_kv(first); i++) json_kv(&j, ggufmap_source_kv(first, i), (flags & GGUFMAP_REPORT_FULL));
    json_end_array(&j);
    json_tensors(&j, m, flags);
    json_end_object(&j);
    json_finish(&j);
}

void ggufmap_report_inspect(FILE *out, const ggufmap_model *m, unsigned flags) {
    if (flags & GGUFMAP_REPORT_JSON)
        inspect_json(out, m, flags);
    else
        inspect_text(out, m, flags);
}

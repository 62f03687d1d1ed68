/*
 * test_writer.c - the writer, read back by the reader: every value type,
 * every data source, alignments, sparse output, and the safety rules (never
 * overwrite, nothing left behind on failure).
 */
#include <errno.h>
#include <math.h>

#include "check.h"
#include "scratch.h"

static const ggufmap_kv *kv_of(const ggufmap_source *s, const char *key) {
    return ggufmap_source_find_kv(s, key);
}

static void test_every_value_type(void) {
    char path[600];
    scratch_path(path, sizeof path, "values.gguf");
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    CHECK(ggufmap_writer_add_u8(w, "v.u8", 200) == 0);
    CHECK(ggufmap_writer_add_i8(w, "v.i8", -100) == 0);
    CHECK(ggufmap_writer_add_u16(w, "v.u16", 65000) == 0);
    CHECK(ggufmap_writer_add_i16(w, "v.i16", -32000) == 0);
    CHECK(ggufmap_writer_add_u32(w, "v.u32", 4000000000u) == 0);
    CHECK(ggufmap_writer_add_i32(w, "v.i32", -2000000000) == 0);
    CHECK(ggufmap_writer_add_u64(w, "v.u64", 18000000000000000000ull) == 0);
    CHECK(ggufmap_writer_add_i64(w, "v.i64", -9000000000000000000ll) == 0);
    CHECK(ggufmap_writer_add_f32(w, "v.f32", 0.25f) == 0);
    CHECK(ggufmap_writer_add_f64(w, "v.f64", -1e300) == 0);
    CHECK(ggufmap_writer_add_bool(w, "v.bool", 1) == 0);
    CHECK(ggufmap_writer_add_string(w, "v.str", "h\xc3\xa9llo") == 0);
    int32_t ints[3] = {-1, 0, 7};
    CHECK(ggufmap_writer_add_array(w, "v.arr_i32", GGUFMAP_VALUE_INT32, 3, ints) == 0);
    float floats[2] = {1.5f, -2.0f};
    CHECK(ggufmap_writer_add_array(w, "v.arr_f32", GGUFMAP_VALUE_FLOAT32, 2, floats) == 0);
    CHECK(ggufmap_writer_add_array(w, "v.arr_empty", GGUFMAP_VALUE_UINT8, 0, NULL) == 0);
    const char *strs[3] = {"a", "", "ccc"};
    CHECK(ggufmap_writer_add_string_array(w, "v.arr_str", 3, strs) == 0);
    CHECK(ggufmap_writer_add_u8(w, "v.u8", 1) == GGUFMAP_EINVAL);   /* duplicate key */
    CHECK(ggufmap_writer_add_u8(w, "", 1) == GGUFMAP_EINVAL);       /* empty key */
    CHECK(ggufmap_writer_add_array(w, "v.nested", GGUFMAP_VALUE_ARRAY, 0, NULL) == GGUFMAP_EINVAL);
    ggufmap_error err;
    CHECK_MSG(ggufmap_writer_write(w, path, 0, &err) == 0, "%s", err.message);
    ggufmap_writer_free(w);

    ggufmap_source *s;
    CHECK_MSG(ggufmap_source_open(path, 0, &s, &err) == 0, "%s", err.message);
    if (!s) return;
    CHECK(ggufmap_source_n_kv(s) == 16);
    CHECK(ggufmap_source_n_tensors(s) == 0);
    int64_t v;
    double d;
    const char *str;
    uint64_t len;
    CHECK(ggufmap_kv_int(kv_of(s, "v.u8"), &v) == 0 && v == 200);
    CHECK(ggufmap_kv_int(kv_of(s, "v.i8"), &v) == 0 && v == -100);
    CHECK(ggufmap_kv_int(kv_of(s, "v.u16"), &v) == 0 && v == 65000);
    CHECK(ggufmap_kv_int(kv_of(s, "v.i16"), &v) == 0 && v == -32000);
    CHECK(ggufmap_kv_int(kv_of(s, "v.u32"), &v) == 0 && v == 4000000000ll);
    CHECK(ggufmap_kv_int(kv_of(s, "v.i32"), &v) == 0 && v == -2000000000);
    CHECK(ggufmap_kv_int(kv_of(s, "v.u64"), &v) == GGUFMAP_EINVAL); /* above INT64_MAX */
    CHECK(ggufmap_kv_float(kv_of(s, "v.u64"), &d) == 0 && d == 18000000000000000000.0);
    CHECK(ggufmap_kv_int(kv_of(s, "v.i64"), &v) == 0 && v == -9000000000000000000ll);
    CHECK(ggufmap_kv_float(kv_of(s, "v.f32"), &d) == 0 && d == 0.25);
    CHECK(ggufmap_kv_float(kv_of(s, "v.f64"), &d) == 0 && d == -1e300);
    CHECK(ggufmap_kv_int(kv_of(s, "v.bool"), &v) == 0 && v == 1);
    CHECK(kv_of(s, "v.bool")->type == GGUFMAP_VALUE_BOOL);
    CHECK(ggufmap_kv_string(kv_of(s, "v.str"), &str, &len) == 0 && len == 6 && memcmp(str, "h\xc3\xa9llo", 6) == 0);
    CHECK(ggufmap_kv_string(kv_of(s, "v.u8"), &str, &len) == GGUFMAP_EINVAL);
    const ggufmap_kv *a = kv_of(s, "v.arr_i32");
    CHECK(a->type == GGUFMAP_VALUE_ARRAY && a->elem_type == GGUFMAP_VALUE_INT32 && a->count == 3);
    CHECK(ggufmap_kv_array_int(a, 0, &v) == 0 && v == -1);
    CHECK(ggufmap_kv_array_int(a, 2, &v) == 0 && v == 7);
    CHECK(ggufmap_kv_array_int(a, 3, &v) == GGUFMAP_EINVAL);
    a = kv_of(s, "v.arr_f32");
    CHECK(ggufmap_kv_array_float(a, 1, &d) == 0 && d == -2.0);
    CHECK(kv_of(s, "v.arr_empty")->count == 0);
    a = kv_of(s, "v.arr_str");
    uint64_t cursor = 0;
    int n = 0;
    const char *want[3] = {"a", "", "ccc"};
    while (ggufmap_kv_array_next_string(a, &cursor, &str, &len) == 0) {
        CHECK(n < 3 && len == strlen(want[n]) && memcmp(str, want[n], len) == 0);
        n++;
    }
    CHECK(n == 3);
    CHECK(ggufmap_source_find_kv(s, "v.missing") == NULL);
    CHECK(ggufmap_kv_key_is(kv_of(s, "v.u8"), "v.u8"));
    ggufmap_source_free(s);
}

/* Tensors from every data source, at several alignments, read back byte for byte. */
static void test_tensors(uint32_t alignment, uint32_t version) {
    char path[600], src_path[600], name[64];
    snprintf(name, sizeof name, "tensors-%u-v%u.gguf", alignment, version);
    scratch_path(path, sizeof path, name);
    scratch_path(src_path, sizeof src_path, "source.bin");

    uint8_t file_bytes[4096];
    for (size_t i = 0; i < sizeof file_bytes; i++) file_bytes[i] = pattern_byte(99, i);
    CHECK(spit(src_path, file_bytes, sizeof file_bytes) == 0);
    int fd = open(src_path, O_RDONLY);

    static uint8_t buffer[6 * 18];
    for (size_t i = 0; i < sizeof buffer; i++) buffer[i] = pattern_byte(7, i);

    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    CHECK(ggufmap_writer_set_version(w, version) == 0);
    CHECK(ggufmap_writer_set_alignment(w, alignment) == 0);
    if (alignment != 32) CHECK(ggufmap_writer_add_u32(w, "general.alignment", alignment) == 0);
    int64_t ne_q4[2] = {64, 3};         /* q4_0: 2 blocks x 3 rows = 108 bytes */
    int64_t ne_f32[1] = {33};           /* 132 bytes: not a multiple of any alignment */
    int64_t ne_f16[3] = {8, 4, 2};
    int64_t ne_big[2] = {1024, 300};    /* f32, 1.2 MB: crosses the 1 MiB copy chunk */
    ggufmap_data dbuf = {.kind = GGUFMAP_DATA_BUFFER, .buffer = buffer};
    ggufmap_data dfile = {.kind = GGUFMAP_DATA_FILE, .fd = fd, .file_offset = 100};
    ggufmap_data dzero = {.kind = GGUFMAP_DATA_ZEROS};
    ggufmap_data dcb = pattern_data(3);
    CHECK(ggufmap_writer_add_tensor(w, "q4", 2, ne_q4, 2, &dbuf) == 0);
    CHECK(ggufmap_writer_add_tensor(w, "f32", 1, ne_f32, 0, &dfile) == 0);
    CHECK(ggufmap_writer_add_tensor(w, "zeros", 3, ne_f16, 1, &dzero) == 0);
    CHECK(ggufmap_writer_add_tensor(w, "big", 2, ne_big, 0, &dcb) == 0);
    CHECK(ggufmap_writer_add_tensor(w, "big", 2, ne_big, 0, &dcb) == GGUFMAP_EINVAL);          /* duplicate */
    int64_t bad_row[1] = {33};
    CHECK(ggufmap_writer_add_tensor(w, "bad", 1, bad_row, 2, &dzero) == GGUFMAP_EINVAL);       /* 33 % 32 */
    CHECK(ggufmap_writer_add_tensor(w, "bad", 1, bad_row, 4, &dzero) == GGUFMAP_EINVAL);       /* retired type */
    CHECK(ggufmap_writer_add_tensor(w, "0123456789012345678901234567890123456789012345678901234567890123", 1,
                                    bad_row, 0, &dzero) == GGUFMAP_EINVAL);                       /* 64 bytes */
    CHECK(ggufmap_writer_set_alignment(w, 64) == GGUFMAP_EINVAL); /* after tensors */
    uint64_t expect_size = ggufmap_writer_file_size(w);
    ggufmap_error err;
    CHECK_MSG(ggufmap_writer_write(w, path, 0, &err) == 0, "%s", err.message);
    CHECK((uint64_t)file_size_of(path) == expect_size);

    ggufmap_source *s;
    CHECK_MSG(ggufmap_source_open(path, 0, &s, &err) == 0, "%s", err.message);
    if (s) {
        const uint8_t *bytes = ggufmap_source_bytes(s);
        CHECK(ggufmap_source_alignment(s) == alignment);
        CHECK(ggufmap_source_version(s) == version);
        CHECK(ggufmap_source_data_offset(s) % alignment == 0);
        CHECK(ggufmap_source_n_tensors(s) == 4);
        for (int64_t i = 0; i < 4; i++) {
            const ggufmap_tensor *t = ggufmap_source_tensor(s, i);
            CHECK(t->offset == ggufmap_writer_tensor_offset(w, i));
            CHECK(t->offset % alignment == 0);
        }
        const ggufmap_tensor *t = ggufmap_source_tensor(s, ggufmap_source_find_tensor(s, "q4"));
        CHECK(t->size == sizeof buffer && memcmp(bytes + t->offset, buffer, sizeof buffer) == 0);
        CHECK(t->n_dims == 2 && t->ne[0] == 64 && t->ne[1] == 3 && t->ne[2] == 1);
        t = ggufmap_source_tensor(s, ggufmap_source_find_tensor(s, "f32"));
        CHECK(t->size == 132 && memcmp(bytes + t->offset, file_bytes + 100, 132) == 0);
        t = ggufmap_source_tensor(s, ggufmap_source_find_tensor(s, "zeros"));
        int zero = 1;
        for (uint64_t k = 0; k < t->size; k++) zero &= bytes[t->offset + k] == 0;
        CHECK(t->size == 8 * 4 * 2 * 2 && zero);
        t = ggufmap_source_tensor(s, ggufmap_source_find_tensor(s, "big"));
        int same = 1;
        for (uint64_t k = 0; k < t->size; k++) same &= bytes[t->offset + k] == pattern_byte(3, k);
        CHECK(t->size == 1024 * 300 * 4 && same);
        CHECK(ggufmap_source_find_tensor(s, "nope") == -1);
        ggufmap_source_free(s);
    }
    ggufmap_writer_free(w);
    close(fd);
}

static int failing_fill(void *ctx, uint64_t offset, void *dst, size_t len) {
    (void)ctx;
    memset(dst, 1, len);
    return offset > 0 ? -1 : 0; /* fails on the second chunk */
}

static void test_safety(void) {
    char path[600];
    scratch_path(path, sizeof path, "safe.gguf");
    int64_t ne[1] = {1 << 20}; /* 4 MiB of f32: several chunks */
    ggufmap_data d = pattern_data(1);
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    ggufmap_writer_add_string(w, "general.architecture", "test");
    ggufmap_writer_add_tensor(w, "t", 1, ne, 0, &d);
    ggufmap_error err;
    CHECK(ggufmap_writer_write(w, path, 0, &err) == 0);
    size_t len1, len2;
    uint8_t *before = slurp(path, &len1);
    int entries = scratch_count();
    /* A second write to the same path is refused and changes nothing. */
    CHECK(ggufmap_writer_write(w, path, 0, &err) == GGUFMAP_EEXIST);
    CHECK(strstr(err.message, path) != NULL);
    uint8_t *after = slurp(path, &len2);
    CHECK(before && after && len1 == len2 && memcmp(before, after, len1) == 0);
    CHECK(scratch_count() == entries);
    free(before);
    free(after);
    ggufmap_writer_free(w);

    /* A failing source leaves neither the output nor a temporary file. */
    char path2[600];
    scratch_path(path2, sizeof path2, "fails.gguf");
    ggufmap_data bad = {.kind = GGUFMAP_DATA_CALLBACK, .fill = failing_fill};
    ggufmap_writer_new(&w);
    ggufmap_writer_add_tensor(w, "t", 1, ne, 0, &bad);
    CHECK(ggufmap_writer_write(w, path2, 0, &err) == GGUFMAP_EIO);
    CHECK(strstr(err.message, "'t'") != NULL);
    CHECK(file_size_of(path2) == -1);
    CHECK(scratch_count() == entries);
    ggufmap_writer_free(w);

    /* A folder that does not exist: a clear error, nothing created. */
    ggufmap_writer *w3 = NULL;
    ggufmap_writer_new(&w3);
    char path3[700];
    snprintf(path3, sizeof path3, "%s/no-such-dir/x.gguf", scratch_dir);
    CHECK(ggufmap_writer_write(w3, path3, 0, &err) != 0 && strstr(err.message, "no-such-dir") != NULL);
    ggufmap_writer_free(w3);
}

static void test_sparse(void) {
    char path[600];
    scratch_path(path, sizeof path, "sparse.gguf");
    int64_t ne[2] = {4096, 8192}; /* 128 MiB of f32 zeros */
    ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    ggufmap_data p = pattern_data(5);
    int64_t small[1] = {64};
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    ggufmap_writer_add_tensor(w, "small", 1, small, 0, &p);
    ggufmap_writer_add_tensor(w, "hole", 2, ne, 0, &z);
    ggufmap_writer_add_tensor(w, "tail", 1, small, 0, &p);
    ggufmap_error err;
    CHECK_MSG(ggufmap_writer_write(w, path, GGUFMAP_WRITE_SPARSE, &err) == 0, "%s", err.message);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    CHECK((uint64_t)st.st_size == ggufmap_writer_file_size(w));
    CHECK_MSG((long long)st.st_blocks * 512 < 8ll << 20, "allocated %lld bytes", (long long)st.st_blocks * 512);
    ggufmap_source *s;
    CHECK(ggufmap_source_open(path, 0, &s, &err) == 0);
    if (s) {
        const ggufmap_tensor *t = ggufmap_source_tensor(s, 2);
        CHECK(ggufmap_source_bytes(s)[t->offset] == pattern_byte(5, 0));
        ggufmap_source_free(s);
    }
    ggufmap_writer_free(w);
}

/* Many tensors: the name index survives the records' reallocation. */
static void test_many_tensors(void) {
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    int64_t ne[1] = {8};
    char name[64];
    int ok = 1;
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "blk.%d.weight", i);
        ok &= ggufmap_writer_add_tensor(w, name, 1, ne, 0, &z) == GGUFMAP_OK;
    }
    CHECK(ok);
    int dup_refused = 1;
    for (int i = 0; i < 1000; i += 37) {
        snprintf(name, sizeof name, "blk.%d.weight", i);
        dup_refused &= ggufmap_writer_add_tensor(w, name, 1, ne, 0, &z) == GGUFMAP_EINVAL;
    }
    CHECK(dup_refused);
    CHECK(ggufmap_writer_n_tensors(w) == 1000);
    CHECK(ggufmap_writer_tensor_offset(w, 999) - ggufmap_writer_tensor_offset(w, 0) == 999 * 32);
    ggufmap_writer_free(w);
}

/* Keys that hold a NUL byte are valid for ggml (it keeps the whole string):
 * the writer copies them byte for byte, and refuses only an exact duplicate. */
static void test_nul_keys(void) {
    char path[600];
    scratch_path(path, sizeof path, "nul-keys.gguf");
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    static const char k1[] = "general.alignment\0xyz", k2[] = "general.alignment\0abc";
    uint8_t v[4] = {64, 0, 0, 0};
    CHECK(ggufmap_writer_add_raw(w, k1, sizeof k1 - 1, GGUFMAP_VALUE_UINT32, GGUFMAP_VALUE_UINT32, 1, v, 4) == 0);
    CHECK(ggufmap_writer_add_raw(w, k2, sizeof k2 - 1, GGUFMAP_VALUE_UINT32, GGUFMAP_VALUE_UINT32, 1, v, 4) == 0);
    CHECK(ggufmap_writer_add_raw(w, k1, sizeof k1 - 1, GGUFMAP_VALUE_UINT32, GGUFMAP_VALUE_UINT32, 1, v, 4) ==
          GGUFMAP_EINVAL);
    CHECK(ggufmap_writer_add_u32(w, "general.alignment", 64) == 0);
    CHECK(ggufmap_writer_set_alignment(w, 64) == 0);
    int64_t ne[1] = {8};
    ggufmap_data d = pattern_data(3);
    CHECK(ggufmap_writer_add_tensor(w, "t", 1, ne, 0, &d) == 0);
    ggufmap_error err;
    CHECK_MSG(ggufmap_writer_write(w, path, 0, &err) == 0, "%s", err.message);
    ggufmap_writer_free(w);
    ggufmap_source *s = NULL;
    CHECK_MSG(ggufmap_source_open(path, 0, &s, &err) == 0, "%s", err.message);
    if (!s) return;
    CHECK(ggufmap_source_n_kv(s) == 3);
    const ggufmap_kv *a = ggufmap_source_kv(s, 0), *b = ggufmap_source_kv(s, 1);
    CHECK(a->key_len == sizeof k1 - 1 && memcmp(a->key, k1, sizeof k1 - 1) == 0);
    CHECK(b->key_len == sizeof k2 - 1 && memcmp(b->key, k2, sizeof k2 - 1) == 0);
    CHECK(ggufmap_source_find_kv(s, "general.alignment") == ggufmap_source_kv(s, 0));
    CHECK(ggufmap_source_alignment(s) == 64);
    ggufmap_source_free(s);
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_writer");
    test_nul_keys();
    test_every_value_type();
    test_tensors(32, 3);
    test_tensors(64, 3);
    test_tensors(4096, 2);
    test_tensors(1, 3);
    test_safety();
    test_sparse();
    test_many_tensors();
    return check_summary();
}

/*
 * test_source.c - the reader's verdicts and messages on hand-built bytes.
 *
 * Each case is built byte by byte (not through the writer, which refuses to
 * write most of them) and checks that the reader refuses it with a message
 * naming the file, the byte offset and the key or tensor.  Agreement with
 * llama.cpp itself on such files is tests/corpus's job.
 */
#include "check.h"
#include "scratch.h"

/* ---- a tiny byte builder ---- */
typedef struct buf {
    uint8_t p[1 << 16];
    size_t n;
} buf;

static void u32(buf *b, uint32_t v) {
    for (int i = 0; i < 4; i++) b->p[b->n++] = (uint8_t)(v >> (8 * i));
}
static void u64(buf *b, uint64_t v) {
    for (int i = 0; i < 8; i++) b->p[b->n++] = (uint8_t)(v >> (8 * i));
}
static void str(buf *b, const char *s) {
    u64(b, strlen(s));
    memcpy(b->p + b->n, s, strlen(s));
    b->n += strlen(s);
}
/* A string of len bytes that may hold NULs. */
static void str_n(buf *b, const char *s, size_t len) {
    u64(b, len);
    memcpy(b->p + b->n, s, len);
    b->n += len;
}
static void header(buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b->n = 0;
    memcpy(b->p, "GGUF", 4);
    b->n = 4;
    u32(b, version);
    u64(b, n_tensors);
    u64(b, n_kv);
}
static void kv_u32(buf *b, const char *key, uint32_t v) {
    str(b, key);
    u32(b, GGUFMAP_VALUE_UINT32);
    u32(b, v);
}
/* A tensor info; the caller lays out the data. */
static void info(buf *b, const char *name, uint32_t n_dims, const int64_t *ne, int32_t type, uint64_t offset) {
    str(b, name);
    u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) u64(b, (uint64_t)ne[i]);
    u32(b, (uint32_t)type);
    u64(b, offset);
}
static void pad_to(buf *b, size_t align, size_t extra) {
    while (b->n % align) b->p[b->n++] = 0;
    for (size_t i = 0; i < extra; i++) b->p[b->n++] = 0x5a;
}

static char path[600];

/* Writes b, opens it with flags; returns the status and leaves the message in err. */
static int try_open(const buf *b, unsigned flags, ggufmap_error *err, ggufmap_source **keep) {
    spit(path, b->p, b->n);
    ggufmap_source *s = NULL;
    int rc = ggufmap_source_open(path, flags, &s, err);
    if (keep)
        *keep = s;
    else
        ggufmap_source_free(s);
    return rc;
}

/* Expects a refusal whose message has the path and every given fragment. */
static void expect_reject(const char *what, const buf *b, const char *frag1, const char *frag2) {
    ggufmap_error err;
    int rc = try_open(b, 0, &err, NULL);
    CHECK_MSG(rc == GGUFMAP_EFORMAT, "%s: status %d (%s)", what, rc, err.message);
    CHECK_MSG(strstr(err.message, path) != NULL, "%s: no path in '%s'", what, err.message);
    CHECK_MSG(!frag1 || strstr(err.message, frag1), "%s: no '%s' in '%s'", what, frag1, err.message);
    CHECK_MSG(!frag2 || strstr(err.message, frag2), "%s: no '%s' in '%s'", what, frag2, err.message);
}

/* Keys holding a NUL byte, looked up as ggml's gguf_find_key (strcmp: the
 * first key whose C string matches), duplicates found byte for byte. */
static void nul_key_cases(buf *b) {
    static const char align_nul[] = "general.alignment\0xyz";
    const size_t align_nul_len = sizeof align_nul - 1;
    int64_t ne1[1] = {8};
    ggufmap_error err;
    ggufmap_source *s = NULL;

    /* general.alignment\0xyz = 64 sets the alignment: the data section
     * starts at 128, not at 96 as with the default 32. */
    header(b, 3, 1, 1);
    str_n(b, align_nul, align_nul_len);
    u32(b, GGUFMAP_VALUE_UINT32);
    u32(b, 64);
    info(b, "t", 1, ne1, 0, 0);
    pad_to(b, 64, 64);
    CHECK_MSG(try_open(b, 0, &err, &s) == 0, "%s", err.message);
    if (s) {
        CHECK_MSG(ggufmap_source_alignment(s) == 64, "alignment %u", ggufmap_source_alignment(s));
        CHECK(ggufmap_source_data_offset(s) % 64 == 0);
        CHECK(ggufmap_source_find_kv(s, "general.alignment") == ggufmap_source_kv(s, 0));
        CHECK(ggufmap_kv_key_is(ggufmap_source_kv(s, 0), "general.alignment"));
        CHECK(!ggufmap_kv_key_is(ggufmap_source_kv(s, 0), "general.alignmen"));
        ggufmap_source_free(s);
    }
    /* Typed u64, str or arr it is refused as the exact key is. */
    static const int32_t bad_types[3] = {GGUFMAP_VALUE_UINT64, GGUFMAP_VALUE_STRING, GGUFMAP_VALUE_ARRAY};
    for (int k = 0; k < 3; k++) {
        header(b, 3, 0, 1);
        str_n(b, align_nul, align_nul_len);
        u32(b, (uint32_t)bad_types[k]);
        if (bad_types[k] == GGUFMAP_VALUE_ARRAY) {
            u32(b, GGUFMAP_VALUE_UINT32);
            u64(b, 1);
            u32(b, 32);
        } else {
            u64(b, bad_types[k] == GGUFMAP_VALUE_STRING ? 0 : 32);
        }
        expect_reject("NUL alignment key of another type", b, "general.alignment", "u32");
    }
    /* Several keys with the same C string: distinct, and the first wins. */
    header(b, 3, 0, 3);
    str_n(b, "a.b\0one", 7);
    u32(b, GGUFMAP_VALUE_UINT32);
    u32(b, 1);
    kv_u32(b, "a.b", 2);
    str_n(b, "a.b\0two", 7);
    u32(b, GGUFMAP_VALUE_UINT32);
    u32(b, 3);
    CHECK_MSG(try_open(b, 0, &err, &s) == 0, "%s", err.message);
    if (s) {
        CHECK(ggufmap_source_find_kv(s, "a.b") == ggufmap_source_kv(s, 0));
        CHECK(ggufmap_source_find_kv(s, "a") == NULL);
        ggufmap_source_free(s);
    }
    /* ... but the same bytes twice are a duplicate. */
    header(b, 3, 0, 2);
    str_n(b, "a.b\0one", 7);
    u32(b, GGUFMAP_VALUE_UINT32);
    u32(b, 1);
    str_n(b, "a.b\0one", 7);
    u32(b, GGUFMAP_VALUE_UINT32);
    u32(b, 2);
    expect_reject("duplicate NUL key", b, "duplicate", "a.b\\x00one");
}

/* A FIFO (or any file that is not a regular file) is refused at once, not
 * read: opening a FIFO for reading would wait for a writer forever.  alarm()
 * ends the test if the open blocks. */
static void special_file_cases(void) {
    char fifo[700];
    scratch_path(fifo, sizeof fifo, "fifo.gguf");
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0);
    alarm(20);
    ggufmap_source *s = NULL;
    ggufmap_error err;
    int rc = ggufmap_source_open(fifo, 0, &s, &err);
    alarm(0);
    CHECK_MSG(rc == GGUFMAP_EIO && s == NULL && strstr(err.message, "not a regular file"), "FIFO: %d %s", rc,
              err.message);
    unlink(fifo);
    CHECK(ggufmap_source_open("/dev/null", 0, &s, &err) == GGUFMAP_EIO && s == NULL);
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_source");
    scratch_path(path, sizeof path, "case.gguf");
    static buf b;
    ggufmap_error err;
    int64_t ne1[1] = {8};

    /* The valid base: one KV, one f32 tensor of 8 elements. */
    header(&b, 3, 1, 1);
    kv_u32(&b, "general.x", 1);
    info(&b, "t", 1, ne1, 0, 0);
    pad_to(&b, 32, 32);
    ggufmap_source *s;
    CHECK_MSG(try_open(&b, 0, &err, &s) == 0, "%s", err.message);
    if (s) {
        CHECK(ggufmap_source_data_offset(s) == 96); /* 24 header + 25 pair + 33 info, padded */
        CHECK(ggufmap_source_tensor(s, 0)->offset == 96 && ggufmap_source_tensor(s, 0)->size == 32);
        CHECK(ggufmap_source_kv(s, 0)->offset == 24);
        ggufmap_source_free(s);
    }

    b.n = 3;
    expect_reject("short", &b, "offset 0", "too short");
    header(&b, 3, 0, 0);
    memcpy(b.p, "GGUG", 4);
    expect_reject("magic", &b, "offset 0", "GGUG");
    header(&b, 1, 0, 0);
    expect_reject("v1", &b, "offset 4", "version 1");
    header(&b, 4, 0, 0);
    expect_reject("v4", &b, "offset 4", "version 4");
    header(&b, 0x03000000u, 0, 0);
    expect_reject("big-endian", &b, "offset 4", "big-endian");
    header(&b, 3, (uint64_t)1 << 62, 0);
    expect_reject("huge tensor count", &b, "offset 8", "cannot fit");
    header(&b, 3, 0, (uint64_t)-5);
    expect_reject("negative kv count", &b, "offset 16", "negative");

    header(&b, 2, 0, 1);
    str(&b, "");
    u32(&b, GGUFMAP_VALUE_UINT32);
    u32(&b, 7);
    expect_reject("empty key", &b, "offset 24", "key 0 is empty");

    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    kv_u32(&b, "a.b", 2);
    expect_reject("duplicate key", &b, "offset 43", "'a.b'");

    header(&b, 3, 0, 1);
    str(&b, "k.nested");
    u32(&b, GGUFMAP_VALUE_ARRAY);
    u32(&b, GGUFMAP_VALUE_ARRAY);
    u64(&b, 0);
    expect_reject("nested array", &b, "'k.nested'", "nested");

    header(&b, 3, 0, 1);
    str(&b, "k.s");
    u32(&b, GGUFMAP_VALUE_STRING);
    u64(&b, 1000);
    expect_reject("string past EOF", &b, "offset 39", "'k.s'");

    header(&b, 3, 0, 1);
    str(&b, "k.arr");
    u32(&b, GGUFMAP_VALUE_ARRAY);
    u32(&b, GGUFMAP_VALUE_UINT64);
    u64(&b, (uint64_t)1 << 29);
    expect_reject("array past EOF", &b, "'k.arr'", "bytes left");

    header(&b, 3, 0, 1);
    str(&b, "general.alignment");
    u32(&b, GGUFMAP_VALUE_UINT64);
    u64(&b, 64);
    expect_reject("alignment u64", &b, "general.alignment", "u32");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 0);
    expect_reject("alignment 0", &b, "general.alignment", "power of 2");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 48);
    expect_reject("alignment 48", &b, "general.alignment", "power of 2");

    int64_t ne5[5] = {1, 1, 1, 1, 1};
    header(&b, 3, 1, 0);
    info(&b, "five", 5, ne5, 0, 0);
    expect_reject("n_dims 5", &b, "'five'", "5 dimensions");

    int64_t neg[2] = {8, -3};
    header(&b, 3, 1, 0);
    info(&b, "neg", 2, neg, 0, 0);
    expect_reject("negative dim", &b, "'neg'", "dimension 1 is -3");

    int64_t big[2] = {5, (int64_t)1 << 62}; /* wraps to 2^62 > 0, as in ggml */
    header(&b, 3, 1, 0);
    info(&b, "big", 2, big, 0, 0);
    expect_reject("element overflow", &b, "'big'", "too many elements");

    header(&b, 3, 1, 0);
    info(&b, "t", 1, ne1, 99, 0);
    pad_to(&b, 32, 64);
    expect_reject("unknown type", &b, "'t'", "unknown ggml type 99");
    /* ... which --lenient lists, sized from the end of the file. */
    CHECK(try_open(&b, GGUFMAP_OPEN_LENIENT, &err, &s) == 0);
    if (s) {
        const ggufmap_tensor *t = ggufmap_source_tensor(s, 0);
        CHECK(t->size_estimated && t->size == 64 && t->type == 99);
        ggufmap_source_free(s);
    }
    header(&b, 3, 2, 0);
    info(&b, "r", 1, ne1, 31, 0);
    info(&b, "u", 1, ne1, 0, 96);
    pad_to(&b, 32, 128);
    expect_reject("retired type", &b, "'r'", "removed");
    CHECK(try_open(&b, GGUFMAP_OPEN_LENIENT, &err, &s) == 0);
    if (s) {
        CHECK(ggufmap_source_tensor(s, 0)->size == 96 && ggufmap_source_tensor(s, 0)->size_estimated);
        CHECK(ggufmap_source_tensor(s, 1)->size == 32 && !ggufmap_source_tensor(s, 1)->size_estimated);
        ggufmap_source_free(s);
    }

    int64_t q4row[1] = {33};
    header(&b, 3, 1, 0);
    info(&b, "q", 1, q4row, 2, 0);
    expect_reject("row not block multiple", &b, "'q'", "block size 32");

    header(&b, 3, 1, 0);
    info(&b, "0123456789012345678901234567890123456789012345678901234567890123", 1, ne1, 0, 0);
    expect_reject("name 64 bytes", &b, "offset 24", "at most 63");

    header(&b, 3, 2, 0);
    info(&b, "dup", 1, ne1, 0, 0);
    info(&b, "dup", 1, ne1, 0, 32);
    pad_to(&b, 32, 64);
    expect_reject("duplicate tensor", &b, "'dup'", "duplicate");

    header(&b, 3, 2, 0);
    info(&b, "a", 1, ne1, 0, 0);
    info(&b, "b", 1, ne1, 0, 64); /* should be 32 */
    pad_to(&b, 32, 128);
    expect_reject("offsets not packed", &b, "'b'", "expected 32");

    header(&b, 3, 1, 0);
    info(&b, "t", 1, ne1, 0, 0);
    pad_to(&b, 32, 16); /* half the data */
    expect_reject("data past EOF", &b, "'t'", "not within the file");
    CHECK(try_open(&b, GGUFMAP_OPEN_HEADER_ONLY, &err, NULL) == 0);

    header(&b, 3, 1, 0);
    info(&b, "t", 1, ne1, 0, 0); /* no padding at all: data start past EOF */
    expect_reject("no data section", &b, "data section", NULL);

    /* Truncation at every length of the valid base never reads out of bounds. */
    header(&b, 3, 1, 1);
    kv_u32(&b, "general.x", 1);
    info(&b, "t", 1, ne1, 0, 0);
    pad_to(&b, 32, 32);
    size_t full = b.n;
    int refused = 0;
    for (size_t cut = 0; cut < full; cut++) {
        b.n = cut;
        refused += try_open(&b, 0, &err, NULL) == GGUFMAP_EFORMAT;
    }
    CHECK_MSG(refused == (int)full, "refused %d of %zu truncations", refused, full);

    nul_key_cases(&b);
    special_file_cases();

    /* Not a regular file, and a missing file. */
    CHECK(ggufmap_source_open(scratch_dir, 0, &s, &err) == GGUFMAP_EIO && s == NULL);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/missing.gguf", scratch_dir);
    CHECK(ggufmap_source_open(missing, 0, &s, &err) == GGUFMAP_ENOTFOUND && strstr(err.message, "missing.gguf"));
    return check_summary();
}

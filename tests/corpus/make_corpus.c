/*
 * make_corpus.c - ggufmap-corpus OUTDIR
 *
 * Writes the reader-agreement corpus: small llama models that llama.cpp
 * v0.5.0 loads (built with ggufmap's writer), and mutants of them that break
 * one rule of the GGUF format each (bytes patched, records spliced in, files
 * cut short, shards removed).  Each case is OUTDIR/NAME.gguf or a split set
 * OUTDIR/NAME-0000k-of-0000n.gguf, and OUTDIR/cases.tsv lists
 *
 *     NAME <TAB> PATH-TO-LOAD <TAB> EXPECTED
 *
 * EXPECTED is "accept", "reject" or "arch" (a file llama.cpp refuses for its
 * architecture, not its format: ggufmap's reader accepts it and the check
 * does not count it).  It documents the intent of the mutation only; the
 * check compares our reader with llama.cpp, not with this column.
 *
 * OUTDIR must not exist or be empty: ggufmap's writer never overwrites.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corpus.h"
#include "ggufmap/ggufmap.h"

/* ------------------------------------------------------------------------ */
/* The tiny llama model                                                      */
/* ------------------------------------------------------------------------ */

enum { N_EMBD = 64, N_FF = 128, N_HEAD = 4, N_LAYER = 2, N_VOCAB = 64, N_CTX = 256 };
enum { MAX_TENSORS = 32, MAX_RECORDS = 96 };

typedef struct tinfo {
    char name[64];
    uint32_t n_dims;
    int64_t ne[2];
    int32_t type;
} tinfo;

/* What to build.  Zero means the default everywhere. */
typedef struct spec {
    uint32_t version;           /* 0: 3 */
    uint32_t alignment;         /* 0: 32 */
    int explicit_align;         /* write general.alignment even when it is 32 */
    int tied;                   /* no output.weight (llama ties it to token_embd) */
    int norm_last;              /* output_norm.weight after output.weight */
    int32_t matrix_type;        /* ggml type of the 2-D blk weights (0: f32) */
    int all_types;              /* one extra key of every value type, and arrays of each */
    int empty_values;           /* empty arrays and an empty string */
    int odd_string;             /* a string with an embedded NUL and non-UTF-8 bytes */
    int big_string_array;       /* a 1000-element string array */
    uint32_t pad_string_len;    /* a string key "test.pad" of this many bytes (0: none) */
    int extra_tensor;           /* arch: a tensor llama does not use */
    int omit_output_norm;       /* arch: a tensor llama needs is missing */
    /* splits */
    uint32_t n_shards;          /* 0 or 1: one file */
    uint32_t name_count;        /* the count in the shard file names (0: n_shards) */
    int split_keys_single;      /* one file that still carries split.no=0, split.count=1 */
    int split_count_value;      /* split.count written (0: n_shards, or 1 for split_keys_single) */
    int split_count_u32;        /* split.count typed u32 instead of u16 */
    int tensors_count_delta;    /* added to split.tensors.count */
    int tensors_count_u32;      /* split.tensors.count typed u32 instead of i32 */
    int bad_no_shard;           /* shard index+1 whose split.no is bad_no_value (0: none) */
    int bad_no_value;
    int omit_no_shard;          /* shard index (>= 1) without split.no (0: none) */
    int no_u32_shard;           /* shard index (>= 1) whose split.no is typed u32 (0: none) */
    int dup_across;             /* shard 1 repeats shard 0's first tensor name */
    /* keys written as KEY\0junk (NUL_KEY_* bits): ggml finds them as KEY */
    unsigned nul_keys;
    uint32_t align_decoy;       /* a second alignment key of this value after the first, NUL-ness swapped */
} spec;

enum {
    NUL_KEY_ALIGN = 1u << 0,      /* general.alignment */
    NUL_KEY_SPLIT_NO = 1u << 1,
    NUL_KEY_SPLIT_COUNT = 1u << 2,
    NUL_KEY_SPLIT_TENSORS = 1u << 3,
    NUL_KEY_ARCH = 1u << 4,       /* general.architecture and every llama.* key */
};

/* The bytes of key as spec s writes it: "\0junk" appended when s->nul_keys
 * has bit; returns the length. */
static size_t key_bytes(char *buf, size_t cap, const char *key, unsigned bit, const spec *s) {
    size_t n = (size_t)snprintf(buf, cap, "%s", key);
    if ((s->nul_keys & bit) && n + 5 < cap) {
        memcpy(buf + n, "\0junk", 5);
        n += 5;
    }
    return n;
}

static int model_tensors(const spec *s, tinfo *t) {
    int n = 0;
#define ADD(nm, nd, a, b, ty)                                                     \
    do {                                                                       \
        snprintf(t[n].name, sizeof t[n].name, "%s", nm);                       \
        t[n].n_dims = (nd);                                                    \
        t[n].ne[0] = (a);                                                      \
        t[n].ne[1] = (b);                                                      \
        t[n].type = (ty);                                                      \
        n++;                                                                   \
    } while (0)
    int32_t mt = s->matrix_type;
    char nm[64];
    ADD("token_embd.weight", 2, N_EMBD, N_VOCAB, 0);
    for (int l = 0; l < N_LAYER; l++) {
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);
        ADD(nm, 1, N_EMBD, 1, 0);
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", l);
        ADD(nm, 2, N_EMBD, N_EMBD, mt);
        snprintf(nm, sizeof nm, "blk.%d.attn_k.weight", l);
        ADD(nm, 2, N_EMBD, N_EMBD, mt);
        snprintf(nm, sizeof nm, "blk.%d.attn_v.weight", l);
        ADD(nm, 2, N_EMBD, N_EMBD, mt);
        snprintf(nm, sizeof nm, "blk.%d.attn_output.weight", l);
        ADD(nm, 2, N_EMBD, N_EMBD, mt);
        snprintf(nm, sizeof nm, "blk.%d.ffn_norm.weight", l);
        ADD(nm, 1, N_EMBD, 1, 0);
        snprintf(nm, sizeof nm, "blk.%d.ffn_gate.weight", l);
        ADD(nm, 2, N_EMBD, N_FF, mt);
        snprintf(nm, sizeof nm, "blk.%d.ffn_down.weight", l);
        ADD(nm, 2, N_FF, N_EMBD, mt);
        snprintf(nm, sizeof nm, "blk.%d.ffn_up.weight", l);
        ADD(nm, 2, N_EMBD, N_FF, mt);
    }
    if (s->norm_last && !s->tied) {
        ADD("output.weight", 2, N_EMBD, N_VOCAB, 0);
        if (!s->omit_output_norm) ADD("output_norm.weight", 1, N_EMBD, 1, 0);
    } else {
        if (!s->omit_output_norm) ADD("output_norm.weight", 1, N_EMBD, 1, 0);
        if (!s->tied) ADD("output.weight", 2, N_EMBD, N_VOCAB, 0);
    }
    if (s->extra_tensor) ADD("extra.weight", 1, N_EMBD, 1, 0);
#undef ADD
    return n;
}

/* Tensor data: non-zero bytes in [0x01, 0x3b].  Read as f32, f16 or the f16
 * scale and int8 quants of q8_0, every value is finite, positive and small. */
static int fill_data(void *ctx, uint64_t offset, void *dst, size_t len) {
    uint64_t seed = (uint64_t)(uintptr_t)ctx;
    uint8_t *p = dst;
    for (size_t i = 0; i < len; i++) {
        uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull ^ ((offset + i) * 0xBF58476D1CE4E5B9ull);
        x ^= x >> 29;
        x *= 0x94D049BB133111EBull;
        x ^= x >> 32;
        p[i] = (uint8_t)(1 + x % 0x3b);
    }
    return 0;
}

static const char *g_out;
static FILE *g_tsv;
static int g_cases;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "ggufmap-corpus: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static void check_rc(int rc, const char *what) {
    if (rc != GGUFMAP_OK) die("writer refused", what);
}

/* An integer or f32 key (value bits v, little-endian) named as key_bytes says. */
static void add_num(ggufmap_writer *w, const spec *s, const char *key, unsigned bit, int32_t type, uint64_t v) {
    char k[128];
    size_t kl = key_bytes(k, sizeof k, key, bit, s);
    uint8_t le[8];
    le_store(le, v, 8);
    check_rc(ggufmap_writer_add_raw(w, k, kl, type, type, 1, le, ggufmap_value_type_size(type)), key);
}

static void add_str(ggufmap_writer *w, const spec *s, const char *key, unsigned bit, const char *v) {
    char k[128];
    size_t kl = key_bytes(k, sizeof k, key, bit, s);
    cbuf enc = {0};
    cbuf_str(&enc, v, strlen(v));
    check_rc(ggufmap_writer_add_raw(w, k, kl, GGUFMAP_VALUE_STRING, GGUFMAP_VALUE_STRING, 1, enc.p, enc.n), key);
    cbuf_free(&enc);
}

static void add_alignment(ggufmap_writer *w, const spec *s, uint32_t align) {
    add_num(w, s, "general.alignment", NUL_KEY_ALIGN, GGUFMAP_VALUE_UINT32, align);
    if (s->align_decoy) {
        spec swapped = *s;
        swapped.nul_keys ^= NUL_KEY_ALIGN;
        add_num(w, &swapped, "general.alignment", NUL_KEY_ALIGN, GGUFMAP_VALUE_UINT32, s->align_decoy);
    }
}

static void add_extra_keys(ggufmap_writer *w, const spec *s) {
    if (s->all_types) {
        check_rc(ggufmap_writer_add_u8(w, "test.u8", 200), "u8");
        check_rc(ggufmap_writer_add_i8(w, "test.i8", -100), "i8");
        check_rc(ggufmap_writer_add_u16(w, "test.u16", 60000), "u16");
        check_rc(ggufmap_writer_add_i16(w, "test.i16", -30000), "i16");
        check_rc(ggufmap_writer_add_u32(w, "test.u32", 4000000000u), "u32");
        check_rc(ggufmap_writer_add_i32(w, "test.i32", -2000000000), "i32");
        check_rc(ggufmap_writer_add_f32(w, "test.f32", 3.5f), "f32");
        check_rc(ggufmap_writer_add_bool(w, "test.bool", 1), "bool");
        check_rc(ggufmap_writer_add_string(w, "test.string", "hello, gguf"), "string");
        check_rc(ggufmap_writer_add_u64(w, "test.u64", 18000000000000000000ull), "u64");
        check_rc(ggufmap_writer_add_i64(w, "test.i64", -9000000000000000000ll), "i64");
        check_rc(ggufmap_writer_add_f64(w, "test.f64", 2.718281828459045), "f64");
        static const uint8_t a_u8[3] = {1, 2, 3};
        static const int8_t a_i8[3] = {-1, 0, 1};
        static const uint16_t a_u16[3] = {1, 500, 65535};
        static const int16_t a_i16[3] = {-32768, 0, 32767};
        static const uint32_t a_u32[3] = {7, 8, 4294967295u};
        static const int32_t a_i32[3] = {-7, 8, 2147483647};
        static const float a_f32[3] = {0.5f, -1.25f, 1e-5f};
        static const uint8_t a_bool[3] = {1, 0, 1};
        static const uint64_t a_u64[3] = {1, 2, 18446744073709551615ull};
        static const int64_t a_i64[3] = {-1, 0, 9223372036854775807ll};
        static const double a_f64[3] = {0.25, -2.5, 1e300};
        static const char *const a_str[3] = {"a", "bc", ""};
        check_rc(ggufmap_writer_add_array(w, "test.arr_u8", GGUFMAP_VALUE_UINT8, 3, a_u8), "arr u8");
        check_rc(ggufmap_writer_add_array(w, "test.arr_i8", GGUFMAP_VALUE_INT8, 3, a_i8), "arr i8");
        check_rc(ggufmap_writer_add_array(w, "test.arr_u16", GGUFMAP_VALUE_UINT16, 3, a_u16), "arr u16");
        check_rc(ggufmap_writer_add_array(w, "test.arr_i16", GGUFMAP_VALUE_INT16, 3, a_i16), "arr i16");
        check_rc(ggufmap_writer_add_array(w, "test.arr_u32", GGUFMAP_VALUE_UINT32, 3, a_u32), "arr u32");
        check_rc(ggufmap_writer_add_array(w, "test.arr_i32", GGUFMAP_VALUE_INT32, 3, a_i32), "arr i32");
        check_rc(ggufmap_writer_add_array(w, "test.arr_f32", GGUFMAP_VALUE_FLOAT32, 3, a_f32), "arr f32");
        check_rc(ggufmap_writer_add_array(w, "test.arr_bool", GGUFMAP_VALUE_BOOL, 3, a_bool), "arr bool");
        check_rc(ggufmap_writer_add_array(w, "test.arr_u64", GGUFMAP_VALUE_UINT64, 3, a_u64), "arr u64");
        check_rc(ggufmap_writer_add_array(w, "test.arr_i64", GGUFMAP_VALUE_INT64, 3, a_i64), "arr i64");
        check_rc(ggufmap_writer_add_array(w, "test.arr_f64", GGUFMAP_VALUE_FLOAT64, 3, a_f64), "arr f64");
        check_rc(ggufmap_writer_add_string_array(w, "test.arr_str", 3, a_str), "arr str");
    }
    if (s->empty_values) {
        static const uint8_t dummy[1] = {0};
        static const char *const none[1] = {""};
        check_rc(ggufmap_writer_add_array(w, "test.empty_u8", GGUFMAP_VALUE_UINT8, 0, dummy), "empty u8");
        check_rc(ggufmap_writer_add_array(w, "test.empty_f64", GGUFMAP_VALUE_FLOAT64, 0, dummy), "empty f64");
        check_rc(ggufmap_writer_add_string_array(w, "test.empty_str", 0, none), "empty str");
        check_rc(ggufmap_writer_add_string(w, "test.empty_string", ""), "empty string");
    }
    if (s->odd_string) {
        static const char odd[] = "ab\0cd\xff\xfe\x80z";
        uint8_t enc[8 + sizeof odd - 1];
        le_store(enc, sizeof odd - 1, 8);
        memcpy(enc + 8, odd, sizeof odd - 1);
        check_rc(ggufmap_writer_add_raw(w, "test.odd_string", strlen("test.odd_string"), GGUFMAP_VALUE_STRING,
                                        GGUFMAP_VALUE_STRING, 1, enc, sizeof enc),
                 "odd string");
    }
    if (s->pad_string_len) {
        char *pad = malloc(s->pad_string_len + 1);
        if (!pad) die("out of memory", NULL);
        memset(pad, 'p', s->pad_string_len);
        pad[s->pad_string_len] = 0;
        check_rc(ggufmap_writer_add_string(w, "test.pad", pad), "pad");
        free(pad);
    }
    if (s->big_string_array) {
        enum { N = 1000 };
        static char store[N][16];
        static const char *ptrs[N];
        for (int i = 0; i < N; i++) {
            snprintf(store[i], sizeof store[i], "tok%04d", i);
            ptrs[i] = store[i];
        }
        check_rc(ggufmap_writer_add_string_array(w, "test.tokens", N, ptrs), "big string array");
    }
}

/* Writes shard k (of n; n == 1 for a single file) holding tensors [first, last). */
static void write_shard(const char *path, const spec *s, uint32_t k, uint32_t n, const tinfo *t, int n_total,
                        int first, int last) {
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    if (!w) die("out of memory", NULL);
    uint32_t align = s->alignment ? s->alignment : 32;
    if (s->version) check_rc(ggufmap_writer_set_version(w, s->version), "version");
    check_rc(ggufmap_writer_set_alignment(w, align), "alignment");
    if (k == 0) add_str(w, s, "general.architecture", NUL_KEY_ARCH, "llama");
    if (align != 32 || s->explicit_align) add_alignment(w, s, align);
    if (k == 0) {
        add_num(w, s, "llama.block_count", NUL_KEY_ARCH, GGUFMAP_VALUE_UINT32, N_LAYER);
        add_num(w, s, "llama.context_length", NUL_KEY_ARCH, GGUFMAP_VALUE_UINT32, N_CTX);
        add_num(w, s, "llama.embedding_length", NUL_KEY_ARCH, GGUFMAP_VALUE_UINT32, N_EMBD);
        add_num(w, s, "llama.feed_forward_length", NUL_KEY_ARCH, GGUFMAP_VALUE_UINT32, N_FF);
        add_num(w, s, "llama.attention.head_count", NUL_KEY_ARCH, GGUFMAP_VALUE_UINT32, N_HEAD);
        float eps = 1e-5f;
        uint32_t eps_bits;
        memcpy(&eps_bits, &eps, 4);
        add_num(w, s, "llama.attention.layer_norm_rms_epsilon", NUL_KEY_ARCH, GGUFMAP_VALUE_FLOAT32, eps_bits);
        check_rc(ggufmap_writer_add_string(w, "tokenizer.ggml.model", "none"), "tokenizer");
        add_num(w, s, "llama.vocab_size", NUL_KEY_ARCH, GGUFMAP_VALUE_UINT32, N_VOCAB);
        add_extra_keys(w, s);
    }
    if (n > 1 || s->split_keys_single) {
        if (!(s->omit_no_shard && (uint32_t)s->omit_no_shard == k)) {
            uint32_t no = k;
            if (s->bad_no_shard && (uint32_t)(s->bad_no_shard - 1) == k) no = (uint32_t)s->bad_no_value;
            int no_u32 = s->no_u32_shard && (uint32_t)s->no_u32_shard == k;
            add_num(w, s, "split.no", NUL_KEY_SPLIT_NO, no_u32 ? GGUFMAP_VALUE_UINT32 : GGUFMAP_VALUE_UINT16, no);
        }
        uint32_t count = s->split_count_value ? (uint32_t)s->split_count_value : n;
        add_num(w, s, "split.count", NUL_KEY_SPLIT_COUNT, s->split_count_u32 ? GGUFMAP_VALUE_UINT32 : GGUFMAP_VALUE_UINT16,
                count);
        int32_t tc = (int32_t)n_total + s->tensors_count_delta;
        add_num(w, s, "split.tensors.count", NUL_KEY_SPLIT_TENSORS,
                s->tensors_count_u32 ? GGUFMAP_VALUE_UINT32 : GGUFMAP_VALUE_INT32, (uint32_t)tc);
    }
    for (int i = first; i < last; i++) {
        const char *name = t[i].name;
        if (s->dup_across && k == 1 && i == first) name = t[0].name;
        ggufmap_data d = {.kind = GGUFMAP_DATA_CALLBACK, .fill = fill_data,
                          .ctx = (void *)(uintptr_t)(k * 1000u + (uint32_t)i)};
        int64_t ne[2] = {t[i].ne[0], t[i].ne[1]};
        check_rc(ggufmap_writer_add_tensor(w, name, t[i].n_dims, ne, t[i].type, &d), name);
    }
    ggufmap_error err;
    if (ggufmap_writer_write(w, path, 0, &err) != GGUFMAP_OK) die("write failed", err.message);
    ggufmap_writer_free(w);
}

/* Builds case `name` from s; stores the path llama.cpp loads in load_path. */
static void build(const char *name, const spec *s, char *load_path, size_t cap) {
    tinfo t[MAX_TENSORS];
    int nt = model_tensors(s, t);
    uint32_t n = s->n_shards > 1 ? s->n_shards : 1;
    if (n == 1) {
        snprintf(load_path, cap, "%s/%s.gguf", g_out, name);
        write_shard(load_path, s, 0, 1, t, nt, 0, nt);
        return;
    }
    uint32_t name_count = s->name_count ? s->name_count : n;
    char prefix[1024], path[1200];
    snprintf(prefix, sizeof prefix, "%s/%s", g_out, name);
    for (uint32_t k = 0; k < n; k++) {
        ggufmap_split_path(path, sizeof path, prefix, k, name_count);
        int first = (int)((uint32_t)nt * k / n), last = (int)((uint32_t)nt * (k + 1) / n);
        write_shard(path, s, k, n, t, nt, first, last);
        if (k == 0) snprintf(load_path, cap, "%s", path);
    }
}

static void emit(const char *name, const char *path, const char *expect) {
    fprintf(g_tsv, "%s\t%s\t%s\n", name, path, expect);
    g_cases++;
}

static void build_case(const char *name, const spec *s, const char *expect) {
    char path[1200];
    build(name, s, path, sizeof path);
    emit(name, path, expect);
}

/* ------------------------------------------------------------------------ */
/* Reading a valid base back: where every record and field is                */
/* ------------------------------------------------------------------------ */

typedef struct layout {
    cbuf file;
    int64_t n_kv, n_t;
    uint64_t kv_off[MAX_RECORDS + 1];   /* [n_kv] = start of the tensor infos */
    char key[MAX_RECORDS][64];
    uint64_t kv_value_off[MAX_RECORDS]; /* first value byte (first element of an array) */
    uint64_t info_off[MAX_RECORDS + 1]; /* [n_t] = end of the tensor infos */
    uint32_t name_len[MAX_RECORDS], n_dims[MAX_RECORDS];
    uint64_t rel[MAX_RECORDS], abs_off[MAX_RECORDS], size[MAX_RECORDS];
    uint64_t data_off;
    uint32_t alignment;
} layout;

static void load_file(const char *path, cbuf *b) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open", path);
    uint8_t tmp[65536];
    size_t got;
    while ((got = fread(tmp, 1, sizeof tmp, f)) > 0) cbuf_put(b, tmp, got);
    fclose(f);
}

static void load_layout(const char *path, layout *L) {
    memset(L, 0, sizeof *L);
    ggufmap_source *src = NULL;
    ggufmap_error err;
    if (ggufmap_source_open(path, 0, &src, &err) != GGUFMAP_OK) die("base does not open", err.message);
    const uint8_t *base = ggufmap_source_bytes(src);
    L->n_kv = ggufmap_source_n_kv(src);
    L->n_t = ggufmap_source_n_tensors(src);
    if (L->n_kv > MAX_RECORDS || L->n_t > MAX_RECORDS || L->n_t < 1) die("base too large", path);
    for (int64_t i = 0; i < L->n_kv; i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(src, i);
        L->kv_off[i] = kv->offset;
        snprintf(L->key[i], sizeof L->key[i], "%.*s", (int)kv->key_len, kv->key);
        L->kv_value_off[i] = (uint64_t)(kv->value - base);
    }
    for (int64_t i = 0; i < L->n_t; i++) {
        const ggufmap_tensor *t = ggufmap_source_tensor(src, i);
        L->info_off[i] = t->info_offset;
        L->name_len[i] = t->name_len;
        L->n_dims[i] = t->n_dims;
        L->rel[i] = t->rel_offset;
        L->abs_off[i] = t->offset;
        L->size[i] = t->size;
    }
    L->kv_off[L->n_kv] = L->info_off[0];
    int64_t last = L->n_t - 1;
    L->info_off[L->n_t] = L->info_off[last] + 8 + L->name_len[last] + 4 + 8ull * L->n_dims[last] + 4 + 8;
    L->data_off = ggufmap_source_data_offset(src);
    L->alignment = ggufmap_source_alignment(src);
    ggufmap_source_free(src);
    load_file(path, &L->file);
}

static int64_t find_key(const layout *L, const char *key) {
    for (int64_t i = 0; i < L->n_kv; i++)
        if (strcmp(L->key[i], key) == 0) return i;
    die("key not in base", key);
    return -1;
}

static int64_t find_tensor(const layout *L, const char *name) {
    for (int64_t i = 0; i < L->n_t; i++) {
        const uint8_t *p = L->file.p + L->info_off[i] + 8;
        if (strlen(name) == L->name_len[i] && memcmp(p, name, L->name_len[i]) == 0) return i;
    }
    die("tensor not in base", name);
    return -1;
}

/* File offsets of the fields of tensor info i. */
static uint64_t at_ndims(const layout *L, int64_t i) { return L->info_off[i] + 8 + L->name_len[i]; }
static uint64_t at_ne(const layout *L, int64_t i, uint32_t j) { return at_ndims(L, i) + 4 + 8ull * j; }
static uint64_t at_type(const layout *L, int64_t i) { return at_ne(L, i, L->n_dims[i]); }
static uint64_t at_offset(const layout *L, int64_t i) { return at_type(L, i) + 4; }

static void write_bytes(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot create", path);
    if ((n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) die("cannot write", path);
}

/* A copy of the base with `bytes` bytes at `off` set to v (little-endian),
 * then cut to `cut` bytes (SIZE_MAX: not cut) and written as case `name`. */
typedef struct patch {
    uint64_t off;
    uint64_t v;
    int bytes; /* 0: no patch */
} patch;

static void mutate(const char *name, const layout *L, const patch *p, int np, size_t cut, const char *expect) {
    cbuf b = {0};
    cbuf_put(&b, L->file.p, L->file.n);
    for (int i = 0; i < np; i++) {
        if (p[i].bytes == 0) continue;
        if (p[i].off + (uint64_t)p[i].bytes > b.n) die("patch out of range", name);
        le_store(b.p + p[i].off, p[i].v, p[i].bytes);
    }
    if (cut < b.n) b.n = cut;
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.gguf", g_out, name);
    write_bytes(path, b.p, b.n);
    cbuf_free(&b);
    emit(name, path, expect);
}

static void patch1(const char *name, const layout *L, uint64_t off, int bytes, uint64_t v, const char *expect) {
    patch p = {off, v, bytes};
    mutate(name, L, &p, 1, SIZE_MAX, expect);
}

static void cut(const char *name, const layout *L, uint64_t n, const char *expect) {
    if (n >= L->file.n) die("cut beyond the end", name);
    mutate(name, L, NULL, 0, (size_t)n, expect);
}

/* ------------------------------------------------------------------------ */
/* Splicing: the base as records, edited, then laid out again                */
/* ------------------------------------------------------------------------ */

typedef struct edit {
    uint8_t hdr[24];
    cbuf kv[MAX_RECORDS];
    int nkv;
    cbuf info[MAX_RECORDS];
    int ninfo;
    const uint8_t *data;
    size_t data_n;
    uint32_t pad_align; /* padding before the data section */
} edit;

static void edit_from(edit *e, const layout *L) {
    memset(e, 0, sizeof *e);
    memcpy(e->hdr, L->file.p, 24);
    e->nkv = (int)L->n_kv;
    for (int i = 0; i < e->nkv; i++) cbuf_put(&e->kv[i], L->file.p + L->kv_off[i], L->kv_off[i + 1] - L->kv_off[i]);
    e->ninfo = (int)L->n_t;
    for (int i = 0; i < e->ninfo; i++)
        cbuf_put(&e->info[i], L->file.p + L->info_off[i], L->info_off[i + 1] - L->info_off[i]);
    e->data = L->file.p + L->data_off;
    e->data_n = L->file.n - L->data_off;
    e->pad_align = L->alignment;
}

static cbuf *edit_add_kv(edit *e) {
    if (e->nkv >= MAX_RECORDS) die("too many records", NULL);
    return &e->kv[e->nkv++];
}

/* Replaces tensor info i's name by name[0 .. len) (NULs allowed). */
static void edit_rename(edit *e, const layout *L, int64_t i, const char *name, size_t len) {
    cbuf r = {0};
    cbuf_str(&r, name, len);
    uint64_t rest = L->info_off[i] + 8 + L->name_len[i];
    cbuf_put(&r, L->file.p + rest, L->info_off[i + 1] - rest);
    cbuf_free(&e->info[i]);
    e->info[i] = r;
}

static void edit_write(const char *name, edit *e, const char *expect) {
    cbuf b = {0};
    le_store(e->hdr + 8, (uint64_t)e->ninfo, 8);
    le_store(e->hdr + 16, (uint64_t)e->nkv, 8);
    cbuf_put(&b, e->hdr, 24);
    for (int i = 0; i < e->nkv; i++) cbuf_put(&b, e->kv[i].p, e->kv[i].n);
    for (int i = 0; i < e->ninfo; i++) cbuf_put(&b, e->info[i].p, e->info[i].n);
    size_t a = e->pad_align;
    cbuf_zeros(&b, (a - b.n % a) % a);
    cbuf_put(&b, e->data, e->data_n);
    char path[1200];
    snprintf(path, sizeof path, "%s/%s.gguf", g_out, name);
    write_bytes(path, b.p, b.n);
    cbuf_free(&b);
    for (int i = 0; i < e->nkv; i++) cbuf_free(&e->kv[i]);
    for (int i = 0; i < e->ninfo; i++) cbuf_free(&e->info[i]);
    emit(name, path, expect);
}

/* The base plus one key-value record: key (key_len bytes, NULs allowed),
 * i32 type, then payload. */
static void with_kv_n(const char *name, const layout *L, const char *key, size_t key_len, int32_t type,
                      const void *payload, size_t n, const char *expect) {
    edit e;
    edit_from(&e, L);
    cbuf *r = edit_add_kv(&e);
    cbuf_str(r, key, key_len);
    cbuf_i32(r, type);
    cbuf_put(r, payload, n);
    edit_write(name, &e, expect);
}

static void with_kv(const char *name, const layout *L, const char *key, int32_t type, const void *payload, size_t n,
                    const char *expect) {
    with_kv_n(name, L, key, strlen(key), type, payload, n, expect);
}

static void with_kv_u32(const char *name, const layout *L, const char *key, uint32_t v, const char *expect) {
    uint8_t p[4];
    le_store(p, v, 4);
    with_kv(name, L, key, GGUFMAP_VALUE_UINT32, p, 4, expect);
}

static void with_rename(const char *name, const layout *L, const char *tensor, const char *newname, size_t len,
                        const char *expect) {
    edit e;
    edit_from(&e, L);
    edit_rename(&e, L, find_tensor(L, tensor), newname, len);
    edit_write(name, &e, expect);
}

/* ------------------------------------------------------------------------ */
/* The cases                                                                 */
/* ------------------------------------------------------------------------ */

static void small_alignment_case(const char *name, uint32_t align, uint64_t want, const char *expect);

static void valid_cases(void) {
    spec s;
    memset(&s, 0, sizeof s);
    build_case("valid_v3", &s, "accept");
    s = (spec){.version = 2};
    build_case("valid_v2", &s, "accept");
    s = (spec){.alignment = 64};
    build_case("valid_align64", &s, "accept");
    s = (spec){.alignment = 4096, .norm_last = 1};
    build_case("valid_align4096", &s, "accept");
    s = (spec){.explicit_align = 1};
    build_case("valid_align32_explicit", &s, "accept");
    s = (spec){.tied = 1};
    build_case("valid_tied_output", &s, "accept");
    s = (spec){.norm_last = 1};
    build_case("valid_output_before_norm", &s, "accept");
    s = (spec){.all_types = 1};
    build_case("valid_all_kv_types", &s, "accept");
    s = (spec){.empty_values = 1};
    build_case("valid_empty_arrays", &s, "accept");
    s = (spec){.odd_string = 1};
    build_case("valid_string_nul_non_utf8", &s, "accept");
    s = (spec){.big_string_array = 1};
    build_case("valid_string_array_1000", &s, "accept");
    s = (spec){.matrix_type = 1}; /* f16 */
    build_case("valid_f16_matrices", &s, "accept");
    s = (spec){.matrix_type = 8}; /* q8_0 */
    build_case("valid_q8_0_matrices", &s, "accept");
    s = (spec){.version = 2, .all_types = 1, .alignment = 64, .tied = 1};
    build_case("valid_v2_align64_tied_all_types", &s, "accept");
    s = (spec){.n_shards = 2};
    build_case("valid_split2", &s, "accept");
    s = (spec){.n_shards = 3, .all_types = 1};
    build_case("valid_split3", &s, "accept");
    s = (spec){.n_shards = 3, .alignment = 64, .tied = 1};
    build_case("valid_split3_align64_tied", &s, "accept");
    s = (spec){.split_keys_single = 1};
    build_case("valid_split_count1_single_file", &s, "accept");
    small_alignment_case("valid_align16_data_at_32", 16, 0, "accept");
    small_alignment_case("valid_align1_data_at_32", 1, 0, "accept");
    small_alignment_case("align16_data_not_32_aligned", 16, 16, "mmap");
    small_alignment_case("align1_data_not_32_aligned", 1, 8, "mmap");
}

/* general.alignment below 32 is valid GGUF, but llama.cpp maps the file and
 * its CPU backend asserts that the mapped buffer (which starts at the first
 * tensor's data) is 32-byte aligned.  Builds `name` with alignment `align`
 * and its data section at `want` mod 32 by padding a string key. */
static void small_alignment_case(const char *name, uint32_t align, uint64_t want, const char *expect) {
    char path[1200];
    spec s = {.alignment = align, .pad_string_len = 1};
    build(name, &s, path, sizeof path);
    layout L;
    load_layout(path, &L);
    uint64_t have = L.data_off % 32;
    cbuf_free(&L.file);
    if (have != want) {
        if (unlink(path) != 0) die("cannot remove", path);
        s.pad_string_len = 1 + (uint32_t)((want + 32 - have) % 32);
        build(name, &s, path, sizeof path);
        load_layout(path, &L);
        have = L.data_off % 32;
        cbuf_free(&L.file);
        if (have != want) die("cannot place the data section", name);
    }
    emit(name, path, expect);
}

static void header_cases(const layout *v3) {
    patch1("bad_magic", v3, 0, 4, le_load((const uint8_t *)"GGUX", 4), "reject");
    patch1("bad_magic_lowercase", v3, 0, 4, le_load((const uint8_t *)"gguf", 4), "reject");
    patch1("bad_magic_ggjt", v3, 0, 4, le_load((const uint8_t *)"ggjt", 4), "reject");
    patch1("version_0", v3, 4, 4, 0, "reject");
    patch1("version_1", v3, 4, 4, 1, "reject");
    patch1("version_4", v3, 4, 4, 4, "reject");
    /* A big-endian writer stores 3 as 00 00 00 03 and swaps the counts too. */
    {
        patch p[3] = {{4, 0x03000000u, 4},
                      {8, __builtin_bswap64(le_load(v3->file.p + 8, 8)), 8},
                      {16, __builtin_bswap64(le_load(v3->file.p + 16, 8)), 8}};
        mutate("big_endian_header", v3, p, 3, SIZE_MAX, "reject");
    }
    patch1("n_tensors_huge", v3, 8, 8, (uint64_t)INT64_MAX, "reject");
    patch1("n_tensors_negative", v3, 8, 8, (uint64_t)-1, "reject");
    patch1("n_tensors_past_file", v3, 8, 8, 1000000000u, "reject");
    patch1("n_kv_huge", v3, 16, 8, (uint64_t)INT64_MAX, "reject");
    patch1("n_kv_negative", v3, 16, 8, (uint64_t)-1, "reject");
    patch1("n_kv_past_file", v3, 16, 8, 1000000000u, "reject");
    patch1("n_kv_plus_one", v3, 16, 8, (uint64_t)v3->n_kv + 1, "reject");
}

static void truncation_cases(const layout *v3, const layout *types, const layout *a4096) {
    cut("trunc_in_magic", v3, 2, "reject");
    cut("trunc_in_version", v3, 6, "reject");
    cut("trunc_in_n_tensors", v3, 12, "reject");
    cut("trunc_in_n_kv", v3, 20, "reject");
    cut("trunc_after_header", v3, 24, "reject");
    cut("trunc_in_kv_key_length", v3, v3->kv_off[0] + 3, "reject");
    cut("trunc_in_kv_key", v3, v3->kv_off[0] + 8 + 5, "reject");
    int64_t arch = find_key(v3, "general.architecture");
    cut("trunc_in_kv_type", v3, v3->kv_value_off[arch] - 2, "reject");
    cut("trunc_in_kv_string_value", v3, v3->kv_value_off[arch] + 8 + 2, "reject");
    int64_t eps = find_key(v3, "llama.attention.layer_norm_rms_epsilon");
    cut("trunc_in_kv_f32_value", v3, v3->kv_value_off[eps] + 2, "reject");
    int64_t arr = find_key(types, "test.arr_u32");
    cut("trunc_in_kv_array_header", types, types->kv_value_off[arr] - 5, "reject");
    cut("trunc_in_kv_array_elements", types, types->kv_value_off[arr] + 6, "reject");
    int64_t sarr = find_key(types, "test.arr_str");
    cut("trunc_in_kv_string_array", types, types->kv_value_off[sarr] + 8 + 1 + 4, "reject");
    cut("trunc_before_tensor_infos", v3, v3->info_off[0], "reject");
    cut("trunc_in_tensor_name", v3, v3->info_off[0] + 8 + 4, "reject");
    cut("trunc_in_tensor_n_dims", v3, at_ndims(v3, 0) + 2, "reject");
    cut("trunc_in_tensor_dims", v3, at_ne(v3, 0, 1) + 3, "reject");
    int64_t last = v3->n_t - 1;
    cut("trunc_in_tensor_type", v3, at_type(v3, last) + 2, "reject");
    cut("trunc_in_tensor_offset", v3, at_offset(v3, last) + 4, "reject");
    if (a4096->data_off - a4096->info_off[a4096->n_t] < 2) die("no padding to cut into", NULL);
    cut("trunc_in_data_padding", a4096, a4096->info_off[a4096->n_t] + 1, "reject");
    cut("trunc_at_data_start", v3, v3->data_off, "reject");
    cut("trunc_in_first_tensor_data", v3, v3->data_off + 100, "reject");
    cut("trunc_in_middle_tensor_data", v3, v3->abs_off[v3->n_t / 2] + 10, "reject");
    cut("trunc_last_tensor_short_1_byte", v3, v3->abs_off[last] + v3->size[last] - 1, "reject");
    /* align 4096, last tensor 256 bytes: the file ends after its data, without
     * the padding after it.  llama.cpp checks offs + nbytes <= file size. */
    int64_t l4 = a4096->n_t - 1;
    if (a4096->abs_off[l4] + a4096->size[l4] >= a4096->file.n) die("no tail padding", NULL);
    cut("valid_tail_padding_cut", a4096, a4096->abs_off[l4] + a4096->size[l4], "accept");
    cut("valid_cut_in_tail_padding", a4096, a4096->abs_off[l4] + a4096->size[l4] + 100, "accept");
}

static void string_cases(const layout *v3) {
    int64_t arch = find_key(v3, "general.architecture");
    patch1("key_length_past_eof", v3, v3->kv_off[0], 8, 1u << 28, "reject");
    patch1("key_length_over_max", v3, v3->kv_off[0], 8, 1ull << 40, "reject");
    patch1("string_value_past_eof", v3, v3->kv_value_off[arch], 8, 1u << 28, "reject");
    patch1("string_value_over_max", v3, v3->kv_value_off[arch], 8, (1ull << 30) + 1, "reject");
    patch1("tensor_name_past_eof", v3, v3->info_off[0], 8, 1u << 28, "reject");
    patch1("tensor_name_length_max_u64", v3, v3->info_off[0], 8, UINT64_MAX, "reject");
    with_kv_u32("empty_key", v3, "", 1, "reject");
    char long_name[65];
    memset(long_name, 'x', 64);
    memcpy(long_name, "output.weight", 13);
    long_name[64] = 0;
    with_rename("tensor_name_64_bytes", v3, "output.weight", long_name, 64, "reject");
    with_rename("valid_tensor_name_63_bytes_arch", v3, "output.weight", long_name, 63, "arch");
    long_name[13] = 0; /* "output.weight\0xxx...": 64 bytes stored, 13 as a C string */
    with_rename("tensor_name_nul_then_64_bytes", v3, "output.weight", long_name, 64, "reject");
    with_rename("valid_tensor_name_nul_tail", v3, "output.weight", long_name, 20, "accept");
}

static void kv_cases(const layout *v3, const layout *types) {
    {
        uint8_t p[4];
        le_store(p, 512, 4);
        with_kv("duplicate_key", v3, "llama.context_length", GGUFMAP_VALUE_UINT32, p, 4, "reject");
        with_kv("duplicate_key_other_type", v3, "general.architecture", GGUFMAP_VALUE_UINT32, p, 4, "reject");
    }
    {
        cbuf p = {0};
        cbuf_i32(&p, GGUFMAP_VALUE_ARRAY); /* element type: array */
        cbuf_u64(&p, 1);
        cbuf_i32(&p, GGUFMAP_VALUE_UINT8); /* the inner array */
        cbuf_u64(&p, 2);
        cbuf_u8(&p, 1);
        cbuf_u8(&p, 2);
        with_kv("nested_array", v3, "test.nested", GGUFMAP_VALUE_ARRAY, p.p, p.n, "reject");
        cbuf_free(&p);
    }
    {
        uint8_t p[4] = {1, 2, 3, 4};
        with_kv("bad_kv_type_13", v3, "test.bad", 13, p, 4, "reject");
        with_kv("bad_kv_type_negative", v3, "test.bad", -1, p, 4, "reject");
        cbuf q = {0};
        cbuf_i32(&q, 13);
        cbuf_u64(&q, 1);
        cbuf_u32(&q, 0);
        with_kv("bad_array_element_type", v3, "test.bad", GGUFMAP_VALUE_ARRAY, q.p, q.n, "reject");
        cbuf_free(&q);
    }
    int64_t a8 = find_key(types, "test.arr_u8");
    patch1("array_count_over_max", types, types->kv_value_off[a8] - 8, 8, (1ull << 30) + 1, "reject");
    patch1("array_count_huge", types, types->kv_value_off[a8] - 8, 8, UINT64_MAX, "reject");
    int64_t a32 = find_key(types, "test.arr_u32");
    patch1("array_count_past_eof", types, types->kv_value_off[a32] - 8, 8, 1u << 28, "reject");
    int64_t as = find_key(types, "test.arr_str");
    patch1("string_array_count_past_eof", types, types->kv_value_off[as] - 8, 8, 1u << 28, "reject");
    patch1("string_array_element_past_eof", types, types->kv_value_off[as], 8, 1u << 28, "reject");
    int64_t ab = find_key(types, "test.arr_bool");
    patch1("valid_bool_value_2", types, types->kv_value_off[ab], 1, 2, "accept");

    with_kv_u32("alignment_0", v3, "general.alignment", 0, "reject");
    with_kv_u32("alignment_3", v3, "general.alignment", 3, "reject");
    with_kv_u32("alignment_48", v3, "general.alignment", 48, "reject");
    {
        uint8_t p[8];
        le_store(p, 32, 8);
        with_kv("alignment_u64", v3, "general.alignment", GGUFMAP_VALUE_UINT64, p, 8, "reject");
        with_kv("alignment_i32", v3, "general.alignment", GGUFMAP_VALUE_INT32, p, 4, "reject");
        with_kv("alignment_u16", v3, "general.alignment", GGUFMAP_VALUE_UINT16, p, 2, "reject");
        cbuf q = {0};
        cbuf_i32(&q, GGUFMAP_VALUE_UINT32);
        cbuf_u64(&q, 1);
        cbuf_u32(&q, 32);
        with_kv("alignment_array", v3, "general.alignment", GGUFMAP_VALUE_ARRAY, q.p, q.n, "reject");
        cbuf_free(&q);
    }
}

static void tensor_cases(const layout *v3) {
    int64_t norm0 = find_tensor(v3, "blk.0.attn_norm.weight");
    int64_t fnorm0 = find_tensor(v3, "blk.0.ffn_norm.weight");
    int64_t emb = find_tensor(v3, "token_embd.weight");
    int64_t out = find_tensor(v3, "output.weight");
    int64_t last = v3->n_t - 1;
    patch1("n_dims_5", v3, at_ndims(v3, norm0), 4, 5, "reject");
    patch1("n_dims_huge", v3, at_ndims(v3, norm0), 4, UINT32_MAX, "reject");
    patch1("negative_dim", v3, at_ne(v3, emb, 0), 8, (uint64_t)-64, "reject");
    patch1("negative_dim_last", v3, at_ne(v3, out, 1), 8, (uint64_t)-1, "reject");
    {
        /* 2^32+1 squared: the product wraps to 2^33+1 > 0, so ggml's overflow test runs. */
        patch p[2] = {{at_ne(v3, emb, 0), (1ull << 32) + 1, 8}, {at_ne(v3, emb, 1), (1ull << 32) + 1, 8}};
        mutate("element_count_overflow", v3, p, 2, SIZE_MAX, "reject");
        /* 2^32 squared wraps to 0 elements: ggml skips the overflow test, and
         * the next tensor's offset check refuses the file. */
        patch q[2] = {{at_ne(v3, emb, 0), 1ull << 32, 8}, {at_ne(v3, emb, 1), 1ull << 32, 8}};
        mutate("element_count_wraps_to_zero", v3, q, 2, SIZE_MAX, "reject");
    }
    patch1("byte_size_overflow", v3, at_ne(v3, norm0, 0), 8, 1ull << 62, "reject");
    patch1("bad_type_id_43", v3, at_type(v3, norm0), 4, 43, "reject");
    patch1("bad_type_id_negative", v3, at_type(v3, norm0), 4, UINT32_MAX, "reject");
    patch1("removed_type_4", v3, at_type(v3, norm0), 4, 4, "reject");
    patch1("removed_type_36", v3, at_type(v3, norm0), 4, 36, "reject");
    patch1("block_size_mismatch_q4_K", v3, at_type(v3, out), 4, 12, "reject");
    {
        patch p[2] = {{at_offset(v3, norm0), v3->rel[fnorm0], 8}, {at_offset(v3, fnorm0), v3->rel[norm0], 8}};
        mutate("offsets_swapped", v3, p, 2, SIZE_MAX, "reject");
    }
    patch1("offset_gap", v3, at_offset(v3, last), 8, v3->rel[last] + v3->alignment, "reject");
    patch1("offset_misaligned", v3, at_offset(v3, norm0), 8, v3->rel[norm0] + 4, "reject");
    patch1("offset_first_nonzero", v3, at_offset(v3, 0), 8, v3->alignment, "reject");
    patch1("data_past_eof_grown_shape", v3, at_ne(v3, out, 1), 8, 2 * N_VOCAB, "reject");
    cut("data_past_eof_last_tensor_missing", v3, v3->abs_off[last], "reject");
    with_rename("duplicate_tensor_name", v3, "blk.1.attn_norm.weight", "blk.0.attn_norm.weight",
                strlen("blk.0.attn_norm.weight"), "reject");
    /* Same C string, different bytes: "blk.0.attn_norm.weight\0a". */
    with_rename("duplicate_tensor_name_after_nul", v3, "blk.1.attn_norm.weight", "blk.0.attn_norm.weight\0a",
                strlen("blk.0.attn_norm.weight") + 2, "reject");
}

static void split_path_of(char *buf, size_t cap, const char *name, uint32_t k, uint32_t n) {
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s/%s", g_out, name);
    ggufmap_split_path(buf, cap, prefix, k, n);
}

static void split_cases(void) {
    char path[1200], shard[1200];
    spec s;
    s = (spec){.n_shards = 3};
    build("split_missing_shard", &s, path, sizeof path);
    split_path_of(shard, sizeof shard, "split_missing_shard", 2, 3);
    if (unlink(shard) != 0) die("cannot remove", shard);
    emit("split_missing_shard", path, "reject");

    s = (spec){.n_shards = 3};
    build("split_missing_middle_shard", &s, path, sizeof path);
    split_path_of(shard, sizeof shard, "split_missing_middle_shard", 1, 3);
    if (unlink(shard) != 0) die("cannot remove", shard);
    emit("split_missing_middle_shard", path, "reject");

    s = (spec){.n_shards = 2, .dup_across = 1};
    build_case("split_duplicate_tensor_across_shards", &s, "reject");
    s = (spec){.n_shards = 2, .split_count_value = 3};
    build_case("split_count_3_in_2_shards", &s, "reject");
    s = (spec){.n_shards = 3, .split_count_value = 2};
    build_case("split_count_2_in_3_shards", &s, "reject");
    s = (spec){.n_shards = 2, .name_count = 3};
    build_case("split_name_count_mismatch", &s, "reject");
    s = (spec){.split_keys_single = 1, .split_count_value = 2};
    build_case("split_count_2_plain_name", &s, "reject");
    s = (spec){.n_shards = 2, .tensors_count_delta = 1};
    build_case("split_tensors_count_too_high", &s, "reject");
    s = (spec){.n_shards = 3, .tensors_count_delta = -1};
    build_case("split_tensors_count_too_low", &s, "reject");
    s = (spec){.n_shards = 3, .bad_no_shard = 2, .bad_no_value = 2};
    build_case("split_no_wrong_in_shard2", &s, "reject");
    s = (spec){.n_shards = 2, .bad_no_shard = 1, .bad_no_value = 1};
    build_case("split_no_nonzero_in_first", &s, "reject");
    s = (spec){.n_shards = 3, .omit_no_shard = 1};
    build_case("split_no_missing_in_shard2", &s, "reject");
    s = (spec){.n_shards = 2, .no_u32_shard = 1};
    build_case("split_no_u32_in_shard2", &s, "reject");
    s = (spec){.n_shards = 2, .split_count_u32 = 1};
    build_case("split_count_u32", &s, "reject");
    s = (spec){.n_shards = 2, .tensors_count_u32 = 1};
    build_case("split_tensors_count_u32", &s, "reject");

    /* A broken second shard. */
    {
        s = (spec){.n_shards = 2};
        build("split_shard2_bad_magic", &s, path, sizeof path);
        split_path_of(shard, sizeof shard, "split_shard2_bad_magic", 1, 2);
        cbuf b = {0};
        load_file(shard, &b);
        memcpy(b.p, "GGUX", 4);
        unlink(shard);
        write_bytes(shard, b.p, b.n);
        cbuf_free(&b);
        emit("split_shard2_bad_magic", path, "reject");
    }
    {
        s = (spec){.n_shards = 2};
        build("split_shard2_truncated", &s, path, sizeof path);
        split_path_of(shard, sizeof shard, "split_shard2_truncated", 1, 2);
        cbuf b = {0};
        load_file(shard, &b);
        unlink(shard);
        write_bytes(shard, b.p, b.n - 1);
        cbuf_free(&b);
        emit("split_shard2_truncated", path, "reject");
    }
}

/* Keys that hold a NUL byte.  ggml finds keys with strcmp (gguf_find_key:
 * the first key whose C string matches wins) but refuses only byte-equal
 * duplicates; llama_model_loader's get_key goes through gguf_find_key. */
static void nul_key_cases(const layout *v3) {
    static const char align_nul[] = "general.alignment\0junk";
    spec s;
    /* general.alignment\0junk = 64: ggml lays the data out at 64. */
    s = (spec){.alignment = 64, .nul_keys = NUL_KEY_ALIGN};
    build_case("nul_key_alignment_64", &s, "accept");
    s = (spec){.alignment = 4096, .nul_keys = NUL_KEY_ALIGN};
    build_case("nul_key_alignment_4096", &s, "accept");
    /* general.alignment\0junk = 64, then general.alignment = 32: the first wins. */
    s = (spec){.alignment = 64, .nul_keys = NUL_KEY_ALIGN, .align_decoy = 32};
    build_case("nul_key_alignment_first_wins", &s, "accept");
    /* general.alignment = 64, then general.alignment\0junk = 128. */
    s = (spec){.alignment = 64, .align_decoy = 128};
    build_case("nul_key_alignment_exact_first", &s, "accept");
    /* Typed as anything but u32, or not a power of two: refused like the exact key. */
    {
        uint8_t p[8];
        le_store(p, 32, 8);
        with_kv_n("nul_key_alignment_u64", v3, align_nul, sizeof align_nul - 1, GGUFMAP_VALUE_UINT64, p, 8, "reject");
        with_kv_n("nul_key_alignment_i32", v3, align_nul, sizeof align_nul - 1, GGUFMAP_VALUE_INT32, p, 4, "reject");
        cbuf q = {0};
        cbuf_str(&q, "32", 2);
        with_kv_n("nul_key_alignment_str", v3, align_nul, sizeof align_nul - 1, GGUFMAP_VALUE_STRING, q.p, q.n,
                  "reject");
        cbuf_free(&q);
        cbuf_i32(&q, GGUFMAP_VALUE_UINT32);
        cbuf_u64(&q, 1);
        cbuf_u32(&q, 32);
        with_kv_n("nul_key_alignment_arr", v3, align_nul, sizeof align_nul - 1, GGUFMAP_VALUE_ARRAY, q.p, q.n,
                  "reject");
        cbuf_free(&q);
        le_store(p, 48, 4);
        with_kv_n("nul_key_alignment_48", v3, align_nul, sizeof align_nul - 1, GGUFMAP_VALUE_UINT32, p, 4, "reject");
    }
    /* Duplicates are byte for byte: x\0a twice is one, x\0a and x\0b are two keys. */
    {
        edit e;
        edit_from(&e, v3);
        for (int i = 0; i < 2; i++) {
            cbuf *r = edit_add_kv(&e);
            cbuf_str(r, "test.k\0a", 8);
            cbuf_i32(r, GGUFMAP_VALUE_UINT8);
            cbuf_u8(r, (uint8_t)i);
        }
        edit_write("nul_key_duplicate", &e, "reject");
        edit_from(&e, v3);
        for (int i = 0; i < 2; i++) {
            cbuf *r = edit_add_kv(&e);
            cbuf_str(r, i ? "test.k\0b" : "test.k\0a", 8);
            cbuf_i32(r, GGUFMAP_VALUE_UINT8);
            cbuf_u8(r, (uint8_t)i);
        }
        edit_write("nul_key_same_c_string", &e, "accept");
    }
    /* The split keys: found by llama_model_loader's get_key and gguf_find_key. */
    s = (spec){.n_shards = 2, .nul_keys = NUL_KEY_SPLIT_NO};
    build_case("nul_key_split_no", &s, "accept");
    s = (spec){.n_shards = 2, .nul_keys = NUL_KEY_SPLIT_COUNT};
    build_case("nul_key_split_count", &s, "accept");
    s = (spec){.n_shards = 2, .nul_keys = NUL_KEY_SPLIT_TENSORS};
    build_case("nul_key_split_tensors_count", &s, "accept");
    s = (spec){.n_shards = 3, .alignment = 64,
               .nul_keys = NUL_KEY_ALIGN | NUL_KEY_SPLIT_NO | NUL_KEY_SPLIT_COUNT | NUL_KEY_SPLIT_TENSORS};
    build_case("nul_key_split3_all_keys", &s, "accept");
    s = (spec){.n_shards = 2, .split_count_u32 = 1, .nul_keys = NUL_KEY_SPLIT_COUNT};
    build_case("nul_key_split_count_u32", &s, "reject");
    s = (spec){.n_shards = 2, .tensors_count_delta = 1, .nul_keys = NUL_KEY_SPLIT_TENSORS};
    build_case("nul_key_split_tensors_count_too_high", &s, "reject");
    s = (spec){.n_shards = 3, .bad_no_shard = 3, .bad_no_value = 1, .nul_keys = NUL_KEY_SPLIT_NO};
    build_case("nul_key_split_no_wrong_in_shard3", &s, "reject");
    s = (spec){.n_shards = 2, .no_u32_shard = 1, .nul_keys = NUL_KEY_SPLIT_NO};
    build_case("nul_key_split_no_u32_in_shard2", &s, "reject");
    /* The architecture and the hyperparameters. */
    s = (spec){.nul_keys = NUL_KEY_ARCH};
    build_case("nul_key_architecture_and_hparams", &s, "accept");
}

static void arch_cases(void) {
    spec s = {.extra_tensor = 1};
    build_case("arch_extra_tensor", &s, "arch");
    s = (spec){.omit_output_norm = 1};
    build_case("arch_missing_tensor", &s, "arch");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: ggufmap-corpus OUTDIR\n");
        return 2;
    }
    g_out = argv[1];
    if (mkdir(g_out, 0755) != 0 && errno != EEXIST) die("cannot create", g_out);
    char tsv[1200];
    snprintf(tsv, sizeof tsv, "%s/cases.tsv", g_out);
    g_tsv = fopen(tsv, "w");
    if (!g_tsv) die("cannot create", tsv);

    valid_cases();
    char path[1200];
    static layout v3, types, a4096;
    snprintf(path, sizeof path, "%s/valid_v3.gguf", g_out);
    load_layout(path, &v3);
    snprintf(path, sizeof path, "%s/valid_all_kv_types.gguf", g_out);
    load_layout(path, &types);
    snprintf(path, sizeof path, "%s/valid_align4096.gguf", g_out);
    load_layout(path, &a4096);

    header_cases(&v3);
    truncation_cases(&v3, &types, &a4096);
    string_cases(&v3);
    kv_cases(&v3, &types);
    tensor_cases(&v3);
    split_cases();
    nul_key_cases(&v3);
    arch_cases();

    cbuf_free(&v3.file);
    cbuf_free(&types.file);
    cbuf_free(&a4096.file);
    if (fclose(g_tsv) != 0) die("cannot write", tsv);
    printf("ggufmap-corpus: %d cases in %s\n", g_cases, g_out);
    return 0;
}

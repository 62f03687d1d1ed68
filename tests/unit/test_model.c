/*
 * test_model.c - split models: found from any shard, checked as llama.cpp
 * checks them, presented as one model with per-tensor shard and offset.
 */
#include "check.h"
#include "ggufmap/hash.h"
#include "scratch.h"

/* Writes an n-way split of `per_shard` f32 tensors per shard, as gguf-split
 * lays it out (split keys in every shard, metadata in the first).  The hooks
 * let a test break one rule. */
typedef struct split_opts {
    uint32_t n;
    int per_shard;
    int count_key_value;      /* split.count written (default n) */
    int tensors_count_delta;  /* added to split.tensors.count */
    int duplicate_name;       /* shard 1 repeats shard 0's first tensor name */
    int wrong_no_in_shard;    /* shard with this index (>0) gets split.no 99 */
    int count_as_u32;         /* split.count written as u32 instead of u16 */
    int nul_keys;             /* every key written as KEY\0junk (ggml still finds it as KEY) */
} split_opts;

/* Adds key (with "\0junk" after it when nul) as an integer of type t. */
static void add_int_key(ggufmap_writer *w, const char *key, int nul, int32_t t, uint64_t v) {
    char bytes[96];
    size_t len = (size_t)snprintf(bytes, sizeof bytes, "%s", key);
    if (nul) {
        memcpy(bytes + len, "\0junk", 5);
        len += 5;
    }
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(v >> (8 * i));
    ggufmap_writer_add_raw(w, bytes, len, t, t, 1, le, ggufmap_value_type_size(t));
}

static void write_split(const char *prefix, const split_opts *o) {
    char path[700], name[64];
    int64_t ne[1] = {16};
    for (uint32_t k = 0; k < o->n; k++) {
        ggufmap_split_path(path, sizeof path, prefix, k, o->n);
        unlink(path);
        ggufmap_writer *w = NULL;
        ggufmap_writer_new(&w);
        if (k == 0) ggufmap_writer_add_string(w, "general.architecture", "test");
        add_int_key(w, "split.no", o->nul_keys, GGUFMAP_VALUE_UINT16, o->wrong_no_in_shard == (int)k && k ? 99 : k);
        uint32_t count = o->count_key_value ? (uint32_t)o->count_key_value : o->n;
        add_int_key(w, "split.count", o->nul_keys, o->count_as_u32 ? GGUFMAP_VALUE_UINT32 : GGUFMAP_VALUE_UINT16,
                    count);
        add_int_key(w, "split.tensors.count", o->nul_keys, GGUFMAP_VALUE_INT32,
                    (uint32_t)((int32_t)o->n * o->per_shard + o->tensors_count_delta));
        for (int i = 0; i < o->per_shard; i++) {
            if (o->duplicate_name && k == 1 && i == 0)
                snprintf(name, sizeof name, "t.0.0");
            else
                snprintf(name, sizeof name, "t.%u.%d", k, i);
            ggufmap_data d = pattern_data(k * 100 + (uint32_t)i);
            ggufmap_writer_add_tensor(w, name, 1, ne, 0, &d);
        }
        ggufmap_error err;
        if (ggufmap_writer_write(w, path, 0, &err) != 0) fprintf(stderr, "write: %s\n", err.message);
        ggufmap_writer_free(w);
    }
}

/* Every tensor llama's loader requires for n_layers layers (src/models/llama.cpp). */
static void add_llama_tensors(ggufmap_writer *w, int n_layers) {
    static const char *const layer[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                        "ffn_norm", "ffn_gate", "ffn_down", "ffn_up"};
    ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    int64_t mat[2] = {32, 8}, vec[1] = {32};
    ggufmap_writer_add_tensor(w, "token_embd.weight", 2, mat, 0, &z);
    for (int i = 0; i < n_layers; i++)
        for (size_t k = 0; k < sizeof layer / sizeof layer[0]; k++) {
            char n[64];
            snprintf(n, sizeof n, "blk.%d.%s.weight", i, layer[k]);
            bool norm = strstr(layer[k], "norm") != NULL;
            ggufmap_writer_add_tensor(w, n, norm ? 1 : 2, norm ? vec : mat, 0, &z);
        }
    ggufmap_writer_add_tensor(w, "output_norm.weight", 1, vec, 0, &z);
    ggufmap_writer_add_tensor(w, "output.weight", 2, mat, 0, &z);
}

static int open_model(const char *path, ggufmap_model **m, ggufmap_error *err) {
    *m = NULL;
    return ggufmap_model_open(path, 0, m, err);
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_model");
    char prefix[600], path[700];
    ggufmap_error err;
    ggufmap_model *m;

    /* Names. */
    size_t plen;
    uint32_t idx, count;
    CHECK(ggufmap_split_parse("/m/x-00003-of-00004.gguf", &plen, &idx, &count) && plen == 4 && idx == 2 &&
          count == 4);
    CHECK(!ggufmap_split_parse("/m/x-0003-of-00004.gguf", &plen, &idx, &count));
    CHECK(!ggufmap_split_parse("/m/x-00000-of-00004.gguf", &plen, &idx, &count));
    CHECK(!ggufmap_split_parse("x.gguf", &plen, &idx, &count));
    ggufmap_split_path(path, sizeof path, "/models/m", 2, 4);
    CHECK(strcmp(path, "/models/m-00003-of-00004.gguf") == 0);

    /* A valid 3-way split opens from every shard's path, the same model each time. */
    scratch_path(prefix, sizeof prefix, "ok");
    split_opts ok = {.n = 3, .per_shard = 4};
    write_split(prefix, &ok);
    for (uint32_t k = 0; k < 3; k++) {
        ggufmap_split_path(path, sizeof path, prefix, k, 3);
        CHECK_MSG(open_model(path, &m, &err) == 0, "%s", err.message);
        if (!m) continue;
        CHECK(ggufmap_model_n_shards(m) == 3);
        CHECK(ggufmap_model_n_tensors(m) == 12);
        for (int64_t i = 0; i < 12; i++) {
            const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
            CHECK(t->shard == (uint32_t)(i / 4));
            const ggufmap_source *src = ggufmap_model_shard(m, t->shard);
            CHECK(t->offset + t->size <= ggufmap_source_file_size(src));
            CHECK(ggufmap_source_bytes(src)[t->offset] == pattern_byte(t->shard * 100 + (uint64_t)(i % 4), 0));
        }
        CHECK(ggufmap_model_find_tensor(m, "t.2.3") == 11);
        CHECK(ggufmap_model_find_tensor(m, "t.9.9") == -1);
        CHECK(ggufmap_model_find_kv(m, "general.architecture") != NULL);
        CHECK(ggufmap_model_tensor_bytes(m) == 12 * 64);
        ggufmap_model_free(m);
    }

    /* split.no\0junk, split.count\0junk, split.tensors.count\0junk: llama.cpp
     * finds them (gguf_find_key compares C strings) and loads the model. */
    scratch_path(prefix, sizeof prefix, "nul");
    split_opts nul = {.n = 3, .per_shard = 2, .nul_keys = 1};
    write_split(prefix, &nul);
    ggufmap_split_path(path, sizeof path, prefix, 0, 3);
    CHECK_MSG(open_model(path, &m, &err) == 0, "NUL split keys: %s", err.message);
    if (m) {
        CHECK(ggufmap_model_n_shards(m) == 3 && ggufmap_model_n_tensors(m) == 6);
        const ggufmap_kv *kv = ggufmap_model_find_kv(m, "split.count");
        CHECK(kv && kv->key_len == strlen("split.count") + 5);
        /* ... and the digest and verify leave them out as split keys. */
        CHECK(kv && ggufmap_is_split_key(kv->key, (size_t)kv->key_len));
        CHECK(!ggufmap_is_split_key("split.countx", 12) && !ggufmap_is_split_key("split.coun", 10));
        ggufmap_model_free(m);
    }
    /* general.architecture\0x is what placement and the reports read as the architecture. */
    scratch_path(path, sizeof path, "arch-nul.gguf");
    {
        ggufmap_writer *aw = NULL;
        ggufmap_writer_new(&aw);
        static const char arch_key[] = "general.architecture\0x";
        uint8_t enc[8 + 5] = {5, 0, 0, 0, 0, 0, 0, 0, 'l', 'l', 'a', 'm', 'a'};
        CHECK(ggufmap_writer_add_raw(aw, arch_key, sizeof arch_key - 1, GGUFMAP_VALUE_STRING, GGUFMAP_VALUE_STRING, 1,
                                     enc, sizeof enc) == GGUFMAP_OK);
        add_int_key(aw, "llama.block_count", 1, GGUFMAP_VALUE_UINT32, 7);
        add_llama_tensors(aw, 7); /* what llama's loader requires */
        CHECK(ggufmap_writer_write(aw, path, GGUFMAP_WRITE_SPARSE, &err) == GGUFMAP_OK);
        ggufmap_writer_free(aw);
        CHECK_MSG(open_model(path, &m, &err) == 0, "%s", err.message);
        const ggufmap_kv *kv = m ? ggufmap_model_find_kv(m, "general.architecture") : NULL;
        const char *str = NULL;
        uint64_t len = 0;
        CHECK(kv && ggufmap_kv_string(kv, &str, &len) == 0 && len == 5 && memcmp(str, "llama", 5) == 0);
        ggufmap_placement_opts po;
        ggufmap_placement_opts_init(&po);
        ggufmap_placement *pl = NULL;
        CHECK(m && ggufmap_placement_build(m, &po, &pl, &err) == 0);
        CHECK_MSG(pl && ggufmap_placement_n_layers(pl) == 7, "placement reads llama.block_count\\0junk: %d layers",
                  pl ? ggufmap_placement_n_layers(pl) : -1);
        ggufmap_placement_free(pl);
        ggufmap_model_free(m);
    }
    scratch_path(prefix, sizeof prefix, "ok");

    /* A missing shard is named. */
    ggufmap_split_path(path, sizeof path, prefix, 1, 3);
    unlink(path);
    ggufmap_split_path(path, sizeof path, prefix, 0, 3);
    CHECK(open_model(path, &m, &err) == GGUFMAP_ENOTFOUND && m == NULL);
    CHECK_MSG(strstr(err.message, "ok-00002-of-00003.gguf") != NULL, "%s", err.message);

    /* Rule breakers. */
    struct {
        const char *name;
        split_opts o;
        const char *frag;
    } bad[] = {
        {"dup", {.n = 2, .per_shard = 2, .duplicate_name = 1}, "'t.0.0' is duplicated"},
        {"count", {.n = 2, .per_shard = 2, .tensors_count_delta = 1}, "split.tensors.count is 5"},
        {"no", {.n = 3, .per_shard = 1, .wrong_no_in_shard = 2}, "split.no is 99, expected 2"},
        {"u32", {.n = 2, .per_shard = 1, .count_as_u32 = 1}, "requires u16"},
        /* The same rules hold for the keys found through a NUL. */
        {"nul-count", {.n = 2, .per_shard = 2, .tensors_count_delta = -1, .nul_keys = 1}, "split.tensors.count is 3"},
        {"nul-no", {.n = 3, .per_shard = 1, .wrong_no_in_shard = 1, .nul_keys = 1}, "split.no is 99, expected 1"},
        {"nul-u32", {.n = 2, .per_shard = 1, .count_as_u32 = 1, .nul_keys = 1}, "requires u16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        scratch_path(prefix, sizeof prefix, bad[i].name);
        write_split(prefix, &bad[i].o);
        ggufmap_split_path(path, sizeof path, prefix, 0, bad[i].o.n);
        CHECK_MSG(open_model(path, &m, &err) == GGUFMAP_EFORMAT, "%s", bad[i].name);
        CHECK_MSG(strstr(err.message, bad[i].frag) != NULL, "%s: '%s'", bad[i].name, err.message);
    }
    /* split.count 3 in files named -of-00002: the name does not match the key. */
    scratch_path(prefix, sizeof prefix, "mismatch");
    split_opts mm = {.n = 2, .per_shard = 1, .count_key_value = 3};
    write_split(prefix, &mm);
    ggufmap_split_path(path, sizeof path, prefix, 0, 2);
    CHECK(open_model(path, &m, &err) == GGUFMAP_EFORMAT && strstr(err.message, "-00001-of-00003.gguf"));

    /* A plain file is a one-shard model; a shard-named file without split keys is refused. */
    scratch_path(path, sizeof path, "single.gguf");
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    int64_t ne[1] = {4};
    ggufmap_data d = pattern_data(1);
    ggufmap_writer_add_tensor(w, "x", 1, ne, 0, &d);
    ggufmap_writer_write(w, path, 0, &err);
    CHECK(open_model(path, &m, &err) == 0 && m && ggufmap_model_n_shards(m) == 1 && ggufmap_model_n_tensors(m) == 1);
    ggufmap_model_free(m);
    scratch_path(path, sizeof path, "lone-00001-of-00002.gguf");
    ggufmap_writer_write(w, path, 0, &err);
    CHECK(open_model(path, &m, &err) == 0); /* no split.count: llama.cpp loads it as one file */
    ggufmap_model_free(m);
    scratch_path(path, sizeof path, "lone-00002-of-00002.gguf");
    ggufmap_writer_write(w, path, 0, &err);
    CHECK(open_model(path, &m, &err) == GGUFMAP_EFORMAT && strstr(err.message, "no split.count"));
    ggufmap_writer_free(w);
    return check_summary();
}

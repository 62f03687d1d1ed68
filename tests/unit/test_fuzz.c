/*
 * test_fuzz.c - hostile bytes: thousands of mutations of a valid file.
 *
 * The reader must never read out of bounds (the sanitizer build turns any
 * such read into a failure) and every file it accepts must satisfy the
 * invariants the rest of ggufmap relies on: tensors packed in order, inside
 * the file, after the header; names unique; lookups consistent.
 */
#include "check.h"
#include "scratch.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int invariants_hold(const ggufmap_source *s) {
    uint64_t size = ggufmap_source_file_size(s);
    uint64_t data = ggufmap_source_data_offset(s);
    uint64_t align = ggufmap_source_alignment(s);
    if (align == 0 || (align & (align - 1)) || data > size) return 0;
    uint64_t expect = 0;
    for (int64_t i = 0; i < ggufmap_source_n_tensors(s); i++) {
        const ggufmap_tensor *t = ggufmap_source_tensor(s, i);
        if (t->rel_offset != expect || t->offset != data + t->rel_offset) return 0;
        if (t->offset + t->size > size || t->offset + t->size < t->offset) return 0;
        if (t->name_len >= 64 || t->n_dims > 4) return 0;
        char name[64];
        memcpy(name, t->name, t->name_len);
        name[t->name_len] = '\0';
        if (ggufmap_source_find_tensor(s, name) != i) return 0;
        expect += (t->size + align - 1) & ~(align - 1);
    }
    for (int64_t i = 0; i < ggufmap_source_n_kv(s); i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(s, i);
        if (kv->key_len == 0 || (const uint8_t *)kv->key < ggufmap_source_bytes(s) ||
            (const uint8_t *)kv->key + kv->key_len > ggufmap_source_bytes(s) + size)
            return 0;
        if (kv->value + kv->value_size > ggufmap_source_bytes(s) + size) return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_fuzz");
    char base_path[600], path[600];
    scratch_path(base_path, sizeof base_path, "base.gguf");
    scratch_path(path, sizeof path, "mutant.gguf");

    /* A base with every kind of field: arrays, strings, several tensors. */
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    ggufmap_writer_add_string(w, "general.architecture", "llama");
    ggufmap_writer_add_u32(w, "general.alignment", 32);
    const char *toks[4] = {"<s>", "</s>", "a", "bc"};
    ggufmap_writer_add_string_array(w, "tokenizer.ggml.tokens", 4, toks);
    float scores[4] = {0, 0, -1, -2};
    ggufmap_writer_add_array(w, "tokenizer.ggml.scores", GGUFMAP_VALUE_FLOAT32, 4, scores);
    ggufmap_writer_add_u64(w, "x.u64", 1);
    int64_t ne_a[2] = {32, 2}, ne_b[1] = {7}, ne_c[3] = {256, 1, 2};
    ggufmap_data d1 = pattern_data(1), d2 = pattern_data(2), d3 = pattern_data(3);
    ggufmap_writer_add_tensor(w, "a.weight", 2, ne_a, 2, &d1);
    ggufmap_writer_add_tensor(w, "b", 1, ne_b, 0, &d2);
    ggufmap_writer_add_tensor(w, "c.k", 3, ne_c, 12, &d3);
    ggufmap_error err;
    CHECK(ggufmap_writer_write(w, base_path, 0, &err) == 0);
    ggufmap_writer_free(w);
    size_t n;
    uint8_t *base = slurp(base_path, &n);
    CHECK(base != NULL);
    if (!base) return check_summary();
    uint64_t header_end;
    {
        ggufmap_source *s;
        CHECK(ggufmap_source_open(base_path, 0, &s, &err) == 0);
        header_end = ggufmap_source_data_offset(s);
        CHECK(invariants_hold(s));
        ggufmap_source_free(s);
    }

    uint8_t *m = malloc(n);
    int accepted = 0, refused = 0, broken = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(m, base, n);
        size_t len = n;
        int edits = 1 + (int)(rnd() % 4);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t)(rnd() % header_end); /* mutate the header, where the parsing is */
            switch (rnd() % 5) {
            case 0: m[at] = (uint8_t)rnd(); break;
            case 1: m[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
            case 2: /* a random little-endian u64 at a random place: big counts and lengths */
                for (int k = 0; k < 8 && at + (size_t)k < len; k++) m[at + (size_t)k] = (uint8_t)(rnd() >> (8 * k));
                break;
            case 3: m[at] = 0xff; break;
            default: len = at + 1 + (size_t)(rnd() % (n - at)); break; /* truncate */
            }
        }
        spit(path, m, len);
        ggufmap_source *s;
        int rc = ggufmap_source_open(path, (iter & 1) ? GGUFMAP_OPEN_LENIENT : 0, &s, &err);
        if (rc == 0) {
            accepted++;
            if (!(iter & 1) && !invariants_hold(s)) broken++;
            ggufmap_source_free(s);
        } else {
            refused++;
            if (rc != GGUFMAP_EFORMAT || strstr(err.message, path) == NULL) broken++;
        }
    }
    printf("fuzz: %d accepted, %d refused, %d broken\n", accepted, refused, broken);
    CHECK(broken == 0);
    CHECK(refused > 1000);
    free(m);
    free(base);
    return check_summary();
}

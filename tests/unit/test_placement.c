/*
 * test_placement.c - placement rules on small hand-made tables.  (Agreement
 * with the real llama.cpp is tests/plan's job; these pin the rules that the
 * fixtures there reach only indirectly, and the error paths.)
 */
#include "check.h"
#include "ggufmap/placement.h"
#include "scratch.h"

static char path[600];

/* A llama-like table: token_embd, 3 layers of {attn_norm, attn_q, ffn_up_exps}, output_norm,
 * optionally output and rope_freqs; q4_0 matrices with 8 rows (repackable on x86). */
static void write_model(const char *name, const char *arch, int with_output, int with_rope, uint64_t big_table) {
    scratch_path(path, sizeof path, name);
    unlink(path);
    ggufmap_writer *w = ggufmap_writer_new();
    char key[64];
    ggufmap_writer_add_string(w, "general.architecture", arch);
    snprintf(key, sizeof key, "%s.block_count", arch);
    ggufmap_writer_add_u32(w, key, 3);
    ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    int64_t mat[2] = {64, 8}, vec[1] = {64}, exps[3] = {64, 8, 4};
    ggufmap_writer_add_tensor(w, "token_embd.weight", 2, mat, 2, &z);
    if (big_table) {
        int64_t table[2] = {1024, (int64_t)(big_table / 2048)}; /* f16 */
        ggufmap_writer_add_tensor(w, "per_layer_token_embd.weight", 2, table, 1, &z);
    }
    if (with_rope) ggufmap_writer_add_tensor(w, "rope_freqs.weight", 1, vec, 0, &z);
    for (int i = 0; i < 3; i++) {
        char n[64];
        snprintf(n, sizeof n, "blk.%d.attn_norm.weight", i);
        ggufmap_writer_add_tensor(w, n, 1, vec, 0, &z);
        snprintf(n, sizeof n, "blk.%d.attn_q.weight", i);
        ggufmap_writer_add_tensor(w, n, 2, mat, 2, &z);
        snprintf(n, sizeof n, "blk.%d.ffn_up_exps.weight", i);
        ggufmap_writer_add_tensor(w, n, 3, exps, 2, &z);
    }
    ggufmap_writer_add_tensor(w, "output_norm.weight", 1, vec, 0, &z);
    if (with_output) ggufmap_writer_add_tensor(w, "output.weight", 2, mat, 2, &z);
    ggufmap_error err;
    if (ggufmap_writer_write(w, path, GGUFMAP_WRITE_SPARSE, &err)) fprintf(stderr, "%s\n", err.message);
    ggufmap_writer_free(w);
}

/* The buffer types of every instance of a tensor, as "CPU,MTL0". */
static const char *bufts_of(const ggufmap_placement *p, const char *name, char *out, size_t cap) {
    const ggufmap_model *m = ggufmap_placement_model(p);
    int64_t ti = ggufmap_model_find_tensor(m, name);
    out[0] = '\0';
    for (int64_t i = 0; i < ggufmap_placement_n_instances(p); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(p, i);
        if (in->tensor != ti) continue;
        const ggufmap_context *c = ggufmap_placement_context(p, in->context);
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%s%s", n ? "," : "", c->buft, c->lazy ? "(lazy)" : "");
    }
    return out;
}

static ggufmap_placement *place(ggufmap_model *m, ggufmap_placement_opts *o) {
    ggufmap_placement *p = NULL;
    ggufmap_error err;
    if (ggufmap_place(m, o, &p, &err)) fprintf(stderr, "place: %s\n", err.message);
    return p;
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_placement");
    char b[128];
    ggufmap_model *m;
    ggufmap_error err;
    ggufmap_placement_opts o;

    /* -ngl: output first, input never. */
    write_model("llama.gguf", "llama", 1, 1, 0);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == 0);
    ggufmap_placement_opts_init(&o);
    o.device = GGUFMAP_DEVICE_METAL;
    o.cpu = GGUFMAP_CPU_X86;
    o.n_gpu_layers = 1;
    ggufmap_placement *p = place(m, &o);
    CHECK(p && ggufmap_placement_n_layers(p) == 3);
    CHECK(p && !ggufmap_placement_layer_on_gpu(p, 2) && ggufmap_placement_layer_on_gpu(p, 3));
    CHECK(p && strcmp(bufts_of(p, "output.weight", b, sizeof b), "MTL0") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.attn_q.weight", b, sizeof b), "CPU_REPACK") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.attn_norm.weight", b, sizeof b), "CPU") == 0);
    CHECK(p && strcmp(bufts_of(p, "rope_freqs.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    o.n_gpu_layers = 2; /* output + layer 2: rope_freqs in both contexts */
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "rope_freqs.weight", b, sizeof b), "CPU,MTL0") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.attn_q.weight", b, sizeof b), "MTL0") == 0);
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    o.n_gpu_layers = -1;
    p = place(m, &o);
    CHECK(p && ggufmap_placement_layer_on_gpu(p, 0) && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU") == 0);
    /* Contexts in llama.cpp's order: CPU < MTL0. */
    CHECK(p && ggufmap_placement_n_contexts(p) == 2 && strcmp(ggufmap_placement_context(p, 0)->buft, "CPU") == 0 &&
          ggufmap_placement_context(p, 1)->mapped && strcmp(ggufmap_placement_context(p, 1)->buffer_name, "MTL0_Mapped") == 0);
    ggufmap_placement_free(p);

    /* Overrides: first match wins; =CPU selects from the CPU list (so REPACK); invalid inputs. */
    ggufmap_override ov[2] = {{"blk\\.1\\.", "CPU"}, {"attn_q", "MTL0"}};
    o.overrides = ov;
    o.n_overrides = 2;
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "blk.1.attn_q.weight", b, sizeof b), "CPU_REPACK") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.0.attn_q.weight", b, sizeof b), "MTL0") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.1.attn_norm.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    ggufmap_override bad_re[1] = {{"blk\\.(", "CPU"}};
    o.overrides = bad_re;
    o.n_overrides = 1;
    CHECK(ggufmap_place(m, &o, &p, &err) == GGUFMAP_EINVAL && p == NULL && strstr(err.message, "invalid regex"));
    ggufmap_override bad_buft[1] = {{"x", "CUDA0"}};
    o.overrides = bad_buft;
    CHECK(ggufmap_place(m, &o, &p, &err) == GGUFMAP_EINVAL && strstr(err.message, "unknown buffer type 'CUDA0'"));
    o.n_overrides = 0;

    /* --cpu-moe patterns are llama.cpp's. */
    char pat[512];
    CHECK(ggufmap_cpu_moe_patterns(-1, pat, sizeof pat) == 1 && strcmp(pat, "\\.ffn_(up|down|gate|gate_up)_(ch|)exps") == 0);
    CHECK(ggufmap_cpu_moe_patterns(2, pat, sizeof pat) == 2 && strcmp(pat, "blk\\.0\\.ffn_(up|down|gate|gate_up)_(ch|)exps") == 0 &&
          strcmp(pat + strlen(pat) + 1, "blk\\.1\\.ffn_(up|down|gate|gate_up)_(ch|)exps") == 0);

    /* CUDA: the host type comes first on the CPU list and is demoted to CPU
     * under mmap (no REPACK); --no-host brings REPACK back. */
    o.device = GGUFMAP_DEVICE_CUDA;
    o.n_gpu_layers = 1;
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "blk.0.attn_q.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    o.no_mmap = true;
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "blk.0.attn_q.weight", b, sizeof b), "CUDA_Host") == 0);
    ggufmap_placement_free(p);
    o.no_mmap = false;
    o.no_host = true;
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "blk.0.attn_q.weight", b, sizeof b), "CPU_REPACK") == 0);
    /* CUDA allocations: 128-byte alignment, quantized rows padded to 512 elements:
     * output.weight q4_0 64x8 = 288 bytes + (512 - 64) / 32 * 18 = 540 -> 640. */
    const ggufmap_context *gpu = NULL;
    for (uint32_t c = 0; p && c < ggufmap_placement_n_contexts(p); c++)
        if (strcmp(ggufmap_placement_context(p, c)->buft, "CUDA0") == 0) gpu = ggufmap_placement_context(p, c);
    CHECK(gpu && !gpu->mapped && gpu->alloc_size == 640 + 256 /* output_norm: 256 bytes f32 */);
    ggufmap_placement_free(p);
    ggufmap_model_close(m);

    /* Tied output: a second copy where the output layer's type differs. */
    write_model("tied.gguf", "qwen3moe", 0, 0, 0);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == 0);
    ggufmap_placement_opts_init(&o);
    o.cpu = GGUFMAP_CPU_X86;
    p = place(m, &o); /* CPU: the copy is a MUL_MAT of q4_0 with 8 rows: repacked */
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU,CPU_REPACK") == 0);
    ggufmap_placement_free(p);
    o.no_repack = true;
    p = place(m, &o); /* same context: reused */
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_close(m);

    /* gemma4 creates the tied copy first and token_embd without looking: two in one context. */
    write_model("gemma4.gguf", "gemma4", 0, 0, 0);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == 0);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU,CPU") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_close(m);

    /* Lazy tables: auto means strictly above 4 GiB. */
    write_model("lazy.gguf", "qwen4exp", 1, 0, 4ull << 30);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == 0);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "per_layer_token_embd.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    o.lazy = GGUFMAP_LAZY_ON;
    o.device = GGUFMAP_DEVICE_METAL;
    o.n_gpu_layers = -1;
    ggufmap_override all_gpu[1] = {{"per_layer", "MTL0"}};
    o.overrides = all_gpu;
    o.n_overrides = 1;
    p = place(m, &o); /* lazy wins over overrides */
    CHECK(p && strcmp(bufts_of(p, "per_layer_token_embd.weight", b, sizeof b), "CPU(lazy)") == 0);
    CHECK(p && strcmp(ggufmap_placement_context(p, ggufmap_placement_n_contexts(p) - 1)->buffer_name, "CPU_Mapped") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_close(m);
    write_model("lazy5.gguf", "gemma4", 1, 0, (4ull << 30) + 2048);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == 0);
    ggufmap_placement_opts_init(&o);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "per_layer_token_embd.weight", b, sizeof b), "CPU(lazy)") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_close(m);

    /* An architecture we do not model: a warning, generic rules. */
    write_model("other.gguf", "mamba9", 1, 0, 0);
    CHECK(ggufmap_model_open(path, 0, &m, &err) == 0);
    p = place(m, &o);
    CHECK(p && strstr(ggufmap_placement_warning(p), "'mamba9' is not modelled") != NULL);
    ggufmap_placement_free(p);
    ggufmap_model_close(m);
    return check_summary();
}

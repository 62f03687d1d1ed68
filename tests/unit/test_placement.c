/*
 * test_placement.c - placement rules on small hand-made tables.  (Agreement
 * with the real llama.cpp is tests/plan's job; these pin the rules that the
 * fixtures there reach only indirectly, and the error paths.)
 *
 * Every table holds exactly the tensors its architecture's loader creates
 * (src/models/<arch>.cpp of llama.cpp v0.5.0): ggufmap refuses a file with a
 * tensor missing or left over, as llama.cpp does.
 */
#include "check.h"
#include "ggufmap/load.h"
#include "ggufmap/placement.h"
#include "ggufmap/plan.h"
#include "scratch.h"

static char path[600];

/* A tensor list: "name:kind" words, kind v (f32 [64]), m (q4_0 [64, 8]:
 * repackable on x86), e (q4_0 experts [64, 8, 4]); a "blk." name is
 * written for every layer in [from, to). */
typedef struct spec {
    const char *arch;
    int layers, nextn;
    const char *globals;
    const char *per_layer;
    int from, to;            /* layers holding per_layer (to = 0: all) */
    const char *extra_layer; /* more per-layer names, for layer extra_at only */
    int extra_at;
    uint64_t table;          /* bytes of an f16 per_layer_token_embd, 0: none */
    const char *swa;         /* sliding_window_pattern, one char per layer ('1' swa), or NULL */
} spec;

static void add_tensor(ggufmap_writer *w, const char *name, char kind) {
    static const ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
    int64_t mat[2] = {64, 8}, vec[1] = {64}, exps[3] = {64, 8, 4};
    if (kind == 'm') ggufmap_writer_add_tensor(w, name, 2, mat, 2, &z);
    else if (kind == 'e') ggufmap_writer_add_tensor(w, name, 3, exps, 2, &z);
    else ggufmap_writer_add_tensor(w, name, 1, vec, 0, &z);
}

/* Adds each "name:kind" word of list, names prefixed with prefix. */
static void add_list(ggufmap_writer *w, const char *prefix, const char *list) {
    char word[96], name[160];
    for (const char *s = list; s && *s;) {
        size_t n = strcspn(s, " ");
        snprintf(word, sizeof word, "%.*s", (int)n, s);
        char *colon = strchr(word, ':');
        *colon = '\0';
        snprintf(name, sizeof name, "%s%s", prefix, word);
        add_tensor(w, name, colon[1]);
        s += n + (s[n] == ' ');
    }
}

static void write_spec(const char *file, const spec *sp) {
    scratch_path(path, sizeof path, file);
    unlink(path);
    ggufmap_writer *w = NULL;
    ggufmap_writer_new(&w);
    char key[96], prefix[32];
    ggufmap_writer_add_string(w, "general.architecture", sp->arch);
    snprintf(key, sizeof key, "%s.block_count", sp->arch);
    ggufmap_writer_add_u32(w, key, (uint32_t)sp->layers);
    if (sp->nextn) {
        snprintf(key, sizeof key, "%s.nextn_predict_layers", sp->arch);
        ggufmap_writer_add_u32(w, key, (uint32_t)sp->nextn);
    }
    if (sp->swa) {
        uint8_t pattern[16];
        for (int i = 0; i < sp->layers; i++) pattern[i] = sp->swa[i] == '1';
        snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", sp->arch);
        ggufmap_writer_add_array(w, key, GGUFMAP_VALUE_BOOL, (uint64_t)sp->layers, pattern);
    }
    add_list(w, "", sp->globals);
    if (sp->table) {
        static const ggufmap_data z = {.kind = GGUFMAP_DATA_ZEROS};
        int64_t table[2] = {1024, (int64_t)(sp->table / 2048)};
        ggufmap_writer_add_tensor(w, "per_layer_token_embd.weight", 2, table, 1, &z);
    }
    for (int i = sp->from; i < (sp->to ? sp->to : sp->layers); i++) {
        snprintf(prefix, sizeof prefix, "blk.%d.", i);
        add_list(w, prefix, sp->per_layer);
        if (sp->extra_layer && i == sp->extra_at) add_list(w, prefix, sp->extra_layer);
    }
    ggufmap_error err;
    if (ggufmap_writer_write(w, path, GGUFMAP_WRITE_SPARSE, &err)) fprintf(stderr, "%s\n", err.message);
    ggufmap_writer_free(w);
}

/* llama.cpp's llama: attention, dense FFN, an optional rope_freqs (created by every layer). */
#define LLAMA_LAYER "attn_norm.weight:v attn_q.weight:m attn_k.weight:m attn_v.weight:m " \
    "attn_output.weight:m ffn_norm.weight:v ffn_gate.weight:m ffn_down.weight:m " \
    "ffn_up.weight:m"
#define QWEN3MOE_LAYER "attn_norm.weight:v attn_q.weight:m attn_k.weight:m attn_v.weight:m " \
    "attn_output.weight:m attn_k_norm.weight:v attn_q_norm.weight:v " \
    "ffn_norm.weight:v ffn_gate_inp.weight:m ffn_gate_exps.weight:e " \
    "ffn_down_exps.weight:e ffn_up_exps.weight:e"
#define GEMMA4_LAYER "attn_norm.weight:v attn_q.weight:m attn_k.weight:m attn_v.weight:m " \
    "attn_output.weight:m attn_q_norm.weight:v attn_k_norm.weight:v " \
    "post_attention_norm.weight:v ffn_norm.weight:v ffn_gate.weight:m " \
    "ffn_up.weight:m ffn_down.weight:m post_ffw_norm.weight:v"
/* glm4moe: MoE blocks; the last nextn ones are MTP blocks (src/models/glm4-moe.cpp). */
#define GLM4MOE_LAYER "attn_norm.weight:v attn_q.weight:m attn_k.weight:m attn_v.weight:m " \
    "attn_output.weight:m post_attention_norm.weight:v ffn_gate_inp.weight:m " \
    "exp_probs_b.bias:v ffn_gate_exps.weight:e ffn_down_exps.weight:e " \
    "ffn_up_exps.weight:e"

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
    if (ggufmap_placement_build(m, o, &p, &err)) fprintf(stderr, "place: %s\n", err.message);
    return p;
}

static ggufmap_model *open_spec(const char *file, const spec *sp) {
    ggufmap_model *m = NULL;
    ggufmap_error err;
    write_spec(file, sp);
    if (ggufmap_model_open(path, 0, &m, &err)) fprintf(stderr, "open: %s\n", err.message);
    return m;
}

/* The status and message of placing a table that llama.cpp refuses. */
static int refused(const char *file, const spec *sp, char *msg, size_t cap) {
    ggufmap_model *m = open_spec(file, sp);
    ggufmap_placement_opts o;
    ggufmap_placement_opts_init(&o);
    ggufmap_placement *p = NULL;
    ggufmap_error err;
    int rc = m ? ggufmap_placement_build(m, &o, &p, &err) : -1;
    snprintf(msg, cap, "%s", rc > 0 ? err.message : "");
    ggufmap_placement_free(p);
    ggufmap_model_free(m);
    return rc;
}

/* Every context's kind and GPU flag, against the name llama.cpp gives its
 * buffer type: CUDA_Host is host memory (not the GPU's), MTL0 and CUDA0 are
 * the GPU's, and ggufmap_buft_is_gpu reads a name the same way.  Counts the
 * kinds seen into seen[]. */
static void check_kinds(const ggufmap_placement *p, int seen[4]) {
    static const struct { const char *buft; ggufmap_buft_kind kind; bool gpu; } want[] = {
        {"CPU", GGUFMAP_BUFT_CPU, false},        {"CPU_REPACK", GGUFMAP_BUFT_CPU_REPACK, false},
        {"CUDA_Host", GGUFMAP_BUFT_CUDA_HOST, false}, {"MTL0", GGUFMAP_BUFT_GPU, true},
        {"CUDA0", GGUFMAP_BUFT_GPU, true},
    };
    for (uint32_t c = 0; p && c < ggufmap_placement_n_contexts(p); c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(p, c);
        size_t k = 0;
        while (k < sizeof want / sizeof want[0] && strcmp(want[k].buft, ctx->buft) != 0) k++;
        CHECK_MSG(k < sizeof want / sizeof want[0], "context %u: unexpected buffer type %s", c, ctx->buft);
        if (k == sizeof want / sizeof want[0]) continue;
        CHECK_MSG(ctx->kind == want[k].kind && ctx->gpu == want[k].gpu && ggufmap_buft_is_gpu(ctx->buft) == want[k].gpu,
                  "%s: kind %d, gpu %d", ctx->buft, (int)ctx->kind, (int)ctx->gpu);
        seen[ctx->kind]++;
    }
}

/* One device, two ways in: ggufmap_placement_opts_init and
 * ggufmap_plan_opts_init with only the device set, and ggufmap_preset.
 * Both must give the same rules (CPU, -ot dialect, page) and the same
 * buffers; and the rules are the device's: Metal means Apple Silicon
 * (arm64 CPU rules, libc++, 16 KiB pages), the others this machine. */
static void check_presets(ggufmap_model *m) {
    static const ggufmap_device devices[] = {GGUFMAP_DEVICE_CPU, GGUFMAP_DEVICE_METAL, GGUFMAP_DEVICE_CUDA,
                                             GGUFMAP_DEVICE_ROCM};
    ggufmap_placement_opts host;
    ggufmap_placement_opts_init(&host);
    ggufmap_placement *hp = place(m, &host); /* this machine's CPU, as the CPU device resolves it */
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        ggufmap_placement_opts a, b;
        ggufmap_plan_opts pa, pb;
        ggufmap_placement_opts_init(&a);
        a.device = devices[i];
        ggufmap_plan_opts_init(&pa);
        ggufmap_preset(devices[i], &b, &pb);
        ggufmap_placement *la = place(m, &a), *lb = place(m, &b);
        ggufmap_plan *xa = NULL, *xb = NULL;
        ggufmap_error err;
        CHECK(la && lb && ggufmap_plan_build(la, &pa, &xa, &err) == GGUFMAP_OK &&
              ggufmap_plan_build(lb, &pb, &xb, &err) == GGUFMAP_OK);
        if (!xa || !xb) continue;
        const bool metal = devices[i] == GGUFMAP_DEVICE_METAL;
        CHECK_MSG(ggufmap_placement_cpu(la) == ggufmap_placement_cpu(lb) &&
                  ggufmap_placement_cpu(la) == (metal ? GGUFMAP_CPU_ARM64 : ggufmap_placement_cpu(hp)),
                  "%s: cpu %s vs %s", ggufmap_device_name(devices[i]), ggufmap_cpu_name(ggufmap_placement_cpu(la)),
                  ggufmap_cpu_name(ggufmap_placement_cpu(lb)));
        CHECK(ggufmap_placement_regex(la) == ggufmap_placement_regex(lb) &&
              ggufmap_placement_regex(la) == (metal ? GGUFMAP_REGEX_LIBCXX : GGUFMAP_REGEX_LIBSTDCXX));
        CHECK(ggufmap_plan_options(xa)->page == ggufmap_plan_options(xb)->page &&
              ggufmap_plan_options(xa)->page == (metal ? 16384u : 1u));
        CHECK(ggufmap_plan_n_buffers(xa) == ggufmap_plan_n_buffers(xb));
        for (uint32_t k = 0; k < ggufmap_plan_n_buffers(xa) && k < ggufmap_plan_n_buffers(xb); k++) {
            const ggufmap_buffer *ba = ggufmap_plan_buffer(xa, k), *bb = ggufmap_plan_buffer(xb, k);
            CHECK_MSG(strcmp(ba->name, bb->name) == 0 && ba->size == bb->size && ba->span_resident == bb->span_resident,
                      "%s buffer %u: %s %llu vs %s %llu", ggufmap_device_name(devices[i]), k, ba->name,
                      (unsigned long long)ba->size, bb->name, (unsigned long long)bb->size);
        }
        ggufmap_plan_free(xa);
        ggufmap_plan_free(xb);
        ggufmap_placement_free(la);
        ggufmap_placement_free(lb);
    }
    ggufmap_placement_free(hp);
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_placement");
    int kinds_seen[4] = {0};
    char b[128], msg[1024];
    ggufmap_placement_opts o;

    /* -ngl: output first, input never; rope_freqs in every layer's context. */
    spec llama = {"llama", 3, 0, "token_embd.weight:m rope_freqs.weight:v output_norm.weight:v output.weight:m",
                  LLAMA_LAYER, 0, 0, NULL, 0, 0, NULL};
    ggufmap_model *m = open_spec("llama.gguf", &llama);
    ggufmap_placement_opts_init(&o);
    o.device = GGUFMAP_DEVICE_METAL;
    o.cpu = GGUFMAP_CPU_X86;
    o.n_gpu_layers = 1;
    ggufmap_placement *p = place(m, &o);
    CHECK(p && ggufmap_placement_n_layers(p) == 3 && ggufmap_placement_n_layers_nextn(p) == 0);
    CHECK(p && strcmp(ggufmap_placement_arch(p), "llama") == 0);
    CHECK(p && !ggufmap_placement_layer_on_gpu(p, 2) && ggufmap_placement_layer_on_gpu(p, 3));
    CHECK(p && strcmp(bufts_of(p, "output.weight", b, sizeof b), "MTL0") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.attn_q.weight", b, sizeof b), "CPU_REPACK") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.attn_norm.weight", b, sizeof b), "CPU") == 0);
    CHECK(p && strcmp(bufts_of(p, "rope_freqs.weight", b, sizeof b), "CPU") == 0);
    check_kinds(p, kinds_seen); /* CPU, CPU_REPACK, MTL0 */
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
    check_presets(m);
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
    ggufmap_error err;
    ggufmap_override bad_re[1] = {{"blk\\.(", "CPU"}};
    o.overrides = bad_re;
    o.n_overrides = 1;
    CHECK(ggufmap_placement_build(m, &o, &p, &err) == GGUFMAP_EINVAL && p == NULL && strstr(err.message, "invalid regex"));
    ggufmap_override bad_buft[1] = {{"x", "CUDA0"}};
    o.overrides = bad_buft;
    CHECK(ggufmap_placement_build(m, &o, &p, &err) == GGUFMAP_EINVAL && strstr(err.message, "unknown buffer type 'CUDA0'"));
    o.n_overrides = 0;

    /* --cpu-moe patterns are llama.cpp's. */
    char pat[512];
    int n_pat = 0;
    CHECK(ggufmap_cpu_moe_patterns(-1, pat, sizeof pat, &n_pat) == GGUFMAP_OK && n_pat == 1 && strcmp(pat, "\\.ffn_(up|down|gate|gate_up)_(ch|)exps") == 0);
    CHECK(ggufmap_cpu_moe_patterns(2, pat, sizeof pat, &n_pat) == GGUFMAP_OK && n_pat == 2 && strcmp(pat, "blk\\.0\\.ffn_(up|down|gate|gate_up)_(ch|)exps") == 0 &&
          strcmp(pat + strlen(pat) + 1, "blk\\.1\\.ffn_(up|down|gate|gate_up)_(ch|)exps") == 0);
    CHECK(ggufmap_cpu_moe_patterns(2, pat, 40, &n_pat) == GGUFMAP_EINVAL && n_pat == 0); /* too small */

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
    check_kinds(p, kinds_seen); /* CUDA_Host, CUDA0 */
    ggufmap_placement_free(p);
    for (int k = 0; k < 4; k++) CHECK_MSG(kinds_seen[k] > 0, "no context of kind %d was placed", k);
    /* Names from outside a placement: llama.cpp's device names by prefix. */
    CHECK(ggufmap_buft_is_gpu("CUDA1") && ggufmap_buft_is_gpu("MTL0") && !ggufmap_buft_is_gpu("CUDA_Host") &&
          !ggufmap_buft_is_gpu("CPU_REPACK") && !ggufmap_buft_is_gpu("CPU") && !ggufmap_buft_is_gpu("Metal"));
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
    ggufmap_model_free(m);

    /* Tied output: a second copy where the output layer's type differs. */
    spec tied = {"qwen3moe", 3, 0, "token_embd.weight:m output_norm.weight:v", QWEN3MOE_LAYER, 0, 0, NULL, 0, 0, NULL};
    m = open_spec("tied.gguf", &tied);
    ggufmap_placement_opts_init(&o);
    o.cpu = GGUFMAP_CPU_X86;
    p = place(m, &o); /* CPU: the copy is a MUL_MAT of q4_0 with 8 rows: repacked */
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU,CPU_REPACK") == 0);
    ggufmap_placement_free(p);
    o.no_repack = true;
    p = place(m, &o); /* same context: reused */
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_free(m);

    /* gemma4 creates the tied copy first and token_embd without looking: two
     * in one context.  rope_freqs belongs to the full-attention layers only
     * (sliding_window_pattern 0): here layer 2. */
    spec gemma4 = {"gemma4", 3, 0, "token_embd.weight:m output_norm.weight:v rope_freqs.weight:v", GEMMA4_LAYER,
                   0, 0, NULL, 0, 0, "110"};
    m = open_spec("gemma4.gguf", &gemma4);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "token_embd.weight", b, sizeof b), "CPU,CPU") == 0);
    ggufmap_placement_free(p);
    o.device = GGUFMAP_DEVICE_METAL;
    o.n_gpu_layers = 2; /* output and layer 2: the only full layer is on the GPU */
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "rope_freqs.weight", b, sizeof b), "MTL0") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_free(m);
    gemma4.swa = "011"; /* layer 0 full: rope_freqs stays with it on the CPU */
    m = open_spec("gemma4-swa.gguf", &gemma4);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "rope_freqs.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_free(m);

    /* Lazy tables: auto means strictly above 4 GiB; lazy wins over overrides. */
    spec ple = {"gemma4", 3, 0,
                "token_embd.weight:m output_norm.weight:v rope_freqs.weight:v per_layer_model_proj.weight:m "
                "per_layer_proj_norm.weight:v output.weight:m",
                GEMMA4_LAYER " inp_gate.weight:m proj.weight:m post_norm.weight:v", 0, 0, NULL, 0, 4ull << 30, "110"};
    m = open_spec("lazy.gguf", &ple);
    ggufmap_placement_opts_init(&o);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "per_layer_token_embd.weight", b, sizeof b), "CPU") == 0);
    ggufmap_placement_free(p);
    o.lazy = GGUFMAP_LAZY_ON;
    o.device = GGUFMAP_DEVICE_METAL;
    o.n_gpu_layers = -1;
    ggufmap_override all_gpu[1] = {{"per_layer", "MTL0"}};
    o.overrides = all_gpu;
    o.n_overrides = 1;
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "per_layer_token_embd.weight", b, sizeof b), "CPU(lazy)") == 0);
    CHECK(p && strcmp(ggufmap_placement_context(p, ggufmap_placement_n_contexts(p) - 1)->buffer_name, "CPU_Mapped") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_free(m);
    ple.table = (4ull << 30) + 2048;
    m = open_spec("lazy5.gguf", &ple);
    ggufmap_placement_opts_init(&o);
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "per_layer_token_embd.weight", b, sizeof b), "CPU(lazy)") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_free(m);

    /* MTP: the last nextn_predict_layers blocks are skipped unless load_mtp;
     * -ngl counts them either way (the output layer is block_count). */
    spec glm = {"glm4moe", 3, 1, "token_embd.weight:m output_norm.weight:v output.weight:m", GLM4MOE_LAYER, 0, 0,
                "nextn.eh_proj.weight:m nextn.enorm.weight:v nextn.hnorm.weight:v", 2, 0, NULL};
    m = open_spec("mtp.gguf", &glm);
    ggufmap_placement_opts_init(&o);
    o.device = GGUFMAP_DEVICE_METAL;
    o.n_gpu_layers = 2; /* output and block 2, the MTP block */
    p = place(m, &o);
    CHECK(p && ggufmap_placement_n_layers(p) == 3 && ggufmap_placement_n_layers_nextn(p) == 1);
    CHECK(p && strcmp(bufts_of(p, "blk.2.nextn.eh_proj.weight", b, sizeof b), "") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.attn_q.weight", b, sizeof b), "") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.1.attn_q.weight", b, sizeof b), "CPU_REPACK") == 0);
    ggufmap_placement_free(p);
    o.load_mtp = true;
    p = place(m, &o);
    CHECK(p && strcmp(bufts_of(p, "blk.2.nextn.eh_proj.weight", b, sizeof b), "MTL0") == 0);
    CHECK(p && strcmp(bufts_of(p, "blk.2.ffn_up_exps.weight", b, sizeof b), "MTL0") == 0);
    ggufmap_placement_free(p);
    ggufmap_model_free(m);

    /* What llama.cpp refuses, refused with the name that matters. */
    spec other = llama;
    other.arch = "mamba9";
    CHECK(refused("other.gguf", &other, msg, sizeof msg) == GGUFMAP_EFORMAT && strstr(msg, "'mamba9'"));
    spec missing = llama;
    missing.to = 2; /* block 2 has no tensors */
    CHECK(refused("missing.gguf", &missing, msg, sizeof msg) == GGUFMAP_EFORMAT &&
          strstr(msg, "tensor 'blk.2.attn_norm.weight' not found"));
    spec extra = llama;
    extra.extra_layer = "attn_bogus.weight:v";
    extra.extra_at = 1;
    CHECK(refused("extra.gguf", &extra, msg, sizeof msg) == GGUFMAP_EFORMAT && strstr(msg, "'blk.1.attn_bogus.weight'") &&
          strstr(msg, "not used"));
    spec no_output = {"gpt-oss", 1, 0, "token_embd.weight:m output_norm.weight:v", "", 0, 0, NULL, 0, 0, NULL};
    CHECK(refused("gptoss.gguf", &no_output, msg, sizeof msg) == GGUFMAP_EFORMAT && strstr(msg, "'output.weight'"));
    spec no_blocks = llama;
    no_blocks.layers = 0;
    CHECK(refused("zero.gguf", &no_blocks, msg, sizeof msg) == GGUFMAP_EFORMAT && strstr(msg, "llama.block_count"));
    return check_summary();
}

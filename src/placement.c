/*
 * placement.c - llama.cpp v0.5.0's buffer-type decision, tensor by tensor.
 *
 * Data structure.  A placement holds the instances (tensors as llama.cpp
 * creates them: one per file tensor, plus duplicated copies) and the contexts
 * they fall into, keyed by (buffer type, lazy) and sorted as llama.cpp's
 * ctx_map sorts them.  Buffer types are a small closed set here: CPU,
 * CPU_REPACK, the GPU's default type (MTL0 or CUDA0) and CUDA_Host.
 *
 * The rules, with llama.cpp source lines, are in docs/placement-rules.md; the
 * comments below cite its sections.  Every rule is checked against the real
 * llama.cpp by tests/plan (the differential test).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggufmap/placement.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* Buffer types and ops                                                      */
/* ------------------------------------------------------------------------ */

typedef enum buft { BUFT_CPU, BUFT_REPACK, BUFT_HOST, BUFT_GPU } buft;

typedef enum op { OP_GET_ROWS, OP_MUL_MAT, OP_MUL_MAT_ID, OP_MUL, OP_ADD, OP_ROPE, OP_SSM_CONV } op;

struct ggufmap_placement {
    const ggufmap_model *model;
    ggufmap_placement_opts opts;
    ggufmap_cpu cpu;
    int32_t n_layers;
    int32_t gpu_start, gpu_count; /* layers [gpu_start, gpu_start + gpu_count) run on the GPU */
    ggufmap_context *contexts;
    uint32_t n_contexts;
    ggufmap_instance *instances;
    int64_t n_instances, cap_instances;
    char warning[512];
};

static const char *gpu_buft_name(ggufmap_device d) { return d == GGUFMAP_DEVICE_METAL ? "MTL0" : "CUDA0"; }

static const char *buft_name(const ggufmap_placement *p, buft b) {
    switch (b) {
    case BUFT_CPU: return "CPU";
    case BUFT_REPACK: return "CPU_REPACK";
    case BUFT_HOST: return "CUDA_Host";
    default: return gpu_buft_name(p->opts.device);
    }
}

/* ggml_n_dims: 1 + the index of the last dimension with more than one element. */
static int n_dims_of(const ggufmap_tensor *t) {
    for (int i = 3; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

/* ggml_repack_get_optimal_repack_type: does this CPU repack this weight type
 * with r rows per matrix?  (docs/placement-rules.md 2.3, repack.cpp:4925-5141) */
static bool cpu_repacks(ggufmap_cpu cpu, int32_t type, int64_t r) {
    enum { Q4_0 = 2, Q8_0 = 8, Q2_K = 10, Q4_K = 12, Q5_K = 13, Q6_K = 14, IQ4_NL = 20, MXFP4 = 39, Q1_0 = 41 };
    switch (cpu) {
    case GGUFMAP_CPU_X86: /* AVX-512F adds Q2_K to what AVX2 repacks */
        return (type == Q4_0 || type == Q4_K || type == IQ4_NL || type == MXFP4 || type == Q2_K) && r % 8 == 0;
    case GGUFMAP_CPU_X86_AVX2:
        return (type == Q4_0 || type == Q4_K || type == IQ4_NL || type == MXFP4) && r % 8 == 0;
    case GGUFMAP_CPU_ARM64:
        if (type == Q4_0 || type == Q8_0 || type == IQ4_NL || type == MXFP4 || type == Q1_0) return r % 4 == 0;
        if (type == Q4_K || type == Q5_K || type == Q6_K) return r % 8 == 0;
        return false;
    default: return false;
    }
}

/* Does buffer type b accept tensor t used by op o?  (weight_buft_supported) */
static bool supports(const ggufmap_placement *p, buft b, const ggufmap_tensor *t, op o) {
    switch (b) {
    case BUFT_REPACK: {
        int nd = n_dims_of(t);
        if (!((o == OP_MUL_MAT && nd == 2) || (o == OP_MUL_MAT_ID && nd == 3))) return false;
        return cpu_repacks(p->cpu, t->type, t->ne[1]);
    }
    case BUFT_GPU:
        if (p->opts.device == GGUFMAP_DEVICE_METAL) {
            /* ggml-metal-device.m supports_op on Apple7+: element-wise ops need
             * the weight in F32 (the test input is F32); matrix products and
             * row gathers take every type but NVFP4 and TQ1_0. */
            if (o == OP_MUL || o == OP_ADD) return t->type == 0;
            if (o == OP_MUL_MAT || o == OP_MUL_MAT_ID || o == OP_GET_ROWS) return t->type != 40 && t->type != 34;
        }
        return true;
    default: return true; /* CPU and the CUDA host type accept every weight */
    }
}

/* ------------------------------------------------------------------------ */
/* Tensor classes (docs/placement-rules.md section 1)                        */
/* ------------------------------------------------------------------------ */

typedef enum arch { ARCH_OTHER, ARCH_LLAMA, ARCH_QWEN3MOE, ARCH_GEMMA4, ARCH_QWEN4EXP } arch;

typedef struct tensor_kind {
    ggufmap_tensor_class cls;
    int32_t layer;
    op o;
    bool lazy_candidate; /* created with TENSOR_READ_LAZY */
    bool per_layer_copy; /* rope_freqs: created (duplicated) by every layer that uses it */
} tensor_kind;

static bool has_suffix(const char *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

static bool contains(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(s + i, needle, k) == 0) return true;
    return false;
}

/* The op llama.cpp tests a weight with, from its base name (no "blk.N."). */
static op op_of(const char *s, size_t n) {
    bool exps = contains(s, n, "_exps") || contains(s, n, "_chexps");
    if (has_suffix(s, n, ".bias")) return OP_ADD; /* ADD, or ADD_ID for experts: same verdicts here */
    if (contains(s, n, "conv1d")) return OP_SSM_CONV;
    if (exps) return OP_MUL_MAT_ID;
    if (contains(s, n, "norm") || (n >= 5 && memcmp(s, "ssm_a", 5) == 0 && (n == 5 || s[5] == '.')) ||
        contains(s, n, "layer_output_scale"))
        return OP_MUL;
    return OP_MUL_MAT;
}

static void classify(arch a, const char *name, size_t n, tensor_kind *k) {
    memset(k, 0, sizeof *k);
    k->layer = -1;
    if (n > 4 && memcmp(name, "blk.", 4) == 0) {
        int32_t layer = 0;
        size_t i = 4;
        while (i < n && name[i] >= '0' && name[i] <= '9' && layer < 100000) layer = layer * 10 + (name[i++] - '0');
        if (i > 4 && i < n && name[i] == '.') {
            k->cls = GGUFMAP_CLASS_LAYER;
            k->layer = layer;
            k->o = op_of(name + i + 1, n - i - 1);
            return;
        }
    }
    if ((n == 17 && memcmp(name, "token_embd.weight", 17) == 0) || has_suffix(name, n, "pos_embd.weight") ||
        (n >= 11 && memcmp(name, "token_types", 11) == 0)) {
        k->cls = GGUFMAP_CLASS_INPUT;
        k->o = OP_GET_ROWS;
        return;
    }
    if (n >= 20 && memcmp(name, "per_layer_token_embd", 20) == 0) {
        k->cls = GGUFMAP_CLASS_INPUT;
        k->o = OP_GET_ROWS;
        k->lazy_candidate = a == ARCH_GEMMA4 || a == ARCH_QWEN4EXP;
        return;
    }
    if (n >= 6 && memcmp(name, "output", 6) == 0) {
        k->cls = GGUFMAP_CLASS_OUTPUT;
        k->o = op_of(name, n);
        return;
    }
    if ((n >= 10 && memcmp(name, "rope_freqs", 10) == 0) || (n >= 12 && memcmp(name, "rope_factors", 12) == 0)) {
        k->cls = GGUFMAP_CLASS_LAYER;
        k->layer = 0;
        k->o = OP_ROPE;
        k->per_layer_copy = true;
        return;
    }
    /* gemma4's per_layer_model_proj / per_layer_proj_norm belong to layer 0;
     * any other un-numbered tensor is taken the same way. */
    k->cls = GGUFMAP_CLASS_LAYER;
    k->layer = 0;
    k->o = op_of(name, n);
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct ctx_key {
    buft b;
    bool lazy;
} ctx_key;

typedef struct work {
    ctx_key keys[8];
    uint32_t n;
} work;

static uint32_t context_for(work *w, buft b, bool lazy) {
    for (uint32_t i = 0; i < w->n; i++)
        if (w->keys[i].b == b && w->keys[i].lazy == lazy) return i;
    w->keys[w->n].b = b;
    w->keys[w->n].lazy = lazy;
    return w->n++;
}

static int add_instance(ggufmap_placement *p, int64_t tensor, uint32_t ctx, const tensor_kind *k, int32_t layer,
                        bool dup) {
    if (p->n_instances == p->cap_instances) {
        int64_t cap = p->cap_instances ? 2 * p->cap_instances : 256;
        ggufmap_instance *ni = realloc(p->instances, (size_t)cap * sizeof *ni);
        if (!ni) return GGUFMAP_ENOMEM;
        p->instances = ni;
        p->cap_instances = cap;
    }
    ggufmap_instance *in = &p->instances[p->n_instances++];
    in->tensor = tensor;
    in->context = ctx;
    in->cls = k->cls;
    in->layer = layer;
    in->duplicate = dup;
    return GGUFMAP_OK;
}

/* Has a copy of tensor already been put in context ctx? */
static bool in_context(const ggufmap_placement *p, int64_t tensor, uint32_t ctx) {
    for (int64_t i = p->n_instances - 1; i >= 0; i--)
        if (p->instances[i].tensor == tensor && p->instances[i].context == ctx) return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* The decision                                                              */
/* ------------------------------------------------------------------------ */

typedef struct compiled_override {
    pcre2_code *re;
    int target; /* -1: CPU (select from the CPU list), else a buft */
} compiled_override;

static bool layer_on_gpu(const ggufmap_placement *p, int32_t il) {
    return p->gpu_count > 0 && il >= p->gpu_start && il < p->gpu_start + p->gpu_count;
}

/* The buffer-type list of a layer (llama-model.cpp make_cpu/gpu_buft_list). */
static uint32_t buft_list(const ggufmap_placement *p, bool gpu, buft *list) {
    uint32_t n = 0;
    if (gpu) list[n++] = BUFT_GPU;
    if (p->opts.device == GGUFMAP_DEVICE_CUDA && !p->opts.no_host) list[n++] = BUFT_HOST;
    if (!p->opts.no_repack) list[n++] = BUFT_REPACK;
    list[n++] = BUFT_CPU;
    return n;
}

static buft select_buft(const ggufmap_placement *p, const buft *list, uint32_t n, const ggufmap_tensor *t, op o) {
    for (uint32_t i = 0; i < n; i++)
        if (supports(p, list[i], t, o)) return list[i];
    return BUFT_CPU;
}

/* llama_model_loader::create_tensor's buft_for_tensor, for one instance;
 * *lazy says whether it goes to the lazy context. */
static buft decide(const ggufmap_placement *p, const compiled_override *ovr, pcre2_match_data *md,
                   const ggufmap_tensor *t, const tensor_kind *k, ggufmap_tensor_class cls, int32_t layer, op o,
                   bool *lazy) {
    *lazy = false;
    if (k->lazy_candidate && p->opts.lazy != GGUFMAP_LAZY_OFF &&
        (p->opts.lazy == GGUFMAP_LAZY_ON || t->size > 4ull * 1024 * 1024 * 1024)) {
        *lazy = true;
        return BUFT_CPU;
    }
    buft list[4];
    bool gpu = cls == GGUFMAP_CLASS_INPUT ? false : layer_on_gpu(p, layer);
    uint32_t n = buft_list(p, gpu, list);
    buft b = BUFT_CPU;
    bool chosen = false;
    char name[GGUFMAP_MAX_NAME];
    memcpy(name, t->name, t->name_len);
    name[t->name_len] = '\0';
    for (uint32_t i = 0; i < p->opts.n_overrides && !chosen; i++) {
        if (pcre2_match(ovr[i].re, (PCRE2_SPTR)name, t->name_len, 0, 0, md, NULL) < 0) continue;
        if (ovr[i].target < 0) {
            buft cpu_list[4];
            uint32_t m = buft_list(p, false, cpu_list);
            b = select_buft(p, cpu_list, m, t, o);
        } else {
            b = (buft)ovr[i].target; /* used as it is, no support check */
        }
        chosen = true;
    }
    if (!chosen) b = select_buft(p, list, n, t, o);
    if (b == BUFT_HOST && !p->opts.no_mmap) b = BUFT_CPU; /* host type demoted under mmap */
    return b;
}

static int compile_overrides(const ggufmap_placement_opts *o, compiled_override *out, ggufmap_error *err) {
    for (uint32_t i = 0; i < o->n_overrides; i++) {
        const ggufmap_override *ov = &o->overrides[i];
        if (strcmp(ov->buft, "CPU") == 0)
            out[i].target = -1;
        else if (o->device != GGUFMAP_DEVICE_CPU && strcmp(ov->buft, gpu_buft_name(o->device)) == 0)
            out[i].target = BUFT_GPU;
        else
            return gm_fail(err, GGUFMAP_EINVAL, "override '%s=%s': unknown buffer type '%s' (available: CPU%s%s)",
                           ov->pattern, ov->buft, ov->buft, o->device != GGUFMAP_DEVICE_CPU ? ", " : "",
                           o->device != GGUFMAP_DEVICE_CPU ? gpu_buft_name(o->device) : "");
        int code;
        PCRE2_SIZE at;
        out[i].re = pcre2_compile((PCRE2_SPTR)ov->pattern, PCRE2_ZERO_TERMINATED, 0, &code, &at, NULL);
        if (!out[i].re) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(code, msg, sizeof msg);
            return gm_fail(err, GGUFMAP_EINVAL, "override '%s=%s': invalid regex at offset %zu: %s", ov->pattern,
                           ov->buft, (size_t)at, (const char *)msg);
        }
    }
    return GGUFMAP_OK;
}

static arch arch_of(const ggufmap_model *m, char *name, size_t cap) {
    const ggufmap_kv *kv = ggufmap_model_find_kv(m, "general.architecture");
    const char *s;
    uint64_t n;
    name[0] = '\0';
    if (!kv || ggufmap_kv_string(kv, &s, &n) != GGUFMAP_OK) return ARCH_OTHER;
    snprintf(name, cap, "%.*s", (int)(n < 64 ? n : 64), s);
    if (strcmp(name, "llama") == 0) return ARCH_LLAMA;
    if (strcmp(name, "qwen3moe") == 0) return ARCH_QWEN3MOE;
    if (strcmp(name, "gemma4") == 0) return ARCH_GEMMA4;
    if (strcmp(name, "qwen4exp") == 0) return ARCH_QWEN4EXP;
    return ARCH_OTHER;
}

/* <arch>.block_count, or the highest blk.N + 1 with a warning. */
static int32_t layer_count(ggufmap_placement *p, const char *arch_name) {
    char key[128];
    snprintf(key, sizeof key, "%s.block_count", arch_name);
    const ggufmap_kv *kv = ggufmap_model_find_kv(p->model, key);
    int64_t v;
    if (kv && ggufmap_kv_int(kv, &v) == GGUFMAP_OK && v > 0 && v < 100000) return (int32_t)v;
    int32_t max = -1;
    for (int64_t i = 0; i < ggufmap_model_n_tensors(p->model); i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(p->model, i);
        tensor_kind k;
        classify(ARCH_OTHER, t->name, t->name_len, &k);
        if (k.cls == GGUFMAP_CLASS_LAYER && !k.per_layer_copy && k.layer > max) max = k.layer;
    }
    snprintf(p->warning + strlen(p->warning), sizeof p->warning - strlen(p->warning),
             "%s'%s' missing: %d layers counted from the tensor names. ", p->warning[0] ? "" : "", key, max + 1);
    return max + 1;
}

/* Which layers create rope_freqs: every layer, but only the full-attention
 * ones in gemma4 (sliding_window_pattern[i] false). */
static bool layer_uses_rope_freqs(const ggufmap_placement *p, arch a, int32_t il) {
    if (a != ARCH_GEMMA4) return true;
    const ggufmap_kv *kv = ggufmap_model_find_kv(p->model, "gemma4.attention.sliding_window_pattern");
    int64_t swa;
    if (!kv || ggufmap_kv_array_int(kv, (uint64_t)il, &swa) != GGUFMAP_OK) return true;
    return swa == 0;
}

static ggufmap_cpu host_cpu(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512f")) return GGUFMAP_CPU_X86;
    if (__builtin_cpu_supports("avx2")) return GGUFMAP_CPU_X86_AVX2;
    return GGUFMAP_CPU_GENERIC;
#elif defined(__aarch64__)
    return GGUFMAP_CPU_ARM64;
#else
    return GGUFMAP_CPU_GENERIC;
#endif
}

/* Puts one file tensor's instance(s) into contexts. */
static int place_tensor(ggufmap_placement *p, work *w, const compiled_override *ovr, pcre2_match_data *md, arch a,
                        int64_t ti, int64_t output_tensor_missing) {
    const ggufmap_tensor *t = ggufmap_model_tensor(p->model, ti);
    tensor_kind k;
    classify(a, t->name, t->name_len, &k);
    bool lazy;
    int rc;
    if (k.per_layer_copy) {
        /* One copy in each distinct context of the layers that create it. */
        bool first = true;
        for (int32_t il = 0; il < p->n_layers; il++) {
            if (!layer_uses_rope_freqs(p, a, il)) continue;
            buft b = decide(p, ovr, md, t, &k, GGUFMAP_CLASS_LAYER, il, k.o, &lazy);
            uint32_t c = context_for(w, b, lazy);
            if (!first && in_context(p, ti, c)) continue;
            if ((rc = add_instance(p, ti, c, &k, il, !first))) return rc;
            first = false;
        }
        return GGUFMAP_OK;
    }
    int32_t layer = k.cls == GGUFMAP_CLASS_OUTPUT ? p->n_layers : k.layer;
    bool is_embd = t->name_len == 17 && memcmp(t->name, "token_embd.weight", 17) == 0;
    tensor_kind out_k = {GGUFMAP_CLASS_OUTPUT, p->n_layers, OP_MUL_MAT, false, false};
    if (is_embd && output_tensor_missing && a == ARCH_GEMMA4) {
        /* gemma4 creates the tied output copy first, then token_embd without
         * looking for it: two tensors even in one context. */
        buft b = decide(p, ovr, md, t, &out_k, GGUFMAP_CLASS_OUTPUT, p->n_layers, OP_MUL_MAT, &lazy);
        if ((rc = add_instance(p, ti, context_for(w, b, lazy), &out_k, p->n_layers, true))) return rc;
    }
    buft b = decide(p, ovr, md, t, &k, k.cls, layer, k.o, &lazy);
    if ((rc = add_instance(p, ti, context_for(w, b, lazy), &k, layer, false))) return rc;
    if (is_embd && output_tensor_missing && a != ARCH_GEMMA4) {
        /* The tied output: reused when it lands in token_embd's context. */
        b = decide(p, ovr, md, t, &out_k, GGUFMAP_CLASS_OUTPUT, p->n_layers, OP_MUL_MAT, &lazy);
        uint32_t c = context_for(w, b, lazy);
        if (!in_context(p, ti, c) && (rc = add_instance(p, ti, c, &out_k, p->n_layers, true))) return rc;
    }
    return GGUFMAP_OK;
}

/* CUDA's allocation size: quantized rows padded to a multiple of 512 elements. */
static uint64_t alloc_size(const ggufmap_placement *p, buft b, const ggufmap_tensor *t) {
    const ggufmap_type_info *ti = ggufmap_type(t->type);
    if (b == BUFT_GPU && p->opts.device == GGUFMAP_DEVICE_CUDA && ti && ti->block_size > 1 && t->ne[0] % 512 != 0)
        return t->size + (uint64_t)(512 - t->ne[0] % 512) / ti->block_size * ti->type_size;
    return t->size;
}

static int compare_keys(const ctx_key *a, const ctx_key *b, const ggufmap_placement *p) {
    if (a->lazy != b->lazy) return a->lazy ? 1 : -1;
    return strcmp(buft_name(p, a->b), buft_name(p, b->b));
}

/* Sorts the contexts as llama.cpp's ctx_map and fills their records. */
static int finish_contexts(ggufmap_placement *p, const work *w) {
    uint32_t order[8], rank[8];
    for (uint32_t i = 0; i < w->n; i++) order[i] = i;
    for (uint32_t i = 1; i < w->n; i++) /* insertion sort: at most a handful */
        for (uint32_t j = i; j > 0 && compare_keys(&w->keys[order[j]], &w->keys[order[j - 1]], p) < 0; j--) {
            uint32_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    for (uint32_t i = 0; i < w->n; i++) rank[order[i]] = i;
    p->contexts = calloc(w->n ? w->n : 1, sizeof *p->contexts);
    if (!p->contexts) return GGUFMAP_ENOMEM;
    p->n_contexts = w->n;
    for (uint32_t i = 0; i < w->n; i++) {
        const ctx_key *k = &w->keys[order[i]];
        ggufmap_context *c = &p->contexts[i];
        snprintf(c->buft, sizeof c->buft, "%s", buft_name(p, k->b));
        c->lazy = k->lazy;
        bool from_host_ptr = k->b == BUFT_CPU || (k->b == BUFT_GPU && p->opts.device == GGUFMAP_DEVICE_METAL);
        c->mapped = (!p->opts.no_mmap || k->lazy) && from_host_ptr;
        c->alignment = k->b == BUFT_GPU && p->opts.device == GGUFMAP_DEVICE_CUDA ? 128 : 32;
        if (c->mapped)
            snprintf(c->buffer_name, sizeof c->buffer_name, "%s_Mapped", c->buft);
        else
            snprintf(c->buffer_name, sizeof c->buffer_name, "%s", c->buft);
    }
    for (int64_t i = 0; i < p->n_instances; i++) {
        ggufmap_instance *in = &p->instances[i];
        uint32_t old = in->context;
        in->context = rank[old];
        ggufmap_context *c = &p->contexts[in->context];
        const ggufmap_tensor *t = ggufmap_model_tensor(p->model, in->tensor);
        c->n_instances++;
        if (t->size > c->max_tensor) c->max_tensor = t->size;
        c->alloc_size += gm_pad(alloc_size(p, w->keys[old].b, t), c->alignment);
    }
    return GGUFMAP_OK;
}

void ggufmap_placement_opts_init(ggufmap_placement_opts *o) {
    memset(o, 0, sizeof *o);
    o->device = GGUFMAP_DEVICE_CPU;
    o->n_gpu_layers = -1;
    o->cpu = GGUFMAP_CPU_HOST;
    o->lazy = GGUFMAP_LAZY_AUTO;
}

int ggufmap_cpu_moe_patterns(int n_layers, char *buf, size_t cap) {
    static const char exps[] = "\\.ffn_(up|down|gate|gate_up)_(ch|)exps"; /* common.h LLM_FFN_EXPS_REGEX */
    size_t used = 0;
    int count = n_layers < 0 ? 1 : n_layers;
    for (int i = 0; i < count; i++) {
        int k = n_layers < 0 ? snprintf(buf + used, cap - used, "%s", exps)
                             : snprintf(buf + used, cap - used, "blk\\.%d%s", i, exps);
        if (k < 0 || used + (size_t)k + 1 > cap) return -1;
        used += (size_t)k + 1;
    }
    return count;
}

int ggufmap_place(const ggufmap_model *model, const ggufmap_placement_opts *opts, ggufmap_placement **out,
                  ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    ggufmap_placement *p = calloc(1, sizeof *p);
    compiled_override *ovr = calloc(opts->n_overrides ? opts->n_overrides : 1, sizeof *ovr);
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    int rc = GGUFMAP_OK;
    if (!p || !ovr || !md) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    p->model = model;
    p->opts = *opts;
    p->opts.overrides = NULL; /* not kept: the caller's strings need not outlive this call */
    p->cpu = opts->cpu == GGUFMAP_CPU_HOST ? host_cpu() : opts->cpu;
    if ((rc = compile_overrides(opts, ovr, err))) goto done;

    char arch_name[80];
    arch a = arch_of(model, arch_name, sizeof arch_name);
    if (a == ARCH_OTHER)
        snprintf(p->warning, sizeof p->warning,
                 "architecture '%s' is not modelled (llama, qwen3moe, gemma4, qwen4exp are): tensor classes follow "
                 "the generic name rules. ",
                 arch_name[0] ? arch_name : "(none)");
    p->n_layers = layer_count(p, arch_name);
    if (opts->device != GGUFMAP_DEVICE_CPU) {
        int32_t ngl = opts->n_gpu_layers < 0 ? p->n_layers + 1 : opts->n_gpu_layers;
        p->gpu_start = p->n_layers + 1 - ngl > 0 ? p->n_layers + 1 - ngl : 0;
        p->gpu_count = ngl < p->n_layers + 1 ? ngl : p->n_layers + 1;
    }

    int64_t output_missing = ggufmap_model_find_tensor(model, "output.weight") < 0;
    work w = {.n = 0};
    for (int64_t i = 0; i < ggufmap_model_n_tensors(model) && !rc; i++)
        rc = place_tensor(p, &w, ovr, md, a, i, output_missing);
    if (!rc && (rc = finish_contexts(p, &w))) gm_fail(err, rc, "out of memory");
    if (rc && err && !err->message[0]) gm_fail(err, rc, "out of memory");
done:
    for (uint32_t i = 0; ovr && i < opts->n_overrides; i++) pcre2_code_free(ovr[i].re);
    free(ovr);
    pcre2_match_data_free(md);
    if (rc) {
        ggufmap_placement_free(p);
        return rc;
    }
    size_t wl = strlen(p->warning);
    if (wl && p->warning[wl - 1] == ' ') p->warning[wl - 1] = '\0';
    *out = p;
    return GGUFMAP_OK;
}

void ggufmap_placement_free(ggufmap_placement *p) {
    if (!p) return;
    free(p->contexts);
    free(p->instances);
    free(p);
}

const ggufmap_model *ggufmap_placement_model(const ggufmap_placement *p) { return p->model; }
uint32_t ggufmap_placement_n_contexts(const ggufmap_placement *p) { return p->n_contexts; }
const ggufmap_context *ggufmap_placement_context(const ggufmap_placement *p, uint32_t i) {
    return i < p->n_contexts ? &p->contexts[i] : NULL;
}
int64_t ggufmap_placement_n_instances(const ggufmap_placement *p) { return p->n_instances; }
const ggufmap_instance *ggufmap_placement_instance(const ggufmap_placement *p, int64_t i) {
    return i >= 0 && i < p->n_instances ? &p->instances[i] : NULL;
}
int32_t ggufmap_placement_n_layers(const ggufmap_placement *p) { return p->n_layers; }
bool ggufmap_placement_layer_on_gpu(const ggufmap_placement *p, int32_t layer) { return layer_on_gpu(p, layer); }
const ggufmap_placement_opts *ggufmap_placement_options(const ggufmap_placement *p) { return &p->opts; }
const char *ggufmap_placement_warning(const ggufmap_placement *p) { return p->warning; }
ggufmap_cpu ggufmap_placement_cpu(const ggufmap_placement *p) { return p->cpu; }

const char *ggufmap_cpu_name(ggufmap_cpu cpu) {
    switch (cpu) {
    case GGUFMAP_CPU_X86: return "x86";
    case GGUFMAP_CPU_X86_AVX2: return "x86-avx2";
    case GGUFMAP_CPU_ARM64: return "arm64";
    case GGUFMAP_CPU_GENERIC: return "generic";
    default: return "host";
    }
}

const char *ggufmap_device_name(ggufmap_device d) {
    return d == GGUFMAP_DEVICE_METAL ? "metal" : d == GGUFMAP_DEVICE_CUDA ? "cuda" : "cpu";
}

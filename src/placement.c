/*
 * placement.c - llama.cpp v0.5.0's buffer-type decision, tensor by tensor.
 *
 * Data structure.  A placement holds the instances (tensors as llama.cpp
 * creates them: one per file tensor its loader uses, plus duplicated copies)
 * and the contexts they fall into, keyed by (buffer type, lazy) and sorted
 * as llama.cpp's ctx_map sorts them.  Buffer types are a small closed set
 * here: CPU, CPU_REPACK, the GPU's default type (MTL0 or CUDA0) and
 * CUDA_Host.
 *
 * Which tensors are created, in which order, with which class, layer and op
 * is the architecture's own loader's business: src/arch.c runs it (from the
 * table generated out of llama.cpp's source) and hands over the creations;
 * this file only decides where each one goes.  The rules, with llama.cpp
 * source lines, are in docs/placement-rules.md; the comments below cite its
 * sections.  Every rule is checked against the real llama.cpp by tests/plan
 * (the differential test).
 */
#include <stdio.h>
#include <stdlib.h>

#include "arch.h"
#include "device.h"
#include "ggufmap/placement.h"
#include "internal.h"
#include "regex.h"

/* ------------------------------------------------------------------------ */
/* Buffer types and ops                                                      */
/* ------------------------------------------------------------------------ */

typedef enum buft { BUFT_CPU, BUFT_REPACK, BUFT_HOST, BUFT_GPU, BUFT_AMX } buft;

struct ggufmap_placement {
    const ggufmap_model *model;
    ggufmap_placement_opts opts;
    ggufmap_cpu cpu;
    int32_t n_layers;             /* hparams.n_layer_all */
    int32_t n_layers_nextn;       /* hparams.n_layer_nextn */
    int32_t gpu_start, gpu_count; /* layers [gpu_start, gpu_start + gpu_count) run on the GPU */
    ggufmap_context *contexts;
    uint32_t n_contexts;
    ggufmap_instance *instances;
    int64_t n_instances, cap_instances;
    char arch[64];
    char warning[512];
};

static const char *gpu_buft_name(ggufmap_device d) { return d == GGUFMAP_DEVICE_METAL ? "MTL0" : "CUDA0"; }

/* The public kind of one of the placement's buffer types. */
static ggufmap_buft_kind buft_kind(buft b) {
    switch (b) {
    case BUFT_CPU: return GGUFMAP_BUFT_CPU;
    case BUFT_REPACK: return GGUFMAP_BUFT_CPU_REPACK;
    case BUFT_HOST: return GGUFMAP_BUFT_CUDA_HOST;
    case BUFT_AMX: return GGUFMAP_BUFT_CPU_AMX;
    default: return GGUFMAP_BUFT_GPU;
    }
}

int gm_buft_kind_of_name(const char *name) {
    if (strcmp(name, "CPU") == 0) return GGUFMAP_BUFT_CPU;
    if (strcmp(name, "CPU_REPACK") == 0) return GGUFMAP_BUFT_CPU_REPACK;
    if (strcmp(name, "CUDA_Host") == 0) return GGUFMAP_BUFT_CUDA_HOST;
    if (strcmp(name, "AMX") == 0) return GGUFMAP_BUFT_CPU_AMX;
    /* llama.cpp names devices MTL0, MTL1, CUDA0, CUDA1, ... */
    if (strncmp(name, "MTL", 3) == 0 || strncmp(name, "CUDA", 4) == 0) return GGUFMAP_BUFT_GPU;
    return -1;
}

static const char *buft_name(const ggufmap_placement *p, buft b) {
    switch (b) {
    case BUFT_CPU: return "CPU";
    case BUFT_REPACK: return "CPU_REPACK";
    case BUFT_HOST: return "CUDA_Host";
    case BUFT_AMX: return "AMX";
    default: return gpu_buft_name(p->opts.device);
    }
}

/* ggml_n_dims: 1 + the index of the last dimension with more than one element. */
static int n_dims_of(const ggufmap_tensor *t) {
    for (int i = 3; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

/* Metal's supports_op on Apple7+ for the test op of a weight
 * (ggml-metal-device.m:1525-1950, docs/placement-rules.md 7): element-wise
 * ops need the weight in the F32 of their test input, SCALE an F32/F16
 * weight; matrix products and row gathers take every type but NVFP4 and
 * TQ1_0; the rest (ROPE, SSM_CONV/SCAN, RWKV_WKV6, IM2COL) everything. */
static bool metal_supports(const ggufmap_tensor *t, gm_op o) {
    enum { F32 = 0, F16 = 1, TQ1_0 = 34, NVFP4 = 40 };
    switch (o) {
    case GM_OP_MUL: case GM_OP_ADD: case GM_OP_ADD_ID: case GM_OP_DIV: return t->type == F32;
    case GM_OP_SCALE: return t->type == F32 || t->type == F16;
    case GM_OP_MUL_MAT: case GM_OP_MUL_MAT_ID: case GM_OP_GET_ROWS: return t->type != NVFP4 && t->type != TQ1_0;
    default: return true;
    }
}

/* A u32 hyperparameter <arch>.SUFFIX of the model, dflt when absent */
static int64_t arch_u32(const ggufmap_placement *p, const char *suffix, int64_t dflt) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", p->arch, suffix);
    const ggufmap_kv *kv = ggufmap_model_find_kv(p->model, key);
    int64_t v;
    return kv && ggufmap_kv_int(kv, &v) == GGUFMAP_OK ? v : dflt;
}

/* CUDA's supports_op for the test op of a weight (weight_buft_supported,
 * llama-model-loader.cpp:946-1120; ggml-cuda.cu:5132-5489): the SSM kernels'
 * shapes (device_cuda.c: a Mamba-2 model whose d_state is not 128 or 256,
 * or whose conv channels are not a multiple of 128, keeps ssm_a or
 * ssm_conv1d on the CPU), GET_ROWS of IQ4_NL/MXFP4 rows not a multiple of
 * 256, element-wise ops of a weight that is not F32/F16. */
static bool cuda_supports(const ggufmap_placement *p, const ggufmap_tensor *t, gm_op o) {
    enum { F32 = 0, F16 = 1, IQ4_NL = 20, MXFP4 = 39 };
    switch (o) {
    case GM_OP_SSM_CONV: return gm_cuda_ssm_conv(t->ne[1]);
    case GM_OP_SSM_SCAN: {
        const bool mamba2 = t->ne[0] == 1;   /* ssm_a [1, n_head]; Mamba-1's is [d_state, d_inner] */
        const int64_t n_head = t->ne[1];
        const int64_t d_inner = arch_u32(p, "ssm.inner_size", 0), n_group = arch_u32(p, "ssm.group_count", 0);
        const int64_t d_state = mamba2 ? arch_u32(p, "ssm.state_size", 0) : t->ne[0];
        return gm_cuda_ssm_scan(d_state, n_head ? d_inner / n_head : 0, n_head, n_group ? n_group : 1, mamba2);
    }
    case GM_OP_GET_ROWS: return (t->type != IQ4_NL && t->type != MXFP4) || t->ne[0] % 256 == 0;
    case GM_OP_ADD: case GM_OP_MUL: case GM_OP_DIV: return t->type == F32 || t->type == F16;
    default: return true;
    }
}

/* Does buffer type b accept tensor t used by op o?  (weight_buft_supported) */
static bool supports(const ggufmap_placement *p, buft b, const ggufmap_tensor *t, gm_op o) {
    switch (b) {
    case BUFT_REPACK: {
        int nd = n_dims_of(t);
        if (!((o == GM_OP_MUL_MAT && nd == 2) || (o == GM_OP_MUL_MAT_ID && nd == 3))) return false;
        return gm_cpu_repacks(p->cpu, t->type, t->ne[1]);
    }
    case BUFT_AMX: return gm_amx_takes(t->type, t->ne, o == GM_OP_MUL_MAT);
    case BUFT_GPU: return p->opts.device == GGUFMAP_DEVICE_METAL ? metal_supports(t, o) : cuda_supports(p, t, o);
    default: return true; /* CPU and the CUDA host type accept every weight */
    }
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
    uint32_t amx_3d;        /* 3-D weights AMX packs (wrongly: only their first matrix) */
    int64_t amx_3d_first;
} work;

static uint32_t context_for(work *w, buft b, bool lazy) {
    for (uint32_t i = 0; i < w->n; i++)
        if (w->keys[i].b == b && w->keys[i].lazy == lazy) return i;
    w->keys[w->n].b = b;
    w->keys[w->n].lazy = lazy;
    return w->n++;
}

static int add_instance(ggufmap_placement *p, int64_t tensor, uint32_t ctx, ggufmap_tensor_class cls, int32_t layer,
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
    in->cls = cls;
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
/* Overrides: -ot patterns as llama.cpp's std::regex reads them             */
/* ------------------------------------------------------------------------ */

/* llama.cpp builds std::regex(pattern) for an override only when it comes
 * to it: for each tensor, overrides in order until one matches
 * (llama-model-loader.cpp:1236-1239).  A pattern the library refuses
 * therefore fails the load only if some tensor gets that far; a search the
 * library gives up (libc++'s error_complexity) fails it too.  Each pattern
 * is compiled once here; the refusal is kept and raised when reached. */
typedef struct compiled_override {
    gm_regex *re;           /* NULL when refused */
    gm_regex_error refused; /* why, when re is NULL */
    bool reached;
    int target; /* -1: CPU (select from the CPU list), else a buft */
} compiled_override;

typedef struct override_set {
    const ggufmap_placement_opts *opts;
    ggufmap_regex_dialect dialect;
    compiled_override *items;
    uint32_t n;
    int status;         /* the first error met while placing, GGUFMAP_OK if none */
    ggufmap_error *err; /* where it is described */
} override_set;

static int override_target(const ggufmap_placement_opts *o, const ggufmap_override *ov, int *target,
                           ggufmap_error *err) {
    if (strcmp(ov->buft, "CPU") == 0)
        *target = -1;
    else if (o->device != GGUFMAP_DEVICE_CPU && strcmp(ov->buft, gpu_buft_name(o->device)) == 0)
        *target = BUFT_GPU;
    else
        return gm_fail(err, GGUFMAP_EINVAL, "override '%s=%s': unknown buffer type '%s' (available: CPU%s%s)",
                       ov->pattern, ov->buft, ov->buft, o->device != GGUFMAP_DEVICE_CPU ? ", " : "",
                       o->device != GGUFMAP_DEVICE_CPU ? gpu_buft_name(o->device) : "");
    return GGUFMAP_OK;
}

/* Checks every buffer type (llama.cpp parses them with the arguments) and
 * compiles every pattern in the dialect: AUTO is libc++ on Metal (macOS
 * builds), libstdc++ elsewhere. */
static int overrides_init(override_set *s, const ggufmap_placement_opts *o, ggufmap_error *err) {
    memset(s, 0, sizeof *s);
    s->opts = o;
    s->err = err;
    s->dialect = o->regex != GGUFMAP_REGEX_AUTO ? o->regex
                 : o->device == GGUFMAP_DEVICE_METAL ? GGUFMAP_REGEX_LIBCXX
                                                      : GGUFMAP_REGEX_LIBSTDCXX;
    s->items = calloc(o->n_overrides ? o->n_overrides : 1, sizeof *s->items);
    if (!s->items) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    s->n = o->n_overrides;
    for (uint32_t i = 0; i < s->n; i++) {
        const ggufmap_override *ov = &o->overrides[i];
        compiled_override *c = &s->items[i];
        int rc = override_target(o, ov, &c->target, err);
        if (rc == GGUFMAP_OK && gm_regex_compile(ov->pattern, strlen(ov->pattern), s->dialect, &c->re, &c->refused) ==
                                    GGUFMAP_ENOMEM)
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        if (rc) return rc;
    }
    return GGUFMAP_OK;
}

static void overrides_free(override_set *s) {
    for (uint32_t i = 0; s->items && i < s->n; i++) gm_regex_free(s->items[i].re);
    free(s->items);
}

/* Does override i match tensor t?  On an error (the pattern is refused, or
 * the search is given up) the first one is recorded and the answer is no. */
static int override_matches(override_set *s, uint32_t i, const ggufmap_tensor *t) {
    compiled_override *c = &s->items[i];
    const ggufmap_override *ov = &s->opts->overrides[i];
    const char *lib = gm_regex_dialect_name(s->dialect);
    c->reached = true;
    if (!c->re) {
        if (s->status == GGUFMAP_OK)
            s->status = gm_fail(s->err, GGUFMAP_EINVAL,
                                "-ot '%s=%s': position %zu: invalid regex for %s's std::regex (%s): %s; llama.cpp "
                                "fails to load the model",
                                ov->pattern, ov->buft, c->refused.position, lib, c->refused.code, c->refused.reason);
        return GM_REGEX_NOMATCH;
    }
    /* llama.cpp searches its own name for the tensor: the C string, up to a NUL. */
    const char *nul = memchr(t->name, '\0', t->name_len);
    size_t len = nul ? (size_t)(nul - t->name) : t->name_len;
    gm_regex_error why;
    int r = gm_regex_search(c->re, t->name, len, 0, &why);
    if (r < 0 && s->status == GGUFMAP_OK)
        s->status = gm_fail(s->err, GGUFMAP_EINVAL, "-ot '%s=%s': tensor '%.*s': %s (%s); llama.cpp %s", ov->pattern,
                            ov->buft, (int)t->name_len, t->name, why.reason, why.code,
                            r == GM_REGEX_ECOMPLEXITY ? "fails to load the model" : "would not finish loading");
    return r;
}

/* A refused pattern no tensor reached: llama.cpp never compiles it. */
static void overrides_warn(const override_set *s, char *warning, size_t cap) {
    for (uint32_t i = 0; i < s->n; i++) {
        const compiled_override *c = &s->items[i];
        size_t used = strlen(warning);
        if (!c->re && !c->reached && used < cap)
            snprintf(warning + used, cap - used,
                     "-ot '%s=%s' is never reached (earlier overrides match every tensor), so llama.cpp never "
                     "compiles it; %s would refuse it at position %zu (%s). ",
                     s->opts->overrides[i].pattern, s->opts->overrides[i].buft,
                     gm_regex_dialect_name(s->dialect), c->refused.position, c->refused.code);
    }
}

/* ------------------------------------------------------------------------ */
/* The decision                                                              */
/* ------------------------------------------------------------------------ */

static bool layer_on_gpu(const ggufmap_placement *p, int32_t il) {
    return p->gpu_count > 0 && il >= p->gpu_start && il < p->gpu_start + p->gpu_count;
}

/* The buffer-type list of a layer (llama-model.cpp make_cpu/gpu_buft_list). */
static uint32_t buft_list(const ggufmap_placement *p, bool gpu, buft *list) {
    uint32_t n = 0;
    if (gpu) list[n++] = BUFT_GPU;
    if (p->opts.device == GGUFMAP_DEVICE_CUDA && !p->opts.no_host) list[n++] = BUFT_HOST;
    if (!p->opts.no_repack && gm_cpu_has_amx(p->cpu)) list[n++] = BUFT_AMX; /* the CPU's extra types, in ggml's order */
    if (!p->opts.no_repack) list[n++] = BUFT_REPACK;
    list[n++] = BUFT_CPU;
    return n;
}

static buft select_buft(const ggufmap_placement *p, const buft *list, uint32_t n, const ggufmap_tensor *t, gm_op o) {
    for (uint32_t i = 0; i < n; i++)
        if (supports(p, list[i], t, o)) return list[i];
    return BUFT_CPU;
}

/* llama_model_loader::create_tensor's buft_for_tensor, for one instance;
 * *lazy says whether it goes to the lazy context. */
static buft decide(const ggufmap_placement *p, override_set *ovr, const ggufmap_tensor *t, bool lazy_candidate, ggufmap_tensor_class cls, int32_t layer, gm_op o,
                   bool *lazy) {
    *lazy = false;
    if (lazy_candidate && p->opts.lazy != GGUFMAP_LAZY_OFF &&
        (p->opts.lazy == GGUFMAP_LAZY_ON || t->size > 4ull * 1024 * 1024 * 1024)) {
        *lazy = true;
        return BUFT_CPU;
    }
    buft list[5];
    bool gpu = cls == GGUFMAP_CLASS_INPUT ? false : layer_on_gpu(p, layer);
    uint32_t n = buft_list(p, gpu, list);
    buft b = BUFT_CPU;
    bool chosen = false;
    for (uint32_t i = 0; i < ovr->n && !chosen; i++) {
        if (override_matches(ovr, i, t) != GM_REGEX_MATCH) continue; /* an error stops ggufmap_placement_build */
        if (ovr->items[i].target < 0) {
            buft cpu_list[5];
            uint32_t m = buft_list(p, false, cpu_list);
            b = select_buft(p, cpu_list, m, t, o);
        } else {
            b = (buft)ovr->items[i].target; /* used as it is, no support check */
        }
        chosen = true;
    }
    if (!chosen) b = select_buft(p, list, n, t, o);
    if (b == BUFT_HOST && !p->opts.no_mmap) b = BUFT_CPU; /* host type demoted under mmap */
    return b;
}

static ggufmap_tensor_class class_of(gm_layer layer) {
    return layer == GM_LAYER_INPUT ? GGUFMAP_CLASS_INPUT
         : layer == GM_LAYER_OUTPUT ? GGUFMAP_CLASS_OUTPUT : GGUFMAP_CLASS_LAYER;
}

/* Puts one creation of the architecture's loader into its context
 * (docs/placement-rules.md 0): a duplicated tensor already in the chosen
 * context is reused, anything else is a new tensor there. */
static int place_creation(ggufmap_placement *p, work *w, override_set *ovr, const gm_creation *c) {
    const ggufmap_tensor *t = ggufmap_model_tensor(p->model, c->tensor);
    ggufmap_tensor_class cls = class_of((gm_layer)c->layer);
    int32_t layer = cls == GGUFMAP_CLASS_INPUT ? -1 : cls == GGUFMAP_CLASS_OUTPUT ? p->n_layers : c->bid;
    bool lazy, dup = c->flags & GM_CREATE_DUPLICATED;
    buft b = decide(p, ovr, t, c->flags & GM_CREATE_READ_LAZY, cls, layer, (gm_op)c->op, &lazy);
    if (b == BUFT_AMX && gm_amx_packs(t->type) && t->ne[2] * t->ne[3] > 1) {
        if (!w->amx_3d) w->amx_3d_first = c->tensor;
        w->amx_3d++;
    }
    uint32_t ctx = context_for(w, b, lazy);
    if (dup && in_context(p, c->tensor, ctx)) return GGUFMAP_OK;
    return add_instance(p, c->tensor, ctx, cls, layer, dup);
}

/* ggml's AMX buffer type packs only the first matrix of a 3-D weight
 * (device.h, gm_amx_alloc_size): llama.cpp loads the model, and its
 * products with that weight are wrong. */
static void warn_amx_3d(ggufmap_placement *p, const work *w) {
    const ggufmap_tensor *t = ggufmap_model_tensor(p->model, w->amx_3d_first);
    char more[32] = "";
    if (w->amx_3d > 1) snprintf(more, sizeof more, " (and %u more)", w->amx_3d - 1);
    size_t used = strlen(p->warning);
    if (used < sizeof p->warning)
        snprintf(p->warning + used, sizeof p->warning - used,
                 "the AMX buffer type takes the 3-D weight '%.*s'%s but llama.cpp v0.5.0 packs only its first "
                 "matrix (ggml-cpu/amx): its products are wrong and decoding may fail; --no-repack keeps weights "
                 "out of AMX. ",
                 (int)t->name_len, t->name, more);
}

/* The buffer type's get_alloc_size: CUDA pads quantized rows to a multiple
 * of 512 elements, AMX packs its types. */
static uint64_t alloc_size(const ggufmap_placement *p, buft b, const ggufmap_tensor *t) {
    const ggufmap_type_info *ti = ggufmap_type(t->type);
    if (b == BUFT_AMX) return gm_amx_alloc_size(t->type, t->ne);
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
        c->kind = buft_kind(k->b);
        c->gpu = c->kind == GGUFMAP_BUFT_GPU;
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

const char *ggufmap_architecture(uint32_t i) { return i < gm_arch_n_defs ? gm_arch_defs[i].name : NULL; }

void ggufmap_placement_opts_init(ggufmap_placement_opts *o) {
    memset(o, 0, sizeof *o);
    o->device = GGUFMAP_DEVICE_CPU;
    o->n_gpu_layers = -1;
    o->cpu = GGUFMAP_CPU_HOST;
    o->lazy = GGUFMAP_LAZY_AUTO;
}

int ggufmap_cpu_moe_patterns(int n_layers, char *buf, size_t cap, int *count) {
    static const char exps[] = "\\.ffn_(up|down|gate|gate_up)_(ch|)exps"; /* common.h LLM_FFN_EXPS_REGEX */
    size_t used = 0;
    int n = n_layers < 0 ? 1 : n_layers;
    *count = 0;
    for (int i = 0; i < n; i++) {
        int k = n_layers < 0 ? snprintf(buf + used, cap - used, "%s", exps)
                             : snprintf(buf + used, cap - used, "blk\\.%d%s", i, exps);
        if (k < 0 || used + (size_t)k + 1 > cap) return GGUFMAP_EINVAL;
        used += (size_t)k + 1;
    }
    *count = n;
    return GGUFMAP_OK;
}

int ggufmap_placement_build(const ggufmap_model *model, const ggufmap_placement_opts *opts, ggufmap_placement **out,
                  ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    ggufmap_placement *p = calloc(1, sizeof *p);
    override_set ovr = {0};
    int rc = GGUFMAP_OK;
    if (!p) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        goto done;
    }
    p->model = model;
    p->opts = *opts;
    p->opts.overrides = NULL; /* not kept: the caller's strings need not outlive this call */
    p->cpu = opts->cpu == GGUFMAP_CPU_HOST ? gm_cpu_host() : opts->cpu;
    if ((rc = overrides_init(&ovr, opts, err))) goto done;

    gm_arch_load load;
    if ((rc = gm_arch_load_model(model, opts->load_mtp, &load, err))) goto done;
    snprintf(p->arch, sizeof p->arch, "%s", load.def->name);
    p->n_layers = load.n_layer_all;
    p->n_layers_nextn = load.n_layer_nextn;
    if (opts->device != GGUFMAP_DEVICE_CPU) {
        int32_t ngl = opts->n_gpu_layers < 0 ? p->n_layers + 1 : opts->n_gpu_layers;
        p->gpu_start = p->n_layers + 1 - ngl > 0 ? p->n_layers + 1 - ngl : 0;
        p->gpu_count = ngl < p->n_layers + 1 ? ngl : p->n_layers + 1;
    }
    work w = {.n = 0};
    for (int64_t i = 0; i < load.n_creations && !rc; i++)
        if (!(rc = place_creation(p, &w, &ovr, &load.creations[i]))) rc = ovr.status;
    gm_arch_load_free(&load);
    if (!rc) overrides_warn(&ovr, p->warning, sizeof p->warning);
    if (!rc && w.amx_3d) warn_amx_3d(p, &w);
    if (!rc && (rc = finish_contexts(p, &w))) gm_fail(err, rc, "out of memory");
    if (rc && err && !err->message[0]) gm_fail(err, rc, "out of memory");
done:
    overrides_free(&ovr);
    if (rc) {
        ggufmap_placement_free(p);
        return rc;
    }
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
int32_t ggufmap_placement_n_layers_nextn(const ggufmap_placement *p) { return p->n_layers_nextn; }
const char *ggufmap_placement_arch(const ggufmap_placement *p) { return p->arch; }
bool ggufmap_placement_load_mtp(const ggufmap_placement *p) { return p->opts.load_mtp; }
bool ggufmap_placement_layer_on_gpu(const ggufmap_placement *p, int32_t layer) { return layer_on_gpu(p, layer); }
const ggufmap_placement_opts *ggufmap_placement_options(const ggufmap_placement *p) { return &p->opts; }
const char *ggufmap_placement_warning(const ggufmap_placement *p) { return p->warning; }
ggufmap_cpu ggufmap_placement_cpu(const ggufmap_placement *p) { return p->cpu; }

const char *ggufmap_device_name(ggufmap_device d) {
    return d == GGUFMAP_DEVICE_METAL ? "metal" : d == GGUFMAP_DEVICE_CUDA ? "cuda" : "cpu";
}

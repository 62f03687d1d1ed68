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
#include "ggufmap/source.h"
#include "internal.h"
#include "regex.h"

/* ------------------------------------------------------------------------ */
/* Buffer types and ops                                                      */
/* ------------------------------------------------------------------------ */

struct ggufmap_placement {
    const ggufmap_model *model;
    ggufmap_placement_opts opts;
    const gm_backend_def *be;     /* the device's rules */
    ggufmap_cpu cpu;              /* resolved by the device */
    ggufmap_regex_dialect regex;  /* resolved by the device */
    int32_t n_layers;             /* hparams.n_layer_all */
    int32_t n_layers_nextn;       /* hparams.n_layer_nextn */
    int8_t *layer_gpu;            /* per layer 0..n_layers (the output layer): the GPU's ordinal, -1: the CPU */
    uint32_t gpus[GGUFMAP_MAX_GPUS]; /* the run's GPUs (llama_model::devices), ordinals in order */
    uint32_t n_gpus;
    ggufmap_context *contexts;
    uint32_t n_contexts;
    ggufmap_instance *instances;
    int64_t n_instances, cap_instances;
    char arch[64];
    gm_ssm_dims ssm;              /* the model's SSM hyperparameters, for the device's SSM_SCAN rule */
    char warning[512];
    char refusal[1280];           /* PATH: why llama.cpp refuses the model, "" when it loads it */
};

/* ggml_n_dims: 1 + the index of the last dimension with more than one element. */
static int n_dims_of(const ggufmap_tensor *t) {
    for (int i = 3; i >= 1; i--)
        if (t->ne[i] > 1) return i + 1;
    return 1;
}

/* The test op of a weight as a GPU's supports_op tells ops apart. */
static gm_weight_op weight_op(gm_op o) {
    switch (o) {
    case GM_OP_MUL: case GM_OP_ADD: case GM_OP_DIV: return GM_WOP_ELEMENTWISE;
    case GM_OP_ADD_ID: return GM_WOP_ADD_ID;
    case GM_OP_SCALE: return GM_WOP_SCALE;
    case GM_OP_MUL_MAT: case GM_OP_MUL_MAT_ID: return GM_WOP_MATMUL;
    case GM_OP_GET_ROWS: return GM_WOP_GET_ROWS;
    case GM_OP_SSM_CONV: return GM_WOP_SSM_CONV;
    case GM_OP_SSM_SCAN: return GM_WOP_SSM_SCAN;
    default: return GM_WOP_OTHER;
    }
}

/* A u32 hyperparameter <arch>.SUFFIX of the model, 0 when absent */
static int64_t arch_u32(const ggufmap_placement *p, const char *suffix) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", p->arch, suffix);
    const ggufmap_kv *kv = ggufmap_model_find_kv(p->model, key);
    int64_t v;
    return kv && ggufmap_kv_int(kv, &v) == GGUFMAP_OK ? v : 0;
}

/* Does buffer type b accept tensor t used by op o?  (weight_buft_supported:
 * the device's supports_op with the weight in a dummy buffer of b) */
static bool supports(const ggufmap_placement *p, gm_buft_id b, const ggufmap_tensor *t, gm_op o) {
    switch (b.kind) {
    case GGUFMAP_BUFT_CPU_REPACK: {
        int nd = n_dims_of(t);
        if (!((o == GM_OP_MUL_MAT && nd == 2) || (o == GM_OP_MUL_MAT_ID && nd == 3))) return false;
        return gm_cpu_repacks(p->cpu, t->type, t->ne[1]);
    }
    case GGUFMAP_BUFT_CPU_AMX: return gm_amx_takes(t->type, t->ne, o == GM_OP_MUL_MAT);
    case GGUFMAP_BUFT_GPU: return !p->be->weight_supported || p->be->weight_supported(t->type, t->ne, weight_op(o), &p->ssm);
    default: return true; /* CPU and the GPU host types accept every weight */
    }
}

static const char *buft_name(const ggufmap_placement *p, gm_buft_id b, char *buf, size_t cap) {
    return gm_buft_name(p->opts.device, b, false, buf, cap);
}

static bool same_buft(gm_buft_id a, gm_buft_id b) { return a.kind == b.kind && a.gpu == b.gpu; }

/* ------------------------------------------------------------------------ */
/* Contexts                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct ctx_key {
    gm_buft_id b;
    bool lazy;
} ctx_key;

/* contexts: per (buffer type, lazy); the CPU's five types, and a GPU's own per GPU */
#define MAX_CONTEXTS (2 * (5 + GGUFMAP_MAX_GPUS))

typedef struct work {
    ctx_key keys[MAX_CONTEXTS];
    uint32_t n;
    uint32_t amx_3d;        /* 3-D weights AMX packs (wrongly: only their first matrix) */
    int64_t amx_3d_first;
} work;

static uint32_t context_for(work *w, gm_buft_id b, bool lazy) {
    for (uint32_t i = 0; i < w->n; i++)
        if (same_buft(w->keys[i].b, b) && w->keys[i].lazy == lazy) return i;
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
    gm_regex_memo *memo;    /* its answers in opts->regex_cache, or NULL */
    bool reached;
    bool to_cpu;       /* "CPU": select from the CPU list */
    gm_buft_id target; /* else this type, taken as it is */
} compiled_override;

typedef struct override_set {
    const ggufmap_placement_opts *opts;
    ggufmap_regex_dialect dialect;
    compiled_override *items;
    uint32_t n;
    int status;         /* the first error met while placing, GGUFMAP_OK if none */
    ggufmap_error *err; /* where it is described */
} override_set;

/* -ot's BUFT: llama.cpp's arguments know every device's default buffer
 * type by name (common/arg.cpp parse_tensor_buffer_overrides): "CPU",
 * which then selects from the CPU list, or a GPU's ("CUDA1"), taken as it is. */
static int override_target(const ggufmap_placement_opts *o, const ggufmap_override *ov, compiled_override *c,
                           ggufmap_error *err) {
    gm_buft_id b;
    if (!gm_buft_parse(o->device, ov->buft, GGUFMAP_MAX_GPUS - 1, &b) ||
        (b.kind != GGUFMAP_BUFT_CPU && b.kind != GGUFMAP_BUFT_GPU)) {
        char cpu[16], gpu[16];
        gm_buft_name(o->device, (gm_buft_id){GGUFMAP_BUFT_CPU, 0}, false, cpu, sizeof cpu);
        gm_buft_name(o->device, (gm_buft_id){GGUFMAP_BUFT_GPU, 0}, false, gpu, sizeof gpu);
        return gm_fail(err, GGUFMAP_EINVAL, "override '%s=%s': unknown buffer type '%s' (available: %s%s%s%s)",
                       ov->pattern, ov->buft, ov->buft, cpu, o->device != GGUFMAP_DEVICE_CPU ? ", " : "",
                       o->device != GGUFMAP_DEVICE_CPU ? gpu : "", o->device != GGUFMAP_DEVICE_CPU ? ", ..." : "");
    }
    c->to_cpu = b.kind == GGUFMAP_BUFT_CPU;
    c->target = b;
    return GGUFMAP_OK;
}

/* Checks every buffer type (llama.cpp parses them with the arguments) and
 * compiles every pattern in the dialect: AUTO is the device's (libc++ on
 * Metal, as macOS builds have it, libstdc++ elsewhere). */
static int overrides_init(override_set *s, const ggufmap_placement_opts *o, ggufmap_error *err) {
    memset(s, 0, sizeof *s);
    s->opts = o;
    s->err = err;
    s->dialect = gm_device_regex(o->device, o->regex);
    s->items = calloc(o->n_overrides ? o->n_overrides : 1, sizeof *s->items);
    if (!s->items) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    s->n = o->n_overrides;
    for (uint32_t i = 0; i < s->n; i++) {
        const ggufmap_override *ov = &o->overrides[i];
        compiled_override *c = &s->items[i];
        int rc = override_target(o, ov, c, err);
        if (rc == GGUFMAP_OK && gm_regex_compile(ov->pattern, strlen(ov->pattern), s->dialect, &c->re, &c->refused) ==
                                    GGUFMAP_ENOMEM)
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        c->memo = gm_regex_memo_of(o->regex_cache, ov->pattern, strlen(ov->pattern), s->dialect);
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
    int r = gm_regex_memo_search(c->memo, c->re, t->name, len, &why);
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

static int32_t layer_gpu(const ggufmap_placement *p, int32_t il) {
    return p->layer_gpu && il >= 0 && il <= p->n_layers ? p->layer_gpu[il] : -1;
}

/* The buffer-type list of a layer (llama-model.cpp make_cpu/gpu_buft_list):
 * the GPU's own type (gpu >= 0), then the CPU list: the host type of the
 * first GPU (unless --no-host), the CPU's extra types in ggml's order
 * (unless --no-repack: use_extra_bufts), CPU. */
static uint32_t buft_list(const ggufmap_placement *p, int32_t gpu, gm_buft_id *list) {
    uint32_t n = 0;
    if (gpu >= 0) list[n++] = (gm_buft_id){GGUFMAP_BUFT_GPU, (uint32_t)gpu};
    if (p->be->host_buft && !p->opts.no_host) list[n++] = (gm_buft_id){GGUFMAP_BUFT_GPU_HOST, 0};
    if (!p->opts.no_repack && gm_cpu_has_amx(p->cpu)) list[n++] = (gm_buft_id){GGUFMAP_BUFT_CPU_AMX, 0};
    if (!p->opts.no_repack) list[n++] = (gm_buft_id){GGUFMAP_BUFT_CPU_REPACK, 0};
    list[n++] = (gm_buft_id){GGUFMAP_BUFT_CPU, 0};
    return n;
}

static gm_buft_id select_buft(const ggufmap_placement *p, const gm_buft_id *list, uint32_t n,
                              const ggufmap_tensor *t, gm_op o) {
    for (uint32_t i = 0; i < n; i++)
        if (supports(p, list[i], t, o)) return list[i];
    return (gm_buft_id){GGUFMAP_BUFT_CPU, 0};
}

/* llama_model_loader::create_tensor's buft_for_tensor, for one instance;
 * *lazy says whether it goes to the lazy context. */
static gm_buft_id decide(const ggufmap_placement *p, override_set *ovr, const ggufmap_tensor *t,
                         bool lazy_candidate, ggufmap_tensor_class cls, int32_t layer, gm_op o, bool *lazy) {
    const gm_buft_id cpu = {GGUFMAP_BUFT_CPU, 0};
    *lazy = false;
    if (lazy_candidate && p->opts.lazy != GGUFMAP_LAZY_OFF &&
        (p->opts.lazy == GGUFMAP_LAZY_ON || t->size > 4ull * 1024 * 1024 * 1024)) {
        *lazy = true;
        return cpu;
    }
    gm_buft_id list[5], b = cpu;
    uint32_t n = buft_list(p, cls == GGUFMAP_CLASS_INPUT ? -1 : layer_gpu(p, layer), list);
    bool chosen = false;
    for (uint32_t i = 0; i < ovr->n && !chosen; i++) {
        if (override_matches(ovr, i, t) != GM_REGEX_MATCH) continue; /* an error stops ggufmap_placement_build */
        if (ovr->items[i].to_cpu) {
            gm_buft_id cpu_list[5];
            uint32_t m = buft_list(p, -1, cpu_list);
            b = select_buft(p, cpu_list, m, t, o);
        } else {
            b = ovr->items[i].target; /* used as it is, no support check */
        }
        chosen = true;
    }
    if (!chosen) b = select_buft(p, list, n, t, o);
    if (b.kind == GGUFMAP_BUFT_GPU_HOST && !p->opts.no_mmap) b = cpu; /* host type demoted under mmap */
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
    gm_buft_id b = decide(p, ovr, t, c->flags & GM_CREATE_READ_LAZY, cls, layer, (gm_op)c->op, &lazy);
    if (b.kind == GGUFMAP_BUFT_CPU_AMX && gm_amx_packs(t->type) && t->ne[2] * t->ne[3] > 1) {
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

static int compare_keys(const ctx_key *a, const ctx_key *b, const ggufmap_placement *p) {
    char na[40], nb[40];
    if (a->lazy != b->lazy) return a->lazy ? 1 : -1;
    return strcmp(buft_name(p, a->b, na, sizeof na), buft_name(p, b->b, nb, sizeof nb));
}

/* One context's record, its tensors not yet counted. */
static void describe_context(const ggufmap_placement *p, const ctx_key *k, ggufmap_context *c) {
    buft_name(p, k->b, c->buft, sizeof c->buft);
    c->kind = k->b.kind;
    c->ordinal = k->b.gpu;
    c->gpu = gm_buft_on_gpu(c->kind);
    c->lazy = k->lazy;
    c->mapped = (!p->opts.no_mmap || k->lazy) && gm_buft_maps(p->opts.device, c->kind);
    c->alignment = gm_buft_alignment(p->opts.device, c->kind);
    gm_buft_name(p->opts.device, k->b, c->mapped, c->buffer_name, sizeof c->buffer_name);
}

/* Sorts the contexts as llama.cpp's ctx_map and fills their records. */
static int finish_contexts(ggufmap_placement *p, const work *w) {
    uint32_t order[MAX_CONTEXTS], rank[MAX_CONTEXTS];
    for (uint32_t i = 0; i < w->n; i++) order[i] = i;
    for (uint32_t i = 1; i < w->n; i++) /* insertion sort: a few dozen at most */
        for (uint32_t j = i; j > 0 && compare_keys(&w->keys[order[j]], &w->keys[order[j - 1]], p) < 0; j--) {
            uint32_t tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    for (uint32_t i = 0; i < w->n; i++) rank[order[i]] = i;
    p->contexts = calloc(w->n ? w->n : 1, sizeof *p->contexts);
    if (!p->contexts) return GGUFMAP_ENOMEM;
    p->n_contexts = w->n;
    for (uint32_t i = 0; i < w->n; i++) describe_context(p, &w->keys[order[i]], &p->contexts[i]);
    for (int64_t i = 0; i < p->n_instances; i++) {
        ggufmap_instance *in = &p->instances[i];
        in->context = rank[in->context];
        ggufmap_context *c = &p->contexts[in->context];
        const ggufmap_tensor *t = ggufmap_model_tensor(p->model, in->tensor);
        c->n_instances++;
        if (t->size > c->max_tensor) c->max_tensor = t->size;
        c->alloc_size += gm_pad(gm_buft_alloc_size(p->opts.device, c->kind, t->type, t->ne), c->alignment);
    }
    return GGUFMAP_OK;
}

const char *ggufmap_architecture(uint32_t i) { return i < gm_arch_n_defs ? gm_arch_defs[i].name : NULL; }

/* ------------------------------------------------------------------------ */
/* The run's GPUs and the layers on each                                     */
/* ------------------------------------------------------------------------ */

/* llama_prepare_model_devices (llama.cpp:157-310): the GPUs in -dev's
 * order (every GPU by default), only -mg's with -sm none; the split
 * buffer type of -sm row is refused (make_gpu_buft_list throws on Metal;
 * CUDA's is not modelled: see docs/devices.md). */
static int run_gpus(ggufmap_placement *p, ggufmap_error *err) {
    const ggufmap_placement_opts *o = &p->opts;
    char name[16];
    if (o->device == GGUFMAP_DEVICE_CPU) return GGUFMAP_OK;
    const uint32_t n = o->n_gpus ? o->n_gpus : 1;
    if (n > GGUFMAP_MAX_GPUS) return gm_fail(err, GGUFMAP_EINVAL, "%u GPUs: at most %d", n, GGUFMAP_MAX_GPUS);
    bool listed = false;
    for (uint32_t i = 0; i < n; i++) listed |= o->gpus[i] != 0;
    for (uint32_t i = 0; i < n; i++) {
        p->gpus[i] = listed ? o->gpus[i] : i;
        for (uint32_t j = 0; j < i; j++)
            if (p->gpus[j] == p->gpus[i])
                return gm_fail(err, GGUFMAP_EINVAL, "-dev: %s listed twice",
                               gm_buft_name(o->device, (gm_buft_id){GGUFMAP_BUFT_GPU, p->gpus[i]}, false, name, sizeof name));
    }
    p->n_gpus = n;
    gm_buft_name(o->device, (gm_buft_id){GGUFMAP_BUFT_GPU, p->gpus[0]}, false, name, sizeof name);
    if (o->split_mode == GGUFMAP_SPLIT_ROW)
        return p->be->split_buft
                   ? gm_fail(err, GGUFMAP_EINVAL, "-sm row: the split buffer type of %s (%s_Split) is not modelled: "
                             "each matrix's rows go to the GPUs by -ts, in buffers ggufmap cannot check against "
                             "llama.cpp here (docs/devices.md); use -sm layer", name, p->be->prefix)
                   : gm_fail(err, GGUFMAP_EINVAL, "-sm row: llama.cpp refuses: device %s does not support split "
                             "buffers", name);
    if (o->split_mode == GGUFMAP_SPLIT_NONE) {
        if (o->main_gpu >= n)
            return gm_fail(err, GGUFMAP_EINVAL, "llama.cpp refuses: invalid value for main_gpu: %u (available "
                           "devices: %u)", o->main_gpu, n);
        p->gpus[0] = p->gpus[o->main_gpu];
        p->n_gpus = 1;
    }
    return GGUFMAP_OK;
}

/* load_tensors' split points (llama-model.cpp:1488-1531): -ts, else each
 * GPU's free memory (else equal shares), summed and normalised in float, as
 * llama.cpp computes them; layer
 * il of the last -ngl ones goes to the first GPU whose split point exceeds
 * (il - i_gpu_start) / act_gpu_layers. */
static int assign_layers(ggufmap_placement *p) {
    p->layer_gpu = malloc((size_t)p->n_layers + 1);
    if (!p->layer_gpu) return GGUFMAP_ENOMEM;
    memset(p->layer_gpu, -1, (size_t)p->n_layers + 1);
    if (p->n_gpus == 0) return GGUFMAP_OK;
    float splits[GGUFMAP_MAX_GPUS], sum = 0.0f;
    for (uint32_t i = 0; i < p->n_gpus; i++) {
        sum += gm_device_split_share(&p->opts, i);
        splits[i] = sum;
    }
    for (uint32_t i = 0; i < p->n_gpus; i++) splits[i] /= sum;
    const int32_t ngl = p->opts.n_gpu_layers < 0 ? p->n_layers + 1 : p->opts.n_gpu_layers;
    const int32_t start = p->n_layers + 1 - ngl > 0 ? p->n_layers + 1 - ngl : 0;
    const int32_t act = ngl < p->n_layers + 1 ? ngl : p->n_layers + 1;
    for (int32_t il = start; il <= p->n_layers && il - start < act; il++) {
        const float at = (float)(il - start) / (float)act;
        uint32_t g = 0;
        while (g < p->n_gpus && !(splits[g] > at)) g++; /* std::upper_bound */
        p->layer_gpu[il] = (int8_t)p->gpus[g < p->n_gpus ? g : p->n_gpus - 1];
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
    p->opts.regex_cache = NULL; /* nor the caller's cache */
    p->be = gm_backend(opts->device);
    p->cpu = gm_device_cpu(opts->device, opts->cpu);
    p->regex = gm_device_regex(opts->device, opts->regex);
    if ((rc = run_gpus(p, err)) || (rc = overrides_init(&ovr, opts, err))) goto done;

    gm_arch_load load;
    if ((rc = gm_arch_load_model(model, opts->load_mtp, &load, err))) goto done;
    snprintf(p->arch, sizeof p->arch, "%s", load.def->name);
    p->ssm = (gm_ssm_dims){arch_u32(p, "ssm.state_size"), arch_u32(p, "ssm.inner_size"), arch_u32(p, "ssm.group_count")};
    if (load.refusal[0])
        snprintf(p->refusal, sizeof p->refusal, "%s: %s", ggufmap_source_path(ggufmap_model_shard(model, 0)),
                 load.refusal);
    p->n_layers = load.n_layer_all;
    p->n_layers_nextn = load.n_layer_nextn;
    if ((rc = assign_layers(p))) {
        gm_arch_load_free(&load);
        goto done;
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
    free(p->layer_gpu);
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
bool ggufmap_placement_layer_on_gpu(const ggufmap_placement *p, int32_t layer) { return layer_gpu(p, layer) >= 0; }
int32_t ggufmap_placement_layer_gpu(const ggufmap_placement *p, int32_t layer) { return layer_gpu(p, layer); }
uint32_t ggufmap_placement_n_gpus(const ggufmap_placement *p) { return p->n_gpus; }
uint32_t ggufmap_placement_gpu(const ggufmap_placement *p, uint32_t i) { return i < p->n_gpus ? p->gpus[i] : 0; }
ggufmap_regex_dialect ggufmap_placement_regex(const ggufmap_placement *p) { return p->regex; }
const ggufmap_placement_opts *ggufmap_placement_options(const ggufmap_placement *p) { return &p->opts; }
const char *ggufmap_placement_warning(const ggufmap_placement *p) { return p->warning; }
const char *ggufmap_placement_refusal(const ggufmap_placement *p) { return p->refusal[0] ? p->refusal : NULL; }
ggufmap_cpu ggufmap_placement_cpu(const ggufmap_placement *p) { return p->cpu; }


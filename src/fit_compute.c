/*
 * fit_compute.c - the compute buffers llama_context::sched_reserve
 * allocates (llama-context.cpp:617-765).
 *
 * llama.cpp reserves the scheduler three times: a prompt-processing graph
 * of min(n_ctx, n_ubatch) tokens over n_seq_max sequences with
 * min(n_tokens, n_outputs_max) outputs, a token-generation graph of one
 * token per sequence, and the first again.  Each reserve builds the
 * architecture's graph for that ubatch over the whole KV cache, splits it
 * over the backends and runs ggml-alloc over it; a backend's buffer is
 * re-allocated only when a reserve needs more, so it ends at the largest
 * peak.  Here each reserve is the same sequence over the shape-only graph
 * (fit_graph.c, fit_sched.c, fit_alloc.c) with the architecture's graph
 * (fit_arch_*.c); buffers are reported in the scheduler's backend order, the
 * GPU's first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fit_arch_recurrent.h"
#include "fit_graph_dump.h"
#include "fit_internal.h"
#include "fit_block_moe.h"
#include "fit_blocks.h"
#include "fit_llm.h"
#include "internal.h"

typedef void (*arch_graph)(gm_llm *l);

static arch_graph graph_of(const gm_hparams *hp) {
    switch (hp->arch) {
    case GM_ARCH_LLAMA: return gm_arch_llama;
    case GM_ARCH_QWEN2: return gm_arch_llama;
    case GM_ARCH_SMOLLM3: return gm_arch_smollm3;
    case GM_ARCH_QWEN3MOE: return gm_arch_qwen3moe;
    case GM_ARCH_QWEN3: return gm_arch_qwen3moe;
    case GM_ARCH_GEMMA4: return gm_arch_gemma4;
    case GM_ARCH_QWEN4EXP: return gm_arch_qwen4exp;
    /* graphs-dense */
    case GM_ARCH_MISTRAL3: return gm_arch_mistral3;
    case GM_ARCH_PHI3: return gm_arch_phi3;
    case GM_ARCH_GRANITE: return hp->deepstack ? NULL : gm_arch_granite; /* vision inputs: not modelled */
    case GM_ARCH_COMMAND_R: return gm_arch_command_r;
    case GM_ARCH_COHERE2: return gm_arch_cohere2;
    case GM_ARCH_OLMO2: return gm_arch_olmo2;
    case GM_ARCH_STARCODER2: return gm_arch_starcoder2;
    case GM_ARCH_EXAONE4: return gm_arch_exaone4;
    case GM_ARCH_GEMMA2: return gm_arch_gemma2;
    case GM_ARCH_GEMMA3: return gm_arch_gemma3;
    case GM_ARCH_GEMMA3N: return gm_arch_gemma3n;
    case GM_ARCH_BERT: return gm_arch_bert;
    case GM_ARCH_NOMIC_BERT: return gm_arch_nomic_bert;
    case GM_ARCH_T5: return gm_arch_t5;
    case GM_ARCH_T5ENCODER: return gm_arch_t5encoder;
    case GM_ARCH_QWEN35: return gm_arch_qwen35;
    case GM_ARCH_QWEN35MOE: return gm_arch_qwen35;
    case GM_ARCH_QWEN3NEXT: return gm_arch_qwen3next;
    case GM_ARCH_MAMBA2: return gm_arch_mamba2;
    case GM_ARCH_NEMOTRON_H: return gm_arch_nemotron_h;
    case GM_ARCH_NEMOTRON_H_MOE: return gm_arch_nemotron_h;
    case GM_ARCH_FALCON_H1: return gm_arch_falcon_h1;
    case GM_ARCH_GRANITEHYBRID: return gm_arch_granitehybrid;
    case GM_ARCH_LFM2: return hp->memory == GM_MEMORY_HYBRID && hp->causal ? gm_arch_lfm2 : NULL; /* no SWA pair */
    case GM_ARCH_RWKV7: return gm_arch_rwkv7;
    /* graphs-moe */
    case GM_ARCH_GPT_OSS: return gm_arch_gpt_oss;
    case GM_ARCH_QWEN2MOE: return gm_arch_qwen2moe;
    case GM_ARCH_OLMOE: return gm_arch_olmoe;
    case GM_ARCH_MINIMAX_M2: return gm_arch_minimax_m2;
    case GM_ARCH_PHIMOE: return gm_arch_phi3;
    case GM_ARCH_ERNIE4_5_MOE: return gm_arch_ernie4_5_moe;
    case GM_ARCH_GRANITEMOE: return gm_arch_granite;
    case GM_ARCH_GLM4MOE: return gm_arch_glm4moe;
    case GM_ARCH_HY_V3: return gm_arch_hy_v3;
    case GM_ARCH_STEP35: return gm_arch_step35;
    case GM_ARCH_COHERE2MOE: return gm_arch_cohere2moe;
    case GM_ARCH_DEEPSEEK2: return gm_arch_deepseek2;
    case GM_ARCH_DEEPSEEK32: return gm_arch_dsa;
    case GM_ARCH_GLM_DSA: return gm_arch_dsa;
    default: return NULL;
    }
}

/* llama_context's pipeline parallelism (llama-context.cpp:427-456): several
 * GPUs, every layer and the output on them (n_gpu_layers > n_layer_all),
 * -sm layer, the KV cache offloaded, no tensor override (-ot, --n-cpu-moe),
 * and every GPU backend with async compute and events, which CUDA, ROCm and
 * Metal all have (ggml-cuda.cu:5099-5112 unless built with
 * GGML_CUDA_NO_PEER_COPY, ggml-metal.cpp:695-701).  The scheduler then keeps
 * GGML_SCHED_MAX_COPIES (4) copies of every input (ggml-backend.cpp:1872). */
bool gm_fit_pipeline_parallel(const gm_fit_ctx *fit) {
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    const ggufmap_placement_opts *o = ggufmap_placement_options(pl);
    const int32_t n_layer_all = ggufmap_placement_n_layers(pl);
    return ggufmap_placement_n_gpus(pl) > 1 && (o->n_gpu_layers < 0 || o->n_gpu_layers > n_layer_all) &&
           o->split_mode == GGUFMAP_SPLIT_LAYER && fit->cp.offload_kqv && o->n_overrides == 0;
}

/* llama_context's backends: every model device (the run's GPUs, present
 * at any -ngl) in order, then the CPU, which computes in the first GPU's
 * host buffer type when it has one (CUDA_Host) (:330-421) */
static void setup_backends(const gm_fit_ctx *fit, gm_backends *be) {
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    memset(be, 0, sizeof *be);
    be->device = fit->device;
    be->op_offload = fit->cp.op_offload;
    be->n_copies = gm_fit_pipeline_parallel(fit) ? GM_SCHED_MAX_COPIES : 1;
    be->no_fusion = fit->opts.no_cuda_fusion;
    for (uint32_t i = 0; i < ggufmap_placement_n_gpus(pl); i++) {
        be->buft[be->n] = gm_loc_of((gm_buft_id){GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, i)});
        be->alignment[be->n++] = gm_buft_alignment(fit->device, GGUFMAP_BUFT_GPU);
    }
    be->gpu = be->n > 0;
    const ggufmap_buft_kind cpu = be->gpu ? gm_cpu_compute_buft(fit->device) : GGUFMAP_BUFT_CPU;
    be->buft[be->n] = gm_loc_of((gm_buft_id){cpu, 0});
    be->alignment[be->n++] = gm_buft_alignment(fit->device, cpu);
}

/* Per model tensor, the context of its instance and of its output copy. */
static bool weight_contexts(const gm_fit_ctx *fit, int32_t **ctx_of, int32_t **dup_of) {
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    const int64_t n = ggufmap_model_n_tensors(ggufmap_placement_model(pl));
    *ctx_of = malloc((size_t)(n + 1) * sizeof **ctx_of);
    *dup_of = malloc((size_t)(n + 1) * sizeof **dup_of);
    if (!*ctx_of || !*dup_of) return false;
    for (int64_t i = 0; i < n; i++) (*ctx_of)[i] = (*dup_of)[i] = -1;
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        int32_t *slot = in->duplicate ? &(*dup_of)[in->tensor] : &(*ctx_of)[in->tensor];
        if (*slot < 0 || (in->duplicate && in->cls == GGUFMAP_CLASS_OUTPUT)) *slot = (int32_t)in->context;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* The memory modules' tensors in a graph                                    */
/* ------------------------------------------------------------------------ */

static gm_buft layer_buft(const gm_llm *l, uint32_t il) {
    return gm_loc_of(gm_fit_layer_buft(l->fit, il, l->cp->offload_kqv));
}

static void make_cache(gm_llm *l, gm_kv_cache *kv, gm_cache cache, int64_t kv_size) {
    const gm_hparams *hp = l->hp;
    const int64_t n_stream = l->cp->sizes.n_stream;
    const bool variable_v = l->cp->sizes.v_trans && gm_n_embd_v_gqa_variable(hp);
    memset(kv, 0, sizeof *kv);
    kv->present = true;
    kv->v_trans = l->cp->sizes.v_trans;
    kv->k_only = cache == GM_CACHE_IDX;
    kv->kv_size = kv_size;
    kv->head_k_override = kv->k_only ? hp->indexer_head_size : 0;
    for (uint32_t il = 0; il < GM_MAX_LAYERS; il++) kv->k[il] = kv->v[il] = GM_NONE;
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        if (!gm_cache_has_layer(hp, cache, il)) continue;
        const int64_t k_row = kv->k_only ? hp->indexer_head_size : gm_n_embd_k_gqa(hp, il);
        kv->k[il] = gm_new_buffered(l->g, l->cp->type_k, (int64_t[4]){ k_row, kv_size, n_stream, 1 }, layer_buft(l, il), false);
        if (kv->k_only) continue;
        const int64_t v_row = variable_v ? gm_n_embd_v_gqa_max(hp) : gm_n_embd_v_gqa(hp, il);
        kv->v[il] = gm_new_buffered(l->g, l->cp->type_v, (int64_t[4]){ v_row, kv_size, n_stream, 1 }, layer_buft(l, il), false);
    }
    for (uint32_t il = 0; il < hp->n_layer_all; il++) {
        const int32_t from = gm_cache_reuse(hp, il);
        if (from < 0 || kv->k[from] == GM_NONE) continue;
        kv->k[il] = kv->k[from];
        kv->v[il] = kv->v[from];
    }
}

static void make_recurrent(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    const int64_t rows = (int64_t)l->cp->sizes.n_seq_max * (1 + l->cp->n_rs_seq);
    for (uint32_t il = 0; il < GM_MAX_LAYERS; il++) l->rs_r[il] = l->rs_s[il] = l->rs_p[il] = GM_NONE;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        if (!gm_cache_has_layer(hp, GM_CACHE_RS, il)) continue;
        l->rs_r[il] = gm_new_buffered(l->g, 0, (int64_t[4]){ gm_n_embd_r(hp), rows, 1, 1 }, layer_buft(l, il), false);
        l->rs_s[il] = gm_new_buffered(l->g, 0, (int64_t[4]){ gm_n_embd_s(hp), rows, 1, 1 }, layer_buft(l, il), false);
        if (gm_ple_conv_state(hp) > 0 && hp->is_ple[il])
            l->rs_p[il] = gm_new_buffered(l->g, 0, (int64_t[4]){ gm_ple_conv_state(hp), rows, 1, 1 }, layer_buft(l, il), false);
    }
}

static void make_memory(gm_llm *l) {
    const gm_hparams *hp = l->hp;
    const ggufmap_fit_context *s = &l->cp->sizes;
    memset(&l->kv_swa, 0, sizeof l->kv_swa);
    memset(&l->kv_idx, 0, sizeof l->kv_idx);
    if (hp->memory != GM_MEMORY_NONE && hp->memory != GM_MEMORY_RECURRENT) make_cache(l, &l->kv, GM_CACHE_KV, s->kv_size);
    if (hp->memory == GM_MEMORY_KV_ISWA || hp->memory == GM_MEMORY_HYBRID_ISWA)
        make_cache(l, &l->kv_swa, GM_CACHE_KV_SWA, s->kv_size_swa);
    if ((hp->memory == GM_MEMORY_HYBRID_IDX && hp->indexer_head_size > 0) || hp->memory == GM_MEMORY_KV_DSA)
        make_cache(l, &l->kv_idx, GM_CACHE_IDX, s->kv_size);
    if (hp->memory >= GM_MEMORY_RECURRENT) make_recurrent(l);
}

/* ------------------------------------------------------------------------ */
/* One reserve                                                               */
/* ------------------------------------------------------------------------ */

/* No backend runs node t: the CPU's extra buffer type holding its weight
 * refuses it and no GPU takes it; ggml_backend_sched_split_graph asserts
 * (ggml-backend.cpp:1293), llama.cpp aborts creating the context. */
static void unrunnable(gm_llm *l, int32_t t) {
    gm_fit_ctx *fit = (gm_fit_ctx *)l->fit;
    if (fit->refusal[0]) return;
    snprintf(fit->refusal, sizeof fit->refusal, "no backend runs a node of the graph (op %d): the CPU's extra buffer "
             "type (AMX or CPU_REPACK) that holds its weight refuses it and no GPU takes it; ggml asserts in "
             "ggml_backend_sched_split_graph (--no-repack avoids it)", (int)l->g->t[t].op);
    fit->aborts = true;
}

/* resolve_fused_ops' check (llama-context.cpp:506-560): a flash-attention
 * node the scheduler put on another device than its layer's
 * (llama_model::dev_layer, whatever -nkvo says) */
static bool fa_moved(const gm_llm *l, const gm_graph *g, const gm_split_graph *sg) {
    for (int32_t i = 0; i < sg->n_nodes; i++) {
        const gm_tensor *x = &g->t[sg->nodes[i]];
        if (x->op != GM_OP_FLASH_ATTN_EXT || x->il < 0) continue;
        const int b = sg->node_backend[i];
        const int32_t device = b == l->be.n - 1 ? -1 : (int32_t)gm_loc_gpu(l->be.buft[b]);
        if (device != gm_fit_layer_gpu(l->fit, (uint32_t)x->il)) return true;
    }
    return false;
}

/* A graph whose building aborts llama.cpp (a ggml assert, a division by
 * zero, a GGML_ASSERT of the architecture's graph: gm_assert), or with a
 * tensor beyond GM_FIT_MAX_BYTES: llama.cpp cannot allocate it (its own
 * size_t sizes overflow first) and fails the context. */
static bool graph_refused(gm_llm *l, const gm_graph *g) {
    gm_fit_ctx *fit = (gm_fit_ctx *)l->fit;
    if (g->aborts[0]) {
        if (!fit->refusal[0]) snprintf(fit->refusal, sizeof fit->refusal, "%s", g->aborts);
        fit->aborts = true;
        return true;
    }
    if (!g->too_big) return false;
    if (!fit->refusal[0])
        snprintf(fit->refusal, sizeof fit->refusal, "failed to allocate compute buffers: a tensor of the worst-case "
                 "graph exceeds %llu PiB at these sizes", (unsigned long long)(GM_FIT_MAX_BYTES >> 50));
    return true;
}

/* llama_context::graph_reserve: the graph for this ubatch, split and
 * allocated, the peak of each backend's buffer into size[]; with probe_fa
 * (resolve_fused_ops' flash-attention probe: graph_reserve(split_only)) split
 * only, and whether a flash-attention node left its layer's device into
 * *probe_fa */
static bool reserve(gm_llm *l, arch_graph build, gm_ubatch ub, uint64_t size[GM_MAX_BACKENDS], bool *probe_fa) {
    const int64_t n_models = ggufmap_model_n_tensors(ggufmap_placement_model(ggufmap_plan_placement(l->fit->plan)));
    gm_graph g;
    gm_split_graph sg;
    memset(&sg, 0, sizeof sg); /* freed even when the graph never gets split */
    sg.unrunnable = GM_NONE;
    gm_graph_init(&g);
    l->g = &g;
    if (ub.n_tokens % ub.n_seqs != 0) ub.n_tokens = (ub.n_tokens + ub.n_seqs - 1) / ub.n_seqs * ub.n_seqs;
    ub.n_seq_tokens = ub.n_tokens / ub.n_seqs;
    l->ub = ub;
    l->t_logits = l->t_embd = GM_NONE;
    for (int64_t i = 0; i < n_models; i++) l->w[i] = l->w_dup[i] = GM_NONE;
    g.max_ctx_tensors = l->max_nodes;
    const int64_t n_copies = n_models * ggufmap_placement_n_contexts(ggufmap_plan_placement(l->fit->plan));
    for (int64_t i = 0; i < n_copies; i++) l->w_copy[i] = GM_NONE;
    make_memory(l);
    build(l);
    if (g.aborts[0]) { /* a builder's GGML_ASSERT failed: nothing after it is built */
        graph_refused(l, &g);
        gm_graph_free(&g);
        l->g = NULL;
        return false;
    }
    gm_build_pooling(l); /* llama_model::build_graph adds it after every graph (llama-model.cpp:2766) */
    gm_set_outputs(l);
    g.max_ctx_tensors = 0; /* the scheduler's copies are in its own context */
#ifdef GGUFMAP_GRAPH_DUMP
    int32_t *srcs = gm_graph_dump_save_srcs(&g);
#endif
    bool ok = !graph_refused(l, &g) && !g.oom && gm_sched_split(&g, &l->be, &sg);
    if (ok && probe_fa) *probe_fa = fa_moved(l, &g, &sg);
    else ok = ok && gm_alloc_reserve(&g, &sg, &l->be, size);
#ifdef GGUFMAP_GRAPH_DUMP
    if (ok) gm_graph_dump(&g, srcs, &sg, &l->be);
    free(srcs);
#endif
    if (!ok && sg.unrunnable != GM_NONE) unrunnable(l, sg.unrunnable);
    gm_split_graph_free(&sg);
    gm_graph_free(&g);
    l->g = NULL;
    return ok;
}

/* The buffers in the order llama.cpp holds them: ggml_gallocr_reserve_n
 * (ggml-alloc.c:904-945) allocates every backend's buffer at the first
 * (prompt) reserve in backend order and frees and re-allocates one when a
 * later reserve needs more, so a buffer the one-token graph grew comes after
 * those it did not. */
static void add_compute_buffers(gm_fit_ctx *fit, const gm_backends *be, const uint64_t pp[GM_MAX_BACKENDS],
                                const uint64_t size[GM_MAX_BACKENDS]) {
    int order[GM_MAX_BACKENDS], n = 0;
    for (int b = 0; b < be->n; b++)
        if (size[b] == pp[b]) order[n++] = b;
    for (int b = 0; b < be->n; b++)
        if (size[b] != pp[b]) order[n++] = b;
    for (int i = 0; i < n; i++) {
        const int b = order[i];
        if (size[b] == 0) continue;
        const gm_buft_id id = {gm_loc_kind(be->buft[b]), gm_loc_gpu(be->buft[b])};
        ggufmap_fit_buffer *x = gm_fit_add_buffer(fit, GGUFMAP_FIT_COMPUTE, id, size[b]);
        if (!x) return;
        snprintf(x->what, sizeof x->what, "ggml-alloc's peak for the worst-case graph (%u-token ubatch)",
                 fit->cp.sizes.n_ubatch < fit->cp.sizes.n_ctx ? fit->cp.sizes.n_ubatch : fit->cp.sizes.n_ctx);
    }
}

/* the MTP draft context's graph (LLM_GRAPH_TYPE_DECODER_MTP) */
static arch_graph mtp_graph_of(const gm_hparams *hp) {
    switch (hp->arch) {
    case GM_ARCH_QWEN35: return gm_arch_qwen35_mtp;
    case GM_ARCH_QWEN35MOE: return gm_arch_qwen35_mtp;
    case GM_ARCH_QWEN3NEXT: return gm_arch_qwen3next_mtp;
    case GM_ARCH_NEMOTRON_H_MOE: return gm_arch_nemotron_h_moe_mtp;
    /* graphs-moe */
    case GM_ARCH_GLM4MOE: return gm_arch_glm4moe_mtp;
    case GM_ARCH_HY_V3: return gm_arch_hy_v3_mtp;
    case GM_ARCH_STEP35: return gm_arch_step35_mtp;
    case GM_ARCH_COHERE2MOE: return gm_arch_cohere2moe_mtp;
    case GM_ARCH_DEEPSEEK2: return gm_arch_deepseek2_mtp;
    case GM_ARCH_DEEPSEEK32: return gm_arch_mla_mtp;
    case GM_ARCH_GLM_DSA: return gm_arch_mla_mtp;
    default: return NULL;
    }
}

/* llama_context::graph_max_nodes (llama-context.cpp:2365-2415) for the
 * architectures with a graph here, no LoRA and no backend sampler: the
 * compute context's room, in tensors (uint32_t arithmetic, as there); the
 * architecture's row says its budget (gm_arch_traits.nodes_per_token/_tensor) */
static uint32_t graph_max_nodes(const gm_arch_traits *t, uint32_t n_tokens, int64_t n_tensors) {
    const uint32_t nt = (uint32_t)n_tensors;
    const uint32_t a = t->nodes_per_token ? n_tokens * t->nodes_per_token : 1024u;
    const uint32_t b = (t->nodes_per_tensor ? t->nodes_per_tensor : 8u) * nt;
    return a > b ? a : b;
}

/* the context's graph: the trunk's, or the MTP draft's; NULL: a bound */
static arch_graph context_graph(const gm_hparams *hp) { return hp->ctx_mtp ? mtp_graph_of(hp) : graph_of(hp); }

bool gm_fit_has_graph(const gm_hparams *hp) { return context_graph(hp) != NULL; }

int gm_fit_compute(gm_fit_ctx *fit, ggufmap_error *err) {
    arch_graph build = context_graph(fit->hp);
    /* flash attention forced on (-fa on) over a cache type the GPU's kernels
     * refuse (CUDA: iq4_nl), for a CPU layer, with op offload pulling that
     * layer's neighbouring ops to the GPU: where they go around the refused
     * node is not traced to the byte (qwen4exp in tests/fit's fidelity set,
     * phi3 on the H200; docs/cuda.md): the bound */
    const gm_backend_def *dev = gm_backend(fit->device);
    const ggufmap_fit_context *sz = &fit->cp.sizes;
    if (dev->fa_kv_type && fit->opts.flash_attn == GGUFMAP_FA_ON && fit->cp.op_offload && sz->n_ubatch >= 32 &&
        (!dev->fa_kv_type(fit->cp.type_k) || !dev->fa_kv_type(fit->cp.type_v)) && gm_fit_lacks_fa_kernel(fit, false))
        build = NULL;
    if (!build) return gm_fit_compute_bound(fit) == GGUFMAP_OK ? GGUFMAP_OK : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    const ggufmap_fit_context *s = &fit->cp.sizes;
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->plan);
    const int64_t n_models = ggufmap_model_n_tensors(ggufmap_placement_model(pl));
    const int ngl = ggufmap_placement_options(pl)->n_gpu_layers;
    gm_llm l;
    memset(&l, 0, sizeof l);
    l.fit = fit;
    l.hp = fit->hp;
    l.cp = &fit->cp;
    l.full_offload = ngl < 0 || (uint32_t)ngl > fit->hp->n_layer_all;
    setup_backends(fit, &l.be);
    int32_t *ctx_of = NULL, *dup_of = NULL;
    l.w = malloc((size_t)(n_models + 1) * sizeof *l.w);
    l.w_dup = malloc((size_t)(n_models + 1) * sizeof *l.w_dup);
    l.w_copy = malloc((size_t)(n_models * ggufmap_placement_n_contexts(pl) + 1) * sizeof *l.w_copy);
    bool ok = l.w && l.w_dup && l.w_copy && weight_contexts(fit, &ctx_of, &dup_of);
    l.ctx_of = ctx_of;
    l.dup_ctx_of = dup_of;
    uint64_t pp[GM_MAX_BACKENDS] = { 0 }, tg[GM_MAX_BACKENDS] = { 0 }, final[GM_MAX_BACKENDS];
    const int64_t n_tokens = s->n_ctx < s->n_ubatch ? s->n_ctx : s->n_ubatch;
    const int64_t np = s->n_seq_max;
    l.max_nodes = graph_max_nodes(&fit->hp->traits, (uint32_t)n_tokens, ggufmap_placement_n_instances(pl));
    const int64_t n_outputs = n_tokens < s->n_outputs_max ? n_tokens : s->n_outputs_max;
    /* -fa auto: resolve_fused_ops' probe (a split of the one-token-per-sequence graph) before the
       reserves turns flash attention off when a flash-attention node left its layer's device (an
       -ot that sends a CPU layer's weights to a GPU, a hybrid's recurrent neighbour, several GPUs);
       without a GPU nothing can leave */
    bool fa_off = false;
    if (fit->cp.fa_auto && s->flash_attn && gm_fit_has_gpu(fit))
        ok = ok && reserve(&l, build, (gm_ubatch){ np, np, 0, np }, NULL, &fa_off);
    if (fa_off) fit->cp.sizes.flash_attn = false;
    ok = ok && reserve(&l, build, (gm_ubatch){ n_tokens, np, 0, n_outputs }, pp, NULL);
    ok = ok && reserve(&l, build, (gm_ubatch){ np, np, 0, np }, tg, NULL);
    if (!ok && fit->refusal[0]) ok = true; /* a refusal, not an error: the context has no buffers */
    for (int b = 0; b < GM_MAX_BACKENDS; b++) final[b] = pp[b] > tg[b] ? pp[b] : tg[b];
    if (ok && !fit->refusal[0]) add_compute_buffers(fit, &l.be, pp, final);
    free(l.w);
    free(l.w_dup);
    free(l.w_copy);
    free(ctx_of);
    free(dup_of);
    return ok ? GGUFMAP_OK : gm_fail(err, GGUFMAP_ENOMEM, "out of memory building the compute graph");
}

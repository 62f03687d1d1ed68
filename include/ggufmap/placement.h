/*
 * ggufmap/placement.h - which buffer type llama.cpp v0.5.0 gives each weight.
 *
 * From a model's tensor table and the options a user passes to llama.cpp
 * (device, -ngl, -ot, --cpu-moe, --n-cpu-moe, --no-repack, --lazy-mode,
 * --no-mmap, --no-host) this module reproduces llama.cpp's decision for every
 * tensor it creates (docs/placement-rules.md has the rules with source
 * lines):
 *
 *   1. which tensors the architecture's loader creates, in its order, with
 *      their class (input, output, layer N) and the op llama.cpp tests them
 *      with: llama.cpp's own load_arch_tensors for every architecture of
 *      v0.5.0, compiled into a table (src/arch_table.c, generated from its
 *      source); an architecture it does not load, a required tensor the
 *      file lacks or a tensor the loader does not use is refused, as
 *      llama.cpp refuses the file;
 *   2. lazily read tables (per_layer_token_embd of gemma4/qwen4exp) go to a
 *      CPU context of their own when --lazy-mode says so, before anything else;
 *   3. the buffer-type list of its layer: the CPU list (host buffer type of a
 *      CUDA device, AMX on an x86 CPU with AMX, CPU_REPACK, CPU) or a GPU's default type followed by it;
 *      layer il is on the GPU iff il >= n_layer + 1 - ngl (the output layer
 *      is "layer n_layer", the input layer always stays on the CPU);
 *   4. -ot overrides, first match wins, each pattern compiled and searched
 *      as std::regex (ECMAScript) compiles and searches it in the C++
 *      library the llama.cpp build used (see ggufmap_regex_dialect);
 *   5. otherwise the first type that supports the tensor (CPU_REPACK only
 *      takes 2-D/3-D matrix weights of the types the CPU repacks);
 *   6. a CUDA host type becomes CPU under mmap.
 *
 * Tensors are then grouped into llama.cpp's contexts, keyed by (buffer type,
 * lazy), in llama.cpp's order; duplicated tensors (a tied output reusing
 * token_embd, rope_freqs in every layer) are added to each context that needs
 * them, as llama.cpp does.  A context is "mapped" when llama.cpp will wrap the
 * file mapping (CPU, or Metal with mmap) and "allocated" otherwise.
 */
#ifndef GGUFMAP_PLACEMENT_H
#define GGUFMAP_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of GPU llama.cpp runs on (its backend); src/device.c has each
 * one's rules as data, docs/devices.md what they are.  Vulkan is not one:
 * its alignment and buffer sizes are the GPU's own, read at run time. */
typedef enum ggufmap_device {
    GGUFMAP_DEVICE_CPU = 0,   /* no GPU */
    GGUFMAP_DEVICE_METAL = 1, /* Apple GPU, MTL0: maps host pointers (MTL0_Mapped), unified memory */
    GGUFMAP_DEVICE_CUDA = 2,  /* NVIDIA GPU, CUDA0: weights copied; host type CUDA_Host */
    GGUFMAP_DEVICE_ROCM = 3   /* AMD GPU (ggml-cuda built for HIP), ROCm0: CUDA's rules, host type ROCm_Host */
} ggufmap_device;

/* Which CPU extra buffer types and rules apply: CPU_REPACK
 * (ggml_repack_get_optimal_repack_type) and AMX, as the CPU variant ggml
 * loads decides them (HOST: the one it loads on this machine). */
typedef enum ggufmap_cpu {
    GGUFMAP_CPU_HOST = 0,      /* detect this machine's (x86 only; else generic) */
    GGUFMAP_CPU_X86 = 1,       /* AVX2 + AVX-512F (ggml's skylakex..zen4 variants) */
    GGUFMAP_CPU_X86_AVX2 = 2,  /* AVX2 without AVX-512 (haswell, alderlake) */
    GGUFMAP_CPU_ARM64 = 3,     /* NEON + dotprod + i8mm, no SVE: Apple M2 and later */
    GGUFMAP_CPU_GENERIC = 4,   /* no repacking (ggml's x64..piledriver variants: no AVX2) */
    GGUFMAP_CPU_X86_AMX = 5    /* x86 with AMX (the sapphirerapids variant): the AMX buffer type first,
                                  then CPU_REPACK by the x86 rules */
} ggufmap_cpu;

typedef enum ggufmap_lazy {
    GGUFMAP_LAZY_AUTO = 0, /* lazy when the table exceeds 4 GiB (llama.cpp's default) */
    GGUFMAP_LAZY_ON = 1,
    GGUFMAP_LAZY_OFF = 2
} ggufmap_lazy;

/* Whose std::regex reads the -ot patterns.  llama.cpp compiles them with
 * std::regex, which is template code compiled into llama.cpp: the accepted
 * language and the matches are those of the C++ library the build used,
 * and libstdc++ and libc++ differ (libc++ refuses "\h", "[]a]", "a**",
 * which libstdc++ accepts; "$" never matches a non-empty name under
 * libc++; libstdc++ refuses "[z-a]" and "(a\1)"; docs/regex.md lists
 * them).  A pattern the library refuses makes llama.cpp fail the load;
 * ggufmap_placement_build then fails with GGUFMAP_EINVAL and says where and why. */
typedef enum ggufmap_regex_dialect {
    GGUFMAP_REGEX_AUTO = 0,      /* libc++ with GGUFMAP_DEVICE_METAL (macOS builds), else libstdc++ */
    GGUFMAP_REGEX_LIBSTDCXX = 1, /* GNU libstdc++ (GCC 11, as the prebuilt Linux llama.cpp) */
    GGUFMAP_REGEX_LIBCXX = 2     /* LLVM libc++ (macOS, and clang -stdlib=libc++) */
} ggufmap_regex_dialect;

/* What the -ot pattern searches answered on tensor names, kept between
 * placements that share the cache: each pattern is searched once per
 * distinct name, however many placements of the model (or of its
 * reordered copies: the answers depend on the names only) are built with
 * it.  `plan` builds a dozen to evaluate its next steps.  A cache is used
 * by one thread at a time and lives until ggufmap_regex_cache_free. */
typedef struct ggufmap_regex_cache ggufmap_regex_cache;

/* A new, empty cache.  GGUFMAP_OK, or GGUFMAP_ENOMEM (*out NULL). */
GGUFMAP_API int ggufmap_regex_cache_new(ggufmap_regex_cache **out);
/* NULL is allowed. */
GGUFMAP_API void ggufmap_regex_cache_free(ggufmap_regex_cache *cache);

typedef struct ggufmap_override {
    const char *pattern; /* ECMAScript regex (std::regex), searched unanchored in the tensor name */
    const char *buft;    /* a device's default buffer type: "CPU", "MTL0", "CUDA0", "CUDA1" */
} ggufmap_override;

/* -sm/--split-mode: how llama.cpp spreads a model over several GPUs. */
typedef enum ggufmap_split_mode {
    GGUFMAP_SPLIT_LAYER = 0,  /* whole layers per GPU, by -ts (llama.cpp's default) */
    GGUFMAP_SPLIT_NONE = 1,   /* one GPU: -mg's */
    GGUFMAP_SPLIT_ROW = 2     /* matrices split by rows (the device's split buffer type): refused, see
                                 ggufmap_placement_build */
} ggufmap_split_mode;

#define GGUFMAP_MAX_GPUS 16   /* GGML_CUDA_MAX_DEVICES */

typedef struct ggufmap_placement_opts {
    ggufmap_device device;               /* the GPUs' kind (CPU: none) */
    uint32_t n_gpus;                     /* -dev: how many GPUs of that kind the run uses (0 counts as 1) */
    uint32_t gpus[GGUFMAP_MAX_GPUS];     /* -dev: their ordinals in -dev's order (CUDA1,CUDA0: 1, 0);
                                            all 0 = 0, 1, 2, ... (every GPU, llama.cpp's default) */
    float tensor_split[GGUFMAP_MAX_GPUS]; /* -ts: per GPU of gpus[]; all 0: by gpu_free */
    uint64_t gpu_free[GGUFMAP_MAX_GPUS];  /* per GPU of gpus[]: the free memory its device reports at load,
                                            which llama.cpp splits layers by when -ts is not given; any 0:
                                            equal shares (what it does on equal GPUs) */
    ggufmap_split_mode split_mode;       /* -sm (default layer) */
    uint32_t main_gpu;                   /* -mg: with -sm none, the index in gpus[] of the GPU used */
    int n_gpu_layers;                    /* -ngl; negative means all (llama.cpp: n_layer + 1) */
    const ggufmap_override *overrides;   /* in command-line order; --cpu-moe etc. expanded */
    uint32_t n_overrides;
    bool no_repack;                      /* -nr: no CPU_REPACK */
    bool no_mmap;                        /* --no-mmap (load mode none) */
    bool no_host;                        /* --no-host: no CUDA_Host in the CPU list */
    ggufmap_cpu cpu;                     /* HOST (default): the CPU the device comes with: Apple Silicon's
                                            (arm64) with Metal, else this machine's */
    ggufmap_lazy lazy;
    ggufmap_regex_dialect regex;         /* how the override patterns are read (default AUTO) */
    bool load_mtp;                       /* llama_model_params.load_mtp: create the MTP/NextN
                                            layers instead of skipping them (--spec-type draft-mtp) */
    ggufmap_regex_cache *regex_cache;    /* NULL: none; else the override searches' answers are
                                            looked up and kept there */
} ggufmap_placement_opts;

/* The i-th architecture llama.cpp v0.5.0 has a loader for, by its
 * general.architecture name, in byte order; NULL past the last. */
GGUFMAP_API const char *ggufmap_architecture(uint32_t i);

/* Fills opts with llama.cpp's defaults: CPU device, ngl -1, repack, mmap,
 * the device's CPU (HOST), lazy auto, regex dialect auto, no MTP.  Set
 * another device and its defaults follow from it when the placement is
 * built (the CPU rules and the regex dialect of the machine it comes in;
 * the page in the plan): the same rules as ggufmap_preset (plan.h) gives. */
GGUFMAP_API void ggufmap_placement_opts_init(ggufmap_placement_opts *opts);

/* The override patterns llama.cpp's --cpu-moe adds (n_layers < 0: one) and
 * --n-cpu-moe N adds (N); written into buf as NUL-separated strings, their
 * number into *count.  GGUFMAP_OK, or GGUFMAP_EINVAL when buf is too small. */
GGUFMAP_API int ggufmap_cpu_moe_patterns(int n_layers, char *buf, size_t cap, int *count);

typedef enum ggufmap_tensor_class {
    GGUFMAP_CLASS_INPUT = 0,
    GGUFMAP_CLASS_OUTPUT = 1,
    GGUFMAP_CLASS_LAYER = 2
} ggufmap_tensor_class;

/* One tensor as llama.cpp creates it (a file tensor may be created twice). */
typedef struct ggufmap_instance {
    int64_t tensor;              /* index in ggufmap_model_tensor() */
    uint32_t context;            /* index in ggufmap_placement_context() */
    ggufmap_tensor_class cls;
    int32_t layer;               /* il for CLASS_LAYER, n_layer for OUTPUT, -1 for INPUT */
    bool duplicate;              /* a second copy (tied output, rope_freqs) */
} ggufmap_instance;

/* What a buffer type is.  Every part of ggufmap asks a context's kind (or
 * its gpu flag), never its name: one place (the placement) decides it. */
typedef enum ggufmap_buft_kind {
    GGUFMAP_BUFT_CPU = 0,        /* "CPU": host memory (mapped: "CPU_Mapped") */
    GGUFMAP_BUFT_CPU_REPACK = 1, /* "CPU_REPACK": weights rearranged for the CPU's kernels (always allocated) */
    GGUFMAP_BUFT_GPU_HOST = 2,   /* "CUDA_Host", "ROCm_Host": pinned host memory the GPU reads; not the GPU's */
    GGUFMAP_BUFT_GPU = 3,        /* a GPU's own: "MTL0" (Metal), "CUDA0", "CUDA1", "ROCm0" */
    GGUFMAP_BUFT_CPU_AMX = 4     /* "AMX": weights packed for Intel AMX's kernels (always allocated) */
} ggufmap_buft_kind;
#define GGUFMAP_BUFT_CUDA_HOST GGUFMAP_BUFT_GPU_HOST /* its name before ROCm */

typedef struct ggufmap_context {
    char buft[32];               /* "CPU", "CPU_REPACK", "AMX", "MTL0", "CUDA0", "CUDA_Host" */
    bool lazy;
    bool mapped;                 /* wraps the file mapping (one buffer per file) */
    char buffer_name[40];        /* what llama.cpp prints: "CPU_Mapped", "MTL0_Mapped", "CPU_REPACK" */
    uint64_t max_tensor;         /* largest tensor (ggml_get_max_tensor_size) */
    uint64_t alloc_size;         /* for allocated contexts: the buffer size llama.cpp allocates */
    uint32_t alignment;          /* buffer type alignment */
    int64_t n_instances;
    ggufmap_buft_kind kind;      /* buft's kind: compare this, not the name */
    bool gpu;                    /* kind == GGUFMAP_BUFT_GPU: counts in the GPU working set, its mapped
                                    buffers go to the gpu backend (CUDA_Host is host memory: false) */
    uint32_t ordinal;            /* kind == GGUFMAP_BUFT_GPU: which GPU (CUDA1: 1); else 0 */
} ggufmap_context;

typedef struct ggufmap_placement ggufmap_placement;

/* Places every tensor of model.  On success *out owns the result (and
 * borrows model, which must outlive it).  Errors (EINVAL, the message names
 * the override and, for a pattern, the 1-based byte position and the
 * reason): an unknown buffer type in an override; a pattern the regex
 * dialect refuses, when llama.cpp reaches it (llama.cpp compiles an
 * override's pattern only when no earlier override matched the tensor, so
 * a refused pattern behind one that matches every tensor is only a
 * warning); a search the library gives up (libc++'s error_complexity) or
 * that exceeds ggufmap's step budget (a pattern that backtracks
 * exponentially: libstdc++ would not finish).  A file llama.cpp v0.5.0
 * refuses to load (EFORMAT: an architecture it has no loader for, a missing
 * block count, a required tensor missing, a tensor its loader does not use;
 * the message names the architecture or tensor). */
GGUFMAP_API int ggufmap_placement_build(const ggufmap_model *model, const ggufmap_placement_opts *opts, ggufmap_placement **out,
                  ggufmap_error *err);
GGUFMAP_API void ggufmap_placement_free(ggufmap_placement *p);

GGUFMAP_API const ggufmap_model *ggufmap_placement_model(const ggufmap_placement *p);
/* The options it was placed with (device, -ngl, overrides, ...). */
GGUFMAP_API const ggufmap_placement_opts *ggufmap_placement_options(const ggufmap_placement *p);
/* Contexts in llama.cpp's order (the order of its buffers and log lines). */
GGUFMAP_API uint32_t ggufmap_placement_n_contexts(const ggufmap_placement *p);
GGUFMAP_API const ggufmap_context *ggufmap_placement_context(const ggufmap_placement *p, uint32_t i);
/* Instances in creation order. */
GGUFMAP_API int64_t ggufmap_placement_n_instances(const ggufmap_placement *p);
GGUFMAP_API const ggufmap_instance *ggufmap_placement_instance(const ggufmap_placement *p, int64_t i);
/* The GPUs of the run (llama_model::devices), in order: their ordinals.
 * None on the CPU; one with -sm none. */
GGUFMAP_API uint32_t ggufmap_placement_n_gpus(const ggufmap_placement *p);
GGUFMAP_API uint32_t ggufmap_placement_gpu(const ggufmap_placement *p, uint32_t i);
/* The GPU a layer runs on (its ordinal; "layer" n_layers is the output
 * layer), or -1 for the CPU. */
GGUFMAP_API int32_t ggufmap_placement_layer_gpu(const ggufmap_placement *p, int32_t layer);
/* Layers as llama.cpp counts them (hparams.n_layer_all: <arch>.block_count,
 * MTP/NextN layers included) and which run on the GPU ("layer" n_layers is
 * the output layer). */
GGUFMAP_API int32_t ggufmap_placement_n_layers(const ggufmap_placement *p);
/* Of those, the MTP/NextN layers at the end (hparams.n_layer_nextn). */
GGUFMAP_API int32_t ggufmap_placement_n_layers_nextn(const ggufmap_placement *p);
/* Whether the MTP/NextN layers were created (ggufmap_placement_opts.load_mtp). */
GGUFMAP_API bool ggufmap_placement_load_mtp(const ggufmap_placement *p);
/* general.architecture, as llama.cpp names it. */
GGUFMAP_API const char *ggufmap_placement_arch(const ggufmap_placement *p);
GGUFMAP_API bool ggufmap_placement_layer_on_gpu(const ggufmap_placement *p, int32_t layer);
/* A warning for the user, or "" (v0.5.0's rules leave nothing to guess today). */
GGUFMAP_API const char *ggufmap_placement_warning(const ggufmap_placement *p);
/* Why llama.cpp v0.5.0 refuses to load the model or aborts creating any
 * context for it, or NULL when it loads it: llama.cpp's own message (a key
 * missing or of the wrong type, a GGML_ASSERT of load_hparams, a tensor
 * whose shape contradicts the hyperparameters, ...) with its source line.
 * The placement is still made (as llama.cpp would place the tensors had it
 * not stopped), so that a caller can show it; the commands refuse. */
GGUFMAP_API const char *ggufmap_placement_refusal(const ggufmap_placement *p);
/* The effective CPU kind (GGUFMAP_CPU_HOST resolved by the device). */
GGUFMAP_API ggufmap_cpu ggufmap_placement_cpu(const ggufmap_placement *p);
/* The effective -ot dialect (GGUFMAP_REGEX_AUTO resolved by the device). */
GGUFMAP_API ggufmap_regex_dialect ggufmap_placement_regex(const ggufmap_placement *p);
GGUFMAP_API const char *ggufmap_cpu_name(ggufmap_cpu cpu);
/* The CPU named: a kind as ggufmap_cpu_name spells it (host, x86, x86-amx,
 * x86-avx2, arm64, generic), or one of the x86 CPU variants the prebuilt
 * llama.cpp ships (libggml-cpu-NAME.so: x64, sse42, sandybridge,
 * ivybridge, piledriver, haswell, skylakex, cannonlake, cascadelake,
 * icelake, cooperlake, zen4, alderlake, sapphirerapids), which gives the
 * kind that variant's rules are (sapphirerapids: x86-amx).  GGUFMAP_OK, or
 * GGUFMAP_EINVAL for another name. */
GGUFMAP_API int ggufmap_cpu_parse(const char *name, ggufmap_cpu *out);
/* llama.cpp's name of a buffer type of a run on device kind d: "CPU",
 * "CPU_REPACK", "AMX", "CUDA_Host", "MTL0", "CUDA1" (ordinal: which GPU,
 * for GGUFMAP_BUFT_GPU), into buf; returns buf. */
GGUFMAP_API const char *ggufmap_buft_name(ggufmap_device d, ggufmap_buft_kind kind, uint32_t ordinal, char *buf,
                                          size_t cap);
/* Whether the device shares one memory with the CPU (Metal on Apple
 * Silicon): its GPU buffers are RAM too, under a working-set limit. */
GGUFMAP_API bool ggufmap_device_unified(ggufmap_device device);
/* "cpu", "metal", "cuda", "rocm". */
GGUFMAP_API const char *ggufmap_device_name(ggufmap_device device);
/* Reads a device as llama.cpp or ggufmap names it, any case: a kind (cpu,
 * none, metal, cuda, rocm) or a device name (MTL0, CUDA0, CUDA1, ROCm0;
 * *ordinal gets its number, 0 for a kind).  GGUFMAP_OK, GGUFMAP_EINVAL for
 * another name, GGUFMAP_ENOTFOUND for a backend ggml has that ggufmap does
 * not model (Vulkan: its alignment and buffer sizes are the GPU's own; the
 * message in err says why). */
GGUFMAP_API int ggufmap_device_parse(const char *name, ggufmap_device *device, uint32_t *ordinal,
                                     ggufmap_error *err);

#ifdef __cplusplus
}
#endif
#endif

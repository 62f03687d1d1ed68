/*
 * cmd_fit.c - `ggufmap fit MODEL [placement flags] [context flags]`: all the
 * memory a llama.cpp run needs, per device, whether it fits a limit, the
 * largest context that does, and what to change when it does not.
 *
 * The context flags spell llama.cpp's (-c, -np, -ctk, -ctv, -fa, -ub, -b,
 * --swa-full, --kv-unified, -nkvo) with its CLI defaults; the placement
 * flags and the planning options are plan's (placement_args.c), and MODEL
 * may be on a server as for plan (model_arg.c).
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/fit.h"
#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "model_arg.h"
#include "placement_args.h"
#include "util.h"

/* -c and -b are one-letter options: their codes are their letters (cli.h) */
enum {
    OPT_CTX = 'c', OPT_B = 'b',
    OPT_NP = 0x100, OPT_CTK, OPT_CTV, OPT_FA, OPT_UB, OPT_SWA_FULL, OPT_KV_UNIFIED, OPT_NKVO,
    OPT_EMBD, OPT_NO_OP_OFFLOAD, OPT_LIMIT, OPT_MEM, OPT_MAX_CTX
};

static const cli_option context_options[] = {
    {OPT_CTX, "-c, --ctx-size", "N", NULL, "context size; 0 = the trained context (default)"},
    {OPT_NP, "-np, --parallel", "N", NULL, "sequences (default 1)"},
    {OPT_CTK, "-ctk, --cache-type-k", "T", "f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1",
     "K cache type: f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1 (default f16)"},
    {OPT_CTV, "-ctv, --cache-type-v", "T", "f32 f16 bf16 q8_0 q4_0 q4_1 iq4_nl q5_0 q5_1",
     "V cache type, as -ctk (default f16)"},
    {OPT_FA, "-fa, --flash-attn", "on|off|auto", "on off auto", "flash attention (default auto)"},
    {OPT_B, "-b, --batch-size", "N", NULL, "logical batch (default 2048)"},
    {OPT_UB, "-ub, --ubatch-size", "N", NULL, "physical batch (default 512)"},
    {OPT_SWA_FULL, "--swa-full", NULL, NULL, "full-size sliding-window cache"},
    {OPT_KV_UNIFIED, "-kvu, --kv-unified", NULL, NULL, "one KV stream for all sequences"},
    {OPT_NKVO, "-nkvo, --no-kv-offload", NULL, NULL, "keep the KV cache on the CPU"},
    {OPT_EMBD, "--embedding, --embeddings", NULL, NULL, "the output buffer holds embeddings too"},
    {OPT_NO_OP_OFFLOAD, "--no-op-offload", NULL, NULL, "no offload of host-weight ops to the GPU"},
};

static const cli_option planning_options[] = {
    PLANNER_OPTION,
    PAGE_OPTION("16K with metal, Apple Silicon's page; else 1B, exact bytes"),
};

static const cli_option verdict_options[] = {
    {OPT_LIMIT, "--limit", "SIZE|D=SIZE[,...]", NULL,
     "what each GPU (else the CPU) may hold, e.g. 96G, or per device of -dev, e.g. CUDA0=24G,CUDA1=12G (a bare "
     "SIZE among them is the others'; without -ts llama.cpp splits the layers by the GPUs' free memory: by these "
     "limits here); exit status 3 when the run exceeds one"},
    {OPT_MEM, "--mem", "SIZE", NULL,
     "the machine's RAM: everything the run holds there must fit it too (with metal's unified memory "
     "everything it holds at all: a second check, exit 3 if either fails); with metal it also sets --limit to "
     "macOS's default GPU working set (2/3 of RAM up to 32G, 3/4 above) unless --limit is given"},
    {OPT_MAX_CTX, "--max-ctx", NULL, NULL,
     "search the largest -c (a multiple of 256) that fits the limit, up to -c N when given, else the trained "
     "context"},
    {OPT_JSON, "--json", NULL, NULL, "the ggufmap.fit/1 document (docs/json.md)"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing; the exit status says whether it fits"},
};

static const cli_group context_group = CLI_GROUP("context (llama.cpp's flags and defaults)", context_options);
static const cli_group planning_group = CLI_GROUP("planning", planning_options);
static const cli_group verdict_group = CLI_GROUP("verdict and output", verdict_options);
static const cli_group *const fit_groups[] = {&placement_group, &context_group, &planning_group, &verdict_group,
                                              &model_arg_group};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct fit_args {
    placement_args placement;
    planning_args planning;
    model_arg model;
    cli_common common;
    ggufmap_fit_opts fit;
    ggufmap_plan_opts plan;
    uint64_t mem;
    bool max_ctx;
    device_limits limits;       /* --limit */
} fit_args;

/* -c, -np, -b, -ub: llama.cpp reads each with std::stoi (common/arg.cpp),
 * so the largest it takes is INT_MAX; the message says the whole range. */
static int parse_u32(const char *opt, const char *value, uint32_t min, uint32_t *out) {
    long n;
    if (parse_count(value, 2147483647l, &n) || n < (long)min)
        return cli_usage_error("fit", "%s %s: expected a count from %u to 2147483647 (llama.cpp reads it as an int)",
                               opt, value, min);
    *out = (uint32_t)n;
    return EXIT_OK;
}

/* -ctk / -ctv: the cache types llama.cpp's CLI accepts (common/arg.cpp kv_cache_types) */
static int parse_cache_type(const char *opt, const char *value, int32_t *out) {
    static const char *const allowed[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1"};
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(value, allowed[i]) == 0) {
            *out = ggufmap_type_from_name(value);
            return EXIT_OK;
        }
    return cli_usage_error("fit", "%s %s: expected f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1", opt, value);
}

static int apply_context(ggufmap_fit_opts *o, int code, const char *value) {
    switch (code) {
    case OPT_CTX: return parse_u32("-c", value, 0, &o->n_ctx);
    case OPT_NP: return parse_u32("-np", value, 1, &o->n_seq_max);
    case OPT_B: return parse_u32("-b", value, 1, &o->n_batch);
    case OPT_UB: return parse_u32("-ub", value, 1, &o->n_ubatch);
    case OPT_CTK: return parse_cache_type("-ctk", value, &o->type_k);
    case OPT_CTV: return parse_cache_type("-ctv", value, &o->type_v);
    case OPT_FA:
        if (strcmp(value, "on") == 0) o->flash_attn = GGUFMAP_FA_ON;
        else if (strcmp(value, "off") == 0) o->flash_attn = GGUFMAP_FA_OFF;
        else if (strcmp(value, "auto") == 0) o->flash_attn = GGUFMAP_FA_AUTO;
        else return cli_usage_error("fit", "-fa %s: expected on, off or auto", value);
        return EXIT_OK;
    case OPT_SWA_FULL: o->swa_full = true; return EXIT_OK;
    case OPT_KV_UNIFIED: o->kv_unified = true; return EXIT_OK;
    case OPT_NKVO: o->no_kv_offload = true; return EXIT_OK;
    case OPT_EMBD: o->embeddings = true; return EXIT_OK;
    case OPT_NO_OP_OFFLOAD: o->no_op_offload = true; return EXIT_OK;
    default: return EXIT_OK;
    }
}

static int apply(void *ctx, int code, const char *value) {
    fit_args *f = ctx;
    bool handled;
    int rc = placement_args_apply(&f->placement, code, value, "fit", &handled);
    if (!handled) rc = planning_args_apply(&f->planning, code, value, "fit", &handled);
    if (!handled) rc = model_arg_apply(&f->model, code, value, &handled);
    if (handled) return rc;
    cli_common_apply(&f->common, code, &handled);
    switch (code) {
    case OPT_LIMIT: return device_limits_parse(&f->limits, "fit", value);
    case OPT_MEM: return parse_size_option("fit", "--mem", value, 0, &f->mem);
    case OPT_MAX_CTX: f->max_ctx = true; return EXIT_OK;
    default: return apply_context(&f->fit, code, value);
    }
}

/* Once every option is read: the device's defaults, --mtp, --mem and --limit. */
static int settle(fit_args *f) {
    ggufmap_device device = f->placement.opts.device;
    placement_args_finish(&f->placement);
    planning_args_finish(&f->planning, device, &f->plan);
    /* --mtp is llama.cpp's --spec-type draft-mtp: one load with the MTP layers (the placement's load_mtp,
       common/common.cpp:1713) and the MTP draft context on those weights beside the main one */
    f->fit.mtp = f->placement.opts.load_mtp;
    if (device_limits_check(&f->limits, "fit", &f->placement.opts) != EXIT_OK) return EXIT_USAGE;
    device_limits_split(&f->limits, &f->placement.opts);
    f->fit.limit = f->limits.limit;
    memcpy(f->fit.gpu_limits, f->limits.gpu, sizeof f->fit.gpu_limits);
    if (f->max_ctx && !device_limits_any(&f->limits) && !f->mem)
        return cli_usage_error("fit", "--max-ctx needs --limit or --mem");
    /* --mem is the host's RAM: a check of its own; with unified memory it also sets macOS's default GPU
       working set unless --limit says otherwise (iogpu.wired_limit_mb) */
    f->fit.mem = f->mem;
    if (f->mem && !device_limits_any(&f->limits) && ggufmap_device_unified(device))
        f->fit.limit = ggufmap_metal_default_limit(f->mem);
    return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* The command                                                               */
/* ------------------------------------------------------------------------ */

/* llama.cpp's n_ctx_train: the model's <arch>.context_length (0 when it has none). */
static uint32_t trained_context(const ggufmap_model *m, char *key, size_t cap) {
    const char *arch;
    uint64_t len;
    int64_t v;
    const ggufmap_kv *kv = ggufmap_model_find_kv(m, "general.architecture");
    if (!kv || ggufmap_kv_string(kv, &arch, &len) != GGUFMAP_OK || len > 64) return 0;
    snprintf(key, cap, "%.*s.context_length", (int)len, arch);
    kv = ggufmap_model_find_kv(m, key);
    return kv && ggufmap_kv_int(kv, &v) == GGUFMAP_OK && v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
}

/* A context past the trained one: llama.cpp warns (llama-context.cpp:326,
 * "n_ctx_seq (%u) > n_ctx_train (%u) -- possible training context
 * overflow"), so fit says so too, beside the figure.  n_ctx_seq is n_ctx, or
 * n_ctx / n_seq_max padded to 256 without a unified cache (:292-295). */
static void note_past_training(const ggufmap_model *m, const fit_args *f, const char *what, uint32_t n_ctx, bool json) {
    char key[96];
    const uint32_t train = trained_context(m, key, sizeof key);
    if (!n_ctx || !train) return;
    uint32_t seq = n_ctx;
    if (!f->fit.kv_unified && f->fit.n_seq_max > 1) seq = (n_ctx / f->fit.n_seq_max + 255) / 256 * 256;
    if (seq <= train) return;
    fprintf(json ? stderr : stdout,
            "%snote: %s (-c %u) is past the model's trained context (%s = %u): llama.cpp v0.5.0 warns \"n_ctx_seq (%u) > "
            "n_ctx_train (%u) -- possible training context overflow\"; the memory is as shown, the answers past "
            "%u tokens may not be\n",
            json ? "ggufmap fit: " : "\n", what, n_ctx, key, train, seq, train, train);
}

/* The fit, the search and the suggestions, printed; returns the exit status. */
static int run_fit(const ggufmap_model *m, const fit_args *f) {
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_fit *fit = NULL;
    ggufmap_error err;
    ggufmap_fit_suggestion sugg[8];
    ggufmap_fit_report_opts ro = {.json = f->common.json, .suggestions = sugg};
    int rc = EXIT_OK, st = ggufmap_placement_build(m, &f->placement.opts, &pl, &err);
    if (st == GGUFMAP_OK) st = ggufmap_plan_build(pl, &f->plan, &plan, &err);
    if (st == GGUFMAP_OK) st = ggufmap_fit_build(plan, &f->fit, &fit, &err);
    if (st == GGUFMAP_OK && f->max_ctx) {
        st = ggufmap_fit_max_ctx(plan, &f->fit, false, &ro.max_ctx, &err);
        if (st == GGUFMAP_OK) st = ggufmap_fit_max_ctx(plan, &f->fit, true, &ro.max_ctx_planned, &err);
        ro.searched = true;
    }
    if (st == GGUFMAP_OK && !ggufmap_fit_fits(fit, false))
        st = ggufmap_fit_suggest(m, &f->placement.opts, &f->plan, &f->fit, sugg, 8, &ro.n_suggestions, &err);
    if (st != GGUFMAP_OK) {
        rc = cli_fail("fit", st == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT, err.message);
    } else {
        const char *warning = ggufmap_placement_warning(pl);
        if (warning[0] && !f->common.json && !f->common.quiet) cli_fail("fit", 0, warning);
        char ngl[256];
        if (!f->common.quiet && placement_args_ngl_without_device(&f->placement, ngl, sizeof ngl)) cli_fail("fit", 0, ngl);
        if (!f->common.quiet) {
            ggufmap_fit_report(stdout, fit, &ro);
            if (ro.searched) {
                note_past_training(m, f, "the largest context that fits", ro.max_ctx, f->common.json);
                if (ro.max_ctx_planned != ro.max_ctx)
                    note_past_training(m, f, "the largest context that fits repacked", ro.max_ctx_planned, f->common.json);
            } else {
                note_past_training(m, f, "the context asked for", f->fit.n_ctx, f->common.json);
            }
        }
        rc = cli_finish_stdout("fit", ggufmap_fit_fits(fit, false) ? EXIT_OK : EXIT_NO);
    }
    ggufmap_fit_free(fit);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    return rc;
}

static int run(const cli_command *cmd, int argc, char **argv) {
    fit_args *f = calloc(1, sizeof *f);
    if (!f || placement_args_init(&f->placement)) {
        free(f);
        return cli_usage_error(cmd->name, "out of memory");
    }
    f->common.progress = -1;
    ggufmap_fit_opts_init(&f->fit);
    /* llama.cpp's own switch for CUDA's fusions (ggml-cuda.cu:4508), read
     * the same way: set and not 0, the fused MoE keeps nothing alive */
    const char *no_fusion = getenv("GGML_CUDA_DISABLE_FUSION");
    f->fit.no_cuda_fusion = no_fusion && (int)strtol(no_fusion, NULL, 10) != 0; /* atoi */
    model_arg_init(&f->model, cmd->name);
    int first, rc = cli_parse(cmd, argc, argv, apply, f, CLI_ANY_OPERANDS, &first);
    if (rc == EXIT_OK) rc = model_arg_take(&f->model, argc, argv, first);
    if (rc == EXIT_OK) rc = settle(f);
    ggufmap_model *m = NULL;
    if (rc == EXIT_OK && (rc = model_arg_open(&f->model, 0, &m)) == EXIT_OK) rc = run_fit(m, f);
    ggufmap_model_free(m);
    model_arg_free(&f->model);
    placement_args_free(&f->placement);
    free(f);
    return cli_parse_status(cmd, rc);
}

const cli_command fit_command = {
    .name = "fit",
    .operands = "MODEL",
    .summary = "all the memory a llama.cpp run needs, per device, and the largest context that fits",
    .description =
        "All the memory llama.cpp v0.5.0 needs to run MODEL with a context: per device the weights (as llama.cpp "
        "maps them and as the tight plan maps them), the KV cache, the recurrent state, the output buffer (at its "
        "full n_batch size) and the compute buffers; the verdict under a limit; the largest -c that fits; what to "
        "change when it does not.  The figures equal, to the byte, what llama.cpp allocates when it creates the "
        "context (tests/fit), except the compute buffers of architectures without an exact graph, which are an "
        "upper bound (marked so).  Architectures modelled: the 46 ggufmap-fixture makes (docs/fit.md); others "
        "exit 2.  With --mtp (llama.cpp's --spec-type draft-mtp) the MTP draft context comes too.",
    .groups = fit_groups,
    .n_groups = sizeof fit_groups / sizeof fit_groups[0],
    .status_ok = "it fits (or no limit was given)",
    .status_bad = "the model cannot be read, its architecture is not modelled, or llama.cpp would refuse the "
                  "placement",
    .status_no = "it does not fit the limit, or llama.cpp refuses the context (the report says why and what would "
                 "fit)",
    .run = run,
};

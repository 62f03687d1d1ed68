/*
 * cmd_fit.c - `ggufmap fit MODEL [placement flags] [context flags]`: all the
 * memory a llama.cpp run needs, per device, whether it fits a limit, the
 * largest context that does, and what to change when it does not.
 *
 * The context flags spell llama.cpp's (-c, -np, -ctk, -ctv, -fa, -ub, -b,
 * --swa-full, --kv-unified, -nkvo) with its CLI defaults; the placement
 * flags are plan's (placement_args.c).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/fit.h"
#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "model_arg.h"
#include "placement_args.h"
#include "util.h"

enum { EXIT_DOES_NOT_FIT = 3 };

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap fit MODEL [placement flags] [-c N] [-np N] [-ctk T] [-ctv T] [-fa on|off|auto]\n"
            "                   [-ub N] [-b N] [--swa-full] [--kv-unified] [-nkvo] [--embedding]\n"
            "                   [--limit SIZE | --mem SIZE] [--max-ctx] [--json]\n"
            "\n"
            "All the memory llama.cpp v0.5.0 needs to run MODEL with a context: per device the\n"
            "weights (as llama.cpp maps them and as the tight plan maps them), the KV cache,\n"
            "the recurrent state, the output buffer (at its full n_batch size) and the compute\n"
            "buffers; the verdict under a limit; the largest -c that fits; suggestions.\n"
            "\n");
    placement_args_help(out);
    model_arg_help(out);
    fprintf(out,
            "\n"
            "context (llama.cpp's flags and defaults):\n"
            "  -c, --ctx-size N        context size; 0 = the trained context (default)\n"
            "  -np, --parallel N       sequences (default 1)\n"
            "  -ctk, -ctv T            K / V cache type: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl (f16)\n"
            "  -fa, --flash-attn M     on | off | auto (default auto)\n"
            "  -b, --batch-size N      logical batch (default 2048)\n"
            "  -ub, --ubatch-size N    physical batch (default 512)\n"
            "  --swa-full              full-size sliding-window cache\n"
            "  --kv-unified            one KV stream for all sequences\n"
            "  -nkvo, --no-kv-offload  keep the KV cache on the CPU\n"
            "  --embedding             the output buffer holds embeddings too\n"
            "  --no-op-offload         no offload of host-weight ops to the GPU\n"
            "\n"
            "verdict and output:\n"
            "  --limit SIZE            what the limited device (the GPU, else the CPU) may hold, e.g. 96G\n"
            "  --mem SIZE              the machine's RAM: with --device metal the limit is macOS's\n"
            "                          default working set (2/3 of RAM up to 32G, 3/4 above), on the\n"
            "                          CPU the RAM itself\n"
            "  --max-ctx               search the largest -c (a multiple of 256) that fits the\n"
            "                          limit, up to -c N when given, else the trained context\n"
            "  --planner P, --page SIZE  as plan (default tight; 16K pages with metal)\n"
            "  --json                  the ggufmap.fit/1 document (README)\n"
            "  -h, --help              this text\n"
            "\n"
            "exit status: 0 fits (or no limit given), 1 usage error, 2 the model cannot be read\n"
            "or its architecture is not modelled, 3 does not fit or llama.cpp refuses the context\n");
}

enum {
    OPT_CTX = 0x3000, OPT_NP, OPT_CTK, OPT_CTV, OPT_FA, OPT_B, OPT_UB, OPT_SWA_FULL, OPT_KV_UNIFIED, OPT_NKVO,
    OPT_EMBD, OPT_NO_OP_OFFLOAD, OPT_LIMIT, OPT_MEM, OPT_MAX_CTX, OPT_JSON, OPT_PLANNER, OPT_PAGE
};

static const struct option own_options[] = {
    {"c", required_argument, NULL, OPT_CTX},           {"ctx-size", required_argument, NULL, OPT_CTX},
    {"np", required_argument, NULL, OPT_NP},           {"parallel", required_argument, NULL, OPT_NP},
    {"ctk", required_argument, NULL, OPT_CTK},         {"cache-type-k", required_argument, NULL, OPT_CTK},
    {"ctv", required_argument, NULL, OPT_CTV},         {"cache-type-v", required_argument, NULL, OPT_CTV},
    {"fa", required_argument, NULL, OPT_FA},           {"flash-attn", required_argument, NULL, OPT_FA},
    {"b", required_argument, NULL, OPT_B},             {"batch-size", required_argument, NULL, OPT_B},
    {"ub", required_argument, NULL, OPT_UB},           {"ubatch-size", required_argument, NULL, OPT_UB},
    {"swa-full", no_argument, NULL, OPT_SWA_FULL},     {"kv-unified", no_argument, NULL, OPT_KV_UNIFIED},
    {"kvu", no_argument, NULL, OPT_KV_UNIFIED},        {"nkvo", no_argument, NULL, OPT_NKVO},
    {"no-kv-offload", no_argument, NULL, OPT_NKVO},    {"embedding", no_argument, NULL, OPT_EMBD},
    {"embeddings", no_argument, NULL, OPT_EMBD},       {"no-op-offload", no_argument, NULL, OPT_NO_OP_OFFLOAD},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"mem", required_argument, NULL, OPT_MEM},         {"max-ctx", no_argument, NULL, OPT_MAX_CTX},
    {"json", no_argument, NULL, OPT_JSON},             {"planner", required_argument, NULL, OPT_PLANNER},
    {"page", required_argument, NULL, OPT_PAGE},       {"help", no_argument, NULL, 'h'},
};

/* Everything the command line says, beside the placement flags. */
typedef struct fit_args {
    ggufmap_fit_opts fit;
    ggufmap_plan_opts plan;
    uint64_t mem;
    bool page_given, max_ctx, json;
} fit_args;

static int parse_count(const char *opt, const char *arg, uint32_t min, uint32_t *out) {
    char *end;
    unsigned long v = strtoul(arg, &end, 10);
    if (end == arg || *end || arg[0] == '-' || v < min || v > 0xFFFFFFFFul)
        return usage_error("fit", "%s %s: expected a count >= %u", opt, arg, min);
    *out = (uint32_t)v;
    return EXIT_OK;
}

/* -ctk / -ctv: the cache types llama.cpp's CLI accepts (common/arg.cpp kv_cache_types) */
static int parse_cache_type(const char *opt, const char *arg, int32_t *out) {
    static const char *const allowed[] = { "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1" };
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(arg, allowed[i]) == 0) {
            *out = ggufmap_type_from_name(arg);
            return EXIT_OK;
        }
    return usage_error("fit", "%s %s: expected f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0 or q5_1", opt, arg);
}

static int parse_size_arg(const char *opt, const char *arg, uint64_t *out) {
    if (ggufmap_parse_size(arg, out) || *out == 0) return usage_error("fit", "%s %s: expected a size such as 96G", opt, arg);
    return EXIT_OK;
}

static int apply_option(fit_args *f, int c, const char *arg) {
    ggufmap_fit_opts *o = &f->fit;
    switch (c) {
    case OPT_CTX: return parse_count("-c", arg, 0, &o->n_ctx);
    case OPT_NP: return parse_count("-np", arg, 1, &o->n_seq_max);
    case OPT_B: return parse_count("-b", arg, 1, &o->n_batch);
    case OPT_UB: return parse_count("-ub", arg, 1, &o->n_ubatch);
    case OPT_CTK: return parse_cache_type("-ctk", arg, &o->type_k);
    case OPT_CTV: return parse_cache_type("-ctv", arg, &o->type_v);
    case OPT_FA:
        if (strcmp(arg, "on") == 0) o->flash_attn = GGUFMAP_FA_ON;
        else if (strcmp(arg, "off") == 0) o->flash_attn = GGUFMAP_FA_OFF;
        else if (strcmp(arg, "auto") == 0) o->flash_attn = GGUFMAP_FA_AUTO;
        else return usage_error("fit", "-fa %s: expected on, off or auto", arg);
        return EXIT_OK;
    case OPT_SWA_FULL: o->swa_full = true; return EXIT_OK;
    case OPT_KV_UNIFIED: o->kv_unified = true; return EXIT_OK;
    case OPT_NKVO: o->no_kv_offload = true; return EXIT_OK;
    case OPT_EMBD: o->embeddings = true; return EXIT_OK;
    case OPT_NO_OP_OFFLOAD: o->no_op_offload = true; return EXIT_OK;
    case OPT_LIMIT: return parse_size_arg("--limit", arg, &o->limit);
    case OPT_MEM: return parse_size_arg("--mem", arg, &f->mem);
    case OPT_MAX_CTX: f->max_ctx = true; return EXIT_OK;
    case OPT_JSON: f->json = true; return EXIT_OK;
    case OPT_PLANNER:
        if (ggufmap_planner_parse(arg, &f->plan.planner) != GGUFMAP_OK)
            return usage_error("fit", "--planner %s: expected span, coalesce[:GAP], runs[:GAP[:MAX]] or tight[:COST[:MAX]]", arg);
        return EXIT_OK;
    case OPT_PAGE:
        f->page_given = true;
        return parse_size_arg("--page", arg, &f->plan.page);
    default: return usage_error("fit", "unknown option");
    }
}

/* --mem and --limit, once the device is known. */
static int settle_limit(fit_args *f, ggufmap_device device) {
    if (f->mem && f->fit.limit) return usage_error("fit", "give --limit or --mem, not both");
    if (!f->mem) return EXIT_OK;
    if (device == GGUFMAP_DEVICE_CUDA)
        return usage_error("fit", "--mem describes a Mac's or a CPU machine's RAM; give a CUDA GPU's memory with --limit");
    f->fit.limit = device == GGUFMAP_DEVICE_METAL ? ggufmap_metal_default_limit(f->mem) : f->mem;
    return EXIT_OK;
}

static int parse_args(int argc, char **argv, placement_args *a, model_arg *ma, fit_args *f) {
    struct option with_model[80], longopts[112];
    int n_with_model = model_arg_longopts(with_model, 80, own_options, sizeof own_options / sizeof own_options[0]);
    if (n_with_model < 0 || placement_args_longopts(longopts, 112, with_model, (size_t)n_with_model))
        return EXIT_USAGE; /* table too small */
    ggufmap_fit_opts_init(&f->fit);
    ggufmap_plan_opts_init(&f->plan);
    ggufmap_planner_parse("tight", &f->plan.planner);
    optind = 1;
    opterr = 0;
    int c, rc = EXIT_OK;
    while (rc == EXIT_OK && (c = getopt_long_only(argc, argv, "h", longopts, NULL)) != -1) {
        bool handled;
        rc = placement_args_apply(a, c, optarg, "fit", &handled);
        if (!handled && rc == EXIT_OK) rc = model_arg_apply(ma, c, optarg, &handled);
        if (handled) continue;
        if (c == 'h') {
            help(stdout);
            return -1;
        }
        if (c == '?' || c == ':') return usage_error("fit", "unknown or incomplete option '%s'", argv[optind - 1]);
        rc = apply_option(f, c, optarg);
    }
    if (rc == EXIT_OK) rc = model_arg_take(ma, argc, argv, optind);
    if (rc != EXIT_OK) return rc;
    placement_args_finish(a);
    /* --mtp is a placement flag (the MTP head's second load); fit's share of it is the head's context */
    f->fit.mtp = a->opts.load_mtp;
    a->opts.load_mtp = false;
    if (a->opts.device == GGUFMAP_DEVICE_METAL && !f->page_given) f->plan.page = 16384;
    if (f->max_ctx && !f->fit.limit && !f->mem) return usage_error("fit", "--max-ctx needs --limit or --mem");
    return settle_limit(f, a->opts.device);
}

/* The fit, the search and the suggestions, printed; returns the exit status. */
static int run_fit(const ggufmap_model *m, const placement_args *a, const fit_args *f) {
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_fit *fit = NULL;
    ggufmap_error err;
    ggufmap_fit_suggestion sugg[8];
    ggufmap_fit_report_opts ro = { .json = f->json, .suggestions = sugg };
    int rc = EXIT_OK, st = ggufmap_place(m, &a->opts, &pl, &err);
    if (st == GGUFMAP_OK) st = ggufmap_plan_build(pl, &f->plan, &plan, &err);
    if (st == GGUFMAP_OK) st = ggufmap_fit_build(plan, &f->fit, &fit, &err);
    if (st == GGUFMAP_OK && f->max_ctx) {
        st = ggufmap_fit_max_ctx(plan, &f->fit, false, &ro.max_ctx, &err);
        if (st == GGUFMAP_OK) st = ggufmap_fit_max_ctx(plan, &f->fit, true, &ro.max_ctx_planned, &err);
        ro.searched = true;
    }
    if (st == GGUFMAP_OK && !ggufmap_fit_fits(fit, false))
        st = ggufmap_fit_suggest(m, &a->opts, &f->plan, &f->fit, sugg, 8, &ro.n_suggestions, &err);
    if (st != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap fit: %s\n", err.message);
        rc = st == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT;
    } else {
        if (ggufmap_placement_warning(pl)[0] && !f->json)
            fprintf(stderr, "ggufmap fit: warning: %s\n", ggufmap_placement_warning(pl));
        ggufmap_fit_report(stdout, fit, &ro);
        rc = ggufmap_fit_fits(fit, false) ? EXIT_OK : EXIT_DOES_NOT_FIT;
        if (fflush(stdout) != 0 || ferror(stdout)) {
            perror("ggufmap fit: stdout");
            rc = EXIT_BAD_INPUT;
        }
    }
    ggufmap_fit_free(fit);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    return rc;
}

int cmd_fit(int argc, char **argv) {
    static placement_args a;
    fit_args f;
    model_arg ma;
    model_arg_init(&ma, "fit");
    if (placement_args_init(&a)) return usage_error("fit", "out of memory");
    int rc = parse_args(argc, argv, &a, &ma, &f);
    ggufmap_model *m = NULL;
    if (rc == EXIT_OK && (rc = model_arg_open(&ma, 0, &m)) == EXIT_OK) rc = run_fit(m, &a, &f);
    ggufmap_model_close(m);
    model_arg_free(&ma);
    placement_args_free(&a);
    return rc < 0 ? EXIT_OK : rc;
}

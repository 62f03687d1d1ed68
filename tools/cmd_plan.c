/*
 * cmd_plan.c - `ggufmap plan MODEL [placement flags]`: what llama.cpp will
 * map for a placement, what is foreign inside each span, and the planner's
 * tighter ranges.  The placement flags spell llama.cpp's own options.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "util.h"

#define MAX_OVERRIDES 4096

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap plan MODEL [placement flags] [--planner P] [--limit SIZE]\n"
            "                    [--json | --format text|json|buffers] [--svg FILE]\n"
            "\n"
            "Predicts, from the headers alone, every weight buffer llama.cpp v0.5.0\n"
            "creates for MODEL (any shard of a split model) under the placement flags,\n"
            "to the byte: first the lines llama.cpp would print, then for each buffer\n"
            "its own bytes, its span, the foreign tensors inside it and the planner's\n"
            "ranges, the totals, and a picture of every shard.\n"
            "\n"
            "placement (llama.cpp's options):\n"
            "  --device cpu|metal|cuda   the GPU (default cpu: none); metal maps host\n"
            "                            pointers (MTL0_Mapped), cuda copies (CUDA0)\n"
            "  -ngl, --n-gpu-layers N|all  layers on the GPU; the output layer goes first,\n"
            "                            the input layer never (default all with a GPU)\n"
            "  -ot, --override-tensor REGEX=BUFT[,...]  repeatable; first match wins;\n"
            "                            BUFT: CPU or the GPU's (MTL0, CUDA0)\n"
            "  -cmoe, --cpu-moe          all expert tensors to the CPU\n"
            "  -ncmoe, --n-cpu-moe N     the expert tensors of layers 0..N-1 to the CPU\n"
            "  -nr, --no-repack          no CPU_REPACK buffer\n"
            "  --cpu x86|x86-avx2|arm64|generic  CPU_REPACK rules (default: arm64 with\n"
            "                            --device metal, else this machine's)\n"
            "  -lzm, --lazy-mode on|off|auto  lazily read tables (default auto: > 4 GiB)\n"
            "  --no-mmap                 load mode none: nothing mapped but lazy tables\n"
            "  --no-host                 no CUDA_Host buffer type\n"
            "\n"
            "planning and output:\n"
            "  --planner P     span | coalesce[:GAP] | runs[:GAP[:MAX]] | tight[:COST[:MAX]]\n"
            "                  (default tight: fewest bytes, one range per run, <= 64)\n"
            "  --page SIZE     count ranges page-aligned (default 16K with metal, else 1)\n"
            "  --max-buffer SIZE  Metal's maxBufferLength: longer ranges become views\n"
            "  --limit SIZE    a GPU working-set limit (e.g. 96G): a verdict for llama.cpp\n"
            "                  and for the tight loader\n"
            "  --json          the ggufmap.plan/1 document (README)\n"
            "  --format buffers  one line per buffer, as tests/oracle's driver prints them\n"
            "  --svg FILE      the picture as SVG (FILE must not exist)\n"
            "  --color auto|always|never  colours in the picture (default auto: on a TTY)\n"
            "  --width N       picture width in cells (default 96)\n"
            "  --no-picture    leave the picture out of the text\n"
            "  -h, --help      this text\n"
            "\n"
            "exit status: 0 done, 1 usage error, 2 the model cannot be read, llama.cpp\n"
            "would abort loading it this way (the report is still printed), or the SVG\n"
            "cannot be written\n");
}

typedef struct plan_args {
    ggufmap_placement_opts placement;
    ggufmap_override overrides[MAX_OVERRIDES];
    char *pool; /* override strings */
    size_t pool_used, pool_cap;
    bool cpu_given, page_given, ngl_given;
} plan_args;

static char *keep(plan_args *a, const char *s, size_t n) {
    if (a->pool_used + n + 1 > a->pool_cap) return NULL;
    char *p = a->pool + a->pool_used;
    memcpy(p, s, n);
    p[n] = '\0';
    a->pool_used += n + 1;
    return p;
}

static int add_override(plan_args *a, const char *pattern, size_t plen, const char *buft, size_t blen) {
    if (a->placement.n_overrides >= MAX_OVERRIDES) return usage_error("plan", "more than %d overrides", MAX_OVERRIDES);
    ggufmap_override *o = &a->overrides[a->placement.n_overrides];
    o->pattern = keep(a, pattern, plen);
    o->buft = keep(a, buft, blen);
    if (!o->pattern || !o->buft) return usage_error("plan", "overrides too long");
    a->placement.n_overrides++;
    return 0;
}

/* -ot "a=CPU,b=MTL0": a comma list, each entry split at its first '=' as
 * llama.cpp's parse_tensor_buffer_overrides does. */
static int parse_ot(plan_args *a, const char *arg) {
    const char *s = arg;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        const char *eq = memchr(s, '=', n);
        if (!eq || eq == s || eq == s + n - 1)
            return usage_error("plan", "override '%.*s' is not REGEX=BUFT", (int)n, s);
        int rc = add_override(a, s, (size_t)(eq - s), eq + 1, n - (size_t)(eq - s) - 1);
        if (rc) return rc;
        s += n + (comma ? 1 : 0);
    }
    return 0;
}

static int add_cpu_moe(plan_args *a, int n_layers) {
    size_t cap = n_layers < 0 ? 256 : (size_t)n_layers * 64 + 64;
    char *buf = malloc(cap);
    int n = buf ? ggufmap_cpu_moe_patterns(n_layers, buf, cap) : -1;
    int rc = n < 0 ? usage_error("plan", "--n-cpu-moe %d: too many layers", n_layers) : 0;
    const char *p = buf;
    for (int i = 0; i < n && !rc; i++, p += strlen(p) + 1) rc = add_override(a, p, strlen(p), "CPU", 3);
    free(buf);
    return rc;
}

typedef struct svg_job {
    const ggufmap_plan *plan;
    const ggufmap_report_opts *opts;
} svg_job;

static void emit_svg(FILE *f, void *ctx) {
    svg_job *job = ctx;
    ggufmap_report_svg(f, job->plan, job->opts);
}

int cmd_plan(int argc, char **argv) {
    static const struct option longopts[] = {
        {"device", required_argument, NULL, 'D'}, {"ngl", required_argument, NULL, 'g'},
        {"n-gpu-layers", required_argument, NULL, 'g'}, {"ot", required_argument, NULL, 'o'},
        {"override-tensor", required_argument, NULL, 'o'}, {"cmoe", no_argument, NULL, 'm'},
        {"cpu-moe", no_argument, NULL, 'm'}, {"ncmoe", required_argument, NULL, 'M'},
        {"n-cpu-moe", required_argument, NULL, 'M'}, {"nr", no_argument, NULL, 'r'},
        {"no-repack", no_argument, NULL, 'r'}, {"cpu", required_argument, NULL, 'c'},
        {"lzm", required_argument, NULL, 'z'}, {"lazy-mode", required_argument, NULL, 'z'},
        {"no-mmap", no_argument, NULL, 'N'}, {"no-host", no_argument, NULL, 'H'},
        {"planner", required_argument, NULL, 'p'}, {"page", required_argument, NULL, 'P'},
        {"max-buffer", required_argument, NULL, 'B'}, {"limit", required_argument, NULL, 'L'},
        {"json", no_argument, NULL, 'j'}, {"format", required_argument, NULL, 'f'},
        {"svg", required_argument, NULL, 's'}, {"color", required_argument, NULL, 'C'},
        {"colour", required_argument, NULL, 'C'}, {"width", required_argument, NULL, 'w'},
        {"no-picture", no_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    static plan_args a;
    memset(&a, 0, sizeof a);
    ggufmap_placement_opts_init(&a.placement);
    a.placement.overrides = a.overrides;
    a.pool_cap = 1 << 20;
    a.pool = malloc(a.pool_cap);
    ggufmap_plan_opts popts;
    ggufmap_plan_opts_init(&popts);
    ggufmap_planner_parse("tight", &popts.planner);
    ggufmap_report_opts ropts;
    ggufmap_report_opts_init(&ropts);
    const char *svg_path = NULL, *color = "auto";
    int c, rc = EXIT_OK;
    uint64_t v;
    optind = 1;
    opterr = 0;
    if (!a.pool) return usage_error("plan", "out of memory");
    while (rc == EXIT_OK && (c = getopt_long_only(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'D':
            if (strcmp(optarg, "cpu") == 0) a.placement.device = GGUFMAP_DEVICE_CPU;
            else if (strcmp(optarg, "metal") == 0) a.placement.device = GGUFMAP_DEVICE_METAL;
            else if (strcmp(optarg, "cuda") == 0) a.placement.device = GGUFMAP_DEVICE_CUDA;
            else rc = usage_error("plan", "--device %s: expected cpu, metal or cuda", optarg);
            break;
        case 'g': {
            char *end;
            a.ngl_given = true;
            if (strcmp(optarg, "all") == 0) { a.placement.n_gpu_layers = -1; break; }
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end || n > 100000) rc = usage_error("plan", "-ngl %s: expected a number or all", optarg);
            else a.placement.n_gpu_layers = (int)(n < 0 ? -1 : n);
        } break;
        case 'o': rc = parse_ot(&a, optarg); break;
        case 'm': rc = add_cpu_moe(&a, -1); break;
        case 'M': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end || n < 0 || n > 100000) rc = usage_error("plan", "--n-cpu-moe %s: expected a count", optarg);
            else rc = add_cpu_moe(&a, (int)n);
        } break;
        case 'r': a.placement.no_repack = true; break;
        case 'c':
            a.cpu_given = true;
            if (strcmp(optarg, "x86") == 0) a.placement.cpu = GGUFMAP_CPU_X86;
            else if (strcmp(optarg, "x86-avx2") == 0) a.placement.cpu = GGUFMAP_CPU_X86_AVX2;
            else if (strcmp(optarg, "arm64") == 0) a.placement.cpu = GGUFMAP_CPU_ARM64;
            else if (strcmp(optarg, "generic") == 0) a.placement.cpu = GGUFMAP_CPU_GENERIC;
            else if (strcmp(optarg, "host") == 0) a.placement.cpu = GGUFMAP_CPU_HOST;
            else rc = usage_error("plan", "--cpu %s: expected x86, x86-avx2, arm64, generic or host", optarg);
            break;
        case 'z':
            if (strcmp(optarg, "on") == 0) a.placement.lazy = GGUFMAP_LAZY_ON;
            else if (strcmp(optarg, "off") == 0) a.placement.lazy = GGUFMAP_LAZY_OFF;
            else if (strcmp(optarg, "auto") == 0) a.placement.lazy = GGUFMAP_LAZY_AUTO;
            else rc = usage_error("plan", "--lazy-mode %s: expected on, off or auto", optarg);
            break;
        case 'N': a.placement.no_mmap = true; break;
        case 'H': a.placement.no_host = true; break;
        case 'p':
            if (ggufmap_planner_parse(optarg, &popts.planner) != GGUFMAP_OK)
                rc = usage_error("plan", "--planner %s: expected span, coalesce[:GAP], runs[:GAP[:MAX]] or tight[:COST[:MAX]]", optarg);
            break;
        case 'P':
            a.page_given = true;
            if (ggufmap_parse_size(optarg, &v) || v == 0) rc = usage_error("plan", "--page %s: expected a size", optarg);
            else popts.page = v;
            break;
        case 'B':
            if (ggufmap_parse_size(optarg, &v)) rc = usage_error("plan", "--max-buffer %s: expected a size", optarg);
            else popts.max_buffer = v;
            break;
        case 'L':
            if (ggufmap_parse_size(optarg, &v) || v == 0) rc = usage_error("plan", "--limit %s: expected a size such as 96G", optarg);
            else ropts.limit = v;
            break;
        case 'j': ropts.flags |= GGUFMAP_REPORT_JSON; break;
        case 'f':
            if (strcmp(optarg, "json") == 0) ropts.flags |= GGUFMAP_REPORT_JSON;
            else if (strcmp(optarg, "buffers") == 0) ropts.flags |= GGUFMAP_REPORT_BUFFER_LINES;
            else if (strcmp(optarg, "text") != 0) rc = usage_error("plan", "--format %s: expected text, json or buffers", optarg);
            break;
        case 's': svg_path = optarg; break;
        case 'x': ropts.flags |= GGUFMAP_REPORT_NO_PICTURE; break;
        case 'C': color = optarg; break;
        case 'w': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end || n < 8 || n > 1000) rc = usage_error("plan", "--width %s: expected 8..1000", optarg);
            else ropts.width = (uint32_t)n;
        } break;
        case 'h': help(stdout); free(a.pool); return EXIT_OK;
        default: rc = usage_error("plan", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc == EXIT_OK && optind != argc - 1)
        rc = usage_error("plan", optind == argc ? "no MODEL given" : "one MODEL expected, got %d", argc - optind);
    if (rc == EXIT_OK && strcmp(color, "always") != 0 && strcmp(color, "never") != 0 && strcmp(color, "auto") != 0)
        rc = usage_error("plan", "--color %s: expected auto, always or never", color);
    if (rc != EXIT_OK) {
        free(a.pool);
        return rc;
    }
    if (strcmp(color, "always") == 0 || (strcmp(color, "auto") == 0 && isatty(STDOUT_FILENO)))
        ropts.flags |= GGUFMAP_REPORT_COLOR;
    /* Metal means Apple Silicon: its repack rules and its 16 KiB pages. */
    if (a.placement.device == GGUFMAP_DEVICE_METAL) {
        if (!a.cpu_given) a.placement.cpu = GGUFMAP_CPU_ARM64;
        if (!a.page_given) popts.page = 16384;
    }

    ggufmap_model *m = NULL;
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_error err;
    if (ggufmap_model_open(argv[optind], 0, &m, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap plan: %s\n", err.message);
        rc = EXIT_BAD_INPUT;
        goto done;
    }
    int st = ggufmap_place(m, &a.placement, &pl, &err);
    if (st != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap plan: %s\n", err.message);
        rc = st == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT;
        goto done;
    }
    if (ggufmap_plan_build(pl, &popts, &plan, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap plan: %s\n", err.message);
        rc = EXIT_BAD_INPUT;
        goto done;
    }
    if (ggufmap_placement_warning(pl)[0] && !(ropts.flags & (GGUFMAP_REPORT_JSON | GGUFMAP_REPORT_BUFFER_LINES)))
        fprintf(stderr, "ggufmap plan: warning: %s\n", ggufmap_placement_warning(pl));
    ggufmap_report_plan(stdout, plan, &ropts);
    if (svg_path) {
        svg_job job = {plan, &ropts};
        char msg[1024];
        if (write_output(svg_path, emit_svg, &job, msg, sizeof msg) != 0) {
            fprintf(stderr, "ggufmap plan: %s\n", msg);
            rc = EXIT_BAD_INPUT;
        }
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("ggufmap plan: stdout");
        rc = EXIT_BAD_INPUT;
    }
    if (ggufmap_plan_failure(plan)) {
        fprintf(stderr, "ggufmap plan: %s\n", ggufmap_plan_failure(plan));
        rc = EXIT_BAD_INPUT;
    }
done:
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    ggufmap_model_close(m);
    free(a.pool);
    return rc;
}

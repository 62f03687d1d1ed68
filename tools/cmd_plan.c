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
#include "model_arg.h"
#include "placement_args.h"
#include "util.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap plan MODEL [placement flags] [--planner P] [--limit SIZE]\n"
            "                    [--json | --format text|json|buffers] [--svg FILE] [remote options]\n"
            "\n"
            "Predicts, from the headers alone, every weight buffer llama.cpp v0.5.0\n"
            "creates for MODEL (any shard of a split model) under the placement flags,\n"
            "to the byte: first the lines llama.cpp would print, then for each buffer\n"
            "its own bytes, its span, the foreign tensors inside it and the planner's\n"
            "ranges, the totals, and a picture of every shard.\n"
            "\n");
    placement_args_help(out);
    fprintf(out,
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
            "\n");
    model_arg_help(out);
    fprintf(out,
            "\n"
            "With --mtp, two loads: the model's (load_mtp off), then the one llama.cpp\n"
            "makes for an MTP draft head (load_mtp on), each with its buffers and plan,\n"
            "and what both map together.\n"
            "\n"
            "exit status: 0 done, 1 usage error, 2 the model cannot be read or llama.cpp\n"
            "refuses it (an architecture it does not load, a tensor missing or unused),\n"
            "llama.cpp would abort loading it this way (the report is still printed), or\n"
            "the SVG cannot be written\n");
}

typedef struct svg_job {
    const ggufmap_plan *plan;
    const ggufmap_report_opts *opts;
} svg_job;

static void emit_svg(FILE *f, void *ctx) {
    svg_job *job = ctx;
    ggufmap_report_svg(f, job->plan, job->opts);
}

/* One load: its placement and plan.  Returns EXIT_OK, EXIT_USAGE (a bad
 * -ot) or EXIT_BAD_INPUT, after printing the error. */
static int place_and_plan(const ggufmap_model *m, const ggufmap_placement_opts *o, const ggufmap_plan_opts *po,
                          ggufmap_placement **pl, ggufmap_plan **plan) {
    ggufmap_error err;
    int st = ggufmap_place(m, o, pl, &err);
    if (st != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap plan: %s\n", err.message);
        return st == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT;
    }
    if (ggufmap_plan_build(*pl, po, plan, &err) != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap plan: %s\n", err.message);
        return EXIT_BAD_INPUT;
    }
    return EXIT_OK;
}

int cmd_plan(int argc, char **argv) {
    static const struct option own[] = {
        {"planner", required_argument, NULL, 'p'}, {"page", required_argument, NULL, 'P'},
        {"max-buffer", required_argument, NULL, 'B'}, {"limit", required_argument, NULL, 'L'},
        {"json", no_argument, NULL, 'j'}, {"format", required_argument, NULL, 'f'},
        {"svg", required_argument, NULL, 's'}, {"color", required_argument, NULL, 'C'},
        {"colour", required_argument, NULL, 'C'}, {"width", required_argument, NULL, 'w'},
        {"no-picture", no_argument, NULL, 'x'}, {"help", no_argument, NULL, 'h'},
    };
    struct option with_model[48], longopts[80];
    int n_with_model = model_arg_longopts(with_model, 48, own, sizeof own / sizeof own[0]);
    if (n_with_model < 0 || placement_args_longopts(longopts, 80, with_model, (size_t)n_with_model))
        return EXIT_USAGE; /* table too small */
    static placement_args a;
    model_arg ma;
    model_arg_init(&ma, "plan");
    bool page_given = false;
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
    if (placement_args_init(&a)) return usage_error("plan", "out of memory");
    while (rc == EXIT_OK && (c = getopt_long_only(argc, argv, "h", longopts, NULL)) != -1) {
        bool handled;
        rc = placement_args_apply(&a, c, optarg, "plan", &handled);
        if (!handled && rc == EXIT_OK) rc = model_arg_apply(&ma, c, optarg, &handled);
        if (handled) continue;
        switch (c) {
        case 'p':
            if (ggufmap_planner_parse(optarg, &popts.planner) != GGUFMAP_OK)
                rc = usage_error("plan", "--planner %s: expected span, coalesce[:GAP], runs[:GAP[:MAX]] or tight[:COST[:MAX]]", optarg);
            break;
        case 'P':
            page_given = true;
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
        case 'h': help(stdout); placement_args_free(&a); return EXIT_OK;
        default: rc = usage_error("plan", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc == EXIT_OK) rc = model_arg_take(&ma, argc, argv, optind);
    if (rc == EXIT_OK && strcmp(color, "always") != 0 && strcmp(color, "never") != 0 && strcmp(color, "auto") != 0)
        rc = usage_error("plan", "--color %s: expected auto, always or never", color);
    if (rc != EXIT_OK) {
        placement_args_free(&a);
        return rc;
    }
    if (strcmp(color, "always") == 0 || (strcmp(color, "auto") == 0 && isatty(STDOUT_FILENO)))
        ropts.flags |= GGUFMAP_REPORT_COLOR;
    /* Metal means Apple Silicon: its repack rules and its 16 KiB pages. */
    placement_args_finish(&a);
    if (a.opts.device == GGUFMAP_DEVICE_METAL && !page_given) popts.page = 16384;

    ggufmap_model *m = NULL;
    ggufmap_placement *pl = NULL, *pl_mtp = NULL;
    ggufmap_plan *plan = NULL, *plan_mtp = NULL;
    if ((rc = model_arg_open(&ma, 0, &m)) != EXIT_OK) goto done;
    /* --mtp: the model's own load, then the MTP head's (load_mtp) beside it. */
    bool mtp = a.opts.load_mtp;
    a.opts.load_mtp = false;
    if ((rc = place_and_plan(m, &a.opts, &popts, &pl, &plan)) != EXIT_OK) goto done;
    a.opts.load_mtp = true;
    if (mtp && (rc = place_and_plan(m, &a.opts, &popts, &pl_mtp, &plan_mtp)) != EXIT_OK) goto done;
    if (ggufmap_placement_warning(pl)[0] && !(ropts.flags & (GGUFMAP_REPORT_JSON | GGUFMAP_REPORT_BUFFER_LINES)))
        fprintf(stderr, "ggufmap plan: warning: %s\n", ggufmap_placement_warning(pl));
    ggufmap_report_plan_mtp(stdout, plan, plan_mtp, &ropts);
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
    for (int k = 0; k < 2; k++) {
        const ggufmap_plan *pk = k ? plan_mtp : plan;
        if (pk && ggufmap_plan_failure(pk)) {
            fprintf(stderr, "ggufmap plan: %s%s\n", k ? "the MTP load: " : "", ggufmap_plan_failure(pk));
            rc = EXIT_BAD_INPUT;
        }
    }
done:
    ggufmap_plan_free(plan_mtp);
    ggufmap_placement_free(pl_mtp);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    ggufmap_model_close(m);
    model_arg_free(&ma);
    placement_args_free(&a);
    return rc;
}

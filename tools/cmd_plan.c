/*
 * cmd_plan.c - `ggufmap plan MODEL [placement flags]`: what llama.cpp will
 * map for a placement, what is foreign inside each span, the planner's
 * tighter ranges, a verdict under a limit and the next steps.  The
 * placement flags spell llama.cpp's own options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "model_arg.h"
#include "placement_args.h"
#include "plan_advice.h"
#include "util.h"

enum { OPT_LIMIT = 0x100, OPT_MEM, OPT_FORMAT, OPT_SVG, OPT_COLOR, OPT_WIDTH, OPT_NO_PICTURE, OPT_NO_ADVICE };

static const cli_option planning_options[] = {
    PLANNER_OPTION,
    PAGE_OPTION("16K with metal, Apple Silicon's page; else 1B, exact bytes"),
    MAX_BUFFER_OPTION,
};

static const cli_option output_options[] = {
    {OPT_LIMIT, "--limit", "SIZE|D=SIZE[,...]", NULL,
     "a GPU working-set limit (96G: what a 128 GB Mac gives the GPU by default; each GPU's, or per device of -dev: "
     "CUDA0=24G,CUDA1=12G, which without -ts also split the layers, as llama.cpp splits by free memory): a "
     "verdict for llama.cpp and for "
     "the tight loader; exit status 3 when llama.cpp exceeds it"},
    {OPT_MEM, "--mem", "SIZE", NULL,
     "the machine's RAM: the weights it holds (with metal's unified memory all of them, counted once) must fit "
     "it too, a second verdict (exit 3 if either fails); with metal it also sets --limit to macOS's default "
     "GPU working set (2/3 of RAM up to 32G, 3/4 above) unless --limit is given"},
    {OPT_JSON, "--json", NULL, NULL, "the ggufmap.plan/1 document (docs/json.md)"},
    {OPT_FORMAT, "--format", "text|json|buffers", "text json buffers",
     "json is --json; buffers prints one line per buffer, as tests/oracle's driver prints them"},
    {OPT_SVG, "--svg", "FILE", "@file", "also draw the plan as an SVG figure into FILE (which must not exist); - is "
                                      "standard output, instead of the text"},
    {OPT_COLOR, "--color, --colour", "auto|always|never", "auto always never",
     "colours in the picture (default auto: on a terminal, unless NO_COLOR is set)"},
    {OPT_WIDTH, "--width", "N", NULL, "picture width in cells (default 96)"},
    {OPT_NO_PICTURE, "--no-picture", NULL, NULL, "leave the picture out of the text"},
    {OPT_NO_ADVICE, "--no-advice", NULL, NULL,
     "leave out the next steps (working them out runs a repack dry run: it reads the headers again and writes "
     "scratch copies of them under TMPDIR)"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing; the exit status says whether llama.cpp fits the --limit"},
};

static const cli_group planning_group = CLI_GROUP("planning", planning_options);
static const cli_group output_group = CLI_GROUP("output", output_options);
static const cli_group *const plan_groups[] = {&placement_group, &planning_group, &output_group, &model_arg_group};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct plan_args {
    placement_args placement;
    model_arg model;
    planning_args planning;
    cli_common common;
    ggufmap_report_opts report;
    const char *svg_path, *color, *limit_text, *mem_text, *format;
    device_limits limits; /* --limit */
    bool no_advice;
} plan_args;

static int apply(void *ctx, int code, const char *value) {
    plan_args *a = ctx;
    bool handled;
    int rc = placement_args_apply(&a->placement, code, value, "plan", &handled);
    if (!handled) rc = planning_args_apply(&a->planning, code, value, "plan", &handled);
    if (!handled) rc = model_arg_apply(&a->model, code, value, &handled);
    if (handled) return rc;
    cli_common_apply(&a->common, code, &handled);
    long n;
    switch (code) {
    case OPT_LIMIT:
        a->limit_text = value;
        return device_limits_parse(&a->limits, "plan", value);
    case OPT_MEM:
        a->mem_text = value;
        return parse_size_option("plan", "--mem", value, 0, &a->report.mem);
    case OPT_FORMAT:
        if (strcmp(value, "text") && strcmp(value, "json") && strcmp(value, "buffers"))
            return cli_usage_error("plan", "--format %s: expected text, json or buffers", value);
        a->format = value;
        return EXIT_OK;
    case OPT_SVG: a->svg_path = value; return EXIT_OK;
    case OPT_COLOR:
        if (strcmp(value, "always") && strcmp(value, "never") && strcmp(value, "auto"))
            return cli_usage_error("plan", "--color %s: expected auto, always or never", value);
        a->color = value;
        return EXIT_OK;
    case OPT_WIDTH:
        if (parse_count(value, 1000, &n) || n < 8) return cli_usage_error("plan", "--width %s: expected 8..1000", value);
        a->report.width = (uint32_t)n;
        return EXIT_OK;
    case OPT_NO_PICTURE: a->report.flags |= GGUFMAP_REPORT_NO_PICTURE; return EXIT_OK;
    case OPT_NO_ADVICE: a->no_advice = true; return EXIT_OK;
    default: return EXIT_OK;
    }
}

/* Output choices that contradict each other are refused, not silently ranked. */
static int settle_output(plan_args *a) {
    bool json = a->common.json || (a->format && strcmp(a->format, "json") == 0);
    if (a->common.json && a->format && strcmp(a->format, "json") != 0)
        return cli_usage_error("plan", "--json and --format %s contradict each other", a->format);
    bool svg_stdout = a->svg_path && strcmp(a->svg_path, "-") == 0;
    if (svg_stdout && (json || a->format))
        return cli_usage_error("plan", "--svg - writes the figure to standard output; it cannot share it with %s",
                               json ? "--json" : "--format");
    if (json) a->report.flags |= GGUFMAP_REPORT_JSON;
    if (a->format && strcmp(a->format, "buffers") == 0) a->report.flags |= GGUFMAP_REPORT_BUFFER_LINES;
    if (cli_color(a->color, STDOUT_FILENO)) a->report.flags |= GGUFMAP_REPORT_COLOR;
    return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* The command                                                               */
/* ------------------------------------------------------------------------ */

typedef struct svg_job {
    const ggufmap_plan *plan;
    const ggufmap_report_opts *opts;
} svg_job;

static void emit_svg(FILE *f, void *ctx) {
    svg_job *job = ctx;
    ggufmap_report_svg(f, job->plan, job->opts);
}

/* The report, the figure and the verdict of a built plan (and of the MTP
 * head's load, mtp, with --mtp). */
static int report(plan_args *a, const char *model_path, const ggufmap_model *m, const ggufmap_plan *plan,
                  const ggufmap_plan *mtp, const ggufmap_plan_opts *popts) {
    bool svg_stdout = a->svg_path && strcmp(a->svg_path, "-") == 0;
    bool lines = (a->report.flags & GGUFMAP_REPORT_BUFFER_LINES) != 0;
    const char *warning = ggufmap_placement_warning(ggufmap_plan_placement(plan));
    if (warning[0] && !lines && !a->common.json && !a->common.quiet) cli_fail("plan", 0, warning);
    char ngl[256];
    if (!a->common.quiet && placement_args_ngl_without_device(&a->placement, ngl, sizeof ngl)) cli_fail("plan", 0, ngl);
    ggufmap_suggestion advice[PLAN_ADVICE_MAX];
    if (!lines && !a->common.quiet && !svg_stdout && !a->no_advice) {
        plan_advice_input in = {model_path, m, plan, &a->placement, &a->planning, popts, a->report.limit, a->limit_text,
                                a->report.mem, a->mem_text, a->report.gpu_limits};
        a->report.n_suggestions = plan_advice(&in, advice);
        a->report.suggestions = advice;
    }
    if (!a->common.quiet && !svg_stdout) ggufmap_report_plan_mtp(stdout, plan, mtp, &a->report);
    int rc = EXIT_OK;
    if (a->svg_path) {
        svg_job job = {plan, &a->report};
        char msg[1024];
        if (write_output(a->svg_path, emit_svg, &job, msg, sizeof msg) != 0) rc = cli_fail("plan", EXIT_BAD_INPUT, msg);
    }
    rc = cli_finish_stdout("plan", rc);
    if (ggufmap_plan_failure(plan)) return cli_fail("plan", EXIT_BAD_INPUT, ggufmap_plan_failure(plan));
    /* both loads are held at once (mtp) */
    uint64_t ram, ram_planned;
    ggufmap_plan_resident(plan, &ram, &ram_planned);
    const bool over = !ggufmap_plan_fits_limits(plan, mtp, a->report.limit, a->report.gpu_limits, false) ||
                      (a->report.mem && ram > a->report.mem);
    return rc == EXIT_OK && over ? EXIT_NO : rc;
}

/* Places and plans m under o; the message names what fails. */
static int place_and_plan(const cli_command *cmd, const ggufmap_model *m, const ggufmap_placement_opts *o,
                          const ggufmap_plan_opts *popts, ggufmap_placement **pl, ggufmap_plan **plan) {
    ggufmap_error err;
    int st = ggufmap_placement_build(m, o, pl, &err);
    if (st == GGUFMAP_OK && ggufmap_placement_refusal(*pl))
        return cli_fail(cmd->name, EXIT_BAD_INPUT, ggufmap_placement_refusal(*pl));
    if (st == GGUFMAP_OK) st = ggufmap_plan_build(*pl, popts, plan, &err);
    if (st == GGUFMAP_OK) return EXIT_OK;
    return cli_fail(cmd->name, st == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT, err.message);
}

static int run(const cli_command *cmd, int argc, char **argv) {
    plan_args *a = calloc(1, sizeof *a);
    if (!a || placement_args_init(&a->placement)) {
        free(a);
        return cli_usage_error(cmd->name, "out of memory");
    }
    a->common.progress = -1;
    a->color = "auto";
    ggufmap_report_opts_init(&a->report);
    model_arg_init(&a->model, cmd->name);
    int first, rc = cli_parse(cmd, argc, argv, apply, a, CLI_ANY_OPERANDS, &first);
    if (rc == EXIT_OK) rc = model_arg_take(&a->model, argc, argv, first);
    if (rc == EXIT_OK) rc = settle_output(a);
    ggufmap_model *m = NULL;
    ggufmap_placement *pl = NULL, *pl_mtp = NULL;
    ggufmap_plan *plan = NULL, *plan_mtp = NULL;
    ggufmap_plan_opts popts;
    ggufmap_regex_cache *searched = NULL; /* -ot answers, shared with the next steps' placements */
    if (rc != EXIT_OK) goto done;
    placement_args_finish(&a->placement);
    ggufmap_regex_cache_new(&searched); /* none when out of memory: the searches just run */
    a->placement.opts.regex_cache = searched;
    planning_args_finish(&a->planning, a->placement.opts.device, &popts);
    if ((rc = device_limits_check(&a->limits, "plan", &a->placement.opts)) != EXIT_OK) goto done;
    device_limits_split(&a->limits, &a->placement.opts);
    a->report.limit = a->limits.limit;
    memcpy(a->report.gpu_limits, a->limits.gpu, sizeof a->report.gpu_limits);
    if (a->report.mem && !device_limits_any(&a->limits) && ggufmap_device_unified(a->placement.opts.device))
        a->report.limit = ggufmap_metal_default_limit(a->report.mem); /* macOS's default working set */
    if ((rc = model_arg_open(&a->model, 0, &m)) != EXIT_OK) goto done;
    /* --mtp: the model's own load, then the MTP head's (load_mtp) beside it. */
    bool mtp = a->placement.opts.load_mtp;
    a->placement.opts.load_mtp = false;
    if ((rc = place_and_plan(cmd, m, &a->placement.opts, &popts, &pl, &plan)) != EXIT_OK) goto done;
    a->placement.opts.load_mtp = mtp;
    if (mtp && (rc = place_and_plan(cmd, m, &a->placement.opts, &popts, &pl_mtp, &plan_mtp)) != EXIT_OK) goto done;
    a->placement.opts.load_mtp = false; /* the next steps are worked out for the model's load */
    rc = report(a, a->model.model ? a->model.model : a->model.picked, m, plan, plan_mtp, &popts);
done:
    ggufmap_plan_free(plan_mtp);
    ggufmap_placement_free(pl_mtp);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    ggufmap_model_free(m);
    model_arg_free(&a->model);
    placement_args_free(&a->placement);
    ggufmap_regex_cache_free(searched);
    free(a);
    return cli_parse_status(cmd, rc);
}

const cli_command plan_command = {
    .name = "plan",
    .operands = "MODEL",
    .summary = "predict llama.cpp's buffers for a placement and plan tight mappings",
    .description =
        "Predicts, from the headers alone, every weight buffer llama.cpp v0.5.0 creates for MODEL (any shard of a "
        "split model) under the placement flags, to the byte: first the lines llama.cpp would print, then for each "
        "buffer its span, its own bytes, the foreign tensors inside it and the planner's ranges, the totals, the "
        "GPU working set (and the CPU side, which a Mac's unified memory holds too) with a verdict under --limit, "
        "the next steps with the numbers they would give (the repack command, the --n-cpu-moe or -ngl that fits), "
        "and a picture of every shard.\n\n"
        "With --mtp, two loads: the model's (load_mtp off), then the one llama.cpp makes for an MTP draft head "
        "(load_mtp on), each with its buffers and plan, then what the two map together; --limit then judges both "
        "together.  A MODEL on a server costs only the header bytes of each shard.\n\n"
        "Defaults follow the device (ggufmap_preset in the library): with --device metal the arm64 CPU_REPACK "
        "rules and 16 KiB pages; -ngl all with a GPU, as llama.cpp's default.",
    .groups = plan_groups,
    .n_groups = 4,
    .status_ok = "done; under --limit, llama.cpp's working set fits",
    .status_bad = "the model cannot be read, llama.cpp would abort loading it this way (the report is still "
                  "printed), or an output cannot be written",
    .status_no = "llama.cpp's working set exceeds --limit (the report says by how much and what would fit)",
    .run = run,
};

/*
 * cmd_load.c - `ggufmap load MODEL [placement flags] --backend B --planner P`:
 * maps the model as the loader library does (one backend buffer per planned
 * range), resolves every tensor, and prints what the kernel measured (locked,
 * pinned, resident and mapped bytes as the system reports them, through the
 * portability layer: VmLck, VmPin, VmRSS, VmSize on Linux; wired, resident
 * and virtual bytes on macOS; nothing under plain POSIX) beside the plan's
 * prediction, and the wall time.
 *
 * The placement flags spell llama.cpp's own options, as in `ggufmap plan`
 * (tools/placement_args.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggufmap/ggufmap.h"
#include "ggufmap/load.h"
#include "commands.h"
#include "internal.h" /* gm_now_ns, gm_page_size */
#include "json.h"     /* the library's JSON writer */
#include "os.h"       /* gm_os_memory_read */
#include "placement_args.h"
#include "util.h"

enum { OPT_BACKEND = 0x100, OPT_CPU_BACKEND, OPT_SHARD, OPT_TOUCH, OPT_KEEP };

static const cli_option load_options[] = {
    {OPT_BACKEND, "--backend", "B", "host wired cuda",
     "backend of the GPU's mapped buffers; with --device cpu, of every mapped buffer (default host).  host wraps the "
     "pointer; wired mlock()s each range (what a Metal residency set does); cuda cudaHostRegister()s it (libcudart "
     "loaded at run time)"},
    {OPT_CPU_BACKEND, "--cpu-backend", "B", "host wired cuda",
     "backend of the CPU's mapped buffers when there is a GPU (default host)"},
    PLANNER_OPTION,
    PAGE_OPTION("this system's page size"),
    {OPT_SHARD, "--shard", "N", NULL,
     "map only shard N (from 1, as the file names number them); tensors of other shards stay unresolved"},
    {OPT_TOUCH, "--touch", NULL, NULL, "read every page of every range once (resident bytes show)"},
    {OPT_KEEP, "--keep", NULL, NULL, "do not release the pages outside the ranges"},
    {OPT_JSON, "--json", NULL, NULL, "the ggufmap.load/1 document (docs/loader.md)"},
    {OPT_PROGRESS, "--progress", NULL, NULL, "a progress line on stderr while ranges are given to the backends, even "
                                           "when it is not a terminal"},
    {OPT_NO_PROGRESS, "--no-progress", NULL, NULL, "no progress line, even on a terminal"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing; the exit status says whether every tensor resolved"},
};
static const cli_group load_group = CLI_GROUP("loading", load_options);
static const cli_group *const load_groups[] = {&placement_group, &load_group};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct load_args {
    placement_args pa; /* the placement flags (tools/placement_args.h) */
    planning_args planning;
    ggufmap_plan_opts plan;
    cli_common common;
    const char *backend, *cpu_backend;
    int32_t shard;     /* 0-based; -1: every shard */
    bool touch, keep;
    uint64_t device_page; /* the page plan counts for the device (Metal: 16 KiB), 1: exact bytes */
} load_args;

static int parse_backend(const char *opt, const char *value, const char **out) {
    if (strcmp(value, "host") && strcmp(value, "wired") && strcmp(value, "cuda"))
        return cli_usage_error("load", "%s %s: expected host, wired or cuda", opt, value);
    *out = value;
    return EXIT_OK;
}

static int apply(void *ctx, int code, const char *value) {
    load_args *a = ctx;
    bool handled;
    long n;
    int rc = placement_args_apply(&a->pa, code, value, "load", &handled);
    if (!handled) rc = planning_args_apply(&a->planning, code, value, "load", &handled);
    if (handled) return rc;
    cli_common_apply(&a->common, code, &handled);
    switch (code) {
    case OPT_BACKEND: return parse_backend("--backend", value, &a->backend);
    case OPT_CPU_BACKEND: return parse_backend("--cpu-backend", value, &a->cpu_backend);
    case OPT_SHARD:
        if (parse_count(value, 99999, &n) || n < 1) return cli_usage_error("load", "--shard %s: expected 1, 2, ...", value);
        a->shard = (int32_t)n - 1;
        return EXIT_OK;
    case OPT_TOUCH: a->touch = true; return EXIT_OK;
    case OPT_KEEP: a->keep = true; return EXIT_OK;
    default: return EXIT_OK;
    }
}

/* The system's page unless --page; the planner as given (tight by default). */
static void settle_plan(load_args *a) {
    placement_args_finish(&a->pa);
    planning_args_finish(&a->planning, a->pa.opts.device, &a->plan);
    ggufmap_plan_opts device;
    ggufmap_preset(a->pa.opts.device, NULL, &device);
    a->device_page = device.page;
    /* load maps the files on this machine: its pages are this system's, whatever device is modelled */
    if (!a->planning.page_given) a->plan.page = gm_page_size();
}

/* ------------------------------------------------------------------------ */
/* The kernel's figures                                                      */
/* ------------------------------------------------------------------------ */

/* A figure the system does not report (gm_os_memory's known bits), and a
 * column a row has nothing for. */
#define NOT_KNOWN (UINT64_MAX - 1)
#define NOT_SHOWN UINT64_MAX

/* after - before of one gm_os_memory field, NOT_KNOWN unless both have it. */
static uint64_t grown(const gm_os_memory *before, const gm_os_memory *after, unsigned bit, uint64_t b, uint64_t a) {
    if (!(before->known & after->known & bit)) return NOT_KNOWN;
    return a > b ? a - b : 0;
}

/* llama.cpp's spans of the same buffers (gpu: the GPU's; else all), page-aligned. */
static uint64_t span_pages(const ggufmap_plan *plan, int gpu, int32_t shard, uint64_t page) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (!b->mapped || (shard >= 0 && b->shard != (uint32_t)shard)) continue;
        if (gpu >= 0 && ggufmap_placement_context(pl, b->context)->gpu != (gpu != 0)) continue;
        sum += gm_ceil_to(b->last, page) - gm_floor_to(b->first, page);
    }
    return sum;
}

static double ms(uint64_t ns) { return (double)ns / 1e6; }

/* ------------------------------------------------------------------------ */
/* One load: the session and everything the report shows                    */
/* ------------------------------------------------------------------------ */

typedef struct load_report {
    const char *path;
    const load_args *a;
    ggufmap_model *m;
    ggufmap_placement *pl;
    ggufmap_plan *plan;
    ggufmap_mapped *mapped;
    ggufmap_backend *gpu_be, *cpu_be;
    char planner[64];
    bool has_gpu;
    ggufmap_mapped_stats ms;
    int64_t n_resolved, n_in_ranges, n_failed;
    uint64_t predicted, span_pred, pinned, touched, pin_ns;
    uint64_t vmlck, vmpin, rss_grown, size_grown; /* NOT_KNOWN where the system does not say */
    gm_os_memory before, after;
    uint64_t t_map, t_resolve, t_touch;
} load_report;

static void report_free(load_report *r) {
    ggufmap_mapped_free(r->mapped);
    ggufmap_backend_free(r->cpu_be);
    ggufmap_backend_free(r->gpu_be);
    ggufmap_plan_free(r->plan);
    ggufmap_placement_free(r->pl);
    ggufmap_model_free(r->m);
}

/* ------------------------------------------------------------------------ */
/* The JSON document (ggufmap.load/1), through the library's JSON writer     */
/* ------------------------------------------------------------------------ */

/* A measured figure: null where the system does not report it. */
static void json_figure(json *j, uint64_t v) {
    if (v == NOT_KNOWN) json_null(j);
    else json_uint(j, v);
}

static void json_field_u(json *j, const char *key, uint64_t v) {
    json_key(j, key);
    json_figure(j, v);
}

static void json_ranges(json *j, const load_report *r) {
    json_key(j, "ranges");
    json_begin_array(j);
    for (uint32_t i = 0; i < ggufmap_mapped_n_ranges(r->mapped); i++) {
        const ggufmap_mapped_range *mr = ggufmap_mapped_range_at(r->mapped, i);
        json_begin_object(j);
        json_key(j, "buffer");
        json_string(j, ggufmap_plan_buffer(r->plan, mr->plan_buffer)->name);
        json_field_u(j, "shard", mr->shard);
        json_field_u(j, "first", mr->first);
        json_field_u(j, "last", mr->last);
        json_key(j, "backend");
        json_string(j, mr->backend->name);
        json_field_u(j, "ns", mr->ns);
        json_end_object(j);
    }
    json_end_array(j);
}

/* "key": { names[0]: values[0], ... } */
static void json_counts(json *j, const char *key, const char *const *names, const uint64_t *values, size_t n) {
    json_key(j, key);
    json_begin_object(j);
    for (size_t i = 0; i < n; i++) json_field_u(j, names[i], values[i]);
    json_end_object(j);
}
#define JSON_COUNTS(j, key, names, ...) \
    json_counts(j, key, names, (const uint64_t[]){__VA_ARGS__}, sizeof names / sizeof names[0])

/* A gm_os_memory field, or NOT_KNOWN. */
static uint64_t known(const gm_os_memory *m, unsigned bit, uint64_t v) { return m->known & bit ? v : NOT_KNOWN; }

static void json_figures(json *j, const load_report *r) {
    static const char *const tensors[] = {"resolved", "in_ranges", "failed"};
    JSON_COUNTS(j, "tensors", tensors, (uint64_t)r->n_resolved, (uint64_t)r->n_in_ranges, (uint64_t)r->n_failed);
    /* contexts read into buffers of their own (CPU_REPACK, --no-mmap, copies) */
    static const char *const allocated[] = {"buffers", "tensors", "bytes", "copied_bytes"};
    JSON_COUNTS(j, "allocated", allocated, r->ms.n_alloc_buffers, r->ms.n_copied, r->ms.alloc_bytes, r->ms.copied_bytes);
    static const char *const predicted[] = {"pinned_bytes", "llama_span_pinned_bytes", "planned_bytes", "planned_pages",
                                            "released_bytes"};
    JSON_COUNTS(j, "predicted", predicted, r->predicted, r->span_pred, r->ms.planned_bytes, r->ms.planned_pages,
                r->ms.released_bytes);
    static const char *const measured[] = {"vmlck_bytes",  "vmpin_bytes",   "backend_pinned_bytes",
                                           "vmrss_before", "vmrss_after",   "vmsize_before",
                                           "vmsize_after", "touched_bytes"};
    const gm_os_memory *b = &r->before, *a = &r->after;
    JSON_COUNTS(j, "measured", measured, r->vmlck, r->vmpin, r->pinned, known(b, GM_OS_MEM_RESIDENT, b->resident),
                known(a, GM_OS_MEM_RESIDENT, a->resident), known(b, GM_OS_MEM_VIRTUAL, b->virtual_bytes),
                known(a, GM_OS_MEM_VIRTUAL, a->virtual_bytes), r->touched);
}

static void json_text_field(json *j, const char *key, const char *value) {
    json_key(j, key);
    json_string(j, value);
}

static void print_json(const load_report *r) {
    json j;
    json_init(&j, stdout);
    json_begin_object(&j);
    json_text_field(&j, "schema", "ggufmap.load/1");
    json_text_field(&j, "model", r->path);
    json_text_field(&j, "device", ggufmap_device_name(r->a->pa.opts.device));
    json_text_field(&j, "planner", r->planner);
    json_field_u(&j, "page", r->ms.page);
    json_key(&j, "shard");
    json_int(&j, r->a->shard);
    json_text_field(&j, "system", gm_os_name());
    json_key(&j, "backends");
    json_begin_object(&j);
    json_text_field(&j, "gpu", r->a->backend);
    json_text_field(&j, "cpu", r->has_gpu ? r->a->cpu_backend : r->a->backend);
    json_end_object(&j);
    json_ranges(&j, r);
    json_figures(&j, r);
    static const char *const times[] = {"map", "mmap", "gpu_backend", "cpu_backend", "pin",
                                        "copy", "release", "resolve", "touch"};
    JSON_COUNTS(&j, "time_ns", times, r->t_map, r->ms.map_ns, r->ms.gpu_ns, r->ms.cpu_ns, r->pin_ns, r->ms.copy_ns,
                r->ms.release_ns, r->t_resolve, r->t_touch);
    json_end_object(&j);
    json_finish(&j);
}

/* ------------------------------------------------------------------------ */
/* The text                                                                  */
/* ------------------------------------------------------------------------ */

/* The ranges as given to the backends, in aligned columns. */
static void print_ranges(const ggufmap_mapped *mapped, const ggufmap_plan *plan) {
    uint32_t n = ggufmap_mapped_n_ranges(mapped), shown = n < 40 ? n : 40;
    int name_w = 6, off_w = 5, be_w = 7; /* the headers' widths */
    char b[32];
    for (uint32_t i = 0; i < shown; i++) {
        const ggufmap_mapped_range *r = ggufmap_mapped_range_at(mapped, i);
        int w = (int)strlen(ggufmap_plan_buffer(plan, r->plan_buffer)->name);
        name_w = w > name_w ? w : name_w;
        w = snprintf(b, sizeof b, "%llu", (unsigned long long)r->last);
        off_w = w > off_w ? w : off_w;
        w = (int)strlen(r->backend->name);
        be_w = w > be_w ? w : be_w;
    }
    printf("  %-*s %5s  %*s  %*s %12s  %-*s %12s\n", name_w, "buffer", "shard", off_w, "first", off_w, "last", "bytes",
           be_w, "backend", "time");
    for (uint32_t i = 0; i < shown; i++) {
        const ggufmap_mapped_range *r = ggufmap_mapped_range_at(mapped, i);
        printf("  %-*s %5u  %*llu  %*llu %12s  %-*s %9.3f ms\n", name_w, ggufmap_plan_buffer(plan, r->plan_buffer)->name,
               r->shard + 1, off_w, (unsigned long long)r->first, off_w, (unsigned long long)r->last,
               ggufmap_format_bytes(b, sizeof b, r->last - r->first), be_w, r->backend->name, ms(r->ns));
    }
    if (n > shown) printf("  ... %u more\n", n - shown);
}

/* One row of the plan-versus-kernel table: a figure, blank (NOT_SHOWN), or
 * "n/a" where the system does not report it (NOT_KNOWN). */
static void figure_row(const char *what, uint64_t plan, uint64_t kernel) {
    char a[32], b[32];
    printf("%-34s %12s", what, plan == NOT_SHOWN ? "" : ggufmap_format_bytes(a, sizeof a, plan));
    if (kernel != NOT_SHOWN) printf(" %12s", kernel == NOT_KNOWN ? "n/a" : ggufmap_format_bytes(b, sizeof b, kernel));
    putchar('\n');
}

static void print_figures(const load_report *r) {
    printf("\n%-34s %12s %12s\n", "", "plan", "kernel");
    figure_row("pinned (VmLck; wired)", r->predicted, r->vmlck);
    figure_row("pinned (VmPin)", NOT_SHOWN, r->vmpin);
    figure_row("pinned (backend's own count)", r->predicted, r->pinned);
    figure_row("llama.cpp's spans would pin", r->span_pred, NOT_SHOWN);
    figure_row("mapped after release (VmSize +)",
               (r->a->keep ? r->ms.file_bytes : r->ms.planned_pages) + r->ms.alloc_bytes, r->size_grown);
    figure_row("resident (VmRSS +)", (r->a->touch ? r->ms.planned_pages : r->predicted) + r->ms.alloc_bytes,
               r->rss_grown);
    figure_row("released (pages outside ranges)", r->ms.released_bytes, NOT_SHOWN);
    if (!r->after.known)
        printf("(n/a: this build's system interface, %s, has no call for a process's locked or resident bytes)\n",
               gm_os_name());
}

/* The report for people: what was mapped where, the figures beside the
 * kernel's, and the times. */
static void print_text(const load_report *r) {
    printf("model: ");
    ggufmap_fputs_escaped(stdout, r->path, strlen(r->path));
    printf(" (%u shard%s", ggufmap_model_n_shards(r->m), ggufmap_model_n_shards(r->m) == 1 ? "" : "s");
    if (r->a->shard >= 0) printf(", shard %d mapped", r->a->shard + 1);
    printf("), device %s, planner %s, page %llu\n", ggufmap_device_name(r->a->pa.opts.device), r->planner,
           (unsigned long long)r->ms.page);
    if (r->a->device_page > 1 && r->a->device_page != r->ms.page)
        printf("page: %llu B, this system's: load maps the files here, in this machine's pages; plan --device %s counts "
               "%llu B pages (the device's: Apple Silicon's), so its page-aligned figures differ by the rounding\n",
               (unsigned long long)r->ms.page, ggufmap_device_name(r->a->pa.opts.device),
               (unsigned long long)r->a->device_page);
    if (r->has_gpu) printf("backends: GPU buffers -> %s, CPU buffers -> %s\n", r->a->backend, r->a->cpu_backend);
    else printf("backend: every buffer -> %s\n", r->a->backend);
    printf("ranges: %u (%u to the GPU backend)\n", r->ms.n_ranges, r->ms.n_gpu_ranges);
    print_ranges(r->mapped, r->plan);
    printf("tensors: %lld resolved (%lld in ranges, %lld in allocated contexts), %lld failed\n",
           (long long)r->n_resolved, (long long)r->n_in_ranges, (long long)(r->n_resolved - r->n_in_ranges),
           (long long)r->n_failed);
    char alloc[32], copied[32];
    printf("allocated: %u buffer%s, %s, %u tensors (%s) read in before the release, %.1f ms\n", r->ms.n_alloc_buffers,
           r->ms.n_alloc_buffers == 1 ? "" : "s", ggufmap_format_bytes(alloc, sizeof alloc, r->ms.alloc_bytes),
           r->ms.n_copied, ggufmap_format_bytes(copied, sizeof copied, r->ms.copied_bytes), ms(r->ms.copy_ns));
    print_figures(r);
    printf("\ntime: load %.1f ms (mmap %.1f, GPU backend %.1f, CPU backend %.1f, release %.1f), resolve %.1f ms",
           ms(r->t_map), ms(r->ms.map_ns), ms(r->ms.gpu_ns), ms(r->ms.cpu_ns), ms(r->ms.release_ns), ms(r->t_resolve));
    char touched_text[32];
    if (r->a->touch)
        printf(", touch %.1f ms (%s)", ms(r->t_touch), ggufmap_format_bytes(touched_text, sizeof touched_text, r->touched));
    printf("\n");
}

/* ------------------------------------------------------------------------ */
/* The command                                                               */
/* ------------------------------------------------------------------------ */

/* Opens the model, places and plans it, opens the backends.  GGUFMAP_OK, a
 * status with err filled, or -1 after a usage error was reported. */
static int prepare(load_report *r, ggufmap_error *err) {
    const load_args *a = r->a;
    int st = ggufmap_model_open(r->path, 0, &r->m, err);
    if (st) return st;
    if (a->shard >= 0 && (uint32_t)a->shard >= ggufmap_model_n_shards(r->m)) {
        cli_usage_error("load", "--shard %d: the model has %u shard%s", a->shard + 1, ggufmap_model_n_shards(r->m),
                        ggufmap_model_n_shards(r->m) == 1 ? "" : "s");
        return -1;
    }
    r->has_gpu = a->pa.opts.device != GGUFMAP_DEVICE_CPU;
    ggufmap_planner_format(&a->plan.planner, r->planner, sizeof r->planner);
    st = ggufmap_placement_build(r->m, &a->pa.opts, &r->pl, err);
    if (!st) st = ggufmap_plan_build(r->pl, &a->plan, &r->plan, err);
    if (!st) st = ggufmap_backend_open(a->backend, &r->gpu_be, err);
    if (!st && r->has_gpu) st = ggufmap_backend_open(a->cpu_backend, &r->cpu_be, err);
    return st;
}

/* Resolves every tensor of the mapped shards; the first failures are said. */
static void resolve_all(load_report *r) {
    uint64_t t0 = gm_now_ns();
    for (int64_t i = 0; i < ggufmap_placement_n_instances(r->pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(r->pl, i);
        const ggufmap_tensor *t = ggufmap_model_tensor(r->m, in->tensor);
        if (r->a->shard >= 0 && t->shard != (uint32_t)r->a->shard) continue;
        ggufmap_resolved res;
        ggufmap_error rerr;
        if (ggufmap_mapped_resolve(r->mapped, i, &res, &rerr) != GGUFMAP_OK) {
            if (r->n_failed++ < 10) cli_fail("load", 0, rerr.message);
            continue;
        }
        r->n_resolved++;
        r->n_in_ranges += res.range >= 0;
    }
    r->t_resolve = gm_now_ns() - t0;
}

/* Maps the plan, resolves, touches if asked; the system's memory figures
 * before and after. */
static int map_and_measure(load_report *r, ggufmap_error *err) {
    const load_args *a = r->a;
    ggufmap_map_opts mo;
    ggufmap_map_opts_init(&mo);
    mo.gpu = r->gpu_be;
    mo.cpu = r->has_gpu ? r->cpu_be : r->gpu_be;
    mo.shard = a->shard;
    mo.flags = a->keep ? GGUFMAP_MAP_KEEP_UNPLANNED : 0;
    progress_line line = progress_start("load");
    if (cli_progress_on(&a->common)) {
        mo.progress = progress_show;
        mo.progress_ctx = &line;
    }
    gm_os_memory_read(&r->before);
    uint64_t t0 = gm_now_ns();
    int st = ggufmap_mapped_open(r->plan, &mo, &r->mapped, err);
    if (st) return st;
    r->t_map = gm_now_ns() - t0;
    resolve_all(r);
    if (a->touch) {
        t0 = gm_now_ns();
        r->touched = ggufmap_mapped_touch(r->mapped);
        r->t_touch = gm_now_ns() - t0;
    }
    gm_os_memory_read(&r->after);
    return GGUFMAP_OK;
}

/* The plan's side of the table and the kernel's growth. */
static void settle_figures(load_report *r) {
    const load_args *a = r->a;
    ggufmap_mapped_get_stats(r->mapped, &r->ms);
    ggufmap_backend_stats gs, cs;
    ggufmap_backend_get_stats(r->gpu_be, &gs);
    ggufmap_backend_get_stats(r->has_gpu ? r->cpu_be : NULL, &cs);
    /* Prediction: the page-rounded union of the ranges each pinning backend holds. */
    bool gpu_pins = strcmp(a->backend, "host") != 0, cpu_pins = r->has_gpu && strcmp(a->cpu_backend, "host") != 0;
    uint64_t page = r->ms.page;
    if (r->has_gpu) {
        r->predicted = (gpu_pins ? r->ms.gpu_pages : 0) + (cpu_pins ? r->ms.cpu_pages : 0);
        r->span_pred = (gpu_pins ? span_pages(r->plan, 1, a->shard, page) : 0) +
                       (cpu_pins ? span_pages(r->plan, 0, a->shard, page) : 0);
    } else {
        r->predicted = gpu_pins ? r->ms.planned_pages : 0;
        r->span_pred = gpu_pins ? span_pages(r->plan, -1, a->shard, page) : 0;
    }
    const gm_os_memory *b = &r->before, *f = &r->after;
    r->vmlck = grown(b, f, GM_OS_MEM_LOCKED, b->locked, f->locked);
    r->vmpin = grown(b, f, GM_OS_MEM_PINNED, b->pinned, f->pinned);
    r->rss_grown = grown(b, f, GM_OS_MEM_RESIDENT, b->resident, f->resident);
    r->size_grown = grown(b, f, GM_OS_MEM_VIRTUAL, b->virtual_bytes, f->virtual_bytes);
    r->pinned = gs.pinned_bytes + cs.pinned_bytes;
    r->pin_ns = gs.pin_ns + cs.pin_ns;
}

static int run(const cli_command *cmd, int argc, char **argv) {
    static load_args a;
    memset(&a, 0, sizeof a);
    if (placement_args_init(&a.pa)) return cli_usage_error(cmd->name, "out of memory");
    a.common.progress = -1;
    a.backend = a.cpu_backend = "host";
    a.shard = -1;
    int first, rc = cli_parse(cmd, argc, argv, apply, &a, 1, &first);
    if (rc != EXIT_OK) {
        placement_args_free(&a.pa);
        return cli_parse_status(cmd, rc);
    }
    settle_plan(&a);
    load_report r = {.path = argv[first], .a = &a};
    ggufmap_error err;
    int st = prepare(&r, &err);
    bool in_map = st == GGUFMAP_OK;
    if (!st) st = map_and_measure(&r, &err);
    if (st < 0) {
        rc = EXIT_USAGE;
    } else if (st) {
        rc = cli_fail("load", st == GGUFMAP_EINVAL && !in_map ? EXIT_USAGE : EXIT_BAD_INPUT, err.message);
    } else {
        settle_figures(&r);
        if (!a.common.quiet && a.common.json) print_json(&r);
        else if (!a.common.quiet) print_text(&r);
        rc = cli_finish_stdout("load", EXIT_OK);
        if (r.n_failed) {
            fprintf(stderr, "ggufmap load: %lld tensor(s) did not resolve\n", (long long)r.n_failed);
            rc = EXIT_BAD_INPUT;
        }
    }
    report_free(&r);
    placement_args_free(&a.pa);
    return rc;
}

const cli_command load_command = {
    .name = "load",
    .operands = "MODEL",
    .summary = "map a model as planned and measure its residency",
    .description =
        "Maps MODEL (any shard of a split model) as the ggufmap loader does: every file read-only and whole, one "
        "backend buffer per planned range, the pages outside every range released; resolves every tensor to its "
        "buffer and address; and prints the kernel's own figures (VmLck, VmPin, VmRSS, VmSize on Linux; wired, resident and virtual "
        "bytes on macOS), and the wall time, beside the plan's prediction.",
    .groups = load_groups,
    .n_groups = 2,
    .status_ok = "done, every tensor resolved",
    .status_bad = "the model cannot be read or mapped, a backend refused a range, a tensor did not resolve, or the "
                  "output cannot be written",
    .run = run,
};

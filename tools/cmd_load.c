/*
 * cmd_load.c - `ggufmap load MODEL [placement flags] --backend B --planner P`:
 * maps the model as the loader library does (one backend buffer per planned
 * range), resolves every tensor, and prints what the kernel measured (VmLck,
 * VmPin, VmRSS from /proc/self/status, wall time) beside the plan's
 * prediction.
 *
 * The placement flags spell llama.cpp's own options, as in `ggufmap plan`;
 * they are parsed here by a small parser of this file's own.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"
#include "ggufmap/load.h"
#include "commands.h"
#include "internal.h" /* gm_now_ns */
#include "json.h"     /* the library's JSON writer */
#include "placement_args.h"
#include "util.h"

#define MIB (1024.0 * 1024.0)

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap load MODEL [placement flags] [--backend host|wired|cuda]\n"
            "                    [--cpu-backend host|wired|cuda] [--planner P] [--page SIZE]\n"
            "                    [--shard N] [--touch] [--keep] [--json]\n"
            "\n"
            "Maps MODEL (any shard of a split model) as the ggufmap loader does: every\n"
            "file read-only and whole, one backend buffer per planned range, the pages\n"
            "outside every range released; resolves every tensor to its buffer and\n"
            "address; and prints the kernel's own figures (VmLck, VmPin, VmRSS from\n"
            "/proc/self/status, wall time) beside the plan's prediction.\n"
            "\n");
    placement_args_help(out);
    fprintf(out,
            "\n"
            "loading:\n"
            "  --backend B       backend of the GPU's mapped buffers; with --device cpu,\n"
            "                    of every mapped buffer (default host).  host wraps the\n"
            "                    pointer; wired mlock()s each range (what a Metal residency\n"
            "                    set does); cuda cudaHostRegister()s it (libcudart loaded at\n"
            "                    run time)\n"
            "  --cpu-backend B   backend of the CPU's mapped buffers when there is a GPU\n"
            "                    (default host)\n"
            "  --planner P       span | coalesce[:GAP] | runs[:GAP[:MAX]] | tight[:COST[:MAX]]\n"
            "                    (default tight)\n"
            "  --page SIZE       page size the planner counts with (default: this system's)\n"
            "  --shard N         map only shard N (0-based); tensors of others stay unresolved\n"
            "  --touch           read every page of every range once (resident bytes show)\n"
            "  --keep            do not release the pages outside the ranges\n"
            "  --json            the ggufmap.load/1 document (docs/loader.md)\n"
            "  -h, --help        this text\n"
            "\n"
            "exit status: 0 done, 1 usage error, 2 the model cannot be read or mapped, a\n"
            "backend refused a range, or a tensor did not resolve\n");
}

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct load_args {
    placement_args pa; /* the placement flags (tools/placement_args.h) */
    ggufmap_plan_opts plan;
    const char *backend, *cpu_backend;
    int32_t shard;
    bool touch, keep, json;
} load_args;

static int parse_count(const char *opt, const char *arg, long max, long *out) {
    char *end;
    long n = strtol(arg, &end, 10);
    if (end == arg || *end || n < 0 || n > max) return usage_error("load", "%s %s: expected a count", opt, arg);
    *out = n;
    return 0;
}

static int parse_args(load_args *a, int argc, char **argv) {
    static const struct option own[] = {
        {"planner", required_argument, NULL, 'p'}, {"page", required_argument, NULL, 'P'},
        {"backend", required_argument, NULL, 'b'}, {"cpu-backend", required_argument, NULL, 'B'},
        {"shard", required_argument, NULL, 'S'}, {"touch", no_argument, NULL, 't'},
        {"keep", no_argument, NULL, 'k'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
    };
    struct option longopts[64];
    if (placement_args_longopts(longopts, 64, own, sizeof own / sizeof own[0])) return EXIT_USAGE; /* table too small */
    int c, rc = 0;
    long n = 0;
    uint64_t v;
    optind = 1;
    opterr = 0;
    while (rc == 0 && (c = getopt_long_only(argc, argv, "h", longopts, NULL)) != -1) {
        bool handled;
        rc = placement_args_apply(&a->pa, c, optarg, "load", &handled);
        if (handled) continue;
        switch (c) {
        case 'p':
            if (ggufmap_planner_parse(optarg, &a->plan.planner) != GGUFMAP_OK)
                rc = usage_error("load", "--planner %s: expected span, coalesce[:GAP], runs[:GAP[:MAX]] or tight[:COST[:MAX]]",
                                 optarg);
            break;
        case 'P':
            if (ggufmap_parse_size(optarg, &v) || v == 0) rc = usage_error("load", "--page %s: expected a size", optarg);
            else a->plan.page = v;
            break;
        case 'b': a->backend = optarg; break;
        case 'B': a->cpu_backend = optarg; break;
        case 'S':
            if ((rc = parse_count("--shard", optarg, 99999, &n)) == 0) a->shard = (int32_t)n;
            break;
        case 't': a->touch = true; break;
        case 'k': a->keep = true; break;
        case 'j': a->json = true; break;
        case 'h': help(stdout); return -1;
        default: rc = usage_error("load", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc == 0 && optind != argc - 1)
        rc = usage_error("load", optind == argc ? "no MODEL given" : "one MODEL expected, got %d", argc - optind);
    for (int i = 0; rc == 0 && i < 2; i++) {
        const char *b = i ? a->cpu_backend : a->backend;
        if (strcmp(b, "host") && strcmp(b, "wired") && strcmp(b, "cuda"))
            rc = usage_error("load", "--%s %s: expected host, wired or cuda", i ? "cpu-backend" : "backend", b);
    }
    placement_args_finish(&a->pa);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The kernel's figures                                                      */
/* ------------------------------------------------------------------------ */

typedef struct proc_status {
    uint64_t vm_size, vm_lck, vm_pin, vm_rss; /* bytes */
} proc_status;

static void read_status(proc_status *s) {
    memset(s, 0, sizeof *s);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1) s->vm_size = kb * 1024;
        else if (sscanf(line, "VmLck: %llu kB", &kb) == 1) s->vm_lck = kb * 1024;
        else if (sscanf(line, "VmPin: %llu kB", &kb) == 1) s->vm_pin = kb * 1024;
        else if (sscanf(line, "VmRSS: %llu kB", &kb) == 1) s->vm_rss = kb * 1024;
    }
    fclose(f);
}

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

/* llama.cpp's spans of the same buffers (gpu: the GPU's; else all), page-aligned. */
static uint64_t span_pages(const ggufmap_plan *plan, int gpu, int32_t shard, uint64_t page) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (!b->mapped || (shard >= 0 && b->shard != (uint32_t)shard)) continue;
        if (gpu >= 0 && ggufmap_buft_is_gpu(ggufmap_placement_context(pl, b->context)->buft) != (gpu != 0)) continue;
        uint64_t f = b->first - b->first % page, l = b->last % page ? b->last + page - b->last % page : b->last;
        sum += l - f;
    }
    return sum;
}

static double ms(uint64_t ns) { return (double)ns / 1e6; }

/* ------------------------------------------------------------------------ */
/* The JSON document (ggufmap.load/1), through the library's JSON writer     */
/* ------------------------------------------------------------------------ */

/* Everything the report shows, gathered once by cmd_load. */
typedef struct load_report {
    const char *path;
    const load_args *a;
    const char *planner;
    bool has_gpu;
    const ggufmap_plan *plan;
    const ggufmap_mapped *mapped;
    ggufmap_mapped_stats ms;
    int64_t n_resolved, n_in_ranges, n_failed;
    uint64_t predicted, span_pred, vmlck, vmpin, pinned, touched, pin_ns;
    proc_status before, after;
    uint64_t t_map, t_resolve, t_touch;
} load_report;

static void json_field_u(json *j, const char *key, uint64_t v) {
    json_key(j, key);
    json_uint(j, v);
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
    JSON_COUNTS(j, "measured", measured, r->vmlck, r->vmpin, r->pinned, r->before.vm_rss, r->after.vm_rss,
                r->before.vm_size, r->after.vm_size, r->touched);
}

static void print_json(const load_report *r) {
    json j;
    json_init(&j, stdout);
    json_begin_object(&j);
    json_key(&j, "schema");
    json_string(&j, "ggufmap.load/1");
    json_key(&j, "model");
    json_string(&j, r->path);
    json_key(&j, "device");
    json_string(&j, ggufmap_device_name(r->a->pa.opts.device));
    json_key(&j, "planner");
    json_string(&j, r->planner);
    json_field_u(&j, "page", r->ms.page);
    json_key(&j, "shard");
    json_int(&j, r->a->shard);
    json_key(&j, "backends");
    json_begin_object(&j);
    json_key(&j, "gpu");
    json_string(&j, r->a->backend);
    json_key(&j, "cpu");
    json_string(&j, r->has_gpu ? r->a->cpu_backend : r->a->backend);
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
/* The command                                                               */
/* ------------------------------------------------------------------------ */

int cmd_load(int argc, char **argv) {
    static load_args a;
    memset(&a, 0, sizeof a);
    if (placement_args_init(&a.pa)) return usage_error("load", "out of memory");
    ggufmap_plan_opts_init(&a.plan);
    ggufmap_planner_parse("tight", &a.plan.planner);
    a.plan.page = (uint64_t)sysconf(_SC_PAGESIZE);
    a.backend = a.cpu_backend = "host";
    a.shard = -1;
    int rc = parse_args(&a, argc, argv);
    if (rc) {
        placement_args_free(&a.pa);
        return rc < 0 ? EXIT_OK : rc;
    }

    ggufmap_model *m = NULL;
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_mapped *mapped = NULL;
    ggufmap_backend *gpu_be = NULL, *cpu_be = NULL;
    ggufmap_error err;
    proc_status before, after_map, after;
    const char *path = argv[optind];
    uint64_t t_start = 0, t_map = 0, t_resolve = 0, t_touch = 0, touched = 0;
    int64_t n_resolved = 0, n_failed = 0, n_in_ranges = 0;
    int st;
    bool in_map = false;

    if ((st = ggufmap_model_open(path, 0, &m, &err)) != GGUFMAP_OK) goto fail;
    if (a.shard >= 0 && (uint32_t)a.shard >= ggufmap_model_n_shards(m)) {
        rc = usage_error("load", "--shard %d: the model has %u shard(s)", a.shard, ggufmap_model_n_shards(m));
        goto done;
    }
    if ((st = ggufmap_place(m, &a.pa.opts, &pl, &err)) != GGUFMAP_OK) goto fail;
    if ((st = ggufmap_plan_build(pl, &a.plan, &plan, &err)) != GGUFMAP_OK) goto fail;
    bool has_gpu = a.pa.opts.device != GGUFMAP_DEVICE_CPU;
    if ((st = ggufmap_backend_open(a.backend, &gpu_be, &err)) != GGUFMAP_OK) goto fail;
    if (has_gpu && (st = ggufmap_backend_open(a.cpu_backend, &cpu_be, &err)) != GGUFMAP_OK) goto fail;

    ggufmap_map_opts mo;
    ggufmap_map_opts_init(&mo);
    mo.gpu = gpu_be;
    mo.cpu = has_gpu ? cpu_be : gpu_be;
    mo.shard = a.shard;
    mo.flags = a.keep ? GGUFMAP_MAP_KEEP_UNPLANNED : 0;
    in_map = true;
    read_status(&before);
    t_start = gm_now_ns();
    if ((st = ggufmap_map(plan, &mo, &mapped, &err)) != GGUFMAP_OK) goto fail;
    t_map = gm_now_ns() - t_start;
    read_status(&after_map);
    uint64_t t0 = gm_now_ns();
    for (int64_t i = 0; i < ggufmap_placement_n_instances(pl); i++) {
        const ggufmap_instance *in = ggufmap_placement_instance(pl, i);
        const ggufmap_tensor *t = ggufmap_model_tensor(m, in->tensor);
        if (a.shard >= 0 && t->shard != (uint32_t)a.shard) continue;
        ggufmap_resolved r;
        ggufmap_error rerr;
        if (ggufmap_mapped_resolve(mapped, i, &r, &rerr) != GGUFMAP_OK) {
            if (n_failed++ < 10) fprintf(stderr, "ggufmap load: %s\n", rerr.message);
            continue;
        }
        n_resolved++;
        n_in_ranges += r.range >= 0;
    }
    t_resolve = gm_now_ns() - t0;
    if (a.touch) {
        t0 = gm_now_ns();
        touched = ggufmap_mapped_touch(mapped);
        t_touch = gm_now_ns() - t0;
    }
    read_status(&after);

    ggufmap_mapped_stats ms_;
    ggufmap_mapped_get_stats(mapped, &ms_);
    ggufmap_backend_stats gs, cs;
    ggufmap_backend_get_stats(gpu_be, &gs);
    ggufmap_backend_get_stats(has_gpu ? cpu_be : NULL, &cs);
    /* Prediction: the page-rounded union of the ranges each pinning backend holds. */
    bool gpu_pins = strcmp(a.backend, "host") != 0, cpu_pins = has_gpu && strcmp(a.cpu_backend, "host") != 0;
    uint64_t predicted = has_gpu ? (gpu_pins ? ms_.gpu_pages : 0) + (cpu_pins ? ms_.cpu_pages : 0)
                                 : (gpu_pins ? ms_.planned_pages : 0);
    uint64_t page = ms_.page;
    uint64_t span_pred = has_gpu ? (gpu_pins ? span_pages(plan, 1, a.shard, page) : 0) +
                                       (cpu_pins ? span_pages(plan, 0, a.shard, page) : 0)
                                 : (gpu_pins ? span_pages(plan, -1, a.shard, page) : 0);
    uint64_t vmlck = sub0(after.vm_lck, before.vm_lck), vmpin = sub0(after.vm_pin, before.vm_pin);
    uint64_t pinned = gs.pinned_bytes + cs.pinned_bytes;
    char pbuf[64];
    ggufmap_planner_format(&a.plan.planner, pbuf, sizeof pbuf);

    if (a.json) {
        load_report rep = {.path = path, .a = &a, .planner = pbuf, .has_gpu = has_gpu, .plan = plan, .mapped = mapped,
                           .ms = ms_, .n_resolved = n_resolved, .n_in_ranges = n_in_ranges, .n_failed = n_failed,
                           .predicted = predicted, .span_pred = span_pred, .vmlck = vmlck, .vmpin = vmpin,
                           .pinned = pinned, .touched = touched, .pin_ns = gs.pin_ns + cs.pin_ns, .before = before,
                           .after = after, .t_map = t_map, .t_resolve = t_resolve, .t_touch = t_touch};
        print_json(&rep);
    } else {
        printf("model: %s (%u shard%s%s), device %s, planner %s, page %llu\n", path, ggufmap_model_n_shards(m),
               ggufmap_model_n_shards(m) == 1 ? "" : "s", a.shard >= 0 ? ", one mapped" : "",
               ggufmap_device_name(a.pa.opts.device), pbuf, (unsigned long long)page);
        if (has_gpu) printf("backends: GPU buffers -> %s, CPU buffers -> %s\n", a.backend, a.cpu_backend);
        else printf("backend: every buffer -> %s\n", a.backend);
        printf("ranges: %u (%u to the GPU backend)\n", ms_.n_ranges, ms_.n_gpu_ranges);
        for (uint32_t i = 0; i < ggufmap_mapped_n_ranges(mapped) && i < 40; i++) {
            const ggufmap_mapped_range *r = ggufmap_mapped_range_at(mapped, i);
            printf("  %-12s shard %u [%llu, %llu) %10.2f MiB  %-5s %9.3f ms\n",
                   ggufmap_plan_buffer(plan, r->plan_buffer)->name, r->shard, (unsigned long long)r->first,
                   (unsigned long long)r->last, (double)(r->last - r->first) / MIB, r->backend->name, ms(r->ns));
        }
        if (ggufmap_mapped_n_ranges(mapped) > 40) printf("  ... %u more\n", ggufmap_mapped_n_ranges(mapped) - 40);
        printf("tensors: %lld resolved (%lld in ranges, %lld in allocated contexts), %lld failed\n",
               (long long)n_resolved, (long long)n_in_ranges, (long long)(n_resolved - n_in_ranges), (long long)n_failed);
        printf("allocated: %u buffer%s, %.2f MiB, %u tensors (%.2f MiB) read in before the release, %.1f ms\n",
               ms_.n_alloc_buffers, ms_.n_alloc_buffers == 1 ? "" : "s", (double)ms_.alloc_bytes / MIB, ms_.n_copied,
               (double)ms_.copied_bytes / MIB, ms(ms_.copy_ns));
        printf("\n%-34s %14s %14s\n", "", "plan", "kernel");
        printf("%-34s %10.2f MiB %10.2f MiB\n", "pinned (VmLck; wired)", (double)predicted / MIB, (double)vmlck / MIB);
        printf("%-34s %14s %10.2f MiB\n", "pinned (VmPin)", "", (double)vmpin / MIB);
        printf("%-34s %10.2f MiB %10.2f MiB\n", "pinned (backend's own count)", (double)predicted / MIB,
               (double)pinned / MIB);
        printf("%-34s %10.2f MiB\n", "llama.cpp's spans would pin", (double)span_pred / MIB);
        printf("%-34s %10.2f MiB %10.2f MiB\n", "mapped after release (VmSize +)",
               (double)((a.keep ? ms_.file_bytes : ms_.planned_pages) + ms_.alloc_bytes) / MIB,
               (double)sub0(after.vm_size, before.vm_size) / MIB);
        printf("%-34s %10.2f MiB %10.2f MiB\n", "resident (VmRSS +)",
               (double)((a.touch ? ms_.planned_pages : predicted) + ms_.alloc_bytes) / MIB,
               (double)sub0(after.vm_rss, before.vm_rss) / MIB);
        printf("%-34s %10.2f MiB\n", "released (pages outside ranges)", (double)ms_.released_bytes / MIB);
        printf("\ntime: load %.1f ms (mmap %.1f, GPU backend %.1f, CPU backend %.1f, release %.1f), resolve %.1f ms",
               ms(t_map), ms(ms_.map_ns), ms(ms_.gpu_ns), ms(ms_.cpu_ns), ms(ms_.release_ns), ms(t_resolve));
        if (a.touch) printf(", touch %.1f ms (%.2f MiB)", ms(t_touch), (double)touched / MIB);
        printf("\n");
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("ggufmap load: stdout");
        rc = EXIT_BAD_INPUT;
    }
    if (n_failed) {
        fprintf(stderr, "ggufmap load: %lld tensor(s) did not resolve\n", (long long)n_failed);
        rc = EXIT_BAD_INPUT;
    }
    goto done;
fail:
    fprintf(stderr, "ggufmap load: %s\n", err.message);
    rc = st == GGUFMAP_EINVAL && !in_map ? EXIT_USAGE : EXIT_BAD_INPUT;
done:
    (void)after_map;
    ggufmap_unmap(mapped);
    ggufmap_backend_close(cpu_be);
    ggufmap_backend_close(gpu_be);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    ggufmap_model_close(m);
    placement_args_free(&a.pa);
    return rc;
}

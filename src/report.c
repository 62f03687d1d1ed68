/*
 * report.c - a plan for people (text and a picture per shard), for scripts
 * (JSON "ggufmap.plan/1"), and for diffing with the oracle (buffer lines).
 * The SVG figure is in report_svg.c.
 *
 * The text, top down: the placement in words, the lines llama.cpp would
 * print, every buffer (span, own bytes, foreign tensors, the planner's
 * ranges), the totals, the GPU working set with its verdict under a limit
 * and the CPU side, the next steps the caller worked out, and the picture.
 * Sizes adapt their unit ("3.06 KiB", "46.44 GiB"); only llama.cpp's own
 * lines keep its "%8.2f MiB".  Shards are numbered from 1, as their file
 * names number them.  Everything that comes from a file (paths, tensor
 * names) is escaped for the terminal.
 *
 * The picture.  Each shard is drawn as a strip of cells; a cell stands for
 * file_size / width bytes and shows the context that owns most bytes in it
 * (a letter per buffer kind, '.' for bytes no tensor owns: header, padding).
 * Under it, one row per mapped buffer of that shard: '=' where llama.cpp
 * maps (its span), and a second row with '#' where the planner maps.  In
 * colour the span row is green over the buffer's own tensors and red over
 * foreign ones.
 */
#include <stdlib.h>
#include <string.h>

#include "ggufmap/report.h"
#include "device.h"
#include "internal.h"
#include "json.h"
#include "report_internal.h"

#define ANSI_RESET "\033[0m"
#define ANSI_RED "\033[31m"
#define ANSI_GREEN "\033[32m"

void ggufmap_report_opts_init(ggufmap_report_opts *o) {
    memset(o, 0, sizeof *o);
    o->width = 96;
    o->top_foreign = 5;
}

/* ------------------------------------------------------------------------ */
/* Shared with report_svg.c                                                  */
/* ------------------------------------------------------------------------ */

const char *gm_base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *gm_context_label(const ggufmap_context *c, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s", c->buft, c->lazy ? " (lazy)" : "");
    return buf;
}

gm_paint gm_context_paint(const ggufmap_context *c) { return c->lazy ? GM_PAINT_LAZY : (gm_paint)c->kind; }

/* One row per paint: colour, letter, terminal colour.  Colours from a
 * palette that stays apart for the common colour-vision deficiencies. */
static const struct {
    const char *rgb;
    char letter;
    const char *ansi;
} paints[GM_PAINT_COUNT] = {
    [GGUFMAP_BUFT_GPU] = {"#009e73", 'G', "\033[32m"},
    [GGUFMAP_BUFT_CPU] = {"#0072b2", 'C', "\033[34m"},
    [GGUFMAP_BUFT_CPU_REPACK] = {"#cc79a7", 'R', "\033[35m"},
    [GGUFMAP_BUFT_GPU_HOST] = {"#e69f00", 'H', "\033[33m"},
    [GGUFMAP_BUFT_CPU_AMX] = {"#d55e00", 'A', "\033[31m"},
    [GM_PAINT_LAZY] = {"#56b4e9", 'L', "\033[36m"},
};

const char *gm_paint_rgb(gm_paint k) { return paints[k].rgb; }
char gm_paint_letter(gm_paint k) { return paints[k].letter; }

const char *gm_paint_name(gm_paint k, ggufmap_device d, char *buf, size_t cap) {
    char cpu[16];
    if (k == GM_PAINT_LAZY) snprintf(buf, cap, "%s, lazily read", ggufmap_buft_name(d, GGUFMAP_BUFT_CPU, 0, cpu, sizeof cpu));
    else if (k == GGUFMAP_BUFT_GPU) snprintf(buf, cap, "GPU");
    else ggufmap_buft_name(d, (ggufmap_buft_kind)k, 0, buf, cap);
    return buf;
}

static const char *kind_ansi(gm_paint k) { return paints[k].ansi; }

gm_totals gm_plan_totals(const ggufmap_plan *plan) {
    gm_totals t = {0};
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (!b->mapped) {
            t.allocated += b->size;
            continue;
        }
        t.n_mapped++;
        t.span += b->size;
        t.own += b->own_bytes;
        t.foreign += b->foreign_bytes;
        t.planned += b->ranges_bytes;
        t.n_ranges += b->n_ranges;
        t.span_resident += b->span_resident;
        t.planned_resident += b->ranges_resident;
    }
    return t;
}

const char *gm_plan_gpu_name(const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++)
        if (ggufmap_placement_context(pl, c)->gpu) return ggufmap_placement_context(pl, c)->buft;
    return NULL;
}

bool gm_plan_has_gpu(const ggufmap_plan *plan) { return gm_plan_gpu_name(plan) != NULL; }

bool gm_plan_unified(const ggufmap_plan *plan) {
    return gm_backend(ggufmap_placement_options(ggufmap_plan_placement(plan))->device)->unified;
}

void gm_shard_cells(const ggufmap_plan *plan, uint32_t s, uint32_t width, int *cell_owner) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    uint32_t nc = ggufmap_placement_n_contexts(pl);
    uint64_t size = ggufmap_source_file_size(ggufmap_model_shard(m, s));
    uint64_t *bytes = calloc((size_t)width * (nc + 1), sizeof *bytes);
    for (uint32_t c = 0; c < width; c++) cell_owner[c] = -1;
    if (!bytes || size == 0) {
        free(bytes);
        return;
    }
    for (int64_t i = 0; i < ggufmap_model_n_tensors(m); i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        if (t->shard != s || t->size == 0) continue;
        int32_t own = ggufmap_plan_tensor_owner(plan, i);
        uint32_t slot = own < 0 ? nc : (uint32_t)own;
        uint64_t a = t->offset, e = t->offset + t->size;
        for (uint64_t c = a * width / size; c < width && c * size / width < e; c++) {
            uint64_t c0 = c * size / width, c1 = (c + 1) * size / width;
            uint64_t lo = a > c0 ? a : c0, hi = e < c1 ? e : c1;
            if (hi > lo) bytes[c * (nc + 1) + slot] += hi - lo;
        }
    }
    for (uint32_t c = 0; c < width; c++) {
        uint64_t most = 0;
        for (uint32_t k = 0; k <= nc; k++)
            if (bytes[(size_t)c * (nc + 1) + k] > most) {
                most = bytes[(size_t)c * (nc + 1) + k];
                cell_owner[c] = k == nc ? -2 : (int)k;
            }
    }
    free(bytes);
}

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

static const char *plural(uint64_t n) { return n == 1 ? "" : "s"; }

/* ------------------------------------------------------------------------ */
/* Buffer lines (the oracle's format)                                        */
/* ------------------------------------------------------------------------ */

static void buffer_lines(FILE *out, const ggufmap_plan *plan) {
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (b->mapped)
            fprintf(out, "MAPPED buft=%s file=%u first=%llu last=%llu size=%llu max_tensor=%llu\n", b->name, b->shard,
                    (unsigned long long)b->first, (unsigned long long)b->last, (unsigned long long)b->size,
                    (unsigned long long)b->max_tensor);
        else
            fprintf(out, "ALLOC buft=%s size=%llu n_tensors=%lld\n", b->name, (unsigned long long)b->size,
                    (long long)b->n_tensors);
    }
}

/* ------------------------------------------------------------------------ */
/* The terminal picture                                                      */
/* ------------------------------------------------------------------------ */

static bool cell_in(uint64_t first, uint64_t last, uint32_t c, uint32_t width, uint64_t size) {
    uint64_t c0 = c * size / width, c1 = (c + 1) * size / width;
    return first < c1 && last > c0 && last > first;
}

static void picture_legend(FILE *out, const ggufmap_placement *pl) {
    char label[64];
    fprintf(out, "\npicture (one strip per shard; ");
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
        fprintf(out, "%c = %s, ", gm_paint_letter(gm_context_paint(ctx)), gm_context_label(ctx, label, sizeof label));
    }
    fprintf(out, ". = no tensor; '=' llama.cpp maps, '#' the planner maps)\n");
}

static void picture_tensors(FILE *out, const ggufmap_placement *pl, const int *cells, uint32_t width, bool color) {
    fprintf(out, "  %-14s |", "tensors");
    for (uint32_t c = 0; c < width; c++) {
        if (cells[c] < 0) {
            fputc(cells[c] == -1 ? '.' : '?', out);
            continue;
        }
        gm_paint k = gm_context_paint(ggufmap_placement_context(pl, (uint32_t)cells[c]));
        if (color) fprintf(out, "%s%c" ANSI_RESET, kind_ansi(k), gm_paint_letter(k));
        else fputc(gm_paint_letter(k), out);
    }
    fprintf(out, "|\n");
}

static void picture_buffer(FILE *out, const ggufmap_buffer *b, const int *cells, uint32_t width, uint64_t size,
                           bool color) {
    char buf[64];
    fprintf(out, "  %-14s |", b->name);
    for (uint32_t c = 0; c < width; c++) {
        if (!cell_in(b->first, b->last, c, width, size)) fputc(' ', out);
        else if (color) fprintf(out, "%s=" ANSI_RESET, cells[c] == (int)b->context ? ANSI_GREEN : ANSI_RED);
        else fputc('=', out);
    }
    fprintf(out, "| llama.cpp %s\n", gm_fmt_bytes(buf, sizeof buf, b->size));
    fprintf(out, "  %-14s |", "");
    for (uint32_t c = 0; c < width; c++) {
        bool in = false;
        for (uint32_t k = 0; k < b->n_ranges && !in; k++) in = cell_in(b->ranges[k].first, b->ranges[k].last, c, width, size);
        fputc(in ? '#' : ' ', out);
    }
    fprintf(out, "| planned %s in %u range%s\n", gm_fmt_bytes(buf, sizeof buf, b->ranges_bytes), b->n_ranges,
            plural(b->n_ranges));
}

static void picture(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    uint32_t width = o->width ? o->width : 96, n = ggufmap_model_n_shards(m);
    int *cells = malloc(width * sizeof *cells);
    char size_text[64], cell_text[64];
    if (!cells) return;
    picture_legend(out, pl);
    for (uint32_t s = 0; s < n; s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        uint64_t size = ggufmap_source_file_size(src);
        bool any = false;
        for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
            const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
            any |= b->mapped && b->shard == s;
        }
        if (!any || size == 0) continue;
        const char *file = gm_base_name(ggufmap_source_path(src));
        fprintf(out, "\n  shard %u of %u  ", s + 1, n);
        ggufmap_fputs_escaped(out, file, strlen(file));
        fprintf(out, "  %s, a cell = %s\n", gm_fmt_bytes(size_text, sizeof size_text, size),
                gm_fmt_bytes(cell_text, sizeof cell_text, size / width));
        gm_shard_cells(plan, s, width, cells);
        picture_tensors(out, pl, cells, width, (o->flags & GGUFMAP_REPORT_COLOR) != 0);
        for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
            const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
            if (b->mapped && b->shard == s) picture_buffer(out, b, cells, width, size, (o->flags & GGUFMAP_REPORT_COLOR) != 0);
        }
    }
    free(cells);
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */
/* ------------------------------------------------------------------------ */

const char *gm_gpu_layers(const ggufmap_plan *plan, char *buf, size_t cap) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    int32_t n = ggufmap_placement_n_layers(pl), first = -1, count = 0;
    for (int32_t il = 0; il < n; il++)
        if (ggufmap_placement_layer_on_gpu(pl, il)) {
            if (first < 0) first = il;
            count++;
        }
    const char *output = ggufmap_placement_layer_on_gpu(pl, n) ? "the output layer" : "";
    if (!gm_plan_has_gpu(plan) && count == 0 && !output[0]) snprintf(buf, cap, "no GPU");
    else if (count == 0) snprintf(buf, cap, "%s on the GPU", output[0] ? output : "no layer");
    else if (count == 1) snprintf(buf, cap, "layer %d%s%s on the GPU", first, output[0] ? " and " : "", output);
    else snprintf(buf, cap, "layers %d..%d%s%s on the GPU", first, first + count - 1, output[0] ? " and " : "", output);
    return buf;
}

static void describe_placement(FILE *out, const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    char layers[96];
    int32_t nextn = ggufmap_placement_n_layers_nextn(pl);
    fprintf(out, "architecture: %s; layers: %d + output", ggufmap_placement_arch(pl), ggufmap_placement_n_layers(pl));
    if (nextn)
        fprintf(out, " (the last %d MTP/NextN, %s)", nextn,
                ggufmap_placement_load_mtp(pl) ? "created: load_mtp" : "skipped without load_mtp");
    fprintf(out, "; %s; CPU rules: %s\n", gm_gpu_layers(plan, layers, sizeof layers),
            ggufmap_cpu_name(ggufmap_placement_cpu(pl)));
}

static void print_header(FILE *out, const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    const char *path = ggufmap_source_path(ggufmap_model_shard(m, 0));
    fprintf(out, "model: ");
    ggufmap_fputs_escaped(out, path, strlen(path));
    fprintf(out, " (%u shard%s)\n", ggufmap_model_n_shards(m), plural(ggufmap_model_n_shards(m)));
    describe_placement(out, plan);
    const char *warning = ggufmap_placement_warning(pl);
    if (warning[0]) {
        fprintf(out, "warning: ");
        ggufmap_fputs_escaped(out, warning, strlen(warning));
        fputc('\n', out);
    }
}

static void print_llama_lines(FILE *out, const ggufmap_plan *plan) {
    fprintf(out, "\nllama.cpp v0.5.0 would print:\n");
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *bf = ggufmap_plan_buffer(plan, i);
        fprintf(out, "  load_tensors: %12s model buffer size = %8.2f MiB\n", bf->name, (double)bf->size / 1024.0 / 1024.0);
    }
}

static void print_foreign(FILE *out, const ggufmap_plan *plan, const ggufmap_buffer *bf, uint32_t top) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    char a[64], label[64];
    if (!bf->n_foreign) {
        fprintf(out, "      foreign: none\n");
        return;
    }
    fprintf(out, "      foreign: %s in %u tensor%s", gm_fmt_bytes(a, sizeof a, bf->foreign_bytes), bf->n_foreign,
            plural(bf->n_foreign));
    uint32_t shown = bf->n_foreign < top ? bf->n_foreign : top;
    for (uint32_t k = 0; k < shown; k++) {
        const ggufmap_foreign *f = &bf->foreign[k];
        const ggufmap_tensor *t = ggufmap_model_tensor(m, f->tensor);
        fprintf(out, "%s", k ? ", " : ": ");
        ggufmap_fputs_escaped(out, t->name, t->name_len);
        fprintf(out, " %s (%s)", gm_fmt_bytes(a, sizeof a, f->bytes),
                f->owner >= 0 ? gm_context_label(ggufmap_placement_context(pl, (uint32_t)f->owner), label, sizeof label)
                              : "unused");
    }
    fprintf(out, "%s\n", shown < bf->n_foreign ? ", ..." : "");
}

static void print_buffer(FILE *out, const ggufmap_plan *plan, uint32_t i, const char *planner, uint32_t top) {
    const ggufmap_plan_opts *po = ggufmap_plan_options(plan);
    const ggufmap_buffer *bf = ggufmap_plan_buffer(plan, i);
    const ggufmap_context *ctx = ggufmap_placement_context(ggufmap_plan_placement(plan), bf->context);
    char a[64], b[64];
    if (!bf->mapped) {
        fprintf(out, "  #%u %-12s allocated %s for %lld tensor%s (copied from the file, not mapped)\n", i, bf->name,
                gm_fmt_bytes(a, sizeof a, bf->size), (long long)bf->n_tensors, plural((uint64_t)bf->n_tensors));
        return;
    }
    fprintf(out, "  #%u %-12s shard %u [%llu, %llu)%s\n", i, bf->name, bf->shard + 1, (unsigned long long)bf->first,
            (unsigned long long)bf->last, ctx->lazy ? " lazy" : "");
    fprintf(out, "      span %s, own %s in %lld tensor%s, inflation %.2fx\n", gm_fmt_bytes(a, sizeof a, bf->size),
            gm_fmt_bytes(b, sizeof b, bf->own_bytes), (long long)bf->n_tensors, plural((uint64_t)bf->n_tensors),
            ratio(bf->size, bf->own_bytes));
    print_foreign(out, plan, bf, top);
    fprintf(out, "      %s: %u range%s, %s", planner, bf->n_ranges, plural(bf->n_ranges),
            gm_fmt_bytes(a, sizeof a, bf->ranges_bytes));
    if (bf->size > bf->ranges_bytes) fprintf(out, " (saves %s)", gm_fmt_bytes(b, sizeof b, bf->size - bf->ranges_bytes));
    fputc('\n', out);
    if (po->page > 1 || po->max_buffer)
        fprintf(out, "      page-aligned: span %s in %u view%s, planned %s in %u view%s\n",
                gm_fmt_bytes(a, sizeof a, bf->span_resident), bf->span_views, plural(bf->span_views),
                gm_fmt_bytes(b, sizeof b, bf->ranges_resident), bf->ranges_views, plural(bf->ranges_views));
}

static void print_totals(FILE *out, const ggufmap_plan *plan, const char *planner) {
    gm_totals t = gm_plan_totals(plan);
    char a[64], b[64], c[64], label[96];
    snprintf(label, sizeof label, "mapped by %s", planner);
    fprintf(out, "\ntotals\n");
    fprintf(out, "  %-22s: %s in %u buffer%s (own %s, foreign %s)\n", "mapped by llama.cpp", gm_fmt_bytes(a, sizeof a, t.span),
            t.n_mapped, plural(t.n_mapped), gm_fmt_bytes(b, sizeof b, t.own), gm_fmt_bytes(c, sizeof c, t.foreign));
    fprintf(out, "  %-22s: %s in %u range%s\n", label, gm_fmt_bytes(a, sizeof a, t.planned), t.n_ranges, plural(t.n_ranges));
    fprintf(out, "  %-22s: %s\n", "allocated", gm_fmt_bytes(a, sizeof a, t.allocated));
}

const char *gm_fmt_against_limit(char *buf, size_t cap, uint64_t bytes, uint64_t limit) {
    char l[32], d[32];
    if (!limit) snprintf(buf, cap, "%s", "");
    else
        snprintf(buf, cap, "%s the limit of %s by %s", bytes <= limit ? "FITS under" : "EXCEEDS", gm_fmt_bytes(l, sizeof l, limit),
                 gm_fmt_bytes(d, sizeof d, bytes <= limit ? limit - bytes : bytes - limit));
    return buf;
}

uint64_t gm_gpu_limit(const ggufmap_plan *plan, uint32_t i, uint64_t limit, const uint64_t *gpu_limits) {
    const uint32_t ordinal = ggufmap_placement_gpu(ggufmap_plan_placement(plan), i);
    return ggufmap_gpu_limit(limit, gpu_limits, ordinal);
}

bool gm_suggestion_fits(const ggufmap_plan *plan, const ggufmap_report_opts *o, const ggufmap_suggestion *s) {
    bool fits = !o->mem || s->resident <= o->mem;
    if (s->n_gpus > 1) {
        for (uint32_t g = 0; g < s->n_gpus; g++) {
            const uint64_t lim = gm_gpu_limit(plan, g, o->limit, o->gpu_limits);
            fits &= !lim || s->gpu_working_set[g] <= lim;
        }
    } else {
        const uint64_t lim = ggufmap_placement_n_gpus(ggufmap_plan_placement(plan)) ? gm_gpu_limit(plan, 0, o->limit, o->gpu_limits)
                                                                                   : o->limit;
        fits &= !lim || s->working_set <= lim;
    }
    return fits;
}

/* "  LABEL: BYTES  FITS under / EXCEEDS the limit of L by D". */
static void verdict_line(FILE *out, const char *label, uint64_t bytes, uint64_t limit) {
    char a[64], v[128];
    fprintf(out, "  %-28s: %11s%s%s\n", label, gm_fmt_bytes(a, sizeof a, bytes), limit ? "  " : "",
            gm_fmt_against_limit(v, sizeof v, bytes, limit));
}

/* The weights the RAM holds against --mem (docs/fit.md "Unified memory"). */
static void print_ram(FILE *out, const ggufmap_plan *plan, uint64_t mem, const char *label) {
    uint64_t llama, planned;
    if (!mem) return;
    ggufmap_plan_resident(plan, &llama, &planned);
    fprintf(out, "RAM (%s; KV cache and compute buffers not included)\n",
            gm_plan_unified(plan) ? "unified memory: every weight resident, counted once"
            : gm_plan_has_gpu(plan) ? "the host's weights" : "every weight, counted once");
    verdict_line(out, "llama.cpp today", llama, mem);
    verdict_line(out, label, planned, mem);
}

/* The GPU working set and its verdict, then the CPU side; without a GPU,
 * everything is the CPU's and counts once.  Then the RAM's verdict. */
static void print_verdict(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o, const char *planner) {
    uint64_t llama, planned, cpu_llama, cpu_planned;
    const uint64_t limit = o->limit, mem = o->mem;
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const uint32_t n_gpus = ggufmap_placement_n_gpus(pl);
    char label[96];
    ggufmap_plan_working_set(plan, &llama, &planned);
    ggufmap_plan_cpu_side(plan, &cpu_llama, &cpu_planned);
    bool gpu = gm_plan_has_gpu(plan), metal = gpu && gm_plan_unified(plan);
    snprintf(label, sizeof label, "ggufmap loader, %s", planner);
    if (gpu)
        fprintf(out, "\nworking set (GPU buffers, page-aligned; KV cache and compute buffers not included)\n");
    else
        fprintf(out, "\nmemory (no GPU: every buffer, page-aligned; KV cache and compute buffers not included)\n");
    fprintf(out, "  (\"llama.cpp today\" is stock llama.cpp v0.5.0; \"ggufmap loader\" is ggufmap's loader or a llama.cpp "
                 "patched to map the planned ranges, docs/loader.md)\n");
    if (n_gpus > 1) { /* each GPU against its own limit */
        for (uint32_t g = 0; g < n_gpus; g++) {
            char name[32];
            const uint64_t lim = gm_gpu_limit(plan, g, limit, o->gpu_limits);
            ggufmap_buft_name(ggufmap_placement_options(pl)->device, GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, g), name,
                              sizeof name);
            ggufmap_plan_gpu_working_set(plan, g, &llama, &planned);
            fprintf(out, " %s\n", name);
            verdict_line(out, "llama.cpp today", llama, lim);
            verdict_line(out, label, planned, lim);
        }
    } else {
        const uint64_t lim = n_gpus ? gm_gpu_limit(plan, 0, limit, o->gpu_limits) : limit;
        verdict_line(out, "llama.cpp today", llama, lim);
        verdict_line(out, label, planned, lim);
    }
    if (gpu) {
        fprintf(out, "CPU side (CPU_Mapped and CPU buffers%s)\n",
                metal ? "; with unified memory they share the Mac's RAM with the working set" : "");
        verdict_line(out, "llama.cpp today", cpu_llama, 0);
        verdict_line(out, label, cpu_planned, 0);
    }
    print_ram(out, plan, mem, label);
}

static void print_suggestions(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    char a[32], b[32], v[128];
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    if (!o->n_suggestions) return;
    fprintf(out, "\nnext steps\n");
    for (uint32_t i = 0; i < o->n_suggestions; i++) {
        const ggufmap_suggestion *s = &o->suggestions[i];
        fprintf(out, "  %u. %s\n       ", i + 1, s->what);
        ggufmap_fputs_escaped(out, s->command, strlen(s->command));
        if (s->n_gpus > 1) {
            fprintf(out, "\n     then llama.cpp's working set is");
            for (uint32_t g = 0; g < s->n_gpus; g++) {
                char name[32];
                const uint64_t lim = gm_gpu_limit(plan, g, o->limit, o->gpu_limits);
                ggufmap_buft_name(ggufmap_placement_options(pl)->device, GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, g),
                                  name, sizeof name);
                fprintf(out, "%s %s %s%s%s", g ? ";" : "", name, gm_fmt_bytes(a, sizeof a, s->gpu_working_set[g]),
                        lim ? ", " : "", gm_fmt_against_limit(v, sizeof v, s->gpu_working_set[g], lim));
            }
        } else {
            const uint64_t lim = ggufmap_placement_n_gpus(pl) ? gm_gpu_limit(plan, 0, o->limit, o->gpu_limits) : o->limit;
            fprintf(out, "\n     then llama.cpp's working set is %s%s%s", gm_fmt_bytes(a, sizeof a, s->working_set),
                    lim ? ", " : "", gm_fmt_against_limit(v, sizeof v, s->working_set, lim));
        }
        if (s->cpu_side) fprintf(out, "; CPU side %s", gm_fmt_bytes(b, sizeof b, s->cpu_side));
        if (o->mem) fprintf(out, "; RAM %s, %s", gm_fmt_bytes(b, sizeof b, s->resident),
                            gm_fmt_against_limit(v, sizeof v, s->resident, o->mem));
        fputc('\n', out);
    }
}

/* "GPU working set X[ of a L limit]" (each GPU's with several), ", CPU side Y"; into buf. */
static const char *describe_sizes(char *buf, size_t cap, const ggufmap_plan *plan, uint64_t working_set,
                                  const uint64_t *gpu_working_set, uint64_t cpu_side, uint64_t limit) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const uint32_t n_gpus = ggufmap_placement_n_gpus(pl);
    char a[32], l[48] = "";
    size_t used = 0;
    if (limit) snprintf(l, sizeof l, " of a %s limit", gm_fmt_bytes(a, sizeof a, limit));
    if (!gm_plan_has_gpu(plan)) {
        snprintf(buf, cap, "no GPU, every buffer %s%s", gm_fmt_bytes(a, sizeof a, working_set), l);
        return buf;
    }
    if (n_gpus > 1 && gpu_working_set) {
        for (uint32_t g = 0; g < n_gpus && used < cap; g++) {
            char name[32];
            ggufmap_buft_name(ggufmap_placement_options(pl)->device, GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, g), name,
                              sizeof name);
            used += (size_t)snprintf(buf + used, cap - used, "%s%s %s", g ? ", " : "GPU working sets ", name,
                                     gm_fmt_bytes(a, sizeof a, gpu_working_set[g]));
        }
    } else {
        used = (size_t)snprintf(buf, cap, "GPU working set %s%s", gm_fmt_bytes(a, sizeof a, working_set), l);
    }
    if (used < cap) snprintf(buf + used, cap - used, ", CPU side %s", gm_fmt_bytes(a, sizeof a, cpu_side));
    return buf;
}

/* The answer first, in words (docs/cli.md "Plan's answer"): does the
 * placement fit with llama.cpp v0.5.0 as it is, and after the first next
 * step?  Without --limit or --mem there is no verdict, only the sizes. */
static void print_answer(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const uint32_t n_gpus = ggufmap_placement_n_gpus(pl);
    bool limited = o->limit || o->mem;
    for (uint32_t g = 0; g < GGUFMAP_MAX_GPUS; g++) limited |= o->gpu_limits[g] != 0;
    uint64_t llama, planned, cpu, cpu_planned, ram, ram_planned, gpu[GGUFMAP_MAX_GPUS] = {0};
    ggufmap_plan_working_set(plan, &llama, &planned);
    ggufmap_plan_cpu_side(plan, &cpu, &cpu_planned);
    ggufmap_plan_resident(plan, &ram, &ram_planned);
    for (uint32_t g = 0; g < n_gpus && g < GGUFMAP_MAX_GPUS; g++) ggufmap_plan_gpu_working_set(plan, g, &gpu[g], &planned);
    if (mtp) { /* both loads are held at once: their GPU buffers add up (as the verdict counts them) */
        uint64_t x, y;
        ggufmap_plan_working_set(mtp, &x, &y);
        llama += x;
        ggufmap_plan_cpu_side(mtp, &x, &y);
        cpu += x;
        for (uint32_t g = 0; g < n_gpus && g < GGUFMAP_MAX_GPUS; g++) ggufmap_plan_gpu_working_set(mtp, g, &x, &y), gpu[g] += x;
    }
    char sizes[512], a[32];
    const uint64_t lim = n_gpus > 1 ? 0 : n_gpus ? gm_gpu_limit(plan, 0, o->limit, o->gpu_limits) : o->limit;
    const bool fits = ggufmap_plan_fits_limits(plan, mtp, o->limit, o->gpu_limits, false) && (!o->mem || ram <= o->mem);
    fprintf(out, "%s: ", mtp ? "answer (both loads together)" : "\nanswer");
    if (limited)
        fprintf(out, "%s with llama.cpp v0.5.0 as it is: ", fits ? "FITS" : "DOES NOT FIT");
    else
        fprintf(out, "no verdict without --limit or --mem; llama.cpp v0.5.0 as it is: ");
    fprintf(out, "%s", describe_sizes(sizes, sizeof sizes, plan, llama, gpu, cpu, lim));
    if (o->mem) fprintf(out, ", RAM %s of %s", gm_fmt_bytes(a, sizeof a, ram), gm_fmt_bytes(sizes, sizeof sizes, o->mem));
    fputc('\n', out);
    if (!o->n_suggestions || mtp) { /* the next steps are worked out for the model's load alone */
        if (o->suggestions && limited && !mtp) fprintf(out, "  no next step to suggest\n");
        return;
    }
    const ggufmap_suggestion *s = &o->suggestions[0];
    fprintf(out, "  after next step 1 below: %s", !limited ? "" : gm_suggestion_fits(plan, o, s) ? "FITS: " : "still DOES NOT FIT: ");
    fprintf(out, "%s", describe_sizes(sizes, sizeof sizes, plan, s->working_set, s->gpu_working_set, s->cpu_side, 0));
    if (o->mem) fprintf(out, ", RAM %s", gm_fmt_bytes(a, sizeof a, s->resident));
    fputc('\n', out);
}

/* One load's report; answer: the answer first (with --mtp it comes once, above both loads). */
static void text(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o, bool answer) {
    const ggufmap_plan_opts *po = ggufmap_plan_options(plan);
    char a[64], planner[64];
    print_header(out, plan);
    if (answer) print_answer(out, plan, NULL, o);
    print_llama_lines(out, plan);
    ggufmap_planner_format(&po->planner, planner, sizeof planner);
    fprintf(out, "\nbuffers (planner %s%s%s)\n", planner, po->page > 1 ? ", page " : "",
            po->page > 1 ? gm_fmt_bytes(a, sizeof a, po->page) : "");
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) print_buffer(out, plan, i, planner, o->top_foreign);
    print_totals(out, plan, planner);
    print_verdict(out, plan, o, planner);
    print_suggestions(out, plan, o);
    if (!(o->flags & GGUFMAP_REPORT_NO_PICTURE)) picture(out, plan, o);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

static void json_header(json *j, const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    const ggufmap_plan_opts *po = ggufmap_plan_options(plan);
    char buf[160];
    json_key(j, "model"), json_string(j, ggufmap_source_path(ggufmap_model_shard(m, 0)));
    json_key(j, "n_shards"), json_uint(j, ggufmap_model_n_shards(m));
    json_key(j, "arch"), json_string(j, ggufmap_placement_arch(pl));
    json_key(j, "n_layers"), json_int(j, ggufmap_placement_n_layers(pl));
    json_key(j, "n_layers_nextn"), json_int(j, ggufmap_placement_n_layers_nextn(pl));
    json_key(j, "load_mtp"), json_bool(j, ggufmap_placement_load_mtp(pl));
    json_key(j, "gpu_layers");
    json_begin_array(j);
    for (int32_t il = 0; il <= ggufmap_placement_n_layers(pl); il++)
        if (ggufmap_placement_layer_on_gpu(pl, il)) json_int(j, il);
    json_end_array(j);
    json_key(j, "cpu"), json_string(j, ggufmap_cpu_name(ggufmap_placement_cpu(pl)));
    json_key(j, "warning");
    ggufmap_placement_warning(pl)[0] ? json_string(j, ggufmap_placement_warning(pl)) : json_null(j);
    json_key(j, "planner"), json_string(j, ggufmap_planner_format(&po->planner, buf, sizeof buf));
    json_key(j, "page"), json_uint(j, po->page);
    json_key(j, "max_buffer"), json_uint(j, po->max_buffer);
}

static void json_contexts(json *j, const ggufmap_placement *pl) {
    json_key(j, "contexts");
    json_begin_array(j);
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
        json_begin_object(j);
        json_key(j, "buft"), json_string(j, ctx->buft);
        json_key(j, "lazy"), json_bool(j, ctx->lazy);
        json_key(j, "mapped"), json_bool(j, ctx->mapped);
        json_key(j, "n_tensors"), json_int(j, ctx->n_instances);
        json_key(j, "max_tensor"), json_uint(j, ctx->max_tensor);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_foreign(json *j, const ggufmap_placement *pl, const ggufmap_buffer *b) {
    const ggufmap_model *m = ggufmap_placement_model(pl);
    json_key(j, "foreign");
    json_begin_array(j);
    for (uint32_t k = 0; k < b->n_foreign; k++) {
        const ggufmap_foreign *f = &b->foreign[k];
        const ggufmap_tensor *t = ggufmap_model_tensor(m, f->tensor);
        json_begin_object(j);
        json_key(j, "name"), json_string_n(j, t->name, t->name_len);
        json_key(j, "bytes"), json_uint(j, f->bytes);
        json_key(j, "owner");
        if (f->owner >= 0) {
            const ggufmap_context *oc = ggufmap_placement_context(pl, (uint32_t)f->owner);
            json_string(j, oc->lazy ? "CPU (lazy)" : oc->buft);
        } else {
            json_null(j);
        }
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_buffer(json *j, const ggufmap_placement *pl, const ggufmap_buffer *b) {
    json_begin_object(j);
    json_key(j, "name"), json_string(j, b->name);
    json_key(j, "context"), json_uint(j, b->context);
    json_key(j, "lazy"), json_bool(j, ggufmap_placement_context(pl, b->context)->lazy);
    json_key(j, "mapped"), json_bool(j, b->mapped);
    if (b->mapped) {
        json_key(j, "shard"), json_uint(j, b->shard);
        json_key(j, "first"), json_uint(j, b->first);
        json_key(j, "last"), json_uint(j, b->last);
    }
    json_key(j, "size"), json_uint(j, b->size);
    json_key(j, "max_tensor"), json_uint(j, b->max_tensor);
    json_key(j, "n_tensors"), json_int(j, b->n_tensors);
    json_key(j, "own_bytes"), json_uint(j, b->own_bytes);
    json_key(j, "foreign_bytes"), json_uint(j, b->foreign_bytes);
    json_foreign(j, pl, b);
    json_key(j, "ranges");
    json_begin_array(j);
    for (uint32_t k = 0; k < b->n_ranges; k++) {
        json_begin_array(j);
        json_uint(j, b->ranges[k].first);
        json_uint(j, b->ranges[k].last);
        json_end_array(j);
    }
    json_end_array(j);
    json_key(j, "ranges_bytes"), json_uint(j, b->ranges_bytes);
    json_key(j, "resident");
    json_begin_object(j);
    json_key(j, "span"), json_uint(j, b->mapped ? b->span_resident : b->size);
    json_key(j, "span_views"), json_uint(j, b->span_views);
    json_key(j, "ranges"), json_uint(j, b->mapped ? b->ranges_resident : b->size);
    json_key(j, "ranges_views"), json_uint(j, b->ranges_views);
    json_end_object(j);
    json_end_object(j);
}

/* One check's members: the bytes llama.cpp and the planned ranges hold, the
 * limit (0: none given, null) and whether each is under it (null without a
 * limit). */
static void json_check_fields(json *j, uint64_t llama, uint64_t planned, uint64_t limit) {
    json_key(j, "llama"), json_uint(j, llama);
    json_key(j, "planned"), json_uint(j, planned);
    json_key(j, "limit");
    limit ? json_uint(j, limit) : json_null(j);
    json_key(j, "llama_fits");
    limit ? json_bool(j, llama <= limit) : json_null(j);
    json_key(j, "planned_fits");
    limit ? json_bool(j, planned <= limit) : json_null(j);
}
static void json_totals(json *j, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    const uint64_t mem = o->mem;
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const uint32_t n_gpus = ggufmap_placement_n_gpus(pl);
    const uint64_t limit = n_gpus == 1 ? gm_gpu_limit(plan, 0, o->limit, o->gpu_limits) : o->limit;
    bool limited = limit != 0;
    for (uint32_t g = 0; n_gpus > 1 && g < n_gpus; g++) limited |= gm_gpu_limit(plan, g, o->limit, o->gpu_limits) != 0;
    gm_totals t = gm_plan_totals(plan);
    json_key(j, "totals");
    json_begin_object(j);
    json_key(j, "mapped_span"), json_uint(j, t.span);
    json_key(j, "mapped_own"), json_uint(j, t.own);
    json_key(j, "mapped_foreign"), json_uint(j, t.foreign);
    json_key(j, "mapped_planned"), json_uint(j, t.planned);
    json_key(j, "allocated"), json_uint(j, t.allocated);
    json_key(j, "resident_span"), json_uint(j, t.span_resident);
    json_key(j, "resident_planned"), json_uint(j, t.planned_resident);
    json_end_object(j);

    uint64_t llama, planned;
    ggufmap_plan_working_set(plan, &llama, &planned);
    json_key(j, "working_set");
    json_begin_object(j);
    json_key(j, "llama"), json_uint(j, llama);
    json_key(j, "planned"), json_uint(j, planned);
    json_key(j, "limit");
    limit ? json_uint(j, limit) : json_null(j);
    json_key(j, "llama_fits");
    limited ? json_bool(j, ggufmap_plan_fits_limits(plan, NULL, o->limit, o->gpu_limits, false)) : json_null(j);
    json_key(j, "planned_fits");
    limited ? json_bool(j, ggufmap_plan_fits_limits(plan, NULL, o->limit, o->gpu_limits, true)) : json_null(j);
    json_key(j, "gpus"); /* each GPU of the run: its share and its verdict */
    json_begin_array(j);
    for (uint32_t g = 0; g < n_gpus; g++) {
        char name[32];
        const uint64_t lim = gm_gpu_limit(plan, g, o->limit, o->gpu_limits);
        ggufmap_buft_name(ggufmap_placement_options(pl)->device, GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, g), name,
                          sizeof name);
        ggufmap_plan_gpu_working_set(plan, g, &llama, &planned);
        json_begin_object(j);
        json_key(j, "device"), json_string(j, name);
        json_check_fields(j, llama, planned, lim);
        json_end_object(j);
    }
    json_end_array(j);
    json_end_object(j);

    ggufmap_plan_cpu_side(plan, &llama, &planned);
    json_key(j, "cpu_side");
    json_begin_object(j);
    json_key(j, "llama"), json_uint(j, llama);
    json_key(j, "planned"), json_uint(j, planned);
    json_end_object(j);

    ggufmap_plan_resident(plan, &llama, &planned);
    json_key(j, "ram");
    json_begin_object(j);
    json_check_fields(j, llama, planned, mem);
    json_end_object(j);
}

static void json_suggestions(json *j, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    bool limited = o->limit || o->mem;
    for (uint32_t g = 0; g < GGUFMAP_MAX_GPUS; g++) limited |= o->gpu_limits[g] != 0;
    json_key(j, "suggestions");
    json_begin_array(j);
    for (uint32_t i = 0; i < o->n_suggestions; i++) {
        const ggufmap_suggestion *s = &o->suggestions[i];
        json_begin_object(j);
        json_key(j, "what"), json_string(j, s->what);
        json_key(j, "command"), json_string(j, s->command);
        json_key(j, "working_set"), json_uint(j, s->working_set);
        json_key(j, "cpu_side"), json_uint(j, s->cpu_side);
        json_key(j, "resident"), json_uint(j, s->resident);
        json_key(j, "gpus");
        json_begin_array(j);
        for (uint32_t g = 0; s->n_gpus > 1 && g < s->n_gpus; g++) {
            char name[32];
            ggufmap_buft_name(ggufmap_placement_options(pl)->device, GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, g), name,
                              sizeof name);
            json_begin_object(j);
            json_key(j, "device"), json_string(j, name);
            json_key(j, "working_set"), json_uint(j, s->gpu_working_set[g]);
            json_end_object(j);
        }
        json_end_array(j);
        json_key(j, "fits");
        limited ? json_bool(j, gm_suggestion_fits(plan, o, s)) : json_null(j);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_tensors(json *j, const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    json_key(j, "tensors");
    json_begin_array(j);
    for (int64_t i = 0; i < ggufmap_model_n_tensors(m); i++) {
        const ggufmap_tensor *tn = ggufmap_model_tensor(m, i);
        uint32_t mask = ggufmap_plan_tensor_contexts(plan, i);
        json_begin_object(j);
        json_key(j, "name"), json_string_n(j, tn->name, tn->name_len);
        json_key(j, "shard"), json_uint(j, tn->shard);
        json_key(j, "offset"), json_uint(j, tn->offset);
        json_key(j, "size"), json_uint(j, tn->size);
        json_key(j, "contexts");
        json_begin_array(j);
        for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++)
            if (mask & (1u << c)) json_uint(j, c);
        json_end_array(j);
        json_end_object(j);
    }
    json_end_array(j);
}

/* The members of one load's plan, into the object j has open. */
static void json_plan_fields(json *j, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    json_header(j, plan);
    json_contexts(j, pl);
    json_key(j, "buffers");
    json_begin_array(j);
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) json_buffer(j, pl, ggufmap_plan_buffer(plan, i));
    json_end_array(j);
    json_totals(j, plan, o);
    json_suggestions(j, plan, o);
    json_tensors(j, plan);
}

/* The ggufmap.plan/1 document: the first load's members at the top, the
 * MTP load's (if any) under "mtp"; for a model read over HTTP, what reading
 * it cost. */
static void json_plan(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp, const ggufmap_report_opts *o) {
    json j;
    uint64_t fetched, requests;
    json_init(&j, out);
    json_begin_object(&j);
    json_key(&j, "schema"), json_string(&j, "ggufmap.plan/1");
    if (ggufmap_model_fetch_stats(ggufmap_placement_model(ggufmap_plan_placement(plan)), &fetched, &requests))
        json_key(&j, "fetched_bytes"), json_uint(&j, fetched), json_key(&j, "requests"), json_uint(&j, requests);
    json_plan_fields(&j, plan, o);
    json_key(&j, "mtp");
    if (mtp) {
        ggufmap_report_opts second = *o;
        second.n_suggestions = 0; /* the next steps are the first load's */
        json_begin_object(&j);
        json_plan_fields(&j, mtp, &second);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    json_end_object(&j);
    json_finish(&j);
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

/* The two loads side by side: what their GPU buffers map together. */
static void both_loads(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp, const ggufmap_report_opts *o) {
    uint64_t a_llama, a_planned, b_llama, b_planned;
    char label[96], planner[64];
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const uint32_t n_gpus = ggufmap_placement_n_gpus(pl);
    ggufmap_planner_format(&ggufmap_plan_options(plan)->planner, planner, sizeof planner);
    snprintf(label, sizeof label, "ggufmap loader, %s", planner);
    fprintf(out, "\nboth loads together (the MTP head's load beside the model's)\n");
    if (n_gpus <= 1) {
        const uint64_t lim = n_gpus ? gm_gpu_limit(plan, 0, o->limit, o->gpu_limits) : o->limit;
        ggufmap_plan_working_set(plan, &a_llama, &a_planned);
        ggufmap_plan_working_set(mtp, &b_llama, &b_planned);
        verdict_line(out, "llama.cpp today", a_llama + b_llama, lim);
        verdict_line(out, label, a_planned + b_planned, lim);
        return;
    }
    for (uint32_t g = 0; g < n_gpus; g++) {
        char name[32];
        const uint64_t lim = gm_gpu_limit(plan, g, o->limit, o->gpu_limits);
        ggufmap_buft_name(ggufmap_placement_options(pl)->device, GGUFMAP_BUFT_GPU, ggufmap_placement_gpu(pl, g), name,
                          sizeof name);
        ggufmap_plan_gpu_working_set(plan, g, &a_llama, &a_planned);
        ggufmap_plan_gpu_working_set(mtp, g, &b_llama, &b_planned);
        fprintf(out, " %s\n", name);
        verdict_line(out, "llama.cpp today", a_llama + b_llama, lim);
        verdict_line(out, label, a_planned + b_planned, lim);
    }
}

void ggufmap_report_plan(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    ggufmap_report_plan_mtp(out, plan, NULL, o);
}

void ggufmap_report_plan_mtp(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp,
                             const ggufmap_report_opts *o) {
    if (o->flags & GGUFMAP_REPORT_JSON) {
        json_plan(out, plan, mtp, o);
    } else if (o->flags & GGUFMAP_REPORT_BUFFER_LINES) {
        buffer_lines(out, plan);
        if (mtp) fprintf(out, "LOAD mtp\n"), buffer_lines(out, mtp);
    } else if (!mtp) {
        text(out, plan, o, true);
    } else {
        ggufmap_report_opts second = *o;
        second.n_suggestions = 0;
        print_answer(out, plan, mtp, o);
        fprintf(out, "\n== load 1 of 2: the model (load_mtp off)\n");
        text(out, plan, o, false);
        fprintf(out, "\n== load 2 of 2: the MTP draft head's load of the same file (load_mtp on)\n");
        text(out, mtp, &second, false);
        both_loads(out, plan, mtp, o);
    }
}

/*
 * report_svg.c - a plan as an SVG figure that a person understands without
 * the terminal text beside it.
 *
 * Layout, top down (all coordinates in px):
 *
 *   title       the model's file name, its shard count and size
 *   subtitle    the placement (device, layers on the GPU, CPU rules), planner, page
 *   ruler       one byte scale for every shard, with tick labels ("10 GiB"),
 *               and faint grid lines through all the bars below
 *   per shard   "shard 2 of 4  NAME-00002-of-00004.gguf  46.44 GiB", then
 *               the tensors bar: each tensor in the colour of the buffer type
 *               that owns it (one colour per type, in every picture), header
 *               and padding light grey; then for each mapped buffer of the
 *               shard two rows: llama.cpp's span (outlined, foreign tensors
 *               red) and the planner's ranges (solid), with the buffer's
 *               figures in the right-hand column
 *   totals      mapped by llama.cpp and by the planner, allocated
 *   verdict     the GPU working set of both (FITS / EXCEEDS under a limit),
 *               and the CPU side
 *   legend      every colour and mark used
 *
 * The scale is shared: a 2.5 KiB shard is a sliver beside a 46 GiB one, as it
 * should be (at least 1 px, so it can be seen).  Text from files is escaped
 * twice: control bytes as in the terminal (ggufmap_escape), then for XML.
 */
#include <stdlib.h>
#include <string.h>

#include "ggufmap/report.h"
#include "internal.h"
#include "report_internal.h"

#define FIG_WIDTH 1200.0
#define BAR_X 170.0       /* where the bars start */
#define BAR_W 700.0       /* the longest shard's length */
#define NOTE_X 890.0      /* the right-hand column of figures */
#define FOREIGN_RGB "#d62828"
#define EMPTY_RGB "#e4e4e4" /* header, padding: bytes no tensor owns */
#define UNUSED_RGB "#7f7f7f" /* a tensor llama.cpp creates no tensor for */
#define FONT "DejaVu Sans, Helvetica, Arial, sans-serif"

typedef struct figure {
    FILE *out;
    const ggufmap_plan *plan;
    const ggufmap_placement *pl;
    const ggufmap_model *m;
    double scale;   /* px per byte, the same for every shard */
    double y;       /* the next row's top */
} figure;

/* ------------------------------------------------------------------------ */
/* Text                                                                      */
/* ------------------------------------------------------------------------ */

/* s (n bytes) from a file: terminal escapes first, then XML's. */
static void xml_text(FILE *out, const char *s, size_t n) {
    char buf[1024];
    ggufmap_escape(buf, sizeof buf, s, n);
    for (const char *p = buf; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        default: fputc(*p, out);
        }
    }
}

static void xml_str(FILE *out, const char *s) { xml_text(out, s, strlen(s)); }

/* <text> at (x, y) with attributes attrs, holding the already safe text. */
static void label(FILE *out, double x, double y, const char *attrs, const char *text) {
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    xml_str(out, text);
    fputs("</text>\n", out);
}

static void rect(FILE *out, double x, double y, double w, double h, const char *fill, const char *extra) {
    fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" %s/>\n", x, y, w, h, fill,
            extra ? extra : "");
}

/* ------------------------------------------------------------------------ */
/* Title and ruler                                                           */
/* ------------------------------------------------------------------------ */

static void placement_words(const figure *f, char *buf, size_t cap) {
    const ggufmap_plan_opts *po = ggufmap_plan_options(f->plan);
    const char *device = gm_plan_gpu_name(f->plan);
    char gpu[96], planner[64], page[32];
    snprintf(buf, cap, "%s%s%s%d layers, %s; CPU rules %s; planner %s%s%s", device ? "GPU " : "",
             device ? device : "", device ? ": " : "", ggufmap_placement_n_layers(f->pl),
             gm_gpu_layers(f->plan, gpu, sizeof gpu), ggufmap_cpu_name(ggufmap_placement_cpu(f->pl)),
             ggufmap_planner_format(&po->planner, planner, sizeof planner), po->page > 1 ? ", page " : "",
             po->page > 1 ? gm_fmt_bytes(page, sizeof page, po->page) : "");
}

static void title(figure *f) {
    const char *path = ggufmap_source_path(ggufmap_model_shard(f->m, 0));
    char text[512], size[32];
    uint32_t n = ggufmap_model_n_shards(f->m);
    fprintf(f->out, "<text x=\"20\" y=\"30\" font-size=\"18\" font-weight=\"bold\">");
    xml_str(f->out, gm_base_name(path));
    fprintf(f->out, "</text>\n");
    snprintf(text, sizeof text, "%u shard%s, %s: the buffers llama.cpp v0.5.0 maps, and what ggufmap's planner maps",
             n, n == 1 ? "" : "s", gm_fmt_bytes(size, sizeof size, ggufmap_model_file_bytes(f->m)));
    label(f->out, 20, 50, "font-size=\"13\"", text);
    placement_words(f, text, sizeof text);
    label(f->out, 20, 68, "font-size=\"13\" fill=\"#444444\"", text);
    f->y = 86;
}

/* A tick step of 1, 2 or 5 times a power of 1024's unit, for 4 to 10 ticks. */
static uint64_t tick_step(uint64_t longest) {
    static const uint64_t units[] = {1, 1024, 1024 * 1024, 1024ull * 1024 * 1024, 1024ull * 1024 * 1024 * 1024};
    static const uint64_t mult[] = {1, 2, 5, 10, 20, 50, 100, 200, 500};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        for (size_t k = 0; k < sizeof mult / sizeof mult[0]; k++)
            if (longest / (units[u] * mult[k]) <= 8) return units[u] * mult[k];
    return longest ? longest / 4 : 1;
}

static void ruler(figure *f, uint64_t longest, double grid_bottom) {
    uint64_t step = tick_step(longest);
    char text[32];
    double y = f->y + 14;
    fprintf(f->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\"/>\n", BAR_X, y,
            BAR_X + BAR_W, y);
    label(f->out, 20, y + 4, "font-size=\"11\" fill=\"#444444\"", "byte offset");
    for (uint64_t t = 0; t <= longest; t += step) {
        double x = BAR_X + (double)t * f->scale;
        fprintf(f->out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#555555\"/>\n", x, y - 4, x, y);
        fprintf(f->out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", x, y + 2, x,
                grid_bottom);
        label(f->out, x, y - 6, "font-size=\"10\" text-anchor=\"middle\" fill=\"#444444\"",
              t ? gm_fmt_bytes(text, sizeof text, t) : "0");
        if (step == 0 || t + step < t) break;
    }
    f->y += 24;
}

/* ------------------------------------------------------------------------ */
/* Shards                                                                    */
/* ------------------------------------------------------------------------ */

static double px(const figure *f, uint64_t bytes) { return (double)bytes * f->scale; }

/* A span of at least one pixel wide, so that a small thing shows. */
static double visible(double w) { return w < 1.0 ? 1.0 : w; }

static void tensor_bar(figure *f, uint32_t s, uint64_t size) {
    char tip[160], b[32];
    rect(f->out, BAR_X, f->y, visible(px(f, size)), 18, EMPTY_RGB, NULL);
    for (int64_t i = 0; i < ggufmap_model_n_tensors(f->m); i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(f->m, i);
        if (t->shard != s || t->size == 0) continue;
        int32_t own = ggufmap_plan_tensor_owner(f->plan, i);
        const char *rgb = own < 0 ? UNUSED_RGB : gm_paint_rgb(gm_context_paint(ggufmap_placement_context(f->pl, (uint32_t)own)));
        double w = px(f, t->size);
        fprintf(f->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"18\" fill=\"%s\"><title>", BAR_X + px(f, t->offset),
                f->y, w < 0.3 ? 0.3 : w, rgb);
        xml_text(f->out, t->name, t->name_len);
        snprintf(tip, sizeof tip, ", %s", gm_fmt_bytes(b, sizeof b, t->size));
        xml_str(f->out, tip);
        fputs("</title></rect>\n", f->out);
    }
    f->y += 22;
}

static void buffer_rows(figure *f, const ggufmap_buffer *b) {
    const ggufmap_context *ctx = ggufmap_placement_context(f->pl, b->context);
    const char *rgb = gm_paint_rgb(gm_context_paint(ctx));
    char text[256], x1[32], x2[32], x3[32], planner[64];
    double sx = BAR_X + px(f, b->first), sw = visible(px(f, b->size));
    /* the name alone fits the 146 px before the bars ("CPU_Mapped (lazy)": 104 px in DejaVu Sans 11 px, where
       ", llama.cpp" after it reached 165 px, into the bar); the legend says the outlined bar is llama.cpp's span */
    snprintf(text, sizeof text, "%s%s", b->name, ctx->lazy ? " (lazy)" : "");
    label(f->out, 24, f->y + 10, "font-size=\"11\"", text);
    rect(f->out, sx, f->y, sw, 12, rgb, "fill-opacity=\"0.25\"");
    for (uint32_t k = 0; k < b->n_foreign; k++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(f->m, b->foreign[k].tensor);
        rect(f->out, BAR_X + px(f, t->offset), f->y, visible(px(f, t->size)), 12, FOREIGN_RGB, NULL);
    }
    fprintf(f->out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" fill=\"none\" stroke=\"%s\" "
                    "stroke-width=\"1.5\"/>\n", sx, f->y, sw, rgb);
    snprintf(text, sizeof text, "span %s: own %s, foreign %s", gm_fmt_bytes(x1, sizeof x1, b->size),
             gm_fmt_bytes(x2, sizeof x2, b->own_bytes), gm_fmt_bytes(x3, sizeof x3, b->foreign_bytes));
    label(f->out, NOTE_X, f->y + 10, b->foreign_bytes ? "font-size=\"11\" fill=\"#b00000\"" : "font-size=\"11\"", text);
    f->y += 15;
    snprintf(text, sizeof text, "planned (%s)",
             ggufmap_planner_format(&ggufmap_plan_options(f->plan)->planner, planner, sizeof planner));
    label(f->out, 24, f->y + 10, "font-size=\"11\"", text);
    for (uint32_t k = 0; k < b->n_ranges; k++)
        rect(f->out, BAR_X + px(f, b->ranges[k].first), f->y, visible(px(f, b->ranges[k].last - b->ranges[k].first)), 12,
             rgb, NULL);
    snprintf(text, sizeof text, "planned %s in %u range%s", gm_fmt_bytes(x1, sizeof x1, b->ranges_bytes), b->n_ranges,
             b->n_ranges == 1 ? "" : "s");
    label(f->out, NOTE_X, f->y + 10, "font-size=\"11\"", text);
    f->y += 19;
}

static void shard(figure *f, uint32_t s) {
    const ggufmap_source *src = ggufmap_model_shard(f->m, s);
    uint64_t size = ggufmap_source_file_size(src);
    char head[64], b[32];
    snprintf(head, sizeof head, "shard %u of %u", s + 1, ggufmap_model_n_shards(f->m));
    label(f->out, 20, f->y + 12, "font-size=\"12\" font-weight=\"bold\"", head);
    fprintf(f->out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", BAR_X, f->y + 12);
    xml_str(f->out, gm_base_name(ggufmap_source_path(src)));
    fprintf(f->out, "  %s%s</text>\n", gm_fmt_bytes(b, sizeof b, size),
            px(f, size) < 1.0 ? " (under a pixel at this scale)" : "");
    f->y += 18;
    tensor_bar(f, s, size);
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(f->plan); i++) {
        const ggufmap_buffer *bf = ggufmap_plan_buffer(f->plan, i);
        if (bf->mapped && bf->shard == s) buffer_rows(f, bf);
    }
    f->y += 10;
}

/* Rows a shard takes, to size the figure before drawing it. */
static double shard_height(const figure *f, uint32_t s) {
    double h = 18 + 22 + 10;
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(f->plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(f->plan, i);
        if (b->mapped && b->shard == s) h += 34;
    }
    return h;
}

/* ------------------------------------------------------------------------ */
/* Totals, verdict, legend                                                   */
/* ------------------------------------------------------------------------ */

static void verdict_text(char *buf, size_t cap, const char *who, uint64_t bytes, uint64_t limit) {
    char a[32], v[128];
    snprintf(buf, cap, "%s: %s%s%s", who, gm_fmt_bytes(a, sizeof a, bytes), limit ? ", " : "",
             gm_fmt_against_limit(v, sizeof v, bytes, limit));
}

static void totals(figure *f, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(f->plan);
    const uint32_t n_gpus = ggufmap_placement_n_gpus(pl);
    /* one GPU: its limit; several: the sums, and whether each GPU fits its own */
    const uint64_t limit = n_gpus == 1 ? gm_gpu_limit(f->plan, 0, o->limit, o->gpu_limits) : n_gpus ? 0 : o->limit;
    bool limited = false;
    for (uint32_t g = 0; n_gpus > 1 && g < n_gpus; g++) limited |= gm_gpu_limit(f->plan, g, o->limit, o->gpu_limits) != 0;
    gm_totals t = gm_plan_totals(f->plan);
    char text[320], a[32], b[32], c[32], d[32], e[32], planner[64];
    uint64_t llama, planned, cpu_llama, cpu_planned;
    bool gpu = gm_plan_has_gpu(f->plan);
    ggufmap_planner_format(&ggufmap_plan_options(f->plan)->planner, planner, sizeof planner);
    snprintf(text, sizeof text, "mapped by llama.cpp: %s in %u buffer%s (own %s, foreign %s); by %s: %s in %u range%s; "
                                "allocated (copied): %s",
             gm_fmt_bytes(a, sizeof a, t.span), t.n_mapped, t.n_mapped == 1 ? "" : "s", gm_fmt_bytes(b, sizeof b, t.own),
             gm_fmt_bytes(c, sizeof c, t.foreign), planner, gm_fmt_bytes(d, sizeof d, t.planned), t.n_ranges,
             t.n_ranges == 1 ? "" : "s", gm_fmt_bytes(e, sizeof e, t.allocated));
    label(f->out, 20, f->y + 12, "font-size=\"12\"", text);
    ggufmap_plan_working_set(f->plan, &llama, &planned);
    ggufmap_plan_cpu_side(f->plan, &cpu_llama, &cpu_planned);
    label(f->out, 20, f->y + 32, "font-size=\"12\" font-weight=\"bold\"",
          gpu ? "GPU working set (page-aligned; KV cache and compute buffers not included)"
              : "memory, no GPU (every buffer, page-aligned; KV cache and compute buffers not included)");
    const bool llama_over = limited ? !ggufmap_plan_fits_limits(f->plan, NULL, o->limit, o->gpu_limits, false)
                                    : limit && llama > limit;
    const bool planned_over = limited ? !ggufmap_plan_fits_limits(f->plan, NULL, o->limit, o->gpu_limits, true)
                                      : limit && planned > limit;
    verdict_text(text, sizeof text, "llama.cpp today", llama, limit);
    if (limited) snprintf(text + strlen(text), sizeof text - strlen(text), " on %u GPUs, %s", n_gpus,
                          llama_over ? "a GPU EXCEEDS its limit" : "each FITS under its limit");
    label(f->out, 36, f->y + 50, llama_over ? "font-size=\"12\" fill=\"#b00000\"" : "font-size=\"12\"", text);
    char who[96];
    snprintf(who, sizeof who, "ggufmap loader (%s)", planner);
    verdict_text(text, sizeof text, who, planned, limit);
    if (limited) snprintf(text + strlen(text), sizeof text - strlen(text), " on %u GPUs, %s", n_gpus,
                          planned_over ? "a GPU EXCEEDS its limit" : "each FITS under its limit");
    label(f->out, 36, f->y + 66, planned_over ? "font-size=\"12\" fill=\"#b00000\"" : "font-size=\"12\"", text);
    f->y += 74;
    if (!gpu) return;
    bool metal = gm_plan_unified(f->plan);
    snprintf(text, sizeof text, "CPU side: llama.cpp %s, loader %s%s", gm_fmt_bytes(a, sizeof a, cpu_llama),
             gm_fmt_bytes(b, sizeof b, cpu_planned), metal ? " (on a Mac, in the same unified memory)" : "");
    label(f->out, 36, f->y + 10, "font-size=\"12\"", text);
    f->y += 18;
}

static double swatch(FILE *out, double x, double y, const char *fill, const char *extra, const char *text) {
    rect(out, x, y - 10, 14, 12, fill, extra);
    label(out, x + 19, y, "font-size=\"11\"", text);
    return x + 19 + 6.2 * (double)strlen(text) + 16; /* about 6.2 px a character at 11 px */
}

static void legend(figure *f) {
    bool used[GM_PAINT_COUNT] = {false};
    char name[48];
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(f->pl); c++)
        used[gm_context_paint(ggufmap_placement_context(f->pl, c))] = true;
    double x = 20, y = f->y + 18;
    label(f->out, x, y, "font-size=\"11\" font-weight=\"bold\"", "legend:");
    x += 52;
    const ggufmap_device d = ggufmap_placement_options(f->pl)->device;
    for (gm_paint k = 0; k < GM_PAINT_COUNT; k++)
        if (used[k]) x = swatch(f->out, x, y, gm_paint_rgb(k), NULL, gm_paint_name(k, d, name, sizeof name));
    x = swatch(f->out, x, y, FOREIGN_RGB, NULL, "foreign bytes in a span");
    x = swatch(f->out, x, y, EMPTY_RGB, NULL, "header, padding");
    swatch(f->out, x, y, UNUSED_RGB, NULL, "tensor llama.cpp does not create");
    y += 18;
    x = swatch(f->out, 72, y, "#ffffff", "stroke=\"#333333\" stroke-width=\"1.5\"",
               "llama.cpp's span (one per buffer and file)");
    swatch(f->out, x, y, "#333333", NULL, "the planner's ranges");
    f->y = y + 12;
}

void ggufmap_report_svg(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    figure f = {out, plan, ggufmap_plan_placement(plan), ggufmap_placement_model(ggufmap_plan_placement(plan)), 0, 0};
    uint32_t n = ggufmap_model_n_shards(f.m);
    uint64_t longest = 1;
    double shards_h = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint64_t size = ggufmap_source_file_size(ggufmap_model_shard(f.m, s));
        if (size > longest) longest = size;
        shards_h += shard_height(&f, s);
    }
    f.scale = BAR_W / (double)longest;
    double height = 86 + 24 + shards_h + 92 + 50;
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                 "font-family=\"%s\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            FIG_WIDTH, height, FIG_WIDTH, height, FONT);
    title(&f);
    ruler(&f, longest, f.y + 24 + shards_h - 10);
    for (uint32_t s = 0; s < n; s++) shard(&f, s);
    totals(&f, o);
    legend(&f);
    fprintf(out, "</svg>\n");
}

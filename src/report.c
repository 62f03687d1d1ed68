/*
 * report.c - a plan for people (text and a picture per shard), for scripts
 * (JSON "ggufmap.plan/1"), for diffing with the oracle (buffer lines), and as
 * SVG.
 *
 * The picture.  Each shard is drawn as a strip of cells; a cell stands for
 * file_size / width bytes and shows the context that owns most bytes in it
 * (a letter per context, '.' for bytes no tensor owns: header, padding).
 * Under it, one row per mapped buffer of that shard: '=' where llama.cpp
 * maps (its span), and a second row with '#' where the planner maps.  On a
 * terminal the span row is green over the buffer's own tensors and red over
 * foreign ones.
 */
#include <stdlib.h>
#include <string.h>

#include "ggufmap/report.h"
#include "internal.h"
#include "json.h"

#define ANSI_RESET "\033[0m"
#define ANSI_RED "\033[31m"
#define ANSI_GREEN "\033[32m"
#define ANSI_DIM "\033[2m"

static const char *context_colors[] = {"\033[36m", "\033[33m", "\033[35m", "\033[34m", "\033[32m", "\033[31m"};

void ggufmap_report_opts_init(ggufmap_report_opts *o) {
    memset(o, 0, sizeof *o);
    o->width = 96;
    o->top_foreign = 5;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A letter per context: G for the GPU type, C CPU, R CPU_REPACK, H CUDA_Host,
 * L the lazy CPU context. */
static char context_letter(const ggufmap_context *c) {
    if (c->lazy) return 'L';
    if (strcmp(c->buft, "CPU") == 0) return 'C';
    if (strcmp(c->buft, "CPU_REPACK") == 0) return 'R';
    if (strcmp(c->buft, "CUDA_Host") == 0) return 'H';
    return 'G';
}

static const char *context_label(const ggufmap_context *c, char *buf, size_t cap) {
    snprintf(buf, cap, "%s%s", c->buft, c->lazy ? " (lazy)" : "");
    return buf;
}

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

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
/* The picture                                                               */
/* ------------------------------------------------------------------------ */

/* For shard s: per cell, the context owning most bytes (-1: none, -2: a
 * tensor llama.cpp does not create). */
static void shard_cells(const ggufmap_plan *plan, uint32_t s, uint32_t width, int *cell_owner) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    uint32_t nc = ggufmap_placement_n_contexts(pl);
    uint64_t size = ggufmap_source_file_size(ggufmap_model_shard(m, s));
    uint64_t *bytes = calloc((size_t)width * (nc + 1), sizeof *bytes);
    if (!bytes || size == 0) {
        for (uint32_t c = 0; c < width; c++) cell_owner[c] = -1;
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
        int best = -1;
        uint64_t most = 0;
        for (uint32_t k = 0; k <= nc; k++)
            if (bytes[(size_t)c * (nc + 1) + k] > most) {
                most = bytes[(size_t)c * (nc + 1) + k];
                best = k == nc ? -2 : (int)k;
            }
        cell_owner[c] = best;
    }
    free(bytes);
}

static bool cell_in(uint64_t first, uint64_t last, uint32_t c, uint32_t width, uint64_t size) {
    uint64_t c0 = c * size / width, c1 = (c + 1) * size / width;
    return first < c1 && last > c0 && last > first;
}

static void picture(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    bool color = (o->flags & GGUFMAP_REPORT_COLOR) != 0;
    uint32_t width = o->width ? o->width : 96;
    int *cells = malloc(width * sizeof *cells);
    char buf[64], label[64];
    if (!cells) return;
    fprintf(out, "\npicture (one strip per shard; ");
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++)
        fprintf(out, "%c = %s, ", context_letter(ggufmap_placement_context(pl, c)),
                context_label(ggufmap_placement_context(pl, c), label, sizeof label));
    fprintf(out, ". = no tensor; '=' llama.cpp maps, '#' the planner maps)\n");
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        uint64_t size = ggufmap_source_file_size(src);
        bool any = false;
        for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
            const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
            any |= b->mapped && b->shard == s;
        }
        if (!any || size == 0) continue;
        fprintf(out, "\n  shard %u  %s  %s, a cell = %s\n", s, base_name(ggufmap_source_path(src)),
                gm_fmt_bytes(buf, sizeof buf, size), gm_fmt_bytes(label, sizeof label, size / width));
        shard_cells(plan, s, width, cells);
        fprintf(out, "  %-14s |", "tensors");
        for (uint32_t c = 0; c < width; c++) {
            char ch = cells[c] == -1 ? '.' : cells[c] == -2 ? '?' : context_letter(ggufmap_placement_context(pl, (uint32_t)cells[c]));
            if (color && cells[c] >= 0)
                fprintf(out, "%s%c" ANSI_RESET, context_colors[cells[c] % 6], ch);
            else
                fputc(ch, out);
        }
        fprintf(out, "|\n");
        for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
            const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
            if (!b->mapped || b->shard != s) continue;
            fprintf(out, "  %-14s |", b->name);
            for (uint32_t c = 0; c < width; c++) {
                if (!cell_in(b->first, b->last, c, width, size)) {
                    fputc(' ', out);
                } else if (color) {
                    bool own = cells[c] == (int)b->context;
                    fprintf(out, "%s=" ANSI_RESET, own ? ANSI_GREEN : ANSI_RED);
                } else {
                    fputc('=', out);
                }
            }
            fprintf(out, "| llama.cpp %s\n", gm_fmt_mib(buf, sizeof buf, b->size));
            fprintf(out, "  %-14s |", "");
            for (uint32_t c = 0; c < width; c++) {
                bool in = false;
                for (uint32_t k = 0; k < b->n_ranges && !in; k++)
                    in = cell_in(b->ranges[k].first, b->ranges[k].last, c, width, size);
                fputc(in ? '#' : ' ', out);
            }
            fprintf(out, "| planned %s in %u range%s\n", gm_fmt_mib(buf, sizeof buf, b->ranges_bytes), b->n_ranges,
                    b->n_ranges == 1 ? "" : "s");
        }
    }
    free(cells);
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */
/* ------------------------------------------------------------------------ */

typedef struct totals {
    uint64_t span, own, foreign, planned, allocated, span_resident, planned_resident;
    uint32_t n_mapped, n_ranges;
} totals;

static totals sum_up(const ggufmap_plan *plan) {
    totals t = {0};
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

static void describe_placement(FILE *out, const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    int32_t n = ggufmap_placement_n_layers(pl), first = -1, count = 0;
    for (int32_t il = 0; il < n; il++)
        if (ggufmap_placement_layer_on_gpu(pl, il)) {
            if (first < 0) first = il;
            count++;
        }
    bool output = ggufmap_placement_layer_on_gpu(pl, n);
    int32_t nextn = ggufmap_placement_n_layers_nextn(pl);
    fprintf(out, "architecture: %s; layers: %d + output", ggufmap_placement_arch(pl), n);
    if (nextn)
        fprintf(out, " (the last %d MTP/NextN, %s)", nextn,
                ggufmap_placement_load_mtp(pl) ? "created: load_mtp" : "skipped without load_mtp");
    fprintf(out, "; on the GPU: ");
    if (count == 0 && !output) fprintf(out, "none");
    if (count > 0) fprintf(out, "layers %d..%d", first, first + count - 1);
    if (output) fprintf(out, "%sthe output layer", count > 0 ? " and " : "");
    fprintf(out, "; CPU_REPACK rules: %s\n", ggufmap_cpu_name(ggufmap_placement_cpu(pl)));
}

/* One line of the verdict: "  LABEL: BYTES  FITS under / EXCEEDS the limit of L by D". */
static void verdict_line(FILE *out, const char *label, uint64_t bytes, uint64_t limit) {
    char a[64], b[64], c[64];
    fprintf(out, "  %-22s: %s", label, gm_fmt_mib(a, sizeof a, bytes));
    if (limit)
        fprintf(out, "  %s the limit of %s by %s", bytes <= limit ? "FITS under" : "EXCEEDS",
                gm_fmt_mib(b, sizeof b, limit), gm_fmt_mib(c, sizeof c, bytes <= limit ? limit - bytes : bytes - limit));
    fputc('\n', out);
}

/* A heading, then llama.cpp's working set and the planner's. */
static void verdict_lines(FILE *out, const char *heading, const ggufmap_plan *plan, uint64_t llama, uint64_t planned,
                          uint64_t limit) {
    fprintf(out, "\n%s\n", heading);
    verdict_line(out, "llama.cpp today", llama, limit);
    char label[64], pn[48];
    snprintf(label, sizeof label, "loader, %s", ggufmap_planner_format(&ggufmap_plan_options(plan)->planner, pn, sizeof pn));
    verdict_line(out, label, planned, limit);
}

static void verdict(FILE *out, const ggufmap_plan *plan, uint64_t limit) {
    uint64_t llama, planned;
    ggufmap_plan_working_set(plan, &llama, &planned);
    verdict_lines(out, "working set (GPU buffers, page-aligned; KV cache and compute buffers not included)", plan, llama,
                  planned, limit);
}

static void text(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    const ggufmap_plan_opts *po = ggufmap_plan_options(plan);
    char a[64], b[64], c[64], pn[64], label[64];
    fprintf(out, "model: %s (%u shard%s)\n", ggufmap_source_path(ggufmap_model_shard(m, 0)), ggufmap_model_n_shards(m),
            ggufmap_model_n_shards(m) == 1 ? "" : "s");
    describe_placement(out, plan);
    if (ggufmap_placement_warning(pl)[0]) fprintf(out, "warning: %s\n", ggufmap_placement_warning(pl));

    fprintf(out, "\nllama.cpp v0.5.0 would print:\n");
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *bf = ggufmap_plan_buffer(plan, i);
        fprintf(out, "  load_tensors: %12s model buffer size = %8.2f MiB\n", bf->name,
                (double)bf->size / 1024.0 / 1024.0);
    }

    ggufmap_planner_format(&po->planner, pn, sizeof pn);
    fprintf(out, "\nbuffers (planner %s%s%s)\n", pn, po->page > 1 ? ", page " : "",
            po->page > 1 ? gm_fmt_bytes(a, sizeof a, po->page) : "");
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *bf = ggufmap_plan_buffer(plan, i);
        const ggufmap_context *ctx = ggufmap_placement_context(pl, bf->context);
        if (!bf->mapped) {
            fprintf(out, "  #%u %-12s allocated %s for %lld tensors (copied from the file, not mapped)\n", i, bf->name,
                    gm_fmt_mib(a, sizeof a, bf->size), (long long)bf->n_tensors);
            continue;
        }
        fprintf(out, "  #%u %-12s shard %u [%llu, %llu)%s\n", i, bf->name, bf->shard, (unsigned long long)bf->first,
                (unsigned long long)bf->last, ctx->lazy ? " lazy" : "");
        fprintf(out, "      span %s, own %s in %lld tensor%s, inflation %.2fx\n", gm_fmt_mib(a, sizeof a, bf->size),
                gm_fmt_mib(b, sizeof b, bf->own_bytes), (long long)bf->n_tensors, bf->n_tensors == 1 ? "" : "s",
                ratio(bf->size, bf->own_bytes));
        if (bf->n_foreign) {
            fprintf(out, "      foreign: %s in %u tensor%s", gm_fmt_mib(a, sizeof a, bf->foreign_bytes), bf->n_foreign,
                    bf->n_foreign == 1 ? "" : "s");
            uint32_t shown = bf->n_foreign < o->top_foreign ? bf->n_foreign : o->top_foreign;
            for (uint32_t k = 0; k < shown; k++) {
                const ggufmap_foreign *f = &bf->foreign[k];
                const ggufmap_tensor *t = ggufmap_model_tensor(m, f->tensor);
                fprintf(out, "%s%.*s %s (%s)", k ? ", " : ": ", (int)t->name_len, t->name,
                        gm_fmt_mib(a, sizeof a, f->bytes),
                        f->owner >= 0 ? context_label(ggufmap_placement_context(pl, (uint32_t)f->owner), label,
                                                      sizeof label)
                                      : "unused");
            }
            fprintf(out, "%s\n", shown < bf->n_foreign ? ", ..." : "");
        } else {
            fprintf(out, "      foreign: none\n");
        }
        fprintf(out, "      %s: %u range%s, %s", pn, bf->n_ranges, bf->n_ranges == 1 ? "" : "s",
                gm_fmt_mib(a, sizeof a, bf->ranges_bytes));
        if (bf->size > bf->ranges_bytes) fprintf(out, " (saves %s)", gm_fmt_mib(b, sizeof b, bf->size - bf->ranges_bytes));
        fputc('\n', out);
        if (po->page > 1 || po->max_buffer)
            fprintf(out, "      page-aligned: span %s in %u view%s, planned %s in %u view%s\n",
                    gm_fmt_mib(a, sizeof a, bf->span_resident), bf->span_views, bf->span_views == 1 ? "" : "s",
                    gm_fmt_mib(c, sizeof c, bf->ranges_resident), bf->ranges_views, bf->ranges_views == 1 ? "" : "s");
    }
    totals t = sum_up(plan);
    fprintf(out, "\ntotals\n");
    fprintf(out, "  mapped by llama.cpp : %s in %u buffer%s (own %s, foreign %s)\n", gm_fmt_mib(a, sizeof a, t.span),
            t.n_mapped, t.n_mapped == 1 ? "" : "s", gm_fmt_mib(b, sizeof b, t.own), gm_fmt_mib(c, sizeof c, t.foreign));
    fprintf(out, "  mapped by %-10s: %s in %u range%s\n", pn, gm_fmt_mib(a, sizeof a, t.planned), t.n_ranges,
            t.n_ranges == 1 ? "" : "s");
    fprintf(out, "  allocated           : %s\n", gm_fmt_mib(a, sizeof a, t.allocated));
    verdict(out, plan, o->limit);
    if (!(o->flags & GGUFMAP_REPORT_NO_PICTURE)) picture(out, plan, o);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

/* One buffer of buffers[]. */
static void json_buffer(json *j, const ggufmap_placement *pl, const ggufmap_buffer *b) {
    const ggufmap_model *m = ggufmap_placement_model(pl);
    const ggufmap_context *ctx = ggufmap_placement_context(pl, b->context);
    json_begin_object(j);
    json_key(j, "name"), json_string(j, b->name);
    json_key(j, "context"), json_uint(j, b->context);
    json_key(j, "lazy"), json_bool(j, ctx->lazy);
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

/* tensors[]: every file tensor and the contexts holding it. */
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

    json_key(j, "buffers");
    json_begin_array(j);
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        json_buffer(j, pl, ggufmap_plan_buffer(plan, i));
    }
    json_end_array(j);

    totals t = sum_up(plan);
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

    uint64_t ws_llama, ws_planned;
    ggufmap_plan_working_set(plan, &ws_llama, &ws_planned);
    json_key(j, "working_set");
    json_begin_object(j);
    json_key(j, "llama"), json_uint(j, ws_llama);
    json_key(j, "planned"), json_uint(j, ws_planned);
    json_key(j, "limit");
    o->limit ? json_uint(j, o->limit) : json_null(j);
    json_key(j, "llama_fits");
    o->limit ? json_bool(j, ws_llama <= o->limit) : json_null(j);
    json_key(j, "planned_fits");
    o->limit ? json_bool(j, ws_planned <= o->limit) : json_null(j);
    json_end_object(j);

    json_tensors(j, plan);
}

/* The ggufmap.plan/1 document: the first load's members at the top, the
 * MTP load's (if any) under "mtp". */
static void json_plan(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp, const ggufmap_report_opts *o) {
    json j;
    json_init(&j, out);
    json_begin_object(&j);
    json_key(&j, "schema"), json_string(&j, "ggufmap.plan/1");
    uint64_t fetched, requests;
    if (ggufmap_model_fetch_stats(ggufmap_placement_model(ggufmap_plan_placement(plan)), &fetched, &requests))
        /* read over HTTP: what it cost */
        json_key(&j, "fetched_bytes"), json_uint(&j, fetched), json_key(&j, "requests"), json_uint(&j, requests);
    json_plan_fields(&j, plan, o);
    json_key(&j, "mtp");
    if (mtp) {
        json_begin_object(&j);
        json_plan_fields(&j, mtp, o);
        json_end_object(&j);
    } else {
        json_null(&j);
    }
    json_end_object(&j);
    json_finish(&j);
}

/* The two loads side by side: what they map together. */
static void both_loads(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp, uint64_t limit) {
    uint64_t a_llama, a_planned, b_llama, b_planned;
    ggufmap_plan_working_set(plan, &a_llama, &a_planned);
    ggufmap_plan_working_set(mtp, &b_llama, &b_planned);
    verdict_lines(out, "both loads together (the MTP head's load beside the model's)", plan, a_llama + b_llama,
                  a_planned + b_planned, limit);
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
    } else {
        if (mtp) fprintf(out, "== load 1 of 2: the model (load_mtp off)\n");
        text(out, plan, o);
        if (!mtp) return;
        fprintf(out, "\n== load 2 of 2: the MTP draft head's load of the same file (load_mtp on)\n");
        text(out, mtp, o);
        both_loads(out, plan, mtp, o->limit);
    }
}

/* ------------------------------------------------------------------------ */
/* SVG                                                                       */
/* ------------------------------------------------------------------------ */

static const char *svg_colors[] = {"#2a9d8f", "#e9c46a", "#9b5de5", "#457b9d", "#8ab17d", "#f4a261"};

void ggufmap_report_svg(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *o) {
    (void)o;
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_model *m = ggufmap_placement_model(pl);
    const double W = 1000.0, left = 150.0, row = 18.0;
    uint32_t rows = 2;
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        rows += 2;
        for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
            const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
            rows += b->mapped && b->shard == s ? 2 : 0;
        }
    }
    char a[64], lb[64];
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"monospace\" "
            "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            left + W + 20, row * (rows + 3));
    double y = row;
    fprintf(out, "<text x=\"4\" y=\"%.1f\">legend:</text>\n", y);
    double x = left;
    for (uint32_t c = 0; c < ggufmap_placement_n_contexts(pl); c++) {
        const ggufmap_context *ctx = ggufmap_placement_context(pl, c);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                x, y - 10, svg_colors[c % 6], x + 16, y, context_label(ctx, lb, sizeof lb));
        x += 140;
    }
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"#d62828\"/><text x=\"%.1f\" y=\"%.1f\">foreign in span</text>\n",
            x, y - 10, x + 16, y);
    y += row * 1.5;
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        double size = (double)ggufmap_source_file_size(src);
        if (size <= 0) continue;
        fprintf(out, "<text x=\"4\" y=\"%.1f\">shard %u (%s)</text>\n", y + 12, s,
                gm_fmt_bytes(a, sizeof a, ggufmap_source_file_size(src)));
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"14\" fill=\"#eeeeee\"/>\n", left, y, W);
        for (int64_t i = 0; i < ggufmap_model_n_tensors(m); i++) {
            const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
            if (t->shard != s) continue;
            int32_t own = ggufmap_plan_tensor_owner(plan, i);
            double tx = left + W * (double)t->offset / size, tw = W * (double)t->size / size;
            fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" fill=\"%s\"><title>%.*s</title></rect>\n",
                    tx, y, tw < 0.3 ? 0.3 : tw, own >= 0 ? svg_colors[own % 6] : "#999999", (int)t->name_len, t->name);
        }
        y += row * 1.2;
        for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
            const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
            if (!b->mapped || b->shard != s) continue;
            double sx = left + W * (double)b->first / size, sw = W * (double)b->size / size;
            fprintf(out, "<text x=\"12\" y=\"%.1f\">%s span</text>\n", y + 11, b->name);
            fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" fill=\"none\" stroke=\"black\"/>\n", sx, y,
                    sw < 0.5 ? 0.5 : sw);
            for (uint32_t k = 0; k < b->n_foreign; k++) {
                const ggufmap_tensor *t = ggufmap_model_tensor(m, b->foreign[k].tensor);
                fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" fill=\"#d62828\" opacity=\"0.8\"/>\n",
                        left + W * (double)t->offset / size, y, W * (double)t->size / size);
            }
            y += row;
            fprintf(out, "<text x=\"12\" y=\"%.1f\">planned</text>\n", y + 11);
            for (uint32_t k = 0; k < b->n_ranges; k++) {
                double rx = left + W * (double)b->ranges[k].first / size;
                double rw = W * (double)(b->ranges[k].last - b->ranges[k].first) / size;
                fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"12\" fill=\"%s\"/>\n", rx, y,
                        rw < 0.5 ? 0.5 : rw, svg_colors[b->context % 6]);
            }
            y += row;
        }
        y += row * 0.8;
    }
    fprintf(out, "</svg>\n");
}

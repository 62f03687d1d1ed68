/*
 * ggufmap/report.h - what a model holds, and what a plan maps, for people and
 * for scripts: text, JSON, a terminal picture and SVG.
 *
 * Stable JSON schemas (fields are only ever added): "ggufmap.inspect/1" and
 * "ggufmap.plan/1", both documented in README.md.
 */
#ifndef GGUFMAP_REPORT_H
#define GGUFMAP_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ggufmap/model.h"
#include "ggufmap/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GGUFMAP_REPORT_JSON = 1u << 0,       /* JSON instead of text */
    GGUFMAP_REPORT_FULL = 1u << 1,       /* inspect: long arrays in full */
    GGUFMAP_REPORT_METADATA = 1u << 2,   /* inspect: key-value pairs in the text */
    GGUFMAP_REPORT_NO_TENSORS = 1u << 3, /* inspect: no per-tensor rows */
    GGUFMAP_REPORT_COLOR = 1u << 4,      /* plan: ANSI colours in the picture */
    GGUFMAP_REPORT_NO_PICTURE = 1u << 5, /* plan: leave the picture out of the text */
    GGUFMAP_REPORT_BUFFER_LINES = 1u << 6 /* plan: only the oracle-format buffer lines */
};

/* `ggufmap inspect`: the summary and tensor table of a model, or its JSON. */
GGUFMAP_API void ggufmap_report_inspect(FILE *out, const ggufmap_model *model, unsigned flags);

/* A next step a plan's report names (`ggufmap plan` works them out): what
 * to do, the command line that does it, and llama.cpp's working set and CPU
 * side once it is done (ggufmap_plan_working_set, ggufmap_plan_cpu_side). */
typedef struct ggufmap_suggestion {
    char what[256];        /* "repack the model: llama.cpp then maps nothing foreign" */
    char command[2048];    /* "ggufmap repack M.gguf --device metal -o M-repacked.gguf" */
    uint64_t working_set;  /* llama.cpp's GPU working set after it */
    uint64_t cpu_side;     /* and its CPU side */
    uint64_t resident;     /* and the weights the RAM holds (ggufmap_plan_resident) */
    uint32_t n_gpus;       /* with several GPUs: each one's working set after it, in -dev's order */
    uint64_t gpu_working_set[GGUFMAP_MAX_GPUS];
} ggufmap_suggestion;

typedef struct ggufmap_report_opts {
    unsigned flags;
    uint64_t limit;       /* working-set limit for a verdict (each GPU's); 0 = none */
    uint64_t gpu_limits[GGUFMAP_MAX_GPUS]; /* per GPU ordinal (CUDA1: [1]): its own limit; 0 = limit's */
    uint64_t mem;         /* the host's RAM: the weights it holds (ggufmap_plan_resident) against it, a
                             second verdict; 0 = none */
    uint32_t width;       /* picture width in cells (default 96) */
    uint32_t top_foreign; /* foreign tensors listed per buffer (default 5) */
    const ggufmap_suggestion *suggestions; /* next steps to print, or NULL */
    uint32_t n_suggestions;
} ggufmap_report_opts;

GGUFMAP_API void ggufmap_report_opts_init(ggufmap_report_opts *opts);

/* `ggufmap plan`: llama.cpp's buffer lines, then per buffer its own bytes,
 * span, inflation, largest foreign tensors and the planner's ranges, the
 * totals, the GPU working set (with its verdict under a limit) and the CPU
 * side, the suggestions, and a picture of every shard.  Sizes adapt their
 * unit; the lines llama.cpp would print keep its MiB.  Shards are numbered
 * from 1 in text, as their file names number them.  With
 * GGUFMAP_REPORT_JSON the "ggufmap.plan/1" document (shards there are
 * 0-based indices); with GGUFMAP_REPORT_BUFFER_LINES one line per buffer in
 * the format of tests/oracle's driver (MAPPED buft=... / ALLOC buft=...). */
GGUFMAP_API void ggufmap_report_plan(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *opts);

/* The same for two loads of one file: plan, the model's load, and mtp, the
 * load llama.cpp makes with load_mtp for an MTP draft head (NULL: as
 * ggufmap_report_plan).  Text: both reports, then what the two map
 * together.  JSON: the first load's document with the second's members
 * under "mtp".  Buffer lines: the second load's after a "LOAD mtp" line, as
 * the oracle prints them with --mtp. */
GGUFMAP_API void ggufmap_report_plan_mtp(FILE *out, const ggufmap_plan *plan, const ggufmap_plan *mtp,
                                         const ggufmap_report_opts *opts);

/* The plan as an SVG figure that stands on its own: a title with the model
 * and the placement, then per shard a bar drawn to one byte scale for all
 * shards (file name, size, tick marks), the tensors coloured by the buffer
 * that owns them, and under it each mapped buffer's span with its foreign
 * bytes marked and the planner's ranges; beside each buffer its figures
 * (llama.cpp's span, own, foreign, planned); then the totals, the verdict
 * and a legend.  Each buffer type has one colour in every picture. */
GGUFMAP_API void ggufmap_report_svg(FILE *out, const ggufmap_plan *plan, const ggufmap_report_opts *opts);

/* ------------------------------------------------------------------------ */
/* Text for people                                                           */
/* ------------------------------------------------------------------------ */

/* "512 B", "3.06 KiB", "103.68 GiB": bytes in the largest binary unit that
 * keeps the number at 1 or more, into buf; returns buf.  The inverse, for
 * sizes people type, is ggufmap_parse_size (types.h). */
GGUFMAP_API const char *ggufmap_format_bytes(char *buf, size_t cap, uint64_t bytes);

/* Names, keys and values come from files and may hold bytes that steer a
 * terminal (ESC and OSC sequences, newlines, bidirectional overrides).  These
 * escape them: printable ASCII and well-formed UTF-8 are kept, C0 controls
 * and DEL become \n, \r, \t or \xNN, C1 controls and bidi overrides \uNNNN,
 * bytes outside well-formed UTF-8 \xNN.  Every text report escapes this way;
 * JSON escapes by JSON's rules instead.
 * ggufmap_escape writes s (n bytes) into buf, whole characters only (cut
 * where cap ends), and returns buf; ggufmap_fputs_escaped writes it all. */
GGUFMAP_API const char *ggufmap_escape(char *buf, size_t cap, const char *s, size_t n);
GGUFMAP_API void ggufmap_fputs_escaped(FILE *out, const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif

/*
 * placement_args.h - llama.cpp's placement flags (-dev, -ts, -sm, -mg, -ngl, -ot,
 * --cpu-moe, --n-cpu-moe, -nr, --cpu, --lazy-mode, --no-mmap, --no-host),
 * --mtp (the MTP draft head's load) and --regex (whose std::regex reads the
 * -ot patterns) as one option group (cli.h) that plan, fit, repack and load
 * share, and the planning options (--planner, --page, --max-buffer) they
 * take.
 *
 * Defaults are the library's per device (ggufmap_preset): the flags record
 * what was given, and placement_args_finish / planning_args_finish put the
 * device's defaults under them once every flag is read.
 */
#ifndef GGUFMAP_TOOLS_PLACEMENT_ARGS_H
#define GGUFMAP_TOOLS_PLACEMENT_ARGS_H

#include <stdbool.h>
#include <stdio.h>

#include "ggufmap/placement.h"
#include "ggufmap/plan.h"
#include "cli.h"

#define PLACEMENT_MAX_OVERRIDES 4096
#define PLACEMENT_MAX_GIVEN 256

enum {
    OPT_DEVICE = 0x1000, OPT_NGL, OPT_OT, OPT_CPU_MOE, OPT_N_CPU_MOE, OPT_NO_REPACK, OPT_CPU, OPT_LAZY,
    OPT_NO_MMAP, OPT_NO_HOST, OPT_MTP, OPT_REGEX, OPT_TS, OPT_SM, OPT_MG,
    OPT_PLANNER = 0x1080, OPT_PAGE, OPT_MAX_BUFFER
};

/* The placement group, for a command's table. */
extern const cli_group placement_group;

/* One placement flag as given, to spell a command line again. */
typedef struct placement_flag {
    int code;
    const char *value; /* points into argv; NULL for a flag without one */
} placement_flag;

typedef struct placement_args {
    ggufmap_placement_opts opts;     /* opts.overrides points into overrides[] */
    ggufmap_override overrides[PLACEMENT_MAX_OVERRIDES];
    char *pool;                      /* the override strings */
    size_t pool_used, pool_cap;
    bool cpu_given;                  /* --cpu was given */
    bool any;                        /* any placement flag but --cpu was given */
    placement_flag given[PLACEMENT_MAX_GIVEN];
    unsigned n_given;
} placement_args;

/* Sets llama.cpp's defaults.  Returns 0, or -1 when out of memory. */
int placement_args_init(placement_args *a);
void placement_args_free(placement_args *a);

/* When code is a placement flag's, applies it with its value and sets
 * *handled.  Returns EXIT_OK, or EXIT_USAGE after printing the error as
 * "ggufmap CMD: ...". */
int placement_args_apply(placement_args *a, int code, const char *value, const char *cmd, bool *handled);

/* A warning when -ngl N (N > 0, or all) was given without --device: llama.cpp
 * built with a GPU backend offloads then, ggufmap's default device is the CPU,
 * so the user probably meant --device metal or cuda.  NULL when there is
 * nothing to say; else the sentence, in buf. */
const char *placement_args_ngl_without_device(const placement_args *a, char *buf, size_t cap);

/* Once all flags are read: the device's defaults (ggufmap_preset) for what
 * was not given (the arm64 repack rules with Metal unless --cpu). */
void placement_args_finish(placement_args *a);

/* The flags as given, spelled for a shell (" --device metal -ngl all"), into
 * buf, leaving out those whose code is in skip (n_skip codes). */
void placement_args_spell(const placement_args *a, const int *skip, size_t n_skip, char *buf, size_t cap);

/* A value quoted for a shell when it needs it ('blk\.0\.=CPU'), into buf. */
const char *shell_quote(const char *value, char *buf, size_t cap);

/* ------------------------------------------------------------------------ */
/* --limit: one for every GPU, or per device                                 */
/* ------------------------------------------------------------------------ */

typedef struct device_limits {
    uint64_t limit;                        /* a bare SIZE: every GPU's not named (0: none) */
    uint64_t gpu[GGUFMAP_MAX_GPUS];        /* per GPU ordinal: CUDA1=12G sets gpu[1] */
    ggufmap_device device;                 /* the backend of the names */
    bool named;                            /* some device was named */
} device_limits;

/* --limit SIZE or D=SIZE[,D=SIZE...] (llama.cpp's device names, any case;
 * a bare SIZE among them is the limit of the GPUs not named) into *l.
 * Returns EXIT_OK or EXIT_USAGE after saying why. */
int device_limits_parse(device_limits *l, const char *cmd, const char *value);

/* Once -dev is read: each device named is a GPU of the run's backend and
 * of -dev's list.  EXIT_OK or EXIT_USAGE. */
int device_limits_check(const device_limits *l, const char *cmd, const ggufmap_placement_opts *o);

/* The limits as the free memory llama.cpp splits layers by when -ts is not
 * given (o->gpu_free per GPU of -dev): a GPU's own limit, else the bare
 * one; left 0 (equal shares) when some GPU has neither. */
void device_limits_split(const device_limits *l, ggufmap_placement_opts *o);

/* Whether any limit was given. */
bool device_limits_any(const device_limits *l);

/* ------------------------------------------------------------------------ */
/* Planning: --planner, --page, --max-buffer                                 */
/* ------------------------------------------------------------------------ */

typedef struct planning_args {
    ggufmap_planner planner;
    uint64_t page, max_buffer;
    const char *page_text;  /* --page as typed */
    bool planner_given, page_given, max_buffer_given;
} planning_args;

#define PLANNER_OPTION                                                                                               \
    {OPT_PLANNER, "--planner", "P", "span coalesce runs tight",                                                   \
     "span | coalesce[:GAP] | runs[:GAP[:MAX]] | tight[:COST[:MAX]] (default tight: the fewest bytes, at most 64 " \
     "ranges a buffer; docs/cli.md: Planners)"}
#define PAGE_OPTION(default_text)                                                                                    \
    {OPT_PAGE, "--page", "SIZE", NULL, "count ranges page-aligned to SIZE, a power of two (default " default_text ")"}
#define MAX_BUFFER_OPTION                                                                                            \
    {OPT_MAX_BUFFER, "--max-buffer", "SIZE", NULL,                                                                \
     "Metal's maxBufferLength: a longer range becomes overlapping views, as ggml_metal_buffer_map makes them"}

/* When code is a planning option's, records it and sets *handled. */
int planning_args_apply(planning_args *p, int code, const char *value, const char *cmd, bool *handled);

/* The device's defaults (ggufmap_preset) with the options given on top. */
void planning_args_finish(const planning_args *p, ggufmap_device device, ggufmap_plan_opts *out);

#endif

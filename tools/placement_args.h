/*
 * placement_args.h - llama.cpp's placement flags (--device, -ngl, -ot,
 * --cpu-moe, --n-cpu-moe, -nr, --cpu, --lazy-mode, --no-mmap, --no-host,
 * --mtp) and --regex (whose std::regex reads the -ot patterns), parsed once
 * for every subcommand that takes them: plan, repack, load.
 */
#ifndef GGUFMAP_TOOLS_PLACEMENT_ARGS_H
#define GGUFMAP_TOOLS_PLACEMENT_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "ggufmap/placement.h"

#define PLACEMENT_MAX_OVERRIDES 4096

typedef struct placement_args {
    ggufmap_placement_opts opts;     /* opts.overrides points into overrides[] */
    ggufmap_override overrides[PLACEMENT_MAX_OVERRIDES];
    char *pool;                      /* the override strings */
    size_t pool_used, pool_cap;
    bool cpu_given;                  /* --cpu was given */
    bool any;                        /* any placement flag but --cpu and --regex was given */
} placement_args;

/* Sets llama.cpp's defaults.  Returns 0, or -1 when out of memory. */
int placement_args_init(placement_args *a);
void placement_args_free(placement_args *a);

/* Fills out (room for cap entries) with the placement flags' long options
 * (their .val codes are reserved to this module), then the command's own
 * n_own options, then the terminating zero entry, for getopt_long_only.
 * Returns 0, or -1 when cap is too small. */
int placement_args_longopts(struct option *out, size_t cap, const struct option *own, size_t n_own);

/* When code is a placement flag's, applies it with its argument and sets
 * *handled.  Returns EXIT_OK, or EXIT_USAGE after printing the error as
 * "ggufmap SUB: ...". */
int placement_args_apply(placement_args *a, int code, const char *arg, const char *sub, bool *handled);

/* What the flags imply once all are read: Metal means Apple Silicon, so the
 * arm64 repack rules unless --cpu said otherwise. */
void placement_args_finish(placement_args *a);

/* The flags' lines for a --help text. */
void placement_args_help(FILE *out);

#endif

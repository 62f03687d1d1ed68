/*
 * util.h - small helpers shared by the subcommands: numbers and sizes from
 * the command line, safe output files, progress lines.
 */
#ifndef GGUFMAP_TOOLS_UTIL_H
#define GGUFMAP_TOOLS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

/* A count: digits only, at most max.  Returns 0, or -1. */
int parse_count(const char *text, long max, long *out);

/* Rules for parse_size_option. */
enum {
    SIZE_ZERO_OK = 1u << 0,     /* a bare 0 is allowed (it means "none") */
    SIZE_POWER_OF_TWO = 1u << 1 /* a page size */
};

/* A size the user typed for option opt: a number and a unit, as 96G, 96GiB
 * (binary), 96GB (decimal), 16K, 512B; a number without a unit is refused
 * (is "96" bytes or gigabytes?).  Above zero unless SIZE_ZERO_OK.  Returns
 * EXIT_OK, or EXIT_USAGE after saying what is wrong. */
int parse_size_option(const char *cmd, const char *opt, const char *text, unsigned rules, uint64_t *out);

/* Writes a new file at path through emit(), the library's way (gm_temp_*):
 * to a temporary name beside it, fsynced, then renamed into place without
 * replacing anything, so an existing path is never overwritten and a
 * failure leaves nothing.  path "-" is standard output.  Returns 0, or
 * -1 with a message in msg. */
int write_output(const char *path, void (*emit)(FILE *f, void *ctx), void *ctx, char *msg, size_t cap);

/* A progress line on stderr for long work: label, bar, bytes done of total,
 * percent, rate and time left.  On a terminal one line redrawn in place (at
 * most ten times a second); elsewhere (--progress into a file or pipe) at
 * most one line a second, and the last.  The rate is the average since the
 * start, and the time left is shown once there is half a second of it ("--"
 * before), so the first figures are not wild.  progress_show has the
 * signature of the library's progress callbacks; ctx is a progress_line. */
typedef struct progress_line {
    const char *label;
    bool tty;
    double start, last_draw;
    bool ended;
} progress_line;
void progress_show(void *ctx, uint64_t done, uint64_t total);

/* A progress line for label on stderr, on a terminal or not. */
progress_line progress_start(const char *label);

#endif

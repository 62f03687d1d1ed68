/*
 * util.h - small helpers shared by the subcommands.
 */
#ifndef GGUFMAP_TOOLS_UTIL_H
#define GGUFMAP_TOOLS_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of every subcommand. */
enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_BAD_INPUT = 2 };

/* Prints "ggufmap SUB: MSG" on stderr and a hint to --help; returns EXIT_USAGE. */
int usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes a new file at path through emit(), the library's way (gm_temp_*):
 * to a temporary name beside it, fsynced, then renamed into place without
 * replacing anything, so an existing path is never overwritten and a
 * failure leaves nothing.  Returns 0, or -1 with a message in msg. */
int write_output(const char *path, void (*emit)(FILE *f, void *ctx), void *ctx, char *msg, size_t cap);

struct option;
/* Fills out (room for cap entries) with the n_first options of first, then
 * the n_second of second, then getopt's terminating zero entry.  Returns how
 * many options it wrote (the zero entry not counted), or -1 when cap is too
 * small.  How a module lends its options to a command's getopt table. */
int longopts_join(struct option *out, size_t cap, const struct option *first, size_t n_first,
                  const struct option *second, size_t n_second);

/* "1.50 GiB": bytes in the largest binary unit that keeps the value >= 1. */
const char *human_bytes(char *buf, size_t cap, uint64_t bytes);

/* A progress line on stderr for long work: label, bar, bytes done of total,
 * percent, rate and ETA.  On a TTY one line redrawn in place; elsewhere (a
 * pipe, --progress) at most one line a second.  progress_show has the
 * signature of the library's progress callbacks; ctx is a progress_line. */
typedef struct progress_line {
    const char *label;
    bool tty;
    double start;
    long last_second;
} progress_line;
void progress_show(void *ctx, uint64_t done, uint64_t total);

#endif

/*
 * util.h - small helpers shared by the subcommands.
 */
#ifndef GGUFMAP_TOOLS_UTIL_H
#define GGUFMAP_TOOLS_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Exit statuses of every subcommand. */
enum { EXIT_OK = 0, EXIT_USAGE = 1, EXIT_BAD_INPUT = 2 };

/* "1.50 GiB", "512 B": a human size into buf. Returns buf. */
const char *fmt_bytes(char *buf, size_t cap, uint64_t bytes);
/* "47674.92 MiB": bytes as llama.cpp prints buffer sizes. Returns buf. */
const char *fmt_mib(char *buf, size_t cap, uint64_t bytes);
/* Parses "96G", "512M", "1.5GiB", "4096": bytes. Returns 0 or -1. */
int parse_size(const char *s, uint64_t *out);
/* Prints "ggufmap SUB: MSG" on stderr and a hint to --help; returns EXIT_USAGE. */
int usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

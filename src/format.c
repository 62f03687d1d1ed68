/*
 * format.c - sizes for people ("1.50 GiB", llama.cpp's "%8.2f MiB") and from
 * people ("96G", "512MiB", "64MB").
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "ggufmap/types.h"

#include "internal.h"

const char *gm_fmt_bytes(char *buf, size_t cap, uint64_t bytes) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

const char *gm_fmt_mib(char *buf, size_t cap, uint64_t bytes) {
    snprintf(buf, cap, "%.2f MiB", (double)bytes / 1024.0 / 1024.0);
    return buf;
}

int ggufmap_parse_size(const char *s, uint64_t *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    double mul = 1;
    if (*end) {
        static const struct { const char *suffix; double mul; } suffixes[] = {
            {"", 1},     {"B", 1},       {"K", 1024.0},  {"KiB", 1024.0}, {"KB", 1e3},
            {"M", 1048576.0}, {"MiB", 1048576.0}, {"MB", 1e6}, {"G", 1073741824.0}, {"GiB", 1073741824.0},
            {"GB", 1e9}, {"T", 1099511627776.0}, {"TiB", 1099511627776.0}, {"TB", 1e12},
        };
        size_t i;
        for (i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
            if (strcasecmp(end, suffixes[i].suffix) == 0) break;
        if (i == sizeof suffixes / sizeof suffixes[0]) return -1;
        mul = suffixes[i].mul;
    }
    double bytes = v * mul;
    if (bytes >= 18446744073709551615.0) return -1;
    *out = (uint64_t)bytes;
    return 0;
}


/*
 * util.c - usage errors, safe output files and progress lines for the
 * subcommands.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h" /* the library's temporary-file path and clock */
#include "util.h"

int usage_error(const char *sub, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "ggufmap %s: ", sub);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'ggufmap %s --help'.\n", sub);
    return EXIT_USAGE;
}

int write_output(const char *path, void (*emit)(FILE *f, void *ctx), void *ctx, char *msg, size_t cap) {
    gm_tempfile out;
    ggufmap_error err;
    int rc = gm_temp_create(&out, path, &err);
    /* emit writes through its own descriptor, so that closing the FILE
     * leaves out.fd to gm_temp_commit (fsync, rename without replacing). */
    int fd = rc ? -1 : dup(out.fd);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!rc && !f) rc = gm_fail_errno(&err, errno, "%s: cannot write", path);
    if (f) {
        emit(f, ctx);
        bool failed = fflush(f) != 0 || ferror(f);
        int e = errno;
        if (fclose(f) != 0 || failed) rc = gm_fail_errno(&err, failed ? e : errno, "%s: write failed", path);
    } else if (fd >= 0) {
        close(fd);
    }
    if (!rc) rc = gm_temp_commit(&out, &err);
    gm_temp_discard(&out);
    if (rc) snprintf(msg, cap, "%s", err.message);
    return rc ? -1 : 0;
}

int longopts_join(struct option *out, size_t cap, const struct option *first, size_t n_first,
                  const struct option *second, size_t n_second) {
    if (n_first + n_second + 1 > cap) return -1;
    memcpy(out, first, n_first * sizeof *first);
    memcpy(out + n_first, second, n_second * sizeof *second);
    memset(&out[n_first + n_second], 0, sizeof *out);
    return (int)(n_first + n_second);
}

const char *human_bytes(char *buf, size_t cap, uint64_t bytes) {
    double v = (double)bytes;
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    while (v >= 1024 && i < 4) v /= 1024, i++;
    snprintf(buf, cap, i ? "%.2f %s" : "%.0f %s", v, u[i]);
    return buf;
}

void progress_show(void *ctx, uint64_t done, uint64_t total) {
    progress_line *p = ctx;
    double now = (double)gm_now_ns() / 1e9;
    if (p->start == 0) p->start = now;
    bool end = done >= total;
    if (!p->tty) { /* a log, not an animation */
        if ((long)now == p->last_second && !end) return;
        p->last_second = (long)now;
    }
    double el = now - p->start, rate = el > 0 ? (double)done / el : 0;
    double eta = rate > 0 ? (double)(total - done) / rate : 0;
    char a[32], b[32], c[32], bar[31];
    int width = 30, fill = total ? (int)((double)done / (double)total * width) : width;
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "%s%-6s [%s] %s / %s %3.0f%% %s/s ETA %.0fs%s", p->tty ? "\r" : "", p->label, bar,
            human_bytes(a, sizeof a, done), human_bytes(b, sizeof b, total),
            total ? 100.0 * (double)done / (double)total : 100.0, human_bytes(c, sizeof c, (uint64_t)rate), eta,
            p->tty ? "\033[K" : "\n");
    if (p->tty && end) fputc('\n', stderr);
    fflush(stderr);
}

/*
 * util.c - numbers and sizes from the command line, safe output files and
 * progress lines for the subcommands.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ggufmap/report.h"
#include "ggufmap/types.h"
#include "internal.h" /* the library's temporary files and clock */
#include "util.h"

/* ------------------------------------------------------------------------ */
/* Numbers and sizes                                                         */
/* ------------------------------------------------------------------------ */

int parse_count(const char *text, long max, long *out) {
    char *end;
    if (text[0] < '0' || text[0] > '9') return -1;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (*end || errno || n > max) return -1;
    *out = n;
    return 0;
}

int parse_size_option(const char *cmd, const char *opt, const char *text, unsigned rules, uint64_t *out) {
    char *end;
    double number = strtod(text, &end);
    bool zero = end != text && number == 0 && *end == '\0';
    if (zero && (rules & SIZE_ZERO_OK)) {
        *out = 0;
        return EXIT_OK;
    }
    if (end != text && *end == '\0')
        return cli_usage_error(cmd, "%s %s: a size needs a unit: %sG or %sGiB (binary), %sGB (decimal), K, M, T, B",
                               opt, text, text, text, text);
    if (ggufmap_parse_size(text, out) != GGUFMAP_OK)
        return cli_usage_error(cmd, "%s %s: expected a size such as 96G, 512MiB, 64MB or 16K", opt, text);
    if (*out == 0) return cli_usage_error(cmd, "%s %s: must be above zero", opt, text);
    if ((rules & SIZE_POWER_OF_TWO) && (*out & (*out - 1)))
        return cli_usage_error(cmd, "%s %s: %llu bytes is not a power of two (pages are: 4K, 16K, 64K)", opt, text,
                               (unsigned long long)*out);
    return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* Output files                                                              */
/* ------------------------------------------------------------------------ */

int write_output(const char *path, void (*emit)(FILE *f, void *ctx), void *ctx, char *msg, size_t cap) {
    if (strcmp(path, "-") == 0) {
        emit(stdout, ctx);
        if (fflush(stdout) == 0 && !ferror(stdout)) return 0;
        snprintf(msg, cap, "cannot write standard output: %s", strerror(errno));
        return -1;
    }
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

/* ------------------------------------------------------------------------ */
/* Progress                                                                  */
/* ------------------------------------------------------------------------ */

static double monotonic_s(void) { return (double)gm_now_ns() / 1e9; }

progress_line progress_start(const char *label) {
    progress_line p = {.label = label, .tty = isatty(STDERR_FILENO) != 0, .start = monotonic_s(), .last_draw = -1};
    return p;
}

/* "42s", "3m05s", "1h02m". */
static const char *duration(char *buf, size_t cap, double seconds) {
    long s = (long)(seconds + 0.5);
    if (s < 60) snprintf(buf, cap, "%lds", s);
    else if (s < 3600) snprintf(buf, cap, "%ldm%02lds", s / 60, s % 60);
    else snprintf(buf, cap, "%ldh%02ldm", s / 3600, s / 60 % 60);
    return buf;
}

void progress_show(void *ctx, uint64_t done, uint64_t total) {
    progress_line *p = ctx;
    double now = monotonic_s();
    if (p->start == 0) p->start = now;
    bool end = done >= total;
    if (p->ended) return;
    if (!end && p->last_draw >= 0 && now - p->last_draw < (p->tty ? 0.1 : 1.0)) return;
    p->last_draw = now;
    p->ended = end;
    double elapsed = now - p->start, rate = elapsed > 0 ? (double)done / elapsed : 0;
    char a[32], b[32], c[32], left[32], bar[31];
    int width = 30, fill = total ? (int)((double)done / (double)total * width) : width;
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    if (end) snprintf(left, sizeof left, "0s");
    else if (elapsed < 0.5 || done == 0) snprintf(left, sizeof left, "--");
    else duration(left, sizeof left, (double)(total - done) / rate);
    fprintf(stderr, "%s%-6s [%s] %s / %s %3.0f%% %s/s ETA %s%s", p->tty ? "\r" : "", p->label, bar,
            ggufmap_format_bytes(a, sizeof a, done), ggufmap_format_bytes(b, sizeof b, total),
            total ? 100.0 * (double)done / (double)total : 100.0,
            elapsed >= 0.5 || end ? ggufmap_format_bytes(c, sizeof c, (uint64_t)rate) : "--", left,
            p->tty ? "\033[K" : "\n");
    if (p->tty && end) fputc('\n', stderr);
    fflush(stderr);
}

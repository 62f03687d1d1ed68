/*
 * util.c - usage errors and safe output files for the subcommands.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    struct stat st;
    if (lstat(path, &st) == 0) {
        snprintf(msg, cap, "%s: exists; refusing to overwrite it", path);
        return -1;
    }
    size_t n = strlen(path) + 16;
    char *tmp = malloc(n);
    if (!tmp) {
        snprintf(msg, cap, "%s: out of memory", path);
        return -1;
    }
    snprintf(tmp, n, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int rc = -1;
    if (!f) {
        snprintf(msg, cap, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        if (fd >= 0) unlink(tmp);
        free(tmp);
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    emit(f, ctx);
    if (fflush(f) != 0 || ferror(f) || fsync(fd) != 0) {
        snprintf(msg, cap, "%s: write failed: %s", path, strerror(errno));
    } else if (link(tmp, path) != 0) { /* link refuses an existing path: never overwrites */
        snprintf(msg, cap, "%s: cannot create: %s", path, strerror(errno));
    } else {
        rc = 0;
    }
    fclose(f);
    unlink(tmp);
    free(tmp);
    return rc;
}

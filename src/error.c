/*
 * error.c - the error record: status names and message formatting.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *ggufmap_status_name(int status) {
    switch (status) {
    case GGUFMAP_OK: return "ok";
    case GGUFMAP_EFORMAT: return "format";
    case GGUFMAP_EIO: return "io";
    case GGUFMAP_ENOMEM: return "nomem";
    case GGUFMAP_EINVAL: return "invalid-argument";
    case GGUFMAP_EEXIST: return "exists";
    case GGUFMAP_ENOSPC: return "no-space";
    case GGUFMAP_ENOTFOUND: return "not-found";
    default: return "unknown";
    }
}

void ggufmap_error_clear(ggufmap_error *err) {
    if (err) {
        err->status = GGUFMAP_OK;
        err->sys_errno = 0;
        err->message[0] = '\0';
    }
}

int gm_fail(ggufmap_error *err, int status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->status = status;
        err->sys_errno = 0;
    }
    return status;
}

int gm_fail_errno(ggufmap_error *err, int sys_errno, const char *fmt, ...) {
    int status = sys_errno == ENOSPC || sys_errno == EDQUOT ? GGUFMAP_ENOSPC
               : sys_errno == EEXIST                        ? GGUFMAP_EEXIST
               : sys_errno == ENOMEM                        ? GGUFMAP_ENOMEM
               : sys_errno == ENOENT                        ? GGUFMAP_ENOTFOUND
                                                            : GGUFMAP_EIO;
    if (err) {
        char head[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(head, sizeof head, fmt, ap);
        va_end(ap);
        snprintf(err->message, sizeof err->message, "%s: %s", head, strerror(sys_errno));
        err->status = status;
        err->sys_errno = sys_errno;
    }
    return status;
}

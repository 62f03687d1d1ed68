/*
 * fileout.c - how every output file is put in place: a temporary file beside
 * the target is renamed onto it only if the target does not exist, then the
 * folder is synced.  Shared by the writer and repack.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

int gm_place_file(const char *tmp, const char *path, ggufmap_error *err) {
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return GGUFMAP_OK;
    if (errno != EINVAL && errno != ENOSYS) return gm_fail_errno(err, errno, "%s: cannot rename into place", path);
#endif
    /* No RENAME_NOREPLACE on this file system: link() refuses an existing path too. */
    if (link(tmp, path) != 0) return gm_fail_errno(err, errno, "%s: cannot link into place", path);
    unlink(tmp);
    return GGUFMAP_OK;
}

void gm_sync_parent(const char *path) {
    char *dir = strdup(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash) {
        *(slash == dir ? slash + 1 : slash) = '\0';
        d = dir;
    }
    int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

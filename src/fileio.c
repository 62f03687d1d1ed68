/*
 * fileio.c - the file I/O the writer, hash and repack share:
 *   - positioned reads and writes that go on until every byte is moved (a
 *     pread or pwrite may move fewer bytes than asked, or be interrupted);
 *   - where the data of a sparse file lies (SEEK_DATA / SEEK_HOLE), and the
 *     runs of whole chunks that hold data, which is how the sparse digest
 *     and repack skip holes without reading them;
 *   - how every output file is put in place: a temporary file beside the
 *     target is renamed onto it only if the target does not exist, then the
 *     folder is synced.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

int gm_pread_full(int fd, void *buf, size_t n, uint64_t pos) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(pos + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return GM_SHORT_FILE;
        got += (size_t)r;
    }
    return 0;
}

int gm_pwrite_full(int fd, const void *buf, size_t n, uint64_t pos) {
    size_t put = 0;
    while (put < n) {
        ssize_t r = pwrite(fd, (const uint8_t *)buf + put, n - put, (off_t)(pos + put));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return ENOSPC;
        put += (size_t)r;
    }
    return 0;
}

uint64_t gm_next_data(int fd, uint64_t pos, uint64_t end) {
    off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
    if (d < 0) return errno == ENXIO ? end : pos;
    return (uint64_t)d > end ? end : (uint64_t)d;
}

uint64_t gm_next_hole(int fd, uint64_t pos, uint64_t end) {
    off_t h = lseek(fd, (off_t)pos, SEEK_HOLE);
    if (h < 0 || (uint64_t)h <= pos) return end;
    return (uint64_t)h > end ? end : (uint64_t)h;
}

bool gm_next_data_run(int fd, uint64_t base, uint64_t end, uint64_t chunk, uint64_t pos, uint64_t *start,
                      uint64_t *stop) {
    uint64_t d = gm_next_data(fd, pos, end);
    if (d >= end) return false;
    uint64_t s = base + (d - base) / chunk * chunk;
    uint64_t e = base + (gm_next_hole(fd, d, end) - base + chunk - 1) / chunk * chunk;
    *start = s < pos ? pos : s;
    *stop = e > end ? end : e;
    return true;
}

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

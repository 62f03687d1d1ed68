/*
 * fileio.c - the file I/O the writer, hash and repack share:
 *   - positioned reads and writes that go on until every byte is moved (a
 *     pread or pwrite may move fewer bytes than asked, or be interrupted);
 *   - the runs of whole chunks of a sparse file that hold data (where the
 *     data lies is the portability layer's to say: os.h), which is how the
 *     sparse digest and repack skip holes without reading them;
 *   - how every output file is made (internal.h, gm_temp_*): a temporary
 *     file beside the target, created with mode 0666 under the umask,
 *     written, fsynced, renamed onto the target only if the target does not
 *     exist, then the folder is synced; removed on any failure;
 *   - whether an input is still the file that was opened (gm_file_identity:
 *     device, inode, size, modification time), so that a file truncated,
 *     rewritten or replaced while a command reads it is an error instead of
 *     a digest or a copy of two files mixed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "os.h"

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

bool gm_next_data_run(int fd, uint64_t base, uint64_t end, uint64_t chunk, uint64_t pos, uint64_t *start,
                      uint64_t *stop) {
    uint64_t d = gm_os_next_data(fd, pos, end);
    if (d >= end) return false;
    uint64_t s = base + (d - base) / chunk * chunk;
    uint64_t e = base + (gm_os_next_hole(fd, d, end) - base + chunk - 1) / chunk * chunk;
    *start = s < pos ? pos : s;
    *stop = e > end ? end : e;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Inputs that change underneath                                             */
/* ------------------------------------------------------------------------ */

static void identity_of(const struct stat *st, gm_file_identity *id) {
    *id = (gm_file_identity){.known = true, .dev = (uint64_t)st->st_dev, .ino = (uint64_t)st->st_ino,
                             .size = (uint64_t)st->st_size, .mtime_s = (int64_t)st->st_mtim.tv_sec,
                             .mtime_ns = st->st_mtim.tv_nsec};
}

void gm_file_identity_read(int fd, gm_file_identity *id) {
    struct stat st;
    if (fstat(fd, &st) == 0) identity_of(&st, id);
    else *id = (gm_file_identity){.known = false};
}

int gm_file_check_unchanged(const char *path, int fd, const gm_file_identity *was, ggufmap_error *err) {
    if (!was->known) return GGUFMAP_OK;
    gm_file_identity now = {.known = false}, named = {.known = false};
    gm_file_identity_read(fd, &now);
    struct stat st;
    if (stat(path, &st) == 0) identity_of(&st, &named);
    const char *why = " (the result would mix two files; nothing is trusted)";
    if (!now.known) return gm_fail_errno(err, errno, "%s: cannot check that it did not change while being read", path);
    if (now.size != was->size)
        return gm_fail(err, GGUFMAP_EIO, "%s: changed while being read: its size went from %llu to %llu bytes%s", path,
                       (unsigned long long)was->size, (unsigned long long)now.size, why);
    if (now.mtime_s != was->mtime_s || now.mtime_ns != was->mtime_ns)
        return gm_fail(err, GGUFMAP_EIO, "%s: changed while being read: it was written to (modification time)%s",
                       path, why);
    if (!named.known || named.dev != was->dev || named.ino != was->ino)
        return gm_fail(err, GGUFMAP_EIO, "%s: changed while being read: the path %s%s", path,
                       named.known ? "names another file now (replaced)" : "no longer exists (removed or renamed)",
                       why);
    return GGUFMAP_OK;
}

#ifdef GGUFMAP_TEST_HOOKS
void gm_test_input_read(const char *path) {
    const char *what = getenv("GGUFMAP_TEST_INPUT_CHANGE"), *which = getenv("GGUFMAP_TEST_INPUT_FILE");
    if (!what || (which && strcmp(which, path) != 0)) return;
    if (strncmp(what, "truncate:", 9) == 0) {
        if (truncate(path, (off_t)strtoull(what + 9, NULL, 10)) != 0) perror("test hook: truncate");
    } else if (strncmp(what, "write:", 6) == 0) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        uint8_t b = 0;
        off_t at = (off_t)strtoull(what + 6, NULL, 10);
        if (fd < 0 || pread(fd, &b, 1, at) != 1 || (b ^= 0x5a, pwrite(fd, &b, 1, at) != 1)) perror("test hook: write");
        if (fd >= 0) close(fd);
    } else if (strncmp(what, "replace:", 8) == 0) {
        rename(what + 8, path); /* fails harmlessly once done */
    }
}
#endif

/* ------------------------------------------------------------------------ */
/* Temporary file -> fsync -> into place                                     */
/* ------------------------------------------------------------------------ */

/* Six letters or digits for a temporary name (mkstemp's alphabet). */
static void random_suffix(char out[7]) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint8_t r[6];
    if (!gm_os_random(r, sizeof r)) {
        uint64_t x = gm_now_ns() ^ ((uint64_t)getpid() << 32);
        for (int i = 0; i < 6; i++, x >>= 8) r[i] = (uint8_t)(x * 2654435761u >> 24);
    }
    for (int i = 0; i < 6; i++) out[i] = alphabet[r[i] % (sizeof alphabet - 1)];
    out[6] = '\0';
}

int gm_temp_create(gm_tempfile *t, const char *path, ggufmap_error *err) {
    t->path = path;
    t->fd = -1;
    struct stat st;
    if (lstat(path, &st) == 0) {
        t->tmp = NULL;
        return gm_fail_errno(err, EEXIST, "%s: exists; refusing to overwrite it", path);
    }
    size_t cap = strlen(path) + 16;
    t->tmp = malloc(cap);
    if (!t->tmp) return gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory", path);
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        random_suffix(suffix);
        snprintf(t->tmp, cap, "%s.tmp-%s", path, suffix);
        /* 0666: the kernel takes the umask off, as for any new file. */
        t->fd = open(t->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (t->fd >= 0) return GGUFMAP_OK;
        if (errno != EEXIST) break;
    }
    int e = errno;
    free(t->tmp);
    t->tmp = NULL;
    return gm_fail_errno(err, e, "%s: cannot create a temporary file beside it", path);
}

int gm_temp_sync_close(gm_tempfile *t, ggufmap_error *err) {
    if (t->fd < 0) return GGUFMAP_OK;
    int fd = t->fd, e;
    t->fd = -1;
    if ((e = gm_os_fsync(fd)) != 0) {
        close(fd);
        return gm_fail_errno(err, e, "%s: fsync", t->tmp);
    }
    if (close(fd) != 0) return gm_fail_errno(err, errno, "%s: close", t->tmp);
    return GGUFMAP_OK;
}

int gm_temp_commit(gm_tempfile *t, ggufmap_error *err) {
    int rc = gm_temp_sync_close(t, err);
    if (!rc) rc = gm_place_file(t->tmp, t->path, err);
    if (rc) return rc;
    free(t->tmp);
    t->tmp = NULL; /* placed: nothing to remove */
    gm_sync_parent(t->path);
    return GGUFMAP_OK;
}

void gm_temp_discard(gm_tempfile *t) {
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    if (t->tmp) unlink(t->tmp);
    free(t->tmp);
    t->tmp = NULL;
}

int gm_place_file(const char *tmp, const char *path, ggufmap_error *err) {
    int e = gm_os_rename_noreplace(tmp, path);
    return e ? gm_fail_errno(err, e, "%s: cannot rename into place", path) : GGUFMAP_OK;
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

uint64_t gm_page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096;
}

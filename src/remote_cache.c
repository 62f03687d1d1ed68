/*
 * remote_cache.c - header bytes of remote files kept on disk, so that a
 * second look at a model (another placement, another command) costs one small
 * request per shard, or none offline.
 *
 * One file per URL in the cache folder, named by the URL's 64-bit FNV-1a
 * hash ("<16 hex digits>.gguf-header"):
 *
 *   ggufmap-header-cache 2\n
 *   url <the URL, credentials removed>\n
 *   etag <the server's ETag, or nothing>\n
 *   modified <the server's Last-Modified, or nothing>\n
 *   size <bytes of the whole remote file>\n
 *   bytes <n>\n
 *   \n
 *   <the file's first n bytes>
 *
 * The URL is stored so that a hash collision reads as a miss.  An entry is
 * used only after the server answered 304 to If-None-Match with its ETag,
 * or, for a file served without one, to If-Modified-Since with its
 * Last-Modified (or offline); version 1 entries (no Last-Modified) are
 * misses; its bytes then go through the reader's checks like any others,
 * so a damaged or planted entry is at worst a file the reader refuses.
 * Entries are replaced through a temporary file and a rename, so a reader
 * never sees half of one.  An entry is opened as a model file is: only a
 * regular file, never through a symbolic link, and without waiting (a FIFO
 * planted in the folder is a miss, not a hang).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "remote_internal.h"

#define CACHE_MAGIC "ggufmap-header-cache 2"

static char *entry_path(const char *dir, const char *url) {
    size_t n = strlen(dir) + 40;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%016" PRIx64 ".gguf-header", dir, gm_hash_bytes(url, strlen(url)));
    return p;
}

/* Creates dir and its parents (mode 0700: what was fetched with a token
 * stays the user's). */
static int make_dirs(const char *dir) {
    char *p = strdup(dir);
    if (!p) return ENOMEM;
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s != '\0') continue;
        char keep = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) rc = errno;
        *s = keep;
        if (!keep) break;
    }
    free(p);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */
/* ------------------------------------------------------------------------ */

/* Reads "NAME VALUE\n" into value (room for cap); false on anything else. */
static bool read_field(FILE *f, const char *name, char *value, size_t cap) {
    char line[4096];
    if (!fgets(line, sizeof line, f)) return false;
    size_t n = strlen(name), len = strlen(line);
    if (len == 0 || line[len - 1] != '\n' || strncmp(line, name, n) != 0 || line[n] != ' ') return false;
    line[len - 1] = '\0';
    if (len - n - 1 > cap) return false;
    memcpy(value, line + n + 1, len - n - 1);
    return true;
}

static bool read_u64_field(FILE *f, const char *name, uint64_t *v) {
    char text[32], *end;
    if (!read_field(f, name, text, sizeof text)) return false;
    errno = 0;
    unsigned long long x = strtoull(text, &end, 10);
    *v = x;
    return end != text && !*end && errno == 0;
}

/* The entry at path opened for reading with the checks a model file gets
 * (source.c): a FIFO, a device, a directory or a symbolic link planted in
 * the cache is no entry, and opening it must not wait (a FIFO's open
 * blocks until a writer comes: O_NONBLOCK).  NULL: no usable entry. */
static FILE *open_entry(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
    struct stat st;
    if (fd < 0) return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) close(fd);
    return f;
}

bool gm_cache_load(const char *dir, const char *url, uint64_t max, gm_cache_entry *e) {
    memset(e, 0, sizeof *e);
    char *path = entry_path(dir, url);
    FILE *f = path ? open_entry(path) : NULL;
    free(path);
    if (!f) return false;
    char magic[64], stored_url[4096], etag[1024], modified[256], blank[4];
    bool ok = fgets(magic, sizeof magic, f) && strcmp(magic, CACHE_MAGIC "\n") == 0 &&
              read_field(f, "url", stored_url, sizeof stored_url) && strcmp(stored_url, url) == 0 &&
              read_field(f, "etag", etag, sizeof etag) && read_field(f, "modified", modified, sizeof modified) &&
              read_u64_field(f, "size", &e->size) &&
              read_u64_field(f, "bytes", &e->n) && e->n <= max && e->n <= e->size && fgets(blank, sizeof blank, f) &&
              strcmp(blank, "\n") == 0;
    if (ok) {
        e->etag = strdup(etag);
        e->modified = strdup(modified);
        e->bytes = malloc(e->n ? e->n : 1);
        ok = e->etag && e->modified && e->bytes && fread(e->bytes, 1, e->n, f) == e->n;
    }
    fclose(f);
    if (!ok) gm_cache_entry_free(e);
    return ok;
}

void gm_cache_entry_free(gm_cache_entry *e) {
    free(e->etag);
    free(e->modified);
    free(e->bytes);
    memset(e, 0, sizeof *e);
}

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

int gm_cache_store(const char *dir, const char *url, const char *etag, const char *modified, uint64_t size,
                   const uint8_t *bytes, uint64_t n, ggufmap_error *err) {
    int e = make_dirs(dir);
    if (e) return gm_fail_errno(err, e, "cache %s: cannot create the folder", dir), -1;
    char *path = entry_path(dir, url);
    size_t cap = path ? strlen(path) + 16 : 0;
    char *tmp = path ? malloc(cap) : NULL;
    if (!tmp) {
        free(path);
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory"), -1;
    }
    snprintf(tmp, cap, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    int rc = -1;
    if (!f) {
        gm_fail_errno(err, errno, "cache %s: cannot create a file", dir);
        if (fd >= 0) close(fd);
    } else {
        fprintf(f, CACHE_MAGIC "\nurl %s\netag %s\nmodified %s\nsize %" PRIu64 "\nbytes %" PRIu64 "\n\n", url, etag,
                modified, size, n);
        bool written = fwrite(bytes, 1, n, f) == n && fflush(f) == 0 && fsync(fd) == 0;
        int saved = errno;
        fclose(f);
        if (!written)
            gm_fail_errno(err, saved, "cache %s: cannot write", tmp);
        else if (rename(tmp, path) != 0) /* replacing the older entry is the point */
            gm_fail_errno(err, errno, "cache %s: cannot rename into place", path);
        else
            rc = 0;
    }
    if (rc) unlink(tmp);
    free(tmp);
    free(path);
    return rc;
}

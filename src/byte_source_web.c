/*
 * byte_source_web.c - the byte sources of the browser build (make web): a
 * model on a server, whose bytes the browser fetches, and a file picked from
 * disk, read in slices.  Only the web build compiles this file; it stands in
 * for remote.c, remote_http.c and remote_cache.c (libcurl) and for the
 * mapped local file of source.c, behind the same interfaces
 * (remote_internal.h, byte_source.h), so that the reader, the model module,
 * hf:// names (remote_url.c) and -hf (remote_hf.c) run unchanged.
 *
 * Data structure.  A file (web_file) is a gm_byte_source whose bytes live in
 * one buffer that starts at 1 MiB and doubles, up to min(size, header
 * limit), as the header goes on.  wasm has no address space to reserve, so
 * the buffer may move when it grows; the reader then parses again from byte
 * 0 over the same bytes (byte_source.h), which costs no request and keeps
 * memory to about twice the header (a 256 MiB buffer per shard would take a
 * 20-shard model past wasm's 4 GiB).  A session (ggufmap_remote) lists the files tied to
 * it, as remote.c's does.  The transport is the browser's, in the page's
 * worker (web/library_ggufmap.js calls web/worker.js): one GET at a time per
 * file, answered by fetch() with its body read as a stream, or a slice of a
 * File; the wasm waits for it suspended (Asyncify), so this code reads as
 * plain sequential C.  A file's id in the worker is its address.
 *
 * Workload.  The requests of the command line (remote.h): the first 64 KiB,
 * then what the reader needs, at least as much again as it has (a header of
 * H bytes costs at most 2 H + 64 KiB); the shards of a split model asked for
 * at once (gm_remote_prefetch starts them, the browser runs them in
 * parallel); a server that ignores Range read as a stream only while the
 * reader needs more, then cancelled, so the model is never downloaded.  A
 * picked file is read the same way, in slices, and so is a file of the
 * page's own file system (repack's dry run, behind plan's advice, reads its
 * scratch headers back from /tmp, where web/library_ggufmap.js keeps sparse
 * files).
 *
 * Fidelity.  Answers are checked as remote.c checks them: a 206 must start
 * where asked, end inside the range asked and say the file's size; a 200
 * must say its length; size and ETag must not change; a body must be
 * complete; 429 and 5xx are retried with remote.c's waits; the messages use
 * remote.c's words.  Redirects are the browser's to follow (no token is ever
 * sent, so none can leak); a server must allow the page's origin (CORS) and
 * expose Content-Range (docs/web.md).
 */
#include <emscripten.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "remote_internal.h"

#define MAX_REQUESTS_PER_FILE 100 /* as remote.c: a server dribbling bytes meets this */
#define LOCAL_MAX_HEADER (256ull << 20) /* a picked file's header limit: remote.h's default */

/* ------------------------------------------------------------------------ */
/* The browser's side (web/library_ggufmap.js)                               */
/* ------------------------------------------------------------------------ */

/* An answer's status line and headers, as the worker fills them.  Numbers
 * are doubles (exact to 2^53 bytes), at the offsets the worker writes. */
typedef struct gm_web_answer {
    double range_first, range_last, range_total; /* Content-Range: bytes first-last/total */
    double length;                               /* Content-Length */
    double retry_after_s;                        /* Retry-After, -1 when none */
    int32_t status;                              /* 0: no answer came (message says why) */
    int32_t has_range;                           /* a Content-Range the page could read */
    int32_t total_known;                         /* its total was not '*' */
    int32_t has_length;
    int32_t from_page_cache;                     /* answered from bytes this page fetched before */
    int32_t pad;
    char etag[256];                              /* "" when none */
    char message[512];                           /* status 0: why */
} gm_web_answer;

_Static_assert(offsetof(gm_web_answer, status) == 40 && offsetof(gm_web_answer, etag) == 64 &&
                   offsetof(gm_web_answer, message) == 320,
               "web/library_ggufmap.js writes the answer at these offsets");

/* Sends a GET for url (Range: bytes=start-(end-1), none when end is 0) and
 * waits for its status and headers.  Returns 0 with *a filled (a->status 0
 * when no answer came: network, CORS, timeout), or -1 when the page has no
 * transport at all. */
int gm_js_request(int32_t id, const char *url, double start, double end, double timeout_s, gm_web_answer *a);
/* Starts that request without waiting: a gm_js_request with the same
 * arguments takes its answer. */
void gm_js_prefetch(int32_t id, const char *url, double start, double end, double timeout_s);
/* Up to cap bytes of the answer's body into dst, waiting for them: how many,
 * 0 at its end, -1 when it broke (why in msg). */
int32_t gm_js_read(int32_t id, uint8_t *dst, int32_t cap, char *msg, int32_t msg_cap);
/* Drops the answer of file id: its stream cancelled, nothing more read. */
void gm_js_stop(int32_t id);
/* The size of the picked file called name, or -1 when none was picked. */
double gm_js_file_size(const char *name);
/* Bytes [start, start + n) of the picked file into dst: n, or -1 (why in msg). */
int32_t gm_js_file_read(const char *name, uint8_t *dst, double start, int32_t n, char *msg, int32_t msg_cap);

/* ------------------------------------------------------------------------ */
/* Files and sessions                                                        */
/* ------------------------------------------------------------------------ */

struct ggufmap_remote {
    ggufmap_remote_opts o;
    char *endpoint;               /* without a trailing slash */
    struct web_file *files;       /* every file still tied to the session */
    uint64_t fetched, requests;
};

typedef struct web_file {
    gm_byte_source bs;            /* first: what the reader sees */
    ggufmap_remote *r;            /* NULL once the session ended, and for a picked file */
    struct web_file *next;
    char *name;                   /* as asked for: hf://, a URL, or a picked file's name */
    char *shown;                  /* name without credentials, for messages */
    char *url;                    /* name resolved: where the requests go */
    char etag[256];               /* the first answer's ETag ("" when none) */
    bool local;                   /* a picked file, read in slices */
    bool whole;                   /* a small resource read in full, without Range */
    bool claimed;                 /* taken by an open (else a prefetch) */
    bool answered;                /* the first answer is in: size known */
    bool failed;                  /* bs.err says why */
    bool in_body;                 /* an answer's body is being read */
    uint8_t *buf;                 /* [0, have) of the file, in `reserved` bytes */
    uint64_t reserved;            /* doubles up to limit; growing may move buf */
    uint64_t max_bytes;           /* most bytes read from this file */
    uint64_t want;                /* the reader waits for [0, want) */
    long status;                  /* of the answer being read */
    uint64_t asked_start, asked_end; /* its range (end 0: none) */
    uint64_t body_at;             /* file offset of its next body byte */
    uint64_t body_end;            /* where its body ends (206: last + 1; 200: the size) */
    uint64_t body_bytes;          /* read of it so far */
} web_file;

static int32_t id_of(const web_file *f) { return (int32_t)(uintptr_t)f; }

/* file_fail(f, status, fmt, ...) and log_line(r, fmt, ...): remote_rules.c's,
 * for this file's structures. */
#define file_fail(f, status, ...) gm_remote_file_fail(&(f)->bs.err, &(f)->failed, (f)->shown, status, __VA_ARGS__)
#define log_line(r, ...) gm_remote_log((r) ? &(r)->o : NULL, __VA_ARGS__)

/* One line per answer, as remote.c's --verbose lines. */
static void log_answer(web_file *f, const gm_web_answer *a) {
    char range[64] = "";
    char *where = gm_url_for_log(f->url);
    if (f->asked_end > f->asked_start)
        snprintf(range, sizeof range, " bytes=%" PRIu64 "-%" PRIu64, f->asked_start, f->asked_end - 1);
    log_line(f->r, "GET %s%s -> %ld%s", where ? where : "?", range, (long)a->status,
             a->from_page_cache ? " (from this page's copy of the bytes)" : "");
    free(where);
}

/* ------------------------------------------------------------------------ */
/* The bytes                                                                 */
/* ------------------------------------------------------------------------ */

#define FIRST_BUFFER (1u << 20) /* a header's first buffer; it doubles as the header goes on */

/* Makes the buffer hold [0, min(end, limit)), doubling it.  Growing may move
 * it: the reader then parses again over the same bytes (byte_source.h). */
static bool reserve(web_file *f, uint64_t end) {
    if (end > f->bs.limit) end = f->bs.limit;
    if (end <= f->reserved && f->buf) return true;
    uint64_t cap = f->reserved * 2 > end ? f->reserved * 2 : end;
    if (cap < FIRST_BUFFER) cap = FIRST_BUFFER;
    if (cap > f->bs.limit) cap = f->bs.limit;
    uint8_t *grown = cap < SIZE_MAX ? realloc(f->buf, (size_t)(cap ? cap : 1)) : NULL;
    if (!grown) return file_fail(f, GGUFMAP_ENOMEM, "cannot allocate %" PRIu64 " bytes for the header", cap);
    f->buf = grown;
    f->bs.base = grown;
    f->reserved = cap;
    return true;
}

/* The first answer told the size: at most min(size, max_bytes) is read. */
static bool set_size(web_file *f, uint64_t size, const char *etag) {
    f->bs.size = size;
    f->bs.limit = size < f->max_bytes ? size : f->max_bytes;
    snprintf(f->etag, sizeof f->etag, "%s", etag);
    f->answered = true;
    return reserve(f, 0);
}

/* f has [0, end), or all it will ever have. */
static bool has(const web_file *f, uint64_t end) {
    return f->answered && (f->bs.have >= end || f->bs.have >= f->bs.limit);
}

/* The range of the next request (remote_rules.c). */
static void next_range(const web_file *f, uint64_t first_range, uint64_t *start, uint64_t *end) {
    gm_remote_reading r = {f->whole, f->answered, f->bs.have, f->want, f->bs.limit, f->max_bytes, first_range};
    gm_remote_next_range(&r, start, end);
}

/* ------------------------------------------------------------------------ */
/* A local file: picked from disk, or in the page's own file system          */
/* ------------------------------------------------------------------------ */

/* Bytes [start, start + n) of f: a picked file through the worker, a file
 * of the page's file system (repack's scratch headers in /tmp) with pread.
 * Returns the bytes read, or 0 with why in msg. */
static uint64_t local_read(web_file *f, uint64_t start, uint64_t n, char *msg, size_t cap) {
    if (f->bs.fd < 0) {
        if (n > INT32_MAX) n = (uint64_t)INT32_MAX & ~(uint64_t)0xFFFF;
        int32_t got = gm_js_file_read(f->name, f->buf + start, (double)start, (int32_t)n, msg, (int32_t)cap);
        if (got == 0) snprintf(msg, cap, "no bytes");
        return got > 0 ? (uint64_t)got : 0;
    }
    int e = gm_pread_full(f->bs.fd, f->buf + start, (size_t)n, start);
    if (e) snprintf(msg, cap, "%s", e == GM_SHORT_FILE ? "the file is shorter than it was" : strerror(e));
    return e ? 0 : n;
}

/* Reads slices as remote files are read (next_range): never the file whole. */
static bool local_fetch(gm_byte_source *bs, uint64_t end) {
    web_file *f = (web_file *)bs;
    f->want = end;
    while (!f->failed && !has(f, end)) {
        uint64_t start, stop;
        char msg[256] = "";
        next_range(f, 64 * 1024, &start, &stop);
        if (!reserve(f, stop)) return false;
        uint64_t got = local_read(f, start, stop - start, msg, sizeof msg);
        if (!got) return file_fail(f, GGUFMAP_EIO, "read at offset %" PRIu64 ": %s", start, msg);
        f->bs.have += got;
        f->bs.fetched += got;
        f->bs.requests++;
    }
    return !f->failed;
}

static void web_close(gm_byte_source *bs);

static const gm_byte_source_ops local_ops = {"file", local_fetch, NULL, web_close};

/* A file of the page's own file system, as source.c opens a local one. */
static int fs_open(const char *path, double *size, int *fd, ggufmap_error *err) {
    struct stat st;
    if ((*fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
        return gm_fail_errno(err, errno, "%s: cannot open", path);
    if (fstat(*fd, &st) != 0) return gm_fail_errno(err, errno, "%s: cannot stat", path);
    if (!S_ISREG(st.st_mode)) return gm_fail(err, GGUFMAP_EIO, "%s: not a regular file", path);
    *size = (double)st.st_size;
    return GGUFMAP_OK;
}

int gm_web_file_open(const char *path, gm_byte_source **out, ggufmap_error *err) {
    *out = NULL;
    int fd = -1, rc = GGUFMAP_OK;
    double size = gm_js_file_size(path);
    if (size < 0) rc = fs_open(path, &size, &fd, err);
    web_file *f = rc ? NULL : calloc(1, sizeof *f);
    if (!rc && (!f || !(f->name = strdup(path)) || !(f->shown = strdup(path))))
        rc = gm_fail(err, GGUFMAP_ENOMEM, "%s: out of memory", path);
    if (rc) {
        if (f) web_close(&f->bs);
        else if (fd >= 0) close(fd);
        return rc;
    }
    f->bs.ops = &local_ops;
    f->bs.fd = fd;
    f->local = f->claimed = true;
    f->max_bytes = LOCAL_MAX_HEADER;
    if (!set_size(f, (uint64_t)size, "")) {
        if (err) *err = f->bs.err;
        rc = f->bs.err.status;
        web_close(&f->bs);
        return rc;
    }
    *out = &f->bs;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Answers                                                                   */
/* ------------------------------------------------------------------------ */

/* The same file as before?  Size and ETag must not change between answers. */
static bool same_file(web_file *f, uint64_t size, const char *etag) {
    char why[700];
    if (f->answered && gm_remote_changed(f->bs.size, f->etag, "", size, etag, "", why, sizeof why))
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    return f->answered || set_size(f, size, etag);
}

/* A 206: its range must start where we asked; its total is the size.  A
 * Content-Range the page cannot read is a server that does not expose it. */
static bool begin_partial(web_file *f, const gm_web_answer *a) {
    uint64_t first = (uint64_t)a->range_first, last = (uint64_t)a->range_last;
    char why[300];
    if (!a->has_range)
        return file_fail(f, GGUFMAP_EIO,
                         "asked for bytes %" PRIu64 "-%" PRIu64 ", the server sent no Content-Range the page can "
                         "read (CORS: the server must expose it, Access-Control-Expose-Headers: Content-Range)",
                         f->asked_start, f->asked_end - 1);
    if (gm_remote_bad_range(f->asked_start, f->asked_end, true, first, last, a->total_known, why, sizeof why))
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    f->body_at = first;
    f->body_end = last + 1;
    return same_file(f, (uint64_t)a->range_total, a->etag);
}

/* A 200: the whole file from byte 0 (the server ignored Range). */
static bool begin_whole(web_file *f, const gm_web_answer *a) {
    if (!f->whole && !a->has_length)
        return file_fail(f, GGUFMAP_EIO, "the server ignored the range and did not say how large the file is");
    f->body_at = 0;
    if (f->whole && !a->has_length) { /* read to the end, as far as max_bytes */
        f->body_end = UINT64_MAX;
        return f->answered || set_size(f, f->max_bytes, a->etag);
    }
    f->body_end = (uint64_t)a->length;
    return same_file(f, (uint64_t)a->length, a->etag);
}

/* 429 and 5xx: wait as remote.c waits (remote_rules.c), or give up.  True
 * when it is worth asking again. */
static bool retry_wait(web_file *f, const gm_web_answer *a, uint32_t *tries) {
    const ggufmap_remote_opts *o = &f->r->o;
    uint64_t wait_ns;
    char why[200];
    if (!gm_remote_retry_wait(a->status, ++*tries, a->retry_after_s >= 0 ? (long)a->retry_after_s : -1, o, 0, &wait_ns,
                              why, sizeof why))
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    log_line(f->r, "retrying %s in %.2f s (HTTP %ld, try %u of %u)", f->shown, (double)wait_ns / 1e9, (long)a->status,
             *tries + 1, o->retries + 1);
    emscripten_sleep((unsigned)(wait_ns / 1000000));
    return true;
}

/* An answer that ends the exchange: an empty file, or an error in the
 * command line's words (the page sends no token). */
static bool settle_final(web_file *f, const gm_web_answer *a) {
    if (a->status == 416 && a->total_known && a->range_total == 0 && !f->answered)
        return set_size(f, 0, a->etag); /* an empty file: the reader says it is too short */
    char why[900];
    int status = gm_remote_refusal(a->status, f->url,
                                   "the page sends no token: use the command line with --hf-token or HF_TOKEN",
                                   f->asked_start, f->asked_end, a->total_known, why, sizeof why);
    return file_fail(f, status, "%s", why);
}

/* Asks for the next range and waits for an answer whose body can be read
 * (retrying 429 and 5xx).  True when one is there (or an empty file ended
 * the exchange). */
static bool ask(web_file *f) {
    const ggufmap_remote_opts *o = &f->r->o;
    uint32_t tries = 0;
    for (;;) {
        if (f->bs.requests >= MAX_REQUESTS_PER_FILE)
            return file_fail(f, GGUFMAP_EIO, "gave up after %d requests (the server sends too little per answer)",
                             MAX_REQUESTS_PER_FILE);
        gm_web_answer a;
        memset(&a, 0, sizeof a);
        next_range(f, o->first_range, &f->asked_start, &f->asked_end);
        f->bs.requests++;
        f->r->requests++;
        if (gm_js_request(id_of(f), f->url, (double)f->asked_start, (double)f->asked_end, (double)o->timeout_s, &a) != 0)
            return file_fail(f, GGUFMAP_EIO, "this page has no network transport");
        if (a.status == 0) return file_fail(f, GGUFMAP_EIO, "%s", a.message[0] ? a.message : "no answer");
        log_answer(f, &a);
        f->status = a.status;
        f->body_bytes = 0;
        if (a.status == 206 && !f->whole) return (f->in_body = begin_partial(f, &a));
        if (a.status == 200) return (f->in_body = begin_whole(f, &a));
        gm_js_stop(id_of(f));
        if (a.status >= 200 && a.status < 300)
            return file_fail(f, GGUFMAP_EIO, "unexpected HTTP %ld to a GET%s", (long)a.status, f->whole ? "" : " with a range");
        if (a.status == 429 || (a.status >= 500 && a.status < 600)) {
            if (!retry_wait(f, &a, &tries)) return false;
            continue;
        }
        if (!settle_final(f, &a)) return false;
        return true; /* an empty file: answered, with no body */
    }
}

/* The body being read has ended: was all of it there? */
static bool body_ended(web_file *f) {
    f->in_body = false;
    if (f->status == 206 && f->body_at != f->body_end)
        return file_fail(f, GGUFMAP_EIO, "the answer ended after %" PRIu64 " of bytes %" PRIu64 "-%" PRIu64 " (truncated)",
                         f->body_bytes, f->asked_start, f->body_end - 1);
    if (f->status == 200 && f->body_end == UINT64_MAX) { /* read to the end: now the size is known */
        f->bs.size = f->bs.limit = f->bs.have;
    } else if (f->status == 200 && f->body_at < f->body_end) {
        return file_fail(f, GGUFMAP_EIO, "the answer ended after %" PRIu64 " of %" PRIu64 " bytes (truncated)",
                         f->body_bytes, f->body_end);
    }
    return true;
}

/* Reads the body on: a 206 or a small resource whole, a 200 that streams
 * the whole file only as far as the reader wants; bytes before `have` (a
 * 200 after a 206) are skipped. */
static bool read_body(web_file *f) {
    uint8_t skip_buf[16384];
    char msg[256] = "";
    uint64_t have = f->bs.have;
    bool skipping = f->body_at < have;
    /* what to hold after this read: a 206 whole (as remote.c reads it), a
       small resource as far as it goes, a streaming 200 only as far as wanted */
    uint64_t target = f->whole ? (have < f->reserved ? f->reserved : have + 1)
                    : f->status == 206 ? f->body_end : (f->want > have ? f->want : have + 1);
    if (!skipping && !reserve(f, target)) return false;
    uint64_t cap = skipping ? (have - f->body_at < sizeof skip_buf ? have - f->body_at : sizeof skip_buf)
                            : (target < f->reserved ? target : f->reserved) - have;
    if (f->body_end != UINT64_MAX && cap > f->body_end - f->body_at) cap = f->body_end - f->body_at;
    if (cap == 0) { /* at the limit: nothing more can be used */
        if (f->whole && f->body_at < f->body_end)
            return file_fail(f, GGUFMAP_EIO, "larger than %" PRIu64 " bytes", f->max_bytes);
        gm_js_stop(id_of(f));
        f->in_body = false;
        return true;
    }
    if (cap > (1u << 30)) cap = 1u << 30;
    int32_t got = gm_js_read(id_of(f), skipping ? skip_buf : f->buf + have, (int32_t)cap, msg, (int32_t)sizeof msg);
    if (got < 0) return file_fail(f, GGUFMAP_EIO, "the answer broke off after %" PRIu64 " body bytes: %s", f->body_bytes, msg);
    if (got == 0) return body_ended(f);
    f->body_at += (uint64_t)got;
    f->body_bytes += (uint64_t)got;
    f->bs.fetched += (uint64_t)got;
    if (f->r) f->r->fetched += (uint64_t)got;
    if (!skipping) f->bs.have += (uint64_t)got;
    if (f->body_at > f->body_end)
        return file_fail(f, GGUFMAP_EIO, "the server sent more than the %" PRIu64 " bytes it announced", f->body_end);
    return true;
}

/* Runs the exchanges until f has [0, end) (or all of a smaller file). */
static bool run_until(web_file *f, uint64_t end) {
    if (end > f->want) f->want = end;
    while (!f->failed && !has(f, end)) {
        if (!f->r) return file_fail(f, GGUFMAP_EIO, "the remote session has ended");
        if (!f->in_body && !ask(f)) return false;
        if (f->in_body && !read_body(f)) return false;
    }
    return !f->failed;
}

/* ------------------------------------------------------------------------ */
/* Remote files as byte sources                                              */
/* ------------------------------------------------------------------------ */

static bool rf_fetch(gm_byte_source *bs, uint64_t end) {
    web_file *f = (web_file *)bs;
    if (run_until(f, end)) return true;
    if (!f->failed) file_fail(f, GGUFMAP_EIO, "no bytes past %" PRIu64, f->bs.have);
    return false;
}

/* The header is parsed: stop reading (a streaming 200 is cancelled here). */
static void rf_parsed(gm_byte_source *bs, uint64_t header_end) {
    web_file *f = (web_file *)bs;
    (void)header_end;
    gm_js_stop(id_of(f));
    f->in_body = false;
}

static void unlink_file(web_file *f) {
    if (!f->r) return;
    for (web_file **p = &f->r->files; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    f->r = NULL;
}

static void web_close(gm_byte_source *bs) {
    web_file *f = (web_file *)bs;
    if (!f->local) gm_js_stop(id_of(f));
    if (f->bs.fd >= 0) close(f->bs.fd);
    unlink_file(f);
    free(f->buf);
    free(f->name);
    free(f->shown);
    free(f->url);
    free(f);
}

static const gm_byte_source_ops remote_ops = {"http", rf_fetch, rf_parsed, web_close};

static web_file *file_new(ggufmap_remote *r, const char *name, bool whole, uint64_t max_bytes, ggufmap_error *err) {
    web_file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(name)) || !(f->shown = gm_url_redacted(name))) {
        if (f) web_close(&f->bs);
        gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        return NULL;
    }
    f->bs.ops = &remote_ops;
    f->bs.fd = -1;
    f->whole = whole;
    f->max_bytes = max_bytes;
    if (gm_url_resolve(r->endpoint, name, &f->url, err) != GGUFMAP_OK) {
        web_close(&f->bs);
        return NULL;
    }
    f->r = r;
    f->next = r->files;
    r->files = f;
    return f;
}

static web_file *find_prefetch(ggufmap_remote *r, const char *name) {
    for (web_file *f = r->files; f; f = f->next)
        if (!f->claimed && strcmp(f->name, name) == 0) return f;
    return NULL;
}

static int open_file(ggufmap_remote *r, const char *name, bool whole, uint64_t max, web_file **out,
                     ggufmap_error *err) {
    if (r->o.offline) return gm_fail(err, GGUFMAP_ENOTFOUND, "%s: the page keeps no cache on disk (offline)", name);
    web_file *f = find_prefetch(r, name);
    if (!f && !(f = file_new(r, name, whole, max, err))) return err ? err->status : GGUFMAP_ENOMEM;
    f->claimed = true;
    if (!ask(f)) { /* the first answer: the size is known on return */
        int rc = f->bs.err.status;
        if (err) *err = f->bs.err;
        web_close(&f->bs);
        return rc;
    }
    *out = f;
    return GGUFMAP_OK;
}

int gm_remote_open(ggufmap_remote *r, const char *url, gm_byte_source **out, ggufmap_error *err) {
    web_file *f;
    int rc = open_file(r, url, false, r->o.max_header, &f, err);
    *out = rc ? NULL : &f->bs;
    return rc;
}

void gm_remote_prefetch(ggufmap_remote *r, const char *url) {
    uint32_t pending = 0;
    for (web_file *f = r->files; f; f = f->next) pending += !f->claimed;
    if (r->o.offline || pending >= r->o.parallel || find_prefetch(r, url)) return;
    web_file *f = file_new(r, url, false, r->o.max_header, NULL);
    if (!f) return;
    uint64_t start, end;
    next_range(f, r->o.first_range, &start, &end);
    gm_js_prefetch(id_of(f), f->url, (double)start, (double)end, (double)r->o.timeout_s);
}

void gm_remote_drop_prefetches(ggufmap_remote *r) {
    web_file **p = &r->files;
    while (*p) {
        web_file *f = *p;
        if (f->claimed) {
            p = &f->next;
        } else {
            web_close(&f->bs); /* unlinks f: *p is the next one */
        }
    }
}

int gm_remote_get(ggufmap_remote *r, const char *url, uint64_t max, char **body, size_t *len, ggufmap_error *err) {
    web_file *f;
    *body = NULL;
    int rc = open_file(r, url, true, max, &f, err);
    if (rc) return rc;
    if (!run_until(f, max) || (f->bs.size > f->bs.have && !file_fail(f, GGUFMAP_EIO, "larger than %" PRIu64 " bytes", max))) {
        rc = f->bs.err.status;
        if (err) *err = f->bs.err;
    } else if (!(*body = malloc((size_t)f->bs.have + 1))) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    } else {
        memcpy(*body, f->buf, (size_t)f->bs.have);
        (*body)[f->bs.have] = '\0';
        *len = (size_t)f->bs.have;
    }
    web_close(&f->bs);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The session                                                               */
/* ------------------------------------------------------------------------ */

int ggufmap_remote_new(const ggufmap_remote_opts *opts, ggufmap_remote **out, ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    const char *endpoint = opts->endpoint && *opts->endpoint ? opts->endpoint : "https://huggingface.co";
    if (!gm_url_is_http(endpoint))
        return gm_fail(err, GGUFMAP_EINVAL, "endpoint %s: expected an http:// or https:// URL", endpoint);
    ggufmap_remote *r = calloc(1, sizeof *r);
    if (!r || !(r->endpoint = strdup(endpoint))) {
        free(r);
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    size_t n = strlen(r->endpoint);
    while (n > 0 && r->endpoint[n - 1] == '/') r->endpoint[--n] = '\0';
    r->o = *opts;
    r->o.endpoint = r->endpoint;
    r->o.token = r->o.cacert = r->o.cache_dir = NULL; /* the page sends no token and keeps no disk cache */
    if (r->o.first_range == 0) r->o.first_range = 64 * 1024;
    if (r->o.parallel == 0) r->o.parallel = 1;
    *out = r;
    return GGUFMAP_OK;
}

void ggufmap_remote_free(ggufmap_remote *r) {
    if (!r) return;
    gm_remote_drop_prefetches(r);
    while (r->files) { /* opened files keep their bytes; they lose the session */
        web_file *f = r->files;
        gm_js_stop(id_of(f));
        unlink_file(f);
    }
    free(r->endpoint);
    free(r);
}

void ggufmap_remote_totals(const ggufmap_remote *r, uint64_t *fetched_bytes, uint64_t *requests) {
    *fetched_bytes = r->fetched;
    *requests = r->requests;
}

const char *gm_remote_endpoint(const ggufmap_remote *r) { return r->endpoint; }

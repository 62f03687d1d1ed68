/*
 * remote.c - remote files as byte sources for the reader: only the header
 * bytes of each file, fetched with range requests as the reader needs them.
 *
 * Data structure.  A session (ggufmap_remote) loads libcurl (remote_curl.h:
 * only a command given a URL pays for the network stack), owns one libcurl multi handle
 * and a list of remote files.  A remote file is a gm_byte_source whose bytes
 * live in an address-space reservation the size of the header limit (pages
 * are committed as bytes arrive), so base never moves and the reader's
 * zero-copy pointers stay valid.  At most one request per file is in flight
 * (a gm_transfer); the multi handle runs all of them at once, which is how
 * the shards of a split model come in parallel.
 *
 * Workload.  Per file: one request for the first 64 KiB (a later shard's
 * whole header), then, if the reader runs past what it has, one request for
 * max(what it needs, as much again as it has): at most 2 H + 64 KiB bytes
 * for a header of H bytes.  A server that ignores Range sends the whole file
 * as one 200 body: that body is read while the reader needs more, paused
 * while it does not (CURL_WRITEFUNC_PAUSE), and dropped, connection and all,
 * once the header is parsed.  Answers are checked as strictly as the bytes
 * (the range must start where asked, the size and ETag must not change), so
 * a hostile server can only end in an error.
 *
 * The fetch loop (fetch/settle/pump) is where every decision is made:
 * follow a redirect (10 hops), retry 429/5xx (Retry-After or doubling waits),
 * trust the cache (304), or fail with a message naming the URL.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "os.h"
#include "remote_curl.h"
#include "remote_internal.h"

#define MAX_REDIRECTS 10
#define MAX_REQUESTS_PER_FILE 100 /* normal use needs ~15; a server dribbling bytes meets this */
#define MAX_ERROR_BODY (64 * 1024) /* an error answer's body is read up to this, then dropped */

struct ggufmap_remote {
    ggufmap_remote_opts o;        /* strings point at the copies below */
    char *endpoint, *token, *cacert, *cache_dir;
    gm_curl curl;                 /* libcurl, loaded with the session (remote_curl.h) */
    CURLM *multi;
    struct remote_file *files;    /* every file still tied to the session */
    uint32_t n_prefetches;        /* files no open has taken yet */
    uint64_t fetched, requests;
    uint64_t network_ns;          /* spent waiting for servers so far: at most timeout_s in all */
};

typedef struct remote_file {
    gm_byte_source bs;            /* first: what the reader sees */
    ggufmap_remote *r;            /* NULL once the session ended */
    struct remote_file *next;
    char *name;                   /* as asked for: hf:// or a URL */
    char *shown;                  /* name without credentials, for messages */
    char *url;                    /* name resolved: the first request goes here */
    char *key;                    /* url without credentials: the cache's key */
    char *at;                     /* where the last redirect led, or NULL */
    char etag[256];               /* the first answer's ETag ("" when none) */
    char modified[256];           /* its Last-Modified ("" when none): the check without an ETag */
    bool whole;                   /* a small resource read in full, without Range */
    bool claimed;                 /* taken by an open (else a prefetch) */
    bool answered;                /* the first answer is in: size known */
    bool streaming;               /* the server ignored Range: one 200 body from byte 0 */
    bool failed;                  /* bs.err says why */
    bool from_cache;              /* the bytes came from the cache, confirmed */
    gm_cache_entry cached;        /* the cache's bytes until the server confirms them */
    uint8_t *buf;                 /* the reservation */
    uint64_t reserved, committed; /* its bytes; those readable and writable */
    uint64_t max_bytes;           /* most bytes read from this file */
    uint64_t want;                /* the reader waits for [0, want) */
    gm_transfer *xfer;            /* the request in flight, or NULL */
    uint32_t tries, hops;         /* retries and redirects of the current exchange */
    uint64_t retry_at_ns;         /* when to try again, 0 when no retry is due */
} remote_file;

static void settle(remote_file *f);

/* ------------------------------------------------------------------------ */
/* Failing and logging                                                       */
/* ------------------------------------------------------------------------ */

/* file_fail(f, status, fmt, ...) and log_line(r, fmt, ...): remote_rules.c's,
 * for this file's structures. */
#define file_fail(f, status, ...) gm_remote_file_fail(&(f)->bs.err, &(f)->failed, (f)->shown, status, __VA_ARGS__)
#define log_line(r, ...) gm_remote_log((r) ? &(r)->o : NULL, __VA_ARGS__)

/* One line per answer: what was asked, what came, how long it took. */
static void log_answer(remote_file *f, const gm_transfer *t) {
    char range[64] = "";
    char *where = gm_url_for_log(t->url);
    if (t->end > t->start) snprintf(range, sizeof range, " bytes=%" PRIu64 "-%" PRIu64, t->start, t->end - 1);
    log_line(f->r, "GET %s%s%s -> %ld, %" PRIu64 " body bytes%s, %s, %.0f ms", where ? where : "?", range,
             t->sent_token ? " (with token)" : "", t->status, t->body_bytes, t->done ? "" : " (then stopped)",
             gm_http_version(t), (double)(gm_now_ns() - t->started_ns) / 1e6);
    free(where);
}

/* ------------------------------------------------------------------------ */
/* The reservation                                                           */
/* ------------------------------------------------------------------------ */

/* Reserves address space for the file's first min(size, max_bytes) bytes. */
static bool reserve(remote_file *f, uint64_t size) {
    uint64_t cap = gm_ceil_to(size < f->max_bytes ? size : f->max_bytes, gm_page_size());
    if (f->buf) munmap(f->buf, (size_t)f->reserved); /* a fresh answer replaces unparsed bytes */
    f->buf = NULL;
    f->reserved = f->committed = 0;
    f->bs.base = NULL;
    f->bs.have = 0;
    if (cap == 0) return true;
    void *m = gm_os_reserve((size_t)cap);
    if (!m)
        return file_fail(f, GGUFMAP_ENOMEM, "cannot reserve %" PRIu64 " bytes of address space", cap);
    f->buf = m;
    f->reserved = cap;
    f->bs.base = m;
    return true;
}

/* Makes buf[0, end) writable, growing by at least doubling. */
static bool commit(remote_file *f, uint64_t end) {
    if (end <= f->committed) return true;
    uint64_t grow = f->committed * 2 > end ? f->committed * 2 : end;
    if (grow < (1u << 20)) grow = 1u << 20;
    grow = gm_ceil_to(grow, gm_page_size());
    if (grow > f->reserved) grow = f->reserved;
    if (mprotect(f->buf + f->committed, (size_t)(grow - f->committed), PROT_READ | PROT_WRITE) != 0)
        return file_fail(f, GGUFMAP_ENOMEM, "cannot commit %" PRIu64 " bytes of memory", grow);
    f->committed = grow;
    return true;
}

/* The first answer told the size (and maybe an ETag): the file takes shape. */
static bool set_size(remote_file *f, uint64_t size, const char *etag, const char *modified) {
    if (!reserve(f, size)) return false;
    f->bs.size = size;
    f->bs.limit = size < f->max_bytes ? size : f->max_bytes;
    snprintf(f->etag, sizeof f->etag, "%s", etag);
    snprintf(f->modified, sizeof f->modified, "%s", modified);
    f->answered = true;
    return true;
}

/* Appends bytes at `have`, up to the reservation.  Returns what was kept. */
static uint64_t keep_bytes(remote_file *f, const char *data, uint64_t n) {
    uint64_t room = f->reserved - f->bs.have, k = n < room ? n : room;
    if (k == 0 || !commit(f, f->bs.have + k)) return 0;
    memcpy(f->buf + f->bs.have, data, (size_t)k);
    f->bs.have += k;
    return k;
}

/* The server confirmed the cache's bytes (304), or we are offline. */
static bool use_cache(remote_file *f) {
    gm_cache_entry *e = &f->cached;
    if (!set_size(f, e->size, e->etag, e->modified)) return false;
    keep_bytes(f, (const char *)e->bytes, e->n);
    f->from_cache = true;
    gm_cache_entry_free(e);
    return !f->failed;
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */
/* ------------------------------------------------------------------------ */

static void log_answer(remote_file *f, const gm_transfer *t);

static void stop_transfer(remote_file *f) {
    gm_transfer *t = f->xfer;
    if (!t) return;
    if (!t->done && t->status) log_answer(f, t); /* one we stop: say what it brought */
    if (f->r && t->easy) f->r->curl.multi_remove_handle(f->r->multi, t->easy);
    gm_http_release(t);
    free(t->url);
    free(t);
    f->xfer = NULL;
}

/* The range of the next request (remote_rules.c). */
static void next_range(const remote_file *f, uint64_t *start, uint64_t *end) {
    gm_remote_reading r = {f->whole, f->answered, f->bs.have, f->want, f->bs.limit, f->max_bytes, f->r->o.first_range};
    gm_remote_next_range(&r, start, end);
}

static size_t sink(gm_transfer *t, const char *data, size_t n);

static bool start_request(remote_file *f) {
    ggufmap_remote *r = f->r;
    if (f->bs.requests >= MAX_REQUESTS_PER_FILE)
        return file_fail(f, GGUFMAP_EIO, "gave up after %d requests (the server sends too little per answer)",
                         MAX_REQUESTS_PER_FILE);
    gm_transfer *t = calloc(1, sizeof *t);
    if (!t || !(t->url = strdup(f->at ? f->at : f->url))) {
        free(t);
        return file_fail(f, GGUFMAP_ENOMEM, "out of memory");
    }
    t->owner = f;
    t->sink = sink;
    next_range(f, &t->start, &t->end);
    bool ask_cache = !f->answered && f->cached.bytes;
    gm_http_opts ho = {&r->curl, r->token, r->endpoint, r->cacert, r->o.timeout_s,
                       ask_cache && *f->cached.etag ? f->cached.etag : NULL,
                       ask_cache && *f->cached.modified ? f->cached.modified : NULL};
    f->xfer = t;
    const char *why = gm_http_prepare(t, &ho);
    if (!why && r->curl.multi_add_handle(r->multi, t->easy) != CURLM_OK) why = "libcurl refused the request";
    if (why) {
        stop_transfer(f);
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    }
    f->bs.requests++;
    r->requests++;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Answers                                                                   */
/* ------------------------------------------------------------------------ */

/* The same file as before?  Size and ETag must not change between answers;
 * a file served without an ETag is checked by its Last-Modified. */
static bool same_file(remote_file *f, uint64_t size, const gm_transfer *t) {
    char why[900];
    if (f->answered && gm_remote_changed(f->bs.size, f->etag, f->modified, size, t->etag, t->modified, why, sizeof why))
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    return f->answered || set_size(f, size, t->etag, t->modified);
}

/* A 206: its range must start where we asked; its total is the size. */
static bool begin_partial(remote_file *f, gm_transfer *t) {
    char why[300];
    if (gm_remote_bad_range(t->start, t->end, t->has_range, t->range_first, t->range_last, t->range_total_known, why,
                            sizeof why))
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    return same_file(f, t->range_total, t);
}

/* A 200: the whole file from byte 0 (the server ignored Range). */
static bool begin_whole(remote_file *f, gm_transfer *t) {
    if (!f->whole && !t->has_length)
        return file_fail(f, GGUFMAP_EIO, "the server ignored the range and did not say how large the file is");
    if (!f->whole) f->streaming = true;
    if (f->answered && !t->has_length) return true;
    return same_file(f, t->has_length ? t->length : f->max_bytes, t);
}

/* The answer's first body bytes: is it what we asked for? */
static bool begin_body(remote_file *f, gm_transfer *t) {
    t->body_started = true;
    if (t->status < 200 || t->status >= 300) return true; /* an error page or a redirect: settle() reads the status */
    if (t->status != 200 && (t->status != 206 || f->whole))
        return file_fail(f, GGUFMAP_EIO, "unexpected HTTP %ld to a GET%s", t->status, f->whole ? "" : " with a range");
    if (f->cached.bytes) gm_cache_entry_free(&f->cached); /* the server sent other bytes than the cache's */
    return t->status == 206 ? begin_partial(f, t) : begin_whole(f, t);
}

/* Body bytes of any answer.  Keeps those at `have`, skips those already had
 * (a 200 restarting from byte 0), pauses a streaming body the reader does not
 * need yet, and stops at the limit. */
static size_t sink(gm_transfer *t, const char *data, size_t n) {
    remote_file *f = t->owner;
    if (!t->body_started && !begin_body(f, t)) return 0;
    if (t->status < 200 || t->status >= 300) { /* drop the page, or stop reading it */
        t->body_bytes += n;
        return t->body_bytes <= MAX_ERROR_BODY ? n : 0;
    }
    if (f->streaming && !f->whole && f->bs.have >= f->want && f->bs.have > 0) {
        t->paused = true;
        return CURL_WRITEFUNC_PAUSE;
    }
    uint64_t at = (t->status == 206 ? t->start : 0) + t->body_bytes;
    t->body_bytes += n;
    f->bs.fetched += n;
    if (f->r) f->r->fetched += n;
    if (t->status == 206 && at + n > t->range_last + 1) {
        file_fail(f, GGUFMAP_EIO, "the server sent more than the bytes %" PRIu64 "-%" PRIu64 " it announced",
                  t->range_first, t->range_last);
        return 0;
    }
    uint64_t skip = at < f->bs.have ? f->bs.have - at : 0;
    if (skip >= n) return n;
    uint64_t kept = keep_bytes(f, data + skip, n - skip);
    if (f->failed) return 0;
    if (kept < n - skip) { /* the reservation is full: nothing more can be used */
        t->stopped_at_limit = true;
        return 0;
    }
    return n;
}

static bool settle_redirect(remote_file *f, gm_transfer *t) {
    const char *where = gm_http_location(t);
    char *shown = where ? gm_url_for_log(where) : NULL;
    bool ok = false;
    if (!where)
        file_fail(f, GGUFMAP_EIO, "HTTP %ld without a Location", t->status);
    else if (++f->hops > MAX_REDIRECTS)
        file_fail(f, GGUFMAP_EIO, "more than %d redirects (a loop?), the last to %s", MAX_REDIRECTS,
                  shown ? shown : "?");
    else if (!gm_url_is_http(where))
        file_fail(f, GGUFMAP_EIO, "redirected to %s, which is not HTTP(S)", shown ? shown : "?");
    else {
        free(f->at);
        f->at = strdup(where);
        ok = f->at ? true : file_fail(f, GGUFMAP_ENOMEM, "out of memory");
    }
    free(shown);
    stop_transfer(f);
    return ok && start_request(f);
}

/* 429 and 5xx: try again after Retry-After, or after doubling waits. */
static bool settle_retry(remote_file *f, gm_transfer *t) {
    const ggufmap_remote_opts *o = &f->r->o;
    long status = t->status, after = t->retry_after_s;
    uint64_t wait_ns;
    char why[200];
    stop_transfer(f);
    if (!gm_remote_retry_wait(status, ++f->tries, after, o, f->r->network_ns, &wait_ns, why, sizeof why))
        return file_fail(f, GGUFMAP_EIO, "%s", why);
    log_line(f->r, "retrying %s in %.2f s (HTTP %ld, try %u of %u)", f->shown, (double)wait_ns / 1e9, status,
             f->tries + 1, o->retries + 1);
    f->retry_at_ns = gm_now_ns() + wait_ns;
    return true;
}

/* 401 or 403: what to do depends on whether a token went with the request
 * (then it was refused), was given but kept back (it goes to the
 * endpoint's host only, and this is another), or was not given at all. */
static bool access_denied(remote_file *f, const gm_transfer *t) {
    const ggufmap_remote *r = f->r;
    if (t->sent_token)
        return file_fail(f, GGUFMAP_EIO,
                         "HTTP %ld: access denied: the token was refused (invalid or expired, or without access to "
                         "this repository: a gated one needs its terms accepted on the hub)",
                         t->status);
    if (r->token && *r->token) {
        char *endpoint = gm_url_redacted(r->endpoint);
        file_fail(f, GGUFMAP_EIO,
                  "HTTP %ld: access denied, and the token given was not sent: it goes to the endpoint %s only, and "
                  "this server is another (set HF_ENDPOINT or MODEL_ENDPOINT to it to send the token there)",
                  t->status, endpoint ? endpoint : "(out of memory)");
        free(endpoint);
        return false;
    }
    return file_fail(f, GGUFMAP_EIO,
                     "HTTP %ld: access denied: the repository may be gated or private; accept its terms on the hub "
                     "and pass a token with --hf-token or HF_TOKEN",
                     t->status);
}

/* An answer that ends the exchange: the cache confirmed, or an error. */
static bool settle_final(remote_file *f, gm_transfer *t) {
    long s = t->status;
    if (s == 304 && f->cached.bytes) return use_cache(f);
    if (s == 401 || s == 403) return access_denied(f, t);
    if (s == 416 && t->range_total_known && t->range_total == 0 && !f->answered)
        return set_size(f, 0, t->etag, t->modified); /* an empty file: the reader says it is too short */
    char why[900];
    int status = gm_remote_refusal(s, t->url, "", t->start, t->end, t->range_total_known, why, sizeof why);
    return file_fail(f, status, "%s", why);
}

/* A non-2xx answer: follow, retry, or end. */
static void settle_status(remote_file *f, gm_transfer *t) {
    long s = t->status;
    if (s >= 300 && s < 400 && s != 304) {
        settle_redirect(f, t);
    } else if (s == 429 || (s >= 500 && s < 600)) {
        settle_retry(f, t);
    } else {
        settle_final(f, t);
        stop_transfer(f);
    }
}

/* A 2xx answer ended: was all of it there? */
static bool settle_body(remote_file *f, gm_transfer *t) {
    if (!t->body_started && !begin_body(f, t)) return false; /* an empty body */
    if (t->status == 206 && t->start + t->body_bytes != t->range_last + 1)
        return file_fail(f, GGUFMAP_EIO, "the answer ended after %" PRIu64 " of bytes %" PRIu64 "-%" PRIu64 " (truncated)",
                         t->body_bytes, t->range_first, t->range_last);
    if (t->status == 200 && f->whole && !t->has_length) { /* read to the end: now the size is known */
        f->bs.size = f->bs.limit = f->bs.have;
    } else if (t->status == 200 && t->body_bytes < f->bs.size && !t->stopped_at_limit) {
        return file_fail(f, GGUFMAP_EIO, "the answer ended after %" PRIu64 " of %" PRIu64 " bytes (truncated)",
                         t->body_bytes, f->bs.size);
    }
    f->tries = f->hops = 0;
    return true;
}

/* The transfer in flight has ended: decide what it means and what is next. */
static void settle(remote_file *f) {
    gm_transfer *t = f->xfer;
    log_answer(f, t);
    CURLcode rc = (CURLcode)t->result;
    bool status_speaks = rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && t->status >= 300);
    if (f->failed) {
        /* the sink found the answer wrong, and said why */
    } else if (t->stopped_at_limit || (rc == CURLE_OK && t->status >= 200 && t->status < 300)) {
        settle_body(f, t);
    } else if (status_speaks) {
        settle_status(f, t);
        return; /* it stopped, or replaced, the transfer */
    } else {
        char why[700];
        gm_http_describe_failure(t, f->r->o.timeout_s, why, sizeof why);
        file_fail(f, GGUFMAP_EIO, "%s", why);
    }
    stop_transfer(f);
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */
/* ------------------------------------------------------------------------ */

/* Runs every transfer of the session a step, settles those that ended, and
 * starts the retries that are due. */
static void pump(ggufmap_remote *r) {
    int running, left;
    r->curl.multi_perform(r->multi, &running);
    CURLMsg *m;
    while ((m = r->curl.multi_info_read(r->multi, &left))) {
        char *owner = NULL;
        if (m->msg != CURLMSG_DONE || r->curl.easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &owner) != CURLE_OK)
            continue;
        gm_transfer *t = (gm_transfer *)(void *)owner;
        t->done = true;
        t->result = (int)m->data.result;
        r->curl.multi_remove_handle(r->multi, m->easy_handle);
        settle(t->owner);
    }
    uint64_t now = gm_now_ns();
    for (remote_file *f = r->files; f; f = f->next)
        if (f->retry_at_ns && f->retry_at_ns <= now) {
            f->retry_at_ns = 0;
            start_request(f);
        }
}

/* Waits for network activity, or until the next retry is due (100 ms at
 * most, so that the deadline and watchdogs get their turn). */
static void wait_activity(ggufmap_remote *r) {
    uint64_t now = gm_now_ns(), wait_ns = 100000000ull;
    for (remote_file *f = r->files; f; f = f->next)
        if (f->retry_at_ns && f->retry_at_ns - now < wait_ns) wait_ns = f->retry_at_ns > now ? f->retry_at_ns - now : 0;
    r->curl.multi_poll(r->multi, NULL, 0, (int)(wait_ns / 1000000) + 1, NULL);
}

/* One turn of the loop: run the transfers, then wait for activity unless
 * done() is true; the time it takes is network time. */
static void turn(ggufmap_remote *r, bool (*done)(const remote_file *, uint64_t), const remote_file *f, uint64_t end) {
    uint64_t t0 = gm_now_ns();
    pump(r);
    if (!f->failed && !done(f, end) && f->r) wait_activity(r);
    r->network_ns += gm_now_ns() - t0;
}

/* The deadline: --timeout bounds the whole session's network time
 * (connecting, waiting, the bodies themselves, the waits before retries),
 * so that no server, however slowly it drips, keeps a command alive
 * longer (issue 20, item 4).  Fails f when the time is spent. */
static bool past_deadline(remote_file *f) {
    const ggufmap_remote *r = f->r;
    if (r->network_ns < (uint64_t)r->o.timeout_s * 1000000000ull) return false;
    const gm_transfer *t = f->xfer;
    char what[160];
    if (t && t->status)
        snprintf(what, sizeof what, "the answer (HTTP %ld) was still coming after %" PRIu64 " body bytes", t->status,
                 t->body_bytes);
    else
        snprintf(what, sizeof what, "%s", t ? "no answer" : "still no header");
    stop_transfer(f);
    return !file_fail(f, GGUFMAP_EIO,
                      "%s when the %u s that --timeout allows for the network in all were spent (timeout)", what,
                      r->o.timeout_s);
}

/* f has [0, end), or all it will ever have. */
static bool has(const remote_file *f, uint64_t end) {
    return f->answered && (f->bs.have >= end || f->bs.have >= f->bs.limit);
}

/* Runs the session until f has [0, end) (or all of a smaller file), or
 * failed.  Starts f's next request when none is in flight or due. */
static bool run_until(remote_file *f, uint64_t end) {
    if (end > f->want) f->want = end;
    for (;;) {
        if (f->failed) return false;
        if (has(f, end)) return true;
        if (!f->r) return file_fail(f, GGUFMAP_EIO, "the remote session has ended");
        if (f->r->o.offline)
            return file_fail(f, GGUFMAP_EIO, "the cache holds only %" PRIu64 " bytes of the header (offline)",
                             f->bs.have);
        if (!f->xfer && !f->retry_at_ns && !start_request(f)) return false;
        if (f->xfer && f->xfer->paused) {
            f->xfer->paused = false;
            f->r->curl.easy_pause(f->xfer->easy, CURLPAUSE_CONT);
        }
        if (past_deadline(f)) return false;
        turn(f->r, has, f, end);
    }
}

/* ------------------------------------------------------------------------ */
/* Remote files as byte sources                                              */
/* ------------------------------------------------------------------------ */

static bool rf_fetch(gm_byte_source *bs, uint64_t end) {
    remote_file *f = (remote_file *)bs;
    if (run_until(f, end)) return true;
    if (!f->failed) file_fail(f, GGUFMAP_EIO, "no bytes past %" PRIu64, f->bs.have);
    return false;
}

static void unlink_file(remote_file *f) {
    if (!f->r) return;
    for (remote_file **p = &f->r->files; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    if (!f->claimed) f->r->n_prefetches--;
    f->r = NULL;
}

/* The header is parsed: stop reading, and keep its bytes for next time. */
static void rf_parsed(gm_byte_source *bs, uint64_t header_end) {
    remote_file *f = (remote_file *)bs;
    (void)header_end; /* all bytes had are kept: they are what the next open would fetch */
    stop_transfer(f);
    ggufmap_remote *r = f->r;
    if (!r || !r->cache_dir || f->from_cache || r->o.offline) return;
    ggufmap_error err;
    if (gm_cache_store(r->cache_dir, f->key, f->etag, f->modified, f->bs.size, f->buf, f->bs.have, &err) != 0)
        log_line(r, "%s", err.message);
}

static void rf_close(gm_byte_source *bs) {
    remote_file *f = (remote_file *)bs;
    stop_transfer(f);
    unlink_file(f);
    if (f->buf) munmap(f->buf, (size_t)f->reserved);
    gm_cache_entry_free(&f->cached);
    free(f->name);
    free(f->shown);
    free(f->url);
    free(f->key);
    free(f->at);
    free(f);
}

static const gm_byte_source_ops remote_ops = {"http", rf_fetch, rf_parsed, rf_close};

static remote_file *file_new(ggufmap_remote *r, const char *name, bool whole, uint64_t max_bytes,
                             ggufmap_error *err) {
    remote_file *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(name)) || !(f->shown = gm_url_redacted(name))) {
        if (f) rf_close(&f->bs);
        gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        return NULL;
    }
    f->bs.ops = &remote_ops;
    f->bs.fd = -1;
    f->whole = whole;
    f->max_bytes = max_bytes;
    if (gm_url_resolve(r->endpoint, name, &f->url, err) != GGUFMAP_OK || !(f->key = gm_url_redacted(f->url))) {
        if (f->url && !f->key) gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        rf_close(&f->bs);
        return NULL;
    }
    f->r = r;
    f->next = r->files;
    r->files = f;
    if (r->cache_dir && gm_cache_load(r->cache_dir, f->key, max_bytes, &f->cached) && !r->o.offline &&
        !*f->cached.etag && !*f->cached.modified)
        gm_cache_entry_free(&f->cached); /* without an ETag or a Last-Modified it cannot be confirmed */
    return f;
}

static remote_file *find_prefetch(ggufmap_remote *r, const char *name) {
    for (remote_file *f = r->files; f; f = f->next)
        if (!f->claimed && strcmp(f->name, name) == 0) return f;
    return NULL;
}

static bool answered(const remote_file *f, uint64_t end) {
    (void)end;
    return f->answered;
}

/* Waits for the first answer (or takes the cache offline). */
static bool first_answer(remote_file *f) {
    if (f->r->o.offline) {
        if (f->cached.bytes) return use_cache(f);
        return file_fail(f, GGUFMAP_ENOTFOUND, "not in the cache (offline)");
    }
    while (!f->answered && !f->failed) {
        if ((!f->xfer && !f->retry_at_ns && !start_request(f)) || past_deadline(f)) break;
        turn(f->r, answered, f, 0);
    }
    return !f->failed;
}

static int open_file(ggufmap_remote *r, const char *name, bool whole, uint64_t max, remote_file **out,
                     ggufmap_error *err) {
    remote_file *f = find_prefetch(r, name);
    if (f) {
        r->n_prefetches--;
    } else if (!(f = file_new(r, name, whole, max, err))) {
        return err ? err->status : GGUFMAP_ENOMEM;
    }
    f->claimed = true;
    if (!first_answer(f)) {
        int rc = f->bs.err.status;
        if (err) *err = f->bs.err;
        rf_close(&f->bs);
        return rc;
    }
    *out = f;
    return GGUFMAP_OK;
}

int gm_remote_open(ggufmap_remote *r, const char *url, gm_byte_source **out, ggufmap_error *err) {
    remote_file *f;
    int rc = open_file(r, url, false, r->o.max_header, &f, err);
    *out = rc ? NULL : &f->bs;
    return rc;
}

void gm_remote_prefetch(ggufmap_remote *r, const char *url) {
    if (r->o.offline || r->n_prefetches >= r->o.parallel || find_prefetch(r, url)) return;
    remote_file *f = file_new(r, url, false, r->o.max_header, NULL);
    if (!f) return;
    r->n_prefetches++;
    start_request(f);
}

void gm_remote_drop_prefetches(ggufmap_remote *r) {
    remote_file **p = &r->files;
    while (*p) {
        remote_file *f = *p;
        if (f->claimed) {
            p = &f->next;
        } else {
            rf_close(&f->bs); /* unlinks f: *p is the next one */
        }
    }
}

int gm_remote_get(ggufmap_remote *r, const char *url, uint64_t max, char **body, size_t *len, ggufmap_error *err) {
    remote_file *f;
    *body = NULL;
    int rc = open_file(r, url, true, max, &f, err);
    if (rc) return rc;
    if (!run_until(f, max) || (f->bs.size > f->bs.have && !file_fail(f, GGUFMAP_EIO, "larger than %" PRIu64 " bytes", max))) {
        rc = f->bs.err.status;
        if (err) *err = f->bs.err;
    } else if (!(*body = malloc(f->bs.have + 1))) {
        rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    } else {
        memcpy(*body, f->buf, (size_t)f->bs.have);
        (*body)[f->bs.have] = '\0';
        *len = (size_t)f->bs.have;
        rf_parsed(&f->bs, f->bs.have);
    }
    rf_close(&f->bs);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The session                                                               */
/* ------------------------------------------------------------------------ */

static char *dup_or_null(const char *s, bool *ok) {
    char *d = s ? strdup(s) : NULL;
    if (s && !d) *ok = false;
    return d;
}

int ggufmap_remote_new(const ggufmap_remote_opts *opts, ggufmap_remote **out, ggufmap_error *err) {
    *out = NULL;
    ggufmap_error_clear(err);
    const char *endpoint = opts->endpoint && *opts->endpoint ? opts->endpoint : "https://huggingface.co";
    if (!gm_url_is_http(endpoint))
        return gm_fail(err, GGUFMAP_EINVAL, "endpoint %s: expected an http:// or https:// URL", endpoint);
    ggufmap_remote *r = calloc(1, sizeof *r);
    if (!r) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    int rc = gm_curl_load(&r->curl, err); /* the network stack comes with the first session */
    if (rc) {
        free(r);
        return rc;
    }
    if (r->curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(r);
        return gm_fail(err, GGUFMAP_EIO, "libcurl cannot start");
    }
    bool ok = true;
    r->o = *opts;
    r->endpoint = dup_or_null(endpoint, &ok);
    r->token = dup_or_null(opts->token, &ok);
    r->cacert = dup_or_null(opts->cacert, &ok);
    r->cache_dir = dup_or_null(opts->cache_dir, &ok);
    r->multi = r->curl.multi_init();
    if (!ok || !r->multi) {
        ggufmap_remote_free(r);
        return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    size_t n = strlen(r->endpoint);
    while (n > 0 && r->endpoint[n - 1] == '/') r->endpoint[--n] = '\0';
    r->o.endpoint = r->endpoint;
    r->o.token = r->token;
    r->o.cacert = r->cacert;
    r->o.cache_dir = r->cache_dir;
    if (r->o.first_range == 0) r->o.first_range = 64 * 1024;
    if (r->o.parallel == 0) r->o.parallel = 1;
    r->curl.multi_setopt(r->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    *out = r;
    return GGUFMAP_OK;
}

void ggufmap_remote_free(ggufmap_remote *r) {
    if (!r) return;
    gm_remote_drop_prefetches(r);
    while (r->files) { /* opened files keep their bytes; they lose the session */
        remote_file *f = r->files;
        stop_transfer(f);
        unlink_file(f);
    }
    if (r->multi) r->curl.multi_cleanup(r->multi);
    free(r->endpoint);
    free(r->token);
    free(r->cacert);
    free(r->cache_dir);
    r->curl.global_cleanup(); /* libcurl itself stays loaded (remote_curl.h) */
    free(r);
}

void ggufmap_remote_totals(const ggufmap_remote *r, uint64_t *fetched_bytes, uint64_t *requests) {
    *fetched_bytes = r->fetched;
    *requests = r->requests;
}

const char *gm_remote_endpoint(const ggufmap_remote *r) { return r->endpoint; }

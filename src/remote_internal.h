/*
 * remote_internal.h - what the remote modules share with each other and with
 * the reader (not installed).
 *
 *   remote.c        the session, remote files as byte sources, the fetch loop
 *   remote_http.c   one HTTP exchange: the request, its answer's headers and
 *                   body, and what the answer means
 *   remote_url.c    names: hf:// resolution, redaction, origins, split names
 *   remote_cache.c  header bytes kept on disk under URL and ETag
 *   remote_hf.c     -hf OWNER/REPO[:QUANT]: the hub's listing and the pick
 *   remote_rules.c  what every remote byte source decides alike (remote.c's,
 *                   and the browser's in byte_source_web.c): ranges, checks,
 *                   retries, refusals
 */
#ifndef GGUFMAP_REMOTE_INTERNAL_H
#define GGUFMAP_REMOTE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "byte_source.h"
#include "ggufmap/remote.h"
#include "internal.h"
typedef struct gm_curl gm_curl; /* the session's libcurl: remote_curl.h (not in the browser build) */

/* ---- remote.c: for the reader and the model module ---- */

/* Opens url (http(s):// or hf://) as a byte source holding its first bytes
 * (or the cache's, once the server confirmed them); the file's size is known
 * on return.  A prefetch of the same url is taken over. */
int gm_remote_open(ggufmap_remote *r, const char *url, gm_byte_source **out, ggufmap_error *err);

/* Starts fetching url's first bytes now, to be taken by a later
 * gm_remote_open(): the shards of a split model arrive in parallel.  A hint
 * only: ignored when url is pending already or `parallel` files are. */
void gm_remote_prefetch(ggufmap_remote *r, const char *url);

/* Stops and forgets every prefetch no open took (a model that failed). */
void gm_remote_drop_prefetches(ggufmap_remote *r);

/* Fetches the whole (small) resource at url into *body (malloc'd, NUL-
 * terminated, *len bytes, at most max), e.g. a JSON listing. */
int gm_remote_get(ggufmap_remote *r, const char *url, uint64_t max, char **body, size_t *len, ggufmap_error *err);

/* The session's endpoint, without a trailing slash. */
const char *gm_remote_endpoint(const ggufmap_remote *r);

/* ---- remote_rules.c: the decisions every remote byte source shares ---- */

/* One file's reading, as the rules see it. */
typedef struct gm_remote_reading {
    bool whole;                 /* a small resource read in full, without Range */
    bool answered;              /* the first answer is in: the size is known */
    uint64_t have;              /* bytes held, from byte 0 */
    uint64_t want;              /* the reader waits for [0, want) */
    uint64_t limit;             /* the most that will be read (once answered) */
    uint64_t max_bytes;         /* the header limit */
    uint64_t first_range;       /* the session's first request size */
} gm_remote_reading;

/* The range [start, end) of the next request (both 0: no Range, a whole
 * resource): the first bytes, or what the reader needs, at least as much
 * again as there is (remote.h: at most 2 H + first_range for a header of H
 * bytes). */
void gm_remote_next_range(const gm_remote_reading *r, uint64_t *start, uint64_t *end);
/* A later answer said new_size, new_etag and new_modified (Last-Modified):
 * NULL when it is the same file (size as before; the ETag where both
 * answers have one, else the Last-Modified where both have one), else why
 * not, written into why. */
const char *gm_remote_changed(uint64_t size, const char *etag, const char *modified, uint64_t new_size,
                              const char *new_etag, const char *new_modified, char *why, size_t cap);
/* A 206 to bytes [start, end): NULL when its Content-Range starts there,
 * ends inside and says the file's size, else why not, into why. */
const char *gm_remote_bad_range(uint64_t start, uint64_t end, bool has_range, uint64_t first, uint64_t last,
                                bool total_known, char *why, size_t cap);
/* A 429 or 5xx, the tries-th (from 1): true with the wait before asking
 * again (Retry-After, else 250 ms doubling), false with why when it is time
 * to give up (more than opts->retries, a wait over max_retry_wait_s, or one
 * that would take the network time spent_ns past --timeout's opts->timeout_s). */
bool gm_remote_retry_wait(long status, uint32_t tries, long retry_after_s, const ggufmap_remote_opts *o,
                          uint64_t spent_ns, uint64_t *wait_ns, char *why, size_t cap);
/* An answer that ends the exchange (401, 403, 404, 410, 416 to a range
 * [start, end), any other): its status (GGUFMAP_ENOTFOUND for 404 and 410,
 * else GGUFMAP_EIO), its words into why; token_hint says what to do about
 * the token on 401 and 403. */
int gm_remote_refusal(long status, const char *url, const char *token_hint, uint64_t start, uint64_t end,
                      bool total_known, char *why, size_t cap);

/* A remote file's first failure, "SHOWN: what", into err with status;
 * later ones are dropped (the first is the cause).  Sets *failed; returns
 * false, for `return file_fail(...)`. */
bool gm_remote_file_fail(ggufmap_error *err, bool *failed, const char *shown, int status, const char *fmt, ...)
    GM_PRINTF(5, 6);
/* One --verbose line to o->log (nothing when o or o->log is NULL). */
void gm_remote_log(const ggufmap_remote_opts *o, const char *fmt, ...) GM_PRINTF(2, 3);

/* ---- remote_http.c: one HTTP exchange ---- */

/* One request and its answer.  The answer's fields are filled as its header
 * lines arrive (a new status line, e.g. after a 100, starts them afresh);
 * body bytes go to sink(owner, ...), which returns what it consumed (n), 0
 * to stop the transfer, or CURL_WRITEFUNC_PAUSE. */
typedef struct gm_transfer {
    const gm_curl *curl;        /* the session's libcurl (gm_http_prepare sets it) */
    void *easy;                 /* CURL * */
    void *headers;              /* struct curl_slist * */
    void *owner;
    size_t (*sink)(struct gm_transfer *t, const char *data, size_t n);
    char *url;                  /* requested (after redirects so far) */
    uint64_t start, end;        /* Range asked: [start, end); end == 0: none */
    uint64_t started_ns;        /* gm_now_ns() when it was sent */
    /* the answer */
    long status;                /* 0 until a status line came */
    bool has_range;             /* Content-Range: bytes first-last/total */
    uint64_t range_first, range_last, range_total;
    bool range_total_known;     /* total was not '*' */
    bool has_length;            /* Content-Length */
    uint64_t length;
    char etag[256];             /* "" when none */
    char modified[256];         /* Last-Modified, "" when none */
    long retry_after_s;         /* -1 when none */
    /* the body (kept by the sink) */
    bool body_started;          /* the sink has seen the answer's first body bytes */
    uint64_t body_bytes;        /* consumed by the sink */
    bool paused;
    bool stopped_at_limit;      /* the sink stopped it: no more bytes could be used */
    bool sent_token;
    bool done;                  /* finished: result says how */
    int result;                 /* CURLcode */
    char errbuf[256];
} gm_transfer;

typedef struct gm_http_opts {
    const gm_curl *curl;        /* the session's libcurl */
    const char *token;          /* sent when the URL's origin is endpoint's */
    const char *endpoint;
    const char *cacert;
    uint32_t timeout_s;
    const char *if_none_match;  /* an ETag, or NULL */
    const char *if_modified_since; /* a Last-Modified date, or NULL (used without an ETag) */
} gm_http_opts;

/* Prepares the request for t->url (t->start/end/owner/sink set); NULL on
 * success, else why not (a static string). */
const char *gm_http_prepare(gm_transfer *t, const gm_http_opts *o);
/* Frees what gm_http_prepare made (the easy handle must be out of any multi). */
void gm_http_release(gm_transfer *t);
/* What went wrong in a transfer libcurl ended with an error, in words. */
void gm_http_describe_failure(const gm_transfer *t, uint32_t timeout_s, char *out, size_t cap);
/* "HTTP/2", "HTTP/1.1": the version the answer came in. */
const char *gm_http_version(const gm_transfer *t);
/* Where a 3xx answer points (absolute; NULL when it names no place). */
const char *gm_http_location(const gm_transfer *t);

/* ---- remote_url.c ---- */

/* url without "user:password@" (malloc'd; NULL when out of memory). */
char *gm_url_redacted(const char *url);
/* For logs of where a redirect led: redacted, and the query (often a
 * signature) shown as "?…". */
char *gm_url_for_log(const char *url);
/* hf://OWNER/REPO[@REVISION]/PATH as ENDPOINT/OWNER/REPO/resolve/REVISION/PATH;
 * http(s) URLs are copied.  *url is malloc'd. */
int gm_url_resolve(const char *endpoint, const char *name, char **url, ggufmap_error *err);
/* Appends s[0, n) to out (room for cap) as part of a URL's path:
 * percent-encoded but for unreserved bytes and those in keep, and a "." or
 * ".." segment (between kept '/') as "%2E" or "%2E%2E", so that a name
 * given by a user or a server can never step out of the path it is put
 * under (a client or proxy would resolve the dots, and the request, token
 * and all, leave the endpoint's prefix).  The new length, or cap when out
 * is full. */
size_t gm_url_append_path(char *out, size_t used, size_t cap, const char *s, size_t n, const char *keep);
/* True when both URLs have the same scheme, host (any case) and port, as
 * libcurl's URL parser reads them. */
bool gm_url_same_origin(const gm_curl *curl, const char *a, const char *b);
/* True for http:// and https:// (any case). */
bool gm_url_is_http(const char *url);
/* How much of name the split naming applies to: a URL's query and fragment
 * are left out (strlen for a local path). */
size_t gm_url_name_len(const char *name);

/* ---- remote_cache.c ---- */

typedef struct gm_cache_entry {
    char *etag;      /* "" when the server sent none */
    char *modified;  /* its Last-Modified, "" when none */
    uint64_t size;   /* of the whole file */
    uint8_t *bytes;  /* its first n bytes */
    uint64_t n;
} gm_cache_entry;

/* Reads the entry kept for url into e (true), or false when there is none or
 * it is unreadable, or holds more than max bytes. */
bool gm_cache_load(const char *dir, const char *url, uint64_t max, gm_cache_entry *e);
/* Keeps bytes[0, n) of url's file (size bytes, etag, Last-Modified) in dir, replacing any
 * older entry through a temporary file and a rename.  Returns 0, or -1 with
 * err set (a cache that cannot be written is not fatal to callers). */
int gm_cache_store(const char *dir, const char *url, const char *etag, const char *modified, uint64_t size,
                   const uint8_t *bytes,
                   uint64_t n, ggufmap_error *err);
void gm_cache_entry_free(gm_cache_entry *e);

/* ---- remote_hf.c ---- */

/* The path llama.cpp's -hf picks among a listing's file paths (see
 * ggufmap_remote_hf_pick); tag may be "" (NULL when none fits). */
const char *gm_hf_pick_path(const char *const *paths, size_t n, const char *tag);

#endif

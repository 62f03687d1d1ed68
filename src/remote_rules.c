/*
 * remote_rules.c - what every remote byte source decides the same way,
 * whichever moves the bytes (remote.c with libcurl for the command line,
 * byte_source_web.c with the browser's fetch for the page): the options'
 * defaults, the range of the next request, what a later answer must say to
 * be the same file, what a 206 must say to be believed, how long to wait
 * before a retry, the words for an answer that ends the exchange, and how
 * a file's failure and a --verbose line are written.
 *
 * Data structure: none; plain values in, a decision and its message out.
 * Workload: a few comparisons per answer.  Fidelity: these are ggufmap's
 * own rules (remote.h documents them), kept in one place so that the page
 * and the command line read a server alike.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "remote_internal.h"

#define BACKOFF_FIRST_NS 250000000ull

void ggufmap_remote_opts_init(ggufmap_remote_opts *o) {
    memset(o, 0, sizeof *o);
    o->timeout_s = 30;
    o->retries = 4;
    o->max_retry_wait_s = 60;
    o->first_range = 64 * 1024;
    o->max_header = 256ull << 20;
    o->parallel = 16;
}

void gm_remote_next_range(const gm_remote_reading *r, uint64_t *start, uint64_t *end) {
    *start = *end = 0;
    if (r->whole) return;
    if (!r->answered) {
        *end = r->first_range < r->max_bytes ? r->first_range : r->max_bytes;
        return;
    }
    uint64_t have = r->have, n = r->want > have ? r->want - have : 0;
    if (n < have) n = have;
    if (n < r->first_range) n = r->first_range;
    *start = have;
    *end = n > r->limit - have ? r->limit : have + n;
}

const char *gm_remote_changed(uint64_t size, const char *etag, const char *modified, uint64_t new_size,
                              const char *new_etag, const char *new_modified, char *why, size_t cap) {
    if (new_size != size) {
        snprintf(why, cap, "the file's size changed from %" PRIu64 " to %" PRIu64 " bytes while reading", size, new_size);
        return why;
    }
    if (etag[0] && new_etag[0] && strcmp(etag, new_etag) != 0) {
        snprintf(why, cap, "the file changed on the server while reading (ETag %s, then %s)", etag, new_etag);
        return why;
    }
    if (!(etag[0] && new_etag[0]) && modified[0] && new_modified[0] && strcmp(modified, new_modified) != 0) {
        snprintf(why, cap, "the file changed on the server while reading (Last-Modified %s, then %s)", modified,
                 new_modified);
        return why;
    }
    return NULL;
}

const char *gm_remote_bad_range(uint64_t start, uint64_t end, bool has_range, uint64_t first, uint64_t last,
                                bool total_known, char *why, size_t cap) {
    if (!has_range || first != start || last >= end) {
        snprintf(why, cap, "asked for bytes %" PRIu64 "-%" PRIu64 ", the server sent %s%" PRIu64 "-%" PRIu64, start,
                 end - 1, has_range ? "bytes " : "no Content-Range, or a bad one: ", first, last);
        return why;
    }
    if (!total_known) {
        snprintf(why, cap, "the server does not say how large the file is (Content-Range */...)");
        return why;
    }
    return NULL;
}

bool gm_remote_retry_wait(long status, uint32_t tries, long retry_after_s, const ggufmap_remote_opts *o,
                          uint64_t spent_ns, uint64_t *wait_ns, char *why, size_t cap) {
    if (tries > o->retries) {
        snprintf(why, cap, "HTTP %ld, still after %u tries", status, o->retries + 1);
        return false;
    }
    uint32_t doublings = tries - 1 < 16 ? tries - 1 : 16;
    *wait_ns = retry_after_s >= 0 ? (uint64_t)retry_after_s * 1000000000ull : BACKOFF_FIRST_NS << doublings;
    if (*wait_ns > (uint64_t)o->max_retry_wait_s * 1000000000ull) {
        snprintf(why, cap, "HTTP %ld: the server asks to wait %ld s, more than %u s: try later", status, retry_after_s,
                 o->max_retry_wait_s);
        return false;
    }
    if (spent_ns + *wait_ns > (uint64_t)o->timeout_s * 1000000000ull) {
        snprintf(why, cap, "HTTP %ld: a retry in %.2f s would pass the %u s that --timeout allows for the network in all "
                 "(timeout)", status, (double)*wait_ns / 1e9, o->timeout_s);
        return false;
    }
    return true;
}

int gm_remote_refusal(long status, const char *url, const char *token_hint, uint64_t start, uint64_t end,
                      bool total_known, char *why, size_t cap) {
    if (status == 401 || status == 403) {
        snprintf(why, cap, "HTTP %ld: access denied: the repository may be gated or private; %s", status, token_hint);
        return GGUFMAP_EIO;
    }
    if (status == 404 || status == 410) {
        char *where = gm_url_for_log(url);
        snprintf(why, cap, "not found (HTTP %ld from %s)", status, where ? where : "?");
        free(where);
        return GGUFMAP_ENOTFOUND;
    }
    if (status == 416)
        snprintf(why, cap, "HTTP 416: the server refused bytes %" PRIu64 "-%" PRIu64 "%s", start, end - 1,
                 total_known ? " (of a file it says has more)" : "");
    else
        snprintf(why, cap, "unexpected HTTP %ld", status);
    return GGUFMAP_EIO;
}

bool gm_remote_file_fail(ggufmap_error *err, bool *failed, const char *shown, int status, const char *fmt, ...) {
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!*failed) gm_fail(err, status, "%s: %s", shown, what);
    *failed = true;
    return false;
}

void gm_remote_log(const ggufmap_remote_opts *o, const char *fmt, ...) {
    if (!o || !o->log) return;
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->log(o->log_ctx, line);
}

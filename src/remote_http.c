/*
 * remote_http.c - one HTTP exchange over libcurl: the request (a range,
 * maybe a conditional, maybe a token), the answer's headers as they arrive,
 * its body handed to the owner's sink, and a failure put in words.
 *
 * What is NOT here: whether to follow a redirect, retry, or trust an answer.
 * Those are the fetch loop's decisions (remote.c), made from the fields this
 * file fills in.  Redirects are never followed by libcurl itself, so that
 * every hop is a request we count, log, and decide the token for.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ggufmap/ggufmap.h"
#include "internal.h"
#include "remote_curl.h"
#include "remote_internal.h"

/* ------------------------------------------------------------------------ */
/* The answer's header lines                                                 */
/* ------------------------------------------------------------------------ */

/* The value of "Name: value\r\n" when line starts with name (any case),
 * trimmed into out; false otherwise. */
static bool header_value(const char *line, size_t n, const char *name, char *out, size_t cap) {
    size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':') return false;
    const char *v = line + k + 1, *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && isspace((unsigned char)end[-1])) end--;
    size_t len = (size_t)(end - v) < cap - 1 ? (size_t)(end - v) : cap - 1;
    memcpy(out, v, len);
    out[len] = '\0';
    return true;
}

static bool parse_u64(const char *s, const char **end, uint64_t *v) {
    if (!isdigit((unsigned char)*s)) return false;
    uint64_t x = 0;
    for (; isdigit((unsigned char)*s); s++) {
        if (x > (UINT64_MAX - 9) / 10) return false;
        x = x * 10 + (uint64_t)(*s - '0');
    }
    *v = x;
    *end = s;
    return true;
}

/* "bytes FIRST-LAST/TOTAL", "bytes FIRST-LAST/(star)" or "bytes (star)/TOTAL". */
static void parse_content_range(gm_transfer *t, const char *v) {
    const char *p;
    t->has_range = false;
    t->range_total_known = false;
    if (strncasecmp(v, "bytes ", 6) != 0) return;
    v += 6;
    if (*v == '*') {
        t->has_range = false;
        t->range_total_known = v[1] == '/' && parse_u64(v + 2, &p, &t->range_total) && !*p;
        return;
    }
    if (!parse_u64(v, &p, &t->range_first) || *p != '-' || !parse_u64(p + 1, &p, &t->range_last) || *p != '/' ||
        t->range_last < t->range_first)
        return;
    t->has_range = true;
    t->range_total_known = p[1] != '*' && parse_u64(p + 1, &p, &t->range_total) && !*p;
}

/* Retry-After: seconds, or an HTTP date. */
static long parse_retry_after(const gm_curl *curl, const char *v) {
    const char *p;
    uint64_t s;
    if (parse_u64(v, &p, &s) && !*p) return s > 86400 ? 86400 : (long)s;
    time_t when = curl->getdate(v, NULL);
    if (when < 0) return -1;
    time_t now = time(NULL);
    return when > now ? (long)(when - now) : 0;
}

static void start_answer(gm_transfer *t, long status) {
    t->status = status;
    t->has_range = t->range_total_known = t->has_length = false;
    t->etag[0] = '\0';
    t->modified[0] = '\0';
    t->retry_after_s = -1;
}

static size_t on_header(char *line, size_t one, size_t n, void *ctx) {
    gm_transfer *t = ctx;
    char v[256];
    n *= one;
    if (n > 5 && strncmp(line, "HTTP/", 5) == 0) {
        const char *sp = memchr(line, ' ', n);
        start_answer(t, sp ? strtol(sp + 1, NULL, 10) : 0);
    } else if (header_value(line, n, "content-range", v, sizeof v)) {
        parse_content_range(t, v);
    } else if (header_value(line, n, "content-length", v, sizeof v)) {
        const char *p;
        t->has_length = parse_u64(v, &p, &t->length) && !*p;
    } else if (header_value(line, n, "etag", v, sizeof v)) {
        snprintf(t->etag, sizeof t->etag, "%s", v);
    } else if (header_value(line, n, "last-modified", v, sizeof v)) {
        snprintf(t->modified, sizeof t->modified, "%s", v);
    } else if (header_value(line, n, "retry-after", v, sizeof v)) {
        t->retry_after_s = parse_retry_after(t->curl, v);
    }
    return n;
}

static size_t on_body(char *data, size_t one, size_t n, void *ctx) {
    gm_transfer *t = ctx;
    return t->sink(t, data, one * n);
}

/* ------------------------------------------------------------------------ */
/* The request                                                               */
/* ------------------------------------------------------------------------ */

static bool add_header(gm_transfer *t, const char *fmt, const char *a, const char *b) {
    char line[1024];
    int n = snprintf(line, sizeof line, fmt, a, b);
    if (n < 0 || (size_t)n >= sizeof line) return false;
    struct curl_slist *l = t->curl->slist_append(t->headers, line);
    if (l) t->headers = l;
    return l != NULL;
}

static bool set_headers(gm_transfer *t, const gm_http_opts *o) {
    char range[64];
    if (t->end > t->start) {
        snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, t->start, t->end - 1);
        if (!add_header(t, "Range: bytes=%s%s", range, "")) return false;
    }
    if (o->if_none_match && !add_header(t, "If-None-Match: %s%s", o->if_none_match, "")) return false;
    if (!o->if_none_match && o->if_modified_since &&
        !add_header(t, "If-Modified-Since: %s%s", o->if_modified_since, ""))
        return false;
    /* The token goes to the endpoint's own origin: never to a CDN or any
     * other host a redirect names. */
    t->sent_token = o->token && *o->token && o->endpoint && gm_url_same_origin(t->curl, t->url, o->endpoint);
    if (t->sent_token && !add_header(t, "Authorization: Bearer %s%s", o->token, "")) return false;
    return add_header(t, "Accept: %s%s", "*/*", "");
}

const char *gm_http_prepare(gm_transfer *t, const gm_http_opts *o) {
    start_answer(t, 0);
    const gm_curl *c = t->curl = o->curl;
    CURL *e = c->easy_init();
    if (!e) return "libcurl could not make a handle";
    t->easy = e;
    if (!set_headers(t, o)) return "out of memory for the request headers";
    /* The session's deadline (remote.c) ends every wait at timeout_s; these
     * are libcurl's own limits, a second later, as a backstop only. */
    long timeout = (long)o->timeout_s + 1;
    bool ok = c->easy_setopt(e, CURLOPT_URL, t->url) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS) == CURLE_OK &&
              /* Over TLS, wait to see whether HTTP/2 lets this request share a
               * connection; plain HTTP/1.1 cannot, and a paused stream would
               * keep the others waiting. */
              c->easy_setopt(e, CURLOPT_PIPEWAIT, strncasecmp(t->url, "https:", 6) == 0 ? 1L : 0L) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_CONNECTTIMEOUT, timeout) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_LOW_SPEED_TIME, timeout) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_USERAGENT, "ggufmap/" GGUFMAP_VERSION_STRING) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_HTTPHEADER, (struct curl_slist *)t->headers) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_HEADERDATA, t) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_WRITEDATA, t) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf) == CURLE_OK &&
              c->easy_setopt(e, CURLOPT_PRIVATE, t) == CURLE_OK &&
              (!o->cacert || c->easy_setopt(e, CURLOPT_CAINFO, o->cacert) == CURLE_OK);
    t->started_ns = gm_now_ns();
    return ok ? NULL : "libcurl refused an option";
}

void gm_http_release(gm_transfer *t) {
    if (t->easy) t->curl->easy_cleanup(t->easy);
    if (t->headers) t->curl->slist_free_all(t->headers);
    t->easy = NULL;
    t->headers = NULL;
}

/* ------------------------------------------------------------------------ */
/* The outcome                                                               */
/* ------------------------------------------------------------------------ */

const char *gm_http_version(const gm_transfer *t) {
    long v = 0;
    if (t->easy) t->curl->easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &v);
    switch (v) {
    case CURL_HTTP_VERSION_1_0: return "HTTP/1.0";
    case CURL_HTTP_VERSION_1_1: return "HTTP/1.1";
    case CURL_HTTP_VERSION_2_0: return "HTTP/2";
    case CURL_HTTP_VERSION_3: return "HTTP/3";
    default: return "HTTP";
    }
}

const char *gm_http_location(const gm_transfer *t) {
    char *where = NULL;
    if (!t->easy || t->curl->easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &where) != CURLE_OK) return NULL;
    return where;
}

void gm_http_describe_failure(const gm_transfer *t, uint32_t timeout_s, char *out, size_t cap) {
    CURLcode rc = (CURLcode)t->result;
    const char *detail = t->errbuf[0] ? t->errbuf : t->curl->easy_strerror(rc);
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(out, cap, "%s for %u s (timeout; %s)", t->status ? "no data" : "no answer", timeout_s, detail);
        break;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        snprintf(out, cap,
                 "TLS: the server's certificate is not trusted (%s); give its CA with --cacert FILE or "
                 "CURL_CA_BUNDLE",
                 detail);
        break;
    case CURLE_PARTIAL_FILE:
        snprintf(out, cap, "the answer ended after %" PRIu64 " of %" PRIu64 " body bytes (truncated)",
                 t->body_bytes, t->length);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        snprintf(out, cap, "cannot connect (%s)", detail);
        break;
    case CURLE_OUT_OF_MEMORY:
#if LIBCURL_VERSION_NUM >= 0x080600
    case CURLE_TOO_LARGE:
#endif
        if (t->body_started) goto other; /* a body is kept by us, not by libcurl: a real shortage */
        /* libcurl refuses a header line over CURL_MAX_HTTP_HEADER (100 KB)
         * with this code: no shortage of memory, an answer no file server
         * gives (a Location or a cookie that long). */
        if (t->status)
            snprintf(out, cap,
                     "the HTTP %ld answer has a header line (a Location, a cookie...) longer than the 100 KB libcurl "
                     "reads: not an answer a file server gives",
                     t->status);
        else
            snprintf(out, cap, "the answer's status or header lines are longer than the 100 KB libcurl reads");
        break;
    other:
    default: snprintf(out, cap, "%s (%s)", t->curl->easy_strerror(rc), detail); break;
    }
}

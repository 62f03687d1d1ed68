/*
 * remote_url.c - names of remote files: what is a URL, hf:// resolved
 * through the endpoint, credentials kept out of every message, origins
 * compared (the token goes to the endpoint's origin only), and the part of a
 * name that llama.cpp's split naming applies to.
 *
 * Everything here is string work on names of at most a few hundred bytes;
 * URLs are parsed with libcurl's own URL parser (curl_url, through the
 * session's table: remote_curl.h), so that what we compare is what libcurl
 * will connect to.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#ifndef __EMSCRIPTEN__
#include "remote_curl.h" /* libcurl's URL parser (the browser build compares no origins) */
#endif
#include "remote_internal.h"

static bool has_prefix_nocase(const char *s, const char *prefix) {
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

bool ggufmap_is_url(const char *name) {
    return gm_url_is_http(name) || has_prefix_nocase(name, "hf://");
}

bool gm_url_is_http(const char *url) {
    return has_prefix_nocase(url, "http://") || has_prefix_nocase(url, "https://");
}

size_t gm_url_name_len(const char *name) {
    if (!ggufmap_is_url(name)) return strlen(name);
    const char *rest = strstr(name, "://") + 3;
    return (size_t)(rest - name) + strcspn(rest, "?#");
}

/* ------------------------------------------------------------------------ */
/* Redaction                                                                 */
/* ------------------------------------------------------------------------ */

char *gm_url_redacted(const char *url) {
    const char *scheme_end = strstr(url, "://");
    if (!scheme_end) return strdup(url);
    const char *host = scheme_end + 3;
    size_t authority = strcspn(host, "/?#");
    const char *at = NULL; /* the last '@' of the authority ends any user:password */
    for (size_t i = 0; i < authority; i++)
        if (host[i] == '@') at = host + i;
    if (!at) return strdup(url);
    size_t head = (size_t)(host - url), tail = strlen(at + 1);
    char *out = malloc(head + tail + 1);
    if (!out) return NULL;
    memcpy(out, url, head);
    memcpy(out + head, at + 1, tail + 1);
    return out;
}

char *gm_url_for_log(const char *url) {
    char *s = gm_url_redacted(url);
    if (!s) return NULL;
    char *q = strchr(s, '?');
    if (q && strlen(q) > 2) {
        /* "?…" fits where the query was: it is at least 3 bytes long. */
        memcpy(q, "?\xe2\x80\xa6", 4);
        q[4] = '\0';
    }
    return s;
}

/* ------------------------------------------------------------------------ */
/* Origins                                                                   */
/* ------------------------------------------------------------------------ */

#ifndef __EMSCRIPTEN__ /* the browser build sends no token: it compares no origins (byte_source_web.c) */

/* scheme, host and port of url, lower-cased, as "https://host:443". */
static bool origin_of(const gm_curl *c, const char *url, char *out, size_t cap) {
    CURLU *u = c->url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    bool ok = u && c->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              c->url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              c->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
              c->url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK;
    if (ok) {
        int n = snprintf(out, cap, "%s://%s:%s", scheme, host, port);
        ok = n > 0 && (size_t)n < cap;
        for (char *p = out; ok && *p; p++) *p = (char)tolower((unsigned char)*p);
    }
    c->free(scheme);
    c->free(host);
    c->free(port);
    if (u) c->url_cleanup(u);
    return ok;
}

bool gm_url_same_origin(const gm_curl *curl, const char *a, const char *b) {
    char oa[512], ob[512];
    return origin_of(curl, a, oa, sizeof oa) && origin_of(curl, b, ob, sizeof ob) && strcmp(oa, ob) == 0;
}
#endif

/* ------------------------------------------------------------------------ */
/* hf://OWNER/REPO[@REVISION]/PATH                                           */
/* ------------------------------------------------------------------------ */

/* Appends s[0, n) to out (room for cap), percent-encoding what is not
 * unreserved or listed in keep.  Returns the new length, or cap when out is
 * full. */
static size_t append_encoded(char *out, size_t used, size_t cap, const char *s, size_t n, const char *keep) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n && used < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (isalnum(ch) || (ch && strchr("-._~", ch)) || (ch && strchr(keep, ch))) {
            out[used++] = (char)ch;
        } else if (used + 3 < cap) {
            out[used++] = '%';
            out[used++] = hex[ch >> 4];
            out[used++] = hex[ch & 15];
        } else {
            used = cap;
        }
    }
    return used;
}

/* "." or "..", dots and all percent-encoded (%2E): a name, not a step. */
static size_t append_dot_segment(char *out, size_t used, size_t cap, const char *seg, size_t len) {
    if ((len != 1 && len != 2) || memcmp(seg, "..", len) != 0) return SIZE_MAX;
    for (size_t k = 0; k < len; k++) {
        if (used + 3 >= cap) return cap;
        memcpy(out + used, "%2E", 3);
        used += 3;
    }
    return used;
}

size_t gm_url_append_path(char *out, size_t used, size_t cap, const char *s, size_t n, const char *keep) {
    bool by_segment = strchr(keep, '/') != NULL; /* else the whole piece is one segment */
    const char *end = s + n;
    for (const char *seg = s; used < cap;) {
        const char *stop = by_segment ? memchr(seg, '/', (size_t)(end - seg)) : NULL;
        if (!stop) stop = end;
        size_t len = (size_t)(stop - seg), dots = append_dot_segment(out, used, cap, seg, len);
        used = dots != SIZE_MAX ? dots : append_encoded(out, used, cap, seg, len, keep);
        if (stop == end) break;
        if (used < cap) out[used++] = '/';
        seg = stop + 1;
    }
    return used;
}

/* Splits "OWNER/REPO[@REVISION]/PATH" into its parts (pointers into s).  A
 * revision ends at the next '/', except the hub's refs/pr/N and
 * refs/convert/NAME, which run over two more (huggingface_hub reads them so). */
static bool split_hf(const char *s, const char **repo, size_t *repo_len, const char **rev, size_t *rev_len,
                     const char **path) {
    const char *slash1 = strchr(s, '/');
    if (!slash1 || slash1 == s) return false;
    size_t name_len = strcspn(slash1 + 1, "@/");
    const char *after = slash1 + 1 + name_len;
    if (name_len == 0 || !*after) return false;
    *repo = s;
    *repo_len = (size_t)(after - s);
    *rev = "main";
    *rev_len = 4;
    if (*after == '@') {
        *rev = after + 1;
        const char *end = *rev + strcspn(*rev, "/");
        if (strncmp(*rev, "refs/pr/", 8) == 0 || strncmp(*rev, "refs/convert/", 13) == 0) {
            const char *third = strchr(*rev + 5, '/') + 1; /* the N or NAME */
            end = third + strcspn(third, "/");
        }
        *rev_len = (size_t)(end - *rev);
        if (*rev_len == 0 || *end != '/') return false;
        after = end;
    }
    *path = after + 1;
    return **path != '\0';
}

int gm_url_resolve(const char *endpoint, const char *name, char **url, ggufmap_error *err) {
    *url = NULL;
    if (gm_url_is_http(name)) {
        *url = strdup(name);
        return *url ? GGUFMAP_OK : gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    const char *repo, *rev, *path;
    size_t repo_len, rev_len;
    if (!has_prefix_nocase(name, "hf://") || !split_hf(name + 5, &repo, &repo_len, &rev, &rev_len, &path))
        return gm_fail(err, GGUFMAP_EINVAL, "%s: expected hf://OWNER/REPO[@REVISION]/PATH.gguf", name);
    size_t cap = strlen(endpoint) + 3 * strlen(name) + 32, used;
    char *out = malloc(cap);
    if (!out) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    used = (size_t)snprintf(out, cap, "%s/", endpoint);
    used = gm_url_append_path(out, used, cap, repo, repo_len, "/");
    used = append_encoded(out, used, cap, "/resolve/", 9, "/");
    used = gm_url_append_path(out, used, cap, rev, rev_len, "%"); /* refs/pr/1 -> refs%2Fpr%2F1, as the hub wants */
    used = append_encoded(out, used, cap, "/", 1, "/");
    used = gm_url_append_path(out, used, cap, path, strlen(path), "/");
    if (used >= cap) {
        free(out);
        return gm_fail(err, GGUFMAP_EINVAL, "%s: name too long", name);
    }
    out[used] = '\0';
    *url = out;
    return GGUFMAP_OK;
}

/*
 * remote_curl.h - the libcurl functions the remote module calls, loaded on
 * demand (not installed).
 *
 * Why not linked: libcurl brings about 30 libraries (TLS, HTTP/2, IDN,
 * LDAP, Kerberos, SSH...) that the dynamic loader maps and relocates at
 * every start of every command, though only a model given by URL needs
 * them: `ggufmap --version` took 6-8 ms for it, and `inspect` of a local
 * file paid the same (issue 21).  So the library is built against
 * libcurl's headers but not linked with it; a remote session (and only a
 * remote session) loads it, through the portability layer
 * (gm_os_library_open: dlopen), and keeps this table of its functions.
 *
 * Data structure.  One gm_curl per session (ggufmap_remote), filled by
 * gm_curl_load; nothing global.  Each entry has the type of libcurl's own
 * declaration: remote_curl.c checks them against curl/curl.h at compile
 * time.  The library file is the one the build found (its SONAME, e.g.
 * libcurl.so.4, GGUFMAP_CURL_LIBRARY), else the system's usual name.
 */
#ifndef GGUFMAP_REMOTE_CURL_H
#define GGUFMAP_REMOTE_CURL_H

#include <curl/curl.h>
#include <time.h>

#include "ggufmap/error.h"

/* X(return type, name without "curl_", parameter list) */
#define GM_CURL_FUNCTIONS(X)                                                                     \
    X(CURLcode, global_init, (long))                                                             \
    X(void, global_cleanup, (void))                                                              \
    X(CURL *, easy_init, (void))                                                                 \
    X(CURLcode, easy_setopt, (CURL *, CURLoption, ...))                                         \
    X(CURLcode, easy_getinfo, (CURL *, CURLINFO, ...))                                          \
    X(void, easy_cleanup, (CURL *))                                                              \
    X(const char *, easy_strerror, (CURLcode))                                                   \
    X(CURLcode, easy_pause, (CURL *, int))                                                       \
    X(struct curl_slist *, slist_append, (struct curl_slist *, const char *))                   \
    X(void, slist_free_all, (struct curl_slist *))                                               \
    X(time_t, getdate, (const char *, const time_t *))                                           \
    X(CURLM *, multi_init, (void))                                                               \
    X(CURLMcode, multi_cleanup, (CURLM *))                                                       \
    X(CURLMcode, multi_setopt, (CURLM *, CURLMoption, ...))                                     \
    X(CURLMcode, multi_add_handle, (CURLM *, CURL *))                                            \
    X(CURLMcode, multi_remove_handle, (CURLM *, CURL *))                                         \
    X(CURLMcode, multi_perform, (CURLM *, int *))                                                \
    X(CURLMcode, multi_poll, (CURLM *, struct curl_waitfd *, unsigned int, int, int *))         \
    X(CURLMsg *, multi_info_read, (CURLM *, int *))                                              \
    X(CURLU *, url, (void))                                                                      \
    X(void, url_cleanup, (CURLU *))                                                              \
    X(CURLUcode, url_set, (CURLU *, CURLUPart, const char *, unsigned int))                     \
    X(void, free, (void *))

#define GM_CURL_TYPEDEF(ret, name, params) typedef ret(*gm_curl_##name##_fn) params;
GM_CURL_FUNCTIONS(GM_CURL_TYPEDEF)
#undef GM_CURL_TYPEDEF
/* curl_url_get's handle became const in libcurl 8.2; either is taken. */
typedef CURLUcode (*gm_curl_url_get_fn)(CURLU *, CURLUPart, char **, unsigned int);

typedef struct gm_curl {
    void *lib; /* the handle gm_os_library_open gave */
#define GM_CURL_FIELD(ret, name, params) gm_curl_##name##_fn name;
    GM_CURL_FUNCTIONS(GM_CURL_FIELD)
#undef GM_CURL_FIELD
    gm_curl_url_get_fn url_get;
} gm_curl;

/* Loads libcurl and every function of the table.  GGUFMAP_OK, or GGUFMAP_EIO
 * with err saying which library or function is missing (remote models
 * then need libcurl installed: Debian's libcurl4).  The library stays
 * loaded for the life of the process (it is never unloaded: OpenSSL and
 * others keep exit handlers in what it pulls in). */
int gm_curl_load(gm_curl *c, ggufmap_error *err);

#endif

/*
 * remote_curl.c - libcurl loaded on demand: the table of its functions
 * (remote_curl.h says why it is not linked).
 */
#include <stdio.h>

#include "internal.h"
#include "os.h"
#include "remote_curl.h"

#ifndef GGUFMAP_CURL_LIBRARY
#define GGUFMAP_CURL_LIBRARY "" /* the build found no SONAME: the system's usual name only */
#endif

/* Each entry's type is libcurl's own: checked here, where the header
 * declares them (the functions are only named, never called or linked). */
#define GM_CURL_CHECK(ret, name, params)                                                         \
    _Static_assert(_Generic(&curl_##name, gm_curl_##name##_fn: 1, default: 0),                   \
                   "curl_" #name " differs from its entry in gm_curl (remote_curl.h)");
GM_CURL_FUNCTIONS(GM_CURL_CHECK)
#undef GM_CURL_CHECK
_Static_assert(_Generic(&curl_url_get, CURLUcode(*)(CURLU *, CURLUPart, char **, unsigned int): 1,
                        CURLUcode(*)(const CURLU *, CURLUPart, char **, unsigned int): 1, default: 0),
               "curl_url_get differs from its entry in gm_curl (remote_curl.h)");

/* The function named name of c->lib, cast to its entry's type (*to). */
static bool load_symbol(const gm_curl *c, const char *name, gm_os_function *to) {
    *to = gm_os_library_symbol(c->lib, name);
    return *to != NULL;
}

int gm_curl_load(gm_curl *c, ggufmap_error *err) {
    memset(c, 0, sizeof *c);
    char conventional[64], why[256] = "";
    gm_os_library_name(conventional, sizeof conventional, "curl", 4);
    const char *names[] = {GGUFMAP_CURL_LIBRARY, conventional};
    for (size_t i = 0; i < 2 && !c->lib; i++)
        if (names[i][0]) c->lib = gm_os_library_open(names[i], why, sizeof why);
    if (!c->lib)
        return gm_fail(err, GGUFMAP_EIO,
                       "models given by URL need libcurl, which cannot be loaded (%s%s%s): %s; install it (Debian "
                       "and Ubuntu: libcurl4)",
                       GGUFMAP_CURL_LIBRARY, GGUFMAP_CURL_LIBRARY[0] ? ", " : "", conventional, why);
    gm_os_function f = NULL;
#define GM_CURL_LOAD(ret, name, params)                                                         \
    if (!load_symbol(c, "curl_" #name, &f))                                                     \
        return gm_fail(err, GGUFMAP_EIO, "libcurl has no curl_" #name ": too old (7.66 or later is needed)"); \
    c->name = (gm_curl_##name##_fn)f;
    GM_CURL_FUNCTIONS(GM_CURL_LOAD)
    GM_CURL_LOAD(CURLUcode, url_get, ())
#undef GM_CURL_LOAD
    return GGUFMAP_OK;
}

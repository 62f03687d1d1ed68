/*
 * byte_source.h - where the reader's bytes come from (internal).
 *
 * The reader (source.c) parses a GGUF header with a bounds-checked cursor over
 * one contiguous run of bytes, base[0, have), and keeps pointers into it
 * (zero-copy keys, strings and names).  A byte source supplies that run:
 *
 *   file  (source.c)  the whole file mapped read-only: have == size from the
 *                     start, so the cursor never has to ask for more;
 *   http  (remote.c)  only the header: the first bytes come with the open,
 *                     and when the cursor reaches past `have` it asks fetch()
 *                     for exactly the bytes it needs next.
 *
 * In the browser build (make web) byte_source_web.c gives both kinds: http
 * fetched by the browser, and file, a file picked from disk and read in
 * slices as http is (gm_web_file_open), never mapped or read whole.
 *
 * Either way base never moves while the source lives (a remote source fills
 * an address-space reservation), so pointers taken early stay valid, and the
 * parser runs unchanged over both: a hostile server is a hostile file.  The
 * operations are a static const table, as in Redis's rio.
 *
 * One exception, for wasm, which has no address space to reserve: the
 * browser's sources (make web, byte_source_web.c) may move base when a
 * fetch grows their buffer.  The reader notices (base is not where it was)
 * and parses again from byte 0 over the bytes already there; pointers are
 * only ever taken from the final parse.
 */
#ifndef GGUFMAP_BYTE_SOURCE_H
#define GGUFMAP_BYTE_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "internal.h"

typedef struct gm_byte_source gm_byte_source;

typedef struct gm_byte_source_ops {
    const char *kind; /* "file" or "http" */
    /* Makes bytes [0, end) readable at base; end <= limit.  Returns true, or
     * false with bs->err set (a network or server failure). */
    bool (*fetch)(gm_byte_source *bs, uint64_t end);
    /* The reader has parsed the header, which ends at header_end: a remote
     * source stops reading (closing a connection that still streams) and
     * keeps its bytes in the cache.  May be NULL. */
    void (*parsed)(gm_byte_source *bs, uint64_t header_end);
    /* Releases everything, bs included. */
    void (*close)(gm_byte_source *bs);
} gm_byte_source_ops;

struct gm_byte_source {
    const gm_byte_source_ops *ops;
    const uint8_t *base; /* bytes [0, have); never moves */
    uint64_t size;       /* bytes in the whole file */
    uint64_t have;       /* readable so far */
    uint64_t limit;      /* the reader asks for nothing past this (size, or a remote header cap) */
    int fd;              /* a local file's descriptor, else -1 */
    gm_file_identity identity; /* a local file's, when opened (internal.h) */
    uint64_t fetched;    /* remote: body bytes received */
    uint64_t requests;   /* remote: HTTP requests made (redirect hops and retries included) */
    ggufmap_error err;   /* why the last fetch failed */
};

#ifdef __EMSCRIPTEN__
/* The browser's local file: the file picked from disk under the name path,
 * read in slices as the header needs them (byte_source_web.c).  As a local
 * open: "PATH: cannot open: No such file or directory" when none was
 * picked under that name. */
int gm_web_file_open(const char *path, gm_byte_source **out, ggufmap_error *err);
#endif

#endif

/*
 * ggufmap/remote.h - reading models where they are: HTTP(S) and Hugging Face,
 * headers only.
 *
 * A remote session (ggufmap_remote) carries the options and the connections
 * of every file read over the network.  ggufmap_source_open_url() and
 * ggufmap_model_open_url() take it and fetch only each file's header bytes,
 * with range requests:
 *
 *   - the first request asks for the first `first_range` bytes (64 KiB by
 *     default: all of a split model's later shards and of small models); when
 *     the reader needs more, the next request asks for what it needs, at
 *     least as much again as it has (so a header of H bytes costs at most
 *     2 H + first_range bytes in about log2(H / first_range) requests);
 *   - a server that ignores Range (200 with the whole body) is read as a
 *     stream that pauses while the reader has enough, and is closed once the
 *     header is parsed: only what was read is counted;
 *   - redirects are followed (10 at most), HTTP/2 is used where offered,
 *     429 and 5xx answers are retried `retries` times with doubling waits
 *     (Retry-After honoured, up to `max_retry_wait_s`);
 *   - the session waits for servers `timeout_s` seconds in all: once that is
 *     spent, every file not yet had fails, whether the server is silent,
 *     stalls, or drips its bytes (a deadline, not an idle timeout);
 *   - the shards of a split model are fetched in parallel (one connection
 *     each, or streams of one HTTP/2 connection).
 *
 * Names: http://…, https://…, and hf://OWNER/REPO[@REVISION]/PATH, which is
 * ENDPOINT/OWNER/REPO/resolve/REVISION/PATH (revision main by default).  The
 * token is sent as "Authorization: Bearer" only to the endpoint's own
 * scheme, host and port, never to another host a redirect leads to, and is
 * never part of a message; user:password in a URL is removed from every
 * message too.
 *
 * With a cache folder, each file's header bytes are kept under the URL with
 * the server's ETag: the next open asks once, with If-None-Match, and reads
 * nothing more when the server answers 304; `offline` uses the cache without
 * asking at all.
 */
#ifndef GGUFMAP_REMOTE_H
#define GGUFMAP_REMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggufmap_remote ggufmap_remote;

/* One line (no newline) describing a request and its answer, for --verbose:
 * method, URL (credentials removed), range, status, bytes, HTTP version. */
typedef void (*ggufmap_remote_log_fn)(void *ctx, const char *line);

typedef struct ggufmap_remote_opts {
    const char *endpoint;      /* hub for hf:// and -hf; NULL: https://huggingface.co */
    const char *token;         /* bearer token for the endpoint only; NULL: none */
    const char *cacert;        /* CA bundle (PEM) to trust; NULL: the system's */
    const char *cache_dir;     /* header cache; NULL: none */
    bool offline;              /* no request at all: the cache or an error */
    uint32_t timeout_s;        /* the session's whole network time: connecting, stalls, bodies
                                  however slow, waits before retries, all together (default 30) */
    uint32_t retries;          /* on 429 and 5xx (default 4) */
    uint32_t max_retry_wait_s; /* longest wait honoured, Retry-After included (default 60) */
    uint64_t first_range;      /* bytes asked by the first request (default 64 KiB) */
    uint64_t max_header;       /* most header bytes read from one file (default 256 MiB) */
    uint32_t parallel;         /* shards fetched at the same time (default 16) */
    ggufmap_remote_log_fn log; /* NULL: silent */
    void *log_ctx;
} ggufmap_remote_opts;

/* Fills opts with the defaults above. */
GGUFMAP_API void ggufmap_remote_opts_init(ggufmap_remote_opts *opts);

/* Starts a session.  The strings in opts are copied.  Returns GGUFMAP_OK, or
 * GGUFMAP_EINVAL (a bad endpoint) / GGUFMAP_ENOMEM / GGUFMAP_EIO (libcurl
 * could not start) with err set.  A session is used by one thread at a time;
 * it initialises libcurl (curl_global_init, reference-counted by libcurl and
 * thread-safe from libcurl 7.84 on) and ggufmap_remote_free releases it. */
GGUFMAP_API int ggufmap_remote_new(const ggufmap_remote_opts *opts, ggufmap_remote **out, ggufmap_error *err);

/* Ends the session: its connections are closed.  Sources and models opened
 * through it stay valid (they hold their header bytes).  NULL is allowed. */
GGUFMAP_API void ggufmap_remote_free(ggufmap_remote *remote);

/* True when name starts with http://, https:// or hf:// (any case). */
GGUFMAP_API bool ggufmap_is_url(const char *name);

/* llama.cpp's -hf OWNER/REPO[:QUANT]: lists the repository through the
 * endpoint's API (/api/models/OWNER/REPO/refs, then .../tree/COMMIT) and
 * picks a model file as llama.cpp v0.5.0 does (common/download.cpp,
 * find_best_model): the first .gguf in the listing, mmproj/imatrix/mtp-/
 * eagle3-/dflash-/dspark- files and split shards other than the first
 * excepted, whose path contains QUANT followed by '.' or '-' (any case);
 * without QUANT, Q4_K_M, then Q8_0, then the first model file.  On success
 * *name is hf://OWNER/REPO@COMMIT/PATH (free() it). */
GGUFMAP_API int ggufmap_remote_hf_pick(ggufmap_remote *remote, const char *repo_quant, char **name, ggufmap_error *err);

/* Body bytes received and requests made through the session so far, the
 * -hf listing included. */
GGUFMAP_API void ggufmap_remote_totals(const ggufmap_remote *remote, uint64_t *fetched_bytes, uint64_t *requests);

#ifdef __cplusplus
}
#endif
#endif

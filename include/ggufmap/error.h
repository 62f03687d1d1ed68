/*
 * ggufmap/error.h - status codes and the error record every call fills in.
 *
 * Every fallible ggufmap call returns an int status (GGUFMAP_OK == 0) and, when
 * given a non-NULL ggufmap_error, leaves in it a one-line message that names
 * the file, the byte offset and the key or tensor concerned, e.g.
 *
 *   model.gguf: offset 1184: tensor 'blk.0.attn_q.weight': dimension 1 is -3
 *
 * Messages are for people; programs switch on the status.  No call aborts or
 * prints on its own because of what a file contains.
 */
#ifndef GGUFMAP_ERROR_H
#define GGUFMAP_ERROR_H

/* GGUFMAP_API marks the public functions, the only symbols the shared
 * library exports: it is built with hidden visibility by default, so the
 * library's internal helpers (gm_*, json_*) cannot collide with other
 * libraries'.  Every function declared in these headers carries it. */
#if defined(__GNUC__) || defined(__clang__)
#define GGUFMAP_API __attribute__((visibility("default")))
#else
#define GGUFMAP_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ggufmap_status {
    GGUFMAP_OK       = 0,
    GGUFMAP_EFORMAT  = 1, /* the bytes are not a GGUF that llama.cpp accepts */
    GGUFMAP_EIO      = 2, /* the operating system refused (open, read, write, mmap) */
    GGUFMAP_ENOMEM   = 3, /* out of memory */
    GGUFMAP_EINVAL   = 4, /* a bad argument from the caller */
    GGUFMAP_EEXIST   = 5, /* an output path exists already; nothing is overwritten */
    GGUFMAP_ENOSPC   = 6, /* the output's file system is full */
    GGUFMAP_ENOTFOUND = 7 /* a named key, tensor or shard does not exist */
} ggufmap_status;

typedef struct ggufmap_error {
    int  status;        /* one of ggufmap_status */
    int  sys_errno;     /* errno behind GGUFMAP_EIO / ENOSPC / EEXIST, else 0 */
    char message[1024]; /* NUL-terminated, one line, no trailing newline */
} ggufmap_error;

/* A short constant name for a status ("format", "io", ...). Never NULL. */
GGUFMAP_API const char *ggufmap_status_name(int status);

/* Clears an error record to GGUFMAP_OK and an empty message. NULL is allowed. */
GGUFMAP_API void ggufmap_error_clear(ggufmap_error *err);

#ifdef __cplusplus
}
#endif
#endif

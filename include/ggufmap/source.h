/*
 * ggufmap/source.h - one GGUF file, read exactly as llama.cpp v0.5.0 reads it.
 *
 * The GGUF file format (all integers little-endian; "string" = u64 length then
 * that many bytes, no NUL terminator):
 *
 *   1. magic        4 bytes "GGUF"
 *   2. version      u32: 2 or 3 (1 and > 3 are refused; a version whose low 16
 *                   bits are 0 is a big-endian file and is refused too)
 *   3. n_tensors    i64
 *   4. n_kv         i64
 *   5. n_kv pairs   string key (non-empty, unique byte for byte; it may hold
 *                   NUL bytes, see ggufmap_source_find_kv); i32 value type;
 *                   the value.
 *                   An ARRAY is i32 element type, u64 count, then the elements;
 *                   arrays of arrays are refused.
 *   6. n_tensors tensor infos: string name (< 64 bytes, unique as a C string);
 *                   u32 n_dims (<= 4); i64 ne[n_dims] (>= 0); i32 ggml type;
 *                   u64 offset relative to the data section.
 *   7. padding to general.alignment (a u32 power of two; 32 when absent)
 *   8. the data section.  Tensor data must be packed in info order: tensor i
 *      starts at sum over j < i of PAD(bytes_j, alignment).  llama.cpp also
 *      requires every tensor to end inside the file.
 *
 * ggufmap_source_open() checks everything ggml's gguf_init_from_file() and
 * llama.cpp's loader check for one file (llama-loader.md sections 1.4-1.7),
 * with the same accept/reject outcome, and never reads outside the file.  It
 * maps the file read-only and keeps pointers into the mapping: keys, strings
 * and tensor names are not copied ("zero-copy"), so they are NOT NUL-
 * terminated; print them with "%.*s".  Each key and tensor name goes through
 * a hash table, so parsing is O(1) per field.
 *
 * ggufmap_source_open_url() reads a file over HTTP(S) instead (remote.h): only
 * its header bytes are fetched, and they go through the same parser and the
 * same checks (a hostile server is a hostile file).  The file size comes from
 * the server, so the check that tensor data ends inside the file is made too.
 */
#ifndef GGUFMAP_SOURCE_H
#define GGUFMAP_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/remote.h"
#include "ggufmap/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGUFMAP_MAX_DIMS 4
#define GGUFMAP_MAX_NAME 64              /* a tensor name must be shorter than this */
#define GGUFMAP_DEFAULT_ALIGNMENT 32
#define GGUFMAP_MAX_STRING (1024ull * 1024 * 1024) /* longest string ggml reads */
#define GGUFMAP_MAX_ARRAY  (1024ull * 1024 * 1024) /* most elements in an array */

/* Flags for ggufmap_source_open() and ggufmap_model_open(). */
enum {
    /* List tensors of unknown or retired ggml types instead of refusing the
     * file: such a tensor's size is taken from the next tensor's offset (or the
     * end of the file for the last one) and marked size_estimated. */
    GGUFMAP_OPEN_LENIENT = 1u << 0,
    /* Skip the check that tensor data ends inside the file, for a file of
     * which only the header is at hand.  llama.cpp would refuse a short file. */
    GGUFMAP_OPEN_HEADER_ONLY = 1u << 1
};

typedef struct ggufmap_source ggufmap_source;

/* One key-value pair, pointing into the mapping. */
typedef struct ggufmap_kv {
    const char *key;         /* key bytes, not NUL-terminated */
    uint64_t key_len;
    int32_t type;            /* enum ggufmap_value_type; ARRAY for arrays */
    int32_t elem_type;       /* element type of an ARRAY, else equal to type */
    uint64_t count;          /* elements of an ARRAY, else 1 */
    const uint8_t *value;    /* encoded value: for an ARRAY, the first element */
    uint64_t value_size;     /* bytes of the encoded value (the elements, for arrays) */
    uint64_t offset;         /* file offset where the pair starts (its key length) */
} ggufmap_kv;

/* One tensor info. */
typedef struct ggufmap_tensor {
    const char *name;        /* not NUL-terminated; name_len stops at the first NUL, as ggml */
    uint32_t name_len;
    uint32_t n_dims;
    int64_t ne[GGUFMAP_MAX_DIMS]; /* elements per dimension; 1 past n_dims */
    int32_t type;            /* ggml type id; see ggufmap_type() */
    bool size_estimated;     /* lenient mode, unknown type: size from the next offset */
    uint32_t shard;          /* index of the file in its model (0 for a lone source) */
    uint64_t rel_offset;     /* offset as stored, relative to the data section */
    uint64_t offset;         /* absolute file offset of the first data byte */
    uint64_t size;           /* bytes of data (ggml_nbytes), padding excluded */
    uint64_t info_offset;    /* file offset of this tensor's info record */
    int64_t index;           /* position among this file's tensor infos */
} ggufmap_tensor;

/* Opens and checks path.  flags: GGUFMAP_OPEN_*.  On success *out owns the
 * mapping and the file descriptor and GGUFMAP_OK is returned; on failure
 * *out is NULL, err says what and where, and nothing stays open.  The file is
 * opened O_RDONLY and never written. */
GGUFMAP_API int ggufmap_source_open(const char *path, unsigned flags, ggufmap_source **out, ggufmap_error *err);

/* Opens and checks the file at url (http://, https:// or hf://OWNER/REPO
 * [@REVISION]/PATH, see remote.h) through the session remote, fetching only
 * the header bytes.  As ggufmap_source_open() otherwise; the source's path is
 * the URL with any user:password removed.  Network and server failures are
 * GGUFMAP_EIO (GGUFMAP_ENOTFOUND for 404) with a message naming the URL. */
GGUFMAP_API int ggufmap_source_open_url(const char *url, unsigned flags, ggufmap_remote *remote, ggufmap_source **out,
                            ggufmap_error *err);

/* Releases the mapping and the descriptor (or a remote file's header bytes
 * and its connection). NULL is allowed. */
GGUFMAP_API void ggufmap_source_free(ggufmap_source *src);

GGUFMAP_API const char *ggufmap_source_path(const ggufmap_source *src);
GGUFMAP_API uint64_t ggufmap_source_file_size(const ggufmap_source *src);
GGUFMAP_API uint32_t ggufmap_source_version(const ggufmap_source *src);
GGUFMAP_API uint32_t ggufmap_source_alignment(const ggufmap_source *src);
/* File offset where the data section starts (after the alignment padding). */
GGUFMAP_API uint64_t ggufmap_source_data_offset(const ggufmap_source *src);
/* Bytes of the data section as ggml sizes it: sum of PAD(bytes, alignment). */
GGUFMAP_API uint64_t ggufmap_source_data_size(const ggufmap_source *src);
/* The read-only mapping of the whole file (NULL for an empty file).  For a
 * remote source only the header bytes are there: no tensor data. */
GGUFMAP_API const uint8_t *ggufmap_source_bytes(const ggufmap_source *src);
/* The file descriptor (read-only), for copying data ranges without mapping
 * them; -1 for a remote source. */
GGUFMAP_API int ggufmap_source_fd(const ggufmap_source *src);
/* True when the source was opened with ggufmap_source_open_url(). */
GGUFMAP_API bool ggufmap_source_is_remote(const ggufmap_source *src);
/* Body bytes received and HTTP requests made (redirect hops and retries
 * included) for a remote source; 0 and 0 for a local one. */
GGUFMAP_API void ggufmap_source_fetch_stats(const ggufmap_source *src, uint64_t *fetched_bytes, uint64_t *requests);

GGUFMAP_API int64_t ggufmap_source_n_kv(const ggufmap_source *src);
/* The i-th pair in file order, or NULL when i is out of range. */
GGUFMAP_API const ggufmap_kv *ggufmap_source_kv(const ggufmap_source *src, int64_t i);

/* THE key lookup: every reader of a key's meaning in ggufmap goes through
 * this function (or ggufmap_model_find_kv, which calls it on the first
 * shard), because it finds keys exactly as ggml's gguf_find_key and
 * llama.cpp's loader (get_key, get_arr) do:
 *
 *   the FIRST pair, in file order, whose key read as a C string (its bytes
 *   up to the first NUL, all of them when there is none) equals the
 *   NUL-terminated key; NULL when there is none.
 *
 * Keys are found as pairs (a pointer, or NULL), tensors as indices (-1):
 * a tensor's index is what plans and placements refer to it by.
 *
 * A stored key may hold a NUL byte, and ggml keeps it whole: two keys that
 * differ only after a NUL are distinct (duplicate detection compares every
 * byte), but "general.alignment\0xyz" answers a lookup of
 * "general.alignment" when no earlier pair does.  The reader applies the
 * same rule to general.alignment, the model module to split.*, placement to
 * general.architecture and <arch>.* keys.  O(1). */
GGUFMAP_API const ggufmap_kv *ggufmap_source_find_kv(const ggufmap_source *src, const char *key);

GGUFMAP_API int64_t ggufmap_source_n_tensors(const ggufmap_source *src);
/* The i-th tensor info in file order, or NULL when i is out of range. */
GGUFMAP_API const ggufmap_tensor *ggufmap_source_tensor(const ggufmap_source *src, int64_t i);
/* Index of the tensor with this NUL-terminated name, or -1. */
GGUFMAP_API int64_t ggufmap_source_find_tensor(const ggufmap_source *src, const char *name);

/* ---- reading values (all return GGUFMAP_OK, or GGUFMAP_EINVAL on a type
 * mismatch or an index out of range, leaving *out untouched) ---- */

/* An integer or bool scalar of any width, as int64 (a u64 above INT64_MAX is EINVAL). */
GGUFMAP_API int ggufmap_kv_int(const ggufmap_kv *kv, int64_t *out);
/* A float32/float64 scalar, or an integer one, as double. */
GGUFMAP_API int ggufmap_kv_float(const ggufmap_kv *kv, double *out);
/* A STRING scalar: pointer into the mapping and length (not NUL-terminated). */
GGUFMAP_API int ggufmap_kv_string(const ggufmap_kv *kv, const char **str, uint64_t *len);
/* Element i of a numeric or bool ARRAY, as int64 or double. */
GGUFMAP_API int ggufmap_kv_array_int(const ggufmap_kv *kv, uint64_t i, int64_t *out);
GGUFMAP_API int ggufmap_kv_array_float(const ggufmap_kv *kv, uint64_t i, double *out);
/* Walks a string ARRAY: start with *cursor = 0; each call yields the next
 * element and advances *cursor.  Returns GGUFMAP_ENOTFOUND after the last. */
GGUFMAP_API int ggufmap_kv_array_next_string(const ggufmap_kv *kv, uint64_t *cursor, const char **str, uint64_t *len);

/* True when kv's key, read as a C string (up to its first NUL), equals the
 * NUL-terminated key: the comparison behind ggufmap_source_find_kv (ggml's
 * strcmp). */
GGUFMAP_API bool ggufmap_kv_key_is(const ggufmap_kv *kv, const char *key);

#ifdef __cplusplus
}
#endif
#endif

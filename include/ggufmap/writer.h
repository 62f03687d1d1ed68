/*
 * ggufmap/writer.h - writes GGUF files that llama.cpp v0.5.0 reads.
 *
 * Usage: create a writer, add key-value pairs and tensor infos in the order
 * they should appear in the file, then ggufmap_writer_write().  Tensor data is
 * streamed at write time from a source given per tensor: a caller's buffer, a
 * byte range of another file, a fill callback, or zeros.  Memory stays bounded
 * (one 1 MiB copy buffer) whatever the tensor sizes.  With
 * GGUFMAP_WRITE_SPARSE, zero data is left as holes, so a replica of a 100 GiB
 * model costs almost no disk.
 *
 * The layout is the one ggml's reader requires: data packed in info order,
 * each tensor at the running sum of PAD(bytes, alignment), the data section
 * starting at PAD(end of infos, alignment), the file ending after the last
 * tensor's padding (as ggml's and gguf-py's writers do).
 *
 * Safety: the output is written under a temporary name in the same folder,
 * fsynced, then renamed into place with RENAME_NOREPLACE: an existing path is
 * never overwritten, and on any error the temporary file is removed.
 */
#ifndef GGUFMAP_WRITER_H
#define GGUFMAP_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggufmap_writer ggufmap_writer;

/* Where a tensor's bytes come from. */
typedef enum ggufmap_data_kind {
    GGUFMAP_DATA_ZEROS = 0,    /* all zero bytes */
    GGUFMAP_DATA_BUFFER = 1,   /* buffer[0 .. size) in the caller's memory, alive until write returns */
    GGUFMAP_DATA_FILE = 2,     /* size bytes of file descriptor fd from file_offset */
    GGUFMAP_DATA_CALLBACK = 3  /* fill(ctx, offset_in_tensor, dst, len) writes len bytes; returns 0 or -1 */
} ggufmap_data_kind;

typedef struct ggufmap_data {
    ggufmap_data_kind kind;
    const void *buffer;
    int fd;
    uint64_t file_offset;
    int (*fill)(void *ctx, uint64_t offset, void *dst, size_t len);
    void *ctx;
} ggufmap_data;

/* Flags for ggufmap_writer_write(). */
enum {
    GGUFMAP_WRITE_SPARSE = 1u << 0 /* leave zero data (and padding) as holes */
};

/* A writer for GGUF version 3 with alignment 32 into *out.  GGUFMAP_OK, or
 * GGUFMAP_ENOMEM with *out NULL. */
GGUFMAP_API int ggufmap_writer_new(ggufmap_writer **out);
GGUFMAP_API void ggufmap_writer_free(ggufmap_writer *w);

/* The version field written (2 or 3; v2 and v3 share the layout). */
GGUFMAP_API int ggufmap_writer_set_version(ggufmap_writer *w, uint32_t version);
/* The data alignment (a power of two).  This does not add the
 * general.alignment key: add it as a u32 when alignment != 32, or llama.cpp
 * will read the file with 32. */
GGUFMAP_API int ggufmap_writer_set_alignment(ggufmap_writer *w, uint32_t alignment);

/* ---- key-value pairs; each returns GGUFMAP_OK, or EINVAL for an empty or
 * duplicate key, or ENOMEM.  Keys and values are copied. ---- */
GGUFMAP_API int ggufmap_writer_add_u8(ggufmap_writer *w, const char *key, uint8_t v);
GGUFMAP_API int ggufmap_writer_add_i8(ggufmap_writer *w, const char *key, int8_t v);
GGUFMAP_API int ggufmap_writer_add_u16(ggufmap_writer *w, const char *key, uint16_t v);
GGUFMAP_API int ggufmap_writer_add_i16(ggufmap_writer *w, const char *key, int16_t v);
GGUFMAP_API int ggufmap_writer_add_u32(ggufmap_writer *w, const char *key, uint32_t v);
GGUFMAP_API int ggufmap_writer_add_i32(ggufmap_writer *w, const char *key, int32_t v);
GGUFMAP_API int ggufmap_writer_add_u64(ggufmap_writer *w, const char *key, uint64_t v);
GGUFMAP_API int ggufmap_writer_add_i64(ggufmap_writer *w, const char *key, int64_t v);
GGUFMAP_API int ggufmap_writer_add_f32(ggufmap_writer *w, const char *key, float v);
GGUFMAP_API int ggufmap_writer_add_f64(ggufmap_writer *w, const char *key, double v);
GGUFMAP_API int ggufmap_writer_add_bool(ggufmap_writer *w, const char *key, int v);
GGUFMAP_API int ggufmap_writer_add_string(ggufmap_writer *w, const char *key, const char *v);
/* An array of count scalars of elem_type, given in host order (packed C
 * array of uint8_t/int32_t/float/... ; bool as uint8_t). */
GGUFMAP_API int ggufmap_writer_add_array(ggufmap_writer *w, const char *key, int32_t elem_type, uint64_t count,
                             const void *values);
GGUFMAP_API int ggufmap_writer_add_string_array(ggufmap_writer *w, const char *key, uint64_t count,
                                    const char *const *values);
/* A pair copied verbatim from a file: the key's key_len bytes (NUL bytes
 * included: ggml keeps such a key whole and so does the copy), value type,
 * element type (arrays), count (arrays) and the encoded value bytes as
 * ggufmap_kv gives them.  Every pair ggufmap_source_open accepts can be
 * copied; EINVAL only for an empty key, a key equal byte for byte to one
 * already added, or a value type out of range. */
GGUFMAP_API int ggufmap_writer_add_raw(ggufmap_writer *w, const char *key, size_t key_len, int32_t type, int32_t elem_type,
                           uint64_t count, const void *encoded, uint64_t encoded_size);

/* Adds a tensor info; its data will come from *data (copied descriptor).
 * EINVAL for a name of 64 bytes or more, a duplicate name, n_dims > 4, a
 * negative dimension, an unknown type, or ne[0] not a multiple of the block
 * size.  The tensor's size is ggufmap_type_nbytes(type, ne). */
GGUFMAP_API int ggufmap_writer_add_tensor(ggufmap_writer *w, const char *name, uint32_t n_dims, const int64_t *ne,
                              int32_t type, const ggufmap_data *data);

/* Number of tensors added, and the byte size the file will have. */
GGUFMAP_API int64_t ggufmap_writer_n_tensors(const ggufmap_writer *w);
GGUFMAP_API uint64_t ggufmap_writer_file_size(const ggufmap_writer *w);
/* Absolute file offset tensor i will have (i in add order), or UINT64_MAX. */
GGUFMAP_API uint64_t ggufmap_writer_tensor_offset(const ggufmap_writer *w, int64_t i);

/* The encoded header (magic, counts, pairs, tensor infos; no padding) in a
 * new malloc'd buffer the caller frees: *len bytes.  The data section starts
 * at ggufmap_writer_tensor_offset(w, 0), or at *len when there are no
 * tensors.  For callers that stream the data themselves (repack).  Returns
 * GGUFMAP_OK or GGUFMAP_ENOMEM; on error *out is NULL. */
GGUFMAP_API int ggufmap_writer_header(const ggufmap_writer *w, uint8_t **out, size_t *len);

/* Writes the file to path (which must not exist).  On error nothing is left
 * at path and no temporary file remains. */
GGUFMAP_API int ggufmap_writer_write(ggufmap_writer *w, const char *path, unsigned flags, ggufmap_error *err);

#ifdef __cplusplus
}
#endif
#endif

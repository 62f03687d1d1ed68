/*
 * ggufmap/hash.h - SHA-256 of tensor data, a model digest that does not
 * depend on tensor order or sharding, and model comparison.
 *
 * Per-tensor hashes are SHA-256 over a tensor's data bytes (ggml_nbytes,
 * padding excluded), exactly what llama.cpp's gguf-py/gguf/scripts/
 * gguf_hash.py hashes per tensor, so its `sha256` lines and ours agree.
 *
 * The model digest (version 1) is SHA-256 over, all integers little-endian:
 *
 *   "ggufmap-digest/1\n"
 *   u64 n_kv, then the first shard's key-value pairs WITHOUT split.no,
 *     split.count and split.tensors.count, sorted by key bytes (memcmp,
 *     a prefix first), each as: u64 key length, key, u32 value type,
 *     for an array u32 element type and u64 count, then u64 value length
 *     and the encoded value bytes as stored in the file;
 *   u64 n_tensors, then every tensor sorted by name: u64 name length, name,
 *     u32 ggml type, u32 n_dims, i64 ne[n_dims], and its 32-byte SHA-256.
 *
 * So two files that hold the same metadata and the same tensors (names,
 * types, shapes, bytes) have the same digest whatever the tensor order, the
 * shard count, the data alignment padding or the GGUF version field.
 * general.alignment is a pair like any other and is included.
 *
 * Sparse digest (for comparisons).  Hashing a 100 GiB sparse replica byte
 * by byte takes minutes of SHA-256 over zeros.  The comparison digest of a
 * tensor is instead SHA-256 over, for every 64 KiB chunk of the tensor
 * (counted from its first byte; the last may be shorter) that is NOT all
 * zero: u64 chunk index and the chunk's bytes; then u64 tensor size.  Holes
 * (SEEK_DATA/SEEK_HOLE) are skipped without reading, and since all-zero
 * chunks are left out whether they are holes or written zeros, the digest
 * depends on the bytes only, not on where the file system keeps holes.  Two
 * tensors have the same sparse digest iff (up to SHA-256 collisions) their
 * bytes are equal.  repack (copy hash and read-back check) and verify use
 * it; `hash` prints plain SHA-256.
 */
#ifndef GGUFMAP_HASH_H
#define GGUFMAP_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GGUFMAP_SHA256_LEN 32

/* Flags for the hashing calls. */
enum {
    GGUFMAP_HASH_SPARSE = 1u << 0, /* the sparse digest instead of plain SHA-256 */
    GGUFMAP_HASH_STREAM = 1u << 1  /* also hash all tensor data in model order (gguf_hash.py's
                                      whole-model sha256; one thread) */
};

/* The digest of one tensor. */
typedef struct ggufmap_tensor_hash {
    uint8_t sha256[GGUFMAP_SHA256_LEN]; /* SHA-256, or the sparse digest (GGUFMAP_HASH_SPARSE) */
} ggufmap_tensor_hash;

/* SHA-256 (or with GGUFMAP_HASH_SPARSE the sparse digest) of size bytes of
 * fd from offset, holes read as zeros.  path names the file in messages.
 * Returns GGUFMAP_OK, or EIO (read error, or the file ends early: the
 * message names path and offset). */
GGUFMAP_API int ggufmap_sha256_range(int fd, const char *path, uint64_t offset, uint64_t size, unsigned flags,
                         uint8_t out[GGUFMAP_SHA256_LEN], ggufmap_error *err);

/* The sparse digest, one chunk at a time, for callers that stream the bytes
 * themselves: init, then chunks in increasing index order (all-zero ones may
 * be given or not: they are skipped), then final. */
#define GGUFMAP_SPARSE_CHUNK (64u << 10)
typedef struct ggufmap_sparse ggufmap_sparse;
/* Each returns GGUFMAP_OK, or GGUFMAP_ENOMEM (new: with *out NULL). */
GGUFMAP_API int ggufmap_sparse_new(ggufmap_sparse **out);
/* bytes: the chunk's bytes (GGUFMAP_SPARSE_CHUNK, or fewer for the last). */
GGUFMAP_API int ggufmap_sparse_chunk(ggufmap_sparse *s, uint64_t index, const void *bytes, size_t len);
GGUFMAP_API int ggufmap_sparse_final(ggufmap_sparse *s, uint64_t size, uint8_t out[GGUFMAP_SHA256_LEN]);
GGUFMAP_API void ggufmap_sparse_free(ggufmap_sparse *s);

/* SHA-256 of n zero bytes. */
GGUFMAP_API void ggufmap_sha256_zeros(uint64_t n, uint8_t out[GGUFMAP_SHA256_LEN]);

/* Lower-case hex of a digest into buf (>= 65 bytes); returns buf. */
GGUFMAP_API const char *ggufmap_sha256_hex(const uint8_t sha[GGUFMAP_SHA256_LEN], char *buf);

/* The result of ggufmap_model_hash_build(). */
typedef struct ggufmap_model_hash {
    int64_t n_tensors;
    ggufmap_tensor_hash *tensors;        /* in model order (ggufmap_model_tensor) */
    uint8_t stream[GGUFMAP_SHA256_LEN];  /* GGUFMAP_HASH_STREAM: gguf_hash.py's sha256 */
    uint8_t digest[GGUFMAP_SHA256_LEN];  /* the model digest (plain SHA-256 only) */
    bool has_digest;
} ggufmap_model_hash;

/* Hashes every tensor of model with n_threads workers (0: a default of up
 * to 4).  With GGUFMAP_HASH_STREAM one thread reads everything once, in
 * model order, and the whole-data hash skips the tensors gguf_hash.py skips
 * (names ending .attention.masked_bias, .attention.bias,
 * .rotary_emb.inv_freq).  The model digest is filled unless
 * GGUFMAP_HASH_SPARSE.  progress, when given, is called now and then with the bytes done
 * (from the calling thread).  On success *out is owned by the caller
 * (ggufmap_model_hash_free); on error *out is NULL and err names the shard,
 * offset and tensor. */
GGUFMAP_API int ggufmap_model_hash_build(const ggufmap_model *model, unsigned flags, unsigned n_threads,
                       void (*progress)(void *ctx, uint64_t done, uint64_t total), void *progress_ctx,
                       ggufmap_model_hash **out, ggufmap_error *err);
GGUFMAP_API void ggufmap_model_hash_free(ggufmap_model_hash *h);

/* True when gguf_hash.py leaves the tensor out (its name ends in
 * .attention.masked_bias, .attention.bias or .rotary_emb.inv_freq). */
GGUFMAP_API bool ggufmap_hash_skipped_name(const char *name, size_t len);

/* True for the keys the model digest and the comparison leave out:
 * split.no, split.count, split.tensors.count, read as ggml reads keys (up to
 * the first NUL: "split.no\0x" is split.no to llama.cpp, see
 * ggufmap_source_find_kv). */
GGUFMAP_API bool ggufmap_is_split_key(const char *key, size_t len);

/* Compares two models: the first shard's pairs without the split keys
 * (same keys, types and encoded bytes, any order), the tensor names, types
 * and shapes, and every tensor's bytes (sparse digests, hashed in
 * parallel: holes are not read).  *same says the verdict; when false,
 * diff holds the first difference in words ("tensor 'blk.0.attn_q.weight':
 * data differs (sparse digest … vs …)"), tensors checked in a's order.  Returns
 * GGUFMAP_OK when the comparison ran, else an error (unreadable data). */
GGUFMAP_API int ggufmap_models_compare(const ggufmap_model *a, const ggufmap_model *b, unsigned n_threads, bool *same,
                           char *diff, size_t diff_cap, ggufmap_error *err);

/* The same, calling progress (when not NULL) now and then from the calling
 * thread with the bytes hashed so far: first a's tensor bytes, then b's;
 * total is both models' tensor bytes (holes count as done when passed).
 * Metadata and tensor tables are compared first, so a difference there ends
 * the comparison before any data is read or progress reported. */
GGUFMAP_API int ggufmap_models_compare_progress(const ggufmap_model *a, const ggufmap_model *b, unsigned n_threads,
                                    void (*progress)(void *ctx, uint64_t done, uint64_t total), void *progress_ctx,
                                    bool *same, char *diff, size_t diff_cap, ggufmap_error *err);

#ifdef __cplusplus
}
#endif
#endif

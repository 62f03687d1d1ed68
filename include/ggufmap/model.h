/*
 * ggufmap/model.h - a whole model: every shard of a split GGUF, seen as one.
 *
 * llama.cpp names the shards of an n-way split PREFIX-00001-of-0000n.gguf ...
 * PREFIX-0000n-of-0000n.gguf and loads them from the first.  ggufmap opens a
 * model from the path of ANY shard: it derives the first, reads split.count
 * there and opens the others, applying llama.cpp v0.5.0's checks
 * (llama-model-loader.cpp):
 *
 *   - split.count, when present in the first shard, is a u16; 0 or 1 means a
 *     single file;
 *   - the first shard's split.no is a u16 equal to 0, and its file name ends
 *     in -00001-of-NNNNN.gguf with NNNNN == split.count;
 *   - shard k (k >= 1) exists, passes every single-file check and has a u16
 *     split.no equal to k;
 *   - no tensor name occurs in two shards;
 *   - the first shard's split.tensors.count is an i32 equal to the number of
 *     tensors in all shards.
 *
 * Metadata (architecture, hyperparameters, tokenizer) lives in the first
 * shard; each tensor knows its shard and its absolute offset in that file.
 *
 * ggufmap_model_open_url() does the same for a model on an HTTP(S) server or
 * a Hugging Face repository (remote.h), reading only the header bytes of
 * every shard, all shards at once.  The split naming applies to the URL's
 * path: https://host/dir/M-00002-of-00004.gguf?x=y leads to
 * https://host/dir/M-00001-of-00004.gguf?x=y and its siblings.
 */
#ifndef GGUFMAP_MODEL_H
#define GGUFMAP_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "ggufmap/error.h"
#include "ggufmap/source.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ggufmap_model ggufmap_model;

/* Opens the model that path belongs to (flags: GGUFMAP_OPEN_*).  On success
 * *out owns every shard; on failure *out is NULL, nothing stays open, and err
 * names the shard, offset and key or tensor at fault. */
GGUFMAP_API int ggufmap_model_open(const char *path, unsigned flags, ggufmap_model **out, ggufmap_error *err);

/* As ggufmap_model_open(), for url: http://, https:// or hf://OWNER/REPO
 * [@REVISION]/PATH (see remote.h), through the session remote.  Only header
 * bytes are fetched; ggufmap_source_bytes() of a shard has no tensor data.
 * ggufmap_model_open() refuses URLs (GGUFMAP_EINVAL): its callers read data. */
GGUFMAP_API int ggufmap_model_open_url(const char *url, unsigned flags, ggufmap_remote *remote, ggufmap_model **out,
                           ggufmap_error *err);

/* Closes every shard. NULL is allowed. */
GGUFMAP_API void ggufmap_model_free(ggufmap_model *model);

/* Number of files (1 for an unsplit model). */
GGUFMAP_API uint32_t ggufmap_model_n_shards(const ggufmap_model *model);
/* Shard i (0-based, in split order), or NULL. Shard 0 holds the metadata. */
GGUFMAP_API const ggufmap_source *ggufmap_model_shard(const ggufmap_model *model, uint32_t i);

/* All tensors: shard 0's in file order, then shard 1's, ... */
GGUFMAP_API int64_t ggufmap_model_n_tensors(const ggufmap_model *model);
GGUFMAP_API const ggufmap_tensor *ggufmap_model_tensor(const ggufmap_model *model, int64_t i);
/* Index (as for ggufmap_model_tensor) of the tensor with this name, or -1. */
GGUFMAP_API int64_t ggufmap_model_find_tensor(const ggufmap_model *model, const char *name);

/* The pair with this key in the first shard, found as ggml finds keys (the
 * first whose C string equals key: ggufmap_source_find_kv), or NULL. */
GGUFMAP_API const ggufmap_kv *ggufmap_model_find_kv(const ggufmap_model *model, const char *key);

/* For a remote model: true, with the body bytes received and the requests
 * made for all its shards (ggufmap_source_fetch_stats summed).  False for a
 * local model. */
GGUFMAP_API bool ggufmap_model_fetch_stats(const ggufmap_model *model, uint64_t *fetched_bytes, uint64_t *requests);

/* Sum of all shards' file sizes, and of all tensors' data bytes. */
GGUFMAP_API uint64_t ggufmap_model_file_bytes(const ggufmap_model *model);
GGUFMAP_API uint64_t ggufmap_model_tensor_bytes(const ggufmap_model *model);

/* Writes llama.cpp's name of shard `index` (0-based) of `count` for `prefix`:
 * PREFIX-%05d-of-%05d.gguf with index + 1.  Returns the length it needs, as
 * snprintf does. */
GGUFMAP_API int ggufmap_split_path(char *buf, size_t cap, const char *prefix, uint32_t index, uint32_t count);

/* Whether path ends in -NNNNN-of-MMMMM.gguf; if so, stores the prefix
 * length, the 0-based index (NNNNN - 1) and the count MMMMM. */
GGUFMAP_API bool ggufmap_split_parse(const char *path, size_t *prefix_len, uint32_t *index, uint32_t *count);

#ifdef __cplusplus
}
#endif
#endif

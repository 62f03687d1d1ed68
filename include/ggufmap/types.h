/*
 * ggufmap/types.h - ggml tensor types and GGUF value types, as llama.cpp
 * v0.5.0 defines them.
 *
 * A tensor of type T and shape ne[0..3] occupies
 *     (ne[0] / block_size(T)) * type_size(T) * ne[1] * ne[2] * ne[3]
 * bytes (ggml_nbytes for a contiguous tensor).  ne[0] must be a multiple of
 * the block size.  Ids that ggml removed (4, 5, 31-33, 36-38) have block size
 * 0 there and every reader rejects them; ggufmap reports them as "removed".
 */
#ifndef GGUFMAP_TYPES_H
#define GGUFMAP_TYPES_H

#include <stdint.h>

#include "ggufmap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF key-value types (gguf.h's enum gguf_type). */
enum ggufmap_value_type {
    GGUFMAP_VALUE_UINT8 = 0, GGUFMAP_VALUE_INT8 = 1, GGUFMAP_VALUE_UINT16 = 2, GGUFMAP_VALUE_INT16 = 3,
    GGUFMAP_VALUE_UINT32 = 4, GGUFMAP_VALUE_INT32 = 5, GGUFMAP_VALUE_FLOAT32 = 6, GGUFMAP_VALUE_BOOL = 7,
    GGUFMAP_VALUE_STRING = 8, GGUFMAP_VALUE_ARRAY = 9, GGUFMAP_VALUE_UINT64 = 10, GGUFMAP_VALUE_INT64 = 11,
    GGUFMAP_VALUE_FLOAT64 = 12,
    GGUFMAP_VALUE_TYPE_COUNT = 13
};

/* The number of ggml type ids in llama.cpp v0.5.0 (GGML_TYPE_COUNT). */
#define GGUFMAP_TYPE_COUNT 43

typedef struct ggufmap_type_info {
    const char *name;     /* ggml's name: "f32", "q4_K", ... ; "removed" for retired ids */
    uint32_t block_size;  /* elements per block; 0 for a retired id */
    uint32_t type_size;   /* bytes per block; 0 for a retired id */
} ggufmap_type_info;

/* The ggml type with this id, or NULL when the id is outside [0, GGUFMAP_TYPE_COUNT).
 * A retired id returns an entry whose block_size is 0. */
GGUFMAP_API const ggufmap_type_info *ggufmap_type(int32_t id);

/* The id whose name matches (case-insensitive: "Q4_K" and "q4_k" both work), or -1. */
GGUFMAP_API int32_t ggufmap_type_from_name(const char *name);

/* Byte size of a tensor of this type and shape, computed as ggml_nbytes does
 * (the caller has validated the shape); 0 for an unknown or retired type. */
GGUFMAP_API uint64_t ggufmap_type_nbytes(int32_t id, const int64_t ne[4]);

/* Size in bytes of one scalar of a GGUF value type; 0 for STRING, ARRAY and
 * ids out of range. */
GGUFMAP_API uint32_t ggufmap_value_type_size(int32_t value_type);

/* "u8", "i32", "f32", "bool", "str", "arr", ... ; "?" when out of range. */
GGUFMAP_API const char *ggufmap_value_type_name(int32_t value_type);

/* Parses a size: "4096", "96G" or "96GiB" (binary), "64MB" (decimal),
 * "1.5G".  Returns GGUFMAP_OK, or GGUFMAP_EINVAL for anything else. */
GGUFMAP_API int ggufmap_parse_size(const char *text, uint64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif

/*
 * types.c - the ggml type table of llama.cpp v0.5.0 (ggml/src/ggml.c
 * type_traits).  The oracle test checks it, id by id, against the prebuilt
 * libggml-base's ggml_blck_size() and ggml_type_size().
 */
#include <strings.h>

#include "ggufmap/types.h"
#include "internal.h"

static const ggufmap_type_info type_table[GGUFMAP_TYPE_COUNT] = {
    [0] = {"f32", 1, 4},         [1] = {"f16", 1, 2},         [2] = {"q4_0", 32, 18},
    [3] = {"q4_1", 32, 20},      [4] = {"removed", 0, 0},     [5] = {"removed", 0, 0},
    [6] = {"q5_0", 32, 22},      [7] = {"q5_1", 32, 24},      [8] = {"q8_0", 32, 34},
    [9] = {"q8_1", 32, 36},      [10] = {"q2_K", 256, 84},    [11] = {"q3_K", 256, 110},
    [12] = {"q4_K", 256, 144},   [13] = {"q5_K", 256, 176},   [14] = {"q6_K", 256, 210},
    [15] = {"q8_K", 256, 292},   [16] = {"iq2_xxs", 256, 66}, [17] = {"iq2_xs", 256, 74},
    [18] = {"iq3_xxs", 256, 98}, [19] = {"iq1_s", 256, 50},   [20] = {"iq4_nl", 32, 18},
    [21] = {"iq3_s", 256, 110},  [22] = {"iq2_s", 256, 82},   [23] = {"iq4_xs", 256, 136},
    [24] = {"i8", 1, 1},         [25] = {"i16", 1, 2},        [26] = {"i32", 1, 4},
    [27] = {"i64", 1, 8},        [28] = {"f64", 1, 8},        [29] = {"iq1_m", 256, 56},
    [30] = {"bf16", 1, 2},       [31] = {"removed", 0, 0},    [32] = {"removed", 0, 0},
    [33] = {"removed", 0, 0},    [34] = {"tq1_0", 256, 54},   [35] = {"tq2_0", 256, 66},
    [36] = {"removed", 0, 0},    [37] = {"removed", 0, 0},    [38] = {"removed", 0, 0},
    [39] = {"mxfp4", 32, 17},    [40] = {"nvfp4", 64, 36},    [41] = {"q1_0", 128, 18},
    [42] = {"q2_0", 64, 18},
};

const ggufmap_type_info *ggufmap_type(int32_t id) {
    if (id < 0 || id >= GGUFMAP_TYPE_COUNT) return NULL;
    return &type_table[id];
}

int32_t ggufmap_type_from_name(const char *name) {
    if (!name) return -1;
    for (int32_t i = 0; i < GGUFMAP_TYPE_COUNT; i++) {
        if (type_table[i].block_size && strcasecmp(type_table[i].name, name) == 0) return i;
    }
    return -1;
}

uint64_t ggufmap_type_nbytes(int32_t id, const int64_t ne[4]) {
    const ggufmap_type_info *t = ggufmap_type(id);
    if (!t || t->block_size == 0) return 0;
    for (int i = 0; i < 4; i++) {
        if (ne[i] <= 0) return 0;
    }
    /* ggml_nbytes: row bytes, then (ne[i]-1) strides for the outer dims. */
    uint64_t nb[4];
    nb[0] = t->type_size;
    nb[1] = nb[0] * ((uint64_t)ne[0] / t->block_size);
    nb[2] = nb[1] * (uint64_t)ne[1];
    nb[3] = nb[2] * (uint64_t)ne[2];
    uint64_t bytes = (uint64_t)ne[0] * nb[0] / t->block_size;
    for (int i = 1; i < 4; i++) bytes += ((uint64_t)ne[i] - 1) * nb[i];
    return bytes;
}

uint32_t ggufmap_value_type_size(int32_t vt) {
    static const uint32_t sizes[GGUFMAP_VALUE_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return vt >= 0 && vt < GGUFMAP_VALUE_TYPE_COUNT ? sizes[vt] : 0;
}

const char *ggufmap_value_type_name(int32_t vt) {
    static const char *names[GGUFMAP_VALUE_TYPE_COUNT] = {"u8",  "i8",   "u16", "i16", "u32", "i32", "f32",
                                                          "bool", "str", "arr", "u64", "i64", "f64"};
    return vt >= 0 && vt < GGUFMAP_VALUE_TYPE_COUNT ? names[vt] : "?";
}

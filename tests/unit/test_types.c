/*
 * test_types.c - the ggml type table and byte sizes.  (The table itself is
 * checked id by id against the real libggml-base in tests/oracle.)
 */
#include "check.h"
#include "ggufmap/types.h"

int main(void) {
    int64_t ne[4] = {4096, 11008, 1, 1};
    CHECK(ggufmap_type_nbytes(0, ne) == 4096ull * 11008 * 4);               /* f32 */
    CHECK(ggufmap_type_nbytes(2, ne) == 4096ull / 32 * 18 * 11008);         /* q4_0 */
    CHECK(ggufmap_type_nbytes(12, ne) == 4096ull / 256 * 144 * 11008);      /* q4_K */
    int64_t cube[4] = {256, 3, 5, 7};
    CHECK(ggufmap_type_nbytes(14, cube) == 210ull * 3 * 5 * 7);             /* q6_K, 3-D */
    int64_t empty[4] = {0, 5, 1, 1};
    CHECK(ggufmap_type_nbytes(0, empty) == 0);
    CHECK(ggufmap_type(43) == NULL);
    CHECK(ggufmap_type(-1) == NULL);
    CHECK(ggufmap_type(4)->block_size == 0);   /* retired Q4_2 */
    CHECK(ggufmap_type(31)->block_size == 0);  /* retired Q4_0_4_4 */
    CHECK(ggufmap_type_nbytes(4, ne) == 0);
    CHECK(ggufmap_type_from_name("Q4_K") == 12);
    CHECK(ggufmap_type_from_name("q4_k") == 12);
    CHECK(ggufmap_type_from_name("bf16") == 30);
    CHECK(ggufmap_type_from_name("removed") == -1);
    CHECK(ggufmap_type_from_name("nope") == -1);
    int known = 0;
    for (int32_t i = 0; i < GGUFMAP_TYPE_COUNT; i++) known += ggufmap_type(i)->block_size != 0;
    CHECK(known == 43 - 8);
    CHECK(ggufmap_value_type_size(GGUFMAP_VALUE_UINT64) == 8);
    CHECK(ggufmap_value_type_size(GGUFMAP_VALUE_BOOL) == 1);
    CHECK(ggufmap_value_type_size(GGUFMAP_VALUE_STRING) == 0);
    CHECK(strcmp(ggufmap_value_type_name(GGUFMAP_VALUE_ARRAY), "arr") == 0);
    return check_summary();
}

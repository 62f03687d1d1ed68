/* A program outside the tree, built against an installed ggufmap: the one
 * header gives every module (types, the per-device defaults, hash). */
#include <ggufmap/ggufmap.h>
#include <stdio.h>

int main(void) {
    const ggufmap_type_info *t = ggufmap_type(12);
    printf("%s %u %u\n", t->name, t->block_size, t->type_size);
    ggufmap_placement_opts po;
    ggufmap_plan_opts plo;
    ggufmap_preset(GGUFMAP_DEVICE_METAL, &po, &plo);
    char planner[32], hex[65];
    printf("metal %s %llu %s\n", ggufmap_cpu_name(po.cpu), (unsigned long long)plo.page,
           ggufmap_planner_format(&plo.planner, planner, sizeof planner));
    uint8_t sha[GGUFMAP_SHA256_LEN];
    ggufmap_sha256_zeros(0, sha);
    printf("%s\n", ggufmap_sha256_hex(sha, hex));
    return t->block_size == 256 ? 0 : 1;
}

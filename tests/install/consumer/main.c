/* A program outside the tree, built against an installed ggufmap. */
#include <ggufmap/ggufmap.h>
#include <stdio.h>

int main(void) {
    const ggufmap_type_info *t = ggufmap_type(12);
    printf("%s %u %u\n", t->name, t->block_size, t->type_size);
    return t->block_size == 256 ? 0 : 1;
}

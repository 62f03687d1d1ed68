/*
 * ggufmap/hash.h - placeholder for the hash module (issue 4).
 */
#ifndef GGUFMAP_HASH_H
#define GGUFMAP_HASH_H
#endif

/*
 * ggufmap/repack.h - placeholder for the repack module (issue 4).
 */
#ifndef GGUFMAP_REPACK_H
#define GGUFMAP_REPACK_H
#endif

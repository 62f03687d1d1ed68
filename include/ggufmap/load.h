/*
 * ggufmap/load.h - placeholder for the loader module (issue 5).
 */
#ifndef GGUFMAP_LOAD_H
#define GGUFMAP_LOAD_H
#endif

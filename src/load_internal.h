/*
 * load_internal.h - what load.c and load_backend.c share; not installed.
 */
#ifndef GGUFMAP_LOAD_INTERNAL_H
#define GGUFMAP_LOAD_INTERNAL_H

#include <stdint.h>

#include "ggufmap/load.h"

/* Fills b with the host backend: the handle is the pointer, nothing to free. */
void gm_backend_host_init(ggufmap_backend *b);

#endif

/*
 * fit_graph_dump.h - the graph dump of a -DGGUFMAP_GRAPH_DUMP build
 * (fit_graph_dump.c; internal, a debugging aid).
 */
#ifndef GGUFMAP_FIT_GRAPH_DUMP_H
#define GGUFMAP_FIT_GRAPH_DUMP_H

#include "fit_graph.h"

#ifdef GGUFMAP_GRAPH_DUMP
/* The nodes' sources before the scheduler rewrites them (free() them). */
int32_t *gm_graph_dump_save_srcs(const gm_graph *g);
/* The graph on stderr in the oracle's --graph format. */
void gm_graph_dump(const gm_graph *g, const int32_t *srcs, const gm_split_graph *sg, const gm_backends *be);
#endif

#endif

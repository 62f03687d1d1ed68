/*
 * fit_arch_recurrent.h - the worst-case graphs of the recurrent and hybrid
 * architectures (internal; fit_arch_*.c over fit_block_rs.h's blocks),
 * dispatched from fit_compute.c.
 */
#ifndef GGUFMAP_FIT_ARCH_RECURRENT_H
#define GGUFMAP_FIT_ARCH_RECURRENT_H

#include "fit_llm.h"

/* fit_arch_qwen35.c: qwen35 and qwen35moe (one graph: the FFN follows the
 * layer's tensors), qwen3next */
void gm_arch_qwen35(gm_llm *l);
void gm_arch_qwen3next(gm_llm *l);

#endif

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
/* their MTP draft graphs (LLM_GRAPH_TYPE_DECODER_MTP) */
void gm_arch_qwen35_mtp(gm_llm *l);
void gm_arch_qwen3next_mtp(gm_llm *l);

/* fit_arch_mamba.c: the Mamba-2 family */
void gm_arch_mamba2(gm_llm *l);
void gm_arch_nemotron_h(gm_llm *l);
void gm_arch_falcon_h1(gm_llm *l);
void gm_arch_granitehybrid(gm_llm *l);
void gm_arch_nemotron_h_moe_mtp(gm_llm *l);

/* fit_arch_lfm2.c: causal lfm2 with one attention cache */
void gm_arch_lfm2(gm_llm *l);

/* fit_arch_rwkv7.c */
void gm_arch_rwkv7(gm_llm *l);

#endif

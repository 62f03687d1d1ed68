/*
 * plan_advice.h - the next steps `ggufmap plan` names, each with the numbers
 * it would give: repack (when a buffer maps foreign bytes), and under a
 * limit that llama.cpp exceeds, the --n-cpu-moe or -ngl that fits.
 */
#ifndef GGUFMAP_TOOLS_PLAN_ADVICE_H
#define GGUFMAP_TOOLS_PLAN_ADVICE_H

#include "ggufmap/ggufmap.h"
#include "placement_args.h"

#define PLAN_ADVICE_MAX 4

typedef struct plan_advice_input {
    const char *model_path;          /* as the user gave it */
    const ggufmap_model *model;
    const ggufmap_plan *plan;        /* the plan of the flags given */
    const placement_args *placement; /* the flags given */
    const planning_args *planning;
    const ggufmap_plan_opts *plan_opts;
    uint64_t limit;                  /* 0: none */
    const char *limit_text;          /* --limit as typed */
    uint64_t mem;                    /* --mem: the RAM the weights must fit too; 0: none */
    const char *mem_text;            /* --mem as typed */
    const uint64_t *gpu_limits;      /* per GPU ordinal, 0: limit's (NULL: none) */
} plan_advice_input;

/* Works out the next steps into out (room for PLAN_ADVICE_MAX); returns
 * how many.  Each is evaluated, not guessed: repack by a dry run of the
 * library's repack, the flags by placing and planning with them. */
uint32_t plan_advice(const plan_advice_input *in, ggufmap_suggestion *out);

#endif

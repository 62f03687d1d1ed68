/*
 * arch_vm.h - the interpreter of src/arch_table.c's statements, shared by
 * arch.c (expressions, control flow, create_tensor) and arch_hparams.c (the
 * hparams store, llama_hparams' methods, the key readers).  Internal to
 * those two files.
 *
 * Data structure: one vm per gm_arch_load_model run: the model, the frame
 * of int locals, the tensor handles, the hparams store (every field of
 * struct llama_hparams, three-valued as every value here).
 */
#ifndef GGUFMAP_ARCH_VM_H
#define GGUFMAP_ARCH_VM_H

#include <stdbool.h>
#include <stdint.h>

#include "arch.h"
#include "internal.h"

typedef gm_val val;

static inline val gm_known(int64_t v) { return (val){v, ~0ull}; }
static inline bool gm_is_known(val x) { return x.known == ~0ull; }
#define GM_UNKNOWN_VAL ((val){0, 0})

/* The fields llama_hparams' methods read (arch_hparams.c resolves them by
 * name in gm_hp_fields; -1 when llama.cpp no longer has one). */
enum gm_hp_id {
    HP_N_LAYER_ALL, HP_N_LAYER_NEXTN, HP_N_EMBD, HP_N_HEAD, HP_N_HEAD_KV, HP_N_FF, HP_N_FF_EXP, HP_N_EXPERT_USED,
    HP_IS_SWA, HP_IS_RECR, HP_IS_PLE, HP_IS_INDEXER_FULL, HP_ROT_FULL, HP_ROT_SWA, HP_HEAD_K_FULL, HP_HEAD_V_FULL,
    HP_HEAD_K_SWA, HP_HEAD_V_SWA, HP_EMBD_INP, HP_DEEPSTACK, HP_EMBD_INP_ENC, HP_EMBD_OUT, HP_WKV_HEAD,
    HP_TOKEN_SHIFT, HP_SHORTCONV, HP_HEAD_KDA, HP_HEAD_LA, HP_D_CONV, HP_D_INNER, HP_D_STATE, HP_N_GROUP,
    HP_PLE_HEADS, HP_PLE_KERNEL, HP_PLE_NGRAM, HP_HC_MULT, HP_K_MLA, HP_V_MLA, HP_KV_FROM_START, HP_ROUTER,
    HP_ROPE_PATTERN, HP_ROPE_TYPE, HP_ROPE_SECTIONS, HP_COUNT
};

typedef struct gm_probe {
    int64_t *items;
    int64_t n, cap;
} gm_probe;

typedef struct vm {
    const ggufmap_model *model;
    const gm_arch_def *def;
    bool load_mtp;
    int32_t n_layer_all, n_layer_nextn;
    int32_t router_layer;         /* hparams.router_layer: -1 but in graniteswitch */
    val *locals;                  /* the current frame */
    uint32_t n_locals;
    uint8_t fn_kind;              /* gm_fn_kind of the function running */
    int64_t *handles;             /* [slot * (n_layer_all + 1) + layer + 1] */
    uint8_t *created;             /* per file tensor: times created (saturating) */
    int64_t n_created;            /* llama_model_loader::n_created */
    uint8_t *mark;                /* scratch, per file tensor */
    gm_probe *dry;                /* non-NULL while walking without effect */
    gm_arch_load *out;
    gm_hp_store *hp;              /* out->hp */
    int32_t hp_id[HP_COUNT];      /* field index of each gm_hp_id */
    int64_t cap_creations;
    int64_t steps;
    ggufmap_error *err;
    int status;
    const gm_arch_stmt *cur;      /* the statement running (for messages) */
    int speculative;              /* > 0: evaluating what C++ may not evaluate (an arm of an unknown ?:) */
} vm;

typedef enum flow { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN, FLOW_ERROR } flow;

/* arch.c */
flow gm_vm_fail(vm *m, int status, const char *fmt, ...) GM_PRINTF(3, 4);
/* llama.cpp refuses the model (a throw, a GGML_ASSERT, a wrong shape): the
 * first reason is kept in out->refusal and the run goes on past it (what
 * the failed step would have set is unknown), so that the placement is
 * still made as llama.cpp would make it had it not stopped. */
flow gm_vm_refuse(vm *m, const char *fmt, ...) GM_PRINTF(2, 3);
val gm_vm_eval(vm *m, int32_t e);
const char *gm_vm_where(const gm_arch_stmt *s, char *buf, size_t cap);
/* "%s.context_length" with the architecture's name */
void gm_vm_key(const vm *m, const char *fmt, char *buf, size_t cap);

/* arch_hparams.c */
int gm_hp_init(vm *m);                               /* the store with llama_hparams' initializers */
val gm_hp_value(const vm *m, int32_t field, val index);
void gm_hp_assign(vm *m, int32_t field, val index, val v);
val gm_hp_method(vm *m, int32_t name, val arg);      /* name: a gm_arch_strings index */
val gm_hp_method_named(const vm *m, const char *name, val arg);
val gm_hp_cast(val x, uint8_t ct);
flow gm_hp_getkey(vm *m, const gm_arch_stmt *s);
flow gm_hp_effect(vm *m, const gm_arch_stmt *s);     /* set_swa_pattern, set_recr_pattern */
void gm_hp_forget(vm *m, uint32_t first, uint32_t n); /* what statements [first, first+n) write: unknown */
void gm_hp_vocab(vm *m);                             /* n_vocab, n_token_types as llama_vocab::load finds them */
const char *gm_gguf_type_name(int32_t type);         /* "u32", "str", "arr", ... as gguf.cpp names them */
/* llama.cpp's message: the template with "{arch}" and its numbers filled in */
void gm_hp_message(vm *m, const gm_arch_stmt *s, char *buf, size_t cap);

#endif

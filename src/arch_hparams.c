/*
 * arch_hparams.c - llama_hparams as the compiled load_hparams fills it: the
 * store of fields, the methods of llama_hparams (src/llama-hparams.cpp) and
 * the readers of llama_model_loader (get_key, get_key_or_arr, get_arr,
 * get_arr_n: src/llama-model-loader.cpp:100-530) with their type rules and
 * messages.
 *
 * Data structure: the store is one array of values, every field's elements
 * from off[field] (gm_hp_fields gives the counts: 1, or 512 for the
 * per-layer arrays).  A value is three-valued (gm_val): a float field, a
 * string, or what an unknown branch may have written is unknown, and so is
 * everything computed from it; a check on an unknown value is not made.
 * Workload: a few hundred statements per model; the store is ~8,000 values.
 *
 * Fidelity: the methods are written from llama-hparams.cpp line by line, in
 * the widths C++ uses (uint32_t products wrap); a method the table names but
 * this file lacks gives unknown (tests/arch/regen.sh lists every method of
 * llama-hparams.h against hp_methods below).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_vm.h"
#include "ggufmap/source.h"
#include "ggufmap/types.h"

/* ------------------------------------------------------------------------ */
/* The store                                                                 */
/* ------------------------------------------------------------------------ */

static const char *const HP_NAMES[HP_COUNT] = {
    "n_layer_all", "n_layer_nextn", "n_embd", "n_head_arr", "n_head_kv_arr", "n_ff_arr", "n_ff_exp_arr",
    "n_expert_used_arr", "is_swa_impl", "is_recr_impl", "is_ple_impl", "is_indexer_full_impl", "n_rot_full",
    "n_rot_swa", "n_embd_head_k_full", "n_embd_head_v_full", "n_embd_head_k_swa", "n_embd_head_v_swa",
    "n_embd_inp_impl", "n_deepstack_layers", "n_embd_inp_enc_impl", "n_embd_out_impl", "wkv_head_size",
    "token_shift_count", "n_shortconv_l_cache", "n_embd_head_kda", "n_embd_head_la", "ssm_d_conv", "ssm_d_inner",
    "ssm_d_state", "ssm_n_group", "ple_n_heads", "ple_conv_kernel", "ple_ngram_size", "dsv4_hc_mult",
    "n_embd_head_k_mla_impl", "n_embd_head_v_mla_impl", "n_layer_kv_from_start", "router_layer", "rope_pattern",
    "rope_type", "rope_sections",
};

static int32_t field_index(const char *name) {
    for (uint32_t i = 0; i < gm_hp_n_fields; i++)
        if (strcmp(gm_hp_fields[i].name, name) == 0) return (int32_t)i;
    return -1;
}

int gm_hp_init(vm *m) {
    gm_hp_store *s = m->hp;
    uint32_t total = 0;
    s->off = malloc(gm_hp_n_fields * sizeof *s->off);
    for (uint32_t i = 0; s->off && i < gm_hp_n_fields; i++) {
        s->off[i] = total;
        total += gm_hp_fields[i].count;
    }
    s->vals = malloc((total ? total : 1) * sizeof *s->vals);
    if (!s->off || !s->vals) return gm_fail(m->err, GGUFMAP_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < gm_hp_n_fields; i++) {
        const gm_hp_field *f = &gm_hp_fields[i];
        val init = f->init_known ? gm_known(f->init) : GM_UNKNOWN_VAL;
        for (uint32_t k = 0; k < f->count; k++) s->vals[s->off[i] + k] = init;
    }
    for (int i = 0; i < HP_COUNT; i++) m->hp_id[i] = field_index(HP_NAMES[i]);
    s->n_vocab = s->n_token_types = -1;
    return GGUFMAP_OK;
}

/* The value converted to a C++ type: integers wrap to their width, bool is
 * "!= 0"; floats and strings are never known. */
val gm_hp_cast(val x, uint8_t ct) {
    if (ct == GM_CT_F32 || ct == GM_CT_STR || ct == GM_CT_NONE) return GM_UNKNOWN_VAL;
    if (!gm_is_known(x)) return ct == GM_CT_I64 || ct == GM_CT_U64 ? x : GM_UNKNOWN_VAL;
    switch (ct) {
    case GM_CT_I32: return gm_known((int32_t)(uint32_t)x.v);
    case GM_CT_U32: return gm_known((uint32_t)x.v);
    case GM_CT_BOOL: return gm_known(x.v != 0);
    default: return x;
    }
}

static val *slot(const vm *m, int32_t field, int64_t index) {
    if (field < 0 || (uint32_t)field >= gm_hp_n_fields || index < 0 || index >= gm_hp_fields[field].count) return NULL;
    return &m->hp->vals[m->hp->off[field] + index];
}

val gm_hp_value(const vm *m, int32_t field, val index) {
    if (!gm_is_known(index)) return GM_UNKNOWN_VAL;
    val *p = slot(m, field, index.v);
    return p ? *p : GM_UNKNOWN_VAL;
}

void gm_hp_assign(vm *m, int32_t field, val index, val v) {
    if (field < 0) return;
    val x = gm_hp_cast(v, gm_hp_fields[field].type);
    if (!gm_is_known(index)) { /* somewhere in the array: all of it unknown */
        for (uint32_t k = 0; k < gm_hp_fields[field].count; k++) *slot(m, field, k) = GM_UNKNOWN_VAL;
        return;
    }
    val *p = slot(m, field, index.v);
    if (p) *p = x;
}

static val id_at(const vm *m, enum gm_hp_id id, int64_t index) { return gm_hp_value(m, m->hp_id[id], gm_known(index)); }
static val id_val(const vm *m, enum gm_hp_id id) { return id_at(m, id, 0); }

bool gm_hp_get(const gm_hp_store *hp, const char *name, uint32_t index, int64_t *out) {
    int32_t f = field_index(name);
    if (f < 0 || index >= gm_hp_fields[f].count || !hp->vals) return false;
    gm_val v = hp->vals[hp->off[f] + index];
    if (v.known != ~0ull) return false;
    *out = v.v;
    return true;
}

/* ------------------------------------------------------------------------ */
/* llama_hparams' methods (src/llama-hparams.cpp)                            */
/* ------------------------------------------------------------------------ */

#define KNOWN2(a, b) (gm_is_known(a) && gm_is_known(b))
static val u32(int64_t v) { return gm_known((uint32_t)v); }

/* n_layer (:323): n_layer_all - n_layer_nextn */
static val hp_n_layer(const vm *m) {
    val all = id_val(m, HP_N_LAYER_ALL), nextn = id_val(m, HP_N_LAYER_NEXTN);
    return KNOWN2(all, nextn) ? u32(all.v - nextn.v) : GM_UNKNOWN_VAL;
}

/* a per-layer array read "if (il < n_layer_all)" (:40-88); out of range llama.cpp aborts */
static val per_layer(const vm *m, enum gm_hp_id id, val il) {
    val all = id_val(m, HP_N_LAYER_ALL);
    if (!KNOWN2(il, all) || il.v < 0 || il.v >= all.v) return GM_UNKNOWN_VAL;
    return id_at(m, id, il.v);
}

static val hp_is_swa(const vm *m, val il) { return per_layer(m, HP_IS_SWA, il); }

/* the full or the SWA variant of a per-layer size (n_rot :103, n_embd_head_k/v :129-143) */
static val by_swa(const vm *m, val il, enum gm_hp_id full, enum gm_hp_id swa) {
    val w = hp_is_swa(m, il);
    if (!gm_is_known(w)) return GM_UNKNOWN_VAL;
    return id_val(m, w.v ? swa : full);
}

static val hp_head_k(const vm *m, val il) { return by_swa(m, il, HP_HEAD_K_FULL, HP_HEAD_K_SWA); }
static val hp_head_v(const vm *m, val il) { return by_swa(m, il, HP_HEAD_V_FULL, HP_HEAD_V_SWA); }

/* n_embd_k_gqa / n_embd_v_gqa (:145-155): uint32_t products */
static val gqa(const vm *m, val il, bool k) {
    val head = k ? hp_head_k(m, il) : hp_head_v(m, il), kv = per_layer(m, HP_N_HEAD_KV, il);
    return KNOWN2(head, kv) ? u32(head.v * kv.v) : GM_UNKNOWN_VAL;
}

/* the max of a per-layer size over n_layer_all, from layer 0 (:175-193), or "varies" (:157-173) */
static val over_layers(const vm *m, bool k, bool variable) {
    val all = id_val(m, HP_N_LAYER_ALL), first = gqa(m, gm_known(0), k);
    if (!KNOWN2(all, first)) return GM_UNKNOWN_VAL;
    int64_t best = first.v;
    for (int64_t il = 0; il < all.v && il < 512; il++) {
        val x = gqa(m, gm_known(il), k);
        if (!gm_is_known(x)) return GM_UNKNOWN_VAL;
        if (variable && x.v != first.v) return gm_known(1);
        if (x.v > best) best = x.v;
    }
    return gm_known(variable ? 0 : best);
}

/* n_embd_r (:197-232) */
static val hp_n_embd_r(const vm *m) {
    val wkv = id_val(m, HP_WKV_HEAD), sc = id_val(m, HP_SHORTCONV), kda = id_val(m, HP_HEAD_KDA);
    val embd = id_val(m, HP_N_EMBD), conv = id_val(m, HP_D_CONV);
    if (!KNOWN2(wkv, sc) || !KNOWN2(kda, embd) || !gm_is_known(conv)) return GM_UNKNOWN_VAL;
    if (wkv.v) {
        val shift = id_val(m, HP_TOKEN_SHIFT);
        return gm_is_known(shift) ? u32(shift.v * embd.v) : GM_UNKNOWN_VAL;
    }
    if (sc.v) return u32(embd.v * (uint32_t)(sc.v - 1));
    if (kda.v) {
        val heads = per_layer(m, HP_N_HEAD, gm_known(0));
        if (!gm_is_known(heads)) return GM_UNKNOWN_VAL;
        const uint32_t d_inner = (uint32_t)(heads.v * kda.v);
        return u32((int64_t)(3u * (uint32_t)(conv.v > 0 ? conv.v - 1 : 3) * d_inner));
    }
    val inner = id_val(m, HP_D_INNER), group = id_val(m, HP_N_GROUP), state = id_val(m, HP_D_STATE);
    if (!KNOWN2(inner, group) || !gm_is_known(state)) return GM_UNKNOWN_VAL;
    return u32((uint32_t)(conv.v > 0 ? conv.v - 1 : 0) * (uint32_t)(inner.v + 2 * group.v * state.v));
}

/* n_embd_s (:234-258) */
static val hp_n_embd_s(const vm *m) {
    val wkv = id_val(m, HP_WKV_HEAD), kda = id_val(m, HP_HEAD_KDA), la = id_val(m, HP_HEAD_LA);
    val embd = id_val(m, HP_N_EMBD), heads = per_layer(m, HP_N_HEAD, gm_known(0));
    if (!KNOWN2(wkv, kda) || !KNOWN2(la, embd)) return GM_UNKNOWN_VAL;
    if (wkv.v) return u32(embd.v * wkv.v);
    if (kda.v || la.v) {
        int64_t h = kda.v ? kda.v : la.v;
        return gm_is_known(heads) ? u32((uint32_t)(h * h) * heads.v) : GM_UNKNOWN_VAL;
    }
    val state = id_val(m, HP_D_STATE), inner = id_val(m, HP_D_INNER);
    return KNOWN2(state, inner) ? u32(state.v * inner.v) : GM_UNKNOWN_VAL;
}

/* is_mla (:285-290) and the MLA head sizes (:300-306) */
static val hp_is_mla(const vm *m) {
    val k = id_val(m, HP_K_MLA), v = id_val(m, HP_V_MLA);
    return KNOWN2(k, v) ? gm_known(k.v != 0 && v.v != 0) : GM_UNKNOWN_VAL;
}

static val head_mla(const vm *m, bool k) {
    val mla = hp_is_mla(m);
    if (!gm_is_known(mla)) return GM_UNKNOWN_VAL;
    return mla.v ? id_val(m, k ? HP_K_MLA : HP_V_MLA) : (k ? hp_head_k : hp_head_v)(m, gm_known(0));
}

/* ple_conv_state (:268-275) */
static val hp_ple_conv_state(const vm *m) {
    val heads = id_val(m, HP_PLE_HEADS), kernel = id_val(m, HP_PLE_KERNEL), ngram = id_val(m, HP_PLE_NGRAM);
    val hc = id_val(m, HP_HC_MULT), embd = id_val(m, HP_N_EMBD);
    if (!KNOWN2(heads, kernel)) return GM_UNKNOWN_VAL;
    if (heads.v == 0 || kernel.v == 0) return gm_known(0);
    if (!KNOWN2(ngram, hc) || !gm_is_known(embd)) return GM_UNKNOWN_VAL;
    return u32((uint32_t)(kernel.v - 1) * (uint32_t)ngram.v * (uint32_t)hc.v * (uint32_t)embd.v);
}

/* n_embd_inp (:108-120), n_embd_inp_enc, n_embd_out (:122-127) */
static val hp_n_embd_inp(const vm *m) {
    val impl = id_val(m, HP_EMBD_INP), embd = id_val(m, HP_N_EMBD), deep = id_val(m, HP_DEEPSTACK);
    if (!KNOWN2(impl, embd) || !gm_is_known(deep)) return GM_UNKNOWN_VAL;
    return impl.v > 0 ? impl : u32(embd.v + embd.v * deep.v);
}

static val or_default(val impl, val fallback) {
    if (!gm_is_known(impl)) return GM_UNKNOWN_VAL;
    return impl.v > 0 ? impl : fallback;
}

static val hp_is_swa_any(const vm *m) {
    val all = id_val(m, HP_N_LAYER_ALL);
    if (!gm_is_known(all)) return GM_UNKNOWN_VAL;
    bool unknown = false;
    for (int64_t il = 0; il < all.v && il < 512; il++) {
        val x = id_at(m, HP_IS_SWA, il);
        if (!gm_is_known(x)) unknown = true;
        else if (x.v) return gm_known(1);
    }
    return unknown ? GM_UNKNOWN_VAL : gm_known(0);
}

static val hp_n_expert_used_max(const vm *m) {
    val all = id_val(m, HP_N_LAYER_ALL);
    if (!gm_is_known(all)) return GM_UNKNOWN_VAL;
    int64_t best = 0;
    for (int64_t il = 0; il < all.v && il < 512; il++) {
        val x = id_at(m, HP_N_EXPERT_USED, il);
        if (!gm_is_known(x)) return GM_UNKNOWN_VAL;
        if (x.v > best) best = x.v;
    }
    return gm_known(best);
}

/* has_kv (:308-320), has_rope (:322-335), is_indexer_full (:292-298) */
static val hp_has_kv(const vm *m, val il) {
    val from = id_val(m, HP_KV_FROM_START);
    if (!KNOWN2(from, il)) return GM_UNKNOWN_VAL;
    return gm_known(from.v < 0 || (uint32_t)il.v < (uint32_t)from.v);
}

static val hp_has_rope(const vm *m, val il) {
    val router = id_val(m, HP_ROUTER);
    if (!KNOWN2(router, il)) return GM_UNKNOWN_VAL;
    if (router.v >= 0 && il.v == router.v) return gm_known(0);
    val p = per_layer(m, HP_ROPE_PATTERN, il);
    return gm_is_known(p) ? gm_known(p.v != 0) : GM_UNKNOWN_VAL;
}

static val hp_is_indexer_full(const vm *m, val il) {
    val n = hp_n_layer(m);
    if (!KNOWN2(n, il) || il.v < 0 || il.v >= n.v) return GM_UNKNOWN_VAL;
    return id_at(m, HP_IS_INDEXER_FULL, il.v);
}

/* n_pos_per_embd (:277-279): M-RoPE types take 4 positions; use_mrope (:337-339) */
static val hp_n_pos_per_embd(const vm *m) {
    val t = id_val(m, HP_ROPE_TYPE);
    if (!gm_is_known(t)) return GM_UNKNOWN_VAL;
    return gm_known(t.v == 8 /* LLAMA_ROPE_TYPE_MROPE */ || t.v == 40 /* IMROPE */ ? 4 : 1);
}

static val hp_use_mrope(const vm *m) {
    val a = id_at(m, HP_ROPE_SECTIONS, 0), b = id_at(m, HP_ROPE_SECTIONS, 1);
    return KNOWN2(a, b) ? gm_known(a.v > 0 && b.v > 0) : GM_UNKNOWN_VAL;
}

static val hp_n_gqa(const vm *m, val il) {
    val h = per_layer(m, HP_N_HEAD, il), kv = per_layer(m, HP_N_HEAD_KV, il);
    if (!KNOWN2(h, kv)) return GM_UNKNOWN_VAL;
    return gm_known(kv.v == 0 ? 0 : h.v / kv.v);
}

/* One method: its value for the argument (layer 0 when the call has none). */
static val call_method(const vm *m, const char *name, val il) {
    static const struct { const char *name; enum gm_hp_id id; } LAYER[] = {
        {"n_head", HP_N_HEAD}, {"n_head_kv", HP_N_HEAD_KV}, {"n_ff", HP_N_FF}, {"n_ff_exp", HP_N_FF_EXP},
        {"n_expert_used", HP_N_EXPERT_USED}, {"is_recr", HP_IS_RECR}, {"is_swa", HP_IS_SWA}, {"is_ple", HP_IS_PLE},
    };
    for (size_t i = 0; i < sizeof LAYER / sizeof LAYER[0]; i++)
        if (strcmp(name, LAYER[i].name) == 0) return per_layer(m, LAYER[i].id, il);
    if (strcmp(name, "n_layer") == 0) return hp_n_layer(m);
    if (strcmp(name, "n_rot") == 0) return by_swa(m, il, HP_ROT_FULL, HP_ROT_SWA);
    if (strcmp(name, "n_embd_head_k") == 0) return hp_head_k(m, il);
    if (strcmp(name, "n_embd_head_v") == 0) return hp_head_v(m, il);
    if (strcmp(name, "n_embd_k_gqa") == 0) return gqa(m, il, true);
    if (strcmp(name, "n_embd_v_gqa") == 0) return gqa(m, il, false);
    if (strcmp(name, "n_embd_k_gqa_max") == 0) return over_layers(m, true, false);
    if (strcmp(name, "n_embd_v_gqa_max") == 0) return over_layers(m, false, false);
    if (strcmp(name, "is_n_embd_k_gqa_variable") == 0) return over_layers(m, true, true);
    if (strcmp(name, "is_n_embd_v_gqa_variable") == 0) return over_layers(m, false, true);
    if (strcmp(name, "n_gqa") == 0) return hp_n_gqa(m, il);
    if (strcmp(name, "n_expert_used_max") == 0) return hp_n_expert_used_max(m);
    if (strcmp(name, "n_embd_r") == 0) return hp_n_embd_r(m);
    if (strcmp(name, "n_embd_s") == 0) return hp_n_embd_s(m);
    if (strcmp(name, "is_mla") == 0) return hp_is_mla(m);
    if (strcmp(name, "n_embd_head_k_mla") == 0) return head_mla(m, true);
    if (strcmp(name, "n_embd_head_v_mla") == 0) return head_mla(m, false);
    if (strcmp(name, "ple_conv_state") == 0) return hp_ple_conv_state(m);
    if (strcmp(name, "n_embd_inp") == 0) return hp_n_embd_inp(m);
    if (strcmp(name, "n_embd_inp_enc") == 0) return or_default(id_val(m, HP_EMBD_INP_ENC), hp_n_embd_inp(m));
    if (strcmp(name, "n_embd_out") == 0) return or_default(id_val(m, HP_EMBD_OUT), id_val(m, HP_N_EMBD));
    if (strcmp(name, "is_swa_any") == 0) return hp_is_swa_any(m);
    if (strcmp(name, "has_kv") == 0) return hp_has_kv(m, il);
    if (strcmp(name, "has_rope") == 0) return hp_has_rope(m, il);
    if (strcmp(name, "is_indexer_full") == 0) return hp_is_indexer_full(m, il);
    if (strcmp(name, "n_pos_per_embd") == 0) return hp_n_pos_per_embd(m);
    if (strcmp(name, "use_mrope") == 0) return hp_use_mrope(m);
    return GM_UNKNOWN_VAL; /* is_masked_swa and any method llama.cpp adds: not followed */
}

val gm_hp_method(vm *m, int32_t name, val arg) {
    return call_method(m, gm_arch_strings[name], arg);
}

val gm_hp_method_named(const vm *m, const char *name, val arg) { return call_method(m, name, arg); }

/* The per-layer flags a pattern setter writes. */
static enum gm_hp_id pattern_field(const char *setter) {
    return strcmp(setter, "set_recr_pattern") == 0 ? HP_IS_RECR : HP_IS_SWA; /* else "set_swa_pattern" */
}

/* set_swa_pattern / set_recr_pattern (:8-38): every n_pattern-th trunk layer
 * dense (the first with dense_first, else the last), the MTP layers not. */
flow gm_hp_effect(vm *m, const gm_arch_stmt *s) {
    enum gm_hp_id id = pattern_field(gm_arch_strings[s->a]);
    val n = gm_vm_eval(m, s->b), dense_first = s->c >= 0 ? gm_vm_eval(m, s->c) : gm_known(0);
    val n_layer = hp_n_layer(m), all = id_val(m, HP_N_LAYER_ALL);
    int32_t f = m->hp_id[id];
    if (!KNOWN2(n, dense_first) || !KNOWN2(n_layer, all)) {
        gm_hp_assign(m, f, GM_UNKNOWN_VAL, GM_UNKNOWN_VAL);
        return FLOW_NEXT;
    }
    const uint32_t p = (uint32_t)n.v;
    for (uint32_t il = 0; il < (uint32_t)n_layer.v && il < 512; il++) {
        bool on = p == 0 || (dense_first.v ? il % p != 0 : il % p < p - 1);
        gm_hp_assign(m, f, gm_known(il), gm_known(on));
    }
    for (uint32_t il = (uint32_t)n_layer.v; il < (uint32_t)all.v && il < 512; il++)
        gm_hp_assign(m, f, gm_known(il), gm_known(0));
    return FLOW_NEXT;
}

/* ------------------------------------------------------------------------ */
/* The key readers of llama_model_loader                                     */
/* ------------------------------------------------------------------------ */

/* gguf_type_name (ggml/src/gguf.cpp GGUF_TYPE_NAME) */
const char *gm_gguf_type_name(int32_t t) {
    static const char *const NAMES[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64",
                                        "i64", "f64"};
    return t >= 0 && t < (int32_t)(sizeof NAMES / sizeof NAMES[0]) ? NAMES[t] : "?";
}

/* GKV_Base<T>::gt: the GGUF type get_key wants for a target type */
static int32_t wanted_type(uint8_t ct) {
    switch (ct) {
    case GM_CT_U32: return GGUFMAP_VALUE_UINT32;
    case GM_CT_I32: return GGUFMAP_VALUE_INT32;
    case GM_CT_U64: return GGUFMAP_VALUE_UINT64;
    case GM_CT_I64: return GGUFMAP_VALUE_INT64;
    case GM_CT_BOOL: return GGUFMAP_VALUE_BOOL;
    case GM_CT_F32: return GGUFMAP_VALUE_FLOAT32;
    case GM_CT_STR: return GGUFMAP_VALUE_STRING;
    default: return -1;
    }
}

typedef struct getkey {
    vm *m;
    const gm_arch_stmt *s;
    char key[192];
    const ggufmap_kv *kv;
    uint8_t ct;
    bool required;
    bool failed;     /* a throw: the target and the result are unknown */
} getkey;

/* A throw of the loader: llama.cpp refuses the model with this message.
 * The run goes on with what the call would have set unknown. */
static void thrown(getkey *g, const char *fmt, ...) GM_PRINTF(2, 3);
static void thrown(getkey *g, const char *fmt, ...) {
    char msg[512], w[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    gm_vm_refuse(g->m, "llama.cpp refuses the model: %s (%s)", msg, gm_vm_where(g->s, w, sizeof w));
    gm_hp_forget(g->m, (uint32_t)(g->s - gm_arch_stmts), 1);
    g->failed = true;
}

static void set_target(getkey *g, int64_t index, val v) {
    if (g->s->c >= 0) gm_hp_assign(g->m, g->s->c, gm_known(index), v);
    else if (g->s->d >= 0 && index == 0) g->m->locals[g->s->d] = gm_hp_cast(v, g->ct);
}

/* The scalar's value as the target type; unknown for floats and strings. */
static val scalar_value(const ggufmap_kv *kv, uint8_t ct) {
    int64_t v;
    if (ct == GM_CT_F32 || ct == GM_CT_STR || ggufmap_kv_int(kv, &v) != GGUFMAP_OK) return GM_UNKNOWN_VAL;
    return gm_hp_cast(gm_known(v), ct);
}

/* GGUFMeta::GKV<T>::get_kv (:160-172): the key's type must be T's */
static bool type_ok(getkey *g, int32_t want) {
    if (want < 0 || g->kv->type == want) return true;
    thrown(g, "key %s has wrong type %s but expected type %s", g->key, gm_gguf_type_name(g->kv->type),
           gm_gguf_type_name(want));
    return false;
}

/* get_key (:419-434); true when found */
static bool get_key(getkey *g) {
    if (!g->kv) {
        if (g->required) thrown(g, "key not found in model: %s", g->key);
        return false;
    }
    if (type_ok(g, wanted_type(g->ct))) set_target(g, 0, scalar_value(g->kv, g->ct));
    return true;
}

/* get_arr's element type rule (:324-333 and :375-384): ints into int32 or
 * uint32 (bool too, but not into a std::vector), uint64, float, string */
static bool elem_ok(getkey *g, bool vector) {
    const int32_t e = g->kv->elem_type;
    const bool ints = e == GGUFMAP_VALUE_UINT32 || e == GGUFMAP_VALUE_INT32 || (e == GGUFMAP_VALUE_BOOL && !vector);
    if (!ints && e != GGUFMAP_VALUE_UINT64 && e != GGUFMAP_VALUE_FLOAT32 && e != GGUFMAP_VALUE_STRING) {
        thrown(g, "%s is not a string/float32/uint32/int32/uint64 array", g->key);
        return false;
    }
    const bool ok = ints ? g->ct == GM_CT_I32 || g->ct == GM_CT_U32
                         : (e == GGUFMAP_VALUE_UINT64 && g->ct == GM_CT_U64) ||
                               (e == GGUFMAP_VALUE_FLOAT32 && g->ct == GM_CT_F32) ||
                               (e == GGUFMAP_VALUE_STRING && g->ct == GM_CT_STR);
    if (!ok) thrown(g, "%s has wrong array element type %s", g->key, gm_gguf_type_name(e));
    return ok;
}

/* get_arr into a std::array (:350-404) or a std::vector (:304-348); true when read */
static bool get_arr(getkey *g, bool vector) {
    const ggufmap_kv *kv = g->kv;
    if (!kv || kv->type != GGUFMAP_VALUE_ARRAY) {
        if (g->required) thrown(g, "array key not found in model: %s", g->key);
        return false;
    }
    if (!elem_ok(g, vector)) return false;
    uint32_t cap = g->s->c >= 0 ? gm_hp_fields[g->s->c].count : UINT32_MAX;
    if (!vector && kv->count > cap) {
        thrown(g, "array length %u for key %s exceeds max %u", (uint32_t)kv->count, g->key, cap);
        return false;
    }
    if (vector || g->s->c < 0) return true; /* a vector's values are not kept */
    for (uint64_t i = 0; i < kv->count; i++) {
        int64_t v;
        val x = g->ct != GM_CT_F32 && ggufmap_kv_array_int(kv, i, &v) == GGUFMAP_OK ? gm_known(v) : GM_UNKNOWN_VAL;
        if (kv->elem_type == GGUFMAP_VALUE_BOOL && gm_is_known(x)) x.v = x.v != 0;
        set_target(g, (int64_t)i, x);
    }
    return true;
}

/* get_key_or_arr into an array (:457-497): an array of exactly n, or one
 * value for the first n elements */
static bool get_key_or_arr(getkey *g) {
    if (!g->kv) {
        if (g->required) thrown(g, "key not found in model: %s", g->key);
        return false;
    }
    val n = gm_vm_eval(g->m, g->s->e);
    uint32_t cap = g->s->c >= 0 ? gm_hp_fields[g->s->c].count : 512;
    if (!gm_is_known(n)) {
        if (g->s->c >= 0) gm_hp_assign(g->m, g->s->c, GM_UNKNOWN_VAL, GM_UNKNOWN_VAL);
        return true;
    }
    if ((uint32_t)n.v > cap) {
        thrown(g, "n > N_MAX: %u > %u for key %s", (uint32_t)n.v, cap, g->key);
        return false;
    }
    if (g->kv->type == GGUFMAP_VALUE_ARRAY) {
        if ((uint64_t)(uint32_t)n.v == g->kv->count) return get_arr(g, false);
        thrown(g, "key %s has wrong array length; expected %u, got %u", g->key, (uint32_t)n.v, (uint32_t)g->kv->count);
        return false;
    }
    if (!type_ok(g, wanted_type(g->ct))) return false;
    val v = scalar_value(g->kv, g->ct);
    for (uint32_t i = 0; i < (uint32_t)n.v; i++) set_target(g, i, v);
    return true;
}

/* get_arr_n (:275-294): the array's length */
static bool get_arr_n(getkey *g) {
    if (!g->kv) {
        if (g->required) thrown(g, "key not found in model: %s", g->key);
        return false;
    }
    if (g->kv->type != GGUFMAP_VALUE_ARRAY) {
        thrown(g, "key %s has wrong type %s but expected type %s", g->key, gm_gguf_type_name(g->kv->type), "arr");
        return false;
    }
    set_target(g, 0, gm_known((int64_t)g->kv->count));
    return true;
}

flow gm_hp_getkey(vm *m, const gm_arch_stmt *s) {
    getkey g = {.m = m, .s = s, .ct = (uint8_t)(s->b >> 8)};
    gm_vm_key(m, gm_arch_strings[s->a], g.key, sizeof g.key);
    g.kv = ggufmap_model_find_kv(m->model, g.key);
    val req = gm_vm_eval(m, s->g);
    g.required = !gm_is_known(req) || req.v != 0;
    bool found = false;
    switch ((gm_gk)(s->b & 255)) {
    case GM_GK_KEY: found = get_key(&g); break;
    case GM_GK_KEY_POOLING: /* the llama_pooling_type overload (:445-455): UNSPECIFIED when absent */
        found = get_key(&g);
        if (!found && !g.failed) set_target(&g, 0, gm_known(-1));
        break;
    case GM_GK_KEY_OR_ARR: found = get_key_or_arr(&g); break;
    case GM_GK_KEY_OR_ARR_SCALAR: /* (:502-524): an array is not a scalar */
        if (g.kv && g.kv->type == GGUFMAP_VALUE_ARRAY) {
            if (g.required) thrown(&g, "expected scalar, found array for key: %s", g.key);
        } else {
            found = get_key(&g);
        }
        break;
    case GM_GK_ARR: found = get_arr(&g, false); break;
    case GM_GK_ARR_VEC: found = get_arr(&g, true); break;
    case GM_GK_ARR_N: found = get_arr_n(&g); break;
    }
    if (s->f >= 0 && !g.failed) m->locals[s->f] = gm_known(found);
    return FLOW_NEXT;
}

/* ------------------------------------------------------------------------ */
/* Unknown branches, the vocabulary, messages                                */
/* ------------------------------------------------------------------------ */

void gm_hp_forget(vm *m, uint32_t first, uint32_t n) {
    for (uint32_t at = first; at < first + n; at++) {
        const gm_arch_stmt *s = &gm_arch_stmts[at];
        switch ((gm_as_kind)s->kind) {
        case GM_AS_HPSET: case GM_AS_HPCOPY: case GM_AS_HPFILL:
            gm_hp_assign(m, s->a, GM_UNKNOWN_VAL, GM_UNKNOWN_VAL);
            break;
        case GM_AS_GETKEY:
            if (s->c >= 0) gm_hp_assign(m, s->c, GM_UNKNOWN_VAL, GM_UNKNOWN_VAL);
            if (s->d >= 0) m->locals[s->d] = GM_UNKNOWN_VAL;
            if (s->f >= 0) m->locals[s->f] = GM_UNKNOWN_VAL;
            break;
        case GM_AS_HPCALL:
            gm_hp_assign(m, m->hp_id[pattern_field(gm_arch_strings[s->a])], GM_UNKNOWN_VAL, GM_UNKNOWN_VAL);
            break;
        case GM_AS_SET: m->locals[s->a] = GM_UNKNOWN_VAL; break;
        case GM_AS_CALLARCH: /* every field the architecture's code may write */
            for (uint32_t f = 0; f < gm_hp_n_fields; f++) gm_hp_assign(m, (int32_t)f, GM_UNKNOWN_VAL, GM_UNKNOWN_VAL);
            break;
        default: break;
        }
    }
}

/* llama_vocab::impl::load (src/llama-vocab.cpp:1940-1970): "no_vocab" and
 * "none" size the vocabulary by <arch>.vocab_size (0 when absent), every
 * other model by tokenizer.ggml.tokens; token_type_count is optional. */
void gm_hp_vocab(vm *m) {
    const ggufmap_kv *kv = ggufmap_model_find_kv(m->model, "tokenizer.ggml.model");
    const char *s;
    uint64_t n;
    int64_t v;
    if (!kv || ggufmap_kv_string(kv, &s, &n) != GGUFMAP_OK) return;
    if ((n == 4 && memcmp(s, "none", 4) == 0) || (n == 8 && memcmp(s, "no_vocab", 8) == 0)) {
        char key[160];
        gm_vm_key(m, "%s.vocab_size", key, sizeof key);
        const ggufmap_kv *vs = ggufmap_model_find_kv(m->model, key);
        m->hp->n_vocab = !vs ? 0 : vs->type == GGUFMAP_VALUE_UINT32 && ggufmap_kv_int(vs, &v) == GGUFMAP_OK ? v : -1;
    } else {
        kv = ggufmap_model_find_kv(m->model, "tokenizer.ggml.tokens");
        m->hp->n_vocab = kv && kv->type == GGUFMAP_VALUE_ARRAY ? (int64_t)kv->count : -1;
    }
    kv = ggufmap_model_find_kv(m->model, "tokenizer.ggml.token_type_count");
    m->hp->n_token_types = !kv ? 0 : kv->type == GGUFMAP_VALUE_UINT32 && ggufmap_kv_int(kv, &v) == GGUFMAP_OK ? v : -1;
}

void gm_hp_message(vm *m, const gm_arch_stmt *s, char *buf, size_t cap) {
    const char *t = gm_arch_strings[s->a];
    const int32_t args[3] = {s->b, s->c, s->d};
    size_t k = 0;
    int used = 0;
    for (const char *p = t; *p && k + 1 < cap; p++) {
        char piece[32];
        const char *add = NULL;
        if (strncmp(p, "{arch}", 6) == 0) {
            add = m->def->name;
            p += 5;
        } else if (p[0] == '%' && p[1] == '%') {
            add = "%";
            p++;
        } else if (p[0] == '%' && (p[1] == 'u' || p[1] == 'd')) {
            val x = used < 3 && args[used] >= 0 ? gm_vm_eval(m, args[used]) : GM_UNKNOWN_VAL;
            used++;
            if (gm_is_known(x)) snprintf(piece, sizeof piece, "%lld", (long long)(p[1] == 'u' ? (uint32_t)x.v : x.v));
            else snprintf(piece, sizeof piece, "?");
            add = piece;
            p++;
        }
        size_t len = add ? strlen(add) : 1;
        if (k + len + 1 > cap) break;
        memcpy(buf + k, add ? add : p, len);
        k += len;
    }
    buf[k] = '\0';
}

/*
 * arch.c - runs an architecture's load_arch_tensors, as compiled into
 * src/arch_table.c, against a GGUF file.
 *
 * Workload.  One run per placement: a few thousand statements (a loop over
 * the layers around a few dozen create_tensor calls).  State: the frame of
 * int locals, the handles (for every slot and every layer, the file tensor
 * a create_tensor returned, or -1 for nullptr), how often each file tensor
 * was created, and the list of creations handed to the placement.
 *
 * Values are three-valued: an int with a mask of the bits that are known.
 * Flags survive partly known (`has_kv(i) ? 0 : TENSOR_NOT_REQUIRED` is known
 * not to be DUPLICATED); arithmetic and comparisons need every bit.  An if
 * whose condition is unknown is decided by the file: both branches are
 * walked without effect ("dry"), collecting the tensors they would create
 * that the file holds and nothing has created yet, and the branch with
 * tensors of its own runs (neither when both find none).  A loop with an
 * unknown condition runs while its body finds such tensors.  For a file
 * llama.cpp loads, every tensor is created exactly once, so this picks
 * llama.cpp's branch whenever the branches differ in tensors.
 *
 * Before the loader, the same interpreter runs load_hparams (its
 * statements are in the table too; the store and the key readers are in
 * arch_hparams.c): an unknown condition there cannot be decided by the
 * file, so what either branch would write becomes unknown and checks on it
 * are not made.  With the hparams known, every create_tensor's shape is
 * checked as check_tensor_dims does, where the table could compute it.
 *
 * Hand-written facts (the hparams a loader's layer numbering depends on,
 * where load_arch_hparams computes them) are in the "layer counts"
 * section, each with its source line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_vm.h"

#define MAX_NAME 256
#define MAX_LAYERS 512 /* LLAMA_MAX_LAYERS, src/llama-hparams.h:11 */
#define STEP_LIMIT 50000000
#define HPARAMS_LOOP_LIMIT (8 * MAX_LAYERS)

typedef gm_probe probe;
#define UNKNOWN GM_UNKNOWN_VAL

/* ------------------------------------------------------------------------ */
/* Interpreter state                                                         */
/* ------------------------------------------------------------------------ */

const char *gm_vm_where(const gm_arch_stmt *s, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%u", gm_arch_files[s->file], (unsigned)s->line);
    return buf;
}

void gm_vm_key(const vm *m, const char *fmt, char *buf, size_t cap) {
    const char *p = strstr(fmt, "%s");
    if (!p) snprintf(buf, cap, "%s", fmt);
    else snprintf(buf, cap, "%.*s%s%s", (int)(p - fmt), fmt, m->def->name, p + 2);
}

flow gm_vm_refuse(vm *m, const char *fmt, ...) {
    if (!m->out->refusal[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->out->refusal, sizeof m->out->refusal, fmt, ap);
        va_end(ap);
    }
    return FLOW_NEXT;
}

/* Records the first error of the run (a later one would only repeat it). */
flow gm_vm_fail(vm *m, int status, const char *fmt, ...) {
    if (!m->status) {
        char msg[768];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        m->status = gm_fail(m->err, status, "%s", msg);
    }
    return FLOW_ERROR;
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */
/* ------------------------------------------------------------------------ */

/* Writes fmt with each "%d" replaced by the next of args (LLM_TN_IMPL::str,
 * src/llama-arch.cpp:1016) and "%%" by '%'; false if it does not fit. */
static bool format_name(char *buf, size_t cap, const char *fmt, const int64_t *args, int n_args) {
    size_t k = 0;
    int used = 0;
    for (const char *p = fmt; *p; p++) {
        char num[24];
        const char *piece = NULL;
        if (p[0] == '%' && p[1] == 'd') {
            snprintf(num, sizeof num, "%lld", (long long)(used < n_args ? args[used] : -1));
            used++;
            piece = num;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            piece = "%";
            p++;
        }
        size_t len = piece ? strlen(piece) : 1;
        if (k + len + 1 > cap) return false;
        memcpy(buf + k, piece ? piece : p, len);
        k += len;
    }
    buf[k] = '\0';
    return true;
}

/* ------------------------------------------------------------------------ */
/* Layer counts (hand-written: load_arch_hparams rewrites them)             */
/* ------------------------------------------------------------------------ */

static int64_t key_int(const vm *m, const char *fmt, int64_t fallback, bool *found) {
    char key[160];
    snprintf(key, sizeof key, fmt, m->def->name);
    const ggufmap_kv *kv = ggufmap_model_find_kv(m->model, key);
    int64_t v;
    *found = kv && ggufmap_kv_int(kv, &v) == GGUFMAP_OK;
    return *found ? v : fallback;
}

static int layer_counts(vm *m) {
    bool found;
    /* src/llama-model.cpp:1259-1262: block_count required, 0 < n <= LLAMA_MAX_LAYERS;
     * nextn_predict_layers optional, <= block_count. */
    int64_t all = key_int(m, gm_arch_block_count, 0, &found);
    if (!found || all <= 0 || all > MAX_LAYERS) {
        char key[160];
        snprintf(key, sizeof key, gm_arch_block_count, m->def->name);
        return gm_fail(m->err, GGUFMAP_EFORMAT, "key '%s' %s (llama.cpp needs 0 < n <= %d)", key,
                       found ? "out of range" : "missing", MAX_LAYERS);
    }
    int64_t nextn = key_int(m, gm_arch_nextn_predict_layers, 0, &found);
    if (nextn < 0 || nextn > all) return gm_fail(m->err, GGUFMAP_EFORMAT, "nextn_predict_layers %lld > block_count",
                                                 (long long)nextn);
    const char *a = m->def->name;
    if (strcmp(a, "graniteswitch") == 0) {
        /* granite-switch.cpp:61-67: an extra router layer at the end, counted as nextn */
        m->router_layer = (int32_t)(all - nextn);
        all = all - nextn + 1;
        nextn = 1;
    } else if (strcmp(a, "nanbeige") == 0) {
        /* nanbeige.cpp:14-31: the physical blocks are looped num_loops times */
        int64_t loops = key_int(m, gm_arch_num_loops, 1, &found);
        if (loops > 1 && (all - nextn) * loops <= MAX_LAYERS) all = (all - nextn) * loops;
    } else if (strcmp(a, "deepseek4") == 0 && nextn > 0) {
        /* deepseek4.cpp:20-26: no MTP block in the file, no nextn layers */
        char name[MAX_NAME];
        int64_t main_layers = all - nextn;
        format_name(name, sizeof name, "blk.%d.nextn.eh_proj.weight", &main_layers, 1);
        if (ggufmap_model_find_tensor(m->model, name) < 0) nextn = 0;
    }
    m->n_layer_all = (int32_t)all;
    m->n_layer_nextn = (int32_t)nextn;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */
/* ------------------------------------------------------------------------ */


static int64_t *handle_at(vm *m, int32_t slot, val layer) {
    if (!gm_is_known(layer) || layer.v < -1 || layer.v >= m->n_layer_all) return NULL;
    return &m->handles[(int64_t)slot * (m->n_layer_all + 1) + layer.v + 1];
}

static val weight(vm *m, const gm_arch_expr *x) {
    int64_t args[2];
    int n = 0;
    for (int32_t i = 0, ops[2] = {x->b, x->c}; i < 2; i++) {
        if (ops[i] < 0) continue;
        val a = gm_vm_eval(m, ops[i]);
        if (!gm_is_known(a)) return UNKNOWN;
        args[n++] = a.v;
    }
    char name[MAX_NAME];
    if (!format_name(name, sizeof name, gm_arch_strings[x->a], args, n)) return gm_known(0);
    return gm_known(ggufmap_model_find_tensor(m->model, name) >= 0);
}

static val bitwise(gm_ax_kind k, val a, val b) {
    val r;
    if (k == GM_AX_BOR) {
        r.known = (a.known & b.known) | (a.known & (uint64_t)a.v) | (b.known & (uint64_t)b.v);
        r.v = (int64_t)(((uint64_t)a.v | (uint64_t)b.v) & r.known);
    } else if (k == GM_AX_BAND) {
        r.known = (a.known & b.known) | (a.known & ~(uint64_t)a.v) | (b.known & ~(uint64_t)b.v);
        r.v = (int64_t)((uint64_t)a.v & (uint64_t)b.v & r.known);
    } else {
        r.known = a.known & b.known;
        r.v = (int64_t)(((uint64_t)a.v ^ (uint64_t)b.v) & r.known);
    }
    return r;
}

static val arith(gm_ax_kind k, val a, val b) {
    if (!gm_is_known(a) || !gm_is_known(b)) return UNKNOWN;
    int64_t x = a.v, y = b.v;
    switch (k) {
    case GM_AX_ADD: return gm_known((int64_t)((uint64_t)x + (uint64_t)y));
    case GM_AX_SUB: return gm_known((int64_t)((uint64_t)x - (uint64_t)y));
    case GM_AX_MUL: return gm_known((int64_t)((uint64_t)x * (uint64_t)y));
    case GM_AX_DIV: return y == 0 || (x == INT64_MIN && y == -1) ? UNKNOWN : gm_known(x / y);
    case GM_AX_MOD: return y == 0 || (x == INT64_MIN && y == -1) ? UNKNOWN : gm_known(x % y);
    case GM_AX_SHL: return y < 0 || y > 62 ? UNKNOWN : gm_known((int64_t)((uint64_t)x << y));
    case GM_AX_SHR: return y < 0 || y > 62 ? UNKNOWN : gm_known(x >> y);
    case GM_AX_EQ: return gm_known(x == y);
    case GM_AX_NE: return gm_known(x != y);
    case GM_AX_LT: return gm_known(x < y);
    case GM_AX_LE: return gm_known(x <= y);
    case GM_AX_GT: return gm_known(x > y);
    case GM_AX_GE: return gm_known(x >= y);
    default: return UNKNOWN;
    }
}

/* && and ||: a known operand may decide alone. */
static val logical(vm *m, const gm_arch_expr *x) {
    bool is_and = x->kind == GM_AX_LAND;
    val a = gm_vm_eval(m, x->a);
    if (gm_is_known(a) && (a.v != 0) != is_and) return gm_known(!is_and);
    m->speculative += !gm_is_known(a); /* C++ may not evaluate b at all */
    val b = gm_vm_eval(m, x->b);
    m->speculative -= !gm_is_known(a);
    if (gm_is_known(b) && (b.v != 0) != is_and) return gm_known(!is_and);
    if (gm_is_known(a) && gm_is_known(b)) return gm_known(is_and);
    return UNKNOWN;
}

static val conditional(vm *m, const gm_arch_expr *x) {
    val c = gm_vm_eval(m, x->a);
    if (gm_is_known(c)) return gm_vm_eval(m, c.v ? x->b : x->c);
    m->speculative++; /* only one arm runs in C++ */
    val a = gm_vm_eval(m, x->b), b = gm_vm_eval(m, x->c);
    m->speculative--;
    val r;
    r.known = a.known & b.known & ~((uint64_t)a.v ^ (uint64_t)b.v); /* the bits both arms agree on */
    r.v = (int64_t)((uint64_t)a.v & r.known);
    return r;
}

/* llama_rope_scaling_type_from_string of the string a key holds
 * (llama-model.cpp:1028-1036); the string's initial value when absent. */
static val rope_scaling_of(const vm *m, const gm_arch_expr *x) {
    char key[192];
    gm_vm_key(m, gm_arch_strings[x->a], key, sizeof key);
    const ggufmap_kv *kv = ggufmap_model_find_kv(m->model, key);
    const char *s;
    uint64_t n;
    if (!kv) return gm_known(x->v);
    if (ggufmap_kv_string(kv, &s, &n) != GGUFMAP_OK) return UNKNOWN; /* get_key refused it */
    for (uint32_t i = 0; i < gm_arch_n_rope_scaling; i++)
        if (strlen(gm_arch_rope_scaling[i].name) == n && memcmp(gm_arch_rope_scaling[i].name, s, (size_t)n) == 0)
            return gm_known(gm_arch_rope_scaling[i].value);
    return gm_known(gm_arch_rope_scaling_unspecified);
}

/* An integer division by zero is undefined in C++; on the machines
 * llama.cpp runs on it kills the process (SIGFPE), as the oracle shows. */
static void divided_by_zero(vm *m) {
    char w[256];
    if (m->dry || m->speculative || !m->cur) return;
    gm_vm_refuse(m, "llama.cpp crashes %s: an integer division by zero (SIGFPE) (%s)",
                 m->fn_kind == GM_FN_GRAPH ? "creating any context" : "loading the model",
                 gm_vm_where(m->cur, w, sizeof w));
}

val gm_vm_eval(vm *m, int32_t e) {
    if (e < 0) return UNKNOWN;
    const gm_arch_expr *x = &gm_arch_exprs[e];
    switch ((gm_ax_kind)x->kind) {
    case GM_AX_CONST: return gm_known(x->v);
    case GM_AX_UNKNOWN: return UNKNOWN;
    case GM_AX_LOCAL: return m->locals[x->a];
    case GM_AX_NLAYER: return gm_known(m->n_layer_all - m->n_layer_nextn);
    case GM_AX_NLAYER_ALL: return gm_known(m->n_layer_all);
    case GM_AX_NLAYER_NEXTN: return gm_known(m->n_layer_nextn);
    case GM_AX_LOAD_MTP: return gm_known(m->load_mtp);
    case GM_AX_ARCH: return gm_known(m->def->arch);
    case GM_AX_HANDLE: {
        int64_t *h = handle_at(m, x->a, gm_vm_eval(m, x->b));
        return h ? gm_known(*h >= 0) : UNKNOWN;
    }
    case GM_AX_HTYPE: {
        int64_t *h = handle_at(m, x->a, gm_vm_eval(m, x->b));
        return h && *h >= 0 ? gm_known(ggufmap_model_tensor(m->model, *h)->type) : UNKNOWN;
    }
    case GM_AX_WEIGHT: return weight(m, x);
    case GM_AX_HPF: return gm_hp_value(m, x->a, x->b < 0 ? gm_known(0) : gm_vm_eval(m, x->b));
    case GM_AX_HPM: return gm_hp_method(m, x->a, x->b < 0 ? gm_known(0) : gm_vm_eval(m, x->b));
    case GM_AX_VOCAB: {
        int64_t v = x->a == 0 ? m->hp->n_vocab : m->hp->n_token_types;
        return v >= 0 ? gm_known(v) : UNKNOWN;
    }
    case GM_AX_CAST: return gm_hp_cast(gm_vm_eval(m, x->a), (uint8_t)x->v);
    case GM_AX_STRKEY: return rope_scaling_of(m, x);
    case GM_AX_NOT: {
        val a = gm_vm_eval(m, x->a);
        return gm_is_known(a) ? gm_known(a.v == 0) : UNKNOWN;
    }
    case GM_AX_NEG: return arith(GM_AX_SUB, gm_known(0), gm_vm_eval(m, x->a));
    case GM_AX_BNOT: {
        val a = gm_vm_eval(m, x->a);
        return (val){~a.v & (int64_t)a.known, a.known};
    }
    case GM_AX_BAND: case GM_AX_BOR: case GM_AX_BXOR:
        return bitwise((gm_ax_kind)x->kind, gm_vm_eval(m, x->a), gm_vm_eval(m, x->b));
    case GM_AX_LAND: case GM_AX_LOR: return logical(m, x);
    case GM_AX_COND: return conditional(m, x);
    default: {
        val a = gm_vm_eval(m, x->a), b = gm_vm_eval(m, x->b);
        if ((x->kind == GM_AX_DIV || x->kind == GM_AX_MOD) && gm_is_known(a) && gm_is_known(b) && b.v == 0)
            divided_by_zero(m);
        return arith((gm_ax_kind)x->kind, a, b);
    }
    }
}

/* ------------------------------------------------------------------------ */
/* create_tensor                                                             */
/* ------------------------------------------------------------------------ */

/* A flag of a partly known flags value: TENSOR_NOT_REQUIRED counts as set
 * when unknown (nothing is refused on a guess), the others as clear. */
static bool flag(val flags, uint32_t bit, bool if_unknown) {
    if (!(flags.known & bit)) return if_unknown;
    return (flags.v & bit) != 0;
}

typedef struct call {
    char name[MAX_NAME];
    int64_t tensor;  /* file tensor, -1 when absent */
    int32_t bid;
    val flags;
} call;

/* The name, layer argument and flags of a CREATE; false (and an error)
 * when its layer argument is not known. */
static bool prepare(vm *m, const gm_arch_stmt *s, call *c) {
    const gm_arch_tensor *t = &gm_arch_tensors[s->a];
    int64_t args[2] = {-1, -1};
    c->bid = -1;
    for (int i = 0; i < 2; i++) {
        int32_t e = i == 0 ? s->c : s->d;
        if (e < 0) continue;
        val v = gm_vm_eval(m, e);
        if (!gm_is_known(v)) {
            char w[256];
            if (!m->dry)
                gm_vm_fail(m, GGUFMAP_EFORMAT, "%s: the layer of '%s' depends on hparams the file does not give",
                           gm_vm_where(s, w, sizeof w), t->name);
            return false;
        }
        args[i] = v.v;
    }
    c->bid = s->c >= 0 ? (int32_t)args[0] : -1;
    if (!format_name(c->name, sizeof c->name - 64, t->name, args, 2)) return false;
    if (s->b >= 0) { /* suffixes are short words: "weight", "bias", "lora_a" */
        size_t k = strlen(c->name);
        snprintf(c->name + k, sizeof c->name - k, ".%.60s", gm_arch_strings[s->b]);
    }
    c->tensor = ggufmap_model_find_tensor(m->model, c->name);
    c->flags = gm_vm_eval(m, s->e);
    return true;
}

static int probe_add(probe *p, int64_t tensor) {
    if (p->n == p->cap) {
        int64_t cap = p->cap ? p->cap * 2 : 64;
        int64_t *items = realloc(p->items, (size_t)cap * sizeof *items);
        if (!items) return GGUFMAP_ENOMEM;
        p->items = items;
        p->cap = cap;
    }
    p->items[p->n++] = tensor;
    return GGUFMAP_OK;
}

static flow record(vm *m, const call *c, gm_layer layer, gm_op op) {
    if (m->out->n_creations == m->cap_creations) {
        int64_t cap = m->cap_creations ? m->cap_creations * 2 : 256;
        gm_creation *list = realloc(m->out->creations, (size_t)cap * sizeof *list);
        if (!list) return gm_vm_fail(m, GGUFMAP_ENOMEM, "out of memory");
        m->out->creations = list;
        m->cap_creations = cap;
    }
    gm_creation *r = &m->out->creations[m->out->n_creations++];
    r->tensor = c->tensor;
    r->bid = c->bid;
    r->layer = (uint8_t)layer;
    r->op = (uint8_t)op;
    r->flags = (uint8_t)((flag(c->flags, gm_arch_tensor_duplicated, false) ? GM_CREATE_DUPLICATED : 0) |
                         (flag(c->flags, gm_arch_tensor_read_lazy, false) ? GM_CREATE_READ_LAZY : 0));
    return FLOW_NEXT;
}

static void count_created(vm *m, int64_t tensor) {
    m->n_created++;
    if (m->created[tensor] < 255) m->created[tensor]++;
}

/* The op a weight is tested with (llama-model-loader.cpp:1187-1199). */
static gm_op op_for(const vm *m, const gm_arch_stmt *s, const gm_arch_tensor *info) {
    const char *suffix = s->b >= 0 ? gm_arch_strings[s->b] : NULL;
    if (suffix && strcmp(suffix, "bias") == 0) return info->op == GM_OP_MUL_MAT_ID ? GM_OP_ADD_ID : GM_OP_ADD;
    if (m->router_layer >= 0 && suffix && (strcmp(suffix, "lora_a") == 0 || strcmp(suffix, "lora_b") == 0))
        return GM_OP_MUL_MAT_ID;
    return (gm_op)info->op;
}

/* llama_format_tensor_shape (src/llama-impl.cpp:101-117): "%6lld" joined by ", " */
static void format_shape(char *buf, size_t cap, const val *ne, int n) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < cap; i++) {
        if (gm_is_known(ne[i])) k += (size_t)snprintf(buf + k, cap - k, "%s%6lld", i ? ", " : "", (long long)ne[i].v);
        else k += (size_t)snprintf(buf + k, cap - k, "%s%6s", i ? ", " : "", "?");
    }
}

/* check_tensor_dims (llama-model-loader.cpp:880-922): the file's tensor
 * must have the dimensions create_tensor gives (and 1 beyond them), or with
 * TENSOR_ALLOW_RESHAPE as many elements.  A dimension the table cannot
 * compute is not compared. */
static flow check_shape(vm *m, const gm_arch_stmt *s, const call *c) {
    if (s->h < 0) return FLOW_NEXT;
    const gm_arch_shape *shape = &gm_arch_shapes[s->h];
    const ggufmap_tensor *t = ggufmap_model_tensor(m->model, c->tensor);
    val want[4], got[4];
    bool bad = false;
    for (int i = 0; i < 4; i++) got[i] = gm_known(t->ne[i]);
    for (int i = 0; i < shape->n; i++) want[i] = gm_vm_eval(m, shape->e[i]);
    if (!(c->flags.known & gm_arch_tensor_allow_reshape)) return FLOW_NEXT;
    if (c->flags.v & gm_arch_tensor_allow_reshape) {
        uint64_t n_want = 1, n_got = 1;
        for (int i = 0; i < shape->n; i++) {
            if (!gm_is_known(want[i])) return FLOW_NEXT;
            n_want *= (uint64_t)want[i].v;
        }
        for (int i = 0; i < 4; i++) n_got *= (uint64_t)t->ne[i];
        bad = n_want != n_got;
    } else {
        for (int i = 0; i < 4 && !bad; i++) {
            val w = i < shape->n ? want[i] : gm_known(1);
            bad = gm_is_known(w) && w.v != t->ne[i];
        }
    }
    if (!bad) return FLOW_NEXT;
    char w[256], a[160], b[160];
    format_shape(a, sizeof a, want, shape->n);
    format_shape(b, sizeof b, got, 4);
    return gm_vm_refuse(m, "llama.cpp refuses the model: check_tensor_dims: tensor '%s' has wrong shape; "
                        "expected %s, got %s (%s)", c->name, a, b, gm_vm_where(s, w, sizeof w));
}

/* llama_model_base::create_tensor and llama_model_loader::create_tensor
 * (llama-model.cpp:1885-1890, llama-model-loader.cpp:1116-1401) for one call;
 * *handle gets what it returns. */
static flow create(vm *m, const gm_arch_stmt *s, int64_t *handle) {
    call c;
    char w[256];
    if (!prepare(m, s, &c)) return m->dry ? FLOW_NEXT : FLOW_ERROR;
    bool dup = flag(c.flags, gm_arch_tensor_duplicated, false);
    if (m->dry) {
        bool fresh = c.tensor >= 0 && (dup || !m->created[c.tensor]); /* a skipped one counts as created too */
        if (fresh && probe_add(m->dry, c.tensor)) return gm_vm_fail(m, GGUFMAP_ENOMEM, "out of memory");
        return FLOW_NEXT;
    }
    *handle = -1;
    if (c.bid != -1 && (c.bid < 0 || c.bid >= m->n_layer_all)) /* dev_layer.at(bid) throws */
        return gm_vm_fail(m, GGUFMAP_EFORMAT, "%s: tensor '%s' is in a layer beyond block_count",
                          gm_vm_where(s, w, sizeof w), c.name);
    if (c.tensor < 0) {
        if (flag(c.flags, gm_arch_tensor_not_required, true)) return FLOW_NEXT;
        return gm_vm_fail(m, GGUFMAP_EFORMAT,
                          "llama.cpp refuses the model: check_tensor_dims: tensor '%s' not found (%s)",
                          c.name, gm_vm_where(s, w, sizeof w));
    }
    check_shape(m, s, &c);
    uint32_t id = (uint32_t)s->a == gm_arch_tensor_token_embd && dup ? gm_arch_tensor_output : (uint32_t)s->a;
    const gm_arch_tensor *info = &gm_arch_tensors[id];
    if (!info->has_info)
        return gm_vm_fail(m, GGUFMAP_EFORMAT, "missing tensor info mapping for %s (%s)", c.name,
                          gm_vm_where(s, w, sizeof w));
    if (info->op == GM_OP_NONE || flag(c.flags, gm_arch_tensor_skip, false)) { /* "unused tensor": counted */
        count_created(m, c.tensor);
        return FLOW_NEXT;
    }
    bool io = info->layer == GM_LAYER_INPUT || info->layer == GM_LAYER_OUTPUT;
    if (io != (c.bid == -1)) /* GGML_ABORT, llama-model-loader.cpp:1201-1209 */
        return gm_vm_fail(m, GGUFMAP_EFORMAT, "tensor '%s' %s (llama.cpp aborts)", c.name,
                          io ? "is an input/output tensor used with a layer number"
                             : "is a layer tensor without a layer");
    flow f = record(m, &c, (gm_layer)info->layer, op_for(m, s, info));
    if (f != FLOW_NEXT) return f;
    *handle = c.tensor;
    if (!dup) count_created(m, c.tensor);
    return FLOW_NEXT;
}

/* ------------------------------------------------------------------------ */
/* Statements                                                                */
/* ------------------------------------------------------------------------ */

static flow run(vm *m, uint32_t first, uint32_t n);

/* Statements a statement takes with its parts. */
static uint32_t extent(const gm_arch_stmt *s) {
    switch ((gm_as_kind)s->kind) {
    case GM_AS_IF: case GM_AS_FOR: return 1 + (uint32_t)s->b + (uint32_t)s->c;
    case GM_AS_SCOPE: return 1 + (uint32_t)s->a;
    default: return 1;
    }
}

/* Walks [first, first + n) without effect, adding to *into the file tensors
 * it would create that nothing created yet (duplicates included).  The
 * locals are restored afterwards. */
static int dry_walk(vm *m, uint32_t first, uint32_t n, probe *into) {
    uint32_t n_locals = m->n_locals;
    val *saved = malloc((n_locals ? n_locals : 1) * sizeof *saved);
    if (!saved) return GGUFMAP_ENOMEM;
    memcpy(saved, m->locals, n_locals * sizeof *saved);
    probe *outer = m->dry;
    m->dry = into;
    run(m, first, n);
    m->dry = outer;
    memcpy(m->locals, saved, n_locals * sizeof *saved);
    free(saved);
    return m->status;
}

/* Which branch of an if with an unknown condition llama.cpp took, from the
 * tensors each would create: 1 then, 0 else, -1 neither. */
static int choose_branch(vm *m, uint32_t then_first, uint32_t n_then, uint32_t n_else) {
    probe t = {0}, e = {0};
    int choice = -1;
    if (dry_walk(m, then_first, n_then, &t) || dry_walk(m, then_first + n_then, n_else, &e))
        goto done;
    for (int64_t i = 0; i < e.n; i++) m->mark[e.items[i]] |= 2;
    int64_t t_only = 0, e_only = 0;
    for (int64_t i = 0; i < t.n; i++) {
        t_only += !(m->mark[t.items[i]] & 2);
        m->mark[t.items[i]] |= 1;
    }
    for (int64_t i = 0; i < e.n; i++) e_only += !(m->mark[e.items[i]] & 1);
    for (int64_t i = 0; i < e.n; i++) m->mark[e.items[i]] = 0;
    for (int64_t i = 0; i < t.n; i++) m->mark[t.items[i]] = 0;
    if (t_only || e_only) choice = t_only >= e_only;
    else if (t.n) choice = 1;
done:
    free(t.items);
    free(e.items);
    return choice;
}

static flow run_if(vm *m, const gm_arch_stmt *s, uint32_t at) {
    uint32_t n_then = (uint32_t)s->b, n_else = (uint32_t)s->c;
    val c = gm_vm_eval(m, s->a);
    if (gm_is_known(c)) return c.v ? run(m, at + 1, n_then) : run(m, at + 1 + n_then, n_else);
    if (m->fn_kind != GM_FN_LOADER) { /* no tensors decide: whatever either way writes is unknown */
        gm_hp_forget(m, at + 1, n_then + n_else);
        return FLOW_NEXT;
    }
    if (m->dry) { /* both ways, each from the same locals */
        if (dry_walk(m, at + 1, n_then, m->dry) || dry_walk(m, at + 1 + n_then, n_else, m->dry))
            return FLOW_ERROR;
        return FLOW_NEXT;
    }
    int choice = choose_branch(m, at + 1, n_then, n_else);
    if (m->status) return FLOW_ERROR;
    if (choice < 0) return FLOW_NEXT;
    return choice ? run(m, at + 1, n_then) : run(m, at + 1 + n_then, n_else);
}

/* Does the body, run from the current locals, create a tensor of the file
 * that nothing created yet?  (A loop whose bound the file does not give.) */
static bool body_finds(vm *m, uint32_t first, uint32_t n) {
    probe p = {0};
    bool found = dry_walk(m, first, n, &p) == GGUFMAP_OK && p.n > 0;
    free(p.items);
    return found;
}

static flow run_for(vm *m, const gm_arch_stmt *s, uint32_t at) {
    uint32_t n_body = (uint32_t)s->b, n_step = (uint32_t)s->c;
    int64_t limit = ggufmap_model_n_tensors(m->model) + MAX_LAYERS;
    for (int64_t iter = 0;; iter++) {
        val c = gm_vm_eval(m, s->a);
        if (gm_is_known(c) && !c.v) break;
        /* hparams code loops over layers or short arrays: a count past that
         * comes of a value llama.cpp has already refused (n_layer() wrapped
         * below zero after a failed assert); what the loop writes is unknown */
        /* and past a refusal, the loader's loops run on values llama.cpp
         * never reaches (a count of 2^31 heads after "PLE head count ... is
         * out of range"): what they would create is unknown */
        const bool hparams_code = m->fn_kind != GM_FN_LOADER;
        if ((hparams_code && !gm_is_known(c)) || ((hparams_code || m->out->refusal[0]) && iter > HPARAMS_LOOP_LIMIT)) {
            gm_hp_forget(m, at + 1, n_body + n_step);
            break;
        }
        if (!gm_is_known(c) && (iter > limit || (!m->dry && !body_finds(m, at + 1, n_body)))) break;
        int64_t found_before = m->dry ? m->dry->n : 0;
        flow f = run(m, at + 1, n_body);
        if (!gm_is_known(c) && m->dry && m->dry->n == found_before) break; /* dry: until nothing new */
        if (f == FLOW_BREAK) break;
        if (f == FLOW_RETURN || f == FLOW_ERROR) return f;
        f = run(m, at + 1 + n_body, n_step);
        if (f == FLOW_ERROR) return f;
        if (m->status) return FLOW_ERROR;
    }
    return FLOW_NEXT;
}

static flow run_hset(vm *m, const gm_arch_stmt *s) {
    if (m->dry) return FLOW_NEXT;
    int64_t *dst = handle_at(m, s->a, gm_vm_eval(m, s->b));
    if (!dst) return FLOW_NEXT;
    int64_t *src = s->c >= 0 ? handle_at(m, s->c, gm_vm_eval(m, s->d)) : NULL;
    *dst = src ? *src : -1;
    return FLOW_NEXT;
}

static void fill_field(vm *m, int32_t field, val v) {
    for (uint32_t k = 0; k < gm_hp_fields[field].count; k++) gm_hp_assign(m, field, gm_known(k), v);
}

static void copy_field(vm *m, int32_t dst, int32_t src) {
    for (uint32_t k = 0; k < gm_hp_fields[dst].count; k++)
        gm_hp_assign(m, dst, gm_known(k), k < gm_hp_fields[src].count ? gm_hp_value(m, src, gm_known(k)) : UNKNOWN);
}

static int run_function(vm *m, uint32_t func);

/* load_hparams calls load_arch_hparams(ml) here: the architecture's
 * function with a frame of its own; where its code did not compile, every
 * field it could write is unknown. */
static flow run_arch_hparams(vm *m, uint32_t at) {
    if (m->def->hparams < 0) {
        gm_hp_forget(m, at, 1);
        return FLOW_NEXT;
    }
    val *locals = m->locals;
    uint32_t n_locals = m->n_locals;
    uint8_t kind = m->fn_kind;
    run_function(m, (uint32_t)m->def->hparams);
    m->locals = locals;
    m->n_locals = n_locals;
    m->fn_kind = kind;
    return m->status ? FLOW_ERROR : FLOW_NEXT;
}

static flow run_one(vm *m, uint32_t at) {
    const gm_arch_stmt *s = &gm_arch_stmts[at];
    m->cur = s;
    if (++m->steps > STEP_LIMIT)
        return gm_vm_fail(m, GGUFMAP_EFORMAT, "the '%s' loader runs more than %d steps", m->def->name, STEP_LIMIT);
    switch ((gm_as_kind)s->kind) {
    case GM_AS_CREATE: {
        int64_t scratch, *h = s->f >= 0 ? handle_at(m, s->f, gm_vm_eval(m, s->g)) : NULL;
        return create(m, s, h ? h : &scratch);
    }
    case GM_AS_SET: m->locals[s->a] = gm_vm_eval(m, s->b); return FLOW_NEXT;
    case GM_AS_HSET: return run_hset(m, s);
    case GM_AS_IF: return run_if(m, s, at);
    case GM_AS_FOR: return run_for(m, s, at);
    case GM_AS_SCOPE: {
        flow f = run(m, at + 1, (uint32_t)s->a);
        return f == FLOW_RETURN ? FLOW_NEXT : f;
    }
    case GM_AS_FAIL: {
        char w[256], msg[512];
        if (m->dry) return FLOW_RETURN; /* a path llama.cpp does not finish */
        gm_hp_message(m, s, msg, sizeof msg);
        return gm_vm_refuse(m, "llama.cpp refuses the model: %s (%s)", msg[0] ? msg : "(an exception)",
                            gm_vm_where(s, w, sizeof w));
    }
    case GM_AS_ASSERT: {
        char w[256];
        val c = gm_vm_eval(m, s->a);
        if (m->dry || !gm_is_known(c) || c.v) return FLOW_NEXT;
        return gm_vm_refuse(m, "llama.cpp aborts %s: GGML_ASSERT(%s) failed (%s)",
                            m->fn_kind == GM_FN_GRAPH ? "creating any context" : "loading the model",
                            gm_arch_strings[s->b], gm_vm_where(s, w, sizeof w));
    }
    case GM_AS_GETKEY: return m->dry ? FLOW_NEXT : gm_hp_getkey(m, s);
    case GM_AS_HPSET:
        if (!m->dry) gm_hp_assign(m, s->a, s->b < 0 ? gm_known(0) : gm_vm_eval(m, s->b), gm_vm_eval(m, s->c));
        return FLOW_NEXT;
    case GM_AS_HPFILL:
        if (!m->dry) fill_field(m, s->a, gm_vm_eval(m, s->b));
        return FLOW_NEXT;
    case GM_AS_HPCOPY:
        if (!m->dry) copy_field(m, s->a, s->b);
        return FLOW_NEXT;
    case GM_AS_HPCALL: return m->dry ? FLOW_NEXT : gm_hp_effect(m, s);
    case GM_AS_CALLARCH: return run_arch_hparams(m, at);
    case GM_AS_RETURN: return FLOW_RETURN;
    case GM_AS_BREAK: return FLOW_BREAK;
    case GM_AS_CONTINUE: return FLOW_CONTINUE;
    }
    return FLOW_ERROR;
}

static flow run(vm *m, uint32_t first, uint32_t n) {
    for (uint32_t at = first; at < first + n;) {
        flow f = run_one(m, at);
        if (f != FLOW_NEXT) return f;
        at += extent(&gm_arch_stmts[at]);
    }
    return FLOW_NEXT;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

static int run_function(vm *m, uint32_t func) {
    const gm_arch_func *f = &gm_arch_funcs[func];
    val *locals = calloc(f->n_locals ? f->n_locals : 1, sizeof *locals);
    if (!locals) return gm_fail(m->err, GGUFMAP_ENOMEM, "out of memory");
    m->locals = locals;
    m->n_locals = f->n_locals;
    m->fn_kind = f->kind;
    run(m, f->first, f->n_stmts);
    m->locals = NULL;
    free(locals);
    return m->status;
}

/* llama_model_loader::done_getting_tensors (llama-model-loader.cpp:1392-1402):
 * every file tensor created once.  llama.cpp's message counts them; ours
 * also names the first one that is not. */
static int check_counts(vm *m) {
    int64_t n = ggufmap_model_n_tensors(m->model);
    if (m->n_created == n) return GGUFMAP_OK;
    const char *what = m->n_created > n ? "too many tensors created" : "wrong number of tensors";
    for (int64_t i = 0; i < n; i++) {
        if (m->created[i] == 1) continue;
        const ggufmap_tensor *t = ggufmap_model_tensor(m->model, i);
        return gm_fail(m->err, GGUFMAP_EFORMAT,
                       "llama.cpp refuses the model: done_getting_tensors: %s; expected %lld, got %lld (tensor "
                       "'%.*s' is %s by llama.cpp's '%s' loader, %s)", what, (long long)n, (long long)m->n_created,
                       (int)t->name_len, t->name, m->created[i] ? "created twice" : "not used", m->def->name,
                       gm_arch_funcs[m->def->func].where);
    }
    return gm_fail(m->err, GGUFMAP_EFORMAT, "llama.cpp refuses the model: done_getting_tensors: %s; expected %lld, "
                   "got %lld", what, (long long)n, (long long)m->n_created);
}

static int compare_def(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const gm_arch_def *)elem)->name);
}

const gm_arch_def *gm_arch_find(const char *name) {
    return bsearch(name, gm_arch_defs, gm_arch_n_defs, sizeof gm_arch_defs[0], compare_def);
}

static int find_def(vm *m) {
    const ggufmap_kv *kv = ggufmap_model_find_kv(m->model, gm_arch_general_architecture);
    const char *s;
    uint64_t len;
    if (!kv || ggufmap_kv_string(kv, &s, &len) != GGUFMAP_OK)
        return gm_fail(m->err, GGUFMAP_EFORMAT, "key '%s' missing: llama.cpp cannot tell the architecture",
                       gm_arch_general_architecture);
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(len < 100 ? len : 100), s);
    m->def = strlen(name) == len ? gm_arch_find(name) : NULL;
    if (!m->def)
        return gm_fail(m->err, GGUFMAP_EFORMAT, "architecture '%s' is not one llama.cpp v0.5.0 loads", name);
    return GGUFMAP_OK;
}

/* llama_model_load (src/llama.cpp:352-359): CLIP is refused after its
 * hparams; then llama_vocab::impl::load (src/llama-vocab.cpp:1944) wants
 * the tokenizer's model as a string. */
static void check_vocab(vm *m) {
    const ggufmap_kv *kv = ggufmap_model_find_kv(m->model, "tokenizer.ggml.model");
    if (strcmp(m->def->name, "clip") == 0)
        gm_vm_refuse(m, "llama.cpp refuses the model: CLIP cannot be used as main model, use it with --mmproj "
                        "instead (src/llama.cpp:353)");
    else if (!kv)
        gm_vm_refuse(m, "llama.cpp refuses the model: error loading model vocabulary: key not found in model: "
                        "tokenizer.ggml.model (src/llama-vocab.cpp:1944)");
    else if (kv->type != GGUFMAP_VALUE_STRING)
        gm_vm_refuse(m, "llama.cpp refuses the model: error loading model vocabulary: key tokenizer.ggml.model has "
                        "wrong type %s but expected type str (src/llama-vocab.cpp:1944)", gm_gguf_type_name(kv->type));
}

/* load_hparams (llama-model.cpp:1231, with the architecture's own inside),
 * then the vocabulary's size. */
static int load_hparams(vm *m) {
    int rc = gm_hp_init(m);
    if (!rc) rc = run_function(m, gm_arch_base_hparams);
    if (!rc) check_vocab(m);
    if (!rc) gm_hp_vocab(m);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Creating a context                                                        */
/* ------------------------------------------------------------------------ */

static void refuse_context(vm *m, const char *assertion, const char *where) {
    gm_vm_refuse(m, "llama.cpp aborts creating any context: GGML_ASSERT(%s) failed (%s)", assertion, where);
}

/* llama_memory_recurrent (llama-memory-recurrent.cpp:95-123): every
 * recurrent layer keeps r [n_embd_r] and s [n_embd_s] rows (and the PLE
 * history); when all are empty no buffer can be allocated and llama.cpp
 * fails the context ("failed to allocate buffer for rs cache"). */
static void check_recurrent_state(vm *m) {
    val r = gm_hp_method_named(m, "n_embd_r", gm_known(0)), st = gm_hp_method_named(m, "n_embd_s", gm_known(0));
    val ple = gm_hp_method_named(m, "ple_conv_state", gm_known(0)), n = gm_hp_method_named(m, "n_layer", gm_known(0));
    if (!gm_is_known(r) || !gm_is_known(st) || !gm_is_known(ple) || !gm_is_known(n) || r.v || st.v || ple.v) return;
    for (int64_t il = 0; il < n.v && il < MAX_LAYERS; il++) {
        val recr = gm_hp_method_named(m, "is_recr", gm_known(il));
        if (gm_is_known(recr) && recr.v) {
            gm_vm_refuse(m, "llama.cpp fails creating any context: failed to initialize the context: failed to "
                            "allocate buffer for rs cache (the recurrent state of layer %lld is empty: n_embd_r and "
                            "n_embd_s are 0; src/llama-memory-recurrent.cpp:121)", (long long)il);
            return;
        }
    }
}

/* A KV layer's cache row is n_embd_k_gqa(il) = n_embd_head_k(il) *
 * n_head_kv(il) wide (llama-kv-cache.cpp:240-250), while the graph stores
 * what the layer's attn_k projection computes.  create_tensor checks attn_k
 * against layer 0's sizes only (LLAMA_LOAD_LOCALS), so a per-layer
 * head_count_kv that contradicts it passes the load and ggml aborts when
 * the graph writes the cache (ggml_set_rows, ggml.c:4005). */
static void check_kv_widths(vm *m) {
    for (int32_t il = 0; il < m->n_layer_all - m->n_layer_nextn; il++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.attn_k.weight", il);
        int64_t t = ggufmap_model_find_tensor(m->model, name);
        val width = gm_hp_method_named(m, "n_embd_k_gqa", gm_known(il));
        val kv = gm_hp_method_named(m, "has_kv", gm_known(il));
        if (t < 0 || !gm_is_known(width) || !gm_is_known(kv) || !kv.v) continue;
        const ggufmap_tensor *k = ggufmap_model_tensor(m->model, t);
        if (k->ne[1] == width.v) continue;
        gm_vm_refuse(m, "llama.cpp aborts creating any context: GGML_ASSERT(a->ne[0] == b->ne[0]) failed "
                        "(ggml/src/ggml.c:4005, ggml_set_rows: layer %d's KV cache rows are n_embd_k_gqa = %lld "
                        "wide, its attn_k computes %lld)", il, (long long)width.v, (long long)k->ne[1]);
        return;
    }
}

/* llama_model::create_memory (llama-model.cpp:2274-2760) asserts what the
 * hyperparameters alone decide, for every context: a KV cache (the
 * default branch, neither recurrent nor hybrid) wants SWA layers exactly
 * when it has an SWA type (:2685, :2735), and gemma3n / gemma4's layers
 * without a cache of their own read those of two earlier layers (the
 * reuse callback, :2660, called for every layer).  Unknown values decide
 * nothing. */
static void check_memory(vm *m) {
    if (m->def->memory & (GM_ARCH_RECURRENT | GM_ARCH_HYBRID)) check_recurrent_state(m);
    if (m->def->memory & (GM_ARCH_RECURRENT | GM_ARCH_HYBRID | GM_ARCH_OWN_MEMORY | GM_ARCH_NO_MEMORY)) return;
    check_kv_widths(m);
    int64_t swa_type, from;
    val any = gm_hp_method_named(m, "is_swa_any", gm_known(0));
    if (gm_hp_get(m->hp, "swa_type", 0, &swa_type) && gm_is_known(any)) {
        if (swa_type != 0 && !any.v) refuse_context(m, "hparams.is_swa_any()", "src/llama-model.cpp:2685");
        if (swa_type == 0 && any.v) refuse_context(m, "!hparams.is_swa_any()", "src/llama-model.cpp:2735");
    }
    const bool shares = strcmp(m->def->name, "gemma3n") == 0 || strcmp(m->def->name, "gemma4") == 0;
    if (shares && gm_hp_get(m->hp, "n_layer_kv_from_start", 0, &from) && (int32_t)from < 2)
        refuse_context(m, "hparams.n_layer_kv_from_start >= 2", "src/llama-model.cpp:2660");
}

int gm_arch_load_model(const ggufmap_model *model, bool load_mtp, gm_arch_load *out, ggufmap_error *err) {
    memset(out, 0, sizeof *out);
    vm m = {.model = model, .load_mtp = load_mtp, .router_layer = -1, .out = out, .hp = &out->hp, .err = err};
    int rc = find_def(&m);
    if (!rc) rc = load_hparams(&m);
    if (!rc) rc = layer_counts(&m);
    int64_t n = ggufmap_model_n_tensors(model);
    if (!rc) {
        m.handles = malloc((size_t)gm_arch_n_handles * (size_t)(m.n_layer_all + 1) * sizeof *m.handles);
        m.created = calloc((size_t)(n ? n : 1), 1);
        m.mark = calloc((size_t)(n ? n : 1), 1);
        if (!m.handles || !m.created || !m.mark) rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    if (!rc) {
        for (int64_t i = 0; i < (int64_t)gm_arch_n_handles * (m.n_layer_all + 1); i++) m.handles[i] = -1;
        rc = run_function(&m, (uint32_t)m.def->func);
    }
    if (!rc) rc = run_function(&m, gm_arch_generic_pass);
    if (!rc) rc = check_counts(&m);
    if (!rc) check_memory(&m);
    if (!rc && m.def->graph >= 0) rc = run_function(&m, (uint32_t)m.def->graph);
    out->def = m.def;
    out->n_layer_all = m.n_layer_all;
    out->n_layer_nextn = m.n_layer_nextn;
    free(m.handles);
    free(m.created);
    free(m.mark);
    /* llama.cpp stops at the first failure: a check that failed before the
     * placement could not be finished is the reason given, what stopped the
     * placement follows it */
    if (rc == GGUFMAP_EFORMAT && out->refusal[0]) {
        char later[sizeof err->message];
        snprintf(later, sizeof later, "%s", err->message);
        gm_fail(err, rc, "%s; past that: %s", out->refusal, later);
    }
    if (rc) gm_arch_load_free(out);
    return rc;
}

void gm_arch_load_free(gm_arch_load *load) {
    free(load->creations);
    free(load->hp.vals);
    free(load->hp.off);
    load->creations = NULL;
    load->n_creations = 0;
    load->hp.vals = NULL;
    load->hp.off = NULL;
}

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
 * Hand-written facts (the hparams a loader's layer numbering depends on,
 * where load_arch_hparams computes them) are in the "hparams" section,
 * each with its source line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "internal.h"

#define MAX_NAME 256
#define MAX_LAYERS 512 /* LLAMA_MAX_LAYERS, src/llama-hparams.h:11 */
#define STEP_LIMIT 50000000

/* ------------------------------------------------------------------------ */
/* Values                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct val {
    int64_t v;
    uint64_t known; /* bits of v that are known; ~0: all */
} val;

static const val UNKNOWN = {0, 0};
static val known(int64_t v) { return (val){v, ~0ull}; }
static bool is_known(val x) { return x.known == ~0ull; }

/* ------------------------------------------------------------------------ */
/* Interpreter state                                                         */
/* ------------------------------------------------------------------------ */

typedef struct probe {
    int64_t *items;
    int64_t n, cap;
} probe;

typedef struct vm {
    const ggufmap_model *model;
    const gm_arch_def *def;
    bool load_mtp;
    int32_t n_layer_all, n_layer_nextn;
    int32_t router_layer;         /* hparams.router_layer: -1 but in graniteswitch */
    const ggufmap_kv *swa;        /* <arch>.attention.sliding_window_pattern, or NULL */
    val *locals;                  /* the current frame */
    uint32_t n_locals;
    int64_t *handles;             /* [slot * (n_layer_all + 1) + layer + 1] */
    uint8_t *created;             /* per file tensor: times created (saturating) */
    int64_t n_created;            /* llama_model_loader::n_created */
    uint8_t *mark;                /* scratch, per file tensor */
    probe *dry;                   /* non-NULL while walking without effect */
    gm_arch_load *out;
    int64_t cap_creations;
    int64_t steps;
    ggufmap_error *err;
    int status;
} vm;

typedef enum flow { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE, FLOW_RETURN, FLOW_ERROR } flow;

static const char *where(const gm_arch_stmt *s, char *buf, size_t cap) {
    snprintf(buf, cap, "%s:%u", gm_arch_files[s->file], (unsigned)s->line);
    return buf;
}

/* Records the first error of the run (a later one would only repeat it). */
static flow fail(vm *m, int status, const char *fmt, ...) GM_PRINTF(3, 4);
static flow fail(vm *m, int status, const char *fmt, ...) {
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
/* hparams (hand-written: computed by load_arch_hparams, not by the file)    */
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

/* hparams.is_swa(il): the sliding_window_pattern array when the file has
 * one (gemma4.cpp:5 requires it); otherwise unknown. */
static val is_swa(const vm *m, val il) {
    int64_t v;
    if (!is_known(il) || !m->swa || il.v < 0 || ggufmap_kv_array_int(m->swa, (uint64_t)il.v, &v) != GGUFMAP_OK)
        return UNKNOWN;
    return known(v != 0);
}

/* An hparam load_arch_hparams reads with ml.get_key(KEY, hparams.F[, false]):
 * the key's value; when absent the field's initializer, or unknown for a
 * required key (llama.cpp refuses the file then). */
static val hparam_key(const vm *m, const gm_arch_expr *x) {
    bool found;
    int64_t v = key_int(m, gm_arch_strings[x->a], x->v, &found);
    if (found) return known(v);
    char key[160];
    snprintf(key, sizeof key, gm_arch_strings[x->a], m->def->name);
    if (ggufmap_model_find_kv(m->model, key)) return UNKNOWN; /* there, but not a number */
    return x->b ? UNKNOWN : known(x->v);
}

/* ------------------------------------------------------------------------ */
/* Expressions                                                               */
/* ------------------------------------------------------------------------ */

static val eval(vm *m, int32_t e);

static int64_t *handle_at(vm *m, int32_t slot, val layer) {
    if (!is_known(layer) || layer.v < -1 || layer.v >= m->n_layer_all) return NULL;
    return &m->handles[(int64_t)slot * (m->n_layer_all + 1) + layer.v + 1];
}

static val weight(vm *m, const gm_arch_expr *x) {
    int64_t args[2];
    int n = 0;
    for (int32_t i = 0, ops[2] = {x->b, x->c}; i < 2; i++) {
        if (ops[i] < 0) continue;
        val a = eval(m, ops[i]);
        if (!is_known(a)) return UNKNOWN;
        args[n++] = a.v;
    }
    char name[MAX_NAME];
    if (!format_name(name, sizeof name, gm_arch_strings[x->a], args, n)) return known(0);
    return known(ggufmap_model_find_tensor(m->model, name) >= 0);
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
    if (!is_known(a) || !is_known(b)) return UNKNOWN;
    int64_t x = a.v, y = b.v;
    switch (k) {
    case GM_AX_ADD: return known((int64_t)((uint64_t)x + (uint64_t)y));
    case GM_AX_SUB: return known((int64_t)((uint64_t)x - (uint64_t)y));
    case GM_AX_MUL: return known((int64_t)((uint64_t)x * (uint64_t)y));
    case GM_AX_DIV: return y == 0 || (x == INT64_MIN && y == -1) ? UNKNOWN : known(x / y);
    case GM_AX_MOD: return y == 0 || (x == INT64_MIN && y == -1) ? UNKNOWN : known(x % y);
    case GM_AX_SHL: return y < 0 || y > 62 ? UNKNOWN : known((int64_t)((uint64_t)x << y));
    case GM_AX_SHR: return y < 0 || y > 62 ? UNKNOWN : known(x >> y);
    case GM_AX_EQ: return known(x == y);
    case GM_AX_NE: return known(x != y);
    case GM_AX_LT: return known(x < y);
    case GM_AX_LE: return known(x <= y);
    case GM_AX_GT: return known(x > y);
    case GM_AX_GE: return known(x >= y);
    default: return UNKNOWN;
    }
}

/* && and ||: a known operand may decide alone. */
static val logical(vm *m, const gm_arch_expr *x) {
    bool is_and = x->kind == GM_AX_LAND;
    val a = eval(m, x->a);
    if (is_known(a) && (a.v != 0) != is_and) return known(!is_and);
    val b = eval(m, x->b);
    if (is_known(b) && (b.v != 0) != is_and) return known(!is_and);
    if (is_known(a) && is_known(b)) return known(is_and);
    return UNKNOWN;
}

static val conditional(vm *m, const gm_arch_expr *x) {
    val c = eval(m, x->a);
    if (is_known(c)) return eval(m, c.v ? x->b : x->c);
    val a = eval(m, x->b), b = eval(m, x->c);
    val r;
    r.known = a.known & b.known & ~((uint64_t)a.v ^ (uint64_t)b.v); /* the bits both arms agree on */
    r.v = (int64_t)((uint64_t)a.v & r.known);
    return r;
}

static val eval(vm *m, int32_t e) {
    if (e < 0) return UNKNOWN;
    const gm_arch_expr *x = &gm_arch_exprs[e];
    switch ((gm_ax_kind)x->kind) {
    case GM_AX_CONST: return known(x->v);
    case GM_AX_UNKNOWN: return UNKNOWN;
    case GM_AX_LOCAL: return m->locals[x->a];
    case GM_AX_NLAYER: return known(m->n_layer_all - m->n_layer_nextn);
    case GM_AX_NLAYER_ALL: return known(m->n_layer_all);
    case GM_AX_NLAYER_NEXTN: return known(m->n_layer_nextn);
    case GM_AX_LOAD_MTP: return known(m->load_mtp);
    case GM_AX_ARCH: return known(m->def->arch);
    case GM_AX_HANDLE: {
        int64_t *h = handle_at(m, x->a, eval(m, x->b));
        return h ? known(*h >= 0) : UNKNOWN;
    }
    case GM_AX_HTYPE: {
        int64_t *h = handle_at(m, x->a, eval(m, x->b));
        return h && *h >= 0 ? known(ggufmap_model_tensor(m->model, *h)->type) : UNKNOWN;
    }
    case GM_AX_WEIGHT: return weight(m, x);
    case GM_AX_IS_SWA: return is_swa(m, eval(m, x->a));
    case GM_AX_HPKEY: return hparam_key(m, x);
    case GM_AX_NOT: {
        val a = eval(m, x->a);
        return is_known(a) ? known(a.v == 0) : UNKNOWN;
    }
    case GM_AX_NEG: return arith(GM_AX_SUB, known(0), eval(m, x->a));
    case GM_AX_BNOT: {
        val a = eval(m, x->a);
        return (val){~a.v & (int64_t)a.known, a.known};
    }
    case GM_AX_BAND: case GM_AX_BOR: case GM_AX_BXOR:
        return bitwise((gm_ax_kind)x->kind, eval(m, x->a), eval(m, x->b));
    case GM_AX_LAND: case GM_AX_LOR: return logical(m, x);
    case GM_AX_COND: return conditional(m, x);
    default: return arith((gm_ax_kind)x->kind, eval(m, x->a), eval(m, x->b));
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
        val v = eval(m, e);
        if (!is_known(v)) {
            char w[256];
            if (!m->dry) fail(m, GGUFMAP_EFORMAT, "%s: the layer of '%s' depends on hparams the file does not give",
                              where(s, w, sizeof w), t->name);
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
    c->flags = eval(m, s->e);
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
        if (!list) return fail(m, GGUFMAP_ENOMEM, "out of memory");
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
        if (fresh && probe_add(m->dry, c.tensor)) return fail(m, GGUFMAP_ENOMEM, "out of memory");
        return FLOW_NEXT;
    }
    *handle = -1;
    if (c.bid != -1 && (c.bid < 0 || c.bid >= m->n_layer_all)) /* dev_layer.at(bid) throws */
        return fail(m, GGUFMAP_EFORMAT, "%s: tensor '%s' is in a layer beyond block_count", where(s, w, sizeof w),
                    c.name);
    if (c.tensor < 0) {
        if (flag(c.flags, gm_arch_tensor_not_required, true)) return FLOW_NEXT;
        return fail(m, GGUFMAP_EFORMAT, "missing tensor '%s' (%s)", c.name, where(s, w, sizeof w));
    }
    uint32_t id = (uint32_t)s->a == gm_arch_tensor_token_embd && dup ? gm_arch_tensor_output : (uint32_t)s->a;
    const gm_arch_tensor *info = &gm_arch_tensors[id];
    if (!info->has_info) return fail(m, GGUFMAP_EFORMAT, "missing tensor info mapping for %s (%s)", c.name,
                                     where(s, w, sizeof w));
    if (info->op == GM_OP_NONE || flag(c.flags, gm_arch_tensor_skip, false)) { /* "unused tensor": counted */
        count_created(m, c.tensor);
        return FLOW_NEXT;
    }
    bool io = info->layer == GM_LAYER_INPUT || info->layer == GM_LAYER_OUTPUT;
    if (io != (c.bid == -1)) /* GGML_ABORT, llama-model-loader.cpp:1201-1209 */
        return fail(m, GGUFMAP_EFORMAT, "tensor '%s' %s (llama.cpp aborts)", c.name,
                    io ? "is an input/output tensor used with a layer number" : "is a layer tensor without a layer");
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
    val c = eval(m, s->a);
    if (is_known(c)) return c.v ? run(m, at + 1, n_then) : run(m, at + 1 + n_then, n_else);
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
        val c = eval(m, s->a);
        if (is_known(c) && !c.v) break;
        if (!is_known(c) && (iter > limit || (!m->dry && !body_finds(m, at + 1, n_body)))) break;
        int64_t found_before = m->dry ? m->dry->n : 0;
        flow f = run(m, at + 1, n_body);
        if (!is_known(c) && m->dry && m->dry->n == found_before) break; /* dry: until nothing new */
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
    int64_t *dst = handle_at(m, s->a, eval(m, s->b));
    if (!dst) return FLOW_NEXT;
    int64_t *src = s->c >= 0 ? handle_at(m, s->c, eval(m, s->d)) : NULL;
    *dst = src ? *src : -1;
    return FLOW_NEXT;
}

static flow run_one(vm *m, uint32_t at) {
    const gm_arch_stmt *s = &gm_arch_stmts[at];
    if (++m->steps > STEP_LIMIT)
        return fail(m, GGUFMAP_EFORMAT, "the '%s' loader runs more than %d steps", m->def->name, STEP_LIMIT);
    switch ((gm_as_kind)s->kind) {
    case GM_AS_CREATE: {
        int64_t scratch, *h = s->f >= 0 ? handle_at(m, s->f, eval(m, s->g)) : NULL;
        return create(m, s, h ? h : &scratch);
    }
    case GM_AS_SET: m->locals[s->a] = eval(m, s->b); return FLOW_NEXT;
    case GM_AS_HSET: return run_hset(m, s);
    case GM_AS_IF: return run_if(m, s, at);
    case GM_AS_FOR: return run_for(m, s, at);
    case GM_AS_SCOPE: {
        flow f = run(m, at + 1, (uint32_t)s->a);
        return f == FLOW_RETURN ? FLOW_NEXT : f;
    }
    case GM_AS_FAIL: {
        char w[256];
        if (m->dry) return FLOW_RETURN; /* a path llama.cpp does not finish */
        return fail(m, GGUFMAP_EFORMAT, "llama.cpp's loader refuses the file at %s: %s", where(s, w, sizeof w),
                    gm_arch_strings[s->a][0] ? gm_arch_strings[s->a] : "(an exception)");
    }
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
    run(m, f->first, f->n_stmts);
    m->locals = NULL;
    free(locals);
    return m->status;
}

/* llama_model_loader::done_getting_tensors (llama-model-loader.cpp:1405-1420):
 * every file tensor created once.  The message names the first one not. */
static int check_counts(vm *m) {
    int64_t n = ggufmap_model_n_tensors(m->model);
    if (m->n_created == n) return GGUFMAP_OK;
    for (int64_t i = 0; i < n; i++) {
        if (m->created[i] == 1) continue;
        const ggufmap_tensor *t = ggufmap_model_tensor(m->model, i);
        return gm_fail(m->err, GGUFMAP_EFORMAT,
                       "tensor '%.*s' is %s by llama.cpp's '%s' loader (%s): it refuses the file (%s tensors; "
                       "expected %lld, got %lld)",
                       (int)t->name_len, t->name, m->created[i] ? "created twice" : "not used", m->def->name,
                       gm_arch_funcs[m->def->func].where, m->n_created > n ? "too many" : "wrong number of",
                       (long long)n, (long long)m->n_created);
    }
    return gm_fail(m->err, GGUFMAP_EFORMAT, "llama.cpp's '%s' loader creates %lld tensors, the file has %lld",
                   m->def->name, (long long)m->n_created, (long long)n);
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
    char key[160];
    snprintf(key, sizeof key, gm_arch_attention_sliding_window_pattern, m->def->name);
    m->swa = ggufmap_model_find_kv(m->model, key);
    return GGUFMAP_OK;
}

int gm_arch_load_model(const ggufmap_model *model, bool load_mtp, gm_arch_load *out, ggufmap_error *err) {
    memset(out, 0, sizeof *out);
    vm m = {.model = model, .load_mtp = load_mtp, .router_layer = -1, .out = out, .err = err};
    int rc = find_def(&m);
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
    out->def = m.def;
    out->n_layer_all = m.n_layer_all;
    out->n_layer_nextn = m.n_layer_nextn;
    free(m.handles);
    free(m.created);
    free(m.mark);
    if (rc) gm_arch_load_free(out);
    return rc;
}

void gm_arch_load_free(gm_arch_load *load) {
    free(load->creations);
    load->creations = NULL;
    load->n_creations = 0;
}

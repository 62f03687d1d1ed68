/*
 * plan_advice.c - next steps for a plan, each evaluated.
 *
 *   repack      when llama.cpp maps foreign bytes: a dry run of
 *               ggufmap_repack for the same placement gives the working set
 *               llama.cpp would have on the repacked copy;
 *   -ot         when a GPU span holds a foreign tensor: the GPU tensors on
 *               its smaller side (at most 8) sent to the CPU by name, so the
 *               span no longer reaches over it (kept only when it helps);
 *   --n-cpu-moe under a limit llama.cpp exceeds, on a model with experts:
 *               the fewest layers whose experts go to the CPU for llama.cpp
 *               to fit (bisection: more layers on the CPU never need more
 *               GPU memory), or --cpu-moe;
 *   -ngl        under such a limit: the most layers on the GPU that fit.
 * "Fit" is both verdicts: the GPU working set under --limit (with several
 * GPUs, each one's under its own) and, with
 * --mem, the weights the RAM holds under it (ggufmap_plan_resident); every
 * step is judged by placing and planning with it.
 *
 * Each evaluation places the model again with the user's -ot patterns in
 * front; they share the plan's ggufmap_regex_cache (placement opts), so a
 * pattern is searched once per tensor name for the whole command, not once
 * per evaluation (`.*.*.*.*.*x` on a 24-layer model: 23 s -> 4 s).
 */
#include <stdlib.h>
#include <string.h>

#include "plan_advice.h"

/* ------------------------------------------------------------------------ */
/* Evaluating flags                                                          */
/* ------------------------------------------------------------------------ */

typedef struct outcome {
    uint64_t working_set, cpu_side, resident;
    bool gpus_fit;                          /* each GPU's working set under its limit */
    uint32_t n_gpus;                        /* with several GPUs, each one's working set */
    uint64_t gpu_working_set[GGUFMAP_MAX_GPUS];
} outcome;

/* Both verdicts: the working set under --limit (each GPU's under its own),
 * the RAM's weights under --mem. */
static bool fits(const plan_advice_input *in, const outcome *o) {
    return o->gpus_fit && (!in->mem || o->resident <= in->mem);
}

/* Whether any limit applies to the working set. */
static bool limited(const plan_advice_input *in) {
    bool any = in->limit != 0;
    for (uint32_t g = 0; in->gpu_limits && g < GGUFMAP_MAX_GPUS; g++) any |= in->gpu_limits[g] != 0;
    return any;
}

/* The outcome of a plan: its working sets and verdict. */
static void measure(const plan_advice_input *in, const ggufmap_plan *plan, outcome *out) {
    uint64_t planned;
    const uint32_t n = ggufmap_placement_n_gpus(ggufmap_plan_placement(plan));
    ggufmap_plan_working_set(plan, &out->working_set, &planned);
    ggufmap_plan_cpu_side(plan, &out->cpu_side, &planned);
    ggufmap_plan_resident(plan, &out->resident, &planned);
    out->gpus_fit = ggufmap_plan_fits_limits(plan, NULL, in->limit, in->gpu_limits, false);
    out->n_gpus = n > 1 ? n : 0;
    for (uint32_t g = 0; g < out->n_gpus; g++) ggufmap_plan_gpu_working_set(plan, g, &out->gpu_working_set[g], &planned);
}

/* An outcome's numbers into a suggestion. */
static void suggest(ggufmap_suggestion *s, const outcome *o) {
    s->working_set = o->working_set;
    s->cpu_side = o->cpu_side;
    s->resident = o->resident;
    s->n_gpus = o->n_gpus;
    memcpy(s->gpu_working_set, o->gpu_working_set, sizeof s->gpu_working_set);
}

/* The placement given, less the flags whose code is in skip, plus one flag
 * (code 0: none), placed and planned. */
static int evaluate(const plan_advice_input *in, const int *skip, size_t n_skip, int code, const char *value,
                    outcome *out) {
    placement_args *a = malloc(sizeof *a);
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_error err;
    bool handled;
    int rc = !a || placement_args_init(a) ? -1 : 0;
    for (unsigned i = 0; rc == 0 && i < in->placement->n_given; i++) {
        const placement_flag *f = &in->placement->given[i];
        bool skipped = false;
        for (size_t k = 0; k < n_skip; k++) skipped |= skip[k] == f->code;
        if (!skipped) rc = placement_args_apply(a, f->code, f->value, "plan", &handled);
    }
    if (rc == 0 && code) rc = placement_args_apply(a, code, value, "plan", &handled);
    if (rc == 0) {
        a->cpu_given = in->placement->cpu_given;
        placement_args_finish(a);
        a->opts.regex_cache = in->placement->opts.regex_cache; /* each pattern searched once per name */
        rc = ggufmap_placement_build(in->model, &a->opts, &pl, &err) || ggufmap_plan_build(pl, in->plan_opts, &plan, &err);
    }
    if (rc == 0) measure(in, plan, out);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    if (a) placement_args_free(a);
    free(a);
    return rc;
}

/* "ggufmap plan MODEL <flags> EXTRA --limit L" into s->command. */
static void plan_command(const plan_advice_input *in, const int *skip, size_t n_skip, const char *extra,
                         ggufmap_suggestion *s) {
    char flags[1536], model[1024];
    placement_args_spell(in->placement, skip, n_skip, flags, sizeof flags);
    snprintf(s->command, sizeof s->command, "ggufmap plan %s%s %s%s%s%s%s",
             shell_quote(in->model_path, model, sizeof model), flags, extra, in->limit_text ? " --limit " : "",
             in->limit_text ? in->limit_text : "", in->mem_text ? " --mem " : "", in->mem_text ? in->mem_text : "");
}

/* ------------------------------------------------------------------------ */
/* The steps                                                                 */
/* ------------------------------------------------------------------------ */

/* OUT for a repack of path: the shard suffix or .gguf off, "-repacked.gguf" on. */
static void repacked_name(const char *path, char *buf, size_t cap) {
    size_t len = strlen(path), prefix;
    uint32_t index, count;
    if (ggufmap_split_parse(path, &prefix, &index, &count)) len = prefix;
    else if (len > 5 && strcmp(path + len - 5, ".gguf") == 0) len -= 5;
    snprintf(buf, cap, "%.*s-repacked.gguf", (int)len, path);
}

/* A repack rewrites every data byte; it is worth proposing when it saves at
 * least 1/REPACK_MIN_GAIN_PER of what it rewrites (GPU working set + CPU
 * side, page-aligned, before minus after), or when it turns the verdict
 * from "does not fit" into "fits" (docs/cli.md "Plan's next steps"). */
enum { REPACK_MIN_GAIN_PER = 100 };

static bool repack_worth_it(const plan_advice_input *in, const ggufmap_repack_case *c, uint64_t rewritten) {
    const uint64_t before = c->gpu_before + c->cpu_before, after = c->gpu_after + c->cpu_after;
    if (after >= before) return false;
    if (before - after >= rewritten / REPACK_MIN_GAIN_PER) return true;
    /* a small gain still counts when it is the one that makes the run fit (one GPU, or none) */
    const ggufmap_placement *pl = ggufmap_plan_placement(in->plan);
    if (ggufmap_placement_n_gpus(pl) > 1) return false;
    uint64_t limit = in->limit, now, planned;
    const uint32_t ordinal = ggufmap_placement_n_gpus(pl) ? ggufmap_placement_gpu(pl, 0) : 0;
    limit = ggufmap_gpu_limit(limit, in->gpu_limits, ordinal);
    ggufmap_plan_resident(in->plan, &now, &planned);
    const outcome was = {.resident = now, .gpus_fit = !limit || c->gpu_before <= limit};
    const outcome then = {.resident = planned, .gpus_fit = !limit || c->gpu_after <= limit};
    return !fits(in, &was) && fits(in, &then);
}

static bool advise_repack(const plan_advice_input *in, ggufmap_suggestion *s) {
    ggufmap_repack_opts ro;
    ggufmap_repack_result *res = NULL;
    ggufmap_error err;
    ggufmap_repack_opts_init(&ro);
    ro.placement = &in->placement->opts;
    ro.plan = *in->plan_opts;
    ro.dry_run = true;
    if (ggufmap_repack(in->model_path, NULL, &ro, &res, &err) != GGUFMAP_OK || res->n_cases != 1 || res->no_gain ||
        !repack_worth_it(in, &res->cases[0], res->data_bytes + res->hole_bytes)) {
        ggufmap_repack_result_free(res);
        return false;
    }
    char flags[1536], model[1024], out[1100], quoted[1100], space[32], page[48] = "";
    placement_args_spell(in->placement, NULL, 0, flags, sizeof flags);
    repacked_name(in->model_path, out, sizeof out);
    if (in->planning->page_given) snprintf(page, sizeof page, " --page %s", in->planning->page_text);
    snprintf(s->command, sizeof s->command, "ggufmap repack %s%s%s%s -o %s",
             shell_quote(in->model_path, model, sizeof model), in->placement->any ? "" : " --device cpu", flags, page,
             shell_quote(out, quoted, sizeof quoted));
    snprintf(s->what, sizeof s->what,
             "repack: a lossless copy in which llama.cpp maps nothing foreign for this placement (needs %s free)",
             ggufmap_format_bytes(space, sizeof space, res->space_needed));
    s->working_set = res->cases[0].gpu_after;
    s->cpu_side = res->cases[0].cpu_after;
    uint64_t now, planned;
    ggufmap_plan_resident(in->plan, &now, &s->resident); /* the repacked file maps the planned ranges */
    /* several GPUs are discrete ones (CUDA, ROCm): their weights are copied, the repack leaves them as they are */
    const uint32_t n_gpus = ggufmap_placement_n_gpus(ggufmap_plan_placement(in->plan));
    s->n_gpus = n_gpus > 1 ? n_gpus : 0;
    for (uint32_t g = 0; g < s->n_gpus; g++) ggufmap_plan_gpu_working_set(in->plan, g, &s->gpu_working_set[g], &planned);
    ggufmap_repack_result_free(res);
    return true;
}

/* The flag value in [lo, hi] that fits the limit, by bisection over a
 * working set that only grows with the value (more -ngl layers) or only
 * shrinks (more --n-cpu-moe layers): the largest that fits when it grows,
 * the smallest when it shrinks.  Returns it, or -1 when none fits. */
static int32_t bisect(const plan_advice_input *in, const int *skip, size_t n_skip, int code, int32_t lo, int32_t hi,
                      bool grows, outcome *best) {
    int32_t found = -1;
    char value[16];
    outcome mid;
    while (lo <= hi) {
        int32_t n = lo + (hi - lo) / 2;
        snprintf(value, sizeof value, "%d", n);
        if (evaluate(in, skip, n_skip, code, value, &mid)) return -1;
        bool ok = fits(in, &mid);
        if (ok) {
            found = n;
            *best = mid;
        }
        if (ok == grows) lo = n + 1;
        else hi = n - 1;
    }
    return found;
}

static bool advise_cpu_moe(const plan_advice_input *in, int32_t n_layers, ggufmap_suggestion *s) {
    static const int skip[] = {OPT_N_CPU_MOE, OPT_CPU_MOE};
    outcome none, all;
    if (evaluate(in, skip, 2, 0, NULL, &none) || evaluate(in, skip, 2, OPT_CPU_MOE, NULL, &all)) return false;
    if (all.working_set >= none.working_set || !fits(in, &all)) return false; /* no experts, or no help */
    outcome best = all;
    int32_t found = bisect(in, skip, 2, OPT_N_CPU_MOE, 1, n_layers, false, &best);
    char extra[32];
    if (found > 0) {
        snprintf(s->what, sizeof s->what,
                 "keep the file; run llama.cpp with --n-cpu-moe %d (the experts of layers 0..%d on the CPU)", found,
                 found - 1);
        snprintf(extra, sizeof extra, "--n-cpu-moe %d", found);
    } else {
        snprintf(s->what, sizeof s->what, "keep the file; run llama.cpp with --cpu-moe (every expert on the CPU)");
        snprintf(extra, sizeof extra, "--cpu-moe");
    }
    plan_command(in, skip, 2, extra, s);
    suggest(s, &best);
    return true;
}

static bool advise_ngl(const plan_advice_input *in, int32_t n_layers, ggufmap_suggestion *s) {
    static const int skip[] = {OPT_NGL};
    outcome best = {0};
    /* -ngl n_layers + 1 is all: that is the plan at hand */
    int32_t found = bisect(in, skip, 1, OPT_NGL, 1, n_layers, true, &best);
    if (found < 0) return false;
    snprintf(s->what, sizeof s->what, "keep the file; run llama.cpp with -ngl %d (%d of %d layers on the GPU)", found,
             found, n_layers + 1);
    char extra[32];
    snprintf(extra, sizeof extra, "-ngl %d", found);
    plan_command(in, skip, 1, extra, s);
    suggest(s, &best);
    return true;
}

/* A tensor name as a regex that matches it alone (ECMAScript escapes). */
static size_t escape_name(const ggufmap_tensor *t, char *buf, size_t cap) {
    size_t o = 0;
    for (uint32_t k = 0; k < t->name_len && o + 3 < cap; k++) {
        if (strchr(".^$|?*+()[]{}\\/", t->name[k])) buf[o++] = '\\';
        buf[o++] = t->name[k];
    }
    buf[o] = '\0';
    return o;
}

/* The GPU buffer with the most foreign bytes, or NULL. */
static const ggufmap_buffer *worst_gpu_buffer(const ggufmap_plan *plan) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    const ggufmap_buffer *worst = NULL;
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (b->mapped && b->n_foreign && ggufmap_placement_context(pl, b->context)->gpu &&
            (!worst || b->foreign_bytes > worst->foreign_bytes))
            worst = b;
    }
    return worst;
}

/* "^(a|b)$=CPU" for the buffer's own tensors on the smaller side of its
 * largest foreign tensor; returns how many, 0 when none fit the rules. */
static int short_side(const plan_advice_input *in, const ggufmap_buffer *b, char *ot, size_t cap, uint64_t *bytes) {
    const ggufmap_tensor *f = ggufmap_model_tensor(in->model, b->foreign[0].tensor);
    uint64_t side_bytes[2] = {0, 0};
    int count[2] = {0, 0};
    for (int pass = 0; pass < 2; pass++) {
        int side = -1;
        if (pass == 1) side = side_bytes[0] && (side_bytes[0] <= side_bytes[1] || !side_bytes[1]) ? 0 : 1;
        if (pass == 1 && (count[side] == 0 || count[side] > 8)) return 0;
        size_t o = pass ? (size_t)snprintf(ot, cap, "^(") : 0;
        for (int64_t i = 0; i < ggufmap_model_n_tensors(in->model); i++) {
            const ggufmap_tensor *t = ggufmap_model_tensor(in->model, i);
            if (t->shard != b->shard || !(ggufmap_plan_tensor_contexts(in->plan, i) & (1u << b->context))) continue;
            int at = t->offset + t->size <= f->offset ? 0 : t->offset >= f->offset + f->size ? 1 : -1;
            if (at < 0) continue;
            if (!pass) {
                side_bytes[at] += t->size;
                count[at]++;
            } else if (at == side && o + GGUFMAP_MAX_NAME * 2 + 8 < cap) {
                if (ot[o - 1] != '(') ot[o++] = '|';
                o += escape_name(t, ot + o, cap - o);
            }
        }
        if (pass) {
            snprintf(ot + o, cap - o, ")$=CPU");
            *bytes = side_bytes[side];
            return count[side];
        }
    }
    return 0;
}

static bool advise_override(const plan_advice_input *in, uint64_t llama, ggufmap_suggestion *s) {
    const ggufmap_buffer *b = worst_gpu_buffer(in->plan);
    char ot[1024], quoted[1100], extra[1200], size[32], name[72];
    uint64_t bytes = 0;
    outcome moved;
    int n = b ? short_side(in, b, ot, sizeof ot, &bytes) : 0;
    if (n == 0 || evaluate(in, NULL, 0, OPT_OT, ot, &moved) || moved.working_set >= llama) return false;
    const ggufmap_tensor *f = ggufmap_model_tensor(in->model, b->foreign[0].tensor);
    ggufmap_escape(name, sizeof name, f->name, f->name_len);
    snprintf(s->what, sizeof s->what,
             "keep the file; send %d GPU tensor%s (%s) to the CPU with -ot, so that %s's span no longer covers %s", n,
             n == 1 ? "" : "s", ggufmap_format_bytes(size, sizeof size, bytes), b->name, name);
    snprintf(extra, sizeof extra, "-ot %s", shell_quote(ot, quoted, sizeof quoted));
    plan_command(in, NULL, 0, extra, s);
    suggest(s, &moved);
    return true;
}

uint32_t plan_advice(const plan_advice_input *in, ggufmap_suggestion *out) {
    uint32_t n = 0;
    uint64_t llama, planned, foreign = 0;
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(in->plan); i++) foreign += ggufmap_plan_buffer(in->plan, i)->foreign_bytes;
    ggufmap_plan_working_set(in->plan, &llama, &planned);
    memset(out, 0, PLAN_ADVICE_MAX * sizeof *out);
    if (foreign && advise_repack(in, &out[n])) n++;
    if (foreign && advise_override(in, llama, &out[n])) n++;
    bool gpu = in->placement->opts.device != GGUFMAP_DEVICE_CPU;
    outcome now;
    measure(in, in->plan, &now);
    if ((!limited(in) && !in->mem) || fits(in, &now) || !gpu) return n;
    int32_t n_layers = ggufmap_placement_n_layers(ggufmap_plan_placement(in->plan));
    if (advise_cpu_moe(in, n_layers, &out[n])) n++;
    if (advise_ngl(in, n_layers, &out[n])) n++;
    return n;
}

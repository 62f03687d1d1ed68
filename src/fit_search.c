/*
 * fit_search.c - the largest context that fits, the ways to make a run fit,
 * and macOS's default GPU working-set limit.
 *
 * Every search evaluates whole fits (the same code as one `ggufmap fit`),
 * never a formula of its own, and relies only on monotony: the limited
 * device's total never shrinks when -c grows, never grows when more experts
 * or layers stay on the CPU.  Bisection then finds the boundary in
 * log2(range) fits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fit_internal.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* The largest -c                                                            */
/* ------------------------------------------------------------------------ */

/* What a run comes to: whether every check passes, the limited device's
 * total and the RAM check's (UINT64_MAX when llama.cpp refuses). */
typedef struct verdict {
    bool fits;
    uint64_t total, resident;
    uint32_t n_gpus;
    uint64_t gpu_total[GGUFMAP_MAX_GPUS]; /* every GPU's total (UINT64_MAX when refused) */
} verdict;

/* Whether opts has a limit for some GPU or the host. */
static bool limited(const ggufmap_fit_opts *o) {
    bool any = o->limit || o->mem;
    for (uint32_t g = 0; g < GGUFMAP_MAX_GPUS; g++) any |= o->gpu_limits[g] != 0;
    return any;
}

static int judge(const ggufmap_plan *plan, const ggufmap_fit_opts *opts, bool planned, verdict *v,
                 uint32_t *n_ctx_train, ggufmap_error *err) {
    ggufmap_fit *fit;
    int rc = ggufmap_fit_build(plan, opts, &fit, err);
    if (rc != GGUFMAP_OK) return rc;
    const bool refused = ggufmap_fit_refusal(fit, NULL) != NULL;
    const ggufmap_fit_device *d = ggufmap_fit_device_at(fit, ggufmap_fit_limited_device(fit));
    v->fits = ggufmap_fit_fits(fit, planned);
    v->total = refused ? UINT64_MAX : planned ? d->total_planned : d->total;
    v->resident = 0;
    v->n_gpus = 0;
    for (uint32_t i = 1; i < ggufmap_fit_n_devices(fit) && v->n_gpus < GGUFMAP_MAX_GPUS; i++) {
        const ggufmap_fit_device *g = ggufmap_fit_device_at(fit, i);
        v->gpu_total[v->n_gpus++] = refused ? UINT64_MAX : planned ? g->total_planned : g->total;
    }
    for (uint32_t i = 0; i < ggufmap_fit_n_checks(fit); i++) {
        const ggufmap_fit_check *c = ggufmap_fit_check_at(fit, i);
        if (c->device < 0) v->resident = refused ? UINT64_MAX : planned ? c->total_planned : c->total;
    }
    if (n_ctx_train) *n_ctx_train = fit->hp->n_ctx_train;
    ggufmap_fit_free(fit);
    return GGUFMAP_OK;
}

int ggufmap_fit_max_ctx(const ggufmap_plan *plan, const ggufmap_fit_opts *opts, bool planned, uint32_t *n_ctx,
                        ggufmap_error *err) {
    ggufmap_fit_opts o = *opts;
    verdict v;
    uint32_t train = 0;
    *n_ctx = 0;
    o.n_ctx = 256;
    int rc = judge(plan, &o, planned, &v, &train, err);
    if (rc != GGUFMAP_OK || !v.fits) return rc;
    /* the ceiling: the -c asked for, else the trained context (-c 0) */
    const uint32_t ceiling = opts->n_ctx ? opts->n_ctx : train;
    uint32_t lo = 1, hi = ceiling / 256 > 1 ? ceiling / 256 : 1; /* in units of 256: lo fits */
    o.n_ctx = hi * 256;
    if ((rc = judge(plan, &o, planned, &v, NULL, err)) != GGUFMAP_OK) return rc;
    if (v.fits) lo = hi;
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        o.n_ctx = mid * 256;
        if ((rc = judge(plan, &o, planned, &v, NULL, err)) != GGUFMAP_OK) return rc;
        if (v.fits) lo = mid;
        else hi = mid;
    }
    *n_ctx = lo * 256;
    return GGUFMAP_OK;
}

/* ------------------------------------------------------------------------ */
/* Suggestions                                                               */
/* ------------------------------------------------------------------------ */

typedef struct trial {
    const ggufmap_model *model;
    const ggufmap_placement_opts *placement;
    const ggufmap_plan_opts *plan_opts;
    ggufmap_fit_opts fit_opts;
    bool planned;                /* count the plan's weights (after repack) */
    const float *ts;             /* -ts shares to try instead of the placement's (NULL: its own) */
} trial;

/* The run with --n-cpu-moe n_cpu_moe (0: none) and -ngl ngl added to the
 * placement, judged. */
static int try_placement(const trial *t, int n_cpu_moe, int ngl, verdict *v, ggufmap_error *err) {
    ggufmap_placement_opts po = *t->placement;
    ggufmap_override *ovr = NULL;
    char *pool = NULL;
    int rc = GGUFMAP_OK;
    if (n_cpu_moe > 0) {
        const size_t cap = (size_t)n_cpu_moe * 64 + 64;
        pool = malloc(cap);
        ovr = calloc(po.n_overrides + (size_t)n_cpu_moe, sizeof *ovr);
        int n = 0;
        if (!pool || !ovr || ggufmap_cpu_moe_patterns(n_cpu_moe, pool, cap, &n) != GGUFMAP_OK)
            rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
        for (uint32_t i = 0; rc == GGUFMAP_OK && i < po.n_overrides; i++) ovr[i] = po.overrides[i];
        for (int i = 0, off = 0; rc == GGUFMAP_OK && i < n; i++) {
            ovr[po.n_overrides + (uint32_t)i] = (ggufmap_override){ pool + off, gm_cpu_buft_name() };
            off += (int)strlen(pool + off) + 1;
        }
        po.overrides = ovr;
        po.n_overrides += (uint32_t)(n > 0 ? n : 0);
    }
    po.n_gpu_layers = ngl;
    if (t->ts) memcpy(po.tensor_split, t->ts, sizeof po.tensor_split);
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    if (rc == GGUFMAP_OK) rc = ggufmap_placement_build(t->model, &po, &pl, err);
    if (rc == GGUFMAP_OK) rc = ggufmap_plan_build(pl, t->plan_opts, &plan, err);
    if (rc == GGUFMAP_OK) rc = judge(plan, &t->fit_opts, t->planned, v, NULL, err);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
    free(ovr);
    free(pool);
    return rc;
}

static void add_suggestion(ggufmap_fit_suggestion *out, uint32_t cap, uint32_t *n, const char *flags,
                           const verdict *v) {
    if (*n >= cap) return;
    ggufmap_fit_suggestion *s = &out[(*n)++];
    snprintf(s->flags, sizeof s->flags, "%s", flags);
    s->total = v->total;
    s->resident = v->resident;
    s->fits = v->fits;
    s->n_gpus = v->n_gpus;
    memcpy(s->gpu_total, v->gpu_total, sizeof s->gpu_total);
}

/* The fewest experts (--n-cpu-moe) or the most layers (-ngl) that pass
 * every check: bisection over the count (the GPU's total only shrinks as
 * experts or layers leave it; the RAM's barely moves, and the answer is a
 * fit built at that count, so it is offered only when it passes). */
static int suggest_offload(trial *t, uint32_t n_layers, bool moe, ggufmap_fit_suggestion *out, uint32_t cap,
                           uint32_t *n, ggufmap_error *err) {
    const int ngl_now = t->placement->n_gpu_layers < 0 ? (int)n_layers + 1 : t->placement->n_gpu_layers;
    int lo = moe ? 0 : -1, hi = moe ? (int)n_layers : ngl_now; /* moe: count that fits is hi; ngl: lo fits */
    verdict v, best = { false, UINT64_MAX, UINT64_MAX, 0, {0} };
    int rc = GGUFMAP_OK;
    if (moe) {
        if ((rc = try_placement(t, (int)n_layers, ngl_now, &best, err)) != GGUFMAP_OK) return rc;
        if (!best.fits) return GGUFMAP_OK;
        while (hi - lo > 1) {
            const int mid = lo + (hi - lo) / 2;
            if ((rc = try_placement(t, mid, ngl_now, &v, err)) != GGUFMAP_OK) return rc;
            if (v.fits) hi = mid, best = v;
            else lo = mid;
        }
    } else {
        while (hi - lo > 1) {
            const int mid = lo + (hi - lo) / 2;
            if ((rc = try_placement(t, 0, mid, &v, err)) != GGUFMAP_OK) return rc;
            if (v.fits) lo = mid, best = v;
            else hi = mid;
        }
        if (lo < 0) return GGUFMAP_OK;
    }
    char flags[96];
    snprintf(flags, sizeof flags, moe ? "--n-cpu-moe %d" : "-ngl %d", moe ? hi : lo);
    add_suggestion(out, cap, n, flags, &best);
    return GGUFMAP_OK;
}

/* Several GPUs under -sm layer where one exceeds its limit and another has
 * room: the -ts that moves layers to where the room is.  Shares start at
 * the run's, each is scaled by its GPU's limit over its total and rounded
 * to whole percents, and each step is a fit built with them; offered only
 * when one passes every check (at most 8 fits). */
static int suggest_split(trial *t, const verdict *now, ggufmap_fit_suggestion *out, uint32_t cap, uint32_t *n,
                         bool *found, ggufmap_error *err) {
    const ggufmap_placement_opts *po = t->placement;
    const uint32_t n_gpus = po->n_gpus;
    uint64_t lim[GGUFMAP_MAX_GPUS], sum_total = 0, sum_limit = 0;
    double share[GGUFMAP_MAX_GPUS];
    *found = false;
    if (n_gpus < 2 || po->split_mode != GGUFMAP_SPLIT_LAYER || now->n_gpus < n_gpus || now->total == UINT64_MAX)
        return GGUFMAP_OK;
    for (uint32_t i = 0; i < n_gpus; i++) {
        const uint32_t ord = po->gpus[i];
        lim[i] = ggufmap_gpu_limit(t->fit_opts.limit, t->fit_opts.gpu_limits, ord);
        if (!lim[i]) return GGUFMAP_OK; /* a GPU without a limit: no room to aim at */
        share[i] = gm_device_split_share(po, i);
        sum_total += now->gpu_total[i];
        sum_limit += lim[i];
    }
    if (sum_total > sum_limit) return GGUFMAP_OK; /* no split holds it all */
    verdict v = *now;
    float ts[GGUFMAP_MAX_GPUS] = {0}, last[GGUFMAP_MAX_GPUS] = {0};
    for (int step = 0; step < 8; step++) {
        double sum = 0;
        for (uint32_t i = 0; i < n_gpus; i++) {
            double r = v.gpu_total[i] ? (double)lim[i] / (double)v.gpu_total[i] : 4.0;
            share[i] *= r < 0.25 ? 0.25 : r > 4.0 ? 4.0 : r;
            sum += share[i];
        }
        for (uint32_t i = 0; i < n_gpus; i++) ts[i] = (float)(int)(share[i] / sum * 100.0 + 0.5);
        if (memcmp(ts, last, sizeof ts) == 0) break;
        memcpy(last, ts, sizeof last);
        t->ts = ts;
        int rc = try_placement(t, 0, po->n_gpu_layers, &v, err);
        t->ts = NULL;
        if (rc != GGUFMAP_OK) return rc;
        if (v.total == UINT64_MAX) break;
        if (v.fits) {
            char flags[96] = "-ts ";
            for (uint32_t i = 0; i < n_gpus; i++)
                snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s%d", i ? "," : "", (int)ts[i]);
            add_suggestion(out, cap, n, flags, &v);
            *found = true;
            return GGUFMAP_OK;
        }
    }
    return GGUFMAP_OK;
}

/* q8_0 K and V need flash attention; worth it only over wider types. */
static bool q8_cache_helps(const ggufmap_fit_opts *o) {
    return o->type_k != 8 || o->type_v != 8 || o->flash_attn != GGUFMAP_FA_ON;
}

/* Whether b is smaller than a on the checks that fail (the GPU's or the RAM's). */
static bool saves(const verdict *a, const verdict *b) {
    bool less = b->total < a->total || b->resident < a->resident;
    for (uint32_t i = 0; i < a->n_gpus && i < b->n_gpus; i++) less |= b->gpu_total[i] < a->gpu_total[i];
    return less;
}

int ggufmap_fit_suggest(const ggufmap_model *model, const ggufmap_placement_opts *placement,
                        const ggufmap_plan_opts *plan_opts, const ggufmap_fit_opts *opts,
                        ggufmap_fit_suggestion *out, uint32_t cap, uint32_t *n, ggufmap_error *err) {
    trial t = { model, placement, plan_opts, *opts, false, NULL };
    verdict now, repacked;
    *n = 0;
    int rc = try_placement(&t, 0, placement->n_gpu_layers, &now, err);
    t.planned = true;
    if (rc == GGUFMAP_OK) rc = try_placement(&t, 0, placement->n_gpu_layers, &repacked, err);
    if (rc != GGUFMAP_OK || !limited(opts) || now.fits) return rc;
    if (saves(&now, &repacked)) add_suggestion(out, cap, n, "repack", &repacked);
    if (repacked.fits) return GGUFMAP_OK;
    bool split_fits;
    if ((rc = suggest_split(&t, &repacked, out, cap, n, &split_fits, err)) != GGUFMAP_OK || split_fits) return rc;
    if (q8_cache_helps(opts)) {
        verdict q8;
        t.fit_opts.type_k = t.fit_opts.type_v = 8; /* q8_0 */
        t.fit_opts.flash_attn = GGUFMAP_FA_ON;
        if ((rc = try_placement(&t, 0, placement->n_gpu_layers, &q8, err)) != GGUFMAP_OK) return rc;
        if (saves(&repacked, &q8)) add_suggestion(out, cap, n, "-ctk q8_0 -ctv q8_0 -fa on", &q8);
        else t.fit_opts = *opts;
        if (q8.fits) return GGUFMAP_OK;
    }
    if (placement->device == GGUFMAP_DEVICE_CPU) return GGUFMAP_OK;
    gm_hparams *hp = malloc(sizeof *hp);
    if (!hp) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    rc = gm_hparams_read(model, hp, err);
    const uint32_t n_before = *n;
    if (rc == GGUFMAP_OK && hp->n_expert > 0) rc = suggest_offload(&t, hp->n_layer_all, true, out, cap, n, err);
    /* -ngl only when no --n-cpu-moe fits: the two are alternatives, and experts are cheaper to move */
    if (rc == GGUFMAP_OK && *n == n_before) rc = suggest_offload(&t, hp->n_layer_all, false, out, cap, n, err);
    free(hp);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* macOS's default limit                                                     */
/* ------------------------------------------------------------------------ */

uint64_t ggufmap_metal_default_limit(uint64_t ram) {
    const uint64_t gib = 1ull << 30;
    return ram <= 32 * gib ? ram / 3 * 2 : ram / 4 * 3;
}

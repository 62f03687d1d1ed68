/*
 * fit_report.c - a fit for people and for scripts ("ggufmap.fit/1").
 *
 * Text: the options and the context llama.cpp makes of them, one row per
 * buffer in llama.cpp's order, one row per device, the verdict under the
 * limit (llama.cpp's mapping today, and the plan's after repack), the
 * largest context that fits and the suggestions.  JSON carries the same,
 * every size in bytes.
 */
#include <string.h>

#include "fit_internal.h"
#include "ggufmap/types.h"
#include "internal.h"
#include "json.h"

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static const char *model_path(const ggufmap_fit *fit) {
    const ggufmap_model *m = ggufmap_placement_model(ggufmap_plan_placement(fit->run.plan));
    return ggufmap_source_path(ggufmap_model_shard(m, 0));
}

static const char *fa_name(ggufmap_flash_attn fa) {
    return fa == GGUFMAP_FA_ON ? "on" : fa == GGUFMAP_FA_OFF ? "off" : "auto";
}

static const char *type_name(int32_t t) {
    const ggufmap_type_info *i = ggufmap_type(t);
    return i ? i->name : "?";
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */
/* ------------------------------------------------------------------------ */

static void text_sizes(FILE *out, const char *label, const ggufmap_fit_context *s) {
    fprintf(out, "%s: n_ctx %u = %u cells x %u stream%s, n_batch %u, n_ubatch %u, n_seq_max %u, flash attention %s",
            label, s->n_ctx, s->kv_size, s->n_stream, s->n_stream == 1 ? "" : "s", s->n_batch, s->n_ubatch,
            s->n_seq_max, s->flash_attn ? "on" : "off");
    if (s->kv_size_swa) fprintf(out, ", SWA cache %u cells", s->kv_size_swa);
    fputs("\n", out);
}

static void text_header(FILE *out, const ggufmap_fit *fit) {
    const ggufmap_fit_opts *o = &fit->opts;
    const ggufmap_placement *pl = ggufmap_plan_placement(fit->run.plan);
    const ggufmap_placement_opts *po = ggufmap_placement_options(pl);
    char ngl[16] = "all"; /* llama.cpp's -ngl -1 */
    if (po->n_gpu_layers >= 0) snprintf(ngl, sizeof ngl, "%d", po->n_gpu_layers);
    fprintf(out, "%s: %s, %u layers, device %s, -ngl %s\n", base_name(model_path(fit)), fit->hp->arch_name,
            fit->hp->n_layer_all, ggufmap_device_name(po->device), ngl);
    fprintf(out, "options: -c %u -np %u -b %u -ub %u -ctk %s -ctv %s -fa %s%s%s%s%s%s\n", o->n_ctx, o->n_seq_max,
            o->n_batch, o->n_ubatch, type_name(o->type_k), type_name(o->type_v), fa_name(o->flash_attn),
            o->swa_full ? " --swa-full" : "", o->kv_unified ? " --kv-unified" : "", o->no_kv_offload ? " -nkvo" : "",
            o->embeddings ? " --embedding" : "", o->mtp ? " --mtp" : "");
    if (fit->ctx[GM_CTX_MAIN].refusal[0]) {
        fprintf(out, "llama.cpp v0.5.0 %s: %s\n", fit->ctx[GM_CTX_MAIN].aborts ? "aborts creating this context" : "refuses this context",
                fit->ctx[GM_CTX_MAIN].refusal);
        return;
    }
    text_sizes(out, "context", &fit->ctx[GM_CTX_MAIN].cp.sizes);
    bool aborts;
    const char *why = ggufmap_fit_mtp_refusal(fit, &aborts);
    if (why)
        fprintf(out, "llama.cpp v0.5.0 %s the MTP draft context (--spec-type draft-mtp): %s\n",
                aborts ? "aborts creating" : "refuses", why);
    else if (ggufmap_fit_mtp_sizes(fit))
        text_sizes(out, "MTP draft context (f16 caches)", ggufmap_fit_mtp_sizes(fit));
}

/* The column headed "llama.cpp" is llama.cpp's own log figure (docs/cli.md
 * "Units"): %.2f of bytes/1024/1024 in MiB, as its "buffer size =" lines
 * print it; "resident" is what the buffer holds when that differs (mapped
 * weights in whole pages); every other size picks its unit. */
static void text_buffers(FILE *out, const ggufmap_fit *fit) {
    char a[32], b[32], c[32];
    fprintf(out, "\nbuffers, in llama.cpp's order:\n  %-8s %-6s %-12s %15s %12s %13s  %s\n", "kind", "device", "buffer",
            "llama.cpp", "resident", "planned / max", "what");
    for (uint32_t i = 0; i < fit->buffers.n; i++) {
        const ggufmap_fit_buffer *x = &fit->buffers.v[i];
        const uint64_t second = x->kind == GGUFMAP_FIT_WEIGHTS ? x->planned : x->bytes_max;
        fprintf(out, "  %-8s %-6s %-12s %15s %12s %13s  %s%s%s\n", ggufmap_fit_kind_name(x->kind),
                fit->run.devices[x->device].name, x->buft, gm_fmt_mib(a, sizeof a, x->logged),
                x->bytes != x->logged ? gm_fmt_bytes(c, sizeof c, x->bytes) : "",
                second != x->bytes ? gm_fmt_bytes(b, sizeof b, second) : "", x->mtp ? "MTP draft: " : "",
                x->exact ? "" : "(upper bound) ", x->what);
    }
}

static void text_devices(FILE *out, const ggufmap_fit *fit) {
    static const char *const heads[] = { "weights", "planned", "kv", "rs", "output", "compute", "total", "planned" };
    char v[32];
    const uint64_t page = ggufmap_plan_options(fit->run.plan)->page;
    fprintf(out, "\nper device (output at its full size; totals with llama.cpp's and the planned weights%s):\n  %-6s",
            page > 1 ? "; GPU buffers in whole pages" : "", "");
    for (int i = 0; i < 8; i++) fprintf(out, " %12s", heads[i]);
    fputs("\n", out);
    for (uint32_t i = 0; i < fit->run.n_devices; i++) {
        const ggufmap_fit_device *d = &fit->run.devices[i];
        const uint64_t x[8] = { d->weights, d->weights_planned, d->kv, d->rs, d->output_max, d->compute, d->total,
                                d->total_planned };
        fprintf(out, "  %-6s", d->name);
        for (int k = 0; k < 8; k++) fprintf(out, " %12s", gm_fmt_bytes(v, sizeof v, x[k]));
        fprintf(out, "%s\n", d->exact ? "" : "  (an upper bound)");
    }
}

static void text_verdict_line(FILE *out, const char *label, uint64_t need, uint64_t limit) {
    char a[32], b[32], c[32];
    fprintf(out, "  %-22s: %s  %s the limit of %s by %s\n", label, gm_fmt_bytes(a, sizeof a, need),
            need <= limit ? "FITS under" : "EXCEEDS", gm_fmt_bytes(b, sizeof b, limit),
            gm_fmt_bytes(c, sizeof c, need <= limit ? limit - need : need - limit));
}

static void text_max_ctx(FILE *out, const ggufmap_fit_report_opts *ro) {
    char a[24] = "none", b[24] = "none";
    if (ro->max_ctx) snprintf(a, sizeof a, "-c %u", ro->max_ctx);
    if (ro->max_ctx_planned) snprintf(b, sizeof b, "-c %u", ro->max_ctx_planned);
    if (ro->max_ctx == ro->max_ctx_planned)
        fprintf(out, "\nlargest context that fits: %s\n", a);
    else
        fprintf(out, "\nlargest context that fits: %s with llama.cpp today, %s repacked\n", a, b);
}

static void text_verdict(FILE *out, const ggufmap_fit *fit, const ggufmap_fit_report_opts *ro) {
    char a[32];
    for (uint32_t i = 0; i < fit->n_checks && !ggufmap_fit_refusal(fit, NULL); i++) {
        const ggufmap_fit_check *c = &fit->checks[i];
        fprintf(out, "\n%s:\n", c->what);
        text_verdict_line(out, "llama.cpp today", c->total, c->limit);
        text_verdict_line(out, "repacked (planned)", c->total_planned, c->limit);
    }
    if (fit->n_checks > 1 && !ggufmap_fit_refusal(fit, NULL))
        fprintf(out, "verdict: %s (every check must pass)\n", ggufmap_fit_fits(fit, false) ? "FITS" : "DOES NOT FIT");
    if (ro && ro->searched)
        text_max_ctx(out, ro);
    if (ro && ro->n_suggestions) {
        char b[32];
        fprintf(out, "\nto make it fit, cheapest first (each step keeps the ones before it):\n");
        for (uint32_t i = 0; i < ro->n_suggestions; i++) {
            const ggufmap_fit_suggestion *x = &ro->suggestions[i];
            if (x->n_gpus > 1) {
                fprintf(out, "  %u. %-34s", i + 1, x->flags);
                for (uint32_t g = 0; g < x->n_gpus && g + 1 < fit->run.n_devices; g++)
                    fprintf(out, "%s%s %s", g ? ", " : " ", fit->run.devices[g + 1].name,
                            gm_fmt_bytes(a, sizeof a, x->gpu_total[g]));
            } else {
                fprintf(out, "  %u. %-34s total %s", i + 1, x->flags, gm_fmt_bytes(a, sizeof a, x->total));
            }
            if (fit->opts.mem) fprintf(out, ", RAM %s", gm_fmt_bytes(b, sizeof b, x->resident));
            fprintf(out, "  %s\n", x->fits ? "fits" : "does not fit");
        }
    }
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                      */
/* ------------------------------------------------------------------------ */

static void json_options(json *j, const ggufmap_fit *fit) {
    const ggufmap_fit_opts *o = &fit->opts;
    json_key(j, "options");
    json_begin_object(j);
    json_key(j, "n_ctx"); json_uint(j, o->n_ctx);
    json_key(j, "n_seq_max"); json_uint(j, o->n_seq_max);
    json_key(j, "n_batch"); json_uint(j, o->n_batch);
    json_key(j, "n_ubatch"); json_uint(j, o->n_ubatch);
    json_key(j, "type_k"); json_string(j, type_name(o->type_k));
    json_key(j, "type_v"); json_string(j, type_name(o->type_v));
    json_key(j, "flash_attn"); json_string(j, fa_name(o->flash_attn));
    json_key(j, "swa_full"); json_bool(j, o->swa_full);
    json_key(j, "kv_unified"); json_bool(j, o->kv_unified);
    json_key(j, "no_kv_offload"); json_bool(j, o->no_kv_offload);
    json_key(j, "embeddings"); json_bool(j, o->embeddings);
    json_key(j, "mtp"); json_bool(j, o->mtp);
    json_key(j, "limit");
    if (o->limit) json_uint(j, o->limit);
    else json_null(j);
    json_key(j, "mem");
    if (o->mem) json_uint(j, o->mem);
    else json_null(j);
    json_end_object(j);
}

static void json_refusal(json *j, const char *why, bool aborts) {
    json_key(j, "refusal");
    if (!why) {
        json_null(j);
        return;
    }
    json_begin_object(j);
    json_key(j, "message"); json_string(j, why);
    json_key(j, "aborts"); json_bool(j, aborts);
    json_end_object(j);
}

static void json_sizes(json *j, const ggufmap_fit_context *s) {
    json_key(j, "context");
    if (!s) {
        json_null(j);
        return;
    }
    json_begin_object(j);
    json_key(j, "n_ctx"); json_uint(j, s->n_ctx);
    json_key(j, "n_ctx_seq"); json_uint(j, s->n_ctx_seq);
    json_key(j, "n_batch"); json_uint(j, s->n_batch);
    json_key(j, "n_ubatch"); json_uint(j, s->n_ubatch);
    json_key(j, "n_seq_max"); json_uint(j, s->n_seq_max);
    json_key(j, "n_stream"); json_uint(j, s->n_stream);
    json_key(j, "n_outputs_max"); json_uint(j, s->n_outputs_max);
    json_key(j, "kv_size"); json_uint(j, s->kv_size);
    json_key(j, "kv_size_swa"); json_uint(j, s->kv_size_swa);
    json_key(j, "flash_attn"); json_bool(j, s->flash_attn);
    json_key(j, "v_trans"); json_bool(j, s->v_trans);
    json_end_object(j);
}

/* the main context's refusal and sizes; with --mtp the draft's beside them */
static void json_context(json *j, const ggufmap_fit *fit) {
    json_refusal(j, fit->ctx[GM_CTX_MAIN].refusal[0] ? fit->ctx[GM_CTX_MAIN].refusal : NULL, fit->ctx[GM_CTX_MAIN].aborts);
    json_sizes(j, fit->ctx[GM_CTX_MAIN].refusal[0] ? NULL : &fit->ctx[GM_CTX_MAIN].cp.sizes);
    json_key(j, "mtp");
    if (fit->n_ctx <= GM_CTX_DRAFT) {
        json_null(j);
        return;
    }
    bool aborts;
    const char *why = ggufmap_fit_mtp_refusal(fit, &aborts);
    json_begin_object(j);
    json_refusal(j, why, aborts);
    json_sizes(j, ggufmap_fit_mtp_sizes(fit));
    json_end_object(j);
}

static void json_buffers(json *j, const ggufmap_fit *fit) {
    json_key(j, "buffers");
    json_begin_array(j);
    for (uint32_t i = 0; i < fit->buffers.n; i++) {
        const ggufmap_fit_buffer *b = &fit->buffers.v[i];
        json_begin_object(j);
        json_key(j, "kind"); json_string(j, ggufmap_fit_kind_name(b->kind));
        json_key(j, "context"); json_string(j, b->kind == GGUFMAP_FIT_WEIGHTS ? "model" : b->mtp ? "mtp" : "main");
        json_key(j, "device"); json_string(j, fit->run.devices[b->device].name);
        json_key(j, "buft"); json_string(j, b->buft);
        json_key(j, "bytes"); json_uint(j, b->bytes);
        json_key(j, "logged"); json_uint(j, b->logged);
        json_key(j, "planned"); json_uint(j, b->planned);
        json_key(j, "bytes_max"); json_uint(j, b->bytes_max);
        json_key(j, "exact"); json_bool(j, b->exact);
        json_key(j, "what"); json_string(j, b->what);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_devices(json *j, const ggufmap_fit *fit) {
    json_key(j, "devices");
    json_begin_array(j);
    for (uint32_t i = 0; i < fit->run.n_devices; i++) {
        const ggufmap_fit_device *d = &fit->run.devices[i];
        json_begin_object(j);
        json_key(j, "name"); json_string(j, d->name);
        json_key(j, "gpu"); json_bool(j, d->gpu);
        json_key(j, "weights"); json_uint(j, d->weights);
        json_key(j, "weights_planned"); json_uint(j, d->weights_planned);
        json_key(j, "kv"); json_uint(j, d->kv);
        json_key(j, "rs"); json_uint(j, d->rs);
        json_key(j, "output"); json_uint(j, d->output);
        json_key(j, "output_max"); json_uint(j, d->output_max);
        json_key(j, "compute"); json_uint(j, d->compute);
        json_key(j, "total"); json_uint(j, d->total);
        json_key(j, "total_planned"); json_uint(j, d->total_planned);
        json_key(j, "exact"); json_bool(j, d->exact);
        json_end_object(j);
    }
    json_end_array(j);
}

static void json_check(json *j, const ggufmap_fit *fit, const ggufmap_fit_check *c) {
    json_key(j, "what"); json_string(j, c->what);
    json_key(j, "device"); json_string(j, c->device < 0 ? "RAM" : fit->run.devices[c->device].name);
    json_key(j, "total"); json_uint(j, c->total);
    json_key(j, "total_planned"); json_uint(j, c->total_planned);
    json_key(j, "limit"); json_uint(j, c->limit);
}

/* the verdict: every check passes (fits), its first check's figures (the
 * limited GPU, or the RAM), and every check */
static void json_verdict(json *j, const ggufmap_fit *fit, const ggufmap_fit_report_opts *ro) {
    const ggufmap_fit_device *d = &fit->run.devices[ggufmap_fit_limited_device(fit)];
    json_key(j, "verdict");
    json_begin_object(j);
    if (fit->n_checks) {
        json_check(j, fit, &fit->checks[0]);
    } else {
        json_key(j, "device"); json_string(j, d->name);
        json_key(j, "total"); json_uint(j, d->total);
        json_key(j, "total_planned"); json_uint(j, d->total_planned);
        json_key(j, "limit"); json_null(j);
    }
    json_key(j, "fits"); json_bool(j, ggufmap_fit_fits(fit, false));
    json_key(j, "fits_planned"); json_bool(j, ggufmap_fit_fits(fit, true));
    json_key(j, "checks");
    json_begin_array(j);
    for (uint32_t i = 0; i < fit->n_checks; i++) {
        const ggufmap_fit_check *c = &fit->checks[i];
        json_begin_object(j);
        json_check(j, fit, c);
        json_key(j, "fits"); json_bool(j, c->total <= c->limit);
        json_key(j, "fits_planned"); json_bool(j, c->total_planned <= c->limit);
        json_end_object(j);
    }
    json_end_array(j);
    json_end_object(j);
    json_key(j, "max_ctx");
    if (ro && ro->searched) json_uint(j, ro->max_ctx);
    else json_null(j);
    json_key(j, "max_ctx_planned");
    if (ro && ro->searched) json_uint(j, ro->max_ctx_planned);
    else json_null(j);
    json_key(j, "suggestions");
    json_begin_array(j);
    for (uint32_t i = 0; ro && i < ro->n_suggestions; i++) {
        json_begin_object(j);
        json_key(j, "flags"); json_string(j, ro->suggestions[i].flags);
        json_key(j, "total"); json_uint(j, ro->suggestions[i].total);
        json_key(j, "devices");
        json_begin_array(j);
        for (uint32_t g = 0; g < ro->suggestions[i].n_gpus && g + 1 < fit->run.n_devices; g++) {
            json_begin_object(j);
            json_key(j, "device"); json_string(j, fit->run.devices[g + 1].name);
            json_key(j, "total"); json_uint(j, ro->suggestions[i].gpu_total[g]);
            json_end_object(j);
        }
        json_end_array(j);
        json_key(j, "resident");
        if (fit->opts.mem) json_uint(j, ro->suggestions[i].resident);
        else json_null(j);
        json_key(j, "fits"); json_bool(j, ro->suggestions[i].fits);
        json_end_object(j);
    }
    json_end_array(j);
}

static void report_json(FILE *out, const ggufmap_fit *fit, const ggufmap_fit_report_opts *ro) {
    json j;
    json_init(&j, out);
    json_begin_object(&j);
    json_key(&j, "schema"); json_string(&j, "ggufmap.fit/1");
    json_key(&j, "model"); json_string(&j, model_path(fit));
    json_key(&j, "architecture"); json_string(&j, fit->hp->arch_name);
    json_key(&j, "device");
    json_string(&j, ggufmap_device_name(ggufmap_placement_options(ggufmap_plan_placement(fit->run.plan))->device));
    json_options(&j, fit);
    json_context(&j, fit);
    json_buffers(&j, fit);
    json_devices(&j, fit);
    json_verdict(&j, fit, ro);
    json_end_object(&j);
    json_finish(&j);
}

void ggufmap_fit_report(FILE *out, const ggufmap_fit *fit, const ggufmap_fit_report_opts *ro) {
    if (ro && ro->json) {
        report_json(out, fit, ro);
        return;
    }
    text_header(out, fit);
    text_buffers(out, fit);
    text_devices(out, fit);
    text_verdict(out, fit, ro);
}

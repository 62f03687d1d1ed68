/*
 * model_arg.c - MODEL as a path, a URL, an hf:// name or -hf OWNER/REPO
 * [:QUANT], and the options of reading it over the network.
 *
 * The environment is read here, not in the library: HF_TOKEN (the token),
 * MODEL_ENDPOINT then HF_ENDPOINT (the hub, as llama.cpp reads them),
 * CURL_CA_BUNDLE (a CA bundle, as curl reads it), XDG_CACHE_HOME and HOME
 * (where the header cache lives).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model_arg.h"
#include "util.h"

static const cli_option model_options[] = {
    {OPT_HF, "-hf, --hf-repo", "OWNER/REPO[:QUANT]", NULL,
     "instead of MODEL: the file llama.cpp's -hf picks from the hub's listing (QUANT default Q4_K_M, then Q8_0, "
     "then the first model file); the hub is $MODEL_ENDPOINT, else $HF_ENDPOINT, else https://huggingface.co"},
    {OPT_HF_TOKEN, "--hf-token", "T", NULL, "token for the hub (default $HF_TOKEN); sent to the hub's host only"},
    {OPT_CACHE, "--cache", "DIR", "@file", "keep fetched headers in DIR (default $XDG_CACHE_HOME/ggufmap)"},
    {OPT_NO_CACHE, "--no-cache", NULL, NULL, "do not read or write the header cache"},
    {OPT_OFFLINE, "--offline", NULL, NULL, "no network: headers from the cache only"},
    {OPT_CACERT, "--cacert", "FILE", "@file", "trust this CA bundle (default $CURL_CA_BUNDLE, else the system's)"},
    {OPT_TIMEOUT, "--timeout", "S", NULL, "the most the command may wait for servers in all, in seconds: connecting, stalls, slow bodies and waits "
     "before retries together (default 30)"},
    {OPT_RETRIES, "--retries", "N", NULL, "retries on HTTP 429 and 5xx (default 4)"},
    {OPT_MAX_HEADER, "--max-header", "SIZE", NULL, "most header bytes read from a remote file (default 256M)"},
    {OPT_VERBOSE, "--verbose", NULL, NULL, "log each request and what each shard cost"},
};

const cli_group model_arg_group = CLI_GROUP("model on a server (MODEL: a path, an http(s):// URL or "
                                            "hf://OWNER/REPO[@REVISION]/PATH.gguf)", model_options);

void model_arg_init(model_arg *a, const char *sub) {
    memset(a, 0, sizeof *a);
    a->sub = sub;
    ggufmap_remote_opts_init(&a->opts);
    a->hf_token = getenv("HF_TOKEN");
    a->cacert = getenv("CURL_CA_BUNDLE");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && *xdg == '/')
        snprintf(a->default_cache, sizeof a->default_cache, "%s/ggufmap", xdg);
    else if (home && *home)
        snprintf(a->default_cache, sizeof a->default_cache, "%s/.cache/ggufmap", home);
    a->cache_dir = a->default_cache[0] ? a->default_cache : NULL;
}

void model_arg_free(model_arg *a) {
    ggufmap_remote_free(a->remote);
    a->remote = NULL;
    free(a->picked);
    a->picked = NULL;
}

/* A count in [lo, hi], as every count option reads one (util.c's parse_count). */
static bool parse_bounded(const char *arg, long lo, long hi, uint32_t *v) {
    long n;
    if (parse_count(arg, hi, &n) || n < lo) return false;
    *v = (uint32_t)n;
    return true;
}

int model_arg_apply(model_arg *a, int code, const char *arg, bool *handled) {
    *handled = true;
    switch (code) {
    case OPT_HF: a->hf_repo = arg; return EXIT_OK;
    case OPT_HF_TOKEN: a->hf_token = arg; return EXIT_OK;
    case OPT_CACHE: a->cache_dir = arg; return EXIT_OK;
    case OPT_NO_CACHE: a->cache_dir = NULL; return EXIT_OK;
    case OPT_OFFLINE: a->offline = true; return EXIT_OK;
    case OPT_CACERT: a->cacert = arg; return EXIT_OK;
    case OPT_VERBOSE: a->verbose = true; return EXIT_OK;
    case OPT_TIMEOUT:
        return parse_bounded(arg, 1, 3600, &a->opts.timeout_s)
                   ? EXIT_OK
                   : cli_usage_error(a->sub, "--timeout %s: expected seconds, 1 to 3600", arg);
    case OPT_RETRIES:
        return parse_bounded(arg, 0, 20, &a->opts.retries) ? EXIT_OK
                                                          : cli_usage_error(a->sub, "--retries %s: expected 0 to 20", arg);
    case OPT_MAX_HEADER:
        if (parse_size_option(a->sub, "--max-header", arg, 0, &a->opts.max_header)) return EXIT_USAGE;
        if (a->opts.max_header >= 64) return EXIT_OK;
        return cli_usage_error(a->sub, "--max-header %s: at least 64 bytes", arg);
    default: *handled = false; return EXIT_OK;
    }
}

int model_arg_take(model_arg *a, int argc, char **argv, int first) {
    int n = argc - first;
    if (a->hf_repo && n > 0) return cli_usage_error(a->sub, "-hf %s and MODEL %s: give one of them", a->hf_repo, argv[first]);
    if (a->hf_repo) return EXIT_OK;
    if (n != 1) return n == 0 ? cli_usage_error(a->sub, "no MODEL given") : cli_usage_error(a->sub, "one MODEL expected, got %d", n);
    a->model = argv[first];
    return EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* Opening                                                                   */
/* ------------------------------------------------------------------------ */

/* --verbose: a line of the session's log.  It holds what servers sent (a
 * redirect's Location, a URL): escaped like everything else printed, so
 * that no control byte from a server reaches the terminal. */
static void log_to_stderr(void *ctx, const char *line) {
    fprintf(stderr, "ggufmap %s: ", (const char *)ctx);
    ggufmap_fputs_escaped(stderr, line, strlen(line));
    fputc('\n', stderr);
}

static int fail(const model_arg *a, const ggufmap_error *err) {
    return cli_fail(a->sub, err->status == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT, err->message);
}

static int start_session(model_arg *a, ggufmap_error *err) {
    ggufmap_remote_opts o = a->opts;
    const char *endpoint = getenv("MODEL_ENDPOINT");
    o.endpoint = endpoint && *endpoint ? endpoint : getenv("HF_ENDPOINT");
    o.token = a->hf_token && *a->hf_token ? a->hf_token : NULL;
    o.cacert = a->cacert && *a->cacert ? a->cacert : NULL;
    o.cache_dir = a->cache_dir;
    o.offline = a->offline;
    if (a->verbose) {
        o.log = log_to_stderr;
        o.log_ctx = (void *)(uintptr_t)a->sub;
    }
    return ggufmap_remote_new(&o, &a->remote, err);
}

/* --verbose: what each shard cost, and the session's total. */
static void report_cost(const model_arg *a, const ggufmap_model *m) {
    uint64_t bytes, requests;
    for (uint32_t s = 0; s < ggufmap_model_n_shards(m); s++) {
        const ggufmap_source *src = ggufmap_model_shard(m, s);
        ggufmap_source_fetch_stats(src, &bytes, &requests);
        fprintf(stderr, "ggufmap %s: shard %u of %u: %llu bytes in %llu request%s for a %llu-byte header\n", a->sub,
                s + 1, ggufmap_model_n_shards(m), (unsigned long long)bytes, (unsigned long long)requests, requests == 1 ? "" : "s",
                (unsigned long long)ggufmap_source_data_offset(src));
    }
    ggufmap_remote_totals(a->remote, &bytes, &requests);
    fprintf(stderr, "ggufmap %s: fetched %llu bytes in %llu request%s\n", a->sub, (unsigned long long)bytes,
            (unsigned long long)requests, requests == 1 ? "" : "s");
}

int model_arg_open(model_arg *a, unsigned flags, ggufmap_model **out) {
    ggufmap_error err;
    *out = NULL;
    if (!a->hf_repo && !ggufmap_is_url(a->model))
        return ggufmap_model_open(a->model, flags, out, &err) == GGUFMAP_OK ? EXIT_OK : fail(a, &err);
    if (start_session(a, &err) != GGUFMAP_OK) return fail(a, &err);
    const char *name = a->model;
    if (a->hf_repo) {
        if (ggufmap_remote_hf_pick(a->remote, a->hf_repo, &a->picked, &err) != GGUFMAP_OK) return fail(a, &err);
        if (a->verbose) {
            fprintf(stderr, "ggufmap %s: -hf ", a->sub);
            ggufmap_fputs_escaped(stderr, a->hf_repo, strlen(a->hf_repo));
            fputs(": ", stderr);
            ggufmap_fputs_escaped(stderr, a->picked, strlen(a->picked)); /* from the hub's listing */
            fputc('\n', stderr);
        }
        name = a->picked;
    }
    if (ggufmap_model_open_url(name, flags, a->remote, out, &err) != GGUFMAP_OK) return fail(a, &err);
    if (a->verbose) report_cost(a, *out);
    return EXIT_OK;
}

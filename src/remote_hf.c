/*
 * remote_hf.c - llama.cpp's `-hf OWNER/REPO[:QUANT]`: which file of a Hugging
 * Face repository it loads, found from the hub's listing.
 *
 * llama.cpp v0.5.0 (common/hf-cache.cpp, get_repo_files) asks the endpoint
 * for /api/models/REPO/refs, takes the commit of the branch "main" (else the
 * first valid branch), lists /api/models/REPO/tree/COMMIT?recursive=true, and
 * picks with find_best_model (common/download.cpp): see gm_hf_pick_path.
 * We do the same two requests and the same pick, and name the result
 * hf://REPO@COMMIT/PATH, so every shard is read at that commit.
 *
 * The listings are JSON from a server we do not control: they are read with
 * a small pull parser that never reads past the body, bounds its nesting,
 * and keeps only the few strings the pick needs.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "remote_internal.h"

#define LISTING_MAX (32ull << 20) /* bytes of one listing; the largest repositories list ~2 MB */
#define JSON_DEPTH 64
#define PATH_MAX_LEN 4096

/* ------------------------------------------------------------------------ */
/* A pull parser over a JSON text                                            */
/* ------------------------------------------------------------------------ */

typedef struct jcur {
    const char *p, *end;
    int depth;
} jcur;

static void skip_ws(jcur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* Consumes ch (after white space) when it is next. */
static bool eat(jcur *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static int hex_digit(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    ch = (char)tolower((unsigned char)ch);
    return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static bool read_hex4(jcur *c, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++, c->p++) {
        int d = c->p < c->end ? hex_digit(*c->p) : -1;
        if (d < 0) return false;
        *v = *v * 16 + (unsigned)d;
    }
    return true;
}

/* Code point cp as UTF-8 into unit; its length in *k. */
static void put_utf8(char unit[4], size_t *k, unsigned cp) {
    static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0};
    *k = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    for (size_t i = *k; i-- > 1; cp >>= 6) unit[i] = (char)(0x80 | (cp & 0x3F));
    unit[0] = (char)(lead[*k] | cp);
}

/* One escape after the backslash, decoded into unit (*k bytes). */
static bool read_escape(jcur *c, char unit[4], size_t *k) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (c->p >= c->end) return false;
    const char *e = *c->p ? strchr(from, *c->p) : NULL;
    if (e) {
        c->p++;
        unit[0] = to[e - from];
        *k = 1;
        return true;
    }
    if (*c->p++ != 'u') return false;
    unsigned cp, lo;
    if (!read_hex4(c, &cp)) return false;
    if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair */
        if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u') return false;
        c->p += 2;
        if (!read_hex4(c, &lo) || lo < 0xDC00 || lo >= 0xE000) return false;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    put_utf8(unit, k, cp);
    return true;
}

/* A string, decoded into out (cap bytes, NUL-terminated) when out is given
 * and it fits (else out holds ""); false on bad syntax only. */
static bool read_string(jcur *c, char *out, size_t cap) {
    size_t n = 0;
    bool fits = out != NULL;
    if (!eat(c, '"')) return false;
    while (c->p < c->end && *c->p != '"') {
        char unit[4];
        size_t k = 1;
        if ((unsigned char)*c->p < 0x20) return false;
        if (*c->p != '\\') {
            unit[0] = *c->p++;
        } else if (c->p++, !read_escape(c, unit, &k)) {
            return false;
        }
        if (fits && n + k < cap) {
            memcpy(out + n, unit, k);
            n += k;
        } else {
            fits = false;
        }
    }
    if (c->p >= c->end) return false;
    c->p++;
    if (out) out[fits ? n : 0] = '\0';
    return true;
}

static bool skip_value(jcur *c);

/* The rest of an object or array whose opening bracket was eaten. */
static bool skip_members(jcur *c, char close, bool keyed) {
    if (++c->depth > JSON_DEPTH) return false;
    bool ok = true;
    if (!eat(c, close)) {
        do ok = (!keyed || (read_string(c, NULL, 0) && eat(c, ':'))) && skip_value(c);
        while (ok && eat(c, ','));
        ok = ok && eat(c, close);
    }
    c->depth--;
    return ok;
}

static bool skip_value(jcur *c) {
    skip_ws(c);
    if (c->p >= c->end) return false;
    if (*c->p == '"') return read_string(c, NULL, 0);
    if (eat(c, '{')) return skip_members(c, '}', true);
    if (eat(c, '[')) return skip_members(c, ']', false);
    const char *start = c->p; /* a number, true, false or null */
    while (c->p < c->end && (isalnum((unsigned char)*c->p) || strchr("+-.", *c->p))) c->p++;
    return c->p > start;
}

/* Reads one object, keeping the string values of the keys in names[] into
 * values[] (each cap bytes; "" when absent or not a string). */
static bool read_object(jcur *c, const char *const *names, char **values, size_t n_names, size_t cap) {
    char key[64];
    for (size_t i = 0; i < n_names; i++) values[i][0] = '\0';
    if (!eat(c, '{')) return false;
    if (eat(c, '}')) return true;
    do {
        if (!read_string(c, key, sizeof key) || !eat(c, ':')) return false;
        size_t i = 0;
        while (i < n_names && strcmp(key, names[i]) != 0) i++;
        skip_ws(c);
        bool kept = i < n_names && c->p < c->end && *c->p == '"';
        if (kept ? !read_string(c, values[i], cap) : !skip_value(c)) return false;
    } while (eat(c, ','));
    return eat(c, '}');
}

/* ------------------------------------------------------------------------ */
/* The two listings                                                          */
/* ------------------------------------------------------------------------ */

static bool is_commit(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i])) return false;
    return n == 40;
}

/* refs: {"branches": [{"name": ..., "targetCommit": ...}, ...], ...}: the
 * commit of "main", else of the first branch with a valid one. */
static bool pick_commit(const char *json, size_t len, char commit[41]) {
    jcur c = {json, json + len, 0};
    char key[64], name[256], target[64];
    char *values[] = {name, target};
    static const char *const names[] = {"name", "targetCommit"};
    commit[0] = '\0';
    if (!eat(&c, '{') || eat(&c, '}')) return false;
    do {
        if (!read_string(&c, key, sizeof key) || !eat(&c, ':')) return false;
        if (strcmp(key, "branches") != 0) {
            if (!skip_value(&c)) return false;
            continue;
        }
        if (!eat(&c, '[')) return false;
        if (eat(&c, ']')) continue;
        do {
            if (!read_object(&c, names, values, 2, sizeof target)) return false;
            if (!is_commit(target) || (commit[0] && strcmp(name, "main") != 0)) continue;
            memcpy(commit, target, 41);
            if (strcmp(name, "main") == 0) return true;
        } while (eat(&c, ','));
        if (!eat(&c, ']')) return false;
    } while (eat(&c, ','));
    return commit[0] != '\0';
}

/* A path the hub could serve: relative, without empty, "." or ".." parts. */
static bool safe_path(const char *p) {
    if (!*p || *p == '/') return false;
    for (const char *s = p; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return false;
        s += n + (s[n] == '/');
    }
    return true;
}

/* tree: [{"type": "file", "path": ...}, ...]: the files' paths, in order. */
static bool list_files(const char *json, size_t len, char ***paths, size_t *n) {
    jcur c = {json, json + len, 0};
    char type[PATH_MAX_LEN], *path = malloc(PATH_MAX_LEN);
    char *values[] = {type, path};
    static const char *const names[] = {"type", "path"};
    size_t cap = 0;
    *paths = NULL;
    *n = 0;
    bool ok = path && eat(&c, '[');
    if (ok && !eat(&c, ']')) {
        do {
            ok = read_object(&c, names, values, 2, PATH_MAX_LEN);
            if (!ok || strcmp(type, "file") != 0 || !safe_path(path)) continue;
            if (*n == cap) {
                char **grown = realloc(*paths, (cap = cap ? 2 * cap : 64) * sizeof **paths);
                if (!(ok = grown != NULL)) break;
                *paths = grown;
            }
            if (!(ok = ((*paths)[*n] = strdup(path)) != NULL)) break;
            (*n)++;
        } while (eat(&c, ','));
        ok = ok && eat(&c, ']');
    }
    free(path);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* The pick                                                                  */
/* ------------------------------------------------------------------------ */

static const char *file_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* gguf_filename_is_model: a .gguf that is no projector, imatrix or draft. */
static bool is_model_file(const char *path) {
    static const char *const not_models[] = {"mmproj", "imatrix", "mtp-", "eagle3-", "dflash-", "dspark-"};
    size_t n = strlen(path);
    if (n < 5 || strcmp(path + n - 5, ".gguf") != 0) return false;
    for (size_t i = 0; i < sizeof not_models / sizeof not_models[0]; i++)
        if (strstr(file_name(path), not_models[i])) return false;
    return true;
}

/* get_gguf_split_info: a shard other than the first of a split model
 * ("PREFIX-NNNNN-of-MMMMM.gguf", any case, MMMMM > 1, NNNNN != 1). */
static bool is_later_shard(const char *path) {
    size_t n = strlen(path);
    if (n < 22) return false;
    const char *s = path + n - 21; /* "-NNNNN-of-MMMMM.gguf" is 20 bytes, after a prefix byte */
    int index = 0, count = 0;
    if (s[1] != '-' || strncasecmp(s + 7, "-of-", 4) != 0) return false;
    for (int i = 0; i < 5; i++) {
        if (!isdigit((unsigned char)s[2 + i]) || !isdigit((unsigned char)s[11 + i])) return false;
        index = index * 10 + (s[2 + i] - '0');
        count = count * 10 + (s[11 + i] - '0');
    }
    return count > 1 && index != 1;
}

/* The tag, any case, followed by '.' or '-' somewhere in path (llama.cpp
 * searches the regex TAG[.-]; a tag of letters, digits, '_' and '-' means
 * the same literally). */
static bool has_tag(const char *path, const char *tag) {
    size_t t = strlen(tag);
    for (const char *s = path; *s; s++)
        if (strncasecmp(s, tag, t) == 0 && (s[t] == '.' || s[t] == '-')) return true;
    return false;
}

const char *gm_hf_pick_path(const char *const *paths, size_t n, const char *tag) {
    static const char *const defaults[] = {"Q4_K_M", "Q8_0"};
    const char *const *tags = *tag ? &tag : defaults;
    size_t n_tags = *tag ? 1 : 2;
    for (size_t k = 0; k < n_tags; k++)
        for (size_t i = 0; i < n; i++)
            if (is_model_file(paths[i]) && has_tag(paths[i], tags[k]) && !is_later_shard(paths[i])) return paths[i];
    for (size_t i = 0; !*tag && i < n; i++) /* without a tag: the first model file */
        if (is_model_file(paths[i]) && !is_later_shard(paths[i])) return paths[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* -hf                                                                       */
/* ------------------------------------------------------------------------ */

/* OWNER/REPO[:QUANT] as llama.cpp splits it (the tag after the last ':'). */
static bool split_repo(const char *arg, char *repo, size_t cap, const char **tag) {
    const char *colon = strrchr(arg, ':');
    size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    *tag = colon ? colon + 1 : "";
    if (n == 0 || n >= cap) return false;
    memcpy(repo, arg, n);
    repo[n] = '\0';
    const char *slash = strchr(repo, '/');
    static const char tag_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    return slash && slash != repo && slash[1] && !strchr(slash + 1, '/') && strspn(*tag, tag_chars) == strlen(*tag);
}

static int get_listing(ggufmap_remote *r, const char *repo, const char *what, char **body, size_t *len,
                       ggufmap_error *err) {
    char url[2048];
    size_t used = (size_t)snprintf(url, sizeof url, "%s/api/models/", gm_remote_endpoint(r));
    used = gm_url_append_path(url, used, sizeof url, repo, strlen(repo), "/"); /* no "..": no way out of /api/models */
    if (used + strlen(what) + 2 > sizeof url) return gm_fail(err, GGUFMAP_EINVAL, "-hf %s: name too long", repo);
    snprintf(url + used, sizeof url - used, "/%s", what);
    return gm_remote_get(r, url, LISTING_MAX, body, len, err);
}

int ggufmap_remote_hf_pick(ggufmap_remote *r, const char *repo_quant, char **name, ggufmap_error *err) {
    char repo[300], commit[41], tree[128];
    const char *tag;
    char *body = NULL, **paths = NULL;
    size_t len, n = 0;
    *name = NULL;
    ggufmap_error_clear(err);
    if (!split_repo(repo_quant, repo, sizeof repo, &tag))
        return gm_fail(err, GGUFMAP_EINVAL, "-hf %s: expected OWNER/REPO[:QUANT] (QUANT of letters, digits, '_', '-')",
                       repo_quant);
    int rc = get_listing(r, repo, "refs", &body, &len, err);
    if (!rc && !pick_commit(body, len, commit))
        rc = gm_fail(err, GGUFMAP_EFORMAT, "%s/api/models/%s/refs: no branch with a commit in the listing",
                     gm_remote_endpoint(r), repo);
    free(body);
    body = NULL;
    snprintf(tree, sizeof tree, "tree/%s?recursive=true", commit);
    if (!rc) rc = get_listing(r, repo, tree, &body, &len, err);
    if (!rc && !list_files(body, len, &paths, &n))
        rc = gm_fail(err, GGUFMAP_EFORMAT, "%s/api/models/%s/%s: not a file listing", gm_remote_endpoint(r), repo,
                     tree);
    const char *pick = rc ? NULL : gm_hf_pick_path((const char *const *)paths, n, tag);
    if (!rc && !pick)
        rc = gm_fail(err, GGUFMAP_ENOTFOUND, "-hf %s: no GGUF model file%s%s in the repository's %zu files", repo_quant,
                     *tag ? " tagged " : "", tag, n);
    if (!rc) {
        size_t cap = strlen(repo) + strlen(pick) + 64;
        if ((*name = malloc(cap))) snprintf(*name, cap, "hf://%s@%s/%s", repo, commit, pick);
        else rc = gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    free(body);
    return rc;
}

/*
 * test_remote.c - the remote modules' pure parts: what is a URL, hf://
 * names resolved through an endpoint, credentials kept out of messages,
 * origins (who gets the token), the split naming of URLs, llama.cpp's -hf
 * pick, and the header cache on disk.  The network parts are tested against
 * real servers in tests/remote.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "ggufmap/ggufmap.h"
#include "internal.h"
#include "remote_curl.h"
#include "remote_internal.h"

static void check_resolve(const char *endpoint, const char *name, const char *want) {
    char *url = NULL;
    ggufmap_error err;
    int rc = gm_url_resolve(endpoint, name, &url, &err);
    if (want)
        CHECK_MSG(rc == GGUFMAP_OK && url && strcmp(url, want) == 0, "%s -> %s (%s)", name, url ? url : "NULL",
                  rc ? err.message : "");
    else
        CHECK_MSG(rc == GGUFMAP_EINVAL && strstr(err.message, "hf://OWNER/REPO"), "%s should be refused", name);
    free(url);
}

static void check_redacted(const char *url, const char *want, bool for_log) {
    char *got = for_log ? gm_url_for_log(url) : gm_url_redacted(url);
    CHECK_MSG(got && strcmp(got, want) == 0, "%s -> %s, want %s", url, got ? got : "NULL", want);
    free(got);
}

static void test_names(void) {
    CHECK(ggufmap_is_url("https://h/x.gguf") && ggufmap_is_url("HTTP://h/x") && ggufmap_is_url("hf://o/r/x.gguf"));
    CHECK(!ggufmap_is_url("model.gguf") && !ggufmap_is_url("/srv/https/x.gguf") && !ggufmap_is_url("ftp://h/x"));
    check_resolve("https://huggingface.co", "hf://org/repo/m-Q4_K_M.gguf",
                  "https://huggingface.co/org/repo/resolve/main/m-Q4_K_M.gguf");
    check_resolve("http://127.0.0.1:8080", "hf://org/repo@v1.0/dir/m.gguf",
                  "http://127.0.0.1:8080/org/repo/resolve/v1.0/dir/m.gguf");
    check_resolve("https://hub", "hf://o/r@refs/pr/1/m.gguf", "https://hub/o/r/resolve/refs%2Fpr%2F1/m.gguf");
    check_resolve("https://hub", "hf://o/r@refs%2Fpr%2F2/d/m.gguf", "https://hub/o/r/resolve/refs%2Fpr%2F2/d/m.gguf");
    check_resolve("https://hub", "hf://o/r@0123abc/m.gguf", "https://hub/o/r/resolve/0123abc/m.gguf");
    check_resolve("https://hub", "hf://o/r/a b+c.gguf", "https://hub/o/r/resolve/main/a%20b%2Bc.gguf");
    check_resolve("https://hub", "https://elsewhere/x.gguf", "https://elsewhere/x.gguf");
    /* dot segments are names, never steps out of the endpoint's path (issue
     * 20, item 9): with a token, the request must stay under the prefix */
    check_resolve("https://hub/prefix", "hf://../../x/resolve/main/m.gguf",
                  "https://hub/prefix/%2E%2E/%2E%2E/resolve/main/x/resolve/main/m.gguf");
    check_resolve("https://hub/prefix", "hf://o/r/../../../secret.gguf",
                  "https://hub/prefix/o/r/resolve/main/%2E%2E/%2E%2E/%2E%2E/secret.gguf");
    check_resolve("https://hub", "hf://o/./x.gguf", "https://hub/o/%2E/resolve/main/x.gguf");
    check_resolve("https://hub", "hf://o/r@../x.gguf", "https://hub/o/r/resolve/%2E%2E/x.gguf");
    check_resolve("https://hub", "hf://o/r/a/.../b..c/.x.gguf", "https://hub/o/r/resolve/main/a/.../b..c/.x.gguf");
    check_resolve("https://hub", "hf://o/r", NULL);
    check_resolve("https://hub", "hf://o/r/", NULL);
    check_resolve("https://hub", "hf:///r/x.gguf", NULL);
    check_resolve("https://hub", "hf://o/r@/x.gguf", NULL);
    check_resolve("https://hub", "hf://o/r@refs/pr/x.gguf", NULL);
    check_resolve("https://hub", "hf://o/r@main", NULL);

    check_redacted("https://user:secret@host:8443/p/x.gguf?a=b", "https://host:8443/p/x.gguf?a=b", false);
    check_redacted("https://a@b@host/x", "https://host/x", false);
    check_redacted("https://host/p@x.gguf", "https://host/p@x.gguf", false);
    check_redacted("model@home.gguf", "model@home.gguf", false);
    check_redacted("https://u:p@cdn/x.gguf?X-Amz-Signature=abc", "https://cdn/x.gguf?\xe2\x80\xa6", true);

    gm_curl curl_table, *curl = &curl_table; /* libcurl, loaded as a session loads it */
    ggufmap_error err;
    CHECK_MSG(gm_curl_load(curl, &err) == GGUFMAP_OK, "%s", err.message);
    CHECK(gm_url_same_origin(curl, "https://huggingface.co/a", "https://HuggingFace.co:443/b?c"));
    CHECK(gm_url_same_origin(curl, "http://127.0.0.1:80/a", "http://127.0.0.1/b"));
    CHECK(!gm_url_same_origin(curl, "https://huggingface.co/a", "http://huggingface.co/a"));
    CHECK(!gm_url_same_origin(curl, "https://huggingface.co/a", "https://cdn-lfs.huggingface.co/a"));
    CHECK(!gm_url_same_origin(curl, "http://127.0.0.1:8080/a", "http://127.0.0.2:8080/a"));
    CHECK(!gm_url_same_origin(curl, "http://127.0.0.1:8080/a", "http://127.0.0.1:8081/a"));
    CHECK(!gm_url_same_origin(curl, "https://huggingface.co.evil.com/a", "https://huggingface.co/a"));

    const char *q = "https://h/d/M-00002-of-00004.gguf?download=true#x";
    CHECK(gm_url_name_len(q) == strlen("https://h/d/M-00002-of-00004.gguf"));
    CHECK(gm_url_name_len("dir/odd?name.gguf") == strlen("dir/odd?name.gguf")); /* a local path keeps its '?' */
}

/* ------------------------------------------------------------------------ */

static void check_pick(const char *const *paths, size_t n, const char *tag, const char *want) {
    const char *got = gm_hf_pick_path(paths, n, tag);
    CHECK_MSG(want ? got && strcmp(got, want) == 0 : got == NULL, "tag '%s': picked %s, want %s", tag,
              got ? got : "nothing", want ? want : "nothing");
}

static void test_hf_pick(void) {
    static const char *const repo[] = {
        "README.md",
        "mmproj-Model-Q4_K_M.gguf",
        "Model-Q4_K_M-imatrix.gguf", /* not an imatrix file by name: "imatrix" */
        "Model-UD-Q4_K_XL.gguf",
        "Q8_0/Model-Q8_0-00002-of-00002.gguf",
        "Q8_0/Model-Q8_0-00001-of-00002.gguf",
        "Model-Q4_K_M.gguf",
        "Model-BF16.gguf",
        "mtp-Model-Q4_K_M.gguf",
    };
    size_t n = sizeof repo / sizeof repo[0];
    check_pick(repo, n, "", "Model-Q4_K_M.gguf");
    check_pick(repo, n, "q4_k_m", "Model-Q4_K_M.gguf");
    check_pick(repo, n, "Q8_0", "Q8_0/Model-Q8_0-00001-of-00002.gguf");
    check_pick(repo, n, "UD-Q4_K_XL", "Model-UD-Q4_K_XL.gguf");
    check_pick(repo, n, "BF16", "Model-BF16.gguf");
    check_pick(repo, n, "IQ1_S", NULL);
    check_pick(repo, n, "Q4_K", NULL); /* "Q4_K_M" is not "Q4_K" followed by '.' or '-' */
    static const char *const no_default[] = {"b-F16.gguf", "a-F32.gguf", "notes.txt"};
    check_pick(no_default, 3, "", "b-F16.gguf"); /* no Q4_K_M, no Q8_0: the first model file */
    static const char *const only_later[] = {"M-Q8_0-00002-of-00002.gguf"};
    check_pick(only_later, 1, "", NULL);
    static const char *const q8_first[] = {"M-Q8_0.gguf", "M-Q4_K_M.gguf"};
    check_pick(q8_first, 2, "", "M-Q4_K_M.gguf"); /* Q4_K_M is tried before Q8_0 */
}

/* ------------------------------------------------------------------------ */

static void test_cache(const char *tmp) {
    char dir[600];
    snprintf(dir, sizeof dir, "%s/cache/nested", tmp);
    const char *url = "https://hub/o/r/resolve/main/m.gguf";
    static const uint8_t bytes[] = "GGUF\x03\0\0\0 some header bytes";
    ggufmap_error err;
    gm_cache_entry e;
    CHECK(!gm_cache_load(dir, url, 1 << 20, &e));
    CHECK(gm_cache_store(dir, url, "\"etag-1\"", "", 123456789, bytes, sizeof bytes, &err) == 0);
    CHECK(gm_cache_load(dir, url, 1 << 20, &e) && e.size == 123456789 && e.n == sizeof bytes &&
          memcmp(e.bytes, bytes, sizeof bytes) == 0 && strcmp(e.etag, "\"etag-1\"") == 0 && e.modified[0] == '\0');
    gm_cache_entry_free(&e);
    CHECK(!gm_cache_load(dir, "https://hub/other.gguf", 1 << 20, &e)); /* another URL */
    CHECK(!gm_cache_load(dir, url, 8, &e));                             /* more bytes than allowed */
    const char *date = "Wed, 21 Oct 2015 07:28:00 GMT";
    CHECK(gm_cache_store(dir, url, "", date, 40, bytes, 4, &err) == 0);  /* replaced, without an ETag */
    CHECK(gm_cache_load(dir, url, 1 << 20, &e) && e.n == 4 && e.size == 40 && e.etag[0] == '\0' &&
          strcmp(e.modified, date) == 0);
    gm_cache_entry_free(&e);
    struct stat st;
    CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
    /* A damaged entry is a miss, never a crash. */
    char path[700], cmd[1500];
    snprintf(path, sizeof path, "%s/%016llx.gguf-header", dir, (unsigned long long)gm_hash_bytes(url, strlen(url)));
    CHECK(truncate(path, 60) == 0);
    CHECK(!gm_cache_load(dir, url, 1 << 20, &e));
    /* A FIFO (or any file but a regular one) in its place is a miss, at
     * once: opening it must not wait for a writer (issue 20, item 5). */
    CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0);
    CHECK(!gm_cache_load(dir, url, 1 << 20, &e));
    /* a link planted in the cache, to a good entry for this very URL kept
     * elsewhere: followed, it would load */
    char other_dir[700], target[800];
    snprintf(other_dir, sizeof other_dir, "%s/cache/elsewhere", tmp);
    snprintf(target, sizeof target, "%s/%016llx.gguf-header", other_dir, (unsigned long long)gm_hash_bytes(url, strlen(url)));
    CHECK(gm_cache_store(other_dir, url, "\"x\"", "", 4, bytes, 4, &err) == 0);
    CHECK(gm_cache_load(other_dir, url, 1 << 20, &e));
    gm_cache_entry_free(&e);
    CHECK(unlink(path) == 0 && symlink(target, path) == 0);
    CHECK(!gm_cache_load(dir, url, 1 << 20, &e));
    /* an entry of the first format (no Last-Modified line) is a miss */
    FILE *old = NULL;
    CHECK(unlink(path) == 0 && (old = fopen(path, "wbx")) != NULL);
    if (old) {
        fprintf(old, "ggufmap-header-cache 1\nurl %s\netag \"e\"\nsize 4\nbytes 4\n\nGGUF", url);
        fclose(old);
    }
    CHECK(!gm_cache_load(dir, url, 1 << 20, &e));
    snprintf(cmd, sizeof cmd, "rm -rf '%s/cache'", tmp);
    CHECK(system(cmd) == 0);
}

int main(int argc, char **argv) {
    const char *tmp = argc > 1 ? argv[1] : "/tmp/ggufmap-test_remote";
    mkdir(tmp, 0755);
    test_names();
    test_hf_pick();
    test_cache(tmp);
    return check_summary();
}

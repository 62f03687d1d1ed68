/*
 * check_corpus.c - ggufmap-corpus-check CASES.tsv ORACLE_BIN
 *
 * For each case of the corpus (see make_corpus.c) compares ggufmap with the
 * real llama.cpp v0.5.0 (the oracle, a child process limited to 60 s) twice:
 *
 *   1. ggml's own reader (`ggufmap-oracle --gguf-check FILE`:
 *      gguf_init_from_file with no_alloc) against ggufmap_source_open with
 *      GGUFMAP_OPEN_HEADER_ONLY (ggml does not check the data section
 *      against the file size) on the file named in the TSV: the same verdict
 *      and, where both accept, the same tensor count, key count and data
 *      offset;
 *   2. llama.cpp's whole load (llama_model_loader: split keys, shards,
 *      tensor bounds) against ggufmap_model_open: the same verdict and, where
 *      both accept, the same model size (bytes of all tensors of all shards)
 *      and, per file, the same span [first, last) of the CPU_Mapped buffer,
 *      which covers every tensor (--no-repack puts all of them there).
 *
 *     case NAME gguf=AGREE|DISAGREE ours=accept|reject llama=accept|reject AGREE|DISAGREE
 *
 * followed, for rejects and disagreements, by both sides' reasons.  A case
 * marked "arch" in the TSV (llama.cpp refuses the model for its
 * architecture, not its format) has its load shown but not counted (its
 * ggml-reader verdict still counts).  A WARNING line flags a case where
 * llama.cpp's verdict is not the one the case was written to provoke.  Ends
 * with "N passed, M failed"; exits 1 on any disagreement, on any case the
 * oracle could not judge, or when fewer than 40 cases ran.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "corpus.h"
#include "ggufmap/ggufmap.h"

enum { ORACLE_TIMEOUT_S = 60, MIN_CASES = 40, MAX_FILES = 8 };

typedef enum verdict { V_ACCEPT, V_REJECT, V_UNKNOWN } verdict;

static const char *vname(verdict v) { return v == V_ACCEPT ? "accept" : v == V_REJECT ? "reject" : "unknown"; }

/* ------------------------------------------------------------------------ */
/* Running the oracle                                                        */
/* ------------------------------------------------------------------------ */

/* Runs argv (stdout and stderr together into out, NUL-terminated) for at
 * most ORACLE_TIMEOUT_S seconds.  Returns the wait status, or -1 when it
 * could not run or timed out (why says which). */
static int run_child(char *const argv[], cbuf *out, char *why, size_t wcap) {
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, wcap, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, wcap, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv(argv[0], argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int timed_out = 0;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long ms_left = (long)ORACLE_TIMEOUT_S * 1000 - ((long)(now.tv_sec - t0.tv_sec) * 1000 +
                                                        (now.tv_nsec - t0.tv_nsec) / 1000000);
        if (ms_left <= 0) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        struct pollfd pf = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pf, 1, (int)(ms_left > 1000 ? 1000 : ms_left));
        if (pr <= 0) continue;
        uint8_t tmp[4096];
        ssize_t got = read(fds[0], tmp, sizeof tmp);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        cbuf_put(out, tmp, (size_t)got);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    cbuf_u8(out, 0);
    if (timed_out) {
        snprintf(why, wcap, "timeout after %d s", ORACLE_TIMEOUT_S);
        return -1;
    }
    return status;
}

/* What llama.cpp's whole load said. */
typedef struct load_result {
    verdict v;
    char result[64];          /* the RESULT word */
    char why[1200];           /* its first ERR/ABORT line */
    int64_t model_size;       /* MODEL size=, -1 when absent */
    int n_files;              /* MAPPED lines of buft CPU_Mapped, by file */
    int64_t first[MAX_FILES], last[MAX_FILES];
} load_result;

static void parse_load(char *text, load_result *r) {
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        unsigned file;
        int64_t first, last, size;
        if (strncmp(line, "RESULT ", 7) == 0) {
            snprintf(r->result, sizeof r->result, "%s", line + 7);
            r->v = strcmp(line + 7, "ok") == 0 ? V_ACCEPT : V_REJECT;
        } else if (!r->why[0] && (strncmp(line, "ERR ", 4) == 0 || strncmp(line, "ABORT ", 6) == 0)) {
            snprintf(r->why, sizeof r->why, "%s", line);
        } else if (sscanf(line, "MODEL size=%" SCNd64, &size) == 1) {
            r->model_size = size;
        } else if (sscanf(line, "MAPPED buft=CPU_Mapped file=%u first=%" SCNd64 " last=%" SCNd64, &file, &first,
                          &last) == 3 &&
                   file < MAX_FILES) {
            r->first[file] = first;
            r->last[file] = last;
            if ((int)file + 1 > r->n_files) r->n_files = (int)file + 1;
        }
    }
}

/* ORACLE [--no-mmap] MODEL: llama.cpp's whole load, with CPU_REPACK off so
 * that every tensor is in the one CPU_Mapped buffer of its file. */
static void oracle_load(const char *oracle, const char *model, int no_mmap, load_result *r) {
    memset(r, 0, sizeof *r);
    r->v = V_UNKNOWN;
    r->model_size = -1;
    snprintf(r->result, sizeof r->result, "none");
    for (int f = 0; f < MAX_FILES; f++) r->first[f] = r->last[f] = -1;
    char *argv[5] = {(char *)oracle, "--no-repack", no_mmap ? "--no-mmap" : (char *)model,
                     no_mmap ? (char *)model : NULL, NULL};
    cbuf out = {0};
    int status = run_child(argv, &out, r->why, sizeof r->why);
    if (status < 0) {
        snprintf(r->result, sizeof r->result, "%s", r->why[0] == 't' ? "timeout" : "none");
        cbuf_free(&out);
        return;
    }
    parse_load((char *)out.p, r);
    cbuf_free(&out);
    if (r->v == V_UNKNOWN)
        snprintf(r->why, sizeof r->why, "no RESULT line (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    /* "RESULT ok" with a failing exit status, or the reverse, is not a verdict. */
    if (r->v == V_ACCEPT && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) r->v = V_UNKNOWN;
}

/* What ggml's reader said: verdict and, when it accepts, three numbers. */
typedef struct gguf_result {
    verdict v;
    int64_t n_tensors, n_kv, data_offset;
    char why[1200];
} gguf_result;

static void oracle_gguf(const char *oracle, const char *file, gguf_result *r) {
    memset(r, 0, sizeof *r);
    r->v = V_UNKNOWN;
    char *argv[4] = {(char *)oracle, "--gguf-check", (char *)file, NULL};
    cbuf out = {0};
    int status = run_child(argv, &out, r->why, sizeof r->why);
    if (status >= 0) {
        const char *text = (const char *)out.p;
        const char *ok = strstr(text, "GGUF ok ");
        if (ok && sscanf(ok, "GGUF ok n_tensors=%" SCNd64 " n_kv=%" SCNd64 " data_offset=%" SCNd64, &r->n_tensors,
                         &r->n_kv, &r->data_offset) == 3)
            r->v = V_ACCEPT;
        else if (strstr(text, "GGUF fail"))
            r->v = V_REJECT;
        else
            snprintf(r->why, sizeof r->why, "no GGUF line (exit status %d)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    cbuf_free(&out);
}

/* ------------------------------------------------------------------------ */
/* Our side                                                                  */
/* ------------------------------------------------------------------------ */

/* The reader on one file, header only (as ggml with no_alloc). */
static void ours_gguf(const char *file, gguf_result *r) {
    memset(r, 0, sizeof *r);
    ggufmap_source *s = NULL;
    ggufmap_error err;
    int rc = ggufmap_source_open(file, GGUFMAP_OPEN_HEADER_ONLY, &s, &err);
    if (rc != GGUFMAP_OK) {
        r->v = rc == GGUFMAP_ENOMEM || rc == GGUFMAP_EINVAL ? V_UNKNOWN : V_REJECT;
        snprintf(r->why, sizeof r->why, "%s: %s", ggufmap_status_name(rc), err.message);
        return;
    }
    r->v = V_ACCEPT;
    r->n_tensors = ggufmap_source_n_tensors(s);
    r->n_kv = ggufmap_source_n_kv(s);
    r->data_offset = (int64_t)ggufmap_source_data_offset(s);
    ggufmap_source_free(s);
}

/* The model: verdict, total tensor bytes, and per shard the span of its tensors. */
static verdict ours_load(const char *model, load_result *r) {
    memset(r, 0, sizeof *r);
    ggufmap_model *m = NULL;
    ggufmap_error err;
    int rc = ggufmap_model_open(model, 0, &m, &err);
    if (rc != GGUFMAP_OK) {
        snprintf(r->why, sizeof r->why, "%s: %s", ggufmap_status_name(rc), err.message);
        if (m) {
            /* The API promises NULL on failure; a non-NULL model is a bug. */
            snprintf(r->why, sizeof r->why, "ggufmap_model_open failed but left a model");
            ggufmap_model_free(m);
            return r->v = V_UNKNOWN;
        }
        /* Only a format verdict counts as a reject; an I/O or memory failure
         * says nothing about the file (a missing shard is ENOTFOUND or EIO,
         * and is a reject: the model is incomplete). */
        return r->v = rc == GGUFMAP_ENOMEM || rc == GGUFMAP_EINVAL ? V_UNKNOWN : V_REJECT;
    }
    r->model_size = (int64_t)ggufmap_model_tensor_bytes(m);
    r->n_files = (int)ggufmap_model_n_shards(m);
    for (int f = 0; f < MAX_FILES; f++) r->first[f] = r->last[f] = -1;
    for (int64_t i = 0; i < ggufmap_model_n_tensors(m); i++) {
        const ggufmap_tensor *t = ggufmap_model_tensor(m, i);
        if (t->shard >= MAX_FILES) continue;
        int64_t a = (int64_t)t->offset, b = (int64_t)(t->offset + t->size);
        if (r->first[t->shard] < 0 || a < r->first[t->shard]) r->first[t->shard] = a;
        if (b > r->last[t->shard]) r->last[t->shard] = b;
    }
    ggufmap_model_free(m);
    return r->v = V_ACCEPT;
}

/* ------------------------------------------------------------------------ */
/* Comparisons                                                               */
/* ------------------------------------------------------------------------ */

/* Both readers on the one file: 1 when they agree, else 0 with the difference printed. */
static int compare_gguf(const char *name, const gguf_result *ours, const gguf_result *ggml) {
    if (ours->v == V_UNKNOWN || ggml->v == V_UNKNOWN || ours->v != ggml->v) {
        printf("    gguf: ours=%s ggml=%s%s%s%s%s\n", vname(ours->v), vname(ggml->v), ours->why[0] ? "; ours: " : "",
               ours->why, ggml->why[0] ? "; ggml: " : "", ggml->why);
        return 0;
    }
    if (ours->v == V_ACCEPT && (ours->n_tensors != ggml->n_tensors || ours->n_kv != ggml->n_kv ||
                                ours->data_offset != ggml->data_offset)) {
        printf("    gguf %s: ours n_tensors=%" PRId64 " n_kv=%" PRId64 " data_offset=%" PRId64 ", ggml n_tensors=%" PRId64
               " n_kv=%" PRId64 " data_offset=%" PRId64 "\n",
               name, ours->n_tensors, ours->n_kv, ours->data_offset, ggml->n_tensors, ggml->n_kv, ggml->data_offset);
        return 0;
    }
    return 1;
}

/* Both loads accepted: the same bytes in the same places?  1 or 0. */
static int compare_layout(const load_result *ours, const load_result *llama) {
    if (llama->model_size != ours->model_size) {
        printf("    model size: ours %" PRId64 ", llama.cpp %" PRId64 "\n", ours->model_size, llama->model_size);
        return 0;
    }
    if (llama->n_files == 0) return 1; /* loaded without mmap: no spans to compare */
    for (int f = 0; f < ours->n_files && f < MAX_FILES; f++)
        if (ours->first[f] != llama->first[f] || ours->last[f] != llama->last[f]) {
            printf("    file %d: our tensors span [%" PRId64 ", %" PRId64 "), llama.cpp maps [%" PRId64 ", %" PRId64
                   ")\n",
                   f, ours->first[f], ours->last[f], llama->first[f], llama->last[f]);
            return 0;
        }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The run                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct tally {
    int passed, failed, arch, warnings, n_accept, n_reject;
} tally;

static void check_case(const char *oracle, const char *name, const char *path, const char *expect, tally *t) {
    gguf_result og, gg;
    ours_gguf(path, &og);
    oracle_gguf(oracle, path, &gg);
    int gguf_agree = compare_gguf(name, &og, &gg);
    load_result ol, ll;
    verdict ours = ours_load(path, &ol);
    /* "mmap" cases are valid GGUF whose data llama.cpp's CPU backend cannot
     * wrap in place (an address not 32-byte aligned aborts the default mmap
     * load): the file's verdict is the one of a load without mmap, and the
     * default load must show the abort. */
    int is_mmap = strcmp(expect, "mmap") == 0;
    oracle_load(oracle, path, is_mmap, &ll);
    if (is_mmap) {
        load_result with_mmap;
        oracle_load(oracle, path, 0, &with_mmap);
        printf("    default mmap load: RESULT %s%s%s\n", with_mmap.result, with_mmap.why[0] ? "; " : "", with_mmap.why);
        if (with_mmap.v != V_REJECT) {
            printf("WARNING case %s: the mmap load was expected to abort\n", name);
            t->warnings++;
        }
        expect = "accept";
    }
    int is_arch = strcmp(expect, "arch") == 0;
    int load_agree = ours != V_UNKNOWN && ours == ll.v && (ours != V_ACCEPT || compare_layout(&ol, &ll));
    const char *tag = is_arch ? (gguf_agree ? "ARCH-LEVEL (load not counted)" : "DISAGREE")
                              : load_agree && gguf_agree ? "AGREE" : "DISAGREE";
    if (strcmp(tag, "DISAGREE") == 0) t->failed++;
    else if (is_arch) t->arch++;
    else t->passed++;
    if (strcmp(tag, "AGREE") == 0) ll.v == V_ACCEPT ? t->n_accept++ : t->n_reject++;
    printf("case %s gguf=%s ours=%s llama=%s %s\n", name, gguf_agree ? "AGREE" : "DISAGREE", vname(ours), vname(ll.v),
           tag);
    if (ours != V_ACCEPT) printf("    ours: %s\n", ol.why);
    if (ll.v != V_ACCEPT) printf("    llama: RESULT %s%s%s\n", ll.result, ll.why[0] ? "; " : "", ll.why);
    verdict want = strcmp(expect, "accept") == 0 ? V_ACCEPT : V_REJECT;
    if (ll.v != want) {
        printf("WARNING case %s: written to be '%s' but llama.cpp says %s\n", name, expect, vname(ll.v));
        t->warnings++;
    }
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: ggufmap-corpus-check CASES.tsv ORACLE_BIN\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "ggufmap-corpus-check: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    if (access(argv[2], X_OK) != 0) {
        fprintf(stderr, "ggufmap-corpus-check: oracle %s: %s\n", argv[2], strerror(errno));
        fclose(f);
        return 2;
    }
    tally t = {0};
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *save = NULL;
        char *name = strtok_r(line, "\t", &save);
        char *path = strtok_r(NULL, "\t", &save);
        char *expect = strtok_r(NULL, "\t", &save);
        if (!name || !path || !expect) {
            printf("malformed line in %s\n", argv[1]);
            t.failed++;
            continue;
        }
        check_case(argv[2], name, path, expect, &t);
    }
    fclose(f);
    int total = t.passed + t.failed;
    printf("# %d counted cases (%d accepted and %d rejected by both), %d arch-level cases not counted, %d warnings\n",
           total, t.n_accept, t.n_reject, t.arch, t.warnings);
    if (total < MIN_CASES) printf("# only %d cases ran, at least %d are required\n", total, MIN_CASES);
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed || total < MIN_CASES ? 1 : 0;
}

/*
 * check_corpus.c - ggufmap-corpus-check CASES.tsv ORACLE_BIN
 *
 * For each case of the corpus (see make_corpus.c) opens the model with our
 * reader (ggufmap_model_open, in this process) and with llama.cpp (the oracle,
 * a child process limited to 60 s), and compares the verdicts:
 *
 *     case NAME ours=accept|reject llama=accept|reject AGREE|DISAGREE
 *
 * followed, for rejects, by our error and llama.cpp's first error line.
 * llama.cpp's verdict is the full model load: RESULT ok is accept; fail,
 * abort and crash are rejects.  A case marked "arch" in the TSV (llama.cpp
 * refuses the model for its architecture, not its format) is shown but not
 * counted.  A WARNING line flags a case where llama.cpp's verdict is not the
 * one the case was written to provoke (the mutation did not do what its name
 * says).  Ends with "N passed, M failed"; exits 1 on any disagreement, on
 * any case the oracle could not judge, or when fewer than 40 cases ran.
 */
#include <errno.h>
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

enum { ORACLE_TIMEOUT_S = 60, MIN_CASES = 40 };

typedef enum verdict { V_ACCEPT, V_REJECT, V_UNKNOWN } verdict;

static const char *vname(verdict v) { return v == V_ACCEPT ? "accept" : v == V_REJECT ? "reject" : "unknown"; }

/* Runs ORACLE MODEL; returns llama.cpp's verdict, the RESULT word in result
 * and its first ERR/ABORT line in why. */
static verdict run_oracle(const char *oracle, const char *model, int no_mmap, char *result, size_t rcap, char *why,
                          size_t wcap) {
    snprintf(result, rcap, "none");
    why[0] = 0;
    int fds[2];
    if (pipe(fds) != 0) {
        snprintf(why, wcap, "pipe: %s", strerror(errno));
        return V_UNKNOWN;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, wcap, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return V_UNKNOWN;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        if (no_mmap)
            execl(oracle, oracle, "--no-repack", "--no-mmap", model, (char *)NULL);
        else
            execl(oracle, oracle, "--no-repack", model, (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", oracle, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    cbuf out = {0};
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
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) continue;
        uint8_t tmp[4096];
        ssize_t got = read(fds[0], tmp, sizeof tmp);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        cbuf_put(&out, tmp, (size_t)got);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    cbuf_u8(&out, 0);

    /* The last RESULT line, and the first ERR or ABORT line. */
    verdict v = V_UNKNOWN;
    char *save = NULL;
    for (char *line = strtok_r((char *)out.p, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "RESULT ", 7) == 0) {
            snprintf(result, rcap, "%s", line + 7);
            v = strcmp(line + 7, "ok") == 0 ? V_ACCEPT : V_REJECT;
        } else if (!why[0] && (strncmp(line, "ERR ", 4) == 0 || strncmp(line, "ABORT ", 6) == 0)) {
            snprintf(why, wcap, "%s", line);
        }
    }
    if (timed_out) {
        snprintf(result, rcap, "timeout");
        v = V_UNKNOWN;
    } else if (v == V_UNKNOWN) {
        snprintf(why, wcap, "no RESULT line (exit status %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    /* "RESULT ok" with a failing exit status, or the reverse, is not a verdict. */
    if (v == V_ACCEPT && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) v = V_UNKNOWN;
    cbuf_free(&out);
    return v;
}

static verdict run_ours(const char *model, char *why, size_t wcap) {
    ggufmap_model *m = NULL;
    ggufmap_error err;
    ggufmap_error_clear(&err);
    int rc = ggufmap_model_open(model, 0, &m, &err);
    if (rc == GGUFMAP_OK) {
        why[0] = 0;
        ggufmap_model_close(m);
        return V_ACCEPT;
    }
    snprintf(why, wcap, "%s: %s", ggufmap_status_name(rc), err.message);
    if (m) {
        /* The API promises NULL on failure; a non-NULL model is a bug. */
        snprintf(why, wcap, "ggufmap_model_open failed but left a model");
        ggufmap_model_close(m);
        return V_UNKNOWN;
    }
    /* Only a format verdict counts as a reject; an I/O or memory failure
     * says nothing about the file (a missing shard is ENOTFOUND or EIO, and
     * is a reject: the model is incomplete). */
    return rc == GGUFMAP_ENOMEM || rc == GGUFMAP_EINVAL ? V_UNKNOWN : V_REJECT;
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
    int passed = 0, failed = 0, arch = 0, warnings = 0, n_accept = 0, n_reject = 0;
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
            failed++;
            continue;
        }
        char ours_why[1200], llama_why[1200], result[64];
        verdict ours = run_ours(path, ours_why, sizeof ours_why);
        /* "mmap" cases are valid GGUF whose data llama.cpp's CPU backend
         * cannot wrap in place (an address not 32-byte aligned aborts the
         * default mmap load): the file's verdict is the one of a load
         * without mmap, and the default load must show the abort. */
        int is_mmap = strcmp(expect, "mmap") == 0;
        verdict llama = run_oracle(argv[2], path, is_mmap, result, sizeof result, llama_why, sizeof llama_why);
        if (is_mmap) {
            char r2[64], w2[1200];
            verdict with_mmap = run_oracle(argv[2], path, 0, r2, sizeof r2, w2, sizeof w2);
            printf("    default mmap load: RESULT %s%s%s\n", r2, w2[0] ? "; " : "", w2);
            if (with_mmap != V_REJECT) {
                printf("WARNING case %s: the mmap load was expected to abort\n", name);
                warnings++;
            }
            expect = "accept";
        }
        int is_arch = strcmp(expect, "arch") == 0;
        const char *tag;
        if (is_arch) {
            tag = "ARCH-LEVEL (not counted)";
            arch++;
        } else if (ours != V_UNKNOWN && ours == llama) {
            tag = "AGREE";
            passed++;
            if (llama == V_ACCEPT) n_accept++;
            else n_reject++;
        } else {
            tag = "DISAGREE";
            failed++;
        }
        printf("case %s ours=%s llama=%s %s\n", name, vname(ours), vname(llama), tag);
        if (ours != V_ACCEPT) printf("    ours: %s\n", ours_why);
        if (llama != V_ACCEPT) printf("    llama: RESULT %s%s%s\n", result, llama_why[0] ? "; " : "", llama_why);
        verdict want = strcmp(expect, "accept") == 0 ? V_ACCEPT : V_REJECT;
        if (llama != want) {
            printf("WARNING case %s: written to be '%s' but llama.cpp says %s\n", name, expect, vname(llama));
            warnings++;
        }
        fflush(stdout);
    }
    fclose(f);
    int total = passed + failed;
    printf("# %d counted cases (%d accepted and %d rejected by both), %d arch-level cases not counted, %d warnings\n",
           total, n_accept, n_reject, arch, warnings);
    if (total < MIN_CASES)
        printf("# only %d cases ran, at least %d are required\n", total, MIN_CASES);
    printf("%d passed, %d failed\n", passed, failed);
    return failed || total < MIN_CASES ? 1 : 0;
}

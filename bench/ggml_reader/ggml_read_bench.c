/*
 * ggml-read-bench: time ggml's own GGUF reader (gguf_init_from_file with
 * no_alloc = true) over one or more files (e.g. all shards of a split
 * model), repeated N times. Baseline for `ggufmap inspect --json`.
 *
 * usage: ggml-read-bench [-n N] [--meta] FILE...
 *   -n N    repetitions (default 5)
 *   --meta  also build the ggml tensor-metadata context, as llama.cpp's
 *           loader does (params.ctx != NULL, still no_alloc)
 *
 * Output (stdout):
 *   rep=I seconds=S          one line per repetition (all files read once)
 *   best=S mean=S reps=N files=F n_tensors=T n_kv=K
 * Exit 1 if ggml rejects a file, 2 on usage errors.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml.h"
#include "gguf.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN)
        fputs(text, stderr);
}

int main(int argc, char **argv)
{
    long reps = 5;
    bool meta = false;
    int first_file = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
            char *end;
            reps = strtol(argv[++i], &end, 10);
            if (*end || reps < 1) {
                fprintf(stderr, "ggml-read-bench: -n needs a positive integer\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--meta") == 0) {
            meta = true;
        } else if (strcmp(argv[i], "--") == 0) {
            first_file = i + 1;
            break;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: ggml-read-bench [-n N] [--meta] FILE...\n");
            return 2;
        } else {
            first_file = i;
            break;
        }
    }
    if (first_file >= argc) {
        fprintf(stderr, "usage: ggml-read-bench [-n N] [--meta] FILE...\n");
        return 2;
    }
    ggml_log_set(quiet, NULL);

    double best = 0.0, sum = 0.0;
    int64_t n_tensors = 0, n_kv = 0;
    for (long r = 0; r < reps; r++) {
        int64_t nt = 0, nk = 0;
        double t0 = now_s();
        for (int i = first_file; i < argc; i++) {
            struct ggml_context *gctx = NULL;
            struct gguf_init_params ip = { .no_alloc = true, .ctx = meta ? &gctx : NULL };
            struct gguf_context *g = gguf_init_from_file(argv[i], ip);
            if (!g) {
                fprintf(stderr, "ggml-read-bench: ggml rejected %s\n", argv[i]);
                return 1;
            }
            nt += gguf_get_n_tensors(g);
            nk += gguf_get_n_kv(g);
            gguf_free(g);
            if (gctx)
                ggml_free(gctx);
        }
        double dt = now_s() - t0;
        printf("rep=%ld seconds=%.6f\n", r, dt);
        if (r == 0 || dt < best)
            best = dt;
        sum += dt;
        n_tensors = nt;
        n_kv = nk;
    }
    printf("best=%.6f mean=%.6f reps=%ld files=%d n_tensors=%" PRId64 " n_kv=%" PRId64 "\n", best,
           sum / (double)reps, reps, argc - first_file, n_tensors, n_kv);
    return 0;
}

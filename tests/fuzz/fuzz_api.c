/*
 * fuzz_api.c - the fuzz harness: one GGUF header through what every command
 * does with it, by the public API.
 *
 *   fuzz_api WORKDIR FILE...           each FILE once (AFL's @@; replaying a crash)
 *   fuzz_api WORKDIR                   built with afl-clang-fast: AFL++'s persistent
 *                                      mode, inputs from its shared memory
 *   fuzz_api --mutate SEEDS N SEED WORKDIR
 *                                      N mutants of the files in SEEDS, chosen
 *                                      and mutated by a generator seeded with
 *                                      SEED (the same run every time)
 *
 * Workload, per input: open the model as the remote commands do (header
 * only), inspect it (text and JSON), then for the CPU, a Metal device with
 * every layer, a CUDA device with one layer and -ot overrides, three CUDA
 * devices (-dev CUDA2,CUDA0,CUDA1 -ts 1,0,3, every layer: pipeline
 * parallelism, a GPU without layers) and two with -sm none -mg 1: place it
 * (and read the refusal), plan it (text, JSON, buffer lines; on several
 * GPUs each one's working set against its own limit and fit's suggestions
 * under --limit CUDA2=8M,CUDA1=32M --mem 1G), fit a context on it (text
 * and JSON, and the largest context under the limits), and once
 * repack --dry-run (the file is grown to the size its header gives, with
 * holes, when that is at most 64 MiB).  Output goes to /dev/null: only
 * crashes, sanitizer reports and hangs matter, and they end the process.
 *
 * Data structure of the mutator: the seeds in memory, and for each the
 * places of its integer key values (found by reading it with the library),
 * where "interesting" values (0, 1, 2^31, 2^32 - 1, ...) go most often;
 * then bit flips, random words and truncation anywhere in the header.
 * docs/hardening.md: the short run in ctest and the long AFL++ run.
 */
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"

#ifdef __AFL_FUZZ_TESTCASE_LEN
__AFL_FUZZ_INIT();
#endif

/* ------------------------------------------------------------------------ */
/* One input                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct stats {
    unsigned inputs, opened, placed, refused, fitted, repacked;
} stats;

static FILE *devnull;

/* The end of the tensor data the header declares (0 when there is none). */
static uint64_t data_end(const ggufmap_model *m) {
    const ggufmap_source *s = ggufmap_model_shard(m, 0);
    uint64_t end = 0;
    for (int64_t i = 0; i < ggufmap_source_n_tensors(s); i++) {
        const ggufmap_tensor *t = ggufmap_source_tensor(s, i);
        if (t->offset + t->size > end) end = t->offset + t->size;
    }
    return end;
}

/* Several GPUs (-dev/-ts/-sm/-mg): plan's per-GPU working set against
 * per-GPU limits (--limit D=SIZE), and fit's suggestions (a -ts among them). */
static void per_gpu(const ggufmap_model *m, const ggufmap_placement_opts *po, const ggufmap_plan *plan,
                    const ggufmap_fit_opts *fo) {
    const ggufmap_placement *pl = ggufmap_plan_placement(plan);
    uint64_t llama_bytes, planned_bytes;
    for (uint32_t i = 0; i < ggufmap_placement_n_gpus(pl); i++)
        ggufmap_plan_gpu_working_set(plan, i, &llama_bytes, &planned_bytes);
    (void)ggufmap_plan_fits_limits(plan, NULL, fo->limit, fo->gpu_limits, false);
    (void)ggufmap_plan_fits_limits(plan, NULL, 0, fo->gpu_limits, true);
    ggufmap_plan_opts popts;
    ggufmap_plan_opts_init(&popts);
    ggufmap_fit_suggestion sug[8];
    uint32_t n = 0;
    ggufmap_error err;
    if (ggufmap_fit_suggest(m, po, &popts, fo, sug, 8, &n, &err) != GGUFMAP_OK) n = 0;
    for (uint32_t i = 0; i < n; i++) fprintf(devnull, "%s %d\n", sug[i].flags, sug[i].fits);
}

/* plan and fit under one placement; with multi, the per-GPU checks too */
static void plan_and_fit(const ggufmap_model *m, const ggufmap_placement_opts *po, bool multi, stats *st) {
    ggufmap_error err;
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_fit *fit = NULL;
    if (ggufmap_placement_build(m, po, &pl, &err) != GGUFMAP_OK) return;
    st->placed++;
    if (ggufmap_placement_refusal(pl)) st->refused++;
    ggufmap_plan_opts popts;
    ggufmap_plan_opts_init(&popts);
    if (ggufmap_plan_build(pl, &popts, &plan, &err) == GGUFMAP_OK) {
        ggufmap_report_opts ro;
        ggufmap_report_opts_init(&ro);
        ggufmap_report_plan(devnull, plan, &ro);
        ro.flags = GGUFMAP_REPORT_JSON;
        ggufmap_report_plan(devnull, plan, &ro);
        ro.flags = GGUFMAP_REPORT_BUFFER_LINES;
        ggufmap_report_plan(devnull, plan, &ro);
        ggufmap_fit_opts fo;
        ggufmap_fit_opts_init(&fo);
        fo.n_ctx = 512;
        fo.n_seq_max = 2;
        fo.limit = 64ull << 20;
        if (multi) { /* --limit CUDA2=8M,CUDA1=32M --mem 1G */
            fo.gpu_limits[2] = 8ull << 20;
            fo.gpu_limits[1] = 32ull << 20;
            fo.mem = 1ull << 30;
            per_gpu(m, po, plan, &fo);
        }
        if (ggufmap_fit_build(plan, &fo, &fit, &err) == GGUFMAP_OK) {
            st->fitted++;
            ggufmap_fit_report_opts fr = {.json = false};
            uint32_t best = 0;
            if (ggufmap_fit_max_ctx(plan, &fo, false, &best, &err) == GGUFMAP_OK) {
                fr.searched = true;
                fr.max_ctx = fr.max_ctx_planned = best;
            }
            ggufmap_fit_report(devnull, fit, &fr);
            fr.json = true;
            ggufmap_fit_report(devnull, fit, &fr);
        }
    }
    ggufmap_fit_free(fit);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
}

/* repack --dry-run, on the file grown to its declared size (holes) */
static void repack_dry_run(const char *path, uint64_t end, stats *st) {
    if (end > (64ull << 20)) return;
    int fd = open(path, O_WRONLY);
    if (fd < 0) return;
    struct stat sb;
    int ok = fstat(fd, &sb) == 0 && (uint64_t)sb.st_size <= end ? ftruncate(fd, (off_t)end) == 0 : 1;
    close(fd);
    if (!ok) return;
    ggufmap_repack_opts ro;
    ggufmap_repack_opts_init(&ro);
    ro.dry_run = true;
    ro.n_threads = 1;
    ggufmap_repack_result *res = NULL;
    ggufmap_error err;
    if (ggufmap_repack(path, NULL, &ro, &res, &err) == GGUFMAP_OK) st->repacked++;
    ggufmap_repack_result_free(res);
}

static void fuzz_one(const char *path, stats *st) {
    static const ggufmap_override cuda_ot[] = {{"ffn_(up|down|gate)", "CPU"}, {"blk\\.1\\.", "CUDA0"}};
    ggufmap_error err;
    ggufmap_model *m = NULL;
    st->inputs++;
    if (ggufmap_model_open(path, GGUFMAP_OPEN_HEADER_ONLY, &m, &err) != GGUFMAP_OK) return;
    st->opened++;
    ggufmap_report_inspect(devnull, m, GGUFMAP_REPORT_METADATA);
    ggufmap_report_inspect(devnull, m, GGUFMAP_REPORT_JSON);
    ggufmap_placement_opts po;
    ggufmap_placement_opts_init(&po);
    po.cpu = GGUFMAP_CPU_X86_AVX2;
    plan_and_fit(m, &po, false, st);
    po.device = GGUFMAP_DEVICE_METAL;
    po.cpu = GGUFMAP_CPU_ARM64;
    po.n_gpu_layers = -1;
    plan_and_fit(m, &po, false, st);
    po.device = GGUFMAP_DEVICE_CUDA;
    po.cpu = GGUFMAP_CPU_X86;
    po.n_gpu_layers = 1;
    po.overrides = cuda_ot;
    po.n_overrides = 2;
    plan_and_fit(m, &po, false, st);
    /* -dev CUDA2,CUDA0,CUDA1 -ts 1,0,3 -ngl all: a GPU without layers, pipeline parallelism */
    ggufmap_placement_opts_init(&po);
    po.device = GGUFMAP_DEVICE_CUDA;
    po.cpu = GGUFMAP_CPU_X86;
    po.n_gpus = 3;
    po.gpus[0] = 2, po.gpus[1] = 0, po.gpus[2] = 1;
    po.tensor_split[0] = 1, po.tensor_split[2] = 3;
    po.n_gpu_layers = -1;
    plan_and_fit(m, &po, true, st);
    /* -dev CUDA0,CUDA1 -sm none -mg 1 -ngl 2 */
    po.n_gpus = 2;
    po.gpus[0] = 0, po.gpus[1] = 1, po.gpus[2] = 0;
    po.tensor_split[0] = po.tensor_split[2] = 0;
    po.split_mode = GGUFMAP_SPLIT_NONE;
    po.main_gpu = 1;
    po.n_gpu_layers = 2;
    plan_and_fit(m, &po, true, st);
    uint64_t end = data_end(m);
    ggufmap_model_free(m);
    repack_dry_run(path, end, st);
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    *n = len;
    return buf;
}

static int spit(const char *path, const uint8_t *data, size_t n) {
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(data, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* The mutator                                                               */
/* ------------------------------------------------------------------------ */

static uint64_t rng;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct spot {
    uint32_t at;    /* byte offset of an integer */
    uint8_t size;   /* 1, 2, 4 or 8 */
    bool structure; /* an array's count or a tensor's dimension (the file rarely opens after) */
} spot;

typedef struct seed {
    uint8_t *bytes;
    size_t n, header;  /* length, and where its tensor data would begin */
    spot *spots;
    size_t n_spots;
} seed;

static void add_spot(seed *sd, uint64_t at, uint8_t size, bool structure) {
    spot *grown = realloc(sd->spots, (sd->n_spots + 1) * sizeof *sd->spots);
    if (!grown) return;
    sd->spots = grown;
    sd->spots[sd->n_spots++] = (spot){(uint32_t)at, size, structure};
}

/* The integer values of seed's keys (scalars, array elements and counts):
 * where the hyperparameters are; and each tensor info's dimensions. */
static void find_spots(seed *sd, const char *path) {
    ggufmap_source *s;
    ggufmap_error err;
    sd->header = sd->n;
    if (ggufmap_source_open(path, GGUFMAP_OPEN_HEADER_ONLY, &s, &err) != GGUFMAP_OK) return;
    const uint8_t *base = ggufmap_source_bytes(s);
    sd->header = ggufmap_source_data_offset(s) < sd->n ? ggufmap_source_data_offset(s) : sd->n;
    for (int64_t i = 0; i < ggufmap_source_n_kv(s); i++) {
        const ggufmap_kv *kv = ggufmap_source_kv(s, i);
        int32_t t = kv->type == GGUFMAP_VALUE_ARRAY ? kv->elem_type : kv->type;
        uint32_t size = t == GGUFMAP_VALUE_STRING ? 0 : ggufmap_value_type_size(t);
        uint64_t count = kv->type == GGUFMAP_VALUE_ARRAY ? kv->count : 1;
        if (size == 0 || t == GGUFMAP_VALUE_FLOAT32 || t == GGUFMAP_VALUE_FLOAT64) continue;
        const uint64_t v = (uint64_t)(kv->value - base);
        if (kv->type == GGUFMAP_VALUE_ARRAY) add_spot(sd, v - 8, 8, true); /* the element count */
        for (uint64_t k = 0; k < count && k < 8; k++) add_spot(sd, v + k * size, (uint8_t)size, false);
    }
    for (int64_t i = 0; i < ggufmap_source_n_tensors(s); i++) { /* name, n_dims u32, ne[n_dims] i64, type u32 */
        const ggufmap_tensor *t = ggufmap_source_tensor(s, i);
        const uint64_t dims = (uint64_t)((const uint8_t *)t->name - base) + t->name_len;
        add_spot(sd, dims, 4, true);
        for (uint32_t d = 0; d < t->n_dims; d++) add_spot(sd, dims + 4 + 8 * d, 8, true);
        add_spot(sd, dims + 4 + 8ull * t->n_dims, 4, true);
    }
    ggufmap_source_free(s);
}

static const uint64_t INTERESTING[] = {0, 1, 2, 3, 4, 7, 8, 16, 255, 256, 4096, 65535, 65536, 0x7fffffffull,
                                       0x80000000ull, 0xfffffffeull, 0xffffffffull, 0x100000000ull,
                                       0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull, 1677721616};

static void put(uint8_t *m, size_t n, size_t at, uint64_t v, int size) {
    for (int k = 0; k < size && at + (size_t)k < n; k++) m[at + (size_t)k] = (uint8_t)(v >> (8 * k));
}

/* One mutant of sd into m (n bytes at most); its length. */
static size_t mutate(const seed *sd, uint8_t *m) {
    memcpy(m, sd->bytes, sd->n);
    size_t len = sd->n, header = sd->header ? sd->header : 1;
    int edits = 1 + (int)(rnd() % 3);
    for (int e = 0; e < edits; e++) {
        size_t at = (size_t)(rnd() % (header < len ? header : len)); /* a truncation shortens what follows */
        uint64_t pick = rnd() % 20;
        if (pick < 14 && sd->n_spots) { /* a hyperparameter: an interesting value, or off by a little */
            const spot *sp = &sd->spots[rnd() % sd->n_spots];
            for (int tries = 0; sp->structure && tries < 4 && rnd() % 8; tries++) /* mostly values */
                sp = &sd->spots[rnd() % sd->n_spots];
            uint64_t v = INTERESTING[rnd() % (sizeof INTERESTING / sizeof INTERESTING[0])];
            if (rnd() % 4 == 0) v = (uint64_t)(sd->bytes[sp->at] + (rnd() % 5) - 2);
            put(m, len, sp->at, v, sp->size);
        } else if (pick < 17) {
            m[at] ^= (uint8_t)(1u << (rnd() % 8));
        } else if (pick < 19) {
            put(m, len, at, INTERESTING[rnd() % (sizeof INTERESTING / sizeof INTERESTING[0])], 1 << (rnd() % 4));
        } else {
            len = at + 1 + (size_t)(rnd() % (len - at));
        }
    }
    return len;
}

static int run_mutants(const char *dir, unsigned long n, uint64_t seed_value, const char *work, stats *st) {
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 2;
    }
    seed *seeds = NULL;
    size_t n_seeds = 0, max_len = 0;
    struct dirent *e;
    char path[4096], in[4096];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        seeds = realloc(seeds, (n_seeds + 1) * sizeof *seeds);
        seed *sd = &seeds[n_seeds];
        memset(sd, 0, sizeof *sd);
        if (!(sd->bytes = slurp(path, &sd->n)) || sd->n == 0) continue;
        find_spots(sd, path);
        if (sd->n > max_len) max_len = sd->n;
        n_seeds++;
    }
    closedir(d);
    if (n_seeds == 0) {
        fprintf(stderr, "fuzz_api: no seeds in %s\n", dir);
        return 2;
    }
    /* readdir's order is the file system's: sort by content for the same run everywhere */
    for (size_t i = 1; i < n_seeds; i++)
        for (size_t j = i; j > 0 && (seeds[j - 1].n > seeds[j].n ||
                                     (seeds[j - 1].n == seeds[j].n && memcmp(seeds[j - 1].bytes, seeds[j].bytes,
                                                                             seeds[j].n) > 0)); j--) {
            seed t = seeds[j];
            seeds[j] = seeds[j - 1];
            seeds[j - 1] = t;
        }
    rng = seed_value ? seed_value : 1;
    int rc = 0;
    snprintf(in, sizeof in, "%s/mutant.gguf", work);
    uint8_t *m = malloc(max_len);
    const bool trace = getenv("FUZZ_API_TRACE") != NULL; /* each input's number, before it runs */
    for (unsigned long i = 0; i < n && m; i++) {
        if (trace) fprintf(stderr, "fuzz_api: input %lu\n", i);
        const seed *sd = &seeds[rnd() % n_seeds];
        size_t len = i < n_seeds ? (memcpy(m, seeds[i].bytes, seeds[i].n), seeds[i].n) : mutate(sd, m);
        if (spit(in, m, len)) {
            perror(in);
            rc = 2;
            break;
        }
        fuzz_one(in, st);
    }
    free(m);
    for (size_t i = 0; i < n_seeds; i++) {
        free(seeds[i].bytes);
        free(seeds[i].spots);
    }
    free(seeds);
    return rc;
}

int main(int argc, char **argv) {
    stats st = {0};
    char in[4096];
    int rc = 0;
    devnull = fopen("/dev/null", "w");
    if (!devnull) return 2;
    time_t t0 = time(NULL);
    if (argc == 6 && strcmp(argv[1], "--mutate") == 0) {
        mkdir(argv[5], 0755);
        rc = run_mutants(argv[2], strtoul(argv[3], NULL, 10), strtoull(argv[4], NULL, 10), argv[5], &st);
#ifdef __AFL_FUZZ_TESTCASE_LEN
    } else if (argc == 2 && argv[1][0] != '-') { /* the library keeps no state: one process, many inputs */
        mkdir(argv[1], 0755);
        snprintf(in, sizeof in, "%s/input.gguf", argv[1]);
        __AFL_INIT();
        const unsigned char *buf = __AFL_FUZZ_TESTCASE_BUF;
        while (__AFL_LOOP(1000)) {
            if (spit(in, buf, (size_t)__AFL_FUZZ_TESTCASE_LEN) == 0) fuzz_one(in, &st);
        }
#endif
    } else if (argc >= 3 && argv[1][0] != '-') {
        mkdir(argv[1], 0755);
        snprintf(in, sizeof in, "%s/input.gguf", argv[1]);
        for (int i = 2; i < argc; i++) { /* a private copy: repack's dry run grows the file */
            size_t n;
            uint8_t *bytes = slurp(argv[i], &n);
            if (!bytes || spit(in, bytes, n)) rc = 2;
            else fuzz_one(in, &st);
            free(bytes);
        }
    } else {
        fprintf(stderr, "usage: fuzz_api WORKDIR FILE... | fuzz_api --mutate SEEDS N SEED WORKDIR\n");
        return 2;
    }
    printf("fuzz_api: %u inputs, %u opened, %u placements (%u refused as llama.cpp refuses), %u fits, %u repack "
           "dry runs, %lds\n", st.inputs, st.opened, st.placed, st.refused, st.fitted, st.repacked,
           (long)(time(NULL) - t0));
    fclose(devnull);
    return rc;
}

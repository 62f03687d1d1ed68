/*
 * cmd_repack.c - `ggufmap repack MODEL -o OUT [placement flags] [--order O]`:
 * rewrites every shard with the tensors reordered so llama.cpp maps nothing
 * foreign, prints the GPU working set and the CPU side before and after (a
 * verdict under --limit), and writes safely (see ggufmap/repack.h).  The
 * output paths are checked before any analysis, so a mistyped -o costs
 * nothing; a model that is already tight is not written unless --force.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"
#include "commands.h"
#include "json.h"
#include "placement_args.h"
#include "util.h"

enum { OPT_OUTPUT = 'o', OPT_ORDER = 0x100, OPT_DRY_RUN, OPT_FORCE, OPT_MOVE, OPT_THREADS, OPT_COPY, OPT_LIMIT };

static const cli_option repack_options[] = {
    {OPT_OUTPUT, "-o, --output", "OUT", "@file",
     "the output: one file at OUT (.gguf added when missing), or for an n-shard model OUT-00001-of-0000n.gguf ... "
     "(OUT with or without .gguf); no output path may exist"},
    {OPT_ORDER, "--order", "ORDER", "auto canonical moe cpu-last",
     "auto (default: the fewest foreign bytes over the cases), canonical (input, blocks by layer, output: every "
     "-ngl), moe (input, experts by layer, other block tensors, output: --cpu-moe and every --n-cpu-moe), cpu-last "
     "(the given placement's GPU tensors first, CPU ones after)"},
    {OPT_MOVE, "--move-across-shards", NULL, NULL, "let tensors change shard (the shard count is kept)"},
    {OPT_DRY_RUN, "--dry-run", NULL, NULL,
     "print the figures and write nothing (-o not needed; with -o, warns about what the real run would refuse)"},
    {OPT_FORCE, "--force", NULL, NULL, "write even when repacking gains nothing (the model is already tight)"},
    {OPT_LIMIT, "--limit", "SIZE", NULL, "a GPU working-set limit (96G): a verdict for every placement, after"},
    PAGE_OPTION("16K with metal and for the family, else 1B"),
    {OPT_THREADS, "--threads", "N", NULL, "copy and check workers (default: CPUs, at most 4)"},
    {OPT_COPY, "--copy", "MODE", "auto kernel write",
     "who writes the bytes read for the hash: auto (default: copy_file_range where the file system shares blocks "
     "or copies on the server: Btrfs, XFS, bcachefs, ZFS, NFS, SMB; write() elsewhere), kernel (copy_file_range "
     "where the kernel takes it), write (always write())"},
    {OPT_JSON, "--json", NULL, NULL, "the ggufmap.repack/1 document (docs/json.md) instead of the text"},
    {OPT_PROGRESS, "--progress", NULL, NULL, "a progress line on stderr even when it is not a terminal"},
    {OPT_NO_PROGRESS, "--no-progress", NULL, NULL, "no progress line, even on a terminal"},
    {OPT_QUIET, "-q, --quiet", NULL, NULL, "print nothing but errors"},
};
static const cli_group repack_group = CLI_GROUP(NULL, repack_options);
static const cli_group *const repack_groups[] = {&repack_group, &placement_group};

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct repack_args {
    placement_args placement;
    planning_args planning;
    cli_common common;
    ggufmap_repack_opts ro;
    const char *out;
    bool force;
    uint64_t limit;
    const char *model;
    ggufmap_repack_recovery recovered; /* what killed repacks had left, settled before the names are checked */
} repack_args;

static int apply(void *ctx, int code, const char *value) {
    repack_args *a = ctx;
    bool handled;
    int rc = placement_args_apply(&a->placement, code, value, "repack", &handled);
    if (!handled) rc = planning_args_apply(&a->planning, code, value, "repack", &handled);
    if (handled) return rc;
    cli_common_apply(&a->common, code, &handled);
    long n;
    switch (code) {
    case OPT_OUTPUT: a->out = value; return EXIT_OK;
    case OPT_ORDER:
        if (ggufmap_order_parse(value, &a->ro.order) != GGUFMAP_OK)
            return cli_usage_error("repack", "--order %s: expected auto, canonical, moe or cpu-last", value);
        return EXIT_OK;
    case OPT_COPY:
        if (ggufmap_copy_mode_parse(value, &a->ro.copy) != GGUFMAP_OK)
            return cli_usage_error("repack", "--copy %s: expected auto, kernel or write", value);
        return EXIT_OK;
    case OPT_THREADS:
        if (parse_count(value, 16, &n) || n < 1) return cli_usage_error("repack", "--threads %s: expected 1..16", value);
        a->ro.n_threads = (unsigned)n;
        return EXIT_OK;
    case OPT_DRY_RUN: a->ro.dry_run = true; return EXIT_OK;
    case OPT_FORCE: a->force = true; return EXIT_OK;
    case OPT_MOVE: a->ro.move_across_shards = true; return EXIT_OK;
    case OPT_LIMIT: return parse_size_option("repack", "--limit", value, 0, &a->limit);
    default: return EXIT_OK;
    }
}

/* The placement to make tight (NULL: the family, on Metal) and the page. */
static void settle_placement(repack_args *a) {
    ggufmap_device device = a->placement.any ? a->placement.opts.device : GGUFMAP_DEVICE_METAL;
    placement_args_finish(&a->placement);
    planning_args_finish(&a->planning, device, &a->ro.plan);
    if (a->placement.any) a->ro.placement = &a->placement.opts;
    a->ro.only_if_gain = !a->force;
}

/* ------------------------------------------------------------------------ */
/* The output paths, checked before any analysis                             */
/* ------------------------------------------------------------------------ */

/* Why the real run would refuse path (shard i of the output), or "".  The
 * input's shards are compared by device and inode, whatever their names. */
static void path_problem(const char *path, const ggufmap_model *in, char *why, size_t cap) {
    struct stat st, dir_st;
    char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
    why[0] = '\0';
    if (!dir) return;
    if (!slash) snprintf(dir, 2, ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    if (stat(dir, &dir_st) != 0)
        snprintf(why, cap, "the output directory %s does not exist", dir);
    else if (!S_ISDIR(dir_st.st_mode))
        snprintf(why, cap, "%s is not a directory", dir);
    else if (access(dir, W_OK | X_OK) != 0)
        snprintf(why, cap, "the output directory %s is not writable: %s", dir, strerror(errno));
    else if (lstat(path, &st) == 0) {
        int shard = -1;
        for (uint32_t s = 0; s < ggufmap_model_n_shards(in); s++) {
            struct stat is;
            if (fstat(ggufmap_source_fd(ggufmap_model_shard(in, s)), &is) == 0 && is.st_dev == st.st_dev &&
                is.st_ino == st.st_ino)
                shard = (int)s;
        }
        if (shard >= 0) snprintf(why, cap, "%s exists: it is the input model (shard %d); refusing to overwrite it", path, shard + 1);
        else snprintf(why, cap, "%s exists; refusing to overwrite it (choose another -o)", path);
    }
    free(dir);
}

/* What repacks killed earlier left in the output's folder (their partial
 * shards would read as "exists"), settled and said before the names are
 * checked.  A dry run writes nothing and settles nothing. */
static void settle_killed(repack_args *a) {
    ggufmap_error err;
    const ggufmap_repack_recovery *r = &a->recovered;
    char b[32];
    if (ggufmap_repack_recover(a->out, &a->recovered, &err) != GGUFMAP_OK || !r->killed || a->common.json ||
        a->common.quiet)
        return;
    printf("cleaned up after %u killed repack%s in this folder: %u file%s removed (%s), %u whole output%s kept\n",
           r->killed, r->killed == 1 ? "" : "s", r->removed_files, r->removed_files == 1 ? "" : "s",
           ggufmap_format_bytes(b, sizeof b, r->removed_bytes), r->kept_outputs, r->kept_outputs == 1 ? "" : "s");
    fflush(stdout);
}

/* Every output path: a problem is an error, or in a dry run a warning. */
static int check_outputs(const repack_args *a, const ggufmap_model *in) {
    uint32_t n = ggufmap_model_n_shards(in);
    char path[4096], why[4400];
    int rc = EXIT_OK;
    for (uint32_t i = 0; i < n && rc == EXIT_OK; i++) {
        if (ggufmap_repack_output_path(path, sizeof path, a->out, i, n) >= (int)sizeof path)
            return cli_usage_error("repack", "-o %s: too long", a->out);
        path_problem(path, in, why, sizeof why);
        if (!why[0]) continue;
        if (!a->ro.dry_run) return cli_fail("repack", EXIT_BAD_INPUT, why);
        fprintf(stderr, "ggufmap repack: warning: the real run would refuse: ");
        ggufmap_fputs_escaped(stderr, why, strlen(why));
        fputc('\n', stderr);
    }
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Figures                                                                   */
/* ------------------------------------------------------------------------ */

static const char *size(char *buf, uint64_t bytes) { return ggufmap_format_bytes(buf, 32, bytes); }

static void print_case(const repack_args *a, const char *label, const ggufmap_repack_case *c, bool cpu) {
    char b[6][32];
    printf("%-16s %12s %12s", label, size(b[0], c->gpu_before), size(b[1], c->gpu_after));
    if (cpu) printf(" %12s %12s", size(b[2], c->cpu_before), size(b[3], c->cpu_after));
    printf(" %14s %14s", size(b[4], c->foreign_before), size(b[5], c->foreign_after));
    if (a->limit) printf("  %s", c->gpu_after <= a->limit ? "fits" : "EXCEEDS");
    if (c->worse) printf("  WORSE");
    putchar('\n');
}

/* "+32.00 KiB" for a figure that grows, into buf; "" otherwise. */
static const char *growth(char *buf, const char *what, uint64_t before, uint64_t after) {
    char b[32];
    if (after > before) snprintf(buf, 64, ", %s +%s", what, size(b, after - before));
    else buf[0] = '\0';
    return buf;
}

/* Every placement the repack makes worse, named with what grows. */
static void print_worse(const ggufmap_repack_result *r) {
    char g[64], c[64], f[64], line[200];
    if (!r->n_worse) {
        printf("no placement %s worse after the repack\n", r->n_cases == 1 ? "gets" : "of the family gets");
        return;
    }
    printf("worse after the repack (%u of %u placement%s):\n", r->n_worse, r->n_cases, r->n_cases == 1 ? "" : "s");
    for (uint32_t k = 0; k < r->n_cases; k++) {
        const ggufmap_repack_case *x = &r->cases[k];
        if (!x->worse) continue;
        snprintf(line, sizeof line, "%s%s%s", growth(g, "GPU", x->gpu_before, x->gpu_after),
                 growth(c, "CPU side", x->cpu_before, x->cpu_after), growth(f, "foreign", x->foreign_before, x->foreign_after));
        printf("  %s:%s\n", x->label, line + 1); /* worse: one figure grows, so line starts with ", " */
    }
}

static void print_cases(const repack_args *a, const ggufmap_repack_result *r) {
    bool gpu = !a->placement.any || a->placement.opts.device != GGUFMAP_DEVICE_CPU;
    printf("%-16s %12s %12s", "placement", gpu ? "GPU before" : "memory before", gpu ? "GPU after" : "memory after");
    if (gpu) printf(" %12s %12s", "CPU before", "CPU after");
    printf(" %14s %14s%s\n", "foreign before", "foreign after", a->limit ? "  limit" : "");
    for (uint32_t k = 0; k < r->n_cases; k++) print_case(a, r->cases[k].label, &r->cases[k], gpu);
    if (r->n_cases > 1) {
        char b[2][32];
        printf("%-16s %12s %12s", "total", "", "");
        if (gpu) printf(" %12s %12s", "", "");
        printf(" %14s %14s\n", size(b[0], r->foreign_before), size(b[1], r->foreign_after));
    }
    printf("(GPU: llama.cpp's working set, page-aligned, as plan --limit counts it; with no layer on the GPU, every "
           "buffer; CPU: the CPU side; foreign: bytes mapped that other buffers own; WORSE: a figure grows)\n");
    print_worse(r);
}

static void print_verdict(const repack_args *a, const ggufmap_repack_result *r) {
    if (!a->limit || r->n_cases != 1) return;
    const ggufmap_repack_case *c = &r->cases[0];
    char b[5][32];
    uint64_t after = c->gpu_after, before = c->gpu_before, limit = a->limit;
    printf("verdict under the limit of %s: after repacking %s %s by %s; before %s %s by %s\n", size(b[0], limit),
           size(b[1], after), after <= limit ? "FITS" : "EXCEEDS", size(b[2], after <= limit ? limit - after : after - limit),
           size(b[3], before), before <= limit ? "FITS" : "EXCEEDS",
           size(b[4], before <= limit ? limit - before : before - limit));
}

/* Called by the library once the figures are known, before writing. */
static void report(void *ctx, const ggufmap_repack_result *r) {
    const repack_args *a = ctx;
    char b[4][32];
    if (a->common.quiet || a->common.json) return;
    printf("repack ");
    ggufmap_fputs_escaped(stdout, a->model, strlen(a->model));
    printf(": order %s", ggufmap_order_name(r->order));
    if (r->n_candidates > 1) {
        printf(" (auto: foreign bytes over the cases:");
        for (uint32_t k = 0; k < r->n_candidates; k++)
            printf("%s %s %s", k ? "," : "", ggufmap_order_name(r->candidates[k]), size(b[0], r->candidate_foreign[k]));
        printf(")");
    }
    putchar('\n');
    print_cases(a, r);
    print_verdict(a, r);
    printf("output: %u file%s, %s (%s of data to write, %s left as holes)\n", r->n_shards, r->n_shards == 1 ? "" : "s",
           size(b[0], r->file_bytes), size(b[1], r->data_bytes), size(b[2], r->hole_bytes));
    for (uint32_t s = 0; s < r->n_shards && r->paths; s++) {
        printf("  ");
        ggufmap_fputs_escaped(stdout, r->paths[s], strlen(r->paths[s]));
        putchar('\n');
    }
    printf("free space needed: %s (%s of data, %s of headers, and a margin of %s for the file system's own blocks: "
           "8 KiB a tensor, 16 MiB a file)\n",
           size(b[0], r->space_needed), size(b[1], r->data_bytes), size(b[2], r->space_headers), size(b[3], r->space_margin));
    fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* JSON and the end                                                          */
/* ------------------------------------------------------------------------ */

static void json_case(json *j, const ggufmap_repack_case *c, uint64_t limit) {
    json_begin_object(j);
    json_key(j, "label"), json_string(j, c->label);
    json_key(j, "gpu_before"), json_uint(j, c->gpu_before);
    json_key(j, "gpu_after"), json_uint(j, c->gpu_after);
    json_key(j, "cpu_before"), json_uint(j, c->cpu_before);
    json_key(j, "cpu_after"), json_uint(j, c->cpu_after);
    json_key(j, "mapped_before"), json_uint(j, c->mapped_before);
    json_key(j, "mapped_after"), json_uint(j, c->mapped_after);
    json_key(j, "foreign_before"), json_uint(j, c->foreign_before);
    json_key(j, "foreign_after"), json_uint(j, c->foreign_after);
    json_key(j, "worse"), json_bool(j, c->worse);
    json_key(j, "fits_after");
    limit ? json_bool(j, c->gpu_after <= limit) : json_null(j);
    json_end_object(j);
}

static void print_json(const repack_args *a, const ggufmap_repack_result *r) {
    json j;
    json_init(&j, stdout);
    json_begin_object(&j);
    json_key(&j, "schema"), json_string(&j, "ggufmap.repack/1");
    json_key(&j, "model"), json_string(&j, a->model);
    json_key(&j, "order"), json_string(&j, ggufmap_order_name(r->order));
    json_key(&j, "candidates");
    json_begin_array(&j);
    for (uint32_t k = 0; k < r->n_candidates; k++) {
        json_begin_object(&j);
        json_key(&j, "order"), json_string(&j, ggufmap_order_name(r->candidates[k]));
        json_key(&j, "foreign"), json_uint(&j, r->candidate_foreign[k]);
        json_end_object(&j);
    }
    json_end_array(&j);
    json_key(&j, "limit");
    a->limit ? json_uint(&j, a->limit) : json_null(&j);
    json_key(&j, "cases");
    json_begin_array(&j);
    for (uint32_t k = 0; k < r->n_cases; k++) json_case(&j, &r->cases[k], a->limit);
    json_end_array(&j);
    json_key(&j, "outputs");
    json_begin_array(&j);
    for (uint32_t s = 0; s < r->n_shards && r->paths; s++) json_string(&j, r->paths[s]);
    json_end_array(&j);
    json_key(&j, "file_bytes"), json_uint(&j, r->file_bytes);
    json_key(&j, "data_bytes"), json_uint(&j, r->data_bytes);
    json_key(&j, "hole_bytes"), json_uint(&j, r->hole_bytes);
    json_key(&j, "space_needed"), json_uint(&j, r->space_needed);
    json_key(&j, "no_gain"), json_bool(&j, r->no_gain);
    json_key(&j, "n_worse"), json_uint(&j, r->n_worse);
    json_key(&j, "dry_run"), json_bool(&j, a->ro.dry_run);
    json_key(&j, "written"), json_bool(&j, r->written);
    json_key(&j, "copy");
    r->written ? json_string(&j, r->used_copy_file_range ? "copy_file_range" : "pread/pwrite") : json_null(&j);
    json_key(&j, "seconds_copy"), json_double(&j, r->seconds_copy);
    json_key(&j, "seconds_sync"), json_double(&j, r->seconds_sync);
    json_key(&j, "recovered");
    json_begin_object(&j);
    json_key(&j, "killed_repacks"), json_uint(&j, a->recovered.killed + r->recovered.killed);
    json_key(&j, "removed_files"), json_uint(&j, a->recovered.removed_files + r->recovered.removed_files);
    json_key(&j, "removed_bytes"), json_uint(&j, a->recovered.removed_bytes + r->recovered.removed_bytes);
    json_key(&j, "kept_outputs"), json_uint(&j, a->recovered.kept_outputs + r->recovered.kept_outputs);
    json_end_object(&j);
    json_end_object(&j);
    json_finish(&j);
}

static void print_outcome(const repack_args *a, const ggufmap_repack_result *r) {
    char b[2][32];
    if (a->common.json) {
        print_json(a, r);
    } else if (a->common.quiet) {
        return;
    } else if (r->written) {
        double secs = r->seconds_copy > 0 ? r->seconds_copy : 1e-9;
        printf("written and verified: %u file%s, %s copied and read back in %.2f s (%s/s, %s), headers checked and "
               "synced in %.2f s\n",
               r->n_shards, r->n_shards == 1 ? "" : "s", size(b[0], r->data_bytes), r->seconds_copy,
               size(b[1], (uint64_t)((double)r->data_bytes / secs)),
               r->used_copy_file_range ? "copy_file_range" : "pread/pwrite", r->seconds_sync);
    } else if (a->placement.any && r->n_worse && !a->ro.dry_run) {
        printf("not written: the repack would make the placement given worse (above); --force writes it anyway\n");
    } else if (r->no_gain) {
        printf("nothing to gain: llama.cpp would map as much after repacking as before (the model is already as "
               "tight as repacking makes it); nothing written%s\n", a->ro.dry_run ? "" : " (--force writes it anyway)");
    } else {
        printf("dry run: nothing written\n");
    }
}

static volatile sig_atomic_t cancelled;
static void on_signal(int sig) { cancelled = sig; }

/* Once cleaned up, the signal's own ending, as the shell expects of a
 * command stopped by Ctrl-C (status 128 + N: 130 for SIGINT, 143 SIGTERM,
 * 129 SIGHUP), so a script's loop stops too; 128 + N if it returns. */
static void exit_by_signal(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    fflush(NULL);
    sigaction(sig, &dfl, NULL);
    raise(sig);
    exit(128 + sig);
}

/* The repack itself, with SIGINT, SIGTERM and SIGHUP turned into a clean stop. */
static int repack(repack_args *a, ggufmap_repack_result **res, ggufmap_error *err) {
    struct sigaction sa, old[3];
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    cancelled = 0;
    a->ro.cancel = &cancelled;
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);
    int st = ggufmap_repack(a->model, a->ro.dry_run ? NULL : a->out, &a->ro, res, err);
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
    return st;
}

static int run(const cli_command *cmd, int argc, char **argv) {
    repack_args *a = calloc(1, sizeof *a);
    if (!a || placement_args_init(&a->placement)) {
        free(a);
        return cli_usage_error(cmd->name, "out of memory");
    }
    a->common.progress = -1;
    ggufmap_repack_opts_init(&a->ro);
    int first, rc = cli_parse(cmd, argc, argv, apply, a, 1, &first);
    if (rc == EXIT_OK && !a->out && !a->ro.dry_run) rc = cli_usage_error(cmd->name, "no output: give -o OUT (or --dry-run)");
    ggufmap_model *in = NULL;
    ggufmap_repack_result *res = NULL;
    ggufmap_error err;
    if (rc != EXIT_OK) goto done;
    a->model = argv[first];
    settle_placement(a);
    if (ggufmap_model_open(a->model, 0, &in, &err) != GGUFMAP_OK) {
        rc = cli_fail(cmd->name, EXIT_BAD_INPUT, err.message);
        goto done;
    }
    if (a->out && !a->ro.dry_run) settle_killed(a);
    if (a->out && (rc = check_outputs(a, in)) != EXIT_OK) goto done;
    ggufmap_model_free(in);
    in = NULL;
    progress_line line = progress_start("repack");
    if (cli_progress_on(&a->common)) {
        a->ro.progress = progress_show;
        a->ro.progress_ctx = &line;
    }
    a->ro.report = report;
    a->ro.report_ctx = a;
    if (repack(a, &res, &err) != GGUFMAP_OK) {
        rc = cli_fail(cmd->name, err.status == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT, err.message);
        if (cancelled) fprintf(stderr, "ggufmap repack: stopped by signal %d\n", (int)cancelled);
    } else {
        print_outcome(a, res);
        if (a->placement.any && res->n_worse)
            rc = cli_fail(cmd->name, EXIT_NO, "the placement given gets worse after this repack (another --order?)");
    }
    rc = cli_finish_stdout(cmd->name, rc);
done:
    ggufmap_repack_result_free(res);
    ggufmap_model_free(in);
    placement_args_free(&a->placement);
    free(a);
    if (cancelled) exit_by_signal((int)cancelled); /* the partial output is gone: die of the signal */
    return cli_parse_status(cmd, rc);
}

const cli_command repack_command = {
    .name = "repack",
    .operands = "MODEL",
    .summary = "rewrite a model so that llama.cpp maps less that is foreign (nothing, for a given placement)",
    .description =
        "Rewrites MODEL (any shard of a split model), every shard, with its tensors reordered so that llama.cpp "
        "v0.5.0 maps less that is foreign.  For the placement given by the flags, nothing foreign: each buffer's "
        "span holds its own tensors only.  Without flags, for the family (every -ngl and, for MoE models, every "
        "--n-cpu-moe and --cpu-moe, on a Metal GPU), the order with the fewest foreign bytes over the family: one "
        "order cannot suit every placement, so some may get worse; each one that does is named (WORSE).  Lossless: "
        "every key-value pair and every tensor byte is kept, and the alignment.  First prints, per placement, "
        "llama.cpp's GPU working set and CPU side before and after, and the foreign bytes; a model that repacking "
        "cannot improve, or a placement given that would get worse, is not written unless --force.\n\n"
        "The output paths are checked first (the directory exists and is writable, nothing is there, the input is "
        "not among them).  Safety: each shard is written to OUT.tmp-XXXXXX beside it; every piece is read back once "
        "the disk has it and every tensor's SHA-256 checked against the hash taken while copying; the headers are "
        "re-read, the files fsynced, then renamed into place without replacing anything.  On an error or SIGINT, "
        "SIGTERM, SIGHUP the partial output is removed; the input is only read.  Free space: the data to write, "
        "the headers, and a margin for the file system's own blocks (8 KiB a tensor, 16 MiB a file).",
    .groups = repack_groups,
    .n_groups = 2,
    .status_ok = "written, nothing to gain, or a dry run",
    .status_no = "the placement given by the flags gets worse after the repack (its GPU working set, CPU side or "
                 "foreign bytes grow; nothing written unless --force)",
    .status_bad = "the model cannot be read, an output path is refused (it exists, its directory is missing or not "
                  "writable), no space, the read-back check failed, interrupted, or the output cannot be written",
    .run = run,
};

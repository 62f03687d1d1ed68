/*
 * cmd_repack.c - `ggufmap repack MODEL -o OUT [placement flags] [--order O]`:
 * rewrites every shard with the tensors reordered so llama.cpp maps nothing
 * foreign, prints the mapped bytes before and after, and writes safely (see
 * ggufmap/repack.h).  The placement flags are plan's (llama.cpp's options).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggufmap/ggufmap.h"
#include "ggufmap/repack.h"
#include "commands.h"
#include "placement_args.h"
#include "util.h"

static void help(FILE *out) {
    fprintf(out,
            "usage: ggufmap repack MODEL -o OUT [placement flags] [--order ORDER]\n"
            "                      [--dry-run] [--move-across-shards] [--progress] [--threads N]\n"
            "                      [--copy auto|kernel|write]\n"
            "\n"
            "Rewrites MODEL (any shard of a split model), every shard, with its tensors\n"
            "reordered so that llama.cpp v0.5.0 maps nothing foreign: each buffer's span\n"
            "holds its own tensors only.  Lossless: every key-value pair and every tensor\n"
            "byte is kept, and the alignment.  First prints the mapped bytes before and\n"
            "after, for the placement given by the flags or, without any, for the family:\n"
            "every -ngl (and, for MoE models, every --n-cpu-moe and --cpu-moe) on a\n"
            "Metal GPU.\n"
            "\n"
            "  -o, --output OUT   the output: one file at OUT, or for an n-shard model\n"
            "                     OUT-00001-of-0000n.gguf ... (OUT with or without .gguf);\n"
            "                     no output path may exist\n"
            "  --order ORDER      auto (default: the fewest foreign bytes over the cases),\n"
            "                     canonical (input, blocks by layer, output: every -ngl),\n"
            "                     moe (input, experts by layer, other block tensors, output:\n"
            "                     --cpu-moe and every --n-cpu-moe), cpu-last (the given\n"
            "                     placement's GPU tensors first, CPU ones after)\n"
            "  --move-across-shards  let tensors change shard (the shard count is kept)\n"
            "  --dry-run          print the figures, write nothing (-o not needed)\n"
            "  --progress         a progress line on stderr even when it is not a TTY\n"
            "  --no-progress      none, even on a TTY\n"
            "  --threads N        copy and check workers (default: CPUs, at most 4)\n"
            "  --copy MODE        who writes the bytes read for the hash: auto (default:\n"
            "                     copy_file_range where the file system shares blocks or\n"
            "                     copies on the server: Btrfs, XFS, bcachefs, ZFS, NFS,\n"
            "                     SMB; write() elsewhere), kernel (copy_file_range where\n"
            "                     the kernel takes it), write (always write())\n"
            "\n"
            "placement (as in ggufmap plan): --device cpu|metal|cuda, -ngl N|all,\n"
            "  -ot REGEX=BUFT, -cmoe/--cpu-moe, -ncmoe/--n-cpu-moe N, -nr/--no-repack,\n"
            "  --cpu x86|x86-avx2|arm64|generic, -lzm/--lazy-mode on|off|auto, --no-mmap,\n"
            "  --no-host, --page SIZE (default 16K with metal)\n"
            "\n"
            "Safety: writes OUT.tmp-XXXXXX beside each output; reads every piece back once\n"
            "the disk has it and checks every tensor's SHA-256 against the hash taken\n"
            "while copying; re-reads the headers, fsyncs, then renames into place\n"
            "without replacing anything.  On an error or\n"
            "SIGINT/SIGTERM/SIGHUP the partial output is removed; the input is only read.\n"
            "\n"
            "  -h, --help         this text\n"
            "\n"
            "exit status: 0 written (or dry run), 1 usage error, 2 the model cannot be\n"
            "read, an output exists, no space, the check failed, or interrupted\n");
}

/* ------------------------------------------------------------------------ */
/* Output: figures and progress                                              */
/* ------------------------------------------------------------------------ */

static const char *mib(char *buf, size_t cap, uint64_t bytes) {
    snprintf(buf, cap, "%.2f MiB", (double)bytes / (1024.0 * 1024.0));
    return buf;
}

static void report(void *ctx, const ggufmap_repack_result *r) {
    const char *model = ctx;
    char a[32], b[32], c[32], d[32];
    printf("repack %s: order %s", model, ggufmap_order_name(r->order));
    if (r->n_candidates > 1) {
        printf(" (auto: foreign bytes over the cases:");
        for (uint32_t k = 0; k < r->n_candidates; k++)
            printf("%s %s %s", k ? "," : "", ggufmap_order_name(r->candidates[k]), mib(a, sizeof a, r->candidate_foreign[k]));
        printf(")");
    }
    printf("\n%-16s %18s %18s %18s %18s\n", "placement", "mapped before", "mapped after", "foreign before",
           "foreign after");
    for (uint32_t k = 0; k < r->n_cases; k++) {
        const ggufmap_repack_case *cs = &r->cases[k];
        printf("%-16s %18s %18s %18s %18s\n", cs->label, mib(a, sizeof a, cs->mapped_before), mib(b, sizeof b, cs->mapped_after),
               mib(c, sizeof c, cs->foreign_before), mib(d, sizeof d, cs->foreign_after));
    }
    if (r->n_cases > 1)
        printf("%-16s %18s %18s %18s %18s\n", "total", mib(a, sizeof a, r->mapped_before), mib(b, sizeof b, r->mapped_after),
               mib(c, sizeof c, r->foreign_before), mib(d, sizeof d, r->foreign_after));
    printf("output: %u file%s, %s (%s of data to write, %s left as holes)\n", r->n_shards, r->n_shards == 1 ? "" : "s",
           human_bytes(a, sizeof a, r->file_bytes), human_bytes(b, sizeof b, r->data_bytes), human_bytes(c, sizeof c, r->hole_bytes));
    for (uint32_t s = 0; s < r->n_shards && r->paths; s++) printf("  %s\n", r->paths[s]);
    fflush(stdout);
}

static volatile sig_atomic_t cancelled;
static void on_signal(int sig) { cancelled = sig; }

/* ------------------------------------------------------------------------ */
/* The command                                                               */
/* ------------------------------------------------------------------------ */

int cmd_repack(int argc, char **argv) {
    static const struct option own[] = {
        {"page", required_argument, NULL, 'P'}, {"output", required_argument, NULL, 'o'},
        {"order", required_argument, NULL, 'R'}, {"dry-run", no_argument, NULL, 'n'},
        {"move-across-shards", no_argument, NULL, 'S'}, {"progress", no_argument, NULL, 'p'},
        {"no-progress", no_argument, NULL, 'q'}, {"threads", required_argument, NULL, 't'},
        {"copy", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
    };
    struct option longopts[64];
    if (placement_args_longopts(longopts, 64, own, sizeof own / sizeof own[0])) return EXIT_USAGE; /* table too small */
    static placement_args a;
    bool page_given = false;
    ggufmap_repack_opts ro;
    ggufmap_repack_opts_init(&ro);
    const char *out = NULL;
    int want_progress = -1; /* -1 auto */
    int c, rc = EXIT_OK;
    uint64_t v;
    optind = 1;
    opterr = 0;
    if (placement_args_init(&a)) return usage_error("repack", "out of memory");
    while (rc == EXIT_OK && (c = getopt_long_only(argc, argv, "ho:", longopts, NULL)) != -1) {
        bool handled;
        rc = placement_args_apply(&a, c, optarg, "repack", &handled);
        if (handled) continue;
        switch (c) {
        case 'P':
            page_given = true;
            if (ggufmap_parse_size(optarg, &v) || v == 0) rc = usage_error("repack", "--page %s: expected a size", optarg);
            else ro.plan.page = v;
            break;
        case 'o': out = optarg; break;
        case 'R':
            if (ggufmap_order_parse(optarg, &ro.order) != GGUFMAP_OK)
                rc = usage_error("repack", "--order %s: expected auto, canonical, moe or cpu-last", optarg);
            break;
        case 'C':
            if (ggufmap_copy_mode_parse(optarg, &ro.copy) != GGUFMAP_OK)
                rc = usage_error("repack", "--copy %s: expected auto, kernel or write", optarg);
            break;
        case 'n': ro.dry_run = true; break;
        case 'S': ro.move_across_shards = true; break;
        case 'p': want_progress = 1; break;
        case 'q': want_progress = 0; break;
        case 't': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end || n < 1 || n > 16) rc = usage_error("repack", "--threads %s: expected 1..16", optarg);
            else ro.n_threads = (unsigned)n;
        } break;
        case 'h': help(stdout); placement_args_free(&a); return EXIT_OK;
        default: rc = usage_error("repack", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc == EXIT_OK && optind != argc - 1)
        rc = usage_error("repack", optind == argc ? "no MODEL given" : "one MODEL expected, got %d", argc - optind);
    if (rc == EXIT_OK && !out && !ro.dry_run) rc = usage_error("repack", "no output: give -o OUT (or --dry-run)");
    if (rc != EXIT_OK) {
        placement_args_free(&a);
        return rc;
    }
    /* Metal means Apple Silicon (as in plan); the family is evaluated on Metal. */
    if (!a.any || a.opts.device == GGUFMAP_DEVICE_METAL) {
        if (!a.cpu_given) a.opts.cpu = GGUFMAP_CPU_ARM64;
        if (!page_given) ro.plan.page = 16384;
    }
    if (a.any) {
        if (a.opts.device == GGUFMAP_DEVICE_CPU && !a.cpu_given) a.opts.cpu = GGUFMAP_CPU_HOST;
        ro.placement = &a.opts;
    }
    progress_line ps = {.label = "repack", .tty = isatty(STDERR_FILENO) != 0};
    if (want_progress == 1 || (want_progress == -1 && ps.tty)) {
        ro.progress = progress_show;
        ro.progress_ctx = &ps;
    }
    ro.report = report;
    ro.report_ctx = argv[optind];
    cancelled = 0;
    ro.cancel = &cancelled;
    struct sigaction sa, old[3];
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &sa, &old[i]);

    ggufmap_repack_result *res = NULL;
    ggufmap_error err;
    int st = ggufmap_repack(argv[optind], out, &ro, &res, &err);
    for (int i = 0; i < 3; i++) sigaction(sigs[i], &old[i], NULL);
    if (st != GGUFMAP_OK) {
        fprintf(stderr, "ggufmap repack: %s\n", err.message);
        if (cancelled) fprintf(stderr, "ggufmap repack: stopped by signal %d\n", (int)cancelled);
        rc = st == GGUFMAP_EINVAL ? EXIT_USAGE : EXIT_BAD_INPUT;
    } else if (res->written) {
        char a1[32], a2[32];
        double secs = res->seconds_copy > 0 ? res->seconds_copy : 1e-9;
        printf("written and verified: %u file%s, %s copied and read back in %.2f s (%s/s, %s), headers checked and "
               "synced in %.2f s\n",
               res->n_shards, res->n_shards == 1 ? "" : "s", human_bytes(a1, sizeof a1, res->data_bytes), res->seconds_copy,
               human_bytes(a2, sizeof a2, (uint64_t)((double)res->data_bytes / secs)),
               res->used_copy_file_range ? "copy_file_range" : "pread/pwrite", res->seconds_sync);
    } else {
        printf("dry run: nothing written\n");
    }
    if (fflush(stdout) != 0 || ferror(stdout)) rc = EXIT_BAD_INPUT;
    ggufmap_repack_result_free(res);
    placement_args_free(&a);
    return rc;
}

/*
 * test_load_wired.c - the wired backend, measured by the kernel.
 *
 * usage: test_load_wired FIXTURE_TOOL SCRATCH_DIR [SIZE]
 *
 * Makes the scaled replica (one shard, a CPU-side lazy table of SIZE,
 * default 256M, between GPU-side tensors), maps it with --device metal's
 * placement and the wired backend on the GPU's buffers, once with llama.cpp's
 * span and once with the tight planner, and checks that VmLck (from
 * /proc/self/status) grew by the plan's page-rounded bytes, within one page
 * per range, that the backend counts the same, and that unmapping unlocks
 * everything.  mlock faults the sparse file's holes in as zero pages.  A
 * refused mlock (RLIMIT_MEMLOCK without CAP_IPC_LOCK) FAILS the test.
 *
 * The posix build (GGUFMAP_PORTABLE=posix, src/os.h) locks with libc's
 * mlock, which AddressSanitizer replaces by one that locks nothing; make
 * test's sanitized build is posix, so there the kernel's VmLck must stay
 * where it was, and the backend's own count is what is checked against the
 * plan (the linux build makes the system call itself, sanitized or not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"
#include "ggufmap/ggufmap.h"
#include "ggufmap/load.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#endif
#if defined(GGUFMAP_PORTABLE_POSIX) && defined(SANITIZED)
static const bool kernel_sees_locks = false;
#else
static const bool kernel_sees_locks = true;
#endif

static uint64_t vm_lck(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0, v;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %llu kB", &v) == 1) kb = v;
    if (f) fclose(f);
    return kb * 1024;
}

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

static void run_planner(const ggufmap_model *m, const char *planner, uint64_t min_expected) {
    ggufmap_error err;
    ggufmap_placement_opts po;
    ggufmap_placement_opts_init(&po);
    po.device = GGUFMAP_DEVICE_METAL;
    po.cpu = GGUFMAP_CPU_ARM64;
    ggufmap_plan_opts popt;
    ggufmap_plan_opts_init(&popt);
    popt.page = (uint64_t)sysconf(_SC_PAGESIZE);
    CHECK(ggufmap_planner_parse(planner, &popt.planner) == GGUFMAP_OK);
    ggufmap_placement *pl = NULL;
    ggufmap_plan *plan = NULL;
    ggufmap_backend *wired = NULL;
    ggufmap_mapped *mp = NULL;
    CHECK_MSG(ggufmap_placement_build(m, &po, &pl, &err) == GGUFMAP_OK, "%s", err.message);
    if (pl) CHECK_MSG(ggufmap_plan_build(pl, &popt, &plan, &err) == GGUFMAP_OK, "%s", err.message);
    CHECK(ggufmap_backend_open("wired", &wired, &err) == GGUFMAP_OK);
    if (!plan || !wired) goto done;
    ggufmap_map_opts mo;
    ggufmap_map_opts_init(&mo);
    mo.gpu = wired;
    uint64_t before = vm_lck();
    int rc = ggufmap_mapped_open(plan, &mo, &mp, &err);
    CHECK_MSG(rc == GGUFMAP_OK, "%s: mapping with the wired backend failed: %s (the test needs mlock: run as root or "
                                "raise RLIMIT_MEMLOCK)", planner, err.message);
    if (rc) goto done;
    uint64_t locked = vm_lck() - before;
    ggufmap_mapped_stats st;
    ggufmap_mapped_get_stats(mp, &st);
    ggufmap_backend_stats bs;
    ggufmap_backend_get_stats(wired, &bs);
    /* The plan's page-rounded bytes of the GPU's buffers, at this page size. */
    uint64_t predicted = 0;
    uint32_t n_gpu = 0;
    for (uint32_t i = 0; i < ggufmap_plan_n_buffers(plan); i++) {
        const ggufmap_buffer *b = ggufmap_plan_buffer(plan, i);
        if (b->mapped && ggufmap_buft_is_gpu(ggufmap_placement_context(pl, b->context)->buft)) {
            predicted += b->ranges_resident;
            n_gpu += b->n_ranges;
        }
    }
    printf("%s: %u GPU ranges, plan %llu bytes, VmLck +%llu bytes, backend %llu bytes, %.1f ms\n", planner, n_gpu,
           (unsigned long long)predicted, (unsigned long long)locked, (unsigned long long)bs.pinned_bytes,
           (double)bs.pin_ns / 1e6);
    if (kernel_sees_locks) {
        CHECK_MSG(absdiff(locked, predicted) <= (uint64_t)n_gpu * st.page, "%s: VmLck +%llu, plan %llu", planner,
                  (unsigned long long)locked, (unsigned long long)predicted);
        CHECK(locked == st.gpu_pages);
    } else {
        printf("%s: posix build under AddressSanitizer: its mlock locks nothing; the backend's count against the "
               "plan instead\n", planner);
        CHECK_MSG(locked == 0, "%s: VmLck +%llu under the sanitizer's mlock", planner, (unsigned long long)locked);
        CHECK_MSG(absdiff(bs.pinned_bytes, predicted) <= (uint64_t)n_gpu * st.page, "%s: backend %llu, plan %llu",
                  planner, (unsigned long long)bs.pinned_bytes, (unsigned long long)predicted);
        CHECK(bs.pin_calls > 0);
    }
    CHECK(bs.pinned_bytes == st.gpu_pages);
    CHECK(predicted >= min_expected);
    ggufmap_mapped_free(mp);
    mp = NULL;
    ggufmap_backend_get_stats(wired, &bs);
    CHECK(bs.pinned_bytes == 0);
    CHECK_MSG(vm_lck() == before, "%s: VmLck after unmap %llu, before %llu", planner, (unsigned long long)vm_lck(),
              (unsigned long long)before);
done:
    ggufmap_mapped_free(mp);
    ggufmap_backend_free(wired);
    ggufmap_plan_free(plan);
    ggufmap_placement_free(pl);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_load_wired FIXTURE_TOOL SCRATCH_DIR [SIZE]\n");
        return 2;
    }
    const char *size = argc > 3 ? argv[3] : "256M";
    uint64_t bytes = 0;
    ggufmap_parse_size(size, &bytes);
    mkdir(argv[2], 0755);
    char path[1024], cmd[2048];
    snprintf(path, sizeof path, "%s/scaled.gguf", argv[2]);
    unlink(path);
    snprintf(cmd, sizeof cmd, "'%s' --replica scaled --scale-bytes %s -o '%s' >/dev/null", argv[1], size, path);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot make the fixture: %s\n", cmd);
        return 1;
    }
    ggufmap_model *m = NULL;
    ggufmap_error err;
    CHECK_MSG(ggufmap_model_open(path, 0, &m, &err) == GGUFMAP_OK, "%s", err.message);
    if (m) {
        run_planner(m, "span", bytes);   /* the span holds the table: >= SIZE wired */
        run_planner(m, "tight", 0);
        ggufmap_model_free(m);
    }
    unlink(path);
    return check_summary();
}

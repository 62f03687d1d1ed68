/*
 * test_os.c - the portability layer (src/os.h), in whichever implementation
 * this build has: linux natively, posix with GGUFMAP_PORTABLE=posix (make
 * test's sanitized build).  Where the two differ by design the test says
 * what each one must do and checks that:
 *
 *   facility          linux                              posix
 *   sparse files      the hole is found                  all is data
 *   range copy        copy_file_range copies             unsupported
 *   process memory    VmLck grows by the locked page     nothing known
 *
 * Everything else must behave the same: a rename that never replaces, a
 * durable fsync, random names, reserved address space, a timed wait.
 *
 * usage: test_os SCRATCH_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "os.h"
#include "scratch.h"

#ifdef GGUFMAP_PORTABLE_POSIX
#define WANT_SYSTEM "posix"
#else
#define WANT_SYSTEM "linux"
#endif

static bool posix_build(void) { return strcmp(WANT_SYSTEM, "posix") == 0; }

/* Writes len bytes of byte c at off of path (created if missing). */
static void put(const char *path, uint64_t off, size_t len, int c) {
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    uint8_t *buf = malloc(len);
    CHECK(fd >= 0 && buf);
    if (fd >= 0 && buf) {
        memset(buf, c, len);
        CHECK(gm_pwrite_full(fd, buf, len, off) == 0);
    }
    free(buf);
    if (fd >= 0) close(fd);
}

static int first_byte(const char *path) {
    uint8_t b = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, &b, 1);
    close(fd);
    return n == 1 ? b : -1;
}

/* The build is the one CMake was asked for (GGUFMAP_PORTABLE). */
static void test_name(void) {
    CHECK_MSG(strcmp(gm_os_name(), WANT_SYSTEM) == 0, "gm_os_name() is %s, the build asked for %s", gm_os_name(),
              WANT_SYSTEM);
}

static void test_rename(void) {
    char a[600], b[600], c[600];
    scratch_path(a, sizeof a, "a");
    scratch_path(b, sizeof b, "b");
    scratch_path(c, sizeof c, "c");
    put(a, 0, 1, 'a');
    put(b, 0, 1, 'b');
    CHECK(gm_os_rename_noreplace(a, b) == EEXIST);
    CHECK(first_byte(a) == 'a' && first_byte(b) == 'b'); /* neither touched */
    CHECK(gm_os_rename_noreplace(a, c) == 0);
    CHECK(access(a, F_OK) != 0 && first_byte(c) == 'a');
    CHECK(gm_os_rename_noreplace(a, c) == ENOENT);
}

static void test_fsync_and_random(void) {
    char p[600];
    scratch_path(p, sizeof p, "sync");
    put(p, 0, 4096, 1);
    int fd = open(p, O_RDWR);
    CHECK(fd >= 0 && gm_os_fsync(fd) == 0);
    CHECK(fd >= 0 && gm_os_writeback_wait(fd, 0, 4096) == 0); /* linux: the range; posix: fdatasync */
    if (fd >= 0) close(fd);
    uint8_t x[16] = {0}, y[16] = {0};
    CHECK(gm_os_random(x, sizeof x) && gm_os_random(y, sizeof y));
    CHECK(memcmp(x, y, sizeof x) != 0);
}

/* 16 MiB with 64 KiB of data at 8 MiB: linux finds the data and the hole
 * where the file system keeps holes (it allocated less than the size);
 * posix cannot tell, so all of it is data. */
static void test_sparse(void) {
    char p[600];
    scratch_path(p, sizeof p, "sparse");
    const uint64_t size = 16u << 20, at = 8u << 20, len = 64u << 10;
    put(p, at, (size_t)len, 7);
    int fd = open(p, O_RDWR);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    bool sparse_here = (uint64_t)st.st_blocks * 512 < size / 2;
    uint64_t d = gm_os_next_data(fd, 0, size), h = gm_os_next_hole(fd, at, size);
    if (posix_build()) {
        CHECK_MSG(d == 0 && h == size, "posix: data at %llu, hole at %llu; all data expected", (unsigned long long)d,
                  (unsigned long long)h);
    } else if (sparse_here) {
        CHECK_MSG(d == at && h >= at + len && h < size, "linux: data at %llu, hole at %llu", (unsigned long long)d,
                  (unsigned long long)h);
        CHECK(gm_os_next_data(fd, at + (2u << 20), size) == size); /* only a hole follows */
        /* The file shrinks under a reader that still thinks it has size
         * bytes (issue 20, item 3): SEEK_DATA's ENXIO past the new end is
         * no hole.  Past the end: pos, so that the reader's read fails;
         * inside a trailing hole: the new end, not the old one. */
        CHECK(fd >= 0 && ftruncate(fd, (off_t)(at + len + (1u << 20))) == 0);
        uint64_t past = gm_os_next_data(fd, at + (4u << 20), size);
        CHECK_MSG(past == at + (4u << 20), "past the new end: %llu, want pos", (unsigned long long)past);
        uint64_t tail = gm_os_next_data(fd, at + len + 4096, size);
        CHECK_MSG(tail == at + len + (1u << 20), "trailing hole: %llu, want the new end", (unsigned long long)tail);
    } else {
        printf("this file system allocated the hole (%lld blocks): nothing to find\n", (long long)st.st_blocks);
        CHECK(d <= at);
    }
    if (fd >= 0) close(fd);
}

/* linux: the kernel copies (same file system); posix: unsupported, nothing
 * copied. */
static void test_copy_range(void) {
    char a[600], b[600];
    scratch_path(a, sizeof a, "copy-in");
    scratch_path(b, sizeof b, "copy-out");
    put(a, 0, 65536, 'x');
    put(b, 0, 1, 0);
    int in = open(a, O_RDONLY), out = open(b, O_RDWR);
    size_t copied = 99;
    int rc = gm_os_copy_range(in, 0, out, 4096, 65536, &copied);
    if (posix_build()) {
        CHECK(rc == GM_OS_UNSUPPORTED && copied == 0);
        CHECK(!gm_os_copy_range_pays(out));
    } else {
        CHECK_MSG(rc == 0 && copied == 65536, "copy_file_range: %d, %zu bytes", rc, copied);
        uint8_t buf[65536];
        CHECK(gm_pread_full(out, buf, sizeof buf, 4096) == 0 && buf[0] == 'x' && buf[65535] == 'x');
    }
    gm_os_drop_cache(out, 0, 65536 + 4096); /* advice: must not fail or change the file */
    uint8_t last = 0;
    CHECK(posix_build() || (pread(out, &last, 1, 4096 + 65535) == 1 && last == 'x'));
    close(in);
    close(out);
}

/* linux: the kernel's VmLck shows the locked page (the layer makes the
 * system call, so even a sanitized build locks); posix: the system reports
 * nothing, and the lock still succeeds. */
static void test_memory(void) {
    uint64_t page = gm_page_size();
    uint8_t *p = gm_os_reserve((size_t)page * 4);
    CHECK(p != NULL);
    if (!p) return;
    CHECK(mprotect(p, (size_t)page, PROT_READ | PROT_WRITE) == 0);
    p[0] = 1;
    gm_os_memory before, locked, after;
    gm_os_memory_read(&before);
    CHECK(gm_os_lock(p, (size_t)page) == 0);
    gm_os_memory_read(&locked);
    CHECK(gm_os_unlock(p, (size_t)page) == 0);
    gm_os_memory_read(&after);
    if (posix_build()) {
        CHECK(before.known == 0 && !gm_os_memory_read(&after));
    } else {
        unsigned all = GM_OS_MEM_LOCKED | GM_OS_MEM_RESIDENT | GM_OS_MEM_VIRTUAL;
        CHECK((before.known & all) == all && before.resident > 0 && before.virtual_bytes >= before.resident);
        CHECK_MSG(locked.locked == before.locked + page && after.locked == before.locked,
                  "VmLck %llu, locked %llu, unlocked %llu", (unsigned long long)before.locked,
                  (unsigned long long)locked.locked, (unsigned long long)after.locked);
    }
    CHECK(gm_os_lock_limit() > 0);
    munmap(p, (size_t)page * 4);
}

static void test_threads(void) {
    CHECK(gm_os_cpu_count() >= 1);
    pthread_mutex_t m;
    pthread_cond_t c;
    pthread_mutex_init(&m, NULL);
    CHECK(gm_os_cond_init(&c) == 0);
    pthread_mutex_lock(&m);
    uint64_t t0 = gm_now_ns();
    int rc = gm_os_cond_wait_ms(&c, &m, 50);
    uint64_t waited = gm_now_ns() - t0;
    pthread_mutex_unlock(&m);
    CHECK_MSG(rc == ETIMEDOUT && waited >= 45000000u && waited < 2000000000u, "wait: %d after %llu ns", rc,
              (unsigned long long)waited);
    pthread_cond_destroy(&c);
    pthread_mutex_destroy(&m);
}

int main(int argc, char **argv) {
    scratch_init(argc > 1 ? argv[1] : "tmp-test_os");
    printf("system interface: %s\n", gm_os_name());
    test_name();
    test_rename();
    test_fsync_and_random();
    test_sparse();
    test_copy_range();
    test_memory();
    test_threads();
    return check_summary();
}

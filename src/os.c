/*
 * os.c - the portability layer (the contract and the table of what each
 * system does are in os.h).
 *
 * Why one file with #if blocks rather than one file per system: each
 * facility is a few lines per system, and its Linux, macOS and POSIX ways
 * read best side by side, with the fallback the native way takes when the
 * kernel refuses right there.  The choice is made once, here:
 *
 *   GM_OS_LINUX    Linux, unless built with GGUFMAP_PORTABLE=posix;
 *   GM_OS_DARWIN   macOS, unless built with GGUFMAP_PORTABLE=posix;
 *   neither        POSIX.1-2008 alone.
 *
 * The rest of the library is compiled with _XOPEN_SOURCE=700 (SUSv4), so
 * the headers do not even declare a non-POSIX function there; this file
 * alone asks for the system's extensions (_GNU_SOURCE, _DARWIN_C_SOURCE),
 * and in the posix build it does not ask either, so the compiler holds the
 * fallbacks to POSIX too.
 *
 * The macOS branches are written against Apple's documented interfaces
 * but are not built on this project's CI (Linux only; see docs/portability.md).
 */
#if !defined(GGUFMAP_PORTABLE_POSIX) && defined(__linux__)
#define GM_OS_LINUX 1
#define _GNU_SOURCE
#elif !defined(GGUFMAP_PORTABLE_POSIX) && defined(__APPLE__)
#define GM_OS_DARWIN 1
#define _DARWIN_C_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if GM_OS_LINUX
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#elif GM_OS_DARWIN
#include <sys/file.h>
#include <libproc.h>
#include <mach/mach.h>
#endif

#include "device.h"
#include "os.h"

const char *gm_os_name(void) {
#if GM_OS_LINUX
    return "linux";
#elif GM_OS_DARWIN
    return "darwin";
#else
    return "posix";
#endif
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

/* The POSIX way: link() refuses an existing path, then the old name goes. */
static int link_then_unlink(const char *from, const char *to) {
    if (link(from, to) != 0) return errno;
    unlink(from);
    return 0;
}

int gm_os_rename_noreplace(const char *from, const char *to) {
#if GM_OS_LINUX
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return errno; /* else: this file system lacks the flag */
#elif GM_OS_DARWIN
    if (renamex_np(from, to, RENAME_EXCL) == 0) return 0;
    if (errno != ENOTSUP && errno != EINVAL) return errno;
#endif
    return link_then_unlink(from, to);
}

int gm_os_fsync(int fd) {
#if GM_OS_DARWIN
    if (fcntl(fd, F_FULLFSYNC) == 0) return 0; /* else: the file system cannot; fsync is the best left */
#endif
    while (fsync(fd) != 0)
        if (errno != EINTR) return errno;
    return 0;
}

/* The POSIX way: /dev/urandom (not in POSIX, but on every Unix). */
static bool urandom(void *buf, size_t n) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t got = read(fd, buf, n);
    close(fd);
    return got == (ssize_t)n;
}

bool gm_os_random(void *buf, size_t n) {
#if GM_OS_LINUX
    if (getrandom(buf, n, GRND_NONBLOCK) == (ssize_t)n) return true;
#elif GM_OS_DARWIN
    arc4random_buf(buf, n);
    return true;
#endif
    return urandom(buf, n);
}

int gm_os_try_lock_file(int fd) {
#if GM_OS_LINUX && defined(F_OFD_SETLK)
    struct flock ofd = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0, .l_pid = 0};
    if (fcntl(fd, F_OFD_SETLK, &ofd) == 0) return 0;
    if (errno != EINVAL) return errno; /* else: a kernel before 3.15 */
#elif GM_OS_DARWIN
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    if (errno != ENOTSUP) return errno;
#endif
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return fcntl(fd, F_SETLK, &fl) == 0 ? 0 : errno;
}

/* ------------------------------------------------------------------------ */
/* Shared libraries, loaded on demand                                        */
/* ------------------------------------------------------------------------ */

void gm_os_library_name(char *buf, size_t cap, const char *name, int major) {
#if defined(__APPLE__) /* the file naming is the platform's, whichever calls the build uses */
    snprintf(buf, cap, "lib%s.%d.dylib", name, major);
#else
    snprintf(buf, cap, "lib%s.so.%d", name, major);
#endif
}

void *gm_os_library_open(const char *file, char *why, size_t cap) {
    void *lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, cap, "%s", e ? e : "dlopen failed");
    }
    return lib;
}

void gm_os_library_close(void *lib) { dlclose(lib); }

gm_os_function gm_os_library_symbol(void *lib, const char *name) {
    void *p = dlsym(lib, name);
    gm_os_function f;
    /* POSIX guarantees a function's address survives the trip through
     * void *; C does not let it be cast, so it is copied. */
    memcpy(&f, &p, sizeof f);
    return p ? f : NULL;
}

/* ------------------------------------------------------------------------ */
/* Sparse files                                                              */
/* ------------------------------------------------------------------------ */

#if (GM_OS_LINUX || GM_OS_DARWIN) && defined(SEEK_DATA) && defined(SEEK_HOLE)
#define GM_OS_SEEK_HOLES 1
#endif

bool gm_os_sees_holes(void) {
#if GM_OS_SEEK_HOLES
    return true;
#else
    return false;
#endif
}

uint64_t gm_os_next_data(int fd, uint64_t pos, uint64_t end) {
#if GM_OS_SEEK_HOLES
    off_t d = lseek(fd, (off_t)pos, SEEK_DATA);
    if (d >= 0) return (uint64_t)d > end ? end : (uint64_t)d;
    /* ENXIO says "no data at or after pos": a hole up to the end of the
     * file, or pos at or past the end.  The second is no hole: the file
     * is shorter than the caller knows (truncated meanwhile), and the read
     * the caller makes at pos must find that out, not zeros. */
    struct stat st;
    if (errno == ENXIO && fstat(fd, &st) == 0 && (uint64_t)st.st_size > pos)
        return (uint64_t)st.st_size < end ? (uint64_t)st.st_size : end;
    return pos; /* past the end, or cannot tell: all is data */
#else
    (void)fd;
    (void)end;
    return pos;
#endif
}

uint64_t gm_os_next_hole(int fd, uint64_t pos, uint64_t end) {
#if GM_OS_SEEK_HOLES
    off_t h = lseek(fd, (off_t)pos, SEEK_HOLE);
    if (h < 0 || (uint64_t)h <= pos) return end; /* ENXIO (past the end) too: the read there fails */
    return (uint64_t)h > end ? end : (uint64_t)h;
#else
    (void)fd;
    (void)pos;
    return end;
#endif
}

/* ------------------------------------------------------------------------ */
/* Copying and write-back                                                    */
/* ------------------------------------------------------------------------ */

bool gm_os_copy_range_pays(int fd) {
#if GM_OS_LINUX
    static const unsigned long magic[] = {
        0x9123683EUL, /* btrfs */ 0x58465342UL, /* xfs */  0xCA451A4EUL, /* bcachefs */
        0x2FC12FC1UL, /* zfs */   0x7461636FUL, /* ocfs2 */ 0x6969UL,    /* nfs */
        0xFE534D42UL, /* smb2 */  0xFF534D42UL, /* cifs */
    };
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return false;
    for (size_t i = 0; i < sizeof magic / sizeof magic[0]; i++)
        if ((unsigned long)fs.f_type == magic[i]) return true;
#else
    (void)fd;
#endif
    return false;
}

int gm_os_copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, size_t n, size_t *copied) {
    *copied = 0;
#if GM_OS_LINUX
    loff_t a = (loff_t)in_off, b = (loff_t)out_off;
    while (*copied < n) {
        ssize_t r = copy_file_range(in_fd, &a, out_fd, &b, n - *copied, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                      errno == EBADF || errno == EPERM))
            return GM_OS_UNSUPPORTED; /* not between these files: the caller writes */
        if (r < 0) return errno;
        if (r == 0) return EIO;
        *copied += (size_t)r;
    }
    return 0;
#else
    (void)in_fd, (void)in_off, (void)out_fd, (void)out_off, (void)n;
    return GM_OS_UNSUPPORTED;
#endif
}

void gm_os_writeback_start(int fd, uint64_t off, uint64_t len) {
#if GM_OS_LINUX
    sync_file_range(fd, (off64_t)off, (off64_t)len, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd, (void)off, (void)len; /* POSIX cannot ask without waiting */
#endif
}

int gm_os_writeback_wait(int fd, uint64_t off, uint64_t len) {
#if GM_OS_LINUX
    if (sync_file_range(fd, (off64_t)off, (off64_t)len,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) == 0)
        return 0;
    return errno == EINVAL || errno == ESPIPE || errno == ENOSYS ? GM_OS_UNSUPPORTED : errno;
#elif GM_OS_DARWIN
    (void)fd, (void)off, (void)len; /* nothing can drop the pages after: no point in waiting */
    return GM_OS_UNSUPPORTED;
#else
    /* All of fd's data: the few pieces in flight (the copy engine keeps
     * only a handful dirty), so about what a range would cost. */
    (void)off, (void)len;
    while (fdatasync(fd) != 0)
        if (errno != EINTR) return errno == EINVAL ? GM_OS_UNSUPPORTED : errno;
    return 0;
#endif
}

void gm_os_drop_cache(int fd, uint64_t off, uint64_t len) {
#if !GM_OS_DARWIN && defined(POSIX_FADV_DONTNEED)
    posix_fadvise(fd, (off_t)off, (off_t)len, POSIX_FADV_DONTNEED);
#else
    (void)fd, (void)off, (void)len; /* macOS has no posix_fadvise */
#endif
}

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */
/* ------------------------------------------------------------------------ */

void *gm_os_reserve(size_t len) {
#if GM_OS_LINUX
    void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#elif GM_OS_DARWIN
    void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANON, -1, 0);
#else
    int fd = open("/dev/zero", O_RDWR | O_CLOEXEC);
    if (fd < 0) return NULL;
    void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE, fd, 0);
    close(fd); /* the mapping keeps what it needs */
#endif
    return m == MAP_FAILED ? NULL : m;
}

int gm_os_lock(const void *p, size_t len) {
#if GM_OS_LINUX && defined(SYS_mlock)
    return syscall(SYS_mlock, p, len) == 0 ? 0 : errno;
#else
    return mlock(p, len) == 0 ? 0 : errno;
#endif
}

int gm_os_unlock(const void *p, size_t len) {
#if GM_OS_LINUX && defined(SYS_munlock)
    return syscall(SYS_munlock, p, len) == 0 ? 0 : errno;
#else
    return munlock(p, len) == 0 ? 0 : errno;
#endif
}

uint64_t gm_os_lock_limit(void) {
#ifdef RLIMIT_MEMLOCK
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 0;
    return rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
#else
    return 0;
#endif
}

#if GM_OS_LINUX
/* "VmLck:     1234 kB" lines of /proc/self/status. */
static bool read_proc_status(gm_os_memory *m) {
    const struct { const char *format; unsigned bit; uint64_t *field; } rows[] = {
        {"VmLck: %llu kB", GM_OS_MEM_LOCKED, &m->locked},
        {"VmPin: %llu kB", GM_OS_MEM_PINNED, &m->pinned},
        {"VmRSS: %llu kB", GM_OS_MEM_RESIDENT, &m->resident},
        {"VmSize: %llu kB", GM_OS_MEM_VIRTUAL, &m->virtual_bytes},
    };
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return false;
    char line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f))
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
            if (sscanf(line, rows[i].format, &kb) == 1) {
                *rows[i].field = (uint64_t)kb * 1024;
                m->known |= rows[i].bit;
            }
    fclose(f);
    return m->known != 0;
}
#elif GM_OS_DARWIN
/* Resident and virtual bytes from the task, wired bytes from its rusage. */
static bool read_task_info(gm_os_memory *m) {
    mach_task_basic_info_data_t info;
    mach_msg_type_number_t count = MACH_TASK_BASIC_INFO_COUNT;
    if (task_info(mach_task_self(), MACH_TASK_BASIC_INFO, (task_info_t)&info, &count) == KERN_SUCCESS) {
        m->resident = info.resident_size;
        m->virtual_bytes = info.virtual_size;
        m->known |= GM_OS_MEM_RESIDENT | GM_OS_MEM_VIRTUAL;
    }
    struct rusage_info_v2 ri;
    if (proc_pid_rusage(getpid(), RUSAGE_INFO_V2, (rusage_info_t *)&ri) == 0) {
        m->locked = ri.ri_wired_size;
        m->known |= GM_OS_MEM_LOCKED;
    }
    return m->known != 0;
}
#endif

bool gm_os_memory_read(gm_os_memory *m) {
    memset(m, 0, sizeof *m);
#if GM_OS_LINUX
    return read_proc_status(m);
#elif GM_OS_DARWIN
    return read_task_info(m);
#else
    return false; /* POSIX has no call for a process's locked or resident bytes */
#endif
}

/* ------------------------------------------------------------------------ */
/* The processor                                                             */
/* ------------------------------------------------------------------------ */

#if defined(__x86_64__) || defined(__i386__)
/* ggml's cpuid_x86: leaf 1 (ecx), leaf 7 subleaf 0 (ebx, ecx, edx) and
 * subleaf 1 (eax), each read only when the processor has that leaf. */
uint32_t gm_os_x86_features(void) {
    unsigned a, b, c, d, max;
    __asm__ __volatile__("cpuid" : "=a"(max), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
    unsigned l1c = 0, l7b = 0, l7c = 0, l7d = 0, l71a = 0;
    if (max >= 1) __asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(l1c), "=d"(d) : "a"(1), "c"(0));
    if (max >= 7) {
        __asm__ __volatile__("cpuid" : "=a"(a), "=b"(l7b), "=c"(l7c), "=d"(l7d) : "a"(7), "c"(0));
        __asm__ __volatile__("cpuid" : "=a"(l71a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
    }
    static const struct { unsigned char reg, bit; uint32_t feature; } bits[] = {
        {0, 12, GM_X86_FMA},   {0, 29, GM_X86_F16C},     {0, 20, GM_X86_SSE42},   {0, 28, GM_X86_AVX},
        {1, 8, GM_X86_BMI2},   {1, 5, GM_X86_AVX2},      {1, 16, GM_X86_AVX512F}, {1, 28, GM_X86_AVX512CD},
        {1, 31, GM_X86_AVX512VL}, {1, 17, GM_X86_AVX512DQ}, {1, 30, GM_X86_AVX512BW},
        {2, 1, GM_X86_AVX512_VBMI}, {2, 11, GM_X86_AVX512_VNNI}, {3, 25, GM_X86_AMX_INT8},
        {4, 5, GM_X86_AVX512_BF16}, {4, 4, GM_X86_AVX_VNNI},
    };
    const unsigned regs[5] = {l1c, l7b, l7c, l7d, l71a};
    uint32_t f = 0;
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (regs[bits[i].reg] >> bits[i].bit & 1u) f |= bits[i].feature;
    return f;
}
#else
uint32_t gm_os_x86_features(void) { return 0; }
#endif

bool gm_os_amx_permitted(void) {
#if GM_OS_LINUX && defined(__x86_64__)
    enum { ARCH_GET_XCOMP_SUPP = 0x1021, XFEATURE_XTILEDATA = 18 };
    unsigned long supported = 0;
    return syscall(SYS_arch_prctl, ARCH_GET_XCOMP_SUPP, &supported) == 0 && (supported >> XFEATURE_XTILEDATA & 1u);
#elif GM_OS_LINUX || GM_OS_DARWIN
    return false;
#else
    return true;
#endif
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

unsigned gm_os_cpu_count(void) {
#ifdef _SC_NPROCESSORS_ONLN
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4096 ? 4096 : (unsigned)n;
#else
    return 1;
#endif
}

int gm_os_cond_init(pthread_cond_t *c) {
#if GM_OS_DARWIN
    return pthread_cond_init(c, NULL); /* no pthread_condattr_setclock: the wait is relative instead */
#else
    pthread_condattr_t ca;
    int e = pthread_condattr_init(&ca);
    if (e) return e;
    e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (!e) e = pthread_cond_init(c, &ca);
    pthread_condattr_destroy(&ca);
    return e;
#endif
}

int gm_os_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *m, unsigned ms) {
#if GM_OS_DARWIN
    struct timespec rel = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    return pthread_cond_timedwait_relative_np(c, m, &rel);
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* the condition's clock (gm_os_cond_init) */
    uint64_t at = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + (uint64_t)ms * 1000000u;
    struct timespec until = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)};
    int e = pthread_cond_timedwait(c, m, &until);
    return e == ETIMEDOUT ? ETIMEDOUT : 0;
#endif
}

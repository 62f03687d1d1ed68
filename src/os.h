/*
 * os.h - the portability layer: every call the library and the tools make
 * that POSIX.1-2008 (with XSI, the Single UNIX Specification v4) does not
 * give, or that a target system lacks, goes through one of these functions,
 * implemented in os.c.  Nothing else in src/ or tools/ may call a system
 * function outside SUSv4 (tests/install/portable.sh checks the objects).
 *
 * Three implementations, chosen when the library is built:
 *
 *   linux   Linux's own calls where they do better, each falling back to
 *           the POSIX way where the kernel or the file system refuses;
 *   darwin  macOS's own calls (renamex_np, F_FULLFSYNC, arc4random_buf,
 *           SEEK_DATA, task_info and proc_pid_rusage, mlock) with the same
 *           fallbacks;
 *   posix   POSIX.1-2008 alone: every other Unix, and Linux built with
 *           GGUFMAP_PORTABLE=posix, so that the fallbacks run here too
 *           (`make test` runs the whole suite once each way).
 *
 * What each facility does in each (a "-" is the POSIX way):
 *
 *   facility          linux                    darwin                  posix
 *   rename, no        renameat2                renamex_np              link + unlink
 *     replace         (RENAME_NOREPLACE)       (RENAME_EXCL)
 *   fsync             -                        F_FULLFSYNC             fsync
 *   random name       getrandom                arc4random_buf          /dev/urandom
 *   lock a file       F_OFD_SETLK              flock                   fcntl F_SETLK
 *                     (per open file)          (per open file)         (per process)
 *   sparse files      SEEK_DATA, SEEK_HOLE     SEEK_DATA, SEEK_HOLE    none: all is data
 *   range copy        copy_file_range          none (clonefile and     none
 *                                              fcopyfile copy whole
 *                                              files only)
 *   write-back        sync_file_range          none                    fdatasync
 *   drop from cache   -                        none                    posix_fadvise
 *   reserve memory    MAP_ANONYMOUS            MAP_ANON                /dev/zero
 *                     | MAP_NORESERVE
 *   lock memory       mlock as a system call   mlock                   mlock
 *   process memory    /proc/self/status        task_info,              none: unknown
 *                                              proc_pid_rusage
 *   timed wait        -                        relative_np wait        monotonic clock
 *   shared library    libNAME.so.MAJOR         libNAME.MAJOR.dylib     libNAME.so.MAJOR
 *     (on demand)     dlopen                   dlopen                  dlopen
 *   AMX permission    arch_prctl               none: no AMX            assumed granted
 *                     (ARCH_GET_XCOMP_SUPP)
 *
 * What stays outside because POSIX has it and every target system has
 * it: statvfs (free space), mmap/munmap, posix_memalign, getrlimit,
 * clock_gettime(CLOCK_MONOTONIC) (gm_now_ns in internal.h), open_memstream.
 * dlopen is POSIX too, but it is here all the same, so that one place says
 * which libraries the program loads on demand and how their files are named.
 */
#ifndef GGUFMAP_OS_H
#define GGUFMAP_OS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a function returns when this system (or this file) cannot do it. */
#define GM_OS_UNSUPPORTED (-1)

/* ---- which implementation ---- */

/* "linux", "darwin" or "posix": the implementation this build uses. */
const char *gm_os_name(void);

/* ---- files ---- */

/* Renames from onto to unless to exists (then EEXIST, and neither path is
 * touched).  Returns 0 or an errno.  Where the file system has no atomic
 * no-replace rename, link() and unlink() do it: link refuses an existing
 * path too. */
int gm_os_rename_noreplace(const char *from, const char *to);

/* Flushes fd's data and metadata to the storage device.  On macOS fsync
 * leaves them in the drive's cache; F_FULLFSYNC does not.  0 or an errno. */
int gm_os_fsync(int fd);

/* Fills buf with n random bytes for a temporary file's name.  False when
 * the system gives none (the caller then mixes the clock and the pid). */
bool gm_os_random(void *buf, size_t n);

/* Takes an exclusive lock on the whole file open at fd, without waiting:
 * 0, or an errno (EAGAIN/EACCES: someone holds it).  The lock belongs to
 * this open file description and goes when it is closed or the process
 * ends, however it ends (linux: F_OFD_SETLK, so two locks of one process
 * on two descriptors exclude each other too; darwin: flock; posix: fcntl's
 * F_SETLK, which belongs to the process instead, and which closing any
 * descriptor of the file releases). */
int gm_os_try_lock_file(int fd);

/* ---- shared libraries, loaded on demand ---- */

/* A function of a loaded library, as a generic function pointer: cast it
 * to its own type before calling it. */
typedef void (*gm_os_function)(void);

/* The usual file name of version major of library NAME on this system
 * ("libcurl.so.4", "libcurl.4.dylib") into buf. */
void gm_os_library_name(char *buf, size_t cap, const char *name, int major);
/* Loads the shared library file (a name the dynamic loader looks up, or a
 * path), with its symbols local to it; its handle, or NULL with why filled
 * (dlerror). */
void *gm_os_library_open(const char *file, char *why, size_t cap);
/* Unloads it (its functions must not be called again).  libcurl is never
 * unloaded: what it pulls in keeps exit handlers (remote_curl.h). */
void gm_os_library_close(void *lib);
/* The function name of a library gm_os_library_open loaded, or NULL. */
gm_os_function gm_os_library_symbol(void *lib, const char *name);

/* ---- sparse files ---- */

/* The first byte of data at or after pos, at most end: end when only a hole
 * follows, pos when the system cannot tell (posix: always; then all is
 * data) and when pos is at or past the end of the file (a file shorter
 * than the caller thinks: the caller's read there reports it).  A hole
 * that runs to the end of the file ends there: the end of a file that
 * shrank to less than end is returned, not end. */
uint64_t gm_os_next_data(int fd, uint64_t pos, uint64_t end);
/* The first hole after pos, at most end (the end of the file counts as
 * one; end when the system cannot tell). */
uint64_t gm_os_next_hole(int fd, uint64_t pos, uint64_t end);

/* Whether gm_os_next_data can report a hole at all on this system (false:
 * posix, where every byte counts as data). */
bool gm_os_sees_holes(void);

/* ---- copying and write-back (repack's copy engine) ---- */

/* Whether a range copy on fd's file system does better than writing the
 * bytes: it shares blocks or copies on the server (linux: Btrfs, XFS,
 * bcachefs, ZFS, OCFS2, NFS, SMB).  False where there is no range copy. */
bool gm_os_copy_range_pays(int fd);

/* Has the kernel copy n bytes from in_fd at in_off to out_fd at out_off;
 * *copied says how many it did.  Returns 0, an errno, or GM_OS_UNSUPPORTED
 * where it cannot copy between these files (the caller writes the rest). */
int gm_os_copy_range(int in_fd, uint64_t in_off, int out_fd, uint64_t out_off, size_t n, size_t *copied);

/* Asks the system to start writing [off, off+len) of fd to the disk, without
 * waiting (nothing where it cannot be asked). */
void gm_os_writeback_start(int fd, uint64_t off, uint64_t len);
/* Waits until [off, off+len) of fd is on the disk (posix: all of fd's data).
 * Returns 0, an errno, or GM_OS_UNSUPPORTED. */
int gm_os_writeback_wait(int fd, uint64_t off, uint64_t len);
/* Lets [off, off+len) of fd leave the page cache (already on the disk);
 * nothing where the system has no such advice. */
void gm_os_drop_cache(int fd, uint64_t off, uint64_t len);

/* ---- memory ---- */

/* Reserves len bytes of address space, inaccessible until mprotect opens
 * them (memory is committed only as pages are touched); NULL when it
 * cannot.  munmap frees it.  POSIX.1-2008 has no anonymous mapping: the
 * posix way maps /dev/zero privately, as Unix did before MAP_ANON. */
void *gm_os_reserve(size_t len);

/* Locks (wires) or unlocks [p, p+len), whole pages.  0 or an errno.  Linux
 * makes the system call itself: AddressSanitizer replaces the libc mlock by
 * one that does nothing, so a sanitized build would lock nothing (under the
 * posix implementation it does: that build's locks are not the kernel's). */
int gm_os_lock(const void *p, size_t len);
int gm_os_unlock(const void *p, size_t len);
/* RLIMIT_MEMLOCK in bytes: UINT64_MAX when unlimited, 0 when unknown. */
uint64_t gm_os_lock_limit(void);

/* What the system says of this process's memory.  A field is valid only
 * when its bit is in known. */
enum {
    GM_OS_MEM_LOCKED = 1u << 0,   /* linux VmLck, darwin wired bytes */
    GM_OS_MEM_PINNED = 1u << 1,   /* linux VmPin (pinned by drivers) */
    GM_OS_MEM_RESIDENT = 1u << 2, /* linux VmRSS, darwin resident_size */
    GM_OS_MEM_VIRTUAL = 1u << 3,  /* linux VmSize, darwin virtual_size */
};
typedef struct gm_os_memory {
    unsigned known;               /* GM_OS_MEM_* bits */
    uint64_t locked, pinned, resident, virtual_bytes;
} gm_os_memory;

/* Fills *m (known is 0 where the system says nothing: posix).  Returns
 * whether any field is known. */
bool gm_os_memory_read(gm_os_memory *m);

/* ---- threads ---- */

/* The CPUs online (at least 1). */
unsigned gm_os_cpu_count(void);
/* Initialises c for gm_os_cond_wait_ms (on the monotonic clock where the
 * system lets a condition use it).  0 or an errno. */
int gm_os_cond_init(pthread_cond_t *c);
/* Waits on c (m locked) for at most ms milliseconds, measured so that a
 * change of the wall clock does not shorten or stretch it.  Returns 0 or
 * ETIMEDOUT. */
int gm_os_cond_wait_ms(pthread_cond_t *c, pthread_mutex_t *m, unsigned ms);

/* ---- the processor ---- */

/* The x86 features by which ggml picks its CPU variant
 * (ggml-cpu/arch/x86/cpu-feats.cpp), as CPUID reports them, without asking
 * the system whether it saves their registers (ggml does not either); 0 on
 * another processor.  Bits GM_X86_* (src/device.h). */
uint32_t gm_os_x86_features(void);
/* Whether the kernel lets a process use AMX tile data, which ggml asks
 * before it offers its AMX buffer type (ggml_amx_init: arch_prctl
 * ARCH_REQ_XCOMP_PERM).  Linux: the features the kernel supports
 * (ARCH_GET_XCOMP_SUPP, Linux 5.16+) include XTILEDATA, asked without
 * changing the process; darwin: false (ggml_amx_init refuses); posix:
 * true (nothing to ask; where the processor has AMX, the kernel that
 * runs llama.cpp is assumed to grant it). */
bool gm_os_amx_permitted(void);

#endif

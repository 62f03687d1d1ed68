/*
 * repack_journal.c - what a repack that was killed (SIGKILL, a crash, the
 * power) leaves in the output's folder, and how the next repack there
 * cleans it up.
 *
 * The problem.  A repack writes each output shard to FINAL.tmp-XXXXXX and,
 * once all are written, checked and fsynced, renames them into place, the
 * first shard (the one llama.cpp opens) last.  A process killed before that
 * leaves full-size temporaries that nothing ever removes; one killed between
 * two renames leaves some shards under their final names without the
 * first, and the same command then refuses to overwrite them.
 *
 * Data structure.  Before it creates anything, a repack creates a journal
 * beside its outputs, OUT.ggufmap-journal (O_EXCL: two repacks cannot
 * write the same output), takes a lock on it (gm_os_try_lock_file: the
 * kernel drops it when the process dies, however it dies), and appends one record
 * per temporary as soon as it is created, fsynced:
 *
 *   ggufmap-repack-journal 1\n
 *   tmp DEV INO LEN\n<LEN bytes: the temporary's path>\n   (one per shard)
 *
 * The final name is the temporary's without its ".tmp-XXXXXX"; a rename
 * keeps the inode, so DEV INO identify the file under either name.  When
 * the repack ends, well or not, it has removed what it made (or placed it
 * all) and removes the journal.
 *
 * Recovery.  Every repack that writes into a folder first looks there for
 * journals whose lock it can take (their writer is dead; a live repack
 * holds its lock) and settles each:
 *   - every recorded file is under its final name: the killed run had
 *     placed its whole output; it is complete (each shard was checked and
 *     fsynced before the first rename) and is kept;
 *   - otherwise the output is removed: each recorded temporary, and each
 *     final name that holds a recorded file (same device and inode), and
 *     nothing else: a file that is not provably the killed run's own is
 *     left alone.
 * Then the journal goes.  So after the next repack the destination names
 * hold a whole output or none, and no temporary accumulates.  Until then,
 * a reader sees no partial set either: the first shard is renamed last,
 * and without it neither llama.cpp nor ggufmap opens the others.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os.h"
#include "repack_internal.h"

#define JOURNAL_MAGIC "ggufmap-repack-journal 1\n"
#define JOURNAL_SUFFIX ".ggufmap-journal"
#define TMP_SUFFIX_LEN 11 /* ".tmp-XXXXXX" (fileio.c's temporary names) */

/* ------------------------------------------------------------------------ */
/* Writing                                                                   */
/* ------------------------------------------------------------------------ */

/* An exclusive lock on the whole file, held by this open file (os.h);
 * false when another holds it. */
static bool lock_whole(int fd) { return gm_os_try_lock_file(fd) == 0; }

char *rp_journal_path(const char *out) {
    size_t len = strlen(out), prefix;
    uint32_t index, count;
    if (ggufmap_split_parse(out, &prefix, &index, &count)) len = prefix;
    else if (len > 5 && strcmp(out + len - 5, ".gguf") == 0) len -= 5;
    size_t cap = len + sizeof JOURNAL_SUFFIX;
    char *p = malloc(cap);
    if (p) snprintf(p, cap, "%.*s%s", (int)len, out, JOURNAL_SUFFIX);
    return p;
}

/* Appends bytes and makes them durable. */
static int append(int fd, const void *bytes, size_t n) {
    off_t end = lseek(fd, 0, SEEK_END);
    int e = end < 0 ? errno : gm_pwrite_full(fd, bytes, n, (uint64_t)end);
    return e ? e : gm_os_fsync(fd);
}

int rp_journal_begin(rp_journal *j, const char *path, ggufmap_error *err) {
    j->fd = -1;
    j->path = strdup(path);
    if (!j->path) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    j->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (j->fd < 0) {
        int e = errno;
        free(j->path);
        j->path = NULL;
        if (e == EEXIST)
            return gm_fail_errno(err, e, "%s: another ggufmap repack is writing this output now", path);
        return gm_fail_errno(err, e, "%s: cannot create the repack's journal", path);
    }
    int e = lock_whole(j->fd) ? append(j->fd, JOURNAL_MAGIC, sizeof JOURNAL_MAGIC - 1) : errno;
    if (!e) gm_sync_parent(path);
    if (e) {
        rp_journal_end(j);
        return gm_fail_errno(err, e, "%s: cannot write the repack's journal", path);
    }
    return GGUFMAP_OK;
}

int rp_journal_add(rp_journal *j, const gm_tempfile *t, ggufmap_error *err) {
    struct stat st;
    if (fstat(t->fd, &st) != 0) return gm_fail_errno(err, errno, "%s: cannot stat", t->tmp);
    size_t n = strlen(t->tmp);
    char head[96];
    int k = snprintf(head, sizeof head, "tmp %" PRIu64 " %" PRIu64 " %zu\n", (uint64_t)st.st_dev, (uint64_t)st.st_ino, n);
    char *rec = malloc((size_t)k + n + 1);
    if (!rec) return gm_fail(err, GGUFMAP_ENOMEM, "out of memory");
    memcpy(rec, head, (size_t)k);
    memcpy(rec + k, t->tmp, n);
    rec[(size_t)k + n] = '\n';
    int e = append(j->fd, rec, (size_t)k + n + 1);
    free(rec);
    return e ? gm_fail_errno(err, e, "%s: cannot write the repack's journal", j->path) : GGUFMAP_OK;
}

void rp_journal_end(rp_journal *j) {
    if (j->path) {
        unlink(j->path);
        gm_sync_parent(j->path);
    }
    if (j->fd >= 0) close(j->fd); /* and with it the lock */
    free(j->path);
    j->path = NULL;
    j->fd = -1;
}

/* ------------------------------------------------------------------------ */
/* Recovery                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct record {
    uint64_t dev, ino;
    char *tmp, *final;
} record;

/* The records of a journal's bytes; -1 when they are not a journal (then
 * nothing is touched).  A last record cut short by the kill is dropped:
 * its temporary did not get its first byte written before the record was
 * durable. */
static int parse(const char *text, size_t n, record **out, size_t *count) {
    *out = NULL;
    *count = 0;
    size_t magic = sizeof JOURNAL_MAGIC - 1, pos = magic;
    if (n < magic || memcmp(text, JOURNAL_MAGIC, magic) != 0) return -1;
    record *r = NULL;
    size_t nr = 0;
    while (pos < n) {
        uint64_t dev, ino, len;
        int used = 0;
        const char *line = text + pos, *nl = memchr(line, '\n', n - pos);
        if (!nl) break;
        char head[96];
        size_t hl = (size_t)(nl - line);
        if (hl >= sizeof head) goto bad;
        memcpy(head, line, hl);
        head[hl] = '\0';
        if (sscanf(head, "tmp %" SCNu64 " %" SCNu64 " %" SCNu64 "%n", &dev, &ino, &len, &used) != 3 ||
            (size_t)used != hl)
            goto bad;
        pos += hl + 1;
        if (len <= TMP_SUFFIX_LEN) goto bad;
        if (len > n - pos || n - pos - len < 1) break; /* cut short */
        const size_t name_len = (size_t)len; /* below n - pos: it fits */
        if (text[pos + name_len] != '\n' || memchr(text + pos, '\0', name_len)) goto bad;
        record *more = realloc(r, (nr + 1) * sizeof *r);
        if (!more) goto bad;
        r = more;
        r[nr] = (record){dev, ino, strndup(text + pos, name_len), strndup(text + pos, name_len - TMP_SUFFIX_LEN)};
        if (!r[nr].tmp || !r[nr].final) {
            free(r[nr].tmp);
            free(r[nr].final);
            goto bad;
        }
        if (strncmp(r[nr].tmp + name_len - TMP_SUFFIX_LEN, ".tmp-", 5) != 0) {
            free(r[nr].tmp);
            free(r[nr].final);
            goto bad;
        }
        nr++;
        pos += len + 1;
    }
    *out = r;
    *count = nr;
    return 0;
bad:
    for (size_t i = 0; i < nr; i++) {
        free(r[i].tmp);
        free(r[i].final);
    }
    free(r);
    return -1;
}

/* Whether path holds the recorded file (same device and inode); its size. */
static bool holds(const char *path, const record *r, uint64_t *size) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_dev != r->dev || (uint64_t)st.st_ino != r->ino)
        return false;
    *size = (uint64_t)st.st_size;
    return true;
}

/* Settles one journal whose writer is dead (fd locked by us). */
static void settle(const record *r, size_t n, ggufmap_repack_recovery *rec) {
    uint64_t size = 0;
    bool complete = n > 0;
    for (size_t i = 0; i < n && complete; i++) complete = holds(r[i].final, &r[i], &size);
    if (complete) {
        rec->kept_outputs++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *both[2] = {r[i].tmp, r[i].final};
        for (int k = 0; k < 2; k++)
            if (holds(both[k], &r[i], &size) && unlink(both[k]) == 0) {
                rec->removed_files++;
                rec->removed_bytes += size;
            }
    }
}

/* Recovers the journal at path if its writer is dead. */
static void recover_one(const char *path, ggufmap_repack_recovery *rec) {
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0) return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20) || !lock_whole(fd)) {
        close(fd); /* not a journal, or its repack is alive */
        return;
    }
    size_t n = (size_t)st.st_size;
    char *text = malloc(n + 1);
    record *r = NULL;
    size_t nr = 0;
    if (text && gm_pread_full(fd, text, n, 0) == 0 && parse(text, n, &r, &nr) == 0) {
        settle(r, nr, rec);
        if (unlink(path) == 0) rec->killed++;
    }
    for (size_t i = 0; i < nr; i++) {
        free(r[i].tmp);
        free(r[i].final);
    }
    free(r);
    free(text);
    close(fd);
}

void rp_journal_recover_dir(const char *dir, ggufmap_repack_recovery *rec) {
    memset(rec, 0, sizeof *rec);
    DIR *d = opendir(dir);
    if (!d) return; /* creating the outputs will say what is wrong with the folder */
    const size_t sl = sizeof JOURNAL_SUFFIX - 1;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= sl || strcmp(e->d_name + len - sl, JOURNAL_SUFFIX) != 0) continue;
        size_t cap = strlen(dir) + len + 2;
        char *path = malloc(cap);
        if (!path) break;
        snprintf(path, cap, "%s/%s", dir, e->d_name);
        recover_one(path, rec);
        free(path);
    }
    closedir(d);
    if (rec->killed) {
        size_t cap = strlen(dir) + 3;
        char *inside = malloc(cap); /* "DIR/.": gm_sync_parent syncs DIR */
        if (inside) snprintf(inside, cap, "%s/.", dir);
        if (inside) gm_sync_parent(inside);
        free(inside);
    }
}

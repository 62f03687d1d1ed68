/*
 * workers.c - the one worker pool of the library (hash and repack).
 *
 * Workload.  n independent items (tensors to hash or to copy), each done by
 * one call of job->run.  Workers take the next item from one atomic counter,
 * so the order of job->run's items is the order the caller laid out (repack
 * puts the largest first, so that the last to finish is a small one).  Each
 * worker owns one scratch buffer (job->scratch_bytes: the read buffer), so
 * memory is n_threads buffers whatever the item sizes.
 *
 * Errors and cancellation.  The first failing item's error is kept (under a
 * mutex) and no worker takes a new item after it, nor after *job->cancel
 * becomes non-zero; items already started finish or notice the flag
 * themselves.  The calling thread waits on a condition variable and calls
 * job->tick every tick_ms while it waits (progress lines), and returns as
 * soon as the last worker is done.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"
#include "os.h"

/* Without a request: the CPUs online, at most this many (more workers than
 * disks seldom helps; hash and repack share the rule). */
#define DEFAULT_MAX_WORKERS 4u

unsigned gm_workers_count(unsigned requested) {
    if (requested) return requested > GM_WORKERS_MAX ? GM_WORKERS_MAX : requested;
    unsigned cpus = gm_os_cpu_count();
    return cpus > DEFAULT_MAX_WORKERS ? DEFAULT_MAX_WORKERS : cpus;
}

typedef struct pool {
    const gm_workers_job *job;
    atomic_llong next;
    atomic_int failed;
    unsigned running;          /* workers not yet returned; under lock */
    pthread_mutex_t lock;
    pthread_cond_t done;       /* signalled when running drops */
    ggufmap_error err;         /* the first error; under lock */
} pool;

static bool stop_requested(const pool *p) {
    return atomic_load(&p->failed) || (p->job->cancel && *p->job->cancel);
}

static void *worker(void *arg) {
    pool *p = arg;
    const gm_workers_job *job = p->job;
    uint8_t *scratch = job->scratch_bytes ? malloc(job->scratch_bytes) : NULL;
    ggufmap_error e;
    ggufmap_error_clear(&e);
    int rc = job->scratch_bytes && !scratch ? gm_fail(&e, GGUFMAP_ENOMEM, "out of memory for a worker's buffer") : 0;
    while (!rc && !stop_requested(p)) {
        int64_t i = (int64_t)atomic_fetch_add(&p->next, 1);
        if (i >= job->n_items) break;
        rc = job->run(job->ctx, i, scratch, &e);
    }
    free(scratch);
    pthread_mutex_lock(&p->lock);
    if (rc && !atomic_load(&p->failed)) {
        p->err = e;
        atomic_store(&p->failed, 1);
    }
    p->running--;
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Waits until every worker returned, calling job->tick every tick_ms. */
static void wait_all(pool *p) {
    const gm_workers_job *job = p->job;
    unsigned ms = job->tick_ms ? job->tick_ms : 100;
    pthread_mutex_lock(&p->lock);
    while (p->running > 0) {
        int w = gm_os_cond_wait_ms(&p->done, &p->lock, ms);
        if (w == ETIMEDOUT && p->running > 0 && job->tick) {
            pthread_mutex_unlock(&p->lock);
            job->tick(job->tick_ctx);
            pthread_mutex_lock(&p->lock);
        }
    }
    pthread_mutex_unlock(&p->lock);
}

int gm_workers_run(const gm_workers_job *job, ggufmap_error *err) {
    pool p = {.job = job};
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, 0);
    pthread_mutex_init(&p.lock, NULL);
    gm_os_cond_init(&p.done);
    unsigned n = gm_workers_count(job->n_threads);
    if ((int64_t)n > job->n_items) n = job->n_items > 0 ? (unsigned)job->n_items : 1;
    pthread_t tids[GM_WORKERS_MAX];
    unsigned started = 0;
    pthread_mutex_lock(&p.lock);
    for (; started < n; started++) {
        if (pthread_create(&tids[started], NULL, worker, &p) != 0) break;
        p.running++;
    }
    pthread_mutex_unlock(&p.lock);
    if (started == 0) {
        p.running = 1; /* no thread could start: do the work here */
        worker(&p);
    } else {
        wait_all(&p);
        for (unsigned k = 0; k < started; k++) pthread_join(tids[k], NULL);
    }
    if (job->tick) job->tick(job->tick_ctx);
    pthread_cond_destroy(&p.done);
    pthread_mutex_destroy(&p.lock);
    if (atomic_load(&p.failed)) {
        if (err) *err = p.err;
        return p.err.status ? p.err.status : GGUFMAP_EIO;
    }
    if (job->cancel && *job->cancel) return gm_fail(err, GGUFMAP_EIO, "interrupted by a signal");
    return GGUFMAP_OK;
}

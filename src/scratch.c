/* Scratch buffers for split plans: the partials that pass from a split plan's first
   kernel to the next. Allocating one at every call costs as much as the kernels on
   small shapes, so buffers are reused in two ways (docs/DESIGN.md, 'Scratch buffers
   for split calls').

   On an in-order queue a buffer is bound to the queue: a call's kernels run after
   those of every call enqueued before it on that queue, so the next call may take the
   buffer as soon as this one has enqueued, with no event and no callback. The entry
   retains the queue (a released handle could otherwise come back as another queue)
   and is dropped once the application no longer holds the queue, or by
   clnorm_release_cache.

   Otherwise buffers are pooled per context and handed back by a completion callback
   on the call's last event, so no later call reuses one while a kernel reads it.

   clnorm_release_cache may run while calls hold buffers: it frees the idle ones, and
   marks those held (bound to a queue and in a call, or waiting for their callback)
   so that the call's release or the callback frees them instead of keeping them. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "scratch.h"
#include "faults.h"
#include "status.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct cln_scratch {
    cl_context ctx;
    cl_command_queue queue; /* retained when bound to an in-order queue, else NULL */
    cl_mem mem;
    size_t bytes;
    int held; /* bound: a call between acquire and release */
    int dropped; /* released by clnorm_release_cache while held: freed, not kept */
    cl_mem sync;      /* the coop variant's CLN_SYNC_WORDS words, created at its first call */
    size_t sync_next; /* the first of them no call has used since they were zeroed */
    struct cln_scratch *next;
};

static pthread_mutex_t cln_scratch_lock = PTHREAD_MUTEX_INITIALIZER;
static cln_scratch *cln_pool;     /* free pooled buffers */
static cln_scratch *cln_inflight; /* pooled buffers waiting for their callback */
static cln_scratch *cln_bound;    /* buffers bound to in-order queues */
/* Bound entries kept at most; applications with more queues use the pool beyond. */
#define CLN_BOUND_MAX 16

static void cln_scratch_free(cln_scratch *s)
{
    if (s->mem) clReleaseMemObject(s->mem);
    if (s->sync) clReleaseMemObject(s->sync);
    if (s->queue) clReleaseCommandQueue(s->queue);
    free(s);
}

/* Drops the bound entries no call holds whose queue only this cache still
   references (when ctx is NULL), or all of ctx's idle ones. Caller holds the lock. */
static void cln_bound_prune_locked(cl_context ctx, int all_of_ctx)
{
    cln_scratch **pp = &cln_bound;
    while (*pp) {
        cln_scratch *s = *pp;
        cl_uint refs = 0;
        int drop = !s->held &&
                   (all_of_ctx ? (!ctx || s->ctx == ctx)
                               : clGetCommandQueueInfo(s->queue, CL_QUEUE_REFERENCE_COUNT,
                                                       sizeof refs, &refs, NULL) == CL_SUCCESS &&
                                     refs == 1);
        if (drop) {
            *pp = s->next;
            cln_scratch_free(s);
        } else {
            pp = &s->next;
        }
    }
}

static size_t cln_scratch_size(size_t bytes)
{
    size_t size = 4096;
    while (size < bytes) size *= 2;
    return size;
}

/* The buffer bound to in-order queue q, grown to bytes; NULL with *st unset when q has
   none and none can be bound (the caller pools instead) or another thread holds it. */
static cln_scratch *cln_bound_take_locked(cl_context ctx, cl_command_queue q, size_t bytes,
                                          clnorm_status *st)
{
    cln_scratch *s = cln_bound;
    int n = 0;
    for (; s && s->queue != q; s = s->next) n++;
    if (!s) {
        if (n >= CLN_BOUND_MAX) {
            cln_bound_prune_locked(NULL, 0);
            n = 0;
            for (cln_scratch *t = cln_bound; t; t = t->next) n++;
            if (n >= CLN_BOUND_MAX) return NULL;
        }
        if (!(s = calloc(1, sizeof *s))) return NULL;
        clRetainCommandQueue(q);
        s->queue = q;
        s->ctx = ctx;
        s->next = cln_bound;
        cln_bound = s;
    }
    if (s->held) return NULL;
    if (s->bytes < bytes) {
        /* Kernels still queued keep the old buffer alive until they finish. */
        if (s->mem) clReleaseMemObject(s->mem);
        s->mem = NULL;
        s->bytes = 0;
        cl_int err;
        size_t size = cln_scratch_size(bytes);
        s->mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
        if (err != CL_SUCCESS) {
            s->mem = NULL;
            *st = cln_cl_fail(err, "clCreateBuffer(split partials, %zu bytes)", size);
            return NULL;
        }
        s->bytes = size;
    }
    s->held = 1;
    return s;
}

clnorm_status cln_scratch_acquire(cl_context ctx, cl_command_queue q, int in_order,
                                  size_t bytes, cln_scratch **out)
{
    clnorm_status st = CLNORM_SUCCESS;
    pthread_mutex_lock(&cln_scratch_lock);
    if (in_order && (*out = cln_bound_take_locked(ctx, q, bytes, &st)) != NULL) {
        pthread_mutex_unlock(&cln_scratch_lock);
        return CLNORM_SUCCESS;
    }
    if (st) {
        pthread_mutex_unlock(&cln_scratch_lock);
        return st;
    }
    for (cln_scratch **pp = &cln_pool; *pp; pp = &(*pp)->next)
        if ((*pp)->ctx == ctx && (*pp)->bytes >= bytes) {
            *out = *pp;
            *pp = (*pp)->next;
            pthread_mutex_unlock(&cln_scratch_lock);
            return CLNORM_SUCCESS;
        }
    pthread_mutex_unlock(&cln_scratch_lock);
    size_t size = cln_scratch_size(bytes);
    cln_scratch *s = calloc(1, sizeof *s);
    if (!s) return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a scratch buffer");
    cl_int err;
    s->mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err != CL_SUCCESS) {
        free(s);
        return cln_cl_fail(err, "clCreateBuffer(split partials, %zu bytes)", size);
    }
    s->ctx = ctx;
    s->bytes = size;
    *out = s;
    return CLNORM_SUCCESS;
}

cl_mem cln_scratch_mem(const cln_scratch *s) { return s->mem; }

clnorm_status cln_scratch_sync(cln_scratch *s, cl_command_queue q, size_t words, cl_mem *mem,
                               cl_uint *base, cl_event *zeroed)
{
    /* The caller holds s alone (held, or out of the pool) until release. */
    *zeroed = NULL;
    const size_t pool = (cln_faults() & CLN_FAULT_SYNC_SMALL) ? CLN_SYNC_WORDS_SMALL : CLN_SYNC_WORDS;
    /* A call that needs more than the pool (only under the fault) takes the buffer's
       words from the start after a refill. */
    if (words > CLN_SYNC_WORDS)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%zu synchronisation words asked, %d at most",
                        words, CLN_SYNC_WORDS);
    cl_int err = CL_SUCCESS;
    /* Calls take words from an even index, so 64-bit pairs after the ticket's pair of
       words are aligned. */
    size_t next = (s->sync_next + 1) & ~(size_t)1;
    if (!s->sync) {
        /* The first zeros come from the host: Oclgrind's uninitialised-value check does
           not see a fill's zeros as written, and most programs make one coop call or a
           few. */
        cl_uint *zeros = calloc(CLN_SYNC_WORDS, sizeof *zeros);
        if (!zeros) return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for zeros");
        cl_context ctx;
        err = clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
        if (err == CL_SUCCESS)
            s->sync = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                     CLN_SYNC_WORDS * sizeof(cl_uint), zeros, &err);
        free(zeros);
        if (err != CL_SUCCESS) {
            s->sync = NULL;
            return cln_cl_fail(err, "creating the synchronisation words");
        }
        next = 0;
    } else if (next + words > pool) {
        /* A fill on q, not a write from the host that returns once done: that would
           stall the queue every few hundred calls. The calls that used the old words
           are done before it runs (on an in-order queue by its order; a pooled buffer
           comes back only once its call is done), and the kernel after it waits for
           its event, as q may run out of order. */
        const cl_uint zero = 0;
        err = clEnqueueFillBuffer(q, s->sync, &zero, sizeof zero, 0, CLN_SYNC_WORDS * sizeof(cl_uint),
                                  0, NULL, zeroed);
        if (err != CL_SUCCESS) return cln_cl_fail(err, "clEnqueueFillBuffer(synchronisation words)");
        next = 0;
    }
    *mem = s->sync;
    *base = (cl_uint)next;
    s->sync_next = next + words;
    return CLNORM_SUCCESS;
}

int cln_scratch_needs_event(const cln_scratch *s) { return s && !s->queue; }

static void CL_CALLBACK cln_scratch_done(cl_event ev, cl_int status, void *user)
{
    (void)ev;
    (void)status;
    cln_scratch *s = user;
    pthread_mutex_lock(&cln_scratch_lock);
    for (cln_scratch **pp = &cln_inflight; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    const int dropped = s->dropped;
    if (!dropped) {
        s->next = cln_pool;
        cln_pool = s;
    }
    pthread_mutex_unlock(&cln_scratch_lock);
    if (dropped) cln_scratch_free(s);
}

void cln_scratch_release(cln_scratch *s, cl_event after)
{
    if (!s) return;
    if (s->queue) { /* bound: the queue's order protects it from here on */
        pthread_mutex_lock(&cln_scratch_lock);
        s->held = 0;
        const int dropped = s->dropped;
        pthread_mutex_unlock(&cln_scratch_lock);
        /* Unlinked by a release: kernels still queued keep the buffer alive. */
        if (dropped) cln_scratch_free(s);
        return;
    }
    /* Without an event (nothing was enqueued) it is free at once; if the callback
       cannot be set, drop the buffer: OpenCL frees it once the kernels are done. */
    if (!after) {
        cln_scratch_done(NULL, CL_COMPLETE, s);
        return;
    }
    pthread_mutex_lock(&cln_scratch_lock);
    s->next = cln_inflight;
    cln_inflight = s;
    pthread_mutex_unlock(&cln_scratch_lock);
    if (clSetEventCallback(after, CL_COMPLETE, cln_scratch_done, s) != CL_SUCCESS) {
        pthread_mutex_lock(&cln_scratch_lock);
        for (cln_scratch **pp = &cln_inflight; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        pthread_mutex_unlock(&cln_scratch_lock);
        cln_scratch_free(s);
    }
}

/* Whether a buffer the release marked still waits for its callback. */
static int cln_scratch_busy_locked(void)
{
    for (cln_scratch *s = cln_inflight; s; s = s->next)
        if (s->dropped) return 1;
    return 0;
}

void cln_scratch_drop(cl_context ctx)
{
    pthread_mutex_lock(&cln_scratch_lock);
    /* Buffers waiting for their callback are freed by it. Completion callbacks may run
       a little after clFinish returns: wait for those of the calls enqueued before
       this release (at most two seconds; later calls' buffers are not waited for) so
       that no pooled buffer keeps a released context alive. */
    for (cln_scratch *s = cln_inflight; s; s = s->next)
        if (!ctx || s->ctx == ctx) s->dropped = 1;
    for (int i = 0; i < 2000 && cln_scratch_busy_locked(); i++) {
        pthread_mutex_unlock(&cln_scratch_lock);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&cln_scratch_lock);
    }
    cln_scratch **pp = &cln_pool;
    while (*pp) {
        cln_scratch *s = *pp;
        if (!ctx || s->ctx == ctx) {
            *pp = s->next;
            cln_scratch_free(s);
        } else {
            pp = &s->next;
        }
    }
    cln_bound_prune_locked(ctx, 1);
    /* Bound buffers a call holds leave the list; the call's release frees them. */
    for (cln_scratch **bp = &cln_bound; *bp;) {
        cln_scratch *s = *bp;
        if (s->held && (!ctx || s->ctx == ctx)) {
            *bp = s->next;
            s->dropped = 1;
        } else {
            bp = &s->next;
        }
    }
    pthread_mutex_unlock(&cln_scratch_lock);
}

/* The in-memory program cache. A program is built once per (context, device, dtype,
   reduction path, source, options) and shared by all threads. Kernel objects are
   lent to one caller at a time from a per-program pool, because clSetKernelArg on a
   shared cl_kernel is not thread-safe; arguments are captured at enqueue, so a
   kernel goes back to the pool right after its enqueue.

   clnorm_release_cache may run while other threads run operations: an entry is
   reference-counted (the list holds one reference, each call that found it or holds
   one of its kernels another), so release unlinks entries and the last user frees
   them. */
#include "program_cache.h"
#include "build_options.h"
#include "kernels.h"
#include "program_build.h"
#include "source.h"
#include "status.h"
#include "types.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cln_kslot {
    cl_kernel kernel;
    size_t max_wg; /* CL_KERNEL_WORK_GROUP_SIZE, queried once; 0 where not trusted */
    struct cln_kslot *next;
} cln_kslot;

typedef struct cln_prog {
    cl_context ctx;
    cl_device_id dev;
    uint64_t src_hash; /* hash of the source alone */
    char options[512];
    cl_program program;
    int state; /* 0 building, 1 ready (a failed build leaves the list) */
    int refs;  /* the list's (while linked), and one per call using it */
    /* Programs of one kernel (cln_programs_one) built from source keep the event of
       their first run; once it has completed, the binary, which then carries the
       compiled work-group function, goes to the disk cache (cln_capture). */
    const cln_profile *prof;
    size_t src_len;
    int capture;        /* 1: the binary is still to be stored */
    cl_event first_run; /* retained; NULL until the first run is enqueued */
    cln_kslot *free_kernels[CLN_K_COUNT];
    struct cln_prog *next;
} cln_prog;

typedef struct cln_lease_slot {
    cln_prog *prog;
    cln_kernel_id kid;
    cln_kslot *slot;
} cln_lease_slot;

static pthread_mutex_t cln_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cln_cache_built = PTHREAD_COND_INITIALIZER;
static cln_prog *cln_progs;

static void cln_prog_free(cln_prog *e)
{
    if (!e) return;
    for (int k = 0; k < CLN_K_COUNT; k++)
        while (e->free_kernels[k]) {
            cln_kslot *s = e->free_kernels[k];
            e->free_kernels[k] = s->next;
            clReleaseKernel(s->kernel);
            free(s);
        }
    if (e->first_run) clReleaseEvent(e->first_run);
    if (e->program) clReleaseProgram(e->program);
    clReleaseContext(e->ctx);
    free(e);
}

/* Stores the binary of e once its first run has completed; called with the cache
   lock held, which it drops around the driver calls. Returns 1 if it stored. */
static int cln_capture(cln_prog *e)
{
    cl_int status = CL_QUEUED;
    if (!e->capture || !e->first_run ||
        clGetEventInfo(e->first_run, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                       NULL) != CL_SUCCESS || status != CL_COMPLETE)
        return 0;
    e->capture = 0; /* once, even if it fails */
    /* The event has served: let it go now, so that it holds its queue no longer. */
    cl_event ev = e->first_run;
    e->first_run = NULL;
    e->refs++; /* e outlives a release while the lock is dropped */
    pthread_mutex_unlock(&cln_cache_lock);
    clReleaseEvent(ev);
    cln_program_store(e->prof, e->options, e->src_hash, e->src_len, e->program);
    pthread_mutex_lock(&cln_cache_lock);
    /* A release may have unlinked e meanwhile; the last reference frees it. */
    if (--e->refs == 0) cln_prog_free(e);
    return 1;
}

/* Drops one reference of e; called with the cache lock held. Returns e when that was
   the last, for the caller to free once the lock is dropped, else NULL. */
static cln_prog *cln_prog_unref(cln_prog *e)
{
    return --e->refs == 0 ? e : NULL;
}

static void cln_prog_put(cln_prog *e)
{
    pthread_mutex_lock(&cln_cache_lock);
    cln_prog *last = cln_prog_unref(e);
    pthread_mutex_unlock(&cln_cache_lock);
    cln_prog_free(last);
}


static clnorm_status cln_prog_get(cl_context ctx, cl_device_id dev, const cln_profile *p,
                                  clnorm_dtype dtype, cln_path path, cln_kernel_id only,
                                  cln_prog **out)
{
    char options[512];
    char *src = NULL;
    size_t len = 0;
    int owned = 0;
    clnorm_status st;
    cln_build_options(p, dtype, path, options, sizeof options);
    if (only != CLN_K_COUNT) cln_only_option(only, options, sizeof options);

    uint64_t src_hash = 0;
    if ((st = cln_source_for_build(&src, &len, &src_hash, &owned))) return st;
    pthread_mutex_lock(&cln_cache_lock);
    for (;;) {
        cln_prog *e = cln_progs;
        for (; e; e = e->next)
            if (e->ctx == ctx && e->dev == dev && e->src_hash == src_hash &&
                !strcmp(e->options, options))
                break;
        if (!e) break;
        if (e->state == 1) {
            e->refs++;
            pthread_mutex_unlock(&cln_cache_lock);
            cln_source_done(src, owned);
            *out = e;
            return CLNORM_SUCCESS;
        }
        /* Another thread is building it: wait, then look again (it may have failed
           and been removed, in which case this thread builds and reports). */
        pthread_cond_wait(&cln_cache_built, &cln_cache_lock);
    }
    cln_prog *e = calloc(1, sizeof *e);
    if (!e) {
        pthread_mutex_unlock(&cln_cache_lock);
        cln_source_done(src, owned);
        return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a program cache entry");
    }
    clRetainContext(ctx);
    e->ctx = ctx;
    e->dev = dev;
    e->src_hash = src_hash;
    e->src_len = len;
    e->prof = p;
    snprintf(e->options, sizeof e->options, "%s", options);
    e->refs = 2; /* the list's and this call's */
    e->next = cln_progs;
    cln_progs = e;
    pthread_mutex_unlock(&cln_cache_lock);

    st = cln_program_build(ctx, dev, p, e->options, only != CLN_K_COUNT, src, len, src_hash,
                           &e->program, &e->capture);
    cln_source_done(src, owned);

    cln_prog *last = NULL;
    pthread_mutex_lock(&cln_cache_lock);
    if (st) {
        /* Building entries are never unlinked by a release, so e is still listed. */
        for (cln_prog **pp = &cln_progs; *pp; pp = &(*pp)->next)
            if (*pp == e) { *pp = e->next; break; }
        e->refs -= 2;
        last = e;
    } else {
        e->state = 1;
        *out = e;
    }
    pthread_cond_broadcast(&cln_cache_built);
    pthread_mutex_unlock(&cln_cache_lock);
    cln_prog_free(last);
    return st;
}

clnorm_status cln_kernel_acquire(cl_context ctx, cl_device_id dev, const cln_profile *p,
                                 clnorm_dtype dtype, cln_path path, cln_kernel_id kid,
                                 int one_kernel, cln_kernel_lease *out)
{
    cln_prog *e = NULL;
    clnorm_status st =
        cln_prog_get(ctx, dev, p, dtype, path, one_kernel ? kid : CLN_K_COUNT, &e);
    if (st) return st;
    /* The lease keeps the reference cln_prog_get took, until cln_kernel_return. */
    cln_lease_slot *ls = malloc(sizeof *ls);
    if (!ls) {
        cln_prog_put(e);
        return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a kernel lease");
    }
    ls->prog = e;
    ls->kid = kid;
    pthread_mutex_lock(&cln_cache_lock);
    cln_capture(e);
    out->wants_event = e->capture && !e->first_run;
    ls->slot = e->free_kernels[kid];
    if (ls->slot) e->free_kernels[kid] = ls->slot->next;
    pthread_mutex_unlock(&cln_cache_lock);
    if (!ls->slot) {
        cl_int err;
        cl_kernel k = clCreateKernel(e->program, cln_kernel_name(kid), &err);
        if (err != CL_SUCCESS) {
            free(ls);
            cln_prog_put(e);
            return cln_cl_fail(err, "clCreateKernel(\"%s\")", cln_kernel_name(kid));
        }
        ls->slot = malloc(sizeof *ls->slot);
        if (!ls->slot) {
            clReleaseKernel(k);
            free(ls);
            cln_prog_put(e);
            return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a kernel");
        }
        ls->slot->kernel = k;
        /* A kernel's limit never changes: read it here, not at every call. Rusticl 22
           and NVIDIA understate it (device.c), so it is not trusted there. */
        size_t m = 0;
        if (!p->kernel_wg_understated &&
            (err = clGetKernelWorkGroupInfo(k, e->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof m, &m,
                                            NULL)) != CL_SUCCESS) {
            clReleaseKernel(k);
            free(ls->slot);
            free(ls);
            cln_prog_put(e);
            return cln_cl_fail(err, "clGetKernelWorkGroupInfo(%s)", cln_kernel_name(kid));
        }
        ls->slot->max_wg = m;
        ls->slot->next = NULL;
    }
    out->kernel = ls->slot->kernel;
    out->max_wg = ls->slot->max_wg;
    out->slot = ls;
    return CLNORM_SUCCESS;
}

void cln_kernel_ran(cln_kernel_lease *lease, cl_event ev)
{
    cln_lease_slot *ls = lease->slot;
    if (!ls || !ev) return;
    pthread_mutex_lock(&cln_cache_lock);
    if (ls->prog->capture && !ls->prog->first_run && clRetainEvent(ev) == CL_SUCCESS)
        ls->prog->first_run = ev;
    pthread_mutex_unlock(&cln_cache_lock);
}

void cln_kernel_return(cln_kernel_lease *lease)
{
    cln_lease_slot *ls = lease->slot;
    if (!ls) return;
    /* The kernel goes back to its program's pool even where a release has unlinked
       the program: the last user frees the pool with the program. */
    pthread_mutex_lock(&cln_cache_lock);
    ls->slot->next = ls->prog->free_kernels[ls->kid];
    ls->prog->free_kernels[ls->kid] = ls->slot;
    cln_prog *last = cln_prog_unref(ls->prog);
    pthread_mutex_unlock(&cln_cache_lock);
    cln_prog_free(last);
    free(ls);
    lease->slot = NULL;
    lease->kernel = NULL;
}

void cln_program_cache_drop(cl_context context)
{
    pthread_mutex_lock(&cln_cache_lock);
    /* Store what has run to completion; the lock drops during a store, so the scan
       starts again after each. */
    for (cln_prog *e = cln_progs; e;)
        e = (!context || e->ctx == context) && e->state == 1 && cln_capture(e) ? cln_progs
                                                                             : e->next;
    /* Entries still being built belong to a running call; leave them. The others
       leave the list; those no call holds are freed here, after the lock. */
    cln_prog *dead = NULL, **pp = &cln_progs;
    while (*pp) {
        cln_prog *e = *pp;
        if ((!context || e->ctx == context) && e->state == 1) {
            *pp = e->next;
            if (cln_prog_unref(e)) {
                e->next = dead;
                dead = e;
            }
        } else {
            pp = &e->next;
        }
    }
    pthread_mutex_unlock(&cln_cache_lock);
    while (dead) {
        cln_prog *e = dead;
        dead = e->next;
        cln_prog_free(e);
    }
}

/* Operations one at a time per process: every one on PoCL, and the coop variant's
   calls among themselves (serial.h). On PoCL, its CPU driver keeps a loaded
   binary per (kernel, local size, grid width) but, when a launch ends, drops the use
   count of the first binary matching (kernel, local size) only. Two launches of one
   kernel in flight with different grid widths (two queues, two threads) then drop the
   wrong count and PoCL aborts on `found->ref_count > 0` (docs/DESIGN.md, 'Serialised
   operations on PoCL'). On PoCL each operation waits for the one before: through its
   wait list in the same context, on the host across contexts. PoCL runs a kernel on
   every core anyway, so little concurrency is lost. An operation the caller holds
   back with a user event is not waited for by later ones, which may not depend on it:
   the caller may wait for them before it sets the event.

   Coop calls on one in-order queue already run one at a time, so the record of such a
   call is its queue, not its event: asking NVIDIA's driver for an event costs several
   microseconds of host time a call, and an event in the wait list delays the next
   launch by about as much (docs/DESIGN.md, 'Host cost per call'). Only when a call
   comes on another queue does a marker on the recorded queue stand for what was
   enqueued there. The chain of every operation keeps events, so that what the caller
   enqueues between two operations does not hold back the second. */
#include "serial.h"
#include "config.h"
#include "types.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Per chain: its lock, and its last operation's final event or, where that went to an
   in-order queue, the queue; either retained, never both. */
static pthread_mutex_t cln_serial_locks[CLN_SERIAL_CHAINS] = {PTHREAD_MUTEX_INITIALIZER,
                                                              PTHREAD_MUTEX_INITIALIZER};
static cl_event cln_serial_lasts[CLN_SERIAL_CHAINS];
static cl_command_queue cln_serial_queues[CLN_SERIAL_CHAINS];

int cln_serial_wanted(const cln_profile *p)
{
    const int forced = cln_config_now()->pub.serial; /* CLNORM_SERIAL */
    return forced >= 0 ? forced : p->pocl_major > 0;
}

/* Whether the wait list holds a user event not yet set. Only on the chain of every
   operation: coop calls must never run two at once, whatever holds them back. */
static int cln_serial_gated(cln_serial_chain c, cl_uint num_wait, const cl_event *wait_list)
{
    if (c != CLN_SERIAL_ALL) return 0;
    for (cl_uint i = 0; i < num_wait; i++) {
        cl_command_type type = 0;
        cl_int status = CL_COMPLETE;
        if (clGetEventInfo(wait_list[i], CL_EVENT_COMMAND_TYPE, sizeof type, &type, NULL) ==
                CL_SUCCESS &&
            type == CL_COMMAND_USER &&
            clGetEventInfo(wait_list[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status,
                           &status, NULL) == CL_SUCCESS &&
            status > CL_COMPLETE)
            return 1;
    }
    return 0;
}

/* Drops chain c's record, event or queue. */
static void cln_serial_drop(cln_serial_chain c)
{
    if (cln_serial_lasts[c]) clReleaseEvent(cln_serial_lasts[c]);
    if (cln_serial_queues[c]) clReleaseCommandQueue(cln_serial_queues[c]);
    cln_serial_lasts[c] = NULL;
    cln_serial_queues[c] = NULL;
}

/* Replaces chain c's recorded queue by a marker enqueued on it, which completes once
   everything enqueued there before it has. Where the marker cannot be enqueued, the
   host waits for the queue instead. */
static void cln_serial_mark(cln_serial_chain c)
{
    cl_command_queue lq = cln_serial_queues[c];
    if (!lq) return;
    cl_event m = NULL;
    if (clEnqueueMarkerWithWaitList(lq, 0, NULL, &m) == CL_SUCCESS) clFlush(lq);
    else clFinish(lq), m = NULL;
    cln_serial_drop(c);
    cln_serial_lasts[c] = m;
}

void cln_serial_begin(cln_serial_chain c, cl_command_queue q, int by_queue, cl_context ctx,
                     cl_uint num_wait, const cl_event *wait_list, cl_event *dep, int *gated)
{
    *dep = NULL;
    *gated = cln_serial_gated(c, num_wait, wait_list);
    pthread_mutex_lock(&cln_serial_locks[c]);
    /* The queue's order holds this operation behind the last one. */
    if (by_queue && cln_serial_queues[c] == q) return;
    cln_serial_mark(c);
    cl_event last = cln_serial_lasts[c];
    if (!last) return;
    cl_int status = CL_COMPLETE;
    clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                   NULL);
    if (status <= CL_COMPLETE) return; /* complete, or failed: nothing to wait for */
    cl_context ectx = NULL;
    clGetEventInfo(last, CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL);
    if (ectx == ctx) {
        clRetainEvent(last);
        *dep = last;
    } else {
        /* Another context's event cannot join a wait list; its queue was flushed. */
        clWaitForEvents(1, &last);
    }
}

void cln_serial_end(cln_serial_chain c, cl_command_queue q, int by_queue, int enqueued,
                    cl_event done, int gated)
{
    if (enqueued && !gated && (by_queue || done)) {
        /* Retained before the old record goes, which may hold the same queue. */
        if (by_queue) clRetainCommandQueue(q);
        else clRetainEvent(done);
        cln_serial_drop(c);
        if (by_queue) cln_serial_queues[c] = q;
        else cln_serial_lasts[c] = done;
    }
    /* The next operation may wait for this one from another queue: submit it. */
    if (done) clFlush(q);
    pthread_mutex_unlock(&cln_serial_locks[c]);
}

void cln_serial_forget(cl_context ctx)
{
    for (int c = 0; c < CLN_SERIAL_CHAINS; c++) {
        pthread_mutex_lock(&cln_serial_locks[c]);
        cl_context rctx = NULL; /* the record's context */
        if (cln_serial_lasts[c])
            clGetEventInfo(cln_serial_lasts[c], CL_EVENT_CONTEXT, sizeof rctx, &rctx, NULL);
        else if (cln_serial_queues[c])
            clGetCommandQueueInfo(cln_serial_queues[c], CL_QUEUE_CONTEXT, sizeof rctx, &rctx,
                                  NULL);
        if (!ctx || rctx == ctx) cln_serial_drop(c);
        pthread_mutex_unlock(&cln_serial_locks[c]);
    }
}

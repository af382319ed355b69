/* One clnorm kernel at a time per process, on PoCL. Its CPU driver keeps a loaded
   binary per (kernel, local size, grid width) but, when a launch ends, drops the use
   count of the first binary matching (kernel, local size) only. Two launches of one
   kernel in flight with different grid widths (two queues, two threads) then drop the
   wrong count and PoCL aborts on `found->ref_count > 0` (docs/DESIGN.md, 'Serialised
   operations on PoCL'). On PoCL each operation waits for the one before: through its
   wait list in the same context, on the host across contexts. PoCL runs a kernel on
   every core anyway, so little concurrency is lost. */
#include "serial.h"
#include "config.h"
#include "types.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t cln_serial_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_event cln_serial_last; /* the last operation's final event, retained */

int cln_serial_wanted(const cln_profile *p)
{
    const int forced = cln_config_now()->pub.serial; /* CLNORM_SERIAL */
    return forced >= 0 ? forced : p->pocl_major > 0;
}

void cln_serial_begin(cl_context ctx, cl_event *dep)
{
    *dep = NULL;
    pthread_mutex_lock(&cln_serial_lock);
    if (!cln_serial_last) return;
    cl_int status = CL_COMPLETE;
    clGetEventInfo(cln_serial_last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                   NULL);
    if (status <= CL_COMPLETE) return; /* complete, or failed: nothing to wait for */
    cl_context ectx = NULL;
    clGetEventInfo(cln_serial_last, CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL);
    if (ectx == ctx) {
        clRetainEvent(cln_serial_last);
        *dep = cln_serial_last;
    } else {
        /* Another context's event cannot join a wait list; its queue was flushed. */
        clWaitForEvents(1, &cln_serial_last);
    }
}

void cln_serial_end(cl_command_queue q, cl_event done)
{
    if (done) {
        clRetainEvent(done);
        if (cln_serial_last) clReleaseEvent(cln_serial_last);
        cln_serial_last = done;
        /* The next operation may wait for this one from another queue: submit it. */
        clFlush(q);
    }
    pthread_mutex_unlock(&cln_serial_lock);
}

void cln_serial_forget(cl_context ctx)
{
    pthread_mutex_lock(&cln_serial_lock);
    cl_context ectx = NULL;
    if (cln_serial_last)
        clGetEventInfo(cln_serial_last, CL_EVENT_CONTEXT, sizeof ectx, &ectx, NULL);
    if (cln_serial_last && (!ctx || ectx == ctx)) {
        clReleaseEvent(cln_serial_last);
        cln_serial_last = NULL;
    }
    pthread_mutex_unlock(&cln_serial_lock);
}

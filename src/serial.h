/* Operations one at a time on PoCL (serial.c; docs/DESIGN.md, 'Serialised operations
   on PoCL'). */
#ifndef CLNORM_SERIAL_H
#define CLNORM_SERIAL_H

#include "types.h"

/* The chains of operations that run one at a time: every operation on PoCL, and the
   coop variant's calls, whose groups wait for one another: two such calls running at
   once on two queues could fill the device with groups waiting for groups that cannot
   start (cl/coop.cl). */
typedef enum cln_serial_chain { CLN_SERIAL_ALL = 0, CLN_SERIAL_COOP = 1 } cln_serial_chain;
#define CLN_SERIAL_CHAINS 2

/* Whether operations on p must run one at a time (PoCL, or CLNORM_SERIAL=1). */
CLN_HIDDEN int cln_serial_wanted(const cln_profile *p);
/* Locks chain c and gives the event the operation on q waits for (NULL, or retained):
   none where the last operation went to q and both are recorded by queue (by_queue:
   a coop call on an in-order queue). Where the record is another queue, a marker
   enqueued there now stands for it.
   *gated: 1 where the operation's wait list holds a user event not yet set, on the
   chain of every operation, so that end does not make later operations wait for it:
   an operation the caller holds back must not hold back operations that do not
   depend on it (the caller may be about to wait for those before setting the
   event). */
CLN_HIDDEN void cln_serial_begin(cln_serial_chain c, cl_command_queue q, int by_queue,
                                 cl_context ctx, cl_uint num_wait, const cl_event *wait_list,
                                 cl_event *dep, int *gated);
/* Records the operation on c, unless it was gated or not enqueued (enqueued 0): q
   itself where by_queue, else done (its final event, which the caller then needs),
   flushing q. Unlocks c. */
CLN_HIDDEN void cln_serial_end(cln_serial_chain c, cl_command_queue q, int by_queue,
                               int enqueued, cl_event done, int gated);
/* Drops the record of ctx's operations (NULL: any) on every chain. */
CLN_HIDDEN void cln_serial_forget(cl_context ctx);

#endif

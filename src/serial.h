/* Operations one at a time on PoCL (serial.c; docs/DESIGN.md, 'Serialised operations
   on PoCL'). */
#ifndef CLNORM_SERIAL_H
#define CLNORM_SERIAL_H

#include "types.h"

/* Whether operations on p must run one at a time (PoCL, or CLNORM_SERIAL=1). */
CLN_HIDDEN int cln_serial_wanted(const cln_profile *p);
/* Locks and gives the event the operation waits for (NULL, or retained). */
CLN_HIDDEN void cln_serial_begin(cl_context ctx, cl_event *dep);
/* Records done (the operation's final event), flushes q and unlocks. */
CLN_HIDDEN void cln_serial_end(cl_command_queue q, cl_event done);
/* Drops the record of ctx's operations (NULL: any). */
CLN_HIDDEN void cln_serial_forget(cl_context ctx);

#endif

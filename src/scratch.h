/* The partials buffers of split calls, reused across calls (scratch.c). */
#ifndef CLNORM_SCRATCH_H
#define CLNORM_SCRATCH_H

#include "types.h"

/* Device scratch of at least the asked size for a split plan. */
typedef struct cln_scratch cln_scratch;

/* The partials buffer of a split call. in_order: q executes in order, so the buffer
   may be q's own, reused by the next call without waiting. */
CLN_HIDDEN clnorm_status cln_scratch_acquire(cl_context ctx, cl_command_queue q, int in_order,
                                             size_t bytes, cln_scratch **out);
/* Hands s back once the call's kernels are enqueued; after: the call's last event, on
   which a pooled buffer returns (needed where cln_scratch_needs_event says so). */
CLN_HIDDEN void cln_scratch_release(cln_scratch *s, cl_event after);
CLN_HIDDEN int cln_scratch_needs_event(const cln_scratch *s);
CLN_HIDDEN cl_mem cln_scratch_mem(const cln_scratch *s);
/* words fresh synchronisation words (zero, used by no earlier call) for a coop call
   on q (cl/coop.cl): *mem, from an even index *base. s keeps CLN_SYNC_WORDS of them
   (CLN_SYNC_WORDS_SMALL under the "sync-small" fault), zeroed from the host at their
   creation and, when they run out, by a fill enqueued on q: *zeroed is then its event,
   which the call's kernel must wait for (the caller releases it), else NULL. */
#define CLN_SYNC_WORDS (1 << 20)
#define CLN_SYNC_WORDS_SMALL 8192
CLN_HIDDEN clnorm_status cln_scratch_sync(cln_scratch *s, cl_command_queue q, size_t words,
                                          cl_mem *mem, cl_uint *base, cl_event *zeroed);
/* Frees the buffers of ctx (NULL: all) that no call holds. */
CLN_HIDDEN void cln_scratch_drop(cl_context ctx);

#endif

/* The enqueue of a planned call (enqueue.c): every kernel's arguments from the table
   of kernels, the stages one after another, the serial mode of PoCL and the split
   plans' partials buffer. The operations (ops.c) and the entry points of given
   statistics (ops_given.c) plan, lease their kernels and hand them here. */
#ifndef CLNORM_ENQUEUE_H
#define CLNORM_ENQUEUE_H

#include "plan.h"
#include "program_cache.h"
#include "types.h"

/* Everything any kernel takes; each operation fills what it uses. */
typedef struct cln_args {
    size_t rows, cols;
    clnorm_matrix x, y, res;
    cl_mem gamma, row_max, row_sum;
    cl_mem b_max, b_sum; /* clnorm_stats_merge_rows: merged into row_max, row_sum */
    float eps;
    cl_uint update;
} cln_args;


/* rows == 0: nothing to do, but an asked-for event still completes after the wait
   list, as an enqueued no-op would. */
CLN_HIDDEN clnorm_status cln_enqueue_noop(cl_command_queue q, cl_uint num_wait,
                                          const cl_event *wait_list, cl_event *event);

/* Enqueues the stages of plan pl, whose kernels lease holds (k1, k2, k3 in order), on
   q of ctx, on the device of profile prof. A split plan's stages follow one another by
   the queue's order, or by events on an out-of-order queue; *event (if asked for)
   receives the last one's. Returns the leases in every case. */
CLN_HIDDEN clnorm_status cln_enqueue_plan(cl_command_queue q, cl_context ctx,
                                          const cln_profile *prof, const cln_plan *pl,
                                          cln_kernel_lease lease[3], const cln_args *a,
                                          cl_uint num_wait, const cl_event *wait_list,
                                          cl_event *event);

#endif

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


/* The value of one kernel argument, in the member its type uses (cln_arg_descs). */
typedef struct cln_arg_value {
    cl_mem mem;
    cl_ulong ul;
    cl_uint ui;
    float f;
} cln_arg_value;

/* Fills *v, zeroed, with the value of argument kind for a call; kinds the call does not
   know stay zero. */
typedef void (*cln_arg_fill)(const void *call, cln_arg kind, cln_arg_value *v);

/* One stage of a call: its kernel, NDRange and __local scratch. */
typedef struct cln_stage {
    cln_kernel_id kid;
    size_t global, local, local_bytes;
} cln_stage;

/* A call of n stages whose kernels lease holds, in order. */
typedef struct cln_stages {
    int n;                  /* 1 to 3 */
    cln_stage s[3];
    cln_kernel_lease *lease;
    size_t part_bytes;      /* the partials buffer the stages share; 0: none */
    size_t sync_words;      /* fresh synchronisation words of a call whose groups wait
                               for one another (the coop variant), within the partials'
                               scratch; 0: none */
    cln_arg_fill fill;      /* the arguments */
    const void *call;
} cln_stages;

/* Enqueues the stages of c on q of ctx, on the device of profile prof: one after
   another by the queue's order, or by events on an out-of-order queue; one operation
   at a time where the serial mode holds (PoCL), and always for calls with
   synchronisation words. *event (if asked for) receives the last stage's. On failure
   nothing of the call is left running. The leases stay the caller's. */
CLN_HIDDEN clnorm_status cln_enqueue_stages(cl_command_queue q, cl_context ctx,
                                            const cln_profile *prof, const cln_stages *c,
                                            cl_uint num_wait, const cl_event *wait_list,
                                            cl_event *event);

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

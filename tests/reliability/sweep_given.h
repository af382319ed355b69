/* The Oclgrind sweep's cases of the kernels with statistics given (sweep_given.c). */
#ifndef CLNORM_SWEEP_GIVEN_H
#define CLNORM_SWEEP_GIVEN_H

#include "clnorm.h"

/* Bits of what sw_given ran: clnorm_softmax_apply, clnorm_stats_merge_rows. */
enum { SWG_APPLY = 1, SWG_MERGE_ROWS = 2 };

/* Runs clnorm_softmax_apply on small awkward shapes in dt (offsets, padding poisoned
   and checked, a row of -inf, one with +inf entries) and clnorm_stats_merge_rows on
   special and random pairs, on q (a queue of ctx), against float64. Adds its failures
   and cases to the counters and returns the SWG_* bits of the kernels that ran. */
unsigned sw_given(cl_context ctx, cl_command_queue q, clnorm_dtype dt, int verbose,
                  unsigned long *failures, unsigned long *cases);

#endif

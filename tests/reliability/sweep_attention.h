/* The Oclgrind sweep's attention cases (sweep_attention.c). */
#ifndef CLNORM_SWEEP_ATTENTION_H
#define CLNORM_SWEEP_ATTENTION_H

#include "clnorm.h"

/* Bits of what sw_attention ran: the attention kernel (with a partial last tile, the
   4-element and the scalar column paths), split-K's reduce kernel, the merge. */
enum { SWA_ATTENTION = 1, SWA_REDUCE = 2, SWA_MERGE = 4 };

/* Runs attention and its merge on small awkward shapes in dt on q (a queue of ctx),
   each result checked against float64 and every element outside out against its
   canary; split-K is forced through the thread's hints. Adds its failures and cases
   to the counters and returns the SWA_* bits of the kernels that ran. */
unsigned sw_attention(cl_context ctx, cl_command_queue q, clnorm_dtype dt, int verbose,
                      unsigned long *failures, unsigned long *cases);

#endif

/* What the entry points share: the plan of one call and the record of the calling
   thread's last operation (api_plan.c), which the operations (ops.c) use, and the
   check sharded softmax makes of each shard's write (ops_given.c). */
#ifndef CLNORM_API_INTERNAL_H
#define CLNORM_API_INTERNAL_H

#include "config.h"
#include "plan.h"
#include "types.h"

/* The plan of one call of op on p under settings s: the merged limits, the tuning
   table (unless s turns it off; it may resolve softmax AUTO in *op), then
   cln_plan_make. no_words: some view's rows do not start at whole words; no_coop:
   x's and y's rows sit at different places in the vector. *lim receives the limits
   planned under, *tuned whether the tuning table chose. A
   refusal is recorded, naming the call. */
CLN_HIDDEN clnorm_status cln_plan_call(const cln_settings *s, const cln_profile *p, cln_op *op,
                                       clnorm_dtype dtype, size_t rows, size_t cols,
                                       int no_words, int no_coop, cln_limits *lim, cln_plan *out,
                                       int *tuned);

/* Records the calling thread's last enqueued operation, for clnorm_last_plan: its
   plan, dtype, the word its programs were built with and whether the tuning table
   chose it. */
CLN_HIDDEN void cln_last_set(const cln_plan *plan, clnorm_dtype dtype, size_t word, int tuned);

/* Whether clnorm_softmax_apply of rows x cols of dtype on q would be refused at
   planning or at its kernel's build (ops_given.c), checked with nothing enqueued:
   sharded softmax plans every shard's write before it enqueues anything. The views
   are not checked. */
CLN_HIDDEN clnorm_status cln_softmax_apply_ready(cl_command_queue q, clnorm_dtype dtype,
                                                 size_t rows, size_t cols);

#endif

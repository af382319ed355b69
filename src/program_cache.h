/* Programs and kernels in memory: one program per (context, device, options, source),
   its kernel objects lent to one caller at a time (program_cache.c). */
#ifndef CLNORM_PROGRAM_CACHE_H
#define CLNORM_PROGRAM_CACHE_H

#include "kernels.h"
#include "types.h"

/* A kernel object lent to one caller at a time (clSetKernelArg is not thread-safe). */
typedef struct cln_kernel_lease {
    cl_kernel kernel;
    size_t max_wg; /* the kernel's own work-group limit, read once at creation; 0: none */
    int wants_event; /* 1: pass this run's event to cln_kernel_ran (disk capture) */
    void *slot;
} cln_kernel_lease;

/* Lends kernel kid of the program of (ctx, dev, dtype, path), building the program on
   first use. one_kernel: cln_programs_one(p), asked once per operation. */
CLN_HIDDEN clnorm_status cln_kernel_acquire(cl_context ctx, cl_device_id dev,
                                            const cln_profile *p, clnorm_dtype dtype,
                                            cln_path path, cln_kernel_id kid, int one_kernel,
                                            cln_kernel_lease *out);
/* Hands the program the event of a run that wants_event asked for. */
CLN_HIDDEN void cln_kernel_ran(cln_kernel_lease *lease, cl_event ev);
/* Returns the kernel to its pool; right after its enqueue, which captured its
   arguments. */
CLN_HIDDEN void cln_kernel_return(cln_kernel_lease *lease);
/* Drops the programs of ctx (NULL: all) no call is building, first storing those
   whose first run has completed (clnorm_release_cache). */
CLN_HIDDEN void cln_program_cache_drop(cl_context ctx);

#endif

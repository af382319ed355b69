/* Building one program, from the disk cache or from source (program_build.c). */
#ifndef CLNORM_PROGRAM_BUILD_H
#define CLNORM_PROGRAM_BUILD_H

#include "types.h"

/* Builds the program of source src with options: from the disk cache's binary where
   the driver takes it, else from source, storing the binary for the next process.
   one_kernel: the options compile one kernel alone. *store_after_run: the binary is
   to be stored once the program's first run has completed (cln_program_store). */
CLN_HIDDEN clnorm_status cln_program_build(cl_context ctx, cl_device_id dev,
                                           const cln_profile *p, const char *options,
                                           int one_kernel, const char *src, size_t len,
                                           uint64_t src_hash, cl_program *out,
                                           int *store_after_run);
/* Stores the binary of prog in the disk cache. */
CLN_HIDDEN void cln_program_store(const cln_profile *p, const char *options,
                                  uint64_t src_hash, size_t src_len, cl_program prog);
/* Programs built from source so far, process-wide, and builds the driver refused. */
CLN_HIDDEN unsigned long cln_program_builds(void);
CLN_HIDDEN unsigned long cln_program_build_failures(void);

#endif

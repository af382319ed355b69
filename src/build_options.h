/* What a program is built with: its compile options, and whether it holds one kernel
   or all of them (build_options.c). */
#ifndef CLNORM_BUILD_OPTIONS_H
#define CLNORM_BUILD_OPTIONS_H

#include "kernels.h"
#include "types.h"

/* The options of p's programs in dtype on path, with the word and the extra options
   of the thread's current settings (config.h). */
CLN_HIDDEN void cln_build_options(const cln_profile *p, clnorm_dtype dtype,
                                  cln_path path, char *buf, size_t len);
/* CLN_BLOCKED of p's programs: 1 where each work-item streams a block of its own.
   Pure. */
CLN_HIDDEN int cln_build_blocked(const cln_profile *p);
/* CLN_VEC of p's programs in dtype: elements per vector access. Pure. */
CLN_HIDDEN unsigned cln_build_vec(const cln_profile *p, clnorm_dtype dtype);
/* Appends the options that compile kernel kid alone (CLN_ONLY in cl/dtype.cl). */
CLN_HIDDEN void cln_only_option(cln_kernel_id kid, char *options, size_t len);
/* Whether kernels are built in programs of their own on p (the programs hint of the
   thread's current settings; by default where the disk cache is on and keeps
   binaries). */
CLN_HIDDEN int cln_programs_one(const cln_profile *p);
/* The build options of the program that holds kernel kid (one kernel alone where
   cln_programs_one), as the disk cache keys it. */
CLN_HIDDEN void cln_program_options(const cln_profile *p, clnorm_dtype dtype, cln_path path,
                                    cln_kernel_id kid, char *buf, size_t len);
/* Whether p's programs reach the disk cache: at their build (NVIDIA), or once their
   first run has completed (PoCL, programs of one kernel; the store happens at the
   next call that uses the program or at clnorm_release_cache). */
CLN_HIDDEN int cln_stores_programs(const cln_profile *p);

#endif

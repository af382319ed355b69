/* Pinning PoCL's worker threads for the clnorm command (pin.c). */
#ifndef CLNORM_TOOL_PIN_H
#define CLNORM_TOOL_PIN_H

#include <stddef.h>

/* Whether a program about to load PoCL should pin its CPU worker threads by setting
   POCL_AFFINITY=1 (PoCL then pins worker i to CPU i): only where POCL_AFFINITY is
   unset (NULL or empty), there are at least two CPUs, and the process may run on
   each of CPUs 0 to cpus - 1 (allowed_prefix: how many of them, counting from 0, its
   affinity mask holds), so that no worker is pinned to a CPU it may not use. */
int tool_pocl_pin_wanted(const char *pocl_affinity, size_t cpus, size_t allowed_prefix);

/* Sets POCL_AFFINITY=1 where tool_pocl_pin_wanted says so for this process; call it
   before the first OpenCL call, which loads PoCL. Returns 1 when it set it. */
int tool_pin_pocl_workers(void);

#endif

/* The environment the library leaves to the application: whether a tool should pin
   PoCL's worker threads. The library's own CLNORM_* variables are read once, into the
   process configuration (config.c). */
#include "internal.h"

#include <stddef.h>

/* Left unpinned, PoCL's worker threads may share one core and halve a shape's
   throughput (docs/DESIGN.md, 'PoCL worker threads'). The library never sets
   POCL_AFFINITY: the environment is the application's, and an application may pin
   its own threads. The tools do, through this. */
int cln_pocl_pin_wanted(const char *pocl_affinity, size_t cpus, size_t allowed_prefix)
{
    if (pocl_affinity && *pocl_affinity) return 0;
    return cpus >= 2 && allowed_prefix >= cpus;
}

/* Left unpinned, PoCL's worker threads may share one core and halve a shape's
   throughput (docs/DESIGN.md, 'PoCL worker threads'). The library never sets
   POCL_AFFINITY: the environment is the application's, and an application may pin
   its own threads. The clnorm command does, here. */
#define _GNU_SOURCE /* sched_getaffinity */
#include "pin.h"

#ifdef __linux__
#include <sched.h>
#include <unistd.h>
#endif

#include <stdlib.h>

int tool_pocl_pin_wanted(const char *pocl_affinity, size_t cpus, size_t allowed_prefix)
{
    if (pocl_affinity && *pocl_affinity) return 0;
    return cpus >= 2 && allowed_prefix >= cpus;
}

int tool_pin_pocl_workers(void)
{
#ifdef __linux__
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    size_t prefix = 0;
    if (online > 0 && sched_getaffinity(0, sizeof set, &set) == 0)
        while ((long)prefix < online && prefix < CPU_SETSIZE && CPU_ISSET(prefix, &set))
            prefix++;
    return tool_pocl_pin_wanted(getenv("POCL_AFFINITY"), online > 0 ? (size_t)online : 0,
                                prefix) &&
           setenv("POCL_AFFINITY", "1", 0) == 0;
#else
    return 0;
#endif
}

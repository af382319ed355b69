/* The probes of a device's fast paths: small kernels built and run on known inputs,
   their results compared with the host's (probe.c). */
#ifndef CLNORM_PROBE_H
#define CLNORM_PROBE_H

#include "types.h"

/* Runs the probes of p's candidate paths on dev (p->has_subgroups, p->nv with a warp
   of 32) and keeps only the paths whose every check matched: fills pref_multiple,
   has_subgroups, subgroup_std and has_nv_shuffle. */
CLN_HIDDEN void cln_probe_device(cl_device_id dev, cln_profile *p);
/* Devices probed so far, process-wide (not counting answers read from the disk). */
CLN_HIDDEN unsigned long cln_probe_count(void);

#endif

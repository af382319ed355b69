/* Device profiles (the structure is in types.h): queried, probed once per device and
   kept for the process (profile.c). */
#ifndef CLNORM_PROFILE_H
#define CLNORM_PROFILE_H

#include "types.h"

/* Returns the cached profile of dev (probing it on first use). Thread-safe. */
CLN_HIDDEN clnorm_status cln_profile_get(cl_device_id dev, const cln_profile **out);
/* Fills p from device queries only (no probes). */
CLN_HIDDEN clnorm_status cln_profile_query(cl_device_id dev, cln_profile *p);

#endif

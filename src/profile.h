/* Device profiles (the structure is in types.h): queried, probed once per device and
   kept for the process (profile.c). */
#ifndef CLNORM_PROFILE_H
#define CLNORM_PROFILE_H

#include "types.h"

/* Returns the cached profile of dev (probing it on first use). Thread-safe. */
CLN_HIDDEN clnorm_status cln_profile_get(cl_device_id dev, const cln_profile **out);
/* Fills p from device queries only (no probes). */
CLN_HIDDEN clnorm_status cln_profile_query(cl_device_id dev, cln_profile *p);

/* For tests: a new profile of dev, from the probe record or the probes as the first
   use makes one, under the faults (faults.h) and disk cache in force now. Later
   cln_profile_get calls return it. */
CLN_HIDDEN clnorm_status cln_profile_refresh(cl_device_id dev);
/* Drops fast path `path` of dev's profile after its program did not build: from
   then on cln_profile_get gives a profile without it (a new one: profiles handed out
   never change), and the disk cache's probe record says so. Returns that profile
   (the current one where another thread dropped the path first). */
CLN_HIDDEN const cln_profile *cln_profile_drop_path(cl_device_id dev, cln_path path);
/* The fast path p's device dropped after its program did not build, or 0. p must
   come from cln_profile_get. */
CLN_HIDDEN int cln_profile_dropped(const cln_profile *p);

#endif

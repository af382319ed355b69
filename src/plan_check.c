/* The last step of every plan: its launch checked against the device's profile and
   the limits (work-group size, local memory, reduction path), so that a plan over an
   emulated or real limit is refused with a reason instead of launched. Pure, like the
   plan. */
#include "plan.h"
#include "types.h"

#include <stdio.h>

clnorm_status cln_plan_check(const cln_profile *p, const cln_limits *lim, const cln_plan *pl,
                             char *why, size_t why_len)
{
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    cl_ulong local = p->local_mem;
    if (lim->max_local && lim->max_local < local) local = lim->max_local;
    /* The profile's best path is one it has (probed, or lowered by CLNORM_EMULATE). */
    const int path_ok = pl->path == CLN_PATH_LOCAL || pl->path == p->best_path ||
                        (pl->path == CLN_PATH_SUBGROUP && p->has_subgroups) ||
                        (pl->path == CLN_PATH_NV && p->has_nv_shuffle);
    if (pl->wg == 0 || pl->wg > max_wg || pl->team == 0 || pl->wg % pl->team)
        snprintf(why, why_len, "a plan of work-group size %zu (%zu work-items a row) breaks "
                 "the %zu work-items device \"%s\" allows", pl->wg, pl->team, max_wg,
                 p->device_name);
    else if (pl->local_bytes > local)
        snprintf(why, why_len, "a plan of %zu bytes of local memory a group exceeds the %llu "
                 "bytes device \"%s\" has", pl->local_bytes, (unsigned long long)local,
                 p->device_name);
    else if (!path_ok)
        snprintf(why, why_len, "a plan on the %s path, which device \"%s\" lacks",
                 cln_path_name(pl->path), p->device_name);
    else
        return CLNORM_SUCCESS;
    return CLNORM_UNSUPPORTED;
}

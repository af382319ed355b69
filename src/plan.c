/* The plan: work-group size, work-items per row and reduction path for one call.
   cln_plan_make is a pure function of its arguments so tests can call it with the
   profile of any device, real or not. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cln_op_kernel(cln_op op)
{
    switch (op) {
    case CLN_OP_RMSNORM: return "clnorm_rmsnorm";
    case CLN_OP_SOFTMAX_3PASS: return "clnorm_softmax_3pass";
    case CLN_OP_SOFTMAX_ONLINE: return "clnorm_softmax_online";
    case CLN_OP_STATS: return "clnorm_softmax_stats";
    }
    return "?";
}

const char *cln_op_name(cln_op op)
{
    switch (op) {
    case CLN_OP_RMSNORM: return "rmsnorm";
    case CLN_OP_SOFTMAX_3PASS: return "softmax-3pass";
    case CLN_OP_SOFTMAX_ONLINE: return "softmax-online";
    case CLN_OP_STATS: return "softmax-stats";
    }
    return "?";
}

size_t cln_plan_local_bytes(cln_op op, size_t wg)
{
    /* Online statistics reduce (m, l) pairs: two floats per work-item. */
    int pair = op == CLN_OP_SOFTMAX_ONLINE || op == CLN_OP_STATS;
    return wg * sizeof(float) * (pair ? 2 : 1);
}

static size_t cln_pow2_floor(size_t v)
{
    size_t p = 1;
    while (p <= v / 2) p *= 2;
    return p;
}

static size_t cln_pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v && p < ((size_t)1 << 62)) p *= 2;
    return p;
}

static int cln_env_size(const char *name, size_t *out, clnorm_status *st)
{
    const char *s = getenv(name);
    if (!s || !*s) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || s[0] == '-') {
        *st = cln_fail(CLNORM_INVALID_ARGUMENT,
                       "environment variable %s=\"%s\" is not a positive integer", name, s);
        return 0;
    }
    *out = (size_t)v;
    return 1;
}

clnorm_status cln_limits_from_env(cln_limits *l)
{
    clnorm_status st = CLNORM_SUCCESS;
    size_t v;
    memset(l, 0, sizeof *l);
    l->force_path = -1;
    if (cln_env_size("CLNORM_MAX_WORK_GROUP", &v, &st)) l->max_wg = v;
    if (cln_env_size("CLNORM_MAX_LOCAL_MEM", &v, &st)) l->max_local = v;
    if (cln_env_size("CLNORM_WORK_GROUP", &v, &st)) l->force_wg = v;
    if (cln_env_size("CLNORM_ROW_THREADS", &v, &st)) l->force_team = v;
    if (st) return st;
    const char *r = getenv("CLNORM_REDUCTION");
    if (r && *r && strcmp(r, "auto") != 0) {
        if (!strcmp(r, "local")) l->force_path = CLN_PATH_LOCAL;
        else if (!strcmp(r, "subgroup")) l->force_path = CLN_PATH_SUBGROUP;
        else
            return cln_fail(CLNORM_INVALID_ARGUMENT,
                            "environment variable CLNORM_REDUCTION=\"%s\" is not auto, "
                            "subgroup or local", r);
    }
    return CLNORM_SUCCESS;
}

/* Work-items per row when nothing is forced. GPUs want many rows in flight and
   coalesced loads; CPUs run a work-group on one thread with work-items as vector
   lanes, so they want few work-items and long loops per row. */
static size_t cln_auto_team(const cln_profile *p, size_t rows, size_t cols, size_t max_wg)
{
    int cpu = (p->type & CL_DEVICE_TYPE_CPU) != 0;
    size_t per_item = cpu ? 64 : 8;
    size_t team = cln_pow2_ceil((cols + per_item - 1) / per_item);
    size_t cap = cpu ? 64 : 256;
    /* Few long rows: use whole large work-groups so the device is not left idle. */
    if (!cpu && rows < 2 * (size_t)(p->compute_units ? p->compute_units : 1)) cap = 1024;
    if (team > cap) team = cap;
    if (team > max_wg) team = cln_pow2_floor(max_wg);
    return team ? team : 1;
}

clnorm_status cln_plan_make(const cln_profile *p, const cln_limits *lim, cln_op op,
                            clnorm_dtype dtype, size_t rows, size_t cols, cln_plan *out,
                            char *why, size_t why_len)
{
    (void)dtype;
    memset(out, 0, sizeof *out);
    out->op = op;
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    cl_ulong local = p->local_mem;
    if (lim->max_local && lim->max_local < local) local = lim->max_local;
    size_t local_cap = (size_t)(local / cln_plan_local_bytes(op, 1));
    if (local_cap < max_wg) max_wg = local_cap;
    if (max_wg == 0) {
        snprintf(why, why_len, "the device has %llu bytes of local memory, fewer than one "
                 "work-item of %s needs", (unsigned long long)local, cln_op_name(op));
        return CLNORM_UNSUPPORTED;
    }

    if (lim->force_path == CLN_PATH_LOCAL) out->path = CLN_PATH_LOCAL;
    else if (lim->force_path == CLN_PATH_SUBGROUP || lim->force_path == CLN_PATH_NV) {
        if (p->best_path == CLN_PATH_LOCAL) {
            snprintf(why, why_len, "CLNORM_REDUCTION=subgroup, but device \"%s\" has neither "
                     "cl_khr_subgroups nor NVIDIA warp shuffles", p->device_name);
            return CLNORM_UNSUPPORTED;
        }
        out->path = p->best_path;
    } else out->path = p->best_path;

    size_t wg, team;
    if (lim->force_wg) {
        wg = lim->force_wg;
        if (wg == 1 && p->pocl_major >= 4) {
            snprintf(why, why_len, "CLNORM_WORK_GROUP=1: PoCL %d fails to run kernels with "
                     "local-memory arguments in work-groups of one work-item",
                     p->pocl_major);
            return CLNORM_UNSUPPORTED;
        }
        if (wg > max_wg) {
            snprintf(why, why_len, "CLNORM_WORK_GROUP=%zu exceeds the %zu work-items this "
                     "device and kernel allow (local memory %llu bytes)", wg, max_wg,
                     (unsigned long long)local);
            return CLNORM_INVALID_ARGUMENT;
        }
        if (lim->force_team) team = lim->force_team;
        else {
            team = cln_auto_team(p, rows, cols, wg);
            while (wg % team) team /= 2; /* team is a power of two, 1 always divides */
        }
    } else {
        team = lim->force_team ? lim->force_team : cln_auto_team(p, rows, cols, max_wg);
        if (team > max_wg) {
            snprintf(why, why_len, "CLNORM_ROW_THREADS=%zu exceeds the %zu work-items this "
                     "device and kernel allow", team, max_wg);
            return CLNORM_INVALID_ARGUMENT;
        }
        /* Fill a work-group of about 256 work-items (64 on CPUs) with whole rows, but
           never with more rows than exist. */
        size_t target = (p->type & CL_DEVICE_TYPE_CPU) ? 64 : 256;
        if (target > max_wg) target = max_wg;
        size_t rpw = target > team ? target / team : 1;
        size_t rows_p2 = cln_pow2_ceil(rows ? rows : 1);
        if (rpw > rows_p2) rpw = rows_p2;
        /* At least the preferred multiple, even when rows are few: spare rows cost
           nothing, and PoCL 4+ cannot run one-work-item groups with local arguments. */
        size_t min_wg = p->pref_multiple ? p->pref_multiple : 1;
        if (min_wg > target) min_wg = target;
        while (team * rpw < min_wg && team * rpw * 2 <= target) rpw *= 2;
        wg = team * rpw;
    }
    if (team == 0 || wg % team) {
        snprintf(why, why_len, "CLNORM_ROW_THREADS=%zu does not divide the work-group size "
                 "%zu", team, wg);
        return CLNORM_INVALID_ARGUMENT;
    }
    out->wg = wg;
    out->team = team;
    out->rows_per_wg = wg / team;
    out->groups = rows ? (rows + out->rows_per_wg - 1) / out->rows_per_wg : 0;
    out->local_bytes = cln_plan_local_bytes(op, wg);
    return CLNORM_SUCCESS;
}

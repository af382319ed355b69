/* The plans of the entry points' own kernels (plan.h): clnorm_softmax_apply writes
   slices of rows with the statistics given, clnorm_stats_merge_rows merges a row per
   work-item. Neither reduces, so neither needs local memory, and the numbers come
   from the device's row of the plan table (src/plan_table.c). */
#include "plan.h"
#include "kernels.h"
#include "plan_table.h"
#include "types.h"

#include <stdio.h>
#include <string.h>

static size_t cln_div_up(size_t a, size_t b) { return a / b + (a % b != 0); }

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

/* Slices are whole multiples of 16 elements (CLN_VEC is at most 16), so that every
   slice of a row keeps the row start's alignment, and of 4 elements per work-item of
   the team, so that no lane of a GPU team is left without a vector. */
#define CLN_APPLY_QUANTUM 16
#define CLN_APPLY_LANE 4

/* The slices of an apply plan: the table's groups per compute unit over all rows, no
   fewer elements per work-item than its least, and enough slices for a loop-trip
   limit (docs/DESIGN.md, 'Softmax with given statistics'). */
static void cln_apply_slices(const cln_profile *p, const cln_limits *lim,
                             const cln_plan_params *t, size_t rows, size_t cols, cln_plan *out)
{
    const size_t team = out->team, cus = p->compute_units ? p->compute_units : 1;
    size_t slices = lim->force_slices;
    if (!slices) {
        slices = cln_div_up(t->apply_groups_per_cu * cus * out->rows_per_wg, rows);
        const size_t most = cols / (team * t->apply_items);
        if (slices > most) slices = most;
    }
    if (slices < 1) slices = 1;
    if (p->loop_limit) {
        const size_t vec = t->loop_vectors && p->vec ? p->vec : 1;
        const size_t need = cln_div_up(cols, team * vec * p->loop_limit);
        if (slices < need) slices = need;
    }
    if (slices > cols) slices = cols;
    const size_t lanes = team * CLN_APPLY_LANE;
    const size_t len = cln_div_up(cols, slices);
    const size_t q = cln_div_up(lanes, CLN_APPLY_QUANTUM) * CLN_APPLY_QUANTUM;
    out->slice_len = slices == 1 ? cols : cln_div_up(len, q) * q;
    out->slices = cln_div_up(cols, out->slice_len);
}

clnorm_status cln_plan_apply(const cln_profile *p, const cln_limits *lim, cln_kernel_id kid,
                             size_t rows, size_t cols, cln_plan *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    const cln_plan_params *t = cln_plan_params_for(p);
    clnorm_status st = cln_plan_forced_path(p, lim, why, why_len);
    if (st) return st;
    size_t max_wg = p->max_wg ? p->max_wg : 1;
    if (lim->max_wg && lim->max_wg < max_wg) max_wg = lim->max_wg;
    const int apply = kid == CLN_K_SOFTMAX_APPLY;
    size_t wg = apply ? t->apply_wg : t->group_items;
    if (wg > max_wg) wg = cln_pow2_floor(max_wg);
    if (lim->force_wg) wg = lim->force_wg;
    if (wg > max_wg) {
        snprintf(why, why_len, "CLNORM_WORK_GROUP=%zu exceeds the %zu work-items this device "
                 "and kernel allow", wg, max_wg);
        return CLNORM_INVALID_ARGUMENT;
    }
    size_t team = 1;
    if (apply) {
        team = lim->force_team ? lim->force_team : cln_pow2_ceil(cln_div_up(cols, t->apply_items));
        if (!lim->force_team && team > wg) team = wg;
        if (!lim->force_team) while (wg % team) team /= 2;
        if (team == 0 || team > wg || wg % team) {
            snprintf(why, why_len, "CLNORM_ROW_THREADS=%zu does not divide the work-group "
                     "size %zu", team, wg);
            return CLNORM_INVALID_ARGUMENT;
        }
    }
    out->op = CLN_OP_SOFTMAX_ONLINE;
    out->variant = apply ? CLN_VAR_SPLIT : CLN_VAR_STREAM;
    out->path = lim->force_path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : p->best_path;
    /* PoCL 4 and later: the smallest groups take the local path (plan.c, driver step). */
    if (p->pocl_major >= t->pocl_tiny_major && wg <= t->pocl_tiny_wg) out->path = CLN_PATH_LOCAL;
    out->k1 = kid;
    out->k2 = out->k3 = CLN_K_COUNT;
    out->wg = wg;
    out->team = team;
    out->rows_per_wg = wg / team;
    out->slices = out->slice_len = 1;
    if (apply) cln_apply_slices(p, lim, t, rows ? rows : 1, cols ? cols : 1, out);
    out->groups = cln_div_up(rows * out->slices, out->rows_per_wg);
    out->local_bytes = 0;
    return cln_plan_check(p, lim, out, why, why_len); /* as every plan ends */
}

/* Plan hints: their automatic values, their checks, one set merged over another, and
   the plan limits a set gives. Pure: no device, no state. */
#include "hints.h"
#include "clnorm_advanced.h"
#include "plan.h"
#include "status.h"
#include "types.h"

#include <string.h>

void clnorm_plan_hints_init(clnorm_plan_hints *h)
{
    if (!h) return;
    memset(h, 0, sizeof *h);
    h->variant = CLNORM_VARIANT_AUTO;
    h->reduction = CLNORM_REDUCTION_AUTO;
    h->programs = CLNORM_PROGRAMS_AUTO;
    h->tuning = -1;
}

clnorm_status cln_hints_check_named(const clnorm_plan_hints *h, const char *name)
{
    if (h->variant < CLNORM_VARIANT_AUTO || h->variant >= CLNORM_VARIANT_COUNT)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.variant = %d is not a clnorm_variant "
                        "(-1 to %d)", name, h->variant, CLNORM_VARIANT_COUNT - 1);
    if (h->reduction < CLNORM_REDUCTION_AUTO || h->reduction > CLNORM_REDUCTION_NV_SHUFFLE)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.reduction = %d is not a clnorm_reduction "
                        "(-1 to 2)", name, h->reduction);
    if (h->programs < CLNORM_PROGRAMS_AUTO || h->programs > CLNORM_PROGRAMS_ALL)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.programs = %d is not a clnorm_programs "
                        "(0 to 2)", name, h->programs);
    if (h->tuning < -1 || h->tuning > 1)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.tuning = %d is not -1, 0 or 1", name,
                        h->tuning);
    if (h->word != 0 && h->word != 2 && h->word != 4)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.word = %zu is not 0, 2 or 4", name, h->word);
    if (h->items_per_row && h->work_group && h->work_group % h->items_per_row)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s.items_per_row = %zu does not divide "
                        "%s.work_group = %zu", name, h->items_per_row, name, h->work_group);
    return CLNORM_SUCCESS;
}

clnorm_status cln_hints_check(const clnorm_plan_hints *h)
{
    return cln_hints_check_named(h, "hints");
}

/* The public enums' values are the internal ones. */
_Static_assert(CLNORM_REDUCTION_SUBGROUP == (int)CLN_PATH_SUBGROUP &&
                   CLNORM_REDUCTION_NV_SHUFFLE == (int)CLN_PATH_NV,
               "clnorm_reduction and cln_path agree");
_Static_assert(CLNORM_VARIANT_COUNT == CLN_VAR_COUNT && CLNORM_OP_COUNT == CLN_OP_COUNT,
               "clnorm_variant and cln_variant, clnorm_op and cln_op agree");

void cln_hints_limits(const clnorm_plan_hints *h, cln_limits *l)
{
    memset(l, 0, sizeof *l);
    l->max_wg = h->max_work_group;
    l->max_local = h->max_local_mem;
    l->force_wg = h->work_group;
    l->force_team = h->items_per_row;
    l->force_path = h->reduction;
    l->force_variant = h->variant;
    l->force_slices = h->split;
    l->word = h->word;
}

/* Every field of src that is not automatic replaces dst's. */
void cln_hints_overlay(clnorm_plan_hints *dst, const clnorm_plan_hints *src)
{
    if (src->work_group) dst->work_group = src->work_group;
    if (src->items_per_row) dst->items_per_row = src->items_per_row;
    if (src->variant != CLNORM_VARIANT_AUTO) dst->variant = src->variant;
    if (src->split) dst->split = src->split;
    if (src->reduction != CLNORM_REDUCTION_AUTO) dst->reduction = src->reduction;
    if (src->word) dst->word = src->word;
    if (src->programs != CLNORM_PROGRAMS_AUTO) dst->programs = src->programs;
    if (src->max_work_group) dst->max_work_group = src->max_work_group;
    if (src->max_local_mem) dst->max_local_mem = src->max_local_mem;
    if (src->tuning != -1) dst->tuning = src->tuning;
}

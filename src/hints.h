/* Plan hints: defaults, checks, merge and the limits they give (hints.c). */
#ifndef CLNORM_HINTS_H
#define CLNORM_HINTS_H

#include "clnorm_advanced.h"
#include "plan.h"
#include "types.h"

/* Refuses (INVALID_ARGUMENT, naming the field and its value) hints out of range. */
CLN_HIDDEN clnorm_status cln_hints_check(const clnorm_plan_hints *h);
/* The same, naming the structure `name` in the message ("config.hints"). */
CLN_HIDDEN clnorm_status cln_hints_check_named(const clnorm_plan_hints *h, const char *name);
/* The plan limits that hints h give. */
CLN_HIDDEN void cln_hints_limits(const clnorm_plan_hints *h, cln_limits *l);
/* Every field of src that is not automatic replaces dst's. */
CLN_HIDDEN void cln_hints_overlay(clnorm_plan_hints *dst, const clnorm_plan_hints *src);

#endif

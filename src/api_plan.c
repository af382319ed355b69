/* Plans seen from outside: the names of operations, variants and reduction paths,
   the plan of one call (which the operations and clnorm_plan_query share, so that a
   query answers what a call runs), and the calling thread's last plan. */
#include "api.h"
#include "clnorm_advanced.h"
#include "config.h"
#include "hints.h"
#include "kernels.h"
#include "plan.h"
#include "profile.h"
#include "status.h"
#include "tuning.h"
#include "types.h"
#include "validate.h"

#include <stdio.h>
#include <string.h>

const char *clnorm_op_name(clnorm_op op)
{
    static const char *const names[CLNORM_OP_COUNT] = {
        "rmsnorm",       "softmax_three_pass", "softmax_online",
        "softmax_stats", "add_rmsnorm",        "softmax_auto"};
    return (unsigned)op < CLNORM_OP_COUNT ? names[op] : "?";
}

const char *clnorm_variant_name(clnorm_variant v)
{
    static const char *const names[CLNORM_VARIANT_COUNT] = {"stream", "registers", "split",
                                                            "words", "coop"};
    return (unsigned)v < CLNORM_VARIANT_COUNT ? names[v] : "?";
}

const char *clnorm_reduction_name(clnorm_reduction r)
{
    static const char *const names[] = {"local", "subgroup", "nv_shuffle"};
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

const char *clnorm_dtype_name(clnorm_dtype d)
{
    static const char *const names[] = {"f32", "f16", "bf16"};
    return (unsigned)d < sizeof names / sizeof names[0] ? names[d] : "?";
}

clnorm_status cln_plan_call(const cln_settings *s, const cln_profile *p, cln_op *op,
                            clnorm_dtype dtype, size_t rows, size_t cols, int no_words, int no_coop,
                            cln_limits *lim, cln_plan *out, int *tuned)
{
    char why[512] = "";
    clnorm_status st;
    *lim = s->lim;
    lim->no_words = no_words;
    lim->no_coop = no_coop;
    *tuned = 0;
    /* The plan takes a forced fast path as the device's, whichever it is; the NVIDIA
       hint names one. */
    if (lim->force_path == CLN_PATH_NV && p->best_path != CLN_PATH_NV) {
        snprintf(why, sizeof why, "reduction nv_shuffle was asked for, but device \"%s\" has "
                 "no NVIDIA warp shuffles", p->device_name);
        st = CLNORM_UNSUPPORTED;
    } else {
        /* The device's tuning table, if any, forces its measured shape: where no shape
           is forced (tuning.c), or over a forced one when the hint says 1. */
        if (s->tuning == 1) {
            cln_limits free = *lim;
            free.force_wg = free.force_team = free.force_slices = 0;
            free.force_variant = -1;
            if ((*tuned = cln_tuning_apply(p, op, dtype, rows, cols, &free))) *lim = free;
        } else if (s->tuning < 0) {
            *tuned = cln_tuning_apply(p, op, dtype, rows, cols, lim);
        }
        st = cln_plan_make(p, lim, *op, dtype, rows, cols, out, why, sizeof why);
    }
    if (st)
        return cln_fail(st, "%s %zux%zu %s on \"%s\": %s", cln_op_name(*op), rows, cols,
                        cln_dtype_name(dtype), p->device_name, why);
    return CLNORM_SUCCESS;
}

static void cln_plan_info_fill(const cln_plan *pl, clnorm_dtype dtype, size_t word, int tuned,
                               clnorm_plan_info *o)
{
    memset(o, 0, sizeof *o);
    o->op = (clnorm_op)pl->op;
    o->variant = (clnorm_variant)pl->variant;
    o->reduction = (clnorm_reduction)pl->path;
    o->work_group = pl->wg;
    o->items_per_row = pl->team;
    o->rows_per_group = pl->rows_per_wg;
    o->groups = pl->groups;
    const int split = o->variant == CLNORM_VARIANT_SPLIT || o->variant == CLNORM_VARIANT_COOP;
    o->split = split ? pl->slices : 1;
    o->split_cols = split ? pl->slice_len : 0;
    o->local_bytes = pl->local_bytes;
    o->word = o->variant == CLNORM_VARIANT_WORDS ? word : 1;
    o->elems_per_item = cln_plan_reg_elems(pl, dtype);
    const cln_kernel_id k[3] = {pl->k1, pl->k2, pl->k3};
    for (int i = 0; i < 3; i++) o->kernels[i] = k[i] < CLN_K_COUNT ? cln_kernel_name(k[i]) : NULL;
    o->tuned = tuned;
}

clnorm_status clnorm_plan_query(cl_device_id device, const clnorm_plan_hints *hints,
                                clnorm_op op, clnorm_dtype dtype, size_t rows, size_t cols,
                                clnorm_plan_info *out)
{
    cl_device_type type;
    cl_int err;
    clnorm_status st;
    if (!out) return cln_fail(CLNORM_INVALID_ARGUMENT, "out is NULL");
    if (!device) return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device is NULL");
    if ((err = clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL)) != CL_SUCCESS)
        return cln_fail(CLNORM_DEVICE_NOT_FOUND, "device %p is not a valid device: %s",
                        (void *)device, cln_cl_error_name(err));
    if ((unsigned)op >= CLNORM_OP_COUNT)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "op = %d is not a clnorm_op (0 to %d)", (int)op,
                        CLNORM_OP_COUNT - 1);
    if ((st = cln_check_dtype(dtype))) return st;
    if (cols == 0) return cln_fail(CLNORM_INVALID_ARGUMENT, "cols is 0");
    if (hints && (st = cln_hints_check(hints))) return st;
    cln_settings s;
    const cln_profile *prof;
    if ((st = cln_settings_make(hints, &s)) || (st = cln_profile_get(device, &prof))) return st;
    cln_op o = (cln_op)op;
    cln_limits lim;
    cln_plan pl;
    int tuned;
    if ((st = cln_plan_call(&s, prof, &o, dtype, rows ? rows : 1, cols, 0, 0, &lim, &pl, &tuned)))
        return st;
    cln_plan_info_fill(&pl, dtype, cln_word_size(prof, lim.word), tuned, out);
    return CLNORM_SUCCESS;
}

/* The calling thread's last enqueued operation (cln_last_set). */
static _Thread_local struct {
    int valid;
    cln_plan plan;
    clnorm_dtype dtype;
    size_t word;
    int tuned;
} cln_last;

void cln_last_set(const cln_plan *plan, clnorm_dtype dtype, size_t word, int tuned)
{
    cln_last.plan = *plan;
    cln_last.dtype = dtype;
    cln_last.word = word;
    cln_last.tuned = tuned;
    cln_last.valid = 1;
}

int clnorm_last_plan(clnorm_plan_info *out)
{
    if (!out || !cln_last.valid) return 0;
    cln_plan_info_fill(&cln_last.plan, cln_last.dtype, cln_last.word, cln_last.tuned, out);
    return 1;
}

void clnorm_plan_describe(const clnorm_plan_info *plan, char *buf, size_t len)
{
    if (!buf || !len) return;
    if (!plan) {
        buf[0] = '\0';
        return;
    }
    const int split = plan->variant == CLNORM_VARIANT_SPLIT;
    snprintf(buf, len, "%s/%s wg %zu, %zu %s, %zu groups", clnorm_variant_name(plan->variant),
             clnorm_reduction_name(plan->reduction), plan->work_group,
             split ? plan->split : plan->rows_per_group, split ? "slices/row" : "rows/wg",
             plan->groups);
}

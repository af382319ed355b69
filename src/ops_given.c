/* The device-buffer functions of given statistics: clnorm_softmax_apply writes
   softmax with the statistics of each row given, clnorm_stats_merge_rows merges two
   sets of statistics row by row. Validate, plan (cln_plan_apply), lease the kernel,
   enqueue (enqueue.c). */
#include "api.h"
#include "build_options.h"
#include "config.h"
#include "enqueue.h"
#include "kernels.h"
#include "plan.h"
#include "profile.h"
#include "program_cache.h"
#include "status.h"
#include "types.h"
#include "validate.h"

#include <stdio.h>

/* CLNORM_TRACE=1: one line per call on stderr, with the plan that ran. */
static void cln_given_trace(const cln_plan *pl, clnorm_dtype dtype, const cln_args *a,
                            const cln_profile *prof)
{
    if (!cln_config_now()->pub.trace) return;
    fprintf(stderr, "clnorm: %s %zux%zu %s on \"%s\": %s/%s wg %zu, %zu rows/wg, %zu slices "
            "of %zu, %zu groups\n", cln_kernel_name(pl->k1), a->rows, a->cols,
            cln_dtype_name(dtype), prof->device_name, cln_variant_name(pl->variant),
            cln_path_name(pl->path), pl->wg, pl->rows_per_wg, pl->slices, pl->slice_len,
            pl->groups);
}

/* Plans kernel kid under the settings of the call's thread and queue and leases it in
   lease[0] (re-planning once under a compiled kernel's lower work-group limit). */
static clnorm_status cln_given_plan(cl_command_queue q, cl_context ctx, cl_device_id dev,
                                    cln_kernel_id kid, clnorm_dtype dtype, const cln_args *a,
                                    const cln_profile **profile, cln_plan *plan,
                                    cln_kernel_lease lease[3])
{
    const cln_settings *set;
    const cln_profile *prof;
    cln_plan pl;
    char why[512] = "";
    clnorm_status st = cln_settings_begin(q, &set);
    if (!st) st = cln_profile_get(dev, &prof);
    if (st) return st;
    cln_limits lim = set->lim;
    for (int attempt = 0; attempt < 2; attempt++) {
        if ((st = cln_plan_apply(prof, &lim, kid, a->rows, a->cols, &pl, why, sizeof why)))
            return cln_fail(st, "%s %zux%zu %s on \"%s\": %s", cln_kernel_name(kid), a->rows,
                            a->cols, cln_dtype_name(dtype), prof->device_name, why);
        if ((st = cln_kernel_acquire(ctx, dev, prof, dtype, pl.path, kid,
                                     cln_programs_one(prof), &lease[0]))) {
            /* A fast path that does not build is dropped, as the rows operations drop
               it (ops.c), and the call planned again without it. */
            const cln_profile *now = st == CLNORM_BUILD_FAILED && pl.path != CLN_PATH_LOCAL
                                         ? cln_profile_drop_path(dev, pl.path) : NULL;
            if (now && now != prof) {
                prof = now;
                attempt--;
                continue;
            }
            return st;
        }
        if (!lease[0].max_wg || pl.wg <= lease[0].max_wg) break;
        cln_kernel_return(&lease[0]);
        if (attempt || lim.force_wg)
            return cln_fail(CLNORM_INVALID_ARGUMENT, "%s on \"%s\": work-group size %zu exceeds "
                            "the %zu work-items the compiled kernel allows",
                            cln_kernel_name(kid), prof->device_name, pl.wg, lease[0].max_wg);
        lim.max_wg = lease[0].max_wg;
    }
    *profile = prof;
    *plan = pl;
    return CLNORM_SUCCESS;
}

/* Plans and leases kernel kid (cln_given_plan), then enqueues it. */
static clnorm_status cln_enqueue_given(cl_command_queue q, cl_context ctx, cl_device_id dev,
                                       cln_kernel_id kid, clnorm_dtype dtype, const cln_args *a,
                                       cl_uint num_wait, const cl_event *wait_list,
                                       cl_event *event)
{
    const cln_profile *prof;
    cln_kernel_lease lease[3] = {{0}, {0}, {0}};
    cln_plan pl;
    clnorm_status st = cln_given_plan(q, ctx, dev, kid, dtype, a, &prof, &pl, lease);
    if (st) return st;
    cln_given_trace(&pl, dtype, a, prof);
    return cln_enqueue_plan(q, ctx, prof, &pl, lease, a, num_wait, wait_list, event);
}

/* What would refuse clnorm_softmax_apply at planning or at its kernel's build (api.h),
   with nothing enqueued: the plan is made and the kernel leased, then returned. */
clnorm_status cln_softmax_apply_ready(cl_command_queue q, clnorm_dtype dtype, size_t rows,
                                      size_t cols)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_queue(q, &ctx, &dev);
    if (st || rows == 0) return st;
    const cln_profile *prof;
    cln_kernel_lease lease[3] = {{0}, {0}, {0}};
    cln_plan pl;
    const cln_args a = {.rows = rows, .cols = cols};
    st = cln_given_plan(q, ctx, dev, CLN_K_SOFTMAX_APPLY, dtype, &a, &prof, &pl, lease);
    if (!st) cln_kernel_return(&lease[0]);
    return st;
}

clnorm_status clnorm_softmax_apply(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                                   size_t cols, clnorm_matrix x, cl_mem row_max, cl_mem row_sum,
                                   clnorm_matrix y, cl_uint num_wait, const cl_event *wait_list,
                                   cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    int same;
    clnorm_status st = cln_check_common(queue, dtype, cols, num_wait, wait_list, &ctx, &dev);
    if (st) return st;
    const size_t es = cln_dtype_size(dtype), n4 = rows * sizeof(float);
    if ((st = cln_check_view("x", ctx, &x, rows, cols, es)) ||
        (st = cln_check_view("y", ctx, &y, rows, cols, es)) ||
        (st = cln_check_overlap("x", &x, "y", &y, rows, cols, es, &same)) ||
        (st = cln_check_array("row_max", ctx, row_max, rows, sizeof(float))) ||
        (st = cln_check_array("row_sum", ctx, row_sum, rows, sizeof(float))))
        return st;
    /* The statistics are read while y is written: they may share no byte with it. */
    const size_t yo = y.offset * es, yn = cln_view_bytes(&y, rows, cols, es);
    if ((st = cln_check_disjoint("row_max", row_max, 0, n4, "y", y.mem, yo, yn)) ||
        (st = cln_check_disjoint("row_sum", row_sum, 0, n4, "y", y.mem, yo, yn)))
        return st;
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);
    cln_args a = {.rows = rows, .cols = cols, .x = x, .y = y, .row_max = row_max,
                  .row_sum = row_sum};
    return cln_enqueue_given(queue, ctx, dev, CLN_K_SOFTMAX_APPLY, dtype, &a, num_wait,
                             wait_list, event);
}

clnorm_status clnorm_stats_merge_rows(cl_command_queue queue, size_t rows, cl_mem a_max,
                                      cl_mem a_sum, cl_mem b_max, cl_mem b_sum,
                                      cl_uint num_wait, const cl_event *wait_list,
                                      cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st) st = cln_check_waits(ctx, num_wait, wait_list);
    if (st) return st;
    const size_t n4 = rows * sizeof(float);
    if ((st = cln_check_array("a_max", ctx, a_max, rows, sizeof(float))) ||
        (st = cln_check_array("a_sum", ctx, a_sum, rows, sizeof(float))) ||
        (st = cln_check_array("b_max", ctx, b_max, rows, sizeof(float))) ||
        (st = cln_check_array("b_sum", ctx, b_sum, rows, sizeof(float))) ||
        (st = cln_check_disjoint("a_max", a_max, 0, n4, "a_sum", a_sum, 0, n4)))
        return st;
    /* Each row is read and then written by one work-item (cl/softmax.cl), so b may be
       a's very buffers, but no other overlap: a row's write would meet another's read. */
    const cl_mem as[2] = {a_max, a_sum}, bs[2] = {b_max, b_sum};
    const char *an[2] = {"a_max", "a_sum"}, *bn[2] = {"b_max", "b_sum"};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (as[i] != bs[j] &&
                (st = cln_check_disjoint(an[i], as[i], 0, n4, bn[j], bs[j], 0, n4)))
                return st;
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);
    cln_args a = {.rows = rows, .cols = 1, .row_max = a_max, .row_sum = a_sum, .b_max = b_max,
                  .b_sum = b_sum};
    return cln_enqueue_given(queue, ctx, dev, CLN_K_STATS_MERGE_ROWS, CLNORM_F32, &a, num_wait,
                             wait_list, event);
}

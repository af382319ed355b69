/* The device-buffer operations: validate, plan, fetch the kernel, enqueue. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static clnorm_status cln_check_dtype(clnorm_dtype dtype)
{
    if (dtype != CLNORM_F32 && dtype != CLNORM_F16 && dtype != CLNORM_BF16)
        return cln_fail(CLNORM_INVALID_ARGUMENT,
                        "dtype = %d is not CLNORM_F32 (0), CLNORM_F16 (1) or CLNORM_BF16 (2)",
                        (int)dtype);
    return CLNORM_SUCCESS;
}

/* Validation common to every operation; fills ctx and dev. */
static clnorm_status cln_check_common(cl_command_queue q, clnorm_dtype dtype, size_t cols,
                                      cl_uint num_wait, const cl_event *wait_list,
                                      cl_context *ctx, cl_device_id *dev)
{
    clnorm_status st = cln_check_queue(q, ctx, dev);
    if (!st) st = cln_check_dtype(dtype);
    if (!st && cols == 0) st = cln_fail(CLNORM_INVALID_ARGUMENT, "cols is 0");
    if (!st) st = cln_check_waits(num_wait, wait_list);
    return st;
}

/* rows == 0: nothing to do, but an asked-for event still completes after the wait
   list, as an enqueued no-op would. */
static clnorm_status cln_noop(cl_command_queue q, cl_uint num_wait, const cl_event *wait_list,
                              cl_event *event)
{
    if (!event) return CLNORM_SUCCESS;
    cl_int err = clEnqueueMarkerWithWaitList(q, num_wait, wait_list, event);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clEnqueueMarkerWithWaitList");
    return CLNORM_SUCCESS;
}

/* A planned kernel launch: the lease holds the kernel until it is enqueued. */
typedef struct cln_launch {
    cln_plan plan;
    cln_kernel_lease lease;
} cln_launch;

/* Plans the call and fetches its kernel, re-planning once if the compiled kernel
   allows fewer work-items than the device (registers, local memory). */
static clnorm_status cln_launch_prepare(cl_context ctx, cl_device_id dev, cln_op op,
                                        clnorm_dtype dtype, size_t rows, size_t cols,
                                        cln_launch *L)
{
    const cln_profile *prof;
    cln_limits lim;
    char why[512] = "";
    clnorm_status st = cln_limits_from_env(&lim);
    if (!st) st = cln_profile_get(dev, &prof);
    if (st) return st;
    for (int attempt = 0; attempt < 2; attempt++) {
        st = cln_plan_make(prof, &lim, op, dtype, rows, cols, &L->plan, why, sizeof why);
        if (st) return cln_fail(st, "%s %zux%zu %s on \"%s\": %s", cln_op_name(op), rows, cols,
                                cln_dtype_name(dtype), prof->device_name, why);
        st = cln_kernel_acquire(ctx, dev, prof, dtype, L->plan.path, op, &L->lease);
        if (st) return st;
        size_t kmax = 0;
        cl_int err = clGetKernelWorkGroupInfo(L->lease.kernel, dev, CL_KERNEL_WORK_GROUP_SIZE,
                                              sizeof kmax, &kmax, NULL);
        if (err != CL_SUCCESS) {
            cln_kernel_return(&L->lease);
            return cln_cl_fail(err, "clGetKernelWorkGroupInfo(%s)", cln_op_kernel(op));
        }
        if (kmax == 0 || L->plan.wg <= kmax) return CLNORM_SUCCESS;
        cln_kernel_return(&L->lease);
        if (lim.max_wg && lim.max_wg <= kmax) break;
        lim.max_wg = kmax;
    }
    return cln_fail(CLNORM_INVALID_ARGUMENT, "%s %zux%zu on \"%s\": work-group size %zu exceeds "
                    "the kernel's limit", cln_op_name(op), rows, cols, prof->device_name,
                    L->plan.wg);
}

/* Enqueues the prepared kernel whose arguments, up to the scratch, are set. */
static clnorm_status cln_launch_enqueue(cl_command_queue q, cln_launch *L, cl_uint scratch_arg,
                                        cl_uint num_wait, const cl_event *wait_list,
                                        cl_event *event)
{
    clnorm_status st = CLNORM_SUCCESS;
    cl_uint team = (cl_uint)L->plan.team;
    size_t global = L->plan.groups * L->plan.wg, local = L->plan.wg;
    CLN_CHECK_CL(clSetKernelArg(L->lease.kernel, scratch_arg - 1, sizeof team, &team),
                 "clSetKernelArg(team)");
    CLN_CHECK_CL(clSetKernelArg(L->lease.kernel, scratch_arg, L->plan.local_bytes, NULL),
                 "clSetKernelArg(scratch)");
    CLN_CHECK_CL(clEnqueueNDRangeKernel(q, L->lease.kernel, 1, NULL, &global, &local, num_wait,
                                        wait_list, event),
                 "clEnqueueNDRangeKernel");
fail:
    cln_kernel_return(&L->lease);
    return st;
}

#define CLN_ARG(i, v) CLN_CHECK_CL(clSetKernelArg(k, (i), sizeof(v), &(v)), "clSetKernelArg(" #v ")")

clnorm_status clnorm_rmsnorm(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                             size_t cols, clnorm_matrix x, cl_mem gamma, clnorm_matrix y,
                             float eps, cl_uint num_wait, const cl_event *wait_list,
                             cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    int same;
    clnorm_status st = cln_check_common(queue, dtype, cols, num_wait, wait_list, &ctx, &dev);
    if (st) return st;
    size_t es = cln_dtype_size(dtype);
    if (!(eps >= 0.0f) || isinf(eps))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "eps = %g is negative or not finite", (double)eps);
    if ((st = cln_check_view("x", ctx, &x, rows, cols, es)) ||
        (st = cln_check_view("y", ctx, &y, rows, cols, es)) ||
        (st = cln_check_overlap("x", &x, "y", &y, rows, cols, es, &same)))
        return st;
    if (gamma && ((st = cln_check_array("gamma", ctx, gamma, cols, es)) ||
                  (st = cln_check_disjoint("gamma", gamma, 0, cols * es, "y", y.mem,
                                           y.offset * es, cln_view_bytes(&y, rows, cols, es)))))
        return st;
    if (rows == 0) return cln_noop(queue, num_wait, wait_list, event);

    cln_launch L;
    if ((st = cln_launch_prepare(ctx, dev, CLN_OP_RMSNORM, dtype, rows, cols, &L))) return st;
    cl_kernel k = L.lease.kernel;
    cl_ulong xoff = x.offset, xld = x.ld, yoff = y.offset, yld = y.ld, r = rows, c = cols;
    cl_uint has_gamma = gamma != NULL;
    cl_mem gmem = gamma ? gamma : x.mem; /* never read when has_gamma is 0 */
    CLN_ARG(0, x.mem); CLN_ARG(1, xoff); CLN_ARG(2, xld); CLN_ARG(3, gmem);
    CLN_ARG(4, has_gamma); CLN_ARG(5, y.mem); CLN_ARG(6, yoff); CLN_ARG(7, yld);
    CLN_ARG(8, r); CLN_ARG(9, c); CLN_ARG(10, eps);
    return cln_launch_enqueue(queue, &L, 12, num_wait, wait_list, event);
fail:
    cln_kernel_return(&L.lease);
    return st;
}

clnorm_status clnorm_softmax(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                             size_t cols, clnorm_matrix x, clnorm_matrix y,
                             clnorm_softmax_algo algo, cl_uint num_wait,
                             const cl_event *wait_list, cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    int same;
    clnorm_status st = cln_check_common(queue, dtype, cols, num_wait, wait_list, &ctx, &dev);
    if (st) return st;
    size_t es = cln_dtype_size(dtype);
    if (algo != CLNORM_SOFTMAX_AUTO && algo != CLNORM_SOFTMAX_THREE_PASS &&
        algo != CLNORM_SOFTMAX_ONLINE)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "algo = %d is not CLNORM_SOFTMAX_AUTO (0), "
                        "THREE_PASS (1) or ONLINE (2)", (int)algo);
    if ((st = cln_check_view("x", ctx, &x, rows, cols, es)) ||
        (st = cln_check_view("y", ctx, &y, rows, cols, es)) ||
        (st = cln_check_overlap("x", &x, "y", &y, rows, cols, es, &same)))
        return st;
    if (rows == 0) return cln_noop(queue, num_wait, wait_list, event);

    /* AUTO: the online form reads the row twice instead of three times and needs
       fewer exp per element, so it is never slower. */
    cln_op op = algo == CLNORM_SOFTMAX_THREE_PASS ? CLN_OP_SOFTMAX_3PASS : CLN_OP_SOFTMAX_ONLINE;
    cln_launch L;
    if ((st = cln_launch_prepare(ctx, dev, op, dtype, rows, cols, &L))) return st;
    cl_kernel k = L.lease.kernel;
    cl_ulong xoff = x.offset, xld = x.ld, yoff = y.offset, yld = y.ld, r = rows, c = cols;
    CLN_ARG(0, x.mem); CLN_ARG(1, xoff); CLN_ARG(2, xld); CLN_ARG(3, y.mem);
    CLN_ARG(4, yoff); CLN_ARG(5, yld); CLN_ARG(6, r); CLN_ARG(7, c);
    return cln_launch_enqueue(queue, &L, 9, num_wait, wait_list, event);
fail:
    cln_kernel_return(&L.lease);
    return st;
}

clnorm_status clnorm_softmax_stats(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                                   size_t cols, clnorm_matrix x, cl_mem row_max,
                                   cl_mem row_sum, cl_uint num_wait,
                                   const cl_event *wait_list, cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_common(queue, dtype, cols, num_wait, wait_list, &ctx, &dev);
    if (st) return st;
    size_t es = cln_dtype_size(dtype);
    if ((st = cln_check_view("x", ctx, &x, rows, cols, es)) ||
        (st = cln_check_array("row_max", ctx, row_max, rows, sizeof(float))) ||
        (st = cln_check_array("row_sum", ctx, row_sum, rows, sizeof(float))))
        return st;
    /* The outputs must not alias each other or the input being read. */
    size_t xo = x.offset * es, xn = cln_view_bytes(&x, rows, cols, es), n4 = rows * sizeof(float);
    if ((st = cln_check_disjoint("row_max", row_max, 0, n4, "row_sum", row_sum, 0, n4)) ||
        (row_max == row_sum && rows &&
         (st = cln_fail(CLNORM_INVALID_ARGUMENT, "row_max and row_sum are the same buffer"))) ||
        (st = cln_check_disjoint("row_max", row_max, 0, n4, "x", x.mem, xo, xn)) ||
        (st = cln_check_disjoint("row_sum", row_sum, 0, n4, "x", x.mem, xo, xn)))
        return st;
    if (rows == 0) return cln_noop(queue, num_wait, wait_list, event);

    cln_launch L;
    if ((st = cln_launch_prepare(ctx, dev, CLN_OP_STATS, dtype, rows, cols, &L))) return st;
    cl_kernel k = L.lease.kernel;
    cl_ulong xoff = x.offset, xld = x.ld, r = rows, c = cols;
    CLN_ARG(0, x.mem); CLN_ARG(1, xoff); CLN_ARG(2, xld); CLN_ARG(3, row_max);
    CLN_ARG(4, row_sum); CLN_ARG(5, r); CLN_ARG(6, c);
    return cln_launch_enqueue(queue, &L, 8, num_wait, wait_list, event);
fail:
    cln_kernel_return(&L.lease);
    return st;
}

clnorm_status clnorm_warmup(cl_command_queue queue)
{
    cl_context ctx;
    cl_device_id dev;
    const cln_profile *prof;
    cln_limits lim;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st) st = cln_limits_from_env(&lim);
    if (!st) st = cln_profile_get(dev, &prof);
    if (st) return st;
    cln_path path = lim.force_path == CLN_PATH_LOCAL ? CLN_PATH_LOCAL : prof->best_path;
    for (int d = CLNORM_F32; d <= CLNORM_BF16; d++) {
        cl_program prog;
        if ((st = cln_program_get(ctx, dev, prof, (clnorm_dtype)d, path, &prog))) return st;
    }
    return CLNORM_SUCCESS;
}

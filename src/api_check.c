/* The advanced API for layers built on clnorm: a softmax request, or the write of a
   sharded one, checked without being enqueued, and a way to report a refusal through
   clnorm_last_error(). */
#include "clnorm_advanced.h"
#include "api.h"
#include "status.h"
#include "types.h"
#include "validate.h"

clnorm_status clnorm_softmax_check(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                                   size_t cols, clnorm_matrix x, clnorm_matrix y)
{
    /* The order and messages of clnorm_softmax's own checks (src/ops.c), so that a
       request refused here reads as that call would have refused it. */
    cl_context ctx;
    cl_device_id dev;
    int same;
    clnorm_status st = cln_check_common(queue, dtype, cols, 0, NULL, &ctx, &dev);
    if (st) return st;
    const size_t es = cln_dtype_size(dtype);
    if ((st = cln_check_view("x", ctx, &x, rows, cols, es)) ||
        (st = cln_check_view("y", ctx, &y, rows, cols, es)) ||
        (st = cln_check_overlap("x", &x, "y", &y, rows, cols, es, &same)))
        return st;
    return CLNORM_SUCCESS;
}

clnorm_status clnorm_softmax_apply_check(cl_command_queue queue, clnorm_dtype dtype,
                                         size_t rows, size_t cols, clnorm_matrix x,
                                         clnorm_matrix y)
{
    clnorm_status st = clnorm_softmax_check(queue, dtype, rows, cols, x, y);
    return st ? st : cln_softmax_apply_ready(queue, dtype, rows, cols);
}

clnorm_status clnorm_set_last_error(clnorm_status status, const char *message)
{
    cln_fail(status, "%s", message ? message : "");
    return status;
}

/* Sessions (one context and one in-order queue on one device) and the host-array
   functions built on them. */
#include "config.h"
#include "devices.h"
#include "status.h"
#include "types.h"
#include "validate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct clnorm_session {
    cl_context context;
    cl_command_queue queue;
    cl_device_id device;
    cl_ulong max_alloc; /* CL_DEVICE_MAX_MEM_ALLOC_SIZE; 0 where the query failed */
    char device_name[256];
};

clnorm_status clnorm_session_create(const char *spec, clnorm_session **out)
{
    clnorm_status st = CLNORM_SUCCESS;
    cln_device_ref ref;
    clnorm_session *s = NULL;
    cl_int err;
    if (!out) return cln_fail(CLNORM_INVALID_ARGUMENT, "out is NULL");
    *out = NULL;
    if ((st = cln_device_find(spec, &ref))) return st;
    s = calloc(1, sizeof *s);
    if (!s) return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a session");
    s->device = ref.device;
    clGetDeviceInfo(ref.device, CL_DEVICE_NAME, sizeof s->device_name - 1, s->device_name, NULL);
    if (clGetDeviceInfo(ref.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof s->max_alloc,
                        &s->max_alloc, NULL) != CL_SUCCESS)
        s->max_alloc = 0;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)ref.platform, 0};
    s->context = clCreateContext(props, 1, &ref.device, NULL, NULL, &err);
    CLN_CHECK_CL(err, "clCreateContext");
    /* Profiling costs nothing measurable and lets tools time kernels on the queue. */
    s->queue = clCreateCommandQueue(s->context, ref.device, CL_QUEUE_PROFILING_ENABLE, &err);
    CLN_CHECK_CL(err, "clCreateCommandQueue");
    *out = s;
    return CLNORM_SUCCESS;
fail:
    clnorm_session_destroy(s);
    return st;
}

void clnorm_session_destroy(clnorm_session *s)
{
    if (!s) return;
    if (s->queue) {
        clFinish(s->queue);
        clReleaseCommandQueue(s->queue);
    }
    if (s->context) {
        clnorm_release_cache(s->context);
        clReleaseContext(s->context);
    }
    free(s);
}

cl_context clnorm_session_context(const clnorm_session *s) { return s ? s->context : NULL; }
cl_command_queue clnorm_session_queue(const clnorm_session *s) { return s ? s->queue : NULL; }
const char *clnorm_session_device_name(const clnorm_session *s) { return s ? s->device_name : ""; }

/* Bytes of rows x cols elements, refusing NULL pointers and size overflow. */
static clnorm_status cln_host_check(const clnorm_session *s, clnorm_dtype dtype, size_t rows,
                                    size_t cols, size_t *bytes)
{
    clnorm_status st;
    if (!s) return cln_fail(CLNORM_INVALID_ARGUMENT, "session is NULL");
    if ((st = cln_check_dtype(dtype))) return st;
    if (cols == 0) return cln_fail(CLNORM_INVALID_ARGUMENT, "cols is 0");
    if (__builtin_mul_overflow(rows, cols, bytes) ||
        __builtin_mul_overflow(*bytes, cln_dtype_size(dtype), bytes))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "rows %zu x cols %zu overflows size_t", rows,
                        cols);
    /* A bad CLNORM_* environment value fails the call, rows == 0 included. */
    return cln_config_check();
}

/* Two arrays a call reads back into may not share a byte: the later read would
   overwrite the earlier one's result. */
static clnorm_status cln_host_disjoint(const char *an, const void *a, size_t abytes,
                                       const char *bn, const void *b, size_t bbytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    if (a0 < b0 + bbytes && b0 < a0 + abytes)
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s (%p, %zu bytes) shares memory with %s "
                        "(%p, %zu bytes): both receive results", an, a, abytes, bn, b, bbytes);
    return CLNORM_SUCCESS;
}

static clnorm_status cln_buffer(clnorm_session *s, size_t bytes, const void *init, cl_mem *out,
                                const char *name)
{
    cl_int err = CL_INVALID_BUFFER_SIZE;
    cl_mem_flags flags = CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0);
    /* An array past the device's largest allocation is a buffer that cannot be made,
       as the host-array functions document, not a misuse of OpenCL. It is refused
       before the driver is asked: some copy from the host before they check the size. */
    *out = NULL;
    if (!s->max_alloc || bytes <= s->max_alloc)
        *out = clCreateBuffer(s->context, flags, bytes ? bytes : 1, (void *)init, &err);
    if (err == CL_INVALID_BUFFER_SIZE)
        return cln_fail(CLNORM_OUT_OF_RESOURCES, "%s needs a buffer of %zu bytes, more than "
                        "device \"%s\" allocates at once (%llu bytes)", name, bytes,
                        s->device_name, (unsigned long long)s->max_alloc);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clCreateBuffer(%s, %zu bytes)", name, bytes);
    return CLNORM_SUCCESS;
}

static clnorm_status cln_read(clnorm_session *s, cl_mem m, size_t bytes, void *dst)
{
    /* Non-blocking, then a wait on the read's own event: Rusticl 22 can return from a
       blocking read before the copy has run when other threads use the same queue, and
       the late copy lands in freed memory (docs/DESIGN.md, 'Driver quirks'). */
    cl_event ev = NULL;
    cl_int err = clEnqueueReadBuffer(s->queue, m, CL_FALSE, 0, bytes, dst, 0, NULL, &ev);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clEnqueueReadBuffer(%zu bytes)", bytes);
    /* A failed read makes the wait fail (CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST). */
    err = clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clWaitForEvents(read of %zu bytes)", bytes);
    return CLNORM_SUCCESS;
}

clnorm_status clnorm_rmsnorm_host(clnorm_session *s, clnorm_dtype dtype, size_t rows,
                                  size_t cols, const void *x, const void *gamma, void *y,
                                  float eps)
{
    size_t bytes = 0;
    cl_mem bx = NULL, bg = NULL;
    clnorm_status st = cln_host_check(s, dtype, rows, cols, &bytes);
    if (!st) st = cln_check_eps(eps); /* checked at rows == 0 too, as the device call does */
    if (st) return st;
    if (rows && (!x || !y))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL", !x ? "x" : "y");
    if (rows == 0) return CLNORM_SUCCESS;
    if ((st = cln_buffer(s, bytes, x, &bx, "x"))) goto fail;
    if (gamma && (st = cln_buffer(s, cols * cln_dtype_size(dtype), gamma, &bg, "gamma"))) goto fail;
    clnorm_matrix v = {bx, 0, 0};
    if ((st = clnorm_rmsnorm(s->queue, dtype, rows, cols, v, bg, v, eps, 0, NULL, NULL))) goto fail;
    st = cln_read(s, bx, bytes, y);
fail:
    if (bx) clReleaseMemObject(bx);
    if (bg) clReleaseMemObject(bg);
    return st;
}

clnorm_status clnorm_softmax_host(clnorm_session *s, clnorm_dtype dtype, size_t rows,
                                  size_t cols, const void *x, void *y, clnorm_softmax_algo algo)
{
    size_t bytes = 0;
    cl_mem bx = NULL;
    clnorm_status st = cln_host_check(s, dtype, rows, cols, &bytes);
    if (st) return st;
    if (rows && (!x || !y))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL", !x ? "x" : "y");
    if ((st = cln_buffer(s, bytes, rows ? x : NULL, &bx, "x"))) return st;
    clnorm_matrix v = {bx, 0, 0};
    /* The device call validates algo; with rows == 0 it is a no-op. */
    st = clnorm_softmax(s->queue, dtype, rows, cols, v, v, algo, 0, NULL, NULL);
    if (!st && rows) st = cln_read(s, bx, bytes, y);
    clReleaseMemObject(bx);
    return st;
}

clnorm_status clnorm_softmax_stats_host(clnorm_session *s, clnorm_dtype dtype, size_t rows,
                                        size_t cols, const void *x, float *row_max,
                                        float *row_sum)
{
    size_t bytes = 0;
    cl_mem bx = NULL, bm = NULL, bs = NULL;
    clnorm_status st = cln_host_check(s, dtype, rows, cols, &bytes);
    if (st) return st;
    if (rows && (!x || !row_max || !row_sum))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL",
                        !x ? "x" : !row_max ? "row_max" : "row_sum");
    if (rows == 0) return CLNORM_SUCCESS;
    if ((st = cln_host_disjoint("row_max", row_max, rows * sizeof(float), "row_sum", row_sum,
                                rows * sizeof(float))))
        return st;
    if ((st = cln_buffer(s, bytes, x, &bx, "x")) ||
        (st = cln_buffer(s, rows * sizeof(float), NULL, &bm, "row_max")) ||
        (st = cln_buffer(s, rows * sizeof(float), NULL, &bs, "row_sum")))
        goto fail;
    clnorm_matrix v = {bx, 0, 0};
    if ((st = clnorm_softmax_stats(s->queue, dtype, rows, cols, v, bm, bs, 0, NULL, NULL)) ||
        (st = cln_read(s, bm, rows * sizeof(float), row_max)) ||
        (st = cln_read(s, bs, rows * sizeof(float), row_sum)))
        goto fail;
fail:
    if (bx) clReleaseMemObject(bx);
    if (bm) clReleaseMemObject(bm);
    if (bs) clReleaseMemObject(bs);
    return st;
}

clnorm_status clnorm_softmax_apply_host(clnorm_session *s, clnorm_dtype dtype, size_t rows,
                                        size_t cols, const void *x, const float *row_max,
                                        const float *row_sum, void *y)
{
    size_t bytes = 0;
    cl_mem bx = NULL, bm = NULL, bs = NULL;
    clnorm_status st = cln_host_check(s, dtype, rows, cols, &bytes);
    if (st) return st;
    if (rows && (!x || !row_max || !row_sum || !y))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL",
                        !x ? "x" : !row_max ? "row_max" : !row_sum ? "row_sum" : "y");
    if (rows == 0) return CLNORM_SUCCESS;
    if ((st = cln_buffer(s, bytes, x, &bx, "x")) ||
        (st = cln_buffer(s, rows * sizeof(float), row_max, &bm, "row_max")) ||
        (st = cln_buffer(s, rows * sizeof(float), row_sum, &bs, "row_sum")))
        goto fail;
    clnorm_matrix v = {bx, 0, 0};
    if ((st = clnorm_softmax_apply(s->queue, dtype, rows, cols, v, bm, bs, v, 0, NULL, NULL)))
        goto fail;
    st = cln_read(s, bx, bytes, y);
fail:
    if (bx) clReleaseMemObject(bx);
    if (bm) clReleaseMemObject(bm);
    if (bs) clReleaseMemObject(bs);
    return st;
}

clnorm_status clnorm_add_rmsnorm_host(clnorm_session *s, clnorm_dtype dtype, size_t rows,
                                      size_t cols, const void *x, void *residual,
                                      int update_residual, const void *gamma, void *y,
                                      float eps)
{
    size_t bytes = 0;
    cl_mem bx = NULL, br = NULL, bg = NULL;
    clnorm_status st = cln_host_check(s, dtype, rows, cols, &bytes);
    if (!st) st = cln_check_eps(eps);
    if (st) return st;
    if (rows && (!x || !residual || !y))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "%s is NULL",
                        !x ? "x" : !residual ? "residual" : "y");
    if (rows == 0) return CLNORM_SUCCESS;
    if ((st = cln_host_disjoint("residual", residual, bytes, "y", y, bytes))) return st;
    if ((st = cln_buffer(s, bytes, x, &bx, "x")) ||
        (st = cln_buffer(s, bytes, residual, &br, "residual")) ||
        (gamma && (st = cln_buffer(s, cols * cln_dtype_size(dtype), gamma, &bg, "gamma"))))
        goto fail;
    clnorm_matrix vx = {bx, 0, 0}, vr = {br, 0, 0};
    if ((st = clnorm_add_rmsnorm(s->queue, dtype, rows, cols, vx, vr, update_residual, bg, vx,
                                 eps, 0, NULL, NULL)))
        goto fail;
    if ((st = cln_read(s, bx, bytes, y))) goto fail;
    if (update_residual) st = cln_read(s, br, bytes, residual);
fail:
    if (bx) clReleaseMemObject(bx);
    if (br) clReleaseMemObject(br);
    if (bg) clReleaseMemObject(bg);
    return st;
}

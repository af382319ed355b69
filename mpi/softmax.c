/* clnorm_mpi_softmax: each rank's shard statistics on its device, merged across the
   ranks by one MPI_Allreduce, then each shard written with the whole rows'
   statistics. docs/DESIGN.md, 'Softmax across MPI ranks'. */
#include "internal.h"

#include "clnorm_advanced.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static const char cmpi_fn[] = "clnorm_mpi_softmax";

/* What one call holds: device statistics, their host copy (max then sum, rows each)
   and the pairs reduced across ranks. */
typedef struct cmpi_call {
    cl_command_queue q;
    size_t rows;
    cl_mem dmax, dsum;
    float *host;   /* 2 * rows: the maxima, then the sums */
    float *pairs;  /* rows (max, sum) pairs */
} cmpi_call;

static void cmpi_call_free(cmpi_call *c)
{
    if (c->dmax) clReleaseMemObject(c->dmax);
    if (c->dsum) clReleaseMemObject(c->dsum);
    free(c->host);
    free(c->pairs);
}

static clnorm_status cmpi_cl_fail(cl_int err, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, "%s: %s: %s (%d)", cmpi_fn, what, clnorm_opencl_error_name(err),
             (int)err);
    return clnorm_set_last_error(err == CL_OUT_OF_HOST_MEMORY || err == CL_OUT_OF_RESOURCES ||
                                         err == CL_MEM_OBJECT_ALLOCATION_FAILURE
                                     ? CLNORM_OUT_OF_RESOURCES
                                     : CLNORM_OPENCL_ERROR,
                                 msg);
}

/* Waits for n events and releases them; an event that ended in an error fails. */
static clnorm_status cmpi_wait(cl_event *ev, cl_uint n, const char *what)
{
    cl_int err = clWaitForEvents(n, ev);
    for (cl_uint i = 0; i < n; i++) {
        cl_int exec = CL_COMPLETE;
        if (err == CL_SUCCESS &&
            clGetEventInfo(ev[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec,
                           NULL) == CL_SUCCESS &&
            exec < 0)
            err = exec;
        clReleaseEvent(ev[i]);
        ev[i] = NULL;
    }
    return err == CL_SUCCESS ? CLNORM_SUCCESS : cmpi_cl_fail(err, what);
}

/* Waits for the events that are set and releases them, on a path that already
   fails: their host memory is freed next, and the failure to report is the first. */
static void cmpi_drain(cl_event *ev, cl_uint n)
{
    for (cl_uint i = 0; i < n; i++)
        if (ev[i]) {
            clWaitForEvents(1, &ev[i]);
            clReleaseEvent(ev[i]);
            ev[i] = NULL;
        }
}

/* This rank's statistics: clnorm_softmax_stats into temporaries, read back as pairs.
   On an out-of-order queue a barrier first holds them behind the commands enqueued
   before, as an in-order queue would. */
static clnorm_status cmpi_local_stats(cmpi_call *c, clnorm_dtype dtype, size_t cols,
                                      clnorm_matrix x)
{
    const size_t rows = c->rows, bytes = rows * sizeof(float);
    cl_context ctx;
    cl_command_queue_properties props = 0;
    cl_event ev[3] = {NULL, NULL, NULL};
    cl_int err = clGetCommandQueueInfo(c->q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL);
    if (err == CL_SUCCESS)
        err = clGetCommandQueueInfo(c->q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL);
    if (err != CL_SUCCESS) return cmpi_cl_fail(err, "clGetCommandQueueInfo");
    c->host = malloc(2 * bytes);
    c->pairs = malloc(2 * bytes);
    if (!c->host || !c->pairs)
        return clnorm_set_last_error(CLNORM_OUT_OF_RESOURCES,
                                     "clnorm_mpi_softmax: out of host memory for the "
                                     "statistics of the rows");
    c->dmax = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err == CL_SUCCESS) c->dsum = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) return cmpi_cl_fail(err, "clCreateBuffer for the statistics");
    clnorm_status st = CLNORM_SUCCESS;
    if ((props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) &&
        (err = clEnqueueBarrierWithWaitList(c->q, 0, NULL, &ev[2])) != CL_SUCCESS)
        return cmpi_cl_fail(err, "clEnqueueBarrierWithWaitList");
    st = clnorm_softmax_stats(c->q, dtype, rows, cols, x, c->dmax, c->dsum, ev[2] ? 1 : 0,
                              ev[2] ? &ev[2] : NULL, &ev[0]);
    if (ev[2]) clReleaseEvent(ev[2]);
    if (st) return st;
    /* Non-blocking reads and a wait: Rusticl 22 can return from a blocking read
       before the copy has run (docs/DESIGN.md, 'Driver quirks'). */
    cl_event done = ev[0];
    ev[0] = NULL;
    err = clEnqueueReadBuffer(c->q, c->dmax, CL_FALSE, 0, bytes, c->host, 1, &done, &ev[0]);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(c->q, c->dsum, CL_FALSE, 0, bytes, c->host + rows, 1, &done,
                                  &ev[1]);
    clReleaseEvent(done);
    if (err != CL_SUCCESS) {
        st = cmpi_cl_fail(err, "clEnqueueReadBuffer of the statistics");
        cmpi_drain(ev, 1);
        return st;
    }
    if ((st = cmpi_wait(ev, 2, "reading the statistics back"))) return st;
    for (size_t r = 0; r < rows; r++) {
        c->pairs[2 * r] = c->host[r];
        c->pairs[2 * r + 1] = c->host[rows + r];
    }
    return CLNORM_SUCCESS;
}

/* The pairs merged across comm, in place; counts above INT_MAX in several calls,
   the same on every rank since every rank has the same rows. */
static clnorm_status cmpi_reduce(cmpi_call *c, MPI_Comm comm, MPI_Op op, MPI_Datatype type)
{
    for (size_t done = 0; done < c->rows;) {
        size_t n = c->rows - done < (size_t)INT_MAX ? c->rows - done : (size_t)INT_MAX;
        int err = MPI_Allreduce(MPI_IN_PLACE, c->pairs + 2 * done, (int)n, type, op, comm);
        if (err != MPI_SUCCESS) return cmpi_fail_mpi(err, "MPI_Allreduce of the statistics");
        done += n;
    }
    return CLNORM_SUCCESS;
}

/* Writes the merged statistics back to the device and the shard with them. */
static clnorm_status cmpi_apply(cmpi_call *c, clnorm_dtype dtype, size_t cols,
                                clnorm_matrix x, clnorm_matrix y)
{
    const size_t rows = c->rows, bytes = rows * sizeof(float);
    for (size_t r = 0; r < rows; r++) {
        c->host[r] = c->pairs[2 * r];
        c->host[rows + r] = c->pairs[2 * r + 1];
    }
    cl_event ev[2] = {NULL, NULL}, done = NULL;
    cl_int err = clEnqueueWriteBuffer(c->q, c->dmax, CL_FALSE, 0, bytes, c->host, 0, NULL,
                                      &ev[0]);
    if (err == CL_SUCCESS)
        err = clEnqueueWriteBuffer(c->q, c->dsum, CL_FALSE, 0, bytes, c->host + rows, 0, NULL,
                                   &ev[1]);
    clnorm_status st = CLNORM_SUCCESS;
    if (err != CL_SUCCESS) {
        st = cmpi_cl_fail(err, "clEnqueueWriteBuffer of the statistics");
        cmpi_drain(ev, 2);
        return st;
    }
    st = clnorm_softmax_apply(c->q, dtype, rows, cols, x, c->dmax, c->dsum, y, 2, ev, &done);
    if (st) {
        cmpi_drain(ev, 2);
        return st;
    }
    clReleaseEvent(ev[0]);
    clReleaseEvent(ev[1]);
    return cmpi_wait(&done, 1, "clnorm_softmax_apply");
}

clnorm_status clnorm_mpi_softmax(MPI_Comm comm, cl_command_queue queue, clnorm_dtype dtype,
                                 size_t rows, size_t cols, clnorm_matrix x, clnorm_matrix y,
                                 float *row_max, float *row_sum)
{
    int rank, size;
    clnorm_status st = cmpi_check_comm(cmpi_fn, comm, &rank, &size);
    if (st) return st;
    cmpi_call c = {.q = queue, .rows = rows};
    MPI_Op op = MPI_OP_NULL;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    /* The local part: the request checked as clnorm_softmax would and its write planned
       (clnorm_softmax_apply_check), the reduction's op, then this shard's statistics.
       Whatever fails here, every rank learns of it before any writes y or enters the
       reduction. */
    st = clnorm_softmax_apply_check(queue, dtype, rows, cols, x, y);
    if (!st && rows) st = clnorm_mpi_stats_op(&op, &type);
    if (!st && rows) st = cmpi_local_stats(&c, dtype, cols, x);
    st = cmpi_agree(cmpi_fn, comm, rank, size, st, dtype, rows);
    if (st || rows == 0) goto done;
    if ((st = cmpi_reduce(&c, comm, op, type))) goto done;
    for (size_t r = 0; r < rows; r++) {
        if (row_max) row_max[r] = c.pairs[2 * r];
        if (row_sum) row_sum[r] = c.pairs[2 * r + 1];
    }
    st = cmpi_apply(&c, dtype, cols, x, y);
done:
    cmpi_call_free(&c);
    return st;
}

/* clnorm_softmax_sharded: softmax over column shards on any mix of queues, devices
   and platforms. Every shard is validated, and its write planned, before anything is
   enqueued; then each shard's statistics are taken on its device (all enqueued before
   any wait, so that the devices overlap), read back, merged on the host in shard
   order, written back to every device, and each shard is written with them
   (clnorm_softmax_apply). */
#include "api.h"
#include "status.h"
#include "types.h"
#include "validate.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one shard holds while the call runs. */
typedef struct cln_shard_run {
    cl_command_queue q;
    cl_mem m, l;           /* its statistics, then the whole rows' */
    cl_event read_m, read_l, done;
    cl_event write[2];     /* the merged statistics' writes, until the shard is written */
    int enqueued;          /* something of this call is on q */
} cln_shard_run;

/* Renames the last error "shards[i]: ..." where a check named no shard. */
static clnorm_status cln_shard_fail(clnorm_status st, size_t i)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", clnorm_last_error());
    return cln_fail(st, "shards[%zu]: %s", i, msg);
}

/* Every shard's request as clnorm_softmax_stats and clnorm_softmax_apply will see
   it, and no shard's y meeting another shard's x or y. Resolves each view's ld into
   views (2 n of them: x, y). */
static clnorm_status cln_check_shards(clnorm_dtype dtype, size_t rows, size_t n,
                                      const clnorm_shard *shards, clnorm_matrix *views)
{
    const size_t es = cln_dtype_size(dtype);
    char xn[48], yn[48];
    for (size_t i = 0; i < n; i++) {
        const clnorm_shard *s = &shards[i];
        cl_context ctx;
        cl_device_id dev;
        int same;
        clnorm_status st;
        if (!s->queue)
            return cln_fail(CLNORM_INVALID_ARGUMENT, "shards[%zu].queue is NULL", i);
        if ((st = cln_check_queue(s->queue, &ctx, &dev))) return cln_shard_fail(st, i);
        if (s->cols == 0) return cln_fail(CLNORM_INVALID_ARGUMENT, "shards[%zu].cols is 0", i);
        snprintf(xn, sizeof xn, "shards[%zu].x", i);
        snprintf(yn, sizeof yn, "shards[%zu].y", i);
        views[2 * i] = s->x;
        views[2 * i + 1] = s->y;
        if ((st = cln_check_view(xn, ctx, &views[2 * i], rows, s->cols, es)) ||
            (st = cln_check_view(yn, ctx, &views[2 * i + 1], rows, s->cols, es)) ||
            (st = cln_check_overlap(xn, &views[2 * i], yn, &views[2 * i + 1], rows, s->cols, es,
                                    &same)))
            return st;
    }
    if (rows == 0) return CLNORM_SUCCESS;
    /* Shard i's y is written while shard j's x is read and its y written. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (int w = 0; w < 2 && j != i; w++)
                if (cln_views_meet(&views[2 * i + 1], shards[i].cols, &views[2 * j + w],
                                   shards[j].cols, rows, es))
                    return cln_fail(CLNORM_INVALID_ARGUMENT,
                                    "shards[%zu].y (offset %zu, ld %zu) shares elements with "
                                    "shards[%zu].%s (offset %zu, ld %zu)", i,
                                    views[2 * i + 1].offset, views[2 * i + 1].ld, j,
                                    w ? "y" : "x", views[2 * j + w].offset, views[2 * j + w].ld);
    return CLNORM_SUCCESS;
}

/* Waits for every event of the call still held, releases it and the buffers. */
static void cln_shards_release(cln_shard_run *run, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cln_shard_run *r = &run[i];
        /* The reads and writes name host memory freed after this: nothing of the call
           may still run. Each transfer is waited for by its own event as well: Mesa
           22.3's Rusticl returns from clFinish before a non-blocking read has written
           the host memory (docs/DESIGN.md, 'Driver quirks'). */
        cl_event held[5] = {r->read_m, r->read_l, r->write[0], r->write[1], r->done};
        for (int k = 0; k < 5; k++)
            if (held[k]) {
                clWaitForEvents(1, &held[k]);
                clReleaseEvent(held[k]);
            }
        if (r->enqueued) clFinish(r->q);
        if (r->m) clReleaseMemObject(r->m);
        if (r->l) clReleaseMemObject(r->l);
    }
}

clnorm_status clnorm_softmax_sharded(clnorm_dtype dtype, size_t rows, size_t n,
                                     const clnorm_shard *shards, float *row_max, float *row_sum)
{
    clnorm_status st = cln_check_dtype(dtype);
    if (st) return st;
    if (n == 0) return cln_fail(CLNORM_INVALID_ARGUMENT, "n is 0: no shards");
    if (!shards) return cln_fail(CLNORM_INVALID_ARGUMENT, "shards is NULL (n = %zu)", n);
    /* The host arrays below hold two views and a row of statistics per shard. */
    if (n > SIZE_MAX / (2 * sizeof(clnorm_matrix)) || rows > SIZE_MAX / sizeof(float) ||
        (rows && n > SIZE_MAX / (rows * sizeof(float))))
        return cln_fail(CLNORM_INVALID_ARGUMENT, "n = %zu shards of %zu rows: their views and "
                        "statistics overflow size_t", n, rows);
    clnorm_matrix *views = malloc(2 * n * sizeof *views);
    if (!views) return cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for %zu shards", n);
    st = cln_check_shards(dtype, rows, n, shards, views);
    /* Every shard's write planned (and its kernel built) before anything is enqueued:
       a write refused after others were enqueued would leave those shards written. */
    for (size_t i = 0; i < n && !st; i++)
        if ((st = cln_softmax_apply_ready(shards[i].queue, dtype, rows, shards[i].cols)))
            cln_shard_fail(st, i);
    if (st || rows == 0) {
        free(views);
        return st;
    }
    const size_t n4 = rows * sizeof(float);
    cln_shard_run *run = calloc(n, sizeof *run);
    /* Each shard's statistics as read back, then the merged ones. */
    float *hm = malloc(n * n4), *hl = malloc(n * n4), *mm = malloc(n4), *ml = malloc(n4);
    cl_int err;
    if (!run || !hm || !hl || !mm || !ml) {
        st = cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for %zu shards of %zu rows", n,
                      rows);
        goto fail;
    }
    /* Statistics of every shard, read back without blocking: the devices all work at
       once, and the host waits only afterwards. */
    for (size_t i = 0; i < n; i++) {
        cln_shard_run *r = &run[i];
        cl_context ctx;
        cl_event ev = NULL;
        r->q = shards[i].queue;
        CLN_CHECK_CL(clGetCommandQueueInfo(r->q, CL_QUEUE_CONTEXT, sizeof ctx, &ctx, NULL),
                     "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)");
        r->m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n4, NULL, &err);
        if (err == CL_SUCCESS) r->l = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n4, NULL, &err);
        if (err != CL_SUCCESS) {
            st = cln_cl_fail(err, "clCreateBuffer(shards[%zu] statistics, %zu bytes)", i, n4);
            goto fail;
        }
        r->enqueued = 1;
        if ((st = clnorm_softmax_stats(r->q, dtype, rows, shards[i].cols, views[2 * i], r->m, r->l,
                                       0, NULL, &ev)))
            goto fail;
        err = clEnqueueReadBuffer(r->q, r->m, CL_FALSE, 0, n4, hm + i * rows, 1, &ev, &r->read_m);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(r->q, r->l, CL_FALSE, 0, n4, hl + i * rows, 1, &ev,
                                      &r->read_l);
        clReleaseEvent(ev);
        if (err != CL_SUCCESS) {
            st = cln_cl_fail(err, "clEnqueueReadBuffer(shards[%zu] statistics)", i);
            goto fail;
        }
        CLN_CHECK_CL(clFlush(r->q), "clFlush");
    }
    /* Events of different contexts cannot be waited for together. */
    for (size_t i = 0; i < n; i++) {
        CLN_CHECK_CL(clWaitForEvents(1, &run[i].read_m), "clWaitForEvents(statistics read)");
        CLN_CHECK_CL(clWaitForEvents(1, &run[i].read_l), "clWaitForEvents(statistics read)");
    }
    for (size_t r = 0; r < rows; r++) {
        float m = -INFINITY, l = 0.0f;
        for (size_t i = 0; i < n; i++) clnorm_stats_merge(m, l, hm[i * rows + r], hl[i * rows + r], &m, &l);
        mm[r] = m;
        ml[r] = l;
    }
    /* The whole rows' statistics to every device, then every shard written. */
    for (size_t i = 0; i < n; i++) {
        cln_shard_run *r = &run[i];
        cl_event *w = r->write;
        err = clEnqueueWriteBuffer(r->q, r->m, CL_FALSE, 0, n4, mm, 0, NULL, &w[0]);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(r->q, r->l, CL_FALSE, 0, n4, ml, 0, NULL, &w[1]);
        if (err == CL_SUCCESS)
            st = clnorm_softmax_apply(r->q, dtype, rows, shards[i].cols, views[2 * i], r->m, r->l,
                                      views[2 * i + 1], 2, w, &r->done);
        else
            st = cln_cl_fail(err, "clEnqueueWriteBuffer(shards[%zu] statistics)", i);
        if (st) goto fail;
        CLN_CHECK_CL(clFlush(r->q), "clFlush");
    }
    for (size_t i = 0; i < n; i++)
        CLN_CHECK_CL(clWaitForEvents(1, &run[i].done), "clWaitForEvents(shard written)");
    if (row_max) memcpy(row_max, mm, n4);
    if (row_sum) memcpy(row_sum, ml, n4);
fail:
    if (run) cln_shards_release(run, n);
    free(run);
    free(hm);
    free(hl);
    free(mm);
    free(ml);
    free(views);
    return st;
}

/* The enqueue of a planned call: arguments, stages, events, the serial mode and the
   partials buffer (enqueue.h). */
#include "enqueue.h"
#include "kernels.h"
#include "plan.h"
#include "program_cache.h"
#include "scratch.h"
#include "serial.h"
#include "status.h"
#include "types.h"

#include <stdlib.h>
#include <string.h>

clnorm_status cln_enqueue_noop(cl_command_queue q, cl_uint num_wait, const cl_event *wait_list,
                               cl_event *event)
{
    if (!event) return CLNORM_SUCCESS;
    cl_int err = clEnqueueMarkerWithWaitList(q, num_wait, wait_list, event);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clEnqueueMarkerWithWaitList");
    return CLNORM_SUCCESS;
}

/* Sets the arguments of kernel kid from its list in the kernel table (src/kernels.c),
   which follows the kernel's declaration in cl/. */
static clnorm_status cln_set_args(cl_kernel k, cln_kernel_id kid, const cln_args *a,
                                  const cln_plan *pl, cl_mem part, cl_mem sync,
                                  cl_uint sync_base)
{
    const cln_kernel_info *info = &cln_kernel_table[kid];
    for (cl_uint i = 0; i < CLN_KERNEL_ARGS_MAX && info->args[i] != CLN_A_END; i++) {
        const cln_arg kind = info->args[i];
        cl_mem mem = NULL;
        cl_ulong ul = 0;
        cl_uint ui = 0;
        float f = 0.0f;
        switch (kind) {
        case CLN_A_X: mem = a->x.mem; break;
        case CLN_A_X_OFF: ul = a->x.offset; break;
        case CLN_A_X_LD: ul = a->x.ld; break;
        case CLN_A_Y: mem = a->y.mem; break;
        case CLN_A_Y_OFF: ul = a->y.offset; break;
        case CLN_A_Y_LD: ul = a->y.ld; break;
        case CLN_A_RES: mem = a->res.mem; break;
        case CLN_A_RES_OFF: ul = a->res.offset; break;
        case CLN_A_RES_LD: ul = a->res.ld; break;
        case CLN_A_UPDATE: ui = a->update; break;
        /* Never read when has_gamma is 0, but a buffer must be passed. */
        case CLN_A_GAMMA: mem = a->gamma ? a->gamma : a->x.mem; break;
        case CLN_A_HAS_GAMMA: ui = a->gamma != NULL; break;
        case CLN_A_ROW_MAX: mem = a->row_max; break;
        case CLN_A_ROW_SUM: mem = a->row_sum; break;
        case CLN_A_B_MAX: mem = a->b_max; break;
        case CLN_A_B_SUM: mem = a->b_sum; break;
        case CLN_A_ROWS: ul = a->rows; break;
        case CLN_A_COLS: ul = a->cols; break;
        case CLN_A_EPS: f = a->eps; break;
        case CLN_A_TEAM: ui = (cl_uint)pl->team; break;
        case CLN_A_ONLINE: ui = (cl_uint)pl->online; break;
        case CLN_A_SLICES: ul = pl->slices; break;
        case CLN_A_SLICE_LEN: ul = pl->slice_len; break;
        case CLN_A_PART:
        case CLN_A_MAXIMA: mem = part; break;
        /* The three-pass split's last stage scales weights its second stage stored, in
           the builds whose kernels store them (cl/softmax.cl, CLN_SPLIT_WEIGHTS). */
        case CLN_A_WEIGHTED: ui = pl->op == CLN_OP_SOFTMAX_THREE_PASS; break;
        case CLN_A_SYNC: mem = sync; break;
        case CLN_A_SYNC_BASE: ui = sync_base; break;
        /* The scratch's size is set below; the attention kinds are attention.c's. */
        default: break;
        }
        size_t size = 0;
        const void *value = NULL;
        switch (cln_arg_descs[kind].type) {
        case CLN_T_GLOBAL: size = sizeof mem; value = &mem; break;
        case CLN_T_ULONG: size = sizeof ul; value = &ul; break;
        case CLN_T_UINT: size = sizeof ui; value = &ui; break;
        case CLN_T_FLOAT: size = sizeof f; value = &f; break;
        case CLN_T_LOCAL: size = pl->local_bytes; break;
        }
        cl_int err = clSetKernelArg(k, i, size, value);
        if (err != CL_SUCCESS)
            return cln_cl_fail(err, "clSetKernelArg(%s, %s)", info->name,
                               cln_arg_descs[kind].name);
    }
    return CLNORM_SUCCESS;
}

/* Enqueues a planned call (enqueue.h). */
clnorm_status cln_enqueue_plan(cl_command_queue q, cl_context ctx, const cln_profile *prof,
                               const cln_plan *pl, cln_kernel_lease lease[3], const cln_args *a,
                               cl_uint num_wait, const cl_event *wait_list, cl_event *event)
{
    cln_scratch *scratch = NULL;
    cl_mem part = NULL;
    cl_event prev = NULL, last = NULL, dep = NULL, *waits = NULL;
    cl_int err;
    int serial = 0;
    clnorm_status st = CLNORM_SUCCESS;
    const cln_serial_chain chain = cln_serial_wanted(prof) ? CLN_SERIAL_ALL : CLN_SERIAL_COOP;
    if (chain == CLN_SERIAL_ALL || pl->variant == CLN_VAR_COOP) {
        /* The first kernel also waits for the operation before (serial.c). */
        serial = 1;
        cln_serial_begin(chain, ctx, &dep);
        if (dep) {
            waits = malloc((num_wait + 1) * sizeof *waits);
            if (!waits) {
                st = cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a wait list");
                goto fail;
            }
            if (num_wait) memcpy(waits, wait_list, num_wait * sizeof *waits);
            waits[num_wait++] = dep;
            wait_list = waits;
        }
    }
    cln_kernel_id kids[3] = {pl->k1, pl->k2, pl->k3};
    int n = pl->k2 == CLN_K_COUNT ? 1 : pl->k3 == CLN_K_COUNT ? 2 : 3;
    int in_order = 1;
    cl_mem sync = NULL;
    cl_uint sync_base = 0;
    if (n > 1 || pl->variant == CLN_VAR_COOP) {
        cl_command_queue_properties qp = 0;
        if (clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL) != CL_SUCCESS ||
            (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
            in_order = 0;
        /* Four floats per work-group: (m, l) or RMSNorm's (sum, max, scale), and the
           three-pass maxima in the third (cl/softmax.cl). The coop variant also
           counts in fresh words, one and one per row (cl/coop.cl). */
        if ((st = cln_scratch_acquire(ctx, q, in_order, pl->groups * 4 * sizeof(float),
                                      &scratch)))
            goto fail;
        part = cln_scratch_mem(scratch);
        if (pl->variant == CLN_VAR_COOP &&
            (st = cln_scratch_sync(scratch, q, 1 + a->rows, &sync, &sync_base)))
            goto fail;
    }
    /* The last stage's event is the caller's, unless a pooled scratch buffer returns on
       it or the serial mode chains on it. */
    const int keep_last = cln_scratch_needs_event(scratch) || serial;
    for (int j = 0; j < n; j++)
        if ((st = cln_set_args(lease[j].kernel, kids[j], a, pl, part, sync, sync_base)))
            goto fail;
    for (int j = 0; j < n; j++) {
        size_t local = pl->wg, global = pl->groups * pl->wg;
        /* The statistics' last stage runs one work-group per row. */
        if (cln_kernel_table[kids[j]].group_per_row) global = a->rows * pl->wg;
        cl_event done = NULL;
        /* Stages follow one another by the queue's order where it has one, else by
           events. */
        const int want = j + 1 < n ? !in_order : keep_last;
        cl_event *evp = want ? &done : j + 1 < n ? NULL : event, cap = NULL;
        /* A program waiting to be stored after its first run wants that run's event. */
        if (lease[j].wants_event && !evp) evp = &cap;
        err = clEnqueueNDRangeKernel(q, lease[j].kernel, 1, NULL, &global, &local,
                                     j ? (prev ? 1 : 0) : num_wait, j ? (prev ? &prev : NULL)
                                                                    : wait_list,
                                     evp);
        if (err == CL_SUCCESS && lease[j].wants_event) cln_kernel_ran(&lease[j], *evp);
        if (cap) clReleaseEvent(cap);
        if (err != CL_SUCCESS) {
            /* Earlier stages are enqueued and cannot be withdrawn: let them finish so
               no work of this call is left behind. */
            if (prev) clWaitForEvents(1, &prev);
            else if (j) clFinish(q);
            st = cln_cl_fail(err, "clEnqueueNDRangeKernel(%s)", cln_kernel_name(kids[j]));
            goto fail;
        }
        if (prev) clReleaseEvent(prev);
        prev = done;
    }
    if (keep_last) {
        last = prev;
        prev = NULL;
        if (event) {
            clRetainEvent(last);
            *event = last;
        }
    }
fail:
    if (serial) cln_serial_end(chain, q, last);
    if (dep) clReleaseEvent(dep);
    free(waits);
    if (prev) clReleaseEvent(prev);
    cln_scratch_release(scratch, last);
    if (last) clReleaseEvent(last);
    for (int j = 0; j < 3; j++) cln_kernel_return(&lease[j]);
    return st;
}


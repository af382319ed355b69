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

/* The largest coop call's words (the ticket's two, two a group) fit one scratch buffer. */
_Static_assert(2 + 2 * (long long)CLN_COOP_GROUPS_MAX <= CLN_SYNC_WORDS,
               "CLN_COOP_GROUPS_MAX exceeds the synchronisation words of a scratch buffer");

clnorm_status cln_enqueue_noop(cl_command_queue q, cl_uint num_wait, const cl_event *wait_list,
                               cl_event *event)
{
    if (!event) return CLNORM_SUCCESS;
    cl_int err = clEnqueueMarkerWithWaitList(q, num_wait, wait_list, event);
    if (err != CL_SUCCESS) return cln_cl_fail(err, "clEnqueueMarkerWithWaitList");
    return CLNORM_SUCCESS;
}

/* Sets every argument of kernel kid (its list in the kernel table, src/kernels.c):
   the partials buffer (where part is not NULL), the synchronisation words and their
   first index from the call's scratch, the __local scratch at local_bytes, every other
   kind from fill. */
static clnorm_status cln_set_kernel_args(cl_kernel k, cln_kernel_id kid, cln_arg_fill fill,
                                         const void *call, size_t local_bytes, cl_mem part,
                                         cl_mem sync, cl_uint sync_base)
{
    const cln_kernel_info *info = &cln_kernel_table[kid];
    for (cl_uint i = 0; i < CLN_KERNEL_ARGS_MAX && info->args[i] != CLN_A_END; i++) {
        const cln_arg kind = info->args[i];
        cln_arg_value v = {0};
        fill(call, kind, &v);
        if ((kind == CLN_A_PART || kind == CLN_A_MAXIMA) && part) v.mem = part;
        if (kind == CLN_A_SYNC) v.mem = sync;
        if (kind == CLN_A_SYNC_BASE) v.ui = sync_base;
        size_t size = 0;
        const void *value = NULL;
        switch (cln_arg_descs[kind].type) {
        case CLN_T_GLOBAL: size = sizeof v.mem; value = &v.mem; break;
        case CLN_T_ULONG: size = sizeof v.ul; value = &v.ul; break;
        case CLN_T_UINT: size = sizeof v.ui; value = &v.ui; break;
        case CLN_T_FLOAT: size = sizeof v.f; value = &v.f; break;
        case CLN_T_LOCAL: size = local_bytes; break;
        }
        cl_int err = clSetKernelArg(k, i, size, value);
        if (err != CL_SUCCESS)
            return cln_cl_fail(err, "clSetKernelArg(%s, %s)", info->name,
                               cln_arg_descs[kind].name);
    }
    return CLNORM_SUCCESS;
}

/* Whether q runs its commands in order (0 where the query fails). */
static int cln_queue_in_order(cl_command_queue q)
{
    cl_command_queue_properties qp = 0;
    return clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL) == CL_SUCCESS &&
           !(qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
}

clnorm_status cln_enqueue_stages(cl_command_queue q, cl_context ctx, const cln_profile *prof,
                                 const cln_stages *c, cl_uint num_wait,
                                 const cl_event *wait_list, cl_event *event)
{
    cln_scratch *scratch = NULL;
    cl_mem part = NULL, sync = NULL;
    cl_uint sync_base = 0;
    cl_event prev = NULL, last = NULL, dep = NULL, zeroed = NULL, *waits = NULL;
    clnorm_status st = CLNORM_SUCCESS;
    int gated = 0;
    const cln_serial_chain chain = cln_serial_wanted(prof) ? CLN_SERIAL_ALL : CLN_SERIAL_COOP;
    const int serial = chain == CLN_SERIAL_ALL || c->sync_words;
    const int needs_scratch = c->part_bytes || c->sync_words;
    /* The queue's order matters to the scratch pool, to coop calls (which always take
       synchronisation words) and to stages that follow one another; a one-stage call
       without scratch does not ask. */
    const int in_order = needs_scratch || c->n > 1 ? cln_queue_in_order(q) : 1;
    /* The first kernel also waits for the operation before (serial.c). Coop calls on
       an in-order queue are chained by the queue where they follow one another there. */
    const int by_queue = chain == CLN_SERIAL_COOP && in_order;
    if (serial) cln_serial_begin(chain, q, by_queue, ctx, num_wait, wait_list, &dep, &gated);
    if (needs_scratch) {
        /* The synchronisation words belong to a scratch buffer, which a call that
           needs only them takes at its smallest. */
        if ((st = cln_scratch_acquire(ctx, q, in_order, c->part_bytes ? c->part_bytes : 1,
                                      &scratch)))
            goto fail;
        part = cln_scratch_mem(scratch);
        /* ... and after the zeroing of the words, where they had run out. */
        if (c->sync_words &&
            (st = cln_scratch_sync(scratch, q, c->sync_words, &sync, &sync_base, &zeroed)))
            goto fail;
    }
    if (dep || zeroed) {
        waits = malloc((num_wait + 2) * sizeof *waits);
        if (!waits) {
            st = cln_fail(CLNORM_OUT_OF_RESOURCES, "out of host memory for a wait list");
            goto fail;
        }
        if (num_wait) memcpy(waits, wait_list, num_wait * sizeof *waits);
        if (dep) waits[num_wait++] = dep;
        if (zeroed) waits[num_wait++] = zeroed;
        wait_list = waits;
    }
    /* The last stage's event is the caller's, unless a pooled scratch buffer returns on
       it or the serial chain records it. */
    const int keep_last = cln_scratch_needs_event(scratch) || (serial && !by_queue);
    for (int j = 0; j < c->n; j++)
        if ((st = cln_set_kernel_args(c->lease[j].kernel, c->s[j].kid, c->fill, c->call,
                                      c->s[j].local_bytes, part, sync, sync_base)))
            goto fail;
    for (int j = 0; j < c->n; j++) {
        cln_kernel_lease *ls = &c->lease[j];
        size_t local = c->s[j].local, global = c->s[j].global;
        cl_event done = NULL;
        /* Stages follow one another by the queue's order where it has one, else by
           events. */
        const int more = j + 1 < c->n, want = more ? !in_order : keep_last;
        cl_event *evp = want ? &done : more ? NULL : event, cap = NULL;
        /* A program waiting to be stored after its first run wants that run's event. */
        if (ls->wants_event && !evp) evp = &cap;
        cl_int err = clEnqueueNDRangeKernel(q, ls->kernel, 1, NULL, &global, &local,
                                            j ? (prev ? 1 : 0) : num_wait,
                                            j ? (prev ? &prev : NULL) : wait_list, evp);
        if (err == CL_SUCCESS && ls->wants_event) cln_kernel_ran(ls, *evp);
        if (cap) clReleaseEvent(cap);
        if (err != CL_SUCCESS) {
            /* Earlier stages are enqueued and cannot be withdrawn: let them finish so
               no work of this call is left behind. */
            if (prev) clWaitForEvents(1, &prev);
            else if (j) clFinish(q);
            st = cln_cl_fail(err, "clEnqueueNDRangeKernel(%s)", cln_kernel_name(c->s[j].kid));
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
    if (serial) cln_serial_end(chain, q, by_queue, st == CLNORM_SUCCESS, last, gated);
    if (dep) clReleaseEvent(dep);
    if (zeroed) clReleaseEvent(zeroed);
    free(waits);
    if (prev) clReleaseEvent(prev);
    cln_scratch_release(scratch, last);
    if (last) clReleaseEvent(last);
    return st;
}

/* The value of argument kind of a rows call (a cln_rows_call), from the kernel table's
   list, which follows the kernel's declaration in cl/. */
typedef struct cln_rows_call {
    const cln_args *a;
    const cln_plan *pl;
} cln_rows_call;

static void cln_rows_fill(const void *call, cln_arg kind, cln_arg_value *v)
{
    const cln_args *a = ((const cln_rows_call *)call)->a;
    const cln_plan *pl = ((const cln_rows_call *)call)->pl;
    switch (kind) {
    case CLN_A_X: v->mem = a->x.mem; break;
    case CLN_A_X_OFF: v->ul = a->x.offset; break;
    case CLN_A_X_LD: v->ul = a->x.ld; break;
    case CLN_A_Y: v->mem = a->y.mem; break;
    case CLN_A_Y_OFF: v->ul = a->y.offset; break;
    case CLN_A_Y_LD: v->ul = a->y.ld; break;
    case CLN_A_RES: v->mem = a->res.mem; break;
    case CLN_A_RES_OFF: v->ul = a->res.offset; break;
    case CLN_A_RES_LD: v->ul = a->res.ld; break;
    case CLN_A_UPDATE: v->ui = a->update; break;
    /* Never read when has_gamma is 0, but a buffer must be passed. */
    case CLN_A_GAMMA: v->mem = a->gamma ? a->gamma : a->x.mem; break;
    case CLN_A_HAS_GAMMA: v->ui = a->gamma != NULL; break;
    case CLN_A_ROW_MAX: v->mem = a->row_max; break;
    case CLN_A_ROW_SUM: v->mem = a->row_sum; break;
    case CLN_A_B_MAX: v->mem = a->b_max; break;
    case CLN_A_B_SUM: v->mem = a->b_sum; break;
    case CLN_A_ROWS: v->ul = a->rows; break;
    case CLN_A_COLS: v->ul = a->cols; break;
    case CLN_A_EPS: v->f = a->eps; break;
    case CLN_A_TEAM: v->ui = (cl_uint)pl->team; break;
    case CLN_A_ONLINE: v->ui = (cl_uint)pl->online; break;
    case CLN_A_SLICES: v->ul = pl->slices; break;
    case CLN_A_SLICE_LEN: v->ul = pl->slice_len; break;
    /* The three-pass split's last stage scales weights its second stage stored, in
       the builds whose kernels store them (cl/softmax.cl, CLN_SPLIT_WEIGHTS). */
    case CLN_A_WEIGHTED: v->ui = pl->op == CLN_OP_SOFTMAX_THREE_PASS; break;
    /* The partials, the synchronisation words and the scratch's size are the call's
       (cln_set_kernel_args); the attention kinds are attention.c's. */
    default: break;
    }
}

/* Enqueues a planned call (enqueue.h). */
clnorm_status cln_enqueue_plan(cl_command_queue q, cl_context ctx, const cln_profile *prof,
                               const cln_plan *pl, cln_kernel_lease lease[3], const cln_args *a,
                               cl_uint num_wait, const cl_event *wait_list, cl_event *event)
{
    const cln_rows_call call = {a, pl};
    const int coop = pl->variant == CLN_VAR_COOP;
    cln_stages c = {.n = pl->k2 == CLN_K_COUNT ? 1 : pl->k3 == CLN_K_COUNT ? 2 : 3,
                    .lease = lease, .fill = cln_rows_fill, .call = &call,
                    /* The coop variant exchanges its pairs in fresh words: the
                       ticket's two, then two a group (cl/coop.cl). */
                    .sync_words = coop ? 2 + 2 * pl->groups : 0};
    /* Four floats per work-group: (m, l) or RMSNorm's (sum, max, scale), and the
       three-pass maxima in the third (cl/softmax.cl). */
    if (c.n > 1) c.part_bytes = pl->groups * 4 * sizeof(float);
    const cln_kernel_id kids[3] = {pl->k1, pl->k2, pl->k3};
    for (int j = 0; j < c.n; j++) {
        /* The statistics' last stage runs one work-group per row. */
        const size_t units = cln_kernel_table[kids[j]].group_per_row ? a->rows : pl->groups;
        c.s[j] = (cln_stage){kids[j], units * pl->wg, pl->wg, pl->local_bytes};
    }
    clnorm_status st = cln_enqueue_stages(q, ctx, prof, &c, num_wait, wait_list, event);
    for (int j = 0; j < 3; j++) cln_kernel_return(&lease[j]);
    return st;
}

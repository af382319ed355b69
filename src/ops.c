/* The device-buffer operations: validate, plan, fetch the kernels, enqueue. */
#include "api.h"
#include "build_options.h"
#include "config.h"
#include "kernels.h"
#include "plan.h"
#include "profile.h"
#include "program_cache.h"
#include "scratch.h"
#include "serial.h"
#include "status.h"
#include "types.h"
#include "validate.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Everything any kernel takes; each operation fills what it uses. */
typedef struct cln_args {
    size_t rows, cols;
    clnorm_matrix x, y, res;
    cl_mem gamma, row_max, row_sum;
    float eps;
    cl_uint update;
} cln_args;

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

/* Sets the arguments of kernel kid from its list in the kernel table (src/kernels.c),
   which follows the kernel's declaration in cl/. */
static clnorm_status cln_set_args(cl_kernel k, cln_kernel_id kid, const cln_args *a,
                                  const cln_plan *pl, cl_mem part)
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
        case CLN_A_SCRATCH:
        case CLN_A_END:
        case CLN_A_COUNT: break;
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

/* 1 when some view's rows do not all start at a multiple of word elements, which the
   words kernels need (they move words of that many elements). Views a
   kernel does not use are zero. */
static int cln_rows_misaligned(const cln_args *a, size_t word)
{
    size_t bits = a->x.offset | a->y.offset | a->res.offset;
    if (a->rows > 1) bits |= a->x.ld | a->y.ld | a->res.ld;
    return (bits & (word - 1)) != 0;
}

/* What a call ran, for clnorm_last_plan and CLNORM_TRACE: after the tuning table,
   the views' alignment and the compiled kernels' limits had their say. */
typedef struct cln_call_info {
    size_t word;         /* the word its programs were built with */
    int tuned;           /* the tuning table chose the plan */
    size_t kernel_limit; /* the compiled kernels' work-group limit that made it re-plan,
                            or 0 */
} cln_call_info;

/* One line describing a plan, for CLNORM_TRACE. */
static void cln_plan_describe(const cln_plan *pl, char *buf, size_t len)
{
    if (pl->variant == CLN_VAR_SPLIT)
        snprintf(buf, len, "%s/%s wg %zu, %zu slices of %zu", cln_variant_name(pl->variant),
                 cln_path_name(pl->path), pl->wg, pl->slices, pl->slice_len);
    else
        snprintf(buf, len, "%s%s/%s wg %zu, %zu rows/wg, %zu groups",
                 cln_variant_name(pl->variant), pl->words_half ? "-half" : "",
                 cln_path_name(pl->path), pl->wg, pl->rows_per_wg, pl->groups);
}

/* CLNORM_TRACE=1: one line per operation on stderr, with the plan that ran. */
static void cln_trace(const cln_plan *pl, clnorm_dtype dtype, const cln_args *a,
                      const cln_profile *prof, const cln_call_info *info)
{
    if (!cln_config_now()->pub.trace) return;
    char d[160];
    cln_plan_describe(pl, d, sizeof d);
    char re[96] = "";
    if (info->kernel_limit)
        snprintf(re, sizeof re, " (re-planned: a compiled kernel allows %zu work-items)",
                 info->kernel_limit);
    fprintf(stderr, "clnorm: %s %zux%zu %s on \"%s\": %s%s\n", cln_op_name(pl->op), a->rows,
            a->cols, cln_dtype_name(dtype), prof->device_name, d, re);
}

/* Plans the call under the settings of its thread and queue and leases its kernels,
   re-planning once if a compiled kernel allows fewer work-items than the device
   (registers, local memory). *profp receives the device's profile. */
static clnorm_status cln_prepare(cl_command_queue q, cl_context ctx, cl_device_id dev, cln_op op,
                                 clnorm_dtype dtype, const cln_args *a, cln_plan *pl,
                                 cln_kernel_lease lease[3], const cln_profile **profp,
                                 cln_call_info *info)
{
    const size_t rows = a->rows, cols = a->cols;
    const cln_settings *set;
    const cln_profile *prof;
    cln_limits lim;
    char why[512] = "";
    clnorm_status st = cln_settings_begin(q, &set);
    if (!st) st = cln_profile_get(dev, &prof);
    if (st) return st;
    const cln_op asked = op;
replan:
    *profp = prof;
    op = asked;
    info->word = cln_word_size(prof, set->lim.word);
    info->kernel_limit = 0;
    /* The tuning table may resolve softmax AUTO in op. */
    st = cln_plan_call(set, prof, &op, dtype, rows, cols, cln_rows_misaligned(a, info->word),
                       &lim, pl, &info->tuned);
    if (st == CLNORM_UNSUPPORTED && cln_profile_dropped(prof)) {
        snprintf(why, sizeof why, "%s", clnorm_last_error());
        return cln_fail(st, "%s (its %s path was dropped: that path's program did not "
                        "build; CLNORM_TRACE=1 shows the build log)", why,
                        cln_path_name((cln_path)cln_profile_dropped(prof)));
    }
    if (st) return st;
    const int one_kernel = cln_programs_one(prof);
    for (int attempt = 0; attempt < 3; attempt++) {
        if (attempt && (st = cln_plan_make(prof, &lim, op, dtype, rows, cols, pl, why, sizeof why)))
            return cln_fail(st, "%s %zux%zu %s on \"%s\": %s", cln_op_name(op), rows, cols,
                            cln_dtype_name(dtype), prof->device_name, why);
        size_t kmax = (size_t)-1;
        cln_kernel_id kids[3] = {pl->k1, pl->k2, pl->k3};
        int n = pl->k2 == CLN_K_COUNT ? 1 : pl->k3 == CLN_K_COUNT ? 2 : 3;
        for (int j = 0; j < n; j++) {
            st = cln_kernel_acquire(ctx, dev, prof, dtype, pl->path, kids[j], one_kernel,
                                    &lease[j]);
            if (st) {
                for (int i = 0; i < j; i++) cln_kernel_return(&lease[i]);
                /* A fast path whose program does not build is dropped for the device
                   and the call planned again, on the local path unless forced. */
                const cln_profile *now = st == CLNORM_BUILD_FAILED && pl->path != CLN_PATH_LOCAL
                                             ? cln_profile_drop_path(dev, pl->path) : NULL;
                if (now && now != prof) {
                    prof = now;
                    goto replan;
                }
                return st;
            }
            if (lease[j].max_wg && lease[j].max_wg < kmax) kmax = lease[j].max_wg;
        }
        if (pl->wg <= kmax) return CLNORM_SUCCESS;
        for (int j = 0; j < n; j++) cln_kernel_return(&lease[j]);
        info->kernel_limit = kmax;
        if (lim.force_wg || (lim.max_wg && lim.max_wg <= kmax)) {
            lim.max_wg = kmax;
            break;
        }
        lim.max_wg = kmax;
    }
    return cln_fail(CLNORM_INVALID_ARGUMENT, "%s %zux%zu on \"%s\": work-group size %zu exceeds "
                    "the %zu work-items the compiled kernel allows", cln_op_name(op), rows,
                    cols, prof->device_name, pl->wg, lim.max_wg);
}

/* Plans and enqueues one validated operation. A split plan enqueues two or three
   kernels, which follow one another by the queue's order, or by events on an
   out-of-order queue, and hands out the last one's event. */
static clnorm_status cln_enqueue_op(cl_command_queue q, cl_context ctx, cl_device_id dev,
                                    cln_op op, clnorm_dtype dtype, const cln_args *a,
                                    cl_uint num_wait, const cl_event *wait_list, cl_event *event)
{
    cln_plan pl;
    cln_kernel_lease lease[3] = {{0}, {0}, {0}};
    cln_scratch *scratch = NULL;
    cl_mem part = NULL;
    cl_event prev = NULL, last = NULL, dep = NULL, *waits = NULL;
    const cln_profile *prof;
    cl_int err;
    int serial = 0;
    cln_call_info info;
    clnorm_status st = cln_prepare(q, ctx, dev, op, dtype, a, &pl, lease, &prof, &info);
    if (st) return st;
    cln_last_set(&pl, dtype, info.word, info.tuned);
    cln_trace(&pl, dtype, a, prof, &info);
    if (cln_serial_wanted(prof)) {
        /* The first kernel also waits for the operation before (serial.c). */
        serial = 1;
        cln_serial_begin(ctx, &dep);
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
    cln_kernel_id kids[3] = {pl.k1, pl.k2, pl.k3};
    int n = pl.k2 == CLN_K_COUNT ? 1 : pl.k3 == CLN_K_COUNT ? 2 : 3;
    int in_order = 1;
    if (n > 1) {
        cl_command_queue_properties qp = 0;
        if (clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof qp, &qp, NULL) != CL_SUCCESS ||
            (qp & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
            in_order = 0;
        /* Four floats per work-group: (m, l) or RMSNorm's (sum, max, scale), and the
           three-pass maxima in the third (cl/softmax.cl). */
        if ((st = cln_scratch_acquire(ctx, q, in_order, pl.groups * 4 * sizeof(float),
                                      &scratch)))
            goto fail;
        part = cln_scratch_mem(scratch);
    }
    /* The last stage's event is the caller's, unless a pooled scratch buffer returns on
       it or the serial mode chains on it. */
    const int keep_last = cln_scratch_needs_event(scratch) || serial;
    for (int j = 0; j < n; j++)
        if ((st = cln_set_args(lease[j].kernel, kids[j], a, &pl, part))) goto fail;
    for (int j = 0; j < n; j++) {
        size_t local = pl.wg, global = pl.groups * pl.wg;
        /* The statistics' last stage runs one work-group per row. */
        if (cln_kernel_table[kids[j]].group_per_row) global = a->rows * pl.wg;
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
    if (serial) cln_serial_end(q, last);
    if (dep) clReleaseEvent(dep);
    free(waits);
    if (prev) clReleaseEvent(prev);
    cln_scratch_release(scratch, last);
    if (last) clReleaseEvent(last);
    for (int j = 0; j < 3; j++) cln_kernel_return(&lease[j]);
    return st;
}

/* What RMSNorm and the fused add share: eps, the x and y views (y may be exactly x),
   and gamma (cols elements, not overlapping y). Resolves the views' ld. */
static clnorm_status cln_check_norm(cl_context ctx, clnorm_matrix *x, clnorm_matrix *y,
                                    cl_mem gamma, size_t rows, size_t cols, size_t es,
                                    float eps)
{
    int same;
    clnorm_status st;
    if ((st = cln_check_eps(eps)) || (st = cln_check_view("x", ctx, x, rows, cols, es)) ||
        (st = cln_check_view("y", ctx, y, rows, cols, es)) ||
        (st = cln_check_overlap("x", x, "y", y, rows, cols, es, &same)))
        return st;
    if (gamma && ((st = cln_check_array("gamma", ctx, gamma, cols, es)) ||
                  (st = cln_check_disjoint("gamma", gamma, 0, cols * es, "y", y->mem,
                                           y->offset * es, cln_view_bytes(y, rows, cols, es)))))
        return st;
    return CLNORM_SUCCESS;
}

clnorm_status clnorm_rmsnorm(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                             size_t cols, clnorm_matrix x, cl_mem gamma, clnorm_matrix y,
                             float eps, cl_uint num_wait, const cl_event *wait_list,
                             cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    clnorm_status st = cln_check_common(queue, dtype, cols, num_wait, wait_list, &ctx, &dev);
    if (st) return st;
    size_t es = cln_dtype_size(dtype);
    if ((st = cln_check_norm(ctx, &x, &y, gamma, rows, cols, es, eps))) return st;
    if (rows == 0) return cln_noop(queue, num_wait, wait_list, event);
    cln_args a = {.rows = rows, .cols = cols, .x = x, .y = y, .gamma = gamma, .eps = eps};
    return cln_enqueue_op(queue, ctx, dev, CLN_OP_RMSNORM, dtype, &a, num_wait, wait_list, event);
}

clnorm_status clnorm_add_rmsnorm(cl_command_queue queue, clnorm_dtype dtype, size_t rows,
                                 size_t cols, clnorm_matrix x, clnorm_matrix residual,
                                 int update_residual, cl_mem gamma, clnorm_matrix y, float eps,
                                 cl_uint num_wait, const cl_event *wait_list, cl_event *event)
{
    cl_context ctx;
    cl_device_id dev;
    int same;
    clnorm_status st = cln_check_common(queue, dtype, cols, num_wait, wait_list, &ctx, &dev);
    if (st) return st;
    size_t es = cln_dtype_size(dtype);
    if ((st = cln_check_norm(ctx, &x, &y, gamma, rows, cols, es, eps)) ||
        (st = cln_check_view("residual", ctx, &residual, rows, cols, es)))
        return st;
    /* residual is read (and maybe written) beside x and y: it may share no element
       with either, not even exactly. */
    if ((st = cln_check_overlap("residual", &residual, "x", &x, rows, cols, es, &same)) ||
        (same && (st = cln_fail(CLNORM_INVALID_ARGUMENT, "residual is the same view as x"))) ||
        (st = cln_check_overlap("residual", &residual, "y", &y, rows, cols, es, &same)) ||
        (same && (st = cln_fail(CLNORM_INVALID_ARGUMENT, "residual is the same view as y"))))
        return st;
    if (gamma && update_residual &&
        (st = cln_check_disjoint("gamma", gamma, 0, cols * es, "residual", residual.mem,
                                 residual.offset * es, cln_view_bytes(&residual, rows, cols, es))))
        return st;
    if (rows == 0) return cln_noop(queue, num_wait, wait_list, event);
    cln_args a = {.rows = rows, .cols = cols, .x = x, .y = y, .res = residual, .gamma = gamma,
                  .eps = eps, .update = update_residual != 0};
    return cln_enqueue_op(queue, ctx, dev, CLN_OP_ADD_RMSNORM, dtype, &a, num_wait, wait_list,
                          event);
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
    cln_op op = algo == CLNORM_SOFTMAX_THREE_PASS ? CLN_OP_SOFTMAX_THREE_PASS
                : algo == CLNORM_SOFTMAX_ONLINE ? CLN_OP_SOFTMAX_ONLINE : CLN_OP_SOFTMAX_AUTO;
    cln_args a = {.rows = rows, .cols = cols, .x = x, .y = y};
    return cln_enqueue_op(queue, ctx, dev, op, dtype, &a, num_wait, wait_list, event);
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
        (st = cln_check_disjoint("row_max", row_max, 0, n4, "x", x.mem, xo, xn)) ||
        (st = cln_check_disjoint("row_sum", row_sum, 0, n4, "x", x.mem, xo, xn)))
        return st;
    if (rows == 0) return cln_noop(queue, num_wait, wait_list, event);
    cln_args a = {.rows = rows, .cols = cols, .x = x, .row_max = row_max, .row_sum = row_sum};
    return cln_enqueue_op(queue, ctx, dev, CLN_OP_STATS, dtype, &a, num_wait, wait_list, event);
}

clnorm_status clnorm_warmup(cl_command_queue queue)
{
    cl_context ctx;
    cl_device_id dev;
    const cln_profile *prof;
    const cln_settings *set;
    clnorm_status st = cln_check_queue(queue, &ctx, &dev);
    if (!st) st = cln_settings_begin(queue, &set);
    if (!st) st = cln_profile_get(dev, &prof);
    if (st) return st;
    cln_path paths[2];
    const size_t npaths = cln_plan_paths(prof, &set->lim, paths);
    /* Every kernel is leased once through the calls' own function, so that each
       program is built with the key a call would look it up by, whichever grouping
       is in force. */
    const int one_kernel = cln_programs_one(prof);
    for (int d = CLNORM_F32; d <= CLNORM_BF16; d++)
        for (size_t i = 0; i < npaths; i++)
            for (int k = 0; k < CLN_K_COUNT; k++) {
                cln_kernel_lease lease;
                st = cln_kernel_acquire(ctx, dev, prof, (clnorm_dtype)d, paths[i],
                                        (cln_kernel_id)k, one_kernel, &lease);
                /* A fast path that does not build is dropped, as calls drop it. */
                if (st == CLNORM_BUILD_FAILED && paths[i] != CLN_PATH_LOCAL &&
                    cln_profile_drop_path(dev, paths[i]) != prof)
                    return clnorm_warmup(queue);
                if (st) return st;
                cln_kernel_return(&lease);
            }
    return CLNORM_SUCCESS;
}

/* The device-buffer operations: validate, plan, fetch the kernels, enqueue. */
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

/* 1 when some view's rows do not all start at a multiple of word elements, which the
   words kernels need (they move words of that many elements). Views a
   kernel does not use are zero. */
static int cln_rows_misaligned(const cln_args *a, size_t word)
{
    size_t bits = a->x.offset | a->y.offset | a->res.offset;
    if (a->rows > 1) bits |= a->x.ld | a->y.ld | a->res.ld;
    return (bits & (word - 1)) != 0;
}

/* 1 when x's and y's rows sit at different places in a vector of vec elements (a
   power of two), where the one-launch kernel loads element by element; rows that
   start inside a vector at the same place in both load in vectors past their first
   elements (cl/coop.cl). */
static int cln_rows_out_of_step(const cln_args *a, size_t vec)
{
    size_t bits = a->x.offset - a->y.offset;
    if (a->rows > 1) bits |= a->x.ld - a->y.ld;
    return (bits & (vec - 1)) != 0;
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
    if (pl->variant == CLN_VAR_SPLIT || pl->variant == CLN_VAR_COOP)
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
                       cln_rows_out_of_step(a, cln_build_vec(prof, dtype)), &lim, pl,
                       &info->tuned);
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

/* Plans and enqueues one validated operation (the stages: enqueue.c). */
static clnorm_status cln_enqueue_op(cl_command_queue q, cl_context ctx, cl_device_id dev,
                                    cln_op op, clnorm_dtype dtype, const cln_args *a,
                                    cl_uint num_wait, const cl_event *wait_list, cl_event *event)
{
    cln_plan pl;
    cln_kernel_lease lease[3] = {{0}, {0}, {0}};
    const cln_profile *prof;
    cln_call_info info;
    clnorm_status st = cln_prepare(q, ctx, dev, op, dtype, a, &pl, lease, &prof, &info);
    if (st) return st;
    cln_last_set(&pl, dtype, info.word, info.tuned);
    cln_trace(&pl, dtype, a, prof, &info);
    return cln_enqueue_plan(q, ctx, prof, &pl, lease, a, num_wait, wait_list, event);
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
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);
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
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);
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
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);
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
    if (rows == 0) return cln_enqueue_noop(queue, num_wait, wait_list, event);
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
    /* A forced path the device lacks refuses every call: the warm-up too. */
    char why[256];
    if ((st = cln_plan_forced_path(prof, &set->lim, why, sizeof why)))
        return cln_fail(st, "%s", why);
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

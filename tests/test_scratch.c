/* split_scratch: split plans back to back, where the partials buffer passes from call
   to call. On an in-order queue a call takes the buffer the call before it used while
   that call may still be running (src/scratch.c); these calls are enqueued without
   waits, alternating two in-order queues (and an out-of-order one where the device
   has it), growing the rows so that the buffer is replaced while queued kernels still
   use the old one; then more queues than the scratch binds, each released after one
   call; then clnorm_release_cache. Every output is checked against float64 afterwards,
   with canaries after each view. */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CALLS = 12, CANARY = 8 };

typedef struct job {
    top op;
    size_t rows, cols;
    float *x, *g;
    cl_mem bx, bg, by, bm, bl; /* by: rows x cols + CANARY; bm, bl: rows + CANARY */
} job;

static const top ops[] = {OP_SOFTMAX_ONLINE, OP_SOFTMAX_3PASS, OP_RMSNORM, OP_STATS};

static int job_make(job *j, top op, size_t rows, size_t cols)
{
    memset(j, 0, sizeof *j);
    j->op = op;
    j->rows = rows;
    j->cols = cols;
    j->x = malloc(rows * cols * sizeof(float));
    j->g = malloc(cols * sizeof(float));
    if (!j->x || !j->g) return 0;
    gen_rows(&R, j->x, rows, cols);
    gen_gamma(&R, j->g, cols);
    /* NaN poison everywhere: the view must be overwritten, the canaries must stay. */
    size_t ny = rows * cols + CANARY, ns = rows + CANARY;
    float *nan = malloc((ny > ns ? ny : ns) * sizeof(float));
    if (!nan) return 0;
    for (size_t i = 0; i < (ny > ns ? ny : ns); i++) nan[i] = NAN;
    j->bx = t_buffer(T.ctx, rows * cols * 4, j->x);
    j->bg = t_buffer(T.ctx, cols * 4, j->g);
    j->by = t_buffer(T.ctx, ny * 4, nan);
    j->bm = t_buffer(T.ctx, ns * 4, nan);
    j->bl = t_buffer(T.ctx, ns * 4, nan);
    free(nan);
    return j->bx && j->bg && j->by && j->bm && j->bl;
}

static clnorm_status job_enqueue(const job *j, cl_command_queue q)
{
    clnorm_matrix x = {j->bx, 0, 0}, y = {j->by, 0, 0};
    switch (j->op) {
    case OP_RMSNORM:
        return clnorm_rmsnorm(q, CLNORM_F32, j->rows, j->cols, x, j->bg, y, 1e-6f, 0, NULL, NULL);
    case OP_STATS:
        return clnorm_softmax_stats(q, CLNORM_F32, j->rows, j->cols, x, j->bm, j->bl, 0, NULL,
                                    NULL);
    default:
        return clnorm_softmax(q, CLNORM_F32, j->rows, j->cols, x, y, op_algo(j->op), 0, NULL,
                              NULL);
    }
}

static void job_check(const job *j, const char *label)
{
    size_t n = j->rows * j->cols;
    double rel = tol_rel(CLNORM_F32, j->cols), abs_tol = tol_abs(CLNORM_F32);
    char what[160];
    snprintf(what, sizeof what, "%s: %s %zux%zu", label, op_name(j->op), j->rows, j->cols);
    if (j->op == OP_STATS) {
        size_t ns = j->rows + CANARY;
        float *m = malloc(ns * sizeof(float)), *l = malloc(ns * sizeof(float));
        double *rm = malloc(j->rows * sizeof(double)), *rl = malloc(j->rows * sizeof(double));
        if (m && l && rm && rl &&
            t_read(T.q, j->bm, ns * 4, m) && t_read(T.q, j->bl, ns * 4, l)) {
            ref_stats(j->x, j->rows, j->cols, rm, rl);
            COMPARE(what, m, rm, j->rows, 1, 1e-6, 0);
            COMPARE(what, l, rl, j->rows, 1, rel, abs_tol);
            for (size_t i = j->rows; i < ns; i++)
                CHECK(isnan(m[i]) && isnan(l[i]), "%s: statistics canary %zu written", what, i);
        }
        free(m), free(l), free(rm), free(rl);
        return;
    }
    float *y = malloc((n + CANARY) * sizeof(float));
    double *ref = malloc(n * sizeof(double));
    if (y && ref && t_read(T.q, j->by, (n + CANARY) * 4, y)) {
        if (j->op == OP_RMSNORM) ref_rmsnorm(j->x, j->rows, j->cols, j->g, 1e-6f, ref);
        else ref_softmax(j->x, j->rows, j->cols, ref);
        COMPARE(what, y, ref, j->rows, j->cols, rel, abs_tol);
        for (size_t i = n; i < n + CANARY; i++)
            CHECK(isnan(y[i]), "%s: canary %zu after the view written", what, i - n);
    }
    free(y);
    free(ref);
}

/* NaN again over every output, so that a rerun must write its view anew. */
static void job_poison(const job *j, cl_command_queue q)
{
    const float nan = NAN;
    size_t ny = j->rows * j->cols + CANARY, ns = j->rows + CANARY;
    CHECK_CL(clEnqueueFillBuffer(q, j->by, &nan, sizeof nan, 0, ny * 4, 0, NULL, NULL));
    CHECK_CL(clEnqueueFillBuffer(q, j->bm, &nan, sizeof nan, 0, ns * 4, 0, NULL, NULL));
    CHECK_CL(clEnqueueFillBuffer(q, j->bl, &nan, sizeof nan, 0, ns * 4, 0, NULL, NULL));
}

static void job_free(job *j)
{
    cl_mem *ms[] = {&j->bx, &j->bg, &j->by, &j->bm, &j->bl};
    for (size_t i = 0; i < COUNT_OF(ms); i++)
        if (*ms[i]) clReleaseMemObject(*ms[i]);
    free(j->x);
    free(j->g);
}

void test_split_scratch(void)
{
    t_config("CLNORM_VARIANT", "split");
    t_config("CLNORM_SPLIT", "3");
    cl_command_queue_properties dprops = 0;
    clGetDeviceInfo(T.dev, CL_DEVICE_QUEUE_PROPERTIES, sizeof dprops, &dprops, NULL);
    cl_command_queue qb = t_new_queue(T.ctx, T.dev, 0), qo = NULL;
    if (dprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) qo = t_new_queue(T.ctx, T.dev, 1);
    if (!CHECK(qb != NULL, "a second in-order queue")) return;
    cl_command_queue qs[3] = {T.q, qb, qo ? qo : T.q};

    /* Back to back on two or three queues; rows grow, so the partials buffer does. */
    job jobs[CALLS];
    size_t made = 0;
    for (size_t i = 0; i < CALLS; i++) {
        size_t rows = 1 + i * 5, cols = 1000 + 97 * i + rng_below(&R, 50);
        if (!CHECK(job_make(&jobs[i], ops[i % COUNT_OF(ops)], rows, cols), "buffers of call %zu", i))
            break;
        made++;
    }
    for (size_t i = 0; i < made; i++)
        CHECK_ST(job_enqueue(&jobs[i], qs[i % 3]), CLNORM_SUCCESS);
    for (size_t k = 0; k < 3; k++) CHECK_CL(clFinish(qs[k]));
    for (size_t i = 0; i < made; i++) job_check(&jobs[i], "back to back");

    /* More queues than the scratch binds, each released after its call. */
    for (size_t i = 0; i < 20 && made; i++) {
        cl_command_queue q = t_new_queue(T.ctx, T.dev, 0);
        if (!CHECK(q != NULL, "queue %zu", i)) break;
        job *j = &jobs[i % made];
        job_poison(j, q);
        CHECK_ST(job_enqueue(j, q), CLNORM_SUCCESS);
        CHECK_CL(clFinish(q));
        CHECK_CL(clReleaseCommandQueue(q));
        job_check(j, "one queue per call");
    }

    /* After the cache lets go, the same calls still work. */
    clnorm_release_cache(T.ctx);
    for (size_t i = 0; i < made; i += 3) {
        job_poison(&jobs[i], T.q);
        CHECK_ST(job_enqueue(&jobs[i], T.q), CLNORM_SUCCESS);
        CHECK_CL(clFinish(T.q));
        job_check(&jobs[i], "after clnorm_release_cache");
    }
    NOTE("%zu split calls on %s queues", made, qo ? "two in-order and one out-of-order" : "two in-order");
    for (size_t i = 0; i < made; i++) job_free(&jobs[i]);
    clReleaseCommandQueue(qb);
    if (qo) clReleaseCommandQueue(qo);
    t_env_restore();
}

/* host_api: the session accessors and the host-array functions, in place too (the
   apply form is checked with the device form, in softmax_apply).
   warmup_release: warm-up, then dropping the kernel cache and working again. */
#include "test.h"
#include "clnorm_advanced.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One host call of op on a random problem, checked against the reference. */
void check_host_op(top op, clnorm_dtype dt, size_t rows, size_t cols, int inplace)
{
    op_args a;
    float *x, *g;
    make_problem(&R, &a, op, rows, cols, &x, &g);
    a.dt = dt;
    size_t n = rows * cols, es = dt_size(dt);
    void *xs = malloc(n * es + 4), *ys = malloc(n * es + 4), *gs = NULL;
    dt_pack(dt, x, xs, n);
    memset(ys, 0xCD, n * es);
    if (g) {
        gs = malloc(cols * es);
        dt_pack(dt, g, gs, cols);
    }
    void *out = inplace ? xs : ys;
    op_out o = {0};
    clnorm_status st;
    if (op == OP_RMSNORM)
        st = clnorm_rmsnorm_host(T.s, dt, rows, cols, xs, gs, out, a.eps);
    else if (op == OP_STATS) {
        o.m = malloc(rows * sizeof(float)), o.l = malloc(rows * sizeof(float));
        st = clnorm_softmax_stats_host(T.s, dt, rows, cols, xs, o.m, o.l);
    } else
        st = clnorm_softmax_host(T.s, dt, rows, cols, xs, out, op_algo(op));
    char label[400], err[1024];
    snprintf(err, sizeof err, "%s", clnorm_last_error());
    op_label(&a, label, sizeof label);
    if (CHECK(st == CLNORM_SUCCESS, "host %s%s: %s (%s)", label, inplace ? " in place" : "",
              clnorm_status_string(st), err)) {
        if (op != OP_STATS) {
            o.y = malloc(n * sizeof(float) + 4);
            dt_unpack(dt, out, o.y, n);
        }
        verify_op(&a, &o);
    }
    op_out_free(&o);
    free(xs), free(ys), free(gs), free(x), free(g);
}

void test_host_api(void)
{
    /* Accessors: the queue belongs to the context and the named device, in order. */
    cl_context c = t_queue_context(T.q);
    CHECK(c == T.ctx, "session queue's context %p != session context %p", (void *)c, (void *)T.ctx);
    char name[256] = "";
    CHECK_CL(clGetDeviceInfo(T.dev, CL_DEVICE_NAME, sizeof name, name, NULL));
    CHECK(strstr(T.dev_name, name) != NULL || strstr(name, T.dev_name) != NULL,
          "clnorm_session_device_name \"%s\" vs CL_DEVICE_NAME \"%s\"", T.dev_name, name);
    CHECK(T.dev_name[0] != '\0', "empty device name");
    cl_command_queue_properties props = 0;
    CHECK_CL(clGetCommandQueueInfo(T.q, CL_QUEUE_PROPERTIES, sizeof props, &props, NULL));
    CHECK(!(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE), "session queue is out of order");

    const size_t shapes[][2] = {{1, 1}, {3, 33}, {17, 1000}, {129, 128}, {2, 65537}};
    for (int op = 0; op < OP_COUNT; op++)
        for (size_t s = 0; s < COUNT_OF(shapes); s++) {
            check_host_op((top)op, CLNORM_F32, shapes[s][0], shapes[s][1], 0);
            if (op != OP_STATS) check_host_op((top)op, CLNORM_F32, shapes[s][0], shapes[s][1], 1);
        }
    /* rows == 0 is a no-op that touches nothing. */
    float x[4] = {1, 2, 3, 4}, y[4], m[1], l[1];
    memset(y, 0xCD, sizeof y), memset(m, 0xCD, sizeof m), memset(l, 0xCD, sizeof l);
    CHECK_ST(clnorm_rmsnorm_host(T.s, CLNORM_F32, 0, 4, x, NULL, y, 1e-5f), CLNORM_SUCCESS);
    CHECK_ST(clnorm_softmax_host(T.s, CLNORM_F32, 0, 4, x, y, CLNORM_SOFTMAX_AUTO), CLNORM_SUCCESS);
    CHECK_ST(clnorm_softmax_stats_host(T.s, CLNORM_F32, 0, 4, x, m, l), CLNORM_SUCCESS);
    CHECK_ST(clnorm_softmax_apply_host(T.s, CLNORM_F32, 0, 4, x, m, l, y), CLNORM_SUCCESS);
    unsigned char cd[sizeof y];
    memset(cd, 0xCD, sizeof cd);
    CHECK(!memcmp(y, cd, sizeof y) && !memcmp(m, cd, 4) && !memcmp(l, cd, 4),
          "rows == 0 host call wrote its outputs");
    /* ... but its arguments are still checked, as in the device calls. */
    const float bad_eps[] = {-1.0f, INFINITY, NAN};
    for (size_t i = 0; i < COUNT_OF(bad_eps); i++) {
        CHECK_ST(clnorm_rmsnorm_host(T.s, CLNORM_F32, 0, 4, x, NULL, y, bad_eps[i]),
                 CLNORM_INVALID_ARGUMENT);
        CHECK(t_mentions(clnorm_last_error(), "eps"), "rmsnorm_host eps %g at rows 0: \"%s\"",
              (double)bad_eps[i], clnorm_last_error());
        CHECK_ST(clnorm_add_rmsnorm_host(T.s, CLNORM_F32, 0, 4, x, y, 1, NULL, y, bad_eps[i]),
                 CLNORM_INVALID_ARGUMENT);
    }
    /* Two arrays that both receive results may not share memory: the later read back
       would overwrite the other's result. Nothing is written. */
    float res[8], out[8], st2[3];
    for (int i = 0; i < 8; i++) res[i] = (float)i;
    const void *const ys[] = {res, res + 1};
    for (size_t i = 0; i < COUNT_OF(ys); i++) {
        memcpy(out, res, sizeof out);
        CHECK_ST(clnorm_add_rmsnorm_host(T.s, CLNORM_F32, 2, 3, x, res, 1, NULL, (void *)ys[i],
                                         1e-5f),
                 CLNORM_INVALID_ARGUMENT);
        CHECK(t_mentions(clnorm_last_error(), "residual") && t_mentions(clnorm_last_error(), "y"),
              "add_rmsnorm_host, y at residual + %zu: \"%s\"", i, clnorm_last_error());
        CHECK(!memcmp(out, res, sizeof out), "add_rmsnorm_host refused, yet residual changed");
    }
    CHECK_ST(clnorm_softmax_stats_host(T.s, CLNORM_F32, 2, 4, x, st2, st2 + 1),
             CLNORM_INVALID_ARGUMENT);
    CHECK(t_mentions(clnorm_last_error(), "row_max") && t_mentions(clnorm_last_error(), "row_sum"),
          "softmax_stats_host, overlapping statistics: \"%s\"", clnorm_last_error());
    /* An array larger than any device allocates at once (4 TiB): a buffer that cannot
       be made. */
    CHECK_ST(clnorm_softmax_host(T.s, CLNORM_F32, (size_t)1 << 20, (size_t)1 << 20, x, y,
                                 CLNORM_SOFTMAX_AUTO),
             CLNORM_OUT_OF_RESOURCES);
    CHECK(t_mentions(clnorm_last_error(), "x"), "a 4 TiB host array: \"%s\"",
          clnorm_last_error());
}

/* All ops on a few shapes, timing the first call (where kernels may be built). */
static double all_ops(void)
{
    const size_t shapes[][2] = {{7, 33}, {3, 4097}};
    double t0 = t_now(), first = 0;
    for (int op = 0; op < OP_COUNT; op++)
        for (size_t s = 0; s < COUNT_OF(shapes); s++) {
            op_args a;
            float *x, *g;
            make_problem(&R, &a, (top)op, shapes[s][0], shapes[s][1], &x, &g);
            check_op(&a, CLNORM_SUCCESS);
            if (op == 0 && s == 0) first = t_now() - t0;
            free(x);
            free(g);
        }
    return first;
}

void test_warmup_release(void)
{
    double t0 = t_now();
    CHECK_ST(clnorm_warmup(T.q), CLNORM_SUCCESS);
    double tw = t_now() - t0;
    double f1 = all_ops();
    clnorm_release_cache(T.ctx);          /* must rebuild on next use */
    double f2 = all_ops();
    clnorm_release_cache(NULL);           /* all contexts */
    double f3 = all_ops();
    clnorm_release_cache(NULL);
    CHECK_ST(clnorm_warmup(T.q), CLNORM_SUCCESS);
    all_ops();
    /* Warm-up through another queue of the same context, then use it. */
    cl_command_queue q2 = t_new_queue(T.ctx, T.dev, 0);
    if (CHECK(q2 != NULL, "second queue")) {
        CHECK_ST(clnorm_warmup(q2), CLNORM_SUCCESS);
        op_args a;
        float *x, *g;
        make_problem(&R, &a, OP_SOFTMAX_AUTO, 5, 1000, &x, &g);
        a.q = q2;
        check_op(&a, CLNORM_SUCCESS);
        free(x), free(g);
        clReleaseCommandQueue(q2);
    }
    /* Releasing twice, then working again. */
    clnorm_release_cache(T.ctx);
    clnorm_release_cache(T.ctx);
    all_ops();
    /* The device's fast path forced: the warm-up refuses where every call would (a
       device without one) and builds it where calls run. */
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.reduction = CLNORM_REDUCTION_SUBGROUP;
    if (CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_SUCCESS)) {
        const clnorm_status sw = clnorm_warmup(T.q);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", clnorm_last_error());
        op_args a;
        float *x, *g;
        make_problem(&R, &a, OP_SOFTMAX_AUTO, 5, 1000, &x, &g);
        const clnorm_status sc = check_op(&a, sw);
        CHECK(sw == sc, "forced fast path: clnorm_warmup %s (\"%s\"), a softmax call %s",
              clnorm_status_string(sw), msg, clnorm_status_string(sc));
        if (sw == CLNORM_UNSUPPORTED)
            CHECK(t_mentions(msg, "CLNORM_REDUCTION"), "forced fast path: \"%s\"", msg);
        free(x), free(g);
        clnorm_set_thread_hints(NULL);
    }
    NOTE("warm-up %.3f s; first op after warm-up %.3f s, after release_cache(ctx) %.3f s, "
         "after release_cache(NULL) %.3f s", tw, f1, f2, f3);
}

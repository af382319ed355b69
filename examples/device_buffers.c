/* Device buffers, views, events and two queues of one context.

   The input is a view with a leading offset and padded rows (ld > cols). RMSNorm runs
   on queue A and writes into one view of an output buffer; softmax runs on queue B,
   reads that RMSNorm output and writes beside it, into a second view of the same
   buffer with the same ld. The queues are ordered by events alone: A's RMSNorm waits
   on the upload enqueued on B, and B's softmax waits on A's RMSNorm. The padding of
   every view must come back untouched.

   Build: cc device_buffers.c -lclnorm -lOpenCL -lm    Run: ./a.out [device spec] */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>

enum {
    ROWS = 5,
    COLS = 37,
    X_OFF = 3, X_LD = COLS + 4,          /* input: 3 elements before it, 4 after each row */
    N_OFF = 1, P_OFF = N_OFF + COLS + 2, /* outputs side by side in each output row     */
    OUT_LD = P_OFF + COLS + 3,
    X_LEN = X_OFF + ROWS * X_LD,
    OUT_LEN = ROWS * OUT_LD
};
#define SENTINEL 4242.0f /* fills the output padding, which must keep it */
#define EPS 1e-6f

static int failed(clnorm_status st, const char *what)
{
    if (st != CLNORM_SUCCESS)
        fprintf(stderr, "%s: %s: %s\n", what, clnorm_status_string(st), clnorm_last_error());
    return st != CLNORM_SUCCESS;
}

static int cl_failed(cl_int err, const char *what)
{
    if (err != CL_SUCCESS) fprintf(stderr, "%s: OpenCL error %d\n", what, (int)err);
    return err != CL_SUCCESS;
}

/* Deterministic values in [-4, 4), never exactly 0. */
static float next_value(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(8.0 * (((*state >> 8) + 0.5) / 16777216.0) - 4.0);
}

/* |got - ref| within 2e-5 relative or 1e-30 absolute; false for a NaN. */
static int close_to(double got, double ref)
{
    return fabs(got - ref) <= fmax(2e-5 * fabs(ref), 1e-30);
}

/* Checks the output buffer against float64 references: N = RMSNorm(x) * gamma, then
   P = softmax(N) of the N the device wrote, and SENTINEL everywhere else. */
static int check(const float *x, const float *gamma, const float *out)
{
    for (int r = 0; r < ROWS; r++) {
        const float *xr = x + X_OFF + r * X_LD, *nr = out + r * OUT_LD + N_OFF;
        const float *pr = out + r * OUT_LD + P_OFF;
        double sq = 0, m = -INFINITY, sum = 0;
        for (int c = 0; c < COLS; c++) sq += (double)xr[c] * xr[c];
        double inv = 1 / sqrt(sq / COLS + EPS);
        for (int c = 0; c < COLS; c++) {
            if (!close_to(nr[c], xr[c] * inv * gamma[c])) {
                fprintf(stderr, "rmsnorm [%d][%d] = %.9g, reference %.9g\n", r, c, nr[c],
                        xr[c] * inv * gamma[c]);
                return 1;
            }
            m = fmax(m, nr[c]);
        }
        for (int c = 0; c < COLS; c++) sum += exp(nr[c] - m);
        for (int c = 0; c < COLS; c++) {
            if (!close_to(pr[c], exp(nr[c] - m) / sum)) {
                fprintf(stderr, "softmax [%d][%d] = %.9g, reference %.9g\n", r, c, pr[c],
                        exp(nr[c] - m) / sum);
                return 1;
            }
        }
        for (int c = 0; c < OUT_LD; c++) {
            int in_view = (c >= N_OFF && c < N_OFF + COLS) || (c >= P_OFF && c < P_OFF + COLS);
            if (!in_view && out[r * OUT_LD + c] != SENTINEL) {
                fprintf(stderr, "padding [%d][%d] was written: %g\n", r, c, out[r * OUT_LD + c]);
                return 1;
            }
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    static float x[X_LEN], gamma[COLS], out[OUT_LEN];
    unsigned state = 7;
    for (int i = 0; i < X_LEN; i++) x[i] = NAN; /* padding the kernels must never read */
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) x[X_OFF + r * X_LD + c] = next_value(&state);
    for (int c = 0; c < COLS; c++) gamma[c] = 1.0f + next_value(&state) / 8;
    for (int i = 0; i < OUT_LEN; i++) out[i] = SENTINEL;

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) {
        printf("skipped: %s\n", clnorm_last_error());
        return 77;
    }
    if (failed(st, "clnorm_session_create")) return 1;
    printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));

    int rc = 1;
    cl_int err;
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue qa = clnorm_session_queue(s), qb = NULL;
    cl_mem bx = NULL, bg = NULL, bout = NULL;
    cl_event uploaded = NULL, normed = NULL;
    cl_device_id dev;

    /* Queue B: a second in-order queue on the session's device and context. */
    if (cl_failed(clGetCommandQueueInfo(qa, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL), "device"))
        goto done;
    qb = clCreateCommandQueue(ctx, dev, 0, &err);
    if (cl_failed(err, "clCreateCommandQueue")) goto done;
    bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY, sizeof x, NULL, &err);
    if (cl_failed(err, "clCreateBuffer x")) goto done;
    bg = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof gamma, gamma, &err);
    if (cl_failed(err, "clCreateBuffer gamma")) goto done;
    bout = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof out, out, &err);
    if (cl_failed(err, "clCreateBuffer out")) goto done;

    clnorm_matrix xv = {bx, X_OFF, X_LD};   /* element (r, c) at X_OFF + r * X_LD + c */
    clnorm_matrix nv = {bout, N_OFF, OUT_LD};
    clnorm_matrix pv = {bout, P_OFF, OUT_LD};

    /* Upload x on B without blocking; A's RMSNorm waits on it. A command that another
       queue waits on must be flushed, or that wait may never end. */
    if (cl_failed(clEnqueueWriteBuffer(qb, bx, CL_FALSE, 0, sizeof x, x, 0, NULL, &uploaded),
                  "upload") || cl_failed(clFlush(qb), "clFlush B"))
        goto done;
    if (failed(clnorm_rmsnorm(qa, CLNORM_F32, ROWS, COLS, xv, bg, nv, EPS, 1, &uploaded, &normed),
               "clnorm_rmsnorm on queue A") || cl_failed(clFlush(qa), "clFlush A"))
        goto done;
    /* Softmax on B reads what RMSNorm wrote on A; B is in order, so the read after it
       needs no event of its own. */
    if (failed(clnorm_softmax(qb, CLNORM_F32, ROWS, COLS, nv, pv, CLNORM_SOFTMAX_AUTO, 1,
                              &normed, NULL), "clnorm_softmax on queue B"))
        goto done;
    if (cl_failed(clEnqueueReadBuffer(qb, bout, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL),
                  "read back"))
        goto done;

    if (check(x, gamma, out)) {
        fprintf(stderr, "FAILED: the results differ from the float64 reference\n");
        goto done;
    }
    printf("rmsnorm on queue A, then softmax on queue B, of %dx%d views (ld %d and %d): "
           "match the reference, padding untouched\n", ROWS, COLS, X_LD, OUT_LD);
    rc = 0;

done:
    /* Wait for everything enqueued before releasing what it uses. */
    if (qb) clFinish(qb);
    clFinish(qa);
    if (uploaded) clReleaseEvent(uploaded);
    if (normed) clReleaseEvent(normed);
    if (bx) clReleaseMemObject(bx);
    if (bg) clReleaseMemObject(bg);
    if (bout) clReleaseMemObject(bout);
    if (qb) clReleaseCommandQueue(qb);
    clnorm_session_destroy(s);
    return rc;
}

/* Softmax and RMSNorm of a small matrix on the default OpenCL device, first with host
   arrays, then on device buffers with an event. Build: cc example.c -lclnorm -lOpenCL */
#include <clnorm.h>
#include <stdio.h>

#define ROWS 2
#define COLS 5

static int check(clnorm_status st, const char *what)
{
    if (st != CLNORM_SUCCESS)
        fprintf(stderr, "%s: %s: %s\n", what, clnorm_status_string(st), clnorm_last_error());
    return st != CLNORM_SUCCESS;
}

int main(void)
{
    float x[ROWS * COLS] = {1, 2, 3, 4, 5, -1000, 0, 1000, 1000, 3};
    float y[ROWS * COLS], gamma[COLS] = {1, 1, 2, 2, 1};
    clnorm_session *s = NULL;
    if (check(clnorm_session_create(NULL, &s), "session")) return 1; /* $CLNORM_DEVICE */
    printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));

    if (check(clnorm_softmax_host(s, CLNORM_F32, ROWS, COLS, x, y, CLNORM_SOFTMAX_AUTO), "softmax"))
        goto fail;
    for (int r = 0; r < ROWS; r++, puts(""))
        for (int c = 0; c < COLS; c++) printf(" %.5f", y[r * COLS + c]);

    /* The same on device buffers: in place, asynchronous, one event to wait on. */
    cl_int err;
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    cl_mem bx = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    cl_mem bg = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof gamma, gamma, &err);
    clnorm_matrix v = {bx, 0, 0}; /* offset 0, packed rows */
    cl_event done;
    if (!check(clnorm_rmsnorm(q, CLNORM_F32, ROWS, COLS, v, bg, v, 1e-6f, 0, NULL, &done), "rmsnorm")) {
        clEnqueueReadBuffer(q, bx, CL_TRUE, 0, sizeof y, y, 1, &done, NULL);
        clReleaseEvent(done);
        for (int r = 0; r < ROWS; r++, puts(""))
            for (int c = 0; c < COLS; c++) printf(" %.5f", y[r * COLS + c]);
    }
    clReleaseMemObject(bx);
    clReleaseMemObject(bg);
    clnorm_session_destroy(s);
    return 0;
fail:
    clnorm_session_destroy(s);
    return 1;
}

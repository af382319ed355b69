/* Where a small call's host time goes: the OpenCL calls clnorm makes per operation,
   each timed alone, against whole clnorm calls, on one device. Each loop enqueues N
   calls and times the host only; the queue is drained between loops. Built with
   -DCLNORM_BUILD_BENCH=ON (bench/README.md); run: hostcost [device spec]. */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define CL_TARGET_OPENCL_VERSION 120
#include "clnorm.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 2000

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *src =
    "__kernel void e0(void) {}\n"
    "__kernel void e13(__global float *a, ulong b, ulong c, __global float *d, ulong e,\n"
    "                  ulong f, ulong g, ulong h, uint i, uint j, __local float *k,\n"
    "                  float l, uint m) { if (m == 12345u) a[0] = 1.0f; }\n";

#define TIME(label, body)                                                              \
    do {                                                                               \
        clFinish(q);                                                                   \
        double t0 = now();                                                             \
        for (int it = 0; it < N; it++) { body; }                                       \
        double t1 = now();                                                             \
        clFinish(q);                                                                   \
        double t2 = now();                                                             \
        printf("%-44s host %7.2f us/call   to finish %7.2f us/call\n", label,          \
               (t1 - t0) / N * 1e6, (t2 - t0) / N * 1e6);                              \
    } while (0)

int main(int argc, char **argv)
{
    clnorm_session *s = NULL;
    if (clnorm_session_create(argc > 1 ? argv[1] : NULL, &s)) {
        fprintf(stderr, "%s\n", clnorm_last_error());
        return 1;
    }
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    printf("device %s\n", clnorm_session_device_name(s));
    cl_device_id dev;
    clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (clBuildProgram(p, 1, &dev, "", NULL, NULL)) return 1;
    cl_kernel k0 = clCreateKernel(p, "e0", &err), k13 = clCreateKernel(p, "e13", &err);
    size_t n = 4096 * 128, one = 1, wg = 32;
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000) * 0.01f - 5.0f;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, h, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
    cl_mem g = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 8192 * 4, h, &err);
    cl_ulong u = 1;
    cl_uint v = 1;
    float f = 1.0f;
    size_t sz;
    cl_context c2;

    TIME("empty kernel, no arguments", clEnqueueNDRangeKernel(q, k0, 1, NULL, &one, &one, 0,
                                                                 NULL, NULL));
    TIME("13 arguments set, then enqueue", {
        clSetKernelArg(k13, 0, sizeof x, &x); clSetKernelArg(k13, 1, 8, &u);
        clSetKernelArg(k13, 2, 8, &u); clSetKernelArg(k13, 3, sizeof y, &y);
        clSetKernelArg(k13, 4, 8, &u); clSetKernelArg(k13, 5, 8, &u);
        clSetKernelArg(k13, 6, 8, &u); clSetKernelArg(k13, 7, 8, &u);
        clSetKernelArg(k13, 8, 4, &v); clSetKernelArg(k13, 9, 4, &v);
        clSetKernelArg(k13, 10, 1024, NULL); clSetKernelArg(k13, 11, 4, &f);
        clSetKernelArg(k13, 12, 4, &v);
        clEnqueueNDRangeKernel(q, k13, 1, NULL, &wg, &wg, 0, NULL, NULL);
    });
    TIME("1 argument set, then enqueue", {
        clSetKernelArg(k13, 0, sizeof x, &x);
        clEnqueueNDRangeKernel(q, k13, 1, NULL, &wg, &wg, 0, NULL, NULL);
    });
    TIME("13 x clSetKernelArg alone", {
        for (cl_uint a = 0; a < 13; a++) {
            if (a == 0 || a == 3) clSetKernelArg(k13, a, sizeof x, &x);
            else if (a == 10) clSetKernelArg(k13, a, 1024, NULL);
            else if (a >= 8) clSetKernelArg(k13, a, 4, &v);
            else clSetKernelArg(k13, a, 8, &u);
        }
    });
    TIME("clGetMemObjectInfo(CL_MEM_SIZE)", clGetMemObjectInfo(x, CL_MEM_SIZE, sizeof sz, &sz,
                                                                NULL));
    TIME("clGetCommandQueueInfo(CL_QUEUE_CONTEXT)",
         clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof c2, &c2, NULL));
    cl_event ev;
    TIME("enqueue with an event, then release", {
        clEnqueueNDRangeKernel(q, k0, 1, NULL, &one, &one, 0, NULL, &ev);
        clReleaseEvent(ev);
    });
    clnorm_matrix mx = {x, 0, 128}, my = {y, 0, 128}, rx = {x, 0, 4096}, ry = {y, 0, 4096};
    clnorm_softmax(q, CLNORM_F32, 4096, 128, mx, my, CLNORM_SOFTMAX_AUTO, 0, NULL, NULL);
    clnorm_rmsnorm(q, CLNORM_F32, 1, 4096, rx, g, ry, 1e-6f, 0, NULL, NULL);
    if (clnorm_rmsnorm(q, CLNORM_F32, 64, 8192, (clnorm_matrix){x, 0, 8192}, g,
                       (clnorm_matrix){y, 0, 8192}, 1e-6f, 0, NULL, NULL)) {
        fprintf(stderr, "%s\n", clnorm_last_error());
        return 1;
    }
    TIME("clnorm_softmax 4096x128 f32",
         clnorm_softmax(q, CLNORM_F32, 4096, 128, mx, my, CLNORM_SOFTMAX_AUTO, 0, NULL, NULL));
    TIME("clnorm_rmsnorm 1x4096 f32",
         clnorm_rmsnorm(q, CLNORM_F32, 1, 4096, rx, g, ry, 1e-6f, 0, NULL, NULL));
    TIME("clnorm_rmsnorm 1x4096 f32, in place",
         clnorm_rmsnorm(q, CLNORM_F32, 1, 4096, rx, g, rx, 1e-6f, 0, NULL, NULL));
    TIME("clnorm_rmsnorm 64x8192 f32",
         clnorm_rmsnorm(q, CLNORM_F32, 64, 8192, ((clnorm_matrix){x, 0, 8192}), g,
                        ((clnorm_matrix){y, 0, 8192}), 1e-6f, 0, NULL, NULL));
    TIME("clnorm_softmax 4096x128 f32, with event", {
        clnorm_softmax(q, CLNORM_F32, 4096, 128, mx, my, CLNORM_SOFTMAX_AUTO, 0, NULL, &ev);
        clReleaseEvent(ev);
    });
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clReleaseMemObject(g);
    clReleaseKernel(k0);
    clReleaseKernel(k13);
    clReleaseProgram(p);
    clnorm_session_destroy(s);
    free(h);
    return 0;
}

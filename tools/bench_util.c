/* Timing helpers shared by `clnorm bench` and `clnorm bench --op attention`. */
#include "tool.h"

double tool_event_seconds(cl_event marker, cl_event done)
{
    cl_ulong m_end = 0, s = 0, e = 0;
    clGetEventProfilingInfo(marker, CL_PROFILING_COMMAND_END, sizeof m_end, &m_end, NULL);
    clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
    clGetEventProfilingInfo(done, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
    cl_ulong start = m_end && m_end <= s ? m_end : s;
    return (double)(e - start) * 1e-9;
}

/* Read-plus-write GB/s of bytes copied from a to b: the median of reps runs after a
   warm-up, by clEnqueueCopyBuffer where k is NULL, else by kernel k(a, b) over
   bytes / 16 work-items; 0 where not one run was timed. */
static double copy_runs(cl_command_queue q, cl_mem a, cl_mem b, cl_kernel k, size_t bytes,
                        int reps)
{
    double t[32];
    if (reps > 31) reps = 31;
    const size_t items = bytes / 16;
    if (k && (clSetKernelArg(k, 0, sizeof a, &a) != CL_SUCCESS ||
              clSetKernelArg(k, 1, sizeof b, &b) != CL_SUCCESS))
        return 0;
    int i;
    for (i = 0; i <= reps; i++) {
        cl_event e;
        double w0 = tool_now();
        if ((k ? clEnqueueNDRangeKernel(q, k, 1, NULL, &items, NULL, 0, NULL, &e)
               : clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &e)) != CL_SUCCESS)
            break;
        clWaitForEvents(1, &e);
        double w = tool_now() - w0;
        cl_ulong s = 0, en = 0;
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof en, &en, NULL);
        clReleaseEvent(e);
        /* Rusticl 22 reports nonsense profiling times (zero or a nanosecond): below a
           twentieth of the wall clock, take the wall clock. */
        double pt = en > s ? (double)(en - s) * 1e-9 : 0;
        if (i) t[i - 1] = pt > 0.05 * w ? pt : w; /* the first is a warm-up */
    }
    return i > 1 ? 2.0 * (double)bytes / tool_median(t, (size_t)(i - 1)) * 1e-9 : 0;
}

/* A one-line kernel that copies a float4 a work-item, the rate a kernel's own loads and
   stores reach where the buffer copy is the driver's memcpy (Mesa llvmpipe). */
static const char *copy_kernel_src =
    "__kernel void clnorm_bench_copy(__global const float4 *a, __global float4 *b)"
    " { b[get_global_id(0)] = a[get_global_id(0)]; }";

double tool_copy_gbps(cl_context ctx, cl_command_queue q, size_t bytes, int reps,
                      double *kernel_gbps)
{
    cl_int err;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    double best = 0;
    if (kernel_gbps) *kernel_gbps = 0;
    if (a && b) {
        unsigned char pat = 0x3c;
        clEnqueueFillBuffer(q, a, &pat, 1, 0, bytes, 0, NULL, NULL);
        best = copy_runs(q, a, b, NULL, bytes, reps);
        cl_device_id dev = NULL;
        clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
        cl_program p = kernel_gbps ? clCreateProgramWithSource(ctx, 1, &copy_kernel_src, NULL, &err)
                                   : NULL;
        cl_kernel k = NULL;
        if (p && clBuildProgram(p, 1, &dev, "", NULL, NULL) == CL_SUCCESS)
            k = clCreateKernel(p, "clnorm_bench_copy", &err);
        if (k) *kernel_gbps = copy_runs(q, a, b, k, bytes & ~(size_t)15, reps);
        if (k) clReleaseKernel(k);
        if (p) clReleaseProgram(p);
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    return best;
}

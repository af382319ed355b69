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

double tool_copy_gbps(cl_context ctx, cl_command_queue q, size_t bytes, int reps)
{
    cl_int err;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    double t[32], best = 0;
    if (reps > 31) reps = 31;
    if (a && b) {
        unsigned char pat = 0x3c;
        clEnqueueFillBuffer(q, a, &pat, 1, 0, bytes, 0, NULL, NULL);
        int i;
        for (i = 0; i <= reps; i++) {
            cl_event e;
            double w0 = tool_now();
            if (clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, &e) != CL_SUCCESS) break;
            clWaitForEvents(1, &e);
            double w = tool_now() - w0;
            cl_ulong s = 0, en = 0;
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof en, &en, NULL);
            clReleaseEvent(e);
            /* Rusticl 22 reports nonsense profiling times (zero or a nanosecond):
               below a twentieth of the wall clock, take the wall clock. */
            double pt = en > s ? (double)(en - s) * 1e-9 : 0;
            if (i) t[i - 1] = pt > 0.05 * w ? pt : w; /* the first is a warm-up */
        }
        if (i > 1) best = 2.0 * (double)bytes / tool_median(t, (size_t)(i - 1)) * 1e-9;
    }
    if (a) clReleaseMemObject(a);
    if (b) clReleaseMemObject(b);
    return best;
}

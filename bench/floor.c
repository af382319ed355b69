/* The floor of a process start on an OpenCL device, without clnorm: platforms listed,
   a context and queue made on the first device whose name contains NAME, one empty
   command finished, and (with "kernel") a one-line kernel built and run. Timed from
   process start by the caller, as clnorm's start-up is (BENCHMARKS.md, "Start-up
   time"). Built with -DCLNORM_BUILD_BENCH=ON (bench/README.md).
   Usage: floor NAME [kernel] */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    cl_platform_id plats[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) return 1;
    for (cl_uint i = 0; i < np; i++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS) continue;
        for (cl_uint j = 0; j < nd; j++) {
            char name[256] = "";
            clGetDeviceInfo(devs[j], CL_DEVICE_NAME, sizeof name, name, NULL);
            if (!strstr(name, argv[1])) continue;
            cl_int err;
            cl_context ctx = clCreateContext(NULL, 1, &devs[j], NULL, NULL, &err);
            if (err != CL_SUCCESS) return 1;
            cl_command_queue q = clCreateCommandQueue(ctx, devs[j], 0, &err);
            if (err != CL_SUCCESS) return 1;
            if (argc > 2 && !strcmp(argv[2], "kernel")) {
                const char *src = "__kernel void k(__global float *x) { x[get_global_id(0)] += 1.0f; }";
                cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
                if (err != CL_SUCCESS || clBuildProgram(p, 1, &devs[j], "", NULL, NULL)) return 1;
                cl_kernel k = clCreateKernel(p, "k", &err);
                cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 256 * sizeof(float), NULL, &err);
                size_t g = 256;
                clSetKernelArg(k, 0, sizeof b, &b);
                if (clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL)) return 1;
                clFinish(q);
                clReleaseMemObject(b);
                clReleaseKernel(k);
                clReleaseProgram(p);
            }
            clFinish(q);
            clReleaseCommandQueue(q);
            clReleaseContext(ctx);
            printf("%s\n", name);
            return 0;
        }
    }
    fprintf(stderr, "no device named %s\n", argv[1]);
    return 1;
}

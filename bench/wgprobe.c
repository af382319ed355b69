/* Which part of clnorm's program makes NVIDIA report CL_KERNEL_WORK_GROUP_SIZE 256 for
   every kernel: builds growing prefixes of cl/ (plus a trivial probe kernel) and some
   minimal programs, and prints each kernel's limit. Build: gcc wgprobe.c -lOpenCL. */
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc(1, n + 1);
    if (fread(s, 1, n, f) != (size_t)n) n = 0;
    fclose(f);
    return s;
}

static void probe(cl_context ctx, cl_device_id dev, const char *label, const char *src,
                  const char *opts)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        printf("%-40s build failed: %.300s\n", label, log);
        clReleaseProgram(p);
        return;
    }
    cl_kernel ks[64];
    cl_uint nk = 0;
    clCreateKernelsInProgram(p, 64, ks, &nk);
    size_t lo = (size_t)-1, hi = 0, probe_wg = 0;
    for (cl_uint i = 0; i < nk; i++) {
        size_t wg = 0;
        char name[128] = "";
        clGetKernelWorkGroupInfo(ks[i], dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
        clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, sizeof name, name, NULL);
        if (!strcmp(name, "clnorm_probe")) probe_wg = wg;
        if (wg < lo) lo = wg;
        if (wg > hi) hi = wg;
        clReleaseKernel(ks[i]);
    }
    printf("%-40s %2u kernels, limits %zu..%zu, probe kernel %zu  [%s]\n", label, nk, lo, hi,
           probe_wg, opts);
    clReleaseProgram(p);
}

int main(void)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    clGetPlatformIDs(8, plats, &np);
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS) dev = NULL;
    if (!dev) { printf("no GPU\n"); return 1; }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    const char *probe_k = "\n__kernel void clnorm_probe(__global float *x) { x[get_global_id(0)] = 1.0f; }\n";
    probe(ctx, dev, "probe alone", probe_k, "");
    probe(ctx, dev, "probe alone, maxrregcount 64", probe_k, "-cl-nv-maxrregcount=64");
    probe(ctx, dev, "local arg + barrier",
          "__kernel void clnorm_probe(__global float *x, __local float *s) {"
          " s[get_local_id(0)] = x[get_global_id(0)]; barrier(CLK_LOCAL_MEM_FENCE);"
          " x[get_global_id(0)] = s[0]; }", "");
    probe(ctx, dev, "ulong args + get_local_size",
          "__kernel void clnorm_probe(__global float *x, ulong a, uint t) {"
          " x[get_global_id(0) + a] = (float)get_local_size(0) + t; }", "");
    /* Does the driver run wider groups than it reports? The probe kernel at 256, 512
       and 1024 work-items, its output checked. */
    {
        cl_program p = clCreateProgramWithSource(ctx, 1, &probe_k, NULL, &err);
        clBuildProgram(p, 1, &dev, "-cl-nv-maxrregcount=64", NULL, NULL);
        cl_kernel k = clCreateKernel(p, "clnorm_probe", &err);
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
        size_t n = 1 << 20;
        cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * 4, NULL, &err);
        float *h = malloc(n * 4);
        for (size_t local = 256; local <= 2048; local *= 2) {
            float zero = 0.0f;
            clEnqueueFillBuffer(q, x, &zero, 4, 0, n * 4, 0, NULL, NULL);
            clSetKernelArg(k, 0, sizeof x, &x);
            cl_int e = clEnqueueNDRangeKernel(q, k, 1, NULL, &n, &local, 0, NULL, NULL);
            cl_int f = clFinish(q);
            clEnqueueReadBuffer(q, x, CL_TRUE, 0, n * 4, h, 0, NULL, NULL);
            size_t ones = 0;
            for (size_t i = 0; i < n; i++) ones += h[i] == 1.0f;
            printf("launch at local %4zu: enqueue %d, finish %d, %zu of %zu written\n", local, e, f,
                   ones, n);
        }
        free(h);
        clReleaseMemObject(x);
        clReleaseCommandQueue(q);
        clReleaseKernel(k);
        clReleaseProgram(p);
    }
    const char *files[] = {"cl/dtype.cl", "cl/reduce.cl", "cl/rows.cl", "cl/softmax.cl",
                           "cl/rmsnorm.cl"};
    const char *base = "-DCLN_DTYPE=0 -DCLN_PATH=0 -DCLN_VEC=4 -DCLN_BLOCKED=0";
    size_t cap = 1 << 20, used = 0;
    char *all = calloc(1, cap);
    for (int f = 0; f < 5; f++) {
        char *s = slurp(files[f]);
        if (!s) { printf("cannot read %s\n", files[f]); return 1; }
        used += (size_t)snprintf(all + used, cap - used, "%s\n", s);
        free(s);
        char *src = malloc(used + strlen(probe_k) + 1);
        strcpy(src, all);
        strcat(src, probe_k);
        char label[64];
        snprintf(label, sizeof label, "prefix up to %s", files[f]);
        probe(ctx, dev, label, src, base);
        if (f == 4) {
            probe(ctx, dev, "all, library options", src,
                  "-DCLN_DTYPE=0 -DCLN_PATH=2 -DCLN_VEC=4 -DCLN_BLOCKED=0 -DCLN_NV_SYNC "
                  "-cl-nv-maxrregcount=64");
            probe(ctx, dev, "all, bf16", src, "-DCLN_DTYPE=2 -DCLN_PATH=0 -DCLN_VEC=8 -DCLN_BLOCKED=0");
        }
        free(src);
    }
    return 0;
}

/* What the probes rowprobe.c and lmprobe.c share: an OpenCL check that ends the probe
   naming the call, a comparison for qsort'ing times, and the first device of the
   first platform whose name holds a given substring. */
#ifndef CLNORM_BENCH_PROBE_H
#define CLNORM_BENCH_PROBE_H
#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(e)                                                                        \
    do {                                                                             \
        cl_int e_ = (e);                                                             \
        if (e_ != CL_SUCCESS) {                                                      \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #e, e_);          \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static inline int probe_cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The device to probe: the first of the first platform whose name contains want (any
   platform when want is NULL). Returns 0 when there is none; *nv tells NVIDIA's. */
static inline int probe_device(const char *want, cl_device_id *dev, int *nv)
{
    cl_platform_id plats[8];
    cl_uint np = 0;
    CK(clGetPlatformIDs(8, plats, &np));
    for (cl_uint i = 0; i < np && i < 8; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (want && !strstr(name, want)) continue;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, dev, NULL) != CL_SUCCESS) continue;
        if (nv) *nv = strstr(name, "NVIDIA") != NULL;
        return 1;
    }
    return 0;
}
#endif

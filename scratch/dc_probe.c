/* Temporary (issue 5): how long reading a program's binary takes, per device. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char **argv)
{
    cln_device_ref ref;
    if (cln_device_find(argv[1], &ref)) { puts(clnorm_last_error()); return 1; }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &ref.device, NULL, NULL, &err);
    const cln_profile *p;
    double t0 = now();
    cln_profile_get(ref.device, &p);
    double t1 = now();
    char *src, opts[512];
    size_t len, n = 0;
    cln_source_get(&src, &len);
    cln_build_options(p, CLNORM_F32, p->best_path, opts, sizeof opts);
    cl_program prog = clCreateProgramWithSource(ctx, 1, (const char **)&src, &len, &err);
    err = clBuildProgram(prog, 1, &ref.device, opts, NULL, NULL);
    double t2 = now();
    clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL);
    double t3 = now();
    printf("%s (%s): profile %.3f s, build %.3f s (err %d), binary sizes %.3f s, %zu bytes\n",
           p->device_name, p->platform_version, t1 - t0, t2 - t1, (int)err, t3 - t2, n);
    return 0;
}

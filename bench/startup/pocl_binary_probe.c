/* Fifth session of 2026-11-30: can a PoCL program binary make a second start
   fast? Builds one clnorm kernel (cl/ files concatenated with one kernel kept,
   see BENCHMARKS.md "Start-up time") from source, runs it once in groups of 64,
   then asks for the binary and writes it ("cold"); or loads that binary and
   runs ("warm"). Run each with an empty POCL_CACHE_DIR. Build: gcc -O2
   pocl_binary_probe.c -lOpenCL. Usage: pocl_binary_probe cold|warm KERNEL.cl
   BINARY */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc(1, *n + 1);
  if (fread(s, 1, *n, f) != *n) {
  }
  fclose(f);
  return s;
}
int main(int argc, char **argv) {
  double t0 = now();
  const char *mode = argv[1];
  const char *opts = "-DCLN_DTYPE=0 -DCLN_PATH=0 -DCLN_VEC=8 -DCLN_BLOCKED=1";
  cl_platform_id ps[4];
  cl_uint np;
  clGetPlatformIDs(4, ps, &np);
  cl_device_id d = 0;
  for (cl_uint i = 0; i < np; i++) {
    char n[64];
    clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, 64, n, NULL);
    if (strstr(n, "Portable"))
      clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL);
  }
  cl_int e;
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
  double t1 = now();
  cl_program p;
  size_t n;
  if (!strcmp(mode, "cold")) {
    char *s = slurp(argv[2], &n);
    p = clCreateProgramWithSource(c, 1, (const char **)&s, &n, &e);
  } else {
    unsigned char *b = (unsigned char *)slurp(argv[3], &n);
    cl_int bs;
    p = clCreateProgramWithBinary(c, 1, &d, &n, (const unsigned char **)&b, &bs,
                                  &e);
  }
  e = clBuildProgram(p, 1, &d, opts, NULL, NULL);
  double t2 = now();
  cl_kernel k = clCreateKernel(p, "clnorm_softmax_3pass", &e);
  if (e) {
    printf("kernel %d\n", e);
    return 1;
  }
  size_t rows = 256, cols = 1000;
  float *h = malloc(rows * cols * 4);
  for (size_t i = 0; i < rows * cols; i++)
    h[i] = (float)(i % 17) * 0.1f;
  cl_mem x = clCreateBuffer(c, CL_MEM_COPY_HOST_PTR, rows * cols * 4, h, &e),
         y = clCreateBuffer(c, 0, rows * cols * 4, NULL, &e);
  cl_ulong z = 0, ld = cols, R = rows, C = cols;
  cl_uint team = 64;
  int a = 0;
  clSetKernelArg(k, a++, 8, &x);
  clSetKernelArg(k, a++, 8, &z);
  clSetKernelArg(k, a++, 8, &ld);
  clSetKernelArg(k, a++, 8, &y);
  clSetKernelArg(k, a++, 8, &z);
  clSetKernelArg(k, a++, 8, &ld);
  clSetKernelArg(k, a++, 8, &R);
  clSetKernelArg(k, a++, 8, &C);
  clSetKernelArg(k, a++, 4, &team);
  clSetKernelArg(k, a++, 64 * 8 + 16, NULL);
  size_t g = rows * 64, l = 64;
  e = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL);
  clEnqueueReadBuffer(q, y, CL_TRUE, 0, 4, h, 0, NULL, NULL);
  double t3 = now();
  printf("%s: init %.3f build %.3f first run %.3f (err %d, y0 %g)", mode,
         t1 - t0, t2 - t1, t3 - t2, e, h[0]);
  if (!strcmp(mode, "cold")) {
    size_t bsz = 0;
    clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bsz, &bsz, NULL);
    unsigned char *b = malloc(bsz);
    clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof b, &b, NULL);
    double t4 = now();
    FILE *f = fopen(argv[3], "wb");
    fwrite(b, 1, bsz, f);
    fclose(f);
    printf(" binary %zu bytes in %.3f", bsz, t4 - t3);
  }
  printf("\n");
  return 0;
}

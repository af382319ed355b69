/* leak_cycles: N cycles of session create, run (RMSNorm, softmax and statistics on host
   arrays, results checked), session destroy and clnorm_release_cache(NULL), with the
   resident set and the open file descriptors measured along the way. A library that
   leaks anything per session (a context, a program, a kernel, a buffer, host memory,
   a descriptor) shows it as growth over thousands of cycles.

     clnorm_leak_cycles [--device SPEC] [--cycles N] [--max-growth-kib K]

   Passes when every result is right, the descriptors end where they were after the
   warm-up, and from the warm-up (the first tenth of the cycles, at least 50) to the
   end the resident set and the heap in use each grow by at most K KiB: by default
   200 bytes per cycle, at least 1 MiB. Anything the library could leak per cycle (a
   context, program, kernel or buffer, the 40 KB kernel source, a cache entry) is
   kilobytes, while the OpenCL runtime itself grows by tens of bytes per cycle
   (--control makes the same OpenCL calls without clnorm; RELIABILITY.md has the
   numbers). The resident set and the heap at the warm-up and at the end are each the
   least of a few samples a little apart: PoCL holds megabytes for a moment now and
   then, without clnorm too, and one such moment at the end is no leak. Under
   LeakSanitizer (CLNORM_SANITIZE=address) the exit check covers host allocations. */
#define _GNU_SOURCE
#include "build_options.h"
#include "devices.h"
#include "profile.h"
#include "source.h"
#include "rel.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ROWS = 4, COLS = 64, SAMPLES = 20 };

static long settled_rss(void)
{
#ifdef __GLIBC__
    malloc_trim(0); /* give freed arenas back, so that only what is held counts */
#endif
    return rel_rss_kib();
}

/* Bytes the process's malloc holds for live allocations (the library's, the OpenCL
   runtime's and this program's), KiB; -1 where unknown. Unlike the resident set it
   does not move with fragmentation or the runtime's mappings. */
static long heap_kib(void)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    struct mallinfo2 mi = mallinfo2();
    return (long)((mi.uordblks + mi.hblkhd) / 1024);
#else
    return -1;
#endif
}

/* The least resident set and heap in use over SETTLE_SAMPLES samples 50 ms apart. A
   leak stays in every sample; the runtime's passing allocations do not. */
#define SETTLE_SAMPLES 5
static void settled_least(long *rss, long *heap)
{
    *rss = settled_rss();
    *heap = heap_kib();
    for (int k = 1; k < SETTLE_SAMPLES; k++) {
        const struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
        const long r = settled_rss(), h = heap_kib();
        if (r < *rss) *rss = r;
        if (h < *heap) *heap = h;
    }
}

/* One cycle; returns 0 when every call succeeded and the results are right. */
static int cycle(const char *spec, unsigned long i, uint64_t *seed)
{
    clnorm_session *s = NULL;
    float x[ROWS * COLS], y[ROWS * COLS], m[ROWS], l[ROWS];
    uint16_t xh[ROWS * COLS], yh[ROWS * COLS];
    clnorm_dtype dt = (clnorm_dtype)(i % 3);
    int bad = 0;
    for (int k = 0; k < ROWS * COLS; k++) x[k] = (float)(rel_unit(seed) * 6.0 - 3.0);
    clnorm_status st = clnorm_session_create(spec, &s);
    if (st) {
        printf("FAIL cycle %lu: session: %s: %s\n", i, clnorm_status_string(st),
               clnorm_last_error());
        return 1;
    }
    const void *in = x;
    void *out = y;
    if (dt != CLNORM_F32) {
        rel_pack(dt, x, xh, ROWS * COLS);
        rel_unpack(dt, xh, x, ROWS * COLS);
        in = xh;
        out = yh;
    }
    if ((st = clnorm_softmax_host(s, dt, ROWS, COLS, in, out, CLNORM_SOFTMAX_AUTO))) goto fail;
    if (dt != CLNORM_F32) rel_unpack(dt, yh, y, ROWS * COLS);
    for (int r = 0; r < ROWS; r++) {
        double sum = 0;
        for (int c = 0; c < COLS; c++) sum += y[r * COLS + c];
        if (!(fabs(sum - 1.0) < 0.02)) bad = 1;
    }
    if ((st = clnorm_rmsnorm_host(s, dt, ROWS, COLS, in, NULL, out, 1e-6f))) goto fail;
    if (dt != CLNORM_F32) rel_unpack(dt, yh, y, ROWS * COLS);
    for (int r = 0; r < ROWS; r++) {
        double ss = 0;
        for (int c = 0; c < COLS; c++) ss += (double)y[r * COLS + c] * y[r * COLS + c];
        if (!(fabs(ss / COLS - 1.0) < 0.05)) bad = 1;
    }
    if ((st = clnorm_softmax_stats_host(s, dt, ROWS, COLS, in, m, l))) goto fail;
    for (int r = 0; r < ROWS; r++)
        if (!(l[r] >= 1.0f && l[r] <= (float)COLS)) bad = 1;
    clnorm_session_destroy(s);
    clnorm_release_cache(NULL);
    if (bad) printf("FAIL cycle %lu: wrong results (%s)\n", i, rel_dtype_name(dt));
    return bad;
fail:
    printf("FAIL cycle %lu: %s: %s\n", i, clnorm_status_string(st), clnorm_last_error());
    clnorm_session_destroy(s);
    clnorm_release_cache(NULL);
    return 1;
}

/* The control: what one cycle asks of the OpenCL runtime, without clnorm (a context
   and queue, the same program built with the same options, the kernels, buffers, one
   launch, all released). Its growth is the runtime's own, for comparison. */
static int control_cycle(const char *spec, unsigned long i)
{
    cln_device_ref ref;
    const cln_profile *p;
    char *src = NULL, opts[1024];
    size_t len = 0;
    cl_int err;
    if (cln_device_find(spec, &ref) || cln_profile_get(ref.device, &p) || cln_source_get(&src, &len))
        return 1;
    clnorm_dtype dt = (clnorm_dtype)(i % 3);
    cln_build_options(p, dt, CLN_PATH_LOCAL, opts, sizeof opts);
    cl_context ctx = clCreateContext(NULL, 1, &ref.device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, ref.device, 0, &err);
    const char *s = src;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &s, &len, &err);
    int bad = clBuildProgram(prog, 1, &ref.device, opts, NULL, NULL) != CL_SUCCESS;
    free(src);
    static const char *const names[] = {"clnorm_softmax_three_pass", "clnorm_rmsnorm",
                                        "clnorm_softmax_stats"};
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ROWS * COLS * 4 + 64, NULL, &err);
    for (int k = 0; k < 3 && !bad; k++) {
        cl_kernel kern = clCreateKernel(prog, names[k], &err);
        if (err != CL_SUCCESS) { bad = 1; break; }
        cl_ulong z = 0, rows = ROWS, cols = COLS;
        cl_uint team = 1, zero = 0;
        float eps = 1e-6f;
        /* Arguments as the kernels declare them (cl/), enough for one launch. */
        cl_uint a = 0;
        clSetKernelArg(kern, a++, sizeof b, &b);
        clSetKernelArg(kern, a++, sizeof z, &z);
        clSetKernelArg(kern, a++, sizeof cols, &cols);
        if (k == 1) { clSetKernelArg(kern, a++, sizeof b, &b); clSetKernelArg(kern, a++, sizeof zero, &zero); }
        clSetKernelArg(kern, a++, sizeof b, &b);
        if (k == 2) clSetKernelArg(kern, a++, sizeof b, &b);
        else { clSetKernelArg(kern, a++, sizeof z, &z); clSetKernelArg(kern, a++, sizeof cols, &cols); }
        clSetKernelArg(kern, a++, sizeof rows, &rows);
        clSetKernelArg(kern, a++, sizeof cols, &cols);
        if (k == 1) clSetKernelArg(kern, a++, sizeof eps, &eps);
        clSetKernelArg(kern, a++, sizeof team, &team);
        clSetKernelArg(kern, a++, 8 * 2 * sizeof(float) + 4, NULL);
        size_t g = 8, l = 8;
        if (clEnqueueNDRangeKernel(q, kern, 1, NULL, &g, &l, 0, NULL, NULL) != CL_SUCCESS) bad = 1;
        clFinish(q);
        clReleaseKernel(kern);
    }
    clReleaseMemObject(b);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return bad;
}

int main(int argc, char **argv)
{
    const char *spec = NULL;
    unsigned long n = 10000;
    long max_growth = -1;
    int control = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--cycles") && i + 1 < argc) n = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--control")) control = 1;
        else if (!strcmp(argv[i], "--max-growth-kib") && i + 1 < argc)
            max_growth = strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--device SPEC] [--cycles N] [--max-growth-kib K] "
                            "[--control]\n",
                    argv[0]);
            return 2;
        }
    }
    if (n < 2) n = 2;
    if (max_growth < 0) max_growth = (long)(n * 200 / 1024) > 1024 ? (long)(n * 200 / 1024) : 1024;
    rel_configure("off", 0); /* memory caches only: what is measured */
    unsigned long warm = n / 10 > 50 ? n / 10 : 50;
    if (warm >= n) warm = n / 2;
    uint64_t seed = 12345;
    unsigned long failures = 0;
    long rss0 = settled_rss(), rss_warm = 0, peak = 0, heap_warm = 0;
    int fd_warm = -1;
    long samples[SAMPLES + 1];
    unsigned long at[SAMPLES + 1];
    int ns = 0;
    double t0 = rel_now(), tw = t0;
    printf("leak_cycles: %lu %scycles on %s; rss at start %ld KiB\n", n,
           control ? "control (OpenCL without clnorm) " : "", spec ? spec : "default", rss0);
    fflush(stdout);
    for (unsigned long i = 0; i < n; i++) {
        failures += (unsigned long)(control ? control_cycle(spec, i) : cycle(spec, i, &seed));
        if (failures > 10) {
            printf("FAIL: too many failures, stopping\n");
            break;
        }
        if (i + 1 == warm) {
            settled_least(&rss_warm, &heap_warm);
            fd_warm = rel_open_fds();
            tw = rel_now();
            printf("  after %6lu cycles (warm-up): rss %ld KiB, heap %ld KiB, %d fds, %.2f "
                   "ms/cycle\n", i + 1, rss_warm, heap_warm, fd_warm,
                   1e3 * (tw - t0) / (double)(i + 1));
            fflush(stdout);
        } else if (i + 1 > warm && ((i + 1 - warm) % ((n - warm + SAMPLES - 1) / SAMPLES) == 0 ||
                                    i + 1 == n) && ns <= SAMPLES) {
            long r = settled_rss();
            samples[ns] = r;
            at[ns++] = i + 1;
            if (r > peak) peak = r;
            long h = heap_kib();
            printf("  after %6lu cycles: rss %ld KiB (%+ld), heap %ld KiB (%+ld), %d fds\n", i + 1,
                   r, r - rss_warm, h, h - heap_warm, rel_open_fds());
            fflush(stdout);
        }
    }
    double dt = rel_now() - t0;
    long rss_end = 0, heap_end = 0;
    settled_least(&rss_end, &heap_end);
    int fd_end = rel_open_fds();
    /* Least-squares slope of the samples after the warm-up, KiB per 1000 cycles. */
    double slope = 0;
    if (ns >= 2) {
        double mx = 0, my = 0, sxx = 0, sxy = 0;
        for (int k = 0; k < ns; k++) { mx += (double)at[k]; my += (double)samples[k]; }
        mx /= ns;
        my /= ns;
        for (int k = 0; k < ns; k++) {
            sxx += ((double)at[k] - mx) * ((double)at[k] - mx);
            sxy += ((double)at[k] - mx) * ((double)samples[k] - my);
        }
        slope = sxx > 0 ? 1000.0 * sxy / sxx : 0;
    }
    long growth = rss_end - rss_warm, heap_growth = heap_end - heap_warm;
    int ok = failures == 0 && growth <= max_growth && heap_growth <= max_growth &&
             fd_end == fd_warm;
    printf("leak_cycles: %lu cycles in %.1f s (%.2f ms/cycle), %lu failures; rss start %ld, "
           "after warm-up %ld, peak %ld, end %ld KiB: growth %+ld KiB (limit %ld), slope %+.1f "
           "KiB per 1000 cycles; heap in use %ld -> %ld KiB: %+ld (limit %ld); fds %d -> %d: "
           "%s\n",
           n, dt, 1e3 * dt / (double)n, failures, rss0, rss_warm, peak, rss_end, growth,
           max_growth, slope, heap_warm, heap_end, heap_growth, max_growth, fd_warm, fd_end,
           ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

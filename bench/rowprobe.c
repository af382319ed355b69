/* How close can a one-read, one-write row kernel get to the copy bandwidth on shapes of
   64 to 128 MB moved? Times, on one device, with profiling events and inputs rotated
   past the caches:
   - clEnqueueCopyBuffer of the shape's bytes and of 1 GB;
   - a flat copy kernel (16-byte words, one per work-item);
   - the skeleton of clnorm's register forms: a team loads its row into registers,
     reduces one value across the group through local memory, then stores the row;
   - the same skeleton persistent: G groups walk the rows, loading the next row
     before reducing and storing the current one.
   Each kernel's output is checked against its input. Built with -DCLNORM_BUILD_BENCH=ON
   (bench/README.md); run: rowprobe [platform-substring]. */
#include "probe.h"

#define ROT 4 /* buffer pairs rotated; 4 x 32 MB inputs exceed the H200's 50 MB L2 */

static const char *src =
    "#define W (ROW / TEAM)\n"
    "__kernel void flat(__global const uint4 *x, __global uint4 *y) {\n"
    "    size_t i = get_global_id(0); y[i] = x[i]; }\n"
    "inline uint reduce(uint v, __local uint *s) {\n"
    "    uint lid = get_local_id(0), n = get_local_size(0);\n"
    "    s[lid] = v; barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (uint k = n / 2; k > 0; k >>= 1) {\n"
    "        if (lid < k) s[lid] ^= s[lid + k]; barrier(CLK_LOCAL_MEM_FENCE); }\n"
    "    uint r = s[0]; barrier(CLK_LOCAL_MEM_FENCE); return r; }\n"
    "__kernel void rows(__global const uint4 *x, __global uint4 *y, ulong nrows) {\n"
    "    __local uint s[RPG * TEAM];\n"
    "    uint lid = get_local_id(0), lane = lid % TEAM;\n"
    "    ulong row = get_group_id(0) * RPG + lid / TEAM;\n"
    "    uint4 v[W]; uint a = 0;\n"
    "    for (int i = 0; i < W; i++) { v[i] = x[row * ROW + i * TEAM + lane]; a ^= v[i].x; }\n"
    "    uint r = reduce(a, s);\n"
    "    for (int i = 0; i < W; i++) y[row * ROW + i * TEAM + lane] = v[i] ^ (uint4)(r == 0x9e3779b9u);\n"
    "}\n"
    "__kernel void persist(__global const uint4 *x, __global uint4 *y, ulong nrows) {\n"
    "    __local uint s[RPG * TEAM];\n"
    "    uint lid = get_local_id(0), lane = lid % TEAM;\n"
    "    ulong step = get_num_groups(0) * RPG;\n"
    "    ulong row = get_group_id(0) * RPG + lid / TEAM;\n"
    "    uint4 v[W], nx[W];\n"
    "    for (int i = 0; i < W; i++) v[i] = row < nrows ? x[row * ROW + i * TEAM + lane] : 0;\n"
    "    for (ulong base = get_group_id(0) * RPG; base < nrows; base += step, row += step) {\n"
    "        ulong nr = row + step;\n"
    "        for (int i = 0; i < W; i++) nx[i] = nr < nrows ? x[nr * ROW + i * TEAM + lane] : 0;\n"
    "        uint a = 0;\n"
    "        for (int i = 0; i < W; i++) a ^= v[i].x;\n"
    "        uint r = reduce(a, s);\n"
    "        for (int i = 0; i < W; i++) {\n"
    "            if (row < nrows) y[row * ROW + i * TEAM + lane] = v[i] ^ (uint4)(r == 0x9e3779b9u);\n"
    "            v[i] = nx[i]; }\n"
    "    }\n"
    "}\n";

static cl_context ctx;
static cl_command_queue q;
static cl_device_id dev;

static double ev_ms(cl_event e)
{
    cl_ulong t0, t1;
    CK(clWaitForEvents(1, &e));
    CK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    CK(clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    clReleaseEvent(e);
    return (t1 - t0) * 1e-6;
}

/* Median GB/s (bytes read plus written) of reps launches over the ROT buffer pairs;
   k == NULL times clEnqueueCopyBuffer. */
static double timeit(cl_kernel k, cl_mem *xs, cl_mem *ys, size_t bytes, size_t gsz, size_t lsz,
                     cl_ulong nrows)
{
    enum { REPS = 21 };
    double t[REPS];
    const cl_uint poison = 0xdeadbeefu;
    for (int i = 0; i < ROT; i++)
        CK(clEnqueueFillBuffer(q, ys[i], &poison, sizeof poison, 0, bytes, 0, NULL, NULL));
    for (int r = -3; r < REPS; r++) {
        int b = (r + 3) % ROT;
        cl_event e;
        if (k) {
            CK(clSetKernelArg(k, 0, sizeof(cl_mem), &xs[b]));
            CK(clSetKernelArg(k, 1, sizeof(cl_mem), &ys[b]));
            if (nrows) CK(clSetKernelArg(k, 2, sizeof nrows, &nrows));
            /* A form whose registers do not fit the group (NVIDIA: CL_OUT_OF_RESOURCES
               for the persistent form in groups of 1024) is reported as 0 GB/s. */
            if (clEnqueueNDRangeKernel(q, k, 1, NULL, &gsz, &lsz, 0, NULL, &e) != CL_SUCCESS)
                return 0;
        } else {
            CK(clEnqueueCopyBuffer(q, xs[b], ys[b], 0, 0, bytes, 0, NULL, &e));
        }
        double ms = ev_ms(e);
        if (r >= 0) t[r] = ms;
    }
    qsort(t, REPS, sizeof *t, probe_cmpd);
    return 2.0 * bytes / (t[REPS / 2] * 1e-3) / 1e9;
}

static int check(cl_mem x, cl_mem y, size_t bytes)
{
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    CK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, bytes, a, 0, NULL, NULL));
    CK(clEnqueueReadBuffer(q, y, CL_TRUE, 0, bytes, b, 0, NULL, NULL));
    int ok = memcmp(a, b, bytes) == 0;
    free(a);
    free(b);
    return ok;
}

struct shape {
    const char *name;
    size_t bytes_per_row, rows;
    unsigned team, rpg;
};

int main(int argc, char **argv)
{
    if (!probe_device(argc > 1 ? argv[1] : NULL, &dev, NULL)) return 77;
    char dname[256];
    cl_uint cus;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dname, dname, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, NULL);
    printf("device: %s, %u compute units\n", dname, cus);
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CK(err);

    const struct shape shapes[] = {
        {"bf16 4096x4096 (team 256, 1 row/wg)", 8192, 4096, 256, 1},
        {"bf16 4096x4096 (team 128, 2 rows/wg)", 8192, 4096, 128, 2},
        {"bf16 16384x1024 (team 32, 8 rows/wg)", 2048, 16384, 32, 8},
        {"bf16 16384x1024 (team 64, 4 rows/wg)", 2048, 16384, 64, 4},
        {"f32 4096x4096 (team 256, 1 row/wg)", 16384, 4096, 256, 1},
        {"f32 1024x32768 (team 1024, 1 row/wg)", 131072, 1024, 1024, 1},
        {"f32 1024x32768 (team 512, 1 row/wg)", 131072, 1024, 512, 1},
        {"f32 16384x8192 (team 256, 1 row/wg)", 32768, 16384, 256, 1},
    };
    const size_t big = (size_t)1 << 30;
    cl_mem bx[2], by[2];
    for (int i = 0; i < 2; i++) {
        bx[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, big, NULL, &err);
        CK(err);
        by[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, big, NULL, &err);
        CK(err);
    }
    cl_mem bxs[ROT] = {bx[0], bx[1], bx[0], bx[1]}, bys[ROT] = {by[0], by[1], by[0], by[1]};
    printf("clEnqueueCopyBuffer 1 GB: %.0f GB/s\n", timeit(NULL, bxs, bys, big, 0, 0, 0));

    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const struct shape *sh = &shapes[s];
        size_t bytes = sh->bytes_per_row * sh->rows, u4 = sh->bytes_per_row / 16;
        cl_mem xs[ROT], ys[ROT];
        unsigned char *h = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) h[i] = (unsigned char)(rand() >> 7);
        for (int i = 0; i < ROT; i++) {
            xs[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
            CK(err);
            ys[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
            CK(err);
        }
        free(h);
        char opts[128];
        snprintf(opts, sizeof opts, "-DROW=%zu -DTEAM=%u -DRPG=%u", u4, sh->team, sh->rpg);
        cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
        CK(err);
        if (clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
            char log[8192] = "";
            clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
            fprintf(stderr, "build failed: %s\n", log);
            return 1;
        }
        cl_kernel kf = clCreateKernel(p, "flat", &err), kr, kp;
        CK(err);
        kr = clCreateKernel(p, "rows", &err);
        CK(err);
        kp = clCreateKernel(p, "persist", &err);
        CK(err);
        size_t lsz = (size_t)sh->team * sh->rpg;
        printf("%s, %.0f MB moved:\n", sh->name, 2.0 * bytes / 1e6);
        printf("  copy buffer %6.0f GB/s\n", timeit(NULL, xs, ys, bytes, 0, 0, 0));
        double g = timeit(kf, xs, ys, bytes, bytes / 16, 256, 0);
        printf("  flat kernel %6.0f GB/s %s\n", g, check(xs[0], ys[0], bytes) ? "ok" : "WRONG");
        g = timeit(kr, xs, ys, bytes, sh->rows / sh->rpg * lsz, lsz, sh->rows);
        printf("  rows        %6.0f GB/s %s\n", g, check(xs[0], ys[0], bytes) ? "ok" : "WRONG");
        for (unsigned per = 1; per <= 16; per *= 2) {
            size_t groups = (size_t)cus * per;
            if (groups * sh->rpg > sh->rows) break;
            g = timeit(kp, xs, ys, bytes, groups * lsz, lsz, sh->rows);
            printf("  persist %2u/CU %6.0f GB/s %s\n", per, g,
                   check(xs[0], ys[0], bytes) ? "ok" : "WRONG");
        }
        clReleaseKernel(kf);
        clReleaseKernel(kr);
        clReleaseKernel(kp);
        clReleaseProgram(p);
        for (int i = 0; i < ROT; i++) {
            clReleaseMemObject(xs[i]);
            clReleaseMemObject(ys[i]);
        }
    }
    return 0;
}

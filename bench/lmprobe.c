/* Float32 softmax of 1024x32768 on one GPU: does holding part of the row in local
   memory, so that two 512-wide groups share an SM, beat one 1024-wide group holding
   the whole row in registers? Each form: one read, one exp and one write per element,
   the three-pass algorithm, reductions through warp shuffles (NVIDIA inline PTX) and
   local memory. KR float4 words per work-item in registers, KL in local memory.
   Checked against a float64 reference; prints GB/s (median of 21, inputs rotated) and,
   with -cl-nv-verbose, the registers each form uses. Built with -DCLNORM_BUILD_BENCH=ON
   (bench/README.md); run: lmprobe [platform-substring]. */
#include "probe.h"
#include <math.h>

#define ROWS 1024
#define COLS 32768
#define ROT 4

static const char *src =
    "inline float shx(float v, uint k) {\n"
    "#ifdef NV\n"
    "    float r; asm volatile(\"shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;\" : \"=f\"(r) : \"f\"(v), \"r\"(k)); return r;\n"
    "#else\n"
    "    return v;\n"
    "#endif\n"
    "}\n"
    "#ifdef NV\n"
    "#define RED(NAME, OP, ID) inline float NAME(float v, __local float *s) {\\\n"
    "    uint lid = get_local_id(0);\\\n"
    "    for (uint k = 16; k > 0; k >>= 1) v = OP(v, shx(v, k));\\\n"
    "    if ((lid & 31) == 0) s[lid >> 5] = v; barrier(CLK_LOCAL_MEM_FENCE);\\\n"
    "    float t = (lid & 31) < TEAM / 32 ? s[lid & 31] : ID;\\\n"
    "    for (uint k = 16; k > 0; k >>= 1) t = OP(t, shx(t, k));\\\n"
    "    barrier(CLK_LOCAL_MEM_FENCE); return t; }\n"
    "#else\n"
    "#define RED(NAME, OP, ID) inline float NAME(float v, __local float *s) {\\\n"
    "    uint lid = get_local_id(0); s[lid] = v; barrier(CLK_LOCAL_MEM_FENCE);\\\n"
    "    for (uint n = TEAM / 2; n > 0; n >>= 1) { if (lid < n) s[lid] = OP(s[lid], s[lid + n]);\\\n"
    "        barrier(CLK_LOCAL_MEM_FENCE); }\\\n"
    "    float r = s[0]; barrier(CLK_LOCAL_MEM_FENCE); return r; }\n"
    "#endif\n"
    "#define ADD(a, b) ((a) + (b))\n"
    "RED(gsum, ADD, 0.0f)\n"
    "RED(gmax, fmax, -INFINITY)\n"
    "#define MAX4(f) fmax(fmax((f).x, (f).y), fmax((f).z, (f).w))\n"
    "#define SUM4(f) (((f).x + (f).y) + ((f).z + (f).w))\n"
    "#define W (COLS / 4)\n"
    "#ifdef GENERIC\n"
    "#define G(i) if ((i) < n)\n"
    "#define TM team_arg\n"
    "#define GL(i) (i) < n ?\n"
    "#define GE : (float4)0.0f\n"
    "__kernel void sm(__global const float4 *x, __global float4 *y, uint team_arg) {\n"
    "    uint n = (W - get_local_id(0) + team_arg - 1) / team_arg;\n"
    "#else\n"
    "#define G(i)\n"
    "#define TM TEAM\n"
    "#define GL(i)\n"
    "#define GE\n"
    "__kernel __attribute__((reqd_work_group_size(TEAM, 1, 1)))\n"
    "void sm(__global const float4 *x, __global float4 *y, uint team_arg) {\n"
    "#endif\n"
    "#ifdef NV\n"
    "    __local float red[32];\n"
    "#else\n"
    "    __local float red[TEAM];\n"
    "#endif\n"
    "#if KL > 0\n"
    "    __local float4 held[KL * TEAM];\n"
    "#endif\n"
    "    uint lane = get_local_id(0);\n"
    "    __global const float4 *xr = x + get_group_id(0) * (ulong)W;\n"
    "    __global float4 *yr = y + get_group_id(0) * (ulong)W;\n"
    "    float4 v[KR];\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < KR; i++) v[i] = GL(i) xr[i * TM + lane] GE;\n"
    "#if KL > 0\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < KL; j++) held[j * TEAM + lane] = xr[(KR + j) * TEAM + lane];\n"
    "#endif\n"
    "    float m = -INFINITY;\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < KR; i++) G(i) m = fmax(m, MAX4(v[i]));\n"
    "#if KL > 0\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < KL; j++) m = fmax(m, MAX4(held[j * TEAM + lane]));\n"
    "#endif\n"
    "    m = gmax(m, red);\n"
    "    float l = 0.0f;\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < KR; i++) G(i) { v[i] = exp(v[i] - m); l += SUM4(v[i]); }\n"
    "#if KL > 0\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < KL; j++) { float4 t = exp(held[j * TEAM + lane] - m);\n"
    "        held[j * TEAM + lane] = t; l += SUM4(t); }\n"
    "#endif\n"
    "    l = gsum(l, red);\n"
    "    float inv = 1.0f / l;\n"
    "    #pragma unroll\n"
    "    for (int i = 0; i < KR; i++) G(i) yr[i * TM + lane] = v[i] * inv;\n"
    "#if KL > 0\n"
    "    #pragma unroll\n"
    "    for (int j = 0; j < KL; j++) yr[(KR + j) * TEAM + lane] = held[j * TEAM + lane] * inv;\n"
    "#endif\n"
    "}\n";

/* Seconds per call of 10 calls back to back (inputs rotated), from the end of a marker
   before them to the end of the last, median of 9: what clnorm bench --batch 10
   measures. k == NULL: clEnqueueCopyBuffer. */
static double batch_seconds(cl_command_queue q, cl_kernel k, cl_mem *xs, cl_mem y, size_t bytes,
                            size_t g, size_t l)
{
    double t[9];
    for (int r = 0; r < 9; r++) {
        cl_event m, e = NULL;
        CK(clEnqueueMarkerWithWaitList(q, 0, NULL, &m));
        for (int b = 0; b < 10; b++) {
            cl_mem in = xs[(r * 10 + b) % ROT];
            if (e) clReleaseEvent(e);
            if (k) {
                CK(clSetKernelArg(k, 0, sizeof in, &in));
                CK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, &e));
            } else {
                CK(clEnqueueCopyBuffer(q, in, y, 0, 0, bytes, 0, NULL, &e));
            }
        }
        CK(clWaitForEvents(1, &e));
        cl_ulong t0, t1;
        clGetEventProfilingInfo(m, CL_PROFILING_COMMAND_END, sizeof t0, &t0, NULL);
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
        clReleaseEvent(m);
        clReleaseEvent(e);
        t[r] = (t1 - t0) * 1e-9 / 10;
    }
    qsort(t, 9, sizeof *t, probe_cmpd);
    return t[4];
}

int main(int argc, char **argv)
{
    cl_device_id dev;
    int nv = 0;
    if (!probe_device(argc > 1 ? argv[1] : NULL, &dev, &nv)) return 77;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CK(err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CK(err);
    size_t n = (size_t)ROWS * COLS, bytes = n * sizeof(float);
    float *h = malloc(bytes), *out = malloc(bytes);
    cl_mem xs[ROT], y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CK(err);
    for (int b = 0; b < ROT; b++) {
        for (size_t i = 0; i < n; i++) h[i] = (float)((rand() / (double)RAND_MAX) * 16.0 - 8.0);
        xs[b] = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, h, &err);
        CK(err);
    }
    /* h now holds the last input (xs[ROT - 1]): the reference's. */
    printf("clEnqueueCopyBuffer of one input, back to back: %.0f GB/s\n",
           2.0 * bytes / batch_seconds(q, NULL, xs, y, bytes, 0, 0) * 1e-9);
    const struct { unsigned team, kr, kl, generic; } forms[] = {
        {1024, 8, 0, 0}, {1024, 8, 0, 1}, {512, 16, 0, 0}, {512, 16, 0, 1}, {512, 12, 4, 0},
        {256, 32, 0, 0},
    };
    for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
        unsigned team = forms[f].team, kr = forms[f].kr, kl = forms[f].kl;
        char opts[160];
        snprintf(opts, sizeof opts, "-DCOLS=%d -DTEAM=%u -DKR=%u -DKL=%u%s%s", COLS, team, kr, kl,
                 nv ? " -DNV -cl-nv-verbose" : "", forms[f].generic ? " -DGENERIC" : "");
        cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
        CK(err);
        cl_int be = clBuildProgram(p, 1, &dev, opts, NULL, NULL);
        char log[16384] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        printf("team %4u%s, %2u words in registers, %u in local memory:", team,
               forms[f].generic ? " (runtime team, guarded slots)" : "", kr, kl);
        if (be != CL_SUCCESS) {
            printf(" build failed: %.400s\n", log);
            clReleaseProgram(p);
            continue;
        }
        char *u = strstr(log, "Used");
        if (u) printf(" [%.*s]", (int)strcspn(u, "\n"), u);
        cl_kernel k = clCreateKernel(p, "sm", &err);
        CK(err);
        double t[21];
        size_t g = (size_t)ROWS * team, l = team;
        int ok = 1;
        for (int r = -3; r < 21 && ok; r++) {
            cl_mem in = xs[(r + 3) % ROT];
            CK(clSetKernelArg(k, 0, sizeof in, &in));
            CK(clSetKernelArg(k, 1, sizeof y, &y));
            CK(clSetKernelArg(k, 2, sizeof team, &team));
            cl_event e;
            if (clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, &e) != CL_SUCCESS) {
                ok = 0;
                break;
            }
            CK(clWaitForEvents(1, &e));
            cl_ulong t0, t1;
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
            clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
            clReleaseEvent(e);
            if (r >= 0) t[r] = (t1 - t0) * 1e-9;
        }
        if (!ok) {
            printf(" launch failed\n");
            clReleaseKernel(k);
            clReleaseProgram(p);
            continue;
        }
        /* The last launch read xs[(20 + 3) % ROT] == xs[ROT - 1]. */
        CK(clEnqueueReadBuffer(q, y, CL_TRUE, 0, bytes, out, 0, NULL, NULL));
        double worst = 0;
        for (size_t r = 0; r < ROWS; r += 97) {
            const float *xr = h + r * COLS;
            double m = -INFINITY, s = 0;
            for (size_t c = 0; c < COLS; c++) m = fmax(m, xr[c]);
            for (size_t c = 0; c < COLS; c++) s += exp((double)xr[c] - m);
            for (size_t c = 0; c < COLS; c++) {
                double ref = exp((double)xr[c] - m) / s;
                double e = fabs(out[r * COLS + c] - ref) / ref;
                worst = e > worst ? e : worst;
            }
        }
        qsort(t, 21, sizeof *t, probe_cmpd);
        printf(" %.0f GB/s, max rel err %.2e %s; back to back: %.0f GB/s\n",
               2.0 * bytes / t[10] * 1e-9, worst, worst < 2e-5 ? "ok" : "WRONG",
               2.0 * bytes / batch_seconds(q, k, xs, y, bytes, g, l) * 1e-9);
        clReleaseKernel(k);
        clReleaseProgram(p);
    }
    return 0;
}

/* `clnorm bench`: GB/s of each operation over a grid of shapes, beside the device's
   own buffer-copy bandwidth measured in the same run. `--impl scalar` times a plain
   C loop on the host instead (a peer for tools/compare.py), `--impl memcpy` the
   host's memcpy. */
#include "tool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape { const char *op; size_t rows, cols; int quick; } shape;

/* The benchmark grid (the shapes BENCHMARKS.md reports); quick marks the subset for
   small machines. */
static const shape grid[] = {
    {"softmax", 4096, 128, 1},   {"softmax", 16384, 1024, 0}, {"softmax", 4096, 4096, 1},
    {"softmax", 1024, 32768, 0}, {"softmax", 64, 128256, 1},  {"softmax", 8, 262144, 1},
    {"softmax", 1, 1048576, 1},  {"softmax", 32768, 8192, 0}, {"softmax", 128, 151936, 0},
    {"apply", 64, 131072, 1},    {"apply", 8, 131072, 1},     {"apply", 64, 128256, 0},
    {"apply", 128, 151936, 0},   {"apply", 1, 1048576, 0},    {"rmsnorm", 1, 4096, 1},
    {"rmsnorm", 64, 8192, 1},    {"rmsnorm", 4096, 4096, 1},  {"rmsnorm", 16384, 8192, 0},
    {"rmsnorm", 8192, 16384, 0}, {"rmsnorm", 65536, 1024, 1},
};

typedef struct bench_cfg {
    const char *device, *json, *csv, *impl, *only_op;
    int quick, repeats, all_dtypes, algo, batch;
    clnorm_dtype dtype;
    shape shapes[16]; /* --shape: these instead of the grid */
    int nshapes;
} bench_cfg;

typedef struct result {
    const char *op;
    clnorm_dtype dtype;
    size_t rows, cols;
    char plan[160];
    double ms, gbps;
    double copy_gbps; /* clEnqueueCopyBuffer of the same bytes, same run (0: none) */
} result;

/* Bytes read plus written by one call. */
static double op_bytes(const char *op, size_t rows, size_t cols, size_t es)
{
    double n = (double)rows * (double)cols * (double)es;
    if (!strcmp(op, "rmsnorm")) return 2 * n + (double)cols * (double)es;
    if (!strcmp(op, "add_rmsnorm")) return 4 * n + (double)cols * (double)es;
    return 2 * n;
}

static clnorm_status enqueue_op(cl_command_queue q, const bench_cfg *c, const char *op,
                                size_t rows, size_t cols, cl_mem x, cl_mem y, cl_mem r,
                                cl_mem gamma, cl_event *ev)
{
    clnorm_matrix vx = {x, 0, 0}, vy = {y, 0, 0}, vr = {r, 0, 0};
    if (!strcmp(op, "rmsnorm"))
        return clnorm_rmsnorm(q, c->dtype, rows, cols, vx, gamma, vy, 1e-6f, 0, NULL, ev);
    if (!strcmp(op, "add_rmsnorm"))
        return clnorm_add_rmsnorm(q, c->dtype, rows, cols, vx, vr, 1, gamma, vy, 1e-6f, 0, NULL,
                                  ev);
    /* apply: r and gamma hold the rows' statistics. */
    if (!strcmp(op, "apply"))
        return clnorm_softmax_apply(q, c->dtype, rows, cols, vx, r, gamma, vy, 0, NULL, ev);
    return clnorm_softmax(q, c->dtype, rows, cols, vx, vy, (clnorm_softmax_algo)c->algo, 0, NULL,
                          ev);
}

/* Inputs rotated on CPUs, by the device runs and the host peers alike: more than
   a last-level cache (tools/compare.py rotates PyTorch's and numpy's the same). */
enum { CPU_ROTATE_BYTES = 64 << 20 };

/* Random, non-zero data with a per-row offset, converted to the dtype. */
static void fill(void *dst, clnorm_dtype d, size_t n, size_t cols, uint64_t seed)
{
    float *tmp = malloc(sizeof(float) * (n < 65536 ? n : 65536));
    for (size_t i0 = 0; i0 < n; i0 += 65536) {
        size_t m = n - i0 < 65536 ? n - i0 : 65536;
        for (size_t i = 0; i < m; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            float u = (float)((seed >> 40) * 0x1p-24) * 8.0f - 4.0f;
            tmp[i] = u + (float)(((i0 + i) / cols) % 7);
        }
        tool_store(d, tmp, (char *)dst + i0 * (d == CLNORM_F32 ? 4 : 2), m);
    }
    free(tmp);
}

/* What a launch costs on this device and driver, the floor under the small shapes:
   an empty kernel enqueued n times back to back. *host_us: the enqueue call's time;
   *dev_us: first start to last end over n, on the device's clock. */
static void launch_cost(cl_context ctx, cl_command_queue q, cl_device_id dev, double *host_us,
                        double *dev_us)
{
    const char *src = "__kernel void clnorm_bench_empty(void) {}";
    enum { n = 200 };
    cl_int err;
    *host_us = *dev_us = 0;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    cl_kernel k = NULL;
    if (p && clBuildProgram(p, 1, &dev, "", NULL, NULL) == CL_SUCCESS)
        k = clCreateKernel(p, "clnorm_bench_empty", &err);
    if (k) {
        size_t one = 1;
        cl_event first = NULL, last = NULL;
        clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL); /* warm-up */
        clFinish(q);
        double w0 = tool_now();
        for (int i = 0; i < n; i++)
            clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL,
                                   i == 0 ? &first : i == n - 1 ? &last : NULL);
        *host_us = (tool_now() - w0) / n * 1e6;
        if (first && last && clWaitForEvents(1, &last) == CL_SUCCESS) {
            cl_ulong s = 0, e = 0;
            clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof s, &s, NULL);
            clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof e, &e, NULL);
            if (e > s) *dev_us = (double)(e - s) * 1e-3 / n;
        }
        clFinish(q);
        if (first) clReleaseEvent(first);
        if (last) clReleaseEvent(last);
        clReleaseKernel(k);
    }
    if (p) clReleaseProgram(p);
}

/* Times reps repeats of batch calls back to back (inputs rotated over the nin x),
   into t in seconds per call; copy_bytes > 0 times clEnqueueCopyBuffer of that much of
   one input to y instead of the operation. Returns 0 when a call failed. With --batch
   N the host's work of one call hides behind the device's work of the one before. */
static int time_calls(cl_command_queue q, const bench_cfg *c, const shape *sh, int batch, int reps,
                      int nin, cl_mem *x, cl_mem y, cl_mem r, cl_mem gamma, size_t copy_bytes,
                      double *t, clnorm_status *st)
{
    int ok = 1;
    for (int i = 0; ok && i < reps; i++) {
        cl_event m = NULL, e = NULL;
        double w0 = tool_now();
        clEnqueueMarkerWithWaitList(q, 0, NULL, &m);
        for (int b = 0; ok && b < batch; b++) {
            if (e) clReleaseEvent(e), e = NULL;
            cl_mem in = x[(i * batch + b) % nin];
            /* Only the last call asks for an event, as a loop of calls in an
               application would: on some drivers a call that returns an event costs
               several microseconds more host time (see docs/DESIGN.md). */
            cl_event *ev = b + 1 == batch ? &e : NULL;
            if (copy_bytes) {
                ok = clEnqueueCopyBuffer(q, in, y, 0, 0, copy_bytes, 0, NULL, ev) == CL_SUCCESS;
            } else if ((*st = enqueue_op(q, c, sh->op, sh->rows, sh->cols, in, y, r, gamma, ev))) {
                tool_report(sh->op, *st);
                ok = 0;
            }
        }
        if (ok) {
            clWaitForEvents(1, &e);
            /* Drivers without working profiling (Rusticl 22) report zeros: fall back
               to the wall clock around enqueue and wait. */
            double w = tool_now() - w0;
            t[i] = tool_event_seconds(m, e);
            if (t[i] <= 0.05 * w) t[i] = w;
            t[i] /= batch;
        }
        if (e) clReleaseEvent(e);
        if (m) clReleaseEvent(m);
    }
    clFinish(q);
    return ok;
}

static int bench_device_shape(cl_context ctx, cl_command_queue q, cl_device_id dev,
                              const bench_cfg *c, const shape *sh, result *res)
{
    size_t es = c->dtype == CLNORM_F32 ? 4 : 2, n = sh->rows * sh->cols, bytes = n * es;
    int cpu = 0;
    cl_device_type type;
    cl_ulong max_alloc = 0, global = 0;
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc, &max_alloc, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
    cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
    if (bytes > max_alloc || 3 * bytes > global) {
        fprintf(stderr, "skip %s %zux%zu: %zu bytes do not fit the device\n", sh->op, sh->rows,
                sh->cols, bytes);
        return -1;
    }
    /* Rotate inputs so that together they exceed the last-level cache. */
    size_t rotate_bytes = cpu ? (size_t)CPU_ROTATE_BYTES : ((size_t)512 << 20);
    int nin = (int)((rotate_bytes + bytes - 1) / bytes);
    if (nin < 2) nin = 2;
    if (nin > 16) nin = 16;
    while (nin > 2 && (double)(nin + 2) * (double)bytes > 0.5 * (double)global) nin--;
    cl_mem x[16] = {0}, y = NULL, r = NULL, gamma = NULL;
    void *host = malloc(bytes);
    cl_int err = CL_SUCCESS;
    int ok = 1;
    for (int i = 0; i < nin && ok; i++) {
        fill(host, c->dtype, n, sh->cols, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1));
        x[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
        ok = err == CL_SUCCESS;
    }
    if (ok) y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err), ok = err == CL_SUCCESS;
    if (ok && !strcmp(sh->op, "add_rmsnorm")) {
        r = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, host, &err);
        ok = err == CL_SUCCESS;
    }
    if (ok && !strcmp(sh->op, "apply")) {
        /* Statistics that keep exp(x - m) / l finite for fill's values. */
        float *st = malloc(2 * sh->rows * sizeof *st);
        for (size_t i = 0; st && i < sh->rows; i++) st[i] = 64.0f, st[sh->rows + i] = (float)sh->cols;
        r = st ? clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sh->rows * 4, st, &err)
               : NULL;
        if (r) gamma = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sh->rows * 4,
                                      st + sh->rows, &err);
        free(st);
        ok = r && gamma;
    }
    if (ok && !gamma) {
        fill(host, c->dtype, sh->cols, sh->cols, 77);
        gamma = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sh->cols * es, host, &err);
        ok = err == CL_SUCCESS;
    }
    free(host);
    double t[64];
    int reps = c->repeats > 64 ? 64 : c->repeats;
    clnorm_status st = CLNORM_SUCCESS;
    /* Warm-up: builds the kernels and touches every input once, since drivers such
       as NVIDIA's upload a COPY_HOST_PTR buffer only at its first use. */
    for (int i = 0; ok && i < nin; i++) {
        cl_event e = NULL;
        if ((st = enqueue_op(q, c, sh->op, sh->rows, sh->cols, x[i], y, r, gamma, &e))) {
            tool_report(sh->op, st);
            ok = 0;
        } else {
            clWaitForEvents(1, &e);
            clReleaseEvent(e);
        }
    }
    int batch = c->batch > 0 ? c->batch : 1;
    double tc[64];
    int have_copy = 0;
    if (ok) ok = time_calls(q, c, sh, batch, reps, nin, x, y, r, gamma, 0, t, &st);
    /* The copy at this size: clEnqueueCopyBuffer from the same rotated inputs to the
       same output, timed the same way. Small shapes cannot reach the bandwidth of a
       1 GB copy (ramp-up and drain of a kernel of a few microseconds), and this says
       how much of the gap is that. */
    if (ok) have_copy = time_calls(q, c, sh, batch, reps, nin, x, y, r, gamma, bytes, tc, &st);
    if (!ok && st == CLNORM_SUCCESS) fprintf(stderr, "%s %zux%zu: buffer allocation failed\n",
                                             sh->op, sh->rows, sh->cols);
    /* Describe the plan that ran (after the tuning table and the kernels' limits). */
    clnorm_plan_info pl;
    res->plan[0] = '\0';
    if (ok && !strcmp(sh->op, "apply")) {
        snprintf(res->plan, sizeof res->plan, "softmax_apply (CLNORM_TRACE=1 shows its plan)");
    } else if (ok && clnorm_last_plan(&pl)) {
        char d[120];
        tool_plan_describe(&pl, d, sizeof d);
        snprintf(res->plan, sizeof res->plan, "%s %s", tool_op_name(pl.op), d);
    }
    for (int i = 0; i < nin; i++)
        if (x[i]) clReleaseMemObject(x[i]);
    if (y) clReleaseMemObject(y);
    if (r) clReleaseMemObject(r);
    if (gamma) clReleaseMemObject(gamma);
    if (!ok) return 1;
    res->ms = tool_median(t, (size_t)reps) * 1e3;
    res->gbps = op_bytes(sh->op, sh->rows, sh->cols, es) / (res->ms * 1e-3) * 1e-9;
    double cs = have_copy ? tool_median(tc, (size_t)reps) : 0;
    res->copy_gbps = cs > 0 ? 2.0 * (double)bytes / cs * 1e-9 : 0;
    return 0;
}

/* The scalar C loop peer: float32 accumulation, the textbook three-pass softmax. */
static void scalar_op(const char *op, size_t rows, size_t cols, const float *x, float *y,
                      const float *g)
{
    for (size_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *yr = y + i * cols;
        if (!strcmp(op, "softmax")) {
            float m = -INFINITY, l = 0;
            for (size_t j = 0; j < cols; j++) m = xr[j] > m ? xr[j] : m;
            for (size_t j = 0; j < cols; j++) l += expf(xr[j] - m);
            float inv = 1.0f / l;
            for (size_t j = 0; j < cols; j++) yr[j] = expf(xr[j] - m) * inv;
        } else {
            float ss = 0;
            for (size_t j = 0; j < cols; j++) ss += xr[j] * xr[j];
            float rr = 1.0f / sqrtf(ss / (float)cols + 1e-6f);
            for (size_t j = 0; j < cols; j++) yr[j] = xr[j] * rr * g[j];
        }
    }
}

/* The host peers rotate their inputs past the last-level cache as the CPU device
   runs do (CPU_ROTATE_BYTES), so that none of them reads a warm cache. */
enum { HOST_MAX_INPUTS = 64 };

static int bench_host_shape(const bench_cfg *c, const shape *sh, result *res)
{
    size_t n = sh->rows * sh->cols;
    size_t nin = (CPU_ROTATE_BYTES + n * 4 - 1) / (n * 4);
    if (nin < 2) nin = 2;
    if (nin > HOST_MAX_INPUTS) nin = HOST_MAX_INPUTS;
    float *xs[HOST_MAX_INPUTS] = {0}, *y = malloc(n * 4), *g = malloc(sh->cols * 4);
    int ok = y && g;
    for (size_t k = 0; k < nin && ok; k++) {
        ok = (xs[k] = malloc(n * 4)) != NULL;
        if (ok) fill(xs[k], CLNORM_F32, n, sh->cols, 1 + (unsigned)k);
    }
    if (ok) fill(g, CLNORM_F32, sh->cols, sh->cols, 2);
    double t[64];
    int reps = c->repeats > 64 ? 64 : c->repeats;
    int memcpy_impl = !strcmp(c->impl, "memcpy");
    for (int i = -1; i < reps && ok; i++) {
        const float *x = xs[(size_t)(i + 1) % nin];
        double t0 = tool_now();
        if (memcpy_impl) memcpy(y, x, n * 4);
        else scalar_op(sh->op, sh->rows, sh->cols, x, y, g);
        if (i >= 0) t[i] = tool_now() - t0;
    }
    if (!ok) {
        for (size_t k = 0; k < nin; k++) free(xs[k]);
        free(y), free(g);
        return 1;
    }
    volatile float sink = y[n / 2];
    (void)sink;
    res->ms = tool_median(t, (size_t)reps) * 1e3;
    res->gbps = (memcpy_impl ? 2.0 * (double)n * 4 : op_bytes(sh->op, sh->rows, sh->cols, 4)) /
                (res->ms * 1e-3) * 1e-9;
    snprintf(res->plan, sizeof res->plan, "%s", memcpy_impl ? "memcpy" : "scalar C loop, -O2");
    for (size_t k = 0; k < nin; k++) free(xs[k]);
    free(y), free(g);
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clnorm bench [--device SPEC] [--quick] [--dtype f32|f16|bf16|all]\n"
            "                    [--op softmax|apply|rmsnorm|add_rmsnorm|attention]\n"
            "                    [--algo auto|3pass|online] [--repeats N] [--batch N]\n"
            "                    [--shape RxC]... [--impl clnorm|scalar|memcpy]\n"
            "                    [--json FILE] [--csv FILE]\n"
            "\n"
            "Times each operation over the shape grid (median of N runs after a warm-up,\n"
            "OpenCL profiling events, inputs rotated past the caches, random data) and\n"
            "prints the plan, time, GB/s (bytes read plus written) and the percentage of\n"
            "the device's buffer-copy bandwidth measured in the same run: of a 1 GB copy\n"
            "(64 MB on CPUs) and of a copy of the shape's own bytes through the same\n"
            "buffers (%%copy@sz: what ramp-up and drain leave of it). It also prints what\n"
            "a one-line copy kernel moves over the large buffers, the rate of a kernel's\n"
            "own loads and stores where the buffer copy is the driver's memcpy (Mesa\n"
            "llvmpipe). --quick runs the subset for small machines. --batch N times N\n"
            "calls back to back per repeat (device throughput; the default 1 times single\n"
            "calls, host work included).\n"
            "--op apply times clnorm_softmax_apply (the statistics given: the write of\n"
            "sharded softmax), whose %%copy@sz is its share of a copy of the same bytes.\n"
            "--shape RxC (repeatable) times those shapes of --op (softmax by default)\n"
            "instead of the grid. --impl scalar/memcpy time host C loops instead.\n"
            "--op attention has a grid and options of its own:\n"
            "clnorm bench --op attention --help.\n"
            "FILE may be - for standard output.\n");
}

static void write_results(const bench_cfg *c, const char *device, const char *note,
                          double copy, double copy_kernel, result *rs, int n)
{
    FILE *fj = NULL, *fc = NULL;
    if (c->json) fj = strcmp(c->json, "-") ? fopen(c->json, "w") : stdout;
    if (c->csv) fc = strcmp(c->csv, "-") ? fopen(c->csv, "w") : stdout;
    if (fj) {
        fprintf(fj, "{\"impl\": \"%s\", \"device\": \"%s\", \"note\": \"%s\", \"copy_gbps\": %.2f, "
                "\"copy_kernel_gbps\": %.2f, \"results\": [\n", c->impl, device, note ? note : "",
                copy, copy_kernel);
        for (int i = 0; i < n; i++)
            fprintf(fj, "  {\"op\": \"%s\", \"dtype\": \"%s\", \"rows\": %zu, \"cols\": %zu, "
                    "\"plan\": \"%s\", \"ms\": %.5f, \"gbps\": %.2f, \"copy_size_gbps\": %.2f}%s\n",
                    rs[i].op, clnorm_dtype_name(rs[i].dtype), rs[i].rows, rs[i].cols, rs[i].plan,
                    rs[i].ms, rs[i].gbps, rs[i].copy_gbps, i + 1 < n ? "," : "");
        fprintf(fj, "]}\n");
        if (fj != stdout) fclose(fj);
    }
    if (fc) {
        fprintf(fc, "impl,device,op,dtype,rows,cols,plan,ms,gbps,copy_gbps,copy_size_gbps\n");
        for (int i = 0; i < n; i++)
            fprintf(fc, "%s,\"%s\",%s,%s,%zu,%zu,\"%s\",%.5f,%.2f,%.2f,%.2f\n", c->impl, device,
                    rs[i].op, clnorm_dtype_name(rs[i].dtype), rs[i].rows, rs[i].cols, rs[i].plan,
                    rs[i].ms, rs[i].gbps, copy, rs[i].copy_gbps);
        if (fc != stdout) fclose(fc);
    }
}

int cmd_bench(int argc, char **argv)
{
    bench_cfg c = {.impl = "clnorm", .repeats = 0, .dtype = CLNORM_F32, .algo = 0};
    /* Attention has a grid and options of its own. */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--op=attention") ||
            (!strcmp(argv[i], "--op") && i + 1 < argc && !strcmp(argv[i + 1], "attention")))
            return cmd_bench_attention(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *v;
        int m;
        if (tool_is_help(argv[i])) { usage(stdout); return TOOL_OK; }
        if (!strcmp(argv[i], "--quick")) { c.quick = 1; continue; }
        if ((m = tool_opt(argc, argv, &i, "--device", &v))) { if (m < 0) return TOOL_USAGE; c.device = v; continue; }
        if ((m = tool_opt(argc, argv, &i, "--json", &v))) { if (m < 0) return TOOL_USAGE; c.json = v; continue; }
        if ((m = tool_opt(argc, argv, &i, "--csv", &v))) { if (m < 0) return TOOL_USAGE; c.csv = v; continue; }
        if ((m = tool_opt(argc, argv, &i, "--impl", &v))) {
            if (m < 0) return TOOL_USAGE;
            if (strcmp(v, "clnorm") && strcmp(v, "scalar") && strcmp(v, "memcpy")) {
                fprintf(stderr, "clnorm bench: --impl %s is not clnorm, scalar or memcpy\n", v);
                return TOOL_USAGE;
            }
            c.impl = v;
            continue;
        }
        if ((m = tool_opt(argc, argv, &i, "--op", &v))) { if (m < 0) return TOOL_USAGE; c.only_op = v; continue; }
        if ((m = tool_opt(argc, argv, &i, "--algo", &v))) {
            if (m < 0) return TOOL_USAGE;
            c.algo = !strcmp(v, "3pass") ? 1 : !strcmp(v, "online") ? 2 : !strcmp(v, "auto") ? 0 : -1;
            if (c.algo < 0) { fprintf(stderr, "clnorm bench: --algo %s is not auto, 3pass or online\n", v); return TOOL_USAGE; }
            continue;
        }
        if ((m = tool_opt(argc, argv, &i, "--dtype", &v))) {
            if (m < 0) return TOOL_USAGE;
            if (!strcmp(v, "all")) c.all_dtypes = 1;
            else if (!tool_parse_dtype(v, &c.dtype)) return TOOL_USAGE;
            continue;
        }
        if ((m = tool_opt(argc, argv, &i, "--batch", &v))) {
            size_t n;
            if (m < 0 || !tool_parse_size("--batch", v, &n)) return TOOL_USAGE;
            c.batch = (int)(n > 1000 ? 1000 : n);
            continue;
        }
        if ((m = tool_opt(argc, argv, &i, "--shape", &v))) {
            shape *sh = &c.shapes[c.nshapes];
            char tail;
            if (m < 0) return TOOL_USAGE;
            if (c.nshapes == (int)(sizeof c.shapes / sizeof c.shapes[0]) ||
                sscanf(v, "%zux%zu%c", &sh->rows, &sh->cols, &tail) != 2 || !sh->rows || !sh->cols) {
                fprintf(stderr, "clnorm bench: --shape %s is not ROWSxCOLS (16 at most)\n", v);
                return TOOL_USAGE;
            }
            sh->quick = 1;
            c.nshapes++;
            continue;
        }
        if ((m = tool_opt(argc, argv, &i, "--repeats", &v))) {
            size_t n;
            if (m < 0 || !tool_parse_size("--repeats", v, &n)) return TOOL_USAGE;
            c.repeats = (int)(n > 64 ? 64 : n);
            continue;
        }
        fprintf(stderr, "clnorm bench: unknown option %s\n", argv[i]);
        usage(stderr);
        return TOOL_USAGE;
    }
    int host = strcmp(c.impl, "clnorm") != 0;
    clnorm_session *s = NULL;
    const char *device = "host CPU";
    const char *note = NULL; /* PoCL's worker threads, pinned or not */
    double copy = 0, copy_kernel = 0, launch_host = 0, launch_dev = 0;
    if (!host) {
        clnorm_status st = clnorm_session_create(c.device, &s);
        if (st) { tool_report("session", st); return TOOL_FAIL; }
        device = clnorm_session_device_name(s);
    }
    cl_context ctx = host ? NULL : clnorm_session_context(s);
    cl_command_queue q = host ? NULL : clnorm_session_queue(s);
    cl_device_id dev = NULL;
    int cpu = 1;
    if (!host) {
        cl_device_type type;
        clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL);
        cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
        note = tool_pocl_note(q);
        copy = tool_copy_gbps(ctx, q, cpu ? ((size_t)64 << 20) : ((size_t)1 << 30), 5,
                              &copy_kernel);
        launch_cost(ctx, q, dev, &launch_host, &launch_dev);
    }
    if (!c.repeats) c.repeats = cpu ? 5 : 20;
    printf("clnorm bench %s on %s: %s, median of %d%s\n", clnorm_version(), device, c.impl,
           c.repeats, c.batch > 1 ? " batches" : "");
    if (c.batch > 1) printf("each a batch of %d calls back to back\n", c.batch);
    if (!host) {
        if (note) printf("%s\n", note);
        /* A kernel folder is read and hashed at every call (docs/API.md): batches then
           time the host, not the device. */
        const char *kdir = getenv("CLNORM_KERNEL_DIR");
        if (kdir && *kdir)
            printf("CLNORM_KERNEL_DIR is set: every call reads and hashes the kernel sources "
                   "again, so the times include that host work\n");
        printf("device buffer copy: %.1f GB/s (read + write)\n", copy);
        printf("copy kernel (a float4 a work-item): %.1f GB/s\n", copy_kernel);
        printf("empty kernel, back to back: %.1f us per launch on the device, %.1f us to "
               "enqueue\n", launch_dev, launch_host);
    }
    printf("%-12s %-5s %15s  %-52s %10s %9s %7s %9s\n", "op", "dtype", "shape", "plan", "ms", "GB/s",
           host ? "" : "%copy", host ? "" : "%copy@sz");
    int ndt = c.all_dtypes ? 3 : 1, total = 0, failed = 0, n = 0;
    /* --shape: the given shapes, of --op (softmax by default). */
    const shape *list = grid;
    size_t count = sizeof grid / sizeof grid[0];
    if (c.nshapes) {
        for (int k = 0; k < c.nshapes; k++) c.shapes[k].op = c.only_op ? c.only_op : "softmax";
        list = c.shapes;
        count = (size_t)c.nshapes;
    }
    result rs[3 * (sizeof grid / sizeof grid[0] + sizeof c.shapes / sizeof c.shapes[0])];
    for (size_t k = 0; k < count; k++)
        if ((!c.quick || list[k].quick) && (!c.only_op || !strcmp(c.only_op, list[k].op) ||
                                            (!strcmp(c.only_op, "add_rmsnorm") && !strcmp(list[k].op, "rmsnorm"))))
            total += ndt;
    int done = 0;
    for (int d = 0; d < ndt; d++) {
        if (c.all_dtypes) c.dtype = (clnorm_dtype)d;
        if (host && c.dtype != CLNORM_F32) continue;
        for (size_t k = 0; k < count; k++) {
            shape sh = list[k];
            if (c.quick && !sh.quick) continue;
            if (host && !strcmp(sh.op, "apply")) continue; /* no host peer */
            if (c.only_op && !strcmp(c.only_op, "add_rmsnorm") && !strcmp(sh.op, "rmsnorm"))
                sh.op = "add_rmsnorm";
            else if (c.only_op && strcmp(c.only_op, sh.op)) continue;
            fprintf(stderr, "\r[%d/%d] %s %s %zux%zu ...        ", ++done, total, sh.op,
                    clnorm_dtype_name(c.dtype), sh.rows, sh.cols);
            result *r = &rs[n];
            memset(r, 0, sizeof *r);
            r->op = sh.op;
            r->dtype = c.dtype;
            r->rows = sh.rows;
            r->cols = sh.cols;
            int rc = host ? bench_host_shape(&c, &sh, r) : bench_device_shape(ctx, q, dev, &c, &sh, r);
            if (rc > 0) failed++;
            if (rc) continue;
            fprintf(stderr, "\r%60s\r", "");
            char shape_s[40];
            snprintf(shape_s, sizeof shape_s, "%zux%zu", sh.rows, sh.cols);
            printf("%-12s %-5s %15s  %-52s %10.4f %9.1f", r->op, clnorm_dtype_name(c.dtype), shape_s,
                   r->plan, r->ms, r->gbps);
            if (!host && copy > 0) printf(" %6.1f%%", 100.0 * r->gbps / copy);
            if (!host && r->copy_gbps > 0) printf(" %8.1f%%", 100.0 * r->gbps / r->copy_gbps);
            printf("\n");
            n++;
        }
    }
    fprintf(stderr, "\r%60s\r", "");
    write_results(&c, device, note, copy, copy_kernel, rs, n);
    clnorm_session_destroy(s);
    return failed ? TOOL_FAIL : TOOL_OK;
}

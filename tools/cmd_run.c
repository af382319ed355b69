/* `clnorm run`: every operation once on fresh random data, through the
   device-buffer API on a session's queue, checked against a float64 host reference
   and timed with a monotonic clock around clFinish (no profiling queue needed). */
#include "tool.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char run_usage[] =
    "usage: clnorm run [--device SPEC] [--rows R --cols C] [--dtype f32|f16|bf16]\n"
    "                  [--repeats N] [--seed S] [--help]\n"
    "\n"
    "Runs rmsnorm (random gamma, eps 1e-6), softmax three-pass, online and auto, and\n"
    "softmax_stats on R x C random values (default 4096 x 4096, f32) with a random\n"
    "offset and spread per row, through the device-buffer API. Each operation runs\n"
    "once to warm up, then N times (default 5) timed with clFinish, each time as a\n"
    "batch of calls lasting about 5 ms (one call where that is slower) so that launch\n"
    "latency does not dominate; the median time per call, the host time spent inside\n"
    "the clnorm call (mean, microseconds) and GB/s (bytes read plus written) are\n"
    "shown. Results are checked against a float64 reference: f32 within 2e-5\n"
    "relative (or 1e-30 absolute), f16 within 1e-3 relative plus storage rounding,\n"
    "bf16 within 8e-3 relative; the float32 statistics as f32. Exit status 1 on any\n"
    "wrong result or error.\n"
    "\n"
    "  --device SPEC  \"P:D\", cpu, gpu or a name substring (see `clnorm devices`);\n"
    "                 default: CLNORM_DEVICE, else the first GPU, else the first device\n"
    "  --seed S       random seed (default: from the clock; printed for reruns)\n";

typedef struct run_cfg {
    const char *spec;
    size_t rows, cols, repeats;
    clnorm_dtype dtype;
    uint64_t seed;
} run_cfg;

/* ---- storage formats (conversions in host_dtype.c) ---------------------------- */

static size_t dtype_size(clnorm_dtype d) { return d == CLNORM_F32 ? 4 : 2; }

static const char *dtype_name(clnorm_dtype d)
{
    return d == CLNORM_F16 ? "f16" : d == CLNORM_BF16 ? "bf16" : "f32";
}

/* Stores n floats as dtype into dst and rounds src to what was stored, so the
   reference sees exactly the device's input. */
static void store(clnorm_dtype d, float *src, void *dst, size_t n)
{
    tool_store(d, src, dst, n);
    if (d != CLNORM_F32) tool_load(d, dst, src, n);
}

/* ---- random data and the float64 reference --------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(splitmix64(s) >> 11) * 0x1p-53;
}

/* Host side of one run: inputs as the device sees them (rounded to the dtype) and
   per-row reference values, from which every output element is recomputed. */
typedef struct host_data {
    float *x, *gamma;         /* rounded values */
    void *xs, *gs, *ys;       /* dtype storage: inputs, and the output read back */
    float *y, *smax, *ssum;   /* outputs as float */
    double *rms, *m, *l;      /* per row: rsqrt(mean(x^2) + eps), max, sum exp(x - max) */
} host_data;

static void host_free(host_data *h)
{
    void *all[] = {h->x, h->gamma, h->xs, h->gs, h->ys, h->y, h->smax, h->ssum, h->rms,
                   h->m, h->l};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

static int host_make(host_data *h, const run_cfg *c, float eps)
{
    size_t n = c->rows * c->cols, es = dtype_size(c->dtype);
    memset(h, 0, sizeof *h);
    h->x = malloc(n * 4);
    h->gamma = malloc(c->cols * 4);
    h->xs = malloc(n * es);
    h->gs = malloc(c->cols * es);
    h->ys = malloc(n * es);
    h->y = malloc(n * 4);
    h->smax = malloc(c->rows * 4);
    h->ssum = malloc(c->rows * 4);
    h->rms = malloc(c->rows * 8);
    h->m = malloc(c->rows * 8);
    h->l = malloc(c->rows * 8);
    if (!h->x || !h->gamma || !h->xs || !h->gs || !h->ys || !h->y || !h->smax || !h->ssum ||
        !h->rms || !h->m || !h->l)
        return 0;

    uint64_t s = c->seed;
    for (size_t j = 0; j < c->cols; j++) h->gamma[j] = (float)uniform(&s, -2.0, 2.0);
    /* Each row gets its own offset and spread, so a kernel that mixes rows up or
       forgets to subtract the max shows it. */
    for (size_t r = 0; r < c->rows; r++) {
        double off = uniform(&s, -30.0, 30.0), spread = uniform(&s, 0.1, 8.0);
        float *xr = h->x + r * c->cols;
        for (size_t j = 0; j < c->cols; j++) xr[j] = (float)(off + spread * uniform(&s, -1.0, 1.0));
    }
    store(c->dtype, h->x, h->xs, n);
    store(c->dtype, h->gamma, h->gs, c->cols);

    for (size_t r = 0; r < c->rows; r++) {
        const float *xr = h->x + r * c->cols;
        double ss = 0.0, m = -INFINITY, l = 0.0;
        for (size_t j = 0; j < c->cols; j++) {
            ss += (double)xr[j] * xr[j];
            if (xr[j] > m) m = xr[j];
        }
        for (size_t j = 0; j < c->cols; j++) l += exp(xr[j] - m);
        h->rms[r] = 1.0 / sqrt(ss / (double)c->cols + (double)eps);
        h->m[r] = m;
        h->l[r] = l;
    }
    return 1;
}

/* ---- checking ---------------------------------------------------------------------- */

typedef struct check {
    clnorm_dtype dtype;   /* of the output storage */
    double max_rel;       /* over references of normal magnitude */
    size_t bad;           /* elements outside the tolerance */
    size_t bad_r, bad_c;  /* the first of them */
    double bad_got, bad_ref;
} check;

/* API.md's accuracy rule for one element stored as dtype. */
static double tolerance(clnorm_dtype d, double ref)
{
    double a = fabs(ref);
    if (d == CLNORM_F16) {
        int e = -13;
        if (a >= 0x1p-14) frexp(a, &e);
        return 1e-3 * a + ldexp(1.0, e - 12); /* plus half an f16 ulp of ref */
    }
    if (d == CLNORM_BF16) return fmax(8e-3 * a, 1e-30);
    return fmax(2e-5 * a, 1e-30);
}

static void check_one(check *k, double got, double ref, size_t r, size_t c)
{
    double d = fabs(got - ref), a = fabs(ref);
    if (a >= (k->dtype == CLNORM_F16 ? 0x1p-14 : (double)FLT_MIN)) {
        double rel = d / a;
        if (!(rel <= k->max_rel)) k->max_rel = isnan(rel) ? INFINITY : rel;
    }
    if (!(d <= tolerance(k->dtype, ref)) && k->bad++ == 0) {
        k->bad_r = r;
        k->bad_c = c;
        k->bad_got = got;
        k->bad_ref = ref;
    }
}

/* ---- the operations ----------------------------------------------------------------- */

enum { OP_RMSNORM, OP_SOFTMAX_3PASS, OP_SOFTMAX_ONLINE, OP_SOFTMAX_AUTO, OP_STATS, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"rmsnorm", "softmax_three_pass",
                                               "softmax_online", "softmax_auto",
                                               "softmax_stats"};
/* The plan each op's call makes (AUTO is resolved by the plan itself). */
static const clnorm_op op_plan[OP_COUNT] = {CLNORM_OP_RMSNORM, CLNORM_OP_SOFTMAX_THREE_PASS,
                                            CLNORM_OP_SOFTMAX_ONLINE, CLNORM_OP_SOFTMAX_AUTO,
                                            CLNORM_OP_SOFTMAX_STATS};

typedef struct device_data {
    cl_command_queue q;
    cl_mem x, gamma, y, smax, ssum;
} device_data;

static const float run_eps = 1e-6f;

static clnorm_status enqueue(const device_data *dd, const run_cfg *c, int op)
{
    clnorm_matrix x = {dd->x, 0, 0}, y = {dd->y, 0, 0};
    switch (op) {
    case OP_RMSNORM:
        return clnorm_rmsnorm(dd->q, c->dtype, c->rows, c->cols, x, dd->gamma, y, run_eps, 0,
                              NULL, NULL);
    case OP_SOFTMAX_3PASS:
        return clnorm_softmax(dd->q, c->dtype, c->rows, c->cols, x, y,
                              CLNORM_SOFTMAX_THREE_PASS, 0, NULL, NULL);
    case OP_SOFTMAX_ONLINE:
        return clnorm_softmax(dd->q, c->dtype, c->rows, c->cols, x, y, CLNORM_SOFTMAX_ONLINE,
                              0, NULL, NULL);
    case OP_SOFTMAX_AUTO:
        return clnorm_softmax(dd->q, c->dtype, c->rows, c->cols, x, y, CLNORM_SOFTMAX_AUTO, 0,
                              NULL, NULL);
    default:
        return clnorm_softmax_stats(dd->q, c->dtype, c->rows, c->cols, x, dd->smax, dd->ssum,
                                    0, NULL, NULL);
    }
}

/* Bytes one call moves: what it must read plus what it writes. */
static double op_bytes(const run_cfg *c, int op)
{
    double n = (double)c->rows * (double)c->cols, es = (double)dtype_size(c->dtype);
    if (op == OP_RMSNORM) return 2.0 * n * es + (double)c->cols * es;
    if (op == OP_STATS) return n * es + 2.0 * (double)c->rows * 4.0;
    return 2.0 * n * es;
}

static int cl_ok(cl_int err, const char *what)
{
    if (err == CL_SUCCESS) return 1;
    fprintf(stderr, "clnorm run: %s: %s (%d)\n", what, clnorm_opencl_error_name(err), err);
    return 0;
}

/* Compares the outputs of op (already read back) with the reference. */
static void check_op(check *k, const host_data *h, const run_cfg *c, int op)
{
    memset(k, 0, sizeof *k);
    k->dtype = op == OP_STATS ? CLNORM_F32 : c->dtype;
    for (size_t r = 0; r < c->rows; r++) {
        if (op == OP_STATS) {
            check_one(k, h->smax[r], h->m[r], r, 0);
            check_one(k, h->ssum[r], h->l[r], r, 1);
            continue;
        }
        const float *xr = h->x + r * c->cols, *yr = h->y + r * c->cols;
        for (size_t j = 0; j < c->cols; j++) {
            double ref = op == OP_RMSNORM ? (double)xr[j] * h->rms[r] * (double)h->gamma[j]
                                          : exp(xr[j] - h->m[r]) / h->l[r];
            check_one(k, yr[j], ref, r, j);
        }
    }
}

static void plan_text(const clnorm_plan_info *pl, char *buf, size_t len)
{
    int split = pl->variant == CLNORM_VARIANT_SPLIT;
    snprintf(buf, len, "%s/%s wg %zu, %zu %s, %zu groups", tool_variant_name(pl->variant),
             tool_reduction_name(pl->reduction), pl->work_group,
             split ? pl->split : pl->rows_per_group, split ? "slices/row" : "rows/wg",
             pl->groups);
}

/* Runs, times, reads back and checks one op; prints its line. 1 when it passed. */
static int run_op(const device_data *dd, const run_cfg *c, host_data *h, int op,
                  cl_device_id dev, double *times)
{
    size_t n = c->rows * c->cols, es = dtype_size(c->dtype);
    char plan[128], name[40];
    clnorm_plan_info pl;
    int planned = dev && clnorm_plan_query(dev, NULL, op_plan[op], c->dtype, c->rows, c->cols,
                                           &pl) == CLNORM_SUCCESS;
    if (planned) plan_text(&pl, plan, sizeof plan);
    else /* the call itself will say why */
        snprintf(plan, sizeof plan, "? (%s)", dev ? "refused, see below" : "no device profile");
    /* AUTO's resolved algorithm goes with the name: "softmax_auto/3pass". */
    snprintf(name, sizeof name, "%s%s", op_names[op],
             op != OP_SOFTMAX_AUTO || !planned ? ""
             : pl.op == CLNORM_OP_SOFTMAX_THREE_PASS ? "/3pass" : "/online");
    /* The line is printed once the op has run, with the plan that ran (after the
       tuning table and the compiled kernels' limits); errors print it at once. */
#define RUN_LINE() printf("%-19s %-52s ", name, plan)

    /* Poison the outputs (all-ones bytes are NaN in every dtype) so that an
       operation that skips elements cannot pass on a previous op's results. */
    const cl_uchar nan_byte = 0xFF;
    if (!cl_ok(clEnqueueFillBuffer(dd->q, dd->y, &nan_byte, 1, 0, n * es, 0, NULL, NULL),
               "clEnqueueFillBuffer(y)") ||
        !cl_ok(clEnqueueFillBuffer(dd->q, dd->smax, &nan_byte, 1, 0, c->rows * 4, 0, NULL, NULL),
               "clEnqueueFillBuffer(row_max)") ||
        !cl_ok(clEnqueueFillBuffer(dd->q, dd->ssum, &nan_byte, 1, 0, c->rows * 4, 0, NULL, NULL),
               "clEnqueueFillBuffer(row_sum)") ||
        !cl_ok(clFinish(dd->q), "clFinish")) {
        RUN_LINE();
        printf("ERROR\n");
        return 0;
    }

    /* Call 0 builds kernels and warms caches: not timed. Call 1 alone sets the batch:
       a timed sample enqueues `batch` calls back to back and finishes once, so a
       fast kernel is not timed as launch and clFinish latency (~0.1 ms on a GPU). */
    size_t batch = 1;
    double host = 0.0; /* time spent inside the clnorm calls themselves */
    for (size_t i = 0; i < 2 + c->repeats; i++) {
        size_t calls = i < 2 ? 1 : batch;
        double t0 = tool_now();
        for (size_t b = 0; b < calls; b++) {
            double h0 = tool_now();
            clnorm_status st = enqueue(dd, c, op);
            if (i >= 2) host += tool_now() - h0;
            if (st) {
                RUN_LINE();
                printf("ERROR\n");
                tool_report(op_names[op], st);
                clFinish(dd->q);
                return 0;
            }
        }
        if (!cl_ok(clFinish(dd->q), "clFinish")) {
            RUN_LINE();
            printf("ERROR\n");
            return 0;
        }
        double t = tool_now() - t0;
        if (i == 1 && t < 5e-3) batch = t > 5e-6 ? (size_t)ceil(5e-3 / t) : 1000;
        if (batch > 1000) batch = 1000;
        if (i >= 2) times[i - 2] = t / (double)calls;
    }
    double med = tool_median(times, (size_t)c->repeats);
    clnorm_plan_info ran;
    if (clnorm_last_plan(&ran)) plan_text(&ran, plan, sizeof plan);
    RUN_LINE();

    if (op == OP_STATS) {
        if (!cl_ok(clEnqueueReadBuffer(dd->q, dd->smax, CL_TRUE, 0, c->rows * 4, h->smax, 0,
                                       NULL, NULL), "reading row_max") ||
            !cl_ok(clEnqueueReadBuffer(dd->q, dd->ssum, CL_TRUE, 0, c->rows * 4, h->ssum, 0,
                                       NULL, NULL), "reading row_sum"))
            return 0;
    } else {
        if (!cl_ok(clEnqueueReadBuffer(dd->q, dd->y, CL_TRUE, 0, n * es, h->ys, 0, NULL, NULL),
                   "reading y"))
            return 0;
        tool_load(c->dtype, h->ys, h->y, n);
    }
    check k;
    check_op(&k, h, c, op);
    printf("%10.3f %5zu %8.1f %9.2f %10.2e  %s\n", med * 1e3, batch,
           host / (double)(c->repeats * batch) * 1e6, op_bytes(c, op) / med * 1e-9, k.max_rel,
           k.bad ? "FAIL" : "PASS");
    if (k.bad) {
        char where[64]; /* check_op puts 0 (max) or 1 (sum) in bad_c for statistics */
        if (op == OP_STATS)
            snprintf(where, sizeof where, "%s[%zu]", k.bad_c ? "row_sum" : "row_max", k.bad_r);
        else
            snprintf(where, sizeof where, "y at row %zu col %zu", k.bad_r, k.bad_c);
        fprintf(stderr, "clnorm run: %s: %zu of %zu values wrong; first %s: got %.9g, "
                "reference %.9g\n", op_names[op], k.bad, op == OP_STATS ? 2 * c->rows : n,
                where, k.bad_got, k.bad_ref);
    }
    return k.bad == 0;
}

static int parse_args(int argc, char **argv, run_cfg *c)
{
    c->spec = NULL;
    c->rows = c->cols = 4096;
    c->repeats = 5;
    c->dtype = CLNORM_F32;
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    c->seed = ((uint64_t)t.tv_sec * 1000000007ull) ^ (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32);
    c->seed %= 1000000000000ull; /* short enough to retype */
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        size_t s;
        if (tool_is_help(argv[i])) {
            fputs(run_usage, stdout);
            return TOOL_OK;
        }
        if ((m = tool_opt(argc, argv, &i, "--device", &v)) != 0) {
            if (m < 0) return TOOL_USAGE;
            c->spec = v;
        } else if ((m = tool_opt(argc, argv, &i, "--rows", &v)) != 0) {
            if (m < 0 || !tool_parse_size("--rows", v, &c->rows)) return TOOL_USAGE;
        } else if ((m = tool_opt(argc, argv, &i, "--cols", &v)) != 0) {
            if (m < 0 || !tool_parse_size("--cols", v, &c->cols)) return TOOL_USAGE;
        } else if ((m = tool_opt(argc, argv, &i, "--dtype", &v)) != 0) {
            if (m < 0 || !tool_parse_dtype(v, &c->dtype)) return TOOL_USAGE;
        } else if ((m = tool_opt(argc, argv, &i, "--repeats", &v)) != 0) {
            if (m < 0 || !tool_parse_size("--repeats", v, &c->repeats)) return TOOL_USAGE;
        } else if ((m = tool_opt(argc, argv, &i, "--seed", &v)) != 0) {
            if (m < 0) return TOOL_USAGE;
            if (!strcmp(v, "0")) c->seed = 0;
            else if (!tool_parse_size("--seed", v, &s)) return TOOL_USAGE;
            else c->seed = s;
        } else {
            fprintf(stderr, "clnorm run: unknown argument \"%s\"\n", argv[i]);
            return TOOL_USAGE;
        }
    }
    if (c->repeats > 1000) {
        fprintf(stderr, "clnorm run: --repeats %zu is more than 1000\n", c->repeats);
        return TOOL_USAGE;
    }
    /* Four copies of the matrix live on the host at once; keep sizes addressable. */
    if (c->cols > ((size_t)1 << 40) / c->rows) {
        fprintf(stderr, "clnorm run: %zu x %zu is too large\n", c->rows, c->cols);
        return TOOL_USAGE;
    }
    return -1; /* go on and run */
}

int cmd_run(int argc, char **argv)
{
    run_cfg c;
    int pr = parse_args(argc, argv, &c);
    if (pr == TOOL_USAGE) fprintf(stderr, "\n%s", run_usage);
    if (pr >= 0) return pr;

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(c.spec, &s);
    if (st) {
        tool_report(c.spec ? c.spec : "default device", st);
        return TOOL_FAIL;
    }
    device_data dd = {clnorm_session_queue(s), NULL, NULL, NULL, NULL, NULL};
    cl_context ctx = clnorm_session_context(s);
    int ok = 1;
    host_data h;
    memset(&h, 0, sizeof h);
    cl_mem *bufs[] = {&dd.x, &dd.gamma, &dd.y, &dd.smax, &dd.ssum};
    double *times = malloc(c.repeats * sizeof *times);

    /* The plan is shown as the library would make it on this device. */
    cl_device_id dev = NULL;
    clnorm_device_info info;
    if (clGetCommandQueueInfo(dd.q, CL_QUEUE_DEVICE, sizeof dev, &dev, NULL) != CL_SUCCESS ||
        clnorm_device_describe(dev, 1, &info) != CLNORM_SUCCESS)
        dev = NULL;

    printf("device   %s (%s)\n", clnorm_session_device_name(s), dev ? info.platform_name : "?");
    printf("shape    %zu x %zu %s, seed %llu, warm-up + %zu timed batches, clnorm %s\n", c.rows,
           c.cols, dtype_name(c.dtype), (unsigned long long)c.seed, c.repeats,
           clnorm_version());
    const char *pocl = tool_pocl_note(dd.q);
    if (pocl) printf("%s\n", pocl);
    fflush(stdout);
    double t0 = tool_now();
    if (!times || !host_make(&h, &c, run_eps)) {
        fprintf(stderr, "clnorm run: out of host memory for %zu x %zu\n", c.rows, c.cols);
        ok = 0;
        goto done;
    }
    printf("input and reference made in %.2f s\n\n", tool_now() - t0);

    size_t n = c.rows * c.cols, es = dtype_size(c.dtype);
    cl_int err;
    size_t sizes[] = {n * es, c.cols * es, n * es, c.rows * 4, c.rows * 4};
    for (size_t i = 0; i < 5 && ok; i++) {
        *bufs[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizes[i], NULL, &err);
        ok = cl_ok(err, "clCreateBuffer");
    }
    ok = ok && cl_ok(clEnqueueWriteBuffer(dd.q, dd.x, CL_TRUE, 0, n * es, h.xs, 0, NULL, NULL),
                     "writing x");
    ok = ok && cl_ok(clEnqueueWriteBuffer(dd.q, dd.gamma, CL_TRUE, 0, c.cols * es, h.gs, 0, NULL,
                                          NULL), "writing gamma");
    if (!ok) goto done;

    printf("%-19s %-52s %10s %5s %8s %9s %10s  %s\n", "operation",
           "plan (variant/path, work-group, ...)", "ms/call", "batch", "host us", "GB/s", "max rel", "result");
    for (int op = 0; op < OP_COUNT; op++)
        if (!run_op(&dd, &c, &h, op, dev, times)) ok = 0;

done:
    for (size_t i = 0; i < 5; i++)
        if (*bufs[i]) clReleaseMemObject(*bufs[i]);
    host_free(&h);
    free(times);
    clnorm_session_destroy(s);
    printf("%s\n", ok ? "all passed" : "FAILED");
    return ok ? TOOL_OK : TOOL_FAIL;
}

/* fault_test: runs clnorm through every OpenCL failure point of a set of scenarios,
   with the failures injected by clnorm_faultshim (LD_PRELOAD):

     LD_PRELOAD=build/tests/reliability/libclnorm_faultshim.so \
         build/tests/reliability/clnorm_fault_test [--device SPEC] [--verbose]

   For each scenario (session creation, each host-array function, device calls with
   split plans of two and three kernels, warm-up, the rows == 0 marker, a call with a
   warm cache, a softmax over two column shards) it counts the library's calls of every
   interceptable OpenCL function, then for every one of those calls and two error codes
   (an allocation failure, or a build failure for clBuildProgram, and
   CL_INVALID_OPERATION) makes exactly that call fail and checks:
   - the call returns the status API.md documents for that error (OUT_OF_RESOURCES
     for allocation failures, BUILD_FAILED for a failed build, OPENCL_ERROR else);
   - clnorm_last_error() names the failed OpenCL function and the error (and holds
     the build log section for a build);
   - nothing leaks: once the caller has released its objects and the cache is
     released, the live references of contexts, queues, programs, kernels, buffers and
     events are what they were before the scenario (host memory: run it under ASan);
   - the library is usable: the same scenario, run again without a failure, succeeds
     with correct results.
   --quick (for the sanitizer build, where each build of the program is slow): the
   allocation/build error only, and the next-call check after each function's last
   failure point only.
   Exit 0 all passed, 1 a failure, 77 the shim is not loaded. */
#define _GNU_SOURCE
#include "rel.h"
#include "clnorm_advanced.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the shim's control functions ------------------------------------------------- */
static struct {
    int (*arm)(const char *, long, cl_int);
    long (*calls)(const char *);
    void (*reset)(void);
    void (*live)(long[6]);
    long (*fired)(void);
    const char *(*function)(int);
} shim;
static const char *const live_names[6] = {"contexts", "queues", "programs", "kernels",
                                          "buffers", "events"};

static int load_shim(void)
{
#define LOAD(field, name)                                                              \
    *(void **)(&shim.field) = dlsym(RTLD_DEFAULT, name);                               \
    if (!shim.field) return 0
    LOAD(arm, "clnorm_fault_arm");
    LOAD(calls, "clnorm_fault_calls");
    LOAD(reset, "clnorm_fault_reset_calls");
    LOAD(live, "clnorm_fault_live");
    LOAD(fired, "clnorm_fault_fired");
    LOAD(function, "clnorm_fault_function");
#undef LOAD
    return 1;
}

static const char *cl_err_name(cl_int e)
{
    switch (e) {
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL: return "CL_INVALID_KERNEL";
    default: return "?";
    }
}

/* The realistic error of each function, as a driver reports running out of something. */
static cl_int natural_error(const char *fn)
{
    if (!strcmp(fn, "clBuildProgram")) return CL_BUILD_PROGRAM_FAILURE;
    if (!strcmp(fn, "clCreateBuffer")) return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    if (!strcmp(fn, "clCreateContext") || !strcmp(fn, "clCreateProgramWithSource") ||
        !strcmp(fn, "clEnqueueMarkerWithWaitList"))
        return CL_OUT_OF_HOST_MEMORY;
    if (!strcmp(fn, "clSetKernelArg")) return CL_INVALID_ARG_SIZE;
    if (!strcmp(fn, "clGetKernelWorkGroupInfo")) return CL_INVALID_KERNEL;
    return CL_OUT_OF_RESOURCES;
}

/* API.md: OUT_OF_RESOURCES "host or device allocation failed", BUILD_FAILED "kernel
   compilation failed", OPENCL_ERROR "any other OpenCL failure". */
static clnorm_status documented_status(const char *fn, cl_int e)
{
    if (e == CL_OUT_OF_RESOURCES || e == CL_OUT_OF_HOST_MEMORY ||
        e == CL_MEM_OBJECT_ALLOCATION_FAILURE)
        return CLNORM_OUT_OF_RESOURCES;
    if (e == CL_BUILD_PROGRAM_FAILURE && !strcmp(fn, "clBuildProgram")) return CLNORM_BUILD_FAILED;
    return CLNORM_OPENCL_ERROR;
}

/* ---- scenarios ---------------------------------------------------------------------- */
enum { R = 3, C = 100 };
typedef struct fx {
    const char *spec;
    clnorm_session *s;
    cl_context ctx;
    cl_command_queue q;
    float x[R * C], x2[R * C], g[C], y[R * C], res[R * C], m[R], l[R];
    uint16_t xh[R * C], rh[R * C], gh[C], yh[R * C];
    cl_mem bx, by, bg, bm, bs;
} fx;

typedef struct scenario {
    const char *name;
    void (*env)(void);            /* environment for the scenario, or NULL */
    int warm;                     /* run the act once before arming (cache warm) */
    clnorm_status (*act)(fx *f);  /* the library calls under test */
    int (*verify)(fx *f);         /* after a successful act: 1 when results are right */
} scenario;

static unsigned long checks, failures;
static int verbose, quick;
#define FAIL(...)                                                                      \
    do {                                                                               \
        failures++;                                                                    \
        printf("FAIL: " __VA_ARGS__);                                                  \
        printf("\n");                                                              \
        fflush(stdout);                                                                \
    } while (0)

static cl_mem mkbuf(fx *f, size_t bytes, const void *init)
{
    cl_int err;
    return clCreateBuffer(f->ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                          (void *)init, &err);
}

static void caller_buffers(fx *f)
{
    f->bx = mkbuf(f, sizeof f->x, f->x);
    f->by = mkbuf(f, sizeof f->y, NULL);
    f->bg = mkbuf(f, sizeof f->g, f->g);
    f->bm = mkbuf(f, R * sizeof(float), NULL);
    f->bs = mkbuf(f, R * sizeof(float), NULL);
}

static void caller_release(fx *f)
{
    cl_mem *all[] = {&f->bx, &f->by, &f->bg, &f->bm, &f->bs};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (*all[i]) { clReleaseMemObject(*all[i]); *all[i] = NULL; }
}

/* Split plans of 3 slices in groups of 8 for this thread's calls; force_clear goes
   back to the library's plans. */
static void force_split(void)
{
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.variant = CLNORM_VARIANT_SPLIT;
    h.split = 3;
    h.work_group = 8;
    clnorm_set_thread_hints(&h);
}

static void force_clear(void) { clnorm_set_thread_hints(NULL); }

static int close_all(const float *got, const double *want, size_t n, clnorm_dtype dt)
{
    double rel, abs;
    rel_tolerance(dt, &rel, &abs);
    for (size_t i = 0; i < n; i++)
        if (!rel_close(got[i], want[i], rel, abs)) return 0;
    return 1;
}

static clnorm_status act_session(fx *f)
{
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(f->spec, &s);
    if (st == CLNORM_SUCCESS && !s) return CLNORM_OPENCL_ERROR;
    if (st != CLNORM_SUCCESS && s) FAIL("session_create failed but set *out");
    clnorm_session_destroy(s);
    return st;
}

static clnorm_status act_rms_host(fx *f)
{
    return clnorm_rmsnorm_host(f->s, CLNORM_F32, R, C, f->x, f->g, f->y, 1e-5f);
}

static int verify_rms_host(fx *f)
{
    double want[R * C];
    rel_ref_rmsnorm(f->x, R, C, f->g, 1e-5f, want);
    return close_all(f->y, want, R * C, CLNORM_F32);
}

static clnorm_status act_add_host(fx *f)
{
    rel_pack(CLNORM_F16, f->x, f->xh, R * C);
    rel_pack(CLNORM_F16, f->res, f->rh, R * C);
    rel_pack(CLNORM_F16, f->g, f->gh, C);
    return clnorm_add_rmsnorm_host(f->s, CLNORM_F16, R, C, f->xh, f->rh, 1, f->gh, f->yh, 1e-5f);
}

static int verify_add_host(fx *f)
{
    float x[R * C], r[R * C], g[C], h[R * C], y[R * C], hr[R * C];
    double want[R * C], wh[R * C];
    uint16_t xh[R * C], rh[R * C], gh[C];
    rel_pack(CLNORM_F16, f->x, xh, R * C);
    rel_pack(CLNORM_F16, f->res, rh, R * C);
    rel_pack(CLNORM_F16, f->g, gh, C);
    rel_unpack(CLNORM_F16, xh, x, R * C);
    rel_unpack(CLNORM_F16, rh, r, R * C);
    rel_unpack(CLNORM_F16, gh, g, C);
    for (int i = 0; i < R * C; i++) {
        h[i] = rel_round(CLNORM_F16, x[i] + r[i]);
        wh[i] = h[i];
    }
    rel_ref_rmsnorm(h, R, C, g, 1e-5f, want);
    rel_unpack(CLNORM_F16, f->yh, y, R * C);
    rel_unpack(CLNORM_F16, f->rh, hr, R * C);
    return close_all(y, want, R * C, CLNORM_F16) && close_all(hr, wh, R * C, CLNORM_F16);
}

static clnorm_status act_stats_host(fx *f)
{
    rel_pack(CLNORM_BF16, f->x, f->xh, R * C);
    return clnorm_softmax_stats_host(f->s, CLNORM_BF16, R, C, f->xh, f->m, f->l);
}

static int verify_stats(const float *x, const float *m, const float *l, clnorm_dtype dt)
{
    float xr[R * C];
    double wm[R], wl[R];
    for (int i = 0; i < R * C; i++) xr[i] = rel_round(dt, x[i]);
    rel_ref_stats(xr, R, C, wm, wl);
    return close_all(m, wm, R, CLNORM_F32) && close_all(l, wl, R, CLNORM_F32);
}

static int verify_stats_host(fx *f) { return verify_stats(f->x, f->m, f->l, CLNORM_BF16); }

/* A column shard written with given statistics: the rounded rows' own, in float32. */
static clnorm_status act_apply_host(fx *f)
{
    float xr[R * C];
    double wm[R], wl[R];
    rel_pack(CLNORM_BF16, f->x, f->xh, R * C);
    for (int i = 0; i < R * C; i++) xr[i] = rel_round(CLNORM_BF16, f->x[i]);
    rel_ref_stats(xr, R, C, wm, wl);
    for (int r = 0; r < R; r++) f->m[r] = (float)wm[r], f->l[r] = (float)wl[r];
    return clnorm_softmax_apply_host(f->s, CLNORM_BF16, R, C, f->xh, f->m, f->l, f->yh);
}

static int verify_apply_host(fx *f)
{
    float xr[R * C], y[R * C];
    double want[R * C];
    for (int i = 0; i < R * C; i++) xr[i] = rel_round(CLNORM_BF16, f->x[i]);
    rel_ref_softmax(xr, R, C, want);
    rel_unpack(CLNORM_BF16, f->yh, y, R * C);
    return close_all(y, want, R * C, CLNORM_BF16);
}

/* Device calls: enqueue with an event, wait, release it. */
static clnorm_status finish(clnorm_status st, const cl_event *evp)
{
    cl_event ev = *evp; /* read after the call (argument order is unspecified) */
    if (st == CLNORM_SUCCESS) {
        if (!ev) {
            FAIL("a successful call handed out no event");
            return CLNORM_OPENCL_ERROR;
        }
        cl_int err = clWaitForEvents(1, &ev);
        if (err != CL_SUCCESS) {
            FAIL("the event of a successful call failed: clWaitForEvents gave %d", (int)err);
            st = CLNORM_OPENCL_ERROR;
        }
        clReleaseEvent(ev);
    } else if (ev) {
        FAIL("a failed call handed out an event");
        clReleaseEvent(ev);
    }
    return st;
}

static clnorm_status act_softmax(fx *f, clnorm_softmax_algo algo)
{
    cl_event ev = NULL;
    clnorm_matrix vx = {f->bx, 0, 0}, vy = {f->by, 0, 0};
    clnorm_status st = clnorm_softmax(f->q, CLNORM_F32, R, C, vx, vy, algo, 0, NULL, &ev);
    return finish(st, &ev);
}
static clnorm_status act_sm3(fx *f) { return act_softmax(f, CLNORM_SOFTMAX_THREE_PASS); }
static clnorm_status act_smo(fx *f) { return act_softmax(f, CLNORM_SOFTMAX_ONLINE); }

/* Two column shards of the matrix on the scenario's queue: each shard's statistics and
   their reads, the merged statistics' writes and each shard's write. */
static clnorm_status act_sharded(fx *f)
{
    const clnorm_shard sh[2] = {
        {f->q, 37, {f->bx, 0, C}, {f->by, 0, C}},
        {f->q, C - 37, {f->bx, 37, C}, {f->by, 37, C}},
    };
    return clnorm_softmax_sharded(CLNORM_F32, R, 2, sh, f->m, f->l);
}

static int verify_softmax(fx *f)
{
    double want[R * C];
    if (clEnqueueReadBuffer(f->q, f->by, CL_TRUE, 0, sizeof f->y, f->y, 0, NULL, NULL))
        return 0;
    rel_ref_softmax(f->x, R, C, want);
    return close_all(f->y, want, R * C, CLNORM_F32);
}

static clnorm_status act_stats_dev(fx *f)
{
    cl_event ev = NULL;
    clnorm_matrix vx = {f->bx, 0, 0};
    clnorm_status st = clnorm_softmax_stats(f->q, CLNORM_F32, R, C, vx, f->bm, f->bs, 0, NULL, &ev);
    return finish(st, &ev);
}

static int verify_stats_dev(fx *f)
{
    if (clEnqueueReadBuffer(f->q, f->bm, CL_TRUE, 0, sizeof f->m, f->m, 0, NULL, NULL) ||
        clEnqueueReadBuffer(f->q, f->bs, CL_TRUE, 0, sizeof f->l, f->l, 0, NULL, NULL))
        return 0;
    return verify_stats(f->x, f->m, f->l, CLNORM_F32);
}

static clnorm_status act_rms_dev(fx *f)
{
    cl_event ev = NULL;
    clnorm_matrix vx = {f->bx, 0, 0}, vy = {f->by, 0, 0};
    clnorm_status st = clnorm_rmsnorm(f->q, CLNORM_F32, R, C, vx, f->bg, vy, 1e-5f, 0, NULL, &ev);
    return finish(st, &ev);
}

static int verify_rms_dev(fx *f)
{
    if (clEnqueueReadBuffer(f->q, f->by, CL_TRUE, 0, sizeof f->y, f->y, 0, NULL, NULL)) return 0;
    return verify_rms_host(f);
}

static clnorm_status act_warmup(fx *f) { return clnorm_warmup(f->q); }

static clnorm_status act_noop(fx *f)
{
    cl_event ev = NULL;
    clnorm_matrix vx = {f->bx, 0, 0}, vy = {f->by, 0, 0};
    clnorm_status st = clnorm_rmsnorm(f->q, CLNORM_F32, 0, C, vx, NULL, vy, 1e-5f, 0, NULL, &ev);
    return finish(st, &ev);
}

static const scenario scenarios[] = {
    {"session create", NULL, 0, act_session, NULL},
    {"rmsnorm_host f32", NULL, 0, act_rms_host, verify_rms_host},
    {"add_rmsnorm_host f16", NULL, 0, act_add_host, verify_add_host},
    {"softmax_stats_host bf16", NULL, 0, act_stats_host, verify_stats_host},
    {"softmax_apply_host bf16", NULL, 0, act_apply_host, verify_apply_host},
    {"softmax 3-pass split (3 kernels)", force_split, 0, act_sm3, verify_softmax},
    {"softmax online split (2 kernels)", force_split, 0, act_smo, verify_softmax},
    {"softmax_stats split", force_split, 0, act_stats_dev, verify_stats_dev},
    {"rmsnorm split", force_split, 0, act_rms_dev, verify_rms_dev},
    {"rmsnorm stream", NULL, 0, act_rms_dev, verify_rms_dev},
    {"softmax online, warm cache", NULL, 1, act_smo, verify_softmax},
    {"warmup", NULL, 0, act_warmup, NULL},
    {"rows == 0 with an event", NULL, 0, act_noop, NULL},
    {"softmax_sharded, two shards", NULL, 0, act_sharded, verify_softmax},
};

/* ---- the driver ----------------------------------------------------------------------- */
static void live_now(long out[6]) { shim.live(out); }

static int live_same(const long a[6], const long b[6], const char *what)
{
    int ok = 1;
    for (int i = 0; i < 6; i++)
        if (a[i] != b[i]) {
            FAIL("%s: %s live references %ld -> %ld", what, live_names[i], a[i], b[i]);
            ok = 0;
        }
    return ok;
}

/* One run of a scenario: prepare, (warm up), arm, act, verify, clean up. counts, when
   not NULL, receives the act's calls of every failable function. Returns the act's
   status. */
static clnorm_status run(fx *f, const scenario *sc, const char *fn, long nth, cl_int err,
                         int *verified, long *counts, int *nf)
{
    if (sc->env) sc->env();
    caller_buffers(f);
    if (sc->warm) {
        clnorm_status st = sc->act(f);
        if (st) FAIL("%s: warm-up run: %s: %s", sc->name, clnorm_status_string(st),
                     clnorm_last_error());
    }
    shim.reset();
    if (fn) shim.arm(fn, nth, err);
    clnorm_status st = sc->act(f);
    shim.arm(NULL, 0, 0);
    if (counts) {
        const char *name;
        for (*nf = 0; *nf < 32 && (name = shim.function(*nf)) != NULL; (*nf)++)
            counts[*nf] = shim.calls(name);
    }
    *verified = st == CLNORM_SUCCESS && (!sc->verify || sc->verify(f));
    caller_release(f);
    force_clear();
    return st;
}

static void run_scenario(fx *f, const scenario *sc, unsigned long *points)
{
    long base[6], after[6];
    int verified;
    double t0 = rel_now();
    /* The count run: which calls the scenario makes. */
    clnorm_release_cache(NULL);
    live_now(base);
    shim.reset();
    long counts[32] = {0};
    int nf = 0;
    clnorm_status st = run(f, sc, NULL, 0, 0, &verified, counts, &nf);
    checks++;
    if (st || !verified) {
        FAIL("%s: the run without failures: %s, results %s: %s", sc->name,
             clnorm_status_string(st), verified ? "right" : "wrong", clnorm_last_error());
        return;
    }
    clnorm_release_cache(NULL);
    live_now(after);
    checks++;
    live_same(base, after, sc->name);
    unsigned long before = *points;
    for (int i = 0; i < nf; i++) {
        const char *fn = shim.function(i);
        long n = counts[i];
        for (long k = 1; k <= n; k++) {
            cl_int errs[2] = {natural_error(fn), CL_INVALID_OPERATION};
            for (int e = 0; e < (quick ? 1 : 2); e++) {
                char what[256];
                snprintf(what, sizeof what, "%s: %s call %ld of %ld failing with %s", sc->name,
                         fn, k, n, cl_err_name(errs[e]));
                clnorm_release_cache(NULL);
                live_now(base);
                long fired0 = shim.fired();
                st = run(f, sc, fn, k, errs[e], &verified, NULL, NULL);
                long fired = shim.fired() - fired0;
                char msg[4096];
                snprintf(msg, sizeof msg, "%s", clnorm_last_error());
                (*points)++;
                checks += 4;
                if (fired != 1) {
                    FAIL("%s: the shim fired %ld times (the call did not happen?)", what, fired);
                    continue;
                }
                clnorm_status want = documented_status(fn, errs[e]);
                if (st != want)
                    FAIL("%s: returned %s, expected %s; message: \"%s\"", what,
                         clnorm_status_string(st), clnorm_status_string(want), msg);
                if (!strstr(msg, fn) || !strstr(msg, cl_err_name(errs[e])))
                    FAIL("%s: the message does not name %s and %s: \"%s\"", what, fn,
                         cl_err_name(errs[e]), msg);
                if (want == CLNORM_BUILD_FAILED && !strstr(msg, "build log"))
                    FAIL("%s: no build log section in \"%s\"", what, msg);
                clnorm_release_cache(NULL);
                live_now(after);
                live_same(base, after, what);
                /* The next call works (--quick: after the last failure point only). */
                if (quick && k < n) continue;
                st = run(f, sc, NULL, 0, 0, &verified, NULL, NULL);
                if (st || !verified)
                    FAIL("%s: the next call: %s, results %s: %s", what, clnorm_status_string(st),
                         verified ? "right" : "wrong", clnorm_last_error());
                if (verbose) printf("  ok %s -> %s\n", what, clnorm_status_string(want));
            }
        }
    }
    printf("  %-36s %3lu failure points, %.1f s\n", sc->name, *points - before, rel_now() - t0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static fx f;
    const char *only = NULL;
    f.spec = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) f.spec = argv[++i];
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else {
            fprintf(stderr, "usage: %s [--device SPEC] [--only SCENARIO] [--quick] [--verbose]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!load_shim()) {
        printf("SKIP: clnorm_faultshim is not loaded (LD_PRELOAD=.../libclnorm_faultshim.so)\n");
        return 77;
    }
    rel_configure("off", 1);
    force_clear();
    uint64_t seed = 99;
    for (int i = 0; i < R * C; i++) {
        f.x[i] = (float)(rel_unit(&seed) * 8.0 - 4.0);
        f.res[i] = (float)(rel_unit(&seed) * 2.0 - 1.0);
    }
    for (int i = 0; i < C; i++) f.g[i] = (float)(0.5 + rel_unit(&seed));
    clnorm_status st = clnorm_session_create(f.spec, &f.s);
    if (st) {
        printf("FAIL: session: %s: %s\n", clnorm_status_string(st), clnorm_last_error());
        return 1;
    }
    f.ctx = clnorm_session_context(f.s);
    f.q = clnorm_session_queue(f.s);
    printf("fault_test on \"%s\"\n", clnorm_session_device_name(f.s));
    /* The device profile (probed once per process, with its own tolerated failures) is
       made before any failure is injected. */
    if ((st = clnorm_warmup(f.q))) {
        printf("FAIL: warmup: %s\n", clnorm_last_error());
        return 1;
    }
    double t0 = rel_now();
    unsigned long points = 0;
    for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
        if (!only || strstr(scenarios[i].name, only)) run_scenario(&f, &scenarios[i], &points);
    clnorm_session_destroy(f.s);
    clnorm_release_cache(NULL);
    printf("fault_test: %zu scenarios, %lu injected failures, %lu checks, %lu failures, %.1f s\n",
           sizeof scenarios / sizeof scenarios[0], points, checks, failures, rel_now() - t0);
    return failures ? 1 : 0;
}

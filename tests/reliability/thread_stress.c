/* thread_stress: every kind of public call from many threads at once, for
   ThreadSanitizer (CLNORM_SANITIZE=thread) beside the suite's `threads` case. Threads
   of four kinds run together:
   - own session: create, warm up, each host-array operation in each dtype (results
     checked), destroy (which releases that context's cache);
   - shared queue: device-buffer operations on one session's queue, with events;
   - own queue on the shared context: the same on a queue of the thread's own;
   - errors: refused calls whose messages carry this thread's own values, checked to
     come back from clnorm_last_error() of this thread only; the pure functions.
     clnorm_thread_stress [--device SPEC] [--threads N] [--iterations K]
   exit 0 when every call behaved; 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include "rel.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *spec;
static clnorm_session *shared;
static int iterations = 12;
static atomic_long ops, failures;

#define FAIL(...)                                                                      \
    do {                                                                               \
        atomic_fetch_add(&failures, 1);                                                \
        char m_[1024];                                                                 \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                          \
        printf("FAIL: %s\n", m_);                                                      \
        fflush(stdout);                                                                \
    } while (0)

enum { R = 5, C = 77 };

static int softmax_ok(const float *y, clnorm_dtype dt)
{
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int c = 0; c < C; c++) s += y[r * C + c];
        if (!(fabs(s - 1.0) < (dt == CLNORM_F32 ? 1e-4 : 0.05))) return 0;
    }
    return 1;
}

static void own_session(int id, uint64_t *seed)
{
    for (int it = 0; it < iterations; it++) {
        clnorm_session *s = NULL;
        clnorm_status st = clnorm_session_create(spec, &s);
        if (st) { FAIL("thread %d: session: %s", id, clnorm_last_error()); return; }
        if (it == 0 && (st = clnorm_warmup(clnorm_session_queue(s))))
            FAIL("thread %d: warmup: %s", id, clnorm_last_error());
        clnorm_dtype dt = (clnorm_dtype)((it + id) % 3);
        float x[R * C], y[R * C], m[R], l[R], rf[R * C];
        uint16_t xh[R * C], yh[R * C], rh[R * C];
        for (int i = 0; i < R * C; i++) x[i] = (float)(rel_unit(seed) * 6 - 3);
        /* 16-bit copies only: float32 calls read x itself, and xh holds 16-bit elements. */
        if (dt != CLNORM_F32) rel_pack(dt, x, xh, R * C);
        const void *in = dt == CLNORM_F32 ? (const void *)x : xh;
        void *out = dt == CLNORM_F32 ? (void *)y : yh;
        if ((st = clnorm_softmax_host(s, dt, R, C, in, out, CLNORM_SOFTMAX_AUTO)))
            FAIL("thread %d: softmax_host: %s", id, clnorm_last_error());
        else {
            if (dt != CLNORM_F32) rel_unpack(dt, yh, y, R * C);
            if (!softmax_ok(y, dt)) FAIL("thread %d: softmax_host %s: rows do not sum to 1", id,
                                         rel_dtype_name(dt));
        }
        if ((st = clnorm_rmsnorm_host(s, dt, R, C, in, NULL, out, 1e-6f)))
            FAIL("thread %d: rmsnorm_host: %s", id, clnorm_last_error());
        if ((st = clnorm_softmax_stats_host(s, dt, R, C, in, m, l)))
            FAIL("thread %d: softmax_stats_host: %s", id, clnorm_last_error());
        /* The residual of its own: it may share no memory with the output. */
        memcpy(rh, xh, sizeof rh);
        memcpy(rf, x, sizeof rf);
        if ((st = clnorm_add_rmsnorm_host(s, dt, R, C, in, dt == CLNORM_F32 ? (void *)rf : rh, 1,
                                          NULL, out, 1e-6f)))
            FAIL("thread %d: add_rmsnorm_host: %s", id, clnorm_last_error());
        atomic_fetch_add(&ops, 5);
        clnorm_session_destroy(s);
    }
}

static void queue_ops(int id, cl_command_queue q, uint64_t *seed)
{
    cl_context ctx = clnorm_session_context(shared);
    cl_int err;
    float x[R * C], y[R * C];
    for (int i = 0; i < R * C; i++) x[i] = (float)(rel_unit(seed) * 6 - 3);
    cl_mem bx = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    cl_mem by = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof y, NULL, &err);
    cl_mem bm = clCreateBuffer(ctx, CL_MEM_READ_WRITE, R * 4, NULL, &err);
    cl_mem bs = clCreateBuffer(ctx, CL_MEM_READ_WRITE, R * 4, NULL, &err);
    if (!bx || !by || !bm || !bs) { FAIL("thread %d: buffers", id); return; }
    clnorm_matrix vx = {bx, 0, 0}, vy = {by, 0, 0};
    for (int it = 0; it < iterations * 3; it++) {
        cl_event ev = NULL;
        clnorm_status st;
        int k = (it + id) % 4;
        clnorm_dtype dt = CLNORM_F32;
        if (k == 0) st = clnorm_softmax(q, dt, R, C, vx, vy, CLNORM_SOFTMAX_ONLINE, 0, NULL, &ev);
        else if (k == 1) st = clnorm_softmax(q, dt, R, C, vx, vy, CLNORM_SOFTMAX_THREE_PASS, 0, NULL, &ev);
        else if (k == 2) st = clnorm_rmsnorm(q, dt, R, C, vx, NULL, vy, 1e-6f, 0, NULL, &ev);
        else st = clnorm_softmax_stats(q, dt, R, C, vx, bm, bs, 0, NULL, &ev);
        if (st) { FAIL("thread %d: op %d: %s", id, k, clnorm_last_error()); continue; }
        if (clEnqueueReadBuffer(q, by, CL_TRUE, 0, sizeof y, y, 1, &ev, NULL) != CL_SUCCESS)
            FAIL("thread %d: read", id);
        else if (k <= 1 && !softmax_ok(y, dt)) FAIL("thread %d: softmax rows do not sum to 1", id);
        clReleaseEvent(ev);
        atomic_fetch_add(&ops, 1);
    }
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseMemObject(bm);
    clReleaseMemObject(bs);
}

static void errors(int id)
{
    cl_command_queue q = clnorm_session_queue(shared);
    cl_context ctx = clnorm_session_context(shared);
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    clnorm_matrix v = {b, 0, 0};
    for (int it = 0; it < iterations * 20; it++) {
        char want[64];
        float eps = -(float)(id * 1000 + it + 1);
        clnorm_status st = clnorm_rmsnorm(q, CLNORM_F32, 2, 8, v, NULL, v, eps, 0, NULL, NULL);
        snprintf(want, sizeof want, "eps = %g", (double)eps);
        if (st != CLNORM_INVALID_ARGUMENT || !strstr(clnorm_last_error(), want))
            FAIL("thread %d: eps %g: %s, message \"%s\"", id, (double)eps,
                 clnorm_status_string(st), clnorm_last_error());
        size_t off = 100000u + (size_t)id * 1000u + (size_t)it;
        clnorm_matrix vo = {b, off, 0};
        st = clnorm_softmax(q, CLNORM_F32, 3, 5, vo, vo, CLNORM_SOFTMAX_AUTO, 0, NULL, NULL);
        snprintf(want, sizeof want, "offset %zu", off);
        if (st != CLNORM_OUT_OF_BOUNDS || !strstr(clnorm_last_error(), want))
            FAIL("thread %d: offset %zu: %s, message \"%s\"", id, off, clnorm_status_string(st),
                 clnorm_last_error());
        char bad[64];
        snprintf(bad, sizeof bad, "no-such-device-%d-%d", id, it);
        clnorm_session *s = NULL;
        st = clnorm_session_create(bad, &s);
        if (st != CLNORM_DEVICE_NOT_FOUND || s || !strstr(clnorm_last_error(), bad))
            FAIL("thread %d: spec %s: %s, message \"%s\"", id, bad, clnorm_status_string(st),
                 clnorm_last_error());
        float m, l;
        clnorm_stats_merge(1.0f, 2.0f, (float)it, 1.0f, &m, &l);
        if (strcmp(clnorm_version(), "") == 0 ||
            strcmp(clnorm_status_string(CLNORM_OUT_OF_BOUNDS), "CLNORM_OUT_OF_BOUNDS") != 0)
            FAIL("thread %d: pure functions", id);
        atomic_fetch_add(&ops, 4);
    }
    clReleaseMemObject(b);
}

typedef struct worker { int id; uint64_t seed; } worker;

static void *work(void *arg)
{
    worker *w = arg;
    switch (w->id % 4) {
    case 0: own_session(w->id, &w->seed); break;
    case 1: queue_ops(w->id, clnorm_session_queue(shared), &w->seed); break;
    case 2: {
        cl_int err;
        cl_device_id dev;
        clGetCommandQueueInfo(clnorm_session_queue(shared), CL_QUEUE_DEVICE, sizeof dev, &dev, NULL);
        cl_command_queue q = clCreateCommandQueue(clnorm_session_context(shared), dev, 0, &err);
        if (!q) { FAIL("thread %d: queue", w->id); break; }
        queue_ops(w->id, q, &w->seed);
        clReleaseCommandQueue(q);
        break;
    }
    default: errors(w->id); break;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int nthreads = 8;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) spec = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nthreads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--device SPEC] [--threads N] [--iterations K]\n", argv[0]);
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > 64 || iterations < 1) return 2;
    rel_configure("off", 0);
    if (clnorm_session_create(spec, &shared)) {
        printf("FAIL: session: %s\n", clnorm_last_error());
        return 1;
    }
    double t0 = rel_now();
    pthread_t th[64];
    worker ws[64];
    for (int i = 0; i < nthreads; i++) {
        ws[i] = (worker){i, 0x1234567ull * (uint64_t)(i + 1)};
        if (pthread_create(&th[i], NULL, work, &ws[i])) {
            printf("FAIL: pthread_create\n");
            return 1;
        }
    }
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    clnorm_session_destroy(shared);
    clnorm_release_cache(NULL);
    printf("thread_stress: %d threads, %ld calls, %ld failures, %.1f s\n", nthreads,
           atomic_load(&ops), atomic_load(&failures), rel_now() - t0);
    return atomic_load(&failures) ? 1 : 0;
}

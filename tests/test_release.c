/* release_race: clnorm_release_cache(ctx) and clnorm_release_cache(NULL) in a loop on
   one thread while 8 others run every operation in every dtype on the same context
   (the session's queue, in-order queues and out-of-order queues of their own, split
   plans among them) and check every result: no call may fail, lose or corrupt a
   result because the programs, kernels or scratch buffers it holds were released. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { NTHREADS = 8, OPS_PER_THREAD = 6, OP_ADD_RMSNORM = OP_COUNT };

static atomic_int workers_left, in_call;

/* clnorm_add_rmsnorm of a random problem on q, checked against float64 RMSNorm of
   the rounded x + residual; the residual is updated in place. */
static void check_add_rmsnorm(rng *r, cl_command_queue q, clnorm_dtype dt, size_t rows,
                              size_t cols)
{
    const size_t n = rows * cols, es = dt_size(dt);
    float *x = malloc(n * sizeof *x), *res = malloc(n * sizeof *res), *h = malloc(n * sizeof *h);
    float *y = malloc(n * sizeof *y);
    double *want = malloc(n * sizeof *want);
    unsigned char *bx = malloc(n * es), *br = malloc(n * es), *by = malloc(n * es);
    cl_mem mx = NULL, mr = NULL, my = NULL;
    if (!CHECK(x && res && h && y && want && bx && br && by, "out of host memory")) goto done;
    gen_rows(r, x, rows, cols);
    for (size_t i = 0; i < n; i++) res[i] = (float)rng_range(r, -2, 2);
    dt_pack(dt, x, bx, n);
    dt_pack(dt, res, br, n);
    dt_unpack(dt, bx, x, n);
    dt_unpack(dt, br, res, n);
    for (size_t i = 0; i < n; i++) h[i] = rnd(dt, x[i] + res[i]);
    ref_rmsnorm(h, rows, cols, NULL, 1e-5f, want);
    dt_fill_bits(dt, by, n, poison_of(dt));
    mx = t_buffer(T.ctx, n * es, bx);
    mr = t_buffer(T.ctx, n * es, br);
    my = t_buffer(T.ctx, n * es, by);
    if (!CHECK(mx && mr && my, "buffers of %zu bytes", n * es)) goto done;
    clnorm_matrix vx = {mx, 0, 0}, vr = {mr, 0, 0}, vy = {my, 0, 0};
    if (!CHECK_ST(clnorm_add_rmsnorm(q, dt, rows, cols, vx, vr, 1, NULL, vy, 1e-5f, 0, NULL,
                                     NULL),
                  CLNORM_SUCCESS))
        goto done;
    /* An out-of-order queue's read would not wait for the kernel. */
    if (!CHECK_CL(clFinish(q)) || !t_read(q, my, n * es, by) || !t_read(q, mr, n * es, br))
        goto done;
    dt_unpack(dt, by, y, n);
    char label[96];
    snprintf(label, sizeof label, "add_rmsnorm %s %zux%zu", dt_name(dt), rows, cols);
    COMPARE(label, y, want, rows, cols, tol_rel(dt, cols), tol_abs(dt));
    /* The updated residual is h, bit for bit. */
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += get_el(br, i, es) != pack1(dt, h[i]);
    CHECK(bad == 0, "%s: %zu residual elements differ from x + residual", label, bad);
done:
    if (mx) clReleaseMemObject(mx);
    if (mr) clReleaseMemObject(mr);
    if (my) clReleaseMemObject(my);
    free(x), free(res), free(h), free(y), free(want), free(bx), free(br), free(by);
}

typedef struct worker {
    int id, ops_done;
    rng r;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    /* Threads 0-1 share the session's queue, 2-4 have in-order queues of their own
       (scratch bound to the queue), 5-7 out-of-order ones (pooled scratch returned by
       callbacks) where the device has them. */
    cl_command_queue q = w->id < 2 ? T.q : t_new_queue(T.ctx, T.dev, w->id >= 5);
    /* Devices without out-of-order queues (Rusticl) get in-order ones. */
    if (!q && w->id >= 5) q = t_new_queue(T.ctx, T.dev, 0);
    if (!CHECK(q != NULL, "thread %d: no queue", w->id)) goto out;
    for (int i = 0; i < OPS_PER_THREAD; i++) {
        const int op = (int)rng_below(&w->r, OP_COUNT + 1);
        const clnorm_dtype dt = (clnorm_dtype)rng_below(&w->r, 3);
        /* Every third call a split-sized row: two rows of 20k-70k elements. */
        const int split = rng_below(&w->r, 3) == 0;
        const size_t rows = split ? 1 + rng_below(&w->r, 2) : 1 + rng_below(&w->r, 40);
        const size_t cols = split ? 20000 + rng_below(&w->r, 50000) : 1 + rng_below(&w->r, 3000);
        atomic_fetch_add(&in_call, 1);
        if (op == OP_ADD_RMSNORM) {
            check_add_rmsnorm(&w->r, q, dt, rows, cols);
        } else {
            op_args a;
            float *x, *g;
            make_problem(&w->r, &a, (top)op, rows, cols, &x, &g);
            a.dt = dt;
            a.q = q;
            if (op != OP_STATS && rng_below(&w->r, 4) == 0) a.layout = LAYOUT_INPLACE;
            check_op(&a, CLNORM_SUCCESS);
            free(x);
            free(g);
        }
        atomic_fetch_sub(&in_call, 1);
        w->ops_done++;
    }
    if (q != T.q) clReleaseCommandQueue(q);
out:
    atomic_fetch_sub(&workers_left, 1);
    return NULL;
}

void test_release_race(void)
{
    worker ws[NTHREADS];
    pthread_t th[NTHREADS];
    const double t0 = t_now();
    const int before = t_failures();
    atomic_store(&workers_left, NTHREADS);
    atomic_store(&in_call, 0);
    for (int i = 0; i < NTHREADS; i++) {
        ws[i] = (worker){i, 0, rng_make(rng_u64(&R))};
        if (!CHECK(pthread_create(&th[i], NULL, work, &ws[i]) == 0, "pthread_create %d", i)) {
            th[i] = 0;
            atomic_fetch_sub(&workers_left, 1);
        }
    }
    /* Releases of the context and of everything, alternating, a few milliseconds
       apart, until the workers are done. */
    int releases = 0, during = 0;
    while (atomic_load(&workers_left) > 0) {
        struct timespec ts = {0, (long)(1000000 * (1 + rng_below(&R, 20)))};
        nanosleep(&ts, NULL);
        during += atomic_load(&in_call) > 0;
        clnorm_release_cache(releases % 2 ? NULL : T.ctx);
        releases++;
    }
    int done = 0;
    for (int i = 0; i < NTHREADS; i++) {
        if (th[i]) pthread_join(th[i], NULL);
        done += ws[i].ops_done;
    }
    CHECK(done == NTHREADS * OPS_PER_THREAD, "%d of %d operations ran", done,
          NTHREADS * OPS_PER_THREAD);
    CHECK(during > 0, "no release happened while a call was running (%d releases)", releases);
    NOTE("%d threads x %d operations, %d releases (%d during calls), %d failures, %.2f s",
         NTHREADS, OPS_PER_THREAD, releases, during, t_failures() - before, t_now() - t0);
    /* The library works on after the race. */
    clnorm_release_cache(NULL);
    op_args a;
    float *x, *g;
    make_problem(&R, &a, OP_SOFTMAX_AUTO, 3, 1000, &x, &g);
    check_op(&a, CLNORM_SUCCESS);
    free(x);
    free(g);
}

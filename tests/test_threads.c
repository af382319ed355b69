/* threads: 8 threads at once, each running random ops on random shapes and checking
   every result; all on the session's queue, then each on its own queue of the same
   context, then each with its own session; then the last two with operations run
   one at a time. */
#include "test.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { NTHREADS = 8, OPS_PER_THREAD = 12 };
enum { MODE_SHARED_QUEUE, MODE_OWN_QUEUE, MODE_OWN_SESSION };
static const char *mode_names[] = {"shared queue", "own queue", "own session"};

typedef struct worker {
    int mode, id;
    rng r;
    int ops_done;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    cl_command_queue q = T.q;
    clnorm_session *s = NULL;
    if (w->mode == MODE_OWN_QUEUE) {
        q = t_new_queue(T.ctx, T.dev, 0);
        if (!CHECK(q != NULL, "thread %d: clCreateCommandQueue", w->id)) return NULL;
    } else if (w->mode == MODE_OWN_SESSION) {
        if (!CHECK_ST(clnorm_session_create(T.spec, &s), CLNORM_SUCCESS)) return NULL;
        q = clnorm_session_queue(s);
        CHECK(!strcmp(clnorm_session_device_name(s), T.dev_name),
              "thread %d: session on \"%s\", expected \"%s\"", w->id,
              clnorm_session_device_name(s), T.dev_name);
    }
    for (int i = 0; i < OPS_PER_THREAD; i++) {
        top op = (top)rng_below(&w->r, OP_COUNT);
        size_t rows = 1 + rng_below(&w->r, 40);
        size_t cols = rng_below(&w->r, 8) ? 1 + rng_below(&w->r, 3000) : 5000 + rng_below(&w->r, 20000);
        op_args a;
        float *x, *g;
        make_problem(&w->r, &a, op, rows, cols, &x, &g);
        a.q = q;
        if (op != OP_STATS && rng_below(&w->r, 4) == 0) a.layout = LAYOUT_INPLACE;
        check_op(&a, CLNORM_SUCCESS);
        free(x);
        free(g);
        w->ops_done++;
    }
    if (w->mode == MODE_OWN_QUEUE) clReleaseCommandQueue(q);
    clnorm_session_destroy(s);
    return NULL;
}

void test_threads(void)
{
    /* Last, the own-queue and own-session modes again with operations forced to run
       one at a time (serial.c, the default on PoCL), so that the cross-queue
       and cross-context waits run on every device. */
    for (int pass = 0; pass < 5; pass++) {
        int mode = pass < 3 ? pass : pass - 2;
        if (pass == 3) t_config("CLNORM_SERIAL", "1");
        worker ws[NTHREADS];
        pthread_t th[NTHREADS];
        double t0 = t_now();
        int before = t_failures(), done = 0;
        for (int i = 0; i < NTHREADS; i++) {
            ws[i] = (worker){mode, i, rng_make(rng_u64(&R)), 0};
            if (!CHECK(pthread_create(&th[i], NULL, work, &ws[i]) == 0, "pthread_create %d", i))
                th[i] = 0;
        }
        for (int i = 0; i < NTHREADS; i++)
            if (th[i]) pthread_join(th[i], NULL);
        for (int i = 0; i < NTHREADS; i++) done += ws[i].ops_done;
        CHECK(done == NTHREADS * OPS_PER_THREAD, "%s: %d of %d ops ran", mode_names[mode], done,
              NTHREADS * OPS_PER_THREAD);
        NOTE("%s%s: %d threads x %d ops, %d failures, %.2f s", mode_names[mode],
             pass >= 3 ? " (serial)" : "", NTHREADS, OPS_PER_THREAD, t_failures() - before,
             t_now() - t0);
    }
    t_env_restore();
}

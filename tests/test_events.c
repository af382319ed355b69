/* events: the returned event completes only after the whole operation, wait lists
   gate it (and it alone: an operation held back holds back no other), rows == 0 gives
   a marker, and event == NULL works; on the session's
   in-order queue and, where the device has one, an out-of-order queue (where the
   library must chain its own kernels). Results are read through a second queue, so
   only the event orders them. */
#include "test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct prob {
    op_args a;
    float *x, *g;
    cl_mem X, Y, G, M, L;
    size_t ybytes;
    uint32_t *poison;       /* image written to Y / M / L before each run */
} prob;

static const uint32_t POISON = 0x7FA5A5A5u;

static void prob_init(prob *p, top op, size_t rows, size_t cols)
{
    memset(p, 0, sizeof *p);
    make_problem(&R, &p->a, op, rows, cols, &p->x, &p->g);
    p->a.xld = p->a.yld = 0;
    p->X = t_buffer(T.ctx, rows * cols * 4, p->x);
    p->ybytes = (op == OP_STATS ? rows : rows * cols) * 4;
    p->poison = malloc(p->ybytes);
    for (size_t i = 0; i < p->ybytes / 4; i++) p->poison[i] = POISON;
    if (op == OP_STATS) {
        p->M = t_buffer(T.ctx, p->ybytes, p->poison);
        p->L = t_buffer(T.ctx, p->ybytes, p->poison);
    } else {
        p->Y = t_buffer(T.ctx, p->ybytes, p->poison);
    }
    if (p->g) p->G = t_buffer(T.ctx, cols * 4, p->g);
}

static void prob_free(prob *p)
{
    cl_mem ms[] = {p->X, p->Y, p->G, p->M, p->L};
    for (int i = 0; i < 5; i++) if (ms[i]) clReleaseMemObject(ms[i]);
    free(p->x), free(p->g), free(p->poison);
}

/* Re-poisons the outputs (blocking, on q2, which then has nothing pending). */
static void prob_poison(prob *p, cl_command_queue q2)
{
    cl_mem outs[] = {p->Y, p->M, p->L};
    for (int i = 0; i < 3; i++)
        if (outs[i])
            CHECK_CL(clEnqueueWriteBuffer(q2, outs[i], CL_TRUE, 0, p->ybytes, p->poison, 0, NULL, NULL));
}

static clnorm_status prob_enqueue(prob *p, cl_command_queue q, size_t rows, cl_uint nw,
                                  const cl_event *wl, cl_event *ev)
{
    const op_args *a = &p->a;
    clnorm_matrix xm = {p->X, 0, 0}, ym = {p->Y, 0, 0};
    switch (a->op) {
    case OP_RMSNORM:
        return clnorm_rmsnorm(q, CLNORM_F32, rows, a->cols, xm, p->G, ym, a->eps, nw, wl, ev);
    case OP_STATS:
        return clnorm_softmax_stats(q, CLNORM_F32, rows, a->cols, xm, p->M, p->L, nw, wl, ev);
    default:
        return clnorm_softmax(q, CLNORM_F32, rows, a->cols, xm, ym, op_algo(a->op), nw, wl, ev);
    }
}

/* Reads the outputs through q2 and checks them against the reference. */
static void prob_verify(prob *p, cl_command_queue q2, const char *what)
{
    op_out o = {0};
    int ok;
    if (p->a.op == OP_STATS) {
        o.m = malloc(p->ybytes), o.l = malloc(p->ybytes);
        ok = t_read(q2, p->M, p->ybytes, o.m) && t_read(q2, p->L, p->ybytes, o.l);
    } else {
        o.y = malloc(p->ybytes);
        ok = t_read(q2, p->Y, p->ybytes, o.y);
    }
    if (ok && verify_op(&p->a, &o))
        t_fail(__FILE__, __LINE__, "%s %zux%zu: wrong values after %s", op_name(p->a.op),
               p->a.rows, p->a.cols, what);
    op_out_free(&o);
}

/* 1 if the first output buffer still holds only poison (read through q2). */
static int prob_untouched(prob *p, cl_command_queue q2)
{
    uint32_t *b = malloc(p->ybytes);
    int same = t_read(q2, p->Y ? p->Y : p->M, p->ybytes, b) && !memcmp(b, p->poison, p->ybytes);
    free(b);
    return same;
}

/* The event completes after everything the op wrote. */
static void check_completion(prob *p, cl_command_queue q, cl_command_queue q2, const char *qn)
{
    cl_event ev = NULL;
    prob_poison(p, q2);
    if (!CHECK_ST(prob_enqueue(p, q, p->a.rows, 0, NULL, &ev), CLNORM_SUCCESS)) return;
    if (!CHECK(ev != NULL, "%s on %s queue: no event", op_name(p->a.op), qn)) return;
    cl_context c = NULL;
    CHECK_CL(clGetEventInfo(ev, CL_EVENT_CONTEXT, sizeof c, &c, NULL));
    CHECK(c == T.ctx, "event's context %p is not the queue's %p", (void *)c, (void *)T.ctx);
    CHECK_CL(clWaitForEvents(1, &ev));
    CHECK(t_event_status(ev) == CL_COMPLETE, "%s on %s queue: event not complete after wait",
          op_name(p->a.op), qn);
    prob_verify(p, q2, "waiting for the returned event");
    clReleaseEvent(ev);
}

static int peeks, peeks_held;   /* reads of a gated op's output, and those held back */

/* A user event in the wait list holds the op back until it is set. */
static void check_gating(prob *p, cl_command_queue q, cl_command_queue q2, const char *qn)
{
    cl_int err;
    cl_event u = clCreateUserEvent(T.ctx, &err), ev = NULL, rd = NULL;
    if (!CHECK_CL(err)) return;
    prob_poison(p, q2);
    clnorm_status st = prob_enqueue(p, q, p->a.rows, 1, &u, &ev);
    if (!CHECK_ST(st, CLNORM_SUCCESS) || !CHECK(ev != NULL, "no event")) {
        clSetUserEventStatus(u, CL_COMPLETE);
        clReleaseEvent(u);
        return;
    }
    clFlush(q);
    t_sleep_ms(100);
    cl_int s = t_event_status(ev);
    CHECK(s > CL_RUNNING, "%s %zux%zu on %s queue: op event is %d (should be queued/submitted) "
          "before its wait-list user event was set", op_name(p->a.op), p->a.rows, p->a.cols, qn, s);
    /* Peek at the output while the gate is closed. An implementation may hold this
       read back behind the pending op; then there is nothing to see. */
    uint32_t *peek = malloc(p->ybytes);
    CHECK_CL(clEnqueueReadBuffer(q2, p->Y ? p->Y : p->M, CL_FALSE, 0, p->ybytes, peek, 0, NULL, &rd));
    clFlush(q2);
    int done = 0;
    for (int i = 0; i < 100 && !done; i++) {
        done = rd && t_event_status(rd) == CL_COMPLETE;
        if (!done) t_sleep_ms(10);
    }
    peeks++;
    if (done)
        CHECK(!memcmp(peek, p->poison, p->ybytes), "%s %zux%zu on %s queue: output written "
              "before the wait-list user event was set", op_name(p->a.op), p->a.rows, p->a.cols, qn);
    else
        peeks_held++;
    CHECK_CL(clSetUserEventStatus(u, CL_COMPLETE));
    CHECK_CL(clWaitForEvents(1, &ev));
    if (rd) { clWaitForEvents(1, &rd); clReleaseEvent(rd); }
    prob_verify(p, q2, "a user event in the wait list");
    free(peek);
    clReleaseEvent(ev);
    clReleaseEvent(u);
}

/* Waits up to secs for e to complete (polling, so that a broken library fails the
   check instead of hanging the test); 1 if it did. */
static int wait_complete(cl_event e, double secs)
{
    for (double t0 = t_now(); t_now() - t0 < secs; t_sleep_ms(5))
        if (t_event_status(e) <= CL_COMPLETE) return t_event_status(e) == CL_COMPLETE;
    return 0;
}

/* A blocking host-array softmax on another context, run in a thread. */
typedef struct host_call {
    clnorm_session *s;
    size_t rows, cols;
    float *x, *y;
    clnorm_status st;
    atomic_int done;
} host_call;

static void *run_host_call(void *arg)
{
    host_call *h = arg;
    h->st = clnorm_softmax_host(h->s, CLNORM_F32, h->rows, h->cols, h->x, h->y,
                                CLNORM_SOFTMAX_AUTO);
    atomic_store(&h->done, 1);
    return NULL;
}

/* An op held back by a user event holds back no op that does not depend on it: while
   the event is unset, an op on another queue of the context (its own buffers, no wait
   list) completes, and a blocking host call on another context returns. A caller may
   wait for those before it sets the event. */
static void check_not_held_back(prob *p, cl_command_queue q, cl_command_queue q2,
                                clnorm_session *s2, const char *qn)
{
    cl_int err;
    cl_event u = clCreateUserEvent(T.ctx, &err), ev = NULL, ev2 = NULL;
    if (!CHECK_CL(err)) return;
    prob_poison(p, q2);
    prob other;
    prob_init(&other, p->a.op, 3, 257);
    pthread_t th;
    host_call h = {.s = s2, .rows = 4, .cols = 1031};
    h.x = malloc(h.rows * h.cols * sizeof(float));
    h.y = malloc(h.rows * h.cols * sizeof(float));
    for (size_t i = 0; i < h.rows * h.cols; i++) h.x[i] = (float)rng_range(&R, -8, 8);
    int started = 0;
    if (!CHECK_ST(prob_enqueue(p, q, p->a.rows, 1, &u, &ev), CLNORM_SUCCESS)) goto done;
    clFlush(q);
    if (CHECK_ST(prob_enqueue(&other, q2, other.a.rows, 0, NULL, &ev2), CLNORM_SUCCESS)) {
        clFlush(q2);
        CHECK(wait_complete(ev2, 60), "%s on %s queue held back by a user event: an op on "
              "another queue that does not depend on it did not complete in 60 s",
              op_name(p->a.op), qn);
    }
    if (s2 && CHECK(pthread_create(&th, NULL, run_host_call, &h) == 0, "pthread_create")) {
        started = 1;
        double t0 = t_now();
        while (!atomic_load(&h.done) && t_now() - t0 < 60) t_sleep_ms(5);
        CHECK(atomic_load(&h.done), "%s on %s queue held back by a user event: a blocking "
              "host call on another context did not return in 60 s", op_name(p->a.op), qn);
    }
    CHECK(t_event_status(ev) > CL_COMPLETE, "%s on %s queue: complete before its wait-list user "
          "event was set", op_name(p->a.op), qn);
done:
    clSetUserEventStatus(u, CL_COMPLETE);
    if (ev) {
        CHECK_CL(clWaitForEvents(1, &ev));
        prob_verify(p, q2, "a user event set after other calls returned");
        clReleaseEvent(ev);
    }
    if (ev2) {
        CHECK_CL(clWaitForEvents(1, &ev2));
        prob_verify(&other, q2, "running beside an op held back");
        clReleaseEvent(ev2);
    }
    if (started) {
        pthread_join(th, NULL);
        if (CHECK_ST(h.st, CLNORM_SUCCESS)) {
            double *want = malloc(h.rows * h.cols * sizeof(double));
            ref_softmax(h.x, h.rows, h.cols, want);
            size_t bad = 0;
            for (size_t i = 0; i < h.rows * h.cols; i++)
                bad += !t_close(h.y[i], want[i], tol_rel(CLNORM_F32, h.cols), tol_abs(CLNORM_F32));
            CHECK(bad == 0, "host call beside an op held back: %zu wrong values", bad);
            free(want);
        }
    }
    free(h.x), free(h.y);
    prob_free(&other);
    clReleaseEvent(u);
}

static void check_null_event(prob *p, cl_command_queue q, cl_command_queue q2)
{
    prob_poison(p, q2);
    if (CHECK_ST(prob_enqueue(p, q, p->a.rows, 0, NULL, NULL), CLNORM_SUCCESS)) {
        CHECK_CL(clFinish(q));
        prob_verify(p, q2, "event == NULL and clFinish");
    }
}

/* rows == 0: a marker event that completes (after its wait list), nothing written. */
static void check_rows_zero(prob *p, cl_command_queue q, cl_command_queue q2, const char *qn)
{
    cl_event ev = NULL;
    prob_poison(p, q2);
    if (CHECK_ST(prob_enqueue(p, q, 0, 0, NULL, &ev), CLNORM_SUCCESS) &&
        CHECK(ev != NULL, "rows == 0 on %s queue gave no event", qn)) {
        CHECK_CL(clWaitForEvents(1, &ev));
        cl_command_type t = 0;
        CHECK_CL(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof t, &t, NULL));
        CHECK(t == CL_COMMAND_MARKER, "%s rows == 0: event of command type 0x%x, expected a "
              "marker (0x%x)", op_name(p->a.op), (unsigned)t, (unsigned)CL_COMMAND_MARKER);
        clReleaseEvent(ev);
    }
    CHECK_ST(prob_enqueue(p, q, 0, 0, NULL, NULL), CLNORM_SUCCESS);
    /* The marker honours its wait list too. */
    cl_int err;
    cl_event u = clCreateUserEvent(T.ctx, &err);
    ev = NULL;
    if (CHECK_CL(err) && CHECK_ST(prob_enqueue(p, q, 0, 1, &u, &ev), CLNORM_SUCCESS) && ev) {
        clFlush(q);
        t_sleep_ms(20);
        CHECK(t_event_status(ev) != CL_COMPLETE, "%s rows == 0 on %s queue: marker complete "
              "before its wait list", op_name(p->a.op), qn);
        CHECK_CL(clSetUserEventStatus(u, CL_COMPLETE));
        CHECK_CL(clWaitForEvents(1, &ev));
        clReleaseEvent(ev);
    } else if (u) {
        clSetUserEventStatus(u, CL_COMPLETE);
    }
    if (u) clReleaseEvent(u);
    CHECK_CL(clFinish(q));
    CHECK(prob_untouched(p, q2), "%s rows == 0 wrote to the output", op_name(p->a.op));
}

/* A wait list of an ordinary event from another queue: the op sees the written x. */
static void check_write_dependency(prob *p, cl_command_queue q, cl_command_queue q2)
{
    cl_event w = NULL, ev = NULL;
    size_t bytes = p->a.rows * p->a.cols * 4;
    float *zeros = calloc(1, bytes);
    CHECK_CL(clEnqueueWriteBuffer(q2, p->X, CL_TRUE, 0, bytes, zeros, 0, NULL, NULL));
    prob_poison(p, q2);
    CHECK_CL(clEnqueueWriteBuffer(q2, p->X, CL_FALSE, 0, bytes, p->x, 0, NULL, &w));
    clFlush(q2);
    if (CHECK_ST(prob_enqueue(p, q, p->a.rows, 1, &w, &ev), CLNORM_SUCCESS) && ev) {
        CHECK_CL(clWaitForEvents(1, &ev));
        prob_verify(p, q2, "waiting for a write on another queue");
        clReleaseEvent(ev);
    }
    if (w) { clWaitForEvents(1, &w); clReleaseEvent(w); }
    free(zeros);
}

void test_events(void)
{
    cl_command_queue q2 = t_new_queue(T.ctx, T.dev, 0);
    cl_command_queue qo = t_new_queue(T.ctx, T.dev, 1);
    if (!CHECK(q2 != NULL, "second in-order queue")) return;
    if (!qo) NOTE("the device has no out-of-order queues; only the in-order queue is used");
    const size_t shapes[][2] = {{2, (1u << 18) + 1}, {300, 1000}, {5, 33}};
    /* A second context on the device, for a blocking call beside a held-back op. */
    clnorm_session *s2 = NULL;
    if (clnorm_session_create(T.spec, &s2) != CLNORM_SUCCESS) {
        NOTE("no second session on the device (%s): no host call beside a held-back op",
             clnorm_last_error());
        s2 = NULL;
    }
    cl_command_queue qs[2] = {T.q, qo};
    const char *qn[2] = {"in-order", "out-of-order"};
    for (int k = 0; k < 2; k++) {
        if (!qs[k]) continue;
        for (int op = 0; op < OP_COUNT; op++) {
            for (size_t s = 0; s < COUNT_OF(shapes); s++) {
                prob p;
                prob_init(&p, (top)op, shapes[s][0], shapes[s][1]);
                check_completion(&p, qs[k], q2, qn[k]);
                check_gating(&p, qs[k], q2, qn[k]);
                if (s != 1) check_not_held_back(&p, qs[k], q2, s2, qn[k]);
                check_null_event(&p, qs[k], q2);
                if (s == 2) check_rows_zero(&p, qs[k], q2, qn[k]);
                if (s == 1) check_write_dependency(&p, qs[k], q2);
                CHECK_CL(clFinish(qs[k]));
                prob_free(&p);
            }
        }
    }
    if (peeks_held)
        NOTE("%d of %d reads of a gated op's output were held back by the implementation, "
             "so only the event status showed the gate", peeks_held, peeks);
    if (qo) clReleaseCommandQueue(qo);
    clReleaseCommandQueue(q2);
    clnorm_session_destroy(s2);
}

/* bad_input: every refusal of API.md with its status, a fresh clnorm_last_error()
   that names the offending argument or value, and no buffer touched. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BIT(s) (1u << (s))
#define BAD_SIZE (BIT(CLNORM_OUT_OF_BOUNDS) | BIT(CLNORM_INVALID_ARGUMENT))

/* ---- buffers that must never change ------------------------------------------------ */
typedef struct guard { cl_mem mem; size_t bytes; void *img; const char *name; } guard;
static guard guards[12];
static int nguards;

static cl_mem guarded(const char *name, size_t floats, int random)
{
    float *img = malloc(floats * 4);
    for (size_t i = 0; i < floats; i++)
        img[i] = random ? (float)rng_range(&R, -5, 5) : -1.0f / 1024;  /* poison for outputs */
    cl_mem m = t_buffer(T.ctx, floats * 4, img);
    guards[nguards++] = (guard){m, floats * 4, img, name};
    return m;
}

static void check_guards(const char *expr)
{
    CHECK_CL(clFinish(T.q));
    for (int i = 0; i < nguards; i++) {
        void *b = malloc(guards[i].bytes);
        if (t_read(T.q, guards[i].mem, guards[i].bytes, b))
            CHECK(!memcmp(b, guards[i].img, guards[i].bytes), "%s was refused but changed "
                  "buffer %s", expr, guards[i].name);
        free(b);
    }
}

static void free_guards(void)
{
    for (int i = 0; i < nguards; i++) {
        clReleaseMemObject(guards[i].mem);
        free(guards[i].img);
    }
    nguards = 0;
}

/* ---- the refusal check -------------------------------------------------------------- */
/* A failing call with a unique spec before each checked call, so that a stale message
   cannot pass for the new one. */
static void prime_error(void)
{
    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create("clnorm-test-primer-device", &s);
    if (st == CLNORM_SUCCESS) clnorm_session_destroy(s);
}

static void refused(const char *file, int line, const char *expr, clnorm_status got,
                    unsigned allowed, const char *const *words)
{
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", clnorm_last_error());
    if (!(allowed & BIT(got)))
        t_fail(file, line, "%s returned %s; last error \"%s\"", expr, clnorm_status_string(got), msg);
    if (!*msg) {
        t_fail(file, line, "%s: clnorm_last_error() is empty", expr);
    } else if (strstr(msg, "clnorm-test-primer")) {
        t_fail(file, line, "%s: clnorm_last_error() still holds the previous failure \"%s\"",
               expr, msg);
    } else {
        for (; *words; words++) {
            /* "a|b": either word will do */
            char alt[128];
            snprintf(alt, sizeof alt, "%s", *words);
            int found = 0;
            for (char *w = strtok(alt, "|"); w && !found; w = strtok(NULL, "|"))
                found = t_mentions(msg, w);
            if (!found)
                t_fail(file, line, "%s: last error \"%s\" does not name \"%s\"", expr, msg, *words);
        }
    }
    if (T.q) check_guards(expr);
}

/* REFUSED(call, allowed statuses, words the message must name...) */
#define REFUSED(call, ...)                                                                \
    do {                                                                                  \
        prime_error();                                                                    \
        clnorm_status st_ = (call);                                                       \
        refused(__FILE__, __LINE__, #call, st_, REFUSED_ARGS_(__VA_ARGS__, NULL));         \
    } while (0)
#define REFUSED_ARGS_(allowed, ...) (allowed), (const char *const[]){__VA_ARGS__}
#define INVALID BIT(CLNORM_INVALID_ARGUMENT)
#define OOB BIT(CLNORM_OUT_OF_BOUNDS)

static clnorm_matrix V(cl_mem m, size_t off, size_t ld)
{
    clnorm_matrix v = {m, off, ld};
    return v;
}

/* One call of op k (0 rmsnorm, 1 softmax, 2 stats) with the arguments that vary. */
static cl_mem G, M, L;
static clnorm_status call_op(int k, cl_command_queue q, clnorm_dtype dt, size_t rows,
                             size_t cols, clnorm_matrix x, clnorm_matrix y, cl_uint nw,
                             const cl_event *wl)
{
    if (k == 0) return clnorm_rmsnorm(q, dt, rows, cols, x, G, y, 1e-5f, nw, wl, NULL);
    if (k == 1) return clnorm_softmax(q, dt, rows, cols, x, y, CLNORM_SOFTMAX_AUTO, nw, wl, NULL);
    return clnorm_softmax_stats(q, dt, rows, cols, x, M, L, nw, wl, NULL);
}

/* ---- last error is per thread ------------------------------------------------------- */
static void *other_thread(void *arg)
{
    int *ok = arg;
    ok[0] = clnorm_last_error() != NULL && clnorm_last_error()[0] == '\0';
    ok[1] = clnorm_warmup(NULL) == CLNORM_INVALID_ARGUMENT && clnorm_last_error()[0] != '\0';
    return NULL;
}

static void check_thread_local(void)
{
    clnorm_session *s = NULL;
    CHECK_ST(clnorm_session_create("clnorm-test-main-thread-marker", &s), CLNORM_DEVICE_NOT_FOUND);
    int ok[2] = {0, 0};
    pthread_t th;
    if (!CHECK(pthread_create(&th, NULL, other_thread, ok) == 0, "pthread_create")) return;
    pthread_join(th, NULL);
    CHECK(ok[0], "a new thread's clnorm_last_error() is not \"\" (it is per thread)");
    CHECK(ok[1], "a failing call on another thread left its last error empty");
    CHECK(strstr(clnorm_last_error(), "clnorm-test-main-thread-marker") != NULL,
          "another thread's failure replaced this thread's last error: \"%s\"", clnorm_last_error());
}

/* ---- host functions ----------------------------------------------------------------- */
static void check_host_refusals(void)
{
    enum { HR = 3, HC = 11 };
    float x[HR * HC], y[HR * HC], m[HR], l[HR], g[HC], ypoison[HR * HC];
    gen_rows(&R, x, HR, HC);
    gen_gamma(&R, g, HC);
    for (int i = 0; i < HR * HC; i++) y[i] = ypoison[i] = -1.0f / 1024;
    clnorm_session *s = T.s;
    REFUSED(clnorm_rmsnorm_host(NULL, CLNORM_F32, HR, HC, x, g, y, 1e-5f), INVALID, "session");
    REFUSED(clnorm_softmax_host(NULL, CLNORM_F32, HR, HC, x, y, CLNORM_SOFTMAX_AUTO), INVALID, "session");
    REFUSED(clnorm_softmax_stats_host(NULL, CLNORM_F32, HR, HC, x, m, l), INVALID, "session");
    REFUSED(clnorm_rmsnorm_host(s, CLNORM_F32, HR, HC, NULL, g, y, 1e-5f), INVALID, "x");
    REFUSED(clnorm_rmsnorm_host(s, CLNORM_F32, HR, HC, x, g, NULL, 1e-5f), INVALID, "y");
    REFUSED(clnorm_softmax_host(s, CLNORM_F32, HR, HC, NULL, y, CLNORM_SOFTMAX_AUTO), INVALID, "x");
    REFUSED(clnorm_softmax_host(s, CLNORM_F32, HR, HC, x, NULL, CLNORM_SOFTMAX_AUTO), INVALID, "y");
    REFUSED(clnorm_softmax_stats_host(s, CLNORM_F32, HR, HC, NULL, m, l), INVALID, "x");
    REFUSED(clnorm_softmax_stats_host(s, CLNORM_F32, HR, HC, x, NULL, l), INVALID, "row_max");
    REFUSED(clnorm_softmax_stats_host(s, CLNORM_F32, HR, HC, x, m, NULL), INVALID, "row_sum");
    REFUSED(clnorm_rmsnorm_host(s, CLNORM_F32, HR, 0, x, g, y, 1e-5f), INVALID, "cols");
    REFUSED(clnorm_softmax_host(s, CLNORM_F32, HR, 0, x, y, CLNORM_SOFTMAX_AUTO), INVALID, "cols");
    REFUSED(clnorm_softmax_stats_host(s, CLNORM_F32, HR, 0, x, m, l), INVALID, "cols");
    REFUSED(clnorm_softmax_apply_host(NULL, CLNORM_F32, HR, HC, x, m, l, y), INVALID, "session");
    REFUSED(clnorm_softmax_apply_host(s, CLNORM_F32, HR, HC, NULL, m, l, y), INVALID, "x");
    REFUSED(clnorm_softmax_apply_host(s, CLNORM_F32, HR, HC, x, NULL, l, y), INVALID, "row_max");
    REFUSED(clnorm_softmax_apply_host(s, CLNORM_F32, HR, HC, x, m, NULL, y), INVALID, "row_sum");
    REFUSED(clnorm_softmax_apply_host(s, CLNORM_F32, HR, HC, x, m, l, NULL), INVALID, "y");
    REFUSED(clnorm_softmax_apply_host(s, CLNORM_F32, HR, 0, x, m, l, y), INVALID, "cols");
    REFUSED(clnorm_softmax_apply_host(s, (clnorm_dtype)7, HR, HC, x, m, l, y), INVALID, "dtype",
            "7");
    REFUSED(clnorm_rmsnorm_host(s, (clnorm_dtype)7, HR, HC, x, g, y, 1e-5f), INVALID, "dtype", "7");
    REFUSED(clnorm_softmax_host(s, (clnorm_dtype)7, HR, HC, x, y, CLNORM_SOFTMAX_AUTO), INVALID, "dtype", "7");
    REFUSED(clnorm_softmax_host(s, CLNORM_F32, HR, HC, x, y, (clnorm_softmax_algo)9), INVALID, "algo", "9");
    REFUSED(clnorm_rmsnorm_host(s, CLNORM_F32, HR, HC, x, g, y, -0.5f), INVALID, "eps", "-0.5");
    REFUSED(clnorm_rmsnorm_host(s, CLNORM_F32, HR, HC, x, g, y, NAN), INVALID, "eps", "nan");
    /* Sizes whose byte counts overflow size_t: refused, never a wrapped copy. */
    const unsigned host_big = INVALID | OOB | BIT(CLNORM_OUT_OF_RESOURCES);
    REFUSED(clnorm_softmax_host(s, CLNORM_F32, SIZE_MAX / 16 + 1, 16, x, y, CLNORM_SOFTMAX_AUTO),
            host_big);
    REFUSED(clnorm_rmsnorm_host(s, CLNORM_F32, 1, SIZE_MAX / 2, x, NULL, y, 1e-5f), host_big);
    REFUSED(clnorm_softmax_stats_host(s, CLNORM_F32, SIZE_MAX / 4 + 2, 1, x, m, l), host_big);
    REFUSED(clnorm_softmax_apply_host(s, CLNORM_BF16, 3, SIZE_MAX / 4, x, m, l, y), host_big);
    CHECK(!memcmp(y, ypoison, sizeof y), "a refused host call wrote into y");
    REFUSED(clnorm_warmup(NULL), INVALID, "queue");
    clnorm_session_destroy(NULL);   /* a no-op */
}

/* ---- sessions ------------------------------------------------------------------------ */
static void check_session_refusals(void)
{
    const char *specs[] = {"no-such-device-zz9", "99:0", "0:99"};
    for (size_t i = 0; i < COUNT_OF(specs); i++) {
        clnorm_session *s = (clnorm_session *)&specs;  /* must be reset to NULL */
        REFUSED(clnorm_session_create(specs[i], &s), BIT(CLNORM_DEVICE_NOT_FOUND), specs[i]);
        CHECK(s == NULL, "clnorm_session_create(\"%s\") failed but left *out non-NULL", specs[i]);
        if (s && s != (clnorm_session *)&specs) clnorm_session_destroy(s);
    }
    REFUSED(clnorm_session_create(NULL, NULL), INVALID, "out");
}

void test_bad_input(void)
{
    enum { BR = 5, BC = 37 };
    cl_command_queue q = T.q;
    const clnorm_dtype F = CLNORM_F32;
    /* All exact fits: one more element anywhere is out of bounds. */
    cl_mem X = guarded("x", BR * BC, 1), Y = guarded("y", BR * BC, 0);
    cl_mem B = guarded("shared", 2 * BR * BC + 8, 1);
    G = guarded("gamma", BC, 1);
    cl_mem Gs = guarded("short gamma", BC - 1, 1);
    M = guarded("row_max", BR, 0), L = guarded("row_sum", BR, 0);
    cl_mem Ms = guarded("short row_max", BR - 1, 0), Ls = guarded("short row_sum", BR - 1, 0);
    clnorm_matrix x = V(X, 0, 0), y = V(Y, 0, 0);

    for (int k = 0; k < 3; k++) {
        REFUSED(call_op(k, NULL, F, BR, BC, x, y, 0, NULL), INVALID, "queue");
        REFUSED(call_op(k, q, F, BR, BC, V(NULL, 0, 0), y, 0, NULL), INVALID, "x");
        REFUSED(call_op(k, q, F, BR, 0, x, y, 0, NULL), INVALID, "cols");
        REFUSED(call_op(k, q, F, BR, BC, V(X, 0, BC - 1), y, 0, NULL), INVALID, "ld", "36");
        REFUSED(call_op(k, q, (clnorm_dtype)7, BR, BC, x, y, 0, NULL), INVALID, "dtype", "7");
        REFUSED(call_op(k, q, F, BR, BC, x, y, 1, NULL), INVALID, "wait");
        /* Views one element past the end. */
        REFUSED(call_op(k, q, F, BR, BC, V(X, 1, 0), y, 0, NULL), OOB, "x");
        REFUSED(call_op(k, q, F, BR, BC, V(X, 0, BC + 1), y, 0, NULL), OOB, "x");
        REFUSED(call_op(k, q, F, BR + 1, BC, x, V(B, 0, 0), 0, NULL), OOB, "x|row_max|row_sum");
        /* Sizes whose products overflow size_t. */
        REFUSED(call_op(k, q, F, SIZE_MAX / 2, 4, x, y, 0, NULL), BAD_SIZE);
        REFUSED(call_op(k, q, F, 1, SIZE_MAX / 2, x, y, 0, NULL), BAD_SIZE);
        REFUSED(call_op(k, q, F, 3, 4, V(X, 0, SIZE_MAX / 2), y, 0, NULL), BAD_SIZE);
        REFUSED(call_op(k, q, F, 1, 4, V(X, SIZE_MAX - 1, 0), y, 0, NULL), BAD_SIZE);
        /* rows * cols wraps to exactly 0, and rows * ld * 4 wraps to a small number. */
        REFUSED(call_op(k, q, F, SIZE_MAX / 16 + 1, 16, x, y, 0, NULL), BAD_SIZE);
        REFUSED(call_op(k, q, F, SIZE_MAX / 64 + 1, 4, V(X, 0, 16), y, 0, NULL), BAD_SIZE);
        REFUSED(call_op(k, q, F, SIZE_MAX, SIZE_MAX, x, y, 0, NULL), BAD_SIZE);
        if (k < 2) {
            REFUSED(call_op(k, q, F, BR, BC, x, V(NULL, 0, 0), 0, NULL), INVALID, "y");
            REFUSED(call_op(k, q, F, BR, BC, x, V(Y, 0, BC - 1), 0, NULL), INVALID, "ld", "36");
            REFUSED(call_op(k, q, F, BR, BC, x, V(Y, 1, 0), 0, NULL), OOB, "y");
            REFUSED(call_op(k, q, F, BR, BC, x, V(Y, 0, BC + 1), 0, NULL), OOB, "y");
            REFUSED(call_op(k, q, F, 3, 4, x, V(Y, 0, SIZE_MAX / 2), 0, NULL), BAD_SIZE);
            REFUSED(call_op(k, q, F, 1, 4, x, V(Y, SIZE_MAX - 1, 0), 0, NULL), BAD_SIZE);
            /* Partial overlaps of x and y in one buffer. */
            REFUSED(call_op(k, q, F, BR, BC, V(B, 0, BC), V(B, 1, BC), 0, NULL), INVALID, "overlap");
            REFUSED(call_op(k, q, F, BR, BC, V(B, 1, BC), V(B, 0, BC), 0, NULL), INVALID, "overlap");
            REFUSED(call_op(k, q, F, BR, BC, V(B, 0, BC), V(B, 0, BC + 1), 0, NULL), INVALID, "overlap");
            REFUSED(call_op(k, q, F, BR, BC, V(B, 0, BC), V(B, BR * BC - 1, BC), 0, NULL), INVALID, "overlap");
            REFUSED(call_op(k, q, F, BR, BC, V(B, 3, 2 * BC), V(B, 3 + BC - 1, 2 * BC), 0, NULL),
                    INVALID, "overlap");
            /* Two strides, apart in the first row, meeting in the second. */
            REFUSED(call_op(k, q, F, 2, BC, V(B, 0, 3 * BC), V(B, BC, 2 * BC), 0, NULL), INVALID,
                    "overlap");
        }
    }
    /* rmsnorm: eps and gamma. */
    const float bad_eps[] = {-0.5f, NAN, INFINITY, -INFINITY};
    const char *eps_word[] = {"-0.5", "nan", "inf", "inf"};
    for (int i = 0; i < 4; i++)
        REFUSED(clnorm_rmsnorm(q, F, BR, BC, x, G, y, bad_eps[i], 0, NULL, NULL), INVALID, "eps",
                eps_word[i]);
    REFUSED(clnorm_rmsnorm(q, F, BR, BC, x, Gs, y, 1e-5f, 0, NULL, NULL), OOB, "gamma");
    REFUSED(clnorm_rmsnorm(q, F, 1, SIZE_MAX / 4 + 1, V(X, 0, 0), G, y, 1e-5f, 0, NULL, NULL),
            BAD_SIZE);
    /* softmax: algo. */
    REFUSED(clnorm_softmax(q, F, BR, BC, x, y, (clnorm_softmax_algo)9, 0, NULL, NULL), INVALID, "algo", "9");
    REFUSED(clnorm_softmax(q, F, BR, BC, x, y, (clnorm_softmax_algo)3, 0, NULL, NULL), INVALID, "algo", "3");
    /* stats: the two arrays. */
    REFUSED(clnorm_softmax_stats(q, F, BR, BC, x, NULL, L, 0, NULL, NULL), INVALID, "row_max");
    REFUSED(clnorm_softmax_stats(q, F, BR, BC, x, M, NULL, 0, NULL, NULL), INVALID, "row_sum");
    REFUSED(clnorm_softmax_stats(q, F, BR, BC, x, Ms, L, 0, NULL, NULL), OOB, "row_max");
    REFUSED(clnorm_softmax_stats(q, F, BR, BC, x, M, Ls, 0, NULL, NULL), OOB, "row_sum");
    /* rows * 4 bytes of row_max wraps around. */
    REFUSED(clnorm_softmax_stats(q, F, SIZE_MAX / 4 + 2, 1, x, M, L, 0, NULL, NULL), BAD_SIZE);

    /* (SIZE_MAX/4 + 1) * 4 wraps to 0: a view end of just cols elements. */
    for (int k = 0; k < 3; k++)
        REFUSED(call_op(k, q, F, SIZE_MAX / 4 + 2, 4, x, V(B, 0, 0), 0, NULL), BAD_SIZE);

    /* A wait list without its count, as OpenCL refuses it. */
    cl_int err;
    cl_event u = clCreateUserEvent(T.ctx, &err);
    if (CHECK_CL(err)) {
        for (int k = 0; k < 3; k++)
            REFUSED(call_op(k, q, F, BR, BC, x, y, 0, &u), INVALID, "wait");
        clSetUserEventStatus(u, CL_COMPLETE);
        clReleaseEvent(u);
    }

    /* A buffer of another context. */
    clnorm_session *s2 = NULL;
    if (CHECK_ST(clnorm_session_create(T.spec, &s2), CLNORM_SUCCESS)) {
        float zeros[BR * BC] = {0};
        cl_mem X2 = t_buffer(clnorm_session_context(s2), sizeof zeros, zeros);
        for (int k = 0; k < 3; k++)
            REFUSED(call_op(k, q, F, BR, BC, V(X2, 0, 0), y, 0, NULL),
                    INVALID | BIT(CLNORM_OPENCL_ERROR), "context");
        /* An event of another context in the wait list: refused before any enqueue, as
           some drivers would take it and others fail at the enqueue. */
        cl_event u2 = clCreateUserEvent(clnorm_session_context(s2), &err);
        if (CHECK_CL(err)) {
            for (int k = 0; k < 3; k++)
                REFUSED(call_op(k, q, F, BR, BC, x, y, 1, &u2), INVALID, "wait_list[0]",
                        "context");
            clSetUserEventStatus(u2, CL_COMPLETE);
            clReleaseEvent(u2);
        }
        clReleaseMemObject(X2);
        clnorm_session_destroy(s2);
    }

    /* Two sub-buffers of one buffer that share bytes: a partial overlap too. */
    cl_uint align_bits = 0;
    CHECK_CL(clGetDeviceInfo(T.dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits, NULL));
    size_t A = align_bits / 8 < 64 ? 64 : align_bits / 8;   /* bytes, a multiple of 4 */
    cl_mem P = guarded("sub-buffer parent", A, 1);          /* 4A bytes */
    cl_buffer_region r0 = {0, 2 * A}, r1 = {A, 2 * A};
    cl_mem S0 = clCreateSubBuffer(P, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r0, &err);
    cl_mem S1 = err == CL_SUCCESS ? clCreateSubBuffer(P, CL_MEM_READ_WRITE,
                                                      CL_BUFFER_CREATE_TYPE_REGION, &r1, &err) : NULL;
    if (CHECK_CL(err) && S0 && S1) {
        for (int k = 0; k < 2; k++)
            REFUSED(call_op(k, q, F, 1, A / 2, V(S0, 0, 0), V(S1, 0, 0), 0, NULL), INVALID, "overlap");
    }
    if (S0) clReleaseMemObject(S0);
    if (S1) clReleaseMemObject(S1);

    check_session_refusals();
    check_host_refusals();
    check_thread_local();
    free_guards();

    /* Disjoint sub-buffers of one buffer: allowed. */
    {
        size_t n = 2 * A;   /* floats in the parent: two halves of A bytes... */
        float *img = malloc(n * 4);
        gen_rows(&R, img, 1, n);
        cl_mem P2 = t_buffer(T.ctx, n * 4, img);
        cl_buffer_region h0 = {0, 4 * A}, h1 = {4 * A, 4 * A};
        cl_mem H0 = clCreateSubBuffer(P2, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &h0, &err);
        cl_mem H1 = err == CL_SUCCESS ? clCreateSubBuffer(P2, CL_MEM_READ_WRITE,
                                                          CL_BUFFER_CREATE_TYPE_REGION, &h1, &err) : NULL;
        if (CHECK_CL(err) && H0 && H1) {
            CHECK_ST(clnorm_softmax(q, F, 1, A, V(H0, 0, 0), V(H1, 0, 0), CLNORM_SOFTMAX_AUTO, 0,
                                    NULL, NULL), CLNORM_SUCCESS);
            CHECK_ST(clnorm_rmsnorm(q, F, 1, A, V(H0, 0, 0), NULL, V(H1, 0, 0), 1e-5f, 0, NULL,
                                    NULL), CLNORM_SUCCESS);
            CHECK_CL(clFinish(q));
        }
        if (H0) clReleaseMemObject(H0);
        if (H1) clReleaseMemObject(H1);
        clReleaseMemObject(P2);
        free(img);
    }

    /* Valid edge cases right next to the refusals. eps = -0.0 is not < 0. */
    op_args a;
    float *xb, *gb;
    make_problem(&R, &a, OP_RMSNORM, 3, 37, &xb, &gb);
    a.eps = -0.0f;
    a.exact = 1;
    check_op(&a, CLNORM_SUCCESS);
    free(xb);
    free(gb);
}

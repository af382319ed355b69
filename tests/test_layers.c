/* softmax_check: clnorm_softmax_check refuses exactly what clnorm_softmax refuses, and
   clnorm_softmax_apply_check what clnorm_softmax_apply refuses (with good statistics
   buffers), with the same status and message, and each accepts what its call accepts
   without enqueuing or writing anything, a write's plan refused under the thread's
   hints included; clnorm_set_last_error sets the thread's message. */
#include "clnorm_advanced.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* Statistics buffers of every request's rows, good for clnorm_softmax_apply. */
static cl_mem g_max, g_sum;

/* One request through a check and its call (apply: clnorm_softmax_apply_check and
   clnorm_softmax_apply, else clnorm_softmax_check and clnorm_softmax): same status,
   same message on a refusal; on acceptance the check writes nothing (y read back). */
static void same_verdict(const char *label, int apply, cl_command_queue q, clnorm_dtype dt,
                         size_t rows, size_t cols, clnorm_matrix x, clnorm_matrix y,
                         cl_mem ymem, size_t ybytes)
{
    const char *check = apply ? "clnorm_softmax_apply_check" : "clnorm_softmax_check";
    unsigned char *before = malloc(ybytes), *after = malloc(ybytes);
    t_read(T.q, ymem, ybytes, before);
    clnorm_set_last_error(CLNORM_SUCCESS, "primer");
    clnorm_status sc = apply ? clnorm_softmax_apply_check(q, dt, rows, cols, x, y)
                             : clnorm_softmax_check(q, dt, rows, cols, x, y);
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", clnorm_last_error());
    t_read(T.q, ymem, ybytes, after);
    CHECK(!memcmp(before, after, ybytes), "%s: %s wrote y", label, check);
    clnorm_set_last_error(CLNORM_SUCCESS, "primer");
    cl_event ev = NULL;
    clnorm_status ss =
        apply ? clnorm_softmax_apply(q, dt, rows, cols, x, g_max, g_sum, y, 0, NULL, &ev)
              : clnorm_softmax(q, dt, rows, cols, x, y, CLNORM_SOFTMAX_AUTO, 0, NULL, &ev);
    if (ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    CHECK(sc == ss, "%s: %s returned %s, its call %s", label, check, clnorm_status_string(sc),
          clnorm_status_string(ss));
    if (ss != CLNORM_SUCCESS)
        CHECK(!strcmp(msg, clnorm_last_error()), "%s: messages differ: %s \"%s\", its call "
              "\"%s\"", label, check, msg, clnorm_last_error());
    free(before);
    free(after);
}

void test_softmax_check(void)
{
    const size_t rows = 5, cols = 37, n = rows * cols + 64;
    float *img = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) img[i] = (float)rng_range(&R, -3, 3);
    cl_mem a = t_buffer(T.ctx, n * 4, img), b = t_buffer(T.ctx, n * 4, img);
    float stats[2 * 5];
    for (size_t r = 0; r < rows; r++) {
        stats[r] = 3.0f;
        stats[rows + r] = (float)cols;
    }
    g_max = t_buffer(T.ctx, rows * 4, stats);
    g_sum = t_buffer(T.ctx, rows * 4, stats + rows);
    clnorm_matrix x = {a, 0, 0}, y = {b, 0, 0};
    clnorm_matrix far = {b, n - cols + 1, 0}, lds = {b, 0, cols - 1}, part = {a, 1, 0};
    clnorm_matrix none = {NULL, 0, 0};
    for (int apply = 0; apply < 2; apply++) {
        same_verdict("good", apply, T.q, CLNORM_F32, rows, cols, x, y, b, n * 4);
        same_verdict("in place", apply, T.q, CLNORM_F32, rows, cols, x, x, a, n * 4);
        same_verdict("rows 0", apply, T.q, CLNORM_F16, 0, cols, x, y, b, n * 4);
        same_verdict("NULL queue", apply, NULL, CLNORM_F32, rows, cols, x, y, b, n * 4);
        same_verdict("bad dtype", apply, T.q, (clnorm_dtype)7, rows, cols, x, y, b, n * 4);
        same_verdict("cols 0", apply, T.q, CLNORM_F32, rows, 0, x, y, b, n * 4);
        same_verdict("y past its buffer", apply, T.q, CLNORM_F32, rows, cols, x, far, b, n * 4);
        same_verdict("ld < cols", apply, T.q, CLNORM_F32, rows, cols, x, lds, b, n * 4);
        same_verdict("partial overlap", apply, T.q, CLNORM_F32, rows, cols, x, part, a, n * 4);
        same_verdict("NULL y", apply, T.q, CLNORM_F32, rows, cols, x, none, b, n * 4);
    }
    /* Teams of 3 work-items divide no work-group of the apply kernel: its plan is
       refused, which only the apply check sees. */
    clnorm_plan_hints h;
    clnorm_plan_hints_init(&h);
    h.items_per_row = 3;
    if (CHECK_ST(clnorm_set_thread_hints(&h), CLNORM_SUCCESS)) {
        CHECK_ST(clnorm_softmax_apply_check(T.q, CLNORM_F32, rows, cols, x, y),
                 CLNORM_INVALID_ARGUMENT);
        CHECK(t_mentions(clnorm_last_error(), "3"), "teams of 3: \"%s\"", clnorm_last_error());
        same_verdict("teams of 3", 1, T.q, CLNORM_F32, rows, cols, x, y, b, n * 4);
        clnorm_set_thread_hints(NULL);
    }
    clReleaseMemObject(g_max);
    clReleaseMemObject(g_sum);
    /* clnorm_set_last_error: returns the status given, keeps the message whole. */
    CHECK(clnorm_set_last_error(CLNORM_OUT_OF_BOUNDS, "layer message 42") == CLNORM_OUT_OF_BOUNDS,
          "clnorm_set_last_error did not return its status");
    CHECK(!strcmp(clnorm_last_error(), "layer message 42"), "message \"%s\"", clnorm_last_error());
    clnorm_set_last_error(CLNORM_INVALID_ARGUMENT, NULL);
    CHECK(!strcmp(clnorm_last_error(), ""), "NULL message gave \"%s\"", clnorm_last_error());
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    free(img);
}

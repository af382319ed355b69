/* softmax_check: clnorm_softmax_check refuses exactly what clnorm_softmax refuses, with
   the same status and message, and accepts what it accepts without enqueuing or
   writing anything; clnorm_set_last_error sets the thread's message. */
#include "clnorm_advanced.h"
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* One request through both functions: same status, same message on a refusal; on
   acceptance the check writes nothing (y read back). */
static void same_verdict(const char *label, cl_command_queue q, clnorm_dtype dt, size_t rows,
                         size_t cols, clnorm_matrix x, clnorm_matrix y, cl_mem ymem,
                         size_t ybytes)
{
    unsigned char *before = malloc(ybytes), *after = malloc(ybytes);
    t_read(T.q, ymem, ybytes, before);
    clnorm_set_last_error(CLNORM_SUCCESS, "primer");
    clnorm_status sc = clnorm_softmax_check(q, dt, rows, cols, x, y);
    char msg[4096];
    snprintf(msg, sizeof msg, "%s", clnorm_last_error());
    t_read(T.q, ymem, ybytes, after);
    CHECK(!memcmp(before, after, ybytes), "%s: clnorm_softmax_check wrote y", label);
    clnorm_set_last_error(CLNORM_SUCCESS, "primer");
    cl_event ev = NULL;
    clnorm_status ss = clnorm_softmax(q, dt, rows, cols, x, y, CLNORM_SOFTMAX_AUTO, 0, NULL, &ev);
    if (ev) {
        clWaitForEvents(1, &ev);
        clReleaseEvent(ev);
    }
    CHECK(sc == ss, "%s: clnorm_softmax_check returned %s, clnorm_softmax %s", label,
          clnorm_status_string(sc), clnorm_status_string(ss));
    if (ss != CLNORM_SUCCESS)
        CHECK(!strcmp(msg, clnorm_last_error()), "%s: messages differ: check \"%s\", "
              "softmax \"%s\"", label, msg, clnorm_last_error());
    free(before);
    free(after);
}

void test_softmax_check(void)
{
    const size_t rows = 5, cols = 37, n = rows * cols + 64;
    float *img = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) img[i] = (float)rng_range(&R, -3, 3);
    cl_mem a = t_buffer(T.ctx, n * 4, img), b = t_buffer(T.ctx, n * 4, img);
    clnorm_matrix x = {a, 0, 0}, y = {b, 0, 0};
    same_verdict("good", T.q, CLNORM_F32, rows, cols, x, y, b, n * 4);
    same_verdict("in place", T.q, CLNORM_F32, rows, cols, x, x, a, n * 4);
    same_verdict("rows 0", T.q, CLNORM_F16, 0, cols, x, y, b, n * 4);
    same_verdict("NULL queue", NULL, CLNORM_F32, rows, cols, x, y, b, n * 4);
    same_verdict("bad dtype", T.q, (clnorm_dtype)7, rows, cols, x, y, b, n * 4);
    same_verdict("cols 0", T.q, CLNORM_F32, rows, 0, x, y, b, n * 4);
    clnorm_matrix far = {b, n - cols + 1, 0}, lds = {b, 0, cols - 1}, part = {a, 1, 0};
    clnorm_matrix none = {NULL, 0, 0};
    same_verdict("y past its buffer", T.q, CLNORM_F32, rows, cols, x, far, b, n * 4);
    same_verdict("ld < cols", T.q, CLNORM_F32, rows, cols, x, lds, b, n * 4);
    same_verdict("partial overlap", T.q, CLNORM_F32, rows, cols, x, part, a, n * 4);
    same_verdict("NULL y", T.q, CLNORM_F32, rows, cols, x, none, b, n * 4);
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

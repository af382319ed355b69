/* fast_path_fallback_entries: the entry points with plans of their own (attention,
   attention_merge, softmax_apply) fall back from a fast path whose program does not
   build as the rows operations do (test_fallback.c): each is the first call after the
   failure is injected into a fresh profile, and must give right values on the local
   path. */
#define _GNU_SOURCE /* mkdtemp */
#include "attention.h"
#include "clnorm_advanced.h"
#include "faults.h"
#include "profile.h"
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A fresh disk-cache folder and profile with the fast path broken (claimed, where the
   device has none). */
static void broken_fast_path(void)
{
    char dir[] = "/tmp/clnorm-fbe-XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL, "mkdtemp failed")) return;
    t_config("CLNORM_CACHE_DIR", dir);
    clnorm_device_info info;
    const int fast = CHECK_ST(clnorm_device_describe(T.dev, 1, &info), CLNORM_SUCCESS) &&
                     info.reduction != CLNORM_REDUCTION_LOCAL;
    const char *list = fast ? "break-fast-path" : "subgroups,trust-probes,break-fast-path";
    t_setenv("CLNORM_TEST_FAULTS", list);
    CHECK(cln_faults_set(list) == 0, "faults \"%s\" refused", list);
    CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
}

static void healed(void)
{
    t_setenv("CLNORM_TEST_FAULTS", NULL);
    cln_faults_set("");
    CHECK_ST(cln_profile_refresh(T.dev), CLNORM_SUCCESS);
}

static void apply_first(void)
{
    const size_t rows = 3, cols = 1001, n = rows * cols;
    float *x = malloc(n * 4), *y = malloc(n * 4), m[3], l[3];
    double *want = malloc(n * 8);
    gen_rows(&R, x, rows, cols);
    ref_softmax(x, rows, cols, want);
    for (size_t r = 0; r < rows; r++) {
        double mm = -INFINITY, ll = 0;
        for (size_t c = 0; c < cols; c++) mm = fmax(mm, x[r * cols + c]);
        for (size_t c = 0; c < cols; c++) ll += exp(x[r * cols + c] - mm);
        m[r] = (float)mm;
        l[r] = (float)ll;
    }
    cl_mem bx = t_buffer(T.ctx, n * 4, x), by = t_buffer(T.ctx, n * 4, NULL);
    cl_mem bm = t_buffer(T.ctx, sizeof m, m), bl = t_buffer(T.ctx, sizeof l, l);
    clnorm_matrix vx = {bx, 0, 0}, vy = {by, 0, 0};
    if (CHECK_ST(clnorm_softmax_apply(T.q, CLNORM_F32, rows, cols, vx, bm, bl, vy, 0, NULL,
                                      NULL), CLNORM_SUCCESS) &&
        t_read(T.q, by, n * 4, y))
        COMPARE("softmax_apply after a fast path failed", y, want, rows, cols,
                tol_rel(CLNORM_F32, cols), tol_abs(CLNORM_F32));
    clReleaseMemObject(bx);
    clReleaseMemObject(by);
    clReleaseMemObject(bm);
    clReleaseMemObject(bl);
    free(x);
    free(y);
    free(want);
}

static void merge_first(void)
{
    enum { ROWS = 5, HD = 33 };
    float a[ROWS * HD], b[ROWS * HD], la[ROWS], lb[ROWS], out[ROWS * HD];
    double want[ROWS * HD];
    for (size_t i = 0; i < ROWS * HD; i++) {
        a[i] = (float)rng_range(&R, -1, 1);
        b[i] = (float)rng_range(&R, -1, 1);
    }
    for (size_t r = 0; r < ROWS; r++) {
        la[r] = (float)rng_range(&R, -5, 5);
        lb[r] = (float)rng_range(&R, -5, 5);
        const double lse = log(exp(la[r]) + exp(lb[r]));
        for (size_t d = 0; d < HD; d++)
            want[r * HD + d] = exp(la[r] - lse) * a[r * HD + d] + exp(lb[r] - lse) * b[r * HD + d];
    }
    cl_mem ba = t_buffer(T.ctx, sizeof a, a), bb = t_buffer(T.ctx, sizeof b, b);
    cl_mem bla = t_buffer(T.ctx, sizeof la, la), blb = t_buffer(T.ctx, sizeof lb, lb);
    clnorm_matrix va = {ba, 0, 0}, vb = {bb, 0, 0};
    if (CHECK_ST(clnorm_attention_merge(T.q, CLNORM_F32, ROWS, HD, va, bla, vb, blb, va, bla,
                                        0, NULL, NULL), CLNORM_SUCCESS) &&
        t_read(T.q, ba, sizeof out, out))
        COMPARE("attention_merge after a fast path failed", out, want, ROWS, HD, 1e-5, 1e-6);
    clReleaseMemObject(ba);
    clReleaseMemObject(bb);
    clReleaseMemObject(bla);
    clReleaseMemObject(blb);
}

void test_fast_path_fallback_entries(void)
{
    const att_case c = {.dt = CLNORM_F32, .batch = 2, .qh = 8, .kvh = 2, .q_len = 3,
                        .kv_len = 517, .hd = 64, .causal = 1};
    broken_fast_path();
    CHECK(att_check(&c) == 0, "attention after a fast path failed: %s", att_label(&c));
    healed();
    broken_fast_path();
    apply_first();
    healed();
    broken_fast_path();
    merge_first();
    healed();
}

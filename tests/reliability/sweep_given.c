/* The Oclgrind sweep's cases of clnorm_softmax_apply and clnorm_stats_merge_rows. */
#include "sweep_given.h"
#include "rel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWG_FAIL(...) (printf("FAIL: " __VA_ARGS__), printf("\n"), ++*failures)

static cl_mem swg_buffer(cl_context ctx, size_t bytes, const void *init)
{
    cl_int err;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)init, &err);
    return err == CL_SUCCESS ? m : NULL;
}

/* One apply call: rows x cols at offset off with leading dimension ld in both x and
   y, y's other elements poisoned and checked unchanged. Returns 1 where it ran. */
static int swg_apply(cl_context ctx, cl_command_queue q, clnorm_dtype dt, size_t rows,
                     size_t cols, size_t off, size_t ld, uint64_t *seed, int verbose,
                     unsigned long *failures)
{
    const size_t n = off + (rows - 1) * ld + cols + 3, es = rel_esize(dt);
    float *x = calloc(n, sizeof *x), *vals = malloc(rows * cols * sizeof *vals);
    float *m = malloc(rows * sizeof *m), *l = malloc(rows * sizeof *l);
    unsigned char *xi = malloc(n * es), *yi = malloc(n * es), *got = malloc(n * es);
    double *want = malloc(rows * cols * sizeof *want);
    int ran = 0;
    if (!x || !vals || !m || !l || !xi || !yi || !got || !want) goto done;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            float v = rel_round(dt, (float)(rel_unit(seed) * 16.0 - 8.0));
            if (r == 1) v = -INFINITY;                   /* a row of -inf: zeros */
            if (r == 2 && (c == 0 || c == cols - 1)) v = INFINITY; /* +inf entries */
            vals[r * cols + c] = v;
            x[off + r * ld + c] = v;
        }
    for (size_t r = 0; r < rows; r++) {
        double mm = -INFINITY, ll = 0;
        for (size_t c = 0; c < cols; c++) mm = fmax(mm, vals[r * cols + c]);
        for (size_t c = 0; c < cols; c++) {
            const double v = vals[r * cols + c];
            ll += v == mm ? (isinf(mm) && mm < 0 ? 0.0 : 1.0) : exp(v - mm);
        }
        m[r] = (float)mm;
        l[r] = (float)ll;
    }
    rel_ref_softmax(vals, rows, cols, want);
    rel_pack(dt, x, xi, n);
    for (size_t i = 0; i < n * es; i++) yi[i] = 0xCD;
    cl_mem bx = swg_buffer(ctx, n * es, xi), by = swg_buffer(ctx, n * es, yi);
    cl_mem bm = swg_buffer(ctx, rows * 4, m), bl = swg_buffer(ctx, rows * 4, l);
    clnorm_matrix vx = {bx, off, ld}, vy = {by, off, ld};
    clnorm_status st = bx && by && bm && bl
                           ? clnorm_softmax_apply(q, dt, rows, cols, vx, bm, bl, vy, 0, NULL, NULL)
                           : CLNORM_OUT_OF_RESOURCES;
    if (st || clEnqueueReadBuffer(q, by, CL_TRUE, 0, n * es, got, 0, NULL, NULL) != CL_SUCCESS) {
        SWG_FAIL("softmax_apply %s %zux%zu: %s", rel_dtype_name(dt), rows, cols,
                 clnorm_last_error());
    } else {
        ran = 1;
        double rel, abs;
        rel_tolerance(dt, &rel, &abs);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) {
            const size_t r = i >= off ? (i - off) / ld : rows, c = i >= off ? (i - off) % ld : 0;
            if (r < rows && c < cols) {
                const double w = want[r * cols + c];
                const float g = rel_get(dt, got, i);
                if (!rel_close(g, w, rel, abs) && !rel_close(g, rel_round(dt, (float)w), rel, abs))
                    bad++;
            } else if (memcmp(got + i * es, yi + i * es, es)) {
                bad++;
            }
        }
        if (bad)
            SWG_FAIL("softmax_apply %s %zux%zu off %zu ld %zu: %zu bad elements",
                     rel_dtype_name(dt), rows, cols, off, ld, bad);
        else if (verbose)
            printf("  ok softmax_apply %s %zux%zu off %zu ld %zu\n", rel_dtype_name(dt), rows,
                   cols, off, ld);
    }
    if (bx) clReleaseMemObject(bx);
    if (by) clReleaseMemObject(by);
    if (bm) clReleaseMemObject(bm);
    if (bl) clReleaseMemObject(bl);
done:
    free(x), free(vals), free(m), free(l), free(xi), free(yi), free(got), free(want);
    return ran;
}

/* merge_rows over every pair of special and plain statistics, against the host merge. */
static int swg_merge_rows(cl_context ctx, cl_command_queue q, unsigned long *failures)
{
    static const float ms[] = {-INFINITY, INFINITY, NAN, 0.0f, 3.0f, -2.5f};
    static const float ls[] = {0.0f, 1.0f, 2.5f, NAN};
    enum { NS = 6 * 4, ROWS = NS * NS };
    float am[ROWS], al[ROWS], bm[ROWS], bl[ROWS], gm[ROWS], gl[ROWS];
    for (int r = 0; r < ROWS; r++) {
        const int a = r / NS, b = r % NS;
        am[r] = ms[a / 4], al[r] = ls[a % 4], bm[r] = ms[b / 4], bl[r] = ls[b % 4];
    }
    cl_mem bam = swg_buffer(ctx, sizeof am, am), bal = swg_buffer(ctx, sizeof al, al);
    cl_mem bbm = swg_buffer(ctx, sizeof bm, bm), bbl = swg_buffer(ctx, sizeof bl, bl);
    int ran = 0;
    clnorm_status st = bam && bal && bbm && bbl
                           ? clnorm_stats_merge_rows(q, ROWS, bam, bal, bbm, bbl, 0, NULL, NULL)
                           : CLNORM_OUT_OF_RESOURCES;
    if (st || clEnqueueReadBuffer(q, bam, CL_TRUE, 0, sizeof gm, gm, 0, NULL, NULL) ||
        clEnqueueReadBuffer(q, bal, CL_TRUE, 0, sizeof gl, gl, 0, NULL, NULL)) {
        SWG_FAIL("stats_merge_rows: %s", clnorm_last_error());
    } else {
        ran = 1;
        for (int r = 0; r < ROWS; r++) {
            float wm, wl;
            clnorm_stats_merge(am[r], al[r], bm[r], bl[r], &wm, &wl);
            if (!rel_close(gm[r], wm, 1e-6, 0) || !rel_close(gl[r], wl, 1e-5, 0)) {
                SWG_FAIL("stats_merge_rows (%g, %g) with (%g, %g): (%g, %g), expected (%g, %g)",
                         am[r], al[r], bm[r], bl[r], gm[r], gl[r], wm, wl);
                break;
            }
        }
    }
    if (bam) clReleaseMemObject(bam);
    if (bal) clReleaseMemObject(bal);
    if (bbm) clReleaseMemObject(bbm);
    if (bbl) clReleaseMemObject(bbl);
    return ran;
}

unsigned sw_given(cl_context ctx, cl_command_queue q, clnorm_dtype dt, int verbose,
                  unsigned long *failures, unsigned long *cases)
{
    uint64_t seed = 0x9e3779b9u + (uint64_t)dt;
    unsigned ran = 0;
    /* A partial vector and partial group (37), one column, rows at an odd offset. */
    static const size_t shapes[][4] = {{3, 37, 0, 37}, {3, 37, 1, 41}, {4, 1, 2, 3}, {3, 130, 3, 131}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        ++*cases;
        if (swg_apply(ctx, q, dt, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], &seed,
                      verbose, failures))
            ran |= SWG_APPLY;
    }
    ++*cases;
    if (dt == CLNORM_F32 && swg_merge_rows(ctx, q, failures)) ran |= SWG_MERGE_ROWS;
    return ran;
}

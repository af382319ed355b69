/* Softmax of rows split into column tiles, from per-tile statistics merged on the host.

   This is what online softmax is for: a row too long for one pass (or spread over
   devices, or streamed as attention scores) is cut into tiles, each tile yields its
   own statistics (m, l) = (max, sum of exp(x - max)), and clnorm_stats_merge combines
   them into the whole row's (m, l) without looking at the elements again. Here each
   tile is a view into one buffer (offset = first column, ld = the row length), its
   statistics come from clnorm_softmax_stats, and the probabilities exp(x - m) / l are
   then computed on the host from the merged statistics. Both the merged statistics and
   those probabilities are checked against a float64 reference and against
   clnorm_softmax of the whole rows.

   Build: cc tiled_softmax.c -lclnorm -lOpenCL -lm    Run: ./a.out [device spec] */
#include <clnorm.h>
#include <math.h>
#include <stdio.h>

enum { ROWS = 5, COLS = 101, TILE = 32, TILES = (COLS + TILE - 1) / TILE };
/* Merging rounds once per tile on top of the statistics' own error: the contract's
   2e-5 for one call, loosened for what the merge adds. */
#define MERGED_TOLERANCE 1e-4

static int failed(clnorm_status st, const char *what)
{
    if (st != CLNORM_SUCCESS)
        fprintf(stderr, "%s: %s: %s\n", what, clnorm_status_string(st), clnorm_last_error());
    return st != CLNORM_SUCCESS;
}

static int cl_failed(cl_int err, const char *what)
{
    if (err != CL_SUCCESS) fprintf(stderr, "%s: OpenCL error %d\n", what, (int)err);
    return err != CL_SUCCESS;
}

/* Deterministic values in [-1, 1), never exactly 0. */
static float next_value(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(2.0 * (((*state >> 8) + 0.5) / 16777216.0) - 1.0);
}

/* |got - ref| within tol relative or 1e-30 absolute; false for a NaN. */
static int close_to(double got, double ref, double tol)
{
    return fabs(got - ref) <= fmax(tol * fabs(ref), 1e-30);
}

int main(int argc, char **argv)
{
    static float x[ROWS][COLS], y[ROWS][COLS];
    static float tile_max[TILES][ROWS], tile_sum[TILES][ROWS];
    unsigned state = 99;
    /* Each row has one hot tile, 3 above the others, so that the tiles' maxima differ
       and the merge has to rescale the smaller tiles' sums. */
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            x[r][c] = 5 * next_value(&state) + (c / TILE == r % TILES ? 3.0f : 0.0f);

    clnorm_session *s = NULL;
    clnorm_status st = clnorm_session_create(argc > 1 ? argv[1] : NULL, &s);
    if (st == CLNORM_DEVICE_NOT_FOUND) {
        printf("skipped: %s\n", clnorm_last_error());
        return 77;
    }
    if (failed(st, "clnorm_session_create")) return 1;
    printf("clnorm %s on %s\n", clnorm_version(), clnorm_session_device_name(s));

    int rc = 1;
    cl_int err;
    cl_context ctx = clnorm_session_context(s);
    cl_command_queue q = clnorm_session_queue(s);
    cl_mem bx = NULL, by = NULL, bmax[TILES] = {NULL}, bsum[TILES] = {NULL};

    bx = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof x, x, &err);
    if (cl_failed(err, "clCreateBuffer x")) goto done;
    by = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof y, NULL, &err);
    if (cl_failed(err, "clCreateBuffer y")) goto done;

    /* Statistics of every tile: the view of columns [t*TILE, t*TILE + width) of each
       row. Each tile has its own pair of result buffers, since the statistics are
       written at offset 0. */
    for (int t = 0; t < TILES; t++) {
        size_t width = t < TILES - 1 ? TILE : COLS - (TILES - 1) * TILE;
        clnorm_matrix tile = {bx, (size_t)t * TILE, COLS};
        bmax[t] = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof tile_max[t], NULL, &err);
        if (cl_failed(err, "clCreateBuffer max")) goto done;
        bsum[t] = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof tile_sum[t], NULL, &err);
        if (cl_failed(err, "clCreateBuffer sum")) goto done;
        if (failed(clnorm_softmax_stats(q, CLNORM_F32, ROWS, width, tile, bmax[t], bsum[t], 0,
                                        NULL, NULL), "clnorm_softmax_stats"))
            goto done;
    }
    /* For comparison, softmax of the whole rows in one call. */
    clnorm_matrix whole_x = {bx, 0, 0}, whole_y = {by, 0, 0};
    if (failed(clnorm_softmax(q, CLNORM_F32, ROWS, COLS, whole_x, whole_y, CLNORM_SOFTMAX_AUTO,
                              0, NULL, NULL), "clnorm_softmax"))
        goto done;
    /* The session's queue is in order: once the last, blocking read returns, every
       read before it has completed too. */
    for (int t = 0; t < TILES; t++)
        if (cl_failed(clEnqueueReadBuffer(q, bmax[t], CL_FALSE, 0, sizeof tile_max[t],
                                          tile_max[t], 0, NULL, NULL), "read max") ||
            cl_failed(clEnqueueReadBuffer(q, bsum[t], CL_FALSE, 0, sizeof tile_sum[t],
                                          tile_sum[t], 0, NULL, NULL), "read sum"))
            goto done;
    if (cl_failed(clEnqueueReadBuffer(q, by, CL_TRUE, 0, sizeof y, y, 0, NULL, NULL), "read y"))
        goto done;

    double worst = 0; /* the largest relative difference from clnorm_softmax */
    for (int r = 0; r < ROWS; r++) {
        /* Merge the tiles in order, starting from the identity (-inf, 0). */
        float m = -INFINITY, l = 0;
        for (int t = 0; t < TILES; t++)
            clnorm_stats_merge(m, l, tile_max[t][r], tile_sum[t][r], &m, &l);

        double m_ref = -INFINITY, l_ref = 0;
        for (int c = 0; c < COLS; c++) m_ref = fmax(m_ref, x[r][c]);
        for (int c = 0; c < COLS; c++) l_ref += exp(x[r][c] - m_ref);
        if (m != m_ref || !close_to(l, l_ref, MERGED_TOLERANCE)) {
            fprintf(stderr, "row %d: merged (m, l) = (%.9g, %.9g), reference (%.9g, %.9g)\n", r, m,
                    l, m_ref, l_ref);
            goto fail;
        }
        for (int c = 0; c < COLS; c++) {
            double p = exp((double)x[r][c] - m) / l, p_ref = exp(x[r][c] - m_ref) / l_ref;
            if (!close_to(p, p_ref, MERGED_TOLERANCE) || !close_to(y[r][c], p_ref, 2e-5) ||
                !close_to(p, y[r][c], MERGED_TOLERANCE)) {
                fprintf(stderr, "[%d][%d]: merged %.9g, clnorm_softmax %.9g, reference %.9g\n", r,
                        c, p, y[r][c], p_ref);
                goto fail;
            }
            worst = fmax(worst, fabs(p - y[r][c]) / y[r][c]);
        }
        if (r == 0) {
            printf("row 0, %d tiles:", TILES);
            for (int t = 0; t < TILES; t++) printf(" (%.3f, %.3f)", tile_max[t][0], tile_sum[t][0]);
            printf(" merge to (%.3f, %.3f)\n", m, l);
        }
    }
    printf("softmax of %dx%d from merged tile statistics: largest relative difference from "
           "clnorm_softmax %.2g\n", ROWS, COLS, worst);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "FAILED: the results differ from the float64 reference\n");
done:
    clFinish(q);
    for (int t = 0; t < TILES; t++) {
        if (bmax[t]) clReleaseMemObject(bmax[t]);
        if (bsum[t]) clReleaseMemObject(bsum[t]);
    }
    if (bx) clReleaseMemObject(bx);
    if (by) clReleaseMemObject(by);
    clnorm_session_destroy(s);
    return rc;
}

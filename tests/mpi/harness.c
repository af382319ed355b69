/* The shard harness of the clnorm_mpi cases: this rank's columns of a problem shared
   by every rank, laid out in guarded buffers, run, and checked against the float64
   softmax of the whole rows. */
#include "mpi_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void m_widths(size_t *w, size_t total, int how)
{
    const size_t n = (size_t)M_size;
    if (how == 1) {
        for (size_t r = 0; r + 1 < n; r++) w[r] = 1;
        w[n - 1] = total - (n - 1);
        return;
    }
    if (how == 2) {
        /* Cut points drawn from the shared generator, so every rank agrees. */
        size_t left = total;
        for (size_t r = 0; r + 1 < n; r++) {
            size_t most = left - (n - 1 - r);
            w[r] = 1 + rng_below(&MR, most);
            left -= w[r];
        }
        w[n - 1] = left;
        return;
    }
    for (size_t r = 0; r < n; r++) w[r] = total / n + (r < total % n);
}

/* A guarded buffer image: n elements of the view's layout, with `tail` spare
   elements after the last row. */
typedef struct mimg { unsigned char *b; size_t n; } mimg;

static int m_img(mimg *m, size_t off, size_t ld, size_t rows, size_t cols, size_t es)
{
    m->n = off + (rows ? (rows - 1) * ld + cols : 0) + 3;
    m->b = malloc(m->n * es);
    return m->b != NULL;
}

/* Elements of the image outside the view that differ from `was`; prints the first. */
static size_t m_outside_changed(const char *label, const char *what, const unsigned char *now,
                                const unsigned char *was, size_t n, size_t off, size_t ld,
                                size_t rows, size_t cols, size_t es)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        int inside = i >= off && (i - off) % ld < cols && (i - off) / ld < rows;
        if (inside || !memcmp(now + i * es, was + i * es, es)) continue;
        if (!bad)
            t_fail(__FILE__, __LINE__, "%s: %s element %zu, outside the view (offset %zu, ld %zu, "
                   "%zu x %zu), changed from 0x%x to 0x%x", label, what, i, off, ld, rows, cols,
                   get_el(was, i, es), get_el(now, i, es));
        bad++;
    }
    return bad;
}

clnorm_status m_run(const char *label, const mshard *p, clnorm_status want, int expect_rank)
{
    const size_t rows = p->rows, es = dt_size(p->dt), n = (size_t)M_size;
    size_t *w = malloc(n * sizeof *w);
    if (p->widths) memcpy(w, p->widths, n * sizeof *w);
    else m_widths(w, p->total, 0);
    size_t start = 0;
    for (int r = 0; r < M_rank; r++) start += w[r];
    const size_t cols = w[M_rank];
    const size_t xld = cols + p->xpad, yld = p->inplace ? xld : cols + p->ypad;
    const size_t yoff = p->inplace ? p->xoff : p->yoff;
    /* The whole rows as stored, and this rank's shard of them. */
    float *xs = malloc((rows * p->total + 1) * sizeof(float));
    dt_round(p->dt, p->x, xs, rows * p->total);
    mimg xi, yi, xw, yw;
    m_img(&xi, p->xoff, xld, rows, cols, es);
    m_img(&yi, yoff, yld, rows, cols, es);
    xw.b = malloc(xi.n * es);
    yw.b = malloc(yi.n * es);
    dt_fill_bits(p->dt, xi.b, xi.n, canary_of(p->dt));
    dt_fill_bits(p->dt, yi.b, yi.n, poison_of(p->dt));
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            put_el(xi.b, p->xoff + r * xld + c, es, pack1(p->dt, xs[r * p->total + start + c]));
    cl_mem xm = t_buffer(T.ctx, xi.n * es, xi.b);
    cl_mem ym = p->inplace ? xm : t_buffer(T.ctx, yi.n * es, yi.b);
    clnorm_matrix xv = {xm, p->xoff, p->xpad ? xld : 0};
    clnorm_matrix yv = {ym, yoff, p->inplace ? xv.ld : p->ypad ? yld : 0};
    float *m = malloc((rows + 1) * sizeof(float)), *l = malloc((rows + 1) * sizeof(float));
    for (size_t r = 0; r <= rows; r++) m[r] = l[r] = -12345.0f;
    cl_command_queue q = p->q ? p->q : T.q;
    clnorm_dtype dt = p->dt;
    size_t call_rows = rows, call_cols = cols;
    const int bad = M_rank == p->bad_rank ? p->bad : M_rank == p->bad_rank2 ? p->bad2 : 0;
    if (bad) {
        switch (bad) {
        case M_BAD_Y_PAST_END: yv.offset = yi.n - cols + 1; break;
        case M_BAD_COLS_0: call_cols = 0; break;
        case M_BAD_ROWS: call_rows = rows - 1; break;
        case M_BAD_DTYPE: dt = p->dt == CLNORM_F32 ? CLNORM_F16 : CLNORM_BF16; break;
        case M_BAD_OVERLAP: yv = xv; yv.offset = xv.offset + 1; break;
        case M_BAD_QUEUE: q = NULL; break;
        case M_BAD_KERNEL_DIR: t_config("CLNORM_KERNEL_DIR", "/nonexistent/clnorm-kernels"); break;
        case M_BAD_DTYPE_7: dt = (clnorm_dtype)7; break;
        case M_BAD_DTYPE_NEG: dt = (clnorm_dtype)-1; break;
        case M_BAD_TEAMS: t_config("CLNORM_ROW_THREADS", "3"); break;
        }
    }
    clnorm_status st = clnorm_mpi_softmax(MPI_COMM_WORLD, q, dt, call_rows, call_cols, xv, yv,
                                          p->stats ? m : NULL, p->stats ? l : NULL);
    char err[4096];
    snprintf(err, sizeof err, "%s", clnorm_last_error());
    if (bad == M_BAD_KERNEL_DIR) t_config("CLNORM_KERNEL_DIR", NULL);
    if (bad == M_BAD_TEAMS) t_config("CLNORM_ROW_THREADS", NULL);
    char lab[512];
    snprintf(lab, sizeof lab, "%s (%s, %zu rows, %zu of %zu columns from %zu, x offset %zu ld %zu, "
             "%s)", label, dt_name(p->dt), rows, cols, p->total, start, p->xoff, xld,
             p->inplace ? "in place" : "separate y");
    CHECK(st == want, "%s: returned %s, expected %s; last error \"%s\"", lab,
          clnorm_status_string(st), clnorm_status_string(want), err);
    t_read(T.q, xm, xi.n * es, xw.b);
    if (!p->inplace) t_read(T.q, ym, yi.n * es, yw.b);
    if (st != CLNORM_SUCCESS) {
        /* Refused: nothing written anywhere, and the message names the failing rank. */
        CHECK(!memcmp(xw.b, xi.b, xi.n * es), "%s: refused, yet x's buffer changed", lab);
        CHECK(p->inplace || !memcmp(yw.b, yi.b, yi.n * es), "%s: refused, yet y was written", lab);
        CHECK(m[0] == -12345.0f && l[0] == -12345.0f, "%s: refused, yet row_max/row_sum written",
              lab);
        if (expect_rank >= 0) {
            char who[64];
            snprintf(who, sizeof who, "rank %d of %d", expect_rank, M_size);
            CHECK(strstr(err, who) != NULL, "%s: the message does not name \"%s\": \"%s\"", lab,
                  who, err);
        }
        goto done;
    }
    if (!p->inplace)
        CHECK(!memcmp(xw.b, xi.b, xi.n * es), "%s: x's buffer changed though y is apart", lab);
    const unsigned char *yimg = p->inplace ? xw.b : yw.b, *ywas = p->inplace ? xi.b : yi.b;
    m_outside_changed(lab, "y", yimg, ywas, yi.n, yoff, yld, rows, cols, es);
    /* The float64 softmax of the whole rows; this rank's columns of it. */
    double *ref = malloc((rows * p->total + 1) * sizeof(double));
    double *want_y = malloc((rows * cols + 1) * sizeof(double));
    float *got = malloc((rows * cols + 1) * sizeof(float));
    ref_softmax(xs, rows, p->total, ref);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            want_y[r * cols + c] = ref[r * p->total + start + c];
            got[r * cols + c] = unpack1(p->dt, get_el(yimg, yoff + r * yld + c, es));
        }
    const double rel = tol_rel(p->dt, p->total), abs_ = tol_abs(p->dt);
    COMPARE(lab, got, want_y, rows, cols, rel, abs_);
    if (p->stats) {
        double *rm = malloc((rows + 1) * sizeof(double)), *rl = malloc((rows + 1) * sizeof(double));
        ref_stats(xs, rows, p->total, rm, rl);
        char lab2[600];
        snprintf(lab2, sizeof lab2, "%s row_max", lab);
        COMPARE(lab2, m, rm, rows, 1, 0, 0);
        snprintf(lab2, sizeof lab2, "%s row_sum", lab);
        COMPARE(lab2, l, rl, rows, 1, tol_rel(CLNORM_F32, p->total), tol_abs(CLNORM_F32));
        CHECK(m[rows] == -12345.0f && l[rows] == -12345.0f,
              "%s: row_max/row_sum written past rows", lab);
        free(rm);
        free(rl);
    }
    free(ref);
    free(want_y);
    free(got);
done:
    clReleaseMemObject(xm);
    if (!p->inplace) clReleaseMemObject(ym);
    free(xi.b);
    free(yi.b);
    free(xw.b);
    free(yw.b);
    free(xs);
    free(m);
    free(l);
    free(w);
    return st;
}

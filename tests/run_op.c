/* run_op and the single-operation checks around it (declared in util.h): one
   operation on canary-guarded buffers, its float64 reference, and random problems. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <stdlib.h>
#include <string.h>

/* ---- operations -------------------------------------------------------------------- */
const char *op_name(top op)
{
    static const char *names[] = {"rmsnorm", "softmax_3pass", "softmax_online",
                                  "softmax_auto", "softmax_stats"};
    return op < OP_COUNT ? names[op] : "?";
}

clnorm_softmax_algo op_algo(top op)
{
    return op == OP_SOFTMAX_3PASS ? CLNORM_SOFTMAX_THREE_PASS
         : op == OP_SOFTMAX_ONLINE ? CLNORM_SOFTMAX_ONLINE : CLNORM_SOFTMAX_AUTO;
}

/* ---- random problems ----------------------------------------------------------------- */
void make_problem(rng *r, op_args *a, top op, size_t rows, size_t cols, float **xbuf,
                  float **gbuf)
{
    static const float eps_values[] = {0.0f, 1e-6f, 1e-5f, 0.1f, 1.0f};
    memset(a, 0, sizeof *a);
    a->op = op;
    a->dt = CLNORM_F32;
    a->rows = rows;
    a->cols = cols;
    a->xld = rng_below(r, 2) ? cols : 0;          /* explicit packed ld or 0 */
    a->yld = rng_below(r, 2) ? cols : 0;
    a->poison = (unsigned)rng_below(r, 2);
    *xbuf = malloc(rows * cols * sizeof(float) + 1);
    gen_rows(r, *xbuf, rows, cols);
    a->x = *xbuf;
    *gbuf = NULL;
    if (op == OP_RMSNORM) {
        a->eps = PICK(r, eps_values);
        if (rng_below(r, 2)) {
            *gbuf = malloc(cols * sizeof(float));
            gen_gamma(r, *gbuf, cols);
            a->gamma = *gbuf;
        }
    }
}

void op_label(const op_args *a, char *buf, size_t len)
{
    static const char *layouts[] = {"separate", "in-place", "same-buffer"};
    snprintf(buf, len, "%s %s rows=%zu cols=%zu x(off=%zu ld=%zu) y(off=%zu ld=%zu) %s%s%s",
             op_name(a->op), dt_name(a->dt), a->rows, a->cols, a->xoff, a->xld, a->yoff,
             a->yld, layouts[a->layout], a->exact ? " exact-fit" : "",
             a->op == OP_RMSNORM ? (a->gamma ? " gamma" : " no-gamma") : "");
    if (a->op == OP_RMSNORM) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, " eps=%g", (double)a->eps);
    }
}

/* ---- run_op -------------------------------------------------------------------------- */
typedef struct region { size_t off, ld, rows, cols; } region;

static int in_region(const region *g, size_t i)
{
    if (!g || !g->rows || i < g->off) return 0;
    size_t k = i - g->off;
    return k / g->ld < g->rows && k % g->ld < g->cols;
}

static size_t region_end(const region *g)
{
    return g->rows ? g->off + (g->rows - 1) * g->ld + g->cols : g->off;
}

/* Compares a buffer read back with what was written, element by element, except
   inside `skip`. Reports the first difference. */
static void check_unchanged(const char *what, const char *label, const unsigned char *before,
                            const unsigned char *after, size_t n, size_t es, const region *skip)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_region(skip, i) || get_el(before, i, es) == get_el(after, i, es)) continue;
        if (!bad++) first = i;
    }
    if (bad)
        t_fail(__FILE__, __LINE__, "%s: %zu element(s) of %s outside the output view changed; "
               "first at element %zu: 0x%x became 0x%x", label, bad, what, first,
               get_el(before, first, es), get_el(after, first, es));
}

/* Counts elements still holding the poison after a successful call. */
static void check_written(const char *what, const char *label, const void *vals, size_t n,
                          size_t es, uint32_t poison)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (get_el(vals, i, es) == poison && !bad++) first = i;
    if (bad)
        t_fail(__FILE__, __LINE__, "%s: %zu element(s) of %s never written (still poison "
               "0x%x); first at packed index %zu", label, bad, what, poison, first);
}

void op_out_free(op_out *o)
{
    free(o->y);
    free(o->m);
    free(o->l);
    memset(o, 0, sizeof *o);
}

/* The poison of y (and of row_max, row_sum) that op_args asks for. */
static uint32_t poison_bits(clnorm_dtype dt, unsigned kind)
{
    if (kind == POISON_CD) return dt == CLNORM_F32 ? 0xCDCDCDCDu : 0xCDCDu;
    return poison_of(dt);
}

static void pack_view(const op_args *a, unsigned char *img, const region *g, const float *src)
{
    size_t es = dt_size(a->dt);
    for (size_t r = 0; r < g->rows; r++)
        dt_pack(a->dt, src + r * g->cols, img + (g->off + r * g->ld) * es, g->cols);
}

clnorm_status run_op(const op_args *a, op_out *o)
{
    char label[400];
    op_label(a, label, sizeof label);
    memset(o, 0, sizeof *o);
    cl_command_queue q = a->q ? a->q : T.q;
    cl_context ctx = t_queue_context(q);
    size_t es = dt_size(a->dt), rows = a->rows, cols = a->cols;
    int stats = a->op == OP_STATS, sep = !stats && a->layout == LAYOUT_SEPARATE;
    size_t tail = a->exact ? 0 : 1 + (rows + cols) % 3;
    uint32_t poison = poison_bits(a->dt, a->poison);
    region xr = {a->xoff, a->xld ? a->xld : cols, rows, cols};
    region yr = {a->yoff, a->yld ? a->yld : cols, rows, cols};
    if (a->layout == LAYOUT_INPLACE) yr = xr;

    /* Buffer 0 holds x (and y unless separate), buffer 1 a separate y. */
    size_t n0 = region_end(&xr), n1 = sep ? region_end(&yr) + tail : 0;
    if (!stats && !sep && region_end(&yr) > n0) n0 = region_end(&yr);
    n0 += tail;
    unsigned char *img0 = malloc(n0 * es + 4), *img1 = malloc(n1 * es + 4);
    unsigned char *back0 = malloc(n0 * es + 4), *back1 = malloc(n1 * es + 4);
    dt_fill_bits(a->dt, img0, n0, canary_of(a->dt));
    dt_fill_bits(a->dt, img1, n1, canary_of(a->dt));
    if (!stats && a->layout != LAYOUT_INPLACE) {
        /* Poison every element of the y view: each one must be written. */
        unsigned char *yi = sep ? img1 : img0;
        for (size_t r = 0; r < rows; r++)
            dt_fill_bits(a->dt, yi + (yr.off + r * yr.ld) * es, cols, poison);
    }
    pack_view(a, img0, &xr, a->x);

    size_t nstat = rows + tail;
    float *st_img = malloc(nstat * sizeof(float) + 4), *m_back = malloc(nstat * sizeof(float) + 4),
          *l_back = malloc(nstat * sizeof(float) + 4);
    dt_fill_bits(CLNORM_F32, st_img, nstat, poison_bits(CLNORM_F32, a->poison));

    void *gimg = NULL;
    cl_mem b0 = t_buffer(ctx, n0 * es, img0), b1 = NULL, gb = NULL, mb = NULL, lb = NULL;
    if (sep) b1 = t_buffer(ctx, n1 * es, img1);
    if (a->gamma) {
        gimg = malloc(cols * es);
        dt_pack(a->dt, a->gamma, gimg, cols);
        gb = t_buffer(ctx, cols * es, gimg);  /* exactly cols elements */
    }
    if (stats) {
        mb = t_buffer(ctx, nstat * sizeof(float), st_img);
        lb = t_buffer(ctx, nstat * sizeof(float), st_img);
    }

    clnorm_matrix xm = {b0, a->xoff, a->xld};
    clnorm_matrix ym = {sep ? b1 : b0, a->yoff, a->yld};
    if (a->layout == LAYOUT_INPLACE) ym = xm;
    cl_event ev = NULL;
    clnorm_status st;
    switch (a->op) {
    case OP_RMSNORM:
        st = clnorm_rmsnorm(q, a->dt, rows, cols, xm, gb, ym, a->eps, 0, NULL, &ev);
        break;
    case OP_STATS:
        st = clnorm_softmax_stats(q, a->dt, rows, cols, xm, mb, lb, 0, NULL, &ev);
        break;
    default:
        st = clnorm_softmax(q, a->dt, rows, cols, xm, ym, op_algo(a->op), 0, NULL, &ev);
        break;
    }
    const char *err_msg = st ? clnorm_last_error() : "";
    if (st == CLNORM_SUCCESS) {
        t_check_event(label, ev);
        if (ev) clReleaseEvent(ev);
    } else {
        CHECK(*err_msg != '\0', "%s: %s with an empty clnorm_last_error()", label,
              clnorm_status_string(st));
    }
    CHECK_CL(clFinish(q));

    /* Everything outside the written view must hold what was put there. */
    int ok = st == CLNORM_SUCCESS;
    const region *w0 = ok && !stats && !sep ? &yr : NULL, *w1 = ok && sep ? &yr : NULL;
    if (t_read(q, b0, n0 * es, back0))
        check_unchanged(a->layout == LAYOUT_SEPARATE ? "x's buffer" : "the x/y buffer", label,
                        img0, back0, n0, es, w0);
    if (sep && t_read(q, b1, n1 * es, back1))
        check_unchanged("y's buffer", label, img1, back1, n1, es, w1);
    if (stats && t_read(q, mb, nstat * 4, m_back) && t_read(q, lb, nstat * 4, l_back)) {
        region sr = {0, nstat, 1, ok ? rows : 0};
        check_unchanged("row_max", label, (unsigned char *)st_img, (unsigned char *)m_back, nstat, 4, &sr);
        check_unchanged("row_sum", label, (unsigned char *)st_img, (unsigned char *)l_back, nstat, 4, &sr);
    }
    if (ok && !stats) {
        const unsigned char *yi = sep ? back1 : back0;
        unsigned char *packed = malloc(rows * cols * es + 4);
        for (size_t r = 0; r < rows; r++)
            memcpy(packed + r * cols * es, yi + (yr.off + r * yr.ld) * es, cols * es);
        if (a->layout != LAYOUT_INPLACE) check_written("y", label, packed, rows * cols, es, poison);
        o->y = malloc(rows * cols * sizeof(float) + 4);
        dt_unpack(a->dt, packed, o->y, rows * cols);
        free(packed);
    }
    if (ok && stats) {
        check_written("row_max", label, m_back, rows, 4, poison_bits(CLNORM_F32, a->poison));
        check_written("row_sum", label, l_back, rows, 4, poison_bits(CLNORM_F32, a->poison));
        o->m = malloc(rows * sizeof(float) + 4);
        o->l = malloc(rows * sizeof(float) + 4);
        memcpy(o->m, m_back, rows * 4);
        memcpy(o->l, l_back, rows * 4);
    }
    clReleaseMemObject(b0);
    if (b1) clReleaseMemObject(b1);
    if (gb) clReleaseMemObject(gb);
    if (mb) clReleaseMemObject(mb);
    if (lb) clReleaseMemObject(lb);
    free(img0); free(img1); free(back0); free(back1);
    free(st_img); free(m_back); free(l_back); free(gimg);
    return st;
}

size_t verify_op(const op_args *a, const op_out *o)
{
    char label[400];
    op_label(a, label, sizeof label);
    size_t rows = a->rows, cols = a->cols, n = rows * cols, bad = 0;
    /* The reference sees the inputs as stored in the dtype. */
    float *xr = malloc(n * sizeof(float) + 4), *gr = NULL;
    dt_round(a->dt, a->x, xr, n);
    if (a->gamma) {
        gr = malloc(cols * sizeof(float));
        dt_round(a->dt, a->gamma, gr, cols);
    }
    double rel = tol_rel(a->dt, cols), abs_ = tol_abs(a->dt);
    if (a->op == OP_STATS) {
        double *m = malloc(rows * sizeof(double) + 8), *l = malloc(rows * sizeof(double) + 8);
        ref_stats(xr, rows, cols, m, l);
        char lab2[460];
        snprintf(lab2, sizeof lab2, "%s row_max", label);
        bad += COMPARE(lab2, o->m, m, rows, 1, 0, 0);      /* a max is exact */
        snprintf(lab2, sizeof lab2, "%s row_sum", label);
        bad += COMPARE(lab2, o->l, l, rows, 1, rel, abs_);
        free(m);
        free(l);
    } else {
        double *w = malloc(n * sizeof(double) + 8);
        if (a->op == OP_RMSNORM) ref_rmsnorm(xr, rows, cols, gr, a->eps, w);
        else ref_softmax(xr, rows, cols, w);
        bad += COMPARE(label, o->y, w, rows, cols, rel, abs_);
        free(w);
    }
    free(xr);
    free(gr);
    return bad;
}

clnorm_status check_op(const op_args *a, clnorm_status want)
{
    op_out o;
    double t0 = t_now();
    clnorm_status st = run_op(a, &o);
    double t1 = t_now();
    if (st != want) {
        char label[400], err[2048];
        snprintf(err, sizeof err, "%s", clnorm_last_error());
        op_label(a, label, sizeof label);
        t_fail(__FILE__, __LINE__, "%s: returned %s, expected %s; last error: \"%s\"", label,
               clnorm_status_string(st), clnorm_status_string(want), err);
    }
    if (st == CLNORM_SUCCESS) verify_op(a, &o);
    if (t_verbose()) {
        char label[400];
        op_label(a, label, sizeof label);
        NOTE("%s: %s, run %.3f s, check %.3f s", label, clnorm_status_string(st), t1 - t0,
             t_now() - t1);
    }
    op_out_free(&o);
    return st;
}

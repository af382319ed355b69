/* Helpers of the test cases: element types, float64 references, the accuracy rule,
   random problems, and run_op, which runs one operation on canary-guarded buffers. */
#define _POSIX_C_SOURCE 200809L
#include "test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- element types ---------------------------------------------------------------- */
size_t dt_size(clnorm_dtype dt) { return dt == CLNORM_F32 ? 4 : 2; }

const char *dt_name(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? "f32" : dt == CLNORM_F16 ? "f16" : dt == CLNORM_BF16 ? "bf16" : "?";
}

static uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return sign | 0x7E00;                   /* NaN */
    if (a >= 0x477FF000u) return sign | 0x7C00;                  /* rounds to inf */
    if (a >= 0x38800000u)                                        /* normal: RNE at bit 13 */
        return sign | (uint16_t)((a + 0xFFFu + ((a >> 13) & 1) - 0x38000000u) >> 13);
    float v;
    memcpy(&v, &a, 4);
    return sign | (uint16_t)nearbyint((double)v * 16777216.0);   /* subnormal, 2^-24 units */
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF, u;
    if (e == 0) {
        float v = ldexpf((float)m, -24);
        return (h & 0x8000) ? -v : v;
    }
    u = e == 31 ? sign | 0x7F800000u | (m << 13) : sign | ((e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

static float bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void dt_pack(clnorm_dtype dt, const float *src, void *dst, size_t n)
{
    if (dt == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = dt == CLNORM_F16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
}

void dt_unpack(clnorm_dtype dt, const void *src, float *dst, size_t n)
{
    if (dt == CLNORM_F32) { memcpy(dst, src, n * 4); return; }
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++) dst[i] = dt == CLNORM_F16 ? f16_to_f32(s[i]) : bf16_to_f32(s[i]);
}

void dt_fill_bits(clnorm_dtype dt, void *dst, size_t n, uint32_t bits)
{
    if (dt == CLNORM_F32) {
        uint32_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = bits;
    } else {
        uint16_t *d = dst;
        for (size_t i = 0; i < n; i++) d[i] = (uint16_t)bits;
    }
}

/* Bit patterns: poison for outputs (a signalling NaN with a payload no kernel makes,
   or 0xCD bytes) and a NaN canary around inputs, so that a kernel reading outside
   its view turns its row into NaN. */
static uint32_t poison_bits(clnorm_dtype dt, unsigned kind)
{
    if (kind == POISON_CD) return dt == CLNORM_F32 ? 0xCDCDCDCDu : 0xCDCDu;
    return dt == CLNORM_F32 ? 0x7FA5A5A5u : dt == CLNORM_F16 ? 0x7D2Au : 0x7FA5u;
}

static uint32_t canary_bits(clnorm_dtype dt)
{
    return dt == CLNORM_F32 ? 0x7F8A11CEu : dt == CLNORM_F16 ? 0x7C3Bu : 0x7F8Bu;
}

double tol_rel(clnorm_dtype dt, size_t cols)
{
    /* API.md gives 2e-5 for rows up to 2^20 elements; past that it says nothing, so
       longer rows get the bound scaled with the length. */
    double grow = cols > (1u << 20) ? (double)cols / (double)(1u << 20) : 1.0;
    if (dt == CLNORM_F16) return (1e-3 + 0x1p-11) * grow;   /* plus storage rounding */
    if (dt == CLNORM_BF16) return 8e-3 * grow;
    return 2e-5 * grow;
}

double tol_abs(clnorm_dtype dt) { return dt == CLNORM_F16 ? 1e-7 : 1e-30; }

int t_verbose(void)
{
    const char *e = getenv("CLNORM_TEST_VERBOSE");
    return e && *e && strcmp(e, "0");
}


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

/* ---- float64 references ------------------------------------------------------------ */
void ref_rmsnorm(const float *x, size_t rows, size_t cols, const float *gamma, float eps,
                 double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double ss = 0;
        for (size_t c = 0; c < cols; c++) ss += (double)xr[c] * xr[c];
        /* The definition as written; IEEE gives NaN rows for NaN inputs and
           0 * inf = NaN where it arises, as the contract asks. */
        double rs = 1.0 / sqrt(ss / (double)cols + (double)eps);
        for (size_t c = 0; c < cols; c++)
            y[r * cols + c] = (double)xr[c] * rs * (gamma ? (double)gamma[c] : 1.0);
    }
}

/* Statistics of one row under API.md's special-value rules. */
static void row_stats(const float *x, size_t cols, double *m, double *l)
{
    double mx = -INFINITY;
    size_t pinf = 0;
    for (size_t c = 0; c < cols; c++) {
        if (isnan(x[c])) { *m = NAN; *l = NAN; return; }
        if (x[c] > mx) mx = x[c];
        if (x[c] == INFINITY) pinf++;
    }
    if (mx == -INFINITY) { *m = -INFINITY; *l = 0; return; }
    if (mx == INFINITY) { *m = INFINITY; *l = (double)pinf; return; }
    double s = 0;
    for (size_t c = 0; c < cols; c++) s += exp((double)x[c] - mx);
    *m = mx;
    *l = s;
}

void ref_softmax(const float *x, size_t rows, size_t cols, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double *yr = y + r * cols, m, l;
        row_stats(xr, cols, &m, &l);
        for (size_t c = 0; c < cols; c++) {
            if (isnan(m)) yr[c] = NAN;
            else if (m == -INFINITY) yr[c] = 0;
            else if (m == INFINITY) yr[c] = xr[c] == INFINITY ? 1.0 / l : 0;
            else yr[c] = exp((double)xr[c] - m) / l;
        }
    }
}

void ref_stats(const float *x, size_t rows, size_t cols, double *m, double *l)
{
    for (size_t r = 0; r < rows; r++) row_stats(x + r * cols, cols, &m[r], &l[r]);
}

/* ---- the accuracy rule -------------------------------------------------------------- */
int t_close(float got, double want, double rel, double abs)
{
    if (isnan(want)) return isnan(got);
    if (isnan(got)) return 0;
    if (isinf(want)) return (double)got == want;
    if (isinf(got)) return 0;
    double d = fabs((double)got - want);
    return d <= abs || d <= rel * fabs(want);
}

size_t t_compare(const char *file, int line, const char *label, const float *got,
                 const double *want, size_t rows, size_t cols, double rel, double abs)
{
    size_t bad = 0, shown = 0;
    char first[5][200];
    for (size_t i = 0; i < rows * cols; i++) {
        if (t_close(got[i], want[i], rel, abs)) continue;
        if (shown < 5) {
            double e = want[i] != 0 ? fabs(((double)got[i] - want[i]) / want[i]) : fabs((double)got[i]);
            snprintf(first[shown++], sizeof first[0], "[%zu,%zu] got %.9g want %.17g (rel err %.3g)",
                     i / cols, i % cols, got[i], want[i], e);
        }
        bad++;
    }
    if (bad)
        t_fail(file, line, "%s: %zu of %zu values outside rel %.3g / abs %.3g; %s%s%s%s%s%s%s%s%s",
               label, bad, rows * cols, rel, abs, first[0], shown > 1 ? "; " : "",
               shown > 1 ? first[1] : "", shown > 2 ? "; " : "", shown > 2 ? first[2] : "",
               shown > 3 ? "; " : "", shown > 3 ? first[3] : "", shown > 4 ? "; " : "",
               shown > 4 ? first[4] : "");
    return bad;
}

/* ---- random problems ----------------------------------------------------------------- */
void gen_row(rng *r, float *x, size_t cols, int kind)
{
    double off, spr, sign = rng_u64(r) & 1 ? 1 : -1;
    switch (kind >= 0 ? kind : (int)rng_below(r, ROW_KINDS)) {
    case 0: off = 0; spr = 1; break;
    case 1: off = rng_range(r, -1000, 1000); spr = rng_range(r, 0.5, 40); break;
    case 2: off = sign * rng_range(r, 1000, 3000); spr = rng_range(r, 5, 30); break;
    case 3: off = sign * rng_range(r, 1e4, 5e4); spr = 20; break;
    case ROW_FAR_OFFSET: off = sign * rng_range(r, 5e5, 1e6); spr = 100; break;
    case 5: off = 0; spr = 1e-3; break;
    case 6: off = rng_range(r, -10, 10); spr = 1e3; break;
    default: off = rng_range(r, -100, 100); spr = rng_range(r, 0, 1e-2); break; /* near constant */
    }
    for (size_t c = 0; c < cols; c++) x[c] = (float)(off + spr * (2 * rng_unit(r) - 1));
}

void gen_rows(rng *r, float *x, size_t rows, size_t cols)
{
    for (size_t i = 0; i < rows; i++) gen_row(r, x + i * cols, cols, -1);
}

void gen_gamma(rng *r, float *g, size_t cols)
{
    for (size_t c = 0; c < cols; c++)
        g[c] = rng_below(r, 10) ? (float)rng_range(r, -2, 2) : 1.0f;
}

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
        if (in_region(skip, i) || !memcmp(before + i * es, after + i * es, es)) continue;
        if (!bad++) first = i;
    }
    if (bad) {
        uint32_t b = 0, a = 0;
        memcpy(&b, before + first * es, es);
        memcpy(&a, after + first * es, es);
        t_fail(__FILE__, __LINE__, "%s: %zu element(s) of %s outside the output view changed; "
               "first at element %zu: 0x%x became 0x%x", label, bad, what, first, b, a);
    }
}

/* Counts elements still holding the poison after a successful call. */
static void check_written(const char *what, const char *label, const void *vals, size_t n,
                          size_t es, uint32_t poison)
{
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = 0;
        memcpy(&v, (const unsigned char *)vals + i * es, es);
        if (v == poison && !bad++) first = i;
    }
    if (bad)
        t_fail(__FILE__, __LINE__, "%s: %zu element(s) of %s never written (still poison "
               "0x%x); first at packed index %zu", label, bad, what, poison, first);
}

cl_mem t_buffer(cl_context ctx, size_t bytes, const void *init)
{
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0),
                              bytes ? bytes : 4, (void *)init, &err);
    CHECK_CL(err);
    return err == CL_SUCCESS ? m : NULL;
}

int t_read(cl_command_queue q, cl_mem m, size_t bytes, void *dst)
{
    /* Not a blocking read: Rusticl 22 may return from one early when several threads
       share the queue (see cln_read in src/session.c). */
    cl_event ev = NULL;
    if (!CHECK_CL(clEnqueueReadBuffer(q, m, CL_FALSE, 0, bytes, dst, 0, NULL, &ev))) return 0;
    int ok = CHECK_CL(clWaitForEvents(1, &ev));
    clReleaseEvent(ev);
    return ok;
}

cl_context t_queue_context(cl_command_queue q)
{
    cl_context c = NULL;
    CHECK_CL(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof c, &c, NULL));
    return c;
}

cl_command_queue t_new_queue(cl_context ctx, cl_device_id dev, int out_of_order)
{
    cl_int err = CL_SUCCESS;
    cl_command_queue q = clCreateCommandQueue(
        ctx, dev, out_of_order ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0, &err);
    return err == CL_SUCCESS ? q : NULL;
}

size_t t_device_max_wg(cl_device_id dev)
{
    size_t v = 0;
    CHECK_CL(clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof v, &v, NULL));
    return v;
}

void op_out_free(op_out *o)
{
    free(o->y);
    free(o->m);
    free(o->l);
    memset(o, 0, sizeof *o);
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
    dt_fill_bits(a->dt, img0, n0, canary_bits(a->dt));
    dt_fill_bits(a->dt, img1, n1, canary_bits(a->dt));
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
        if (CHECK(ev != NULL, "%s: no event returned", label)) {
            CHECK_CL(clWaitForEvents(1, &ev));
            cl_int es_ = -1;
            CHECK_CL(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof es_, &es_, NULL));
            CHECK(es_ == CL_COMPLETE, "%s: event status %d after clWaitForEvents", label, es_);
            clReleaseEvent(ev);
        }
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
    void *tmp = malloc(n * 4 + 4);
    dt_pack(a->dt, a->x, tmp, n);
    dt_unpack(a->dt, tmp, xr, n);
    if (a->gamma) {
        gr = malloc(cols * sizeof(float));
        dt_pack(a->dt, a->gamma, tmp, cols);
        dt_unpack(a->dt, tmp, gr, cols);
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
    free(tmp);
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
